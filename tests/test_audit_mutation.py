"""The audit's mutation check: the gold patch's mutants graded like candidates, the mutation score,
the surviving mutants' diffs and the ``weak_mutation_score`` finding. Decisions on fabricated
gradings first, then real audits of fixture tasks on the batch engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import audit
from pytest_objective_scoring.audit import (
    FINDINGS,
    AuditReport,
    MutationPlanning,
    run_audit,
)
from pytest_objective_scoring.commands import audit as audit_command
from pytest_objective_scoring.mutants import plan_mutants
from pytest_objective_scoring.runner import GradeRequest, GradeResult

from .conftest import FIXTURES
from .runner_helpers import instance_of
from .runner_helpers import run_cli_here as run_cli
from .test_audit import FakeGrader, fabricate

CSVLITE = FIXTURES / "repos" / "csvlite"
INSTANCE = instance_of("csvlite")


def plan(count: int) -> list[str]:
    made = plan_mutants(INSTANCE.patch or "", lambda p: (CSVLITE / p).read_text() if (CSVLITE / p).is_file() else None, count)
    return [m.id for m in made.mutants]


def survive(request: GradeRequest) -> GradeResult:
    return fabricate(INSTANCE, f2p="passed")


class Grader(FakeGrader):
    """FakeGrader whose gold-minus-a-hunk candidates are rejected (csvlite's tests cover every hunk)."""

    def __call__(self, request: GradeRequest) -> GradeResult:
        if (request.patch_ref or "").startswith("audit:gold-without-") and request.patch_ref not in self.answers:
            self.requests.append(request)
            return fabricate(INSTANCE, f2p="failed")
        return super().__call__(request)


def mutation_audit(count: int, survivors: Any = (), answers: Any = None, **planning: Any) -> tuple[AuditReport, Grader]:
    grader = Grader(INSTANCE, {f"audit:mutant-{m}": survive for m in survivors} | dict(answers or {}))
    report = run_audit(INSTANCE, CSVLITE, repeats=1, grade=grader, mutation=MutationPlanning(count=count, **planning))
    return report, grader


def test_the_check_is_not_run_unless_asked_for_and_then_grades_each_planned_mutant() -> None:
    report, grader = mutation_audit(0)
    assert report.check("mutation").outcome == "skipped" and "--mutants N" in report.check("mutation").detail
    assert report.mutation is None and "mutation" not in report.to_dict()
    assert not any(ref.startswith("audit:mutant-") for ref in grader.refs())

    report, grader = mutation_audit(10)
    assert sorted(r for r in grader.refs() if r.startswith("audit:mutant-")) == sorted(f"audit:mutant-{m}" for m in plan(10))
    assert report.check("mutation").outcome == "clean" and report.disposition == "valid"
    assert report.mutation is not None
    assert (report.mutation["score"], report.mutation["killed"], report.mutation["graded"]) == (1.0, 10, 10)
    assert report.mutation["plan"]["generated"] == 51  # the distinct, non-equivalent mutants before the limit
    assert "mutation score 1.00: 10 of 10 graded mutant(s) rejected" in report.check("mutation").detail


def test_a_task_whose_tests_accept_too_many_mutants_is_weak_with_the_survivors_diffs_as_evidence() -> None:
    chosen = plan(10)
    report, _ = mutation_audit(10, set(chosen[:5]))  # 5 of 10 rejected: 0.5 < 0.6
    assert report.kinds() == ["weak_mutation_score"] and report.disposition == "weak"
    assert FINDINGS["weak_mutation_score"] == ("mutation", "weak")
    evidence = report.findings[0].evidence
    assert (evidence["score"], evidence["killed"], evidence["graded"], evidence["threshold"]) == (0.5, 5, 10, 0.6)
    assert [s["id"] for s in evidence["survivors"]] == chosen[:5]
    first = evidence["survivors"][0]
    assert first["diff"].startswith("diff --git a/csvlite/parser.py b/csvlite/parser.py") and "patch" not in first
    assert f"-{first['original']}" in first["diff"].replace(" ", "") or first["original"] in first["diff"]


def test_the_threshold_and_the_minimum_number_of_graded_mutants_decide_the_finding() -> None:
    chosen = plan(10)
    assert mutation_audit(10, set(chosen[:4]))[0].kinds() == []  # 0.6: not below
    assert mutation_audit(10, set(chosen[:4]), threshold=0.7)[0].kinds() == ["weak_mutation_score"]
    few, _ = mutation_audit(4, set(plan(4)))  # every one survives, but 4 < MUTATION_MIN decide nothing
    assert few.kinds() == [] and few.mutation is not None and few.mutation["score"] == 0.0
    assert audit.MUTATION_MIN == 5


def test_no_mutant_is_graded_when_the_gold_patch_is_not_resolved() -> None:
    grader = FakeGrader(INSTANCE, {"audit:gold": lambda request: fabricate(INSTANCE, f2p="failed")})
    report = run_audit(INSTANCE, CSVLITE, repeats=1, grade=grader, mutation=MutationPlanning(count=10))
    assert report.check("mutation").outcome == "skipped" and "not resolved" in report.check("mutation").detail
    assert not any(ref.startswith("audit:mutant-") for ref in grader.refs())


def test_a_budget_that_runs_out_leaves_mutants_ungraded_and_said_never_counted() -> None:
    report, grader = mutation_audit(10, budget=1e-9)
    assert not any(ref.startswith("audit:mutant-") for ref in grader.refs())
    assert report.check("mutation").outcome == "skipped" and "budget" in report.check("mutation").detail
    assert report.mutation is not None and (report.mutation["graded"], report.mutation["not_graded"]) == (0, 10)


def test_a_mutant_that_hangs_is_rejected_and_one_that_does_not_apply_makes_the_audit_incomplete() -> None:
    chosen = plan(6)

    def hung(request: GradeRequest) -> GradeResult:
        result = fabricate(INSTANCE, f2p="missing")
        result.envelope["candidate_no_verdict_reason"] = "the test run timed out after 9s"
        return result

    report, _ = mutation_audit(6, answers={f"audit:mutant-{chosen[0]}": hung})
    assert report.complete and report.mutation is not None
    assert report.mutation["timed_out_ids"] == [chosen[0]] and report.mutation["killed"] == 6

    report, _ = mutation_audit(6, answers={f"audit:mutant-{chosen[1]}": lambda r: fabricate(INSTANCE, failure_class="patch_apply")})
    assert not report.complete
    assert [(f.check, f.patch_ref) for f in report.failures] == [("mutation", f"audit:mutant-{chosen[1]}")]


def test_mutants_are_graded_with_a_timeout_scaled_from_gold() -> None:
    gold = fabricate(INSTANCE, f2p="passed")
    gold.envelope["cost"] = {"wall_time": 2.5}
    assert audit.mutant_timeout(gold, 300.0) == 20.0
    assert audit.mutant_timeout(gold, 15.0) == 15.0
    _report, grader = mutation_audit(3)
    timeouts = {r.timeout for r in grader.requests if (r.patch_ref or "").startswith("audit:mutant-")}
    assert timeouts == {10.0}  # fabricated gradings report no wall time: 10 s + 4 x 0


def test_the_report_keeps_the_mutation_summary_through_its_json() -> None:
    report, _ = mutation_audit(10, set(plan(10)[:6]))
    again = AuditReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again.mutation == report.mutation and again.kinds() == report.kinds()


def test_the_command_line_threshold_is_the_audit_module_s() -> None:
    assert audit_command.MUTATION_THRESHOLD == audit.MUTATION_THRESHOLD


@pytest.mark.slow
def test_a_real_audit_grades_mutants_on_the_batch_engine_and_reports_the_survivor(tmp_path: Path) -> None:
    """intervals' tests never try two intervals that touch: ``<=`` into ``<`` in the gold's overlap
    test survives, and its diff is in the report; every other mutant is rejected."""
    result = run_cli("audit", "run", "--instance", str(FIXTURES / "instances" / "intervals.json"), "--repo",
                     str(FIXTURES / "repos" / "intervals"), "--repeats", "1", "--mutants", "10", "--workers", "2",
                     "--ledger", str(tmp_path / "ledger.db"), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)["audits"][0]
    mutation = data["mutation"]
    assert (mutation["killed"], mutation["graded"], mutation["not_graded"]) == (3, 4, 0)
    assert [s["id"] for s in mutation["survivors"]] == ["compare@src/intervals/interval.py:31:27"]
    assert "-        return self.start <= other.end" in mutation["survivors"][0]["diff"]
    assert "+        return self.start < other.end" in mutation["survivors"][0]["diff"]
    assert data["disposition"] == "valid"  # 4 graded mutants are fewer than MUTATION_MIN: no finding
    table = run_cli("audit", "run", "--instance", str(FIXTURES / "instances" / "intervals.json"), "--repo",
                    str(FIXTURES / "repos" / "intervals"), "--repeats", "1", "--mutants", "10",
                    "--ledger", str(tmp_path / "ledger.db"))  # fmt: skip
    assert "mutation score 0.75 (3 of 4 graded mutants rejected" in table.stdout
    assert "surviving mutant compare@src/intervals/interval.py:31:27: `<=` replaced by `<`" in table.stdout


def test_the_mutation_options_refuse_bad_values() -> None:
    for option, value in (("--mutants", "-1"), ("--mutation-threshold", "1.5"), ("--mutation-budget", "0")):
        result = run_cli("audit", "run", option, value)
        assert result.returncode == 2 and option in result.stderr


def test_a_stub_whose_run_dies_is_rejected_not_an_incomplete_audit() -> None:
    """Stubbing pytest's own assertion rewriter (pytest-dev__pytest-11143) kills the test process: the
    runner's control run finished, so the candidate is not resolved (failure class solver): the stub
    canary is clean and the audit complete."""

    def died(request: GradeRequest) -> GradeResult:
        result = fabricate(INSTANCE, f2p="missing")
        result.envelope["candidate_no_verdict_reason"] = "the test run died before its session finished (exit code 1)"
        return result

    report, _ = mutation_audit(0, answers={"audit:stub": died})
    assert report.complete and report.check("stub_patch").outcome == "clean"
    ablation = next(r for r in mutation_audit(0)[1].refs() if r.startswith("audit:gold-without-"))
    report, _ = mutation_audit(0, answers={ablation: died})  # pylint-dev__pylint-7228: an ablation that kills pytest
    assert report.complete and report.check("weak_tests").outcome == "clean"
