"""The Scorecard record, each metric on known answers, and the stage-by-stage diff."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any, NamedTuple

import pytest

from pytest_objective_scoring import scorecard as sc
from pytest_objective_scoring.scorecard import (
    ComponentMetrics,
    Economics,
    EndToEnd,
    LocalizationMetrics,
    Patching,
    Planning,
    Scorecard,
    Structure,
    Testing,
    build_scorecard,
    obligations_of,
    target_rank,
)


class T(NamedTuple):
    """What symbols.touched returns: files, entities, files located at file level."""

    files: frozenset[str]
    symbols: frozenset[str]
    unparsable: tuple[str, ...] = ()


def touched(*entities: str) -> T:
    return T(frozenset(e.split("::")[0] for e in entities), frozenset(entities))


GOLD = touched("src/a.py::Parser.parse", "src/a.py::helper", "src/b.py::<module>", "docs/notes.md")


def envelope(resolved: bool = True, p2p_broken: int = 0, outcomes: dict[str, str] | None = None) -> dict[str, Any]:
    outcomes = outcomes or {}
    tests = [{"id": "t::f1", "gate": "FAIL_TO_PASS", "outcome": outcomes.get("t::f1", "passed")},
             {"id": "t::p1", "gate": "PASS_TO_PASS", "outcome": outcomes.get("t::p1", "passed")},
             {"id": "t::p2", "gate": "PASS_TO_PASS", "outcome": outcomes.get("t::p2", "passed")}]  # fmt: skip
    return {
        "score": {"instance_id": "x-1", "patch_ref": "sha256:c", "resolved": "resolved" if resolved else "not_resolved",
                  "fail_to_pass": {"total": 1, "passed": 1 if resolved else 0, "verdict": "satisfied"},
                  "pass_to_pass": {"total": 2, "passed": 2 - p2p_broken, "verdict": "satisfied"},
                  "graded_by": "g", "graded_at": 1},  # fmt: skip
        "tests": tests,
        "harness": "h",
        "cost": {"tokens": 100, "calls": 2, "cpu": 1.5, "wall_time": 2.0, "dollars": 0.25},
    }


def card(candidate: T, gold: T | None = GOLD, **kwargs: Any) -> tuple[Scorecard, dict[str, Any]]:
    args: dict[str, Any] = {"task_id": "x-1", "envelope": envelope(), "instance_fields": {}, "gold": gold,
                            "candidate": candidate, "applied": True, "parse_ok": True, "build_ok": True}  # fmt: skip
    args.update(kwargs)
    return build_scorecard(**args)


# ---------------------------------------------------------------- exact records


def test_the_records_have_exactly_the_spec_fields():
    def names(kind: type) -> list[str]:
        return [f.name for f in fields(kind)]

    assert names(Scorecard) == ["run_id", "task_id", "component_metrics", "end_to_end", "economics"]
    assert names(ComponentMetrics) == ["localization", "planning", "patching", "structure", "testing"]
    assert names(LocalizationMetrics) == ["file_recall", "symbol_recall", "target_rank"]
    assert names(Planning) == ["obligations_recovered"]
    assert names(Patching) == ["apply", "parse", "build"]
    assert names(Structure) == ["correct_entities_touched", "unnecessary_entities_touched"]
    assert names(Testing) == ["bug_tests_exercised", "regression_tests_exercised"]
    assert names(EndToEnd) == ["resolved", "regressions", "robustness"]
    assert names(Economics) == ["tokens", "calls", "cpu", "wall_time", "dollars"]


def test_a_recorded_scorecard_round_trips_and_extra_or_missing_fields_are_refused():
    record, _ = card(touched("src/a.py::helper"))
    data = json.loads(json.dumps(record.to_dict()))
    assert Scorecard.from_dict(data) == record
    data["component_metrics"]["patching"]["looks_right"] = True
    with pytest.raises(ValueError, match=r"patching: fields differ from the spec's \(extra \['looks_right'\]"):
        Scorecard.from_dict(data)
    del data["component_metrics"]["patching"]["looks_right"]
    del data["economics"]["dollars"]
    with pytest.raises(ValueError, match=r"economics: .*missing \['dollars'\]"):
        Scorecard.from_dict(data)


# ---------------------------------------------------------------- localization and structure


def test_recalls_and_entities_against_the_gold_patch():
    record, details = card(touched("src/a.py::helper", "src/a.py::Other.method", "README.md"))
    loc, structure = record.component_metrics.localization, record.component_metrics.structure
    assert loc.file_recall == pytest.approx(1 / 3)  # src/a.py of {src/a.py, src/b.py, docs/notes.md}
    assert loc.symbol_recall == pytest.approx(1 / 4)
    assert (structure.correct_entities_touched, structure.unnecessary_entities_touched) == (1, 2)
    assert details["matched_entities"] == ["src/a.py::helper"]


def test_a_candidate_that_touches_nothing_the_gold_touches():
    record, _ = card(touched("lib/other.py::f"))
    assert record.component_metrics.localization.file_recall == 0.0
    assert record.component_metrics.localization.symbol_recall == 0.0
    assert record.component_metrics.structure == Structure(0, 1)


def test_without_a_gold_patch_localization_and_structure_are_not_computed():
    record, details = card(touched("src/a.py::f"), gold=None)
    assert record.component_metrics.localization == LocalizationMetrics(None, None, None)
    assert record.component_metrics.structure == Structure(None, None)
    assert details["gold"] is None


@pytest.mark.parametrize(
    ("retrieval", "rank"),
    [
        (None, None),
        (["src/b.py", "src/a.py"], 1),
        (["lib/x.py", "lib/y.py::f", "src/a.py::Parser.parse"], 3),
        (["lib/x.py", "lib/y.py"], 3),  # no gold file: past the end
        ([], 1),
    ],
)
def test_target_rank_is_the_first_gold_file_in_the_retrieval_order(retrieval, rank):
    assert target_rank(retrieval, GOLD.files) == rank


# ---------------------------------------------------------------- planning


def test_obligations_default_to_the_gold_symbols_and_an_instance_may_list_its_own():
    assert obligations_of({}, GOLD.symbols) == sorted(GOLD.symbols)
    assert obligations_of({"obligations": ["handle empty input"]}, GOLD.symbols) == ["handle empty input"]
    assert obligations_of({"obligations": []}, GOLD.symbols) == sorted(GOLD.symbols)


def test_obligations_recovered_from_the_plan_or_else_from_the_candidate_patch():
    plan = ["Parser.parse", "src/b.py", "something else"]  # bare qualname; a module-level obligation by its path
    record, details = card(touched("src/a.py::helper"), plan=plan)
    assert record.component_metrics.planning.obligations_recovered == 0.5
    assert details["obligations"]["met"] == ["src/a.py::Parser.parse", "src/b.py::<module>"]
    without_plan, details = card(touched("src/a.py::helper", "docs/notes.md"))
    assert without_plan.component_metrics.planning.obligations_recovered == 0.5
    assert details["obligations"]["from"] == "candidate patch"
    own, _ = card(touched("src/a.py::helper"), instance_fields={"obligations": ["src/a.py::helper", "src/c.py::new"]})
    assert own.component_metrics.planning.obligations_recovered == 0.5


# ---------------------------------------------------------------- testing and end to end


@pytest.mark.parametrize(
    ("outcomes", "bug", "regression"),
    [
        ({}, True, True),
        ({"t::f1": "failed"}, True, True),
        ({"t::f1": "skipped"}, False, True),
        ({"t::p2": "missing"}, True, False),
        ({"t::p1": "error"}, True, False),  # an error at setup: the test body never ran
        ({"t::f1": "xfailed"}, True, True),
    ],
)
def test_a_suite_is_exercised_only_when_every_test_of_it_ran(outcomes, bug, regression):
    record, _ = card(touched("src/a.py::helper"), envelope=envelope(outcomes=outcomes))
    assert record.component_metrics.testing == Testing(bug, regression)


def test_end_to_end_and_economics_are_read_off_the_graded_run():
    record, _ = card(touched("src/a.py::helper"), envelope=envelope(resolved=False, p2p_broken=1),
                     reruns=[True, False, True, True])  # fmt: skip
    assert record.end_to_end == EndToEnd("not_resolved", 1, 0.75)
    assert record.economics == Economics(100, 2, 1.5, 2.0, 0.25)
    assert card(touched("src/a.py::helper"))[0].end_to_end.robustness is None  # no re-runs: not measured


def test_a_run_without_a_verdict_is_not_resolved_with_nothing_exercised():
    no_verdict = {**envelope(), "score": None}
    record, details = card(touched("src/a.py::helper"), envelope=no_verdict)
    assert record.end_to_end == EndToEnd("not_resolved", None, None)
    assert record.component_metrics.testing == Testing(False, False) and details["no_verdict"]


# ---------------------------------------------------------------- diff and attribution


def as_dict(candidate: T, **kwargs: Any) -> dict[str, Any]:
    return card(candidate, **kwargs)[0].to_dict()


def attribution(result: dict[str, Any]) -> str:
    """The attribution without the pairing sentence that leads it."""
    head = result["pairing"]["note"] + ": "
    assert result["attribution"].startswith(head)
    return result["attribution"][len(head):]


def test_diff_names_the_stage_that_moved_when_end_to_end_is_flat():
    flat = envelope(resolved=False)
    before = [as_dict(touched("lib/x.py::f"), envelope=flat), as_dict(touched("src/a.py::helper"), envelope=flat)]
    after = [as_dict(touched("src/a.py::helper", "src/b.py::<module>"), envelope=flat, parse_ok=False),
             as_dict(touched("src/a.py::helper"), envelope=flat)]  # fmt: skip
    result = sc.diff(before, after)
    rows = {r["metric"]: r for r in result["metrics"]}
    assert rows["localization.file_recall"]["change"] == "better"
    assert rows["end_to_end.resolved"]["change"] == "flat"
    assert attribution(result).startswith("localization.file_recall 17% → 50%")
    assert ("end_to_end.resolved flat: the gain is held by a later stage (patching.parse 100% → 50% (-50.0 points, n/a: "
            "one task))") in result["attribution"]  # every change with its interval, or why it has none (issue 29.4)


def test_diff_when_every_later_stage_is_whole_the_fix_itself_holds_the_gain():
    flat = envelope(resolved=False)
    result = sc.diff([as_dict(touched("lib/x.py::f"), envelope=flat)], [as_dict(touched("src/a.py::helper"), envelope=flat)])
    assert result["attribution"].endswith(
        "end_to_end.resolved flat: every later stage that did not gain is at 100%, the gain is held by the fix itself")


def test_diff_when_end_to_end_moves_names_the_earliest_stage_that_improved():
    result = sc.diff([as_dict(touched("lib/x.py::f"), envelope=envelope(resolved=False))],
                     [as_dict(touched("src/a.py::helper"), envelope=envelope(resolved=True))])  # fmt: skip
    # issue 29.4: the task's gain is credited to every stage that improved on that task (no longer the earliest alone)
    text = attribution(result)
    assert ("end_to_end.resolved 0% → 100% (+100.0 points, n/a: one task): the gain on 1 task(s) (x-1) is credited, task "
            "by task, to the stages that improved on them: localization on 1 of them (x-1: localization.file_recall 0% → "
            "33% (+33.3 points, n/a: one task)") in text  # fmt: skip
    assert "planning on 1 of them (x-1:" in text and "structure on 1 of them (x-1:" in text
    assert {stage: found["gained"] for stage, found in result["credit"]["stages"].items()} == {
        "localization": ["x-1"], "planning": ["x-1"], "patching": [], "structure": ["x-1"], "testing": []}
    same = [as_dict(touched("src/a.py::helper"))]
    assert sc.diff(same, same)["attribution"] == "paired on the 1 task(s) both sides have (1 run(s) of A, 1 of B), none dropped: no stage moved"


def test_lower_is_better_for_rank_unnecessary_entities_and_regressions():
    a = [as_dict(touched("src/a.py::helper", "lib/x.py::f"), retrieval=["lib/x.py", "src/a.py"], envelope=envelope(p2p_broken=1))]
    b = [as_dict(touched("src/a.py::helper"), retrieval=["src/a.py"], envelope=envelope())]
    rows = {r["metric"]: r["change"] for r in sc.diff(a, b)["metrics"]}
    assert rows["localization.target_rank"] == "better"
    assert rows["structure.unnecessary_entities_touched"] == "better"
    assert rows["end_to_end.regressions"] == "better"


# ------------------------------------------- attribution credits only a stage that improved (issue 15.6)

NOT_RESOLVED, RESOLVED = envelope(resolved=False), envelope(resolved=True)


def test_a_resolve_gain_is_never_credited_to_a_stage_that_got_worse():
    """Localization got worse and planning improved: the gain is planning's, and localization is named as worse."""
    before = [as_dict(GOLD, envelope=NOT_RESOLVED, plan=[])]
    after = [as_dict(touched("src/a.py::helper"), envelope=RESOLVED, plan=sorted(GOLD.symbols))]
    result = sc.diff(before, after)
    assert result["stages"]["localization"] == "worse" and result["stages"]["planning"] == "improved"
    text = attribution(result)
    assert text.endswith("end_to_end.resolved 0% → 100% (+100.0 points, n/a: one task): the gain on 1 task(s) (x-1) is "
                         "credited, task by task, to the stages that improved on them: planning on 1 of them (x-1: "
                         "planning.obligations_recovered 0% → 100% (+100.0 points, n/a: one task)); never credited (on "
                         "those tasks worse: localization, structure)")  # fmt: skip
    assert "credited to localization" not in text and "localization on" not in text


