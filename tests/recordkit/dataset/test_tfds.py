"""A dataset prepared by TFDS's own builder, read in place through recordkit.

The builder below writes image (PNG), photo (JPEG), audio, text, boxes with labels, a
class label and a tensor with ``download_and_prepare`` on generated data; recordkit's
readers and CLI must give what ``tfds.as_numpy(builder.as_dataset(...))`` gives.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _object_stores import Bucket, cli_options
from click.testing import CliRunner

import recordkit as rk
from recordkit import convert_dataset
from recordkit.cli import main
from recordkit.dataset._manifest import Manifest
from recordkit.dataset._tfds import load_tfds
from recordkit.format._example import decode_example  # private: the stored wire values, without TensorFlow
from recordkit.format._tfrecord import iter_tfrecords  # private: a shard's raw frames, without TensorFlow
from recordkit.storage import location

tfds = pytest.importorskip("tensorflow_datasets")

pytestmark = pytest.mark.slow

SPLITS = {"train": (0, 5), "test": (100, 3)}


#: The card the TFDS builder declares, which adopting the folder carries over.
HOMEPAGE = "https://example.org/tiny"
CITATION = "@misc{tiny2026, title = {Tiny}, author = {Doe, Jane}, year = {2026}}"
LICENSE = "CC-BY-4.0"


def _builder_class() -> Any:
    base: Any = tfds.core.GeneratorBasedBuilder  # tfds is untyped

    class Tiny(base, skip_registration=True):  # type: ignore[misc]  # a base class of type Any
        VERSION = tfds.core.Version("1.0.0")

        def _info(self) -> Any:
            f = tfds.features
            return tfds.core.DatasetInfo(
                builder=self,
                homepage=HOMEPAGE,
                citation=CITATION,
                license=LICENSE,
                features=f.FeaturesDict(
                    {
                        "image": f.Image(shape=(None, None, 3)),
                        "photo": f.Image(shape=(None, None, 3), encoding_format="jpeg"),
                        "audio": f.Audio(sample_rate=8000),
                        "caption": f.Text(),
                        "label": f.ClassLabel(names=["cat", "dog", "bird"]),
                        "embedding": f.Tensor(shape=(4,), dtype=np.float32),
                        "matrix": f.Tensor(shape=(2, 3), dtype=np.int32),
                        "track": f.Sequence(f.Tensor(shape=(2,), dtype=np.float32)),
                        "objects": f.Sequence(
                            {"bbox": f.BBoxFeature(), "label": f.ClassLabel(names=["a", "b"])}
                        ),
                    }
                ),
            )

        def _split_generators(self, dl_manager: Any) -> Any:
            return {name: self._generate_examples(*args) for name, args in SPLITS.items()}

        def _generate_examples(self, seed: int, count: int) -> Any:
            rng = np.random.default_rng(seed)
            for i in range(count):
                h, w = int(rng.integers(4, 12)), int(rng.integers(4, 12))
                boxes = int(rng.integers(0, 3))
                yield (
                    i,
                    {
                        "image": rng.integers(0, 255, (h, w, 3), dtype=np.uint8),
                        "photo": rng.integers(0, 255, (w, h, 3), dtype=np.uint8),
                        "audio": rng.integers(-1000, 1000, (int(rng.integers(5, 20)),), dtype=np.int64),
                        "caption": f"caption {seed + i}",
                        "label": i % 3,
                        "embedding": rng.random(4).astype(np.float32),
                        "matrix": rng.integers(-9, 9, (2, 3), dtype=np.int32),
                        "track": rng.random((boxes + 1, 2)).astype(np.float32),
                        "objects": {
                            "bbox": [tfds.features.BBox(0.1, 0.2, 0.5 + j / 10, 0.6) for j in range(boxes)],
                            "label": [j % 2 for j in range(boxes)],
                        },
                    },
                )

    return Tiny


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    builder = _builder_class()(data_dir=str(tmp_path_factory.mktemp("tfds")))
    builder.download_and_prepare()
    return Path(builder.data_dir), builder


def _expected(builder: Any, split: str) -> list[dict[str, Any]]:
    return list(tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)))


def _check_record(got: dict[str, Any], want: dict[str, Any], *, same_jpeg: bool = False) -> None:
    np.testing.assert_array_equal(np.asarray(got["image"]), want["image"])
    # TFDS decodes JPEG with TensorFlow's default (fast) DCT, recordkit with libjpeg's
    # accurate one (the method Pillow uses, so both of its readers agree): the same
    # shape, pixels within a few levels; equal with the jpeg_dct: fast option.
    photo = np.asarray(got["photo"])
    assert photo.shape == want["photo"].shape
    if same_jpeg:
        np.testing.assert_array_equal(photo, want["photo"])
    else:
        np.testing.assert_allclose(photo.astype(int), want["photo"].astype(int), atol=12)
    # The audio codec gives float32 [samples, 1] = int / 32768; TFDS the int64 samples.
    audio = np.asarray(got["audio"])
    assert audio.dtype == np.float32
    assert audio.shape == (len(want["audio"]), 1)
    np.testing.assert_array_equal((audio[:, 0] * 32768).astype(np.int64), want["audio"])
    np.testing.assert_array_equal(np.asarray(got["matrix"]), want["matrix"])
    assert np.asarray(got["matrix"]).dtype == want["matrix"].dtype
    np.testing.assert_array_equal(np.asarray(got["track"]), want["track"])
    assert str(got["caption"] if isinstance(got["caption"], str) else got["caption"].decode()) == (
        want["caption"].decode()
    )
    assert int(got["label"]) == want["label"]
    np.testing.assert_allclose(np.asarray(got["embedding"], dtype=np.float32), want["embedding"])
    boxes = got["objects.bbox"]
    np.testing.assert_allclose(np.asarray(boxes["boxes"]).reshape(-1, 4), want["objects"]["bbox"])
    np.testing.assert_array_equal(np.asarray(boxes["labels"]).reshape(-1), want["objects"]["label"])


def test_features_map_onto_codecs(prepared: tuple[Path, Any]) -> None:
    root, _ = prepared
    view = rk.open_tfds(root)
    fields = view.schema.fields
    assert fields["image"].codec == "image"
    assert fields["image"].options["sizes"] == "header"
    assert fields["photo"].options["format"] == "jpeg"
    assert fields["label"].options["names"] == ["cat", "dog", "bird"]
    assert fields["objects.bbox"].options["labels"] == ["a", "b"]
    assert fields["objects.bbox"].keys == {"": "objects/bbox", "labels": "objects/label"}
    assert (fields["audio"].codec, fields["audio"].options) == (
        "audio",
        {"sample_rate": 8000, "channels": 1, "stored": "int_samples"},
    )
    assert (fields["matrix"].codec, fields["matrix"].options) == (
        "tensor",
        {"dtype": "int32", "shape": [2, 3], "stored": "numbers"},
    )
    assert fields["track"].options == {"dtype": "float32", "shape": [None, 2], "stored": "numbers"}
    assert view.skipped == ()
    assert {name: info.num_records for name, info in view.manifest.splits.items()} == {"train": 5, "test": 3}


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_iter_records_equals_tfds(prepared: tuple[Path, Any], split: str) -> None:
    root, builder = prepared
    got = list(rk.iter_records(root, split=split))
    want = _expected(builder, split)
    assert len(got) == len(want) == SPLITS[split][1]
    for g, w in zip(got, want, strict=True):
        _check_record(g, w)


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_load_dataset_equals_tfds(prepared: tuple[Path, Any], split: str) -> None:
    root, builder = prepared
    want = _expected(builder, split)
    got: list[dict[str, Any]] = []
    for batch in rk.load_dataset(root, split=split, batch_size=2):
        size = int(batch["label"].shape[0])
        for i in range(size):
            record = {name: value[i] for name, value in batch.items() if name != "objects.bbox"}
            record = {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in record.items()}
            box = batch["objects.bbox"]
            record["objects.bbox"] = {"boxes": box["boxes"][i].numpy(), "labels": box["labels"][i].numpy()}
            got.append(record)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _check_record(g, w)


def test_fast_dct_gives_tfds_jpeg_pixels(prepared: tuple[Path, Any]) -> None:
    """With the image codec's ``jpeg_dct: fast`` (a decode option), both readers' JPEG
    pixels equal what TFDS gives; the default stays accurate (so they differ)."""
    root, builder = prepared
    schema = rk.open_tfds(root).schema
    fast = schema.model_copy(deep=True)
    fast.fields["photo"].options["jpeg_dct"] = "fast"
    want = _expected(builder, "train")
    got = next(iter(rk.load_dataset(root, split="train", schema=fast, fields=["photo"], batch_size=5)))
    accurate = next(iter(rk.load_dataset(root, split="train", fields=["photo"], batch_size=5)))
    differs = False
    for i, w in enumerate(want):
        np.testing.assert_array_equal(got["photo"][i].numpy(), w["photo"])
        differs = differs or not np.array_equal(accurate["photo"][i].numpy(), w["photo"])
    assert differs
    from_numpy = list(rk.iter_records(root, split="train", schema=fast, fields=["photo"]))
    assert len(from_numpy) == len(want)
    for record, w in zip(from_numpy, want, strict=True):
        np.testing.assert_array_equal(record["photo"], w["photo"])


def test_splits_without_shard_lengths_are_counted(prepared: tuple[Path, Any], tmp_path: Path) -> None:
    """Older TFDS versions record no shardLengths: the shards' records are counted."""
    root, builder = prepared
    info = json.loads((root / "dataset_info.json").read_text())
    for split in info["splits"]:
        del split["shardLengths"]
    for file in root.iterdir():
        if file.name != "dataset_info.json":
            shutil.copy(file, tmp_path / file.name)
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    view = load_tfds(tmp_path)
    assert {name: s.num_records for name, s in view.manifest.splits.items()} == {"train": 5, "test": 3}
    got = list(rk.iter_records(tmp_path, split="test"))
    for g, w in zip(got, _expected(builder, "test"), strict=True):
        _check_record(g, w)
    info["splits"][0]["statistics"] = {"numExamples": 99}
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(rk.errors.DatasetError, match=r"statistics\.numExamples is 99"):
        load_tfds(tmp_path)


