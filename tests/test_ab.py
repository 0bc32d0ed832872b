"""The A/B comparison: records, manifest rules, statistics against scipy, the decision, the claim
ladder; and end to end on real gradings of the fixture repos over several seeds."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import ab

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is a test dependency: pip install -e '.[test]'")

FROZEN = {"model": "model-x-2026-01", "temperature": 0.2, "token_budget": 200000, "tool_budget": 50,
          "task_set": "regression", "environment_image": "python:3.11-fixtures", "timeout": 120, "candidate_count": 1}  # fmt: skip
ACCESS = {"network": False, "repository_history": False, "hidden_tests": False, "gold": False}
MANIFEST = {
    "name": "exp-1",
    "benchmark": {"id": "fixtures", "revision": "1", "metric_space": "binary_resolved"},
    "change_under_test": "localization subsystem v2",
    "frozen": FROZEN,
    "arms": [{"name": "baseline", "harness_version": "h-1.0", "kind": "native", "access": ACCESS},
             {"name": "candidate", "harness_version": "h-1.1", "kind": "governed", "access": ACCESS}],
    "seeds": [1, 2, 3, 4, 5],
    "primary_metric": "resolve_rate",
    "decision_rule": {"alpha": 0.05},
}  # fmt: skip


def test_the_records_have_exactly_the_spec_fields():
    assert ab.record_fields() == {
        "ABComparison": ["change_under_test", "frozen", "arms", "seeds", "result"],
        "FrozenConfig": ["model", "temperature", "token_budget", "tool_budget", "task_set", "environment_image", "timeout",
                         "candidate_count"],
        "Arm": ["name", "harness_version", "resolved", "mean", "variance", "confidence_interval", "cost"],
        "Cost": ["tokens", "calls", "cpu", "wall_time", "dollars"],
        "ComparisonResult": ["delta", "significant", "recommendation"],
    }  # fmt: skip


# ---------------------------------------------------------------- the manifest


def test_a_manifest_parses_and_its_digest_is_canonical():
    manifest = ab.parse_manifest(MANIFEST, "m.json")
    assert manifest.frozen.model == "model-x-2026-01" and [a.name for a in manifest.arms] == ["baseline", "candidate"]
    reordered = dict(reversed(list(MANIFEST.items())))
    assert ab.manifest_digest(reordered) == ab.manifest_digest(MANIFEST)
    changed = copy.deepcopy(MANIFEST)
    changed["frozen"]["temperature"] = 0.7
    assert ab.manifest_digest(changed) != ab.manifest_digest(MANIFEST)


def edit(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(MANIFEST)
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("frozen.model", KeyError, "frozen: field 'model' is missing"),
        ("frozen.token_budget", "lots", "field 'token_budget': expected a whole number"),
        ("frozen.seed_strategy", "x", "'seed_strategy' is not a frozen field"),
        ("frozen.candidate_count", 0, "'candidate_count': must be at least 1"),
        ("frozen.candidate_count", 3, "this comparison grades one candidate per task and seed"),
        ("model_training_cutoff", "", "field 'model_training_cutoff': expected a date"),
        ("arms.1.kind", "better", "field 'kind': 'better' is not one of native, passive, governed, ablation"),
        ("arms.1.name", "treatment", "the two arms must be named baseline and candidate"),
        ("seeds", [1, 1], "expected a non-empty list of distinct whole numbers"),
        ("seeds", [], "expected a non-empty list of distinct whole numbers"),
        ("primary_metric", "vibes", "the comparison's primary metric is resolve_rate"),
        ("decision_rule.alpha", 0.2, "decision_rule.alpha: expected a number above 0 and at most 0.1, got 0.2"),
        ("decision_rule.task_effect_sd", 0.0, "decision_rule.task_effect_sd: expected the assumed spread of per-task effects, between 0.1 and 1"),
        ("decision_rule.min_effect", 1.0, "decision_rule.min_effect: expected the smallest uplift worth detecting"),
        ("decision_rule.run_effect_sd", -0.1, "decision_rule.run_effect_sd: expected the assumed spread of a seed run's"),
        ("decision_rule.run_effect_sd", True, "decision_rule.run_effect_sd: expected"),
        ("frozen.timeout", float("inf"), "field 'timeout': expected a finite number, got inf"),
        ("change_under_test", "loc v2\n**Claim level supported: C3**", "field 'change_under_test': control characters"),
        ("model_training_cutoff", "not a date", "field 'model_training_cutoff': cutoff 'not a date': not an ISO 8601"),
        ("benchmark.metric_space", "pass_at_k", "this comparison grades binary_resolved"),
        ("change_under_test", "", "field 'change_under_test': expected a non-empty string"),
        ("verdict", "keep", "field 'verdict' is not part of a manifest"),
    ],
)  # fmt: skip
def test_a_bad_manifest_is_refused_naming_the_field(path, value, expected):
    with pytest.raises(ab.ABError) as caught:
        ab.parse_manifest(edit(path, value), "m.json")
    assert expected in str(caught.value) and str(caught.value).startswith("m.json")


def test_a_run_shock_in_the_decision_rule_enters_the_power_statement():
    from pytest_objective_scoring.commands.ab import design_power

    plain = ab.parse_manifest(MANIFEST, "m")
    shocked = ab.parse_manifest(edit("decision_rule.run_effect_sd", 0.1), "m")
    assert plain.run_effect_sd == 0.0 and shocked.run_effect_sd == 0.1
    calm, rough = design_power(plain, 30), design_power(shocked, 30)
    assert rough["mde"] > calm["mde"] and "seed-run shocks with sd 0.1 (decision_rule.run_effect_sd)" in rough["statement"]


def test_frozen_fields_a_run_declares_are_checked_and_undeclared_ones_are_unknown():
    frozen = ab.parse_manifest(MANIFEST, "m").frozen
    assert ab.frozen_mismatches({"model": "model-x-2026-01", "temperature": 0.2}, frozen)[0] == []
    differ, missing = ab.frozen_mismatches({"temperature": 0.7}, frozen)
    assert differ == ["temperature: the run says 0.7, the manifest 0.2"] and "model" in missing and "temperature" not in missing


# ---------------------------------------------------------------- statistics, against scipy


def pairs(counts: list[int], tasks: int = 100) -> dict[tuple[int, str], bool]:
    """Per (seed, task): resolved, for seeds resolving the first ``count`` tasks."""
    return {(seed, f"t{i:03d}"): i < count for seed, count in enumerate(counts, 1) for i in range(tasks)}


TASKS = [f"t{i:03d}" for i in range(100)]


def test_the_spec_example_five_seeds_each_is_not_yet_an_uplift_and_agrees_with_a_hand_computation():
    """The spec's {33, 36, 35, 34, 37} against {36, 39, 38, 40, 37} (task i resolved when i < the count):
    "the picture is different", but the five runs' differences (3, 3, 3, 6 and 0 points) vary as
    much as they do, and the run component rests on five runs: p = 0.097, not significant."""
    baseline, candidate = [33, 36, 35, 34, 37], [36, 39, 38, 40, 37]
    delta, significant, test = ab.compare(pairs(baseline), pairs(candidate), [1, 2, 3, 4, 5], TASKS, 0.05, admissible=True)
    assert delta == pytest.approx(0.03) and significant == "no"
    d = [[float(i < c) - float(i < b) for i in range(100)] for b, c in zip(baseline, candidate)]
    by_task = [sum(row[i] for row in d) / 5 for i in range(100)]
    by_run = [sum(row) / 100 for row in d]
    ms_task = 5 * sum((m - 0.03) ** 2 for m in by_task) / 99
    ms_run = 100 * sum((m - 0.03) ** 2 for m in by_run) / 4
    ms_error = sum((d[s][i] - by_task[i] - by_run[s] + 0.03) ** 2 for s in range(5) for i in range(100)) / (99 * 4)
    assert ms_run == pytest.approx(0.045) and ms_task > ms_error and ms_run > ms_error
    se = ((ms_task + ms_run - ms_error) / 500) ** 0.5  # both components in: df capped at the 5 runs' 4
    assert "two-way random-effects" in test["test"] and test["tasks"] == 100 and test["degrees_of_freedom"] == 4
    assert test["p_value"] == pytest.approx(2 * scipy_stats.t.sf(0.03 / se, 4)) == pytest.approx(0.0969, abs=1e-4)
    half = scipy_stats.t.ppf(0.975, 4) * se
    assert test["interval"] == pytest.approx([0.03 - half, 0.03 + half]) and test["interval"][0] < 0 < test["interval"][1]
    # the secondary views, labelled and computed as before
    mcnemar, t_test = test["secondary"]["mcnemar_pooled_pairs"], test["secondary"]["t_test_over_seeds"]
    assert mcnemar["discordant"] == {"candidate_only": 15, "baseline_only": 0} and "independent" in mcnemar["assumes"]
    assert mcnemar["p_value"] == pytest.approx(scipy_stats.binomtest(15, 15, 0.5).pvalue)
    over_seeds = scipy_stats.ttest_rel([c / 100 for c in candidate], [b / 100 for b in baseline])
    assert t_test["p_value"] == pytest.approx(over_seeds.pvalue) and t_test["statistic"] == pytest.approx(over_seeds.statistic)
    mean, variance, (low, high) = ab.arm_statistics(candidate, 100, 0.05)
    rates = [c / 100 for c in candidate]
    assert mean == pytest.approx(0.38) and variance == pytest.approx(scipy_stats.tvar(rates))
    wilson = scipy_stats.binomtest(38, 100).proportion_ci(confidence_level=0.95, method="wilson")
    assert (low, high) == pytest.approx((wilson.low, wilson.high)), "the arm interval is about tasks: Wilson over 100 tasks"


def test_a_three_point_difference_on_one_seed_is_never_yes():
    delta, significant, test = ab.compare(pairs([35]), pairs([38]), [1], TASKS, 0.05, admissible=True)
    assert delta == pytest.approx(0.03) and significant == "no" and "one seed" in test["note"]
    mean, variance, (low, high) = ab.arm_statistics([38], 100, 0.05)
    ci = scipy_stats.binomtest(38, 100).proportion_ci(confidence_level=0.95, method="wilson")
    assert variance is None and (low, high) == pytest.approx((ci.low, ci.high))
    # even a huge single-seed difference is one draw, not a replicated effect
    assert ab.compare(pairs([0]), pairs([100]), [1], TASKS, 0.05, admissible=True)[1] == "no"


def test_seeds_add_no_significance_without_tasks():
    # three tasks of 100 always gained: over one seed or five, it is three tasks (the pooled view said "yes")
    five = ab.compare(pairs([35] * 5), pairs([38] * 5), [1, 2, 3, 4, 5], TASKS, 0.05, admissible=True)
    fifty = ab.compare(pairs([35] * 50), pairs([38] * 50), list(range(1, 51)), TASKS, 0.05, admissible=True)
    assert five[1] == fifty[1] == "no" and five[2]["p_value"] == pytest.approx(fifty[2]["p_value"])
    assert five[2]["p_value"] > 0.05
    assert fifty[2]["secondary"]["mcnemar_pooled_pairs"]["p_value"] < 1e-40, "the pooled view grows with free seeds"
    # the same three points spread over 30 tasks gained and none lost: that is evidence
    spread = {(s, t): i < 35 for s in range(1, 6) for i, t in enumerate(TASKS)}
    gained = {(s, t): i < 35 or (35 <= i < 65 and (s + i) % 10 == 0) for s in range(1, 6) for i, t in enumerate(TASKS)}
    assert ab.compare(spread, gained, [1, 2, 3, 4, 5], TASKS, 0.05, admissible=True)[1] == "yes"
    two = ab.compare(pairs([35, 35]), pairs([36, 36]), [1, 2], TASKS, 0.05, admissible=True)
    assert two[1] == "no" and two[2]["p_value"] > 0.3  # one task gained: nothing proven
    # the same mean gain made of many wins and losses: drowned in noise
    noisy_base = {(s, t): (i + s) % 2 == 0 for s in range(1, 6) for i, t in enumerate(TASKS)}
    noisy_cand = {(s, t): (i + s) % 2 == 1 or i < 3 for s in range(1, 6) for i, t in enumerate(TASKS)}
    assert ab.compare(noisy_base, noisy_cand, [1, 2, 3, 4, 5], TASKS, 0.05, admissible=True)[1] == "no"


def test_one_task_that_one_arm_always_resolves_is_never_an_uplift():
    tasks = [f"t{i}" for i in range(10)]
    base = {(s, t): False for s in range(1, 7) for t in tasks}
    cand = {(s, t): t == "t0" for s in range(1, 7) for t in tasks}
    delta, significant, test = ab.compare(base, cand, list(range(1, 7)), tasks, 0.05, admissible=True)
    assert significant == "no" and test["p_value"] == pytest.approx(2 * scipy_stats.t.sf(1.0, 9))
    many = {(s, t): t == "t0" for s in range(1, 61) for t in tasks}
    none = {(s, t): False for s in range(1, 61) for t in tasks}
    again = ab.compare(none, many, list(range(1, 61)), tasks, 0.05, admissible=True)[2]
    assert again["p_value"] == pytest.approx(test["p_value"]), "one task, whatever its seeds, is one task: t = 1"
    assert test["secondary"]["mcnemar_pooled_pairs"]["p_value"] == pytest.approx(0.03125)  # the old, pooled answer


def test_seeds_that_agree_exactly_keep_the_binomial_uncertainty_and_the_interval_has_no_jump():
    mean, variance, interval = ab.arm_statistics([0, 0, 0, 0, 0], 3, 0.05)
    ci = scipy_stats.binomtest(0, 3).proportion_ci(confidence_level=0.95, method="wilson")
    assert (mean, variance) == (0.0, 0.0) and interval == pytest.approx((ci.low, ci.high)) and interval[1] > 0.5
    # seeds that agree exactly and seeds that almost agree: intervals of about the same width
    exact = ab.arm_statistics([40, 40, 40, 40, 40], 100, 0.05)[2]
    almost = ab.arm_statistics([40, 41, 40, 39, 40], 100, 0.05)[2]
    assert exact == pytest.approx(almost, abs=1e-9) and exact[1] - exact[0] > 0.15


def test_inadmissible_evidence_is_undetermined():
    result = ab.compare(pairs([33, 36, 35, 34, 37]), pairs([36, 39, 38, 40, 37]), [1, 2, 3, 4, 5], TASKS, 0.05, admissible=False)
    assert result[1] == "undetermined"


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(10, 3, 1, 0.3), (10, 0, 5, 0.0), (10, 10, 3, 1.0), (5, 2, 5, 1.0), (3, 1, 2, 1 - math.comb(2, 2) / math.comb(3, 2)),
     (200, 13, 10, 1 - math.comb(187, 10) / math.comb(200, 10)), (4, 2, 5, None)],
)  # fmt: skip
def test_pass_at_k_is_the_unbiased_estimator_and_undefined_below_k_samples(n, c, k, expected):
    assert ab.pass_at_k(n, c, k) == (pytest.approx(expected) if expected is not None else None)


# ---------------------------------------------------------------- the decision and the claim


def test_a_candidate_whose_cost_swallows_its_gain_is_not_kept():
    resolved = {"baseline": 35.0, "candidate": 38.0}
    assert ab.recommend(0.03, "yes", {"baseline": 4.0, "candidate": 4.2}, resolved, None)[0] == "keep"
    ten_times, why = ab.recommend(0.03, "yes", {"baseline": 4.0, "candidate": 40.0}, resolved, None)
    assert ten_times == "pare_back" and "the cost swallows the gain" in why
    assert ab.recommend(0.03, "yes", {"baseline": 4.0, "candidate": 40.0}, resolved, 20.0)[0] == "keep"
    assert ab.recommend(0.03, "yes", {"baseline": 4.0, "candidate": 40.0}, resolved, 5.0)[0] == "pare_back"


def test_a_development_set_never_promotes():
    verdict, why = ab.recommend(0.2, "yes", {"baseline": 1.0, "candidate": 1.0}, {"baseline": 1, "candidate": 2}, None, "development")
    assert verdict == "pare_back" and "regression set" in why


@pytest.mark.parametrize(
    ("delta", "significant", "expected"),
    [(0.03, "no", "pare_back"), (0.0, "no", "reject"), (-0.02, "no", "reject"), (-0.05, "yes", "reject"),
     (0.1, "undetermined", "pare_back")],
)  # fmt: skip
def test_the_recommendation_follows_the_piper_rule(delta, significant, expected):
    assert ab.recommend(delta, significant, {"baseline": 1.0, "candidate": 1.0}, {"baseline": 1, "candidate": 1}, None)[0] == expected


def test_keep_needs_five_seeds():
    resolved = {"baseline": 35.0, "candidate": 38.0}
    verdict, why = ab.recommend(0.03, "yes", {"baseline": 4.0, "candidate": 4.2}, resolved, None, seeds=2)
    assert verdict == "pare_back" and "keep needs at least 5" in why
    assert ab.recommend(0.03, "yes", {"baseline": 4.0, "candidate": 4.2}, resolved, None, seeds=5)[0] == "keep"


# ---------------------------------------------------------------- end to end, on real gradings

from .conftest import FIXTURES  # noqa: E402
from .runner_helpers import run_cli_here as run_cli  # noqa: E402 (in this process: see run_cli_here)

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
PROJECTS = {"fixtures__textstats-1": "textstats", "fixtures__intervals-1": "intervals", "fixtures__csvlite-1": "csvlite"}
# which tasks each seed's candidate patch resolves (the gold fix) or not (an empty patch)
BASELINE = {1: {"fixtures__textstats-1"}, 2: {"fixtures__intervals-1"}, 3: set(), 4: {"fixtures__csvlite-1"},
            5: {"fixtures__textstats-1"}}  # fmt: skip
CANDIDATE = {1: {"fixtures__textstats-1", "fixtures__intervals-1"}, 2: set(PROJECTS), 3: {"fixtures__csvlite-1", "fixtures__intervals-1"},
             4: {"fixtures__csvlite-1", "fixtures__textstats-1"}, 5: set(PROJECTS)}  # fmt: skip


def arm_file(tmp_path: Path, name: str, resolves: dict[int, set[str]], dollars: float, frozen: dict | None = FROZEN,
             seeds: tuple[int, ...] | None = None) -> Path:  # fmt: skip
    rows = []
    for seed in seeds or tuple(resolves):
        for instance_id, project in PROJECTS.items():
            patch = (FIXTURES / "patches" / project / "gold.diff").read_text() if instance_id in resolves[seed] else ""
            row = {"instance_id": instance_id, "seed": seed, "model_patch": patch, "tokens": 1000, "calls": 4, "dollars": dollars}
            if frozen is not None:
                row["frozen"] = frozen
            rows.append(row)
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def record_valid_audits(ledger: Path) -> None:
    """The three fixture tasks' audits, as `audit run` records a clean one (the checks themselves are
    tested in test_audit.py): without them every run is quarantined (task_audit_missing)."""
    from pytest_objective_scoring.audit_ledger import record_audit
    from pytest_objective_scoring.instances import load_instances
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(ledger) as opened:
        for instance in load_instances(DATASET):
            report = {"instance_id": instance.instance_id, "disposition": "valid", "complete": True, "findings": [], "checks": []}
            record_audit(opened, report, instance.fields, every_days=30, environment={"python": "test"})


def experiment(tmp_path: Path, audited: bool = True, **changes: Any) -> tuple[Path, Path]:
    """A ledger holding the regression set of the three fixture tasks (audited), and a manifest file."""
    tmp_path.mkdir(parents=True, exist_ok=True)  # a ledger is never made in a missing folder
    ledger = tmp_path / "ledger.sqlite"
    if not ledger.exists():
        made = run_cli("sets", "create", "regression", "--role", "regression", "--dataset", str(DATASET),
                       "--source", "static:fixtures", "--ledger", str(ledger))  # fmt: skip
        assert made.returncode == 0, made.stderr
        if audited:
            record_valid_audits(ledger)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({**MANIFEST, **changes}))
    return ledger, manifest


def ab_cli(*args: str, ledger: Path) -> Any:
    return run_cli("ab", *args, "--ledger", str(ledger))


def run_arms(manifest: Path, ledger: Path, baseline: Path, candidate: Path, *extra: str) -> Any:
    return ab_cli("run", str(manifest), "--arm", f"baseline={baseline}", "--arm", f"candidate={candidate}",
                  "--dataset", str(DATASET), "--repos", str(FIXTURES / "repos"), "--workers", "2", *extra, ledger=ledger)  # fmt: skip


@pytest.mark.slow
def test_one_seed_is_never_significant_and_unknown_frozen_fields_are_undetermined(tmp_path):
    ledger, manifest = experiment(tmp_path, name="one-seed", seeds=[2])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    single = run_arms(manifest, ledger, arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(2,)),
                      arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(2,)), "--json")  # fmt: skip
    assert single.returncode == 0, single.stderr
    result = json.loads(single.stdout)
    assert result["record"]["result"]["significant"] == "no", result["details"]["inadmissible_because"]
    assert result["record"]["result"]["delta"] == pytest.approx(2 / 3)
    assert result["record"]["result"]["recommendation"] == "pare_back" and result["details"]["claim"] == "C0"
    ledger2, manifest2 = experiment(tmp_path / "u", name="unknown-frozen", seeds=[2])
    assert ab_cli("preregister", str(manifest2), ledger=ledger2).returncode == 0
    unknown = run_arms(manifest2, ledger2, arm_file(tmp_path, "b2", BASELINE, 0.1, frozen=None, seeds=(2,)),
                       arm_file(tmp_path, "c2", CANDIDATE, 0.1, frozen={"model": FROZEN["model"]}, seeds=(2,)), "--json")  # fmt: skip
    output = json.loads(unknown.stdout)
    assert output["record"]["result"]["significant"] == "undetermined"
    assert "frozen fields not declared by the runs (unknown): candidate_count" in output["details"]["inadmissible_because"][0]
    ledger3, manifest3 = experiment(tmp_path / "q", audited=False, name="never-audited", seeds=[2])
    assert ab_cli("preregister", str(manifest3), ledger=ledger3).returncode == 0
    quarantined = run_arms(manifest3, ledger3, arm_file(tmp_path, "b3", BASELINE, 0.1, seeds=(2,)),
                           arm_file(tmp_path, "c3", CANDIDATE, 0.1, seeds=(2,)), "--json")  # fmt: skip
    details = json.loads(quarantined.stdout)["details"]
    assert "quarantined runs are not admissible: task_audit_missing (6)" in details["inadmissible_because"]


@pytest.mark.slow
def test_refusals_before_anything_is_graded(tmp_path):
    ledger, manifest = experiment(tmp_path, seeds=[1])
    base = arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(1,))
    cand = arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(1,))
    unregistered = run_arms(manifest, ledger, base, cand)
    assert unregistered.returncode == 2 and "is not preregistered" in unregistered.stderr
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    again = ab_cli("preregister", str(manifest), "--json", ledger=ledger)
    assert json.loads(again.stdout)["status"] == "already preregistered"
    changed = json.loads(manifest.read_text())
    changed["frozen"]["temperature"] = 0.9
    manifest.write_text(json.dumps(changed))
    moved = ab_cli("preregister", str(manifest), ledger=ledger)
    assert moved.returncode == 2 and "with another manifest: frozen changed" in moved.stderr
    later = run_arms(manifest, ledger, base, cand)
    assert later.returncode == 2 and "frozen changed after preregistration" in later.stderr
    changed["frozen"]["temperature"] = 0.2
    manifest.write_text(json.dumps(changed))
    drifted = arm_file(tmp_path, "d", CANDIDATE, 0.1, frozen={**FROZEN, "temperature": 0.7}, seeds=(1,))
    refused = run_arms(manifest, ledger, base, drifted)
    assert refused.returncode == 2 and "ran under another configuration than the manifest froze: temperature" in refused.stderr
    short = tmp_path / "short.jsonl"
    short.write_text("".join(line + "\n" for line in cand.read_text().splitlines()[:2]))
    partial = run_arms(manifest, ledger, base, short)
    assert partial.returncode == 2 and "seed 1 does not cover the task set regression@v1 exactly; missing fixtures__csvlite-1" in partial.stderr
    wrong_seed = arm_file(tmp_path, "w", {9: set()}, 0.1)
    bad_seed = run_arms(manifest, ledger, base, wrong_seed)
    assert bad_seed.returncode == 2 and "field 'seed': 9 is not one of the manifest's seeds [1]" in bad_seed.stderr
    rows = [json.loads(line) for line in DATASET.read_text().splitlines()]
    rows[0]["problem_statement"] += " (edited)"
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows))
    other = ab_cli("run", str(manifest), "--arm", f"baseline={base}", "--arm", f"candidate={cand}", "--dataset", str(edited),
                   "--repos", str(FIXTURES / "repos"), ledger=ledger)  # fmt: skip
    assert other.returncode == 2 and "differ(s) from the task set's content-addressed task(s)" in other.stderr
    with __import__("pytest_objective_scoring.ledger", fromlist=["Ledger"]).Ledger(ledger) as opened:
        assert list(opened.entries("score")) == [], "nothing was graded"
    over = arm_file(tmp_path, "over", CANDIDATE, 0.1, seeds=(1,))
    over.write_text(over.read_text().replace('"tokens": 1000', '"tokens": 999999'))
    budget = run_arms(manifest, ledger, base, over)
    assert budget.returncode == 2 and "999999 tokens exceed the frozen token_budget 200000" in budget.stderr
    missing_set = experiment(tmp_path / "x", name="no-set", frozen={**FROZEN, "task_set": "nowhere"})
    unknown_set = ab_cli("preregister", str(missing_set[1]), ledger=missing_set[0])
    assert unknown_set.returncode == 2 and "nowhere" in unknown_set.stderr


def pin_first_run(ledger: Path, manifest: Path, base: Path, cand: Path) -> None:
    """What the first `ab run` records before it grades: both arms' predictions, pinned."""
    from pytest_objective_scoring.commands import ab as ab_commands
    from pytest_objective_scoring.ledger import Ledger

    parsed, data = ab_commands._load_manifest(str(manifest))
    fingerprints = {arm: ab_commands._arm_predictions(path, arm, parsed)[3] for arm, path in (("baseline", base), ("candidate", cand))}
    with Ledger(ledger) as opened:
        ab_commands.pin_predictions(opened, parsed.name, ab.manifest_digest(data), fingerprints)


def rewrite(path: Path, tmp_path: Path, name: str, change: Any) -> Path:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    out = tmp_path / f"{name}.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in change(rows)))
    return out


@pytest.mark.parametrize("change, expected", [
    (lambda rows: [dict(r, model_patch="") if r["instance_id"] == "fixtures__textstats-1" else r for r in rows],
     "--arm candidate={path}: the predictions changed since experiment 'exp-1' pinned them at ledger seq"),
    (lambda rows: [dict(r, model_patch="") if r["instance_id"] == "fixtures__textstats-1" else r for r in rows],
     "fixtures__textstats-1 seed 1: field 'model_patch' changed (sha256:"),
    (lambda rows: [dict(r, dollars=0.25) if r["instance_id"] == "fixtures__intervals-1" else r for r in rows],
     "fixtures__intervals-1 seed 1: field 'dollars' changed (0.1 -> 0.25)"),
    (lambda rows: [{k: v for k, v in r.items() if k != "calls"} for r in rows],
     "fixtures__csvlite-1 seed 1: field 'calls' removed (was 4)"),
    (lambda rows: rows[1:], "fixtures__textstats-1 seed 1: removed (pinned, not in the file)"),
    (lambda rows: rows + [dict(rows[0], instance_id="fixtures__extra-1")], "fixtures__extra-1 seed 1: added (in the file, not pinned)"),
], ids=["patch", "patch-field", "cost-field-only", "cost-field-removed", "removed-prediction", "added-prediction"])  # fmt: skip
@pytest.mark.slow
def test_changed_predictions_are_refused_before_anything_is_graded(tmp_path, change, expected):
    ledger, manifest = experiment(tmp_path, seeds=[1])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    base = arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(1,))
    cand = arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(1,))
    pin_first_run(ledger, manifest, base, cand)
    changed = rewrite(cand, tmp_path, "changed", change)
    refused = run_arms(manifest, ledger, base, changed)
    assert refused.returncode == 2, refused.stderr
    assert expected.format(path=changed) in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(ledger) as opened:
        assert list(opened.entries("score")) == [], "nothing was graded"
        assert len(list(opened.entries("ab_predictions"))) == 1


