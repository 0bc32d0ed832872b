"""Where a candidate's code runs: a root of its own in Linux namespaces (one module for every test process).

Every process the runner starts that runs a candidate's code (the tests of ``grade``, ``grade-batch``,
``audit run`` and ``ab run``, an instance's ``build_command``) is started through this module, run as
a script by the grader's own interpreter (``python -I -S sandbox.py SPEC``). Before the command runs,
the launcher gives it:

* its own user namespace (an unprivileged uid inside, no capability after ``exec``), mount, PID,
  IPC and UTS namespaces, and a network namespace with only loopback unless the network is allowed;
* a root of its own on a small tmpfs that holds, read-only, only the system directories, a short list
  of ``/etc`` files, harmless ``/dev`` entries, a fresh ``/proc``, the test interpreter's own folders
  and what the spec names; the copy being graded is the only writable tree (an overlay over the
  pristine copy, so every run starts from it and what the run wrote can be read back from the upper
  layer), with private ``/tmp``, ``/dev/shm`` and home folders. The user's repository, the ledger,
  other workspaces, output files and the grader's own files are simply not there;
* a PID 1 of its own (this launcher), so nothing the tests start outlives the run.

Whether it worked is told on a status pipe that only the launcher holds (closed before the command
starts), so the command cannot fake a sandbox failure to get itself re-run unconfined.

Stdlib only and Python 3.7 syntax: it is run with ``-I -S`` and never imports the package.

Its primitives (the namespaces, the uid and gid maps, a root of its own and its read-only
remounts, PR_SET_PDEATHSIG: :data:`SHARED`) are the only copy the project has. The sample
harness's sample processes are confined with them too: they run in the sample's interpreter,
which cannot import the package, so they get them as source text (:func:`shared_source`).
"""

import ctypes
import json
import os
import signal
import struct
import sys

if False:  # type comments only (the launcher runs with -I -S: nothing more to import)
    from typing import Any, Dict, Iterable, List, NoReturn, Optional, Tuple  # noqa: F401

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_STRICTATIME = 1 << 24
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024, "nodiratime": 2048,
         "relatime": 1 << 21}
SETUP_FAILED = 125
MNT_DETACH = 2
CGROUPS = "/sys/fs/cgroup"
INSIDE_UID = 1000

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
             ("stderr", "/proc/self/fd/2"))
ETC = ("hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "services", "protocols", "localtime",
       "timezone", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "pki", "ca-certificates", "alternatives",
       "mime.types", "os-release", "debian_version", "locale.alias", "locale.conf", "fonts", "magic", "xml",
       "environment", "shells", "inputrc", "ethertypes", "networks", "rpc", "mailcap", "python3", "python3.11")


def _libc():
    # type: () -> Any
    return mount_types(ctypes.CDLL(None, use_errno=True))


# ---------------------------------------------------------------- the primitives, shared with the sample harness
#
# What every confined process of the project is made with: the runner's launcher below, and the
# sample harness's sample processes (``sample_sandbox.py``, ``sample_warm.py``), which get this code
# as source text (:func:`shared_source`): they run in the sample's own interpreter, which cannot
# import the package. So: Python 3.6 syntax, the standard library only, nothing but the names in
# ``SHARED`` and ``SHARED_CONSTANTS`` used, ``ctypes`` and ``signal`` imported where needed.


def _b(path):
    # type: (Optional[str]) -> Optional[bytes]
    return path.encode("utf-8", "surrogateescape") if path is not None else None


def fail(what):
    # type: (str) -> NoReturn
    """Raise OSError for the libc call that just failed: its errno, and ``what`` it was."""
    import ctypes

    raise OSError(ctypes.get_errno(), what)