def test_images_without_sizes_pad_and_resize(prepared: tuple[Path, Any]) -> None:
    root, builder = prepared
    want = _expected(builder, "train")
    padded = next(iter(rk.load_dataset(root, split="train", fields=["image"], batch_size=5, pad=True)))
    images = padded["image"] if not isinstance(padded["image"], tuple) else padded["image"][0]
    images = np.asarray(images)
    height = max(w["image"].shape[0] for w in want)
    width = max(w["image"].shape[1] for w in want)
    assert images.shape == (5, height, width, 3)
    for i, w in enumerate(want):
        h, wd, _ = w["image"].shape
        np.testing.assert_array_equal(images[i, :h, :wd], w["image"])
        assert not images[i, h:].any()
        assert not images[i, :, wd:].any()
    resized = next(
        iter(rk.load_dataset(root, split="train", fields=["image"], batch_size=5, image_size=(8, 8)))
    )
    assert tuple(resized["image"].shape) == (5, 8, 8, 3)


def test_cli_inspect_and_verify_accept_the_folder(prepared: tuple[Path, Any]) -> None:
    root, _ = prepared
    verified = CliRunner().invoke(main, ["verify", str(root)])
    assert verified.exit_code == 0, verified.output
    assert "8 records" in verified.output
    inspected = CliRunner().invoke(main, ["inspect", str(root)])
    assert inspected.exit_code == 0, inspected.output
    assert "objects.bbox" in inspected.output
    assert "train" in inspected.output


