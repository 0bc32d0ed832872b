"""``objective-score sets create|list|show|burn|rotate|gate``: thin commands over :mod:`.sets`.

Each handler parses, calls the core and renders (a rich table, or JSON with ``--json``).
Every refusal is a :class:`~.sets.SetError`, which ``objective-score`` prints as
``objective-score sets: error: ...`` with exit status 2; with ``--json`` standard output holds it
too, as ``{"error": ..., "exit": 2}`` (:func:`_json_refusals`), so a reader of the JSON never parses
an empty output. Every string printed in a table is escaped (:func:`rich.markup.escape`).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import sets
from ..ledger import DEFAULT_LEDGER, Ledger
from . import HELP

__all__ = ["register"]

SETS_EPILOG = """\
examples:
  objective-score sets create dev --role development --source static:fixtures \\
      --dataset fixtures/datasets/fixtures.jsonl --instance-id fixtures__textstats-1
  objective-score sets create holdout --role holdout_live --source live:swe_bench_live \\
      --cutoff 2025-03-10 --dataset fixtures/datasets/fixtures.jsonl \\
      --instance-id fixtures__intervals-1 fixtures__csvlite-1
  objective-score sets gate holdout --cutoff 2025-03-11
  objective-score sets burn holdout --decision "promote localization v2"
  objective-score sets rotate holdout --dataset fresh.jsonl --add new__task-1

Three roles, never conflated: development (small, fast, may hold known tasks),
regression (run before and after every architecture change) and holdout_live
(unseen or continuously refreshed tasks: the only number that may be called
generalization). A task id is the sha256 of the canonical instance; a set is
NAME@vN, and its version goes up when rotation changes its tasks.

The contamination status is assigned by rule; no option sets it:
  burned (used in a decision, in any set)       known, forever
  static:NAME source                            known
  held_out:NAME source                          unseen
  live:NAME or timestamp_gated:NAME source      continuously_refreshed if created
    (needs --cutoff, the model's training        after the cutoff; known if on or
    cutoff; a date covers the whole day)         before it or with no created_at
A set's status: all tasks alike, that status; unseen or continuously_refreshed
tasks mixed with known ones, partially_known.

Refused, naming the task, the set and the rule: a holdout_live set holding a
task that is not unseen or continuously_refreshed (a burned one included); a task
in two roles at once among the current versions of all sets; a decision's tasks
are burned per task, everywhere, forever; a holdout_live set with burned tasks is
not usable for generalization until rotated (gate exits 1 and says so).
Refused too: a task dated in the future (the dataset is in error: the file,
the task and its date are named), a cutoff or a decision time in the future.

