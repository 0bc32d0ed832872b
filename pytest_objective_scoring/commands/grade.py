"""``objective-score grade``: one candidate patch graded in an isolated copy of a repository
(or in a container image), or from outcomes recorded elsewhere (``--from-report``); the verdict
settled against the task's audit, written (``--out``, ``--receipt``), appended to the ledger and
printed. Thin: the grading is :mod:`pytest_objective_scoring.runner`'s, a report's reading
:mod:`pytest_objective_scoring.reports`' and :mod:`pytest_objective_scoring.foreign`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

from .. import nesting
from .. import options
from ..errors import EXIT_INFRASTRUCTURE, CommandError, ledger_problem
from ..ledger import DEFAULT_LEDGER
from ..outputs import stdin_problem  # one rule for every command (re-exported)
from . import HELP
from .shared import add_patch_limit, add_runner_options, compute_rate, hidden_paths, reruns

__all__ = ["STDIN_OPTIONS", "artifact_list", "cmd_grade", "ignored_test_cmd", "register", "stdin_problem", "task_audit"]

GRADE_EPILOG = """\
examples:
  objective-score grade --repo ./myrepo --instance task.json --patch candidate.diff
  objective-score grade --repo ./myrepo --instance swe-bench.jsonl --instance-id astropy__astropy-12907 \\
      --patch pred.diff --python /envs/astropy/bin/python --timeout 900 --out score.json

The repository is copied to a private workspace (it is never modified), checked
out at the instance's base_commit when it names one. The candidate's changes to
tests and test configuration are dropped and listed; the test patch (from
--test-patch or the instance) is applied; the listed tests' files run under
pytest in a subprocess of --python. Exit status: 0 resolved, 1 not resolved
(including a patch that does not apply), 2 bad input, 3 infrastructure failure.
"""


def _image_of(args: argparse.Namespace, instance_id: str) -> str | None:
    """``--image``'s template filled in for this instance (container mode), or None."""
    if not getattr(args, "image", None):
        return None
    from ..container import ContainerError, image_for

    try:
        return image_for(args.image, instance_id)
    except ContainerError as exc:
        raise CommandError(str(exc)) from None


def _read_patch(value: str, limit: int | None = None) -> bytes:
    """The candidate, read to at most ``limit + 1`` bytes: a larger one is refused by the runner
    without the grader ever holding it whole (memory stays flat whatever its size)."""
    from ..inputs import InputProblem, read_bytes

    try:
        return read_bytes(value, None if limit is None else limit + 1)
    except InputProblem as exc:
        raise CommandError(f"--patch {value}: {exc}") from None


STDIN_OPTIONS: Final = (("--instance", "instance"), ("--patch", "patch"), ("--test-patch", "test_patch"),
                        ("--from-report", "from_report"), ("--plan", "plan"), ("--retrieval", "retrieval"))
"""``grade``'s options that read standard input when given ``-``."""


def ignored_test_cmd(test_cmd: str | None, command: Any) -> str | None:
    """Why ``--test-cmd`` would not be used (:func:`.runner_choice.unused_test_cmd`), or None."""
    from ..runner_choice import unused_test_cmd

    return unused_test_cmd(test_cmd, command, "--test-cmd")


def _check_test_cmd(args: argparse.Namespace, instance: Any) -> None:
    """``--test-cmd`` refused before work when it would not be used (:func:`ignored_test_cmd`)."""
    if args.test_cmd is None:
        return
    from ..runner_choice import CommandError as RunnerError
    from ..runner_choice import choose

    try:
        command = choose(instance, args.runner, args.test_cmd, "--runner / --test-cmd")
    except RunnerError as exc:
        raise CommandError(str(exc)) from None
    problem = ignored_test_cmd(args.test_cmd, command)
    if problem:
        raise CommandError(problem)