def test_a_resolve_gain_no_stage_explains_is_said_so():
    before = [as_dict(GOLD, envelope=NOT_RESOLVED)]
    after = [as_dict(touched("src/a.py::helper"), envelope=RESOLVED)]  # localization and structure worse, nothing better
    text = attribution(sc.diff(before, after))
    assert text.endswith("end_to_end.resolved 0% → 100% (+100.0 points, n/a: one task): no stage explains the gain on "
                         "1 task(s) (x-1): unattributed, no stage improved on them; never credited (on those tasks worse: "
                         "localization, planning, structure)")  # fmt: skip
    assert "is credited" not in text


def test_a_stage_with_one_metric_better_and_one_worse_is_mixed_and_never_credited():
    before = [as_dict(touched("src/a.py::Parser.parse", "src/a.py::helper", "src/b.py::<module>"), envelope=NOT_RESOLVED)]
    after = [as_dict(touched("src/a.py::other", "src/b.py::other", "docs/notes.md"), envelope=RESOLVED)]
    result = sc.diff(before, after)
    rows = {r["metric"]: r["change"] for r in result["metrics"]}
    assert (rows["localization.file_recall"], rows["localization.symbol_recall"]) == ("better", "worse")
    assert result["stages"]["localization"] == "mixed"
    text = attribution(result)
    assert "no stage explains the gain on 1 task(s) (x-1): unattributed, no stage improved on them" in text
    assert "mixed: localization" in text and "is credited" not in text


