"""Adopting foreign TFRecords: what codecs are shown of records recordkit did not write,
and what they answer (see :meth:`recordkit.Codec.adopt`).

:func:`recordkit.infer_schema` samples the records and describes each Example key as a
:class:`ForeignKey` (its kind, lengths, first values and range), then shows the whole
sample, a :class:`ForeignRecords`, to every registered codec in turn. A codec that
recognises a group of keys (JPEG bytes beside height and width keys, four float lists
ending in ``xmin, ymin, xmax, ymax``) answers with an :class:`Adoption`: the field it
proposes, with its options, its key mapping and the keys it claims. Keys it recognises
but cannot read it may claim with a :class:`LeftOut`, whose note the proposal keeps.

Part of the codec contract, so the core knows nothing of images or boxes: what a
foreign layout means comes from the codecs, built-in or from a plugin, the same way.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from recordkit.codec._wire import WireKind

__all__ = ["Adoption", "ForeignKey", "ForeignRecords", "LeftOut"]

#: The suffix of the Example key that flags an optional field's presence (recordkit's own
#: convention, which foreign writers sometimes follow).
_PRESENT = "/present"


@dataclasses.dataclass
class ForeignKey:
    """What the sampled records hold under one Example key (read-only for codecs).

    :param key: the Example key.
    :param kinds: the kinds its values had (several: the key is not one feature).
    :param lengths: how many values each sampled record holds (None: the record lacks
        the key).
    :param values: each record's first values (at most 64; bytes cut to 64 KiB), None
        where a record has none.
    :param sizes: the full byte length of each record's first bytes value (None for
        numbers or where a record has none).
    :param low: the smallest number seen (``inf`` for bytes or no values).
    :param high: the largest number seen (``-inf`` for bytes or no values).
    :param empty_seen: some record holds an empty list (which parses as any kind).
    """

    key: str
    kinds: set[WireKind] = dataclasses.field(default_factory=set)
    lengths: list[int | None] = dataclasses.field(default_factory=list)
    values: list[Any] = dataclasses.field(default_factory=list)
    sizes: list[int | None] = dataclasses.field(default_factory=list)
    low: float = math.inf
    high: float = -math.inf
    empty_seen: bool = False

    @property
    def kind(self) -> WireKind | None:
        """The key's kind; empty lists (any kind) do not count. None: unknown or mixed."""
        kinds = set(self.kinds)
        if self.empty_seen and len(kinds) > 1:
            kinds.discard(WireKind.BYTES)
        return next(iter(kinds)) if len(kinds) == 1 else None

    @property
    def always(self) -> bool:
        """Every sampled record holds the key."""
        return all(n is not None for n in self.lengths)

    @property
    def scalar(self) -> bool:
        """Every sampled record holds exactly one value under the key."""
        return self.always and all(n == 1 for n in self.lengths)

    def first_bytes(self, per_record: int = 4) -> Iterator[bytes]:
        """The first ``per_record`` bytes values of each record (cut to 64 KiB: enough
        for any header), for codecs that recognise formats by their magic bytes."""
        if self.kind is not WireKind.BYTES:
            return
        for values in self.values:
            yield from (values or [])[:per_record]


class ForeignRecords:
    """The sample :func:`recordkit.infer_schema` shows each codec's
    :meth:`~recordkit.Codec.adopt`: every Example key seen (sorted by name, so that the
    same files always give the same proposal), and which keys earlier proposals claimed.

    Keys are claimed as each proposal is made (between two items an ``adopt`` generator
    yields, too): a codec should propose fields for unclaimed keys only, but may read
    claimed ones (two fields may share a dimension key such as ``height``).
    """

    def __init__(self, keys: Mapping[str, ForeignKey], records: int) -> None:
        self._keys = dict(sorted(keys.items()))
        self._claimed: set[str] = set()
        #: How many records were sampled.
        self.records = records

    def __iter__(self) -> Iterator[ForeignKey]:
        return iter(list(self._keys.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __getitem__(self, key: str) -> ForeignKey:
        return self._keys[key]

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, key: str) -> ForeignKey | None:
        """The key's description, or None when no sampled record holds it."""
        return self._keys.get(key)

    def claimed(self, key: str) -> bool:
        """Whether an earlier proposal took ``key``."""
        return key in self._claimed

    def unclaimed(self) -> list[ForeignKey]:
        """The keys no proposal has taken yet, by name."""
        return [stats for key, stats in self._keys.items() if key not in self._claimed]

    def claim(self, keys: Iterable[str]) -> None:
        """Mark ``keys`` as taken (infer_schema does this for each proposal)."""
        self._claimed.update(keys)

    def int_scalar(self, *candidates: str) -> str | None:
        """The first of ``candidates`` that holds one int64 in every record (a size, a
        count), claimed or not; None when none does."""
        for key in candidates:
            stats = self._keys.get(key)
            if stats is not None and stats.kind is WireKind.INT64 and stats.scalar:
                return key
        return None

    def presence_flag(self, key: str) -> str | None:
        """``<key>/present`` when the records flag ``key``'s presence that way (and hold
        at most one value under it): the field is then optional. None otherwise."""
        stats = self._keys.get(key)
        flag = key + _PRESENT
        if stats is None or flag not in self._keys or not all(n in (None, 1) for n in stats.lengths):
            return None
        return flag

    def flags_an_unclaimed_key(self, key: str) -> bool:
        """Whether ``key`` is ``<base>/present`` for a ``base`` no proposal took: it then
        belongs to ``base``'s field, should one be proposed, not to a field of its own."""
        if not key.endswith(_PRESENT):
            return False
        base = key[: -len(_PRESENT)]
        return base in self._keys and base not in self._claimed


@dataclasses.dataclass(frozen=True)
class Adoption:
    """A field a codec proposes for foreign keys.

    :param claims: the Example keys the field takes, so that no later proposal takes
        them again; the first is where the field was found.
    :param name: what to name the field: an Example key or a word (``"objects"``);
        infer_schema makes a unique field name of it.
    :param options: the codec's options (JSON-ready).
    :param keys: the field's key mapping (see :class:`~recordkit.FieldSpec`): where each
        wire feature is. A main key equal to the field's final name is dropped.
    :param description: what the field was inferred from, for whoever reads the proposal.
    :param optional: the field is optional (``keys["present"]`` names its flag).
    :param sequence: the field holds several values per record.
    """

    claims: tuple[str, ...]
    name: str
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    keys: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    description: str = ""
    optional: bool = False
    sequence: bool = False


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """Keys a codec recognises but cannot read (JPEG bytes with no height key): they are
    claimed, no field is proposed, and ``note`` says why in the proposal's description."""

    claims: tuple[str, ...]
    note: str
