"""Fault injection (issue 28 follow-up), the inputs' part: standard input that is not data (a device,
a closed descriptor, a terminal) read as a candidate or waited on forever, a closed standard output,
text that is not Unicode (a lone surrogate in an instance or a dataset, a command-line value that is
not UTF-8), ``--plan`` and ``--retrieval`` on a named pipe nobody writes to, ``--from-report -``,
non-finite durations in a report, and numbers out of range in a Harbor task and ``sets burn``."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import inputs
from pytest_objective_scoring.cli import build_parser

from .conftest import FIXTURES
from .runner_helpers import run_cli_here

REPO = FIXTURES / "repos" / "textstats"
INSTANCE = FIXTURES / "instances" / "textstats.json"
GOLD = FIXTURES / "patches" / "textstats" / "gold.diff"
DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
FIELDS: dict[str, Any] = json.loads(INSTANCE.read_text(encoding="utf-8"))
CLI = [sys.executable, "-m", "pytest_objective_scoring"]


def _shell(command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``objective-score`` run by a shell (for ``< /dev/zero``, ``<&-``, ``>&-``); a hang fails the test."""
    line = " ".join(CLI) + " " + command
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=timeout, cwd=FIXTURES.parent,
                          check=False)


def _refused(result: subprocess.CompletedProcess[str], *words: str, status: int = 2) -> str:
    assert result.returncode == status, (result.returncode, result.stderr, result.stdout[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


GRADE = f"grade --repo {REPO} --instance {INSTANCE} --no-ledger"


# ---------------------------------------------------------------- W2/H2/H2b/T9: standard input


def test_a_candidate_from_dev_zero_on_standard_input_is_refused_not_graded():
    """It was graded ``patch_too_large`` against the candidate (exit 1): ``--patch /dev/zero`` is refused."""
    _refused(_shell(f"{GRADE} --patch - < /dev/zero"), "--patch -", "standard input is a device")


def test_dev_null_on_standard_input_is_refused_as_a_device():
    """It was graded as the empty candidate (exit 1), though ``--patch /dev/null`` is refused."""
    _refused(_shell(f"{GRADE} --patch - < /dev/null"), "--patch -", "standard input is a device")


def test_an_instance_from_dev_zero_is_refused_not_waited_on():
    """It hung (read /dev/zero to no end)."""
    _refused(_shell(f"grade --repo {REPO} --instance - --patch {GOLD} --no-ledger < /dev/zero"),
             "standard input is a device")  # fmt: skip


def test_samples_from_dev_zero_are_refused_not_waited_on():
    problems = FIXTURES / "functional" / "problems.jsonl"
    _refused(_shell(f"grade-samples --problems {problems} --samples - --no-results --no-ledger < /dev/zero"),
             "--samples -", "standard input is a device")  # fmt: skip


def test_predictions_from_dev_zero_are_refused_before_memory_runs_out(tmp_path):
    """It read /dev/zero until the kernel killed it."""
    _refused(_shell(f"grade-batch --dataset {DATASET} --predictions - --repos {FIXTURES / 'repos'} "
                    f"--ledger {tmp_path / 'l.sqlite'} < /dev/zero"), "standard input is a device")  # fmt: skip


@pytest.mark.parametrize("option", ["--patch", "--instance"])
def test_a_closed_standard_input_is_refused_in_one_line(option):
    """It was an AttributeError traceback (``sys.stdin`` is None), exit 3."""
    given = {"--patch": f"--instance {INSTANCE} --patch -", "--instance": f"--instance - --patch {GOLD}"}[option]
    _refused(_shell(f"grade --repo {REPO} {given} --no-ledger <&-"), "standard input is closed")


def test_predictions_from_a_closed_standard_input_are_refused(tmp_path):
    _refused(_shell(f"grade-batch --dataset {DATASET} --predictions - --repos {FIXTURES / 'repos'} "
                    f"--ledger {tmp_path / 'l.sqlite'} <&-"), "standard input is closed")  # fmt: skip


def test_stdin_problem_says_what_standard_input_is(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "stdin", None)
    assert "closed" in (inputs.stdin_problem() or "")
    with open(os.devnull, "rb") as null:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(null))
        assert "a device" in (inputs.stdin_problem() or "")
        with pytest.raises(inputs.InputProblem, match="standard input is a device"):
            inputs.read_bytes("-")
    leader, follower = os.openpty()
    try:
        with open(follower, "rb", closefd=False) as terminal:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(terminal))
            assert "a terminal" in (inputs.stdin_problem() or "")
    finally:
        os.close(leader)
        os.close(follower)
    (tmp_path / "f").write_bytes(b"data")
    with open(tmp_path / "f", "rb") as regular:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(regular))
        assert inputs.stdin_problem() is None
        assert inputs.read_bytes("-") == b"data"
    read, write = os.pipe()
    os.write(write, b"piped")
    os.close(write)
    with open(read, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(pipe))
        assert inputs.stdin_problem() is None and inputs.read_bytes("-") == b"piped"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"in memory")))  # a test's: read as it is
    assert inputs.stdin_problem() is None and inputs.read_bytes("-") == b"in memory"


