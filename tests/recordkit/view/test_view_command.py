"""``recordkit view`` as a user runs it: it prints its address and serves on 127.0.0.1,
names the extra when the web stack is missing, and refuses a split the dataset lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from recordkit.cli import main


@pytest.mark.slow
def test_the_command_prints_its_address_and_serves_the_grid(viewed_dataset: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "recordkit", "view", str(viewed_dataset), "--port", "0"]
    command += ["--cache-dir", str(tmp_path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = line.split(" at ")[1].split()[0]
            assert url.startswith("http://127.0.0.1:")
            page = httpx.get(url, timeout=60)
            assert page.status_code == 200
            assert 'data-index="0"' in page.text
        finally:
            process.terminate()


def test_without_the_view_extra_the_command_names_it(
    viewed_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "starlette", None)  # import starlette raises ImportError
    result = CliRunner().invoke(main, ["view", str(viewed_dataset)])
    assert result.exit_code == 1
    assert result.output == (  # as docs/how-to/view.md and docs/reference/cli.md show it
        "Error: MissingExtraError: recordkit view needs 'starlette', which is not installed; "
        "install it with: pip install 'recordkit[view]'\n"
    )


def test_a_split_the_dataset_lacks_is_refused(viewed_dataset: Path) -> None:
    result = CliRunner().invoke(main, ["view", str(viewed_dataset), "--split", "validation"])
    assert result.exit_code == 2
    assert "no split 'validation'" in result.output


def test_the_web_stack_is_imported_only_by_the_view_command() -> None:
    check = (
        "import sys, recordkit, recordkit.cli; "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2', 'recordkit.view') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
