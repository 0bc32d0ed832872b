"""The runner on real fixture repositories, with real pytest subprocesses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_objective_scoring.runner import BadInput

from .conftest import FIXTURES, PROJECTS
from .runner_helpers import GIT, grade, instance_of, make_patch, patch_of, tree_digest

pytestmark = pytest.mark.slow  # real gradings (docs/development.md: the fast subset)

INTERVALS = FIXTURES / "repos" / "intervals"
INTERVAL_PY = "src/intervals/interval.py"
BUGGY = "return self.start < other.end and other.start < self.end"
FIXED = "return self.start <= other.end and other.start <= self.end"

EXPECTED = {
    "gold": ("resolved", "none", 0),
    "break_p2p": ("not_resolved", "solver", 1),
    "empty": ("not_resolved", "solver", 1),
    "tamper": ("not_resolved", "solver", 1),
    "noapply": ("not_resolved", "patch_apply", 1),
}


def interval_source(replacement: str, extra: str = "") -> str:
    source = (INTERVALS / INTERVAL_PY).read_text(encoding="utf-8")
    assert BUGGY in source
    return source.replace(BUGGY, replacement) + extra


@pytest.mark.parametrize("project", PROJECTS)
@pytest.mark.parametrize("candidate", list(EXPECTED))
def test_fixture_candidates_get_their_expected_verdicts(project, candidate):
    result = grade(project, patch_of(project, candidate))
    resolved, failure_class, exit_code = EXPECTED[candidate]
    score = result.envelope["score"]
    assert (score["resolved"], result.failure_class, result.exit_code) == (resolved, failure_class, exit_code)
    assert list(score) == ["instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass", "graded_by",
                           "graded_at"]  # fmt: skip
    assert "(runner)" in score["graded_by"] and "timeout=120s" in score["graded_by"]
    if candidate == "break_p2p":
        assert score["fail_to_pass"]["verdict"] == "satisfied"
        assert score["pass_to_pass"]["verdict"] == "violated"
    if candidate == "noapply":
        attempts = result.envelope["runner"]["apply"]["attempts"]
        assert [a["strategy"] for a in attempts] == ["git apply", "git apply --3way", "git apply --reject",
                                                     "patch --fuzz=5"]  # fmt: skip
        assert not any(a["ok"] for a in attempts)
        assert result.envelope["swebench"]["report"][score["instance_id"]]["patch_successfully_applied"] is False
    if candidate == "tamper":
        dropped = {d["path"]: d["reason"] for d in result.envelope["runner"]["apply"]["dropped"]}
        assert any(p.endswith("conftest.py") for p in dropped), dropped
        assert any("test patch" in r for r in dropped.values()), dropped


def test_the_users_repository_is_never_modified(tmp_path):
    repo = tmp_path / "intervals"
    shutil.copytree(INTERVALS, repo)
    before = tree_digest(repo)
    for candidate in ("gold", "tamper", "noapply"):
        grade("intervals", patch_of("intervals", candidate), repo=repo)
    assert tree_digest(repo) == before


def test_patch_ref_is_the_sha256_of_the_candidate_unless_named():
    import hashlib

    patch = patch_of("intervals", "gold")
    assert grade("intervals", patch).envelope["score"]["patch_ref"] == "sha256:" + hashlib.sha256(patch).hexdigest()
    assert grade("intervals", patch, patch_ref="run-42/cand-3").envelope["score"]["patch_ref"] == "run-42/cand-3"


def test_garbage_patch_does_not_apply_and_is_not_resolved():
    result = grade("intervals", b"this is not a diff\n")
    assert result.failure_class == "patch_apply"
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert "not a unified diff" in result.envelope["runner"]["failure_detail"]


def test_fuzzy_patch_applies_with_a_later_strategy(tmp_path):
    diff = make_patch(INTERVALS, {INTERVAL_PY: interval_source(FIXED)}, tmp_path)
    # spoil the hunk's first context line: git apply refuses, a fuzzy strategy still applies it
    lines = diff.splitlines(keepends=True)
    first_context = next(i for i, line in enumerate(lines) if line.startswith(" ") and i > 4)
    lines[first_context] = " # a line that is not in the file\n"
    result = grade("intervals", "".join(lines).encode())
    assert result.envelope["runner"]["apply"]["strategy"] != "git apply"
    assert result.envelope["score"]["resolved"] == "resolved"


def test_timeout_caused_by_the_candidate_is_its_failure(tmp_path):
    hang = interval_source(
        "import subprocess, time; subprocess.Popen(['sleep', '987']); time.sleep(600)",
    )
    diff = make_patch(INTERVALS, {INTERVAL_PY: hang}, tmp_path)
    result = grade("intervals", diff.encode(), timeout=10)  # the control run must finish within it (about 1 s)
    assert result.failure_class == "solver" and result.exit_code == 1
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert "timed out after 10s" in result.envelope["candidate_no_verdict_reason"]
    assert result.envelope["runner"]["run"]["timed_out"] is True
    assert result.envelope["runner"]["control_run"]["no_verdict_reason"] is None
    # the whole process group was killed, grandchildren included
    left = subprocess.run(["pgrep", "-f", "sleep 987"], capture_output=True, text=True).stdout
    assert left == ""


def test_timeout_on_the_base_too_is_an_infrastructure_failure():
    slow_test = textwrap.dedent(
        """\
        diff --git a/tests/test_slow.py b/tests/test_slow.py
        new file mode 100644
        --- /dev/null
        +++ b/tests/test_slow.py
        @@ -0,0 +1,4 @@
        +import time
        +
        +def test_slow():
        +    time.sleep(600)
        """
    )
    instance = instance_of("intervals", test_patch=slow_test, FAIL_TO_PASS=["tests/test_slow.py::test_slow"])
    result = grade("intervals", patch_of("intervals", "gold"), instance=instance, timeout=3)  # both runs hang
    assert result.exit_code == 3
    assert result.failure_class == "verifier"
    assert result.envelope["score"] is None
    assert "timed out" in result.envelope["no_verdict_reason"]


def test_candidate_breaking_collection_is_its_failure(tmp_path):
    diff = make_patch(INTERVALS, {INTERVAL_PY: interval_source(FIXED, extra="\nthis is ( not python\n")}, tmp_path)
    result = grade("intervals", diff.encode())
    assert (result.failure_class, result.exit_code) == ("solver", 1)
    assert "collect" in result.envelope["candidate_no_verdict_reason"] or "interrupted" in result.envelope[
        "candidate_no_verdict_reason"
    ]
    assert all(t["status"] == "missing" for t in result.envelope["tests"])


def test_test_patch_that_does_not_apply_is_an_infrastructure_failure(tmp_path):
    bad = tmp_path / "bad.diff"
    bad.write_text(patch_of("intervals", "noapply").decode().replace("src/intervals", "tests"), encoding="utf-8")
    result = grade("intervals", patch_of("intervals", "gold"), test_patch=bad.read_text())
    assert (result.exit_code, result.failure_class) == (3, "setup")
    assert "test patch does not apply" in result.envelope["no_verdict_reason"]


def test_interpreter_without_pytest_is_a_setup_failure(tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    result = grade("intervals", patch_of("intervals", "gold"), python=str(venv / "bin" / "python"))
    assert (result.exit_code, result.failure_class) == (3, "setup")
    assert "pytest is not installed" in result.envelope["no_verdict_reason"]


def test_an_environment_made_of_links_is_graded_through_them(tmp_path):
    """A site-packages made of links (as Nix builds a Python environment) imports from the links'
    targets: the sandbox shows them too, or pytest "is not installed"."""
    import sysconfig

    venv = tmp_path / "linked"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.endswith(".pth") and not (purelib / entry.name).exists():
            (purelib / entry.name).symlink_to(entry)
    assert subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0
    result = grade("intervals", patch_of("intervals", "gold"), python=str(python))
    assert (result.exit_code, result.envelope["no_verdict_reason"]) == (0, None)
    assert result.envelope["score"]["resolved"] == "resolved"


def test_only_site_folders_have_their_links_followed(tmp_path):
    """A folder on the path that is not a site folder (a repository installed in editable mode) may
    link anywhere: its links' targets are not the interpreter's, and the sandbox does not show them."""
    from pytest_objective_scoring import interpreters

    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    linked, elsewhere, repo = tmp_path / "linked-lib", tmp_path / "elsewhere", tmp_path / "repo"
    for folder in (linked, elsewhere, repo):
        folder.mkdir()
    (purelib / "lib").symlink_to(linked)
    (repo / "secrets").symlink_to(elsewhere)
    (purelib / "repo.pth").write_text(f"{repo}\n", encoding="utf-8")
    folders = interpreters.interpreter_folders(str(python))
    assert str(repo) in folders and str(linked) in folders and str(elsewhere) not in folders


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"repo": Path("/nonexistent/repo")}, "not a directory"),
        ({"python": "/nonexistent/python"}, "no such executable interpreter"),
        ({"instance": instance_of("intervals", base_commit="0123abcd")}, "not a git repository"),
    ],
    ids=["repo", "python", "base-commit-without-git"],
)
def test_bad_requests_raise_bad_input(kwargs, fragment):
    with pytest.raises(BadInput, match=fragment):
        grade("intervals", patch_of("intervals", "gold"), **kwargs)


def _git_repo_with_fix(tmp_path: Path) -> tuple[Path, str]:
    """A git repository whose first commit is the buggy base and HEAD already has the fix."""
    repo = tmp_path / "git-intervals"
    shutil.copytree(INTERVALS, repo)
    (repo / ".gitignore").write_text("*.built\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=repo, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / INTERVAL_PY).write_text(interval_source(FIXED), encoding="utf-8")
    subprocess.run([*GIT, "commit", "-qam", "fix"], cwd=repo, check=True)
    (repo / "src" / "intervals" / "ext.built").write_text("compiled artefact\n", encoding="utf-8")
    return repo, base


def test_base_commit_is_checked_out_and_ignored_artefacts_are_kept(tmp_path):
    repo, base = _git_repo_with_fix(tmp_path)
    artefact_test = textwrap.dedent(
        """\
        diff --git a/tests/test_artefact.py b/tests/test_artefact.py
        new file mode 100644
        --- /dev/null
        +++ b/tests/test_artefact.py
        @@ -0,0 +1,4 @@
        +from pathlib import Path
        +
        +def test_built_extension_is_present():
        +    assert Path("src/intervals/ext.built").exists()
        """
    )
    test_patch = instance_of("intervals").test_patch + artefact_test
    instance = instance_of("intervals", base_commit=base, test_patch=test_patch,
                           PASS_TO_PASS=[*instance_of("intervals").pass_to_pass,
                                         "tests/test_artefact.py::test_built_extension_is_present"])  # fmt: skip
    gold = grade("intervals", patch_of("intervals", "gold"), repo=repo, instance=instance)
    assert gold.envelope["score"]["resolved"] == "resolved", gold.envelope["tests"]
    empty = grade("intervals", b"", repo=repo, instance=instance)
    assert empty.envelope["score"]["resolved"] == "not_resolved"  # HEAD's fix is not what gets graded
    unknown = instance_of("intervals", base_commit="f" * 40)
    with pytest.raises(BadInput, match="has no commit"):
        grade("intervals", b"", repo=repo, instance=unknown)


def test_working_tree_of_a_git_repo_is_graded_without_base_commit(tmp_path):
    repo, _ = _git_repo_with_fix(tmp_path)
    (repo / INTERVAL_PY).write_text(interval_source(BUGGY), encoding="utf-8")  # uncommitted: back to the bug
    assert grade("intervals", b"", repo=repo).envelope["score"]["resolved"] == "not_resolved"
    assert grade("intervals", patch_of("intervals", "gold"), repo=repo).envelope["score"]["resolved"] == "resolved"


def _venv_with_stale_install(tmp_path: Path, *, preload: bool) -> Path:
    """A virtualenv where the *original* intervals sources are installed in develop mode, first on sys.path."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    original = INTERVALS / "src"
    # the old setuptools "develop" trick: move the entry to the very front of sys.path
    lines = ["import sys; sys.__plen = len(sys.path)", str(original),
             "import sys; new = sys.path[sys.__plen:]; del sys.path[sys.__plen:]; sys.path[0:0] = new"]  # fmt: skip
    if preload:
        lines.append("import intervals")
    (site / "easy-install.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return venv / "bin" / "python"


def test_tests_import_the_graded_copy_not_a_stale_editable_install(tmp_path):
    python = _venv_with_stale_install(tmp_path, preload=False)
    probe = subprocess.run([str(python), "-c", "import intervals; print(intervals.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert str(INTERVALS) in probe.stdout, probe.stdout + probe.stderr  # the trap is armed
    result = grade("intervals", patch_of("intervals", "gold"), python=str(python))
    assert result.envelope["score"]["resolved"] == "resolved", result.envelope["tests"]


def test_a_stale_checkout_preloaded_at_start_up_is_out_of_the_sandboxes_sight(tmp_path):
    """The environment's .pth imports the *original* checkout at start-up: in the sandbox the user's
    repository does not exist, so the tests import the graded copy."""
    python = _venv_with_stale_install(tmp_path, preload=True)
    result = grade("intervals", patch_of("intervals", "gold"), python=str(python))
    assert result.envelope["runner"]["isolation"]["mode"] == "namespaces"
    assert (result.exit_code, result.envelope["score"]["resolved"]) == (0, "resolved"), result.envelope.get("no_verdict_reason")


def test_a_shadowing_copy_already_imported_is_a_setup_failure_without_a_sandbox(tmp_path, monkeypatch):
    from pytest_objective_scoring import sandbox

    monkeypatch.setattr(sandbox, "probe", lambda workdir: ("none", "turned off by the test"))
    python = _venv_with_stale_install(tmp_path, preload=True)
    result = grade("intervals", patch_of("intervals", "gold"), python=str(python))
    assert (result.exit_code, result.failure_class) == (3, "setup")
    assert "imported intervals from" in result.envelope["no_verdict_reason"]
    assert result.envelope["runner"]["isolation"]["mode"] == "none"


NETWORK_TEST = textwrap.dedent(
    """\
    diff --git a/tests/test_network.py b/tests/test_network.py
    new file mode 100644
    --- /dev/null
    +++ b/tests/test_network.py
    @@ -0,0 +1,5 @@
    +from pathlib import Path
    +
    +def test_only_loopback():
    +    names = {line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]}
    +    assert names == {"lo"}
    """
)


def test_network_is_unshared_where_the_machine_allows():
    from pytest_objective_scoring.runner import network_isolation

    assert network_isolation(), "unshare must work on this machine (CI runs as root)"
    instance = instance_of("intervals", test_patch=NETWORK_TEST, FAIL_TO_PASS=["tests/test_network.py::test_only_loopback"],
                           PASS_TO_PASS=[])  # fmt: skip
    isolated = grade("intervals", b"", instance=instance)
    assert isolated.envelope["runner"]["network"] == "unshared"
    assert isolated.envelope["score"]["resolved"] == "resolved"
    allowed = grade("intervals", b"", instance=instance, network=True)
    assert allowed.envelope["runner"]["network"] == "allowed"
    assert allowed.envelope["score"]["resolved"] == "not_resolved"


def test_candidate_writing_a_conftest_during_the_run_is_caught(tmp_path):
    sneaky = interval_source(
        FIXED,
        extra=textwrap.dedent(
            """
            import pathlib as _p
            _p.Path(__file__).resolve().parents[2].joinpath("tests", "sub", "conftest.py").parent.mkdir(exist_ok=True)
            _p.Path(__file__).resolve().parents[2].joinpath("tests", "sub", "conftest.py").write_text("# hi")
            """
        ),
    )
    diff = make_patch(INTERVALS, {INTERVAL_PY: sneaky}, tmp_path)
    result = grade("intervals", diff.encode())
    assert (result.failure_class, result.envelope["score"]["resolved"]) == ("solver", "not_resolved")
    assert "protected_file_modified: added tests/sub/conftest.py" in result.envelope["candidate_no_verdict_reason"]
    assert {"kind": "protected_file_modified", "detail": "added tests/sub/conftest.py"} in result.envelope["integrity"]["flags"]


def test_candidate_patching_pytest_reports_at_import_is_graded_by_what_raised(tmp_path):
    rigged = interval_source(
        BUGGY,
        extra=textwrap.dedent(
            """
            import _pytest.reports as _r
            _orig = _r.TestReport.from_item_and_call.__func__
            def _forged(cls, item, call):
                report = _orig(cls, item, call)
                report.outcome = "passed"
                return report
            _r.TestReport.from_item_and_call = classmethod(_forged)
            """
        ),
    )
    diff = make_patch(INTERVALS, {INTERVAL_PY: rigged}, tmp_path)
    result = grade("intervals", diff.encode())
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert any(f["kind"] == "raised_but_passed" for f in result.envelope["integrity"]["flags"])


def test_envelope_records_steps_costs_and_command():
    result = grade("intervals", patch_of("intervals", "gold"))
    runner = result.envelope["runner"]
    assert [s["name"] for s in runner["steps"]] == ["copy", "apply", "test_patch", "tests"]
    assert runner["run"]["exit_code"] == 0 and runner["run"]["timed_out"] is False
    assert runner["test_files"] == ["tests/test_merge.py", "tests/test_interval.py"]
    assert result.envelope["cost"]["cpu"] > 0 and result.envelope["cost"]["wall_time"] > 0
    assert runner["apply"]["strategy"] == "git apply"


# ---------------------------------------------------------------- found in review: each would have been a wrong verdict

FORCE_PASS_CONFTEST = (
    "import pytest\n\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_setup(item):\n"
    "    item.runtest = lambda: None\n"
)


def test_git_quoted_path_to_a_conftest_is_still_protected():
    body = "".join(f"+{line}\n" for line in FORCE_PASS_CONFTEST.splitlines())
    count = len(FORCE_PASS_CONFTEST.splitlines())
    quoted = (f'diff --git "a/conftest.py" "b/conftest.py"\nnew file mode 100644\n--- /dev/null\n'
              f'+++ "b/conftest.py"\n@@ -0,0 +1,{count} @@\n{body}')  # fmt: skip
    result = grade("intervals", quoted.encode())
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert [d["path"] for d in result.envelope["runner"]["apply"]["dropped"]] == ["conftest.py"]


def test_a_diff_of_another_format_hidden_in_a_unified_diff_is_refused(tmp_path):
    fix = make_patch(INTERVALS, {INTERVAL_PY: interval_source(FIXED)}, tmp_path)
    unified_only = fix.split("\n", 2)[2]  # drop the diff --git and index lines: a plain unified diff
    context = "*** /dev/null\n--- b/conftest.py\n***************\n*** 0 ****\n--- 1,2 ----\n+ import os\n+ x = 1\n"
    result = grade("intervals", (unified_only + context).encode())
    assert result.failure_class == "patch_apply"
    assert "another format" in result.envelope["runner"]["failure_detail"]


def test_protected_files_the_applied_patch_changed_anyway_are_put_back(tmp_path):
    from pytest_objective_scoring import protect
    from pytest_objective_scoring.workspace import prepare_copy, revert_protected

    copy = tmp_path / "copy"
    baseline = prepare_copy(INTERVALS, copy, None)
    guarded = ["tests/test_merge.py"]
    before = protect.snapshot(copy, guarded)
    original = (copy / "tests/test_merge.py").read_text()
    (copy / "tests/test_merge.py").write_text("def test_forged():\n    pass\n")
    (copy / "tests" / "conftest.py").write_text(FORCE_PASS_CONFTEST)
    dropped, stuck = revert_protected(copy, baseline, before, guarded)
    assert stuck == []
    assert sorted(d.path for d in dropped) == ["tests/conftest.py", "tests/test_merge.py"]
    assert all("filter did not see it" in d.reason for d in dropped)
    assert (copy / "tests/test_merge.py").read_text() == original
    assert not (copy / "tests" / "conftest.py").exists()


def _repo_with_plugin_module(tmp_path: Path) -> Path:
    """intervals, whose test suite loads a library module as a pytest plugin (as sphinx.testing is)."""
    repo = tmp_path / "plugin-intervals"
    shutil.copytree(INTERVALS, repo)
    (repo / "tests" / "conftest.py").write_text('pytest_plugins = ["intervals.testing"]\n')
    (repo / "src" / "intervals" / "testing.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef unit():\n    return 1\n"
    )
    return repo


def test_library_module_loaded_as_a_pytest_plugin_cannot_judge_the_run(tmp_path):
    repo = _repo_with_plugin_module(tmp_path)
    hooked = (repo / "src" / "intervals" / "testing.py").read_text() + (
        "\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.runtest = lambda: None\n"
    )
    diff = make_patch(repo, {"src/intervals/testing.py": hooked}, tmp_path)
    result = grade("intervals", diff.encode(), repo=repo)
    assert result.envelope["score"]["resolved"] == "not_resolved"
    # a change to a plugin module is tested as it is (a real fix there must be), and its hook is seen
    assert result.envelope["runner"]["apply"]["dropped"] == []
    kinds = {f["kind"] for f in result.envelope["integrity"]["flags"]}
    assert "runtest_replaced" in kinds, result.envelope["integrity"]
    assert result.envelope["runner"]["control_run"]["kind"] == "gold"
    # the gold patch is untouched by that rule and still resolves
    assert grade("intervals", patch_of("intervals", "gold"), repo=repo).envelope["score"]["resolved"] == "resolved"


def test_runtest_swapped_by_candidate_code_at_import_is_tampering(tmp_path):
    rigged = interval_source(
        BUGGY,
        extra="\nimport _pytest.python as _p\n_p.Function.runtest = lambda self: None\n",
    )
    diff = make_patch(INTERVALS, {INTERVAL_PY: rigged}, tmp_path)
    result = grade("intervals", diff.encode())
    assert result.envelope["score"]["resolved"] == "not_resolved"
    kinds = {f["kind"] for f in result.envelope["integrity"]["flags"]}
    assert kinds & {"runtest_replaced", "pytest_internals_patched"}, kinds


NEW_API_TEST = textwrap.dedent(
    """\
    diff --git a/tests/test_api.py b/tests/test_api.py
    new file mode 100644
    --- /dev/null
    +++ b/tests/test_api.py
    @@ -0,0 +1,4 @@
    +from intervals.interval import Interval, touching
    +
    +def test_touching():
    +    assert touching(Interval(1, 2), Interval(2, 3))
    """
)
NEW_API_GOLD = textwrap.dedent(
    """\
    diff --git a/src/intervals/touch.py b/src/intervals/touch.py
    new file mode 100644
    --- /dev/null
    +++ b/src/intervals/touch.py
    @@ -0,0 +1,2 @@
    +def touching(a, b):
    +    return a.end == b.start or b.end == a.start
    """
)


def test_candidate_without_a_new_api_the_tests_import_is_not_resolved_not_infrastructure(tmp_path):
    # the test patch imports an API the gold patch adds: on the bare base the tests cannot even be
    # collected, so the control run must be the gold patch, not the base
    gold = NEW_API_GOLD + make_patch(
        INTERVALS, {INTERVAL_PY: interval_source(BUGGY, extra="\nfrom .touch import touching  # noqa\n")}, tmp_path
    )
    instance = instance_of("intervals", test_patch=NEW_API_TEST, patch=gold,
                           FAIL_TO_PASS=["tests/test_api.py::test_touching"], PASS_TO_PASS=[])  # fmt: skip
    empty = grade("intervals", b"", instance=instance)
    assert (empty.exit_code, empty.failure_class) == (1, "solver")
    assert empty.envelope["runner"]["control_run"]["kind"] == "gold"
    assert grade("intervals", gold.encode(), instance=instance).envelope["score"]["resolved"] == "resolved"


def test_repository_configured_with_exitfirst_still_runs_every_listed_test(tmp_path):
    repo = tmp_path / "x-intervals"
    shutil.copytree(INTERVALS, repo)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('testpaths = ["tests"]', 'testpaths = ["tests"]\naddopts = "-x"'))
    result = grade("intervals", patch_of("intervals", "break_p2p"), repo=repo)
    assert (result.exit_code, result.failure_class) == (1, "solver")
    assert result.envelope["score"]["pass_to_pass"] == {"total": 11, "passed": 10, "verdict": "violated"}
    assert result.envelope["score"]["fail_to_pass"]["verdict"] == "satisfied"


def test_library_layout_outside_src_imports_the_graded_copy(tmp_path):
    repo = tmp_path / "lib-intervals"
    shutil.copytree(INTERVALS, repo)
    (repo / "src").rename(repo / "lib")
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('pythonpath = ["src"]', "").replace('where = ["src"]', 'where = ["lib"]'))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "intervals-editable.pth").write_text(str(repo / "lib") + "\n")  # an editable install of the original
    gold = patch_of("intervals", "gold").decode().replace("src/intervals", "lib/intervals")
    instance = instance_of("intervals", patch=gold)
    result = grade("intervals", gold.encode(), repo=repo, instance=instance, python=str(venv / "bin" / "python"))
    assert result.envelope["score"]["resolved"] == "resolved", result.envelope.get("no_verdict_reason")


