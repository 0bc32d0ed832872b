"""The ``objective-score`` command line: one subcommand per workflow, each thin.

Exit statuses: 0 resolved (or the command succeeded), 1 not resolved,
2 bad input, 3 infrastructure failure (never the candidate's fault).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Final, Sequence

from . import __version__, options

DEFAULT_LEDGER = Path(".objective-scoring") / "ledger.sqlite"

__all__ = ["main"]

EXIT_BAD_INPUT = 2

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

DEMO_EPILOG = """\
The bundled fixtures (fixtures/ in the source tree) hold three small Python
projects, each with an instance and five candidates: the gold patch, a patch
that fixes the bug but breaks a PASS_TO_PASS test, an empty patch, a tampering
patch that rewrites the tests and adds a conftest.py forcing every outcome to
"passed", and a patch that does not apply. Exit status 0 when every verdict is
the expected one.
"""

EXPECTED = {
    "gold": ("resolved", "none"),
    "break_p2p": ("not_resolved", "solver"),
    "empty": ("not_resolved", "solver"),
    "tamper": ("not_resolved", "solver"),
    "noapply": ("not_resolved", "patch_apply"),
}


class CommandError(Exception):
    """Bad input to a command: printed as ``objective-score CMD: error: ...``, exit 2."""


def _image_of(args: argparse.Namespace, instance_id: str) -> str | None:
    """``--image``'s template filled in for this instance (container mode), or None."""
    if not getattr(args, "image", None):
        return None
    from .container import ContainerError, image_for

    try:
        return image_for(args.image, instance_id)
    except ContainerError as exc:
        raise CommandError(str(exc)) from None


def _hidden(args: argparse.Namespace) -> tuple[Path, ...]:
    """What the test process must never see, even inside a folder it is shown (an interpreter's):
    the ledger and every output file of the command (docs/untrusted-candidates.md)."""
    ledger = None if getattr(args, "no_ledger", False) else Path(getattr(args, "ledger", None) or DEFAULT_LEDGER)
    paths = [*(Path(v) for v in (getattr(args, name, None) for name in ("out", "receipt", "report")) if v)]
    if ledger is not None:  # with its write-ahead log and its claimants' owner files
        paths[:0] = [ledger, Path(f"{ledger}-wal"), Path(f"{ledger}-shm"), ledger.with_name(ledger.name + ".claims")]
    return tuple(p.resolve() for p in paths)


def environments_of(instances: Sequence[Any], args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """Each instance's environment from ``--environments`` and ``--python`` (``grade-batch``,
    ``audit run``, ``ab run``), resolved; bad input is a :class:`CommandError` (one line a problem)."""
    from .environments import EnvironmentsError, assign, load_environments, require_container_mode

    try:
        file = load_environments(args.environments) if getattr(args, "environments", None) else None
        assigned = assign(instances, file, args.python, image=getattr(args, "image", None))
        require_container_mode(assigned)
    except EnvironmentsError as exc:
        raise CommandError(_problems(str(exc), "environment")) from None
    return assigned, file


def probe_environments(environments: Sequence[Any], images: bool = True, engine: str | None = None) -> dict[str, dict[str, str]]:
    """Before any grading: run every interpreter of this machine the gradings will use (``import
    pytest``), and (``images``: the gradings run here, not on a cluster) look for every image."""
    from .environments import EnvironmentsError, check_images, probe_all

    try:
        versions = probe_all(environments)
        if images:
            check_images(environments, engine)
    except EnvironmentsError as exc:
        raise CommandError(_problems(str(exc), "environment")) from None
    return versions


def _problems(text: str, what: str) -> str:
    lines = text.splitlines()
    return lines[0] if len(lines) == 1 else "\n  ".join([f"{len(lines)} {what} problems:", *lines])


def _read_patch(value: str, limit: int | None = None) -> bytes:
    """The candidate, read to at most ``limit + 1`` bytes: a larger one is refused by the runner
    without the grader ever holding it whole (memory stays flat whatever its size)."""
    try:
        if value == "-":
            return sys.stdin.buffer.read() if limit is None else sys.stdin.buffer.read(limit + 1)
        with open(value, "rb") as handle:
            return handle.read() if limit is None else handle.read(limit + 1)
    except OSError as exc:
        raise CommandError(f"--patch {value}: {exc.strerror}") from None


def _add_patch_limit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-patch-size", metavar="BYTES", type=int, default=16 << 20,
                        help="Refuse a candidate larger than this, unread (failure class patch_too_large; default 16 MiB)")


def _add_runner_options(parser: argparse.ArgumentParser, keep: bool = True, per_instance: bool = False,
                        python_default: str | None = sys.executable) -> None:  # fmt: skip
    if per_instance:  # --python and --environments FILE (grade-batch)
        options.add_environment_options(parser.add_argument)
    else:
        parser.add_argument("--python", metavar="PATH", default=python_default,
                            help="Interpreter of the environment under test (default: this one; in container "
                            "mode the image's python3)")  # fmt: skip
    parser.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=1800.0,
                        help="Kill the test run's whole process group after S seconds (default: 1800)")  # fmt: skip
    if keep:
        parser.add_argument("--keep", action="store_true", help="Keep the workspace (its path is in the envelope)")
    parser.add_argument("--allow-network", action="store_true",
                        help="Let the tests reach the network (default: unshared where the machine allows)")  # fmt: skip


