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
SYMPY_HELPERS = ("sympy.testing.pytest", "sympy.utilities.pytest")  # raises, XFAIL, skip, XPass: the judge too
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
        self.snapshots = []  # type: List[Tuple[str, Any, Dict[str, Any], bool]]  # the judge's namespaces
        self.anomalies = []  # type: List[str]  # what the hooks saw that the runner never does

    def case(self, fact):
        # type: (Dict[str, Any]) -> None
        if self.cases >= CASE_LIMIT:
            return
        self.cases += 1
        fact["type"] = "case"
        self.channel.write(fact)

    def note(self, anomaly):
        # type: (str) -> None
        if anomaly not in self.anomalies and len(self.anomalies) < 50:
            self.anomalies.append(anomaly)

    def snapshot(self, prefix):
        # type: (str) -> None
        """Remember every function, class and class attribute of the loaded modules named ``prefix``
        (or below it), and the module objects themselves: the judge, as it is now."""
        for name, module in sorted(sys.modules.items()):
            if module is None or (name != prefix and not name.startswith(prefix + ".")):
                continue
            if any(taken == name for taken, _, _, _ in self.snapshots):
                continue
            space = getattr(module, "__dict__", None)
            if not isinstance(space, dict):
                continue
            self.snapshots.append((name, module, _callables(space), False))
            for attr, value in list(space.items()):
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    self.snapshots.append(("%s.%s" % (name, attr), value, _callables(value.__dict__), True))

    def replaced(self):
        # type: () -> List[str]
        """What changed in the judge since the recorder took it: our wrappers no longer in place, a
        module of the judge no longer the one imported, a function or class attribute replaced or
        removed, a callable added to one of its classes (``__init_subclass__``, say); and what the
        hooks saw that the runner never does."""
        found = []
        for name, wrapper in sorted(self.installed.items()):
            owner, _, attr = name.rpartition(".")
            cls = _OWNERS.get(owner)
            if cls is not None and cls.__dict__.get(attr) is not wrapper:
                found.append("%s: replaced after the recorder wrapped it" % name)
        for name, owner, before, is_class in self.snapshots:
            if not is_class and sys.modules.get(name) is not owner:
                found.append("%s: the module was replaced in sys.modules" % name)
                continue
            after = _callables(owner.__dict__)
            for attr, value in sorted(before.items()):
                label = "%s.%s" % (name, attr)
                if after.get(attr) is not value and not any(f.startswith(label + ":") for f in found):
                    found.append("%s: %s" % (label, "removed" if attr not in after else "replaced"))
            if is_class:
                found += ["%s.%s: added" % (name, attr) for attr in sorted(set(after) - set(before))]
        return (found + self.anomalies)[:50]


def _callables(space):
    # type: (Any) -> Dict[str, Any]
    return {k: v for k, v in list(space.items())
            if callable(v) or isinstance(v, (staticmethod, classmethod, property, type))}


_OWNERS = {}  # type: Dict[str, Any]
UNKNOWN = "<unknown origin>"


def code_file(function):
    # type: (Any) -> Optional[str]
    """The file a function's code belongs to, judged by its globals: the module whose namespace they
    are (a code object's own file name can be anything), or the ``__file__`` of a namespace no module
    owns (SymPy executes its test files in a dictionary of their own); None for a builtin."""
    function = getattr(function, "__func__", function)
    space = getattr(function, "__globals__", None)
    if not isinstance(space, dict):
        return None
    module = sys.modules.get(space.get("__name__") or "")
    found = getattr(module, "__file__", None) if getattr(module, "__dict__", None) is space else space.get("__file__")
    return os.path.realpath(found) if isinstance(found, str) else UNKNOWN


def _closes_over(wrapper, inner):
    # type: (Any, Any) -> bool
    for cell in getattr(wrapper, "__closure__", None) or ():
        try:
            if getattr(cell.cell_contents, "__func__", cell.cell_contents) is inner:
                return True
        except ValueError:  # an empty cell
            continue
    return False


