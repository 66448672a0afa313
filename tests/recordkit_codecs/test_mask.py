"""Tests of the ``mask`` codec: Pascal VOC style palette PNGs made with Pillow, real
TFRecord files and batched tf.data pipelines."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _codec_io import (
    SingleField,
    assert_stored_near_payload,
    bind,
    read_numpy,
    read_tf,
    run_doc_example_first,
    write,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

import recordkit as rk
from recordkit.format._example import (  # private: builds and reads Example bytes by hand
    decode_example,
    encode_example,
    encode_feature,
)
from recordkit.format._tfrecord import iter_tfrecords  # private: a shard's raw frames, without TensorFlow
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.storage import location
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.mask import MaskCodec

FIELD = "segmentation"


def voc_palette() -> list[int]:
    """The Pascal VOC colour map (class i gets the colour built from i's bits)."""
    palette = []
    for index in range(256):
        r = g = b = 0
        c = index
        for shift in range(7, -1, -1):
            r |= (c & 1) << shift
            g |= ((c >> 1) & 1) << shift
            b |= ((c >> 2) & 1) << shift
            c >>= 3
        palette += [r, g, b]
    return palette


def voc_mask(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Class indices 0..20 with a 255 ("void") border around each object, like VOC."""
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, 21, (height, width), dtype=np.uint8)
    indices[0, :] = 255
    indices[:, -1] = 255
    return indices


def palette_png(indices: np.ndarray) -> bytes:
    image = Image.fromarray(indices, mode="L").convert("P")
    image.putpalette(voc_palette())
    image.putdata(indices.reshape(-1).tolist())
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_palette_masks_keep_their_indices(mask_field: SingleField, tmp_path: Path) -> None:
    import tensorflow as tf

    masks = [voc_mask(5, 7, 1), voc_mask(8, 3, 2), voc_mask(4, 4, 3)]
    png = palette_png(masks[0])
    with Image.open(io.BytesIO(png)) as check:
        assert check.mode == "P"  # a real palette PNG, as VOC ships them
    path = tmp_path / "2007_000032.png"
    path.write_bytes(palette_png(masks[1]))
    with Image.open(io.BytesIO(palette_png(masks[2]))) as pil:
        values = [png, path, pil.copy()]
    (batch,), numpy_values = mask_field.round_trip(tmp_path, values, num_classes=21)
    assert isinstance(batch, tf.RaggedTensor)
    assert batch.shape.as_list() == [3, None, None]
    assert batch.dtype == tf.uint8
    for i, want in enumerate(masks):
        np.testing.assert_array_equal(batch[i].numpy(), want)
        np.testing.assert_array_equal(numpy_values[i], want)


def test_arrays_grayscale_and_one_bit_masks(mask_field: SingleField, tmp_path: Path) -> None:
    indices = voc_mask(6, 5)
    bits = Image.fromarray(np.eye(4, dtype=bool))
    values = [indices, Image.fromarray(indices, mode="L"), bits, indices.astype(np.int64)[:, :, None]]
    _, numpy_values = mask_field.round_trip(tmp_path, values, batch=1)
    np.testing.assert_array_equal(numpy_values[0], indices)
    np.testing.assert_array_equal(numpy_values[1], indices)
    np.testing.assert_array_equal(numpy_values[2], np.eye(4, dtype=np.uint8))
    np.testing.assert_array_equal(numpy_values[3], indices)


def test_stored_as_a_grayscale_png_decodable_by_tensorflow(mask_field: SingleField) -> None:
    import tensorflow as tf

    indices = voc_mask(6, 9)
    data = rk.RecordEncoder(mask_field.bound()).encode({FIELD: palette_png(indices)})
    png = decode_example(data)[FIELD][1][0]
    with Image.open(io.BytesIO(png)) as image:
        assert (image.format, image.mode) == ("PNG", "L")
    # Even a plain decode_png (no recordkit) gives the indices, not palette colours.
    np.testing.assert_array_equal(tf.io.decode_png(png).numpy()[:, :, 0], indices)


def test_fixed_size_decodes_to_a_dense_batch(mask_field: SingleField, tmp_path: Path) -> None:
    import tensorflow as tf

    masks = [voc_mask(4, 6, seed) for seed in range(3)]
    batches, _ = mask_field.round_trip(tmp_path, masks, batch=3, height=4, width=6)
    (batch,) = batches
    assert isinstance(batch, tf.Tensor)
    assert batch.shape.as_list() == [3, 4, 6]
    np.testing.assert_array_equal(batch.numpy(), np.stack(masks))
    assert "mask is 4x5 (height x width)" in str(mask_field.error(voc_mask(4, 5), height=4, width=6))


def test_num_classes_and_ignore_index(mask_field: SingleField) -> None:
    indices = voc_mask(5, 5)
    indices[2, 3] = 21
    error = mask_field.error(indices, num_classes=21)
    assert "index 21 at row 2, column 3" in str(error)
    assert "indices must be 0..20 or the ignore index 255" in str(error)
    # 255 is allowed by default, refused once ignore_index is unset.
    error = mask_field.error(voc_mask(5, 5), num_classes=21, ignore_index=None)
    assert "index 255 at row 0, column 0" in str(error)
    MaskCodec({"num_classes": 21}).encode(voc_mask(5, 5))


def test_wrong_values_are_refused(mask_field: SingleField, tmp_path: Path) -> None:
    rgb = Image.new("RGB", (4, 4))
    assert "got mode RGB" in str(mask_field.error(rgb))
    buffer = io.BytesIO()
    Image.new("L", (4, 4)).save(buffer, "JPEG")
    assert "must be a PNG (lossless), got JPEG" in str(mask_field.error(buffer.getvalue()))
    assert "got dtype float32" in str(mask_field.error(np.zeros((3, 3), np.float32)))
    assert "from -1 to 300" in str(mask_field.error(np.array([[-1, 300]], np.int32)))
    assert "must be H x W, got shape (2, 2, 3)" in str(mask_field.error(np.zeros((2, 2, 3), np.uint8)))
    assert "cannot read mask file" in str(mask_field.error(tmp_path / "missing.png"))
    png = palette_png(voc_mask(8, 8))
    assert "corrupt or truncated PNG" in str(mask_field.error(png[: len(png) - 30]))
    assert "64 pixels is over the limit of 10 pixels" in str(mask_field.error(png, max_pixels=10))
    assert "expected a PNG" in str(mask_field.error([[1, 2]]))


def test_decoding_checks_the_stored_size(mask_field: SingleField) -> None:
    import tensorflow as tf

    png = rk.RecordEncoder(mask_field.bound()).encode({FIELD: voc_mask(3, 4)})
    parsed = decode_example(png)[FIELD][1][0]
    wrong = encode_example(
        [
            (FIELD.encode(), encode_feature(rk.WireKind.BYTES, [parsed])),
            (f"{FIELD}/height".encode(), encode_feature(rk.WireKind.INT64, np.array([4]))),
            (f"{FIELD}/width".encode(), encode_feature(rk.WireKind.INT64, np.array([4]))),
        ]
    )
    bound = mask_field.bound()
    with pytest.raises(tf.errors.InvalidArgumentError, match="mask codec: "):
        rk.make_parser(bound)(tf.constant([wrong]))
    with pytest.raises(rk.errors.DecodeError, match=r"field 'segmentation'.*stores \(4, 4\)"):
        decode_record_numpy(bound.fields, wrong)


def test_optional_and_default_fields(tmp_path: Path) -> None:
    """An optional mask is absent (presence flag False, None in numpy) where a record
    leaves it out; a field with a default (the path of a VOC palette PNG) gets it."""
    background = voc_mask(3, 4, 9)
    default_path = tmp_path / "background.png"
    default_path.write_bytes(palette_png(background))
    bound = rk.Schema(
        name="segmentation",
        fields={
            "maybe": rk.FieldSpec(codec="mask", optional=True),
            "labels": rk.FieldSpec(codec="mask", default=str(default_path)),
        },
    ).bind()
    first, second = voc_mask(5, 2, 1), voc_mask(2, 6, 2)
    records: list[dict[str, Any]] = [{"maybe": first, "labels": second}, {}, {"maybe": palette_png(second)}]
    path = write(bound, records, tmp_path / "optional.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["maybe/present"].numpy().tolist() == [True, False, True]
    np.testing.assert_array_equal(batch["maybe"][0].numpy(), first)
    assert batch["maybe"][1].shape[0] == 0
    np.testing.assert_array_equal(batch["maybe"][2].numpy(), second)
    for i, want in enumerate([second, background, background]):
        np.testing.assert_array_equal(batch["labels"][i].numpy(), want)

    rows = read_numpy(bound, path)
    assert [r["maybe"] is None for r in rows] == [False, True, False]
    np.testing.assert_array_equal(rows[2]["labels"], background)


def test_a_large_mask_costs_its_png_by_the_byte_breakdown(mask_field: SingleField) -> None:
    """A 1024 x 768 VOC-style mask (blocks of classes with void borders): the field's
    share of the record (rk.byte_breakdown) is its PNG plus a few bytes."""
    indices = np.kron(voc_mask(24, 32, 5), np.ones((32, 32), np.uint8))
    bound = mask_field.bound(num_classes=21)
    payload = MaskCodec().encode(indices)[""]
    share = assert_stored_near_payload(bound, FIELD, indices, len(payload))
    assert share - len(payload) < 100  # three keys, tags, lengths and two int64 sizes
    assert share < indices.size / 20  # lossless, and far smaller than the raw indices


def test_stored_bytes_are_the_png(mask_field: SingleField) -> None:
    bound = mask_field.bound(num_classes=21)
    value = voc_mask(40, 50)
    data = rk.RecordEncoder(bound).encode({FIELD: value})
    payload = decode_example(data)[FIELD][1][0]
    framing = sum(len(key) + 16 for key in bound[FIELD].keys)
    assert len(payload) <= rk.byte_breakdown(bound, data)[FIELD] <= len(payload) * 1.01 + framing


@given(hnp.arrays(np.uint8, st.tuples(st.integers(1, 8), st.integers(1, 8)), elements=st.integers(0, 255)))
def test_round_trip_property(indices: np.ndarray) -> None:
    import tensorflow as tf

    codec = MaskCodec()
    wire = codec.encode(indices)
    np.testing.assert_array_equal(codec.decode_numpy(wire), indices)
    batch = {
        "": tf.constant([wire[""]]),
        "height": tf.constant([wire["height"]], tf.int64),
        "width": tf.constant([wire["width"]], tf.int64),
    }
    np.testing.assert_array_equal(codec.decode_tf(batch)[0].numpy(), indices)


def test_conformance(tmp_path: Path) -> None:
    masks = [voc_mask(4, 5, 1), voc_mask(2, 6, 2), voc_mask(3, 3, 3)]
    check_codec(
        MaskCodec({"num_classes": 21}),
        cases=[
            CodecCase(masks[0], id="array"),
            CodecCase(palette_png(masks[1]), expected=masks[1], id="palette png"),
            CodecCase(masks[2], id="array, square"),
        ],
        bad_inputs=[
            BadInput(np.full((2, 2), 30, np.uint8), match="index 30 at row 0, column 0"),
            BadInput(Image.new("RGBA", (2, 2)), match="mode RGBA"),
        ],
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(("ignore_index", "pad"), [(255, 255), (7, 7), (None, 0)])
def test_masks_pad_with_their_ignore_index(ignore_index: int | None, pad: int) -> None:
    """pad_value is the ignore index (0 without one); decode_tf_padded pads with it as it
    decodes, giving what the ragged batch's to_tensor(default_value=pad) gives."""
    import tensorflow as tf

    codec = MaskCodec({"ignore_index": ignore_index})
    assert codec.pad_value() == pad
    masks = [voc_mask(3, 5, 1) % 7, voc_mask(4, 2, 2) % 7]  # no 255, nor 7 as the pad
    encoder = rk.RecordEncoder(bind(**{FIELD: {"codec": "mask", "options": {"ignore_index": ignore_index}}}))
    serialized = tf.constant([encoder.encode({FIELD: m}) for m in masks])
    spec = {
        FIELD: tf.io.FixedLenFeature([], tf.string),
        f"{FIELD}/height": tf.io.FixedLenFeature([], tf.int64),
        f"{FIELD}/width": tf.io.FixedLenFeature([], tf.int64),
    }
    parsed = tf.io.parse_example(serialized, spec)
    wire = {"": parsed[FIELD], "height": parsed[f"{FIELD}/height"], "width": parsed[f"{FIELD}/width"]}
    padded, shapes = codec.decode_tf_padded(wire)  # type: ignore[misc]
    assert shapes.numpy().tolist() == [[3, 5], [4, 2]]
    want = codec.decode_tf(wire).to_tensor(default_value=pad).numpy()
    np.testing.assert_array_equal(padded.numpy(), want)
    assert (want[0, 3:] == pad).all()
    assert (want[1, :, 2:] == pad).all()
    np.testing.assert_array_equal(want[1, :4, :2], masks[1])


# -- sizes: header ---------------------------------------------------------------------------


def test_masks_without_stored_sizes_read_equal_through_both_readers(tmp_path: Path) -> None:
    """``sizes: header`` stores only the PNG (as TFDS does); both readers take the size
    from its header, pad with the ignore index, and resize nearest-neighbour."""
    masks = [voc_mask(5, 7, 1), voc_mask(8, 3, 2), voc_mask(4, 4, 3)]
    photos = [np.full((m.shape[0], m.shape[1], 3), 10 * i, np.uint8) for i, m in enumerate(masks)]
    fields = {
        "photo": rk.FieldSpec(codec="image", options={"sizes": "header"}),
        FIELD: rk.FieldSpec(codec="mask", options={"sizes": "header", "num_classes": 21}),
    }
    header_schema = rk.Schema(name="segmentation", fields=fields)
    assert [f.name for f in MaskCodec({"sizes": "header"}).wire_spec().features] == [""]
    rk.write_dataset(
        [{"photo": p, FIELD: m} for p, m in zip(photos, masks, strict=True)], header_schema, tmp_path / "ds"
    )
    shard = next((tmp_path / "ds").glob("*.tfrecord*"))
    stored = [decode_example(data) for _, data in iter_tfrecords(location(shard))]
    assert {key for example in stored for key in example} == {"photo", FIELD}  # no sizes stored
    got = [r[FIELD] for r in rk.iter_records(tmp_path / "ds")]
    for g, want in zip(got, masks, strict=True):
        np.testing.assert_array_equal(g, want)
    padded = next(iter(rk.load_dataset(tmp_path / "ds", batch_size=3, pad=True)))
    batch = np.asarray(padded[FIELD])
    assert batch.shape == (3, 8, 7)
    for i, want in enumerate(masks):
        h, w = want.shape
        np.testing.assert_array_equal(batch[i, :h, :w], want)
        assert (batch[i, h:] == 255).all()
        assert (batch[i, :, w:] == 255).all()
    resized = next(iter(rk.load_dataset(tmp_path / "ds", batch_size=3, image_size=(16, 14))))
    assert tuple(resized[FIELD].shape) == (3, 16, 14)
    assert tuple(resized["photo"].shape) == (3, 16, 14, 3)
    # Nearest neighbour: every index of a resized mask is one of the mask's own.
    for i, want in enumerate(masks):
        assert set(np.unique(np.asarray(resized[FIELD][i]))) <= set(np.unique(want))
    # Doubling a 4 x 4 mask (record 3) repeats each index twice in both directions.
    alone = next(
        iter(rk.load_dataset(tmp_path / "ds", fields=[FIELD], batch_size=3, image_size={FIELD: (8, 8)}))
    )
    np.testing.assert_array_equal(np.asarray(alone[FIELD][2]), masks[2].repeat(2, 0).repeat(2, 1))
    # infer_schema proposes the same fields for these records (as it would for TFDS's).
    proposed = rk.infer_schema(shard)
    assert (proposed.fields[FIELD].codec, proposed.fields[FIELD].options) == ("mask", {"sizes": "header"})
    assert proposed.fields["photo"].codec == "image"
    for g, want in zip(rk.iter_records(shard, schema=proposed), masks, strict=True):
        np.testing.assert_array_equal(g[FIELD], want)


# -- docs --------------------------------------------------------------------------------------


def test_docs_page_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/codecs/mask.md: the example runs and prints what the page says (the other
    snippets run after it, on its results)."""
    namespace = run_doc_example_first("mask.md", tmp_path, monkeypatch)
    printed = capsys.readouterr().out
    assert printed.splitlines() == ["(2, None, None)", "(2, 6, 8)", "(2, 6, 8) [[6, 8], [5, 4]]"]
    assert namespace["padded"].dtype.name == "uint8"