def test_stdin_kind_by_mode():
    import stat

    assert inputs.stdin_kind(stat.S_IFREG | 0o644) is None
    assert inputs.stdin_kind(stat.S_IFIFO | 0o600) is None
    assert inputs.stdin_kind(stat.S_IFSOCK | 0o600) is None
    assert "directory" in (inputs.stdin_kind(stat.S_IFDIR | 0o755) or "")
    assert "device" in (inputs.stdin_kind(stat.S_IFBLK | 0o600) or "")
    assert "closed" in (inputs.stdin_kind(None) or "")


def test_a_patch_piped_in_is_still_graded():
    """The rule refuses what is not data, never a pipe: ``git diff | objective-score grade --patch -``."""
    result = _shell(f"{GRADE} --patch - < {GOLD}", timeout=120)
    assert result.returncode == 0, result.stderr


def test_closed_output_problem(monkeypatch):
    assert inputs.closed_output_problem() is None
    monkeypatch.setattr(sys, "stdout", None)
    assert "standard output is closed" in (inputs.closed_output_problem() or "")


def test_a_closed_standard_output_is_one_line_exit_3():
    """It was an AttributeError traceback from the envelope's printing, after the grading."""
    result = _shell(f"{GRADE} --patch {GOLD} >&-")
    _refused(result, "standard output is closed", status=3)


# ---------------------------------------------------------------- H1: --plan and --retrieval


