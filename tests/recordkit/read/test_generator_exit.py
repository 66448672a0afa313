"""A process whose ``tf_epochs`` read stops on a damaged record and that exits on the
uncaught error exits (sdk/recordkit/read/_generator_exit.py, ``_release_at_exit``). Before, it
hung about one time in twenty: the error's traceback kept the ``tf.data`` iterator until
the interpreter finalized, and freeing it then, holding the GIL, waited for TensorFlow's
prefetch thread, itself waiting for the GIL to call the generator once more. The test
runs the process once, with a timeout far above its few seconds (it asserts that the
process exits, not how fast); a single run does not always meet the race it guards."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import recordkit as rk

pytest.importorskip("tensorflow")

CHILD = textwrap.dedent(
    """
    import sys
    import recordkit as rk

    for batch in rk.open(sys.argv[1]).tf_epochs(batch_size=32).dataset():
        pass
    """
)


def test_a_process_whose_epoch_read_failed_exits_on_the_uncaught_error(tmp_path: Path) -> None:
    root = tmp_path / "data"
    schema = rk.Schema(
        name="s",
        fields={"x": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [2048]})},
    )
    records = ({"x": np.full(2048, i, np.float32)} for i in range(2000))
    rk.write_dataset(records, root, schema, shard_records=500, progress=False)
    shard = root / rk.Manifest.load(root).split("train").shards[2].file
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a damaged record in the middle of the epoch
    shard.write_bytes(bytes(data))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(script), str(root)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "CorruptRecordError" in done.stderr
