"""Task-level inference for A/B comparisons (issues 15 and 29): the primary test (two-way random
effects, tasks and seed runs) against a hand computation and scipy, its type-I error by simulation
with heterogeneous task effects and with run-level shocks, power before the run, Holm across
experiments."""

from __future__ import annotations

import random

import pytest

from pytest_objective_scoring.ab_inference import (
    arm_interval,
    holm,
    minimum_detectable_effect,
    primary_of,
    primary_test,
    secondary_views,
)

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is a test dependency: pip install -e '.[test]'")
np = pytest.importorskip("numpy")


def _by_hand(d, alpha=0.05):
    """The two-way random-effects test computed another way: sums of squares from the grand,
    row and column totals (the textbook ANOVA table), components truncated at zero, Satterthwaite's
    degrees of freedom for the unbiased combination MS_T + MS_R − MS_E (every mean square's sampling
    error counted, a truncated component's too)."""
    d = np.asarray(d, dtype=float)
    S, T = d.shape
    grand = d.sum()
    correction = grand**2 / (S * T)
    ss_tasks = (d.sum(axis=0) ** 2).sum() / S - correction
    ss_runs = (d.sum(axis=1) ** 2).sum() / T - correction
    ss_error = (d**2).sum() - correction - ss_tasks - ss_runs
    ms = {"tasks": (ss_tasks / (T - 1), T - 1), "runs": (ss_runs / (S - 1), S - 1),
          "residual": (ss_error / ((T - 1) * (S - 1)), (T - 1) * (S - 1))}  # fmt: skip
    kept = [name for name in ("tasks", "runs") if ms[name][0] > ms["residual"][0] + 1e-9]
    if len(kept) == 2:
        combined = ms["tasks"][0] + ms["runs"][0] - ms["residual"][0]
    elif kept:
        combined = ms[kept[0]][0]
    else:
        combined = ms["residual"][0]
    df = combined**2 / sum(m**2 / f for m, f in ms.values())
    if "runs" in kept or S < 5:  # fewer than 5 runs cannot show a run shock is absent
        df = min(df, S - 1)
    delta, se = grand / (S * T), (combined / (S * T)) ** 0.5
    p = max(2.0 ** (1 - T), 2 * scipy_stats.t.sf(abs(delta) / se, df))
    half = scipy_stats.t.ppf(1 - alpha / 2, df) * se
    return delta, se, df, p, [delta - half, delta + half]


@pytest.mark.parametrize("seed", range(6))
def test_the_primary_test_is_the_two_way_random_effects_model_computed_by_hand(seed):
    rng = random.Random(seed)
    tasks, seeds = rng.choice((8, 20, 40)), rng.choice((2, 3, 5, 10))
    shock = [rng.gauss(0, 0.2) for _ in range(seeds)]
    d = [[float(rng.random() < 0.5 + shock[s] + (0.1 if t % 3 == 0 else 0)) - float(rng.random() < 0.45)
          for t in range(tasks)] for s in range(seeds)]  # fmt: skip
    delta, se, df, p, interval = _by_hand(d)
    found = primary_of(d, 0.05)
    assert found["delta"] == pytest.approx(delta) and found["standard_error"] == pytest.approx(se)
    assert found["degrees_of_freedom"] == pytest.approx(df) and found["p_value"] == pytest.approx(p)
    assert found["interval"] == pytest.approx([max(-1, interval[0]), min(1, interval[1])])
    assert "two-way random-effects" in found["test"] and found["interval_model"] == "the same model's t interval"


def test_the_interval_is_the_set_of_shifts_the_same_test_does_not_reject():
    rng = random.Random(7)
    d = [[float(rng.random() < 0.6) - float(rng.random() < 0.4) for _ in range(30)] for _ in range(5)]
    found = primary_of(d, 0.05)
    low, high = found["interval"]
    assert low < found["delta"] < high
    for end, inward in ((low, 1e-6), (high, -1e-6)):  # p crosses alpha exactly at each end
        shifted = lambda shift: [[x - shift for x in row] for row in d]
        assert primary_of(shifted(end + inward), 0.05)["p_value"] >= 0.05
        assert primary_of(shifted(end - inward), 0.05)["p_value"] < 0.05


