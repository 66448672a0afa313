"""examples/make_tutorial_data.py: each tutorial names the one command that makes its
data, and that command makes the folder the page reads, in the current folder or
``--into`` another, without overwriting one that exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import make_tutorial_data  # noqa: E402 - from examples/, put on the path just above

TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
COMMAND = re.compile(r"^python examples/make_tutorial_data\.py (\w+)$", re.MULTILINE)


def test_every_tutorial_says_how_to_get_its_data() -> None:
    for page in TUTORIALS:
        text = page.read_text(encoding="utf-8")
        commands = COMMAND.findall(text)
        if page.name == "arrays-and-shapes.md":  # its first block makes its arrays
            assert "nothing to download or generate first" in text
            continue
        assert len(commands) == 1, f"{page.name} gives no command that makes its data"
        (name,) = commands
        _, _, tutorial = make_tutorial_data.COMMANDS[name]
        assert tutorial == page.name


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(make_tutorial_data.COMMANDS))
def test_the_command_makes_the_folder_the_page_reads(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder, page = make_tutorial_data.COMMANDS[name]
    assert make_tutorial_data.main([name, "--into", str(tmp_path)]) == 0
    made = tmp_path / folder
    files = [p for p in made.rglob("*") if p.is_file()]
    assert files
    assert capsys.readouterr().out == f"made {made}: {len(files)} files, for docs/tutorials/{page}\n"
    text = (ROOT / "docs" / "tutorials" / page).read_text(encoding="utf-8")
    assert folder.split("/")[0] in text  # the page reads the folder the command made
    assert make_tutorial_data.main([name, "--into", str(tmp_path)]) == 1  # never overwritten
    assert "exists already" in capsys.readouterr().err
