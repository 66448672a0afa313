"""The pipeline shape of a ``tf.data`` read that parses each record alone: each serialized
record parsed in one parallel map, its pictures and per-record values (audio) decoded
there, the records batched as they are padded (the shape of the TFRecord tutorials'
pipeline), and the other fields decoded a batch at a time after that.

A read whose pictures are padded or fitted into batches decodes them record by record
anyway. The batched shape (:mod:`recordkit.read._load_dataset`) would parse a batch,
split it (``unbatch``) and decode each record in a second map: two large functions for
TensorFlow to optimize and instantiate at every iterator and every value carried across
``unbatch``. Here one function per record parses the fields' keys
(``tf.io.parse_example`` of the record, or of a batch of one when a picture is fitted:
the values the codecs' window and scaled decodes take) and decodes what is decoded
record by record with the same per-record decode
(:func:`~recordkit.read._per_record.record_decoder`: the same values, shapes, padding
and checks). The other fields (labels, text, boxes) keep their parsed wire values, of
fixed shapes, which ``padded_batch`` stacks into exactly what the batch's own parse
gives; their codecs decode them after it, batched, as a read without pictures does
(:func:`~recordkit.read._parse.parsed_decoder`). The values are those of the
batched shape. Which reads take it: :attr:`~recordkit.read._layout.DecodeLayout.parsed_per_record`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recordkit.read._dense import SHAPE_SUFFIX, pad_into
from recordkit.read._layout import DecodeLayout
from recordkit.read._options import PipelineOptions
from recordkit.read._parse import field_plan, parsed_decoder, spec_from_plans
from recordkit.read._per_record import dense_batches, record_decoder
from recordkit.read._record_checks import checked_record_parse
from recordkit.read._traced import parallel_map
from recordkit.read._wire_checks import RecordLocator, wire_checks

__all__ = ["WIRE", "parses_per_record", "records_parsed_one_by_one"]

#: The hidden component that carries the parsed wire values of the fields decoded after
#: batching, by Example key (a slash: no field is named so).
WIRE = "/wire"


def parses_per_record(layout: DecodeLayout, options: PipelineOptions) -> bool:
    """Whether the read takes this shape (the layout decides it, from ``options``)."""
    return layout.parsed_per_record


def records_parsed_one_by_one(
    records: Any, layout: DecodeLayout, options: PipelineOptions, locate: RecordLocator | None = None
) -> Any:
    """``records`` (serialized, one by one) parsed, decoded and batched, padded; the read
    :func:`parses_per_record` accepts. Each record's values of the fields of a fixed shape
    are counted as it is parsed (:mod:`recordkit.read._record_checks`): a record holding
    another number (or size) of values stops the read with an error naming its field and,
    found by ``locate`` (default: in the split's shards), its file, offset and record."""
    import tensorflow as tf

    alone = {f.name for f in (*layout.per_record, *layout.per_record_values)}
    plans = [field_plan(f) for f in layout.dataset.fields]
    spec = spec_from_plans(plans)
    later = [f for f in layout.dataset.fields if f.name not in alone]
    later_keys = [key for plan in plans if plan["name"] not in alone for key in spec_from_plans([plan])]
    # A fitted picture is cut or scaled from a batch of one (the codecs' window and scaled
    # decodes take one), which the parse then gives with no op a key to make it so.
    # Otherwise the record is parsed as itself (the tutorials' parse_single_example): a
    # picture decodes from its own values (Raster.decode_tf_record) and the values
    # batched later need no op to drop a batch dimension.
    as_batch_of_one = any(f.name in layout.sizes for f in layout.per_record)
    decode = record_decoder(
        layout,
        options,
        {},
        dense=True,
        parsed_as_batch_of_one=as_batch_of_one,
        batched_later=frozenset(f.name for f in later),
    )

    dataset = layout.dataset
    if locate is None:
        locate = RecordLocator(dataset.shards, dataset.compression)
    parse_checked = checked_record_parse(
        spec, wire_checks(dataset.fields), locate, batch_of_one=as_batch_of_one
    )

    def parse(serialized: Any) -> dict[str, Any]:
        parsed = parse_checked(serialized)
        wire: dict[str, Any] = {
            plan["name"]: {f["name"]: parsed[f["key"]] for f in plan["features"]}
            for plan in plans
            if plan["name"] in alone
        }
        if later_keys:
            wire[WIRE] = {
                key: tf.squeeze(parsed[key], [0]) if as_batch_of_one else parsed[key] for key in later_keys
            }
        return decode(wire)

    decoded = parallel_map(
        records, parse, deterministic=options.deterministic, calls=options.num_parallel_calls
    )
    return dense_batches(decoded, layout, options, _batch_decoder(later, layout) if later else None)


def _batch_decoder(later: list[Any], layout: DecodeLayout) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The step after ``padded_batch``: the fields ``later`` decoded from their batched
    wire values by their codecs' batched decodes, and padded, as the batched shape's
    decode gives them (:func:`~recordkit.read._load_dataset._decoder`)."""
    padded = {f.name for f in later if f.name in layout.padded}
    _, decode = parsed_decoder(later, padded)

    def finish(batch: dict[str, Any]) -> dict[str, Any]:
        out = dict(batch)
        out.update(decode(out.pop(WIRE)))
        for field in later:
            name = field.name
            if name in padded and name + SHAPE_SUFFIX not in out:
                pad_into(out, name, out[name], layout.pad_values[name])
        return out

    return finish
