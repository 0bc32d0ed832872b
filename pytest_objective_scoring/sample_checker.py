"""``harness.py``'s first part: the checker of a cold run (script text; ``docs/functional.md``).

The sample harness is one script, ``harness.py``, that :func:`.sample_harness.harness_source`
assembles and the grader writes into a fresh directory for a sample, run by the sample's own
interpreter (Python 3.6 and later, the standard library only: it never imports this package).
This part holds its docstring and imports, reads the spec and the key, signs the report, runs the
checks of a *cold run* (a HumanEval or MBPP sample split across two processes, a BigCodeBench one
in this process, each case of a LiveCodeBench program in a process of its own) and the script's
``main``. The processes that run a sample's code are started by :mod:`.sample_sandbox`'s part;
``harness.py serve``, the warm runner, is :mod:`.sample_warm`'s.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHECKER", "PROCESS_LIMIT"]

PROCESS_LIMIT: Final = 512
"""The tasks (processes and threads) one sample's run may have at once: its harness, checker and
every process it starts. A fork bomb stops there (its fork fails with EAGAIN: the sample's failure)
instead of filling the machine's process table; numpy's threads on a 256-core machine fit. The
script's ``PROCESS_LIMIT`` is this one (tests/test_faults_samples.py checks it)."""

CHECKER: Final = r'''"""objective-score sample harness: written by the grader for one sample (docs/functional.md).

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
PROCESS_LIMIT = 512  # the grader's sample_checker.PROCESS_LIMIT
OUTPUT_LIMIT = 64 * 1024 * 1024
REPLY_LIMIT = 64 * 1024 * 1024
DETAIL_LIMIT = 600
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


def _own_user_namespace():
    """Whether this process is in a user namespace other than the machine's first (its uid_map is not
    the whole identity map): a limit on its user's processes is counted there for that namespace only."""
    try:
        with open("/proc/self/uid_map") as handle:
            return handle.read().split() != ["0", "0", "4294967295"]
    except (OSError, ValueError):
        return False


def limit_processes():
    """RLIMIT_NPROC = PROCESS_LIMIT (soft and hard: it cannot be raised again) in a user namespace of
    this process's own, where the kernel counts it for that namespace alone (threads included): a fork
    bomb's fork then fails with EAGAIN instead of filling the machine's process table. Never in the
    machine's first namespace, where it would count every process of the user. The kernel exempts a
    process that is root outside its namespaces: the grader's pids cgroup limits those."""
    if not _own_user_namespace():
        return
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        value = PROCESS_LIMIT if hard == resource.RLIM_INFINITY else min(PROCESS_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_NPROC, (value, value))
    except (ImportError, AttributeError, ValueError, OSError):
        pass


def _limit():
    try:
        import resource
    except ImportError:
        return
    limit_processes()
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