def test_special_files_in_the_repository_are_not_copied(tmp_path):
    repo = tmp_path / "fifo-intervals"
    shutil.copytree(INTERVALS, repo)
    os.mkfifo(repo / ".devserver.fifo")
    assert grade("intervals", patch_of("intervals", "gold"), repo=repo).envelope["score"]["resolved"] == "resolved"


def test_an_internal_error_is_an_infrastructure_failure(monkeypatch):
    from pytest_objective_scoring import runner

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runner, "changed_files", broken)
    result = grade("intervals", patch_of("intervals", "gold"))
    assert (result.exit_code, result.failure_class) == (3, "verifier")
    assert "internal error: RuntimeError: disk on fire" in result.envelope["no_verdict_reason"]
    assert result.envelope["swebench"]["report"]["fixtures__intervals-1"]["infra_failure"] is True


def test_relative_python_is_resolved_against_the_working_directory(monkeypatch):
    interpreter = Path(sys.executable)
    monkeypatch.chdir(interpreter.parent.parent)
    result = grade("intervals", patch_of("intervals", "gold"), python=str(Path(interpreter.parent.name, interpreter.name)))
    assert result.envelope["score"]["resolved"] == "resolved"


def test_ids_that_are_not_pytest_node_ids_are_bad_input():
    django = instance_of("intervals", FAIL_TO_PASS=["test_touching (merge.tests.MergeTests)"])
    with pytest.raises(BadInput, match="not a pytest node id"):
        grade("intervals", b"", instance=django)


