"""The warm runner (issue 16, point 1): HumanEval and MBPP samples forked from one confined process.

One runner per grading thread: a zygote confined once forks each sample's process into namespaces
of the sample's own, and a fresh checker is forked per sample. These tests run several samples
through one runner and check what the design must never give up: nothing of a sample reaches the
next one (module state, builtins, files, IPC, processes, the checks' own state), the sample holds
no capability and no key, its clock starts at its own process, and a runner that is lost costs no
verdict. ``tests/test_sample_harness.py`` runs its red-team samples through the same runner.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring.commands import samples as samples_commands
from pytest_objective_scoring.sample_harness import preloaded
from pytest_objective_scoring.samples import Outcome, Problem, Sample, SampleResult, read_record
from pytest_objective_scoring.testrun import isolation_prefix

from .test_sample_harness import confinable

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not confinable(), reason="the warm runner needs user and mount namespaces (Linux); "
                                "elsewhere every sample runs in a harness of its own")]  # fmt: skip


def pool_for(tmp_path: Path, problems: list[Problem], python: str = sys.executable) -> samples_commands.WarmPool:
    return samples_commands.WarmPool(python, isolation_prefix(network=False), tmp_path, preloaded(problems))


def run_all(pool: samples_commands.WarmPool, problem: Problem, texts: list[str], timeout: float = 10) -> list[Outcome]:
    """Each text as a sample of ``problem``, in order, through ``pool``: every one in the warm runner."""
    outcomes = []
    for index, text in enumerate(texts):
        result = pool.run(problem, Sample(problem.task_id, index, index + 1, "solution", text), timeout)
        assert result is not None, f"sample {index} was not run warm: {pool.settings()}"
        outcomes.append(result.outcome)
    return outcomes


# --- nothing of a sample reaches the next one -------------------------------------------------------

LEAKS = ["builtins.LEAK", "math.pi", "json.dumps", "sys.modules['leaked']", "/tmp", "/dev/shm", "HOME", "cwd",
         "message queue", "session keyring", "user keyring", "abstract socket", "other processes"]  # fmt: skip
KEYS = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(os.uname().machine)  # add_key, keyctl
PROBE = '''import builtins, ctypes, json, math, os, socket, sys

PLACES = ("/tmp", "/dev/shm", os.environ["HOME"], os.getcwd())
KEYS = %r  # add_key, keyctl (KEYCTL_SEARCH: 10; the session keyring: -3, the user keyring: -4)


def probe():
    found = [hasattr(builtins, "LEAK"), math.pi != 3.141592653589793, json.dumps([]) != "[]", "leaked" in sys.modules]
    found += [os.path.exists(os.path.join(place, "leak")) for place in PLACES]
    libc = ctypes.CDLL(None, use_errno=True)
    found.append(libc.msgget(0x0B5C0DE, 0) >= 0)
    found += [KEYS is not None and libc.syscall(KEYS[1], 10, ring, b"user", b"objective-leak", 0) >= 0 for ring in (-3, -4)]
''' % (KEYS,) + '''
    try:
        socket.socket(socket.AF_UNIX).connect("\\0objective-leak")
        found.append(True)
    except OSError:
        found.append(False)
    found.append(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) != [1, os.getpid()])
    return found
'''
POLLUTER = PROBE + '''

import gc, time

builtins.LEAK = True
math.pi = 3
json.dumps = lambda *args, **kwargs: "[]"
sys.modules["leaked"] = type(sys)("leaked")
for place in PLACES:
    with open(os.path.join(place, "leak"), "w") as handle:
        handle.write("x")
ctypes.CDLL(None, use_errno=True).msgget(0x0B5C0DE, 0o1600)
for ring in (-3, -4):
    if KEYS is not None:
        ctypes.CDLL(None, use_errno=True).syscall(KEYS[0], b"user", b"objective-leak", b"x", 1, ring)
if os.fork() == 0:  # a daemon that leaves its session and serves an abstract socket
    os.setsid()
    if os.fork() == 0:
        server = socket.socket(socket.AF_UNIX)
        server.bind("\\0objective-leak")
        server.listen(8)
        while True:
            server.accept()
    os._exit(0)
time.sleep(0.3)
for found in gc.get_objects():  # the checks, if they were in this process: they are not
    if type(found).__name__ == "function" and found.__name__ == "check":
        found.__code__ = (lambda candidate: None).__code__


def probe():
    return "polluted"
'''
STATEFUL = Problem(task_id="leak", style="humaneval", where="t:1", prompt="", entry_point="probe",
                   test="SEEN = []\n\n\ndef check(candidate):\n    SEEN.append(1)\n    assert len(SEEN) == 1, SEEN\n"
                   f"    assert candidate() == [False] * {len(LEAKS)}, dict(zip({LEAKS!r}, candidate()))\n")  # fmt: skip


@pytest.mark.slow
def test_nothing_of_a_sample_reaches_the_next_sample_of_its_problem(tmp_path: Path) -> None:
    """A sample that pollutes every place it can (its modules and builtins, /tmp, /dev/shm, HOME, its
    directory, a SysV message queue, a daemon serving an abstract socket, the checks if it could
    find them) runs first; the next sample of the same problem, in the same runner, sees none of it.
    The checks keep state of their own (SEEN): each sample's checker starts from the problem's code.
    The grader runs in a session keyring of its own here, as after a login (pam_keyinit): samples
    leave it for their own."""
    if KEYS is not None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).syscall(KEYS[1], 1, b"objective-grader-session")  # KEYCTL_JOIN_SESSION_KEYRING
    pool = pool_for(tmp_path, [STATEFUL])
    try:
        polluted, probed, wrong, probed_again = run_all(pool, STATEFUL, [POLLUTER, PROBE, "def probe():\n    return []\n", PROBE])
    finally:
        pool.close()
    assert polluted.status == "failed", polluted  # (its own json.dumps broke its replies: its process, its loss)
    assert probed.status == "passed", probed  # a leak would name itself: dict(zip(LEAKS, found))
    assert wrong.status == "failed" and probed_again.status == "passed", (wrong, probed_again)  # the checks were not replaced
    assert pool.settings() == {"samples": 4, "unavailable": None, "lost": 0, "runners": 1}  # one runner, all warm
    assert _processes_below(tmp_path) == []


@pytest.mark.slow
def test_a_sample_cannot_poison_the_problem_for_a_later_problem(tmp_path: Path) -> None:
    """Two problems in one runner: the second's checks run in a fresh checker, its sample in a fresh
    process, whatever the first problem's sample did."""
    other = Problem(task_id="other", style="mbpp", where="t:2", asserts=(f"assert probe() == [False] * {len(LEAKS)}",))
    pool = pool_for(tmp_path, [STATEFUL, other])
    try:
        (polluted,) = run_all(pool, STATEFUL, [POLLUTER])
        (probed,) = run_all(pool, other, [PROBE])
    finally:
        pool.close()
    assert (polluted.status, probed.status) == ("failed", "passed"), (polluted, probed)
    assert pool.settings()["runners"] == 1