def mount_types(libc):
    # type: (Any) -> Any
    """``libc`` with mount(2)'s argument types (paths as bytes or None, the flags an unsigned long)."""
    import ctypes

    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def mount(libc, source, target, fstype, flags, data, what):
    # type: (Any, Optional[str], str, Optional[str], int, Optional[str], str) -> None
    """mount(2); raises (:func:`fail`, saying ``what``) when it fails."""
    if libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)) != 0:
        fail(what)


def enter_namespaces(libc, flags, what):
    # type: (Any, int, str) -> None
    """unshare(2) ``flags`` (CLONE_NEW*); raises, saying ``what``, when it fails."""
    if libc.unshare(flags) != 0:
        fail(what)


def map_ids(inside_id, uid, gid):
    # type: (int, int, int) -> None
    """In a new user namespace: its only user and group, ``inside_id`` there, are ``uid`` and ``gid``
    outside; no setgroups."""
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (inside_id, uid)),
                       ("gid_map", "%d %d 1" % (inside_id, gid))):
        with open("/proc/self/" + name, "w") as handle:
            handle.write(text)


def make_private(libc):
    # type: (Any) -> None
    """In a new mount namespace: no mount or unmount of it reaches another's, nor another's it."""
    mount(libc, "none", "/", None, MS_REC | MS_PRIVATE, None, "mount --make-rprivate /")


def die_with_parent(libc, parent=None):
    # type: (Any, Optional[int]) -> bool
    """Be killed (SIGKILL) when the parent ends, however it ends (PR_SET_PDEATHSIG; not without a
    ``libc``). Whether ``parent`` (when given) is still the parent: one that ended before the call
    is never seen to end, so it is asked after it."""
    import signal

    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return parent is None or os.getppid() == parent


def _unescape(text):
    # type: (str) -> str
    """A mount point as /proc/self/mountinfo writes it: space, tab, newline and backslash as octal escapes."""
    for escaped, plain in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(escaped, plain)
    return text


def mounts(path="/proc/self/mountinfo"):
    # type: (str) -> List[Tuple[str, List[str]]]
    """(mount point, options) of every mount in a mountinfo file, in mount order."""
    with open(path, "rb") as handle:
        lines = handle.read().decode("utf-8", "surrogateescape").splitlines()
    return [(_unescape(fields[4]), fields[5].split(",")) for fields in (line.split(" ") for line in lines)
            if len(fields) >= 6]


def inside(path, under):
    # type: (str, str) -> bool
    return path == under or path.startswith(under.rstrip("/") + "/")


def remount_read_only(libc, under, keep):
    # type: (Any, str, Iterable[str]) -> None
    """Every mount at or below ``under`` read-only but those in ``keep`` (their own flags kept: a
    user namespace may not clear nosuid, nodev or noexec); raises if one stays writable."""
    keep = set(keep)
    for point, options in mounts():
        if point in keep or not inside(point, under):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= FLAGS.get(option, 0)
        if "noatime" not in options and "relatime" not in options:
            flags |= MS_STRICTATIME
        libc.mount(None, point.encode("utf-8", "surrogateescape"), None, flags, None)
    visible = dict(mounts())  # the last mount on a point hides those under it
    left = [p for p, options in visible.items() if p not in keep and inside(p, under) and "ro" not in options]
    if left:
        raise OSError(30, "still writable: " + ", ".join(left))


def nest(paths):
    # type: (Iterable[str]) -> List[str]
    """``paths`` normalised, existing, outermost first, none inside another."""
    kept = []  # type: List[str]
    for path in sorted(set(os.path.normpath(os.path.abspath(p)) for p in paths if p), key=len):
        if os.path.lexists(path) and not any(inside(path, k) for k in kept):
            kept.append(path)
    return kept


