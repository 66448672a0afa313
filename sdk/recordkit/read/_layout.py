"""The layout of a ``tf.data`` read: the reader's shaping options (``pad``,
``image_size``, ``image_fit``, ``image_method``) checked against the opened fields and
worked out once per field, with the fields the per-record step decodes, so that the
batched decode (:mod:`recordkit.read._load_dataset`) and the per-record one
(:mod:`recordkit.read._per_record`) shape values by one plan.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

from recordkit.codec._capabilities import decodes_per_record, raster_kind
from recordkit.codec._geometry import ImageGeometry, follows_image
from recordkit.read._image_fit import CROP_FITS, ImageFit, crop_offsets, fit_images
from recordkit.read._numpy_geometry import Size, fixed_scale, image_sizes
from recordkit.read._open import OpenedDataset
from recordkit.read._options import PipelineOptions
from recordkit.schema._bound import BoundField

__all__ = ["DecodeLayout", "padding_values"]


@dataclasses.dataclass(frozen=True)
class DecodeLayout:
    """What the decode steps need, worked out once from the opened dataset and the options."""

    dataset: OpenedDataset
    #: Fields padded (to the batch's largest), and the size each fitted field is brought to.
    padded: frozenset[str]
    sizes: dict[str, Size]
    #: The resize method and the pad value of each padded or fitted field.
    methods: dict[str, str]
    pad_values: dict[str, int | float]
    #: Fields decoded record by record, in a parallel map: plain (neither optional nor a
    #: sequence) stored fields whose codec declares a raster (pictures, decoded one by one,
    #: and fitted to their size: a crop decodes only its window where it can), unless they
    #: all stay ragged in their batches (:func:`_splits_pictures`).
    per_record: tuple[BoundField, ...]
    #: Other fields decoded record by record in that map, when the batches are split
    #: anyway (pictures decoded per record, or single records): plain stored fields whose
    #: codec asks for it (:meth:`~recordkit.DecodedPerRecord.decodes_per_record`: audio), padded
    #: (or single records), so that each record's value is made dense where it is decoded.
    per_record_values: tuple[BoundField, ...]
    #: Whether the padded fields are padded in the batched step (batches that stay as
    #: they are); otherwise each record is made dense in the per-record step and the
    #: batch padded as it is formed (``padded_batch``), or records stay single.
    pads_in_batch: bool
    #: The key of the random crop's stateless draws.
    crop_seed: int
    #: The read's geometry, and the fields that follow a picture (by name: the picture's).
    geometry: ImageGeometry
    followers: dict[str, str]
    #: The one scale every picture of a field decodes at, where the dataset's picture
    #: sizes fix it (:func:`~recordkit.read._numpy_geometry.fixed_scale`; 1: the plain
    #: decode): no choice is made in the graph, record by record.
    fixed_scales: dict[str, int] = dataclasses.field(default_factory=dict)
    #: Whether each record is parsed alone (:mod:`recordkit.read._record_parse`): its
    #: pictures and per-record values decoded in one parallel map, the other fields'
    #: wire values batched as they are and decoded a batch at a time after it.
    parsed_per_record: bool = False

    @classmethod
    def build(cls, dataset: OpenedDataset, options: PipelineOptions) -> DecodeLayout:
        names = [f.name for f in dataset.fields]
        geometry = options.image_geometry  # before the crop seed: it may hold the seed
        sizes = image_sizes(dataset.fields, geometry.size)
        pad = options.pad
        padded = set(names) if pad is True else set() if pad is False else set(_known(pad, names, "pad"))
        padded -= set(sizes)
        image_method = geometry.method
        chosen = dict(image_method) if isinstance(image_method, Mapping) else {}
        _known(chosen, list(sizes), "image_method")
        methods = {
            f.name: chosen.get(f.name)
            or (
                "nearest"
                if raster_kind(f.codec) == "indices"
                else (image_method if isinstance(image_method, str) else "bilinear")
            )
            for f in dataset.fields
            if f.name in sizes
        }
        pad_values = {f.name: _pad_value(f) for f in dataset.fields if f.name in sizes or f.name in padded}
        # What the per-record step can decode: a value in every record (not optional, no
        # default), not a sequence.
        plain = [
            f
            for f in dataset.stored_fields.fields
            if f.presence_key is None and not f.spec.sequence and f.name not in dataset.defaulted
        ]
        pictures = tuple(f for f in plain if raster_kind(f.codec))
        per_record = pictures if _splits_pictures(pictures, padded, sizes, geometry, options) else ()
        values = tuple(
            f
            for f in plain
            if not raster_kind(f.codec)
            and decodes_per_record(f.codec)
            and (f.name in padded or options.batch_size is None)
        )
        followers = _followers(dataset, geometry, {f.name for f in per_record})
        parsed_per_record = _parses_records(dataset, per_record, values, padded, sizes, followers, options)
        split = bool(per_record) or options.batch_size is None  # the batches are split anyway
        per_record_values = values if split or parsed_per_record else ()
        seed = options.seed if options.seed is not None else geometry.seed
        crop_seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        pads_in_batch = not per_record and options.batch_size is not None
        batched_fits = [name for name in sizes if name not in {f.name for f in per_record}]
        if batched_fits and (geometry.flip or geometry.fit == "random_resized_crop"):
            raise ValueError(
                f"fields {batched_fits} are optional or sequences of pictures: a flip or a random resized "
                "crop "
                "applies to pictures every record has"
            )
        fixed_scales = {
            f.name: scale
            for f in per_record
            if f.name in sizes and (scale := fixed_scale(f, sizes[f.name], dataset.picture_sizes)) is not None
        }
        return cls(
            dataset,
            frozenset(padded),
            sizes,
            methods,
            pad_values,
            per_record,
            per_record_values,
            pads_in_batch,
            crop_seed,
            geometry,
            followers,
            fixed_scales,
            parsed_per_record,
        )

    def fit(self, name: str, value: Any, shapes: Any, draws: Any, fit: ImageFit) -> tuple[Any, Any]:
        """A batch of the field's pictures brought to its size, and the crop windows'
        offsets (None for the resizes)."""
        uniforms = None if draws is None else draws[:, :2]
        offsets = crop_offsets(shapes, self.sizes[name], fit, uniforms) if fit in CROP_FITS else None
        fitted = fit_images(
            value, self.sizes[name], fit, self.methods[name], pad_value=self.pad_values[name], offsets=offsets
        )
        return fitted, offsets


def padding_values(spec: dict[str, Any], layout: DecodeLayout) -> dict[str, Any]:
    """``padded_batch``'s padding value of each output: the field's pad value (shapes,
    offsets and other fields are never padded: records of a batch share their shape)."""
    import tensorflow as tf

    def scalar(dtype: Any, pad_value: int | float) -> Any:
        if dtype == tf.string:
            return tf.constant("", tf.string)
        if dtype == tf.bool:
            return tf.constant(bool(pad_value))
        return tf.constant(pad_value, dtype)

    values = {}
    for key, value in spec.items():
        pad = layout.pad_values.get(key, 0)
        values[key] = tf.nest.map_structure(lambda leaf, pad=pad: scalar(leaf.dtype, pad), value)
    return values


def _pad_value(field: BoundField) -> int | float:
    """The field's codec's :meth:`~recordkit.Codec.pad_value`, checked to be a number."""
    value = field.codec.pad_value()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"codec {field.codec.name!r} (field {field.name!r}): pad_value() must return an int or "
            f"a float, not {value!r}"
        )
    return value


def _splits_pictures(
    pictures: tuple[BoundField, ...],
    padded: set[str],
    sizes: Mapping[str, Size],
    geometry: ImageGeometry,
    options: PipelineOptions,
) -> bool:
    """Whether the read's pictures are decoded record by record: when a picture is
    padded or fitted (each record made dense on every core, then ``padded_batch``),
    when the geometry asks something of them (a flip, boxes that follow them), or for
    single records. Pictures that all stay ragged in their batches (no ``pad``, no
    ``image_size``) are decoded in the batch, by their codec's batched decode, which
    lays them out ragged with one copy of their pixels: split into records they would
    be batched again by ``ragged_batch``, whose decode of the batched variants costs
    far more than that copy."""
    if not pictures:
        return False
    return (
        options.batch_size is None
        or geometry.moves_boxes
        or any(f.name in padded or f.name in sizes for f in pictures)
    )


def _parses_records(
    dataset: OpenedDataset,
    pictures: tuple[BoundField, ...],
    values: tuple[BoundField, ...],
    padded: set[str],
    sizes: Mapping[str, Size],
    followers: Mapping[str, str],
    options: PipelineOptions,
) -> bool:
    """Whether each record is parsed alone (see :attr:`DecodeLayout.parsed_per_record`):
    batches are asked for, with no random crop (its draws are keyed by the batch) and
    no field that follows a picture (it is moved with its picture, record by record);
    something is decoded record by record (``pictures``, each padded or fitted, or
    ``values`` whose codec asks for it); every field is read from keys of its own (no
    column keys, no constants, no defaults), and each of the others is plain with
    fixed-shape wire features, so that its records' wire values batch densely into what
    the batch's own parse gives."""
    if not pictures or options.batch_size is None or options.random_crop or followers:
        return False
    if dataset.defaulted or any(f.name not in padded and f.name not in sizes for f in pictures):
        return False
    decoded_alone = {f.name for f in (*pictures, *values)}
    for field in dataset.fields:
        if any(keyed.columns or keyed.constant is not None for keyed in field.features):
            return False
        if field.name in decoded_alone:
            continue
        if field.presence_key is not None or field.spec.sequence or not _fixed_wire(field):
            return False
    return True


