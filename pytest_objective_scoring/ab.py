"""The controlled A/B comparison (spec 5.4, 8.2, build phase 6; RFC sections 4-5).

Freeze everything, change one thing, repeat over seeds, report cost beside correctness.
The records have exactly the spec's fields::

    ABComparison { change_under_test, frozen, arms, seeds, result }
    FrozenConfig { model, temperature, token_budget, tool_budget, task_set, environment_image,
                   timeout, candidate_count }
    Arm { name, harness_version, resolved, mean, variance, confidence_interval, cost }
    Cost { tokens, calls, cpu, wall_time, dollars }
    ComparisonResult { delta, significant, recommendation }

Everything beside them (the arms' kinds and access, the experiment identity, per-seed and per-task
outcomes, the tests used and their p-values, pass@k, admissibility, power, the claim level) lives in
``details``. The statistics are in :mod:`.ab_inference`, the claim ladder in :mod:`.ab_claims`;
``docs/ab.md`` states each method and its assumptions. This module never imports pytest.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Final, Iterable, Mapping, Sequence

from .ab_inference import pass_at_k  # noqa: F401 (re-exported: the estimator lives with the statistics)
from .cost_ledger import finite_number, shown
from .identity import near_keys, shown_name, symbol_key, text_key
from .ledger import canonical

__all__ = [
    "ABComparison",
    "ABError",
    "Arm",
    "ChangeRelation",
    "ComparisonResult",
    "Cost",
    "FrozenConfig",
    "Manifest",
    "access_findings",
    "arm_statistics",
    "change_family",
    "change_links",
    "compare",
    "manifest_digest",
    "parse_manifest",
    "parse_relations",
    "pass_at_k",
    "recommend",
    "review_change",
]

ARM_NAMES: Final = ("baseline", "candidate")
ARM_KINDS: Final = ("native", "passive", "governed", "ablation")
METRIC_SPACES: Final = ("binary_resolved",)
DEFAULT_ALPHA: Final = 0.05
PROMOTION_SEEDS: Final = 5  # RFC 5.3: N >= 5 per comparison cell before a promotion claim
MAX_ALPHA: Final = 0.1  # a decision rule may be stricter than 0.05; C2 itself needs alpha <= 0.05 (ab_claims)
MAX_MIN_EFFECT: Final = 0.5  # an uplift of more than half the tasks is not a "smallest effect worth detecting"
MAX_TIMEOUT: Final = 7 * 24 * 3600.0  # frozen.timeout: a week at most, as --timeout (options.MAX_SECONDS)
MIN_TASK_EFFECT_SD: Final = 0.1  # the floor of the assumed task spread: real tasks never respond alike


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


ACCESS_FIELDS: Final = ("network", "repository_history", "hidden_tests", "gold")
FORBIDDEN_ACCESS: Final = ("hidden_tests", "gold")  # RFC 6.5: an arm that could see these is never evidence


@dataclass(frozen=True)
class ArmSpec:
    name: str
    harness_version: str
    kind: str
    access: Mapping[str, bool] | None = None  # what the solver could reach (ACCESS_FIELDS); None: undeclared


@dataclass(frozen=True)
class ChangeRelation:
    """A manifest's declaration that its ``change_under_test`` is (``same_as``) or is not (``different_from``)
    an existing change of the ledger whose name it resembles, and why."""

    relation: str  # same_as | different_from
    change: str
    reason: str


RELATIONS: Final = ("same_as", "different_from")


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
    min_effect: float | None = None  # decision_rule.min_effect: the smallest uplift worth detecting
    task_effect_sd: float = 0.3  # decision_rule.task_effect_sd: the assumed spread of per-task effects
    run_effect_sd: float = 0.0  # decision_rule.run_effect_sd: the assumed spread of a seed run's shock
    change_relations: tuple[ChangeRelation, ...] = ()  # change_relation: this change is, or is not, an existing one

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
        raise ABError(f"{where}: field {key!r}: expected {expected}, got {shown(value)}")
    if kind == (int, float) and not finite_number(value):  # 10**400 is an int no float can hold: never a timeout
        raise ABError(f"{where}: field {key!r}: expected a finite number, got {shown(value)}")
    if isinstance(value, str) and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ABError(f"{where}: field {key!r}: control characters (a newline, a tab) are not allowed: {value!r}")
    return value


def parse_relations(value: Any, where: str) -> tuple[ChangeRelation, ...]:
    """``change_relation``: one object, or a list of them, each ``{"same_as" | "different_from": NAME,
    "reason": TEXT}``."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ABError(f"{where}: field 'change_relation': expected an object (or a list of them) with same_as or "
                      "different_from and reason")  # fmt: skip
    found = []
    for index, item in enumerate(items):
        at = f"{where}: change_relation" + (f"[{index}]" if isinstance(value, list) else "")
        if not isinstance(item, Mapping):
            raise ABError(f"{at}: expected an object with same_as or different_from (an existing change) and reason")
        named = [key for key in RELATIONS if key in item]
        unknown = sorted(set(item) - {*RELATIONS, "reason"})
        if unknown:
            raise ABError(f"{at}: field {unknown[0]!r} is not part of a change relation (same_as, different_from, reason)")
        if len(named) != 1:
            raise ABError(f"{at}: expected exactly one of same_as and different_from, got "
                          f"{' and '.join(named) if named else 'neither'}")  # fmt: skip
        found.append(ChangeRelation(named[0], _need(item, named[0], str, at), _need(item, "reason", str, at)))
    return tuple(found)


