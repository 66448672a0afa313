"""Schemas declared in Python: rk.Record, rk.field, rk.schema_of."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import pydantic
import pytest
from _schema_codecs import registry as schema_registry
from PIL import Image

import recordkit as rk
from recordkit.errors import RecordError, SchemaError
from recordkit.format._example import decode_example  # private: the stored wire values, without TensorFlow
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
REGISTRY = schema_registry()


# -- the Python twins of the example schema files ---------------------------------------------


class Flowers(
    rk.Record, name="flowers", version="1.0.0", description="Photos of flowers, one class per folder."
):
    image: Annotated[bytes, rk.field("image", format="keep")]
    """The photo as found on disk."""
    label: Annotated[str, rk.field("label", names=["daisy", "dandelion", "roses", "sunflowers", "tulips"])]
    """The class, named after the photo's folder."""
    filename: Annotated[str, rk.field("text")]
    """The photo's path, relative to the dataset folder."""


class Detection(rk.Record, name="detection"):
    """Street scenes with labelled bounding boxes."""

    image: Annotated[bytes, rk.field("image", format="jpeg", quality=95, channels=3)]
    objects: Annotated[
        dict[str, Any],
        rk.field(
            "bbox",
            format="xywh",
            normalized=False,
            labels=("person", "bicycle", "car", "bus", "traffic_light"),
            image_field="image",
            description="The annotated objects; a record may have none.",
        ),
    ]
    image_id: Annotated[str, rk.field("text")]


class VocSegmentation(
    rk.Record, name="voc-segmentation", description="Pascal VOC style images with class masks."
):
    image: Annotated[np.ndarray, rk.field("image", format="jpeg", quality=95, channels=3)]
    mask: Annotated[np.ndarray, rk.field("mask", num_classes=21, ignore_index=255)]
    """One class index per pixel; palette indices are kept as they are."""
    filename: Annotated[str, rk.field("text")]


class Speech(rk.Record, name="speech", description="Spoken utterances with transcripts."):
    audio: Annotated[np.ndarray, rk.field("audio", format="flac", sample_rate=16000, channels=1)]
    transcript: Annotated[str, rk.field("text", normalize="NFC", description="What is said, in Unicode NFC.")]
    speaker: Annotated[int | None, rk.field("label", num_classes=40)] = None
    """The speaker's id, when known."""


class Scenes(rk.Record, name="multimodal-scenes"):
    """Scenes with a frame, its audio, a caption, objects and a label."""

    frame: Annotated[Image.Image, rk.field("image", format="jpeg", quality=90, channels=3)]
    audio: Annotated[np.ndarray, rk.field("audio", options={"format": "wav", "sample_rate": 16000})]
    caption: Annotated[Optional[str], rk.field("text", max_length=500)] = None  # noqa: UP045 - Optional works too
    objects: Annotated[
        dict[str, Any],
        rk.field("bbox", labels=["person", "animal", "vehicle"], extras=["score"], image_field="frame"),
    ]
    scene: Annotated[str, rk.field("label", names=["indoor", "outdoor", "underwater"])]
    embedding: Annotated[np.ndarray | None, rk.field("tensor", dtype="float32", shape=[128])] = None
    """A precomputed audio-visual embedding, when available."""


TWINS = {
    "image-classification.yaml": Flowers,
    "object-detection.yaml": Detection,
    "segmentation.yaml": VocSegmentation,
    "speech.yaml": Speech,
    "multimodal.yaml": Scenes,
}


def test_every_example_schema_file_has_a_python_twin() -> None:
    assert sorted(TWINS) == sorted(path.name for path in SCHEMAS.glob("*.yaml"))


@pytest.mark.parametrize("file", sorted(TWINS))
def test_a_python_schema_equals_its_yaml_twin(file: str, tmp_path: Path) -> None:
    loaded = rk.Schema.load(SCHEMAS / file)
    declared = rk.schema_of(TWINS[file])
    assert declared == loaded
    assert declared.fingerprint() == loaded.fingerprint()
    # ... and dumping the Python one gives a file that loads back equal.
    declared.dump(tmp_path / file)
    assert rk.Schema.load(tmp_path / file) == declared


# -- declaring --------------------------------------------------------------------------------


