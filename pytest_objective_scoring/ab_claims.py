"""The claim ladder (RFC section 4), decided by rule from an A/B comparison's facts (issue 15).

A claim is recomputed each time a comparison is read (``ab show``, ``ab report``), against the
ledger as it is then: the runs' dispositions under the current audits, every experiment on the same
change, the replications on other benchmark families. A claim that no longer holds is downgraded,
saying why; the stored record itself never changes (the ledger is append-only).

- **C0**: every arm graded on every seed and task, with a verdict.
- **C1**: C0, and a ``passive`` candidate arm changed no outcome of the ``native`` baseline.
- **C2**: all of :func:`c2_blockers` clear: admissible evidence now; a valid arm pair
  (:data:`C2_PAIRS`, harness versions differing); at least :data:`C2_MIN_TASKS` tasks and
  :data:`PROMOTION_SEEDS` seeds; the arms graded in identical environments; a preregistered
  smallest effect the design had the power to detect; a significant uplift once every experiment on
  the same change is counted (Holm); and ``keep``.
- **C3**: C2 here and C2 on another preregistered comparison of the same change on another benchmark
  family: another ``benchmark.id`` by :func:`.identity.text_key` (``synth-a`` and ``SYNTH-A``, or a
  look-alike spelling, are one family) *and* no problem in common (:func:`.identity.problem_keys`: one
  shared key is one problem: the whole task's, its fix's code, or its tests' code with FAIL_TO_PASS), so
  the same problems under new names, ids, repositories, commits or reworded statements, with comments
  added or PASS_TO_PASS ids dropped, do not count; nor do problems recorded by an older version, whose
  identities cannot be compared with today's.
- **C4** is never reached from benchmark evidence alone: said once, as the scope of every claim, not
  as a reason a claim went down.

This module never imports pytest.
"""

from __future__ import annotations

from typing import Any, Final, Mapping, Sequence

from .ab import PROMOTION_SEEDS
from .identity import FACET_PREFIXES, PROBLEM_KEY_PREFIX, problem_key, text_key

__all__ = ["C2_MAX_ALPHA", "C2_MIN_TASKS", "C2_PAIRS", "C4_SCOPE", "LEVELS", "c2_blockers", "claim_level", "pair_problem",
           "problem_identity"]

LEVELS: Final = ("none", "C0", "C1", "C2", "C3", "C4")
# Below 20 tasks a claim rests on a handful of tasks: one task moves the task-level delta by 5 points
# or more, and a task-level test (tasks are the sample) has too few units for its p-value to mean much
# beyond "these tasks". 20 tasks is the floor for a claim about a benchmark, not a sufficient design:
# the preregistered power computation decides whether a design can reach its smallest effect.
C2_MIN_TASKS: Final = 20
# (baseline kind, candidate kind) pairs that isolate a change (RFC 5.2): a governed profile against
# the native scaffold or the passive observer, or one mechanism against its governed parent (either
# way round). native against passive is C1's question (does observing change anything), not C2's.
C2_MAX_ALPHA: Final = 0.05  # a manifest may choose a stricter alpha, never a looser one for C2
C2_PAIRS: Final = frozenset({("native", "governed"), ("passive", "governed"), ("ablation", "governed"),
                             ("governed", "ablation")})  # fmt: skip


problem_identity = problem_key  # the one definition of a problem, shared with the sets (tests use this name)
C4_SCOPE: Final = ("C4 is never reached from benchmark evidence: product promotion needs qualification outside it "
                   "(RFC section 4)")  # fmt: skip


def _comparable(problems: Sequence[str] | None) -> bool:
    """Whether a comparison's problems are today's identities (:func:`.identity.problem_key`): an older
    version's digests cannot show two comparisons disjoint."""
    known = bool(problems) and all(isinstance(p, str) and p.startswith((PROBLEM_KEY_PREFIX, *FACET_PREFIXES))
                                   for p in problems or [])  # fmt: skip
    return known and any(str(p).startswith(FACET_PREFIXES) for p in problems or [])  # recorded with its parts' keys


