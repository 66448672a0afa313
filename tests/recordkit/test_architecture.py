"""The layout's rules, read from the code's own imports (ast): no import cycle among the
modules of ``sdk/recordkit`` and ``plugins/recordkit_codecs``, no internal import hidden
inside a function, layers that import only their own layer or the ones below, codec
modules that share no private names, a core that never dispatches on a built-in codec's
name, and tests that reach into another layer's private modules only with a reason
written beside the import.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import recordkit as rk

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"recordkit": REPO / "sdk" / "recordkit", "recordkit_codecs": REPO / "plugins" / "recordkit_codecs"}
#: The sub-packages of recordkit from the bottom layer up: a module may import from its own
#: layer and the ones before it (errors, _units and _version sit below them all).
LAYERS = ("codec", "storage", "format", "schema", "dataset", "write", "read", "sources", "tools")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> Iterator[tuple[str, ast.AST, list[str]]]:
    """Each import of ``path``: the module it names, the node and the names it takes."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node, [alias.name for alias in node.names]


def _targets(module: str, names: list[str]) -> set[str]:
    """The internal modules an import loads (``from a import b`` loads ``a.b`` when it is one)."""
    out = {f"{module}.{name}" for name in names if f"{module}.{name}" in MODULES}
    if module in MODULES and (not names or len(out) < len(names)):
        out.add(module)
    return out


@functools.cache  # the sources do not change during a run; the tests only read the graph
def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        edges = graph.setdefault(module, set())
        for target, _, names in _imports(path):
            edges |= _targets(target, names) - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_sees_real_imports() -> None:
    """The walker finds the arrows it should (a broken walker would find no cycle either)."""
    graph = _graph()
    assert "recordkit.schema._schema" in graph["recordkit.read._open"]
    assert "recordkit.codec._codec" in graph["recordkit.schema._bound"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("package", ["recordkit", "recordkit_codecs"])
def test_no_import_cycle(package: str) -> None:
    graph = {module: edges for module, edges in _graph().items() if module.split(".")[0] == package}
    assert _cycles(graph) == []


@pytest.mark.parametrize("package", ["recordkit", "recordkit_codecs"])
def test_no_internal_import_inside_a_function(package: str) -> None:
    """Imports of recordkit's own modules sit at the top of a module, where the graph
    above sees them; only third-party imports (TensorFlow) are deferred, for speed."""
    hidden = []
    for module, path in MODULES.items():
        if module.split(".")[0] != package:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ROOTS:
                    hidden.append(f"{module}:{node.lineno} from {node.module}")
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names if a.name.split(".")[0] in ROOTS]
                    hidden += [f"{module}:{node.lineno} import {name}" for name in names]
    assert hidden == []


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "recordkit" or len(parts) < 2:
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_its_own_layer_or_below(layer: str) -> None:
    upward = []
    for module, targets in _graph().items():
        if _layer(module) != LAYERS.index(layer):
            continue
        for target in targets:
            level = _layer(target)
            above = level is not None and level > LAYERS.index(layer)
            if above or target.split(".")[:2] in (["recordkit", "_cli"], ["recordkit", "testing"]):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_codec_modules_share_no_private_names() -> None:
    """A codec module takes only public names from another codec module; shared helpers
    live in the package's private helper modules (``_pillow``, ``_inputs`` ...)."""
    taken = []
    for module, path in MODULES.items():
        if not module.startswith("recordkit_codecs"):
            continue
        for target, _, names in _imports(path):
            last = target.rsplit(".", 1)[-1]
            if target.startswith("recordkit_codecs.") and not last.startswith("_"):
                taken += [f"{module}: {target}.{name}" for name in names if name.startswith("_")]
    assert taken == []


#: The names of a path as users give it: a union of one with ``Location`` (``Path |
#: Location``, ``PathOrUrl | Location``, ``str | Location``) takes either, and makes the
#: code under it tell them apart.
LOCAL_TYPES = {"Path", "PurePath", "PathLike", "PathOrUrl", "str"}

#: Where code above ``storage/`` may ask whether a path is local or remote (an
#: ``isinstance`` on ``Location`` or ``Path``, ``Location.is_local``, ``is_remote``): the
#: public boundaries, where what a user typed is made a Location once, each with its
#: reason. Elsewhere code takes a Location and asks it for what it needs (its methods, or
#: ``local_path`` for a local-only step such as a folder lock, a rename or an mmap).
BOUNDARIES = {
    ("recordkit.schema._file", "load_schema"): "rk.Schema.load: a user's schema path or URL, "
    "read as a local file or through fsspec with the storage options given",
    ("recordkit.tools._common", "dataset_location"): "a DATASET a user typed (CLI, viewer): "
    "storage options go to a URL only",
    ("recordkit._cli._common", "PathOrUrlType.convert"): "a CLI argument: a local path is "
    "checked to exist, a URL is passed on for storage/ to report",
    ("recordkit._cli._common", "dataset_at"): "a DATASET argument: -s options go to a URL only",
    ("recordkit._cli._common", "output_at"): "an output argument: -s options go to a URL only",
    ("recordkit._cli._common", "schema_file_at"): "a SCHEMA argument: -s options go to a URL only",
    ("recordkit._cli._common", "manifest_at"): "a SCHEMA argument: a dataset or a schema file, "
    "told apart by a stat locally and by its name remotely",
    ("recordkit._cli._common", "local_input"): "an input that is read through local files: a URL "
    "is refused with a usage error saying why",
    ("recordkit._cli.ingest", "_option_paths"): "--opt values naming local inputs, checked for "
    "overlap with the output",
}


def _names_in(node: ast.AST) -> set[str]:
    """The names a type expression spells (``Path``, ``pathlib.Path``, ``Location`` ...)."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def _members(node: ast.AST) -> list[ast.AST]:
    """The members of a union, flattened (``A | B | None``, ``Union[A, B]``,
    ``Optional[A]``); a non-union is its own one member."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _members(node.left) + _members(node.right)
    if isinstance(node, ast.Subscript) and _names_in(node.value) & {"Union", "Optional"}:
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [member for element in inner for member in _members(element)]
    return [node]


