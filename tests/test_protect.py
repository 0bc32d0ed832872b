from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from pytest_objective_scoring import protect
from pytest_objective_scoring.protect import (
    INIT_ABSENT,
    INIT_PRESENT,
    RUNNER_MODULES,
    STDLIB_MODULES,
    Dropped,
    PatchParseError,
    filter_candidate,
    patch_files,
    protected_reason,
    protected_test_folders,
    shadowing_reason,
    snapshot,
    snapshot_change_reason,
    snapshot_changes,
)

# --- protected_reason -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("conftest.py", "conftest.py (pytest hooks and fixtures)"),
        ("tests/conftest.py", "conftest.py (pytest hooks and fixtures)"),
        ("src/pkg/sub/deep/conftest.py", "conftest.py (pytest hooks and fixtures)"),
        ("pkg/test_things.py", "test module"),
        ("pkg/things_test.py", "test module"),
        ("pkg/tests.py", "test module"),
        ("test_top.py", "test module"),
        ("tests/helpers.py", "below a tests directory"),
        ("tests/data/fixture.json", "below a tests directory"),
        ("src/pkg/tests/unit/util.py", "below a tests directory"),
        ("pytest.ini", "pytest configuration"),
        (".pytest.ini", "pytest configuration"),
        ("tox.ini", "pytest configuration"),
        ("setup.cfg", "pytest configuration"),
        ("pyproject.toml", "pytest configuration"),
        ("sub/project/pyproject.toml", "pytest configuration"),
        ("sitecustomize.py", "interpreter start-up hook"),
        ("lib/usercustomize.py", "interpreter start-up hook"),
        ("evil.pth", "interpreter start-up hook (.pth)"),
        ("site-packages/distutils-precedence.pth", "interpreter start-up hook (.pth)"),
        ("setup.py", "packaging metadata (plugin entry points)"),
        ("pkg.egg-info/entry_points.txt", "plugin entry points"),
        ("tests\\conftest.py", "conftest.py (pytest hooks and fixtures)"),
        ("./tests/conftest.py", "conftest.py (pytest hooks and fixtures)"),
    ],
    ids=[
        "conftest-root",
        "conftest-tests",
        "conftest-deep",
        "test-prefix-module",
        "test-suffix-module",
        "tests-py-module",
        "root-test-module",
        "helper-under-tests",
        "data-under-tests",
        "nested-tests-dir",
        "pytest-ini",
        "dot-pytest-ini",
        "tox-ini",
        "setup-cfg",
        "pyproject",
        "nested-pyproject",
        "sitecustomize",
        "usercustomize",
        "pth",
        "nested-pth",
        "setup-py",
        "entry-points",
        "windows-separators",
        "dot-slash",
    ],
)
def test_protected_reason(path: str, reason: str) -> None:
    assert protected_reason(path) == reason


@pytest.mark.parametrize(
    "path",
    [
        "django/test/utils.py",
        "numpy/testing/utils.py",
        "src/pkg/module.py",
        "pkg/testing.py",
        "pkg/contest.py",
        "pkg/attest_helpers.py",
        "pkg/latest.py",
        "README.md",
        "docs/tests.rst",
        "pkg/test_data.json",
        "pkg/tests_utils.py",
        "setup.py.orig",
        "pkg/mytests/util.py",
    ],
    ids=[
        "django-test-utils",
        "numpy-testing-utils",
        "plain-source",
        "testing-module",
        "contest",
        "attest",
        "latest",
        "readme",
        "tests-rst",
        "test-prefixed-data",
        "tests-prefixed-module",
        "setup-py-orig",
        "mytests-dir",
    ],
)
def test_ordinary_sources_are_not_protected(path: str) -> None:
    assert protected_reason(path) is None


@pytest.mark.parametrize(
    "path",
    ["pytest.toml", ".pytest.toml", "sub/pytest.toml"],
    ids=["pytest-toml", "dot-pytest-toml", "nested-pytest-toml"],
)
def test_pytest9_toml_config_files_are_protected(path: str) -> None:
    # pytest >= 9 reads pytest.toml / .pytest.toml, and prefers them to every other config file
    # (the package allows pytest>=7.0 and this environment runs pytest 9): a candidate adding
    # one can set addopts, python_files, plugins...
    assert protected_reason(path) == "pytest configuration"


def test_files_touched_by_the_test_patch_are_protected() -> None:
    touched = ["docs/example.txt", "src/pkg/fixtures_data.py"]
    assert protected_reason("docs/example.txt", touched) == "a file of the instance's tests (test patch or listed tests)"
    assert protected_reason("src/pkg/fixtures_data.py", touched) == "a file of the instance's tests (test patch or listed tests)"
    assert protected_reason("src/pkg/other.py", touched) is None
    assert protected_reason("docs/example.txt") is None
    assert protected_reason("docs/example.txt", iter(touched)) == "a file of the instance's tests (test patch or listed tests)"


# --- patches built with real git ------------------------------------------------------------


def _git(repo: Path, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(repo),
    )
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, input=input_text, capture_output=True, text=True, check=False
    )


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BASE_FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "pkg/util.py": "VALUE = 1\n",
    "pkg/old_name.py": "def helper():\n    return 42\n",
    "pkg/doomed.py": "GONE = True\n",
    "pkg/noeol.txt": "no newline at end",
    "tests/test_core.py": "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "tests/helpers.py": "def helper():\n    return 1\n",
    "setup.cfg": "[tool:pytest]\naddopts = -q\n",
}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    for rel, text in BASE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert _git(root, "init", "-q", ".").returncode == 0
    assert _git(root, "add", "-A").returncode == 0
    assert _git(root, "commit", "-q", "-m", "base").returncode == 0
    return root


def _candidate(repo: Path) -> str:
    """A multi-file candidate: source edits, a new file, a deletion, renames and protected edits."""
    (repo / "pkg/core.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n", encoding="utf-8"
    )
    (repo / "pkg/util.py").write_text("VALUE = 2\n", encoding="utf-8")
    (repo / "pkg/new_module.py").write_text("NEW = 'x'\n", encoding="utf-8")
    (repo / "pkg/noeol.txt").write_text("still no newline", encoding="utf-8")
    (repo / "pkg/doomed.py").unlink()
    (repo / "conftest.py").write_text("def pytest_runtest_makereport(item, call):\n    pass\n", encoding="utf-8")
    (repo / "tests/test_core.py").write_text("def test_add():\n    assert True\n", encoding="utf-8")
    (repo / "tests/helpers.py").unlink()
    (repo / "setup.cfg").write_text("[tool:pytest]\naddopts = -p evil\n", encoding="utf-8")
    (repo / "pkg/old_name.py").rename(repo / "pkg/conftest.py")  # rename INTO a protected name
    assert _git(repo, "add", "-A").returncode == 0
    diff = _git(repo, "diff", "--cached", "-M", "HEAD").stdout
    assert _git(repo, "reset", "-q", "--hard", "HEAD").returncode == 0
    return diff


