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

Every estimate has its 95% interval in brackets: the resolve rate a Wilson interval
over the tasks (a task's runs count once); $/run and the ratios a seeded bootstrap
over tasks (a task's runs resampled together); $/resolve the reciprocal of the
res/$ interval ("∞)" where a resample may hold no resolve). A harness that resolved
nothing, or everything, has ratios bounded by the rate's Wilson interval over the
cost's (0 resolves of n is not known to be 0: "0 [0, 2.7]", never "0 [0, 0]"); its
$/resolve with no resolve is undefined ("n/a: no resolve"), never 0. A second
table gives each per-run cost (dollars, CPU-s, wall time, tokens, calls) as a
distribution: the mean and its interval; sd, median, p10 and p90 describe the
spread of the runs themselves. One task has no interval ("n/a: one task"). Ranks
order the point estimates: they are not a test (compare two harnesses with
objective-score ab). --json holds the same numbers.
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


def _bound(value: float | None, spec: str) -> str:
    return "∞" if value is None else format(value, spec)


def _with(value: float | None, spec: str, found: Any) -> str:
    """A number and its 95% interval ("0.12 [0.10, 0.15]"; "2.5 [1.1, ∞)" when it has no upper
    bound), or why it has none ("0.12 (n/a: one task)"); an undefined number says why ("n/a: no
    resolve"), a number never computed (its denominator unknown) is "-"."""
    if value is None:
        note = str((found or {}).get("note") or "")
        return note if note.startswith("n/a") else "-"
    if not found:
        return format(value, spec)
    if found.get("interval") is None:
        return f"{format(value, spec)} ({found.get('note') or 'n/a'})"
    low, high = found["interval"]
    return f"{format(value, spec)} [{_bound(low, spec)}, {_bound(high, spec)}{']' if high is not None else ')'}"


def _costs_table(path: Path, summaries: Sequence[Any], benchmark: str = "unknown") -> None:
    """The ranking table, each number with its 95% interval, then each harness's per-run cost
    distribution: the numbers of ``--json``'s ``harnesses`` (``uncertainty`` holds the intervals)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cost and correctness per harness, benchmark {benchmark} ({path}); [95% CI]")
    for column in ("rank", "harness", "front", "resolved", "rate", "$/run", "$/resolve", "res/$", "res/1k tok",
                   "res/wall-h", "res/CPU-s", "infra excl."):  # fmt: skip
        table.add_column(column, overflow="fold")
    for s in summaries:
        r, u = s.ratios, s.uncertainty
        ratios, per_run = u.get("ratios") or {}, u.get("per_run") or {}
        table.add_row(
            str(s.rank), s.harness, "yes" if s.pareto_layer == 1 else f"layer {s.pareto_layer}",
            f"{s.resolved}/{s.runs}", _with(s.resolve_rate, ".1%", u.get("resolve_rate")),
            _with(s.dollars_per_run, ".4f", per_run.get("dollars")),
            _with(r.get("dollars_per_resolve"), ".4g", ratios.get("dollars_per_resolve")),
            *(_with(r[name], ".3g", ratios.get(name)) for name in ("resolves_per_dollar", "resolves_per_1k_tokens",
                                                                   "resolves_per_wall_hour", "resolves_per_cpu_second")),
            str(s.infrastructure_failures),
        )  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    _distribution_table(console, summaries, benchmark)
    for s in summaries:
        if s.dominated_by:
            console.print(f"{s.harness}: dominated by {', '.join(s.dominated_by)} (as good or better, for less)")
        for note in s.notes:
            console.print(f"{s.harness}: {note}")
    console.print("rank and front order the point estimates (a rank is not a test: compare two harnesses with "
                  "objective-score ab)", soft_wrap=True)  # fmt: skip
    methods = _methods(summaries)
    if methods:
        console.print("95% CI: " + "; ".join(methods), soft_wrap=True)


QUANTITIES = (("dollars", "dollars", ".4g"), ("cpu", "CPU-s", ".4g"), ("wall_time", "wall s", ".4g"),
              ("tokens", "tokens", ".6g"), ("calls", "calls", ".4g"))  # fmt: skip


def _distribution_table(console: Any, summaries: Sequence[Any], benchmark: str) -> None:
    """Per harness and cost quantity, the distribution of the per-run values (the JSON's ``per_run``)."""
    from rich.table import Table

    table = Table(title=f"cost per run, benchmark {benchmark}: the mean with its 95% CI over tasks; sd, median, p10, "
                        "p90 describe the spread of the runs")  # fmt: skip
    for column in ("harness", "quantity", "runs", "mean", "95% CI", "sd", "median", "p10", "p90", "unknown"):
        table.add_column(column, overflow="fold")
    for s in summaries:
        per_run = (s.uncertainty or {}).get("per_run") or {}
        for name, label, spec in QUANTITIES:
            found = per_run.get(name)
            if not found:
                continue
            interval = found["interval"]
            table.add_row(s.harness, label, str(found["n"]), _fmt(found["mean"], spec),
                          (f"[{format(interval[0], spec)}, {format(interval[1], spec)}]"
                           + (", no spread" if "no spread" in str(found["note"] or "") else "")) if interval else str(found["note"]),
                          _fmt(found["sd"], spec), _fmt(found["median"], spec), _fmt(found["p10"], spec),
                          _fmt(found["p90"], spec), str(found["unknown"]))  # fmt: skip
    console.print(table)


def _methods(summaries: Sequence[Any]) -> list[str]:
    """How the intervals were made, once each."""
    seen: dict[str, None] = {}
    for s in summaries:
        u = s.uncertainty or {}
        for found in [u.get("resolve_rate"), *(u.get("per_run") or {}).values(), *(u.get("ratios") or {}).values()]:
            if found and found.get("method"):
                seen[found["method"]] = None
    return list(seen)


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
