"""``harness.py``'s sandbox: how a process that runs a sample's code starts (script text).

Part of the sample harness's script (:func:`.sample_harness.harness_source`): the checker's
:class:`Sandbox` (its four modes, the first that works on the machine: ``minimal-root``,
``read-only``, ``user-namespace``, ``same-user``), what a sample's own root holds (``_kept``), and
the signals and keyring of the processes around a sample. The mechanisms themselves (the
namespaces, the uid and gid maps, the root and its read-only remounts, PR_SET_PDEATHSIG) are the
runner's sandbox's (:mod:`.sandbox`, whose :func:`.sandbox.shared_source` the script embeds): one
copy for both. What is the samples' own stays here: which folders a sample sees, its small tmpfs,
the modes and what each guarantees (``docs/functional.md``). Python 3.6 syntax, standard library.

Below the script, the grader's side of the same confinement: the pids cgroup each run is put in
where the machine allows one (:class:`ProcessLimits`), which bounds a sample's processes where the
script's RLIMIT_NPROC cannot (a grader running as root).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from typing import Any, Final

__all__ = ["SANDBOX", "ProcessLimit", "ProcessLimits", "pids_folders"]

SANDBOX: Final = r'''

def _libc():
    try:
        import ctypes
        return ctypes, ctypes.CDLL(None, use_errno=True)
    except BaseException:
        return None, None


SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
SCRATCH = "mode=1777,size=64m"  # a sample's own directory, /tmp and /dev/shm: small tmpfs of its own


class Sandbox(object):
    """How every process that runs the sample's code starts, and what that guarantees.

    This process makes itself undumpable: a process without a capability over it can then
    neither read its memory (the key) nor open its file descriptors (the report) nor trace it.
    Each sample process gets, where Linux allows (the first that works, in this order):

    * ``minimal-root``: its own user, mount and IPC namespaces, mapped to an unprivileged uid,
      and a root of its own that holds only the system directories, the interpreter, its
      libraries, a few /etc and /dev files, /proc and its own directory, all read-only but
      that directory. It cannot read the problems, the answers, the grader or other runs, nor
      change anything a later run reads. This is the only hostile-resistant mode;
    * ``read-only``: the same namespaces, every file system read-only but its own directory,
      everything visible;
    * ``user-namespace``: only a user namespace of its own;
    * ``same-user``: none.

    The namespaces, the uid map, the root and its read-only remounts are the runner's sandbox's
    own code (``sandbox.py``: :func:`enter_namespaces`, :func:`map_ids`, :class:`Root`, ...).
    """

    SHOWN = ("/proc", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")  # and SYSTEM's folders
    ETC = ("passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "services",
           "protocols", "localtime", "timezone", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "pki",
           "ca-certificates", "alternatives", "mime.types", "os-release")

    def __init__(self, writable=None, root=None, cwd=None):
        ctypes, libc = _libc()
        self.ctypes, self.libc, self.writable, self.root = ctypes, libc, writable, root
        self.cwd = cwd or writable
        self.ids = (os.geteuid(), os.getegid())
        try:
            self.undumpable = libc is not None and libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
        except BaseException:
            self.undumpable = False
        self.unshare = getattr(libc, "unshare", None) if libc is not None else None
        if self.unshare is not None:
            try:
                mount_types(libc)
            except BaseException:
                pass
        self.keep = _kept([self.cwd] if self.cwd != writable else []) if root is not None and writable else []
        self.tree = Root(root, libc) if root is not None else None  # the root being built (minimal-root)
        self.mode = None

    def _user_namespace(self):
        _default_signals()
        enter_namespaces(self.libc, CLONE_NEWUSER, "unshare(CLONE_NEWUSER)")
        limit_processes()

    def _namespaces(self):
        _default_signals()
        enter_namespaces(self.libc, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC,
                         "unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)")
        limit_processes()  # its own user namespace: the limit counts its processes alone
        make_private(self.libc)

    def _read_only(self):
        """In the child, before it runs anything: its own namespaces, every file system read-only
        but its own directory (checked: else it raises)."""
        self._namespaces()
        keep = self.writable
        if keep is not None:
            mount(self.libc, keep, keep, None, MS_BIND, None, "mount --bind " + keep)
        remount_read_only(self.libc, "/", [keep])
        if self.cwd is not None:
            os.chdir(self.cwd)

    def _minimal_root(self, enter=True):
        """In the child, before it runs anything: its own namespaces, an unprivileged uid, and a
        root holding only what :func:`_kept` lists (checked: else it raises). Without ``enter`` the
        root is built but not entered (the warm runner's zygote: each sample process enters it)."""
        if self.root is None or self.writable is None:
            raise OSError(22, "no directory for a root of its own")
        self._namespaces()
        uid, gid = self.ids
        map_ids(INSIDE_UID, uid, gid)
        tree = self.tree
        tree.create("mode=0755,size=1m")
        for place in ("/tmp", "/dev/shm"):  # small, private, gone with it (outermost first)
            tree.tmpfs(place, SCRATCH)
        tree.dev_links()
        self.show(self.keep)
        tree.tmpfs(self.writable, SCRATCH)  # its own directory, last: nothing is mounted over it
        tree.read_only()
        if not enter:
            return
        if self.libc.chroot(self.root.encode()) != 0:
            fail("chroot " + self.root)
        os.chdir(self.cwd)

    def show(self, paths):
        """Show each of ``paths`` (what :func:`_kept` lists) at the same place in the root."""
        for path in paths:
            self.tree.bind(path, path, what="mount --rbind " + path)

    def kept_under(self, places):
        """The kept paths a fresh scratch at one of ``places`` covers (an interpreter in /tmp, say)."""
        return [path for path in self.keep if any(inside(path, place) for place in places)]

    def popen(self, command, **options):
        """Start a process that runs the sample's code, as confined as this machine allows: the
        first process decides how; every later one is confined the same way, or is not started."""
        import subprocess
        _ignore_signals()
        modes = (("minimal-root", self._minimal_root), ("read-only", self._read_only),
                 ("user-namespace", self._user_namespace), ("same-user", _default_signals))
        for mode, confine in modes:
            if self.mode not in (None, mode) or (self.unshare is None and mode != "same-user"):
                continue
            try:
                proc = subprocess.Popen(command, preexec_fn=confine, **options)
            except subprocess.SubprocessError:
                if self.mode is not None:
                    raise OSError("the sample's process could not be confined as the first one was (%s)" % mode)
                continue
            self.mode = mode
            return proc
        raise OSError("no way to start the sample's process")

    def report(self):
        resistant = bool(self.undumpable and self.mode == "minimal-root")
        if resistant:
            why = ("the checks ran in a process the sample's code never ran in and could not reach; the sample saw "
                   "only the interpreter, the system and its own directory, and could change nothing else")
        elif not self.undumpable:
            why = "this platform cannot make the checker undumpable: the sample could read its memory"
        elif self.mode == "read-only":
            why = ("the sample could not be given a root of its own: it could read every file the grader can (the "
                   "problems, their answers)")
        elif self.mode == "user-namespace":
            why = ("the file systems could not be made read-only for the sample: it could change files that a later "
                   "run reads (the interpreter, its libraries)")
        else:
            why = ("no user namespace for the sample's process: it kept the grader's privileges over the checker "
                   "and its files")
        return {"isolation": "separate" if resistant else "separate-unconfined", "sample_process": self.mode,
                "checker_undumpable": bool(self.undumpable), "detail": why}


def _kept(extra):
    """What a sample's own root holds, read-only, outermost first: the system directories, a few
    /etc files, /dev's harmless devices, /proc, the interpreter (its prefixes and executable's
    folders), the site-packages it imports from, and ``extra`` (a stdin program's folder). Never
    the grader's package or files, the problems, another run's directory, or the rest of /etc and
    of the home folders. (Its own directory, /tmp and /dev/shm are small tmpfs of its own.)"""
    candidates = list(SYSTEM) + list(Sandbox.SHOWN) + ["/etc/" + name for name in Sandbox.ETC]
    for path in (sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
                 os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))):
        candidates.append(path)
    candidates.extend(entry for entry in sys.path if entry.rstrip("/").endswith("-packages"))
    return nest(candidates) + list(extra)


