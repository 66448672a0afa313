"""``overwrite=True``: the new dataset replaces the old one only when complete; a crash
or an error before that leaves the old one as it was (sdk/recordkit/write/_replace.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _writer_support import SCHEMA, make_records, read_split

import recordkit as rk
from recordkit.write import _replace


def _ids(root: Path, split: str = "train") -> list[int]:
    return [int(r["id"]) for r in read_split(root, split)]


def _siblings(root: Path) -> list[str]:
    return sorted(p.name for p in root.parent.iterdir() if p.name != root.name)


def test_overwrite_replaces_every_split(tmp_path: Path) -> None:
    root = tmp_path / "data"
    rk.write_dataset(make_records(5), SCHEMA, root, progress=False)
    rk.write_dataset(make_records(3), SCHEMA, root, "test", append=True, progress=False)
    with pytest.raises(rk.errors.DatasetError, match="already holds a dataset"):
        rk.write_dataset(make_records(2), SCHEMA, root, progress=False)
    rk.write_dataset(make_records(2), SCHEMA, root, overwrite=True, progress=False, shard_records=1)
    assert _ids(root) == [0, 1]
    assert list(rk.Manifest.load(root).splits) == ["train"]
    assert _siblings(root) == []


def test_overwrite_where_nothing_is_yet(tmp_path: Path) -> None:
    root = tmp_path / "data"
    rk.write_dataset(make_records(4), SCHEMA, root, overwrite=True, progress=False)
    assert _ids(root) == [0, 1, 2, 3]


def _failing(n: int) -> Iterator[dict[str, Any]]:
    yield from make_records(n)
    raise RuntimeError("the input broke")


def test_an_error_while_overwriting_leaves_the_old_dataset(tmp_path: Path) -> None:
    root = tmp_path / "data"
    rk.write_dataset(make_records(5), SCHEMA, root, progress=False)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    with pytest.raises(RuntimeError, match="the input broke"):
        rk.write_dataset(_failing(50), SCHEMA, root, overwrite=True, shard_records=2, progress=False)
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before
    assert _siblings(root) == []  # the staging folder is removed


def test_the_writer_class_overwrites_on_close(tmp_path: Path) -> None:
    root = tmp_path / "data"
    rk.write_dataset(make_records(5), SCHEMA, root, progress=False)
    with rk.DatasetWriter(root, SCHEMA, overwrite=True, progress=False) as writer:
        writer.write({"id": 42, "payload": "x"}, split="validation")
        assert _ids(root) == [0, 1, 2, 3, 4]  # still the old one while writing
    assert writer.root == root
    assert list(rk.Manifest.load(root).splits) == ["validation"]
    assert _ids(root, "validation") == [42]


def test_the_fallback_without_an_atomic_exchange(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_replace, "_exchange", lambda a, b: False)
    root = tmp_path / "data"
    rk.write_dataset(make_records(5), SCHEMA, root, progress=False)
    rk.write_dataset(make_records(1), SCHEMA, root, overwrite=True, progress=False)
    assert _ids(root) == [0]
    assert _siblings(root) == []


def test_the_exchange_swaps_two_folders(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    if not _replace._exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    assert (a / "x").read_text() == "b"
    assert (b / "x").read_text() == "a"


def test_overwrite_refuses_append_and_resume(tmp_path: Path) -> None:
    for flag in ("append", "resume"):
        with pytest.raises(ValueError, match="cannot be combined with append or resume"):
            rk.DatasetWriter(tmp_path / "d", SCHEMA, overwrite=True, **{flag: True})


@pytest.mark.slow
def test_a_killed_overwrite_leaves_the_old_dataset_readable(tmp_path: Path) -> None:
    root = tmp_path / "data"
    rk.write_dataset(make_records(7), SCHEMA, root, progress=False)
    script = textwrap.dedent(
        f"""
        import os
        import recordkit as rk
        from _writer_support import SCHEMA, make_records

        def records():
            for i, record in enumerate(make_records(100)):
                if i == 60:
                    os._exit(9)  # killed mid-write: no cleanup runs
                yield record

        rk.write_dataset(records(), SCHEMA, {str(root)!r}, overwrite=True, shard_records=10, progress=False)
        """
    )
    support = Path(__file__).parents[1]  # tests/recordkit: _writer_support.py
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={
            **os.environ,
            "PYTHONPATH": f"{support}:{os.environ.get('PYTHONPATH', '')}",
        },
        check=False,
    )
    assert done.returncode == 9
    assert _ids(root) == list(range(7))
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".data.rk-new-")]
    assert len(staged) == 1  # the staging folder, safe to delete, with the shards written so far
    # A shard is complete when the next record does not fit (5 shards of 10 by the kill);
    # each is listed by its background completion a moment later, so the 5th may not be.
    assert len(rk.Manifest.load(staged[0]).splits["train"].shards) in (4, 5)
