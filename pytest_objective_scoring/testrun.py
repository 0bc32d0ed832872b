"""The candidate's code run: pytest on the listed tests' files, and the instance's build command.

A test run (:func:`run_tests`) is one pytest subprocess over the pristine copy, in the best sandbox
this machine gives (:mod:`.sandbox`: a root of its own where only an overlay over the copy, a
private home and ``/tmp`` are writable), or in a fresh container of the benchmark's image
(:func:`run_in_container`). The process gets the recorder and the boot module (and nothing else of
ours), a scrubbed environment, the copy's import roots first on its path, the record as a
descriptor and its key on standard input, and a timeout that kills its whole process group
(:mod:`.processes`). What it recorded is read back by :mod:`.testrecord`; what it wrote to
protected files is read from the overlay's upper layer (:func:`upper_changes`). The build command
(:func:`build_in`, :func:`build_in_container`) runs in the same confinement, writing the copy.

Harbor's verifier and the samples' harness import the process and record functions they share
with these runs from here too (re-exported from :mod:`.processes` and :mod:`.testrecord`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Final, Mapping, Sequence

from . import protect
from .processes import (
    allow_runs,
    isolation_prefix,
    kill_all,
    network_isolation,
    pid_isolation,
    run_process,
)
from .testrecord import (
    OUTPUT_TAIL,
    RunRecord,
    parse_records,
    read_bounded,
    read_records,
    read_tail,
    record_key,
    watching,
)
from .runner_choice import RunnerCommand
from .workspace import STAGING_PREFIX, WORKSPACE_PREFIX, base_env, fresh, import_roots

__all__ = [
    "RunRecord",
    "SandboxFailure",
    "allow_runs",
    "build_in",
    "build_in_container",
    "confined",
    "isolation_prefix",
    "kill_all",
    "network_isolation",
    "pid_isolation",
    "read_records",
    "record_key",
    "run_in_container",
    "run_process",
    "run_tests",
    "selection",
    "upper_changes",
]

RECORDER_MODULE: Final = "_objective_scoring_recorder"
MAX_OUTPUT: Final = 64 << 20  # bytes of output a test run may write (pytest -q -rfE output is kilobytes)
BUILD_TIMEOUT: Final = 900.0  # seconds the build command may take at most (less when the run's timeout is shorter)


def _tool_source(name: str) -> str:
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


BOOT_MODULE: Final = "_objective_scoring_boot"
CONFIG_NAMES: Final = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def config_file(copy: Path, test_files: Sequence[str]) -> Path | None:
    """The configuration file pytest would take for ``test_files`` (its own search: from their common
    folder up to the copy's root; the first folder holding a file with a pytest section), or None."""
    import configparser

    folders = [(copy / f).parent for f in test_files] or [copy]
    ancestor = Path(os.path.commonpath([str(f) for f in folders]))
    root = copy.resolve()
    while True:
        for name in CONFIG_NAMES:
            candidate = ancestor / name
            if not candidate.is_file():
                continue
            if name in ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml"):
                return candidate
            text = candidate.read_text(encoding="utf-8", errors="replace")
            if name == "pyproject.toml":
                try:
                    import tomllib
                except ImportError:  # Python 3.10
                    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
                try:
                    tool = tomllib.loads(text).get("tool", {})
                except ValueError:
                    continue
                if isinstance(tool, dict) and isinstance(tool.get("pytest"), dict):
                    return candidate
                continue
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read_string(text)
            except configparser.Error:
                continue
            if parser.has_section("pytest" if name == "tox.ini" else "tool:pytest"):
                return candidate
        if ancestor.resolve() == root or ancestor.parent == ancestor:
            return None
        ancestor = ancestor.parent


PROGRAM_MODULE: Final = "_objective_scoring_program"


def stage_tools(tools: Path) -> None:
    """The recorders and the boot module, the only code of ours the test process runs."""
    (tools / f"{RECORDER_MODULE}.py").write_text(_tool_source("recorder.py"), encoding="utf-8")
    (tools / f"{BOOT_MODULE}.py").write_text(_tool_source("boot.py"), encoding="utf-8")
    (tools / f"{PROGRAM_MODULE}.py").write_text(_tool_source("program_recorder.py"), encoding="utf-8")


SELECTION_FILE: Final = "select.json"


def selection(listed: Sequence[str], compat: str) -> dict[str, Any]:
    """What the recorder needs to keep only the listed tests (``grade --select``), matched as the
    grader matches them (:mod:`.scorer`): every listed id in both spellings of an escaped parameter
    id, and the ids cut at whitespace, which stand for every test continuing them."""
    from .scorer import _escaped, looks_cut

    strict = compat == "strict"
    ids = set(listed) | ({_escaped(t) for t in listed} if strict else set())
    if strict:
        cuts = sorted({s for t in listed if looks_cut(t) for s in (t, _escaped(t))})
    else:  # SWE-bench matches a cut id against every id it prefixes
        cuts = sorted(t for t in listed if t.count("[") > t.count("]"))
    return {"strict": strict, "listed": sorted(ids), "cuts": cuts}


def stage_selection(tools: Path, select: Mapping[str, Any]) -> Path:
    """Write the selection beside the recorder (read-only for the test process)."""
    path = tools / SELECTION_FILE
    path.write_text(json.dumps(dict(select), ensure_ascii=False), encoding="utf-8")
    return path



def pytest_command(python: str, boot: str, rootdir: str, confcutdir: str, config: str | None,
                   test_files: Sequence[str], options: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """The test process's command line, the same on this machine and in a container (paths as the
    process sees them): the interpreter isolated through the boot module, the recorder, pytest's
    configuration file, rootdir and conftest cut-off pinned inside the copy, and ``--maxfail=0``
    after the repository's addopts (a configured ``-x`` must not stop before every listed test ran);
    ``options``: pytest options of this run alone (a wider run's ``--continue-on-collection-errors``)."""
    return [python, "-I", "-S", "-B", boot, "-p", RECORDER_MODULE, "-p", "no:cacheprovider", "-p", "no:objective_scoring",
            "-q", "-rfE", "--maxfail=0", "--rootdir", rootdir, "--confcutdir", confcutdir,
            *(["-c", config] if config is not None else []), *options, *test_files]  # fmt: skip


def program_env(command: RunnerCommand | None) -> dict[str, str]:
    """What a test process of ``command``'s runner needs beyond the runner's environment: which
    runner the boot module starts, the command's own variables (SWE-bench's exports) and, for SymPy,
    a hash seed (``bin/test`` then runs its tests in this process, where the recorder is, instead
    of a child interpreter of its own; the process's hashing stays randomized: it starts isolated)."""
    if command is None or command.is_pytest:
        return {}
    environ = {**command.env, "OBJECTIVE_SCORING_RUNNER": command.runner}
    if command.runner == "sympy":
        import secrets

        environ["PYTHONHASHSEED"] = str(secrets.randbelow(2**32))
    return environ


def read_console(log: Path, limit: int) -> str:
    """A program run's console output, for its reading beside the record: a regular file only,
    never a link or a FIFO the test process put in its place, at most ``limit`` bytes."""
    try:
        descriptor = os.open(log, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return read_bounded(descriptor, limit)
    finally:
        os.close(descriptor)


def _run_dir(workspace: Path, label: str) -> Path:
    place = workspace / "runs" / label
    fresh(place)
    place.mkdir(parents=True)
    return place


def run_tests(**arguments: Any) -> RunRecord:
    """Run pytest on ``test_files`` over the pristine ``copy`` and collect the recorder's facts
    (:func:`run_in`), in the best sandbox this machine gives (:func:`.sandbox.probe`): when the
    launcher says it could not build its root, the next mode is tried; when a warm test process
    (:mod:`.warm`) fails, the run is made again, cold."""
    from . import sandbox, warm

    workdir = str(Path(arguments["workspace"]).parent)
    while True:
        mode, why = sandbox.probe(workdir)
        try:
            return run_in(mode, why, **arguments)
        except warm.WarmFailure as exc:  # made again, cold (the warm process never had the candidate's code)
            warm.disable(arguments["python"], str(exc))
        except SandboxFailure as exc:
            if mode == "none":
                raise
            sandbox.demote(workdir, mode, str(exc))


def run_in(
    mode: str,
    why: str,
    *,
    copy: Path,
    original: Path,
    workspace: Path,
    python: str,
    test_files: Sequence[str],
    timeout: float,
    network: bool,
    label: str,
    shuffle_seed: int | None = None,
    keep_state: bool = False,
    guarded: Sequence[str] = (),
    hidden: Sequence[Path] = (),
    max_output: int = MAX_OUTPUT,
    select: Mapping[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
    command: RunnerCommand | None = None,
    pytest_options: Sequence[str] = (),
) -> RunRecord:
    """Run pytest on ``test_files`` over the pristine ``copy`` and collect the recorder's facts.
    With a ``command`` of another runner (:mod:`.runner_choice`), run that program on the targets
    ``test_files`` instead (its console output is kept, bounded, beside the record).

    ``select`` (:func:`selection`) deselects every test the instance does not list; ``progress`` is
    called every few seconds with the number of tests finished so far.

    The test process runs the candidate's code. Where the machine allows (:mod:`.sandbox`) it runs
    in a root of its own: the copy is an overlay over the pristine ``copy``, which no run ever
    writes (so every run starts from it), and what the run wrote is read back from the overlay's
    upper layer; elsewhere it runs in a fresh copy of its own. Either way ``copy`` is never touched.
    The interpreter starts isolated through :mod:`.boot` (the recorder's key and channel first, an
    audit hook, then ``site``, the copy and pytest). Only re-runs of the same candidate
    (``keep_state``) keep its home and temporary folder. The record is a file the grader creates
    under an unpredictable name and hands to the test process as an open descriptor; its key
    reaches the recorder on standard input, never through the environment.
    """
    from . import sandbox, warm

    tools, home, tmp = workspace / "tools", workspace / "home", workspace / "tmp"
    for folder in (tools, home, tmp):  # re-runs of the same candidate (``keep_state``) keep its home and tmp
        if folder is tools or not keep_state or not folder.is_dir() or folder.is_symlink():
            fresh(folder)
            folder.mkdir()
    stage_tools(tools)
    place = _run_dir(workspace, label)
    run_copy = copy
    if mode != "namespaces":  # no overlay: a fresh copy of the pristine one for this run alone
        run_copy = place / "repo" if mode == "none" else copy
        shutil.copytree(copy, place / "repo", symlinks=True)
    descriptor, name = tempfile.mkstemp(prefix=f"{label}-", suffix=".jsonl", dir=workspace)
    writer = os.open(name, os.O_WRONLY | os.O_APPEND)  # every write lands at the end: nobody overwrites anybody
    key = record_key()
    roots, packages = import_roots(copy)
    if run_copy != copy:
        roots = [str(run_copy / Path(r).relative_to(copy)) for r in roots]
    environ = base_env()
    environ.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        # for the interpreters the tests start (pytester's runpytest_subprocess, a CLI under test): the
        # copy first, as an editable install would give it; the test process itself starts isolated (-I)
        # and ignores both
        PYTHONPATH=os.pathsep.join(roots),
        PYTHONDONTWRITEBYTECODE="1",
        OBJECTIVE_SCORING_RECORD_FD=str(writer),
        OBJECTIVE_SCORING_RECORD_KEY_STDIN="1",
        OBJECTIVE_SCORING_ACTIVE="1",
        OBJECTIVE_SCORING_IMPORT_ROOTS=os.pathsep.join(roots),
        OBJECTIVE_SCORING_PACKAGES=os.pathsep.join(packages),
        OBJECTIVE_SCORING_COPY=str(run_copy.resolve()),
        OBJECTIVE_SCORING_GUARDED=os.pathsep.join(g for g in guarded if os.pathsep not in g),
    )
    if mode == "none":  # no root of its own: the recorder at least names imports from the user's checkout
        environ["OBJECTIVE_SCORING_ORIGINAL"] = str(original.resolve())
    if shuffle_seed is not None:
        environ["OBJECTIVE_SCORING_SHUFFLE_SEED"] = str(shuffle_seed)
    if select is not None:
        environ["OBJECTIVE_SCORING_SELECT"] = str(stage_selection(tools, select))
    program = command is not None and not command.is_pytest
    environ.update(program_env(command))
    if command is not None and program:
        argv = command.argv(python, str(tools / f"{BOOT_MODULE}.py"), test_files)
    else:
        config = config_file(run_copy, test_files)
        argv = pytest_command(python, str(tools / f"{BOOT_MODULE}.py"), str(run_copy),
                              str(config.parent if config is not None else run_copy),
                              str(config) if config is not None else None, test_files, pytest_options)  # fmt: skip
    log = workspace / f"{label}.log"
    fresh(log)
    launch, isolation, status = confined(
        argv, mode=mode, why=why, place=place, cwd=copy, network=network, python=python,
        writable=[(home, home), (tmp, tmp)] + ([] if mode != "namespaces-copy" else [(place / "repo", copy)]),
        overlay=(copy, copy) if mode == "namespaces" else None, read_only=[tools], hidden=[original, *hidden],
        aliases=[(copy, original)] if original.resolve() != copy.resolve() else [],
    )  # fmt: skip
    status_reader, status_writer = status
    if mode == "none":
        launch = [*isolation_prefix(network), *argv]
    warm_process, cold_why = None, ""
    if mode == "namespaces" and program:
        cold_why = f"the {command.runner if command else ''} runner starts cold: its recorder is installed before site runs"
    elif mode == "namespaces" and shuffle_seed is not None:  # a robustness re-run: its own hash seed too, as ever
        cold_why = "a re-run in a shuffled order starts cold: an interpreter and a hash seed of its own"
    elif mode == "namespaces":
        warm_process, cold_why = warm.acquire(python, base_env())
    if warm_process is not None:
        clash = warm.clashes(warm_process.modules, [run_copy, *map(Path, roots)])
        if clash:
            warm.release(warm_process)
            warm_process, cold_why = None, ("the copy provides modules the warm process imported: "
                                            + ", ".join(clash[:8]))  # fmt: skip
    if mode == "namespaces":
        isolation = {**isolation, "start": "warm" if warm_process is not None else "cold"}
        if cold_why:
            isolation["cold_because"] = cold_why
    before = protect.snapshot(copy, guarded) if mode != "namespaces" else {}
    flood: dict[str, int] = {}
    try:
        with watching(descriptor, progress):
            if warm_process is not None:
                request = {"spec": json.loads(launch[-1]), "boot": argv[4], "argv": argv[5:], "orig_argv": argv,
                           "env": {**environ, "OBJECTIVE_SCORING_RECORD_FD": "3"}}  # fmt: skip
                try:
                    code, timed_out, wall, cpu = warm_process.run(
                        request, timeout=timeout, log=log, stdin_data=(key + "\n").encode("ascii"), record_fd=writer,
                        status_fd=status_writer, max_output=max_output, flood=flood,
                    )  # fmt: skip
                finally:
                    warm.release(warm_process)
            else:
                code, timed_out, wall, cpu = run_process(
                    launch, cwd=run_copy if mode == "none" else Path("/"), env=environ, timeout=timeout, log=log,
                    stdin_data=(key + "\n").encode("ascii"),
                    pass_fds=(writer,) if status_writer < 0 else (writer, status_writer), max_output=max_output,
                    flood=flood,
                )  # fmt: skip
        text = read_bounded(descriptor)
    except BaseException:
        if status_reader >= 0:
            os.close(status_reader)
        raise
    finally:
        os.close(writer)
        os.close(descriptor)
        if status_writer >= 0:
            os.close(status_writer)
    if status_reader >= 0:
        ok, failure = sandbox.read_status(status_reader)
        if not ok and warm_process is not None:
            raise warm.WarmFailure(f"a run forked from the warm process could not be confined: {failure}")
        if not ok:
            raise SandboxFailure(failure)
    run = RunRecord(command=argv, label=label, exit_code=code, timed_out=timed_out, wall_time=wall, cpu=cpu)
    run.isolation = isolation
    run.flooded = flood.get("bytes")
    run.output_tail = read_tail(log, OUTPUT_TAIL)
    run.collector, run.collect_errors, run.session = parse_records(text, key, run.signals, run.cases)
    if run.session is not None and run.session.get("forged"):
        run.forged, run.session = run.session["forged"], None
    if command is not None and program:
        run.runner, run.console = command.runner, read_console(log, max_output)
    if mode == "namespaces":
        run.writes = upper_changes(place / "upper", copy, guarded)
    else:
        run.writes = protect.snapshot_changes(before, protect.snapshot(place / "repo", guarded))
    run.copy_path = str(run_copy.resolve())
    run.aliases = list(isolation.get("copy_also_at", []))
    fresh(place)
    return run


def run_in_container(
    *,
    engine: str,
    image: str,
    repo_dir: str,
    copy: Path,
    workspace: Path,
    python: str,
    test_files: Sequence[str],
    timeout: float,
    network: bool,
    label: str,
    shuffle_seed: int | None = None,
    guarded: Sequence[str] = (),
    max_output: int = MAX_OUTPUT,
    select: Mapping[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
    command: RunnerCommand | None = None,
    pytest_options: Sequence[str] = (),
) -> RunRecord:
    """Run pytest (or ``command``'s program) on ``test_files`` in a fresh container of ``image``
    (:mod:`.container`): a fresh copy of the pristine ``copy`` mounted at ``repo_dir``, the
    interpreter ``python`` of the image started isolated through the boot module, the record's key
    on standard input and the record this machine's descriptor. ``copy`` is never touched; what the
    run wrote is read from its own copy."""
    from . import container

    tools = workspace / "tools"
    fresh(tools)
    tools.mkdir()
    stage_tools(tools)
    place = _run_dir(workspace, label)
    run_copy = place / "repo"
    shutil.copytree(copy, run_copy, symlinks=True)
    descriptor, name = tempfile.mkstemp(prefix=f"{label}-", suffix=".jsonl", dir=workspace)
    writer = os.open(name, os.O_WRONLY | os.O_APPEND)
    key = record_key()
    roots, packages = import_roots(copy)
    inside = [container.container_path(repo_dir, copy, r) for r in roots]
    environ = {
        "PYTHONPATH": os.pathsep.join(inside), "PYTHONDONTWRITEBYTECODE": "1",
        "OBJECTIVE_SCORING_RECORD_KEY_STDIN": "1", "OBJECTIVE_SCORING_ACTIVE": "1",
        "OBJECTIVE_SCORING_IMPORT_ROOTS": os.pathsep.join(inside), "OBJECTIVE_SCORING_PACKAGES": os.pathsep.join(packages),
        "OBJECTIVE_SCORING_COPY": repo_dir, "OBJECTIVE_SCORING_GUARDED": os.pathsep.join(g for g in guarded if os.pathsep not in g),
    }  # fmt: skip
    record_folder = None
    if engine == "podman":
        environ["OBJECTIVE_SCORING_RECORD_FD"] = "3"
    else:
        record_folder = place / "record"
        record_folder.mkdir()
        environ["OBJECTIVE_SCORING_RECORD"] = f"{container.C_RECORD}/record.jsonl"
    if shuffle_seed is not None:
        environ["OBJECTIVE_SCORING_SHUFFLE_SEED"] = str(shuffle_seed)
    if select is not None:
        environ["OBJECTIVE_SCORING_SELECT"] = f"{container.C_TOOLS}/{stage_selection(tools, select).name}"
    program = command is not None and not command.is_pytest
    environ.update(program_env(command))
    if command is not None and program:
        argv = command.argv(python, f"{container.C_TOOLS}/{BOOT_MODULE}.py", test_files)
    else:
        config = config_file(copy, test_files)
        argv = pytest_command(python, f"{container.C_TOOLS}/{BOOT_MODULE}.py", repo_dir,
                              container.container_path(repo_dir, copy, config.parent if config is not None else copy),
                              container.container_path(repo_dir, copy, config) if config is not None else None,
                              test_files, pytest_options)  # fmt: skip
    box = f"objective-run-{label}-{os.getpid()}-{record_key()[:10]}"
    launch = container.run_command(engine, image, argv, name=box, copy=run_copy, repo_dir=repo_dir, tools=tools,
                                   environ=environ, network=network, record=record_folder)  # fmt: skip
    log = workspace / f"{label}.log"
    fresh(log)
    before = protect.snapshot(copy, guarded)
    flood: dict[str, int] = {}
    ended = False  # the engine client ended on its own (not killed): `run --rm` removed the container
    try:
        with watching(descriptor, progress):  # podman writes the record here as it runs (docker: at the end)
            code, timed_out, wall, cpu = run_process(
                container.as_descriptor_3(writer, launch) if engine == "podman" else launch, cwd=workspace,
                env=base_env(), timeout=timeout, log=log, stdin_data=(key + "\n").encode("ascii"), pass_fds=(writer,),
                max_output=max_output, flood=flood,
            )  # fmt: skip
        ended = not timed_out and not flood and code is not None and code >= 0
        text = read_bounded(descriptor)
    finally:
        container.remove(engine, box, ended=ended)
        os.close(writer)
        os.close(descriptor)
    cases: list[dict[str, Any]] = []
    if record_folder is not None:
        collector, errors, session = read_records(record_folder / "record.jsonl", key, cases)
    run = RunRecord(command=argv, label=label, exit_code=code, timed_out=timed_out, wall_time=wall, cpu=cpu)
    run.isolation = {"mode": "container", "engine": engine, "image": image,
                     "network": "allowed" if network else "none"}  # fmt: skip
    run.flooded = flood.get("bytes")
    run.output_tail = read_tail(log, OUTPUT_TAIL)
    if record_folder is None:
        run.collector, run.collect_errors, run.session = parse_records(text, key, run.signals, run.cases)
    else:
        run.collector, run.collect_errors, run.session = collector, errors, session
        run.cases = cases
    if run.session is not None and run.session.get("forged"):
        run.forged, run.session = run.session["forged"], None
    if command is not None and program:
        run.runner, run.console = command.runner, read_console(log, max_output)
    run.writes = protect.snapshot_changes(before, protect.snapshot(run_copy, guarded))
    run.copy_path = repo_dir
    fresh(place)
    return run


def confined(
    command: Sequence[str], *, mode: str, why: str, place: Path, cwd: Path, network: bool, python: str,
    writable: Sequence[tuple[Path, Path]] = (), overlay: tuple[Path, Path] | None = None,
    read_only: Sequence[Path] = (), hidden: Sequence[Path] = (), aliases: Sequence[tuple[Path, Path]] = (),
) -> tuple[list[str], dict[str, Any], tuple[int, int]]:
    """The command line that runs ``command`` in a root of its own (:mod:`.sandbox`), what the
    envelope says of it, and its status pipe ``(reader, writer)`` (``(-1, -1)`` in mode ``none``,
    where ``command`` is returned as it is). ``overlay`` is ``(pristine, target)``: ``target`` shows
    ``pristine`` writable, its writes kept in ``place``'s upper layer. ``writable`` binds
    ``(source, target)`` read-write; ``read_only`` and the interpreter's folders are bound read-only;
    ``hidden`` paths (and ``place``'s parent, the workspaces) are never shown. ``aliases`` are
    ``(copy, path)``: the copy shown again at ``path`` (the user's checkout, hidden), so that what an
    environment's start-up points there (an editable install's ``.pth``, a namespace package set up
    from its path) reaches the graded copy, as it reaches ``/testbed`` in SWE-bench's images; an
    alias over a folder holding one of the interpreter's is left out (the path stays hidden)."""
    from . import interpreters, sandbox

    if mode == "none":
        return list(command), {"mode": "none", "detail": why}, (-1, -1)
    reader, writer = os.pipe()
    (place / "root").mkdir()
    workspaces = place.parents[2] if len(place.parents) > 2 else place.parent
    real_base = os.path.realpath(workspaces)  # a folder holding them all (``/tmp`` on the path) is never shown
    folders = [f for f in interpreters.interpreter_folders(python)
               if not any(sandbox.inside(real_base, p) for p in (os.path.abspath(f), os.path.realpath(f)))]
    spec: dict[str, Any] = {
        "root": str(place / "root"), "status_fd": writer, "cwd": str(cwd), "network": network, "grader": os.getpid(),
        "command": list(command), "home": str(writable[0][1]) if writable else "/",
        "read_only": interpreters.visible(folders, [*hidden, *gradings(folders, workspaces)],
                                     interpreters.interpreter_prefixes(python)),
        "masked": [str(h) for h in hidden],
        "writable": [[str(a), str(b)] for a, b in writable],
        "late_read_only": [str(p) for p in read_only],
    }  # fmt: skip
    shown = spec["read_only"]
    spec["aliases"] = [[str(copy), str(path)] for copy, path in aliases
                       if not any(os.path.realpath(r) == os.path.realpath(path) or
                                  os.path.realpath(r).startswith(os.path.realpath(path).rstrip("/") + "/") for r in shown)]
    if overlay is not None:
        for layer in ("upper", "work"):
            (place / layer).mkdir()
        spec["overlay"] = {"lower": str(overlay[0]), "upper": str(place / "upper"), "work": str(place / "work"),
                           "target": str(overlay[1])}  # fmt: skip
    isolation: dict[str, Any] = {"mode": "namespaces", "copy": "overlay" if overlay is not None else "fresh copy",
                                 "network": "allowed" if network else "loopback only"}  # fmt: skip
    if spec["aliases"]:
        isolation["copy_also_at"] = [alias for _, alias in spec["aliases"]]
    return sandbox.launcher(spec), isolation, (reader, writer)


def gradings(folders: Sequence[str], base: Path) -> list[Path]:
    """The gradings' workspaces in ``base`` (this one's and any other's, ``objective-score-*`` and
    their staging names) that hold one of ``folders``: never shown. The rest of ``base`` (the temp
    folder, usually) is not hidden: an interpreter or a ``.pth``'s folder may live there."""
    found: list[Path] = []
    real = os.path.realpath(base)
    for folder in folders:
        for path in {os.path.abspath(folder), os.path.realpath(folder)}:
            rel = os.path.relpath(path, real) if path.startswith(real.rstrip("/") + "/") else ""
            first = rel.split(os.sep, 1)[0]
            if first.startswith((WORKSPACE_PREFIX, STAGING_PREFIX)) and Path(real, first) not in found:
                found.append(Path(real, first))
    return found


class SandboxFailure(RuntimeError):
    """The sandbox this machine offered could not be built for one run (never the candidate's doing:
    the launcher says so on a pipe the test process never holds)."""


def judged_path(rel: str, guarded: Sequence[str]) -> bool:
    """A path whose change by the test run counts as a signal: a protected source (test modules,
    conftest files, configuration, start-up hooks); data files the tests write below their folders
    are theirs to write."""
    reason = protect.protected_reason(rel, guarded)
    if reason is None or "__pycache__" in rel.split("/"):
        return False  # byte code is Python's own writing (a subprocess of the tests without -B)
    name = rel.rsplit("/", 1)[-1]
    return rel in guarded or name.endswith((".py", ".pth", ".pyc")) or name in protect.CONFIG_FILES or name == ".gitattributes"


def upper_changes(upper: Path, lower: Path, guarded: Sequence[str]) -> list[str]:
    """The protected files a run wrote, from its overlay's upper layer: a file there was written
    (even when its content was put back), a whiteout (a 0:0 character device) was removed."""
    changes = []
    unreadable: list[str] = []

    def refused(error: OSError) -> None:  # a folder the grader cannot read is never skipped silently
        where = os.path.relpath(error.filename, upper).replace(os.sep, "/") if error.filename else "."
        unreadable.append(f"unreadable {where} ({error.strerror})")

    for directory, dirnames, filenames in os.walk(upper, onerror=refused):
        rel_dir = os.path.relpath(directory, upper)
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *dirnames]:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError as exc:
                refused(exc)
                continue
            if stat.S_ISDIR(info.st_mode):
                continue
            if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                kind = "removed"
            else:
                kind = "changed" if (lower / rel).exists() or (lower / rel).is_symlink() else "added"
            if judged_path(rel, guarded):
                changes.append(f"{kind} {rel}")
    return sorted(changes) + sorted(set(unreadable))


def build_in(
    command: list[str], *, workspace: Path, copy: Path, python: str, network: bool, timeout: float,
    hidden: Sequence[Path] = (),
) -> tuple[int | None, bool, float, Path]:
    """The instance's build command, in the sandbox, writing into the pristine ``copy`` (what it builds
    is part of the state every test run starts from); nothing else is in its reach. Returns
    ``(exit_code, timed_out, cpu_seconds, log)``; when the launcher says it could not build its
    root, the next mode is tried, as for the test runs."""
    from . import sandbox

    place = workspace / "runs" / "build"
    place.mkdir(parents=True, exist_ok=True)
    home = workspace / "build-home"
    home.mkdir(exist_ok=True)
    log = workspace / "build.log"
    workdir = str(workspace.parent)
    mode, why = sandbox.probe(workdir)
    launch, _, (reader, writer) = confined(
        command, mode="none" if mode == "none" else "namespaces-copy", why=why, place=place, cwd=copy,
        network=network, python=python, writable=[(home, home), (copy, copy)], hidden=hidden,
    )  # fmt: skip
    if mode == "none":
        launch = [*isolation_prefix(network), *command]
    try:
        code, timed_out, _, cpu = run_process(launch, cwd=copy if mode == "none" else Path("/"),
                                              env={**base_env(), "HOME": str(home)},
                                              timeout=min(timeout, BUILD_TIMEOUT), log=log,
                                              pass_fds=(writer,) if writer >= 0 else ())  # fmt: skip
    finally:
        if writer >= 0:
            os.close(writer)
    if reader >= 0:
        ok, failure = sandbox.read_status(reader)
        shutil.rmtree(place, ignore_errors=True)
        if not ok:  # this machine cannot give the sandbox: the next mode, as for the test runs
            sandbox.demote(workdir, mode, failure)
            return build_in(command, workspace=workspace, copy=copy, python=python, network=network,
                            timeout=timeout, hidden=hidden)  # fmt: skip
    shutil.rmtree(place, ignore_errors=True)
    return code, timed_out, cpu, log


def build_in_container(
    command: list[str], *, engine: str, image: str, repo_dir: str, copy: Path, workspace: Path, network: bool,
    timeout: float,
) -> tuple[int | None, bool, float, Path]:
    """The instance's build command in a container of ``image``, the pristine ``copy`` mounted
    writable at ``repo_dir``: :func:`build_in`'s answer."""
    from . import container

    log = workspace / "build.log"
    tools = workspace / "build-tools"
    tools.mkdir(exist_ok=True)
    name = f"objective-build-{os.getpid()}-{workspace.name[-8:]}"
    launch = container.run_command(engine, image, command, name=name, copy=copy, repo_dir=repo_dir, tools=tools,
                                   environ={}, network=network, record=None, preserve_fd=False)  # fmt: skip
    try:
        code, timed_out, _, cpu = run_process(launch, cwd=workspace, env=base_env(),
                                              timeout=min(timeout, BUILD_TIMEOUT), log=log)  # fmt: skip
    finally:
        container.remove(engine, name)
    return code, timed_out, cpu, log
