"""The pytest plugin: ``pytest --objective-score=INSTANCE``.

Thin hooks only, imported on first use: :mod:`.plugin_entry` (the ``pytest11``
entry point) registers the options and calls :func:`configure` only when one of
them is given. With an instance:

* :class:`~.recorder.ReportFlagger` runs in every process (xdist workers too)
  and marks reports that say passed although their phase raised;
* :class:`Selector` (``--objective-select``) deselects unlisted tests where
  collection happens (on the workers under xdist);
* :class:`ScoringSession` runs only on the controller (or a plain run): it folds
  every report into one outcome per test, grades the two gates once, writes the
  envelope, adds the Score to pytest-json-report's report, prints the summary
  and, with ``--objective-gate``, sets the exit status;
* under xdist, :class:`WorkerFolder` folds each test on its worker and
  :class:`MergingSession`, the controller's ScoringSession, only merges.
"""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Mapping

import pytest

from . import options
from .settings import Settings, resolve_settings

if TYPE_CHECKING:
    from .instances import Instance
    from .outcomes import Collector, TestRecord

SESSION_NAME = "objective-scoring-session"
WORKER_CPU_NAME = "objective-scoring-worker-cpu"
WORKER_CPU_KEY = "objective_scoring_cpu"
SELECTOR_NAME = "objective-scoring-selector"
FLAGGER_NAME = "objective-scoring-flagger"
FOLDER_NAME = "objective-scoring-folder"
WORKERINPUT_KEY = "objective_scoring"
FLAGS_KEY = "objective_scoring"  # recorder.FLAGS_KEY: the flagger's marks on a report
TEST_KEY = "objective_scoring_test"  # WorkerFolder's summary of a test, on the report that ends it
NO_FLAGS: dict[str, bool] = {}
PLAIN_WHENS = frozenset({"setup", "call", "teardown"})
PLAIN_ORDER = ["setup", "call", "teardown"]


def _settings(config: pytest.Config) -> Settings:
    settings = resolve_settings(config, pytest.UsageError)
    workerinput = getattr(config, "workerinput", None)
    if workerinput and WORKERINPUT_KEY in workerinput:
        sent = workerinput[WORKERINPUT_KEY]
        settings = Settings(
            instance=Path(sent["instance"]),
            instance_id=sent["instance_id"],
            out=None,
            compat=sent["compat"],
            patch_ref=None,
            gate=False,
            select=sent["select"],
        )
    return settings


def _load(settings: Settings) -> Instance:
    from .instances import InstanceError, load_instance

    assert settings.instance is not None
    try:
        return load_instance(settings.instance, settings.instance_id)
    except InstanceError as exc:
        raise pytest.UsageError(f"--objective-score: {exc}") from None


def _check_combinations(config: pytest.Config, settings: Settings) -> None:
    if not settings.enabled:
        given = [
            name
            for name, value in (
                ("--objective-score-out", settings.out),
                ("--objective-gate", settings.gate),
                ("--objective-select", settings.select),
                ("--objective-instance-id", settings.instance_id),
                ("--objective-cost", settings.cost),
                ("--objective-harness", settings.harness),
            )
            if value
        ]
        if given:
            raise pytest.UsageError(f"{', '.join(given)} needs --objective-score=INSTANCE")
        return
    if getattr(config.option, "dist", "no") == "each":
        raise pytest.UsageError(
            "--objective-score cannot grade --dist=each: every test runs once per worker, so one id has several outcomes"
        )


def configure(config: pytest.Config) -> None:
    """``pytest_configure`` (trylast) of a run that gives any of the plugin's options: resolve and
    check them, and with an instance register the plugin's objects for this process's role."""
    settings = _settings(config)
    _check_combinations(config, settings)
    if not settings.enabled:
        return
    workerinput = getattr(config, "workerinput", None)
    instance = _load(settings) if workerinput is None or settings.select else None  # the controller checked it
    config.pluginmanager.register(_flagger(), FLAGGER_NAME)
    if settings.select:
        assert instance is not None
        config.pluginmanager.register(Selector(instance, settings.compat), SELECTOR_NAME)
    if workerinput is None:
        assert instance is not None
        distributed = _distributes(config)
        kind = MergingSession if distributed else ScoringSession
        scoring = kind(config, settings, instance, _harness_cost(settings))
        config.pluginmanager.register(scoring, SESSION_NAME)
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistHooks(settings, scoring, fold=distributed), "objective-scoring-xdist")
    else:
        config.pluginmanager.register(WorkerCpu(config), WORKER_CPU_NAME)
        if (workerinput.get(WORKERINPUT_KEY) or {}).get("fold"):
            config.pluginmanager.register(WorkerFolder(), FOLDER_NAME)


