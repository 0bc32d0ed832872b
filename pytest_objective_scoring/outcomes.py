"""Fold the phase reports of each test into one outcome.

Pure functions over the JSON-native facts made by :mod:`.recorder`; this module
never imports pytest. The folding rules (``docs/outcomes.md`` has the table):

* a phase ``"???"`` (a crashed xdist worker's synthetic report) -> ``crashed``
* a phase that says passed while it raised, or whose ``runtest`` was swapped by
  code from the graded copy -> ``tampered``
* several call reports (subtests): any failed one makes the call failed
* setup failed -> ``error``; setup skipped -> ``skipped`` (``xfailed`` under xfail)
* call failed -> ``failed`` (``xpassed_strict`` for a strict xpass)
* call skipped -> ``skipped`` (``xfailed`` under xfail); call passed -> ``passed``
  (``xpassed`` for a non-strict xpass)
* a failed teardown (reported as skipped under an xfail mark) turns passed, xpassed,
  xfailed or skipped into ``error``
* a test whose teardown never arrived (an interrupted run) -> ``incomplete``
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Mapping

__all__ = ["OUTCOMES", "Collector", "TestRecord", "fold"]

PASSED: Final = "passed"
XPASSED: Final = "xpassed"
XFAILED: Final = "xfailed"
FAILED: Final = "failed"
XPASSED_STRICT: Final = "xpassed_strict"
ERROR: Final = "error"
SKIPPED: Final = "skipped"
CRASHED: Final = "crashed"
TAMPERED: Final = "tampered"
INCOMPLETE: Final = "incomplete"
MISSING: Final = "missing"

OUTCOMES: Final = (
    PASSED,
    XPASSED,
    XFAILED,
    FAILED,
    XPASSED_STRICT,
    ERROR,
    SKIPPED,
    CRASHED,
    TAMPERED,
    INCOMPLETE,
    MISSING,
)

Fact = Mapping[str, Any]


def _phase_outcome(fact: Fact) -> str:
    outcome = fact["outcome"]
    when = fact["when"]
    if outcome == "passed":
        return XPASSED if when == "call" and fact.get("xfail") else PASSED
    if outcome == "skipped":
        return XFAILED if fact.get("xfail") else SKIPPED
    if fact.get("strict_xpass"):
        return XPASSED_STRICT
    return FAILED if when == "call" else ERROR


def fold(facts: Iterable[Fact]) -> str:
    """One outcome from the phase facts of a single test, in arrival order."""
    by_phase: dict[str, Fact] = {}
    call_failed: Fact | None = None
    for fact in facts:
        if fact.get("raised_but_passed") or fact.get("runtest_replaced"):
            return TAMPERED
        if fact["when"] == "call" and fact["outcome"] == "failed" and call_failed is None:
            call_failed = fact  # a failed subtest: the test failed, whatever its last call report says
        by_phase[fact["when"]] = fact
    if call_failed is not None:
        by_phase["call"] = call_failed
    if "???" in by_phase:
        return CRASHED
    if "teardown" not in by_phase:
        return INCOMPLETE
    setup = by_phase.get("setup")
    if setup is not None and setup["outcome"] != "passed":
        result = _phase_outcome(setup)
    elif "call" in by_phase:
        result = _phase_outcome(by_phase["call"])
    else:
        return INCOMPLETE
    teardown = by_phase["teardown"]
    # pytest reports a teardown that raised as failed, or as skipped with wasxfail under an xfail mark
    teardown_raised = teardown["outcome"] == "failed" or (teardown["outcome"] == "skipped" and teardown.get("xfail"))
    if teardown_raised and result in (PASSED, XPASSED, XFAILED, SKIPPED):
        return ERROR
    return result


@dataclass
class TestRecord:
    """Everything known about one executed test, ready to fold."""

    __test__ = False

    nodeid: str
    facts: list[dict[str, Any]] = field(default_factory=list)
    _folded: tuple[int, str] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def outcome(self) -> str:
        """The folded outcome (cached until another fact arrives)."""
        if self._folded is None or self._folded[0] != len(self.facts):
            self._folded = (len(self.facts), fold(self.facts))
        return self._folded[1]

    @property
    def final(self) -> bool:
        return any(f["when"] in ("teardown", "???") for f in self.facts)

    @property
    def duration(self) -> float:
        return round(sum(float(f.get("duration", 0.0)) for f in self.facts), 6)

    @property
    def phases(self) -> dict[str, str]:
        return {f["when"]: f["outcome"] for f in self.facts}

    @property
    def message(self) -> str:
        for fact in self.facts:
            if fact.get("message"):
                return str(fact["message"])
        return ""


class Collector:
    """Accumulates facts per test id in arrival order (the order of the run's log).

    A report with outcome ``rerun`` (pytest-rerunfailures) discards the attempt
    so far: only the final attempt counts.
    """

    def __init__(self) -> None:
        self.records: dict[str, TestRecord] = {}

    def add(self, fact: dict[str, Any]) -> None:
        nodeid = fact["nodeid"]
        record = self.records.get(nodeid)
        if record is None:
            record = self.records[nodeid] = TestRecord(nodeid)
        if fact["outcome"] == "rerun":
            record.facts.clear()
            record._folded = None
            return
        when = fact["when"]
        if (when == "setup" or when == "???") and record.facts and record.final:
            # a second run of the same id (e.g. a crashed worker's test rerun): start over
            record.facts.clear()
            record._folded = None
        record.facts.append(fact)

    def outcomes(self) -> dict[str, str]:
        return {nodeid: record.outcome for nodeid, record in self.records.items() if record.facts}
