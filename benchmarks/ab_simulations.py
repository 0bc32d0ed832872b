"""Simulated false-positive rates and power of the A/B primary test (docs/ab.md "The statistics").

Every figure docs/ab.md gives about the primary test's behaviour comes from this script: run it
(`python benchmarks/ab_simulations.py [--repetitions N] [--json]`) and compare. Seeded: the same
command prints the same table.

Each experiment draws T tasks and S seeds for two arms. A task's level is uniform in [0.25, 0.75]
(its resolve probability); the candidate adds a true effect. Scenarios:

- ``independent``: no effect, no shock (every (seed, task) outcome independent);
- ``heterogeneous``: per-task effects of +0.4 or -0.4 at random, averaging zero over the tasks;
- ``shock 0.3`` / ``shock 0.7``: no effect, but each arm's seed run is hit as a whole by a shock of
  that sd on the log-odds scale (a slower provider during that run), shared by every task of the run.

Rates are the share of experiments with p < 0.05, with the Wilson 95% interval of that share.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_objective_scoring.ab_inference import arm_interval, primary_of  # noqa: E402

ALPHA = 0.05


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1 - p))


def experiment(rng: np.random.Generator, tasks: int, seeds: int, scenario: str, effect: float = 0.0) -> float:
    """The primary test's p-value on one simulated experiment."""
    level = rng.uniform(0.25, 0.75, tasks)
    if scenario == "heterogeneous":
        gain = rng.choice((0.4, -0.4), tasks)
        base, cand = np.broadcast_to(level - gain / 2, (seeds, tasks)), np.broadcast_to(level + gain / 2, (seeds, tasks))
    elif scenario.startswith("shock"):
        sd = float(scenario.split()[1])
        base = 1 / (1 + np.exp(-(_logit(level) + rng.normal(0, sd, (seeds, 1)))))
        cand = 1 / (1 + np.exp(-(_logit(np.clip(level + effect, 0.01, 0.99)) + rng.normal(0, sd, (seeds, 1)))))
    else:
        base = np.broadcast_to(level, (seeds, tasks))
        cand = np.broadcast_to(np.clip(level + effect, 0.0, 1.0), (seeds, tasks))
    d = (rng.random((seeds, tasks)) < cand).astype(float) - (rng.random((seeds, tasks)) < base)
    return float(primary_of(d.tolist(), ALPHA)["p_value"])


def rate(tasks: int, seeds: int, scenario: str, repetitions: int, seed: int, effect: float = 0.0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = sum(experiment(rng, tasks, seeds, scenario, effect) < ALPHA for _ in range(repetitions))
    low, high = arm_interval(hits / repetitions, repetitions, 0.05)
    return {"rate": hits / repetitions, "low": low, "high": high}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=4000, help="Experiments per cell (default: 4000)")
    parser.add_argument("--json", action="store_true", help="The tables as JSON")
    args = parser.parse_args()
    n = args.repetitions
    false_positives = {}
    for scenario in ("independent", "heterogeneous", "shock 0.3", "shock 0.7"):
        for tasks in (12, 20, 30, 50):
            found = rate(tasks, 5, scenario, n, seed=tasks * 1000 + len(scenario))
            false_positives[f"{scenario}, {tasks} tasks x 5 seeds"] = found
    power = {}
    for scenario in ("independent", "shock 0.3"):
        for tasks in (12, 20, 30, 50, 100):
            for seeds in (2, 3, 5, 10, 20):
                found = rate(tasks, seeds, scenario, max(n // 4, 200), seed=tasks * 100 + seeds, effect=0.10)
                power[f"{scenario}, +10 points, {tasks} tasks x {seeds} seeds"] = found
    if args.json:
        print(json.dumps({"false_positive_rate": false_positives, "power": power, "repetitions": n}, indent=1))
        return 0
    print(f"False-positive rate at alpha {ALPHA} ({n} experiments a cell, Wilson 95% interval)")
    for name, found in false_positives.items():
        print(f"  {name:<40} {found['rate']:6.1%}  [{found['low']:.1%}, {found['high']:.1%}]")
    print(f"\nPower at a true +10 points ({max(n // 4, 200)} experiments a cell)")
    for name, found in power.items():
        print(f"  {name:<52} {found['rate']:6.1%}  [{found['low']:.1%}, {found['high']:.1%}]")
    return 0 if all(f["low"] <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / n) for f in false_positives.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
