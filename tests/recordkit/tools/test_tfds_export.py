"""A recordkit dataset described for TensorFlow Datasets: tfds.builder_from_directory
reads its shards where they are, with the values recordkit wrote."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _object_stores import Bucket
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import DatasetError
from recordkit_codecs.text import TextCodec

tfds = pytest.importorskip("tensorflow_datasets")

LAYOUTS = Path(__file__).resolve().parents[3] / "schemas" / "layouts"

# TFDS 4.9 reads its protos' field descriptors with protobuf's deprecated label(); it is
# TFDS's own call, made whenever it loads a dataset_info.json.
TFDS_LABEL_WARNING = "ignore:label\\(\\) is deprecated:DeprecationWarning"

SCHEMA = rk.Schema.loads(
    """
name: pets
fields:
  image: {codec: image, options: {format: png, channels: 3}}
  label: {codec: label, options: {names: [cat, dog]}}
  caption: {codec: text}
"""
)


@pytest.mark.filterwarnings(TFDS_LABEL_WARNING)
def test_tfds_reads_a_recordkit_dataset_in_place_with_the_same_values(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (8 + i, 9, 3), dtype=np.uint8) for i in range(5)]
    records = [{"image": im, "label": i % 2, "caption": f"pet {i}"} for i, im in enumerate(images)]
    rk.write_dataset(records, SCHEMA, tmp_path / "pets", progress=False, shard_records=2)
    rk.write_dataset(records[:1], SCHEMA, tmp_path / "pets", split="test", progress=False, append=True)
    shards_before = sorted(p.name for p in (tmp_path / "pets").glob("*.tfrecord"))

    written = rk.write_tfds_metadata(tmp_path / "pets")

    assert sorted(p.name for p in written) == ["dataset_info.json", "features.json", "label.labels.txt"]
    assert sorted(p.name for p in (tmp_path / "pets").glob("*.tfrecord")) == shards_before  # not rewritten
    builder = tfds.builder_from_directory(str(tmp_path / "pets"))
    assert builder.info.splits["train"].num_examples == 5
    assert builder.info.features["label"].names == ["cat", "dog"]
    read = list(tfds.as_numpy(builder.as_dataset(split="train")))
    assert len(read) == len(records)
    for record, example in zip(records, read, strict=True):
        np.testing.assert_array_equal(example["image"], record["image"])
        assert example["label"] == record["label"]
        assert example["caption"].decode() == record["caption"]
    assert len(list(tfds.as_numpy(builder.as_dataset(split="test")))) == 1
    # ... and the folder is still the recordkit dataset it was.
    assert [r["caption"] for r in rk.iter_records(tmp_path / "pets")] == [r["caption"] for r in records]


@pytest.mark.filterwarnings(TFDS_LABEL_WARNING)
def test_tfds_reads_images_labels_and_boxes_written_with_the_shipped_tfds_detection_layout(
    tmp_path: Path,
) -> None:
    layout = rk.Schema.load(LAYOUTS / "tfds-detection.yaml")
    rng = np.random.default_rng(11)
    records = []
    for i in range(5):
        low = rng.uniform(0.0, 0.5, (i, 2))
        boxes = np.concatenate([low, low + rng.uniform(0.05, 0.5, (i, 2))], axis=1)  # yxyx in [0, 1]
        records.append(
            {
                "image": rng.integers(0, 256, (12 + i, 10, 3), dtype=np.uint8),
                "label": ["indoor", "outdoor"][i % 2],
                "objects": {"boxes": boxes, "labels": rng.integers(0, 2, i).tolist()},
            }
        )
    rk.write_dataset(records, layout, tmp_path / "det", progress=False, shard_records=2)

    written = rk.write_tfds_metadata(tmp_path / "det")

    assert [p.name for p in written] == [
        "features.json",
        "label.labels.txt",
        "objects-label.labels.txt",
        "dataset_info.json",
    ]
    builder = tfds.builder_from_directory(str(tmp_path / "det"))
    objects = builder.info.features["objects"]
    assert isinstance(objects, tfds.features.Sequence)
    assert isinstance(objects.feature["bbox"], tfds.features.BBoxFeature)
    assert objects.feature["label"].names == ["cat", "dog"]
    assert builder.info.features["label"].names == ["indoor", "outdoor"]
    read = list(tfds.as_numpy(builder.as_dataset(split="train")))
    # TFDS decodes JPEGs with TensorFlow's fast DCT: recordkit's jpeg_dct: fast.
    fast = rk.Schema.loads(
        (LAYOUTS / "tfds-detection.yaml")
        .read_text()
        .replace("{format: jpeg,", "{format: jpeg, jpeg_dct: fast,")
    )
    ours = list(rk.iter_records(tmp_path / "det", schema=fast))
    assert len(read) == len(ours) == len(records)
    for record, mine, theirs in zip(records, ours, read, strict=True):
        np.testing.assert_array_equal(theirs["image"], mine["image"])
        assert theirs["label"] == mine["label"] == ["indoor", "outdoor"].index(record["label"])
        np.testing.assert_array_equal(theirs["objects"]["bbox"], mine["objects"]["boxes"])
        np.testing.assert_allclose(
            theirs["objects"]["bbox"].reshape(-1, 4), record["objects"]["boxes"], rtol=1e-6
        )
        np.testing.assert_array_equal(theirs["objects"]["label"], mine["objects"]["labels"])
        assert theirs["objects"]["label"].tolist() == record["objects"]["labels"]


@pytest.mark.filterwarnings(TFDS_LABEL_WARNING)
def test_tfds_reads_extras_multi_labels_text_sequences_and_keys_nested_by_their_slashes(
    tmp_path: Path,
) -> None:
    schema = rk.Schema.loads(
        """
