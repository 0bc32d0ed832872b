"""The cost ledger: reading harness costs, the Cost record, and the ranked costs report."""

from __future__ import annotations

import json

import pytest

from pytest_objective_scoring.cost_ledger import (
    COST_FIELDS,
    CostError,
    HarnessCost,
    RunCost,
    load_harness_cost,
    parse_harness_cost,
    run_cost,
    runs_from_entries,
    summarize,
)

# ---------------------------------------------------------------- reading what the harness spent


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"tokens": 1200, "calls": 3, "dollars": 0.5}, HarnessCost(1200, 3, 0.5)),
        ({"cost": {"tokens": 7, "calls": 1, "dollars": 0}}, HarnessCost(7, 1, 0.0)),
        ({"model_stats": {"tokens_sent": 900, "tokens_received": 100, "api_calls": 4, "instance_cost": 0.25}},
         HarnessCost(1000, 4, 0.25)),
        ({"tokens": 10}, HarnessCost(10, None, None)),
        ({}, HarnessCost()),
        ({"harness": "agent-x", "dollars": 1.0}, HarnessCost(None, None, 1.0, "agent-x")),
        ({"model_name_or_path": "gpt-x", "tokens": 3.0}, HarnessCost(3, None, None, "gpt-x")),
    ],
)  # fmt: skip
def test_every_spelling_of_a_harness_cost_is_read(data, expected):
    assert parse_harness_cost(data, "cost.json") == expected


@pytest.mark.parametrize(
    ("data", "field", "expected"),
    [
        ({"tokens": -1}, "tokens", "whole number >= 0"),
        ({"tokens": 1.5}, "tokens", "whole number >= 0"),
        ({"calls": "3"}, "calls", "whole number >= 0"),
        ({"tokens": True}, "tokens", "whole number >= 0"),
        ({"dollars": -0.1}, "dollars", "dollars >= 0"),
        ({"dollars": float("nan")}, "dollars", "dollars >= 0"),
        ({"tokens": float("nan")}, "tokens", "whole number >= 0"),
        ({"calls": float("inf")}, "calls", "whole number >= 0"),
        ({"cost": {"tokens": -2}}, "cost.tokens", "whole number"),
        ({"cost": 5}, "cost", "expected an object"),
        ({"cost_usd": 1.0}, "cost_usd", "not a cost field"),
        ({"harness": 3}, "harness", "expected a string"),
        ({"model_stats": {"api_calls": -1}}, "model_stats.api_calls", "whole number"),
    ],
)  # fmt: skip
def test_a_bad_cost_names_the_source_the_field_and_what_was_expected(data, field, expected):
    with pytest.raises(CostError) as caught:
        parse_harness_cost(data, "run.json")
    assert caught.value.field == field and expected in str(caught.value) and str(caught.value).startswith("run.json")


