"""The pipeline shape of a ``tf.data`` read whose every field is decoded record by record:
each serialized record parsed and decoded in one parallel map, and the records batched
as they are padded (the shape of the TFRecord tutorials' pipeline).

A read of pictures alone (``fields=["image"]``, an image and its mask, pictures with
audio), padded or fitted into batches, decodes every value record by record anyway. The
batched shape (:mod:`recordkit.read._load_dataset`) would parse a batch, split it
(``unbatch``) and decode each record in a second map: two functions for TensorFlow to
instantiate at every iterator and the batch's values carried across ``unbatch``, with
nothing decoded in the batch to show for it. Here one function per record parses only
the fields' keys (``tf.io.parse_example`` of a batch of one: the values the codecs'
batched decodes take) and decodes them with the same
per-record decode (:func:`~recordkit.read._per_record.record_decoder`: the same values,
shapes, padding and checks). Reads with a field decoded in the batch (text, labels,
boxes), single records, random crops (whose draws are keyed by the batch) and fields
read from column keys or constants keep the batched shape.
"""

from __future__ import annotations

from typing import Any

from recordkit.read._layout import DecodeLayout
from recordkit.read._options import PipelineOptions
from recordkit.read._parse import FieldPlan, field_plan, spec_from_plans
from recordkit.read._per_record import dense_batches, record_decoder
from recordkit.read._traced import traced_as_written

__all__ = ["parses_per_record", "records_parsed_one_by_one"]


def parses_per_record(layout: DecodeLayout, options: PipelineOptions) -> bool:
    """Whether the read takes this shape: batches of records, every field decoded
    record by record (a picture, or a value padded record by record) and dense in its
    record (each picture padded or fitted), no random crop, and every wire feature read
    from a key of its own."""
    fields = layout.dataset.fields
    per_record = {f.name for f in (*layout.per_record, *layout.per_record_values)}
    return (
        bool(layout.per_record)
        and options.batch_size is not None
        and not options.random_crop
        and all(f.name in per_record for f in fields)
        and all(f.name in layout.padded or f.name in layout.sizes for f in layout.per_record)
        and all(_keyed(field_plan(f)) for f in fields)
    )


def _keyed(plan: FieldPlan) -> bool:
    """Whether each of the field's wire features is parsed from a key of its own (not
    stacked from column keys, not a constant)."""
    return all(not f.get("columns") and f.get("constant") is None for f in plan["features"])


def records_parsed_one_by_one(records: Any, layout: DecodeLayout, options: PipelineOptions) -> Any:
    """``records`` (serialized, one by one) parsed, decoded and batched, padded; the read
    :func:`parses_per_record` accepts."""
    import tensorflow as tf

    plans = [field_plan(f) for f in layout.dataset.fields]
    spec = spec_from_plans(plans)
    decode = record_decoder(layout, options, {}, dense=True, parsed_as_batch_of_one=True)

    def parse(serialized: Any) -> dict[str, Any]:
        # Parsed as a batch of one: the values the codecs' batched decodes take, with no
        # op a key to make them so (parse_single_example gives each value without it).
        parsed = tf.io.parse_example(tf.expand_dims(serialized, 0), spec)
        wire = {plan["name"]: {f["name"]: parsed[f["key"]] for f in plan["features"]} for plan in plans}
        return decode(wire)

    decoded = records.map(
        traced_as_written(parse), num_parallel_calls=tf.data.AUTOTUNE, deterministic=options.deterministic
    )
    return dense_batches(decoded, layout, options)
