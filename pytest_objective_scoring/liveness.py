"""Proof that a process is alive, or dead, by a lock the kernel drops when it dies.

A process that owns something shared (a claim on a job in a ledger, a workspace under the
temporary folder) holds an exclusive ``flock`` on a small *owner file* for as long as it lives.
The kernel releases that lock when the process ends, however it ends: a normal exit, an
exception, SIGTERM or SIGKILL. So whoever can take the lock knows the owner is gone, without a
timer, a heartbeat or a guess from a process id that may have been reused.

The owner file is made under a temporary name, locked, then renamed into place: there is no
moment at which it exists under its real name unlocked. Its descriptor is not inherited by child
processes (Python's default), so a test process left behind by a dead grader cannot keep the lock.
Over NFS, Linux emulates ``flock`` with the server's byte-range locks, so the proof holds on a
shared filesystem too.

This module never imports pytest.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Final, Literal

from . import nesting

__all__ = ["ALIVE", "DEAD", "GONE", "about", "hold", "owner", "pid_absent", "probe", "release"]

ALIVE: Final = "alive"
DEAD: Final = "dead"
GONE: Final = "gone"  # no owner file: never made, or removed after its owner was proven dead
State = Literal["alive", "dead", "gone"]


def owner() -> dict[str, Any]:
    """Who this process is, written into its owner files (for messages, not for the proof)."""
    return {"host": platform.node(), "pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def hold(path: Path, about: dict[str, Any] | None = None) -> int:
    """Make ``path`` the owner file of this process and lock it; returns the descriptor, to keep open
    for as long as the ownership lasts (:func:`release` ends it). ``about`` is written into it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}")
    descriptor = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(descriptor, json.dumps({**owner(), **(about or {})}, sort_keys=True).encode("utf-8"))
        os.replace(temporary, path)
    except BaseException:
        os.close(descriptor)
        temporary.unlink(missing_ok=True)
        raise
    return descriptor


def release(descriptor: int, path: Path | None = None) -> bool:
    """End an ownership: remove the owner file (when given) and drop the lock. Returns False when the
    file could not be removed (a folder made read-only, say): the lock is dropped all the same, so the
    file is then a dead owner's, removed by whoever next proves it dead."""
    removed = True
    if path is not None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            removed = False
    os.close(descriptor)
    return removed


def probe(path: Path) -> State:
    """``alive`` while the owner of ``path`` lives, ``dead`` once it has ended (the lock was free),
    ``gone`` when there is no owner file. Probing never disturbs a live owner."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return GONE
    except OSError:  # another user's (a shared temporary folder): nothing proves its owner ended
        return ALIVE
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return ALIVE
    finally:
        os.close(descriptor)
    return DEAD


def pid_absent(pid: int) -> bool:
    """Whether no process of this machine has the id ``pid`` now: the weaker proof, for what has no
    owner file. A reused id reads as present, which is the safe side (nothing is taken)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def about(path: Path) -> dict[str, Any]:
    """What an owner file says about its owner ({} when unreadable)."""
    try:
        data = nesting.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
