"""``objective-score demo``: every bundled fixture candidate graded, and a table of their Scores
beside the verdicts they must get (exit 1 when one differs); with ``--ledger PATH`` every graded
run appended to that ledger as ``grade`` appends it (for ``costs``, ``ledger show``, ``receipt``
and ``scorecard``). The fixtures are the package's ``demo_fixtures`` (in a source checkout a link
to ``fixtures/``) or ``--fixtures DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from .. import options
from ..errors import CommandError
from . import HELP
from .shared import hidden_paths

__all__ = ["DEMO_BENCHMARK", "EXPECTED", "cmd_demo", "demo_cases", "find_fixtures", "harness_of", "register"]

DEMO_EPILOG = """\
The bundled example (installed with the package; fixtures/ in a source tree)
holds three small Python projects, each with an instance and five candidates:
the gold patch, a patch that fixes the bug but breaks a PASS_TO_PASS test, an
empty patch, a tampering patch that rewrites the tests and adds a conftest.py
forcing every outcome to "passed", and a patch that does not apply; and a
miniature of pytest's own repository (its fix inside a pytest plugin module)
with its gold and empty patches; and three projects whose tests run under other
runners, as most of SWE-bench's do: one laid out as Django's (its own
tests/runtests.py), a miniature of SymPy's (bin/test and its reporter) and a plain
unittest suite, with their gold, breaking, empty and (the first two) tampering
patches: 28 gradings. Exit status 0 when every verdict is the expected one.

With --ledger PATH every graded run is appended to that ledger (created if
missing), as objective-score grade appends it: its score entry, its cost and its
scorecard, with the task's audit state and the run's disposition. Each run is
recorded under benchmark "demo" and harness "demo-<candidate>" (demo-gold,
demo-break_p2p, ...), so the next commands read them:
  objective-score demo --ledger demo.sqlite
  objective-score ledger show --ledger demo.sqlite
  objective-score costs --ledger demo.sqlite
  objective-score receipt 1 --ledger demo.sqlite   (seq 1: the first run of a new ledger)
  objective-score scorecard diff harness:demo-empty harness:demo-gold --ledger demo.sqlite
