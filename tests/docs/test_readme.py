"""README.md: its quick start runs, and its two commands are what CI and the Makefile run."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_quick_start_runs(page_examples: Any, in_tmp_path: Path) -> None:
    for label, colour in [("cat", (200, 120, 40)), ("dog", (60, 90, 200))]:
        (in_tmp_path / "photos" / label).mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (40 + i, 30), colour).save(in_tmp_path / "photos" / label / f"{i}.jpg")
    blocks = page_examples.code_blocks(README)
    schema = [b for b in blocks if b.language == "yaml"]
    assert len(schema) == 1
    (in_tmp_path / "pets.yaml").write_text(schema[0].body, encoding="utf-8")
    page_examples.run_python_blocks(blocks)
    outputs = [b.output for b in blocks if b.language == "python"]
    assert outputs == ["(2, 128, 128, 3) int64\n"]


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"^make (\w+)", README.read_text(encoding="utf-8"), re.MULTILINE)
    assert commands == ["demo", "test"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    # Besides make test: shell options, the checkout, pip's settings and a report of the free disk.
    setup = ("#", "set ", "cd ", "export PIP_", "df ")
    assert [line for line in ci if line and not line.startswith(setup)] == ["make test"]


def test_make_test_runs_lint_types_docs_and_tests() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = dict(re.findall(r"^([\w-]+):[^\n=]*\n((?:\t[^\n]*\n)*)", makefile, re.MULTILINE))
    # The checks side by side (two at a time), then the tests: each sub-make's goals.
    runs = [line.split() for line in targets["test"].splitlines()]
    assert [[goal for goal in run if not goal.startswith("-")] for run in runs] == [
        ["$(MAKE)", "lint", "typecheck", "docs", "keypoints", "chromium"],
        ["$(MAKE)", "unit"],
    ]
    assert "--jobs=2" in runs[0]
    assert "ruff check" in targets["lint"]
    assert "mypy" in targets["typecheck"]
    assert "mkdocs build --strict" in targets["docs"]
    assert "pytest" in targets["unit"]
    assert "examples/demo.py" in targets["demo"]
    assert (ROOT / "examples" / "demo.py").is_file()


def _makefile() -> tuple[dict[str, str], dict[str, list[str]], dict[str, str]]:
    """The Makefile's variables, each rule's prerequisites and each rule's recipe."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+) [:?]?= (.*)$", text, re.MULTILINE))

    def expand(value: str) -> str:
        """``value`` with the Makefile's variables in it replaced; others (``$(MAKE)``) kept."""
        name = r"\$\((\w+)\)"
        return re.sub(name, lambda m: expand(variables[m[1]]) if m[1] in variables else m[0], value)

    prerequisites: dict[str, list[str]] = {}
    recipes: dict[str, str] = {}
    for target, needs, recipe in re.findall(r"^([^\s:#=]+):([^\n=]*)\n((?:\t[^\n]*\n)*)", text, re.MULTILINE):
        name = expand(target)
        prerequisites[name] = [expand(n) for n in needs.replace("|", " ").split()]
        recipes[name] = expand(recipe)
    return variables, prerequisites, recipes


def test_make_demo_installs_no_development_tools() -> None:
    _, needs, recipes = _makefile()

    def installs(target: str) -> str:
        """Every recipe that making ``target`` may run, its prerequisites first."""
        return "".join(installs(n) for n in needs.get(target, [])) + recipes.get(target, "")

    demo = installs("demo")
    assert "pip install --quiet . -c dev-constraints.txt\n" in demo  # no extra, the tested versions
    assert "[dev]" not in demo
    assert "[bench]" not in demo
    for target in ("lint", "typecheck", "docs", "unit"):
        assert "pip install --quiet -e '.[dev,grain,beam,view]'" in installs(target), target
    # The viewer's browser tests drive the system's Chromium: installed or asked for first.
    assert ".ci/chromium" in installs("unit")


def test_the_runtime_dependencies_hold_no_development_tools() -> None:
    tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower() for d in project["project"]["dependencies"]}
    dev_tools = {"ruff", "mypy", "pytest", "mkdocs-material", "tensorflow-datasets", "matplotlib"}
    assert names.isdisjoint(dev_tools)
    # An SPDX string, not the table setuptools deprecates (it warned on every install).
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]


def capabilities(page: Path) -> dict[str, str]:
    """The "What it does" table of a page: each capability to the page it links."""
    section = page.read_text(encoding="utf-8").split("## What it does", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| \[([^\]]+)\]\(([^)#]+)[^)]*\) \|", section, re.MULTILINE))


def test_the_readme_and_the_docs_index_link_every_capability_to_one_page_that_exists() -> None:
    readme = capabilities(README)
    index = capabilities(ROOT / "docs" / "index.md")
    wanted = {"Write", "Read in TensorFlow", "PyTorch", "JAX", "Random access", "Ingest", "Show", "Stats"}
    wanted |= {"Buckets", "Beam", "TFDS", "Plugins", "Performance"}
    assert wanted <= set(readme)
    assert readme == {name: f"docs/{target}" for name, target in index.items()}
    for target in readme.values():
        assert (ROOT / target).is_file(), target


def test_every_tutorial_and_how_to_is_linked_from_the_readme_and_the_docs_index() -> None:
    readme = README.read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    docs = ROOT / "docs"
    for page in sorted([*(docs / "tutorials").glob("*.md"), *(docs / "how-to").glob("*.md")]):
        relative = page.relative_to(ROOT / "docs").as_posix()
        assert f"(docs/{relative})" in readme, f"README.md does not link {relative}"
        assert f"({relative})" in index, f"docs/index.md does not link {relative}"
