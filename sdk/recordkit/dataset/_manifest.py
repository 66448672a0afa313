"""``dataset.json``: what makes a folder of TFRecord shards a self-describing dataset.

The manifest holds the schema and its fingerprint, the codecs (with the versions and
distributions that provide them), and per split the shards with their record counts,
byte sizes and sha256. It is written last, atomically: a dataset is whatever its
manifest says, and a shard that the manifest does not list is not part of it.

While a write runs, the writer also rewrites the manifest after each completed shard,
with the split marked :class:`UnfinishedWrite`; so the manifest always lists exactly
the complete shards on disk, and an interrupted write can be resumed from it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

import pydantic

from recordkit.errors import ManifestError
from recordkit.schema._schema import Schema

__all__ = ["MANIFEST_FILE", "CodecProvenance", "Manifest", "ShardInfo", "SplitInfo", "UnfinishedWrite"]

MANIFEST_FILE = "dataset.json"
FORMAT: Literal["recordkit.dataset/1"] = "recordkit.dataset/1"


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class ShardInfo(_Model):
    """One complete shard file."""

    file: str = pydantic.Field(description="File name, relative to the dataset root.")
    records: int = pydantic.Field(ge=0, description="Number of records in the shard.")
    bytes: int = pydantic.Field(ge=0, description="File size in bytes (as stored, compressed or not).")
    sha256: str = pydantic.Field(description="Hex sha256 of the file's bytes.")


class UnfinishedWrite(_Model):
    """A write to a split that has not finished (still running, or stopped).

    The writer records it when the write starts and updates it with every completed
    shard; it disappears when the write finishes. ``resume=True`` reads it to skip the
    input records that the complete shards already hold.
    """

    consumed: int = pydantic.Field(
        ge=0,
        description=(
            "Records of the unfinished write's input that its complete shards hold or that "
            "were rejected; a resumed write skips this many input records."
        ),
    )
    started: str = pydantic.Field(description="When the unfinished write started (ISO 8601, UTC).")


class SplitInfo(_Model):
    """One split (train, validation ...) and its shards, in order."""

    shards: list[ShardInfo] = pydantic.Field(default_factory=list)
    rejected: int = pydantic.Field(default=0, ge=0, description="Records skipped as invalid.")
    rejects_file: str | None = pydantic.Field(
        default=None, description="JSON-lines file listing each rejected record and why."
    )
    unfinished: UnfinishedWrite | None = pydantic.Field(
        default=None,
        description=(
            "Present while a write to this split has not finished: the listed shards are "
            "complete and valid, but more records may follow (see resume)."
        ),
    )

    @property
    def num_records(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def num_bytes(self) -> int:
        return sum(s.bytes for s in self.shards)


class CodecProvenance(_Model):
    """Which codec version wrote a field, and which distribution provided it."""

    version: str
    plugin: str | None = None
    distribution: str | None = None
    distribution_version: str | None = None


class Manifest(_Model):
    """The content of ``dataset.json``."""

    format: Literal["recordkit.dataset/1"] = FORMAT
    recordkit_version: str
    created: str = pydantic.Field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    )
    schema_: Schema = pydantic.Field(alias="schema")
    fingerprint: str
    codecs: dict[str, CodecProvenance]
    compression: Literal["", "GZIP", "ZLIB"] = ""
    splits: dict[str, SplitInfo] = pydantic.Field(default_factory=dict)

    model_config = pydantic.ConfigDict(extra="forbid", populate_by_name=True)

    @property
    def schema(self) -> Schema:  # type: ignore[override]  # pydantic's deprecated BaseModel.schema
        return self.schema_

    def split(self, name: str) -> SplitInfo:
        try:
            return self.splits[name]
        except KeyError:
            raise ManifestError(
                f"no split {name!r} (splits: {', '.join(sorted(self.splits)) or 'none'})"
            ) from None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2, exclude_none=True) + "\n"

    @classmethod
    def load(cls, root: str | Path) -> Manifest:
        """Read ``<root>/dataset.json``; ManifestError when missing or malformed."""
        path = Path(root) / MANIFEST_FILE
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ManifestError(
                f"no {MANIFEST_FILE}: not a recordkit dataset", file=str(Path(root))
            ) from None
        try:
            data: Any = json.loads(raw)
            return cls.model_validate(data)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ManifestError(f"invalid manifest: {problems}", file=str(path)) from None

    def save(self, root: str | Path, *, durable: bool = True) -> None:
        """Write atomically: a temp file in the same folder, fsynced (when ``durable``),
        then renamed."""
        root = Path(root)
        fd, tmp = tempfile.mkstemp(prefix=".dataset.", suffix=".json.tmp", dir=root)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(self.to_json())
                out.flush()
                if durable:
                    os.fsync(out.fileno())
            os.replace(tmp, root / MANIFEST_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
