"""The instrument audit: the decisions on fabricated gradings, the generated candidates, and
real audits of fixture tasks built to trip each check (``fixtures/audit/``)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import audit
from pytest_objective_scoring.audit import (
    CHECKS,
    FINDINGS,
    AuditReport,
    CheckResult,
    Finding,
    GradingUsed,
    file_diff,
    flaky_findings,
    hunk_ablations,
    leaked_lines,
    run_audit,
)
from pytest_objective_scoring.instances import Instance, load_instance, parse_instance
from pytest_objective_scoring.runner import GradeRequest, GradeResult

from .conftest import FIXTURES
from .runner_helpers import GIT, instance_of, make_patch

AUDIT = FIXTURES / "audit"
TEXTKIT = AUDIT / "repos" / "textkit"
INTERVALS = FIXTURES / "repos" / "intervals"
TASKS = ("passing_base", "untested_hunk", "flaky", "leaky")


def task(name: str, **overrides: Any) -> Instance:
    instance = load_instance(AUDIT / "instances" / f"{name}.json")
    return parse_instance({**instance.fields, **overrides}, f"<{name}>") if overrides else instance


# ---------------------------------------------------------------------------- fabricated gradings


def fabricate(
    instance: Instance,
    *,
    f2p: str = "failed",
    outcomes: Mapping[str, str] | None = None,
    flags: Sequence[str] = (),
    dropped: Sequence[str] = (),
    reruns: Sequence[Mapping[str, str] | None] = (),
    failure_class: str | None = None,
) -> GradeResult:
    """A GradeResult as the runner would give it: ``f2p`` is every FAIL_TO_PASS test's outcome,
    every PASS_TO_PASS test passes, ``outcomes`` overrides single tests; ``reruns`` are the
    re-runs' overrides (None: a re-run without a verdict)."""
    if failure_class in ("setup", "verifier"):
        envelope: dict[str, Any] = {"status": "no_verdict", "score": None, "tests": [], "integrity": {"flags": []},
                    "no_verdict_reason": f"infrastructure failure ({failure_class}): pytest is not installed",
                    "runner": {"failure_class": failure_class, "failure_detail": "pytest is not installed"}}  # fmt: skip
        return GradeResult(envelope, 3, failure_class)

    def run(overrides: Mapping[str, str]) -> dict[str, str]:
        base = {t: f2p for t in instance.fail_to_pass} | {t: "passed" for t in instance.pass_to_pass}
        return base | dict(outcomes or {}) | dict(overrides)

    main = run({})
    tests = []
    for test_id, outcome in main.items():
        gate = "FAIL_TO_PASS" if test_id in instance.fail_to_pass else "PASS_TO_PASS"
        good = outcome == "passed"
        status = "missing" if outcome == "missing" else ("passed" if good else "failed")
        if gate == "PASS_TO_PASS" and status != "missing":
            status = "preserved" if good else "broken"
        tests.append({"id": test_id, "gate": gate, "outcome": outcome, "status": status})
    resolved = all(t["status"] in ("passed", "preserved") for t in tests)
    failure = failure_class or ("none" if resolved else "solver")
    rerun_seeds = [
        {"seed": 100 + i, "resolved": False, "no_verdict_reason": "the test run timed out after 9s", "outcomes": {}}
        if r is None else {"seed": 100 + i, "resolved": True, "no_verdict_reason": None, "outcomes": run(r)}
        for i, r in enumerate(reruns)
    ]  # fmt: skip
    envelope = {
        "status": "verdict",
        "score": {"instance_id": instance.instance_id, "resolved": "resolved" if resolved else "not_resolved"},
        "tests": tests,
        "integrity": {"flags": [{"kind": kind, "detail": "t"} for kind in flags]},
        "runner": {"failure_class": failure, "apply": {"dropped": [{"path": p, "reason": "r"} for p in dropped]}},
        "scorecard_details": {"rerun_seeds": rerun_seeds},
    }
    return GradeResult(envelope, 0 if resolved else 1, failure)


Answer = Callable[[GradeRequest], GradeResult]


@dataclass
class FakeGrader:
    """``grade`` for run_audit: answers by patch_ref, records every request.

    Default: the gold patch and every ablation of it are resolved, everything else fails
    its FAIL_TO_PASS tests; the empty and gold patches' re-runs repeat the main run.
    """

    instance: Instance
    answers: dict[str, Answer] = field(default_factory=dict)
    requests: list[GradeRequest] = field(default_factory=list)

    def __call__(self, request: GradeRequest) -> GradeResult:
        self.requests.append(request)
        ref = request.patch_ref or ""
        if ref in self.answers:
            return self.answers[ref](request)
        resolved = ref == "audit:gold" or ref.startswith("audit:gold-without-")
        return fabricate(self.instance, f2p="passed" if resolved else "failed", reruns=[{}] * request.reruns)

    def refs(self) -> list[str]:
        return [r.patch_ref or "" for r in self.requests]


def fake_audit(instance: Instance, repo: Path = INTERVALS, repeats: int = 3, answers: Mapping[str, Answer] | None = None
               ) -> tuple[AuditReport, FakeGrader]:  # fmt: skip
    """run_audit on fabricated gradings; ``answers`` maps a patch_ref without ``audit:`` to its grading."""
    grader = FakeGrader(instance, {f"audit:{k}": v for k, v in (answers or {}).items()})
    return run_audit(instance, repo, repeats=repeats, grade=grader), grader


def outcomes(report: AuditReport) -> dict[str, str]:
    return {c.name: c.outcome for c in report.checks}


INTERVALS_INSTANCE = instance_of("intervals")


# ---------------------------------------------------------------------------- decisions


def test_a_sound_task_on_fabricated_gradings_is_valid() -> None:
    report, grader = fake_audit(INTERVALS_INSTANCE)
    assert report.disposition == "valid" and report.findings == () and report.complete
    assert [c.name for c in report.checks] == list(CHECKS)
    assert outcomes(report) == {"empty_patch": "clean", "gold_patch": "clean", "noop_patch": "clean",
                                "stub_patch": "clean", "weak_tests": "skipped", "mutation": "skipped", "flakiness": "clean",
                                "evaluator_exploits": "clean", "solution_leakage": "clean"}  # fmt: skip
    assert grader.refs() == ["audit:empty", "audit:gold", "audit:noop", "audit:stub", "audit:exploit-edit_tests",
                             "audit:exploit-conftest", "audit:exploit-pytest_internals"]  # fmt: skip
    assert "single hunk" in report.check("weak_tests").detail


def test_every_request_goes_through_grade_with_the_audit_settings(tmp_path: Path) -> None:
    grader = FakeGrader(INTERVALS_INSTANCE)
    messages: list[str] = []
    run_audit(INTERVALS_INSTANCE, INTERVALS, python="/usr/bin/python3", timeout=42.0, repeats=4, network=True,
              workdir=tmp_path, progress=messages.append, grade=grader)  # fmt: skip
    assert messages[:2] == ["empty_patch: grading audit:empty", "gold_patch: grading audit:gold"]
    assert len(messages) == len(grader.requests)
    for request in grader.requests:
        assert (request.python, request.timeout, request.network, request.workdir) == ("/usr/bin/python3", 42.0, True, tmp_path)
        assert request.repo == INTERVALS and request.instance is INTERVALS_INSTANCE
        assert request.reruns == (3 if request.patch_ref in ("audit:empty", "audit:gold") else 0)
    by_ref = {r.patch_ref: r.patch for r in grader.requests}
    assert by_ref["audit:empty"] == b""
    assert by_ref["audit:gold"] == (INTERVALS_INSTANCE.patch or "").encode()


def test_the_checks_record_the_gradings_they_used() -> None:
    report, _ = fake_audit(INTERVALS_INSTANCE)
    used = {c.name: [g.patch_ref for g in c.gradings] for c in report.checks}
    assert used["flakiness"] == ["audit:empty", "audit:gold"]
    assert used["evaluator_exploits"] == ["audit:exploit-edit_tests", "audit:exploit-conftest", "audit:exploit-pytest_internals"]
    assert used["solution_leakage"] == [] and used["weak_tests"] == []
    gold = report.check("gold_patch").gradings[0]
    assert (gold.resolved, gold.failure_class, gold.reruns) == ("resolved", "none", 2)
    assert len(gold.patch_sha256) == 64


def test_an_empty_patch_that_resolves_makes_the_task_invalid_and_skips_the_exploits() -> None:
    instance = INTERVALS_INSTANCE
    report, grader = fake_audit(instance, answers={"empty": lambda r: fabricate(instance, f2p="passed", reruns=[{}] * r.reruns)})
    assert report.disposition == "invalid"
    (hit,) = [f for f in report.findings if f.kind == "empty_patch_resolves"]
    assert hit.disposition == "invalid" and hit.evidence == {"fail_to_pass_passed": list(instance.fail_to_pass)}
    assert outcomes(report)["evaluator_exploits"] == "skipped"
    assert not any(ref.startswith("audit:exploit") for ref in grader.refs())


def test_tests_mislabelled_on_the_base_are_weak() -> None:
    instance = INTERVALS_INSTANCE
    f2p, p2p = instance.fail_to_pass[0], instance.pass_to_pass[0]
    report, _ = fake_audit(instance, answers={"empty": lambda r: fabricate(instance, outcomes={f2p: "passed", p2p: "failed"},
                                                                           reruns=[{}] * r.reruns)})  # fmt: skip
    assert report.kinds() == ["fail_to_pass_passes_on_base", "pass_to_pass_fails_on_base"]
    assert report.disposition == "weak"
    assert report.findings[0].evidence == {"tests": [f2p]}
    assert report.findings[1].evidence == {"tests": {p2p: "failed"}}


