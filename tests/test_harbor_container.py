"""Harbor and Terminal-Bench tasks that need a container, run through a container engine.

The container path runs against the REAL engine this machine has: podman with the local base image
``localhost/objective-base:bookworm`` (``bash /work/shared/tools/container-engine.sh`` sets it up;
without it these tests skip and say why). Real tasks (``fixtures/harbor/real``: Terminal-Bench 1 and
Harbor cookbook tasks, their base images replaced by the local one with ``--base-image``) run end to
end: the oracle solves them, the initial state does not. Images are tagged by the content of their
build, so a second run (and every test after the first) reuses them.

The simulated engine (``fixtures/harbor/fake_engine.py``, a ``docker`` stand-in first on PATH) is kept
only for faults a real engine cannot be made to show: a removal that fails, an engine that does not
answer, a working directory that cannot be emptied, what the engine client's own environment held.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
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
    KEEP_ALIVE,
    EngineStatus,
    HarborRun,
    Interrupted,
    NeedsContainer,
    Refused,
    Reward,
    RewardRules,
    RunOptions,
    TaskContainer,
    TaskError,
    Tier,
    find_engine,
    load_task,
    refusal,
    run_task,
    script_reward,
)
from pytest_objective_scoring.harbor import in_container
from pytest_objective_scoring.ledger import Ledger, verify

from .conftest import FIXTURES

HARBOR = FIXTURES / "harbor"
REAL = HARBOR / "real"
FAKE = HARBOR / "fake_engine.py"
BASE = "localhost/objective-base:bookworm"
BOOT = "/objective-scoring/tools/_objective_scoring_boot.py"  # pytest starts through the boot module, isolated
RECORDER_RUN = ["-I", "-S", "-B", BOOT, "-p", "_objective_scoring_recorder", "-p", "no:cacheprovider"]
BASE_IMAGE = f"FROM {BASE}\nWORKDIR /app\n"


def _podman() -> EngineStatus | None:
    found = shutil.which("podman")
    if found is None:
        return None
    try:
        done = subprocess.run([found, "image", "exists", BASE], check=False, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return EngineStatus("podman", found, True, f"podman at {found} answers") if done.returncode == 0 else None


PODMAN = _podman()
real_engine = pytest.mark.skipif(PODMAN is None, reason=f"needs podman and the local image {BASE} (set up by "
                                 "bash /work/shared/tools/container-engine.sh)")  # fmt: skip


def make_task(root: Path, toml: str, files: dict[str, str]) -> Path:
    return write_files(root, {"task.toml": toml, **files})


def write_files(root: Path, files: dict[str, str]) -> Path:
    """A folder of these files (a task, a working state)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def container_task(tmp_path: Path, fixture: str) -> Path:
    """A copy of a fixture task without host_ok: it needs its container."""
    task = tmp_path / fixture
    shutil.copytree(HARBOR / fixture, task)
    toml = task / "task.toml"
    toml.write_text("\n".join(line for line in toml.read_text(encoding="utf-8").splitlines()
                              if not line.startswith("host_ok")) + "\n", encoding="utf-8")  # fmt: skip
    return task


def real_task(tmp_path: Path, name: str) -> Path:
    """A copy of a real task of fixtures/harbor/real (a test may change it)."""
    task = tmp_path / Path(name).name
    shutil.copytree(REAL / name, task)
    return task


def commands(result: HarborRun, verb: str) -> list[list[str]]:
    """The engine commands a run gave (without the engine's path), of one verb."""
    return [c[1:] for c in (result.container or {})["commands"] if c[1] == verb]


def created(result: HarborRun) -> list[str]:
    return [c[c.index("--name") + 1] for c in commands(result, "create")]


def assert_no_container_left(result: HarborRun) -> None:
    assert PODMAN is not None and PODMAN.path is not None
    assert (result.container or {})["not_removed"] == []
    for name in created(result):
        gone = subprocess.run([PODMAN.path, "container", "exists", name], check=False, timeout=60)
        assert gone.returncode == 1, f"{name} is still there"


def real_run(task: Path, tmp_path: Path, **options: Any) -> HarborRun:
    options.setdefault("out", tmp_path / "out")
    options.setdefault("base_image", BASE)
    result = run_task(load_task(task), RunOptions(**options), engine=PODMAN)
    assert_no_container_left(result)
    return result


def position(calls: list[list[str]], predicate: Any) -> int:
    return next(i for i, call in enumerate(calls) if predicate(call))


# ---------------------------------------------------------------------------- (a) compose files of one service


@pytest.mark.slow
@real_engine
@pytest.mark.parametrize("name", ["hello-world", "sqlite-db-truncate"])
def test_terminal_bench_compose_tasks_run_like_dockerfile_tasks(tmp_path: Path, name: str) -> None:
    task = REAL / "terminal-bench" / name
    spec = load_task(task)
    assert spec.layout == "terminal-bench" and spec.container == ("Dockerfile", "docker-compose.yaml")
    assert spec.compose is not None and spec.compose.name == "client" and spec.refused == ()
    assert dict(spec.compose.environment) == {"TEST_DIR": "/tests"}  # TEST_DIR=${T_BENCH_TEST_DIR}, as its harness sets it
    assert [v.kind for v in spec.compose.volumes] == ["logs"] and spec.compose.build_context == task
    ledger = tmp_path / "ledger.sqlite"
    result = real_run(task, tmp_path, solution=True, ledger=ledger)

    assert (result.exit_code, result.valid, result.findings) == (EXIT_SOLVED, True, []), result.to_dict()
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert oracle.solved and not initial.solved and initial.reward.passed == 0
    assert (oracle.where, oracle.verifier) == ("container", "objective-scoring")  # run-tests.sh writes no reward
    assert (oracle.container or {})["workdir"] == "/app"
    box = result.container or {}
    assert box["base_image"]["replaced"][0].startswith("ghcr.io/laude-institute/t-bench/")
    assert box["base_image"]["image"] == BASE and box["base_image"]["workdir"] == "/app"
    # the compose service's environment reaches the container in an env file, on create
    for create in commands(result, "create"):
        assert "--env-file" in create and create[-4:] == ["sh", box["image"], "-c", KEEP_ALIVE]
    assert (tmp_path / "out" / "reward.txt").read_text() == "1\n"
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    assert entry.data["base_image"]["image"] == BASE and entry.data["outcome"] == "valid"


@pytest.mark.slow
@real_engine
def test_a_built_image_is_reused_while_its_content_is_unchanged(tmp_path: Path) -> None:
    task = real_task(tmp_path, "terminal-bench/hello-world")
    (task / "Dockerfile").write_text((task / "Dockerfile").read_text() + f"\n# {tmp_path.name}\n")  # a tag of its own
    assert PODMAN is not None
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    first = TaskContainer(load_task(task), PODMAN, tmp_path / "w1", base_image=BASE)
    first.prepare_image()
    second = TaskContainer(load_task(task), PODMAN, tmp_path / "w2", base_image=BASE)
    second.prepare_image()
    assert first.build is not None and second.build is not None and first.image == second.image
    assert (first.build["cached"], second.build["cached"]) == (False, True)
    assert [c[1] for c in second.commands] == ["image"]  # found by its tag: nothing built
    # only this name: without one, untag removes every name of the image, and another task's build
    # of the same layers (another test, at the same time) would lose its own
    subprocess.run([PODMAN.path or "podman", "untag", first.image or "", first.image or ""], check=False, capture_output=True)


