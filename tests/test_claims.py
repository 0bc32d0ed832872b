"""Claims on jobs (issue 14, point 3) and the proof of death they rest on, as fault injections: owners
killed with SIGKILL, owner files gone, processes racing for the same jobs, a ledger refusing writes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from pytest_objective_scoring import liveness
from pytest_objective_scoring.claims import ABSENT, DEAD, INTERRUPTED, Claims, claims_folder
from pytest_objective_scoring.ledger import Ledger, verify
from pytest_objective_scoring.runner import OWNER_FILE, WORKSPACE_PREFIX, sweep_workspaces

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip


def kinds(path: Path) -> list[tuple[str, dict]]:
    with Ledger(path, read_only=True) as ledger:
        return [(e.kind, e.data) for e in ledger.entries()]


# ------------------------------------------------------------------ liveness


def test_an_owner_is_alive_while_it_holds_its_file_dead_once_killed_and_gone_once_released(tmp_path):
    mine = tmp_path / "mine.lock"
    descriptor = liveness.hold(mine, {"run_id": "r"})
    assert liveness.probe(mine) == liveness.ALIVE  # a second open file description cannot take the lock
    assert liveness.probe(mine) == liveness.ALIVE, "probing never takes the lock away"
    assert liveness.about(mine)["run_id"] == "r" and liveness.about(mine)["pid"] == os.getpid()
    liveness.release(descriptor, mine)
    assert liveness.probe(mine) == liveness.GONE
    killed = tmp_path / "killed.lock"
    done = run_python("""
        import os, signal, sys
        from pathlib import Path
        from pytest_objective_scoring import liveness
        liveness.hold(Path(sys.argv[1]))
        os.kill(os.getpid(), signal.SIGKILL)
    """, str(killed))  # fmt: skip
    assert done.returncode == -signal.SIGKILL
    assert liveness.probe(killed) == liveness.DEAD
    assert [p.name for p in tmp_path.iterdir()] == ["killed.lock"], "no temporary file is left behind"


def test_a_child_process_does_not_inherit_the_lock(tmp_path):
    owner = tmp_path / "owner.lock"
    done = run_python("""
        import os, signal, subprocess, sys, time
        from pathlib import Path
        from pytest_objective_scoring import liveness
        liveness.hold(Path(sys.argv[1]))
        child = subprocess.Popen(["sleep", "30"], start_new_session=True, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # not holding our pipes: we return at once
        print(child.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """, str(owner))  # fmt: skip
    orphan = int(done.stdout.split()[0])
    try:
        assert liveness.probe(owner) == liveness.DEAD, "a test process left behind must not keep its grader alive"
    finally:
        os.kill(orphan, signal.SIGKILL)


# ------------------------------------------------------------------ claims


def test_of_two_runs_one_claims_the_job_the_other_waits_then_reads_the_result(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as first_ledger, Ledger(path) as second_ledger:
        first, second = Claims(first_ledger, run_id="a"), Claims(second_ledger, run_id="b")
        assert first.take("k1", {"instance_id": "i1"}).state == "mine"
        held = second.take("k1")
        assert held.state == "held" and held.holder["claimant"] == first.token and held.holder["run_id"] == "a"
        assert held.holder["pid"] == os.getpid() and held.holder["host"] == socket.gethostname()
        assert first.take("k1").state == "mine", "taking one's own claim again writes nothing"
        first_ledger.append("score", {"job_key": "k1", "outcome": "resolved"})
        first.recorded("k1")
        assert second.take("k1").state == "recorded"
        assert second.take("k2").state == "mine" and first.take("k2").state == "held"
        second.release("k2", "its result could not be recorded")
        assert first.take("k2").state == "mine", "a released claim is free"
        first.close()
        second.close()
    entries = kinds(path)
    assert [k for k, _ in entries] == ["claim", "score", "claim", "release", "claim", "release"]
    assert entries[3][1]["why"] == "its result could not be recorded" and entries[3][1]["claim_seq"] == 3
    assert entries[5][1] == {"job_key": "k2", "claim_seq": 5, "claimant": first.token, "instance_id": None,
                             "why": INTERRUPTED, "by": first.token}  # fmt: skip
    assert verify(path).ok
    assert list(claims_folder(path).iterdir()) == [], "both owner files are removed at the end"


KILLED_CLAIMANT = """
    import os, signal, sys
    from pytest_objective_scoring.claims import Claims
    from pytest_objective_scoring.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    claims = Claims(ledger, run_id="killed")
    for key in sys.argv[2:]:
        assert claims.take(key).state == "mine"
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_open_claims_of_a_run_killed_outright_are_released_by_the_next_run_naming_it(tmp_path):
    path = tmp_path / "ledger.sqlite"
    assert run_python(KILLED_CLAIMANT, str(path), "k1", "k2").returncode == -signal.SIGKILL
    [owner_file] = claims_folder(path).iterdir()
    assert liveness.probe(owner_file) == liveness.DEAD
    with Ledger(path) as ledger, Claims(ledger, run_id="next") as claims:
        assert sorted(r["job_key"] for r in claims.released) == ["k1", "k2"]
        assert {r["why"] for r in claims.released} == {DEAD} and {r["host"] for r in claims.released} == {socket.gethostname()}
        assert claims.take("k1").state == "mine"
        assert list(claims_folder(path).iterdir()) == [claims.owner_file], "the dead run's owner file is gone"
    releases = [d for k, d in kinds(path) if k == "release"]
    assert [(r["job_key"], r["why"]) for r in releases][:2] == [("k1", DEAD), ("k2", DEAD)]
    assert verify(path).ok


def test_a_claimant_that_dies_during_this_run_is_taken_back_when_its_job_is_asked_for(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger, Claims(ledger) as claims:  # this run started first: its sweep found nothing
        assert run_python(KILLED_CLAIMANT, str(path), "k1").returncode == -signal.SIGKILL
        assert claims.take("k1").state == "mine"
        assert claims.released[0]["why"] == DEAD


def test_a_claim_with_no_owner_file_is_taken_back_only_when_its_process_is_absent_from_this_host(tmp_path):
    path = tmp_path / "ledger.sqlite"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that is free now
    with Ledger(path) as ledger:
        ledger.append("claim", {"job_key": "here", "claimant": "aaaa", "host": socket.gethostname(), "pid": gone.pid})
        ledger.append("claim", {"job_key": "alive", "claimant": "bbbb", "host": socket.gethostname(), "pid": os.getpid()})
        ledger.append("claim", {"job_key": "there", "claimant": "cccc", "host": "another-host", "pid": gone.pid})
        with Claims(ledger) as claims:
            assert claims.take("here").state == "mine" and claims.released[-1]["why"] == ABSENT
            assert claims.take("alive").state == "held", "a running process keeps its claim"
            assert claims.take("there").state == "held", "nothing here can prove a run on another host dead"


def test_retry_infra_grades_again_only_what_was_recorded_before_this_run(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.append("score", {"job_key": "old", "outcome": "infrastructure_failure"})
        with Claims(ledger, retry_infra=True) as claims, Claims(ledger, retry_infra=True) as other:
            assert claims.take("old").state == "mine"
            ledger.append("score", {"job_key": "old", "outcome": "infrastructure_failure"})  # this run's own retry
            claims.recorded("old")
            assert other.take("old").state == "recorded", "a retry recorded during the run is not retried again"
        with Claims(ledger) as plain:
            assert plain.take("old").state == "recorded"


RACER = """
    import json, sys
    from pytest_objective_scoring.claims import Claims
    from pytest_objective_scoring.ledger import Ledger
    path, keys = sys.argv[1], [f"k{i}" for i in range(int(sys.argv[2]))]
    mine = []
    with Ledger(path) as ledger, Claims(ledger) as claims:
        for key in keys:
            if claims.take(key).state == "mine":
                ledger.append("score", {"job_key": key, "outcome": "resolved"})
                claims.recorded(key)
                mine.append(key)
    print(json.dumps(mine))
"""


def test_processes_racing_for_the_same_jobs_claim_each_exactly_once(tmp_path):
    path = tmp_path / "ledger.sqlite"
    Ledger(path).append("batch", {"note": "made before the race"})
    racers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(RACER), str(path), "30"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(5)]  # fmt: skip
    results = [racer.communicate(timeout=300) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), [err for _, err in results]
    graded = [key for out, _ in results for key in json.loads(out)]
    assert sorted(graded) == sorted(f"k{i}" for i in range(30)), "every job graded, none twice"
    entries = kinds(path)
    assert Counter(d["job_key"] for k, d in entries if k == "claim") == Counter(f"k{i}" for i in range(30))
    assert Counter(d["job_key"] for k, d in entries if k == "score") == Counter(f"k{i}" for i in range(30))
    assert verify(path).ok


def test_a_ledger_that_refuses_the_release_keeps_the_owner_file_for_the_next_run(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        claims = Claims(ledger)
        assert claims.take("k1").state == "mine"

        def refuse(_: object) -> list:
            raise OSError("disk full")

        ledger.append_decided = refuse  # type: ignore[method-assign]
        claims.close()
        assert claims.owner_file.exists(), "the claim stays open: the owner file stays for the next run's proof"
    assert liveness.probe(claims.owner_file) == liveness.DEAD, "its lock went with the descriptor"
    with Ledger(path) as ledger, Claims(ledger) as after:
        assert [r["job_key"] for r in after.released] == ["k1"]


# ------------------------------------------------------------------ workspaces of killed gradings


def test_the_workspaces_of_gradings_killed_outright_are_swept_and_no_other(tmp_path):
    killed = tmp_path / f"{WORKSPACE_PREFIX}killed"
    alive = tmp_path / f"{WORKSPACE_PREFIX}alive"
    kept = tmp_path / f"{WORKSPACE_PREFIX}kept"  # --keep: no owner file
    other = tmp_path / "someone-elses"
    for folder in (killed, alive, kept, other):
        (folder / "repo" / "work" / "work").mkdir(parents=True)
        (folder / "repo" / "work" / "work").chmod(0)  # what an overlay's work folder looks like
    assert run_python("""
        import os, signal, sys
        from pathlib import Path
        from pytest_objective_scoring import liveness
        liveness.hold(Path(sys.argv[1]))
        os.kill(os.getpid(), signal.SIGKILL)
    """, str(killed / OWNER_FILE)).returncode == -signal.SIGKILL  # fmt: skip
    descriptor = liveness.hold(alive / OWNER_FILE)
    try:
        assert sweep_workspaces(tmp_path) == [killed]
        assert not killed.exists() and alive.exists() and kept.exists() and other.exists()
        assert sweep_workspaces(tmp_path) == [], "once per process and folder"
    finally:
        liveness.release(descriptor)
        for folder in (alive, kept, other):
            (folder / "repo" / "work" / "work").chmod(0o700)


KILLED_IN_WORKSPACE = """
    import os, signal, sys
    from pathlib import Path
    from pytest_objective_scoring import liveness, workspace
    where, at = Path(sys.argv[1]), sys.argv[2]
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    if at == "making":  # after its folder was made, before its owner file was in place
        workspace.liveness.hold = die
        workspace.Workspace(where)
    space = workspace.Workspace(where)
    (space.path / "repo" / "pkg").mkdir(parents=True)
    for name in ("a.py", "b.py", "c.py"):
        (space.path / "repo" / "pkg" / name).write_text("x = 1\\n")
    if at == "removing":  # halfway through its removal: one entry gone, the rest still there
        removed = []
        def fresh_then_die(path):
            removed.append(path)
            if len(removed) == 2:
                die()
            original(path)
        original = workspace.fresh
        workspace.fresh = fresh_then_die
        (space.path / "log.txt").write_text("log\\n")
    space.close(keep=False)
"""


@pytest.mark.parametrize("at", ["making", "removing"])
def test_a_grading_killed_while_its_workspace_is_made_or_removed_leaves_nothing_the_next_sweep_keeps(tmp_path, at):
    """A workspace never exists under its own name without its owner file, and loses its owner file
    last: a SIGKILL at either moment leaves something the next sweep proves dead and removes."""
    done = run_python(KILLED_IN_WORKSPACE, str(tmp_path), at)
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = sorted(tmp_path.iterdir())
    assert len(left) == 1, left
    if at == "making":
        assert left[0].name.startswith(".objective-score-making-"), "only ever under its staging name"
    else:
        assert left[0].name.startswith(WORKSPACE_PREFIX) and (left[0] / OWNER_FILE).exists()
        assert liveness.probe(left[0] / OWNER_FILE) == liveness.DEAD
    assert sweep_workspaces(tmp_path) == left
    assert list(tmp_path.iterdir()) == []


def test_a_staging_folder_of_a_live_grader_is_not_swept(tmp_path):
    from pytest_objective_scoring.workspace import STAGING_PREFIX

    mine = tmp_path / f"{STAGING_PREFIX}{os.getpid()}-abc"
    mine.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    theirs = tmp_path / f"{STAGING_PREFIX}{gone.pid}-def"
    theirs.mkdir()
    odd = tmp_path / f"{STAGING_PREFIX}not-a-pid"
    odd.mkdir()
    assert sweep_workspaces(tmp_path) == [theirs]
    assert mine.exists() and odd.exists() and not theirs.exists()


@pytest.mark.parametrize("keep", [False, True])
def test_a_grading_holds_its_workspace_and_leaves_nothing_behind(tmp_path, keep):
    from pytest_objective_scoring.instances import load_instance
    from pytest_objective_scoring.runner import GradeRequest, grade_candidate

    from .conftest import FIXTURES

    instance = load_instance(FIXTURES / "instances" / "intervals.json")
    work = tmp_path / "work"
    work.mkdir()
    result = grade_candidate(GradeRequest(repo=FIXTURES / "repos" / "intervals", instance=instance, patch=b"",
                                          workdir=work, keep=keep, timeout=120))  # fmt: skip
    assert result.envelope["score"]["resolved"] == "not_resolved"
    left = list(work.iterdir())
    if keep:
        assert left == [Path(result.envelope["runner"]["workspace"])]
        assert not (left[0] / OWNER_FILE).exists(), "a kept workspace has no owner file: no sweep ever takes it"
    else:
        assert left == []


def test_an_owner_file_that_cannot_be_removed_still_ends_the_ownership(tmp_path, monkeypatch):
    owner = tmp_path / "owner.lock"
    descriptor = liveness.hold(owner)

    def refuse(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(1, "Operation not permitted", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    assert liveness.release(descriptor, owner) is False, "said, never raised: the report still gets written"
    monkeypatch.undo()
    assert liveness.probe(owner) == liveness.DEAD, "the lock is dropped all the same: the next run proves it dead"


def test_a_job_another_run_recorded_is_read_back_alone_as_the_whole_ledger_gives_it(tmp_path):
    from pytest_objective_scoring.batch import recorded_job, recorded_jobs

    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        for key in ("k1", "k2"):
            ledger.append_linked([("score", lambda _, key=key: {"job_key": key, "outcome": "resolved"}),
                                  ("cost", lambda written: {"score_seq": written[0].seq, "cost": {"cpu": 1.0},
                                                            "breakdown": {"compute_dollars": 0.1}})])  # fmt: skip
        whole = recorded_jobs(ledger)
        assert recorded_job(ledger, whole["k2"]["seq"]) == whole["k2"] and whole["k2"]["cost"] == {"cpu": 1.0}
        assert recorded_job(ledger, whole["k1"]["seq"]) == whole["k1"]
