"""Hugging Face features (and the Arrow types of Parquet files) as recordkit fields.

A Hugging Face dataset describes its columns with features, whose JSON form
(``datasets.Features.to_dict()``) is also what ``Dataset.to_parquet`` stores in a
Parquet file's metadata under ``huggingface``. recordkit reads that JSON, so a Parquet
file needs no ``datasets`` to be read, and proposes a field per column:

==========================  ==================================================
feature                     field
==========================  ==================================================
``Image``                   ``image`` with ``format: keep`` (JPEG, PNG kept)
``Audio``                   ``audio`` holding the WAV or FLAC bytes as they are
``ClassLabel``              ``label`` with the class names
``List`` of ``ClassLabel``  ``label`` with ``multi: true``
``Value`` (numbers, bool)   ``scalar`` of that dtype (int64, int32, float32 ...)
``Value("string")``         ``text``
``List`` of numbers         ``tensor`` of that dtype (a fixed ``length`` kept)
``List`` of strings/images  a ``sequence`` field of ``text`` / ``image``
==========================  ==================================================

A Parquet file without that metadata is described from its Arrow types the same way:
integers, floats, booleans and strings as ``Value``; lists as ``List``; binary values
and Hugging Face's ``struct<bytes, path>`` as ``Image`` or ``Audio`` by their first
bytes (a JPEG, PNG, GIF, BMP or WebP signature; ``RIFF....WAVE`` or ``fLaC``). Anything
else (a struct of other fields, a map, a timestamp, a decimal, bytes that are neither)
is refused with an :class:`~recordkit.errors.InputError` naming the column and its type.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Mapping
from typing import Any

import soundfile

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec

__all__ = ["arrow_entry", "field_of_entry", "media_kind"]

#: Value dtypes the scalar codec stores as they are; other integers widen to int64,
#: other floats to float32 or float64.
_SCALAR_DTYPES = {"int64", "int32", "float32", "float64", "bool"}
_ARROW_FLOATS = {"halffloat": "float16", "float": "float32", "double": "float64"}
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM")


def media_kind(data: bytes | None) -> str | None:
    """``"Image"`` or ``"Audio"`` for bytes whose signature says so, else None."""
    if not data:
        return None
    if data.startswith(_IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return "Image"
    if (data[:4] == b"RIFF" and data[8:12] == b"WAVE") or data.startswith(b"fLaC"):
        return "Audio"
    return None


def arrow_entry(column: str, arrow_type: Any, sample: Any, *, file: str) -> dict[str, Any]:
    """The Hugging Face feature JSON for an Arrow column of ``arrow_type`` (a pyarrow
    DataType) whose first non-null value is ``sample`` (as ``to_pylist`` gives it)."""
    types = importlib.import_module("pyarrow.types")  # pyarrow made arrow_type: installed
    if types.is_boolean(arrow_type):
        return {"dtype": "bool", "_type": "Value"}
    if types.is_integer(arrow_type) or types.is_floating(arrow_type):
        return {"dtype": _ARROW_FLOATS.get(str(arrow_type), str(arrow_type)), "_type": "Value"}
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return {"dtype": "string", "_type": "Value"}
    if types.is_binary(arrow_type) or types.is_large_binary(arrow_type):
        media = media_kind(sample)
        if media is not None:
            return {"_type": media}
    if types.is_struct(arrow_type) and {f.name for f in arrow_type} == {"bytes", "path"}:
        media = media_kind(sample.get("bytes") if isinstance(sample, dict) else None)
        if media is not None:
            return {"_type": media}
    if types.is_list(arrow_type) or types.is_large_list(arrow_type) or types.is_fixed_size_list(arrow_type):
        inner = sample[0] if isinstance(sample, list) and sample else None
        entry = {"feature": arrow_entry(column, arrow_type.value_type, inner, file=file), "_type": "List"}
        if types.is_fixed_size_list(arrow_type):
            entry["length"] = arrow_type.list_size
        return entry
    raise InputError(
        f"the Arrow type {arrow_type} has no recordkit codec (numbers, booleans, strings, "
        "lists of them, and image or audio bytes do)",
        file=file,
        field=column,
    )


def field_of_entry(column: str, entry: Mapping[str, Any], sample: Any, *, file: str) -> FieldSpec:
    """The field proposed for a column with feature ``entry`` (see the module docs);
    ``sample`` is a non-null value of the column, or None."""
    kind = entry.get("_type")
    if kind == "Image":
        return FieldSpec(codec="image", options={"format": "keep"})
    if kind == "Audio":
        return _audio_field(column, entry, sample, file=file)
    if kind == "ClassLabel":
        return FieldSpec(codec="label", options={"names": list(entry["names"])})
    if kind == "Value":
        dtype = str(entry.get("dtype"))
        if dtype in ("string", "large_string"):
            return FieldSpec(codec="text")
        return FieldSpec(codec="scalar", options={"dtype": _scalar_dtype(column, dtype, file)})
    if kind in ("List", "Sequence", "LargeList"):
        inner = entry.get("feature")
        if not isinstance(inner, Mapping):
            raise _unsupported(column, f"a list of {inner!r}", file)
        inner_kind = inner.get("_type")
        if inner_kind == "ClassLabel":
            return FieldSpec(codec="label", options={"names": list(inner["names"]), "multi": True})
        shape, numbers = _tensor_shape(entry)
        if numbers is not None:
            dtype = str(numbers.get("dtype"))
            if dtype not in ("string", "large_string"):
                tensor_dtype = "bool" if dtype == "bool" else _scalar_dtype(column, dtype, file, widen=False)
                return FieldSpec(codec="tensor", options={"dtype": tensor_dtype, "shape": shape})
        element = sample[0] if isinstance(sample, list) and sample else None
        spec = field_of_entry(column, inner, element, file=file)
        if spec.sequence:
            raise _unsupported(column, "a list of lists of images, audio or text", file)
        return spec.model_copy(update={"sequence": True})
    raise _unsupported(column, f"the feature {kind!r}", file)


def _tensor_shape(entry: Mapping[str, Any]) -> tuple[list[int | None], Mapping[str, Any] | None]:
    """The shape of nested Lists of one Value (a fixed ``length`` kept) and that Value;
    None for the Value when the innermost feature is something else."""
    shape: list[int | None] = []
    while entry.get("_type") in ("List", "Sequence", "LargeList"):
        length = entry.get("length", -1)
        shape.append(None if length in (None, -1) else int(length))
        entry = entry["feature"]
    return shape, entry if entry.get("_type") == "Value" else None


def _scalar_dtype(column: str, dtype: str, file: str, *, widen: bool = True) -> str:
    if dtype in _SCALAR_DTYPES:
        return dtype
    if dtype.startswith(("int", "uint")):
        return "int64" if widen else dtype
    if dtype.startswith("float"):
        return "float64" if dtype == "float64" else "float32"
    raise _unsupported(column, f"the value type {dtype!r}", file)


def _audio_field(column: str, entry: Mapping[str, Any], sample: Any, *, file: str) -> FieldSpec:
    """An audio field storing the WAV or FLAC bytes as they are, at the feature's
    sampling rate or, without one, the first file's."""
    data = sample.get("bytes") if isinstance(sample, Mapping) else sample
    if not isinstance(data, bytes):
        raise InputError(
            "an Audio column needs its first value's bytes to learn its format", file=file, field=column
        )
    if media_kind(data) != "Audio":
        raise InputError(
            "holds audio that is neither WAV nor FLAC; recordkit's audio codec keeps those two "
            "byte for byte (decode the rest with Hugging Face's Audio, which needs torchcodec "
            "and FFmpeg, and hand the samples over as WAV)",
            file=file,
            field=column,
        )
    try:
        info = soundfile.info(io.BytesIO(data))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise InputError(f"not a readable audio file: {exc}", file=file, field=column) from None
    rate = entry.get("sampling_rate") or int(info.samplerate)
    audio_format = "flac" if data.startswith(b"fLaC") else "wav"
    options = {"format": audio_format, "sample_rate": int(rate), "channels": int(info.channels)}
    return FieldSpec(codec="audio", options=options)


def _unsupported(column: str, what: str, file: str) -> InputError:
    return InputError(f"{what} has no recordkit codec", file=file, field=column)
