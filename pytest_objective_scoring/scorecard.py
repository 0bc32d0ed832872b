"""The hierarchical scorecard (spec 3.3, 5.2, build phase 3): where a gain was won or lost.

The ``Scorecard`` and its sub-records have exactly the spec's fields::

    Scorecard { run_id, task_id, component_metrics, end_to_end, economics }
    ComponentMetrics { localization, planning, patching, structure, testing }
    LocalizationMetrics { file_recall, symbol_recall, target_rank }
    Planning { obligations_recovered }      Patching { apply, parse, build }
    Structure { correct_entities_touched, unnecessary_entities_touched }
    Testing { bug_tests_exercised, regression_tests_exercised }
    EndToEnd { resolved, regressions, robustness }
    Economics { tokens, calls, cpu, wall_time, dollars }

Every metric is computed here from ground truth by :func:`build_scorecard` (the gold
patch, the candidate patch, the executed outcomes, the re-runs, the measured cost);
none is ever read from the harness's opinion of itself. A metric that cannot be
computed (no gold patch, no retrieval order, no re-runs) is ``None`` (JSON ``null``),
never a guess. What each value was computed from lives beside the record, in
``details``. :func:`diff` compares two sets of scorecards stage by stage, paired on the
tasks both have, gives each side's value and every change its 95% interval over those tasks
and the number of tasks it rests on (a rate's side: Wilson; another mean's: a bootstrap over
tasks; a change: Student's t over the per-task differences), and credits each task's gain in
resolution only to the stages that improved on that task (:func:`credit`). Pure functions;
this module never imports pytest.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Final, Iterable, Mapping, Sequence

__all__ = [
    "BINARY",
    "METRICS",
    "ComponentMetrics",
    "Economics",
    "EndToEnd",
    "LocalizationMetrics",
    "Patching",
    "Planning",
    "Scorecard",
    "ScorecardError",
    "Structure",
    "Testing",
    "build_scorecard",
    "credit",
    "diff",
    "mean_interval_of",
    "mean_intervals",
    "obligations_of",
    "show_change",
    "show_change_interval",
    "show_delta",
    "show_interval",
    "show_side",
    "target_rank",
]

# Outcomes in which a test's body ran (its call phase executed).
EXERCISED: Final = frozenset({"passed", "failed", "xpassed", "xpassed_strict", "xfailed", "tampered"})


@dataclass(frozen=True)
class LocalizationMetrics:
    file_recall: float | None
    symbol_recall: float | None
    target_rank: int | None


@dataclass(frozen=True)
class Planning:
    obligations_recovered: float | None


@dataclass(frozen=True)
class Patching:
    apply: bool
    parse: bool
    build: bool


@dataclass(frozen=True)
class Structure:
    correct_entities_touched: int | None
    unnecessary_entities_touched: int | None


@dataclass(frozen=True)
class Testing:
    __test__ = False  # not a test class, wherever it is imported

    bug_tests_exercised: bool
    regression_tests_exercised: bool


@dataclass(frozen=True)
class ComponentMetrics:
    localization: LocalizationMetrics
    planning: Planning
    patching: Patching
    structure: Structure
    testing: Testing


@dataclass(frozen=True)
class EndToEnd:
    resolved: str
    regressions: int | None
    robustness: float | None


@dataclass(frozen=True)
class Economics:
    tokens: int | None
    calls: int | None
    cpu: float | None
    wall_time: float | None
    dollars: float | None


@dataclass(frozen=True)
class Scorecard:
    run_id: str
    task_id: str
    component_metrics: ComponentMetrics
    end_to_end: EndToEnd
    economics: Economics

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scorecard:
        """Rebuild a recorded scorecard; a missing or extra field is refused (exact records)."""

        def take(kind: type, value: Any, where: str) -> Any:
            if not isinstance(value, Mapping):
                raise ValueError(f"{where}: expected an object, got {value!r}")
            names = [f.name for f in fields(kind)]
            if set(value) != set(names):
                extra, missing = sorted(set(value) - set(names)), sorted(set(names) - set(value))
                raise ValueError(f"{where}: fields differ from the spec's (extra {extra}, missing {missing})")
            return value

        take(cls, data, "Scorecard")
        cm = take(ComponentMetrics, data["component_metrics"], "component_metrics")
        return cls(
            run_id=str(data["run_id"]),
            task_id=str(data["task_id"]),
            component_metrics=ComponentMetrics(
                localization=LocalizationMetrics(**take(LocalizationMetrics, cm["localization"], "localization")),
                planning=Planning(**take(Planning, cm["planning"], "planning")),
                patching=Patching(**take(Patching, cm["patching"], "patching")),
                structure=Structure(**take(Structure, cm["structure"], "structure")),
                testing=Testing(**take(Testing, cm["testing"], "testing")),
            ),
            end_to_end=EndToEnd(**take(EndToEnd, data["end_to_end"], "end_to_end")),
            economics=Economics(**take(Economics, data["economics"], "economics")),
        )


# ---------------------------------------------------------------------- computing the metrics


def _share(hit: Iterable[str], of: frozenset[str] | set[str]) -> float | None:
    return len(set(hit) & set(of)) / len(of) if of else None


def _file_of(item: str) -> str:
    return item.split("::", 1)[0]


def target_rank(retrieval: Sequence[str] | None, gold_files: Iterable[str]) -> int | None:
    """1-based rank of the first retrieved item in a gold-touched file (an item is a path, or
    ``path::symbol``); ``len(retrieval) + 1`` when none is; ``None`` without a retrieval order."""
    if retrieval is None:
        return None
    gold = set(gold_files)
    for rank, item in enumerate(retrieval, 1):
        if _file_of(item) in gold:
            return rank
    return len(retrieval) + 1


def obligations_of(instance_fields: Mapping[str, Any], gold_symbols: Iterable[str]) -> list[str]:
    """The instance's own ``obligations`` list when it has one, else the gold patch's touched symbols."""
    own = instance_fields.get("obligations")
    if isinstance(own, list) and all(isinstance(o, str) for o in own) and own:
        return list(own)
    return sorted(gold_symbols)


def _recovered(obligation: str, present: set[str]) -> bool:
    """An obligation ``path::qualname`` is met by that exact entity, or by its bare ``qualname``;
    a module-level one (``path::<module>``) or a file (``path``) also by the bare path."""
    if obligation in present:
        return True
    path, _, qualname = obligation.partition("::")
    if qualname and qualname != "<module>" and qualname in present:
        return True
    return (not qualname or qualname == "<module>") and path in present


def _exercised(tests: Sequence[Mapping[str, Any]], gate: str) -> bool:
    listed = [t for t in tests if t.get("gate") == gate]
    return all(t.get("outcome") in EXERCISED for t in listed)


def run_id_of(task_id: str, patch_ref: str, graded_at: Any, harness: Any) -> str:
    text = json.dumps([task_id, patch_ref, graded_at, harness], sort_keys=True)
    return "run-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def build_scorecard(
    *,
    task_id: str,
    envelope: Mapping[str, Any],
    instance_fields: Mapping[str, Any],
    gold: Any,
    candidate: Any,
    applied: bool,
    parse_ok: bool,
    build_ok: bool,
    plan: Sequence[str] | None = None,
    retrieval: Sequence[str] | None = None,
    reruns: Sequence[bool] = (),
) -> tuple[Scorecard, dict[str, Any]]:
    """The scorecard of one graded run, and the details it was computed from.

    ``gold`` and ``candidate`` are :class:`~.symbols.Touched` (files and entities), ``gold``
    ``None`` when the instance has no gold patch. ``envelope`` is the graded run's (its Score,
    tests and cost). ``reruns`` says, for each perturbed re-run, whether it was resolved.
    """
    score = envelope.get("score") or {}
    tests = envelope.get("tests") or []
    gold_files = frozenset(gold.files) if gold is not None else frozenset()
    gold_entities = frozenset(gold.symbols) if gold is not None else frozenset()
    cand_files, cand_entities = frozenset(candidate.files), frozenset(candidate.symbols)
    obligations = obligations_of(instance_fields, gold_entities)
    present = set(plan) if plan is not None else set(cand_entities)
    met = [o for o in obligations if _recovered(o, present)]
    p2p = score.get("pass_to_pass") or {}
    cost = envelope.get("cost") or {}
    card = Scorecard(
        run_id=run_id_of(task_id, str(score.get("patch_ref") or envelope.get("patch_ref")), score.get("graded_at"),
                         envelope.get("harness")),  # fmt: skip
        task_id=task_id,
        component_metrics=ComponentMetrics(
            localization=LocalizationMetrics(
                file_recall=_share(cand_files, gold_files),
                symbol_recall=_share(cand_entities, gold_entities),
                target_rank=target_rank(retrieval, gold_files),
            ),
            planning=Planning(obligations_recovered=len(met) / len(obligations) if obligations else None),
            patching=Patching(apply=applied, parse=parse_ok, build=build_ok),
            structure=Structure(
                correct_entities_touched=len(cand_entities & gold_entities) if gold is not None else None,
                unnecessary_entities_touched=len(cand_entities - gold_entities) if gold is not None else None,
            ),
            testing=Testing(
                bug_tests_exercised=bool(score) and _exercised(tests, "FAIL_TO_PASS"),
                regression_tests_exercised=bool(score) and _exercised(tests, "PASS_TO_PASS"),
            ),
        ),
        end_to_end=EndToEnd(
            resolved=score.get("resolved") or "not_resolved",
            regressions=(p2p["total"] - p2p["passed"]) if p2p else None,
            robustness=(sum(reruns) / len(reruns)) if reruns else None,
        ),
        economics=Economics(**{k: cost.get(k) for k in ("tokens", "calls", "cpu", "wall_time", "dollars")}),
    )
    details = {
        "gold": {"files": sorted(gold_files), "entities": sorted(gold_entities)} if gold is not None else None,
        "candidate": {"files": sorted(cand_files), "entities": sorted(cand_entities),
                      "unparsable": list(candidate.unparsable)},  # fmt: skip
        "matched_entities": sorted(cand_entities & gold_entities),
        "obligations": {"source": "instance" if obligations and obligations != sorted(gold_entities) else "gold patch",
                        "from": "plan" if plan is not None else "candidate patch", "all": obligations, "met": met},  # fmt: skip
        "retrieval": {"items": len(retrieval), "first_gold_item": _first_gold(retrieval, gold_files)} if retrieval is not None else None,
        "reruns": list(reruns),
        "no_verdict": not score,
    }
    return card, details


def _first_gold(retrieval: Sequence[str], gold_files: frozenset[str]) -> str | None:
    return next((item for item in retrieval if _file_of(item) in gold_files), None)


# ---------------------------------------------------------------------- comparing sets of runs

# (stage.metric, direction): +1 higher is better, -1 lower is better; in the coding loop's order.
METRICS: Final = (
    ("localization.file_recall", 1),
    ("localization.symbol_recall", 1),
    ("localization.target_rank", -1),
    ("planning.obligations_recovered", 1),
    ("patching.apply", 1),
    ("patching.parse", 1),
    ("patching.build", 1),
    ("structure.correct_entities_touched", 1),
    ("structure.unnecessary_entities_touched", -1),
    ("testing.bug_tests_exercised", 1),
    ("testing.regression_tests_exercised", 1),
    ("end_to_end.resolved", 1),
    ("end_to_end.regressions", -1),
    ("end_to_end.robustness", 1),
)
# Metrics that are shares of runs or of items: the bottleneck is the lowest of them.
RATES: Final = frozenset(
    {"localization.file_recall", "localization.symbol_recall", "planning.obligations_recovered", "patching.apply",
     "patching.parse", "patching.build", "testing.bug_tests_exercised", "testing.regression_tests_exercised"}
)  # fmt: skip
ECONOMICS: Final = ("tokens", "calls", "cpu", "wall_time", "dollars")
# Metrics that are 0 or 1 on each run: their mean is a rate, its interval Wilson's (:func:`mean_interval_of`).
BINARY: Final = frozenset(
    {"patching.apply", "patching.parse", "patching.build", "testing.bug_tests_exercised",
     "testing.regression_tests_exercised", "end_to_end.resolved"}
)  # fmt: skip
SIDE_KEYS: Final = ("a_interval", "a_note", "b_interval", "b_note", "side_method")  # each side's own interval
RATE_METHOD: Final = ("Wilson score interval over tasks (scipy.stats.norm; its size the effective number of tasks, "
                      "(sum of runs)^2 / sum of (runs per task)^2: the number of tasks when each ran equally often)")  # fmt: skip


def _value(card: Mapping[str, Any], metric: str) -> float | None:
    stage, name = metric.split(".")
    if stage == "end_to_end":
        value = card["end_to_end"][name]
        if name == "resolved":
            return 1.0 if value == "resolved" else 0.0
    else:
        value = card["component_metrics"][stage][name]
    if value is None:
        return None
    return float(value)


def means(cards: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Per metric, the mean over the scorecards where it is defined (booleans as shares)."""
    result: dict[str, float | None] = {}
    for metric, _ in METRICS:
        values = [v for v in (_value(c, metric) for c in cards) if v is not None]
        result[metric] = sum(values) / len(values) if values else None
    for field in ECONOMICS:
        values = [c["economics"][field] for c in cards if c["economics"].get(field) is not None]
        result[f"economics.{field}"] = sum(values) / len(values) if values else None
    return result


