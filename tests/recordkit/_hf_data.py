"""Generated Hugging Face datasets for the Parquet and ``datasets`` tests: real JPEG,
PNG and WAV bytes, class labels, numbers, text and lists, from fixed seeds."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pyarrow as pa
import soundfile
from PIL import Image

__all__ = ["NAMES", "columns", "features_dict", "hf_dataset", "png", "wav"]

NAMES = ["cat", "dog", "bird"]


def png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (6 + seed % 3, 7, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def jpeg(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (8, 5 + seed % 4, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=85)
    return out.getvalue()


def wav(seed: int, rate: int = 8000) -> bytes:
    samples = np.random.default_rng(seed).integers(-2000, 2000, 40 + seed, dtype=np.int16)
    out = io.BytesIO()
    soundfile.write(out, samples, rate, format="WAV", subtype="PCM_16")
    return out.getvalue()


def columns(rows: int = 7, *, audio: bool = True) -> dict[str, list[Any]]:
    """The columns' values: images alternately PNG and JPEG, labels, a score, a caption,
    a variable-length list of ints, a fixed-length list of floats and, with ``audio``, WAV."""
    data: dict[str, list[Any]] = {
        "image": [{"bytes": png(i) if i % 2 else jpeg(i), "path": None} for i in range(rows)],
        "label": [i % len(NAMES) for i in range(rows)],
        "score": [float(np.float32(0.25 * i)) for i in range(rows)],
        "caption": [f"picture {i}" for i in range(rows)],
        "tokens": [list(range(i % 4)) for i in range(rows)],
        "point": [[float(i), float(-i)] for i in range(rows)],
    }
    if audio:
        data["audio"] = [{"bytes": wav(i), "path": None} for i in range(rows)]
    return data


def features_dict(*, audio: bool = True) -> dict[str, Any]:
    """The features of :func:`columns`, in ``datasets.Features.to_dict()`` form."""
    features: dict[str, Any] = {
        "image": {"_type": "Image"},
        "label": {"names": NAMES, "_type": "ClassLabel"},
        "score": {"dtype": "float32", "_type": "Value"},
        "caption": {"dtype": "string", "_type": "Value"},
        "tokens": {"feature": {"dtype": "int64", "_type": "Value"}, "_type": "List"},
        "point": {"feature": {"dtype": "float32", "_type": "Value"}, "length": 2, "_type": "List"},
    }
    if audio:
        features["audio"] = {"sampling_rate": 8000, "_type": "Audio"}
    return features


def hf_dataset(datasets: Any, rows: int = 7, *, audio: bool = True) -> Any:
    """A ``datasets.Dataset`` of :func:`columns`, built from its Arrow table: encoding
    Audio values through ``Dataset.from_dict`` would need torchcodec, which the bytes
    do not."""
    features = datasets.Features.from_dict(features_dict(audio=audio))
    table = pa.table(columns(rows, audio=audio), schema=features.arrow_schema)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features))
