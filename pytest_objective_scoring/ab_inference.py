"""Inference for the A/B comparison with tasks as the unit (issues 15 and 29; docs/ab.md "The statistics").

Tasks are the sample; each seed of an arm is one run over every task. A run can be hit as a whole (a
slower provider, a changed sandbox during that run): its tasks then share a shock, and a test that
treats the tasks of a run as independent rejects true nulls far more often than it says (15 % at 20
tasks x 5 seeds, 33 % at 50 x 5, issue 29). So:

- **the primary test** models the paired difference of the arms on (seed s, task t),
  d_st = candidate − baseline, as a **two-way random-effects model**: d_st = Δ + a_t + r_s + e_st,
  a_t the task's own effect (tasks sampled from a population), r_s the shock of seed run s (the two
  arms' runs of seed s), e_st the rest. From the balanced two-way mean squares (tasks MS_T, runs
  MS_R, residual MS_E) each variance component is estimated and truncated at zero:
  σ_a² = max(0, MS_T − MS_E)/S, σ_r² = max(0, MS_R − MS_E)/T, σ_e² = MS_E, and
  Var(Δ̂) = σ_a²/T + σ_r²/S + σ_e²/(ST), a combination of mean squares whose degrees of freedom are
  Satterthwaite's (at most S − 1 when the run component is in it: it rests on S runs). The p-value is Student's t with those degrees of freedom, and the interval of Δ is
  the t interval of the same model, at every size (no switch between models). Two rules belong to
  the model: no p-value is below 2^(1−T) (no test over T exchangeable tasks can say more than every
  task agreeing in sign; so 5 tasks or fewer are never significant at 0.05, and the interval is then
  all of [−1, 1]); a difference with no spread at all (every d_st equal) has p = 2^(1−T) (1 when
  Δ = 0) and the interval [Δ, Δ]. Δ = 0 gives p = 1. With one seed the run shock cannot be told from
  the effect: the model is the task one alone, and says that it assumes no run-level shock;
- **the secondary views**, labelled as such: the exact McNemar test on the pooled (seed, task)
  pairs and the paired t-test over seeds. Both treat something as independent that is not (the
  pairs of one task; the seeds, as if they sampled tasks) and are shown, never decided on;
- **the arm intervals**: the Wilson score interval of the arm's task-level resolve rate with the
  number of tasks as its sample size. A task's mean lies in [0, 1], so its variance is at most
  p(1 − p): the interval is conservative, continuous in the data (no jump when seeds agree) and
  never of zero width;
- **power before the run**: the minimum detectable effect of a design (tasks, seeds, alpha) at 80%
  power, under a stated model of the spread of the per-task effects and of the run shocks;
- **several experiments on one change**: Holm's step-down adjustment of their p-values.

Statistics come from ``scipy.stats`` (imported when used). This module never imports pytest.
"""

from __future__ import annotations

import math
from typing import Any, Final, Mapping, Sequence

__all__ = [
    "arm_interval",
    "cost_distributions",
    "differences",
    "distribution",
    "holm",
    "mean_interval",
    "minimum_detectable_effect",
    "paired_difference",
    "pass_at_k",
    "pass_at_k_interval",
    "primary_test",
    "ratio_interval",
    "secondary_views",
    "task_means",
]

POWER: Final = 0.8
DEFAULT_TASK_EFFECT_SD: Final = 0.3  # the assumed spread of the true per-task differences (docs/ab.md)
DEFAULT_RUN_EFFECT_SD: Final = 0.0  # the assumed spread of a run's shock on the difference (docs/ab.md)
BERNOULLI_MAX_VARIANCE: Final = 0.25  # a seed's outcome on a task: a 0/1 draw, variance p(1 - p) <= 1/4

PRIMARY: Final = ("two-way random-effects test of the mean paired difference (tasks and seed runs as random "
                  "effects, Satterthwaite's degrees of freedom, Student's t)")  # fmt: skip
PRIMARY_ONE_SEED: Final = ("task-level test of the mean paired difference (one seed: a run's shock cannot be told "
                           "from the effect; assumes there is none), Student's t")  # fmt: skip
