"""What runs inside the test process: turn pytest reports into plain facts.

This module is deliberately self-contained (stdlib and pytest only, Python 3.7+
syntax, hooks that exist since pytest 6.0) because the runner copies it, as
``_objective_scoring_recorder.py``, into the interpreter of the environment
under test, which may be a Python 3.9 virtualenv with pytest 6. The in-process
plugin imports the same functions, so one definition of a "fact" serves both.

A *fact* is a JSON-native dict describing one phase report::

    {"nodeid": ..., "when": "setup"|"call"|"teardown"|"???", "outcome": ...,
     "xfail": bool, "strict_xpass": bool, "raised_but_passed": bool,
     "duration": float, "message": str}

Loaded with ``-p _objective_scoring_recorder`` and ``OBJECTIVE_SCORING_RECORD``
set to a file path, it appends one JSON line per report (flushed, so a killed
run keeps what it saw) and a final ``session`` line.

Why over 800 lines: it is copied as one file into the environment under test, where nothing of
this package is importable, and everything the test process checks of its own judge lives here
(outcomes, test identity against the boot's fingerprints, run-time hooks and finders, patched
internals): splitting it would stage several files whose import order the copy's code could race.
"""

import os
import sys


def _take_key():
    # type: () -> str
    """First of all, before this module imports anything the graded copy could supply: the record's
    key, from standard input when the grader put it there (then it is in no process's environment,
    not even /proc/self/environ), else from the environment, out of which it is taken."""
    key = os.environ.pop("OBJECTIVE_SCORING_RECORD_KEY", "")
    if os.environ.pop("OBJECTIVE_SCORING_RECORD_KEY_STDIN", None):
        data = b""
        while not data.endswith(b"\n") and len(data) < 256:
            chunk = os.read(0, 256 - len(data))
            if not chunk:
                break
            data += chunk
        key = data.decode("ascii", "replace").strip()
    return key


_MODULES_BEFORE = set(sys.modules)
_KEY_TAKEN = _take_key()

import hashlib  # noqa: E402 (after the key is taken)
import hmac  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
from typing import Any, Dict, Generator, List, Optional, Tuple  # noqa: E402  # type comments: this file must parse on Python 3.7

import pytest

FLAGS_KEY = "objective_scoring"
ENV_RECORD = "OBJECTIVE_SCORING_RECORD"
ENV_RECORD_KEY = "OBJECTIVE_SCORING_RECORD_KEY"
ENV_ACTIVE = "OBJECTIVE_SCORING_ACTIVE"  # recording is on (workers flag their reports); not a secret
ENV_IMPORT_ROOTS = "OBJECTIVE_SCORING_IMPORT_ROOTS"
ENV_PACKAGES = "OBJECTIVE_SCORING_PACKAGES"
ENV_COPY = "OBJECTIVE_SCORING_COPY"
ENV_ORIGINAL = "OBJECTIVE_SCORING_ORIGINAL"
# pytest internals that decide an outcome: code replacing them from the graded copy is tampering.
INTERNALS = (
    ("_pytest.runner", "CallInfo", "from_call"),
    ("_pytest.runner", None, "call_and_report"),
    ("_pytest.runner", None, "runtestprotocol"),
    ("_pytest.runner", None, "pytest_runtest_makereport"),
    ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.python", "Function", "runtest"),
    ("_pytest.python", None, "pytest_pyfunc_call"),
    ("_pytest.unittest", "TestCaseFunction", "runtest"),
    ("_pytest.skipping", None, "pytest_runtest_makereport"),
    ("_pytest.main", "Session", "pytest_runtest_logreport"),
)
MESSAGE_LIMIT = 400


def _message(report):
    # type: (Any) -> str
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # skip: (path, lineno, reason)
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = getattr(crash, "message", None) or str(longrepr)
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


def fact_from_report(report):
    # type: (Any) -> Dict[str, Any]
    """The JSON-native fact for one TestReport (works on xdist-deserialised reports)."""
    when = getattr(report, "when", None) or "???"
    outcome = report.outcome
    longrepr = getattr(report, "longrepr", None)
    flags = report.__dict__.get(FLAGS_KEY) or {}
    return {
        "nodeid": report.nodeid,
        "when": when,
        "outcome": outcome,
        "xfail": hasattr(report, "wasxfail"),
        "strict_xpass": bool(
            outcome == "failed" and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]")
        ),
        "raised_but_passed": bool(flags.get("raised_but_passed")),
        "runtest_replaced": bool(flags.get("runtest_replaced")),
        "duration": float(getattr(report, "duration", 0.0) or 0.0),
        "message": _message(report) if outcome != "passed" else "",
    }