def test_a_gold_patch_that_does_not_resolve_makes_the_task_invalid() -> None:
    instance = task("untested_hunk")
    broken = instance.pass_to_pass[0]
    report, grader = fake_audit(instance, TEXTKIT, answers={"gold": lambda r: fabricate(
        instance, f2p="passed", outcomes={broken: "failed", instance.fail_to_pass[1]: "missing"}, reruns=[{}] * r.reruns)})  # fmt: skip
    assert report.kinds() == ["gold_not_resolved"] and report.disposition == "invalid"
    evidence = report.findings[0].evidence
    assert evidence == {"failure_class": "solver", "failing": {broken: "failed"}, "missing": [instance.fail_to_pass[1]]}
    assert outcomes(report)["weak_tests"] == "skipped"
    assert not any("without" in ref for ref in grader.refs())


def test_a_gold_patch_that_does_not_apply_says_so() -> None:
    instance = INTERVALS_INSTANCE
    report, _ = fake_audit(instance, answers={"gold": lambda r: fabricate(instance, f2p="missing", failure_class="patch_apply")})
    (hit,) = report.findings
    assert hit.kind == "gold_not_resolved" and hit.detail == "the gold patch does not apply to the base"


def test_a_task_without_a_gold_patch_cannot_be_validated() -> None:
    instance = instance_of("intervals", patch=None)
    report, grader = fake_audit(instance)
    assert "no_gold_patch" in report.kinds() and report.disposition == "invalid"
    assert FINDINGS["no_gold_patch"] == ("gold_patch", "invalid")
    assert outcomes(report) == {"empty_patch": "clean", "gold_patch": "found", "noop_patch": "clean",
                                "stub_patch": "skipped", "weak_tests": "skipped", "mutation": "skipped", "flakiness": "clean",
                                "evaluator_exploits": "clean", "solution_leakage": "clean"}  # fmt: skip
    noop = {r.patch_ref: r.patch for r in grader.requests}["audit:noop"].decode()
    assert f"+++ b/{audit.NOOP_FILE}" in noop
    assert "pytest_internals not built" in report.check("evaluator_exploits").detail


@pytest.mark.parametrize("canary", ["noop", "stub"])
def test_a_trivial_canary_that_resolves_makes_the_task_invalid(canary: str) -> None:
    instance = INTERVALS_INSTANCE
    report, _ = fake_audit(instance, answers={canary: lambda r: fabricate(instance, f2p="passed")})
    assert report.kinds() == [f"{canary}_patch_resolves"] and report.disposition == "invalid"
    expected = {"file": "src/intervals/interval.py"} if canary == "noop" else {
        "stubbed": ["src/intervals/interval.py::Interval.overlaps"]}  # fmt: skip
    assert report.findings[0].evidence == expected


def test_a_hunk_whose_removal_still_resolves_is_untested() -> None:
    instance = task("untested_hunk")
    report, grader = fake_audit(instance, TEXTKIT, answers={"gold-without-textkit/case.py#2": lambda r: fabricate(instance)})
    assert [r for r in grader.refs() if "without" in r] == ["audit:gold-without-textkit/case.py#1",
                                                            "audit:gold-without-textkit/case.py#2"]  # fmt: skip
    assert report.kinds() == ["untested_hunk"] and report.disposition == "weak"
    assert report.findings[0].evidence == {"file": "textkit/case.py", "hunk": "@@ -14,6 +14,8 @@ def title_case(text: str) -> str:",
                                           "index": 1, "added": 2, "removed": 0}  # fmt: skip


EXPLOIT_CASES = [
    # (resolved, flags, dropped, exploitable)
    (False, (), (), False),
    (True, ("pytest_internals_patched",), (), False),
    (True, (), ("conftest.py",), False),
    (True, (), (), True),
]


@pytest.mark.parametrize(("resolved", "flags", "dropped", "exploitable"), EXPLOIT_CASES,
                         ids=["not-resolved", "resolved-but-flagged", "resolved-but-dropped", "resolved-unflagged"])  # fmt: skip
