"""The warm test process: one interpreter of an environment that has run ``site`` and imported pytest
once, and forks every later test run of that interpreter from there (:mod:`.warm`, the grader's side).

Run by the environment's interpreter as ``python -I -S -B warm_server.py SANDBOX_PY REQUESTS ANSWERS``
(the descriptors of two pipes to the grader),
from ``/``, with no ``PYTHON*`` variable read. In this order it:

1. makes itself not dumpable (no process of its user can trace it or read its memory) and loads the
   sandbox's launcher (:mod:`.sandbox`, by path: the environment cannot import the package);
2. runs ``site`` and imports pytest, as the test process's boot (:mod:`.boot`) does before anything
   of the copy can be imported: the environment's code only, the copy nowhere on the path (the
   grader's probes of the interpreter run the same code outside any sandbox already);
3. says which top-level modules it holds (a copy that provides one of them takes the cold path: in a
   cold start its version would be the one imported) and serves: per request, it opens the
   descriptors the request names through ``/proc/GRADER/fd`` (the key's pipe, the output, the
   record, the sandbox's status pipe: the grader holds them until the run started) and forks
   a launcher (a process group of its own) that does what ``sandbox.py`` does for a cold start: the
   namespaces, PID 1, the root, then instead of an ``exec`` the test process itself, every
   capability dropped, which runs the boot script as ``__main__``.

One run at a time. It never holds a key or reads a record; a run cannot reach it (another PID
namespace, the channel's pipes closed in the run, not dumpable). It ends when the grader closes
its end of the requests' pipe (the grader ending, however it ends), killing a run still going.
Stdlib only, Python 3.7 syntax.
"""

import os
import sys


class Channel(object):
    """Newline-delimited JSON over two pipes: requests in, answers out (no socket: the grader's
    rule 1 admits no network module, and nothing here needs one)."""

    def __init__(self, requests, answers):
        # type: (int, int) -> None
        self.requests, self.answers, self.buffer = requests, answers, b""

    def send(self, message):
        # type: (dict) -> None
        import json

        data = (json.dumps(message) + "\n").encode("utf-8")
        while data:
            data = data[os.write(self.answers, data):]

    def receive(self):
        # type: () -> object
        """The next request; None when the grader is gone (end of file)."""
        import json

        while b"\n" not in self.buffer:
            chunk = os.read(self.requests, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line.decode("utf-8"))


def _descriptors(grader, numbers):
    # type: (int, list) -> list
    """The grader's descriptors ``numbers`` (the key's pipe to read, the output, the record and the
    status pipe to write), opened through /proc: the same pipes and files, new descriptions."""
    import fcntl

    # the key's pipe has no writer left: opened without waiting for one (a pipe opens as a FIFO does)
    flags = (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_APPEND, os.O_WRONLY | os.O_APPEND, os.O_WRONLY)
    opened = []
    try:
        for number, flag in zip(numbers, flags):
            fd = os.open("/proc/%d/fd/%d" % (grader, int(number)), flag)
            opened.append(fd)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise
    return opened


def _launcher(request, fds, sandbox):
    # type: (dict, list, dict) -> None
    """The forked launcher (a process group of its own): the run's descriptors at 0 to 4, every other
    closed, the run's environment, then the sandbox (:func:`.sandbox.confine`). Its exit code is the
    run's; the test process forked inside it raises through here (never caught: it ends as an
    interpreter ends)."""
    import fcntl

    os.setpgid(0, 0)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]  # closed below with the rest
    for target, fd in zip((0, 1, 2, 3, 4), (high[0], high[1], high[1], high[2], high[3])):
        os.dup2(fd, target)  # the copies at 0-4 are inheritable
    os.closerange(5, 1 << 16)  # the channel's pipes among them
    os.environ.clear()
    os.environ.update(request["env"])
    spec = dict(request["spec"], status_fd=4, grader=os.getppid())
    boot, argv = request["boot"], list(request["argv"])

    def start():
        # type: () -> None
        import runpy

        _stdio()
        if hasattr(sys, "orig_argv"):  # what a cold start's interpreter would say it was started with
            sys.orig_argv = list(request.get("orig_argv") or sys.orig_argv)
        sys.argv = [boot] + argv
        runpy.run_path(boot, run_name="__main__")

    code = sandbox["confine"](spec, start)
    os._exit(code)


def _stdio():
    # type: () -> None
    """sys.stdin, sys.stdout and sys.stderr made again over descriptors 0, 1 and 2 as an interpreter
    makes them at start-up (the warm process's were made over /dev/null: seekable, never written)."""
    import io

    for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
        old = getattr(sys, name)
        buffered = io.open(fd, mode, -1, closefd=False)
        stream = io.TextIOWrapper(buffered, encoding=old.encoding, errors=old.errors, newline="\n",
                                  line_buffering=buffered.isatty() or fd == 2)
        stream.mode = mode[0]  # type: ignore[misc]
        setattr(sys, name, stream)
        setattr(sys, "__%s__" % name, stream)


def _watch(channel, child):
    # type: (Channel, int) -> tuple
    """Wait for the launcher: ``(raw wait status, CPU seconds)``, or (None, None) when the grader is
    gone (the run is killed then)."""
    import select
    import signal

    while True:
        pid, status, usage = os.wait4(child, os.WNOHANG)
        if pid == child:
            return status, usage.ru_utime + usage.ru_stime
        ready, _, _ = select.select([channel.requests], [], [], 0.01)
        if ready:  # the grader sends nothing during a run: only its end makes the pipe readable
            try:
                os.killpg(child, signal.SIGKILL)
            except OSError:
                pass
            os.wait4(child, 0)
            return None, None


def serve(channel, sandbox, grader):
    # type: (Channel, dict, int) -> int
    while True:
        request = channel.receive()
        if request is None:
            return 0
        try:
            if not isinstance(request, dict) or len(request.get("fds", ())) != 4:
                raise ValueError("a request names its four descriptors")
            fds = _descriptors(grader, request["fds"])
        except (OSError, ValueError) as exc:
            channel.send({"error": ("%s: %s" % (type(exc).__name__, exc))[:2000]})
            continue
        child = os.fork()
        if child == 0:
            _launcher(request, fds, sandbox)
        try:
            os.setpgid(child, child)  # also here: the grader may kill the group before the child ran
        except OSError:
            pass
        for fd in fds:
            os.close(fd)
        channel.send({"started": child})
        status, cpu = _watch(channel, child)
        if status is None:
            return 0
        channel.send({"exited": status, "cpu": cpu})


def main():
    # type: () -> int
    import ctypes

    channel = Channel(int(sys.argv[2]), int(sys.argv[3]))
    grader = os.getppid()
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        import runpy

        sandbox = runpy.run_path(sys.argv[1], run_name="_objective_scoring_sandbox")
        import hashlib  # noqa: F401  (what the boot imports before site)
        import hmac  # noqa: F401
        import json  # noqa: F401
        import site

        site.main()
        import pytest  # noqa: F401

        sys._objective_scoring_warm = True  # type: ignore[attr-defined]  # the boot does not run site again
        modules = sorted(set(name.split(".", 1)[0] for name in list(sys.modules)))
    except BaseException as exc:
        channel.send({"error": ("%s: %s" % (type(exc).__name__, exc))[:2000]})
        return 1
    channel.send({"ready": True, "modules": modules, "pid": os.getpid()})
    return serve(channel, sandbox, grader)


if __name__ == "__main__":
    sys.exit(main())