def test_the_pin_names_every_change_by_arm_instance_and_field():
    from pytest_objective_scoring.commands.ab import prediction_changes

    pinned = {"t-1 seed 1": {"model_patch": "sha256:aa", "tokens": 10}, "t-2 seed 1": {"model_patch": None}}
    assert prediction_changes(pinned, pinned) == []
    now = {"t-1 seed 1": {"model_patch": "sha256:aa", "tokens": 11, "calls": 2}, "t-3 seed 1": {"model_patch": None}}
    assert prediction_changes(pinned, now) == [
        "t-1 seed 1: field 'calls' added (2)", "t-1 seed 1: field 'tokens' changed (10 -> 11)",
        "t-2 seed 1: removed (pinned, not in the file)", "t-3 seed 1: added (in the file, not pinned)"]  # fmt: skip


def test_a_quarantined_run_makes_the_comparison_undetermined():
    from types import SimpleNamespace

    from pytest_objective_scoring.commands.ab import summarize_comparison

    manifest = ab.parse_manifest({**MANIFEST, "seeds": [1, 2]}, "m")
    tasks = {"sha256:a": "t-a", "sha256:b": "t-b"}
    task_set = SimpleNamespace(instances=tasks, record=SimpleNamespace(set_id="regression@v1", role="regression"))

    def row(outcome: str) -> dict:
        return {"failure_class": outcome, "cost": {"tokens": 1, "calls": 1, "cpu": 1.0, "wall_time": 1.0, "dollars": 0.1},
                "cost_breakdown": {"model_dollars": 0.1}}

    rows = {(f"ab:exp-1/{arm}/seed{seed}", task): row("resolved" if arm == "candidate" else "not_resolved")
            for arm in ("baseline", "candidate") for seed in (1, 2) for task in tasks.values()}  # fmt: skip
    # an infrastructure failure is not a quarantined run: it is no outcome, and no comparison is computed over it
    # (tests/test_faults_ab.py); a run an audit quarantined is an outcome the comparison cannot use
    rows[("ab:exp-1/candidate/seed2", "t-b")] = {**row("not_resolved"), "disposition": "quarantined",
                                                  "reasons": ["task_audit_missing"]}  # fmt: skip
    record, details = summarize_comparison(manifest, sorted(tasks.items()), task_set, rows, [], "/usr/bin/python3")
    assert record["result"]["significant"] == "undetermined" and record["result"]["recommendation"] == "pare_back"
    assert details["inadmissible_because"] == ["quarantined runs are not admissible: task_audit_missing (1)"]
    from pytest_objective_scoring.ab_claims import claim_level

    level, reasons = claim_level(details, record)
    assert level == "C0" and "the evidence is not admissible (quarantined runs are not admissible" in reasons[1]
    assert [a["resolved"] for a in record["arms"]] == [[0, 0], [2, 1]]


