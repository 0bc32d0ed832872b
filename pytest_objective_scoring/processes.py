"""A command in a process group of its own, bounded: its time, its output, the grading being stopped.

Every run of the candidate's code (:mod:`.testrun`'s test runs and build command, Harbor's
verifier, the samples' harness) starts here. :func:`run_process` kills the whole group at the
timeout or past the output limit and measures the CPU time of the tree; :func:`kill_all` stops
every run of this process at once (an interrupted batch). The ``unshare`` prefixes say which
namespaces this machine gives a run where the sandbox (:mod:`.sandbox`) cannot be built.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "Interrupted",
    "allow_runs",
    "copy_capped",
    "end_group",
    "isolation_prefix",
    "kill_all",
    "kill_group",
    "network_isolation",
    "pid_isolation",
    "run_process",
    "start_group",
]

_NETWORK_PREFIX: list[str] | None = None
_PID_PREFIX: list[str] | None = None


def _probe(prefix: list[str]) -> bool:
    try:
        return subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def network_isolation() -> list[str]:
    """The command prefix that runs a process without network, or [] where unavailable."""
    global _NETWORK_PREFIX
    if _NETWORK_PREFIX is None:
        prefix = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--net", "--map-root-user"]
        _NETWORK_PREFIX = prefix if _probe(prefix) else []
    return _NETWORK_PREFIX


def pid_isolation() -> list[str]:
    """The prefix that runs a process as PID 1 of its own PID namespace, or [] where unavailable.

    When PID 1 of a namespace dies the kernel kills every process in it: a test run
    cannot leave a daemon behind, not even one that left the process group (``setsid``).
    """
    global _PID_PREFIX
    if _PID_PREFIX is None:
        prefix = ["unshare", "--pid", "--fork", "--mount-proc"]
        if os.geteuid() != 0:
            prefix.insert(1, "--map-root-user")
        _PID_PREFIX = prefix if _probe(prefix) else []
    return _PID_PREFIX


def isolation_prefix(network: bool) -> list[str]:
    """One ``unshare`` for every namespace this machine allows."""
    pid = pid_isolation()
    net = [] if network else network_isolation()
    if pid and net:
        return [*pid, "--net"]
    return pid or net


_LIVE_GROUPS: set[int] = set()
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


class Interrupted(BaseException):
    """The grading was stopped from outside (an interrupted batch): not a result, never recorded."""


def kill_all() -> int:
    """Stop every grading of this process: kill the test process groups still running and refuse
    to start new ones (a control run, a re-run) until :func:`allow_runs`. Returns how many were killed."""
    with _LIVE_LOCK:
        _STOPPING.set()
        groups = list(_LIVE_GROUPS)
    for group in groups:
        kill_group(group)
    return len(groups)


def allow_runs() -> None:
    """Let test runs start again after :func:`kill_all`."""
    _STOPPING.clear()


def kill_group(group: int) -> None:
    """SIGKILL to every process of ``group`` (gone already: nothing)."""
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def start_group(start: Callable[[], int]) -> int:
    """``start()`` a run that makes a process group of its own and returns its number, unless the
    grading is being stopped (:class:`Interrupted`); the group is killed by :func:`kill_all` until
    :func:`end_group`. For runs not started by :func:`run_process` (a warm test process's, :mod:`.warm`)."""
    with _LIVE_LOCK:
        if _STOPPING.is_set():
            raise Interrupted("the grading was stopped")
        group = start()
        _LIVE_GROUPS.add(group)
    return group


def end_group(group: int) -> None:
    """Kill what is left of ``group`` and forget it (:func:`start_group`)."""
    kill_group(group)
    with _LIVE_LOCK:
        _LIVE_GROUPS.discard(group)


def run_process(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float, log: Path,
    stdin_data: bytes = b"", pass_fds: Sequence[int] = (), max_output: int | None = None,
    flood: dict[str, int] | None = None,
) -> tuple[int | None, bool, float, float]:
    """Run ``command`` in its own process group; kill the group at the timeout.

    Returns ``(exit_code, timed_out, wall_seconds, cpu_seconds)``; CPU time is
    the rusage of the child and every descendant it waited for. With ``max_output`` the output
    reaches ``log`` through a pipe and a command that writes more is killed then and there:
    ``flood["bytes"]`` says how much it wrote (the grader's disk never holds more than the limit).
    """
    started = time.perf_counter()
    reader, writer = os.pipe()  # ``stdin_data`` (a key, say): written whole before the start, then end of file
    try:
        os.write(writer, stdin_data)
    finally:
        os.close(writer)
    try:
        with _LIVE_LOCK, open(log, "wb") as out:
            if _STOPPING.is_set():
                raise Interrupted("the grading was stopped")
            proc = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=dict(env),
                stdin=reader,
                stdout=out if max_output is None else subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )
            _LIVE_GROUPS.add(proc.pid)
    finally:
        os.close(reader)
    copier = None
    if max_output is not None:
        assert proc.stdout is not None
        fd = os.dup(proc.stdout.fileno())  # the copier's to close
        proc.stdout.close()
        copier = copy_capped(proc.pid, fd, log, max_output, flood if flood is not None else {})
    waited: dict[str, Any] = {}

    def wait() -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        waited["status"] = status
        waited["cpu"] = usage.ru_utime + usage.ru_stime

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    try:
        waiter.join(timeout)
    except BaseException:  # Ctrl-C while waiting (the main thread): the test run must not outlive it
        kill_group(proc.pid)
        deadline = time.monotonic() + 5  # the waiter reaps it (an interrupted join cannot be trusted to wait)
        while "status" not in waited and time.monotonic() < deadline:
            time.sleep(0.01)
        if "status" in waited:
            proc.returncode = os.waitstatus_to_exitcode(waited["status"])
        with _LIVE_LOCK:
            _LIVE_GROUPS.discard(proc.pid)
        raise
    timed_out = waiter.is_alive()
    if timed_out:
        kill_group(proc.pid)
        waiter.join()
    kill_group(proc.pid)  # anything the test run left behind in its group, even on success
    if copier is not None:
        copier.join(10)
    with _LIVE_LOCK:
        _LIVE_GROUPS.discard(proc.pid)
    code = os.waitstatus_to_exitcode(waited["status"])
    proc.returncode = code
    return (None if timed_out else code), timed_out, time.perf_counter() - started, float(waited["cpu"])


def copy_capped(group: int, fd: int, log: Path, limit: int, flood: dict[str, int]) -> threading.Thread:
    """A thread that copies the output read from ``fd`` to ``log`` up to ``limit`` bytes; past it,
    it kills ``group`` and says so in ``flood``. ``fd`` is closed at the end."""

    def copy() -> None:
        written = 0
        try:
            with open(log, "ab") as out:
                while True:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    if written + len(chunk) > limit:
                        out.write(chunk[: max(0, limit - written)])
                        flood["bytes"] = written + len(chunk)
                        kill_group(group)
                        break
                    out.write(chunk)
                    written += len(chunk)
        finally:
            os.close(fd)

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread
