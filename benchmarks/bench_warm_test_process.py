"""How much of a grading's test process is pytest starting? (benchmarks/README.md; issue 16)

A grading's test process is a cold interpreter that imports pytest and then runs the listed tests.
This measures, on a fixture repository (default ``intervals``) and in alternating order over
``--rounds`` rounds of ``--runs`` runs each:

* **cold**: ``python -I -m pytest -q -p no:cacheprovider`` in a copy of the repository, a new
  interpreter each run (what a grading's test process costs, less the sandbox and the recorder);
* **warm**: one process that imported pytest once, then forks one child per run that runs
  ``pytest.main`` on the same copy and exits (a fork server's child; no sandbox either).

Both give the same outcome (every run must pass, or the timings mean nothing: exit 2). CPU is the
children's (``wait4``), so the numbers are the test process's own. It prints the CPU seconds per
run of each and the ratio warm / cold: what a warm test process per interpreter would save per
grading, at most (no sandbox, no recorder). What gradings get from ``warm.py``, which does this
with the sandbox: ``bench_warm_grading.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["-q", "-p", "no:cacheprovider"]


def cold(copy: Path, runs: int) -> tuple[float, float]:
    """``runs`` cold interpreters running pytest: (CPU seconds, wall seconds) per run."""
    cpu = wall = 0.0
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-I", "-m", "pytest", *ARGS], cwd=copy, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(copy / "src")})  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall += time.perf_counter() - started
        cpu += usage.ru_utime + usage.ru_stime
        if proc.returncode != 0:
            raise SystemExit(f"a cold run failed (exit {proc.returncode}): the timings mean nothing")
    return cpu / runs, wall / runs


def warm(copy: Path, runs: int) -> tuple[float, float]:
    """``runs`` children forked from this process (pytest already imported), each running pytest."""
    import pytest

    cpu = wall = 0.0
    for _ in range(runs):
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: the run, then out without any of the parent's clean-up
            try:
                os.chdir(copy)
                sys.path.insert(0, str(copy / "src"))
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os._exit(int(pytest.main(list(ARGS))))
            except BaseException:  # noqa: BLE001 - a child never returns into the parent's code
                os._exit(99)
        _, status, usage = os.wait4(pid, 0)
        wall += time.perf_counter() - started
        cpu += usage.ru_utime + usage.ru_stime
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"a warm run failed (exit {os.waitstatus_to_exitcode(status)}): the timings mean nothing")
    return cpu / runs, wall / runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="intervals", help="fixture repository under fixtures/repos (default intervals)")
    parser.add_argument("--runs", type=int, default=10, help="runs of each kind a round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating cold and warm (default 3)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp:
        copy = Path(tmp) / args.repo
        shutil.copytree(ROOT / "fixtures" / "repos" / args.repo, copy, ignore=shutil.ignore_patterns("__pycache__"))
        cold(copy, 1)  # the copy's bytecode and the page cache, for both
        rounds = []
        for number in range(args.rounds):
            pair = {}
            for kind, measure in ((("cold", cold), ("warm", warm)) if number % 2 == 0 else (("warm", warm), ("cold", cold))):
                pair[kind] = measure(copy, args.runs)
            rounds.append(pair)
    result = {kind: {"cpu_per_run": round(statistics.median(r[kind][0] for r in rounds), 4),
                     "wall_per_run": round(statistics.median(r[kind][1] for r in rounds), 4)} for kind in ("cold", "warm")}  # fmt: skip
    result["cpu_ratio_warm_over_cold"] = round(result["warm"]["cpu_per_run"] / result["cold"]["cpu_per_run"], 3)
    result["cpu_saved_per_run"] = round(result["cold"]["cpu_per_run"] - result["warm"]["cpu_per_run"], 4)
    if args.json:
        print(json.dumps({"repo": args.repo, "runs": args.runs, "rounds": args.rounds, **result}, indent=2))
    else:
        print(f"{args.repo}: {args.rounds} rounds of {args.runs} runs, medians per run")
        for kind in ("cold", "warm"):
            print(f"  {kind}: {result[kind]['cpu_per_run']:.3f} CPU-s, {result[kind]['wall_per_run']:.3f} s")
        print(f"  warm / cold CPU: {result['cpu_ratio_warm_over_cold']:.3f} "
              f"({result['cpu_saved_per_run']:.3f} CPU-s saved a run)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
