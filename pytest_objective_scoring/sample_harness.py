"""The scripts that run one sample, and what the grader gives them (``docs/functional.md``).

``harness.py`` (the *checker*) is written into a fresh directory for a sample and run by the
grader in a subprocess (a *cold run*); it reports in lines signed with a key only it holds. Run as
``harness.py serve`` it is the *warm runner* of one grading thread instead: it confines a
key-less *zygote* once and, per HumanEval or MBPP sample, forks a fresh confined sample process
(from the zygote) and a fresh checker (from itself); see "the warm runner" below. What runs where:

* **HumanEval / EvoEval and MBPP** (``split``): the checker never runs the sample's code. It
  starts a second interpreter, the *sample process* (:data:`SERVER`), which runs the sample and
  answers the checker's calls of its functions. Only plain data crosses between the two
  (:func:`encode_plain`): a result of any other type stays in the sample's process as an opaque
  handle the checks can pass back but never compare. The checker makes itself undumpable and
  gives the sample process namespaces, an unprivileged uid and a root of its own (:class:`Sandbox`),
  so the sample cannot read the checker's key or the answers, write to its output, change its
  checks or poison a later run: the verdict cannot be forged.
* **LiveCodeBench** (stdin programs): every case runs the program in its own confined process
  (the same :class:`Sandbox`);
  the checker reports exit statuses and output digests and the grader compares them.
* **BigCodeBench** (``shared``), and a HumanEval or MBPP problem whose checks pass the sample an
  object that is not plain data: the sample runs inside the checker's process, as the benchmark's
  own harness runs it. Such a verdict is labelled not hostile-resistant.

The scripts work on Python 3.6 and later; the functions this module shares with them
(:func:`encode_plain`, :func:`decode_plain`, :func:`describe_exception`) are copied into them
from this file, so the grader and the scripts agree by construction.
"""

from __future__ import annotations

import ast
import base64
import builtins
import functools
import inspect
import json
import sys
import traceback
from collections.abc import Iterable
from typing import Any, Final

from .samples import (
    STDIN_GRACE,
    Problem,
    Sample,
    canonical_line,
    normalize_output,
    output_digest,
    program_of,
)

__all__ = [
    "HARNESS",
    "SERVER",
    "decode_plain",
    "describe_exception",
    "encode_plain",
    "harness_files",
    "harness_source",
    "harness_spec",
    "imported_modules",
    "isolation_of",
    "problem_spec",
    "process_timeout",
    "sample_names",
    "server_source",
]

SPLIT_STYLES: Final = ("humaneval", "mbpp")
DEADLINE_GRACE: Final = 10.0  # seconds a harness outlives its timeout when nobody kills it (a dead grader)
STARTUP_GRACE: Final = 10.0  # seconds a cold harness may take to start before the sample's own clock starts
PLAIN_DEPTH: Final = 100


# --- shared with the scripts (copied into them verbatim: Python 3.6 syntax, no annotations) -------


