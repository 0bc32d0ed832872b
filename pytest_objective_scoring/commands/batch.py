"""``objective-score grade-batch``: a SWE-bench predictions file graded against a dataset, in
parallel or on a Dask cluster, each result recorded in the ledger as it arrives, SWE-bench's log
tree and run reports written. Thin: the jobs are planned by :mod:`pytest_objective_scoring.batch`
and graded by :func:`pytest_objective_scoring.jobs.grade_jobs`.
"""

from __future__ import annotations

import argparse
import json
import sys
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from .. import options
from ..errors import EXIT_INFRASTRUCTURE, CommandError, Terminated, interrupted_status, ledger_problem, problems_text
from ..jobs import grade_jobs
from ..ledger import DEFAULT_LEDGER
from . import HELP
from .shared import (
    add_patch_limit,
    add_runner_options,
    compute_rate,
    environments_of,
    hidden_paths,
    probe_environments,
    reruns,
)

__all__ = ["cmd_grade_batch", "register"]

BATCH_EPILOG = """\
examples:
  objective-score grade-batch --dataset swe-bench-lite.jsonl --predictions preds.jsonl --repos ~/checkouts --workers 4
  objective-score grade-batch --dataset data.jsonl --predictions preds.json --repos /shared/repos \\
      --scheduler tcp://scheduler:8786 --report run-report.json
  objective-score grade-batch --dataset data.jsonl --predictions preds.jsonl --repos ~/checkouts \\
      --environments envs.json --instance-ids django__django-11099 --run-id try1 --report out/report.json

Predictions: JSONL, a JSON list, or a JSON object keyed by instance id (SWE-agent's
preds.json), each with instance_id, model_name_or_path and model_patch; cost fields
(tokens, calls, dollars, or a cost object, or SWE-agent's model_stats) are recorded
in the cost ledger. model_name_or_path "gold" with no model_patch grades the
dataset's own patch. Each instance's repository is looked up as DIR/owner/name,
then DIR/owner__name, then DIR/name, for repo = owner/name.

Environments: --environments FILE maps an instance id or owner/name@version to an
interpreter path (or {"python": PATH, "image": NAME}); the id wins over repo@version,
which wins over --python. With a file and no --python, an instance the file does not
name is refused. Every interpreter must run 'import pytest' before anything is graded.

Every result is written to the ledger as it arrives. A prediction already graded
(same instance content, model, patch, compat mode, interpreter and image) is read
from the ledger instead of graded again, so an interrupted batch resumes where it
stopped; --retry-infra grades infrastructure failures again. With --scheduler,
gradings run on a Dask cluster whose workers see the repositories and interpreters
at the same paths and have this package installed; only this process writes the ledger.

Outputs: LOG_DIR/run_evaluation/RUN_ID/MODEL/INSTANCE_ID/ holds patch.diff,
test_output.txt, report.json and envelope.json for each result (as SWE-bench's harness
writes them); with --report, {model}.{run_id}.json beside it. A run id may be continued
(the same command after an interruption) but is never overwritten: a run report that
exists, or a log folder holding another grading, is refused before anything is graded.

Exit status: 0 every prediction has a verdict (resolved or not), 2 bad input,
3 some grading was an infrastructure failure, 130 interrupted.
"""


def _select_instances(args: argparse.Namespace, instances: Sequence[Any], predictions: list[Any]) -> tuple[list[Any], list[str]]:
    """``--instance-ids``: only the predictions for those instances; returns them and the run's
    instance ids (SWE-bench's ``total_instances``). Every id must be in the dataset and predicted."""
    import difflib

    dataset_ids = [i.instance_id for i in instances]
    if not args.instance_ids:
        return predictions, dataset_ids
    wanted = list(dict.fromkeys(args.instance_ids))
    known = set(dataset_ids)
    for instance_id in wanted:
        if instance_id not in known:
            close = difflib.get_close_matches(instance_id, dataset_ids, n=3)
            raise CommandError(f"--instance-ids {instance_id}: not an instance of {args.dataset}"
                               + (f" (did you mean {', '.join(close)}?)" if close else ""))  # fmt: skip
    predicted = {p.instance_id for p in predictions}
    lacking = [i for i in wanted if i not in predicted]
    if lacking:
        raise CommandError(f"--instance-ids {lacking[0]}: {args.predictions} holds no prediction for it")
    chosen = set(wanted)
    return [p for p in predictions if p.instance_id in chosen], wanted


