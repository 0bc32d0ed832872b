"""``objective-score demo``: every bundled fixture candidate graded, and a table of their Scores
beside the verdicts they must get (exit 1 when one differs). The fixtures are the package's
``demo_fixtures`` (in a source checkout a link to ``fixtures/``) or ``--fixtures DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .. import options
from ..errors import CommandError
from . import HELP

__all__ = ["EXPECTED", "cmd_demo", "demo_cases", "find_fixtures", "register"]

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
"""

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
    """(project, candidate, instance file, repo, patch) for every bundled case."""
    cases = []
    for instance_file in sorted((fixtures / "instances").glob("*.json")):
        name = instance_file.stem
        for candidate in EXPECTED:
            patch = fixtures / "patches" / name / f"{candidate}.diff"
            if patch.exists():
                cases.append((name, candidate, instance_file, fixtures / "repos" / name, patch))
    return cases


def cmd_demo(args: argparse.Namespace) -> int:
    from ..instances import load_instance
    from ..runner import GradeRequest, grade_candidate

    fixtures = find_fixtures(args.fixtures)
    cases = demo_cases(fixtures)
    if not cases:
        raise CommandError(f"{fixtures}: no instance with candidate patches found")
    rows = []
    for index, (name, candidate, instance_file, repo, patch) in enumerate(cases, 1):
        started = time.perf_counter()
        result = grade_candidate(
            GradeRequest(repo=repo, instance=load_instance(instance_file), patch=patch.read_bytes(),
                         python=args.python, timeout=args.timeout)
        )  # fmt: skip
        score = result.score
        verdict = score["resolved"] if score else "no verdict"
        expected = EXPECTED[candidate]
        row = {
            "instance": result.envelope["instance_id"],
            "candidate": candidate,
            "fail_to_pass": f"{score['fail_to_pass']['passed']}/{score['fail_to_pass']['total']}" if score else "-",
            "pass_to_pass": f"{score['pass_to_pass']['passed']}/{score['pass_to_pass']['total']}" if score else "-",
            "resolved": verdict,
            "failure_class": result.failure_class,
            "dropped": [d["path"] for d in (result.envelope["runner"].get("apply") or {}).get("dropped", [])],
            "as_expected": (verdict, result.failure_class) == expected,
            "seconds": round(time.perf_counter() - started, 2),
            "score": score,
        }
        rows.append(row)
        if not args.json:
            print(f"[{index}/{len(cases)}] {name} {candidate}: {verdict} ({row['seconds']}s)", file=sys.stderr)
    if args.json:
        print(json.dumps({"fixtures": str(fixtures), "results": rows}, indent=2, ensure_ascii=False))
    else:
        _demo_table(rows)
    return 0 if all(r["as_expected"] for r in rows) else 1


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
    demo.add_argument("--fixtures", metavar="DIR", help="The fixtures directory (default: ./fixtures or the source tree's)")
    demo.add_argument("--python", metavar="PATH", default=sys.executable, help="Interpreter to run the tests with")
    demo.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=120.0, help="Per-grading timeout")
    demo.add_argument("--json", action="store_true", help="Print the results as JSON instead of a table")
    demo.set_defaults(handler=cmd_demo)