Dates: 2025-03-11, 20250311, 2025-W11-2 and 2025-070 are the same day (a
cutoff covers the whole day, UTC); a time is that instant (2025-03-11T12:00Z,
+02:00, +0200; without an offset, UTC). A year, a month, a week, six or seven
digits, an hour without minutes, or a date with an offset but no time is
refused with the reason.
"""

ROLE_HELP = "development, regression or holdout_live (the three sets are never conflated)"
SOURCE_HELP = ("The instrument feeding the set, KIND:NAME with KIND static, live, timestamp_gated or held_out "
               "(e.g. live:swe_bench_live)")  # fmt: skip
CUTOFF_HELP = ("The model's training cutoff, in the past: an ISO 8601 date in any spelling (2025-03-10, 20250310, "
               "2025-W11-1, 2025-069: the whole day, UTC) or time (UTC without an offset)")  # fmt: skip


def _cutoff(value: str) -> sets.Cutoff:
    try:
        return sets.parse_cutoff(value)
    except sets.SetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _source(value: str) -> str:
    try:
        sets.parse_source(value)
    except sets.SetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


LAST_EPOCH = 253402300799
"""9999-12-31T23:59:59Z: the last second a date is written for (``--when`` is range-checked, never
a ``ValueError`` when its date is said)."""


def _when(value: str) -> int:
    """Epoch seconds, or an ISO 8601 date or time read as every date of the sets is (a date: the
    start of that day, UTC; a time without an offset: UTC). Eight digits are refused: 20250311 may
    be a basic date or epoch seconds."""
    text = value.strip()
    if text.isdigit() and len(text) == 8:
        raise argparse.ArgumentTypeError(f"{value!r}: ambiguous: eight digits may be a basic date (YYYYMMDD) or epoch "
                                         "seconds; write the date with dashes (2025-03-11) or a time "
                                         "(2025-03-11T12:00:00Z)")  # fmt: skip
    if text.isdigit():
        if len(text) > 12 or int(text) > LAST_EPOCH:  # past 9999-12-31: no date can be written for it
            raise argparse.ArgumentTypeError(f"{text[:20]}{'...' if len(text) > 20 else ''}: epoch seconds after "
                                             f"9999-12-31T23:59:59Z ({LAST_EPOCH}); expected epoch seconds or an "
                                             "ISO 8601 date or time (2025-03-11T12:00:00Z)")  # fmt: skip
        return int(text)
    try:
        moment, _ = sets.read_instant(text)
    except sets.DateError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc}; expected epoch seconds or an ISO 8601 date or time "
                                         "(2025-03-11T12:00:00Z)") from None  # fmt: skip
    return int(moment.timestamp())


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``sets`` and its actions to the ``objective-score`` parser."""
    parser = subparsers.add_parser(
        "sets", help=HELP["sets"],
        description="Keep generalization honest: three task sets never conflated, contamination status by rule, "
        "tasks used in a decision burned, holdout sets rotated, tasks gated by a model's training cutoff.",
        epilog=SETS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, text: str, handler: Any, table: bool = True) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=text, description=text, epilog=SETS_EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        sub.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
        if table:
            sub.add_argument("--json", action="store_true", help="Print the result as JSON instead of a table")
        sub.set_defaults(handler=_json_refusals(handler))
        return sub

    create = action("create", "Create a set (NAME@v1) from instances of a dataset; statuses come from the rules",
                    cmd_create)  # fmt: skip
    create.add_argument("name", metavar="NAME", help="The set's name (letters, digits, '.', '_', '-')")
    create.add_argument("--role", required=True, choices=sets.ROLES, metavar="ROLE", help=ROLE_HELP)
    create.add_argument("--dataset", required=True, metavar="FILE", help="The instances (JSON array or JSONL)")
    create.add_argument("--instance-id", dest="instance_ids", metavar="ID", nargs="+", action="extend",
                        help="Only these instances (repeatable; default: every instance of the dataset)")  # fmt: skip
    create.add_argument("--source", required=True, metavar="KIND:NAME", type=_source, help=SOURCE_HELP)
    create.add_argument("--cutoff", metavar="DATE", type=_cutoff,
                        help=CUTOFF_HELP + " (required for live and timestamp_gated sources)")  # fmt: skip

    action("list", "List every set's current version", cmd_list)

    show = action("show", "Show a set's record and, beside it, each task's status and the rule that gave it", cmd_show)
    show.add_argument("name", metavar="NAME[@vN]", help="A set (its current version) or one version of it")

    burn = action("burn", "Record a decision that used tasks of a set: they are burned, everywhere, forever", cmd_burn)
    burn.add_argument("name", metavar="NAME", help="The set (its current version)")
    burn.add_argument("--decision", required=True, metavar="TEXT", help="The decision the tasks were used for")
    burn.add_argument("--task", dest="tasks", metavar="ID", nargs="+", action="extend",
                      help="Task ids or instance ids of the set (repeatable; default: every task of the set)")  # fmt: skip
    burn.add_argument("--when", metavar="TIME", type=_when, default=None,
                      help="When the decision was made, not in the future: epoch seconds, or an ISO 8601 date (its "
                           "start, UTC) or time (default: now)")  # fmt: skip

    rotate = action("rotate", "Make a holdout_live set's next version: retire burned tasks, add fresh ones", cmd_rotate)
    rotate.add_argument("name", metavar="NAME", help="The holdout_live set")
    rotate.add_argument("--dataset", metavar="FILE", help="Where the --add instances are (JSON array or JSONL)")
    rotate.add_argument("--add", dest="add", metavar="ID", nargs="+", action="extend",
                        help="Fresh instances to add (repeatable); they obey the rules of a new set")  # fmt: skip
    rotate.add_argument("--cutoff", metavar="DATE", type=_cutoff,
                        help=CUTOFF_HELP + " (default: the set's); tasks not created after it are retired too")  # fmt: skip

    gate = action("gate", "Which tasks of a set may count for generalization under a cutoff (exit 1: none may)",
                  cmd_gate)  # fmt: skip
    gate.add_argument("name", metavar="NAME[@vN]", help="The set")
    gate.add_argument("--cutoff", required=True, metavar="DATE", type=_cutoff, help=CUTOFF_HELP)
    gate.add_argument("--dataset", metavar="FILE",
                      help="Check that this dataset holds every task of the set unchanged (same content address)")  # fmt: skip
    gate.add_argument("--out", metavar="FILE", help="With --dataset: write the eligible instances as JSONL")


