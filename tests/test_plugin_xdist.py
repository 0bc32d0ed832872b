"""Under xdist the workers fold their tests and the controller only merges (issue 16): the merged
records must be exactly those a plain run's collector folds from the same reports, whatever
arrives: re-runs, subtests, tampered phases, crashes before and after a test's end, the same id on
two workers, a run interrupted mid-test."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_objective_scoring.plugin import TEST_KEY, MergingSession, ScoringSession, WorkerFolder, resolve_settings

from .conftest import by_id, normalize

FLAGS_KEY = "objective_scoring"


def report(nodeid: str, when: str, outcome: str, *, xfail: bool = False, strict: bool = False, raised: bool = False,
           duration: float = 0.125) -> pytest.TestReport:  # fmt: skip
    """A report as pytest (and the flagger) make it."""
    longrepr: Any = None
    if outcome == "failed":
        longrepr = "[XPASS(strict)] reason" if strict else f"{when} of {nodeid} failed"
    elif outcome == "skipped":
        longrepr = ("x.py", 1, f"skipped {when}")
    made = pytest.TestReport(nodeid, ("x.py", 1, nodeid), {}, outcome, longrepr, when, duration=duration)  # type: ignore[arg-type]
    if xfail:
        made.__dict__["wasxfail"] = "reason"
    if raised:
        made.__dict__[FLAGS_KEY] = {"raised_but_passed": True}
    return made


def passing(nodeid: str) -> list[pytest.TestReport]:
    return [report(nodeid, when, "passed") for when in ("setup", "call", "teardown")]


# Each scenario: what one test id's reports are, in order. "???" ends with xdist's crash report.
SCENARIOS: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
    "plain": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "passed", {})],
    "fails": [("setup", "passed", {}), ("call", "failed", {}), ("teardown", "passed", {})],
    "setup-error": [("setup", "failed", {}), ("teardown", "passed", {})],
    "teardown-error": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "failed", {})],
    "skipped": [("setup", "skipped", {}), ("teardown", "passed", {})],
    "xfail": [("setup", "passed", {}), ("call", "skipped", {"xfail": True}), ("teardown", "passed", {})],
    "strict-xpass": [("setup", "passed", {}), ("call", "failed", {"strict": True}), ("teardown", "passed", {})],
    "subtests": [("setup", "passed", {}), ("call", "passed", {}), ("call", "failed", {}), ("call", "passed", {}),
                 ("teardown", "passed", {})],
    "tampered-setup": [("setup", "passed", {"raised": True}), ("call", "passed", {}), ("teardown", "passed", {})],
    "rerun-call": [("setup", "passed", {}), ("call", "rerun", {}), ("setup", "passed", {}), ("call", "passed", {}),
                   ("teardown", "passed", {})],
    "rerun-teardown": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "rerun", {}), ("setup", "passed", {}),
                       ("call", "failed", {}), ("teardown", "passed", {})],
    "crash-in-call": [("setup", "passed", {}), ("???", "failed", {})],
    "crash-after-tampered-setup": [("setup", "passed", {"raised": True}), ("???", "failed", {})],
    "crash-after-end": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "passed", {}), ("???", "failed", {})],
    "crash-before-start": [("???", "failed", {})],
    "interrupted": [("setup", "passed", {}), ("call", "passed", {})],
    "ran-twice": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "passed", {}),
                  ("setup", "passed", {}), ("call", "failed", {}), ("teardown", "passed", {})],
    "ran-twice-plainly": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "passed", {}),
                          ("setup", "passed", {}), ("call", "passed", {}), ("teardown", "passed", {})],
}  # fmt: skip


@pytest.fixture
def sessions(pytester, write_instance):
    """A plain run's session and an xdist controller's, over the same (unused) instance."""
    instance_path = write_instance(["x.py::a"])
    config = pytester.parseconfig(f"--objective-score={instance_path}")
    settings = resolve_settings(config, pytest.UsageError)
    from pytest_objective_scoring.instances import load_instance

    instance = load_instance(instance_path)

    def make() -> tuple[ScoringSession, MergingSession, Any]:
        return ScoringSession(config, settings, instance), MergingSession(config, settings, instance), config

    return make


def through_xdist(config: Any, made: pytest.TestReport, worker: str, folder: WorkerFolder | None) -> pytest.TestReport:
    """What the controller receives: the report after the worker's hooks, serialised and read back."""
    if folder is not None:
        folder.pytest_runtest_logreport(made)
    data = config.hook.pytest_report_to_serializable(config=config, report=made)
    data["worker_id"] = worker
    received = config.hook.pytest_report_from_serializable(config=config, data=data)
    received.node = worker  # what xdist's DSession sets
    return received