def test_cost_files_that_are_not_json_or_not_objects_are_refused(tmp_path):
    bad = tmp_path / "cost.json"
    bad.write_text('{"tokens": 1,\n oops}')
    with pytest.raises(CostError, match=r"cost.json: not JSON \(line 2, column 2"):
        load_harness_cost(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(CostError, match="expected a JSON object, got list"):
        load_harness_cost(bad)
    with pytest.raises(CostError, match="cannot be read"):
        load_harness_cost(tmp_path / "absent.json")


# ---------------------------------------------------------------- the Cost record


def test_the_cost_record_has_exactly_the_spec_fields_and_unreported_means_null():
    entry = run_cost(None, cpu=2.0, wall_time=3.5, rate=0.01)
    assert tuple(sorted(entry["cost"])) == tuple(sorted(COST_FIELDS))
    assert entry["cost"] == {"tokens": None, "calls": None, "cpu": 2.0, "wall_time": 3.5, "dollars": 0.02}
    assert entry["breakdown"] == {"model_dollars": None, "compute_dollars": 0.02, "compute_rate_per_cpu_second": 0.01,
                                  "harness_reported": False}  # fmt: skip


def test_dollars_are_the_model_dollars_plus_compute_at_the_configured_rate():
    entry = run_cost(HarnessCost(100, 2, 1.25), cpu=10.0, wall_time=12.0, rate=0.001)
    assert entry["cost"]["dollars"] == pytest.approx(1.26)
    assert entry["cost"]["tokens"] == 100 and entry["cost"]["calls"] == 2
    assert entry["breakdown"]["model_dollars"] == 1.25 and entry["breakdown"]["compute_dollars"] == pytest.approx(0.01)
    assert run_cost(HarnessCost(dollars=1.0), cpu=10.0, wall_time=1.0, rate=0.0)["cost"]["dollars"] == 1.0


# ---------------------------------------------------------------- the costs report


def run(harness: str, instance: str, resolved: bool, dollars: float, tokens: int | None = 1000, cpu: float = 2.0,
        wall: float = 3.0, failure: str | None = None, seq: int = 0) -> RunCost:  # fmt: skip
    return RunCost(harness, instance, f"sha256:{harness}-{instance}", resolved,
                   failure or ("none" if resolved else "solver"),
                   {"tokens": tokens, "calls": 1, "cpu": cpu, "wall_time": wall, "dollars": dollars}, True, seq)  # fmt: skip


def fleet(harness: str, resolved: int, of: int, dollars: float, **kwargs: object) -> list[RunCost]:
    return [run(harness, f"task-{i}", i < resolved, dollars, **kwargs) for i in range(of)]  # type: ignore[arg-type]


def test_equal_resolve_rates_at_a_tenfold_cost_are_never_ranked_equal():
    cheap = fleet("cheap", 4, 10, dollars=0.40)
    pricey = fleet("pricey", 4, 10, dollars=4.00)
    by_name = {s.harness: s for s in summarize(cheap + pricey)}
    assert by_name["cheap"].resolve_rate == by_name["pricey"].resolve_rate == 0.4
    assert by_name["cheap"].rank == 1 and by_name["pricey"].rank == 2
    assert by_name["cheap"].pareto_layer == 1 and by_name["pricey"].pareto_layer == 2
    assert by_name["pricey"].dominated_by == ("cheap",)
    assert by_name["cheap"].ratios["resolves_per_dollar"] == pytest.approx(1.0)
    assert by_name["pricey"].ratios["resolves_per_dollar"] == pytest.approx(0.1)


def test_the_pareto_front_keeps_trade_offs_and_orders_them_by_resolve_rate():
    # A: best rate, most expensive; B: cheaper, lower rate; C: dominated by B; D: equal to B on both axes
    summaries = summarize(fleet("A", 8, 10, 2.0) + fleet("B", 6, 10, 0.5) + fleet("C", 5, 10, 0.9) + fleet("D", 6, 10, 0.5))
    ranks = {s.harness: (s.rank, s.pareto_layer) for s in summaries}
    assert ranks == {"A": (1, 1), "B": (2, 1), "D": (2, 1), "C": (4, 2)}
    assert {s.harness: s.dominated_by for s in summaries}["C"] == ("B", "D")


def test_a_harness_that_resolves_nothing_is_never_on_the_front_however_cheap():
    summaries = summarize(fleet("free-nothing", 0, 5, 0.0001) + fleet("pricey", 1, 5, 9.0) + fleet("idle", 0, 5, 1.0))
    assert [(s.harness, s.rank, s.pareto_layer) for s in summaries] == [
        ("pricey", 1, 1), ("free-nothing", 2, 2), ("idle", 3, 3)]


def test_ratios_per_dollar_token_wall_hour_and_cpu_second():
    [summary] = summarize(fleet("h", 2, 4, dollars=0.5, tokens=2500, cpu=4.0, wall=900.0))
    assert summary.totals == {"tokens": 10000, "calls": 4, "cpu": 16.0, "wall_time": 3600.0, "dollars": 2.0}
    assert summary.ratios == {
        "resolves_per_dollar": pytest.approx(1.0),
        "resolves_per_1k_tokens": pytest.approx(0.2),
        "resolves_per_wall_hour": pytest.approx(2.0),
        "resolves_per_cpu_second": pytest.approx(0.125),
        "dollars_per_resolve": pytest.approx(1.0),
    }


def test_unreported_tokens_give_no_ratio_not_a_made_up_one():
    runs = fleet("h", 1, 2, dollars=1.0) + [run("h", "task-9", True, 1.0, tokens=None)]
    [summary] = summarize(runs)
    assert summary.totals["tokens"] is None and summary.ratios["resolves_per_1k_tokens"] is None
    assert any("tokens not reported by the harness for 1 of 3" in note for note in summary.notes)


def test_infrastructure_failures_are_never_counted_against_the_harness():
    runs = fleet("h", 2, 4, dollars=1.0) + [run("h", "task-x", False, 1.0, failure="setup"),
                                            run("h", "task-y", False, 1.0, failure="verifier")]  # fmt: skip
    [summary] = summarize(runs)
    assert (summary.runs, summary.resolved, summary.resolve_rate, summary.infrastructure_failures) == (4, 2, 0.5, 2)
    assert summary.totals["dollars"] == 4.0


def test_runs_join_scores_to_costs_and_a_regrading_counts_once():
    def score(seq: int, instance: str, resolved: str, harness: str = "h", failure: str = "none") -> dict:
        return {"seq": seq, "body": {"instance_id": instance, "harness": harness, "patch_ref": "p", "failure_class": failure,
                                     "score": {"resolved": resolved}}}  # fmt: skip

    def cost(seq: int, of: int, dollars: float, model: float | None = 0.1) -> dict:
        return {"seq": seq, "body": {"score_seq": of, "cost": {"tokens": 5, "calls": 1, "cpu": 1.0, "wall_time": 1.0,
                                                               "dollars": dollars},
                                     "breakdown": {"model_dollars": model}}}  # fmt: skip

    scores = [score(1, "t1", "not_resolved", failure="solver"), score(3, "t1", "resolved"), score(5, "t2", "resolved"),
              score(7, "t3", "resolved")]  # fmt: skip
    costs = [cost(2, 1, 1.0), cost(4, 3, 2.0), cost(6, 5, 3.0, model=None)]  # t3 has no cost entry: not weighed
    runs = runs_from_entries(scores, costs)
    assert [(r.instance_id, r.resolved, r.cost["dollars"], r.seq) for r in runs] == [("t1", True, 2.0, 3), ("t2", True, 3.0, 5)]
    [summary] = summarize(runs)
    assert any("model dollars not reported for 1 of 2" in note for note in summary.notes)


def entry(seq: int, instance: str, resolved: str | None, failure: str | None, harness: str = "h") -> dict:
    score = {"resolved": resolved} if resolved else None
    return {"seq": seq, "body": {"instance_id": instance, "harness": harness, "patch_ref": "p", "failure_class": failure,
                                 "score": score}}  # fmt: skip


def cost_entry(seq: int, of: int, dollars: float | None = 1.0) -> dict:
    return {"seq": seq, "body": {"score_seq": of, "cost": {"tokens": 1, "calls": 1, "cpu": 1.0, "wall_time": 1.0,
                                                           "dollars": dollars}, "breakdown": {"model_dollars": 0.5}}}  # fmt: skip


def test_a_run_without_a_verdict_is_never_the_candidates_failure_whoever_recorded_it():
    # a plugin run interrupted or --collect-only: no score, no failure class of its own
    runs = runs_from_entries([entry(1, "t1", "resolved", None), entry(3, "t2", None, None)],
                             [cost_entry(2, 1), cost_entry(4, 3)])  # fmt: skip
    assert [r.failure_class for r in runs] == ["none", "verifier"]
    [summary] = summarize(runs)
    assert (summary.runs, summary.resolved, summary.infrastructure_failures) == (1, 1, 1)


def test_a_later_infrastructure_failure_does_not_erase_an_earlier_verdict():
    scores = [entry(1, "t1", "resolved", "none"), entry(3, "t1", None, "setup"), entry(5, "t2", None, "verifier")]
    runs = runs_from_entries(scores, [cost_entry(2, 1), cost_entry(4, 3), cost_entry(6, 5)])
    assert [(r.instance_id, r.failure_class, r.seq) for r in runs] == [("t1", "none", 1), ("t2", "verifier", 5)]
    again = runs_from_entries([*scores, entry(7, "t2", "not_resolved", "solver")],
                              [cost_entry(2, 1), cost_entry(4, 3), cost_entry(6, 5), cost_entry(8, 7)])  # fmt: skip
    assert [(r.instance_id, r.failure_class) for r in again] == [("t1", "none"), ("t2", "solver")]


def test_a_harness_whose_dollars_are_unknown_ranks_after_every_known_cost():
    unknown = [run("mystery", f"t{i}", i < 2, None) for i in range(4)]  # type: ignore[arg-type]
    same = [run("mystery-2", f"t{i}", i < 2, None) for i in range(4)]  # type: ignore[arg-type]
    summaries = summarize(fleet("known", 1, 4, 0.1) + unknown + same)
    assert [(s.harness, s.rank, s.pareto_layer) for s in summaries] == [
        ("known", 1, 1), ("mystery", 2, 2), ("mystery-2", 2, 2)]
    assert any("dollars unknown for 4 of 4" in note for note in summaries[1].notes)
    assert not summaries[1].dominated_by


def test_the_report_is_json_serialisable_and_deterministic():
    runs = fleet("b", 1, 3, 1.0) + fleet("a", 1, 3, 1.0)
    first = json.dumps([s.to_dict() for s in summarize(runs)], sort_keys=True)
    assert first == json.dumps([s.to_dict() for s in summarize(list(reversed(runs)))], sort_keys=True)
    assert [s["harness"] for s in json.loads(first)] == ["a", "b"] and json.loads(first)[0]["rank"] == 1
    assert json.loads(first)[1]["rank"] == 1  # equal on both axes: they share the rank


# ---------------------------------------------------------------- the plugin records what a run cost

BURN = """
import time

def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_fixed():
    burn(0.4)

def test_kept():
    burn(0.4)
"""


@pytest.mark.slow
def test_the_plugin_measures_cpu_of_every_xdist_worker_and_reads_the_harness_cost(
    pytester, write_instance, run_and_parse, num_processes
):
    pytester.makepyfile(test_burn=BURN)
    instance = write_instance(["test_burn.py::test_fixed"], ["test_burn.py::test_kept"])
    cost_file = pytester.path / "cost.json"
    cost_file.write_text(json.dumps({"model_name_or_path": "agent-7", "tokens": 4200, "calls": 9, "dollars": 0.12}))
    ledger = pytester.path / "ledger.sqlite"
    import resource

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    before = children_cpu()
    result, envelope = run_and_parse(instance, f"--objective-cost={cost_file}", "--objective-compute-rate=0.5",
                                     f"--objective-ledger={ledger}", n=num_processes, subprocess=True)  # fmt: skip
    spent = children_cpu() - before  # everything the pytest process tree used, start-up included
    assert result.ret == 0
    assert envelope["cost"]["cpu"] <= spent + 0.05, "no process's CPU is counted twice"
    cost, breakdown = envelope["cost"], envelope["cost_breakdown"]
    assert set(cost) == set(COST_FIELDS) and envelope["harness"] == "agent-7"
    assert cost["cpu"] >= 0.8, "the tests' CPU, wherever they ran, is counted"
    assert cost["tokens"] == 4200 and cost["calls"] == 9 and "cpu_note" not in breakdown
    assert cost["dollars"] == pytest.approx(0.12 + 0.5 * cost["cpu"], rel=1e-6)
    # two tests of 0.4 CPU-s each: one after the other serially, side by side on two workers
    assert cost["wall_time"] >= (0.8 if num_processes == 0 else 0.4)
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(ledger) as opened:
        [score] = [e for e in opened.entries("score")]
        [entry] = [e.data for e in opened.entries("cost")]
    assert entry["score_seq"] == score.seq and entry["harness"] == "agent-7" and entry["cost"] == cost


def test_bad_cost_options_are_usage_errors(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a(): pass")
    instance = write_instance(["test_a.py::test_a"])
    (pytester.path / "cost.json").write_text('{"tokens": "many"}')
    result = pytester.runpytest("--objective-score", str(instance), "--objective-cost=cost.json", "--objective-no-ledger")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--objective-cost: *cost.json: field 'tokens': expected a whole number >= 0*"])
    result = pytester.runpytest("--objective-score", str(instance), "--objective-compute-rate=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the compute rate must be a finite number >= 0*"])
    result = pytester.runpytest("--objective-cost=cost.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--objective-cost needs --objective-score=INSTANCE*"])