# --- the sample process -------------------------------------------------------------------------------

POWERS = '''import ctypes, os


def powers():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    caps = [int(status[name].strip(), 16) for name in ("CapInh", "CapPrm", "CapEff", "CapAmb")]
    found = {"caps": caps, "no_new_privs": status["NoNewPrivs"].strip(), "uid": os.getuid(), "gid": os.getgid()}
    found["remount_usr"] = libc.mount(None, b"/usr", None, 32 | 4096, None) == 0  # MS_REMOUNT | MS_BIND, read-write
    found["mount_tmpfs"] = libc.mount(b"tmpfs", b"/usr", b"tmpfs", 0, None) == 0
    found["user_namespace"] = libc.unshare(0x10000000) == 0
    try:
        os.setuid(0)
        found["setuid_0"] = True
    except OSError:
        found["setuid_0"] = False
    try:
        os.mkdir("/usr/objective-probe")
        found["write_usr"] = True
    except OSError:
        found["write_usr"] = False
    try:
        os.chroot("/tmp")
        found["chroot"] = True
    except OSError:
        found["chroot"] = False
    return found
'''


@pytest.mark.slow
def test_the_sample_process_holds_no_capability_and_gains_none(tmp_path: Path) -> None:
    """A fork keeps its parent's capabilities unless they are dropped: the sample's process must have
    none (it could remount its root read-write, or escape its chroot, with them)."""
    expected = {"caps": [0, 0, 0, 0], "no_new_privs": "1", "uid": 1000, "gid": 1000, "remount_usr": False,
                "mount_tmpfs": False, "user_namespace": False, "setuid_0": False, "write_usr": False, "chroot": False}  # fmt: skip
    problem = Problem(task_id="caps", style="mbpp", where="t:1", asserts=(f"assert powers() == {expected!r}",))
    pool = pool_for(tmp_path, [problem])
    try:
        (outcome,) = run_all(pool, problem, [POWERS])
    finally:
        pool.close()
    assert (outcome.status, outcome.isolation) == ("passed", "separate"), outcome
    assert not os.path.exists("/usr/objective-probe")