def cmd_grade(args: argparse.Namespace) -> int:
    from ..instances import InstanceError, load_instance
    from ..runner import BadInput, GradeRequest, grade_candidate

    problem = stdin_problem((option, getattr(args, dest, None)) for option, dest in STDIN_OPTIONS)
    if problem:
        raise CommandError(problem)
    try:
        instance = load_instance(args.instance, args.instance_id)
    except InstanceError as exc:
        raise CommandError(str(exc)) from None
    if args.from_report:
        if args.against_gold:
            raise CommandError("--against-gold runs the tests beyond the listed ones under the candidate and under gold: "
                               "not with --from-report, which reads outcomes recorded elsewhere")  # fmt: skip
        return _grade_from_report(args, instance)
    if args.runner in ("surefire", "jest", "go", "nextest"):
        raise CommandError(f"--runner {args.runner}: only with --from-report (its tests are read from a report; "
                           "a live run is for pytest, django, sympy and unittest)")  # fmt: skip
    _check_test_cmd(args, instance)
    image = _image_of(args, instance.instance_id)
    missing = [flag for flag, value in (("--repo", args.repo or image), ("--patch", args.patch)) if not value]
    if missing:
        raise CommandError(f"{' and '.join(missing)} required (or --from-report FILE to grade outcomes recorded "
                           "elsewhere, or --image to grade in a container)")  # fmt: skip
    if image and args.repo:
        raise CommandError("--repo and --image exclude each other: in container mode the image holds the repository "
                           "(at --repo-dir)")  # fmt: skip
    test_patch = None
    if args.test_patch:
        from ..inputs import InputProblem, read_bytes

        try:
            # bytes, not text mode: a CRLF patch must keep its line endings to apply
            test_patch = read_bytes(args.test_patch).decode("utf-8", "surrogateescape")
        except InputProblem as exc:
            raise CommandError(f"--test-patch {args.test_patch}: {exc}") from None
    harness_cost = _harness_cost(args)
    request = GradeRequest(
        plan=_json_list(args.plan, "--plan"),
        retrieval=_json_list(args.retrieval, "--retrieval"),
        reruns=args.reruns,
        harness_cost=harness_cost,
        harness=args.harness,
        compute_rate=compute_rate(args),
        repo=Path(args.repo).resolve() if args.repo else None,
        instance=instance,
        patch=_read_patch(args.patch, args.max_patch_size),
        test_patch=test_patch,
        max_patch_bytes=args.max_patch_size,
        max_output_bytes=args.max_output,
        python=(args.python or ("/opt/miniconda3/envs/testbed/bin/python" if args.image == "swebench" else "python3"))
        if image else (args.python or sys.executable),
        engine=args.engine if image else None,
        image=image,
        repo_dir=args.repo_dir,
        timeout=args.timeout,
        compat=args.compat or "strict",
        patch_ref=args.patch_ref,
        keep=args.keep,
        network=args.allow_network,
        hidden=hidden_paths(args),
        select=args.select,
        progress=None if args.quiet else _progress_line,
        runner=args.runner,
        test_cmd=args.test_cmd,
        command_source="--runner" if args.test_cmd is None else "--runner / --test-cmd",
        against_gold=args.against_gold,
    )
    try:
        result = grade_candidate(request)
    except BadInput as exc:
        raise CommandError(str(exc)) from None
    return _finish_grade(args, result.envelope, "runner", exit_code=result.exit_code, instance_fields=instance.fields)


def _progress_line(text: str) -> None:
    """One line on standard error (standard output stays the result's, ``--json`` included)."""
    print(f"objective-score grade: {text}", file=sys.stderr, flush=True)