ASSUMES: Final = ("tasks are a sample of the benchmark's tasks; each seed's two runs (one per arm) share at most one "
                  "shock that moves every task of the run alike; what is left is independent across (seed, task)")  # fmt: skip
FEW_RUNS: Final = 5  # below this many seeds, S runs cannot show a run shock is absent (docs/ab.md)
TIE: Final = 1e-9  # a difference this small is none (float noise of a mean of 0/1 outcomes)


def task_means(outcomes: Mapping[tuple[int, str], bool], seeds: Sequence[int], tasks: Sequence[str]) -> list[float]:
    """Each task's resolve rate over the seeds (tasks in the order given)."""
    return [sum(bool(outcomes[(seed, task)]) for seed in seeds) / len(seeds) for task in tasks]


def differences(baseline: Mapping[tuple[int, str], bool], candidate: Mapping[tuple[int, str], bool],
                seeds: Sequence[int], tasks: Sequence[str]) -> list[list[float]]:  # fmt: skip
    """d[s][t] = candidate − baseline on seed ``seeds[s]``, task ``tasks[t]`` (1, 0 or −1)."""
    return [[float(bool(candidate[(s, t)])) - float(bool(baseline[(s, t)])) for t in tasks] for s in seeds]


def _components(d: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The two-way mean squares of ``d`` (seeds x tasks, balanced), the variance of its grand mean
    from the truncated components, and Satterthwaite's degrees of freedom of that variance."""
    runs, tasks = len(d), len(d[0])
    delta = sum(map(sum, d)) / (runs * tasks)
    by_task = [sum(row[t] for row in d) / runs for t in range(tasks)]
    by_run = [sum(row) / tasks for row in d]
    ms_task = runs * sum((m - delta) ** 2 for m in by_task) / (tasks - 1) if tasks > 1 else 0.0
    if runs < 2 or tasks < 2:  # one seed: the task model alone (and one task: nothing to test)
        variance = ms_task / (runs * tasks)
        return {"delta": delta, "variance": variance, "df": float(max(tasks - 1, 1)), "mean_squares": {"tasks": ms_task},
                "components": {"tasks": max(ms_task, 0.0) / runs if runs else 0.0}}  # fmt: skip
    ms_run = tasks * sum((m - delta) ** 2 for m in by_run) / (runs - 1)
    ms_error = sum((d[s][t] - by_task[t] - by_run[s] + delta) ** 2 for s in range(runs) for t in range(tasks)) / (
        (tasks - 1) * (runs - 1))  # fmt: skip
    # Var(mean) * S * T = c_T MS_T + c_R MS_R + c_E MS_E, the components truncated at zero
    c_task = 1.0 if ms_task > ms_error + TIE else 0.0
    c_run = 1.0 if ms_run > ms_error + TIE else 0.0
    c_error = 1.0 - c_task - c_run
    terms = [(c_task, ms_task, tasks - 1), (c_run, ms_run, runs - 1), (c_error, ms_error, (tasks - 1) * (runs - 1))]
    combined = sum(c * m for c, m, _ in terms)
    spread = sum((c * m) ** 2 / df for c, m, df in terms)
    df = combined**2 / spread if spread > 0 else float((tasks - 1) * (runs - 1))
    if c_run or runs < FEW_RUNS:  # a run shock rests on S runs: never more than S - 1 degrees of freedom; with
        df = min(df, float(runs - 1))  # fewer than FEW_RUNS, not even when it is estimated at zero (it may be hidden)
    return {"delta": delta, "variance": max(combined, 0.0) / (runs * tasks), "df": df,
            "mean_squares": {"tasks": ms_task, "runs": ms_run, "residual": ms_error},
            "components": {"tasks": max(0.0, ms_task - ms_error) / runs, "runs": max(0.0, ms_run - ms_error) / tasks,
                           "residual": ms_error}}  # fmt: skip


def _p_value(delta: float, variance: float, df: float, floor: float) -> float:
    """Student's t p-value of ``delta`` with ``variance`` and ``df``, never below ``floor``; with no
    spread, ``floor`` (1 when ``delta`` is 0)."""
    from scipy import stats  # type: ignore[import-untyped]

    if abs(delta) <= TIE:
        return 1.0
    if variance <= TIE * TIE:
        return floor
    return max(floor, float(2 * stats.t.sf(abs(delta) / math.sqrt(variance), df)))


def primary_test(baseline: Mapping[tuple[int, str], bool], candidate: Mapping[tuple[int, str], bool],
                 seeds: Sequence[int], tasks: Sequence[str], alpha: float) -> dict[str, Any]:  # fmt: skip
    """The primary test (the module's docstring): ``test``, ``assumes``, ``tasks``, ``seeds``,
    ``delta``, ``p_value``, ``interval`` (1 − alpha, the same model), ``standard_error``,
    ``degrees_of_freedom``, ``smallest_possible_p`` (2^(1−T)), the variance ``components`` and
    ``mean_squares``."""
    return primary_of(differences(baseline, candidate, seeds, tasks) if tasks and seeds else [], alpha)


def primary_of(d: Sequence[Sequence[float]], alpha: float) -> dict[str, Any]:
    """:func:`primary_test` of the differences ``d`` (seeds x tasks)."""
    from scipy import stats

    runs, tasks = len(d), (len(d[0]) if d else 0)
    out: dict[str, Any] = {"test": PRIMARY if runs > 1 else PRIMARY_ONE_SEED, "assumes": ASSUMES, "tasks": tasks,
                           "alpha": alpha, "delta": 0.0, "p_value": 1.0, "interval": [-1.0, 1.0],
                           "interval_model": "the same model's t interval", "standard_error": None,
                           "degrees_of_freedom": None, "smallest_possible_p": 1.0}  # fmt: skip
    if not tasks:
        return out
    found = _components(d)
    delta, variance, df = found["delta"], found["variance"], found["df"]
    floor = 2.0 ** (1 - tasks) if tasks > 1 else 1.0
    se = math.sqrt(variance)
    out.update(delta=delta, standard_error=se, degrees_of_freedom=df, smallest_possible_p=floor,
               components=found["components"], mean_squares=found["mean_squares"],
               untied_tasks=sum(abs(sum(row[t] for row in d)) > TIE for t in range(tasks)))  # fmt: skip
    out["p_value"] = _p_value(delta, variance, df, floor)
    if tasks < 2 or floor >= alpha:  # no shift can be rejected: the interval is everything
        out["interval"] = [-1.0, 1.0]
    elif variance <= TIE * TIE:  # no spread: every shift but delta itself is rejected
        out["interval"] = [delta, delta]
    else:
        half = float(stats.t.ppf(1 - alpha / 2, df)) * se
        out["interval"] = [max(-1.0, delta - half), min(1.0, delta + half)]
    return out


def secondary_views(baseline: Mapping[tuple[int, str], bool], candidate: Mapping[tuple[int, str], bool],
                    seeds: Sequence[int], tasks: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    """The views shown beside the primary test and never decided on, each with what it assumes."""
    from scipy import stats

    gained = sum(candidate[key] and not baseline[key] for key in baseline)
    lost = sum(baseline[key] and not candidate[key] for key in baseline)
    mcnemar = {
        "test": "exact McNemar test on discordant (seed, task) pairs (scipy.stats.binomtest)",
        "assumes": "every (seed, task) pair independent: wrong when tasks differ (the seeds of one task are not "
                   "independent draws), so it overstates the evidence as seeds are added",
        "discordant": {"candidate_only": gained, "baseline_only": lost},
        "p_value": float(stats.binomtest(gained, gained + lost, 0.5).pvalue) if gained + lost else 1.0,
    }  # fmt: skip
    base = [sum(baseline[(s, t)] for t in tasks) / len(tasks) for s in seeds]
    cand = [sum(candidate[(s, t)] for t in tasks) / len(tasks) for s in seeds]
    t_test: dict[str, Any] = {
        "test": "paired t-test over per-seed resolve rates (scipy.stats.ttest_rel)",
        "assumes": "seeds as the sample: says nothing about other tasks, only about reruns of these",
        "p_value": None,
    }
    differences = [c - b for b, c in zip(base, cand)]
    if len(seeds) >= 2 and len(set(differences)) > 1:
        result = stats.ttest_rel(cand, base)
        t_test.update(p_value=float(result.pvalue), statistic=float(result.statistic))
    else:
        t_test["note"] = "not computed: fewer than two seeds, or every seed moved by the same amount"
    return {"mcnemar_pooled_pairs": mcnemar, "t_test_over_seeds": t_test}


def arm_interval(rate: float, tasks: int, alpha: float) -> tuple[float, float]:
    """The Wilson score interval of a task-level resolve rate with ``tasks`` as the sample size."""
    from scipy import stats

    if tasks <= 0:
        return 0.0, 1.0
    z = float(stats.norm.ppf(1 - alpha / 2))
    denominator = 1 + z * z / tasks
    center = (rate + z * z / (2 * tasks)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / tasks + z * z / (4 * tasks * tasks)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def minimum_detectable_effect(tasks: int, seeds: int, alpha: float, task_effect_sd: float = DEFAULT_TASK_EFFECT_SD,
                              power: float = POWER, run_effect_sd: float = DEFAULT_RUN_EFFECT_SD) -> dict[str, Any]:  # fmt: skip
    """The smallest true difference in resolve rate the primary test detects with ``power`` (a
    planning approximation: docs/ab.md has the simulated power table).

    Under the primary test's model, with the spread of the true per-task effects ``task_effect_sd``
    and of a run's shock on the difference ``run_effect_sd`` (assumptions the manifest states) and
    each arm's seed-to-seed noise (a 0/1 draw per seed: at most 1/4 per arm),
    Var(Δ̂) = σ_a²/T + σ_r²/S + 2·(1/4)/(S·T), with the degrees of freedom Satterthwaite's formula
    gives for the expected mean squares. MDE = (t_{1-alpha/2, df} + t_{power, df}) · sd(Δ̂). No p-value
    is below 2^(1−T): a design where that is not below alpha can never be significant
    (``reachable`` False, ``mde`` None)."""
    from scipy import stats

    error = 2 * BERNOULLI_MAX_VARIANCE
    runs = max(1, seeds)
    variance = task_effect_sd**2 / max(tasks, 1) + run_effect_sd**2 / runs + error / (runs * max(tasks, 1))
    out: dict[str, Any] = {"tasks": tasks, "seeds": seeds, "alpha": alpha, "power": power,
                           "task_effect_sd": task_effect_sd, "run_effect_sd": run_effect_sd,
                           "difference_sd": math.sqrt(variance * max(tasks, 1)), "standard_error": math.sqrt(variance),
                           "mde": None, "reachable": True}  # fmt: skip
    if tasks < 2 or 2.0 ** (1 - tasks) >= alpha:
        out["reachable"] = False
        out["why"] = (f"{tasks} task(s): the test's smallest p-value is {2.0 ** (1 - max(tasks, 1)):.3g}, not "
                      f"below alpha {alpha:g}: no result could ever be significant")  # fmt: skip
        return out
    if runs < 2:
        df = float(tasks - 1)
    else:  # expected mean squares: E[MS_T] = e + S a, E[MS_R] = e + T r, E[MS_E] = e
        ms_task, ms_run = error + runs * task_effect_sd**2, error + tasks * run_effect_sd**2
        terms = [(ms_task, tasks - 1)] + ([(ms_run, runs - 1)] if run_effect_sd > 0 else [])
        combined = sum(m for m, _ in terms) - (error if run_effect_sd > 0 else 0.0)
        spread = sum(m * m / f for m, f in terms) + ((error**2) / ((tasks - 1) * (runs - 1)) if run_effect_sd > 0 else 0.0)
        df = combined**2 / spread
        if run_effect_sd > 0 or runs < FEW_RUNS:  # as the test caps them (_components)
            df = min(df, float(runs - 1))
    out["degrees_of_freedom"] = df
    out["mde"] = (float(stats.t.ppf(1 - alpha / 2, df)) + float(stats.t.ppf(power, df))) * math.sqrt(variance)
    return out


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


def holm(p_values: Mapping[str, float | None]) -> dict[str, float]:
    """Holm's step-down adjusted p-values (a family-wise error rate over every experiment named; one
    with no p-value yet counts as p = 1, so leaving an experiment unrun never helps another)."""
    ordered = sorted(((1.0 if p is None else float(p)), name) for name, p in p_values.items())
    m = len(ordered)
    adjusted: dict[str, float] = {}
    running = 0.0
    for rank, (p, name) in enumerate(ordered):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[name] = running
    return adjusted


# ---------------------------------------------------------------------- uncertainty of every printed number
#
# Pure functions shared by the scorecard, the costs report and the A/B report (issue 29, item 4). Each
# returns a JSON-ready dict that says how its interval was made (``method``) and how many units it rests
# on (``n``); with one unit there is no interval (``interval`` None, ``note`` "n/a: one task"), never a
# zero-width one. Bootstraps are seeded (``random_state``): the same data give the same numbers.

BOOTSTRAP_RESAMPLES: Final = 4999
BOOTSTRAP_SEED: Final = 0
BOOTSTRAP_CELLS: Final = 1_000_000  # values resampled per vectorized batch (resamples x units): bounds the memory
PAIRED_T: Final = "Student's t interval of the mean paired per-{unit} difference (scipy.stats.t)"
BOOTSTRAP: Final = (f"BCa bootstrap over {{units}} of the {{statistic}} (scipy.stats.bootstrap, {BOOTSTRAP_RESAMPLES} "
                    f"resamples, random_state {{seed}})")  # fmt: skip
COST_QUANTITIES: Final = ("dollars", "cpu", "wall_time", "tokens", "calls")


def plural(unit: str) -> str:
    """``task`` -> ``tasks``, ``run`` -> ``runs``."""
    return unit if unit.endswith("s") else unit + "s"


def no_interval(n: int, unit: str) -> str | None:
    """Why no interval can be given on ``n`` units (None when one can): "n/a: one task"."""
    if n <= 0:
        return f"n/a: no {unit}"
    if n == 1:
        return f"n/a: one {unit}"
    return None


def _floats(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values]


def ratio_interval(numerators: Sequence[float], denominators: Sequence[float], alpha: float = 0.05,
                   random_state: int = BOOTSTRAP_SEED, unit: str = "task",
                   groups: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """sum(numerators) / sum(denominators) and its 1 − alpha interval: a BCa bootstrap over the
    ``groups`` (each group resampled whole: a task's runs stay together) or, without groups, over
    the items (``scipy.stats.bootstrap``, paired, seeded). The mean of values is the ratio to ones.

    Returns ``estimate``, ``interval`` ([low, high] or None), ``n`` (units resampled), ``note``
    (why there is no interval, or that the units show no spread), ``method``. One unit: no interval,
    "n/a: one {unit}". Every unit with the same ratio: the interval is [estimate, estimate] and the
    note says there is no spread to resample. A zero denominator sum: no estimate."""
    import numpy as np

    if len(numerators) != len(denominators) or (groups is not None and len(groups) != len(numerators)):
        raise ValueError("numerators, denominators and groups must have one entry per item")
    keys = list(groups) if groups is not None else [str(i) for i in range(len(numerators))]
    sums: dict[str, list[float]] = {}
    for key, top, bottom in zip(keys, _floats(numerators), _floats(denominators)):
        pair = sums.setdefault(key, [0.0, 0.0])
        pair[0] += top
        pair[1] += bottom
    tops = np.array([s[0] for s in sums.values()], dtype=float)
    bottoms = np.array([s[1] for s in sums.values()], dtype=float)
    n = len(sums)
    units = plural(unit) + (f" (each {unit}'s values resampled together)" if groups is not None else "")
    out: dict[str, Any] = {"estimate": None, "interval": None, "n": n, "unit": plural(unit), "alpha": alpha,
                           "note": no_interval(n, unit), "method": BOOTSTRAP.format(units=units, statistic="ratio of "
                           "the sums", seed=random_state)}  # fmt: skip
    total = float(bottoms.sum()) if n else 0.0
    if not n or total == 0.0:
        out["note"] = out["note"] or f"n/a: the denominator is 0 over the {n} {plural(unit)}"
        return out
    estimate = float(tops.sum()) / total
    out["estimate"] = estimate
    if n < 2:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        own = tops / bottoms
    if np.all(bottoms > 0) and np.allclose(own, own[0], rtol=0.0, atol=1e-12):
        out["interval"] = [estimate, estimate]
        out["note"] = f"no spread: every one of the {n} {plural(unit)} has the same value"
        return out

    def statistic(top: Any, bottom: Any, axis: int = -1) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sum(top, axis=axis) / np.sum(bottom, axis=axis)

    found = _bootstrap((tops, bottoms), statistic, alpha, random_state)
    if not all(math.isfinite(v) for v in found):  # resamples whose denominator sums to 0
        out["note"] = f"n/a: the denominator is 0 in some resamples of the {n} {plural(unit)}"
        return out
    out["interval"] = [float(found[0]), float(found[1])]
    return out


def _bootstrap(data: tuple[Any, ...], statistic: Any, alpha: float, random_state: int) -> tuple[float, float]:
    """scipy's paired BCa bootstrap interval; the percentile interval where BCa is undefined (a
    resample statistic that is NaN, or a degenerate jackknife)."""
    import warnings

    import numpy as np
    from scipy import stats

    low = high = float("nan")
    batch = max(1, min(BOOTSTRAP_RESAMPLES, BOOTSTRAP_CELLS // max(1, len(data[0]))))  # bounded memory at any size
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                found = stats.bootstrap(data, statistic, paired=True, vectorized=True, confidence_level=1 - alpha,
                                        n_resamples=BOOTSTRAP_RESAMPLES, method=method, random_state=random_state,
                                        batch=batch)  # fmt: skip
        low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            break
    return low, high


def mean_interval(values: Sequence[float], alpha: float = 0.05, random_state: int = BOOTSTRAP_SEED,
                  unit: str = "task", groups: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """The mean of ``values`` and its 1 − alpha interval, a seeded BCa bootstrap over the values
    (or, with ``groups``, over the groups, each resampled whole: the mean per value with a task's
    runs kept together). Returns ``mean``, ``interval`` ([low, high] or None), ``n`` (units),
    ``note``, ``method``; one unit: no interval, "n/a: one {unit}"."""
    found = ratio_interval(values, [1.0] * len(values), alpha, random_state, unit, groups)
    found["mean"] = found.pop("estimate")
    found["method"] = found["method"].replace("ratio of the sums", "mean per value")
    if groups is not None:
        found["values"] = len(values)
    return found


def distribution(values: Sequence[float], alpha: float = 0.05, random_state: int = BOOTSTRAP_SEED,
                 unit: str = "run", groups: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """A cost distribution: ``n`` values, their ``mean``, ``sd`` (n − 1; None below two values),
    ``median``, ``p10`` and ``p90`` (numpy's linear percentiles), and the 1 − alpha ``interval`` of the
    mean from :func:`mean_interval`, resampling ``unit``s: the values, or the ``groups`` when given
    (``interval_over`` and ``interval_n`` say which and how many)."""
    import numpy as np

    data = np.array(_floats(values), dtype=float)
    found = mean_interval(values, alpha, random_state, unit, groups)
    out: dict[str, Any] = {"n": len(data), "mean": found["mean"], "sd": None, "median": None, "p10": None, "p90": None,
                           "interval": found["interval"], "interval_over": found["unit"], "interval_n": found["n"],
                           "alpha": alpha, "note": found["note"], "method": found["method"]}  # fmt: skip
    if len(data):
        p10, median, p90 = (float(v) for v in np.percentile(data, [10, 50, 90]))
        out.update(median=median, p10=p10, p90=p90, sd=float(np.std(data, ddof=1)) if len(data) > 1 else None)
    return out


def paired_difference(a: Sequence[float], b: Sequence[float], alpha: float = 0.05, unit: str = "task",
                      bounds: tuple[float, float] | None = None) -> dict[str, Any]:  # fmt: skip
    """Δ = mean(b − a) over paired units and its 1 − alpha Student's t interval (``scipy.stats.t``
    with n − 1 degrees of freedom and the standard error of the differences), cut to ``bounds``
    when the difference cannot leave them (a rate's: [−1, 1]). Returns ``delta``, ``interval``
    ([low, high] or None), ``n``, ``note``, ``method``. One unit: no interval ("n/a: one task");
    every difference equal: [Δ, Δ], said in ``note``."""
    from scipy import stats

    if len(a) != len(b):
        raise ValueError("a and b must be paired: one value each per unit")
    d = [float(y) - float(x) for x, y in zip(a, b)]
    n = len(d)
    out: dict[str, Any] = {"delta": sum(d) / n if n else None, "interval": None, "n": n, "unit": plural(unit),
                           "alpha": alpha, "note": no_interval(n, unit), "method": PAIRED_T.format(unit=unit)}  # fmt: skip
    if n < 2:
        return out
    delta = out["delta"]
    sd = math.sqrt(sum((x - delta) ** 2 for x in d) / (n - 1))
    if sd <= TIE:
        out["interval"] = [delta, delta]
        out["note"] = f"no spread: each of the {n} {plural(unit)} moved by the same amount"
        return out
    low, high = (float(x) for x in stats.t.interval(1 - alpha, n - 1, loc=delta, scale=sd / math.sqrt(n)))
    if bounds is not None:
        low, high = max(float(bounds[0]), low), min(float(bounds[1]), high)
    out["interval"] = [low, high]
    return out


def pass_at_k_interval(counts: Sequence[tuple[int, int]], k: int, alpha: float = 0.05,
                       random_state: int = BOOTSTRAP_SEED) -> dict[str, Any]:  # fmt: skip
    """pass@k over tasks and its 1 − alpha interval: the unbiased estimator (Chen et al. 2021,
    :func:`.ab.pass_at_k`) per task from its (samples n, passes c), averaged over the tasks where
    n >= k, and a seeded BCa bootstrap over those tasks (:func:`mean_interval`). Returns ``k``,
    ``estimate``, ``interval``, ``tasks`` (used), ``undefined`` (tasks with fewer than k samples),
    ``note``, ``method``."""

    per_task = [pass_at_k(n, c, k) for n, c in counts]
    defined = [p for p in per_task if p is not None]
    found = mean_interval(defined, alpha, random_state, "task")
    return {"k": k, "estimate": found["mean"], "interval": found["interval"], "tasks": found["n"],
            "undefined": len(per_task) - len(defined), "alpha": alpha, "note": found["note"],
            "method": found["method"].replace("mean per value", "mean of the per-task unbiased estimates")}  # fmt: skip


def cost_distributions(runs: Sequence[tuple[str, Mapping[str, Any] | None]], alpha: float = 0.05,
                       random_state: int = BOOTSTRAP_SEED,
                       quantities: Sequence[str] = COST_QUANTITIES) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per cost quantity (dollars, CPU-s, wall time, tokens, calls), the :func:`distribution` of its
    per-run values over ``runs`` ((task id, cost) pairs), the interval of the mean a bootstrap over
    tasks (a task's runs resampled together). A run whose harness did not report the quantity is
    left out and counted in ``unknown``: never a made-up zero."""
    out = {}
    for field in quantities:
        known = [(task, float(cost[field])) for task, cost in runs if cost and cost.get(field) is not None]
        found = distribution([v for _, v in known], alpha, random_state, "task", [t for t, _ in known])
        found["unknown"] = len(runs) - len(known)
        out[field] = found
    return out