def crash_report(nodeid: str, worker: str) -> pytest.TestReport:
    """xdist's report of the test a worker was running when it died."""
    made = pytest.TestReport(nodeid, ("x.py", None, "x.py"), {}, "failed", f"worker crashed while running {nodeid!r}",
                             "???")  # type: ignore[arg-type]  # fmt: skip
    made.node = worker  # type: ignore[attr-defined]
    return made


def folded(records: Any) -> dict[str, tuple[Any, ...]]:
    return {nodeid: (r.outcome, r.phases, r.duration, r.message, r.any_failed, r.flags, r.ran) for nodeid, r in records.items()}


def run_both(make: Any, streams: list[tuple[str, list[tuple[str, str, dict[str, Any]]], str]], seed: int) -> None:
    """Interleave the streams (each keeps its order), feed a plain session the raw reports and a
    merging one what xdist delivers from folding workers; their records must be the same."""
    plain, merging, config = make()
    folders = {worker: WorkerFolder() for _, _, worker in streams}
    queue = [(nodeid, list(phases), worker) for nodeid, phases, worker in streams]
    rng = random.Random(seed)
    while queue:
        index = rng.randrange(len(queue))
        nodeid, phases, worker = queue[index]
        when, outcome, flags = phases.pop(0)
        if not phases:
            queue.pop(index)
        if when == "???":
            plain.pytest_runtest_logreport(crash_report(nodeid, worker))
            merging.pytest_runtest_logreport(crash_report(nodeid, worker))
            continue
        plain.pytest_runtest_logreport(report(nodeid, when, outcome, **flags))
        merging.pytest_runtest_logreport(through_xdist(config, report(nodeid, when, outcome, **flags), worker, folders[worker]))
    assert folded(merging.records()) == folded(plain.records())
    assert merging.flagged == plain.flagged


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_kind_of_test_merges_as_a_plain_run_folds_it(sessions, name):
    run_both(sessions, [(f"x.py::{name}", SCENARIOS[name], "gw0"), ("x.py::other", SCENARIOS["plain"], "gw1")], seed=1)


def test_the_same_id_on_two_workers_is_two_runs(sessions):
    first, second = SCENARIOS["plain"], SCENARIOS["fails"]
    run_both(sessions, [("x.py::twice", first + second, "gw0")], seed=2)  # one worker, one after the other
    plain, merging, config = sessions()
    folders = {"gw0": WorkerFolder(), "gw1": WorkerFolder()}
    for worker, phases in (("gw0", first), ("gw1", second)):
        for when, outcome, flags in phases:
            plain.pytest_runtest_logreport(report("x.py::twice", when, outcome, **flags))
            merging.pytest_runtest_logreport(through_xdist(config, report("x.py::twice", when, outcome, **flags), worker,
                                                          folders[worker]))  # fmt: skip
    assert folded(merging.records()) == folded(plain.records())
    assert merging.records()["x.py::twice"].outcome == "failed"


@pytest.mark.parametrize("seed", range(12))
def test_a_shuffled_mix_of_everything_merges_as_a_plain_run_folds_it(sessions, seed):
    rng = random.Random(seed)
    names = sorted(SCENARIOS)
    streams = [(f"x.py::t{i}-{name}", SCENARIOS[name], f"gw{rng.randrange(3)}")
               for i, name in enumerate(rng.choices(names, k=40))]  # fmt: skip
    run_both(sessions, streams, seed)