class _LogTree:
    """SWE-bench's per-instance log tree, written as each result arrives (and for each result read
    back from the ledger). A folder that cannot be written is said once on standard error; the
    verdicts stand (they are in the ledger and the report)."""

    def __init__(self, log_dir: Path | None, run_id: str, ledger: Path) -> None:
        self.log_dir, self.run_id, self.ledger = log_dir, run_id, ledger
        self.failed: list[str] = []
        self.folders: dict[str, str] = {}

    def __call__(self, job: Any, row: dict[str, Any], envelope: dict[str, Any] | None, recorded: dict[str, Any] | None) -> None:
        from .. import batch

        if self.log_dir is None:
            return
        folder = batch.instance_log_dir(self.log_dir, self.run_id, job.prediction.model, job.instance.instance_id)
        try:
            batch.write_instance_logs(folder, job, row, self.run_id, envelope=envelope, recorded=recorded, ledger=str(self.ledger))
        except OSError as exc:
            if not self.failed:
                print(f"objective-score grade-batch: log tree: {folder} NOT written ({exc.strerror or exc}); grading goes on",
                      file=sys.stderr, flush=True)  # fmt: skip
            self.failed.append(str(folder))
            return
        row["log"] = str(folder)


def _benchmark(args: argparse.Namespace) -> str:
    """``--benchmark``, or the dataset file's name (:func:`~pytest_objective_scoring.batch.benchmark_of`);
    a dataset read from a pipe or standard input has no name to give: ``--benchmark`` is then needed."""
    from ..batch import benchmark_of

    found = args.benchmark or benchmark_of(args.dataset)
    if found is None:
        raise CommandError(f"--benchmark NAME is needed: --dataset {args.dataset} is a pipe or standard input, whose "
                           "name names no benchmark (a file's does: data.jsonl is benchmark data)")  # fmt: skip
    return found


