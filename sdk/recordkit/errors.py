"""recordkit's errors: one hierarchy, each error carrying the context it happened in.

Every error recordkit raises derives from :class:`RecordkitError`, so ``except
rk.errors.RecordkitError`` catches them all. Each carries the context that a user needs
to find the culprit (the field path, the record's index or key, the shard file, the
plugin and its distribution) both as attributes and in its message.

The tree::

    RecordkitError
    ├── PluginError                 plugins and the codec registry
    │   ├── PluginLoadError         a plugin failed to import or to register its codecs
    │   ├── DuplicateCodecError     two plugins register the same codec name
    │   └── UnknownCodecError       a codec name nobody registered
    ├── SchemaError                 a schema or its file is wrong
    │   ├── SchemaFileError         a schema file cannot be read or parsed
    │   ├── CodecOptionsError       a field's codec options are invalid
    │   └── IncompatibleSchemaError two schemas disagree on fields that matter
    ├── RecordError                 a record does not fit its schema
    │   └── InvalidValueError       one field's value cannot be encoded
    ├── DatasetError                a dataset on disk is wrong or cannot be written
    │   ├── ManifestError           dataset.json is missing, malformed or inconsistent
    │   ├── DatasetLockedError      another writer holds the dataset folder's lock
    │   ├── ConcurrentWriteError    another writer changed a remote dataset.json meanwhile
    │   ├── CorruptRecordError      a shard's bytes fail their checks (CRC, framing, parse)
    │   └── CodecVersionError       records stored by a codec version the installed codec does not read
    ├── ResumeStateError            a reading state saved with another seed, dataset or mixture
    ├── ShardingError               hosts that cannot share an epoch's records evenly
    ├── DecodeError                 stored bytes cannot be decoded back to a value
    ├── InputError                  a source's input (a folder, COCO, VOC, CSV ...) is malformed
    └── MissingExtraError           an optional dependency is not installed (also ImportError)

Codecs raise :class:`InvalidValueError` with only a reason; the writer adds the field
and the record with :meth:`RecordkitError.with_context`, so codec authors never need to
know where their value came from.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = [
    "CodecOptionsError",
    "CodecVersionError",
    "ConcurrentWriteError",
    "CorruptRecordError",
    "DatasetError",
    "DatasetLockedError",
    "DecodeError",
    "DuplicateCodecError",
    "ErrorContext",
    "IncompatibleSchemaError",
    "InputError",
    "InvalidValueError",
    "ManifestError",
    "MissingExtraError",
    "PluginError",
    "PluginLoadError",
    "RecordError",
    "RecordkitError",
    "ResumeStateError",
    "SchemaError",
    "SchemaFileError",
    "ShardingError",
    "UnknownCodecError",
]


@dataclasses.dataclass(frozen=True)
class ErrorContext:
    """Where an error happened; every part is optional and printed only when set."""

    field: str | None = None
    record: int | str | None = None
    split: str | None = None
    shard: str | None = None
    offset: int | None = None
    plugin: str | None = None
    distribution: str | None = None
    codec: str | None = None
    file: str | None = None
    line: int | None = None
    #: An entry of an input file that has no line of its own (a COCO annotation's id ...).
    entry: str | None = None

    def merged(self, **updates: Any) -> ErrorContext:
        """A copy with ``updates`` filling the parts not already known."""
        known = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        fresh = {k: v for k, v in updates.items() if v is not None}
        return dataclasses.replace(ErrorContext(), **{**fresh, **known})

    def describe(self) -> str:
        """The context as ``file x.yaml, line 3, record 12, field 'image'``."""
        parts: list[str] = []
        if self.file is not None:
            parts.append(f"file {self.file}")
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.split is not None:
            parts.append(f"split {self.split!r}")
        if self.entry is not None:
            parts.append(self.entry)
        if self.shard is not None:
            parts.append(f"shard {self.shard}")
        if self.offset is not None:
            parts.append(f"offset {self.offset}")
        if self.record is not None:
            is_index = isinstance(self.record, int)
            parts.append(f"record {self.record}" if is_index else f"record key {self.record!r}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        if self.codec is not None:
            parts.append(f"codec {self.codec!r}")
        if self.plugin is not None:
            parts.append(f"plugin {self.plugin!r}")
        if self.distribution is not None:
            parts.append(f"distribution {self.distribution!r}")
        return ", ".join(parts)


class RecordkitError(Exception):
    """Base of every recordkit error: a reason plus the context it happened in."""

    def __init__(self, reason: str, *, context: ErrorContext | None = None, **where: Any) -> None:
        self.reason = reason
        self.context = (context or ErrorContext()).merged(**where)
        super().__init__(reason)

    def with_context(self, **where: Any) -> RecordkitError:
        """Add context known further up (the field, the record ...) and return self.

        Context already set deeper down wins: a nested field path is not overwritten
        by its parent's.
        """
        self.context = self.context.merged(**where)
        return self

    # Convenience accessors, so that ``err.field`` reads naturally in user code.
    @property
    def field(self) -> str | None:
        return self.context.field

    @property
    def record(self) -> int | str | None:
        return self.context.record

    @property
    def shard(self) -> str | None:
        return self.context.shard

    @property
    def plugin(self) -> str | None:
        return self.context.plugin

    def __str__(self) -> str:
        where = self.context.describe()
        return f"{where}: {self.reason}" if where else self.reason

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (parallel writers); keep their context.
        return (_rebuild, (type(self), self.reason, self.context, self.__dict__))


def _rebuild(
    cls: type[RecordkitError], reason: str, context: ErrorContext, state: dict[str, Any]
) -> RecordkitError:
    error = cls.__new__(cls)
    Exception.__init__(error, reason)
    error.__dict__.update(state)
    error.reason = reason
    error.context = context
    return error


class PluginError(RecordkitError):
    """Something is wrong with a plugin or with the codec registry."""


class PluginLoadError(PluginError):
    """A plugin could not be imported, or raised while registering its codecs.

    The original exception is chained (``__cause__``) and named in the message.
    """


class DuplicateCodecError(PluginError):
    """A codec name is registered twice and the second plugin did not ask to replace."""


class UnknownCodecError(PluginError):
    """A codec name that no loaded plugin registered; the message lists those that are."""


class SchemaError(RecordkitError):
    """A schema is invalid."""


class SchemaFileError(SchemaError):
    """A schema file cannot be read, parsed or validated."""


class CodecOptionsError(SchemaError):
    """A field's codec options fail the codec's options model."""


class IncompatibleSchemaError(SchemaError):
    """Two schemas disagree on a field that matters; ``differences`` lists each one."""

    def __init__(self, reason: str, *, differences: list[str] | None = None, **where: Any) -> None:
        self.differences = list(differences or [])
        detail = "".join(f"\n  - {d}" for d in self.differences)
        super().__init__(reason + detail, **where)


class RecordError(RecordkitError):
    """A record does not fit its schema (missing field, unknown field, bad value).

    When several fields of one record are wrong, one RecordError lists them all and
    ``errors`` holds each field's own error.
    """

    def __init__(self, reason: str, *, errors: list[RecordkitError] | None = None, **where: Any) -> None:
        self.errors = list(errors or [])
        super().__init__(reason, **where)

    def with_context(self, **where: Any) -> RecordkitError:
        """Add context to this error and to each error it lists (where they have none of
        their own: a nested field path stays as it is)."""
        for error in self.errors:
            error.with_context(**where)
        return super().with_context(**where)


class InvalidValueError(RecordError):
    """One value cannot be encoded by its field's codec; raised by codecs."""