@pytest.mark.parametrize("exploit", audit.EXPLOITS)
def test_an_exploit_resolved_without_a_flag_makes_the_task_invalid(
    exploit: str, resolved: bool, flags: tuple[str, ...], dropped: tuple[str, ...], exploitable: bool
) -> None:
    instance = INTERVALS_INSTANCE
    answer: dict[str, Answer] = {f"exploit-{exploit}": lambda r: fabricate(instance, f2p="passed" if resolved else "failed", flags=flags,
                                                         dropped=dropped)}  # fmt: skip
    report, _ = fake_audit(instance, answers=answer)
    if exploitable:
        (hit,) = report.findings
        assert hit.kind == "evaluator_exploitable" and hit.disposition == "invalid"
        assert hit.evidence == {"exploit": exploit, "patch_ref": f"audit:exploit-{exploit}"}
        assert report.disposition == "invalid"
    else:
        assert report.findings == () and report.disposition == "valid"
    graded = [g for g in report.check("evaluator_exploits").gradings if g.patch_ref == f"audit:exploit-{exploit}"]
    assert graded[0].flags == flags and graded[0].dropped == dropped


def test_an_infrastructure_failure_leaves_the_audit_incomplete_not_invalid() -> None:
    instance = INTERVALS_INSTANCE
    report, grader = fake_audit(instance, answers={"gold": lambda r: fabricate(instance, failure_class="setup")})
    assert not report.complete
    assert report.failures == (audit.AuditFailure("gold_patch", "audit:gold", "setup", "pytest is not installed"),)
    assert report.findings == () and report.disposition == "valid"  # what the completed checks found, no more
    assert grader.refs() == ["audit:empty", "audit:gold"]  # nothing more is graded once the environment failed
    assert outcomes(report) == {"empty_patch": "clean", "gold_patch": "incomplete", "noop_patch": "skipped",
                                "stub_patch": "skipped", "weak_tests": "skipped", "mutation": "skipped", "flakiness": "incomplete",
                                "evaluator_exploits": "skipped", "solution_leakage": "clean"}  # fmt: skip
    data = report.to_dict()
    assert data["complete"] is False and data["failures"][0]["failure_class"] == "setup"


def test_findings_made_before_an_infrastructure_failure_are_kept() -> None:
    instance = task("leaky")
    report, _ = fake_audit(instance, TEXTKIT, repeats=1, answers={
        "empty": lambda r: fabricate(instance, f2p="passed"), "noop": lambda r: fabricate(instance, failure_class="verifier")})  # fmt: skip
    assert report.kinds() == ["empty_patch_resolves", "solution_leak"]
    assert report.disposition == "invalid" and not report.complete
    assert report.failures[0].check == "noop_patch"


def test_flaky_tests_are_named_with_their_outcomes_per_run() -> None:
    instance = INTERVALS_INSTANCE
    shaky = instance.pass_to_pass[2]
    base = fabricate(instance, reruns=[{shaky: "failed"}, {}])
    gold = fabricate(instance, f2p="passed", reruns=[{}, None])
    found = flaky_findings({"base": base.envelope, "gold": gold.envelope})
    assert [f.kind for f in found] == ["flaky_test", "flaky_run"]
    assert found[0].evidence == {"test": shaky, "gate": "PASS_TO_PASS", "varies_on": ["base"],
                                 "outcomes": {"base": ["passed", "failed", "passed"]}, "seeds": {"base": [None, 100, 101]}}  # fmt: skip
    assert found[1].evidence == {"patch": "gold", "seed": 101, "reason": "the test run timed out after 9s"}
    assert all(f.disposition == "weak" for f in found)


def test_flakiness_needs_repeats() -> None:
    report, grader = fake_audit(INTERVALS_INSTANCE, repeats=1)
    assert outcomes(report)["flakiness"] == "skipped"
    assert all(r.reruns == 0 for r in grader.requests)
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        run_audit(INTERVALS_INSTANCE, INTERVALS, repeats=0, grade=FakeGrader(INTERVALS_INSTANCE))


def test_the_audit_is_deterministic() -> None:
    first = fake_audit(task("untested_hunk"), TEXTKIT)[0].to_dict()
    second = fake_audit(task("untested_hunk"), TEXTKIT)[0].to_dict()
    first.pop("created"), second.pop("created")
    assert first == second


def test_the_report_round_trips_and_refuses_a_contradicting_disposition() -> None:
    instance = INTERVALS_INSTANCE
    report, _ = fake_audit(instance, answers={"stub": lambda r: fabricate(instance, f2p="passed")})
    data = json.loads(json.dumps(report.to_dict()))
    assert data["schema_version"] == 1 and data["disposition"] == "invalid" and data["complete"] is True
    assert AuditReport.from_dict(data) == report
    with pytest.raises(ValueError, match="contradicts"):
        AuditReport.from_dict({**data, "disposition": "valid"})
    with pytest.raises(ValueError, match="disposition"):
        Finding.from_dict({"kind": "x", "disposition": "fine", "evidence": {}, "detail": ""})
    with pytest.raises(ValueError, match="outcome"):
        CheckResult.from_dict({"name": "x", "outcome": "great"})


