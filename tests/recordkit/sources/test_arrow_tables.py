"""Parquet files and Hugging Face datasets read as records: features become fields,
images and audio keep their bytes, and bad input is named."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _hf_data import NAMES, columns, features_dict, hf_dataset, png, wav  # type: ignore[import-not-found]
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit import sources
from recordkit.cli import main
from recordkit.errors import InputError, MissingExtraError
from recordkit.sources._arrow_tables import import_extra  # private: the extras are installed here

# Nothing but local files: datasets must not ask the Hub (it reads these when imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
datasets = pytest.importorskip("datasets")


def test_a_hugging_face_dataset_proposes_a_field_per_feature() -> None:
    fields = sources.hf_dataset(hf_dataset(datasets)).schema().fields

    assert fields["image"].codec == "image"
    assert fields["image"].options == {"format": "keep"}
    assert fields["label"].codec == "label"
    assert fields["label"].options == {"names": NAMES}
    assert fields["score"].options == {"dtype": "float32"}
    assert fields["caption"].codec == "text"
    assert fields["tokens"].options == {"dtype": "int64", "shape": [None]}
    assert fields["point"].options == {"dtype": "float32", "shape": [2]}
    assert fields["audio"].options == {"format": "wav", "sample_rate": 8000, "channels": 1}


def test_a_hugging_face_dataset_is_written_with_its_image_and_audio_bytes_unchanged(tmp_path: Path) -> None:
    source = sources.hf_dataset(hf_dataset(datasets), batch_rows=3)
    rk.write_dataset(source, source.schema(), tmp_path / "out", progress=False)

    stored = list(rk.iter_records(tmp_path / "out"))
    data = columns()
    assert [r["label"] for r in stored] == data["label"]
    assert [r["caption"] for r in stored] == data["caption"]
    assert [float(r["score"]) for r in stored] == data["score"]
    assert [r["tokens"].tolist() for r in stored] == data["tokens"]
    assert rk.hf_features(tmp_path / "out")["image"] == {"_type": "Image"}
    exported = rk.to_hf(tmp_path / "out")["train"].cast_column("image", datasets.Image(decode=False))
    assert [row["bytes"] for row in exported["image"]] == [cell["bytes"] for cell in data["image"]]
    audio = exported.cast_column("audio", datasets.Audio(decode=False))["audio"]
    assert [row["bytes"] for row in audio] == [cell["bytes"] for cell in data["audio"]]


def test_a_save_to_disk_folder_reads_as_the_dataset_it_holds(tmp_path: Path) -> None:
    datasets.DatasetDict({"train": hf_dataset(datasets), "test": hf_dataset(datasets, 2)}).save_to_disk(
        str(tmp_path / "saved")
    )

    assert len(list(sources.hf_dataset(tmp_path / "saved", split="test"))) == 2
    with pytest.raises(InputError, match="holds the splits train, test: name one with split="):
        sources.hf_dataset(tmp_path / "saved")


def test_ingest_takes_a_parquet_file_that_datasets_wrote(tmp_path: Path) -> None:
    hf_dataset(datasets).to_parquet(str(tmp_path / "pets.parquet"))

    result = rk_cli(["ingest", "parquet", str(tmp_path / "pets.parquet"), str(tmp_path / "out")])

    assert result.exit_code == 0, result.output
    assert [r["label"] for r in rk.iter_records(tmp_path / "out")] == columns()["label"]


def test_a_parquet_file_without_features_is_described_from_its_arrow_types(tmp_path: Path) -> None:
    table = pa.table(
        {
            "picture": [png(1), None, png(3)],
            "clip": [{"bytes": wav(1), "path": None}] * 3,
            "count": pa.array([1, 2, 3], pa.int16()),
            "ok": [True, False, True],
            "name": ["a", "b", "c"],
            "values": pa.array([[1.5], [], [2.5, 3.5]], pa.list_(pa.float64())),
        }
    )
    pq.write_table(table, tmp_path / "plain.parquet", row_group_size=2)

    source = sources.parquet(tmp_path / "plain.parquet", batch_rows=1)
    fields = source.schema().fields
    records = list(source)

    assert fields["picture"].codec == "image"
    assert fields["picture"].optional
    assert fields["clip"].codec == "audio"
    assert not fields["clip"].optional
    assert fields["count"].options == {"dtype": "int64"}
    assert fields["ok"].options == {"dtype": "bool"}
    assert fields["values"].options == {"dtype": "float64", "shape": [None]}
    assert [r["picture"] for r in records] == [png(1), None, png(3)]
    assert [r["clip"] for r in records] == [wav(1)] * 3
    assert [item.key for item in source.items()][-1] == f"{tmp_path / 'plain.parquet'}:2"


def test_a_folder_of_parquet_files_is_read_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "parts").mkdir()
    for part in (1, 0):
        pq.write_table(pa.table({"n": [2 * part, 2 * part + 1]}), tmp_path / "parts" / f"{part}.parquet")

    assert [r["n"] for r in sources.parquet(tmp_path / "parts")] == [0, 1, 2, 3]


def test_a_file_that_is_not_parquet_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not a Parquet file")

    with pytest.raises(InputError, match="not a Parquet file pyarrow reads") as caught:
        sources.parquet(tmp_path / "broken.parquet")
    assert caught.value.context.file == str(tmp_path / "broken.parquet")


def test_a_column_of_an_arrow_type_without_a_codec_is_refused_naming_the_column(tmp_path: Path) -> None:
    pq.write_table(
        pa.table({"n": [1], "when": pa.array([0], pa.timestamp("ms"))}), tmp_path / "times.parquet"
    )

    with pytest.raises(InputError, match=r"the Arrow type timestamp\[ms\] has no recordkit codec") as caught:
        sources.parquet(tmp_path / "times.parquet").schema()
    assert caught.value.field == "when"


def test_audio_that_is_neither_wav_nor_flac_is_refused_saying_what_would_decode_it(tmp_path: Path) -> None:
    mp3ish = {"bytes": b"ID3\x04" + bytes(60), "path": None}
    features = datasets.Features({"audio": datasets.Audio(sampling_rate=8000)})
    table = pa.table({"audio": [mp3ish]}, schema=features.arrow_schema)
    dataset = datasets.Dataset(table, info=datasets.DatasetInfo(features=features))

    with pytest.raises(InputError, match=r"neither WAV nor FLAC.*torchcodec") as caught:
        sources.hf_dataset(dataset).schema()
    assert caught.value.field == "audio"


def test_an_image_given_only_as_a_path_is_refused_naming_its_row_and_column(tmp_path: Path) -> None:
    features = datasets.Features({"image": datasets.Image()})
    cells = [{"bytes": png(0), "path": None}, {"bytes": None, "path": "/elsewhere/cat.png"}]
    dataset = datasets.Dataset(
        pa.table({"image": cells}, schema=features.arrow_schema), info=datasets.DatasetInfo(features=features)
    )

    with pytest.raises(InputError, match="holds no encoded bytes") as caught:
        list(sources.hf_dataset(dataset))
    assert (caught.value.field, caught.value.context.entry) == ("image", "row 1")
    assert len(list(sources.hf_dataset(dataset, on_error="skip"))) == 1


def test_a_missing_extra_is_named_with_the_pip_command() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'recordkit\[parquet\]'"):
        import_extra("recordkit_no_such_module", "pyarrow", "parquet", "reading Parquet")


def rk_cli(args: list[str]) -> Result:
    return CliRunner().invoke(main, args)


def test_the_generated_columns_hold_what_the_features_describe() -> None:
    """The helper's data matches its features (else every test above proves less)."""
    dataset = hf_dataset(datasets)
    assert dataset.features.to_dict() == features_dict()
    assert np.asarray(dataset["point"]).shape == (7, 2)