def _finish_grade(args: argparse.Namespace, envelope: dict[str, Any], source: str, exit_code: int,
                  instance_fields: Any = None) -> int:  # fmt: skip
    """Settle, write, record and print a graded envelope (``grade`` and ``grade --from-report``).

    The verdict is written (``--out``) before the ledger is touched, and a ledger that cannot be
    read or appended to never changes it nor its exit status: the failure is said on standard
    error and in the envelope's ``ledger`` field, and the task's audit state is then unknown.
    """
    from ..envelope import dumps
    from ..integrity import receipt, settle
    from ..render import StreamWriter, render_envelope, render_integrity

    envelope["benchmark"] = args.benchmark or (instance_fields or {}).get("benchmark")
    ledger_path = None if args.no_ledger else Path(args.ledger or DEFAULT_LEDGER)
    # no ledger, no audit record to consult: unknown; a ledger that cannot be read: unknown too
    settle(envelope, None if ledger_path is None else task_audit(ledger_path, instance_fields))
    envelope["ledger"] = None if ledger_path is None else {"path": str(ledger_path), "seq": None, "pending": True}
    from ..atomic import fallback, write_whole

    out = Path(args.out) if args.out else None
    lost: list[tuple[str, Path, OSError]] = []  # outputs that could not be written: said, and printed instead
    if out is not None:
        try:
            write_whole(out, dumps(envelope))  # the verdict is on disk before the ledger is appended
        except OSError as exc:
            lost.append(("--out", out, exc))
            out = None
    written = []
    ledger_line = ""
    seq = None
    if ledger_path is not None:
        seq, problem = _record(ledger_path, envelope, source)
        if problem is None:
            envelope["ledger"] = {"path": str(ledger_path), "seq": seq}
            ledger_line = f"ledger: entry {seq} appended to {ledger_path}"
        else:
            envelope["ledger"] = {"path": str(ledger_path), "seq": None, "error": problem}
            ledger_line = f"ledger: NOT written to {ledger_path}: {problem}"
            print(f"objective-score {args.command}: ledger {ledger_path}: the run was NOT recorded: {problem} "
                  f"(the verdict stands: exit {exit_code})", file=sys.stderr, flush=True)  # fmt: skip
        if out is not None:
            try:
                write_whole(out, dumps(envelope))  # now with what became of the ledger entry
            except OSError as exc:  # the first version (ledger pending) stays: said, and printed
                lost.append(("--out", out, exc))
                out = None
    if args.receipt:
        path = Path(args.receipt)
        text = json.dumps(receipt(envelope, seq), indent=2, ensure_ascii=False) + "\n"
        try:
            write_whole(path, text)
            written.append(f"receipt written to: {path}")
        except OSError as exc:
            fallback(args.command, "--receipt", path, exc, text)
            exit_code = EXIT_INFRASTRUCTURE
    if out is not None:
        written.append(f"score written to: {out}")
    for option, place, failure in lost:  # the verdict in full on standard output (once, with --json too)
        fallback(args.command, option, place, failure, None if args.json else dumps(envelope))
        exit_code = EXIT_INFRASTRUCTURE
    if args.json:
        print(json.dumps(envelope, indent=2, ensure_ascii=False))
    else:
        writer = StreamWriter()
        render_envelope(writer, envelope)
        if source == "runner":
            _render_runner(writer, envelope)
        else:
            report = envelope["report"]
            writer.write_line(f"graded from: {report['path']} ({report['format']}, sha256 {report['sha256'][:16]}...)")
            for note in report.get("notes", []):
                writer.write_line(f"  note: {note}")
        render_integrity(writer, envelope)
        for line in written:
            writer.write_line(line)
        if ledger_line:
            writer.write_line(ledger_line)
    return exit_code


def task_audit(path: Path, instance_fields: Any) -> dict[str, Any]:
    """The task's audit state from the ledger's audit entries, read-only; ``unknown`` (with the
    reason) when the ledger cannot be read: a locked, corrupt or foreign file, a directory."""
    from ..audit_ledger import audit_of, read_audits

    try:
        if not path.exists() or (path.is_file() and path.stat().st_size == 0):
            return audit_of([], instance_fields)  # no ledger yet: nothing was ever audited in it
        if path.is_dir():
            raise IsADirectoryError("a directory, not a ledger file")
        return audit_of(read_audits(path), instance_fields)
    except Exception as exc:  # the grading stands whatever the ledger holds
        return {"state": "unknown", "reason": f"the ledger {path} could not be read ({ledger_problem(exc, path)})"}


