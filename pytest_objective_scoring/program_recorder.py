"""What runs inside a test process that is not pytest: the runner's results turned into signed facts.

Django's ``tests/runtests.py`` and ``python -m unittest`` report every test through unittest's
result protocol; SymPy's ``bin/test`` through its reporter (``PyTestReporter``). The boot module
(:mod:`.boot`) loads this file, staged read-only as ``_objective_scoring_program.py``, right after it
took the record's key and before ``site`` runs: before any module of the environment or of the
repository. :func:`install` then wraps, at the class:

* **unittest**: ``TestResult.startTestRun`` / ``stopTestRun``, ``startTest`` / ``stopTest``, the
  ``add*`` family and ``addSubTest``. Every result class derived from it (``TextTestResult``,
  Django's) reports through them. Only the *main* run is recorded: the first result a run starts on
  while no other run is active; results made inside a test (Django's own tests of its runner run
  inner suites) are not the run's. A second top-level run is counted (``runs``), never merged.
* **SymPy**: ``PyTestReporter``'s ``entering_filename``, ``entering_test``, ``test_pass``,
  ``test_fail``, ``test_exception``, ``test_skip``, ``test_xfail``, ``test_xpass``,
  ``import_error`` and ``finish``, when SymPy's runner module (``sympy.testing.runtests``, or
  ``sympy.utilities.runtests`` before 1.6) is first imported (a finder first on ``sys.meta_path``).

It writes a ``case`` line a test (``{"type": "case", ...}``: the names that spell it, its outcome as
:mod:`.outcomes` names them, the first line of its error) and, through :func:`session`, the
``session`` line the boot module writes when the program ends. Every line goes through the boot's
channel: signed under the run's key, numbered; the grader refuses a record that is not
(:mod:`.testrecord`). Reading which test a listed id names, and everything else, is the grader's
(:mod:`.program_runs`).

Stdlib only and Python 3.5 syntax (Django 2.x environments are Python 3.5).
"""

import os
import sys
import time
import traceback

if False:  # type comments only
    from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: F401

MESSAGE_LIMIT = 400
CASE_LIMIT = 200000  # cases a run may record: a record is bounded (the grader reads at most 256 MB)

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
XFAILED, XPASSED, XPASSED_STRICT, INCOMPLETE = "xfailed", "xpassed", "xpassed_strict", "incomplete"
SEVERITY = (PASSED, XPASSED, XFAILED, SKIPPED, INCOMPLETE, XPASSED_STRICT, FAILED, ERROR)

UNITTEST_HOOKS = ("startTestRun", "stopTestRun", "startTest", "stopTest", "addSuccess", "addFailure", "addError",
                  "addSkip", "addExpectedFailure", "addUnexpectedSuccess", "addSubTest")
SYMPY_MODULES = ("sympy.testing.runtests", "sympy.utilities.runtests")
SYMPY_HOOKS = ("entering_filename", "entering_test", "test_pass", "test_fail", "test_exception", "test_skip",
               "test_xfail", "test_xpass", "import_error", "finish")


def _clip(text):
    # type: (str) -> str
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


def _message(err):
    # type: (Any) -> str
    """The first line an exception prints (``AssertionError: 1 != 2``), clipped."""
    try:
        lines = traceback.format_exception_only(err[0], err[1])
        text = "".join(lines).strip().splitlines()
        return _clip(text[-1] if text else "")
    except Exception:
        return "<the exception could not be shown>"


def _worst(outcomes):
    # type: (List[str]) -> str
    return max(outcomes, key=SEVERITY.index) if outcomes else INCOMPLETE


class Program(object):
    """The facts of one program run, written through the boot's channel."""

    def __init__(self, channel, runner):
        # type: (Any, str) -> None
        self.channel = channel
        self.runner = runner
        self.cases = 0
        self.runs = 0  # top-level runs started (unittest: startTestRun; sympy: files entered imply one)
        self.finished = False  # the runner reached its end (stopTestRun of the main run, SymPy's finish)
        self.installed = {}  # type: Dict[str, Any]  # (owner.attribute) -> our wrapper, checked at the end
        self.unstopped = []  # type: List[Dict[str, Any]]

    def case(self, fact):
        # type: (Dict[str, Any]) -> None
        if self.cases >= CASE_LIMIT:
            return
        self.cases += 1
        fact["type"] = "case"
        self.channel.write(fact)

    def replaced(self):
        # type: () -> List[str]
        """Our wrappers no longer in place at the end: something replaced the runner's reporting."""
        found = []
        for name, wrapper in sorted(self.installed.items()):
            owner, _, attr = name.rpartition(".")
            cls = _OWNERS.get(owner)
            if cls is not None and cls.__dict__.get(attr) is not wrapper:
                found.append("%s: replaced after the recorder wrapped it" % name)
        return found


