"""Harbor tasks that need a container, run through a container engine.

This machine has no container daemon, so the engine is ``fixtures/harbor/fake_engine.py``
installed as ``docker`` first on PATH: it records every invocation's argv and emulates the
commands on this machine (see its docstring). The tests pin the exact engine command lines
(the build context, read-only mounts, the network, the removal of every container) and the
verdict flow end to end; they cannot show what a real engine does with them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import testrun
from pytest_objective_scoring.harbor import (
    C_TOOLS,
    EXIT_NOT_SOLVED,
    EXIT_REFUSED,
    EXIT_SOLVED,
    EngineStatus,
    Interrupted,
    NeedsContainer,
    Reward,
    RewardRules,
    RunOptions,
    TaskContainer,
    Tier,
    find_engine,
    load_task,
    run_task,
    script_reward,
)
from pytest_objective_scoring.ledger import Ledger, verify

from .conftest import FIXTURES

HARBOR = FIXTURES / "harbor"
FAKE = HARBOR / "fake_engine.py"
RECORDER_RUN = ["-m", "pytest", "-p", "_objective_scoring_recorder", "-p", "no:cacheprovider"]
PYTEST_IMAGE = "FROM python:3.12-slim\nRUN pip install --no-cache-dir pytest\nWORKDIR /app\n"


@dataclass
class FakeEngine:
    bin: Path
    state: Path

    @property
    def status(self) -> EngineStatus:
        return find_engine(str(self.bin))

    def calls(self) -> list[list[str]]:
        path = self.state / "calls.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []

    def of(self, verb: str) -> list[list[str]]:
        return [call for call in self.calls() if call[0] == verb]

    def created(self) -> list[str]:
        return [call[call.index("--name") + 1] for call in self.of("create")]

    def live(self) -> list[str]:
        folder = self.state / "containers"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def logged(self, name: str) -> list[dict[str, Any]]:
        path = self.state / name
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []

    def fail(self, **faults: int) -> None:
        """Make the next N invocations of a verb fail (-1: every one): ``fail(rm=-1)``."""
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "faults.json").write_text(json.dumps(faults), encoding="utf-8")


@pytest.fixture
def engine(tmp_path: Path) -> FakeEngine:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state = tmp_path / "engine"
    (bin_dir / "docker").write_text(f"#!/bin/sh\nFAKE_ENGINE_STATE='{state}'\nexport FAKE_ENGINE_STATE\n"
                                    f"exec '{sys.executable}' '{FAKE}' \"$@\"\n", encoding="utf-8")  # fmt: skip
    (bin_dir / "docker").chmod(0o755)
    return FakeEngine(bin_dir, state)


def container_task(tmp_path: Path, fixture: str) -> Path:
    """A copy of a fixture task without host_ok: it needs its container."""
    task = tmp_path / fixture
    shutil.copytree(HARBOR / fixture, task)
    toml = task / "task.toml"
    toml.write_text("\n".join(line for line in toml.read_text(encoding="utf-8").splitlines()
                              if not line.startswith("host_ok")) + "\n", encoding="utf-8")  # fmt: skip
    return task


def make_task(root: Path, toml: str, files: dict[str, str]) -> Path:
    for name, text in {"task.toml": toml, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def position(calls: list[list[str]], predicate: Any) -> int:
    return next(i for i, call in enumerate(calls) if predicate(call))


def assert_every_container_removed(engine: FakeEngine) -> None:
    calls = engine.calls()
    for name in engine.created():
        removed = [i for i, call in enumerate(calls) if call == ["rm", "--force", name]]
        assert removed, f"{name} was never removed"
        assert all(name not in call for call in calls[removed[-1] + 1 :]), f"{name} used after its removal"
    assert engine.live() == []


# ---------------------------------------------------------------------------- the fixtures, in containers


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["fix-csv-total", "long-horizon-report"])
def test_the_fixture_tasks_run_in_the_engine(tmp_path: Path, engine: FakeEngine, fixture: str) -> None:
    task = container_task(tmp_path, fixture)
    spec = load_task(task)
    assert spec.needs_container and spec.network == {"agent": "no-network", "verifier": "no-network"}
    ledger = tmp_path / "ledger.sqlite"
    result = run_task(spec, RunOptions(solution=True, out=tmp_path / "out", ledger=ledger), engine=engine.status)

    assert (result.exit_code, result.valid, result.outcome, result.findings) == (EXIT_SOLVED, True, "valid", [])
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert (oracle.where, oracle.verifier, initial.where, initial.verifier) == (
        "container", "objective-scoring", "container", "objective-scoring")
    assert oracle.reward.solved and not initial.reward.solved
    assert oracle.envelope["score"]["resolved"] == "resolved"
    assert (oracle.container or {})["workdir"] == "/app" and (oracle.container or {})["python"] == "/usr/local/bin/python3"

    # the image: built once, from environment/ (the task's build context), tagged by its content
    context = task / "environment"
    [build] = engine.of("build")
    tag = build[2]
    assert build == ["build", "--tag", tag, "--file", str(context / "Dockerfile"), str(context)]
    assert tag.startswith(f"objective-harbor/{fixture}:")
    # one container a verification, no network (allow_internet = false), the recorder mounted read-only
    creates = engine.of("create")
    assert len(creates) == 2
    for create, label in zip(creates, ["initial", "oracle"]):
        name = create[2]
        assert name.startswith(f"objective-harbor-{label}-")
        tools = Path(create[create.index("--mount") + 1].split(",")[1].split("=", 1)[1])
        assert create == ["create", "--name", name, "--label", f"objective-scoring.harbor={_slug(spec.name)}",
                          "--network", "none", "--mount", f"type=bind,source={tools},target={C_TOOLS},readonly",
                          "--cpus", "1", "--memory", "512m", "--entrypoint", "sh", tag, "-c", "sleep infinity"]  # fmt: skip
    assert_every_container_removed(engine)
    initial_name, oracle_name = engine.created()
    calls = engine.calls()
    # the solution runs in the image's working directory, before the tests are copied in
    solve = position(calls, lambda c: c == ["exec", "--workdir", "/app", oracle_name, "bash", "/solution/solve.sh"])
    tests_in = position(calls, lambda c: c[0] == "cp" and c[-1] == f"{oracle_name}:/tests")
    assert solve < tests_in
    # the verifier: the image's pytest with the recorder; the environment in a 0600 env file, deleted after
    env_files = {item["path"]: item["mode"] for item in engine.logged("env-files.jsonl")}
    for name in (initial_name, oracle_name):
        [verifier] = [c for c in calls if c[0] == "exec" and name in c and "pytest" in c]
        # -i: the record's key goes to the recorder on standard input, never in the environment or the env file
        assert verifier[:5] == ["exec", "-i", "--workdir", "/app", "--env-file"] and "--env" not in verifier
        assert env_files[verifier[5]] == 0o600 and not Path(verifier[5]).exists()
        tail = verifier[verifier.index(name) + 1 :]
        assert tail[:5] == ["sh", "-c", tail[2], "sh", "/usr/local/bin/python3"]
        assert tail[5:11] == RECORDER_RUN and tail[-3:] == ["--rootdir", "/tests", "/tests/test_outputs.py"]

    # the ledger: one entry, kind harbor, in the task's metric space, with the engine's image
    assert result.ledger is not None and result.ledger["seq"] == 1 and verify(ledger).ok
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries())
    body = entry.data
    assert entry.kind == "harbor"
    assert (body["task"], body["mode"], body["where"], body["verifier"], body["outcome"], body["failure_class"]) == (
        spec.name, "oracle", "container", "objective-scoring", "valid", "none")
    assert body["metric_space"] == spec.metric_space and body["image"] == tag
    assert body["digests"]["image"].startswith("sha256:") and body["digests"]["task"] == result.task_digest
    assert {t["status"] for t in body["tests"]} == {"passed"} and body["initial"]["solved"] is False
    document = json.loads((tmp_path / "out" / "objective-scoring.json").read_text(encoding="utf-8"))
    assert document["ledger"]["seq"] == 1 and document["container"]["commands"][0][1] == "build"


def _slug(name: str) -> str:
    from pytest_objective_scoring.harbor import _slug as slug

    return slug(name)


@pytest.mark.slow
def test_a_working_state_replaces_the_image_working_directory(tmp_path: Path, engine: FakeEngine) -> None:
    task = container_task(tmp_path, "long-horizon-report")
    workdir = tmp_path / "app"
    workdir.mkdir()
    shutil.copy(HARBOR / "long-horizon-report" / "environment" / "sales.csv", workdir)
    (workdir / "report.md").write_text("# Sales report\n", encoding="utf-8")
    result = run_task(load_task(task), RunOptions(workdir=workdir, ledger=None), engine=engine.status)
    reward = result.verification.reward
    assert reward is not None and (reward.reward, reward.solved, reward.tier) == (0.5, False, "partial")
    assert result.exit_code == EXIT_NOT_SOLVED and result.failure_class == "solver" and result.ledger is None
    [name] = engine.created()
    calls = engine.calls()
    clear = position(calls, lambda c: c[:2] == ["exec", name] and c[-2:] == ["sh", "/app"])
    pushed = position(calls, lambda c: c[0] == "cp" and c[1].endswith("/workdir/app/.") and c[2] == f"{name}:/app")
    assert clear < pushed
    assert json.loads((workdir / "logs" / "verifier" / "reward.json").read_text())["tier"] == 1
    assert_every_container_removed(engine)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rm", "why"),
    [('echo "rm: cannot remove: Permission denied" >&2; exit 1', "exit status 1: rm: cannot remove: Permission denied"),
     ("exit 0", "exit status 1: /app/stale.txt is still there")],
    ids=["rm-fails", "rm-leaves-files"],
)
def test_a_working_directory_that_cannot_be_emptied_is_a_setup_failure(tmp_path: Path, engine: FakeEngine, rm: str,
                                                                       why: str) -> None:  # fmt: skip
    # The image's /app holds a file its USER may not remove: here an rm that refuses (or silently skips) it.
    task = make_task(tmp_path / "t", "", {
        **TRIVIAL,
        "environment/Dockerfile": PYTEST_IMAGE + "COPY stale.txt /app/\nCOPY rm /usr/local/bin/rm\n",
        "environment/stale.txt": "the image's own file\n",
        "environment/rm": f'#!/bin/sh\ncase "$*" in\n  */fs/app/*) {rm} ;;\nesac\nexec /bin/rm "$@"\n',
    })  # fmt: skip
    (task / "environment" / "rm").chmod(0o755)
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "done.txt").write_text("ok\n", encoding="utf-8")  # a working state that solves the task
    result = run_task(load_task(task), RunOptions(workdir=workdir, ledger=None), engine=engine.status)
    verification = result.verification
    assert (verification.status, verification.failure_class, verification.reward) == ("no_verdict", "setup", None)
    assert (result.exit_code, result.outcome, result.failure_class) == (EXIT_REFUSED, "infrastructure_failure", "setup")
    reason = verification.no_verdict_reason or ""
    assert reason.startswith("the image's working directory /app could not be emptied before the working state was "
                             f"copied in ({why})"), reason  # fmt: skip
    [name] = engine.created()
    assert not [c for c in engine.calls() if c[0] == "cp" and c[-1] == f"{name}:/app"]  # nothing copied over it
    assert not [c for c in engine.calls() if c[0] == "exec" and "pytest" in c]  # and nothing verified
    assert not (workdir / "logs" / "verifier" / "reward.txt").exists()
    assert_every_container_removed(engine)


# ---------------------------------------------------------------------------- the task's environment


@pytest.mark.slow
def test_the_task_environment_reaches_the_container_in_an_env_file_never_the_engine_client(
        tmp_path: Path, engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    secret = "s3cret-token-value"
    monkeypatch.setenv("OBJ_HARBOR_TOKEN", secret)
    toml = ('[verifier]\nenv = { DOCKER_HOST = "tcp://task.invalid:2375", CONTAINER_HOST = "ssh://task.invalid", '
            'TASK_TOKEN = "${OBJ_HARBOR_TOKEN}" }\n'
            '[solution]\nenv = { DOCKER_CONTEXT = "task-context", DOCKER_CONFIG = "/task/config", ANSWER = "ok" }\n')  # fmt: skip
    digest = hashlib.sha256(secret.encode()).hexdigest()
    task = make_task(tmp_path / "env", toml, {
        "environment/Dockerfile": PYTEST_IMAGE,
        "tests/test_outputs.py": ("import hashlib\nimport os\nfrom pathlib import Path\n\n"
                                  "def test_done():\n    assert Path('done.txt').read_text() == 'ok\\n'\n\n"
                                  "def test_env():\n    assert os.environ.get('DOCKER_HOST') == 'tcp://task.invalid:2375'\n"
                                  "    token = os.environ.get('TASK_TOKEN', '').encode()\n"
                                  f"    assert hashlib.sha256(token).hexdigest() == '{digest}'\n"),
        "solution/solve.sh": 'test "$DOCKER_CONTEXT" = task-context && echo "$ANSWER" > done.txt\n',
    })  # fmt: skip
    out = tmp_path / "out"
    result = run_task(load_task(task), RunOptions(solution=True, out=out, keep=True), engine=engine.status)
    assert result.exit_code == EXIT_SOLVED and result.valid, result.to_dict()
    initial = result.initial
    assert initial is not None and initial.reward is not None and initial.reward.passed == 1  # test_env passed there too
    # the engine client always ran in this process's environment: no task value redirected it
    task_values = {"tcp://task.invalid:2375", "ssh://task.invalid", "task-context", "/task/config"}
    clients = engine.logged("client-env.jsonl")
    assert len(clients) == len(engine.calls())
    for client in clients:
        assert not task_values & set(client["engine"].values()), client
        assert not {"TASK_TOKEN", "ANSWER"} & set(client["names"]), client["verb"]
    # the values: in 0600 files of the run's workspace, deleted after each command; never on a command line
    workspace = Path(result.workspace or "")
    with_file = [c for c in engine.of("exec") if "--env-file" in c]
    assert len(with_file) == 3  # the initial state's verifier, the solution, the oracle's verifier
    for call in with_file:
        path = Path(call[call.index("--env-file") + 1])
        assert path.parent == workspace and not path.exists()
        assert "--env" not in call
    assert [item["mode"] for item in engine.logged("env-files.jsonl")] == [0o600] * 3
    assert not list(workspace.glob("env-*"))
    assert secret not in json.dumps(engine.calls()) and secret not in (out / "objective-scoring.json").read_text()
    assert secret not in json.dumps(result.container)
    shutil.rmtree(workspace)
    assert_every_container_removed(engine)


# ---------------------------------------------------------------------------- the network, phase by phase


TRIVIAL = {
    "environment/Dockerfile": PYTEST_IMAGE,
    "tests/test_outputs.py": "from pathlib import Path\n\ndef test_done():\n    assert Path('done.txt').read_text() == 'ok\\n'\n",
    "solution/solve.sh": "echo ok > done.txt\n",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("toml", "initial_network", "oracle_network", "switch"),
    [
        ("", "bridge", "bridge", None),  # Harbor's default: public
        ('[agent]\nnetwork_mode = "public"\n[verifier]\nnetwork_mode = "no-network"\n', "none", "bridge", "disconnect"),
        ('[environment]\nnetwork_mode = "no-network"\n[verifier]\nnetwork_mode = "public"\n', "bridge", "bridge", "disconnect-then-connect"),
    ],
    ids=["public", "verifier-offline", "agent-offline"],
)
def test_each_phase_gets_the_task_network(tmp_path: Path, engine: FakeEngine, toml: str, initial_network: str,
                                          oracle_network: str, switch: str | None) -> None:  # fmt: skip
    task = make_task(tmp_path / "net", toml, TRIVIAL)
    result = run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    assert result.exit_code == EXIT_SOLVED and result.valid
    creates = engine.of("create")
    assert [c[c.index("--network") + 1] for c in creates] == [initial_network, oracle_network]
    oracle = engine.created()[1]
    calls = engine.calls()
    solve = position(calls, lambda c: c[-1] == "/solution/solve.sh")
    verifier = position(calls, lambda c: c[0] == "exec" and oracle in c and "pytest" in c)
    switches = [(i, c) for i, c in enumerate(calls) if c[0] == "network"]
    if switch is None:
        assert switches == []
    elif switch == "disconnect":  # the solution had the network; the verifier does not
        assert [c for _, c in switches] == [["network", "disconnect", "bridge", oracle]]
        assert solve < switches[0][0] < verifier
    else:  # the solution ran offline, the verifier online
        assert [c for _, c in switches] == [["network", "disconnect", "bridge", oracle],
                                            ["network", "connect", "bridge", oracle]]  # fmt: skip
        assert switches[0][0] < solve < switches[1][0] < verifier
    assert_every_container_removed(engine)


# ---------------------------------------------------------------------------- an image without pytest


@pytest.mark.slow
@pytest.mark.parametrize(
    ("toml", "script", "written"),
    [
        ("", 'if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
         ("reward.txt", "1\n")),
        ('[verifier]\nreward = "share"\nthreshold = 0.95\n',
         ('if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then r=0.96; else r=0.2; fi\n'
          'echo "{\\"reward\\": $r, \\"checks\\": 25}" > /logs/verifier/reward.json\n'),
         ("reward.json", '{\n  "reward": 0.96,\n  "solved": 1\n}\n')),
    ],
    ids=["binary-reward-txt", "share-reward-json"],
)
def test_an_image_without_pytest_is_verified_by_its_test_script(tmp_path: Path, engine: FakeEngine, toml: str,
                                                                 script: str, written: tuple[str, str]) -> None:  # fmt: skip
    task = make_task(tmp_path / "script", toml, {
        "environment/Dockerfile": "FROM alpine:3.20\nWORKDIR /app\nCOPY question.txt /app/\n",
        "environment/question.txt": "six times seven\n",
        "tests/test.sh": "#!/bin/bash\n" + script,
        "tests/test_outputs.py": "def test_answer():\n    assert open('answer.txt').read().strip() == '42'\n",
        "solution/solve.sh": "echo 42 > answer.txt\n",
    })  # fmt: skip
    ledger = tmp_path / "ledger.sqlite"
    out = tmp_path / "out"
    result = run_task(load_task(task), RunOptions(solution=True, out=out, ledger=ledger), engine=engine.status)
    assert result.exit_code == EXIT_SOLVED and result.valid, result.to_dict()
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert (oracle.verifier, initial.verifier) == ("tests/test.sh", "tests/test.sh")
    assert oracle.reward.solved and not initial.reward.solved and oracle.reward.total is None
    assert oracle.envelope["status"] == "verdict" and oracle.envelope["score"] is None
    name = engine.created()[1]
    [script_run] = [c for c in engine.calls() if c[-3:] == [name, "bash", "/tests/test.sh"]]
    assert script_run[:4] == ["exec", "--workdir", "/app", "--env-file"] and len(script_run) == 8
    assert not [c for c in engine.calls() if "pytest" in c and c[0] == "exec" and "-m" in c]  # the probe found none
    assert (out / written[0]).read_text() == written[1]
    assert verify(ledger).ok
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    assert (entry.data["verifier"], entry.data["tests"], entry.data["solved"]) == ("tests/test.sh", [], True)
    assert_every_container_removed(engine)


def test_script_reward_reads_harbor_reward_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()

    def read(rules: RewardRules, **files: str) -> tuple[Any, str | None]:
        for name in ("reward.txt", "reward.json"):
            (logs / name).unlink(missing_ok=True)
        for name, text in files.items():
            (logs / name.replace("_", ".")).write_text(text, encoding="utf-8")
        return script_reward(rules, logs)

    binary, share = RewardRules(), RewardRules(kind="share", threshold=0.95)
    tiers = RewardRules(tiers=(Tier("partial", ("test_a",)), Tier("complete", None)))
    one, _ = read(binary, reward_txt="1\n")
    assert one is not None and (one.metric_space, one.reward, one.solved, one.passed) == ("binary", 1.0, True, None)
    assert one.named() == {"reward": 1.0, "solved": 1}
    half, _ = read(binary, reward_txt="0.5")
    assert half is not None and (half.reward, half.solved) == (0.0, False)  # binary: 1 or 0, never 0.5
    huge, why = read(share, reward_json='{"reward": ' + "9" * 400 + "}")
    assert huge is None and "too large" in str(why)
    named, _ = read(share, reward_json='{"reward": 0.97, "checks": 30}', reward_txt="0")  # reward.json first
    assert named is not None and (named.reward, named.solved, named.threshold) == (0.97, True, 0.95)
    only, _ = read(share, reward_json='{"accuracy": 0.5}')
    assert only is not None and (only.reward, only.solved) == (0.5, False)
    tiered, _ = read(tiers, reward_json='{"reward": 0.5, "tier": 1}')
    assert tiered is not None and (tiered.tier, tiered.reward, tiered.solved, dict(tiered.tiers)) == (
        "partial", 0.5, False, {"partial": True, "complete": False})
    for files, problem in [
        ({}, "tests/test.sh wrote no reward (/logs/verifier/reward.txt or reward.json)"),
        ({"reward_txt": "yes"}, "reward.txt: expected one number, got 'yes'"),
        ({"reward_txt": "1.5"}, "expected a reward in [0, 1], got 1.5"),
        ({"reward_json": "{"}, "/logs/verifier/reward.json that is not JSON"),
        ({"reward_json": '{"a": 1, "b": 0}'}, "without a 'reward' key (keys: a, b)"),
        ({"reward_json": '{"reward": "high"}'}, "expected an object of named numbers"),
    ]:
        reward, why = read(binary, **files)
        assert reward is None and why is not None and problem in why, (files, why)
    reward, why = read(tiers, reward_txt="1")
    assert reward is None and "without the tier reached ('tier': 0 to 2" in str(why)


# ---------------------------------------------------------------------------- failures, timeouts, interrupts


@pytest.mark.slow
def test_a_verifier_timeout_in_the_container_is_an_infrastructure_failure(tmp_path: Path, engine: FakeEngine) -> None:
    task = make_task(tmp_path / "slow", "[verifier]\ntimeout_sec = 1\n", {
        "environment/Dockerfile": PYTEST_IMAGE,
        "tests/test_outputs.py": "import time\n\ndef test_slow():\n    time.sleep(60)\n",
    })  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    ledger = tmp_path / "ledger.sqlite"
    result = run_task(load_task(task), RunOptions(workdir=workdir, ledger=ledger), engine=engine.status)
    verification = result.verification
    assert (verification.status, verification.failure_class, verification.where) == ("no_verdict", "verifier", "container")
    assert verification.no_verdict_reason == ("the verifier timed out after 1s; the initial state gives no verdict "
                                              "either (the verifier timed out after 1s)")  # fmt: skip
    assert (result.exit_code, result.outcome, result.failure_class) == (EXIT_REFUSED, "infrastructure_failure", "verifier")
    out = workdir / "logs" / "verifier"
    assert not (out / "reward.txt").exists() and not (out / "reward.json").exists()
    assert_every_container_removed(engine)
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    assert (entry.data["outcome"], entry.data["failure_class"], entry.data["solved"], entry.data["status"]) == (
        "infrastructure_failure", "verifier", None, "no_verdict")


@pytest.mark.slow
def test_a_failing_build_is_a_setup_failure_and_runs_nothing(tmp_path: Path, engine: FakeEngine) -> None:
    task = make_task(tmp_path / "broken", "", {**TRIVIAL, "environment/Dockerfile": "FROM python:3.12\nRUN false\n"})
    result = run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    assert (result.exit_code, result.outcome, result.failure_class, result.valid) == (
        EXIT_REFUSED, "infrastructure_failure", "setup", None)
    reason = result.verification.no_verdict_reason or ""
    assert reason.startswith("the container engine failed: building the image from environment/Dockerfile failed "
                             "(exit status 1): RUN false")  # fmt: skip
    assert engine.of("create") == [] and [c[0] for c in engine.calls()] == ["info", "build"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["objective-scoring.json", "test-stdout.txt"]


@pytest.mark.slow
def test_an_interrupt_still_removes_the_container(tmp_path: Path, engine: FakeEngine,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real = testrun.run_process

    def interrupted(command: list[str], **kwargs: Any) -> Any:
        if command[-1] == "/solution/solve.sh":
            raise KeyboardInterrupt
        return real(command, **kwargs)

    monkeypatch.setattr(testrun, "run_process", interrupted)
    task = make_task(tmp_path / "t", "", TRIVIAL)
    with pytest.raises(KeyboardInterrupt):
        run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    assert len(engine.created()) == 2  # the initial state's, then the oracle's: both removed
    assert_every_container_removed(engine)


@pytest.mark.slow
@pytest.mark.parametrize("failures", [1, -1], ids=["first-rm-fails", "every-rm-fails"])
def test_a_container_is_kept_until_removed_and_reported_when_it_cannot_be(tmp_path: Path, engine: FakeEngine,
                                                                          failures: int) -> None:  # fmt: skip
    engine.fail(rm=failures)
    task = make_task(tmp_path / "t", "", TRIVIAL)
    result = run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    assert result.exit_code == EXIT_SOLVED and result.valid  # the verdict stands: the runs ended
    created = engine.created()
    assert len(created) == 2
    left = (result.container or {})["not_removed"]
    if failures == 1:  # the initial state's container: its removal failed, and was tried again on the way out
        assert left == [] and engine.calls().count(["rm", "--force", created[0]]) == 2
        assert_every_container_removed(engine)
    else:
        assert [item["name"] for item in left] == created and engine.live() == sorted(created)
        for item in left:
            assert item["error"].startswith(f"`docker rm --force {item['name']}` exited with status 1: ")
            assert item["error"].endswith("device or resource busy")
    document = json.loads((tmp_path / "out" / "objective-scoring.json").read_text(encoding="utf-8"))
    assert document["container"]["not_removed"] == left


@pytest.mark.slow
def test_a_second_interrupt_during_a_removal_names_the_container_left(tmp_path: Path, engine: FakeEngine,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real_run, real_call = testrun.run_process, TaskContainer._call

    def interrupted(command: list[str], **kwargs: Any) -> Any:
        if command[-1] == "/solution/solve.sh":
            raise KeyboardInterrupt
        return real_run(command, **kwargs)

    def call(self: TaskContainer, *args: str, **kwargs: Any) -> Any:
        if args[:2] == ("rm", "--force") and "-oracle-" in args[2]:
            raise KeyboardInterrupt  # Ctrl-C again while the oracle's container is being removed
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(testrun, "run_process", interrupted)
    monkeypatch.setattr(TaskContainer, "_call", call)
    task = make_task(tmp_path / "t", "", TRIVIAL)
    with pytest.raises(Interrupted) as info:
        run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    initial, oracle = engine.created()
    assert info.value.not_removed == [{"name": oracle, "error": "its removal was interrupted"}]
    assert info.value.engine == "docker" and engine.live() == [oracle]
    assert ["rm", "--force", initial] in engine.calls()


@pytest.mark.slow
def test_a_script_verdict_does_not_depend_on_the_truth_value_of_its_reward(tmp_path: Path, engine: FakeEngine,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(Reward, "__bool__", lambda self: self.solved, raising=False)  # an unsolved reward is falsy
    task = make_task(tmp_path / "script", "", {
        "environment/Dockerfile": "FROM alpine:3.20\nWORKDIR /app\n",
        "tests/test.sh": "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
        "tests/test_outputs.py": "def test_answer():\n    assert False\n",
    })  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    result = run_task(load_task(task), RunOptions(workdir=workdir, ledger=None), engine=engine.status)
    verification = result.verification
    assert (verification.verifier, verification.status, verification.solved) == ("tests/test.sh", "verdict", False)
    assert verification.failure_class is None and result.to_dict()["verification"]["failure_class"] is None
    assert (result.exit_code, result.failure_class) == (EXIT_NOT_SOLVED, "solver")


@pytest.mark.slow
def test_a_docker_image_task_uses_the_image_and_app_for_its_working_directory(tmp_path: Path, engine: FakeEngine) -> None:
    task = make_task(tmp_path / "img", '[environment]\ndocker_image = "ghcr.io/example/task:1"\n',
                     {k: v for k, v in TRIVIAL.items() if not k.startswith("environment/")})  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "done.txt").write_text("ok\n", encoding="utf-8")
    result = run_task(load_task(task), RunOptions(workdir=workdir), engine=engine.status)
    assert result.exit_code == EXIT_SOLVED and result.verification.solved
    assert engine.of("build") == []
    [create] = engine.of("create")
    [name] = engine.created()
    assert create[-4:] == ["sh", "ghcr.io/example/task:1", "-c", "sleep infinity"]
    assert ["exec", name, "mkdir", "-p", "/app"] in engine.calls()  # the image has no WORKDIR: Harbor's /app
    assert_every_container_removed(engine)


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("toml", "files", "expected"),
    [
        ("", {"environment/Dockerfile": "FROM alpine\n", "environment/docker-compose.yaml": "services: {}\n"},
         "environment/docker-compose.yaml makes it a multi-container (compose) task"),
        ('[verifier]\nnetwork_mode = "allowlist"\n', {"environment/Dockerfile": "FROM alpine\n"},
         'network_mode = "allowlist" (the verifier phase) needs a host allowlist'),
    ],
    ids=["compose", "allowlist"],
)
def test_what_an_engine_cannot_run_is_refused_before_anything_runs(tmp_path: Path, toml: str, files: dict[str, str],
                                                                   expected: str) -> None:  # fmt: skip
    task = make_task(tmp_path / "t", toml, {**files, "tests/test_outputs.py": "def test_a():\n    pass\n"})
    usable = EngineStatus("docker", "/nonexistent/docker", True, "docker at /nonexistent/docker answers")
    with pytest.raises(NeedsContainer, match="run the task with Harbor") as info:
        run_task(load_task(task), RunOptions(workdir=tmp_path), engine=usable)
    assert expected in str(info.value)


@pytest.mark.slow
def test_an_engine_that_does_not_answer_is_still_a_clear_refusal(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "docker").write_text(f"#!/bin/sh\necho \"$@\" >> '{calls}'\n"
                                    "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock' >&2\n"
                                    "exit 1\n", encoding="utf-8")  # fmt: skip
    (bin_dir / "docker").chmod(0o755)
    task = make_task(tmp_path / "t", "", TRIVIAL)
    with pytest.raises(NeedsContainer) as info:
        run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=find_engine(str(bin_dir)))
    assert "needs a container (environment/Dockerfile)" in str(info.value)
    assert "does not answer: Cannot connect to the Docker daemon" in str(info.value)
    assert calls.read_text() == "info\n" and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------- the command line


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args], check=False, capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)  # fmt: skip


@pytest.mark.slow
def test_cli_check_and_run_through_the_engine(tmp_path: Path, engine: FakeEngine) -> None:
    task = container_task(tmp_path, "fix-csv-total")
    check = cli("harbor", "check", str(task), "--json", env=engine.env(), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    assert (report["runs_here"], report["runs_in"], report["engine"]["usable"]) == (True, "container", True)
    table = cli("harbor", "check", str(task), env=engine.env(), cwd=tmp_path)
    assert "runs in the container engine" in table.stdout and "yes, in a container" in table.stdout

    workdir = tmp_path / "wd"
    shutil.copytree(task / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
    run = cli("harbor", "run", str(task), "--workdir", str(workdir), "--benchmark", "demo-bench", env=engine.env(),
              cwd=tmp_path)  # fmt: skip
    assert run.returncode == EXIT_NOT_SOLVED, run.stderr
    assert "container: docker, image objective-harbor/fix-csv-total:" in run.stdout
    assert "workdir: verified by this project's verifier, in the container" in run.stdout
    assert "ledger: entry 1 appended to .objective-scoring/ledger.sqlite" in run.stdout
    with Ledger(tmp_path / ".objective-scoring" / "ledger.sqlite") as opened:
        [entry] = list(opened.entries())
    assert (entry.kind, entry.data["benchmark"], entry.data["outcome"]) == ("harbor", "demo-bench", "not_solved")
    assert_every_container_removed(engine)


@pytest.mark.slow
@pytest.mark.parametrize("rm_fails", [False, True], ids=["removed", "rm-fails"])
def test_cli_sigterm_mid_solution_removes_every_container(tmp_path: Path, engine: FakeEngine, rm_fails: bool) -> None:
    import signal
    import time

    if rm_fails:
        engine.fail(rm=-1)
    task = make_task(tmp_path / "t", "", {**TRIVIAL, "solution/solve.sh": "sleep 60\necho ok > done.txt\n"})
    proc = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", "harbor", "run", str(task), "--solution"],
                            cwd=tmp_path, env=engine.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not any(c[-1] == "/solution/solve.sh" for c in engine.calls()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert len(engine.created()) == 2
    assert not (tmp_path / ".objective-scoring" / "ledger.sqlite").exists()
    if not rm_fails:
        assert "interrupted; the tests were stopped and every container removed; nothing was recorded" in stderr
        assert_every_container_removed(engine)
        return
    assert "every container removed" not in stderr
    assert ("interrupted; the tests were stopped but 2 container(s) could not be removed; nothing was recorded"
            in stderr)  # fmt: skip
    for name in engine.created():
        assert f"container {name} was NOT removed (" in stderr and f"remove it with `docker rm --force {name}`" in stderr
    assert engine.live() == sorted(engine.created())


@pytest.mark.slow
def test_cli_reports_a_container_it_could_not_remove(tmp_path: Path, engine: FakeEngine) -> None:
    engine.fail(rm=-1)
    task = make_task(tmp_path / "t", "", TRIVIAL)
    run = cli("harbor", "run", str(task), "--solution", "--no-ledger", "--json", env=engine.env(), cwd=tmp_path)
    assert run.returncode == EXIT_SOLVED, run.stderr
    left = json.loads(run.stdout)["container"]["not_removed"]
    assert [item["name"] for item in left] == engine.created() and engine.live() == sorted(engine.created())
    for item in left:
        assert (f"objective-score harbor: container {item['name']} was NOT removed ({item['error']}); remove it with "
                f"`docker rm --force {item['name']}`") in run.stderr  # fmt: skip
