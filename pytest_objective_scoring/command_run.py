"""One live run of another language's runner (``"runner": "command"``) in a fresh container of the
instance's image, and its report taken out of the candidate's reach.

The run (:func:`run_in_image`): a fresh copy of the pristine tree mounted at the image's repository
folder, ``/bin/sh -c TEST_COMMAND`` in it, no network, the container removed at the timeout whatever it
is doing. Only once the engine says the container is gone (no process of the run is left to write it
again) is the report taken: the console as the engine client captured it on this machine, or the files
``report.path`` names, each matched inside the run's copy (a link is never followed, a file larger than
:data:`.command_reports.MAX_REPORT` is cut) and copied to the workspace before it is read
(:func:`.command_reports.read_report`). The run's changes to the judge's files (tests, the runner's
configuration: :func:`.protect.snapshot` with the instance's language) are its ``writes``: signals.

Never imports pytest.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from . import protect
from .command_reports import MAX_REPORT, ReportMissing, read_report
from .command_spec import CommandSpec
from .foreign import JUnitError
from .processes import run_process
from .testrecord import RunRecord, read_tail
from .workspace import base_env, fresh

__all__ = ["collect_report", "run_in_image"]

OUTPUT_TAIL: Final = 4000
MAX_REPORT_FILES: Final = 10_000
REPORT_BUDGET: Final = 512 << 20  # bytes of report files read in all (each file: MAX_REPORT)


def collect_report(spec: CommandSpec, run_copy: Path, log: Path, dest: Path) -> tuple[list[Path], list[str]]:
    """The report's files copied from the finished run into ``dest`` (the console: its log), and notes
    on what was left out (links, special files, files past the limit)."""
    dest.mkdir(parents=True, exist_ok=True)
    if spec.from_console:
        target = dest / "console.log"
        shutil.copyfile(log, target)
        return [target], []
    found: list[Path] = []
    notes: list[str] = []
    root = os.path.realpath(run_copy)
    budget = REPORT_BUDGET
    for pattern in spec.report_paths:
        for match in sorted(glob.glob(pattern, root_dir=run_copy, recursive=True)):
            path = run_copy / match
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                continue
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
                notes.append(f"{match}: not a regular file (a link, a device): not read")
                continue
            if not os.path.realpath(path).startswith(root + os.sep):
                notes.append(f"{match}: outside the repository: not read")
                continue
            if len(found) >= MAX_REPORT_FILES or budget <= 0:
                notes.append(f"more than {MAX_REPORT_FILES} report files or {REPORT_BUDGET} bytes: the rest were not read")
                break
            target = dest / f"{len(found):05d}{Path(match).suffix[:16]}"  # by index: a long name is no failure
            with open(path, "rb") as source, open(target, "wb") as out:
                out.write(source.read(min(MAX_REPORT, budget)))
            budget -= min(info.st_size, MAX_REPORT)
            if info.st_size > MAX_REPORT:
                notes.append(f"{match}: larger than {MAX_REPORT} bytes: cut")
            found.append(target)
    return found, notes


def clear_report(spec: CommandSpec, run_copy: Path) -> list[str]:
    """Remove what the report paths match in the run's copy before the run, so that only what the run
    writes is read (a report file the candidate planted is never graded: a runner stopped before it
    writes its report leaves none). Returns what was removed."""
    if spec.from_console:
        return []
    removed = []
    for pattern in spec.report_paths:
        for match in glob.glob(pattern, root_dir=run_copy, recursive=True):
            path = run_copy / match
            if os.path.lexists(path) and not os.path.isdir(path) or os.path.islink(path):
                os.unlink(path)
                removed.append(match)
    return removed


def run_in_image(
    spec: CommandSpec, *, engine: str, image: str, repo_dir: str, copy: Path, workspace: Path, timeout: float,
    network: bool, label: str, guarded: Sequence[str], max_output: int,
) -> RunRecord:  # fmt: skip
    """``spec.test_command`` in a fresh container of ``image`` over a fresh copy of ``copy`` (never
    touched itself), its report read once the container is gone. A report that is missing or cannot
    be read is ``report_problem``: no verdict, for the control run to explain."""
    from . import container

    place = workspace / "runs" / label
    fresh(place)
    place.mkdir(parents=True)
    run_copy = place / "repo"
    shutil.copytree(copy, run_copy, symlinks=True)
    tools = place / "tools"
    tools.mkdir()
    planted = clear_report(spec, run_copy)
    # a console report: standard error joins standard output inside the container, so that what the runner
    # writes to each (Cargo's "Running" lines to one, libtest's events to the other) keeps its order;
    # the engine carries two streams apart and their interleaving on this side is not the order written
    argv = ["/bin/sh", "-c", ("exec 2>&1\n" if spec.from_console else "") + spec.test_command]
    box = f"objective-run-{label}-{os.getpid()}-{place.parent.parent.name[-8:]}"
    launch = container.run_command(engine, image, argv, name=box, copy=run_copy, repo_dir=repo_dir, tools=tools,
                                   environ={}, network=network, record=None, preserve_fd=False)  # fmt: skip
    log = workspace / f"{label}.log"
    fresh(log)
    before = protect.snapshot(copy, guarded, spec.language)
    flood: dict[str, int] = {}
    ended = False
    try:
        code, timed_out, wall, cpu = run_process(launch, cwd=workspace, env=base_env(), timeout=timeout, log=log,
                                                 max_output=max_output, flood=flood)  # fmt: skip
        ended = not timed_out and not flood and code is not None and code >= 0
    finally:
        gone = container.remove(engine, box, ended=ended)
    run = RunRecord(command=argv, label=label, exit_code=code, timed_out=timed_out, wall_time=wall, cpu=cpu)
    run.runner = "command"
    run.isolation = {"mode": "container", "engine": engine, "image": image,
                     "network": "allowed" if network else "none"}  # fmt: skip
    run.flooded = flood.get("bytes")
    run.output_tail = read_tail(log, OUTPUT_TAIL)
    run.copy_path = repo_dir
    run.session = {"exitstatus": code}
    if not gone:  # a process of the run may still write: nothing it left is read
        run.report_problem = "the run's container could not be removed: its report is not read while it may still write"
        return run
    run.writes = protect.snapshot_changes(before, protect.snapshot(run_copy, guarded, spec.language))
    try:
        files, notes = collect_report(spec, run_copy, log, place / "report")
        run.report = read_report(files, spec.reader, spec.report_format, repo_dir)
        run.report.notes += notes
        if planted:
            run.report.notes.append(f"removed before the run, so that only the run's own report is read: "
                                    f"{', '.join(planted[:5])}")  # fmt: skip
    except ReportMissing as exc:
        run.report_problem = str(exc)
    except (JUnitError, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        run.report_problem = f"the report cannot be read as {spec.report_format}: {type(exc).__name__}: {exc}"
    fresh(run_copy)
    return run