@pytest.mark.slow
def test_the_comparison_refuses_invalid_runs(tmp_path):
    from pytest_objective_scoring.audit_ledger import record_audit
    from pytest_objective_scoring.instances import load_instances
    from pytest_objective_scoring.ledger import Ledger

    ledger, manifest = experiment(tmp_path, name="invalid-task", seeds=[1])
    with Ledger(ledger) as opened:  # a later audit found one task invalid: every verdict on it is invalid
        instance = next(i for i in load_instances(DATASET) if i.instance_id == "fixtures__csvlite-1")
        record_audit(opened, {"instance_id": instance.instance_id, "disposition": "invalid", "complete": True,
                              "findings": [{"kind": "empty_patch_resolves"}], "checks": []},
                     instance.fields, every_days=30, environment={})  # fmt: skip
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    refused = run_arms(manifest, ledger, arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(1,)),
                       arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(1,)))  # fmt: skip
    assert refused.returncode == 2
    assert "the comparison refuses invalid runs (2): baseline seed1 fixtures__csvlite-1: task_audit_invalid" in refused.stderr
    with Ledger(ledger) as opened:
        assert list(opened.entries("ab_comparison")) == []


def summarize(arm_rows: dict[str, str], kinds: tuple[str, str] = ("native", "governed"), model_dollars: float | None = 0.1) -> tuple[dict, dict]:
    from types import SimpleNamespace

    from pytest_objective_scoring.commands.ab import summarize_comparison

    data = copy.deepcopy(MANIFEST)
    data["seeds"] = [1, 2]
    data["arms"][0]["kind"], data["arms"][1]["kind"] = kinds
    manifest = ab.parse_manifest(data, "m")
    tasks = {"sha256:a": "t-a", "sha256:b": "t-b"}
    task_set = SimpleNamespace(instances=tasks, record=SimpleNamespace(set_id="regression@v1", role="regression"))
    rows = {(f"ab:exp-1/{arm}/seed{seed}", task): {"failure_class": arm_rows[arm], "disposition": "eligible",
            "cost": {"tokens": 1, "calls": 1, "cpu": 1.0, "wall_time": 1.0, "dollars": 0.2},
            "cost_breakdown": {"model_dollars": model_dollars if arm == "candidate" else 0.1}}
            for arm in ("baseline", "candidate") for seed in (1, 2) for task in tasks.values()}  # fmt: skip
    return summarize_comparison(manifest, sorted(tasks.items()), task_set, rows, [], "/usr/bin/python3")


