"""How the test interpreter starts: the recorder first, then ``site``, then the repository and pytest.

The runner starts the test process as ``python -I -S -B _objective_scoring_boot.py PYTEST-ARGS``
(isolated: no ``PYTHON*`` variable is read, no user site, neither the current directory nor the
script's on the path, no ``site`` yet, no bytecode written). This file, copied into the run's
read-only tools folder, then in this order:

1. takes the record's key from standard input and the record's descriptor number from the
   environment (out of which it is removed), and binds the signing functions, before any module of
   the environment or of the repository can run;
2. installs a permanent audit hook (PEP 578) that writes a signed ``signal`` line whenever code of
   the graded copy replaces the code of a function of the judge (pytest, pluggy, unittest, the
   recorder) or of the repository (a test), calls the garbage collector's object walkers, or
   opens a listed test file for writing (class attributes raise no audit event: the recorder
   compares every pytest, pluggy and unittest attribute at the session's end); these are signals, never verdicts: the runner counts one against a candidate only when
   the control run does not show it too;
3. runs ``site`` (the environment's own ``.pth`` files and ``sitecustomize``; the copy is not on the
   path yet, so no module of the copy can stand in for one), unless the process was forked from a
   warm test process (:mod:`.warm_server`) that ran it, and pytest's import, before it forked;
4. puts the copy's import roots first on the path (as ``python -m pytest`` from the copy would) and
   runs pytest as ``python -m pytest`` does; the recorder, loaded by pytest (``-p``), takes the
   channel from this module once.

For a runner other than pytest (``OBJECTIVE_SCORING_RUNNER``: ``django``, ``sympy``, ``unittest``)
step 2 also loads the program recorder (:mod:`.program_recorder`, staged beside this file), which
wraps unittest's result protocol or SymPy's reporter before ``site`` runs, and step 4 runs the
repository's own program instead of pytest: a script (``tests/runtests.py``, ``bin/test``) as
``python SCRIPT`` runs it (its folder first on the path) or a module (``-m unittest``) as ``python -m``
does (the current folder first). When it ends, this module writes the run's ``session`` line (how it
ended, what it imported from where, whether the recorder's wrappers are still in place) and exits
with the program's status; a process that ends any other way leaves no session, so no verdict.

Stdlib only and Python 3.8 syntax (the environment under test may be old); the first lines import
nothing the copy could supply.
"""

import os
import sys

if False:  # type comments only: nothing more is imported before the key is taken
    from typing import Any, Dict, List, Optional, Set, Tuple  # noqa: F401

_PREFIX = "OBJECTIVE_SCORING_"


