"""The sources on realistic generated inputs: what each yields and proposes, that the
records write and read back, and that malformed inputs are refused naming the file and
the line or entry, the rest still read under ``on_error="skip"``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sample_sources as fx
from PIL import Image

import recordkit as rk
from recordkit import sources
from recordkit.errors import InputError


def _write_and_read(source: sources.Source, root: Path) -> list[dict]:
    rk.write_dataset(source, source.schema(), root, progress=False)
    return list(rk.iter_records(root))


# -- image_folder -----------------------------------------------------------------------


def test_image_folder_gives_nested_classes_and_reports_strays(tmp_path: Path) -> None:
    root = fx.image_folder(tmp_path)
    source = sources.image_folder(root)
    items = list(source.items())
    assert [i.key for i in items] == [
        "daisy/d1.jpg",
        "roses/garden/r2.jpg",
        "roses/r1.jpg",
        "tulips/t1.png",
        "tulips/t2.jpg",
    ]
    assert [i.record["label"] for i in items] == ["daisy", "roses", "roses", "tulips", "tulips"]
    assert {(Path(s.file).name, s.reason) for s in source.skipped} == {
        ("README.md", "not in a class folder"),
        ("notes.txt", "not an image"),
    }
    schema = source.schema()
    assert schema.fields["label"].options["names"] == ["daisy", "roses", "tulips"]
    assert schema.fields["image"].options["format"] == "keep"


def test_image_folder_stores_the_files_bytes_unchanged(tmp_path: Path) -> None:
    root = fx.image_folder(tmp_path)
    _write_and_read(sources.image_folder(root), tmp_path / "out")
    # The image codec's format "keep": the stored bytes are the file's bytes.
    from recordkit.read._iter_records import (  # private: the stored bytes, which no public reader returns
        iter_shard_records,
    )
    from recordkit.read._open import open_dataset  # private: the stored bytes, which no public reader returns

    source = open_dataset(tmp_path / "out")
    stored = [data for shard in source.shards for _, data in iter_shard_records(shard)]
    assert (root / "roses/r1.jpg").read_bytes() in stored[2]
    records = list(rk.iter_records(tmp_path / "out"))
    assert records[0]["file"] == "daisy/d1.jpg"
    assert records[1]["image"].shape == (20, 16, 3)
    assert [int(r["label"]) for r in records] == [0, 1, 1, 2, 2]


def test_the_proposed_schema_is_editable_and_dumps_to_yaml(tmp_path: Path) -> None:
    source = sources.image_folder(fx.image_folder(tmp_path))
    schema = source.schema("flowers")
    edited = schema.model_copy(
        update={"fields": {**schema.fields, "image": rk.FieldSpec(codec="image", options={"format": "png"})}}
    )
    path = tmp_path / "flowers.yaml"
    edited.dump(path)
    assert "format: png" in path.read_text(encoding="utf-8")
    assert rk.Schema.load(path) == edited


# -- coco -------------------------------------------------------------------------------


def test_coco_gives_boxes_names_crowds_areas_and_ids(tmp_path: Path) -> None:
    source = sources.coco(fx.coco(tmp_path), tmp_path / "coco" / "images")
    items = list(source.items())
    assert [i.record["image_id"] for i in items] == [1, 2, 3]
    first = items[0].record["objects"]
    assert first["boxes"] == [[4.0, 6.0, 20.0, 30.0], [30.5, 10.0, 25.0, 12.0]]
    assert first["labels"] == ["person", "dog"]
    assert items[1].record["objects"]["iscrowd"] == [1.0, 1.0]
    assert items[2].record["objects"]["boxes"] == []  # an image without annotations
    options = source.schema().fields["objects"].options
    assert options["format"] == "xywh"
    assert options["normalized"] is False
    assert options["labels"] == ["person", "car", "dog"]


def test_coco_round_trip_converts_xywh_to_the_readers_format(tmp_path: Path) -> None:
    source = sources.coco(fx.coco(tmp_path), tmp_path / "coco" / "images")
    records = _write_and_read(source, tmp_path / "out")
    objects = records[0]["objects"]
    np.testing.assert_allclose(objects["boxes"], [[4, 6, 20, 30], [30.5, 10, 25, 12]])
    assert objects["labels"].tolist() == [0, 2]  # person, dog: positions among the categories
    np.testing.assert_allclose(objects["area"], [410.5, 300.0])
    xyxy = source.schema().model_copy(
        update={
            "fields": {
                **source.schema().fields,
                "objects": source.schema()
                .fields["objects"]
                .model_copy(
                    update={"options": {**source.schema().fields["objects"].options, "format": "xyxy"}}
                ),
            }
        }
    )
    again = next(iter(rk.iter_records(tmp_path / "out", fields=["objects"], schema=xyxy)))
    np.testing.assert_allclose(again["objects"]["boxes"][0], [4, 6, 24, 36])


def test_coco_masks_from_polygons_and_both_rle_forms(tmp_path: Path) -> None:
    source = sources.coco(fx.coco(tmp_path), tmp_path / "coco" / "images", masks=True)
    records = _write_and_read(source, tmp_path / "out")
    polygon = records[0]["masks"][0]
    assert polygon.shape == (48, 64)
    assert polygon[6:37, 4:25].all()
    assert polygon.sum() == 31 * 21
    assert not polygon[:6].any()
    assert not polygon[:, 25:].any()
    crowd, square = records[1]["masks"]
    np.testing.assert_array_equal(crowd, fx.crowd_mask(40, 40))  # compact RLE string
    assert square[:10, :10].all()
    assert square.sum() == 100
    assert len(records[2]["masks"]) == 0


def test_the_rle_decoder_reads_what_cocos_encoder_writes() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        mask = (rng.random((13, 7)) > 0.6).astype(np.uint8)
        counts = fx.rle_counts_of(mask)
        np.testing.assert_array_equal(sources.decode_rle(fx.encode_rle_string(counts), 13, 7), mask)
        np.testing.assert_array_equal(sources.decode_rle(counts, 13, 7), mask)
    # Worked by hand from maskApi.c's rules: a 3x3 mask with a 2x2 square at its top left
    # has the column-major runs 0, 2, 1, 2, 4; the 4th and 5th are stored as differences
    # from the runs two before them (0 and 3), each + 48: "02103".
    np.testing.assert_array_equal(sources.decode_rle("02103", 3, 3), [[1, 1, 0], [1, 1, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="cover 8 pixels"):
        sources.decode_rle([4, 4], 3, 3)


@pytest.mark.parametrize(
    ("change", "entry", "reason"),
    [
        (
            {"id": 9, "image_id": 1, "category_id": 1, "bbox": [50, 40, 20, 20]},
            "annotation 9",
            "outside the 64 x 48",
        ),
        (
            {"id": 9, "image_id": 1, "category_id": 7, "bbox": [1, 1, 2, 2]},
            "annotation 9",
            "unknown category id 7",
        ),
    ],
)
def test_coco_bad_annotations_name_the_file_and_annotation(
    tmp_path: Path, change: dict, entry: str, reason: str
) -> None:
    annotations = [change, {"id": 10, "image_id": 2, "category_id": 3, "bbox": [1, 1, 5, 5]}]
    path = fx.coco(tmp_path, annotations)
    with pytest.raises(InputError, match=reason) as caught:
        list(sources.coco(path, tmp_path / "coco" / "images"))
    assert caught.value.context.file == str(path)
    assert caught.value.context.entry is not None
    assert caught.value.context.entry.startswith(entry)
    assert "000001.jpg" in str(caught.value)
    skipping = sources.coco(path, tmp_path / "coco" / "images", on_error="skip")
    assert [r["image_id"] for r in skipping] == [2, 3]
    assert len(skipping.skipped) == 1
    assert reason in skipping.skipped[0].reason


def test_coco_missing_image_file_is_named(tmp_path: Path) -> None:
    path = fx.coco(tmp_path)
    (tmp_path / "coco" / "images" / "000002.jpg").unlink()
    with pytest.raises(InputError, match=r"image 2 \('000002.jpg'\).*000002.jpg does not exist"):
        list(sources.coco(path, tmp_path / "coco" / "images"))
    source = sources.coco(path, tmp_path / "coco" / "images", on_error="skip")
    assert [r["image_id"] for r in source] == [1, 3]


def test_coco_json_that_is_not_coco(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"images": []}), encoding="utf-8")
    with pytest.raises(InputError, match="'images' and 'categories'"):
        sources.coco(path)
    path.write_text('{"images": [\n  oops', encoding="utf-8")
    with pytest.raises(InputError, match="not JSON") as caught:
        sources.coco(path)
    assert caught.value.context.line == 2


# -- pascal_voc -------------------------------------------------------------------------


def test_voc_detection_gives_zero_based_boxes_and_flags(tmp_path: Path) -> None:
    source = sources.pascal_voc(fx.voc(tmp_path), "train")
    records = _write_and_read(source, tmp_path / "out")
    assert [r["image_id"] for r in records] == fx.VOC_IDS[:2]
    first = records[0]["objects"]
    np.testing.assert_allclose(first["boxes"], [[2, 3, 17, 19], [0, 0, 9, 7]])  # VOC's 1-based minus 1
    names = list(sources.VOC_CLASSES)
    assert first["labels"].tolist() == [names.index("cat"), names.index("person")]
    np.testing.assert_allclose(first["difficult"], [0, 1])
    np.testing.assert_allclose(first["truncated"], [1, 0])


def test_voc_segmentation_keeps_palette_indices_and_the_void_border(tmp_path: Path) -> None:
    source = sources.pascal_voc(fx.voc(tmp_path), "train", task="segmentation")
    assert source.schema().fields["mask"].options == {"num_classes": 21, "ignore_index": 255}
    records = _write_and_read(source, tmp_path / "out")
    assert len(records) == 3
    for i, record in enumerate(records):
        np.testing.assert_array_equal(record["mask"], fx.voc_mask(24, 30 + 2 * i, i))
    assert 255 in records[0]["mask"]


def test_voc_broken_xml_names_the_file_and_line(tmp_path: Path) -> None:
    root = fx.voc(tmp_path)
    broken = root / "Annotations" / f"{fx.VOC_IDS[1]}.xml"
    broken.write_text("<annotation>\n<size><width>3</width>\n</annotation>\n", encoding="utf-8")
    with pytest.raises(InputError, match="broken XML") as caught:
        list(sources.pascal_voc(root, "train"))
    assert caught.value.context.file == str(broken)
    assert caught.value.context.line == 3
    source = sources.pascal_voc(root, "train", on_error="skip")
    assert [r["image_id"] for r in source] == fx.VOC_IDS[:1]
    assert source.skipped[0].file == str(broken)


def test_voc_box_outside_its_image_and_unknown_class(tmp_path: Path) -> None:
    root = fx.voc(tmp_path)
    xml = root / "Annotations" / f"{fx.VOC_IDS[0]}.xml"
    xml.write_text(fx.voc_xml(fx.VOC_IDS[0], 30, 24, [("cat", [1, 1, 40, 10], 0, 0)]), encoding="utf-8")
    with pytest.raises(InputError, match=r"object 0, field 'bndbox': box \[1.0, 1.0, 40.0, 10.0\].*30 x 24"):
        list(sources.pascal_voc(root, "train"))
    xml.write_text(fx.voc_xml(fx.VOC_IDS[0], 30, 24, [("unicorn", [1, 1, 4, 4], 0, 0)]), encoding="utf-8")
    with pytest.raises(InputError, match="unknown class 'unicorn'"):
        list(sources.pascal_voc(root, "train"))


def test_voc_size_of_zero_means_not_recorded_and_the_header_size_is_used(tmp_path: Path) -> None:
    root = fx.voc(tmp_path)
    xml = root / "Annotations" / f"{fx.VOC_IDS[0]}.xml"
    xml.write_text(fx.voc_xml(fx.VOC_IDS[0], 0, 0, [("cat", [1, 1, 40, 10], 0, 0)]), encoding="utf-8")
    with pytest.raises(InputError, match=r"box \[1.0, 1.0, 40.0, 10.0\].*30 x 24"):
        list(sources.pascal_voc(root, "train"))  # the header's 30 x 24 bounds the box
    xml.write_text(fx.voc_xml(fx.VOC_IDS[0], 0, 0, [("cat", [1, 1, 4, 4], 0, 0)]), encoding="utf-8")
    first = next(iter(sources.pascal_voc(root, "train")))
    assert first["image_id"] == fx.VOC_IDS[0]
    xml.write_text(fx.voc_xml(fx.VOC_IDS[0], 0, 24, [("cat", [1, 1, 4, 4], 0, 0)]), encoding="utf-8")
    with pytest.raises(InputError, match="positive integers"):
        list(sources.pascal_voc(root, "train"))


# -- audio_folder -----------------------------------------------------------------------


def test_audio_folder_joins_transcripts_by_file_name(tmp_path: Path) -> None:
    source = sources.audio_folder(fx.audio_folder(tmp_path))
    schema = source.schema()
    assert schema.fields["audio"].options == {"sample_rate": 8000, "channels": 1}
    assert schema.fields["transcript"].codec == "text"
    assert schema.fields["speaker"].codec == "scalar"
    records = _write_and_read(source, tmp_path / "out")
    assert [r["transcript"] for r in records] == list(fx.TRANSCRIPTS.values())
    assert [r["file"] for r in records] == list(fx.TRANSCRIPTS)
    assert [len(r["audio"]) for r in records] == [2000, 4000, 6000]


def test_audio_folder_metadata_problems_name_the_line(tmp_path: Path) -> None:
    root = fx.audio_folder(tmp_path)
    table = root / "metadata.csv"
    table.write_text(
        "file_name,transcript,speaker\na/one.wav,hello,1\na/two.wav,short\nb/three.wav,yes,3\nc/gone.wav,x,4\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="missing 'speaker'") as caught:
        list(sources.audio_folder(root))
    assert caught.value.context.line == 3
    source = sources.audio_folder(root, on_error="skip")
    assert [r["file"] for r in source] == ["a/one.wav", "b/three.wav"]
    reasons = sorted(str(s) for s in source.skipped)
    assert any("line 3" in r and "missing 'speaker'" in r for r in reasons)
    assert any("no row for 'a/two.wav'" in r for r in reasons)
    assert any("line 5" in r and "no audio file 'c/gone.wav'" in r for r in reasons)


# -- csv and jsonl ----------------------------------------------------------------------


def _manifest_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "manifest"
    (folder / "img").mkdir(parents=True)
    for i in range(3):
        (folder / "img" / f"{i}.png").write_bytes(fx.photo(8 + i, 6, i, "PNG"))
    return folder


def test_csv_resolves_file_columns_relative_to_the_table(tmp_path: Path) -> None:
    folder = _manifest_folder(tmp_path)
    table = folder / "train.csv"
    table.write_text(
        "path,caption,score,count\nimg/0.png,a cat,0.5,1\nimg/1.png,a dog,1.5,2\nimg/2.png,x,2,3\n"
    )
    source = sources.csv(table)
    schema = source.schema()
    assert {n: f.codec for n, f in schema.fields.items()} == {
        "path": "image",
        "caption": "text",
        "score": "scalar",
        "count": "scalar",
    }
    assert schema.fields["score"].options["dtype"] == "float32"
    records = _write_and_read(source, tmp_path / "out")
    assert [r["caption"] for r in records] == ["a cat", "a dog", "x"]
    assert records[1]["path"].shape == (6, 9, 3)


def test_csv_row_missing_a_column_is_refused_by_line(tmp_path: Path) -> None:
    folder = _manifest_folder(tmp_path)
    table = folder / "t.csv"
    table.write_text("path,caption\nimg/0.png,a\nimg/1.png\nimg/2.png,c\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing 'caption'") as caught:
        list(sources.csv(table))
    assert caught.value.context.file == str(table)
    assert caught.value.context.line == 3
    source = sources.csv(table, on_error="skip")
    assert [r["caption"] for r in source] == ["a", "c"]


def test_jsonl_maps_columns_to_fields_and_names_bad_lines(tmp_path: Path) -> None:
    folder = _manifest_folder(tmp_path)
    table = folder / "t.jsonl"
    rows = [{"file": f"img/{i}.png", "label": i, "text": f"t{i}"} for i in range(3)]
    lines = [json.dumps(r) for r in rows]
    lines.insert(2, "{not json")
    lines.append(json.dumps({"file": "img/9.png", "label": 1, "text": "gone"}))
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = sources.jsonl(
        table, columns={"picture": "file", "caption": "text"}, files=["picture"], on_error="skip"
    )
    assert list(source.schema().fields) == ["picture", "caption"]
    records = list(source)
    assert [r["caption"] for r in records] == ["t0", "t1", "t2"]
    assert isinstance(records[0]["picture"], Path)
    assert [(s.line, s.field, s.reason.split(" ")[0]) for s in source.skipped] == [
        (3, None, "not"),
        (5, "picture", "no"),
    ]
    assert "no such file 'img/9.png'" in str(source.skipped[1])


def test_sources_emit_paths_never_pixels(tmp_path: Path) -> None:
    for source in (
        sources.image_folder(fx.image_folder(tmp_path)),
        sources.coco(fx.coco(tmp_path), tmp_path / "coco" / "images"),
        sources.pascal_voc(fx.voc(tmp_path), "train", task="segmentation"),
    ):
        for record in source:
            assert isinstance(record["image"], Path)
            assert not any(
                isinstance(v, (np.ndarray, Image.Image)) for k, v in record.items() if k != "masks"
            )
