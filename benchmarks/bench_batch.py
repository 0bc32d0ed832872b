"""Does grade-batch scale with --workers? (benchmarks/README.md)

Builds a predictions file of ``--gradings`` predictions (default 42) over the three
fixture instances: for each of ``gradings / 6`` made-up harnesses, the gold patch
and the patch that breaks a PASS_TO_PASS test for every instance. Then times, in
alternating order over ``--rounds`` rounds, the real command

    objective-score grade-batch --dataset fixtures/datasets/fixtures.jsonl
        --predictions <those> --repos fixtures/repos --workers N --ledger <fresh>

for N = 1 (the baseline) and N = ``--workers`` (default 2), each with a fresh
ledger so nothing is resumed. Every run must give the expected verdict for every
prediction, or the timings mean nothing (exit 2).

Target (issue 3): with 2 workers at least 1.7x faster than with 1 on a 2-core
machine. Exit status 1 with ``--check`` when it is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TARGET = 1.7
EXPECTED = {"gold": "resolved", "break_p2p": "not_resolved"}


def write_predictions(path: Path, gradings: int) -> int:
    instances = [json.loads(line) for line in (FIXTURES / "datasets" / "fixtures.jsonl").read_text().splitlines()]
    rows = []
    for harness in range(max(1, gradings // (2 * len(instances)))):
        for candidate in EXPECTED:
            for instance in instances:
                project = instance["instance_id"].split("__")[1].rsplit("-", 1)[0]
                patch = (FIXTURES / "patches" / project / f"{candidate}.diff").read_text()
                rows.append({"instance_id": instance["instance_id"], "model_name_or_path": f"h{harness}-{candidate}",
                             "model_patch": patch})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def run(workers: int, predictions: Path, ledger: Path) -> float:
    command = [sys.executable, "-m", "pytest_objective_scoring", "grade-batch", "--dataset",
               str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions", str(predictions), "--repos",
               str(FIXTURES / "repos"), "--workers", str(workers), "--ledger", str(ledger), "--json"]  # fmt: skip
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"grade-batch --workers {workers} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    for row in json.loads(result.stdout)["results"]:
        expected = EXPECTED[row["model_name_or_path"].split("-", 1)[1]]
        if row["failure_class"] != expected or row["resumed"]:
            raise SystemExit(f"unexpected result, timings void: {row}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gradings", type=int, default=42, help="Predictions to grade per run (default: 42)")
    parser.add_argument("--workers", type=int, default=2, help="Workers of the parallel run (default: 2)")
    parser.add_argument("--rounds", type=int, default=1, help="Alternating rounds (default: 1)")
    parser.add_argument("--check", action="store_true", help="Exit 1 when the target is missed")
    args = parser.parse_args(argv)
    times: dict[int, list[float]] = {1: [], args.workers: []}
    with tempfile.TemporaryDirectory() as tmp:
        predictions = Path(tmp) / "predictions.jsonl"
        count = write_predictions(predictions, args.gradings)
        for index in range(args.rounds):
            order = [1, args.workers] if index % 2 == 0 else [args.workers, 1]
            for workers in order:
                seconds = run(workers, predictions, Path(tmp) / f"ledger-{index}-{workers}.sqlite")
                times[workers].append(seconds)
                print(f"round {index + 1}: --workers {workers}: {seconds:.2f} s", flush=True)
    serial, parallel = min(times[1]), min(times[args.workers])
    speedup = serial / parallel
    print(f"{count} gradings, {os.cpu_count()} CPUs, fastest of {args.rounds} round(s); medians "
          f"{statistics.median(times[1]):.2f} s / {statistics.median(times[args.workers]):.2f} s")
    print(f"--workers 1 {serial:.2f} s, --workers {args.workers} {parallel:.2f} s: speed-up {speedup:.2f}x "
          f"(target >= {TARGET}x) {'PASS' if speedup >= TARGET else 'FAIL'}")
    return 1 if args.check and speedup < TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
