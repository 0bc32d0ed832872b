"""Simulated error rates, power, MDE calibration and interval coverage of the A/B statistics
(docs/ab.md "The statistics" and "Power before the run").

Every figure docs/ab.md gives about how the primary test and the intervals behave comes from this
script: run it (`python benchmarks/ab_simulations.py [--section NAME] [--repetitions N] [--json]`) and
compare. Seeded: the same command prints the same tables. Every rate is printed with the Wilson 95 %
interval of the share it estimates.

Sections:

- ``fpr``: the primary test's false-positive rate at alpha 0.05 and 0.01. Each experiment draws T
  tasks and S seeds for two arms; a task's level is uniform in [0.25, 0.75] (its resolve
  probability). ``independent``: no effect, no shock. ``heterogeneous``: per-task effects of +0.4 or
  -0.4 at random, averaging zero. ``shock 0.3`` / ``shock 0.7``: no effect, but each arm's seed run is
  hit as a whole by a shock of that sd on the log-odds scale (a slower provider during that run).
- ``power``: the share of experiments significant at alpha 0.05 at a true +10 points (the candidate's
  level raised by 0.10 on every task), without and with run shocks of sd 0.3.
- ``mde``: the stated minimum detectable effect (``minimum_detectable_effect``) against the power the
  primary test really has there, measured on fresh experiments drawn by this script under the MDE's
  own model (a task's difference Δ + a_t, a_t ~ N(0, task sd²), a run's shock r_s ~ N(0, run sd²),
  each arm's outcome a 0/1 draw around 1/2); and the power at the old closed-form MDE.
- ``passk``: how often pass@k's interval (``pass_at_k_interval``) covers the true pass@k over a
  population of tasks, at 3, 5, 10 and 30 tasks (5 samples a task), beside the BCa bootstrap it
  replaced (``mean_interval`` of the per-task estimates) and, for pass@1 (the arm's resolve rate),
  the arm's Wilson interval over tasks (``arm_interval``).
- ``spread``: how often ``paired_difference``'s interval covers the mean per-task difference when
  most tasks move by the same amount (so that all n tasks often do: "no spread"), beside the
  zero-width [Δ, Δ] it replaced.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_objective_scoring.ab_inference import (
    arm_interval,
    mean_interval,
    minimum_detectable_effect,
    paired_difference,
    pass_at_k,
    pass_at_k_interval,
    primary_batch,
    primary_of,
)

BATCH = 2000  # experiments drawn and tested at once


def _expit(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1 - p))


def draw(rng: np.random.Generator, count: int, tasks: int, seeds: int, scenario: str, effect: float = 0.0) -> np.ndarray:
    """``count`` simulated experiments' differences d (experiments x seeds x tasks)."""
    level = rng.uniform(0.25, 0.75, (count, 1, tasks))
    base = np.broadcast_to(level, (count, seeds, tasks))
    cand = np.broadcast_to(np.clip(level + effect, 0.0, 1.0), (count, seeds, tasks))
    if scenario == "heterogeneous":
        gain = rng.choice((0.4, -0.4), (count, 1, tasks))
        base, cand = base - gain / 2, cand + gain / 2
    elif scenario.startswith("shock"):
        sd = float(scenario.split()[1])
        base = _expit(_logit(base) + rng.normal(0, sd, (count, seeds, 1)))
        cand = _expit(_logit(np.clip(cand, 0.01, 0.99)) + rng.normal(0, sd, (count, seeds, 1)))
    return (rng.random((count, seeds, tasks)) < cand).astype(float) - (rng.random((count, seeds, tasks)) < base)


def share(hits: int, n: int) -> dict[str, float]:
    low, high = arm_interval(hits / n, n, 0.05)
    return {"rate": hits / n, "low": low, "high": high, "n": n}


def rejections(tasks: int, seeds: int, scenario: str, repetitions: int, seed: int, effect: float = 0.0,
               alphas: tuple[float, ...] = (0.05, 0.01)) -> dict[float, dict[str, float]]:  # fmt: skip
    """The share of experiments the primary test rejects at each alpha (Wilson 95 % interval)."""
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(alphas, 0)
    for start in range(0, repetitions, BATCH):
        p = primary_batch(draw(rng, min(BATCH, repetitions - start), tasks, seeds, scenario, effect))["p_value"]
        for alpha in alphas:
            hits[alpha] += int(np.sum(p < alpha))
    return {alpha: share(hits[alpha], repetitions) for alpha in alphas}


