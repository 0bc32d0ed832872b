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
ETC = ("hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "services", "protocols", "localtime",
       "timezone", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "pki", "ca-certificates", "alternatives",
       "mime.types", "os-release", "debian_version", "locale.alias", "locale.conf", "fonts", "magic", "xml",
       "environment", "shells", "inputrc", "ethertypes", "networks", "rpc", "mailcap", "python3", "python3.11")


def _libc():
    # type: () -> Any
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _b(path):
    # type: (Optional[str]) -> Optional[bytes]
    return path.encode("utf-8", "surrogateescape") if path is not None else None


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
    user namespace may not clear nosuid, nodev or noexec); raises if one stays writable. Shared with
    the sample harness (``sample_harness.harness_source``)."""
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


SHARED = ("_unescape", "mounts", "inside", "remount_read_only")
SHARED_CONSTANTS = ("CLONE_NEWNS", "CLONE_NEWIPC", "CLONE_NEWUSER", "MS_RDONLY", "MS_NOSUID", "MS_NODEV", "MS_NOEXEC",
                    "MS_REMOUNT", "MS_BIND", "MS_REC", "MS_PRIVATE", "MS_STRICTATIME", "FLAGS")


def shared_source():
    # type: () -> str
    """This module's mount-table code as text, for scripts that cannot import the package (the
    sample harness runs in the sample's own interpreter): one definition, two users."""
    import inspect

    module = sys.modules[__name__]
    constants = "".join("%s = %r\n" % (name, getattr(module, name)) for name in SHARED_CONSTANTS)
    return constants + "\n\n" + "\n\n".join(inspect.getsource(getattr(module, name)) for name in SHARED) + "\n\n"


def nest(paths):
    # type: (Iterable[str]) -> List[str]
    """``paths`` normalised, existing, outermost first, none inside another."""
    kept = []  # type: List[str]
    for path in sorted(set(os.path.normpath(os.path.abspath(p)) for p in paths if p), key=len):
        if os.path.lexists(path) and not any(inside(path, k) for k in kept):
            kept.append(path)
    return kept


class Builder(object):
    """Builds the root in the launcher's PID 1, before anything of the candidate runs."""

    def __init__(self, spec):
        # type: (Dict[str, Any]) -> None
        self.spec = spec
        self.libc = _libc()
        self.root = str(spec["root"])
        self.writable = []  # type: List[str]

    def fail(self, what):
        # type: (str) -> NoReturn
        raise OSError(ctypes.get_errno(), what)

    def mount(self, source, target, fstype, flags, data, what):
        # type: (Optional[str], str, Optional[str], int, Optional[str], str) -> None
        if self.libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)) != 0:
            self.fail(what)

    def place(self, path, directory):
        # type: (str, bool) -> str
        target = self.root + path
        if directory:
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
        return target

    def bind(self, source, path, writable=False):
        # type: (str, str, bool) -> None
        if os.path.islink(source) and not writable:
            target = self.root + path
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(os.readlink(source), target)
            return
        target = self.place(path, os.path.isdir(source))
        self.mount(source, target, None, MS_BIND | MS_REC, None, "mount --rbind %s %s" % (source, target))
        if writable:
            self.writable.append(target)

    def tmpfs(self, path, mode="1777"):
        # type: (str, str) -> None
        target = self.place(path, True)
        self.mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=%s" % mode, "mount -t tmpfs " + target)
        self.writable.append(target)

    def build(self):
        # type: () -> None
        spec, root = self.spec, self.root
        self.mount("none", "/", None, MS_REC | MS_PRIVATE, None, "mount --make-rprivate /")
        self.mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", "mount -t tmpfs " + root)
        self.tmpfs("/tmp")  # first: folders bound below are bound into it
        for path in nest(list(SYSTEM) + ["/etc/" + name for name in ETC] + list(spec.get("read_only", []))):
            self.bind(path, path)
        self.identity()
        os.makedirs(root + "/dev", exist_ok=True)
        for device in DEVICES:
            if os.path.exists(device):
                self.bind(device, device)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
            os.symlink(target, root + "/dev/" + name)
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
        for path in spec.get("late_read_only", []):  # inside a writable tree, read-only again (the recorder's tools)
            if os.path.lexists(path):
                self.bind(path, path)
        if os.path.isdir(CGROUPS):
            self.place(CGROUPS, True)  # the mount point, while the root can still be written
        self.read_only()
        self.cgroups()

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

    def read_only(self):
        # type: () -> None
        remount_read_only(self.libc, self.root, self.writable)


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


