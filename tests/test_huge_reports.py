"""Huge outcome files (``grade --from-report``): read in chunks, never whole.

Peak memory does not grow with the bytes around the tests; a long read says how far it is on
standard error; a pipe (``<(cat junit.xml)``) is read once; a named pipe nobody writes to, and a
device, are refused at once instead of blocking; and every verdict, note and error is the one reading
the whole file gave (the fixtures' verdicts are pinned below, taken before the chunked readers).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import reports
from pytest_objective_scoring.instances import parse_instance
from pytest_objective_scoring.reports import Progress, ReportError, grade_report

from .conftest import FIXTURES, ROOT
from .runner_helpers import run_cli_here

# --------------------------------------------------------------------------- verdicts unchanged

# sha256 (first 16 hex digits) of what grading each fixture report against each instance gave before
# the chunked readers (objective-score grade --from-report REPORT --instance INSTANCE --no-ledger --json),
# with --runner absent, the runner's own name and pytest, in strict and swebench modes: the status, the
# Score (but its time and version), every test's result, the summary, the session, the notes, the
# failure class, the exit status, or the error line. See verdicts() for what is compared.
BEFORE = {
    "junit/go/build-failed.xml|go-no-verdict.json": "7f048ca16e686ed0",
    "junit/go/build-failed.xml|go-not-resolved.json": "93a20e30e361cc9f",
    "junit/go/build-failed.xml|go-resolved.json": "29fd2a5195854ffa",
    "junit/go/report.xml|go-no-verdict.json": "11802be51d4df969",
    "junit/go/report.xml|go-not-resolved.json": "695b8cecbb2377e5",
    "junit/go/report.xml|go-resolved.json": "13dd13188af7d571",
    "junit/jest/junit-defaults.xml|jest-no-verdict.json": "1e04cda0cf96dede",
    "junit/jest/junit-defaults.xml|jest-not-resolved.json": "3170ba27257ef5a6",
    "junit/jest/junit-defaults.xml|jest-resolved.json": "fb48928289e88dae",
    "junit/jest/junit.xml|jest-no-verdict.json": "ee930aaf05f6e8dc",
    "junit/jest/junit.xml|jest-not-resolved.json": "b7e4dc4264183a2a",
    "junit/jest/junit.xml|jest-resolved.json": "4bba2001c248a578",
    "junit/nextest/junit.xml|nextest-no-verdict.json": "13dee4390abc0664",
    "junit/nextest/junit.xml|nextest-not-resolved.json": "c2ba2e6faac9ab49",
    "junit/nextest/junit.xml|nextest-resolved.json": "6dfe723220c360e6",
    "junit/nextest/setup-script-failed.xml|nextest-no-verdict.json": "be171c882a0beb30",
    "junit/nextest/setup-script-failed.xml|nextest-not-resolved.json": "7bd8c32ffddc5f93",
    "junit/nextest/setup-script-failed.xml|nextest-resolved.json": "7dd841efa35454a6",
    "junit/surefire/TEST-com.example.calc.CalculatorTest.xml|surefire-no-verdict.json": "cef15901ef86f7b8",
    "junit/surefire/TEST-com.example.calc.CalculatorTest.xml|surefire-not-resolved.json": "fa8b306180681a84",
    "junit/surefire/TEST-com.example.calc.CalculatorTest.xml|surefire-resolved.json": "f011485f912a0e89",
    "junit/surefire/TEST-com.example.calc.ParserTest.xml|surefire-no-verdict.json": "6b98e5536a58bc54",
    "junit/surefire/TEST-com.example.calc.ParserTest.xml|surefire-not-resolved.json": "d8ded245a8ae7219",
    "junit/surefire/TEST-com.example.calc.ParserTest.xml|surefire-resolved.json": "9221f30ae173922c",
    "junit/surefire/TEST-com.example.calc.RetryingClientTest.xml|surefire-no-verdict.json": "79c93fe43b2ac7c0",
    "junit/surefire/TEST-com.example.calc.RetryingClientTest.xml|surefire-not-resolved.json": "71e947d3e66eb2f5",
    "junit/surefire/TEST-com.example.calc.RetryingClientTest.xml|surefire-resolved.json": "6d63c50a1cc7d2a1",
    "junit/surefire/TEST-com.example.calc.StorageTest.xml|surefire-no-verdict.json": "df3df47c860c56d5",
    "junit/surefire/TEST-com.example.calc.StorageTest.xml|surefire-not-resolved.json": "aa4f8061e87844e8",
    "junit/surefire/TEST-com.example.calc.StorageTest.xml|surefire-resolved.json": "659523dbe331b029",
    "junit/surefire|surefire-no-verdict.json": "f439496336427f39",
    "junit/surefire|surefire-not-resolved.json": "f350d37bc53bc222",
    "junit/surefire|surefire-resolved.json": "fbad1fefcbf18ee6",
    "runner_logs/django/runtests-import-error.log|django-import-error.json": "3749d4b6c9c05fcf",
    "runner_logs/django/runtests-import-error.log|django-not-resolved.json": "bb5668ac80780a6a",
    "runner_logs/django/runtests-import-error.log|django-resolved.json": "77a35ab4708e47ab",
    "runner_logs/django/runtests-import-error.log|django-skip-and-xfail.json": "c8bb5e7f192d8c91",
    "runner_logs/django/runtests-import-error.log|django-swallowed-status.json": "9bdb10e480113f90",
    "runner_logs/django/runtests-py311.log|django-import-error.json": "6e936dba3ef258c4",
    "runner_logs/django/runtests-py311.log|django-not-resolved.json": "0953c59043b5f2fc",
    "runner_logs/django/runtests-py311.log|django-resolved.json": "b35455bab5e32a5b",
    "runner_logs/django/runtests-py311.log|django-skip-and-xfail.json": "67a69f30dad94f63",
    "runner_logs/django/runtests-py311.log|django-swallowed-status.json": "7cd037364a7b051f",
    "runner_logs/django/runtests-py39.log|django-import-error.json": "45cbdde5d5cb04d5",
    "runner_logs/django/runtests-py39.log|django-not-resolved.json": "184055c086d30021",
    "runner_logs/django/runtests-py39.log|django-resolved.json": "cc8136648b1135e7",
    "runner_logs/django/runtests-py39.log|django-skip-and-xfail.json": "06060bed73d2944b",
    "runner_logs/django/runtests-py39.log|django-swallowed-status.json": "3fd3416c824a15c4",
    "runner_logs/sympy/bin-test-import-error.log|sympy-not-resolved.json": "25354a6a9406c90c",
    "runner_logs/sympy/bin-test-import-error.log|sympy-resolved.json": "f04f1b0524ba47ee",
    "runner_logs/sympy/bin-test-import-error.log|sympy-unread-status.json": "6e35ae452f17dd1d",
    "runner_logs/sympy/bin-test-terse.log|sympy-not-resolved.json": "e353ee56f18d77f0",
    "runner_logs/sympy/bin-test-terse.log|sympy-resolved.json": "f4bb211fedafff21",
    "runner_logs/sympy/bin-test-terse.log|sympy-unread-status.json": "27ef554d118d0d67",
    "runner_logs/sympy/bin-test-verbose.log|sympy-not-resolved.json": "9e42e33e4c806c12",
    "runner_logs/sympy/bin-test-verbose.log|sympy-resolved.json": "f35c34e26c153b57",
    "runner_logs/sympy/bin-test-verbose.log|sympy-unread-status.json": "bcfe85c4648594a2",
}


def _runs() -> dict[str, list[tuple[Path, Path]]]:
    junit, logs = FIXTURES / "junit", FIXTURES / "runner_logs"
    return {
        "surefire": [junit / "surefire", *sorted((junit / "surefire").glob("TEST-*.xml"))],
        "jest": [junit / "jest" / "junit.xml", junit / "jest" / "junit-defaults.xml"],
        "go": [junit / "go" / "report.xml", junit / "go" / "build-failed.xml"],
        "nextest": [junit / "nextest" / "junit.xml", junit / "nextest" / "setup-script-failed.xml"],
        "django": sorted((logs / "django").glob("*.log")),
        "sympy": sorted((logs / "sympy").glob("*.log")),
    }  # type: ignore[dict-item]


def _without(value: Any) -> Any:
    """The envelope without its times, and with the checkout's path as ROOT."""
    if isinstance(value, dict):
        return {k: _without(v) for k, v in value.items() if k not in ("created", "graded_at")}
    if isinstance(value, list):
        return [_without(v) for v in value]
    return value.replace(str(ROOT), "ROOT") if isinstance(value, str) else value


