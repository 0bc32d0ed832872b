"""``--against-gold``: a resolved candidate's tests beyond the listed ones, under it and under gold.

Pure tests of :mod:`pytest_objective_scoring.against_gold` (the scope, the comparison, the second
figure), then real gradings on the fixture project textstats with an instance whose PASS_TO_PASS
leaves out the word-count tests: its ``break_p2p`` candidate is resolved by the listed tests and
breaks an unlisted one, which the check must find; gold must be clean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import against_gold as ag
from pytest_objective_scoring import outcomes as oc
from pytest_objective_scoring.batch import summarize
from pytest_objective_scoring.ledger import Ledger, score_entry, verify

from .conftest import FIXTURES
from .runner_helpers import grade, instance_of, make_patch, patch_of
from .runner_helpers import run_cli_here as run_cli


def records(**outcomes: str) -> dict[str, str]:
    return {f"t.py::{name}": outcome for name, outcome in outcomes.items()}


# ---------------------------------------------------------------------------- the scope


def touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")


def test_packages_scope_is_the_touched_folders_tests_and_the_listed_files_neighbours(tmp_path: Path) -> None:
    touch(tmp_path, "src/pkg/mod.py", "src/pkg/tests/test_mod.py", "src/pkg/sub/deep_test.py", "src/pkg/helper.py",
          "src/pkg/node_modules/test_vendored.py", "src/other/test_other.py", "tests/test_listed.py", "tests/test_beside.py",
          "tests/deep/test_deeper.py", "tests/conftest.py", "test_root.py")  # fmt: skip
    files = ag.scope_files(tmp_path, ["src/pkg/mod.py", "README.rst"], ["tests/test_listed.py"])
    assert files == ["src/pkg/sub/deep_test.py", "src/pkg/tests/test_mod.py", "tests/test_beside.py", "tests/test_listed.py"]


def test_a_root_level_gold_file_takes_the_root_test_files_only_never_the_whole_tree(tmp_path: Path) -> None:
    touch(tmp_path, "setup.py", "test_setup.py", "pkg/test_inner.py")
    assert ag.scope_files(tmp_path, ["setup.py"], []) == ["test_setup.py"]


def test_the_repository_s_python_files_patterns_name_its_test_files(tmp_path: Path) -> None:
    """pylint names its tests ``unittest_*.py`` (``python_files`` in its configuration): the scope follows."""
    touch(tmp_path, "pylint/lint/run.py", "tests/lint/unittest_lint.py", "tests/lint/test_other.py", "tests/lint/helper.py")
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\npython_files = *test_*.py\n")
    patterns = ag.test_patterns(tmp_path / "setup.cfg")
    assert patterns == ("*test_*.py",)
    assert ag.scope_files(tmp_path, ["pylint/lint/run.py"], ["tests/lint/unittest_lint.py"], patterns) == [
        "tests/lint/test_other.py", "tests/lint/unittest_lint.py"]
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\npython_files = ["check_*.py", "*_spec.py"]\n')
    assert ag.test_patterns(tmp_path / "pyproject.toml") == ("check_*.py", "*_spec.py")
    (tmp_path / "tox.ini").write_text("[tox]\nenvlist = py\n")
    assert ag.test_patterns(tmp_path / "tox.ini") == ag.DEFAULT_PATTERNS  # no pytest section: pytest's default
    (tmp_path / "bad.toml").write_text("not [ toml")
    assert ag.test_patterns(tmp_path / "bad.toml") == ag.DEFAULT_PATTERNS
    assert ag.test_patterns(None) == ag.DEFAULT_PATTERNS


def test_a_python_files_glob_with_a_folder_names_that_folder_s_files_only(tmp_path: Path) -> None:
    """pytest's own configuration: ``python_files = test_*.py *_test.py testing/python/*.py``. The
    gold-touched ``src/_pytest/_code/`` holds no test file (pytest-dev__pytest-9359: its sources were
    taken for tests while the folder glob was matched against the name alone)."""
    patterns = ("test_*.py", "*_test.py", "testing/python/*.py")
    touch(tmp_path, "src/_pytest/_code/source.py", "src/_pytest/_code/code.py", "testing/code/test_source.py",
          "testing/code/conftest.py", "testing/python/collect.py", "testing/python/helpers/x.py")  # fmt: skip
    assert ag.scope_files(tmp_path, ["src/_pytest/_code/source.py"], ["testing/code/test_source.py"], patterns) == [
        "testing/code/test_source.py"]
    assert ag.is_test_file("testing/python/collect.py", patterns)
    assert not ag.is_test_file("src/_pytest/python.py", patterns) and not ag.is_test_file("testing/python/a.txt", patterns)


def test_the_listed_tests_files_are_in_the_scope_whatever_their_names(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/mod.py", "checks/listed_checks.py", "checks/test_near.py")
    assert ag.scope_files(tmp_path, ["pkg/mod.py"], ["checks/listed_checks.py", "checks/gone.py"]) == [
        "checks/listed_checks.py", "checks/test_near.py"]


def test_links_are_not_followed_into_the_scope(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/mod.py", "elsewhere/test_far.py")
    (tmp_path / "pkg" / "test_link.py").symlink_to(tmp_path / "elsewhere" / "test_far.py")
    assert ag.scope_files(tmp_path, ["pkg/mod.py"], []) == []


# ---------------------------------------------------------------------------- the comparison


def test_a_regression_is_a_test_gold_passes_and_the_candidate_does_not_listed_tests_left_out() -> None:
    gold = records(a="passed", b="passed", c="failed", d="passed", listed="passed", gone="passed")
    mine = records(a="passed", b="failed", c="failed", d="skipped", listed="failed")
    found, compared, not_passing = ag.regressions(gold, mine, ["t.py::listed"])
    assert [(r["nodeid"], r["gold"], r["candidate"]) for r in found] == [
        ("t.py::b", "passed", "failed"), ("t.py::d", "passed", "skipped"), ("t.py::gone", "passed", oc.MISSING)]
    assert (compared, not_passing) == (4, 1)  # a, b, d, gone compared; c fails under gold: never compared


def test_a_regression_counts_only_when_its_second_runs_show_it_again() -> None:
    found, _, _ = ag.regressions(records(a="passed", b="passed", c="passed"), records(a="failed", b="failed", c="failed"), [])
    kept, unstable = ag.confirmed(found, records(a="passed", b="passed", c="failed"), records(a="failed", b="passed", c="failed"))
    assert [r["nodeid"] for r in kept] == ["t.py::a"]
    assert [(r["nodeid"], r["second_gold"], r["second_candidate"]) for r in unstable] == [
        ("t.py::b", "passed", "passed"), ("t.py::c", "failed", "failed")]


@pytest.mark.parametrize(("status", "resolved", "figure"), [
    ("clean", True, True), ("regressions", True, False), ("incomplete", True, None), ("not_checked", True, None),
    ("not_checked", False, False),
])  # fmt: skip
def test_the_second_figure_is_derived_from_the_status_never_given(status: str, resolved: bool, figure: bool | None) -> None:
    data = ag.section("packages", status, resolved=resolved)
    assert data["resolved_against_gold"] is figure
    assert ag.figure_of({"against_gold": data}) is figure
    assert ag.figure_of({}) is None


def test_over_many_gradings_an_unknown_check_is_never_counted_clean() -> None:
    assert ag.summarise([(None, None), (None, None)]) is None
    summary = ag.summarise([("clean", True), ("regressions", False), ("incomplete", None), ("not_checked", False), (None, None)])
    assert summary == {"graded": 4, "resolved_against_gold": 1, "regressions": 1, "unknown": 1, "rate": 0.25}


def test_the_ledger_keeps_the_check_compactly_and_entries_without_it_are_unchanged() -> None:
    data = ag.section("suite", "regressions", found=[{"nodeid": "t.py::b", "gold": "passed", "candidate": "failed",
                                                      "message": "x" * 1000}], compared=3, runs={"gold": {"output_tail": "y"}})  # fmt: skip
    entry = score_entry({"instance_id": "i", "against_gold": data}, "runner")
    assert entry["against_gold"] == {"scope": "suite", "status": "regressions", "reason": None, "resolved_against_gold": False,
                                     "compared": 3, "gold_not_passing": 0, "regression_count": 1, "unstable_count": 0,
                                     "regressions": ["t.py::b"]}  # fmt: skip
    assert "against_gold" not in score_entry({"instance_id": "i"}, "runner")


def test_the_batch_summary_counts_the_second_figure_beside_the_verdicts() -> None:
    rows = [{"model_name_or_path": "m", "failure_class": "resolved", "resumed": False,
             "against_gold": {"status": "clean", "resolved_against_gold": True}},
            {"model_name_or_path": "m", "failure_class": "resolved", "resumed": False,
             "against_gold": {"status": "regressions", "resolved_against_gold": False}},
            {"model_name_or_path": "m", "failure_class": "not_resolved", "resumed": False,
             "against_gold": {"status": "not_checked", "resolved_against_gold": False}},
            {"model_name_or_path": "plain", "failure_class": "resolved", "resumed": False}]  # fmt: skip
    table = summarize(rows)
    assert (table["m"]["resolved"], table["m"]["resolved_against_gold"], table["m"]["regressed"]) == (2, 1, 1)
    assert "resolved_against_gold" not in table["plain"]


# ---------------------------------------------------------------------------- real gradings


def narrow() -> Any:
    """textstats with PASS_TO_PASS leaving out the word-count tests: ``break_p2p`` passes the listed ones."""
    return instance_of("textstats", PASS_TO_PASS=[t for t in instance_of("textstats").pass_to_pass if "word_count" not in t])


@pytest.mark.slow
def test_gold_is_clean_and_a_candidate_the_listed_tests_resolve_is_caught_breaking_an_unlisted_test() -> None:
    instance = narrow()
    gold = grade("textstats", patch_of("textstats", "gold"), instance=instance, against_gold="packages")
    check = gold.envelope["against_gold"]
    assert gold.score is not None and gold.score["resolved"] == "resolved"
    assert (check["status"], check["resolved_against_gold"], check["regression_count"]) == ("clean", True, 0)
    assert check["files"] == ["tests/test_sentences.py", "tests/test_words.py"] and check["compared"] == 5

    broken = grade("textstats", patch_of("textstats", "break_p2p"), instance=instance, against_gold="packages")
    check = broken.envelope["against_gold"]
    assert broken.score is not None and broken.score["resolved"] == "resolved"  # the Score stays the listed tests'
    assert broken.exit_code == 0
    assert (check["status"], check["resolved_against_gold"]) == ("regressions", False)
    assert [(r["nodeid"], r["gold"], r["candidate"]) for r in check["regressions"]] == [
        ("tests/test_words.py::test_word_count[don't panic]", "passed", "failed")]
    assert set(check["runs"]) == {"gold", "candidate", "gold-again", "candidate-again"}  # confirmed by second runs
    assert "against_gold" in str(broken.envelope["runner"]["steps"])


@pytest.mark.slow
def test_the_check_leaves_the_score_as_it_is_and_a_not_resolved_candidate_is_not_checked() -> None:
    instance = narrow()
    plain = grade("textstats", patch_of("textstats", "break_p2p"), instance=instance)
    assert "against_gold" not in plain.envelope
    empty = grade("textstats", patch_of("textstats", "empty"), instance=instance, against_gold="suite")
    check = empty.envelope["against_gold"]
    assert (check["status"], check["resolved_against_gold"], check["runs"]) == ("not_checked", False, {})
    assert check["reason"] == "the candidate is not resolved"
    noapply = grade("textstats", patch_of("textstats", "noapply"), instance=instance, against_gold="suite")
    assert noapply.envelope["against_gold"]["status"] == "not_checked"
    assert noapply.envelope["against_gold"]["resolved_against_gold"] is False


@pytest.mark.slow
def test_the_suite_scope_runs_the_whole_suite() -> None:
    result = grade("textstats", patch_of("textstats", "break_p2p"), instance=narrow(), against_gold="suite")
    check = result.envelope["against_gold"]
    assert check["files"] is None and check["status"] == "regressions" and check["compared"] == 5


@pytest.mark.slow
def test_a_regression_seen_only_beside_other_tests_is_unstable_and_not_counted(tmp_path: Path) -> None:
    """The candidate leaks state: an unlisted test fails only after another test ran first. Run alone
    (the second runs), it passes: the regression is ``unstable``, reported and not counted."""
    import shutil

    from pytest_objective_scoring.instances import parse_instance
    from pytest_objective_scoring.symbols import apply_hunks, parse_diff

    project = tmp_path / "textstats"
    shutil.copytree(FIXTURES / "repos" / "textstats", project)
    sentences = project / "tests" / "test_sentences.py"
    sentences.write_text(sentences.read_text() + (
        "\n\ndef test_remember_first():\n    from textstats.words import remember\n    assert remember('a') >= 1\n"
        "\n\ndef test_remember_counts_from_one():\n    from textstats.words import remember\n    assert remember('b') == 1\n"))
    fixed = apply_hunks((project / "textstats" / "words.py").read_text(), parse_diff(patch_of("textstats", "gold").decode())[0])
    assert fixed is not None
    honest = fixed + "\n\ndef remember(word):\n    return 1\n"
    leaky = fixed + "\n\n_SEEN = []\n\n\ndef remember(word):\n    _SEEN.append(word)\n    return len(_SEEN)\n"
    task = parse_instance({**narrow().fields, "patch": make_patch(project, {"textstats/words.py": honest}, tmp_path)}, "<leaky>")
    result = grade("textstats", make_patch(project, {"textstats/words.py": leaky}, tmp_path).encode(), repo=project,
                   instance=task, against_gold="packages")  # fmt: skip
    check = result.envelope["against_gold"]
    assert result.score is not None and result.score["resolved"] == "resolved"
    assert (check["status"], check["resolved_against_gold"], check["regression_count"]) == ("clean", True, 0), check
    assert [r["nodeid"] for r in check["unstable"]] == ["tests/test_sentences.py::test_remember_counts_from_one"]
    assert (check["unstable"][0]["candidate"], check["unstable"][0]["second_candidate"]) == ("failed", "passed")


@pytest.mark.slow
def test_grade_and_its_ledger_carry_the_second_figure(tmp_path: Path) -> None:
    instance = tmp_path / "narrow.json"
    instance.write_text(json.dumps(narrow().fields))
    ledger = tmp_path / "ledger.db"
    result = run_cli("grade", "--repo", str(FIXTURES / "repos" / "textstats"), "--instance", str(instance), "--patch",
                     str(FIXTURES / "patches" / "textstats" / "break_p2p.diff"), "--against-gold", "packages",
                     "--ledger", str(ledger))  # fmt: skip
    assert result.returncode == 0, result.stderr  # the Score's verdict decides the exit status
    assert "resolved and free of regressions against gold (packages): no [regressions]" in result.stdout
    assert "regression: tests/test_words.py::test_word_count[don't panic] (gold passed, candidate failed)" in result.stdout
    with Ledger(ledger, read_only=True) as opened:
        entry = next(e for e in opened.entries("score"))
        assert entry.data["against_gold"]["regressions"] == ["tests/test_words.py::test_word_count[don't panic]"]
        assert entry.data["score"]["resolved"] == "resolved"
    assert verify(ledger).ok
    shown = run_cli("scorecard", "last", "--ledger", str(ledger), "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["against_gold"] == {"graded": 1, "resolved_against_gold": 0, "regressions": 1, "unknown": 0, "rate": 0.0}
    assert "against_gold" not in data["scorecard"]  # the spec's record keeps exactly its fields
    table = run_cli("scorecard", "last", "--ledger", str(ledger))
    assert "resolved and free of regressions against gold (--against-gold, beside the Scorecard): 0 of 1" in table.stdout


def test_the_option_refuses_an_unknown_scope() -> None:
    result = run_cli("grade", "--against-gold", "everything", "--instance", "x.json")
    assert result.returncode == 2 and "--against-gold" in result.stderr and "packages" in result.stderr


def test_the_check_is_part_of_a_batch_job_s_identity_and_refused_with_a_report() -> None:
    from pytest_objective_scoring.batch import job_key

    instance = instance_of("textstats")
    plain = job_key(instance, "m", "diff", {"compat": "strict"})
    assert plain == job_key(instance, "m", "diff", {"compat": "strict", "against_gold": None})  # keys without it unchanged
    assert plain != job_key(instance, "m", "diff", {"compat": "strict", "against_gold": "packages"})
    assert job_key(instance, "m", "diff", {"against_gold": "suite"}) != job_key(instance, "m", "diff", {"against_gold": "packages"})
    result = run_cli("grade", "--instance", str(FIXTURES / "instances" / "textstats.json"), "--from-report",
                     str(FIXTURES / "junit" / "nonexistent.xml"), "--against-gold", "packages", "--no-ledger")  # fmt: skip
    assert result.returncode == 2 and "not with --from-report" in result.stderr


@pytest.mark.slow
def test_a_file_that_fails_to_collect_does_not_stop_the_wider_runs(tmp_path: Path) -> None:
    """A test file beside the listed ones that cannot be imported (under gold too) is named in
    ``collection_errors``; the other files' tests are still compared, and the regression found."""
    import shutil

    project = tmp_path / "textstats"
    shutil.copytree(FIXTURES / "repos" / "textstats", project)
    (project / "tests" / "test_broken.py").write_text("import not_installed_anywhere\n")
    result = grade("textstats", patch_of("textstats", "break_p2p"), repo=project, instance=narrow(), against_gold="packages")
    check = result.envelope["against_gold"]
    assert check["collection_errors"] == {"gold": ["tests/test_broken.py"], "candidate": ["tests/test_broken.py"]}
    assert (check["status"], check["compared"], check["regression_count"]) == ("regressions", 5, 1)