def test_candidate_forging_recorder_lines_cannot_turn_a_failure_into_a_pass(tmp_path):
    forger = textwrap.dedent(
        """
        import atexit as _atexit, json as _json, os as _os
        def _forge():
            path = _os.environ.get("OBJECTIVE_SCORING_RECORD")
            for fd in _os.listdir("/proc/self/fd"):  # the knowing attacker finds the open record file
                try:
                    target = _os.readlink("/proc/self/fd/" + fd)
                except OSError:
                    continue
                if target.endswith(".jsonl"):
                    path = int(fd)  # the open descriptor itself: no sandbox hides what the process holds
            if path:
                with open(path, "a", closefd=not isinstance(path, int)) as handle:
                    for nodeid in ("tests/test_merge.py::TestMerge::test_touching",
                                   "tests/test_merge.py::TestMerge::test_touching_chain"):
                        for when in ("setup", "call", "teardown"):
                            handle.write(_json.dumps({"type": "test", "nodeid": nodeid, "when": when,
                                                      "outcome": "passed", "duration": 0.0}) + "\\n")
                    handle.write(_json.dumps({"type": "session", "exitstatus": 0}) + "\\n")
        _forge()                   # before the real run: the real (failing) run comes after
        _atexit.register(_forge)   # after the session line: never read
        """
    )
    diff = make_patch(INTERVALS, {INTERVAL_PY: interval_source(BUGGY, extra=forger)}, tmp_path)
    result = grade("intervals", diff.encode())
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert result.envelope["score"]["fail_to_pass"]["passed"] == 0
    assert "written by something other than the recorder" in result.envelope["runner"]["failure_detail"]
    assert result.envelope["runner"]["failure_class"] == "solver"  # the control run is clean: the candidate's doing
    assert [f["kind"] for f in result.envelope["integrity"]["flags"]] == ["record_forged"]
    from pytest_objective_scoring.integrity import assess as disposition

    assert disposition(result.envelope, {"state": "valid"})[:2] == ("invalid", ["tampered_outcome"])