def _verdict(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        envelope = _without(json.loads(result.stdout))
    except ValueError:
        return {"exit": result.returncode, "stderr": result.stderr.replace(str(ROOT), "ROOT")}
    kept = {k: envelope.get(k) for k in ("status", "no_verdict_reason", "score", "tests", "summary", "swebench",
                                         "session", "report", "failure_class", "integrity")}  # fmt: skip
    if kept["score"]:
        kept["score"] = {k: v for k, v in kept["score"].items() if k not in ("graded_at", "graded_by")}
        kept["graded_by_mode"] = envelope["score"]["graded_by"].split(" ", 1)[1]
    kept["report"] = {k: v for k, v in (kept["report"] or {}).items() if k != "path"}
    kept["exit"] = result.returncode
    return kept


def verdicts() -> dict[str, str]:
    """Each fixture report against each instance of its runner, as in BEFORE."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for runner, files in _runs().items():
        folder = FIXTURES / ("runner_logs" if runner in ("django", "sympy") else "junit") / "instances"
        for instance in sorted(folder.glob(f"{runner}-*.json")):
            for report in files:
                group = f"{report.relative_to(FIXTURES).as_posix()}|{instance.name}"
                for given in (None, runner, "pytest"):
                    for compat in ("strict", "swebench"):
                        args = ["grade", "--from-report", str(report), "--instance", str(instance), "--no-ledger",
                                "--json", "--compat", compat, *(["--runner", given] if given else [])]  # fmt: skip
                        groups[group].append((given or "-", compat, _verdict(run_cli_here(*args))))
    return {
        group: hashlib.sha256(json.dumps(sorted(items), sort_keys=True).encode()).hexdigest()[:16]
        for group, items in groups.items()
    }


def test_every_fixture_report_grades_as_before() -> None:
    assert verdicts() == BEFORE


# --------------------------------------------------------------------------- what chunks are read does not matter

PYTEST_JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" tests="5">
<testcase classname="tests.test_a" name="test_passes" time="0.001"><system-out>{out}</system-out></testcase>
<testcase classname="tests.test_a" name="test_fails" time="0.002"><failure message="assert 1 == 2">{out}</failure>
</testcase>
<testcase classname="tests.test_a" name="test_fails" time="0.001"><error message="failed on teardown with &quot;boom&quot;">x
</error></testcase>
<testcase classname="tests.test_a" name="test_skips" time="0.0"><skipped type="pytest.skip" message="no">s</skipped>
</testcase>
<testcase classname="" name="tests.test_b"><error message="collection failure">{out}</error></testcase>
</testsuite></testsuites>
"""


def _tests_of(out: str) -> list[dict[str, Any]]:
    tests = []
    for name, outcome in (("test_passes", "passed"), ("test_fails", "failed"), ("test_skips", "skipped")):
        stage = {"duration": 0.1, "outcome": outcome, "stdout": out}
        if outcome == "failed":
            stage["crash"] = {"path": "t.py", "lineno": 3, "message": "assert 1 == 2"}
        tests.append({"nodeid": f"tests/test_a.py::{name}", "outcome": outcome, "setup": {"outcome": "passed"},
                      "call": stage, "teardown": {"outcome": "passed"}})  # fmt: skip
    return tests


def _json_report(out: str, **extra: Any) -> dict[str, Any]:
    return {"created": 1.0, "duration": 0.5, "exitcode": 1, "root": "/r", "environment": {"Python": "3.11"},
            "summary": {"total": 3}, "collectors": [{"nodeid": "tests/test_b.py", "outcome": "failed",
                                                     "longrepr": "ImportError"}],
            "tests": _tests_of(out), **extra}  # fmt: skip


def _reportlog(out: str) -> str:
    lines: list[dict[str, Any]] = [{"$report_type": "SessionStart", "pytest_version": "8.3.0"}]
    for test in _tests_of(out):
        for when in ("setup", "call", "teardown"):
            lines.append({"$report_type": "TestReport", "nodeid": test["nodeid"], "when": when,
                          "outcome": test[when]["outcome"], "longrepr": out if test[when]["outcome"] == "failed" else None,
                          "duration": 0.1, "sections": [["Captured stdout call", out]]})  # fmt: skip
    lines.append({"$report_type": "SessionFinish", "exitstatus": 1})
    return "".join(json.dumps(line) + "\n" for line in lines)


INSTANCE = parse_instance({"instance_id": "x__y-1", "FAIL_TO_PASS": ["tests/test_a.py::test_fails",
                           "tests/test_a.py::test_nope"], "PASS_TO_PASS": ["tests/test_a.py::test_passes",
                           "tests/test_a.py::test_skips"]})  # fmt: skip
OUT = "line of captured output \u00e9\u2028 " * 40

# Each as pytest writes it, then made odd or broken in the ways a reader must get exactly right.
DOCUMENTS = {
    "junit.xml": PYTEST_JUNIT.format(out=OUT),
    "junit-long-message.xml": PYTEST_JUNIT.format(out="y" * 5000).replace('"assert 1 == 2"', '"' + "m" * 3000 + '"'),
    "junit-cut.xml": PYTEST_JUNIT.format(out=OUT)[:900],
    "report.json": json.dumps(_json_report(OUT)),
    "report-indented.json": json.dumps(_json_report(OUT), indent=2),
    "report-bom.json": "\ufeff" + json.dumps(_json_report(OUT)) + "\n \x0b",
    "report-twice.json": json.dumps(_json_report(OUT)).replace('"tests": [', '"tests": [], "tests": [', 1),
    "report-warnings.json": json.dumps(_json_report(OUT, warnings=[{"message": OUT}] * 30)),
    "report-deep.json": json.dumps(_json_report(OUT)).replace('"tests": [', '"tests": [' + "[" * 120 + "]" * 120 + ", ", 1),
    "report-deeper.json": json.dumps(_json_report(OUT), indent=1).replace('"tests": [', '"tests": [' + "[" * 3000
                                                                          + "]" * 3000 + ", ", 1),
    "report-missing-comma.json": json.dumps(_json_report(OUT), indent=1).replace('"exitcode": 1,', '"exitcode": 1', 1),
    "report-trailing-comma.json": json.dumps(_json_report(OUT), indent=1).replace('"stdout"', '"x": 1,}, "stdout"', 1),
    "report-cut.json": json.dumps(_json_report(OUT), indent=1)[:3000],
    "report-extra.json": json.dumps(_json_report(OUT)) + "\n{}",
    "reportlog.jsonl": _reportlog(OUT),
    "reportlog-cut.jsonl": _reportlog(OUT)[:-30],
    "reportlog-bad-line.jsonl": _reportlog(OUT).replace('"when": "call"', '"when": call', 1),
}


def _outcome(path: Path) -> Any:
    try:
        envelope = grade_report(path, INSTANCE, "strict", "p")
    except ReportError as exc:
        return str(exc)
    return {k: v for k, v in envelope.items() if k not in ("created", "score")} | {"score": envelope["score"] and {
        k: v for k, v in envelope["score"].items() if k != "graded_at"}}  # fmt: skip


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_the_same_outcome_whatever_the_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Chunks of 7 bytes (every boundary falls inside a token, a UTF-8 character, a line) and first
    lines of 50 characters give what 1 MiB chunks give."""
    path = tmp_path / name
    path.write_text(DOCUMENTS[name], encoding="utf-8")
    whole = _outcome(path)
    monkeypatch.setattr(reports, "CHUNK", 7)
    monkeypatch.setattr(reports, "FIRST_LINE", 50)
    assert _outcome(path) == whole
    assert not isinstance(whole, str) or str(path) in whole


@pytest.mark.parametrize(
    "text",
    ['{\n"exitcode": 0,\n"tests": [1,]\n}', '{\n"exitcode": 0,\n"tests": []\n,}', '{\n"exitcode": 0\n"tests": []}',
     '{\n"exitcode" 0}', '{\n"tests": []}x', '{\n"tests": [{"a": 1} {"b": 2}]}', '{\n"tests": [{"a": "\x01"}]}',
     '{\n"exitcode": 0, "tests": [\n', '{\n"tests": [], "x": nul}', '{\n"tests": [], "x": 1.5e}'],
    ids=["trailing-comma-list", "trailing-comma-object", "missing-comma", "missing-colon", "extra-data",
         "missing-comma-in-list", "control-character", "cut", "bad-literal", "bad-number"],
)  # fmt: skip
def test_invalid_json_is_worded_as_json_words_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """A JSON report read entry by entry names the error json.loads names for the whole text (this
    Python's wording and column), whatever the chunks."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        expected = f"{tmp_path / 'r.json'}:{exc.lineno}: invalid JSON (column {exc.colno}): {exc.msg}"
    (tmp_path / "r.json").write_text(text, encoding="utf-8")
    for chunk in (1 << 20, 3):
        monkeypatch.setattr(reports, "CHUNK", chunk)
        with pytest.raises(ReportError) as caught:
            grade_report(tmp_path / "r.json", INSTANCE)
        assert str(caught.value) == expected, chunk


# --------------------------------------------------------------------------- progress


def test_progress_is_throttled_and_silent_for_a_quick_read(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    said: list[str] = []
    monkeypatch.setattr(reports, "PROGRESS_AFTER", 1.0)
    monkeypatch.setattr(reports, "PROGRESS_EVERY", 2.0)
    quick = Progress(said.append, "reading", "r.xml", 10_000_000, "test cases", clock=lambda: now[0])
    now[0] = 100.9
    quick.update(9_000_000, 90)
    quick.finish(10_000_000, 100)
    assert said == []  # done within a second: nothing, whatever the size
    slow = Progress(said.append, "reading", "r.xml", 10_000_000, "test cases", clock=lambda: now[0])
    for step in range(1, 11):
        now[0] = 100.9 + 0.5 * step
        slow.update(step * 1_000_000, step * 10)
    slow.finish(10_000_000, 100)
    assert said == [  # the first once a second has gone by, then one every two seconds, and the end
        "reading r.xml: 2.0 of 10.0 MB (20%), 20 test cases",
        "reading r.xml: 6.0 of 10.0 MB (60%), 60 test cases",
        "reading r.xml: 10.0 of 10.0 MB (100%), 100 test cases",
        "reading r.xml: done, 10.0 MB, 100 test cases in 5.0 s",
    ]
    unknown: list[str] = []
    pipe = Progress(unknown.append, "copying", "/dev/fd/63 (a pipe) to a temporary file", clock=lambda: now[0])
    now[0] += 3
    pipe.update(4_500_000)
    assert unknown == ["copying /dev/fd/63 (a pipe) to a temporary file: 4.5 MB so far"]


@pytest.mark.parametrize("name", ["junit.xml", "report.json", "reportlog.jsonl"])
def test_a_long_read_says_how_far_it_is_on_stderr_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        name: str) -> None:  # fmt: skip
    path = tmp_path / name
    path.write_text(DOCUMENTS[name], encoding="utf-8")
    instance = tmp_path / "instance.json"
    instance.write_text(json.dumps({"instance_id": "x__y-1", "FAIL_TO_PASS": ["tests/test_a.py::test_passes"],
                                    "PASS_TO_PASS": []}))  # fmt: skip
    command = ("grade", "--from-report", str(path), "--instance", str(instance), "--no-ledger", "--json")
    quick = run_cli_here(*command)
    assert quick.returncode == 0 and quick.stderr == ""  # a small file reads at once: no progress
    monkeypatch.setattr(reports, "PROGRESS_AFTER", 0.0)  # every read is long now; and every chunk says so
    monkeypatch.setattr(reports, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(reports, "CHUNK", 512)
    slow = run_cli_here(*command)
    assert slow.returncode == 0
    assert json.loads(slow.stdout)["score"]["resolved"] == "resolved"  # standard output is the envelope alone
    lines = slow.stderr.splitlines()
    assert all(line.startswith("objective-score grade: ") for line in lines)
    # a JSON file is checked (its text) then read; a one-line document shorter than FIRST_LINE is read whole
    unit = {"junit.xml": " test cases", "report.json": "", "reportlog.jsonl": " test reports"}[name]
    assert any(f" {path}: " in line and " MB (" in line and unit in line for line in lines), lines
    assert any(f" {path}: done, {path.stat().st_size / 1e6:.1f} MB" in line and unit in line for line in lines)
    # then the grading of what was read, until the verdict
    assert lines[-1].startswith(f"objective-score grade: grading {path}: done, 3 tests in "), lines
    assert run_cli_here(*command, "--quiet").stderr == ""


# --------------------------------------------------------------------------- pipes, named pipes, devices


def _instance_file(tmp_path: Path) -> Path:
    path = tmp_path / "instance.json"
    path.write_text(json.dumps({"instance_id": "x__y-1", "FAIL_TO_PASS": ["tests/test_a.py::test_passes"],
                                "PASS_TO_PASS": []}))  # fmt: skip
    return path


def _through_a_pipe(data: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    """``grade --from-report /dev/fd/N ARGS``, a thread writing ``data`` into the pipe (as ``<(cat FILE)``)."""
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as handle:
            try:
                handle.write(data)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        return run_cli_here("grade", "--from-report", f"/dev/fd/{read}", *args)
    finally:
        writer.join()
        os.close(read)


@pytest.mark.parametrize(
    "report",
    ["junit.xml", "report.json", "report-indented.json", "reportlog.jsonl", "junit/go/report.xml",
     "junit/jest/junit.xml", "runner_logs/django/runtests-py311.log", "runner_logs/sympy/bin-test-verbose.log"],
)  # fmt: skip
def test_a_pipe_with_a_writer_grades_as_its_file(tmp_path: Path, report: str) -> None:
    """``--from-report <(cat FILE)``: read once (copied once), graded as FILE is, named as given."""
    if "/" in report:
        file = FIXTURES / report
        instance = next(iter(sorted((file.parents[1] / "instances").glob(f"{file.parent.name}-*resolved.json"))))
    else:
        file = tmp_path / report
        file.write_text(DOCUMENTS[report], encoding="utf-8")
        instance = _instance_file(tmp_path)
    args = ("--instance", str(instance), "--no-ledger", "--json")
    direct = run_cli_here("grade", "--from-report", str(file), *args)
    piped = _through_a_pipe(file.read_bytes(), *args)
    assert piped.returncode == direct.returncode, piped.stderr
    graded, expected = json.loads(piped.stdout), json.loads(direct.stdout)
    assert graded["report"].pop("path").startswith("/dev/fd/") and expected["report"].pop("path") == str(file)
    for envelope in (graded, expected):
        for key in ("created", "digests", "score"):
            envelope.pop(key)
    assert graded == expected


def test_a_broken_pipe_report_names_the_pipe(tmp_path: Path) -> None:
    piped = _through_a_pipe(b"<testsuites><testsuite>\n<testcase name='a'", "--instance", str(_instance_file(tmp_path)),
                            "--no-ledger")  # fmt: skip
    assert piped.returncode == 2
    assert piped.stderr.startswith("objective-score grade: error: --from-report /dev/fd/")
    assert ":2: invalid XML (column 1): unclosed token" in piped.stderr and "objective-score-report-" not in piped.stderr


def test_process_substitution_in_a_shell(tmp_path: Path) -> None:
    """The shell's own ``<(cat FILE)``, through the installed command line."""
    file = tmp_path / "junit.xml"
    file.write_text(DOCUMENTS["junit.xml"], encoding="utf-8")
    line = (f"{sys.executable} -m pytest_objective_scoring grade --from-report <(cat {file}) "
            f"--instance {_instance_file(tmp_path)} --no-ledger --json")  # fmt: skip
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"]["resolved"] == "resolved"


def test_a_named_pipe_with_a_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "junit.fifo"
    os.mkfifo(fifo)
    data = DOCUMENTS["junit.xml"].encode()

    def write() -> None:
        with open(fifo, "wb") as handle:  # waits for the grader to open it
            handle.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    time.sleep(0.2)  # the writer is waiting in open() when the grader opens the pipe
    result = run_cli_here("grade", "--from-report", str(fifo), "--instance", str(_instance_file(tmp_path)),
                          "--no-ledger", "--json")  # fmt: skip
    writer.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["report"]["path"] == str(fifo)


@pytest.mark.parametrize("kind", ["named-pipe", "device"])
def test_a_named_pipe_nobody_writes_to_or_a_device_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """It blocked forever (a named pipe) or read without end (/dev/zero): one line, exit 2, at once."""
    if kind == "named-pipe":
        target = tmp_path / "nobody.fifo"
        os.mkfifo(target)
        said = "a pipe that gives nothing: nobody writes to it"
    else:
        target = Path("/dev/zero")
        said = "is a device, not a file"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade", "--from-report", str(target),
                           "--instance", str(_instance_file(tmp_path)), "--no-ledger"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert time.monotonic() - started < 30
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"objective-score grade: error: --from-report {target}: {said}" + (
        "; expected pytest's JUnit XML (--junitxml), a pytest-json-report file (--json-report-file) or a "
        "pytest-reportlog file (--report-log)" if kind == "device" else " (expected a file, or a pipe with a writer "
        "such as <(cat junit.xml))")]  # fmt: skip
    with pytest.raises(ReportError, match=said):  # and from Python, for every reader
        if kind == "device":
            grade_report(target, INSTANCE)
        else:
            _unblocked(target, lambda: grade_report(target, INSTANCE))


def _unblocked(fifo: Path, call: Any) -> Any:
    """``call()``, a writer opening ``fifo`` after 20 s should it block (the test then fails, not hangs)."""
    rescue = threading.Timer(20, lambda: os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)))
    rescue.start()
    started = time.monotonic()
    try:
        return call()
    finally:
        rescue.cancel()
        assert time.monotonic() - started < 10, "blocked on a pipe nobody writes to"


# --------------------------------------------------------------------------- memory


def _junit(path: Path, cases: int, size: int) -> None:
    pad = max(0, size // cases - 160)
    with open(path, "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">\n')
        for i in range(cases):
            text = ("captured output line %d\n" % i * (pad // 24 + 1))[:pad]
            body = f'<failure message="assert {i}">{text}</failure>' if i % 10 == 3 else f"<system-out>{text}</system-out>"
            out.write(f'<testcase classname="tests.test_m{i // 100}" name="test_{i}" time="0.01">{body}</testcase>\n')
        out.write("</testsuite></testsuites>\n")


def _json(path: Path, cases: int, size: int) -> None:
    pad = max(0, size // cases - 300)
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"created": 1.0, "duration": 2.0, "exitcode": 1, "root": "/r", "environment": {}, "tests": [')
        for i in range(cases):
            call = {"outcome": "failed" if i % 10 == 3 else "passed", "stdout": "o" * pad}
            out.write(("," if i else "") + json.dumps({"nodeid": f"tests/test_m{i // 100}.py::test_{i}", "outcome":
                      call["outcome"], "setup": {"outcome": "passed"}, "call": call, "teardown": {"outcome": "passed"}}))
        out.write("]}")


def _reportlog_file(path: Path, cases: int, size: int) -> None:
    pad = max(0, size // cases // 3 - 200)
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"$report_type": "SessionStart", "pytest_version": "8.3.0"}\n')
        for i in range(cases):
            for when in ("setup", "call", "teardown"):
                out.write(json.dumps({"$report_type": "TestReport", "nodeid": f"tests/test_m{i // 100}.py::test_{i}",
                                      "when": when, "outcome": "passed", "longrepr": None, "duration": 0.01,
                                      "sections": [["Captured stdout", "o" * pad]]}) + "\n")  # fmt: skip
        out.write('{"$report_type": "SessionFinish", "exitstatus": 0}\n')


def _peak_rss_mb(report: Path, instance: Path) -> float:
    """The command line's own peak resident memory (wait4's, not the most of every child so far)."""
    child = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", "grade", "--from-report", str(report),
                              "--instance", str(instance), "--no-ledger", "--json", "--quiet"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    assert child.stderr is not None
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, child.stderr.read()
    child.stderr.close()
    return usage.ru_maxrss / 1024


@pytest.mark.slow
@pytest.mark.parametrize("write", [_junit, _json, _reportlog_file], ids=["junit-xml", "json-report", "reportlog"])
def test_peak_memory_does_not_grow_with_the_file(tmp_path: Path, write: Any) -> None:
    """The same 2,000 tests in 1 MB and in 50 MB (the rest captured output): the peak grows by less
    than a fifth of the difference (reading whole grew by more than the difference itself)."""
    instance = tmp_path / "instance.json"
    instance.write_text(json.dumps({"instance_id": "x__y-1", "FAIL_TO_PASS": ["tests/test_m0.py::test_0"],
                                    "PASS_TO_PASS": [f"tests/test_m{i // 100}.py::test_{i}" for i in (1, 1500)]}))
    peaks = {}
    for megabytes in (1, 50):
        report = tmp_path / f"report-{megabytes}"
        write(report, 2000, megabytes * 1_000_000)
        peaks[megabytes] = _peak_rss_mb(report, instance)
        report.unlink()
    assert peaks[50] - peaks[1] < 49 / 5, peaks
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0
