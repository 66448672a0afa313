"""Smoke test of the benchmark harness: ``benchmarks/run.py --size toy`` end to end.

It checks that every contender ran on every workload and that the report is
consistent with its own figures (ratios, bytes, targets); never how fast anything is.
TFDS and the plot need the ``bench`` extra: without it their rows are skipped, with it
they must be there.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

HAVE_TFDS = importlib.util.find_spec("tensorflow_datasets") is not None
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

pytestmark = pytest.mark.slow

RUN = script_run("run.py", "--size", "toy", "--out", "{out}")


@pytest.fixture(scope="module")
def toy_run(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> tuple[dict[str, Any], str, Path]:
    done = benchmark_scripts(RUN)
    results = json.loads((done.out / "results.json").read_text())
    return results, done.stdout, done.out


def _rows(results: dict[str, Any], section: str) -> dict[tuple[str, str], dict[str, Any]]:
    key = "workload" if section == "write" else "mode"
    return {(row[key], row["contender"]): row for row in results[section]}


def test_every_writer_wrote_every_workload(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    results, _, _ = toy_run
    write = _rows(results, "write")
    size = results["meta"]["config"]
    raw = size["raw_records"]
    expected = {"mixed": size["mixed_records"], "raw-jpeg": raw, "raw-png": raw}
    contenders = ["recordkit", "hand-written"] + (["TFDS"] if HAVE_TFDS else [])
    for workload, records in expected.items():
        for contender in contenders:
            row = write[(workload, contender)]
            assert not row["skipped"], row
            assert row["records"] == records
            assert len(row["seconds"]) == size["repeats"]
            assert row["median_seconds"] > 0
            assert math.isclose(row["records_per_s"], records / row["median_seconds"])
            assert math.isclose(row["bytes_per_record"] * records, row["file_bytes"])
    # The same JPEG, WAV, caption, boxes and label bytes: recordkit's file and the
    # hand-written one differ only by keys and framing.
    mixed_rk, mixed_hand = write[("mixed", "recordkit")], write[("mixed", "hand-written")]
    assert 0.9 < mixed_rk["bytes_per_record"] / mixed_hand["bytes_per_record"] < 1.1
    if HAVE_TFDS:
        # TFDS stores the audio as an int64 sample list, which is larger than the WAV.
        assert write[("mixed", "TFDS")]["bytes_per_record"] > mixed_hand["bytes_per_record"]
    else:
        assert "tensorflow-datasets" in write[("mixed", "TFDS")]["skipped"]


def test_the_stability_check_reports_every_run_of_every_writer(
    toy_run: tuple[dict[str, Any], str, Path],
) -> None:
    results, printed, _ = toy_run
    config = results["meta"]["config"]
    rows = {(row["workload"], row["contender"]): row for row in results["stability"]}
    assert set(rows) == {
        ("mixed", "recordkit (durable=False)"),
        ("mixed", "recordkit (durable, 16 MB shards)"),
        ("mixed", "hand-written"),
        ("raw-jpeg", "recordkit (durable=False)"),
        ("raw-jpeg", "hand-written"),
    }
    for (workload, _), row in rows.items():
        records = config["stability_records"] if workload == "mixed" else config["raw_records"]
        assert row["records"] == records
        assert len(row["records_per_s"]) == config["stability_runs"]
        assert row["min_records_per_s"] == min(row["records_per_s"])
        assert min(row["records_per_s"]) <= row["median_records_per_s"] <= max(row["records_per_s"])
        assert row["shards"] >= 1
    assert "STABILITY" in printed
    assert "WRITE, every repetition" in printed


def test_every_reader_read_every_mode(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    results, _, _ = toy_run
    read = _rows(results, "read")
    contenders = ["recordkit", "hand-written per record", "hand-written batched"]
    contenders += ["TFDS"] if HAVE_TFDS else []
    for mode in ("full", "parse", "projection"):
        for contender in contenders:
            row = read[(mode, contender)]
            assert not row["skipped"], row
            assert row["records"] == results["meta"]["config"]["mixed_records"]
            assert row["records_per_s"] > 0
    assert read[("limit", "raw TFRecordDataset")]["records_per_s"] > 0


def test_the_reader_speed_suite_reads_with_and_without_the_autotuner(
    toy_run: tuple[dict[str, Any], str, Path],
) -> None:
    results, printed, _ = toy_run
    groups = {(row["group"], row["contender"]) for row in results["speed"]}
    for group in ("full batched", "full unbatched"):
        for suffix in ("", ", autotuner off"):
            assert (group + suffix, "recordkit") in groups
            assert (group + suffix, "hand-written") in groups
    assert ("limit, autotuner off", "images and audio alone, all cores") in groups
    for group in ("limit", "limit, autotuner off"):
        assert (group, "the same, padded batches") in groups
    # Each autotuner-off row is compared with the limit read the same way (1.00x there).
    limit_off = next(line for line in printed.splitlines() if line.startswith("| limit, autotuner off |"))
    assert "| 1.00x |" in limit_off


def test_memory_runs_in_fresh_processes(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    results, _, _ = toy_run
    config = results["meta"]["config"]
    runs = [(row["contender"], row["records"]) for row in results["memory"]]
    assert runs == [(c, n) for n in config["stream_counts"] for c in config["stream_contenders"]]
    for row in results["memory"]:
        assert row["peak_rss_mb"] >= row["baseline_rss_mb"] > 0
        assert math.isclose(row["growth_mb"], row["peak_rss_mb"] - row["baseline_rss_mb"])


def test_targets_follow_from_the_figures(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    results, stdout, _ = toy_run
    targets = {t["name"]: t for t in results["targets"]}
    write = _rows(results, "write")
    size = targets["size/mixed/vs-hand"]
    rk, hand = write[("mixed", "recordkit")], write[("mixed", "hand-written")]
    assert math.isclose(size["value"], rk["bytes_per_record"] / hand["bytes_per_record"])
    assert size["met"] == (size["value"] <= 1.01)
    speed = targets["write/raw-png/vs-hand"]
    rk, hand = write[("raw-png", "recordkit")], write[("raw-png", "hand-written")]
    assert math.isclose(speed["value"], rk["records_per_s"] / hand["records_per_s"])
    # Inputs that did not run are "not measured", never "met": the toy size starts no
    # worker processes.
    workers = targets["write/raw-png/2-workers"]
    assert (workers["value"], workers["met"], workers["status"]) == (None, None, "not measured")
    for target in results["targets"]:
        assert target["status"] in ("met", "MISSED", "not measured")
        assert target["description"] in stdout
    for heading in ("WRITE", "READ", "MEMORY", "TARGETS"):
        assert heading in stdout


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="the plot needs matplotlib (the bench extra)")
def test_plot_is_a_png(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    _, _, out = toy_run
    assert (out / "benchmarks.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_publish_rewrites_only_the_generated_section(
    toy_run: tuple[dict[str, Any], str, Path], tmp_path: Path
) -> None:
    from benchmarks import _report

    results, _, _ = toy_run
    start, end = _report.MARKERS
    page = tmp_path / "performance.md"
    page.write_text(f"# Performance\n\nBefore.\n\n{start}\nold figures\n{end}\n\nAfter.\n", encoding="utf-8")
    _report.publish_markdown(results, page)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\nBefore.\n\n")
    assert text.endswith(f"{end}\n\nAfter.\n")
    assert "old figures" not in text
    for target in results["targets"]:
        assert target["description"] in text
    _report.publish_markdown(results, page)  # idempotent: the markers stay, once each
    assert page.read_text(encoding="utf-8") == text
    page.write_text("# No markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no generated section"):
        _report.publish_markdown(results, page)


def test_the_ceiling_is_the_faster_limit_against_each_hand_written_pipeline(
    toy_run: tuple[dict[str, Any], str, Path],
) -> None:
    results, printed, _ = toy_run
    rows = {(row["group"], row["contender"]): row for row in results["speed"]}
    for suffix, autotuner in (("", "on"), (", autotuner off", "off")):
        limits = [
            rows[("limit" + suffix, c)]
            for c in ("images and audio alone, all cores", "the same, padded batches")
        ]
        ceiling = max(row["records_per_s_median"] for row in limits)
        hand = rows[("full batched" + suffix, "hand-written")]["records_per_s_median"]
        line = next(
            line for line in printed.splitlines() if line.startswith(f"- ceiling, autotuner {autotuner}:")
        )
        assert f"{ceiling:,.0f} records/s" in line
        assert f"= {ceiling / hand:.2f}x the hand-written batched pipeline" in line


def test_the_field_by_field_suite_runs_from_run_py(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    results, stdout, _ = toy_run
    rows = {(row["group"], row["pipeline"]) for row in results["fields"]}
    for group in ("image", "audio", "boxes, label, text", "all five"):
        for suffix in ("", ", autotuner off"):
            assert {(group + suffix, "hand-written"), (group + suffix, "recordkit")} <= rows
    assert all(len(row["wall"]) == results["meta"]["config"]["repeats"] for row in results["fields"])
    assert "field by field (issue 30):" in stdout


def test_the_scaled_decode_suite_runs_from_run_py(toy_run: tuple[dict[str, Any], str, Path]) -> None:
    from benchmarks import _scaled_decode

    results, stdout, _ = toy_run
    scaled = results["scaled"]
    repeats = results["meta"]["config"]["repeats"]
    ways = {(row["reader"], row["way"]) for row in scaled["rows"]}
    assert len(ways) == 10  # tf.data 5 ways (one on the dataset without picture sizes), numpy 3, PyTorch 2
    assert {(row["workload"], row["reader"], row["way"]) for row in scaled["rows"]} == {
        (workload, *way) for workload in _scaled_decode.WORKLOADS for way in ways
    }
    for row in scaled["rows"]:
        assert row["records"] == _scaled_decode.SUITE_RECORDS["toy"]
        assert len(row["seconds"]) == len(row["cpu_seconds"]) == repeats
        assert all(seconds > 0 for seconds in row["seconds"])
    # The quality of the large workloads only (the small pictures are not scaled down).
    smallest = 2 * _scaled_decode.SIZE[0]
    large = {name for name, (sides, _) in _scaled_decode.WORKLOADS.items() if sides[0] >= smallest}
    assert set(scaled["quality"]) == large
    assert all(20 < value < 99 for scores in scaled["quality"].values() for value in scores.values())
    assert "JPEGs decoded at the model's size (issue 33):" in stdout
    assert _scaled_decode.format_quality(scaled["quality"]) in stdout
    for row in scaled["rows"]:
        assert f"| {row['workload']} | {row['reader']} | {row['way']} |" in stdout
