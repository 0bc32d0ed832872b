"""Fault injection (issue 28, red team): grade-samples' ledger rows, fork bombs and piped inputs.

Each sample's ledger rows are appended as its result comes (they were appended only when the run
ended: an interrupted run lost them all), and a resumed run never writes a sample's rows twice; a
sample that fork-bombs is that sample's failure, bounded by a pids cgroup or RLIMIT_NPROC (it could
fill the machine's process table); ``--samples <(cat samples.jsonl)`` is read (it failed, read
twice), and a named pipe nobody writes to (it hung) or a device is refused in one line, exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import atomic, cli, ledger, samples
from pytest_objective_scoring.commands import samples as samples_commands
from pytest_objective_scoring.ledger import Ledger, verify
from pytest_objective_scoring.sample_checker import CHECKER, PROCESS_LIMIT
from pytest_objective_scoring.sample_sandbox import CGROUP_PREFIX, ProcessLimits
from pytest_objective_scoring.samples import Outcome, Sample, SampleResult

from .conftest import ROOT
from .test_samples_resume import COMPLETIONS, PROBLEM_ROW, journal_lines, write_jsonl

LCB_ROW = {"question_id": "L/0", "question_title": "echo", "platform": "fixtures", "question_content": "Print the line.",
           "contest_date": "2024-01-15T00:00:00", "starter_code": "", "difficulty": "easy",
           "public_test_cases": json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}]),
           "private_test_cases": []}  # fmt: skip
BOUNDED_BOMB = ("{indent}import os, time\n{indent}for _ in range(2000):  # bounded: a limit that does not hold cannot take the "
                "machine down\n{indent}    if os.fork() == 0:\n{indent}        time.sleep(20)\n{indent}        "
                "os._exit(0)\n")  # fmt: skip


def grade(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade-samples", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def kinds(path: Path) -> Counter[str]:
    with Ledger(path, read_only=True) as made:
        return Counter(entry.kind for entry in made.entries())


def sample_rows(path: Path) -> list[dict[str, Any]]:
    with Ledger(path, read_only=True) as made:
        return [entry.data for entry in made.entries(samples.RESULT_KIND)]


# ---------------------------------------------------------------- piped inputs, read once


@pytest.fixture
def small(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "p.jsonl", [PROBLEM_ROW])
    write_jsonl(tmp_path / "s.jsonl", [{"task_id": "R/0", "completion": "    return x + 1\n"},
                                       {"task_id": "R/0", "completion": "    return x\n"}])  # fmt: skip
    return tmp_path


def test_problems_and_samples_through_process_substitution_are_read_once(small: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("needs bash for <(...)")
    script = (f"exec {sys.executable} -m pytest_objective_scoring grade-samples --problems <(cat p.jsonl) --samples "
              "<(cat s.jsonl) --k 1 --no-results --no-ledger --json")  # fmt: skip
    done = subprocess.run(["bash", "-c", script], cwd=small, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(s["status"]) for s in report["problems"][0]["samples"]] == ["passed", "failed"]
    for name, key in (("p.jsonl", "problems_file"), ("s.jsonl", "samples_file")):  # the bytes read, not an empty re-read
        assert report[key]["digest"] == "sha256:" + hashlib.sha256((small / name).read_bytes()).hexdigest()


@pytest.mark.parametrize("option", ["--samples", "--problems"])
def test_a_named_pipe_nobody_writes_to_is_refused_at_once(small: Path, option: str) -> None:
    fifo = small / "pipe.jsonl"
    os.mkfifo(fifo)
    files = {"--problems": str(small / "p.jsonl"), "--samples": str(small / "s.jsonl"), option: str(fifo)}
    started = time.monotonic()
    done = grade("--problems", files["--problems"], "--samples", files["--samples"], "--results",
                 str(small / "r.jsonl"), "--no-ledger", timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"{option} {fifo}: a named pipe nobody writes to" in done.stderr
    assert time.monotonic() - started < 30 and not (small / "r.jsonl").exists()


@pytest.mark.parametrize("option", ["--samples", "--problems"])
def test_a_device_is_refused_before_anything_is_read(small: Path, option: str) -> None:
    files = {"--problems": str(small / "p.jsonl"), "--samples": str(small / "s.jsonl"), option: "/dev/zero"}
    done = grade("--problems", files["--problems"], "--samples", files["--samples"], "--results",
                 str(small / "r.jsonl"), "--no-ledger", timeout=60)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{option} /dev/zero: a device, not a file" in done.stderr
    with pytest.raises(samples.SampleError, match=r"^--samples /dev/zero: a device, not a file$"):
        samples.read_input(Path("/dev/zero"), "samples", "--samples")  # the reader itself, not only the command line


def test_a_large_samples_file_streams_through_a_pipe(tmp_path: Path) -> None:
    """100,000 samples through a named pipe with its writer: read once, line by line, every row kept."""
    rows = "".join(json.dumps({"task_id": "R/0", "completion": f"    return x + {i % 7}\n"}) + "\n" for i in range(100_000))
    data = rows.encode("utf-8")
    fifo = tmp_path / "samples.jsonl"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    time.sleep(0.2)  # the writer has the pipe open: it is read, not refused
    read = samples.read_input(fifo, "samples", "--samples")
    writer.join(timeout=60)
    assert len(read.rows) == 100_000 and read.rows[-1][0] == f"{fifo}:100000"
    assert read.digest == "sha256:" + hashlib.sha256(data).hexdigest()
    problems = samples.load_problems(samples.Rows([("p:1", PROBLEM_ROW)], "sha256:x"))
    assert len(samples.load_samples(read, problems)) == 100_000


def test_a_gzip_file_and_a_json_array_read_as_before(tmp_path: Path) -> None:
    import gzip

    text = "".join(json.dumps(row) + "\n" for row in [PROBLEM_ROW, {**PROBLEM_ROW, "task_id": "R/1"}])
    (tmp_path / "p.jsonl.gz").write_bytes(gzip.compress(text[: len(text) // 2].encode()) + gzip.compress(text[len(text) // 2:].encode()))
    read = samples.read_input(tmp_path / "p.jsonl.gz", "problems")
    assert [where for where, _ in read.rows] == [f"{tmp_path / 'p.jsonl.gz'}:1", f"{tmp_path / 'p.jsonl.gz'}:2"]
    assert read.digest == "sha256:" + hashlib.sha256((tmp_path / "p.jsonl.gz").read_bytes()).hexdigest()
    (tmp_path / "p.json").write_text("\n\n" + json.dumps([PROBLEM_ROW, {**PROBLEM_ROW, "task_id": "R/1"}], indent=1))
    assert [where.rsplit(":", 1)[1] for where, _ in samples.read_input(tmp_path / "p.json", "problems").rows] == ["4", "11"]
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(text.encode())[:-12])
    with pytest.raises(samples.SampleError, match=r"cut\.jsonl\.gz: not a gzip file \(Compressed file ended"):
        samples.read_input(tmp_path / "cut.jsonl.gz", "problems")


# ---------------------------------------------------------------- ledger rows as results come


def result(index: int, status: str = "passed") -> SampleResult:
    sample = Sample("R/0", index, index + 1, "completion", f"    return {index}\n")
    return SampleResult(sample, Outcome(status, "detail", "check", "separate"), 0.1, 0.05)  # type: ignore[arg-type]


def test_ledger_rows_are_appended_in_batches_one_transaction_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = samples.load_problems(samples.Rows([("p:1", PROBLEM_ROW)], "sha256:x"))[0]
    settings = {"timeout": 3.0, "python": "/usr/bin/python3", "python_version": "3.11.7"}
    rows = samples_commands.LedgerRows(tmp_path / "l.sqlite", "run-1", [problem], {"R/0": "sha256:p"}, settings, None)
    monkeypatch.setattr(samples_commands, "FLUSH_EVERY", 3600.0)
    for index in range(450):
        rows.add(result(index))
    assert rows.written == 400 and len(rows.pending) == 50  # two full batches; the rest waits
    monkeypatch.setattr(samples_commands, "FLUSH_EVERY", 0.0)
    rows.due()
    rows.close()
    written = sample_rows(tmp_path / "l.sqlite")
    assert [row["index"] for row in written] == list(range(450))
    assert {row["run_id"] for row in written} == {"run-1"} and written[0]["benchmark"] == "HumanEval / EvoEval"
    with Ledger(tmp_path / "l.sqlite", read_only=True) as made:
        batches = Counter(entry.created for entry in made.entries())
    assert sorted(batches.values()) == [50, 200, 200]  # one transaction (one sync) per batch
    again = samples_commands.LedgerRows(tmp_path / "l.sqlite", "run-1", [problem], {"R/0": "sha256:p"}, settings, None)
    saved = again.recorded([result(i).sample for i in range(460)])
    assert sorted(saved.reused) == list(range(450))  # what a resumed run finds there, and never writes again


TOTAL = 40  # samples of a quarter second each, on two workers: a run of about five seconds


def ledger_count(path: Path) -> int:
    try:
        with Ledger(path, read_only=True) as made:
            return sum(1 for _ in made.entries(samples.RESULT_KIND))
    except ledger.LedgerError:
        return 0


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "p.jsonl", [PROBLEM_ROW])
    write_jsonl(tmp_path / "s.jsonl", [{"task_id": "R/0", "completion": COMPLETIONS[i % 4]} for i in range(TOTAL)])
    (tmp_path / "tmp").mkdir()
    return tmp_path


def command(tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest_objective_scoring", "grade-samples", "--problems", str(tmp_path / "p.jsonl"),
            "--samples", str(tmp_path / "s.jsonl"), "--k", "1,2", "--workers", "2", "--timeout", "20",
            "--results", str(tmp_path / "r.jsonl"), "--ledger", str(tmp_path / "l.sqlite"), "--json", *extra]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "kill-9"])
def test_a_stopped_run_keeps_its_rows_and_a_resumed_one_writes_each_once(inputs: Path, how: signal.Signals) -> None:
    tmp_path = inputs
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    journal = tmp_path / "r.jsonl.partial"
    proc = subprocess.Popen(command(tmp_path), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:  # some rows in the ledger, more in the journal
            if journal.exists() and len(journal_lines(journal)) >= 6 and ledger_count(tmp_path / "l.sqlite"):
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(how)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    kept = journal_lines(journal)
    graded = {(row["task_id"], row["index"]) for row in kept}
    assert 6 <= len(kept) < TOTAL
    stopped = sample_rows(tmp_path / "l.sqlite")
    assert verify(tmp_path / "l.sqlite").ok and stopped, "the stopped run's rows are in the ledger"
    assert len({row["run_id"] for row in stopped}) == 1 and kinds(tmp_path / "l.sqlite")[samples.RUN_KIND] == 0
    if how == signal.SIGINT:  # every graded sample is in the ledger, said so
        assert {(row["task_id"], row["index"]) for row in stopped} == graded
        assert "their rows are in the ledger" in err.strip().splitlines()[-1]
    else:  # at most the last batch is missing: the journal has it, the resumed run writes it
        assert {(row["task_id"], row["index"]) for row in stopped} <= graded
    resumed = subprocess.run(command(tmp_path), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    rows = sample_rows(tmp_path / "l.sqlite")
    identities = Counter((row["task_id"], row["index"]) for row in rows)
    assert len(identities) == TOTAL and set(identities.values()) == {1}, identities  # each sample once
    assert {row["run_id"] for row in rows} == {report["ledger"]["run_id"]}  # the resumed run is the same run
    assert kinds(tmp_path / "l.sqlite") == Counter({samples.RESULT_KIND: TOTAL, samples.RUN_KIND: 1, samples.PROBLEM_KIND: 1})
    assert report["ledger"]["sample_rows"] == TOTAL and report["resumed"]["reused"] == len(kept)
    with Ledger(tmp_path / "l.sqlite", read_only=True) as made:
        run = next(made.entries(samples.RUN_KIND))
    assert run.seq == report["ledger"]["run_seq"] and run.data["run_id"] == report["ledger"]["run_id"]
    by_row = {(row["task_id"], row["index"]): row["status"] for row in rows}
    assert [by_row[("R/0", s["index"])] for s in report["problems"][0]["samples"]] == \
        [s["status"] for s in report["problems"][0]["samples"]]
    assert verify(tmp_path / "l.sqlite").ok


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["grade-samples", *args])
    said = capsys.readouterr()
    return code, said.out, said.err


def test_a_run_is_recorded_once_even_when_run_again_after_an_output_failed(
        small: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    args = ("--problems", str(small / "p.jsonl"), "--samples", str(small / "s.jsonl"), "--k", "1", "--results",
            str(small / "r.jsonl"), "--ledger", str(small / "l.sqlite"), "--json")  # fmt: skip

    def full(path: Path, text: str) -> None:
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(atomic, "write_whole", full)
    code, out, err = _cli(capsys, *args)
    assert code == 3 and "--results" in err and json.loads(out)["ledger"]["run_seq"] == 3
    monkeypatch.undo()
    code, out, err = _cli(capsys, *args)
    assert code == 0, err
    report = json.loads(out)
    assert report["resumed"]["reused"] == 2 and report["ledger"]["run_seq"] == 3 and report["ledger"]["sample_rows"] == 2
    assert kinds(small / "l.sqlite") == Counter({samples.RESULT_KIND: 2, samples.RUN_KIND: 1, samples.PROBLEM_KIND: 1})


def test_a_ledger_that_fails_mid_run_is_said_and_the_next_run_writes_each_row_once(
        small: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    args = ("--problems", str(small / "p.jsonl"), "--samples", str(small / "s.jsonl"), "--k", "1", "--results",
            str(small / "r.jsonl"), "--ledger", str(small / "l.sqlite"), "--json")  # fmt: skip
    Ledger(small / "l.sqlite").close()

    def full(self: Ledger, items: Any) -> Any:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ledger.Ledger, "append_linked", full)
    code, out, err = _cli(capsys, *args)
    last = err.strip().splitlines()[-1]
    assert code == 3 and "the run was NOT recorded (2 sample row(s) could not be written" in last, err
    assert "run the same command again" in last and json.loads(out)["problems"][0]["n"] == 2
    monkeypatch.undo()
    code, out, err = _cli(capsys, *args)
    assert code == 0, err
    assert json.loads(out)["resumed"]["graded"] == 0  # nothing graded again: the journal kept it
    assert [row["index"] for row in sample_rows(small / "l.sqlite")] == [0, 1]
    assert kinds(small / "l.sqlite")[samples.RUN_KIND] == 1 and verify(small / "l.sqlite").ok


# ---------------------------------------------------------------- fork bombs


def test_the_harness_script_limits_processes_as_the_grader_says() -> None:
    assert re.search(rf"^PROCESS_LIMIT = {PROCESS_LIMIT}\b", CHECKER, re.MULTILINE)


def test_where_nothing_can_limit_a_samples_processes_the_report_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_objective_scoring import sample_sandbox

    monkeypatch.setattr(sample_sandbox, "pids_folders", list)
    monkeypatch.setattr(sample_sandbox.os, "geteuid", lambda: 0)
    said = ProcessLimits(PROCESS_LIMIT).settings()
    assert said["max"] is None and "not enforced" in said["note"] and "root" in said["note"]
    monkeypatch.setattr(sample_sandbox.os, "geteuid", lambda: 1000)
    assert ProcessLimits(PROCESS_LIMIT).settings() == {"max": PROCESS_LIMIT,
                                                       "by": "RLIMIT_NPROC (in each run's own user namespace)"}


def _limits_or_skip() -> ProcessLimits:
    limits = ProcessLimits(PROCESS_LIMIT)
    if limits.how is None:
        pytest.skip("this machine gives no way to limit a sample's processes (root without a pids cgroup)")
    return limits


@pytest.mark.slow
def test_a_fork_bomb_is_its_samples_failure_and_the_grading_goes_on(tmp_path: Path) -> None:
    limits = _limits_or_skip()
    write_jsonl(tmp_path / "p.jsonl", [PROBLEM_ROW, LCB_ROW])
    write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "R/0", "completion": BOUNDED_BOMB.format(indent="    ") + "    return x + 1\n"},  # a warm runner's
        {"task_id": "R/0", "completion": "    return x + 1\n"},
        {"task_id": "L/0", "solution": BOUNDED_BOMB.format(indent="") + "print(input())\n"},  # a cold run's
        {"task_id": "L/0", "solution": "print(input())\n"},
        {"task_id": "R/0", "completion": "    return x + 1\n"},
    ])  # fmt: skip
    (tmp_path / "tmp").mkdir()
    grader = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", "grade-samples", "--problems",
                               str(tmp_path / "p.jsonl"), "--samples", str(tmp_path / "s.jsonl"), "--k", "1",
                               "--timeout", "15", "--no-results", "--no-ledger", "--json"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})  # fmt: skip
    stdout, stderr = grader.communicate(timeout=240)
    assert grader.returncode == 0, stderr  # never the grader's failure, never "infrastructure"
    report = json.loads(stdout)
    outcomes = {row["task_id"]: [(s["status"], s["detail"]) for s in row["samples"]] for row in report["problems"]}
    for task_id in ("R/0", "L/0"):
        (status, detail), *rest = outcomes[task_id]
        assert status == "failed" and "Resource temporarily unavailable" in detail, outcomes
        assert [s for s, _ in rest] == ["passed"] * len(rest), outcomes  # the samples after it: as ever
    assert report["settings"]["processes_per_sample"] == {"max": PROCESS_LIMIT, "by": limits.how}
    if limits.folder is not None:
        ours = f"{CGROUP_PREFIX}{grader.pid}-"  # another grader may run beside this one (xdist): only ours
        assert not [n for n in os.listdir(limits.folder) if n.startswith(ours)], "no cgroup is left"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not os.access("/usr/bin/python3", os.X_OK) or shutil.which("runuser") is None,
                    reason="needs root, to run a sample's harness as another user (runuser, /usr/bin/python3)")  # fmt: skip
def test_a_grader_that_is_not_root_limits_a_samples_processes_with_rlimit_nproc() -> None:
    """As ``nobody``, in its own user namespace (as grade-samples runs it: ``unshare --map-root-user``),
    the cold harness's RLIMIT_NPROC stops the bomb; no cgroup involved."""
    import secrets
    import tempfile

    from pytest_objective_scoring.sample_harness import harness_files

    problem = samples.load_problems(samples.Rows([("p:1", PROBLEM_ROW)], "sha256:x"))[0]
    bomb = Sample("R/0", 0, 1, "completion", BOUNDED_BOMB.format(indent="    ") + "    return x + 1\n")
    place = Path(tempfile.mkdtemp(prefix="objective-nobody-"))  # pytest's own folders are out of nobody's reach
    run = place / "run"
    for folder in (run, run / "home", run / "tmp"):
        folder.mkdir()
    key = secrets.token_hex(32)
    for name, text in harness_files(problem, bomb, 10.0, key, "split").items():
        (run / name).write_text(text, encoding="utf-8")
    subprocess.run(["chown", "-R", "nobody", str(place)], check=True)
    os.chmod(place, 0o755)
    try:
        _as_nobody(problem, run, key)
    finally:
        shutil.rmtree(place, ignore_errors=True)