def test_writing_test_data_through_a_symlink_is_put_back(tmp_path):
    repo = tmp_path / "data-intervals"
    shutil.copytree(INTERVALS, repo)
    (repo / "tests" / "data").mkdir()
    (repo / "tests" / "data" / "expected.txt").write_text("wrong\n")
    test_patch = make_patch(repo, {"tests/test_data.py": (
        "from pathlib import Path\n\n\ndef test_expected():\n"
        "    assert Path('tests/data/expected.txt').read_text() == 'right\\n'\n")}, tmp_path)  # fmt: skip
    candidate = (
        "diff --git a/src/intervals/t b/src/intervals/t\nnew file mode 120000\n--- /dev/null\n+++ b/src/intervals/t\n"
        "@@ -0,0 +1 @@\n+../../tests/data\n\\ No newline at end of file\n"
        "diff --git a/src/intervals/t/expected.txt b/src/intervals/t/expected.txt\n"
        "--- a/src/intervals/t/expected.txt\n+++ b/src/intervals/t/expected.txt\n@@ -1 +1 @@\n-wrong\n+right\n"
    )
    instance = instance_of("intervals", test_patch=test_patch, FAIL_TO_PASS=["tests/test_data.py::test_expected"],
                           PASS_TO_PASS=[])  # fmt: skip
    result = grade("intervals", candidate.encode(), repo=repo, instance=instance)
    assert result.envelope["score"]["resolved"] == "not_resolved", result.envelope["runner"]["apply"]
    dropped = {d["path"] for d in result.envelope["runner"]["apply"]["dropped"]}
    assert {"tests/data/expected.txt", "src/intervals/t"} <= dropped


