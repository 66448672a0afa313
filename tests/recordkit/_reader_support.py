"""Helpers for the reader tests: a small multimodal dataset covering every built-in
codec (written with ``recordkit.write_dataset``), the values that went in, splitting
decoded batches back into records to compare them, and running generated parser
modules in a process where recordkit cannot be imported.
"""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import recordkit as rk
from recordkit.testing import assert_values_equal

SCHEMA = rk.Schema(
    name="reader-test",
    fields={
        "image": rk.FieldSpec(codec="image"),
        "photo": rk.FieldSpec(codec="image", options={"format": "keep"}),
        "mask": rk.FieldSpec(codec="mask", options={"num_classes": 21}),
        "audio": rk.FieldSpec(codec="audio", options={"sample_rate": 8000}),
        "stereo": rk.FieldSpec(codec="audio", options={"sample_rate": 8000, "channels": 2, "format": "pcm"}),
        "caption": rk.FieldSpec(codec="text"),
        "note": rk.FieldSpec(codec="text", optional=True),
        "objects": rk.FieldSpec(
            codec="bbox", options={"format": "xywh", "labels": ["cat", "dog"], "extras": ["score"]}
        ),
        "label": rk.FieldSpec(codec="label", options={"names": ["a", "b", "c"]}),
        "tags": rk.FieldSpec(codec="label", options={"num_classes": 4, "multi": True, "multi_hot": True}),
        "depth": rk.FieldSpec(codec="tensor", options={"dtype": "float64", "shape": [None, 2]}),
        "anything": rk.FieldSpec(codec="tensor", options={"dtype": "int16"}),
        "weight": rk.FieldSpec(codec="scalar", options={"dtype": "float64"}),
        "flag": rk.FieldSpec(codec="scalar", options={"dtype": "bool"}),
        "words": rk.FieldSpec(codec="text", sequence=True),
    },
)

#: Tolerance per field for decoded floats (boxes are converted from stored xyxy float32).
ATOL = {"objects": 1e-6}


def jpeg_bytes(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=90)
    return out.getvalue()


