"""Every error class of the package crosses a process boundary and copies: Dask pickles what a
worker raises, and an error that cannot be made again from its pickle arrives as a confusing
``TypeError`` instead of the file, the field and the problem it names."""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil
from typing import Any

import pytest

import pytest_objective_scoring

# scripts run as files in other interpreters (some in the sandbox, some in an image), never imported here
SCRIPTS = ("boot", "warm_server", "sample_harness", "sample_checker", "sample_sandbox", "sample_warm", "recorder",
           "__main__")  # fmt: skip


def error_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(pytest_objective_scoring.__path__, pytest_objective_scoring.__name__ + "."):
        if info.name.rpartition(".")[2] in SCRIPTS:
            continue
        module = importlib.import_module(info.name)
        found += [c for c in vars(module).values()
                  if inspect.isclass(c) and issubclass(c, BaseException) and c.__module__ == module.__name__]  # fmt: skip
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def made(kind: type[BaseException]) -> BaseException:
    """One of ``kind``, each required positional argument given a distinct string."""
    required = [p for p in list(inspect.signature(kind.__init__).parameters.values())[1:]
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    return kind(*(f"value-{i}" for i in range(len(required))))


def state(error: BaseException) -> tuple[Any, ...]:
    return type(error), str(error), error.args, dict(vars(error))


ERRORS = error_classes()


def test_the_package_has_error_classes_to_check():
    names = {c.__name__ for c in ERRORS}
    assert {"InstanceError", "CostError", "ReportError", "TaskError", "InfraFailure", "Interrupted"} <= names


@pytest.mark.parametrize("kind", ERRORS, ids=lambda c: f"{c.__module__.rpartition('.')[2]}.{c.__name__}")
def test_an_error_is_the_same_after_a_pickle_and_a_copy(kind):
    error = made(kind)
    for again in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert state(again) == state(error)


def test_keyword_fields_and_defaults_survive_too():
    from pytest_objective_scoring.harbor.run import Interrupted
    from pytest_objective_scoring.reports import ReportError

    error = ReportError("r.xml", "no testsuite", line=3, element="testcase")
    assert state(pickle.loads(pickle.dumps(error))) == state(error) and str(error) == "r.xml:3: testcase: no testsuite"
    left = Interrupted([{"name": "c1", "error": "busy"}], "podman")
    assert state(pickle.loads(pickle.dumps(left))) == state(left) and str(left) == "interrupted; containers not removed: c1"
    assert state(pickle.loads(pickle.dumps(Interrupted()))) == state(Interrupted())
