"""A verification's reward, in the task's metric space. Pure.

:func:`compute_reward` turns per-test outcomes into the task's reward: ``binary`` (1.0 only when
every test passes), ``continuous_reward`` (the share of tests passed, optionally weighted, with the
task's solved threshold) or ``tiers`` (incomplete / partial / complete, as declared).
:func:`script_reward` reads the reward the task's own ``tests/test.sh`` wrote where Harbor reads it
(``reward.txt``, else ``reward.json``), every named dimension kept (``named_rewards`` when there is
no single reward). :meth:`Reward.reward_file` is what this verifier writes there in its turn, and
:func:`matches` is how a test name declared in ``task.toml`` names a test that ran.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .. import nesting
from .task import NO_TIER, RewardRules

METRIC_SPACES: Final = ("binary", "continuous_reward", "tiers", "named_rewards")
REWARD_TXT: Final = "reward.txt"
REWARD_JSON: Final = "reward.json"
C_VERIFIER_LOGS: Final = "/logs/verifier"  # in the container: where the test script writes its reward
VERIFIER_SCRIPT: Final = "tests/test.sh"


def matches(declared: str, test_id: str) -> bool:
    """Whether a test name declared in task.toml (``test_x``, ``test_x[a]``, a node id) names ``test_id``."""
    base = test_id.split("[", 1)[0]
    if "::" in declared:
        return declared in (test_id, base)
    return declared in (test_id.rsplit("::", 1)[-1], base.rsplit("::", 1)[-1])



@dataclass(frozen=True)
class Reward:
    """A verification's reward in the task's metric space."""

    metric_space: str
    reward: float
    threshold: float | None
    solved: bool
    passed: int | None  # None: the reward came from the task's test script, which names no tests
    total: int | None
    tier: str | None = None  # the tier reached (NO_TIER for none); None when the task declares no tiers
    tier_rank: int | None = None
    tiers: Mapping[str, bool] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()  # declared test names that named no test of the run
    # every named reward the task's test script wrote (reward.json's keys, or "reward" for reward.txt)
    dimensions: Mapping[str, float] = field(default_factory=dict)
    source: str | None = None  # the reward file it was read from (None: computed by this verifier)

    def named(self) -> dict[str, float | int]:
        """The named rewards written to ``reward.json`` (numbers only, as Harbor keeps them)."""
        data: dict[str, float | int] = {"reward": self.reward, "solved": int(self.solved)}
        if self.passed is not None and self.total is not None:
            data.update(tests_passed=self.passed, tests_total=self.total)
        if self.tier_rank is not None:
            data["tier"] = self.tier_rank
        return data

    def reward_file(self) -> tuple[str, str]:
        """Where Harbor reads this reward: ``reward.txt`` for a binary task, else ``reward.json``."""
        if self.metric_space == "binary":
            return REWARD_TXT, ("1" if self.solved else "0") + "\n"
        return REWARD_JSON, json.dumps(self.named(), indent=2) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric_space": self.metric_space,
            "reward": self.reward,
            "threshold": self.threshold,
            "solved": self.solved,
            "tests_passed": self.passed,
            "tests_total": self.total,
            "tier": self.tier,
            "tier_rank": self.tier_rank,
            "tiers": dict(self.tiers),
            "unmatched": list(self.unmatched),
            "dimensions": dict(self.dimensions),
            "source": self.source,
        }


def compute_reward(rules: RewardRules, outcomes: Sequence[tuple[str, bool]]) -> Reward:
    """The reward of a run from ``(test id, passed)`` pairs, in the metric space of ``rules``.

    ``binary``: 1.0 when there is at least one test and every one passed, else 0.0.
    ``continuous_reward``: the share of tests passed, each weighing its declared weight
    (1.0 when none is declared), in [0, 1]; solved when it reaches the threshold.
    ``tiers``: the tiers are cumulative, lowest first; the tier reached is the last one
    such that it and every tier before it have all their tests passed; the reward is the
    share of tiers reached. Declared tiers are reported in every metric space.
    """
    passed = {test_id: ok for test_id, ok in outcomes}
    total = len(passed)
    count = sum(passed.values())
    unmatched: list[str] = []

    def ids_of(names: Sequence[str]) -> list[str]:
        hits = []
        for name in names:
            mine = [t for t in passed if matches(name, t)]
            if not mine and name not in unmatched:
                unmatched.append(name)
            hits.extend(mine)
        return hits

    tiers: dict[str, bool] = {}
    rank: int | None = None
    if rules.tiers:
        rank = 0
        for declared in rules.tiers:
            names = declared.tests or ()
            ids = list(passed) if declared.tests is None else ids_of(names)
            complete = all(any(matches(n, t) for t in passed) for n in names)
            tiers[declared.name] = bool(ids) and complete and all(passed[t] for t in ids)
        for declared in rules.tiers:
            if not tiers[declared.name]:
                break
            rank += 1
    tier = None if rank is None else (rules.tiers[rank - 1].name if rank else NO_TIER)
    space = rules.metric_space
    threshold = rules.solved_threshold
    if space == "continuous_reward":
        weight = {t: 1.0 for t in passed}
        for name, value in rules.weights.items():
            for test_id in ids_of([name]):
                weight[test_id] = value
        whole = sum(weight.values())
        reward = sum(w for t, w in weight.items() if passed[t]) / whole if whole > 0 else 0.0
        reward = min(1.0, max(0.0, reward))
        solved = threshold is not None and round(reward, 12) >= threshold
    elif space == "tiers":
        assert rank is not None
        reward = rank / len(rules.tiers)
        solved = rank == len(rules.tiers)
    else:
        solved = total > 0 and count == total
        reward = 1.0 if solved else 0.0
    return Reward(space, reward, threshold, solved, count, total, tier, rank, tiers, tuple(unmatched))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def script_reward(rules: RewardRules, logs: Path, script: str = VERIFIER_SCRIPT) -> tuple[Reward | None, str | None]:
    """The reward a task's own test script wrote to ``logs`` (the container's ``/logs/verifier``):
    ``(reward, None)``, or ``(None, why there is no verdict)``.

    Harbor reads ``reward.txt`` (one number) first, then ``reward.json`` (named numbers). Every
    named reward is kept (:attr:`Reward.dimensions`), as written: any finite number. The reward is
    ``reward.txt``'s number, else ``reward.json``'s ``reward`` (or its only value); a ``reward.json``
    of several dimensions and no ``reward`` is in the ``named_rewards`` metric space, solved when
    every dimension reaches the threshold (1 unless ``[verifier] threshold`` says otherwise), its
    reward the lowest dimension. A ``tiers`` task needs ``tier`` (0 to the number of tiers) in
    ``reward.json``; the script names no tests, so passed and total are unknown.
    """
    json_file, txt_file = logs / REWARD_JSON, logs / REWARD_TXT
    value: Any
    if txt_file.is_file():
        source = f"{C_VERIFIER_LOGS}/{REWARD_TXT}"
        text = txt_file.read_text(encoding="utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            return None, f"{script} wrote {source}: expected one number, got {text[:80]!r}"
        named: dict[str, Any] = {"reward": value}
    elif json_file.is_file():
        source = f"{C_VERIFIER_LOGS}/{REWARD_JSON}"
        text = json_file.read_text(encoding="utf-8", errors="replace")
        try:
            data = nesting.loads(text)
        except ValueError as exc:
            return None, f"{script} wrote {source} that is not JSON ({exc})"
        if not isinstance(data, dict) or not data or not all(_number(v) for v in data.values()):
            return None, f"{script} wrote {source}: expected an object of named numbers, got {text.strip()[:80]!r}"
        named = data
        value = data["reward"] if "reward" in data else next(iter(data.values())) if len(data) == 1 else None
    else:
        return None, f"{script} wrote no reward ({C_VERIFIER_LOGS}/{REWARD_TXT} or {REWARD_JSON})"
    dimensions: dict[str, float] = {}
    for key, number in named.items():
        try:
            number = float(number)
        except OverflowError:
            return None, f"{script} wrote {source}: {key} is a number too large for a float"
        if not math.isfinite(number):
            return None, f"{script} wrote {source}: expected finite numbers, got {key} = {number!r}"
        dimensions[str(key)] = number
    space, threshold = rules.metric_space, rules.solved_threshold
    tier: str | None = None
    rank: int | None = None
    tiers: dict[str, bool] = {}
    if rules.tiers:
        raw = named.get("tier")
        if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= len(rules.tiers):
            rank = raw
            tier = rules.tiers[rank - 1].name if rank else NO_TIER
            tiers = {t.name: index < rank for index, t in enumerate(rules.tiers)}
        elif space == "tiers":
            return None, (f"{script} wrote {source} without the tier reached ('tier': 0 to {len(rules.tiers)} in "
                          f"{REWARD_JSON}): the task's tiers need it, or per-test outcomes (pytest in the image)")  # fmt: skip
    if space == "tiers":
        assert rank is not None
        reward, solved = rank / len(rules.tiers), rank == len(rules.tiers)
    elif value is None:  # several dimensions, none of them "reward": every one must reach the threshold
        space = "named_rewards"
        threshold = rules.threshold if rules.threshold is not None else 1.0
        reward = min(dimensions.values())
        solved = all(round(v, 12) >= threshold for v in dimensions.values())
    else:  # the script's reward, as written; solved at the threshold (binary: 1)
        reward = float(value)
        solved = threshold is not None and round(reward, 12) >= threshold
    return Reward(space, reward, threshold, solved, None, None, tier, rank, tiers, dimensions=dimensions,
                  source=source), None  # fmt: skip