def test_unknown_harness_dollars_are_unknown_not_zero():
    record, details = summarize({"baseline": "not_resolved", "candidate": "resolved"}, model_dollars=None)
    arms = {a["name"]: a for a in record["arms"]}
    assert arms["candidate"]["cost"]["dollars"] is None and arms["baseline"]["cost"]["dollars"] == pytest.approx(0.8)
    assert record["result"]["significant"] == "no"  # two tasks: the exact task-level test cannot go below p = 0.5
    assert details["dollars_per_seed"]["candidate"] is None


def test_a_passive_arm_that_changes_outcomes_fails_treatment_integrity():
    record, details = summarize({"baseline": "not_resolved", "candidate": "resolved"}, kinds=("native", "passive"))
    assert record["result"]["significant"] == "undetermined"
    assert any("treatment integrity" in reason for reason in details["inadmissible_because"])
    same, same_details = summarize({"baseline": "resolved", "candidate": "resolved"}, kinds=("native", "passive"))
    assert same_details["outcomes_identical"] and same_details["admissible"]


@pytest.mark.slow
def test_the_preregistration_pins_the_task_set_and_a_holdout_needs_the_models_cutoff(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    made = run_cli("sets", "create", "hold", "--role", "holdout_live", "--dataset", str(DATASET), "--source",
                   "held_out:private", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 0, made.stderr
    record_valid_audits(ledger)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({**MANIFEST, "name": "hold-1", "frozen": {**FROZEN, "task_set": "hold"}}))
    no_cutoff = ab_cli("preregister", str(manifest), ledger=ledger)
    assert no_cutoff.returncode == 2 and "must name the frozen model's model_training_cutoff" in no_cutoff.stderr
    manifest.write_text(json.dumps({**MANIFEST, "name": "hold-1", "frozen": {**FROZEN, "task_set": "hold"},
                                    "model_training_cutoff": "2024-12-31", "seeds": [1]}))  # fmt: skip
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    assert run_cli("sets", "burn", "hold", "--decision", "another decision", "--task", "fixtures__csvlite-1",
                   "--ledger", str(ledger)).returncode == 0  # fmt: skip
    assert run_cli("sets", "rotate", "hold", "--ledger", str(ledger)).returncode == 0
    moved = run_arms(manifest, ledger, arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(1,)),
                     arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(1,)))  # fmt: skip
    assert moved.returncode == 2 and "task set hold@v1 was retired since preregistration (rotated)" in moved.stderr