def test_a_new_top_level_pytest_module_is_not_applied(tmp_path):
    diff = make_patch(INTERVALS, {"src/pytest.py": "raise SystemExit(0)\n", INTERVAL_PY: interval_source(BUGGY)},
                      tmp_path)  # fmt: skip
    result = grade("intervals", diff.encode())
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert any(d["path"] == "src/pytest.py" for d in result.envelope["runner"]["apply"]["dropped"])


def test_a_daemon_started_by_the_candidate_dies_with_the_run(tmp_path):
    from pytest_objective_scoring.testrun import pid_isolation

    assert pid_isolation(), "unshare --pid must work on this machine (CI runs as root)"
    marker = tmp_path / "daemon-was-here"
    daemon = textwrap.dedent(
        f"""
        import os as _os, time as _time
        if _os.fork() == 0:
            _os.setsid()
            _time.sleep(2)
            open({str(marker)!r}, "w").write("alive")
            _os._exit(0)
        """
    )
    diff = make_patch(INTERVALS, {INTERVAL_PY: interval_source(FIXED, extra=daemon)}, tmp_path)
    result = grade("intervals", diff.encode())
    assert result.envelope["runner"]["processes"] == "own PID namespace"
    assert result.envelope["score"]["resolved"] == "resolved"  # the fork ran in the test process, harmlessly
    time.sleep(2.5)  # longer than the daemon sleeps, however late in the run it started
    assert not marker.exists()


