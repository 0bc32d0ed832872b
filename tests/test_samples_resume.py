"""grade-samples stopped and run again (issue: 391 graded samples lost on Ctrl-C), and its outputs on a full disk.

Pure logic first (which saved results a resumed run reuses; a file written whole or not at all), then
real runs of the command in a subprocess (``slow``): SIGINT, SIGTERM and SIGKILL in the middle of a
run, then the same command again, whose report and results file must equal an uninterrupted run's
with no sample graded twice; progress with ``--ledger --json``; a full disk (a real 64 KiB tmpfs when
this runs as root, else an injected ``ENOSPC``) under ``--results`` and ``--out``.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import atomic, cli, samples
from pytest_objective_scoring.commands import samples as samples_commands
from pytest_objective_scoring.samples import Outcome, Problem, Sample, SampleResult

from .conftest import ROOT

PROBLEM_ROW = {"task_id": "R/0", "prompt": "def f(x):\n", "test": "def check(candidate):\n    assert candidate(1) == 2\n",
               "entry_point": "f", "canonical_solution": "    return x + 1\n"}  # fmt: skip
SLOW = "    import time\n    time.sleep(0.25)\n"
COMPLETIONS = [SLOW + "    return x + 1\n", SLOW + "    return x\n", SLOW + "    return x + 1\n", SLOW + "    raise ValueError('no')\n"]
SETTINGS = {"timeout": 10.0, "python": "/usr/bin/python3", "python_version": "3.11.7"}
VOLATILE = ("created", "wall_time", "resumed")


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# --- which saved results a resumed run reuses ------------------------------------------------------


def problem(test: str = "def check(candidate):\n    assert candidate(1) == 2\n") -> Problem:
    return Problem(task_id="R/0", style="humaneval", where="p.jsonl:1", prompt="def f(x):\n", entry_point="f", test=test)


def result(sample: Sample, status: str = "passed") -> SampleResult:
    return SampleResult(sample, Outcome(status, "1 check(s) passed", "check", "separate"), 0.1234, 0.0456)  # type: ignore[arg-type]


def test_a_saved_result_is_reused_only_for_the_same_sample_problem_and_settings() -> None:
    first, second, third = (Sample("R/0", i, i + 1, "completion", f"    return {i}\n") for i in range(3))
    digest = samples.problem_digest(problem())
    lines = [samples.journal_line(result(first), digest, SETTINGS), samples.journal_line(result(second, "failed"), digest, SETTINGS),
             samples.journal_line(result(third), digest, {**SETTINGS, "timeout": 3.0}),
             samples.journal_line(result(first), digest, SETTINGS)[:40]]  # fmt: skip
    saved = samples.read_journal(lines, [first, second, third], {"R/0": digest}, SETTINGS)
    assert sorted(saved.reused) == [0, 1] and (saved.stale, saved.unreadable) == (1, 1)  # other settings; a line cut short
    assert saved.reused[0] == SampleResult(first, Outcome("passed", "1 check(s) passed", "check", "separate"), 0.123, 0.046)
    assert saved.reused[1].outcome.status == "failed"
    edited = Sample("R/0", 1, 2, "completion", "    return 'edited'\n")  # the samples file changed at that line
    saved = samples.read_journal(lines, [first, edited, third], {"R/0": digest}, SETTINGS)
    assert sorted(saved.reused) == [0] and saved.stale == 2
    changed = samples.problem_digest(problem("def check(candidate):\n    assert candidate(1) == 3\n"))
    assert changed != digest and samples.problem_digest(Problem(**{**problem().__dict__, "where": "moved.jsonl:9"})) == digest
    saved = samples.read_journal(lines, [first, second, third], {"R/0": changed}, SETTINGS)
    assert saved.reused == {} and saved.stale == 3
    gone = samples.read_journal(lines, [first], {"R/0": digest}, SETTINGS)  # samples no longer in the file
    assert sorted(gone.reused) == [0] and gone.stale == 2


def test_an_infrastructure_failure_or_a_foreign_line_is_never_reused() -> None:
    sample = Sample("R/0", 0, 1, "completion", "    return 1\n")
    digest = samples.problem_digest(problem())
    infra = samples.journal_line(SampleResult(sample, Outcome("infrastructure", "the harness did not start")), digest, SETTINGS)
    forged = json.dumps({**json.loads(samples.journal_line(result(sample), digest, SETTINGS)), "status": "great"})
    saved = samples.read_journal([infra, forged, "not json", "[1, 2]", ""], [sample], {"R/0": digest}, SETTINGS)
    assert saved.reused == {} and (saved.stale, saved.unreadable) == (1, 3)


def test_an_output_that_cannot_be_written_is_said_in_the_words_of_every_command() -> None:
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert samples_commands.os_problem("--out r.json", full) == "--out r.json: NOT written (No space left on device)"


def test_a_journal_in_use_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problems = write_jsonl(tmp_path / "p.jsonl", [PROBLEM_ROW])
    samples_file = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "R/0", "completion": "    return x + 1\n"}])
    results = tmp_path / "r.jsonl"
    holder = samples_commands.Journal(tmp_path / "r.jsonl.partial")
    assert holder.open() == []
    try:
        code = cli.main(["grade-samples", "--problems", str(problems), "--samples", str(samples_file), "--results",
                         str(results), "--no-ledger"])  # fmt: skip
    finally:
        holder.close()
    assert code == 2 and "is being written by another grade-samples run" in capsys.readouterr().err
    assert not results.exists()


def test_the_journal_sits_beside_the_first_file_the_run_writes(tmp_path: Path) -> None:
    parser = cli.build_parser(["grade-samples"])
    base = ["grade-samples", "--problems", "p.jsonl", "--samples", str(tmp_path / "s.jsonl")]
    ledger = tmp_path / "l.sqlite"
    args = parser.parse_args(base)
    assert samples_commands.journal_path(args, ledger) == tmp_path / "s.jsonl_results.jsonl.partial"
    args = parser.parse_args([*base, "--no-results", "--out", str(tmp_path / "r.json")])
    assert samples_commands.journal_path(args, ledger) == tmp_path / "r.json.partial"
    args = parser.parse_args([*base, "--no-results", "--out", "/dev/stdout"])
    beside = samples_commands.journal_path(args, ledger)
    assert beside is not None and beside.parent == tmp_path and beside.name.startswith("l.sqlite.grade-samples-")
    assert samples_commands.journal_path(args, None) is None


# --- real runs, stopped and run again ---------------------------------------------------------------


def command(tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest_objective_scoring", "grade-samples", "--problems", str(tmp_path / "p.jsonl"),
            "--samples", str(tmp_path / "s.jsonl"), "--k", "1,2", "--workers", "2", "--timeout", "20", *extra]  # fmt: skip


@pytest.fixture
def inputs(tmp_path: Path) -> Iterator[Path]:
    write_jsonl(tmp_path / "p.jsonl", [PROBLEM_ROW])
    write_jsonl(tmp_path / "s.jsonl", [{"task_id": "R/0", "completion": COMPLETIONS[i % 4]} for i in range(16)])
    yield tmp_path


def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp_path / "tmp")}


def normalized(report: dict[str, Any]) -> dict[str, Any]:
    """A report less what differs between any two runs: times, the warm runners' counts, the resume."""
    kept = {key: value for key, value in report.items() if key not in VOLATILE}
    kept["settings"] = {key: value for key, value in report["settings"].items() if key != "warm_runner"}
    kept["problems"] = [{**row, "samples": [{k: v for k, v in s.items() if k not in ("wall_time", "cpu")}
                                            for s in row["samples"]]} for row in report["problems"]]  # fmt: skip
    return kept


