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
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

import pydantic

from recordkit._limits import MAX_NESTING, nesting_depth
from recordkit.dataset._format import FormatVersion, check_readable, format_for
from recordkit.dataset._paths import check_member_name
from recordkit.dataset._picture_sizes import PictureSizes
from recordkit.dataset._shard_info import ShardIndex, ShardInfo, StrictModel
from recordkit.dataset._shard_table import ShardTable, table_file_name, total_records
from recordkit.dataset._table_files import keep_previous_table
from recordkit.errors import ManifestError
from recordkit.schema._card import DatasetCard
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.storage import Location, PathOrUrl, StorageOptions, location

__all__ = [
    "MANIFEST_FILE",
    "CodecProvenance",
    "FieldGroup",
    "GroupShardInfo",
    "Manifest",
    "SHARD_TABLE_FROM",
    "ShardIndex",
    "ShardInfo",
    "ShardTableFile",
    "SplitInfo",
    "UnfinishedWrite",
    "read_manifest",
    "write_manifest",
]

MANIFEST_FILE = "dataset.json"
#: The format written for a dataset without field groups (the versions, and which is
#: written when: :mod:`recordkit.dataset._format`). Version 1 manifests (no record
#: index) are still read, and ``recordkit index`` upgrades them.
FORMAT: FormatVersion = format_for(field_groups=False)
#: Splits of at least this many shards are listed by a shard table when saved (format
#: :func:`~recordkit.dataset._format.format_for` says).
SHARD_TABLE_FROM = 1000


class ShardTableFile(StrictModel):
    """Where a split's shards are listed when there are many: a shard table file."""

    file: str = pydantic.Field(description="File name of the shard table, relative to the dataset root.")
    sha256: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$", description="Hex sha256 of the table's bytes.")
    shards: int = pydantic.Field(ge=0, description="Number of shards the table lists.")

    @pydantic.field_validator("file")
    @classmethod
    def _inside_the_dataset(cls, value: str) -> str:
        return check_member_name(value, what="shard_table file")


class GroupShardInfo(ShardInfo):
    """One shard of a field group, and the split's shard it is aligned with."""

    aligned_with: str = pydantic.Field(
        pattern=r"^([0-9a-f]{64})?$",
        description=(
            "The sha256 of the split's shard whose records this shard's records belong to: a group "
            "shard listed beside another shard of the split is refused."
        ),
    )


class UnfinishedWrite(StrictModel):
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
    shards_before: int | None = pydantic.Field(
        default=None,
        ge=0,
        description=(
            "For an append to a finished split: how many of the listed shards the split had "
            "before it. Readers read only those until the append finishes, so they see the "
            "dataset as it was or as it is after the append, never a part of the append."
        ),
    )


class CodecProvenance(StrictModel):
    """Which codec version wrote a field, and which distribution provided it."""

    version: str
    plugin: str | None = None
    distribution: str | None = None
    distribution_version: str | None = None


