"""The bytes the writer produces, pinned: golden sha256s of a fixed dataset.

A fixed set of records (fixed seeds) that uses every built-in codec, most of their
encoding paths (images kept, encoded as PNG and as JPEG; WAV, FLAC and raw PCM audio;
labels, multi-labels, boxes with labels and extras, masks, tensors, scalars, text; an
optional field left out; a sequence field) is written with each compression, serially
and with worker processes; every shard's sha256 and the manifest (less its timestamps
and the recordkit version) must equal the values in ``golden_bytes.json``. A change to
the write path that changes a single byte fails here, whatever tests of the round trip
say.

The inputs are made by Pillow, soundfile and zlib, whose output may change between
their versions: the golden file records the versions it was made with, and the test is
skipped (saying which differs) in an environment with other versions.

A second fixed dataset gives the codecs' fast paths (issue 19) the input forms they
take: boxes as float16, float32 and float64 arrays (C and Fortran order), lists and
tuples, in every box format; labels as arrays, ids and names; values on the bounds and
just outside them (clamped); JPEGs (baseline and progressive) and PNGs kept unchanged.
Its bytes were pinned before the fast paths were written, so they prove that the fast
paths write what the general paths did.

Regenerate the file only when a change of bytes is intended, or the libraries changed::

    PYTHONPATH=sdk:plugins python tests/recordkit/write/test_golden_bytes.py --update
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import PIL
import pytest
import soundfile
from PIL import Image

import recordkit as rk

GOLDEN = Path(__file__).with_name("golden_bytes.json")
RECORDS = 24
SHARD_RECORDS = 7
#: Each written variant: (compression, worker processes).
VARIANTS = {"none": (None, 0), "gzip": ("GZIP", 0), "zlib": ("ZLIB", 0), "none-workers": (None, 2)}

SCHEMA = rk.Schema(
    name="golden",
    version="3",
    fields={
        "photo": rk.FieldSpec(codec="image", options={"format": "keep"}),
        "drawing": rk.FieldSpec(codec="image", options={"format": "png"}),
        "thumbnail": rk.FieldSpec(codec="image", options={"format": "jpeg", "quality": 80}),
        "speech": rk.FieldSpec(codec="audio", options={"format": "wav", "sample_rate": 8000}),
        "music": rk.FieldSpec(codec="audio", options={"format": "flac", "sample_rate": 8000}),
        "raw_audio": rk.FieldSpec(codec="audio", options={"format": "pcm", "sample_rate": 8000}),
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"names": ["cat", "dog", "bird"]}),
        "tags": rk.FieldSpec(codec="label", options={"num_classes": 5, "multi": True}),
        "boxes": rk.FieldSpec(codec="bbox", options={"labels": ["cat", "dog", "bird"], "extras": ["score"]}),
        "pixel_boxes": rk.FieldSpec(
            codec="bbox",
            options={"format": "xywh", "normalized": False, "image_field": "drawing", "layout": "lists"},
        ),
        "mask": rk.FieldSpec(codec="mask", options={"num_classes": 4}),
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [2, None]}),
        "score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
        "name": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
        "note": rk.FieldSpec(codec="text", optional=True),
        "words": rk.FieldSpec(codec="text", sequence=True),
    },
)


def environment() -> dict[str, str]:
    """The versions of the libraries whose output the golden bytes depend on."""
    return {
        "numpy": np.__version__,
        "pillow": PIL.__version__,
        "libsndfile": soundfile.__libsndfile_version__,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
    }


def _encoded(image: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format=fmt, quality=90)
    return out.getvalue()


def records() -> list[dict[str, Any]]:
    """The fixed records (seeded: the same on every run)."""
    rng = np.random.default_rng(20240611)
    out = []
    for i in range(RECORDS):
        h, w = (int(v) for v in rng.integers(8, 40, size=2))
        pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        samples = (rng.normal(0.0, 0.2, size=int(rng.integers(100, 900)))).clip(-1, 1).astype(np.float32)
        count = int(rng.integers(0, 7))
        corners = np.sort(rng.uniform(0.0, 1.0, size=(count, 2, 2)), axis=1)
        boxes = np.concatenate([corners[:, 0], corners[:, 1]], axis=1)
        record: dict[str, Any] = {
            "photo": _encoded(pixels, "JPEG" if i % 3 else "PNG"),
            "drawing": pixels[:, :, 0] if i % 4 == 0 else pixels,
            "thumbnail": pixels,
            "speech": samples,
            "music": samples,
            "raw_audio": samples,
            "caption": f"record {i}: " + "é" * (i % 5) + " a caption" * int(rng.integers(0, 4)),
            "label": ["cat", "dog", "bird"][i % 3] if i % 2 else i % 3,
            "tags": sorted({int(v) for v in rng.integers(0, 5, size=int(rng.integers(0, 4)))}),
            "boxes": {
                "boxes": boxes.tolist() if i % 2 else boxes.astype(np.float32),
                "labels": [int(v) for v in rng.integers(0, 3, size=count)],
                "score": rng.uniform(0, 1, size=count).tolist(),
            },
            "pixel_boxes": [[1.0, 2.0, float(w - 2), float(h - 3)]] * (i % 3),
            "mask": rng.integers(0, 4, size=(h, w), dtype=np.uint8),
            "embedding": rng.normal(size=(2, int(rng.integers(0, 5)))).astype(np.float32),
            "score": float(rng.uniform()),
            "name": f"item-{i:03d}",
            "words": [f"w{j}" for j in range(i % 4)],
        }
        if i % 3 == 1:
            record["note"] = f"note {i}"
        out.append(record)
    return out


#: The fast-path dataset (see the module docstring): one field per input form of the
#: codecs' fast paths, in the shape of the benchmarks' mixed records.
#: The bbox fields below store lists, the layout their bytes were pinned in (the packed
#: layout stores the same float32 numbers: test_bbox's plain-path test proves it).
LISTS = {"layout": "lists"}
FAST_SCHEMA = rk.Schema(
    name="golden_fast_paths",
    version="1",
    fields={
        "image": rk.FieldSpec(codec="image", options={"format": "keep"}),
        "objects": rk.FieldSpec(codec="bbox", options={"labels": ["a", "b", "c", "d", "e"], **LISTS}),
        "scored": rk.FieldSpec(codec="bbox", options={"labels": ["a", "b"], "extras": ["score"], **LISTS}),
        "plain": rk.FieldSpec(codec="bbox", options=LISTS),
        "centred": rk.FieldSpec(codec="bbox", options={"format": "cxcywh", **LISTS}),
        "pixels": rk.FieldSpec(codec="bbox", options={"format": "xywh", "normalized": False, **LISTS}),
        "tfds_boxes": rk.FieldSpec(codec="bbox", options={"format": "yxyx", "stored": "yxyx"}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
    },
)
FAST_RECORDS = 30


def _fast_image(rng: np.random.Generator, i: int) -> bytes:
    """A JPEG or PNG to keep: baseline and progressive, grey, RGB and RGBA."""
    h, w = (int(v) for v in rng.integers(8, 48, size=2))
    pixels = rng.integers(0, 256, size=(h, w, 4), dtype=np.uint8)
    image = Image.fromarray(pixels[:, :, : (1, 3, 3, 4, 3)[i % 5]].squeeze())
    out = io.BytesIO()
    if i % 5 == 3:
        image.save(out, format="PNG")
    else:
        image.save(out, format="JPEG", quality=85, progressive=i % 5 == 2)
    return out.getvalue()


def _box_forms(boxes: np.ndarray, i: int) -> Any:
    """The same boxes in one of the forms records give them in."""
    forms = (
        boxes.astype(np.float32),
        boxes,  # float64
        boxes.tolist(),
        tuple(tuple(b) for b in boxes.tolist()),
        boxes.astype(np.float16),
        np.asfortranarray(boxes),
    )
    return forms[i % len(forms)]


def fast_records() -> list[dict[str, Any]]:
    """The fast-path dataset's records (seeded: the same on every run)."""
    rng = np.random.default_rng(19)
    out = []
    for i in range(FAST_RECORDS):
        count = int(rng.integers(0, 7)) if i % 7 else 0
        corners = np.sort(rng.uniform(0.0, 1.0, size=(count, 2, 2)), axis=1)
        boxes = np.concatenate([corners[:, 0], corners[:, 1]], axis=1)
        if count and i % 4 == 1:  # on the bounds, and just outside them (clamped)
            boxes[0] = [0.0, 0.0, 1.0, 1.0]
            boxes[-1, 2] = 1.0 + 1e-9
        ids = rng.integers(0, 5, size=count)
        label_forms = (
            ids,
            ids.tolist(),
            [["a", "b", "c", "d", "e"][k] for k in ids.tolist()],
            ids.astype(np.int32),
        )
        centred = np.stack(
            [boxes[:, 0:2].mean(axis=1), boxes[:, 1:3].mean(axis=1), boxes[:, 2] * 0.5, boxes[:, 3] * 0.5],
            axis=1,
        )
        pixels = np.floor(boxes * 100).astype(np.int64) if i % 2 else boxes * 640.0
        out.append(
            {
                "image": _fast_image(rng, i),
                "objects": {"boxes": _box_forms(boxes, i), "labels": label_forms[i % 4]},
                "scored": {
                    "boxes": _box_forms(boxes, i + 1),
                    "labels": (ids % 2).tolist() if i % 2 else ids % 2,
                    "score": rng.uniform(0, 1, size=count)
                    if i % 2
                    else rng.uniform(0, 1, size=count).tolist(),
                },
                "plain": _box_forms(boxes, i + 2) if count or i % 2 else [],
                "centred": _box_forms(centred.clip(0.25, 0.5), i + 3),
                "pixels": pixels if i % 3 else pixels.tolist(),
                "tfds_boxes": _box_forms(boxes[:, [1, 0, 3, 2]], i + 4),
                "label": int(rng.integers(0, 10)) if i % 2 else np.int64(i % 10),
            }
        )
    return out


