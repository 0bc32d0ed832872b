"""``objective-score audit run|due`` and ``objective-score receipt``: the instrument audited,
as a standing activity; the public receipt of a graded run. Thin: the checks are in
:mod:`.audit`, the schedule in :mod:`.audit_ledger`, the dispositions in :mod:`.integrity`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

from .. import options
from ..errors import CommandError
from ..ledger import DEFAULT_LEDGER
from . import HELP
from .shared import environments_of, probe_environments

AUDIT_EPILOG = """\
objective-score audit run grades, for each task: the empty patch (it must not resolve),
the gold patch (it must resolve), a no-op and a stub patch (they must not resolve), the
gold patch minus one hunk at a time (a hunk whose removal still resolves is untested),
the tests repeated --repeats times on the base and the gold in shuffled orders (outcomes
that vary are flaky), three evaluator exploits (they must not resolve unflagged), and
looks for gold-patch lines in the problem statement (leakage). Each finding has a kind,
its evidence and a disposition for the task: valid, weak or invalid. Every audit is
recorded in the ledger with when it ran and when it is next due (--every DAYS, or
audit_every_days in [tool.objective-scoring] of pyproject.toml; default 30).

objective-score audit due lists the audited tasks (and, with --dataset, the tasks never
audited) whose audit is missing, invalid, incomplete or overdue; exit status 1 when any
is. Grading an instance reports its audit state, and a run on a task never audited, or
overdue, is quarantined; on a task found invalid, invalid (docs/audit.md).
"""


def _error(message: str) -> CommandError:
    return CommandError(message)


def _ledger(args: argparse.Namespace) -> Path:
    return Path(args.ledger) if args.ledger else DEFAULT_LEDGER


MAX_EVERY_DAYS = 3650.0
MUTATION_THRESHOLD = 0.6  # audit.MUTATION_THRESHOLD (not imported here: the parser stays light)


def _share(value: str) -> float:
    """``--mutation-threshold X``: a number from 0 to 1."""
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"{value!r}: a mutation score threshold is from 0 to 1")
    return share


def every_days(value: str) -> float:
    """``--every DAYS``: a finite number of days, more than 0 and at most ten years."""
    try:
        days = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days") from None
    if not 0 < days <= MAX_EVERY_DAYS:
        raise argparse.ArgumentTypeError(f"{value!r}: the audit schedule must be more than 0 and at most {MAX_EVERY_DAYS:g} days")
    return days


repeats = options.whole_number(1, 100, "the number of runs (2 or more detect flaky tests)")


def _every(args: argparse.Namespace) -> tuple[float, str]:
    from ..config import ConfigError, audit_every_days

    try:
        return audit_every_days(args.every)
    except ConfigError as exc:
        raise _error(str(exc)) from None


def _iso(epoch: int | None) -> str:
    if epoch is None:
        return "-"
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _targets(args: argparse.Namespace) -> list[tuple[Any, Path]]:
    """(instance, repository) pairs: one instance with --repo, or a dataset with --repos."""
    from ..batch import repo_dir
    from ..instances import InstanceError, load_instance, load_instances

    try:
        if args.dataset:
            if not args.repos:
                raise _error("--dataset needs --repos DIR (checkouts at DIR/owner/name)")
            instances = load_instances(args.dataset)
            if getattr(args, "set", None):
                from ..ledger import Ledger
                from ..sets import resolve_set, task_id_of

                with Ledger(_ledger(args)) as ledger:
                    members = resolve_set(ledger, args.set).instances
                instances = [i for i in instances if task_id_of(i) in members]
                absent = sorted(set(members.values()) - {i.instance_id for i in instances})
                if absent:
                    raise _error(f"--dataset {args.dataset} lacks task(s) of set {args.set} (or holds them edited): "
                                 f"{', '.join(absent[:5])}")  # fmt: skip
            if args.instance_id:
                wanted = set(args.instance_id)
                instances = [i for i in instances if i.instance_id in wanted]
                unknown = sorted(wanted - {i.instance_id for i in instances})
                if unknown:
                    raise _error(f"--instance-id {unknown[0]}: not in {args.dataset}")
            pairs = []
            for instance in instances:
                repo, tried = repo_dir(Path(args.repos), instance)
                if repo is None:
                    raise _error(f"{instance.source}: field 'repo': {instance.get('repo')!r} is not checked out under "
                                 f"{args.repos} (looked for {', '.join(map(str, tried)) or 'owner/name'})")  # fmt: skip
                pairs.append((instance, repo))
            return pairs
        if getattr(args, "set", None):
            raise _error("--set NAME needs --dataset FILE (the set's instances) and --repos DIR")
        if not (args.instance and args.repo):
            raise _error("give --instance FILE --repo DIR, or --dataset FILE --repos DIR [--set NAME]")
        ids = args.instance_id or [None]
        if len(ids) > 1:
            raise _error("--instance takes one --instance-id; use --dataset for several")
        return [(load_instance(args.instance, ids[0]), Path(args.repo))]
    except InstanceError as exc:
        raise _error(str(exc)) from None


def cmd_audit_run(args: argparse.Namespace) -> int:
    from ..audit import MutationPlanning, run_audit
    from ..audit_ledger import record_audit
    from ..integrity import interpreter_digest
    from ..ledger import Ledger
    from ..runner import BadInput

    every, every_source = _every(args)
    mutation = MutationPlanning(count=args.mutants, budget=args.mutation_budget, workers=args.workers,
                                threshold=args.mutation_threshold)  # fmt: skip
    targets = _targets(args)
    # each task's interpreter (or image), every one checked before the first audit grades anything
    assigned, _ = environments_of([instance for instance, _ in targets], args)
    probe_environments([assigned[instance.instance_id] for instance, _ in targets])
    results = []
    with Ledger(_ledger(args)) as ledger:
        for index, (instance, repo) in enumerate(targets, 1):
            def progress(message: str, _id: str = instance.instance_id) -> None:
                if not args.json:
                    print(f"[{index}/{len(targets)}] {_id}: {message}", file=sys.stderr, flush=True)

            chosen = assigned[instance.instance_id]
            assert chosen.python is not None
            environment = {"python": chosen.python, "interpreter": interpreter_digest(chosen.python) if chosen.on_host else None,
                           **({"image": chosen.image} if chosen.image else {}), "from": chosen.source}  # fmt: skip
            try:
                report = run_audit(instance, repo.resolve(), python=chosen.python, timeout=args.timeout, repeats=args.repeats,
                                   network=args.allow_network, progress=progress, mutation=mutation, image=chosen.image,
                                   engine=getattr(args, "engine", "auto"))  # fmt: skip
            except BadInput as exc:
                raise _error(f"{instance.instance_id}: {exc}") from None
            data = report.to_dict()
            entry = record_audit(ledger, data, instance.fields, every, environment)
            results.append({**data, "seq": entry.seq, "ran_at": entry.data["ran_at"], "next_due": entry.data["next_due"],
                            "every_days": every, "schedule_from": every_source})  # fmt: skip
    if args.json:
        print(json.dumps({"ledger": str(_ledger(args)), "audits": results}, indent=2, ensure_ascii=False))
    else:
        _audit_table(results)
    if any(not r.get("complete", True) for r in results):
        return 3
    return 1 if any(r["disposition"] == "invalid" for r in results) else 0


def _audit_table(results: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="objective-score audit: task dispositions")
    for column in ("instance", "disposition", "findings", "gold", "mutation score", "complete", "next due", "ledger seq"):
        table.add_column(column, overflow="fold")
    for r in results:
        kinds = ", ".join(f["kind"] for f in r.get("findings", [])) or "-"
        style = {"valid": "green", "weak": "yellow", "invalid": "red"}.get(r["disposition"], "")
        table.add_row(r["instance_id"], f"[{style}]{r['disposition']}[/{style}]", kinds, _gold_cell(r), _mutation_cell(r),
                      "yes" if r.get("complete", True) else "NO", _iso(r["next_due"]), str(r["seq"]))  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    for r in results:
        for finding in r.get("findings", []):
            console.print(f"{r['instance_id']}: {finding['kind']} ({finding['disposition']}): {finding.get('detail', '')}",
                          soft_wrap=True)  # fmt: skip
    for r in results:
        mutation = r.get("mutation")
        if not mutation:
            continue
        score = "n/a" if mutation["score"] is None else f"{mutation['score']:.2f}"
        console.print(f"{r['instance_id']}: mutation score {score} ({mutation['killed']} of {mutation['graded']} graded "
                      f"mutants rejected; {len(mutation['plan']['equivalent'])} equivalent to gold, not counted; "
                      f"{mutation['not_graded']} left ungraded by the budget)", soft_wrap=True, markup=False)  # fmt: skip
        for survivor in mutation["survivors"][:5]:
            console.print(f"  surviving mutant {survivor['id']}: {survivor['description']}", soft_wrap=True, markup=False)
            console.print(survivor["diff"].rstrip("\n"), soft_wrap=True, markup=False, highlight=False)
        if len(mutation["survivors"]) > 5:
            console.print(f"  ... and {len(mutation['survivors']) - 5} more (--json has every one)", markup=False)


def _gold_cell(result: dict[str, Any]) -> str:
    """The gold patch's verdict by the listed tests (the first figure)."""
    check = next((c for c in result.get("checks", []) if c["name"] == "gold_patch"), None)
    verdicts = [g["resolved"] for g in (check or {}).get("gradings", [])]
    return verdicts[0].replace("_", " ") if verdicts and verdicts[0] else "-"


