"""Task-level inference for A/B comparisons (issue 15): the primary test against hand computations and
scipy, its type-I error by simulation, power before the run, Holm across experiments."""

from __future__ import annotations

import itertools
import random

import pytest

from pytest_objective_scoring.ab_inference import (
    EXACT_MAX_TASKS,
    arm_interval,
    holm,
    minimum_detectable_effect,
    paired_task_test,
    secondary_views,
    task_means,
)

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is a test dependency: pip install -e '.[test]'")


def test_the_exact_sign_flip_test_is_the_enumeration_of_every_sign_pattern():
    differences = [0.6, 0.2, -0.2, 0.4, 0.8, -0.4, 0.2, 0.6]
    observed = abs(sum(differences))
    patterns = list(itertools.product((1, -1), repeat=len(differences)))
    by_hand = sum(abs(sum(s * d for s, d in zip(signs, differences))) >= observed - 1e-12 for signs in patterns) / len(patterns)
    result = paired_task_test([0.0] * 8, differences, 0.05)
    assert result["p_value"] == pytest.approx(by_hand) and result["smallest_possible_p"] == pytest.approx(1 / 128)
    assert "exact sign-flip" in result["test"] and result["delta"] == pytest.approx(0.275)
    low, high = result["interval"]
    assert -1 < low < 0.275 < high < 1
    assert paired_task_test([0.0] * 5, [0.2] * 5, 0.05)["interval"] == [-1.0, 1.0], "5 tasks can never reject: no bound"
    # the interval is the set of shifts the same test does not reject: its ends are where p crosses alpha
    for end, inward in ((low, 1e-6), (high, -1e-6)):
        assert paired_task_test([0.0] * 8, [d - (end + inward) for d in differences], 0.05, interval=False)["p_value"] >= 0.05
        assert paired_task_test([0.0] * 8, [d - (end - inward) for d in differences], 0.05, interval=False)["p_value"] < 0.05


def test_beyond_sixteen_tasks_the_test_is_the_clustered_t_test_of_the_per_task_differences():
    rng = random.Random(4)
    base = [rng.choice((0.0, 0.2, 0.4, 0.6)) for _ in range(40)]
    cand = [min(1.0, b + rng.choice((0.0, 0.2, 0.2, -0.2))) for b in base]
    result = paired_task_test(base, cand, 0.05)
    expected = scipy_stats.ttest_rel(cand, base)
    assert "clustered by task" in result["test"] and result["p_value"] == pytest.approx(expected.pvalue)
    interval = expected.confidence_interval(0.95)
    assert result["interval"] == pytest.approx([interval.low, interval.high])
    differences = [c - b for b, c in zip(base, cand)]
    mean = sum(differences) / 40
    # Miller's cluster-robust standard error of the pooled (task, seed) difference, with equal seeds per task
    clustered = (sum((d - mean) ** 2 for d in differences) / (40 * 39)) ** 0.5
    assert result["standard_error"] == pytest.approx(clustered)
    assert EXACT_MAX_TASKS == 16 and "exact" in paired_task_test([0.0] * 16, [0.2] * 16, 0.05, interval=False)["test"]


def test_tasks_that_all_moved_alike_beyond_the_exact_range_keep_the_sign_flip_answer():
    result = paired_task_test([0.0] * 30, [0.2] * 30, 0.05)
    assert result["p_value"] == pytest.approx(2.0**-29) and result["interval"] == [pytest.approx(0.2)] * 2
    assert paired_task_test([0.4] * 30, [0.4] * 30, 0.05)["p_value"] == 1.0


