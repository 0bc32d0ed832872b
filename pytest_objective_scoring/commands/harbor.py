"""``objective-score harbor run|check``: Harbor / Terminal-Bench task directories verified by
executing their tests. Thin: reading, running and rewards are in :mod:`.harbor`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import CommandError, interrupted_status, terminate
from . import HELP

HARBOR_EPILOG = """\
examples:
  objective-score harbor check fixtures/harbor/fix-csv-total
  objective-score harbor run fixtures/harbor/fix-csv-total --solution
  objective-score harbor run TASK_DIR --workdir ./app --out ./logs/verifier --json

run verifies a working state (--workdir DIR: what an agent left in the task's working
directory) or grades the task's solution/ as the oracle canary (--solution: the initial
state, then solution/solve.sh in a copy of it; the oracle must reach the solved threshold
and the untouched initial state must not). The task's pytest tests (tests/test_outputs.py)
run in a subprocess of --python on a copy, with this project's scorer as the verifier and
the task's [verifier] timeout_sec (else --timeout). The reward is written where Harbor reads
it: reward.txt for a binary task, reward.json (named rewards) for a continuous or tiered one,
with test-stdout.txt and objective-scoring.json beside it.

A task with environment/Dockerfile, a compose file of one service or [environment] docker_image
needs a container: unless task.toml declares [environment] host_ok = true it runs in the
container engine (docker, podman) when one answers: its image is built (cached by content),
each run gets a container of its own (removed afterwards); tests/test.sh runs first and its
reward decides whenever it writes one, this project's verifier runs the pytest tests too.
--base-image IMAGE stands in for images that cannot be pulled here (the Dockerfile's FROM, a
docker_image), and runs a task without container files in a container of IMAGE.
Refused (exit 3, nothing runs): no engine, a second compose service, a GPU, a key this
machine cannot honour (every key is honoured or refused, never ignored), or scripts with
absolute container paths (/app, /tests, ...) that would have to run on the host.
Every run is appended to the ledger (kind "harbor"; --ledger PATH, --no-ledger).
Exit status of run: 0 solved (--solution: the task is valid), 1 not solved (--solution: the
task is invalid), 2 bad input, 3 refused or no verdict (a timeout, a crashed run, the
container engine failed).
check: 0 the task can be verified here, 2 it cannot (errors listed), 3 it needs a container
this machine cannot give it. See docs/harbor.md.
"""


def _error(message: str) -> CommandError:
    return CommandError(message)


def _console() -> Any:
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=140)


def _load(path: str) -> Any:
    from ..harbor import TaskError, load_task

    try:
        return load_task(path)
    except TaskError as exc:
        raise _error(str(exc)) from None


def cmd_harbor_check(args: argparse.Namespace) -> int:
    from ..harbor import (
        EXIT_BAD_INPUT,
        EXIT_REFUSED,
        base_images,
        check_task,
        dump,
        find_engine,
        refusal,
        runs_in,
        static_tests,
    )

    spec = _load(args.task)
    findings = check_task(spec)
    found, _ = static_tests(spec)
    where = runs_in(spec, args.base_image)
    engine = find_engine() if where == "container" and not spec.refused else None
    errors = [f for f in findings if f.severity == "error"]
    refused = refusal(spec, engine, args.base_image)
    runs_here = not errors and refused is None
    dockerfile = spec.compose.dockerfile if spec.compose is not None else None
    if dockerfile is None and spec.build_context is not None and (spec.build_context / "Dockerfile").is_file():
        dockerfile = spec.build_context / "Dockerfile"
    report = {
        "task": spec.to_dict(),
        "tests": [t.test_id for t in found],
        "engine": engine.to_dict() if engine is not None else None,
        "runs_here": runs_here,
        "runs_in": where if runs_here else None,
        "why_not": errors[0].message if errors else refused,
        "base_image": None if not args.base_image else {
            "image": args.base_image,
            "replaces": (base_images(dockerfile.read_text(encoding="utf-8", errors="replace")) if dockerfile else
                         [i for i in (spec.docker_image, spec.compose.image if spec.compose else None) if i])},
        "findings": [f.to_dict() for f in findings],
    }  # fmt: skip
    if args.json:
        print(dump(report))
    else:
        _check_table(spec, report)
    if errors:
        return EXIT_BAD_INPUT
    return EXIT_REFUSED if refused is not None else 0


def _check_table(spec: Any, report: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    rules = spec.rules
    table = Table(title=f"objective-score harbor check: {spec.name}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", overflow="fold")
    container = ", ".join(spec.container) or "no"
    if spec.container and spec.host_ok:
        container += " (host_ok: runs on the host)"
    elif report["runs_in"] == "container":
        engine = report["engine"]
        container += (f" (runs in the container engine: {engine['detail']}; network: "
                      + ", ".join(f"{phase} {mode}" for phase, mode in spec.network.items()) + ")")  # fmt: skip
    runs = "no: " + str(report["why_not"])
    if report["runs_here"]:
        runs = ("yes, in a container: tests/test.sh decides when it writes a reward, else this project's verifier"
                if report["runs_in"] == "container" and spec.layout == "harbor" else "yes, in a container"
                if report["runs_in"] == "container" else "yes, on the host")  # fmt: skip
    uses = [k.use for k in spec.keys]
    keys = (f"{uses.count('honoured')} honoured, {uses.count('informational')} informational, "
            f"{uses.count('refused')} refused")  # fmt: skip
    if report["base_image"]:
        replaces = ", ".join(report["base_image"]["replaces"]) or "nothing (no container files: a container of it)"
        rows_base = [("base image", f"{report['base_image']['image']} replaces {replaces}")]
    else:
        rows_base = []
    rows = [
        ("task", f"{spec.root} ({spec.layout} layout, {spec.rel(spec.config_file)})"),
        ("instruction", spec.rel(spec.instruction) or ("in task.yaml" if spec.instruction_text else "missing")),
        ("container", container),
        ("runs here", runs),
        *rows_base,
        ("keys", keys),
        ("initial state", spec.rel(spec.initial_state_source()) or "empty"),
        ("tests", f"{', '.join(spec.rel(p) for p in spec.test_files) or 'none'}: {len(report['tests'])} test function(s)"),
        ("test script", spec.rel(spec.test_script) or "none"),
        ("solution", spec.rel(spec.solution) or "none (no oracle canary)"),
        ("metric space", rules.metric_space),
        ("solved when", _solved_when(rules) if not (spec.layout == "harbor" and spec.test_script is not None and
                                                     report["runs_in"] == "container") else
         f"tests/test.sh's reward reaches {rules.solved_threshold if rules.solved_threshold is not None else 'the top tier'}"
         " (every dimension, for a reward.json of several and no 'reward'); without a script reward: "
         + _solved_when(rules)),
        ("tiers", ", ".join(f"{t.name} ({'all' if t.tests is None else ', '.join(t.tests)})" for t in rules.tiers) or "-"),
        ("weights", ", ".join(f"{k}={v:g}" for k, v in rules.weights.items()) or "-"),
        ("timeouts", f"verifier {_seconds(spec.verifier_timeout)}, agent/solution {_seconds(spec.agent_timeout)}"),
    ]
    for name, value in rows:
        table.add_row(name, escape(str(value)))
    console = _console()
    console.print(table)
    for key in spec.refused:
        console.print(f"[bold red]refused[/bold red] {escape(key.message())}", soft_wrap=True)
    for finding in report["findings"]:
        style = {"error": "bold red", "warning": "yellow"}.get(finding["severity"], "dim")
        console.print(f"[{style}]{finding['severity']}[/{style}] {escape(finding['where'])}: {escape(finding['message'])}",
                      soft_wrap=True)  # fmt: skip


def _seconds(value: float | None) -> str:
    return "unset (--timeout, else 600s)" if value is None else f"{value:g}s"


def _solved_when(rules: Any) -> str:
    if rules.metric_space == "binary":
        return "every test passes (reward 1, else 0)"
    if rules.metric_space == "continuous_reward":
        weighted = "weighted share" if rules.weights else "share"
        return f"reward ({weighted} of tests passed) >= {rules.solved_threshold:g}"
    return f"the top tier ({rules.tiers[-1].name}) is reached"


def cmd_harbor_run(args: argparse.Namespace) -> int:
    from ..harbor import (
        EXIT_REFUSED,
        Refused,
        RunOptions,
        TaskError,
        dump,
        run_task,
    )
    from ..harbor.run import OutputsNotWritten
    from ..runner import BadInput, resolve_python

    spec = _load(args.task)
    workdir = None
    if args.workdir is not None:
        workdir = Path(args.workdir)
        if not workdir.is_dir():
            raise _error(f"--workdir {args.workdir}: not a directory")
    try:
        python = resolve_python(args.python)
    except BadInput as exc:
        raise _error(str(exc)) from None
    from ..ledger import DEFAULT_LEDGER

    ledger = None if args.no_ledger else Path(args.ledger) if args.ledger else DEFAULT_LEDGER
    options = RunOptions(workdir=workdir, solution=args.solution, out=Path(args.out) if args.out else None,
                         python=python, timeout=args.timeout, keep=args.keep, ledger=ledger,
                         benchmark=args.benchmark, base_image=args.base_image)  # fmt: skip
    import signal

    from ..testrun import allow_runs, kill_all

    previous = signal.signal(signal.SIGTERM, terminate)  # a killed run stops like an interrupted one
    try:
        result = run_task(spec, options)
    except KeyboardInterrupt as exc:
        kill_all()  # the tests' process groups on this machine; the containers were removed on the way out
        allow_runs()
        left = getattr(exc, "not_removed", None) or []
        if left:
            print(f"objective-score harbor: interrupted; the tests were stopped but {len(left)} container(s) could not "
                  "be removed; nothing was recorded", file=sys.stderr)  # fmt: skip
            _report_left(left, getattr(exc, "engine", None))
        else:
            print("objective-score harbor: interrupted; the tests were stopped and every container removed; nothing "
                  "was recorded", file=sys.stderr)  # fmt: skip
        return interrupted_status(exc)
    except OutputsNotWritten as exc:  # the verdict stands; printed in full, since --out could not hold it
        from ..atomic import fallback
        from ..errors import EXIT_INFRASTRUCTURE

        fallback(args.command + " run", "--out", args.out, exc, dump(exc.result.to_dict()))
        return EXIT_INFRASTRUCTURE
    except TaskError as exc:
        raise _error(str(exc)) from None
    except Refused as exc:
        if args.json:
            print(dump({"task": spec.to_dict(), "status": "refused", "reason": str(exc), "exit_code": EXIT_REFUSED}))
        print(f"objective-score harbor: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    if args.json:
        print(dump(result.to_dict()))
    else:
        _run_table(result)
    if result.ledger is not None and result.ledger.get("error"):
        print(f"objective-score harbor: ledger: NOT written to {result.ledger['path']}: {result.ledger['error']}",
              file=sys.stderr)  # fmt: skip
    if result.container is not None:
        _report_left(result.container.get("not_removed") or [], result.container["engine"].get("name"))
    return int(result.exit_code)


def _report_left(left: list[dict[str, str]], engine: str | None) -> None:
    """One line on standard error for each container that could not be removed, with how to remove it."""
    for item in left:
        print(f"objective-score harbor: container {item['name']} was NOT removed ({item['error']}); remove it with "
              f"`{engine or 'docker'} rm --force {item['name']}`", file=sys.stderr)  # fmt: skip


def _run_table(result: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    space = result.metric_space
    title = f"objective-score harbor run: {result.task.name} ({space})"
    table = Table(title=title)
    for column in ("run", "state", "status", "reward", "solved at", "solved", "tier", "tests passed", "seconds"):
        table.add_column(column, overflow="fold")
    runs = [result.verification] if result.initial is None else [result.initial, result.verification]
    for run in runs:
        reward = run.reward
        solved = "-" if reward is None else ("[green]yes[/green]" if reward.solved else "[red]no[/red]")
        table.add_row(
            run.label, escape(run.state), run.status if run.status == "verdict" else f"[red]{run.status}[/red]",
            "-" if reward is None else f"{reward.reward:.4g}",
            "-" if reward is None or reward.threshold is None else f">= {reward.threshold:g}",
            solved, "-" if reward is None or reward.tier is None else reward.tier,
            "-" if reward is None or reward.total is None else f"{reward.passed}/{reward.total}",
            f"{run.run['wall_time']:.2f}",
        )  # fmt: skip
    console.print(table)
    if result.container is not None:
        box = result.container
        console.print(f"container: {escape(str(box['engine']['name']))}, image {escape(str(box['image']))}"
                      + (f" ({escape(str(box['image_id']))[:19]})" if box.get("image_id") else "")
                      + (" (cached build)" if (box.get("build") or {}).get("cached") else "")
                      + ", network " + ", ".join(f"{p} {m}" for p, m in box["network"].items()), soft_wrap=True)  # fmt: skip
        base = box.get("base_image")
        if base:
            replaced = ", ".join(base.get("replaced") or []) or "no image (the task has no container files)"
            console.print(f"base image: {escape(str(base['image']))} stands in for {escape(replaced)}", soft_wrap=True)
    for run in runs:
        which = "this project's verifier" if run.verifier == "objective-scoring" else f"the task's {run.verifier} (its reward file)"
        console.print(f"{run.label}: verified by {which}, {'in the container' if run.where == 'container' else 'on this machine'}"
                      + (f" ({run.failure_class} failure)" if run.failure_class else ""), soft_wrap=True)  # fmt: skip
        if run.no_verdict_reason:
            console.print(f"[red]{run.label}: no verdict[/red]: {escape(run.no_verdict_reason)}", soft_wrap=True)
        if run.attribution:
            console.print(f"{run.label}: {escape(run.attribution)}", soft_wrap=True)
        if run.reward is not None and run.reward.source and len(run.reward.dimensions) > 1:
            shown = ", ".join(f"{k} {v:g}" for k, v in run.reward.dimensions.items())
            console.print(f"  {run.label}: {escape(run.reward.source)}: {escape(shown)}", soft_wrap=True)
        if run.script and run.script.get("note") and run is result.verification:
            console.print(f"  {run.label}: {escape(run.script['note'])}", soft_wrap=True)
        cross = run.cross_check or {}
        if cross:
            reward = cross.get("reward") or {}
            console.print(f"  {run.label}: cross-check by this project's verifier: "
                          + ("no verdict" if cross.get("solved") is None else
                             f"{reward.get('tests_passed')}/{reward.get('tests_total')} tests passed, "
                             f"{'solved' if cross.get('solved') else 'not solved'}")
                          + ("" if cross.get("agrees") is not False else " [yellow](disagrees)[/yellow]"), soft_wrap=True)  # fmt: skip
            if cross.get("note"):
                console.print(f"  {run.label}: [yellow]{escape(cross['note'])}[/yellow]", soft_wrap=True)
        failing = [t for t in run.envelope.get("tests", []) if t["status"] != "passed"]
        for test in failing[:10]:
            detail = test.get("message") or test.get("hint") or ""
            console.print(f"  {run.label}: {escape(test['id'])} {test['outcome']}" + (f": {escape(detail.splitlines()[0])}" if detail else ""),
                          soft_wrap=True)  # fmt: skip
        if len(failing) > 10:
            console.print(f"  {run.label}: ... and {len(failing) - 10} more not passed")
        for removed in run.removed:
            console.print(f"  {run.label}: removed {escape(removed)} from the copy (it would load in place of the verifier)")
    if result.solve is not None:
        solve = result.solve
        state = solve.get("error") or ("timed out" if solve["timed_out"] else f"exit status {solve['exit_code']}")
        console.print(f"solution: {escape(result.task.rel(result.task.solution) or '')} ({state}, {solve['wall_time']:.2f}s)")
    for finding in result.findings:
        style = {"invalid": "bold red", "warning": "yellow"}.get(finding.severity, "dim")
        console.print(f"[{style}]{finding.severity}[/{style}] {escape(finding.where)}: {escape(finding.message)}", soft_wrap=True)
    if result.mode == "oracle" and result.valid is not None:
        verdict = "[green]VALID[/green]: the oracle solves it, the initial state does not" if result.valid else "[bold red]INVALID[/bold red]"
        console.print(f"task: {verdict}")
    elif result.mode == "workdir" and result.verification.reward is not None:
        console.print("verdict: " + ("[green]SOLVED[/green]" if result.verification.solved else "[red]NOT SOLVED[/red]"))
    for path in result.written:
        console.print(f"written: {escape(path)}", soft_wrap=True)
    if result.ledger is not None and result.ledger.get("seq") is not None:
        console.print(f"ledger: entry {result.ledger['seq']} appended to {escape(result.ledger['path'])}", soft_wrap=True)


def register(sub: Any) -> None:
    from .. import options

    harbor = sub.add_parser("harbor", help=HELP["harbor"],
                            description="Harbor / Terminal-Bench task directories: run the task's pytest tests with this "
                            "project's scorer as the verifier and write the reward where Harbor reads it.",
                            epilog=HARBOR_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    actions = harbor.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="Verify a working state, or grade the task's solution as the oracle canary",
                             description="Verify a working state (--workdir) or the task's solution (--solution).",
                             epilog=HARBOR_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    run.add_argument("task", metavar="TASK_DIR", help="The task directory (task.toml or task.yaml)")
    which = run.add_mutually_exclusive_group(required=True)
    which.add_argument("--solution", action="store_true",
                       help="Grade solution/solve.sh as the oracle canary (and the initial state as the empty canary)")  # fmt: skip
    which.add_argument("--workdir", metavar="DIR", help="The working state to verify (copied; never modified)")
    run.add_argument("--out", metavar="DIR", help="Where to write reward.txt / reward.json and the result "
                     "(default: DIR/logs/verifier with --workdir, .objective-scoring/harbor/TASK/verifier with --solution)")  # fmt: skip
    run.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=None,
                     help="Timeout in seconds for a task that declares none (default: 600, Harbor's)")  # fmt: skip
    run.add_argument("--python", metavar="PATH", default=sys.executable,
                     help="Interpreter (with pytest) that runs the task's tests (default: this one)")  # fmt: skip
    run.add_argument("--keep", action="store_true", help="Keep the workspace (its path is in the result)")
    options.add_ledger_options(run.add_argument, prefix="")
    run.add_argument("--benchmark", metavar="NAME", help="The benchmark this task belongs to (default: the task's "
                     "[metadata] benchmark, else unknown); summaries never rank or average across benchmarks")  # fmt: skip
    run.add_argument("--base-image", metavar="IMAGE", help="A local image standing in for the task's own: it "
                     "replaces the images the task's Dockerfile builds FROM (or its docker_image), and a task without "
                     "container files runs in a container of it; recorded in the result")  # fmt: skip
    run.add_argument("--json", action="store_true", help="Print the result as JSON instead of the table")
    run.set_defaults(handler=cmd_harbor_run)
    check = actions.add_parser("check", help="Validate a task directory and report what it needs",
                               description="Validate a task directory's layout and configuration, list its tests "
                               "and say whether it can be verified on this machine.")  # fmt: skip
    check.add_argument("task", metavar="TASK_DIR", help="The task directory (task.toml or task.yaml)")
    check.add_argument("--base-image", metavar="IMAGE", help="As for run: report what it would replace")
    check.add_argument("--json", action="store_true", help="Print the report as JSON instead of the table")
    check.set_defaults(handler=cmd_harbor_check)
