"""recordkit's demo: a multimodal dataset generated on the fly, written and read back.

Run it with ``make demo`` (which sets up the environment first) or
``python examples/demo.py --out demo_output``. It

1. draws pictures of coloured shapes with Pillow, knowing each shape's box, and makes a
   caption describing them, a one-second tone whose pitch names the largest shape and
   that shape's class;
2. writes them with the schema in ``examples/shapes.yaml`` as a sharded dataset with a
   train and a validation split (``dataset.json`` + TFRecord shards);
3. shows where the bytes go, field by field;
4. reads the dataset back two ways, with the generated tf.data pipeline (batched,
   images brought to one size) and without TensorFlow, and checks that every value read
   equals what was written: pixels and audio samples exactly, boxes within 1e-6;
5. closes with the speed on this machine: records/s written and read (tf.data and
   numpy), and the bytes each field takes per record.

TensorFlow prints a few start-up lines on stderr (no GPU found, CPU features); they are
harmless, see docs/troubleshooting.md.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Set before TensorFlow is first imported (recordkit imports it only when reading). Level
# 3 hides TensorFlow's C++ log lines (the CPU-feature notice, "failed call to cuInit" on a
# machine without a GPU); the "Could not find cuda drivers" lines come before its logging
# starts and no setting hides them. See docs/troubleshooting.md.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # after the environment above: it must be set before TensorFlow loads
from PIL import Image, ImageDraw

import recordkit as rk

HERE = Path(__file__).resolve().parent
CLASSES = ("square", "circle", "triangle")
COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "orange": (240, 150, 30)}
PITCH_HZ = {"square": 330.0, "circle": 440.0, "triangle": 660.0}
SAMPLE_RATE = 16_000


def make_record(rng: random.Random) -> dict[str, Any]:
    """One record: a picture with 1 to 3 shapes, their boxes, a caption, a tone, a label."""
    width, height = rng.randint(48, 112), rng.randint(48, 112)
    picture = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(picture)
    boxes, labels, words, areas = [], [], [], []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(CLASSES)
        colour = rng.choice(list(COLOURS))
        size = rng.randint(12, max(13, min(width, height) // 2))
        x0, y0 = rng.randint(0, width - size), rng.randint(0, height - size)
        x1, y1 = x0 + size, y0 + size
        if kind == "square":
            draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=COLOURS[colour])
        elif kind == "circle":
            draw.ellipse((x0, y0, x1 - 1, y1 - 1), fill=COLOURS[colour])
        else:
            draw.polygon([(x0, y1 - 1), ((x0 + x1) / 2, y0), (x1 - 1, y1 - 1)], fill=COLOURS[colour])
        boxes.append([x0, y0, x1, y1])
        labels.append(kind)
        words.append(f"a {colour} {kind}")
        areas.append(size * size)
    main = labels[int(np.argmax(areas))]
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    tone = (0.5 * np.sin(2 * math.pi * PITCH_HZ[main] * t) * 32767).astype(np.int16)
    return {
        "image": np.asarray(picture),
        "tone": tone,
        "caption": " and ".join(words),
        "objects": {"boxes": np.asarray(boxes, np.float32), "labels": labels},
        "label": main,
    }


def generate(count: int, seed: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield make_record(rng)


def check_equal(index: int, written: dict[str, Any], read: dict[str, Any]) -> None:
    """Fail loudly unless one record read back equals the one written."""

    def expect(ok: bool, what: str) -> None:
        if not ok:
            raise SystemExit(f"record {index}: {what} read back differs from what was written")

    expect(np.array_equal(np.asarray(read["image"]), written["image"]), "image pixels")
    samples = np.asarray(read["tone"]).reshape(-1)
    expect(np.array_equal(np.round(samples * 32768).astype(np.int16), written["tone"]), "audio samples")
    expect(read["caption"] == written["caption"], "caption")
    objects = read["objects"]
    expect(np.allclose(objects["boxes"], written["objects"]["boxes"], atol=1e-6), "boxes")
    names = [CLASSES[int(i)] for i in np.asarray(objects["labels"]).reshape(-1)]
    expect(names == written["objects"]["labels"], "box labels")
    expect(CLASSES[int(read["label"])] == written["label"], "label")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("demo_output"), help="dataset folder (replaced)")
    parser.add_argument("--records", type=int, default=400, help="training records to generate")
    parser.add_argument("--workers", type=int, default=2, help="encoding processes")
    args = parser.parse_args(argv)

    schema = rk.Schema.load(HERE / "shapes.yaml")
    if args.out.exists():
        shutil.rmtree(args.out)
    print(f"schema {schema.name!r} {schema.version}, fingerprint {schema.fingerprint()[:19]}...")
    print("fields:", ", ".join(f"{name} ({spec.codec})" for name, spec in schema.fields.items()))

    # 1-2. Generate, then write: two splits, small shards so that there are several. The
    # records are drawn first so that the timing is the writer's alone.
    n_val = max(args.records // 4, 8)
    train, validation = list(generate(args.records, seed=1)), list(generate(n_val, seed=2))
    started = time.perf_counter()
    with rk.DatasetWriter(args.out, schema, shard_bytes=1 << 20, workers=args.workers) as writer:
        writer.write_all(train, split="train")
        writer.write_all(validation, split="validation")
    write_seconds = time.perf_counter() - started
    manifest = rk.Manifest.load(args.out)
    for name, split in manifest.splits.items():
        print(
            f"wrote {name}: {split.num_records} records in {len(split.shards)} shards, "
            f"{split.num_bytes / 1e6:.2f} MB"
        )

    # 3. Where the bytes go, averaged over the validation split.
    bound = schema.bind()
    totals: dict[str, int] = {}
    encoder = rk.RecordEncoder(bound)
    for record in validation:
        for part, size in rk.byte_breakdown(bound, encoder.encode(record)).items():
            totals[part] = totals.get(part, 0) + size

    # 4a. Read back without TensorFlow: every value equal to what was written.
    count = 0
    for count, (written, read) in enumerate(
        zip(generate(n_val, seed=2), rk.iter_records(args.out, split="validation"), strict=True), start=1
    ):
        check_equal(count - 1, written, read)
    print(f"iter_records: {count} validation records read back equal (no TensorFlow involved)")

    # 4b. The generated tf.data pipeline: unbatched, one shard at a time (so in written
    # order) for the equality check; then shuffled and batched as for training.
    dataset = rk.load_dataset(args.out, split="train", cycle_length=1)
    count = 0
    for count, (written, read) in enumerate(
        zip(generate(args.records, seed=1), dataset.as_numpy_iterator(), strict=True), start=1
    ):
        read["caption"] = read["caption"].decode("utf-8")
        check_equal(count - 1, written, read)
    print(f"load_dataset: {count} train records read back equal through tf.data")

    batches = rk.load_dataset(
        args.out,
        split="train",
        batch_size=32,
        image_size=(64, 64),
        shuffle_files=True,
        shuffle_buffer=256,
        seed=0,
    )
    batch = next(iter(batches))
    shapes = {
        name: tuple(getattr(value, "shape", ()))
        for name, value in batch.items()
        if not isinstance(value, dict)
    }
    print("one training batch:", ", ".join(f"{k} {list(v)}" for k, v in shapes.items()))

    # 5. The speed on this machine: each reader timed over the whole train split, on its
    # own (no checking), after the passes above warmed the file cache and TensorFlow.
    started = time.perf_counter()
    for _ in rk.load_dataset(args.out, split="train", batch_size=32):
        pass
    tf_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for _ in rk.iter_records(args.out, split="train"):
        pass
    numpy_seconds = time.perf_counter() - started
    written = args.records + n_val
    print(f"speed on this machine ({args.records} train records; small runs are dominated by start-up):")
    print(f"  written  {written / write_seconds:8.0f} records/s ({args.workers} encoding workers)")
    print(f"  read     {args.records / tf_seconds:8.0f} records/s with tf.data (batches of 32, decoded)")
    print(f"  read     {args.records / numpy_seconds:8.0f} records/s without TensorFlow (iter_records)")
    print("bytes per record, by field:", ", ".join(f"{k} {v / n_val:.0f}" for k, v in totals.items()))
    print(f"demo OK: dataset at {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
