"""What the built-in codecs share to adopt TFRecords recordkit did not write (see
:meth:`recordkit.Codec.adopt`): the key names that hint at labels and text, the formats
bytes are recognised as by their magic, and how a single key becomes a plain field
(optional when the records flag its presence, a sequence when it holds several values).
"""

from __future__ import annotations

import dataclasses
import re

import recordkit as rk

__all__ = ["LABEL_HINT", "TEXT_HINT", "PlainKey", "formats", "plain_key", "sniff"]

#: Key names that hold class ids (``label``, ``image/object/class/label``, ``category_id``).
LABEL_HINT = re.compile(r"(^|[/_])(label|labels|class|category|category_id|target)$")
#: Key names that hold text (``image/object/class/text``, ``name``).
TEXT_HINT = re.compile(r"(^|[/_])(text|name|names)$")


def sniff(data: bytes) -> str:
    """What ``data`` is by its first bytes: jpeg, png, wav, flac, ogg, text (UTF-8) or
    binary."""
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data.startswith(b"fLaC"):
        return "flac"
    if data.startswith(b"OggS"):
        return "ogg"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary"
    return "text"


def formats(stats: rk.ForeignKey) -> set[str]:
    """What the sampled bytes values of a key are (see :func:`sniff`); empty for numbers."""
    return {sniff(data) for data in stats.first_bytes()}


@dataclasses.dataclass(frozen=True)
class PlainKey:
    """A single key read as a field of its own: its key mapping, the keys it claims,
    whether it is optional or a sequence, and "in every record" or how often it is there."""

    keys: dict[str, str]
    claims: tuple[str, ...]
    optional: bool
    sequence: bool
    every: str


def plain_key(records: rk.ForeignRecords, stats: rk.ForeignKey) -> PlainKey:
    """``stats`` read as one field: optional when ``<key>/present`` flags it, otherwise
    a sequence when some record holds other than one value."""
    flag = records.presence_flag(stats.key)
    if flag is not None:
        return PlainKey(
            {"": stats.key, "present": flag}, (stats.key, flag), True, False, "when its presence flag is set"
        )
    every = "in every record" if stats.always else "in some records"
    return PlainKey({"": stats.key}, (stats.key,), False, not stats.scalar, every)