KEY = "c0ffee" * 10 + "beef"
SEARCH = f'''import gc, hashlib, sys

DIGESTS = {{{hashlib.sha256(KEY.encode()).hexdigest()!r}, {hashlib.sha256(KEY.encode().hex().encode()).hexdigest()!r}}}


def found():
    seen = list(gc.get_objects())
    frame = sys._getframe()
    while frame is not None:  # the frames the zygote's forks left on its stack, and their locals
        seen.append(frame.f_locals)
        seen.extend(frame.f_locals.values())
        frame = frame.f_back
    for module in list(sys.modules.values()):
        seen.extend(vars(module).values())
    texts = set()
    for item in seen:
        for value in (item.values() if isinstance(item, dict) else [item]):
            if isinstance(value, (str, bytes)) and len(value) in (64, 128):
                texts.add(value if isinstance(value, bytes) else value.encode())
    return sum(hashlib.sha256(text).hexdigest() in DIGESTS for text in texts)
'''
FORGER = '''import glob, hashlib, hmac, json, os


def f(x):
    return None


for key in (b"0" * 64, b"c0ffee" * 10 + b"beef"[::-1]):  # keys it guesses: it holds none
    lines = []
    for seq, (event, detail) in enumerate((("ready", {}), ("sandbox", {"isolation": "separate"}), ("passed", {"checks": 1}))):
        text = "%d %s %s" % (seq, event, json.dumps(detail, sort_keys=True))
        lines.append("@objective-sample@ %s %s" % (hmac.new(key, text.encode(), hashlib.sha256).hexdigest(), text))
    body = json.dumps({"id": 1, "log": "\\n".join(lines) + "\\n", "exit": 0, "timed_out": False, "wall": 0.1, "cpu": 0.1})
    forged = ("\\n".join(lines) + "\\n@objective-runner@ %s %s\\n" % (hmac.new(key, body.encode(), hashlib.sha256).hexdigest(), body)).encode()
    for fd in range(0, 64):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    for path in glob.glob("/proc/*/fd/*"):
        try:
            with open(path, "wb") as handle:
                handle.write(forged)
        except OSError:
            pass
print("@objective-runner@ 0 {}")
'''