@pytest.mark.slow
@real_engine
def test_a_compose_service_gets_its_volumes_environment_and_hosts(tmp_path: Path) -> None:
    task = real_task(tmp_path, "terminal-bench/hello-world")
    (task / "data").mkdir()
    (task / "data" / "seed.txt").write_text("seed\n")
    (task / "ro").mkdir()
    (task / "ro" / "notes.txt").write_text("read only\n")
    (task / "docker-compose.yaml").write_text(textwrap.dedent("""\
        services:
          client:
            build:
              dockerfile: Dockerfile
            image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
            container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
            command: [ "sh", "-c", "sleep infinity" ]
            environment:
              - TEST_DIR=${T_BENCH_TEST_DIR}
              - GREETING=${OBJ_HARBOR_GREETING:-hello}
            extra_hosts:
              - "example.test:10.1.2.3"
            tmpfs:
              - /scratch
            volumes:
              - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
              - ./data:/app/data
              - ./ro:/opt/ro:ro
        """))  # fmt: skip
    (task / "tests" / "test_outputs.py").write_text(textwrap.dedent("""\
        import os
        from pathlib import Path

        def test_hello():
            assert Path("/app/hello.txt").read_text().strip() == "Hello, world!"

        def test_the_service_settings():
            assert Path("/app/data/seed.txt").read_text() == "seed\\n"
            assert Path("/opt/ro/notes.txt").read_text() == "read only\\n"
            assert os.environ["GREETING"] == "hello" and os.environ["TEST_DIR"] == "/tests"
            assert "10.1.2.3" in Path("/etc/hosts").read_text()
            assert os.path.ismount("/scratch")
        """))  # fmt: skip
    (task / "solution.sh").write_text('echo "Hello, world!" > hello.txt\necho changed > /app/data/seed.txt.new\n'
                                      'touch /opt/ro/written 2>/dev/null && echo "wrote a read-only volume"\ntrue\n')  # fmt: skip
    result = real_run(task, tmp_path, solution=True)
    assert result.exit_code == EXIT_SOLVED and result.valid, result.to_dict()
    initial = result.initial
    assert initial is not None and initial.reward is not None and (initial.reward.passed, initial.reward.total) == (1, 2)
    assert "wrote a read-only volume" not in (result.solve or {})["output_tail"]
    assert sorted(p.name for p in (task / "data").iterdir()) == ["seed.txt"]  # the task directory is never written
    assert not (task / "ro" / "written").exists()
    create = commands(result, "create")[0]
    assert f"type=bind,source={task / 'ro'},target=/opt/ro,readonly" in create
    assert create[create.index("--add-host") + 1] == "example.test:10.1.2.3" and "--tmpfs" in create


def test_what_one_container_cannot_give_is_refused_naming_the_file_and_the_key(tmp_path: Path) -> None:
    task = real_task(tmp_path, "terminal-bench/hello-world")
    compose = (task / "docker-compose.yaml").read_text()
    usable = EngineStatus("podman", "/usr/bin/podman", True, "podman answers")
    cases = [
        (compose.replace("    volumes:\n", "    volumes:\n      - /etc:/host-etc\n"),
         "docker-compose.yaml: services.client.volumes[0]: binds /etc, a path of this machine"),
        (compose + "    ports:\n      - '8000:8000'\n", "docker-compose.yaml: services.client.ports: publishes ports"),
        (compose + "    privileged: true\n", "docker-compose.yaml: services.client.privileged: widens what"),
        (compose.replace('command: [ "sh", "-c", "sleep infinity" ]', "command: ['python', 'server.py']"),
         "services.client.command: runs ['python', 'server.py'] as the container's main process"),
        (compose + "  api:\n    image: python:3.12\n",
         "docker-compose.yaml: services: defines 2 services (client, api): a multi-container task"),
        (compose + "    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n",
         "services.client.deploy.resources.reservations.devices: reserves devices (GPUs): GPU tasks cannot run here"),
        (compose + "    frobnicate: 1\n", "services.client.frobnicate: not a compose service key"),
    ]  # fmt: skip
    for text, expected in cases:
        (task / "docker-compose.yaml").write_text(text)
        spec = load_task(task)
        why = refusal(spec, usable, BASE)
        assert why is not None and expected in why, (expected, why)
        with pytest.raises(Refused, match="asks for what objective-score harbor cannot give it"):
            run_task(spec, RunOptions(solution=True, out=tmp_path / "out", base_image=BASE), engine=usable)
    assert not (tmp_path / "out").exists()
    (task / "docker-compose.yaml").write_text(compose.replace("${T_BENCH_TEST_DIR}", "${OBJ_HARBOR_UNSET_DIR}"))
    with pytest.raises(TaskError, match=r"docker-compose\.yaml: services\.client\.environment\[0\]: "
                       r"\$\{OBJ_HARBOR_UNSET_DIR\} is not set"):  # fmt: skip
        load_task(task)


# ---------------------------------------------------------------------------- (b) the task's test script decides


@pytest.mark.slow
@real_engine
def test_a_task_test_script_decides_its_reward_with_every_dimension(tmp_path: Path) -> None:
    task = REAL / "harbor-cookbook" / "multi-reward"
    ledger = tmp_path / "ledger.sqlite"
    out = tmp_path / "out"
    result = real_run(task, tmp_path, solution=True, ledger=ledger)
    assert (result.exit_code, result.valid) == (EXIT_SOLVED, True), result.to_dict()
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert (oracle.verifier, oracle.reward.metric_space, result.metric_space) == ("tests/test.sh", "named_rewards",
                                                                                  "named_rewards")  # fmt: skip
    assert dict(oracle.reward.dimensions) == {"correctness": 1.0, "performance": 1.0} and oracle.solved
    assert dict(initial.reward.dimensions) == {"correctness": 0.0, "performance": 0.0} and not initial.solved
    # Harbor reads the file the script wrote: both dimensions, as written, and no reward.txt beside it
    assert json.loads((out / "reward.json").read_text()) == {"correctness": 1, "performance": 1}
    assert not (out / "reward.txt").exists()
    # this project's verifier ran the same tests as a cross-check, and agrees
    cross = oracle.cross_check or {}
    assert (cross["agrees"], cross["reward"]["tests_passed"], cross["reward"]["tests_total"]) == (True, 8, 8)
    assert (initial.cross_check or {})["solved"] is False
    document = json.loads((out / "objective-scoring.json").read_text())
    assert document["metric_space"] == "named_rewards" and document["verification"]["script"]["decides"] is True
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    assert entry.data["metric_space"] == "named_rewards"
    assert entry.data["reward"]["dimensions"] == {"correctness": 1.0, "performance": 1.0}
    assert entry.data["cross_check"]["agrees"] is True and entry.data["script"]["decides"] is True


@pytest.mark.slow
@real_engine
@pytest.mark.parametrize(
    ("script", "status", "solved", "verifier"),
    [
        ("echo 1 > /logs/verifier/reward.txt\n", "verdict", True, "tests/test.sh"),  # decides, against the tests
        ("echo 'checked, no reward written'\n", "verdict", False, "objective-scoring"),  # writes none: ours decides
        ("echo '{\"reward\": \"high\"}' > /logs/verifier/reward.json\n", "no_verdict", None, "tests/test.sh"),
    ],
    ids=["script-says-solved", "script-writes-no-reward", "script-writes-a-malformed-reward"],
)
def test_the_script_reward_decides_whenever_it_writes_one(tmp_path: Path, script: str, status: str,
                                                           solved: bool | None, verifier: str) -> None:  # fmt: skip
    task = make_task(tmp_path / "t", "", {
        "environment/Dockerfile": BASE_IMAGE,
        "tests/test.sh": "#!/bin/bash\n" + script,
        "tests/test_outputs.py": "from pathlib import Path\n\ndef test_done():\n    assert Path('done.txt').exists()\n",
    })  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    result = real_run(task, tmp_path, workdir=workdir, base_image=None, out=None)
    run = result.verification
    assert (run.status, run.verifier) == (status, verifier)
    assert (run.solved if status == "verdict" else None) == solved
    if solved:  # the script said solved while the test failed: the script decides, the disagreement is said
        cross = run.cross_check or {}
        assert cross["agrees"] is False and "the script's reward decides" in cross["note"]
        assert (workdir / "logs" / "verifier" / "reward.txt").read_text() == "1\n"
    elif status == "verdict":
        assert (run.script or {})["note"] == "tests/test.sh wrote no reward: this project's verifier decides"
        assert (workdir / "logs" / "verifier" / "reward.txt").read_text() == "0\n"
    else:
        assert "expected an object of named numbers" in (run.no_verdict_reason or "")
        assert result.exit_code == EXIT_REFUSED and run.failure_class == "verifier"