class Root(object):
    """A root of its own being built at ``root`` (in a mount namespace of the caller's, made private:
    :func:`make_private`): an empty tmpfs (:meth:`create`), folders of this system shown at the same
    place in it (:meth:`bind`), tmpfs of its own (:meth:`tmpfs`), then all of it read-only but those
    (:meth:`read_only`). Entered with chroot by whoever runs in it."""

    def __init__(self, root, libc):
        # type: (str, Any) -> None
        self.root = root
        self.libc = libc
        self.writable = []  # type: List[str]
        self.own = []  # type: List[str]  # the tmpfs this root made (itself, /tmp, /dev/shm): nothing of this system

    def mount(self, source, target, fstype, flags, data, what):
        # type: (Optional[str], str, Optional[str], int, Optional[str], str) -> None
        mount(self.libc, source, target, fstype, flags, data, what)

    def create(self, data="mode=0755"):
        # type: (str) -> None
        """The root itself: an empty tmpfs (``data``: its mount options)."""
        self.mount("tmpfs", self.root, "tmpfs", MS_NOSUID | MS_NODEV, data, "mount -t tmpfs " + self.root)
        self.own.append(self.root)

    def place(self, path, directory):
        # type: (str, bool) -> str
        """``path`` in the root, made (an empty directory, or file) to mount on."""
        target = self.root + path
        if directory:
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
        return target

    def bind(self, source, path, writable=False, what=None):
        # type: (str, str, bool, Optional[str]) -> None
        """``source`` shown at ``path`` in the root (everything mounted below it too); a symbolic link,
        unless ``writable``, as a copy of the link. Read-only with the rest (:meth:`read_only`) unless
        ``writable``."""
        if os.path.islink(source) and not writable:
            target = self.root + path
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(os.readlink(source), target)
            return
        target = self.place(path, os.path.isdir(source))
        self.mount(source, target, None, MS_BIND | MS_REC, None, what or "mount --rbind %s %s" % (source, target))
        if writable:
            self.writable.append(target)

    def tmpfs(self, path, data="mode=1777"):
        # type: (str, str) -> None
        """A fresh, empty, writable tmpfs at ``path`` in the root (``data``: its mount options)."""
        target = self.place(path, True)
        self.mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, data, "mount -t tmpfs " + target)
        self.writable.append(target)
        self.own.append(target)

    def dev_links(self, links=DEV_LINKS):
        # type: (Iterable[Tuple[str, str]]) -> None
        """/dev/fd, /dev/stdin, /dev/stdout and /dev/stderr (and ``links``' others) in the root."""
        os.makedirs(self.root + "/dev", exist_ok=True)
        for name, target in links:
            os.symlink(target, self.root + "/dev/" + name)

    def read_only(self):
        # type: () -> None
        """Every mount of the root read-only but the writable ones (checked: else it raises)."""
        remount_read_only(self.libc, self.root, self.writable)


SHARED = ("_b", "fail", "mount_types", "mount", "enter_namespaces", "map_ids", "make_private", "die_with_parent",
          "_unescape", "mounts", "inside", "remount_read_only", "nest", "Root")
SHARED_CONSTANTS = ("CLONE_NEWNS", "CLONE_NEWIPC", "CLONE_NEWUSER", "CLONE_NEWPID", "MS_RDONLY", "MS_NOSUID",
                    "MS_NODEV", "MS_NOEXEC", "MS_REMOUNT", "MS_BIND", "MS_REC", "MS_PRIVATE", "MS_STRICTATIME",
                    "PR_SET_PDEATHSIG", "PR_SET_DUMPABLE", "PR_SET_NO_NEW_PRIVS", "FLAGS", "INSIDE_UID", "SYSTEM",
                    "DEV_LINKS")


def shared_source():
    # type: () -> str
    """The primitives above as text, for scripts that cannot import the package (the sample harness
    runs in the sample's own interpreter): one definition, two users."""
    import inspect

    module = sys.modules[__name__]
    constants = "".join("%s = %r\n" % (name, getattr(module, name)) for name in SHARED_CONSTANTS)
    return constants + "\n\n" + "\n\n".join(inspect.getsource(getattr(module, name)) for name in SHARED) + "\n\n"


# ---------------------------------------------------------------- the runner's launcher


