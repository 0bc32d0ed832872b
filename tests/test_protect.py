from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_objective_scoring.protect import (
    Dropped,
    PatchParseError,
    filter_candidate,
    patch_files,
    protected_reason,
    snapshot,
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
    assert sorted(digests) == [
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
