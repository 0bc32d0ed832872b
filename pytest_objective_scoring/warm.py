"""Warm test processes: the grader's side of :mod:`.warm_server` (``docs/untrusted-candidates.md``).

A test run's process costs about 0.33 CPU-s cold on a small suite, half of it the interpreter
starting and importing pytest. From the third run of an interpreter in one grader process on, runs
in the overlay sandbox are forked from a warm process of that interpreter which did that once
(:mod:`.warm_server`); the run itself is confined as a cold one is (:func:`.sandbox.confine`: the
same namespaces, PID 1, root, overlay and status pipe; every capability dropped where an ``exec``
would have dropped them; the boot's key, audit hook, path and pytest as before).

A run starts cold instead when its copy provides a top-level module the warm process imported (the
copy's own pytest or pluggy, a package an environment's start-up imported: a cold start would
import the copy's), when the environment changed since the warm process started (its folders'
times), or when warm processes are off for the interpreter (one failed to start or to run: the run
is made again cold, from scratch) or for the grader (``OBJECTIVE_SCORE_WARM=0``), and for every
robustness re-run in a shuffled order (``--reruns``: each keeps a hash seed of its own, so a test that
depends on set order can show it). The envelope says which (``runner.run.isolation.start``).

What a forked run shares with the others of its warm process: the interpreter's hash seed (string
hashes, as with ``PYTHONHASHSEED`` fixed). ``random`` is reseeded in every fork by Python itself.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import processes

__all__ = ["WarmFailure", "WarmProcess", "acquire", "clashes", "disable", "live", "release", "reset"]

SERVER = Path(__file__).with_name("warm_server.py")
SANDBOX = Path(__file__).with_name("sandbox.py")
COLD_RUNS = 2  # an interpreter's first runs in a grader process start cold: a warm process costs one cold start
MAX_IDLE = 8  # idle warm processes a grader keeps (about 30 MB each), over all its interpreters
START_TIMEOUT = 120.0
ANSWER_TIMEOUT = 30.0
SWITCH = "OBJECTIVE_SCORE_WARM"
MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")


GONE: Any = {"gone": True}  # what :meth:`WarmProcess._answer` gives once the warm process closed its answers' pipe


class WarmFailure(RuntimeError):
    """A warm process could not start or run a test run (never the candidate's doing): the run is
    made again, cold."""


def fingerprint(python: str) -> tuple[tuple[str, int], ...]:
    """The interpreter's folders (site-packages and the rest of its path) and their modification
    times: an installed or removed package changes one."""
    from .interpreters import interpreter_folders

    stamps = []
    for folder in sorted(set(interpreter_folders(python))):
        try:
            stamps.append((folder, os.stat(folder).st_mtime_ns))
        except OSError:
            continue
    return tuple(stamps)


def clashes(modules: Iterable[str], roots: Iterable[Path]) -> list[str]:
    """The top-level names among ``modules`` that a folder of ``roots`` provides (a module file or
    any folder, a namespace package's portion included)."""
    held = set(modules)
    found = set()
    for root in roots:
        try:
            entries = os.listdir(root)
        except OSError:
            continue
        for entry in entries:
            name = entry if os.path.isdir(os.path.join(root, entry)) else (
                entry.split(".", 1)[0] if entry.endswith(MODULE_SUFFIXES) else None)
            if name is not None and name in held:
                found.add(name)
    return sorted(found)


class WarmProcess:
    """One warm process of ``python`` (:mod:`.warm_server`), one run at a time."""

    def __init__(self, python: str, stamp: tuple[tuple[str, int], ...], env: Mapping[str, str]) -> None:
        self.python, self.stamp = python, stamp
        self.buffer = b""
        self.used = time.monotonic()  # when it was last given back (the least recently used idle one ends first)
        requests_in, self.requests = os.pipe()
        self.answers, answers_out = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [python, "-I", "-S", "-B", str(SERVER), str(SANDBOX), str(requests_in), str(answers_out)], cwd="/",
                env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(requests_in, answers_out), start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            os.close(self.requests)
            os.close(self.answers)
            raise WarmFailure(f"{python} could not start a warm process: {exc}") from None
        finally:
            os.close(requests_in)
            os.close(answers_out)
        hello = self._answer(START_TIMEOUT)
        if not isinstance(hello, dict) or not hello.get("ready"):
            self.close()
            why = hello.get("error") if isinstance(hello, dict) else None
            raise WarmFailure(f"{python} could not start a warm process: {why or 'it said nothing'}")
        self.modules = frozenset(str(m) for m in hello.get("modules", []))

    def _answer(self, timeout: float) -> Any:
        """The warm process's next message; None when it said nothing within ``timeout``, GONE when
        it is gone."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.answers], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            try:
                chunk = os.read(self.answers, 1 << 16)
            except OSError:
                return GONE
            if not chunk:
                return GONE
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line.decode("utf-8"))

    def alive(self) -> bool:
        return self.proc.poll() is None and self.requests >= 0

    def close(self) -> None:
        """End the warm process (closing its requests' pipe ends it, and a run it still holds)."""
        for fd in (self.requests, self.answers):
            if fd >= 0:
                os.close(fd)
        self.requests = self.answers = -1
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def run(self, request: Mapping[str, Any], *, timeout: float, log: Path, stdin_data: bytes, record_fd: int,
            status_fd: int, max_output: int | None, flood: dict[str, int]) -> tuple[int | None, bool, float, float]:  # fmt: skip
        """One test run forked from this process, bounded as :func:`.processes.run_process` bounds a
        cold one: ``(exit_code, timed_out, wall_seconds, cpu_seconds)``. Raises :class:`WarmFailure`
        when the warm process could not start it or vanished before it said how it ended."""
        started = time.perf_counter()
        key_reader, key_writer = os.pipe()
        try:
            os.write(key_writer, stdin_data)
        finally:
            os.close(key_writer)
        out_reader = None
        if max_output is None:
            out_writer = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        else:
            open(log, "wb").close()
            out_reader, out_writer = os.pipe()

        def start() -> int:  # the warm process opens the four through /proc while they are open here
            data = (json.dumps({**request, "fds": [key_reader, out_writer, record_fd, status_fd]}) + "\n").encode()
            try:
                while data:
                    data = data[os.write(self.requests, data):]
            except OSError as exc:
                raise WarmFailure(f"the warm process took no request: {exc}") from None
            answer = self._answer(ANSWER_TIMEOUT)
            if not isinstance(answer, dict) or not isinstance(answer.get("started"), int):
                raise WarmFailure(f"the warm process started no run: {answer!r}")
            return int(answer["started"])

        try:
            group = processes.start_group(start)
        except BaseException:
            if out_reader is not None:
                os.close(out_reader)
            self.close()
            raise
        finally:
            os.close(key_reader)
            os.close(out_writer)
        copier = None if out_reader is None else processes.copy_capped(group, out_reader, log, max_output or 0, flood)
        try:
            ended = self._answer(timeout)
            timed_out = ended is None
            if timed_out:
                processes.kill_group(group)
                ended = self._answer(ANSWER_TIMEOUT)
        except BaseException:  # Ctrl-C while waiting: the run must not outlive it
            processes.end_group(group)
            self.close()
            raise
        processes.end_group(group)
        if copier is not None:
            copier.join(10)
        if not isinstance(ended, dict) or not isinstance(ended.get("exited"), int):
            self.close()
            raise WarmFailure("the warm process ended before it said how the run ended")
        code = os.waitstatus_to_exitcode(ended["exited"])
        return (None if timed_out else code), timed_out, time.perf_counter() - started, float(ended.get("cpu") or 0.0)


_LOCK = threading.Lock()
_IDLE: dict[str, list[WarmProcess]] = {}
_RUNS: dict[str, int] = {}
_OFF: dict[str, str] = {}


def acquire(python: str, env: Mapping[str, str]) -> tuple[WarmProcess | None, str]:
    """A warm process of ``python`` for one run (give it back with :func:`release`), or None and why
    the run starts cold."""
    if os.environ.get(SWITCH, "").strip().lower() in ("0", "off", "no", "false"):
        return None, f"warm test processes are off ({SWITCH})"
    with _LOCK:
        _RUNS[python] = _RUNS.get(python, 0) + 1
        if python in _OFF:
            return None, _OFF[python]
        if _RUNS[python] <= COLD_RUNS:
            return None, f"one of the first {COLD_RUNS} runs of this interpreter in this process"
        stamp = fingerprint(python)
        pool = _IDLE.setdefault(python, [])
        while pool:
            found = pool.pop()
            if found.stamp == stamp and found.alive():
                return found, ""
            found.close()
    try:
        return WarmProcess(python, stamp, env), ""
    except WarmFailure as exc:
        disable(python, str(exc))
        return None, str(exc)


def release(process: WarmProcess) -> None:
    """Give back a warm process after a run (kept for the next run of its interpreter while alive;
    past :data:`MAX_IDLE` idle ones, the one used least recently ends)."""
    ended = []
    with _LOCK:
        if process.alive():
            _IDLE.setdefault(process.python, []).append(process)
            process.used = time.monotonic()
            idle = [p for pool in _IDLE.values() for p in pool]
            for oldest in sorted(idle, key=lambda p: p.used)[:max(0, len(idle) - MAX_IDLE)]:
                _IDLE[oldest.python].remove(oldest)
                ended.append(oldest)
        else:
            ended.append(process)
    for old in ended:
        old.close()


def disable(python: str, why: str) -> None:
    """No more warm starts for ``python`` in this process (a warm process failed: ``why``)."""
    with _LOCK:
        _OFF[python] = f"warm test processes are off for this interpreter: {why}"
        idle = _IDLE.pop(python, [])
    for process in idle:
        process.close()


def _forget() -> None:
    """In a forked grader: the parent's warm processes are the parent's (their pipes closed here only)."""
    for pool in _IDLE.values():
        for process in pool:
            for fd in (process.requests, process.answers):
                os.close(fd)
    _IDLE.clear()
    _RUNS.clear()


os.register_at_fork(after_in_child=_forget)


@atexit.register
def _close_all() -> None:
    with _LOCK:
        idle = [p for pool in _IDLE.values() for p in pool]
        _IDLE.clear()
    for process in idle:
        try:
            process.close()
        except Exception:
            pass


def live() -> list[tuple[str, int]]:
    """``(interpreter, pid)`` of every idle warm process of this grader."""
    with _LOCK:
        return [(python, p.proc.pid) for python, pool in _IDLE.items() for p in pool]


def reset() -> None:
    """End every idle warm process and forget every count and failure: the next runs of each
    interpreter start cold again (a new grading session; tests)."""
    _close_all()
    with _LOCK:
        _RUNS.clear()
        _OFF.clear()