def _head(node: ast.AST) -> str | None:
    """The type a member names at its head (``os.PathLike[str]`` is ``PathLike``;
    ``dict[str, Location]`` is ``dict``, whatever it holds)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_union(node: ast.AST) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr)) or (
        isinstance(node, ast.Subscript) and bool(_names_in(node.value) & {"Union", "Optional"})
    )


def _with_quoted_annotations(tree: ast.AST) -> list[ast.AST]:
    """``tree``'s nodes, and those of each annotation written as a string
    (``p: "Path | Location"``), parsed, with the line of the annotation."""
    nodes = list(ast.walk(tree))
    for node in list(nodes):
        annotation = getattr(node, "annotation", None) or getattr(node, "returns", None)
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            parsed = ast.parse(annotation.value, mode="eval").body
            for sub in ast.walk(parsed):
                if hasattr(sub, "lineno"):
                    sub.lineno = annotation.lineno
            nodes += list(ast.walk(parsed))
    return nodes


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """Each function of ``tree`` with its qualified name (``Class.method``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def _boundary_lines(tree: ast.AST, module: str) -> set[int]:
    """The lines of ``module``'s named public boundaries, whole."""
    lines: set[int] = set()
    for name, node in _functions(tree):
        if (module, name) in BOUNDARIES:
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _asks_local_or_remote(node: ast.AST) -> str | None:
    """What ``node`` asks, if it tells a local path from a remote one: an ``isinstance``
    on ``Location``, ``Path`` or ``PurePath`` (alone or in a tuple), ``x.is_local``, or
    ``is_remote(x)``."""
    if isinstance(node, ast.Attribute) and node.attr == "is_local":
        return f"{ast.unparse(node)}"
    if isinstance(node, ast.Call):
        called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if called == "is_remote":
            return ast.unparse(node)
        if (
            called == "isinstance"
            and len(node.args) == 2
            and _names_in(node.args[1]) & {"Location", "Path", "PurePath"}
        ):
            return f"isinstance(..., {ast.unparse(node.args[1])})"
    return None


def _local_remote_unions(tree: ast.AST) -> list[str]:
    """Each union of a user's path type with ``Location`` in ``tree`` (``Path | Location``,
    ``os.PathLike[str] | Location | None``, ``Union[str, Path, Location]``, a type alias
    spelled so, an annotation in quotes), its members flattened, as ``line: what``;
    ``dict[str, Location] | None`` is no such union (``str`` is inside another type)."""
    nodes = _with_quoted_annotations(tree)
    # A union nested in another (``Path | Location | None``) is reported once, as the outer.
    nested = {
        id(inner)
        for node in nodes
        if _is_union(node)
        for inner in ast.walk(node)
        if inner is not node and _is_union(inner)
    }
    found: list[tuple[int, str]] = []
    for node in nodes:
        if not _is_union(node) or id(node) in nested:
            continue
        heads = {_head(member) for member in _members(node)}
        if "Location" in heads and heads & LOCAL_TYPES:
            found.append((node.lineno, f"{node.lineno}: a Path | Location union: {ast.unparse(node)}"))
    return [line for _, line in sorted(found)]


def _local_remote_branches(tree: ast.AST, module: str = "") -> list[str]:
    """Each place in ``tree`` that asks whether a path is local or remote (see
    :func:`_asks_local_or_remote`), outside ``module``'s named public boundaries, as
    ``line: what``."""
    allowed = _boundary_lines(tree, module)
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        asked = _asks_local_or_remote(node)
        if asked is not None and node.lineno not in allowed:
            found.append((node.lineno, node.col_offset, f"{node.lineno}: {asked}"))
    return [line for *_, line in sorted(found)]


def _whats(lines: list[str]) -> list[str]:
    return [line.split(": ", 1)[1] for line in lines]


def test_the_union_scan_flattens_unions_and_finds_each_path_beside_a_location() -> None:
    """The scan sees what it looks for (a broken scan would pass any tree)."""
    code = (
        "Where = os.PathLike[str] | Location\n"
        "def f(p: Path | Location | None, q: Union[str, pathlib.Path, Location]) -> None:\n"
        "    pass\n"
        "def g(p: PathOrUrl | Location, q: str | Location | None,\n"
        "      r: Optional[Union[PathOrUrl, Location]], s: 'PurePath | Location') -> None:\n"
        "    pass\n"
        "class Shard:\n"
        "    where: None | Location | Path\n"
    )
    assert _whats(_local_remote_unions(ast.parse(code))) == [
        "a Path | Location union: os.PathLike[str] | Location",
        "a Path | Location union: Path | Location | None",
        "a Path | Location union: Union[str, pathlib.Path, Location]",
        "a Path | Location union: PathOrUrl | Location",
        "a Path | Location union: str | Location | None",
        "a Path | Location union: Optional[Union[PathOrUrl, Location]]",
        "a Path | Location union: PurePath | Location",
        "a Path | Location union: None | Location | Path",
    ]
    quiet = (
        "def f(p: Location, q: Location | None, r: str | os.PathLike[str], s: dict[str, Location] | None,\n"
        "      t: list[str] | Location, u: tuple[Location, str | None] | None) -> None:\n"
        "    p.local_path\n"
    )
    assert _local_remote_unions(ast.parse(quiet)) == []


def test_the_branch_scan_finds_isinstance_is_local_and_is_remote() -> None:
    """Each way of asking local or remote is found; asking a Location for its local
    folder (``local_path``) is not such a question."""
    code = (
        "def f(p, q):\n"
        "    if isinstance(p, (str, Location)):\n"
        "        pass\n"
        "    if isinstance(p, pathlib.Path) or p.is_local:\n"
        "        pass\n"
        "    return storage.is_remote(q) or not q.where.is_local\n"
        "def g(p):\n"
        "    folder = p.local_path\n"
        "    return isinstance(p, (str, os.PathLike))\n"
    )
    assert _whats(_local_remote_branches(ast.parse(code))) == [
        "isinstance(..., (str, Location))",
        "isinstance(..., pathlib.Path)",
        "p.is_local",
        "storage.is_remote(q)",
        "q.where.is_local",
    ]


def test_the_branch_scan_allows_only_the_named_public_boundaries() -> None:
    """A named boundary may ask, in its whole body; the same function in another module,
    or another function of the boundary's module, is found."""
    code = (
        "class PathOrUrlType:\n"
        "    def convert(self, value):\n"
        "        if is_remote(value):\n"
        "            return value\n"
        "def elsewhere(value):\n"
        "    return is_remote(value)\n"
    )
    assert _whats(_local_remote_branches(ast.parse(code), "recordkit._cli._common")) == ["is_remote(value)"]
    assert len(_local_remote_branches(ast.parse(code), "recordkit.read._open")) == 2
    assert all(reason for reason in BOUNDARIES.values())


def test_no_signature_above_storage_takes_a_path_or_a_location() -> None:
    """Above ``storage/``, a parameter, attribute or alias takes a Location or a user's
    path, never either: what a user holds becomes a Location once, where it enters."""
    found = {}
    for module, path in MODULES.items():
        if module.startswith("recordkit.storage"):
            continue
        unions = _local_remote_unions(ast.parse(path.read_text(encoding="utf-8")))
        if unions:
            found[module] = unions
    assert found == {}


def test_only_the_storage_layer_tells_local_from_remote() -> None:
    """Above ``storage/``, code takes a Location and asks it (its methods, ``local_path``
    for a local-only step) rather than branching on the type or on ``is_local``; the
    public boundaries in ``BOUNDARIES`` are the one exception, each with its reason."""
    found = {}
    for module, path in MODULES.items():
        if module.startswith("recordkit.storage"):
            continue
        branches = _local_remote_branches(ast.parse(path.read_text(encoding="utf-8")), module)
        if branches:
            found[module] = branches
    assert found == {}


def test_each_named_boundary_exists_and_asks() -> None:
    """A boundary left in the list after its code moved or stopped asking would let a new
    branch in under its name."""
    stale = []
    for module, name in BOUNDARIES:
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        bodies = [node for qualname, node in _functions(tree) if qualname == name]
        if not any(_asks_local_or_remote(sub) for body in bodies for sub in ast.walk(body)):
            stale.append(f"{module}:{name}")
    assert stale == []


def _builtin_codec_names() -> set[str]:
    """The names of the codecs recordkit's own distribution registers."""
    return {info.name for info in rk.load_plugins().registry if info.distribution == "recordkit"}


def _strings(node: ast.AST) -> set[str]:
    """The string constants ``node`` is, or holds as a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_strings(element) for element in node.elts))
    return set()


def _name_dispatches(source: str, names: set[str]) -> list[str]:
    """Each comparison (``==``, ``!=``, ``in``, ``not in``) or ``match`` case of
    ``source`` against one of ``names``, as ``line: code``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
            _strings(side) & names for side in [node.left, *node.comparators]
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.MatchValue) and _strings(node.value) & names:
            found.append(f"{node.lineno}: case {ast.unparse(node.value)}")
    return found