def _inside(path, root):
    # type: (Optional[str], Optional[str]) -> bool
    if not path or not root:
        return False
    path = os.path.realpath(path)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


UNKNOWN = "<unknown origin>"


def _origin(obj):
    # type: (Any) -> Optional[str]
    """The file of the module a function belongs to, judged by its globals.

    A code object's ``co_filename`` can be forged (``compile(src, "/usr/lib/x.py", ...)``);
    the globals a function runs with are those of the module that defined it. A
    function whose globals belong to no imported module (code run through ``exec``)
    is of unknown origin.
    """
    func = getattr(obj, "__func__", obj)
    for _ in range(10):
        inner = getattr(func, "func", None)  # functools.partial and friends
        if inner is None or inner is func:
            break
        func = getattr(inner, "__func__", inner)
    globs = getattr(func, "__globals__", None)
    if globs is None:
        return None  # a builtin or C function: not code the candidate wrote
    module = sys.modules.get(globs.get("__name__", ""))
    if module is None or getattr(module, "__dict__", None) is not globs:
        # rootless conftest.py files all import as ``conftest``: each replaces the last one in
        # sys.modules, but pytest keeps every one of them registered as a plugin
        module = _PLUGIN_MODULES.get(id(globs))
    if module is not None and getattr(module, "__dict__", None) is globs:
        return getattr(module, "__file__", None) or UNKNOWN
    return UNKNOWN


_PLUGIN_MODULES = {}  # type: Dict[int, Any]  # id(module.__dict__) -> every module pytest registered as a plugin


def pytest_plugin_registered(plugin):
    # type: (Any) -> None
    """Historic: called for every plugin pytest registers, before and after this one."""
    namespace = getattr(plugin, "__dict__", None)
    if isinstance(namespace, dict) and isinstance(getattr(plugin, "__file__", None), str):
        _PLUGIN_MODULES[id(namespace)] = plugin


def _function(obj):
    # type: (Any) -> Any
    return getattr(obj, "__func__", obj)


def _suspect(obj, root):
    # type: (Any, Optional[str]) -> bool
    origin = _origin(obj)
    return origin == UNKNOWN or _inside(origin, root)


def _copy_root():
    # type: () -> Optional[str]
    root = os.environ.get(ENV_COPY)
    return os.path.realpath(root) if root else None


def _runtests(item):
    # type: (Any) -> Any
    return (_function(item.__dict__.get("runtest")), _function(getattr(type(item), "runtest", None)))


def flag_report(report, call, item=None, root=None, objects=None, runtests=None):
    # type: (Any, Any, Any, Optional[str], Optional[Dict[str, Any]], Optional[Dict[str, Any]]) -> None
    """Mark a report that says passed although its phase raised, or whose test body was swapped.

    pytest never produces such reports by itself; they are the mark of a hook
    (a hostile ``conftest.py``, a patched plugin) rewriting outcomes, or of code
    from the graded copy replacing the item's ``runtest``.
    """
    flags = {}
    excinfo = getattr(call, "excinfo", None)
    if excinfo is not None and report.outcome == "passed" and not hasattr(report, "wasxfail"):
        flags["raised_but_passed"] = True
    if item is not None and root and getattr(call, "when", None) == "call":
        # an Item class of the repository's own (pytest's, pylint's suites) is its design: only a
        # runtest that changed since collection, to code of the copy, is a swap
        now = _runtests(item)
        then = (runtests or {}).get(item.nodeid)
        if now[0] is not None and _suspect(now[0], root):
            flags["runtest_replaced"] = True  # set on the item itself by code of the copy, whenever
        elif then is not None and now[1] is not then[1] and now[1] is not None and _suspect(now[1], root):
            flags["runtest_replaced"] = True  # the class's runtest changed after collection
        if report.outcome == "passed" and _PRINTS:  # only a pass can be a wrong verdict
            for kind, _ in identity_problems(item, _PRINTS, root):
                flags[kind] = True  # the item runs other code than its pristine file defines
        if objects is not None and item.nodeid in objects:
            obj = getattr(item, "obj", None)
            # compare functions, not bound methods: pytest binds a fresh instance for each test
            if _function(obj) is not _function(objects[item.nodeid]) and _suspect(obj, root):
                flags["runtest_replaced"] = True  # the test function itself was swapped after collection
    if flags:
        report.__dict__[FLAGS_KEY] = flags


