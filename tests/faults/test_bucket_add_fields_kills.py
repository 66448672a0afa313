"""``add_fields`` killed at chosen moments in a bucket (moto's S3 server on 127.0.0.1):
before its claim, while a group shard uploads, between a group shard's upload and the
``dataset.json`` save that lists it, and before its commit.

Every group shard is uploaded whole (and its index beside it) before the conditional
save of ``dataset.json`` that lists it, so a kill anywhere leaves the dataset readable as
before (the unfinished group left out, ``recordkit verify`` passing), and running
``add_fields`` again completes the group, removing what the killed run left unlisted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, cli_options, remote_records
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.storage import location

pytestmark = pytest.mark.slow  # each case talks to a server the session started, and starts a process

REPO = Path(__file__).resolve().parents[2]
N = 9  # 3 shards of 4, 4 and 1 records: the run saves dataset.json 5 times (claim, 3 shards, commit)
EMBEDDING = rk.Schema(
    name="e", fields={"embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [4]})}
)

#: The killed run: ``os._exit`` (no cleanup runs) at the K-th save of dataset.json
#: (``save``: 0 the claim, 1 to 3 after each group shard's upload, 4 the commit) or while
#: the K-th group shard's upload is completing (``upload``: its index uploaded, the
#: shard not).
_KILLED = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import recordkit as rk
    import recordkit.tools._field_groups as field_groups
    from recordkit.storage import WriteStream

    url, options, kind, k = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    spec = rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [4]})
    schema = rk.Schema(name="e", fields={"embedding": spec})
    seen = {"save": 0, "upload": 0}
    save, close = field_groups._Dataset.save, WriteStream.close

    def killing_save(self):
        if kind == "save" and seen["save"] == k:
            os._exit(9)
        seen["save"] += 1
        save(self)

    def killing_close(self, **kwargs):
        if "/fields/" in self.location.url:
            if kind == "upload" and seen["upload"] == k:
                os._exit(9)
            seen["upload"] += 1
        close(self, **kwargs)

    field_groups._Dataset.save = killing_save
    WriteStream.close = killing_close
    values = np.arange(9 * 4, dtype=np.float32).reshape(9, 4)
    rk.add_fields(url, "train", schema, values, storage_options=options)
    """
)


def _embeddings() -> np.ndarray:
    return np.arange(N * 4, dtype=np.float32).reshape(N, 4)


def _group_files(url: str, options: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The group's files dataset.json lists (the unfinished group's too), and those in the bucket."""
    manifest = rk.Manifest.load(url, options)
    listed = {
        f
        for group in (manifest.split("train").field_groups or {}).values()
        for shard in group.shards
        for f in (shard.file, shard.index.file if shard.index is not None else "")
        if f
    }
    stored = {name for name in location(url, options).walk_files() if name.startswith("fields/")}
    return listed, stored


@pytest.mark.parametrize(
    ("kind", "k"), [("save", 0), ("upload", 0), ("save", 1), ("upload", 1), ("save", 2), ("save", 4)]
)
def test_add_fields_killed_in_a_bucket_leaves_the_dataset_readable_and_completes_when_run_again(
    s3_bucket: Bucket, kind: str, k: int, fault_cases: Any
) -> None:
    fault_cases.tried("add_fields killed in a bucket")
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    rk.write_dataset(remote_records(N), REMOTE_SCHEMA, url, shard_records=4, storage_options=options)
    env = {
        **os.environ,
        **s3_bucket.env,
        "PYTHONPATH": os.pathsep.join(str(REPO / part) for part in ("sdk", "plugins", "tests/recordkit")),
    }
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, url, json.dumps(options), kind, str(k)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 9, done.stderr[-3000:]
    # The dataset reads as before, the unfinished group left out, every listed file whole.
    rows = list(rk.iter_records(url, "train", storage_options=options, verify_sha256=True))
    assert [r["name"] for r in rows] == [f"item-{i}" for i in range(N)]
    assert all("embedding" not in r for r in rows)
    listed, stored = _group_files(url, options)
    assert listed <= stored, f"dataset.json lists group files that were never uploaded: {listed - stored}"
    if kind == "upload" or 1 <= k <= 3:  # an uploaded file the killed run never listed
        assert stored - listed
    verified = CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)])
    assert verified.exit_code == 0, verified.output
    # Run again: it resumes, completes the group, and leaves nothing unlisted.
    rk.add_fields(url, "train", EMBEDDING, _embeddings(), storage_options=options)
    rows = list(rk.iter_records(url, storage_options=options, verify_sha256=True))
    got = np.stack([r["embedding"] for r in rows])
    np.testing.assert_array_equal(got, _embeddings())
    listed, stored = _group_files(url, options)
    assert stored == listed, f"left unlisted: {sorted(stored - listed)}"
    verified = CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)])
    assert verified.exit_code == 0, verified.output