def test_the_compute_rate_comes_from_the_ini_file(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_a="def test_a(): pass")
    pytester.makeini("[pytest]\nobjective_compute_rate = 2.5\n")
    instance = write_instance(["test_a.py::test_a"])
    _, envelope = run_and_parse(instance, "--objective-no-ledger")
    assert envelope["cost_breakdown"]["compute_rate_per_cpu_second"] == 2.5
    assert envelope["cost"]["tokens"] is None and envelope["harness"] is None


@pytest.mark.slow
def test_grade_records_the_harness_cost_and_names_the_harness(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli

    cost = tmp_path / "cost.json"
    cost.write_text(json.dumps({"cost": {"tokens": 900, "calls": 2, "dollars": 0.07}}))
    common = ["--repo", str(FIXTURES / "repos" / "textstats"), "--instance", str(FIXTURES / "instances" / "textstats.json"),
              "--patch", str(FIXTURES / "patches" / "textstats" / "gold.diff"), "--ledger", str(tmp_path / "l.sqlite")]  # fmt: skip
    graded = run_cli("grade", *common, "--cost", str(cost), "--harness", "my-agent", "--compute-rate", "0", "--json")
    assert graded.returncode == 0, graded.stderr
    envelope = json.loads(graded.stdout)
    assert envelope["harness"] == "my-agent" and envelope["cost"]["dollars"] == 0.07 and envelope["cost"]["tokens"] == 900
    summary = run_cli("grade", *common, "--cost", str(cost))
    assert "cost: " in summary.stdout and "model $0.070000; tokens 900; calls 2" in summary.stdout
    cost.write_text("{")
    bad = run_cli("grade", *common, "--cost", str(cost))
    assert bad.returncode == 2 and f"--cost {cost}: not JSON" in bad.stderr
