"""Warm test processes (``warm.py``, ``warm_server.py``): runs forked from a process that imported
pytest once, confined as cold runs are, with the verdicts cold runs give.

Every test starts from no warm process (:func:`warm.reset`): an interpreter's first two runs in a
grader process start cold, the later ones are forked warm.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_objective_scoring import warm

from .runner_helpers import grade, instance_of, make_patch, patch_of

pytestmark = pytest.mark.slow  # real gradings (docs/development.md: the fast subset)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INTERVALS = FIXTURES / "repos" / "intervals"
INTERVAL_PY = "src/intervals/interval.py"
BUGGY = "return self.start < other.end and other.start < self.end"


@pytest.fixture(autouse=True)
def no_warm_process():
    warm.reset()
    yield
    warm.reset()


def start(result):
    return result.envelope["runner"]["run"]["isolation"]


def facts(result):
    """What a grading decided, without times: the verdicts, each test's outcome, the integrity flags."""
    score = result.envelope["score"]
    tests = sorted((t["id"], t["outcome"], t["gate"]) for t in result.envelope["tests"])
    return (score["resolved"], score["fail_to_pass"]["verdict"], score["pass_to_pass"]["verdict"], result.failure_class,
            result.exit_code, tests, result.envelope["integrity"]["flags"])  # fmt: skip


def test_from_the_third_run_an_interpreter_runs_warm_with_the_verdicts_of_cold_runs():
    order = ["gold", "break_p2p", "gold", "break_p2p", "tamper", "empty"]
    results = [(candidate, grade("intervals", patch_of("intervals", candidate))) for candidate in order]
    starts = [start(r)["start"] for _, r in results]
    assert starts == ["cold", "cold", "warm", "warm", "warm", "warm"], starts
    assert "first 2 runs" in start(results[0][1])["cold_because"]
    by_candidate: dict[str, list] = {}
    for candidate, result in results:
        by_candidate.setdefault(candidate, []).append(facts(result))
    assert by_candidate["gold"][0] == by_candidate["gold"][1] and by_candidate["gold"][0][0] == "resolved"
    assert by_candidate["break_p2p"][0] == by_candidate["break_p2p"][1]
    assert by_candidate["break_p2p"][0][:4] == ("not_resolved", "satisfied", "violated", "solver")
    assert by_candidate["tamper"][0][0] == by_candidate["empty"][0][0] == "not_resolved"
    for _, result in results:
        run = result.envelope["runner"]["run"]
        assert run["cpu"] > 0 and run["isolation"]["mode"] == "namespaces"
    assert len(warm.live()) == 1  # one warm process served every warm run


CONFINED_TEST = '''\
import os


def test_the_run_is_confined_as_an_exec_leaves_it():
    with open("/proc/self/status") as handle:
        status = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
    for name in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[name].strip(), 16) == 0, (name, status[name])
    assert status["NoNewPrivs"].strip() == "1"
    assert os.getuid() == 1000 and os.getppid() == 1
    assert sorted(p for p in os.listdir("/proc") if p.isdigit()) == ["1", str(os.getpid())]
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink("/proc/self/fd/" + fd))
        except OSError:
            pass
    assert not [link for link in links if link.startswith("socket:")], links
'''


def test_a_warm_run_holds_what_a_cold_run_holds_no_capability_no_socket_no_other_process(tmp_path):
    test_patch = make_patch(INTERVALS, {"tests/test_confined.py": CONFINED_TEST}, tmp_path)
    instance = instance_of("intervals", test_patch=test_patch,
                           FAIL_TO_PASS=["tests/test_confined.py::test_the_run_is_confined_as_an_exec_leaves_it"],
                           PASS_TO_PASS=[])  # fmt: skip
    results = [grade("intervals", b"", instance=instance) for _ in range(3)]
    assert [start(r)["start"] for r in results] == ["cold", "cold", "warm"]
    for result in results:
        assert result.envelope["score"]["resolved"] == "resolved", result.envelope["runner"]["run"]["output_tail"]


def test_a_warm_run_that_hangs_is_killed_with_what_it_started_and_the_warm_process_serves_the_next(tmp_path):
    for _ in range(2):
        grade("intervals", patch_of("intervals", "gold"))
    source = (INTERVALS / INTERVAL_PY).read_text(encoding="utf-8").replace(
        BUGGY, "import subprocess, time; subprocess.Popen(['setsid', 'sleep', '988']); time.sleep(600)")
    diff = make_patch(INTERVALS, {INTERVAL_PY: source}, tmp_path)
    hung = grade("intervals", diff.encode(), timeout=5)
    assert start(hung)["start"] == "warm"
    assert hung.failure_class == "solver" and hung.envelope["runner"]["run"]["timed_out"] is True
    assert subprocess.run(["pgrep", "-f", "sleep 988"], capture_output=True, text=True).stdout == ""
    after = grade("intervals", patch_of("intervals", "gold"))
    assert start(after)["start"] == "warm" and after.envelope["score"]["resolved"] == "resolved"