def encode_plain(value, ref=None, depth=0):  # type: ignore[no-untyped-def]
    """``value`` as tagged JSON, if it is plain data: None, bool and str as themselves; int, float,
    complex, bytes, list, tuple, set, frozenset and dict tagged with their type. Only these exact
    types (never a subclass, whose methods the sample could have written) are plain. ``ref`` maps
    any other object to a handle id, else such an object raises TypeError."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if depth > 100:  # decode_plain stops at 50: what the checks wrap around a sample's result still encodes
        raise ValueError("nested more than 100 levels deep")
    if kind is int:
        return {"int": hex(value)}
    if kind is float:
        return {"float": value.hex()}
    if kind is complex:
        return {"complex": [value.real.hex(), value.imag.hex()]}
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return {kind.__name__: [encode_plain(item, ref, depth + 1) for item in value]}
    if kind is dict:
        return {"dict": [[encode_plain(k, ref, depth + 1), encode_plain(v, ref, depth + 1)] for k, v in value.items()]}
    if ref is not None:
        return {"ref": ref(value)}
    raise TypeError("a %s object is not plain data" % getattr(kind, "__name__", "?"))  # noqa: UP031 (Python 3.6)


def decode_plain(value, ref=None, depth=0):  # type: ignore[no-untyped-def]
    """The value :func:`encode_plain` encoded; ValueError for anything else. ``ref`` maps a handle
    id back to its object (only the sample process holds objects behind handles)."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is not dict or len(value) != 1 or depth > 50:
        raise ValueError("not an encoding of plain data (or nested more than 50 levels deep)")
    tag, body = next(iter(value.items()))
    if tag == "int" and type(body) is str:
        return int(body, 16)
    if tag == "float" and type(body) is str:
        return float.fromhex(body)
    if tag == "complex" and type(body) is list and len(body) == 2:
        return complex(float.fromhex(body[0]), float.fromhex(body[1]))
    if tag == "bytes" and type(body) is str:
        return base64.b64decode(body.encode("ascii"), validate=True)
    if tag in ("list", "tuple", "set", "frozenset") and type(body) is list:
        items = [decode_plain(item, ref, depth + 1) for item in body]
        return items if tag == "list" else {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict" and type(body) is list:
        pairs = []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("not an encoding of plain data")
            pairs.append((decode_plain(pair[0], ref, depth + 1), decode_plain(pair[1], ref, depth + 1)))
        return dict(pairs)
    if tag == "ref" and ref is not None and type(body) is int:
        return ref(body)
    raise ValueError("not an encoding of plain data (%r)" % (tag,))  # noqa: UP031 (Python 3.6)


def describe_exception(exc, sources):  # type: ignore[no-untyped-def]
    """``Type: message [file line N: source]`` for the innermost frame in one of ``sources``; never raises."""
    try:
        name = type(exc).__name__
        name = name if type(name) is str else "Exception"
    except BaseException:  # noqa: BLE001 (it must never raise)
        name = "Exception"
    try:
        message = str(exc)
        message = message if type(message) is str else ""
    except BaseException:  # noqa: BLE001
        message = ""
    text = name + (": " + message if message else "")
    try:
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            source = sources.get(frame.filename)
            if source is not None:
                lines = source.splitlines()
                line = lines[frame.lineno - 1].strip() if 0 < frame.lineno <= len(lines) else ""
                text += " [%s line %d: %s]" % (frame.filename, frame.lineno, line)  # noqa: UP031
                break
    except BaseException:  # noqa: BLE001, S110
        pass
    return text[:600]


# --- the checker ------------------------------------------------------------------------------------


HARNESS: Final = r'''"""objective-score sample harness: written by the grader for one sample (docs/functional.md).

Runs the sample against its problem's checks and reports on stdout in signed lines
    @objective-sample@ MAC SEQ EVENT JSON        MAC = HMAC-SHA256(key, "SEQ EVENT JSON")
The key is read from ./key, and that file and ./spec.json are deleted, before any code of
the sample runs. HumanEval and MBPP samples run in a separate, confined process that answers
this one's calls with plain data; this process never runs their code. Python 3.6 and later.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
import traceback
import types
from decimal import Decimal, InvalidOperation

PREFIX = "@objective-sample@"
OUTPUT_LIMIT = 64 * 1024 * 1024
REPLY_LIMIT = 64 * 1024 * 1024
DETAIL_LIMIT = 600
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
PLAIN = "None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset"


def _load(here):
    path = os.path.join(here, "key")
    with open(path, "rb") as handle:
        key = handle.read().strip()
    os.unlink(path)
    path = os.path.join(here, "spec.json")
    with open(path, "rb") as handle:
        spec = json.loads(handle.read().decode("utf-8"))
    os.unlink(path)
    return key, spec


def _signer(key, fd=1):
    import threading
    write, new, sha256, dumps, lock = os.write, hmac.new, hashlib.sha256, json.dumps, threading.Lock()
    state = [0]

    def emit(event, detail):
        with lock:  # the sample's clock (another thread) may say its time is up
            body = dumps(detail, sort_keys=True, ensure_ascii=True)
            text = "%d %s %s" % (state[0], event, body)
            state[0] += 1
            mac = new(key, text.encode("ascii"), sha256).hexdigest()
            data = ("\n%s %s %s\n" % (PREFIX, mac, text)).encode("ascii")
            while data:
                data = data[write(fd, data):]

    return emit


def _sample_clock(spec, emit):
    """A cold run's clock for the sample's own run, started just before the sample's code can run (its
    process, or in the checker's process its module): at ``timeout`` seconds the harness says so and
    ends, and with it the sample process (PR_SET_PDEATHSIG) and, as PID 1, its namespace. The
    harness's start-up is not counted; the grader kills it only STARTUP_GRACE seconds later."""
    import threading
    seconds = spec.get("timeout")
    if seconds is None:
        return
    sleep, end = time.sleep, os._exit  # bound now: a shared sample may replace the modules' own

    def expire():
        sleep(float(seconds))
        try:
            emit("timed_out", {"detail": "its own run took more than %gs" % float(seconds)})
            _flush()
        finally:
            end(0)

    threading.Thread(target=expire, daemon=True).start()


def _limit():
    try:
        import resource
    except ImportError:
        return
    for name, value in (("RLIMIT_FSIZE", OUTPUT_LIMIT), ("RLIMIT_CORE", 0)):
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))  # the hard limit too: the sample cannot raise it
        except (ValueError, OSError):
            pass


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _libc():
    try:
        import ctypes
        return ctypes, ctypes.CDLL(None, use_errno=True)
    except BaseException:
        return None, None


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
    """

    SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/dev/null", "/dev/zero",
              "/dev/full", "/dev/random", "/dev/urandom")
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
                libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
            except BaseException:
                pass
        self.keep = _kept([self.cwd] if self.cwd != writable else []) if root is not None and writable else []
        self.mode = None

    def _fail(self, what):
        raise OSError(self.ctypes.get_errno(), what)

    def _user_namespace(self):
        _default_signals()
        if self.unshare(CLONE_NEWUSER) != 0:
            self._fail("unshare(CLONE_NEWUSER)")

    def _namespaces(self):
        _default_signals()
        if self.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC) != 0:
            self._fail("unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)")
        if self.libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            self._fail("mount --make-rprivate /")

    def _remount_read_only(self, under, keep):
        """Every mount at or below ``under`` read-only but those in ``keep``; raises if one stays writable
        (the runner's sandbox's own code: :func:`remount_read_only`)."""
        remount_read_only(self.libc, under, keep)

    def _read_only(self):
        """In the child, before it runs anything: its own namespaces, every file system read-only
        but its own directory (checked: else it raises)."""
        self._namespaces()
        keep = self.writable
        if keep is not None and self.libc.mount(keep.encode(), keep.encode(), None, MS_BIND, None) != 0:
            self._fail("mount --bind " + keep)
        self._remount_read_only("/", [keep])
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
        for name, text in (("setgroups", "deny"), ("uid_map", "1000 %d 1" % uid), ("gid_map", "1000 %d 1" % gid)):
            with open("/proc/self/" + name, "w") as handle:
                handle.write(text)
        mount, root = self.libc.mount, self.root
        if mount(b"tmpfs", root.encode(), b"tmpfs", 2 | 4, b"mode=0755,size=1m") != 0:
            self._fail("mount -t tmpfs " + root)
        scratch = [root + "/tmp", root + "/dev/shm", root + self.writable]  # outermost first
        for place in scratch[:2]:  # /tmp and /dev/shm: small, private, gone with it
            self._scratch(place)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, root + "/dev/" + name)
        self._bind_kept(self.keep)
        self._scratch(scratch[2])  # its own directory, last: nothing is mounted over it
        self._remount_read_only(root, scratch)
        if not enter:
            return
        if self.libc.chroot(root.encode()) != 0:
            self._fail("chroot " + root)
        os.chdir(self.cwd)

    def _bind_kept(self, paths):
        """Show each of ``paths`` (what :func:`_kept` lists) at the same place in the root."""
        root, mount = self.root, self.libc.mount
        for path in paths:
            target = root + path
            if os.path.islink(path):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if not os.path.lexists(target):
                    os.symlink(os.readlink(path), target)
                continue
            if os.path.isdir(path):
                os.makedirs(target, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
            if mount(path.encode("utf-8", "surrogateescape"), target.encode("utf-8", "surrogateescape"), None,
                     MS_BIND | MS_REC, None) != 0:
                self._fail("mount --rbind " + path)

    def kept_under(self, places):
        """The kept paths a fresh scratch at one of ``places`` covers (an interpreter in /tmp, say)."""
        return [path for path in self.keep if any(path == place or path.startswith(place.rstrip("/") + "/")
                                                  for place in places)]

    def _scratch(self, place):
        os.makedirs(place, exist_ok=True)
        if self.libc.mount(b"tmpfs", place.encode("utf-8", "surrogateescape"), b"tmpfs", 2 | 4,
                           b"mode=1777,size=64m") != 0:
            self._fail("mount -t tmpfs " + place)

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
    candidates = list(Sandbox.SYSTEM) + ["/etc/" + name for name in Sandbox.ETC]
    for path in (sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
                 os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))):
        candidates.append(path)
    candidates.extend(entry for entry in sys.path if entry.rstrip("/").endswith("-packages"))
    kept = []
    for path in sorted(set(os.path.normpath(os.path.abspath(c)) for c in candidates if c), key=len):
        if not os.path.lexists(path) or any(path.startswith(k.rstrip("/") + "/") for k in kept):
            continue
        kept.append(path)
    return kept + list(extra)


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
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
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


def _watch(style):
    """What the checks rely on, as it is before the sample runs: builtins, and unittest for BigCodeBench."""
    import builtins
    watched = [(builtins, name) for name in list(vars(builtins))]
    if style == "bigcodebench":
        import unittest
        import unittest.case
        import unittest.result
        import unittest.runner
        import unittest.suite
        for name in ("TestCase", "TestSuite", "TestLoader", "TestResult", "TextTestRunner", "TextTestResult",
                     "SkipTest", "defaultTestLoader"):
            watched.append((unittest, name))
        for owner in (unittest.TestCase, unittest.TestSuite, unittest.TestLoader, unittest.TestResult,
                      unittest.TextTestRunner, unittest.TextTestResult):
            for name in list(vars(owner)):
                watched.append((owner, name))
        watched.append((unittest.case, "_Outcome"))
    return [(owner, name, vars(owner).get(name)) for owner, name in watched]


def _changed(snapshot):
    for owner, name, value in snapshot:
        if vars(owner).get(name) is not value:
            return "%s.%s" % (getattr(owner, "__name__", owner), name)
    return None


def _sources(spec):
    sources = {"solution.py": spec["solution"], "test.py": spec.get("test", ""), "prompt.py": spec.get("prompt", "")}
    for index, text in enumerate(spec.get("asserts", [])):
        sources["assert_%d.py" % index] = text
    return sources


def _compile_tests(spec, emit, sources):
    """The problem's own code, compiled; None (after reporting) when it does not compile here."""
    try:
        return ([compile(text, "test_imports.py", "exec") for text in spec.get("imports", [])],
                compile(spec.get("test", ""), "test.py", "exec"),
                [compile(text, "assert_%d.py" % i, "exec") for i, text in enumerate(spec.get("asserts", []))])
    except BaseException as exc:
        emit("internal", {"detail": "the problem's tests do not compile on this interpreter: " +
                          describe_exception(exc, sources)})
        return None


def _run_module(spec, emit, here):
    """BigCodeBench, and the problems whose checks cannot be split: the sample runs in this process."""
    style = spec["style"]
    snapshot = _watch(style)
    emit("sandbox", {"isolation": "shared", "sample_process": None, "checker_undumpable": False,
                     "detail": "the sample ran in the checker's own process, as the benchmark's harness runs it: "
                               "its verdict is not hostile-resistant"})
    if style == "bigcodebench":
        import unittest
    stream = sys.__stderr__
    sources = _sources(spec)
    try:
        solution = compile(spec["solution"], "solution.py", "exec")
    except BaseException as exc:
        emit("error", {"phase": "compile", "detail": describe_exception(exc, sources)})
        return
    compiled = _compile_tests(spec, emit, sources)
    if compiled is None:
        return
    imports, test, asserts = compiled
    module = types.ModuleType("solution")
    module.__file__ = os.path.join(here, "solution.py")
    sys.modules["solution"] = module
    namespace = module.__dict__
    entry = spec.get("entry_point") or ""
    verdict = {}

    def define():
        exec(solution, namespace)
        if entry and not callable(namespace.get(entry)):
            raise NameError("the solution defines no function %r" % entry)

    def prepare():
        for code in imports:
            exec(code, namespace)
        exec(test, namespace)

    def checks():
        if style == "humaneval":
            namespace["check"](namespace[entry])
            verdict["checks"] = 1
        elif style == "mbpp":
            for code in asserts:
                exec(code, namespace)
            verdict["checks"] = len(asserts)
        else:
            suite = unittest.TestSuite()
            for name in spec["test_classes"]:
                value = namespace.get(name)
                if isinstance(value, type) and issubclass(value, unittest.TestCase):
                    suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(value))
            expected = suite.countTestCases()
            if not expected:
                verdict["error"] = "the test module holds no unittest.TestCase with tests"
                return
            result = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
            problems = list(result.failures) + list(result.errors)
            if problems:
                case, text = problems[0]
                lines = str(text).strip().splitlines()
                skip = (" ", "Traceback", "During handling", "The above exception")
                message = [line for line in lines if line.strip() and not line.startswith(skip)]
                verdict["failed"] = ("%s: %s" % (case.id(), message[0] if message else "failed"))[:DETAIL_LIMIT]
            elif result.skipped:
                case, reason = result.skipped[0]
                verdict["failed"] = ("%s was skipped (%s): a skipped test is not a pass" % (case.id(), reason))[:DETAIL_LIMIT]
            elif result.unexpectedSuccesses:
                verdict["failed"] = "%s: unexpected success" % result.unexpectedSuccesses[0].id()
            elif result.testsRun != expected:
                verdict["failed"] = "%d of %d tests ran" % (result.testsRun, expected)
            verdict["checks"] = expected

    _sample_clock(spec, emit)
    for phase, action in (("solution", define), ("test", prepare), ("check", checks)):
        try:
            action()
        except Exception as exc:
            emit("failed" if phase == "check" else "error", {"phase": phase, "detail": describe_exception(exc, sources)})
            return
        except BaseException as exc:
            emit("failed", {"phase": phase, "escaped": True, "detail": "the sample stopped its own run (%s) before "
                            "its checks finished" % describe_exception(exc, sources)})
            return
    _flush()
    if "error" in verdict:
        emit("error", {"phase": "test", "detail": verdict["error"]})
    elif "failed" in verdict:
        emit("failed", {"phase": "check", "detail": verdict["failed"]})
    else:
        changed = _changed(snapshot)
        if changed:
            emit("tampered", {"phase": "check", "detail": "the sample replaced %s, which the checks rely on" % changed})
        else:
            emit("passed", {"checks": verdict.get("checks", 0)})


class Escaped(BaseException):
    """The sample process ended, or broke the protocol, during a call: the checks cannot go on."""


class Unsplittable(BaseException):
    """The checks pass the sample something that is not plain data: they cannot run split."""


class SampleRaised(Exception):
    """An exception the sample raised whose type is not one of Python's built-in exceptions."""


class SampleObject(object):
    """A handle on an object the sample returned that is not plain data. It stays in the sample's
    process: the checks may pass it back to the sample (or call it), never compare or inspect it."""

    __slots__ = ("_channel", "_ref", "_type")

    def __init__(self, channel, ref, typename):
        self._channel, self._ref, self._type = channel, ref, typename

    def __call__(self, *args, **kwargs):
        return self._channel.call({"ref": self._ref}, args, kwargs)

    def __repr__(self):
        return "<the sample's object>"  # never text the sample chose

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def _refuse(self, *args):
        raise TypeError("the sample's %s object is not plain data (%s): it stays in the sample's process, and the "
                        "checks can pass it back to the sample but never compare or inspect it" % (self._type, PLAIN))

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __bool__ = __len__ = __iter__ = _refuse
    __contains__ = __getitem__ = __getattr__ = __index__ = __int__ = __float__ = __complex__ = __round__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _refuse
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = __lshift__ = __rshift__ = _refuse


class Channel(object):
    """The checker's end of the sample process's pipes: one JSON line out, one JSON line back."""

    def __init__(self, proc, stderr_fd):
        self.proc, self.stderr_fd = proc, stderr_fd  # opened before the sample ran: never a path it could swap
        self.escaped = None
        self.unsplittable = None

    def _escape(self, why):
        if self.escaped is None:
            self.escaped = why
        raise Escaped(self.escaped)

    def _ended(self):
        try:
            code = self.proc.wait(timeout=5)
        except BaseException:
            code = None
        how = "killed by signal %d" % -code if code is not None and code < 0 else "exit code %s" % code
        tail = ""
        try:
            end = os.lseek(self.stderr_fd, 0, 2)
            os.lseek(self.stderr_fd, max(0, end - 300), 0)
            lines = os.read(self.stderr_fd, 300).decode("utf-8", "replace").strip().splitlines()
            tail = ": " + lines[-1] if lines else ""
        except OSError:
            pass
        return "the sample's process ended before answering the checker (%s)%s" % (how, tail)

    def request(self, message):
        if self.escaped is not None:
            raise Escaped(self.escaped)
        try:
            self.proc.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            self._escape(self._ended())
        line = self.proc.stdout.readline(REPLY_LIMIT)
        if not line.endswith(b"\n"):
            if len(line) >= REPLY_LIMIT:
                self._escape("the sample's process answered with more than %d MiB" % (REPLY_LIMIT >> 20))
            self._escape(self._ended())
        try:
            reply = json.loads(line.decode("utf-8"))
        except ValueError:
            reply = None
        if type(reply) is not dict:
            self._escape("the sample's process broke the call protocol (it wrote to the checker's pipe)")
        if "escaped" in reply:
            self._escape("the sample stopped its own run (%s) before its checks finished" % str(reply["escaped"])[:DETAIL_LIMIT])
        return reply

    def _handle(self, value):
        if isinstance(value, SampleObject) and value._channel is self:
            return value._ref
        raise TypeError("a %s object is not plain data" % type(value).__name__)

    def encode(self, value):
        try:
            return encode_plain(value, self._handle)
        except (TypeError, ValueError, RecursionError) as exc:
            self.unsplittable = ("the checks pass the sample something that is not plain data (%s; plain data is %s): "
                                 "they cannot run in a separate process" % (str(exc)[:200], PLAIN))
            raise Unsplittable(self.unsplittable)

    def call(self, target, args, kwargs):
        message = {"op": "call", "target": target, "args": [self.encode(a) for a in args],
                   "kwargs": dict((str(k), self.encode(v)) for k, v in kwargs.items())}
        reply = self.request(message)
        if "raised" in reply:
            raise _raised(reply)
        if "ref" in reply:
            return SampleObject(self, reply["ref"], str(reply.get("type"))[:100])
        try:
            return decode_plain(reply.get("value"))
        except (TypeError, ValueError, KeyError, RecursionError, OverflowError):
            self._escape("the sample's process broke the call protocol (a reply that is not plain data)")


def _raised(reply):
    """The sample's exception, rebuilt here: a built-in exception type as itself, any other as SampleRaised."""
    import builtins
    name, detail = str(reply.get("raised")), str(reply.get("detail", ""))[:DETAIL_LIMIT]
    message = detail[len(name) + 2:] if detail.startswith(name + ": ") else detail
    kind = getattr(builtins, name, None) if reply.get("module") == "builtins" else None
    if kind in (StopIteration, StopAsyncIteration):  # would silently end the check's loop (PEP 479)
        return RuntimeError("the sample raised %s: %s" % (name, message))
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(message)
        except BaseException:
            pass
    return SampleRaised("%s: %s" % (name, message) if message else name)


def _importable(name, module):
    """Whether the checker imports, itself, a module the sample's code bound to ``name``: one of
    Python's own (``import numpy as np`` stays the sample's), or one imported under its own name."""
    if type(module) is not str or not module or module.startswith("."):
        return False
    stdlib = getattr(sys, "stdlib_module_names", ())
    return module.split(".")[0] in stdlib or module == name


def _proxy(channel, name):
    def call(*args, **kwargs):
        return channel.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _start_sample(spec, here):
    """The sample's process, confined (:class:`Sandbox`), with a directory of its own to write in."""
    import subprocess
    place = os.path.join(here, "sample")
    os.mkdir(place)
    os.chmod(place, 0o777)
    env = dict(os.environ)
    env.update(HOME=place, TMPDIR=place)
    root = os.path.join(here, "root")
    os.mkdir(root)
    sandbox = Sandbox(place, root)
    stderr_path = os.path.join(here, "sample-stderr.txt")
    with open(stderr_path, "wb") as stderr:
        reader = os.open(stderr_path, os.O_RDONLY)
        proc = sandbox.popen([sys.executable, "-c", spec["server"]], cwd=place, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=stderr, close_fds=True)
    return sandbox, Channel(proc, reader)


def _compile_split(spec):
    """The problem's own code compiled, nothing run: ``("ok", code)``, or ``("internal", detail)`` when
    its tests do not compile on this interpreter (a prompt that does not compile is left out)."""
    sources = _sources(dict(spec, solution=spec.get("solution", "")))
    try:
        code = {"asserts": [compile(text, "assert_%d.py" % i, "exec") for i, text in enumerate(spec.get("asserts", []))],
                "test": compile(spec.get("test", ""), "test.py", "exec"),
                "imports": [compile(text, "test_imports.py", "exec") for text in spec.get("imports", [])]}
    except BaseException as exc:
        return "internal", {"detail": "the problem's tests do not compile on this interpreter: " +
                            describe_exception(exc, sources)}
    try:
        code["prompt"] = compile(spec["prompt"], "prompt.py", "exec") if spec.get("prompt") else None
    except BaseException:
        code["prompt"] = None
    return "ok", code


def _trusted(spec, code):
    """The problem's own code run here, before the sample starts: its prompt's helpers (HumanEval/38's
    encode_cyclic), test imports, setup and definitions, and every module its checks import."""
    import builtins
    import importlib
    namespace = {"__name__": "checks", "__builtins__": builtins}
    if code["prompt"] is not None:
        try:
            exec(code["prompt"], namespace)
        except BaseException:
            namespace = {"__name__": "checks", "__builtins__": builtins}
    for compiled in code["imports"]:
        exec(compiled, namespace)
    exec(code["test"], namespace)
    for name in spec.get("modules", []):
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    return namespace


def _prepare_split(spec, compiled=None):
    """The checker's side of a split run before the sample starts: the problem's code compiled (or
    ``compiled``, what :func:`_compile_split` gave) and run (:func:`_trusted`). ``("ok", (namespace,
    asserts, sources, wanted))``, or the event that ends the sample's run: ``internal`` (the tests do
    not compile here) or ``unsplittable`` (the problem's setup needs the sample's names)."""
    import builtins
    kind, code = compiled if compiled is not None else _compile_split(spec)
    if kind != "ok":
        return kind, code
    sources = _sources(dict(spec, solution=spec.get("solution", "")))
    try:
        namespace = _trusted(spec, code)
    except BaseException as exc:  # its setup needs the sample's names: the benchmark's own way decides
        return "unsplittable", {"detail": "the problem's test setup cannot run before the sample's code (%s)" %
                                describe_exception(exc, sources)}
    entry = spec.get("entry_point") or ""
    wanted = [name for name in spec["names"] if name == entry or (name not in namespace and not hasattr(builtins, name))]
    return "ok", (namespace, code["asserts"], sources, wanted)


def _run_split(spec, emit, here):
    """HumanEval and MBPP: the checks run here; the sample runs in its own process and answers calls."""
    kind, prepared = _prepare_split(spec)
    if kind != "ok":
        emit(kind, prepared)
        return
    namespace, asserts, sources, wanted = prepared
    _sample_clock(spec, emit)
    try:
        sandbox, channel = _start_sample(spec, here)
    except OSError as exc:
        emit("internal", {"detail": "cannot start the sample's process (%s): %s" % (sys.executable, exc)})
        return
    emit("sandbox", sandbox.report())
    try:
        _split_checks(spec, emit, channel, namespace, wanted, asserts, sources)
    finally:
        _flush()
        try:
            channel.proc.kill()
            channel.proc.wait()
        except BaseException:
            pass


def _split_checks(spec, emit, channel, namespace, wanted, asserts, sources):
    style, entry = spec["style"], spec.get("entry_point") or ""
    try:
        loaded = channel.request({"op": "load", "source": spec["solution"], "names": wanted})
    except Escaped as exc:
        emit("failed", {"phase": "solution", "escaped": True, "detail": str(exc)})
        return
    if "error" in loaded:
        emit("error", {"phase": str(loaded.get("phase")), "detail": str(loaded["error"])[:DETAIL_LIMIT]})
        return
    names = loaded.get("names")
    names = names if type(names) is dict else {}
    if entry and (names.get(entry) or {}).get("kind") != "callable":
        emit("error", {"phase": "solution", "detail": "NameError: the solution defines no function %r" % entry})
        return
    for name in wanted:
        found = names.get(name)
        kind = found.get("kind") if type(found) is dict else None
        if kind == "callable":
            namespace[name] = _proxy(channel, name)
        elif kind == "module" and _importable(name, found.get("module")):
            import importlib
            try:  # the checker's own copy of a module the checks use through the sample's import
                namespace[name] = importlib.import_module(found["module"])
            except BaseException:
                pass
        elif kind == "ref" and type(found.get("ref")) is int:
            namespace[name] = SampleObject(channel, found["ref"], str(found.get("type"))[:100])
        elif kind == "value":
            try:
                namespace[name] = decode_plain(found.get("value"))
            except (TypeError, ValueError, KeyError, RecursionError, OverflowError):
                emit("failed", {"phase": "solution", "detail": "the sample's process broke the call protocol"})
                return
    checks, failure = 0, None
    try:
        if style == "humaneval":
            namespace["check"](namespace[entry])
            checks = 1
        else:
            for code in asserts:
                exec(code, namespace)
            checks = len(asserts)
    except (Escaped, Unsplittable):
        pass
    except Exception as exc:
        failure = describe_exception(exc, sources)
    if channel.unsplittable is not None:  # first: checks that cannot run split are not the sample's failure
        emit("unsplittable", {"detail": channel.unsplittable})
    elif channel.escaped is not None:
        emit("failed", {"phase": "check", "escaped": True, "detail": channel.escaped})
    elif failure is not None:
        emit("failed", {"phase": "check", "detail": failure})
    else:
        emit("passed", {"checks": checks})


def _reap():
    """As PID 1 of its own PID namespace, end everything the program left behind."""
    if os.getpid() != 1:
        return
    import signal
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    while True:  # every process of the namespace was killed: wait for each, zombies reparented late too
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _tail(path, size):
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - size))
        return handle.read().decode("utf-8", "replace")


def _run_stdin(spec, emit, here):
    import subprocess
    source = spec["program"]
    try:
        compile(source, "solution.py", "exec")
    except BaseException as exc:
        emit("error", {"phase": "compile", "detail": describe_exception(exc, {"solution.py": source})})
        return
    program, scratch = os.path.join(here, "program"), os.path.join(here, "scratch")
    for directory in (program, scratch, os.path.join(here, "root")):
        os.mkdir(directory)
    os.chmod(scratch, 0o777)
    with open(os.path.join(program, "solution.py"), "w", encoding="utf-8") as handle:
        handle.write(source)
    env = dict(os.environ)
    env.update(HOME=scratch, TMPDIR=scratch)
    sandbox = Sandbox(scratch, os.path.join(here, "root"), cwd=program)  # its program read-only, scratch writable
    deadline = time.monotonic() + float(spec["budget"])
    results, stopped = [], None
    for index, case in enumerate(spec["cases"]):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            stopped = "budget"
            break
        base = os.path.join(here, "case-%d" % index)
        with open(base + ".in", "wb") as handle:
            handle.write(case["input"].encode("utf-8"))
        with open(base + ".in", "rb") as stdin, open(base + ".out", "wb") as stdout, open(base + ".err", "wb") as stderr:
            try:
                proc = sandbox.popen([sys.executable, "solution.py"], cwd=program, env=env, stdin=stdin, stdout=stdout,
                                     stderr=stderr)
            except OSError as exc:
                if index == 0:  # before any of the sample's code ran: the machine's failure
                    emit("internal", {"detail": "cannot start %s: %s" % (sys.executable, exc)})
                    return
                # after its earlier cases ran (which could have exhausted processes, memory, ...): its failure
                results.append({"case": index, "exit": None, "timed_out": False, "digest": "",
                                "start_error": ("%s: %s" % (type(exc).__name__, exc))[:DETAIL_LIMIT]})
                stopped = "failed"
                break
            if index == 0:
                emit("sandbox", sandbox.report())
            try:
                code, timed_out = proc.wait(timeout=remaining), False
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code, timed_out = None, True
        _reap()
        with open(base + ".out", "rb") as handle:
            output = handle.read(OUTPUT_LIMIT).decode("utf-8", "replace")
        digest = hashlib.sha256(normalize_output(output).encode("utf-8")).hexdigest()
        results.append({"case": index, "exit": code, "timed_out": timed_out, "digest": digest,
                        "head": output.strip()[:200], "stderr": _tail(base + ".err", 400)})
        if timed_out or code != 0 or digest != case["digest"]:
            stopped = "failed"
            break
    emit("cases", {"results": results, "stopped": stopped})


def _watchdog(seconds):
    """End this process (and, as PID 1, its namespace) at the deadline even if the grader that
    should kill it is gone."""
    import threading

    def expire():
        time.sleep(seconds)
        os._exit(75)

    threading.Thread(target=expire, daemon=True).start()


# --- the warm runner: HumanEval and MBPP at the cost of a few forks (docs/functional.md) ----------
#
# ``harness.py serve`` runs once per grading thread. Before it reads anything from the grader it
# forks the *zygote*, which confines itself once (a root of its own, user, mount and IPC namespaces)
# and then forks each sample's process, ahead of time and one at a time: the zygote never holds a
# key, a problem, a test or a sample. The runner compiles each problem's code once; for each sample
# it takes the next sample process from the zygote and forks a fresh *checker* from itself, which
# runs the problem's own code and the checks against that process and signs the verdict with the
# sample's own key. The sample's clock starts when its process is taken.

CLONE_NEWPID = 0x20000000
PR_SET_NO_NEW_PRIVS = 38
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
    import signal
    ctypes, libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
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
        if sandbox.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC) != 0:
            sandbox._fail("unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC)")
        for name, text in (("setgroups", "deny"), ("uid_map", "1000 1000 1"), ("gid_map", "1000 1000 1")):
            with open("/proc/self/" + name, "w") as handle:
                handle.write(text)
        if sandbox.libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            sandbox._fail("mount --make-rprivate /")
        for place in ("/tmp", "/dev/shm", sandbox.writable):  # outermost first
            sandbox._scratch(sandbox.root + place)
        covered = sandbox.kept_under(("/tmp", "/dev/shm"))  # an interpreter kept in /tmp: shown again, read-only
        if covered:
            sandbox._bind_kept(covered)
            for path in covered:
                if not os.path.islink(path):
                    sandbox._remount_read_only(sandbox.root + path, [])
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
        proc = (sandbox.root + "/proc").encode("utf-8", "surrogateescape")
        if sandbox.libc.mount(b"proc", proc, b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
            sandbox._fail("mount -t proc /proc")
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
        sandbox._fail("capset")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        sandbox._fail("prctl(PR_SET_NO_NEW_PRIVS)")
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
            sandbox._fail("chroot " + sandbox.root)
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


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:2] == ["serve"]:
        serve(here)
        os._exit(0)
    key, spec = _load(here)
    emit = _signer(key)
    del key
    _watchdog(float(spec.get("deadline", 3600)))
    emit("ready", {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "pid_namespace": os.getpid() == 1})
    _limit()
    if spec["style"] == "livecodebench":
        _run_stdin(spec, emit, here)
    elif spec.get("isolation") == "split":
        _run_split(spec, emit, here)
    else:
        _run_module(spec, emit, here)
    os._exit(0)

'''
MAIN: Final = '''  # both scripts end with it: an error in the script itself exits 70
if __name__ == "__main__":
    try:
        main()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)
'''


# --- the sample process ---------------------------------------------------------------------------


SERVER: Final = r'''"""objective-score sample process: runs one sample's code and answers the checker's calls.

One JSON line in, one JSON line out, on the pipes the checker gave as stdin and stdout (the
sample's own stdin and stdout are /dev/null and stderr). Only plain data crosses; any other
result stays here behind a handle (docs/functional.md). Python 3.6 and later.
"""
import base64
import json
import os
import sys
import traceback
import types

'''
SERVE: Final = r'''

def _type_name(value):
    try:
        name = type(value).__name__
        return name if type(name) is str else "object"
    except BaseException:
        return "object"


def serve_sample():
    """The sample's side of a split run, on the pipes it was given as its stdin and stdout (in the
    sample process the checker started, or in the one the warm runner forked)."""
    incoming, outgoing = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    handles = {}

    def reply(message):
        outgoing.write(json.dumps(message).encode("utf-8") + b"\n")
        outgoing.flush()

    def read():
        line = incoming.readline()
        if not line:
            os._exit(0)
        return json.loads(line.decode("utf-8"))

    def keep(value):
        handles[len(handles)] = value
        return len(handles) - 1

    request = read()
    source = request["source"]
    sources = {"solution.py": source}
    try:  # on disk too, in its own directory, for code that reads its own source (inspect.getsource)
        with open("solution.py", "w", encoding="utf-8") as handle:
            handle.write(source)
    except (OSError, ValueError):
        pass
    try:
        code = compile(source, "solution.py", "exec")
    except BaseException as exc:
        reply({"error": describe_exception(exc, sources), "phase": "compile"})
        return
    module = types.ModuleType("solution")
    module.__file__ = os.path.abspath("solution.py")
    sys.modules["solution"] = module
    namespace = module.__dict__
    try:
        exec(code, namespace)
    except Exception as exc:
        reply({"error": describe_exception(exc, sources), "phase": "solution"})
        return
    except BaseException as exc:
        reply({"escaped": describe_exception(exc, sources)})
        return
    names = {}
    for name in request["names"]:
        if name not in namespace:
            names[name] = {"kind": "missing"}
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType) and type(getattr(value, "__name__", None)) is str:
            names[name] = {"kind": "module", "module": value.__name__}
            continue
        if callable(value):
            names[name] = {"kind": "callable"}
            continue
        try:
            names[name] = {"kind": "value", "value": encode_plain(value)}
        except Exception:
            names[name] = {"kind": "ref", "ref": keep(value), "type": _type_name(value)}
    reply({"names": names})
    while True:
        request = read()
        target = request["target"]
        function = namespace.get(target) if type(target) is str else handles.get(target["ref"])
        args = [decode_plain(item, handles.__getitem__) for item in request["args"]]
        kwargs = dict((key, decode_plain(item, handles.__getitem__)) for key, item in request["kwargs"].items())
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            kind = type(exc)
            reply({"raised": _type_name(exc), "module": getattr(kind, "__module__", None) if type(getattr(kind, "__module__", None)) is str else None,
                   "detail": describe_exception(exc, sources)})
            continue
        except BaseException as exc:
            reply({"escaped": describe_exception(exc, sources)})
            return
        try:
            reply({"value": encode_plain(result)})
        except Exception:
            reply({"ref": keep(result), "type": _type_name(result)})


'''
SERVER_MAIN: Final = '''
def main():
    serve_sample()

'''


def _shared_functions() -> str:
    return "\n\n".join(inspect.getsource(f) for f in (encode_plain, decode_plain, describe_exception)) + "\n\n"


@functools.lru_cache(maxsize=1)
def harness_source() -> str:
    """The checker script: :data:`HARNESS`, the shared functions, the very :func:`normalize_output`
    the grader compares with, and main."""
    compare = inspect.getsource(canonical_line) + "\n\n" + inspect.getsource(normalize_output)
    from .sandbox import shared_source

    return HARNESS + SERVE + _shared_functions() + shared_source() + compare + MAIN


@functools.lru_cache(maxsize=1)
def server_source() -> str:
    """The sample process's script: :data:`SERVER` and the shared functions."""
    return SERVER + SERVE + SERVER_MAIN + _shared_functions() + MAIN


def _trees(texts: list[str]) -> list[ast.Module]:
    trees = []
    for text in texts:
        try:
            trees.append(ast.parse(text))
        except (SyntaxError, ValueError):
            continue
    return trees


def sample_names(problem: Problem) -> list[str]:
    """The names the checks read (sorted): the checker asks the sample's process for those the
    problem's own code does not define and that are not builtins, and always for the entry point."""
    names = {problem.entry_point} if problem.entry_point else set()
    for tree in _trees([problem.test, *problem.asserts]):
        names.update(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))
    return sorted(n for n in names if n == problem.entry_point or not hasattr(builtins, n))