_OWNERS = {}  # type: Dict[str, Any]


def _wrap(owner, name, before, after=None):
    # type: (Any, str, Callable[..., None], Optional[Callable[..., None]]) -> Any
    original = owner.__dict__[name]

    def wrapper(self, *args, **kwargs):
        # type: (Any, *Any, **Any) -> Any
        try:
            before(self, *args)
        except Exception:
            pass
        result = original(self, *args, **kwargs)
        if after is not None:
            try:
                after(self, *args)
            except Exception:
                pass
        return result

    wrapper.__name__ = getattr(original, "__name__", name)
    wrapper.__qualname__ = getattr(original, "__qualname__", name)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    setattr(owner, name, wrapper)
    return wrapper


# --------------------------------------------------------------------------- unittest


class Unittest(object):
    """unittest's result protocol, for the main run only."""

    def __init__(self, program):
        # type: (Program) -> None
        self.program = program
        self.main = None  # type: Any  # the result of the top-level run under way
        self.open = {}  # type: Dict[int, Dict[str, Any]]

    def names(self, test):
        # type: (Any) -> Dict[str, Any]
        """What spells a test: its method, its class's path, unittest's ``str()``, its docstring's first line."""
        cls = type(test)
        fact = {"name": getattr(test, "_testMethodName", None),
                "cls": "%s.%s" % (getattr(cls, "__module__", "?"), getattr(cls, "__qualname__", cls.__name__))}
        for key, read in (("str", lambda: str(test)), ("id", lambda: test.id()), ("doc", lambda: test.shortDescription())):
            try:
                value = read()
            except Exception:
                value = None
            fact[key] = value if isinstance(value, str) else None
        return fact

    def ours(self, result):
        # type: (Any) -> bool
        return result is self.main and result is not None

    def start_run(self, result):
        # type: (Any) -> None
        if self.main is None:
            self.main = result
            self.program.runs += 1
        elif not self.open:  # not inside a test of the main run: another top-level run, counted
            self.program.runs += 1

    def stop_run(self, result):
        # type: (Any) -> None
        if self.ours(result):
            for key in list(self.open):
                self.flush(self.open.pop(key), INCOMPLETE, "the run stopped before the test did")
            self.main = None
            self.program.finished = True

    def start(self, result, test):
        # type: (Any, Any) -> None
        if not self.ours(result):
            return
        state = self.names(test)
        state.update(outcomes=[], message="", subtests=[], started=time.time())
        self.open[id(test)] = state

    def stop(self, result, test):
        # type: (Any, Any) -> None
        if not self.ours(result):
            return
        state = self.open.pop(id(test), None)
        if state is not None:
            self.flush(state)

    def flush(self, state, outcome=None, message=""):
        # type: (Dict[str, Any], Optional[str], str) -> None
        outcomes = list(state.pop("outcomes"))
        failed_subtests = [o for o, _ in state["subtests"] if o in (FAILED, ERROR)]
        if not outcomes and failed_subtests:
            outcomes = failed_subtests  # a failing subtest: unittest reports no outcome of the test itself
        elif outcomes and outcomes[-1] != XFAILED:
            outcomes += failed_subtests
        if outcome is not None:
            outcomes.append(outcome)
        state["outcome"] = _worst(outcomes)
        state["message"] = state["message"] or message or next((m for o, m in state["subtests"] if m), "")
        state["subtests"] = [[o, m] for o, m in state["subtests"][:20]]
        state["duration"] = round(time.time() - state.pop("started"), 6)
        self.program.case(state)

    def add(self, result, test, outcome, err=None, reason=None):
        # type: (Any, Any, str, Any, Optional[str]) -> None
        if not self.ours(result):
            return
        parent = getattr(test, "test_case", None)
        if parent is not None and type(test).__name__ == "_SubTest":  # a subtest skipped, say: its parent's
            state = self.open.get(id(parent))
            if state is not None:
                state["subtests"].append((outcome, _message(err) if err else (reason or "")))
            return
        state = self.open.get(id(test))
        if state is None:  # never started: a class or module fixture that raised (unittest's _ErrorHolder)
            fact = self.names(test)
            fact["holder"] = getattr(test, "description", None) or fact.get("str")
            fact.update(outcome=outcome, message=_message(err) if err else (reason or ""), duration=0.0)
            self.program.case(fact)
            return
        state["outcomes"].append(outcome)
        if not state["message"]:
            state["message"] = _message(err) if err else _clip(reason or "")

    def sub(self, result, test, subtest, err):
        # type: (Any, Any, Any, Any) -> None
        if not self.ours(result) or err is None:
            return
        state = self.open.get(id(test))
        if state is None:
            return
        failure = getattr(test, "failureException", AssertionError)
        outcome = FAILED if isinstance(err[0], type) and issubclass(err[0], failure) else ERROR
        try:
            where = subtest._subDescription()
        except Exception:
            where = ""
        state["subtests"].append((outcome, _clip(("%s %s" % (where, _message(err))).strip())))