def test_array_record_is_refused(prepared: tuple[Path, Any], tmp_path: Path) -> None:
    root, _ = prepared
    for name in ("features.json", "dataset_info.json"):
        text = (root / name).read_text()
        if name == "dataset_info.json":
            text = text.replace('"fileFormat": "tfrecord"', '"fileFormat": "array_record"')
        (tmp_path / name).write_text(text)
    with pytest.raises(rk.errors.DatasetError, match="array_record shards"):
        load_tfds(tmp_path)


def test_convert_gives_a_native_dataset_with_the_same_values(
    prepared: tuple[Path, Any], tmp_path: Path
) -> None:
    root, builder = prepared
    out = tmp_path / "native"
    converted = CliRunner().invoke(main, ["convert", str(root), str(out)])
    assert converted.exit_code == 0, converted.output
    verified = CliRunner().invoke(main, ["verify", str(out)])
    assert verified.exit_code == 0, verified.output
    manifest = Manifest.load(out)
    assert manifest.schema.fields["image"].options["format"] == "keep"
    assert all(shard.sha256 for info in manifest.splits.values() for shard in info.shards)
    # Audio samples stay numbers by default; tensors become raw bytes.
    assert manifest.schema.fields["audio"].options["stored"] == "int_samples"
    assert manifest.schema.fields["matrix"].options == {"dtype": "int32", "shape": [2, 3]}
    for split in SPLITS:
        got = list(rk.iter_records(out, split=split, verify_sha256=True))
        want = _expected(builder, split)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _check_record(g, w)