def manifest_without_timestamps(root: Path) -> dict[str, Any]:
    """``dataset.json`` less what changes from run to run (when the write started) or
    release to release (the versions of recordkit and of the distributions of codecs)."""
    manifest: dict[str, Any] = json.loads((root / "dataset.json").read_text(encoding="utf-8"))
    for key in ("created", "recordkit_version"):
        manifest.pop(key)
    for provenance in manifest["codecs"].values():
        provenance.pop("distribution_version")
    return manifest


def written(root: Path, variant: str) -> dict[str, Any]:
    """Write the fixed records as ``variant``; the sha256 of each file and of the manifest."""
    compression, workers = VARIANTS[variant]
    path = root / variant
    rk.write_dataset(
        records(),
        SCHEMA,
        path,
        shard_records=SHARD_RECORDS,
        compression=compression,
        workers=workers,
        progress=False,
        durable=False,
    )
    return _digests(path)


def written_fast_paths(root: Path) -> dict[str, Any]:
    """Write the fast-path dataset in one process; the sha256s as :func:`written` gives."""
    path = root / "fast-paths"
    rk.write_dataset(
        fast_records(), FAST_SCHEMA, path, shard_records=SHARD_RECORDS, progress=False, durable=False
    )
    return _digests(path)


def _digests(path: Path) -> dict[str, Any]:
    """The sha256 of each file written under ``path`` and of its manifest (less its timestamps)."""
    manifest = manifest_without_timestamps(path)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir())}
    files.pop("dataset.json")
    files.pop(".recordkit.lock", None)  # the writer's lock file: it holds the writer's pid
    canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    return {"files": files, "manifest_sha256": hashlib.sha256(canonical).hexdigest(), "manifest": manifest}