def journal_lines(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # the line a kill cut short
            continue
    return rows


def stop_midway(tmp_path: Path, how: signal.Signals, extra: list[str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """Start the command, send ``how`` once a few samples are in its journal; its run and how many were kept."""
    journal = tmp_path / "r.jsonl.partial"
    proc = subprocess.Popen(command(tmp_path, *extra), cwd=ROOT, env=env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and len(journal_lines(journal)) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(how)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    kept = len(journal_lines(journal))
    assert 3 <= kept < 16, kept
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), kept


@pytest.mark.slow
@pytest.mark.parametrize(("how", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)],
                         ids=["sigint", "sigterm", "kill-9"])  # fmt: skip
def test_a_stopped_run_resumes_and_ends_as_an_uninterrupted_one(inputs: Path, how: signal.Signals, status: int) -> None:
    tmp_path = inputs
    outputs = ["--results", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "report.json"), "--ledger",
               str(tmp_path / "l.sqlite"), "--json"]  # fmt: skip
    stopped, kept = stop_midway(tmp_path, how, outputs)
    assert stopped.returncode == status, stopped.stderr
    assert "Traceback" not in stopped.stderr
    if how != signal.SIGKILL:
        last = stopped.stderr.strip().splitlines()[-1]
        assert last.startswith("objective-score grade-samples: interrupted") and "every running sample was killed" in last
        assert f"{kept} kept in {tmp_path / 'r.jsonl.partial'}; run the same command again to resume" in last
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "report.json").exists()
    identities = [(row["task_id"], row["index"]) for row in journal_lines(tmp_path / "r.jsonl.partial")]
    assert len(identities) == len(set(identities)) == kept
    resumed = subprocess.run(command(tmp_path, *outputs), cwd=ROOT, env=env(tmp_path), capture_output=True, text=True,
                             timeout=300, check=False)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {kept} of 16 sample(s) already graded" in resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["resumed"]["reused"] == kept and report["resumed"]["graded"] == 16 - kept  # none graded twice
    assert report["settings"]["warm_runner"]["samples"] == 16 - kept
    assert not (tmp_path / "r.jsonl.partial").exists()  # complete: the journal is gone
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8")) == report
    results = (tmp_path / "r.jsonl").read_bytes()
    for name in ("r.jsonl", "report.json"):
        (tmp_path / name).unlink()
    whole = subprocess.run(command(tmp_path, *outputs[:-3], "--no-ledger", "--json"), cwd=ROOT, env=env(tmp_path),
                           capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    uninterrupted = json.loads(whole.stdout)
    assert uninterrupted["resumed"]["reused"] == 0
    assert normalized(report) == normalized(uninterrupted) | {"ledger": report["ledger"]}
    assert (tmp_path / "r.jsonl").read_bytes() == results
    assert [row["n"] for row in report["problems"]] == [16] and report["problems"][0]["c"] == 8
    assert report["ledger"]["run_seq"] == 17 and report["ledger"]["sample_rows"] == 16  # each sample's row once, then the run


@pytest.mark.slow
def test_a_changed_samples_file_is_graded_again_where_it_changed(inputs: Path) -> None:
    tmp_path = inputs
    outputs = ["--results", str(tmp_path / "r.jsonl"), "--no-ledger", "--json"]
    stopped, kept = stop_midway(tmp_path, signal.SIGINT, outputs)
    assert stopped.returncode == 130, stopped.stderr
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[0]["completion"] = "    return x + 1  # edited\n"  # the first sample, graded before the stop, changed
    write_jsonl(tmp_path / "s.jsonl", rows)
    resumed = subprocess.run(command(tmp_path, *outputs), cwd=ROOT, env=env(tmp_path), capture_output=True, text=True,
                             timeout=300, check=False)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "1 result(s) in" in resumed.stderr and "graded again" in resumed.stderr
    report = json.loads(resumed.stdout)
    assert (report["resumed"]["reused"], report["resumed"]["stale"]) == (kept - 1, 1)
    assert report["resumed"]["graded"] == 16 - kept + 1


@pytest.mark.slow
def test_progress_is_printed_with_ledger_and_json(inputs: Path) -> None:
    done = subprocess.run(command(inputs, "--no-results", "--ledger", str(inputs / "l.sqlite"), "--json"), cwd=ROOT,
                          env=env(inputs), capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("grade-samples: [")]
    assert lines[0].startswith("grade-samples: [1/16] ") and lines[-1].startswith("grade-samples: [16/16] ")
    assert len(lines) < 16  # throttled: not one line per sample
    assert all(" samples/s" in line for line in lines) and "left" in lines[0]
    assert json.loads(done.stdout)["ledger"]["run_seq"] == 17  # after the 16 samples' rows
    assert not list(inputs.glob("*.partial"))


# --- a full disk ------------------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, filled: every write there fails with ENOSPC (root only: mounting needs it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; test_an_injected_enospc_* covers a full disk without it")
    place = tmp_path / "full"
    place.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(place)], capture_output=True,
                             text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        filler = os.open(place / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(filler, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(filler)
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)


def assert_one_line_exit_3(done: subprocess.CompletedProcess[str], option: str) -> str:
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"objective-score grade-samples: infrastructure failure: {option} ")
    assert ": NOT written (No space left on device)" in last, last
    return last


