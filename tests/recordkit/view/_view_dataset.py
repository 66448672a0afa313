"""The dataset the viewer's tests look at: grey pictures with one green square each and
its box, a class, a caption (some holding HTML), a sound on some records and a tensor;
and a viewer served on 127.0.0.1 in a thread."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvicorn

import recordkit as rk
from recordkit.view import bind, create_app, open_viewer
from recordkit.view._serve import address

SCHEMA = rk.Schema.loads(
    """
name: viewed
fields:
  image: {codec: image, options: {format: png, channels: 3}}
  label: {codec: label, options: {names: [cat, dog]}}
  objects: {codec: bbox, options: {labels: [square]}}
  caption: {codec: text, optional: true}
  sound: {codec: audio, optional: true, options: {format: wav, sample_rate: 8000}}
  embedding: {codec: tensor, options: {dtype: float32, shape: [16]}}
"""
)

#: Side of the pictures (as wide as show's drawings: drawn at scale 1), and where each
#: record's green square sits (pixels), away from the legend's swatches on the left.
SIDE = 320
SQUARE = (160, 100, 260, 200)  # x0, y0, x1, y1
GREY = 90
GREEN = (0, 200, 0)
#: The caption of record 1: HTML that must be shown as text.
SCRIPT = '<script>document.title = "owned"</script><b>bold?</b>'


def records(count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        image = np.full((SIDE, SIDE, 3), GREY, np.uint8)
        x0, y0, x1, y1 = SQUARE
        image[y0:y1, x0:x1] = GREEN
        box = np.array([[x0 / SIDE, y0 / SIDE, x1 / SIDE, y1 / SIDE]], np.float32)
        tone = np.sin(np.arange(8000, dtype=np.float32) * 2 * np.pi * 440 / 8000) * 0.5
        out.append(
            {
                "image": image,
                "label": "dog" if i % 3 == 0 else "cat",
                "objects": {"boxes": box, "labels": ["square"]},
                "caption": SCRIPT if i == 1 else f"picture {i}",
                "sound": tone if i % 2 == 0 else None,
                "embedding": np.arange(16, dtype=np.float32) + i,
            }
        )
    return out


def write(root: Path | str, count: int, storage_options: dict[str, Any] | None = None) -> None:
    rk.write_dataset(
        records(count), SCHEMA, root, "train", shard_records=25, progress=False,
        storage_options=storage_options,
    )  # fmt: skip


@contextlib.contextmanager
def served(location: str, cache_dir: Path, storage_options: dict[str, Any] | None = None) -> Iterator[str]:
    """The viewer of ``location`` served on a free port of 127.0.0.1: its address."""
    viewer = open_viewer(location, None, storage_options)
    sock = bind("127.0.0.1", 0)
    app = create_app(viewer, cache_dir=cache_dir, hosts=["127.0.0.1"])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield address(sock)
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=30)
