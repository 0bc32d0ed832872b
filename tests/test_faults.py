"""Fault injection (issue 28): full disks, named pipes, link loops, signals, closed pipes and inputs
that used to give a traceback, a hang or a silently wrong result. Each says one line and ends with
the status a user (or a shell) expects, and never loses a verdict that was reached."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from pytest_objective_scoring import atomic

from .conftest import FIXTURES, ROOT
from .runner_helpers import make_patch, run_cli, run_cli_here

REPO = FIXTURES / "repos" / "intervals"
INSTANCE = FIXTURES / "instances" / "intervals.json"
GOLD = FIXTURES / "patches" / "intervals" / "gold.diff"
GRADE = ("grade", "--repo", str(REPO), "--instance", str(INSTANCE))


@contextlib.contextmanager
def tmpfs(place: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``place`` (made here), unmounted after (root only: skipped else)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs this as root; /dev/full covers the in-place writer)")
    place.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(place)], check=True)
    try:
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a tmpfs with no space left (a real ENOSPC at the first block written)."""
    with tmpfs(tmp_path / "full", "16k") as place:
        with open(place / "filler", "wb") as handle:
            try:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
            except OSError:
                pass
        yield place


def _no_partial(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["filler"], "no 0-byte, partial or temporary file is left"


# ---------------------------------------------------------------- full disks


def test_grade_on_a_full_disk_prints_the_verdict_it_could_not_write(full_disk):
    result = run_cli(*GRADE, "--patch", str(GOLD), "--no-ledger", "--out", str(full_disk / "score.json"))
    assert result.returncode == 3, result.stderr
    assert f"--out {full_disk / 'score.json'}: NOT written (No space left on device); it follows on standard output" \
        in result.stderr
    envelope = json.loads(result.stdout[: result.stdout.index("\n}\n") + 2])
    assert envelope["score"]["resolved"] == "resolved"
    _no_partial(full_disk)


def test_grade_json_on_a_full_disk_prints_the_envelope_once(full_disk):
    result = run_cli(*GRADE, "--patch", str(GOLD), "--no-ledger", "--json", "--out", str(full_disk / "s.json"),
                     "--receipt", str(full_disk / "r.json"))  # fmt: skip
    assert result.returncode == 3
    assert "--out" in result.stderr and "--receipt" in result.stderr and "Traceback" not in result.stderr
    receipt_end = result.stdout.index("\n}\n") + 3  # the receipt that could not be written comes first
    assert json.loads(result.stdout[receipt_end:])["score"]["resolved"] == "resolved"
    _no_partial(full_disk)


def test_the_in_place_writer_on_a_device_that_is_full_keeps_the_verdict():
    """/dev/full: every write is ENOSPC (no root needed): the verdict is printed, exit 3."""
    result = run_cli(*GRADE, "--patch", str(GOLD), "--no-ledger", "--out", "/dev/full")
    assert result.returncode == 3 and "NOT written (No space left on device)" in result.stderr
    assert '"resolved": "resolved"' in result.stdout


def test_ledger_export_and_receipt_on_a_full_disk_are_one_line_exit_3(tmp_path, full_disk):
    ledger = tmp_path / "l.sqlite"
    assert run_cli(*GRADE, "--patch", str(GOLD), "--ledger", str(ledger)).returncode == 0
    exported = run_cli_here("ledger", "export", "--ledger", str(ledger), "--out", str(full_disk / "x.jsonl"))
    assert exported.returncode == 3 and exported.stderr.count("\n") == 1 and "No space left" in exported.stderr
    receipt = run_cli_here("receipt", "1", "--ledger", str(ledger), "--out", str(full_disk / "r.json"))
    assert receipt.returncode == 3 and json.loads(receipt.stdout)["run"]["resolved"] == "resolved"
    _no_partial(full_disk)


def test_a_batch_on_a_full_disk_loses_no_result_and_leaves_no_empty_run_report(tmp_path, full_disk):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"instance_id": "fixtures__intervals-1", "model_name_or_path": "m",
                                       "model_patch": GOLD.read_text()}) + "\n")  # fmt: skip
    ledger = tmp_path / "l.sqlite"
    args = ("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions", str(predictions),
            "--repos", str(FIXTURES / "repos"), "--ledger", str(ledger), "--log-dir", str(tmp_path / "logs"),
            "--run-id", "r1", "--report", str(full_disk / "report.json"), "--json")  # fmt: skip
    result = run_cli(*args)
    assert result.returncode == 3, result.stderr
    assert "NOT written (No space left on device)" in result.stderr and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["summary"]["m"]["resolved"] == 1  # the report, printed
    _no_partial(full_disk)
    again = run_cli(*args[:-3], "--report", str(tmp_path / "report.json"))  # the same run id, resumed elsewhere
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "m.r1.json").stat().st_size > 0


