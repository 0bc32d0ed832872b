"""Issue 29, item 4: uncertainty on every printed number, and a scorecard diff that credits each
task's gain in resolution only to the stages that moved on that task.

Intervals are checked against an independent computation with scipy on small data; bootstraps are
seeded (the same numbers twice); one task gives no interval ("n/a: one task"), never a zero-width one.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from pytest_objective_scoring import ab_inference as ai
from pytest_objective_scoring import scorecard as sc
from pytest_objective_scoring.ab_inference import pass_at_k
from pytest_objective_scoring.cli import main
from pytest_objective_scoring.ledger import Ledger

from .test_scorecard import as_dict, envelope, touched

# ---------------------------------------------------------------- scorecard diff: credit task by task


def card(task: str, resolved: bool, exercised: bool = True, recall: float = 0.5, parse: bool = True) -> dict[str, Any]:
    """A scorecard of ``task`` with the metrics the tests move set by hand."""
    built = as_dict(touched("src/a.py::helper"), task_id=task, envelope=envelope(resolved=resolved))
    built["component_metrics"]["testing"]["bug_tests_exercised"] = exercised
    built["component_metrics"]["localization"]["file_recall"] = recall
    built["component_metrics"]["patching"]["parse"] = parse
    return built


def issue_29_runs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Issue 29's case: coverage (bug tests exercised) 20% -> 100% and resolves 0 -> 80% over five
    tasks; localization moved only on t5, a task whose resolution did not move."""
    before = [card(f"t{i}", False, exercised=i == 5) for i in range(1, 6)]
    after = [card(f"t{i}", i < 5, recall=0.52 if i == 5 else 0.5) for i in range(1, 6)]
    return before, after


def test_issue_29_a_gain_is_credited_to_the_stage_that_moved_on_the_tasks_that_gained_not_to_localization():
    """Before the fix: "localization.file_recall 50% → 50%; ...: the gain is credited to localization, the
    earliest stage that improved", though localization moved only on t5, which did not gain."""
    result = sc.diff(*issue_29_runs())
    text = result["attribution"]
    assert "credited to localization" not in text and "localization on" not in text
    credit = result["credit"]
    assert credit["gained"] == ["t1", "t2", "t3", "t4"] and credit["lost"] == []
    assert credit["stages"]["testing"]["gained"] == ["t1", "t2", "t3", "t4"]
    assert credit["stages"]["localization"]["gained"] == [] and credit["stages"]["localization"]["moved_elsewhere"] == ["t5"]
    assert credit["unattributed"] == {"gained": [], "lost": []}
    [on] = credit["stages"]["testing"]["on_gained"]  # the stage's metric over the tasks it is credited with
    assert (on["metric"], on["a"], on["b"], on["tasks"], on["delta"]) == ("testing.bug_tests_exercised", 0.0, 1.0, 4, 1.0)
    assert ("the gain on 4 task(s) (t1, t2, t3, t4) is credited, task by task, to the stages that improved on them: "
            "testing on 4 of them (t1, t2, t3, t4: testing.bug_tests_exercised 0% → 100% (+100.0 points") in text
    assert "not credited (moved only on tasks whose resolution did not rise): localization (t5)" in text
    # the "50% → 50%" is printed with the change it hides, its interval and its tasks
    assert "localization.file_recall 50% → 50% (+0.4 points, 95% CI [" in text and "], 5 tasks)" in text


