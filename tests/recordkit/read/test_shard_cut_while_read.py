"""A shard file cut short while a read holds it (rewritten in place by another process, a
network filesystem's file changed under the reader) fails the read with recordkit's
error naming the shard, after the records read before the cut, never kills the process
(sdk/recordkit/read/_whole_shards.py, _parsed_shard.py, _shard_chunks.py). The
whole-shard reads mapped the file: a page past the file's new end then killed the
process with ``SIGBUS``, which nothing in Python catches. Each case runs in a child
process (a signal would kill the test run), which cuts the shard to half at one moment
of its read: after the read opened it (before its bytes are read), once it holds the
file (the tf read's ``framed_records`` then checks the bytes it holds: mapped, those
were the pages the cut took away; ``ds.records()`` read the file in its first chunk),
or, for ``ds.records()``, which reads a shard a chunk at a time, once it read its first
chunk of several (the cut falls in a later chunk)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import recordkit as rk

CHILD = textwrap.dedent(
    """
    import os
    import sys

    import recordkit as rk
    from recordkit.read import _shard_chunks, _whole_shards

    root, reader, moment, shard = sys.argv[1:]

    def cut():
        os.truncate(shard, os.path.getsize(shard) // 2)

    module = _whole_shards
    if reader == "tf" and moment == "held":
        framed = module.framed_records

        def cut_then_framed(buffer):
            cut()
            return framed(buffer)

        module.framed_records = cut_then_framed
    elif reader == "tf":
        check = module.check_shard_size

        def checked_then_cut(*args):
            check(*args)
            cut()

        module.check_shard_size = checked_then_cut
    else:  # ds.records(): the file read a chunk at a time, cut before or after a read
        if moment == "second chunk":
            _shard_chunks.CHUNK_BYTES = 1 << 20  # the shard: several chunks
        read_into = _shard_chunks.read_into
        reads = []

        def read_and_cut(stream, target):
            if moment == "opened" and not reads:
                cut()
            got = read_into(stream, target)
            reads.append(got)
            if moment != "opened" and len(reads) == 1:
                cut()
            return got

        _shard_chunks.read_into = read_and_cut
    ds = rk.open(root)
    records = 0
    try:
        if reader == "tf":
            for batch in ds.tf(batch_size=64):
                records += int(batch["x"].shape[0])
        else:
            for _ in ds.records():
                records += 1
    except Exception as exc:
        print("ERROR", records, type(exc).__name__, str(exc).replace("\\\\n", " "))
    else:
        print("READ", records)
    """
)
RECORDS = 400


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One shard (the read's cycle holds it alone) of records of one size: read whole by
    ``tf`` (a raw array: the path that mapped the file) and by ``records``."""
    root = tmp_path_factory.mktemp("cut") / "data"
    schema = rk.Schema(
        name="s", fields={"x": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [4096]})}
    )
    records = ({"x": np.full(4096, i, np.float32)} for i in range(RECORDS))
    rk.write_dataset(records, root, schema, shard_records=RECORDS, progress=False)
    return root


@pytest.mark.parametrize(
    ("reader", "moment"),
    [
        ("tf", "held"),
        ("tf", "opened"),
        ("records", "held"),
        ("records", "opened"),
        ("records", "second chunk"),
    ],
)
def test_a_shard_cut_short_during_a_read_fails_the_read_naming_it_or_gives_what_was_read(
    written: Path, tmp_path: Path, reader: str, moment: str
) -> None:
    if reader == "tf":
        pytest.importorskip("tensorflow")
    import shutil

    root = tmp_path / "data"
    shutil.copytree(written, root)
    (shard,) = rk.Manifest.load(root).split("train").shards
    size = (root / shard.file).stat().st_size
    whole_before_cut = size // 2 // (size // RECORDS)  # records of one size
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(script), str(root), reader, moment, str(root / shard.file)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: killed by SIGBUS
    out = done.stdout.strip()
    if moment == "held":  # the bytes were read before the cut: the records they hold
        assert out == f"READ {RECORDS}", out
        return
    assert out.startswith("ERROR"), out
    assert f"shard {shard.file}" in out, out
    if reader == "records":  # every record whole before the cut, then the error
        assert out.split()[1] == str(whole_before_cut), out
