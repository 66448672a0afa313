"""The viewer in a real browser: Debian's Chromium driven by Playwright, against a
viewer served on 127.0.0.1. Screenshots land in docs/img/ when RECORDKIT_SCREENSHOTS
names that folder (the how-to's pictures are made so)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _object_stores import Bucket
from _view_dataset import GREEN, SCRIPT, served, write
from PIL import Image

import recordkit as rk

playwright = pytest.importorskip("playwright.sync_api", reason="the dev extra installs playwright")

pytestmark = pytest.mark.slow

#: Chromium's flags for a headless run that reaches nothing but the viewer.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


def _chromium() -> str:
    for candidate in (os.environ.get("RECORDKIT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("no Chromium: run .ci/chromium (make test does), or set RECORDKIT_CHROMIUM")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(profile), executable_path=_chromium(), args=FLAGS, headless=True,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        yield context
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    tab = browser.new_page()
    yield tab
    tab.close()


def _keep(tab: Any, name: str) -> None:
    """The page's screenshot in RECORDKIT_SCREENSHOTS (the docs' pictures), when set."""
    folder = os.environ.get("RECORDKIT_SCREENSHOTS")
    if folder:
        tab.screenshot(path=str(Path(folder) / name))


def _near(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 40) -> np.ndarray:
    return np.abs(pixels.astype(int) - np.array(rgb)).sum(axis=2) < tolerance


def _extent(mask: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(mask)
    assert xs.size, "no such pixel in the screenshot"
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def test_a_box_drawn_in_the_grid_sits_on_its_object(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url)
    thumbnail = page.locator('.cell[data-index="0"] img')
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumbnail.element_handle())
    _keep(page, "view-grid.png")
    shot = np.asarray(Image.open(io.BytesIO(thumbnail.screenshot())).convert("RGB"))
    shot = shot[:, 24:]  # right of the legend's swatches
    square = _extent(_near(shot, GREEN))
    box = _extent(_near(shot, rk.Canvas.color(0)))
    # The outline runs along the square's edges: its extent is the square's, give or take
    # its width and the downscaling.
    assert all(abs(b - s) <= 4 for b, s in zip(box, square, strict=True)), (box, square)
    assert square[2] - square[0] > 50  # the square itself, not a stray pixel


def test_clicking_a_label_bar_shows_only_records_of_that_label(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url + "stats")
    bar = page.locator('a.bar[data-key="dog"]').first
    bar.wait_for(timeout=60_000)
    _keep(page, "view-stats.png")
    bar.click()
    page.wait_for_selector("#filter")
    labels = page.locator(".cell").evaluate_all(
        "cells => cells.map(c => [...c.querySelectorAll('.caption')].map(d => d.textContent)"
        ".find(t => t.startsWith('label: ')))"
    )
    assert labels == ["label: dog"] * 20  # every third of 60 records


def test_an_audio_element_plays_the_records_sound(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url + "record/0")
    _keep(page, "view-record.png")
    audio = page.locator('audio[data-field="sound"]')
    audio.evaluate("a => a.play()")
    page.wait_for_function("a => !a.paused && a.currentTime > 0", arg=audio.element_handle())
    assert audio.evaluate("a => a.duration") == pytest.approx(1.0, abs=0.01)


def test_the_grid_pages_through_a_split_larger_than_one_page(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url)
    first = page.locator(".cell").evaluate_all("cells => cells.map(c => Number(c.dataset.index))")
    page.click("#next")
    page.wait_for_selector('.cell[data-index="48"]')
    second = page.locator(".cell").evaluate_all("cells => cells.map(c => Number(c.dataset.index))")
    assert first == list(range(48))
    assert second == list(range(48, 60))
    assert page.locator("#page").inner_text() == "page 2 of 2"


def test_a_caption_holding_a_script_is_shown_as_text(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url + "record/1")
    assert SCRIPT in page.locator("#fields").inner_text()
    assert page.locator("#fields b").count() == 0
    assert page.evaluate("document.title") != "owned"


def test_a_dataset_in_a_bucket_is_shown(page: Any, s3_bucket: Bucket, tmp_path: Path) -> None:
    url = s3_bucket.join("viewed")
    write(url, 5, storage_options=s3_bucket.storage_options)
    with served(url, tmp_path / "cache", s3_bucket.storage_options) as address:
        page.goto(address)
        thumbnails = page.locator(".cell img")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.cell img')].every(i => i.complete && i.naturalWidth > 0)"
        )
        assert thumbnails.count() == 5


def test_the_overlays_switch_off_and_on_in_the_record_page(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url + "record/0")
    picture = page.locator("#picture")

    def box_pixels() -> int:
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=picture.element_handle())
        shot = np.asarray(Image.open(io.BytesIO(picture.screenshot())).convert("RGB"))
        return int(_near(shot[:, 24:], rk.Canvas.color(0)).sum())

    assert box_pixels() > 100
    page.uncheck("#overlays")
    page.wait_for_function("() => document.getElementById('picture').src.endsWith('overlays=0')")
    assert box_pixels() == 0
    page.check("#overlays")
    page.wait_for_function("() => document.getElementById('picture').src.endsWith('overlays=1')")
    assert box_pixels() > 100


def test_a_verify_run_started_from_the_dataset_page_lists_every_shard(page: Any, viewer_url: str) -> None:
    page.goto(viewer_url + "dataset")
    page.click("#verify")
    page.wait_for_selector("#verify-result", timeout=60_000)
    _keep(page, "view-dataset.png")
    assert page.locator("#verify-result td.ok").count() == 3  # three shards of 25 records
    assert "name: viewed" in page.locator("#schema").inner_text()