class ReportFlagger:
    """Runs in every process (xdist workers too): annotates reports as they are made.

    An old-style hook wrapper, the only kind pytest 6 knows; the in-process plugin
    uses :class:`WrapperFlagger` where pluggy has the cheaper new-style wrappers.
    """

    def __init__(self):
        # type: () -> None
        self.root = _copy_root()
        self.objects = {}  # type: Dict[str, Any]
        self.runtests = {}  # type: Dict[str, Any]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        # type: (Any) -> None
        if self.root is not None:  # remember each test function and runtest, to notice one swapped later
            self.objects = {item.nodeid: getattr(item, "obj", None) for item in items}
            self.runtests = {item.nodeid: _runtests(item) for item in items}

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        # type: (Any, Any) -> Generator[None, Any, None]
        outcome = yield
        if call.excinfo is None and self.root is None:
            return  # the common case: nothing raised, nothing to compare against
        flag_report(outcome.get_result(), call, item, self.root, self.objects, self.runtests)


def foreign_modules(original, limit=20):
    # type: (Optional[str], int) -> Dict[str, str]
    """Modules imported from the original checkout instead of the graded copy."""
    if not original:
        return {}
    root = os.path.realpath(original)
    copy = _copy_root()
    # an environment living inside the checkout (repo/.venv) is not a copy of the project
    environments = {os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix))}
    found = {}  # type: Dict[str, str]
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        if not _inside(path, root) or _inside(path, copy) or any(_inside(path, env) for env in environments):
            continue
        parts = os.path.realpath(path).split(os.sep)
        if "site-packages" not in parts and "dist-packages" not in parts:
            found[name] = os.path.realpath(path)
            if len(found) >= limit:
                break
    return found


def hook_files(pluginmanager, root):
    # type: (Any, Optional[str]) -> List[str]
    """Files inside the graded copy that implement pytest hooks (conftests, plugin modules)."""
    files = set()
    if not root:
        return []
    for plugin in pluginmanager.get_plugins():
        plugin_file = getattr(plugin, "__file__", None)
        for name in dir(plugin):
            if not name.startswith("pytest_"):
                continue
            try:
                path = _origin(getattr(plugin, name))
            except Exception:
                continue
            if path == UNKNOWN:
                if isinstance(plugin_file, str) and _inside(plugin_file, root):
                    files.add(UNKNOWN + " in " + os.path.relpath(os.path.realpath(plugin_file), root).replace(os.sep, "/"))
            elif path is not None and _inside(path, root):
                files.add(os.path.relpath(os.path.realpath(path), root).replace(os.sep, "/"))
    return sorted(files)


def _internals():
    # type: () -> Dict[str, Any]
    found = {}
    for module_name, owner, attr in INTERNALS:
        module = sys.modules.get(module_name)
        target = getattr(module, owner, None) if owner else module
        found["%s.%s" % (module_name, ".".join(p for p in (owner, attr) if p))] = (
            target.__dict__.get(attr) if owner and target is not None else getattr(target, attr, None)
        )
    return found


_ORIGINAL_INTERNALS = _internals()  # taken when pytest loads the recorder, before any project code


WATCHED_PACKAGES = ("_pytest", "pytest", "pluggy", "unittest")