def _as_nobody(problem: Any, run: Path, key: str) -> None:
    """Run the harness in ``run`` as nobody, as grade-samples runs it, and check the bomb's outcome."""
    runuser = shutil.which("runuser") or "runuser"
    probe = subprocess.run([runuser, "-u", "nobody", "--", "unshare", "--map-root-user", "--pid", "--fork",
                            "--mount-proc", "true"], capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"this machine gives nobody no user namespace: {probe.stderr.strip()[:200]}")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(run / "home"), "TMPDIR": str(run / "tmp"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([runuser, "-u", "nobody", "--", "unshare", "--map-root-user", "--pid", "--fork", "--mount-proc",
                           "/usr/bin/python3", str(run / "harness.py")], cwd=run, env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    outcome = samples.fold(problem, done.stdout + done.stderr, key.encode("ascii"), done.returncode, False, 10.0)
    assert outcome.status == "failed" and "Resource temporarily unavailable" in outcome.detail, outcome


def test_a_journal_that_kept_nothing_is_never_left_as_a_0_byte_file(tmp_path):
    from pytest_objective_scoring.commands.samples import Journal

    journal = Journal(tmp_path / "report.json.partial")
    assert journal.open() == []
    journal.close()
    assert not (tmp_path / "report.json.partial").exists(), "a journal that kept nothing goes"
    kept = Journal(tmp_path / "r.partial")
    kept.open()
    kept.append('{"a": 1}\n')
    kept.close()
    assert (tmp_path / "r.partial").read_text() == '{"a": 1}\n', "one that kept a line stays for the resume"