def show_value(metric: str, value: float | None) -> str:
    """A metric's value as the tables and the attribution sentence print it."""
    if value is None:
        return "n/a"
    if metric in RATES or metric in ("end_to_end.resolved", "end_to_end.robustness"):
        return f"{value:.0%}"
    return f"{value:.4g}"


_show = show_value


class ScorecardError(ValueError):
    """A comparison that cannot be made (two sets of runs with no task in common)."""


STAGES: Final = ("localization", "planning", "patching", "structure", "testing")
SHOWN_TASKS: Final = 10  # task ids named in the sentence; the JSON lists them all
ALPHA: Final = 0.05  # every interval the scorecard prints is a 95% one
TIE: Final = 1e-12  # a change this small is float noise, not a move
PAIRED_METHOD: Final = ("intervals of each change over the paired tasks: Student's t over the per-task differences "
                        "(scipy.stats.t); none on one task")  # fmt: skip


def _task_means(cards: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per task, the means of its runs (a task graded twice weighs as much as a task graded once)."""
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for card in cards:
        by_task.setdefault(str(card["task_id"]), []).append(card)
    return {task: means(runs) for task, runs in by_task.items()}


def _both(a: Mapping[str, Mapping[str, float | None]], b: Mapping[str, Mapping[str, float | None]],
          tasks: Sequence[str], metric: str) -> list[str]:  # fmt: skip
    """The tasks (of ``tasks``) where both sides have ``metric``."""
    return [task for task in tasks if a[task][metric] is not None and b[task][metric] is not None]


def _paired_mean(a: Mapping[str, Mapping[str, float | None]], b: Mapping[str, Mapping[str, float | None]],
                 tasks: Sequence[str], metric: str) -> tuple[float | None, float | None, int]:  # fmt: skip
    """A metric's means on A and on B over the same tasks: the paired tasks where both sides have it."""
    both = _both(a, b, tasks, metric)
    if not both:
        return None, None, 0
    return (sum(a[task][metric] or 0.0 for task in both) / len(both),
            sum(b[task][metric] or 0.0 for task in both) / len(both), len(both))  # fmt: skip


def _bounded(metric: str) -> bool:
    """A share (of runs or of items): its change lies in [-1, 1] and is shown in percentage points."""
    return metric in RATES or metric in ("end_to_end.resolved", "end_to_end.robustness")


def _paired_change(a: Mapping[str, Mapping[str, float | None]], b: Mapping[str, Mapping[str, float | None]],
                   tasks: Sequence[str], metric: str) -> dict[str, Any]:  # fmt: skip
    """A metric over the ``tasks`` where both sides have it: ``a`` and ``b`` (means) each with its own
    interval over those tasks (``a_interval``, ``a_note``, ``b_interval``, ``b_note``, made as
    ``side_method`` says: :func:`mean_interval_of`), ``tasks`` (how many), and the change with its
    interval over those tasks (:func:`.ab_inference.paired_difference`: Student's t over the paired
    per-task differences; none on one task)."""
    from .ab_inference import paired_difference

    both = _both(a, b, tasks, metric)
    found = paired_difference([a[t][metric] or 0.0 for t in both], [b[t][metric] or 0.0 for t in both], ALPHA,
                              "task", (-1.0, 1.0) if _bounded(metric) else None)  # fmt: skip
    va, vb, count = _paired_mean(a, b, tasks, metric)
    side_a, side_b = (mean_interval_of(metric, [side[t][metric] or 0.0 for t in both], both) for side in (a, b))
    return {"metric": metric, "a": va, "b": vb, "tasks": count, "delta": found["delta"], "interval": found["interval"],
            "note": found["note"], "method": found["method"], "a_interval": side_a["interval"], "a_note": side_a["note"],
            "b_interval": side_b["interval"], "b_note": side_b["note"], "side_method": side_a["method"]}  # fmt: skip


def show_change(metric: str, value: float | None) -> str:
    """A change of ``metric`` as printed: a share's in percentage points ("+80.0 points"), a count's as is."""
    if value is None:
        return "n/a"
    return f"{value * 100:+.1f} points" if _bounded(metric) else f"{value:+.4g}"


def _no_spread(found: Mapping[str, Any]) -> bool:
    return "no spread" in str(found.get("note") or "")


def show_change_interval(metric: str, found: Mapping[str, Any]) -> str:
    """A change's interval as printed ("[+24.5, +100.0]", with "no spread" when every task moved by
    the same amount), or why there is none ("n/a: one task")."""
    if found.get("interval") is None:
        return str(found.get("note") or "n/a")
    low, high = (show_change(metric, v).removesuffix(" points") for v in found["interval"])
    return f"[{low}, {high}]" + (", no spread" if _no_spread(found) else "")


def show_delta(metric: str, found: Mapping[str, Any]) -> str:
    """A change with its uncertainty, as the sentence prints it: "+80.0 points, 95% CI [+24.5,
    +100.0], 5 tasks" (a share's change in percentage points), "+1, n/a: one task"."""
    if found.get("delta") is None:
        return "n/a"
    text = show_change(metric, found["delta"])
    if found.get("interval") is None:
        return f"{text}, {found.get('note') or 'n/a'}"
    low, high = (show_change(metric, v).removesuffix(" points") for v in found["interval"])
    tasks = found.get("tasks", found.get("n"))
    return f"{text}, {1 - ALPHA:.0%} CI [{low}, {high}], {tasks} tasks" + (", no spread" if _no_spread(found) else "")


def _named(tasks: Sequence[str]) -> str:
    shown = ", ".join(tasks[:SHOWN_TASKS])
    return shown + (f", and {len(tasks) - SHOWN_TASKS} more" if len(tasks) > SHOWN_TASKS else "")


def _pairing_note(paired: Sequence[str], only_a: Sequence[str], only_b: Sequence[str], runs: Mapping[str, int]) -> str:
    head = f"paired on the {len(paired)} task(s) both sides have ({runs['a']} run(s) of A, {runs['b']} of B)"
    if not only_a and not only_b:
        return f"{head}, none dropped"
    dropped = [f"dropped from {side}: {len(tasks)} task(s) only it has ({_named(tasks)})"
               for side, tasks in (("A", only_a), ("B", only_b)) if tasks]  # fmt: skip
    return f"{head}; {'; '.join(dropped)}"


def diff(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Compare two sets of scorecards (A before, B after) stage by stage and name what moved.

    The comparison is paired: only the tasks both sides have are compared, each task weighing the
    same on both sides (its runs averaged first), and a metric over the tasks where both sides have
    it; the tasks only one side has are dropped and named (``pairing``). No task in common is a
    :class:`ScorecardError`. A metric moved when its mean differs. Every change (``delta``) carries
    its 95% interval over the paired tasks (Student's t over the per-task differences, ``method``)
    and the number of tasks it rests on; one task has none (``note``: "n/a: one task"). Each side's
    value (``a``, ``b``) carries its own 95% interval over the same tasks (``a_interval``,
    ``b_interval``, made as ``side_method`` says: a rate's Wilson interval, another mean's bootstrap
    over tasks; :func:`mean_interval_of`).

    The attribution is made task by task (:func:`credit`): a task whose resolution rose is credited
    to the stages that improved on that task (a metric of the stage better there, none worse), and
    only to them; a task whose resolution fell is charged to the stages that got worse on it. Per
    stage, the tasks credited and the change of its metrics on those tasks; a gain (or loss) on tasks
    where no stage moved that way is said to be unattributed. A stage that moved only on tasks whose
    resolution did not move is never credited. When no task's resolution moved while a stage
    improved, the gain is held by a later stage: the lowest rate, after the change, among the stages
    after the gain that did not gain too (the bottleneck), or, when every one of them is at 100%, by
    the fix itself (everything upstream is right and the tests still fail).
    """
    per_a, per_b = _task_means(a), _task_means(b)
    paired = [task for task in per_a if task in per_b]
    only_a = [task for task in per_a if task not in per_b]
    only_b = [task for task in per_b if task not in per_a]
    if not paired:
        raise ScorecardError(f"A ({len(a)} run(s) of {len(per_a)} task(s): {_named(list(per_a)) or 'none'}) and B "
                             f"({len(b)} run(s) of {len(per_b)} task(s): {_named(list(per_b)) or 'none'}) have no task "
                             "in common: a comparison is made on the tasks both sides ran (select runs of the same "
                             "tasks)")  # fmt: skip
    shared = set(paired)
    runs_compared = {"a": sum(str(c["task_id"]) in shared for c in a), "b": sum(str(c["task_id"]) in shared for c in b)}
    rows: list[dict[str, Any]] = []
    for metric, direction in METRICS:
        found = _paired_change(per_a, per_b, paired, metric)
        va, vb = found["a"], found["b"]
        moved = va is not None and vb is not None and abs(vb - va) > TIE
        better = moved and (vb - va) * direction > 0
        rows.append({"metric": metric, "a": va, "b": vb, "tasks": found["tasks"], "moved": moved,
                     "change": ("better" if better else "worse") if moved else ("flat" if va is not None and vb is not None else "n/a"),
                     "delta": found["delta"], "interval": found["interval"], "note": found["note"],
                     "method": found["method"], **{key: found[key] for key in SIDE_KEYS}})  # fmt: skip
    economics = [_paired_change(per_a, per_b, paired, f"economics.{field}") for field in ECONOMICS]
    note = _pairing_note(paired, only_a, only_b, runs_compared)
    after: dict[str, float | None] = {row["metric"]: row["b"] for row in rows}
    credited = credit(per_a, per_b, paired)
    return {"runs": {"a": len(a), "b": len(b)},
            "pairing": {"tasks": len(paired), "paired": paired, "runs_compared": runs_compared,
                        "dropped": {"a": {"tasks": only_a, "runs": len(a) - runs_compared["a"]},
                                    "b": {"tasks": only_b, "runs": len(b) - runs_compared["b"]}},
                        "note": note},
            "alpha": ALPHA, "interval": f"{1 - ALPHA:.0%} " + PAIRED_METHOD,
            "metrics": rows, "economics": economics, "stages": _stages(rows), "credit": credited,
            "attribution": f"{note}: {_attribute(rows, after, credited)}"}  # fmt: skip



def _move(a: Mapping[str, float | None], b: Mapping[str, float | None], metric: str, direction: int) -> str:
    """How one metric moved on one task: ``better``, ``worse``, ``flat``, or ``n/a`` (a side lacks it)."""
    va, vb = a[metric], b[metric]
    if va is None or vb is None:
        return "n/a"
    if abs(vb - va) <= TIE:
        return "flat"
    return "better" if (vb - va) * direction > 0 else "worse"


def _stage_move(a: Mapping[str, float | None], b: Mapping[str, float | None], stage: str) -> str:
    """How a stage moved on one task: ``improved`` (a metric better, none worse), ``worse``, ``mixed``,
    ``flat`` or ``n/a``; the same rule as :func:`_stages`, on that task alone."""
    changes = {_move(a, b, metric, direction) for metric, direction in METRICS if metric.split(".")[0] == stage}
    if "better" in changes and "worse" in changes:
        return "mixed"
    if "better" in changes:
        return "improved"
    if "worse" in changes:
        return "worse"
    return "flat" if "flat" in changes else "n/a"


def credit(a: Mapping[str, Mapping[str, float | None]], b: Mapping[str, Mapping[str, float | None]],
           tasks: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    """Each task's change in resolution, credited only to the stages that moved on that task in its
    direction: a task that gained (its resolve rate rose) to every stage that improved on it, a task
    that lost to every stage that got worse on it (so a stage shares the credit of a task only with
    the other stages that moved there, and never gets a task where it did not move).

    ``a`` and ``b`` are the per-task means of each side. Returns ``gained`` and ``lost`` (task ids),
    ``stages`` (per stage: ``gained`` and ``lost``, the tasks credited or charged; ``on_gained`` and
    ``on_lost``, the change of each of its metrics that moved on those tasks, over those tasks, with
    its interval; ``moved_elsewhere``, the tasks where it moved whose resolution did not move that
    way), ``unattributed`` (the tasks that gained, or lost, with no stage moving that way on them),
    ``nothing_moved`` (of those, the ones where no stage moved at all) and ``by_task`` (how each stage
    moved on each task that gained or lost)."""
    resolved = "end_to_end.resolved"
    gained = [t for t in tasks if _move(a[t], b[t], resolved, 1) == "better"]
    lost = [t for t in tasks if _move(a[t], b[t], resolved, 1) == "worse"]
    moves = {t: {stage: _stage_move(a[t], b[t], stage) for stage in STAGES} for t in tasks}
    stages: dict[str, Any] = {}
    for stage in STAGES:
        won = [t for t in gained if moves[t][stage] == "improved"]
        charged = [t for t in lost if moves[t][stage] == "worse"]
        elsewhere = [t for t in tasks if moves[t][stage] in ("improved", "worse", "mixed") and t not in won and t not in charged]
        stages[stage] = {"gained": won, "lost": charged, "on_gained": _on(a, b, won, stage),
                         "on_lost": _on(a, b, charged, stage), "moved_elsewhere": elsewhere}  # fmt: skip

    def still(group: Sequence[str], way: str) -> list[str]:
        return [t for t in group if all(moves[t][stage] != way for stage in STAGES)]

    def quiet(group: Sequence[str]) -> list[str]:
        return [t for t in group if all(moves[t][stage] in ("flat", "n/a") for stage in STAGES)]

    unattributed = {"gained": still(gained, "improved"), "lost": still(lost, "worse")}
    return {"gained": gained, "lost": lost, "stages": stages, "unattributed": unattributed,
            "by_task": {t: moves[t] for t in (*gained, *lost)},
            "nothing_moved": {kind: quiet(group) for kind, group in unattributed.items()},
            "rule": "a task's change in resolution is credited only to the stages that moved on that task in its "
                    "direction (improved for a gain, got worse for a loss)"}  # fmt: skip


def _on(a: Mapping[str, Mapping[str, float | None]], b: Mapping[str, Mapping[str, float | None]],
        tasks: Sequence[str], stage: str) -> list[dict[str, Any]]:  # fmt: skip
    """The change of each metric of ``stage`` that moved on at least one of ``tasks``, over ``tasks``."""
    if not tasks:
        return []
    return [_paired_change(a, b, tasks, metric) for metric, direction in METRICS if metric.split(".")[0] == stage
            and any(_move(a[t], b[t], metric, direction) in ("better", "worse") for t in tasks)]  # fmt: skip


def _stages(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each component stage as a whole: ``improved`` (a metric better, none worse), ``worse`` (a
    metric worse, none better), ``mixed`` (both), ``flat`` (none moved) or ``n/a`` (none compared)."""
    result = {}
    for stage in STAGES:
        changes = {row["change"] for row in rows if row["metric"].split(".")[0] == stage}
        if "better" in changes and "worse" in changes:
            result[stage] = "mixed"
        elif "better" in changes:
            result[stage] = "improved"
        elif "worse" in changes:
            result[stage] = "worse"
        else:
            result[stage] = "flat" if "flat" in changes else "n/a"
    return result


def _moved_text(row: Mapping[str, Any]) -> str:
    """``metric A → B (change, interval, tasks)``."""
    metric = row["metric"]
    return f"{metric} {_show(metric, row['a'])} → {_show(metric, row['b'])} ({show_delta(metric, row)})"


def _credit_text(credited: Mapping[str, Any], kind: str) -> list[str]:
    """The sentence's clauses for the tasks that gained (``kind`` "gained") or lost ("lost")."""
    tasks = credited[kind]
    if not tasks:
        return []
    gain = kind == "gained"
    what, verb, way = ("gain", "credited", "improved") if gain else ("loss", "charged", "got worse")
    stages = credited["stages"]
    named = [(stage, stages[stage][kind], stages[stage]["on_" + kind]) for stage in STAGES if stages[stage][kind]]
    clauses = []
    if named:
        parts = [f"{stage} on {len(own)} of them ({_named(own)}: " + "; ".join(_moved_text(row) for row in on) + ")"
                 for stage, own, on in named]  # fmt: skip
        clauses.append(f"the {what} on {len(tasks)} task(s) ({_named(tasks)}) is {verb}, task by task, to the stages "
                       f"that {way} on them: " + ", ".join(parts))  # fmt: skip
    bare = credited["unattributed"][kind]
    if bare:
        clauses.append(f"no stage explains the {what} on {len(bare)} task(s) ({_named(bare)}): unattributed, no stage "
                       f"{way} on them")  # fmt: skip
    moves = credited["by_task"]
    against = [f"{label}: {', '.join(found)}" for label in (("worse", "mixed") if gain else ("improved", "mixed"))
               if (found := [stage for stage in STAGES if any(moves[t][stage] == label for t in tasks)])]  # fmt: skip
    if against:
        clauses.append(f"never {verb} (on those tasks {'; '.join(against)})")
    idle = [f"{stage} ({_named(stages[stage]['moved_elsewhere'])})" for stage in STAGES
            if stages[stage]["moved_elsewhere"] and not stages[stage][kind]
            and not any(t in tasks for t in stages[stage]["moved_elsewhere"])]  # fmt: skip
    if idle:
        clauses.append(f"not {verb} (moved only on tasks whose resolution did not {'rise' if gain else 'fall'}): "
                       + ", ".join(idle))  # fmt: skip
    return clauses


def _attribute(rows: Sequence[Mapping[str, Any]], after: Mapping[str, float | None], credited: Mapping[str, Any]) -> str:
    by_metric = {row["metric"]: row for row in rows}
    stages = _stages(rows)
    moved = [row for row in rows if row["moved"] and not row["metric"].startswith("end_to_end")]
    end = by_metric["end_to_end.resolved"]
    phrase = "; ".join(_moved_text(r) for r in moved)
    improved = [stage for stage in STAGES if stages[stage] == "improved"]
    if credited["gained"] or credited["lost"]:
        head = _moved_text(end)
        quiet = all(not credited["stages"][s]["gained"] and not credited["stages"][s]["lost"]
                    and not credited["stages"][s]["moved_elsewhere"] for s in STAGES)  # fmt: skip
        if quiet:
            return f"{head}; no stage moved: the change is in the fix itself"
        clauses = _credit_text(credited, "gained") + _credit_text(credited, "lost")
        return f"{phrase + '; ' if phrase else ''}{head}: {'; '.join(clauses)}"
    if not moved:
        return "no stage moved"

    def listing(*groups: tuple[str, list[str]]) -> list[str]:
        return [f"{label}: {', '.join(names)}" for label, names in groups if names]

    worse = [stage for stage in STAGES if stages[stage] == "worse"]
    mixed = [stage for stage in STAGES if stages[stage] == "mixed"]
    if not improved:
        return f"{phrase}; end_to_end.resolved flat (no stage improved" + "".join(
            f"; {item}" for item in listing(("worse", worse), ("mixed", mixed))) + ")"  # fmt: skip
    first = next(index for index, (metric, _) in enumerate(METRICS) if metric.split(".")[0] == improved[0])
    # the stages after the gain that did not gain with it: the lowest of them is where the gap sits
    later = [m for m, _ in METRICS[first + 1 :] if m in RATES and after.get(m) is not None
             and m.split(".")[0] != improved[0] and by_metric[m]["change"] != "better"]  # fmt: skip
    if later:
        bottleneck = min(later, key=lambda m: after[m])  # type: ignore[arg-type,return-value]
        if (after[bottleneck] or 0.0) < 1.0:
            return f"{phrase}; end_to_end.resolved flat: the gain is held by a later stage ({_moved_text(by_metric[bottleneck])})"
    return (f"{phrase}; end_to_end.resolved flat: every later stage that did not gain is at 100%, "
            "the gain is held by the fix itself")  # fmt: skip


def mean_intervals(cards: Sequence[Mapping[str, Any]], alpha: float = ALPHA) -> dict[str, dict[str, Any]]:
    """Per metric, the mean over the runs where it is defined (as :func:`means`) with its 1 − alpha
    interval over tasks (:func:`mean_interval_of`: Wilson's for a rate, a seeded bootstrap with a
    task's runs resampled together for any other mean); one task: a rate's Wilson interval, no
    other ("n/a: one task")."""
    result: dict[str, dict[str, Any]] = {}
    names = [metric for metric, _ in METRICS] + [f"economics.{field}" for field in ECONOMICS]
    for metric in names:
        pairs = [(str(c["task_id"]), v) for c in cards
                 if (v := (_value(c, metric) if not metric.startswith("economics.") else _economic(c, metric))) is not None]  # fmt: skip
        result[metric] = mean_interval_of(metric, [v for _, v in pairs], [t for t, _ in pairs], alpha)
    return result


def mean_interval_of(metric: str, values: Sequence[float], tasks: Sequence[str], alpha: float = ALPHA) -> dict[str, Any]:
    """The mean of ``values`` (one per run; ``tasks[i]`` the task of value i) and its 1 − alpha
    interval over tasks. A rate (a metric 0 or 1 on each run, :data:`BINARY`): the Wilson score
    interval (:func:`.cost_ledger.wilson`) with the effective number of tasks as its size
    (:func:`.cost_ledger.effective_tasks`; a task's mean has a variance of at most p(1 − p), so it
    is conservative); a rate of 0 or 1 out of n keeps a real bound on its open side, never a
    zero-width interval. Any other mean: a seeded BCa bootstrap over tasks, a task's runs resampled
    together (:func:`.ab_inference.mean_interval`; every task alike: a share's interval within
    [0, 1], a count's none), none on one task. Returns ``mean``, ``interval``, ``n`` (tasks),
    ``runs``, ``unit``, ``alpha``, ``note``, ``method``."""
    from .ab_inference import mean_interval, no_interval
    from .cost_ledger import effective_tasks, wilson

    if metric not in BINARY:
        found = mean_interval(list(values), alpha, unit="task", groups=list(tasks),
                              bounds=(0.0, 1.0) if _bounded(metric) else None)  # fmt: skip
        found["runs"] = found.pop("values")
        return found
    distinct = len(set(tasks))
    size = effective_tasks(list(tasks))
    mean = sum(values) / len(values) if values else None
    return {"mean": mean, "interval": wilson(mean, size, alpha) if mean is not None else None,
            "n": distinct, "runs": len(values), "effective_tasks": size, "unit": "tasks", "alpha": alpha,
            "note": None if values else no_interval(0, "task"), "method": RATE_METHOD}  # fmt: skip


def _economic(card: Mapping[str, Any], metric: str) -> float | None:
    value = card["economics"].get(metric.split(".", 1)[1])
    return None if value is None else float(value)


def show_side(metric: str, row: Mapping[str, Any], side: str) -> str:
    """One side's value of a diff row with its interval: "20% [4%, 62%]", "0.25 (n/a: one task)"."""
    value = row.get(side)
    if value is None:
        return "n/a"
    shown = show_interval(metric, {"interval": row.get(f"{side}_interval"), "note": row.get(f"{side}_note")})
    return f"{show_value(metric, value)} {shown if shown.startswith('[') else f'({shown})'}"


def show_interval(metric: str, found: Mapping[str, Any]) -> str:
    """A mean's interval as the table prints it: "[40%, 80%]", or why there is none."""
    if found.get("interval") is None:
        return str(found.get("note") or "n/a")
    low, high = found["interval"]
    return f"[{show_value(metric, low)}, {show_value(metric, high)}]" + (", no spread" if _no_spread(found) else "")