def test_a_log_tree_on_a_full_disk_leaves_no_empty_file_and_its_run_id_resumes(tmp_path):
    """SWE-bench's log tree on a disk that fills: no 0-byte envelope.json (it held the run id against
    the same command run again: "holds another grading")."""
    with tmpfs(tmp_path / "small", "64k") as place:
        predictions = tmp_path / "p.jsonl"
        predictions.write_text(json.dumps({"instance_id": "fixtures__intervals-1", "model_name_or_path": "m",
                                           "model_patch": GOLD.read_text()}) + "\n")  # fmt: skip
        with open(place / "filler", "wb") as handle:  # every block taken: the folders fit, their files do not
            try:
                handle.write(b"\0" * (1 << 20))
            except OSError:
                pass
        args = ("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions",
                str(predictions), "--repos", str(FIXTURES / "repos"), "--ledger", str(tmp_path / "l.sqlite"),
                "--log-dir", str(place / "logs"), "--run-id", "f3")  # fmt: skip
        first = run_cli(*args)
        assert "Traceback" not in first.stderr
        assert not [p for p in (place / "logs").rglob("*") if p.is_file() and p.stat().st_size == 0], "no 0-byte file"
        (place / "filler").unlink()
        again = run_cli(*args)
        assert again.returncode == 0, again.stderr
        assert list((place / "logs").rglob("envelope.json")) or list((place / "logs").rglob("ledger_entry.json"))


def test_harbor_run_on_a_full_disk_prints_its_result(full_disk):
    result = run_cli("harbor", "run", str(FIXTURES / "harbor" / "fix-csv-total"), "--solution", "--out",
                     str(full_disk / "out"))  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "NOT written (No space left on device); it follows on standard output" in result.stderr
    assert json.loads(result.stdout)["kind"] == "harbor" and "Traceback" not in result.stderr
    assert [p.name for p in (full_disk / "out").iterdir()] == [], "no 0-byte reward or result file"


def test_atomic_writes_leave_the_previous_version_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "score.json"
    target.write_text("before")

    def fail(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "write", fail)
    with pytest.raises(OSError):
        atomic.write_whole(target, "after")
    assert target.read_text() == "before" and sorted(p.name for p in tmp_path.iterdir()) == ["score.json"]
    with pytest.raises(OSError):
        atomic.write_new(tmp_path / "new.json", "x")
    assert not (tmp_path / "new.json").exists()


def test_write_new_never_replaces_a_file(tmp_path):
    (tmp_path / "r.json").write_text("mine")
    with pytest.raises(FileExistsError):
        atomic.write_new(tmp_path / "r.json", "theirs")
    assert (tmp_path / "r.json").read_text() == "mine" and len(list(tmp_path.iterdir())) == 1


# ---------------------------------------------------------------- named pipes


def _bounded(args, timeout=60, **kwargs):
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args], capture_output=True, text=True,
                          timeout=timeout, **kwargs)  # fmt: skip


def test_a_named_pipe_nobody_writes_to_is_refused_at_once(tmp_path):
    fifo = tmp_path / "p.diff"
    os.mkfifo(fifo)
    started = time.monotonic()
    as_patch = _bounded([*GRADE, "--patch", str(fifo), "--no-ledger"])
    assert as_patch.returncode == 2 and "a named pipe nobody writes to" in as_patch.stderr
    as_instance = _bounded(["grade", "--repo", str(REPO), "--instance", str(fifo), "--patch", str(GOLD), "--no-ledger"])
    assert as_instance.returncode == 2 and "a named pipe nobody writes to" in as_instance.stderr
    assert time.monotonic() - started < 50


def test_a_pipe_with_its_writer_is_read_as_process_substitution_gives_it(tmp_path):
    """``--patch <(git diff)``: the shell hands a /dev/fd path to a pipe whose writer is running."""
    reader, writer = os.pipe()
    data = GOLD.read_bytes()

    def feed():
        time.sleep(0.5)  # the writer is slow: the reader waits for it, never taking an early end
        os.write(writer, data)
        os.close(writer)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        result = _bounded([*GRADE, "--patch", f"/dev/fd/{reader}", "--no-ledger"], pass_fds=(reader,))
    finally:
        feeder.join()
        os.close(reader)
    assert result.returncode == 0, result.stderr