class FieldGroup(StrictModel):
    """Fields added to a split after it was written (:func:`recordkit.add_fields`), in
    their own shards: shard ``i`` of the group holds, for each record of the split's
    shard ``i`` and in the same order, a ``tf.train.Example`` of the group's fields.
    Readers join the two, so the group's fields read as fields of the schema."""

    fields: dict[str, FieldSpec] = pydantic.Field(description="The group's fields, by name, in order.")
    codecs: dict[str, CodecProvenance] = pydantic.Field(
        description="The codecs that wrote the group's fields (version and distribution), by codec name."
    )
    shards: list[GroupShardInfo] = pydantic.Field(
        default_factory=list, description="The group's shards, one per shard of the split, in the same order."
    )
    unfinished: Literal[True] | None = pydantic.Field(
        default=None,
        description=(
            "Present while the group is being written: its listed shards are complete, more "
            "follow; readers leave the group out (add_fields resumes it)."
        ),
    )

    @pydantic.field_validator("fields")
    @classmethod
    def _some_fields(cls, fields: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        if not fields:
            raise ValueError("a field group needs at least one field")
        return fields


class SplitInfo(StrictModel):
    """One split (train, validation ...) and its shards, in order."""

    shards: list[ShardInfo] = pydantic.Field(default_factory=list)
    shard_table: ShardTableFile | None = pydantic.Field(
        default=None,
        description="Instead of shards: the file that lists them as columns (a split of many shards).",
    )
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
    field_groups: dict[str, FieldGroup] | None = pydantic.Field(
        default=None,
        description="Fields added to the split after it was written, by group name (format 3).",
    )
    picture_sizes: dict[str, PictureSizes] | None = pydantic.Field(
        default=None,
        description=(
            "The smallest and largest height and width of each picture field's pictures in the split, "
            "by field name (format 6): readers that resize choose one decode for every picture from them."
        ),
    )

    @pydantic.field_serializer("shards", mode="wrap")
    def _as_a_list(self, shards: Any, handler: pydantic.SerializerFunctionWrapHandler) -> Any:
        # A shard table (loaded from a dataset that lists one) dumps as the list it stands for.
        return handler(list(shards) if isinstance(shards, ShardTable) else shards)

    @pydantic.field_validator("rejects_file")
    @classmethod
    def _inside_the_dataset(cls, value: str | None) -> str | None:
        return None if value is None else check_member_name(value, what="rejects_file")

    @pydantic.model_validator(mode="after")
    def _groups_aligned(self) -> SplitInfo:
        """Each field group has a shard per shard of the split (fewer while it is being
        written), each with as many records as the split's: a misaligned group would
        join records that do not belong together."""
        for name, group in (self.field_groups or {}).items():
            if len(group.shards) > len(self.shards) or (
                group.unfinished is None and len(group.shards) != len(self.shards)
            ):
                raise ValueError(
                    f"field group {name!r} lists {len(group.shards)} shards, the split {len(self.shards)}: "
                    "a field group has one shard per shard of its split"
                )
            for mine, theirs in zip(group.shards, self.shards, strict=False):
                if mine.records != theirs.records:
                    raise ValueError(
                        f"field group {name!r}: its shard {mine.file} lists {mine.records} records, "
                        f"the split's shard {theirs.file} {theirs.records}; they must be aligned one to one"
                    )
                if mine.aligned_with != theirs.sha256:
                    raise ValueError(
                        f"field group {name!r}: its shard {mine.file} was written for another shard than "
                        f"the split's shard {theirs.file} beside which it is listed (aligned_with is not "
                        "that shard's sha256)"
                    )
        return self

    @property
    def groups(self) -> dict[str, FieldGroup]:
        """The field groups readers join (those completely written), by name."""
        return {name: g for name, g in (self.field_groups or {}).items() if g.unfinished is None}

    @property
    def listed_shards(self) -> list[ShardInfo]:
        """Every shard file the split lists: its shards, then its field groups'."""
        groups = (self.field_groups or {}).values()
        return [*self.shards, *(shard for group in groups for shard in group.shards)]

    @property
    def readable_shards(self) -> list[ShardInfo]:
        """The shards a reader reads: all, but while an append to this split has not
        finished, only those it had before (see :attr:`UnfinishedWrite.shards_before`)."""
        before = self.unfinished.shards_before if self.unfinished is not None else None
        return self.shards if before is None else self.shards[:before]

    @property
    def num_records(self) -> int:
        return total_records(self.shards)

    @property
    def num_bytes(self) -> int:
        shards = self.shards
        return shards.total_bytes if isinstance(shards, ShardTable) else sum(s.bytes for s in shards)


class Manifest(StrictModel):
    """The content of ``dataset.json``."""

    format: FormatVersion = FORMAT
    recordkit_version: str
    created: str = pydantic.Field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    )
    schema_: Schema = pydantic.Field(alias="schema")
    fingerprint: str
    codecs: dict[str, CodecProvenance]
    compression: Literal["", "GZIP", "ZLIB"] = ""
    splits: dict[str, SplitInfo] = pydantic.Field(default_factory=dict)
    card: DatasetCard | None = pydantic.Field(
        default=None,
        description="The dataset card: license, citation, homepage, authors, notes, description (format 5).",
    )

    model_config = pydantic.ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    @property
    def schema(self) -> Schema:  # type: ignore[override]  # pydantic's deprecated BaseModel.schema
        return self.schema_

    @property
    def codec_versions(self) -> dict[str, str]:
        """The version of each codec that stored the records, by codec name: what
        ``Schema.bind(versions=...)`` takes to bind the codecs that read them."""
        return {name: provenance.version for name, provenance in self.codecs.items()}

    @pydantic.model_validator(mode="after")
    def _format_and_group_fields(self) -> Manifest:
        """The format holds what the manifest has; no added field takes the name of a
        field the schema or another group of its split has."""
        problem = check_readable(
            self.format,
            field_groups=self.has_field_groups,
            card=self.card is not None,
            picture_sizes=self.has_picture_sizes,
        )
        if problem is not None:
            raise ValueError(problem)
        for split_name, info in self.splits.items():
            seen = dict.fromkeys(self.schema_.fields, "the schema")
            for group_name, group in (info.field_groups or {}).items():
                for field in group.fields:
                    if field in seen:
                        raise ValueError(
                            f"split {split_name!r}: field {field!r} of field group {group_name!r} is "
                            f"also a field of {seen[field]}"
                        )
                    seen[field] = f"field group {group_name!r}"
        return self

    @property
    def has_field_groups(self) -> bool:
        """Whether any split lists a field group (finished or being written)."""
        return any(info.field_groups for info in self.splits.values())

    @property
    def has_picture_sizes(self) -> bool:
        """Whether any split lists the sizes of its pictures."""
        return any(info.picture_sizes for info in self.splits.values())

    def stamp_format(self) -> None:
        """Set :attr:`format` to the version this manifest is saved in: the oldest that
        holds what it has (:func:`recordkit.dataset._format.format_for`)."""
        self.format = format_for(
            field_groups=self.has_field_groups,
            shard_tables=bool(self.shard_tables()),
            card=self.card is not None,
            picture_sizes=self.has_picture_sizes,
        )

    def split(self, name: str) -> SplitInfo:
        """Split ``name``'s shards and counts; a :class:`ManifestError` naming the splits
        there are if there is none."""
        try:
            return self.splits[name]
        except KeyError:
            raise ManifestError(
                f"no split {name!r} (splits: {', '.join(sorted(self.splits)) or 'none'})"
            ) from None

    def to_json(self) -> str:
        """The manifest as ``dataset.json`` holds it (indented, unset entries left out);
        a split of many shards is listed by its shard table (see :meth:`shard_tables`)."""
        tables = self.shard_tables()
        self.stamp_format()
        if not tables:
            return self.model_dump_json(by_alias=True, indent=2, exclude_none=True) + "\n"
        data = self.model_dump(
            mode="json",
            by_alias=True,
            exclude_none=True,
            exclude={"splits": {name: {"shards", "shard_table"} for name in tables}},
        )
        for name, table in tables.items():
            data["splits"][name]["shard_table"] = _table_ref(name, table).model_dump()
        return json.dumps(data, indent=2) + "\n"

    def shard_tables(self) -> dict[str, ShardTable]:
        """The splits listed by a shard table when saved (those of at least
        :data:`SHARD_TABLE_FROM` shards that a table holds), by name. Each such split's
        shards become that table (shards appended later go to its tail), so its bytes and
        sha256 are made once however often the manifest is saved, and a listing of a
        million shards is never rebuilt entry by entry."""
        tables: dict[str, ShardTable] = {}
        for name, split in self.splits.items():
            if len(split.shards) < SHARD_TABLE_FROM or split.field_groups:
                continue  # few shards, or field groups aligned with them: listed inline
            table = ShardTable.from_entries(split.shards)
            if table is not None:
                listed: object = split.shards
                if table is not listed:
                    split.shards = table  # type: ignore[assignment]  # a Sequence, as loaded
                tables[name] = table
        return tables

    def table_files(self) -> set[str]:
        """The shard table files this manifest lists when saved."""
        return {table_file_name(name, table.sha256()) for name, table in self.shard_tables().items()}

    def save_shard_tables(self, where: Location, *, durable: bool = True) -> None:
        """Write the shard tables :meth:`to_json` will list, before the manifest that
        commits them (a table's name holds its sha256: one already there is kept)."""
        for name, table in self.shard_tables().items():
            target = where.join(table_file_name(name, table.sha256()))
            if not target.exists():
                target.write_bytes(table.to_bytes(), durable=durable)

    @classmethod
    def load(cls, root: PathOrUrl, storage_options: StorageOptions | None = None) -> Manifest:
        """Read ``<root>/dataset.json`` (``root`` a dataset's folder, its dataset.json, or a
        URL); ManifestError when missing or malformed.

        The manifest is untrusted input: anything wrong with it (not a folder, not
        UTF-8, not JSON, nested too deeply, wrong types, a file name that leaves the
        folder) is one ManifestError, never another exception. A remote URL (with its
        ``storage_options``) is read in one GET.
        """
        return read_manifest(location(root, storage_options))

    @classmethod
    def _parse(cls, raw_bytes: bytes, path: str, folder: Location) -> Manifest:
        """The manifest in ``raw_bytes`` (read from ``path`` in ``folder``), checked as
        untrusted input, with the shard tables it lists."""
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = f"is not UTF-8 text (byte {exc.start}): not a manifest"
            raise ManifestError(reason, file=str(path)) from None
        try:
            data: Any = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
        except RecursionError:
            raise ManifestError(f"nested more than {MAX_NESTING} levels deep", file=str(path)) from None
        except ValueError as exc:  # a number of more than 4300 digits
            raise ManifestError(f"not valid JSON: {exc}", file=str(path)) from None
        if nesting_depth(data) > MAX_NESTING:
            raise ManifestError(f"nested more than {MAX_NESTING} levels deep", file=str(path))
        if not isinstance(data, dict):
            raise ManifestError(f"must be a JSON object, not {type(data).__name__}", file=str(path))
        unknown = check_readable(data.get("format"), field_groups=False) if "format" in data else None
        if unknown is not None:
            raise ManifestError(unknown, file=str(path))
        try:
            manifest = cls.model_validate(data)
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ManifestError(f"invalid manifest: {problems}", file=str(path)) from None
        except RecursionError:
            raise ManifestError("nested too deeply", file=str(path)) from None
        for name, split in manifest.splits.items():
            if split.shard_table is not None:
                if split.shards:
                    raise ManifestError(
                        f"invalid manifest: splits.{name}: lists both shards and a shard_table",
                        file=str(path),
                    )
                split.shards = _read_table(folder, split.shard_table)  # type: ignore[assignment]  # a Sequence
        return manifest

    def save(self, root: PathOrUrl, *, durable: bool = True) -> None:
        """Write ``<root>/dataset.json`` (``root`` a dataset's folder or a URL) atomically:
        a temp file in the same folder, fsynced (when ``durable``), then renamed; on an
        object store, one PUT (the object is replaced whole). The manifest is saved in the
        format this code writes for it (:meth:`stamp_format`: shard indexes make a dataset
        begun as format 1 format 2). Shard tables are written first; the table a split was
        listed by before stays, as the previous generation that readers of the previous
        manifest may still read, and the one before it is removed
        (:func:`~recordkit.dataset._table_files.keep_previous_table`; locally: on an
        object store every table stays)."""
        write_manifest(self, location(root), durable=durable)