def cmd_grade_batch(args: argparse.Namespace) -> int:
    from .. import batch
    from ..environments import FROM_DEFAULT, FROM_FLAG
    from ..environments import summary as environments_summary
    from ..instances import InstanceError, load_instances
    from ..ledger import Ledger

    # default: a UTC timestamp and a short random tail, so that two runs started in the same second
    # (a resumed batch beside another) never name the same run report
    run_id = args.run_id if args.run_id is not None else (time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-"
                                                          + secrets.token_hex(3))  # fmt: skip
    try:
        instances = load_instances(args.dataset)
        predictions = batch.load_predictions(args.predictions, args.max_patch_size)
    except (InstanceError, batch.BatchError) as exc:
        raise CommandError(str(exc)) from None
    predictions, run_ids = _select_instances(args, instances, predictions)
    by_id = {i.instance_id: i for i in instances}
    assigned, environments = environments_of([by_id[p.instance_id] for p in predictions if p.instance_id in by_id], args)
    fallback = next((e.python for e in assigned.values() if e.source in (FROM_FLAG, FROM_DEFAULT)), None)
    log_dir = Path(args.log_dir) if args.log_dir else None
    # this run's log folder (not all of --log-dir, which might hold an interpreter's virtualenv) is hidden too
    hidden = list(hidden_paths(args))
    if log_dir is not None and "/" not in run_id:
        hidden.append((log_dir / "run_evaluation" / run_id).resolve())
    settings = {"python": fallback, "timeout": args.timeout, "compat": args.compat or "strict",
                "compute_rate": compute_rate(args), "network": args.allow_network, "reruns": args.reruns,
                "benchmark": _benchmark(args),
                "hidden": [str(p) for p in hidden], "engine": args.engine,
                "max_patch_bytes": args.max_patch_size,
                **({"against_gold": args.against_gold} if args.against_gold else {})}  # fmt: skip
    needs_checkout = sorted(i for i, e in assigned.items() if getattr(e, "image", None) is None)
    if args.repos is None and needs_checkout:
        raise CommandError(f"--repos DIR is required: {len(needs_checkout)} instance(s) are graded from a checkout, not "
                           f"an image (first: {needs_checkout[0]})")  # fmt: skip
    repos = Path(args.repos) if args.repos is not None else Path(tempfile.mkdtemp(prefix="objective-no-repos-"))
    if not repos.is_dir():
        raise CommandError(f"--repos {repos}: not a directory")
    if args.workers < 1:
        raise CommandError(f"--workers {args.workers}: expected at least 1")
    try:
        jobs = batch.plan_jobs(instances, predictions, repos.resolve(), settings, assigned)
    except batch.BatchError as exc:
        raise CommandError(str(exc)) from None
    used = {job.instance.instance_id: assigned[job.instance.instance_id] for job in jobs}
    versions = probe_environments(list(used.values()), images=not args.scheduler, engine=args.engine)  # before anything is graded
    if args.report and args.report_dir:
        raise CommandError(f"--report {args.report} and --report_dir {args.report_dir} contradict each other: give one")
    report_path = Path(args.report) if args.report else None
    if args.report_dir:  # SWE-bench's: the run reports in DIR, and this command's report beside them
        Path(args.report_dir).mkdir(exist_ok=True)  # its parent exists (checked before work)
        report_path = Path(args.report_dir) / f"objective-score.{run_id}.json"
    problems = batch.check_outputs(jobs, run_id, log_dir, report_path)
    if problems:
        raise CommandError(problems_text("\n".join(problems), "output path"))
    ledger_path = Path(args.ledger) if args.ledger else DEFAULT_LEDGER
    try:  # before anything is graded: a ledger that cannot be opened stops the batch here, losing nothing
        if ledger_path.is_dir():
            raise IsADirectoryError("a directory, not a ledger file")
        opened = Ledger(ledger_path)
    except Exception as exc:
        from ..ledger import LedgerUnavailable

        if isinstance(exc, LedgerUnavailable):  # a full disk or an I/O error: the machine's, exit 3 (cli.main)
            raise
        raise CommandError(f"--ledger {ledger_path}: cannot be opened ({ledger_problem(exc, ledger_path)}); "
                           "nothing was graded") from None  # fmt: skip
    logs = _LogTree(log_dir, run_id, ledger_path)
    environment_record = environments_summary(used, environments, versions)
    with opened as ledger:
        try:
            rows, todo = grade_jobs(ledger, jobs, settings, workers=args.workers, scheduler=args.scheduler,
                                    retry_infra=args.retry_infra, quiet=args.json, on_row=logs, run_id=run_id,
                                    max_wait=args.max_wait)  # fmt: skip
        except KeyboardInterrupt as exc:
            how = " (SIGTERM)" if isinstance(exc, Terminated) else ""
            print(f"objective-score grade-batch: interrupted{how}; the results so far are in {ledger_path}; "
                  f"run the same command again to resume (with --run-id {run_id} to continue this run's log tree)",
                  file=sys.stderr)  # fmt: skip
            return interrupted_status(exc)
        ordered = [rows[job.key] for job in jobs]
        unrecorded = [row["ledger_error"] for row in ordered if row.get("ledger_error")]
        summary = batch.summarize(ordered)
        if todo:
            try:
                ledger.append("batch", {
                    "dataset": str(args.dataset), "predictions": str(args.predictions), "jobs": len(jobs),
                    "graded": len(todo), "resumed": len(jobs) - len(todo), "summary": summary,
                    "scheduler": args.scheduler, "workers": None if args.scheduler else args.workers,
                    "run_id": run_id, "instance_ids": args.instance_ids and run_ids, "environments": environment_record,
                })  # fmt: skip
            except Exception as exc:
                if not unrecorded:
                    print(f"objective-score grade-batch: ledger {ledger_path}: the batch entry was NOT recorded: "
                          f"{ledger_problem(exc, ledger_path)}", file=sys.stderr, flush=True)  # fmt: skip
    report: dict[str, Any] = {"dataset": str(args.dataset), "predictions": str(args.predictions), "ledger": str(ledger_path),
                              "run_id": run_id, "log_dir": None if log_dir is None else str(log_dir / "run_evaluation" / run_id),
                              "environments": environment_record, "summary": summary, "results": ordered}  # fmt: skip
    if unrecorded:
        report["ledger_error"] = {"unrecorded": len(unrecorded), "error": unrecorded[0]}
        print(f"objective-score grade-batch: ledger {ledger_path}: {len(unrecorded)} of {len(todo)} result(s) NOT "
              f"recorded ({unrecorded[0]}); their verdicts are in this command's output only", file=sys.stderr)  # fmt: skip
    if logs.failed:
        report["log_error"] = {"unwritten": len(logs.failed), "first": logs.failed[0]}
    lost = False
    if report_path is not None:
        from ..atomic import fallback as unwritten, write_new, write_whole

        written: list[str] = []
        for model, run_report in batch.swebench_run_reports(ordered, jobs, run_ids).items():
            path = batch.run_report_path(report_path.parent, model, run_id)  # SWE-bench's {model}.{run_id}.json
            try:  # whole or not at all, and never over one that is there (checked before grading, too)
                write_new(path, json.dumps(run_report, indent=2) + "\n")
            except FileExistsError:
                print(f"objective-score grade-batch: the run report {path} appeared while grading: NOT overwritten",
                      file=sys.stderr)  # fmt: skip
                continue
            except OSError as exc:  # the results are in the ledger: a rerun with --run-id writes it
                unwritten(args.command, "run report", path, exc, None)
                lost = True
                continue
            written.append(str(path))
        report["swebench_reports"] = written
        text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        try:
            write_whole(report_path, text)
        except OSError as exc:
            unwritten(args.command, "--report", report_path, exc, None if args.json else text)
            lost = True
    if lost:
        if args.json:
            print(json.dumps(report, indent=2, ensure_ascii=False))
        return EXIT_INFRASTRUCTURE
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _batch_table(summary, ledger_path, None if report_path is None else str(report_path), report["log_dir"])
    return EXIT_INFRASTRUCTURE if any(row["failure_class"] == "infrastructure_failure" for row in ordered) else 0