class Points(rk.Record, name="points", version="2.1.0"):
    """Points in space.

    With ids."""

    id: Annotated[int, rk.field("scalar")]
    position: Annotated[np.ndarray, rk.field("vector", size=3, scale=2.0)] = pydantic.Field(
        description="Where it is."
    )
    weight: Annotated[float, rk.field("scalar", dtype="float32")] = 1.5
    note: Annotated[str | None, rk.field("scalar", dtype="str")] = None
    tags: Annotated[list[str], rk.field("scalar", dtype="str", sequence=True)] = pydantic.Field(
        default_factory=lambda: ["untagged"]
    )
    history: Annotated[list[np.ndarray] | None, rk.field("vector", size=3, sequence=True)] = None
    nullable: Annotated[int | None, rk.field("scalar")]
    strict: Annotated[int | None, rk.field("scalar", optional=False)]


POINTS_YAML = """\
name: points
version: 2.1.0
description: |-
  Points in space.

  With ids.
fields:
  id: {codec: scalar}
  position: {codec: vector, options: {size: 3, scale: 2.0}, description: Where it is.}
  weight: {codec: scalar, options: {dtype: float32}, default: 1.5}
  note: {codec: scalar, options: {dtype: str}, optional: true}
  tags: {codec: scalar, options: {dtype: str}, sequence: true, default: [untagged]}
  history: {codec: vector, options: {size: 3}, sequence: true, optional: true}
  nullable: {codec: scalar, optional: true}
  strict: {codec: scalar}
"""


def test_declaration_maps_to_field_specs() -> None:
    schema = Points.recordkit_schema()
    assert schema is rk.schema_of(Points)  # built once, when the class was
    assert schema == rk.Schema.loads(POINTS_YAML, registry=REGISTRY)
    assert schema.fields["weight"].default == 1.5
    assert schema.fields["note"].optional  # default None: optional, with a presence flag
    assert schema.fields["nullable"].optional  # the type admits None
    assert not schema.fields["strict"].optional  # said explicitly
    assert schema.fields["tags"].default == ["untagged"]  # from the default factory
    schema.bind(REGISTRY)  # a third-party codec is declared exactly like a built-in


def test_schema_of_takes_a_schema_too_and_refuses_anything_else() -> None:
    schema = rk.schema_of(Points)
    assert rk.schema_of(schema) is schema
    with pytest.raises(SchemaError, match="expected a Record class or a Schema"):
        rk.schema_of(Points(id=1, position=[0, 0, 0], nullable=None, strict=1))  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="Record itself declares no schema"):
        rk.schema_of(rk.Record)


def test_name_defaults_to_the_class_and_subclasses_inherit() -> None:
    class Base(rk.Record, name="base", version="1.0.0", description="From the keyword."):
        a: Annotated[int, rk.field("scalar")]

    class Child(Base, version="1.1.0"):
        b: Annotated[str, rk.field("scalar", dtype="str")]

    class Documented(Base):
        """From the docstring."""

    class Plain(rk.Record):
        a: Annotated[int, rk.field("scalar")]

    child = rk.schema_of(Child)
    assert (child.name, child.version, child.description) == ("base", "1.1.0", "From the keyword.")
    assert list(child.fields) == ["a", "b"]
    assert rk.schema_of(Documented).description == "From the docstring."
    assert rk.schema_of(Base).version == "1.0.0"
    plain = rk.schema_of(Plain)
    assert (plain.name, plain.version, plain.description) == ("Plain", "1.0.0", "")


def test_a_class_without_fields_has_no_schema() -> None:
    class Abstract(rk.Record):
        """A base for other records."""

    with pytest.raises(SchemaError, match="Abstract declares no fields"):
        rk.schema_of(Abstract)


