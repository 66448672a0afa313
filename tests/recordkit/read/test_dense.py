"""recordkit.load_dataset's shaping options (sdk/recordkit/read/_dense.py, _image_fit.py) on a real
segmentation dataset: padding with each codec's pad value (a mask's ignore index),
images brought to one size (masks always with nearest neighbour), and the random
crop-or-pad that cuts a record's image and mask at the same place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import recordkit as rk
import recordkit.read._dense
from recordkit_codecs.tensor import TensorCodec

VOID = 255
CROP = (6, 6)
#: (height, width) of each record: smaller than CROP in one side, both, or neither.
SIZES = [(4, 9), (8, 3), (6, 6), (9, 10), (3, 4), (7, 8), (10, 5), (5, 7), (8, 8), (9, 9)]


class SignedTensor(TensorCodec):
    """A tensor whose 0 is a value: padding must be -1 (the codec's pad value)."""

    name = "signed-tensor"

    def pad_value(self) -> int:
        return -1


class WrongPad(TensorCodec):
    name = "wrong-pad"

    def pad_value(self) -> Any:
        return "nothing"


SCHEMA = rk.Schema(
    name="layout-test",
    fields={
        "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
        "mask": rk.FieldSpec(codec="mask", options={"num_classes": 21}),  # ignore_index 255
        # the same classes + 1 (never 0), with no ignore index: padding is 0, and marks
        # exactly where the padding is
        "plain": rk.FieldSpec(codec="mask", options={"ignore_index": None}),
        "maybe": rk.FieldSpec(codec="mask", optional=True),
        "offsets": rk.FieldSpec(codec="signed-tensor", options={"dtype": "int16", "shape": [None]}),
        "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
    },
)


@pytest.fixture(scope="module")
def registry() -> rk.CodecRegistry:
    registry = rk.load_plugins().registry
    registry.register(SignedTensor)
    registry.register(WrongPad)
    return registry


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    rng = np.random.default_rng(3)
    out = []
    for i, (height, width) in enumerate(SIZES):
        mask = rng.integers(0, 21, (height, width), dtype=np.uint8)
        mask[0, :] = VOID  # a void border, as VOC's
        out.append(
            {
                "image": rng.integers(1, 256, (height, width, 3), dtype=np.uint8),  # never 0
                "mask": mask,
                "plain": np.where(mask == VOID, 22, mask + 1).astype(np.uint8),
                "maybe": mask if i % 3 else None,
                "offsets": np.arange(i % 4, dtype=np.int16) - 1,  # holds 0 and -1 too
                "id": i,
            }
        )
    return out


@pytest.fixture(scope="module")
def dataset(
    tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]], registry: rk.CodecRegistry
) -> Path:
    path = tmp_path_factory.mktemp("layout") / "data"
    rk.write_dataset(records, SCHEMA, path, shard_records=4, progress=False, registry=registry)
    return path


def test_the_pad_value_hook() -> None:
    assert rk.Codec.pad_value(TensorCodec()) == 0  # the default
    registry = rk.load_plugins().registry
    assert registry.create("mask").pad_value() == VOID
    assert registry.create("mask", {"ignore_index": 3}).pad_value() == 3
    assert registry.create("mask", {"ignore_index": None}).pad_value() == 0
    assert registry.create("image").pad_value() == 0


@pytest.mark.parametrize("loop_min_values", [recordkit.read._dense.LOOP_MIN_VALUES, 0])
def test_pad_fills_each_field_with_its_codecs_pad_value(
    dataset: Path,
    records: list[dict[str, Any]],
    registry: rk.CodecRegistry,
    monkeypatch: pytest.MonkeyPatch,
    loop_min_values: int,
) -> None:
    """Masks with their ignore index (as decoded, and afterwards for an optional one),
    images with 0, a plugin codec with its own value; 0 also takes the record-by-record
    padding path for large batches."""
    monkeypatch.setattr(recordkit.read._dense, "LOOP_MIN_VALUES", loop_min_values)
    ds = rk.load_dataset(dataset, batch_size=len(SIZES), pad=True, registry=registry)
    batch = numpy(next(iter(ds)))
    tall, wide = max(h for h, _ in SIZES), max(w for _, w in SIZES)
    assert batch["mask"].shape == (len(SIZES), tall, wide)
    for i, record in enumerate(records):
        height, width = record["mask"].shape
        for name, fill in (("image", 0), ("mask", VOID), ("plain", 0)):
            value = batch[name][i]
            np.testing.assert_array_equal(value[:height, :width], record[name], err_msg=name)
            assert (value[height:] == fill).all(), (name, i)
            assert (value[:, width:] == fill).all(), (name, i)
        maybe = batch["maybe"][i]
        assert bool(batch["maybe/present"][i]) == (record["maybe"] is not None)
        if record["maybe"] is None:
            assert (maybe == VOID).all(), "an absent mask is all padding: ignored"
        else:
            np.testing.assert_array_equal(maybe[:height, :width], record["maybe"])
            assert (maybe[height:] == VOID).all()
            assert (maybe[:, width:] == VOID).all()
        offsets = batch["offsets"][i]
        n = len(record["offsets"])
        np.testing.assert_array_equal(offsets[:n], record["offsets"])
        assert (offsets[n:] == -1).all()


