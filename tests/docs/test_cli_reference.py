"""docs/reference/cli.md: every command and option is documented, and the examples run
on the dataset of docs/getting-started.md and print what the page shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from _console import matches, run_console_block

from recordkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "cli.md"


def all_commands(group: click.Group = main, prefix: str = "recordkit") -> dict[str, click.Command]:
    """Every leaf command by its full name (``recordkit schema check`` ...)."""
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        full = f"{prefix} {name}"
        if isinstance(command, click.Group):
            found.update(all_commands(command, full))
        else:
            found[full] = command
    return found


def sections() -> dict[str, str]:
    """The page's ``## `recordkit ...``` sections by command name."""
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## `(recordkit[^`]*)`\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("name", sorted(all_commands()))
def test_every_command_and_option_is_documented(name: str) -> None:
    section = sections().get(name)
    assert section is not None, f"{PAGE} has no section for {name}"
    for param in all_commands()[name].params:
        if isinstance(param, click.Option):
            documented = [opt for opt in param.opts if f"`{opt}" in section]
            assert documented, f"{name}: option {param.opts} is not in its section"


def test_the_console_matcher_can_fail() -> None:
    assert matches(["a 1", "...", "c"], ["a 22", "b", "b", "c"])
    assert matches(["x: long ..."], ["x:   long line here"])
    assert not matches(["a 1", "c"], ["a 1", "b"])
    assert not matches(["verified ok"], ["verified failed"])
    assert not matches(["a"], ["a", "extra line"])


def test_the_examples_run(page_examples: Any, in_tmp_path: Path) -> None:
    start = page_examples.code_blocks(ROOT / "docs" / "getting-started.md")
    schema = next(b.body for b in start if b.language == "yaml")
    (in_tmp_path / "pets.yaml").write_text(schema, encoding="utf-8")
    # Up to the dataset written; reading it back (TensorFlow) is not needed here.
    writing = [b for b in start if b.language != "python" or "load_dataset" not in b.body]
    page_examples.run_python_blocks([b for b in writing if "iter_records" not in b.body])
    # add-fields reads the fields' schema and the table its section shows.
    shown = {b.language: b.body for b in page_examples.code_blocks(PAGE) if b.language in ("yaml", "csv")}
    (in_tmp_path / "scores.yaml").write_text(shown["yaml"], encoding="utf-8")
    (in_tmp_path / "scores.csv").write_text(shown["csv"], encoding="utf-8")
    blocks = [b for b in page_examples.code_blocks(PAGE) if b.language == "console"]
    # convert needs a folder TFDS prepared: its example runs in tests/docs/test_how_to_tfds.py.
    blocks = [b for b in blocks if "recordkit convert" not in b.body]
    # tfds-metadata needs png or jpeg images with fixed channels (the pets above keep their
    # JPEGs): its example runs in tests/recordkit/tools/test_tfds_export.py.
    blocks = [b for b in blocks if "recordkit tfds-metadata" not in b.body]
    ran = [c.argv[1] for block in blocks for c in run_console_block(block.body)]
    # view serves until stopped: tests/recordkit/view/test_view_command.py runs it.
    documented = {name.split()[1] for name in all_commands()} - {"convert", "view", "tfds-metadata"}
    assert set(ran) == documented, "every command has an example that runs"