@pytest.mark.slow
@real_engine
@pytest.mark.parametrize(
    ("toml", "script", "written"),
    [
        ("", 'if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
         ("reward.txt", "1\n")),
        ('[verifier]\nreward = "share"\nthreshold = 0.95\n',
         ('if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then r=0.96; else r=0.2; fi\n'
          'echo "{\\"reward\\": $r, \\"checks\\": 25}" > /logs/verifier/reward.json\n'),
         ("reward.json", '{"reward": 0.96, "checks": 25}\n')),
    ],
    ids=["binary-reward-txt", "share-reward-json"],
)
def test_an_image_without_pytest_is_verified_by_its_test_script_alone(tmp_path: Path, toml: str, script: str,
                                                                      written: tuple[str, str]) -> None:  # fmt: skip
    no_pytest = BASE_IMAGE + "RUN rm -rf /usr/lib/python3/dist-packages/pytest* /usr/lib/python3/dist-packages/_pytest\n"
    task = make_task(tmp_path / "script", toml, {
        "environment/Dockerfile": no_pytest + "COPY question.txt /app/\n",
        "environment/question.txt": "six times seven\n",
        "tests/test.sh": "#!/bin/bash\n" + script,
        "tests/test_outputs.py": "def test_answer():\n    assert open('answer.txt').read().strip() == '42'\n",
        "solution/solve.sh": "echo 42 > answer.txt\n",
    })  # fmt: skip
    ledger = tmp_path / "ledger.sqlite"
    result = real_run(task, tmp_path, solution=True, ledger=ledger, base_image=None)
    assert result.exit_code == EXIT_SOLVED and result.valid, result.to_dict()
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert (oracle.verifier, initial.verifier) == ("tests/test.sh", "tests/test.sh")
    assert oracle.reward.solved and not initial.reward.solved and oracle.reward.total is None
    assert oracle.envelope["status"] == "verdict" and oracle.envelope["score"] is None and oracle.cross_check is None
    assert (oracle.container or {})["python"] is None  # the probe found no pytest: no cross-check
    assert (tmp_path / "out" / written[0]).read_text() == written[1]
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    assert (entry.data["verifier"], entry.data["tests"], entry.data["solved"]) == ("tests/test.sh", [], True)


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
    assert (dict(one.dimensions), one.source) == ({"reward": 1.0}, "/logs/verifier/reward.txt")
    half, _ = read(binary, reward_txt="0.5")
    assert half is not None and (half.reward, half.solved) == (0.5, False)  # as the script wrote it; solved at 1
    huge, why = read(share, reward_json='{"reward": ' + "9" * 400 + "}")
    assert huge is None and "too large" in str(why)
    first, _ = read(share, reward_json='{"reward": 0.97, "checks": 30}', reward_txt="0")  # reward.txt first, as Harbor
    assert first is not None and (first.reward, first.solved, first.source) == (0.0, False, "/logs/verifier/reward.txt")
    named, _ = read(share, reward_json='{"reward": 0.97, "checks": 30}')
    assert named is not None and (named.reward, named.solved, named.threshold) == (0.97, True, 0.95)
    assert dict(named.dimensions) == {"reward": 0.97, "checks": 30.0}
    only, _ = read(share, reward_json='{"accuracy": 0.5}')
    assert only is not None and (only.reward, only.solved) == (0.5, False)
    dims, _ = read(binary, reward_json='{"correctness": 1, "performance": 0}')
    assert dims is not None and (dims.metric_space, dims.reward, dims.solved, dims.threshold) == (
        "named_rewards", 0.0, False, 1.0)
    both, _ = read(binary, reward_json='{"correctness": 1, "performance": 1, "runtime_sec": 1.23}')
    assert both is not None and both.solved and dict(both.dimensions)["runtime_sec"] == 1.23
    tiered, _ = read(tiers, reward_json='{"reward": 0.5, "tier": 1}')
    assert tiered is not None and (tiered.tier, tiered.reward, tiered.solved, dict(tiered.tiers)) == (
        "partial", 0.5, False, {"partial": True, "complete": False})
    for files, problem in [
        ({}, "tests/test.sh wrote no reward (/logs/verifier/reward.txt or reward.json)"),
        ({"reward_txt": "yes"}, "reward.txt: expected one number, got 'yes'"),
        ({"reward_txt": "nan"}, "expected finite numbers, got reward = nan"),
        ({"reward_json": "{"}, "/logs/verifier/reward.json that is not JSON"),
        ({"reward_json": '{"reward": "high"}'}, "expected an object of named numbers"),
    ]:
        reward, why = read(binary, **files)
        assert reward is None and why is not None and problem in why, (files, why)
    reward, why = read(tiers, reward_txt="1")
    assert reward is None and "without the tier reached ('tier': 0 to 2" in str(why)


# ---------------------------------------------------------------------------- (c) every key honoured or refused


def _keys_of(data: dict[str, Any], toml: bool) -> set[str]:
    """Every key of a configuration file, spelled as the verifier names it (tables of names read whole)."""
    keys = set()
    for key, value in data.items():
        if isinstance(value, dict) and key in ("task", "metadata", "verifier", "agent", "solution", "environment"):
            for name, item in value.items():
                keys.add(f"[{key}] {name}" if toml else f"{key}.{name}")
                if name == "healthcheck" and isinstance(item, dict):
                    keys.update(f"[{key}] healthcheck.{sub}" for sub in item if sub not in (
                        "command", "interval_sec", "timeout_sec", "retries", "start_period_sec", "start_interval_sec"))
        else:
            keys.add(key)
    return keys


@pytest.mark.parametrize("name", ["harbor-cookbook/multi-step", "harbor-cookbook/multi-reward",
                                  "terminal-bench/hello-world", "terminal-bench/sqlite-db-truncate",
                                  "trimmed-terminal-bench/hello-world"])  # fmt: skip
def test_every_key_of_a_real_task_is_honoured_or_refused_never_ignored(name: str) -> None:
    import yaml

    from pytest_objective_scoring.harbor.task import _toml

    tomllib = _toml()

    spec = load_task(REAL / name)
    toml = spec.config_file.suffix == ".toml"
    raw = tomllib.loads(spec.config_file.read_text()) if toml else yaml.safe_load(spec.config_file.read_text())
    uses = {k.key: k for k in spec.keys if k.file == spec.config_file.name}
    assert set(uses) == _keys_of(raw, toml), name
    assert all(k.use in ("honoured", "informational", "refused") and k.detail for k in spec.keys)
    if name.endswith("multi-step"):  # a real task.toml with workdir, [environment.env], gpus = 0, mcp_servers = []
        assert (uses["[environment] workdir"].use, spec.workdir) == ("honoured", "/app")
        assert (uses["[environment] env"].use, dict(spec.environment_env)) == ("honoured", {
            "GREETER_PROJECT": "hello-multi-step-full"})  # fmt: skip
        assert uses["[environment] gpus"].use == "honoured" and uses["[environment] mcp_servers"].use == "informational"
        assert [k.key for k in spec.refused] == ["steps"]
        why = refusal(spec, None)
        assert why is not None and "task.toml: steps: a multi-step task (Harbor's [[steps]])" in why
    else:
        assert spec.refused == (), spec.refused
    if name.endswith("multi-reward"):
        assert uses["[environment] storage_mb"].use == "honoured" and spec.storage_mb == 10240


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("gpus = 1\ngpu_types = ['H100']", "task.toml: [environment] gpus: asks for 1 GPU(s): GPU tasks cannot run here"),
        ("frobnicate = true", "task.toml: [environment] frobnicate: not a key objective-score harbor knows"),
        ("mcp_servers = [{name = 'm', transport = 'sse', url = 'http://m:8000/sse'}]",
         "task.toml: [environment] mcp_servers: MCP servers for the agent"),
        ("network_mode = 'allowlist'", 'task.toml: [environment] network_mode: network_mode = "allowlist" needs'),
    ],
    ids=["gpus", "unknown-key", "mcp-servers", "allowlist"],
)
def test_a_key_this_machine_cannot_honour_refuses_the_task(tmp_path: Path, change: str, expected: str) -> None:
    task = real_task(tmp_path, "harbor-cookbook/multi-reward")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", f"[environment]\n{change}\n"))
    spec = load_task(task)
    usable = EngineStatus("podman", "/usr/bin/podman", True, "podman answers")
    why = refusal(spec, usable, BASE)
    assert why is not None and expected in why
    with pytest.raises(Refused) as info:
        run_task(spec, RunOptions(solution=True, out=tmp_path / "out", base_image=BASE), engine=usable)
    assert expected in str(info.value) and not (tmp_path / "out").exists()
    check = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "harbor", "check", str(task), "--json"],
                           check=False, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert check.returncode == EXIT_REFUSED, check.stderr
    assert expected in json.loads(check.stdout)["why_not"]