def _golden() -> dict[str, Any]:
    golden: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    then = golden["environment"]
    differs = {k: (now, then.get(k)) for k, now in environment().items() if then.get(k) != now}
    if differs:
        pytest.skip(f"the golden bytes were made with other library versions (now, then): {differs}")
    return golden


@pytest.mark.parametrize(
    "variant", [v if VARIANTS[v][1] < 2 else pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS]
)
def test_written_bytes_equal_the_golden_ones(tmp_path: Path, variant: str) -> None:
    expected = _golden()["variants"][variant]
    got = written(tmp_path, variant)
    assert got["manifest"] == expected["manifest"]
    assert got["files"] == expected["files"]
    assert got["manifest_sha256"] == expected["manifest_sha256"]
    shards = [name for name in got["files"] if ".tfrecord" in name and not name.endswith(".index")]
    assert len(shards) == -(-RECORDS // SHARD_RECORDS)


def test_fast_path_bytes_equal_the_golden_ones(tmp_path: Path) -> None:
    # The shards and their indexes only: the manifest (the schema's fingerprint, which
    # follows the codecs' options) is pinned by the variants above.
    expected = _golden()["fast_paths"]
    assert written_fast_paths(tmp_path)["files"] == expected["files"]


def test_the_fixed_records_use_every_built_in_codec() -> None:
    codecs = {spec.codec for spec in SCHEMA.fields.values()}
    builtin = {
        info.name for info in rk.default_registry() if info.codec.__module__.startswith("recordkit_codecs.")
    }
    assert builtin <= codecs, builtin - codecs


def _update() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        variants = {variant: written(Path(tmp), variant) for variant in VARIANTS}
        fast_paths = {"files": written_fast_paths(Path(tmp))["files"]}
    golden = {"environment": environment(), "variants": variants, "fast_paths": fast_paths}
    GOLDEN.write_text(
        json.dumps(golden, indent=1, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(__doc__)
    _update()
