"""The pre-commit hook that the repository ships (``.pre-commit-hooks.yaml``), run by
pre-commit itself on a real git repository with a good and a broken schema file.

A ``language: python`` hook makes pre-commit build its own virtual environment and
pip-install this repository into it (TensorFlow included): minutes and a network. The
test runs the hook exactly as published (id, entry, file types, serial run) as the
``repo: local`` hook with ``language: system`` that the how-to page documents, using the
``recordkit`` command of the environment under test; file selection, arguments and exit
status are pre-commit's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from recordkit._cli.schema import declares_fields

ROOT = Path(__file__).resolve().parents[3]
HOOKS = ROOT / ".pre-commit-hooks.yaml"

GOOD = "name: pets\nfields:\n  label: {codec: label, options: {names: [cat, dog]}}\n"
BROKEN = "name: pets\nfields:\n  image: {codec: imgae}\n"
NOT_A_SCHEMA = "on: push\njobs:\n  test: {runs-on: ubuntu-latest}\n"


def published_hook() -> dict[str, Any]:
    (hook,) = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    return dict(hook)


def test_the_published_hook() -> None:
    hook = published_hook()
    assert hook["id"] == "recordkit-schema-check"
    assert hook["entry"] == "recordkit schema check --only-schemas"
    assert hook["language"] == "python"  # pre-commit installs recordkit for it
    assert set(hook["types_or"]) == {"yaml", "json"}


def test_only_files_that_declare_fields_count_as_schemas(tmp_path: Path) -> None:
    cases = {
        "good.yaml": (GOOD, True),
        "ci.yaml": (NOT_A_SCHEMA, False),
        "schema.json": ('{"name": "x", "fields": {}}', True),
        "broken.yaml": ("name: x\nfields:\n  a: {codec: label\n", True),  # does not parse: checked
        "list.yaml": ("- fields\n", False),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert declares_fields(path) is expected, name


def documented_local_config() -> str:
    """The ``repo: local`` configuration that docs/how-to/schema-files-in-repos.md gives."""
    page = (ROOT / "docs" / "how-to" / "schema-files-in-repos.md").read_text(encoding="utf-8")
    (config,) = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL) if "repo: local" in b]
    return str(config)


def test_the_documented_remote_hook_names_this_release_and_no_placeholder_host() -> None:
    tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    page = (ROOT / "docs" / "how-to" / "schema-files-in-repos.md").read_text(encoding="utf-8")
    (config,) = [
        b
        for b in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
        if "recordkit-schema-check" in b and "rev:" in b
    ]
    (repo,) = yaml.safe_load(config)["repos"]
    assert repo["rev"] == f"v{version}"
    assert [hook["id"] for hook in repo["hooks"]] == [published_hook()["id"]]
    assert "example." not in page


def test_the_documented_local_hook_is_the_published_one() -> None:
    (repo,) = yaml.safe_load(documented_local_config())["repos"]
    (hook,) = repo["hooks"]
    # The same hook, run in the repository's own environment; the description aside.
    assert {k: v for k, v in published_hook().items() if k != "description"} == {
        **{k: v for k, v in hook.items() if k != "description"},
        "language": "python",
    }


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_runs_the_hook_on_a_repository(tmp_path: Path) -> None:
    repo = tmp_path / "dataset-repo"
    (repo / "schemas").mkdir(parents=True)
    (repo / "schemas" / "pets.yaml").write_text(GOOD, encoding="utf-8")
    (repo / "schemas" / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    (repo / "ci.yaml").write_text(NOT_A_SCHEMA, encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(documented_local_config(), encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "NO_COLOR": "1",
    }

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )

    failed = run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    out = failed.stdout
    assert "recordkit schema check" in out
    assert "Failed" in out
    assert "UnknownCodecError: file schemas/broken.yaml, line 3, field 'image', codec 'imgae'" in out
    assert "did you mean 'image'?" in out
    assert "schemas/pets.yaml: schema 'pets'" in out  # checked too, and fine
    assert "ci.yaml" not in out.replace("broken.yaml", "").replace("pets.yaml", "")
    assert "1 of 2 schema files are not valid" in out

    (repo / "schemas" / "broken.yaml").write_text(BROKEN.replace("imgae", "image"), encoding="utf-8")
    _git(repo, "add", ".")
    passed = run()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
