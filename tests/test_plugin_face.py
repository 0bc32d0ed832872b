"""The plugin's face in an everyday run (issue 16): what it loads when idle, and what it prints and leaves behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from pytest_objective_scoring.plugin import integrity_status

from .conftest import ROOT

IDLE_MODULES = ["pytest_objective_scoring", "pytest_objective_scoring.plugin_entry", "pytest_objective_scoring.plugin_options"]

REPORT_MODULES = """
import json, sys

def pytest_sessionfinish(session):
    ours = sorted(m for m in sys.modules if m.split(".")[0] == "pytest_objective_scoring")
    loaders = {m: type(sys.modules[m].__loader__).__name__ for m in ours}
    with open("modules.json", "w") as out:
        json.dump(loaders, out)
"""


def loaded(pytester: pytest.Pytester) -> dict[str, str]:
    """The package's modules the run had imported at its end, and each one's loader."""
    return dict(json.loads((pytester.path / "modules.json").read_text(encoding="utf-8")))


def test_an_idle_plugin_imports_only_its_options(pytester):
    pytester.makeconftest(REPORT_MODULES)
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    assert pytester.runpytest_subprocess("-p", "no:randomly").ret == 0
    assert sorted(loaded(pytester)) == IDLE_MODULES
    assert pytester.runpytest_subprocess("-p", "no:objective_scoring").ret == 0
    assert loaded(pytester) == {}


def test_a_conftest_option_named_like_ours_does_not_enable_the_plugin(pytester):
    """Only the plugin's own options, ini keys and environment variable enable it: a project's
    ``--objective-mine`` (dest ``objective_mine``) is not one of them."""
    pytester.makeconftest(REPORT_MODULES + """
def pytest_addoption(parser):
    parser.addoption("--objective-mine", dest="objective_mine", default=None)