@pytest.mark.slow
def test_a_wider_run_the_machine_cannot_make_leaves_the_check_unknown_and_the_verdict_as_it_was(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from pytest_objective_scoring import runner

    def broken(self: Any, verdict: Any, test_files: Any) -> Any:
        raise runner.InfraFailure("setup", "the sandbox could not be set up for the against-gold run: no space left")

    monkeypatch.setattr(runner.Run, "against_gold", broken)
    result = grade("textstats", patch_of("textstats", "gold"), instance=narrow(), against_gold="packages")
    assert result.score is not None and result.score["resolved"] == "resolved" and result.failure_class == "none"
    check = result.envelope["against_gold"]
    assert (check["status"], check["resolved_against_gold"]) == ("incomplete", None)
    assert check["reason"].startswith("infrastructure (setup): the sandbox could not be set up")


def test_the_a_b_details_and_report_show_each_arm_s_second_figure_beside_its_resolves() -> None:
    from types import SimpleNamespace

    from pytest_objective_scoring.ab_comparison import against_gold_per_arm
    from pytest_objective_scoring.ab_report import _against_gold_lines

    manifest = SimpleNamespace(name="e", seeds=(1, 2), arms=(SimpleNamespace(name="baseline"), SimpleNamespace(name="candidate")))

    def row(arm: str, seed: int, task: str) -> dict[str, Any]:
        clean = arm == "baseline" or task == "t1"
        return {"failure_class": "resolved", "against_gold": {"status": "clean" if clean else "regressions",
                                                              "resolved_against_gold": clean}}  # fmt: skip

    rows = {(f"ab:e/{arm}/seed{seed}", task): row(arm, seed, task)
            for arm in ("baseline", "candidate") for seed in (1, 2) for task in ("t1", "t2")}  # fmt: skip
    per_arm = against_gold_per_arm(manifest, ["t1", "t2"], rows)  # type: ignore[arg-type]
    assert per_arm is not None
    assert per_arm["baseline"] == {"graded": 4, "resolved_against_gold": 4, "regressions": 0, "unknown": 0, "rate": 1.0, "resolved": 4}
    assert per_arm["candidate"] == {"graded": 4, "resolved_against_gold": 2, "regressions": 2, "unknown": 0, "rate": 0.5, "resolved": 4}
    lines = _against_gold_lines({"against_gold": per_arm})
    assert "| candidate | 4 | 4 | 2 | 2 | 0 |" in lines
    plain = {key: {"failure_class": "resolved"} for key in rows}
    assert against_gold_per_arm(manifest, ["t1", "t2"], plain) is None  # type: ignore[arg-type]
    assert _against_gold_lines({}) == []


def test_the_programs_scopes_widen_their_own_targets(tmp_path: Path) -> None:
    touch(tmp_path, "tests/queries/tests.py", "tests/queries/test_qs_combinators.py", "tests/queries/models.py",
          "tests/queries/deep/test_deep.py", "tests/other/tests.py",
          "sympy/physics/units/unitsystem.py", "sympy/physics/units/tests/test_unitsystem.py",
          "sympy/physics/units/tests/test_quantities.py", "sympy/core/tests/test_basic.py",
          "pkg/tests/test_a.py", "pkg/tests/test_b.py", "pkg/tests/helpers.py")  # fmt: skip
    assert ag.program_scope("django", ["queries.tests"], ["django/db/models/query.py"], tmp_path) == [
        "queries.tests", "queries.test_qs_combinators", "queries.deep.test_deep"]
    assert ag.program_scope("sympy", ["sympy/core/tests/test_basic.py"], ["sympy/physics/units/unitsystem.py"], tmp_path) == [
        "sympy/core/tests/test_basic.py", "sympy/physics/units/tests/test_quantities.py",
        "sympy/physics/units/tests/test_unitsystem.py"]
    assert ag.program_scope("unittest", ["pkg.tests.test_a"], [], tmp_path) == ["pkg.tests.test_a", "pkg.tests.test_b"]


@pytest.mark.slow
@pytest.mark.parametrize(("project", "regressed"), [
    ("sympy-mini", ("sympy/core/tests/test_numbers.py:test_rational_add", "passed", "failed")),
    ("recipes", ("test_unit_case (parsing.tests.ParseQuantityTests.test_unit_case)", "passed", "error")),
])  # fmt: skip
def test_sympy_s_and_django_s_runners_are_checked_against_gold_too(project: str, regressed: tuple[str, str, str]) -> None:
    """The fixture projects graded with SymPy's bin/test and Django's runtests.py, PASS_TO_PASS left
    without the test their break_p2p candidate breaks: resolved by the listed tests, caught by the check."""
    whole = instance_of(project)
    broken = grade(project, patch_of(project, "break_p2p"), instance=whole)
    gone = [t["id"] for t in broken.envelope["tests"] if t["status"] not in ("passed", "preserved")]
    narrowed = instance_of(project, PASS_TO_PASS=[t for t in whole.pass_to_pass if t not in gone])
    gold = grade(project, patch_of(project, "gold"), instance=narrowed, against_gold="packages")
    assert gold.envelope["against_gold"]["status"] == "clean" and gold.envelope["against_gold"]["compared"] >= 2
    result = grade(project, patch_of(project, "break_p2p"), instance=narrowed, against_gold="packages")
    check = result.envelope["against_gold"]
    assert result.score is not None and result.score["resolved"] == "resolved"
    assert (check["status"], check["resolved_against_gold"]) == ("regressions", False)
    assert [(r["nodeid"], r["gold"], r["candidate"]) for r in check["regressions"]] == [regressed]


@pytest.mark.slow
def test_ab_run_and_grade_batch_carry_the_second_figure_end_to_end(tmp_path: Path) -> None:
    """ab run --against-gold over the fixture regression set (one seed, gold or empty patches): each
    arm's details count its resolves and its resolves free of regressions; grade-batch's report and
    summary carry the same figure."""
    from .test_ab import BASELINE, CANDIDATE, ab_cli, arm_file, experiment, run_arms

    ledger, manifest = experiment(tmp_path, name="against-gold", seeds=[2])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    result = run_arms(manifest, ledger, arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(2,)),
                      arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(2,)), "--against-gold", "packages", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    details = json.loads(result.stdout)["details"]
    assert details["against_gold"]["baseline"] == {"graded": 3, "resolved_against_gold": 1, "regressions": 0, "unknown": 0,
                                                   "rate": 1 / 3, "resolved": 1}  # fmt: skip
    assert details["against_gold"]["candidate"]["resolved_against_gold"] == 3 == details["against_gold"]["candidate"]["resolved"]
    report = run_cli("ab", "report", "against-gold", "--out", str(tmp_path / "report"), "--ledger", str(ledger))
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Resolved, and free of regressions against gold" in text and "| candidate | 3 | 3 | 3 | 0 | 0 |" in text

    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": m, "model_patch": p}) + "\n" for i, m, p in (
        ("fixtures__textstats-1", "gold", patch_of("textstats", "gold").decode()),
        ("fixtures__textstats-1", "breaks", patch_of("textstats", "break_p2p").decode()))))  # fmt: skip
    narrow_dataset = tmp_path / "narrow.jsonl"
    narrow_dataset.write_text(json.dumps(narrow().fields) + "\n")
    batch = run_cli("grade-batch", "--dataset", str(narrow_dataset), "--predictions", str(preds), "--repos",
                    str(FIXTURES / "repos"), "--ledger", str(tmp_path / "batch.db"), "--log-dir", str(tmp_path / "logs"),
                    "--against-gold", "packages", "--json")  # fmt: skip
    assert batch.returncode == 0, batch.stderr
    out = json.loads(batch.stdout)
    assert out["summary"]["gold"]["resolved_against_gold"] == 1 and out["summary"]["breaks"]["regressed"] == 1
    rows = {r["model_name_or_path"]: r for r in out["results"]}
    assert rows["breaks"]["failure_class"] == "resolved"
    assert rows["breaks"]["against_gold"]["regressions"] == ["tests/test_words.py::test_word_count[don't panic]"]