def test_adopting_the_folder_carries_over_its_citation_homepage_and_license(
    prepared: tuple[Path, Any], tmp_path: Path
) -> None:
    root, _ = prepared
    card = rk.open_tfds(root).manifest.card
    assert card == rk.DatasetCard(license=LICENSE, homepage=HOMEPAGE, citation=CITATION)
    shown = CliRunner().invoke(main, ["inspect", str(root)])
    assert shown.exit_code == 0, shown.output
    assert f"license      {LICENSE}" in shown.output
    assert f"homepage     {HOMEPAGE}" in shown.output
    out = tmp_path / "native"
    converted = CliRunner().invoke(main, ["convert", str(root), str(out)])
    assert converted.exit_code == 0, converted.output
    assert Manifest.load(out).card == card
    assert json.loads((out / "dataset.json").read_text())["card"]["license"] == LICENSE


def test_convert_takes_card_entries_in_place_of_the_folders_and_refuses_a_bad_one_before_writing(
    prepared: tuple[Path, Any], tmp_path: Path
) -> None:
    root, _ = prepared
    out = tmp_path / "native"
    converted = CliRunner().invoke(
        main,
        [
            "convert",
            str(root),
            str(out),
            "--license",
            "MIT",
            "--author",
            "Jane Doe",
            "--description",
            "Tiny.",
        ],
    )
    assert converted.exit_code == 0, converted.output
    assert Manifest.load(out).card == rk.DatasetCard(
        license="MIT", homepage=HOMEPAGE, citation=CITATION, authors=["Jane Doe"], description="Tiny."
    )
    manifest = convert_dataset(root, tmp_path / "python", card=rk.DatasetCard(version_notes="First."))
    assert manifest.card == rk.DatasetCard(
        license=LICENSE, homepage=HOMEPAGE, citation=CITATION, version_notes="First."
    )
    refused = CliRunner().invoke(main, ["convert", str(root), str(tmp_path / "bad"), "--license", "MIT or"])
    assert refused.exit_code != 0
    assert "Traceback" not in refused.output
    assert "the dataset card is not valid: license: is not an SPDX license expression" in refused.output
    assert not (tmp_path / "bad").exists()


# mlcroissant 1.1.1 builds its graph with rdflib's ConjunctiveGraph, deprecated in rdflib 7.
@pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")
def test_the_croissant_description_of_the_folder_validates_with_its_card_shards_and_keys(
    prepared: tuple[Path, Any],
) -> None:
    mlc = pytest.importorskip("mlcroissant")
    root, _ = prepared

    described = rk.croissant(root)

    assert not mlc.Dataset(jsonld=described).metadata.ctx.issues.errors
    assert (described["license"], described["url"], described["citeAs"]) == (LICENSE, HOMEPAGE, CITATION)
    objects = [d for d in described["distribution"] if d["@type"] == "cr:FileObject"]
    assert sorted(d["@id"] for d in objects) == sorted(p.name for p in root.glob("*.tfrecord-*"))
    for item in objects:
        assert item["sha256"] == hashlib.sha256((root / item["@id"]).read_bytes()).hexdigest()
    assert [r["name"] for r in described["recordSet"]] == list(SPLITS)
    fields = {f["name"]: f for f in described["recordSet"][0]["field"]}
    assert fields["objects.bbox"]["source"]["extract"] == {"column": "objects/bbox"}
    assert fields["objects.bbox"]["dataType"] == "cr:BoundingBox"
    assert fields["image"]["dataType"] == "sc:ImageObject"
    printed = CliRunner().invoke(main, ["croissant", str(root)])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout) == described


def test_a_tfds_license_in_free_text_goes_into_the_card_description(
    prepared: tuple[Path, Any], tmp_path: Path
) -> None:
    root, _ = prepared
    for file in root.iterdir():
        shutil.copy(file, tmp_path / file.name)
    info = json.loads((root / "dataset_info.json").read_text())
    info["redistributionInfo"] = {"license": "Free for research use only."}
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    card = rk.open_tfds(tmp_path).manifest.card
    assert card is not None
    assert card.license is None
    assert card.description == "License (from TFDS): Free for research use only."
    assert card.citation == CITATION


def test_convert_into_a_bucket_equals_the_local_convert(
    prepared: tuple[Path, Any], tmp_path: Path, s3_bucket: Bucket
) -> None:
    root, _ = prepared
    url, options = s3_bucket.join("native"), s3_bucket.storage_options
    local = CliRunner().invoke(main, ["convert", str(root), str(tmp_path / "native")])
    remote = CliRunner().invoke(main, ["convert", str(root), url, *cli_options(s3_bucket)])
    assert remote.exit_code == 0, remote.output
    assert remote.output.replace(url, "OUT") == local.output.replace(str(tmp_path / "native"), "OUT")
    assert CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)]).exit_code == 0
    mine, theirs = Manifest.load(tmp_path / "native"), Manifest.load(url, options)
    for split in SPLITS:
        assert [s.sha256 for s in theirs.split(split).shards] == [s.sha256 for s in mine.split(split).shards]


