"""How much does the runner add around the pytest run it grades? (benchmarks/README.md)

For each fixture project (``fixtures/instances/<name>.json``, repository
``fixtures/repos/<name>``, candidate ``fixtures/patches/<name>/gold.diff``) it
times, in alternating order, ``--rounds`` times:

(a) ``grade``     a full ``grade_candidate(GradeRequest(...))`` through the Python API:
                  copy, apply, test patch, pytest subprocess, grading, clean-up;
(b) ``baseline``  ``python -m pytest -q -p no:cacheprovider <the same test files>``
                  with the same interpreter, in a copy prepared once beforehand
                  (``prepare_copy`` + ``git apply`` of gold.diff and the test patch),
                  timing only the pytest subprocess.

Runner overhead = median(a) - median(b). The runner's own step timings
(``envelope["runner"]["steps"]``) are reported as medians too, with ``other``
= the grading's total minus its steps (grading, envelope, workspace clean-up).

Exit status 0, unless ``--check`` is given and a verdict is FAIL (then 1).
A grading that is not resolved or a baseline run that fails is an error (2).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_objective_scoring.instances import Instance, load_instance
from pytest_objective_scoring import runner
from pytest_objective_scoring.runner import GradeRequest, grade_candidate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MAX_OVERHEAD = 0.5  # seconds per grading (see benchmarks/README.md)
COPY_SKIP = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache")


class BenchError(RuntimeError):
    """A run that did not do what it should: the timings would mean nothing."""


def code_version() -> str:
    """The project's commit, and whether the working tree differs from it (read-only git)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        dirty = subprocess.run(["git", "diff-index", "--quiet", "HEAD", "--"], cwd=root, capture_output=True)
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + (" + uncommitted changes" if dirty.returncode == 1 else "")


def projects(only: list[str] | None) -> list[str]:
    """The fixture projects whose tests pytest runs (the others: bench_program_runners.py)."""
    names = sorted(p.stem for p in (FIXTURES / "instances").glob("*.json")
                   if json.loads(p.read_text(encoding="utf-8")).get("runner") in (None, "pytest"))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"unknown project(s) {', '.join(unknown)}; choose from {', '.join(names)}")
        names = [n for n in names if n in only]
    return names


# ---------------------------------------------------------------- (a) the runner


def time_grading(name: str, instance: Instance, gold: bytes, python: str) -> dict[str, Any]:
    request = GradeRequest(repo=FIXTURES / "repos" / name, instance=instance, patch=gold, python=python, timeout=600.0)
    started = time.perf_counter()
    result = grade_candidate(request)
    wall = time.perf_counter() - started
    envelope = result.envelope
    runner = envelope.get("runner", {})
    if result.exit_code != 0 or (result.score or {}).get("resolved") != "resolved":
        raise BenchError(
            f"{name}: grading gold.diff is not resolved (exit {result.exit_code}, failure class "
            f"{result.failure_class}, {runner.get('failure_detail') or envelope.get('no_verdict_reason')})"
        )
    steps: dict[str, float] = {}
    for item in runner.get("steps", []):  # a step may be recorded more than once: add them up
        steps[item["name"]] = steps.get(item["name"], 0.0) + item["seconds"]
    return {"wall": wall, "steps": steps, "tests_wall": runner.get("run", {}).get("wall_time"),
            "test_files": runner.get("test_files", [])}  # fmt: skip


# ---------------------------------------------------------------- (b) the baseline


def prepare_baseline(name: str, instance: Instance, gold: Path, into: Path) -> tuple[Path, list[str]]:
    """A copy of the project with gold.diff and the test patch applied, once (stdlib + git only)."""
    copy = into / "repo"
    shutil.copytree(FIXTURES / "repos" / name, copy, symlinks=True, ignore=COPY_SKIP)
    subprocess.run(["git", "init", "--quiet"], cwd=copy, check=True)  # so that git apply stays inside the copy
    test_patch = into / "test.diff"
    test_patch.write_text(instance.test_patch or "", encoding="utf-8")
    for patch in (gold, test_patch):
        if patch.stat().st_size:
            done = subprocess.run(["git", "apply", str(patch)], cwd=copy, capture_output=True, text=True)
            if done.returncode != 0:
                raise BenchError(f"{name}: git apply {patch.name} failed: {done.stderr.strip()}")
    test_files = [f for f in instance.test_files() if (copy / f).exists()]
    return copy, test_files


def time_baseline(copy: Path, test_files: list[str], python: str) -> float:
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *test_files]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=copy, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise BenchError(f"baseline {' '.join(command)} in {copy} exited {done.returncode}:\n{done.stdout[-2000:]}")
    return wall


# ---------------------------------------------------------------- one project