def test_forward_references_are_resolved_on_first_use() -> None:
    class Later(rk.Record, name="later"):
        value: Annotated[Missing, rk.field("scalar")]  # type: ignore[name-defined]

    class Missing:  # defined after the record class
        pass

    globals()["Missing"] = Missing
    try:
        assert rk.schema_of(Later).fields["value"].codec == "scalar"
    finally:
        del globals()["Missing"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("x: int", "Bad.x names no codec: declare it as Annotated[<type>, rk.field('<codec>', ...)]"),
        ("x: Annotated[int, rk.field('scalar'), rk.field('text')]", "Bad.x has 2 rk.field() markers"),
        ("x: Annotated[int, rk.field('scalar')] = pydantic.Field(alias='y')", "aliases are not supported"),
        ("x: Annotated[int, rk.field('scalar', thing=object())]", "'thing': object is not schema data"),
        ("x: Annotated[int, rk.field('scalar', optional=True)] = 3", "either optional or has a default"),
        ("x: Annotated[bytes, rk.field('scalar')] = b'raw'", "default: bytes is not schema data"),
        ("x: Annotated[int, rk.field(3)]", "takes a codec name first, not 3"),
    ],
)
def test_declaration_errors_name_the_class_and_field(body: str, problem: str) -> None:
    source = f"class Bad(rk.Record):\n    {body}\n"
    namespace = {"__name__": __name__, "rk": rk, "Annotated": Annotated, "pydantic": pydantic}
    with pytest.raises(SchemaError) as err:
        exec(source, namespace)  # the class statement itself fails
    assert "Bad" not in namespace
    assert problem in str(err.value)
    assert err.value.field == ("x" if "rk.field(3)" not in body else None)


def test_field_options_mapping_for_names_that_clash() -> None:
    marker = rk.field("vector", options={"size": 3, "sequence": "an option called sequence"}, scale=2.0)
    assert marker.options == {"size": 3, "sequence": "an option called sequence", "scale": 2.0}
    assert marker.sequence is False
    marker = rk.field("image", format="png", sequence=True)
    assert repr(marker) == "rk.field('image', format='png', sequence=True)"


# -- records ----------------------------------------------------------------------------------


def test_records_take_any_value_and_report_missing_and_unknown_fields() -> None:
    array = np.arange(3.0)
    record = Points(id=np.int64(7), position=array, nullable=None, strict=1)
    assert record.position is array  # taken as it is: the codec decides
    assert record.tags == ["untagged"]
    with pytest.raises(RecordError) as err:
        Points(position=[1, 2, 3], colour="red")  # type: ignore[call-arg]
    assert {e.field for e in err.value.errors} == {"id", "nullable", "strict", "colour"}
    assert "field 'colour': not a field of the schema" in str(err.value)
    assert "field 'id': missing" in str(err.value)
    with pytest.raises(RecordError, match="field 'id': missing"):
        Points.model_validate({"position": [1, 2, 3], "nullable": 1, "strict": 1})


def test_a_record_instance_is_validated_and_encoded_by_its_schema() -> None:
    bound = rk.schema_of(Points).bind(REGISTRY)
    good = Points(id=1, position=[1.0, 2.0, 3.0], nullable=None, strict=1, history=[np.ones(3), np.zeros(3)])
    bound.validate_record(good, 0)
    decoded = decode_record_numpy(bound.fields, bound.encoder().encode(good, 0))
    assert decoded["id"] == 1
    np.testing.assert_allclose(decoded["position"], [1.0, 2.0, 3.0])
    assert decoded["tags"] == ["untagged"]
    assert decoded["weight"] == 1.5
    assert len(decoded["history"]) == 2
    bad = Points(id="one", position=[1.0], nullable=None, strict=1, history=[np.ones(3), np.ones(2)])
    errors = bound.record_errors(bad, "sample-9")
    assert {e.field for e in errors} == {"id", "position", "history[1]"}
    assert all(e.record == "sample-9" for e in errors)


def _png(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array).save(out, format="PNG")
    return out.getvalue()


class Album(rk.Record, name="album"):
    cover: Annotated[bytes, rk.field("image", format="png")]
    pages: Annotated[list[Any], rk.field("image", format="png", sequence=True)]
    title: Annotated[str | None, rk.field("text")] = None


def test_records_take_arrays_pil_images_paths_and_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pixels = [rng.integers(0, 256, (4 + i, 5, 3), dtype=np.uint8) for i in range(4)]
    path = tmp_path / "page.png"
    path.write_bytes(_png(pixels[3]))
    record = Album(cover=_png(pixels[0]), pages=[pixels[1], Image.fromarray(pixels[2]), path])
    bound = rk.schema_of(Album).bind()
    decoded = decode_record_numpy(bound.fields, bound.encoder().encode(record, 0))
    np.testing.assert_array_equal(decoded["cover"], pixels[0])
    assert len(decoded["pages"]) == 3
    for got, want in zip(decoded["pages"], pixels[1:], strict=True):
        np.testing.assert_array_equal(got, want)
    errors = bound.record_errors(Album(cover=b"not an image", pages=[pixels[1], "nowhere.png"]), 5)
    assert {e.field for e in errors} == {"cover", "pages[1]"}
    assert all(e.record == 5 for e in errors)