def make_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` records of :data:`SCHEMA` with small random content of varying sizes."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        height, width = (int(v) for v in rng.integers(3, 9, 2))
        boxes = rng.uniform(0.0, 0.4, (i % 3, 4))
        records.append(
            {
                "image": rng.integers(0, 256, (height, width, 3), dtype=np.uint8),
                "photo": jpeg_bytes(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)),
                "mask": rng.integers(0, 21, (height, width), dtype=np.uint8),
                "audio": rng.integers(-3000, 3000, 40 + i, dtype=np.int16),
                "stereo": rng.integers(-3000, 3000, (10 + i, 2), dtype=np.int16),
                "caption": f"record {i} — ünïcode",
                "note": f"note {i}" if i % 2 else None,
                "objects": {
                    "boxes": boxes,
                    "labels": ["cat" if j % 2 else "dog" for j in range(len(boxes))],
                    "score": rng.uniform(0, 1, len(boxes)).tolist(),
                },
                "label": ["a", "b", "c"][i % 3],
                "tags": [t for t in range(4) if (i >> t) & 1],
                "depth": rng.normal(size=(i % 4, 2)),
                "anything": rng.integers(
                    -5, 5, tuple(int(d) for d in rng.integers(1, 4, 1 + i % 3)), dtype=np.int16
                ),
                "weight": float(rng.normal()),
                "flag": bool(i % 2),
                "words": [f"w{j}" for j in range(i % 4)],
            }
        )
    return records


def expected(record: dict[str, Any]) -> dict[str, Any]:
    """What the readers decode ``record`` to (numpy form)."""
    audio = record["audio"].astype(np.float32)[:, None] / np.float32(32768)
    stereo = record["stereo"].astype(np.float32) / np.float32(32768)
    objects = record["objects"]
    return {
        "image": record["image"],
        "photo": np.asarray(Image.open(io.BytesIO(record["photo"])).convert("RGB")),
        "mask": record["mask"],
        "audio": audio,
        "stereo": stereo,
        "caption": record["caption"],
        "note": record["note"],
        "objects": {
            "boxes": np.asarray(objects["boxes"], np.float32),
            "labels": [["cat", "dog"].index(name) for name in objects["labels"]],
            "score": np.asarray(objects["score"], np.float32),
        },
        "label": ["a", "b", "c"].index(record["label"]),
        "tags": np.asarray([float(t in record["tags"]) for t in range(4)], np.float32),
        "depth": record["depth"],
        "anything": record["anything"],
        "weight": record["weight"],
        "flag": record["flag"],
        "words": record["words"],
    }


#: Every built-in codec, in the forms the tests above leave out: a fixed-size JPEG image
#: (dense batches), FLAC audio, a sequence of images, label ids, boxes without labels, a
#: fixed-shape tensor and more scalar dtypes; on top of :data:`SCHEMA` (PNG images of any
#: size, a mask, WAV and PCM audio, text, optional and sequence text, labelled boxes with
#: extras, multi-hot labels, tensors of variable shape and rank, scalars).
EVERY_CODEC = SCHEMA.model_copy(
    update={
        "name": "every-codec",
        "fields": {
            **SCHEMA.fields,
            "thumb": rk.FieldSpec(
                codec="image",
                options={"format": "jpeg", "quality": 90, "height": 6, "width": 5, "channels": 3},
            ),
            "speech": rk.FieldSpec(codec="audio", options={"sample_rate": 8000, "format": "flac"}),
            "frames": rk.FieldSpec(codec="image", options={"channels": 1}, sequence=True),
            "ids": rk.FieldSpec(codec="label", options={"num_classes": 5, "multi": True}),
            "regions": rk.FieldSpec(codec="bbox"),
            "matrix": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [2, 3]}),
            "count": rk.FieldSpec(codec="scalar", options={"dtype": "int32"}),
            "score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
        },
    }
)
#: What the generated module leaves out: FLAC has no TensorFlow op (its decode calls back
#: into Python), so standalone code cannot carry it.
NOT_STANDALONE = {"speech"}


def every_codec_records(n: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(9)
    records = make_records(n, seed=9)
    for i, record in enumerate(records):
        ramp = np.linspace(0, 255, 30, dtype=np.uint8).reshape(6, 5, 1)
        record.update(
            thumb=np.concatenate([ramp, ramp[::-1], np.full_like(ramp, 40 * i % 256)], axis=2),
            speech=rng.integers(-2000, 2000, 30 + 7 * i, dtype=np.int16),
            frames=[rng.integers(0, 256, (2 + j, 3, 1), dtype=np.uint8) for j in range(i % 3)],
            ids=[j for j in range(5) if (i + j) % 3 == 0],
            regions=rng.uniform(0.0, 0.5, (i % 2, 4)) + np.array([0.0, 0.0, 0.5, 0.5]),
            matrix=rng.normal(size=(2, 3)).astype(np.float32),
            count=i - 3,
            score=float(np.float32(i / 7)),
        )
    return records


def every_codec_expected(record: dict[str, Any]) -> dict[str, Any]:
    """:func:`expected` for :data:`EVERY_CODEC` (``thumb`` aside: JPEG is lossy)."""
    return {
        **expected(record),
        "speech": record["speech"].astype(np.float32)[:, None] / np.float32(32768),
        "frames": record["frames"],
        "ids": record["ids"],
        "regions": np.asarray(record["regions"], np.float32),
        "matrix": record["matrix"],
        "count": record["count"],
        "score": record["score"],
    }


def write(path: Path, records: list[dict[str, Any]], **options: Any) -> rk.Manifest:
    options.setdefault("shard_records", 4)
    return rk.write_dataset(records, SCHEMA, path, progress=False, **options)


def record_offsets(shard: Path) -> list[int]:
    """The byte offset of each record of an uncompressed TFRecord shard."""
    data, offsets, pos = shard.read_bytes(), [], 0
    while pos < len(data):
        offsets.append(pos)
        pos += 16 + int.from_bytes(data[pos : pos + 8], "little")
    return offsets


def rows(batch: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a decoded batch (tensors with the batch first) into per-record dicts."""
    import tensorflow as tf

    size = int(tf.shape(next(iter(tf.nest.flatten(batch, expand_composites=False))))[0])
    return [
        {key: tf.nest.map_structure(lambda t, i=i: t[i], value) for key, value in batch.items()}
        for i in range(size)
    ]


def assert_record(want: dict[str, Any], got: dict[str, Any], fields: list[str] | None = None) -> None:
    """``got`` (a TF row or a numpy record) decodes ``want`` (from :func:`expected`)."""
    for name in fields or list(want):
        value = got[name]
        if name + rk.PRESENT_SUFFIX in got:
            present = bool(np.asarray(got[name + rk.PRESENT_SUFFIX]))
            assert present == (want[name] is not None), name
            if not present:
                continue
        if isinstance(value, dict) and set(value) == {"values", "shape"}:  # a tensor of any rank, in TF
            value = np.reshape(np.asarray(value["values"]), np.asarray(value["shape"]))
        assert_values_equal(want[name], value, atol=ATOL.get(name, 0.0), path=name)


def plain(value: Any) -> Any:
    """A JSON-ready form of decoded values (tensors, ragged tensors, numpy, bytes)."""
    import tensorflow as tf

    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tf.RaggedTensor):
        return plain(value.to_list())
    if isinstance(value, tf.Tensor):
        return plain(value.numpy())
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float):
        return repr(value)  # exact, and NaN-safe
    return value


def dumps(batches: list[dict[str, Any]]) -> str:
    return json.dumps([plain(batch) for batch in batches], sort_keys=True)


#: Run in a subprocess where recordkit (and its codecs) cannot be imported: for each
#: (module, fields) job, read the files with the generated module and print the decoded
#: batches as JSON (made with the source of :func:`plain`, put in for ``PLAIN``, so they
#: compare with :func:`dumps`); then the recordkit modules that got imported (none).
RUNNER = textwrap.dedent(
    """
    import importlib.util, json, sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("recordkit", "recordkit_codecs", "recordkit_keypoints"):
                raise ImportError(f"{name} must not be needed")

    sys.meta_path.insert(0, Blocked())
    from typing import Any
    import numpy as np
    import tensorflow as tf

    files, jobs, batch_size = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])

    PLAIN

    for i, (path, fields) in enumerate(jobs):
        spec = importlib.util.spec_from_file_location(f"generated_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        batches = list(module.dataset(files, batch_size, fields))
        print(json.dumps([plain(b) for b in batches], sort_keys=True))
    print(json.dumps(sorted(k for k in sys.modules if k.startswith("recordkit"))))
    """
).replace("PLAIN\n", inspect.getsource(plain))


def run_generated(
    files: list[str], jobs: list[tuple[Path, list[str] | None]], batch_size: int = 4
) -> tuple[list[str], list[str]]:
    """Run the generated modules of ``jobs`` in one subprocess where recordkit cannot be
    imported; the JSON of each job's decoded batches, and the recordkit modules imported."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNNER,
            json.dumps(files),
            json.dumps([(str(p), f) for p, f in jobs]),
            str(batch_size),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    *decoded, imported = out.stdout.strip().splitlines()
    return decoded, json.loads(imported)


def run_without_tensorflow(script: str) -> str:
    """Run ``script`` (with ``sys`` and recordkit as ``rk`` imported) in a fresh process
    where importing tensorflow fails; what it prints."""
    blocker = textwrap.dedent(
        """
        import sys
        class NoTensorFlow:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "tensorflow":
                    raise ImportError("tensorflow is blocked")
        sys.meta_path.insert(0, NoTensorFlow())
        import recordkit as rk
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", blocker + textwrap.dedent(script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def assert_same(expected: Any, actual: Any, where: str) -> None:
    """Equal values of the same types: arrays of the same dtype and shape, writable (what
    a read that decodes records together must give, against the record-by-record read)."""
    assert type(actual) is type(expected), where
    if isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype, where
        assert actual.shape == expected.shape, where
        assert np.array_equal(actual, expected), where
        assert actual.flags.writeable, where
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_same(e, a, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), where
        for key in expected:
            assert_same(expected[key], actual[key], f"{where}.{key}")
    else:
        assert actual == expected, where


@contextmanager
def whole_shard_reads(monkeypatch: pytest.MonkeyPatch, whole: bool) -> Iterator[list[int]]:
    """Within it, tf.data reads build whole-shard reads where they apply (``whole``) or
    never (the record-by-record read forced); yields a list that gets an item for each
    whole-shard read built."""
    from recordkit.read import _load_dataset, _whole_shards  # private: counts and forces the path

    built: list[int] = []
    read_whole = _whole_shards.read_whole

    def spied(*args: Any) -> Any:
        built.append(1)
        return read_whole(*args)

    with monkeypatch.context() as patched:
        patched.setattr(_load_dataset, "read_whole", spied)
        if not whole:
            patched.setattr(_load_dataset, "reads_whole", lambda *args: False)
        yield built


def same_example(
    parsed: dict[str, tuple[rk.WireKind, Any]], expected: dict[str, tuple[rk.WireKind, Any]]
) -> None:
    """A batch parse's Example equals protobuf's (``decode_example``) key by key: the same
    kinds, bytes values equal, numbers of the same dtype and shape, bit for bit (NaNs and
    signed zeros too), in writable arrays."""
    assert parsed.keys() == expected.keys()
    for key, (kind, values) in expected.items():
        assert parsed[key][0] is kind, key
        if kind is rk.WireKind.BYTES:
            assert parsed[key][1] == values, key
        else:
            got = parsed[key][1]
            assert got.dtype == values.dtype, key
            assert got.shape == values.shape, key
            assert got.tobytes() == values.tobytes(), key
            assert got.flags.writeable, key