def test_the_dispatch_finder_sees_comparisons_and_matches() -> None:
    """The finder flags what the test below forbids (a broken finder would pass anything)."""
    source = (
        'if spec.codec == "image": pass\n'
        'if codec in ("bbox", "tensor"): pass\n'
        'if "audio" != field.codec.name: pass\n'
        'match codec:\n    case "label": pass\n'
        'if kind == "jpeg" or name in ("depth",): pass\n'
    )
    found = _name_dispatches(source, {"image", "bbox", "tensor", "audio", "label"})
    assert [line.split(":")[0] for line in found] == ["1", "2", "3", "5"]


def test_the_core_never_dispatches_on_a_built_in_codec_name() -> None:
    """No module of sdk/recordkit compares anything with a built-in codec's name, or
    matches one: what a command does with a field's values is its codec's to say, through
    the optional capabilities (recordkit.Drawable, recordkit.Summarized ...), so that a
    plugin's codec is shown, counted and converted as a built-in one is."""
    names = _builtin_codec_names()
    assert {"image", "bbox", "label", "audio"} <= names
    found = []
    for module, path in MODULES.items():
        if module.split(".")[0] == "recordkit":
            found += [
                f"{module}:{line}" for line in _name_dispatches(path.read_text(encoding="utf-8"), names)
            ]
    assert found == []


