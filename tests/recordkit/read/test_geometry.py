"""rk.ImageGeometry in both readers, checked on pixels: generated PNGs hold coloured
rectangles whose boxes, masks and keypoints are stored beside them; after every fit (and
a flip), each box must frame the pixels of its rectangle in the output picture, the
mask must cover them, and each keypoint (a rectangle's centre) must sit at their centre.
Nothing is compared with a hard-coded result: the truth is what the picture shows.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit_codecs.bbox import convert_boxes

#: The rectangles' colours, one per class; the background is black.
COLOURS = np.array([(255, 0, 0), (0, 255, 0), (0, 0, 255)], dtype=np.int64)
#: (height, width) of each record's picture: larger and smaller than the target.
SIZES = [(48, 64), (64, 40), (30, 30), (80, 72), (20, 50), (56, 56)]
TARGET = (32, 40)
#: How far (in output pixels) a box edge may lie from its rectangle's edge: interpolation
#: blends one pixel at each edge, the rectangle's edge is where it is half its colour.
TOLERANCE = 1.0


def scene(seed: int, height: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A picture with one rectangle per class (class k in the k-th third of the width,
    never touching another), its xyxy pixel boxes and its class mask (class k + 1)."""
    rng = np.random.default_rng(seed)
    picture = np.zeros((height, width, 3), np.uint8)
    mask = np.zeros((height, width), np.uint8)
    boxes = []
    third = width // 3
    for k in range(3):
        x1 = k * third + int(rng.integers(1, max(2, third // 4)))
        x2 = min(x1 + int(rng.integers(4, max(5, third - 2))), (k + 1) * third - 1)
        y1 = int(rng.integers(1, height // 2))
        y2 = min(y1 + int(rng.integers(4, height // 2)), height - 1)
        picture[y1:y2, x1:x2] = COLOURS[k]
        mask[y1:y2, x1:x2] = k + 1
        boxes.append((x1, y1, x2, y2))
    return picture, np.array(boxes, np.float64), mask


def write(root: Path, box_format: str, normalized: bool) -> Path:
    """A dataset of the scenes with boxes stored in ``box_format`` and units."""
    schema = rk.Schema(
        name="geometry",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
            "boxes": rk.FieldSpec(
                codec="bbox",
                options={
                    "format": box_format,
                    "normalized": normalized,
                    "labels": ["red", "green", "blue"],
                    "image_field": "image",
                },
            ),
            "mask": rk.FieldSpec(codec="mask", options={"num_classes": 4}),
            "points": rk.FieldSpec(
                codec="keypoints", options={"num_keypoints": 3, "visibility": True, "image_field": "image"}
            ),
            "plain": rk.FieldSpec(codec="bbox", options={"normalized": False}),  # tied to nothing
        },
    )
    records = []
    for i, (height, width) in enumerate(SIZES):
        picture, xyxy, mask = scene(i, height, width)
        scale = np.array([width, height] * 2) if normalized else 1.0
        centres = np.stack([(xyxy[:, 0] + xyxy[:, 2]) / 2, (xyxy[:, 1] + xyxy[:, 3]) / 2, np.full(3, 2)], 1)
        records.append(
            {
                "image": picture,
                "boxes": {"boxes": convert_boxes(xyxy / scale, "xyxy", box_format), "labels": [0, 1, 2]},
                "mask": mask,
                "points": centres,
                "plain": np.array([[1.0, 2.0, 3.0, 4.0]]),
            }
        )
    path = root / f"{box_format}-{normalized}"
    rk.write_dataset(records, schema, path, shard_records=4, progress=False)
    return path


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Path]:
    root = tmp_path_factory.mktemp("geometry")
    return {(f, n): write(root, f, n) for f in ("xyxy", "xywh", "yxyx", "cxcywh") for n in (False, True)}


def read(path: Path, reader: str, geometry: rk.ImageGeometry) -> list[dict[str, Any]]:
    """Every record of ``path`` through ``geometry``, as numpy values, by ``reader``."""
    ds = rk.open(path, "train")
    if reader == "numpy":
        return list(ds.records(geometry=geometry))
    out = []
    for record in ds.tf(geometry=geometry, seed=7).as_numpy_iterator():
        boxes = record["boxes"]
        out.append({**record, "boxes": {key: np.asarray(value) for key, value in boxes.items()}})
    return out


def seen(picture: np.ndarray, k: int) -> np.ndarray:
    """Where the picture shows class k: pixels nearer its colour than black and the others."""
    pixels = picture.astype(np.int64)
    distances = np.stack([np.abs(pixels - c).sum(-1) for c in (*COLOURS, np.zeros(3, np.int64))])
    nearest: np.ndarray = distances.argmin(0) == k
    return nearest


def frame(where: np.ndarray) -> np.ndarray | None:
    """The xyxy pixel box of the True pixels (edges at pixel boundaries), or None."""
    rows, cols = np.flatnonzero(where.any(1)), np.flatnonzero(where.any(0))
    if not len(rows):
        return None
    return np.array([cols[0], rows[0], cols[-1] + 1, rows[-1] + 1], np.float64)


def check_record(
    record: dict[str, Any],
    box_format: str,
    normalized: bool,
    keep_empty: bool = False,
    points_normalized: bool = False,
) -> None:
    """Each box frames its rectangle in the output picture, the mask covers it and the
    keypoint sits at its centre; a rectangle the fit cut away has no box."""
    picture = record["image"]
    height, width = picture.shape[:2]
    scale = np.array([width, height] * 2) if normalized else 1.0
    boxes = convert_boxes(np.asarray(record["boxes"]["boxes"], np.float64), box_format, "xyxy") * scale
    labels = list(np.asarray(record["boxes"]["labels"]))
    assert len(boxes) == len(labels)
    for k in range(3):
        shown = frame(seen(picture, k))
        masked = frame(record["mask"] == k + 1)
        if k not in labels:
            # cut away: nothing (or a sliver thinner than the blend of one edge) is shown
            assert shown is None or min(shown[2] - shown[0], shown[3] - shown[1]) <= 1, (k, shown)
            continue
        box = boxes[labels.index(k)]
        if keep_empty and (box[2] <= box[0] or box[3] <= box[1]):
            assert shown is None or min(shown[2] - shown[0], shown[3] - shown[1]) <= 1
            continue
        assert shown is not None, (k, box)
        np.testing.assert_allclose(box, shown, atol=TOLERANCE + 0.01, err_msg=f"class {k}")
        assert masked is not None
        np.testing.assert_allclose(box, masked, atol=TOLERANCE + 0.01, err_msg=f"mask of class {k}")
        x, y, visibility = record["points"][k]
        if points_normalized:
            x, y = x * width, y * height
        inside = 0 <= x <= width and 0 <= y <= height
        assert visibility == (2 if inside else 0)
        clipped = min(box[0], box[1], width - box[2], height - box[3]) < 0.01
        if not clipped:  # the whole rectangle is shown: the point is its centre
            np.testing.assert_allclose([x, y], [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2], atol=TOLERANCE)
    np.testing.assert_array_equal(record["plain"], [[1.0, 2.0, 3.0, 4.0]])  # tied to no picture


FITS = ["resize", "resize_with_pad", "crop_or_pad", "random_crop_or_pad", "random_resized_crop"]


@pytest.mark.parametrize("reader", ["numpy", "tf"])
@pytest.mark.parametrize("fit", FITS)
def test_every_fit_moves_boxes_masks_and_keypoints_onto_their_objects(
    datasets: dict[tuple[str, bool], Path], fit: str, reader: str
) -> None:
    geometry = rk.ImageGeometry(size=TARGET, fit=fit, flip=0.5, crop_scale=(0.3, 1.0), seed=3)  # type: ignore[arg-type]
    records = read(datasets["xyxy", False], reader, geometry)
    assert len(records) == len(SIZES)
    for record in records:
        assert record["image"].shape == (*TARGET, 3)
        assert record["image"].dtype == np.uint8
        check_record(record, "xyxy", normalized=False)


@pytest.mark.parametrize("reader", ["numpy", "tf"])
@pytest.mark.parametrize(
    ("box_format", "normalized"), [(f, n) for f in ("xyxy", "xywh", "yxyx", "cxcywh") for n in (False, True)]
)
def test_every_box_format_and_unit_follows_a_random_crop(
    datasets: dict[tuple[str, bool], Path], box_format: str, normalized: bool, reader: str
) -> None:
    geometry = rk.ImageGeometry(size=TARGET, fit="random_crop_or_pad", flip=True, seed=5)
    for record in read(datasets[box_format, normalized], reader, geometry):
        check_record(record, box_format, normalized)


@pytest.mark.parametrize("reader", ["numpy", "tf"])
def test_a_reader_asks_for_normalized_yxyx_boxes_of_xyxy_pixels(
    datasets: dict[tuple[str, bool], Path], reader: str
) -> None:
    geometry = rk.ImageGeometry(size=TARGET, fit="resize_with_pad", box_format="yxyx", normalized=True)
    records = read(datasets["xyxy", False], reader, geometry)
    for record in records:
        assert np.all(np.asarray(record["boxes"]["boxes"]) <= 1.0)
        check_record(record, "yxyx", normalized=True, points_normalized=True)


@pytest.mark.parametrize("reader", ["numpy", "tf"])
def test_keep_empty_boxes_keeps_every_box_with_its_label(
    datasets: dict[tuple[str, bool], Path], reader: str
) -> None:
    geometry = rk.ImageGeometry(size=(12, 12), fit="crop_or_pad", keep_empty_boxes=True)
    records = read(datasets["xyxy", False], reader, geometry)
    for record in records:
        assert list(record["boxes"]["labels"]) == [0, 1, 2]
        check_record(record, "xyxy", normalized=False, keep_empty=True)
    dropped = read(datasets["xyxy", False], reader, rk.ImageGeometry(size=(12, 12), fit="crop_or_pad"))
    assert sum(len(r["boxes"]["labels"]) for r in dropped) < 3 * len(SIZES)


@pytest.mark.parametrize("fit", ["resize", "resize_with_pad", "crop_or_pad"])
def test_tf_data_and_the_numpy_reader_agree_on_pixels_and_boxes(
    datasets: dict[tuple[str, bool], Path], fit: str
) -> None:
    """Deterministic fits: the same pixels (bilinear resizes computed alike: equal up to
    one level of rounding) and the same boxes (float32 arithmetic: within 1e-4 px)."""
    geometry = rk.ImageGeometry(size=TARGET, fit=fit)  # type: ignore[arg-type]
    path = datasets["cxcywh", True]
    for by_tf, by_numpy in zip(read(path, "tf", geometry), read(path, "numpy", geometry), strict=True):
        difference = np.abs(by_tf["image"].astype(int) - by_numpy["image"].astype(int))
        assert difference.max() <= 1
        np.testing.assert_array_equal(by_tf["mask"], by_numpy["mask"])
        np.testing.assert_allclose(by_tf["boxes"]["boxes"], by_numpy["boxes"]["boxes"], atol=1e-4)
        np.testing.assert_array_equal(by_tf["boxes"]["labels"], by_numpy["boxes"]["labels"])
        np.testing.assert_allclose(by_tf["points"], by_numpy["points"], atol=1e-3)


def test_the_old_image_options_move_the_boxes_too(datasets: dict[tuple[str, bool], Path]) -> None:
    ds = rk.load_dataset(datasets["xyxy", False], image_size=TARGET, image_fit="crop_or_pad")
    for record in ds.as_numpy_iterator():
        record["boxes"] = {key: np.asarray(value) for key, value in record["boxes"].items()}
        check_record(record, "xyxy", normalized=False)


def test_a_seed_gives_the_numpy_readers_the_same_draws(datasets: dict[tuple[str, bool], Path]) -> None:
    geometry = rk.ImageGeometry(size=TARGET, fit="random_resized_crop", flip=0.5, seed=11)
    ds = rk.open(datasets["xyxy", False], "train")
    first, again = (
        list(ds.records(geometry=geometry)),
        [ds.torch(geometry=geometry, tensors=False)[i] for i in range(len(SIZES))],
    )
    for one, two in zip(first, again, strict=True):
        np.testing.assert_array_equal(one["image"], two["image"])
        np.testing.assert_array_equal(one["boxes"]["boxes"], two["boxes"]["boxes"])


def test_a_tied_field_whose_picture_is_left_out_is_refused(datasets: dict[tuple[str, bool], Path]) -> None:
    ds = rk.open(datasets["xyxy", False], "train", fields=["boxes"])
    with pytest.raises(ValueError, match="follows the picture 'image', which this read leaves out"):
        ds.records(geometry=rk.ImageGeometry(size=TARGET))
    with pytest.raises(ValueError, match="follows the picture 'image', which this read leaves out"):
        ds.tf(geometry=rk.ImageGeometry(size=TARGET))


def test_bad_geometries_are_refused_with_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="fit must be one of resize, resize_with_pad"):
        rk.ImageGeometry(fit="stretch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flip is a probability"):
        rk.ImageGeometry(flip=2)
    with pytest.raises(ValueError, match="needs a size"):
        rk.ImageGeometry(fit="random_resized_crop")
    with pytest.raises(ValueError, match="crop_scale"):
        rk.ImageGeometry(size=TARGET, fit="random_resized_crop", crop_scale=(0.5, 2.0))
    assert rk.ImageGeometry(flip=True).flip == 0.5


@pytest.mark.parametrize("seed", range(6))
def test_torch_batches_are_uint8_of_one_size_with_their_boxes_on_the_objects(
    datasets: dict[tuple[str, bool], Path], seed: int
) -> None:
    pytest.importorskip("torch")
    geometry = rk.ImageGeometry(
        size=TARGET, fit="random_resized_crop", flip=0.5, crop_scale=(0.3, 1.0), seed=seed
    )
    ds = rk.open(datasets["xywh", True], "train")
    stream = ds.torch_batches(4, geometry=geometry, concat=["boxes", "plain"])
    batches = list(stream)
    assert sum(len(batch["image"]) for batch in batches) == len(SIZES)
    for batch in batches:
        assert str(batch["image"].dtype) == "torch.uint8"
        assert tuple(batch["image"].shape[1:]) == (*TARGET, 3)
        starts = np.cumsum([0, *batch["boxes/boxes/lengths"].tolist()])
        for row in range(len(batch["image"])):
            part = slice(starts[row], starts[row + 1])
            record = {
                "image": batch["image"][row].numpy(),
                "mask": batch["mask"][row].numpy(),
                "points": batch["points"][row].numpy(),
                "boxes": {key: batch["boxes"][key][part].numpy() for key in ("boxes", "labels")},
                "plain": batch["plain"][row : row + 1].numpy(),
            }
            check_record(record, "xywh", normalized=True)


def test_grain_gives_the_records_the_numpy_reader_gives(datasets: dict[tuple[str, bool], Path]) -> None:
    pytest.importorskip("grain")
    geometry = rk.ImageGeometry(size=TARGET, fit="random_crop_or_pad", flip=0.5, seed=2)
    ds = rk.open(datasets["xyxy", False], "train")
    source = ds.grain(geometry=geometry)
    for index, record in enumerate(ds.records(geometry=geometry)):
        np.testing.assert_array_equal(source[index]["image"], record["image"])
        np.testing.assert_array_equal(source[index]["boxes"]["boxes"], record["boxes"]["boxes"])
        check_record(source[index], "xyxy", normalized=False)


def test_a_geometry_goes_with_the_records_into_worker_processes(
    datasets: dict[tuple[str, bool], Path],
) -> None:
    """DataLoader workers get the dataset pickled: the geometry must go with it."""
    geometry = rk.ImageGeometry(size=TARGET, fit="resize_with_pad", flip=1.0)
    access = rk.RandomAccess(datasets["xyxy", False], geometry=geometry)
    copy = pickle.loads(pickle.dumps(access))
    for index in range(len(SIZES)):
        assert copy[index]["image"].shape == (*TARGET, 3)
        np.testing.assert_array_equal(copy[index]["boxes"]["boxes"], access[index]["boxes"]["boxes"])
        check_record(copy[index], "xyxy", normalized=False)


@pytest.mark.parametrize("channels", [1, 3])
def test_pictures_shrunk_to_less_than_half_their_width_resize_in_numpy_as_in_tf_data(
    tmp_path: Path, channels: int
) -> None:
    """The numpy resize picks the columns it reads before interpolating a picture that
    shrinks to less than half its width; wider, narrower, taller, flatter and enlarged
    pictures of noise read the same pixels as tf.data's resize (one level of rounding)."""
    rng = np.random.default_rng(5)
    sizes = [(300, 500), (90, 41), (40, 400), (37, 30), (20, 15), (40, 48)]
    pictures = [rng.integers(0, 256, (h, w, channels), dtype=np.uint8) for h, w in sizes]
    schema = rk.Schema(
        name="noise",
        fields={"image": rk.FieldSpec(codec="image", options={"format": "png", "channels": channels})},
    )
    rk.write_dataset([{"image": p} for p in pictures], schema, tmp_path / "noise", progress=False)
    geometry = rk.ImageGeometry(size=(40, 48))
    ds = rk.open(tmp_path / "noise", "train")
    by_tf = list(ds.tf(geometry=geometry).as_numpy_iterator())
    for picture, numpy_record, tf_record in zip(pictures, ds.records(geometry=geometry), by_tf, strict=True):
        got = numpy_record["image"]
        assert got.shape == (40, 48, channels)
        assert got.dtype == np.uint8
        difference = np.abs(got.astype(int) - tf_record["image"].astype(int))
        assert difference.max() <= 1, picture.shape
        assert difference.mean() < 0.01, picture.shape
