"""The numpy reader's JPEG decode (issue 13): simplejpeg against Pillow's decoder.

    python benchmarks/numpy_jpeg.py --records 1500 --passes 5

The reader-speed workload (JPEG of 200 to 320 pixels a side, 1 s of 16 kHz WAV, a
caption, 0 to 6 labelled boxes, a class label) is written once by recordkit. In one
process, the ways alternating pass by pass, ``iter_records`` reads every field in one
thread and in two, with each way of decoding the JPEGs:

* ``simplejpeg``: what the numpy reader does (libjpeg-turbo straight into a numpy array,
  one call that releases the GIL);
* ``pillow``: Pillow's JPEG decoder called directly, as the reader did before (a fresh
  image, ``Image.frombytes``, the pixels packed into the array by Pillow's raw encoder;
  the allocation and the packing hold the GIL). The pixels are the same.

Then the JPEGs alone, decoded one after the other in one thread (CPU µs an image): with
simplejpeg, with Pillow that way, and with TensorFlow's ``decode_jpeg`` in a one-thread
tf.data map (the cost of the map itself, measured with a map that does nothing, taken
off). Printed: every pass's records/s, the median and the best, the CPU time per record
(median), then the ratios of the medians.
"""

from __future__ import annotations

import argparse
import io
import os
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


def _pillow_way(simplejpeg_way: Callable[..., np.ndarray | None]) -> Callable[..., np.ndarray | None]:
    """The numpy reader's JPEG decode as it was: Pillow's decoder into a fresh image."""
    from PIL import Image

    import recordkit as rk
    from recordkit_codecs import _pillow

    def decode(
        data: bytes, max_pixels: int, mode: str | None, size: tuple[int, int], fast_dct: bool = False
    ) -> np.ndarray | None:
        header = _pillow._jpeg_header(data, rk.errors.DecodeError)
        natural = _pillow._JPEG_MODES.get(header.components or 0)
        if natural is None or (mode is not None and mode != natural) or (header.height, header.width) != size:
            return simplejpeg_way(data, max_pixels, mode, size, fast_dct)  # not in this workload
        _pillow.check_pixels(header.width, header.height, max_pixels, rk.errors.DecodeError)
        image = Image.new(natural, (header.width, header.height), None)
        image.frombytes(data, "jpeg", (natural, ""))
        return _pillow.pixels_array(image)

    return decode


def _read(root: Path, threads: int) -> tuple[float, float, int]:
    import recordkit as rk

    wall, cpu = time.perf_counter(), time.process_time()
    count = sum(1 for _ in rk.iter_records(root, num_threads=threads))
    return time.perf_counter() - wall, time.process_time() - cpu, count


def _readers(root: Path, records: int, passes: int) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """Every pass of ``iter_records`` in each number of threads and way: (records/s, CPU µs a record)."""
    from recordkit_codecs import _pillow

    ways = {"simplejpeg": _pillow._jpeg_array}
    ways["pillow"] = _pillow_way(ways["simplejpeg"])
    runs: dict[tuple[int, str], list[tuple[float, float]]] = {(t, w): [] for t in THREADS for w in WAYS}
    try:
        for turn in range(passes + 1):  # the first turn warms up (page cache, imports)
            for threads in THREADS:
                for way in WAYS:
                    _pillow._jpeg_array = ways[way]
                    wall, cpu, count = _read(root, threads)
                    if count != records:
                        raise RuntimeError(f"iter_records read {count} records, not {records}")
                    if turn:
                        runs[(threads, way)].append((records / wall, cpu / records * 1e6))
    finally:
        _pillow._jpeg_array = ways["simplejpeg"]
    return runs


def _decodes_alone(jpegs: list[bytes], repeats: int) -> dict[str, list[float]]:
    """CPU µs an image of each decoder, one image after the other in one thread."""
    import simplejpeg
    import tensorflow as tf
    from PIL import Image

    from recordkit_codecs import _pillow

    def pillow(data: bytes) -> None:
        with Image.open(io.BytesIO(data)) as opened:
            size, mode = opened.size, opened.mode
        image = Image.new(mode, size, None)
        image.frombytes(data, "jpeg", (mode, ""))
        _pillow.pixels_array(image)

    def python_loop(decode: Callable[[bytes], Any]) -> float:
        cpu = time.process_time()
        for data in jpegs:
            decode(data)
        return (time.process_time() - cpu) / len(jpegs) * 1e6

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

    tf_decode = tf_map(lambda data: tf.io.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE"))
    tf_nothing = tf_map(tf.strings.length)
    cases: dict[str, Callable[[], float]] = {
        "simplejpeg": lambda: python_loop(lambda data: simplejpeg.decode_jpeg(data, colorspace="RGB")),
        "pillow": lambda: python_loop(pillow),
        "tensorflow": lambda: tf_decode() - tf_nothing(),
    }
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
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    root = Path(tempfile.mkdtemp(prefix="numpy-jpeg-")) / "mixed"
    written = _data.mixed_records(args.records, seed=13, sides=IMAGE_SIDES)
    _recordkit.write([_recordkit.mixed_record(r) for r in written], _recordkit.mixed_schema(), root)
    runs = _readers(root, args.records, args.passes)
    print(f"{'reader':26} {'way':10} {'rec/s median':>12} {'best':>8} {'CPU us/rec':>10}   runs (rec/s)")
    medians: dict[tuple[int, str], float] = {}
    for threads in THREADS:
        case = f"iter_records, {threads} thread{'s' if threads > 1 else ''}"
        for way in WAYS:
            values = runs[(threads, way)]
            medians[(threads, way)] = statistics.median(r for r, _ in values)
            cpu = statistics.median(c for _, c in values)
            each = " ".join(f"{r:,.0f}" for r, _ in values)
            best = max(r for r, _ in values)
            print(f"{case:26} {way:10} {medians[(threads, way)]:12,.0f} {best:8,.0f} {cpu:10.1f}   {each}")
        ratio = medians[(threads, "simplejpeg")] / medians[(threads, "pillow")]
        print(f"{case:26} {'ratio':10} {ratio:11.2f}x")
    for way in WAYS:
        print(f"{'2 threads / 1 thread':26} {way:10} {medians[(2, way)] / medians[(1, way)]:11.2f}x")
    alone = _decodes_alone([r.jpeg for r in written], args.passes)
    print(f"\n{'JPEG decode alone':26} {'decoder':10} {'us median':>12} {'best':>8}   runs (CPU us an image)")
    for name, micros in alone.items():
        each = " ".join(f"{v:.0f}" for v in micros)
        print(f"{'':26} {name:10} {statistics.median(micros):12.0f} {min(micros):8.0f}   {each}")


if __name__ == "__main__":
    main()
