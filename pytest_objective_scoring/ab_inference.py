"""Inference for the A/B comparison with tasks as the unit (issue 15; docs/ab.md "The statistics").

Tasks are the sample; seeds are repeated measurements within a task. Each arm's outcome on a task
is its mean over seeds, and the arms are compared task by task:

- **the primary test** pairs the arms per task, d_t = candidate mean − baseline mean. While at most
  :data:`EXACT_MAX_TASKS` tasks differ (d_t ≠ 0; tied tasks look the same under either sign) it is
  the exact sign-flip permutation test of the mean of d_t (``scipy.stats.permutation_test``, every
  sign pattern of the untied tasks), its interval the set of shifts the same test does not reject
  (test inversion; beyond 16 tasks in all, the clustered interval below). Beyond that, the mean of d_t with
  standard errors clustered by task (Miller 2024, "Adding Error Bars to Evals": with the same
  number of seeds per task, the cluster-robust standard error of the pooled (task, seed)
  difference is the standard error of the per-task means, sd(d_t)/sqrt(n)), Student's t with n − 1
  degrees of freedom, and the t interval from the same model;
- **the secondary views**, labelled as such: the exact McNemar test on the pooled (seed, task)
  pairs and the paired t-test over seeds. Both treat something as independent that is not (the
  pairs of one task; the seeds, as if they sampled tasks) and are shown, never decided on;
- **the arm intervals**: the Wilson score interval of the arm's task-level resolve rate with the
  number of tasks as its sample size. A task's mean lies in [0, 1], so its variance is at most
  p(1 − p): the interval is conservative, continuous in the data (no jump when seeds agree) and
  never of zero width;
- **power before the run**: the minimum detectable effect of a design (tasks, seeds, alpha) at 80%
  power, under a stated model of the per-task difference's spread;
- **several experiments on one change**: Holm's step-down adjustment of their p-values.

Statistics come from ``scipy.stats`` (imported when used). This module never imports pytest.
"""

from __future__ import annotations

import math
from typing import Any, Final, Mapping, Sequence

__all__ = [
    "EXACT_MAX_TASKS",
    "arm_interval",
    "holm",
    "minimum_detectable_effect",
    "paired_task_test",
    "secondary_views",
    "task_means",
]

EXACT_MAX_TASKS: Final = 16  # 2^16 = 65,536 sign patterns: enumerated exactly, in well under a second
POWER: Final = 0.8
DEFAULT_TASK_EFFECT_SD: Final = 0.3  # the assumed spread of the true per-task differences (docs/ab.md)
BERNOULLI_MAX_VARIANCE: Final = 0.25  # a seed's outcome on a task: a 0/1 draw, variance p(1 - p) <= 1/4

PRIMARY_EXACT: Final = "exact sign-flip permutation test over tasks (per-task mean over seeds; scipy.stats.permutation_test)"
PRIMARY_CLUSTERED: Final = ("mean per-task difference with standard errors clustered by task, Student's t with "
                            "n - 1 degrees of freedom (Miller 2024)")  # fmt: skip


def task_means(outcomes: Mapping[tuple[int, str], bool], seeds: Sequence[int], tasks: Sequence[str]) -> list[float]:
    """Each task's resolve rate over the seeds (tasks in the order given)."""
    return [sum(bool(outcomes[(seed, task)]) for seed in seeds) / len(seeds) for task in tasks]


TIE: Final = 1e-9  # a per-task difference this small is a tie (float noise of a mean of 0/1 outcomes)


def _untied(differences: Sequence[float]) -> list[float]:
    return [d for d in differences if abs(d) > TIE]


