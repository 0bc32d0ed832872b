"""Fault injection (issue 28), the readers of grade-batch, import-judged, ab and costs: every input file
is read once through ``inputs.py`` (a named pipe nobody writes to and a device are refused at once;
``<(...)`` and ``-`` work), bounded where a size makes sense, and its JSON refused in one line when
it holds what no ledger can (NaN, a 5000-digit number, a lone surrogate); a 5000-character model name
makes file names that fit; a reading command never reports an empty success for what is not there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_objective_scoring import batch
from pytest_objective_scoring.ledger import Ledger

from .conftest import FIXTURES
from .runner_helpers import run_cli_here

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
PREDICTIONS = FIXTURES / "predictions" / "fixtures.jsonl"
REPOS = FIXTURES / "repos"
MANIFEST = FIXTURES / "ab" / "manifest.json"
ARM = FIXTURES / "ab" / "candidate.jsonl"
CLI = f"{sys.executable} -m pytest_objective_scoring"
JUDGED = '{"task_id": "t1", "harness": "h", "score": 0.5}\n{"task_id": "t2", "harness": "h", "score": 1}\n'


def _one_line_refusal(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def _run(*args: str, timeout: float = 30, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """The command in its own process, guarded by ``timeout``: a reader that blocks fails the test."""
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, **kwargs)  # type: ignore[call-overload]  # fmt: skip


def _bash(line: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``line`` run by bash (its process substitution ``<(...)`` is a pipe named /dev/fd/N)."""
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False)