def _simulated_rejections(tasks: int, seeds: int, repetitions: int, seed: int) -> tuple[float, float]:
    """Per-task effects of +-0.4 drawn at random (mean zero over the population of tasks): how often
    the primary test and the pooled McNemar view reject at alpha 0.05."""
    rng = random.Random(seed)
    names = [f"t{i}" for i in range(tasks)]
    primary = pooled = 0
    for _ in range(repetitions):
        base, cand = {}, {}
        for name in names:
            level, effect = rng.uniform(0.25, 0.75), rng.choice((0.4, -0.4))
            for s in range(seeds):
                base[(s, name)] = rng.random() < level - effect / 2
                cand[(s, name)] = rng.random() < level + effect / 2
        order = list(range(seeds))
        found = paired_task_test(task_means(base, order, names), task_means(cand, order, names), 0.05, interval=False)
        primary += found["p_value"] < 0.05
        pooled += secondary_views(base, cand, order, names)["mcnemar_pooled_pairs"]["p_value"] < 0.05
    return primary / repetitions, pooled / repetitions


@pytest.mark.slow
@pytest.mark.parametrize(("tasks", "seeds", "repetitions"), [(30, 10, 400), (12, 10, 200)])
def test_the_type_one_error_holds_when_task_effects_average_to_zero(tasks, seeds, repetitions):
    primary, pooled = _simulated_rejections(tasks, seeds, repetitions, seed=tasks)
    margin = 3 * (0.05 * 0.95 / repetitions) ** 0.5  # three binomial standard errors above nominal
    assert primary <= 0.05 + margin, f"the task-level test rejects {primary:.1%} of true nulls"
    assert pooled >= 0.15, f"the pooled (seed, task) view is the anti-conservative one ({pooled:.1%})"


def test_the_arm_interval_is_wilsons_over_tasks_and_continuous():
    ci = scipy_stats.binomtest(12, 30).proportion_ci(confidence_level=0.95, method="wilson")
    assert arm_interval(0.4, 30, 0.05) == pytest.approx((ci.low, ci.high))
    widths = [arm_interval(p, 30, 0.05) for p in (0.0, 0.001, 0.01)]
    assert all(w[1] - w[0] > 0.1 for w in widths) and widths[0] == pytest.approx(widths[1], abs=0.01)


def test_the_minimum_detectable_effect_follows_its_formula_and_refuses_hopeless_designs():
    found = minimum_detectable_effect(30, 5, 0.05, task_effect_sd=0.3)
    spread = (0.3**2 + 2 * 0.25 / 5) ** 0.5
    expected = (scipy_stats.t.ppf(0.975, 29) + scipy_stats.t.ppf(0.8, 29)) * spread / 30**0.5
    assert found["mde"] == pytest.approx(expected) and found["reachable"] and found["difference_sd"] == pytest.approx(spread)
    assert minimum_detectable_effect(120, 5, 0.05)["mde"] < found["mde"] < minimum_detectable_effect(20, 5, 0.05)["mde"]
    assert minimum_detectable_effect(30, 50, 0.05)["mde"] < found["mde"], "seeds help only the within-task noise"
    assert minimum_detectable_effect(30, 5000, 0.05)["mde"] > 0.15, "however many seeds, task variation remains"
    hopeless = minimum_detectable_effect(5, 5, 0.05)
    assert not hopeless["reachable"] and hopeless["mde"] is None and "0.0625" in hopeless["why"]
    assert minimum_detectable_effect(6, 5, 0.05)["reachable"]


def test_holm_adjusts_over_every_experiment_and_an_unrun_one_counts_as_p_one():
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    assert holm({"only": 0.03}) == {"only": pytest.approx(0.03)}
    assert holm({"ran": 0.03, "never-run": None}) == pytest.approx({"ran": 0.06, "never-run": 1.0})


def test_when_few_tasks_differ_the_exact_test_decides_however_many_tie():
    four = paired_task_test([0.0] * 20, [1.0] * 4 + [0.0] * 16, 0.05)
    assert "exact sign-flip" in four["test"] and four["untied_tasks"] == 4 and four["p_value"] == pytest.approx(2 / 16)
    assert four["interval_model"] == "clustered by task", "20 tasks: the interval of the clustered model, said so"
    assert paired_task_test([0.0], [1.0], 0.05)["p_value"] == 1.0, "one task cannot be tested: p = 1, no crash"
    assert paired_task_test([0.1 + 0.2] * 10, [0.3] * 10, 0.05)["p_value"] == 1.0, "float noise is a tie"
