"""The cost ledger (spec 5.3, 5.4, build phase 7): what a graded run cost, and what it bought.

Every graded run gets a ``Cost`` with exactly the spec's five fields::

    Cost { tokens, calls, cpu, wall_time, dollars }

``cpu`` and ``wall_time`` are measured by the grader (the CPU-seconds of the test
process tree; the wall-clock seconds of the grading). ``tokens``, ``calls`` and the
model's dollars come from the harness that produced the candidate, read by
:func:`parse_harness_cost`; ``None`` (JSON ``null``) when the harness did not say,
never a made-up zero. ``dollars`` is the model's dollars plus the compute dollars
(``cpu`` times a configurable rate per CPU-second); how it was made up lives beside
the record in ``breakdown``.

:func:`summarize` turns graded runs into the per-harness report of ``objective-score
costs``: the resolve rate, resolves per dollar / per 1,000 tokens / per wall-clock
hour / per CPU-second, and a ranking by cost-resolve Pareto layer, so that equal
resolve rates at different costs are never ranked equal. Every number has its
uncertainty beside it (:func:`uncertainty`): the distribution of each per-run cost
(mean, sd, median, p10, p90) and 95% intervals, from :mod:`.ab_inference`.

Pure functions; this module never imports pytest.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any, Final, Iterable, Mapping, Sequence

from . import nesting
from .remade import Remade

__all__ = [
    "COST_FIELDS",
    "DEFAULT_COMPUTE_RATE",
    "CostError",
    "HarnessCost",
    "HarnessSummary",
    "NotJson",
    "RunCost",
    "UnreadableInput",
    "effective_tasks",
    "finite_number",
    "input_problem",
    "input_text",
    "load_harness_cost",
    "loads",
    "parse_harness_cost",
    "per_resolve",
    "rate_interval",
    "rate_over_cost",
    "run_cost",
    "runs_from_entries",
    "shown",
    "summarize",
    "uncertainty",
    "wilson",
]

COST_FIELDS: Final = ("tokens", "calls", "cpu", "wall_time", "dollars")
# Dollars per CPU-second of grading: $0.036 per CPU-hour, a round figure near an on-demand
# cloud vCPU. Set your own with --compute-rate / --objective-compute-rate; the rate used is
# recorded beside every cost.
DEFAULT_COMPUTE_RATE: Final = 0.00001
INFRA_CLASSES: Final = frozenset({"setup", "verifier"})
UNNAMED: Final = "unnamed"


class CostError(Remade, ValueError):
    """A harness cost that cannot be read: names the source, the field and what was expected."""

    def __init__(self, source: str, field: str | None, problem: str) -> None:
        self.source, self.field, self.problem = source, field, problem
        where = f"{source}: field {field!r}" if field else source
        super().__init__(f"{where}: {problem}")



@dataclass(frozen=True)
class HarnessCost:
    """What the harness that produced a candidate says it spent (None: not reported)."""

    tokens: int | None = None
    calls: int | None = None
    dollars: float | None = None
    harness: str | None = None

    @property
    def reported(self) -> bool:
        return not (self.tokens is None and self.calls is None and self.dollars is None)


def finite_number(value: float) -> bool:
    """Whether a number is one a float holds finitely: NaN, infinities and whole numbers beyond a
    float's range (``math.isfinite(10**400)`` raises) are not counts or dollars."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def shown(value: Any) -> str:
    """``value`` quoted back in a message, cut after 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _count(value: Any, source: str, field: str) -> int | None:
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not finite_number(value) or value < 0
            or value != int(value)):  # fmt: skip
        raise CostError(source, field, f"expected a whole number >= 0, got {shown(value)}")
    return int(value)


def _money(value: Any, source: str, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not finite_number(value) or value < 0:
        raise CostError(source, field, f"expected a number of dollars >= 0, got {shown(value)}")
    return float(value)


def parse_harness_cost(data: Mapping[str, Any], source: str) -> HarnessCost:
    """Read a harness's cost from a cost JSON or a prediction row.

    Accepted spellings, first match wins:

    * ``tokens``, ``calls``, ``dollars`` at the top level, or inside a ``cost`` object;
    * SWE-agent's ``model_stats``: ``tokens_sent + tokens_received``, ``api_calls``,
      ``instance_cost``.

    The harness's name is ``harness`` or ``model_name_or_path`` when present.
    """
    if not isinstance(data, Mapping):
        raise CostError(source, None, f"expected a JSON object, got {type(data).__name__}")
    name = data.get("harness", data.get("model_name_or_path"))
    if name is not None and not isinstance(name, str):
        raise CostError(source, "harness" if "harness" in data else "model_name_or_path", "expected a string")
    body: Mapping[str, Any] = data
    prefix = ""
    if "cost" in data and data["cost"] is not None:
        if not isinstance(data["cost"], Mapping):
            raise CostError(source, "cost", f"expected an object with tokens, calls, dollars; got {data['cost']!r}")
        body, prefix = data["cost"], "cost."
    elif isinstance(data.get("model_stats"), Mapping):
        stats = data["model_stats"]
        sent = _count(stats.get("tokens_sent"), source, "model_stats.tokens_sent")
        received = _count(stats.get("tokens_received"), source, "model_stats.tokens_received")
        tokens = None if sent is None and received is None else (sent or 0) + (received or 0)
        return HarnessCost(
            tokens=tokens,
            calls=_count(stats.get("api_calls"), source, "model_stats.api_calls"),
            dollars=_money(stats.get("instance_cost"), source, "model_stats.instance_cost"),
            harness=name,
        )
    unknown = sorted(set(body) & {"token", "n_tokens", "cost_usd", "usd", "price"})
    if unknown:
        raise CostError(source, prefix + unknown[0], "not a cost field; use tokens, calls and dollars")
    return HarnessCost(
        tokens=_count(body.get("tokens"), source, prefix + "tokens"),
        calls=_count(body.get("calls"), source, prefix + "calls"),
        dollars=_money(body.get("dollars"), source, prefix + "dollars"),
        harness=name,
    )


# ---------------------------------------------------------------------- reading JSON inputs
#
# What every reader of the batch, A/B, judged and cost files shares: a file read once through
# inputs.py and bounded, and JSON refused when it holds what no ledger entry can. Kept in this module,
# the lowest of those readers (batch, ab and judged import it; it imports none of them).


class UnreadableInput(ValueError):
    """An input file that cannot be read (missing, a named pipe nobody writes to, a device, too large,
    not UTF-8): one line naming it and what was expected."""


MAX_DIGITS: Final = 4300
"""Digits of a whole number in a JSON input, at most (Python's own limit of reading one: no count,
seed or score is that long)."""


class NotJson(ValueError):
    """A JSON text holding what JSON does not (NaN, Infinity) or a number too long to be read."""


def _constant(name: str) -> Any:
    raise NotJson(f"{name} is not a JSON value (JSON has no NaN or Infinity; no digest or ledger can hold one): "
                  "write null or a number")  # fmt: skip


def _whole(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise NotJson(f"a number of {digits} digits: expected at most {MAX_DIGITS} (no count, seed or score is that long)")
    return int(text)


def _real(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        quoted = text if len(text) <= 24 else text[:20] + "..."
        raise NotJson(f"the number {quoted} is too large to be read (beyond a double's range): expected a finite number")
    return value


_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(value: Any) -> str | None:
    """The first string (or key) in a parsed JSON value that is not Unicode text (a lone surrogate,
    ``"\\ud800"``: it cannot be written as UTF-8), or None; walked iteratively."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return node
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def loads(text: str) -> Any:
    """``json.loads`` for every JSON input of a batch, an A/B run, a judged file, a manifest or a cost
    file: nested at most :data:`.nesting.LIMIT` deep (:class:`.nesting.TooDeep`, a JSON decode
    error), and :class:`NotJson` for ``NaN``, ``Infinity``, a whole number of more than
    :data:`MAX_DIGITS` digits, one beyond a float's range, or a string holding a lone surrogate
    (``"\\ud800"``): none of them can be held by a ledger entry, and each would end in a traceback
    later instead of a line now."""
    value = nesting.loads(text, parse_constant=_constant, parse_int=_whole, parse_float=_real)
    if _SURROGATE_ESCAPE.search(text):  # only an escape in the text makes one: most texts are never walked
        found = _lone_surrogate(value)
        if found is not None:
            at = next(i for i, c in enumerate(found) if "\ud800" <= c <= "\udfff")
            raise NotJson(f"a string holding a lone surrogate ({found[at]!r} at character {at}): not Unicode text, "
                          "it can be neither graded nor recorded: expected UTF-8 text")  # fmt: skip
    return value