def test_gains_and_losses_are_credited_per_task_and_a_gain_no_stage_explains_is_unattributed():
    before = [card("g-loc", False, recall=0.0), card("g-parse", False, parse=False), card("g-none", False),
              card("l-tests", True), card("flat", False)]  # fmt: skip
    after = [card("g-loc", True, recall=1.0), card("g-parse", True), card("g-none", True),
             card("l-tests", False, exercised=False), card("flat", False, recall=1.0)]  # fmt: skip
    credit = sc.diff(before, after)["credit"]
    assert credit["gained"] == ["g-loc", "g-parse", "g-none"] and credit["lost"] == ["l-tests"]
    assert credit["stages"]["localization"]["gained"] == ["g-loc"]  # not "flat", where it moved but nothing gained
    assert credit["stages"]["localization"]["moved_elsewhere"] == ["flat"]
    assert credit["stages"]["patching"]["gained"] == ["g-parse"]
    assert credit["stages"]["testing"]["lost"] == ["l-tests"] and credit["stages"]["testing"]["gained"] == []
    assert credit["unattributed"] == {"gained": ["g-none"], "lost": []}
    assert credit["nothing_moved"] == {"gained": ["g-none"], "lost": []}
    text = sc.diff(before, after)["attribution"]
    assert "no stage explains the gain on 1 task(s) (g-none): unattributed, no stage improved on them" in text
    assert ("the loss on 1 task(s) (l-tests) is charged, task by task, to the stages that got worse on them: testing on 1 "
            "of them (l-tests: testing.bug_tests_exercised 100% → 0% (-100.0 points, n/a: one task))") in text


def test_a_stage_that_got_worse_on_a_task_that_gained_is_never_credited_with_it():
    before = [card("t1", False, recall=1.0, parse=False)]
    after = [card("t1", True, recall=0.0)]  # patching better, localization worse
    result = sc.diff(before, after)
    assert result["credit"]["stages"]["patching"]["gained"] == ["t1"]
    assert result["credit"]["stages"]["localization"]["gained"] == []
    assert "never credited (on those tasks worse: localization)" in result["attribution"]


# ---------------------------------------------------------------- scorecard: intervals and their tasks


def test_each_delta_has_the_t_interval_of_the_paired_per_task_differences_and_its_number_of_tasks():
    recalls_a, recalls_b = [0.0, 0.25, 0.5, 0.5], [0.5, 0.25, 1.0, 0.75]
    before = [card(f"t{i}", False, recall=r) for i, r in enumerate(recalls_a)]
    after = [card(f"t{i}", i % 2 == 0, recall=r) for i, r in enumerate(recalls_b)]
    rows = {row["metric"]: row for row in sc.diff(before, after)["metrics"]}
    recall = rows["localization.file_recall"]
    independent = stats.ttest_rel(recalls_b, recalls_a).confidence_interval(0.95)
    assert recall["tasks"] == 4 and recall["delta"] == pytest.approx(0.3125)
    assert recall["interval"] == pytest.approx([independent.low, independent.high])
    resolved = rows["end_to_end.resolved"]
    expected = stats.ttest_rel([1, 0, 1, 0], [0, 0, 0, 0]).confidence_interval(0.95)
    assert resolved["interval"] == pytest.approx([max(-1.0, expected.low), min(1.0, expected.high)])  # a rate's: in [-1, 1]
    assert "Student's t" in resolved["method"] and resolved["tasks"] == 4


def test_one_task_has_no_interval_and_says_so():
    result = sc.diff([card("t1", False, recall=0.0)], [card("t1", True, recall=1.0)])
    rows = {row["metric"]: row for row in result["metrics"]}
    for metric in ("localization.file_recall", "end_to_end.resolved"):
        assert rows[metric]["interval"] is None and rows[metric]["note"] == "n/a: one task" and rows[metric]["tasks"] == 1
    assert "end_to_end.resolved 0% → 100% (+100.0 points, n/a: one task)" in result["attribution"]
    assert ai.paired_difference([0.0], [1.0])["interval"] is None
    assert ai.mean_interval([3.0])["note"] == "n/a: one task" and ai.mean_interval([3.0])["interval"] is None
    assert ai.distribution([3.0], unit="task")["interval"] is None and ai.distribution([3.0], unit="task")["sd"] is None


