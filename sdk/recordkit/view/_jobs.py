"""Work the viewer does in the background: a split's statistics (the per-field summaries
of ``recordkit stats``, :class:`~recordkit.tools._field_stats.FieldStats`) with their progress,
kept in a cache folder so a second opening does not compute them again; and a verify run
(``recordkit verify``'s checks, :func:`~recordkit.tools._verify.verify_dataset`).

The cache file is named by a digest of the dataset's fingerprint and the split, never by
anything a request or the dataset's files say; it lives under the user's cache folder
unless the user names another.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from recordkit.dataset._manifest import read_manifest
from recordkit.errors import RecordkitError
from recordkit.storage import StorageOptions
from recordkit.tools._common import dataset_location, describe_error
from recordkit.tools._field_stats import FieldStats, json_safe
from recordkit.tools._verify import verify_dataset
from recordkit.view._viewer import Viewer

__all__ = ["StatsJob", "VerifyJob", "default_cache_dir", "histograms"]

#: Bars of a histogram of numbers (whole numbers with fewer distinct values get one each).
BINS = 20


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/recordkit/view`` (``~/.cache/recordkit/view`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recordkit" / "view"


def histograms(stats: FieldStats) -> dict[str, list[tuple[float, float, int]]]:
    """Per summary of ``stats``, its sample as bars ``(low, high, count)``: one per value
    when the values are few whole numbers (boxes per record), else BINS equal ranges."""
    out: dict[str, list[tuple[float, float, int]]] = {}
    for name, summary in stats.summaries.items():
        sample = np.asarray(summary.sample, dtype=np.float64)
        sample = sample[np.isfinite(sample)]
        if not sample.size:
            continue
        values, counts = np.unique(sample, return_counts=True)
        if values.size <= BINS * 2 and np.all(values == np.round(values)):
            out[name] = [(float(v), float(v), int(c)) for v, c in zip(values, counts, strict=True)]
        else:
            counts, edges = np.histogram(sample, bins=BINS)
            out[name] = [(float(edges[i]), float(edges[i + 1]), int(c)) for i, c in enumerate(counts)]
    return out


@dataclasses.dataclass
class StatsJob:
    """The statistics of one split, computed once in a background thread."""

    viewer: Viewer
    split: str
    cache_dir: Path
    done: int = 0
    total: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    _thread: threading.Thread | None = None

    @property
    def cache_file(self) -> Path | None:
        manifest = self.viewer.dataset.manifest
        if manifest is None:
            return None
        # Named by a digest: the fingerprint and split names come from the dataset's own
        # manifest, which must not choose where a file is written.
        name = hashlib.sha256(f"{manifest.fingerprint}\0{self.split}".encode()).hexdigest()[:40]
        return self.cache_dir / f"stats-{name}.json"

    def start(self) -> None:
        """Load the kept statistics, or start computing them (once)."""
        if self._thread is not None or self.result is not None:
            return
        cached = self.cache_file
        if cached is not None and cached.is_file():
            try:
                kept = json.loads(cached.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                kept = None  # an unreadable cache is computed again
            if isinstance(kept, dict) and {"fields", "histograms"} <= set(kept):
                self.result = kept
                return
        self._thread = threading.Thread(target=self._run, name=f"stats-{self.split}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            handle = self.viewer.handle(self.split)
            self.total = len(handle)
            stats = {field.name: FieldStats(field) for field in self.viewer.fields}
            for record in handle.records():
                for name, value in record.items():
                    stats[name].add(value)
                self.done += 1
            result = {
                "fields": json_safe({name: field.to_json() for name, field in stats.items()}),
                "histograms": {name: histograms(field) for name, field in stats.items()},
            }
            self._keep(result)
            self.result = result
        except (RecordkitError, OSError) as exc:
            self.error = describe_error(exc)

    def _keep(self, result: dict[str, Any]) -> None:
        cached = self.cache_file
        if cached is None:
            return
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            temporary = cached.with_suffix(".tmp")
            temporary.write_text(json.dumps(result), encoding="utf-8")
            temporary.replace(cached)
        except OSError:
            pass  # not kept: the next opening computes them again

    def progress(self) -> dict[str, Any]:
        return {"done": self.done, "total": self.total, "ready": self.result is not None, "error": self.error}


@dataclasses.dataclass
class VerifyJob:
    """One verify run of every split, in a background thread: per shard, its problems."""

    location: str
    storage_options: StorageOptions | None
    running: bool = False
    rows: list[dict[str, Any]] | None = None
    error: str | None = None

    def start(self) -> None:
        if self.running:
            return
        self.running, self.rows, self.error = True, None, None
        threading.Thread(target=self._run, name="verify", daemon=True).start()

    def _run(self) -> None:
        try:
            root = dataset_location(self.location, self.storage_options)
            manifest = read_manifest(root)
            checks = verify_dataset(root, manifest, list(manifest.splits))
            self.rows = [
                {"split": c.split, "shard": c.shard.file, "records": c.records, "problems": list(c.problems)}
                for c in checks
            ]
        except Exception as exc:  # a run that fails shows its error; the server goes on
            self.error = describe_error(exc)
        finally:
            self.running = False
