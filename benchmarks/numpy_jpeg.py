"""The numpy reader's JPEG decode (issue 13): simplejpeg against Pillow's decoder.

    python benchmarks/numpy_jpeg.py --records 1500 --passes 5 --size 96

The reader-speed workload (JPEG of 200 to 320 pixels a side, 1 s of 16 kHz WAV, a
caption, 0 to 6 labelled boxes, a class label) is written once by recordkit. In one
process, the ways alternating pass by pass, ``iter_records`` reads every field in one
thread and in two, at full size and resized to ``--size`` pixels square
(``geometry=rk.ImageGeometry(size=(96, 96))``, ``jpeg_scale="auto"``: every JPEG of this
workload decodes at 1/2 in libjpeg's IDCT, then the reader resizes), with each way of
decoding the JPEGs:

* ``simplejpeg``: what the numpy reader does (libjpeg-turbo straight into a numpy array,
  one call that releases the GIL; at 1/2 with ``min_factor``);
* ``pillow``: Pillow's JPEG decoder called directly, as the reader did before (a fresh
  image, ``Image.frombytes``, the pixels packed into the array by Pillow's raw encoder;
  the allocation and the packing hold the GIL), at the same reduced size as a Pillow
  user asks for it: ``Image.draft``'s decoder configuration (libjpeg's scale), the image
  of the reduced size. The pixels are the same (checked on the first records, at full
  size and at the scale the reads took; the script fails if they differ).

Then the JPEGs alone, decoded one after the other in one thread (CPU µs an image): with
simplejpeg, with Pillow that way, and with TensorFlow's ``decode_jpeg`` in a one-thread
tf.data map (the cost of the map itself, measured with a map that does nothing, taken
off), at full size and at the scale the scaled reads took (``ratio=`` for TensorFlow).
Printed: every pass's records/s, the median and the best, the CPU time per record
(median), then the ratios of the medians.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks import _data, _recordkit
from benchmarks._reader_speed import IMAGE_SIDES

WAYS = ("simplejpeg", "pillow")
THREADS = (1, 2)
#: The reads: every picture at full size, and resized to ``--size`` (decoded scaled).
DECODES = ("full", "scaled")
#: Records whose pixels both ways must give alike before the timing.
CHECKED = 8

JpegArray = Callable[..., "np.ndarray | None"]


def _pillow_way(simplejpeg_way: JpegArray) -> JpegArray:
    """The numpy reader's JPEG decode as it was: Pillow's decoder into a fresh image, at
    1/``scale`` of the size when asked (as the reader asks simplejpeg now)."""
    from PIL import Image

    import recordkit as rk
    from recordkit_codecs import _pillow

    def decode(
        data: bytes,
        max_pixels: int,
        mode: str | None,
        size: tuple[int, int],
        fast_dct: bool = False,
        scale: int = 1,
    ) -> np.ndarray | None:
        header = _pillow._jpeg_header(data, rk.errors.DecodeError)
        natural = _pillow._JPEG_MODES.get(header.components or 0)
        if (
            natural is None
            or (mode is not None and mode != natural)
            or (header.height, header.width) != size
            or fast_dct  # Pillow's decoder has libjpeg's accurate DCT only
        ):
            return simplejpeg_way(data, max_pixels, mode, size, fast_dct, scale)  # not in this workload
        _pillow.check_pixels(header.width, header.height, max_pixels, rk.errors.DecodeError)
        # (scale, 0) is the decoder configuration Image.draft(natural, (width // scale,
        # height // scale)) sets: libjpeg's scaled IDCT, ceil(side / scale) pixels a side.
        image = Image.new(natural, (-(-header.width // scale), -(-header.height // scale)), None)
        image.frombytes(data, "jpeg", (natural, "", scale, 0))
        return _pillow.pixels_array(image)

    return decode


def _read(root: Path, threads: int, geometry: Any) -> tuple[float, float, int]:
    import recordkit as rk

    wall, cpu = time.perf_counter(), time.process_time()
    count = sum(1 for _ in rk.iter_records(root, num_threads=threads, geometry=geometry))
    return time.perf_counter() - wall, time.process_time() - cpu, count


Key = tuple[int, str, str]  # (threads, decode, way)


def _readers(
    root: Path, records: int, passes: int, size: int
) -> tuple[dict[Key, list[tuple[float, float]]], int]:
    """Every pass of ``iter_records`` in each number of threads, decode and way:
    (records/s, CPU µs a record); and the largest scale the scaled reads decoded at."""
    import recordkit as rk
    from recordkit_codecs import _pillow

    ways = {"simplejpeg": _pillow._jpeg_array}
    ways["pillow"] = _pillow_way(ways["simplejpeg"])
    geometries = {"full": None, "scaled": rk.ImageGeometry(size=(size, size), jpeg_scale="auto")}
    scales: set[int] = set()

    def seen(
        data: bytes,
        max_pixels: int,
        mode: str | None,
        size: tuple[int, int],
        fast_dct: bool = False,
        scale: int = 1,
    ) -> np.ndarray | None:
        scales.add(scale)
        return ways["simplejpeg"](data, max_pixels, mode, size, fast_dct, scale)

    runs: dict[Key, list[tuple[float, float]]] = {
        (t, d, w): [] for t in THREADS for d in DECODES for w in WAYS
    }
    try:
        for turn in range(passes + 1):  # the first turn warms up (page cache, imports)
            for threads in THREADS:
                for decode in DECODES:
                    for way in WAYS:
                        # The warm-up's simplejpeg passes note the scales the reader asks for.
                        _pillow._jpeg_array = seen if not turn and way == "simplejpeg" else ways[way]
                        wall, cpu, count = _read(root, threads, geometries[decode])
                        if count != records:
                            raise RuntimeError(f"iter_records read {count} records, not {records}")
                        if turn:
                            runs[(threads, decode, way)].append((records / wall, cpu / records * 1e6))
    finally:
        _pillow._jpeg_array = ways["simplejpeg"]
    return runs, max(scales)


def _same_pixels(jpegs: list[bytes], scale: int) -> None:
    """Both ways give the same pixels for the first :data:`CHECKED` JPEGs, at full size
    and at 1/``scale``: the comparison is of two decoders of the same output."""
    import recordkit as rk
    from recordkit_codecs import _pillow

    pillow = _pillow_way(_pillow._jpeg_array)
    for data in jpegs[:CHECKED]:
        header = _pillow._jpeg_header(data, rk.errors.DecodeError)
        size = (header.height, header.width)
        for factor in sorted({1, scale}):
            want = _pillow._jpeg_array(data, 1 << 40, None, size, False, factor)
            got = pillow(data, 1 << 40, None, size, False, factor)
            if want is None or got is None or not np.array_equal(want, got):
                raise RuntimeError(f"Pillow's and simplejpeg's pixels differ at 1/{factor} of {size}")


def _decodes_alone(jpegs: list[bytes], repeats: int, scale: int) -> dict[str, list[float]]:
    """CPU µs an image of each decoder, one image after the other in one thread, at full
    size and at 1/``scale``."""
    import simplejpeg
    import tensorflow as tf
    from PIL import Image

    from recordkit_codecs import _pillow

    def pillow(data: bytes, factor: int) -> None:
        with Image.open(io.BytesIO(data)) as opened:
            (width, height), mode = opened.size, opened.mode
        image = Image.new(mode, (-(-width // factor), -(-height // factor)), None)
        image.frombytes(data, "jpeg", (mode, "", factor, 0))  # Image.draft's configuration
        _pillow.pixels_array(image)

    def simple(data: bytes, factor: int) -> None:
        if factor == 1:
            simplejpeg.decode_jpeg(data, colorspace="RGB")
            return
        height, width = simplejpeg.decode_jpeg_header(data)[:2]
        out = (-(-height // factor), -(-width // factor))
        simplejpeg.decode_jpeg(data, colorspace="RGB", min_height=out[0], min_width=out[1], min_factor=factor)

    def python_loop(decode: Callable[[bytes, int], None], factor: int) -> Callable[[], float]:
        def run() -> float:
            cpu = time.process_time()
            for data in jpegs:
                decode(data, factor)
            return (time.process_time() - cpu) / len(jpegs) * 1e6

        return run

    def tf_map(decode: Callable[[Any], Any]) -> Callable[[], float]:
        options = tf.data.Options()
        options.autotune.enabled = False
        dataset = tf.data.Dataset.from_tensor_slices(jpegs).map(decode, num_parallel_calls=1)
        dataset = dataset.with_options(options)

        def run() -> float:
            cpu = time.process_time()
            for _ in dataset:
                pass
            return (time.process_time() - cpu) / len(jpegs) * 1e6

        return run

    def tf_decode(factor: int) -> Callable[[], float]:
        decode = tf_map(
            lambda data: tf.io.decode_jpeg(data, channels=3, ratio=factor, dct_method="INTEGER_ACCURATE")
        )
        return lambda: decode() - tf_nothing()

    tf_nothing = tf_map(tf.strings.length)
    cases: dict[str, Callable[[], float]] = {}
    for factor in sorted({1, scale}):
        suffix = "" if factor == 1 else f" 1/{factor}"
        cases[f"simplejpeg{suffix}"] = python_loop(simple, factor)
        cases[f"pillow{suffix}"] = python_loop(pillow, factor)
        cases[f"tensorflow{suffix}"] = tf_decode(factor)
    for run in cases.values():  # warm-up
        run()
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, run in cases.items():
            results[name].append(run())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--passes", type=int, default=5, help="passes per reader and way")
    parser.add_argument(
        "--size", type=int, default=96, help="side of the scaled reads' square (96: every JPEG at 1/2)"
    )
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    scratch = Path(tempfile.mkdtemp(prefix="numpy-jpeg-"))
    root = scratch / "mixed"
    try:
        written = _data.mixed_records(args.records, seed=13, sides=IMAGE_SIDES)
        _recordkit.write([_recordkit.mixed_record(r) for r in written], _recordkit.mixed_schema(), root)
        jpegs = [r.jpeg for r in written]
        runs, scale = _readers(root, args.records, args.passes, args.size)
        _same_pixels(jpegs, scale)
        print(f"{'reader':34} {'way':10} {'rec/s median':>12} {'best':>8} {'CPU us/rec':>10}   runs (rec/s)")
        medians: dict[Key, float] = {}
        suffixes = {"full": "", "scaled": f", {args.size}x{args.size}"}
        for threads in THREADS:
            for decode in DECODES:
                case = f"iter_records, {threads} thread{'s' if threads > 1 else ''}{suffixes[decode]}"
                for way in WAYS:
                    values = runs[(threads, decode, way)]
                    medians[(threads, decode, way)] = statistics.median(r for r, _ in values)
                    cpu = statistics.median(c for _, c in values)
                    each = " ".join(f"{r:,.0f}" for r, _ in values)
                    best = max(r for r, _ in values)
                    median = medians[(threads, decode, way)]
                    print(f"{case:34} {way:10} {median:12,.0f} {best:8,.0f} {cpu:10.1f}   {each}")
                ratio = medians[(threads, decode, "simplejpeg")] / medians[(threads, decode, "pillow")]
                print(f"{case:34} {'ratio':10} {ratio:11.2f}x")
        for decode in DECODES:
            for way in WAYS:
                gain = medians[(2, decode, way)] / medians[(1, decode, way)]
                print(f"{'2 threads / 1 thread' + suffixes[decode]:34} {way:10} {gain:11.2f}x")
        alone = _decodes_alone(jpegs, args.passes, scale)
        print(
            f"\n{'JPEG decode alone':34} {'decoder':15} {'us median':>9} {'best':>8}   runs (CPU us an image)"
        )
        for name, micros in alone.items():
            each = " ".join(f"{v:.0f}" for v in micros)
            print(f"{'':34} {name:15} {statistics.median(micros):9.0f} {min(micros):8.0f}   {each}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # what it wrote: not left in /tmp


if __name__ == "__main__":
    main()