class Builder(Root):
    """Builds the root in the launcher's PID 1, before anything of the candidate runs."""

    def __init__(self, spec):
        # type: (Dict[str, Any]) -> None
        Root.__init__(self, str(spec["root"]), _libc())
        self.spec = spec

    def build(self):
        # type: () -> None
        spec, root = self.spec, self.root
        make_private(self.libc)
        self.create()
        self.tmpfs("/tmp")  # first: folders bound below are bound into it
        for path in nest(list(SYSTEM) + ["/etc/" + name for name in ETC] + list(spec.get("read_only", []))):
            self.bind(path, path)
        self.identity()
        os.makedirs(root + "/dev", exist_ok=True)
        for device in DEVICES:
            if os.path.exists(device):
                self.bind(device, device)
        self.dev_links(DEV_LINKS + (("ptmx", "pts/ptmx"),))
        self.tmpfs("/dev/shm")
        try:
            pts = self.place("/dev/pts", True)
            self.mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620",
                       "mount -t devpts")
            self.writable.append(pts)
        except OSError:
            pass  # no pseudo-terminals: tests that open one fail, as on a machine without /dev/pts
        proc = self.place("/proc", True)
        try:
            self.mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "mount -t proc")
        except OSError:  # a /proc the kernel will not mount again here (masked paths): the outer one, read-only
            self.mount("/proc", proc, None, MS_BIND | MS_REC, None, "mount --rbind /proc")
        for source, path in spec.get("writable", []):
            self.bind(source, path, writable=True)
        overlay = spec.get("overlay")
        if overlay:
            target = self.place(overlay["target"], True)
            options = "lowerdir=%s,upperdir=%s,workdir=%s,userxattr" % (overlay["lower"], overlay["upper"], overlay["work"])
            self.mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, options, "mount -t overlay " + target)
            self.writable.append(target)
        for path in spec.get("masked", []):  # hidden paths inside a folder bound above: empty and read-only
            target = root + path
            if os.path.isdir(target) and not os.path.islink(target):
                self.mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0555,size=4k", "mask " + path)
            elif os.path.isfile(target) and not os.path.islink(target):
                self.mount("/dev/null", target, None, MS_BIND, None, "mask " + path)
        for target, alias in spec.get("aliases", []):  # where the user's checkout was, a link to the copy
            self.alias(target, alias)
        for path in spec.get("late_read_only", []):  # inside a writable tree, read-only again (the recorder's tools)
            if os.path.lexists(path):
                self.bind(path, path)
        if os.path.isdir(CGROUPS):
            self.place(CGROUPS, True)  # the mount point, while the root can still be written
        self.read_only()
        self.cgroups()

    def alias(self, target, path):
        # type: (str, str) -> None
        """A symbolic link at ``path`` to ``target`` (the copy), made in the root's own tmpfs: every
        path through it resolves to the copy (``realpath``), so code reached that way is the copy's.
        Never inside a folder of this system shown here (that would write there): then ``path`` stays
        hidden."""
        link = self.root + path
        existing = os.path.dirname(link)
        while not os.path.lexists(existing):
            existing = os.path.dirname(existing)
        if os.path.lexists(link) or os.lstat(existing).st_dev not in [os.lstat(own).st_dev for own in self.own]:
            return
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)

    def cgroups(self):
        # type: () -> None
        """The cgroup tree, read-only, where it can be (what a suite reads to count its CPUs, as pylint
        does); left out, never a reason to give up the sandbox, where it cannot."""
        target = self.root + CGROUPS
        if not os.path.isdir(CGROUPS) or not os.path.isdir(target):
            return
        try:
            self.mount(CGROUPS, target, None, MS_BIND | MS_REC, None, "mount --rbind " + CGROUPS)
            remount_read_only(self.libc, target, [])
        except OSError:
            self.libc.umount2(_b(target), MNT_DETACH)

    def identity(self):
        # type: () -> None
        """passwd and group entries for the unprivileged user inside (getpass, pwd and ~ work)."""
        home = self.spec.get("home") or "/"
        os.makedirs(self.root + "/etc", exist_ok=True)
        for name, text in (("passwd", "root:x:0:0:root:/root:/bin/sh\ngrader:x:%d:%d:grader:%s:/bin/sh\n"
                                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                            % (INSIDE_UID, INSIDE_UID, home)),
                           ("group", "root:x:0:\ngrader:x:%d:\nnogroup:x:65534:\n" % INSIDE_UID)):
            with open(self.root + "/etc/" + name, "w") as handle:
                handle.write(text)