def pair_problem(arm_kinds: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the arms are not a valid pair for C2, or None."""
    arms = {a["name"]: a for a in arm_kinds}
    base, cand = arms.get("baseline", {}), arms.get("candidate", {})
    pair = (base.get("kind"), cand.get("kind"))
    if pair not in C2_PAIRS:
        allowed = ", ".join(f"{b} -> {c}" for b, c in sorted(C2_PAIRS))
        return f"arms {pair[0]} -> {pair[1]} do not isolate a change (valid pairs: {allowed})"
    if base.get("harness_version") is not None and base.get("harness_version") == cand.get("harness_version"):
        return (f"both arms declare harness version {base.get('harness_version')!r}: the difference under test must be "
                "declared as a harness version of its own")  # fmt: skip
    return None


def c2_blockers(details: Mapping[str, Any], record: Mapping[str, Any], holm_p: float | None) -> list[str]:
    """Every reason the comparison does not reach C2 (none: it does)."""
    result = record["result"]
    alpha = float(details.get("test", {}).get("alpha", 0.05))
    kinds = {a["name"]: a["kind"] for a in details["arm_kinds"]}
    why = []
    if not details.get("admissible"):
        why.append("the evidence is not admissible (" + "; ".join(details.get("inadmissible_because") or ["see the run"]) + ")")
    problem = pair_problem(details["arm_kinds"])
    if problem:
        why.append(problem)
    tasks = int(details.get("tasks") or 0)
    if tasks < C2_MIN_TASKS:
        why.append(f"{tasks} task(s), fewer than {C2_MIN_TASKS} (docs/ab.md: why 20)")
    if len(record["seeds"]) < PROMOTION_SEEDS:
        why.append(f"{len(record['seeds'])} seed(s), fewer than {PROMOTION_SEEDS}")
    parity = details.get("environment_parity") or {}
    if not parity.get("identical"):
        why.append("the arms were not graded in identical environments (" + (parity.get("why") or "not recorded") + ")")
    power = details.get("power") or {}
    if power.get("min_effect") is None:
        why.append("no smallest effect worth detecting was preregistered (decision_rule.min_effect)")
    elif not power.get("powered"):
        why.append(power.get("why") or "the preregistered design could not detect its smallest effect")
    elif result["delta"] < power["min_effect"]:
        why.append(f"the uplift {result['delta']:+.3f} is below the preregistered smallest effect worth having "
                   f"({power['min_effect']:g})")  # fmt: skip
    if alpha > C2_MAX_ALPHA:
        why.append(f"alpha {alpha:g} is looser than {C2_MAX_ALPHA:g}, the most a C2 claim accepts")
    if not (details.get("test") or {}).get("primary"):
        why.append("recorded by an older version whose significance pooled (seed, task) pairs, not tasks: "
                   "its p-value is not a task-level test (run the experiment again under a new name)")  # fmt: skip
    if result["delta"] <= 0 or result["significant"] != "yes":
        why.append("no significant uplift")
    elif holm_p is None or holm_p >= alpha:
        count = int((details.get("family") or {}).get("experiments") or 1)
        why.append(f"not significant once the {count} experiments on this change are counted (Holm-adjusted p = "
                   f"{'n/a' if holm_p is None else format(holm_p, '.4g')}, alpha {alpha:g})")  # fmt: skip
    if result["recommendation"] != "keep":
        why.append(f"the recommendation is {result['recommendation']}")
    if kinds.get("candidate") == "passive":
        why.append("a passive arm changes no decision: it cannot show uplift")
    return why


def claim_level(details: Mapping[str, Any], record: Mapping[str, Any], *, holm_p: float | None = None,
                replications: Sequence[Mapping[str, Any]] = ()) -> tuple[str, list[str]]:  # fmt: skip
    """The highest claim the evidence supports, and why each higher one does not hold.

    ``holm_p`` is this experiment's p-value adjusted over every experiment on the same change;
    ``replications`` the other experiments on the same change as ``{"name", "benchmark", "problem_digests",
    "c2"}`` (``c2``: they reach C2 now; ``problem_digests``: :func:`.identity.problem_key` of their tasks).
    The last reason is :data:`C4_SCOPE`, the scope of every claim, never a ``not ...`` reason."""
    reasons: list[str] = []
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
    blockers = c2_blockers(details, record, holm_p)
    if blockers:
        reasons.append("not C2: " + "; ".join(blockers))
    else:
        level = "C2"
        reasons.append(f"C2: admissible, {details['tasks']} tasks, {len(record['seeds'])} seeds, a significant uplift "
                       f"(Holm-adjusted p = {holm_p:.4g}) kept at its cost; scoped to benchmark {details['benchmark']['id']}, "
                       f"model {record['frozen']['model']}, this harness and budget")  # fmt: skip
        mine = set(details.get("problem_digests") or [])
        found, near = [], []
        for other in replications:
            if not other.get("c2"):
                continue
            if text_key(str(other["benchmark"])) == text_key(str(details["benchmark"]["id"])):
                same = "the same benchmark id" if other["benchmark"] == details["benchmark"]["id"] else \
                    f"{other['benchmark']}: the same benchmark family as {details['benchmark']['id']}, spelt otherwise"
                near.append(f"{other['name']} ({same})")
            elif mine and other.get("problem_digests") and not (_comparable(list(mine)) and _comparable(other["problem_digests"])):
                near.append(f"{other['name']} ({other['benchmark']}: problems recorded by an older version cannot be "
                            "shown disjoint from today's)")  # fmt: skip
            elif not mine or not other.get("problem_digests") or mine & set(other["problem_digests"]):
                near.append(f"{other['name']} ({other['benchmark']}: shares tasks with this one)")
            else:
                found.append(other)
        if found:
            level = "C3"
            reasons.append("C3: replicated at C2 on another benchmark family with no task in common: "
                           + ", ".join(f"{o['name']} ({o['benchmark']})" for o in found))  # fmt: skip
        else:
            reasons.append("not C3: no C2 replication of this change on another benchmark family with disjoint tasks"
                           + (f" ({'; '.join(near)} do not count)" if near else ""))  # fmt: skip
    reasons.append(C4_SCOPE)
    return level, reasons