# -- a plugin's codec, optional fields and sequences, through real TFRecords -------------------


class Pose(rk.Record, name="poses", version="1.0.0"):
    """People in photos: their joints (a third-party codec), more views, a caption."""

    image: Annotated[bytes, rk.field("image", format="png")]
    joints: Annotated[np.ndarray, rk.field("keypoints", num_keypoints=3, visibility=True)]
    """Three keypoints, each x, y and a COCO visibility flag."""
    views: Annotated[list[Any], rk.field("image", format="png", sequence=True)] = pydantic.Field(
        default_factory=list
    )
    tracks: Annotated[list[np.ndarray] | None, rk.field("keypoints", sequence=True)] = None
    caption: Annotated[str | None, rk.field("text")] = None


POSE_YAML = """\
name: poses
version: 1.0.0
description: 'People in photos: their joints (a third-party codec), more views, a caption.'
fields:
  image: {codec: image, options: {format: png}}
  joints:
    codec: keypoints
    options: {num_keypoints: 3, visibility: true}
    description: Three keypoints, each x, y and a COCO visibility flag.
  views: {codec: image, options: {format: png}, sequence: true, default: []}
  tracks: {codec: keypoints, sequence: true, optional: true}
  caption: {codec: text, optional: true}
"""


@pytest.mark.usefixtures("keypoints_plugin")
def test_a_plugin_codec_optional_fields_and_sequences_round_trip(tmp_path: Path) -> None:
    schema = rk.schema_of(Pose)
    # The plugin's codec is named like a built-in one, in Python and in the file alike.
    assert schema == rk.Schema.loads(POSE_YAML)
    assert schema.fingerprint() == rk.Schema.loads(POSE_YAML).fingerprint()
    assert rk.default_registry().info("keypoints").distribution == "recordkit-keypoints"
    assert rk.default_registry().info("image").distribution == "recordkit"

    rng = np.random.default_rng(0)
    pixels = [rng.integers(0, 256, (4 + i, 5, 3), dtype=np.uint8) for i in range(4)]
    joints = np.array([[1, 2, 2], [3, 4, 1], [5, 6, 0]], np.float32)
    tracks = [np.array([[0.5, 1.5], [2.5, 3.5]], np.float32), np.array([[4.0, 5.0]], np.float32)]
    records = [
        Pose(image=_png(pixels[0]), joints=joints, views=[pixels[1], pixels[2]], tracks=tracks, caption=""),
        Pose(image=_png(pixels[3]), joints=np.zeros((3, 3), np.float32)),
    ]
    bound = schema.bind()
    # An absent optional field stores nothing at all (no made-up value); a present one,
    # even an empty string, stores its value and a presence flag.
    stored = [decode_example(bound.encoder().encode(record)) for record in records]
    assert {"caption", "caption/present", "tracks/present"} <= set(stored[0])
    assert int(stored[0]["caption/present"][1][0]) == 1
    assert not {"caption", "caption/present", "tracks", "tracks/present"} & set(stored[1])

    rk.write_dataset(records, Pose, tmp_path / "poses")
    first, second = rk.iter_records(tmp_path / "poses")
    np.testing.assert_array_equal(first["joints"], joints)
    assert [view.shape for view in first["views"]] == [(5, 5, 3), (6, 5, 3)]
    np.testing.assert_array_equal(first["views"][1], pixels[2])
    assert len(first["tracks"]) == 2
    np.testing.assert_array_equal(first["tracks"][0], tracks[0])
    assert first["caption"] == ""
    assert (second["views"], second["tracks"], second["caption"]) == ([], None, None)

    batch = next(iter(rk.load_dataset(tmp_path / "poses", batch_size=2)))
    assert batch["caption/present"].numpy().tolist() == [True, False]
    assert batch["tracks/present"].numpy().tolist() == [True, False]
    assert batch["joints"].shape == (2, 3, 3)
    np.testing.assert_array_equal(batch["joints"][0].numpy(), joints)
    assert batch["views"].row_lengths().numpy().tolist() == [2, 0]
    np.testing.assert_array_equal(batch["views"][0][1].numpy(), pixels[2])
    np.testing.assert_array_equal(batch["tracks"][0][0].numpy(), tracks[0])