def test_a_codec_whose_pad_value_is_not_a_number_is_named(dataset: Path, registry: rk.CodecRegistry) -> None:
    fields = dict(SCHEMA.fields)
    fields["offsets"] = rk.FieldSpec(codec="wrong-pad", options={"dtype": "int16", "shape": [None]})
    wrong = SCHEMA.model_copy(update={"fields": fields})
    files = sorted(str(f) for f in dataset.glob("*.tfrecord"))  # read as files: no schema check
    message = r"codec 'wrong-pad' \(field 'offsets'\): pad_value\(\) must return an int or a float"
    with pytest.raises(TypeError, match=message):
        rk.load_dataset(files, fields=["offsets"], schema=wrong, registry=registry, pad=True)


def canvas(value: np.ndarray, fill: int, margin: int = 16) -> np.ndarray:
    """``value`` at (margin, margin) of a larger array of ``fill``: any crop window, even
    one reaching outside ``value``, is a slice of it."""
    shape = (value.shape[0] + 2 * margin, value.shape[1] + 2 * margin, *value.shape[2:])
    out = np.full(shape, fill, value.dtype)
    out[margin : margin + value.shape[0], margin : margin + value.shape[1]] = value
    return out


def window(value: np.ndarray, offset: np.ndarray, fill: int, margin: int = 16) -> np.ndarray:
    top, left = (int(v) + margin for v in offset)
    return canvas(value, fill, margin)[top : top + CROP[0], left : left + CROP[1]]


def fitted(dataset: Path, registry: rk.CodecRegistry, fit: str, **options: Any) -> dict[str, Any]:
    ds = rk.load_dataset(
        dataset,
        fields=["image", "mask", "plain", "maybe", "id"],
        batch_size=len(SIZES),
        image_size=CROP,
        image_fit=fit,  # type: ignore[arg-type]
        registry=registry,
        **options,
    )
    return numpy(next(iter(ds)))


def numpy(batch: dict[str, Any]) -> dict[str, Any]:
    return {name: value.numpy() for name, value in batch.items()}


@pytest.mark.parametrize("fit", ["crop_or_pad", "random_crop_or_pad"])
def test_crops_cut_image_and_mask_at_one_place_and_pad_the_mask_with_its_ignore_index(
    dataset: Path, records: list[dict[str, Any]], registry: rk.CodecRegistry, fit: str
) -> None:
    batch = fitted(dataset, registry, fit, seed=7)
    assert batch["mask"].shape == (len(SIZES), *CROP)
    assert batch["mask"].dtype == np.uint8
    for i, record in enumerate(records):
        offset = batch["image/offset"][i]
        names = ["mask", "plain"] + (["maybe"] if record["maybe"] is not None else [])
        for name in names:  # fields of one size: one window (an absent mask is 0 x 0)
            np.testing.assert_array_equal(batch[name + "/offset"][i], offset, err_msg=name)
        # every pixel comes from the window of the original at the offset, padding
        # outside it: 0 for the image, the ignore index for the mask
        np.testing.assert_array_equal(batch["image"][i], window(record["image"], offset, 0))
        np.testing.assert_array_equal(batch["mask"][i], window(record["mask"], offset, VOID))
        np.testing.assert_array_equal(batch["plain"][i], window(record["plain"], offset, 0))
        maybe = batch["maybe"][i]
        if record["maybe"] is None:
            assert (maybe == VOID).all()
        else:
            np.testing.assert_array_equal(maybe, window(record["maybe"], offset, VOID))
        height, width = record["mask"].shape
        if fit == "crop_or_pad":  # the centre, as tf.image.resize_with_crop_or_pad
            want = tf.image.resize_with_crop_or_pad(record["image"], *CROP).numpy()
            np.testing.assert_array_equal(batch["image"][i], want)
        # the window lies within the original where it is larger, and the original
        # within the window where it is smaller
        for side, size, start in ((height, CROP[0], offset[0]), (width, CROP[1], offset[1])):
            assert 0 <= start <= side - size if side >= size else side - size <= start <= 0
    padded = [i for i, (h, w) in enumerate(SIZES) if h < CROP[0] or w < CROP[1]]
    assert padded
    assert all((batch["mask"][i] == VOID).any() for i in padded)


