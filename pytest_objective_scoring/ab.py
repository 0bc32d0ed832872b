"""The controlled A/B comparison (spec 5.4, 8.2, build phase 6; RFC sections 4-5).

Freeze everything, change one thing, repeat over seeds, report cost beside correctness.
The records have exactly the spec's fields::

    ABComparison { change_under_test, frozen, arms, seeds, result }
    FrozenConfig { model, temperature, token_budget, tool_budget, task_set, environment_image,
                   timeout, candidate_count }
    Arm { name, harness_version, resolved, mean, variance, confidence_interval, cost }
    Cost { tokens, calls, cpu, wall_time, dollars }
    ComparisonResult { delta, significant, recommendation }

Everything beside them (the arms' kinds, the experiment identity, per-seed and per-task
outcomes, the test used and its p-value, pass@k, admissibility, the claim level) lives in
``details``. Statistics come from ``scipy.stats`` (imported when used); ``docs/ab.md``
states the method and its assumptions. This module never imports pytest.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Final, Mapping, Sequence

from .ledger import canonical

__all__ = [
    "ABComparison",
    "ABError",
    "Arm",
    "ComparisonResult",
    "Cost",
    "FrozenConfig",
    "Manifest",
    "arm_statistics",
    "claim_level",
    "compare",
    "manifest_digest",
    "parse_manifest",
    "pass_at_k",
    "recommend",
]

ARM_NAMES: Final = ("baseline", "candidate")
ARM_KINDS: Final = ("native", "passive", "governed", "ablation")
METRIC_SPACES: Final = ("binary_resolved",)
DEFAULT_ALPHA: Final = 0.05
PROMOTION_SEEDS: Final = 5  # RFC 5.3: N >= 5 per comparison cell before a promotion claim


class ABError(ValueError):
    """A manifest, a run or a comparison that cannot be accepted: says which field and why."""


@dataclass(frozen=True)
class FrozenConfig:
    model: str
    temperature: float
    token_budget: int
    tool_budget: int
    task_set: str
    environment_image: str
    timeout: float
    candidate_count: int


@dataclass(frozen=True)
class Cost:
    tokens: int | None
    calls: int | None
    cpu: float | None
    wall_time: float | None
    dollars: float | None


@dataclass(frozen=True)
class Arm:
    name: str
    harness_version: str
    resolved: tuple[int, ...]
    mean: float
    variance: float | None
    confidence_interval: tuple[float, float]
    cost: Cost


@dataclass(frozen=True)
class ComparisonResult:
    delta: float
    significant: str  # yes | no | undetermined
    recommendation: str  # keep | reject | pare_back


@dataclass(frozen=True)
class ABComparison:
    change_under_test: str
    frozen: FrozenConfig
    arms: tuple[Arm, ...]
    seeds: tuple[int, ...]
    result: ComparisonResult

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for arm in data["arms"]:
            arm["resolved"] = list(arm["resolved"])
            arm["confidence_interval"] = list(arm["confidence_interval"])
        data["seeds"] = list(data["seeds"])
        return data


# ---------------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class ArmSpec:
    name: str
    harness_version: str
    kind: str


@dataclass(frozen=True)
class Manifest:
    """What is preregistered: the record's frozen part plus the arms' kinds and the decision rule."""

    name: str
    benchmark: Mapping[str, str]
    change_under_test: str
    frozen: FrozenConfig
    arms: tuple[ArmSpec, ...]
    seeds: tuple[int, ...]
    primary_metric: str
    alpha: float
    max_dollars_per_extra_resolve: float | None
    raw: Mapping[str, Any]
    model_training_cutoff: str | None = None

    def arm(self, name: str) -> ArmSpec:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise ABError(f"the manifest has no arm {name!r} (arms: {', '.join(a.name for a in self.arms)})")


FROZEN_TYPES: Final = {
    "model": str, "temperature": (int, float), "token_budget": int, "tool_budget": int, "task_set": str,
    "environment_image": str, "timeout": (int, float), "candidate_count": int,
}  # fmt: skip


def _need(data: Mapping[str, Any], key: str, kind: Any, where: str) -> Any:
    if key not in data:
        raise ABError(f"{where}: field {key!r} is missing")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        expected = {str: "a non-empty string", int: "a whole number", (int, float): "a number"}.get(kind, str(kind))
        raise ABError(f"{where}: field {key!r}: expected {expected}, got {value!r}")
    return value


def parse_frozen(data: Any, where: str) -> FrozenConfig:
    if not isinstance(data, Mapping):
        raise ABError(f"{where}: field 'frozen': expected an object with {', '.join(FROZEN_TYPES)}")
    extra = sorted(set(data) - set(FROZEN_TYPES))
    if extra:
        raise ABError(f"{where}: field 'frozen': {extra[0]!r} is not a frozen field (the spec freezes {', '.join(FROZEN_TYPES)})")
    values = {key: _need(data, key, kind, f"{where}: frozen") for key, kind in FROZEN_TYPES.items()}
    for key in ("token_budget", "tool_budget", "candidate_count"):
        if values[key] < (1 if key == "candidate_count" else 0):
            raise ABError(f"{where}: frozen: field {key!r}: must be {'at least 1' if key == 'candidate_count' else '>= 0'}")
    if values["candidate_count"] != 1:
        raise ABError(f"{where}: frozen: field 'candidate_count': {values['candidate_count']}; this comparison grades one "
                      "candidate per task and seed (repeat seeds for more samples: pass@k is computed over them)")  # fmt: skip
    if not values["timeout"] > 0 or not values["temperature"] >= 0:
        raise ABError(f"{where}: frozen: timeout must be > 0 and temperature >= 0")
    return FrozenConfig(**values)


def parse_manifest(data: Any, where: str) -> Manifest:
    """Validate a preregistration manifest (``docs/ab.md`` shows one)."""
    if not isinstance(data, Mapping):
        raise ABError(f"{where}: expected a JSON object")
    name = _need(data, "name", str, where)
    benchmark = data.get("benchmark")
    if not isinstance(benchmark, Mapping) or not isinstance(benchmark.get("id"), str):
        raise ABError(f"{where}: field 'benchmark': expected an object with id, revision and metric_space")
    space = benchmark.get("metric_space", "binary_resolved")
    if space not in METRIC_SPACES:
        raise ABError(f"{where}: benchmark.metric_space {space!r}: this comparison grades {', '.join(METRIC_SPACES)}")
    arms_data = data.get("arms")
    if not isinstance(arms_data, list) or len(arms_data) != 2:
        raise ABError(f"{where}: field 'arms': expected exactly two arms, baseline and candidate")
    arms = []
    for index, arm in enumerate(arms_data):
        at = f"{where}: arms[{index}]"
        if not isinstance(arm, Mapping):
            raise ABError(f"{at}: expected an object with name, harness_version, kind")
        kind = _need(arm, "kind", str, at)
        if kind not in ARM_KINDS:
            raise ABError(f"{at}: field 'kind': {kind!r} is not one of {', '.join(ARM_KINDS)}")
        arms.append(ArmSpec(_need(arm, "name", str, at), _need(arm, "harness_version", str, at), kind))
    if sorted(a.name for a in arms) != sorted(ARM_NAMES):
        raise ABError(f"{where}: field 'arms': the two arms must be named baseline and candidate")
    seeds = data.get("seeds")
    if (not isinstance(seeds, list) or not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds)
            or len(set(seeds)) != len(seeds)):  # fmt: skip
        raise ABError(f"{where}: field 'seeds': expected a non-empty list of distinct whole numbers")
    metric = data.get("primary_metric", "resolve_rate")
    if metric != "resolve_rate":
        raise ABError(f"{where}: field 'primary_metric': {metric!r}; the comparison's primary metric is resolve_rate")
    rule = data.get("decision_rule") or {}
    if not isinstance(rule, Mapping):
        raise ABError(f"{where}: field 'decision_rule': expected an object")
    alpha = rule.get("alpha", DEFAULT_ALPHA)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        raise ABError(f"{where}: decision_rule.alpha: expected a number between 0 and 0.5, got {alpha!r}")
    cap = rule.get("max_dollars_per_extra_resolve")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap < 0):
        raise ABError(f"{where}: decision_rule.max_dollars_per_extra_resolve: expected dollars >= 0, got {cap!r}")
    cutoff = data.get("model_training_cutoff")
    if cutoff is not None and (not isinstance(cutoff, str) or not cutoff.strip()):
        raise ABError(f"{where}: field 'model_training_cutoff': expected a date (the frozen model's training cutoff)")
    unknown = sorted(set(data) - {"name", "benchmark", "change_under_test", "frozen", "arms", "seeds", "primary_metric",
                                  "decision_rule", "model_training_cutoff"})  # fmt: skip
    if unknown:
        raise ABError(f"{where}: field {unknown[0]!r} is not part of a manifest")
    return Manifest(
        name=name,
        benchmark={"id": str(benchmark["id"]), "revision": str(benchmark.get("revision", "unknown")), "metric_space": space},
        change_under_test=_need(data, "change_under_test", str, where),
        frozen=parse_frozen(data.get("frozen"), where),
        arms=tuple(sorted(arms, key=lambda a: ARM_NAMES.index(a.name))),
        seeds=tuple(seeds),
        primary_metric=metric,
        alpha=float(alpha),
        max_dollars_per_extra_resolve=None if cap is None else float(cap),
        raw=dict(data),
        model_training_cutoff=cutoff,
    )


def manifest_digest(data: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical(dict(data)).encode("utf-8")).hexdigest()


def frozen_mismatches(declared: Mapping[str, Any], manifest: FrozenConfig) -> tuple[list[str], list[str]]:
    """(fields that differ, with both values; fields the run did not declare)."""
    frozen = asdict(manifest)
    differ = [f"{key}: the run says {declared[key]!r}, the manifest {frozen[key]!r}" for key in frozen
              if key in declared and declared[key] != frozen[key]]  # fmt: skip
    differ += [f"{key}: not a frozen field" for key in declared if key not in frozen]
    return differ, [key for key in frozen if key not in declared]


# ---------------------------------------------------------------------- statistics


def arm_statistics(resolved: Sequence[int], tasks: int, alpha: float) -> tuple[float, float | None, tuple[float, float]]:
    """Mean resolve rate over seeds, its variance over seeds, and a (1 - alpha) interval.

    Two or more seeds: the sample variance of the per-seed rates and Student's t interval
    for their mean. One seed: no variance (``None``) and the Wilson score interval of that
    seed's binomial proportion (the only uncertainty one seed can show).
    """
    from scipy import stats  # type: ignore[import-untyped]

    rates = [r / tasks for r in resolved]
    mean = sum(rates) / len(rates)
    if len(rates) == 1:
        ci = stats.binomtest(resolved[0], tasks).proportion_ci(confidence_level=1 - alpha, method="wilson")
        return mean, None, (float(ci.low), float(ci.high))
    variance = 0.0 if len(set(resolved)) == 1 else float(stats.tvar(rates))
    if variance == 0:
        # seeds that agree exactly give a zero-width t interval; the binomial uncertainty of the
        # pooled counts is still there: the Wilson interval of all seeds together
        ci = stats.binomtest(sum(resolved), tasks * len(resolved)).proportion_ci(confidence_level=1 - alpha, method="wilson")
        return mean, 0.0, (float(ci.low), float(ci.high))
    low, high = stats.t.interval(1 - alpha, len(rates) - 1, loc=mean, scale=stats.sem(rates))
    return mean, variance, (max(0.0, float(low)), min(1.0, float(high)))


def compare(baseline: Mapping[tuple[int, str], bool], candidate: Mapping[tuple[int, str], bool], seeds: Sequence[int],
            tasks: Sequence[str], alpha: float, admissible: bool) -> tuple[float, str, dict[str, Any]]:  # fmt: skip
    """Δ of the mean resolve rates (candidate − baseline) and whether it is significant.

    Paired by task and seed: every (seed, task) pair was graded in both arms. The test is the
    exact McNemar test on the discordant pairs (``scipy.stats.binomtest``: pairs only the
    candidate resolved against pairs only the baseline resolved, p = 1/2 under no effect),
    which needs no normality and no variance between seeds. ``yes`` needs p < alpha and at
    least two seeds: one seed is one draw of a stochastic system, never significant whatever
    its size. The paired t-test over per-seed rates (``scipy.stats.ttest_rel``) is reported
    beside it as the variance-backed view. Evidence that is not admissible (unknown frozen
    fields, quarantined runs) is ``undetermined``.
    """
    from scipy import stats  # type: ignore[import-untyped]

    n = len(tasks)
    base_counts = [sum(baseline[(s, t)] for t in tasks) for s in seeds]
    cand_counts = [sum(candidate[(s, t)] for t in tasks) for s in seeds]
    base, cand = [c / n for c in base_counts], [c / n for c in cand_counts]
    delta = sum(cand) / len(cand) - sum(base) / len(base)
    gained = sum(candidate[key] and not baseline[key] for key in baseline)
    lost = sum(baseline[key] and not candidate[key] for key in baseline)
    test: dict[str, Any] = {"test": "exact McNemar test on discordant task-seed pairs (scipy.stats.binomtest)",
                            "p_value": None, "discordant": {"candidate_only": gained, "baseline_only": lost},
                            "seeds": len(seeds), "alpha": alpha, "t_test_over_seeds": None}  # fmt: skip
    if gained + lost:
        test["p_value"] = float(stats.binomtest(gained, gained + lost, 0.5).pvalue)
    else:
        test["p_value"] = 1.0  # no pair differs: no evidence of any effect
    differences = [c - b for b, c in zip(base_counts, cand_counts)]  # whole numbers: no rounding noise
    if len(seeds) >= 2 and len(set(differences)) > 1:
        result = stats.ttest_rel(cand, base)
        test["t_test_over_seeds"] = {"p_value": float(result.pvalue), "statistic": float(result.statistic)}
    if len(seeds) < 2:
        test["note"] = "one seed: never significant (no replication)"
        significant = "no"
    else:
        significant = "yes" if test["p_value"] < alpha else "no"
    if not admissible:
        significant = "undetermined"
    return delta, significant, test


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), for n samples
    of which c pass; undefined (None) when fewer than k samples exist."""
    if k < 1 or n < k:
        return None
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def recommend(delta: float, significant: str, cost_per_seed: Mapping[str, float | None], resolved_per_seed: Mapping[str, float],
              max_dollars_per_extra_resolve: float | None, role: str = "regression") -> tuple[str, str]:  # fmt: skip
    """The Piper-rule verdict and why: keep only a significant gain whose cost does not swallow it.

    * undetermined evidence -> pare_back (nothing is promoted on inadmissible evidence);
    * a significant gain on a development set -> pare_back (promotion is the regression set's verdict);
    * significant and worse, or not significant and not better -> reject;
    * not significant but pointing up -> pare_back (indistinguishable from the baseline);
    * significant and better -> keep, unless the cost swallows the gain: the candidate's
      extra dollars per extra resolved task exceed ``max_dollars_per_extra_resolve`` or,
      without that cap, its resolves per dollar are below the baseline's -> pare_back.
    """
    if significant == "undetermined":
        return "pare_back", "the evidence is not admissible: nothing is promoted on it"
    if role == "development" and significant == "yes" and delta > 0:
        return "pare_back", "a development set never promotes a change: run the comparison on the regression set"
    if significant == "no":
        if delta > 0:
            return "pare_back", "indistinguishable from the baseline: keep the simpler one"
        return "reject", "the change fails to move the resolve rate"
    if delta < 0:
        return "reject", "the change measurably harms the resolve rate"
    base_cost, cand_cost = cost_per_seed.get("baseline"), cost_per_seed.get("candidate")
    if base_cost is None or cand_cost is None:
        return "pare_back", "the gain is significant but the dollars are unknown: the cost cannot be weighed"
    extra_cost = cand_cost - base_cost
    extra_resolves = resolved_per_seed["candidate"] - resolved_per_seed["baseline"]
    if max_dollars_per_extra_resolve is not None:
        if extra_cost > max_dollars_per_extra_resolve * extra_resolves:
            return "pare_back", (f"each extra resolve costs ${extra_cost / extra_resolves:.4f}, more than the "
                                 f"manifest's ${max_dollars_per_extra_resolve:.4f}: the cost swallows the gain")  # fmt: skip
        return "keep", "a significant gain at an accepted cost per extra resolve"
    base_rate = resolved_per_seed["baseline"] / base_cost if base_cost > 0 else math.inf
    cand_rate = resolved_per_seed["candidate"] / cand_cost if cand_cost > 0 else math.inf
    if cand_rate < base_rate:
        return "pare_back", (f"resolves per dollar fall from {base_rate:.4g} to {cand_rate:.4g}: the cost swallows the gain "
                             "(set decision_rule.max_dollars_per_extra_resolve to accept a price)")  # fmt: skip
    return "keep", "a significant gain, and resolves per dollar do not fall"