def _fixed_wire(field: BoundField) -> bool:
    """Whether each of the field's wire features has one fixed shape in every record."""
    return all(None not in keyed.feature.shape for keyed in field.features)


def _known(names: Sequence[str] | Mapping[str, Any], fields: list[str], option: str) -> list[str]:
    unknown = [n for n in names if n not in fields]
    if unknown:
        raise ValueError(f"{option} names {unknown}, which are not among the fields it applies to ({fields})")
    return list(names)


def _followers(dataset: OpenedDataset, geometry: ImageGeometry, pictures: set[str]) -> dict[str, str]:
    """The fields that follow a picture this read decodes record by record, by the
    picture's name; an error for a tied field whose picture is left out or batched."""
    if not geometry.moves_boxes:
        return {}
    names = {f.name for f in dataset.fields}
    followers = {}
    for field in dataset.fields:
        image = follows_image(field.codec)
        if image is None or field.spec.sequence:
            continue
        if image not in names:
            raise ValueError(
                f"field {field.name!r} follows the picture {image!r}, which this read leaves out: "
                f"read {image!r} too, or read without a geometry"
            )
        if image not in pictures:
            raise ValueError(
                f"field {field.name!r} follows the picture {image!r}, which is optional or a sequence: "
                "boxes follow pictures that every record has"
            )
        followers[field.name] = image
    return followers