def test_one_model_at_every_size_no_p_below_two_to_the_one_minus_t_and_p_one_at_no_difference():
    four_of_twenty = [[1.0] * 4 + [0.0] * 16 for _ in range(5)]  # 4 tasks gained on every seed
    found = primary_of(four_of_twenty, 0.05)
    assert (found["p_value"] < 0.05) == (found["interval"][0] > 0), "the test and its interval agree"
    seventeen = [[1.0] * 17 + [0.0] * 23 for _ in range(5)]
    sixteen = [[1.0] * 16 + [0.0] * 24 for _ in range(5)]
    assert primary_of(seventeen, 0.05)["test"] == primary_of(sixteen, 0.05)["test"], "no switch at 17"
    three = primary_of([[1.0, 0.8 + 0.2 * (s % 2), 1.0] for s in range(5)], 0.05)
    assert three["p_value"] >= 0.25 and three["interval"] == [-1.0, 1.0], "3 tasks can never be significant"
    assert three["smallest_possible_p"] == 0.25
    alike = primary_of([[1.0] * 30 for _ in range(5)], 0.05)
    assert alike["p_value"] == pytest.approx(2.0**-29), "no spread: 2^(1-T)"
    low = 2 * 0.025 ** (1 / 30) - 1  # at most a share 1 - 0.025^(1/30) of tasks could differ, at worst by -2
    assert alike["interval"] == pytest.approx([low, 1.0]) and 0 < low < 1, "no spread is not certainty"
    zero = primary_of([[1.0, -1.0, 0.0, 1.0] * 5, [-1.0, 1.0, 0.0, -1.0] * 5], 0.05)
    assert zero["delta"] == 0 and zero["p_value"] == 1.0, "p = 1 where the difference is 0"
    assert primary_of([[0.0] * 10] * 3, 0.05)["p_value"] == 1.0
    one = primary_of([[1.0], [1.0]], 0.05)
    assert one["p_value"] == 1.0 and one["interval"] == [-1.0, 1.0], "one task cannot be tested: no crash"


def test_with_one_seed_the_model_is_the_task_one_and_says_what_it_assumes():
    d = [[1.0, 0.0, 1.0, 1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 0.0, 1.0, 1.0]]
    found = primary_of(d, 0.05)
    expected = scipy_stats.ttest_1samp(d[0], 0.0)
    assert found["p_value"] == pytest.approx(expected.pvalue) and "assumes there is none" in found["test"]


def test_the_outcome_maps_are_paired_by_seed_and_task():
    seeds, tasks = [1, 2, 3], ["a", "b", "c", "d", "e", "f"]
    base = {(s, t): t in "ab" for s in seeds for t in tasks}
    cand = {(s, t): t in "abcd" or (s == 2 and t == "e") for s in seeds for t in tasks}
    found = primary_test(base, cand, seeds, tasks, 0.05)
    assert found["delta"] == pytest.approx((2 * 3 + 1) / 18) and found["tasks"] == 6


def _shocked(tasks: int, seeds: int, shock_sd: float, repetitions: int, seed: int) -> tuple[float, float]:
    """No true difference; every task's level drawn on the log-odds scale (sd 1.5), and each arm's
    seed run hit as a whole by a shock of sd ``shock_sd`` on that scale (a slower provider during
    that run). How often the primary test, and a test over tasks alone, reject at alpha 0.05."""
    rng = np.random.default_rng(seed)
    primary = tasks_alone = 0
    for _ in range(repetitions):
        level = rng.normal(0, 1.5, tasks)
        runs = [rng.normal(0, shock_sd, (seeds, 1)) for _ in range(2)]
        arms = [rng.random((seeds, tasks)) < 1 / (1 + np.exp(-(level + shock))) for shock in runs]
        d = arms[1].astype(float) - arms[0]
        primary += primary_of(d.tolist(), 0.05)["p_value"] < 0.05
        means = d.mean(axis=0)
        tasks_alone += np.ptp(means) > 0 and scipy_stats.ttest_1samp(means, 0.0).pvalue < 0.05
    return primary / repetitions, tasks_alone / repetitions