name: nested
fields:
  image: {codec: image, options: {format: png, channels: 1}, keys: {"": image/encoded}}
  format: {codec: text, keys: {"": image/format}}
  tags: {codec: label, options: {names: [a, b, c], multi: true}}
  words: {codec: text, sequence: true}
  boxes:
    codec: bbox
    options: {stored: yxyx, extras: [score]}
    keys: {"": detections/box, score: detections/score}
"""
    )
    rng = np.random.default_rng(12)
    records = [
        {
            "image": rng.integers(0, 256, (5, 6, 1), dtype=np.uint8),
            "format": "png",
            "tags": ["a", "c"][:i],
            "words": ["x"] * i,
            "boxes": {"boxes": [[0.1, 0.2, 0.3, 0.4]] * i, "score": [0.5] * i},
        }
        for i in range(3)
    ]
    rk.write_dataset(records, schema, tmp_path / "n", progress=False)
    rk.write_tfds_metadata(tmp_path / "n")

    builder = tfds.builder_from_directory(str(tmp_path / "n"))
    assert builder.info.features["tags"].feature.names == ["a", "b", "c"]
    for record, mine, theirs in zip(
        records,
        rk.iter_records(tmp_path / "n"),
        tfds.as_numpy(builder.as_dataset(split="train")),
        strict=True,
    ):
        np.testing.assert_array_equal(theirs["image"]["encoded"], mine["image"])
        assert theirs["image"]["format"] == b"png"
        assert (
            theirs["tags"].tolist()
            == mine["tags"].tolist()
            == [["a", "b", "c"].index(t) for t in record["tags"]]
        )
        assert [w.decode() for w in theirs["words"]] == mine["words"] == record["words"]
        np.testing.assert_array_equal(theirs["detections"]["box"], mine["boxes"]["boxes"][:, [1, 0, 3, 2]])
        np.testing.assert_array_equal(theirs["detections"]["score"], mine["boxes"]["score"])


@pytest.mark.filterwarnings(TFDS_LABEL_WARNING)
def test_tfds_reads_scalars_of_every_dtype_it_parses_and_float64_is_refused(tmp_path: Path) -> None:
    schema = rk.Schema.loads(
        """
name: numbers
fields:
  count: {codec: scalar, options: {dtype: int64}}
  small: {codec: scalar, options: {dtype: int32}}
  score: {codec: scalar, options: {dtype: float32}}
  flag: {codec: scalar, options: {dtype: bool}}
  note: {codec: scalar, options: {dtype: str}}