def test_a_suite_that_writes_its_own_modules_under_tests_can_be_graded(tmp_path):
    repo = tmp_path / "gen-intervals"
    shutil.copytree(INTERVALS, repo)
    generator = ("from pathlib import Path\n\n\ndef test_generates():\n"
                 "    Path('tests/_generated_cache.py').write_text('X = 1\\n')\n")  # fmt: skip
    (repo / "tests" / "test_gen.py").write_text(generator)
    instance = instance_of("intervals", PASS_TO_PASS=[*instance_of("intervals").pass_to_pass, "tests/test_gen.py::test_generates"])
    gold = grade("intervals", patch_of("intervals", "gold"), repo=repo, instance=instance)
    assert (gold.exit_code, gold.envelope["score"]["resolved"]) == (0, "resolved"), gold.envelope.get("no_verdict_reason")
    calibrated = gold.envelope["runner"]["calibrated_signals"]
    assert {"kind": "protected_file_modified", "detail": "added tests/_generated_cache.py"} in calibrated["signals"]
    assert gold.envelope["integrity"]["flags"] == []  # the repository's own behaviour: no flag
    broken = grade("intervals", patch_of("intervals", "break_p2p"), repo=repo, instance=instance)
    assert (broken.exit_code, broken.envelope["score"]["resolved"]) == (1, "not_resolved")
    assert broken.envelope["score"]["pass_to_pass"]["passed"] == 11  # graded on its own outcomes


def _repo_with_star_import(tmp_path: Path) -> Path:
    """intervals whose conftest star-imports a library module (hooks and fixtures come with it)."""
    repo = tmp_path / "star-intervals"
    shutil.copytree(INTERVALS, repo)
    (repo / "tests" / "conftest.py").write_text("from intervals.testing import *  # noqa\n")
    (repo / "src" / "intervals" / "testing.py").write_text("import pytest\n\n\n@pytest.fixture\ndef unit():\n    return 1\n")
    return repo


def test_fixture_swapping_the_test_function_is_tampering(tmp_path):
    repo = _repo_with_star_import(tmp_path)
    swapper = (repo / "src/intervals/testing.py").read_text() + (
        "\n\n@pytest.fixture(autouse=True)\ndef fast_path(request):\n    request.node.obj = lambda *a, **k: None\n"
    )
    diff = make_patch(repo, {"src/intervals/testing.py": swapper}, tmp_path)
    result = grade("intervals", diff.encode(), repo=repo)
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert any(f["kind"] == "runtest_replaced" for f in result.envelope["integrity"]["flags"])


@pytest.mark.parametrize("scope", ["module-globals", "fresh-globals"])
def test_exec_with_a_forged_file_name_does_not_hide_a_patched_internal(tmp_path, scope):
    repo = _repo_with_star_import(tmp_path)
    source = (
        "import _pytest.runner as r\\n"
        "orig = r.CallInfo.from_call.__func__\\n"
        "def swallow(cls, func, when, reraise=None):\\n"
        "    info = orig(cls, func, when, reraise)\\n"
        "    if when == 'call' and info.excinfo is not None:\\n"
        "        return orig(cls, lambda: None, when, reraise)\\n"
        "    return info\\n"
        "r.CallInfo.from_call = classmethod(swallow)\\n"
    )
    globs = "globals()" if scope == "module-globals" else "{'__name__': 'functools'}"
    rigged = (repo / "src/intervals/testing.py").read_text() + (
        f"\nexec(compile({source!r}.replace('\\\\n', '\\n'), '/usr/lib/python3.11/functools.py', 'exec'), {globs})\n"
    )
    diff = make_patch(repo, {"src/intervals/testing.py": rigged}, tmp_path)
    result = grade("intervals", diff.encode(), repo=repo)
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert any(f["kind"] == "pytest_internals_patched" for f in result.envelope["integrity"]["flags"]), result.envelope["integrity"]