def imported_modules(problem: Problem) -> list[str]:
    """Every module the problem's own code imports, anywhere (HumanEval/32 imports inside check):
    the checker imports them all before the sample's process starts."""
    modules: set[str] = set()
    for tree in _trees([problem.prompt, problem.test, *problem.imports, *problem.asserts]):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module)
    return sorted(modules)


def harness_spec(problem: Problem, sample: Sample, timeout: float, isolation: str = "split") -> dict[str, Any]:
    """What the harness needs to run one sample. A stdin problem's expected outputs stay with the
    grader: the harness only gets their digests (to stop at the first wrong case). ``isolation``
    ``split`` runs a HumanEval or MBPP sample in its own process; ``shared`` in the checker's."""
    program = program_of(problem, sample)
    deadline = process_timeout(problem, timeout) + DEADLINE_GRACE
    if problem.style == "livecodebench":
        return {"style": problem.style, "program": program, "budget": timeout, "deadline": deadline,
                "cases": [{"input": case.input, "digest": output_digest(case.output)} for case in problem.cases]}  # fmt: skip
    spec = {"style": problem.style, "solution": program, "test": problem.test, "entry_point": problem.entry_point,
            "asserts": list(problem.asserts), "imports": list(problem.imports), "test_classes": list(problem.test_classes),
            "isolation": "split" if isolation == "split" and problem.style in SPLIT_STYLES else "shared",
            "deadline": deadline, "timeout": timeout}  # fmt: skip
    if spec["isolation"] == "split":
        spec.update(names=sample_names(problem), modules=imported_modules(problem), server=server_source(),
                    prompt=problem.prompt if problem.style == "humaneval" else "")  # fmt: skip
    return spec