def _record(path: Path, envelope: dict[str, Any], source: str) -> tuple[int | None, str | None]:
    """Append the graded run to the ledger: ``(seq of its score entry, None)``, or ``(None, what went
    wrong)``. Nothing that goes wrong here reaches the verdict."""
    from ..ledger import Ledger, run_entries

    try:
        if path.is_dir():
            raise IsADirectoryError("a directory, not a ledger file")
        with Ledger(path) as ledger:
            return ledger.append_linked(run_entries(envelope, source))[0].seq, None
    except Exception as exc:
        return None, ledger_problem(exc, path)


def _grade_from_report(args: argparse.Namespace, instance: Any) -> int:
    """``grade --from-report``: the outcomes were recorded elsewhere; nothing is executed."""
    from ..envelope import patch_ref_of
    from ..reports import ReportError

    for flag, value in (("--repo", args.repo), ("--test-patch", args.test_patch), ("--keep", args.keep),
                        ("--test-cmd", args.test_cmd), ("--image", args.image), ("--python", args.python),
                        ("--select", args.select), ("--reruns", args.reruns)):  # fmt: skip
        if value:
            raise CommandError(f"{flag} has no effect with --from-report: the tests already ran")
    patch_ref = args.patch_ref or (patch_ref_of(_read_patch(args.patch)) if args.patch else None)
    from ..foreign import grade_from_report

    try:
        runner = "django" if args.runner == "unittest" else args.runner  # python -m unittest -v prints Django's format
        # the runner told from the content when not named (another runner's JUnit XML, a Django or SymPy
        # log; else pytest's formats), the file read once, a long read's progress on standard error
        envelope = grade_from_report(Path(args.from_report), instance, runner, args.compat or "strict", patch_ref,
                                     progress=None if args.quiet else _progress_line)  # fmt: skip
    except ReportError as exc:
        raise CommandError(f"--from-report {exc}") from None
    envelope["failure_class"] = _report_failure_class(envelope)
    from ..integrity import digests, task_id_of

    envelope["digests"] = digests(task_id_of(instance.fields), patch_ref, None, None, envelope.get("score"))
    if args.cost or args.harness:
        envelope.update(_report_cost(args, envelope))
    return _finish_grade(args, envelope, "report", exit_code=_exit_of(envelope), instance_fields=instance.fields)


def _exit_of(envelope: dict[str, Any]) -> int:
    score = envelope.get("score")
    if score is None:
        return 3
    return 0 if score["resolved"] == "resolved" else 1


def _report_failure_class(envelope: dict[str, Any]) -> str:
    """A report that gives no verdict is the verifier's failure: the candidate is not blamed for it."""
    score = envelope.get("score")
    if score is None:
        return "verifier"
    return "none" if score["resolved"] == "resolved" else "solver"


def _harness_cost(args: argparse.Namespace) -> Any:
    """``--cost FILE``: the harness's cost of the candidate, or None when not given."""
    if not args.cost:
        return None
    from ..cost_ledger import CostError, load_harness_cost

    try:
        return load_harness_cost(args.cost)
    except CostError as exc:
        raise CommandError(f"--cost {exc}") from None


def _report_cost(args: argparse.Namespace, envelope: dict[str, Any]) -> dict[str, Any]:
    """The tests ran elsewhere: their CPU is unknown here (null), never a made-up zero."""
    harness_cost = _harness_cost(args)
    duration = (envelope.get("session") or {}).get("duration")
    model = harness_cost.dollars if harness_cost else None
    return {
        "harness": args.harness or (harness_cost.harness if harness_cost else None),
        "cost": {"tokens": harness_cost.tokens if harness_cost else None,
                 "calls": harness_cost.calls if harness_cost else None,
                 "cpu": None, "wall_time": duration, "dollars": model},  # fmt: skip
        "cost_breakdown": {"model_dollars": model, "compute_dollars": None, "compute_rate_per_cpu_second": None,
                           "harness_reported": bool(harness_cost and harness_cost.reported),
                           "cpu_note": "graded from an outcome file: the tests' CPU was not measured here"},  # fmt: skip
    }


