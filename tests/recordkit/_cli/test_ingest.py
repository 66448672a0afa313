"""``recordkit ingest``, ``show`` and ``stats`` end to end on generated COCO, VOC, folder
and CSV inputs (sdk/recordkit/_cli/ingest.py, show.py, stats.py, _render.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import sample_sources as fx
from click.testing import CliRunner, Result
from PIL import Image

import recordkit as rk
from recordkit import sources
from recordkit._cli.ingest import split_of
from recordkit.cli import main
from recordkit.tools._render import (  # private: where `show` draws a box, to find it in the picture
    BOX_WIDTH,
    box_color,
    scale_of,
)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def ingest_coco(tmp_path: Path, *extra: str | Path) -> tuple[Path, Result]:
    annotations = fx.coco(tmp_path)
    out = tmp_path / "out"
    result = run(
        "ingest", "coco", annotations, out, "--opt", f"images_dir={tmp_path / 'coco' / 'images'}", *extra
    )
    return out, result


def test_ingest_coco_then_show_draws_the_boxes_where_the_annotations_say(tmp_path: Path) -> None:
    out, result = ingest_coco(tmp_path)
    assert result.exit_code == 0, result.output
    assert "ingested 3 records" in result.output
    assert (out / "schema.yaml").is_file()
    assert rk.Schema.load(out / "schema.yaml") == rk.Manifest.load(out).schema
    shown = run("show", out, "--n", "3", "-o", tmp_path / "show")
    assert shown.exit_code == 0, shown.output
    picture = np.asarray(Image.open(tmp_path / "show" / "record-00000.png").convert("RGB"))
    scale = scale_of(48, 64)
    names = ["person", "car", "dog"]
    for (x, y, w, h), name in [((4, 6, 20, 30), "person"), ((30.5, 10, 25, 12), "dog")]:
        colour = box_color(names.index(name))
        x0, y0, x1, y1 = (round(v * scale) for v in (x, y, x + w, y + h))
        middle_x, middle_y = (x0 + x1) // 2, (y0 + y1) // 2
        for px, py in [(x0, middle_y), (x1, middle_y), (middle_x, y0), (middle_x, y1)]:
            assert tuple(picture[py, px]) == colour, (name, px, py)  # on each edge
        # Just outside the outline, the photo shows through.
        assert tuple(picture[middle_y, x0 - 1]) != colour
        assert tuple(picture[middle_y, x0 + BOX_WIDTH]) != colour
    with Image.open(tmp_path / "show" / "contact-sheet.png") as sheet:
        assert sheet.width >= 2 * 190


def test_ingest_coco_then_stats_counts_boxes_and_classes(tmp_path: Path) -> None:
    out, _ = ingest_coco(tmp_path, "--opt", "masks=true")
    result = run("stats", out, "--json", tmp_path / "stats.json", "--plots", tmp_path / "plots")
    assert result.exit_code == 0, result.output
    assert "box_classes       person: 2, dog: 1, car: 1" in result.output
    report = json.loads((tmp_path / "stats.json").read_text())
    objects = report["fields"]["objects"]
    assert objects["boxes_per_record"] == {"count": 3, "min": 0.0, "max": 2.0, "mean": 4 / 3}
    assert objects["box_width"]["max"] == 27.0
    assert report["fields"]["image"]["sizes"] == {"64x48": 1, "40x40": 1, "32x24": 1}  # width x height
    masks = report["fields"]["masks"]["mask_pixels"]
    stored = [m for r in rk.iter_records(out, "train", fields=["masks"]) for m in r["masks"]]
    assert int(masks["1"]) == sum(int(m.sum()) for m in stored)
    assert int(masks["0"]) + int(masks["1"]) == sum(m.size for m in stored)
    assert (tmp_path / "plots" / "objects-box_classes.png").is_file()


@pytest.mark.parametrize(
    ("broken", "named"),
    [
        ("box", "annotation 9 of image 1 ('000001.jpg'), field 'bbox': bbox [50, 40, 20, 20] reaches out"),
        ("category", "annotation 9 of image 1 ('000001.jpg'), field 'category_id': unknown category id 7"),
        ("image", "image 2 ('000002.jpg'), field 'file_name': the image file"),
    ],
)
def test_ingest_refuses_bad_coco_naming_it_and_skips_it_on_request(
    tmp_path: Path, broken: str, named: str
) -> None:
    annotations = [
        {"id": 9, "image_id": 1, "category_id": 1, "bbox": [4, 6, 20, 30]},
        {"id": 10, "image_id": 2, "category_id": 3, "bbox": [1, 1, 5, 5]},
    ]
    if broken == "box":
        annotations[0]["bbox"] = [50, 40, 20, 20]
    if broken == "category":
        annotations[0]["category_id"] = 7
    path = fx.coco(tmp_path, annotations)
    if broken == "image":
        (tmp_path / "coco" / "images" / "000002.jpg").unlink()
    images = f"images_dir={tmp_path / 'coco' / 'images'}"
    refused = CliRunner().invoke(main, ["ingest", "coco", str(path), str(tmp_path / "a"), "--opt", images])
    assert refused.exit_code == 1
    assert "InputError" in refused.output
    assert named in refused.output
    assert str(path) in refused.output
    skipped = run("ingest", "coco", path, tmp_path / "b", "--opt", images, "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.output
    assert "ingested 2 records" in skipped.output
    assert "rejected: 1 input(s)" in skipped.output
    assert named in skipped.output


def test_ingest_voc_with_broken_xml_skips_that_image(tmp_path: Path) -> None:
    root = fx.voc(tmp_path)
    (root / "Annotations" / f"{fx.VOC_IDS[0]}.xml").write_text("<annotation><size>", encoding="utf-8")
    refused = CliRunner().invoke(main, ["ingest", "pascal_voc", str(root), str(tmp_path / "a")])
    assert refused.exit_code == 1
    assert f"{fx.VOC_IDS[0]}.xml, line 1" in refused.output
    assert "broken XML" in refused.output
    result = run("ingest", "pascal_voc", root, tmp_path / "b", "--on-error", "skip")
    assert "ingested 1 records" in result.output
    seg = run("ingest", "pascal_voc", root, tmp_path / "seg", "--opt", "task=segmentation")
    assert "ingested 3 records" in seg.output
    shown = run("show", tmp_path / "seg", "--index", "1", "-o", tmp_path / "show")
    assert shown.exit_code == 0, shown.output
    assert sorted(p.name for p in (tmp_path / "show").iterdir()) == ["contact-sheet.png", "record-00001.png"]


def test_ingest_csv_with_a_short_row(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    (folder / "img").mkdir(parents=True)
    for i in range(3):
        (folder / "img" / f"{i}.png").write_bytes(fx.photo(8, 6, i, "PNG"))
    table = folder / "t.csv"
    table.write_text("image,caption\nimg/0.png,a\nimg/1.png\nimg/2.png,c\n", encoding="utf-8")
    refused = CliRunner().invoke(main, ["ingest", "csv", str(table), str(tmp_path / "a")])
    assert f"file {table}, line 3" in refused.output
    assert "missing 'caption'" in refused.output
    result = run("ingest", "csv", table, tmp_path / "b", "--on-error", "skip")
    assert "ingested 2 records" in result.output


def test_split_ratio_is_deterministic_by_seed_and_key(tmp_path: Path) -> None:
    root = fx.image_folder(tmp_path)
    ratio = "train=0.6,validation=0.4"
    run("ingest", "image_folder", root, tmp_path / "a", "--split-ratio", ratio, "--seed", "3")
    run(
        "ingest",
        "image_folder",
        root,
        tmp_path / "b",
        "--split-ratio",
        ratio,
        "--seed",
        "3",
        "--workers",
        "2",
    )
    expected: dict[str, list[str]] = {}
    for key in ["daisy/d1.jpg", "roses/garden/r2.jpg", "roses/r1.jpg", "tulips/t1.png", "tulips/t2.jpg"]:
        expected.setdefault(split_of(key, {"train": 0.6, "validation": 0.4}, 3), []).append(key)
    for out in ("a", "b"):
        manifest = rk.Manifest.load(tmp_path / out)
        got = {
            name: [r["file"] for r in rk.iter_records(tmp_path / out, name, fields=["file"])]
            for name in manifest.splits
        }
        assert got == expected
    keys = [f"k{i}" for i in range(2000)]
    share = sum(split_of(k, {"train": 0.9, "validation": 0.1}, 0) == "train" for k in keys) / len(keys)
    assert 0.87 < share < 0.93


def test_ingest_overwrite_and_a_given_schema(tmp_path: Path) -> None:
    root = fx.image_folder(tmp_path)
    out = tmp_path / "out"
    run("ingest", "image_folder", root, out)
    again = CliRunner().invoke(main, ["ingest", "image_folder", str(root), str(out)])
    assert again.exit_code == 1
    assert "already holds a dataset" in again.output
    schema = rk.Schema.load(out / "schema.yaml")
    png = schema.model_copy(
        update={"fields": {**schema.fields, "image": rk.FieldSpec(codec="image", options={"format": "png"})}}
    )
    png.dump(tmp_path / "png.yaml")
    shutil.rmtree(root / "daisy")
    result = run("ingest", "image_folder", root, out, "--overwrite", "--schema", tmp_path / "png.yaml")
    assert result.exit_code == 0, result.output
    assert "ingested 4 records" in result.output
    assert rk.Manifest.load(out).schema.fields["image"].options == {"format": "png"}


def test_ingest_audio_folder_then_show_exports_wav_and_stats_durations(tmp_path: Path) -> None:
    out = tmp_path / "speech-dataset"  # beside the input folder, not in it
    assert run("ingest", "audio_folder", fx.audio_folder(tmp_path), out).exit_code == 0
    run("show", out, "-o", tmp_path / "show")
    wavs = sorted(p.name for p in (tmp_path / "show").glob("*.wav"))
    assert wavs == ["record-00000-audio.wav", "record-00001-audio.wav", "record-00002-audio.wav"]
    import soundfile

    samples, rate = soundfile.read(tmp_path / "show" / "record-00001-audio.wav")
    assert (rate, len(samples)) == (8000, 4000)
    stats = run("stats", out, "--json", tmp_path / "s.json")
    report = json.loads((tmp_path / "s.json").read_text())
    assert report["fields"]["audio"]["duration_s"] == {"count": 3, "min": 0.25, "max": 0.75, "mean": 0.5}
    assert report["fields"]["transcript"]["length"]["max"] == len("good morning")
    assert "audio (audio)" in stats.output


def test_an_unknown_source_and_a_bad_option_are_named(tmp_path: Path) -> None:
    root = fx.image_folder(tmp_path)
    unknown = CliRunner().invoke(main, ["ingest", "nope", str(root), str(tmp_path / "o")])
    kinds = ", ".join(sources.default_sources().kinds())
    assert f"no source 'nope'; the sources are: {kinds}" in unknown.output
    assert kinds.startswith("audio_folder, coco, csv, hf, image_folder, jsonl, parquet")
    bad = CliRunner().invoke(
        main, ["ingest", "image_folder", str(root), str(tmp_path / "o"), "--opt", "colour=red"]
    )
    assert bad.exit_code == 2
    assert "colour" in bad.output


def test_schema_infer_and_diff(tmp_path: Path) -> None:
    root = fx.image_folder(tmp_path)
    inferred = run(
        "schema", "infer", "--source", "image_folder", root, "--name", "flowers", "-o", tmp_path / "a.yaml"
    )
    assert inferred.exit_code == 0, inferred.output
    old = rk.Schema.load(tmp_path / "a.yaml")
    assert old.name == "flowers"
    new = old.model_copy(
        update={"fields": {**old.fields, "score": rk.FieldSpec(codec="scalar", optional=True)}}
    )
    new.dump(tmp_path / "b.yaml")
    same = run("schema", "diff", tmp_path / "a.yaml", tmp_path / "b.yaml")
    assert same.exit_code == 0
    assert "score" in same.output
    assert "compatible" in same.output
    broken = old.model_copy(update={"fields": {**old.fields, "file": rk.FieldSpec(codec="scalar")}})
    broken.dump(tmp_path / "c.yaml")
    result = CliRunner().invoke(
        main, ["schema", "diff", str(tmp_path / "a.yaml"), str(tmp_path / "c.yaml"), "--json"]
    )
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["compatible"] is False
    assert [d["field"] for d in report["differences"] if not d["compatible"]] == ["file"]
    out = tmp_path / "data"
    run("ingest", "image_folder", root, out)
    from_tfrecords = run("schema", "infer", str(out / "train-00000.tfrecord"))
    assert "codec: image" in from_tfrecords.output