def install_unittest(program):
    # type: (Program) -> Unittest
    import unittest.result

    hooks = Unittest(program)
    owner = unittest.result.TestResult
    _OWNERS["unittest.result.TestResult"] = owner
    wrappers = {  # type: Dict[str, Callable[..., None]]
        "startTestRun": lambda self: hooks.start_run(self),
        "startTest": lambda self, test: hooks.start(self, test),
        "addSuccess": lambda self, test: hooks.add(self, test, PASSED),
        "addFailure": lambda self, test, err: hooks.add(self, test, FAILED, err),
        "addError": lambda self, test, err: hooks.add(self, test, ERROR, err),
        "addSkip": lambda self, test, reason: hooks.add(self, test, SKIPPED, reason=str(reason)),
        "addExpectedFailure": lambda self, test, err: hooks.add(self, test, XFAILED, err),
        "addUnexpectedSuccess": lambda self, test: hooks.add(self, test, XPASSED_STRICT,
                                                             reason="unexpected success"),
        "addSubTest": lambda self, test, subtest, err: hooks.sub(self, test, subtest, err),
    }
    afters = {
        "stopTest": lambda self, test: hooks.stop(self, test),
        "stopTestRun": lambda self: hooks.stop_run(self),
    }  # type: Dict[str, Callable[..., None]]
    for name in UNITTEST_HOOKS:
        if name in owner.__dict__:
            wrapper = _wrap(owner, name, wrappers.get(name, lambda self, *args: None), afters.get(name))
            program.installed["unittest.result.TestResult." + name] = wrapper
    return hooks


# --------------------------------------------------------------------------- SymPy


class Sympy(object):
    """SymPy's reporter: a result a test, after ``entering_test``."""

    def __init__(self, program):
        # type: (Program) -> None
        self.program = program
        self.file = None  # type: Optional[str]
        self.test = None  # type: Optional[str]
        self.started = 0.0

    def enter_file(self, reporter, filename, *args):
        # type: (Any, str, *Any) -> None
        self.file = filename
        if self.program.runs == 0:
            self.program.runs = 1

    def enter_test(self, reporter, function):
        # type: (Any, Any) -> None
        self.test = getattr(function, "__name__", None) or str(function)
        self.started = time.time()

    def result(self, outcome, message=""):
        # type: (str, str) -> None
        if self.test is None:
            return
        self.program.case({"file": self.file, "name": self.test, "outcome": outcome, "message": _clip(message),
                           "duration": round(time.time() - self.started, 6)})
        self.test = None

    def import_error(self, reporter, filename, err):
        # type: (Any, str, Any) -> None
        self.program.case({"file": filename, "name": None, "import_error": True, "outcome": ERROR,
                           "message": _message(err), "duration": 0.0})

    def finish(self, reporter):
        # type: (Any) -> None
        if self.test is not None:
            self.result(INCOMPLETE, "the run finished before the test reported a result")
        self.program.finished = True


def _sympy_hooks(hooks):
    # type: (Sympy) -> Dict[str, Callable[..., None]]
    return {
        "entering_filename": hooks.enter_file,
        "entering_test": hooks.enter_test,
        "test_pass": lambda reporter, *args: hooks.result(PASSED),
        "test_fail": lambda reporter, err, *args: hooks.result(FAILED, _message(err)),
        "test_exception": lambda reporter, err, *args: hooks.result(ERROR, _message(err)),
        "test_skip": lambda reporter, *args: hooks.result(SKIPPED, str(args[0]) if args and args[0] else ""),
        "test_xfail": lambda reporter, *args: hooks.result(XFAILED),
        "test_xpass": lambda reporter, *args: hooks.result(XPASSED, str(args[0]) if args else ""),
        "import_error": hooks.import_error,
    }


