"""One pytest subprocess in the workspace: start it, bound it, read what it recorded.

The test process gets the recorder (and nothing else of ours), a scrubbed
environment, the copy's import roots first on its path, no network where
``unshare`` works, and a timeout that kills its whole process group.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Iterator, Mapping, Sequence

from . import protect
from .instances import Instance
from .outcomes import Collector
from .scorer import Grading, grade, no_verdict_reason
from .workspace import base_env, import_roots

__all__ = ["RunRecord", "assess", "isolation_prefix", "network_isolation", "pid_isolation", "run_process", "run_tests"]

RECORDER_MODULE: Final = "_objective_scoring_recorder"
OUTPUT_TAIL: Final = 4000
MAX_OUTPUT: Final = 64 << 20  # bytes of output a test run may write (pytest -q -rfE output is kilobytes)


@dataclass
class RunRecord:
    """One pytest subprocess: what it printed, how it ended, what it recorded."""

    command: list[str]
    label: str = "candidate"
    exit_code: int | None = None
    timed_out: bool = False
    wall_time: float = 0.0
    cpu: float = 0.0
    output_tail: str = ""
    collector: Collector = field(default_factory=Collector)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    session: dict[str, Any] | None = None
    forged: str | None = None  # why the record cannot be the recorder's (code of the graded copy wrote to it)
    signals: list[dict[str, str]] = field(default_factory=list)  # the audit hook's, in the order written
    writes: list[str] = field(default_factory=list)  # protected files the run added, changed or removed
    isolation: dict[str, Any] = field(default_factory=dict)
    copy_path: str = ""
    flooded: int | None = None  # bytes of output written when the run was killed for writing too much

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "command": self.command,
            "exit_code": self.exit_code,
            "pytest_exitstatus": None if self.session is None else self.session["exitstatus"],
            "record_forged": self.forged,
            "timed_out": self.timed_out,
            "wall_time": round(self.wall_time, 3),
            "cpu": round(self.cpu, 3),
            "output_tail": self.output_tail,
            "isolation": self.isolation,
        }


_NETWORK_PREFIX: list[str] | None = None


_PID_PREFIX: list[str] | None = None


def _probe(prefix: list[str]) -> bool:
    try:
        return subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def network_isolation() -> list[str]:
    """The command prefix that runs a process without network, or [] where unavailable."""
    global _NETWORK_PREFIX
    if _NETWORK_PREFIX is None:
        prefix = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--net", "--map-root-user"]
        _NETWORK_PREFIX = prefix if _probe(prefix) else []
    return _NETWORK_PREFIX


def pid_isolation() -> list[str]:
    """The prefix that runs a process as PID 1 of its own PID namespace, or [] where unavailable.

    When PID 1 of a namespace dies the kernel kills every process in it: a test run
    cannot leave a daemon behind, not even one that left the process group (``setsid``).
    """
    global _PID_PREFIX
    if _PID_PREFIX is None:
        prefix = ["unshare", "--pid", "--fork", "--mount-proc"]
        if os.geteuid() != 0:
            prefix.insert(1, "--map-root-user")
        _PID_PREFIX = prefix if _probe(prefix) else []
    return _PID_PREFIX


def isolation_prefix(network: bool) -> list[str]:
    """One ``unshare`` for every namespace this machine allows."""
    pid = pid_isolation()
    net = [] if network else network_isolation()
    if pid and net:
        return [*pid, "--net"]
    return pid or net


_LIVE_GROUPS: set[int] = set()
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


class Interrupted(BaseException):
    """The grading was stopped from outside (an interrupted batch): not a result, never recorded."""


def kill_all() -> int:
    """Stop every grading of this process: kill the test process groups still running and refuse
    to start new ones (a control run, a re-run) until :func:`allow_runs`. Returns how many were killed."""
    with _LIVE_LOCK:
        _STOPPING.set()
        groups = list(_LIVE_GROUPS)
    for group in groups:
        _kill_group(group)
    return len(groups)


def allow_runs() -> None:
    """Let test runs start again after :func:`kill_all`."""
    _STOPPING.clear()


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float, log: Path,
    stdin_data: bytes = b"", pass_fds: Sequence[int] = (), max_output: int | None = None,
    flood: dict[str, int] | None = None,
) -> tuple[int | None, bool, float, float]:
    """Run ``command`` in its own process group; kill the group at the timeout.

    Returns ``(exit_code, timed_out, wall_seconds, cpu_seconds)``; CPU time is
    the rusage of the child and every descendant it waited for. With ``max_output`` the output
    reaches ``log`` through a pipe and a command that writes more is killed then and there:
    ``flood["bytes"]`` says how much it wrote (the grader's disk never holds more than the limit).
    """
    started = time.perf_counter()
    reader, writer = os.pipe()  # ``stdin_data`` (a key, say): written whole before the start, then end of file
    try:
        os.write(writer, stdin_data)
    finally:
        os.close(writer)
    try:
        with _LIVE_LOCK, open(log, "wb") as out:
            if _STOPPING.is_set():
                raise Interrupted("the grading was stopped")
            proc = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=dict(env),
                stdin=reader,
                stdout=out if max_output is None else subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )
            _LIVE_GROUPS.add(proc.pid)
    finally:
        os.close(reader)
    copier = None
    if max_output is not None:
        copier = threading.Thread(target=_copy_capped, args=(proc, log, max_output, flood if flood is not None else {}),
                                  daemon=True)  # fmt: skip
        copier.start()
    waited: dict[str, Any] = {}

    def wait() -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        waited["status"] = status
        waited["cpu"] = usage.ru_utime + usage.ru_stime

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    try:
        waiter.join(timeout)
    except BaseException:  # Ctrl-C while waiting (the main thread): the test run must not outlive it
        _kill_group(proc.pid)
        deadline = time.monotonic() + 5  # the waiter reaps it (an interrupted join cannot be trusted to wait)
        while "status" not in waited and time.monotonic() < deadline:
            time.sleep(0.01)
        if "status" in waited:
            proc.returncode = os.waitstatus_to_exitcode(waited["status"])
        with _LIVE_LOCK:
            _LIVE_GROUPS.discard(proc.pid)
        raise
    timed_out = waiter.is_alive()
    if timed_out:
        _kill_group(proc.pid)
        waiter.join()
    _kill_group(proc.pid)  # anything the test run left behind in its group, even on success
    if copier is not None:
        copier.join(10)
    with _LIVE_LOCK:
        _LIVE_GROUPS.discard(proc.pid)
    code = os.waitstatus_to_exitcode(waited["status"])
    proc.returncode = code
    return (None if timed_out else code), timed_out, time.perf_counter() - started, float(waited["cpu"])


def _copy_capped(proc: subprocess.Popen[bytes], log: Path, limit: int, flood: dict[str, int]) -> None:
    """Copy ``proc``'s output to ``log`` up to ``limit`` bytes; past it, kill its group and say so."""
    assert proc.stdout is not None
    written = 0
    with open(log, "ab") as out:
        while True:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            if written + len(chunk) > limit:
                out.write(chunk[: max(0, limit - written)])
                flood["bytes"] = written + len(chunk)
                _kill_group(proc.pid)
                break
            out.write(chunk)
            written += len(chunk)
    proc.stdout.close()


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


def stage_tools(tools: Path) -> None:
    """The recorder and the boot module, the only code of ours the test process runs."""
    (tools / f"{RECORDER_MODULE}.py").write_text(_tool_source("recorder.py"), encoding="utf-8")
    (tools / f"{BOOT_MODULE}.py").write_text(_tool_source("boot.py"), encoding="utf-8")


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


@contextlib.contextmanager
def watching(descriptor: int, progress: Callable[[int], None] | None, every: float = 2.0) -> Iterator[None]:
    """While the body runs, call ``progress(tests finished)`` every ``every`` seconds, read from the
    record as the recorder appends to it (one teardown report a test); for the eye only, never for
    a verdict."""
    if progress is None:
        yield
        return
    stop = threading.Event()
    seen = {"offset": 0, "tests": 0}

    def poll() -> None:
        while not stop.wait(every):
            while True:
                chunk = os.pread(descriptor, 1 << 20, seen["offset"])
                if not chunk:
                    break
                seen["offset"] += len(chunk)
                seen["tests"] += chunk.count(b'teardown"')
            try:
                progress(seen["tests"])
            except Exception:  # noqa: BLE001 - a progress line must never break a grading
                return

    thread = threading.Thread(target=poll, name="objective-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def pytest_command(python: str, boot: str, rootdir: str, confcutdir: str, config: str | None,
                   test_files: Sequence[str]) -> list[str]:  # fmt: skip
    """The test process's command line, the same on this machine and in a container (paths as the
    process sees them): the interpreter isolated through the boot module, the recorder, pytest's
    configuration file, rootdir and conftest cut-off pinned inside the copy, and ``--maxfail=0``
    after the repository's addopts (a configured ``-x`` must not stop before every listed test ran)."""
    return [python, "-I", "-S", "-B", boot, "-p", RECORDER_MODULE, "-p", "no:cacheprovider", "-p", "no:objective_scoring",
            "-q", "-rfE", "--maxfail=0", "--rootdir", rootdir, "--confcutdir", confcutdir,
            *(["-c", config] if config is not None else []), *test_files]  # fmt: skip


def _run_dir(workspace: Path, label: str) -> Path:
    place = workspace / "runs" / label
    fresh(place)
    place.mkdir(parents=True)
    return place


def run_tests(**arguments: Any) -> RunRecord:
    """Run pytest on ``test_files`` over the pristine ``copy`` and collect the recorder's facts
    (:func:`run_in`), in the best sandbox this machine gives (:func:`.sandbox.probe`): when the
    launcher says it could not build its root, the next mode is tried."""
    from . import sandbox

    workdir = str(Path(arguments["workspace"]).parent)
    while True:
        mode, why = sandbox.probe(workdir)
        try:
            return run_in(mode, why, **arguments)
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
) -> RunRecord:
    """Run pytest on ``test_files`` over the pristine ``copy`` and collect the recorder's facts.

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
    from . import sandbox

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
    config = config_file(run_copy, test_files)
    command = pytest_command(python, str(tools / f"{BOOT_MODULE}.py"), str(run_copy),
                             str(config.parent if config is not None else run_copy),
                             str(config) if config is not None else None, test_files)  # fmt: skip
    log = workspace / f"{label}.log"
    fresh(log)
    launch, isolation, status = confined(
        command, mode=mode, why=why, place=place, cwd=copy, network=network, python=python,
        writable=[(home, home), (tmp, tmp)] + ([] if mode != "namespaces-copy" else [(place / "repo", copy)]),
        overlay=(copy, copy) if mode == "namespaces" else None, read_only=[tools], hidden=[original, *hidden],
    )  # fmt: skip
    status_reader, status_writer = status
    if mode == "none":
        launch = [*isolation_prefix(network), *command]
    before = protect.snapshot(copy, guarded) if mode != "namespaces" else {}
    flood: dict[str, int] = {}
    try:
        with watching(descriptor, progress):
            code, timed_out, wall, cpu = run_process(
                launch, cwd=run_copy if mode == "none" else Path("/"), env=environ, timeout=timeout, log=log,
                stdin_data=(key + "\n").encode("ascii"),
                pass_fds=(writer,) if status_writer < 0 else (writer, status_writer), max_output=max_output, flood=flood,
            )  # fmt: skip
        text = read_bounded(descriptor)
    finally:
        os.close(writer)
        os.close(descriptor)
        if status_writer >= 0:
            os.close(status_writer)
    if status_reader >= 0:
        ok, failure = sandbox.read_status(status_reader)
        if not ok:
            raise SandboxFailure(failure)
    run = RunRecord(command=command, label=label, exit_code=code, timed_out=timed_out, wall_time=wall, cpu=cpu)
    run.isolation = isolation
    run.flooded = flood.get("bytes")
    run.output_tail = read_tail(log, OUTPUT_TAIL)
    run.collector, run.collect_errors, run.session = parse_records(text, key, run.signals)
    if run.session is not None and run.session.get("forged"):
        run.forged, run.session = run.session["forged"], None
    if mode == "namespaces":
        run.writes = upper_changes(place / "upper", copy, guarded)
    else:
        run.writes = protect.snapshot_changes(before, protect.snapshot(place / "repo", guarded))
    run.copy_path = str(run_copy.resolve())
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
) -> RunRecord:
    """Run pytest on ``test_files`` in a fresh container of ``image`` (:mod:`.container`): a fresh copy
    of the pristine ``copy`` mounted at ``repo_dir``, the interpreter ``python`` of the image started
    isolated through the boot module, the record's key on standard input and the record this
    machine's descriptor. ``copy`` is never touched; what the run wrote is read from its own copy."""
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
    config = config_file(copy, test_files)
    command = pytest_command(python, f"{container.C_TOOLS}/{BOOT_MODULE}.py", repo_dir,
                             container.container_path(repo_dir, copy, config.parent if config is not None else copy),
                             container.container_path(repo_dir, copy, config) if config is not None else None,
                             test_files)  # fmt: skip
    box = f"objective-run-{label}-{os.getpid()}-{record_key()[:10]}"
    launch = container.run_command(engine, image, command, name=box, copy=run_copy, repo_dir=repo_dir, tools=tools,
                                   environ=environ, network=network, record=record_folder)  # fmt: skip
    log = workspace / f"{label}.log"
    fresh(log)
    before = protect.snapshot(copy, guarded)
    flood: dict[str, int] = {}
    try:
        with watching(descriptor, progress):  # podman writes the record here as it runs (docker: at the end)
            code, timed_out, wall, cpu = run_process(
                container.as_descriptor_3(writer, launch) if engine == "podman" else launch, cwd=workspace,
                env=base_env(), timeout=timeout, log=log, stdin_data=(key + "\n").encode("ascii"), pass_fds=(writer,),
                max_output=max_output, flood=flood,
            )  # fmt: skip
        text = read_bounded(descriptor)
    finally:
        container.remove(engine, box)
        os.close(writer)
        os.close(descriptor)
    if record_folder is not None:
        collector, errors, session = read_records(record_folder / "record.jsonl", key)
    run = RunRecord(command=command, label=label, exit_code=code, timed_out=timed_out, wall_time=wall, cpu=cpu)
    run.isolation = {"mode": "container", "engine": engine, "image": image,
                     "network": "allowed" if network else "none"}  # fmt: skip
    run.flooded = flood.get("bytes")
    run.output_tail = read_tail(log, OUTPUT_TAIL)
    if record_folder is None:
        run.collector, run.collect_errors, run.session = parse_records(text, key, run.signals)
    else:
        run.collector, run.collect_errors, run.session = collector, errors, session
    if run.session is not None and run.session.get("forged"):
        run.forged, run.session = run.session["forged"], None
    run.writes = protect.snapshot_changes(before, protect.snapshot(run_copy, guarded))
    run.copy_path = repo_dir
    fresh(place)
    return run