def _distributes(config: pytest.Config) -> bool:
    """Whether this process is the controller of an xdist run (whichever plugin configures first)."""
    if config.pluginmanager.get_plugin("dsession") is not None:
        return True
    option = config.option
    return (config.pluginmanager.hasplugin("xdist") and getattr(option, "dist", "no") != "no"
            and bool(getattr(option, "tx", None)) and not option.collectonly)  # xdist's own test  # fmt: skip


def _harness_cost(settings: Settings) -> Any:
    if settings.cost is None:
        return None
    from .cost_ledger import CostError, load_harness_cost

    try:
        return load_harness_cost(settings.cost)
    except CostError as exc:
        raise pytest.UsageError(f"--objective-cost: {exc}") from None


def process_cpu_seconds() -> float:
    """CPU-seconds of this process and of its children that have been waited for."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class WorkerCpu:
    """On an xdist worker: hand the worker's CPU-seconds to the controller when it finishes."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_sessionfinish(self) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:
            output[WORKER_CPU_KEY] = process_cpu_seconds()


class WorkerFolder:
    """On an xdist worker: fold each test here, so that the controller only merges.

    The phases of a test are gathered as its reports are made; the report that ends the test (its
    teardown) carries, under ``TEST_KEY``, all the controller's grading needs of them: the test's
    duration (a float) when every phase plainly passed, else every phase as a fact list ``[when,
    outcome, xfail, strict_xpass, raised_but_passed, runtest_replaced, duration, message]`` in the
    order the reports came (the arguments of ``Collector.add_phase``). A later report of the same
    id (a re-run) starts a new list, which its own teardown carries.
    """

    def __init__(self) -> None:
        from .recorder import _message

        self.message_of = _message
        self.phases: dict[str, list[Any]] = {}

    @pytest.hookimpl(tryfirst=True)  # before xdist serialises the report for the controller
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid, when, outcome = report.nodeid, report.when, report.outcome
        attributes = report.__dict__
        duration = report.duration or 0.0
        phase: Any
        if outcome == "passed" and when in PLAIN_WHENS and "wasxfail" not in attributes and FLAGS_KEY not in attributes:
            phase = (when, duration)  # a plain pass
        else:
            flags = attributes.get(FLAGS_KEY) or NO_FLAGS
            longrepr = report.longrepr
            phase = [when or "???", outcome, "wasxfail" in attributes,
                     outcome == "failed" and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]"),
                     bool(flags.get("raised_but_passed")), bool(flags.get("runtest_replaced")), duration,
                     "" if outcome == "passed" else self.message_of(report)]  # fmt: skip
        seen = self.phases.get(nodeid)
        if seen is None:
            seen = self.phases[nodeid] = []
        seen.append(phase)
        if when == "teardown":
            del self.phases[nodeid]
            attributes[TEST_KEY] = summarize(seen)


def summarize(phases: list[Any]) -> Any:
    """A folded test's value for the controller: its duration, or its phases as fact lists."""
    if len(phases) == 3 and all(type(p) is tuple for p in phases) and [p[0] for p in phases] == PLAIN_ORDER:
        return float(phases[0][1] + phases[1][1] + phases[2][1])
    return [[p[0], "passed", False, False, False, False, p[1], ""] if type(p) is tuple else p for p in phases]


def _flagger() -> object:
    """The report flagger, as a new-style wrapper where pluggy has them (pluggy >= 1.1)."""
    from .recorder import ReportFlagger, flag_report

    try:
        marker = pytest.hookimpl(wrapper=True, tryfirst=True)
    except TypeError:
        return ReportFlagger()

    class WrapperFlagger:
        @marker
        def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
            report = yield
            if call.excinfo is not None:
                flag_report(report, call, item, None)
            return report

    return WrapperFlagger()