def _key():
    # type: () -> bytes
    """The record's key from standard input (it is in no environment, not even /proc/self/environ)."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(0, 256 - len(data))
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", "replace").strip().encode("ascii")


_FD = os.environ.pop(_PREFIX + "RECORD_FD", None)
_PATH = os.environ.pop(_PREFIX + "RECORD", None)  # a container engine that passes no descriptor (docker)
os.environ.pop(_PREFIX + "RECORD_KEY_STDIN", None)
_KEY = _key() if _FD is not None or _PATH else b""

import hashlib  # noqa: E402 (everything after the key: still before the copy is on the path)
import hmac  # noqa: E402
import json  # noqa: E402


class Channel(object):
    """The record: every line ``MAC JSON`` with its sequence number, the MAC an HMAC-SHA256 under the
    run's key (the same format as the recorder's ``record_line``; the grader checks both)."""

    def __init__(self, handle, key, _dumps=json.dumps, _new=hmac.new, _sha256=hashlib.sha256):
        # type: (Any, bytes, Any, Any, Any) -> None
        self.handle, self.seq = handle, 0

        def sign(seq, record):
            # type: (int, Dict[str, Any]) -> str
            text = _dumps(dict(record, seq=seq), ensure_ascii=False, sort_keys=True)  # type: str
            return _new(key, text.encode("utf-8"), _sha256).hexdigest() + " " + text  # type: ignore[no-any-return]

        self.sign = sign

    def write(self, record):
        # type: (Dict[str, Any]) -> None
        self.handle.write(self.sign(self.seq, record) + "\n")
        self.seq += 1
        self.handle.flush()


if _FD is not None:
    CHANNEL = Channel(os.fdopen(int(_FD), "a", encoding="utf-8"), _KEY)  # type: Any  # a Channel, then Sealed
elif _PATH:
    CHANNEL = Channel(open(_PATH, "a", encoding="utf-8"), _KEY)
else:
    CHANNEL = None
del _KEY

RECORD_EVENT = "objective_scoring.record"


class Sealed(object):
    """What the recorders write through once the channel is sealed in the audit hook: the record's
    file and key are held by the hook alone (which nothing in Python can list: reaching it takes the
    garbage collector's walkers or reading memory, each a signal), and a line is written by raising
    an audit event the hook answers. Code of the copy that raises it, or calls a recorder's hook
    with made-up reports, is on the stack when the hook writes: a signal in a pytest run."""

    def __init__(self, _audit=getattr(sys, "audit", None)):
        # type: (Any) -> None
        self._audit = _audit  # bound now: replacing sys.audit later changes nothing

    def write(self, record):
        # type: (Dict[str, Any]) -> None
        self._audit(RECORD_EVENT, record)


WALKERS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents")
# reading the process's memory another way than through objects: what a forger after the key needs
MEMORY = ("ctypes.string_at", "ctypes.wstring_at", "ctypes.cdata", "ctypes.cdata/buffer")
TRACERS = ("sys.settrace", "sys.setprofile", "sys.monitoring.register_callback")
# file operations that change a path without opening it for writing: (event, how many path arguments)
PATH_EVENTS = {"os.rename": 2, "os.link": 2, "os.symlink": 2, "os.chmod": 1, "os.chown": 1, "os.remove": 1,
               "os.rmdir": 1, "os.truncate": 1, "os.utime": 1, "shutil.rmtree": 1}
JUDGE = ("_pytest", "pytest", "pluggy", "unittest", "_objective_scoring_recorder", "_objective_scoring_boot")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Watch(object):
    """The audit hook: what code of the graded copy did to the judge. Each signal is written once,
    keyed by what it touched and which file and function of the copy did it (no line numbers, no
    addresses: the control run must be able to show the very same signal)."""

    def __init__(self, channel, copy, guarded, checked=True, _getframe=sys._getframe, _realpath=os.path.realpath):
        # type: (Optional[Channel], Optional[str], List[str], bool, Any, Any) -> None
        self.channel, self.busy, self.checked = channel, False, checked
        self.seen = set()  # type: Set[Tuple[str, str, str]]
        self.places = {}  # type: Dict[str, Optional[str]]
        self.copy = _realpath(copy).rstrip(os.sep) + os.sep if copy else None
        self.guarded = set(_realpath(os.path.join(copy, g)) for g in guarded) if copy else set()
        # the folders that hold them (a rename or a mode change of a folder reaches every file in it)
        self.folders = set()  # type: Set[str]
        for path in self.guarded:
            folder = os.path.dirname(path)
            while self.copy and (folder + os.sep).startswith(self.copy) and folder + os.sep != self.copy:
                self.folders.add(folder)
                folder = os.path.dirname(folder)
        self._getframe, self._realpath = _getframe, _realpath
        tmp = os.environ.get("TMPDIR")
        self.tmp = _realpath(tmp).rstrip(os.sep) + os.sep if tmp and copy else ""

    def place(self, filename):
        # type: (str) -> Optional[str]
        """The copy-relative path of a code file, or None when it is not the copy's."""
        if filename in self.places:
            return self.places[filename]
        real = self._realpath(filename) if filename and not filename.startswith("<") else ""
        found = real[len(self.copy):] if self.copy and real.startswith(self.copy) else None
        self.places[filename] = found
        return found

    def private(self, filename):
        # type: (str) -> bool
        """Whether a file is in the run's own temporary folder (tests write and compile files there)."""
        return bool(self.tmp) and self._realpath(filename).startswith(self.tmp)

    def same_source(self, filename, source):
        # type: (str, Any) -> bool
        """Whether ``source`` is the text of the file ``filename`` names (a library compiling its own file)."""
        if not isinstance(source, (str, bytes)):
            return False
        try:
            with open(filename, "rb") as handle:
                text = handle.read(1 << 24)
        except (OSError, ValueError):
            return False
        return text == (source.encode("utf-8") if isinstance(source, str) else source)

    def protected(self, paths):
        # type: (Tuple[Any, ...]) -> Optional[str]
        """The copy-relative path of the first of ``paths`` that is a guarded file or a folder
        holding one (renamed, linked, removed or given another mode), else None."""
        if not self.guarded:
            return None
        for path in paths:
            if not isinstance(path, (str, bytes)):
                continue
            real = self._realpath(os.fsdecode(path))
            if real in self.guarded or real in self.folders:
                return real[len(self.copy):] if self.copy and real.startswith(self.copy) else real
        return None

    def culprit(self, judge_too=True):
        # type: (bool) -> Optional[str]
        """The innermost frame of the copy's code on the stack, as ``path:function``. With
        ``judge_too`` false, frames of the judge's own modules (pytest's, pluggy's: the very modules
        running, by their globals) do not count: they are the copy's only where the repository is
        pytest itself, whose code decides by design."""
        frame = self._getframe(2)
        judges = () if judge_too else self.judges()
        while frame is not None:
            where = self.place(frame.f_code.co_filename)
            if where is not None and not (judges and self._realpath(frame.f_code.co_filename).startswith(judges)):
                return "%s:%s" % (where, frame.f_code.co_name)
            frame = frame.f_back
        return None

    def judges(self):
        # type: () -> Tuple[str, ...]
        """The folders of the running pytest's and pluggy's packages (the copy's only in their own
        repositories, where the runner is the candidate's by design)."""
        found = []
        for name in ("_pytest", "pytest", "pluggy"):
            path = getattr(sys.modules.get(name), "__file__", None)
            if isinstance(path, str) and os.path.basename(path) == "__init__.py":
                found.append(os.path.dirname(self._realpath(path)) + os.sep)
        return tuple(found)

    def signal(self, kind, target, who=None):
        # type: (str, str, Optional[str]) -> None
        who = who or self.culprit()
        if who is None or self.channel is None:
            return
        key = (kind, target, who)
        if key in self.seen or len(self.seen) > 2000:
            return
        self.seen.add(key)
        self.channel.write({"type": "signal", "kind": kind, "detail": "%s by %s" % (target, who)})

    def record(self, args):
        # type: (Tuple[Any, ...]) -> None
        """A recorder's line: written under the key, with a signal first when code of the copy is on
        the stack (in a pytest run the recorder writes from pytest's own hook calls, never from the
        copy's code; a repository that is itself the test runner shows the same in its control run).
        The session line is the last: the file is closed after it."""
        channel = self.channel
        if channel is None or len(args) != 1 or not isinstance(args[0], dict):
            return
        if self.checked and self.copy is not None:
            self.busy = True
            try:
                who = self.culprit(judge_too=False)
                if who is not None:
                    self.signal("record_written_by_copy", "a line of the record", who)
            finally:
                self.busy = False
        channel.write(args[0])
        if args[0].get("type") == "session":
            self.channel = None
            try:
                channel.handle.close()
            except Exception:
                pass

    def __call__(self, event, args):
        # type: (str, Tuple[Any, ...]) -> None
        if event == RECORD_EVENT:
            self.record(args)
            return
        if self.busy or self.copy is None:
            return
        if event == "object.__setattr__":  # raised for a function's __code__ (not for class attributes:
            obj, name = args[0], args[1]  # the recorder compares those at the session's end)
            if name != "__code__" or len(args) < 3:
                return
            old, new = getattr(obj, "__code__", None), args[2]
            if old is None or (getattr(new, "co_code", None) == old.co_code and new.co_filename == old.co_filename):
                return  # the same code with other flags (types.coroutine, asyncio): no swap
            module = getattr(obj, "__module__", None) or ""
            if module.split(".", 1)[0] not in JUDGE and self.place(old.co_filename) is None:
                return  # neither the judge's code nor the repository's own (a test, say)
            target = "%s.%s" % (module or "?", getattr(obj, "__qualname__", "?"))
            kind = "code_replaced"
        elif event == "open":  # every open of the process: decoded once
            path, mode, flags = args
            if not isinstance(path, (str, bytes)):
                return
            name = os.fsdecode(path)
            if name.startswith("/proc/") and name.endswith("/mem"):
                target, kind = name, "memory_read"  # the process's memory, read as a file
            else:
                writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and flags & WRITE_FLAGS)
                if not writes or not self.guarded:
                    return
                real = self._realpath(name)
                if real not in self.guarded:
                    return
                target, kind = real[len(self.copy):], "test_file_written"
        elif event in WALKERS:
            target, kind = event, "objects_walked"
        elif event in MEMORY:
            target, kind = event, "memory_read"
        elif event == "compile" and len(args) == 2 and isinstance(args[1], str) and not args[1].startswith("<"):
            # code compiled under the name of a file outside the copy and the run's own temporary
            # folder, from other source than that file's: frames of such code would not show as the
            # copy's (the stack is how a forged record line is told apart)
            if not os.path.isabs(args[1]) or self.place(args[1]) is not None or self.private(args[1]) or \
                    self.same_source(args[1], args[0]):
                return
            target, kind = "compile as %s" % args[1], "code_disguised"
        elif event == "code.__new__":
            # a code object made by the copy's own code (libraries make them too, at import)
            caller = self._getframe(1)
            if caller is None or self.place(caller.f_code.co_filename) is None:
                return
            target, kind = "code.__new__ (types.CodeType, code.replace)", "code_disguised"
        elif event in TRACERS:
            # a trace or profile function sees (and may change) every frame, a test module's while it
            # is being defined among them: the copy's code has no business setting one during a run
            target, kind = event, "trace_set"
        elif event in PATH_EVENTS:
            changed = self.protected(args[:PATH_EVENTS[event]])
            if changed is None:
                return
            target, kind = "%s %s" % (event, changed), "protected_path_changed"
        else:
            return
        self.busy = True
        try:
            self.signal(kind, target)
        except Exception:
            pass
        finally:
            self.busy = False


def _codes(code, names, defined):
    # type: (Any, Dict[str, List[Any]], Set[str]) -> None
    """Every code object in ``code`` (a module's) by name, and the qualified names of what it defines
    (``Class.method``, ``function``; a function's own definitions under ``.<locals>.``)."""
    stack = [(code, "")]
    while stack:
        current, prefix = stack.pop()
        names.setdefault(current.co_name, []).append(current)
        for inner in current.co_consts:
            if hasattr(inner, "co_code"):
                qualname = prefix + inner.co_name
                defined.add(qualname)
                stack.append((inner, qualname + (".<locals>." if inner.co_flags & 1 else ".")))  # CO_OPTIMIZED: a function


def fingerprints(copy, guarded):
    # type: (Optional[str], List[str]) -> Dict[str, Dict[str, Any]]
    """The identity of every test function and class of the guarded Python files, fixed before any
    code of the environment or the repository runs: each file's pristine bytes and their plain
    compilation, ``{realpath: {"source", "names": {name: [code objects]}, "defined": {qualnames}}}``.
    The recorder adds the compilation with pytest's assertion rewriting when it loads (before any
    conftest) and compares the code of each item it runs with these (code objects compare by their
    bytecode, constants, names and lines: a function of another file, or compiled from other
    source under the test file's name, equals none of them)."""
    found = {}  # type: Dict[str, Dict[str, Any]]
    if not copy:
        return found
    for relative in guarded:
        if not relative.endswith(".py"):
            continue
        path = os.path.join(copy, relative)
        try:
            with open(path, "rb") as handle:
                source = handle.read()
        except OSError:
            continue
        codes, defined = {}, set()  # type: Dict[str, List[Any]], Set[str]
        try:
            _codes(compile(source, path, "exec", dont_inherit=True), codes, defined)
        except Exception:  # not Python this interpreter reads: pytest will say so
            continue
        found[os.path.realpath(path)] = {"source": source, "path": path, "names": codes, "defined": defined}
    return found