def test_a_resolve_loss_is_charged_to_the_earliest_stage_that_got_worse_never_to_one_that_improved():
    before = [as_dict(touched("lib/x.py::f"), envelope=RESOLVED, plan=sorted(GOLD.symbols))]
    after = [as_dict(touched("src/a.py::helper"), envelope=NOT_RESOLVED, plan=[])]  # localization better, planning worse
    text = attribution(sc.diff(before, after))
    assert text.endswith("end_to_end.resolved 100% → 0% (-100.0 points, n/a: one task): the loss on 1 task(s) (x-1) is "
                         "charged, task by task, to the stages that got worse on them: planning on 1 of them (x-1: "
                         "planning.obligations_recovered 100% → 0% (-100.0 points, n/a: one task)); never charged (on "
                         "those tasks improved: localization, structure)")  # fmt: skip
    only_better = attribution(sc.diff([as_dict(touched("lib/x.py::f"), envelope=RESOLVED)],
                                      [as_dict(touched("src/a.py::helper"), envelope=NOT_RESOLVED)]))  # fmt: skip
    assert only_better.endswith("end_to_end.resolved 100% → 0% (-100.0 points, n/a: one task): no stage explains the "
                                "loss on 1 task(s) (x-1): unattributed, no stage got worse on them; never charged (on "
                                "those tasks improved: localization, planning, structure)")  # fmt: skip