def test_the_plugins_output_pipe_without_a_reader_is_said_and_the_envelope_printed(pytester, write_instance,
                                                                                   monkeypatch):  # fmt: skip
    monkeypatch.setattr(atomic, "READER_WAIT", 0.3)
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    fifo = pytester.path / "out.json"
    os.mkfifo(fifo)
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          f"--objective-score-out={fifo}", "--objective-no-ledger")  # fmt: skip
    assert result.ret == 6  # the envelope is printed, not where it was asked: no verdict
    result.stdout.fnmatch_lines(["score: NOT written to *out.json: a named pipe nobody reads*",
                                 '*"resolved": "resolved"*'])  # fmt: skip


def test_an_output_pipe_with_a_reader_gets_the_envelope(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = run_cli(*GRADE, "--patch", str(GOLD), "--no-ledger", "--out", str(fifo))
    reader.join(timeout=30)
    assert result.returncode == 0 and json.loads(received[0])["score"]["resolved"] == "resolved"


# ---------------------------------------------------------------- link loops and folders


def test_link_loops_are_one_line_exit_2(tmp_path, pytester):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for args, said in (((*GRADE[:1], "--repo", str(loop), "--instance", str(INSTANCE), "--patch", str(GOLD)),
                        f"--repo {loop}: a symbolic link loop"),
                       (("grade", "--repo", str(REPO), "--instance", str(loop), "--patch", str(GOLD), "--no-ledger"),
                        "a symbolic link loop"),
                       (("harbor", "run", str(loop), "--solution"), f"{loop}: a symbolic link loop")):  # fmt: skip
        result = run_cli_here(*args)
        assert result.returncode == 2 and said in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    plugin = pytester.runpytest_inprocess(f"--objective-score={loop}")
    assert plugin.ret == pytest.ExitCode.USAGE_ERROR
    plugin.stderr.fnmatch_lines(["*--objective-score: *loop*a symbolic link loop*"])


def test_a_devices_as_inputs_are_refused(tmp_path):
    result = run_cli_here(*GRADE, "--patch", "/dev/zero", "--no-ledger")
    assert result.returncode == 2 and "--patch /dev/zero: a device, not a file" in result.stderr


# ---------------------------------------------------------------- signals and closed pipes


def _hanging_patch(tmp_path: Path) -> Path:
    source = (REPO / "src" / "intervals" / "interval.py").read_text()
    patch = tmp_path / "hang.diff"
    patch.write_text(make_patch(REPO, {"src/intervals/interval.py": source + "\nimport time\ntime.sleep(600)\n"},
                                tmp_path))  # fmt: skip
    return patch


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_grade_with_a_word_its_status_and_nothing_left(tmp_path, signum, status):
    workdir = tmp_path / "work"
    workdir.mkdir()
    default_sigint = ("import signal, sys, runpy; signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "sys.argv = ['objective-score', *sys.argv[1:]]; runpy.run_module('pytest_objective_scoring', "
                      "run_name='__main__')")  # fmt: skip
    command = [sys.executable, "-c", default_sigint, *GRADE, "--patch", str(_hanging_patch(tmp_path)), "--no-ledger"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "TMPDIR": str(workdir)})  # the workspaces are made there
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any((workdir).glob("objective-score-*/runs/*")):
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == status, err
    assert err.strip().endswith("interrupted" + (" (SIGTERM)" if signum == signal.SIGTERM else "")), err
    assert "Traceback" not in err
    assert list(workdir.iterdir()) == [], "the workspace is removed"
    leftover = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True).stdout.split()
    assert leftover == [], "no test process outlives the grading"


@pytest.mark.parametrize("args", [("ledger", "show"), ("costs",), ("scorecard", "1"), ("--help",), ("grade", "--help")],
                         ids=["ledger-show", "costs", "scorecard", "help", "grade-help"])  # fmt: skip
def test_table_output_into_a_closed_pipe_is_a_quiet_141(tmp_path, args):
    ledger = tmp_path / "l.sqlite"
    assert run_cli_here(*GRADE, "--patch", str(GOLD), "--ledger", str(ledger)).returncode == 0
    extra = () if "--help" in args else ("--ledger", str(ledger))
    process = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", *args, *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (141, b"")


# ---------------------------------------------------------------- silent wrong results


