"""An mkdocs hook: the strict build fails when a name the API reference shows lacks a docstring.

The reference pages (docs/reference/api/) name each public object in a ``::: dotted.name``
line. Before the build, this hook loads recordkit statically with griffe (nothing is
imported: torch, Grain and Beam are not needed), as mkdocstrings does, and logs a
warning, which ``mkdocs build --strict`` turns into a failure, for every named object
without a docstring, and for every public method of a named class without one (its own,
or that of the method it overrides). tests/recordkit/test_public_api.py checks that the
pages name every public name.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).parent))
from griffe_recordkit import SphinxConventions

log = logging.getLogger("mkdocs.hooks.api_docstrings")

DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)


def documented_names(api_dir: Path) -> dict[str, Path]:
    """Each ``::: dotted.name`` of the reference pages, to the page that names it."""
    return {
        match.group(1): page
        for page in sorted(api_dir.glob("*.md"))
        for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8"))
    }


def has_docstring(obj: griffe.Object | griffe.Alias) -> bool:
    return bool(obj.docstring and obj.docstring.value.strip())


def method_documented(cls: griffe.Class, name: str) -> bool:
    """True if ``name`` has a docstring in ``cls`` or in the first class of its MRO that defines it."""
    for klass in [cls, *cls.mro()]:
        if name in klass.members:
            member = klass.members[name]
            if has_docstring(member.final_target if member.is_alias else member):
                return True
    return False


def missing_docstrings(names: dict[str, Path], search_paths: list[str]) -> list[str]:
    """One line per named object (or public method of a named class) without a docstring."""
    extensions = griffe.load_extensions(SphinxConventions())
    packages = {name.split(".")[0] for name in names}
    loaded = {
        package: griffe.load(
            package, search_paths=search_paths, extensions=extensions, allow_inspection=False
        )
        for package in sorted(packages)
    }
    problems = []
    for name, page in names.items():
        package, _, rest = name.partition(".")
        try:
            obj = loaded[package][rest] if rest else loaded[package]
            target = obj.final_target if obj.is_alias else obj
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            problems.append(f"{page}: {name} is not found in the sources")
            continue
        if not has_docstring(target) and not name.rsplit(".", 1)[-1].startswith("__"):
            problems.append(f"{page}: {name} has no docstring")
        if isinstance(target, griffe.Class):
            for member_name, member in target.members.items():
                member_target = member.final_target if member.is_alias else member
                if (
                    not member_name.startswith("_")
                    and isinstance(member_target, griffe.Function)
                    and not method_documented(target, member_name)
                ):
                    problems.append(f"{page}: {name}.{member_name} has no docstring")
    return problems


def on_config(config: Any) -> Any:
    """Check the reference's docstrings once, before any page is built."""
    root = Path(config["config_file_path"]).parent
    docs = Path(config["docs_dir"])
    names = {
        name: page.relative_to(docs) for name, page in documented_names(docs / "reference" / "api").items()
    }
    for problem in missing_docstrings(names, [str(root / "sdk"), str(root / "plugins")]):
        log.warning("API reference: %s (public names need one: it is their reference)", problem)
    return config