# -- tests: the public API first ----------------------------------------------------------

TESTS = [REPO / "tests", REPO / "plugins" / "recordkit-keypoints" / "tests"]
#: The reason a test imports a private module of another layer, on the import's line (any
#: line of it) or on the line just above: ``# private: <why the public API does not serve>``.
PRIVATE_REASON = re.compile(r"#\s*private:\s*\S.{4,}")


def _part(module: str) -> str:
    """The part of the code a module belongs to: ``recordkit.<sub-package>``, ``recordkit``
    (its top-level modules) or ``recordkit_codecs``."""
    parts = module.split(".")
    if parts[0] == "recordkit" and len(parts) > 1 and (ROOTS["recordkit"] / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def _is_private(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in ROOTS and any(part.startswith("_") and not part.startswith("__") for part in parts[1:])


def _mirrored_part(test: Path, tests_root: Path) -> str | None:
    """The part of the code a test's folder mirrors (tests/recordkit/write/ mirrors
    recordkit.write); None for folders that mirror none (faults, docs, examples)."""
    parts = test.relative_to(tests_root).parts
    if parts[0] == "recordkit":
        return f"recordkit.{parts[1]}" if len(parts) > 2 else "recordkit"
    return "recordkit_codecs" if parts[0] == "recordkit_codecs" else None


def private_imports_without_reason(source: str, part: str | None) -> list[str]:
    """The imports in ``source`` (a test of ``part``) of another part's private modules
    with no ``# private: <reason>`` beside them: ``line: module``."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        private = [m for m in modules if m in MODULES and _is_private(m) and _part(m) != part]
        beside = lines[max(node.lineno - 2, 0) : node.end_lineno or node.lineno]
        if private and not any(PRIVATE_REASON.search(line) for line in beside):
            found += [f"{node.lineno}: {m}" for m in private]
    return found


def test_the_private_import_check_sees_what_it_should() -> None:
    """A broken check would pass every test file too."""
    check = private_imports_without_reason
    assert check("from recordkit.format._tfrecord import iter_tfrecords\n", "recordkit.write") == [
        "1: recordkit.format._tfrecord"
    ]
    assert check("from recordkit.write import _parallel\n", None) == ["1: recordkit.write._parallel"]
    assert check("def f():\n    import recordkit.read._open\n", "recordkit") == ["2: recordkit.read._open"]
    assert check("from recordkit.format._tfrecord import iter_tfrecords\n", "recordkit.format") == []
    assert check("from recordkit import WireKind\nimport recordkit.errors\n", "recordkit.write") == []
    reasons = (
        "from recordkit.format._tfrecord import frame_record  # private: frames bytes by hand\n",
        "# private: frames bytes by hand\nfrom recordkit.format._tfrecord import frame_record\n",
        "from recordkit.format._tfrecord import (  # private: frames bytes by hand\n    frame_record,\n)\n",
    )
    for source in reasons:
        assert check(source, "recordkit.write") == []
    assert check("from recordkit.format._tfrecord import frame_record  # private:\n", "recordkit.write")


def test_a_test_imports_another_layers_private_modules_only_with_a_reason_beside_it() -> None:
    """Tests go through the public API where there is one; where a test needs a private
    module of another layer (to build or damage bytes by hand, to reset process state),
    ``# private: <reason>`` says why beside the import. A test's own layer is its to test."""
    missing = []
    for tests_root in TESTS:
        for test in sorted(tests_root.rglob("*.py")):
            part = _mirrored_part(test, tests_root)
            for where in private_imports_without_reason(test.read_text(encoding="utf-8"), part):
                missing.append(f"{test.relative_to(REPO)}:{where}")
    assert missing == []
