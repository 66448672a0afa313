"""docs/source-plugins.md: its code is the example plugin's pose_folder source, whole and
working; its examples run and print what the page shows, ``recordkit ingest`` included."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _console import run_console_block
from _sourced import ROOT, rebuilt, section, sourced_blocks
from click.testing import CliRunner
from PIL import Image

from recordkit import sources
from recordkit.cli import main

PAGE = ROOT / "docs" / "source-plugins.md"
PLUGIN = ROOT / "plugins" / "recordkit-keypoints"
POSES = PLUGIN / "src" / "recordkit_keypoints" / "poses.py"


@pytest.mark.parametrize(
    ("path", "name", "body"), sourced_blocks(PAGE), ids=[f"{p}#{n}" for p, n, _ in sourced_blocks(PAGE)]
)
def test_each_copied_block_equals_its_source(path: str, name: str | None, body: str) -> None:
    source = section(ROOT / path, name)
    if body == source:
        return
    # A test excerpt may be preceded by the imports it needs (the module's are elsewhere).
    assert body.endswith(source), f"{PAGE.name} shows {path}#{name} other than it is: copy it again"
    module = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    imports = {ast.unparse(node) for node in module.body if isinstance(node, (ast.Import, ast.ImportFrom))}
    for node in ast.parse(body[: -len(source)]).body:
        assert isinstance(node, (ast.Import, ast.ImportFrom)), ast.unparse(node)
        assert ast.unparse(node) in imports, ast.unparse(node)


def test_the_page_shows_the_whole_source_and_it_works(tmp_path: Path) -> None:
    relative = str(POSES.relative_to(ROOT))
    shown = {name: body for path, name, body in sourced_blocks(PAGE) if path == relative and name}
    namespace: dict[str, Any] = {"__name__": "guide_poses"}
    exec(
        compile(rebuilt(POSES, shown), "<docs/source-plugins.md poses>", "exec"), namespace
    )  # the page's code
    root = tmp_path / "poses"
    root.mkdir()
    Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(root / "a.png")
    (root / "a.json").write_text('{"keypoints": [[1, 2, 2]]}')
    (root / "b.json").write_text('{"keypoints": []}')
    source = namespace["PoseFolderSource"](root, on_error="skip")
    assert [record["keypoints"].tolist() for record in source] == [[[1.0, 2.0, 2.0]]]
    assert [s.reason for s in source.skipped] == ["a keypoints file with no image beside it"]
    assert source.schema().fields["keypoints"].codec == "keypoints"


@pytest.mark.usefixtures("keypoints_plugin")  # installed as its pyproject.toml declares
def test_the_entry_points_shown_are_the_plugins() -> None:
    (block,) = re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    shown = dict(re.findall(r'^(\w+) = "([\w.]+)"$', block, re.MULTILINE))
    installed = importlib.metadata.distribution("recordkit-keypoints").entry_points.select(group="recordkit")
    assert shown == {ep.name: ep.value for ep in installed}


@pytest.mark.usefixtures("keypoints_plugin")
def test_the_examples_run_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(PAGE)
    copied = {body for _, _, body in sourced_blocks(PAGE)}
    page_examples.run_python_blocks(blocks, skip=lambda b: b.body in copied)
    ran = [c.argv[1] for b in blocks if b.language == "console" for c in run_console_block(b.body)]
    assert ran == ["plugins", "ingest"]
    assert sources.default_sources().info("pose_folder").plugin == "poses"


@pytest.mark.usefixtures("keypoints_plugin")
def test_the_error_shown_is_the_one_a_user_sees(in_tmp_path: Path) -> None:
    (shown,) = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line.startswith("Error: ")]
    walk = in_tmp_path / "poses" / "walk"
    walk.mkdir(parents=True)
    Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(walk / "0001.png")
    (walk / "0001.json").write_text(json.dumps({"keypoints": [[1, 2, 2], [3, 4, 7]]}))
    result = CliRunner().invoke(main, ["ingest", "pose_folder", "poses", "data/poses"])
    assert result.exit_code == 1
    assert result.output.strip() == shown
    assert not (in_tmp_path / "data" / "poses" / "dataset.json").exists()
