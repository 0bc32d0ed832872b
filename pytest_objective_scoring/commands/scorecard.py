"""``objective-score scorecard RUN`` and ``scorecard diff RUN_A RUN_B``: a run's hierarchical
scorecard (component metrics, end to end, economics) read from the ledger, the means of several
runs of one benchmark, or two sets of runs compared stage by stage. Thin: the metrics and the
diff are :mod:`pytest_objective_scoring.scorecard`'s.
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

__all__ = ["cmd_scorecard", "register", "select_scorecards"]

SCORECARD_EPILOG = """\
RUN selects graded runs in the ledger:
  12            the run whose score entry is seq 12 (see objective-score ledger show)
  12,15,18      those runs            12-20   the runs with score seq 12 to 20
  harness:NAME  every run of that harness (the latest per instance and patch)
  last          the latest run

objective-score scorecard RUN shows one run's three planes (component metrics, end to
end, economics); with several runs, their means. objective-score scorecard diff A B
compares two sets stage by stage and names the stage that moved, e.g.
  localization.file_recall 51% → 62% (+11.0 points, 95% CI [+4.2, +17.8], 40 tasks);
  end_to_end.resolved flat: the gain is held by a later stage (patching.apply 40% → 41%
  (+1.0 points, 95% CI [-2.1, +4.1], 40 tasks))
Booleans are shown as the share of runs where they hold; a metric that could not be
computed for a run (no gold patch, no retrieval order, no re-runs) is left out of its mean.

Every change in a diff has its 95% interval over the paired tasks (Student's t over
the per-task differences) and the number of tasks it rests on; one task has none
("n/a: one task"). Each side's value (A, B) has its own 95% interval over the same
tasks: a rate (a metric 0 or 1 on each run: patching.*, testing.*, resolved) the
Wilson score interval, so 0 of 5 is "0% [0%, 43%]", never "[0%, 0%]"; any other
mean a seeded bootstrap over tasks. A task whose resolution rose is credited only
to the stages that improved on that task (a loss: charged to the stages that got
worse on it); a gain no stage explains is said to be unattributed. The means of
several runs have their 95% interval over tasks, made the same way (a task's runs
count once: resampled together, or the effective number of tasks for a rate).
"""


def _scorecard_entries(path: Path) -> list[dict[str, Any]]:
    from ..ledger import Ledger

    with Ledger(path, read_only=True) as ledger:
        return [{"seq": e.seq, **e.data} for e in ledger.entries("scorecard")]


def select_scorecards(entries: Sequence[dict[str, Any]], selector: str) -> list[dict[str, Any]]:
    """The scorecard entries a RUN selector names (see SCORECARD_EPILOG)."""
    if not entries:
        raise CommandError("the ledger holds no scorecard (grade a candidate with objective-score grade first)")
    by_score = {e["score_seq"]: e for e in entries}
    if selector == "last":
        return [entries[-1]]
    if selector.startswith("harness:"):
        name = selector.split(":", 1)[1]
        latest = {(e["instance_id"], e["patch_ref"]): e for e in entries if e.get("harness") == name}
        if not latest:
            known = sorted({str(e.get("harness")) for e in entries})
            raise CommandError(f"RUN {selector}: no scorecard of harness {name!r} (harnesses: {', '.join(known)})")
        return sorted(latest.values(), key=lambda e: e["seq"])
    try:
        if "-" in selector:
            low, high = (int(part) for part in selector.split("-", 1))
            seqs = [s for s in sorted(by_score) if low <= s <= high]
        else:
            seqs = [int(part) for part in selector.split(",")]
    except ValueError:
        raise CommandError(f"RUN {selector!r}: expected a score seq (12), a list (12,15), a range (12-20), "
                           "harness:NAME or last") from None  # fmt: skip
    missing = [s for s in seqs if s not in by_score]
    if missing or not seqs:
        raise CommandError(f"RUN {selector}: no scorecard for score entry {missing[0] if missing else selector} "
                           f"(runs with scorecards: {_few_seqs(sorted(by_score))})")  # fmt: skip
    return [by_score[s] for s in seqs]


def _one_benchmark(entries: Sequence[dict[str, Any]], command: str) -> None:
    """Means are taken within one benchmark only: a rate on one instrument is not a rate on another."""
    named = sorted({str(e.get("benchmark") or "(unlabelled)") for e in entries})
    if len(named) > 1:
        raise CommandError(f"{command}: the runs belong to benchmarks {', '.join(named)}; scores of different "
                           "benchmarks (an unlabelled run counts as its own) are never averaged or compared as one "
                           "number: select runs of one benchmark, and label runs with --benchmark")  # fmt: skip
    spaces = sorted({str(e.get("metric_space") or "binary_resolved") for e in entries})
    if len(spaces) > 1:
        raise CommandError(f"{command}: the runs are in metric spaces {', '.join(spaces)}: never averaged together")


def _few_seqs(seqs: Sequence[int]) -> str:
    return ", ".join(map(str, seqs[:12])) + (", ..." if len(seqs) > 12 else "")


def cmd_scorecard(args: argparse.Namespace) -> int:
    from .. import scorecard as sc

    words = list(args.runs)
    path = existing_ledger(args)
    entries = _scorecard_entries(path)
    if words[0] == "diff":
        if len(words) != 3:
            raise CommandError("usage: objective-score scorecard diff RUN_A RUN_B")
        a, b = select_scorecards(entries, words[1]), select_scorecards(entries, words[2])
        _one_benchmark([*a, *b], "scorecard diff")
        try:
            result = sc.diff([e["scorecard"] for e in a], [e["scorecard"] for e in b])
        except sc.ScorecardError as exc:  # nothing to pair: bad input, one line
            raise CommandError(str(exc)) from None
        result["selectors"] = {"a": words[1], "b": words[2]}
        if args.json:
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            _scorecard_diff_table(result)
        return 0
    if len(words) != 1:
        raise CommandError("usage: objective-score scorecard RUN  (or: scorecard diff RUN_A RUN_B)")
    chosen = select_scorecards(entries, words[0])
    if len(chosen) > 1:
        _one_benchmark(chosen, "scorecard")
    beside = against_gold_of(chosen)
    if args.json:
        if len(chosen) == 1:
            print(json.dumps({"seq": chosen[0]["seq"], "score_seq": chosen[0]["score_seq"],
                              "failure_class": chosen[0].get("failure_class"), "scorecard": chosen[0]["scorecard"],
                              "details": chosen[0].get("details"), "against_gold": beside}, indent=2, ensure_ascii=False))  # fmt: skip
        else:
            cards = [e["scorecard"] for e in chosen]
            print(json.dumps({"runs": [e["score_seq"] for e in chosen], "means": sc.means(cards),
                              "intervals": sc.mean_intervals(cards), "against_gold": beside}, indent=2))  # fmt: skip
        return 0
    cards = [e["scorecard"] for e in chosen]
    _scorecard_table(chosen, sc.means(cards), sc.mean_intervals(cards) if len(chosen) > 1 else None)
    if beside is not None:
        print(f"resolved and free of regressions against gold (--against-gold, beside the Scorecard): "
              f"{beside['resolved_against_gold']} of {beside['graded']} run(s) checked ({beside['regressions']} with "
              f"regressions, {beside['unknown']} unknown); resolved: "
              f"{sum(e['scorecard']['end_to_end']['resolved'] == 'resolved' for e in chosen)} of {len(chosen)}")  # fmt: skip
    return 0


def against_gold_of(chosen: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The second figure over the chosen runs (:func:`.against_gold.summarise`), from each scorecard's
    details; None when none of them was graded with ``--against-gold``."""
    from ..against_gold import summarise

    checks = [(e.get("details") or {}).get("against_gold") or {} for e in chosen]
    return summarise((c.get("status"), c.get("resolved_against_gold")) for c in checks)


