"""The codec contract: one class per kind of value.

A codec turns one field's Python value into tf.train.Example features and back. It is
identified by a stable ``name`` (what schema files say), carries a ``version`` (bumped
when what it stores changes), validates its options with a Pydantic model, and declares
a :class:`~recordkit.WireSpec` from which both the writer and the parser are derived.

Decoding exists twice, because datasets are read two ways:

* :meth:`Codec.decode_tf` runs inside a tf.data pipeline on a whole *batch*: it
  receives the output of ``tf.io.parse_example`` for its keys (dense ``[B, *shape]``
  tensors for fixed features, ``tf.RaggedTensor`` ``[B, (n), *inner]`` for variable
  ones) and returns tensors whose first dimension is the batch.
* :meth:`Codec.decode_numpy` decodes one record without TensorFlow.

The TensorFlow decode is written once, as module functions that :meth:`Codec.decode_tf`
runs and :meth:`Codec.decode_tf_source` hands to ``recordkit codegen``; a codec that
writes none decodes to its values as parsed. So a codec is three methods:
:meth:`Codec.wire_spec`, :meth:`Codec.encode` and :meth:`Codec.decode_numpy`.

A dataset records the version of each codec that stored it, and is read by the codec
:meth:`Codec.for_stored_version` gives for that version: a codec whose stored layout
changed keeps reading what its earlier versions stored.

A codec may also recognise its kind of value in TFRecords recordkit did not write:
:meth:`Codec.adopt` is how :func:`recordkit.infer_schema` asks every registered codec.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar, cast

import pydantic

from recordkit.codec._adoption import Adoption, ForeignRecords, LeftOut
from recordkit.codec._capabilities import check_capability_members
from recordkit.codec._decode_source import DecodeSource, decode_as_parsed
from recordkit.codec._options import CodecOptions
from recordkit.codec._wire import WireSpec, WireValues
from recordkit.errors import CodecOptionsError, CodecVersionError

__all__ = ["Codec", "CodecOptions"]

OptionsT = TypeVar("OptionsT", bound=CodecOptions)


class Codec(abc.ABC, Generic[OptionsT]):
    """Base class of every codec, built-in or from a plugin.

    Subclasses set the class attributes ``name``, ``version`` and ``options_model`` and
    implement the three abstract methods (:meth:`wire_spec`, :meth:`encode`,
    :meth:`decode_numpy`); the TensorFlow decode is derived (:meth:`decode_tf`). What a
    codec may do beyond that is an optional capability (recordkit.codec._capabilities:
    drawn, summarized, a picture readers fit, padded its own way ...). Codecs must be
    cheap to construct and hold no open resources: the writer builds one per field and
    sends it to worker processes.
    """

    #: The stable name schemas refer to ("image", "audio" ...). Never a module path.
    name: ClassVar[str]
    #: The codec's version; bump it whenever the bytes it writes change meaning. Datasets
    #: record it, and readers decode them with :meth:`for_stored_version` of it.
    version: ClassVar[str] = "1"
    #: The Pydantic model that validates this codec's options.
    options_model: ClassVar[type[CodecOptions]] = CodecOptions
    #: One line for ``recordkit plugins`` and the docs.
    summary: ClassVar[str] = ""
    #: Options that change only how values are given to :meth:`encode` and returned by
    #: the decodes, never the bytes stored (the bbox codec's ``format``: boxes are stored
    #: in one canonical order). They are left out of the wire layout and the fingerprint,
    #: and a reader's schema may set them otherwise than the writer's did.
    decode_options: ClassVar[frozenset[str]] = frozenset()
    #: When :func:`recordkit.infer_schema` asks this codec to :meth:`adopt` foreign keys,
    #: relative to the other codecs: lower first, ties by name. Codecs that recognise
    #: specific layouts go first (the built-in ``bbox`` 100, ``image`` 200, ``tensor``
    #: 300), those that take any key of a kind last (``label`` 800, ``text`` 850,
    #: ``scalar`` 900); the default, 500, sits between.
    adopt_order: ClassVar[int] = 500

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_capability_members(cls)

    def __init__(self, options: OptionsT | Mapping[str, Any] | None = None) -> None:
        self.options: OptionsT = self.parse_options(options)

    @classmethod
    def parse_options(cls, options: CodecOptions | Mapping[str, Any] | None) -> OptionsT:
        """Validate ``options`` against :attr:`options_model`.

        Raises :class:`~recordkit.errors.CodecOptionsError` naming each bad option.
        """
        # OptionsT is options_model; the casts are what Python's generics cannot say.
        if isinstance(options, cls.options_model):
            return cast(OptionsT, options)
        try:
            return cast(OptionsT, cls.options_model.model_validate(dict(options or {})))
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"option {'.'.join(str(p) for p in err['loc']) or '(all)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise CodecOptionsError(problems, codec=cls.name) from None
        except (TypeError, ValueError) as exc:  # dict() of a list or a str raises ValueError
            raise CodecOptionsError(f"options must be a mapping ({exc})", codec=cls.name) from None

    def options_dict(self) -> dict[str, Any]:
        """The options as JSON-ready data, without those left at their defaults."""
        return self.options.model_dump(mode="json", exclude_defaults=True)

    def stored_options(self) -> dict[str, Any]:
        """The options that shape what is stored, as JSON-ready data with the defaults
        filled in: every option but the :attr:`decode_options`."""
        dumped = self.options.model_dump(mode="json")
        return {name: value for name, value in dumped.items() if name not in self.decode_options}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options_dict()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Codec) and type(self) is type(other) and self.options == other.options

    def __hash__(self) -> int:
        return hash((type(self), self.options))

    # -- the contract ------------------------------------------------------------------

    @abc.abstractmethod
    def wire_spec(self) -> WireSpec:
        """The Example features this field becomes; the writer and parser derive from it."""

    @abc.abstractmethod
    def encode(self, value: Any) -> WireValues:
        """Validate one Python value and return its wire values by feature name.

        BYTES features take ``bytes`` (shape ``()``) or a sequence of ``bytes``; INT64
        and FLOAT features take a number, a sequence of numbers or a numpy array whose
        size matches the feature's shape. Raise
        :class:`~recordkit.errors.InvalidValueError` with the reason on bad input; the
        writer adds the field and record to the message.
        """

    @abc.abstractmethod
    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        """Decode one record without TensorFlow.

        ``wire`` maps each feature name to its parsed values: ``bytes`` for a BYTES
        feature of shape ``()``, a ``list[bytes]`` for other BYTES features, and a numpy
        array of shape ``shape`` (fixed) or ``(n, *inner)`` (variable) for numbers.
        """

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        """Decode a batch inside a TensorFlow graph (must be ``tf.function``-safe).

        ``wire`` maps each feature name to the batched output of
        ``tf.io.parse_example``; return a tensor, a ragged tensor or a dict of them, each
        with the batch as its first dimension.

        Written once by default: it runs :meth:`decode_tf_source`, the codec's own decode
        function or, for a codec that gives none, the values as parsed (what
        :func:`~recordkit.codec._decode_source.decode_as_parsed` gives). Override it only
        where the TensorFlow decode cannot be written as standalone source (a decode that
        calls back into Python); :meth:`decode_tf_source` then says None.
        """
        source = self.decode_tf_source()
        if source is None:
            raise NotImplementedError(
                f"codec {self.name!r}: decode_tf_source() returns None, so decode_tf() must be overridden"
            )
        return source(wire)

    def for_stored_version(self, version: str) -> Codec[Any]:
        """The codec that reads (and describes, through :meth:`wire_spec`) the records
        that ``version`` of this codec stored.

        Readers of a dataset call it for each field, with the version the dataset's
        manifest records, before they build a parser: a codec whose stored layout changed
        (its :attr:`version` bumped) overrides it to return a codec that reads the old
        layout, so that datasets written before the change keep reading with the new
        release. For example, a codec whose options can still select the old layout::

            def for_stored_version(self, version: str) -> rk.Codec[Any]:
                if version == "1":
                    return MyCodec(self.options.model_copy(update={"layout": "lists"}))
                return super().for_stored_version(version)

        The default returns the codec itself for its own :attr:`version` and raises
        :class:`~recordkit.errors.CodecVersionError` for any other: the installed codec
        does not read what another version stored.
        """
        if version == self.version:
            return self
        raise CodecVersionError(
            f"the records were stored by version {version} of codec {self.name!r}; the installed codec "
            f"is version {self.version} and does not read them: install version {version} of codec "
            f"{self.name!r} (the version that wrote them)",
            codec=self.name,
        )

    def for_mapped_keys(self, keys: Mapping[str, Any]) -> Codec[Any]:
        """The codec for a field whose schema maps its wire features to other Example
        keys (``FieldSpec.keys``, as given: names, column lists, constants), which is
        how schemas describe records another tool wrote.

        Binding calls it for every field with a non-empty ``keys``. A codec whose own
        layout differs from the one other tools write overrides it to return a codec
        that stores (and reads) theirs: the ``bbox`` codec packs its boxes into bytes by
        default, and reads float lists under mapped keys unless its ``layout`` option
        says otherwise. The default returns the codec itself.
        """
        return self

    # -- optional hooks ---------------------------------------------------------------

    def related_fields(self) -> tuple[str, ...]:
        """Other fields of the record this codec checks its value against (e.g. the
        image whose size bounds a set of boxes). Empty by default."""
        return ()

    def check_related(self, wire: WireValues, related: Mapping[str, WireValues]) -> None:
        """Check this field's encoded ``wire`` values against the encoded values of
        :meth:`related_fields` (raise InvalidValueError on a mismatch)."""

    def pad_value(self) -> int | float:
        """The value that fills padding added to this codec's decoded values.

        Readers pad when they make ragged batches dense (``load_dataset(pad=...)``) and
        when they bring images to one size (``image_fit="crop_or_pad"``,
        ``"random_crop_or_pad"``, ``"resize_with_pad"``). 0 (the default) suits pixels,
        samples and counts; a codec whose 0 means something says what padding must be
        instead (the ``mask`` codec: its ``ignore_index``, so that a loss skips the
        padding rather than learning it as background). It applies to numeric and
        boolean outputs (a nonzero value pads booleans with True); strings always pad
        with the empty string; the PyTorch collate pads with it too. Read once when a
        pipeline is built, never per record.
        """
        return 0

    @classmethod
    def adopt(cls, records: ForeignRecords) -> Iterator[Adoption | LeftOut]:
        """Propose fields of this codec for TFRecords recordkit did not write.

        :func:`recordkit.infer_schema` samples the records and calls this on every
        registered codec, in :attr:`adopt_order`. Look at the keys no earlier proposal
        claimed (``records.unclaimed()``; each :class:`~recordkit.ForeignKey` has the
        key's kind, per-record lengths, first values and range), and yield an
        :class:`~recordkit.Adoption` for each group of keys this codec can read (its
        options, its key mapping, the keys it claims), or a :class:`~recordkit.LeftOut`
        for keys it recognises but cannot read. Keys are claimed as each item is
        yielded. Yield nothing (the default) for keys that are not this codec's.
        """
        return iter(())

    def decode_tf_source(self) -> DecodeSource | None:
        """:meth:`decode_tf` as standalone source, for parser modules generated by
        ``recordkit codegen`` that run without recordkit (see
        :class:`~recordkit.DecodeSource`).

        Write the decode once, as a module function this returns: recordkit's parser
        (the default :meth:`decode_tf` runs it) and generated code then share one decode
        that cannot drift. The default is derived from the wire spec: the values as
        parsed (the one feature's tensor, or a dict by feature name), right for a codec
        whose :meth:`decode_numpy` gives its wire values as they are. A codec that
        overrides :meth:`decode_tf` without overriding this gets None: its fields cannot
        be generated (rather than generated with a decode that is not its own)."""
        if type(self).decode_tf is not Codec.decode_tf:
            return None
        return DecodeSource(decode_as_parsed, {"names": list(self.wire_spec().names)})
