"""A shard file cut short while a read holds it (rewritten in place by another process, a
network filesystem's file changed under the reader) fails the read with recordkit's
error naming the shard, or gives the records read before the cut, never kills the
process (sdk/recordkit/read/_whole_shards.py, _parsed_shard.py). The whole-shard reads
mapped the file: a page past the file's new end then killed the process with ``SIGBUS``,
which nothing in Python catches. Each case runs in a child process (a signal would kill
the test run), which cuts the shard to half at one moment of its read: after the read
opened it (before its bytes are read), or once it holds the file (``framed_records``
then checks the bytes it holds: mapped, those were the pages the cut took away)."""

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
    from recordkit.read import _parsed_shard, _whole_shards

    root, reader, moment, shard = sys.argv[1:]

    def cut():
        os.truncate(shard, os.path.getsize(shard) // 2)

    module = _whole_shards if reader == "tf" else _parsed_shard
    if moment == "held":
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
    else:
        read_whole = module._read_whole

        def cut_then_read(*args):
            cut()
            return read_whole(*args)

        module._read_whole = cut_then_read
    ds = rk.open(root)
    try:
        if reader == "tf":
            records = sum(int(batch["x"].shape[0]) for batch in ds.tf(batch_size=64))
        else:
            records = sum(1 for _ in ds.records())
    except Exception as exc:
        print("ERROR", type(exc).__name__, str(exc).replace("\\\\n", " "))
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
    ("reader", "moment"), [("tf", "held"), ("tf", "opened"), ("records", "held"), ("records", "opened")]
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
    else:
        assert out.startswith("ERROR"), out
        assert f"shard {shard.file}" in out, out
