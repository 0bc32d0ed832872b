"""No wrong verdict without a flag (issue 27): attacks on which test runs, written as an adversary
would write them, in the repository's own package (code a test module or a conftest imports),
never in a test file.

Each grades a WRONG candidate (the bug stays) and must end not resolved, the candidate's failure,
and not ``eligible``, with the named signal among the flags. Before issue 27 each of them was
graded resolved with no flag.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from .runner_helpers import grade
from .test_attacks import (
    INTERVAL_PY,
    INTERVALS,
    THE_CANDIDATES_FAILURE,
    buggy_interval,
    diff_of,
    disposition,
    flags,
    intervals_with_conftest,
    outcome,
)

pytestmark = pytest.mark.slow

LISTED = ("test_touching", "test_touching_chain")  # the instance's FAIL_TO_PASS: TestMerge's, in tests/test_merge.py

# The package, imported by tests/test_merge.py, finds the importing test module's frame, sets a
# trace function on it and, when the module's code returns (before pytest collects anything),
# rebinds the failing tests to a function that does nothing.
SWAP_BEFORE_COLLECTION = '''
import sys as _sys


def _swap_before_collection():
    frame = _sys._getframe(1)
    while frame is not None and not frame.f_code.co_filename.endswith("test_merge.py"):
        frame = frame.f_back
    if frame is None:
        return
    module_frame, previous = frame, _sys.gettrace()

    def ok(self):
        pass

    def local(fr, event, arg):
        if fr is module_frame and event == "return":
            cls = fr.f_globals.get("TestMerge")
            for name in %r:
                setattr(cls, name, ok)
            _sys.settrace(previous)
        return local

    _sys.settrace(lambda *args: None)
    module_frame.f_trace = local


_swap_before_collection()
''' % (LISTED,)

# The same swap, the replacement claiming to wrap the real test (``__wrapped__``, and the real test in
# its closure, as a decorator's wrapper holds it) without ever calling it.
SWAP_DISGUISED_AS_A_DECORATOR = SWAP_BEFORE_COLLECTION.replace(
    """            for name in %r:
                setattr(cls, name, ok)""" % (LISTED,),
    """            for name in %r:
                real = getattr(cls, name)

                def ok(self, _real=real):
                    return None if True else _real(self)

                def wrapper(self):
                    return ok(self) if True else real(self)

                wrapper.__wrapped__ = real
                setattr(cls, name, wrapper)""" % (LISTED,))
assert SWAP_DISGUISED_AS_A_DECORATOR != SWAP_BEFORE_COLLECTION

# The package finds pytest's Config by walking the stack and registers a plugin whose
# pytest_pyfunc_call says the failing tests ran (returns True without calling them).
FIND_CONFIG = '''
import sys as _sys


def _config():
    frame = _sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if type(value).__name__ == "Config" and hasattr(value, "pluginmanager"):
                return value
        frame = frame.f_back
    return None
'''

HOOK_FROM_A_MODULE = FIND_CONFIG + '''

def _register():
    config = _config()
    if config is None:
        return
    import pytest

    class _Quick(object):
        @pytest.hookimpl(tryfirst=True)
        def pytest_pyfunc_call(self, pyfuncitem):
            if pyfuncitem.name in %r:
                return True

    config.pluginmanager.register(_Quick(), "quick")


_register()
''' % (LISTED,)

# The package, imported by tests/conftest.py, puts a finder first on sys.meta_path that serves
# tests/test_merge.py from memory with the failing tests' asserts made vacuous: no file is written.
SERVED_FROM_MEMORY = '''
import importlib.abc as _abc
import importlib.util as _util
import os as _os
import sys as _sys


class _Served(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.rpartition(".")[2] != "test_merge":
            return None
        for entry in list(_sys.path):
            candidate = _os.path.join(entry or ".", "test_merge.py")
            if _os.path.isfile(candidate):
                return _util.spec_from_file_location(name, candidate, loader=self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(module.__spec__.origin) as handle:
            source = handle.read()
        for name in %r:
            source = source.replace("def %%s(self):\\n        assert " %% name, "def %%s(self):\\n        assert True or " %% name)
        exec(compile(source, module.__spec__.origin, "exec"), module.__dict__)


_sys.meta_path.insert(0, _Served())
''' % (LISTED,)

# The package, imported by tests/conftest.py (before collection), renames a weakened copy of
# tests/test_merge.py over the real one, and at exit renames the real one back and makes the tests
# folder unreadable (mode 000): a grader that is not root cannot list what the run wrote there.
RENAMED_OVER_AND_HIDDEN = '''
import atexit as _atexit
import os as _os


def _rename_over():
    tests = _os.path.join(_os.getcwd(), "tests")
    target = _os.path.join(tests, "test_merge.py")
    if not _os.path.isfile(target):
        return
    with open(target) as handle:
        source = handle.read()
    for name in %r:
        source = source.replace("def %%s(self):\\n        assert " %% name, "def %%s(self):\\n        assert True or " %% name)
    kept, weak = target + ".kept", target + ".weak"
    _os.link(target, kept)
    with open(weak, "w") as handle:
        handle.write(source)
    _os.rename(weak, target)

    def restore():
        _os.rename(kept, target)
        _os.chmod(tests, 0)

    _atexit.register(restore)


_rename_over()
''' % (LISTED,)


# The package finds the recorder among pytest's plugins and wraps its writer: every failed test it
# writes reads as passed, the session as a success. The lines are signed by the recorder's own
# channel: only where they come from tells them apart.
THE_RECORDERS_WRITER = FIND_CONFIG + '''

def _wrap():
    config = _config()
    recorder = config.pluginmanager.get_plugin("objective-scoring-file-recorder") if config else None
    if recorder is None:
        return
    real = recorder._write

    def forged(record):
        if record.get("outcome") == "failed":
            record = dict(record, outcome="passed", message="")
        if record.get("type") == "session":
            record = dict(record, exitstatus=0, testsfailed=0, shouldfail=False)
        real(record)

    recorder._write = forged


_wrap()
'''

# The same, the wrapper's code compiled under the name of a file outside the copy, so that no
# frame of the copy is on the stack when the recorder writes.
DISGUISED_WRITER = FIND_CONFIG + '''

_SOURCE = """
def forged(record):
    if record.get("outcome") == "failed":
        record = dict(record, outcome="passed", message="")
    if record.get("type") == "session":
        record = dict(record, exitstatus=0, testsfailed=0, shouldfail=False)
    REAL(record)
