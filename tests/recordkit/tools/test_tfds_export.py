"""A recordkit dataset described for TensorFlow Datasets: tfds.builder_from_directory
reads its shards where they are, with the values recordkit wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import DatasetError

tfds = pytest.importorskip("tensorflow_datasets")

SCHEMA = rk.Schema.loads(
    """
name: pets
fields:
  image: {codec: image, options: {format: png, channels: 3}}
  label: {codec: label, options: {names: [cat, dog]}}
  caption: {codec: text}
"""
)


# TFDS 4.9 reads its protos' field descriptors with protobuf's deprecated label(); it is
# TFDS's own call, made whenever it loads a dataset_info.json.
@pytest.mark.filterwarnings("ignore:label\\(\\) is deprecated:DeprecationWarning")
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


def test_a_field_without_a_tfds_equivalent_is_refused_by_name_and_nothing_is_written(tmp_path: Path) -> None:
    schema = rk.Schema.loads(
        """
name: boxes
fields:
  caption: {codec: text}
  objects: {codec: bbox}
"""
    )
    rk.write_dataset(
        [{"caption": "a", "objects": [[0.1, 0.1, 0.2, 0.2]]}], schema, tmp_path / "b", progress=False
    )
    with pytest.raises(DatasetError, match=r"field 'objects'.*codec 'bbox' has no TFDS feature"):
        rk.write_tfds_metadata(tmp_path / "b")
    assert sorted(p.name for p in (tmp_path / "b").glob("*.json")) == ["dataset.json"]


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