def test_a_plainly_passing_test_reaches_the_controller_as_one_number(sessions):
    _, merging, config = sessions()
    folder = WorkerFolder()
    received = [through_xdist(config, made, "gw0", folder) for made in passing("x.py::a")]
    assert [TEST_KEY in r.__dict__ for r in received] == [False, False, True]
    assert received[-1].__dict__[TEST_KEY] == pytest.approx(0.375)
    for r in received:
        merging.pytest_runtest_logreport(r)
    assert not merging.inflight
    record = merging.records()["x.py::a"]
    assert (record.outcome, record.duration, record.phases["teardown"]) == ("passed", pytest.approx(0.375), "passed")
    assert folder.phases == {}, "the worker keeps nothing of a finished test"


OUTCOMES_AND_RERUNS = """
import pytest

RUNS = {}

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_passes(): pass
def test_fails(): assert 1 == 2
@pytest.mark.xfail(reason="known")
def test_xfails(): assert 0
@pytest.mark.xfail(strict=True, reason="strict")
def test_xpasses_strict(): pass
def test_teardown_error(broken_teardown): pass
def test_skipped(): pytest.skip("no")
def test_flaky():
    RUNS["flaky"] = RUNS.get("flaky", 0) + 1
    assert RUNS["flaky"] > 1
"""

RERUN_PLUGIN = """
import pytest
from _pytest.runner import runtestprotocol

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    # pytest-rerunfailures' protocol: a failed first attempt is logged up to its failing phase, as "rerun"
    log = item.ihook.pytest_runtest_logreport
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(2):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        failed = next((made for made in reports if made.failed), None)
        if attempt == 0 and failed is not None and "flaky" in item.nodeid:
            for made in reports[: reports.index(failed)]:
                log(report=made)
            failed.outcome = "rerun"
            log(report=failed)
            continue
        for made in reports:
            log(report=made)
        break
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""


def test_reruns_and_every_outcome_match_a_serial_run(pytester, write_instance, run_and_parse):
    pytester.makeconftest(RERUN_PLUGIN)
    pytester.makepyfile(test_mix=OUTCOMES_AND_RERUNS)
    names = ["passes", "fails", "xfails", "xpasses_strict", "teardown_error", "skipped", "flaky"]
    instance = write_instance(["test_mix.py::test_flaky", "test_mix.py::test_passes"],
                              [f"test_mix.py::test_{n}" for n in names[1:-1]])  # fmt: skip
    _, serial = run_and_parse(instance, out="serial.json")
    _, parallel = run_and_parse(instance, n=2, out="parallel.json")
    assert normalize(serial) == normalize(parallel)
    tests = by_id(parallel)
    assert tests["test_mix.py::test_flaky"]["outcome"] == "passed", "only the final attempt counts"
    assert tests["test_mix.py::test_teardown_error"]["outcome"] == "error"
    assert parallel["score"]["fail_to_pass"]["passed"] == 2


def test_a_worker_crash_in_setup_keeps_the_phases_that_came(pytester, write_instance, run_and_parse):
    pytester.makepyfile(
        test_crash="""
        import os, pytest

        @pytest.fixture
        def dies():
            yield
            os._exit(1)

        def test_before(): pass
        def test_dies_in_teardown(dies): pass
        def test_after(): pass
        """
    )
    instance = write_instance(["test_crash.py::test_before"], ["test_crash.py::test_dies_in_teardown", "test_crash.py::test_after"])
    _, envelope = run_and_parse(instance, n=2)
    tests = by_id(envelope)
    crashed = tests["test_crash.py::test_dies_in_teardown"]
    assert crashed["outcome"] == "crashed" and crashed["status"] == "missing"
    assert crashed["phases"] == {"setup": "passed", "call": "passed", "???": "failed"}, "the phases before the crash count"
    assert tests["test_crash.py::test_before"]["status"] == "passed"
    assert tests["test_crash.py::test_after"]["status"] == "preserved"
    assert envelope["score"]["resolved"] == "not_resolved"
