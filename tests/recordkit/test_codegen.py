"""Standalone parser modules: generated from the schema, run without recordkit."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from _reader_support import SCHEMA, dumps, make_records, plain, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import SchemaError

#: Run in a subprocess where recordkit (and its codecs) cannot be imported: for each
#: (module, fields) job, read the files with the generated module and print the decoded
#: batches as JSON (made with the source of _reader_support.plain, put in for ``PLAIN``,
#: so they compare with :func:`dumps`); then the recordkit modules that got imported (none).
RUNNER = textwrap.dedent(
    """
    import importlib.util, json, sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("recordkit", "recordkit_codecs"):
                raise ImportError(f"{name} must not be needed")

    sys.meta_path.insert(0, Blocked())
    from typing import Any
    import numpy as np
    import tensorflow as tf

    files, jobs = json.loads(sys.argv[1]), json.loads(sys.argv[2])

    PLAIN

    for i, (path, fields) in enumerate(jobs):
        spec = importlib.util.spec_from_file_location(f"generated_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        batches = list(module.dataset(files, 4, fields))
        print(json.dumps([plain(b) for b in batches], sort_keys=True))
    print(json.dumps(sorted(k for k in sys.modules if k.startswith("recordkit"))))
    """
).replace("PLAIN\n", inspect.getsource(plain))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("codegen") / "data"
    manifest = write(path, make_records(7, seed=3), shard_records=4)
    return [str(path / s.file) for s in manifest.split("train").shards]


def run_generated(files: list[str], jobs: list[tuple[Path, list[str] | None]]) -> tuple[list[str], list[str]]:
    """Run the generated modules of ``jobs`` in one subprocess without recordkit."""
    out = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(files), json.dumps([(str(p), f) for p, f in jobs])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    *decoded, imported = out.stdout.strip().splitlines()
    return decoded, json.loads(imported)


def with_recordkit(files: list[str], fields: list[str] | None = None) -> str:
    batches = tf.data.TFRecordDataset(files).batch(4).map(rk.make_parser(SCHEMA, fields))
    return dumps(list(batches))


def test_the_generated_module_reproduces_the_parser_without_recordkit(
    tmp_path: Path, files: list[str]
) -> None:
    full = tmp_path / "reader_test_parser.py"
    full.write_text(rk.generate_parser_code(SCHEMA))
    part = tmp_path / "projection_parser.py"
    part.write_text(rk.generate_parser_code(SCHEMA, ["objects", "note", "tags"]))
    decoded, imported = run_generated(files, [(full, None), (part, ["note"])])
    assert imported == []
    assert decoded == [with_recordkit(files), with_recordkit(files, ["note"])]


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