def _sign_flip_p(differences: Sequence[float]) -> float:
    """The exact two-sided p-value of the sign-flip test of mean(d) = 0 (every sign pattern).

    A tied task (d = 0) looks the same under either sign: the p-value is that of the untied ones
    alone, which is what makes the exact test usable on hundreds of tasks when few of them differ."""
    import numpy as np
    from scipy import stats  # type: ignore[import-untyped]

    values = np.asarray(_untied(differences), dtype=float)
    if values.size < 2:  # nothing, or one task, differs: both signs reach it, p = 1
        return 1.0
    result = stats.permutation_test((values,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                    alternative="two-sided", vectorized=True, axis=-1)  # fmt: skip
    return float(min(1.0, result.pvalue))


def _inverted_interval(differences: Sequence[float], alpha: float) -> tuple[float, float]:
    """The shifts delta whose sign-flip test of d - delta is not rejected at alpha (bisection from the
    observed mean outwards on each side; the differences lie in [-1, 1], so the interval does too)."""
    center = sum(differences) / len(differences)

    def accepted(shift: float) -> bool:
        return _sign_flip_p([d - shift for d in differences]) >= alpha

    bounds = []
    for far in (-1.0, 1.0):
        if accepted(far):
            bounds.append(far)
            continue
        inside, outside = center, far
        for _ in range(30):  # 2^-30: far below any resolve-rate difference that matters
            middle = (inside + outside) / 2
            inside, outside = (middle, outside) if accepted(middle) else (inside, middle)
        bounds.append(inside)
    return bounds[0], bounds[1]


def paired_task_test(baseline: Sequence[float], candidate: Sequence[float], alpha: float,
                     interval: bool = True) -> dict[str, Any]:  # fmt: skip
    """The primary test: the arms paired per task (per-task means over seeds, same task order).

    Returns ``test`` (which one and why), ``tasks``, ``delta`` (mean of the per-task differences),
    ``p_value``, ``interval`` (1 - alpha, from the same model; None with ``interval=False``) and
    ``standard_error`` (clustered by task; None for the exact test)."""
    from scipy import stats

    differences = [c - b for b, c in zip(baseline, candidate, strict=True)]
    n = len(differences)
    delta = sum(differences) / n if n else 0.0
    untied = len(_untied(differences))
    out: dict[str, Any] = {"tasks": n, "untied_tasks": untied, "delta": delta, "alpha": alpha, "standard_error": None,
                           "interval": None, "interval_model": None}  # fmt: skip
    if untied <= EXACT_MAX_TASKS:  # few tasks differ: the exact test, whatever the number of tied ones
        out["test"] = PRIMARY_EXACT
        out["p_value"] = _sign_flip_p(differences)
        out["smallest_possible_p"] = 2.0 ** (1 - untied) if untied > 1 else 1.0
        if interval and 0 < n <= EXACT_MAX_TASKS:
            out["interval"], out["interval_model"] = list(_inverted_interval(differences, alpha)), "sign-flip test inverted"
        elif interval and n > EXACT_MAX_TASKS:  # shifting every task unties them all: the clustered model's interval
            out["interval"], out["interval_model"] = _clustered(differences, delta, alpha)[1], "clustered by task"
        return out
    out["test"] = PRIMARY_CLUSTERED
    se = _clustered(differences, delta, alpha)[0]
    out["standard_error"] = se
    if max(differences) - min(differences) < 1e-12:  # every task moved alike: the sign-flip test's own answer
        out["p_value"] = 1.0 if delta == 0 else 2.0 ** (1 - n)
        out["interval"] = [delta, delta] if interval else None
        return out
    statistic = delta / se
    out["statistic"] = statistic
    out["p_value"] = float(2 * stats.t.sf(abs(statistic), n - 1))
    if interval:
        out["interval"], out["interval_model"] = _clustered(differences, delta, alpha)[1], "clustered by task"
    return out


def _clustered(differences: Sequence[float], delta: float, alpha: float) -> tuple[float, list[float]]:
    """The standard error clustered by task and the t interval of the mean difference."""
    from scipy import stats

    n = len(differences)
    se = math.sqrt(sum((d - delta) ** 2 for d in differences) / (n - 1) / n) if n > 1 else 0.0
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * se if n > 1 else 0.0
    return se, [max(-1.0, delta - half), min(1.0, delta + half)]


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
                              power: float = POWER) -> dict[str, Any]:  # fmt: skip
    """The smallest true difference in resolve rate the primary test detects with ``power``.

    The per-task difference d_t varies by the true per-task effects (sd ``task_effect_sd``, an
    assumption the manifest states) and by each arm's seed-to-seed noise (a 0/1 draw per seed: at
    most 1/4 per arm, averaged over the seeds): sd(d_t) = sqrt(task_effect_sd^2 + 2 * (1/4) / seeds).
    MDE = (t_{1-alpha/2, n-1} + t_{power, n-1}) * sd(d_t) / sqrt(n). With the exact test on n tasks
    nothing below p = 2^(1-n) exists: a design where that is not below alpha can never be
    significant (``reachable`` False, ``mde`` None)."""
    from scipy import stats

    spread = math.sqrt(task_effect_sd**2 + 2 * BERNOULLI_MAX_VARIANCE / max(1, seeds))
    out: dict[str, Any] = {"tasks": tasks, "seeds": seeds, "alpha": alpha, "power": power,
                           "task_effect_sd": task_effect_sd, "difference_sd": spread, "mde": None, "reachable": True}  # fmt: skip
    if tasks < 2 or (tasks <= EXACT_MAX_TASKS and 2.0 ** (1 - tasks) >= alpha):
        out["reachable"] = False
        out["why"] = (f"{tasks} task(s): the exact test's smallest p-value is {2.0 ** (1 - max(tasks, 1)):.3g}, not "
                      f"below alpha {alpha:g}: no result could ever be significant")  # fmt: skip
        return out
    df = tasks - 1
    out["mde"] = (float(stats.t.ppf(1 - alpha / 2, df)) + float(stats.t.ppf(power, df))) * spread / math.sqrt(tasks)
    return out


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