def unconfigure(config: pytest.Config) -> None:
    for name in (SESSION_NAME, SELECTOR_NAME, FLAGGER_NAME, WORKER_CPU_NAME, FOLDER_NAME, "objective-scoring-xdist"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin, name)


class XdistHooks:
    """Controller -> worker: the resolved instance, so workers select the same tests, and whether
    they fold their tests (:class:`WorkerFolder`); worker -> controller: each worker's CPU-seconds,
    for the cost ledger."""

    def __init__(self, settings: Settings, scoring: ScoringSession, fold: bool = False) -> None:
        self.settings = settings
        self.scoring = scoring
        self.fold = fold

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        cpu = output.get(WORKER_CPU_KEY)
        if isinstance(cpu, (int, float)):
            self.scoring.worker_cpu += float(cpu)
        else:
            self.scoring.workers_unmeasured += 1

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = {
            "instance": str(self.settings.instance),
            "instance_id": self.settings.instance_id,
            "compat": self.settings.compat,
            "select": self.settings.select,
            "fold": self.fold,
        }


class Selector:
    """``--objective-select``: keep only the listed tests."""

    def __init__(self, instance: Instance, compat: str) -> None:
        from .scorer import _escaped, continues, looks_cut

        self.escape = _escaped
        self.continues = continues
        self.strict = compat == "strict"
        self.listed = set(instance.listed)
        if compat == "strict":  # the grader matches either spelling of an escaped id: so must selection
            self.listed |= {_escaped(t) for t in instance.listed}
            # an id cut at a space stands for every test that continues it with whitespace (either spelling)
            self.cuts = tuple(sorted({s for t in instance.listed if looks_cut(t) for s in (t, _escaped(t))}))
        else:  # SWE-bench matches a cut id against every id it prefixes
            self.cuts = tuple(t for t in instance.listed if t.count("[") > t.count("]"))

    def _continues_a_cut(self, nodeid: str) -> bool:
        if not self.cuts:
            return False
        spellings = (nodeid, self.escape(nodeid)) if self.strict else (nodeid,)
        for spelling in spellings:
            if spelling.startswith(self.cuts):
                if not self.strict or any(self.continues(spelling, cut) for cut in self.cuts):
                    return True
        return False

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            nodeid = item.nodeid
            wanted = (
                nodeid in self.listed
                or (self.strict and self.escape(nodeid) in self.listed)
                or self._continues_a_cut(nodeid)
            )
            (kept if wanted else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept


class ScoringSession:
    """Controller-only: folds reports, grades once, writes and reports."""

    def __init__(self, config: pytest.Config, settings: Settings, instance: Instance, harness_cost: Any = None) -> None:
        from .outcomes import Collector
        from .recorder import _message

        self.message_of = _message
        self.config = config
        self.settings = settings
        self.instance = instance
        self.collector = Collector()
        self.flagged: set[str] = set()  # ids with a report the flagger marked
        self.collect_errors: list[tuple[str, str]] = []
        self.session: pytest.Session | None = None
        self.envelope: dict[str, Any] | None = None
        self.written: list[str] = []
        self.ledger_line = ""
        self.out_line: str | None = None  # why --objective-score-out could not be written
        self.harness_cost = harness_cost
        self.cpu_at_start = process_cpu_seconds()
        self.wall_at_start = time.perf_counter()
        self.worker_cpu = 0.0
        self.workers_unmeasured = 0

    def pytest_report_header(self, config: pytest.Config) -> str:
        i = self.instance
        return (
            f"objective-scoring: {i.instance_id} ({len(i.fail_to_pass)} FAIL_TO_PASS, {len(i.pass_to_pass)} "
            f"PASS_TO_PASS) compat={self.settings.compat} gate={'on' if self.settings.gate else 'off'}"
        )

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        self.started = time.time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The hot path (three calls per test): the same fields as recorder.fact_from_report,
        # read straight into the collector without building a dict.
        outcome = report.outcome
        attributes = report.__dict__
        if outcome == "passed" and "wasxfail" not in attributes and FLAGS_KEY not in attributes:
            self.collector.add_plain_pass(report.nodeid, report.when or "???", report.duration or 0.0)
            return
        flags = attributes.get(FLAGS_KEY) or NO_FLAGS
        if flags:
            self.flagged.add(report.nodeid)
        longrepr = report.longrepr
        self.collector.add_phase(
            report.nodeid,
            report.when or "???",
            outcome,
            "wasxfail" in attributes,
            outcome == "failed" and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]"),
            bool(flags.get("raised_but_passed")),
            bool(flags.get("runtest_replaced")),
            report.duration or 0.0,
            "" if outcome == "passed" else self.message_of(report),
        )

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            from .recorder import _message

            self.collect_errors.append((report.nodeid, _message(report) or "collection error"))

    def records(self) -> Mapping[str, TestRecord]:
        """Every test that reported, folded, in arrival order."""
        return self.collector.records

    def finish(self) -> dict[str, Any]:
        """Grade once (memoised): called from sessionfinish and from pytest-json-report."""
        if self.envelope is not None:
            return self.envelope
        from . import envelope as env
        from .scorer import exit_status_note, grade, make_score, no_verdict_reason

        session = self.session
        exitstatus = int(session.exitstatus) if session is not None else None
        records = self.records()
        grading = grade(self.instance, records, self.settings.compat)
        stopped = bool(session is not None and (session.shouldfail or session.shouldstop))
        reason = no_verdict_reason(
            exitstatus=exitstatus,
            collect_errors=self.collect_errors,
            stopped_early=stopped,
            grading=grading,
            records=records,
        )
        if reason is None:
            none_ran = len(grading.missing) == len(grading.results)
            reason = _ran_no_test(self.config.option) or _not_its_repository(Path(self.config.rootpath), self.instance,
                                                                             none_ran)  # fmt: skip
        score = None
        # the candidate is named even when there is no verdict, so runs stay apart in the ledger
        ref = self.settings.patch_ref or worktree_patch_ref(Path(self.config.rootpath), self.settings.out)
        if reason is None:
            by = env.graded_by(
                mode="plugin",
                pytest_version=pytest.__version__,
                python=f"{platform.python_implementation()}/{platform.python_version()}",
                platform=f"{sys.platform}-{platform.machine()}",
                timeout=_timeout_of(self.config),
                compat=self.settings.compat,
            )
            score = make_score(grading, ref, by, int(time.time()))
        flags = [
            {"kind": kind, "detail": f"{nodeid} ({when})"}
            for nodeid, record in records.items()
            if nodeid in self.flagged
            for kind, when in record.flags
        ]
        self.envelope = env.build_envelope(
            instance_id=self.instance.instance_id,
            score=score,
            grading=grading,
            no_verdict=reason,
            session={
                "exitstatus": exitstatus,
                "note": exit_status_note(exitstatus, records),
                "collection_errors": [{"nodeid": n, "message": m} for n, m in self.collect_errors],
                "rootdir": str(self.config.rootpath),
                "instance_file": str(self.settings.instance),
                "duration": round(time.time() - getattr(self, "started", time.time()), 3),
            },
            integrity=flags,
            extra={**self.cost(), "patch_ref": ref, "digests": self.digests(ref, score)},
        )
        self.settle(self.envelope)
        return self.envelope

    def digests(self, ref: str, score: Any) -> dict[str, Any]:
        from .integrity import digests, task_id_of
        from .recorder import installed_distributions

        session = {"python_implementation": platform.python_implementation(), "python_version": platform.python_version(),
                   "pytest_version": pytest.__version__, "platform": f"{sys.platform}-{platform.machine()}",
                   "distributions": installed_distributions()}  # fmt: skip
        return digests(task_id_of(self.instance.fields), ref, sys.executable, session,
                       score.to_dict() if score is not None else None)  # fmt: skip

    def settle(self, envelope: dict[str, Any]) -> None:
        """The run's disposition, with the task's audit state from the ledger when there is one."""
        from .integrity import settle

        audit = None
        if self.settings.ledger is not None and self.settings.ledger.exists():
            from .audit_ledger import audit_of, read_audits

            try:
                audit = audit_of(read_audits(self.settings.ledger), self.instance.fields)
            except Exception as exc:  # a locked, corrupt or foreign ledger never breaks the run: the state is unknown
                problem = " ".join(str(exc).split()) or type(exc).__name__
                audit = {"state": "unknown", "reason": f"the ledger {self.settings.ledger} could not be read ({problem})"}
        elif self.settings.ledger is not None:
            audit = {"state": "missing", "ran_at": None, "next_due": None, "seq": None}
        settle(envelope, audit)

    def cost(self) -> dict[str, Any]:
        """The run's ``harness``, ``cost`` and ``cost_breakdown`` (CPU of this process, its
        waited-for children and every xdist worker; wall time since pytest was configured)."""
        from .cost_ledger import run_cost

        cpu = process_cpu_seconds() - self.cpu_at_start + self.worker_cpu
        entry = run_cost(self.harness_cost, cpu=cpu, wall_time=time.perf_counter() - self.wall_at_start,
                         rate=self.settings.compute_rate)  # fmt: skip
        if self.workers_unmeasured:
            entry["breakdown"]["cpu_note"] = f"{self.workers_unmeasured} xdist worker(s) did not report their CPU (crashed?)"
        harness = self.settings.harness or (self.harness_cost.harness if self.harness_cost else None)
        return {"harness": harness, "cost": entry["cost"], "cost_breakdown": entry["breakdown"]}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.session = session
        # Grading builds tens of thousands of small acyclic objects at once; a full collection
        # over the whole session's objects in the middle of it would cost more than the grading.
        collecting = gc.isenabled()
        gc.disable()
        try:
            envelope = self.finish()
            if self.settings.out is not None:
                self.out_line = _write_out(self.settings.out, envelope)
                if self.out_line is None:
                    self.written.append(str(self.settings.out))
            if self.settings.ledger is not None:
                self.ledger_line = _record(self.settings.ledger, envelope)
        finally:
            if collecting:
                gc.enable()
        session.exitstatus = final_status(int(session.exitstatus), envelope["score"], self.settings.gate,
                                          written=self.out_line is None)  # fmt: skip

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        envelope = self.finish()
        json_report["objective_scoring"] = {
            "status": envelope["status"],
            "no_verdict_reason": envelope["no_verdict_reason"],
            "score": envelope["score"],
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.envelope is None or self.config.get_verbosity() < -1:
            return
        from .render import render_envelope

        render_envelope(terminalreporter, self.envelope, self.written)
        line, markup = integrity_status(self.envelope)
        terminalreporter.write_line(line, **markup)
        if self.out_line:  # the envelope could not be written: it is printed in full, never lost
            from .envelope import dumps

            terminalreporter.write_line(self.out_line, red=True)
            terminalreporter.write_line(dumps(self.envelope).rstrip("\n"))
        if self.ledger_line:
            terminalreporter.write_line(self.ledger_line, red=self.ledger_line.startswith("ledger: NOT"))


class MergingSession(ScoringSession):
    """The controller of an xdist run: its workers fold their tests (:class:`WorkerFolder`), so a
    test arrives as one value on its teardown report, and this only merges it into the collector.

    The phases a worker reports before that value are kept aside, untouched, and dropped when it
    comes; they count only if it never does: a worker that crashed in the middle of the test (xdist
    then reports the test with ``when="???"``), an interrupted run, or a worker that does not fold.
    Whatever concerns an id beyond one folded run (a crash report, a second run, a phase nobody
    folded) goes through the collector in arrival order, exactly as a plain run's reports do.
    """

    def __init__(self, config: pytest.Config, settings: Settings, instance: Instance, harness_cost: Any = None) -> None:
        super().__init__(config, settings, instance, harness_cost)
        self.inflight: dict[tuple[Any, str], list[pytest.TestReport]] = {}  # (worker, id) -> its phases so far

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        attributes = report.__dict__
        folded = attributes.get(TEST_KEY)
        if folded is not None:
            nodeid = report.nodeid
            self.inflight.pop((attributes.get("node"), nodeid), None)  # the phases the value stands for
            if type(folded) is float:
                _add_plain_pass(self.collector, nodeid, folded)
            else:
                for fact in folded:
                    if fact[4] or fact[5]:
                        self.flagged.add(nodeid)
                    self.collector.add_phase(nodeid, *fact)
        elif report.when != "???" and "node" in attributes:  # a phase of a test its worker is still running
            self.inflight.setdefault((attributes["node"], report.nodeid), []).append(report)
        else:
            self.flush((attributes.get("node"), report.nodeid))
            ScoringSession.pytest_runtest_logreport(self, report)

    def flush(self, key: tuple[Any, str]) -> None:
        """The phases kept aside for a test that will never be folded, into the collector."""
        for report in self.inflight.pop(key, ()):
            ScoringSession.pytest_runtest_logreport(self, report)

    def records(self) -> Mapping[str, TestRecord]:
        for key in list(self.inflight):  # tests that never ended (an interrupted run)
            self.flush(key)
        return self.collector.records


def _add_plain_pass(collector: Collector, nodeid: str, duration: float) -> None:
    collector.add_plain_pass(nodeid, "setup", duration)
    collector.add_plain_pass(nodeid, "call", 0.0)
    collector.add_plain_pass(nodeid, "teardown", 0.0)


# What each reason code of a disposition (docs/audit.md, "Run integrity") means, in a few words.
REASON_WORDS = {
    "no_verdict": "there is no verdict",
    "tests_not_protected": "the tests ran unprotected in this working tree",
    "task_audit_missing": "the task was never audited (objective-score audit run)",
    "task_audit_unknown": "the task's audit state is unknown",
    "task_audit_overdue": "the task's audit is overdue",
    "task_audit_incomplete": "the task's last audit did not complete",
    "task_audit_invalid": "the task's audit found it invalid",
    "tampered_outcome": "a report said passed although its phase raised, or a test's body was swapped",
    "pytest_internals_patched": "pytest's own functions were replaced during the run",
    "hook_of_unknown_origin": "a hook of unknown origin ran",
    "protected_file_modified": "the run wrote a test file",
}


def integrity_status(envelope: dict[str, Any]) -> tuple[str, dict[str, bool]]:
    """The run's disposition as one line that says what it means, and its markup.

    The disposition itself (``envelope["integrity"]``) is untouched. A live run is always
    quarantined (``tests_not_protected``: the tests ran in the user's own tree): comparisons do not
    admit it as evidence, but the verdict of a merge gate on trusted code stands. Only ``invalid``
    says not to rely on the verdict.
    """
    integrity, audit = envelope.get("integrity") or {}, envelope.get("audit") or {}
    disposition, reasons = integrity.get("disposition"), list(integrity.get("reasons") or [])
    words = []
    for code in reasons:
        said = REASON_WORDS.get(code, code.replace("_", " "))
        if code == "task_audit_unknown" and audit.get("reason"):
            said = f"{said} ({audit['reason']})"
        words.append(said)
    why = "; ".join(words)
    codes = f" ({', '.join(reasons)})" if reasons else ""
    if disposition == "invalid":
        return f"integrity: INVALID{codes} - do not rely on this verdict: {why}", {"red": True, "bold": True}
    if disposition == "quarantined":
        lead = "the verdict above stands" if envelope.get("score") is not None else "no verdict to rely on"
        return f"integrity: quarantined{codes} - {lead}; the run is just not admissible as A/B evidence: {why}", {}
    return f"integrity: {disposition}{codes} - the verdict above stands and the run is admissible evidence", {}


from .own_folder import OWN_FOLDER, OWN_FOLDER_FILES, make_own_folder, make_parent  # noqa: E402,F401


def _write_out(path: Path, envelope: dict[str, Any]) -> str | None:
    """Write the envelope to ``--objective-score-out``; None when written, else why not (said, never
    fatal: the ledger still records the run, and the gate still gives its status)."""
    from .envelope import dumps

    from .atomic import write_whole

    try:
        if path.parent.name == OWN_FOLDER:  # the only folder ever made (settings refused a missing other one)
            make_parent(path)
        write_whole(path, dumps(envelope))
    except OSError as exc:
        return f"score: NOT written to {path}: {exc.strerror or exc}"
    return None


def _record(path: Path, envelope: dict[str, Any]) -> str:
    """Append the run to the ledger; a ledger that cannot be written is said, never fatal to the run."""
    import sqlite3

    from .ledger import LedgerError, record_run

    try:
        make_parent(path)
        entries = record_run(path, envelope, "plugin")
    except (LedgerError, sqlite3.Error, OSError) as exc:
        return f"ledger: NOT written to {path}: {exc}"
    return f"ledger: entry {entries[0].seq} appended to {path}"


# --objective-gate's status for no verdict: pytest's own statuses are 0-5 (3 is its internal error), so
# a gate reading 6 knows the plugin said "no verdict", never pytest crashing
GATE_NO_VERDICT: Final = 6


def final_status(exitstatus: int, score: Mapping[str, Any] | None, gate: bool, written: bool = True) -> int:
    """The session's exit status once it is graded. pytest's own failures (2-5: interrupted, internal
    error, usage error, no tests) stand as they are. Otherwise, with ``--objective-gate``, the verdict's
    status: 0 resolved, 1 not resolved, :data:`GATE_NO_VERDICT` no verdict. And an envelope that could
    not be written where ``--objective-score-out`` asked (``written`` False) is :data:`GATE_NO_VERDICT`,
    with the gate or without it: the verdict is printed, but it is not where the job will look for it."""
    if exitstatus not in (0, 1):
        return exitstatus
    if not written:
        return GATE_NO_VERDICT
    if not gate:
        return exitstatus
    if score is None:
        return GATE_NO_VERDICT
    return 0 if score["resolved"] == "resolved" else 1


# pytest options under which the session runs no test body: a listed test "ran" only its fixtures
RAN_NO_TEST: Final = (("collectonly", "--collect-only"), ("setupplan", "--setup-plan"), ("setuponly", "--setup-only"))


def _ran_no_test(option: Any) -> str | None:
    """Why a session ran no test though pytest finished it (``--collect-only``, ``--setup-only``,
    ``--setup-plan``: the listed tests' bodies never ran, so there is nothing to grade), or None."""
    for dest, flag in RAN_NO_TEST:
        if getattr(option, dest, False):
            return f"{flag} ran no test"
    return None


def _not_its_repository(rootdir: Path, instance: Instance, all_missing: bool) -> str | None:
    """Why a run that found none of the listed tests is no verdict, or None: when no listed test ran
    and none of their files is under the rootdir, the run is not in the instance's repository (or
    not at its root); the working tree is not blamed for tests that are not there to run, as the
    runner does not blame a candidate for a folder that is not the instance's."""
    files = instance.test_files()
    if not all_missing or not files or any(os.path.exists(rootdir / name) for name in files):
        return None
    repo = instance.get("repo") or "the instance's repository"
    at = f" at {instance.base_commit}" if instance.base_commit else ""
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return f"none of the listed tests' files is under the rootdir {rootdir} ({shown}): is it {repo}{at}?"


def _timeout_of(config: pytest.Config) -> float | None:
    """pytest-timeout's per-test limit, when that plugin is active."""
    value = getattr(config.option, "timeout", None)
    try:
        return float(value) if value else None
    except (TypeError, ValueError):
        return None


def _generated(name: bytes) -> bool:
    """Files pytest and Python write themselves: never part of a candidate."""
    parts = name.split(b"/")
    return (
        parts[0] == b".objective-scoring"
        or b"__pycache__" in parts
        or b".pytest_cache" in parts
        or name.endswith((b".pyc", b".pyo"))
    )


def worktree_patch_ref(rootdir: Path, out: Path | None = None) -> str:
    """sha256 over ``git diff HEAD`` plus untracked files: what the candidate changed.

    The envelope file itself and ``.objective-scoring/`` are left out, so grading
    the same tree twice gives the same reference.
    """
    import hashlib

    skip = {out.resolve()} if out is not None else set()

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(rootdir), *args], capture_output=True, check=True, timeout=60
        ).stdout

    try:
        generated = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.py[co]", ":(exclude).objective-scoring")
        digest = hashlib.sha256(git("diff", "HEAD", "--binary", "--no-color", "--no-ext-diff", "--", ".", *generated))
        for name in sorted(git("ls-files", "--others", "--exclude-standard", "-z").split(b"\0")):
            path = (rootdir / os.fsdecode(name)).resolve() if name else None
            if path is not None and path not in skip and not _generated(name):
                digest.update(b"\0untracked\0" + name + b"\0")
                try:
                    digest.update(path.read_bytes())
                except OSError:
                    pass
    except (OSError, subprocess.SubprocessError):
        return f"unversioned:{rootdir.name}"
    return "sha256:" + digest.hexdigest()
