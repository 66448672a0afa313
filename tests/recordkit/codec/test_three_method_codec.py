"""A codec of three methods (``wire_spec``, ``encode``, ``decode_numpy``) and nothing else:
it passes the conformance kit, and every reader reads it (tf.data, the numpy reader,
PyTorch, Grain, and the standalone parser ``recordkit codegen`` writes). docs/plugins.md
shows the codec (the ``polyline`` section below)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import recordkit as rk
from recordkit.testing import BadInput, CodecCase, check_codec

_FLOAT32_MAX = float(np.finfo(np.float32).max)


# --8<-- [start:polyline]
class PolylineCodec(rk.Codec[rk.CodecOptions]):
    """One polyline per record: any number of (x, y) points, as float32 ``[n, 2]``."""

    name = "polyline"
    summary = "a polyline per record: n points (x, y)"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.FLOAT, (None, 2), "x, y of each point"),))

    def encode(self, value: Any) -> rk.WireValues:
        try:
            points = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise rk.errors.InvalidValueError(f"expected n x 2 numbers (x, y): {exc}") from None
        if points.size == 0:
            points = points.reshape(0, 2)
        if points.ndim != 2 or points.shape[1] != 2:
            raise rk.errors.InvalidValueError(f"expected n x 2 numbers (x, y), got shape {points.shape}")
        if not np.isfinite(points).all() or (np.abs(points) > _FLOAT32_MAX).any():
            raise rk.errors.InvalidValueError("a coordinate is not a finite float32")
        return {"": points.astype(np.float32)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        return np.asarray(wire[""], dtype=np.float32).reshape(-1, 2)


# --8<-- [end:polyline]

LINES = [
    np.array([[0.0, 0.0], [1.5, 2.0], [3.0, -1.0]], np.float32),
    np.zeros((0, 2), np.float32),
    np.array([[10.0, 20.0]], np.float32),
    np.array([[1.0, 1.0], [2.0, 4.0], [3.0, 9.0], [4.0, 16.0], [5.0, 25.0]], np.float32),
]
SCHEMA = rk.Schema(
    name="roads",
    fields={
        "road": rk.FieldSpec(codec="polyline"),
        "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
    },
)


def test_the_codec_defines_three_methods_and_nothing_else() -> None:
    own = {name for name, value in vars(PolylineCodec).items() if callable(value)}
    assert own == {"wire_spec", "encode", "decode_numpy"}
    assert not isinstance(PolylineCodec(), (rk.Raster, rk.PadsAsDecoded, rk.DecodedPerRecord))


def test_a_codec_of_three_methods_passes_the_conformance_kit(tmp_path: Path) -> None:
    report = check_codec(
        PolylineCodec(),
        [*map(CodecCase, LINES), CodecCase([[1, 2], [3, 4]], expected=np.array([[1, 2], [3, 4]]))],
        tmp_path=tmp_path,
        bad_inputs=[
            BadInput([1.0, 2.0, 3.0], match=r"n x 2 numbers \(x, y\), got shape \(3,\)"),
            BadInput([[1.0, float("nan")]], match="not a finite float32"),
            BadInput("road", match="n x 2 numbers"),
        ],
    )
    assert "the generated standalone parser equals the runtime parser" in report.checks
    assert "sequence field: tf.data batched decode" in report.checks
    assert not any("padded decode" in check or "window" in check for check in report.checks)


@pytest.fixture(scope="module")
def registry() -> rk.CodecRegistry:
    registry = rk.load_plugins().registry
    registry.register(PolylineCodec)
    return registry


@pytest.fixture(scope="module")
def roads(tmp_path_factory: pytest.TempPathFactory, registry: rk.CodecRegistry) -> Path:
    path = tmp_path_factory.mktemp("roads") / "data"
    records = [{"road": line, "id": i} for i, line in enumerate(LINES)]
    rk.write_dataset(records, SCHEMA, path, progress=False, registry=registry)
    return path


def test_tf_data_reads_it(roads: Path, registry: rk.CodecRegistry) -> None:
    (batch,) = list(rk.open(roads, registry=registry).tf(batch_size=len(LINES)))
    assert batch["road"].shape.rank == 3  # ragged [B, (n), 2]
    for line, got in zip(LINES, batch["road"], strict=True):
        np.testing.assert_array_equal(got.numpy().reshape(-1, 2), line)
    padded = next(iter(rk.load_dataset(roads, batch_size=len(LINES), pad=True, registry=registry)))
    assert padded["road"].shape == (len(LINES), 5, 2)
    np.testing.assert_array_equal(padded["road/shape"].numpy(), [[3, 2], [0, 2], [1, 2], [5, 2]])


def test_the_numpy_reader_reads_it(roads: Path, registry: rk.CodecRegistry) -> None:
    records = list(rk.open(roads, registry=registry).records())
    assert [r["id"] for r in records] == list(range(len(LINES)))
    for line, record in zip(LINES, records, strict=True):
        assert record["road"].dtype == np.float32
        np.testing.assert_array_equal(record["road"], line)


def test_pytorch_reads_it(roads: Path, registry: rk.CodecRegistry) -> None:
    dataset = rk.open(roads, registry=registry).torch()
    assert len(dataset) == len(LINES)
    assert torch.equal(dataset[3]["road"], torch.from_numpy(LINES[3]))
    loader = torch.utils.data.DataLoader(dataset, batch_size=len(LINES), collate_fn=dataset.collate_fn)
    (batch,) = list(loader)
    assert batch["road"].shape == (len(LINES), 5, 2)  # padded with 0, the codec's pad value
    assert batch["road/shape"].tolist() == [[3, 2], [0, 2], [1, 2], [5, 2]]
    assert torch.equal(batch["road"][0, :3], torch.from_numpy(LINES[0]))


def test_grain_reads_it(roads: Path, registry: rk.CodecRegistry) -> None:
    source = rk.open(roads, registry=registry).grain()
    assert len(source) == len(LINES)
    for i, line in enumerate(LINES):
        np.testing.assert_array_equal(source[i]["road"], line)


def test_generated_code_reads_it(roads: Path, registry: rk.CodecRegistry, tmp_path: Path) -> None:
    code = rk.generate_parser_code(rk.Manifest.load(roads), registry=registry)
    assert "def decode_as_parsed(" in code  # the derived decode, copied
    module_path = tmp_path / "roads_parser.py"
    module_path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("roads_parser", module_path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files = sorted(str(p) for p in roads.rglob("*.tfrecord*") if not p.name.endswith(".index"))
    (batch,) = list(module.dataset(files, len(LINES)))
    for line, got in zip(LINES, batch["road"], strict=True):
        np.testing.assert_array_equal(got.numpy().reshape(-1, 2), line)
