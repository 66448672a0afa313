"""Standalone parser modules: generated from the schema, run without recordkit."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import inspect
import io
import json
import re
import struct
import subprocess
import sys
import textwrap
import wave
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import RUNNER, SCHEMA, dumps, make_records, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import ManifestError, SchemaError
from recordkit.testing import assert_values_equal
from recordkit_codecs._tf_audio import (  # private: the helper the generated module must carry verbatim
    decode_wav_batch,
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("codegen") / "data"
    manifest = write(path, make_records(7, seed=3), shard_records=4)
    return [str(path / s.file) for s in manifest.split("train").shards]


def with_recordkit(files: list[str], fields: list[str] | None = None) -> str:
    batches = tf.data.TFRecordDataset(files).batch(4).map(rk.make_parser(SCHEMA, fields))
    return dumps(list(batches))


def run_together(runs: list[tuple[str, list[str]]], folder: Path) -> list[list[str]]:
    """Run each ``(script, argv)`` of ``runs`` in turn in one subprocess, as ``python -c
    script *argv`` would (``sys.argv`` set, ``__main__`` its namespace): the lines each
    printed. TensorFlow starts once for all of them (two to five seconds of CPU a start);
    every script blocks recordkit's imports itself, so none is imported for a later one."""
    listing = folder / "runs.json"
    listing.write_text(json.dumps(runs))
    driver = textwrap.dedent(
        """
        import contextlib, io, json, sys

        printed = []
        for script, argv in json.loads(open(sys.argv[1]).read()):
            sys.argv = ["-c", *argv]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(script, "<script>", "exec"), {"__name__": "__main__"})
            printed.append(out.getvalue().splitlines())
        print(json.dumps(printed))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", driver, str(listing)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed: list[list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return printed


@dataclasses.dataclass(frozen=True)
class Generated:
    """What the generated modules of this file's three datasets read in one subprocess
    where recordkit cannot be imported (:func:`generated`), for the tests that compare
    it with recordkit's own reads."""

    #: The JSON of the batches of the test schema's module, then of a projection's.
    parser: list[str]
    #: The JSON of the batches of the keypoints plugin's module, and its dataset.
    keypoints: str
    keypoints_data: Path
    #: The groups runner's JSON lines: the files and columns of each projection.
    groups: list[str]
    #: The recordkit modules each of the three runs had imported at its end.
    imported: list[list[str]]


GROUP_PROJECTIONS: list[list[str] | None] = [None, ["embedding", "label"], ["score"]]


@pytest.fixture(scope="module")
def generated(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[str],
    grouped: Path,
    keypoints_plugin: importlib.metadata.Distribution,
) -> Generated:
    """The generated modules of the test schema (whole and projected), of the keypoints
    plugin's schema and of a split with field groups, each run on its dataset in one
    subprocess (:func:`run_together`) rather than one a dataset."""
    folder = tmp_path_factory.mktemp("generated")
    full = folder / "reader_test_parser.py"
    full.write_text(rk.generate_parser_code(SCHEMA))
    part = folder / "projection_parser.py"
    part.write_text(rk.generate_parser_code(SCHEMA, ["objects", "note", "tags"]))
    poses, poses_schema = keypoints_dataset(folder / "poses")
    poses_files = [str(poses / s.file) for s in rk.Manifest.load(poses).split("train").shards]
    poses_module = folder / "poses_parser.py"
    poses_module.write_text(rk.generate_parser_code(poses_schema))
    groups_module = folder / "photos_parser.py"
    groups_module.write_text(rk.generate_parser_code(rk.Manifest.load(grouped)))
    parser, keypoints, groups = run_together(
        [
            (RUNNER, [json.dumps(files), json.dumps([(str(full), None), (str(part), ["note"])]), "4"]),
            (RUNNER, [json.dumps(poses_files), json.dumps([(str(poses_module), None)]), "4"]),
            (GROUPS_RUNNER, [str(groups_module), str(grouped), json.dumps(GROUP_PROJECTIONS)]),
        ],
        folder,
    )
    return Generated(
        parser=parser[:-1],
        keypoints=keypoints[0],
        keypoints_data=poses,
        groups=groups[:-1],
        imported=[json.loads(lines[-1]) for lines in (parser, keypoints, groups)],
    )


@pytest.mark.slow
def test_the_generated_module_reproduces_the_parser_without_recordkit(
    files: list[str], generated: Generated
) -> None:
    assert generated.imported[0] == []
    assert generated.parser == [with_recordkit(files), with_recordkit(files, ["note"])]


def test_the_module_says_what_it_parses() -> None:
    code = rk.generate_parser_code(SCHEMA, ["label", "caption"])
    namespace: dict[str, Any] = {}
    exec(compile(code, "<generated>", "exec"), namespace)  # the generated module, in-process
    assert namespace["FIELDS"] == ("label", "caption")
    assert namespace["FINGERPRINT"] == SCHEMA.fingerprint()
    assert namespace["feature_spec"]() == rk.feature_spec(SCHEMA, ["label", "caption"])
    with pytest.raises(KeyError, match="unknown fields"):
        namespace["feature_spec"](["image"])
    assert "Do not edit" in code
    assert "recordkit codegen" in code


def test_codecs_without_standalone_code_are_named() -> None:
    flac = rk.Schema(
        name="s",
        fields={"speech": rk.FieldSpec(codec="audio", options={"format": "flac", "sample_rate": 16000})},
    )
    with pytest.raises(SchemaError, match="in_graph=False") as err:
        rk.generate_parser_code(flac)
    assert err.value.field == "speech"
    assert err.value.context.codec == "audio"

    class Opaque(rk.Codec[rk.CodecOptions]):
        name = "opaque"

        def wire_spec(self) -> rk.WireSpec:
            return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

        def encode(self, value: Any) -> rk.WireValues:
            return {"": int(value)}

        def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
            return int(wire[""])

        def decode_tf(self, wire: Mapping[str, Any]) -> Any:
            return wire[""]

    registry = rk.CodecRegistry()
    registry.register(Opaque)
    schema = rk.Schema(name="s", fields={"x": rk.FieldSpec(codec="opaque")})
    with pytest.raises(SchemaError, match="decode_tf_source"):
        rk.generate_parser_code(schema, registry=registry)


def _double(values: Any) -> Any:
    return values * 2


def decode_doubled(wire: Mapping[str, Any]) -> Any:
    return _double(wire[""])


def test_a_helper_left_out_of_a_decode_source_is_named_when_generating() -> None:
    """A standalone decode that calls a module-level function its DecodeSource does not
    list would fail only when a training job runs it: generation refuses it instead."""

    class Doubled(rk.Codec[rk.CodecOptions]):
        name = "doubled"
        helpers: tuple[Any, ...] = ()

        def wire_spec(self) -> rk.WireSpec:
            return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

        def encode(self, value: Any) -> rk.WireValues:
            return {"": int(value) // 2}

        def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
            return _double(int(wire[""]))

        def decode_tf(self, wire: Mapping[str, Any]) -> Any:
            return _double(wire[""])

        def decode_tf_source(self) -> rk.DecodeSource:
            return rk.DecodeSource(decode_doubled, helpers=self.helpers)

    registry = rk.CodecRegistry()
    registry.register(Doubled)
    schema = rk.Schema(name="s", fields={"x": rk.FieldSpec(codec="doubled")})
    with pytest.raises(SchemaError, match=r"'_double' \(in decode_doubled\).*helpers") as err:
        rk.generate_parser_code(schema, registry=registry)
    assert (err.value.field, err.value.context.codec) == ("x", "doubled")
    Doubled.helpers = (_double,)
    namespace: dict[str, Any] = {}
    exec(compile(rk.generate_parser_code(schema, registry=registry), "<generated>", "exec"), namespace)
    example = tf.train.Example(
        features=tf.train.Features(feature={"x": tf.train.Feature(int64_list=tf.train.Int64List(value=[21]))})
    )
    assert namespace["parse"](tf.constant([example.SerializeToString()]))["x"].numpy().tolist() == [42]


def test_the_codegen_command(tmp_path: Path, files: list[str]) -> None:
    schema_file = tmp_path / "reader-test.yaml"
    SCHEMA.dump(schema_file)
    runner = CliRunner()
    result = runner.invoke(main, ["codegen", str(schema_file), "-o", str(tmp_path / "parser.py")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "parser.py").read_text() == rk.generate_parser_code(SCHEMA)
    dataset = Path(files[0]).parent
    printed = runner.invoke(main, ["codegen", str(dataset), "--field", "label", "-f", "caption"])
    assert printed.exit_code == 0, printed.output
    assert printed.output == rk.generate_parser_code(SCHEMA, ["label", "caption"])
    flac = tmp_path / "flac.yaml"
    flac.write_text(
        "name: s\nfields:\n  speech: {codec: audio, options: {format: flac, sample_rate: 8000}}\n"
    )
    failed = runner.invoke(main, ["codegen", str(flac)])
    assert failed.exit_code == 1
    assert "field 'speech'" in failed.output
    assert "in_graph=False" in failed.output


# -- audio: the generated module decodes WAV batched, as the runtime does ------------------


def _wav(samples: np.ndarray, rate: int) -> bytes:
    """A canonical 16-bit WAV (44-byte header), as the standard library writes it."""
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(samples.shape[1])
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(samples.astype("<i2").tobytes())
    return out.getvalue()


def _with_list_chunk(data: bytes) -> bytes:
    """The same WAV with a LIST chunk between ``fmt `` and ``data``, as many tools write
    it: not the canonical layout, so the batched decode's per-file branch reads it."""
    chunk = b"LIST" + struct.pack("<I", 10) + b"INFOISFT\0\0"
    body = data[12:36] + chunk + data[36:]
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body


def test_generated_audio_uses_the_batched_wav_decode() -> None:
    """The generated module carries the codec's own batched WAV decode (no per-record
    map_fn), and decodes canonical WAVs and WAVs written elsewhere (both branches of
    that decode) exactly as recordkit's parser does."""
    schema = rk.Schema(
        name="speech",
        fields={"speech": rk.FieldSpec(codec="audio", options={"sample_rate": 8000, "channels": 2})},
    )
    code = rk.generate_parser_code(schema)
    assert "map_fn" not in code
    assert textwrap.indent(inspect.getsource(decode_wav_batch), "    ") in code
    rng = np.random.default_rng(2)
    clips = [rng.integers(-3000, 3000, (n, 2), dtype=np.int16) for n in (5, 9, 1, 7)]
    wavs = [_wav(clip, 8000) for clip in clips]
    wavs[3] = _with_list_chunk(wavs[3])
    examples = [
        tf.train.Example(
            features=tf.train.Features(
                feature={
                    "speech": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
                    "speech/num_samples": tf.train.Feature(int64_list=tf.train.Int64List(value=[len(clip)])),
                }
            )
        ).SerializeToString()
        for data, clip in zip(wavs, clips, strict=True)
    ]
    namespace: dict[str, Any] = {}
    exec(compile(code, "<generated>", "exec"), namespace)  # the generated module, in-process
    parser = rk.make_parser(schema)
    for start in (0, 2):  # all canonical; then one written elsewhere
        serialized = tf.constant(examples[start : start + 2])
        generated = namespace["parse"](serialized)["speech"]
        assert dumps([{"speech": generated}]) == dumps([{"speech": parser(serialized)["speech"]}])
        for i, got in enumerate(generated):
            assert_values_equal(clips[start + i].astype(np.float32) / np.float32(32768), got)


# -- the example plugin's codec ------------------------------------------------------------


def keypoints_dataset(path: Path) -> tuple[Path, rk.Schema]:
    """A third-party codec's dataset (the keypoints plugin's), 6 records in 2 shards, and
    its schema."""
    schema = rk.Schema(
        name="poses",
        fields={
            "pose": rk.FieldSpec(codec="keypoints", options={"num_keypoints": 3, "visibility": True}),
            "track": rk.FieldSpec(codec="keypoints"),
            "outline": rk.FieldSpec(codec="keypoints", options={"visibility": True}, optional=True),
        },
    )
    rng = np.random.default_rng(5)

    def points(k: int) -> np.ndarray:
        return np.concatenate([rng.random((k, 2)) * 100, rng.integers(0, 3, (k, 1))], axis=1)

    records = [
        {
            "pose": points(3),
            "track": rng.random((i % 4, 2)),
            "outline": points(1 + i % 3) if i % 2 else None,
        }
        for i in range(6)
    ]
    rk.write_dataset(records, schema, path, shard_records=4, progress=False)
    return path, schema


@pytest.mark.usefixtures("keypoints_plugin")
def test_the_generated_module_reproduces_load_dataset_for_the_keypoints_plugin(generated: Generated) -> None:
    """A third-party codec that follows the single-decode pattern generates code too."""
    assert generated.imported[1] == []
    assert generated.keypoints == dumps(list(rk.load_dataset(generated.keypoints_data, batch_size=4)))


# -- field groups: the generated module joins a split's shards and its group shards --------

GROUPS_RUNNER = textwrap.dedent(
    """
    import importlib.util, json, sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("recordkit", "recordkit_codecs"):
                raise ImportError(f"{name} must not be needed")

    sys.meta_path.insert(0, Blocked())
    module_path, folder, projections = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    spec = importlib.util.spec_from_file_location("generated_groups", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = []
    for fields in projections:
        files = module.split_files(folder, "train", fields)
        batches = list(module.dataset(files, 3, fields))
        plain = lambda value: value.decode() if isinstance(value, bytes) else value.tolist()
        columns = {name: [plain(v) for b in batches for v in b[name].numpy()] for name in batches[0]}
        out.append({"files": [list(row) for row in files], "columns": columns})
    print(json.dumps(out))
    print(json.dumps(sorted(k for k in sys.modules if k.startswith("recordkit"))))
    """
)


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of 7 records in 3 shards, with an embedding group and a score group."""
    path = tmp_path_factory.mktemp("codegen-groups") / "photos"
    schema = rk.Schema.loads(
        "name: photos\nfields:\n"
        "  label: {codec: label, options: {names: [cat, dog]}}\n"
        "  caption: {codec: text}\n"
    )
    rk.write_dataset(
        [{"label": ["cat", "dog"][i % 2], "caption": f"photo {i}"} for i in range(7)],
        schema,
        path,
        shard_records=3,
    )
    rng = np.random.default_rng(36)
    embedding = rk.Schema.loads(
        "name: e\nfields:\n  embedding: {codec: tensor, options: {dtype: float32, shape: [4]}}\n"
    )
    rk.add_fields(path, "train", embedding, rng.random((7, 4), dtype=np.float32))
    score = rk.Schema.loads("name: s\nfields:\n  score: {codec: scalar, options: {dtype: float32}}\n")
    rk.add_fields(path, "train", score, [float(i) / 8 for i in range(7)])
    return path


def test_the_generated_module_reads_a_split_with_field_groups_as_recordkit_does(
    grouped: Path, generated: Generated
) -> None:
    projections = GROUP_PROJECTIONS
    (decoded,) = (json.loads(line) for line in generated.groups)
    assert generated.imported[2] == []

    records = list(rk.open(grouped).records())
    assert len(records) == 7
    manifest = rk.Manifest.load(grouped)
    split = manifest.split("train")
    groups = split.field_groups or {}
    for fields, got in zip(projections, decoded, strict=True):
        names = fields or ["label", "caption", "embedding", "score"]
        assert sorted(got["columns"]) == sorted(names)
        for name in names:
            expected = [record[name] for record in records]
            np.testing.assert_array_equal(
                np.asarray(got["columns"][name]), np.asarray(expected), err_msg=name
            )
        # Only the files holding the wanted fields are read: the shard, then the groups.
        wanted = set(names)
        for index, row in enumerate(got["files"]):
            expected_files = [split.shards[index].file] if wanted & {"label", "caption"} else []
            expected_files += [g.shards[index].file for g in groups.values() if wanted & set(g.fields)]
            assert row == [f"{grouped}/{file}" for file in expected_files]
    assert [len(row) for row in decoded[0]["files"]] == [3, 3, 3]
    assert [len(row) for row in decoded[2]["files"]] == [1, 1, 1]


def test_the_codegen_command_parses_a_datasets_field_groups(grouped: Path) -> None:
    printed = CliRunner().invoke(main, ["codegen", str(grouped), "-f", "embedding", "-f", "label"])
    assert printed.exit_code == 0, printed.output
    namespace: dict[str, Any] = {}
    exec(compile(printed.output, "<generated>", "exec"), namespace)
    assert namespace["FIELDS"] == ("embedding", "label")
    batch = next(iter(namespace["dataset"](namespace["split_files"](grouped, "train"), 7)))
    expected = [
        (r["embedding"], r["label"]) for r in rk.open(grouped, fields=["embedding", "label"]).records()
    ]
    np.testing.assert_array_equal(batch["embedding"].numpy(), np.stack([e for e, _ in expected]))
    assert batch["label"].numpy().tolist() == [label for _, label in expected]


def test_the_generated_split_files_refuses_misaligned_counts_naming_both_files(
    tmp_path: Path, grouped: Path
) -> None:
    manifest = json.loads((grouped / "dataset.json").read_text())
    group = manifest["splits"]["train"]["field_groups"]["score"]
    group["shards"][1]["records"] += 1
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / "dataset.json").write_text(json.dumps(manifest))
    namespace: dict[str, Any] = {}
    exec(compile(rk.generate_parser_code(rk.Manifest.load(grouped)), "<generated>", "exec"), namespace)
    shard, score = manifest["splits"]["train"]["shards"][1]["file"], group["shards"][1]["file"]
    with pytest.raises(
        ValueError, match=f"lists 4 records in {re.escape(score)} but 3 in {re.escape(shard)}"
    ):
        namespace["split_files"](hostile, "train", ["label", "score"])
    with pytest.raises(ValueError, match="has no split 'test'"):
        namespace["split_files"](grouped, "test")


def test_a_group_of_one_split_is_parsed_and_split_files_names_it_for_the_other_split(tmp_path: Path) -> None:
    path = tmp_path / "scores"
    schema = rk.Schema.loads("name: s\nfields:\n  label: {codec: label, options: {names: [a, b]}}\n")
    rk.write_dataset([{"label": "a"}, {"label": "b"}], path, schema)
    rk.write_dataset([{"label": "b"}], path, schema, split="test", append=True)
    score = rk.Schema.loads("name: s\nfields:\n  score: {codec: scalar, options: {dtype: float32}}\n")
    rk.add_fields(path, "train", score, [0.25, 0.5])
    namespace: dict[str, Any] = {}
    exec(compile(rk.generate_parser_code(rk.Manifest.load(path)), "<generated>", "exec"), namespace)
    assert namespace["FIELDS"] == ("label", "score")
    train = next(iter(namespace["dataset"](namespace["split_files"](path, "train"), 2)))
    assert train["score"].numpy().tolist() == [0.25, 0.5]
    test = next(iter(namespace["dataset"](namespace["split_files"](path, "test", ["label"]), 2, ["label"])))
    assert test["label"].numpy().tolist() == [1]
    with pytest.raises(ValueError, match=r"split 'test' of .* has no field \['score'\]"):
        namespace["split_files"](path, "test")


def test_a_field_two_splits_groups_store_differently_stops_generation_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "scores"
    schema = rk.Schema.loads("name: s\nfields:\n  label: {codec: label, options: {names: [a, b]}}\n")
    rk.write_dataset([{"label": "a"}], path, schema)
    rk.write_dataset([{"label": "b"}], path, schema, split="test", append=True)
    as_float = rk.Schema.loads("name: s\nfields:\n  score: {codec: scalar, options: {dtype: float32}}\n")
    as_int = rk.Schema.loads("name: s\nfields:\n  score: {codec: scalar, options: {dtype: int64}}\n")
    rk.add_fields(path, "train", as_float, [0.25])
    rk.add_fields(path, "test", as_int, [3])
    with pytest.raises(
        ManifestError,
        match="field 'score' is stored differently by field group 'test/score' and by 'train/score'",
    ):
        rk.generate_parser_code(rk.Manifest.load(path))