def test_an_interrupt_while_waiting_kills_the_whole_test_process_group(tmp_path: Path) -> None:
    """Ctrl-C in the grader's main thread, while a test run is going: nothing of the run outlives it."""
    import signal

    from pytest_objective_scoring.testrun import run_process

    pidfile = tmp_path / "group"

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_process(["sh", "-c", f"echo $$ > {pidfile}; sleep 60 & sleep 60"], cwd=tmp_path, env=dict(os.environ),
                        timeout=60, log=tmp_path / "log")  # fmt: skip
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    group = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    with pytest.raises(ProcessLookupError):  # the shell and its background sleep are gone
        os.killpg(group, 0)


# Red team: a candidate that attacks the recorder, the record or the grader. Each leaves the bug in
# place and adds hostile code to the module the tests import; none may be resolved, and none may
# make its failure an infrastructure failure (exit 3) or reach the grader.
ATTACKS = {
    "recorder-globals": """
import sys as _sys
_rec = _sys.modules.get("_objective_scoring_recorder")
if _rec is not None:
    _fact = _rec.fact_from_report
    _rec.fact_from_report = lambda report: dict(_fact(report), outcome="passed", message="")
    _line = _rec.record_line
    _rec.record_line = lambda key, seq, record, *a: _line(key, seq, dict(record, exitstatus=0, testsfailed=0)
                                                          if record.get("type") == "session" else record, *a)
""",
    "key-from-proc-environ": """
import hashlib as _hl, hmac as _hm, json as _js, os as _os
_env = dict(item.split(b"=", 1) for item in open("/proc/self/environ", "rb").read().split(b"\\0") if b"=" in item)
_key = _env.get(b"OBJECTIVE_SCORING_RECORD_KEY")
open(_os.environ["OBJECTIVE_PROBE"], "w").write("key" if _key else "no key")
""",
    "record-made-a-fifo": """
import os as _os
for _fd in _os.listdir("/proc/self/fd"):
    try:
        _target = _os.readlink("/proc/self/fd/" + _fd)
    except OSError:
        continue
    if _target.endswith(".jsonl"):
        _os.unlink(_target)
        _os.mkfifo(_target)
        _log = _target.rsplit("/", 1)[0] + "/control.log"
        _os.makedirs(_log, exist_ok=True)
""",
    "user-site-pth": """
import os as _os, site as _site, sys as _sys
_dir = _os.path.join(_os.path.expanduser("~"), ".local", "lib", "python%d.%d" % _sys.version_info[:2], "site-packages")
_os.makedirs(_dir, exist_ok=True)
open(_os.path.join(_dir, "zz.pth"), "w").write("import os; os._exit(4)\\n")
""",
    "git-filter": """
import os as _os, subprocess as _sp
_root = _sp.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True).stdout.strip()
if _root:
    with open(_os.path.join(_root, ".git", "config"), "a") as _h:
        _h.write('[filter "x"]\\n\\tsmudge = sh -c "echo pwned > $OBJECTIVE_PROBE_GIT; cat"\\n\\tclean = cat\\n'
                 '[core]\\n\\tfsmonitor = "sh -c \\'echo pwned > $OBJECTIVE_PROBE_GIT\\'"\\n')
    _os.makedirs(_os.path.join(_root, ".git", "info"), exist_ok=True)
    with open(_os.path.join(_root, ".git", "info", "attributes"), "a") as _h:
        _h.write("*.py filter=x\\n")
_os._exit(1)
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_candidate_attacking_the_recorder_or_the_grader_is_not_resolved(attack, tmp_path, monkeypatch):
    probe, git_probe = tmp_path / "probe", tmp_path / "git-probe"
    monkeypatch.setenv("OBJECTIVE_PROBE", str(probe))  # (the test process keeps only the grader's scrubbed env)
    code = ATTACKS[attack].replace('_os.environ["OBJECTIVE_PROBE"]', repr(str(probe)))
    code = code.replace("$OBJECTIVE_PROBE_GIT", str(git_probe))
    diff = make_patch(INTERVALS, {INTERVAL_PY: interval_source(BUGGY, extra=code)}, tmp_path)
    result = grade("intervals", diff.encode(), timeout=60)
    assert (result.envelope["score"]["resolved"], result.failure_class, result.exit_code) == ("not_resolved", "solver", 1)
    assert not git_probe.exists()  # nothing the candidate configured ran in the grader
    if attack == "key-from-proc-environ":
        assert not probe.exists()  # the sandbox: nothing outside its copy is writable (nor visible)


def test_a_copy_that_shadows_the_recorders_own_modules_is_refused(tmp_path, monkeypatch):
    """A ``hmac.py`` at the top of the copy would load in place of Python's own while the recorder
    loads: the recorder lists such modules and refuses to record (no record: the control run then
    makes it the candidate's failure)."""
    from pytest_objective_scoring import recorder

    (tmp_path / "hmac_shadow_probe.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    import hmac_shadow_probe  # noqa: F401

    assert recorder.shadowed_modules(before, str(tmp_path)) == ["hmac_shadow_probe"]
    assert recorder.shadowed_modules(before, str(tmp_path / "elsewhere")) == []
    del sys.modules["hmac_shadow_probe"]
    diff = make_patch(INTERVALS, {"hmac.py": "from importlib import import_module\n"}, tmp_path)
    result = grade("intervals", diff.encode(), timeout=60)
    assert (result.envelope["score"]["resolved"], result.failure_class) == ("not_resolved", "solver")


def test_a_candidate_over_the_size_limit_is_refused_unread(tmp_path):
    big = patch_of("intervals", "gold") + b"\n" * 4096
    result = grade("intervals", big, max_patch_bytes=1024)
    assert (result.exit_code, result.failure_class) == (1, "patch_too_large")
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert "larger than 1024 bytes" in result.envelope["runner"]["failure_detail"]
    assert "scorecard" not in result.envelope  # nothing of it was parsed
    assert grade("intervals", patch_of("intervals", "gold"), max_patch_bytes=1024 * 1024).exit_code == 0


def test_the_command_line_reads_no_more_of_a_candidate_than_the_limit(tmp_path):
    import json

    from pytest_objective_scoring.commands.grade import _read_patch

    from .runner_helpers import run_cli

    patch = tmp_path / "huge.diff"
    patch.write_bytes(b"x" * 10_000)
    assert len(_read_patch(str(patch), 100)) == 101  # enough to know it is too large, no more
    done = run_cli("grade", "--repo", str(INTERVALS), "--instance", str(FIXTURES / "instances" / "intervals.json"),
                   "--patch", str(patch), "--max-patch-size", "100", "--no-ledger", "--json")  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["runner"]["failure_class"] == "patch_too_large"


@pytest.mark.slow
def test_a_candidate_that_floods_its_output_fails_and_the_disk_holds_only_the_limit(tmp_path):
    # at exit, past pytest's own capture: straight into the run's output (256 MiB, 1 MiB allowed)
    flood = ("\nimport atexit as _atexit, os as _os\n\ndef _flood():\n    for _ in range(4096):\n"
             "        _os.write(1, b'x' * 65536)\n\n_atexit.register(_flood)\n")
    diff = make_patch(INTERVALS, {INTERVAL_PY: interval_source(FIXED, extra=flood)}, tmp_path)
    result = grade("intervals", diff.encode(), max_output_bytes=1 << 20, keep=True)
    assert (result.envelope["score"]["resolved"], result.failure_class, result.exit_code) == ("not_resolved", "output_limit", 1)
    assert "more output than the limit allows" in result.envelope["candidate_no_verdict_reason"]
    log = Path(result.envelope["runner"]["workspace"]) / "candidate.log"
    assert log.stat().st_size <= 1 << 20
    shutil.rmtree(result.envelope["runner"]["workspace"], ignore_errors=True)
    assert grade("intervals", patch_of("intervals", "gold"), max_output_bytes=1 << 20).exit_code == 0


def _git_project(root: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, *command], cwd=root, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_an_environment_that_points_at_the_checkout_s_path_reaches_the_graded_copy(tmp_path):
    """An editable install's namespace hack (matplotlib's ``mpl_toolkits``-nspkg.pth) makes a package
    from the checkout's path at start-up, without running its ``__init__``. In the sandbox that path
    is a link to the graded copy, as ``/testbed`` is the graded copy in SWE-bench's images: the tests
    import the candidate's code, and code reached that way is the copy's."""
    repo = tmp_path / "nsrepo"
    base = _git_project(repo, {"nsdemo/__init__.py": "raise ImportError('imported only through the namespace hack')\n",
                               "nsdemo/core.py": "VALUE = 1\n",
                               "tests/test_core.py": "from nsdemo.core import VALUE\n\n\ndef test_value():\n    assert VALUE == 2\n"})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "nsdemo-nspkg.pth").write_text(
        f"import sys, types; m = sys.modules.setdefault('nsdemo', types.ModuleType('nsdemo')); m.__path__ = [{str(repo / 'nsdemo')!r}]\n",
        encoding="utf-8")  # fmt: skip
    instance = instance_of("intervals", base_commit=base, FAIL_TO_PASS=["tests/test_core.py::test_value"], PASS_TO_PASS=[],
                           test_patch=None, patch="diff --git a/nsdemo/core.py b/nsdemo/core.py\n--- a/nsdemo/core.py\n"
                           "+++ b/nsdemo/core.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n")  # fmt: skip
    gold = instance.patch.encode()
    result = grade("intervals", gold, repo=repo, instance=instance, python=str(venv / "bin" / "python"))
    assert (result.exit_code, result.envelope["score"]["resolved"]) == (0, "resolved"), result.envelope.get("no_verdict_reason")
    assert result.envelope["runner"]["isolation"]["copy_also_at"] == [str(repo.resolve())]
    assert result.envelope["integrity"]["flags"] == []
    empty = grade("intervals", b"", repo=repo, instance=instance, python=str(venv / "bin" / "python"))
    assert (empty.exit_code, empty.envelope["score"]["resolved"]) == (1, "not_resolved")


def test_build_products_the_repository_ignores_in_its_own_exclude_file_are_kept(tmp_path):
    """An sdist's tree has no .gitignore: its compiled files are ignored through .git/info/exclude, which
    the copy keeps, so ``git clean`` does not remove them."""
    repo = tmp_path / "built"
    base = _git_project(repo, {"tests/test_built.py": "from pathlib import Path\n\n\ndef test_built():\n"
                                                      "    assert Path('ext.built').read_text() == 'compiled'\n"})  # fmt: skip
    (repo / ".git" / "info" / "exclude").write_text("*.built\n", encoding="utf-8")
    (repo / "ext.built").write_text("compiled", encoding="utf-8")
    instance = instance_of("intervals", base_commit=base, FAIL_TO_PASS=["tests/test_built.py::test_built"], PASS_TO_PASS=[],
                           test_patch=None)  # fmt: skip
    result = grade("intervals", b"", repo=repo, instance=instance)
    assert (result.exit_code, result.envelope["score"]["resolved"]) == (0, "resolved"), result.envelope["tests"]
