"""The batch grading engine: many jobs graded, locally or on a cluster, each claimed in the ledger
just before it is graded and recorded as it arrives (``grade-batch`` and ``ab run`` grade through it).

Not a command: it parses no command line and imports nothing of :mod:`.cli` or :mod:`.commands`.
What stops it (a ledger that refuses claims, jobs another run holds past ``max_wait``) is a
:class:`~.errors.CommandError`; the jobs themselves are planned and run by :mod:`.batch`.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Sequence

from .errors import CommandError, ledger_problem, terminate

__all__ = ["RowHandler", "grade_jobs"]

RowHandler = Callable[[Any, dict[str, Any], "dict[str, Any] | None", "dict[str, Any] | None"], None]


def grade_jobs(
    ledger: Any, jobs: Sequence[Any], settings: dict[str, Any], *, workers: int, scheduler: str | None,
    retry_infra: bool = False, quiet: bool = False, on_row: RowHandler | None = None, run_id: str | None = None,
    poll: float = 2.0, max_wait: float | None = None,
) -> tuple[dict[str, dict[str, Any]], list[Any]]:
    """Grade the jobs not yet in the ledger (locally or on a cluster), recording each result as it
    arrives; returns every job's report row by job key, and the jobs that were graded now.
    ``on_row(job, row, envelope, recorded)`` sees every row: one read back from the ledger
    (``recorded``), a fresh one (``envelope``) as it arrives, after the ledger.

    Each job is claimed in the ledger just before it is graded (:mod:`.claims`): a job another run
    is grading is left to it, and its result read back once recorded (every ``poll`` seconds, after
    this run's own jobs), or taken back if that run is proven dead. SIGTERM stops it like Ctrl-C
    (KeyboardInterrupt); what was recorded stays recorded and every unfinished claim is released."""
    import signal

    from . import batch
    from .audit_ledger import audit_of, audits
    from .claims import UNRECORDED, Claims
    from .integrity import recombine, settle
    from .ledger import LedgerError

    rows: dict[str, dict[str, Any]] = {}
    unrecorded: list[str] = []  # what went wrong each time the ledger refused a result
    recorded_audits = audits(ledger)
    done = batch.recorded_jobs(ledger)

    def read_back(job: Any, recorded: dict[str, Any]) -> dict[str, Any]:
        row = batch.result_row(job, None, recorded, recorded["seq"])
        # the run's own facts stand; the task's audit is read now (a re-audit may have changed it)
        row["disposition"], row["reasons"], _ = recombine([*(recorded.get("reasons") or []), *(recorded.get("info") or [])],
                                                          recorded.get("disposition"),
                                                          audit_of(recorded_audits, job.instance.fields))  # fmt: skip
        rows[job.key] = row
        if on_row is not None:
            on_row(job, row, None, recorded)
        return row

    todo: list[Any] = []
    for job in jobs:
        recorded = done.get(job.key)
        if recorded is not None and not (retry_infra and recorded.get("outcome") == "infrastructure_failure"):
            read_back(job, recorded)
        elif job.key not in {j.key for j in todo}:
            todo.append(job)
    progress = _BatchProgress(len({j.key for j in jobs}), len(rows), quiet=quiet)

    previous = signal.signal(signal.SIGTERM, terminate)  # a killed batch stops like an interrupted one, from here on
    try:
        claims = Claims(ledger, run_id=run_id, retry_infra=retry_infra)
    except (OSError, LedgerError) as exc:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        raise CommandError(f"--ledger {ledger.path}: cannot claim jobs in it ({ledger_problem(exc, ledger.path)}); "
                           "nothing was graded") from None  # fmt: skip
    for released in claims.released:
        print(f"objective-score: took back the claim on {released.get('instance_id')} of a run that is gone "
              f"(pid {released.get('pid')} on {released.get('host')}): it is graded again", file=sys.stderr)  # fmt: skip
    waiting: dict[str, tuple[Any, dict[str, Any]]] = {}  # job key -> (job, the live claim another run holds)
    graded: list[Any] = []

    unclaimed: list[str] = []  # why claims could not be written (the ledger refusing writes): graded without one

    def claim(job: Any) -> bool:
        """Whether this run grades ``job`` now; a recorded result is read back, a held job waits."""
        before = len(claims.released)
        try:
            taken = claims.take(job.key, {"instance_id": job.instance.instance_id, "model_name_or_path": job.prediction.model})
        except Exception as exc:  # the ledger refuses writes: the verdict still stands, graded without a claim
            if not unclaimed:
                print(f"objective-score grade-batch: ledger {ledger.path}: a claim could NOT be recorded: "
                      f"{ledger_problem(exc, ledger.path)} (grading goes on without claims; a run at the same time "
                      "could grade the same jobs)", file=sys.stderr, flush=True)  # fmt: skip
            unclaimed.append(str(exc))
            graded.append(job)
            return True
        for released in claims.released[before:]:  # a run that died while this one went on
            progress.note(f"took back the claim on {job.instance.instance_id} of a run that is gone ({released['why']}): "
                          "it is graded here")  # fmt: skip
        if taken.state == "mine":
            waiting.pop(job.key, None)
            graded.append(job)
            return True
        if taken.state == "recorded":
            waiting.pop(job.key, None)
            progress.advance(job, read_back(job, batch.recorded_job(ledger, int(taken.seq or 0))))
            return False
        waiting[job.key] = (job, dict(taken.holder))
        return False

    def on_result(job: Any, envelope: dict[str, Any]) -> None:
        envelope["benchmark"] = settings.get("benchmark")
        settle(envelope, audit_of(recorded_audits, job.instance.fields))
        seq, problem = None, None
        try:
            seq = batch.record_result(ledger, envelope)
            claims.recorded(job.key)
        except Exception as exc:  # the verdict stands: it goes on in the report, only the ledger misses it
            problem = ledger_problem(exc, ledger.path)
            if not unrecorded:
                print(f"objective-score grade-batch: ledger {ledger.path}: a result was NOT recorded: {problem} (grading "
                      "goes on; every verdict is in the report, and a rerun grades the unrecorded ones again)",
                      file=sys.stderr, flush=True)  # fmt: skip
            unrecorded.append(problem)
            try:
                claims.release(job.key, UNRECORDED)
            except Exception:  # noqa: BLE001 - left open: the next run proves this one dead and releases it
                pass
        rows[job.key] = batch.result_row(job, envelope, None, seq)
        if problem is not None:
            rows[job.key]["ledger_error"] = problem
        if on_row is not None:
            on_row(job, rows[job.key], envelope, None)
        progress.advance(job, rows[job.key])

    def execute(batch_jobs: list[Any], claim_first: bool) -> None:
        if scheduler:
            batch.run_cluster(batch_jobs, settings, scheduler, on_result, claim=claim if claim_first else None)
        else:
            batch.run_local(batch_jobs, settings, workers, on_result, claim=claim if claim_first else None)

    if not scheduler:  # what gradings killed outright left in this machine's temporary folder
        from .runner import sweep_workspaces

        sweep_workspaces()
    try:
        with progress, claims:
            execute(todo, True)
            said = ""
            waited_since = time.monotonic()
            while waiting:
                if max_wait is not None and time.monotonic() - waited_since > max_wait:
                    held = sorted(f"{job.instance.instance_id} (pid {h.get('pid')} on {h.get('host')})" for job, h in waiting.values())
                    raise CommandError(f"{len(held)} job(s) still claimed by another run after --max-wait {max_wait:g} s: "
                                       f"{', '.join(held[:5])}; the {len(rows)} result(s) graded or read back so far are in the ledger; run "
                                       "the command again once that run has ended")  # fmt: skip
                holders = sorted({f"pid {h.get('pid')} on {h.get('host')}" + (f", run {h['run_id']}" if h.get("run_id") else "")
                                  for _, h in waiting.values()})  # fmt: skip
                text = (f"waiting for {len(waiting)} job(s) another run is grading ({'; '.join(holders)}): each is read "
                        "back once recorded, or graded here if that run ends without it"
                        + ("" if max_wait is not None else " (--max-wait S stops waiting)"))  # fmt: skip
                if text != said:
                    progress.note(text)
                    said = text
                time.sleep(poll)
                mine = [job for job, _ in list(waiting.values()) if claim(job)]
                if mine:
                    execute(mine, False)
    except batch.BatchError as exc:
        raise CommandError(str(exc)) from None
    except LedgerError as exc:  # a claim could not be written: what was recorded stays, the rest waits for a rerun
        raise CommandError(f"--ledger {ledger.path}: a job could not be claimed ({ledger_problem(exc, ledger.path)}); "
                           f"{len(rows)} result(s) are in the report, the rest are not graded: run the command again "
                           "to finish") from None  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    return rows, graded


class _BatchProgress:
    """A rich progress bar on a terminal; one plain line per result otherwise (logs, CI)."""

    def __init__(self, total: int, resumed: int, quiet: bool) -> None:
        from rich.console import Console

        self.total, self.resumed, self.quiet = total, resumed, quiet
        self.console = Console(stderr=True)
        self.count = resumed
        self.bar: Any = None

    def __enter__(self) -> _BatchProgress:
        if self.resumed:
            self.console.print(f"resuming: {self.resumed} of {self.total} prediction(s) already graded in the ledger")
        if self.console.is_terminal and not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.description}"), console=self.console)  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total, completed=self.resumed)
        return self

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def advance(self, job: Any, row: dict[str, Any]) -> None:
        self.count += 1
        text = f"{job.instance.instance_id} {job.prediction.model}: {row['failure_class']}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        else:
            print(f"[{self.count}/{self.total}] {text}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
