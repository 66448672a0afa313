"""The image codec's ``jpeg_dct`` choice (issue 30): libjpeg's accurate integer DCT (the
default) against its fast one (TensorFlow's own default), in speed and in quality.

    python benchmarks/jpeg_dct.py --images 300 --passes 5

The photos are the tf.data field benchmark's (``benchmarks/_tfdata_fields.py``): noisy
photo-like pictures of 200 to 320 px a side, stored as JPEG at quality 90. For each DCT,
in one process with the methods alternating pass by pass:

* ``tf.io.decode_jpeg(channels=3, dct_method=...)`` in a one-thread ``tf.data`` map, CPU µs
  an image (the map's own cost, measured with a map that does nothing, taken off);
* the numpy reader's decode (simplejpeg, ``fastdct`` for the fast one), CPU µs an image;
* the PSNR of the decoded pixels against the pixels the JPEGs were encoded from (all
  images together), and between the two methods' pixels.

Printed: every pass's CPU µs an image, the median and the minimum, the ratio of the
medians, and the PSNRs.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from benchmarks import _data, _tfdata_fields

#: tf.io.decode_jpeg's dct_method of each jpeg_dct choice (the image codec's table).
METHODS = {"accurate": "INTEGER_ACCURATE", "fast": "INTEGER_FAST"}


def photos(count: int, seed: int = 30) -> tuple[list[np.ndarray], list[bytes]]:
    """``count`` pictures of the field benchmark's kind, and their JPEG bytes (quality 90)."""
    rng = np.random.default_rng(seed)
    low, high = _tfdata_fields.SIDES
    pixels = []
    for _ in range(count):
        height, width = (int(v) for v in rng.integers(low, high + 1, size=2))
        pixels.append(_data.photo_like(rng, height, width))
    return pixels, [_data._jpeg(p) for p in pixels]


def tf_decoder(jpegs: list[bytes], dct_method: str | None) -> Any:
    """A one-thread tf.data map over the JPEGs: ``decode_jpeg`` with ``dct_method``, or
    nothing (None: the map's own cost)."""
    import tensorflow as tf

    def decode(data: Any) -> Any:
        if dct_method is None:
            return tf.strings.length(data)
        return tf.io.decode_jpeg(data, channels=3, dct_method=dct_method)

    dataset = tf.data.Dataset.from_tensor_slices(jpegs).map(decode)
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.autotune.enabled = False
    return dataset.with_options(options)


def numpy_decoder(jpegs: list[bytes], fast: bool) -> Callable[[], None]:
    """The numpy reader's JPEG decode (simplejpeg) of every JPEG, in this thread."""
    import simplejpeg

    def run() -> None:
        for data in jpegs:
            simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=fast, fastupsample=False)

    return run


def _drain(dataset: Any) -> None:
    """Every element of ``dataset``, computed and dropped."""
    for _ in dataset:
        pass


def cpu_seconds(run: Callable[[], None]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def psnr(decoded: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """PSNR (dB) of all ``decoded`` pixels against ``reference`` together."""
    squared = sum(
        float(np.sum((a.astype(np.float64) - b) ** 2)) for a, b in zip(decoded, reference, strict=True)
    )
    count = sum(a.size for a in decoded)
    return math.inf if squared == 0 else 10 * math.log10(255.0**2 / (squared / count))


def run(images: int, passes: int) -> dict[str, Any]:
    """Every pass's CPU µs an image for each DCT and decoder, and the PSNRs."""
    pixels, jpegs = photos(images)
    cases: dict[str, Callable[[], None]] = {}
    empty = tf_decoder(jpegs, None)
    for name, method in METHODS.items():
        dataset = tf_decoder(jpegs, method)
        cases[f"tensorflow, {name}"] = functools.partial(_drain, dataset)
        cases[f"simplejpeg, {name}"] = numpy_decoder(jpegs, name == "fast")
    cases["tf.data map alone"] = functools.partial(_drain, empty)
    for case in cases.values():  # warm-up
        case()
    timings: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for round_ in range(passes):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            timings[name].append(cpu_seconds(cases[name]) / images * 1e6)
    overhead = statistics.median(timings.pop("tf.data map alone"))
    for name in list(timings):
        if name.startswith("tensorflow"):
            timings[name] = [t - overhead for t in timings[name]]
    decoded = {name: _tf_pixels(jpegs, method) for name, method in METHODS.items()}
    return {
        "images": images,
        "passes": passes,
        "cpu_us": timings,
        "psnr_db": {
            "accurate vs source": psnr(decoded["accurate"], pixels),
            "fast vs source": psnr(decoded["fast"], pixels),
            "fast vs accurate": psnr(decoded["fast"], decoded["accurate"]),
        },
        "max_difference_fast_vs_accurate": max(
            int(np.max(np.abs(a.astype(np.int16) - b)))
            for a, b in zip(decoded["fast"], decoded["accurate"], strict=True)
        ),
        "machine": _tfdata_fields.machine(),
    }


def _tf_pixels(jpegs: list[bytes], method: str) -> list[np.ndarray]:
    import tensorflow as tf

    return [tf.io.decode_jpeg(data, channels=3, dct_method=method).numpy() for data in jpegs]


def report(out: dict[str, Any]) -> str:
    """The table of CPU µs an image and the PSNRs."""
    lines = [
        "| decoder, DCT | CPU µs/image (median) | CPU µs/image (min) | every pass |",
        "| --- | ---: | ---: | --- |",
    ]
    timings = out["cpu_us"]
    for name, values in timings.items():
        passes = ", ".join(f"{v:.1f}" for v in values)
        lines.append(f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | {passes} |")
    for decoder in ("tensorflow", "simplejpeg"):
        ratio = statistics.median(timings[f"{decoder}, accurate"]) / statistics.median(
            timings[f"{decoder}, fast"]
        )
        lines.append(f"| {decoder}: accurate / fast (medians) | {ratio:.3f}x | | |")
    lines.append("")
    lines.append("| PSNR | dB |")
    lines.append("| --- | ---: |")
    lines += [f"| {name} | {value:.2f} |" for name, value in out["psnr_db"].items()]
    lines.append(
        f"| largest difference, fast vs accurate (levels) | {out['max_difference_fast_vs_accurate']} |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--passes", type=int, default=5, help="passes of every case, alternating")
    args = parser.parse_args(argv)
    out = run(args.images, args.passes)
    print(f"conditions: {out['machine']}")
    print(report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