@pytest.mark.parametrize(("findings", "expected"), [
    ((), "valid"),
    (("flaky_test",), "weak"),
    (("flaky_test", "gold_not_resolved"), "invalid"),
    (("evaluator_exploitable",), "invalid"),
], ids=["none", "weak-only", "weak-and-invalid", "invalid-only"])  # fmt: skip
def test_the_disposition_is_the_worst_finding(findings: tuple[str, ...], expected: str) -> None:
    made = tuple(audit.finding(kind, {}, "") for kind in findings)
    report = AuditReport("x-1", made, ())
    assert report.disposition == expected


def test_every_finding_kind_belongs_to_a_check() -> None:
    assert {check for check, _ in FINDINGS.values()} <= set(CHECKS)
    assert {disposition for _, disposition in FINDINGS.values()} == {"weak", "invalid"}


# ---------------------------------------------------------------------------- solution leakage


STATEMENT = """The fix is one line:

    return self.start <= other.end and other.start <= self.end

and maybe `else:` somewhere. total = compute_total(values) # approx
"""


@pytest.mark.parametrize(("added", "leaks"), [
    ("        return self.start <= other.end and other.start <= self.end", True),  # verbatim, indented differently
    ("        return self.start <= other.end and other.start < self.end", False),  # one character off: no match
    ("        else:", False),  # too short
    ("        return None", False),  # keywords only
    ("        # The fix is one line:", False),  # a comment
    ("    total = compute_total(values)", True),  # a substring of a statement line
    ("    RETURN SELF.START <= OTHER.END", False),  # case matters
], ids=["verbatim", "one-char-off", "short", "keywords-only", "comment", "substring", "case"])  # fmt: skip
def test_leaked_lines_are_exact_substrings_of_specific_lines(added: str, leaks: bool) -> None:
    gold = f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-x = 1\n+{added}\n"
    found = leaked_lines(gold, {"problem_statement": STATEMENT, "hints_text": ""})
    assert bool(found) is leaks
    if leaks:
        assert found == [{"file": "m.py", "line": added.strip(), "field": "problem_statement"}]