def test_sizes_with_units_are_read_and_must_agree(tmp_path: Path) -> None:
    task = real_task(tmp_path, "harbor-cookbook/multi-reward")
    toml = task / "task.toml"
    original = toml.read_text()
    toml.write_text(original.replace("memory_mb = 2048", 'memory = "2G"').replace("storage_mb = 10240", 'storage = "10G"'))
    spec = load_task(task)
    assert (spec.memory_mb, spec.storage_mb) == (2048, 10240)
    toml.write_text(original.replace("memory_mb = 2048", 'memory_mb = 512\nmemory = "2G"'))
    with pytest.raises(TaskError, match=r"task\.toml: \[environment\] memory: '2G' is 2048 MB, but \[environment\] "
                       r"memory_mb = 512"):  # fmt: skip
        load_task(task)
    toml.write_text(original.replace("memory_mb = 2048", 'memory = "lots"'))
    with pytest.raises(TaskError, match=r"\[environment\] memory: expected a size with a unit"):
        load_task(task)


ENVIRONMENT_TOML = """\
[verifier]
env = {{ PHASE = "verifier" }}
[solution]
env = {{ PHASE = "solution" }}
[environment]
workdir = "/work"
memory = "1G"
gpus = 0
storage_mb = {storage}
allow_internet = false
[environment.env]
GREETING = "${{OBJ_HARBOR_GREETING:-hello}}"
[environment.healthcheck]
command = "{healthcheck}"
interval_sec = 0.2
retries = 3
"""
ENVIRONMENT_TESTS = """\
import os
from pathlib import Path

def test_the_environment_keys():
    assert Path.cwd() == Path("/work") and Path("greeting.txt").read_text() == "hello solution\\n"
    assert (os.environ["GREETING"], os.environ["PHASE"]) == ("hello", "verifier")

def test_the_memory_limit():
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        if os.path.exists(path):
            assert Path(path).read_text().strip() == str(1024 ** 3)
            return
    raise AssertionError("no cgroup memory limit file")
"""


@pytest.mark.slow
@real_engine
@pytest.mark.parametrize("case", ["honoured", "healthcheck-fails", "storage-exceeded"])
def test_the_environment_keys_reach_the_container(tmp_path: Path, case: str) -> None:
    toml = ENVIRONMENT_TOML.format(storage=1 if case == "storage-exceeded" else 10240,
                                   healthcheck="test -d /nowhere" if case == "healthcheck-fails" else f"test -d {C_TOOLS}")  # fmt: skip
    solve = 'echo "$GREETING $PHASE" > greeting.txt\n' + ("head -c 3000000 /dev/zero > big.bin\n" if case ==
                                                           "storage-exceeded" else "")  # fmt: skip
    task = make_task(tmp_path / "env", toml, {"environment/Dockerfile": BASE_IMAGE, "tests/test_outputs.py": ENVIRONMENT_TESTS,
                                              "solution/solve.sh": solve})  # fmt: skip
    spec = load_task(task)
    assert (spec.workdir, spec.memory_mb, spec.healthcheck is not None) == ("/work", 1024, True)
    result = real_run(task, tmp_path, solution=True, base_image=None)
    box = result.container or {}
    if case == "healthcheck-fails":
        assert (result.exit_code, result.failure_class) == (EXIT_REFUSED, "setup")
        assert "the task's healthcheck (task.toml [environment] healthcheck) did not pass (3 failure(s) in a row" in (
            result.verification.no_verdict_reason or "")  # fmt: skip
        assert box["healthchecks"][0]["passed"] is False
        return
    create = commands(result, "create")[0]
    assert create[create.index("--memory") + 1] == "1024m" and "--env-file" in create
    assert [h["passed"] for h in box["healthchecks"]] == [True, True]
    if case == "honoured":
        assert result.exit_code == EXIT_SOLVED and result.valid, result.to_dict()
        assert all(0 < s["used_bytes"] < 10240 * 1024 * 1024 for s in box["storage"].values())
        return
    oracle = result.verification  # the solution wrote 3 MB where the task allows 1
    assert oracle.status == "verdict" and not oracle.solved and result.valid is False
    assert "beyond the task's storage limit ([environment] storage_mb = 1): nothing of it passes" in (oracle.attribution or "")


# ---------------------------------------------------------------------------- (d) container paths never on the host


def test_scripts_with_container_paths_never_run_on_the_host(tmp_path: Path) -> None:
    trimmed = REAL / "trimmed-terminal-bench" / "hello-world"  # a real copy with its container files left out
    spec = load_task(trimmed)
    assert spec.container == () and not spec.needs_container
    why = refusal(spec, None)
    assert why is not None and why.startswith("task hello-world never runs on the host, where a correct state would be "
                                              "graded not solved: its scripts are written for its container")  # fmt: skip
    assert "tests/test_outputs.py uses absolute container paths (line 6: /app, line 12: /app)" in why
    assert "solution.sh uses absolute container paths (line 3: /app)" in why and "--base-image IMAGE" in why
    with pytest.raises(Refused):
        run_task(spec, RunOptions(solution=True, out=tmp_path / "out"))
    cli = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "harbor", "run", str(trimmed), "--solution",
                          "--no-ledger", "--out", str(tmp_path / "out")], check=False, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert cli.returncode == EXIT_REFUSED and "never runs on the host" in cli.stderr
    assert not (tmp_path / "out").exists()
    # a task that says host_ok but writes for its container: refused too, and told how to run it
    task = container_task(tmp_path, "fix-csv-total")
    toml = task / "task.toml"
    toml.write_text(toml.read_text() + "host_ok = true\n".replace("host_ok", "[environment]\nhost_ok")
                    if "[environment]" not in toml.read_text() else toml.read_text().replace(
                        "[environment]\n", "[environment]\nhost_ok = true\n"))  # fmt: skip
    (task / "tests" / "test_outputs.py").write_text("from pathlib import Path\n\ndef test_total():\n"
                                                    "    assert Path('/app/csvtotal.py').exists()\n")  # fmt: skip
    why = refusal(load_task(task), None)
    assert why is not None and "tests/test_outputs.py uses absolute container paths (line 4: /app)" in why
    assert why.endswith("run it in its container: remove [environment] host_ok = true from task.toml")
    for fixture in ("fix-csv-total", "long-horizon-report"):  # relative paths: they run on the host
        assert refusal(load_task(HARBOR / fixture), None) is None


@pytest.mark.slow
@real_engine
def test_a_task_without_container_files_runs_in_a_container_of_the_base_image(tmp_path: Path) -> None:
    result = real_run(REAL / "trimmed-terminal-bench" / "hello-world", tmp_path, solution=True)
    assert (result.exit_code, result.valid) == (EXIT_SOLVED, True), result.to_dict()
    box = result.container or {}
    assert box["image"] == BASE and box["base_image"]["why"] == "the task has no container files"
    assert commands(result, "build") == []
    initial = result.initial
    assert initial is not None and initial.reward is not None and initial.reward.passed == 0
    assert result.verification.where == "container" and result.verification.solved


# ---------------------------------------------------------------------------- the fixtures, and the engine's commands