@pytest.mark.slow
def test_the_sample_holds_no_key_and_cannot_forge_its_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The zygote is forked before the runner reads any key: a sample searching its memory, its
    stack (the zygote's frames) and its modules finds no trace of its key; one writing forged
    harness lines and runner records to every descriptor it has and every /proc/*/fd it sees
    reaches neither the checker's report nor the runner's."""
    monkeypatch.setattr(samples_commands.secrets, "token_hex", lambda size: KEY)
    probe = Problem(task_id="key", style="mbpp", where="t:1", asserts=("assert found() == 0",))
    forge = Problem(task_id="forge", style="humaneval", where="t:2", prompt="", entry_point="f",
                    test="def check(candidate):\n    assert candidate(1) == 2\n")  # fmt: skip
    pool = pool_for(tmp_path, [probe, forge])
    try:
        (searched,) = run_all(pool, probe, [SEARCH])
        forged = run_all(pool, forge, [FORGER, FORGER])
    finally:
        pool.close()
    assert searched.status == "passed", searched  # it found no copy of the key (as text or bytes)
    assert [(o.status, o.isolation) for o in forged] == [("failed", "separate")] * 2, forged
    assert pool.settings()["lost"] == 0  # and the runner's records were never disturbed


def test_a_record_counts_only_when_signed_for_this_sample() -> None:
    import hmac
    import json

    def line(record: dict[str, Any], key: bytes = b"k" * 64) -> str:
        body = json.dumps(record, sort_keys=True)
        return f"@objective-runner@ {hmac.new(key, body.encode(), hashlib.sha256).hexdigest()} {body}"

    good = {"id": 3, "log": "", "exit": 0, "timed_out": False, "wall": 0.1, "cpu": 0.01}
    assert read_record(line(good), b"k" * 64, 3) == good
    assert read_record(line(good), b"k" * 64, 4) is None  # another sample's record
    assert read_record(line(good, b"x" * 64), b"k" * 64, 3) is None  # another key
    assert read_record(line({**good, "lost": "gone"}), b"k" * 64, 3) is None
    assert read_record(line({**good, "exit": True}), b"k" * 64, 3) is None
    assert read_record(line({k: v for k, v in good.items() if k != "log"}), b"k" * 64, 3) is None
    assert read_record('{"event": "lost"}', b"k" * 64, 3) is None


# --- time ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_timeout_measures_the_samples_own_run_not_the_start_up(tmp_path: Path) -> None:
    """An interpreter that takes 3 s to start (a loaded machine, a slow disk): with --timeout 2 a
    sample that runs 0.5 s passes, and one that never ends is killed 2 s after its process started,
    not after the runner's start-up."""
    slow = tmp_path / "slow-python"
    slow.write_text(f"#!/bin/sh\nsleep 3\nexec {sys.executable} \"$@\"\n", encoding="utf-8")
    slow.chmod(0o755)
    problem = Problem(task_id="t", style="humaneval", where="t:1", prompt="import time\n\n\ndef f(x):\n",
                      entry_point="f", test="def check(candidate):\n    assert candidate(1) == 2\n")  # fmt: skip
    pool = pool_for(tmp_path, [problem], python=str(slow))
    started = time.monotonic()
    try:
        first = pool.run(problem, Sample("t", 0, 1, "completion", "    time.sleep(0.5)\n    return x + 1\n"), 2.0)
        elapsed = time.monotonic() - started
        endless = pool.run(problem, Sample("t", 1, 2, "completion", "    while True:\n        pass\n"), 2.0)
    finally:
        pool.close()
    assert first is not None and endless is not None, pool.settings()
    assert elapsed > 3  # the start-up happened, and did not count
    assert first.outcome.status == "passed" and 0.5 <= first.wall_time < 2.0, first
    assert endless.outcome.status == "timed_out" and 2.0 <= endless.wall_time < 3.0, endless
    assert endless.outcome.detail == "killed after 2s"


@pytest.mark.slow
def test_a_killed_samples_cpu_time_is_counted(tmp_path: Path) -> None:
    """Its PID 1, told to stop, kills and reaps every process of the namespace: their CPU seconds
    reach the record (a SIGKILLed PID 1's would be lost). Its own signals do not stop it."""
    problem = Problem(task_id="s", style="humaneval", where="t:1", prompt="import os, signal\n\n\ndef f(x):\n",
                      entry_point="f", test="def check(candidate):\n    assert candidate(1) == 2\n")  # fmt: skip
    spin = "    os.kill(1, signal.SIGTERM)\n    while True:\n        pass\n"
    pool = pool_for(tmp_path, [problem])
    try:
        result = pool.run(problem, Sample("s", 0, 1, "completion", spin), 2.0)
    finally:
        pool.close()
    assert result is not None and result.outcome.status == "timed_out", result
    assert result.cpu > 0.1, result  # two seconds of spinning, on however busy a machine


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["split", "shared"])
def test_a_cold_run_times_the_sample_from_its_own_start_too(tmp_path: Path, isolation: str) -> None:
    """A harness of its own (BigCodeBench, LiveCodeBench, a shared rerun, no warm runner): its
    interpreter's 3 s start-up does not count either; the harness times the sample itself."""
    slow = tmp_path / "slow-python"
    slow.write_text(f"#!/bin/sh\nsleep 3\nexec {sys.executable} \"$@\"\n", encoding="utf-8")
    slow.chmod(0o755)
    problem = Problem(task_id="t", style="humaneval", where="t:1", prompt="import time\n\n\ndef f(x):\n",
                      entry_point="f", test="def check(candidate):\n    assert candidate(1) == 2\n")  # fmt: skip

    def cold(text: str) -> SampleResult:
        return samples_commands._run_once(problem, Sample("t", 0, 1, "completion", text), python=str(slow), timeout=2.0,
                                          root=tmp_path, prefix=isolation_prefix(network=False), isolation=isolation)

    with ThreadPoolExecutor(2) as pool:  # each mostly waits for its interpreter: side by side
        started = [pool.submit(cold, text) for text in ("    time.sleep(0.4)\n    return x + 1\n", "    while True:\n        pass\n")]
        passed, endless = (future.result() for future in started)
    assert passed.outcome.status == "passed" and passed.wall_time > 3, passed
    assert endless.outcome.status == "timed_out" and endless.outcome.detail == "killed after 2s", endless
    assert endless.wall_time < 3 + 2 + 5  # its own clock, not the grader's kill (STARTUP_GRACE later)


@pytest.mark.slow
def test_a_lost_runner_costs_no_verdict(tmp_path: Path) -> None:
    """The runner killed while a sample runs (out of memory, say): the sample runs again in a harness
    of its own, and the next sample gets a new runner."""
    problem = Problem(task_id="l", style="humaneval", where="t:1", prompt="import time\n\n\ndef f(x):\n",
                      entry_point="f", test="def check(candidate):\n    assert candidate(1) == 2\n")  # fmt: skip
    pool = pool_for(tmp_path, [problem])
    slow = "    time.sleep(1.5)\n    return x + 1\n"
    try:
        (warm,) = run_all(pool, problem, ["import time\n\n\ndef f(x):\n    return x + 1\n"])
        runner = pool.current
        assert runner is not None

        def kill() -> None:
            time.sleep(0.5)
            os.killpg(runner.proc.pid, signal.SIGKILL)

        killer = threading.Thread(target=kill)
        killer.start()
        lost = samples_commands.run_sample(problem, Sample("l", 1, 2, "completion", slow), python=sys.executable,
                                           timeout=10, root=tmp_path, prefix=isolation_prefix(network=False), pool=pool)
        killer.join()
        (after,) = run_all(pool, problem, ["import time\n\n\ndef f(x):\n    return x + 1\n"])
    finally:
        pool.close()
    assert warm.status == "passed" and after.status == "passed"
    assert isinstance(lost, SampleResult) and lost.outcome.status == "passed", lost  # run again, the cold way
    assert pool.settings() == {"samples": 2, "unavailable": None, "lost": 1, "runners": 2}


@pytest.mark.slow
def test_a_runner_that_cannot_start_sends_every_sample_the_cold_way(tmp_path: Path) -> None:
    broken = tmp_path / "python"
    broken.write_text(f"#!/bin/sh\nif [ \"$2\" = serve ]; then echo 'no namespaces here' >&2; exit 1; fi\n"
                      f"exec {sys.executable} \"$@\"\n", encoding="utf-8")  # fmt: skip
    broken.chmod(0o755)
    problem = Problem(task_id="c", style="mbpp", where="t:1", asserts=("assert f() == 1",))
    pool = pool_for(tmp_path, [problem], python=str(broken))
    try:
        assert pool.run(problem, Sample("c", 0, 1, "solution", "def f():\n    return 1\n"), 10) is None
        cold = samples_commands.run_sample(problem, Sample("c", 0, 1, "solution", "def f():\n    return 1\n"),
                                           python=str(broken), timeout=10, root=tmp_path, prefix=[], pool=pool)
    finally:
        pool.close()
    assert cold.outcome.status == "passed"
    settings = pool.settings()
    assert settings["samples"] == 0 and "no namespaces here" in str(settings["unavailable"]), settings


@pytest.mark.slow
def test_a_module_that_prints_when_imported_cannot_garble_the_runners_records(tmp_path: Path) -> None:
    """The runner imports the problems' standard modules once (``this`` prints the Zen of Python):
    whatever is printed goes to its stderr, never among its records."""
    problem = Problem(task_id="p", style="mbpp", where="t:1", asserts=("assert f() == 1",), imports=("import this",))
    assert preloaded([problem]) == ["this"]
    pool = pool_for(tmp_path, [problem])
    try:
        (outcome,) = run_all(pool, problem, ["def f():\n    return 1\n"])
    finally:
        pool.close()
    assert outcome.status == "passed"


def _processes_below(root: Path) -> list[str]:
    """Command lines of live processes that mention ``root`` (runners, zygotes, samples)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if str(root) in command:
            found.append(command)
    return found


@pytest.mark.slow
def test_closing_the_pool_ends_every_process_of_its_runners(tmp_path: Path) -> None:
    problem = Problem(task_id="e", style="mbpp", where="t:1", asserts=("assert f() == 1",))
    pool = pool_for(tmp_path, [problem])
    run_all(pool, problem, ["def f():\n    return 1\n"])
    assert _processes_below(tmp_path)  # the runner, its zygote and the next sample's process wait
    pool.close()
    time.sleep(0.2)
    assert _processes_below(tmp_path) == [] and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_runner_whose_grader_died_ends_itself(tmp_path: Path) -> None:
    """Its input ends when the grader dies, even during a sample: the runner ends the sample and
    itself, and (as PID 1 of its namespace, or through PR_SET_PDEATHSIG) everything it started."""
    script = f'''
import sys, time
sys.path.insert(0, {str(Path(samples_commands.__file__).parent.parent.parent)!r})
from pathlib import Path
from pytest_objective_scoring.commands import samples as samples_commands
from pytest_objective_scoring.samples import Problem, Sample
from pytest_objective_scoring.testrun import isolation_prefix
problem = Problem(task_id="d", style="mbpp", where="t:1", asserts=("assert f() == 1",))
pool = samples_commands.WarmPool(sys.executable, isolation_prefix(network=False), Path({str(tmp_path)!r}))
pool.run(problem, Sample("d", 0, 1, "solution", "def f():\\n    while True:\\n        pass\\n"), 60)
'''
    grader = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_processes_below(tmp_path)) < 5:
        time.sleep(0.1)
    assert len(_processes_below(tmp_path)) >= 5  # runner, zygote, the sample's keeper, init and process, its checker
    grader.kill()
    grader.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _processes_below(tmp_path):
        time.sleep(0.1)
    assert _processes_below(tmp_path) == []