"""
    )
    records = [
        {"count": 2**40 + i, "small": -i, "score": 0.25 * i, "flag": i % 2 == 1, "note": f"n{i}"}
        for i in range(3)
    ]
    rk.write_dataset(records, schema, tmp_path / "n", progress=False)
    rk.write_tfds_metadata(tmp_path / "n")
    read = list(tfds.as_numpy(tfds.builder_from_directory(str(tmp_path / "n")).as_dataset(split="train")))
    for record, theirs in zip(records, read, strict=True):
        assert theirs["count"] == record["count"]
        assert theirs["small"] == record["small"]
        assert theirs["small"].dtype == np.int32
        assert theirs["score"] == record["score"]
        assert theirs["flag"] == record["flag"]
        assert theirs["note"].decode() == record["note"]
    doubles = rk.Schema.loads("name: d\nfields:\n  x: {codec: scalar, options: {dtype: float64}}\n")
    rk.write_dataset([{"x": 0.1}], doubles, tmp_path / "d", progress=False)
    with pytest.raises(DatasetError, match=r"field 'x'.*float64 is stored as the int64 bits of the double"):
        rk.write_tfds_metadata(tmp_path / "d")


def _written(tmp_path: Path, text: str, records: list[dict[str, object]]) -> Path:
    rk.write_dataset(records, rk.Schema.loads(text), tmp_path / "d", progress=False)
    return tmp_path / "d"


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ("{}", r"needs layout: lists \(they are stored packed\), stored: yxyx \(they are stored xyxy\)"),
        (
            "{layout: lists}",
            r"needs stored: yxyx \(they are stored xyxy\); schemas/layouts/tfds-detection.yaml",
        ),
        ("{stored: yxyx, normalized: false}", r"needs normalized: true \(they are in pixels\)"),
    ],
)
def test_boxes_tfds_would_misread_are_refused_by_name_with_what_to_change_and_nothing_is_written(
    tmp_path: Path, options: str, why: str
) -> None:
    folder = _written(
        tmp_path,
        f"name: b\nfields:\n  caption: {{codec: text}}\n  objects: {{codec: bbox, options: {options}}}\n",
        [{"caption": "a", "objects": [[0.1, 0.1, 0.2, 0.2]]}],
    )
    with pytest.raises(DatasetError, match=r"field 'objects'.*codec 'bbox' has no TFDS feature.*" + why):
        rk.write_tfds_metadata(folder)
    assert sorted(p.name for p in folder.glob("*.json")) == ["dataset.json"]


def test_the_object_detection_api_layouts_boxes_in_four_columns_are_refused_by_name(tmp_path: Path) -> None:
    text = (
        (LAYOUTS / "object-detection-api.yaml")
        .read_text()
        .replace("{format: xyxy,", "{format: xyxy, stored: yxyx,")
    )
    rng = np.random.default_rng(13)
    folder = _written(
        tmp_path,
        text,
        [{"image": rng.integers(0, 256, (4, 4, 3), dtype=np.uint8), "objects": {"boxes": [], "labels": []}}],
    )
    with pytest.raises(
        DatasetError,
        match=r"field 'objects'.*TFDS's BBoxFeature reads one key, and the schema's keys store the columns "
        r"\['image/object/bbox/xmin'",
    ):
        rk.write_tfds_metadata(folder)


def test_keys_tfds_cannot_nest_are_refused_naming_the_fields_that_meet(tmp_path: Path) -> None:
    boxes = {"caption": "a", "objects": [[0.1, 0.1, 0.2, 0.2]]}
    own_keys = _written(
        tmp_path / "own",
        "name: b\nfields:\n  objects: {codec: bbox, options: {stored: yxyx, labels: [x]}}\n",
        [{"objects": {"boxes": [[0.1, 0.1, 0.2, 0.2]], "labels": [0]}}],
    )
    with pytest.raises(
        DatasetError, match=r"field 'objects'.*keys are 'objects', 'objects/labels'; map them"
    ):
        rk.write_tfds_metadata(own_keys)
    meeting = _written(
        tmp_path / "meet",
        """
name: b
fields:
  caption: {codec: text, keys: {"": objects}}
  objects: {codec: bbox, options: {stored: yxyx}, keys: {"": objects/bbox}}
""",
        [boxes],
    )
    with pytest.raises(DatasetError, match=r"field 'objects'.*key 'objects/bbox' meets field 'caption'"):
        rk.write_tfds_metadata(meeting)


class TextCalledClassLabel(TextCodec):
    """A codec that claims TFDS reads its text as class ids: a plugin's mistake."""

    name = "text_called_class_label"

    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        return (rk.TfdsFeature({"pythonClassName": "x.ClassLabel"}, rk.WireKind.INT64),)


def test_a_codec_whose_tfds_feature_parses_other_values_than_it_stores_is_refused_by_name(
    tmp_path: Path,
) -> None:
    registry = rk.CodecRegistry()
    registry.register(TextCalledClassLabel)
    schema = rk.Schema.loads(
        "name: t\nfields:\n  caption: {codec: text_called_class_label}\n", registry=registry
    )
    rk.write_dataset([{"caption": "a"}], schema, tmp_path / "t", progress=False, registry=registry)
    with pytest.raises(
        DatasetError,
        match=r"field 'caption'.*TFDS's ClassLabel parses one int64 value under 'caption', and the field "
        r"stores one bytes value",
    ):
        rk.write_tfds_metadata(tmp_path / "t", registry=registry)
    assert sorted(p.name for p in (tmp_path / "t").glob("*.json")) == ["dataset.json"]