def _mutation_cell(result: dict[str, Any]) -> str:
    """The tests' mutation score with its counts (the second figure), or why there is none."""
    mutation = result.get("mutation")
    if not mutation:
        return "-"
    if mutation["score"] is None:
        return f"n/a (0 of {mutation['plan']['generated']} graded)"
    return f"{mutation['score']:.2f} ({mutation['killed']}/{mutation['graded']})"


def cmd_audit_due(args: argparse.Namespace) -> int:
    from ..audit_ledger import audits, due
    from ..instances import InstanceError, load_instances
    from ..ledger import Ledger

    path = _ledger(args)
    if not path.exists():
        raise _error(f"--ledger {path}: no such ledger")
    instances = []
    if args.dataset:
        try:
            instances = load_instances(args.dataset)
        except InstanceError as exc:
            raise _error(str(exc)) from None
    every = _every(args)[0] if (args.every is not None) else None
    with Ledger(path, read_only=True) as ledger:
        rows = due(audits(ledger), instances, every_days=every)
    attention = [r for r in rows if r["state"] in ("missing", "invalid", "incomplete", "overdue")]
    if args.json:
        print(json.dumps({"ledger": str(path), "tasks": rows, "attention": len(attention)}, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"task audits in {path}")
        for column in ("instance", "state", "last audit", "next due", "disposition", "findings"):
            table.add_column(column, overflow="fold")
        for r in rows:
            table.add_row(r["instance_id"], r["state"], _iso(r["ran_at"]), _iso(r["next_due"]), str(r["disposition"] or "-"),
                          ", ".join(r["findings"]) or "-")  # fmt: skip
        console = Console() if Console().is_terminal else Console(width=140)
        console.print(table)
        console.print(f"{len(attention)} need attention (missing, invalid, incomplete or overdue)")
    return 1 if attention else 0


def cmd_receipt(args: argparse.Namespace) -> int:
    from ..integrity import receipt
    from ..ledger import Ledger

    path = _ledger(args)
    if not path.exists():
        raise _error(f"--ledger {path}: no such ledger")
    with Ledger(path, read_only=True) as ledger:
        scores = {e.seq: e.data for e in ledger.entries("score")}
    if args.run not in scores:
        raise _error(f"RUN {args.run}: no graded run at score entry {args.run} in {path}")
    data = scores[args.run]
    envelope = {"instance_id": data.get("instance_id"), "score": data.get("score"), "patch_ref": data.get("patch_ref"),
                "harness": data.get("harness"), "digests": data.get("digests"), "audit": {"state": data.get("audit_state")},
                "integrity": {"disposition": data.get("disposition"), "reasons": data.get("reasons"),
                              "info": data.get("info")}}  # fmt: skip
    text = json.dumps(receipt(envelope, args.run), indent=2, ensure_ascii=False) + "\n"
    if args.out:
        from ..atomic import fallback, write_whole
        from ..errors import EXIT_INFRASTRUCTURE

        try:
            write_whole(args.out, text)
        except OSError as exc:
            fallback(args.command, "--out", args.out, exc, text)
            return EXIT_INFRASTRUCTURE
    else:
        sys.stdout.write(text)
    return 0


def register(sub: Any) -> None:

    audit = sub.add_parser("audit", help=HELP["audit"],
                           description="Audit the instrument: standing, recorded, scheduled.",
                           epilog=AUDIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    actions = audit.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="Run every check on one task, or on a dataset's tasks, and record the audits",
                             epilog=AUDIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    run.add_argument("--instance", metavar="FILE", help="The instance (JSON), or a dataset with --instance-id")
    run.add_argument("--instance-id", metavar="ID", action="append", help="Which instance(s) (repeatable)")
    run.add_argument("--repo", metavar="DIR", help="The task's repository (never modified)")
    run.add_argument("--dataset", metavar="FILE", help="Audit every instance of a dataset (or those --instance-id names)")
    run.add_argument("--repos", metavar="DIR", help="Checkouts of the dataset's repositories: DIR/owner/name")
    run.add_argument("--set", metavar="NAME", help="Audit the tasks of this benchmark set (with --dataset and --repos)")
    run.add_argument("--repeats", type=repeats, default=3, metavar="N", help="Runs of the tests on base and gold for flakiness (default: 3)")
    run.add_argument("--mutants", type=options.whole_number(0, 10000, "the number of mutants"), default=0, metavar="N",
                     help="Also grade up to N deterministic mutants of the gold patch's changed lines and report the "
                     "tests' mutation score and the surviving mutants (default: 0, not run; 20-50 is an audit)")  # fmt: skip
    run.add_argument("--mutation-budget", type=options.positive_seconds, default=900.0, metavar="S",
                     help="Stop starting mutant gradings after S seconds per task (default: 900); ungraded ones are said")
    run.add_argument("--mutation-threshold", type=_share, default=MUTATION_THRESHOLD, metavar="X",
                     help=f"A mutation score below X (0-1) makes the task weak (default: {MUTATION_THRESHOLD})")
    run.add_argument("--workers", type=options.whole_number(1, 256, "the number of workers"), default=2, metavar="N",
                     help="Mutants graded in parallel (default: 2)")
    run.add_argument("--every", type=every_days, default=None, metavar="DAYS", help="Audit schedule: next due after DAYS (default: config or 30)")
    options.add_environment_options(run.add_argument)
    run.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=300.0, help="Per-grading timeout (default: 300)")
    run.add_argument("--allow-network", action="store_true", help="Let the tests reach the network")
    run.set_defaults(handler=cmd_audit_run)
    due = actions.add_parser("due", help="List tasks whose audit is missing, invalid, incomplete or overdue (exit 1 if any)")
    due.add_argument("--dataset", metavar="FILE", help="Also list this dataset's tasks that were never audited")
    due.add_argument("--every", type=every_days, default=None, metavar="DAYS", help="Judge overdue by this schedule instead of each audit's own")
    due.set_defaults(handler=cmd_audit_due)
    for action in (run, due):
        action.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
        action.add_argument("--json", action="store_true", help="Print the result as JSON")

    rec = sub.add_parser("receipt", help=HELP["receipt"],
                         description="The public receipt of a graded run: run identity, digests, disposition and reason "
                         "codes, without the private evidence (which stays in the ledger).")  # fmt: skip
    rec.add_argument("run", type=int, metavar="RUN", help="The run's score entry seq (objective-score ledger show)")
    rec.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    rec.add_argument("--out", metavar="FILE", help="Write to FILE instead of standard output")
    rec.set_defaults(handler=cmd_receipt)
