"""``objective-score costs``: resolve rate against cost per harness, read from the ledger's score
and cost entries, ranked within each benchmark by cost-resolve Pareto layer. Thin: the arithmetic
is :mod:`pytest_objective_scoring.cost_ledger`'s.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

from ..errors import CommandError
from ..ledger import DEFAULT_LEDGER
from . import HELP
from .shared import existing_ledger

__all__ = ["cmd_costs", "register"]

COSTS_EPILOG = """\
Runs are read from the ledger: every score entry joined to its cost entry. A
candidate graded again (same harness, instance and patch) counts once, the
latest grading standing. Infrastructure failures (setup, verifier) are never the
candidate's: they are left out of the resolve rate and the ratios, and counted
apart. Ranking: harnesses are peeled into Pareto layers over (resolve rate up,
dollars per run down); layer 1 is the cost-resolve front. Within a layer the
higher resolve rate ranks first, then the cheaper. An equal resolve rate at a
higher cost is dominated, so it is never ranked equal; only harnesses equal on
both axes share a rank. A ratio is shown as '-' when its denominator is unknown
(the harness did not report tokens) or zero.
"""


def cmd_costs(args: argparse.Namespace) -> int:
    from ..cost_ledger import by_benchmark, runs_from_entries
    from ..ledger import Ledger

    path = existing_ledger(args)
    with Ledger(path, read_only=True) as ledger:
        scores = [{"seq": e.seq, "body": e.data} for e in ledger.entries("score")]
        costs = [{"seq": e.seq, "body": e.data} for e in ledger.entries("cost")]
    runs = select_runs(runs_from_entries(scores, costs), args.harness, args.benchmark, path)
    groups = by_benchmark(runs)
    if args.json:
        print(json.dumps({"ledger": str(path), "runs": len(runs), "metric_space": "binary_resolved",
                          "ranking": "within each benchmark; never across benchmarks or metric spaces",
                          "benchmarks": [{"benchmark": name, "harnesses": [s.to_dict() for s in summaries]}
                                         for name, summaries in groups.items()]}, indent=2, ensure_ascii=False))  # fmt: skip
        return 0
    if not groups:
        print(f"{path}: no graded run with a cost entry")
        return 0
    for name, summaries in groups.items():
        _costs_table(path, summaries, name)
    if len(groups) > 1:
        print(f"{len(groups)} benchmarks: each is ranked on its own; resolve rates of different benchmarks are never "
              "averaged or ranked together")  # fmt: skip
    return 0


def select_runs(runs: Sequence[Any], harnesses: Sequence[str] | None, benchmark: str | None, path: Path) -> list[Any]:
    """The runs ``--harness`` and ``--benchmark`` select. A reading command never reports an empty
    success for something that is not there: a harness or a benchmark no run in the ledger has, or
    both given and no run of that harness in that benchmark, is a :class:`CommandError` naming what
    the ledger holds (as ``ledger show --kind`` does)."""
    chosen = list(runs)
    if harnesses:
        unknown = sorted(set(harnesses) - {r.harness for r in runs})
        if unknown:
            known = ", ".join(sorted({r.harness for r in runs})) or "none"
            raise CommandError(f"--harness {unknown[0]}: no graded run of that harness in {path} (harnesses: {known})")
        chosen = [r for r in chosen if r.harness in harnesses]
    if benchmark is not None:
        known_benchmarks = sorted({r.benchmark for r in runs})
        if benchmark not in known_benchmarks:
            raise CommandError(f"--benchmark {benchmark}: no graded run of that benchmark in {path} (benchmarks: "
                               f"{', '.join(known_benchmarks) or 'none'})")  # fmt: skip
        chosen = [r for r in chosen if r.benchmark == benchmark]
        if not chosen:
            theirs = sorted({r.benchmark for r in runs if r.harness in (harnesses or ())})
            raise CommandError(f"--benchmark {benchmark} --harness {', '.join(harnesses or ())}: no graded run of those "
                               f"harnesses in that benchmark in {path} (their benchmarks: {', '.join(theirs)})")  # fmt: skip
    return chosen


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _costs_table(path: Path, summaries: Sequence[Any], benchmark: str = "unknown") -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cost and correctness per harness, benchmark {benchmark} ({path})")
    for column in ("rank", "harness", "front", "resolved", "rate", "$/run", "res/$", "res/1k tok",
                   "res/wall-h", "res/CPU-s", "infra excl."):  # fmt: skip
        table.add_column(column, overflow="fold")
    for s in summaries:
        r = s.ratios
        table.add_row(
            str(s.rank), s.harness, "yes" if s.pareto_layer == 1 else f"layer {s.pareto_layer}",
            f"{s.resolved}/{s.runs}", _fmt(s.resolve_rate, ".1%"), _fmt(s.dollars_per_run, ".4f"),
            _fmt(r["resolves_per_dollar"], ".3g"), _fmt(r["resolves_per_1k_tokens"], ".3g"),
            _fmt(r["resolves_per_wall_hour"], ".3g"), _fmt(r["resolves_per_cpu_second"], ".3g"),
            str(s.infrastructure_failures),
        )  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    for s in summaries:
        if s.dominated_by:
            console.print(f"{s.harness}: dominated by {', '.join(s.dominated_by)} (as good or better, for less)")
        for note in s.notes:
            console.print(f"{s.harness}: {note}")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``costs`` to the ``objective-score`` parser."""
    costs = sub.add_parser("costs", help=HELP["costs"],
                           description="Per harness or model: resolve rate, resolves per dollar, per 1,000 tokens, "
                           "per wall-clock hour and per CPU-second, ranked by cost-resolve Pareto layer.",
                           epilog=COSTS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    costs.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    costs.add_argument("--harness", metavar="NAME", action="append", help="Only this harness (repeatable)")
    costs.add_argument("--benchmark", metavar="NAME", help="Only this benchmark")
    costs.add_argument("--json", action="store_true", help="Print the report as JSON")
    costs.set_defaults(handler=cmd_costs)