def patch_sympy_module(module, program, hooks):
    # type: (Any, Program, Sympy) -> None
    """Wrap the reporter of SymPy's runner module, just imported."""
    reporter = getattr(module, "PyTestReporter", None)
    if not isinstance(reporter, type):
        return
    key = "%s.PyTestReporter" % module.__name__
    _OWNERS[key] = reporter
    before = _sympy_hooks(hooks)
    for name in SYMPY_HOOKS:
        if name not in reporter.__dict__:
            continue
        if name == "finish":
            wrapper = _wrap(reporter, name, lambda self, *args: None, hooks.finish)
        else:
            wrapper = _wrap(reporter, name, before[name])
        program.installed["%s.%s" % (key, name)] = wrapper


class _SympyFinder(object):
    """First on ``sys.meta_path``: when SymPy's runner module is imported, its reporter is wrapped
    right after the module ran, before anything can use it."""

    def __init__(self, program, hooks):
        # type: (Program, Sympy) -> None
        self.program, self.hooks, self.busy = program, hooks, False

    def find_spec(self, name, path=None, target=None):
        # type: (str, Any, Any) -> Any
        if name not in SYMPY_MODULES or self.busy:
            return None
        self.busy = True
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, program, hooks = spec.loader, self.program, self.hooks

        class Loader(object):
            def create_module(self, spec):
                # type: (Any) -> Any
                return loader.create_module(spec)

            def exec_module(self, module):
                # type: (Any) -> None
                loader.exec_module(module)
                patch_sympy_module(module, program, hooks)

        spec.loader = Loader()  # type: ignore[assignment]
        return spec

    def find_module(self, name, path=None):  # Python < 3.4 finders' API: never used here
        # type: (str, Any) -> None
        return None


def install_sympy(program):
    # type: (Program) -> Sympy
    hooks = Sympy(program)
    sys.meta_path.insert(0, _SympyFinder(program, hooks))
    return hooks


# --------------------------------------------------------------------------- the session


def install(channel, runner):
    # type: (Any, str) -> Program
    """Start recording a ``runner`` run (``django`` and ``unittest``: the result protocol; ``sympy``:
    its reporter) on the boot's channel."""
    program = Program(channel, runner)
    if runner == "sympy":
        install_sympy(program)
    else:
        install_unittest(program)
    return program


def _inside(path, root):
    # type: (Optional[str], Optional[str]) -> bool
    if not path or not root:
        return False
    path = os.path.realpath(path)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def module_origins(names):
    # type: (List[str]) -> Dict[str, Optional[str]]
    """Where each imported top-level package of ``names`` came from."""
    origins = {}  # type: Dict[str, Optional[str]]
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        path = getattr(module, "__file__", None)
        if path is None:
            paths = list(getattr(module, "__path__", []) or [])
            path = paths[0] if paths else None
        origins[name] = os.path.realpath(path) if isinstance(path, str) else None
    return origins


def foreign_modules(original, copy, limit=20):
    # type: (Optional[str], Optional[str], int) -> Dict[str, str]
    """Modules imported from the user's checkout instead of the graded copy (runs without a sandbox)."""
    if not original:
        return {}
    root = os.path.realpath(original)
    prefixes = [os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix))]
    found = {}  # type: Dict[str, str]
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not _inside(path, root) or _inside(path, copy):
            continue
        if any(_inside(path, p) for p in prefixes):
            continue
        parts = os.path.realpath(path).split(os.sep)
        if "site-packages" not in parts and "dist-packages" not in parts:
            found[name] = os.path.realpath(path)
            if len(found) >= limit:
                break
    return found


def installed_distributions():
    # type: () -> List[str]
    found = set()  # type: set
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(n for n in names if n.endswith((".dist-info", ".egg-info")))
    return sorted(found)


def session(program, exitstatus, environ):
    # type: (Program, int, Dict[str, str]) -> Dict[str, Any]
    """The ``session`` line: how the program ended and what it ran with."""
    import platform

    copy = environ.get("OBJECTIVE_SCORING_COPY")
    names = [n for n in environ.get("OBJECTIVE_SCORING_PACKAGES", "").split(os.pathsep) if n]
    return {
        "type": "session",
        "runner": program.runner,
        "exitstatus": exitstatus,
        "finished": program.finished,
        "runs": program.runs,
        "cases": program.cases,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": sys.platform + "-" + platform.machine(),
        "module_origins": module_origins(names),
        "foreign_modules": foreign_modules(environ.get("OBJECTIVE_SCORING_ORIGINAL"),
                                           os.path.realpath(copy) if copy else None),
        "patched_internals": program.replaced(),
        "distributions": installed_distributions(),
    }
