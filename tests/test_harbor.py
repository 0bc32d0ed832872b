"""Harbor / Terminal-Bench task directories: loading, rewards, the run, the oracle canary, refusals."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_objective_scoring.harbor import (
    EXIT_NOT_SOLVED,
    EXIT_REFUSED,
    EXIT_SOLVED,
    EngineStatus,
    NeedsContainer,
    Refused,
    RewardRules,
    RunOptions,
    TaskError,
    Tier,
    check_task,
    compute_reward,
    find_engine,
    load_task,
    refusal,
    resolve_env,
    run_task,
    static_tests,
)
from pytest_objective_scoring.ledger import Ledger, verify

from .conftest import FIXTURES

HARBOR = FIXTURES / "harbor"
CSV = HARBOR / "fix-csv-total"
REPORT = HARBOR / "long-horizon-report"
SHARE_TIERS = RewardRules(kind="share", threshold=0.95,
                          tiers=(Tier("partial", ("test_a", "test_b")), Tier("complete", None)))  # fmt: skip


def make_task(root: Path, toml: str, tests: str = "def test_a():\n    assert True\n",
              files: dict[str, str] | None = None) -> Path:  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_outputs.py").write_text(textwrap.dedent(tests), encoding="utf-8")
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "harbor", *args], check=False,
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)  # fmt: skip


# ---------------------------------------------------------------------------- loading


def test_fixtures_load_in_their_metric_spaces() -> None:
    csv = load_task(CSV)
    assert (csv.name, csv.layout, csv.metric_space) == ("objective-scoring/fix-csv-total", "harbor", "binary")
    assert csv.container == ("environment/Dockerfile",) and csv.host_ok and not csv.needs_container
    assert (csv.verifier_timeout, csv.agent_timeout) == (60.0, 120.0)
    assert csv.network == {"agent": "no-network", "verifier": "no-network"}  # allow_internet = false
    assert (csv.build_timeout, csv.cpus, csv.memory_mb, csv.benchmark) == (300.0, 1, 512, None)
    assert csv.rules.solved_threshold == 1.0
    report = load_task(REPORT)
    assert report.metric_space == "continuous_reward" and report.rules.solved_threshold == 0.95
    assert [t.name for t in report.rules.tiers] == ["partial", "complete"] and report.rules.tiers[1].tests is None
    found, problems = static_tests(report)
    assert problems == [] and [t.test_id for t in found] == [
        "test_outputs.py::test_report_exists", "test_outputs.py::test_report_header",
        "test_outputs.py::test_region_lines", "test_outputs.py::test_summary_json",
    ]  # fmt: skip
    for spec in (csv, report):
        assert not [f for f in check_task(spec) if f.severity == "error"]


@pytest.mark.parametrize(
    ("toml", "key", "problem"),
    [
        ("[verifier\ntimeout_sec = 1", None, "not valid TOML"),
        ("[verifier]\ntimeout_sec = 'ten'", "[verifier] timeout_sec", "expected a finite number of seconds > 0, got 'ten'"),
        ("[verifier]\ntimeout_sec = inf", "[verifier] timeout_sec", "expected a finite number of seconds > 0, got inf"),
        ("[agent]\ntimeout_sec = nan", "[agent] timeout_sec", "expected a finite number of seconds > 0, got nan"),
        ("[agent]\ntimeout_sec = -1", "[agent] timeout_sec", "> 0"),
        ("verifier = 3", "[verifier]", "expected a table, got an integer"),
        ("[verifier]\nreward = 'partial'", "[verifier] reward", "expected one of 'binary', 'share'"),
        ("[verifier]\nreward = 'share'\nthreshold = 1.5", "[verifier] threshold", "expected a number in (0, 1]"),
        ("[verifier]\nthreshold = 0.9", "[verifier] threshold", 'needs a continuous reward (reward = "share")'),
        ("[verifier]\nweights = {test_a = 2}", "[verifier] weights", "weights need a continuous reward"),
        ("[verifier]\nreward = 'share'\nweights = {test_a = -1}", "[verifier] weights.test_a", "expected a finite weight >= 0"),
        ("[verifier]\nreward = 'share'\nweights = {test_a = inf}", "[verifier] weights.test_a", "expected a finite weight >= 0, got inf"),
        ("[verifier]\nreward = 'share'\nweights = {test_a = nan}", "[verifier] weights.test_a", "expected a finite weight >= 0, got nan"),
        ("[verifier]\nreward = 'share'\nthreshold = nan", "[verifier] threshold", "expected a number in (0, 1], got nan"),
        ("[verifier]\ntiers = {incomplete = ['test_a']}", "[verifier] tiers.incomplete", "the tier of a run that reaches none"),
        ("[verifier]\ntiers = {partial = []}", "[verifier] tiers.partial", 'expected a list of test names (or "all")'),
        ("[verifier]\ntiers = {partial = 'some'}", "[verifier] tiers.partial", "expected a list of test names"),
        ("[verifier]\nenv = {TOKEN = 3}", "[verifier] env.TOKEN", "expected a string"),
        ("[verifier]\nenv = {'A=B' = 'x'}", "[verifier] env.A=B", "expected an environment variable name"),
        ("[solution]\nenv = {'A B' = 'x'}", "[solution] env.A B", "(no '=', whitespace or NUL), got 'A B'"),
        ('[solution]\nenv = {A = "x\\u0000y"}', "[solution] env.A", "expected a string without NUL characters"),
        ("[environment]\nhost_ok = 'yes'", "[environment] host_ok", "expected true or false, got 'yes'"),
        ("[environment]\nhost_workdir = '../..'", "[environment] host_workdir", "leaves the task directory"),
        ("[task]\nname = ''", "[task] name", "expected a non-empty string"),
        ("[verifier]\nnetwork_mode = 'none'", "[verifier] network_mode", "expected one of 'public', 'no-network', 'allowlist'"),
        ("[environment]\nallow_internet = 'no'", "[environment] allow_internet", "expected true or false, got 'no'"),
        ("[environment]\ncpus = 0", "[environment] cpus", "expected a finite number > 0, got 0"),
        ("[environment]\ncpus = inf", "[environment] cpus", "expected a finite number > 0, got inf"),
        ("[environment]\ncpus = nan", "[environment] cpus", "expected a finite number > 0, got nan"),
        ("[environment]\nmemory_mb = 1.5", "[environment] memory_mb", "expected an integer > 0, got 1.5"),
        ("[environment]\nbuild_timeout_sec = -5", "[environment] build_timeout_sec", "expected a finite number of seconds > 0"),
        ("[environment]\nbuild_timeout_sec = -inf", "[environment] build_timeout_sec", "got -inf"),
    ],
)
def test_malformed_task_toml_names_the_file_and_the_key(tmp_path: Path, toml: str, key: str | None, problem: str) -> None:
    task = make_task(tmp_path / "task", toml)
    with pytest.raises(TaskError) as info:
        load_task(task)
    assert info.value.source == str(task / "task.toml")
    assert info.value.key == key
    assert problem in str(info.value) and str(info.value).startswith(f"{task / 'task.toml'}: ")


def test_not_a_task_directory(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no task.toml"):
        load_task(tmp_path)
    with pytest.raises(TaskError, match="not a directory"):
        load_task(tmp_path / "missing")


def test_check_names_what_cannot_be_verified(tmp_path: Path) -> None:
    toml = """
        [verifier]
        reward = "share"
        tiers = { partial = ["test_a", "test_nope"], complete = "all" }
    """
    spec = load_task(make_task(tmp_path / "t", toml))
    errors = [f for f in check_task(spec) if f.severity == "error"]
    assert [(f.where, f.message) for f in errors] == [
        ("task.toml [verifier] tiers.partial", "no test 'test_nope' in tests/test_outputs.py")]
    with pytest.raises(TaskError, match="no test 'test_nope'"):
        run_task(spec, RunOptions(workdir=tmp_path))
    empty = make_task(tmp_path / "e", "", tests="x = 1\n")
    assert any("define no test function" in f.message for f in check_task(load_task(empty)))
    (empty / "tests" / "test_outputs.py").unlink()
    assert any("no pytest tests" in f.message for f in check_task(load_task(empty)))
    broken = make_task(tmp_path / "b", "", tests="def test_a(:\n")
    assert any("does not parse" in f.message for f in check_task(load_task(broken)))


def test_task_yaml_rejects_non_finite_numbers(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    root = make_task(tmp_path / "tb", "")
    (root / "task.toml").unlink()
    for text, key, problem in [
        ("max_test_timeout_sec: .inf\n", "max_test_timeout_sec", "expected a finite number of seconds > 0, got inf"),
        ("environment:\n  cpus: .nan\n", "environment.cpus", "expected a finite number > 0, got nan"),
        ("max_agent_timeout_sec: " + "9" * 400 + "\n", "max_agent_timeout_sec", "expected a finite number of seconds"),
    ]:
        (root / "task.yaml").write_text(text, encoding="utf-8")
        with pytest.raises(TaskError) as info:
            load_task(root)
        assert (info.value.source, info.value.key) == (str(root / "task.yaml"), key) and problem in info.value.problem


@pytest.mark.parametrize(
    ("weights", "tests", "never"),
    [
        ("{ test_a = 0 }", "def test_a():\n    pass\n", True),
        ("{ test_a = 0, test_b = 0.0 }", "def test_a():\n    pass\n\ndef test_b():\n    pass\n", True),
        ("{ test_a = 0 }", "def test_a():\n    pass\n\ndef test_b():\n    pass\n", False),  # test_b weighs 1
        ("{ test_a = 0, 'test_a[x]' = 1 }", "def test_a():\n    pass\n", False),  # a parameter set weighs 1
    ],
    ids=["one-test", "every-test", "one-of-two", "a-parameter-set-weighs"],
)
def test_check_reports_weights_that_make_a_task_unsolvable(tmp_path: Path, weights: str, tests: str,
                                                           never: bool) -> None:  # fmt: skip
    spec = load_task(make_task(tmp_path / "t", f"[verifier]\nreward = 'share'\nweights = {weights}\n", tests=tests))
    message = "every test weighs 0: the reward is always 0, so the task can never be solved"
    errors = [(f.where, f.message) for f in check_task(spec) if f.severity == "error" and "weighs 0" in f.message]
    assert errors == ([("task.toml [verifier] weights", message)] if never else [])
    if never:
        with pytest.raises(TaskError, match="every test weighs 0"):
            run_task(spec, RunOptions(workdir=tmp_path))


def test_terminal_bench_task_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "tb"
    compose = "services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    command: ['sh', '-c', 'sleep infinity']\n"
    make_task(root, "", files={"docker-compose.yaml": compose, "Dockerfile": "FROM alpine\n",
                               "solution.sh": "true\n", "run-tests.sh": "true\n", "data.txt": "x\n"})  # fmt: skip
    (root / "task.toml").unlink()
    (root / "task.yaml").write_text("instruction: |\n  Do it.\nmax_test_timeout_sec: 30\nmax_agent_timeout_sec: 90\n"
                                    "verifier:\n  reward: share\n  threshold: 0.8\n", encoding="utf-8")  # fmt: skip
    pytest.importorskip("yaml")
    spec = load_task(root)
    assert (spec.layout, spec.verifier_timeout, spec.agent_timeout) == ("terminal-bench", 30.0, 90.0)
    assert spec.container == ("Dockerfile", "docker-compose.yaml") and spec.needs_container
    assert spec.instruction_text == "Do it.\n" and spec.solution == root / "solution.sh"
    assert spec.rules.solved_threshold == 0.8
    (root / "task.yaml").write_text("verifier:\n  threshold: 2\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"task\.yaml: verifier\.threshold: expected a number in \(0, 1\]"):
        load_task(root)
    monkeypatch.setitem(sys.modules, "yaml", None)  # PyYAML not importable
    with pytest.raises(TaskError, match="needs PyYAML"):
        load_task(root)


def test_env_templates_resolve_from_this_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = "[verifier]\nenv = { A = '${OBJ_HARBOR_A}', B = 'x-${OBJ_HARBOR_B:-b}', C = '${OBJ_HARBOR_C}' }\n"
    spec = load_task(make_task(tmp_path / "t", toml))
    monkeypatch.setenv("OBJ_HARBOR_A", "a")
    monkeypatch.delenv("OBJ_HARBOR_B", raising=False)
    monkeypatch.delenv("OBJ_HARBOR_C", raising=False)
    with pytest.raises(TaskError, match=r"task\.toml: \[verifier\] env\.C: \$\{OBJ_HARBOR_C\} is not set"):
        resolve_env(spec, "verifier", spec.verifier_env)
    monkeypatch.setenv("OBJ_HARBOR_C", "c")
    assert resolve_env(spec, "verifier", spec.verifier_env) == {"A": "a", "B": "x-b", "C": "c"}


@pytest.mark.parametrize("where", ["host", "container"])
def test_env_templates_are_checked_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        where: str) -> None:  # fmt: skip
    from pytest_objective_scoring.harbor import run as harbor

    monkeypatch.delenv("OBJ_HARBOR_UNSET", raising=False)
    monkeypatch.setenv("OBJ_HARBOR_MULTI", "two\nlines")
    host_ok = "[environment]\nhost_ok = true\n" if where == "host" else ""
    toml = (f"{host_ok}[verifier]\nenv = {{ A = 'fine', B = '${{OBJ_HARBOR_MULTI}}' }}\n"
            "[solution]\nenv = { TOKEN = 'x-${OBJ_HARBOR_UNSET}' }\n")  # fmt: skip
    task = make_task(tmp_path / "t", toml, files={"environment/Dockerfile": "FROM python:3.12\n",
                                                  "solution/solve.sh": "true\n"})  # fmt: skip
    spec = load_task(task)
    errors = [(f.where, f.message) for f in check_task(spec) if f.severity == "error"]
    unset = ("task.toml [solution] env.TOKEN", "${OBJ_HARBOR_UNSET} is not set in this environment")
    one_line = "contains a line break: a container gets the task's environment from an env file, one line a variable"
    line_break = ("task.toml [verifier] env.B", one_line)
    assert errors == ([line_break, unset] if where == "container" else [unset])

    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("a verification ran before the task's environment was checked")

    monkeypatch.setattr(harbor, "verify_state", must_not_run)
    monkeypatch.setattr(harbor.TaskContainer, "prepare_image", must_not_run)
    usable = EngineStatus("docker", "/nonexistent/docker", True, "docker at /nonexistent/docker answers")
    out = tmp_path / "out"
    with pytest.raises(TaskError) as info:
        run_task(spec, RunOptions(solution=True, out=out), engine=usable)
    assert info.value.source == str(task / "task.toml")
    expected = line_break if where == "container" else unset
    assert (f"task.toml {info.value.key}", info.value.problem) == expected
    assert not out.exists()
    monkeypatch.setenv("OBJ_HARBOR_UNSET", "set")
    monkeypatch.setenv("OBJ_HARBOR_MULTI", "one line")
    assert not [f for f in check_task(spec) if f.severity == "error"]


@pytest.mark.slow
def test_cli_check_names_an_unset_env_variable(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", "[verifier]\nenv = { TOKEN = '${OBJ_HARBOR_NEVER_SET}' }\n")
    env = {k: v for k, v in os.environ.items() if k != "OBJ_HARBOR_NEVER_SET"}
    check = cli("check", str(task), env=env)
    assert check.returncode == 2, check.stderr
    assert "task.toml [verifier] env.TOKEN: ${OBJ_HARBOR_NEVER_SET} is not set in this environment" in " ".join(
        check.stdout.split())
    run = cli("run", str(task), "--workdir", str(tmp_path), "--no-ledger", env=env)
    assert run.returncode == 2
    assert f"{task / 'task.toml'}: [verifier] env.TOKEN: ${{OBJ_HARBOR_NEVER_SET}} is not set" in run.stderr


# ---------------------------------------------------------------------------- rewards


def test_binary_reward() -> None:
    rules = RewardRules()
    solved = compute_reward(rules, [("t.py::a", True), ("t.py::b", True)])
    assert (solved.metric_space, solved.reward, solved.solved, solved.tier) == ("binary", 1.0, True, None)
    assert solved.reward_file() == ("reward.txt", "1\n")
    failed = compute_reward(rules, [("t.py::a", True), ("t.py::b", False)])
    assert (failed.reward, failed.solved, failed.reward_file()) == (0.0, False, ("reward.txt", "0\n"))
    assert compute_reward(rules, []).reward == 0.0  # no test proves nothing


def test_continuous_reward_keeps_its_value_threshold_and_tiers() -> None:
    outcomes = [("t.py::test_a", True), ("t.py::test_b", True), ("t.py::test_c", False), ("t.py::test_d", False)]
    half = compute_reward(SHARE_TIERS, outcomes)
    assert (half.metric_space, half.reward, half.threshold, half.solved) == ("continuous_reward", 0.5, 0.95, False)
    assert (half.tier, half.tier_rank, dict(half.tiers)) == ("partial", 1, {"partial": True, "complete": False})
    name, text = half.reward_file()
    assert name == "reward.json"
    assert json.loads(text) == {"reward": 0.5, "solved": 0, "tests_passed": 2, "tests_total": 4, "tier": 1}
    nineteen = [(f"t.py::test_{i}", i != 0) for i in range(20)]
    at = compute_reward(RewardRules(kind="share", threshold=0.95), nineteen)
    assert (at.reward, at.solved) == (0.95, True)  # solved = reward >= threshold
    below = compute_reward(RewardRules(kind="share", threshold=0.96), nineteen)
    assert not below.solved and below.tier is None
    # higher tiers count only on top of the lower ones
    skipped = compute_reward(SHARE_TIERS, [("t.py::test_a", False), ("t.py::test_b", True)])
    assert skipped.tier == "incomplete" and skipped.tier_rank == 0


def test_weighted_share_and_unmatched_names() -> None:
    rules = RewardRules(kind="share", weights={"test_a": 3.0, "t.py::test_c[x]": 0.0})
    reward = compute_reward(rules, [("t.py::test_a", True), ("t.py::test_b", False), ("t.py::test_c[x]", False)])
    assert reward.reward == 0.75 and reward.unmatched == ()
    missing = compute_reward(RewardRules(tiers=(Tier("partial", ("test_a", "test_gone")),)), [("t.py::test_a", True)])
    assert missing.tier == "incomplete" and missing.unmatched == ("test_gone",)


def test_tiers_metric_space() -> None:
    rules = RewardRules(tiers=(Tier("partial", ("test_a",)), Tier("complete", None)))
    assert rules.metric_space == "tiers" and rules.solved_threshold is None
    partial = compute_reward(rules, [("t.py::test_a[1]", True), ("t.py::test_a[2]", True), ("t.py::test_b", False)])
    assert (partial.reward, partial.solved, partial.tier, partial.threshold) == (0.5, False, "partial", None)
    complete = compute_reward(rules, [("t.py::test_a", True), ("t.py::test_b", True)])
    assert (complete.reward, complete.solved, complete.tier) == (1.0, True, "complete")
    assert json.loads(complete.reward_file()[1])["tier"] == 2


# ---------------------------------------------------------------------------- containers


def test_a_container_task_is_refused_before_anything_runs(tmp_path: Path) -> None:
    task = make_task(tmp_path / "c", "[verifier]\ntimeout_sec = 10\n", files={"environment/Dockerfile": "FROM alpine\n"})
    spec = load_task(task)
    assert spec.needs_container and spec.container == ("environment/Dockerfile",)
    missing = EngineStatus(None, None, False, "no container engine on PATH (looked for docker, podman)")
    out = tmp_path / "out"
    with pytest.raises(NeedsContainer) as info:
        run_task(spec, RunOptions(workdir=tmp_path, out=out), engine=missing)
    message = str(info.value)
    assert "needs a container (environment/Dockerfile)" in message and "[environment] host_ok = true" in message
    assert message.endswith("no container engine on PATH (looked for docker, podman)")
    assert not out.exists()
    usable = EngineStatus("docker", "/usr/bin/docker", True, "docker at /usr/bin/docker answers")
    assert refusal(spec, usable) is None  # it runs in the engine's containers (tests/test_harbor_container.py)
    two = "services:\n  main:\n    image: python:3.12\n  db:\n    image: postgres:15\n"
    compose = make_task(tmp_path / "k", "", files={"environment/compose.yaml": two})
    with pytest.raises(Refused, match=r"environment/compose\.yaml: services: defines 2 services \(main, db\): a "
                       r"multi-container task"):  # fmt: skip
        run_task(load_task(compose), RunOptions(solution=True), engine=usable)
    image = make_task(tmp_path / "i", "[environment]\ndocker_image = 'python:3.12'\n")
    assert load_task(image).container == ("[environment] docker_image = 'python:3.12'",)
    assert load_task(image).docker_image == "python:3.12"


@pytest.mark.slow
def test_find_engine_reads_path(tmp_path: Path) -> None:
    assert find_engine(str(tmp_path)).name is None
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    down = find_engine(str(tmp_path))
    assert (down.name, down.usable) == ("docker", False) and "does not answer: Cannot connect" in down.detail
    podman = tmp_path / "podman"  # docker does not answer, podman does: podman it is
    podman.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    podman.chmod(0o755)
    assert (find_engine(str(tmp_path)).name, find_engine(str(tmp_path)).usable) == ("podman", True)
    podman.write_text("#!/bin/sh\necho 'cannot connect to Podman' >&2\nexit 125\n", encoding="utf-8")
    both = find_engine(str(tmp_path))
    assert (both.name, both.usable) == ("docker", False)
    assert "docker is on PATH" in both.detail and "; podman is on PATH" in both.detail
    fake.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    assert find_engine(str(tmp_path)).usable and find_engine(str(tmp_path)).name == "docker"


@pytest.mark.slow
@pytest.mark.parametrize("docker", ["absent", "daemon down"])
def test_cli_refuses_a_container_task_without_an_engine(tmp_path: Path, docker: str) -> None:
    task = make_task(tmp_path / "c", "[verifier]\ntimeout_sec = 10\n", files={"environment/Dockerfile": "FROM alpine\n"})
    bin_dir = tmp_path / "bin"  # PATH is exactly this folder: whether this machine has docker does not matter
    bin_dir.mkdir()
    if docker == "daemon down":
        (bin_dir / "docker").write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
        (bin_dir / "docker").chmod(0o755)
    workdir = tmp_path / "wd"
    workdir.mkdir()
    result = cli("run", str(task), "--workdir", str(workdir), env={"PATH": str(bin_dir)})
    assert result.returncode == EXIT_REFUSED, result.stderr
    assert "refused: task c needs a container (environment/Dockerfile)" in result.stderr
    expected = ("no container engine on PATH (looked for docker, podman)" if docker == "absent"
                else "docker is on PATH")  # fmt: skip
    assert expected in result.stderr
    assert not (workdir / "logs").exists()  # nothing ran, nothing written
    check = cli("check", str(task), "--json", env={"PATH": str(bin_dir)})
    assert check.returncode == EXIT_REFUSED
    report = json.loads(check.stdout)
    assert report["runs_here"] is False and expected in report["why_not"]


# ---------------------------------------------------------------------------- runs


@pytest.mark.slow
@pytest.mark.parametrize("task", [CSV, REPORT], ids=lambda p: p.name)
def test_the_oracle_solves_each_fixture_and_the_initial_state_does_not(tmp_path: Path, task: Path) -> None:
    spec = load_task(task)
    out = tmp_path / "verifier"
    ledger = tmp_path / "ledger.sqlite"
    result = run_task(spec, RunOptions(solution=True, out=out, ledger=ledger, benchmark="fixtures"))
    assert result.exit_code == EXIT_SOLVED and result.valid is True and result.findings == []
    assert result.solve is not None and result.solve["exit_code"] == 0
    oracle, initial = result.verification, result.initial
    assert initial is not None and oracle.reward is not None and initial.reward is not None
    assert (oracle.status, oracle.reward.reward, oracle.reward.solved) == ("verdict", 1.0, True)
    assert initial.status == "verdict" and not initial.reward.solved
    assert oracle.envelope["score"]["resolved"] == "resolved"
    document = json.loads((out / "objective-scoring.json").read_text(encoding="utf-8"))
    assert document["valid"] is True and document["metric_space"] == spec.metric_space
    assert (out / "test-stdout.txt").is_file()
    # one ledger entry of kind harbor, in the task's own metric space
    assert result.ledger is not None and document["ledger"]["seq"] == result.ledger["seq"] == 1
    assert verify(ledger).ok
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries())
    body = entry.data
    assert (entry.kind, body["source"], body["task"], body["mode"], body["benchmark"]) == (
        "harbor", "harbor", spec.name, "oracle", "fixtures")
    assert (body["metric_space"], body["threshold"], body["tiers"]) == (
        spec.metric_space, spec.rules.solved_threshold, [t.name for t in spec.rules.tiers])
    assert (body["outcome"], body["failure_class"], body["solved"], body["valid"]) == ("valid", "none", True, True)
    assert (body["verifier"], body["where"], body["reward"]["reward"]) == ("objective-scoring", "host", 1.0)
    assert [t["status"] for t in body["tests"]] == ["passed"] * (oracle.reward.total or 0)
    assert body["initial"]["solved"] is False and body["initial"]["reward"]["reward"] == initial.reward.reward
    assert body["patch_ref"] == oracle.patch_ref and body["initial"]["patch_ref"] == initial.patch_ref
    digests = body["digests"]
    assert digests["patch"] == oracle.patch_ref and digests["task"] == result.task_digest
    assert digests["environment"].startswith("sha256:") and digests["score"].startswith("sha256:")
    if spec.metric_space == "binary":
        assert (out / "reward.txt").read_text() == "1\n" and not (out / "reward.json").exists()
        assert (initial.reward.passed, initial.reward.total) == (1, 3)  # the bug leaves one test passing
    else:
        assert not (out / "reward.txt").exists()
        assert json.loads((out / "reward.json").read_text()) == {
            "reward": 1.0, "solved": 1, "tests_passed": 4, "tests_total": 4, "tier": 2}
        assert (initial.reward.reward, initial.reward.tier) == (0.0, "incomplete")


@pytest.mark.slow
def test_a_partial_fix_keeps_its_continuous_reward_and_tier(tmp_path: Path) -> None:
    workdir = tmp_path / "app"
    workdir.mkdir()
    shutil.copy(REPORT / "environment" / "sales.csv", workdir)
    (workdir / "report.md").write_text("# Sales report\n", encoding="utf-8")
    stale = workdir / "logs" / "verifier"
    stale.mkdir(parents=True)
    (stale / "reward.txt").write_text("1\n")  # an earlier run's: removed, never read by the tests
    result = run_task(load_task(REPORT), RunOptions(workdir=workdir))
    reward = result.verification.reward
    assert reward is not None
    assert (reward.reward, reward.threshold, reward.solved, reward.tier) == (0.5, 0.95, False, "partial")
    assert result.exit_code == EXIT_NOT_SOLVED
    assert not (stale / "reward.txt").exists()
    assert json.loads((stale / "reward.json").read_text()) == {
        "reward": 0.5, "solved": 0, "tests_passed": 2, "tests_total": 4, "tier": 1}
    statuses = {t["id"]: t["status"] for t in result.verification.envelope["tests"]}
    assert statuses["test_outputs.py::test_summary_json"] == "failed"
    assert (workdir / "report.md").read_text() == "# Sales report\n"  # the working state is never modified


@pytest.mark.slow
@pytest.mark.parametrize("state", ["untouched", "module deleted"])
def test_binary_task_on_a_broken_working_state(tmp_path: Path, state: str) -> None:
    workdir = tmp_path / "app"
    shutil.copytree(CSV / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
    # a working state that ships its own pytest would replace the verifier: removed from the copy
    (workdir / "pytest.py").write_text("raise SystemExit(0)\n")
    if state == "module deleted":
        (workdir / "csvtotal.py").unlink()
    out = tmp_path / "out"
    (out).mkdir()
    (out / "reward.json").write_text('{"reward": 1}')  # stale: Harbor would read it before reward.txt
    result = run_task(load_task(CSV), RunOptions(workdir=workdir, out=out))
    verification = result.verification
    assert verification.status == "verdict" and verification.removed == ["pytest.py"]
    assert verification.reward is not None and verification.reward.total == 3
    assert verification.reward.passed == (1 if state == "untouched" else 0)
    assert result.exit_code == EXIT_NOT_SOLVED
    assert (out / "reward.txt").read_text() == "0\n" and not (out / "reward.json").exists()
    if state == "module deleted":  # the test module does not import: its three tests count as not passed
        assert verification.envelope["session"]["collect_errors"]
        assert {t["status"] for t in verification.envelope["tests"]} == {"missing"}


SOLVE_NOTHING = {"solution/solve.sh": "true\n"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tests", "finding"),
    [
        ("from pathlib import Path\n\ndef test_done():\n    assert Path('done.txt').exists()\n",
         "the oracle does not solve the task (reward 0 < threshold 1; 0/1 tests passed)"),
        # the tests see the task's [verifier] env and $TEST_DIR, as in Harbor
        (("import os\n\ndef test_trivial():\n    assert os.environ['GREETING'] == 'hello'\n"
          "    assert os.path.isfile(os.path.join(os.environ['TEST_DIR'], 'test_outputs.py'))\n"),
         "the untouched initial state already solves the task"),
    ],
    ids=["oracle-fails", "initial-passes"],
)
def test_an_invalid_task_is_flagged(tmp_path: Path, tests: str, finding: str) -> None:
    toml = "[verifier]\nenv = { GREETING = '${OBJECTIVE_TEST_UNSET_VAR:-hello}' }\n[environment]\nhost_ok = true\n"
    task = make_task(tmp_path / "bad", toml, tests=tests, files=SOLVE_NOTHING)
    result = run_task(load_task(task), RunOptions(solution=True, out=tmp_path / "out"))
    assert result.exit_code == EXIT_NOT_SOLVED and result.valid is False
    assert [f.severity for f in result.findings] == ["invalid"] and finding in result.findings[0].message


@pytest.mark.slow
def test_a_verifier_timeout_is_no_verdict_and_writes_no_reward(tmp_path: Path) -> None:
    task = make_task(tmp_path / "slow", "[verifier]\ntimeout_sec = 1\n",
                     tests="import time\n\ndef test_slow():\n    time.sleep(60)\n")  # fmt: skip
    workdir = tmp_path / "wd"
    workdir.mkdir()
    ledger = tmp_path / "ledger.sqlite"
    result = run_task(load_task(task), RunOptions(workdir=workdir, timeout=300, ledger=ledger))
    assert result.exit_code == EXIT_REFUSED
    assert result.verification.no_verdict_reason == ("the verifier timed out after 1s; the initial state gives no "
                                                     "verdict either (the verifier timed out after 1s)")  # fmt: skip
    assert result.verification.timeout_source == "task.toml [verifier] timeout_sec"
    out = workdir / "logs" / "verifier"
    assert sorted(p.name for p in out.iterdir()) == ["objective-scoring.json", "test-stdout.txt"]
    # recorded as an infrastructure failure, never as "not solved"
    assert (result.outcome, result.failure_class) == ("infrastructure_failure", "verifier")
    with Ledger(ledger) as opened:
        [entry] = list(opened.entries("harbor"))
    body = entry.data
    assert (body["status"], body["solved"], body["outcome"], body["failure_class"], body["reward"]) == (
        "no_verdict", None, "infrastructure_failure", "verifier", None)
    assert body["no_verdict_reason"].startswith("the verifier timed out after 1s") and body["exit_code"] == EXIT_REFUSED


@pytest.mark.slow
def test_a_working_state_that_breaks_its_own_run_is_not_solved_never_infrastructure(tmp_path: Path) -> None:
    """Review: a working state that hangs, or ends the test process, used to be recorded as the
    verifier's failure, and so left out of a solve rate. The initial state, run the same way,
    gives a verdict: the failure is the working state's."""
    ledger = tmp_path / "ledger.sqlite"
    task = shutil.copytree(CSV, tmp_path / "task")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60.0", "timeout_sec = 3.0"))  # the verifier's
    for name, code in (("exits", "import os\nos._exit(0)\n"), ("hangs", "import time\ntime.sleep(60)\n"),
                       ("says-pytest-is-missing", SAYS_PYTEST_IS_MISSING),
                       ("claims-to-come-from-elsewhere", CLAIMS_TO_COME_FROM_ELSEWHERE)):  # fmt: skip
        workdir = tmp_path / name
        shutil.copytree(CSV / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
        (workdir / "csvtotal.py").write_text(code)
        spec = load_task(task)
        result = run_task(spec, RunOptions(workdir=workdir, timeout=3, ledger=ledger, out=tmp_path / name / "out"))
        assert (result.outcome, result.failure_class, result.exit_code) == ("not_solved", "solver", EXIT_NOT_SOLVED), name
        assert result.verification.reward is not None and result.verification.reward.reward == 0.0
        assert "working state broke its own run" in (result.verification.attribution or "")
    assert "the tests imported csvtotal from " in (result.verification.attribution or ""), "its record did say so"
    with Ledger(ledger) as opened:
        bodies = [e.data for e in opened.entries("harbor")]
    assert [(b["outcome"], b["failure_class"], b["solved"]) for b in bodies] == [("not_solved", "solver", False)] * 4


# Red team: the working state's code writes python's words for a missing pytest to every output of its
# run (the log pytest's capture saved), and ends the run. It used to be recorded as an infrastructure
# failure (setup), and so left out of a solve rate: the control run must show it too.
SAYS_PYTEST_IS_MISSING = """\
import os
for fd in range(1, 64):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if not target.endswith(".jsonl"):  # not the record: forging it is caught otherwise
            os.write(fd, b"/usr/bin/python3: No module named pytest\\n")
    except OSError:
        pass
os._exit(1)
"""


# Red team: the working state's module says it was imported from outside the copy (its __file__
# rewritten), which the recorder reports as a stale copy shadowing the state: a setup failure, on
# the state's word. The control run must show it too.
CLAIMS_TO_COME_FROM_ELSEWHERE = """\
import os
__file__ = os.path.join(os.environ.get("OBJECTIVE_SCORING_ORIGINAL", "/x"), "elsewhere", "csvtotal.py")

def total(path):
    return 0
"""

@pytest.mark.slow
def test_an_interpreter_without_pytest_is_the_machines_failure_shown_by_the_control_run_too(tmp_path: Path) -> None:
    # a virtualenv of this interpreter without its packages: no pytest (an interpreter started with
    # -S would not do: the boot module runs site itself, as the interpreter would without -I -S)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    workdir = shutil.copytree(CSV / "environment", tmp_path / "wd", ignore=shutil.ignore_patterns("Dockerfile"))
    result = run_task(load_task(CSV), RunOptions(workdir=workdir, python=str(python), ledger=None, out=tmp_path / "out"))
    verification = result.verification
    assert (result.outcome, result.failure_class, result.exit_code) == ("infrastructure_failure", "setup", EXIT_REFUSED)
    assert (verification.status, verification.failure_class, verification.reward) == ("no_verdict", "setup", None)
    assert verification.no_verdict_reason == (f"pytest is not installed for {python}; the initial state gives no "
                                              f"verdict either (pytest is not installed for {python})")  # fmt: skip


@pytest.mark.slow
def test_a_working_state_that_forges_its_record_is_not_solved(tmp_path: Path) -> None:
    """Review: code of the working state appended passed facts and a session line to the record
    file named in its environment, and the run read SOLVED. The recorder now takes the file and its
    key out of the environment before that code runs, and signs every line."""
    forger = textwrap.dedent(
        """
        import json, os
        def total(path):
            return -1
        path = os.environ.get("OBJECTIVE_SCORING_RECORD")
        for fd in os.listdir("/proc/self/fd"):  # the knowing attacker: find the open record file
            try:
                target = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                continue
            if target.endswith(".jsonl"):
                path = int(fd)  # the descriptor itself: in the sandbox no path leads to the record
        if path:
            with open(path, "a", closefd=not isinstance(path, int)) as handle:
                for test in ("test_total_of_orders", "test_single_row", "test_header_only_is_zero"):
                    for when in ("setup", "call", "teardown"):
                        handle.write(json.dumps({"type": "test", "nodeid": "tests/test_outputs.py::" + test,
                                                 "when": when, "outcome": "passed", "duration": 0.0}) + "\\n")
                handle.write(json.dumps({"type": "session", "exitstatus": 0}) + "\\n")
        """
    )
    workdir = tmp_path / "wd"
    shutil.copytree(CSV / "environment", workdir, ignore=shutil.ignore_patterns("Dockerfile"))
    (workdir / "csvtotal.py").write_text(forger)
    result = run_task(load_task(CSV), RunOptions(workdir=workdir, timeout=60, out=tmp_path / "out"))
    assert (result.outcome, result.exit_code) == ("not_solved", EXIT_NOT_SOLVED)
    flags = [flag["kind"] for flag in result.verification.envelope["integrity"]["flags"]]
    assert "record_forged" in flags


# ---------------------------------------------------------------------------- the command line


@pytest.mark.slow
def test_cli_end_to_end(tmp_path: Path) -> None:
    check = cli("check", str(REPORT), "--json")
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    assert report["runs_here"] is True and len(report["tests"]) == 4
    assert report["task"]["rules"]["metric_space"] == "continuous_reward"

    run = cli("run", str(CSV), "--solution", "--json", cwd=tmp_path)  # default --out under the current folder
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert (data["mode"], data["valid"], data["reward"]["reward"], data["initial"]["reward"]["solved"]) == (
        "oracle", True, 1.0, False)
    out = tmp_path / ".objective-scoring" / "harbor" / "fix-csv-total" / "verifier"
    assert (out / "reward.txt").read_text() == "1\n" and data["out"] == str(out)
    # the default ledger, as every command's: .objective-scoring/ledger.sqlite in the current folder
    assert data["ledger"]["seq"] == 1 and data["ledger"]["path"] == ".objective-scoring/ledger.sqlite"
    ledger = tmp_path / ".objective-scoring" / "ledger.sqlite"
    checked = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "ledger", "verify", "--ledger",
                              str(ledger)], check=False, capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0 and "1 rows, chain intact" in checked.stdout
    # harbor entries are never read as SWE-style resolve rates: costs and ledger show read kind score only
    for args in (["costs", "--json"], ["ledger", "show", "--json"]):
        read = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args, "--ledger", str(ledger)],
                              check=False, capture_output=True, text=True)  # fmt: skip
        assert read.returncode == 0, read.stderr
        shown = json.loads(read.stdout)
        if args[0] == "costs":
            assert (shown["runs"], shown["benchmarks"]) == (0, [])
        else:
            assert shown == []

    workdir = tmp_path / "app"
    workdir.mkdir()
    shutil.copy(REPORT / "environment" / "sales.csv", workdir)
    subprocess.run(["bash", str(REPORT / "solution" / "solve.sh")], cwd=workdir, check=True)
    (workdir / "summary.json").unlink()  # three of four tests pass: 0.75 < 0.95
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    table = cli("run", str(REPORT), "--workdir", str(workdir), "--out", str(tmp_path / "v"), "--no-ledger", cwd=elsewhere)
    assert table.returncode == EXIT_NOT_SOLVED, table.stderr
    assert "0.75" in table.stdout and "partial" in table.stdout and "NOT SOLVED" in table.stdout
    assert "workdir: verified by this project's verifier, on this machine" in table.stdout
    assert json.loads((tmp_path / "v" / "reward.json").read_text())["reward"] == 0.75
    assert "ledger:" not in table.stdout and not (elsewhere / ".objective-scoring").exists()  # --no-ledger
    recorded = cli("run", str(REPORT), "--workdir", str(workdir), "--out", str(tmp_path / "v"), "--ledger",
                   str(tmp_path / "mine.sqlite"), cwd=elsewhere)  # fmt: skip
    assert f"ledger: entry 1 appended to {tmp_path / 'mine.sqlite'}" in recorded.stdout.replace("\n", "")
    with Ledger(tmp_path / "mine.sqlite") as opened:
        [entry] = list(opened.entries())
    assert (entry.data["outcome"], entry.data["failure_class"], entry.data["reward"]["reward"]) == (
        "not_solved", "solver", 0.75)