def _ignore_signals():
    """The checker ignores the signals its sample could send it (it dies only by the grader's SIGKILL)."""
    import signal
    for name in SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


def _default_signals():
    """In the sample's process, before exec: the signals the checker ignores are back to their
    defaults, it is killed when the checker ends, however the checker ends (PR_SET_PDEATHSIG), and
    it has a session keyring of its own (:func:`_own_keyring`)."""
    import signal
    for name in SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        ctypes, libc = _libc()
        if libc is not None:
            die_with_parent(libc)
            _own_keyring(libc)
    except BaseException:
        pass


KEYCTL = {"x86_64": 250, "amd64": 250, "aarch64": 219, "arm64": 219, "i686": 288, "i386": 288, "armv7l": 311,
          "ppc64le": 271, "s390x": 280, "riscv64": 219}


def _own_keyring(libc):
    """Leave the grader's session keyring for a new, empty one (keyctl KEYCTL_JOIN_SESSION_KEYRING):
    keys a sample adds there die with it, and no later sample finds them. (Its user keyring is its
    own user namespace's.) Where the system call's number is not known, the grader's is kept."""
    number = KEYCTL.get(os.uname()[4])
    if number is not None:
        libc.syscall(number, 1, None)


'''


# --- the grader's side: a pids cgroup around each sample's run ---------------------------------------
#
# RLIMIT_NPROC (``limit_processes`` above) bounds a sample's processes only when the user running it is
# not root outside its namespaces: the kernel exempts root. A grader running as root puts each run
# (a cold harness, a warm runner) in a cgroup of its own whose ``pids.max`` is the same limit, where the
# machine lets it make one: cgroup v2 when its own cgroup delegates the pids controller, else the
# pids hierarchy of cgroup v1. The run's first process joins it before it starts anything (a ``sh``
# in front of its command writes itself into ``cgroup.procs``, then ``exec``s it): every process and
# thread of the run is counted, and a fork past the limit fails with EAGAIN, the sample's failure.

CGROUP_PREFIX: Final = "objective-sample-"
SHELL: Final = "/bin/sh"
JOIN: Final = 'echo 0 > "$0" && exec "$@"'  # $0: the cgroup's cgroup.procs; "$@": the run's command


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """``(mount point, root within its hierarchy, file system type, super options)`` of every cgroup mount."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                head, _, tail = line.partition(" - ")
                fields, rest = head.split(), tail.split()
                if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
                    found.append((fields[4], fields[3], rest[0], set(rest[2].split(","))))
    except OSError:
        pass
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``""`` (v2) or each v1 controller, to its path."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    for controller in parts[1].split(",") if parts[1] else [""]:
                        found[controller] = parts[2]
    except OSError:
        pass
    return found


def _inside(mount: str, root: str, path: str) -> str:
    """The folder of cgroup ``path`` under a hierarchy mounted at ``mount`` from its ``root``."""
    relative = path[len(root):] if root != "/" and (path + "/").startswith(root.rstrip("/") + "/") else path
    return os.path.join(mount, relative.lstrip("/"))


def pids_folders() -> list[tuple[str, str]]:
    """``(folder, how)`` where a cgroup with ``pids.max`` may be made, best first: this process's own
    cgroup v2 when it delegates the pids controller to its children, then cgroup v1's pids hierarchy."""
    own = _own_cgroups()
    found: list[tuple[str, str]] = []
    for mount, root, kind, options in _mounts():
        if kind == "cgroup2" and "" in own:
            folder = _inside(mount, root, own[""])
            try:
                with open(os.path.join(folder, "cgroup.subtree_control"), encoding="ascii") as handle:
                    delegated = "pids" in handle.read().split()
            except OSError:
                delegated = False
            if delegated:
                found.insert(0, (folder, "cgroup v2 pids.max"))
        elif kind == "cgroup" and "pids" in options and "pids" in own:
            found.append((_inside(mount, root, own["pids"]), "cgroup v1 pids.max"))
    return found


class ProcessLimit:
    """One run's pids cgroup: made with ``pids.max`` set, joined by the run's first process through
    :meth:`prefix`, removed by :meth:`close` once the run is over (what is left of it killed first)."""

    _count = itertools.count()

    def __init__(self, folder: str, limit: int) -> None:
        self.path = os.path.join(folder, f"{CGROUP_PREFIX}{os.getpid()}-{next(self._count)}")
        os.mkdir(self.path)
        try:
            with open(os.path.join(self.path, "pids.max"), "w", encoding="ascii") as handle:
                handle.write(str(limit))
        except BaseException:
            self.close()
            raise

    def prefix(self) -> list[str]:
        """What goes before the run's command so that its first process joins the cgroup, then runs it."""
        return [SHELL, "-c", JOIN, os.path.join(self.path, "cgroup.procs")]

    def close(self, wait: float = 2.0) -> None:
        """Remove the cgroup; a process of the run still in it (ending) is killed first. Never raises."""
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return
            for pid in _members(self.path):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)


def _members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as handle:
            return [int(word) for word in handle.read().split() if word.isdigit()]
    except OSError:
        return []


def _sweep(folder: str) -> None:
    """Remove the cgroups a grader that was killed left behind (empty, their grader gone)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.startswith(CGROUP_PREFIX):
            continue
        owner = name[len(CGROUP_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and int(owner) != os.getpid() and not os.path.exists(f"/proc/{owner}"):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(folder, name))


class ProcessLimits:
    """How this grading bounds the processes of each sample's run (found once): ``how`` says it for the
    report, :meth:`start` gives each run its cgroup (or None: the run's own RLIMIT_NPROC, or nothing)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.folder: str | None = None
        self.how: str | None = None
        if os.path.exists(SHELL):
            for folder, how in pids_folders():
                try:
                    ProcessLimit(folder, limit).close()  # a probe: made, set and removed
                except OSError:
                    continue
                self.folder, self.how = folder, how
                _sweep(folder)
                break
        if self.how is None and os.geteuid() != 0:
            self.how = "RLIMIT_NPROC (in each run's own user namespace)"

    def start(self) -> ProcessLimit | None:
        """A cgroup for one run, or None (none can be made: the run's RLIMIT_NPROC, if any, bounds it)."""
        if self.folder is None:
            return None
        try:
            return ProcessLimit(self.folder, self.limit)
        except OSError:
            return None

    def settings(self) -> dict[str, Any]:
        """What the report says: the limit and how it is enforced, or why it is not."""
        if self.how is not None:
            return {"max": self.limit, "by": self.how}
        return {"max": None, "by": None,
                "note": "not enforced: the grader runs as root (the kernel exempts root from RLIMIT_NPROC) and no "
                        "pids cgroup can be made here (no cgroup v2 pids controller delegated to this process, no "
                        "writable cgroup v1 pids hierarchy); a sample's fork bomb is bounded only by the machine "
                        "(run the grader as another user, or in a container with a pids limit)"}  # fmt: skip