def _scorecard_ledger(path: Path, a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    with Ledger(path) as ledger:
        for seq, one in enumerate([*a, *b], 1):
            ledger.append("scorecard", {"score_seq": seq, "instance_id": one["task_id"], "patch_ref": f"p{seq}",
                                        "harness": "h", "failure_class": "none", "scorecard": one})  # fmt: skip


def test_the_diff_command_prints_each_change_with_its_interval_and_the_credit_and_its_json_the_same(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    _scorecard_ledger(path, *issue_29_runs())
    assert main(["scorecard", "diff", "1-5", "6-10", "--ledger", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert main(["scorecard", "diff", "1-5", "6-10", "--ledger", str(path)]) == 0
    table = capsys.readouterr().out
    rows = {row["metric"]: row for row in [*shown["metrics"], *shown["economics"]]}
    resolved = rows["end_to_end.resolved"]
    assert resolved["delta"] == pytest.approx(0.8) and resolved["tasks"] == 5
    low, high = resolved["interval"]
    line = next(line for line in table.splitlines() if "end_to_end.resolved" in line)
    assert "+80.0 points" in line and f"[{low * 100:+.1f}, {high * 100:+.1f}]" in line and "│ 5 " in line
    for metric in ("localization.file_recall", "economics.dollars"):  # every row: the JSON's numbers in the table
        row = rows[metric]
        found = next(line for line in table.splitlines() if metric in line)
        assert sc.show_change(metric, row["delta"]) in found and sc.show_change_interval(metric, row) in found
    assert "credit, task by task: 4 task(s) gained, 0 lost" in table
    assert "testing" in table and "4: t1, t2, t3, t4" in table
    assert "Student's t over the per-task differences" in table
    assert shown["credit"]["stages"]["testing"]["gained"] == ["t1", "t2", "t3", "t4"]


def test_the_means_of_several_runs_have_their_interval_over_tasks_in_the_table_and_the_json(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    recalls = [0.0, 0.25, 0.5, 1.0, 1.0]
    runs = [card(f"t{i}", i > 1, recall=r) for i, r in enumerate(recalls)]
    _scorecard_ledger(path, runs, [])
    assert main(["scorecard", "1-5", "--ledger", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    recall = shown["intervals"]["localization.file_recall"]
    assert recall["mean"] == pytest.approx(shown["means"]["localization.file_recall"]) and recall["n"] == 5
    independent = stats.bootstrap((np.array(recalls),), np.mean, method="BCa", n_resamples=ai.BOOTSTRAP_RESAMPLES,
                                  random_state=ai.BOOTSTRAP_SEED).confidence_interval  # fmt: skip
    assert recall["interval"] == pytest.approx([independent.low, independent.high])
    assert main(["scorecard", "1-5", "--ledger", str(path)]) == 0
    table = capsys.readouterr().out
    line = next(line for line in table.splitlines() if "file_recall" in line)
    assert sc.show_interval("localization.file_recall", recall) in line and "│ 5 " in line
    assert "BCa bootstrap over tasks" in table
    assert main(["scorecard", "1", "--ledger", str(path)]) == 0
    assert "no interval (n/a: one task)" in capsys.readouterr().out


# ---------------------------------------------------------------- the pure functions, against scipy


def test_paired_difference_is_scipys_one_sample_t_interval_of_the_differences():
    a, b = [0.1, 0.4, 0.35, 0.8, 0.2], [0.3, 0.5, 0.3, 1.0, 0.6]
    found = ai.paired_difference(a, b)
    expected = stats.ttest_1samp(np.subtract(b, a), 0.0).confidence_interval(0.95)
    assert found["delta"] == pytest.approx(np.mean(np.subtract(b, a))) and found["n"] == 5
    assert found["interval"] == pytest.approx([expected.low, expected.high])
    assert ai.paired_difference([0.0, 0.0], [1.0, 1.0])["note"].startswith("no spread")


def test_mean_interval_and_distribution_match_scipy_and_numpy_and_repeat_exactly():
    values = [0.2, 0.5, 0.9, 1.4, 2.0, 3.1, 0.7]
    found = ai.mean_interval(values, unit="run")
    independent = stats.bootstrap((np.array(values),), np.mean, method="BCa", n_resamples=ai.BOOTSTRAP_RESAMPLES,
                                  random_state=ai.BOOTSTRAP_SEED).confidence_interval  # fmt: skip
    assert found["interval"] == pytest.approx([independent.low, independent.high])
    assert found == ai.mean_interval(values, unit="run"), "seeded: the same numbers twice"
    shape = ai.distribution(values)
    assert shape["mean"] == pytest.approx(statistics.mean(values)) and shape["sd"] == pytest.approx(statistics.stdev(values))
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    assert (shape["median"], shape["p10"], shape["p90"]) == pytest.approx((median, p10, p90))
    assert shape["interval"] == found["interval"] and shape["n"] == 7


def test_a_mean_over_runs_resampled_by_task_is_the_bootstrap_of_the_task_means_when_tasks_are_balanced():
    values, tasks = [1.0, 3.0, 2.0, 2.0, 5.0, 9.0, 0.0, 1.0], ["a", "a", "b", "b", "c", "c", "d", "d"]
    found = ai.mean_interval(values, groups=tasks)
    task_means = np.array([2.0, 2.0, 7.0, 0.5])
    independent = stats.bootstrap((task_means,), np.mean, method="BCa", n_resamples=ai.BOOTSTRAP_RESAMPLES,
                                  random_state=ai.BOOTSTRAP_SEED).confidence_interval  # fmt: skip
    assert found["mean"] == pytest.approx(statistics.mean(values)) and found["n"] == 4 and found["values"] == 8
    assert found["interval"] == pytest.approx([independent.low, independent.high], rel=1e-9)
    assert ai.mean_interval([1.0, 2.0], groups=["a", "a"])["note"] == "n/a: one task"


def test_pass_at_k_interval_is_clopper_pearson_over_tasks_of_the_unbiased_estimator():
    counts = [(5, 0), (5, 1), (5, 3), (5, 5), (5, 2), (3, 1)]  # the last task has fewer than k = 5 samples
    found = ai.pass_at_k_interval(counts, 2)
    per_task = [pass_at_k(n, c, 2) for n, c in counts]
    assert found["estimate"] == pytest.approx(statistics.mean(per_task)) and found["tasks"] == 6
    hits = statistics.mean(per_task) * 6
    assert found["interval"] == pytest.approx([stats.beta.ppf(0.025, hits, 7 - hits), stats.beta.ppf(0.975, hits + 1, 6 - hits)])
    at5 = ai.pass_at_k_interval(counts, 5)
    assert at5["undefined"] == 1 and at5["tasks"] == 5
    assert ai.pass_at_k_interval([(5, 2)], 1)["note"] == "n/a: one task"
    assert ai.pass_at_k_interval(counts, 2) == found


def test_cost_distributions_leave_out_unreported_values_and_never_make_up_zeros():
    runs = [("t1", {"dollars": 1.0, "tokens": None}), ("t2", {"dollars": 3.0, "tokens": 10}), ("t3", None)]
    found = ai.cost_distributions(runs)
    assert found["dollars"]["n"] == 2 and found["dollars"]["unknown"] == 1 and found["dollars"]["mean"] == 2.0
    assert found["tokens"]["n"] == 1 and found["tokens"]["note"] == "n/a: one task" and found["tokens"]["interval"] is None
    assert found["cpu"]["n"] == 0 and found["cpu"]["mean"] is None
    json.dumps(found, allow_nan=False)


# ---------------------------------------------------------------- objective-score costs


def _cost_runs(ledger: Ledger, harness: str, rows: list[tuple[str, bool, float, float, int]]) -> None:
    for task, resolved, dollars, cpu, tokens in rows:
        score = {"source": "runner", "benchmark": "b", "metric_space": "binary_resolved", "instance_id": task,
                 "harness": harness, "patch_ref": f"p-{harness}-{task}", "failure_class": "none" if resolved else "solver",
                 "score": {"resolved": "resolved" if resolved else "not_resolved"}}  # fmt: skip
        cost = {"cost": {"tokens": tokens, "calls": 2, "cpu": cpu, "wall_time": cpu * 2, "dollars": dollars},
                "breakdown": {"model_dollars": dollars}}  # fmt: skip
        ledger.append_linked([("score", lambda _, s=score: s),
                              ("cost", lambda w, c=cost: {"score_seq": w[0].seq, "harness": harness, **c})])  # fmt: skip


ROWS = [("t1", True, 0.10, 1.0, 1000), ("t2", False, 0.30, 2.5, 3000), ("t3", True, 0.20, 1.5, 1500),
        ("t4", True, 0.55, 4.0, 5200), ("t5", False, 0.15, 0.5, 900)]  # fmt: skip


def test_costs_give_each_per_run_quantity_as_a_distribution_with_an_interval_in_the_table_and_the_json(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        _cost_runs(ledger, "h", ROWS)
        _cost_runs(ledger, "solo", [("t1", True, 0.2, 1.0, 100)])
    assert main(["costs", "--ledger", str(path), "--json"]) == 0
    first = capsys.readouterr().out
    assert main(["costs", "--ledger", str(path), "--json"]) == 0
    assert capsys.readouterr().out == first, "seeded bootstraps: the same numbers twice"
    harnesses = {h["harness"]: h for h in json.loads(first)["benchmarks"][0]["harnesses"]}
    u = harnesses["h"]["uncertainty"]
    dollars = [r[2] for r in ROWS]
    for name, values in (("dollars", dollars), ("cpu", [r[3] for r in ROWS]), ("wall_time", [r[3] * 2 for r in ROWS]),
                         ("tokens", [float(r[4]) for r in ROWS])):  # fmt: skip
        shape = u["per_run"][name]
        p10, median, p90 = np.percentile(values, [10, 50, 90])
        assert shape["n"] == 5 and shape["mean"] == pytest.approx(statistics.mean(values))
        assert shape["sd"] == pytest.approx(statistics.stdev(values))
        assert (shape["median"], shape["p10"], shape["p90"]) == pytest.approx((median, p10, p90))
        independent = stats.bootstrap((np.array(values),), np.mean, method="BCa", n_resamples=ai.BOOTSTRAP_RESAMPLES,
                                      random_state=ai.BOOTSTRAP_SEED).confidence_interval  # fmt: skip
        assert shape["interval"] == pytest.approx([independent.low, independent.high])  # one run per task here
    wilson = stats.binomtest(3, 5).proportion_ci(0.95, method="wilson")
    assert u["resolve_rate"]["interval"] == pytest.approx([wilson.low, wilson.high])
    ratio = u["ratios"]["resolves_per_dollar"]
    assert ratio["estimate"] == pytest.approx(harnesses["h"]["ratios"]["resolves_per_dollar"])
    assert ratio["interval"][0] < ratio["estimate"] < ratio["interval"][1]
    solo = harnesses["solo"]["uncertainty"]
    assert solo["per_run"]["dollars"]["interval"] is None and solo["per_run"]["dollars"]["note"] == "n/a: one task"

    assert main(["costs", "--ledger", str(path)]) == 0
    table = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table.splitlines() if line.startswith("│")]
    shape = u["per_run"]["dollars"]
    low, high = shape["interval"]
    assert ["h", "dollars", "5", f"{shape['mean']:.4g}", f"[{low:.4g}, {high:.4g}]", f"{shape['sd']:.4g}",
            f"{shape['median']:.4g}", f"{shape['p10']:.4g}", f"{shape['p90']:.4g}", "0"] in rows  # the JSON's numbers
    assert ["solo", "dollars", "1", "0.2", "n/a: one task", "-", "0.2", "0.2", "0.2", "0"] in rows
    rate_low, rate_high = u["resolve_rate"]["interval"]
    assert f"[{rate_low:.1%}," in table and f"{rate_high:.1%}]" in table  # the rate's interval, in its (wrapped) cell
    assert "Wilson score interval" in table and "BCa bootstrap over tasks" in table


# ---------------------------------------------------------------- the A/B report: cost plot, pass@k, family


def _ab_output(distribution: bool) -> dict[str, Any]:
    cost = {"tokens": 100, "calls": 10, "cpu": 3.0, "wall_time": 5.0, "dollars": 2.0}
    arms = [{"name": name, "harness_version": "v1", "resolved": [1, 2], "mean": 0.5, "variance": 0.1,
             "confidence_interval": [0.2, 0.8], "cost": dict(cost)} for name in ("baseline", "candidate")]  # fmt: skip
    details: dict[str, Any] = {
        "tasks": 3, "claim": "C0", "claim_reasons": [], "benchmark": {"id": "b", "revision": "r", "metric_space": "binary_resolved"},
        "task_set": "s", "arm_kinds": [{"name": "baseline", "kind": "active", "access": None},
                                        {"name": "candidate", "kind": "active", "access": None}],
        "test": {"test": "primary", "p_value": 0.5, "alpha": 0.05, "interval": [-0.25, 0.5]},
        "recommendation_because": "x", "inadmissible_because": [],
        "pass_at_k": {"baseline": {"pass@1": 0.5, "pass@2": 2 / 3}, "candidate": {"pass@1": 0.5, "pass@2": 2 / 3}},
        "per_task_resolved_seeds": {"baseline": {"a": 0, "b": 1, "c": 2}, "candidate": {"a": 0, "b": 1, "c": 2}},
        "family": {"experiments": 2, "correction": "Holm", "members": [
            {"name": "exp", "benchmark": "b", "status": "compared", "delta": 0.1, "recommendation": "reject",
             "p_value": 0.5, "holm_p_value": 1.0},
            {"name": "older", "benchmark": "b", "status": "compared", "delta": 0.2, "recommendation": "reject",
             "p_value": 0.4, "holm_p_value": 0.8}]},
    }  # fmt: skip
    if distribution:
        runs = [(task, {"dollars": d}) for task, d in (("a", 0.2), ("b", 0.4), ("c", 0.3), ("a", 0.4), ("b", 0.4), ("c", 0.3))]
        details["cost_distribution"] = {arm["name"]: ai.cost_distributions(runs) for arm in arms}
    return {"name": "exp", "record": {"change_under_test": "c", "frozen": {"model": "m"}, "arms": arms, "seeds": [1, 2],
                                      "result": {"delta": 0.1, "significant": "no", "recommendation": "reject"}},
            "details": details}  # fmt: skip


def test_the_cost_plot_error_bars_are_the_recorded_interval_of_the_dollars_per_seed():
    from pytest_objective_scoring.ab_report import cost_bars

    output = _ab_output(distribution=True)
    found = output["details"]["cost_distribution"]["candidate"]["dollars"]
    bar = cost_bars(output)["candidate"]
    assert bar["dollars_per_seed"] == pytest.approx(1.0)  # $2 over two seeds: the mean per run ($1/3) x 3 tasks
    assert bar["dollars_interval"] == pytest.approx([found["interval"][0] * 3, found["interval"][1] * 3])  # x 3 tasks
    assert bar["dollars_interval"][0] <= bar["dollars_per_seed"] <= bar["dollars_interval"][1]
    bare = cost_bars(_ab_output(distribution=False))["candidate"]
    assert bare["dollars_interval"] is None and "no per-run cost distribution recorded" in bare["why"]
    partial = _ab_output(distribution=True)
    partial["details"]["cost_distribution"]["candidate"] = ai.cost_distributions([("a", {"dollars": 0.2}), ("b", {"dollars": None})])
    unknown = cost_bars(partial)["candidate"]  # never an interval of the known dollars drawn as the arm's
    assert unknown["dollars_interval"] is None and unknown["why"] == "dollars unknown for 1 run(s)"
    assert unknown["dollars_per_seed"] == 1.0  # the arm's own dollars over its seeds


def test_the_report_prints_pass_at_k_the_family_deltas_and_the_cost_distribution_with_intervals(tmp_path):
    pytest.importorskip("matplotlib")
    from pytest_objective_scoring.ab_report import (
        markdown,
        pass_at_k_intervals,
        write_report,
    )

    output = _ab_output(distribution=True)
    text = markdown(output)
    found = pass_at_k_intervals(output)["candidate"]["pass@2"]
    assert found == ai.pass_at_k_interval([(2, 0), (2, 1), (2, 2)], 2)
    low, high = found["interval"]
    assert f"pass@2 66.7% [{low:.1%}, {high:.1%}]" in text
    assert "| exp | `b` | compared | +10.0% [-25.0%, +50.0%] |" in text  # this comparison's own interval
    assert "| older | `b` | compared | +20.0% (interval not recorded) |" in text
    shape = output["details"]["cost_distribution"]["baseline"]["dollars"]
    assert f"| baseline | dollars | 6 | {shape['mean']:.4g} [{shape['interval'][0]:.4g}, {shape['interval'][1]:.4g}] |" in text
    written = write_report(output, tmp_path / "report")
    assert (tmp_path / "report" / "cost_vs_resolve.png").stat().st_size > 0 and len(written) == 4
    assert not math.isnan(found["estimate"])