# ------------------------------------------------ a paired comparison over the tasks both sides have (issue 15.6)


def run_of(task: str, resolved: bool, candidate: T | None = None, **kwargs: Any) -> dict[str, Any]:
    return as_dict(candidate or touched("src/a.py::helper"), task_id=task, envelope=envelope(resolved=resolved), **kwargs)


def test_diff_compares_only_the_tasks_both_sides_have_and_names_the_dropped_ones():
    a = [run_of("x-1", False), run_of("x-2", True)]
    b = [run_of("x-1", True), run_of("x-3", False), run_of("x-4", False)]
    result = sc.diff(a, b)
    rows = {r["metric"]: r for r in result["metrics"]}
    # unpaired, A's mean would be 50% and B's 33%: a loss; on the one task both ran, a gain
    assert (rows["end_to_end.resolved"]["a"], rows["end_to_end.resolved"]["b"]) == (0.0, 1.0)
    assert rows["end_to_end.resolved"]["change"] == "better" and rows["end_to_end.resolved"]["tasks"] == 1
    assert result["runs"] == {"a": 2, "b": 3}
    assert result["pairing"] == {
        "tasks": 1, "paired": ["x-1"], "runs_compared": {"a": 1, "b": 1},
        "dropped": {"a": {"tasks": ["x-2"], "runs": 1}, "b": {"tasks": ["x-3", "x-4"], "runs": 2}},
        "note": "paired on the 1 task(s) both sides have (1 run(s) of A, 1 of B); dropped from A: 1 task(s) only it "
                "has (x-2); dropped from B: 2 task(s) only it has (x-3, x-4)"}  # fmt: skip
    assert result["attribution"].startswith(result["pairing"]["note"] + ": ")
    assert json.loads(json.dumps(result)) == result