@pytest.mark.slow
@real_engine
@pytest.mark.parametrize("fixture", ["fix-csv-total", "long-horizon-report"])
def test_the_fixture_tasks_run_in_the_engine(tmp_path: Path, fixture: str) -> None:
    task = container_task(tmp_path, fixture)
    spec = load_task(task)
    assert spec.needs_container and spec.network == {"agent": "no-network", "verifier": "no-network"}
    ledger = tmp_path / "ledger.sqlite"
    result = real_run(task, tmp_path, solution=True, ledger=ledger)

    assert (result.exit_code, result.valid, result.outcome, result.findings) == (EXIT_SOLVED, True, "valid", [])
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert (oracle.where, oracle.verifier, initial.where, initial.verifier) == (
        "container", "tests/test.sh", "container", "tests/test.sh")
    assert oracle.reward.solved and not initial.reward.solved
    assert (oracle.cross_check or {})["agrees"] is True and (initial.cross_check or {})["agrees"] is True
    assert (oracle.cross_check or {})["score"]["resolved"] == "resolved"
    assert (oracle.container or {})["workdir"] == "/app" and (oracle.container or {})["python"] == "/usr/bin/python3"
    if fixture == "long-horizon-report":
        assert (oracle.reward.tier, initial.reward.tier) == ("complete", "incomplete")  # its test.sh writes the tier

    # the image: built from environment/ (the task's build context), FROM the base image, tagged by its content
    box = result.container or {}
    context = task / "environment"
    assert box["build"]["context"] == str(context) and box["base_image"]["replaced"] == ["python:3.12-slim"]
    tag = box["image"]
    assert tag.startswith("objective-harbor/build:")
    for build in commands(result, "build"):
        assert build == ["build", "--tag", tag, "--file", box["base_image"]["build_file"], str(context)]
    # one container a verification, no network (allow_internet = false), the recorder mounted read-only
    creates = commands(result, "create")
    assert len(creates) == 2
    for create, label in zip(creates, ["initial", "oracle"]):
        name = create[2]
        assert name.startswith(f"objective-harbor-{label}-")
        tools = create[create.index("--mount") + 1]
        assert create[3:8] == ["--label", create[4], "--network", "none", "--mount"]
        assert tools.startswith("type=bind,source=") and tools.endswith(f",target={C_TOOLS},readonly")
        assert create[9:13] == ["--cpus", "1", "--memory", "512m"]
        assert create[-5:] == ["--entrypoint", "sh", tag, "-c", KEEP_ALIVE]
    initial_name, oracle_name = created(result)
    calls = [c[1:] for c in box["commands"]]
    # the solution runs in the working directory, before the tests are copied in
    solve = position(calls, lambda c: c[0] == "exec" and c[-2:] == ["bash", "/solution/solve.sh"] and oracle_name in c)
    tests_in = position(calls, lambda c: c[0] == "cp" and c[-1] == f"{oracle_name}:/tests")
    assert solve < tests_in and calls[solve][:3] == ["exec", "--workdir", "/app"]
    for name in (initial_name, oracle_name):
        script = position(calls, lambda c: c[0] == "exec" and name in c and c[-1] == "/tests/test.sh")
        [verifier] = [c for c in calls if c[0] == "exec" and name in c and BOOT in c]
        assert script < calls.index(verifier)  # the task's script first, this project's verifier after it
        # -i: the record's key goes to the recorder on standard input, never in the environment or the env file
        assert verifier[:5] == ["exec", "-i", "--workdir", "/app", "--env-file"] and "--env" not in verifier
        tail = verifier[verifier.index(name) + 1 :]
        assert tail[:5] == ["sh", "-c", tail[2], "sh", "/usr/bin/python3"]
        assert tail[5:13] == RECORDER_RUN and tail[-3:] == ["--rootdir", "/tests", "/tests/test_outputs.py"]
    # the ledger: one entry, kind harbor, in the task's metric space, with the engine's image
    assert result.ledger is not None and result.ledger["seq"] == 1 and verify(ledger).ok
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries())
    body = entry.data
    assert entry.kind == "harbor"
    assert (body["task"], body["mode"], body["where"], body["verifier"], body["outcome"], body["failure_class"]) == (
        spec.name, "oracle", "container", "tests/test.sh", "valid", "none")
    assert body["metric_space"] == spec.metric_space and body["image"] == tag
    assert body["digests"]["image"].startswith("sha256:") and body["digests"]["task"] == result.task_digest
    assert body["initial"]["solved"] is False and body["cross_check"]["agrees"] is True
    document = json.loads((tmp_path / "out" / "objective-scoring.json").read_text(encoding="utf-8"))
    assert document["ledger"]["seq"] == 1 and document["container"]["commands"][0][1] == "image"


@pytest.mark.slow
@real_engine
def test_a_working_state_replaces_the_image_working_directory(tmp_path: Path) -> None:
    task = container_task(tmp_path, "long-horizon-report")
    workdir = tmp_path / "app"
    workdir.mkdir()
    shutil.copy(HARBOR / "long-horizon-report" / "environment" / "sales.csv", workdir)
    (workdir / "report.md").write_text("# Sales report\n", encoding="utf-8")
    result = real_run(task, tmp_path, workdir=workdir, out=None)
    reward = result.verification.reward
    assert reward is not None and (reward.reward, reward.solved, reward.tier) == (0.5, False, "partial")
    assert result.exit_code == EXIT_NOT_SOLVED and result.failure_class == "solver" and result.ledger is None
    [name] = created(result)
    calls = [c[1:] for c in (result.container or {})["commands"]]
    clear = position(calls, lambda c: c[:4] == ["exec", "--user", "0", name] and c[-2:] == ["sh", "/app"])
    pushed = position(calls, lambda c: c[0] == "cp" and c[1].endswith("/workdir/app/.") and c[2] == f"{name}:/app")
    assert clear < pushed
    assert json.loads((workdir / "logs" / "verifier" / "reward.json").read_text())["tier"] == 1


@pytest.mark.slow
@real_engine
@pytest.mark.parametrize(
    ("toml", "initial_network", "oracle_network", "switch"),
    [
        ("", "podman", "podman", None),  # Harbor's default: public
        ('[agent]\nnetwork_mode = "public"\n[verifier]\nnetwork_mode = "no-network"\n', "none", "podman", "disconnect"),
        ('[environment]\nnetwork_mode = "no-network"\n[verifier]\nnetwork_mode = "public"\n', "podman", "podman",
         "disconnect-then-connect"),
    ],
    ids=["public", "verifier-offline", "agent-offline"],
)
def test_each_phase_gets_the_task_network(tmp_path: Path, toml: str, initial_network: str, oracle_network: str,
                                          switch: str | None) -> None:  # fmt: skip
    probe = ("import socket\n\ndef test_done():\n    assert open('done.txt').read() == 'ok\\n'\n\n"
             "def test_network():\n    names = [n for _, n in socket.if_nameindex() if n != 'lo']\n"
             "    assert bool(names) == (open('/tests/expected').read().strip() == 'public'), names\n")  # fmt: skip
    task = make_task(tmp_path / "net", toml, {
        "environment/Dockerfile": BASE_IMAGE,
        "tests/test_outputs.py": probe,
        "tests/expected": "no-network\n" if "verifier]\nnetwork_mode = \"no-network\"" in toml else "public\n",
        "solution/solve.sh": "echo ok > done.txt\n",
    })  # fmt: skip
    result = real_run(task, tmp_path, solution=True, base_image=None)
    oracle = result.verification
    assert oracle.solved, result.to_dict()  # the verifier saw the network its phase declares
    creates = commands(result, "create")
    assert [c[c.index("--network") + 1] for c in creates] == [initial_network, oracle_network]
    oracle_name = created(result)[1]
    calls = [c[1:] for c in (result.container or {})["commands"]]
    solve = position(calls, lambda c: c[-1] == "/solution/solve.sh")
    verifier = position(calls, lambda c: c[0] == "exec" and oracle_name in c and BOOT in c)
    switches = [(i, c) for i, c in enumerate(calls) if c[0] == "network"]
    if switch is None:
        assert switches == []
    elif switch == "disconnect":  # the solution had the network; the verifier does not
        assert [c for _, c in switches] == [["network", "disconnect", "podman", oracle_name]]
        assert solve < switches[0][0] < verifier
    else:  # the solution ran offline, the verifier online
        assert [c for _, c in switches] == [["network", "disconnect", "podman", oracle_name],
                                            ["network", "connect", "podman", oracle_name]]  # fmt: skip
        assert switches[0][0] < solve < switches[1][0] < verifier


# ---------------------------------------------------------------------------- failures, timeouts, interrupts


@pytest.mark.slow
@real_engine
def test_a_verifier_timeout_in_the_container_is_an_infrastructure_failure(tmp_path: Path) -> None:
    task = make_task(tmp_path / "slow", "[verifier]\ntimeout_sec = 2\n", {
        "environment/Dockerfile": BASE_IMAGE,
        "tests/test_outputs.py": "import time\n\ndef test_slow():\n    time.sleep(60)\n",
    })  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    ledger = tmp_path / "ledger.sqlite"
    started = time.monotonic()
    result = real_run(task, tmp_path, workdir=workdir, ledger=ledger, out=None, base_image=None)
    assert time.monotonic() - started < 60
    verification = result.verification
    assert (verification.status, verification.failure_class, verification.where) == ("no_verdict", "verifier", "container")
    assert verification.no_verdict_reason == ("the verifier timed out after 2s; the initial state gives no verdict "
                                              "either (the verifier timed out after 2s)")  # fmt: skip
    assert (result.exit_code, result.outcome, result.failure_class) == (EXIT_REFUSED, "infrastructure_failure", "verifier")
    out = workdir / "logs" / "verifier"
    assert not (out / "reward.txt").exists() and not (out / "reward.json").exists()
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    assert (entry.data["outcome"], entry.data["failure_class"], entry.data["solved"], entry.data["status"]) == (
        "infrastructure_failure", "verifier", None, "no_verdict")


TRIVIAL = {
    "environment/Dockerfile": BASE_IMAGE,
    "tests/test_outputs.py": "from pathlib import Path\n\ndef test_done():\n    assert Path('done.txt').read_text() == 'ok\\n'\n",
    "solution/solve.sh": "echo ok > done.txt\n",
}


