"""The Examples of many records of one TFRecord file parsed at once, for the keys a read
wants: what the numpy reader's sequential shard stream uses instead of one protobuf
parse a record (:func:`~recordkit.format._example.decode_example`).

Records of a field group, or of any dataset whose fields have a fixed shape (an
embedding, a label, a score), all have the same length and the same layout: the same
keys in the same order, each value at the same byte offset. :func:`parsed_records`
parses one record of each length that enough records share (a *template*) with a small
wire-format reader that accepts only the plain layout (one ``features`` map, each entry
a key and one list, numbers packed), then compares the template's structure bytes (every
byte but the values') with those of every record of that length in one numpy step. A
record that matches has the template's layout, so its values are columns of the file:
sliced out for all matching records together (bytes values as ``bytes``, numbers as rows
of one array per key). Varint numbers (int64 lists) are decoded together too, and a
record whose varints do not take the template's count or are malformed is left to the
per-record parse. Each parsed record is the ``{key: (kind, values)}`` that
:func:`~recordkit.format._example.decode_example` gives, restricted to the keys asked
for (numbers as rows of a shared array rather than arrays of their own); a record that
does not match (another length, an optional field left out, a layout protobuf accepts
but the template reader does not) gets ``None`` and is parsed alone, so the values are
the same whatever the path.

Records whose bytes values vary in length (real captions, real text) share lengths with
few others: a template a length left most of them to protobuf (captions of 3 to 30
words, 175 lengths: 12 us a record where captions of 5 lengths took 2). They are *walked*
instead (:mod:`recordkit.format._walk_parse`): every record of a chunk or batch read
against one template's layout at once (its keys in order, each list's kind and number of
values), whatever its length, each record's cursor moved by its own lengths, every
declared length checked against what its contents take; int64 runs whose width differs
from record to record (labels of one and two varint bytes) are decoded a width at a
time. The values of the records that have the layout are then columns as above (one
part, decoded in one call); the records that do not are walked against the layout of
the first of them when enough are left (a field left out), then left to protobuf. Fewer
than :data:`_MIN_WALKED` records are not walked (the walk's numpy steps cost more than
protobuf's parse of so few). A file's chunk of at most :data:`_TEMPLATED_LENGTHS`
lengths is still parsed a length at a time (one comparison a length is cheaper than the
walk), and its records that no template took are walked.

:func:`parsed_data` does the same for records fetched by index (the shuffled batches of
the epoch readers and of random access): a batch of one length against the template kept
for that length from earlier batches; a batch of at most :data:`_JOINED_LENGTHS` lengths
whose templates differ only in the lengths of their bytes values (one field set, captions
of several lengths: a shuffled batch mixes more of them than an in-order one) parsed as
one part, in its order, against the templates kept (cheaper than the walk for a few
lengths); any other batch of several lengths walked, in its order.

:func:`framed_records` checks the framing of a whole file held in memory first (lengths,
length and data CRCs; :func:`~recordkit.format._framing_check.framing_matches`): a file
that fails is read again record by record, whose errors name the record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any, cast

import numpy as np

from recordkit.codec._wire import WireKind
from recordkit.format._framing_check import framing_matches
from recordkit.format._tfrecord import FOOTER_BYTES, FRAMING_BYTES, HEADER_BYTES, LENGTH_FIELD
from recordkit.format._walk_parse import Entry, walked

__all__ = [
    "Column",
    "ParsedChunk",
    "ParsedExample",
    "Templates",
    "UniformRecords",
    "framed_records",
    "parsed_data",
    "parsed_records",
    "uniform_records",
]

#: One record's Example, parsed: ``{key: (kind, values)}`` (bytes values as a list of
#: ``bytes``, numbers as a 1-D int64 or float32 array).
ParsedExample = dict[str, tuple[WireKind, Any]]

#: Records of one length needed before a template is made for it: a template and its
#: comparison cost a few records' worth of per-record parsing.
_MIN_SHARED = 8
#: Records walked together at least (:mod:`recordkit.format._walk_parse`): the walk costs
#: a few dozen numpy steps whatever the number of records. Fetched by index in batches of
#: captions of 3 to 30 words, walked against parsed alone by protobuf: 1.23x the CPU a
#: record for batches of 16, 1.06x for 24, 0.95x for 32, 0.76x for 64.
_MIN_WALKED = 32
#: A batch of records of at most this many lengths, each with its template kept, is parsed
#: as one field set (:func:`_one_field_set`: 0.46 us a record where the walk takes 0.62,
#: for 2 to 8 lengths in batches of 512; 1.4 to 1.7 where it takes 2.6 in batches of 64;
#: still ahead at 12 lengths, not at 16); one of more lengths is walked (its templates are
#: rarely all kept, and they cost more as they differ: for 52 lengths of captions in 64
#: records, the walk takes a third less).
_JOINED_LENGTHS = 8
#: A file's chunk of records of at most this many lengths is parsed a length at a time
#: against each length's template; one of more lengths is walked. A chunk of 2,048 records
#: parses in 0.31 (one length), 0.33 (two) and 0.35 us a record (three) against templates,
#: in 0.34 to 0.35 walked whatever its lengths, which also gives one part to decode where
#: templates give one a length.
_TEMPLATED_LENGTHS = 2
_LIST_KINDS = {0x0A: WireKind.BYTES, 0x12: WireKind.FLOAT, 0x1A: WireKind.INT64}


def framed_records(buffer: Any) -> np.ndarray | None:
    """The offsets of the records of the uncompressed TFRecord file in ``buffer`` (one
    more than records: the last is the file's end), or None unless every record's framing
    is sound (lengths, length and data CRCs)."""
    size = len(buffer)
    if size == 0:
        return np.zeros(1, dtype=np.int64)
    if size < FRAMING_BYTES:
        return None
    (first,) = LENGTH_FIELD.unpack_from(buffer, 0)
    frame = first + FRAMING_BYTES
    if size % frame == 0:  # records of one size (a field group's): no walk needed
        offsets = np.arange(0, size + 1, frame, dtype=np.int64)
        if framing_matches(buffer, offsets):
            return offsets
    walked = [0]
    position = 0
    unpack = LENGTH_FIELD.unpack_from
    while position + HEADER_BYTES <= size:
        position += unpack(buffer, position)[0] + FRAMING_BYTES
        walked.append(position)
    if position != size:
        return None
    offsets = np.asarray(walked, dtype=np.int64)
    return offsets if framing_matches(buffer, offsets) else None


@dataclasses.dataclass(frozen=True)
class _Value:
    """Where one key's values sit in a template record: its list kind, and the byte
    ranges (start, width) of its values (one per bytes value; one packed run of numbers,
    or none for an empty list); its list's tag (0 for an empty Feature) and its number
    of values (of numbers: floats, or varints of the run)."""

    kind: WireKind
    runs: tuple[tuple[int, int], ...]
    tag: int = 0
    count: int = 0


@dataclasses.dataclass(frozen=True)
class _Template:
    """One record's layout: its keys' values, the offsets of its structure bytes and
    those bytes (a record of its length matches when its bytes there are these)."""

    values: dict[str, _Value]
    structure: np.ndarray
    signature: np.ndarray


#: Templates already made, by record length (:func:`parsed_data` keeps them from one
#: batch to the next: a reader's records share a few layouts).
Templates = dict[int, _Template]
#: Lengths whose templates a :data:`Templates` keeps (cleared when it would hold more).
_TEMPLATES_KEPT = 64


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[position]
        value |= (byte & 0x7F) << shift
        position += 1
        if byte < 0x80:
            return value, position
        shift += 7


def _delimited(data: bytes, position: int, end: int, tag: int) -> tuple[int, int]:
    """The (start, end) of the length-delimited field ``tag`` at ``position``."""
    if position >= end or data[position] != tag:
        raise ValueError("unexpected tag")
    length, start = _varint(data, position + 1)
    if start + length > end:
        raise ValueError("field overruns its message")
    return start, start + length


def _template(data: bytes) -> _Template | None:
    """The layout of the Example ``data``, or None when it is not in the plain form
    (anything else is parsed record by record, by protobuf)."""
    try:
        start, end = _delimited(data, 0, len(data), 0x0A)
        if end != len(data):
            return None
        values: dict[str, _Value] = {}
        payload = np.zeros(len(data), dtype=bool)
        position = start
        while position < end:
            entry, position = _delimited(data, position, end, 0x0A)
            key_start, key_end = _delimited(data, entry, position, 0x0A)
            key = data[key_start:key_end].decode("utf-8")
            feature, feature_end = _delimited(data, key_end, position, 0x12)
            if feature_end != position or key in values:
                return None
            values[key] = _feature(data, feature, feature_end, payload)
    except (ValueError, UnicodeDecodeError):
        return None
    structure = np.flatnonzero(~payload)
    return _Template(values, structure, np.frombuffer(data, dtype=np.uint8)[structure])


def _feature(data: bytes, start: int, end: int, payload: np.ndarray) -> _Value:
    """The values of the Feature in ``data[start:end]``, their bytes marked in ``payload``."""
    if start == end:  # an empty Feature: an empty list of any kind
        return _Value(WireKind.BYTES, ())
    kind = _LIST_KINDS.get(data[start])
    if kind is None:
        raise ValueError("unknown list")
    first, last = _delimited(data, start, end, data[start])
    if last != end:
        raise ValueError("trailing bytes")
    runs: list[tuple[int, int]] = []
    position = first
    while position < last:
        value_start, position = _delimited(data, position, last, 0x0A)
        runs.append((value_start, position - value_start))
        if kind is not WireKind.BYTES and position != last:
            raise ValueError("numbers not packed in one run")
    if kind is WireKind.FLOAT and runs and runs[0][1] % 4:
        raise ValueError("float bytes not a multiple of 4")
    count = len(runs)
    if kind is not WireKind.BYTES:
        packed = data[runs[0][0] : runs[0][0] + runs[0][1]] if runs else b""
        count = len(packed) // 4 if kind is WireKind.FLOAT else sum(byte < 0x80 for byte in packed)
    for value_start, width in runs:
        payload[value_start : value_start + width] = True
    return _Value(kind, tuple(runs), data[start], count)


def _gather(data: np.ndarray, starts: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The bytes of ``data`` at each start plus each of ``columns``: ``[n, len(columns)]``."""
    gathered: np.ndarray = data[starts[:, None] + columns[None, :]]
    return gathered


def _slices(buffer: Any, firsts: np.ndarray, width: Any) -> list[bytes]:
    """``width`` bytes of ``buffer`` from each of ``firsts`` (``width``: one for all, or an
    array of one a record), each as ``bytes`` (sliced in C)."""
    return list(map(buffer.__getitem__, map(slice, firsts.tolist(), (firsts + width).tolist())))


#: Values at most this many bytes wide are gathered by one numpy index (an index array of
#: ``width`` entries a record); wider ones are sliced a record at a time, which allocates
#: no index array as large as the values. For a label's byte, the gather costs a
#: twentieth of 512 slices joined.
_GATHERED_WIDTH = 64


def _run(buffer: Any, data: np.ndarray, firsts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes of ``buffer`` (whose bytes ``data`` are) from each of ``firsts``: a
    writable ``[n, width]`` uint8 array."""
    if width <= _GATHERED_WIDTH:
        return _gather(data, firsts, np.arange(width))
    joined = bytearray().join(_slices(buffer, firsts, width))
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(firsts), width)


def _varints(run: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The packed varints of each row of ``run`` (``[n, width]`` uint8) as ``[n, count]``
    int64, and which rows hold exactly ``count`` well-formed varints of at most 9 bytes
    (larger and negative values are left to protobuf)."""
    rows, width = run.shape
    ends = run < 0x80
    ok = (ends.sum(axis=1) == count) & ends[:, -1] if width else np.ones(rows, dtype=bool)
    values = np.zeros((rows, count), dtype=np.int64)
    if not ok.any() or count == 0:
        return values, ok
    if bool(ends.all()):  # one byte each
        values[:] = run
        return values, ok
    good = run[ok]
    good_ends = ends[ok]
    last = np.flatnonzero(good_ends.reshape(-1)).reshape(len(good), count) % width
    firsts = np.concatenate([np.zeros((len(good), 1), dtype=np.int64), last[:, :-1] + 1], axis=1)
    slot = np.cumsum(good_ends, axis=1) - good_ends
    place = np.arange(width)[None, :] - np.take_along_axis(firsts, slot, axis=1)
    short = (last - firsts).max(axis=1) < 9
    bits = (good & 0x7F).astype(np.uint64) << (7 * place).astype(np.uint64)
    flat_starts = (np.arange(len(good))[:, None] * width + firsts).reshape(-1)
    summed = np.add.reduceat(bits.reshape(-1), flat_starts).reshape(len(good), count)
    values[ok] = summed.view(np.int64)
    ok[np.flatnonzero(ok)[~short]] = False
    return values, ok


#: One key's values in records of one layout: its kind and either an ``[n, count]`` array
#: of numbers or, for bytes, one list of ``n`` values per value of a record.
Column = tuple[WireKind, Any]


@dataclasses.dataclass(frozen=True)
class _Parsed:
    """The records ``chosen`` of a chunk that share a length: which of them ``match``
    their template, and the columns of the keys asked for."""

    chosen: np.ndarray
    match: np.ndarray
    columns: dict[str, Column]

    def examples(self) -> list[tuple[int, ParsedExample]]:
        """``(place in the chunk, Example)`` of each record that matched."""
        names = list(self.columns)
        per_key = [_per_record(*self.columns[name], len(self.chosen)) for name in names]
        rows = zip(*per_key, strict=True) if names else ((),) * len(self.chosen)
        return [
            (position, dict(zip(names, row, strict=True)))
            for position, matched, row in zip(self.chosen.tolist(), self.match.tolist(), rows, strict=True)
            if matched
        ]


@dataclasses.dataclass(frozen=True)
class ParsedChunk:
    """Records of one file parsed together (:func:`parsed_records`)."""

    count: int
    parts: tuple[_Parsed, ...]

    @property
    def columns(self) -> dict[str, Column] | None:
        """The keys' values of every record of the chunk as columns, when all of them have
        one layout (else None): numbers as ``[count, n]`` arrays, bytes as lists of
        ``count`` values (one list per value of a record)."""
        if len(self.parts) != 1:
            return None
        (part,) = self.parts
        return part.columns if len(part.chosen) == self.count and bool(part.match.all()) else None

    def examples(self) -> list[ParsedExample | None]:
        """Each record's Example as :func:`~recordkit.format._example.decode_example`
        gives it, for the keys asked for (numbers as rows of a shared array); ``None`` for
        a record to parse alone."""
        out: list[ParsedExample | None] = [None] * self.count
        for part in self.parts:
            for position, example in part.examples():
                out[position] = example
        return out


def _per_record(kind: WireKind, values: Any, count: int) -> list[tuple[WireKind, Any]]:
    """A column's ``(kind, values)`` for each record: numbers as 1-D rows, bytes as lists."""
    if kind is not WireKind.BYTES:
        return [(kind, row) for row in values]
    if not values:
        return [(kind, []) for _ in range(count)]
    return [(kind, list(row)) for row in zip(*values, strict=True)]


def parsed_records(buffer: Any, offsets: np.ndarray, keys: Collection[str]) -> ParsedChunk:
    """The records of ``buffer`` whose frames start at ``offsets[:-1]`` (framing already
    checked), parsed for ``keys`` only: where they have at most :data:`_TEMPLATED_LENGTHS`
    lengths, those of each length that enough records share together against its
    template; the others (all of them where more lengths) walked together against one
    layout (:func:`_walked_parts`); those left are left to be parsed alone."""
    data = np.frombuffer(buffer, dtype=np.uint8)
    starts = offsets[:-1] + HEADER_BYTES
    lengths = offsets[1:] - starts - (FRAMING_BYTES - HEADER_BYTES)
    parts: list[_Parsed] = []
    shared, counts = np.unique(lengths, return_counts=True)
    reference = None
    if len(shared) <= _TEMPLATED_LENGTHS:
        for length in shared[counts >= _MIN_SHARED].tolist():
            chosen = np.flatnonzero(lengths == length)
            template = _template(bytes(buffer[int(starts[chosen[0]]) : int(starts[chosen[0]]) + length]))
            if template is not None:
                parts.append(_parsed(buffer, data, starts[chosen], chosen, template, keys))
                reference = reference or template
    left = _left(len(starts), parts)
    if len(left) >= _MIN_WALKED:

        def record(number: int) -> bytes:
            return bytes(buffer[int(starts[number]) : int(starts[number] + lengths[number])])

        parts += _walked_parts(buffer, data, starts, lengths, left, reference, record, keys)
    return ParsedChunk(len(starts), tuple(parts))


def _left(count: int, parts: Sequence[_Parsed]) -> np.ndarray:
    """The records of ``count`` that no part of ``parts`` matched."""
    covered = np.zeros(count, dtype=bool)
    for part in parts:
        covered[part.chosen[part.match]] = True
    return np.flatnonzero(~covered)


def _walked_parts(
    buffer: Any,
    data: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    left: np.ndarray,
    reference: _Template | None,
    record: Callable[[int], bytes],
    keys: Collection[str],
) -> list[_Parsed]:
    """The records ``left`` (Examples at ``starts`` of ``buffer``, whose bytes ``data``
    are, of ``lengths``) walked together against the layout of ``reference`` (else of
    the first of them, ``record(number)`` giving a record's bytes), and those that do not
    have it against the layout of the first of those, when enough are left: what a field
    left out of some records makes."""
    parts: list[_Parsed] = []
    for _ in range(2):
        template = reference or _template(record(int(left[0])))
        reference = None
        if template is not None:
            part = _walked_part(
                buffer, data, starts[left], starts[left] + lengths[left], left, template, keys
            )
            if len(part.chosen) == len(left):
                return [*parts, part]
            if len(part.chosen):
                parts.append(part)
                left = left[~np.isin(left, part.chosen, assume_unique=True)]
        if len(left) < _MIN_WALKED:
            break
    return parts


def _layout(template: _Template) -> list[Entry]:
    return [(key.encode(), value.tag, len(value.runs)) for key, value in template.values.items()]


def _walked_part(
    buffer: Any,
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    chosen: np.ndarray,
    template: _Template,
    keys: Collection[str],
) -> _Parsed:
    """The records ``chosen`` (their Examples from ``starts`` to ``ends`` of ``buffer``,
    whose bytes ``data`` are, of any lengths) walked against ``template``'s layout
    (:func:`~recordkit.format._walk_parse.walked`): those that have it, with the columns
    of ``keys`` (every record of the part matched; int64 lists checked even when not
    wanted, each width of their packed runs decoded together)."""
    walk = walked(data, starts, ends, _layout(template))
    match = walk.match
    numbers: dict[str, np.ndarray] = {}
    for (key, value), runs in zip(template.values.items(), walk.places, strict=True):
        if value.kind is WireKind.FLOAT and runs:
            match &= runs[0][1] == value.runs[0][1]
        elif value.kind is WireKind.INT64 and runs:
            numbers[key] = _ragged_varints(buffer, data, *runs[0], value.count, match)
    matched = np.flatnonzero(match)
    columns: dict[str, Column] = {}
    for (key, value), runs in zip(template.values.items(), walk.places, strict=True):
        if key not in keys:
            continue
        if value.kind is WireKind.INT64 and runs:
            columns[key] = (value.kind, numbers[key][matched])
        elif value.kind is WireKind.FLOAT and runs:
            floats = _run(buffer, data, runs[0][0][matched], value.runs[0][1]).view("<f4")
            columns[key] = (value.kind, floats.astype(np.float32, copy=False))
        elif value.kind is WireKind.BYTES:
            columns[key] = (
                value.kind,
                [_slices(buffer, begin[matched], width[matched]) for begin, width in runs],
            )
        else:  # an empty list of numbers
            columns[key] = (value.kind, np.zeros((len(matched), 0), dtype=value.kind.numpy_dtype))
    return _Parsed(chosen[matched], np.ones(len(matched), dtype=bool), columns)


def _ragged_varints(
    buffer: Any, data: np.ndarray, begin: np.ndarray, width: np.ndarray, count: int, match: np.ndarray
) -> np.ndarray:
    """The ``count`` packed varints of each record's run (at ``begin``, ``width`` bytes)
    as ``[n, count]`` int64, the records of each width decoded together; a record whose
    run does not hold ``count`` varints the packed reader takes is unmatched in ``match``."""
    numbers = np.zeros((len(begin), count), dtype=np.int64)
    for each in np.unique(width[match]).tolist():
        rows = np.flatnonzero(match & (width == each))
        values, ok = _varints(_run(buffer, data, begin[rows], each), count)
        numbers[rows] = values
        match[rows[~ok]] = False
    return numbers


def parsed_data(records: Sequence[bytes], keys: Collection[str], templates: Templates) -> ParsedChunk:
    """The Examples ``records`` (data already checked: a batch fetched by index, in any
    order), parsed for ``keys`` as :func:`parsed_records` parses a file's: those of one
    length together, against the template ``templates`` keeps for that length (made from
    the first of them when enough records share it, and kept); the others are left to be
    parsed alone."""
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    parts: list[_Parsed] = []
    shared, counts = np.unique(lengths, return_counts=True)
    if len(shared) > 1:
        few = len(shared) <= _JOINED_LENGTHS
        found = [templates.get(length) for length in shared.tolist()]
        joined = _joined(records, lengths)
        if few and None not in found:
            one = _one_field_set(records, lengths, joined, shared, cast(list[_Template], found), keys)
            if one is not None:
                return ParsedChunk(len(records), (one,))
        if len(records) >= _MIN_WALKED:
            if few:  # templates for the next batches of these lengths (joined as one field set)
                _keep_templates(records, lengths, shared, counts, found, templates)
            walked_parts = _walked_data(records, lengths, joined, keys, found, templates)
            if walked_parts is not None:
                return ParsedChunk(len(records), tuple(walked_parts))
    for length, count in zip(shared.tolist(), counts.tolist(), strict=True):
        template = templates.get(length)
        if template is None and count < _MIN_SHARED:
            continue
        chosen = np.flatnonzero(lengths == length)
        buffer = b"".join(map(records.__getitem__, chosen.tolist()))
        data = np.frombuffer(buffer, dtype=np.uint8)
        starts = np.arange(0, len(buffer), length, dtype=np.int64)
        if template is None:
            template = _template(records[int(chosen[0])])
            if template is None:
                continue
            _keep(templates, length, template)
        parsed = _parsed(buffer, data, starts, chosen, template, keys)
        if not parsed.match.any() and count >= _MIN_SHARED:  # another layout of that length
            fresh = _template(records[int(chosen[0])])
            if fresh is not None:
                templates[length] = fresh
                parsed = _parsed(buffer, data, starts, chosen, fresh, keys)
        parts.append(parsed)
    return ParsedChunk(len(records), tuple(parts))


def _keep_templates(
    records: Sequence[bytes],
    lengths: np.ndarray,
    shared: np.ndarray,
    counts: np.ndarray,
    found: list[_Template | None],
    templates: Templates,
) -> None:
    """Templates made and kept (in ``templates``, and in ``found`` in the place of each
    length of ``shared``) for the lengths that enough of ``records`` share and that have
    none yet."""
    for place, (length, count) in enumerate(zip(shared.tolist(), counts.tolist(), strict=True)):
        if found[place] is None and count >= _MIN_SHARED:
            template = _template(records[int(np.argmax(lengths == length))])
            if template is not None:
                _keep(templates, length, template)
                found[place] = template


def _keep(templates: Templates, length: int, template: _Template) -> None:
    """``template`` kept for ``length`` (all of ``templates`` dropped first when it holds
    :data:`_TEMPLATES_KEPT`)."""
    if len(templates) >= _TEMPLATES_KEPT:
        templates.clear()
    templates[length] = template


def _joined(records: Sequence[bytes], lengths: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
    """``records`` joined into one buffer: it, its bytes, and where each record starts."""
    buffer = b"".join(records)
    return buffer, np.frombuffer(buffer, dtype=np.uint8), np.cumsum(lengths) - lengths


def _walked_data(
    records: Sequence[bytes],
    lengths: np.ndarray,
    joined: tuple[bytes, np.ndarray, np.ndarray],
    keys: Collection[str],
    found: list[_Template | None],
    templates: Templates,
) -> list[_Parsed] | None:
    """``records`` (of several lengths, ``joined`` as :func:`_joined` gives them) walked
    together (:func:`_walked_parts`) against
    the layout of a template ``templates`` keeps for one of their lengths (``found``),
    else of the first record (its template then kept); None when that record's layout is
    not one the walk takes."""
    reference = next((template for template in found if template is not None), None)
    if reference is None:
        reference = _template(records[0])
        if reference is None:
            return None
        _keep(templates, len(records[0]), reference)
    buffer, data, starts = joined
    every = np.arange(len(records))
    return _walked_parts(buffer, data, starts, lengths, every, reference, records.__getitem__, keys)


def _one_field_set(
    records: Sequence[bytes],
    lengths: np.ndarray,
    joined: tuple[bytes, np.ndarray, np.ndarray],
    shared: np.ndarray,
    found: list[_Template],
    keys: Collection[str],
) -> _Parsed | None:
    """``records`` (of the lengths ``shared``, each length's template in ``found``) parsed
    as one part, in their order, when the templates differ only in the lengths of their
    bytes values (the same keys, kinds and counts of values, numbers of the same widths:
    captions of 5 and 6 digits) and every record matches its length's template; None
    otherwise (each length is then parsed as a part of its own). Each value is sliced from
    the records joined once, at its record's place for its template (:func:`_columns`,
    given each value's place in each record): what the records of one length cost, with
    no part a length, no decode a part, and no record put back in its place after them."""
    first = found[0].values
    for template in found[1:]:
        if template.values.keys() != first.keys():
            return None
        for key, value in template.values.items():
            other = first[key]
            if value.kind is not other.kind or len(value.runs) != len(other.runs):
                return None
            if value.kind is not WireKind.BYTES and [w for _, w in value.runs] != [w for _, w in other.runs]:
                return None
    buffer, data, starts = joined
    template_of = np.searchsorted(shared, lengths)
    if not _match_each(data, starts, found, template_of):
        return None
    places: dict[str, list[tuple[Any, Any]]] = {}
    for key, value in first.items():
        if key not in keys and value.kind is not WireKind.INT64:
            continue  # int64 lists are checked even when not wanted
        runs = np.array([template.values[key].runs for template in found], dtype=np.int64).reshape(
            len(found), len(value.runs), 2
        )
        places[key] = [
            (
                runs[:, r, 0][template_of],
                runs[:, r, 1][template_of] if value.kind is WireKind.BYTES else width,
            )
            for r, (_, width) in enumerate(value.runs)
        ]
    count = len(records)
    match = np.ones(count, dtype=bool)
    columns = _columns(buffer, data, starts, match, first, keys, places)
    return _Parsed(np.arange(count), match, columns) if bool(match.all()) else None


def _match_each(
    data: np.ndarray, starts: np.ndarray, found: list[_Template], template_of: np.ndarray
) -> bool:
    """Whether the record at each of ``starts`` has the structure bytes of its template
    (``found[template_of[i]]``): in one gather when the templates have as many structure
    bytes (a caption one digit longer moves them, adds none), else a template at a time."""
    sizes = {len(template.structure) for template in found}
    if len(sizes) == 1:
        structure = np.stack([template.structure for template in found])[template_of]
        structure += starts[:, None]
        signature = np.stack([template.signature for template in found])[template_of]
        return bool((data[structure] == signature).all())
    for number, template in enumerate(found):
        chosen = np.flatnonzero(template_of == number)
        if not bool((_gather(data, starts[chosen], template.structure) == template.signature).all()):
            return False
    return True


def _parsed(
    buffer: Any,
    data: np.ndarray,
    starts: np.ndarray,
    chosen: np.ndarray,
    template: _Template,
    keys: Collection[str],
) -> _Parsed:
    """The records ``chosen`` (their Examples at ``starts`` of ``buffer``, whose bytes
    ``data`` are, all of the template's length) matched against ``template``."""
    match = (_gather(data, starts, template.structure) == template.signature).all(axis=1)
    return _Parsed(chosen, match, _columns(buffer, data, starts, match, template.values, keys))


def _columns(
    buffer: Any,
    data: np.ndarray,
    starts: np.ndarray,
    match: np.ndarray,
    values: dict[str, _Value],
    keys: Collection[str],
    places: dict[str, list[tuple[Any, Any]]] | None = None,
) -> dict[str, Column]:
    """The values of ``keys`` in the records starting at ``starts`` of ``buffer`` (whose
    bytes ``data`` are), laid out as ``values`` says (where ``match``; a record whose
    varints are not the template's count is unmatched here). ``places``, for records of
    several templates (:func:`_one_field_set`): each key's ``(begin, width)`` of each
    value, an array of one a record (a number's width one for all), else the template's."""
    columns: dict[str, Column] = {}
    for key, value in values.items():
        wanted = key in keys
        runs: Sequence[tuple[Any, Any]] = value.runs if places is None or key not in places else places[key]
        if value.kind is WireKind.INT64 and value.runs:  # checked even when not wanted
            ((begin, width),) = runs
            run = _run(buffer, data, starts + begin, width)
            numbers, ok = _varints(run, int(np.count_nonzero(run[0] < 0x80)))
            match &= ok
            if wanted:
                columns[key] = (value.kind, numbers)
        elif not wanted:
            continue
        elif value.kind is WireKind.FLOAT and value.runs:
            ((begin, width),) = runs
            floats = _run(buffer, data, starts + begin, width).view("<f4").astype(np.float32, copy=False)
            columns[key] = (value.kind, floats)
        elif value.kind is WireKind.BYTES:
            columns[key] = (value.kind, [_slices(buffer, starts + begin, width) for begin, width in runs])
        else:  # an empty list of numbers
            columns[key] = (value.kind, np.zeros((len(starts), 0), dtype=value.kind.numpy_dtype))
    return columns


@dataclasses.dataclass(frozen=True)
class UniformRecords:
    """The records of a file held in memory that all have one size and one Example layout
    (:func:`uniform_records`): the file as ``data``, ``[records, frame]`` bytes, and
    where each key's values sit in a record's frame."""

    data: np.ndarray
    values: dict[str, _Value]

    def numbers(self, key: str, kind: WireKind, count: int) -> np.ndarray | None:
        """``key``'s ``count`` numbers (``kind``: float or int64) of every record, as a
        ``[records, count]`` float32 or int64 array; None when its list is of another kind
        or holds another number of values, or a varint is one the packed reader leaves to
        protobuf (larger than 9 bytes, negative)."""
        value = self.values.get(key)
        if value is None or value.kind is not kind or kind is WireKind.BYTES:
            return None
        if not value.runs:
            return np.zeros((len(self.data), 0), kind.numpy_dtype) if count == 0 else None
        ((start, width),) = value.runs
        run = np.ascontiguousarray(self.data[:, HEADER_BYTES + start : HEADER_BYTES + start + width])
        if kind is WireKind.FLOAT:
            return run.view("<f4").astype(np.float32, copy=False) if width == 4 * count else None
        numbers, ok = _varints(run, count)
        return numbers if bool(ok.all()) else None

    def byte_runs(self, key: str, count: int) -> list[tuple[int, int]] | None:
        """Where ``key``'s ``count`` bytes values sit in every record's frame: ``(start,
        width)`` of each; None when its list is of another kind or holds another number."""
        value = self.values.get(key)
        if value is None or value.kind is not WireKind.BYTES or len(value.runs) != count:
            return None
        return [(HEADER_BYTES + start, width) for start, width in value.runs]


def uniform_records(buffer: Any, offsets: np.ndarray) -> UniformRecords | None:
    """The records of the file in ``buffer`` (framing checked, ``offsets`` as
    :func:`framed_records` gives them) when they all have one size and every one has the
    first one's Example layout (its structure bytes, every byte but the values', compared
    in one numpy step); None otherwise (or for a layout the template reader does not
    accept)."""
    count = len(offsets) - 1
    if count < 1 or int(offsets[0]) != 0:
        return None
    frame = int(offsets[1])
    if count * frame != len(buffer) or not bool((np.diff(offsets) == frame).all()):
        return None
    data = np.frombuffer(buffer, dtype=np.uint8).reshape(count, frame)
    template = _template(bytes(data[0, HEADER_BYTES : frame - FOOTER_BYTES]))
    if template is None:
        return None
    if not bool((data[:, HEADER_BYTES + template.structure] == template.signature).all()):
        return None
    return UniformRecords(data, template.values)
