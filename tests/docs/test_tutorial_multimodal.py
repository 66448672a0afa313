"""docs/tutorials/multimodal.md: on a generated folder of scenes (PNG frames, WAV tones,
captions, boxes, labels), the page's script writes a sharded dataset with worker
processes, its terminal commands and Python examples print what the page shows, and the
simulated workers of a multi-worker job read every record exactly once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _console import run_console_block
from make_tutorial_data import make_scenes

import recordkit as rk

PAGE = Path("docs") / "tutorials" / "multimodal.md"


@pytest.mark.slow
def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    scenes = make_scenes(in_tmp_path)
    blocks = page_examples.code_blocks(page_examples.root / PAGE)
    schemas = [b for b in blocks if b.language == "yaml"]
    assert len(schemas) == 1
    (in_tmp_path / "scenes.yaml").write_text(schemas[0].body, encoding="utf-8")

    # The writing script runs as the page says, as a script of its own (its worker
    # processes import it again as their main module).
    script = next(b for b in blocks if b.language == "python" and "__main__" in b.body)
    (in_tmp_path / "write_scenes.py").write_text(script.body, encoding="utf-8")
    at = blocks.index(script)
    assert blocks[at + 1].language == "bash"
    assert blocks[at + 1].body.strip() == "python write_scenes.py"
    assert blocks[at + 2].language == "text"
    ran = subprocess.run(
        [sys.executable, "write_scenes.py"], capture_output=True, text=True, check=False, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == blocks[at + 2].body

    manifest = rk.Manifest.load(in_tmp_path / "data" / "scenes")
    train = manifest.split("train")
    assert [shard.records for shard in train.shards] == [32] * 8
    assert [shard.records for shard in manifest.split("validation").shards] == [32]
    written = [r["id"] for r in rk.iter_records("data/scenes", "train", "id")]
    assert written == [scene["id"] for scene in scenes["train"]], "every scene once, in order"

    commands = [c.argv[1] for b in blocks if b.language == "console" for c in run_console_block(b.body)]
    assert commands == ["verify", "inspect"]

    seen = page_examples.run_python_blocks(blocks, skip=lambda block: block is script)

    printed = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(printed) == 5, "every step shows what it prints"
    # The four simulated workers read disjoint parts that together are the whole split,
    # with load_dataset and with iter_records; worker i gets the same records from both.
    ids = {scene["id"] for scene in scenes["train"]}
    assert sorted(seen["seen"]) == sorted(ids)
    assert sorted(seen["numpy_ids"]) == sorted(ids)
    assert seen["counts"] == [64] * 4
    for worker in range(4):
        part = slice(64 * worker, 64 * (worker + 1))
        assert set(seen["numpy_ids"][part]) == set(seen["seen"][part]), worker
        # by shard: worker i reads shards i and i + 4, in order (iter_records does not shuffle)
        order = [scene["id"] for scene in scenes["train"]]
        assert (
            seen["numpy_ids"][part]
            == order[32 * worker : 32 * worker + 32] + order[32 * (worker + 4) : 32 * (worker + 5)]
        )
    # The last record shown is the second scene of the validation file.
    first = scenes["validation"][1]
    assert seen["record"]["id"] == first["id"]
    assert seen["record"]["caption"] == first.get("caption")
    boxes = [o["box"] for o in first["objects"]]
    assert seen["record"]["objects"]["boxes"].tolist() == boxes