@pytest.mark.slow
@real_engine
def test_the_images_python_is_asked_once_of_a_fresh_container(tmp_path: Path) -> None:
    """The image's Python with pytest is asked of the first container, fresh from the image (nothing of
    a solution or a working state in it), once a run: every later container of the image reuses the
    answer. A solution that then removes pytest never gets a verdict from it: its run says why."""
    breaker = "echo ok > done.txt\nrm -rf /usr/lib/python3/dist-packages/pytest /usr/lib/python3/dist-packages/_pytest\n"
    task = make_task(tmp_path / "breaks", "", {**TRIVIAL, "solution/solve.sh": breaker})
    result = real_run(task, tmp_path, solution=True)
    initial, oracle = result.initial, result.verification
    assert initial is not None and initial.status == "verdict" and not initial.solved
    assert initial.container is not None and oracle.container is not None
    assert initial.container["python"] == oracle.container["python"] == "/usr/bin/python3"
    probes = [c for c in commands(result, "exec") if "command -v" in " ".join(c)]  # the probe of the image
    first = created(result)[0]
    assert len(probes) == 1 and probes[0][-4] == first, "asked once, of the first container"
    calls = [c[1:] for c in (result.container or {})["commands"]]
    assert calls.index(probes[0]) < min(i for i, c in enumerate(calls) if c[0] == "cp" and first in " ".join(c)), \
        "before anything was copied into or out of it"
    assert not oracle.solved and oracle.status == "no_verdict"
    assert oracle.no_verdict_reason == "pytest is not installed for /usr/bin/python3"


@pytest.mark.slow
@real_engine
def test_a_working_directory_spelled_to_reach_the_verifiers_logs_cannot_plant_a_reward(tmp_path: Path) -> None:
    # Red team (2026-12-02): with the verifier's folders set up before the state was copied in, a working
    # directory spelled `//logs/verifier` (apart from /logs/verifier as a string) let the state's own
    # reward.txt stand: solved with the wrong answer. The setup comes after the state again.
    task = make_task(tmp_path / "t", '[environment]\nworkdir = "//logs/verifier"\n', {
        "environment/Dockerfile": BASE_IMAGE,
        "tests/test_outputs.py": "def test_answer():\n    assert open('answer.txt').read().strip() == '42'\n",
        "tests/test.sh": "#!/bin/bash\nset -e\npython3 -m pytest -q /tests/test_outputs.py\necho 1 > /logs/verifier/reward.txt\n",
    })  # fmt: skip
    state = write_files(tmp_path / "wd", {"answer.txt": "7\n", "reward.txt": "1\n"})  # the wrong answer, and a reward
    result = real_run(task, tmp_path, workdir=state, base_image=None, out=None)
    assert (result.outcome, result.exit_code) == ("not_solved", EXIT_NOT_SOLVED), result.to_dict()
    assert not result.verification.solved