def test_origin(function):
    # type: (Any) -> Optional[str]
    """The file of the code that runs as a test, through the environment's decorators
    (``unittest.skip``, ``mock.patch``): a ``__wrapped__`` is followed only from a function outside
    the copy that holds it in its closure (anyone can set ``__wrapped__``). The first function of
    the copy (or of no known file) decides; else the last wrapper followed."""
    copy = os.environ.get("OBJECTIVE_SCORING_COPY")
    root = os.path.realpath(copy).rstrip(os.sep) + os.sep if copy else None
    function = getattr(function, "__func__", function)
    found = code_file(function)
    for _ in range(20):
        if found is None or found == UNKNOWN or (root is not None and found.startswith(root)):
            return found
        inner = getattr(function, "__wrapped__", None)
        inner = getattr(inner, "__func__", inner)
        if inner is None or not _closes_over(function, inner):
            return found
        function, found = inner, code_file(inner)
    return found


def object_file(thing):
    # type: (Any) -> Optional[str]
    """Where a function, a class or an instance (its class) was defined."""
    if getattr(thing, "__globals__", None) is not None or getattr(getattr(thing, "__func__", None), "__globals__", None):
        return code_file(thing)
    cls = thing if isinstance(thing, type) else type(thing)
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    found = getattr(module, "__file__", None)
    return os.path.realpath(found) if isinstance(found, str) else None


def loader_of(module_name):
    # type: (str) -> Optional[str]
    """The file defining the loader that loaded a module (importlib's own: None)."""
    module = sys.modules.get(module_name or "")
    loader = getattr(getattr(module, "__spec__", None), "loader", None) or getattr(module, "__loader__", None)
    if loader is None or getattr(type(loader), "__module__", "") in ("_frozen_importlib_external", "_frozen_importlib",
                                                                      "importlib._bootstrap_external"):
        return None
    return object_file(loader) or UNKNOWN


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
        try:  # where the code that ran as the test is, and what loaded its module
            fact["origin"] = test_origin(getattr(cls, fact["name"] or "", None)) if fact["name"] else None
            fact["loader"] = loader_of(getattr(cls, "__module__", ""))
        except Exception:
            fact["origin"] = UNKNOWN
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
        elif not self.inside_a_test():  # not run by a test of the main run: another top-level run, counted
            self.program.runs += 1

    def inside_a_test(self):
        # type: () -> bool
        """Whether a test of the main run is running now (one of its frames is on the stack): a suite
        that test runs inside itself is not the program's run. A test merely started, never run
        (left open), does not count."""
        tests = [state.get("test") for state in self.open.values()]
        frame = sys._getframe(1)  # type: Any
        while frame is not None:
            holder = frame.f_locals.get("self")
            if holder is not None and any(holder is t for t in tests):
                return True
            frame = frame.f_back
        return False

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
        state.update(outcomes=[], message="", subtests=[], started=time.time(), test=test)
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
        state.pop("test", None)
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
    import unittest.main  # noqa: F401  (every module of unittest the runners use, loaded now: the judge)
    import unittest.runner  # noqa: F401

    program.snapshot("unittest")
    return hooks


# --------------------------------------------------------------------------- SymPy