def change_links(manifests: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The relations every preregistered manifest declared, as ``(key of its change, key of the change it
    names, same_as | different_from)`` (:func:`.identity.text_key`); a malformed declaration is skipped."""
    links = []
    for manifest in manifests:
        change = manifest.get("change_under_test") if isinstance(manifest, Mapping) else None
        if not isinstance(change, str):
            continue
        try:
            relations = parse_relations(manifest.get("change_relation"), "") if "change_relation" in manifest else ()
        except ABError:
            continue
        links += [(text_key(change), text_key(r.change), r.relation) for r in relations]
    return links


def change_splits(manifests: Iterable[Mapping[str, Any]]) -> set[frozenset[str]]:
    """The spellings declared ``different_from`` each other although their :func:`.identity.text_key` is
    one, as pairs of :func:`.identity.symbol_key` (``+20%`` and ``-20%``): each is outside the other's
    family. Only spellings that differ by a sign can be split (:func:`review_change` refuses the rest)."""
    splits = set()
    for manifest in manifests:
        change = manifest.get("change_under_test") if isinstance(manifest, Mapping) else None
        if not isinstance(change, str) or "change_relation" not in manifest:
            continue
        try:
            relations = parse_relations(manifest.get("change_relation"), "")
        except ABError:
            continue
        for r in relations:
            if r.relation == "different_from" and text_key(r.change) == text_key(change) and symbol_key(r.change) != symbol_key(change):
                splits.add(frozenset({symbol_key(change), symbol_key(r.change)}))
    return splits


def in_family(change: str, spelled: str, keys: set[str], splits: set[frozenset[str]]) -> bool:
    """Whether the change spelt ``spelled`` is in the family of ``change`` (``keys``: :func:`change_family`),
    a spelling declared different from it by its signs excepted (:func:`change_splits`)."""
    return text_key(spelled) in keys and frozenset({symbol_key(change), symbol_key(spelled)}) not in splits


def change_family(change: str, links: Iterable[tuple[str, str, str]]) -> set[str]:
    """The keys of every change that is ``change``: the same :func:`.identity.text_key`, or joined to it by a
    ``same_as`` declaration (either way round, and transitively)."""
    return _joined({text_key(change)}, links)


def _joined(keys: set[str], links: Iterable[tuple[str, str, str]]) -> set[str]:
    family, grew = set(keys), True
    same = [(a, b) for a, b, relation in links if relation == "same_as"]
    while grew:
        grew = False
        for a, b in same:
            if (a in family) != (b in family):
                family |= {a, b}
                grew = True
    return family


def review_change(manifest: Manifest, known: Sequence[Mapping[str, Any]], links: Sequence[tuple[str, str, str]],
                  splits: set[frozenset[str]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The declarations a new preregistration records, or :class:`ABError` (one line naming the existing change).

    ``known`` are the ledger's preregistered experiments (``name``, ``change``, ``seq``); ``links`` the
    relations they declared (:func:`change_links`). A change spelt differently from an existing one with
    the same :func:`.identity.text_key`, or within a few edits of one (:func:`.identity.near_keys`), must be
    declared ``same_as`` it (it joins its family) or ``different_from`` it, with the reason; a name with the
    same key is the same change, so ``different_from`` it is refused, unless the two differ by a sign
    (:func:`.identity.symbol_key`: ``+20%`` and ``-20%``). A change already related to this one (or to a
    change this one is declared the same as) by any declaration needs none, and neither does a spelling
    already declared apart by its signs (``splits``: :func:`change_splits`) from one with this one's signs."""
    change, key = manifest.change_under_test, text_key(manifest.change_under_test)
    keys = {text_key(k["change"]) for k in known}
    recorded: list[dict[str, Any]] = []
    for relation in manifest.change_relations:
        other = text_key(relation.change)
        if other not in keys:
            names = ", ".join(sorted({shown_name(k["change"]) for k in known})[:5]) or "none"
            raise ABError(f"change_relation names {shown_name(relation.change)}, but no experiment in this ledger is on "
                          f"that change (changes preregistered: {names})")  # fmt: skip
        split = relation.relation == "different_from" and other == key
        if split and symbol_key(change) == symbol_key(relation.change):
            raise ABError(f"change_relation: {shown_name(change)} cannot be different from {shown_name(relation.change)}: once case, "
                          "punctuation, spacing, invisible and look-alike characters are folded they are one name, "
                          "and they differ by no sign (+ - * / < > = ^ ~ ! % # & @, a dot between digits) either: one "
                          "name is one change (name a different change differently)")  # fmt: skip
        matches = sorted({k["change"] for k in known if text_key(k["change"]) == other
                          and (not split or symbol_key(k["change"]) == symbol_key(relation.change))})  # fmt: skip
        recorded.append({"relation": relation.relation, "change": relation.change, "reason": relation.reason,
                         "key": other, "matches": matches})  # fmt: skip
    declared = {entry["key"] for entry in recorded}
    ours = [(key, str(entry["key"]), str(entry["relation"])) for entry in recorded]
    joined = change_family(change, [*links, *ours])  # this change, and every change it is (declared) the same as
    decided = {b if a in joined else a for a, b, _ in [*links, *ours] if (a in joined) != (b in joined)}
    spelt = {k["change"] for k in known}
    for existing in sorted(known, key=lambda k: k["seq"]):
        other = text_key(existing["change"])
        if existing["change"] == change or other in declared or _joined({other}, links) & decided:
            continue
        if other == key:
            if change in spelt or frozenset({symbol_key(change), symbol_key(existing["change"])}) in (splits or set()):
                continue  # this very spelling is preregistered already, or its signs were declared another change
            signed = symbol_key(existing["change"]) != symbol_key(change)  # differs by a sign: may be another change
            why, declare = "spelt differently from", '"same_as" or "different_from"' if signed else '"same_as"'
        else:
            edits = near_keys(key, other)
            if edits is None or other in joined:
                continue
            why, declare = f"{edits} edit(s) away from", '"same_as" or "different_from"'
        raise ABError(f"change_under_test {shown_name(change)} is {why} the existing change {shown_name(existing['change'])} "
                      f"(experiment {existing['name']!r}, ledger seq {existing['seq']}): declare in the manifest "
                      f"\"change_relation\": {{{declare}: {json.dumps(existing['change'])}, \"reason\": \"...\"}}")  # fmt: skip
    return recorded


def parse_frozen(data: Any, where: str) -> FrozenConfig:
    """The manifest's frozen configuration, every field checked; ``timeout`` is more than 0 and at most
    :data:`MAX_TIMEOUT` (a week: the bound ``--timeout`` has), refused at preregistration, not met as an
    overflow in every grading."""
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
    if not values["timeout"] <= MAX_TIMEOUT:  # 1e300 would overflow every grading's deadline, after the work began
        raise ABError(f"{where}: frozen: field 'timeout': {values['timeout']:g} seconds; at most {MAX_TIMEOUT:.0f} "
                      "(a week, as --timeout)")  # fmt: skip
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
        unknown_keys = sorted(set(arm) - {"name", "harness_version", "kind", "access"})
        if unknown_keys:
            raise ABError(f"{at}: field {unknown_keys[0]!r} is not part of an arm (name, harness_version, kind, access)")
        arms.append(ArmSpec(_need(arm, "name", str, at), _need(arm, "harness_version", str, at), kind,
                            _access(arm.get("access"), at) if "access" in arm else None))  # fmt: skip
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
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha <= MAX_ALPHA:
        raise ABError(f"{where}: decision_rule.alpha: expected a number above 0 and at most {MAX_ALPHA}, got {shown(alpha)}")
    cap = rule.get("max_dollars_per_extra_resolve")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or not finite_number(cap) or cap < 0):
        raise ABError(f"{where}: decision_rule.max_dollars_per_extra_resolve: expected dollars >= 0, got {shown(cap)}")
    min_effect = rule.get("min_effect")
    if min_effect is not None and (isinstance(min_effect, bool) or not isinstance(min_effect, (int, float))
                                   or not 0 < min_effect <= MAX_MIN_EFFECT):  # fmt: skip
        raise ABError(f"{where}: decision_rule.min_effect: expected the smallest uplift worth detecting, in resolve-rate "
                      f"points above 0 and at most {MAX_MIN_EFFECT} (0.05 is 5 points), got {shown(min_effect)}")  # fmt: skip
    task_sd = rule.get("task_effect_sd", 0.3)
    if isinstance(task_sd, bool) or not isinstance(task_sd, (int, float)) or not MIN_TASK_EFFECT_SD <= task_sd <= 1:
        raise ABError(f"{where}: decision_rule.task_effect_sd: expected the assumed spread of per-task effects, between "
                      f"{MIN_TASK_EFFECT_SD} and 1 (tasks always differ: seeds alone cannot buy power), got {shown(task_sd)}")  # fmt: skip
    run_sd = rule.get("run_effect_sd", 0.0)
    if isinstance(run_sd, bool) or not isinstance(run_sd, (int, float)) or not 0 <= run_sd <= 1:
        raise ABError(f"{where}: decision_rule.run_effect_sd: expected the assumed spread of a seed run's shock on the "
                      f"difference, in resolve-rate points, between 0 and 1, got {shown(run_sd)}")  # fmt: skip
    unknown_rule = sorted(set(rule) - {"alpha", "max_dollars_per_extra_resolve", "min_effect", "task_effect_sd",
                                       "run_effect_sd"})  # fmt: skip
    if unknown_rule:
        raise ABError(f"{where}: decision_rule.{unknown_rule[0]} is not part of a decision rule (alpha, "
                      "max_dollars_per_extra_resolve, min_effect, task_effect_sd, run_effect_sd)")  # fmt: skip
    cutoff = data.get("model_training_cutoff")
    if cutoff is not None and (not isinstance(cutoff, str) or not cutoff.strip()):
        raise ABError(f"{where}: field 'model_training_cutoff': expected a date (the frozen model's training cutoff)")
    if cutoff is not None:
        from .sets import SetError, parse_cutoff

        try:
            parse_cutoff(cutoff)
        except SetError as exc:
            raise ABError(f"{where}: field 'model_training_cutoff': {exc}") from None
    for key in ("revision", "metric_space"):
        if key in benchmark and not isinstance(benchmark[key], str):
            raise ABError(f"{where}: benchmark.{key}: expected a string, got {benchmark[key]!r}")
    unknown = sorted(set(data) - {"name", "benchmark", "change_under_test", "frozen", "arms", "seeds", "primary_metric",
                                  "decision_rule", "model_training_cutoff", "change_relation"})  # fmt: skip
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
        min_effect=None if min_effect is None else float(min_effect),
        task_effect_sd=float(task_sd),
        run_effect_sd=float(run_sd),
        change_relations=parse_relations(data["change_relation"], where) if "change_relation" in data else (),
    )