@needs_git
def test_filter_candidate_on_a_real_multi_file_diff(repo: Path, tmp_path: Path) -> None:
    diff = _candidate(repo)
    assert "rename from pkg/old_name.py" in diff
    assert "\\ No newline at end of file" in diff
    result = filter_candidate(diff)

    assert result.kept == ("pkg/core.py", "pkg/doomed.py", "pkg/new_module.py", "pkg/noeol.txt", "pkg/util.py")
    assert {d.path: d.reason for d in result.dropped} == {
        "conftest.py": "conftest.py (pytest hooks and fixtures)",
        "pkg/conftest.py": "conftest.py (pytest hooks and fixtures)",
        "setup.cfg": "pytest configuration",
        "tests/helpers.py": "below a tests directory",
        "tests/test_core.py": "test module",
    }
    assert all(isinstance(d, Dropped) for d in result.dropped)
    assert result.dropped[0].to_dict() == {"path": result.dropped[0].path, "reason": result.dropped[0].reason}

    # the kept file diffs are still a patch git accepts, and they do what the candidate did
    out = tmp_path / "kept.diff"
    out.write_text(result.patch, encoding="utf-8")
    check = _git(repo, "apply", "--check", str(out))
    assert check.returncode == 0, check.stderr
    assert _git(repo, "apply", str(out)).returncode == 0
    assert (repo / "pkg/core.py").read_text(encoding="utf-8").startswith("def add(a, b):\n    return a + b\n")
    assert (repo / "pkg/util.py").read_text(encoding="utf-8") == "VALUE = 2\n"
    assert (repo / "pkg/new_module.py").read_text(encoding="utf-8") == "NEW = 'x'\n"
    assert (repo / "pkg/noeol.txt").read_text(encoding="utf-8") == "still no newline"
    assert not (repo / "pkg/doomed.py").exists()
    # ...and nothing protected changed
    assert not (repo / "conftest.py").exists()
    assert not (repo / "pkg/conftest.py").exists()
    assert (repo / "pkg/old_name.py").exists()
    assert (repo / "tests/helpers.py").exists()
    for rel in ("tests/test_core.py", "setup.cfg"):
        assert (repo / rel).read_text(encoding="utf-8") == BASE_FILES[rel]


def _sections(diff: str) -> dict[str, str]:
    """The per-file sections of a git diff, keyed by their ``diff --git`` line."""
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    return {part.splitlines()[0]: part for part in parts if part}


def _explicit_counts(section: str) -> str:
    """Spell out hunk line counts that a diff may omit when they are 1 (``@@ -1 +1 @@``)."""

    def spell(match: re.Match[str]) -> str:
        old, new = match.group(1), match.group(2)
        old = old if "," in old else old + ",1"
        new = new if "," in new else new + ",1"
        return f"@@ -{old} +{new} @@"

    return re.sub(r"(?m)^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@", spell, section)


@needs_git
def test_filter_candidate_keeps_source_hunks_verbatim(repo: Path) -> None:
    diff = _candidate(repo)
    result = filter_candidate(diff)
    before, after = _sections(diff), _sections(result.patch)
    kept_headers = [f"diff --git a/{p} b/{p}" for p in result.kept]
    assert list(after) == kept_headers
    for header in kept_headers:
        # every header line, hunk line and "\ No newline" marker of a kept file is unchanged
        assert _explicit_counts(after[header]) == _explicit_counts(before[header])
    core = "diff --git a/pkg/core.py b/pkg/core.py"
    assert "@@ -1,5 +1,5 @@" in before[core]
    assert after[core] == before[core]  # byte for byte when the hunk header spells its counts
    assert "pytest_runtest_makereport" not in result.patch
    assert "evil" not in result.patch
    assert "assert True" not in result.patch


@needs_git
def test_filter_candidate_drops_a_rename_out_of_tests_and_a_deleted_test_module(repo: Path, tmp_path: Path) -> None:
    (repo / "tests/helpers.py").rename(repo / "pkg/helpers_moved.py")
    (repo / "tests/test_core.py").unlink()
    (repo / "pkg/util.py").write_text("VALUE = 3\n", encoding="utf-8")
    assert _git(repo, "add", "-A").returncode == 0
    diff = _git(repo, "diff", "--cached", "-M", "HEAD").stdout
    assert _git(repo, "reset", "-q", "--hard", "HEAD").returncode == 0
    assert "rename from tests/helpers.py" in diff

    result = filter_candidate(diff)
    assert result.kept == ("pkg/util.py",)
    assert {d.path: d.reason for d in result.dropped} == {
        "tests/helpers.py": "below a tests directory",
        "tests/test_core.py": "test module",
    }
    out = tmp_path / "kept.diff"
    out.write_text(result.patch, encoding="utf-8")
    assert _git(repo, "apply", "--check", str(out)).returncode == 0


@needs_git
def test_filter_candidate_drops_new_empty_protected_files_and_mode_changes_kept(repo: Path, tmp_path: Path) -> None:
    (repo / "tests/conftest.py").write_text("", encoding="utf-8")  # new, empty: no ---/+++ lines at all
    (repo / "sitecustomize.py").write_text("import os\n", encoding="utf-8")
    (repo / "pkg/core.py").chmod(0o755)
    assert _git(repo, "add", "-A").returncode == 0
    diff = _git(repo, "diff", "--cached", "HEAD").stdout
    assert _git(repo, "reset", "-q", "--hard", "HEAD").returncode == 0
    result = filter_candidate(diff)
    assert {d.path for d in result.dropped} == {"tests/conftest.py", "sitecustomize.py"}
    assert result.kept == ("pkg/core.py",)
    out = tmp_path / "kept.diff"
    out.write_text(result.patch, encoding="utf-8")
    assert _git(repo, "apply", "--check", str(out)).returncode == 0


@needs_git
def test_filter_candidate_keeps_binary_file_diffs_applicable(repo: Path, tmp_path: Path) -> None:
    # `git diff --binary` output carries "GIT binary patch" payloads; a kept binary file diff
    # must keep them, or git refuses the patch (a changed binary) or silently creates an
    # empty file (a new binary).
    (repo / "pkg/data.bin").write_bytes(b"\x00\x01\x02old")
    assert _git(repo, "add", "-A").returncode == 0
    assert _git(repo, "commit", "-q", "-m", "binary").returncode == 0
    (repo / "pkg/data.bin").write_bytes(b"\x00\x01\x03new!")
    (repo / "pkg/logo.bin").write_bytes(b"\x00\x01\x02logo")
    (repo / "pkg/util.py").write_text("VALUE = 5\n", encoding="utf-8")
    assert _git(repo, "add", "-A").returncode == 0
    diff = _git(repo, "diff", "--cached", "--binary", "HEAD").stdout
    assert _git(repo, "reset", "-q", "--hard", "HEAD").returncode == 0
    assert diff.count("GIT binary patch") == 2
    original = tmp_path / "original.diff"
    original.write_text(diff, encoding="utf-8")
    assert _git(repo, "apply", "--check", str(original)).returncode == 0

    result = filter_candidate(diff)
    assert result.kept == ("pkg/data.bin", "pkg/logo.bin", "pkg/util.py")
    assert result.dropped == ()
    out = tmp_path / "kept.diff"
    out.write_text(result.patch, encoding="utf-8")
    check = _git(repo, "apply", "--check", str(out))
    assert check.returncode == 0, check.stderr
    assert _git(repo, "apply", str(out)).returncode == 0
    assert (repo / "pkg/data.bin").read_bytes() == b"\x00\x01\x03new!"
    assert (repo / "pkg/logo.bin").read_bytes() == b"\x00\x01\x02logo"


