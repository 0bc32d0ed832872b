"""Warm test processes against cold ones, on real gradings (benchmarks/README.md; issue 16).

Grades one fixture candidate (default: ``intervals``' gold patch) ``--gradings`` times in one grader
process, the way a batch or an audit does, once with warm test processes (the default: the first
two runs cold, the rest forked from a warm process of the interpreter, ``warm.py``) and once with
``OBJECTIVE_SCORE_WARM=0`` (every run a new interpreter), alternating over ``--rounds`` rounds. The
CPU is the whole grader's tree (its own and every process it waited for, the warm process and the
runs it forked included). Every grading must give the same verdict both ways, or the timings mean
nothing (exit 2). Prints the CPU seconds per grading of each and the ratio warm / cold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

GRADER = """
import contextlib, io, json, resource, sys
from pytest_objective_scoring import cli, warm
args, count = json.loads(sys.argv[1]), int(sys.argv[2])
verdicts, starts = [], []
for _ in range(count):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(args)
    envelope = json.loads(out.getvalue())
    verdicts.append(envelope["score"]["resolved"])
    starts.append(envelope["runner"]["run"]["isolation"].get("start"))
warm.reset()  # the warm process ends and is waited for: its CPU and its runs' are counted below
usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = sum(u.ru_utime + u.ru_stime for u in usage)
print(json.dumps({"cpu": cpu, "verdicts": verdicts, "starts": starts}))
"""


def grader(project: str, candidate: str, gradings: int, warm: bool) -> dict:
    args = ["grade", "--repo", str(FIXTURES / "repos" / project), "--instance",
            str(FIXTURES / "instances" / f"{project}.json"), "--patch",
            str(FIXTURES / "patches" / project / f"{candidate}.diff"), "--json", "--no-ledger"]  # fmt: skip
    test_patch = FIXTURES / "patches" / project / "test.diff"
    if test_patch.is_file():
        args += ["--test-patch", str(test_patch)]
    env = {**os.environ, "OBJECTIVE_SCORE_WARM": "1" if warm else "0"}
    done = subprocess.run([sys.executable, "-c", GRADER, json.dumps(args), str(gradings)], capture_output=True,
                          text=True, env=env, timeout=1800)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the grader failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="intervals")
    parser.add_argument("--candidate", default="gold")
    parser.add_argument("--gradings", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    per: dict[str, list[float]] = {"warm": [], "cold": []}
    verdicts: set[str] = set()
    warm_runs = 0
    for _ in range(options.rounds):
        for name in ("warm", "cold"):
            result = grader(options.project, options.candidate, options.gradings, name == "warm")
            per[name].append(result["cpu"] / options.gradings)
            verdicts.update(result["verdicts"])
            if name == "warm":
                warm_runs = result["starts"].count("warm")
    if len(verdicts) != 1:
        print(f"the verdicts differ: {sorted(verdicts)}", file=sys.stderr)
        return 2
    warm, cold = statistics.median(per["warm"]), statistics.median(per["cold"])
    report = {"project": options.project, "candidate": options.candidate, "gradings": options.gradings,
              "rounds": options.rounds, "verdict": verdicts.pop(), "warm_runs_per_round": warm_runs,
              "warm_cpu_per_grading": round(warm, 4), "cold_cpu_per_grading": round(cold, 4),
              "ratio_warm_cold": round(warm / cold, 3)}  # fmt: skip
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{options.project} {options.candidate}: {options.rounds} rounds of {options.gradings} gradings in one "
              f"grader, medians per grading ({warm_runs} warm runs a round)")  # fmt: skip
        print(f"  warm: {warm:.3f} CPU-s")
        print(f"  cold: {cold:.3f} CPU-s")
        print(f"  warm / cold: {warm / cold:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