def measure(name: str, rounds: int, python: str, verbose: bool) -> dict[str, Any]:
    instance = load_instance(FIXTURES / "instances" / f"{name}.json")
    gold_path = FIXTURES / "patches" / name / "gold.diff"
    gold = gold_path.read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix=f"bench-runner-{name}-"))
    try:
        copy, test_files = prepare_baseline(name, instance, gold_path, scratch)
        # Warm-up (untimed): the page cache, and the baseline copy's __pycache__.
        warm = time_grading(name, instance, gold, python)
        if warm["test_files"] != test_files:
            raise BenchError(f"{name}: the runner ran {warm['test_files']}, the baseline would run {test_files}")
        time_baseline(copy, test_files, python)
        gradings: list[dict[str, Any]] = []
        baselines: list[float] = []
        for r in range(rounds):
            for kind in (("grade", "baseline") if r % 2 == 0 else ("baseline", "grade")):
                if kind == "grade":
                    gradings.append(time_grading(name, instance, gold, python))
                    value = gradings[-1]["wall"]
                else:
                    baselines.append(time_baseline(copy, test_files, python))
                    value = baselines[-1]
                if verbose:
                    print(f"  {name} round {r + 1} {kind:<8} {value:7.3f}s", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    walls = [g["wall"] for g in gradings]
    grade_median, base_median = statistics.median(walls), statistics.median(baselines)
    names = list(dict.fromkeys(name for g in gradings for name in g["steps"]))  # in the runner's order
    steps = {s: statistics.median(g["steps"].get(s, 0.0) for g in gradings) for s in names}
    other = statistics.median(g["wall"] - sum(g["steps"].values()) for g in gradings)
    return {
        "project": name,
        "test_files": test_files,
        "grade_median": round(grade_median, 4),
        "grade_min": round(min(walls), 4),
        "baseline_median": round(base_median, 4),
        "baseline_min": round(min(baselines), 4),
        "overhead": round(grade_median - base_median, 4),
        "overhead_min": round(min(walls) - min(baselines), 4),
        "steps_median": {k: round(v, 4) for k, v in steps.items()},
        "other_median": round(other, 4),
        "tests_step_minus_baseline": round(steps.get("tests", 0.0) - base_median, 4),
        "grade_walls": [round(w, 4) for w in walls],
        "baseline_walls": [round(w, 4) for w in baselines],
    }


def verdicts(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "project": r["project"],
            "check": f"runner overhead < {MAX_OVERHEAD}s",
            "value": f"{r['overhead']:+.3f}s",
            "ok": r["overhead"] < MAX_OVERHEAD,
        }
        for r in results
    ]


def print_table(results: list[dict[str, Any]], verdict_rows: list[dict[str, Any]]) -> None:
    print(f"{'project':<10} {'grade s':>8} {'(min)':>7} {'pytest s':>9} {'(min)':>7} {'overhead':>9} {'tests-pytest':>12}")
    print("-" * 68)
    for r in results:
        print(
            f"{r['project']:<10} {r['grade_median']:>8.3f} {r['grade_min']:>7.3f} {r['baseline_median']:>9.3f} "
            f"{r['baseline_min']:>7.3f} {r['overhead']:>+9.3f} {r['tests_step_minus_baseline']:>+12.3f}"
        )
    print()
    print("runner steps (envelope runner.steps, medians in seconds; other = total - steps):")
    for r in results:
        steps = "  ".join(f"{name} {seconds:.3f}" for name, seconds in r["steps_median"].items())
        print(f"  {r['project']:<10} {steps}  other {r['other_median']:.3f}")
    print()
    for v in verdict_rows:
        print(f"{v['project']:<10} {v['check']:<28} {v['value']:<10} {'PASS' if v['ok'] else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="Timed rounds of each measurement (default 5); the median counts")
    parser.add_argument("--projects", type=lambda s: [x for x in s.split(",") if x], default=None,
                        help="Comma-separated fixture projects (default: every fixtures/instances/*.json)")  # fmt: skip
    parser.add_argument("--python", default=sys.executable, help="Interpreter for both runs (default: this one)")
    parser.add_argument("--json", action="store_true", help="Print the results as JSON instead of a table")
    parser.add_argument("--check", action="store_true", help="Exit 1 when a verdict is FAIL")
    parser.add_argument("--verbose", "-v", action="store_true", help="Print every timed run on stderr")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    probe = getattr(runner, "network_isolation", None)
    if probe is not None:
        probe()  # probed once per process by the runner: keep the probe out of the timings
    try:
        results = [measure(name, args.rounds, args.python, args.verbose) for name in projects(args.projects)]
    except BenchError as exc:
        print(f"BENCHMARK ERROR: {exc}", file=sys.stderr)
        return 2
    verdict_rows = verdicts(results)
    network = "unknown" if probe is None else ("unshared" if probe() else "not isolated")
    if args.json:
        json.dump(
            {
                "benchmark": "runner_overhead",
                "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
                "code": code_version(),
                "rounds": args.rounds,
                "network": network,
                "results": results,
                "verdicts": verdict_rows,
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        print(f"runner overhead: {args.rounds} rounds, nproc={os.cpu_count()}, python {platform.python_version()}, "
              f"code {code_version()}, runner network: {network}; times are medians in seconds")  # fmt: skip
        print_table(results, verdict_rows)
    failed = [v for v in verdict_rows if not v["ok"]]
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