def _access(value: Any, where: str) -> dict[str, bool]:
    """An arm's declared access: every one of :data:`ACCESS_FIELDS`, each true or false."""
    if not isinstance(value, Mapping):
        raise ABError(f"{where}: field 'access': expected an object of {', '.join(ACCESS_FIELDS)} (each true or false)")
    unknown = sorted(set(value) - set(ACCESS_FIELDS))
    if unknown:
        raise ABError(f"{where}: access.{unknown[0]} is not an access field ({', '.join(ACCESS_FIELDS)})")
    missing = [key for key in ACCESS_FIELDS if key not in value]
    if missing:
        raise ABError(f"{where}: access.{missing[0]} is missing: declare what the solver could reach, every field "
                      "(an undeclared access cannot be told from an unrestricted one)")  # fmt: skip
    for key in ACCESS_FIELDS:
        if not isinstance(value[key], bool):
            raise ABError(f"{where}: access.{key}: expected true or false, got {value[key]!r}")
    return {key: bool(value[key]) for key in ACCESS_FIELDS}


def access_findings(manifest: Manifest) -> tuple[list[str], list[str]]:
    """What the arms' declared access says about the evidence (RFC 5.3, 6.5): ``(invalid, quarantined)``
    reasons. An arm that could reach hidden tests or the gold patch is invalid; an undeclared access,
    or arms whose declared access differs, cannot establish parity: quarantined."""
    invalid, quarantined = [], []
    for arm in manifest.arms:
        if arm.access is None:
            quarantined.append(f"access_undeclared: arm {arm.name} does not declare what its solver could reach "
                               f"({', '.join(ACCESS_FIELDS)})")  # fmt: skip
            continue
        for key in FORBIDDEN_ACCESS:
            if arm.access[key]:
                invalid.append(f"forbidden_access: arm {arm.name} could reach {key.replace('_', ' ')}")
    declared = [a for a in manifest.arms if a.access is not None]
    if len(declared) == 2 and declared[0].access != declared[1].access:
        differ = [k for k in ACCESS_FIELDS if declared[0].access[k] != declared[1].access[k]]  # type: ignore[index]
        quarantined.append(f"access_parity: the arms' declared access differs ({', '.join(differ)}): the same "
                           "authority envelope is required of a matched comparison")  # fmt: skip
    return invalid, quarantined


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

    ``variance`` is the sample variance of the per-seed rates (None with one seed). The interval
    is about tasks, the sample: the Wilson score interval of the arm's resolve rate with the number
    of tasks as its size (:func:`.ab_inference.arm_interval`): continuous in the data, never of zero
    width, conservative (a task's mean over seeds has a variance of at most p(1 - p)).
    """
    from scipy import stats  # type: ignore[import-untyped]

    from .ab_inference import arm_interval

    rates = [r / tasks for r in resolved]
    mean = sum(rates) / len(rates)
    variance = None if len(rates) == 1 else (0.0 if len(set(resolved)) == 1 else float(stats.tvar(rates)))
    return mean, variance, arm_interval(mean, tasks, alpha)


def compare(baseline: Mapping[tuple[int, str], bool], candidate: Mapping[tuple[int, str], bool], seeds: Sequence[int],
            tasks: Sequence[str], alpha: float, admissible: bool) -> tuple[float, str, dict[str, Any]]:  # fmt: skip
    """Δ of the mean resolve rates (candidate − baseline) and whether it is significant.

    Tasks are the sample (:mod:`.ab_inference`): the primary test models the paired difference on
    each (seed, task) with tasks and seed runs as random effects (a shock that hits a whole run is
    part of the noise), with the interval of Δ from the same model. The McNemar test on the
    pooled (seed, task) pairs and the paired t-test over seeds are reported as labelled secondary
    views; neither decides. ``yes`` needs the primary p < alpha and at least two seeds (one seed is
    one draw of a stochastic system). Evidence that is not admissible is ``undetermined``.
    """
    from .ab_inference import primary_test, secondary_views

    primary = primary_test(baseline, candidate, seeds, tasks, alpha)
    delta = primary["delta"]
    test: dict[str, Any] = {**primary, "seeds": len(seeds), "primary": True,
                            "secondary": secondary_views(baseline, candidate, seeds, tasks)}  # fmt: skip
    if len(seeds) < 2:
        test["note"] = "one seed: never significant (no replication)"
        significant = "no"
    else:
        significant = "yes" if test["p_value"] < alpha else "no"
    if not admissible:
        significant = "undetermined"
    return delta, significant, test


def recommend(delta: float, significant: str, cost_per_seed: Mapping[str, float | None], resolved_per_seed: Mapping[str, float],
              max_dollars_per_extra_resolve: float | None, role: str = "regression",
              seeds: int | None = None) -> tuple[str, str]:  # fmt: skip
    """The Piper-rule verdict and why: keep only a significant gain whose cost does not swallow it.

    * undetermined evidence -> pare_back (nothing is promoted on inadmissible evidence);
    * a significant gain on a development set -> pare_back (promotion is the regression set's verdict);
    * significant and worse, or not significant and not better -> reject;
    * not significant but pointing up -> pare_back (indistinguishable from the baseline);
    * significant and better with fewer than 5 seeds (``seeds``) -> pare_back (RFC 5.3);
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
    if seeds is not None and seeds < PROMOTION_SEEDS:
        return "pare_back", (f"{seeds} seed(s): keep needs at least {PROMOTION_SEEDS} (RFC 5.3), whatever the "
                             "p-value")  # fmt: skip
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


def record_fields() -> dict[str, list[str]]:
    """The exact field lists of the records (for tests and docs)."""
    return {kind.__name__: [f.name for f in fields(kind)]
            for kind in (ABComparison, FrozenConfig, Arm, Cost, ComparisonResult)}  # fmt: skip