def test_convert_makes_audio_files_when_asked(prepared: tuple[Path, Any], tmp_path: Path) -> None:
    root, builder = prepared
    out = tmp_path / "wav"
    converted = CliRunner().invoke(main, ["convert", "--audio", "wav", str(root), str(out)])
    assert converted.exit_code == 0, converted.output
    options = Manifest.load(out).schema.fields["audio"].options
    assert (options["format"], options["sample_rate"]) == ("wav", 8000)
    assert "stored" not in options
    shard = out / Manifest.load(out).splits["train"].shards[0].file
    first = decode_example(next(iter_tfrecords(location(shard)))[1])
    assert bytes(first["audio"][1][0]).startswith(b"RIFF")
    for g, w in zip(rk.iter_records(out, split="train"), _expected(builder, "train"), strict=True):
        _check_record(g, w)
    flac = convert_dataset(root, tmp_path / "flac", audio="flac")
    assert flac.schema.fields["audio"].options["format"] == "flac"
    for g, w in zip(
        rk.iter_records(tmp_path / "flac", split="test"), _expected(builder, "test"), strict=True
    ):
        _check_record(g, w)


def test_convert_keeps_encoded_bytes(prepared: tuple[Path, Any], tmp_path: Path) -> None:
    root, _ = prepared
    manifest = convert_dataset(root, tmp_path / "native")
    source = load_tfds(root).manifest.splits["train"].shards[0].file
    before = [decode_example(d) for _, d in iter_tfrecords(location(root / source))]
    after = [
        decode_example(d)
        for _, d in iter_tfrecords(location(tmp_path / "native" / manifest.splits["train"].shards[0].file))
    ]
    assert [b["photo"][1] for b in before] == [a["photo"][1] for a in after]
    assert [b["image"][1] for b in before] == [a["image"][1] for a in after]


def test_infer_schema_reads_images_stored_without_sizes(prepared: tuple[Path, Any]) -> None:
    root, builder = prepared
    shard = root / load_tfds(root).manifest.splits["train"].shards[0].file
    proposed = rk.infer_schema(shard)
    assert proposed.fields["image"].options["sizes"] == "header"
    assert proposed.fields["photo"].options["sizes"] == "header"
    got = list(rk.iter_records(shard, schema=proposed, fields=["image"]))
    want = _expected(builder, "train")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g["image"], w["image"])
    batch = next(iter(rk.load_dataset(shard, schema=proposed, fields=["image"], batch_size=5, pad=True)))
    images = np.asarray(batch["image"])
    for i, w in enumerate(want):
        h, wd, _ = w["image"].shape
        np.testing.assert_array_equal(images[i, :h, :wd], w["image"])


def test_rk_open_reads_the_folder_once_as_iter_records_does(prepared: tuple[Path, Any]) -> None:
    root, _ = prepared
    ds = rk.open(root)
    assert sorted(ds.splits) == sorted(SPLITS)
    assert ds.current_split is None  # two splits: one is chosen before reading
    for split, (_, count) in SPLITS.items():
        handle = ds.split(split)
        want = list(rk.iter_records(root, split=split))
        assert len(handle) == count
        got = list(handle.records())
        assert [r["caption"] for r in got] == [r["caption"] for r in want]
        assert str(handle[[count - 1, 0]]) == str([want[count - 1], want[0]])


def test_the_viewer_shows_the_folder_in_place(prepared: tuple[Path, Any], tmp_path: Path) -> None:
    testclient = pytest.importorskip("starlette.testclient", reason="the view extra")
    from recordkit.view import create_app, open_viewer  # the view extra: imported only when installed

    folder, _ = prepared
    client = testclient.TestClient(
        create_app(open_viewer(str(folder)), cache_dir=tmp_path, hosts=["testserver"])
    )
    grid = client.get("/?split=train")
    assert grid.status_code == 200
    assert grid.text.count('class="cell"') == 5
    assert "caption: caption 0" in grid.text
    assert client.get("/picture/0.png?split=train").content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.get("/audio/0/audio.wav?split=train").content[:4] == b"RIFF"