def test_leakage_looks_at_python_files_and_at_the_hints() -> None:
    line = "total = compute_total(values)"
    gold = (f"diff --git a/NEWS.rst b/NEWS.rst\n--- a/NEWS.rst\n+++ b/NEWS.rst\n@@ -1,0 +1,1 @@\n+{line}\n"
            f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,0 +1,2 @@\n+{line}\n+{line}\n")  # fmt: skip
    found = leaked_lines(gold, {"problem_statement": "", "hints_text": f"try {line}"})
    assert found == [{"file": "m.py", "line": line, "field": "hints_text"}]
    assert leaked_lines(None, {"problem_statement": line}) == []


# ---------------------------------------------------------------------------- generated candidates


def git_repo(root: Path) -> Path:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    return root


def applies(repo: Path, patch: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    work = tmp / "apply-check"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    git_repo(work)
    (tmp / "check.diff").write_text(patch, encoding="utf-8")
    return subprocess.run(["git", "apply", str(tmp / "check.diff")], cwd=work, capture_output=True, text=True, check=False)


def test_hunk_ablations_drop_one_hunk_and_keep_the_rest_verbatim(tmp_path: Path) -> None:
    case = (TEXTKIT / "textkit" / "case.py").read_text(encoding="utf-8")
    wrap = (TEXTKIT / "textkit" / "wrap.py").read_text(encoding="utf-8")
    gold = make_patch(TEXTKIT, {
        "textkit/case.py": case.replace("SMALL_WORDS = frozenset(", "# small words\n# stay lower case\nSMALL_WORDS = frozenset(")
                               .replace('return _join(words, "_")', 'return _join(words, "_")  # joined'),
        "textkit/wrap.py": wrap.replace("return text[:width] + ellipsis", "return text[: width - len(ellipsis)] + ellipsis"),
        "textkit/logo.bin": "\x00\x01\x02binary",
    }, tmp_path)  # fmt: skip
    ablations = hunk_ablations(gold)
    assert [(a.file, a.index, a.added, a.removed) for a in ablations] == [
        ("textkit/case.py", 1, 2, 0), ("textkit/case.py", 2, 1, 1), ("textkit/wrap.py", 1, 1, 1)]  # fmt: skip
    first, _, wrap_gone = ablations
    assert "# small words" not in first.patch and "+++ b/textkit/wrap.py" in first.patch
    assert "@@ -26,4 +26,4 @@" in first.patch and "@@ -26,4 +28,4 @@" in gold  # the removed hunk added two lines
    assert "textkit/wrap.py" not in wrap_gone.patch  # its only hunk is gone: so is the file
    assert all("GIT binary patch" in a.patch for a in ablations)
    binary = gold[gold.index("diff --git a/textkit/logo.bin"):].split("diff --git a/textkit/wrap.py")[0]
    assert all(binary in a.patch for a in ablations)
    for ablation in ablations:
        result = applies(TEXTKIT, ablation.patch, tmp_path)
        assert result.returncode == 0, (ablation.evidence(), result.stderr)
    assert hunk_ablations((FIXTURES / "patches" / "intervals" / "gold.diff").read_text(encoding="utf-8")) == []


def test_hunk_ablations_of_a_diff_without_git_headers() -> None:
    plain = ("--- a/one.py\n+++ b/one.py\n@@ -1,1 +1,1 @@\n-a = 1\n+a = 2\n"
             "--- a/two.py\n+++ b/two.py\n@@ -1,1 +1,2 @@\n-b = 1\n+b = 2\n+c = 3\n")  # fmt: skip
    first, second = hunk_ablations(plain)
    assert first.patch == "--- a/two.py\n+++ b/two.py\n@@ -1,1 +1,2 @@\n-b = 1\n+b = 2\n+c = 3\n"
    assert second.patch == "--- a/one.py\n+++ b/one.py\n@@ -1,1 +1,1 @@\n-a = 1\n+a = 2\n"
    assert (second.file, second.added, second.removed) == ("two.py", 2, 1)


STUB_SOURCE = '''\
"""A module with every shape of def."""
import functools

LIMIT = 3


def plain(x):
    """Doc."""
    return x + 1


def inline(x): return x * 2


@functools.lru_cache(maxsize=None)
def decorated(x):
    return x - 1


async def fetch(x):
    await something(x)
    return x


def outer(x):
    @functools.wraps(outer)
    def inner(y):
        return y
    return inner(x)


class Thing:
    size = 1

    def method(self, a,
               b=2):
        total = a + b
        return total * self.size
'''


def defs(tree: ast.Module) -> list[tuple[ast.ClassDef | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Top-level functions and methods of top-level classes."""
    found: list[tuple[ast.ClassDef | None, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((None, node))
        elif isinstance(node, ast.ClassDef):
            found += [(node, f) for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return found


def test_the_stub_canary_stubs_every_gold_touched_function_and_nothing_else(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "shapes.py").write_text(STUB_SOURCE, encoding="utf-8")
    (repo / "pkg" / "crlf.py").write_bytes(b"def f(a):\r\n    return a\r\n\r\n\r\ndef g():\r\n    return 2\r\n")
    edited = (STUB_SOURCE.replace("LIMIT = 3", "LIMIT = 4").replace("return x + 1", "return x + 2")
              .replace("return x * 2", "return x * 3").replace("return x - 1", "return x - 2")
              .replace("return x\n\n\ndef outer", "return x or 0\n\n\ndef outer").replace("return y", "return -y")
              .replace("size = 1", "size = 2").replace("total = a + b", "total = a - b"))  # fmt: skip
    gold = make_patch(repo, {"pkg/shapes.py": edited, "pkg/crlf.py": "def f(a):\r\n    return -a\r\n\r\n\r\ndef g():\r\n    return 2\r\n"},
                      tmp_path)  # fmt: skip
    read = lambda path: (repo / path).read_bytes().decode() if (repo / path).is_file() else None
    patch, stubbed = audit.stub_patch(gold, read)
    assert stubbed == ["pkg/crlf.py::f", "pkg/shapes.py::Thing.method", "pkg/shapes.py::decorated", "pkg/shapes.py::fetch",
                       "pkg/shapes.py::inline", "pkg/shapes.py::outer.inner", "pkg/shapes.py::plain"]  # fmt: skip
    assert applies(repo, patch, tmp_path).returncode == 0
    result = (tmp_path / "apply-check" / "pkg" / "shapes.py").read_text(encoding="utf-8")
    tree = ast.parse(result)
    bodies = {f"{cls.name}.{fn.name}" if cls else fn.name: fn for cls, fn in defs(tree)}
    bodies["outer.inner"] = next(fn for fn in ast.walk(bodies["outer"]) if isinstance(fn, ast.FunctionDef) and fn.name == "inner")
    for name in ("plain", "inline", "decorated", "fetch", "outer.inner", "Thing.method"):
        body = bodies[name].body
        assert len(body) == 1 and isinstance(body[0], ast.Raise), name
    assert len(bodies["outer"].body) == 2  # only its touched inner function is stubbed
    assert "LIMIT = 3" in result and "size = 1" in result and "@functools.lru_cache(maxsize=None)" in result
    assert "    def method(self, a,\n               b=2):\n        raise RuntimeError(\"stubbed out by objective-score audit\")\n" in result
    crlf = (tmp_path / "apply-check" / "pkg" / "crlf.py").read_bytes()
    assert crlf == b"def f(a):\r\n    raise RuntimeError(\"stubbed out by objective-score audit\")\r\n\r\n\r\ndef g():\r\n    return 2\r\n"


def test_the_exploits_are_built_against_the_base(tmp_path: Path) -> None:
    instance = INTERVALS_INSTANCE
    read = lambda path: (INTERVALS / path).read_text(encoding="utf-8") if (INTERVALS / path).is_file() else None
    edit, tests = audit.edit_tests_exploit(instance, read)
    assert tests == list(instance.fail_to_pass)
    result = applies(INTERVALS, edit, tmp_path)
    assert result.returncode == 0, result.stderr
    edited = (tmp_path / "apply-check" / "tests" / "test_merge.py").read_text(encoding="utf-8")
    assert "    def test_touching(self):\n        pass\n" in edited and "def test_empty(self):\n        assert merge([]) == []" in edited
    conftest = audit.conftest_exploit(read)
    assert conftest.startswith("diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n")
    assert applies(INTERVALS, conftest, tmp_path).returncode == 0
    internals, module = audit.internals_exploit(instance.patch, read)
    assert module == "src/intervals/interval.py"
    assert applies(INTERVALS, internals, tmp_path).returncode == 0
    assert "TestReport.from_item_and_call = classmethod" in (tmp_path / "apply-check" / module).read_text(encoding="utf-8")


def test_the_edit_tests_exploit_finds_parametrized_tests_in_new_files() -> None:
    new_file = ("diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n"
                "+++ b/tests/test_new.py\n@@ -0,0 +1,4 @@\n+import pytest\n+@pytest.mark.parametrize('x', [1, 2])\n"
                "+def test_p(x):\n+    assert x > 5\n")  # fmt: skip
    instance = instance_of("intervals", test_patch=new_file, FAIL_TO_PASS=["tests/test_new.py::test_p[1]",
                                                                           "tests/test_new.py::test_p[2]"])  # fmt: skip
    patch, tests = audit.edit_tests_exploit(instance, lambda path: None)
    assert tests == ["tests/test_new.py::test_p[1]", "tests/test_new.py::test_p[2]"]
    assert patch.endswith("+def test_p(x):\n+    pass\n") and "--- /dev/null" in patch


def test_file_diffs_mark_a_missing_final_newline(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\ny = 2", encoding="utf-8")
    patch = file_diff("a.py", "x = 1\ny = 2", "x = 1\ny = 3")
    assert patch.endswith("-y = 2\n\\ No newline at end of file\n+y = 3\n\\ No newline at end of file\n")
    assert applies(repo, patch, tmp_path).returncode == 0
    assert (tmp_path / "apply-check" / "a.py").read_text(encoding="utf-8") == "x = 1\ny = 3"
    assert file_diff("a.py", "same", "same") == ""


def test_base_sources_are_read_at_the_base_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(INTERVALS, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git_repo(repo)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    module = repo / "src" / "intervals" / "interval.py"
    module.write_text("# uncommitted noise\n" + module.read_text(encoding="utf-8"), encoding="utf-8")
    instance = instance_of("intervals", base_commit=commit)
    _, grader = fake_audit(instance, repo)
    stub = {r.patch_ref: r.patch for r in grader.requests}["audit:stub"].decode()
    assert "@@ -23,8 +23,7 @@" in stub and "uncommitted noise" not in stub  # located in the committed text


# ---------------------------------------------------------------------------- the fixture tasks


@pytest.mark.parametrize("name", TASKS)
def test_the_fixture_tasks_are_consistent(name: str) -> None:
    instance = task(name)
    assert instance.patch == (AUDIT / "patches" / name / "gold.diff").read_text(encoding="utf-8")
    assert instance.test_patch == (AUDIT / "patches" / name / "test.diff").read_text(encoding="utf-8")
    assert instance.get("created_at") and instance.get("problem_statement")
    assert name in (AUDIT / "README.md").read_text(encoding="utf-8")
    assert instance.instance_id == f"audit__textkit-{name.replace('_', '-')}"


def kinds_and_checks(report: AuditReport) -> tuple[list[str], dict[str, str]]:
    return report.kinds(), outcomes(report)


@pytest.mark.slow
def test_the_sound_task_is_valid_and_the_exploits_are_neutralised() -> None:
    report = run_audit(INTERVALS_INSTANCE, INTERVALS, repeats=2, timeout=120.0)
    assert report.complete, report.failures
    assert report.findings == () and report.disposition == "valid", report.to_dict()
    assert outcomes(report) == {"empty_patch": "clean", "gold_patch": "clean", "noop_patch": "clean",
                                "stub_patch": "clean", "weak_tests": "skipped", "mutation": "skipped", "flakiness": "clean",
                                "evaluator_exploits": "clean", "solution_leakage": "clean"}  # fmt: skip
    exploits = {g.patch_ref: g for g in report.check("evaluator_exploits").gradings}
    assert all(g.resolved == "not_resolved" for g in exploits.values())
    assert exploits["audit:exploit-edit_tests"].dropped == ("tests/test_merge.py",)  # the tests are protected
    assert exploits["audit:exploit-conftest"].dropped == ("conftest.py",)
    assert "pytest_internals_patched" in exploits["audit:exploit-pytest_internals"].flags


@pytest.mark.slow
def test_a_task_whose_tests_pass_on_the_base_is_invalid() -> None:
    report = run_audit(task("passing_base"), TEXTKIT, repeats=1, timeout=120.0)
    assert report.complete, report.failures
    assert report.kinds() == ["empty_patch_resolves", "noop_patch_resolves"] and report.disposition == "invalid"
    assert report.findings[0].evidence == {"fail_to_pass_passed": ["tests/test_wrap.py::test_truncate_exact_width"]}
    assert outcomes(report)["stub_patch"] == "clean"  # stubbing truncate() does break the test
    assert outcomes(report)["evaluator_exploits"] == "skipped"


@pytest.mark.slow
def test_a_task_with_an_untested_hunk_is_weak() -> None:
    report = run_audit(task("untested_hunk"), TEXTKIT, repeats=1, timeout=120.0)
    assert report.complete, report.failures
    assert report.kinds() == ["untested_hunk"] and report.disposition == "weak", report.to_dict()
    assert report.findings[0].evidence == {"file": "textkit/case.py", "hunk": "@@ -14,6 +14,8 @@ def title_case(text: str) -> str:",
                                           "index": 1, "added": 2, "removed": 0}  # fmt: skip
    ablations = {g.patch_ref: g.resolved for g in report.check("weak_tests").gradings}
    assert ablations == {"audit:gold-without-textkit/case.py#1": "resolved", "audit:gold-without-textkit/case.py#2": "not_resolved"}


@pytest.mark.slow
def test_a_task_with_a_flaky_test_is_weak() -> None:
    report = run_audit(task("flaky"), TEXTKIT, repeats=3, timeout=120.0)
    assert report.complete, report.failures
    assert report.kinds() == ["flaky_test"] and report.disposition == "weak", report.to_dict()
    evidence = report.findings[0].evidence
    assert evidence["test"] == "tests/test_counter.py::test_every_other_run" and evidence["gate"] == "PASS_TO_PASS"
    assert evidence["outcomes"] == {"base": ["passed", "failed", "passed"], "gold": ["passed", "failed", "passed"]}
    assert [len(seeds) for seeds in evidence["seeds"].values()] == [3, 3]


@pytest.mark.slow
def test_a_task_whose_statement_leaks_the_fix_is_weak() -> None:
    report = run_audit(task("leaky"), TEXTKIT, repeats=1, timeout=120.0)
    assert report.complete, report.failures
    assert report.kinds() == ["solution_leak"] and report.disposition == "weak", report.to_dict()
    assert report.findings[0].evidence == {"lines": [{"file": "textkit/wrap.py", "line": "return text[: width - len(ellipsis)] + ellipsis",
                                                      "field": "problem_statement"}]}  # fmt: skip


def test_fabricated_envelopes_carry_what_the_audit_reads() -> None:
    """The fake's envelopes have the runner's shape where the audit reads them."""
    result = fabricate(INTERVALS_INSTANCE, f2p="passed", flags=["x", "x"], dropped=["conftest.py"], reruns=[{}])
    used = GradingUsed.of("audit:t", b"", 1, result)
    assert (used.resolved, used.flags, used.dropped) == ("resolved", ("x",), ("conftest.py",))
    assert replace(used, reruns=2).to_dict()["reruns"] == 2


def test_a_generated_candidate_that_gave_no_verdict_or_did_not_apply_makes_the_audit_incomplete() -> None:
    instance = INTERVALS_INSTANCE

    def crashed_gold(request: GradeRequest) -> GradeResult:
        result = fabricate(instance, f2p="missing", reruns=[])
        result.envelope["candidate_no_verdict_reason"] = "the test run died before its session finished (exit code 1)"
        return result

    report, _ = fake_audit(instance, answers={"gold": crashed_gold})
    assert not report.complete and "gold_not_resolved" not in report.kinds()
    assert [f.failure_class for f in report.failures] == ["verifier"] and "gave no verdict" in report.failures[0].detail

    def unapplied(request: GradeRequest) -> GradeResult:
        return fabricate(instance, f2p="failed", failure_class="patch_apply")

    report, _ = fake_audit(instance, answers={"noop": unapplied})
    assert not report.complete and report.check("noop_patch").outcome == "incomplete"
    assert "did not apply" in report.failures[0].detail
