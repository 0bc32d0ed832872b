"""Bounded nesting (issue 27): a file nested deeper than any real instance, dataset or report is
bad input (exit 2, one line naming the file), never a ``RecursionError`` (exit 3)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from .runner_helpers import run_cli_here

from pytest_objective_scoring import nesting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEEP = 100_000


def arrays(levels: int) -> str:
    return "[" * levels + "]" * levels


# --------------------------------------------------------------------------- the module


def test_the_limit_is_inclusive_and_what_passes_is_the_parsed_value() -> None:
    assert nesting.loads(arrays(nesting.LIMIT)) == json.loads(arrays(nesting.LIMIT))
    with pytest.raises(nesting.TooDeep) as caught:
        nesting.loads(arrays(nesting.LIMIT + 1))
    assert caught.value.pos == nesting.LIMIT  # the offset of the first bracket past the limit
    assert "nested more than 100 levels deep" in caught.value.msg


def test_a_document_the_parser_gives_up_on_is_refused_the_same_way() -> None:
    text = '{"a": "[[[", "b": ' + arrays(DEEP) + "}"
    with pytest.raises(json.JSONDecodeError) as caught:  # every reader's handling of invalid JSON applies
        nesting.loads(text)
    assert isinstance(caught.value, nesting.TooDeep)
    assert caught.value.pos == text.index("[[[[") + nesting.LIMIT - 1  # the object is level 1; brackets in strings do not count
    with pytest.raises(nesting.TooDeep):
        nesting.loads(text.encode())


def test_objects_count_like_arrays_and_keyword_arguments_pass_through() -> None:
    deep = "{}"
    for _ in range(nesting.LIMIT):
        deep = '{"k": ' + deep + "}"
    with pytest.raises(nesting.TooDeep):
        nesting.loads(deep)
    assert nesting.loads('{"a": 1.5}', parse_float=str) == {"a": "1.5"}


def test_depth_walks_without_recursion() -> None:
    value: list = []
    for _ in range(DEEP):
        value = [value]
    assert nesting.depth(value) == nesting.LIMIT + 1  # stops as soon as the limit is passed
    assert nesting.depth({"a": [1, {"b": []}], "c": 2}) == 4
    assert nesting.depth(7) == 0


def test_toml_and_yaml_readers_are_bounded_too() -> None:
    with pytest.raises(tomllib.TOMLDecodeError, match="nested more than 100"):
        nesting.bounded(tomllib.loads, "a = " + arrays(DEEP), tomllib.TOMLDecodeError)
    with pytest.raises(tomllib.TOMLDecodeError, match="nested more than 100"):
        nesting.bounded(tomllib.loads, "a = " + arrays(nesting.LIMIT + 1), tomllib.TOMLDecodeError)
    assert nesting.bounded(tomllib.loads, "a = [[1]]", tomllib.TOMLDecodeError) == {"a": [[1]]}


# --------------------------------------------------------------------------- every reader, end to end


def refused(result, name: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "nested more than 100 levels deep" in lines[0], lines
    return lines[0]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("junit.xml", "<testsuites>" + "<testsuite>" * DEEP + "</testsuite>" * DEEP + "</testsuites>"),
        ("run.reportlog.jsonl", '{"$report_type": "SessionStart", "x": ' + arrays(DEEP) + "}\n"),
        ("report.json", '{"exitcode": 0, "tests": ' + arrays(DEEP) + "}"),
        ("indented.json", '{\n  "exitcode": 0,\n  "tests": ' + arrays(DEEP) + "\n}"),
    ],
)
def test_a_deep_report_is_bad_input(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    result = run_cli_here("grade", "--instance", str(FIXTURES / "instances" / "csvlite.json"), "--from-report",
                          str(tmp_path / name), "--no-ledger")  # fmt: skip
    refused(result, name)


def test_a_deep_instance_is_bad_input_as_a_document_and_as_a_json_encoded_id_list(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text('{"exitcode": 0, "tests": []}')
    instance = json.loads((FIXTURES / "instances" / "csvlite.json").read_text())
    (tmp_path / "deep.json").write_text(json.dumps({**instance, "FAIL_TO_PASS": []})[:-1] + ', "x": ' + arrays(DEEP) + "}")
    refused(run_cli_here("grade", "--instance", str(tmp_path / "deep.json"), "--from-report", str(report), "--no-ledger"),
            "deep.json")  # fmt: skip
    (tmp_path / "string.json").write_text(json.dumps({**instance, "FAIL_TO_PASS": arrays(DEEP)}))
    line = refused(run_cli_here("grade", "--instance", str(tmp_path / "string.json"), "--from-report", str(report),
                                "--no-ledger"), "string.json")  # fmt: skip
    assert "'FAIL_TO_PASS'" in line


def test_a_deep_dataset_or_predictions_line_is_bad_input(tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    good = (FIXTURES / "datasets" / "fixtures.jsonl").read_text().splitlines()[0]
    dataset.write_text(good + "\n" + '{"instance_id": "x", "FAIL_TO_PASS": ' + arrays(DEEP) + "}\n")
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": json.loads(good)["instance_id"], "model_patch": ""}) + "\n")
    line = refused(run_cli_here("grade-batch", "--dataset", str(dataset), "--predictions", str(predictions),
                                "--ledger", str(tmp_path / "l.sqlite")), "data.jsonl")  # fmt: skip
    assert "data.jsonl:2" in line
    predictions.write_text('{"instance_id": ' + arrays(DEEP) + "}\n")
    refused(run_cli_here("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions",
                         str(predictions), "--ledger", str(tmp_path / "l.sqlite")), "preds.jsonl")  # fmt: skip


def test_a_deep_environments_file_is_bad_input(tmp_path: Path) -> None:
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": "fixtures__textstats-1", "model_name_or_path": "m", "model_patch": ""}) + "\n")
    for name, text in (("envs.json", '{"a/b@1": ' + arrays(DEEP) + "}"), ("envs.toml", "x = " + arrays(DEEP))):
        (tmp_path / name).write_text(text)
        refused(run_cli_here("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"),
                             "--predictions", str(predictions), "--environments", str(tmp_path / name),
                             "--ledger", str(tmp_path / "l.sqlite")), name)  # fmt: skip


def test_a_deep_harbor_task_configuration_is_bad_input(tmp_path: Path) -> None:
    task = tmp_path / "task"
    shutil.copytree(FIXTURES / "harbor" / "fix-csv-total", task)
    (task / "task.toml").write_text((task / "task.toml").read_text() + "\n[objective_scoring_deep]\nx = " + arrays(DEEP) + "\n")
    refused(run_cli_here("harbor", "check", str(task)), "task.toml")


# --------------------------------------------------------------------------- values JSON does not have


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_an_instance_holding_nan_or_infinity_is_bad_input(tmp_path: Path, constant: str) -> None:
    """Python's json reads NaN and Infinity; no digest, ledger or other tool can hold them. An
    instance with one ended in a ValueError traceback (exit 3) after its tests ran (issue 28)."""
    report = tmp_path / "report.json"
    report.write_text('{"exitcode": 0, "tests": []}')
    instance = (FIXTURES / "instances" / "csvlite.json").read_text().rstrip().rstrip("}") + f', "weight": {constant}}}'
    (tmp_path / "odd.json").write_text(instance)
    result = run_cli_here("grade", "--instance", str(tmp_path / "odd.json"), "--from-report", str(report), "--no-ledger")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"objective-score grade: error: {tmp_path / 'odd.json'}: {constant} is not a JSON value (JSON has no NaN or "
        "Infinity; Python's json module reads them, other tools do not, and no digest or ledger can hold them): "
        "write null or a number"]


def test_a_dataset_line_holding_infinity_is_bad_input_before_anything_runs(tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    good = (FIXTURES / "datasets" / "fixtures.jsonl").read_text().splitlines()[0]
    dataset.write_text(good + "\n" + good.rstrip().rstrip("}") + ', "weight": Infinity}\n')
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": json.loads(good)["instance_id"], "model_name_or_path": "m",
                                       "model_patch": ""}) + "\n")  # fmt: skip
    result = run_cli_here("grade-batch", "--dataset", str(dataset), "--predictions", str(predictions),
                          "--ledger", str(tmp_path / "l.sqlite"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "data.jsonl:2" in result.stderr and "Infinity is not a JSON value" in result.stderr
    assert not (tmp_path / "l.sqlite").exists()


def test_the_plugin_refuses_an_instance_holding_nan_before_the_tests_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    pytester.makefile(".json", instance='{"instance_id": "x", "FAIL_TO_PASS": ["test_a.py::test_a"], '
                                       '"PASS_TO_PASS": [], "weight": NaN}')  # fmt: skip
    result = pytester.runpytest_subprocess("--objective-score=instance.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*NaN is not a JSON value*"])
    assert "passed" not in result.stdout.str()