def test_filter_candidate_drops_files_touched_by_the_test_patch() -> None:
    diff = (
        "diff --git a/docs/data.txt b/docs/data.txt\n"
        "--- a/docs/data.txt\n+++ b/docs/data.txt\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/pkg/x.py b/pkg/x.py\n"
        "--- a/pkg/x.py\n+++ b/pkg/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    result = filter_candidate(diff, ["docs/data.txt"])
    assert result.kept == ("pkg/x.py",)
    assert result.dropped == (Dropped("docs/data.txt", "a file of the instance's tests (test patch or listed tests)"),)
    assert "docs/data.txt" not in result.patch
    assert filter_candidate(diff).kept == ("docs/data.txt", "pkg/x.py")


def test_filter_candidate_plain_unified_diff_without_git_headers() -> None:
    diff = "--- a/pkg/x.py\n+++ b/pkg/x.py\n@@ -1,2 +1,2 @@\n keep\n-a\n+b\n--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1 @@\n-a\n+b\n"
    result = filter_candidate(diff)
    assert result.kept == ("pkg/x.py",)
    assert [d.path for d in result.dropped] == ["conftest.py"]
    assert result.patch == "--- a/pkg/x.py\n+++ b/pkg/x.py\n@@ -1,2 +1,2 @@\n keep\n-a\n+b\n"


@pytest.mark.parametrize("text", ["", "\n\n", "   \n"], ids=["empty", "newlines", "spaces"])
def test_filter_candidate_empty_text(text: str) -> None:
    result = filter_candidate(text)
    assert (result.patch, result.kept, result.dropped) == ("", (), ())


@pytest.mark.parametrize(
    "text",
    [
        "this is not a diff\njust words\n",
        "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n",
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a\n+b\n",
    ],
    ids=["prose", "truncated-hunk", "short-hunk"],
)
def test_filter_candidate_garbage_raises(text: str) -> None:
    with pytest.raises(PatchParseError):
        filter_candidate(text)


def test_patch_parse_error_is_a_value_error() -> None:
    assert issubclass(PatchParseError, ValueError)


# --- large candidates: read a line at a time, the same decisions and messages ------------------

_ONE = "diff --git a/pkg/x.py b/pkg/x.py\n--- a/pkg/x.py\n+++ b/pkg/x.py\n@@ -1 +1 @@\n-a\n+b\n"
READ_CASES = {
    "git-multi-file": _ONE + "diff --git a/docs/data.txt b/docs/data.txt\n--- a/docs/data.txt\n+++ b/docs/data.txt\n"
    "@@ -1,2 +1,2 @@\n keep\n-a\n+b\n\\ No newline at end of file\n",
    "plain-with-preamble": "Subject: fix\n\n--- a/pkg/x.py\n+++ b/pkg/x.py\n@@ -1,2 +1,2 @@\n keep\n-a\n+b\n"
    "--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1 @@\n-a\n+b\n",
    "crlf": _ONE.replace("\n", "\r\n") + "diff --git a/tests/test_x.py b/tests/test_x.py\r\n--- a/tests/test_x.py\r\n"
    "+++ b/tests/test_x.py\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
    "rename-out-of-tests": "diff --git a/tests/helpers.py b/pkg/helpers.py\nsimilarity index 100%\n"
    "rename from tests/helpers.py\nrename to pkg/helpers.py\n",
    "copy": "diff --git a/pkg/x.py b/pkg/y.py\nsimilarity index 90%\ncopy from pkg/x.py\ncopy to pkg/y.py\n"
    "--- a/pkg/x.py\n+++ b/pkg/y.py\n@@ -1 +1 @@\n-a\n+b\n",
    "new-and-deleted": "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/new.py\n"
    "@@ -0,0 +1,2 @@\n+x = 1\n+\n" "diff --git a/pkg/old.py b/pkg/old.py\ndeleted file mode 100644\n--- a/pkg/old.py\n"
    "+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n",
    "shadowing": "diff --git a/json.py b/json.py\nnew file mode 100644\n--- /dev/null\n+++ b/json.py\n@@ -0,0 +1 @@\n+x = 1\n",
    "binary": "diff --git a/pkg/logo.png b/pkg/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZ>A0000\n\n"
    "literal 0\nKcmV+b0RR6000031\n\n",
    "quoted": 'diff --git "a/pkg/caf\\303\\251.py" "b/pkg/caf\\303\\251.py"\n--- "a/pkg/caf\\303\\251.py"\n'
    '+++ "b/pkg/caf\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n',
    "cut-at-a-form-feed": "From: x\r" + _ONE.removesuffix("\n") + "\x0cdiff --git a/conftest.py b/conftest.py\n"
    "--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1 @@\n-a\n+b\n",
    "lone-header": "diff --git a/pkg/x.py b/pkg/x.py",
    "prose": "this is not a diff\njust words\n",
    "truncated-hunk": "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n",
    "short-hunk": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a\n+b\n",
    "bad-line": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n*a\n",
    "target-without-source": "diff --git a/x.py b/x.py\n+++ b/y.py\n@@ -1 +1 @@\n-a\n+b\n",
    "context-diff-mixed-in": _ONE + "*** a/pkg/x.py\n--- b/pkg/x.py\n",
    "index-line-mixed-in": _ONE + "Index: pkg/x.py\n",
    "no-file": "diff --git x\n@@ -1 +1 @@\n-a\n+b\n",
}  # fmt: skip


def _outcome(text: str) -> object:
    """What the filter makes of ``text`` (the instance's tests: tests/test_x.py), or its error."""
    try:
        result = filter_candidate(text, ["tests/test_x.py"])
    except PatchParseError as exc:
        return f"PatchParseError: {exc}"
    return result.patch, result.kept, result.dropped


@pytest.mark.parametrize("name", list(READ_CASES))
def test_large_file_diffs_are_read_as_small_ones(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file diff read as a large one is (a line at a time, unidiff's ``metadata_only``): the
    same paths, decisions, kept text and error messages as reading it whole."""
    text = READ_CASES[name]
    whole = _outcome(text)
    try:
        files = patch_files(text)
    except PatchParseError as exc:
        files = [f"PatchParseError: {exc}"]
    monkeypatch.setattr(protect, "LARGE_DIFF", 0)
    assert _outcome(text) == whole
    try:
        assert patch_files(text) == files
    except PatchParseError as exc:
        assert [f"PatchParseError: {exc}"] == files


def test_file_diffs_are_cut_at_the_lines_str_splitlines_sees() -> None:
    """A file diff starts at a line ``str.splitlines`` cuts (here after a form feed), not only after
    ``\\n``: a conftest.py hidden that way is still a file diff of its own, and dropped."""
    result = filter_candidate(READ_CASES["cut-at-a-form-feed"])
    assert result.kept == ("pkg/x.py",)
    assert result.dropped == (Dropped("conftest.py", "conftest.py (pytest hooks and fixtures)"),)
    assert result.patch == _ONE.removesuffix("\n") + "\x0c"
    assert filter_candidate(READ_CASES["lone-header"]).kept == ("pkg/x.py",)  # a diff --git line without a newline


def _big_module(lines: int) -> str:
    header = f"diff --git a/pkg/big.py b/pkg/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/big.py\n@@ -0,0 +1,{lines} @@\n"
    return header + "".join(f"+x_{i} = {i}\n" for i in range(lines))


def test_a_large_candidate_is_filtered_as_a_small_one() -> None:
    """A candidate larger than LARGE_DIFF: kept as it is (the very text, not a copy), its protected
    file diffs dropped, and a broken one refused with unidiff's own messages."""
    big = _big_module(40_000)
    assert len(big) > protect.LARGE_DIFF
    result = filter_candidate(big)
    assert (result.kept, result.dropped) == (("pkg/big.py",), ())
    assert result.patch is big
    conftest = "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1 @@\n-a\n+b\n"
    result = filter_candidate(conftest + big + _ONE)
    assert result.kept == ("pkg/big.py", "pkg/x.py") and [d.path for d in result.dropped] == ["conftest.py"]
    assert result.patch == big + _ONE
    assert patch_files(big + conftest) == ["pkg/big.py", "conftest.py"]
    with pytest.raises(PatchParseError, match="^Hunk is shorter than expected$"):
        filter_candidate(big.replace("+1,40000 @@", "+1,40001 @@"))
    with pytest.raises(PatchParseError, match="^Hunk diff line expected: x_7 = 7\\n$"):
        filter_candidate(big.replace("+x_7 = 7\n", "x_7 = 7\n"))
    with pytest.raises(PatchParseError, match="another format is mixed into a unified diff: '\\*\\*\\* a/pkg/big.py'"):
        filter_candidate(big + "*** a/pkg/big.py\n")


@needs_git
def test_patch_files_lists_sources_and_targets(repo: Path) -> None:
    diff = _candidate(repo)
    assert patch_files(diff) == [
        "conftest.py",
        "pkg/old_name.py",  # git orders a rename by its new name, pkg/conftest.py
        "pkg/conftest.py",
        "pkg/core.py",
        "pkg/doomed.py",
        "pkg/new_module.py",
        "pkg/noeol.txt",
        "pkg/util.py",
        "setup.cfg",
        "tests/helpers.py",
        "tests/test_core.py",
    ]


def test_patch_files_on_simple_diffs() -> None:
    diff = (
        "diff --git a/tests/test_x.py b/tests/test_x.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/tests/test_x.py\n@@ -0,0 +1 @@\n+x\n"
        "diff --git a/pkg/y.py b/pkg/y.py\n--- a/pkg/y.py\n+++ b/pkg/y.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert patch_files(diff) == ["tests/test_x.py", "pkg/y.py"]
    assert patch_files("") == []
    with pytest.raises(PatchParseError):
        patch_files("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n")


# --- snapshot -------------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_snapshot_covers_protected_files_only(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "conftest.py": "a",
            "pyproject.toml": "b",
            "x.pth": "c",
            "pkg/core.py": "d",
            "pkg/sub/conftest.py": "e",
            "tests/test_a.py": "f",
            "tests/helpers.py": "g",
            "tests/data/out.json": "h",
            "tests/data/snapshot.txt": "i",
            "docs/touched.txt": "j",
            ".git/hooks/conftest.py": "k",
            "tests/__pycache__/test_a.py": "l",
            ".tox/py/lib/conftest.py": "m",
            "pkg.egg-info/entry_points.txt": "n",
        },
    )
    digests = snapshot(tmp_path, ["docs/touched.txt"])
    # the __init__.py of each folder on the path to the instance's test files, by presence only
    assert {p: d for p, d in digests.items() if d in (INIT_PRESENT, INIT_ABSENT)} == {
        "__init__.py": INIT_ABSENT,
        "docs/__init__.py": INIT_ABSENT,
    }
    assert sorted(p for p, d in digests.items() if d not in (INIT_PRESENT, INIT_ABSENT)) == [
        "conftest.py",
        "docs/touched.txt",
        "pkg/sub/conftest.py",
        "pyproject.toml",
        "tests/helpers.py",
        "tests/test_a.py",
        "x.pth",
    ]
    assert digests["conftest.py"] == hashlib.sha256(b"a").hexdigest()


def test_snapshot_changes_detects_added_changed_and_removed(tmp_path: Path) -> None:
    _tree(tmp_path, {"tests/conftest.py": "x = 1\n", "tests/test_a.py": "def test(): pass\n", "pkg/a.py": ""})
    before = snapshot(tmp_path)
    assert snapshot_changes(before, snapshot(tmp_path)) == []

    (tmp_path / "tests/conftest.py").write_text("x = 2\n", encoding="utf-8")
    (tmp_path / "tests/test_a.py").unlink()
    _tree(tmp_path, {"conftest.py": "evil", "tests/test_new.py": "", "pkg/a.py": "changed"})
    after = snapshot(tmp_path)
    assert snapshot_changes(before, after) == [
        "added conftest.py",
        "added tests/test_new.py",
        "changed tests/conftest.py",
        "removed tests/test_a.py",
    ]


def test_snapshot_ignores_non_python_data_written_under_tests(tmp_path: Path) -> None:
    _tree(tmp_path, {"tests/test_a.py": "", "tests/data/in.csv": "a,b\n"})
    before = snapshot(tmp_path)
    _tree(tmp_path, {"tests/data/in.csv": "changed\n", "tests/output/result.json": "{}", "tests/.coverage": "x"})
    assert snapshot_changes(before, snapshot(tmp_path)) == []
    _tree(tmp_path, {"tests/output/sneaky.py": "import os\n"})
    assert snapshot_changes(before, snapshot(tmp_path)) == ["added tests/output/sneaky.py"]


# --- protection by role ---------------------------------------------------------------------


def _file_diff(path: str, kind: str = "modify", old: str | None = None) -> str:
    """One git-style file diff: ``modify``, ``add`` (new file), ``delete``, ``fill`` (an existing
    empty file given content, ``@@ -0,0 +1 @@`` without ``/dev/null``) or ``rename`` (from ``old``)."""
    if kind == "add":
        return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n"
    if kind == "delete":
        return f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n"
    if kind == "fill":
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n"
    if kind == "rename":
        return f"diff --git a/{old} b/{path}\nsimilarity index 100%\nrename from {old}\nrename to {path}\n"
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _base(*paths: str) -> Callable[[str], bool]:
    """``existed_at_base`` for a base holding ``paths`` (and so their folders)."""
    known = set(paths) | {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
    return lambda path: path in known


# Real-looking gold patches of SWE-bench repositories: (listed tests and test-patch files, the
# gold patch's files as (path, kind), the files of the base). None of them may be protected.
GOLD = {
    "astropy": (
        ["astropy/io/fits/tests/test_header.py", "astropy/io/fits/tests/data/zerowidth.fits"],
        [("astropy/io/fits/card.py", "modify"), ("astropy/io/fits/header.py", "modify"),
         ("astropy/io/fits/__init__.py", "modify"), ("astropy/__init__.py", "modify"),
         ("astropy/units/quantity.py", "modify"), ("docs/changes/io.fits/14508.bugfix.rst", "add"),
         ("CHANGES.rst", "modify")],
        ["astropy/__init__.py", "astropy/io/__init__.py", "astropy/io/fits/__init__.py", "astropy/io/fits/card.py",
         "astropy/io/fits/header.py", "astropy/io/fits/tests/__init__.py", "astropy/io/fits/tests/test_header.py",
         "astropy/units/quantity.py", "CHANGES.rst"],
    ),
    "astropy-new-subpackage": (
        ["astropy/cosmology/io/tests/__init__.py", "astropy/cosmology/io/tests/test_html.py"],
        [("astropy/cosmology/io/__init__.py", "add"), ("astropy/cosmology/io/html.py", "add"),
         ("astropy/cosmology/connect.py", "modify")],
        ["astropy/__init__.py", "astropy/cosmology/__init__.py", "astropy/cosmology/connect.py"],
    ),
    "django": (
        ["tests/queries/tests.py", "tests/queries/models.py", "tests/migrations/test_operations.py",
         "tests/test_utils/tests.py"],
        [("django/db/models/sql/query.py", "modify"), ("django/db/migrations/operations/models.py", "modify"),
         ("django/db/models/__init__.py", "modify"), ("django/__init__.py", "modify"),
         ("django/test/testcases.py", "modify"), ("django/test/utils.py", "modify"),
         ("django/utils/functional.py", "modify"), ("docs/releases/4.2.txt", "modify")],
        ["django/__init__.py", "django/db/__init__.py", "django/db/models/__init__.py", "django/test/__init__.py",
         "django/test/testcases.py", "django/test/utils.py", "tests/queries/tests.py", "tests/queries/models.py"],
    ),
    "sympy": (
        ["sympy/core/tests/test_basic.py", "sympy/printing/tests/test_latex.py",
         "sympy/testing/tests/test_code_quality.py"],
        [("sympy/core/basic.py", "modify"), ("sympy/core/__init__.py", "modify"), ("sympy/__init__.py", "modify"),
         ("sympy/printing/latex.py", "modify"), ("sympy/testing/runtests.py", "modify"),
         ("sympy/printing/__init__.py", "fill")],
        ["sympy/__init__.py", "sympy/core/__init__.py", "sympy/core/basic.py", "sympy/core/tests/__init__.py",
         "sympy/printing/__init__.py", "sympy/printing/latex.py", "sympy/testing/__init__.py",
         "sympy/testing/runtests.py"],
    ),
    "pytest": (
        ["testing/test_assertrewrite.py", "testing/python/collect.py",
         "testing/example_scripts/fixtures/custom_item/conftest.py"],
        [("src/_pytest/assertion/rewrite.py", "modify"), ("src/_pytest/python.py", "modify"),
         ("src/pytest/__init__.py", "modify"), ("src/_pytest/_py/path.py", "add"), ("src/_pytest/scope.py", "add"),
         ("changelog/10624.bugfix.rst", "add"), ("doc/en/reference/reference.rst", "modify")],
        ["src/_pytest/__init__.py", "src/_pytest/python.py", "src/_pytest/assertion/__init__.py",
         "src/_pytest/assertion/rewrite.py", "src/pytest/__init__.py", "testing/python/collect.py"],
    ),
    "pylint": (
        ["tests/test_self.py", "tests/checkers/unittest_variables.py",
         "tests/functional/u/unused/unused_import.py", "tests/functional/u/unused/unused_import.txt"],
        [("pylint/checkers/variables.py", "modify"), ("pylint/lint/pylinter.py", "modify"),
         ("pylint/testutils/checker_test_case.py", "modify"), ("pylint/__init__.py", "modify"),
         ("doc/whatsnew/fragments/8498.bugfix", "add")],
        ["pylint/__init__.py", "pylint/checkers/__init__.py", "pylint/checkers/variables.py",
         "pylint/testutils/__init__.py", "pylint/testutils/checker_test_case.py"],
    ),
    "sphinx": (
        ["tests/test_ext_autodoc.py", "tests/roots/test-ext-autodoc/target/typehints.py"],
        [("sphinx/ext/autodoc/__init__.py", "modify"), ("sphinx/util/typing.py", "modify"),
         ("sphinx/util/inspect.py", "modify"), ("sphinx/testing/fixtures.py", "modify"),
         ("sphinx/testing/util.py", "modify"), ("CHANGES", "modify")],
        ["sphinx/__init__.py", "sphinx/ext/autodoc/__init__.py", "sphinx/util/__init__.py", "sphinx/util/typing.py",
         "sphinx/testing/__init__.py", "sphinx/testing/fixtures.py"],
    ),
    "requests": (
        ["test_requests.py"],
        [("requests/models.py", "modify"), ("requests/sessions.py", "modify"), ("requests/__init__.py", "modify"),
         ("requests/compat.py", "modify"), ("HISTORY.rst", "modify")],
        ["requests/__init__.py", "requests/models.py", "requests/sessions.py", "requests/compat.py", "test_requests.py"],
    ),
    "xarray": (
        ["xarray/tests/test_dataarray.py", "xarray/tests/test_computation.py"],
        [("xarray/core/dataarray.py", "modify"), ("xarray/core/computation.py", "modify"),
         ("xarray/__init__.py", "modify"), ("xarray/testing.py", "modify"), ("doc/whats-new.rst", "modify")],
        ["xarray/__init__.py", "xarray/core/__init__.py", "xarray/core/dataarray.py", "xarray/tests/__init__.py",
         "xarray/testing.py"],
    ),
    "scikit-learn": (
        ["sklearn/utils/tests/test_validation.py", "sklearn/linear_model/tests/test_ridge.py"],
        [("sklearn/utils/validation.py", "modify"), ("sklearn/utils/_testing.py", "modify"),
         ("sklearn/utils/__init__.py", "modify"), ("sklearn/linear_model/_ridge.py", "modify"),
         ("doc/whats_new/v1.3.rst", "modify")],
        ["sklearn/__init__.py", "sklearn/utils/__init__.py", "sklearn/utils/validation.py", "sklearn/utils/_testing.py",
         "sklearn/utils/tests/__init__.py", "sklearn/linear_model/__init__.py", "sklearn/linear_model/_ridge.py"],
    ),
    "matplotlib": (
        ["lib/matplotlib/tests/test_axes.py", "lib/mpl_toolkits/axes_grid1/tests/test_axes_grid1.py"],
        [("lib/matplotlib/axes/_axes.py", "modify"), ("lib/matplotlib/testing/decorators.py", "modify"),
         ("lib/mpl_toolkits/axes_grid1/axes_divider.py", "modify"), ("lib/matplotlib/__init__.py", "modify")],
        ["lib/matplotlib/__init__.py", "lib/matplotlib/axes/__init__.py", "lib/matplotlib/axes/_axes.py",
         "lib/matplotlib/tests/__init__.py", "lib/matplotlib/testing/__init__.py",
         "lib/matplotlib/testing/decorators.py", "lib/mpl_toolkits/axes_grid1/__init__.py",
         "lib/mpl_toolkits/axes_grid1/axes_divider.py"],
    ),
    "tests-next-to-sources": (
        ["pkg/test_core.py"],
        [("pkg/core.py", "modify"), ("pkg/helpers.py", "add"), ("pkg/__init__.py", "modify")],
        ["pkg/__init__.py", "pkg/core.py", "pkg/test_core.py"],
    ),
    "py-ships-py": (
        ["testing/path/test_local.py"],
        [("py/_path/local.py", "modify"), ("py/__init__.py", "modify"), ("py/_path/new_helper.py", "add")],
        ["py/__init__.py", "py/_path/__init__.py", "py/_path/local.py", "testing/path/test_local.py"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("repo_name", list(GOLD))
def test_gold_patches_of_real_repositories_are_not_protected(repo_name: str) -> None:
    tests, gold, base = GOLD[repo_name]
    for path, _ in gold:
        assert protected_reason(path, tests) is None, path
        assert shadowing_reason(path, _base(*base), tests, roots=["lib"]) is None, path
    diff = "".join(_file_diff(path, kind) for path, kind in gold)
    expected = tuple(path for path, _ in gold)
    # with the base known (the runner's git), and with only the diff to go by
    for existed in (_base(*base), None):
        result = filter_candidate(diff, tests, existed_at_base=existed, roots=["lib"])
        assert result.dropped == (), (existed, result.dropped)
        assert result.kept == expected


def test_test_folders_never_include_the_package_above_the_tests() -> None:
    assert protected_test_folders(["astropy/io/fits/tests/test_header.py"]) == ["astropy/io/fits/tests"]
    assert protected_test_folders(["sympy/core/tests/test_basic.py"]) == ["sympy/core/tests"]
    assert protected_test_folders(["testing/python/collect.py", "testing/python/fixtures.py"]) == ["testing/python"]
    assert protected_test_folders(["testing/test_main.py", "testing/python/collect.py"]) == ["testing"]
    assert protected_test_folders(["tests/queries/tests.py"]) == ["tests/queries"]
    assert protected_test_folders(["test_requests.py"]) == []  # never the whole repository
    assert protected_test_folders(["pkg/test_core.py"]) == []  # tests next to the sources they test
    assert protected_test_folders(["django/test/utils.py"]) == []  # library code in a folder named test
    assert protected_test_folders(["sphinx/testing/fixtures.py"]) == []
    assert protected_test_folders(["tornado/test/web_test.py"]) == ["tornado/test"]
    assert protected_test_folders(["mypy/test/testcheck.py"]) == ["mypy/test"]
    assert protected_test_folders(["test/unit/test_x.py", "src/test/python/x.py"]) == ["src/test/python", "test/unit"]
    assert protected_test_folders(["pkg/unit_tests/cases.py", "e2e/flows/login.py"]) == ["e2e/flows", "pkg/unit_tests"]
    assert protected_test_folders(["mypy/test-data/unit/check-classes.test"]) == ["mypy/test-data/unit"]


TESTING = ["testing/python/collect.py", "testing/test_assertrewrite.py"]


@pytest.mark.parametrize(
    ("path", "tests", "reason"),
    [
        ("testing/python/helpers.py", ["testing/python/collect.py"], "inside a folder of the instance's tests (testing/python/)"),
        ("testing/python/__init__.py", ["testing/python/collect.py"], "inside a folder of the instance's tests (testing/python/)"),
        ("testing/python/data/sub/input.txt", ["testing/python/collect.py"], "inside a folder of the instance's tests (testing/python/)"),
        ("testing/example_scripts/issue.py", TESTING, "inside a folder of the instance's tests (testing/)"),
        ("testing/freeze/create_executable.py", TESTING, "inside a folder of the instance's tests (testing/)"),
        ("tornado/test/util.py", ["tornado/test/web_test.py"], "inside a folder of the instance's tests (tornado/test/)"),
        ("mypy/test/data.py", ["mypy/test/testcheck.py"], "inside a folder of the instance's tests (mypy/test/)"),
        ("mypy/test-data/unit/fixtures/list.pyi", ["mypy/test-data/unit/check-classes.test"],
         "inside a folder of the instance's tests (mypy/test-data/unit/)"),
        ("test/unit/fixtures.py", ["test/unit/case_parser.py"], "inside a folder of the instance's tests (test/unit/)"),
        ("pkg/unit_tests/helpers.py", ["pkg/unit_tests/cases.py"], "inside a folder of the instance's tests (pkg/unit_tests/)"),
    ],
    ids=["helper", "init-in-test-folder", "data-deep", "top-testing-folder", "testing-sibling", "tornado", "mypy",
         "mypy-test-data", "top-test-folder", "unit-tests"],
)  # fmt: skip
def test_everything_inside_a_folder_of_the_instances_tests_is_protected(path: str, tests: list[str], reason: str) -> None:
    assert protected_reason(path) is None  # no name rule knows these
    assert protected_reason(path, tests) == reason
    assert filter_candidate(_file_diff(path, "add"), tests).dropped == (Dropped(path, reason),)


@pytest.mark.parametrize(
    ("path", "tests"),
    [
        ("astropy/io/fits/card.py", ["astropy/io/fits/tests/test_header.py"]),
        ("astropy/io/fits/newmodule.py", ["astropy/io/fits/tests/test_header.py"]),
        ("sympy/core/basic.py", ["sympy/core/tests/test_basic.py"]),
        ("django/test/runner.py", ["django/test/utils.py"]),
        ("sphinx/testing/util.py", ["sphinx/testing/fixtures.py"]),
        ("pkg/core.py", ["pkg/test_core.py"]),
        ("requests/models.py", ["test_requests.py"]),
        ("setup_helpers.py", ["setup.cfg"]),
        ("testing_utils.py", ["testing/python/collect.py"]),
        ("testing2/python/x.py", ["testing/python/collect.py"]),
    ],
    ids=["astropy", "astropy-new", "sympy", "django-test", "sphinx-testing", "next-to-sources", "requests-root",
         "root-config", "prefix-file", "prefix-folder"],
)  # fmt: skip
def test_folders_around_the_tests_are_not_protected(path: str, tests: list[str]) -> None:
    assert protected_reason(path, tests) is None


def test_an_init_added_on_the_path_to_the_tests_is_protected() -> None:
    tests = ["testing/python/collect.py"]
    reason = "__init__.py added in testing/, on the path to the instance's tests (changes their module names)"
    assert protected_reason("testing/__init__.py", tests, change="added") == reason
    assert protected_reason("testing/__init__.py", tests, change="removed") == reason.replace("added", "removed")
    assert protected_reason("testing/__init__.py", tests) is None  # its content is not the tests'
    assert protected_reason("__init__.py", tests, change="added") == (
        "__init__.py added in the repository root, on the path to the instance's tests (changes their module names)"
    )
    assert protected_reason("src/__init__.py", tests, change="added") is None  # not on the path
    sympy = ["sympy/core/tests/test_basic.py"]
    assert protected_reason("sympy/__init__.py", sympy) is None
    assert protected_reason("sympy/core/__init__.py", sympy) is None
    assert protected_reason("sympy/core/__init__.py", sympy, change="removed") is not None
    assert protected_reason("sympy/core/__init__.py", sympy, change="added") is not None

    # the diff says it creates the file
    for diff in (_file_diff("testing/__init__.py", "add"), _file_diff("testing/__init__.py", "rename", "x.py")):
        result = filter_candidate(diff, tests)
        assert [d.path for d in result.dropped] == ["testing/__init__.py"]
        assert result.dropped[0].reason == reason
    assert filter_candidate(_file_diff("sympy/core/__init__.py", "delete"), sympy).kept == ()
    assert filter_candidate(_file_diff("sympy/core/__init__.py"), sympy).kept == ("sympy/core/__init__.py",)
    # a creation spelled as filling an existing empty file: only the base can tell
    hidden = _file_diff("testing/__init__.py", "fill")
    assert filter_candidate(hidden, tests).kept == ("testing/__init__.py",)
    base = _base("testing/python/collect.py")
    assert filter_candidate(hidden, tests, existed_at_base=base).dropped == (Dropped("testing/__init__.py", reason),)
    filled = _base("testing/python/collect.py", "testing/__init__.py")
    assert filter_candidate(hidden, tests, existed_at_base=filled).kept == ("testing/__init__.py",)


def test_the_init_of_a_package_the_candidate_creates_is_its_own() -> None:
    tests = ["astropy/cosmology/io/tests/__init__.py", "astropy/cosmology/io/tests/test_html.py"]
    init = _file_diff("astropy/cosmology/io/__init__.py", "add")
    module = _file_diff("astropy/cosmology/io/html.py", "add")
    # the base says the folder is new
    base = _base("astropy/__init__.py", "astropy/cosmology/__init__.py")
    assert filter_candidate(init, tests, existed_at_base=base).dropped == ()
    # only the diff: a folder the candidate creates modules in
    assert filter_candidate(init + module, tests).dropped == ()
    # the same __init__.py in a folder that exists is not the candidate's
    existing = _base("astropy/__init__.py", "astropy/cosmology/io/other.py")
    assert [d.path for d in filter_candidate(init, tests, existed_at_base=existing).dropped] == [
        "astropy/cosmology/io/__init__.py"
    ]
    assert [d.path for d in filter_candidate(init, tests).dropped] == ["astropy/cosmology/io/__init__.py"]
    # a folder it also changes existing files of existed
    assert [d.path for d in filter_candidate(init + module + _file_diff("astropy/cosmology/io/old.py"), tests).dropped] == [
        "astropy/cosmology/io/__init__.py"
    ]


@pytest.mark.parametrize(
    "path",
    ["pkg/__pycache__/core.cpython-311.pyc", "__pycache__/conftest.cpython-312-pytest-8.3.2.pyc",
     "testing/__pycache__/notes.txt", "pkg/core.pyc", "legacy.pyo", "src/_pytest/__pycache__/python.cpython-39.opt-1.pyc"],
    ids=["pycache-pyc", "root-pycache", "pycache-any-file", "stray-pyc", "pyo", "opt-pyc"],
)  # fmt: skip
def test_byte_code_is_protected(path: str) -> None:
    assert protected_reason(path) == "compiled byte code (__pycache__, .pyc, .pyo): Python can run it instead of the source"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("sitecustomize/__init__.py", "interpreter start-up hook (inside a sitecustomize package)"),
        ("sitecustomize/hooks.py", "interpreter start-up hook (inside a sitecustomize package)"),
        ("lib/usercustomize/data.txt", "interpreter start-up hook (inside a usercustomize package)"),
        ("sitecustomize.cpython-311-x86_64-linux-gnu.so", "interpreter start-up hook (sitecustomize module: sitecustomize.cpython-311-x86_64-linux-gnu.so)"),
        ("src/sitecustomize.abi3.so", "interpreter start-up hook (sitecustomize module: sitecustomize.abi3.so)"),
        ("sitecustomize.so", "interpreter start-up hook (sitecustomize module: sitecustomize.so)"),
        ("usercustomize.pyd", "interpreter start-up hook (usercustomize module: usercustomize.pyd)"),
        ("sitecustomize.pyw", "interpreter start-up hook (sitecustomize module: sitecustomize.pyw)"),
        ("sitecustomize.pyc", "interpreter start-up hook (sitecustomize module: sitecustomize.pyc)"),
        ("sitecustomize.py", "interpreter start-up hook"),
        ("hooks/zz-evil.pth", "interpreter start-up hook (.pth)"),
    ],
    ids=["package-init", "package-module", "package-data", "extension", "abi3", "so", "pyd", "pyw", "pyc", "py", "pth"],
)  # fmt: skip
def test_start_up_hooks_in_every_form_are_protected(path: str, reason: str) -> None:
    assert protected_reason(path) == reason


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        (".gitattributes", "git attributes (.gitattributes: how git applies, compares and restores files)"),
        ("tests/data/.gitattributes", "below a tests directory"),
        ("src/pkg/.gitattributes", "git attributes (.gitattributes: how git applies, compares and restores files)"),
        (".gitmodules", "git submodules (.gitmodules)"),
        ("a/b/tox.ini", "pytest configuration"),
        ("a/b/setup.cfg", "pytest configuration"),
        ("a/.pytest.ini", "pytest configuration"),
        ("a/b/c/pytest.ini", "pytest configuration"),
        ("docs/conftest.py", "conftest.py (pytest hooks and fixtures)"),
    ],
    ids=["gitattributes", "gitattributes-tests", "gitattributes-nested", "gitmodules", "tox", "setup-cfg",
         "dot-pytest-ini", "pytest-ini", "conftest"],
)  # fmt: skip
def test_git_files_and_configuration_at_any_level_are_protected(path: str, reason: str) -> None:
    assert protected_reason(path) == reason


@pytest.mark.parametrize(
    "path",
    ["docs/sitecustomize.rst", "pkg/site_customize.py", "pkg/mysitecustomize.py", "pkg/pycache.py",
     "pkg/compiled.pyx", "gitattributes.txt", "docs/pytest.rst"],
    ids=["docs", "underscore", "prefixed", "pycache-name", "pyx", "gitattributes-txt", "pytest-rst"],
)  # fmt: skip
def test_look_alikes_of_the_new_roles_are_not_protected(path: str) -> None:
    assert protected_reason(path, TESTING) is None


def test_the_standard_library_list_covers_other_python_versions() -> None:
    assert set(sys.stdlib_module_names) <= STDLIB_MODULES
    # removed in 3.12/3.13 (the tests may run under an older Python), added in 3.9/3.11
    assert {"distutils", "imp", "asynchat", "asyncore", "smtpd", "cgi", "lib2to3", "formatter", "parser"} <= STDLIB_MODULES
    assert {"tomllib", "zoneinfo", "graphlib", "dataclasses"} <= STDLIB_MODULES
    assert {"pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "colorama",
            "attr", "attrs", "atomicwrites", "more_itertools", "xdist", "execnet", "_objective_scoring_recorder",
            "_objective_scoring_boot"} <= RUNNER_MODULES  # fmt: skip


NOTHING: Callable[[str], bool] = lambda path: False  # noqa: E731  # an empty base


@pytest.mark.parametrize(
    ("path", "shadowed"),
    [
        ("json.py", "json at the repository root would shadow the standard-library module"),
        ("src/json/__init__.py", "json at src/ would shadow the standard-library module"),
        ("json/decoder.py", "json at the repository root would shadow the standard-library module"),
        ("typing.cpython-311-x86_64-linux-gnu.so", "typing at the repository root would shadow the standard-library module"),
        ("distutils/__init__.py", "distutils at the repository root would shadow the standard-library module"),
        ("imp.py", "imp at the repository root would shadow the standard-library module"),
        ("asyncore.py", "asyncore at the repository root would shadow the standard-library module"),
        ("tomllib/__init__.py", "tomllib at the repository root would shadow the standard-library module"),
        ("pluggy/__init__.py", "pluggy at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("src/pluggy/_hooks.py", "pluggy at src/ would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("pluggy/README", "pluggy at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("py.py", "py at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("_pytest/python.py", "_pytest at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("exceptiongroup/__init__.py", "exceptiongroup at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("pytest_cov.py", "pytest_cov at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
        ("_objective_scoring_recorder.py", "_objective_scoring_recorder at the repository root would shadow the test runner (pytest, its plugins or their dependencies)"),
    ],
    ids=["json", "src-package", "package-module", "extension", "distutils", "imp", "asyncore", "tomllib", "pluggy",
         "src-pluggy", "pluggy-data", "py", "_pytest", "exceptiongroup", "plugin", "recorder"],
)  # fmt: skip
def test_new_top_level_modules_shadowing_the_stdlib_or_the_runner(path: str, shadowed: str) -> None:
    assert shadowing_reason(path, NOTHING) == f"a new top-level module {shadowed}"


def test_shadowing_only_counts_new_modules_at_an_import_root() -> None:
    # a module the base has is the project's own
    assert shadowing_reason("py/_path/local.py", _base("py/__init__.py")) is None
    assert shadowing_reason("py/new.py", _base("py/__init__.py")) is None
    assert shadowing_reason("src/_pytest/scope.py", _base("src/_pytest/__init__.py")) is None
    assert shadowing_reason("json.py", _base("json.py")) is None
    assert shadowing_reason("json/__init__.py", _base("json.py")) is None
    # not at an import root, not a module, not a guarded name
    assert shadowing_reason("docs/json.py", NOTHING) is None
    assert shadowing_reason("pkg/json.py", _base("pkg/__init__.py")) is None
    assert shadowing_reason("lib/json.py", NOTHING) is None
    assert shadowing_reason("site/index.html", NOTHING) is None
    assert shadowing_reason("json/schema.json", NOTHING) is None
    assert shadowing_reason("mymodule.py", NOTHING) is None
    assert shadowing_reason("README.md", NOTHING) is None
    # folders holding top-level packages, given as roots (lib/ in lib/matplotlib/)
    assert shadowing_reason("lib/json.py", NOTHING, roots=["lib"]) is not None
    assert shadowing_reason("lib/json.py", NOTHING, roots=["lib/"]) is not None
    # the folder pytest puts on sys.path for a test without an __init__.py above it
    assert shadowing_reason("pkg/json.py", NOTHING, ["pkg/test_core.py"]) == (
        "a new top-level module json at pkg/ would shadow the standard-library module"
    )
    assert shadowing_reason("pkg/json.py", _base("pkg/__init__.py"), ["pkg/test_core.py"]) is None
    assert shadowing_reason("suite/json.py", _base("suite/unit/__init__.py"), ["suite/unit/test_x.py"]) is not None
    assert shadowing_reason("suite/json.py", NOTHING, ["suite/unit/test_x.py"]) is None  # suite/unit/ is the basedir


def test_filter_candidate_drops_new_shadowing_modules() -> None:
    diff = (
        _file_diff("json.py", "add") + _file_diff("src/pluggy/__init__.py", "add") + _file_diff("src/pkg/core.py")
        + _file_diff("py/__init__.py") + _file_diff("src/_pytest/newmod.py", "add") + _file_diff("lib/typing.py", "add")
    )  # fmt: skip
    # only the diff: created module files at the root or src/ are new, unless the candidate changes existing files of theirs
    result = filter_candidate(diff)
    assert [d.path for d in result.dropped] == ["json.py", "src/pluggy/__init__.py"]
    assert result.kept == ("src/pkg/core.py", "py/__init__.py", "src/_pytest/newmod.py", "lib/typing.py")
    # with the base known, everything inside a new module, and roots from the workspace
    base = _base("src/pkg/core.py", "py/__init__.py", "src/_pytest/__init__.py")
    result = filter_candidate(diff + _file_diff("pluggy/hooks.py", "add"), existed_at_base=base, roots=["lib"])
    assert [d.path for d in result.dropped] == ["json.py", "src/pluggy/__init__.py", "lib/typing.py", "pluggy/hooks.py"]
    assert result.kept == ("src/pkg/core.py", "py/__init__.py", "src/_pytest/newmod.py")
    assert result.dropped[0].reason == "a new top-level module json at the repository root would shadow the standard-library module"


def test_snapshot_records_the_new_roles(tmp_path: Path) -> None:
    tests = ["testing/python/collect.py", "sympy/core/tests/test_basic.py"]
    _tree(
        tmp_path,
        {
            "testing/python/collect.py": "a",
            "testing/python/helpers.py": "b",
            "testing/python/data.txt": "c",
            "sympy/__init__.py": "d",
            "sympy/core/__init__.py": "e",
            "sympy/core/basic.py": "f",
            "sympy/core/tests/test_basic.py": "g",
            "sitecustomize/__init__.py": "h",
            "pkg/stray.pyc": "i",
            "pkg/__pycache__/mod.cpython-311.pyc": "j",
            ".gitattributes": "k",
        },
    )
    before = snapshot(tmp_path, tests)
    assert {p: d for p, d in before.items() if d in (INIT_PRESENT, INIT_ABSENT)} == {
        "__init__.py": INIT_ABSENT,
        "testing/__init__.py": INIT_ABSENT,
        "sympy/__init__.py": INIT_PRESENT,
        "sympy/core/__init__.py": INIT_PRESENT,
    }
    assert {"testing/python/helpers.py", "sitecustomize/__init__.py", "pkg/stray.pyc", ".gitattributes"} <= set(before)
    assert "testing/python/data.txt" not in before  # test data the tests may write
    assert "pkg/__pycache__/mod.cpython-311.pyc" not in before  # Python writes byte code itself

    # the project's edits of an __init__.py on the path, a package the candidate creates: nothing
    _tree(tmp_path, {"sympy/__init__.py": "changed", "sympy/newpkg/__init__.py": "", "testing/python/data.txt": "x"})
    assert snapshot_changes(before, snapshot(tmp_path, tests + ["sympy/newpkg/tests/test_new.py"])) == []
    # an __init__.py added or removed on the path, a helper of the tests changed, a start-up hook
    _tree(tmp_path, {"testing/__init__.py": "", "testing/python/helpers.py": "forged", "sitecustomize/evil.py": ""})
    (tmp_path / "sympy/core/__init__.py").unlink()
    changes = snapshot_changes(before, snapshot(tmp_path, tests))
    assert changes == [
        "added sitecustomize/evil.py",
        "added testing/__init__.py",
        "changed testing/python/helpers.py",
        "removed sympy/core/__init__.py",
    ]
    assert [snapshot_change_reason(c, tests) for c in changes] == [
        "interpreter start-up hook (inside a sitecustomize package)",
        "__init__.py added in testing/, on the path to the instance's tests (changes their module names)",
        "inside a folder of the instance's tests (testing/python/)",
        "__init__.py removed in sympy/core/, on the path to the instance's tests (changes their module names)",
    ]


@needs_git
def test_filter_candidate_on_a_real_forged_diff_by_role(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _tree(
        root,
        {
            "src/_pytest/__init__.py": "",
            "src/_pytest/python.py": "X = 1\n",
            "testing/python/collect.py": "def test_collect():\n    pass\n",
            "testing/python/helpers.py": "HELP = 1\n",
        },
    )
    assert _git(root, "init", "-q", ".").returncode == 0
    assert _git(root, "add", "-A").returncode == 0
    assert _git(root, "commit", "-q", "-m", "base").returncode == 0
    forged = {
        "sitecustomize/__init__.py": "import os\n",
        "json.py": "loads = None\n",
        "testing/__init__.py": "",
        "testing/python/__init__.py": "",
        "testing/python/helpers.py": "HELP = 2\n",
        ".gitattributes": "*.py -diff\n",
        "src/_pytest/python.py": "X = 2\n",
        "src/_pytest/scope.py": "SCOPE = 1\n",
    }
    _tree(root, forged)
    pyc = root / "testing/python/__pycache__/collect.cpython-311-pytest-8.0.0.pyc"
    pyc.parent.mkdir(parents=True)
    pyc.write_bytes(b"\xa7\r\r\n\x03\x00\x00\x00forged")
    assert _git(root, "add", "-A", "-f").returncode == 0
    diff = _git(root, "diff", "--cached", "--binary", "HEAD").stdout
    assert _git(root, "reset", "-q", "--hard", "HEAD").returncode == 0
    assert "GIT binary patch" in diff

    tests = ["testing/python/collect.py"]
    for existed in (None, lambda p: _git(root, "cat-file", "-e", f"HEAD:{p}").returncode == 0):
        result = filter_candidate(diff, tests, existed_at_base=existed)
        assert result.kept == ("src/_pytest/python.py", "src/_pytest/scope.py")
        assert {d.path: d.reason.split(" (")[0] for d in result.dropped} == {
            ".gitattributes": "git attributes",
            "json.py": "a new top-level module json at the repository root would shadow the standard-library module",
            "sitecustomize/__init__.py": "interpreter start-up hook",
            "testing/__init__.py": "__init__.py added in testing/, on the path to the instance's tests",
            "testing/python/__init__.py": "inside a folder of the instance's tests",
            "testing/python/helpers.py": "inside a folder of the instance's tests",
            "testing/python/__pycache__/collect.cpython-311-pytest-8.0.0.pyc": "compiled byte code",
        }
        out = tmp_path / "kept.diff"
        out.write_text(result.patch, encoding="utf-8")
        assert _git(root, "apply", "--check", str(out)).returncode == 0