""")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    assert pytester.runpytest_subprocess("-p", "no:randomly", "--objective-mine=v").ret == 0
    assert sorted(loaded(pytester)) == IDLE_MODULES
    assert pytester.runpytest_subprocess("-p", "no:randomly", "--objective-gate").ret == pytest.ExitCode.USAGE_ERROR


def test_the_plugin_knows_its_own_options():
    from pytest_objective_scoring.plugin_options import PLUGIN_INI, plugin_dests

    dests = plugin_dests()
    assert {"objective_score", "objective_score_out", "objective_gate", "objective_select", "objective_ledger",
            "objective_no_ledger", "objective_cost", "objective_harness", "objective_compute_rate"} <= dests  # fmt: skip
    assert {name for name, _, _ in PLUGIN_INI} <= dests and "objective_mine" not in dests


def test_the_package_is_imported_past_assertion_rewriting(pytester, write_instance, monkeypatch):
    """pytest rewrites every module of a plugin's distribution and, where it cannot cache them
    (PYTHONDONTWRITEBYTECODE), parses them again in every run: past the entry module, the package's
    modules are ordinary ones. (On the path as a wheel would put it, not through an editable
    install's finder, which pytest's rewriting does not see at all.)"""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(REPORT_MODULES)
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    assert pytester.runpytest_subprocess("-p", "no:randomly", f"--objective-score={write_instance(['test_a.py::test_a'])}").ret == 0
    loaders = loaded(pytester)
    assert loaders["pytest_objective_scoring.plugin"] == loaders["pytest_objective_scoring.scorer"] == "SourceFileLoader"
    rewritten = {m for m, loader in loaders.items() if loader == "AssertionRewritingHook"}
    assert rewritten <= {"pytest_objective_scoring", "pytest_objective_scoring._version", "pytest_objective_scoring.plugin_entry"}


def test_the_version_is_read_when_asked_not_in_every_run():
    """``__version__`` is lazy like the records: an idle run does not import even ``_version``."""
    code = ("import sys, pytest_objective_scoring as p; assert 'pytest_objective_scoring._version' not in sys.modules; "
            "from pytest_objective_scoring import __version__; from pytest_objective_scoring._version import __version__ as v; "
            "assert p.__version__ == __version__ == v and 'pytest_objective_scoring._version' in sys.modules")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_lazy_names_are_listed_by_dir():
    import pytest_objective_scoring as package

    assert set(package.__all__) <= set(dir(package))
    assert all(getattr(package, name) is not None for name in package.__all__)


def test_importing_the_entry_module_loads_nothing_heavy():
    code = (
        "import sys, pytest_objective_scoring.plugin_entry; "
        "heavy = sorted(m for m in sys.modules if m.startswith('pytest_objective_scoring.') and m not in "
        f"{IDLE_MODULES!r}); print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_settings_are_still_reachable_from_options():
    from pytest_objective_scoring import options, plugin

    assert options.Settings is plugin.Settings and options.resolve_settings is plugin.resolve_settings
    with pytest.raises(AttributeError):
        options.no_such_thing  # noqa: B018


def test_an_ini_gate_without_an_instance_is_still_refused(pytester):
    pytester.makeini("[pytest]\nobjective_gate = true\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--objective-gate needs --objective-score=INSTANCE*"])


# ---------------------------------------------------------------- the terminal summary


def test_no_file_is_named_when_none_was_written(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["verdict: RESOLVED"])
    assert "score written to" not in result.stdout.str() and "None" not in result.stdout.str()


def test_a_run_on_trusted_code_says_its_status_in_one_line(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                           "--objective-score-out=out.json")  # fmt: skip
    assert result.ret == 0
    status = [line for line in result.stdout.lines if line.startswith(("integrity", "task audit"))]
    assert status == [
        "integrity: quarantined (tests_not_protected, task_audit_missing) - the verdict above stands; the run is just "
        "not admissible as A/B evidence: the tests ran unprotected in this working tree; the task was never audited "
        "(objective-score audit run)"
    ]
    envelope = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert envelope["integrity"]["disposition"] == "quarantined"  # the record itself is unchanged
    assert envelope["integrity"]["reasons"] == ["tests_not_protected", "task_audit_missing"]


def test_a_tampered_run_says_not_to_rely_on_its_verdict(pytester, write_instance):
    pytester.makeconftest(
        """
        import pytest
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            outcome.get_result().outcome = "passed"
        """
    )
    pytester.makepyfile(test_a="def test_a():\n    assert False\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}")
    result.stdout.fnmatch_lines(["integrity: INVALID (tampered_outcome) - do not rely on this verdict: a report said passed*"])


def envelope_with(disposition: str, reasons: list[str], score: object = None, audit: dict | None = None) -> dict:
    return {"integrity": {"disposition": disposition, "reasons": reasons, "info": [], "flags": []},
            "audit": audit or {"state": "valid"}, "score": score}  # fmt: skip


@pytest.mark.parametrize(
    ("envelope", "line", "markup"),
    [
        (envelope_with("quarantined", ["no_verdict", "tests_not_protected"]),
         "integrity: quarantined (no_verdict, tests_not_protected) - no verdict to rely on; the run is just not "
         "admissible as A/B evidence: there is no verdict; the tests ran unprotected in this working tree", {}),
        (envelope_with("quarantined", ["tests_not_protected", "task_audit_unknown"], {"resolved": "resolved"},
                       {"state": "unknown", "reason": "the ledger l.sqlite could not be read (locked)"}),
         "integrity: quarantined (tests_not_protected, task_audit_unknown) - the verdict above stands; the run is just "
         "not admissible as A/B evidence: the tests ran unprotected in this working tree; the task's audit state is "
         "unknown (the ledger l.sqlite could not be read (locked))", {}),
        (envelope_with("invalid", ["task_audit_invalid"], {"resolved": "resolved"}),
         "integrity: INVALID (task_audit_invalid) - do not rely on this verdict: the task's audit found it invalid",
         {"red": True, "bold": True}),
        (envelope_with("eligible", [], {"resolved": "resolved"}),
         "integrity: eligible - the verdict above stands and the run is admissible evidence", {}),
        (envelope_with("quarantined", ["network_not_isolated"], {"resolved": "resolved"}),
         "integrity: quarantined (network_not_isolated) - the verdict above stands; the run is just not admissible as "
         "A/B evidence: network not isolated", {}),
    ],
    ids=["no-verdict", "ledger-unreadable", "invalid", "eligible", "unknown-code"],
)
def test_the_status_line_says_what_the_disposition_means(envelope, line, markup):
    assert integrity_status(envelope) == (line, markup)


# ---------------------------------------------------------------- .objective-scoring/


def test_the_plugins_folder_ignores_itself_once_made(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    instance = write_instance(["test_a.py::test_a"])
    assert pytester.runpytest_inprocess(f"--objective-score={instance}").ret == 0
    folder = pytester.path / ".objective-scoring"
    assert (folder / "ledger.sqlite").is_file()
    assert (folder / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert not list(pytester.path.glob(".objective-scoring-files-*")), "the staging folder is gone"
    (folder / ".gitignore").write_text("# mine\n", encoding="utf-8")
    assert pytester.runpytest_inprocess(f"--objective-score={instance}").ret == 0
    assert (folder / ".gitignore").read_text(encoding="utf-8") == "# mine\n", "an existing folder is left as it is"


def test_a_folder_made_by_someone_else_is_left_as_it_is(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    (pytester.path / ".objective-scoring").mkdir()
    assert pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}").ret == 0
    assert (pytester.path / ".objective-scoring" / "ledger.sqlite").is_file()
    assert not (pytester.path / ".objective-scoring" / ".gitignore").exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_status_does_not_show_the_plugins_folder(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    instance = write_instance(["test_a.py::test_a"])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"]
    (pytester.path / ".gitignore").write_text("runpytest-*\nstdout\nstderr\n", encoding="utf-8")  # pytester's own files
    subprocess.run([*git, "init", "-q"], cwd=pytester.path, check=True)
    subprocess.run([*git, "add", "."], cwd=pytester.path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=pytester.path, check=True)
    result = pytester.runpytest_inprocess(f"--objective-score={instance}", "-p", "no:cacheprovider")
    assert result.ret == 0 and (pytester.path / ".objective-scoring" / "ledger.sqlite").is_file()
    status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"], cwd=pytester.path,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert ".objective-scoring" not in status, status