def read_manifest(where: Location) -> Manifest:
    """The manifest at ``where`` (a dataset's folder, or locally its dataset.json), read
    as :meth:`Manifest.load` reads it: the SDK's own call, with the Location it holds."""
    local = where.local_path
    if local is None:
        return Manifest._parse(_read_remote(where), str(where.join(MANIFEST_FILE)), where)
    root = local
    if not root.exists():
        raise ManifestError("does not exist", file=str(root))
    if not root.is_dir():
        if root.name == MANIFEST_FILE:
            root = root.parent
        else:
            raise ManifestError(
                f"is a file, not a dataset folder (a folder holding {MANIFEST_FILE})", file=str(root)
            )
    path = root / MANIFEST_FILE
    try:
        if path.is_symlink() and os.path.dirname(os.path.realpath(path)) != os.path.realpath(root):
            raise ManifestError("is a symlink out of the dataset folder; refused", file=str(path))
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"no {MANIFEST_FILE}: not a recordkit dataset", file=str(root)) from None
    except IsADirectoryError:
        raise ManifestError("is a folder, not a file", file=str(path)) from None
    except OSError as exc:
        raise ManifestError(f"cannot be read: {exc.strerror or exc}", file=str(path)) from None
    return Manifest._parse(raw_bytes, str(path), location(root))


