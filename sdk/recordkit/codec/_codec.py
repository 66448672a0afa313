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
runs and :meth:`Codec.decode_tf_source` hands to ``recordkit codegen``.

A dataset records the version of each codec that stored it, and is read by the codec
:meth:`Codec.for_stored_version` gives for that version: a codec whose stored layout
changed keeps reading what its earlier versions stored.

A codec may also recognise its kind of value in TFRecords recordkit did not write:
:meth:`Codec.adopt` is how :func:`recordkit.infer_schema` asks every registered codec.
"""

from __future__ import annotations

import abc
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

import pydantic

from recordkit.codec._adoption import Adoption, ForeignRecords, LeftOut
from recordkit.codec._decode_source import DecodeSource
from recordkit.codec._wire import WireSpec, WireValues
from recordkit.errors import CodecOptionsError, CodecVersionError

__all__ = ["Codec", "CodecOptions", "check_numbers"]

_INT64 = (-(2**63), 2**63 - 1)


def _leaf_types(annotation: Any) -> set[Any] | None:
    """The scalar types an annotation admits, through unions, containers, Annotated and
    Literal; None when it admits anything (Any, object, or unknown generics)."""
    found: set[Any] = set()
    stack = [annotation]
    while stack:
        item = stack.pop()
        if item is Any or item is object:
            return None
        origin = typing.get_origin(item)
        if origin is Literal:
            found.update(type(arg) for arg in typing.get_args(item))
        elif origin is typing.Annotated:
            stack.append(typing.get_args(item)[0])
        elif origin is not None or isinstance(item, types.UnionType):
            stack.extend(arg for arg in typing.get_args(item) if arg is not Ellipsis)
        elif isinstance(item, type):
            found.add(item)
        else:
            return None
    return found


def check_numbers(value: Any, annotation: Any) -> None:
    """ValueError if ``value`` (or a value nested in it) is a bool where ``annotation``
    admits numbers but no bool, or an int beyond int64 where it admits ints."""
    leaves = _leaf_types(annotation)
    if leaves is None:
        return
    numbers = bool(leaves & {int, float})
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            if numbers and bool not in leaves:
                raise ValueError(f"must be a number, not the boolean {str(item).lower()}")
        elif isinstance(item, int):
            if int in leaves and not _INT64[0] <= item <= _INT64[1]:
                raise ValueError(f"{item} is out of the int64 range")
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())


class CodecOptions(pydantic.BaseModel):
    """Base of every codec's options model: immutable, unknown options are errors.

    Numbers are checked more strictly than pydantic's default, for every codec's options
    alike: a boolean is refused where a number is expected (``channels: true`` would
    otherwise become 1, ``max_length: false`` 0), and an integer must fit in int64, the
    widest integer TensorFlow stores.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    @pydantic.field_validator("*", mode="before")
    @classmethod
    def _strict_numbers(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            check_numbers(value, field.annotation)
        return value


OptionsT = TypeVar("OptionsT", bound=CodecOptions)


class Codec(abc.ABC, Generic[OptionsT]):
    """Base class of every codec, built-in or from a plugin.

    Subclasses set the class attributes ``name``, ``version`` and ``options_model`` and
    implement the four abstract methods. Codecs must be cheap to construct and hold no
    open resources: the writer builds one per field and sends it to worker processes.
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
    #: Whether decoded values are pictures that readers may resize, crop and pad
    #: (``load_dataset(image_size=...)`` applies to such fields unless it names fields):
    #: ``"pixels"`` (an image ``[H, W, C]``, resized with interpolation), ``"indices"``
    #: (a map of class indices ``[H, W]`` or ``[H, W, 1]``, only ever resized with
    #: nearest neighbour, so that no index is blended into another), or None.
    raster: ClassVar[Literal["pixels", "indices"] | None] = None
    #: When :func:`recordkit.infer_schema` asks this codec to :meth:`adopt` foreign keys,
    #: relative to the other codecs: lower first, ties by name. Codecs that recognise
    #: specific layouts go first (the built-in ``bbox`` 100, ``image`` 200, ``tensor``
    #: 300), those that take any key of a kind last (``label`` 800, ``text`` 850,
    #: ``scalar`` 900); the default, 500, sits between.
    adopt_order: ClassVar[int] = 500

    #: For a raster codec that stores each picture's size: the wire features (INT64,
    #: shape ``()``) that hold its height and width. With :meth:`decode_tf_window`, it
    #: lets readers that crop (``image_fit="crop_or_pad"``, ``"random_crop_or_pad"``)
    #: place the window before decoding, and decode only the window.
    size_features: ClassVar[tuple[str, str] | None] = None

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

    @abc.abstractmethod
    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        """Decode a batch inside a TensorFlow graph (must be ``tf.function``-safe).

        ``wire`` maps each feature name to the batched output of
        ``tf.io.parse_example``; return a tensor, a ragged tensor or a dict of them, each
        with the batch as its first dimension.
        """

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
        with the empty string. Read once when the pipeline is built, never per record.
        """
        return 0

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """Decode a batch straight into the dense form ``load_dataset(pad=...)`` gives.

        Return ``(padded, shapes)``: ``padded`` is what :meth:`decode_tf` returns (a
        single ragged tensor) made dense, padded with :meth:`pad_value` to the batch's
        largest (what its ``to_tensor(default_value=self.pad_value())`` gives), and
        ``shapes`` is int64 ``[B, rank - 1]``, each record's true shape. Codecs of large
        values (images) implement it to pad as they decode, which saves copying every
        value again. A codec whose :meth:`decode_tf` returns a dict of ragged tensors
        may return a dict of padded values and a dict of their shapes, by the same keys
        (the ``bbox`` codec does, from its packed bytes). None (the default): the reader
        pads what :meth:`decode_tf` returns.
        """
        return None

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

    def decodes_per_record(self) -> bool:
        """Whether readers that split their batches into records anyway should decode
        this codec's values record by record, in their per-record step, rather than a
        batch at a time before the split.

        ``load_dataset`` splits its batches when it decodes pictures record by record
        (every core decodes) and batches them again (``pad``), and when it yields single
        records. A large value whose batched decode joins the batch's payloads, and whose
        split then copies each record's part out again (audio), costs less decoded where
        the record is: :meth:`decode_tf` then gets a batch of static size 1, which it
        may decode by a shorter path. The values must be the same either way. False
        (the default) for small values, which cost less per batch; pictures (a
        :attr:`raster`) are always decoded record by record.
        """
        return False

    def decode_tf_window(self, wire: Mapping[str, Any], window: Any) -> Any | None:
        """Decode only a window of one picture (for codecs with :attr:`size_features`).

        ``wire`` is a batch of one record (static size 1); ``window`` is int ``[4]``:
        top, left, height, width, inside the stored picture. Return the window's pixels
        without the batch dimension (``[height, width, ...]``), the same values a full
        decode cut to the window gives; None (the default) when the codec has no cheaper
        way than decoding the whole picture (readers then decode it and cut).
        """
        return None

    def decode_tf_source(self) -> DecodeSource | None:
        """:meth:`decode_tf` as standalone source, for parser modules generated by
        ``recordkit codegen`` that run without recordkit (see
        :class:`~recordkit.DecodeSource`). None (the default): the codec has none, and
        its fields cannot be generated.

        Write the decode once, as a module function this returns, and let
        :meth:`decode_tf` run it (``return self.decode_tf_source()(wire)``): recordkit's
        parser and generated code then share one decode that cannot drift."""
        return None
