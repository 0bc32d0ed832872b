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
* an id that ran more than once (a repeat plugin, or reports forged after the real
  ones): the worst outcome of its complete runs (``SEVERITY``) counts; attempts a
  rerun plugin reports as ``rerun`` are discarded
"""

from __future__ import annotations

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

# From least to most damning: when one id ran several times, the worst outcome counts.
SEVERITY: Final = (PASSED, XPASSED, XFAILED, SKIPPED, INCOMPLETE, XPASSED_STRICT, FAILED, ERROR, CRASHED, TAMPERED)


def worst(outcomes: Iterable[str]) -> str:
    """The most damning of several outcomes of one test id."""
    return max(outcomes, key=SEVERITY.index)


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


# One phase as kept per test: a tuple of atomic values, which the garbage collector stops
# tracking, so a run of tens of thousands of tests adds one tracked object per test, not six.
Phase = tuple[str, str, bool, bool, bool, bool]  # when, outcome, xfail, strict_xpass, raised, swapped
_PHASE_KEYS: Final = ("when", "outcome", "xfail", "strict_xpass", "raised_but_passed", "runtest_replaced")


# The phases of an ordinary passing test, shared by every record that has them (no allocation).
_PLAIN: Final = {
    when: (when, "passed", False, False, False, False) for when in ("setup", "call", "teardown")
}
_PLAIN_PASS: Final = [_PLAIN["setup"], _PLAIN["call"], _PLAIN["teardown"]]


class TestRecord:
    """Everything known about one executed test, kept compact, folded on demand."""

    __test__ = False
    __slots__ = ("nodeid", "_phases", "duration_sum", "first_message", "_folded", "any_failed", "earlier")

    def __init__(self, nodeid: str, facts: Iterable[Fact] = ()) -> None:
        self.nodeid = nodeid
        self._phases: list[Phase] = []
        self.duration_sum = 0.0
        self.first_message = ""
        self._folded: str | None = None
        self.any_failed = False  # pytest itself saw a failed report (what its exit status counts)
        self.earlier: tuple[str, ...] = ()  # outcomes of earlier complete runs of the same id
        for fact in facts:
            self.add(fact)

    def add(self, fact: Fact) -> None:
        self.add_phase(
            fact["when"], fact["outcome"], bool(fact.get("xfail")), bool(fact.get("strict_xpass")),
            bool(fact.get("raised_but_passed")), bool(fact.get("runtest_replaced")),
            float(fact.get("duration", 0.0) or 0.0), str(fact.get("message") or ""),
        )  # fmt: skip

    def add_phase(self, when: str, outcome: str, xfail: bool, strict_xpass: bool, raised: bool,
                  swapped: bool, duration: float, message: str) -> None:  # fmt: skip
        if outcome == "passed" and not (xfail or strict_xpass or raised or swapped) and when in _PLAIN:
            self._phases.append(_PLAIN[when])
        else:
            self._phases.append((when, outcome, xfail, strict_xpass, raised, swapped))
            if outcome == "failed":
                self.any_failed = True
        self.duration_sum += duration
        if message and not self.first_message:
            self.first_message = message
        self._folded = None

    def clear(self) -> None:
        self._phases = []
        self.any_failed = False
        self.earlier = ()
        self.duration_sum = 0.0
        self.first_message = ""
        self._folded = None

    @property
    def facts(self) -> list[dict[str, Any]]:
        """The phases as fact dicts (what :func:`fold` reads)."""
        return [dict(zip(_PHASE_KEYS, phase)) for phase in self._phases]

    @property
    def ran(self) -> bool:
        return bool(self._phases)

    @property
    def flags(self) -> list[tuple[str, str]]:
        """``(kind, phase)`` for every tampering mark the recorder put on this test's reports."""
        marks = []
        for phase in self._phases:
            if phase[4]:
                marks.append(("raised_but_passed", phase[0]))
            if phase[5]:
                marks.append(("runtest_replaced", phase[0]))
        return marks

    def start_again(self) -> None:
        """The same id runs again (a repeat plugin, a re-run after a crash, or forged reports):
        the finished run is kept as an earlier outcome and the worst of all runs counts."""
        self.earlier += (self.outcome,)
        self._phases = []
        self._folded = None

    @property
    def outcome(self) -> str:
        """The folded outcome, the worst over every complete run of the id (cached)."""
        if self._folded is None:
            current = PASSED if self._phases == _PLAIN_PASS else fold(self.facts)
            self._folded = worst((*self.earlier, current)) if self.earlier else current
        return self._folded

    @property
    def final(self) -> bool:
        return any(phase[0] in ("teardown", "???") for phase in self._phases)

    @property
    def duration(self) -> float:
        return round(self.duration_sum, 6)

    @property
    def phases(self) -> dict[str, str]:
        """Each phase's outcome; a call with any failed report (a failed subtest) is ``failed``."""
        phases = {phase[0]: phase[1] for phase in self._phases}
        if phases.get("call") not in (None, "failed") and any(p[0] == "call" and p[1] == "failed" for p in self._phases):
            phases["call"] = "failed"
        return phases

    @property
    def message(self) -> str:
        return self.first_message

    def __repr__(self) -> str:
        return f"TestRecord({self.nodeid!r}, {self.facts!r})"