@pytest.mark.slow
@real_engine
def test_a_failing_build_is_a_setup_failure_and_runs_nothing(tmp_path: Path) -> None:
    task = make_task(tmp_path / "broken", "", {**TRIVIAL, "environment/Dockerfile": "FROM python:3.12\nRUN false\n"})
    result = real_run(task, tmp_path, solution=True)
    assert (result.exit_code, result.outcome, result.failure_class, result.valid) == (
        EXIT_REFUSED, "infrastructure_failure", "setup", None)
    reason = result.verification.no_verdict_reason or ""
    assert reason.startswith("the container engine failed: building the image from environment/Dockerfile (FROM "
                             f"{BASE}) failed (exit status 1): ")  # fmt: skip
    assert commands(result, "create") == [] and [c[1][0] for c in (result.container or {})["commands"] if c] != []
    assert [c[1] for c in (result.container or {})["commands"]] == ["image", "build"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["objective-scoring.json", "test-stdout.txt"]


@pytest.mark.slow
@real_engine
def test_an_interrupt_still_removes_the_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = testrun.run_process
    seen: list[TaskContainer] = []
    original = TaskContainer.__init__

    def remember(self: TaskContainer, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        seen.append(self)

    def interrupted(command: list[str], **kwargs: Any) -> Any:
        if command[-1] == "/solution/solve.sh":
            raise KeyboardInterrupt
        return real(command, **kwargs)

    monkeypatch.setattr(testrun, "run_process", interrupted)
    monkeypatch.setattr(TaskContainer, "__init__", remember)
    task = make_task(tmp_path / "t", "", TRIVIAL)
    with pytest.raises(KeyboardInterrupt):
        run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=PODMAN)
    [box] = seen
    names = [c[c.index("--name") + 1] for c in box.commands if c[1] == "create"]
    assert len(names) == 2 and box.live == []  # the initial state's, then the oracle's: both removed
    for name in names:
        assert subprocess.run([PODMAN.path or "", "container", "exists", name], check=False).returncode == 1  # type: ignore[union-attr]


@pytest.mark.slow
@real_engine
def test_a_script_verdict_does_not_depend_on_the_truth_value_of_its_reward(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(Reward, "__bool__", lambda self: self.solved, raising=False)  # an unsolved reward is falsy
    task = make_task(tmp_path / "script", "", {
        "environment/Dockerfile": BASE_IMAGE,
        "tests/test.sh": "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
        "tests/test_outputs.py": "def test_answer():\n    assert False\n",
    })  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    result = real_run(task, tmp_path, workdir=workdir, out=None, base_image=None)
    verification = result.verification
    assert (verification.verifier, verification.status, verification.solved) == ("tests/test.sh", "verdict", False)
    assert verification.failure_class is None and result.to_dict()["verification"]["failure_class"] is None
    assert (result.exit_code, result.failure_class) == (EXIT_NOT_SOLVED, "solver")


@pytest.mark.slow
@real_engine
def test_a_docker_image_task_uses_the_image_and_app_for_its_working_directory(tmp_path: Path) -> None:
    task = make_task(tmp_path / "img", f'[environment]\ndocker_image = "{BASE}"\n',
                     {k: v for k, v in TRIVIAL.items() if not k.startswith("environment/")})  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "done.txt").write_text("ok\n", encoding="utf-8")
    result = real_run(task, tmp_path, workdir=workdir, out=None, base_image=None)
    assert result.exit_code == EXIT_SOLVED and result.verification.solved
    assert commands(result, "build") == []
    [create] = commands(result, "create")
    [name] = created(result)
    assert create[-4:] == ["sh", BASE, "-c", KEEP_ALIVE]
    # no WORKDIR: Harbor's /app, read from the image's one inspection (no `pwd` asked of a container),
    # created by the command that empties it for the working state, which is then copied into it
    assert result.verification.container is not None and result.verification.container["workdir"] == "/app"
    [inspect] = commands(result, "image")
    assert inspect[:3] == ["image", "inspect", "--format"] and "{{.Config.WorkingDir}}" in inspect[3]
    assert not [c for c in commands(result, "exec") if "pwd" in c]
    [clear] = [c for c in commands(result, "exec") if c[:4] == ["exec", "--user", "0", name] and c[-2:] == ["sh", "/app"]]
    assert 'mkdir -p "$1"' in clear[6]
    calls = [c[1:] for c in (result.container or {})["commands"]]
    placed = [i for i, c in enumerate(calls) if c[0] == "cp" and c[-1] == f"{name}:/app"]
    assert len(placed) == 1 and calls.index(clear) < placed[0]


@pytest.mark.slow
@real_engine
def test_cli_check_and_run_through_the_engine(tmp_path: Path) -> None:
    task = container_task(tmp_path, "fix-csv-total")
    check = cli("harbor", "check", str(task), "--json", "--base-image", BASE, cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    assert (report["runs_here"], report["runs_in"], report["engine"]["usable"]) == (True, "container", True)
    assert report["base_image"] == {"image": BASE, "replaces": ["python:3.12-slim"]}
    table = cli("harbor", "check", str(task), cwd=tmp_path)
    assert "runs in the container engine" in table.stdout and "yes, in a container" in table.stdout

    workdir = tmp_path / "wd"
    shutil.copytree(task / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
    run = cli("harbor", "run", str(task), "--workdir", str(workdir), "--benchmark", "demo-bench", "--base-image", BASE,
              cwd=tmp_path)  # fmt: skip
    assert run.returncode == EXIT_NOT_SOLVED, run.stderr
    assert "container: podman, image objective-harbor/build:" in run.stdout
    assert f"base image: {BASE} stands in for python:3.12-slim" in run.stdout
    assert "workdir: verified by the task's tests/test.sh (its reward file), in the container" in run.stdout
    assert "cross-check by this project's verifier: 1/3 tests passed, not solved" in run.stdout
    assert "ledger: entry 1 appended to .objective-scoring/ledger.sqlite" in run.stdout
    with Ledger(tmp_path / ".objective-scoring" / "ledger.sqlite") as opened:
        [entry] = list(opened.entries())
    assert (entry.kind, entry.data["benchmark"], entry.data["outcome"]) == ("harbor", "demo-bench", "not_solved")


@pytest.mark.slow
@real_engine
def test_cli_sigterm_mid_solution_removes_every_container(tmp_path: Path) -> None:
    task = make_task(tmp_path / "sigterm", "", {**TRIVIAL, "solution/solve.sh": "sleep 60\necho ok > done.txt\n"})
    proc = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", "harbor", "run", str(task), "--solution"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert PODMAN is not None and PODMAN.path is not None

    def ours() -> list[str]:
        listed = subprocess.run([PODMAN.path or "", "ps", "-a", "--filter", "label=objective-scoring.harbor=sigterm",
                                 "--format", "{{.Names}}"], check=False, capture_output=True, text=True)  # fmt: skip
        return listed.stdout.split()

    deadline = time.monotonic() + 120
    while not any("-oracle-" in name for name in ours()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.3)
    time.sleep(1.0)  # the solution is running
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted; the tests were stopped and every container removed; nothing was recorded" in stderr
    assert ours() == [] and not (tmp_path / ".objective-scoring" / "ledger.sqlite").exists()


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args], check=False, capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)  # fmt: skip


# ---------------------------------------------------------------------------- faults, on the simulated engine


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


PYTEST_IMAGE = "FROM python:3.12-slim\nRUN pip install --no-cache-dir pytest\nWORKDIR /app\n"
FAKE_TRIVIAL = {**TRIVIAL, "environment/Dockerfile": PYTEST_IMAGE}


def assert_every_container_removed(engine: FakeEngine) -> None:
    calls = engine.calls()
    for name in engine.created():
        removed = [i for i, call in enumerate(calls) if call == ["rm", "--force", name]]
        assert removed, f"{name} was never removed"
        assert all(name not in call for call in calls[removed[-1] + 1 :]), f"{name} used after its removal"
    assert engine.live() == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rm", "why"),
    [('echo "rm: cannot remove: Device or resource busy" >&2; exit 1', "exit status 1: rm: cannot remove: Device or "
      "resource busy"), ("exit 0", "exit status 1: /app/stale.txt is still there")],
    ids=["rm-fails", "rm-leaves-files"],
)
def test_a_working_directory_that_cannot_be_emptied_is_a_setup_failure(tmp_path: Path, engine: FakeEngine, rm: str,
                                                                       why: str) -> None:  # fmt: skip
    # The image's /app holds a file that cannot be removed (a mount point, an immutable file): here an rm
    # that refuses (or silently skips) it. As root, a real engine removes what an image USER could not.
    task = make_task(tmp_path / "t", "", {
        **FAKE_TRIVIAL,
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
    assert not [c for c in engine.calls() if c[0] == "exec" and BOOT in c]  # and nothing verified
    assert not (workdir / "logs" / "verifier" / "reward.txt").exists()
    assert_every_container_removed(engine)


def run_solving_state(tmp_path: Path, engine: FakeEngine, toml: str) -> HarborRun:
    """A working state that solves the trivial task, verified through the stand-in engine."""
    task = make_task(tmp_path / "t", toml, FAKE_TRIVIAL)
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "done.txt").write_text("ok\n", encoding="utf-8")
    return run_task(load_task(task), RunOptions(workdir=workdir, ledger=None), engine=engine.status)


@pytest.mark.slow
def test_the_verifiers_folders_are_set_up_after_the_state_is_copied_in(tmp_path: Path, engine: FakeEngine) -> None:
    # Emptying the working directory and copying the state in come first; the verifier's folders are set
    # up (stale rewards, records and tests removed) after: a working directory that reaches one of them
    # (a symlink in the image, a path spelled `//logs/verifier`) cannot keep what the state brought.
    result = run_solving_state(tmp_path, engine, "")
    assert result.exit_code == EXIT_SOLVED and result.verification.solved, result.to_dict()
    [name] = engine.created()
    calls = engine.calls()
    clear, setup = [c for c in calls if c[:4] == ["exec", "--user", "0", name]]
    assert clear[-2:] == ["sh", "/app"] and 'rm -rf -- "$1"/*' in clear[6]  # no `mkdir` of its own before it
    assert "/logs/verifier/reward.txt" in setup[-1]
    assert not [c for c in calls if c[0] == "exec" and "pwd" in c]  # the image's WORKDIR, from its inspection
    placed = calls.index(next(c for c in calls if c[0] == "cp" and c[-1] == f"{name}:/app"))
    assert calls.index(clear) < placed < calls.index(setup)
    assert calls.index(setup) < calls.index(next(c for c in calls if c[0] == "cp" and c[-1] == f"{name}:/tests"))
    assert_every_container_removed(engine)


@pytest.mark.slow
def test_a_run_whose_output_the_engine_lost_is_asked_again_why_it_wrote_no_record(tmp_path: Path,
                                                                                  engine: FakeEngine) -> None:  # fmt: skip
    # The solution takes pytest away from the image's Python; the engine loses the output of the run that
    # then fails at once (`exec -i`; podman did, once in seven suites). The container is asked again.
    breaker = "cp /usr/local/bin/python3-without-pytest /usr/local/bin/python3\necho ok > done.txt\n"
    task = make_task(tmp_path / "t", "", {**FAKE_TRIVIAL, "solution/solve.sh": breaker})
    engine.fail(**{"exec-i-silent": -1})
    result = run_task(load_task(task), RunOptions(solution=True, ledger=None, out=tmp_path / "out"), engine=engine.status)
    initial, oracle = result.initial, result.verification
    assert initial is not None and initial.status == "verdict" and not initial.solved  # its record says so
    assert oracle.status == "no_verdict" and oracle.no_verdict_reason == "pytest is not installed for /usr/local/bin/python3"
    tail = oracle.run["output_tail"]
    assert tail.count("[objective-score] the run wrote no record and its output does not say why") == 1, tail
    assert "No module named 'pytest'" in tail
    probes = [c for c in engine.calls() if c[0] == "exec" and c[-2:] == ["-c", "import pytest"]]
    assert len(probes) == 1 and probes[0][1] != "-i"  # asked once, of the oracle's container only
    assert_every_container_removed(engine)


@pytest.mark.slow
def test_a_state_that_ends_its_run_and_hangs_the_question_after_it_is_not_solved(tmp_path: Path, engine: FakeEngine,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # Red team: the working state's code (run as the image's user, root) replaces the image's Python with
    # a program that never answers, removes the run's record and ends the run. The question asked after such a
    # run must not turn the state's failure into the engine's (an infrastructure failure).
    from pytest_objective_scoring.harbor import container

    monkeypatch.setattr(container, "ASK_AGAIN_TIMEOUT", 2.0)
    task = make_task(tmp_path / "t", "", {**FAKE_TRIVIAL, "tests/test_outputs.py": "import answer\n\ndef test_done():\n    assert answer.OK\n"})
    workdir = tmp_path / "wd"
    workdir.mkdir()
    (workdir / "answer.py").write_text(
        "import os, pathlib\n"
        "python = pathlib.Path.cwd().parent / 'usr' / 'local' / 'bin' / 'python3'  # the image's, in this container\n"
        "python.write_text('#!/bin/sh\\nsleep 20\\n')\n"
        "(pathlib.Path.cwd().parent / 'objective-scoring' / 'run' / 'record.jsonl').unlink()  # no record at all\n"
        "os._exit(1)\n", encoding="utf-8")  # fmt: skip
    result = run_task(load_task(task), RunOptions(workdir=workdir, ledger=None), engine=engine.status)
    verification = result.verification
    assert (result.outcome, result.failure_class, result.exit_code) == ("not_solved", "solver", EXIT_NOT_SOLVED)
    assert "working state broke its own run" in (verification.attribution or "")
    assert "[objective-score]" not in verification.run["output_tail"]  # no answer came: nothing was added
    probes = [c for c in engine.calls() if c[0] == "exec" and c[-2:] == ["-c", "import pytest"]]
    assert len(probes) == 1  # asked once, of the state's container (the control's run wrote its record)
    assert_every_container_removed(engine)


@pytest.mark.slow
def test_the_task_environment_reaches_the_container_in_an_env_file_never_the_engine_client(
        tmp_path: Path, engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # What the engine client's own environment held, a real engine cannot be asked: the stand-in logs it.
    secret = "s3cret-token-value"
    monkeypatch.setenv("OBJ_HARBOR_TOKEN", secret)
    toml = ('[verifier]\nenv = { DOCKER_HOST = "tcp://task.invalid:2375", CONTAINER_HOST = "ssh://task.invalid", '
            'TASK_TOKEN = "${OBJ_HARBOR_TOKEN}" }\n'
            '[solution]\nenv = { DOCKER_CONTEXT = "task-context", DOCKER_CONFIG = "/task/config", ANSWER = "ok" }\n'
            '[environment.env]\nSHARED = "both"\n')  # fmt: skip
    digest = hashlib.sha256(secret.encode()).hexdigest()
    task = make_task(tmp_path / "env", toml, {
        "environment/Dockerfile": PYTEST_IMAGE,
        "tests/test_outputs.py": ("import hashlib\nimport os\nfrom pathlib import Path\n\n"
                                  "def test_done():\n    assert Path('done.txt').read_text() == 'ok\\n'\n\n"
                                  "def test_env():\n    assert os.environ.get('DOCKER_HOST') == 'tcp://task.invalid:2375'\n"
                                  "    assert os.environ.get('SHARED') == 'both'\n"
                                  "    token = os.environ.get('TASK_TOKEN', '').encode()\n"
                                  f"    assert hashlib.sha256(token).hexdigest() == '{digest}'\n"),
        "solution/solve.sh": 'test "$DOCKER_CONTEXT" = task-context && test "$SHARED" = both && echo "$ANSWER" > done.txt\n',
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
        assert not {"TASK_TOKEN", "ANSWER", "SHARED"} & set(client["names"]), client["verb"]
    # the values: in 0600 files of the run's workspace, deleted after each command; never on a command line
    workspace = Path(result.workspace or "")
    with_file = [c for c in engine.calls() if "--env-file" in c]
    assert [c[0] for c in with_file] == ["create", "exec", "create", "exec", "exec"]  # + the solution's
    for call in with_file:
        path = Path(call[call.index("--env-file") + 1])
        assert path.parent == workspace and not path.exists()
        assert "--env" not in call
    assert [item["mode"] for item in engine.logged("env-files.jsonl")] == [0o600] * 5
    assert not list(workspace.glob("env-*"))
    assert secret not in json.dumps(engine.calls()) and secret not in (out / "objective-scoring.json").read_text()
    assert secret not in json.dumps(result.container)
    shutil.rmtree(workspace)
    assert_every_container_removed(engine)


@pytest.mark.slow
@pytest.mark.parametrize("failures", [1, -1], ids=["first-rm-fails", "every-rm-fails"])
def test_a_container_is_kept_until_removed_and_reported_when_it_cannot_be(tmp_path: Path, engine: FakeEngine,
                                                                          failures: int) -> None:  # fmt: skip
    engine.fail(rm=failures)
    task = make_task(tmp_path / "t", "", FAKE_TRIVIAL)
    result = run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    assert result.exit_code == EXIT_SOLVED and result.valid  # the verdict stands: the runs ended
    names = engine.created()
    assert len(names) == 2
    left = (result.container or {})["not_removed"]
    if failures == 1:  # the initial state's container: its removal failed, and was tried again on the way out
        assert left == [] and engine.calls().count(["rm", "--force", names[0]]) == 2
        assert_every_container_removed(engine)
    else:
        assert [item["name"] for item in left] == names and engine.live() == sorted(names)
        for item in left:
            assert item["error"].startswith(f"`docker rm --force {item['name']}` exited with status 1: ")
            assert item["error"].endswith("device or resource busy")
    document = json.loads((tmp_path / "out" / "objective-scoring.json").read_text(encoding="utf-8"))
    assert document["container"]["not_removed"] == left


@pytest.mark.slow
def test_a_second_interrupt_during_a_removal_names_the_container_left(tmp_path: Path, engine: FakeEngine,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real_run_process, real_call = testrun.run_process, TaskContainer._call

    def interrupted(command: list[str], **kwargs: Any) -> Any:
        if command[-1] == "/solution/solve.sh":
            raise KeyboardInterrupt
        return real_run_process(command, **kwargs)

    def call(self: TaskContainer, *args: str, **kwargs: Any) -> Any:
        if args[:2] == ("rm", "--force") and "-oracle-" in args[2]:
            raise KeyboardInterrupt  # Ctrl-C again while the oracle's container is being removed
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(testrun, "run_process", interrupted)
    monkeypatch.setattr(TaskContainer, "_call", call)
    task = make_task(tmp_path / "t", "", FAKE_TRIVIAL)
    with pytest.raises(Interrupted) as info:
        run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=engine.status)
    initial, oracle = engine.created()
    assert info.value.not_removed == [{"name": oracle, "error": "its removal was interrupted"}]
    assert info.value.engine == "docker" and engine.live() == [oracle]
    assert ["rm", "--force", initial] in engine.calls()


@pytest.mark.slow
def test_an_engine_that_does_not_answer_is_still_a_clear_refusal(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "docker").write_text(f"#!/bin/sh\necho \"$@\" >> '{calls}'\n"
                                    "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock' >&2\n"
                                    "exit 1\n", encoding="utf-8")  # fmt: skip
    (bin_dir / "docker").chmod(0o755)
    task = make_task(tmp_path / "t", "", FAKE_TRIVIAL)
    with pytest.raises(NeedsContainer) as info:
        run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"), engine=find_engine(str(bin_dir)))
    assert "needs a container (environment/Dockerfile)" in str(info.value)
    assert "does not answer: Cannot connect to the Docker daemon" in str(info.value)
    assert calls.read_text() == "info\n" and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_cli_sigterm_when_no_container_can_be_removed(tmp_path: Path, engine: FakeEngine) -> None:
    engine.fail(rm=-1)
    task = make_task(tmp_path / "t", "", {**FAKE_TRIVIAL, "solution/solve.sh": "sleep 60\necho ok > done.txt\n"})
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
    assert "every container removed" not in stderr
    assert ("interrupted; the tests were stopped but 2 container(s) could not be removed; nothing was recorded"
            in stderr)  # fmt: skip
    for name in engine.created():
        assert f"container {name} was NOT removed (" in stderr and f"remove it with `docker rm --force {name}`" in stderr
    assert engine.live() == sorted(engine.created())


@pytest.mark.slow
def test_cli_reports_a_container_it_could_not_remove(tmp_path: Path, engine: FakeEngine) -> None:
    engine.fail(rm=-1)
    task = make_task(tmp_path / "t", "", FAKE_TRIVIAL)
    run = cli("harbor", "run", str(task), "--solution", "--no-ledger", "--json", env=engine.env(), cwd=tmp_path)
    assert run.returncode == EXIT_SOLVED, run.stderr
    left = json.loads(run.stdout)["container"]["not_removed"]
    assert [item["name"] for item in left] == engine.created() and engine.live() == sorted(engine.created())
    for item in left:
        assert (f"objective-score harbor: container {item['name']} was NOT removed ({item['error']}); remove it with "
                f"`docker rm --force {item['name']}`") in run.stderr  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "facts"),
    [
        ("2c5c4e45a6a01cc18b1f65f9fca14131301c85d420db951f52c0ce4e56633b06|/app\n",
         ("sha256:2c5c4e45a6a01cc18b1f65f9fca14131301c85d420db951f52c0ce4e56633b06", "/app")),  # podman: bare hex
        ("sha256:abc|\n", ("sha256:abc", "")),  # docker's spelling; an image without a WORKDIR
        ("sha256:abc|/srv/my app|x\n", ("sha256:abc", "/srv/my app|x")),  # only the id is cut at "|"
        ("", (None, None)),
        ("sha256:abc\n", (None, None)),  # not the shape asked for: the container is asked with `pwd`
    ],
    ids=["podman", "docker-no-workdir", "bar-in-workdir", "empty", "wrong-shape"],
)
def test_the_images_id_and_working_directory_are_read_from_one_inspection(answer: str,
                                                                           facts: tuple[str | None, str | None]) -> None:
    assert in_container.image_facts(answer) == facts
