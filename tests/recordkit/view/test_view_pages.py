"""The viewer's pages over HTTP (recordkit.view): the grid pages through the index, a
record shows every field, statistics and the dataset page, and nothing a request says
reaches a file outside the dataset."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from _view_dataset import SCRIPT, get, served
from PIL import Image

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
    for line in (
        "label: dog",
        "caption: picture 0",
        "embedding: array (16,) float32",
        "shape (16,), float32",
    ):
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


def statistics(url: str) -> str:
    """The statistics page, once the background job has computed them."""
    get(url + "stats")
    for _ in range(600):
        if get(url + "stats/progress").json()["ready"]:
            break
        time.sleep(0.1)
    return get(url + "stats").text


def test_statistics_are_computed_in_the_background_and_kept(viewed_dataset: Path, tmp_path: Path) -> None:
    with served(str(viewed_dataset), tmp_path) as url:
        first = statistics(url)
        assert get(url + "stats/progress").json() == {"done": 60, "total": 60, "ready": True, "error": None}
    kept = list(tmp_path.glob("stats-*.json"))
    assert len(kept) == 1
    with served(str(viewed_dataset), tmp_path) as url:
        assert get(url + "stats/progress").json()["ready"] is False  # nothing asked yet
        page = get(url + "stats")  # read from the cache: ready at once, nothing computed
        assert get(url + "stats/progress").json() == {"done": 0, "total": 0, "ready": True, "error": None}
    assert page.text == first
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


def test_a_damaged_record_shows_its_error_and_the_server_goes_on(
    viewed_dataset: Path, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(viewed_dataset, damaged)
    shard = damaged / "train-00001.tfrecord"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one record's bytes: its CRC no longer matches
    shard.write_bytes(bytes(data))
    with served(str(damaged), tmp_path / "cache") as url:
        page = get(url)
        assert page.status_code == 200
        broken = [
            int(part.split('"')[0]) for part in page.text.split('data-index="')[1:] if 'class="error"' in part
        ]
        assert len(broken) == 1
        assert 25 <= broken[0] < 48
        assert "CorruptRecordError: shard train-00001.tfrecord, offset" in page.text
        assert get(url + f"picture/{broken[0]}.png").status_code == 500
        assert get(url + f"picture/{broken[0] + 1}.png").status_code == 200
        assert get(url + "?page=2").status_code == 200


def test_a_plugin_codec_draws_its_points_in_the_grid(tmp_path: Path) -> None:
    pytest.importorskip("recordkit_keypoints", reason="make test installs the example keypoints plugin")
    schema = rk.Schema.loads(
        "name: posed\nfields:\n  image: {codec: image, options: {format: png}}\n"
        "  pose: {codec: keypoints, options: {num_keypoints: 1, visibility: false, normalized: true}}\n"
    )
    grey = np.full((320, 320, 3), 90, np.uint8)
    rk.write_dataset([{"image": grey, "pose": [[0.5, 0.5]]}], schema, tmp_path / "posed", progress=False)
    with served(str(tmp_path / "posed"), tmp_path / "cache") as url:
        drawn = Image.open(io.BytesIO(get(url + "picture/0.png?size=thumb").content)).convert("RGB")
        plain = Image.open(io.BytesIO(get(url + "picture/0.png?size=thumb&overlays=0").content)).convert(
            "RGB"
        )
    assert drawn.getpixel((128, 128)) == rk.Canvas.color(0)  # the point, in the middle
    assert plain.getpixel((128, 128)) == (90, 90, 90)  # overlays off: the picture alone


def test_a_value_bar_links_to_the_grid_of_the_records_holding_such_a_value(viewer_url: str) -> None:
    # Record i's embedding holds i .. i + 15: the value 59 is in records 44 to 59.
    stats = statistics(viewer_url)
    assert stats.count("field=embedding&amp;statistic=values&amp;low=") == 20  # its histogram's bars
    page = get(viewer_url + "?field=embedding&statistic=values&low=59.0&high=59.0")
    indices = [int(part.split('"')[0]) for part in page.text.split('data-index="')[1:]]
    assert indices == list(range(44, 60))
    assert "holds <b>59</b>" in page.text


@pytest.mark.parametrize("query", ["low=nan&high=1", "low=1", "low=1e999&high=2", "low=x&high=2"])
def test_a_range_that_is_not_two_finite_numbers_is_refused(viewer_url: str, query: str) -> None:
    answer = get(viewer_url + "?field=embedding&statistic=values&" + query)
    assert answer.status_code == 404


def test_a_request_addressed_to_another_host_is_refused(viewer_url: str) -> None:
    # A page elsewhere that points its own name at 127.0.0.1 (DNS rebinding) sends its name.
    answer = httpx.get(viewer_url, headers={"Host": "attacker.example"}, timeout=30)
    assert answer.status_code == 400
    assert 'data-index="0"' not in answer.text


def test_kept_statistics_stay_in_the_cache_folder_whatever_the_manifest_says(
    viewed_dataset: Path, tmp_path: Path
) -> None:
    hostile = tmp_path / "data" / "hostile"
    shutil.copytree(viewed_dataset, hostile)
    manifest = json.loads((hostile / "dataset.json").read_text(encoding="utf-8"))
    manifest["fingerprint"] = "../../../escaped"
    (hostile / "dataset.json").write_text(json.dumps(manifest), encoding="utf-8")
    cache = tmp_path / "a" / "b" / "cache"
    with served(str(hostile), cache) as url:
        statistics(url)
    assert [p.parent for p in tmp_path.rglob("*.json") if p.parent != hostile] == [cache]


def _indices(text: str) -> list[int]:
    return [int(part.split('"')[0]) for part in text.split('data-index="')[1:]]


def test_a_seeded_shuffle_shows_every_record_once_in_the_same_order_each_time(viewer_url: str) -> None:
    first = _indices(get(viewer_url + "?seed=7").text)
    second = _indices(get(viewer_url + "?seed=7&page=2").text)
    assert first == _indices(get(viewer_url + "?seed=7").text)
    assert first != list(range(48))
    assert sorted(first + second) == list(range(60))
    assert _indices(get(viewer_url + "?seed=8").text) != first


def test_a_large_picture_is_scaled_down_on_the_server(tmp_path: Path) -> None:
    schema = rk.Schema.loads("name: large\nfields:\n  image: {codec: image, options: {format: png}}\n")
    picture = np.zeros((1500, 2000, 3), np.uint8)
    rk.write_dataset([{"image": picture}], schema, tmp_path / "large", progress=False)
    with served(str(tmp_path / "large"), tmp_path / "cache") as url:
        full = Image.open(io.BytesIO(get(url + "picture/0.png").content))
        thumbnail = Image.open(io.BytesIO(get(url + "picture/0.png?size=thumb").content))
    assert full.size == (1024, 768)
    assert thumbnail.size == (256, 192)


def test_a_mask_is_drawn_in_colour_on_its_picture_in_the_grid(tmp_path: Path) -> None:
    schema = rk.Schema.loads(
        "name: masked\nfields:\n  image: {codec: image, options: {format: png}}\n"
        "  mask: {codec: mask, options: {num_classes: 2}}\n"
    )
    mask = np.zeros((320, 320), np.uint8)
    mask[:, 160:] = 1  # the right half is class 1
    grey = np.full((320, 320, 3), 90, np.uint8)
    rk.write_dataset([{"image": grey, "mask": mask}], schema, tmp_path / "masked", progress=False)
    with served(str(tmp_path / "masked"), tmp_path / "cache") as url:
        drawn = Image.open(io.BytesIO(get(url + "picture/0.png?size=thumb").content)).convert("RGB")
    assert drawn.getpixel((64, 128)) == (90, 90, 90)  # class 0 (background): untinted
    assert drawn.getpixel((192, 128)) != (90, 90, 90)  # class 1: tinted


def test_the_dataset_page_shows_the_card_escaped(tmp_path: Path) -> None:
    schema = rk.Schema.loads("name: carded\nfields:\n  caption: {codec: text}\n")
    card = rk.DatasetCard(
        license="CC-BY-4.0",
        homepage="https://example.org/carded",
        authors=["Jane Doe", "Ravi Rao"],
        description=SCRIPT,
        citation="@misc{carded, title = {Carded}}",
    )
    rk.write_dataset([{"caption": "one"}], tmp_path / "data", schema, card=card, progress=False)
    with served(str(tmp_path / "data"), tmp_path / "cache") as url:
        page = get(url + "dataset").text
    assert '<table id="card">' in page
    assert "CC-BY-4.0" in page
    assert '<a href="https://example.org/carded" rel="noreferrer">' in page
    assert "Jane Doe, Ravi Rao" in page
    assert '<pre id="citation">@misc{carded, title = {Carded}}</pre>' in page
    assert SCRIPT not in page
    assert "&lt;script&gt;" in page


def test_the_dataset_page_of_a_dataset_without_a_card_has_no_card_section(viewer_url: str) -> None:
    page = get(viewer_url + "dataset").text
    assert "<h2>Splits</h2>" in page
    assert 'id="card"' not in page
