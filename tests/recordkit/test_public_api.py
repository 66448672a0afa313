"""The public namespaces: what ``__all__`` promises is there, documented, and public."""

from __future__ import annotations
import __future__

import ast
import importlib
import inspect
import re
import types
from pathlib import Path
from typing import Any

import pytest

import recordkit

PUBLIC_MODULES = [
    "recordkit",
    "recordkit.errors",
    "recordkit.hookspecs",
    "recordkit.testing",
    "recordkit.sources",
    "recordkit.torch",
    "recordkit.grain",
    "recordkit.beam",
]
ROOT = Path(__file__).resolve().parents[2]
#: The Python API reference: one ``::: dotted.name`` line per object it shows.
API_PAGES = ROOT / "docs" / "reference" / "api"


def is_private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def defining_module(module: types.ModuleType, name: str) -> types.ModuleType:
    """The module whose source assigns ``name``: the module itself, or the one its
    ``from x import name`` statement names."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
            return importlib.import_module(node.module)
    return module


def data_comment(module: types.ModuleType, name: str) -> str:
    """The ``#:`` comment lines right above ``name``'s assignment (Sphinx's way of
    documenting module data), or "" if there are none."""
    lines = Path(inspect.getfile(module)).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"^{re.escape(name)}\s*(:[^=]*)?=", line):
            comment = []
            j = i - 1
            while j >= 0 and lines[j].startswith("#:"):
                comment.insert(0, lines[j][2:].strip())
                j -= 1
            return " ".join(comment)
    raise AssertionError(f"{name} is not assigned in {module.__name__}")


def documentation(module: types.ModuleType, name: str, obj: Any) -> str:
    if inspect.ismodule(obj):
        return obj.__doc__ or ""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""
        # dataclasses invent a docstring from the signature when there is none.
        return "" if doc.startswith(f"{obj.__name__}(") else doc
    if inspect.isroutine(obj):
        return obj.__doc__ or ""
    return data_comment(defining_module(module, name), name)


@pytest.fixture(params=PUBLIC_MODULES)
def module(request: pytest.FixtureRequest) -> types.ModuleType:
    return importlib.import_module(request.param)


def test_all_is_unique_and_every_name_exists(module: types.ModuleType) -> None:
    names = module.__all__
    assert len(names) == len(set(names)), "duplicates in __all__"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ names what it lacks: {missing}"


def test_star_import_gives_exactly_all(module: types.ModuleType) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from {module.__name__} import *", namespace)  # the import users may write
    assert set(namespace) - {"__builtins__"} == set(module.__all__)


def test_every_public_name_is_documented(module: types.ModuleType) -> None:
    undocumented = [
        name
        for name in module.__all__
        if not (name.startswith("__") and name.endswith("__"))  # e.g. __version__: standard meaning
        and not documentation(module, name, getattr(module, name)).strip()
    ]
    assert not undocumented, f"{module.__name__}: no docstring (or #: comment for data): {undocumented}"


def test_no_private_names_or_modules_leak(module: types.ModuleType) -> None:
    for name in module.__all__:
        obj = getattr(module, name)
        assert not name.startswith("_") or (name.startswith("__") and name.endswith("__")), name
        if inspect.ismodule(obj):
            assert not is_private(obj.__name__), f"{name} is the private module {obj.__name__}"
        elif inspect.isclass(obj) or inspect.isfunction(obj):
            # Defined in recordkit (usually a private module, re-exported here): not
            # something merely imported from a dependency.
            assert obj.__module__.split(".")[0] == "recordkit", f"{name} comes from {obj.__module__}"


def test_the_namespace_holds_only_all_and_public_submodules() -> None:
    extra = {
        name: obj
        for name, obj in vars(recordkit).items()
        if not name.startswith("_")
        and name.isidentifier()  # not pytest's "@py_builtins", set where it rewrites asserts
        and name not in recordkit.__all__
        and not isinstance(obj, __future__._Feature)  # `from __future__ import annotations`
    }
    for name, obj in extra.items():
        assert inspect.ismodule(obj), f"recordkit.{name} is public but not in __all__"
        assert obj.__name__ == f"recordkit.{name}", f"recordkit.{name} is a foreign module"


def test_private_modules_are_not_part_of_all() -> None:
    private = [
        name for name, obj in vars(recordkit).items() if inspect.ismodule(obj) and is_private(obj.__name__)
    ]
    assert private, "expected the implementation to live in private modules"
    assert not set(private) & set(recordkit.__all__)


def reference_names() -> set[str]:
    """The dotted names the API reference pages show."""
    return {
        match.group(1)
        for page in API_PAGES.glob("*.md")
        for match in re.finditer(r"^:::\s+([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.MULTILINE)
    }


def test_the_api_reference_shows_every_public_name_and_no_other(module: types.ModuleType) -> None:
    documented = {
        name.removeprefix(module.__name__ + ".")
        for name in reference_names()
        if name.startswith(module.__name__ + ".") and "." not in name.removeprefix(module.__name__ + ".")
    }
    public = {name for name in module.__all__ if not (name.startswith("__") and name.endswith("__"))}
    # The other public modules have their own pages (recordkit.errors is also in __all__).
    documented -= {name for name in documented - public if f"{module.__name__}.{name}" in PUBLIC_MODULES}
    name = module.__name__
    assert not public - documented, f"{name}: not in docs/reference/api/: {sorted(public - documented)}"
    assert not documented - public, (
        f"{name}: the reference shows what is not in __all__: {sorted(documented - public)}"
    )
    assert module.__name__ in reference_names(), f"{module.__name__}'s own docstring is not in the reference"