def problem_spec(problem: Problem) -> dict[str, Any]:
    """What the warm runner needs to load a HumanEval or MBPP problem once for all its samples: the
    split spec without the sample (``harness.py serve``, message ``problem``)."""
    if problem.style not in SPLIT_STYLES:
        raise ValueError(f"{problem.task_id}: a {problem.style} problem does not run split")
    spec = harness_spec(problem, Sample(problem.task_id, -1, 0, "solution", ""), 0.0)
    return {key: spec[key] for key in ("style", "test", "entry_point", "asserts", "imports", "names", "modules", "prompt")}


def preloaded(problems: Iterable[Problem]) -> list[str]:
    """The standard-library modules the HumanEval and MBPP problems' own code imports (``typing`` for
    most of HumanEval): the warm runner imports them once, before it forks anything, so no sample
    process pays for them. Any other module is imported where it is used, as before."""
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    names = {name for problem in problems if problem.style in SPLIT_STYLES for name in imported_modules(problem)}
    return sorted(name for name in names if name.split(".")[0] in stdlib)


def harness_files(problem: Problem, sample: Sample, timeout: float, key: str, isolation: str = "split") -> dict[str, str]:
    """The files one sample's run directory starts with: ``harness.py``, ``spec.json`` and ``key``."""
    spec = harness_spec(problem, sample, timeout, isolation)
    return {"harness.py": harness_source(), "spec.json": json.dumps(spec), "key": key}


def process_timeout(problem: Problem, timeout: float) -> float:
    """How long a cold harness process may run: the sample's own timeout, which the harness measures
    from the start of the sample's run (:func:`_sample_clock`; a stdin problem's cases share it from
    the moment the program compiled, and its harness gets :data:`STDIN_GRACE` more seconds to report
    which case ran out), plus :data:`STARTUP_GRACE` for the harness's own start-up."""
    return timeout + STARTUP_GRACE + (STDIN_GRACE if problem.style == "livecodebench" else 0.0)


def isolation_of(detail: dict[str, Any] | None) -> dict[str, Any]:
    """What a run's signed ``sandbox`` message says about where the sample ran; unknown without one."""
    if not detail or detail.get("isolation") not in ("separate", "separate-unconfined", "shared"):
        return {"isolation": None, "hostile_resistant": False, "detail": "the run ended before the sample's process started"}
    return {"isolation": detail["isolation"], "hostile_resistant": detail["isolation"] == "separate",
            "sample_process": detail.get("sample_process"), "detail": str(detail.get("detail", ""))}