class DatasetError(RecordkitError):
    """A dataset on disk cannot be written or read as asked."""


class ManifestError(DatasetError):
    """dataset.json is missing, malformed, or disagrees with the shards."""


class DatasetLockedError(DatasetError):
    """Another writer holds the dataset folder's lock; the message names its pid."""


class ConcurrentWriteError(DatasetError):
    """Another writer changed a remote dataset's ``dataset.json`` since this writer read
    it: this writer's commit is refused (its records after its last successful commit
    are not in the dataset), rather than replacing the other writer's."""


class CorruptRecordError(DatasetError):
    """A shard's bytes fail their checks: truncated, a CRC mismatch, or an unparsable record."""


class CodecVersionError(DatasetError):
    """A dataset's records were stored by a version of a codec that the installed codec
    does not read (see :meth:`recordkit.Codec.for_stored_version`); the message names
    the field, the codec, the version that stored the records and the installed one.

    Raised when a dataset is opened, before any record is decoded: decoding bytes laid
    out by another version would give wrong values, not an error.
    """


class DecodeError(RecordkitError):
    """Stored bytes could not be decoded back to a value (the shard is readable but the
    payload is not what its codec wrote)."""


class ResumeStateError(RecordkitError, ValueError):
    """A reader was asked to resume from a state it cannot continue exactly: saved by
    another kind of reader, or with another seed, dataset or mixture (each difference is
    named), or malformed."""


class ShardingError(RecordkitError, ValueError):
    """Records cannot be divided between hosts as asked: what is left of an epoch does not
    divide by the number of hosts, and dropping the remainder was not accepted (the error
    names both counts and how many records would be dropped)."""


class InputError(RecordkitError):
    """A source's input is malformed or incomplete: the error names the file and the line
    or entry (``annotation 17``, ``row 4``) that is wrong."""


class MissingExtraError(RecordkitError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, *, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs {package!r}, which is not installed; "
            f"install it with: pip install 'recordkit[{extra}]'"
        )