FINGERPRINTS = {}  # type: Optional[Dict[str, Dict[str, Any]]]  # taken once by the recorder


PROGRAM_MODULE = "_objective_scoring_program"


def _program_recorder(tools, runner):
    # type: (str, str) -> Any
    """The program recorder (``program_recorder.py``, staged in the tools folder), installed on the
    channel: loaded from its file, before ``site`` and before the copy is on the path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(PROGRAM_MODULE, os.path.join(tools, PROGRAM_MODULE + ".py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module, module.install(CHANNEL, runner)


def _exit_status(code):
    # type: (Any) -> int
    """What ``sys.exit(code)`` makes the process's status."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    return code if isinstance(code, int) else 1


def _run_program(argv, roots, recorder):
    # type: (List[str], List[str], Any) -> None
    """Run the repository's own test program (``SCRIPT ARGS`` or ``-m MODULE ARGS``) as ``python``
    would, then write the session line and exit with the program's status."""
    import runpy

    if argv[:1] == ["-m"] and len(argv) > 1:
        first, name = os.getcwd(), argv[1]
        sys.argv = [name] + argv[2:]

        def run():
            # type: () -> None
            runpy.run_module(name, run_name="__main__", alter_sys=True)
    else:
        script = os.path.abspath(argv[0])
        first = os.path.dirname(script)
        sys.argv = list(argv)

        def run():
            # type: () -> None
            runpy.run_path(script, run_name="__main__")
    for entry in [first] + roots:
        while entry in sys.path:
            sys.path.remove(entry)
    sys.path[0:0] = [first] + roots
    status = 0
    try:
        run()
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write("%s\n" % (exc.code,))
        status = _exit_status(exc.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    if recorder is not None and CHANNEL is not None:
        module, program = recorder
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        CHANNEL.write(module.session(program, status, dict(_ENVIRON)))
    sys.exit(status)


_ENVIRON = {k: v for k, v in os.environ.items() if k.startswith(_PREFIX)}  # as the grader set them


def main():
    # type: () -> None
    copy = os.environ.get(_PREFIX + "COPY")
    guarded = [g for g in os.environ.get(_PREFIX + "GUARDED", "").split(os.pathsep) if g]
    runner = os.environ.pop(_PREFIX + "RUNNER", "pytest")
    global CHANNEL
    if CHANNEL is not None and hasattr(sys, "addaudithook"):
        # the channel is sealed in the audit hook: from now on no name of this module (or of any
        # other) refers to it, and the recorders write through audit events. A program runner's
        # records are written from inside the repository's own runner (its frames are on the stack
        # by design): there the console is the cross-check, not the stack.
        sys.addaudithook(Watch(CHANNEL, copy, guarded, checked=runner == "pytest"))
        CHANNEL = Sealed()
    tools = os.path.dirname(os.path.abspath(__file__))
    recorder = _program_recorder(tools, runner) if runner != "pytest" and CHANNEL is not None else None
    if runner == "pytest" and CHANNEL is not None:  # before site: the pristine files, compiled by nothing else
        global FINGERPRINTS
        FINGERPRINTS = fingerprints(copy, guarded)
    if not sys.__dict__.pop("_objective_scoring_warm", False):  # a warm test process (warm_server.py) ran it once
        import site

        site.main()
    roots = [r for r in os.environ.get(_PREFIX + "IMPORT_ROOTS", "").split(os.pathsep) if r]
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8", errors="backslashreplace")
    if runner != "pytest":
        _run_program(sys.argv[1:], roots, recorder)
    for entry in [os.getcwd(), tools] + roots:
        while entry in sys.path:
            sys.path.remove(entry)
    sys.path[0:0] = [os.getcwd(), tools] + roots
    # pytest imports the recorder itself (-p), so that it is no "module already imported" for the
    # assertion rewriter; the recorder takes the channel from here, once
    sys.modules["_objective_scoring_boot"] = sys.modules[__name__]
    import runpy

    sys.argv = ["-m"] + sys.argv[1:]
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
