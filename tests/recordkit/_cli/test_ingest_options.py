"""``recordkit ingest --append`` and ``--resume`` (the writer's append=True and
resume=True), and how ingest and verify report what they did (sdk/recordkit/_cli/ingest.py,
verify.py, sdk/recordkit/tools/_output.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main
from recordkit.sources import jsonl


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def table_file(path: Path, texts: list[str]) -> Path:
    lines = [json.dumps({"text": text, "label": i % 2}) for i, text in enumerate(texts)]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_append_adds_a_split_and_reports_only_the_records_it_added(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = table_file(tmp_path / "train.jsonl", ["a", "b", "c"])
    assert run("ingest", "jsonl", first, out).exit_code == 0
    schema_file = (out / "schema.yaml").read_bytes()
    second = table_file(tmp_path / "val.jsonl", ["d", "e"])
    result = run("ingest", "jsonl", second, out, "--append", "--split", "validation")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"ingested 2 records into {out} (jsonl source)\n")
    assert [r["text"] for r in rk.iter_records(out, "train")] == ["a", "b", "c"]
    assert [r["text"] for r in rk.iter_records(out, "validation")] == ["d", "e"]
    assert (out / "schema.yaml").read_bytes() == schema_file  # the first proposal, kept
    assert "schema:" not in result.output


def test_resume_finishes_an_interrupted_write_without_writing_a_record_twice(tmp_path: Path) -> None:
    source = table_file(tmp_path / "t.jsonl", [f"text {i}" for i in range(7)])
    out = tmp_path / "out"
    proposed = jsonl(source).schema(name="out")
    # An ingest stopped after two complete shards (as a killed process leaves it).
    writer = rk.DatasetWriter(out, proposed, shard_records=2, progress=False)
    for item in list(jsonl(source).items())[:5]:
        writer.write(item.record)
    writer.abort()
    shards = rk.Manifest.load(out).splits["train"].shards
    assert [s.records for s in shards] == [2, 2]
    again = run("ingest", "jsonl", source, out)
    assert again.exit_code == 1
    assert "or --resume to finish an interrupted write" in again.output
    assert "=True" not in again.output
    resumed = run("ingest", "jsonl", source, out, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.startswith("ingested 3 records")
    assert [r["text"] for r in rk.iter_records(out)] == [f"text {i}" for i in range(7)]
    assert run("verify", out).exit_code == 0
    finished = run("ingest", "jsonl", source, out, "--resume")
    assert finished.output.startswith("ingested 0 records"), finished.output


def test_overwrite_does_not_combine_with_append_or_resume(tmp_path: Path) -> None:
    source = table_file(tmp_path / "t.jsonl", ["a"])
    for flag in ("--append", "--resume"):
        result = run("ingest", "jsonl", source, tmp_path / "out", "--overwrite", flag)
        assert result.exit_code == 2
        assert "--overwrite replaces the dataset at OUT: it cannot be combined with" in result.output
    assert not (tmp_path / "out").exists()


def test_verify_passes_an_empty_split_only_when_asked(tmp_path: Path) -> None:
    schema = jsonl(table_file(tmp_path / "t.jsonl", ["a"])).schema(name="x")
    rk.write_dataset([{"text": "a", "label": 0}], schema, tmp_path / "ds", progress=False)
    rk.write_dataset([], schema, tmp_path / "ds", "test", append=True, progress=False)
    failed = run("verify", tmp_path / "ds")
    assert failed.exit_code == 1
    assert failed.output.splitlines()[-1] == (
        "Error: split 'test' holds no records; pass --allow-empty to accept empty splits"
    )
    assert run("verify", tmp_path / "ds", "--split", "train").exit_code == 0
    allowed = run("verify", tmp_path / "ds", "--allow-empty")
    assert allowed.exit_code == 0, allowed.output