def test_optional_fields_and_field_groups_are_refused_by_name(tmp_path: Path) -> None:
    folder = _written(
        tmp_path / "opt", "name: o\nfields:\n  caption: {codec: text, optional: true}\n", [{"caption": "a"}]
    )
    with pytest.raises(DatasetError, match=r"field 'caption'.*it is optional"):
        rk.write_tfds_metadata(folder)
    folder = _written(tmp_path / "groups", "name: g\nfields:\n  caption: {codec: text}\n", [{"caption": "a"}])
    rk.add_fields(folder, "train", rk.Schema.loads("name: x\nfields:\n  score: {codec: text}\n"), ["s"])
    with pytest.raises(DatasetError, match=r"fields \['score'\] of field group 'score'.*TFDS does not join"):
        rk.write_tfds_metadata(folder)
    assert sorted(p.name for p in folder.glob("*.json")) == ["dataset.json"]


@pytest.mark.filterwarnings(TFDS_LABEL_WARNING)
def test_the_datasets_card_goes_into_tfds_dataset_info(tmp_path: Path) -> None:
    card = {
        "license": "CC-BY-4.0",
        "homepage": "https://example.org/pets",
        "citation": "@misc{pets, title={Pets}}",
        "description": "Pictures of pets.",
    }
    rk.write_dataset(
        [{"caption": "a"}],
        rk.Schema.loads("name: c\nfields:\n  caption: {codec: text}\n"),
        tmp_path / "c",
        progress=False,
        card=card,
    )
    rk.write_tfds_metadata(tmp_path / "c")
    info = tfds.builder_from_directory(str(tmp_path / "c")).info
    assert (info.description, info.citation, info.homepage) == (
        card["description"],
        card["citation"],
        card["homepage"],
    )
    assert info.redistribution_info.license == card["license"]


def test_the_cli_writes_the_files_and_names_a_refused_field_in_one_line(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    records = [{"image": rng.integers(0, 256, (6, 7, 3), dtype=np.uint8), "label": 1, "caption": "x"}]
    rk.write_dataset(records, SCHEMA, tmp_path / "pets", progress=False)
    result = CliRunner().invoke(main, ["tfds-metadata", str(tmp_path / "pets")])
    assert result.exit_code == 0, result.output
    assert (
        result.output == f"wrote features.json, label.labels.txt, dataset_info.json to {tmp_path / 'pets'}\n"
    )
    keep = rk.Schema.loads("name: k\nfields:\n  image: {codec: image, options: {format: keep}}\n")
    rk.write_dataset([{"image": records[0]["image"]}], keep, tmp_path / "keep", progress=False)
    result = CliRunner().invoke(main, ["tfds-metadata", str(tmp_path / "keep")])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "field 'image'" in result.output
    assert "TFDS's Image needs format png or jpeg and a fixed channel count" in result.output


def test_a_dataset_copied_down_from_a_bucket_is_refused_naming_its_run_named_shard(
    tmp_path: Path, s3_bucket: Bucket
) -> None:
    """Shards written into a bucket carry their run's token, which TFDS's file-path
    template cannot express: the export refuses, naming the shard, and writes nothing."""
    import s3fs

    url = s3_bucket.join("pets")
    rng = np.random.default_rng(11)
    records = [
        {"image": rng.integers(0, 256, (6, 5, 3), dtype=np.uint8), "label": i % 2, "caption": f"pet {i}"}
        for i in range(4)
    ]
    rk.write_dataset(records, SCHEMA, url, shard_records=2, storage_options=s3_bucket.storage_options)
    copy = tmp_path / "copy"
    s3fs.S3FileSystem(**s3_bucket.storage_options).get(url + "/", str(copy), recursive=True)
    first = rk.Manifest.load(copy).split("train").shards[0].file
    assert first != "train-00000.tfrecord"
    with pytest.raises(
        DatasetError,
        match=rf"shard {re.escape(first)}: shard '{re.escape(first)}' of split 'train' is not named "
        r"'train-00000\.tfrecord', as TFDS's template",
    ):
        rk.write_tfds_metadata(copy)
    assert not (copy / "dataset_info.json").exists()