def _first_prediction(tmp_path: Path, **changes: object) -> Path:
    row = json.loads(PREDICTIONS.read_text().splitlines()[0])  # fixtures__textstats-1, cheap-fix: resolved
    row.update(changes)
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A named pipe nobody writes to."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.fixture
def registered(tmp_path: Path) -> Path:
    """A ledger holding the regression set of the fixture tasks and the fixtures' A/B manifest, preregistered."""
    pytest.importorskip("scipy.stats", reason="ab run needs scipy")
    ledger = tmp_path / "ab.sqlite"
    made = run_cli_here("sets", "create", "regression", "--role", "regression", "--dataset", str(DATASET),
                        "--source", "static:fixtures", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 0, made.stderr
    pre = run_cli_here("ab", "preregister", str(MANIFEST), "--ledger", str(ledger))
    assert pre.returncode == 0, pre.stderr
    return ledger


def _ab_run(ledger: Path, baseline: str, candidate: str = str(ARM)) -> list[str]:
    return ["ab", "run", str(MANIFEST), "--arm", f"baseline={baseline}", "--arm", f"candidate={candidate}",
            "--dataset", str(DATASET), "--repos", str(REPOS), "--ledger", str(ledger)]  # fmt: skip


# ---------------------------------------------------------------- 1, 2: a pipe nobody writes to, a device


def test_a_named_pipe_nobody_writes_to_is_refused_at_once_by_every_reader(tmp_path, fifo):
    ledger = tmp_path / "l.sqlite"
    judged = _run("import-judged", str(fifo), "--benchmark", "b", "--judge", "j", "--ledger", str(ledger))
    _one_line_refusal(judged, str(fifo), "a named pipe nobody writes to")
    manifest = _run("ab", "preregister", str(fifo), "--ledger", str(ledger))
    _one_line_refusal(manifest, str(fifo), "a named pipe nobody writes to")
    predictions = _run("grade-batch", "--predictions", str(fifo), "--dataset", str(DATASET), "--repos", str(REPOS),
                       "--ledger", str(ledger), "--log-dir", str(tmp_path))  # fmt: skip
    _one_line_refusal(predictions, str(fifo), "a named pipe nobody writes to")
    cost = _run("grade", "--repo", str(REPOS / "intervals"), "--instance", str(FIXTURES / "instances" / "intervals.json"),
                "--patch", str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--cost", str(fifo), "--no-ledger")  # fmt: skip
    _one_line_refusal(cost, str(fifo), "a named pipe nobody writes to")
    assert not ledger.exists(), "refused before anything was recorded"


def test_an_arm_that_is_a_named_pipe_nobody_writes_to_is_refused_at_once(registered, fifo):
    result = _run(*_ab_run(registered, str(fifo)), timeout=60)
    _one_line_refusal(result, f"--arm baseline={fifo}", "a named pipe nobody writes to")


@pytest.mark.parametrize("command", ["import-judged", "preregister", "arm"])
def test_a_device_is_refused_never_read_without_bound(tmp_path, command, request):
    ledger = tmp_path / "l.sqlite"
    if command == "import-judged":
        argv = ["import-judged", "/dev/zero", "--benchmark", "b", "--judge", "j", "--ledger", str(ledger)]
    elif command == "preregister":
        argv = ["ab", "preregister", "/dev/zero", "--ledger", str(ledger)]
    else:
        argv = _ab_run(request.getfixturevalue("registered"), "/dev/zero")
    _one_line_refusal(_run(*argv, timeout=60), "/dev/zero", "a device, not a file")


def test_a_manifest_from_a_pipe_that_never_ends_is_refused_at_its_bound(tmp_path):
    result = _bash(f"{CLI} ab preregister <(yes) --ledger {tmp_path / 'l.sqlite'}", tmp_path)
    _one_line_refusal(result, "/dev/fd/", "larger than 16 MiB: expected a JSON manifest")


def test_input_text_reads_at_most_its_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_text("x" * 11)
    from pytest_objective_scoring.cost_ledger import UnreadableInput, input_text

    assert input_text(path, 11, "a thing") == "x" * 11
    with pytest.raises(UnreadableInput, match=r"big\.json: larger than 10 bytes: expected a thing"):
        input_text(path, 10, "a thing")


# ---------------------------------------------------------------- 3: process substitution and standard input, read once


def test_grade_batch_reads_predictions_and_dataset_from_process_substitution(tmp_path):
    preds = _first_prediction(tmp_path)
    ledger = tmp_path / "l.sqlite"
    line = (f"{CLI} grade-batch --predictions <(cat {preds}) --dataset <(cat {DATASET}) --benchmark fixtures "
            f"--repos {REPOS} --ledger {ledger} --log-dir {tmp_path / 'logs'} --json")  # fmt: skip
    result = _bash(line, tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(r["instance_id"], r["failure_class"]) for r in report["results"]] == [("fixtures__textstats-1", "resolved")]
    costs = run_cli_here("costs", "--ledger", str(ledger), "--benchmark", "fixtures", "--json")
    assert costs.returncode == 0 and json.loads(costs.stdout)["runs"] == 1, "recorded under the benchmark named"


def test_a_dataset_from_a_pipe_needs_a_benchmark_name(tmp_path):
    preds = _first_prediction(tmp_path)
    line = f"{CLI} grade-batch --predictions {preds} --dataset <(cat {DATASET}) --repos {REPOS} --ledger {tmp_path / 'l'}"
    _one_line_refusal(_bash(line, tmp_path), "--benchmark NAME is needed: --dataset /dev/fd/")
    assert batch.benchmark_of("data/swe-bench-lite.jsonl") == "swe-bench-lite"
    assert batch.benchmark_of("-") is None and batch.benchmark_of("/dev/fd/63") is None
    assert batch.benchmark_of("/proc/self/fd/3") is None


def test_grade_batch_reads_predictions_from_standard_input(tmp_path):
    preds = _first_prediction(tmp_path)
    result = _run("grade-batch", "--predictions", "-", "--dataset", str(DATASET), "--repos", str(REPOS), "--ledger",
                  str(tmp_path / "l.sqlite"), "--log-dir", str(tmp_path / "logs"), "--json", input=preds.read_text(),
                  timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["failure_class"] == "resolved"


@pytest.mark.parametrize("layout", ["jsonl", "json-list"])
def test_predictions_are_read_once_from_a_pipe(layout):
    """A pipe can be read once: the predictions come whole through one, whatever their layout."""
    import threading

    rows = [json.loads(line) for line in PREDICTIONS.read_text().splitlines()]
    data = ("".join(json.dumps(r) + "\n" for r in rows) if layout == "jsonl" else json.dumps(rows)).encode()
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        predictions = batch.load_predictions(f"/dev/fd/{read}")
    finally:
        writer.join(timeout=10)
        os.close(read)
    assert [(p.instance_id, p.model) for p in predictions] == [(r["instance_id"], r["model_name_or_path"]) for r in rows]


def test_import_judged_reads_process_substitution_and_standard_input(tmp_path):
    rows = tmp_path / "judged.jsonl"
    rows.write_text(JUDGED)
    ledger = tmp_path / "l.sqlite"
    piped = _bash(f"{CLI} import-judged <(cat {rows}) --benchmark b --judge j --ledger {ledger}", tmp_path)
    assert piped.returncode == 0 and "imported 2 judge-based score(s)" in piped.stdout, piped.stderr
    stdin = _run("import-judged", "-", "--benchmark", "b", "--judge", "j", "--ledger", str(ledger), input=JUDGED)
    assert stdin.returncode == 0 and "imported 2 judge-based score(s)" in stdin.stdout, stdin.stderr
    with Ledger(ledger) as opened:
        assert len(list(opened.entries("judged_score"))) == 4


def test_ab_arms_are_read_from_process_substitution(registered, tmp_path):
    """Both arms through pipes: the baseline is read whole and checked, then the short candidate is refused
    for what it holds (not for being a pipe), before anything is graded."""
    baseline = FIXTURES / "ab" / "baseline.jsonl"
    line = f"{CLI} " + " ".join(_ab_run(registered, f"<(cat {baseline})", f"<(head -3 {ARM})"))
    result = _bash(line, tmp_path, timeout=120)
    _one_line_refusal(result, "--arm candidate=/dev/fd/", "seed 2 does not cover the task set")
    with Ledger(registered) as opened:
        assert list(opened.entries("score")) == [], "nothing was graded"


# ---------------------------------------------------------------- 4: a 5000-character model name


def test_a_5000_character_model_name_grades_and_its_files_fit(tmp_path):
    model = "m" * 4990 + "/model"
    preds = _first_prediction(tmp_path, model_name_or_path=model)
    out, logs, ledger = tmp_path / "out", tmp_path / "logs", tmp_path / "l.sqlite"
    out.mkdir()
    result = _run("grade-batch", "--predictions", str(preds), "--dataset", str(DATASET), "--repos", str(REPOS), "--ledger",
                  str(ledger), "--log-dir", str(logs), "--report", str(out / "report.json"), "--run-id", "r1", "--json",
                  timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "NOT written" not in result.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["results"][0]["model_name_or_path"] == model, "the record keeps the whole name"
    [run_report] = report["swebench_reports"]
    assert len(Path(run_report).name.encode()) <= 255 and Path(run_report).name.endswith(".r1.json")
    [folder] = (logs / "run_evaluation" / "r1").iterdir()
    assert len(folder.name.encode()) <= 255 and (folder / "fixtures__textstats-1" / "report.json").is_file()
    with Ledger(ledger) as opened:
        [score] = [e.data for e in opened.entries("score")]
    assert score["model_name_or_path"] == model


def test_long_names_are_cut_to_fit_and_stay_distinct():
    a, b = "é" * 3000 + "a", "é" * 3000 + "b"
    paths = [batch.run_report_path(Path("/r"), m, "run-1") for m in (a, b)]
    assert paths[0] != paths[1] and all(len(p.name.encode()) <= 255 - batch.WHOLE_FILE_ROOM for p in paths)
    assert all(p.name.endswith(".run-1.json") for p in paths)
    folders = [batch.instance_log_dir(Path("/l"), "run-1", m, "x" * 300) for m in (a, b)]
    assert folders[0].parent != folders[1].parent
    assert all(len(part.encode()) <= 255 for f in folders for part in f.parts)
    assert batch.fitted("short") == "short", "a name that fits is as it was (SWE-bench's layout)"
    assert batch.run_report_path(Path("/r"), "org/model", "run-1").name == "org__model.run-1.json"


def test_a_run_id_too_long_for_a_file_name_is_refused_before_work(tmp_path):
    preds = _first_prediction(tmp_path)
    result = run_cli_here("grade-batch", "--predictions", str(preds), "--dataset", str(DATASET), "--repos", str(REPOS),
                          "--ledger", str(tmp_path / "l.sqlite"), "--log-dir", str(tmp_path / "logs"),
                          "--run-id", "r" * 200)  # fmt: skip
    _one_line_refusal(result, "--run-id 'rrrr", "200 bytes long: expected at most 128")
    assert not (tmp_path / "l.sqlite").exists()


# ---------------------------------------------------------------- 5: costs of a benchmark that is not there


def test_costs_of_a_benchmark_the_ledger_does_not_hold_is_exit_2_naming_those_it_holds(tmp_path):
    preds = _first_prediction(tmp_path)
    ledger = tmp_path / "l.sqlite"
    graded = _run("grade-batch", "--predictions", str(preds), "--dataset", str(DATASET), "--repos", str(REPOS),
                  "--ledger", str(ledger), "--log-dir", str(tmp_path / "logs"), timeout=120)  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    _one_line_refusal(run_cli_here("costs", "--ledger", str(ledger), "--benchmark", "nosuch"),
                      "--benchmark nosuch: no graded run of that benchmark", "(benchmarks: fixtures)")  # fmt: skip
    _one_line_refusal(run_cli_here("costs", "--ledger", str(ledger), "--benchmark", "nosuch", "--json"), "(benchmarks: fixtures)")
    shown = run_cli_here("costs", "--ledger", str(ledger), "--benchmark", "fixtures", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["runs"] == 1


def test_costs_of_a_benchmark_in_an_empty_ledger_names_none(tmp_path):
    ledger = tmp_path / "l.sqlite"
    with Ledger(ledger) as opened:
        opened.append("note", {"text": "nothing graded"})
    _one_line_refusal(run_cli_here("costs", "--ledger", str(ledger), "--benchmark", "b"), "(benchmarks: none)")


def test_select_runs_refuses_a_harness_and_benchmark_that_never_met(tmp_path):
    from pytest_objective_scoring.commands.costs import select_runs
    from pytest_objective_scoring.errors import CommandError

    class Run:
        def __init__(self, harness: str, benchmark: str) -> None:
            self.harness, self.benchmark = harness, benchmark

    runs = [Run("a", "x"), Run("b", "y")]
    assert [r.harness for r in select_runs(runs, ["a"], "x", tmp_path)] == ["a"]
    with pytest.raises(CommandError, match=r"--benchmark y --harness a: no graded run .* \(their benchmarks: x\)"):
        select_runs(runs, ["a"], "y", tmp_path)


# ---------------------------------------------------------------- 6: JSON no ledger can hold, in every reader


BAD_JSON = [
    ('"x": NaN', "NaN is not a JSON value"),
    ('"x": -Infinity', "-Infinity is not a JSON value"),
    ('"x": ' + "1" * 5000, "a number of 5000 digits: expected at most 4300"),
    ('"x": 1' + "0" * 400 + ".5", "too large to be read"),
    ('"x": "a\\ud800b"', "a string holding a lone surrogate"),
    ('"x": ' + "[" * 200 + "]" * 200, "nested more than 100 levels deep"),
]
BAD_IDS = ["nan", "infinity", "5000-digits", "float-overflow", "lone-surrogate", "deep"]


@pytest.mark.parametrize(("extra", "said"), BAD_JSON, ids=BAD_IDS)
def test_predictions_holding_what_no_ledger_can_are_refused_before_work(tmp_path, extra, said):
    row = PREDICTIONS.read_text().splitlines()[0]
    preds = tmp_path / "preds.jsonl"
    preds.write_text(row[:-1] + ", " + extra + "}\n")
    ledger = tmp_path / "l.sqlite"
    result = run_cli_here("grade-batch", "--predictions", str(preds), "--dataset", str(DATASET), "--repos", str(REPOS),
                          "--ledger", str(ledger), "--log-dir", str(tmp_path / "logs"))  # fmt: skip
    _one_line_refusal(result, f"{preds}:1: ", said)
    assert not ledger.exists(), "nothing was graded"


@pytest.mark.parametrize(("extra", "said"), BAD_JSON, ids=BAD_IDS)
def test_judged_rows_holding_what_no_ledger_can_are_refused(tmp_path, extra, said):
    rows = tmp_path / "judged.jsonl"
    rows.write_text('{"task_id": "t", "harness": "h", "score": 1, ' + extra + "}\n")
    result = run_cli_here("import-judged", str(rows), "--benchmark", "b", "--judge", "j", "--ledger", str(tmp_path / "l"))
    _one_line_refusal(result, f"{rows}:1: ", said)


def test_a_judged_score_beyond_a_float_is_refused(tmp_path):
    rows = tmp_path / "judged.jsonl"
    rows.write_text('{"task_id": "t", "harness": "h", "score": 1' + "0" * 400 + "}\n")
    result = run_cli_here("import-judged", str(rows), "--benchmark", "b", "--judge", "j", "--ledger", str(tmp_path / "l"))
    _one_line_refusal(result, "field 'score': expected a number, got 1000000")


@pytest.mark.parametrize(("extra", "said"), BAD_JSON, ids=BAD_IDS)
def test_a_manifest_holding_what_no_ledger_can_is_refused(tmp_path, extra, said):
    text = MANIFEST.read_text().rstrip()
    manifest = tmp_path / "manifest.json"
    manifest.write_text(text.replace('"revision": "1"', '"revision": "1", ' + extra, 1))
    result = run_cli_here("ab", "preregister", str(manifest), "--ledger", str(tmp_path / "l.sqlite"))
    _one_line_refusal(result, str(manifest), said)


@pytest.mark.parametrize("field", ["timeout", "temperature"])
def test_a_frozen_number_no_float_holds_is_refused_at_preregistration(tmp_path, field):
    data = json.loads(MANIFEST.read_text())
    data["frozen"][field] = 10**400  # an int the JSON reader holds, and float() cannot
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(data))
    result = run_cli_here("ab", "preregister", str(manifest), "--ledger", str(tmp_path / "l.sqlite"))
    _one_line_refusal(result, f"field {field!r}: expected a finite number, got 1000000")


def test_a_dollar_cap_no_float_holds_is_refused(tmp_path):
    data = json.loads(MANIFEST.read_text())
    data["decision_rule"]["max_dollars_per_extra_resolve"] = 10**400
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(data))
    result = run_cli_here("ab", "preregister", str(manifest), "--ledger", str(tmp_path / "l.sqlite"))
    _one_line_refusal(result, "max_dollars_per_extra_resolve: expected dollars >= 0")


@pytest.mark.parametrize(("extra", "said"), BAD_JSON[:3], ids=BAD_IDS[:3])
def test_an_arm_holding_what_no_ledger_can_is_refused_before_grading(registered, tmp_path, extra, said):
    lines = ARM.read_text().splitlines()
    arm = tmp_path / "arm.jsonl"
    arm.write_text("\n".join([lines[0][:-1] + ", " + extra + "}", *lines[1:]]) + "\n")
    result = run_cli_here(*_ab_run(registered, str(FIXTURES / "ab" / "baseline.jsonl"), str(arm)))
    _one_line_refusal(result, f"{arm}:1: ", said)
    with Ledger(registered) as opened:
        assert list(opened.entries("ab_predictions")) == [] and list(opened.entries("score")) == []


@pytest.mark.parametrize(("content", "said"), [
    ('{"tokens": NaN}', "NaN is not a JSON value"),
    ('{"tokens": 1' + "0" * 400 + "}", "field 'tokens': expected a whole number >= 0, got 1000"),
    ('{"dollars": ' + "9" * 5000 + "}", "a number of 5000 digits"),
], ids=["nan", "beyond-a-float", "5000-digits"])  # fmt: skip
def test_a_cost_file_holding_what_no_ledger_can_is_refused(tmp_path, content, said):
    from pytest_objective_scoring.cost_ledger import CostError, load_harness_cost

    path = tmp_path / "cost.json"
    path.write_text(content)
    with pytest.raises(CostError, match=said.replace("(", r"\(")) as caught:
        load_harness_cost(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)