def write_manifest(manifest: Manifest, where: Location, *, durable: bool = True) -> None:
    """Save ``manifest`` as ``<where>/dataset.json``, as :meth:`Manifest.save` does: the
    SDK's own call, with the Location it holds."""
    manifest.save_shard_tables(where, durable=durable)
    manifest.stamp_format()
    local = where.local_path
    if local is None:
        where.join(MANIFEST_FILE).write_bytes(manifest.to_json().encode("utf-8"))
        return
    root = local
    fd, tmp = tempfile.mkstemp(prefix=".dataset.", suffix=".json.tmp", dir=root)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(manifest.to_json())
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.replace(tmp, root / MANIFEST_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    tables = manifest.shard_tables()
    for name, split in manifest.splits.items():
        old = split.shard_table
        split.shard_table = _table_ref(name, tables[name]) if name in tables else None
        if old is not None and (split.shard_table is None or old.file != split.shard_table.file):
            current = split.shard_table.file if split.shard_table is not None else None
            keep_previous_table(root, name, old.file, current)


def _table_ref(split: str, table: ShardTable) -> ShardTableFile:
    """The manifest's reference to ``split``'s shard ``table``."""
    digest = table.sha256()
    return ShardTableFile(file=table_file_name(split, digest), sha256=digest, shards=len(table))


def _read_table(folder: Location, ref: ShardTableFile) -> ShardTable:
    """The shard table ``ref`` names, its sha256 checked; a ManifestError naming it. A
    remote table is read through a cache keyed by its sha256 (the dataset's
    :class:`~recordkit.ShardCache`, else the user's default one: see
    :meth:`~recordkit.storage.Location.table_cache`), so the ranks and DataLoader workers
    of one machine download it once; the bytes used are the bytes hashed, cached or not."""
    where = folder.join(ref.file)
    cache = folder.table_cache()
    try:
        if cache is not None:
            data, digest = cache.read_through(ref.sha256, where.read_bytes)
        else:
            data = where.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
    except FileNotFoundError:
        raise ManifestError(
            f"shard table {ref.file} is listed in {MANIFEST_FILE} but missing", file=str(where)
        ) from None
    except OSError as exc:
        raise ManifestError(f"cannot be read: {exc.strerror or exc}", file=str(where)) from None
    if digest != ref.sha256:
        raise ManifestError(
            f"shard table {ref.file} has sha256 {digest}, {MANIFEST_FILE} says {ref.sha256} "
            "(changed or damaged)",
            file=str(where),
        )
    return ShardTable.from_bytes(data, file=ref.file, shards=ref.shards, sha256=digest)


def _read_remote(root: Location) -> bytes:
    """``<root>/dataset.json`` of a remote dataset; ManifestError when it is not there."""
    try:
        return root.join(MANIFEST_FILE).read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"no {MANIFEST_FILE}: not a recordkit dataset", file=str(root)) from None
    except OSError as exc:
        raise ManifestError(f"cannot be read: {exc.strerror or exc}", file=str(root)) from None