def test_diff_refuses_two_sets_of_runs_with_no_task_in_common():
    with pytest.raises(sc.ScorecardError) as caught:
        sc.diff([run_of("x-1", False)], [run_of("y-1", True), run_of("y-2", True)])
    message = str(caught.value)
    assert "A (1 run(s) of 1 task(s): x-1) and B (2 run(s) of 2 task(s): y-1, y-2) have no task in common" in message
    with pytest.raises(sc.ScorecardError):
        sc.diff([], [run_of("y-1", True)])


def test_each_task_weighs_the_same_on_both_sides_and_a_metric_is_paired_where_both_have_it():
    a = [run_of("x-1", False), run_of("x-1", True), run_of("x-2", False, retrieval=["src/a.py"])]
    b = [run_of("x-1", True), run_of("x-2", True, retrieval=["lib/x.py", "src/a.py"]), run_of("x-1", True)]
    result = sc.diff(a, b)
    rows = {r["metric"]: r for r in result["metrics"]}
    assert rows["end_to_end.resolved"]["a"] == 0.25  # x-1: 50%, x-2: 0%; not 1 of 3 runs
    rank = {key: rows["localization.target_rank"][key] for key in ("metric", "a", "b", "tasks", "moved", "change")}
    assert rank == {"metric": "localization.target_rank", "a": 1.0, "b": 2.0, "tasks": 1,
                    "moved": True, "change": "worse"}  # only x-2 has a rank on both sides  # fmt: skip
    assert (rows["localization.target_rank"]["delta"], rows["localization.target_rank"]["interval"],
            rows["localization.target_rank"]["note"]) == (1.0, None, "n/a: one task")  # one task: no interval  # fmt: skip
    assert result["pairing"]["runs_compared"] == {"a": 3, "b": 3} and result["pairing"]["note"].endswith("none dropped")


def test_the_sentence_names_at_most_ten_dropped_tasks_and_the_json_all_of_them():
    a = [run_of("x-0", False)] + [run_of(f"a-{i:02}", False) for i in range(12)]
    result = sc.diff(a, [run_of("x-0", True)])
    assert result["pairing"]["dropped"]["a"]["tasks"] == [f"a-{i:02}" for i in range(12)]
    assert "dropped from A: 12 task(s) only it has (a-00, a-01, a-02, a-03, a-04, a-05, a-06, a-07, a-08, a-09, and 2 more)" \
        in result["attribution"]


