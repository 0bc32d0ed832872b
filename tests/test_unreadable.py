"""Graders that are not root (issue 27): what a run made unreadable is counted, never skipped, and
another user's workspaces in a shared temporary folder are left alone, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_objective_scoring import liveness, protect, testrun, workspace


@pytest.fixture
def refuse(monkeypatch):
    """Make listing chosen folders fail as it does for a grader without the right to read them
    (root reads any folder, so the suite, run as root too, cannot rely on mode 000)."""
    refused: set[str] = set()
    real = os.scandir

    def scandir(path="."):
        if os.path.realpath(os.fspath(path)) in refused:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return refused


def test_an_unreadable_folder_in_the_upper_layer_is_a_write(tmp_path: Path, refuse) -> None:
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    (upper / "tests").mkdir(parents=True)
    (upper / "tests" / "test_x.py").write_text("def test_x(): pass\n")
    (lower / "tests").mkdir(parents=True)
    (lower / "tests" / "test_x.py").write_text("def test_x(): assert False\n")
    assert testrun.upper_changes(upper, lower, ["tests/test_x.py"]) == ["changed tests/test_x.py"]
    refuse.add(os.path.realpath(upper / "tests"))
    assert testrun.upper_changes(upper, lower, ["tests/test_x.py"]) == ["unreadable tests (Permission denied)"]


def test_an_unreadable_folder_in_a_snapshot_is_a_change(tmp_path: Path, refuse) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_x(): pass\n")
    before = protect.snapshot(tmp_path, ["tests/test_x.py"])
    refuse.add(os.path.realpath(tmp_path / "tests"))
    after = protect.snapshot(tmp_path, ["tests/test_x.py"])
    changes = protect.snapshot_changes(before, after)
    assert "unreadable tests" in changes and "removed tests/test_x.py" in changes
    assert protect.snapshot_changes(after, after) == []


def test_another_users_workspace_is_neither_probed_nor_removed(tmp_path: Path) -> None:
    other = tmp_path / (workspace.WORKSPACE_PREFIX + "someone-else")
    other.mkdir()
    owner = other / workspace.OWNER_FILE
    owner.write_text("{}")
    if os.geteuid() == 0:
        os.chown(other, 12345, 12345)  # another user's, in a shared temporary folder
    else:
        owner.chmod(0)  # unreadable: what another user's owner file is to this one
        assert liveness.probe(owner) == liveness.ALIVE  # nothing proves its owner ended
    assert workspace.sweep_workspaces(tmp_path) == []
    assert other.is_dir() and os.path.lexists(owner)


def test_an_owner_file_that_cannot_be_opened_reads_as_alive(tmp_path: Path, monkeypatch) -> None:
    owner = tmp_path / "owner"
    owner.write_text("{}")
    real = os.open

    def refused(path, flags, *args):
        if os.fspath(path) == str(owner):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, flags, *args)

    monkeypatch.setattr(os, "open", refused)
    assert liveness.probe(owner) == liveness.ALIVE


def test_removing_a_workspace_never_changes_the_folder_that_holds_it(tmp_path: Path, monkeypatch) -> None:
    """A removal that fails at the top of the tree (the folder itself cannot be removed) once made
    the folder holding it mode 0700: the shared temporary folder, closed to every other user."""
    holder = tmp_path / "shared"
    holder.mkdir()
    holder.chmod(0o1777)
    target = holder / "workspace"
    (target / "inner").mkdir(parents=True)
    real = os.rmdir

    def refuse_the_top(path, *args, **kwargs):
        if os.path.abspath(os.fspath(path)) == str(target):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", refuse_the_top)
    workspace.fresh(target)
    assert oct(holder.stat().st_mode & 0o7777) == oct(0o1777)
