"""sdk/recordkit/dataset/_paths.py: the file names a manifest gives stay inside the
dataset folder (the hostile cases in bulk are in tests/faults/test_hostile_manifests.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordkit.dataset._paths import check_member_name, resolve_member
from recordkit.errors import ManifestError
from recordkit.write._shard_file import (  # private: the writer's split-name rule, beside the paths it makes
    check_split_name,
)


@pytest.mark.parametrize("name", ["train-00000.tfrecord", "rejects-train.jsonl", "sub/train-0.tfrecord.gz"])
def test_plain_relative_names_pass(name: str) -> None:
    assert check_member_name(name) == name


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../x.tfrecord", r"'\.\.' part"),
        ("/etc/passwd", "absolute path"),
        ("C:/x", "absolute path"),
        ("a/./b", r"'\.' part"),
        ("a//b", "'empty' part"),
        (".hidden", "not a plain file name"),
        ("x.tfrecord\n", "not a plain file name"),
        ("\uff0e\uff0e/x", "not a plain file name"),
        ("a\\b", "not a plain file name"),
        ("", "is empty"),
    ],
)
def test_names_that_could_leave_the_folder_are_refused(name: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        check_member_name(name)


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (tmp_path / "secret").write_text("x")
    (root / "in.tfrecord").write_text("x")
    (root / "link.tfrecord").symlink_to(tmp_path / "secret")
    (root / "inner.tfrecord").symlink_to(root / "in.tfrecord")
    assert resolve_member(root, "in.tfrecord") == root / "in.tfrecord"
    assert resolve_member(root, "inner.tfrecord") == root / "inner.tfrecord"  # stays inside: fine
    with pytest.raises(ManifestError, match="outside the dataset folder"):
        resolve_member(root, "link.tfrecord")
    with pytest.raises(ManifestError, match=r"'\.\.' part"):
        resolve_member(root, "../secret")


def test_a_split_name_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid split name"):
        check_split_name("train\n")
