"""Decoding JPEGs at the model's size (issue 33): each reader with the scaled decode on
and off, next to the hand-written tf.data pipeline, and the pixels' quality.

Three workloads of JPEGs (quality 90, 4:2:0, Pillow's defaults) written with
``rk.write_dataset``: 1,024 to 2,048 px a side, smooth photos (:func:`photo`: colour
gradients, rectangles, noise of 2 levels; about 0.7 bits a pixel) and detailed ones (a
fine texture and noise of 6 levels; about 2.2 bits a pixel: the entropy decoding, which
costs the same at any scale, weighs more); and 200 to 320 px smooth photos, too small
for any scale at 224 x 224 (no regression allowed).
Each is read to 224 x 224 by:

* ``tf.data``: ``rk.load_dataset(batch_size=32, image_size=(224, 224))`` with
  ``jpeg_scale="auto"`` (the default) and ``"full"``, and the hand-written pipeline
  (per record: ``parse_single_example``, ``decode_jpeg``, ``tf.image.resize``, batch),
  the reference, also with ``antialias=True`` (the quality the scaled decode gives);
* the numpy reader, ``rk.iter_records(num_threads=2, geometry=...)``, and the PyTorch
  loader the docs advise (``torch_batches(32, geometry=...)`` under
  ``DataLoader(batch_size=None, num_workers=2)``), with
  ``rk.ImageGeometry(size=(224, 224), jpeg_scale=...)`` ``"auto"`` and ``"full"``: the
  readers' own resize (bilinear, as ``tf.image.resize``; a picture decoded at a reduced
  scale is resized with antialiasing); and the numpy reader's full decode resized by
  Pillow's antialiased filter in the loop that reads it (:data:`NUMPY_ANTIALIASED`).

``jpeg_scale="full"`` is the full decode with the resize that aliases (bilinear without
antialiasing reads 4 pixels an output pixel, whatever the picture's size); ``"auto"``
decodes at 1/2 to 1/8 and resizes with antialiasing, which reads every pixel. So each
scaled row is compared twice: with its reader's ``"full"`` (faster resize, 8 to 18 dB
further from an antialiased downscale) and with its reader's full decode of equal
quality, resized with antialiasing (:data:`EQUAL_QUALITY`; none for PyTorch).

Every repetition is kept (wall seconds of a pass), with the median and the best. The
quality is the PSNR of each scaled picture against the full decode resized with
antialiasing (what a downscale should give), and against the full decode resized the
reader's way (bilinear without antialiasing, which aliases on detail).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import statistics
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks import _timing

if TYPE_CHECKING:
    import recordkit as rk
    from benchmarks._config import Size
    from recordkit.codec._geometry import JpegScale

__all__ = ["WORKLOADS", "Row", "format_rows", "quality", "run_scaled_suite", "write_workload"]

SIZE = (224, 224)
BATCH = 32
HAND_WRITTEN = "hand-written (full decode, tf.image.resize)"
#: The hand-written pipeline with the quality of the scaled decode's antialiased resize.
HAND_WRITTEN_ANTIALIASED = "hand-written (full decode, tf.image.resize antialias=True)"
FULL_WAY = "jpeg_scale=full"
#: What each reader's ``jpeg_scale`` does to a large JPEG, in its way's name: ``full`` is
#: not a smarter decode, it is the full decode with the cheap resize that aliases (it
#: reads 4 pixels an output pixel); ``auto`` decodes at 1/2 to 1/8 and antialiases.
FULL_SUFFIX = " (full decode, bilinear without antialiasing)"
AUTO_SUFFIX = " (decoded at 1/2 to 1/8 where a scale applies, then antialiased)"
#: The numpy reader's full decode with the resize of the scaled decode's quality: what a
#: user of ``ds.records()`` who wants an antialiased downscale writes (Pillow's bilinear
#: filter, antialiased, as the scaled path resizes), in the loop that reads the records.
NUMPY_ANTIALIASED = "hand-written (iter_records full decode, then Pillow's antialiased resize)"
#: Each reader's full decode of the scaled decode's quality (the "equal quality" column).
EQUAL_QUALITY = {"tf.data": HAND_WRITTEN_ANTIALIASED, "numpy": NUMPY_ANTIALIASED}
#: tf.data's scaled decode on a dataset without recorded picture sizes (written before
#: they were recorded): the scale chosen record by record in the graph.
BEFORE_WAY = "recordkit, jpeg_scale=auto, no picture sizes (scale chosen per record)"
#: name -> (smallest and largest side, detailed)
WORKLOADS: dict[str, tuple[tuple[int, int], bool]] = {
    "1,024-2,048 px, smooth": ((1024, 2048), False),
    "1,024-2,048 px, detailed": ((1024, 2048), True),
    "200-320 px, smooth": ((200, 320), False),
}


def photo(rng: np.random.Generator, height: int, width: int, detailed: bool) -> np.ndarray:
    """A photo-like picture: smooth colour gradients, the sharp edges of a few
    rectangles and mild sensor-like noise; ``detailed`` adds a fine texture and more
    noise (more coefficients for the entropy decoding, which no scale saves)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    phases = rng.uniform(0, 6, 3)
    picture = np.stack(
        [128 + 80 * np.sin(x / width * 3 + p) * np.cos(y / height * 2 + p) for p in phases], -1
    )
    for _ in range(8):
        top, left = int(rng.integers(0, height - 16)), int(rng.integers(0, width - 16))
        rows, cols = int(rng.integers(8, height // 3)), int(rng.integers(8, width // 3))
        picture[top : top + rows, left : left + cols] = rng.uniform(20, 235, 3)
    if detailed:
        picture += (24 * np.sin(x / 3.1) * np.sin(y / 4.3))[..., None]
    picture += rng.normal(0, 6 if detailed else 2, picture.shape).astype(np.float32)
    out: np.ndarray = np.clip(picture, 0, 255).astype(np.uint8)
    return out


def write_workload(
    root: Path, records: int, sides: tuple[int, int], detailed: bool, seed: int = 33
) -> list[bytes]:
    """``records`` JPEGs of sides in ``sides`` written as a recordkit dataset at ``root``."""
    from PIL import Image

    import recordkit as rk

    rng = np.random.default_rng(seed)
    jpegs = []
    for _ in range(records):
        height, width = (int(side) for side in rng.integers(sides[0], sides[1] + 1, 2))
        out = io.BytesIO()
        Image.fromarray(photo(rng, height, width, detailed)).save(out, format="JPEG", quality=90)
        jpegs.append(out.getvalue())
    schema = rk.Schema(
        name="photos", fields={"image": rk.FieldSpec(codec="image", options={"format": "keep"})}
    )
    rk.write_dataset([{"image": data} for data in jpegs], root, schema, progress=False)
    return jpegs


def geometry(jpeg_scale: JpegScale) -> rk.ImageGeometry:
    """The geometry the numpy reader and PyTorch read with: a resize to :data:`SIZE`."""
    import recordkit as rk

    return rk.ImageGeometry(size=SIZE, jpeg_scale=jpeg_scale)


def hand_written(root: Path, antialias: bool = False) -> Any:
    """The tutorials' pipeline: per record, parse, decode the JPEG, resize; batch. With
    ``antialias``, the resize a user who wants the downscale's quality writes."""
    import tensorflow as tf

    files = sorted(str(p) for p in root.glob("*.tfrecord*") if not p.name.endswith(".index"))
    spec = {"image": tf.io.FixedLenFeature([], tf.string)}

    def decode(serialized: Any) -> Any:
        image = tf.io.decode_jpeg(tf.io.parse_single_example(serialized, spec)["image"], channels=3)
        return tf.image.resize(image, SIZE, antialias=antialias)

    dataset = tf.data.TFRecordDataset(files).map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def _first_dimension(element: Any) -> int:
    """Records in a batch (a dict of tensors, or one tensor)."""
    first = element if not isinstance(element, Mapping) else next(iter(element.values()))
    return int(first.shape[0])


def _checked(name: str, records: int, read: Callable[[], int]) -> Callable[[], object]:
    """A pass of ``read`` (which returns the records it saw), checked to read ``records``."""

    def run() -> None:
        seen = read()
        if seen != records:
            raise RuntimeError(f"{name} read {seen} records, not {records}")

    return run


def without_picture_sizes(root: Path, copy: Path) -> Path:
    """The dataset at ``root`` as a recordkit before picture sizes wrote it (its
    ``dataset.json`` without them, format 2; the shards hard-linked, not copied: readers
    refuse a symlink out of the dataset's folder): its readers choose each picture's
    scale record by record."""
    copy.mkdir(parents=True)
    for path in root.iterdir():
        if path.name != "dataset.json":
            os.link(path, copy / path.name)
    manifest = json.loads((root / "dataset.json").read_text())
    for split in manifest["splits"].values():
        split.pop("picture_sizes", None)
    manifest["format"] = "recordkit.dataset/2"
    (copy / "dataset.json").write_text(json.dumps(manifest))
    return copy


def cases(root: Path, records: int, before: Path | None = None) -> dict[tuple[str, str], _timing.Case]:
    """(reader, way) -> one pass over the workload's ``records``; with ``before`` (the
    dataset without its picture sizes), tf.data's scaled decode chosen record by record too."""
    import recordkit as rk

    def tf_pass(name: str, dataset: Any) -> _timing.Case:
        return _timing.Case(_timing.IteratorPass(dataset, records, _first_dimension, name))

    def torch_pass(name: str, jpeg_scale: JpegScale) -> _timing.Case:
        from torch.utils.data import DataLoader

        stream = rk.open(root).torch_batches(BATCH, geometry=geometry(jpeg_scale))
        loader = DataLoader(stream, batch_size=None, num_workers=2)
        return _timing.Case(_checked(name, records, lambda: sum(_first_dimension(b) for b in loader)))

    def numpy_pass(name: str, jpeg_scale: JpegScale) -> _timing.Case:
        shape = geometry(jpeg_scale)
        read = lambda: sum(1 for _ in rk.iter_records(root, geometry=shape, num_threads=2))  # noqa: E731
        return _timing.Case(_checked(name, records, read))

    def numpy_antialiased_pass(name: str) -> _timing.Case:
        read = lambda: sum(1 for _ in antialiased_records(root))  # noqa: E731
        return _timing.Case(_checked(name, records, read))

    def recordkit(jpeg_scale: JpegScale, where: Path = root) -> Any:
        return rk.load_dataset(where, batch_size=BATCH, image_size=SIZE, jpeg_scale=jpeg_scale)

    ways: dict[tuple[str, str], Callable[[str], _timing.Case]] = {
        ("tf.data", HAND_WRITTEN): lambda name: tf_pass(name, hand_written(root)),
        ("tf.data", HAND_WRITTEN_ANTIALIASED): lambda name: tf_pass(name, hand_written(root, antialias=True)),
        ("tf.data", f"recordkit, {FULL_WAY}{FULL_SUFFIX}"): lambda name: tf_pass(name, recordkit("full")),
        ("tf.data", f"recordkit, jpeg_scale=auto{AUTO_SUFFIX}"): lambda name: tf_pass(
            name, recordkit("auto")
        ),
        **(
            {}
            if before is None
            else {
                ("tf.data", BEFORE_WAY): lambda name: tf_pass(name, recordkit("auto", before)),
            }
        ),
        ("numpy", NUMPY_ANTIALIASED): numpy_antialiased_pass,
        ("numpy", f"iter_records, {FULL_WAY}{FULL_SUFFIX}"): lambda name: numpy_pass(name, "full"),
        ("numpy", f"iter_records, jpeg_scale=auto{AUTO_SUFFIX}"): lambda name: numpy_pass(name, "auto"),
        ("PyTorch", f"torch_batches, {FULL_WAY}{FULL_SUFFIX}"): lambda name: torch_pass(name, "full"),
        ("PyTorch", f"torch_batches, jpeg_scale=auto{AUTO_SUFFIX}"): lambda name: torch_pass(name, "auto"),
    }
    return {key: make(f"{key[0]} {key[1]}") for key, make in ways.items()}


def antialiased_records(root: Path) -> Iterator[np.ndarray]:
    """:data:`NUMPY_ANTIALIASED`: each picture of ``root`` decoded in full by the numpy
    reader (its two threads), then resized to :data:`SIZE` by Pillow's bilinear filter,
    which antialiases (its kernel widens by the factor it shrinks by)."""
    from PIL import Image

    import recordkit as rk

    for record in rk.iter_records(root, num_threads=2):
        picture = Image.fromarray(record["image"])
        yield np.asarray(picture.resize((SIZE[1], SIZE[0]), Image.Resampling.BILINEAR))


@dataclasses.dataclass
class Row:
    """One reader and way on one workload: seconds of every pass over ``records``."""

    workload: str
    reader: str
    way: str
    records: int
    seconds: list[float]
    #: CPU seconds of this process in every pass (PyTorch's worker processes not counted).
    cpu_seconds: list[float] = dataclasses.field(default_factory=list)

    def rate(self, how: Callable[[list[float]], float] = statistics.median) -> float:
        return self.records / how(self.seconds)

    def cpu_ms(self) -> str:
        """Median milliseconds of CPU a record (blank for PyTorch, whose workers decode)."""
        if not self.cpu_seconds or self.reader == "PyTorch":
            return ""
        return f"{1000 * statistics.median(self.cpu_seconds) / self.records:.2f}"


def quality(root: Path, jpegs: list[bytes], count: int) -> dict[str, float]:
    """Mean PSNR (dB) of the first ``count`` pictures read scaled, against the full
    decode resized the same way (the reader's bilinear resize without antialiasing, as
    ``tf.image.resize`` by default), and against the full decode resized with
    antialiasing (the reference: what a downscale should give, and what Pillow's and
    torchvision's resizes give); the full decode's own PSNR against that too. The
    reference decodes with libjpeg's accurate DCT, as the readers do."""
    import tensorflow as tf

    import recordkit as rk

    def tf_read(jpeg_scale: JpegScale) -> list[np.ndarray]:
        dataset = rk.load_dataset(root, image_size=SIZE, jpeg_scale=jpeg_scale).take(count)
        return [record["image"] for record in dataset.as_numpy_iterator()]

    auto, full = tf_read("auto"), tf_read("full")
    ideal = [
        tf.saturate_cast(
            tf.round(
                tf.image.resize(tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE"), SIZE, antialias=True)
            ),
            tf.uint8,
        ).numpy()
        for data in jpegs[:count]
    ]
    scaled_numpy = [r["image"] for r in rk.iter_records(root, geometry=geometry("auto"))][:count]
    full_numpy = [r["image"] for r in rk.iter_records(root, geometry=geometry("full"))][:count]
    by_pillow = list(antialiased_records(root))[:count]
    return {
        "numpy full decode vs full decode, antialiased resize": _mean_psnr(full_numpy, ideal),
        "numpy full decode, Pillow's antialiased resize vs full decode, antialiased resize": _mean_psnr(
            by_pillow, ideal
        ),
        "tf.data scaled vs full decode, same resize": _mean_psnr(auto, full),
        "tf.data scaled vs full decode, antialiased resize": _mean_psnr(auto, ideal),
        "tf.data full decode vs full decode, antialiased resize": _mean_psnr(full, ideal),
        "numpy scaled vs full decode, same resize": _mean_psnr(scaled_numpy, full_numpy),
        "numpy scaled vs full decode, antialiased resize": _mean_psnr(scaled_numpy, ideal),
    }


def _mean_psnr(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    values = []
    for a, b in zip(got, want, strict=True):
        error = float(np.mean((a.astype(np.float64) - np.asarray(b, np.float64).reshape(a.shape)) ** 2))
        values.append(99.0 if error == 0 else 10 * math.log10(255.0**2 / error))
    return statistics.mean(values)


def run_workload(
    name: str, scratch: Path, records: int, repeats: int, log: Callable[[str], None]
) -> tuple[list[Row], dict[str, float]]:
    """Write workload ``name`` and time every case (interleaved rounds); its rows and quality."""
    sides, detailed = WORKLOADS[name]
    root = scratch / name.replace(" ", "_").replace(",", "")
    jpegs = write_workload(root, records, sides, detailed)
    pixels = sum(_pixels(data) for data in jpegs)
    bits = 8 * sum(len(data) for data in jpegs) / pixels
    log(f"  {name}: {records} records written ({bits:.2f} bits a pixel); timing {repeats} rounds")
    before = without_picture_sizes(root, scratch / (root.name + "-before"))
    timings = _timing.measure(cases(root, records, before), repeats=repeats)
    rows = [
        Row(name, reader, way, records, list(t.seconds), list(t.cpu_seconds))
        for (reader, way), t in timings.items()
    ]
    scores = quality(root, jpegs, min(records, 16)) if sides[0] >= 2 * SIZE[0] else {}
    return rows, scores


def _pixels(data: bytes) -> int:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return int(image.width * image.height)


def format_rows(rows: list[Row]) -> str:
    """A Markdown table: records/s (median, best); the ratio to the reader's own
    ``jpeg_scale="full"`` (the full decode with the resize that aliases), to the reader's
    full decode of the scaled decode's quality (:data:`EQUAL_QUALITY`: antialiased), both
    median against median and best against best, and to the hand-written pipeline; every
    pass."""
    lines = [
        "| workload | reader | way | records/s (median) | records/s (best) "
        "| vs jpeg_scale=full (median) | vs jpeg_scale=full (best) "
        "| vs full decode of equal quality (median) | vs full decode of equal quality (best) "
        "| vs hand-written tf.data (median) | every pass (records/s) "
        "| CPU ms a record (median, this process) |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    by_key = {(r.workload, r.reader, r.way): r for r in rows}
    for r in rows:
        # The reader's own jpeg_scale="full" row (the hand-written ways decode in full too).
        full = next(
            (
                o
                for (w, rd, way), o in by_key.items()
                if w == r.workload
                and rd == r.reader
                and FULL_WAY in way
                and not way.startswith("hand-written")
            ),
            None,
        )
        equal = by_key.get((r.workload, r.reader, EQUAL_QUALITY.get(r.reader, "")))
        own = not r.way.startswith("hand-written")
        hand = by_key.get((r.workload, "tf.data", HAND_WRITTEN))
        vs_full = _ratios(r, full if own else None)
        vs_equal = _ratios(r, equal if own else None)
        vs_hand = f"{r.rate() / hand.rate():.2f}x" if hand is not None else ""
        every = ", ".join(f"{r.records / s:,.1f}" for s in r.seconds)
        lines.append(
            f"| {r.workload} | {r.reader} | {r.way} | {r.rate():,.1f} | {r.rate(min):,.1f} "
            f"| {' | '.join(vs_full + vs_equal)} | {vs_hand} | {every} | {r.cpu_ms()} |"
        )
    return "\n".join(lines)


def _ratios(row: Row, other: Row | None) -> tuple[str, str]:
    """``row``'s records/s over ``other``'s, median against median and best against best
    (blank without another row, or against itself)."""
    if other is None or other is row:
        return "", ""
    return f"{row.rate() / other.rate():.2f}x", f"{row.rate(min) / other.rate(min):.2f}x"


def format_quality(scores: dict[str, dict[str, float]]) -> str:
    """A Markdown table of the mean PSNR of each large workload."""
    names = sorted({key for values in scores.values() for key in values})
    lines = ["| workload | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for workload, values in scores.items():
        lines.append(f"| {workload} | " + " | ".join(f"{values[n]:.1f} dB" for n in names) + " |")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """The conditions of a run: CPUs usable and the load average."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"usable_cpus": cores, "load_average": list(os.getloadavg())}


#: Records a workload of ``run.py``'s scaled suite has at each size (96 at ``full``). The
#: toy size's one record reads every way and measures the quality all the same (each
#: way's batch is partial at 4 records too): the smoke test's run took twice as long with 4.
SUITE_RECORDS = {"toy": 1, "small": 32}


def run_scaled_suite(size: Size, scratch: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``benchmarks/run.py``'s ``scaled`` suite: every workload at ``size`` (96 records
    a workload at ``full``, fewer below, :data:`SUITE_RECORDS`), ``size.repeats`` rounds."""
    records = SUITE_RECORDS.get(size.name, 96)
    start = machine()
    rows: list[Row] = []
    scores: dict[str, dict[str, float]] = {}
    for name in WORKLOADS:
        got, quality_scores = run_workload(name, scratch, records, size.repeats, log)
        rows += got
        if quality_scores:
            scores[name] = quality_scores
    return {
        "rows": [dataclasses.asdict(r) for r in rows],
        "quality": scores,
        "machine_start": start,
        "machine_end": machine(),
    }
