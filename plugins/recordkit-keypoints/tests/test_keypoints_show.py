"""The keypoints codec shown and counted by recordkit's commands, as a built-in codec's
values are: ``recordkit show`` draws the points on the record's image, ``recordkit
stats`` reports them (the codec's ``draw`` and ``summarize``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from PIL import Image

import recordkit as rk
from recordkit.cli import main

HEIGHT, WIDTH = 32, 48
GREY = (90, 90, 90)
#: x, y in the image's pixels and a COCO visibility flag: visible, hidden, not labelled.
POSE = np.array([[10, 8, 2], [30, 20, 1], [40, 4, 0]], dtype=np.float32)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (WIDTH, HEIGHT), colour).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def posed(tmp_path: Path) -> Path:
    """A dataset of two grey images with three named keypoints each."""
    schema = rk.Schema(
        name="poses",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "png"}),
            "pose": rk.FieldSpec(
                codec="keypoints", options={"names": ["head", "hand", "foot"], "visibility": True}
            ),
        },
    )
    records = [{"image": _png(GREY), "pose": POSE}, {"image": _png(GREY), "pose": POSE + np.array([1, 1, 0])}]
    rk.write_dataset(records, tmp_path / "poses", schema)
    return tmp_path / "poses"


def test_show_draws_each_labelled_point_on_the_image(posed: Path, tmp_path: Path) -> None:
    result = run("show", posed, "-n", "1", "-o", tmp_path / "show")
    assert result.exit_code == 0, result.output
    picture = np.asarray(Image.open(tmp_path / "show" / "record-00000.png").convert("RGB"))
    scale = 256 // max(HEIGHT, WIDTH)  # small images are drawn larger, by a whole factor
    radius = 2 + rk.Canvas.line_width
    head, hand, foot = [(round(x * scale), round(y * scale)) for x, y, _ in POSE]
    # The visible point is a dot in its colour; the photo shows around it.
    assert tuple(picture[head[1], head[0]]) == rk.Canvas.color(0)
    assert tuple(picture[head[1], head[0] + radius + 2]) == GREY
    # The hidden one is a ring: its colour on the ring, the photo inside.
    assert tuple(picture[hand[1], hand[0] - radius]) == rk.Canvas.color(1)
    assert tuple(picture[hand[1], hand[0]]) == GREY
    # The point that is not labelled is not drawn.
    assert tuple(picture[foot[1], foot[0]]) == GREY
    # Every other pixel of the image is the photo's.
    image = picture[: HEIGHT * scale, : WIDTH * scale]
    changed = np.argwhere((image != GREY).any(axis=2))
    near = [min(abs(y - py) + abs(x - px) for px, py in (head, hand)) for y, x in changed]
    assert changed.size
    assert max(near) <= 2 * radius


def test_stats_report_the_points(posed: Path, tmp_path: Path) -> None:
    result = run("stats", posed, "--json", tmp_path / "stats.json", "--plots", tmp_path / "plots")
    assert result.exit_code == 0, result.output
    assert "pose (keypoints)" in result.output
    pose = json.loads((tmp_path / "stats.json").read_text())["fields"]["pose"]
    assert pose["keypoints_per_record"] == {"count": 2, "min": 3.0, "max": 3.0, "mean": 3.0}
    assert pose["labelled"] == {"head": 2, "hand": 2}
    assert pose["visibility"] == {"visible": 2, "hidden": 2, "not labelled": 2}
    assert (tmp_path / "plots" / "pose-labelled.png").is_file()


def test_the_codec_has_the_capabilities_show_and_stats_ask_for() -> None:
    codec = rk.default_registry().create("keypoints", {"visibility": True})
    assert isinstance(codec, rk.Drawable)
    assert isinstance(codec, rk.Summarized)
    assert isinstance(codec, rk.Captioned)
    assert codec.caption(POSE) == "3 keypoints, 2 labelled"