@pytest.mark.parametrize("option", ["--plan", "--retrieval"])
def test_plan_and_retrieval_on_a_pipe_nobody_writes_to_are_refused_not_waited_on(tmp_path, option):
    """It hung on the open of the named pipe."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _refused(_shell(f"{GRADE} --patch {GOLD} {option} {fifo}", timeout=30), f"{option} {fifo}", "named pipe")


def test_plan_from_standard_input_is_one_reader_of_it():
    _refused(_shell(f"{GRADE} --patch - --plan - < {GOLD}"), "--patch and --plan both name -")


# ---------------------------------------------------------------- W4/T1/T2: text that is not Unicode


SURROGATE = '"\\ud800"'  # JSON's escape of a lone surrogate: Python's json reads it, UTF-8 cannot hold it


def _surrogate_instance(path: Path) -> Path:
    text = json.dumps({**FIELDS, "problem_statement": "x"}).replace('"problem_statement": "x"',
                                                                   f'"problem_statement": {SURROGATE}')  # fmt: skip
    path.write_text(text, encoding="utf-8")
    return path


def test_an_instance_holding_a_lone_surrogate_is_refused_before_work(tmp_path):
    """The tests ran, then a UnicodeEncodeError: the gold got no verdict, exit 3."""
    _refused(_shell(f"grade --repo {REPO} --instance {_surrogate_instance(tmp_path / 'i.json')} --patch {GOLD} "
                    "--no-ledger"), "lone surrogate", "expected UTF-8 text")  # fmt: skip


def test_a_dataset_holding_a_lone_surrogate_is_refused_by_grade_batch_and_sets(tmp_path):
    rows = DATASET.read_text(encoding="utf-8").splitlines()
    rows[0] = rows[0].replace('"instance_id"', f'"note": {SURROGATE}, "instance_id"', 1)
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("\n".join(rows) + "\n", encoding="utf-8")
    from .runner_helpers import run_cli_here

    batch = run_cli_here("grade-batch", "--dataset", str(dataset), "--predictions",
                         str(FIXTURES / "predictions" / "fixtures.jsonl"), "--repos", str(FIXTURES / "repos"),
                         "--ledger", str(tmp_path / "l.sqlite"))  # fmt: skip
    _refused(batch, f"{dataset}:1", "lone surrogate")
    sets = run_cli_here("sets", "create", "--ledger", str(tmp_path / "s.sqlite"), "--role", "development",
                        "--dataset", str(dataset), "--source", "static:x", "s1")  # fmt: skip
    _refused(sets, "--dataset", "lone surrogate")


def test_the_plugin_refuses_an_instance_holding_a_lone_surrogate_as_a_usage_error(pytester):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    path = pytester.path / "surr.json"
    path.write_text('{"instance_id": "a-1", "FAIL_TO_PASS": ["test_a.py::test_a"], "PASS_TO_PASS": [], '
                    f'"problem_statement": {SURROGATE}}}')  # fmt: skip
    result = pytester.runpytest_inprocess(f"--objective-score={path}", "--objective-no-ledger")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--objective-score: *surr.json: a string holding a lone surrogate*"])
    assert "Traceback" not in result.stderr.str()


def _parsed(*argv: str) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = build_parser(list(argv))
    return parser, parser.parse_args(list(argv))


BAD = os.fsdecode(b"\xff")  # how Python gives a command-line byte that is not UTF-8: "\udcff"


@pytest.mark.parametrize(("argv", "option"), [
    (["grade", "--instance", "i.json", "--patch", "p", "--benchmark", "b" + BAD], "--benchmark b\\xff"),
    (["grade", "--instance", "i.json", "--patch", "p", "--harness", "h" + BAD], "--harness h\\xff"),
    (["grade", "--instance", "i.json", "--patch", "p", "--patch-ref", "p" + BAD], "--patch-ref p\\xff"),
    (["grade-batch", "--dataset", "d", "--predictions", "p", "--run-id", "r" + BAD], "--run-id r\\xff"),
    (["grade-batch", "--dataset", "d", "--predictions", "p", "--instance-ids", "a", "b" + BAD], "--instance-ids b\\xff"),
    (["import-judged", "f.jsonl", "--benchmark", "b" + BAD, "--judge", "j"], "--benchmark b\\xff"),
])  # fmt: skip
def test_undecodable_options_names_a_value_that_is_not_utf8(argv, option):
    problem = inputs.undecodable_options(*_parsed(*argv))
    assert problem is not None and problem.startswith(option) and "not valid UTF-8" in problem, problem


def test_undecodable_options_leaves_paths_to_the_file_system():
    """A file name need not be UTF-8 (``--ledger $'l\\xff.sqlite'`` worked, and still does)."""
    argv = ["grade", "--instance", "i" + BAD + ".json", "--patch", "p" + BAD, "--ledger", "l" + BAD, "--out",
            "o" + BAD, "--benchmark", "fine"]  # fmt: skip
    assert inputs.undecodable_options(*_parsed(*argv)) is None
    assert inputs.undecodable_options(*_parsed("grade", "--instance", "i.json", "--patch", "p")) is None


def test_a_benchmark_name_that_is_not_utf8_is_refused_before_work(tmp_path):
    """It was graded, then not recorded (UnicodeEncodeError in the ledger)."""
    _refused(_shell(f"grade --repo {REPO} --instance {INSTANCE} --patch {GOLD} --ledger {tmp_path / 'l.sqlite'} "
                    "--benchmark $'b\\xff'"), "--benchmark", "not valid UTF-8")  # fmt: skip
    assert not (tmp_path / "l.sqlite").exists()


# ---------------------------------------------------------------- S1: --from-report -


def test_a_report_on_standard_input_is_graded(tmp_path):
    """It was "--from-report -: no such file", though docs/faults.md lists it as standard input."""
    junit = tmp_path / "junit.xml"
    tests = [t for key in ("FAIL_TO_PASS", "PASS_TO_PASS") for t in
             (json.loads(FIELDS[key]) if isinstance(FIELDS[key], str) else FIELDS[key])]  # fmt: skip
    cases = "".join(f'<testcase classname="{t.split("::")[0][:-3].replace("/", ".")}" '
                    f'name="{t.split("::", 1)[1]}" time="0.01"/>' for t in tests)  # fmt: skip
    junit.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>',
                     encoding="utf-8")  # fmt: skip
    by_path = _shell(f"grade --instance {INSTANCE} --from-report {junit} --no-ledger --json")
    result = _shell(f"grade --instance {INSTANCE} --from-report - --no-ledger --json < {junit}")
    assert result.returncode == by_path.returncode and result.returncode in (0, 1), (result.stderr, by_path.stderr)
    assert json.loads(result.stdout)["score"]["resolved"] == json.loads(by_path.stdout)["score"]["resolved"]
    _refused(_shell(f"grade --instance {INSTANCE} --from-report - --no-ledger < /dev/zero"), "--from-report -",
             "standard input is a device")  # fmt: skip
    _refused(_shell(f"grade --instance {INSTANCE} --from-report - --no-ledger < /dev/null"), "--from-report -")
    empty = subprocess.run([*CLI, "grade", "--instance", str(INSTANCE), "--from-report", "-", "--no-ledger"],
                           input="", capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    _refused(empty, "--from-report -", "empty")


# ---------------------------------------------------------------- D3: non-finite durations in a report


def _junit(tmp_path: Path, time: str) -> Path:
    """A JUnit report of every listed test passing, each with ``time``."""
    tests = [t for key in ("FAIL_TO_PASS", "PASS_TO_PASS") for t in
             (json.loads(FIELDS[key]) if isinstance(FIELDS[key], str) else FIELDS[key])]  # fmt: skip
    cases = "".join(f'<testcase classname="{t.split("::")[0][:-3].replace("/", ".")}" '
                    f'name="{t.split("::", 1)[1]}" time="{time}"/>' for t in tests)  # fmt: skip
    junit = tmp_path / f"junit-{time}.xml"
    junit.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest" time="{time}">{cases}</testsuite>'
                     "</testsuites>", encoding="utf-8")  # fmt: skip
    return junit


def test_finite_duration():
    from pytest_objective_scoring.reports import finite_duration

    assert finite_duration(1.5) == 1.5 and finite_duration("0.25") == 0.25 and finite_duration(3) == 3.0
    for bad in (float("nan"), float("inf"), "nan", "inf", "-inf", "1e999", "x", True, None, [1]):
        assert finite_duration(bad) is None, bad


@pytest.mark.parametrize("time", ["nan", "inf", "1e999"])
def test_a_junit_time_that_is_not_finite_is_unknown_and_the_envelope_is_json(tmp_path, time):
    """The envelope written with --out held NaN (not JSON) and the ledger refused the run."""
    from .runner_helpers import run_cli_here

    out, ledger = tmp_path / "e.json", tmp_path / "l.sqlite"
    result = run_cli_here("grade", "--instance", str(INSTANCE), "--from-report", str(_junit(tmp_path, time)),
                          "--ledger", str(ledger), "--out", str(out))  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    assert "NOT recorded" not in result.stderr, result.stderr

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in the envelope")

    envelope = json.loads(out.read_text(encoding="utf-8"), parse_constant=refuse)
    assert envelope["ledger"].get("seq") == 1, envelope["ledger"]


def test_a_reportlog_or_json_report_duration_that_is_not_finite_is_unknown():
    from pytest_objective_scoring.reports import _number

    assert _number(float("nan")) == 0.0 and _number(float("inf")) == 0.0 and _number(2.0) == 2.0


# ---------------------------------------------------------------- D6/T6: grade-samples rows


PROBLEMS = FIXTURES / "functional" / "problems.jsonl"
SAMPLES = FIXTURES / "functional" / "samples.jsonl"


@pytest.mark.parametrize(("inject", "words"), [
    ('"x": NaN, ', "NaN is not a JSON value"),
    (f'"x": {SURROGATE}, ', "lone surrogate"),
    (f'"x": {"1" * 5000}, ', "a number of 5000 digits"),
])  # fmt: skip
@pytest.mark.parametrize("which", ["--samples", "--problems"])
def test_a_samples_or_problems_row_no_ledger_can_hold_is_refused_by_name(tmp_path, inject, words, which):
    """NaN and the surrogate were graded (and recorded as they could be); the long number was a traceback."""
    from .runner_helpers import run_cli_here

    source = SAMPLES if which == "--samples" else PROBLEMS
    first, *rest = source.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / source.name
    bad.write_text("\n".join([first.replace("{", "{" + inject, 1), *rest]) + "\n", encoding="utf-8")
    files = {"--samples": str(SAMPLES), "--problems": str(PROBLEMS), which: str(bad)}
    result = run_cli_here("grade-samples", "--problems", files["--problems"], "--samples", files["--samples"],
                          "--no-results", "--no-ledger")  # fmt: skip
    _refused(result, f"{bad}:1", words)


# ---------------------------------------------------------------- T7: a Harbor timeout past a week


@pytest.mark.parametrize("value", ["1e10", "1e308"])
def test_a_harbor_timeout_past_a_week_is_refused_in_one_line(tmp_path, value):
    """It was an OverflowError traceback (the deadline past time_t), exit 3."""
    import shutil

    from .runner_helpers import run_cli_here

    task = tmp_path / "task"
    shutil.copytree(FIXTURES / "harbor" / "fix-csv-total", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("timeout_sec = 120.0", f"timeout_sec = {value}"),
                    encoding="utf-8")  # fmt: skip
    _refused(run_cli_here("harbor", "check", str(task)), "timeout_sec", "at most 604800")


# ---------------------------------------------------------------- T8: sets burn --when past year 9999


@pytest.mark.parametrize("when", ["9999999999999", "1" * 5000])
def test_a_burn_time_past_year_9999_is_refused_in_one_line(tmp_path, when):
    """It was a ValueError traceback ("year 318857 is out of range"), exit 3."""
    from .runner_helpers import run_cli_here

    result = run_cli_here("sets", "burn", "s", "--ledger", str(tmp_path / "l.sqlite"), "--decision", "d",
                          "--when", when)  # fmt: skip
    _refused(result, "--when", "after 9999-12-31")


def test_epoch_iso_says_a_time_past_any_date_as_its_number():
    from pytest_objective_scoring.sets import epoch_iso

    assert epoch_iso(9999999999999) == "epoch 9999999999999"
    assert epoch_iso(0) == "1970-01-01T00:00:00Z"


@pytest.mark.parametrize("kind", ["one-document", "one-line"])
def test_predictions_past_the_read_bound_are_refused_never_read_to_their_end(tmp_path, monkeypatch, kind):
    """`cat /dev/zero | grade-batch --predictions -` read until the machine ran out of memory: a whole
    document and a JSONL line are read up to batch.MAX_READ (here made 1 MiB), then refused."""
    from pytest_objective_scoring import batch

    monkeypatch.setattr(batch, "MAX_READ", 1 << 20)
    predictions = tmp_path / ("p.json" if kind == "one-document" else "p.jsonl")
    if kind == "one-document":
        predictions.write_bytes(b"\0" * (3 << 20))
    else:
        predictions.write_bytes(b'{"instance_id": "a", "model_name_or_path": "m", "model_patch": "' + b"x" * (3 << 20))
    result = run_cli_here("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions",
                          str(predictions), "--repos", str(FIXTURES / "repos"), "--ledger", str(tmp_path / "l.sqlite"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert ("larger than 1 MiB as one JSON document" if kind == "one-document" else "a line longer than 1 MiB") in result.stderr


@pytest.mark.parametrize("cases", ['[{"input": "1", "output": NaN}]', '[{"input": "\\ud800", "output": "1"}]',
                                   '[{"input": "1", "output": "1", "n": ' + "7" * 5000 + "}]"])
def test_test_cases_held_in_a_json_string_are_checked_as_the_row_is(tmp_path, cases):
    """LiveCodeBench's public_test_cases is a JSON string inside the row: what the row may not hold (NaN,
    a lone surrogate, a 5000-digit number), it may not hold either."""
    from pytest_objective_scoring.samples import SampleError, _decode_cases

    with pytest.raises(SampleError, match="field 'public_test_cases'"):
        _decode_cases(cases, "public_test_cases", "p.jsonl:1")