def _namespaces():
    # type: () -> Dict[str, Dict[str, Any]]
    """Every function and class attribute of the modules of pytest, pluggy and unittest loaded now,
    and of the classes they define: what a hostile copy would replace to decide outcomes."""
    found = {}  # type: Dict[str, Dict[str, Any]]
    for name, module in list(sys.modules.items()):
        if name.split(".", 1)[0] not in WATCHED_PACKAGES or module is None:
            continue
        space = getattr(module, "__dict__", None)
        if not isinstance(space, dict):
            continue
        found[name] = {k: v for k, v in list(space.items()) if callable(v)}
        for attr, value in list(space.items()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                found["%s.%s" % (name, attr)] = {k: v for k, v in list(value.__dict__.items())
                                                 if callable(v) or isinstance(v, (staticmethod, classmethod))}
    return found


_ORIGINAL_NAMESPACES = _namespaces()


# Replacements pytest makes in every session by itself, checked by identity (the very object pytest
# puts there), never by a name or a file an attacker could copy: (namespace, attribute) -> (module, name)
PYTESTS_OWN = {
    ("_pytest.config.Config", "_getini_unknown_type"): ("_pytest.legacypath", "Config__getini_unknown_type"),
}


def _pytests_own(space, attr, obj):
    # type: (str, str, Any) -> bool
    own = PYTESTS_OWN.get((space, attr))
    if own is None:
        return False
    module = sys.modules.get(own[0])
    return module is not None and getattr(module, own[1], None) is obj


def patched_internals(root):
    # type: (Optional[str]) -> List[str]
    """pytest, pluggy and unittest functions or class attributes replaced since the recorder loaded:
    the listed internals when code from the copy (or of unknown origin) replaced them, and every
    other one still replaced at the end of the session, whoever replaced it (the runner counts it
    against a candidate only when the control run does not show it too)."""
    patched = []
    for name, obj in _internals().items():
        original = _ORIGINAL_INTERNALS.get(name)
        if obj is not original and original is not None and _suspect(obj, root):
            patched.append("%s: replaced by %s" % (name, _origin(obj)))
    now = _namespaces()
    for space, before in _ORIGINAL_NAMESPACES.items():
        after = now.get(space, {})
        for attr, original in before.items():
            obj = after.get(attr)
            if obj is None or obj is original:
                continue
            # whoever did it: an origin can be forged (a module's __file__, a code object's file name),
            # so every replacement still in place counts; the control run tells the environment's own
            func = getattr(obj, "__func__", obj)
            if _pytests_own(space, attr, obj):
                continue
            entry = "%s.%s: replaced by %s" % (space, attr, _origin(func) or type(func).__name__)
            if entry.split(":")[0] not in [p.split(":")[0] for p in patched]:
                patched.append(entry)
    return patched[:50]


_IMPORT_HOOKS_BEFORE = [id(h) for h in list(sys.meta_path) + list(sys.path_hooks)]  # taken before any conftest


def _relative(path, root):
    # type: (Optional[str], Optional[str]) -> str
    if not path or path == UNKNOWN or not root:
        return path or UNKNOWN
    return os.path.relpath(os.path.realpath(path), root).replace(os.sep, "/")


def _qualname(item):
    # type: (Any) -> str
    """Where the test file defines the item's function, by the collection's own names (the class
    node's name is the module attribute pytest found, whatever object stands there now)."""
    names = [getattr(item, "originalname", None) or item.name.split("[", 1)[0]]
    node = getattr(item, "parent", None)
    while node is not None and type(node).__name__ in ("Class", "Instance"):
        if type(node).__name__ == "Class":
            names.insert(0, node.name)
        node = getattr(node, "parent", None)
    return ".".join(names)


def _closes_over(wrapper, inner):
    # type: (Any, Any) -> bool
    """Whether ``wrapper`` holds ``inner`` in its closure: what a decorator that calls the function it
    wraps does (``functools.wraps`` sets ``__wrapped__``, which anyone can set to anything)."""
    for cell in getattr(wrapper, "__closure__", None) or ():
        try:
            if _function(cell.cell_contents) is inner:
                return True
        except ValueError:  # an empty cell
            continue
    return False


def test_function(obj, real, root):
    # type: (Any, str, Optional[str]) -> Tuple[Any, Optional[str]]
    """The function of the test file an item runs, through the environment's decorators: each
    ``__wrapped__`` is followed only from a function of the environment (outside the copy) that
    holds it in its closure. ``(function, None)``, or ``(None, why)`` when what runs is code of the
    copy other than the test file, or a wrapper that does not hold what it claims to wrap."""
    func = _function(obj)
    for _ in range(20):
        code = getattr(func, "__code__", None)
        if code is not None and os.path.realpath(code.co_filename) == real:
            return func, None
        origin = _origin(func)
        name = getattr(func, "__name__", None) or type(func).__name__
        if origin == UNKNOWN or origin is None or _inside(origin, root):
            return None, "runs %s of %s" % (name, _relative(origin or UNKNOWN, root))
        inner = _function(getattr(func, "__wrapped__", None))
        if inner is None or not _closes_over(func, inner):
            return None, "runs %s of %s" % (name, _relative(origin, root))
        func = inner
    return None, "a chain of wrappers too long to follow"


def identity_problems(item, prints, root):
    # type: (Any, Dict[str, Any], Optional[str]) -> List[Tuple[str, str]]
    """Why the item does not run the test its pristine file defines, as ``(kind, reason)`` (none when
    it does, or when the file was not fingerprinted). The code run must equal a code object the
    boot compiled from the pristine file under the same name; a test the file defines itself (its
    class and function names) must run code of that file; its module must be loaded by Python's or
    pytest's own loader, from that file."""
    path = getattr(item, "path", None) or getattr(item, "fspath", None)
    real = os.path.realpath(str(path)) if path is not None else ""
    mine = prints.get(real) if real else None
    if mine is None:
        return []
    names, defined = mine["names"], mine["defined"]
    problems = []  # type: List[Tuple[str, str]]
    try:
        module = item.module
        loader = getattr(module, "__loader__", None)
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
    except Exception:
        loader = origin = None
    running = getattr(sys.modules.get("_pytest.assertion.rewrite"), "AssertionRewritingHook", None)
    if loader is not None and (running is None or type(loader) is not running):  # the running pytest's own
        method = getattr(type(loader), "exec_module", None) or getattr(type(loader), "load_module", None)
        if method is not None and _suspect(method, root):
            problems.append(("test_loaded_by_copy", "its module was loaded by %s (%s)" % (
                type(loader).__name__, _relative(_origin(method), root))))
    if origin and os.path.realpath(origin) != real:
        problems.append(("test_loaded_by_copy", "its module says it comes from %s" % _relative(origin, root)))
    try:
        func, why = test_function(item.obj, real, root)
    except Exception:
        return problems
    if func is not None:
        code = func.__code__
        if not any(code == pristine for pristine in names.get(code.co_name, ())):
            problems.append(("test_code_replaced", "its code differs from the pristine file's %s" % code.co_name))
    elif _qualname(item) in defined:  # a test the file defines, run as other code
        problems.append(("test_code_replaced", "%s, not the %s the test file defines" % (why, _qualname(item))))
    return problems


def _hook_origin(obj):
    # type: (Any) -> Optional[str]
    if callable(obj) and getattr(obj, "__globals__", None) is not None or hasattr(obj, "__func__"):
        return _origin(obj)
    kind = type(obj)
    for attr in ("find_spec", "find_module", "exec_module", "__call__"):
        method = kind.__dict__.get(attr) if isinstance(kind.__dict__, dict) else None
        if method is None:
            for base in kind.__mro__:
                method = base.__dict__.get(attr)
                if method is not None:
                    break
        if method is not None and getattr(_function(method), "__globals__", None) is not None:
            return _origin(method)
    return _origin(obj)


def import_hooks(root):
    # type: (Optional[str]) -> List[str]
    """Finders and path hooks added since the recorder loaded by code of the copy (or of unknown
    origin): what serves a test module from anywhere but its file."""
    found = []
    for where, hooks in (("sys.meta_path", sys.meta_path), ("sys.path_hooks", sys.path_hooks)):
        for hook in list(hooks):
            if id(hook) in _IMPORT_HOOKS_BEFORE:
                continue
            origin = _hook_origin(hook)
            if origin == UNKNOWN or _inside(origin, root):
                found.append("%s: %s from %s" % (where, getattr(hook, "__qualname__", type(hook).__qualname__),
                                                 _relative(origin, root)))
    return sorted(set(found))


def _declared(pluginmanager):
    # type: (Any) -> Any
    """Plugin names the run declares: ``-p``, ``PYTEST_PLUGINS`` and the conftest files' ``pytest_plugins``."""
    names = set(n for n in os.environ.get("PYTEST_PLUGINS", "").split(",") if n)
    for conftest in list(getattr(pluginmanager, "_conftest_plugins", ()) or ()):
        value = getattr(conftest, "pytest_plugins", ())
        names.update([value] if isinstance(value, str) else [v for v in value if isinstance(v, str)])
    return names


def registered_hooks(pluginmanager, root):
    # type: (Any, Optional[str]) -> List[str]
    """Plugins whose hook implementations are code of the copy and that pytest did not load as the
    run declares them (conftest files, ``-p``, ``pytest_plugins``, installed entry points): a hook
    registered at run time by the repository's own modules. Named by class or module and file, so
    that the control run shows the very same ones (a repository that is a pytest plugin)."""
    if not root:
        return []
    conftests = set(id(m) for m in list(getattr(pluginmanager, "_conftest_plugins", ()) or ()))
    try:
        entry_points = set(id(p) for p, _ in pluginmanager.list_plugin_distinfo())
    except Exception:
        entry_points = set()
    declared = _declared(pluginmanager)
    init = getattr(sys.modules.get("_pytest"), "__file__", None)
    own = os.path.dirname(os.path.realpath(init)) + os.sep if isinstance(init, str) else None  # type: Optional[str]
    if own is not None and not _inside(own, root):
        own = None  # pytest is not the repository under test
    found = set()
    hooks = pluginmanager.hook
    for hookname in list(vars(hooks)):
        caller = getattr(hooks, hookname, None)
        getter = getattr(caller, "get_hookimpls", None)
        if getter is None:
            continue
        for impl in getter():
            plugin = impl.plugin
            if id(plugin) in conftests or id(plugin) in entry_points:
                continue
            is_module = type(plugin).__name__ == "module"
            name = pluginmanager.get_name(plugin) if hasattr(pluginmanager, "get_name") else None
            if is_module and name in declared:
                continue
            origin = _origin(impl.function)
            if origin != UNKNOWN and not _inside(origin, root):
                continue
            if own is not None and origin and origin != UNKNOWN and os.path.realpath(origin).startswith(own):
                continue  # pytest's own plugins in pytest's own repository: the runner is the candidate's, by design
            what = plugin.__name__ if is_module else type(plugin).__qualname__
            found.add("%s %s from %s" % ("module" if is_module else "plugin", what, _relative(origin, root)))
    return sorted(found)


def _prepend_import_roots():
    # type: () -> None
    roots = [r for r in os.environ.get(ENV_IMPORT_ROOTS, "").split(os.pathsep) if r]
    for root in reversed(roots):
        while root in sys.path:
            sys.path.remove(root)
        sys.path.insert(0, root)


def module_origins(names):
    # type: (List[str]) -> Dict[str, Optional[str]]
    """Where each already-imported top-level package of ``names`` came from."""
    origins = {}  # type: Dict[str, Optional[str]]
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        path = getattr(module, "__file__", None)
        if path is None:
            paths = list(getattr(module, "__path__", []) or [])
            path = paths[0] if paths else None
        origins[name] = os.path.realpath(path) if path else None
    return origins


def record_line(key, seq, record, _dumps=json.dumps, _new=hmac.new, _sha256=hashlib.sha256):
    # type: (bytes, int, Dict[str, Any], Any, Any, Any) -> str
    """One line of the record file: ``MAC JSON``, the JSON carrying its sequence number and the MAC
    an HMAC-SHA256 of it under the run's key (the grader checks both: docs/runner.md). The
    functions it uses are bound when the recorder loads, before the graded copy's code runs."""
    text = _dumps(dict(record, seq=seq), ensure_ascii=False, sort_keys=True)
    return _new(key, text.encode("utf-8"), _sha256).hexdigest() + " " + text


class _Channel(object):
    """The open record file and the signing key, taken from the environment when this module is
    imported: before any code of the graded copy (its conftest files) runs, so that code finds
    neither the file's path nor the key in ``os.environ``."""

    def __init__(self, handle, key):
        # type: (Any, bytes) -> None
        self.handle, self.seq = handle, 0
        line = record_line  # bound now: replacing the module's record_line later changes nothing
        self.sign = lambda seq, record: line(key, seq, record)

    def write(self, record):
        # type: (Dict[str, Any]) -> None
        self.handle.write(self.sign(self.seq, record) + "\n")
        self.seq += 1
        self.handle.flush()

    def close(self):
        # type: () -> None
        self.handle.close()


def shadowed_modules(before, root):
    # type: (Any, Optional[str]) -> List[str]
    """Modules imported since ``before`` whose file is inside the graded copy: Python's own modules
    the copy supplies in place of the real ones (a ``hmac.py`` at its top, say)."""
    if not root:
        return []
    return sorted(n for n in set(sys.modules) - set(before)
                  if _inside(getattr(sys.modules.get(n), "__file__", None), os.path.realpath(root)))


def _take_channel(key):
    # type: (str) -> Optional[_Channel]
    """The record's channel: the file descriptor the grader opened for it (or a path), and the key.
    Refused (ImportError: no record, so no verdict) when the modules signing needs came from the copy."""
    number = os.environ.pop("OBJECTIVE_SCORING_RECORD_FD", None)
    path = os.environ.pop(ENV_RECORD, None)
    if number is None and not path:
        return None
    shadows = shadowed_modules(_MODULES_BEFORE, os.environ.get(ENV_COPY))
    if shadows:
        raise ImportError("the graded copy supplies %s in place of Python's own modules: the recorder refuses "
                          "to record this run" % ", ".join(shadows))
    handle = os.fdopen(int(number), "a", encoding="utf-8") if number is not None else open(str(path), "a", encoding="utf-8")
    return _Channel(handle, key.encode("ascii"))


_CHANNEL = _take_channel(_KEY_TAKEN)
del _KEY_TAKEN
_PRINTS = {}  # type: Dict[str, Any]  # the boot's fingerprints of the guarded test files (identity.md)
if _CHANNEL is None:  # started by the runner's boot module, which took the key before anything ran
    _BOOT = sys.modules.get("_objective_scoring_boot")
    if _BOOT is not None and getattr(_BOOT, "CHANNEL", None) is not None:
        _CHANNEL = getattr(_BOOT, "CHANNEL")
        setattr(_BOOT, "CHANNEL", None)  # taken once: the boot module no longer holds it
        _PRINTS = getattr(_BOOT, "FINGERPRINTS", None) or {}
        setattr(_BOOT, "FINGERPRINTS", None)
    del _BOOT


def _rewritten(prints, root):
    # type: (Dict[str, Any], Optional[str]) -> None
    """Add to the boot's fingerprints each file compiled as pytest's assertion rewriter compiles a
    test module: now, when pytest has loaded the recorder and before any conftest runs, with the
    rewriter of the pytest that runs (in pytest's own repository the copy's: its changes to the
    rewriter decide what the tests assert, by design, as in SWE-bench's harness)."""
    rewrite_module = sys.modules.get("_pytest.assertion.rewrite")
    rewrite = getattr(rewrite_module, "rewrite_asserts", None)
    if rewrite is None:
        return
    import ast

    collect = getattr(sys.modules.get("_objective_scoring_boot"), "_codes", None)
    for mine in prints.values():
        try:
            tree = ast.parse(mine["source"], filename=mine["path"])
            try:
                rewrite(tree, mine["source"], mine["path"], None)
            except TypeError:  # pytest before 5: rewrite_asserts(mod, module_path, config)
                rewrite(tree, mine["path"], None)
            if collect is not None:
                collect(compile(tree, mine["path"], "exec", dont_inherit=True), mine["names"], mine["defined"])
        except Exception:
            continue


if _PRINTS:
    _rewritten(_PRINTS, _copy_root())


class FileRecorder:
    """Controller-side writer of facts to the record file (subprocess runs)."""

    def __init__(self, config, channel):
        # type: (Any, _Channel) -> None
        self.config = config
        self.channel = channel  # the boot's sealed channel (an audit event), or this module's own
        self.sent = set()  # type: Any
        self.shape = None  # type: Any
        self.problems = {}  # type: Dict[str, List[Tuple[str, str]]]  # test identity at collection, by node id

    def _write(self, record):
        # type: (Dict[str, Any]) -> None
        self.channel.write(record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report, _fact=fact_from_report):
        # type: (Any, Any) -> None
        fact = _fact(report)  # bound when the recorder loaded: replacing the module's function changes nothing
        fact["type"] = "test"
        self._write(fact)
        if report.when == "call" and report.outcome == "passed" and report.nodeid in self.problems:
            for kind, reason in self.problems.pop(report.nodeid):  # what collection saw, for a test that passed
                self._signal(kind, "%s: %s" % (report.nodeid, reason))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report):
        # type: (Any) -> None
        if report.failed:
            self._write(
                {"type": "collect_error", "nodeid": report.nodeid, "message": _message(report) or "collection error"}
            )

    def pytest_collection_finish(self, session):
        # type: (Any) -> None
        self._write({"type": "collected", "count": len(session.items)})
        root = _copy_root()
        if _PRINTS:
            for item in session.items:
                try:
                    problems = identity_problems(item, _PRINTS, root)
                except Exception:
                    problems = []
                if problems:
                    self.problems[item.nodeid] = problems
        self._judge_changed()

    def _signal(self, kind, detail):
        # type: (str, str) -> None
        if (kind, detail) not in self.sent and len(self.sent) < 2000:
            self.sent.add((kind, detail))
            self._write({"type": "signal", "kind": kind, "detail": detail})

    def _judge_changed(self):
        # type: () -> None
        """Finders, path hooks and hook implementations the copy's code added since start-up: checked
        at collection, before each test (only when something changed) and at the end."""
        pluginmanager = self.config.pluginmanager
        try:
            count = sum(len(getattr(c, "get_hookimpls", lambda: ())()) for c in list(vars(pluginmanager.hook).values()))
        except Exception:
            count = -1
        shape = (tuple(id(h) for h in sys.meta_path), tuple(id(h) for h in sys.path_hooks), count)
        if shape == self.shape:
            return
        self.shape = shape
        root = _copy_root()
        try:
            for detail in import_hooks(root):
                self._signal("import_hook", detail)
            for detail in registered_hooks(pluginmanager, root):
                self._signal("hook_registered", detail)
        except Exception:
            pass

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        # type: (Any) -> None
        """Before each test's call, after its fixtures: once a test (what an earlier test's teardown
        or this one's setup added is seen here; the first test's, at collection)."""
        self._judge_changed()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        # type: (Any, Any) -> None
        self._judge_changed()
        names = [n for n in os.environ.get(ENV_PACKAGES, "").split(os.pathsep) if n]
        self._write(
            {
                "type": "session",
                "exitstatus": int(exitstatus),
                "testsfailed": int(getattr(session, "testsfailed", 0)),
                "shouldfail": bool(getattr(session, "shouldfail", False)),
                "shouldstop": bool(getattr(session, "shouldstop", False)),
                "pytest_version": pytest.__version__,
                "python_version": platform.python_version(),
                "python_implementation": platform.python_implementation(),
                "platform": sys.platform + "-" + platform.machine(),
                "module_origins": module_origins(names),
                "foreign_modules": foreign_modules(os.environ.get(ENV_ORIGINAL)),
                "hook_files": hook_files(self.config.pluginmanager, _copy_root()),
                "patched_internals": patched_internals(_copy_root()),
                "distributions": installed_distributions(),
            }
        )
        close = getattr(self.channel, "close", None)  # the sealed channel closes itself after the session
        if close is not None:
            close()