def test_random_crops_differ_by_record_and_repeat_with_the_seed(
    dataset: Path, registry: rk.CodecRegistry
) -> None:
    def windows(seed: int, **options: Any) -> list[list[int]]:
        ds = rk.load_dataset(
            dataset,
            fields=["image", "mask"],
            image_size=CROP,
            image_fit="random_crop_or_pad",
            seed=seed,
            registry=registry,
            **options,
        )
        return [w for batch in ds for w in np.reshape(batch["mask/offset"].numpy(), (-1, 2)).tolist()]

    first = windows(1, batch_size=4)
    assert len(first) == len(SIZES)
    assert first == windows(1, batch_size=4), "the same seed gives the same windows"
    assert first != windows(2, batch_size=4), "another seed, other windows"
    # records with room to move get windows of their own: not all at one place
    roomy = [first[i] for i, (h, w) in enumerate(SIZES) if h > CROP[0] + 1 and w > CROP[1] + 1]
    assert len({tuple(w) for w in roomy}) > 1
    # a second epoch crops again, elsewhere (each pass is not the same augmentation)
    twice = windows(1, batch_size=5, repeat=2)
    assert twice[: len(SIZES)] != twice[len(SIZES) :]
    # single records (no batch_size) too: one window each, as many places
    single = windows(1)
    assert len(single) == len(SIZES)
    assert len({tuple(w) for w in single}) > 1


def test_resize_with_pad_pads_masks_with_the_ignore_index_and_resizes_them_with_nearest(
    dataset: Path, records: list[dict[str, Any]], registry: rk.CodecRegistry
) -> None:
    batch = fitted(dataset, registry, "resize_with_pad")  # bilinear: pixels stay above 0
    for i, record in enumerate(records):
        plain = batch["plain"][i]
        padding = plain == 0  # `plain` never holds 0 but as padding
        assert padding.any() or record["mask"].shape[0] * CROP[1] == record["mask"].shape[1] * CROP[0]
        mask, image = batch["mask"][i], batch["image"][i]
        assert (mask[padding] == VOID).all()
        np.testing.assert_array_equal(mask[~padding], np.where(plain == 22, VOID, plain - 1)[~padding])
        assert (image[padding] == 0).all()
        assert (image[~padding] > 0).all()
        want = tf.image.resize_with_pad(record["mask"][..., None], *CROP, method="nearest").numpy()[..., 0]
        np.testing.assert_array_equal(mask[~padding], want[~padding])
    # even with another method named for images: masks are never blended
    batch = fitted(dataset, registry, "resize", image_method="bicubic")
    for i, record in enumerate(records):
        want = tf.image.resize(record["mask"][..., None], CROP, method="nearest").numpy()[..., 0]
        np.testing.assert_array_equal(batch["mask"][i], want)
        assert "mask/offset" not in batch


def test_a_bad_image_fit_names_the_choices(dataset: Path) -> None:
    with pytest.raises(ValueError, match="random_crop_or_pad, random_resized_crop, not 'random'"):
        rk.load_dataset(dataset, image_size=CROP, image_fit="random")  # type: ignore[arg-type]


def test_a_plugin_codec_declares_what_readers_fit_and_how(tmp_path: Path) -> None:
    from recordkit_codecs.mask import MaskCodec

    class LabelMap(MaskCodec):
        """A third party's map of class indices: the same rules as masks, by declaration."""

        name = "label-map"
        raster = "indices"

    assert isinstance(LabelMap(), rk.Raster)
    assert not isinstance(TensorCodec(), rk.Raster)
    registry = rk.load_plugins().registry
    registry.register(LabelMap)
    schema = rk.Schema(
        name="maps",
        fields={
            "map": rk.FieldSpec(codec="label-map", options={"ignore_index": None}),
            "values": rk.FieldSpec(codec="tensor", options={"dtype": "uint8", "shape": [None]}),
        },
    )
    rng = np.random.default_rng(5)
    maps = [rng.integers(0, 9, size, dtype=np.uint8) for size in [(5, 7), (9, 4), (6, 6)]]
    records = [{"map": m, "values": np.arange(i + 1, dtype=np.uint8)} for i, m in enumerate(maps)]
    rk.write_dataset(records, schema, tmp_path, progress=False, registry=registry)
    ds = rk.load_dataset(tmp_path, batch_size=3, image_size=(8, 8), image_method="bicubic", registry=registry)
    batch = next(iter(ds))
    assert set(batch) == {"map", "map/shape", "values"}  # image_size: the raster field only
    for i, original in enumerate(maps):  # nearest neighbour, whatever is named for images
        want = tf.image.resize(original[..., None], (8, 8), method="nearest").numpy()[..., 0]
        np.testing.assert_array_equal(np.reshape(batch["map"][i].numpy(), (8, 8)), want)
