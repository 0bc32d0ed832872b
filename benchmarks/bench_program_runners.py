"""The live runner's time over the bare runner, for Django's, SymPy's and unittest's (issue 26).

For each case it times, alternating, ``--rounds`` times:

(a) ``grade``    a whole ``grade_candidate`` of the gold patch through the Python API (copy, apply,
                 test patch, the sandboxed run through the boot module and the program recorder,
                 the record and the console read and graded, clean-up): wall time, and CPU time
                 of this process and every process it waited for;
(b) ``bare``     the runner's own command on the same targets, with the same interpreter, in a
                 copy prepared once (gold and test patch applied): ``tests/runtests.py --verbosity
                 2 --settings=test_sqlite --parallel 1 LABELS``, ``bin/test -C --verbose FILES``,
                 ``python -m unittest -v MODULES``. SymPy's gets ``PYTHONHASHSEED`` (a fixed
                 value) so that it runs its tests in its own process, as the graded run does: without
                 it ``bin/test`` starts a second interpreter, and the bare run would be the slower.

Overhead = median(a) - median(b), in wall seconds and in CPU seconds; the goal is under
``--limit`` (0.3 s) a grading on this machine.

Cases: the fixture projects ``recipes`` (Django's layout), ``sympy-mini`` and ``units``, and with
``--manifest FILE`` real SWE-bench instances (a list of ``{instance_id, dataset, tree, base,
python}``: a git tree whose commit ``base`` stands for the row's base, and its environment's
interpreter; ``dataset`` names ``--datasets DIR/<dataset>.jsonl``). Exit 0, or 1 with ``--check``
when an overhead is over the limit; 2 when a grading is not resolved or a bare run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_objective_scoring import runner
from pytest_objective_scoring.instances import Instance, load_instance, parse_instance
from pytest_objective_scoring.protect import patch_files
from pytest_objective_scoring.runner import GradeRequest, grade_candidate
from pytest_objective_scoring.runner_choice import choose, directives

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROJECTS = ("recipes", "sympy-mini", "units")


class BenchError(RuntimeError):
    """A run that did not do what it should: its timings would mean nothing."""


@dataclass
class Case:
    name: str
    instance: Instance
    repo: Path
    gold: bytes
    python: str


def fixture_cases(python: str) -> list[Case]:
    return [Case(p, load_instance(FIXTURES / "instances" / f"{p}.json"), FIXTURES / "repos" / p,
                 (FIXTURES / "patches" / p / "gold.diff").read_bytes(), python) for p in PROJECTS]  # fmt: skip


def manifest_cases(manifest: Path, datasets: Path) -> list[Case]:
    cases = []
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in json.loads(manifest.read_text()):
        dataset = entry.get("dataset", "lite")
        if dataset not in rows:
            lines = (datasets / f"{dataset}.jsonl").read_text().splitlines()
            rows[dataset] = {r["instance_id"]: r for r in map(json.loads, lines)}
        row = dict(rows[dataset][entry["instance_id"]], base_commit=entry["base"])  # the tree's commit stands for it
        instance = parse_instance(row, f"{dataset}:{entry['instance_id']}")
        cases.append(Case(entry["instance_id"], instance, Path(entry["tree"]), row["patch"].encode(), entry["python"]))
    return cases


def cpu_now() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def time_grading(case: Case) -> tuple[float, float]:
    request = GradeRequest(repo=case.repo, instance=case.instance, patch=case.gold, python=case.python, timeout=900.0)
    cpu, started = cpu_now(), time.perf_counter()
    result = grade_candidate(request)
    wall, cpu = time.perf_counter() - started, cpu_now() - cpu
    if result.exit_code != 0:
        detail = result.envelope.get("runner", {}).get("failure_detail") or result.envelope.get("no_verdict_reason")
        raise BenchError(f"{case.name}: the gold patch is not resolved (exit {result.exit_code}: {detail})")
    return wall, cpu


def prepare_bare(case: Case, into: Path) -> tuple[Path, list[str], dict[str, str]]:
    """A copy with gold and the test patch applied, the bare command and its environment."""
    copy = into / "repo"
    if (case.repo / ".git").exists() and case.instance.base_commit:
        subprocess.run(["git", "clone", "-q", "--shared", str(case.repo), str(copy)], check=True)
        subprocess.run(["git", "checkout", "-q", case.instance.base_commit], cwd=copy, check=True)
    else:
        shutil.copytree(case.repo, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    for name, text in (("gold.diff", case.gold.decode()), ("test.diff", case.instance.test_patch or "")):
        if text.strip():
            (into / name).write_text(text)
            done = subprocess.run(["git", "apply", str(into / name)], cwd=copy, capture_output=True, text=True)
            if done.returncode != 0:
                raise BenchError(f"{case.name}: git apply {name} failed: {done.stderr.strip()}")
    command = choose(case.instance)
    targets = directives(command, patch_files(case.instance.test_patch or ""))
    warnings = [item for w in command.warnings for item in ("-W", w)]
    argv = [case.python, *warnings, *command.program, *targets]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    environ.update(command.env, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    if command.runner == "sympy":
        environ["PYTHONHASHSEED"] = "12345"  # in its own process, as the graded run
    return copy, argv, environ


def time_bare(copy: Path, argv: list[str], environ: dict[str, str]) -> tuple[float, float]:
    cpu, started = cpu_now(), time.perf_counter()
    done = subprocess.run(argv, cwd=copy, env=environ, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - started, cpu_now() - cpu
    if done.returncode != 0:
        raise BenchError(f"bare run {' '.join(argv)} in {copy} exited {done.returncode}:\n{(done.stdout + done.stderr)[-2000:]}")
    return wall, cpu


def measure(case: Case, rounds: int, verbose: bool) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix=f"bench-program-{case.name}-"))
    try:
        copy, argv, environ = prepare_bare(case, scratch)
        time_grading(case)  # warm-up, untimed: the page cache, the copies' byte code
        time_bare(copy, argv, environ)
        graded: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        for r in range(rounds):
            for kind in (("grade", "bare") if r % 2 == 0 else ("bare", "grade")):
                value = time_grading(case) if kind == "grade" else time_bare(copy, argv, environ)
                (graded if kind == "grade" else bare).append(value)
                if verbose:
                    print(f"  {case.name} round {r + 1} {kind:<6} {value[0]:7.3f}s wall {value[1]:7.3f}s CPU", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    median = statistics.median
    return {
        "case": case.name,
        "runner": choose(case.instance).runner,
        "python": case.python,
        "command": argv[1:],
        "grade_wall": round(median(w for w, _ in graded), 4),
        "bare_wall": round(median(w for w, _ in bare), 4),
        "grade_cpu": round(median(c for _, c in graded), 4),
        "bare_cpu": round(median(c for _, c in bare), 4),
        "overhead_wall": round(median(w for w, _ in graded) - median(w for w, _ in bare), 4),
        "overhead_cpu": round(median(c for _, c in graded) - median(c for _, c in bare), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each measurement (default 5)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the fixture cases (default: this one)")
    parser.add_argument("--manifest", type=Path, action="append", default=[], help="real instances (see above)")
    parser.add_argument("--datasets", type=Path, default=Path("/work/swebench-data"), help="folder of <dataset>.jsonl")
    parser.add_argument("--only", action="append", default=[], help="only these cases (repeatable)")
    parser.add_argument("--no-fixtures", action="store_true", help="only the manifests' cases")
    parser.add_argument("--limit", type=float, default=0.3, help="the goal: overhead under this many seconds")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when an overhead is over the limit")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    cases = [] if args.no_fixtures else fixture_cases(args.python)
    for manifest in args.manifest:
        cases += manifest_cases(manifest, args.datasets)
    if args.only:
        cases = [c for c in cases if c.name in args.only]
    runner.network_isolation()  # probed once per process: out of the timings
    try:
        results = [measure(case, args.rounds, args.verbose) for case in cases]
    except BenchError as exc:
        print(f"BENCHMARK ERROR: {exc}", file=sys.stderr)
        return 2
    over = [r for r in results if r["overhead_wall"] >= args.limit]
    if args.json:
        json.dump({"benchmark": "program_runners", "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "rounds": args.rounds,
                   "machine": {"nproc": os.cpu_count(), "python": platform.python_version()}, "limit": args.limit,
                   "results": results}, sys.stdout, indent=2)  # fmt: skip
        print()
    else:
        print(f"live runner over the bare runner: {args.rounds} rounds, nproc={os.cpu_count()}; medians in seconds")
        print(f"{'case':<28} {'runner':<9} {'grade':>7} {'bare':>7} {'over':>7} {'grade CPU':>10} {'bare CPU':>9} "
              f"{'over CPU':>9}  verdict")  # fmt: skip
        for r in results:
            verdict = "PASS" if r["overhead_wall"] < args.limit else "FAIL"
            print(f"{r['case']:<28} {r['runner']:<9} {r['grade_wall']:>7.3f} {r['bare_wall']:>7.3f} "
                  f"{r['overhead_wall']:>+7.3f} {r['grade_cpu']:>10.3f} {r['bare_cpu']:>9.3f} {r['overhead_cpu']:>+9.3f}  "
                  f"{verdict} (< {args.limit:g} s)")  # fmt: skip
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