def _parents() -> dict[int, int]:
    parents = {}
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                parents[int(pid)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def _busy_warm_servers() -> list[int]:
    """This process's warm processes that are running a test run (they have a child)."""
    parents = _parents()
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and any(a.endswith(b"warm_server.py") for a in argv) and int(pid) in parents.values():
            found.append(int(pid))
    return found


def test_a_warm_process_that_dies_during_a_run_is_not_the_candidates_failure_the_run_is_made_again_cold(tmp_path):
    slow = "import time\n\n\ndef test_slow():\n    time.sleep(2)\n"
    test_patch = make_patch(INTERVALS, {"tests/test_slow.py": slow}, tmp_path)
    instance = instance_of("intervals", test_patch=test_patch, FAIL_TO_PASS=["tests/test_slow.py::test_slow"],
                           PASS_TO_PASS=[])  # fmt: skip
    for _ in range(2):
        grade("intervals", b"", instance=instance)
    killed = []

    def kill_the_warm_process() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not killed:
            for pid in _busy_warm_servers():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_the_warm_process)
    killer.start()
    result = grade("intervals", b"", instance=instance)
    killer.join()
    assert killed, "no warm process was seen to kill"
    assert result.envelope["score"]["resolved"] == "resolved" and result.failure_class == "none"
    assert start(result)["start"] == "cold"
    assert "warm test processes are off for this interpreter" in start(result)["cold_because"]


def test_a_changed_environment_gets_a_new_warm_process(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    ours = next(p for p in sys.path if p.endswith("site-packages") and (Path(p) / "pytest").is_dir())
    (site / "ours.pth").write_text(ours + "\n", encoding="utf-8")
    python = str(venv / "bin" / "python")
    for _ in range(3):
        result = grade("intervals", patch_of("intervals", "gold"), python=python)
    assert start(result)["start"] == "warm" and result.envelope["score"]["resolved"] == "resolved"
    (before,) = [pid for interpreter, pid in warm.live() if interpreter == python]
    time.sleep(0.05)
    (site / "installed_later.py").write_text("", encoding="utf-8")  # as an install would change the folder
    result = grade("intervals", patch_of("intervals", "gold"), python=python)
    assert start(result)["start"] == "warm" and result.envelope["score"]["resolved"] == "resolved"
    (after,) = [pid for interpreter, pid in warm.live() if interpreter == python]
    assert after != before


def test_a_repository_that_provides_a_module_the_warm_process_imported_starts_cold_and_gets_the_cold_result(
        tmp_path, monkeypatch):  # fmt: skip
    # a cold start imports pytest with the copy first on the path: this repository's own pluggy (as
    # pluggy's or pytest's own repository would give), which fails here; a warm process imported the
    # environment's before any copy existed, so a run forked from it would not see the repository's
    repo = tmp_path / "repo"
    shutil.copytree(INTERVALS, repo)
    (repo / "pluggy").mkdir()
    (repo / "pluggy" / "__init__.py").write_text("raise ImportError('the repository pluggy')\n", encoding="utf-8")
    for _ in range(2):
        grade("intervals", patch_of("intervals", "gold"))
    result = grade("intervals", patch_of("intervals", "gold"), repo=repo)
    assert start(result)["start"] == "cold"
    assert start(result)["cold_because"] == "the copy provides modules the warm process imported: pluggy"
    assert "the repository pluggy" in result.envelope["runner"]["run"]["output_tail"]
    monkeypatch.setenv(warm.SWITCH, "off")
    cold = grade("intervals", patch_of("intervals", "gold"), repo=repo)
    assert (result.envelope["status"], result.failure_class) == (cold.envelope["status"], cold.failure_class)
    assert result.envelope["no_verdict_reason"] == cold.envelope["no_verdict_reason"] is not None


def test_clashes_names_module_files_and_folders_of_the_roots(tmp_path):
    for name in ("pytest", "notimported"):
        (tmp_path / name).mkdir()
    for name in ("foo.py", "bar.cpython-311-x86_64-linux-gnu.so", "README.md", "baz.txt"):
        (tmp_path / name).write_text("")
    modules = {"pytest", "foo", "bar", "README", "baz", "json"}
    assert warm.clashes(modules, [tmp_path, tmp_path / "missing"]) == ["bar", "foo", "pytest"]


def test_warm_processes_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(warm.SWITCH, "0")
    results = [grade("intervals", patch_of("intervals", "gold")) for _ in range(3)]
    assert [start(r)["start"] for r in results] == ["cold"] * 3
    assert warm.SWITCH in start(results[2])["cold_because"]
    assert warm.live() == []


def test_robustness_re_runs_start_cold_each_with_its_own_hash_seed(monkeypatch):
    for _ in range(2):
        grade("intervals", patch_of("intervals", "gold"))
    asked = []
    real = warm.acquire

    def acquire(python, env):
        found = real(python, env)
        asked.append(found[0] is not None)
        return found

    monkeypatch.setattr(warm, "acquire", acquire)
    result = grade("intervals", patch_of("intervals", "gold"), reruns=2)
    assert start(result)["start"] == "warm"
    reruns = result.envelope["scorecard_details"]["rerun_seeds"]
    assert len(reruns) == 2 and all(r["resolved"] for r in reruns), reruns
    assert asked == [True]  # the candidate's run only: neither re-run asked for a warm process
