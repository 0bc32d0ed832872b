"""What the mutation audit and the regression check cost (benchmarks/README.md, issue 31).

For each task, in the same run and on the same machine:

* the **baseline**: ``objective-score audit run --repeats 1`` without mutants (the canaries, the
  gold patch, its hunk ablations and the exploits);
* the **audit with mutants**: the same with ``--mutants N --workers W`` (default 40 and 2);
* one ``objective-score grade`` of the gold patch, and the same with ``--against-gold packages``.

It prints, per task, the gradings and wall minutes of each, the mutation score, and the ratios
``mutation audit / baseline audit`` and ``grade --against-gold / grade``. The tasks are the
fixture projects (``csvlite``, ``recipes``, ``intervals``); with ``--parity ID`` (repeatable) also
instances of the parity corpus (benchmarks/parity/README.md; ``--cache``, default
/work/parity-cache), graded with their own virtualenvs.

Budget (issue 31): an audit with 40 mutants within 10 minutes of wall time per task on 2 workers.
``--check`` exits 1 when a task misses it. ``--against-gold`` has no budget of its own: it runs the
scope's tests twice (under gold and the candidate) and again only the regressed ones, so its cost
is the scope's size (printed: a plain grading runs the listed tests' files only).

    python benchmarks/bench_mutation_audit.py [--mutants 40] [--workers 2] [--parity pallets__flask-5063] [--json] [--check]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FIXTURE_TASKS = ("csvlite", "recipes", "intervals")
AUDIT_BUDGET_MINUTES = 10.0


def cli(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args], capture_output=True, text=True, check=False)
    return time.perf_counter() - started, result


def task_args(name: str, cache: Path) -> tuple[list[str], Path]:
    """The instance/repo/python arguments of a task, and its gold patch file."""
    if name in FIXTURE_TASKS:
        return (["--instance", str(FIXTURES / "instances" / f"{name}.json"), "--repo", str(FIXTURES / "repos" / name)],
                FIXTURES / "patches" / name / "gold.diff")  # fmt: skip
    return (["--instance", str(cache / "datasets" / "swe-bench-lite.json"), "--instance-id", name, "--repo",
             str(cache / "repos" / name), "--python", str(cache / "envs" / name / "bin" / "python")],
            cache / "patches" / name / "gold.diff")  # fmt: skip


def measure(name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    common, gold = task_args(name, args.cache)
    row: dict[str, Any] = {"task": name}
    for label, extra in (("baseline", []), ("mutation", ["--mutants", str(args.mutants), "--workers", str(args.workers)])):
        seconds, result = cli("audit", "run", *common, "--repeats", "1", "--ledger", str(work / f"{name}-{label}.db"),
                              "--json", *extra)  # fmt: skip
        if result.returncode not in (0, 1):
            raise SystemExit(f"{name}: audit run ({label}) failed with exit {result.returncode}:\n{result.stderr[-2000:]}")
        report = json.loads(result.stdout)["audits"][0]
        gradings = sum(len(check["gradings"]) for check in report["checks"] if check["name"] != "flakiness")
        row[label] = {"seconds": round(seconds, 1), "gradings": gradings, "disposition": report["disposition"]}
        if label == "mutation" and report.get("mutation"):
            mutation = report["mutation"]
            row["mutation_score"] = mutation["score"]
            row["mutants"] = {"graded": mutation["graded"], "killed": mutation["killed"], "survived": len(mutation["survivors"]),
                              "generated": mutation["plan"]["generated"], "equivalent": len(mutation["plan"]["equivalent"]),
                              "timed_out": len(mutation["timed_out_ids"]), "not_graded": mutation["not_graded"]}  # fmt: skip
    for label, extra in (("grade", []), ("grade_against_gold", ["--against-gold", "packages"])):
        seconds, result = cli("grade", *common, "--patch", str(gold), "--no-ledger", "--json", *extra)
        envelope = json.loads(result.stdout)
        row[label] = {"seconds": round(seconds, 1), "resolved": (envelope.get("score") or {}).get("resolved"),
                      "against_gold": (envelope.get("against_gold") or {}).get("status")}  # fmt: skip
    row["audit_ratio"] = round(row["mutation"]["seconds"] / row["baseline"]["seconds"], 2)
    row["against_gold_ratio"] = round(row["grade_against_gold"]["seconds"] / row["grade"]["seconds"], 2)
    row["within_budget"] = row["mutation"]["seconds"] / 60 <= AUDIT_BUDGET_MINUTES
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--parity", action="append", default=[], metavar="ID", help="Also a parity-corpus instance")
    parser.add_argument("--only-parity", action="store_true", help="Skip the fixture tasks")
    parser.add_argument("--cache", type=Path, default=Path("/work/parity-cache"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="Exit 1 when a task misses the budget")
    args = parser.parse_args()
    tasks = ([] if args.only_parity else list(FIXTURE_TASKS)) + args.parity
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-mutation-") as folder:
        for name in tasks:
            print(f"{name}: measuring", file=sys.stderr, flush=True)
            rows.append(measure(name, args, Path(folder)))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'task':28} {'audit s':>8} {'+mutants s':>10} {'ratio':>6} {'gradings':>9} {'score':>6} "
              f"{'grade s':>8} {'+gold s':>8} {'ratio':>6}")  # fmt: skip
        for r in rows:
            score = "n/a" if r.get("mutation_score") is None else f"{r['mutation_score']:.2f}"
            print(f"{r['task']:28} {r['baseline']['seconds']:>8} {r['mutation']['seconds']:>10} {r['audit_ratio']:>6} "
                  f"{r['baseline']['gradings']:>4}+{r['mutation']['gradings'] - r['baseline']['gradings']:<4} {score:>6} "
                  f"{r['grade']['seconds']:>8} {r['grade_against_gold']['seconds']:>8} {r['against_gold_ratio']:>6}")  # fmt: skip
        print(f"budget: an audit with {args.mutants} mutants within {AUDIT_BUDGET_MINUTES:g} min a task")
    return 1 if args.check and not all(r["within_budget"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