# --- helpers ------------------------------------------------------------------------------------


def _json_refusals(handler: Any) -> Any:
    """``handler``, whose refusals (bad input: exit 2) are also printed on standard output as
    ``{"error": MESSAGE, "exit": 2}`` when ``--json`` is given, then raised as before (the command line
    prints the one line on standard error and exits 2)."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from ..errors import CommandError
        from ..ledger import LedgerError, LedgerUnavailable

        try:
            result: int = handler(args)
        except (sets.SetError, CommandError, LedgerError) as exc:
            if getattr(args, "json", False) and not isinstance(exc, LedgerUnavailable):  # unavailable: exit 3
                _print_json({"error": str(exc), "exit": 2})
            raise
        return result

    return run


def _path(args: argparse.Namespace) -> Path:
    return Path(args.ledger) if args.ledger else DEFAULT_LEDGER


def _existing(args: argparse.Namespace) -> Path:
    path = _path(args)
    if not path.exists():
        raise sets.SetError(f"no benchmark set {args.name!r}: no ledger at {path} "
                            "(create a set with objective-score sets create, or give --ledger PATH)")  # fmt: skip
    return path


def _dataset(path: str) -> list[Any]:
    from ..instances import InstanceError, load_instances

    try:
        instances = load_instances(path)
    except InstanceError as exc:
        raise sets.SetError(f"--dataset {exc}") from None
    if not instances:
        raise sets.SetError(f"--dataset {path}: holds no instances")
    return instances


def _select(instances: Sequence[Any], ids: Sequence[str], path: str, flag: str) -> list[Any]:
    by_id = {instance.instance_id: instance for instance in instances}
    chosen = []
    for instance_id in ids:
        if instance_id not in by_id:
            close = difflib.get_close_matches(instance_id, list(by_id), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise sets.SetError(f"{flag} {instance_id}: no such instance in {path} (among {len(by_id)}){hint}")
        if by_id[instance_id] in chosen:
            raise sets.SetError(f"{flag} {instance_id}: given twice")
        chosen.append(by_id[instance_id])
    return chosen


def _console() -> Any:
    """A rich console that reads no emoji codes (a task named ``:x:`` prints as written)."""
    from rich.console import Console

    return Console(emoji=False) if Console().is_terminal else Console(width=160, emoji=False)


def _short(task_id: str) -> str:
    return task_id[:19] + "…"


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _show_state(state: sets.SetState, ledger: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    record = state.record
    console = _console()
    head = Table(title=escape(f"BenchmarkSet {record.set_id}" + ("" if state.current else
                 f" (retired: the current version is v{state.latest_version})")), show_header=False)  # fmt: skip
    head.add_column("field")
    head.add_column("value", overflow="fold")
    for key, value in record.to_dict().items():
        if key == "task_ids":
            value = f"{len(record.task_ids)} task(s), below"
        elif key == "last_decision_use":
            value = "null (never used in a decision)" if value is None else f"{value} ({sets.epoch_iso(value)})"
        head.add_row(key, escape(str(value).lower() if isinstance(value, bool) else str(value)))
    console.print(head)
    tasks = Table(title=escape(f"tasks of {record.set_id} (cutoff {state.cutoff or 'none'}; statuses assigned by rule)"))
    for column in ("instance", "task id", "created_at", "status", "why"):
        tasks.add_column(column, overflow="fold")
    for task in state.tasks:
        style = "green" if task.status in sets.GENERALIZATION_GRADE else "yellow"
        tasks.add_row(escape(task.instance_id), _short(task.task_id), escape(str(task.created_at or "-")),
                      f"[{style}]{task.status}[/{style}]", escape(task.why))  # fmt: skip
    console.print(tasks)
    for retired in state.retired:
        console.print(escape(f"retired by the rotation to {record.set_id}: {retired['instance_id']} ({retired['why']})"))
    for item in state.history:
        console.print(escape(f"ledger entry {item['seq']} {item['created']}: {item['set_id']} {item['summary']}"))
    console.print(escape(f"ledger: {ledger}"))


# --- handlers -----------------------------------------------------------------------------------


def cmd_create(args: argparse.Namespace) -> int:
    instances = _dataset(args.dataset)
    if args.instance_ids:
        instances = _select(instances, args.instance_ids, args.dataset, "--instance-id")
    path = _path(args)
    with Ledger(path) as ledger:
        state = sets.create_set(ledger, args.name, args.role, instances, args.source, cutoff=args.cutoff,
                                dataset=str(args.dataset))  # fmt: skip
    if args.json:
        _print_json({"ledger": str(path), **state.to_dict()})
    else:
        _show_state(state, path)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    path = _path(args)
    if not path.exists():  # never an empty, successful listing of a ledger that is not there (a misspelt path)
        raise sets.SetError(f"--ledger {path}: no such ledger (create a set with objective-score sets create, or "
                            "give --ledger PATH)")  # fmt: skip
    with Ledger(path, read_only=True) as ledger:
        states = sets.load_sets(ledger)
    rows = [{**state.record.to_dict(), "task_count": len(state.tasks), "cutoff": state.cutoff,
             "versions": state.latest_version} for state in states.values()]  # fmt: skip
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print(f"{path}: no benchmark sets (objective-score sets create NAME ...)")
        return 0
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"benchmark sets in {path} (current versions)"))
    for column in ("set", "role", "status", "source", "tasks", "burned", "last decision use", "cutoff"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = (row["set_id"], row["role"], row["contamination_status"], row["refresh_source"], str(row["task_count"]),
                 "yes" if row["burned"] else "no", sets.epoch_iso(row["last_decision_use"]), str(row["cutoff"] or "-"))
        table.add_row(*(escape(cell) for cell in cells))
    _console().print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    path = _existing(args)
    with Ledger(path) as ledger:
        state = sets.resolve_set(ledger, args.name)
    if args.json:
        _print_json(state.to_dict())
    else:
        _show_state(state, path)
    return 0


def cmd_burn(args: argparse.Namespace) -> int:
    path = _existing(args)
    with Ledger(path) as ledger:
        before = sets.resolve_set(ledger, args.name)
        chosen = [before.task(ref).task_id for ref in args.tasks] if args.tasks else None
        newly = sets.burn(ledger, args.name, args.decision, chosen, when=args.when)
        after = sets.resolve_set(ledger, before.name)
    used = chosen if chosen is not None else [task.task_id for task in before.tasks]
    already = [task_id for task_id in used if task_id not in newly]
    if args.json:
        _print_json({"set_id": after.set_id, "decision": args.decision, "task_ids": used, "newly_burned": newly,
                     "already_burned": already, "record": after.record.to_dict()})  # fmt: skip
        return 0
    names = after.instances
    print(f"decision {args.decision!r} used {len(used)} task(s) of {after.set_id}: {len(newly)} newly burned"
          + (f", {len(already)} already burned" if already else ""))  # fmt: skip
    for task_id in newly:
        print(f"  burned: {names.get(task_id, task_id)} ({task_id})")
    print(f"{after.set_id}: burned {str(after.record.burned).lower()}, status {after.record.contamination_status}, "
          f"last_decision_use {after.record.last_decision_use}")  # fmt: skip
    if after.role == "holdout_live":
        print(f"{after.set_id} cannot be used for generalization until rotated: objective-score sets rotate {after.name}")
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    path = _existing(args)
    add: list[Any] = []
    if args.add:
        if not args.dataset:
            raise sets.SetError("--add needs --dataset FILE (where the added instances are)")
        add = _select(_dataset(args.dataset), args.add, args.dataset, "--add")
    with Ledger(path) as ledger:
        state = sets.rotate_set(ledger, args.name, add=add, cutoff=args.cutoff,
                                dataset=str(args.dataset) if args.dataset else None)  # fmt: skip
    if args.json:
        _print_json({"ledger": str(path), **state.to_dict()})
    else:
        _show_state(state, path)
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    if args.out and not args.dataset:
        raise sets.SetError("--out needs --dataset FILE (the eligible instances are written from it)")
    path = _existing(args)
    with Ledger(path) as ledger:
        state = sets.resolve_set(ledger, args.name)
    result = sets.gate(state, args.cutoff)
    report = result.to_dict()
    if args.dataset:
        instances = {sets.task_id_of(instance): instance for instance in _dataset(args.dataset)}
        by_instance_id = {instance.instance_id: tid for tid, instance in instances.items()}
        for task in state.tasks:
            if task.task_id not in instances:
                other = by_instance_id.get(task.instance_id)
                why = (f"its instance {task.instance_id} is there with other content (task id {other})" if other
                       else f"no instance {task.instance_id}")  # fmt: skip
                raise sets.SetError(f"--dataset {args.dataset}: does not hold task {task.instance_id} ({task.task_id}) "
                                    f"of {state.set_id}: {why}; a changed instance is a different task")  # fmt: skip
        report["dataset"] = str(args.dataset)
        if args.out:
            from ..atomic import write_whole

            out = Path(args.out)
            lines = [json.dumps(dict(instances[tid].fields), ensure_ascii=False) for tid in result.eligible]
            try:
                write_whole(out, "".join(line + "\n" for line in lines))
            except OSError as exc:
                raise sets.SetError(f"--out {out}: NOT written ({exc.strerror or exc})") from None
            report["out"] = str(out)
    if args.json:
        _print_json(report)
        return 0 if result.usable else 1
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"gate {state.set_id} ({state.role}) at cutoff {result.cutoff}: "
                               f"{len(result.eligible)} of {len(result.tasks)} task(s) may count for generalization"))  # fmt: skip
    for column in ("instance", "task id", "created_at", "eligible", "why not"):
        table.add_column(column, overflow="fold")
    for row in result.tasks:
        table.add_row(escape(row.instance_id), _short(row.task_id), escape(str(row.created_at or "-")),
                      "[green]yes[/green]" if row.eligible else "[red]no[/red]", escape("; ".join(row.why) or "-"))  # fmt: skip
    console = _console()
    console.print(table)
    if result.usable:
        console.print(escape(f"{state.set_id} is usable for generalization at cutoff {result.cutoff} on its "
                             f"{len(result.eligible)} eligible task(s)"))  # fmt: skip
    else:
        console.print(f"[red]not usable for generalization:[/red] {escape(str(result.refusal))}")
    if args.out:
        console.print(escape(f"eligible instances written to: {args.out}"))
    return 0 if result.usable else 1