def installed_distributions():
    # type: () -> List[str]
    """The installed distributions the test process can see (their dist-info / egg-info names on
    sys.path): what the run's environment digest is made of. A listing, no import."""
    found = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                found.add(name)
    return sorted(found)


_prepend_import_roots()


class Shuffler(object):
    """A perturbed re-run: the collected tests in an order drawn from a recorded seed."""

    def __init__(self, seed):
        # type: (int) -> None
        self.seed = seed

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        # type: (Any) -> None
        import random

        random.Random(self.seed).shuffle(items)


def _ascii_escaped(nodeid):
    # type: (str) -> str
    """The id as pytest writes non-ASCII parameter ids by default (as the grader's scorer spells it)."""
    if "[" not in nodeid or (all(ord(c) < 128 for c in nodeid) and nodeid.isprintable() and "\\" not in nodeid):
        return nodeid
    head, _, params = nodeid.partition("[")
    return head + "[" + params.encode("unicode_escape").decode("ascii")


class ListedOnly(object):
    """``grade --select``: deselect every collected test the instance does not list, matched as the
    grader matches (either spelling of an escaped id; an id cut at whitespace stands for every test
    continuing it with whitespace in strict mode, for every test it prefixes in SWE-bench's)."""

    def __init__(self, spec):
        # type: (Dict[str, Any]) -> None
        self.strict = bool(spec.get("strict", True))
        self.listed = set(spec.get("listed") or [])
        self.cuts = tuple(spec.get("cuts") or [])

    def wanted(self, nodeid):
        # type: (str) -> bool
        spellings = (nodeid, _ascii_escaped(nodeid)) if self.strict else (nodeid,)
        for spelling in spellings:
            if spelling in self.listed:
                return True
            for cut in self.cuts:
                if spelling.startswith(cut) and (not self.strict or (len(spelling) > len(cut) and spelling[len(cut)].isspace())):
                    return True
        return False

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        # type: (Any, Any) -> None
        kept = [item for item in items if self.wanted(item.nodeid)]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if not self.wanted(item.nodeid)])
            items[:] = kept


def pytest_configure(config):
    # type: (Any) -> None
    if _CHANNEL is None and not os.environ.get(ENV_ACTIVE):
        return
    seed = os.environ.get("OBJECTIVE_SCORING_SHUFFLE_SEED")
    if seed:
        config.pluginmanager.register(Shuffler(int(seed)), "objective-scoring-shuffler")
    selection = os.environ.get("OBJECTIVE_SCORING_SELECT")
    if selection:
        with open(selection, encoding="utf-8") as handle:
            config.pluginmanager.register(ListedOnly(json.load(handle)), "objective-scoring-listed-only")
    if not config.pluginmanager.has_plugin("objective-scoring-flagger"):
        config.pluginmanager.register(ReportFlagger(), "objective-scoring-flagger")
    if not hasattr(config, "workerinput") and _CHANNEL is not None:
        config.pluginmanager.register(FileRecorder(config, _CHANNEL), "objective-scoring-file-recorder")