def _size(limit: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if limit >= 1 << shift and limit % (1 << shift) == 0:
            return f"{limit >> shift} {unit}"
    return f"{limit} bytes"


def input_problem(path: str | Path, problem: str, expected: str) -> str:
    """Why an input cannot be read (:class:`.inputs.InputProblem`), in one phrase with what was
    expected (unless it says so already): a path that is not there at all "cannot be read"."""
    from .inputs import stat_problem

    if stat_problem(path)[0] is None:  # missing, a link loop, a folder that cannot be entered
        problem = f"cannot be read ({problem})"
    return problem if "expected" in problem else f"{problem}: expected {expected}"


def input_text(path: str | Path, limit: int, expected: str, option: str = "") -> str:
    """The text of an input file, read once through :func:`.inputs.read_bytes` (a named pipe nobody
    writes to and a device are refused at once, ``<(...)`` and ``-`` are read as they come) and at most
    ``limit`` bytes of it: a larger one is refused, never read to its end. Every problem is a
    :class:`UnreadableInput` of one line, ``{option}{path}: why: expected {expected}``."""
    from .inputs import InputProblem, read_bytes
    from .outputs import not_text

    try:
        data = read_bytes(path, limit + 1)
    except InputProblem as exc:
        raise UnreadableInput(f"{option}{path}: {input_problem(path, str(exc), expected)}") from None
    if len(data) > limit:
        raise UnreadableInput(f"{option}{path}: larger than {_size(limit)}: expected {expected}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableInput(not_text(option, path, exc, expected)) from None


COST_FILE_BYTES: Final = 1 << 20  # a cost file is a few numbers: a larger one (a pipe that never ends) is refused


def load_harness_cost(path: str | Path) -> HarnessCost:
    """A harness cost JSON file (``--cost FILE`` / ``--objective-cost=FILE``), read once through
    :func:`input_text` (a named pipe nobody writes to, a device or a file over
    :data:`COST_FILE_BYTES` refused) and :func:`loads` (NaN, numbers too long to read refused)."""
    path = Path(path)
    try:
        text = input_text(path, COST_FILE_BYTES, "a JSON object of tokens, calls and dollars")
    except UnreadableInput as exc:
        raise CostError(str(path), None, str(exc).removeprefix(f"{path}: ")) from None
    try:
        data = loads(text)
    except NotJson as exc:
        raise CostError(str(path), None, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise CostError(str(path), None, f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return parse_harness_cost(data, str(path))


def run_cost(harness: HarnessCost | None, cpu: float, wall_time: float, rate: float) -> dict[str, Any]:
    """The cost entry of one graded run: the spec's ``Cost`` and, beside it, how it was made up."""
    harness = harness or HarnessCost()
    compute = cpu * rate
    dollars = compute + (harness.dollars or 0.0)
    return {
        "cost": {
            "tokens": harness.tokens,
            "calls": harness.calls,
            "cpu": round(cpu, 6),
            "wall_time": round(wall_time, 6),
            "dollars": round(dollars, 9),
        },
        "breakdown": {
            "model_dollars": harness.dollars,
            "compute_dollars": round(compute, 9),
            "compute_rate_per_cpu_second": rate,
            "harness_reported": harness.reported,
        },
    }


# ---------------------------------------------------------------------- the costs report


@dataclass(frozen=True)
class RunCost:
    """One graded run as the costs report sees it."""

    harness: str
    instance_id: str
    patch_ref: str
    resolved: bool
    failure_class: str
    cost: Mapping[str, Any]
    model_dollars_reported: bool
    seq: int = 0
    benchmark: str = "unknown"

    @property
    def infrastructure(self) -> bool:
        return self.failure_class in INFRA_CLASSES


@dataclass(frozen=True)
class HarnessSummary:
    harness: str
    runs: int
    resolved: int
    infrastructure_failures: int
    totals: Mapping[str, float | int | None]
    ratios: Mapping[str, float | None]
    notes: tuple[str, ...]
    rank: int = 0
    pareto_layer: int = 0
    dominated_by: tuple[str, ...] = ()
    uncertainty: Mapping[str, Any] = dataclass_field(default_factory=dict)

    @property
    def resolve_rate(self) -> float | None:
        return self.resolved / self.runs if self.runs else None

    @property
    def dollars_per_run(self) -> float | None:
        dollars = self.totals.get("dollars")
        return dollars / self.runs if self.runs and dollars is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "harness": self.harness,
            "rank": self.rank,
            "pareto_layer": self.pareto_layer,
            "on_pareto_front": self.pareto_layer == 1,
            "dominated_by": list(self.dominated_by),
            "runs": self.runs,
            "resolved": self.resolved,
            "resolve_rate": self.resolve_rate,
            "infrastructure_failures_excluded": self.infrastructure_failures,
            "dollars_per_run": self.dollars_per_run,
            "totals": dict(self.totals),
            "ratios": dict(self.ratios),
            "notes": list(self.notes),
            "uncertainty": dict(self.uncertainty),
        }


def runs_from_entries(scores: Iterable[Mapping[str, Any]], costs: Iterable[Mapping[str, Any]]) -> list[RunCost]:
    """Join the ledger's score and cost entries (``{"seq", "body"}`` dicts) into runs.

    A run graded again with the same harness, instance and patch counts once: the latest
    grading that reached a verdict stands (re-grading must not weigh a candidate twice, and a
    later infrastructure failure must not erase an earlier verdict); an infrastructure failure
    counts only when no grading of that candidate reached one. A run without a verdict is an
    infrastructure failure whatever recorded it.
    """
    cost_of = {c["body"].get("score_seq"): c["body"] for c in costs}
    latest: dict[tuple[str, str, str, str], RunCost] = {}
    for entry in scores:
        body, seq = entry["body"], entry["seq"]
        score = body.get("score") or {}
        cost_body = cost_of.get(seq)
        if cost_body is None:
            continue  # a run recorded without a cost (an older ledger): nothing to weigh
        if body.get("metric_space", "binary_resolved") != "binary_resolved":
            continue  # another metric space: never weighed on the resolve-rate scale
        cost = cost_body.get("cost") or {k: cost_body.get(k) for k in COST_FIELDS}
        breakdown = cost_body.get("breakdown") or {}
        harness = str(body.get("harness") or cost_body.get("harness") or UNNAMED)
        failure = str(body.get("failure_class") or ("none" if score.get("resolved") == "resolved" else "solver"))
        if not score and failure not in INFRA_CLASSES:
            failure = "verifier"
        run = RunCost(
            harness=harness,
            instance_id=str(body.get("instance_id")),
            patch_ref=str(body.get("patch_ref") or cost_body.get("patch_ref")),
            resolved=score.get("resolved") == "resolved",
            failure_class=failure,
            cost=cost,
            model_dollars_reported=breakdown.get("model_dollars") is not None,
            seq=int(seq),
            benchmark=str(body.get("benchmark") or "unknown"),
        )
        key = (run.benchmark, run.harness, run.instance_id, run.patch_ref)
        if run.infrastructure and key in latest and not latest[key].infrastructure:
            continue
        latest[key] = run
    return sorted(latest.values(), key=lambda r: r.seq)


def _total(runs: Sequence[RunCost], field: str) -> float | int | None:
    values = [r.cost.get(field) for r in runs]
    if not values or any(v is None for v in values):
        return None
    return sum(values)  # type: ignore[arg-type]


def _per(resolved: int, amount: float | int | None, scale: float = 1.0) -> float | None:
    if amount is None or amount <= 0:
        return None
    return resolved / (amount / scale)


def _summary(harness: str, runs: Sequence[RunCost]) -> HarnessSummary:
    counted = [r for r in runs if not r.infrastructure]
    resolved = sum(r.resolved for r in counted)
    totals = {field: _total(counted, field) for field in COST_FIELDS}
    notes = []
    infra = len(runs) - len(counted)
    if infra:
        notes.append(f"{infra} infrastructure failure(s) excluded: never the candidate's")
    for field in ("tokens", "calls"):
        missing = sum(r.cost.get(field) is None for r in counted)
        if missing:
            notes.append(f"{field} not reported by the harness for {missing} of {len(counted)} run(s)")
    if counted and totals["dollars"] is None:
        unknown = sum(r.cost.get("dollars") is None for r in counted)
        notes.append(f"dollars unknown for {unknown} of {len(counted)} run(s): ranked after every harness whose cost is known")
    unpriced = sum(not r.model_dollars_reported for r in counted)
    if unpriced:
        notes.append(f"model dollars not reported for {unpriced} of {len(counted)} run(s): dollars there are compute only")
    ratios = {
        "resolves_per_dollar": _per(resolved, totals["dollars"]),
        "resolves_per_1k_tokens": _per(resolved, totals["tokens"], 1000.0),
        "resolves_per_wall_hour": _per(resolved, totals["wall_time"], 3600.0),
        "resolves_per_cpu_second": _per(resolved, totals["cpu"]),
        "dollars_per_resolve": (totals["dollars"] / resolved) if resolved and totals["dollars"] is not None else None,
    }
    return HarnessSummary(harness, len(counted), resolved, infra, totals, ratios, tuple(notes),
                          uncertainty=uncertainty(counted, totals))


ALPHA: Final = 0.05  # every interval of the costs report is a 95% one
RATIO_SCALES: Final = (("resolves_per_dollar", "dollars", 1.0), ("resolves_per_1k_tokens", "tokens", 1000.0),
                       ("resolves_per_wall_hour", "wall_time", 3600.0), ("resolves_per_cpu_second", "cpu", 1.0))  # fmt: skip
RATE_METHOD: Final = ("Wilson score interval over the tasks (scipy.stats.norm; its size the effective number of tasks, "
                      "(sum of runs)^2 / sum of (runs per task)^2: the number of runs when each task ran once)")  # fmt: skip
BOUNDARY_METHOD: Final = ("no run resolved, or every run did: the resolve rate's Wilson interval over the interval of the "
                          "mean cost per run (rate low / cost high, rate high / cost low; each a 95% interval, both hold "
                          "together at least 95% of the time)")  # fmt: skip
PER_RESOLVE_METHOD: Final = "the reciprocal of the resolves-per-dollar interval, [1 / high, 1 / low]"


def uncertainty(runs: Sequence[RunCost], totals: Mapping[str, float | int | None]) -> dict[str, Any]:
    """The uncertainty of every number of a harness's row (spec 5.4, issue 29): the resolve rate's
    Wilson interval over its tasks (:func:`rate_interval`); per cost quantity (dollars, CPU-s, wall
    time, tokens, calls) the distribution of the per-run values (mean, sd, median, p10, p90) and a 95%
    interval of the mean, a seeded bootstrap over tasks (a task's runs resampled together); each
    resolves-per-cost ratio's interval from the same bootstrap (only where the ratio itself is known),
    or, when no run resolved or every run did, :func:`rate_over_cost`; and dollars per resolve
    (:func:`per_resolve`).
    Pure: :mod:`.ab_inference` computes every interval."""
    from .ab_inference import cost_distributions
    from .ab_inference import ratio_interval as ratio_of

    rate = rate_interval(runs)
    per_run = cost_distributions([(r.instance_id, r.cost) for r in runs], ALPHA)
    resolved = sum(r.resolved for r in runs)
    tasks = [r.instance_id for r in runs]
    ratios: dict[str, Any] = {}
    for name, quantity, scale in RATIO_SCALES:
        total = totals.get(quantity)
        if total is None or not total:
            continue
        if 0 < resolved < len(runs):
            ratios[name] = ratio_of([float(r.resolved) for r in runs], [float(r.cost[quantity]) / scale for r in runs],
                                    ALPHA, unit="task", groups=tasks)  # fmt: skip
        else:  # every run alike: the bootstrap cannot move the rate
            ratios[name] = rate_over_cost(rate, per_run[quantity], scale, resolved / (float(total) / scale))
    ratios["dollars_per_resolve"] = per_resolve(resolved, totals.get("dollars"), ratios.get("resolves_per_dollar"))
    return {"alpha": ALPHA, "resolve_rate": rate, "per_run": per_run, "ratios": ratios}


def effective_tasks(tasks: Sequence[str]) -> int:
    """How many independent units ``tasks`` (one entry per run) are worth for a rate: Kish's
    (sum of runs)^2 / sum of (runs per task)^2, rounded down; the number of runs when every task ran
    once, the number of tasks when every task ran equally often. A task's runs are not independent
    draws of the benchmark: counting them as such would narrow the interval."""
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task] = counts.get(task, 0) + 1
    squares = sum(c * c for c in counts.values())
    return (len(tasks) ** 2) // squares if squares else 0


def wilson(rate: float, size: int, alpha: float = ALPHA) -> list[float]:
    """The Wilson score interval of ``rate`` with ``size`` as its sample size
    (:func:`.ab_inference.arm_interval`), exactly 0 below a rate of 0 and exactly 1 above a rate
    of 1 (not the float noise of the formula)."""
    from .ab_inference import arm_interval

    low, high = arm_interval(rate, size, alpha)
    return [0.0 if rate <= 0 else low, 1.0 if rate >= 1 else high]


def rate_interval(runs: Sequence[RunCost]) -> dict[str, Any]:
    """The resolve rate's 95% Wilson score interval (:func:`.ab_inference.arm_interval`) with the
    effective number of tasks as its size (:func:`effective_tasks`): a task's mean over its runs has
    a variance of at most p(1 − p), so the interval is conservative. A rate of 0 (or 1) out of n has a
    real upper (lower) bound, never a zero-width interval. No run: no rate, no interval."""
    from .ab_inference import no_interval

    n = len(runs)
    size = effective_tasks([r.instance_id for r in runs])
    out: dict[str, Any] = {"n": n, "unit": "runs", "tasks": len({r.instance_id for r in runs}), "effective_tasks": size,
                           "interval": None, "note": no_interval(n, "run"), "method": RATE_METHOD}  # fmt: skip
    if n:
        out["interval"] = wilson(sum(r.resolved for r in runs) / n, size)
        out["note"] = None
    return out


def rate_over_cost(rate: Mapping[str, Any], cost: Mapping[str, Any], scale: float, estimate: float) -> dict[str, Any]:
    """Resolves per unit of cost when no run resolved, or every run did: the resolve rate's interval
    over the mean cost per run's, [rate low / (cost high / ``scale``), rate high / (cost low /
    ``scale``)]. A bootstrap over tasks cannot move a rate every task shares: it gave "0 [0, 0]"
    for a harness that resolved nothing, yet a rate of 0 out of n is not known to be 0 (nor n out
    of n to be 1). Each interval misses at most 2.5% of the time on either side, so the ratio's
    holds at least 95% of the time (Bonferroni). The mean cost's interval missing (one task) gives
    none, with its reason; a lower bound of 0 leaves it unbounded above (``[low, None]``)."""
    out: dict[str, Any] = {"estimate": estimate, "interval": None, "n": cost.get("interval_n"), "unit": "tasks",
                           "alpha": ALPHA, "note": None, "method": BOUNDARY_METHOD}  # fmt: skip
    if rate.get("interval") is None:
        out["note"] = rate.get("note") or "n/a"
        return out
    if cost.get("interval") is None:
        why = str(cost.get("note") or "n/a")
        out["note"] = why if why.startswith("n/a") else f"n/a: cost per run with {why}"
        return out
    (rate_low, rate_high), (cost_low, cost_high) = rate["interval"], cost["interval"]
    low = float(rate_low) * scale / float(cost_high) if cost_high > 0 else 0.0
    if cost_low <= 0:
        out["interval"], out["note"] = [low, None], "no upper bound: the mean cost per run may be 0"
        return out
    out["interval"] = [low, float(rate_high) * scale / float(cost_low)]
    return out


def per_resolve(resolved: int, dollars: float | None, per_dollar: Mapping[str, Any] | None) -> dict[str, Any]:
    """Dollars per resolve and its 95% interval, the reciprocal of the resolves-per-dollar one (a
    monotone map keeps its coverage): [1/high, 1/low], unbounded above (``[low, None]``) when the
    resolves per dollar may be 0. No resolve: undefined ("n/a: no resolve"), never 0."""
    out: dict[str, Any] = {"estimate": None, "interval": None, "unit": "tasks", "alpha": ALPHA,
                           "note": "n/a: no resolve", "method": PER_RESOLVE_METHOD}  # fmt: skip
    if not resolved:
        return out
    if dollars is None:
        out["note"] = "n/a: dollars unknown"
        return out
    out["estimate"] = float(dollars) / resolved
    if not dollars or per_dollar is None:
        out["note"] = "every run cost $0: nothing to resample" if not dollars else "n/a"
        return out
    out["n"], out["note"] = per_dollar.get("n"), per_dollar.get("note")
    if per_dollar.get("interval") is None:
        return out
    low, high = per_dollar["interval"]  # high None: resolves per dollar unbounded, dollars per resolve down to 0
    out["interval"] = [0.0 if high is None else (1.0 / high if high > 0 else None), 1.0 / low if low > 0 else None]
    if out["interval"][0] is None:
        out["interval"], out["note"] = None, out["note"] or "n/a: no resolve in the interval"
    elif out["interval"][1] is None:
        out["note"] = "no upper bound: some resamples of the tasks hold no resolve"
    return out


def _dominates(a: HarnessSummary, b: HarnessSummary) -> bool:
    """a is at least as good on both axes (resolve rate up, dollars per run down) and better on one."""
    ra, rb, ca, cb = a.resolve_rate, b.resolve_rate, a.dollars_per_run, b.dollars_per_run
    if ra is None or rb is None or ca is None or cb is None:
        return False
    return ra >= rb and ca <= cb and (ra > rb or ca < cb)


def by_benchmark(runs: Iterable[RunCost]) -> dict[str, list[HarnessSummary]]:
    """Summaries per benchmark: harnesses are ranked within one benchmark, never across two (a
    resolve rate on one instrument is not commensurable with a rate on another)."""
    groups: dict[str, list[RunCost]] = {}
    for run in runs:
        groups.setdefault(run.benchmark, []).append(run)
    return {name: summarize(group) if name != "unknown" else _unranked(summarize(group)) for name, group in sorted(groups.items())}


def _unranked(summaries: list[HarnessSummary]) -> list[HarnessSummary]:
    """Runs without a benchmark label may come from different benchmarks: listed, never ranked."""
    return [HarnessSummary(s.harness, s.runs, s.resolved, s.infrastructure_failures, s.totals, s.ratios,
                           (*s.notes, "no benchmark label: these runs may mix benchmarks, so they are not ranked "
                            "(label them with --benchmark)"), rank=0, pareto_layer=0, uncertainty=s.uncertainty)
            for s in summaries]  # fmt: skip


def summarize(runs: Iterable[RunCost]) -> list[HarnessSummary]:
    """Per-harness summaries, ranked.

    Ranking: harnesses are peeled into Pareto layers over (resolve rate, dollars per run);
    layer 1 is the cost-resolve front. Within a layer, the higher resolve rate ranks first,
    then the cheaper. So an equal resolve rate at a higher cost is always dominated by the
    cheaper harness and sits in a later layer: never ranked equal. Only harnesses equal on
    both axes share a rank. Harnesses that resolved nothing are layered after all others, and
    harnesses whose dollars are unknown after those whose dollars are known.
    """
    by_harness: dict[str, list[RunCost]] = {}
    for run in runs:
        by_harness.setdefault(run.harness, []).append(run)
    summaries = [_summary(name, group) for name, group in sorted(by_harness.items())]
    layers: dict[str, int] = {}
    # A harness that resolves nothing buys nothing at any price: it is never on the front, and
    # ranks after every harness that resolved something. A harness whose dollars are unknown
    # cannot be placed against the others' costs: it ranks after those whose cost is known.
    groups = (
        [s for s in summaries if s.resolved and s.dollars_per_run is not None],
        [s for s in summaries if s.resolved and s.dollars_per_run is None],
        [s for s in summaries if not s.resolved and s.dollars_per_run is not None],
        [s for s in summaries if not s.resolved and s.dollars_per_run is None],
    )
    layer = 0
    for group in groups:
        remaining = list(group)
        while remaining:
            layer += 1
            front = [s for s in remaining if not any(_dominates(o, s) for o in remaining if o is not s)]
            if all(s.dollars_per_run is None for s in front):
                top = max(s.resolve_rate or 0.0 for s in front)  # no cost to weigh: the rate alone layers them
                front = [s for s in front if (s.resolve_rate or 0.0) == top]
            for s in front:
                layers[s.harness] = layer
            remaining = [s for s in remaining if s not in front]

    def key(s: HarnessSummary) -> tuple[int, float, float]:
        rate = s.resolve_rate if s.resolve_rate is not None else -1.0
        cost = s.dollars_per_run if s.dollars_per_run is not None else math.inf
        return (layers[s.harness], -rate, cost)

    ordered = sorted(summaries, key=key)
    ranked: list[HarnessSummary] = []
    previous: tuple[int, float, float] | None = None
    rank = 0
    for position, s in enumerate(ordered, 1):
        if key(s) != previous:
            rank, previous = position, key(s)
        dominators = tuple(o.harness for o in summaries if _dominates(o, s))
        ranked.append(
            HarnessSummary(s.harness, s.runs, s.resolved, s.infrastructure_failures, s.totals, s.ratios, s.notes,
                           rank=rank, pareto_layer=layers[s.harness], dominated_by=dominators,
                           uncertainty=s.uncertainty)  # fmt: skip
        )
    return ranked