@pytest.mark.slow
@pytest.mark.parametrize(("tasks", "seeds", "shock_sd"), [(20, 5, 0.3), (20, 5, 0.7), (50, 5, 0.3), (50, 5, 0.7),
                                                        (50, 2, 0.7), (50, 3, 0.7), (50, 4, 0.7)])
def test_the_type_one_error_holds_under_run_level_shocks(tasks, seeds, shock_sd):
    repetitions = 3000
    primary, tasks_alone = _shocked(tasks, seeds, shock_sd, repetitions, seed=tasks * 100 + int(shock_sd * 10))
    margin = 3 * (0.05 * 0.95 / repetitions) ** 0.5  # three binomial standard errors above nominal
    assert primary <= 0.05 + margin, f"the primary test rejects {primary:.1%} of true nulls under run shocks"
    if shock_sd >= 0.7 or tasks >= 50:
        assert tasks_alone >= 0.10, f"a test over tasks alone is the anti-conservative one ({tasks_alone:.1%})"


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
        primary += primary_test(base, cand, order, names, 0.05)["p_value"] < 0.05
        pooled += secondary_views(base, cand, order, names)["mcnemar_pooled_pairs"]["p_value"] < 0.05
    return primary / repetitions, pooled / repetitions


@pytest.mark.slow
@pytest.mark.parametrize(("tasks", "seeds", "repetitions"), [(30, 10, 1000), (12, 10, 1000)])
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


def test_the_minimum_detectable_effect_is_simulated_beside_its_old_formula_and_refuses_hopeless_designs():
    found = minimum_detectable_effect(30, 5, 0.05, task_effect_sd=0.3)
    spread = (0.3**2 + 2 * 0.25 / 5) ** 0.5
    expected = (scipy_stats.t.ppf(0.975, 29) + scipy_stats.t.ppf(0.8, 29)) * spread / 30**0.5
    assert found["approximation"] == pytest.approx(expected) and found["difference_sd"] == pytest.approx(spread)
    assert found["reachable"] and found["mde"] > found["approximation"], "the formula overstated power at 5 seeds"
    assert found["mde_interval"][0] < found["mde"] < found["mde_interval"][1]
    assert minimum_detectable_effect(120, 5, 0.05)["mde"] < found["mde"] < minimum_detectable_effect(20, 5, 0.05)["mde"]
    assert minimum_detectable_effect(30, 50, 0.05)["mde"] < found["mde"], "seeds help the within-task noise"
    assert minimum_detectable_effect(30, 5000, 0.05)["mde"] > 0.15, "however many seeds, task variation remains"
    shocked = minimum_detectable_effect(30, 5, 0.05, run_effect_sd=0.1)
    assert shocked["mde"] > found["mde"] and shocked["degrees_of_freedom"] <= 4, "run shocks cost power; df at most S - 1"
    assert minimum_detectable_effect(30, 20, 0.05, run_effect_sd=0.1)["mde"] < shocked["mde"], "then seeds help"
    hopeless = minimum_detectable_effect(5, 5, 0.05)
    assert not hopeless["reachable"] and hopeless["mde"] is None and "0.0625" in hopeless["why"]
    assert minimum_detectable_effect(6, 5, 0.05)["reachable"]


def test_holm_adjusts_over_every_experiment_and_an_unrun_one_counts_as_p_one():
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    assert holm({"only": 0.03}) == {"only": pytest.approx(0.03)}
    assert holm({"ran": 0.03, "never-run": None}) == pytest.approx({"ran": 0.06, "never-run": 1.0})
