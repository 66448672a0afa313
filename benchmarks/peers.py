"""recordkit against the loaders a PyTorch or JAX user picks instead (issue 31).

    python benchmarks/peers.py --records 1500 --rounds 5            # what `make bench-peers` runs
    python benchmarks/peers.py --records 40 --rounds 1 --no-peers   # the smoke test's toy run

Each peer is installed in its own venv under ``benchmarks/out/venvs/<peer>`` (they
conflict with the CPU torch recordkit's tests install: MosaicML Streaming and LitData
pull torchvision, whose only build on the package index is the CUDA one; Streaming pins
numpy below 2.2) and run as a subprocess (:mod:`benchmarks._peer_child`) on the same
workload, used as the page cited in its adapter (:mod:`benchmarks._peer_adapters`)
advises. The contenders alternate within every round; every round is published (JSON
and a markdown table of records/s, worker memory, and each task's ratio to the best
peer), and the medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._peer_adapters import CONTENDERS
from benchmarks._peer_child import RANDOM_INDICES
from benchmarks._provenance import stamped

ROOT = Path(__file__).resolve().parents[1]

#: The CPU torch recordkit's own tests install (the one build of it on this disk).
CPU_TORCH = "torch==2.13.0"
#: torch with torchvision: the only torchvision on the package index here is a CUDA build,
#: which loads beside its own torch only, never beside the CPU torch (issue 31).
TORCHVISION = ["torch==2.14.1", "torchvision==0.29.1"]
#: What each peer's venv installs beside numpy, Pillow, soundfile and psutil (its torch too).
PEER_PACKAGES: dict[str, list[str]] = {
    "webdataset": ["webdataset", CPU_TORCH],
    "grain": ["array-record", "grain", CPU_TORCH],
    "streaming": ["mosaicml-streaming", *TORCHVISION],  # it pins numpy below 2.2 itself
    "litdata": ["litdata", *TORCHVISION],
    "huggingface": ["datasets", CPU_TORCH],
}
COMMON = ["numpy", "pillow", "soundfile", "psutil"]
TASKS = (
    "write",
    "read",
    "dataloader_0",
    "dataloader_1",
    "dataloader_2",
    "dataloader_2_steady",
    "thread_loader",
    "random_1",
    "random_64",
)


def venv_python(peer: str, venvs: Path) -> Path:
    """The python of ``peer``'s venv under ``venvs``, made and installed on first use."""
    venv = venvs / peer
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *COMMON, *PEER_PACKAGES[peer]], check=True
        )
    return python


def run_child(
    python: Path, contender: str, records: int, work: Path, random_indices: int = RANDOM_INDICES
) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [
            str(python),
            "-m",
            "benchmarks._peer_child",
            "--contender",
            contender,
            "--records",
            str(records),
            "--work",
            str(work),
            "--random-indices",
            str(random_indices),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def rate(result: dict[str, Any], task: str) -> float | None:
    row = result.get(task)
    return float(row["records_per_s"]) if isinstance(row, dict) and row["records"] else None


def cpu(result: dict[str, Any], task: str) -> float | None:
    row = result.get(task)
    return float(row["cpu_us_per_record"]) if isinstance(row, dict) and "cpu_us_per_record" in row else None


def table(rounds: list[dict[str, dict[str, Any]]]) -> str:
    """Markdown: per contender and task, every round's records/s, the median, the median
    CPU µs per record, the workers' memory, and the median's ratio to the best peer's
    median (recordkit's rows)."""
    names = list(rounds[0])
    medians: dict[str, dict[str, float]] = {}
    lines = [
        "| contender | task | rounds (records/s) | median | CPU µs/record | worker RSS (MB) | x best peer |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name in names:
        medians[name] = {}
        for task in TASKS:
            rates = [r for r in (rate(one[name], task) for one in rounds) if r is not None]
            if rates:
                medians[name][task] = statistics.median(rates)
    for name in names:
        for task, median in medians[name].items():
            peers = [medians[p][task] for p in names if p != "recordkit" and task in medians[p]]
            ratio = f"{median / max(peers):.2f}x" if name == "recordkit" and peers else ""
            rss = [one[name].get(task, {}).get("worker_rss_mb") for one in rounds]
            memory = " ".join(f"{m:.0f}" for m in rss if m is not None)
            each = " ".join(f"{r:,.0f}" for r in (rate(one[name], task) for one in rounds) if r is not None)
            cpus = [c for c in (cpu(one[name], task) for one in rounds) if c is not None]
            used = f"{statistics.median(cpus):,.0f}" if cpus else ""
            lines.append(f"| {name} | {task} | {each} | {median:,.0f} | {used} | {memory} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peers", default=",".join(PEER_PACKAGES), help="comma-separated peers")
    parser.add_argument("--no-peers", action="store_true", help="recordkit alone (the smoke test)")
    parser.add_argument(
        "--random-indices",
        type=int,
        default=RANDOM_INDICES,
        help=f"random indices each contender reads, one at a time and in batches (default {RANDOM_INDICES})",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out", help="where the report goes")
    parser.add_argument(
        "--venvs",
        type=Path,
        default=ROOT / "benchmarks" / "out" / "venvs",
        help="the peers' venvs (made on first use: several GB for Streaming and LitData)",
    )
    args = parser.parse_args(argv)
    peers = [] if args.no_peers else [p for p in args.peers.split(",") if p]
    for peer in peers:
        if peer not in PEER_PACKAGES or peer not in CONTENDERS:
            parser.error(f"unknown peer {peer!r}; the peers are {', '.join(PEER_PACKAGES)}")
    pythons = {"recordkit": Path(sys.executable), **{p: venv_python(p, args.venvs) for p in peers}}
    rounds: list[dict[str, dict[str, Any]]] = []
    for number in range(args.rounds):
        order = list(pythons) if number % 2 == 0 else list(reversed(pythons))  # alternate
        one: dict[str, dict[str, Any]] = {}
        for name in order:
            with tempfile.TemporaryDirectory(prefix=f"rk-peers-{name}-") as work:
                one[name] = run_child(
                    pythons[name], name, args.records, Path(work) / "data", args.random_indices
                )
        rounds.append({name: one[name] for name in pythons})
        print(
            f"round {number + 1}: "
            + ", ".join(f"{n} read {rate(r, 'read') or 0:,.0f}/s" for n, r in one.items())
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(
        json.dumps(stamped({"records": args.records, "rounds": rounds}), indent=2) + "\n"
    )
    report = table(rounds)
    (args.out / "peers.md").write_text(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