@pytest.mark.slow
def test_cli_bad_input(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", "[verifier]\ntimeout_sec = 'soon'\n")
    for args in (["check", str(task)], ["run", str(task), "--solution"]):
        result = cli(*args)
        assert result.returncode == 2
        assert f"{task / 'task.toml'}: [verifier] timeout_sec: expected a finite number of seconds > 0" in result.stderr
    good = make_task(tmp_path / "g", "")
    missing = cli("run", str(good), "--workdir", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "--workdir" in missing.stderr and "no such file or directory" in missing.stderr
    no_solution = cli("run", str(good), "--solution")
    assert no_solution.returncode == 2 and "no solution script" in no_solution.stderr
    both = cli("run", str(good), "--solution", "--workdir", str(tmp_path))
    assert both.returncode == 2 and "not allowed with" in both.stderr


# ---------------------------------------------------------------------------- what a task asks of its environment


def test_a_harbor_compose_file_overrides_the_main_service_built_from_the_dockerfile(tmp_path: Path) -> None:
    from pytest_objective_scoring.harbor import runs_in

    override = "services:\n  main:\n    environment:\n      MODE: test\n    working_dir: /srv\n    network_mode: none\n"
    task = make_task(tmp_path / "h", "", files={"environment/Dockerfile": "FROM python:3.12\n",
                                                "environment/docker-compose.yaml": override})  # fmt: skip
    spec = load_task(task)
    assert spec.compose is not None and spec.refused == () and runs_in(spec) == "container"
    assert (spec.compose.name, spec.compose.dockerfile, spec.compose.workdir) == (
        "main", task / "environment" / "Dockerfile", "/srv")
    assert dict(spec.compose.environment) == {"MODE": "test"}
    assert spec.network == {"agent": "no-network", "verifier": "no-network"}  # network_mode: none
    uses = {k.key: k.use for k in spec.keys if k.file == "environment/docker-compose.yaml"}
    assert uses == {"services.main.environment": "honoured", "services.main.working_dir": "honoured",
                    "services.main.network_mode": "honoured", "services.main": "honoured"}  # fmt: skip
    # a service beside Harbor's own main service is a second container
    (task / "environment" / "docker-compose.yaml").write_text("services:\n  sidecar:\n    image: redis:7\n")
    why = refusal(load_task(task), EngineStatus("docker", "/usr/bin/docker", True, "answers"))
    assert why is not None and "defines a service 'sidecar' beside the 'main' service Harbor adds" in why


def test_base_image_substitution_keeps_stages_and_what_the_replaced_image_set() -> None:
    from pytest_objective_scoring.harbor.environment import base_images, substitute_base

    dockerfile = ("FROM --platform=linux/amd64 golang:1.22 AS build\nRUN go build\n"
                  "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\nCOPY --from=build /out /app\n"
                  "FROM build AS again\nFROM scratch\n")  # fmt: skip
    text, replaced = substitute_base(dockerfile, "local/base:1")
    assert replaced == ["golang:1.22", "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624"]
    assert base_images(dockerfile) == replaced
    assert text.splitlines() == ["FROM --platform=linux/amd64 local/base:1 AS build", "RUN go build",
                                 "FROM local/base:1", "WORKDIR /app", "COPY --from=build /out /app",
                                 "FROM build AS again", "FROM scratch"]  # fmt: skip


def test_container_paths_are_found_in_code_not_in_docstrings_or_comments(tmp_path: Path) -> None:
    from pytest_objective_scoring.harbor.environment import container_paths, megabytes, seconds

    test = tmp_path / "test_x.py"
    test.write_text('"""Runs in /app."""\n# see /app/x\nP = "/app/out.txt"\nQ = "/usr/app/x"\nR = "x/tests/y"\n'
                    'def test_a():\n    """/tests docstring"""\n    assert open("/tests/data").read()\n')  # fmt: skip
    assert container_paths(test) == [(3, "/app"), (8, "/tests")]
    script = tmp_path / "solve.sh"
    script.write_text("# writes /app\ncd /logs/verifier && echo 1 > reward.txt  # /solution\necho $HOME/app\n")
    assert container_paths(script) == [(2, "/logs")]
    assert container_paths(script, ["/workspace"]) == []
    assert (megabytes("2G"), megabytes("512m"), megabytes("1.5GiB"), megabytes("10G"), megabytes("two")) == (
        2048, 512, 1536, 10240, None)
    assert (seconds("1m30s"), seconds("500ms"), seconds(5), seconds("soon")) == (90.0, 0.5, 5.0, None)