def _json_list(path: str | None, flag: str) -> tuple[str, ...] | None:
    """A harness artifact: a JSON list of strings, or None when not given; read through
    :func:`.inputs.read_bytes` (a named pipe nobody writes to, a device, ``-`` that is not data: one
    line, never a wait)."""
    from ..inputs import InputProblem, read_bytes

    if path is None:
        return None
    try:
        data = nesting.loads(read_bytes(path).decode("utf-8"))
    except InputProblem as exc:
        raise CommandError(f"{flag} {path}: {exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CommandError(f"{flag} {path}: not JSON ({exc})") from None
    return artifact_list(data, f"{flag} {path}")


def artifact_list(data: Any, where: str) -> tuple[str, ...]:
    if not isinstance(data, list):
        raise CommandError(f"{where}: expected a JSON list of strings, got {type(data).__name__}")
    for index, item in enumerate(data):
        if not isinstance(item, str) or not item:
            raise CommandError(f"{where}: item {index}: expected a non-empty string, got {item!r}")
    return tuple(data)


def _render_runner(writer: Any, envelope: dict[str, Any]) -> None:
    runner = envelope.get("runner", {})
    apply = runner.get("apply") or {}
    if apply:
        writer.write_line(f"candidate applied with: {apply.get('strategy') or 'nothing (did not apply)'}")
        for dropped in apply.get("dropped", []):
            writer.write_line(f"  not applied (protected): {dropped['path']} - {dropped['reason']}")
    if runner.get("scope") and runner.get("run"):  # a candidate that did not apply ran nothing
        writer.write_line(f"tests run: {runner['scope']}")
    writer.write_line(f"failure class: {runner.get('failure_class')}")
    cost, breakdown = envelope.get("cost"), envelope.get("cost_breakdown") or {}
    if cost:
        model = breakdown.get("model_dollars")
        writer.write_line(
            f"cost: {cost['cpu']:.2f} CPU-s, {cost['wall_time']:.2f} s wall, ${cost['dollars']:.6f} "
            f"(compute ${breakdown.get('compute_dollars', 0):.6f}; model "
            + (f"${model:.6f}" if model is not None else "not reported")
            + f"; tokens {cost['tokens'] if cost['tokens'] is not None else 'not reported'}"
            + f"; calls {cost['calls'] if cost['calls'] is not None else 'not reported'})"
        )
    if runner.get("failure_detail"):
        writer.write_line(f"detail: {runner['failure_detail']}")
    check = envelope.get("against_gold")
    if check:  # --against-gold: the second figure, named apart from the Score's verdict
        figure = {True: "yes", False: "no", None: "unknown"}[check.get("resolved_against_gold")]
        writer.write_line(f"resolved and free of regressions against gold ({check['scope']}): {figure} "
                          f"[{check['status']}{': ' + check['reason'] if check.get('reason') else ''}]")  # fmt: skip
        if check["status"] in ("clean", "regressions"):
            writer.write_line(f"  {check['compared']} test(s) beyond the listed ones pass under gold; "
                              f"{check['regression_count']} fail under the candidate"
                              + (f"; {check['unstable_count']} did not repeat (not counted)" if check["unstable_count"] else ""))  # fmt: skip
        for item in check.get("regressions", [])[:20]:
            writer.write_line(f"  regression: {item['nodeid']} (gold {item['gold']}, candidate {item['candidate']})")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``grade`` to the ``objective-score`` parser."""
    grade = sub.add_parser("grade", help=HELP["grade"],
                           description="Grade one candidate patch against an instance's FAIL_TO_PASS and PASS_TO_PASS tests.",
                           epilog=GRADE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    grade.add_argument("--repo", metavar="DIR", help="The repository to grade in (never modified)")
    grade.add_argument("--engine", choices=("podman", "docker", "auto"), default="auto",
                       help="Container mode: the engine (default: auto, the first that answers); see docs/containers.md")  # fmt: skip
    grade.add_argument("--image", metavar="TEMPLATE",
                       help="Container mode: grade in this image, which holds the repository and its environment "
                       "({instance_id}, {swebench_id} filled in; the preset 'swebench' is SWE-bench's naming); "
                       "--python is then the interpreter inside the image (default: python3; SWE-bench's conda env "
                       "with --image swebench)")  # fmt: skip
    add_patch_limit(grade)
    grade.add_argument("--select", action="store_true",
                       help="Run only the tests the instance lists (every other test of their files is deselected, as "
                       "the plugin's --objective-select does); the envelope's runner.scope says which was run")  # fmt: skip
    grade.add_argument("--quiet", action="store_true",
                       help="No progress lines on standard error (by default a test run longer than 5 s says how far "
                       "it is every 10 s, a --from-report read longer than 1 s every 2 s)")  # fmt: skip
    grade.add_argument("--max-output", metavar="BYTES", default=64 << 20,
                       type=options.whole_number(1024, 1 << 40, "the output limit (bytes)"),
                       help="Stop a test run that writes more output than this (failure class output_limit when the "
                       "control run does not; default 64 MiB)")  # fmt: skip
    grade.add_argument("--repo-dir", metavar="PATH", default="/testbed",
                       help="Container mode: where the image holds the repository (default: /testbed)")  # fmt: skip
    grade.add_argument("--instance", required=True, metavar="FILE", help="Instance JSON, or a JSON/JSONL dataset with --instance-id")
    grade.add_argument("--patch", metavar="FILE", help="The candidate diff ('-' reads standard input)")
    grade.add_argument("--runner", choices=("pytest", "django", "sympy", "unittest", "surefire", "jest", "go", "nextest"),
                       help="The program that runs the tests (pytest, django: tests/runtests.py, sympy: bin/test, "
                       "unittest: python -m unittest; default: the instance's 'runner' field, else SWE-bench's "
                       "specification of its repo@version, else pytest). With --from-report: which runner wrote the "
                       "file (default: detected from the content): JUnit XML of pytest, surefire (a directory of "
                       "TEST-*.xml), jest, go or nextest, or the console log of Django's tests/runtests.py "
                       "--verbosity 2 or SymPy's bin/test --verbose")  # fmt: skip
    grade.add_argument("--test-cmd", metavar="LINE",
                       help="The test command, as a shell line (SWE-bench's test_cmd: './tests/runtests.py "
                       "--verbosity 2 --parallel 1'); the targets are added after it (default: the runner's)")  # fmt: skip
    grade.add_argument("--from-report", metavar="FILE",
                       help="Grade the outcomes in this file instead of running tests: pytest JUnit XML, "
                       "pytest-json-report JSON, pytest-reportlog JSONL, another runner's JUnit XML or a Django or "
                       "SymPy test log (--repo is not used; --patch only names the candidate)")  # fmt: skip
    grade.add_argument("--test-patch", metavar="FILE", help="The test patch (default: the instance's test_patch)")
    options.add_scoring_options(grade.add_argument, prefix="")
    add_runner_options(grade, python_default=None)
    options.add_ledger_options(grade.add_argument, prefix="")
    options.add_cost_options(grade.add_argument, prefix="")
    grade.add_argument("--plan", metavar="FILE", help="The harness's plan artifact (a JSON list of obligations: symbols or files) for the scorecard")
    grade.add_argument("--retrieval", metavar="FILE", help="The harness's retrieval order (a JSON list of files or path::symbol) for the scorecard")
    grade.add_argument("--reruns", metavar="N", type=reruns, default=0,
                       help="Run the tests N more times in shuffled orders (recorded seeds); the scorecard's robustness")  # fmt: skip
    options.add_against_gold(grade.add_argument)
    grade.add_argument("--out", metavar="FILE", help="Write the Score and its envelope as JSON to FILE")
    grade.add_argument("--benchmark", metavar="NAME", help="The benchmark this task belongs to (default: the instance's "
                       "'benchmark' field, else unknown); summaries never rank or average across benchmarks")
    grade.add_argument("--receipt", metavar="FILE", help="Write the run's public receipt (identity, digests, disposition) as JSON")
    grade.add_argument("--json", action="store_true", help="Print the envelope as JSON instead of the summary")
    grade.set_defaults(handler=cmd_grade)
