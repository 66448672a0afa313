"""Every page, example and benchmark writes a dataset in the order the API documents:
``rk.write_dataset(records, path, schema)``, ``rk.DatasetWriter(path, schema)``,
``rk.beam.WriteDataset(path, schema)``. The older order (schema before path) still works,
but a newcomer copying two pages that disagree learns neither; the how-to on writing
names the older order once, on purpose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [
        ROOT / "README.md",
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("docs/**/*.py"),
        *ROOT.glob("examples/**/*.py"),
        *(
            path
            for path in ROOT.glob("benchmarks/**/*.py")
            # Not the benchmarks' output (``benchmarks/out/``, ignored by git): the peers'
            # venvs there hold tens of thousands of files of other projects.
            if path.relative_to(ROOT / "benchmarks").parts[0] != "out"
        ),
    ]
)
#: The writers and the place of the path among their positional arguments.
_WRITERS = re.compile(r"\b(?:(?P<records_first>write_dataset)|DatasetWriter|WriteDataset)\(")
#: An argument that is a schema (a Schema, a Record class, a function giving one), never a path.
_SCHEMA = re.compile(
    r"^(?:\w*schema|\w*_schema\(\)|SCHEMA|[A-Z]\w*|layout|[\w.]+\.schema\(.*\)|boxes_as\(.*\)"
    r"|rk\.Schema\.\w+\(.*\))$"
)
#: The one sentence that shows the older order, saying it is the older one.
_EXPLAINED = "The older order"


def positional_arguments(text: str, start: int) -> list[str]:
    """The call's arguments before its first keyword, from just after its ``(``."""
    arguments, depth, begin, i = [], 0, start, start
    while i < len(text):
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}" and depth:
            depth -= 1
        elif char in ")]}" or (char == "," and not depth):
            arguments.append(text[begin:i].strip())
            if char != ",":
                break
            begin = i + 1
        elif char in "\"'":
            i = text.index(char, i + 1)
        i += 1
    return [argument for argument in arguments if argument][: _first_keyword(arguments)]


def _first_keyword(arguments: list[str]) -> int:
    return next(
        (i for i, a in enumerate(arguments) if re.match(r"^\w+=", a) or a.startswith("*")),
        len(arguments),
    )


def schema_before_path(text: str) -> list[str]:
    """The writer calls in ``text`` whose path argument is a schema."""
    found = []
    for match in _WRITERS.finditer(text):
        line = text[text.rfind("\n", 0, match.start()) + 1 : text.find("\n", match.start())]
        if line.lstrip().startswith(("def ", "class ")) or _EXPLAINED in line:
            continue
        arguments = positional_arguments(text, match.end())
        place = 1 if match["records_first"] else 0
        if len(arguments) > place + 1 and _SCHEMA.match(arguments[place]):
            found.append(" ".join(f"{match[0]}{', '.join(arguments)})".split()))
    return found


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(ROOT).as_posix() for p in FILES])
def test_writers_take_the_path_then_the_schema(path: Path) -> None:
    calls = schema_before_path(path.read_text(encoding="utf-8"))
    assert not calls, f"{path.relative_to(ROOT)} gives the schema before the path: {calls}"


def test_the_check_finds_the_older_order_and_passes_the_documented_one() -> None:
    assert schema_before_path('rk.write_dataset(records, schema, "data/pets", progress=False)')
    assert schema_before_path("rk.write_dataset(\n    pets(),\n    Pet, root / 'pets')")
    assert schema_before_path("with rk.DatasetWriter(mixed_schema(), out) as writer:")
    assert schema_before_path('rk.beam.WriteDataset(boxes_as("xywh"), "data/det")')
    assert not schema_before_path('rk.write_dataset(records, "data/pets", schema, split="a, b")')
    assert not schema_before_path("rk.write_dataset(records, root / name, Pet)")
    assert not schema_before_path('rk.DatasetWriter("data/voc", schema)')
    assert not schema_before_path("rk.write_dataset(records, path=out, schema=schema)")