class Sympy(object):
    """SymPy's reporter: a result a test, after ``entering_test``."""

    def __init__(self, program):
        # type: (Program) -> None
        self.program = program
        self.file = None  # type: Optional[str]
        self.test = None  # type: Optional[str]
        self.origin = None  # type: Optional[str]
        self.started = 0.0
        self.reporters = {}  # type: Dict[str, Any]  # module name -> the reporter class wrapped
        self.runner_globals = []  # type: List[Dict[str, Any]]

    def check(self, reporter):
        # type: (Any) -> None
        """The reporter is SymPy's own class, its methods not overridden on the instance."""
        if not any(type(reporter) is cls for cls in self.reporters.values()):
            self.program.note("the reporter is a %s.%s, not SymPy's PyTestReporter" % (
                type(reporter).__module__, type(reporter).__qualname__))
        overridden = sorted(set(getattr(reporter, "__dict__", {})) & set(SYMPY_HOOKS))
        if overridden:
            self.program.note("the reporter's own attributes override %s" % ", ".join(overridden))

    def caller(self):
        # type: () -> None
        """A result must come from SymPy's runner (its module's code), not from code elsewhere."""
        frame = sys._getframe(1)  # type: Any
        while frame is not None and frame.f_globals is globals():
            frame = frame.f_back
        if frame is not None and not any(frame.f_globals is space for space in self.runner_globals):
            self.program.note("a result was reported to SymPy's reporter from %s (%s), not from its runner" % (
                code_file_of_frame(frame), frame.f_code.co_name))

    def enter_file(self, reporter, filename, *args):
        # type: (Any, str, *Any) -> None
        self.check(reporter)
        self.file = filename
        if self.program.runs == 0:
            self.program.runs = 1

    def enter_test(self, reporter, function):
        # type: (Any, Any) -> None
        self.check(reporter)
        self.test = getattr(function, "__name__", None) or str(function)
        try:
            self.origin = test_origin(function)
        except Exception:
            self.origin = UNKNOWN
        self.started = time.time()

    def result(self, outcome, message=""):
        # type: (str, str) -> None
        if self.test is None:
            return
        self.caller()
        self.program.case({"file": self.file, "name": self.test, "outcome": outcome, "message": _clip(message),
                           "duration": round(time.time() - self.started, 6), "origin": self.origin})
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


def code_file_of_frame(frame):
    # type: (Any) -> str
    space = frame.f_globals
    module = sys.modules.get(space.get("__name__") or "")
    found = getattr(module, "__file__", None) if getattr(module, "__dict__", None) is space else space.get("__file__")
    return os.path.realpath(found) if isinstance(found, str) else UNKNOWN


def patch_sympy_module(module, program, hooks):
    # type: (Any, Program, Sympy) -> None
    """Wrap the reporter of SymPy's runner module, just imported; remember the harness as it is."""
    if module.__name__ in SYMPY_HELPERS:
        program.snapshot(module.__name__)
        return
    reporter = getattr(module, "PyTestReporter", None)
    if not isinstance(reporter, type):
        return
    key = "%s.PyTestReporter" % module.__name__
    _OWNERS[key] = reporter
    hooks.reporters[module.__name__] = reporter
    hooks.runner_globals.append(module.__dict__)
    before = _sympy_hooks(hooks)
    for name in SYMPY_HOOKS:
        if name not in reporter.__dict__:
            continue
        if name == "finish":
            wrapper = _wrap(reporter, name, lambda self, *args: None, hooks.finish)
        else:
            wrapper = _wrap(reporter, name, before[name])
        program.installed["%s.%s" % (key, name)] = wrapper
    program.snapshot(module.__name__)


class _SympyFinder(object):
    """First on ``sys.meta_path``: when SymPy's runner module is imported, its reporter is wrapped
    right after the module ran, before anything can use it."""

    def __init__(self, program, hooks):
        # type: (Program, Sympy) -> None
        self.program, self.hooks, self.busy = program, hooks, False

    def find_spec(self, name, path=None, target=None):
        # type: (str, Any, Any) -> Any
        if (name not in SYMPY_MODULES and name not in SYMPY_HELPERS) or self.busy:
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
        "import_hooks": import_hooks(),
        "distributions": installed_distributions(),
    }


def import_hooks():
    # type: () -> List[str]
    """The finders on ``sys.meta_path`` and the hooks on ``sys.path_hooks`` that are not Python's own
    nor ours, as ``file: name``: code that can serve a module other than its file."""
    ours = os.path.realpath(__file__) if "__file__" in globals() else None
    found = []
    for entry in list(sys.meta_path) + list(sys.path_hooks):
        try:
            where = object_file(entry)
        except Exception:
            where = UNKNOWN
        if where is None or where == ours:
            continue
        name = getattr(entry, "__qualname__", None) or type(entry).__qualname__
        found.append("%s: %s" % (where, name))
    return found[:20]
