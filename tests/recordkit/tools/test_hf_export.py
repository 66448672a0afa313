"""A recordkit dataset handed to Hugging Face datasets and to Parquet with the matching
features, and the round trips through recordkit that keep every value."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _hf_data import NAMES, columns, features_dict, hf_dataset, png  # type: ignore[import-not-found]
from click.testing import CliRunner

import recordkit as rk
from recordkit import sources
from recordkit.cli import main
from recordkit.errors import DatasetError

# Nothing but local files: datasets must not ask the Hub (it reads these when imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
datasets = pytest.importorskip("datasets")


def _undecoded(dataset: object) -> object:
    """The dataset with images and audio as their bytes (Hugging Face's Audio decodes
    through torchcodec, which recordkit's tests do not install)."""
    out = dataset.cast_column("image", datasets.Image(decode=False))  # type: ignore[attr-defined]
    if "audio" in out.features:
        out = out.cast_column("audio", datasets.Audio(decode=False))
    return out


def test_a_hugging_face_dataset_with_images_and_labels_goes_through_recordkit_and_back_unchanged(
    tmp_path: Path,
) -> None:
    original = hf_dataset(datasets)
    source = sources.hf_dataset(original)
    rk.write_dataset(source, source.schema(), tmp_path / "pets", progress=False, shard_records=3)

    back = rk.to_hf(tmp_path / "pets")["train"]

    assert back.features == original.features
    assert _undecoded(back).to_dict() == _undecoded(original).to_dict()
    assert back.features["label"].int2str(back["label"][2]) == NAMES[2]
    decoded = back.select_columns(["image"])[1]["image"]  # a PNG, decoded by datasets itself
    expected = original.select_columns(["image"])[1]["image"]
    np.testing.assert_array_equal(np.asarray(decoded), np.asarray(expected))


def test_parquet_goes_through_recordkit_and_back_unchanged(tmp_path: Path) -> None:
    hf_dataset(datasets).to_parquet(str(tmp_path / "in.parquet"))
    source = sources.parquet(tmp_path / "in.parquet")
    rk.write_dataset(source, source.schema(), tmp_path / "pets", progress=False)

    written = rk.export_parquet(tmp_path / "pets", tmp_path / "out", rows_per_group=2)

    assert [p.name for p in written] == ["train-00000-of-00001.parquet"]
    before, after = pq.read_table(tmp_path / "in.parquet"), pq.read_table(written[0])
    assert after.to_pylist() == before.to_pylist()
    assert pq.ParquetFile(written[0]).metadata.num_row_groups == 4
    reread = datasets.load_dataset(
        "parquet", data_dir=str(tmp_path / "out"), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert reread.features.to_dict() == features_dict()
    assert reread.to_dict()["label"] == columns()["label"]


def test_every_split_is_exported_and_fields_can_be_chosen(tmp_path: Path) -> None:
    schema = rk.Schema.loads(
        """
name: pets
fields:
  image: {codec: image, options: {format: png}}
  label: {codec: label, options: {num_classes: 2}}
  boxes: {codec: bbox}
  note: {codec: text, optional: true}
"""
    )
    rng = np.random.default_rng(3)
    records = [
        {
            "image": rng.integers(0, 256, (4, 5, 3), dtype=np.uint8),
            "label": i % 2,
            "boxes": np.array([[0.1, 0.2, 0.5, 0.6]], np.float32),
            "note": None if i == 1 else f"note {i}",
        }
        for i in range(3)
    ]
    rk.write_dataset(records, schema, tmp_path / "pets", progress=False)
    rk.write_dataset(records[:1], schema, tmp_path / "pets", split="test", progress=False, append=True)

    with pytest.raises(DatasetError, match="codec 'bbox' has no Hugging Face feature") as caught:
        rk.export_parquet(tmp_path / "pets", tmp_path / "refused")
    assert caught.value.field == "boxes"
    assert not (tmp_path / "refused").exists()

    chosen = ["--field", "image", "--field", "label", "--field", "note"]
    result = CliRunner().invoke(main, ["parquet", str(tmp_path / "pets"), str(tmp_path / "out"), *chosen])
    assert result.exit_code == 0, result.output
    assert "train-00000-of-00001.parquet" in result.output
    exported = datasets.load_dataset(
        "parquet", data_dir=str(tmp_path / "out"), cache_dir=str(tmp_path / "cache")
    )
    assert exported["test"].num_rows == 1
    train = exported["train"]
    assert train.features["label"].names == ["0", "1"]
    assert train["note"] == ["note 0", None, "note 2"]
    again = CliRunner().invoke(main, ["parquet", str(tmp_path / "pets"), str(tmp_path / "out"), *chosen])
    assert again.exit_code == 1
    refusal = "holds train-00000-of-00001.parquet, test-00000-of-00001.parquet already; pass overwrite=True"
    assert refusal in again.output
    for record, image in zip(records, train["image"], strict=True):
        np.testing.assert_array_equal(np.asarray(image), record["image"])


def test_a_field_whose_options_have_no_feature_is_refused_with_the_reason(tmp_path: Path) -> None:
    schema = rk.Schema.loads("name: t\nfields:\n  values: {codec: tensor, options: {dtype: float32}}\n")
    rk.write_dataset([{"values": np.zeros((2, 2), np.float32)}], schema, tmp_path / "t", progress=False)

    with pytest.raises(DatasetError, match="needs the tensor's rank: give the field a shape") as caught:
        rk.to_hf(tmp_path / "t")
    assert caught.value.field == "values"


def test_sequence_fields_go_out_as_lists_of_their_features_and_come_back_with_the_same_values(
    tmp_path: Path,
) -> None:
    schema = rk.Schema.loads(
        """
name: clips
fields:
  frames: {codec: image, options: {format: keep}, sequence: true}
  words: {codec: text, sequence: true}
  tags: {codec: label, options: {names: [cat, dog, bird]}, sequence: true}
  scores: {codec: scalar, options: {dtype: float32}, sequence: true}
"""
    )
    records = [
        {
            "frames": [png(i + j) for j in range(i)],
            "words": [f"word {j}" for j in range(i)],
            "tags": [NAMES[j % 3] for j in range(i)],
            "scores": [0.5 * j for j in range(i)],
        }
        for i in range(4)  # the first record's sequences are empty
    ]
    rk.write_dataset(records, schema, tmp_path / "clips", progress=False)

    back = rk.to_hf(tmp_path / "clips")["train"]

    assert back.features.to_dict() == {
        "frames": {"feature": {"_type": "Image"}, "_type": "List"},
        "words": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
        "tags": {"feature": {"names": NAMES, "_type": "ClassLabel"}, "_type": "List"},
        "scores": {"feature": {"dtype": "float32", "_type": "Value"}, "_type": "List"},
    }
    stored = back.cast_column("frames", datasets.List(datasets.Image(decode=False)))
    assert [[f["bytes"] for f in row] for row in stored["frames"]] == [r["frames"] for r in records]
    assert back["words"] == [r["words"] for r in records]
    assert back["tags"] == [[NAMES.index(t) for t in r["tags"]] for r in records]
    assert back["scores"] == [r["scores"] for r in records]

    # Parquet out, recordkit in from it, Parquet out again: the same table.
    first = rk.export_parquet(tmp_path / "clips", tmp_path / "out")[0]
    source = sources.parquet(first)
    again = source.schema("clips")
    assert [again.fields[n].sequence for n in ("frames", "words")] == [True, True]
    rk.write_dataset(source, again, tmp_path / "again", progress=False)
    second = rk.export_parquet(tmp_path / "again", tmp_path / "out-again")[0]
    assert pq.read_table(second).equals(pq.read_table(first))


def test_fields_stored_in_another_tools_layout_go_out_like_any_other(tmp_path: Path) -> None:
    layout = rk.Schema.load(
        Path(__file__).resolve().parents[3] / "schemas" / "layouts" / "object-detection-api.yaml"
    )
    rng = np.random.default_rng(5)
    records = [
        {
            "image": rng.integers(0, 256, (8, 9, 3), dtype=np.uint8),
            "source_id": str(i),
            "objects": {"boxes": [[0.1, 0.2, 0.5, 0.6]] * i, "labels": [1] * i},
            "class_text": ["cat"] * i,
        }
        for i in range(3)
    ]
    rk.write_dataset(records, layout, tmp_path / "od", progress=False)
    chosen = ["image", "format", "source_id", "class_text"]

    back = rk.to_hf(tmp_path / "od", fields=chosen)["train"]

    assert back.features.to_dict() == {
        "image": {"_type": "Image"},
        "format": {"dtype": "string", "_type": "Value"},
        "source_id": {"dtype": "string", "_type": "Value"},
        "class_text": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
    }
    ours = list(rk.iter_records(tmp_path / "od", fields=chosen))
    assert back["source_id"] == [r["source_id"] for r in ours] == ["0", "1", "2"]
    assert back["class_text"] == [r["class_text"] for r in ours]
    assert back["format"] == ["jpeg"] * 3
    for mine, image in zip(ours, back["image"], strict=True):
        np.testing.assert_array_equal(np.asarray(image), mine["image"])
