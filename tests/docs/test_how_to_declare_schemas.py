"""docs/how-to/declare-schemas.md: its examples run, and print what the page says."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "declare-schemas.md"


def _blocks(language: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, flags=re.DOTALL)
    return [body for lang, body in blocks if lang == language]


def test_the_python_and_yaml_examples_run_and_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    yaml_blocks = _blocks("yaml")
    assert len(yaml_blocks) == 1
    (tmp_path / "pets.yaml").write_text(yaml_blocks[0], encoding="utf-8")
    # The page's Python blocks, in order, as one script (a real file, so that attribute
    # docstrings can be read from its source as they are in a user's module).
    script = tmp_path / "declare_schemas_page.py"
    script.write_text("\n".join(_blocks("python")), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(script), run_name="declare_schemas_page")
    printed = out.getvalue()
    # What the page claims its prints show.
    assert "pets ['image', 'label', 'caption', 'views']" in printed
    assert "field 'image': missing (the field is neither optional nor has a default)" in printed
    assert "field 'colour': not a field of the schema" in printed
    assert (
        "file broken.yaml, line 8, field 'image', codec 'image': option 'quality': "
        "Input should be less than or equal to 100 (got 900)"
    ) in printed
    for field in ("image", "label", "views[1]"):
        assert f"record key 'pet-7', field '{field}': " in printed
    added = "field 'photographer': added: not in the stored data; read as absent (optional) (compatible)"
    assert f"True\n{added}\nTrue" in printed
    assert (tmp_path / "pets-from-python.yaml").is_file()
