"""The ready-to-copy conftest.py files work as their docstrings say."""

from __future__ import annotations

import json

import pytest

from .conftest import ROOT

EXAMPLES = ROOT / "conftest_examples"
MODULE = "def test_fixed():\n    assert 1 + 1 == 2\n\ndef test_kept():\n    pass\n\ndef test_other():\n    pass\n"


def test_ci_merge_gate(pytester, monkeypatch):
    pytester.makeconftest((EXAMPLES / "ci_merge_gate" / "conftest.py").read_text())
    pytester.makepyfile(test_app=MODULE)
    (pytester.path / ".objective").mkdir()
    instance = {"instance_id": "app-1", "FAIL_TO_PASS": ["test_app.py::test_fixed"], "PASS_TO_PASS": ["test_app.py::test_gone"]}
    (pytester.path / ".objective" / "instance.json").write_text(json.dumps(instance))
    plain = pytester.runpytest_subprocess()
    assert plain.ret == 0 and "objective scoring" not in plain.stdout.str()
    monkeypatch.setenv("OBJECTIVE_GATE", "1")
    gated = pytester.runpytest_subprocess()
    assert gated.ret == 1  # test_gone never ran: not resolved, although every test passed
    envelope = json.loads((pytester.path / ".objective-scoring" / "score.json").read_text())
    assert envelope["score"]["resolved"] == "not_resolved"
    assert envelope["summary"]["PASS_TO_PASS"]["missing"] == ["test_app.py::test_gone"]


def test_swebench_container(pytester, monkeypatch):
    pytester.makeconftest((EXAMPLES / "swebench_container" / "conftest.py").read_text())
    pytester.makepyfile(test_app=MODULE)
    rows = [
        {"instance_id": "org__app-1", "FAIL_TO_PASS": json.dumps(["test_app.py::test_fixed"]),
         "PASS_TO_PASS": json.dumps(["test_app.py::test_kept"])},
        {"instance_id": "org__app-2", "FAIL_TO_PASS": json.dumps(["test_app.py::test_other"]), "PASS_TO_PASS": "[]"},
    ]  # fmt: skip
    (pytester.path / "dataset.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = pytester.path / "score.json"
    monkeypatch.setenv("SWE_DATASET", str(pytester.path / "dataset.jsonl"))
    monkeypatch.setenv("SWE_INSTANCE_ID", "org__app-1")
    monkeypatch.setenv("SWE_SCORE_OUT", str(out))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2, deselected=1)
    envelope = json.loads(out.read_text())
    assert envelope["compat"] == "swebench"
    assert envelope["swebench"]["report"]["org__app-1"]["resolved"] is True


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_every_example_is_tested_and_documented(example):
    assert f"test_{example}" in (ROOT / "tests" / "test_conftest_examples.py").read_text()
    assert f"{example}/conftest.py" in (EXAMPLES / "README.md").read_text()
