"""The viewer's pages over HTTP (recordkit.view): the grid pages through the index, a
record shows every field, statistics and the dataset page, and nothing a request says
reaches a file outside the dataset."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from _view_dataset import SCRIPT, get

import recordkit as rk


def test_the_first_grid_page_shows_the_first_records_with_their_captions(viewer_url: str) -> None:
    page = get(viewer_url)
    assert page.status_code == 200
    assert 'data-index="0"' in page.text
    assert 'data-index="47"' in page.text
    assert 'data-index="48"' not in page.text
    assert "page 1 of 2" in page.text
    assert "label: dog" in page.text


def test_the_second_grid_page_shows_the_rest_of_the_split(viewer_url: str) -> None:
    page = get(viewer_url + "?page=2")
    assert 'data-index="48"' in page.text
    assert 'data-index="59"' in page.text
    assert 'data-index="47"' not in page.text


def test_a_caption_holding_html_is_escaped(viewer_url: str) -> None:
    page = get(viewer_url + "record/1")
    assert SCRIPT not in page.text
    assert "&lt;script&gt;" in page.text


def test_a_record_page_shows_every_field_and_its_sound(viewer_url: str) -> None:
    page = get(viewer_url + "record/0")
    for line in ("label: dog", "caption: picture 0", "embedding: array (16,) float32"):
        assert line in page.text
    assert "/audio/0/sound.wav" in page.text
    sound = get(viewer_url + "audio/0/sound.wav")
    assert sound.headers["content-type"] == "audio/wav"
    assert sound.content[:4] == b"RIFF"
    assert "sound: (absent)" in get(viewer_url + "record/1").text


@pytest.mark.parametrize(
    "target",
    [
        "record/60",
        "record/-1",
        "?split=../../etc/passwd",
        "?split=test",
        "picture/0.png?split=%2Fetc%2Fpasswd",
        "audio/0/..%2F..%2Fdataset.json.wav",
        "audio/0/label.wav",
        "../dataset.json",
        "%2e%2e/%2e%2e/etc/passwd",
        "dataset.json",
        "train-00000-of-00003.tfrecord",
        "static/../../dataset.json",
    ],
)
def test_no_request_reaches_a_file_by_its_name(viewer_url: str, target: str) -> None:
    answer = get(viewer_url + target)
    assert answer.status_code in (400, 404), answer.text
    assert "fingerprint" not in answer.text


def test_a_long_request_target_is_refused(viewer_url: str) -> None:
    assert get(viewer_url + "?split=" + "a" * 5000).status_code == 414


def test_statistics_are_computed_in_the_background_and_kept(viewer_url: str, tmp_path: Path) -> None:
    get(viewer_url + "stats")
    for _ in range(600):
        if get(viewer_url + "stats/progress").json()["ready"]:
            break
        time.sleep(0.1)
    page = get(viewer_url + "stats")
    assert 'data-key="dog"' in page.text
    assert 'data-key="cat"' in page.text


def test_a_label_bar_links_to_the_grid_of_that_label_only(viewer_url: str) -> None:
    page = get(viewer_url + "?field=label&statistic=classes&key=dog&per_page=10")
    indices = [int(part.split('"')[0]) for part in page.text.split('data-index="')[1:]]
    assert indices == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]


def test_the_dataset_page_shows_the_manifest_and_a_verify_run(viewer_url: str, viewed_dataset: Path) -> None:
    page = get(viewer_url + "dataset")
    manifest = rk.open(viewed_dataset).manifest
    assert manifest is not None
    assert manifest.fingerprint in page.text
    assert httpx.post(viewer_url + "verify", follow_redirects=True, timeout=30).status_code == 200
    for _ in range(600):
        page = get(viewer_url + "dataset")
        if "verify-result" in page.text:
            break
        time.sleep(0.1)
    assert page.text.count('class="ok"') == 3