# ---------------------------------------------------------------------- the claim ladder

CLAIMS: Final = ("C0", "C1", "C2", "C3", "C4")


def claim_level(details: Mapping[str, Any], record: Mapping[str, Any],
                others: Sequence[Mapping[str, Any]] = ()) -> tuple[str, list[str]]:  # fmt: skip
    """The highest claim (RFC section 4) the evidence supports, decided by rule, and why.

    C0 every arm graded on every seed without an infrastructure failure; C1 a passive arm whose
    every outcome equals the native baseline's; C2 admissible, at least five seeds, significant
    uplift and keep; C3 C2 here and a C2 comparison of the same change on another benchmark
    with the same sign; C4 is never reached from benchmark evidence alone.
    """
    reasons: list[str] = []
    result = record["result"]
    if details.get("infrastructure_failures"):
        return "none", [f"{details['infrastructure_failures']} grading(s) were infrastructure failures: not even C0"]
    level = "C0"
    reasons.append("C0: every arm was graded on every seed, every task, with a verdict")
    kinds = {a["name"]: a["kind"] for a in details["arm_kinds"]}
    if kinds.get("candidate") == "passive" and kinds.get("baseline") == "native":
        if details.get("outcomes_identical"):
            level = "C1"
            reasons.append("C1: the passive arm changed no outcome of the native baseline")
        else:
            reasons.append("not C1: the passive arm changed official outcomes")
    c2 = (details.get("admissible") and len(record["seeds"]) >= PROMOTION_SEEDS and result["significant"] == "yes"
          and result["delta"] > 0 and result["recommendation"] == "keep" and kinds.get("candidate") != "passive")  # fmt: skip
    if c2:
        level = "C2"
        reasons.append(f"C2: admissible, {len(record['seeds'])} seeds, significant uplift, kept at its cost; "
                       f"scoped to benchmark {details['benchmark']['id']}, model {record['frozen']['model']}, this harness and budget")  # fmt: skip
    else:
        why = []
        if not details.get("admissible"):
            why.append("the evidence is not admissible")
        if len(record["seeds"]) < PROMOTION_SEEDS:
            why.append(f"{len(record['seeds'])} seed(s), fewer than {PROMOTION_SEEDS}")
        if result["significant"] != "yes" or result["delta"] <= 0:
            why.append("no significant uplift")
        elif result["recommendation"] != "keep":
            why.append(f"the recommendation is {result['recommendation']}")
        if kinds.get("candidate") == "passive":
            why.append("a passive arm changes no decision: it cannot show uplift")
        reasons.append("not C2: " + "; ".join(why))
    if c2:
        replicated = [o for o in others if o["details"]["benchmark"]["id"] != details["benchmark"]["id"]
                      and o["record"]["change_under_test"] == record["change_under_test"] and o.get("claim_c2")]  # fmt: skip
        if replicated:
            level = "C3"
            reasons.append("C3: replicated at C2 on " + ", ".join(sorted({o["details"]["benchmark"]["id"] for o in replicated})))
        else:
            reasons.append("not C3: no C2 replication of this change on another benchmark family in the ledger")
    reasons.append("not C4: product promotion needs qualification outside benchmark evidence (RFC section 4)")
    return level, reasons


def record_fields() -> dict[str, list[str]]:
    """The exact field lists of the records (for tests and docs)."""
    return {kind.__name__: [f.name for f in fields(kind)]
            for kind in (ABComparison, FrozenConfig, Arm, Cost, ComparisonResult)}  # fmt: skip