def confined(
    command: Sequence[str], *, mode: str, why: str, place: Path, cwd: Path, network: bool, python: str,
    writable: Sequence[tuple[Path, Path]] = (), overlay: tuple[Path, Path] | None = None,
    read_only: Sequence[Path] = (), hidden: Sequence[Path] = (),
) -> tuple[list[str], dict[str, Any], tuple[int, int]]:
    """The command line that runs ``command`` in a root of its own (:mod:`.sandbox`), what the
    envelope says of it, and its status pipe ``(reader, writer)`` (``(-1, -1)`` in mode ``none``,
    where ``command`` is returned as it is). ``overlay`` is ``(pristine, target)``: ``target`` shows
    ``pristine`` writable, its writes kept in ``place``'s upper layer. ``writable`` binds
    ``(source, target)`` read-write; ``read_only`` and the interpreter's folders are bound read-only;
    ``hidden`` paths (and ``place``'s parent, the workspaces) are never shown."""
    from . import sandbox

    if mode == "none":
        return list(command), {"mode": "none", "detail": why}, (-1, -1)
    reader, writer = os.pipe()
    (place / "root").mkdir()
    workspaces = place.parents[2] if len(place.parents) > 2 else place.parent
    spec: dict[str, Any] = {
        "root": str(place / "root"), "status_fd": writer, "cwd": str(cwd), "network": network, "grader": os.getpid(),
        "command": list(command), "home": str(writable[0][1]) if writable else "/",
        "read_only": sandbox.visible(sandbox.interpreter_folders(python), [*hidden, workspaces]),
        "masked": [str(h) for h in hidden],
        "writable": [[str(a), str(b)] for a, b in writable],
        "late_read_only": [str(p) for p in read_only],
    }  # fmt: skip
    if overlay is not None:
        for layer in ("upper", "work"):
            (place / layer).mkdir()
        spec["overlay"] = {"lower": str(overlay[0]), "upper": str(place / "upper"), "work": str(place / "work"),
                           "target": str(overlay[1])}  # fmt: skip
    isolation = {"mode": "namespaces", "copy": "overlay" if overlay is not None else "fresh copy",
                 "network": "allowed" if network else "loopback only"}  # fmt: skip
    return sandbox.launcher(spec), isolation, (reader, writer)


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
    for directory, dirnames, filenames in os.walk(upper):
        rel_dir = os.path.relpath(directory, upper)
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *dirnames]:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                continue
            if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                kind = "removed"
            else:
                kind = "changed" if (lower / rel).exists() or (lower / rel).is_symlink() else "added"
            if judged_path(rel, guarded):
                changes.append(f"{kind} {rel}")
    return sorted(changes)


