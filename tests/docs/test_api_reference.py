"""The API reference's docstring check: what makes ``mkdocs build --strict`` fail on a public
name without a docstring (docs/_hooks/api_docstrings.py, run by mkdocs before each build)."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parents[2]


def load_helper(name: str) -> types.ModuleType:
    """One of docs/_hooks/: the docs' own code, loaded from its file (not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_hooks" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    return helper


def test_a_public_name_or_method_without_a_docstring_is_reported_with_its_page(tmp_path: Path) -> None:
    package = tmp_path / "src" / "toypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        '"""A toy package."""\n'
        "#: Documented the Sphinx way, with a comment.\n"
        "LIMIT = 3\n"
        "UNEXPLAINED = 4\n"
        "def documented() -> None:\n"
        '    """Has one."""\n'
        "def bare() -> None:\n"
        "    pass\n"
        "class Base:\n"
        '    """A base."""\n'
        "    def run(self) -> None:\n"
        '        """Runs."""\n'
        "class Child(Base):\n"
        '    """Overrides run without repeating its docstring: the base\'s serves."""\n'
        "    def run(self) -> None:\n"
        "        pass\n"
        "    def stop(self) -> None:\n"
        "        pass\n",
        encoding="utf-8",
    )
    pages = tmp_path / "api"
    pages.mkdir()
    page = pages / "toy.md"
    names = ["", ".LIMIT", ".UNEXPLAINED", ".documented", ".bare", ".Child", ".gone"]
    page.write_text("# Toy\n\n" + "".join(f"::: toypkg{name}\n\n" for name in names), encoding="utf-8")

    hook = load_helper("api_docstrings")
    problems = hook.missing_docstrings(hook.documented_names(pages), [str(tmp_path / "src")])

    assert problems == [
        f"{page}: toypkg.UNEXPLAINED has no docstring",
        f"{page}: toypkg.bare has no docstring",
        f"{page}: toypkg.Child.stop has no docstring",
        f"{page}: toypkg.gone is not found in the sources",
    ]


def test_every_name_the_reference_shows_has_a_docstring() -> None:
    hook = load_helper("api_docstrings")
    names = hook.documented_names(ROOT / "docs" / "reference" / "api")
    assert len(names) > 100
    assert hook.missing_docstrings(names, [str(ROOT / "sdk"), str(ROOT / "plugins")]) == []


def test_sphinx_roles_show_as_the_code_they_name() -> None:
    extension = load_helper("griffe_recordkit")
    text = "See :class:`~recordkit.Dataset`, :func:`recordkit.open` and :meth:`the split <Dataset.split>`."
    assert extension.plain_roles(text) == "See `Dataset`, `recordkit.open` and `the split`."


def test_module_data_takes_its_comment_as_its_docstring_with_roles_as_code(tmp_path: Path) -> None:
    package = tmp_path / "toydata"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""Toy."""\n#: The limit :func:`~toydata.check` applies,\n#: in bytes.\nLIMIT = 3\n',
        encoding="utf-8",
    )
    extension = load_helper("griffe_recordkit")
    loaded = griffe.load(
        "toydata",
        search_paths=[str(tmp_path)],
        extensions=griffe.load_extensions(extension.SphinxConventions()),
        allow_inspection=False,
    )
    docstring = loaded["LIMIT"].docstring
    assert docstring is not None
    assert docstring.value == "The limit `check` applies, in bytes."