def loopback_up():
    # type: () -> None
    """Bring ``lo`` up in a fresh network namespace (tests may serve on 127.0.0.1)."""
    import fcntl

    fd = _libc().socket(2, 2, 0)  # AF_INET, SOCK_DGRAM: a handle for the ioctl, never connected
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket for the loopback")
    try:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(fd, 0x8913, request))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(fd, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
    finally:
        os.close(fd)


def _tell(fd, text):
    # type: (int, str) -> None
    try:
        os.write(fd, text.encode("utf-8", "replace")[:4000])
    except OSError:
        pass


def _exit_code(status):
    # type: (int) -> int
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else 1


def _which(name, root):
    # type: (str, str) -> str
    """The executable ``name`` stands for inside ``root`` (looked up before the chroot: afterwards
    the launcher's own interpreter has no standard library to import from)."""
    if "/" in name:
        return name
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        if folder and os.access(root + os.path.join(folder, name), os.X_OK):
            return os.path.join(folder, name)
    raise OSError(2, "no %s on PATH inside the sandbox" % name)


def drop_capabilities(libc):
    # type: (Any) -> None
    """No capability left, effective, permitted, inheritable or ambient: what an ``exec`` as the
    unprivileged user inside leaves (a process forked, not started, keeps the user namespace's full
    set otherwise). Checked in /proc/self/status: raises if one is left."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    header, data = Header(0x20080522, 0), (ctypes.c_uint32 * 6)()  # _LINUX_CAPABILITY_VERSION_3, two words of three sets
    if libc.capset(ctypes.byref(header), data) != 0:
        fail("capset")
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    with open("/proc/self/status") as handle:
        left = [line.split(":")[0] for line in handle if line.startswith(("CapInh", "CapPrm", "CapEff", "CapAmb"))
                and int(line.split(":")[1].strip() or "0", 16) != 0]
    if left:
        raise OSError(1, "capabilities left after capset: " + ", ".join(left))


def _init(spec, status_fd, start=None):
    # type: (Dict[str, Any], int, Optional[Any]) -> None
    """PID 1 of the namespace: build the root, say so, start the command, reap everything, and end with
    the command's status (the kernel then kills whatever is left in the namespace). ``start`` (the
    warm test process, :mod:`.warm_server`): called in the command's process instead of an ``exec``,
    after every capability is dropped; what it raises is not caught here."""
    libc = _libc()
    try:
        die_with_parent(libc)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        Builder(spec).build()
        executable = _which(spec["command"][0], spec["root"]) if start is None else ""
        if not spec.get("network"):
            loopback_up()
        if libc.chroot(_b(spec["root"])) != 0:
            fail("chroot")
        os.chdir(spec["cwd"])
        libc.sethostname(b"sandbox", 7)
        if start is not None:
            drop_capabilities(libc)
            if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                fail("prctl(PR_SET_NO_NEW_PRIVS)")
    except BaseException as exc:
        _tell(status_fd, "fail: %s" % exc)
        os._exit(SETUP_FAILED)
    _tell(status_fd, "ok\n")
    os.close(status_fd)
    command = spec["command"]
    child = os.fork()
    if child == 0 and start is not None:
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # as after an exec: the run may read its own /proc files
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a new interpreter has them
        for name in ("SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        start()
        sys.exit(0)
    if child == 0:
        try:
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE"):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
            os.execve(executable, command, os.environ)
        except BaseException as exc:
            os.write(2, ("sandbox: cannot start %s: %s\n" % (command[0], exc)).encode("utf-8", "replace"))
        os._exit(127)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == child:
            os._exit(_exit_code(status))


def main(argv=None):
    # type: (Optional[List[str]]) -> int
    """``sandbox.py SPEC_JSON``: run ``spec["command"]`` confined as the spec says."""
    return confine(json.loads((argv or sys.argv)[1]))


def confine(spec, start=None):
    # type: (Dict[str, Any], Optional[Any]) -> int
    """Run ``spec["command"]`` confined as the spec says (or ``start``, :func:`_init`); its exit code."""
    status_fd = int(spec["status_fd"])
    libc = _libc()
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if not spec.get("network"):
        flags |= CLONE_NEWNET
    try:
        enter_namespaces(libc, flags, "unshare(user, mount, pid, ipc, uts%s)" % ("" if spec.get("network") else ", net"))
        map_ids(INSIDE_UID, uid, gid)
    except BaseException as exc:
        _tell(status_fd, "fail: %s" % exc)
        return SETUP_FAILED
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)  # the grader ends the run with SIGKILL to the group
    # a grader killed outright (SIGKILL) takes its run with it: nothing of the candidate's outlives the
    # timeout its grader no longer enforces; checked after the call, for a grader that died before it
    if not die_with_parent(libc, spec.get("grader") or None):
        return SETUP_FAILED
    child = os.fork()
    if child == 0:
        _init(spec, status_fd, start)
        os._exit(1)  # not reached
    os.close(status_fd)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            return _exit_code(status)
        except InterruptedError:
            continue



# ---------------------------------------------------------------- the grader's side

_AVAILABLE = {}  # type: Dict[str, Tuple[str, str]]  # workdir -> (mode, detail)


def launcher(spec):
    # type: (Dict[str, Any]) -> List[str]
    """The command that runs ``spec["command"]`` confined as ``spec`` says."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), json.dumps(spec)]