"""


def _wrap():
    config = _config()
    recorder = config.pluginmanager.get_plugin("objective-scoring-file-recorder") if config else None
    if recorder is None:
        return
    space = {"REAL": recorder._write}
    exec(compile(_SOURCE, "/usr/lib/python3/dist-packages/harmless.py", "exec"), space)
    recorder._write = space["forged"]


_wrap()
'''

# Reading the process's memory, as a forger after the key would (a harmless read here).
READS_MEMORY = '''
import ctypes as _ctypes
_ctypes.string_at(id(object()), 16)
'''


def graded(code: str, tmp_path, *, conftest: bool = False):
    repo = intervals_with_conftest(tmp_path) if conftest else INTERVALS
    diff = diff_of(repo, {INTERVAL_PY: buggy_interval(code)}, tmp_path)
    return grade("intervals", diff, repo=repo, timeout=60)


def kinds(result) -> set[str]:
    return {f["kind"] for f in flags(result)}


def test_tests_swapped_before_collection_are_caught(tmp_path):
    result = graded(SWAP_BEFORE_COLLECTION, tmp_path)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert {"test_code_replaced", "trace_set"} <= kinds(result), flags(result)


def test_a_swapped_test_claiming_to_wrap_the_real_one_is_caught(tmp_path):
    result = graded(SWAP_DISGUISED_AS_A_DECORATOR, tmp_path)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert "test_code_replaced" in kinds(result), flags(result)


def test_a_hook_registered_from_a_repository_module_is_caught(tmp_path):
    result = graded(HOOK_FROM_A_MODULE, tmp_path)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert "hook_registered" in kinds(result), flags(result)


def test_tests_served_from_memory_are_caught(tmp_path):
    result = graded(SERVED_FROM_MEMORY, tmp_path, conftest=True)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert {"test_code_replaced", "test_loaded_by_copy", "import_hook"} <= kinds(result), flags(result)


def test_a_test_file_renamed_over_and_its_folder_hidden_is_caught(tmp_path):
    """As root and as a grader that is not root (CI runs this file both ways): the rename is seen
    as it happens, the test runs code its pristine file does not define, and the folder the run
    made unreadable is counted, never skipped."""
    result = graded(RENAMED_OVER_AND_HIDDEN, tmp_path, conftest=True)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert {"test_code_replaced", "protected_file_modified"} <= kinds(result), flags(result)


def test_the_recorders_own_writer_wrapped_by_the_package_is_caught(tmp_path):
    result = graded(THE_RECORDERS_WRITER, tmp_path)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert "record_written_by_copy" in kinds(result), flags(result)


def test_a_writer_disguised_as_code_of_another_file_is_caught(tmp_path):
    result = graded(DISGUISED_WRITER, tmp_path)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert disposition(result) != "eligible", flags(result)
    assert "code_disguised" in kinds(result), flags(result)


def test_reading_the_processs_memory_is_a_signal(tmp_path):
    result = graded(READS_MEMORY, tmp_path)
    assert outcome(result) == THE_CANDIDATES_FAILURE, (outcome(result), flags(result))
    assert "memory_read" in kinds(result), flags(result)


def test_the_attacks_really_work_when_nothing_watches(tmp_path):
    """Each attack, run by plain pytest on the candidate's tree, makes the failing tests pass: what
    the grader catches is a working forgery, not a broken candidate."""
    import shutil
    import subprocess
    import sys

    for name, code, conftest in (("swap", SWAP_BEFORE_COLLECTION, False), ("hook", HOOK_FROM_A_MODULE, False),
                                 ("served", SERVED_FROM_MEMORY, True), ("renamed", RENAMED_OVER_AND_HIDDEN, True)):  # fmt: skip
        tree = tmp_path / name
        source = intervals_with_conftest(tmp_path / (name + "-base")) if conftest else INTERVALS
        shutil.copytree(source, tree)
        (tree / INTERVAL_PY).write_text(buggy_interval(code))
        merge_tests = tree / "tests" / "test_merge.py"
        merge_tests.write_text(merge_tests.read_text().replace(
            "\n\ndef test_total_length_counts_overlap_once",
            textwrap.indent(textwrap.dedent("""
                def test_touching(self):
                    assert merge([(1, 2), (2, 3)]) == [Interval(1, 3)]

                def test_touching_chain(self):
                    assert merge([(3, 5), (1, 2), (2, 3), (7, 8)]) == [Interval(1, 5), Interval(7, 8)]
                """), "    ") + "\n\ndef test_total_length_counts_overlap_once", 1))  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *(f"tests/test_merge.py::TestMerge::{t}" for t in LISTED)],
                              cwd=tree, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0 and "2 passed" in done.stdout, (name, done.stdout[-2000:])


# A Harbor task's working state verified on this machine: a top-level json.py that loads the real
# module and wraps json.dumps so that every failed test the recorder writes reads as passed.
JSON_WRAPPER = '''
import importlib.machinery as _machinery, importlib.util as _util, os as _os, sys as _sys
_here = _os.path.dirname(_os.path.abspath(__file__))
_spec = _machinery.PathFinder.find_spec("json", [p for p in _sys.path if _os.path.abspath(p or ".") != _here])
_real = _util.module_from_spec(_spec)
_sys.modules["json"] = _real
_spec.loader.exec_module(_real)
_dumps = _real.dumps


def dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("outcome") == "failed":
        obj = dict(obj, outcome="passed", message="")
    if isinstance(obj, dict) and obj.get("type") == "session":
        obj = dict(obj, exitstatus=0, testsfailed=0)
    return _dumps(obj, *args, **kwargs)


_real.dumps = dumps
'''


@pytest.mark.parametrize("name", ["json.py", "dataclasses/__init__.py"])
def test_a_harbor_state_shadowing_the_standard_library_is_not_solved(tmp_path, name):
    import shutil

    from pytest_objective_scoring.harbor import EXIT_NOT_SOLVED, RunOptions, load_task, run_task

    from .conftest import FIXTURES

    task = FIXTURES / "harbor" / "fix-csv-total"
    workdir = tmp_path / "app"
    shutil.copytree(task / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
    (workdir / name).parent.mkdir(parents=True, exist_ok=True)
    (workdir / name).write_text(JSON_WRAPPER.replace('"json"', repr(name.split("/")[0].split(".")[0])))
    result = run_task(load_task(task), RunOptions(workdir=workdir))
    verification = result.verification
    assert verification.reward is not None and verification.reward.reward == 0.0, verification.envelope.get("tests")
    assert result.exit_code == EXIT_NOT_SOLVED
    assert name.split("/")[0] in verification.removed


def test_the_json_wrapper_really_forges_when_nothing_watches(tmp_path):
    """The same state under plain ``python -m pytest`` with the state on the path, as the verifier
    started it before: the recorder's lines say passed."""
    import json
    import shutil
    import subprocess
    import sys

    from pytest_objective_scoring.recorder import record_line  # noqa: F401 (the recorder is importable)

    from .conftest import FIXTURES

    workdir = tmp_path / "app"
    shutil.copytree(FIXTURES / "harbor" / "fix-csv-total" / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
    (workdir / "json.py").write_text(JSON_WRAPPER)
    probe = "import json; print(json.dumps({'outcome': 'failed'}))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == {"outcome": "passed", "message": ""}


# ---------------------------------------------------------------- honest runs stay unflagged


def test_an_honest_fix_with_a_declared_plugin_module_in_the_package_is_resolved_without_a_control_run(tmp_path):
    """A conftest declares a module of the package as a plugin (``pytest_plugins``, as sphinx.testing
    is): loaded as the run declares it, it is no signal, and the gold patch needs no control run."""
    from .runner_helpers import patch_of
    from .test_attacks import intervals_with_plugin_module

    repo = intervals_with_plugin_module(tmp_path)
    result = grade("intervals", patch_of("intervals", "gold"), repo=repo, timeout=60)
    assert result.envelope["score"]["resolved"] == "resolved" and flags(result) == []
    assert "control_run" not in result.envelope["runner"], result.envelope["runner"].get("calibrated_signals")


def test_an_honest_fix_whose_conftest_registers_a_plugin_object_is_resolved_without_a_flag(tmp_path):
    """A conftest that registers a plugin object of its own in pytest_configure (many suites do):
    the hook is code of the copy registered at run time, a signal the gold control run shows too, so
    it is calibrated, never counted."""
    import shutil

    from .runner_helpers import patch_of

    repo = tmp_path / "registering"
    shutil.copytree(INTERVALS, repo)
    (repo / "tests" / "conftest.py").write_text(textwrap.dedent("""
        class Timing:
            def pytest_runtest_setup(self, item):
                item.started = 0


        def pytest_configure(config):
            config.pluginmanager.register(Timing(), "timing")
        """))
    result = grade("intervals", patch_of("intervals", "gold"), repo=repo, timeout=60)
    assert result.envelope["score"]["resolved"] == "resolved" and flags(result) == []
    calibrated = result.envelope["runner"].get("calibrated_signals") or {}
    assert "hook_registered" in json.dumps(calibrated), calibrated


def test_tests_under_the_environments_decorators_need_no_control_run():
    """unittest.skip wraps a test in unittest's own code (Django's layout: recipes); a skipped test
    is no pass, and a decorator of the environment that holds the test in its closure is followed:
    the gold patch is graded on its own, with no signal and no control run."""
    from .runner_helpers import patch_of

    result = grade("recipes", patch_of("recipes", "gold"))
    assert result.envelope["score"]["resolved"] == "resolved" and flags(result) == []
    assert "control_run" not in result.envelope["runner"], result.envelope["runner"].get("calibrated_signals")