def _scorecard_table(chosen: Sequence[dict[str, Any]], means: dict[str, Any], intervals: dict[str, Any] | None) -> None:
    """One run's values, or the means of several with each mean's 95% interval over tasks and the
    number of tasks and runs it rests on (the numbers of ``--json``'s ``means`` and ``intervals``)."""
    from rich.console import Console
    from rich.table import Table

    from ..scorecard import METRICS, show_interval, show_value

    single = len(chosen) == 1
    title = (f"scorecard {chosen[0]['scorecard']['run_id']} of {chosen[0]['instance_id']} (score seq {chosen[0]['score_seq']}, "
             f"harness {chosen[0].get('harness') or '-'}, failure class {chosen[0].get('failure_class')})"
             if single else f"mean scorecard of {len(chosen)} runs")  # fmt: skip
    table = Table(title=title)
    for column in ("plane", "stage", "metric", "value") + (() if intervals is None else ("95% CI", "tasks", "runs")):
        table.add_column(column)

    def spread(metric: str) -> tuple[str, ...]:
        if intervals is None:
            return ()
        found = intervals[metric]
        return show_interval(metric, found), str(found["n"]), str(found["runs"])

    for metric, _ in METRICS:
        stage, name = metric.split(".")
        plane = "end to end" if stage == "end_to_end" else "component metrics"
        value = chosen[0]["scorecard"]["end_to_end"]["resolved"] if single and metric == "end_to_end.resolved" else show_value(metric, means[metric])
        table.add_row(plane, "" if stage == "end_to_end" else stage, name, value, *spread(metric))
    for field in ("tokens", "calls", "cpu", "wall_time", "dollars"):
        metric = f"economics.{field}"
        table.add_row("economics", "", field, show_value(metric, means[metric]), *spread(metric))
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    if intervals is None:
        console.print("one run: its values are what that run measured, with no interval (n/a: one task)")
    else:
        methods = list(dict.fromkeys(found["method"] for found in intervals.values()))
        console.print(f"95% CI of each mean: {'; '.join(methods)}", soft_wrap=True)