Without --ledger (or $OBJECTIVE_SCORE_LEDGER) nothing is written.
objective-score examples DIR copies these projects, instances and patches (and
the rest of the README's examples) out, to read, edit and grade them.
"""

DEMO_BENCHMARK = "demo"
"""The benchmark the demo's runs are recorded under (``costs`` ranks within one benchmark)."""

EXPECTED = {
    "gold": ("resolved", "none"),
    "break_p2p": ("not_resolved", "solver"),
    "empty": ("not_resolved", "solver"),
    "tamper": ("not_resolved", "solver"),
    "noapply": ("not_resolved", "patch_apply"),
}


def find_fixtures(explicit: str | None) -> Path:
    """``--fixtures DIR``, else the demo data installed with the package (``demo_fixtures``: in a source
    checkout a link to ``fixtures/``, in a wheel a copy of what the demo needs)."""
    package = Path(__file__).resolve().parent.parent
    candidates = [Path(explicit)] if explicit else [package / "demo_fixtures", package.parent / "fixtures"]
    for path in candidates:
        if (path / "instances").is_dir() and (path / "repos").is_dir():
            return path
    raise CommandError(
        "no fixtures found (looked in " + ", ".join(map(str, candidates)) + "); pass --fixtures DIR (a folder with "
        "instances/, repos/ and patches/), or reinstall the package"
    )


def demo_cases(fixtures: Path) -> list[tuple[str, str, Path, Path, Path]]:
    """(project, candidate, instance file, repo, patch) for every bundled case the demo grades on this
    machine: another language's instances run in their image (``tests/test_command_container.py``)."""
    cases = []
    for instance_file in sorted((fixtures / "instances").glob("*.json")):
        name = instance_file.stem
        if '"runner": "command"' in instance_file.read_text(encoding="utf-8"):
            continue
        for candidate in EXPECTED:
            patch = fixtures / "patches" / name / f"{candidate}.diff"
            if patch.exists():
                cases.append((name, candidate, instance_file, fixtures / "repos" / name, patch))
    return cases


def harness_of(candidate: str) -> str:
    """The harness a demo run of ``candidate`` is recorded under: ``demo-gold``, ``demo-empty``, ..."""
    return f"demo-{candidate}"


def cmd_demo(args: argparse.Namespace) -> int:
    from ..runner import GradeRequest

    fixtures = find_fixtures(args.fixtures)
    cases = demo_cases(fixtures)
    if not cases:
        raise CommandError(f"{fixtures}: no instance with candidate patches found")
    python = _interpreter(args.python)  # before any grading, as grade checks it
    with contextlib.ExitStack() as stack:
        ledger, recorded = _open_ledger(args, stack)
        hidden = () if ledger is None else hidden_paths(args)  # the ledger is out of the tests' sight
        rows = []
        for index, (name, candidate, instance_file, repo, patch) in enumerate(cases, 1):
            started = time.perf_counter()
            instance = _instance(instance_file)
            result = _graded(GradeRequest(repo=repo, instance=instance, patch=patch.read_bytes(), python=python,
                                          timeout=args.timeout, harness=harness_of(candidate), hidden=hidden))  # fmt: skip
            seq = None if ledger is None else _record(ledger, recorded, result.envelope, instance.fields)
            rows.append(_row(result, candidate, started, seq))
            if not args.json:
                print(f"[{index}/{len(cases)}] {name} {candidate}: {rows[-1]['resolved']} ({rows[-1]['seconds']}s)",
                      file=sys.stderr)  # fmt: skip
    seqs = [row["ledger_seq"] for row in rows if row["ledger_seq"] is not None]
    if args.json:
        print(json.dumps({"fixtures": str(fixtures), "ledger": args.ledger, "results": rows}, indent=2,
                         ensure_ascii=False))  # fmt: skip
    else:
        _demo_table(rows)
        if seqs:
            print(f"ledger: {len(seqs)} graded runs appended to {args.ledger} (score entries seq {seqs[0]} to {seqs[-1]}: "
                  f"objective-score ledger show --ledger {args.ledger})")  # fmt: skip
    return 0 if all(r["as_expected"] for r in rows) else 1


def _interpreter(python: str) -> str:
    """``--python`` resolved and run once, as ``grade`` checks it (:func:`.grade_task.resolve_python`):
    one that is missing or does not run as Python (``/bin/false``) is bad input, before any grading."""
    from ..grade_task import resolve_python
    from ..workspace import BadInput

    try:
        return resolve_python(python)
    except BadInput as exc:
        raise CommandError(str(exc)) from None


def _instance(path: Path) -> Any:
    """A fixture's instance (``--fixtures DIR`` may hold a broken one: bad input, one line)."""
    from ..instances import InstanceError, load_instance

    try:
        return load_instance(path)
    except InstanceError as exc:
        raise CommandError(str(exc)) from None


def _graded(request: Any) -> Any:
    """One case graded; a request the runner refuses (:class:`~.workspace.BadInput`) is bad input, one line."""
    from ..runner import BadInput, grade_candidate

    try:
        return grade_candidate(request)
    except BadInput as exc:
        raise CommandError(str(exc)) from None


def _open_ledger(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[Any, list[dict[str, Any]]]:
    """``--ledger``'s ledger, open for appending, and the audits already in it; ``(None, [])`` without
    it. Opened before anything is graded: a path that is not a ledger (a directory, another file) is
    bad input now, not a failure after every grading."""
    if not args.ledger:
        return None, []
    from ..audit_ledger import audits
    from ..ledger import Ledger

    ledger = stack.enter_context(Ledger(Path(args.ledger)))
    return ledger, audits(ledger)


def _record(ledger: Any, recorded: list[dict[str, Any]], envelope: dict[str, Any], fields: Any) -> int:
    """Settle a graded run against the task's audit state and append it, as ``grade`` does: the seq of
    its score entry."""
    from ..audit_ledger import audit_of
    from ..integrity import settle
    from ..ledger import run_entries

    envelope["benchmark"] = DEMO_BENCHMARK
    settle(envelope, audit_of(recorded, fields))
    seq: int = ledger.append_linked(run_entries(envelope, "runner"))[0].seq
    envelope["ledger"] = {"path": str(ledger.path), "seq": seq}
    return seq


def _row(result: Any, candidate: str, started: float, seq: int | None) -> dict[str, Any]:
    """One graded case as the table and ``--json`` show it."""
    score = result.score
    verdict = score["resolved"] if score else "no verdict"
    return {
        "instance": result.envelope["instance_id"],
        "candidate": candidate,
        "fail_to_pass": f"{score['fail_to_pass']['passed']}/{score['fail_to_pass']['total']}" if score else "-",
        "pass_to_pass": f"{score['pass_to_pass']['passed']}/{score['pass_to_pass']['total']}" if score else "-",
        "resolved": verdict,
        "failure_class": result.failure_class,
        "dropped": [d["path"] for d in (result.envelope["runner"].get("apply") or {}).get("dropped", [])],
        "as_expected": (verdict, result.failure_class) == EXPECTED[candidate],
        "seconds": round(time.perf_counter() - started, 2),
        "ledger_seq": seq,
        "score": score,
    }


def _demo_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="objective-score demo: Scores of the bundled candidates")
    for column in ("instance", "candidate", "F2P passed", "P2P preserved", "resolved", "failure class", "expected?"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = "green" if row["resolved"] == "resolved" else "red"
        table.add_row(
            row["instance"], row["candidate"], row["fail_to_pass"], row["pass_to_pass"],
            f"[{style}]{row['resolved']}[/{style}]", row["failure_class"], "yes" if row["as_expected"] else "[bold red]NO[/]",
        )  # fmt: skip
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)  # piped or logged: do not squeeze the table to 80 columns
    console.print(table)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to the ``objective-score`` parser."""
    demo = sub.add_parser("demo", help=HELP["demo"],
                          description="Grade every bundled fixture candidate and print a table of Scores.",
                          epilog=DEMO_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    demo.add_argument("--fixtures", metavar="DIR",
                      help="The fixtures directory (default: the examples installed with the package)")
    demo.add_argument("--python", metavar="PATH", default=sys.executable, help="Interpreter to run the tests with")
    demo.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=120.0, help="Per-grading timeout")
    demo.add_argument("--ledger", metavar="PATH", default=None,
                      help="Append every graded run to this ledger (created if missing), as grade does; default: none")
    demo.add_argument("--json", action="store_true", help="Print the results as JSON instead of a table")
    demo.set_defaults(handler=cmd_demo)
