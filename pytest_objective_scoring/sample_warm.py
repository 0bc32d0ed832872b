"""``harness.py serve``: the warm runner of one grading thread (script text; ``docs/functional.md``).

Part of the sample harness's script (:func:`.sample_harness.harness_source`). It confines a
key-less *zygote* once (the checker's :class:`Sandbox`, ``minimal-root``, built and not entered)
and, per HumanEval or MBPP sample, forks from it a fresh sample process in namespaces of its own
(a keeper, a PID 1, the sample process: no capability, every other descriptor closed) and from
itself a fresh checker that signs the verdict with the sample's own key; the grader speaks to it
in length-prefixed JSON messages, and it answers one signed record per sample. The namespaces, uid
maps, tmpfs and remounts it makes per sample are :mod:`.sandbox`'s primitives. Python 3.6 syntax,
standard library.
"""

from __future__ import annotations

from typing import Final

__all__ = ["WARM"]

WARM: Final = r'''

# --- the warm runner: HumanEval and MBPP at the cost of a few forks (docs/functional.md) ----------
#
# ``harness.py serve`` runs once per grading thread. Before it reads anything from the grader it
# forks the *zygote*, which confines itself once (a root of its own, user, mount and IPC namespaces)
# and then forks each sample's process, ahead of time and one at a time: the zygote never holds a
# key, a problem, a test or a sample. The runner compiles each problem's code once; for each sample
# it takes the next sample process from the zygote and forks a fresh *checker* from itself, which
# runs the problem's own code and the checks against that process and signs the verdict with the
# sample's own key. The sample's clock starts when its process is taken.

RUNNER_PREFIX = "@objective-runner@"
LOG_LIMIT = 1024 * 1024
END_GRACE = 0.5
HERE = []
SPAWNED = []


def _read_exact(fd, size):
    chunks = []
    while size > 0:
        data = os.read(fd, min(size, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        size -= len(data)
    return b"".join(chunks)


def _read_frame(fd):
    """One message of the grader's: a 4-byte big-endian length, then that much JSON; None at the end."""
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, int.from_bytes(head, "big"))
    return None if body is None else json.loads(body.decode("utf-8"))


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _exit_code(status):
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else None


def _die_with(parent):
    """Be killed when the parent ends, however it ends; end now if it already has (``parent`` None:
    the parent is outside this PID namespace and cannot be checked)."""
    ctypes, libc = _libc()
    if not die_with_parent(libc, parent):
        os._exit(0)


def _send(sock, message, fds=()):
    import array
    import socket
    data = json.dumps(message).encode("utf-8")
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.send(data)


def _receive(sock):
    """One message and the descriptors it carries; (None, []) when the other side is gone."""
    import array
    import socket
    fds = array.array("i")
    try:
        data, ancillary, _, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(8 * fds.itemsize))
    except OSError:
        return None, []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data.decode("utf-8")), list(fds)


def _close_fds(keep):
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass


def _failure(exc):
    return ("%s: %s" % (type(exc).__name__, exc)).replace("\n", " ")[:DETAIL_LIMIT]


def _zygote(sock, sandbox):
    """The sample processes' parent: confined once (:class:`Sandbox`, ``minimal-root``), then one
    fork per sample. It holds no key, no problem and no sample, and no sample process can see it.
    It makes each sample's process ahead: a *spare*, confined and idle, handed to the runner when it
    asks (``take``), so no sample waits for the forks. A sample ends (``end``) before the next spare
    is handed out: no two samples' code ever runs at once, and none sees the spare."""
    try:
        sandbox._minimal_root(enter=False)
    except BaseException as exc:
        _send(sock, {"error": _failure(exc)})
        return
    _ignore_signals()
    spare = _spawn(sandbox, sock)
    if spare[0] is None:  # this machine cannot give a sample namespaces of its own: samples run the cold way
        _send(sock, {"error": "cannot make a sample's process: %s" % spare[2]})
        return
    _send(sock, {"ok": True})
    live = None
    while True:
        message, fds = _receive(sock)
        for fd in fds:
            os.close(fd)
        if message is None:
            _end_sample(live, True)
            _end_sample(spare[0] if spare is not None else None, True)
            return
        if message.get("op") == "take":
            _end_sample(live, True)
            if spare is None or spare[0] is None:  # made while the previous sample ran, it may have failed for
                spare = _spawn(sandbox, sock)  # that sample's doing (no process left, say): made again, now
            (live, theirs, error), spare = spare, None
            if live is None:
                _send(sock, {"error": error})
                continue
            _send(sock, {"ok": True}, theirs)
            for fd in theirs:
                os.close(fd)
            spare = _spawn(sandbox, sock)  # the next sample's process, made while this one runs
        else:
            cpu = _end_sample(live, bool(message.get("kill")))
            live = None
            if message.get("reply", True):
                _send(sock, {"cpu": cpu})


def _spawn(sandbox, sock):
    """A fresh sample process, confined (namespaces of its own, no capability) and idle: (its keeper
    and the pipe that ends it, the checker's ends of its pipes, None), or (None, None, why not).
    Its stderr is a file in this process's private /tmp of the root (each sample process has a
    fresh one mounted over it), unlinked: only descriptors reach it."""
    ready_r, ready_w = os.pipe()
    control_r, control_w = os.pipe()
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    status_r, status_w = os.pipe()
    SPAWNED.append(1)
    path = "%s/tmp/stderr-%d" % (sandbox.root, len(SPAWNED))
    stderr_w = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    stderr_r = os.open(path, os.O_RDONLY)  # opened before the sample runs: never a path it could swap
    os.unlink(path)
    theirs, mine = [request_w, reply_r, status_r, stderr_r], [request_r, reply_w, status_w, stderr_w]
    zygote = os.getpid()
    _flush()
    keeper = os.fork()
    if keeper == 0:
        try:
            _die_with(zygote)
            os.close(sock.detach())
            _close_fds([0, 1, 2, ready_w, control_r] + mine)
            _stage_keeper(sandbox, mine, ready_w, control_r)
        except BaseException:
            pass
        os._exit(125)
    for fd in [ready_w, control_r] + mine:
        os.close(fd)
    said = []
    while True:
        data = os.read(ready_r, 4096)
        if not data:
            break
        said.append(data)
    os.close(ready_r)
    lines = b"".join(said).decode("utf-8", "replace").splitlines()
    if "ok" in lines:
        return (keeper, control_w), theirs, None
    _end_sample((keeper, control_w), True)
    for fd in theirs:
        os.close(fd)
    errors = [line[6:] for line in lines if line.startswith("error ")]
    return None, None, errors[-1] if errors else "the sample's process ended while it was being confined"


def _end_sample(live, kill):
    """End a sample's processes and reap them; their CPU seconds. Its keeper kills the sample's PID 1
    (the kernel then ends every process of its namespace) and reaps it; without ``kill`` the sample
    process gets END_GRACE seconds to end by itself first (it does as soon as its checker is gone)."""
    if live is None:
        return 0.0
    keeper, control = live
    try:
        os.write(control, b"k" if kill else b"g")
    except OSError:
        pass
    os.close(control)
    _, _, usage = os.wait4(keeper, 0)
    return usage.ru_utime + usage.ru_stime


def _stage_keeper(sandbox, fds, ready, control):
    """The sample's keeper (a child of the zygote): namespaces of the sample's own (user, PID, mount,
    IPC; uid 1000 mapped to the zygote's 1000) with a fresh, empty /tmp, /dev/shm and directory in
    the root; it forks the sample's PID 1, then waits for the zygote's word to end it."""
    import signal
    try:
        enter_namespaces(sandbox.libc, CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC,
                         "unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC)")
        map_ids(INSIDE_UID, INSIDE_UID, INSIDE_UID)
        limit_processes()  # counted for the sample's own user namespace: its PID 1, its process, its forks
        make_private(sandbox.libc)
        for place in ("/tmp", "/dev/shm", sandbox.writable):  # outermost first
            sandbox.tree.tmpfs(place, SCRATCH)
        covered = sandbox.kept_under(("/tmp", "/dev/shm"))  # an interpreter kept in /tmp: shown again, read-only
        if covered:
            sandbox.show(covered)
            for path in covered:
                if not os.path.islink(path):
                    remount_read_only(sandbox.libc, sandbox.root + path, [])
        init = os.fork()
    except BaseException as exc:
        _write_all(ready, ("error %s\n" % _failure(exc)).encode("utf-8", "replace"))
        os._exit(125)
    if init == 0:
        try:
            os.close(control)
            _stage_init(sandbox, fds, ready)
        except BaseException:
            pass
        os._exit(125)
    os.close(ready)
    for fd in fds:
        os.close(fd)
    word = os.read(control, 1)
    if _reaped(init, END_GRACE if word == b"g" else 0):  # it ended, and with it its whole namespace
        os._exit(0)
    os.kill(init, signal.SIGTERM)  # its own child, not reaped yet: never another process. It kills every
    if _reaped(init, 1.0):  # process of its namespace and reaps them, so their CPU time is counted
        os._exit(0)
    os.kill(init, signal.SIGKILL)
    os.waitpid(init, 0)  # returns once every process of the sample's namespace is gone
    os._exit(0)


def _reaped(pid, seconds):
    """Whether the child ``pid`` ended within ``seconds`` (it is reaped then)."""
    limit = time.monotonic() + seconds
    while True:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
        if time.monotonic() >= limit:
            return False
        time.sleep(0.001)


def _stage_init(sandbox, fds, ready):
    """PID 1 of the sample's namespace, with a /proc of that namespace: forks the sample process,
    reaps whatever it leaves, and when the sample process ends writes how on the status pipe, then
    kills and reaps every other process of the namespace. Told to stop by its keeper (SIGTERM from
    outside the namespace; the sample's own signals are not obeyed) it kills them all first. What it
    reaps, it counts: their CPU time is its children's."""
    import signal
    _die_with(None)
    request, reply, status, stderr = fds
    waited = {signal.SIGCHLD, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)  # taken with sigwaitinfo, which names the sender
    try:
        mount(sandbox.libc, "proc", sandbox.root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None,
              "mount -t proc /proc")
        sample = os.fork()
    except BaseException as exc:
        _write_all(ready, ("error %s\n" % _failure(exc)).encode("utf-8", "replace"))
        os._exit(125)
    if sample == 0:
        try:
            _stage_sample(sandbox, fds, ready)
        except BaseException:
            pass
        os._exit(125)
    for fd in (ready, request, reply, stderr):
        os.close(fd)
    ended = None
    while ended is None:
        got = signal.sigwaitinfo(waited)
        if got.si_signo == signal.SIGTERM and got.si_pid == 0:  # its keeper: a sender outside the namespace
            _kill_namespace()
        while ended is None:  # every child that ended (their SIGCHLDs merge)
            pid, code, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid == sample:
                ended = "%d %.6f\n" % (code, usage.ru_utime + usage.ru_stime)
    try:  # one line for its checker, one for the runner: each reads one
        for _ in range(2):
            _write_all(status, ended.encode("ascii"))
    except OSError:
        pass
    _kill_namespace()
    while True:
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            break
    os._exit(0)


def _kill_namespace():
    """From PID 1 of a namespace: kill every other process of it."""
    import signal
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def _drop_privileges(sandbox):
    """No capability left in any set, none to gain (no_new_privs); checked in /proc/self/status."""
    ctypes, libc = sandbox.ctypes, sandbox.libc

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    if libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:  # _LINUX_CAPABILITY_VERSION_3
        fail("capset")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_NO_NEW_PRIVS)")
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.split(":")[0] in ("CapInh", "CapPrm", "CapEff", "CapAmb") and int(line.split()[1], 16):
                raise OSError(1, "a capability is left: " + line.strip())


def _stage_sample(sandbox, fds, ready):
    """The sample process: its pipes become its stdin (the checker's requests), stdout (its replies)
    and stderr, it enters the root (chroot: it cannot make a user namespace of its own), every other
    descriptor is closed, it holds no capability and can gain none, and it starts like ``python -c``;
    then it runs the sample as a cold run's sample process does."""
    import signal
    request, reply, status, stderr = fds
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])  # its PID 1 blocks what it waits for: the sample blocks nothing
        os.close(status)
        for target, fd in ((0, request), (1, reply), (2, stderr)):
            os.dup2(fd, target)
        if sandbox.libc.chroot(sandbox.root.encode("utf-8", "surrogateescape")) != 0:
            fail("chroot " + sandbox.root)
        os.chdir(sandbox.writable)
        _close_fds((0, 1, 2, ready))
        _drop_privileges(sandbox)
        _default_signals()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ["HOME"] = os.environ["TMPDIR"] = sandbox.writable
        sys.argv[:] = ["-c"]
        if sys.path and HERE and sys.path[0] == HERE[0]:
            sys.path[0] = ""
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
        sandbox.libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own files in /proc/self, as any process's
        _write_all(ready, b"ok\n")
        os.close(ready)
    except BaseException as exc:
        try:
            _write_all(ready, ("error %s\n" % _failure(exc)).encode("utf-8", "replace"))
        except BaseException:
            pass
        os._exit(125)
    try:
        serve_sample()
    except BaseException:
        try:  # the sample may have broken what the traceback needs: its process, its loss
            traceback.print_exc()
            _flush()
        except BaseException:
            pass
        os._exit(70)
    os._exit(0)


class Forked(object):
    """The checker's end of a sample process the zygote forked: its request and reply pipes, and
    its exit status, which its PID 1 writes on the status pipe when it ends (for :class:`Channel`)."""

    def __init__(self, request, reply, status):
        self.stdin, self.stdout, self.status = os.fdopen(request, "wb"), os.fdopen(reply, "rb"), status

    def wait(self, timeout=None):
        ended = _status_line(self.status, timeout)
        if ended is None:
            raise OSError("the sample's process has not ended")
        return _exit_code(ended[0])


def _status_line(fd, timeout):
    """One line of a sample's PID 1 (``STATUS CPU``: how its process ended, its CPU seconds), read a
    byte at a time (the next line is someone else's); None when none comes within ``timeout``."""
    import select
    line = b""
    limit = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        remaining = limit - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        byte = os.read(fd, 1)
        if not byte:
            return None
        line += byte
    parts = line.decode("ascii", "replace").split()
    try:
        return int(parts[0]), float(parts[1])
    except (IndexError, ValueError):
        return None


def _record(key, record):
    """A line for the grader, signed with the sample's key."""
    body = json.dumps(record, sort_keys=True, ensure_ascii=True)
    mac = hmac.new(key, body.encode("ascii"), hashlib.sha256).hexdigest()
    return ("%s %s %s\n" % (RUNNER_PREFIX, mac, body)).encode("ascii")


def _checker(key, log, message, spec, compiled, mine, state):
    """One sample's checker: a fresh fork of the runner (nothing of a previous sample's), which runs
    the problem's own code, then the checks, and signs with the sample's own key on a pipe only the
    runner reads."""
    emit = _signer(key, log)
    emit("ready", {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "pid_namespace": state["pid_namespace"],
                   "runner": "warm"})
    kind, detail = _prepare_split(spec, compiled)
    if kind != "ok":
        emit(kind, detail)
        return
    emit("sandbox", state["sandbox"])
    namespace, asserts, sources, wanted = detail
    solution = message["solution"]
    sources = dict(sources)
    sources["solution.py"] = solution
    request, reply, status, stderr = mine
    channel = Channel(Forked(request, reply, status), stderr)
    _split_checks(dict(spec, solution=solution), emit, channel, namespace, wanted, asserts, sources)
    _flush()


def _sample(message, spec, compiled, frames, zygote, state):
    """Run one sample: its process from the zygote, its checker forked from here, both ended by its
    deadline (``timeout`` seconds from the moment its process is taken); the record for the grader."""
    import select
    import signal
    key = str(message["key"]).encode("ascii")
    timeout = float(message["timeout"])
    log_r, log_w = os.pipe()
    started = time.monotonic()
    mine = None
    if compiled[0] == "ok":
        try:
            _send(zygote, {"op": "take"})
            answer, mine = _receive(zygote)
        except OSError:
            answer, mine = None, []
        if answer is None or not answer.get("ok") or len(mine) != 4:  # the runner's failure, never the sample's:
            for fd in mine + [log_r, log_w]:  # the grader runs it again the cold way
                os.close(fd)
            why = "the sample processes' parent is gone" if answer is None else str(answer.get("error"))[:DETAIL_LIMIT]
            return _record(key, {"id": message["id"], "lost": why})
    parent = os.getpid()
    _flush()
    checker = os.fork()
    if checker == 0:
        try:
            _die_with(parent)
            for fd in (log_r, frames, state["report"], zygote.detach()):
                os.close(fd)
            _checker(key, log_w, message, spec, compiled, mine, state)
        except BaseException:
            traceback.print_exc()
            _flush()
            os._exit(70)
        os._exit(0)
    os.close(log_w)
    status = os.dup(mine[2]) if mine is not None else None  # the sample process's end, and its CPU time
    for fd in mine or ():
        os.close(fd)
    chunks, size, timed_out, gone = [], 0, False, False
    deadline = started + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready = select.select([log_r, frames], [], [], remaining)[0]
        if frames in ready:  # the grader sends nothing while a sample runs: it is gone
            gone = True
            break
        if log_r in ready:
            data = os.read(log_r, 1 << 16)
            if not data:
                break
            chunks.append(data[:max(0, LOG_LIMIT - size)])
            size += len(data)
    if timed_out or gone:
        os.kill(checker, signal.SIGKILL)
    _, code, usage = os.wait4(checker, 0)
    wall = time.monotonic() - started
    while True:  # what it wrote before it ended (nobody else holds the pipe)
        data = os.read(log_r, 1 << 16)
        if not data:
            break
        chunks.append(data[:max(0, LOG_LIMIT - size)])
        size += len(data)
    os.close(log_r)
    cpu = usage.ru_utime + usage.ru_stime
    if mine is not None and (timed_out or gone):  # killed, and reaped before the record is written
        try:
            _send(zygote, {"op": "end", "kill": True})
            answer, _ = _receive(zygote)
        except OSError:
            answer = None
        if answer is None:
            return _record(key, {"id": message["id"], "lost": "the sample processes' parent is gone"})
        cpu += float(answer.get("cpu", 0.0))
    elif mine is not None:  # its checker is gone, so it ends by itself (else it is killed after END_GRACE); the
        try:  # zygote ends it before it hands out the next sample's process, which the record need not wait for
            _send(zygote, {"op": "end", "kill": False, "reply": False})
        except OSError:
            return _record(key, {"id": message["id"], "lost": "the sample processes' parent is gone"})
        ended = _status_line(status, END_GRACE)
        cpu += ended[1] if ended is not None else 0.0
    if status is not None:
        os.close(status)
    if gone:
        os._exit(0)
    text = b"".join(chunks).decode("utf-8", "replace")
    text = text[:text.rfind("\n") + 1]  # a line cut short by the kill is not a line
    return _record(key, {"id": message["id"], "log": text, "exit": None if timed_out else _exit_code(code),
                         "timed_out": timed_out, "wall": wall, "cpu": cpu})


def serve(here):
    """``harness.py serve``: the warm runner. The grader's messages arrive on stdin (length-prefixed
    JSON); one line per sample goes back on stdout; whatever else is printed goes to stderr."""
    import importlib
    import socket
    HERE[:] = [here]
    frames, report = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # whatever is printed from here on goes to stderr: stdout carries records only
    _limit()
    for name in sys.argv[2:]:  # standard modules the problems' code imports: once here, not per sample
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    _flush()
    place, root = os.path.join(here, "sample"), os.path.join(here, "root")
    for directory in (place, root):
        os.mkdir(directory)
    os.chmod(place, 0o777)
    sandbox = Sandbox(place, root)  # this process is undumpable from here on
    _ignore_signals()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    _flush()
    zygote = os.fork()
    if zygote == 0:  # before any message of the grader's is read: no key, no problem, ever
        try:
            ours.close()
            os.close(frames)
            os.close(report)
            _zygote(theirs, sandbox)
        except BaseException:
            traceback.print_exc()
            _flush()
        os._exit(0)
    theirs.close()
    answer, _ = _receive(ours)
    hello = {"event": "hello", "python": "%d.%d.%d" % tuple(sys.version_info[:3]), "pid_namespace": os.getpid() == 1}
    if answer is not None and answer.get("ok"):
        sandbox.mode = "minimal-root"
        hello.update(ok=True, sandbox=sandbox.report())
    else:
        hello.update(ok=False, detail=(answer or {}).get("error") or "the sample processes' parent ended while confining itself")
    _write_all(report, (json.dumps(hello, sort_keys=True) + "\n").encode("ascii"))
    if not hello["ok"]:
        return
    state = {"runner": os.getpid(), "report": report, "sandbox": hello["sandbox"], "pid_namespace": hello["pid_namespace"]}
    spec, compiled = None, None
    while True:
        message = _read_frame(frames)
        if message is None:  # the grader is done (or gone): the zygote ends its processes, then itself
            ours.close()
            os.waitpid(zygote, 0)
            return
        op = message.get("op")
        if op == "problem":  # compiled once here; run by each sample's checker, a fresh fork
            spec, compiled = message, _compile_split(message)
        elif op == "sample" and spec is not None:
            _write_all(report, _sample(message, spec, compiled, frames, ours, state))
        elif op == "sample":
            lost = {"event": "lost", "id": message.get("id"), "detail": "no problem is loaded"}
            _write_all(report, (json.dumps(lost, sort_keys=True) + "\n").encode("ascii"))



'''