def test_contradictions_and_misspellings_are_refused(tmp_path):
    both = run_cli_here(*GRADE, "--patch", str(GOLD), "--no-ledger", "--ledger", str(tmp_path / "l.sqlite"))
    assert both.returncode == 2 and "--no-ledger and --ledger" in both.stderr and "contradict" in both.stderr
    unknown = run_cli_here("grade", "--instnace", str(INSTANCE))
    assert unknown.returncode == 2 and "unrecognized arguments: --instnace" in unknown.stderr
    assert "required" not in unknown.stderr


@pytest.mark.parametrize("which", ["ledger", "patch", "other-output"])
def test_an_output_never_overwrites_an_input_or_another_output(tmp_path, which):
    """``--out`` naming the ledger replaced every row with the envelope (exit 0); naming the patch,
    the patch; two outputs on one file lost the first. Refused before work, nothing changed."""
    ledger = tmp_path / "l.sqlite"
    assert run_cli_here(*GRADE, "--patch", str(GOLD), "--ledger", str(ledger)).returncode == 0
    before = ledger.read_bytes()
    patch = tmp_path / "p.diff"
    patch.write_bytes(GOLD.read_bytes())
    out = {"ledger": ledger, "patch": patch, "other-output": tmp_path / "r.json"}[which]
    result = run_cli_here(*GRADE, "--patch", str(patch), "--ledger", str(ledger), "--out", str(out),
                          "--receipt", str(tmp_path / "r.json"))  # fmt: skip
    assert result.returncode == 2 and "names the same file as" in result.stderr, result.stderr
    assert ledger.read_bytes() == before and patch.read_bytes() == GOLD.read_bytes()
    exported = run_cli_here("ledger", "export", "--ledger", str(ledger), "--out", str(ledger))
    assert exported.returncode == 2 and ledger.read_bytes() == before


def test_a_ledger_that_is_a_pipe_and_an_input_that_is_a_device_are_refused_at_once(tmp_path):
    fifo = tmp_path / "l.sqlite"
    os.mkfifo(fifo)
    hung = _bounded([*GRADE, "--patch", str(GOLD), "--ledger", str(fifo)], timeout=60)
    assert hung.returncode == 2 and "not a plain file" in hung.stderr
    zero = run_cli_here("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--repos",
                        str(FIXTURES / "repos"), "--predictions", "/dev/zero", "--ledger", str(tmp_path / "x.sqlite"))
    assert zero.returncode == 2 and "--predictions /dev/zero: a device, not a file" in zero.stderr


def test_an_interpreter_that_is_not_python_is_bad_input():
    result = run_cli_here(*GRADE, "--patch", str(GOLD), "--no-ledger", "--python", "/bin/false")
    assert result.returncode == 2 and "--python /bin/false: does not run as a Python interpreter" in result.stderr
    assert result.stdout == ""


def test_an_old_empty_file_is_never_turned_into_a_ledger(tmp_path):
    empty = tmp_path / "l.sqlite"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 3600, time.time() - 3600))
    result = run_cli_here(*GRADE, "--patch", str(GOLD), "--ledger", str(empty))
    assert result.returncode == 2 and "an empty file, not a ledger" in result.stderr
    assert empty.read_bytes() == b""


def test_reading_commands_refuse_what_is_not_there(tmp_path):
    ledger = tmp_path / "l.sqlite"
    assert run_cli_here(*GRADE, "--patch", str(GOLD), "--ledger", str(ledger)).returncode == 0
    bogus = run_cli_here("ledger", "show", "--kind", "bogus", "--ledger", str(ledger))
    assert bogus.returncode == 2 and "--kind bogus: no such kind of entry (this ledger holds cost, score, scorecard" \
        in bogus.stderr
    assert run_cli_here("ledger", "show", "--kind", "harbor", "--ledger", str(ledger)).returncode == 0  # known, none yet
    missing = run_cli_here("sets", "list", "--ledger", str(tmp_path / "nope.sqlite"))
    assert missing.returncode == 2 and "no such ledger" in missing.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root, to run as another user a Python it can execute (/usr/bin/python3)")
@pytest.mark.parametrize("command", [("ledger", "show"), ("grade", "--repo", str(REPO), "--instance", str(INSTANCE),
                                                          "--patch", str(GOLD))], ids=["reader", "writer"])  # fmt: skip