class Collector:
    """Accumulates the phases of each test id in arrival order (the order of the run's log).

    A test whose phases are all ordinary passes is kept as a plain tuple (which the
    garbage collector stops tracking), not as an object: a run of tens of thousands
    of tests then adds almost nothing to every collection pytest's own objects go
    through. Anything else is kept as a :class:`TestRecord`. :attr:`records` is the
    view of both, in arrival order.

    A report with outcome ``rerun`` (pytest-rerunfailures) discards the attempt
    so far: only the final attempt counts.
    """

    def __init__(self) -> None:
        self._entries: dict[str, Any] = {}  # nodeid -> TestRecord, or (plain phases, duration)
        self._view: dict[str, TestRecord] | None = None

    @property
    def records(self) -> dict[str, TestRecord]:
        if self._view is None:
            view = {}
            for nodeid, entry in self._entries.items():
                view[nodeid] = entry if type(entry) is not tuple else _from_plain(nodeid, entry)
            self._view = view
        return self._view

    def add(self, fact: Fact) -> None:
        self.add_phase(
            fact["nodeid"], fact["when"], fact["outcome"], bool(fact.get("xfail")), bool(fact.get("strict_xpass")),
            bool(fact.get("raised_but_passed")), bool(fact.get("runtest_replaced")),
            float(fact.get("duration", 0.0) or 0.0), str(fact.get("message") or ""),
        )  # fmt: skip

    def _record(self, nodeid: str) -> TestRecord:
        entry = self._entries.get(nodeid)
        if type(entry) is tuple:
            entry = self._entries[nodeid] = _from_plain(nodeid, entry)
        elif entry is None:
            entry = self._entries[nodeid] = TestRecord(nodeid)
        return entry

    def add_phase(self, nodeid: str, when: str, outcome: str, xfail: bool, strict_xpass: bool, raised: bool,
                  swapped: bool, duration: float, message: str) -> None:  # fmt: skip
        self._view = None
        record = self._record(nodeid)
        if outcome == "rerun":
            record.clear()
            return
        if (when == "setup" or when == "???") and record._phases and record.final:
            record.start_again()
        record.add_phase(when, outcome, xfail, strict_xpass, raised, swapped, duration, message)

    def add_plain_pass(self, nodeid: str, when: str, duration: float) -> None:
        """The common case, kept cheap: an ordinary phase that passed."""
        entry = self._entries.get(nodeid)
        phase = _PLAIN.get(when)
        if phase is not None and (entry is None or (type(entry) is tuple and not (when == "setup" and entry[0]))):
            self._view = None
            if entry is None:
                self._entries[nodeid] = ((phase,), duration)
            else:
                self._entries[nodeid] = (entry[0] + (phase,), entry[1] + duration)
            return
        self.add_phase(nodeid, when, "passed", False, False, False, False, duration, "")

    def outcomes(self) -> dict[str, str]:
        return {nodeid: record.outcome for nodeid, record in self.records.items() if record.ran}


def _from_plain(nodeid: str, entry: tuple[tuple[Phase, ...], float]) -> TestRecord:
    record = TestRecord(nodeid)
    record._phases = list(entry[0])
    record.duration_sum = entry[1]
    return record