def _scorecard_diff_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..scorecard import show_side

    table = Table(title=f"scorecard diff: A = {result['selectors']['a']} ({result['runs']['a']} runs), "
                        f"B = {result['selectors']['b']} ({result['runs']['b']} runs)")  # fmt: skip
    table.add_column("metric", no_wrap=True)
    for column in ("A [95% CI]", "B [95% CI]", "Δ (B − A)", "Δ 95% CI", "tasks", "change"):
        table.add_column(column)
    for row in result["metrics"]:
        style = {"better": "green", "worse": "red"}.get(row["change"], "")
        change = f"[{style}]{row['change']}[/{style}]" if style else row["change"]
        table.add_row(row["metric"], show_side(row["metric"], row, "a"), show_side(row["metric"], row, "b"),
                      *_delta_cells(row), change)  # fmt: skip
    for row in result["economics"]:
        table.add_row(row["metric"], show_side(row["metric"], row, "a"), show_side(row["metric"], row, "b"),
                      *_delta_cells(row), "")  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    console.print(f"intervals: {result['interval']}", soft_wrap=True)
    console.print(f"each side's 95% CI, over the same tasks: {'; '.join(_side_methods(result))}", soft_wrap=True)
    _credit_table(console, result)
    console.print(result["attribution"])


def _side_methods(result: dict[str, Any]) -> list[str]:
    """How each side's interval was made, once each (a rate's, another mean's)."""
    return list(dict.fromkeys(row["side_method"] for row in [*result["metrics"], *result["economics"]]
                              if row.get("side_method")))  # fmt: skip


def _delta_cells(row: dict[str, Any]) -> tuple[str, str, str]:
    """A change, its interval (or why it has none) and the number of tasks: the JSON row's numbers."""
    from ..scorecard import show_change, show_change_interval

    if row.get("delta") is None:
        return "n/a", "n/a", str(row.get("tasks", 0))
    return show_change(row["metric"], row["delta"]), show_change_interval(row["metric"], row), str(row["tasks"])


def _credit_table(console: Any, result: dict[str, Any]) -> None:
    """Per stage, the tasks whose gain (or loss) in resolution it is credited (or charged) with: only
    tasks where it moved that way; and the tasks whose change no stage explains."""
    from rich.table import Table

    from ..scorecard import STAGES, show_delta, show_side

    credit = result["credit"]
    if not credit["gained"] and not credit["lost"]:
        return
    table = Table(title=f"credit, task by task: {len(credit['gained'])} task(s) gained, {len(credit['lost'])} lost "
                        "(a task is credited only to the stages that moved on it in its direction)")  # fmt: skip
    for column in ("stage", "gains credited", "losses charged", "its change on those tasks"):
        table.add_column(column, overflow="fold")
    for stage in STAGES:
        found = credit["stages"][stage]
        if not found["gained"] and not found["lost"]:
            continue
        changes = [f"{label}: " + "; ".join(f"{row['metric']} {show_side(row['metric'], row, 'a')} → "
                                            f"{show_side(row['metric'], row, 'b')}: {show_delta(row['metric'], row)}"
                                            for row in found[key])
                   for label, key in (("on the gains", "on_gained"), ("on the losses", "on_lost")) if found[key]]  # fmt: skip
        table.add_row(stage, _tasks(found["gained"]), _tasks(found["lost"]), " | ".join(changes))
    bare = credit["unattributed"]
    if bare["gained"] or bare["lost"]:
        table.add_row("(unattributed)", _tasks(bare["gained"]), _tasks(bare["lost"]), "no stage moved that way on them")
    console.print(table)


def _tasks(tasks: Sequence[str]) -> str:
    return "-" if not tasks else f"{len(tasks)}: " + ", ".join(tasks[:10]) + (", ..." if len(tasks) > 10 else "")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``scorecard`` to the ``objective-score`` parser."""
    card = sub.add_parser("scorecard", help=HELP["scorecard"],
                          description="objective-score scorecard RUN | objective-score scorecard diff RUN_A RUN_B",
                          epilog=SCORECARD_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    card.add_argument("runs", nargs="+", metavar="RUN", help="RUN, or: diff RUN_A RUN_B")
    card.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    card.add_argument("--json", action="store_true", help="Print the record(s) or the diff as JSON")
    card.set_defaults(handler=cmd_scorecard)