def read_status(fd):
    # type: (int) -> Tuple[bool, str]
    """What the launcher said on its status pipe: ``(True, "")`` once the root was built, else
    ``(False, why)``; ``fd`` is closed."""
    data = b""
    try:
        while len(data) < 8192:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    if text.startswith("ok"):
        return True, ""
    return False, text[len("fail: "):].strip() if text.startswith("fail: ") else (text.strip() or "the launcher said nothing")


MODES = ("namespaces", "namespaces-copy", "none")


def probe(workdir):
    # type: (Optional[str]) -> Tuple[str, str]
    """How test runs in ``workdir`` are confined: ``("namespaces", "")`` (a root of its own with an
    overlay) until a launcher says otherwise, then the next mode :func:`demote` chose. No trial run:
    the launcher of a real run tells on its status pipe, which the command never holds, so a
    candidate cannot make its own run look unconfinable."""
    import tempfile

    return _AVAILABLE.get(os.path.realpath(workdir or tempfile.gettempdir()), (MODES[0], ""))


def demote(workdir, mode, why):
    # type: (Optional[str], str, str) -> Tuple[str, str]
    """A launcher in ``mode`` could not build its root here: later runs use the next mode
    (``namespaces-copy`` when only the overlay failed, else ``none``, which the envelope names)."""
    import tempfile

    key = os.path.realpath(workdir or tempfile.gettempdir())
    overlay = "overlay" in why
    following = "namespaces-copy" if mode == "namespaces" and overlay else "none"
    before = _AVAILABLE.get(key, (MODES[0], ""))[1]
    _AVAILABLE[key] = (following, "; ".join(w for w in (before, "%s: %s" % (mode, why)) if w))
    return _AVAILABLE[key]


if __name__ == "__main__":
    sys.exit(main())