def _init(spec, status_fd):
    # type: (Dict[str, Any], int) -> None
    """PID 1 of the namespace: build the root, say so, start the command, reap everything, and end with
    the command's status (the kernel then kills whatever is left in the namespace)."""
    libc = _libc()
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        Builder(spec).build()
        executable = _which(spec["command"][0], spec["root"])
        if not spec.get("network"):
            loopback_up()
        if libc.chroot(_b(spec["root"])) != 0:
            raise OSError(ctypes.get_errno(), "chroot")
        os.chdir(spec["cwd"])
        libc.sethostname(b"sandbox", 7)
    except BaseException as exc:
        _tell(status_fd, "fail: %s" % exc)
        os._exit(SETUP_FAILED)
    _tell(status_fd, "ok\n")
    os.close(status_fd)
    command = spec["command"]
    child = os.fork()
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
    spec = json.loads((argv or sys.argv)[1])
    status_fd = int(spec["status_fd"])
    libc = _libc()
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if not spec.get("network"):
        flags |= CLONE_NEWNET
    try:
        if libc.unshare(flags) != 0:
            raise OSError(ctypes.get_errno(), "unshare(user, mount, pid, ipc, uts%s)" % ("" if spec.get("network") else ", net"))
        for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (INSIDE_UID, uid)),
                           ("gid_map", "%d %d 1" % (INSIDE_UID, gid))):
            with open("/proc/self/" + name, "w") as handle:
                handle.write(text)
    except BaseException as exc:
        _tell(status_fd, "fail: %s" % exc)
        return SETUP_FAILED
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)  # the grader ends the run with SIGKILL to the group
    # a grader killed outright (SIGKILL) takes its run with it: nothing of the candidate's outlives the
    # timeout its grader no longer enforces; checked after the call, for a grader that died before it
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if spec.get("grader") and os.getppid() != spec["grader"]:
        return SETUP_FAILED
    child = os.fork()
    if child == 0:
        _init(spec, status_fd)
        os._exit(1)  # not reached
    os.close(status_fd)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            return _exit_code(status)
        except InterruptedError:
            continue



# ---------------------------------------------------------------- the grader's side

_FOLDERS = {}  # type: Dict[str, List[str]]  # interpreter path -> the folders it needs
_AVAILABLE = {}  # type: Dict[str, Tuple[str, str]]  # workdir -> (mode, detail)


def interpreter_folders(python):
    # type: (str) -> List[str]
    """What an interpreter needs to run in a root of its own: its prefixes, its executable's folders
    (links followed) and every entry of its ``sys.path`` (site-packages, editable installs), asked of
    the interpreter itself once (isolated: no PYTHON* variables, no user site, from ``/``)."""
    import subprocess

    if python in _FOLDERS:
        return _FOLDERS[python]
    probe = ("import sys, json, os; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, "
             "getattr(sys, 'base_exec_prefix', sys.exec_prefix), os.path.dirname(sys.executable), "
             "os.path.dirname(os.path.realpath(sys.executable))] + [p for p in sys.path if p]))")
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
    result = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, cwd="/", env=env,
                            timeout=120, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise OSError("%s cannot report its folders: %s" % (python, (result.stderr or result.stdout).strip()[-500:]))
    folders = [os.path.dirname(python), os.path.dirname(os.path.realpath(python))]
    for path in json.loads(result.stdout.strip().splitlines()[-1]):
        folders.append(path)
        folders.append(os.path.realpath(path))
    _FOLDERS[python] = folders
    return folders


def visible(folders, hidden):
    # type: (Iterable[str], Iterable[Any]) -> List[str]
    """``folders`` less everything inside a hidden path (the user's repository, the ledger, the
    workspaces): a folder that holds a hidden path is kept only when it is an interpreter's own
    environment (pyvenv.cfg) or a system folder; the hidden path inside it is covered later."""
    hidden = [os.path.realpath(h) for h in hidden if h]
    kept = []
    for folder in folders:
        real = os.path.realpath(folder)
        if any(inside(real, h) or inside(folder, h) for h in hidden):
            if not os.path.isfile(os.path.join(real, "pyvenv.cfg")):
                continue
        kept.append(folder)
    return kept


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
