"""The generated pipelines are valid graphs: TensorFlow logs no warning or error.

TensorFlow reports a graph it finds wrong ("Type inference failed. This indicates an
invalid graph that escaped type checking") on the C++ log, which Python cannot capture
in-process. So a subprocess writes a dataset of every built-in codec, starts TensorFlow
(whose start-up lines, about CUDA and CPU features, come first), prints a marker, then
reads the dataset through the paths the readers build: ``load_dataset`` batched and
padded (pictures decoded per record, the batch padded as it forms), unbatched with a
random crop, batched with a resize, batched and padded with a random crop (windows
decoded alone), batched ragged with a centre crop, unbatched and padded,
``make_parser`` and the generated standalone module. Every ``W``/``E`` line after the marker fails the test.
Reads of many shards, and reads of shards loaded whole, are checked the same way.

The three scripts run one after the other in one subprocess (:func:`run_reads`):
TensorFlow starts once for them, not once a script (about 4.5 s of CPU a start). Each
script still writes its own datasets, logs TensorFlow's start-up lines before its own
marker and is checked on what was logged between its marker and the next script's start.
A line TensorFlow logs only once a process therefore shows under the first script whose
reads cause it, and fails that script's test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

MARKER = "=== recordkit graphs start ==="

SCRIPT = textwrap.dedent(
    """
    import importlib.util, sys
    from pathlib import Path

    sys.path.insert(0, sys.argv[2])
    import tensorflow as tf
    from _reader_support import EVERY_CODEC, NOT_STANDALONE, every_codec_records

    import recordkit as rk

    out = Path(sys.argv[1])
    rk.write_dataset(every_codec_records(5), EVERY_CODEC, out / "data", shard_records=3, progress=False)
    for _ in tf.data.Dataset.range(2).map(lambda x: x + 1):  # TensorFlow's start-up lines
        pass
    print(MARKER, file=sys.stderr, flush=True)

    def drain(ds):
        for _ in ds:
            pass

    data = out / "data"
    drain(rk.load_dataset(data, batch_size=2, pad=True))
    drain(rk.load_dataset(data, image_size=(4, 4), image_fit="random_crop_or_pad", seed=1))
    drain(rk.load_dataset(data, batch_size=2, image_size=(4, 4), image_fit="resize_with_pad"))
    crop = dict(image_size=(4, 4), image_fit="random_crop_or_pad", seed=2)
    drain(rk.load_dataset(data, batch_size=2, pad=True, **crop))
    drain(rk.load_dataset(data, batch_size=3, image_size=(4, 4), image_fit="crop_or_pad"))
    drain(rk.load_dataset(data, pad=True))
    files = sorted(str(p) for p in data.rglob("*.tfrecord*") if not p.name.endswith(".index"))
    drain(tf.data.TFRecordDataset(files).batch(2).map(rk.make_parser(EVERY_CODEC)))
    standalone = [name for name in EVERY_CODEC.fields if name not in NOT_STANDALONE]
    module_path = out / "generated_parser.py"
    module_path.write_text(rk.generate_parser_code(EVERY_CODEC, standalone))
    spec = importlib.util.spec_from_file_location("generated_parser", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    drain(module.dataset(files, 2))
    print("done", flush=True)
    """
).replace("MARKER", repr(MARKER))

#: An absl log line of TensorFlow's C++ runtime at warning or error level
#: ("W0000 00:00:1795470054.141240   14023 type_inference.cc:340] ..."), or Python's.
PROBLEM = re.compile(r"^(?:[WEF]\d{4} |WARNING:tensorflow|ERROR:tensorflow)")


@pytest.mark.slow
def test_reading_every_codec_logs_no_tensorflow_warning(logged: Logged) -> None:
    problems, after = logged("every codec")
    assert problems == [], after[-5000:]


#: What the read scripts below run once their datasets are written, before their reads:
#: TensorFlow's start-up lines logged, the marker after them, and ``drain`` (a read's
#: records counted and checked).
START_READS = textwrap.dedent(
    """
    for _ in tf.data.Dataset.range(2).map(lambda x: x + 1):  # TensorFlow's start-up lines
        pass
    print(MARKER, file=sys.stderr, flush=True)


    def drain(ds, expected):
        count = sum(int(batch["label"].shape[0]) for batch in ds)
        assert count == expected, (count, expected)
    """
)


def read_script(text: str) -> str:
    """``text`` dedented, with :data:`START_READS` in the place of its line ``START_READS``
    and :data:`MARKER`'s value in the place of the name."""
    return textwrap.dedent(text).replace("START_READS", START_READS).replace("MARKER", repr(MARKER))


#: Reads of many shards of small records (a caption of varying length and a label), each
#: shard ending in a chunk shorter than ``block_length``, batched so that batches join
#: pieces of chunks: the shards' chunks joined by one ``rebatch`` and cut into batches by
#: another logged ``E ... tensor.h:692] Tensor RefCount not reliable if buf_ points to a
#: SubBuffer`` twice a pass (docs/troubleshooting.md). 20 shards are each checked as the
#: read opens it, 11 walked when the read is built; ``on_corrupt="skip"`` checks in the graph.
MANY_SHARDS_SCRIPT = read_script(
    """
    import sys
    from pathlib import Path

    import tensorflow as tf

    import recordkit as rk

    out = Path(sys.argv[1])
    label = rk.FieldSpec(codec="label", options={"num_classes": 10})
    small = rk.Schema(name="small", fields={"caption": rk.FieldSpec(codec="text"), "label": label})
    # Records of several sizes in every shard (no shard's bytes a multiple of its records):
    # read record by record, as text is, not whole (as fields of one fixed size are).
    captions = [{"caption": f"record {i}", "label": i % 10} for i in range(1200)]
    rk.write_dataset(captions, small, out / "many", shard_records=60, progress=False)
    rk.write_dataset(captions[:1100], small, out / "few", shard_records=100, progress=False)
    START_READS

    for name, records in (("many", 1200), ("few", 1100)):
        ds = rk.open(out / name)
        drain(ds.tf(64), records)
        drain(ds.tf(50, repeat=2), 2 * records)
        drain(ds.tf(64, on_corrupt="skip"), records)
    print("done", flush=True)
    """
)


@pytest.mark.slow
def test_reading_many_shards_logs_no_tensorflow_warning(logged: Logged) -> None:
    problems, after = logged("many shards")
    assert problems == [], after[-5000:]


#: Reads of shards loaded whole (fields of one fixed shape: an 8-float embedding and a
#: label; captions all of one length and a label; sdk/recordkit/read/_whole_shards.py):
#: each shard's records cut into blocks of ``block_length``, the last one short, which
#: the final ``rebatch`` joins into batches. Where the blocks were slices of the shard's
#: tensors (cut by a ``rebatch``), joining parts of them logged ``E ... tensor.h:692]
#: Tensor RefCount not reliable if buf_ points to a SubBuffer`` for each part (about
#: 12,000 lines a pass of 100,000 records at a batch of 50); the blocks are now tensors
#: of their own (docs/troubleshooting.md). Shards of 100 records (a short last block), of
#: 128 (none) and of 40 (only a short one); batches of 64, 50 (repeated), 100 (the
#: remainder dropped) and of 7 with the shards shuffled.
WHOLE_SHARDS_SCRIPT = read_script(
    """
    import sys
    from pathlib import Path

    import numpy as np
    import tensorflow as tf

    import recordkit as rk
    from recordkit.read import _load_dataset

    out = Path(sys.argv[1])
    built = []
    read_whole = _load_dataset.read_whole
    _load_dataset.read_whole = lambda *args: built.append(1) or read_whole(*args)
    label = rk.FieldSpec(codec="label", options={"num_classes": 10})
    vector = rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [8]})
    schemas = {
        "embedding": rk.Schema(name="emb", fields={"embedding": vector, "label": label}),
        "caption": rk.Schema(name="cap", fields={"caption": rk.FieldSpec(codec="text"), "label": label}),
    }
    values = {
        "embedding": lambda i: np.full(8, i, np.float32),
        "caption": lambda i: f"record {i:05d}",  # one length: the shards read whole
    }
    total = 1300
    names = []
    for field, schema in schemas.items():
        records = [{field: values[field](i), "label": i % 10} for i in range(total)]
        for size in (100, 128, 40):
            names.append(f"{field}-{size}")
            rk.write_dataset(records, schema, out / names[-1], shard_records=size, progress=False)
    START_READS

    for name in names:
        ds = rk.open(out / name)
        drain(ds.tf(64), total)
        drain(ds.tf(50, repeat=2), 2 * total)
        drain(ds.tf(100, drop_remainder=True), total // 100 * 100)
        drain(ds.tf(7, shuffle_files=True, seed=3), total)
    assert len(built) == 4 * len(names), len(built)  # every read loaded its shards whole
    print("done", flush=True)
    """
)


#: The line TensorFlow logs where a ``rebatch`` joins parts of another's slices.
SUBBUFFER = "Tensor RefCount not reliable if buf_ points to a SubBuffer"


@pytest.mark.slow
def test_reading_shards_whole_logs_no_tensorflow_warning(logged: Logged) -> None:
    """No warning or error, the ``Tensor RefCount`` line (:data:`SUBBUFFER`) included:
    the batches join parts of blocks that are tensors of their own, never slices."""
    problems, after = logged("shards whole")
    assert [line for line in after.splitlines() if SUBBUFFER in line] == [], after[-5000:]
    assert problems == [], after[-5000:]


#: The scripts by name, in the order of their tests (the order they run in): the
#: whole-shard reads last, since that script replaces ``read_whole`` in the process.
READS = {"every codec": SCRIPT, "many shards": MANY_SHARDS_SCRIPT, "shards whole": WHOLE_SHARDS_SCRIPT}
#: Printed (to stdout and stderr) as each script starts: ``SECTION + name``.
SECTION = "=== recordkit read script: "

#: Runs each ``[name, script, argv]`` of the JSON list in ``sys.argv[1]`` as ``python -c
#: script *argv`` would (``sys.argv`` set, a ``__main__`` namespace of its own), one after
#: the other; a script that raises has its traceback printed and the next one runs.
#: TensorFlow and recordkit, which every script imports, are imported first and frozen
#: (``gc.freeze``, as conftest.py freezes the test processes' modules): the full
#: collections during the reads no longer walk their objects each time (busy machine, 3
#: runs each, alternating: 28.2 27.1 30.9 s of CPU a run, frozen 24.4 25.8 23.2).
DRIVER = textwrap.dedent(
    """
    import gc, json, sys, traceback

    import recordkit
    import tensorflow

    gc.collect()
    gc.freeze()
    for name, script, argv in json.loads(sys.argv[1]):
        for stream in (sys.stdout, sys.stderr):
            print(SECTION + name, file=stream, flush=True)
        sys.argv = ["-c", *argv]
        try:
            exec(compile(script, name, "exec"), {"__name__": "__main__"})
        except Exception:
            traceback.print_exc()
        gc.collect()  # the script's reads freed (and what that logs) before the next starts
        sys.stdout.flush()
        sys.stderr.flush()
    """
).replace("SECTION", repr(SECTION))


def run_reads(names: list[str], folder: Path) -> dict[str, tuple[list[str], str] | str]:
    """Run the scripts of :data:`READS` named ``names`` in one fresh Python with
    TensorFlow's C++ logging at its default level, each writing into a folder of its own
    under ``folder``: by name, the warning and error lines it logged after its
    :data:`MARKER` (TensorFlow's start-up lines come before) and that part of its stderr
    (for the failure message); or, for a script that failed, the end of its stderr."""
    support = str(Path(__file__).parents[1])  # tests/recordkit: _reader_support.py
    runs = []
    for name in names:
        (folder / name).mkdir()
        runs.append([name, READS[name], [str(folder / name), support]])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(runs)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed, logged = _sections(done.stdout), _sections(done.stderr)
    found: dict[str, tuple[list[str], str] | str] = {}
    for name in names:
        _, marker, after = logged.get(name, "").partition(MARKER)
        if not (marker and printed.get(name, "").strip().endswith("done")):
            found[name] = logged.get(name, done.stderr)[-3000:]
            continue
        found[name] = ([line for line in after.splitlines() if PROBLEM.match(line)], after)
    return found


def _sections(text: str) -> dict[str, str]:
    """``text`` cut at each :data:`SECTION` line: what follows each, by its script's name."""
    sections: dict[str, str] = {}
    name = None
    for line in text.splitlines(keepends=True):
        if line.startswith(SECTION):
            name = line[len(SECTION) :].strip()
            sections[name] = ""
        elif name is not None:
            sections[name] += line
    return sections


Logged = Callable[[str], tuple[list[str], str]]


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    """What a script of :data:`READS` logged (:func:`run_reads`). The first test to ask
    runs its script and every one after it in one subprocess; a test that another
    pytest-xdist worker took from the end of this module's queue runs its own and the
    ones after it in that worker."""
    found: dict[str, tuple[list[str], str] | str] = {}

    def result(name: str) -> tuple[list[str], str]:
        if name not in found:
            names = list(READS)
            found.update(run_reads(names[names.index(name) :], tmp_path_factory.mktemp("tf-log")))
        logged = found[name]
        assert not isinstance(logged, str), f"the {name} script failed:\n{logged}"
        return logged

    return result
