"""The ``text`` codec: one UTF-8 string per record.

A record gives a ``str``, or ``bytes`` that must be valid UTF-8 (invalid bytes are an
error naming their offset, never replaced silently). The text is optionally brought to
a Unicode normal form first, then checked against ``max_length``, counted in characters
(code points) of the normalised text; a longer text is an error unless the schema asks
for ``overflow: truncate``. Stored as its UTF-8 bytes under the field's main key.
Decodes to a ``tf.string`` ``[B]`` tensor in TensorFlow and to ``str`` in numpy.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pydantic

import recordkit as rk
from recordkit_codecs._foreign import formats, plain_key
from recordkit_codecs._hf import value_entry
from recordkit_codecs._tfds import text_feature

__all__ = ["TextCodec", "TextOptions", "utf8_column"]


class TextOptions(rk.CodecOptions):
    """Options of the ``text`` codec."""

    max_length: int | None = pydantic.Field(
        default=None, ge=0, description="Most characters (code points, after normalisation) a text may have."
    )
    overflow: Literal["error", "truncate"] = pydantic.Field(
        default="error", description="What a text longer than max_length does: fail, or get cut."
    )
    normalize: Literal["NFC", "NFD", "NFKC", "NFKD"] | None = pydantic.Field(
        default=None, description="Unicode normal form applied before storing (None: keep as given)."
    )


class TextCodec(rk.Codec[TextOptions]):
    """A UTF-8 string per record, with optional normalisation and length limit."""

    name = "text"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:Text"

    options_model = TextOptions
    summary = "a UTF-8 string per record (optional normalisation and length limit)"
    adopt_order = 850

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Foreign bytes keys whose every sampled value is UTF-8 text."""
        for stats in records.unclaimed():
            if records.claimed(stats.key) or records.flags_an_unclaimed_key(stats.key):
                continue
            if stats.kind is not rk.WireKind.BYTES or not formats(stats) <= {"text"}:
                continue
            plain = plain_key(records, stats)
            yield rk.Adoption(
                claims=plain.claims,
                name=stats.key,
                keys=plain.keys,
                description=f"UTF-8 text {plain.every}",
                optional=plain.optional,
                sequence=plain.sequence,
            )

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.BYTES, (), "the text, UTF-8"),))

    # -- showing, counting and converting (optional capabilities) ------------------

    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        """TFDS's ``Text`` reads the UTF-8 bytes as they are (rk.TfdsDescribed)."""
        return (text_feature(),)

    def hf_feature(self) -> rk.HfFeature:
        """Hugging Face's ``Value("string")`` (rk.HfDescribed)."""
        return rk.HfFeature(value_entry("str"), self.decode_numpy)

    def caption(self, value: Any) -> str:
        """The text (rk.Captioned)."""
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    def summarize(self, value: Any) -> rk.Statistics:
        """The length in characters (rk.Summarized)."""
        return {"length": [float(len(self.caption(value)))]}

    def encode(self, value: Any) -> rk.WireValues:
        text = _as_text(value)
        options = self.options
        if options.normalize is not None:
            text = unicodedata.normalize(options.normalize, text)
        if options.max_length is not None and len(text) > options.max_length:
            if options.overflow == "error":
                raise rk.errors.InvalidValueError(
                    f"text has {len(text)} characters, more than max_length {options.max_length} "
                    "(set overflow: truncate to cut it)"
                )
            text = text[: options.max_length]
        try:
            return {"": text.encode("utf-8")}
        except UnicodeEncodeError as exc:
            raise rk.errors.InvalidValueError(
                f"text is not encodable as UTF-8 at character {exc.start}: {exc.reason}"
            ) from None

    def decode_numpy(self, wire: Mapping[str, Any]) -> str:
        data = wire[""]
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise rk.errors.DecodeError(f"stored text is not valid UTF-8 at byte {exc.start}") from None

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[str]:
        """Many records' texts at once (:class:`recordkit.DecodedInColumns`): the ``str``
        :meth:`decode_numpy` gives each (:func:`utf8_column`)."""
        return utf8_column(wire[""])

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_text_tf`: what decode_tf runs and ``recordkit codegen`` copies."""
        return rk.DecodeSource(decode_text_tf)


def utf8_column(values: Sequence[bytes]) -> list[str]:
    """The texts of a column of stored UTF-8 values (one ``bytes`` a record), decoded in
    one pass: no wire dict and no codec call a record.
    Invalid UTF-8 raises ``UnicodeDecodeError``, a ``ValueError``: the reader takes it for
    a refused value and decodes the records one by one, where the record's own error
    names it and its byte."""
    return [str(value, "utf-8") for value in values]


def decode_text_tf(wire: Mapping[str, Any]) -> Any:
    """The batched TensorFlow decode of a text field: the UTF-8 bytes, as parsed
    (generated parser modules carry a copy of this function)."""
    return wire[""]


def _as_text(value: Any) -> str:
    """``value`` as a ``str``: bytes are decoded strictly as UTF-8."""
    if isinstance(value, (str, np.str_)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview, np.bytes_)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise rk.errors.InvalidValueError(
                f"bytes are not valid UTF-8 at byte offset {exc.start} ({exc.reason})"
            ) from None
    raise rk.errors.InvalidValueError(f"expected a str or UTF-8 bytes, got {type(value).__name__}")


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``text`` codec."""
    registry.register(TextCodec)