def cmd_grade(args: argparse.Namespace) -> int:
    from .instances import InstanceError, load_instance
    from .runner import BadInput, GradeRequest, grade_candidate

    try:
        instance = load_instance(args.instance, args.instance_id)
    except InstanceError as exc:
        raise CommandError(str(exc)) from None
    if args.from_report:
        return _grade_from_report(args, instance)
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
        try:
            # bytes, not text mode: a CRLF patch must keep its line endings to apply
            test_patch = Path(args.test_patch).read_bytes().decode("utf-8", "surrogateescape")
        except OSError as exc:
            raise CommandError(f"--test-patch {args.test_patch}: {exc}") from None
    harness_cost = None
    if args.cost:
        from .cost_ledger import CostError, load_harness_cost

        try:
            harness_cost = load_harness_cost(args.cost)
        except CostError as exc:
            raise CommandError(f"--cost {exc}") from None
    request = GradeRequest(
        plan=_json_list(args.plan, "--plan"),
        retrieval=_json_list(args.retrieval, "--retrieval"),
        reruns=args.reruns,
        harness_cost=harness_cost,
        harness=args.harness,
        compute_rate=_rate(args),
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
        hidden=_hidden(args),
        select=args.select,
        progress=None if args.quiet else _progress_line,
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
    from .envelope import dumps
    from .integrity import receipt, settle
    from .render import StreamWriter, render_envelope, render_integrity

    envelope["benchmark"] = args.benchmark or (instance_fields or {}).get("benchmark")
    ledger_path = None if args.no_ledger else Path(args.ledger or DEFAULT_LEDGER)
    # no ledger, no audit record to consult: unknown; a ledger that cannot be read: unknown too
    settle(envelope, None if ledger_path is None else task_audit(ledger_path, instance_fields))
    envelope["ledger"] = None if ledger_path is None else {"path": str(ledger_path), "seq": None, "pending": True}
    out = Path(args.out) if args.out else None
    if out is not None:
        write_whole(out, dumps(envelope))  # the verdict is on disk before the ledger is appended
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
            write_whole(out, dumps(envelope))  # now with what became of the ledger entry
    if args.receipt:
        path = Path(args.receipt)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(receipt(envelope, seq), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(f"receipt written to: {path}")
    if out is not None:
        written.append(f"score written to: {out}")
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


def ledger_problem(exc: BaseException, path: Path | None = None) -> str:
    """What went wrong with the ledger at ``path``, in one line (the path is named beside it)."""
    import sqlite3

    from .ledger import LedgerError

    text = " ".join(str(exc).split()) or type(exc).__name__
    if path is not None:
        text = text.removeprefix(f"{path}: ")
    return text if isinstance(exc, (LedgerError, sqlite3.Error, OSError)) else f"{type(exc).__name__}: {text}"


def task_audit(path: Path, instance_fields: Any) -> dict[str, Any]:
    """The task's audit state from the ledger's audit entries, read-only; ``unknown`` (with the
    reason) when the ledger cannot be read: a locked, corrupt or foreign file, a directory."""
    from .audit_ledger import audit_of, read_audits

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
    from .ledger import Ledger, run_entries

    try:
        if path.is_dir():
            raise IsADirectoryError("a directory, not a ledger file")
        with Ledger(path) as ledger:
            return ledger.append_linked(run_entries(envelope, source))[0].seq, None
    except Exception as exc:
        return None, ledger_problem(exc, path)


def write_whole(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all when it is a plain file (a crash or a full disk keeps the
    version before); anything else (a symlink, a pipe, /dev/stdout) is written in place."""
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        path.write_text(text, encoding="utf-8")
        return
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _grade_from_report(args: argparse.Namespace, instance: Any) -> int:
    """``grade --from-report``: the outcomes were recorded elsewhere; nothing is executed."""
    from .envelope import patch_ref_of
    from .reports import ReportError, grade_report

    for flag, value in (("--repo", args.repo), ("--test-patch", args.test_patch), ("--keep", args.keep)):
        if value:
            raise CommandError(f"{flag} has no effect with --from-report: the tests already ran")
    patch_ref = args.patch_ref or (patch_ref_of(_read_patch(args.patch)) if args.patch else None)
    from .foreign import detect_runner, grade_junit

    source = Path(args.from_report)
    try:
        runner = args.runner
        if runner is None and source.exists():
            try:
                runner = detect_runner(source)
            except ReportError:
                runner = None  # not another runner's JUnit XML: pytest's formats (JSON, JSONL, its XML) follow
        if runner and runner != "pytest":
            envelope = grade_junit(source, instance, runner, args.compat or "strict", patch_ref)
        else:
            envelope = grade_report(source, instance, args.compat or "strict", patch_ref)
    except ReportError as exc:
        raise CommandError(f"--from-report {exc}") from None
    envelope["failure_class"] = _report_failure_class(envelope)
    from .integrity import digests, task_id_of

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


def _report_cost(args: argparse.Namespace, envelope: dict[str, Any]) -> dict[str, Any]:
    """The tests ran elsewhere: their CPU is unknown here (null), never a made-up zero."""
    harness_cost = None
    if args.cost:
        from .cost_ledger import CostError, load_harness_cost

        try:
            harness_cost = load_harness_cost(args.cost)
        except CostError as exc:
            raise CommandError(f"--cost {exc}") from None
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


def _reruns(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: the number of re-runs must be 0 or more")
    return count


def _json_list(path: str | None, flag: str) -> tuple[str, ...] | None:
    """A harness artifact: a JSON list of strings, or None when not given."""
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"{flag} {path}: cannot be read ({exc.strerror})") from None
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


def _rate(args: argparse.Namespace) -> float:
    from .cost_ledger import DEFAULT_COMPUTE_RATE

    return DEFAULT_COMPUTE_RATE if args.compute_rate is None else args.compute_rate


def _render_runner(writer: Any, envelope: dict[str, Any]) -> None:
    runner = envelope.get("runner", {})
    apply = runner.get("apply") or {}
    if apply:
        writer.write_line(f"candidate applied with: {apply.get('strategy') or 'nothing (did not apply)'}")
        for dropped in apply.get("dropped", []):
            writer.write_line(f"  not applied (protected): {dropped['path']} - {dropped['reason']}")
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


def find_fixtures(explicit: str | None) -> Path:
    """``--fixtures DIR``, else the demo data installed with the package (``demo_fixtures``: in a source
    checkout a link to ``fixtures/``, in a wheel a copy of what the demo needs)."""
    candidates = [Path(explicit)] if explicit else [
        Path(__file__).resolve().parent / "demo_fixtures",
        Path(__file__).resolve().parent.parent / "fixtures",
    ]  # fmt: skip
    for path in candidates:
        if (path / "instances").is_dir() and (path / "repos").is_dir():
            return path
    raise CommandError(
        "no fixtures found (looked in " + ", ".join(map(str, candidates)) + "); pass --fixtures DIR (a folder with "
        "instances/, repos/ and patches/), or reinstall the package"
    )


def demo_cases(fixtures: Path) -> list[tuple[str, str, Path, Path, Path]]:
    """(project, candidate, instance file, repo, patch) for every bundled case."""
    cases = []
    for instance_file in sorted((fixtures / "instances").glob("*.json")):
        name = instance_file.stem
        for candidate in EXPECTED:
            patch = fixtures / "patches" / name / f"{candidate}.diff"
            if patch.exists():
                cases.append((name, candidate, instance_file, fixtures / "repos" / name, patch))
    return cases


def cmd_demo(args: argparse.Namespace) -> int:
    from .instances import load_instance
    from .runner import GradeRequest, grade_candidate

    fixtures = find_fixtures(args.fixtures)
    cases = demo_cases(fixtures)
    if not cases:
        raise CommandError(f"{fixtures}: no instance with candidate patches found")
    rows = []
    for index, (name, candidate, instance_file, repo, patch) in enumerate(cases, 1):
        started = time.perf_counter()
        result = grade_candidate(
            GradeRequest(repo=repo, instance=load_instance(instance_file), patch=patch.read_bytes(),
                         python=args.python, timeout=args.timeout)
        )  # fmt: skip
        score = result.score
        verdict = score["resolved"] if score else "no verdict"
        expected = EXPECTED[candidate]
        row = {
            "instance": result.envelope["instance_id"],
            "candidate": candidate,
            "fail_to_pass": f"{score['fail_to_pass']['passed']}/{score['fail_to_pass']['total']}" if score else "-",
            "pass_to_pass": f"{score['pass_to_pass']['passed']}/{score['pass_to_pass']['total']}" if score else "-",
            "resolved": verdict,
            "failure_class": result.failure_class,
            "dropped": [d["path"] for d in (result.envelope["runner"].get("apply") or {}).get("dropped", [])],
            "as_expected": (verdict, result.failure_class) == expected,
            "seconds": round(time.perf_counter() - started, 2),
            "score": score,
        }
        rows.append(row)
        if not args.json:
            print(f"[{index}/{len(cases)}] {name} {candidate}: {verdict} ({row['seconds']}s)", file=sys.stderr)
    if args.json:
        print(json.dumps({"fixtures": str(fixtures), "results": rows}, indent=2, ensure_ascii=False))
    else:
        _demo_table(rows)
    return 0 if all(r["as_expected"] for r in rows) else 1


def _demo_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="objective-score demo: Scores of the bundled candidates")
    for column in ("instance", "candidate", "F2P passed", "P2P preserved", "resolved", "failure class", "expected?"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = "green" if row["resolved"] == "resolved" else "red"
        table.add_row(
            row["instance"], row["candidate"], row["fail_to_pass"], row["pass_to_pass"],
            f"[{style}]{row['resolved']}[/{style}]", row["failure_class"], "yes" if row["as_expected"] else "[bold red]NO[/]",
        )  # fmt: skip
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)  # piped or logged: do not squeeze the table to 80 columns
    console.print(table)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="objective-score",
        description="Decide by executing tests, never by asking a model, whether a candidate patch resolves a task.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    grade = sub.add_parser("grade", help="Grade one candidate patch in an isolated copy of a repository",
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
    _add_patch_limit(grade)
    grade.add_argument("--select", action="store_true",
                       help="Run only the tests the instance lists (every other test of their files is deselected, as "
                       "the plugin's --objective-select does); the envelope's runner.scope says which was run")  # fmt: skip
    grade.add_argument("--quiet", action="store_true",
                       help="No progress lines on standard error (by default a test run longer than 5 s says how far "
                       "it is every 10 s)")  # fmt: skip
    grade.add_argument("--max-output", metavar="BYTES", type=int, default=64 << 20,
                       help="Stop a test run that writes more output than this (failure class output_limit when the "
                       "control run does not; default 64 MiB)")  # fmt: skip
    grade.add_argument("--repo-dir", metavar="PATH", default="/testbed",
                       help="Container mode: where the image holds the repository (default: /testbed)")  # fmt: skip
    grade.add_argument("--instance", required=True, metavar="FILE", help="Instance JSON, or a JSON/JSONL dataset with --instance-id")
    grade.add_argument("--patch", metavar="FILE", help="The candidate diff ('-' reads standard input)")
    grade.add_argument("--runner", choices=("pytest", "surefire", "jest", "go", "nextest", "django", "sympy"),
                       help="Which test runner wrote the --from-report file (default: detected from the content): "
                       "JUnit XML of pytest, surefire (a directory of TEST-*.xml), jest, go or nextest, or the console "
                       "log of Django's tests/runtests.py --verbosity 2 or SymPy's bin/test --verbose")  # fmt: skip
    grade.add_argument("--from-report", metavar="FILE",
                       help="Grade the outcomes in this file instead of running tests: pytest JUnit XML, "
                       "pytest-json-report JSON, pytest-reportlog JSONL, another runner's JUnit XML or a Django or "
                       "SymPy test log (--repo is not used; --patch only names the candidate)")  # fmt: skip
    grade.add_argument("--test-patch", metavar="FILE", help="The test patch (default: the instance's test_patch)")
    options.add_scoring_options(grade.add_argument, prefix="")
    _add_runner_options(grade, python_default=None)
    options.add_ledger_options(grade.add_argument, prefix="")
    options.add_cost_options(grade.add_argument, prefix="")
    grade.add_argument("--plan", metavar="FILE", help="The harness's plan artifact (a JSON list of obligations: symbols or files) for the scorecard")
    grade.add_argument("--retrieval", metavar="FILE", help="The harness's retrieval order (a JSON list of files or path::symbol) for the scorecard")
    grade.add_argument("--reruns", metavar="N", type=_reruns, default=0,
                       help="Run the tests N more times in shuffled orders (recorded seeds); the scorecard's robustness")  # fmt: skip
    grade.add_argument("--out", metavar="FILE", help="Write the Score and its envelope as JSON to FILE")
    grade.add_argument("--benchmark", metavar="NAME", help="The benchmark this task belongs to (default: the instance's "
                       "'benchmark' field, else unknown); summaries never rank or average across benchmarks")
    grade.add_argument("--receipt", metavar="FILE", help="Write the run's public receipt (identity, digests, disposition) as JSON")
    grade.add_argument("--json", action="store_true", help="Print the envelope as JSON instead of the summary")
    grade.set_defaults(handler=cmd_grade)

    demo = sub.add_parser("demo", help="Grade the bundled example candidates and print their Scores",
                          description="Grade every bundled fixture candidate and print a table of Scores.",
                          epilog=DEMO_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    demo.add_argument("--fixtures", metavar="DIR", help="The fixtures directory (default: ./fixtures or the source tree's)")
    demo.add_argument("--python", metavar="PATH", default=sys.executable, help="Interpreter to run the tests with")
    demo.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=120.0, help="Per-grading timeout")
    demo.add_argument("--json", action="store_true", help="Print the results as JSON instead of a table")
    demo.set_defaults(handler=cmd_demo)
    ledger = sub.add_parser("ledger", help="Verify, export or list the append-only ledger",
                            description="The append-only, hash-chained ledger of graded runs. Every action but "
                            "appending opens it read-only; a file that cannot be read as a ledger is exit 2.")  # fmt: skip
    actions = ledger.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, handler, text in (
        ("verify", cmd_ledger_verify, "Recompute the chain; name every edited, removed or reordered row, a removed "
         "schema version, a removed or altered trigger, a removed or rewritten tail (--expect-head) (exit 1)"),
        ("export", cmd_ledger_export, "Write every entry as JSONL"),
        ("show", cmd_ledger_show, "List the graded runs as a table"),
        ("head", cmd_ledger_head, "Print the chain's head (SEQ:HASH), to keep where the ledger's writers cannot reach "
         "and check later with ledger verify --expect-head"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
        if name == "export":
            action.add_argument("--out", metavar="FILE", help="Write to FILE instead of standard output")
        if name == "show":
            action.add_argument("--kind", metavar="KIND", default="score",
                                help="Which entries: score (graded runs, the default), another kind (samples_run, "
                                "sample_problem, harbor, batch, ...) or all")  # fmt: skip
        if name == "verify":
            action.add_argument("--expect-head", metavar="HEAD", default=None,
                                help="A head kept from ledger head (HASH, SEQ:HASH, or SEQ:HASH:HMAC when signed): it "
                                "must still be in the chain, or the tail was removed or rewritten (exit 1)")  # fmt: skip
        if name == "head":
            action.add_argument("--sign", action="store_true", help="Append an HMAC-SHA256 of the head made with "
                                "--key-file: SEQ:HASH:HMAC")  # fmt: skip
        if name in ("verify", "head"):
            action.add_argument("--key-file", metavar="FILE", default=None,
                                help="A secret key (the file's bytes) that signs the head (head --sign) or checks a "
                                "signed --expect-head")  # fmt: skip
        if name != "export":
            action.add_argument("--json", action="store_true", help="Print the result as JSON")
        action.set_defaults(handler=handler)
    gb = sub.add_parser("grade-batch", help="Grade a predictions file against a dataset, in parallel or on a cluster",
                        description="Grade every prediction of a SWE-bench predictions file, writing each result "
                        "to the ledger as it arrives.",
                        epilog=BATCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    gb.add_argument("--dataset", required=True, metavar="FILE", help="The instances (JSON array or JSONL)")
    gb.add_argument("--predictions", required=True, metavar="FILE", help="The predictions (JSONL, JSON list or object)")
    gb.add_argument("--repos", metavar="DIR", help="Where repositories are checked out: DIR/owner/name (not needed when "
                    "every instance is graded in an image: --environments)")  # fmt: skip
    gb.add_argument("--workers", type=int, default=1, metavar="N", help="Gradings at once on this machine (default: 1)")
    gb.add_argument("--scheduler", metavar="ADDRESS", help="Run the gradings on this Dask scheduler (tcp://host:8786)")
    gb.add_argument("--instance-ids", nargs="+", metavar="ID", help="Grade only the predictions for these instances "
                    "(each must be in the dataset and have a prediction)")
    gb.add_argument("--report", metavar="FILE", help="Write a JSON report with one entry per prediction, and beside it "
                    "SWE-bench's run report per model ({model}.{run_id}.json; never overwritten)")
    gb.add_argument("--run-id", metavar="NAME", default=None, help="This run's name, in the run reports' file names and the "
                    "log tree (default: a UTC timestamp, YYYYMMDD-HHMMSS); a run id is continued, never overwritten")
    gb.add_argument("--log-dir", metavar="DIR", default="logs", help="Write SWE-bench's per-instance log tree "
                    "DIR/run_evaluation/RUN_ID/MODEL/INSTANCE_ID/ (default: logs)")
    gb.add_argument("--benchmark", metavar="NAME", help="The benchmark these tasks belong to, recorded with every result "
                    "(default: the dataset file's name); summaries never rank or average across benchmarks")
    gb.add_argument("--reruns", metavar="N", type=_reruns, default=0,
                    help="Run each candidate's tests N more times in shuffled orders (the scorecard's robustness)")
    _add_patch_limit(gb)
    gb.add_argument("--max-wait", metavar="S", type=options.positive_seconds, default=None,
                    help="Stop waiting after S seconds for jobs another run has claimed (default: wait until that run "
                    "records them or is proven dead); the results so far are kept, exit 2")  # fmt: skip
    gb.add_argument("--retry-infra", action="store_true", help="Grade again predictions whose recorded grading was an infrastructure failure")
    options.add_compat_option(gb.add_argument, prefix="")
    _add_runner_options(gb, keep=False, per_instance=True)
    gb.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    options.add_cost_options(gb.add_argument, prefix="", cost_file=False)
    gb.add_argument("--json", action="store_true", help="Print the report as JSON instead of the table")
    gb.set_defaults(handler=cmd_grade_batch)

    from . import judged
    from .commands import ab, audit, harbor, samples, sets

    sets.register(sub)
    ab.register(sub)
    audit.register(sub)
    samples.register(sub)
    harbor.register(sub)
    judged.add_parser(sub)

    card = sub.add_parser("scorecard", help="Show a run's hierarchical scorecard, or diff two sets of runs stage by stage",
                          description="objective-score scorecard RUN | objective-score scorecard diff RUN_A RUN_B",
                          epilog=SCORECARD_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    card.add_argument("runs", nargs="+", metavar="RUN", help="RUN, or: diff RUN_A RUN_B")
    card.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    card.add_argument("--json", action="store_true", help="Print the record(s) or the diff as JSON")
    card.set_defaults(handler=cmd_scorecard)

    costs = sub.add_parser("costs", help="Resolve rate against cost per harness, ranked, with the Pareto front",
                           description="Per harness or model: resolve rate, resolves per dollar, per 1,000 tokens, "
                           "per wall-clock hour and per CPU-second, ranked by cost-resolve Pareto layer.",
                           epilog=COSTS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    costs.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    costs.add_argument("--harness", metavar="NAME", action="append", help="Only this harness (repeatable)")
    costs.add_argument("--benchmark", metavar="NAME", help="Only this benchmark")
    costs.add_argument("--json", action="store_true", help="Print the report as JSON")
    costs.set_defaults(handler=cmd_costs)
    return parser


def _ledger_path(args: argparse.Namespace) -> Path:
    path = Path(args.ledger) if args.ledger else DEFAULT_LEDGER
    if not path.exists():
        raise CommandError(f"--ledger {path}: no such ledger")
    return path


def _ledger_key(args: argparse.Namespace) -> bytes | None:
    """The bytes of --key-file (a trailing newline dropped), or None."""
    if not getattr(args, "key_file", None):
        return None
    path = Path(args.key_file)
    try:
        key = path.read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise CommandError(f"--key-file {path}: cannot be read ({exc.strerror or exc})") from None
    if not key:
        raise CommandError(f"--key-file {path}: empty: a key must not be empty")
    return key


def cmd_ledger_head(args: argparse.Namespace) -> int:
    from .ledger import head, sign_head

    path = _ledger_path(args)
    key = _ledger_key(args)
    if args.sign and key is None:
        raise CommandError("--sign needs --key-file FILE (the key that signs the head)")
    if key is not None and not args.sign:
        raise CommandError("--key-file is used with --sign")
    top = head(path)
    mac = sign_head(top, key) if key is not None else None
    if args.json:
        print(json.dumps({"ledger": str(path), "seq": top.seq, "hash": top.hash,
                          **({"hmac": mac} if mac else {})}, indent=2))  # fmt: skip
    else:
        print(f"{top}:{mac}" if mac else str(top))
    return 0


def cmd_ledger_verify(args: argparse.Namespace) -> int:
    from .ledger import verify

    path = _ledger_path(args)
    result = verify(path, expect_head=args.expect_head, key=_ledger_key(args))
    if args.json:
        print(json.dumps({"ledger": str(_ledger_path(args)), "rows": result.rows, "ok": result.ok,
                          "problems": list(result.problems)}, indent=2))  # fmt: skip
    else:
        print(f"{_ledger_path(args)}: {result.rows} rows, " + ("chain intact" if result.ok else "TAMPERED"))
        for problem in result.problems:
            print(f"  {problem}")
    return 0 if result.ok else 1


def cmd_ledger_export(args: argparse.Namespace) -> int:
    from .ledger import Ledger

    with Ledger(_ledger_path(args), read_only=True) as ledger:
        lines = [json.dumps(entry.to_dict(), ensure_ascii=False) for entry in ledger.entries()]
    text = "".join(line + "\n" for line in lines)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


SUMMARY_KEYS: Final = ("task_id", "task", "instance_id", "harness", "style", "mode", "n", "c", "status", "reward",
                       "solved", "verdict")  # fmt: skip


def entry_summary(data: Any) -> str:
    """The fields of an entry's body a person looks for first, as ``key=value`` (any kind of entry)."""
    if not isinstance(data, dict):
        return ""
    return " ".join(f"{key}={data[key]}" for key in SUMMARY_KEYS if data.get(key) is not None)[:120]


def cmd_ledger_show(args: argparse.Namespace) -> int:
    from .ledger import Ledger

    rows = []
    kinds: dict[str, int] = {}
    with Ledger(_ledger_path(args), read_only=True) as ledger:
        for entry in ledger.entries(None if args.kind in ("score", "all") else args.kind):
            kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
            data = entry.data
            if args.kind == "score" and entry.kind != "score":
                continue
            if entry.kind == "score":
                score = data.get("score") or {}
                rows.append({"seq": entry.seq, "kind": entry.kind, "created": entry.created, "source": data.get("source"),
                             "instance_id": data.get("instance_id"), "resolved": score.get("resolved", data.get("status")),
                             "failure_class": data.get("failure_class"), "patch_ref": data.get("patch_ref"),
                             "benchmark": data.get("benchmark"), "metric_space": data.get("metric_space")})  # fmt: skip
            else:
                body = data if isinstance(data, dict) else {}
                rows.append({"seq": entry.seq, "kind": entry.kind, "created": entry.created,
                             "benchmark": body.get("benchmark"), "metric_space": body.get("metric_space"),
                             "summary": entry_summary(body)})  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=140)
    if args.kind == "score":
        table = Table(title=f"graded runs in {_ledger_path(args)}")
        for column in ("seq", "created", "source", "instance", "resolved", "failure class", "patch"):
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(str(row["seq"]), row["created"], str(row["source"]), str(row["instance_id"]),
                          str(row["resolved"]), str(row["failure_class"] or "-"), str(row["patch_ref"])[:23])  # fmt: skip
        console.print(table)
        others = {kind: count for kind, count in sorted(kinds.items()) if kind != "score"}
        if others:
            listed = ", ".join(f"{count} {kind}" for kind, count in others.items())
            console.print(f"also in this ledger: {listed} (ledger show --kind KIND, or --kind all)", highlight=False)
        return 0
    table = Table(title=f"{args.kind} entries in {_ledger_path(args)}")
    for column in ("seq", "created", "kind", "benchmark", "metric space", "summary"):
        table.add_column(column, overflow="fold")
    for row in rows:
        summary = row.get("summary") or f"instance_id={row.get('instance_id')} resolved={row.get('resolved')}"
        table.add_row(str(row["seq"]), row["created"], row["kind"], str(row.get("benchmark") or "-"),
                      str(row.get("metric_space") or "-"), summary)  # fmt: skip
    console.print(table)
    return 0


BATCH_EPILOG = """\
examples:
  objective-score grade-batch --dataset swe-bench-lite.jsonl --predictions preds.jsonl --repos ~/checkouts --workers 4
  objective-score grade-batch --dataset data.jsonl --predictions preds.json --repos /shared/repos \\
      --scheduler tcp://scheduler:8786 --report run-report.json
  objective-score grade-batch --dataset data.jsonl --predictions preds.jsonl --repos ~/checkouts \\
      --environments envs.json --instance-ids django__django-11099 --run-id try1 --report out/report.json

Predictions: JSONL, a JSON list, or a JSON object keyed by instance id (SWE-agent's
preds.json), each with instance_id, model_name_or_path and model_patch; cost fields
(tokens, calls, dollars, or a cost object, or SWE-agent's model_stats) are recorded
in the cost ledger. model_name_or_path "gold" with no model_patch grades the
dataset's own patch. Each instance's repository is looked up as DIR/owner/name,
then DIR/owner__name, then DIR/name, for repo = owner/name.

Environments: --environments FILE maps an instance id or owner/name@version to an
interpreter path (or {"python": PATH, "image": NAME}); the id wins over repo@version,
which wins over --python. With a file and no --python, an instance the file does not
name is refused. Every interpreter must run 'import pytest' before anything is graded.

Every result is written to the ledger as it arrives. A prediction already graded
(same instance content, model, patch, compat mode, interpreter and image) is read
from the ledger instead of graded again, so an interrupted batch resumes where it
stopped; --retry-infra grades infrastructure failures again. With --scheduler,
gradings run on a Dask cluster whose workers see the repositories and interpreters
at the same paths and have this package installed; only this process writes the ledger.

Outputs: LOG_DIR/run_evaluation/RUN_ID/MODEL/INSTANCE_ID/ holds patch.diff,
test_output.txt, report.json and envelope.json for each result (as SWE-bench's harness
writes them); with --report, {model}.{run_id}.json beside it. A run id may be continued
(the same command after an interruption) but is never overwritten: a run report that
exists, or a log folder holding another grading, is refused before anything is graded.

Exit status: 0 every prediction has a verdict (resolved or not), 2 bad input,
3 some grading was an infrastructure failure, 130 interrupted.
"""

COSTS_EPILOG = """\
Runs are read from the ledger: every score entry joined to its cost entry. A
candidate graded again (same harness, instance and patch) counts once, the
latest grading standing. Infrastructure failures (setup, verifier) are never the
candidate's: they are left out of the resolve rate and the ratios, and counted
apart. Ranking: harnesses are peeled into Pareto layers over (resolve rate up,
dollars per run down); layer 1 is the cost-resolve front. Within a layer the
higher resolve rate ranks first, then the cheaper. An equal resolve rate at a
higher cost is dominated, so it is never ranked equal; only harnesses equal on
both axes share a rank. A ratio is shown as '-' when its denominator is unknown
(the harness did not report tokens) or zero.
"""


RowHandler = Callable[[Any, dict[str, Any], "dict[str, Any] | None", "dict[str, Any] | None"], None]


def grade_jobs(
    ledger: Any, jobs: Sequence[Any], settings: dict[str, Any], *, workers: int, scheduler: str | None,
    retry_infra: bool = False, quiet: bool = False, on_row: RowHandler | None = None, run_id: str | None = None,
    poll: float = 2.0, max_wait: float | None = None,
) -> tuple[dict[str, dict[str, Any]], list[Any]]:
    """Grade the jobs not yet in the ledger (locally or on a cluster), recording each result as it
    arrives; returns every job's report row by job key, and the jobs that were graded now.
    ``on_row(job, row, envelope, recorded)`` sees every row: one read back from the ledger
    (``recorded``), a fresh one (``envelope``) as it arrives, after the ledger.

    Each job is claimed in the ledger just before it is graded (:mod:`.claims`): a job another run
    is grading is left to it, and its result read back once recorded (every ``poll`` seconds, after
    this run's own jobs), or taken back if that run is proven dead. SIGTERM stops it like Ctrl-C
    (KeyboardInterrupt); what was recorded stays recorded and every unfinished claim is released."""
    import signal

    from . import batch
    from .audit_ledger import audit_of, audits
    from .claims import UNRECORDED, Claims
    from .integrity import recombine, settle
    from .ledger import LedgerError

    rows: dict[str, dict[str, Any]] = {}
    unrecorded: list[str] = []  # what went wrong each time the ledger refused a result
    recorded_audits = audits(ledger)
    done = batch.recorded_jobs(ledger)

    def read_back(job: Any, recorded: dict[str, Any]) -> dict[str, Any]:
        row = batch.result_row(job, None, recorded, recorded["seq"])
        # the run's own facts stand; the task's audit is read now (a re-audit may have changed it)
        row["disposition"], row["reasons"], _ = recombine([*(recorded.get("reasons") or []), *(recorded.get("info") or [])],
                                                          recorded.get("disposition"),
                                                          audit_of(recorded_audits, job.instance.fields))  # fmt: skip
        rows[job.key] = row
        if on_row is not None:
            on_row(job, row, None, recorded)
        return row

    todo: list[Any] = []
    for job in jobs:
        recorded = done.get(job.key)
        if recorded is not None and not (retry_infra and recorded.get("outcome") == "infrastructure_failure"):
            read_back(job, recorded)
        elif job.key not in {j.key for j in todo}:
            todo.append(job)
    progress = _BatchProgress(len({j.key for j in jobs}), len(rows), quiet=quiet)

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)  # a killed batch stops like an interrupted one, from here on
    try:
        claims = Claims(ledger, run_id=run_id, retry_infra=retry_infra)
    except (OSError, LedgerError) as exc:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        raise CommandError(f"--ledger {ledger.path}: cannot claim jobs in it ({ledger_problem(exc, ledger.path)}); "
                           "nothing was graded") from None  # fmt: skip
    for released in claims.released:
        print(f"objective-score: took back the claim on {released.get('instance_id')} of a run that is gone "
              f"(pid {released.get('pid')} on {released.get('host')}): it is graded again", file=sys.stderr)  # fmt: skip
    waiting: dict[str, tuple[Any, dict[str, Any]]] = {}  # job key -> (job, the live claim another run holds)
    graded: list[Any] = []

    unclaimed: list[str] = []  # why claims could not be written (the ledger refusing writes): graded without one

    def claim(job: Any) -> bool:
        """Whether this run grades ``job`` now; a recorded result is read back, a held job waits."""
        before = len(claims.released)
        try:
            taken = claims.take(job.key, {"instance_id": job.instance.instance_id, "model_name_or_path": job.prediction.model})
        except Exception as exc:  # the ledger refuses writes: the verdict still stands, graded without a claim
            if not unclaimed:
                print(f"objective-score grade-batch: ledger {ledger.path}: a claim could NOT be recorded: "
                      f"{ledger_problem(exc, ledger.path)} (grading goes on without claims; a run at the same time "
                      "could grade the same jobs)", file=sys.stderr, flush=True)  # fmt: skip
            unclaimed.append(str(exc))
            graded.append(job)
            return True
        for released in claims.released[before:]:  # a run that died while this one went on
            progress.note(f"took back the claim on {job.instance.instance_id} of a run that is gone ({released['why']}): "
                          "it is graded here")  # fmt: skip
        if taken.state == "mine":
            waiting.pop(job.key, None)
            graded.append(job)
            return True
        if taken.state == "recorded":
            waiting.pop(job.key, None)
            progress.advance(job, read_back(job, batch.recorded_job(ledger, int(taken.seq or 0))))
            return False
        waiting[job.key] = (job, dict(taken.holder))
        return False

    def on_result(job: Any, envelope: dict[str, Any]) -> None:
        envelope["benchmark"] = settings.get("benchmark")
        settle(envelope, audit_of(recorded_audits, job.instance.fields))
        seq, problem = None, None
        try:
            seq = batch.record_result(ledger, envelope)
            claims.recorded(job.key)
        except Exception as exc:  # the verdict stands: it goes on in the report, only the ledger misses it
            problem = ledger_problem(exc, ledger.path)
            if not unrecorded:
                print(f"objective-score grade-batch: ledger {ledger.path}: a result was NOT recorded: {problem} (grading "
                      "goes on; every verdict is in the report, and a rerun grades the unrecorded ones again)",
                      file=sys.stderr, flush=True)  # fmt: skip
            unrecorded.append(problem)
            try:
                claims.release(job.key, UNRECORDED)
            except Exception:  # noqa: BLE001 - left open: the next run proves this one dead and releases it
                pass
        rows[job.key] = batch.result_row(job, envelope, None, seq)
        if problem is not None:
            rows[job.key]["ledger_error"] = problem
        if on_row is not None:
            on_row(job, rows[job.key], envelope, None)
        progress.advance(job, rows[job.key])

    def execute(batch_jobs: list[Any], claim_first: bool) -> None:
        if scheduler:
            batch.run_cluster(batch_jobs, settings, scheduler, on_result, claim=claim if claim_first else None)
        else:
            batch.run_local(batch_jobs, settings, workers, on_result, claim=claim if claim_first else None)

    if not scheduler:  # what gradings killed outright left in this machine's temporary folder
        from .runner import sweep_workspaces

        sweep_workspaces()
    try:
        with progress, claims:
            execute(todo, True)
            said = ""
            waited_since = time.monotonic()
            while waiting:
                if max_wait is not None and time.monotonic() - waited_since > max_wait:
                    held = sorted(f"{job.instance.instance_id} (pid {h.get('pid')} on {h.get('host')})" for job, h in waiting.values())
                    raise CommandError(f"{len(held)} job(s) still claimed by another run after --max-wait {max_wait:g} s: "
                                       f"{', '.join(held[:5])}; the {len(rows)} result(s) graded or read back so far are in the ledger; run "
                                       "the command again once that run has ended")  # fmt: skip
                holders = sorted({f"pid {h.get('pid')} on {h.get('host')}" + (f", run {h['run_id']}" if h.get("run_id") else "")
                                  for _, h in waiting.values()})  # fmt: skip
                text = (f"waiting for {len(waiting)} job(s) another run is grading ({'; '.join(holders)}): each is read "
                        "back once recorded, or graded here if that run ends without it"
                        + ("" if max_wait is not None else " (--max-wait S stops waiting)"))  # fmt: skip
                if text != said:
                    progress.note(text)
                    said = text
                time.sleep(poll)
                mine = [job for job, _ in list(waiting.values()) if claim(job)]
                if mine:
                    execute(mine, False)
    except batch.BatchError as exc:
        raise CommandError(str(exc)) from None
    except LedgerError as exc:  # a claim could not be written: what was recorded stays, the rest waits for a rerun
        raise CommandError(f"--ledger {ledger.path}: a job could not be claimed ({ledger_problem(exc, ledger.path)}); "
                           f"{len(rows)} result(s) are in the report, the rest are not graded: run the command again "
                           "to finish") from None  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    return rows, graded


def _select_instances(args: argparse.Namespace, instances: Sequence[Any], predictions: list[Any]) -> tuple[list[Any], list[str]]:
    """``--instance-ids``: only the predictions for those instances; returns them and the run's
    instance ids (SWE-bench's ``total_instances``). Every id must be in the dataset and predicted."""
    import difflib

    dataset_ids = [i.instance_id for i in instances]
    if not args.instance_ids:
        return predictions, dataset_ids
    wanted = list(dict.fromkeys(args.instance_ids))
    known = set(dataset_ids)
    for instance_id in wanted:
        if instance_id not in known:
            close = difflib.get_close_matches(instance_id, dataset_ids, n=3)
            raise CommandError(f"--instance-ids {instance_id}: not an instance of {args.dataset}"
                               + (f" (did you mean {', '.join(close)}?)" if close else ""))  # fmt: skip
    predicted = {p.instance_id for p in predictions}
    lacking = [i for i in wanted if i not in predicted]
    if lacking:
        raise CommandError(f"--instance-ids {lacking[0]}: {args.predictions} holds no prediction for it")
    chosen = set(wanted)
    return [p for p in predictions if p.instance_id in chosen], wanted


class _LogTree:
    """SWE-bench's per-instance log tree, written as each result arrives (and for each result read
    back from the ledger). A folder that cannot be written is said once on standard error; the
    verdicts stand (they are in the ledger and the report)."""

    def __init__(self, log_dir: Path | None, run_id: str, ledger: Path) -> None:
        self.log_dir, self.run_id, self.ledger = log_dir, run_id, ledger
        self.failed: list[str] = []
        self.folders: dict[str, str] = {}

    def __call__(self, job: Any, row: dict[str, Any], envelope: dict[str, Any] | None, recorded: dict[str, Any] | None) -> None:
        from . import batch

        if self.log_dir is None:
            return
        folder = batch.instance_log_dir(self.log_dir, self.run_id, job.prediction.model, job.instance.instance_id)
        try:
            batch.write_instance_logs(folder, job, row, self.run_id, envelope=envelope, recorded=recorded, ledger=str(self.ledger))
        except OSError as exc:
            if not self.failed:
                print(f"objective-score grade-batch: log tree: {folder} NOT written ({exc.strerror or exc}); grading goes on",
                      file=sys.stderr, flush=True)  # fmt: skip
            self.failed.append(str(folder))
            return
        row["log"] = str(folder)


def cmd_grade_batch(args: argparse.Namespace) -> int:
    from . import batch
    from .environments import FROM_DEFAULT, FROM_FLAG
    from .environments import summary as environments_summary
    from .instances import InstanceError, load_instances
    from .ledger import Ledger

    run_id = args.run_id if args.run_id is not None else time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    try:
        instances = load_instances(args.dataset)
        predictions = batch.load_predictions(args.predictions, args.max_patch_size)
    except (InstanceError, batch.BatchError) as exc:
        raise CommandError(str(exc)) from None
    predictions, run_ids = _select_instances(args, instances, predictions)
    by_id = {i.instance_id: i for i in instances}
    assigned, environments = environments_of([by_id[p.instance_id] for p in predictions if p.instance_id in by_id], args)
    fallback = next((e.python for e in assigned.values() if e.source in (FROM_FLAG, FROM_DEFAULT)), None)
    log_dir = Path(args.log_dir) if args.log_dir else None
    # this run's log folder (not all of --log-dir, which might hold an interpreter's virtualenv) is hidden too
    hidden = list(_hidden(args))
    if log_dir is not None and "/" not in run_id:
        hidden.append((log_dir / "run_evaluation" / run_id).resolve())
    settings = {"python": fallback, "timeout": args.timeout, "compat": args.compat or "strict",
                "compute_rate": _rate(args), "network": args.allow_network, "reruns": args.reruns,
                "benchmark": args.benchmark or Path(args.dataset).name.split(".")[0],
                "hidden": [str(p) for p in hidden], "engine": args.engine,
                "max_patch_bytes": args.max_patch_size}  # fmt: skip
    needs_checkout = sorted(i for i, e in assigned.items() if getattr(e, "image", None) is None)
    if args.repos is None and needs_checkout:
        raise CommandError(f"--repos DIR is required: {len(needs_checkout)} instance(s) are graded from a checkout, not "
                           f"an image (first: {needs_checkout[0]})")  # fmt: skip
    repos = Path(args.repos) if args.repos is not None else Path(tempfile.mkdtemp(prefix="objective-no-repos-"))
    if not repos.is_dir():
        raise CommandError(f"--repos {repos}: not a directory")
    if args.workers < 1:
        raise CommandError(f"--workers {args.workers}: expected at least 1")
    try:
        jobs = batch.plan_jobs(instances, predictions, repos.resolve(), settings, assigned)
    except batch.BatchError as exc:
        raise CommandError(str(exc)) from None
    used = {job.instance.instance_id: assigned[job.instance.instance_id] for job in jobs}
    versions = probe_environments(list(used.values()), images=not args.scheduler, engine=args.engine)  # before anything is graded
    report_path = Path(args.report) if args.report else None
    problems = batch.check_outputs(jobs, run_id, log_dir, report_path)
    if problems:
        raise CommandError(_problems("\n".join(problems), "output path"))
    ledger_path = Path(args.ledger) if args.ledger else DEFAULT_LEDGER
    try:  # before anything is graded: a ledger that cannot be opened stops the batch here, losing nothing
        if ledger_path.is_dir():
            raise IsADirectoryError("a directory, not a ledger file")
        opened = Ledger(ledger_path)
    except Exception as exc:
        raise CommandError(f"--ledger {ledger_path}: cannot be opened ({ledger_problem(exc, ledger_path)}); "
                           "nothing was graded") from None  # fmt: skip
    logs = _LogTree(log_dir, run_id, ledger_path)
    environment_record = environments_summary(used, environments, versions)
    with opened as ledger:
        try:
            rows, todo = grade_jobs(ledger, jobs, settings, workers=args.workers, scheduler=args.scheduler,
                                    retry_infra=args.retry_infra, quiet=args.json, on_row=logs, run_id=run_id,
                                    max_wait=args.max_wait)  # fmt: skip
        except KeyboardInterrupt:
            print(f"objective-score grade-batch: interrupted; the results so far are in {ledger_path}; "
                  f"run the same command again to resume (with --run-id {run_id} to continue this run's log tree)",
                  file=sys.stderr)  # fmt: skip
            return 130
        ordered = [rows[job.key] for job in jobs]
        unrecorded = [row["ledger_error"] for row in ordered if row.get("ledger_error")]
        summary = batch.summarize(ordered)
        if todo:
            try:
                ledger.append("batch", {
                    "dataset": str(args.dataset), "predictions": str(args.predictions), "jobs": len(jobs),
                    "graded": len(todo), "resumed": len(jobs) - len(todo), "summary": summary,
                    "scheduler": args.scheduler, "workers": None if args.scheduler else args.workers,
                    "run_id": run_id, "instance_ids": args.instance_ids and run_ids, "environments": environment_record,
                })  # fmt: skip
            except Exception as exc:
                if not unrecorded:
                    print(f"objective-score grade-batch: ledger {ledger_path}: the batch entry was NOT recorded: "
                          f"{ledger_problem(exc, ledger_path)}", file=sys.stderr, flush=True)  # fmt: skip
    report: dict[str, Any] = {"dataset": str(args.dataset), "predictions": str(args.predictions), "ledger": str(ledger_path),
                              "run_id": run_id, "log_dir": None if log_dir is None else str(log_dir / "run_evaluation" / run_id),
                              "environments": environment_record, "summary": summary, "results": ordered}  # fmt: skip
    if unrecorded:
        report["ledger_error"] = {"unrecorded": len(unrecorded), "error": unrecorded[0]}
        print(f"objective-score grade-batch: ledger {ledger_path}: {len(unrecorded)} of {len(todo)} result(s) NOT "
              f"recorded ({unrecorded[0]}); their verdicts are in this command's output only", file=sys.stderr)  # fmt: skip
    if logs.failed:
        report["log_error"] = {"unwritten": len(logs.failed), "first": logs.failed[0]}
    if report_path is not None:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        written: list[str] = []
        for model, run_report in batch.swebench_run_reports(ordered, jobs, run_ids).items():
            path = batch.run_report_path(report_path.parent, model, run_id)  # SWE-bench's {model}.{run_id}.json
            try:
                with path.open("x", encoding="utf-8") as handle:  # never overwritten (checked before grading, too)
                    handle.write(json.dumps(run_report, indent=2) + "\n")
            except FileExistsError:
                print(f"objective-score grade-batch: the run report {path} appeared while grading: NOT overwritten",
                      file=sys.stderr)  # fmt: skip
                continue
            written.append(str(path))
        report["swebench_reports"] = written
        report_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _batch_table(summary, ledger_path, args.report, report["log_dir"])
    return 3 if any(row["failure_class"] == "infrastructure_failure" for row in ordered) else 0


class _BatchProgress:
    """A rich progress bar on a terminal; one plain line per result otherwise (logs, CI)."""

    def __init__(self, total: int, resumed: int, quiet: bool) -> None:
        from rich.console import Console

        self.total, self.resumed, self.quiet = total, resumed, quiet
        self.console = Console(stderr=True)
        self.count = resumed
        self.bar: Any = None

    def __enter__(self) -> _BatchProgress:
        if self.resumed:
            self.console.print(f"resuming: {self.resumed} of {self.total} prediction(s) already graded in the ledger")
        if self.console.is_terminal and not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.description}"), console=self.console)  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total, completed=self.resumed)
        return self

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def advance(self, job: Any, row: dict[str, Any]) -> None:
        self.count += 1
        text = f"{job.instance.instance_id} {job.prediction.model}: {row['failure_class']}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        else:
            print(f"[{self.count}/{self.total}] {text}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _batch_table(summary: dict[str, dict[str, int]], ledger: Path, report: str | None, logs: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="grade-batch: predictions per model and failure class")
    for column in ("model", "predictions", "resolved", "not resolved", "did not apply", "infra failure", "from ledger"):
        table.add_column(column, overflow="fold")
    for model, c in summary.items():
        table.add_row(model, str(c["predictions"]), str(c["resolved"]), str(c["not_resolved"]),
                      str(c["patch_did_not_apply"]), str(c["infrastructure_failure"]), str(c["resumed"]))  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    console.print(f"ledger: {ledger}" + (f"; report: {report}" if report else "") + (f"; logs: {logs}" if logs else ""))


def cmd_costs(args: argparse.Namespace) -> int:
    from .cost_ledger import by_benchmark, runs_from_entries
    from .ledger import Ledger

    path = _ledger_path(args)
    with Ledger(path, read_only=True) as ledger:
        scores = [{"seq": e.seq, "body": e.data} for e in ledger.entries("score")]
        costs = [{"seq": e.seq, "body": e.data} for e in ledger.entries("cost")]
    runs = runs_from_entries(scores, costs)
    if args.harness:
        unknown = sorted(set(args.harness) - {r.harness for r in runs})
        if unknown:
            known = ", ".join(sorted({r.harness for r in runs})) or "none"
            raise CommandError(f"--harness {unknown[0]}: no graded run of that harness in {path} (harnesses: {known})")
        runs = [r for r in runs if r.harness in args.harness]
    if args.benchmark:
        runs = [r for r in runs if r.benchmark == args.benchmark]
    groups = by_benchmark(runs)
    if args.json:
        print(json.dumps({"ledger": str(path), "runs": len(runs), "metric_space": "binary_resolved",
                          "ranking": "within each benchmark; never across benchmarks or metric spaces",
                          "benchmarks": [{"benchmark": name, "harnesses": [s.to_dict() for s in summaries]}
                                         for name, summaries in groups.items()]}, indent=2, ensure_ascii=False))  # fmt: skip
        return 0
    if not groups:
        print(f"{path}: no graded run with a cost entry")
        return 0
    for name, summaries in groups.items():
        _costs_table(path, summaries, name)
    if len(groups) > 1:
        print(f"{len(groups)} benchmarks: each is ranked on its own; resolve rates of different benchmarks are never "
              "averaged or ranked together")  # fmt: skip
    return 0


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _costs_table(path: Path, summaries: Sequence[Any], benchmark: str = "unknown") -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cost and correctness per harness, benchmark {benchmark} ({path})")
    for column in ("rank", "harness", "front", "resolved", "rate", "$/run", "res/$", "res/1k tok",
                   "res/wall-h", "res/CPU-s", "infra excl."):  # fmt: skip
        table.add_column(column, overflow="fold")
    for s in summaries:
        r = s.ratios
        table.add_row(
            str(s.rank), s.harness, "yes" if s.pareto_layer == 1 else f"layer {s.pareto_layer}",
            f"{s.resolved}/{s.runs}", _fmt(s.resolve_rate, ".1%"), _fmt(s.dollars_per_run, ".4f"),
            _fmt(r["resolves_per_dollar"], ".3g"), _fmt(r["resolves_per_1k_tokens"], ".3g"),
            _fmt(r["resolves_per_wall_hour"], ".3g"), _fmt(r["resolves_per_cpu_second"], ".3g"),
            str(s.infrastructure_failures),
        )  # fmt: skip
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    for s in summaries:
        if s.dominated_by:
            console.print(f"{s.harness}: dominated by {', '.join(s.dominated_by)} (as good or better, for less)")
        for note in s.notes:
            console.print(f"{s.harness}: {note}")


SCORECARD_EPILOG = """\
RUN selects graded runs in the ledger:
  12            the run whose score entry is seq 12 (see objective-score ledger show)
  12,15,18      those runs            12-20   the runs with score seq 12 to 20
  harness:NAME  every run of that harness (the latest per instance and patch)
  last          the latest run

objective-score scorecard RUN shows one run's three planes (component metrics, end to
end, economics); with several runs, their means. objective-score scorecard diff A B
compares two sets stage by stage and names the stage that moved, e.g.
  localization.file_recall 51% → 62%; end_to_end.resolved flat: the gain is held by a
  later stage (patching.apply 40% → 41%)
Booleans are shown as the share of runs where they hold; a metric that could not be
computed for a run (no gold patch, no retrieval order, no re-runs) is left out of its mean.
"""


def _scorecard_entries(path: Path) -> list[dict[str, Any]]:
    from .ledger import Ledger

    with Ledger(path, read_only=True) as ledger:
        return [{"seq": e.seq, **e.data} for e in ledger.entries("scorecard")]


def select_scorecards(entries: Sequence[dict[str, Any]], selector: str) -> list[dict[str, Any]]:
    """The scorecard entries a RUN selector names (see SCORECARD_EPILOG)."""
    if not entries:
        raise CommandError("the ledger holds no scorecard (grade a candidate with objective-score grade first)")
    by_score = {e["score_seq"]: e for e in entries}
    if selector == "last":
        return [entries[-1]]
    if selector.startswith("harness:"):
        name = selector.split(":", 1)[1]
        latest = {(e["instance_id"], e["patch_ref"]): e for e in entries if e.get("harness") == name}
        if not latest:
            known = sorted({str(e.get("harness")) for e in entries})
            raise CommandError(f"RUN {selector}: no scorecard of harness {name!r} (harnesses: {', '.join(known)})")
        return sorted(latest.values(), key=lambda e: e["seq"])
    try:
        if "-" in selector:
            low, high = (int(part) for part in selector.split("-", 1))
            seqs = [s for s in sorted(by_score) if low <= s <= high]
        else:
            seqs = [int(part) for part in selector.split(",")]
    except ValueError:
        raise CommandError(f"RUN {selector!r}: expected a score seq (12), a list (12,15), a range (12-20), "
                           "harness:NAME or last") from None  # fmt: skip
    missing = [s for s in seqs if s not in by_score]
    if missing or not seqs:
        raise CommandError(f"RUN {selector}: no scorecard for score entry {missing[0] if missing else selector} "
                           f"(runs with scorecards: {_few_seqs(sorted(by_score))})")  # fmt: skip
    return [by_score[s] for s in seqs]


def _one_benchmark(entries: Sequence[dict[str, Any]], command: str) -> None:
    """Means are taken within one benchmark only: a rate on one instrument is not a rate on another."""
    named = sorted({str(e.get("benchmark") or "(unlabelled)") for e in entries})
    if len(named) > 1:
        raise CommandError(f"{command}: the runs belong to benchmarks {', '.join(named)}; scores of different "
                           "benchmarks (an unlabelled run counts as its own) are never averaged or compared as one "
                           "number: select runs of one benchmark, and label runs with --benchmark")  # fmt: skip
    spaces = sorted({str(e.get("metric_space") or "binary_resolved") for e in entries})
    if len(spaces) > 1:
        raise CommandError(f"{command}: the runs are in metric spaces {', '.join(spaces)}: never averaged together")


def _few_seqs(seqs: Sequence[int]) -> str:
    return ", ".join(map(str, seqs[:12])) + (", ..." if len(seqs) > 12 else "")


def cmd_scorecard(args: argparse.Namespace) -> int:
    from . import scorecard as sc

    words = list(args.runs)
    path = _ledger_path(args)
    entries = _scorecard_entries(path)
    if words[0] == "diff":
        if len(words) != 3:
            raise CommandError("usage: objective-score scorecard diff RUN_A RUN_B")
        a, b = select_scorecards(entries, words[1]), select_scorecards(entries, words[2])
        _one_benchmark([*a, *b], "scorecard diff")
        try:
            result = sc.diff([e["scorecard"] for e in a], [e["scorecard"] for e in b])
        except sc.ScorecardError as exc:  # nothing to pair: bad input, one line
            raise CommandError(str(exc)) from None
        result["selectors"] = {"a": words[1], "b": words[2]}
        if args.json:
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            _scorecard_diff_table(result)
        return 0
    if len(words) != 1:
        raise CommandError("usage: objective-score scorecard RUN  (or: scorecard diff RUN_A RUN_B)")
    chosen = select_scorecards(entries, words[0])
    if len(chosen) > 1:
        _one_benchmark(chosen, "scorecard")
    if args.json:
        if len(chosen) == 1:
            print(json.dumps({"seq": chosen[0]["seq"], "score_seq": chosen[0]["score_seq"],
                              "failure_class": chosen[0].get("failure_class"), "scorecard": chosen[0]["scorecard"],
                              "details": chosen[0].get("details")}, indent=2, ensure_ascii=False))  # fmt: skip
        else:
            print(json.dumps({"runs": [e["score_seq"] for e in chosen],
                              "means": sc.means([e["scorecard"] for e in chosen])}, indent=2))  # fmt: skip
        return 0
    _scorecard_table(chosen, sc.means([e["scorecard"] for e in chosen]))
    return 0


def _scorecard_table(chosen: Sequence[dict[str, Any]], means: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from .scorecard import METRICS, show_value

    single = len(chosen) == 1
    title = (f"scorecard {chosen[0]['scorecard']['run_id']} of {chosen[0]['instance_id']} (score seq {chosen[0]['score_seq']}, "
             f"harness {chosen[0].get('harness') or '-'}, failure class {chosen[0].get('failure_class')})"
             if single else f"mean scorecard of {len(chosen)} runs")  # fmt: skip
    table = Table(title=title)
    for column in ("plane", "stage", "metric", "value"):
        table.add_column(column)
    for metric, _ in METRICS:
        stage, name = metric.split(".")
        plane = "end to end" if stage == "end_to_end" else "component metrics"
        value = chosen[0]["scorecard"]["end_to_end"]["resolved"] if single and metric == "end_to_end.resolved" else show_value(metric, means[metric])
        table.add_row(plane, "" if stage == "end_to_end" else stage, name, value)
    for field in ("tokens", "calls", "cpu", "wall_time", "dollars"):
        table.add_row("economics", "", field, show_value(f"economics.{field}", means[f"economics.{field}"]))
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)


def _scorecard_diff_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from .scorecard import show_value

    table = Table(title=f"scorecard diff: A = {result['selectors']['a']} ({result['runs']['a']} runs), "
                        f"B = {result['selectors']['b']} ({result['runs']['b']} runs)")  # fmt: skip
    for column in ("metric", "A", "B", "change"):
        table.add_column(column)
    for row in result["metrics"]:
        style = {"better": "green", "worse": "red"}.get(row["change"], "")
        change = f"[{style}]{row['change']}[/{style}]" if style else row["change"]
        table.add_row(row["metric"], show_value(row["metric"], row["a"]), show_value(row["metric"], row["b"]), change)
    for row in result["economics"]:
        table.add_row(row["metric"], show_value(row["metric"], row["a"]), show_value(row["metric"], row["b"]), "")
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    console.print(result["attribution"])


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. A pipe closed by its reader (``... --json | head``) ends the command
    quietly with exit 141 (128 + SIGPIPE, as a shell reports it): see :mod:`.outputs`."""
    from . import outputs

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except BrokenPipeError:  # --help into a closed pipe
        return outputs.closed_pipe()
    handler: Callable[[argparse.Namespace], int] = args.handler
    from .ledger import LedgerError
    from .sets import SetError

    try:
        # before any work: every output path the command line names, and the optional dependencies it needs
        problems = outputs.problems_of(args)
        extra = outputs.extra_problem(args)
        if extra:
            problems.append(extra)
        if problems:
            raise CommandError(_problems("\n".join(problems), "output path or dependency"))
        code = handler(args)
        sys.stdout.flush()  # a pipe the reader closed fails here at the latest, not in the interpreter's exit
        return code
    except BrokenPipeError:  # `objective-score ... | head`: the reader has what it wanted; end quietly
        return outputs.closed_pipe()
    except (CommandError, LedgerError, SetError) as exc:
        print(f"objective-score {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"objective-score {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception:  # the grader's own failure is an infrastructure failure, never "not resolved"
        import traceback

        traceback.print_exc()
        print(f"objective-score {args.command}: internal error (infrastructure failure, exit 3)", file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