def test_the_command_shows_the_pairing_in_its_table_and_its_json(tmp_path, capsys):
    from pytest_objective_scoring.cli import main
    from pytest_objective_scoring.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        for seq, (task, resolved) in enumerate([("x-1", False), ("x-2", True), ("x-1", True), ("x-3", False)], 1):
            ledger.append("scorecard", {"score_seq": seq, "instance_id": task, "patch_ref": f"p{seq}", "harness": "h",
                                        "failure_class": "none", "scorecard": run_of(task, resolved)})  # fmt: skip
    assert main(["scorecard", "diff", "1,2", "3,4", "--ledger", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["pairing"]["dropped"] == {"a": {"tasks": ["x-2"], "runs": 1}, "b": {"tasks": ["x-3"], "runs": 1}}
    assert main(["scorecard", "diff", "1,2", "3,4", "--ledger", str(path)]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "dropped from A: 1 task(s) only it has (x-2); dropped from B: 1 task(s) only it has (x-3)" in table
    assert "the gain is credited to" not in table and "no stage moved: the change is in the fix itself" in table
    # two sides with no task in common: one line and exit 2, never a traceback
    assert main(["scorecard", "diff", "2", "4", "--ledger", str(path)]) == 2
    err = capsys.readouterr().err
    assert "have no task in common" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- on real graded runs (build phase 3)


@pytest.mark.slow
def test_phase_3_localization_improved_end_to_end_flat_the_gain_is_attributed_to_localization(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli_here as run_cli

    ledger = str(tmp_path / "ledger.sqlite")
    common = ["--repo", str(FIXTURES / "repos" / "intervals"), "--instance", str(FIXTURES / "instances" / "intervals.json"),
              "--ledger", ledger]  # fmt: skip
    seqs = {}
    for candidate in ("scorecard_wrong_file", "scorecard_right_symbol", "scorecard_syntax_error"):
        graded = run_cli("grade", *common, "--patch", str(FIXTURES / "patches" / "intervals" / f"{candidate}.diff"),
                         "--harness", candidate, "--json")  # fmt: skip
        assert graded.returncode == 1, graded.stderr  # none of them resolves the task
        envelope = json.loads(graded.stdout)
        assert set(envelope["scorecard"]) == {"run_id", "task_id", "component_metrics", "end_to_end", "economics"}
        assert envelope["scorecard"]["economics"]["cpu"] > 0 and envelope["scorecard"]["economics"]["wall_time"] > 0
        seqs[candidate] = json.loads(run_cli("ledger", "show", "--ledger", ledger, "--json").stdout)[-1]["seq"]
    before, after, broken = (str(seqs[c]) for c in ("scorecard_wrong_file", "scorecard_right_symbol", "scorecard_syntax_error"))

    result = run_cli("scorecard", "diff", before, after, "--ledger", ledger, "--json")
    assert result.returncode == 0, result.stderr
    moved = json.loads(result.stdout)
    rows = {r["metric"]: r for r in moved["metrics"]}
    assert (rows["localization.file_recall"]["a"], rows["localization.file_recall"]["b"]) == (0.0, 1.0)
    assert rows["localization.symbol_recall"]["change"] == "better"
    assert rows["end_to_end.resolved"]["change"] == "flat"
    assert moved["attribution"].startswith("paired on the 1 task(s) both sides have (1 run(s) of A, 1 of B), none dropped: "
                                           "localization.file_recall 0% → 100% (+100.0 points, n/a: one task); "
                                           "localization.symbol_recall 0% → 100% (+100.0 points, n/a: one task)")
    assert "end_to_end.resolved flat: every later stage that did not gain is at 100%" in moved["attribution"]

    held = json.loads(run_cli("scorecard", "diff", before, broken, "--ledger", ledger, "--json").stdout)
    assert attribution(held).startswith("localization.file_recall 0% → 100%")
    assert held["attribution"].endswith("end_to_end.resolved flat: the gain is held by a later stage (patching.parse 100% → 0% "
                                        "(-100.0 points, n/a: one task))")

    table = run_cli("scorecard", "diff", before, broken, "--ledger", ledger)
    assert "localization.file_recall" in table.stdout and "the gain is held by a later stage" in table.stdout
    shown = run_cli("scorecard", after, "--ledger", ledger)
    assert "file_recall" in shown.stdout and "100%" in shown.stdout and "economics" in shown.stdout
    record = json.loads(run_cli("scorecard", after, "--ledger", ledger, "--json").stdout)
    assert record["scorecard"]["component_metrics"]["localization"]["symbol_recall"] == 1.0
    assert record["details"]["candidate"]["entities"] == ["src/intervals/interval.py::Interval.overlaps"]
    sets = json.loads(run_cli("scorecard", "diff", "harness:scorecard_wrong_file", f"{after},{broken}", "--ledger", ledger,
                              "--json").stdout)  # fmt: skip
    assert sets["runs"] == {"a": 1, "b": 2} and sets["pairing"]["runs_compared"] == {"a": 1, "b": 2}
    assert {r["metric"]: r["b"] for r in sets["metrics"]}["patching.parse"] == 0.5
    bad = run_cli("scorecard", "99", "--ledger", ledger)
    assert bad.returncode == 2 and "no scorecard for score entry 99" in bad.stderr


@pytest.mark.slow
def test_plan_retrieval_and_reruns_feed_planning_target_rank_and_robustness(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli_here as run_cli

    plan, retrieval = tmp_path / "plan.json", tmp_path / "retrieval.json"
    plan.write_text(json.dumps(["Interval.overlaps", "merge"]))
    retrieval.write_text(json.dumps(["src/intervals/merge.py::merge", "src/intervals/interval.py::Interval.overlaps"]))
    graded = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                     str(FIXTURES / "instances" / "intervals.json"), "--patch",
                     str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--no-ledger", "--json", "--plan", str(plan),
                     "--retrieval", str(retrieval), "--reruns", "2")  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    envelope = json.loads(graded.stdout)
    metrics = envelope["scorecard"]["component_metrics"]
    assert metrics["localization"]["target_rank"] == 2 and metrics["planning"]["obligations_recovered"] == 1.0
    assert envelope["scorecard"]["end_to_end"]["robustness"] == 1.0
    seeds = envelope["scorecard_details"]["rerun_seeds"]
    assert len(seeds) == 2 and all(r["resolved"] for r in seeds) and seeds[0]["seed"] != seeds[1]["seed"]
    assert [s["name"] for s in envelope["runner"]["steps"]][-1] == "reruns"
    plan.write_text('{"not": "a list"}')
    bad = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                  str(FIXTURES / "instances" / "intervals.json"), "--patch",
                  str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--no-ledger", "--plan", str(plan))  # fmt: skip
    assert bad.returncode == 2 and f"--plan {plan}: expected a JSON list of strings, got dict" in bad.stderr


ORDER_DEPENDENT = """
STATE = []


def test_a():
    STATE.append("a")


def test_b():
    assert STATE == ["a"], "test_b only passes right after test_a"
"""


@pytest.mark.slow
def test_reruns_in_shuffled_orders_show_an_order_dependent_verdict(tmp_path):
    from pytest_objective_scoring.instances import parse_instance

    from .runner_helpers import grade

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_order.py").write_text(ORDER_DEPENDENT)
    instance = parse_instance({"instance_id": "order-1", "FAIL_TO_PASS": ["tests/test_order.py::test_a"],
                               "PASS_TO_PASS": ["tests/test_order.py::test_b"]})  # fmt: skip
    result = grade("order", b"", repo=repo, instance=instance, reruns=6)
    assert result.score["resolved"] == "resolved"  # collected in file order, it passes
    reruns = result.envelope["scorecard_details"]["rerun_seeds"]
    robustness = result.envelope["scorecard"]["end_to_end"]["robustness"]
    assert 0 < robustness < 1, reruns
    assert robustness == sum(r["resolved"] for r in reruns) / 6
    again = grade("order", b"", repo=repo, instance=instance, reruns=6)
    assert again.envelope["scorecard_details"]["rerun_seeds"] == reruns, "recorded seeds: the re-runs repeat"


@pytest.mark.slow
@pytest.mark.parametrize(("command", "built"), [("test -f src/intervals/interval.py", True), ("exit 3", False)])
def test_the_instances_build_command_decides_patching_build(command, built):
    from .runner_helpers import grade, instance_of, patch_of

    result = grade("intervals", patch_of("intervals", "gold"), instance=instance_of("intervals", build_command=command))
    assert result.envelope["scorecard"]["component_metrics"]["patching"]["build"] is built
    assert "build" in [s["name"] for s in result.envelope["runner"]["steps"]]
    if not built:
        assert result.envelope["scorecard_details"]["build_error"].startswith("build_command exited 3")
    assert result.score["resolved"] == "resolved"  # the build metric never changes the executed verdict
