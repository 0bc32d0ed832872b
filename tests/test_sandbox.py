"""The sandbox every test process runs in (issue 12): what the candidate's code can see, write and
reach, how a failure to build it is told, and what the runner does when a machine cannot give it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_objective_scoring import interpreters, sandbox, testrun
from pytest_objective_scoring.integrity import assess as disposition

from .conftest import FIXTURES
from .runner_helpers import grade, patch_of

pytestmark = pytest.mark.skipif(sandbox.probe(None)[0] == "none" or not sys.platform.startswith("linux"),
                                reason="needs Linux namespaces")  # fmt: skip

PROBE = textwrap.dedent(
    """
    import json, os, sys
    def attempt(action):
        try:
            action()
            return "ok"
        except OSError as exc:
            return exc.strerror
    facts = {
        "uid": os.getuid(),
        "root": sorted(os.listdir("/")),
        "pid": os.getpid(),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "write_usr": attempt(lambda: open("/usr/objective-probe", "w")),
        "write_copy": attempt(lambda: open(os.path.join(sys.argv[1], "new.txt"), "w").write("x")),
        "write_tmp": attempt(lambda: open("/tmp/probe", "w").write("x")),
        "hidden": [p for p in sys.argv[2:] if os.path.exists(p)],
        "loopback": attempt(lambda: __import__("socket").socket().bind(("127.0.0.1", 0))),
        "outside": attempt(lambda: __import__("socket").create_connection(("192.0.2.1", 9), timeout=2)),
        "remount": os.system("mount -o remount,rw /usr 2>/dev/null"),
    }
    print(json.dumps(facts))
    """
)


def _confined(tmp_path: Path, command: list[str], *, overlay: bool = True) -> tuple[subprocess.CompletedProcess[str], tuple[bool, str]]:
    lower, place = tmp_path / "copy", tmp_path / "runs" / "one"
    lower.mkdir(exist_ok=True)
    (lower / "kept.txt").write_text("pristine\n")
    place.mkdir(parents=True)
    for name in ("root", "upper", "work"):
        (place / name).mkdir()
    reader, writer = os.pipe()
    spec = {"root": str(place / "root"), "status_fd": writer, "cwd": str(lower), "network": False, "command": command,
            "read_only": interpreters.interpreter_folders(sys.executable),
            "writable": [] if overlay else [[str(lower), str(lower)]],
            "overlay": {"lower": str(lower), "upper": str(place / "upper"), "work": str(place / "work"),
                        "target": str(lower)} if overlay else None}  # fmt: skip
    try:
        result = subprocess.run(sandbox.launcher(spec), pass_fds=(writer,), capture_output=True, text=True, timeout=60,
                                env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    finally:
        os.close(writer)
    return result, sandbox.read_status(reader)


def test_the_confined_process_sees_and_reaches_only_its_own(tmp_path):
    secret = tmp_path / "ledger-and-repository"
    secret.mkdir()
    copy = tmp_path / "copy"
    grader = str(Path(sandbox.__file__).parent)  # the grader's own files
    result, status = _confined(tmp_path, [sys.executable, "-I", "-c", PROBE, str(copy), str(secret), grader])
    assert status == (True, ""), result.stderr
    facts = json.loads(result.stdout)
    assert facts["uid"] == sandbox.INSIDE_UID  # no root, no capability after exec
    interpreter = {p.split("/")[1] for p in interpreters.interpreter_folders(sys.executable)}
    assert set(facts["root"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "tmp", "usr",
                                  *interpreter}  # fmt: skip
    assert facts["pids"][0] == 1 and facts["pid"] < 10  # a PID namespace of its own
    assert facts["write_usr"] == "Read-only file system"
    assert facts["write_copy"] == "ok" and facts["write_tmp"] == "ok"
    assert facts["hidden"] == []  # the ledger, the user's repository and the grader are out of sight
    assert facts["loopback"] == "ok"
    assert facts["outside"] != "ok"  # no network but loopback
    assert facts["remount"] != 0
    # the copy's writes went to the run's own layer: the pristine copy is untouched
    assert sorted(os.listdir(copy)) == ["kept.txt"]
    assert (tmp_path / "runs" / "one" / "upper" / "new.txt").read_text() == "x"


def test_a_command_cannot_fake_a_sandbox_failure(tmp_path):
    """Only the launcher holds the status pipe: a test process that prints the launcher's words and
    exits 125 is still a confined run (never re-run unconfined)."""
    fake = "import sys; sys.stderr.write('fail: unshare refused\\n'); sys.exit(125)"
    result, status = _confined(tmp_path, [sys.executable, "-I", "-c", fake])
    assert result.returncode == 125
    assert status == (True, "")


def test_a_launcher_that_cannot_build_its_root_says_so(tmp_path):
    result, status = _confined(tmp_path, ["/no/such/program"], overlay=False)
    assert status == (True, "")  # the root was built; the command just does not exist
    assert result.returncode == 127
    reader, writer = os.pipe()
    spec = {"root": str(tmp_path / "missing-root"), "status_fd": writer, "cwd": "/", "command": ["true"], "network": False}
    try:
        subprocess.run(sandbox.launcher(spec), pass_fds=(writer,), capture_output=True, timeout=60)
    finally:
        os.close(writer)
    ok, why = sandbox.read_status(reader)
    assert not ok and "tmpfs" in why


def test_every_run_starts_from_the_pristine_copy_and_its_writes_are_read_back(tmp_path):
    lower = tmp_path / "lower"
    (lower / "tests").mkdir(parents=True)
    (lower / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    upper = tmp_path / "upper"
    (upper / "tests").mkdir(parents=True)
    (upper / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")  # rewritten, then put back as it was
    (upper / "tests" / "conftest.py").write_text("")
    os.mknod(upper / "tests" / "gone.py", 0o600 | 0o020000, os.makedev(0, 0)) if os.geteuid() == 0 else None
    changes = testrun.upper_changes(upper, lower, ["tests/test_x.py"])
    assert "changed tests/test_x.py" in changes  # even though its content is the same again
    assert "added tests/conftest.py" in changes
    if os.geteuid() == 0:
        assert "removed tests/gone.py" in changes


@pytest.mark.slow
def test_a_machine_without_overlayfs_runs_each_run_in_a_fresh_copy(monkeypatch):
    real = sandbox.launcher

    def broken_overlay(spec):
        if spec.get("overlay"):
            spec = {**spec, "overlay": {**spec["overlay"], "lower": "/nonexistent/lower"}}
        return real(spec)

    monkeypatch.setattr(sandbox, "launcher", broken_overlay)
    monkeypatch.setattr(sandbox, "_AVAILABLE", {})
    result = grade("intervals", patch_of("intervals", "gold"))
    assert result.envelope["score"]["resolved"] == "resolved"
    isolation = result.envelope["runner"]["isolation"]
    assert isolation == {"mode": "namespaces", "copy": "fresh copy", "network": "loopback only",
                         "copy_also_at": [str((FIXTURES / "repos" / "intervals").resolve())]}  # fmt: skip
    assert sandbox.probe(None)[0] == "namespaces-copy" or any(v[0] == "namespaces-copy" for v in sandbox._AVAILABLE.values())


@pytest.mark.slow
def test_a_machine_without_namespaces_grades_unconfined_and_says_so(monkeypatch):
    real = sandbox.launcher
    monkeypatch.setattr(sandbox, "launcher", lambda spec: real({**spec, "root": "/nonexistent/root"}))
    monkeypatch.setattr(sandbox, "_AVAILABLE", {})
    result = grade("intervals", patch_of("intervals", "gold"))
    assert result.envelope["score"]["resolved"] == "resolved"
    isolation = result.envelope["runner"]["isolation"]
    assert isolation["mode"] == "none" and "tmpfs" in isolation["detail"]
    state, reasons, _ = disposition(result.envelope, {"state": "valid"})
    assert (state, reasons) == ("quarantined", ["not_sandboxed"])  # never eligible


@pytest.mark.slow
def test_a_sandboxed_honest_run_is_eligible():
    result = grade("csvlite", patch_of("csvlite", "gold"))
    assert result.envelope["runner"]["isolation"]["mode"] == "namespaces"
    assert disposition(result.envelope, {"state": "valid"})[0] == "eligible"


def test_the_cgroup_tree_is_visible_read_only(tmp_path):
    """Suites count their CPUs from the cgroup files (pylint reads cpu.shares): hiding them changed
    which of pylint's tests ran (found on pylint-dev/pylint-7114)."""
    if not os.path.isdir("/sys/fs/cgroup"):
        pytest.skip("no cgroup tree on this machine")
    shown = sorted(os.listdir("/sys/fs/cgroup"))
    probe = "import os, sys; print(sorted(os.listdir('/sys/fs/cgroup'))); open('/sys/fs/cgroup/x', 'w')"
    result, status = _confined(tmp_path, [sys.executable, "-I", "-c", probe])
    assert status == (True, ""), result.stderr
    assert result.stdout.strip() == str(shown)
    assert "Read-only file system" in result.stderr