RECORD_LIMIT: Final = 256 * 1024 * 1024


def fresh(path: Path) -> None:
    """Remove whatever is at ``path`` (a file, a folder, a link, a FIFO), never following a link;
    folders a run left unreadable (an overlay's work folder, a test's chmod 000) are opened first."""

    def unlock(function: Any, name: str, _: Any) -> None:
        parent = os.path.dirname(name)
        for place in (parent, name):
            if os.path.isdir(place) and not os.path.islink(place):
                os.chmod(place, 0o700)
        if os.path.isdir(name) and not os.path.islink(name):
            shutil.rmtree(name, ignore_errors=True)
        else:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass

    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, onerror=unlock)
    except FileNotFoundError:
        pass


def read_bounded(descriptor: int, limit: int = RECORD_LIMIT) -> str:
    """What the test process wrote to the record, read through the grader's own descriptor."""
    chunks, size, offset = [], 0, 0
    while size < limit:
        chunk = os.pread(descriptor, min(1 << 20, limit - size), offset)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        offset += len(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def read_tail(path: Path, size: int) -> str:
    """The last ``size`` characters of a log the test process could have replaced: a regular file
    only (never a FIFO, a folder or a link), read without blocking."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return f"<the log could not be read: {exc}>"
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return "<the log was replaced by something that is not a file>"
        start = max(0, info.st_size - size * 4)
        return os.pread(descriptor, size * 4, start).decode("utf-8", "replace")[-size:]
    finally:
        os.close(descriptor)


def record_key() -> str:
    """A fresh key for one test run's record (the recorder signs every line with it)."""
    import secrets

    return secrets.token_hex(32)


def read_records(record_file: Path, key: str) -> tuple[Collector, list[tuple[str, str]], dict[str, Any] | None]:
    """:func:`parse_records` of a record file (a regular file only, read without blocking and
    bounded: anything else is a forged record)."""
    if not record_file.exists() and not record_file.is_symlink():
        return Collector(), [], None
    try:
        descriptor = os.open(record_file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return Collector(), [], {"forged": f"the record file cannot be read as a file ({exc.strerror})"}
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return Collector(), [], {"forged": "the record file was replaced by something that is not a file"}
        text = read_bounded(descriptor)
    finally:
        os.close(descriptor)
    return parse_records(text, key)


def parse_records(text: str, key: str, signals: list[dict[str, str]] | None = None,
                  ) -> tuple[Collector, list[tuple[str, str]], dict[str, Any] | None]:
    """What the recorder wrote: every test's phase facts, the collection errors, and the session
    (its last word). Every line must carry the recorder's signature under ``key`` and the next
    sequence number, and nothing may follow the session; else the session is ``{"forged": why}``:
    code of the graded copy wrote to the record (only a last line cut short by a kill is forgiven)."""
    collector = Collector()
    errors: list[tuple[str, str]] = []
    session = None
    lines = text.split("\n")
    expected = 0
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        if session is not None:
            return collector, errors, {"forged": f"record line {number + 1} was written after the session ended"}
        mac, _, body = line.partition(" ")
        good = hmac.new(key.encode("ascii"), body.encode("utf-8"), hashlib.sha256).hexdigest()
        try:
            item = json.loads(body)
        except json.JSONDecodeError:
            item = None
        if item is None or not isinstance(item, dict) or not hmac.compare_digest(mac.encode(), good.encode()):
            if number == len(lines) - 1 and not text.endswith("\n"):
                break  # a line cut short by a kill
            return collector, errors, {"forged": f"record line {number + 1} does not carry the recorder's signature"}
        if item.pop("seq", None) != expected:
            return collector, errors, {"forged": f"record line {number + 1} is out of sequence (replayed or removed lines)"}
        expected += 1
        kind = item.pop("type", None)
        if kind == "test":
            collector.add(item)
        elif kind == "collect_error":
            errors.append((item["nodeid"], item["message"]))
        elif kind == "session":
            session = item
        elif kind == "signal" and signals is not None:
            signals.append({"kind": str(item.get("kind")), "detail": str(item.get("detail"))})
    return collector, errors, session


def assess(run: RunRecord, instance: Instance, compat: str, copy: Path, timeout: float) -> tuple[Grading, str | None, str]:
    """Grade a run and say why it is no verdict, with the failure class it would be."""
    records = run.collector.records
    grading = grade(instance, records, compat)
    if run.timed_out:
        return grading, f"the test run timed out after {timeout:g}s", "verifier"
    if run.flooded is not None:
        return grading, (f"the test run wrote more output than the limit allows ({run.flooded} bytes and more; "
                         "--max-output): it was stopped"), "verifier"  # fmt: skip
    if run.forged is not None:
        return grading, (f"the record of the test run was written by something other than the recorder "
                         f"({run.forged}): code of the graded copy tampered with its verdict"), "verifier"  # fmt: skip
    if run.session is None:
        if "No module named pytest" in run.output_tail or "No module named 'pytest'" in run.output_tail:
            return grading, f"pytest is not installed for {run.command[0]}", "setup"
        return grading, f"the test run died before its session finished (exit code {run.exit_code})", "verifier"
    root = Path(run.copy_path).resolve() if run.copy_path else copy.resolve()
    stale = {
        name: origin
        for name, origin in (run.session.get("module_origins") or {}).items()
        if origin and not Path(origin).is_relative_to(root)
    }
    stale.update(run.session.get("foreign_modules") or {})
    if stale:
        name, origin = next(iter(stale.items()))
        return grading, (
            f"the tests imported {name} from {origin}, not from the graded copy: another copy of the "
            "project (an editable install of the original checkout?) shadows it on that interpreter's path"
        ), "setup"
    reason = no_verdict_reason(
        exitstatus=run.session["exitstatus"],
        collect_errors=run.collect_errors,
        stopped_early=bool(run.session.get("shouldfail") or run.session.get("shouldstop")),
        grading=grading,
        records=records,
    )
    return grading, reason, "verifier"
