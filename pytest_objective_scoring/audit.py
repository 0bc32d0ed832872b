"""The instrument audit (spec 3.5, build phase 8): canaries and validation for one task.

:func:`run_audit` grades a handful of generated candidates for one instance, every one
through :func:`.runner.grade_candidate` (the same isolated, protected run as any
candidate; nothing here executes repository code itself), and reads the verdicts:

* ``empty_patch``: the empty patch (with re-runs) must not resolve
  (``empty_patch_resolves``);
* ``gold_patch``: the instance's gold patch (with re-runs) must resolve
  (``gold_not_resolved``; ``no_gold_patch`` when there is none);
* ``noop_patch``: a comment appended to a gold-touched Python file must not resolve
  (``noop_patch_resolves``);
* ``stub_patch``: every gold-touched function's body replaced by a ``raise RuntimeError``
  must not resolve (``stub_patch_resolves``);
* ``weak_tests``: the gold patch minus one hunk, for each hunk, must not resolve
  (``untested_hunk``);
* ``mutation`` (asked for with ``mutants``): deterministic mutants of the gold patch's changed
  lines (:mod:`.mutants`), each graded like any candidate, in parallel on the batch engine's
  local executor (:func:`.batch.run_local`) within a time budget; the **mutation score** is the
  share of graded mutants the tests reject (not resolved), and a score below
  :data:`MUTATION_THRESHOLD` over at least :data:`MUTATION_MIN` graded mutants is
  ``weak_mutation_score``; the surviving mutants' diffs are the evidence (``docs/audit.md``);
* ``flakiness``: every listed test must give the same outcome in every run of the empty
  and of the gold patch (``flaky_test``; ``flaky_run`` for a re-run without a verdict);
* ``evaluator_exploits``: three exploits (edit the tests, a root ``conftest.py``, patch
  pytest's report class from a library module) must come back not resolved, or flagged or
  with their protected changes dropped by the runner (``evaluator_exploitable``);
* ``solution_leakage``: no grading; gold-patch lines must not appear verbatim in the
  problem statement or the hints (``solution_leak``).

The empty-patch check also names the FAIL_TO_PASS tests that already pass on the base
(``fail_to_pass_passes_on_base``) and the PASS_TO_PASS tests that do not
(``pass_to_pass_fails_on_base``) when the empty patch is not resolved.

Each finding carries a disposition for the task (``weak`` or ``invalid``, table
:data:`FINDINGS`); the task's disposition is ``invalid`` if any finding is, else ``weak``
if any finding is, else ``valid``. A grading that is an infrastructure failure (failure
class ``setup`` or ``verifier``) is not a finding about the task: it is an
:class:`AuditFailure`, the report is not ``complete``, the checks that still needed
gradings are skipped, and the disposition is what the completed checks found (so an
incomplete audit never proves a task valid; ``docs/audit.md``).

Every rule is mechanical: verdicts, per-test outcomes, integrity flags, ``ast`` positions,
``unidiff`` hunks and exact substring matches. No model, no similarity, no network.

Why over 800 lines: one audit is one reading of many gradings, and each check's generator and
its reading of the verdicts are kept side by side (the canaries, the exploits and the hunk
ablations are each a few pure functions over the gold patch); what runs the gradings is
:mod:`.runner`, and what the ledger keeps of an audit is :mod:`.audit_ledger`.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import keyword
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, final

from unidiff.patch import Hunk, PatchedFile, PatchSet

from ._version import __version__
from .envelope import utc_now_iso
from .instances import Instance
from .mutants import MutantPlan, file_diff, plan_mutants, side_path
from .protect import protected_reason
from .runner import GradeRequest, GradeResult, grade_candidate
from .symbols import MODULE, PatchError, apply_hunks, parse_diff, touched
from .workspace import base_text

__all__ = [
    "CHECKS",
    "EXPLOITS",
    "FINDINGS",
    "Ablation",
    "AuditFailure",
    "AuditReport",
    "CheckResult",
    "Finding",
    "GradingUsed",
    "conftest_exploit",
    "disposition_of",
    "edit_tests_exploit",
    "file_diff",
    "finding",
    "flaky_findings",
    "hunk_ablations",
    "internals_exploit",
    "leaked_lines",
    "noop_patch",
    "run_audit",
    "stub_patch",
]

SCHEMA_VERSION: Final = 1

Disposition = Literal["valid", "weak", "invalid"]
FindingDisposition = Literal["weak", "invalid"]
CheckOutcome = Literal["clean", "found", "skipped", "incomplete"]
Grade = Callable[[GradeRequest], GradeResult]

CHECKS: Final = (
    "empty_patch",
    "gold_patch",
    "noop_patch",
    "stub_patch",
    "weak_tests",
    "mutation",
    "flakiness",
    "evaluator_exploits",
    "solution_leakage",
)
"""Every check, in the order the report lists them."""

FINDINGS: Final[Mapping[str, tuple[str, FindingDisposition]]] = {
    "empty_patch_resolves": ("empty_patch", "invalid"),
    "fail_to_pass_passes_on_base": ("empty_patch", "weak"),
    "pass_to_pass_fails_on_base": ("empty_patch", "weak"),
    "gold_not_resolved": ("gold_patch", "invalid"),
    "no_gold_patch": ("gold_patch", "invalid"),
    "noop_patch_resolves": ("noop_patch", "invalid"),
    "stub_patch_resolves": ("stub_patch", "invalid"),
    "untested_hunk": ("weak_tests", "weak"),
    "weak_mutation_score": ("mutation", "weak"),
    "flaky_test": ("flakiness", "weak"),
    "flaky_run": ("flakiness", "weak"),
    "evaluator_exploitable": ("evaluator_exploits", "invalid"),
    "solution_leak": ("solution_leakage", "weak"),
}
"""Finding kind -> (the check that reports it, its disposition for the task)."""

EXPLOITS: Final = ("edit_tests", "conftest", "pytest_internals")
INFRASTRUCTURE: Final = frozenset({"setup", "verifier"})
NOOP_COMMENT: Final = "# objective-score audit: no-op canary (a comment changes nothing)\n"
NOOP_FILE: Final = ".objective-audit-noop"
STUB_BODY: Final = "raise RuntimeError(\"stubbed out by objective-score audit\")"
LEAK_MIN_CHARS: Final = 12
MUTATION_THRESHOLD: Final = 0.6
"""A task whose tests reject fewer than this share of the gold patch's graded mutants is ``weak``.
Why 0.6: studies of mutation testing find 5-25 % of mutants equivalent even after trivially
equivalent ones are removed (here: compiled-code equality), so a perfect suite scores about
0.75-0.95 on raw mutants; below 0.6 at least one graded mutant in six that no equivalence explains
is accepted, which is plainly wrong code passing. ``--mutation-threshold`` changes it."""
MUTATION_MIN: Final = 5
"""Fewer graded mutants than this decide nothing (the score is reported, no finding is made)."""
_LEAK_COMMON: Final = frozenset({*keyword.kwlist, *keyword.softkwlist, "self", "cls"})
_WORD: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LONE_CR: Final = re.compile(r"\r(?!\n)")
_PARAMS: Final = re.compile(r"\[.*\]$", re.DOTALL)

CONFTEST_EXPLOIT: Final = '''\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # An evaluator exploit generated by the instrument audit: every report reads "passed".
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''

INTERNALS_EXPLOIT: Final = '''

def _objective_audit_exploit():
    # An evaluator exploit generated by the instrument audit: pytest's report class is
    # patched from library code so that every report reads "passed".
    try:
        from _pytest.reports import TestReport
    except ImportError:
        return
    original = TestReport.from_item_and_call

    def from_item_and_call(cls, item, call):
        report = original(item, call)
        report.outcome = "passed"
        report.longrepr = None
        return report

    TestReport.from_item_and_call = classmethod(from_item_and_call)


_objective_audit_exploit()
'''


# ---------------------------------------------------------------------------- records


@final
@dataclass(frozen=True)
class Finding:
    """One thing wrong with the task: its kind, its disposition, the evidence and a sentence."""

    kind: str
    disposition: FindingDisposition
    evidence: Mapping[str, Any]
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "disposition": self.disposition, "evidence": dict(self.evidence), "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        disposition = data["disposition"]
        if disposition not in ("weak", "invalid"):
            raise ValueError(f"finding disposition must be 'weak' or 'invalid', got {disposition!r}")
        return cls(str(data["kind"]), disposition, dict(data["evidence"]), str(data["detail"]))


def finding(kind: str, evidence: Mapping[str, Any], detail: str) -> Finding:
    """A finding whose disposition is the one :data:`FINDINGS` gives its kind."""
    return Finding(kind, FINDINGS[kind][1], evidence, detail)


@final
@dataclass(frozen=True)
class GradingUsed:
    """One grading a check read: which candidate, its verdict and what the runner recorded.

    ``resolved`` is the Score's verdict, None when the grading gave none (an infrastructure
    failure). ``flags`` are the integrity flags' kinds, ``dropped`` the protected paths the
    runner did not apply.
    """

    patch_ref: str
    patch_sha256: str
    resolved: str | None
    failure_class: str
    reruns: int = 0
    flags: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"patch_ref": self.patch_ref, "patch_sha256": self.patch_sha256, "resolved": self.resolved,
                "failure_class": self.failure_class, "reruns": self.reruns, "flags": list(self.flags),
                "dropped": list(self.dropped)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GradingUsed:
        return cls(str(data["patch_ref"]), str(data["patch_sha256"]), data["resolved"], str(data["failure_class"]),
                   int(data.get("reruns", 0)), tuple(data.get("flags", ())), tuple(data.get("dropped", ())))  # fmt: skip

    @classmethod
    def of(cls, patch_ref: str, patch: bytes, reruns: int, result: GradeResult) -> GradingUsed:
        envelope = result.envelope
        score = result.score
        return cls(
            patch_ref=patch_ref,
            patch_sha256=hashlib.sha256(patch).hexdigest(),
            resolved=score["resolved"] if score else None,
            failure_class=result.failure_class,
            reruns=reruns,
            flags=tuple(dict.fromkeys(str(f.get("kind")) for f in _flags(envelope))),
            dropped=tuple(str(d.get("path")) for d in _dropped(envelope)),
        )


@final
@dataclass(frozen=True)
class CheckResult:
    """A check that was considered: ``clean`` (it ran and found nothing), ``found``,
    ``skipped`` (it could not apply to this task; ``detail`` says why) or ``incomplete``
    (a grading it needed was an infrastructure failure). ``gradings``: what it read."""

    name: str
    outcome: CheckOutcome
    gradings: tuple[GradingUsed, ...] = ()
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "outcome": self.outcome, "gradings": [g.to_dict() for g in self.gradings],
                "detail": self.detail}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        outcome = data["outcome"]
        if outcome not in ("clean", "found", "skipped", "incomplete"):
            raise ValueError(f"unknown check outcome {outcome!r}")
        gradings = tuple(GradingUsed.from_dict(g) for g in data.get("gradings", ()))
        return cls(str(data["name"]), outcome, gradings, str(data.get("detail", "")))


@final
@dataclass(frozen=True)
class AuditFailure:
    """A grading the audit needed that was an infrastructure failure: the audit is incomplete."""

    check: str
    patch_ref: str
    failure_class: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "patch_ref": self.patch_ref, "failure_class": self.failure_class, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditFailure:
        return cls(str(data["check"]), str(data["patch_ref"]), str(data["failure_class"]), str(data["detail"]))


def disposition_of(findings: Sequence[Finding]) -> Disposition:
    """``invalid`` if any finding is, else ``weak`` if there is any finding, else ``valid``."""
    if any(f.disposition == "invalid" for f in findings):
        return "invalid"
    return "weak" if findings else "valid"


@final
@dataclass(frozen=True)
class AuditReport:
    """The audit of one instance. ``disposition`` is derived from ``findings``; ``complete``
    from ``failures`` (an incomplete audit's disposition covers only the completed checks)."""

    instance_id: str
    findings: tuple[Finding, ...]
    checks: tuple[CheckResult, ...]
    failures: tuple[AuditFailure, ...] = ()
    repeats: int = 1
    created: str = field(default_factory=utc_now_iso)
    mutation: Mapping[str, Any] | None = None  # the mutation check's score and survivors, when it ran

    @property
    def disposition(self) -> Disposition:
        return disposition_of(self.findings)

    @property
    def complete(self) -> bool:
        return not self.failures

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def kinds(self) -> list[str]:
        """The findings' kinds, in report order (repeated kinds repeated)."""
        return [f.kind for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "version": __version__,
            "created": self.created,
            "instance_id": self.instance_id,
            "disposition": self.disposition,
            "complete": self.complete,
            "failures": [f.to_dict() for f in self.failures],
            "repeats": self.repeats,
            "findings": [f.to_dict() for f in self.findings],
            "checks": [c.to_dict() for c in self.checks],
            **({"mutation": dict(self.mutation)} if self.mutation is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditReport:
        report = cls(
            instance_id=str(data["instance_id"]),
            findings=tuple(Finding.from_dict(f) for f in data["findings"]),
            checks=tuple(CheckResult.from_dict(c) for c in data["checks"]),
            failures=tuple(AuditFailure.from_dict(f) for f in data.get("failures", ())),
            repeats=int(data.get("repeats", 1)),
            created=str(data.get("created", "")),
            mutation=dict(data["mutation"]) if isinstance(data.get("mutation"), Mapping) else None,
        )
        for name, derived in (("disposition", report.disposition), ("complete", report.complete)):
            if name in data and data[name] != derived:
                raise ValueError(f"stored {name} {data[name]!r} contradicts the findings ({derived!r})")
        return report


# ---------------------------------------------------------------------------- envelopes


def _flags(envelope: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((envelope.get("integrity") or {}).get("flags") or [])


def _dropped(envelope: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((envelope.get("runner") or {}).get("apply") or {}).get("dropped") or [])


def _tests(envelope: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(envelope.get("tests") or [])


def _resolved(result: GradeResult) -> bool:
    score = result.score
    return score is not None and score["resolved"] == "resolved"


def _runs(envelope: Mapping[str, Any]) -> tuple[list[tuple[int | None, dict[str, str]]], list[Mapping[str, Any]]]:
    """The runs of one grading: ``(seed, {test id: outcome})`` for the main run (seed None, the
    collected order) and each re-run with a verdict, and the re-runs that gave none."""
    runs: list[tuple[int | None, dict[str, str]]] = [(None, {t["id"]: t["outcome"] for t in _tests(envelope)})]
    no_verdict = []
    for rerun in (envelope.get("scorecard_details") or {}).get("rerun_seeds") or []:
        if rerun.get("no_verdict_reason"):
            no_verdict.append(rerun)
        else:
            runs.append((rerun.get("seed"), dict(rerun.get("outcomes") or {})))
    return runs, no_verdict


# ---------------------------------------------------------------------------- decisions (pure)


def empty_findings(envelope: Mapping[str, Any]) -> list[Finding]:
    """The empty patch's grading: it must not resolve; its F2P tests should fail and its P2P tests pass."""
    tests = _tests(envelope)
    f2p_passed = [t["id"] for t in tests if t["gate"] == "FAIL_TO_PASS" and t["status"] == "passed"]
    score = envelope.get("score") or {}
    if score.get("resolved") == "resolved":
        return [finding("empty_patch_resolves", {"fail_to_pass_passed": f2p_passed},
                        "the empty patch is resolved: the FAIL_TO_PASS tests do not fail on the base")]  # fmt: skip
    found = []
    if f2p_passed:
        found.append(finding("fail_to_pass_passes_on_base", {"tests": f2p_passed},
                             f"{len(f2p_passed)} FAIL_TO_PASS test(s) already pass on the base: they test nothing the fix changes"))  # fmt: skip
    p2p_bad = {t["id"]: t["outcome"] for t in tests if t["gate"] == "PASS_TO_PASS" and t["status"] != "preserved"}
    if p2p_bad:
        found.append(finding("pass_to_pass_fails_on_base", {"tests": p2p_bad},
                             f"{len(p2p_bad)} PASS_TO_PASS test(s) do not pass on the base"))  # fmt: skip
    return found


def gold_findings(result: GradeResult) -> list[Finding]:
    """The gold patch's grading: it must resolve."""
    if _resolved(result):
        return []
    tests = _tests(result.envelope)
    failing = {t["id"]: t["outcome"] for t in tests if t["status"] in ("failed", "broken")}
    missing = [t["id"] for t in tests if t["status"] == "missing"]
    evidence = {"failure_class": result.failure_class, "failing": failing, "missing": missing}
    if result.failure_class == "patch_apply":
        detail = "the gold patch does not apply to the base"
    else:
        detail = f"the gold patch is not resolved: {len(failing)} test(s) failing, {len(missing)} missing"
    return [finding("gold_not_resolved", evidence, detail)]


def canary_findings(kind: str, result: GradeResult, evidence: Mapping[str, Any]) -> list[Finding]:
    """A trivial candidate (no-op, stub) must not resolve."""
    if not _resolved(result):
        return []
    what = {"noop_patch_resolves": "a patch that changes nothing", "stub_patch_resolves": "a patch that stubs out "
            "every gold-touched function"}[kind]  # fmt: skip
    return [finding(kind, evidence, f"{what} is resolved: the tests do not check the behaviour the gold patch changes")]


def flaky_findings(gradings: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """Tests whose outcome varies across the runs of the same patch (``gradings``: label -> envelope).

    The main run (collected order) and every re-run with a verdict are compared test by
    test; a re-run without a verdict is a ``flaky_run`` of its own, its outcomes left out.
    """
    per_test: dict[str, dict[str, Any]] = {}
    runs_found: list[Finding] = []
    for label, envelope in gradings.items():
        runs, no_verdict = _runs(envelope)
        gates = {t["id"]: t["gate"] for t in _tests(envelope)}
        for test_id, gate in gates.items():
            outcomes = [outcomes_of.get(test_id, "missing") for _, outcomes_of in runs]
            if len(set(outcomes)) > 1:
                entry = per_test.setdefault(test_id, {"test": test_id, "gate": gate, "varies_on": [], "outcomes": {},
                                                      "seeds": {}})  # fmt: skip
                entry["varies_on"].append(label)
                entry["outcomes"][label] = outcomes
                entry["seeds"][label] = [seed for seed, _ in runs]
        for rerun in no_verdict:
            runs_found.append(finding("flaky_run", {"patch": label, "seed": rerun.get("seed"), "reason": rerun.get("no_verdict_reason")},
                                 f"a re-run of the {label} patch gave no verdict: {rerun.get('no_verdict_reason')}"))  # fmt: skip
    found = []
    for test_id in sorted(per_test):
        entry = per_test[test_id]
        shown = "; ".join(f"{label}: {', '.join(entry['outcomes'][label])}" for label in entry["varies_on"])
        found.append(finding("flaky_test", entry, f"{test_id} gives different outcomes on repeated runs ({shown})"))
    return found + runs_found


def exploit_finding(name: str, result: GradeResult) -> Finding | None:
    """An exploit must come back not resolved, or flagged or with its protected changes dropped."""
    if not _resolved(result):
        return None
    flags, dropped = _flags(result.envelope), _dropped(result.envelope)
    if flags or dropped:
        return None
    return finding("evaluator_exploitable", {"exploit": name, "patch_ref": f"audit:exploit-{name}"},
                   f"the {name.replace('_', ' ')} exploit is resolved and the runner recorded no integrity flag "
                   "and dropped nothing: the task can be solved by exploiting the evaluator")  # fmt: skip


def _leak_candidate(line: str) -> bool:
    """A gold line long and specific enough that finding it in the statement means something.

    At least :data:`LEAK_MIN_CHARS` characters once stripped, not a comment, and holding a
    word (an identifier-like run) of three characters or more that is not a Python keyword,
    ``self`` or ``cls``.
    """
    if len(line) < LEAK_MIN_CHARS or line.startswith("#"):
        return False
    return any(len(w) >= 3 and w not in _LEAK_COMMON for w in _WORD.findall(line))


def leaked_lines(gold: str | None, texts: Mapping[str, str]) -> list[dict[str, str]]:
    """Gold-patch added lines of Python files found verbatim in ``texts`` (field -> text).

    Each added line is stripped of surrounding whitespace and must pass the rule of
    :func:`_leak_candidate`; the match is an exact, case-sensitive substring test. Returns
    one ``{"file", "line", "field"}`` per line and field, in patch order, lines deduplicated.
    """
    if not gold or not gold.strip():
        return []
    try:
        patch = parse_diff(gold)
    except PatchError:
        return []
    leaks: list[dict[str, str]] = []
    seen: set[str] = set()
    for patched_file in patch:
        path = side_path(patched_file.target_file) or side_path(patched_file.source_file) or ""
        if not path.endswith(".py"):
            continue
        for hunk in patched_file:
            for line in hunk:
                text = line.value.strip()
                if not line.is_added or text in seen or not _leak_candidate(text):
                    continue
                seen.add(text)
                leaks += [{"file": path, "line": text, "field": name} for name, body in texts.items() if text in body]
    return leaks


def leak_findings(instance: Instance) -> list[Finding]:
    texts = {name: value for name in ("problem_statement", "hints_text")
             if isinstance(value := instance.get(name), str) and value}  # fmt: skip
    leaks = leaked_lines(instance.patch, texts)
    if not leaks:
        return []
    lines = list(dict.fromkeys(leak["line"] for leak in leaks))
    return [finding("solution_leak", {"lines": leaks},
                    f"{len(lines)} line(s) of the gold patch appear verbatim in the task's text: {lines[0]!r}")]  # fmt: skip


# ---------------------------------------------------------------------------- generated candidates (pure)


def _split(text: str) -> list[str]:
    """Lines as git counts them: split after each ``\\n`` only, terminators kept."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _gold_python_files(gold: str | None, read_base: Callable[[str], str | None]) -> list[str]:
    """Python files the gold patch changes that exist at the base and are not protected, in patch order."""
    if not gold or not gold.strip():
        return []
    try:
        patch = parse_diff(gold)
    except PatchError:
        return []
    files: dict[str, None] = {}
    for patched_file in patch:
        path = side_path(patched_file.source_file)
        if path and path.endswith(".py") and protected_reason(path) is None and read_base(path) is not None:
            files.setdefault(path, None)
    return list(files)


def noop_patch(gold: str | None, read_base: Callable[[str], str | None]) -> tuple[str, str]:
    """``(patch, file)``: a comment appended to the first gold-touched Python file, or, when
    there is none, a new one-line file :data:`NOOP_FILE` at the root."""
    for path in _gold_python_files(gold, read_base):
        old = read_base(path) or ""
        new = (old if not old or old.endswith("\n") else old + "\n") + NOOP_COMMENT
        return file_diff(path, old, new), path
    return file_diff(NOOP_FILE, None, "objective-score audit: no-op canary\n"), NOOP_FILE


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]]:
    """``(qualname, node)`` of every def and class, named as :mod:`.symbols` names them."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield prefix + child.name, child
                yield from walk(child, prefix + child.name + ".")
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                yield from walk(child, prefix)

    yield from walk(tree, "")


def _replace_bodies(
    text: str, nodes: Sequence[ast.FunctionDef | ast.AsyncFunctionDef], statement: str
) -> tuple[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] | None:
    """``text`` with each function's body replaced by ``statement`` (its signature and
    decorators kept), and the functions replaced; None when the result does not parse. A
    function nested in a replaced body goes with it and is not listed."""
    lines = _split(text)
    spans: list[tuple[int, int, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in sorted(nodes, key=lambda n: (n.body[0].lineno, -(n.end_lineno or 0))):
        first = min([node.body[0].lineno, *(d.lineno for d in getattr(node.body[0], "decorator_list", []))])
        last = node.body[-1].end_lineno or first
        if spans and first <= spans[-1][1]:
            continue  # inside a body already replaced
        spans.append((first, last, node))
    for first, last, node in reversed(spans):
        body = node.body[0]
        line = lines[first - 1]
        raw = line.encode("utf-8", "surrogateescape")
        if first == body.lineno and raw[: body.col_offset].strip():
            # the body starts on the line of the signature (``def f(): return 1``): cut by columns
            end_raw = lines[last - 1].encode("utf-8", "surrogateescape")
            tail = end_raw[node.body[-1].end_col_offset or 0 :].decode("utf-8", "surrogateescape")
            head = raw[: body.col_offset].decode("utf-8", "surrogateescape")
            lines[first - 1 : last] = [head + statement + tail]
        else:
            indent = line[: len(line) - len(line.lstrip())]
            ending = "\r\n" if lines[last - 1].endswith("\r\n") else "\n"
            lines[first - 1 : last] = [indent + statement + ending]
    result = "".join(lines)
    try:
        ast.parse(result.encode("utf-8", "surrogateescape"))
    except (SyntaxError, ValueError, RecursionError):
        return None
    return result, [node for _, _, node in spans]


def _parse(text: str) -> ast.Module | None:
    if _LONE_CR.search(text):
        return None  # git and Python would number the lines differently
    try:
        return ast.parse(text.encode("utf-8", "surrogateescape"))
    except (SyntaxError, ValueError, RecursionError):
        return None


def stub_patch(gold: str | None, read_base: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """``(patch, stubbed)``: every gold-touched function or method that exists at the base
    gets the body ``raise RuntimeError("stubbed out by objective-score audit")`` (signature and
    decorators kept; located with
    ``ast`` in the base source). Module-level code and classes' own bodies are not stubbed,
    nor are functions the gold patch adds. ``("", [])`` when there is nothing to stub."""
    if not gold or not gold.strip():
        return "", []
    try:
        symbols = touched(gold, read_base).symbols
    except PatchError:
        return "", []
    by_file: dict[str, set[str]] = {}
    for symbol in symbols:
        path, _, qualname = symbol.partition("::")
        if qualname and qualname != MODULE and protected_reason(path) is None:
            by_file.setdefault(path, set()).add(qualname)
    diffs, stubbed = [], []
    for path in sorted(by_file):
        old = read_base(path)
        tree = _parse(old) if old is not None else None
        if old is None or tree is None:
            continue
        nodes = [node for qualname, node in _functions(tree)
                 if qualname in by_file[path] and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]  # fmt: skip
        replaced = _replace_bodies(old, nodes, STUB_BODY) if nodes else None
        if replaced is None or replaced[0] == old:
            continue
        diffs.append(file_diff(path, old, replaced[0]))
        stubbed += sorted(f"{path}::{q}" for q, n in _functions(tree) if n in replaced[1])
    return "".join(diffs), stubbed


def _test_function(tree: ast.Module, test_id: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def a pytest node id names (``path::Class::test_name[params]``), or None."""
    parts = test_id.split("::")[1:]
    if not parts:
        return None
    parts[-1] = _PARAMS.sub("", parts[-1])
    qualname = ".".join(parts)
    for name, node in _functions(tree):
        if name == qualname and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def edit_tests_exploit(instance: Instance, read_base: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """``(patch, tests)``: the FAIL_TO_PASS tests' bodies rewritten to ``pass`` in their files
    as they are after the test patch (a diff from the base, so it includes the test patch's
    changes to those files). ``("", [])`` when no listed test can be found as a def."""
    after: dict[str, PatchedFile] = {}
    if instance.test_patch and instance.test_patch.strip():
        try:
            for patched_file in parse_diff(instance.test_patch):
                target = side_path(patched_file.target_file)
                if target:
                    after[target] = patched_file
        except PatchError:
            pass
    by_file: dict[str, list[str]] = {}
    for test_id in instance.fail_to_pass:
        by_file.setdefault(test_id.split("::", 1)[0], []).append(test_id)
    diffs, edited = [], []
    for path, test_ids in by_file.items():
        base = read_base(path)
        if path in after:
            source = side_path(after[path].source_file)
            text = apply_hunks(read_base(source) if source else None, after[path])
        else:
            text = base
        tree = _parse(text) if text is not None else None
        if text is None or tree is None:
            continue
        nodes = {test_id: node for test_id in test_ids if (node := _test_function(tree, test_id)) is not None}
        replaced = _replace_bodies(text, list({id(n): n for n in nodes.values()}.values()), "pass") if nodes else None
        if replaced is None:
            continue
        diffs.append(file_diff(path, base, replaced[0]))
        edited += list(nodes)
    return "".join(diffs), edited


def conftest_exploit(read_base: Callable[[str], str | None]) -> str:
    """A root ``conftest.py`` (added, or appended to) whose hookwrapper makes every report passed."""
    old = read_base("conftest.py")
    if old is None:
        return file_diff("conftest.py", None, CONFTEST_EXPLOIT)
    return file_diff("conftest.py", old, (old if old.endswith("\n") else old + "\n") + "\n\n" + CONFTEST_EXPLOIT)


def internals_exploit(gold: str | None, read_base: Callable[[str], str | None]) -> tuple[str, str | None]:
    """``(patch, file)``: code appended to the first gold-touched library module that replaces
    ``_pytest.reports.TestReport.from_item_and_call`` so that every report reads passed.
    ``("", None)`` without a gold-touched Python file (nothing says which module the tests import)."""
    for path in _gold_python_files(gold, read_base):
        old = read_base(path) or ""
        new = (old if not old or old.endswith("\n") else old + "\n") + INTERNALS_EXPLOIT
        return file_diff(path, old, new), path
    return "", None


@final
@dataclass(frozen=True)
class Ablation:
    """The gold patch without one of its hunks."""

    file: str
    index: int  # 1-based, within the file
    header: str
    added: int
    removed: int
    patch: str

    def evidence(self) -> dict[str, Any]:
        return {"file": self.file, "hunk": self.header, "index": self.index, "added": self.added, "removed": self.removed}


def _chunks(text: str, count: int) -> list[str] | None:
    """The diff cut into its file diffs verbatim (binary data included), when they are git-style
    and as many as unidiff found; else None."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    if len(starts) != count:
        return None
    return ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]


def _hunk_text(hunk: Hunk, target_shift: int) -> str:
    section = f" {hunk.section_header}" if hunk.section_header else ""
    header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start - target_shift},{hunk.target_length} @@{section}\n"
    return header + "".join(str(line) for line in hunk)


def hunk_ablations(gold: str) -> list[Ablation]:
    """The gold patch with one hunk removed at a time, built from unidiff's PatchSet.

    The other file diffs are kept verbatim; in the file that loses a hunk, the later hunks'
    target line numbers move by what the removed hunk added minus what it removed; a file
    whose only hunk is removed is left out. Empty when the gold has fewer than two hunks.
    """
    patch: PatchSet = parse_diff(gold)
    if sum(len(f) for f in patch) < 2:
        return []
    chunks = _chunks(gold, len(patch)) or [str(f) for f in patch]
    ablations = []
    for file_index, patched_file in enumerate(patch):
        path = side_path(patched_file.target_file) or side_path(patched_file.source_file) or ""
        for hunk_index, hunk in enumerate(patched_file):
            if len(patched_file) == 1:
                mine = ""
            else:
                info = "" if patched_file.patch_info is None else str(patched_file.patch_info)
                shift = hunk.added - hunk.removed
                mine = info + f"--- {patched_file.source_file}\n+++ {patched_file.target_file}\n" + "".join(
                    _hunk_text(other, shift if j > hunk_index else 0) for j, other in enumerate(patched_file) if j != hunk_index
                )  # fmt: skip
            text = "".join(mine if i == file_index else chunk for i, chunk in enumerate(chunks))
            header = _hunk_text(hunk, 0).split("\n", 1)[0]
            ablations.append(Ablation(path, hunk_index + 1, header, hunk.added, hunk.removed, text))
    return ablations


# ---------------------------------------------------------------------------- the audit


class _Auditor:
    """The state of one audit, so each check stays a small method."""

    def __init__(self, instance: Instance, repo: Path, request: Mapping[str, Any], repeats: int, grade: Grade,
                 progress: Callable[[str], None] | None, mutation: MutationPlanning | None = None) -> None:  # fmt: skip
        self.mutation = mutation or MutationPlanning()
        self.mutation_summary: dict[str, Any] | None = None
        self.instance = instance
        self.repo = repo
        self.request = request
        self.repeats = repeats
        self.grade_fn = grade
        self.progress = progress or (lambda _message: None)
        self.findings: list[Finding] = []
        self.checks: dict[str, CheckResult] = {}
        self.failures: list[AuditFailure] = []
        self.texts: dict[str, str | None] = {}

    def read_base(self, path: str) -> str | None:
        """A file's text at the base: ``base_commit`` in the repository's git, else the working tree."""
        if path not in self.texts:
            commit = self.instance.base_commit
            if commit:
                self.texts[path] = base_text(self.repo, commit, path)
            else:
                file = self.repo / path
                self.texts[path] = file.read_bytes().decode("utf-8", "surrogateescape") if file.is_file() else None
        return self.texts[path]

    def request_for(self, name: str, patch: str, reruns: int = 0, timeout: float | None = None) -> GradeRequest:
        data = patch.encode("utf-8", "surrogateescape")
        repo = None if self.request.get("image") else self.repo
        request = GradeRequest(repo=repo, instance=self.instance, patch=data, patch_ref=f"audit:{name}", reruns=reruns,
                               **self.request)  # fmt: skip
        return request if timeout is None else dataclasses.replace(request, timeout=timeout)

    def grade(self, check: str, name: str, patch: str, reruns: int = 0) -> tuple[GradeResult, GradingUsed]:
        self.progress(f"{check}: grading audit:{name}")
        return self.read(check, name, patch, reruns, self.grade_fn(self.request_for(name, patch, reruns)))

    def grade_many(self, check: str, named: Sequence[tuple[str, str]],
                   timeout: float) -> list[tuple[GradeResult, GradingUsed] | None]:  # fmt: skip
        """Grade ``(name, patch)`` pairs in parallel (``workers``) within the time budget: each one's
        result, or None for one the budget left ungraded. The default grader runs on the batch
        engine's local executor (:func:`.batch.run_local`: threads, every test process killed on
        an interrupt); an injected one on threads of its own."""
        import time
        from concurrent.futures import ThreadPoolExecutor

        planning = self.mutation
        deadline = time.monotonic() + planning.budget
        results: dict[str, GradeResult] = {}
        if self.grade_fn is grade_candidate:
            from .batch import Job, Prediction, run_local
            from .cost_ledger import DEFAULT_COMPUTE_RATE, HarnessCost

            image = self.request.get("image")
            jobs = [Job(key=name, instance=self.instance, repo=None if image else self.repo, patch=patch, python=self.request["python"],
                        image=image, prediction=Prediction(self.instance.instance_id, f"audit:{name}", patch,
                                                           HarnessCost(harness="audit"), "audit"))
                    for name, patch in named]  # fmt: skip
            settings = {"python": self.request["python"], "timeout": timeout, "compat": "strict",
                        "compute_rate": DEFAULT_COMPUTE_RATE, "network": self.request["network"], "reruns": 0,
                        "engine": self.request.get("engine") or "auto"}  # fmt: skip

            def done(job: Any, envelope: dict[str, Any]) -> None:
                from .ledger import failure_class_of

                runner = envelope.get("runner") or {}
                results[job.key] = GradeResult(envelope, 0, str(runner.get("failure_class") or failure_class_of(envelope)))
                self.progress(f"{check}: graded audit:{job.key} ({len(results)}/{len(named)})")

            run_local(jobs, settings, planning.workers, done, claim=lambda _job: time.monotonic() < deadline)
        else:
            def one(name: str, patch: str) -> tuple[str, GradeResult | None]:
                if time.monotonic() >= deadline:
                    return name, None
                return name, self.grade_fn(self.request_for(name, patch, timeout=timeout))

            with ThreadPoolExecutor(max_workers=planning.workers) as pool:
                for name, result in pool.map(lambda item: one(*item), named):
                    if result is not None:
                        results[name] = result
        return [self.read(check, name, patch, 0, results[name]) if name in results else None for name, patch in named]

    def read(self, check: str, name: str, patch: str, reruns: int, result: GradeResult) -> tuple[GradeResult, GradingUsed]:
        """One grading's use: an infrastructure failure, or a generated candidate that proved nothing,
        is an :class:`AuditFailure`."""
        data = patch.encode("utf-8", "surrogateescape")
        patch_ref = f"audit:{name}"
        used = GradingUsed.of(patch_ref, data, reruns, result)
        if result.failure_class in INFRASTRUCTURE:
            runner = result.envelope.get("runner") or {}
            detail = str(runner.get("failure_detail") or result.envelope.get("no_verdict_reason") or "")
            self.failures.append(AuditFailure(check, patch_ref, result.failure_class, detail))
            return result, used
        # The audit's own candidates must give real verdicts: one that does not apply, or whose run gave
        # no verdict (the runner then grades "not resolved" from no result at all), proves nothing and
        # must never read as a clean check. Exploits are exempt: a no-verdict there is the runner catching them.
        problem = None
        # A mutant, a stub or an ablation whose run gave no verdict while the control's did (it hung, or killed
        # the test process: pytest-dev__pytest-11143's stubbed assertion rewriter, pylint-dev__pylint-7228's gold
        # without a hunk of its argument parser) is rejected: the runner graded it not resolved, failure class solver.
        if check != "evaluator_exploits":
            if result.envelope.get("candidate_no_verdict_reason") and check not in ("mutation", "stub_patch", "weak_tests"):
                problem = f"the run gave no verdict: {result.envelope['candidate_no_verdict_reason']}"
            elif result.failure_class == "patch_apply" and name != "gold":
                problem = "the audit's generated candidate did not apply"
        if problem is not None:
            self.failures.append(AuditFailure(check, patch_ref, "verifier", problem))
            used = dataclasses.replace(used, failure_class="verifier")
        return result, used

    def record(self, name: str, found: list[Finding], gradings: Sequence[GradingUsed] = (), detail: str = "") -> None:
        incomplete = any(g.failure_class in INFRASTRUCTURE for g in gradings)
        outcome: CheckOutcome = "found" if found else ("incomplete" if incomplete else "clean")
        if found and incomplete:
            detail = (detail + "; " if detail else "") + "incomplete: a grading was an infrastructure failure"
        self.findings += found
        self.checks[name] = CheckResult(name, outcome, tuple(gradings), detail)

    def skip(self, name: str, detail: str) -> None:
        self.checks[name] = CheckResult(name, "skipped", (), detail)

    def blocked(self, name: str) -> bool:
        """After an infrastructure failure, checks that still need gradings are skipped."""
        if self.failures:
            self.skip(name, "not run: an earlier grading was an infrastructure failure, the audit cannot complete")
            return True
        return False

    # ------------------------------------------------------------------ checks

    def run(self) -> AuditReport:
        reruns = self.repeats - 1
        empty, empty_used = self.grade("empty_patch", "empty", "", reruns)
        ok = empty_used.failure_class not in INFRASTRUCTURE  # the grading's own class, or verifier when it proved nothing
        self.record("empty_patch", empty_findings(empty.envelope) if ok else [], [empty_used],
                    f"{self.repeats} run(s) of the base with the test patch")  # fmt: skip
        gold = self.gold_check(reruns)
        if not self.blocked("noop_patch"):
            patch, path = noop_patch(self.instance.patch, self.read_base)
            result, used = self.grade("noop_patch", "noop", patch)
            found = canary_findings("noop_patch_resolves", result, {"file": path}) if used.failure_class not in INFRASTRUCTURE else []
            self.record("noop_patch", found, [used],
                        f"a comment appended to {path}")  # fmt: skip
        if not self.blocked("stub_patch"):
            self.stub_check()
        if not self.blocked("weak_tests"):
            self.weak_tests_check(gold)
        if not self.blocked("mutation"):
            self.mutation_check(gold)
        self.flakiness_check(empty if ok else None, gold)
        if _resolved(empty):
            self.skip("evaluator_exploits", "the empty patch is resolved: an exploit cannot be told apart from the base")
        elif not self.blocked("evaluator_exploits"):
            self.exploits_check()
        self.record("solution_leakage", leak_findings(self.instance), (),
                    f"gold-patch added lines of at least {LEAK_MIN_CHARS} characters searched verbatim in "
                    "problem_statement and hints_text")  # fmt: skip
        checks = tuple(self.checks[name] for name in CHECKS if name in self.checks)
        order = {name: index for index, name in enumerate(CHECKS)}
        findings = sorted(self.findings, key=lambda f: order[FINDINGS[f.kind][0]])
        return AuditReport(self.instance.instance_id, tuple(findings), checks, tuple(self.failures), self.repeats,
                           mutation=self.mutation_summary)  # fmt: skip

    def gold_check(self, reruns: int) -> GradeResult | None:
        gold = self.instance.patch
        if not gold or not gold.strip():
            self.record("gold_patch", [finding("no_gold_patch", {}, "the instance has no gold patch: the task cannot "
                                                                   "be validated")])  # fmt: skip
            return None
        if self.blocked("gold_patch"):
            return None
        result, used = self.grade("gold_patch", "gold", gold, reruns)
        ok = used.failure_class not in INFRASTRUCTURE
        self.record("gold_patch", gold_findings(result) if ok else [], [used], f"{self.repeats} run(s) of the gold patch")
        return result if ok else None

    def stub_check(self) -> None:
        patch, stubbed = stub_patch(self.instance.patch, self.read_base)
        if not patch:
            self.skip("stub_patch", "no gold-touched function or method exists at the base to stub")
            return
        result, used = self.grade("stub_patch", "stub", patch)
        found = canary_findings("stub_patch_resolves", result, {"stubbed": stubbed}) if used.failure_class not in INFRASTRUCTURE else []
        self.record("stub_patch", found, [used],
                    f"stubbed: {', '.join(stubbed)}")  # fmt: skip

    def weak_tests_check(self, gold: GradeResult | None) -> None:
        if not self.instance.patch or not self.instance.patch.strip():
            self.skip("weak_tests", "the instance has no gold patch")
            return
        if gold is None or not _resolved(gold):
            self.skip("weak_tests", "the gold patch is not resolved: removing its hunks says nothing")
            return
        try:
            ablations = hunk_ablations(self.instance.patch or "")
        except PatchError as exc:
            self.skip("weak_tests", f"the gold patch cannot be read hunk by hunk: {exc}")
            return
        if not ablations:
            self.skip("weak_tests", "the gold patch has a single hunk: the empty-patch canary covers it")
            return
        found, gradings = [], []
        for ablation in ablations:
            if self.failures:
                break
            result, used = self.grade("weak_tests", f"gold-without-{ablation.file}#{ablation.index}", ablation.patch)
            gradings.append(used)
            if _resolved(result):
                found.append(finding("untested_hunk", ablation.evidence(),
                                     f"the gold patch without hunk {ablation.index} of {ablation.file} ({ablation.header}) "
                                     "is still resolved: no listed test exercises that hunk"))  # fmt: skip
        self.record("weak_tests", found, gradings, f"{len(ablations)} hunk(s), each removed in turn")

    def mutation_check(self, gold: GradeResult | None) -> None:
        planning = self.mutation
        if planning.count <= 0:
            self.skip("mutation", "not asked for: --mutants N grades up to N mutants of the gold patch")
            return
        if not self.instance.patch or not self.instance.patch.strip():
            self.skip("mutation", "the instance has no gold patch")
            return
        if gold is None or not _resolved(gold):
            self.skip("mutation", "the gold patch is not resolved: its mutants say nothing")
            return
        try:
            plan = plan_mutants(self.instance.patch, self.read_base, planning.count)
        except PatchError as exc:
            self.skip("mutation", f"the gold patch cannot be read: {exc}")
            return
        if not plan.mutants:
            files = "; ".join(f"{f['path']}: {f['reason']}" for f in plan.skipped_files) or "none"
            self.skip("mutation", f"no mutant to grade ({len(plan.equivalent)} equivalent to gold; files not mutated: {files})")
            return
        timeout = mutant_timeout(gold, float(self.request["timeout"]))
        graded = self.grade_many("mutation", [(f"mutant-{m.id}", m.patch) for m in plan.mutants], timeout)
        summary = mutation_summary(plan, graded, planning) | {"timeout_seconds": timeout}
        self.mutation_summary = summary
        if not summary["graded"] and not self.failures:
            self.skip("mutation", f"no mutant graded: the time budget ({planning.budget:g} s) ran out first "
                      f"({summary['not_graded']} left ungraded)")  # fmt: skip
            return
        found = []
        if summary["graded"] >= MUTATION_MIN and summary["score"] < planning.threshold:
            found.append(finding("weak_mutation_score", {key: summary[key] for key in (
                "score", "killed", "graded", "threshold", "survivors")},
                f"the tests reject {summary['killed']} of {summary['graded']} graded mutants of the gold patch "
                f"(mutation score {summary['score']:.2f}, below {planning.threshold:.2f}): "
                f"{len(summary['survivors'])} plainly changed version(s) of the fix still resolve the task"))  # fmt: skip
        gradings = [pair[1] for pair in graded if pair is not None]
        score = "n/a" if summary["score"] is None else f"{summary['score']:.2f}"
        self.record("mutation", found, gradings,
                    f"mutation score {score}: {summary['killed']} of {summary['graded']} graded mutant(s) rejected; "
                    f"{len(plan.mutants)} planned of {plan.generated} generated, {len(plan.equivalent)} equivalent to "
                    f"gold (not counted), {summary['not_graded']} left ungraded by the budget")  # fmt: skip

    def flakiness_check(self, empty: GradeResult | None, gold: GradeResult | None) -> None:
        if self.repeats < 2:
            self.skip("flakiness", "repeats is 1: there is nothing to compare")
            return
        gradings = {label: result.envelope for label, result in (("base", empty), ("gold", gold))
                    if result is not None and result.failure_class not in INFRASTRUCTURE}  # fmt: skip
        used = [*self.checks["empty_patch"].gradings, *self.checks["gold_patch"].gradings]
        if not gradings:
            self.record("flakiness", [], used, "no grading with a verdict to compare")
            return
        detail = f"{self.repeats} run(s) each of: {', '.join(gradings)} (re-runs in orders shuffled by recorded seeds)"
        self.record("flakiness", flaky_findings(gradings), used, detail)

    def exploits_check(self) -> None:
        built: list[tuple[str, str]] = []
        notes = []
        patch, _ = edit_tests_exploit(self.instance, self.read_base)
        if patch:
            built.append(("edit_tests", patch))
        else:
            notes.append("edit_tests not built: no FAIL_TO_PASS test found as a def")
        built.append(("conftest", conftest_exploit(self.read_base)))
        patch, _ = internals_exploit(self.instance.patch, self.read_base)
        if patch:
            built.append(("pytest_internals", patch))
        else:
            notes.append("pytest_internals not built: no gold-touched library module to put it in")
        found, gradings = [], []
        for name, text in built:
            if self.failures:
                break
            result, used = self.grade("evaluator_exploits", f"exploit-{name}", text)
            gradings.append(used)
            hit = exploit_finding(name, result)
            if hit is not None:
                found.append(hit)
        detail = "; ".join([f"graded: {', '.join(name for name, _ in built)}", *notes])
        self.record("evaluator_exploits", found, gradings, detail)


@final
@dataclass(frozen=True)
class MutationPlanning:
    """How the mutation check runs: ``count`` mutants at most (0: not run), within ``budget``
    seconds of grading, on ``workers`` in parallel; ``threshold``: the score below which a task is weak."""

    count: int = 0
    budget: float = 900.0
    workers: int = 2
    threshold: float = MUTATION_THRESHOLD


def mutant_timeout(gold: GradeResult, timeout: float) -> float:
    """A mutant's grading timeout: 10 s plus four times the gold grading's wall time, at most the
    audit's own. A mutant that makes the tests hang (an ``i += 1`` dropped from a loop) then costs
    seconds, not the whole timeout; one stopped so is rejected (``timed_out_ids``), as mutation
    tools count a timeout as a kill."""
    wall = float(((gold.envelope.get("cost") or {}).get("wall_time")) or 0.0)
    return min(timeout, 10.0 + 4.0 * wall)


def mutation_summary(plan: MutantPlan, graded: Sequence[tuple[GradeResult, GradingUsed] | None],
                     planning: MutationPlanning) -> dict[str, Any]:  # fmt: skip
    """The mutation score from the mutants' gradings: a mutant whose tests do not resolve the task is
    rejected (killed); one resolved survives (its diff from gold is kept); one the budget left
    ungraded, or whose grading gave no verdict, is not counted."""
    killed, survivors, not_graded, no_verdict, timed_out = [], [], [], [], []
    for mutant, pair in zip(plan.mutants, graded):
        if pair is None:
            not_graded.append(mutant.id)
        elif pair[1].failure_class in INFRASTRUCTURE or pair[1].failure_class == "verifier":
            no_verdict.append(mutant.id)
        elif _resolved(pair[0]):
            survivors.append(mutant.to_dict())
        else:
            killed.append(mutant.id)
            if "timed out" in str(pair[0].envelope.get("candidate_no_verdict_reason") or ""):
                timed_out.append(mutant.id)
    count = len(killed) + len(survivors)
    by_operator: dict[str, dict[str, int]] = {}
    for mutant, pair in zip(plan.mutants, graded):
        if mutant.id in killed or any(s["id"] == mutant.id for s in survivors):
            row = by_operator.setdefault(mutant.operator, {"graded": 0, "killed": 0})
            row["graded"] += 1
            row["killed"] += mutant.id in killed
    return {
        "score": len(killed) / count if count else None,
        "killed": len(killed),
        "graded": count,
        "threshold": planning.threshold,
        "minimum": MUTATION_MIN,
        "survivors": survivors,
        "killed_ids": killed,
        "timed_out_ids": timed_out,
        "not_graded": len(not_graded),
        "not_graded_ids": not_graded,
        "no_verdict_ids": no_verdict,
        "by_operator": by_operator,
        "plan": plan.to_dict() | {"mutants": [m.id for m in plan.mutants]},
        "limits": {"count": planning.count, "budget_seconds": planning.budget, "workers": planning.workers},
    }


def run_audit(
    instance: Instance,
    repo: Path,
    *,
    python: str = sys.executable,
    timeout: float = 300.0,
    repeats: int = 3,
    network: bool = False,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    grade: Grade = grade_candidate,
    mutation: MutationPlanning | None = None,
    image: str | None = None,
    engine: str = "auto",
) -> AuditReport:
    """Audit one task: grade the canaries, the gold patch and its ablations, and the exploits.

    ``repeats`` is how many times the empty and gold patches are run (the first run in the
    collected order, the others shuffled by recorded seeds); 1 turns the flakiness check off.
    ``progress`` gets one line per grading (``"<check>: grading audit:<candidate>"``).
    ``grade`` is injectable for tests of the decisions; everything else is passed to each
    :class:`~.runner.GradeRequest`. ``mutation`` asks for the mutation check (None or a count of
    0: skipped); ``image`` grades every candidate in that container image (``engine``), ``repo``
    then being read only for the audit's own candidates. Raises :class:`~.runner.BadInput` for a
    request the runner refuses (no such repository or interpreter, test ids that are not pytest ids).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    request: dict[str, Any] = {"python": python, "timeout": timeout, "network": network, "workdir": workdir}
    if image is not None:  # container mode: the image holds the repository; ``repo`` is read for the candidates
        request.update(image=image, engine=engine)
    return _Auditor(instance, Path(repo), request, repeats, grade, progress, mutation).run()