def _batch_table(summary: dict[str, dict[str, int]], ledger: Path, report: str | None, logs: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="grade-batch: predictions per model and failure class")
    for column in ("model", "predictions", "resolved", "not resolved", "did not apply", "infra failure", "from ledger"):
        table.add_column(column, overflow="fold")
    for model, c in summary.items():
        table.add_row(model, str(c["predictions"]), str(c["resolved"]), str(c["not_resolved"]),
                      str(c["patch_did_not_apply"]), str(c["infrastructure_failure"]), str(c["resumed"]))  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    for model, c in summary.items():  # --against-gold: the second figure, beside the verdicts
        if "resolved_against_gold" in c:
            console.print(f"{model}: resolved {c['resolved']}, resolved and free of regressions against gold "
                          f"{c['resolved_against_gold']} ({c['regressed']} with regressions, {c['against_gold_unknown']} "
                          "unknown)", soft_wrap=True)  # fmt: skip
    console.print(f"ledger: {ledger}" + (f"; report: {report}" if report else "") + (f"; logs: {logs}" if logs else ""))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``grade-batch`` to the ``objective-score`` parser."""
    gb = sub.add_parser("grade-batch", help=HELP["grade-batch"],
                        description="Grade every prediction of a SWE-bench predictions file, writing each result "
                        "to the ledger as it arrives.",
                        epilog=BATCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    gb.add_argument("--dataset", "--dataset_name", required=True, metavar="FILE",
                    help="The instances (JSON array or JSONL; a file: nothing is downloaded)")
    gb.add_argument("--predictions", "--predictions_path", required=True, metavar="FILE",
                    help="The predictions (JSONL, JSON list or object)")
    gb.add_argument("--repos", metavar="DIR", help="Where repositories are checked out: DIR/owner/name (not needed when "
                    "every instance is graded in an image: --environments)")  # fmt: skip
    gb.add_argument("--workers", "--max_workers", type=options.whole_number(1, 1024, "the number of workers"), default=1,
                    metavar="N", help="Gradings at once on this machine (default: 1)")
    gb.add_argument("--scheduler", metavar="ADDRESS", help="Run the gradings on this Dask scheduler (tcp://host:8786)")
    gb.add_argument("--instance-ids", "--instance_ids", nargs="+", metavar="ID", help="Grade only the predictions for these instances "
                    "(each must be in the dataset and have a prediction)")
    gb.add_argument("--report", metavar="FILE", help="Write a JSON report with one entry per prediction, and beside it "
                    "SWE-bench's run report per model ({model}.{run_id}.json; never overwritten)")
    gb.add_argument("--report_dir", "--report-dir", dest="report_dir", metavar="DIR", default=None,
                    help="SWE-bench's spelling: write the run reports ({model}.{run_id}.json) and this command's "
                    "report (objective-score.{run_id}.json) into DIR (made if missing; its parent must exist; not with --report)")
    gb.add_argument("--run-id", "--run_id", metavar="NAME", default=None, help="This run's name, in the run reports' file names and the "
                    "log tree (default: a UTC timestamp, YYYYMMDD-HHMMSS); a run id is continued, never overwritten")
    gb.add_argument("--log-dir", metavar="DIR", default="logs", help="Write SWE-bench's per-instance log tree "
                    "DIR/run_evaluation/RUN_ID/MODEL/INSTANCE_ID/ (default: logs)")
    gb.add_argument("--benchmark", metavar="NAME", help="The benchmark these tasks belong to, recorded with every result "
                    "(default: the dataset file's name); summaries never rank or average across benchmarks")
    gb.add_argument("--reruns", metavar="N", type=reruns, default=0,
                    help="Run each candidate's tests N more times in shuffled orders (the scorecard's robustness)")
    options.add_against_gold(gb.add_argument)
    add_patch_limit(gb)
    gb.add_argument("--max-wait", metavar="S", type=options.positive_seconds, default=None,
                    help="Stop waiting after S seconds for jobs another run has claimed (default: wait until that run "
                    "records them or is proven dead); the results so far are kept, exit 2")  # fmt: skip
    gb.add_argument("--retry-infra", action="store_true", help="Grade again predictions whose recorded grading was an infrastructure failure")
    options.add_compat_option(gb.add_argument, prefix="")
    add_runner_options(gb, keep=False, per_instance=True)
    gb.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    options.add_cost_options(gb.add_argument, prefix="", cost_file=False)
    gb.add_argument("--json", action="store_true", help="Print the report as JSON instead of the table")
    gb.set_defaults(handler=cmd_grade_batch)