def false_positive_rates(repetitions: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scenario in ("independent", "heterogeneous", "shock 0.3", "shock 0.7"):
        for tasks in (12, 20, 30, 50):
            found = rejections(tasks, 5, scenario, repetitions, seed=tasks * 1000 + len(scenario))
            out[f"{scenario}, {tasks} tasks x 5 seeds"] = found
    for seeds in (2, 3, 4):
        out[f"shock 0.7, 50 tasks x {seeds} seeds"] = rejections(50, seeds, "shock 0.7", repetitions, seed=7000 + seeds)
    return out


def power_table(repetitions: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scenario in ("independent", "shock 0.3"):
        for tasks in (12, 20, 30, 50, 100):
            for seeds in (2, 3, 5, 10, 20):
                found = rejections(tasks, seeds, scenario, repetitions, tasks * 100 + seeds, 0.10, (0.05,))[0.05]
                out[f"{scenario}, +10 points, {tasks} tasks x {seeds} seeds"] = found
    return out


def power_at(effect_shift: float, tasks: int, seeds: int, task_sd: float, run_sd: float, repetitions: int,
             seed: int, alpha: float = 0.05) -> dict[str, float]:  # fmt: skip
    """Power of the primary test at a shift under the MDE's model, drawn here (not by the package)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, repetitions, BATCH):
        count = min(BATCH, repetitions - start)
        shift = effect_shift + task_sd * rng.standard_normal((count, 1, tasks)) + run_sd * rng.standard_normal((count, seeds, 1))
        cand = np.clip(0.5 + shift / 2, 0.0, 1.0)
        d = (rng.random((count, seeds, tasks)) < cand).astype(float) - (rng.random((count, seeds, tasks)) < 1.0 - cand)
        found = primary_batch(d)
        hits += int(np.sum((found["p_value"] < alpha) & (found["delta"] > 0)))
    return share(hits, repetitions)


def _shift_of(mean_difference: float, spread: float) -> float:
    """The shift δ whose E[clip(δ + spread·Z, −1, 1)] is ``mean_difference`` (bisection)."""
    from pytest_objective_scoring.ab_inference import _mean_difference

    low, high = -1.0, 1.0 + 4 * spread
    while high - low > 1e-9:
        middle = (low + high) / 2
        low, high = (middle, high) if _mean_difference(middle, spread) < mean_difference else (low, middle)
    return (low + high) / 2


def mde_check(repetitions: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    designs = [(20, 5, 0.3, 0.0), (50, 5, 0.3, 0.0), (30, 10, 0.3, 0.0), (30, 5, 0.3, 0.1), (20, 5, 0.1, 0.0),
               (1000, 5, 0.3, 0.0)]  # fmt: skip
    for tasks, seeds, task_sd, run_sd in designs:
        found = minimum_detectable_effect(tasks, seeds, 0.05, task_sd, run_effect_sd=run_sd)
        spread = math.hypot(task_sd, run_sd)
        reps = repetitions if tasks * seeds <= 500 else max(400, repetitions * 500 // (tasks * seeds))
        seed = tasks * 10 + seeds
        out[f"{tasks} tasks x {seeds} seeds, task sd {task_sd}, run sd {run_sd}"] = {
            "mde": found["mde"], "mde_interval": found["mde_interval"], "draws": found["simulation"]["draws"],
            "power_at_mde": power_at(_shift_of(found["mde"], spread), tasks, seeds, task_sd, run_sd, reps, seed),
            "approximation": found["approximation"],
            "power_at_approximation": power_at(_shift_of(found["approximation"], spread), tasks, seeds, task_sd, run_sd,
                                               reps, seed + 1),
        }  # fmt: skip
    return out


SCENARIOS = {
    "task p ~ U(0, 1)": lambda rng, n: rng.uniform(0, 1, n),
    "task p ~ Beta(0.5, 3) (hard tasks)": lambda rng, n: rng.beta(0.5, 3, n),
    "task p ~ Beta(0.3, 0.3) (tasks solved always or never)": lambda rng, n: rng.beta(0.3, 0.3, n),
    "5 % of tasks always solved, the rest never": lambda rng, n: (rng.random(n) < 0.05).astype(float),
    "20 % of tasks always solved, the rest never": lambda rng, n: (rng.random(n) < 0.2).astype(float),
}


def pass_at_k_coverage(repetitions: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    samples = 5
    for k in (1, 2):
        for name, population in SCENARIOS.items():
            truth = float(np.mean(1 - (1 - population(np.random.default_rng(99), 1_000_000)) ** k))
            for tasks in (3, 5, 10, 30):
                rng = np.random.default_rng(tasks * 7 + k)
                covered = bootstrap_covered = wilson_covered = 0
                boot_reps = min(repetitions, 400)
                for rep in range(repetitions):
                    counts = [(samples, int(c)) for c in rng.binomial(samples, population(rng, tasks))]
                    low, high = pass_at_k_interval(counts, k)["interval"]
                    covered += low <= truth <= high
                    if k == 1:  # pass@1 is the arm's resolve rate: its Wilson interval over tasks, beside
                        mean = sum(c for _, c in counts) / (samples * tasks)
                        low, high = arm_interval(mean, tasks, 0.05)
                        wilson_covered += low <= truth <= high
                    if rep < boot_reps and k == 1 and name == "task p ~ U(0, 1)":
                        old = mean_interval([float(pass_at_k(n, c, k) or 0.0) for n, c in counts])["interval"]
                        bootstrap_covered += old is not None and old[0] <= truth <= old[1]
                row = {"truth": truth, "clopper_pearson": share(covered, repetitions)}
                if k == 1:
                    row["arm interval (Wilson)"] = share(wilson_covered, repetitions)
                if k == 1 and name == "task p ~ U(0, 1)":
                    row["bootstrap (before)"] = share(bootstrap_covered, boot_reps)
                out[f"pass@{k}, {name}, {tasks} tasks"] = row
    return out


def no_spread_coverage(repetitions: int) -> dict[str, Any]:
    """Per-task differences +1 (share ``moved``) or -1: the mean is 2 moved - 1."""
    out: dict[str, Any] = {}
    for moved in (0.9, 0.97):
        truth = 2 * moved - 1
        for tasks in (7, 10, 20):
            rng = np.random.default_rng(int(moved * 100) + tasks)
            covered = before = alike = 0
            for _ in range(repetitions):
                d = np.where(rng.random(tasks) < moved, 1.0, -1.0)
                found = paired_difference([0.0] * tasks, d.tolist(), 0.05, "task", (-1.0, 1.0))
                low, high = found["interval"]
                covered += low <= truth <= high
                if "no spread" in str(found["note"]):
                    alike += 1
                else:
                    before += low <= truth <= high  # the t interval, as before
            out[f"{tasks} tasks, {moved:.0%} of tasks +1 (mean {truth:+.2f})"] = {
                "no_spread_share": alike / repetitions, "now": share(covered, repetitions),
                "before ([Δ, Δ] when no spread)": share(before, repetitions)}  # fmt: skip
    return out


def _check_against_primary_of(seed: int = 5) -> None:
    """The vectorized test is :func:`primary_of`: the same p-values on random experiments."""
    rng = np.random.default_rng(seed)
    d = draw(rng, 200, 20, 5, "shock 0.7")
    batch = primary_batch(d)["p_value"]
    assert all(abs(primary_of(d[i].tolist(), 0.05)["p_value"] - batch[i]) < 1e-12 for i in range(len(d)))


def _line(name: str, found: dict[str, float]) -> str:
    return f"{found['rate']:6.2%} [{found['low']:.2%}, {found['high']:.2%}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=("all", "fpr", "power", "mde", "passk", "spread"), default="all",
                        help="Which table to compute (default: all)")  # fmt: skip
    parser.add_argument("--repetitions", type=int, default=20000,
                        help="Experiments per false-positive cell (default: 20000; power and MDE cells use a tenth "
                             "and a fifth, coverage cells a tenth)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="The tables as JSON")
    args = parser.parse_args()
    n = args.repetitions
    _check_against_primary_of()
    sections = {"fpr": lambda: false_positive_rates(n), "power": lambda: power_table(max(n // 10, 200)),
                "mde": lambda: mde_check(max(n // 5, 400)), "passk": lambda: pass_at_k_coverage(max(n // 10, 200)),
                "spread": lambda: no_spread_coverage(max(n // 10, 200))}  # fmt: skip
    chosen = list(sections) if args.section == "all" else [args.section]
    tables = {name: sections[name]() for name in chosen}
    if args.json:
        print(json.dumps({**tables, "repetitions": n}, indent=1, default=str))
        return 0
    for name, table in tables.items():
        print(f"\n== {name}")
        for row, found in table.items():
            if name == "fpr":
                print(f"  {row:<44} alpha 0.05 {_line(row, found[0.05])}   alpha 0.01 {_line(row, found[0.01])}")
            elif name == "power":
                print(f"  {row:<52} {_line(row, found)}")
            elif name == "mde":
                print(f"  {row:<48} MDE {found['mde']:.3f} [{found['mde_interval'][0]:.3f}, "
                      f"{found['mde_interval'][1]:.3f}] ({found['draws']}): power {_line(row, found['power_at_mde'])}; "
                      f"old formula {found['approximation']:.3f}: power {_line(row, found['power_at_approximation'])}")  # fmt: skip
            else:
                print(f"  {row:<70} " + "; ".join(f"{key} {_line(row, value)}" if isinstance(value, dict) else
                                                 f"{key} {value:.3f}" for key, value in found.items()))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