def test_a_ledger_in_a_folder_that_cannot_be_entered_is_one_line(tmp_path, command):
    """A grader that is not root, given a ledger in a folder it cannot enter: one line, exit 2 (a
    PermissionError traceback before). Run as ``nobody`` with the system's Python (the command fails
    before anything needs a dependency it lacks)."""
    place = Path(tempfile.mkdtemp(prefix="objective-locked-"))  # a folder nobody can reach the path of
    locked = place / "locked"
    locked.mkdir(mode=0o000)
    os.chmod(place, 0o755)
    shutil.copytree(ROOT / "pytest_objective_scoring", place / "code" / "pytest_objective_scoring",
                    ignore=shutil.ignore_patterns("__pycache__"))  # the checkout may be out of nobody's reach (CI's
    subprocess.run(["chmod", "-R", "a+rX", str(place / "code")], check=True)  # copy under a 0700 temp folder)
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from pytest_objective_scoring.cli import main; "
              "sys.exit(main(sys.argv[2:]))")
    try:
        result = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c", script, str(place / "code"),
                                 *command, "--ledger", str(locked / "l.sqlite")], capture_output=True, text=True,
                                cwd="/", timeout=120)  # fmt: skip
    finally:
        os.chmod(locked, 0o755)
        shutil.rmtree(place)
    assert result.returncode == 2, result.stderr
    assert "permission denied" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_every_kind_the_package_writes_is_known_to_ledger_show():
    """``ledger show --kind`` refuses a kind outside KNOWN_KINDS that the ledger lacks: every kind a
    module appends (a literal, or a ``*KIND`` constant) must be in it."""
    from pytest_objective_scoring.ledger import KNOWN_KINDS

    written: set[str] = set()
    for path in (ROOT / "pytest_objective_scoring").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ledger":
                written.add(node.args[0].value)
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id.endswith("KIND") and isinstance(node.value, ast.Constant):
                written.add(node.value.value)
    assert {"harbor", "audit", "set", "samples_run", "batch"} <= written
    assert written <= KNOWN_KINDS, sorted(written - KNOWN_KINDS)


# ---------------------------------------------------------------- the plugin's environment variables


def test_the_plugin_reads_its_output_gate_and_ledger_from_the_environment(pytester, write_instance, monkeypatch):
    pytester.makepyfile(test_a="def test_a():\n    assert False\n")
    out, ledger = pytester.path / "env-out.json", pytester.path / "env.sqlite"
    monkeypatch.setenv("PYTEST_OBJECTIVE_SCORE_OUT", str(out))
    monkeypatch.setenv("PYTEST_OBJECTIVE_GATE", "yes")
    monkeypatch.setenv("PYTEST_OBJECTIVE_LEDGER", str(ledger))
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}")
    assert result.ret == 1  # the gate: not resolved
    assert json.loads(out.read_text())["score"]["resolved"] == "not_resolved" and ledger.exists()
    monkeypatch.setenv("PYTEST_OBJECTIVE_GATE", "maybe")
    refused = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*$PYTEST_OBJECTIVE_GATE='maybe': expected 1/0, true/false, yes/no or on/off*"])


def test_the_cli_reads_its_ledger_from_the_environment(tmp_path, monkeypatch):
    ledger = tmp_path / "env.sqlite"
    monkeypatch.setenv("OBJECTIVE_SCORE_LEDGER", str(ledger))
    assert run_cli_here(*GRADE, "--patch", str(GOLD)).returncode == 0
    shown = run_cli_here("ledger", "show", "--json")
    assert [row["instance_id"] for row in json.loads(shown.stdout)] == ["fixtures__intervals-1"]


def test_swebench_spellings_of_grade_batch_options_are_accepted(tmp_path):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"instance_id": "fixtures__intervals-1", "model_name_or_path": "m",
                                       "model_patch": GOLD.read_text()}) + "\n")  # fmt: skip
    result = run_cli("grade-batch", "--dataset_name", str(FIXTURES / "datasets" / "fixtures.jsonl"),
                     "--predictions_path", str(predictions), "--max_workers", "1", "--run_id", "swe",
                     "--instance_ids", "fixtures__intervals-1", "--report_dir", str(tmp_path / "reports"),
                     "--repos", str(FIXTURES / "repos"), "--ledger", str(tmp_path / "l.sqlite"),
                     "--log-dir", str(tmp_path / "logs"), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["m.swe.json", "objective-score.swe.json"]
    assert json.loads((tmp_path / "reports" / "m.swe.json").read_text())["resolved_ids"] == ["fixtures__intervals-1"]