@pytest.mark.slow
def test_a_full_disk_under_results_ends_in_one_line_and_leaves_no_cut_file(inputs: Path, full_disk: Path) -> None:
    results = full_disk / "r.jsonl"
    done = subprocess.run(command(inputs, "--results", str(results), "--no-ledger", "--json"), cwd=ROOT, env=env(inputs),
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    last = assert_one_line_exit_3(done, "--results")
    assert "the graded samples could not be kept" in last
    assert not results.exists() and sorted(p.name for p in full_disk.iterdir() if p.name != "filler") == [], "no 0-byte journal is left"
    report = json.loads(done.stdout)  # the report itself is whole
    assert report["results_file"] is None and report["problems"][0]["n"] == 16


@pytest.mark.slow
def test_a_full_disk_under_out_prints_the_whole_report_on_stdout(inputs: Path, full_disk: Path) -> None:
    out = full_disk / "report.json"
    done = subprocess.run(command(inputs, "--no-results", "--no-ledger", "--out", str(out)), cwd=ROOT, env=env(inputs),
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    last = assert_one_line_exit_3(done, "--out")
    assert "the report follows on standard output" in last
    report = json.loads(done.stdout)  # in full, not the table
    assert report["problems"][0]["n"] == 16 and len(report["problems"][0]["samples"]) == 16
    assert not out.exists() and not [p for p in full_disk.iterdir() if p.name.startswith(".report.json")]


def test_an_injected_enospc_under_results_and_out_is_one_line_and_exit_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The same without root: every whole write fails as a full disk makes it fail."""
    write_jsonl(tmp_path / "p.jsonl", [PROBLEM_ROW])
    write_jsonl(tmp_path / "s.jsonl", [{"task_id": "R/0", "completion": "    return x + 1\n"}] * 2)

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "write_whole", full)
    code = cli.main(["grade-samples", "--problems", str(tmp_path / "p.jsonl"), "--samples", str(tmp_path / "s.jsonl"),
                     "--results", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "report.json"), "--no-ledger"])  # fmt: skip
    said = capsys.readouterr()
    assert code == 3
    last = said.err.strip().splitlines()[-1]
    assert last.startswith("objective-score grade-samples: infrastructure failure: --results ")
    assert "--out " in last and "NOT written (No space left on device)" in last and "run the same command again" in last
    assert json.loads(said.out)["problems"][0]["c"] == 2  # the report, in full, on stdout
    assert len((tmp_path / "r.jsonl.partial").read_text().splitlines()) == 2  # kept: a run once there is room grades nothing
    monkeypatch.undo()
    code = cli.main(["grade-samples", "--problems", str(tmp_path / "p.jsonl"), "--samples", str(tmp_path / "s.jsonl"),
                     "--results", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "report.json"), "--no-ledger", "--json"])  # fmt: skip
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and (again["resumed"]["reused"], again["resumed"]["graded"]) == (2, 0)
    assert not (tmp_path / "r.jsonl.partial").exists() and (tmp_path / "r.jsonl").exists()
