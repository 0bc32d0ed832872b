"""``harness.py``'s sandbox: how a process that runs a sample's code starts (script text).

Part of the sample harness's script (:func:`.sample_harness.harness_source`): the checker's
:class:`Sandbox` (its four modes, the first that works on the machine: ``minimal-root``,
``read-only``, ``user-namespace``, ``same-user``), what a sample's own root holds (``_kept``), and
the signals and keyring of the processes around a sample. The mechanisms themselves (the
namespaces, the uid and gid maps, the root and its read-only remounts, PR_SET_PDEATHSIG) are the
runner's sandbox's (:mod:`.sandbox`, whose :func:`.sandbox.shared_source` the script embeds): one
copy for both. What is the samples' own stays here: which folders a sample sees, its small tmpfs,
the modes and what each guarantees (``docs/functional.md``). Python 3.6 syntax, standard library.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SANDBOX"]

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

    def _namespaces(self):
        _default_signals()
        enter_namespaces(self.libc, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC,
                         "unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)")
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
