"""The claim ladder cannot be gamed (issue 15): each route a reviewer found is refused or downgraded, by
rule, and a stored claim is recomputed when read."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_objective_scoring import ab
from pytest_objective_scoring.ab_claims import C2_MIN_TASKS, c2_blockers, claim_level
from pytest_objective_scoring.identity import FACET_PREFIXES

P = FACET_PREFIXES[0]  # the key of a task's fix: comparisons record it beside the whole task's key (problem_keys)

from .conftest import FIXTURES
from .runner_helpers import run_cli_here as run_cli  # in this process: see run_cli_here

pytest.importorskip("scipy.stats", reason="scipy is a test dependency: pip install -e '.[test]'")

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
ACCESS = {"network": False, "repository_history": False, "hidden_tests": False, "gold": False}


def c2_facts(**details_changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A comparison whose facts reach C2, changed by ``details_changes`` (``record_*`` keys change the record)."""
    details = {
        "infrastructure_failures": 0, "admissible": True, "inadmissible_because": [], "inadmissible_fixed": [],
        "benchmark": {"id": "bench-a"}, "tasks": 24, "task_digests": [f"sha256:a{i}" for i in range(24)],
        "arm_kinds": [{"name": "baseline", "kind": "native", "harness_version": "h-1"},
                      {"name": "candidate", "kind": "governed", "harness_version": "h-2"}],
        "environment_parity": {"identical": True}, "power": {"min_effect": 0.1, "powered": True},
        "test": {"test": "primary", "primary": True, "alpha": 0.05, "p_value": 0.001}, "outcomes_identical": False,
    }  # fmt: skip
    record = {"seeds": [1, 2, 3, 4, 5], "change_under_test": "loc v2", "frozen": {"model": "m"},
              "result": {"significant": "yes", "delta": 0.2, "recommendation": "keep"}}  # fmt: skip
    for key, value in details_changes.items():
        if key.startswith("record_"):
            record[key[len("record_"):]] = value
        else:
            details[key] = value
    return details, record


def test_a_comparison_with_every_fact_in_place_reaches_c2_and_names_its_scope():
    level, reasons = claim_level(*c2_facts(), holm_p=0.001)
    assert level == "C2" and "24 tasks, 5 seeds" in reasons[1] and "scoped to benchmark bench-a" in reasons[1]
    assert reasons[-1].startswith("C4 is never reached from benchmark evidence")


@pytest.mark.parametrize(
    ("change", "holm_p", "reason"),
    [
        ({"admissible": False, "inadmissible_because": ["quarantined runs are not admissible: task_audit_overdue (2)"]},
         0.001, "not admissible (quarantined runs"),
        ({"tasks": C2_MIN_TASKS - 1}, 0.001, "19 task(s), fewer than 20"),
        ({"record_seeds": [1, 2, 3, 4]}, 0.001, "4 seed(s), fewer than 5"),
        ({"arm_kinds": [{"name": "baseline", "kind": "governed", "harness_version": "h-1"},
                        {"name": "candidate", "kind": "governed", "harness_version": "h-2"}]}, 0.001,
         "arms governed -> governed do not isolate a change"),
        ({"arm_kinds": [{"name": "baseline", "kind": "native", "harness_version": "h-1"},
                        {"name": "candidate", "kind": "governed", "harness_version": "h-1"}]}, 0.001,
         "both arms declare harness version 'h-1'"),
        ({"environment_parity": {"identical": False, "why": "1 task(s) graded in different environments"}}, 0.001,
         "not graded in identical environments (1 task(s) graded in different environments"),
        ({"power": {"min_effect": None}}, 0.001, "no smallest effect worth detecting was preregistered"),
        ({"power": {"min_effect": 0.02, "powered": False, "why": "the smallest effect it detects ... is 0.231"}}, 0.001,
         "the smallest effect it detects"),
        ({"family": {"experiments": 3}}, 0.09, "not significant once the 3 experiments on this change are counted"),
        ({"record_result": {"significant": "yes", "delta": 0.2, "recommendation": "pare_back"}}, 0.001,
         "the recommendation is pare_back"),
        ({"test": {"test": "primary", "primary": True, "alpha": 0.1, "p_value": 0.001}}, 0.001,
         "alpha 0.1 is looser than 0.05"),
        ({"power": {"min_effect": 0.3, "powered": True}}, 0.001, "the uplift +0.200 is below the preregistered smallest"),
        ({"test": {"test": "exact McNemar test on discordant task-seed pairs", "alpha": 0.05, "p_value": 0.001}}, 0.001,
         "recorded by an older version whose significance pooled (seed, task) pairs"),
    ],
)  # fmt: skip
def test_c2_is_refused_whenever_one_of_its_facts_is_missing(change, holm_p, reason):
    details, record = c2_facts(**change)
    level, reasons = claim_level(details, record, holm_p=holm_p)
    assert level == "C0" and reason in reasons[1], reasons
    assert reason in " ".join(c2_blockers(details, record, holm_p))


def test_the_same_problem_renamed_reworded_or_reformatted_is_the_same_problem():
    from pytest_objective_scoring.ab_claims import problem_identity

    row = {"instance_id": "x-1", "repo": "o/r", "base_commit": "abc", "problem_statement": "Fix it.",
           "patch": "diff --git a/f b/f\n+x\n", "test_patch": "", "FAIL_TO_PASS": ["t::a"], "PASS_TO_PASS": ["t::b", "t::c"]}
    copy = dict(row, instance_id="x-1-copy", problem_statement="Fix it, please.\n", created_at="2025-01-01",
                patch="diff --git a/f b/f\n+x  \n", PASS_TO_PASS=["t::c", "t::b"])  # fmt: skip
    assert problem_identity(row) == problem_identity(copy)
    assert problem_identity(row) != problem_identity(dict(row, patch="diff --git a/f b/f\n+y\n"))


def test_c3_needs_another_benchmark_family_with_disjoint_tasks_not_another_name():
    details, record = c2_facts(problem_digests=[f"{P}p{i}" for i in range(24)])
    same_tasks = {"name": "renamed", "benchmark": "bench-a-v2", "problem_digests": details["problem_digests"], "c2": True}
    level, reasons = claim_level(details, record, holm_p=0.001, replications=[same_tasks])
    assert level == "C2" and "renamed (bench-a-v2: shares tasks with this one) do not count" in reasons[2]
    one_shared = dict(same_tasks, problem_digests=[f"{P}p3", f"{P}z1"])
    assert claim_level(details, record, holm_p=0.001, replications=[one_shared])[0] == "C2"
    same_id = {"name": "again", "benchmark": "bench-a", "problem_digests": [f"{P}z1"], "c2": True}
    assert claim_level(details, record, holm_p=0.001, replications=[same_id])[0] == "C2"
    unknown = {"name": "old", "benchmark": "swe-bench-lite", "problem_digests": None, "c2": True}
    assert claim_level(details, record, holm_p=0.001, replications=[unknown])[0] == "C2", "no problem digests: no proof"
    elsewhere = {"name": "swe", "benchmark": "swe-bench-lite", "problem_digests": [f"{P}z1", f"{P}z2"], "c2": True}
    level, reasons = claim_level(details, record, holm_p=0.001, replications=[elsewhere])
    assert level == "C3" and "swe (swe-bench-lite)" in reasons[2]
    assert claim_level(details, record, holm_p=0.001, replications=[dict(elsewhere, c2=False)])[0] == "C2"


def test_c1_and_none_are_decided_as_before():
    details, record = c2_facts(arm_kinds=[{"name": "baseline", "kind": "native", "harness_version": "h-1"},
                                          {"name": "candidate", "kind": "passive", "harness_version": "h-2"}],
                               outcomes_identical=True,
                               record_result={"significant": "no", "delta": 0.0, "recommendation": "reject"})  # fmt: skip
    assert claim_level(details, record, holm_p=1.0)[0] == "C1"
    assert claim_level(*c2_facts(infrastructure_failures=2))[0] == "none"


# ---------------------------------------------------------------- recomputed when read, against the ledger


def _audit(ledger: Any, instance: Any, disposition: str = "valid") -> None:
    from pytest_objective_scoring.audit_ledger import record_audit

    findings = [] if disposition == "valid" else [{"kind": "empty_patch_resolves"}]
    record_audit(ledger, {"instance_id": instance.instance_id, "disposition": disposition, "complete": True,
                          "findings": findings, "checks": []}, instance.fields, every_days=30, environment={})  # fmt: skip


def _fake_instances(name: str, count: int) -> list[Any]:
    """``count`` distinct tasks of their own (content-addressed: each gets its own task id)."""
    from pytest_objective_scoring.instances import parse_instance

    return [parse_instance({"instance_id": f"{name}__t{i}", "repo": f"o/{name}", "base_commit": f"{i:040x}",
                            "patch": f"diff {name} {i}", "test_patch": f"test {name} {i}", "FAIL_TO_PASS": [f"t{i}"],
                            "PASS_TO_PASS": []}, f"{name}.json") for i in range(count)]  # fmt: skip


def _graded_evidence(ledger: Any, name: str, instances: list[Any], gained: int,
                     seeds: Sequence[int]) -> tuple[list[dict[str, Any]], dict[str, dict[tuple[int, str], bool]], str]:  # fmt: skip
    """Score entries of experiment ``name``, one per arm, seed and task, as ``ab run`` writes them: the
    baseline resolves nothing, the candidate the first ``gained`` tasks on every seed. Returns the
    comparison's ``graded_runs``, the outcomes and the jobs digest."""
    import hashlib

    from pytest_objective_scoring.sets import task_id_of

    runs, keys = [], []
    outcomes: dict[str, dict[tuple[int, str], bool]] = {"baseline": {}, "candidate": {}}
    for arm in ("baseline", "candidate"):
        for seed in seeds:
            for index, instance in enumerate(instances):
                resolved = arm == "candidate" and index < gained
                key = hashlib.sha256(f"{name}/{arm}/{seed}/{instance.instance_id}".encode()).hexdigest()
                entry = ledger.append("score", {"instance_id": instance.instance_id, "model_name_or_path":
                                                f"ab:{name}/{arm}/seed{seed}", "job_key": key, "disposition": "eligible",
                                                "reasons": [], "outcome": "resolved" if resolved else "not_resolved",
                                                "environment_digest": "sha256:one-environment"})  # fmt: skip
                ledger.append("cost", {"score_seq": entry.seq, "harness": f"ab:{name}/{arm}/seed{seed}",
                                       "cost": {"dollars": 0.1, "cpu": 1.0, "wall_time": 1.0, "tokens": None, "calls": None},
                                       "breakdown": {"model_dollars": 0.1}})  # fmt: skip
                runs.append({"seq": entry.seq, "task_id": task_id_of(instance)})
                outcomes[arm][(seed, instance.instance_id)] = resolved
                keys.append(key)
    return runs, outcomes, "sha256:" + hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


def _task_set_of(ledger: Any, name: str, instances: list[Any], role: str = "regression") -> dict[str, str]:
    """A regression set of ``instances`` made in ``ledger`` for experiment ``name``, pinned as ``ab
    preregister`` pins it (the claim reader reads the set's role from its own entries)."""
    import hashlib

    from pytest_objective_scoring.commands.ab import _pin
    from pytest_objective_scoring.sets import create_set

    return _pin(create_set(ledger, "s" + hashlib.sha256(name.encode()).hexdigest()[:10], role, instances, "static:tests"))


def _stored_comparison(ledger: Any, name: str, change: str = "loc v2", benchmark: str = "bench-a",
                       p_value: float = 0.001, recommendation: str = "keep", instances: list | None = None,
                       claim: str = "C2", problems: list | None = None, declared: bool = True) -> list[Any]:  # fmt: skip
    """A comparison whose summary its graded runs bear out, as ``ab run`` writes it, on ``instances``
    (24 tasks of its own, each audited valid, by default). ``p_value`` picks the evidence: 0.05 or more,
    no task gained (p = 1); from 0.01, 4 of 24 tasks gained on every seed (p about 0.04); below, 12 of
    24 (p far below 0.01). Returns the instances."""
    from pytest_objective_scoring import ab

    if instances is None:
        instances = _fake_instances(name, 24)
        for instance in instances:
            _audit(ledger, instance)
    seeds = [1, 2, 3, 4, 5]
    gained = 0 if p_value >= 0.05 else (round(len(instances) / 6) if p_value >= 0.01 else len(instances) // 2)
    graded, outcomes, jobs_digest = _graded_evidence(ledger, name, instances, gained, seeds)
    ids = sorted(i.instance_id for i in instances)
    delta, significant, test = ab.compare(outcomes["baseline"], outcomes["candidate"], seeds, ids, 0.05, True)
    details, record = c2_facts(benchmark={"id": benchmark}, test=test, tasks=len(ids), record_change_under_test=change,
                               record_result={"significant": significant, "delta": delta,
                                              "recommendation": recommendation})  # fmt: skip
    details["graded_runs"] = graded
    details["claim"] = claim
    details["problem_digests"] = problems
    details["per_task_resolved_seeds"] = {arm: {t: sum(outcomes[arm][(s, t)] for s in seeds) for t in ids}
                                          for arm in ("baseline", "candidate")}  # fmt: skip
    details.update(benchmark={"id": benchmark, "revision": "1", "metric_space": "binary_resolved"}, task_set="s@v1",
                   recommendation_because="by rule", pass_at_k={}, role="regression")  # fmt: skip
    cost = {"tokens": None, "calls": None, "cpu": 1.0, "wall_time": 1.0, "dollars": None}
    record["frozen"] = {"model": "m", "temperature": 0, "token_budget": 1, "tool_budget": 1, "task_set": "s",
                        "environment_image": "i", "timeout": 1, "candidate_count": 1}  # fmt: skip
    record["arms"] = [{"name": arm, "harness_version": version, "mean": 0.4, "variance": 0.0,
                       "resolved": [sum(outcomes[arm][(s, t)] for t in ids) for s in seeds],
                       "confidence_interval": [0.2, 0.6], "cost": cost}
                      for arm, version in (("baseline", "h-1"), ("candidate", "h-2"))]  # fmt: skip
    manifest = json.loads((FIXTURES / "ab" / "manifest.json").read_text())
    manifest.update(name=name, change_under_test=change, benchmark={"id": benchmark, "revision": "1",
                    "metric_space": "binary_resolved"}, seeds=seeds)  # fmt: skip
    manifest["decision_rule"] = {**manifest["decision_rule"], "min_effect": 0.1}
    for arm, version in zip(manifest["arms"], ("h-1", "h-2")):
        arm["harness_version"] = version
    ledger.append("ab_manifest", {"name": name, "digest": "sha256:x", "manifest": manifest,
                                  "task_set": _task_set_of(ledger, name, instances),
                                  "excluded_tasks": [], "power": details["power"]})  # fmt: skip
    ledger.append("ab_predictions", {"name": name, "manifest_digest": "sha256:x", "digest": "sha256:p",
                                     "arms": {arm: {f"{t} seed {s}": {"model_patch": None, "frozen": manifest["frozen"] if declared else {}}
                                                    for s in seeds for t in ids}
                                              for arm in ("baseline", "candidate")}})  # fmt: skip
    ledger.append("ab_comparison", {"name": name, "manifest_digest": "sha256:x", "record": record, "details": details,
                                    "claim_c2": claim in ("C2", "C3"), "jobs_digest": jobs_digest})  # fmt: skip
    return instances


@pytest.mark.slow
def test_a_claim_is_recomputed_when_read_and_a_later_audit_downgrades_it_saying_why(tmp_path):
    from pytest_objective_scoring.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        instances = _stored_comparison(ledger, "exp-c2")
    shown = json.loads(run_cli("ab", "show", "exp-c2", "--ledger", str(path), "--json").stdout)["details"]
    assert shown["claim"] == "C2" and "claim_downgraded" not in shown
    with Ledger(path) as ledger:  # a later audit finds one task invalid: every verdict on it is
        _audit(ledger, instances[0], "invalid")
    done = run_cli("ab", "show", "exp-c2", "--ledger", str(path), "--json")
    shown = json.loads(done.stdout)["details"]
    assert shown["claim"] == "C0" and shown["claim_downgraded"]["from"] == "C2" and shown["claim_downgraded"]["to"] == "C0"
    assert "invalid runs are not admissible: task_audit_invalid (10)" in " ".join(shown["claim_downgraded"]["because"])
    table = run_cli("ab", "show", "exp-c2", "--ledger", str(path))
    assert "DOWNGRADED from C2 (when written) to C0" in table.stdout
    report = run_cli("ab", "report", "exp-c2", "--ledger", str(path), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    assert "**Downgraded** from C2" in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.slow
def test_every_experiment_on_the_change_is_listed_and_counted_a_rejected_one_included(tmp_path):
    from pytest_objective_scoring.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "first-try", change="Loc  V2", p_value=0.6, recommendation="reject", claim="C0")
        _stored_comparison(ledger, "renamed-retry", benchmark="bench-a-renamed", p_value=0.03, claim="C2")
        ledger.append("ab_manifest", {"name": "never-run", "digest": "sha256:z", "task_set": {},
                                      "manifest": {"change_under_test": "loc\u00a0v2 ", "benchmark": {"id": "bench-b"}}})  # fmt: skip
        _stored_comparison(ledger, "unrelated", change="another change", p_value=0.0001)
    shown = json.loads(run_cli("ab", "show", "renamed-retry", "--ledger", str(path), "--json").stdout)["details"]
    family = shown["family"]
    assert family["experiments"] == 3 and [m["name"] for m in family["members"]] == ["first-try", "renamed-retry", "never-run"]
    first, retry, never = family["members"]
    assert first["status"] == "compared" and first["recommendation"] == "reject" and first["p_value"] == 1.0
    assert never["status"] == "preregistered, not run" and never["holm_p_value"] == 1.0
    assert 0.01 < retry["p_value"] < 0.05, "significant alone"
    assert retry["holm_p_value"] == pytest.approx(3 * retry["p_value"]) == shown["holm_p_value"]
    assert shown["claim"] == "C0" and shown["claim_downgraded"]["from"] == "C2"
    assert "not significant once the 3 experiments on this change are counted" in shown["claim_reasons"][1]
    report = run_cli("ab", "report", "renamed-retry", "--ledger", str(path), "--out", str(tmp_path / "r"))
    text = (tmp_path / "r" / "report.md").read_text()
    assert "## Every experiment on this change (3)" in text and "| first-try | `bench-a` | compared |" in text
    assert "| never-run | `bench-b` | preregistered, not run |" in text and report.returncode == 0


# ---------------------------------------------------------------- before the run: access, power, holdout


def _set_and_manifest(tmp_path: Path, **changes: Any) -> tuple[Path, Path]:
    from tests.test_ab import FROZEN, MANIFEST

    ledger = tmp_path / "ledger.sqlite"
    if not ledger.exists():
        made = run_cli("sets", "create", "regression", "--role", "regression", "--dataset", str(DATASET),
                       "--source", "static:fixtures", "--ledger", str(ledger))  # fmt: skip
        assert made.returncode == 0, made.stderr
    data = copy.deepcopy(MANIFEST)
    data["frozen"] = dict(FROZEN)
    for key, value in changes.items():
        data[key] = value
    manifest = tmp_path / f"{data['name']}.json"
    manifest.write_text(json.dumps(data))
    return ledger, manifest


@pytest.mark.slow
def test_an_arm_that_could_reach_the_answer_is_refused_at_preregistration(tmp_path):
    arms = [{"name": "baseline", "harness_version": "h-1", "kind": "native", "access": ACCESS},
            {"name": "candidate", "harness_version": "h-2", "kind": "governed", "access": {**ACCESS, "gold": True}}]
    ledger, manifest = _set_and_manifest(tmp_path, name="peeks", arms=arms)
    done = run_cli("ab", "preregister", str(manifest), "--ledger", str(ledger))
    assert done.returncode == 2 and "forbidden_access: arm candidate could reach gold" in done.stderr
    partial = [dict(arms[0]), {**arms[1], "access": {"network": False}}]
    ledger, manifest = _set_and_manifest(tmp_path, name="partial", arms=partial)
    done = run_cli("ab", "preregister", str(manifest), "--ledger", str(ledger))
    assert done.returncode == 2 and "access.repository_history is missing" in done.stderr


def test_undeclared_or_unequal_access_makes_the_evidence_quarantined():
    data = {"name": "x", "benchmark": {"id": "b"}, "change_under_test": "c", "seeds": [1],
            "frozen": {"model": "m", "temperature": 0, "token_budget": 1, "tool_budget": 1, "task_set": "s",
                       "environment_image": "i", "timeout": 1, "candidate_count": 1}}  # fmt: skip
    undeclared = ab.parse_manifest({**data, "arms": [{"name": "baseline", "harness_version": "1", "kind": "native"},
                                                     {"name": "candidate", "harness_version": "2", "kind": "governed",
                                                      "access": ACCESS}]}, "m")  # fmt: skip
    assert ab.access_findings(undeclared) == ([], ["access_undeclared: arm baseline does not declare what its solver could "
                                                   "reach (network, repository_history, hidden_tests, gold)"])  # fmt: skip
    unequal = ab.parse_manifest({**data, "arms": [{"name": "baseline", "harness_version": "1", "kind": "native", "access": ACCESS},
                                                  {"name": "candidate", "harness_version": "2", "kind": "governed",
                                                   "access": {**ACCESS, "network": True}}]}, "m")  # fmt: skip
    assert ab.access_findings(unequal)[1] == ["access_parity: the arms' declared access differs (network): the same "
                                              "authority envelope is required of a matched comparison"]  # fmt: skip


@pytest.mark.slow
def test_power_is_stated_at_preregistration_and_a_design_that_cannot_reach_its_claim_is_refused(tmp_path):
    ledger, manifest = _set_and_manifest(tmp_path, name="asks-c2",
                                         decision_rule={"alpha": 0.05, "min_effect": 0.1})  # fmt: skip
    refused = run_cli("ab", "preregister", str(manifest), "--ledger", str(ledger))
    assert refused.returncode == 2 and "the design cannot reach C2" in refused.stderr
    assert "3 task(s), C2 needs at least 20" in refused.stderr and "smallest p-value is 0.25" in refused.stderr
    ledger, manifest = _set_and_manifest(tmp_path, name="exploratory")
    done = run_cli("ab", "preregister", str(manifest), "--ledger", str(ledger), "--json")
    assert done.returncode == 0, done.stderr
    power = json.loads(done.stdout)["power"]
    assert power["reachable"] is False and power["powered"] is False and "exploratory" in power["statement"]
    table = run_cli("ab", "preregister", str(manifest), "--ledger", str(ledger))
    assert "power: 3 tasks x 5 seeds at alpha 0.05: minimum detectable effect at 80% power none: 3 task(s)" in " ".join(table.stdout.split())


def test_a_resumed_run_in_another_environment_is_refused_and_parity_is_judged_per_task():
    from types import SimpleNamespace

    from pytest_objective_scoring.ab_comparison import environment_parity
    from pytest_objective_scoring.commands.ab import _check_resumed_environment
    from pytest_objective_scoring.errors import CommandError as CommandErrorType

    job = SimpleNamespace(key="k1", python="/env/bin/python", instance=SimpleNamespace(instance_id="t-1"),
                          prediction=SimpleNamespace(model="ab:x/baseline/seed1"))  # fmt: skip
    _check_resumed_environment({"k1": {"seq": 4, "environment_digest": "sha256:a"}}, [job], {"/env/bin/python": "sha256:a"})
    with pytest.raises(CommandErrorType, match="the environment changed since the interrupted run"):
        _check_resumed_environment({"k1": {"seq": 4, "environment_digest": "sha256:a"}}, [job], {"/env/bin/python": "sha256:b"})
    with pytest.raises(CommandErrorType, match="packages not recorded"):
        _check_resumed_environment({"k1": {"seq": 4}}, [job], {"/env/bin/python": "sha256:b"})
    manifest = ab.parse_manifest({"name": "x", "benchmark": {"id": "b"}, "change_under_test": "c", "seeds": [1],
                                  "frozen": {"model": "m", "temperature": 0, "token_budget": 1, "tool_budget": 1,
                                             "task_set": "s", "environment_image": "i", "timeout": 1, "candidate_count": 1},
                                  "arms": [{"name": "baseline", "harness_version": "1", "kind": "native"},
                                           {"name": "candidate", "harness_version": "2", "kind": "governed"}]}, "m")  # fmt: skip
    rows = {("ab:x/baseline/seed1", "t-1"): {"environment_digest": "sha256:a"},
            ("ab:x/candidate/seed1", "t-1"): {"environment_digest": "sha256:a"}}  # fmt: skip
    assert environment_parity(manifest, ["t-1"], rows)["identical"]
    rows[("ab:x/candidate/seed1", "t-1")] = {"environment_digest": "sha256:b"}
    parity = environment_parity(manifest, ["t-1"], rows)
    assert not parity["identical"] and "t-1" in parity["why"]


@pytest.mark.slow
def test_the_environment_digest_changes_when_a_package_is_installed(tmp_path):
    from pytest_objective_scoring.environments import probe_environment

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    here = Path(subprocess.run([sys.executable, "-c", "import pytest, os; print(os.path.dirname(os.path.dirname(pytest.__file__)))"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    (site / "test-tree.pth").write_text(f"{here}\n")  # pytest (and its distributions) importable in the new venv
    before = probe_environment(python)
    assert before[3] is None and before[2] is not None and before[2].startswith("sha256:")
    dist = site / "installed_later-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: installed-later\nVersion: 1.0\n")
    after = probe_environment(python)
    assert after[2] != before[2], "an install between two gradings changes the environment's digest"


@pytest.mark.slow
def test_a_holdout_task_that_fails_the_cutoff_gate_is_excluded_named_and_never_graded(tmp_path):
    from pytest_objective_scoring.ledger import Ledger
    from tests.test_ab import ACCESS as ARM_ACCESS, FROZEN, MANIFEST, arm_file, record_valid_audits

    rows = [json.loads(line) for line in DATASET.read_text().splitlines()]
    dates = {"fixtures__textstats-1": "2025-01-10", "fixtures__intervals-1": "2025-02-10", "fixtures__csvlite-1": "2024-06-01"}
    for row in rows:
        row["created_at"] = dates[row["instance_id"]]
    dataset = tmp_path / "dated.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ledger = tmp_path / "ledger.sqlite"
    made = run_cli("sets", "create", "hold", "--role", "holdout_live", "--dataset", str(dataset), "--source", "live:fresh",
                   "--cutoff", "2024-01-01", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 0, made.stderr
    record_valid_audits(ledger)
    data = {**MANIFEST, "name": "hold-run", "frozen": {**FROZEN, "task_set": "hold"}, "seeds": [1],
            "model_training_cutoff": "2024-12-31"}  # fmt: skip
    assert data["arms"][0]["access"] == ARM_ACCESS
    manifest = tmp_path / "hold.json"
    manifest.write_text(json.dumps(data))
    registered = run_cli("ab", "preregister", str(manifest), "--ledger", str(ledger), "--json")
    assert registered.returncode == 0, registered.stderr
    assert [t["instance_id"] for t in json.loads(registered.stdout)["excluded_tasks"]] == ["fixtures__csvlite-1"]
    resolves = {1: {"fixtures__textstats-1", "fixtures__csvlite-1"}}
    frozen = {**FROZEN, "task_set": "hold"}
    base, cand = arm_file(tmp_path, "b", {1: set()}, 0.1, frozen=frozen), arm_file(tmp_path, "c", resolves, 0.1, frozen=frozen)
    done = run_cli("ab", "run", str(manifest), "--arm", f"baseline={base}", "--arm", f"candidate={cand}", "--dataset",
                   str(dataset), "--repos", str(FIXTURES / "repos"), "--workers", "2", "--ledger", str(ledger), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    details = json.loads(done.stdout)["details"]
    assert details["tasks"] == 2 and [t["instance_id"] for t in details["excluded_tasks"]] == ["fixtures__csvlite-1"]
    assert "before_cutoff" in details["excluded_tasks"][0]["reasons"]
    with Ledger(ledger, read_only=True) as opened:
        graded = {e.data["instance_id"] for e in opened.entries("score")}
    assert graded == {"fixtures__textstats-1", "fixtures__intervals-1"}, "the excluded task was never graded"
    arms = {a["name"]: a["resolved"] for a in json.loads(done.stdout)["record"]["arms"]}
    assert arms == {"baseline": [0], "candidate": [1]}, "and never counted"


@pytest.mark.slow
def test_the_documented_walk_through_runs_as_written_and_gives_its_hand_derived_numbers(tmp_path):
    """Build phase 6 end to end: the walk-through's commands on the bundled example, over real gradings."""
    scipy_stats = pytest.importorskip("scipy.stats")
    ledger = str(tmp_path / "ledger.sqlite")
    example = FIXTURES / "ab"
    steps = [
        ("sets", "create", "regression", "--role", "regression", "--dataset", str(DATASET), "--source", "static:fixtures"),
        ("audit", "run", "--dataset", str(DATASET), "--repos", str(FIXTURES / "repos")),
        ("ab", "preregister", str(example / "manifest.json")),
    ]  # fmt: skip
    for step in steps:
        done = run_cli(*step, "--ledger", ledger)
        assert done.returncode == 0, (step, done.stderr)
    done = run_cli("ab", "run", str(example / "manifest.json"), "--arm", f"baseline={example / 'baseline.jsonl'}",
                   "--arm", f"candidate={example / 'candidate.jsonl'}", "--dataset", str(DATASET), "--repos",
                   str(FIXTURES / "repos"), "--workers", "2", "--ledger", ledger, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    record, details = output["record"], output["details"]
    arms = {a["name"]: a for a in record["arms"]}
    assert arms["baseline"]["resolved"] == [1, 1, 0, 1, 1] and arms["candidate"]["resolved"] == [2, 3, 2, 2, 3]
    assert record["result"] == {"delta": pytest.approx(8 / 15), "significant": "no", "recommendation": "pare_back"}
    test = details["test"]
    assert test["p_value"] == pytest.approx(0.25) and test["interval"] == [-1.0, 1.0]
    assert test["secondary"]["mcnemar_pooled_pairs"]["p_value"] == pytest.approx(2 * 0.5**8)
    assert test["secondary"]["t_test_over_seeds"]["p_value"] == pytest.approx(
        scipy_stats.ttest_rel([2 / 3, 1, 2 / 3, 2 / 3, 1], [1 / 3, 1 / 3, 0, 1 / 3, 1 / 3]).pvalue)
    assert arms["baseline"]["confidence_interval"] == pytest.approx([0.041, 0.754], abs=5e-4)
    assert arms["candidate"]["confidence_interval"] == pytest.approx([0.288, 0.975], abs=5e-4)
    assert details["admissible"] and details["environment_parity"]["identical"]
    assert details["claim"] == "C0" and "3 task(s), fewer than 20" in details["claim_reasons"][1]
    assert "no smallest effect worth detecting was preregistered" in details["claim_reasons"][1]
    # the phase 6 record (build spec): exactly its fields, the manifest's frozen configuration, cost on both arms
    manifest = json.loads((example / "manifest.json").read_text())
    assert set(record) == {"change_under_test", "frozen", "arms", "seeds", "result"}
    assert record["frozen"] == manifest["frozen"], "frozen is the manifest's, identical for both arms"
    scipy_stats = pytest.importorskip("scipy.stats")
    assert arms["candidate"]["mean"] == pytest.approx(12 / 15)
    assert arms["baseline"]["variance"] == pytest.approx(scipy_stats.tvar([1 / 3, 1 / 3, 0, 1 / 3, 1 / 3]))
    for arm, tokens in (("baseline", 40000), ("candidate", 46000)):  # the harness's tokens and dollars, the grading's CPU
        cost = arms[arm]["cost"]
        assert cost["tokens"] == 15 * tokens and cost["calls"] == 15 * 20 and cost["cpu"] > 0
    assert arms["candidate"]["cost"]["dollars"] > 15 * 0.12
    assert details["pass_at_k"]["candidate"]["pass@5"] == 1.0 and details["identity"][1]["policy_profile"] == "governed"
    # the comparison burned the task set's tasks
    shown = json.loads(run_cli("sets", "show", "regression", "--ledger", ledger, "--json").stdout)
    assert shown["record"]["burned"] is True and shown["record"]["last_decision_use"] is not None
    # the report: Markdown and a self-contained HTML page with the plots inline
    report = run_cli("ab", "report", "loc-v2-vs-v1", "--out", str(tmp_path / "report"), "--ledger", ledger)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Claim level supported: C0" in text and "localization subsystem v2" in text and "never averaged" in text
    page = (tmp_path / "report" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "<table>" in page and "http" not in page.split("<body>")[1]
    table = run_cli("ab", "show", "loc-v2-vs-v1", "--ledger", ledger)
    assert "significant: no" in table.stdout and "recommendation: pare_back" in table.stdout
    # running again reads the comparison back: nothing is graded twice, no second comparison is written
    arm_args = ["--arm", f"baseline={example / 'baseline.jsonl'}", "--dataset", str(DATASET), "--repos",
                str(FIXTURES / "repos"), "--ledger", ledger]  # fmt: skip
    again = run_cli("ab", "run", str(example / "manifest.json"), *arm_args, "--arm",
                    f"candidate={example / 'candidate.jsonl'}", "--json")  # fmt: skip
    assert json.loads(again.stdout)["record"]["arms"] == record["arms"] and json.loads(again.stdout)["resumed"]
    # a preregistered experiment is run once: other predictions are refused, never a second, luckier result
    rows = [json.loads(line) for line in (example / "candidate.jsonl").read_text().splitlines()]
    other, dearer = tmp_path / "other.jsonl", tmp_path / "dearer.jsonl"
    gold = (FIXTURES / "patches" / "csvlite" / "gold.diff").read_text()
    other.write_text("".join(json.dumps(dict(r, model_patch=gold) if (r["seed"], r["instance_id"]) == (1, "fixtures__csvlite-1")
                                        else r) + "\n" for r in rows))  # fmt: skip
    refused = run_cli("ab", "run", str(example / "manifest.json"), *arm_args, "--arm", f"candidate={other}")
    assert refused.returncode == 2 and "--arm candidate=" in refused.stderr
    assert "fixtures__csvlite-1 seed 1: field 'model_patch' changed" in refused.stderr
    # a change of cost fields only is refused too
    dearer.write_text("".join(json.dumps(dict(r, dollars=0.5)) + "\n" for r in rows))
    costly = run_cli("ab", "run", str(example / "manifest.json"), *arm_args, "--arm", f"candidate={dearer}")
    assert costly.returncode == 2 and "field 'dollars' changed (0.12 -> 0.5)" in costly.stderr
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(Path(ledger), read_only=True) as opened:
        assert len(list(opened.entries("ab_comparison"))) == 1
        stored = next(e.data for e in opened.entries("ab_comparison"))
    # reading it back by running again reads verified evidence only, as ab show does: a row appended by hand
    # (its hash recomputed) that says 24 tasks, significant, keep, gives no claim (issue 29)
    from .test_ledger_seal import _forge

    forged = json.loads(json.dumps(stored))
    forged["details"].update(tasks=24, claim="C2")
    forged["record"]["result"].update(significant="yes", recommendation="keep")
    _forge(Path(ledger), "ab_comparison", forged)
    read_back = run_cli("ab", "run", str(example / "manifest.json"), *arm_args, "--arm",
                        f"candidate={example / 'candidate.jsonl'}")  # fmt: skip
    assert read_back.returncode == 1 and "no claim" in read_back.stderr and "claim level: C2" not in read_back.stdout
    assert "the stored summary says 24 task(s); its graded runs cover 3" in read_back.stderr


def test_a_replication_counts_only_if_it_still_reaches_c2_under_todays_audits(tmp_path):
    from pytest_objective_scoring.commands.ab import reassess
    from pytest_objective_scoring.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "here", p_value=0.001, problems=[f"{P}h1", f"{P}h2"], claim="C3")
        there = _stored_comparison(ledger, "there", benchmark="bench-b", p_value=0.001, problems=[f"{P}t1"])

    def claim_of_here() -> dict:
        with Ledger(path, read_only=True) as ledger:
            stored = next(e.data for e in ledger.entries("ab_comparison") if e.data["name"] == "here")
            return reassess(ledger, stored["record"], stored["details"], name="here")

    assert claim_of_here()["claim"] == "C3"
    with Ledger(path) as ledger:  # a later audit finds a task only "there" was graded on invalid
        _audit(ledger, there[0], "invalid")
    now = claim_of_here()
    assert now["claim"] == "C2" and now["claim_downgraded"]["from"] == "C3"
    assert "not C3: no C2 replication" in " ".join(now["claim_reasons"])


def test_a_second_run_that_pins_at_the_same_moment_finds_the_first_pin(tmp_path):
    from pytest_objective_scoring.commands.ab import pin_predictions
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        assert pin_predictions(ledger, "exp", "sha256:m", {"baseline": {"a": {"model_patch": "sha256:1"}}}) is None
        raced = pin_predictions(ledger, "exp", "sha256:m", {"baseline": {"a": {"model_patch": "sha256:2"}}})
        assert raced is not None and raced["arms"]["baseline"]["a"]["model_patch"] == "sha256:1"
        assert len(list(ledger.entries("ab_predictions"))) == 1, "one pin per experiment, whatever ran at once"


@pytest.mark.slow
def test_a_set_holding_copies_of_one_problem_is_refused_before_anything_is_graded(tmp_path, monkeypatch):
    from pytest_objective_scoring import sets

    rows = [json.loads(line) for line in DATASET.read_text().splitlines()]
    copy = dict(rows[0], instance_id=rows[0]["instance_id"] + "-copy", problem_statement=rows[0]["problem_statement"] + "  ")
    dataset = tmp_path / "copies.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in [*rows, copy]))
    ledger = tmp_path / "ledger.sqlite"
    made = run_cli("sets", "create", "regression", "--role", "regression", "--dataset", str(dataset), "--source",
                   "static:fixtures", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 2 and "is the same problem as 'fixtures__textstats-1'" in made.stderr, made.stderr
    with monkeypatch.context() as patched:  # a set written by an older version, whose problems kept the statement
        patched.setattr(sets, "refuse_copies", lambda instances: None)
        assert run_cli("sets", "create", "regression", "--role", "regression", "--dataset", str(dataset), "--source",
                       "static:fixtures", "--ledger", str(ledger)).returncode == 0  # fmt: skip
    example = FIXTURES / "ab"
    assert run_cli("ab", "preregister", str(example / "manifest.json"), "--ledger", str(ledger)).returncode == 0
    done = run_cli("ab", "run", str(example / "manifest.json"), "--arm", f"baseline={example / 'baseline.jsonl'}",
                   "--arm", f"candidate={example / 'candidate.jsonl'}", "--dataset", str(dataset), "--repos",
                   str(FIXTURES / "repos"), "--ledger", str(ledger))  # fmt: skip
    assert done.returncode == 2 and "holds the same problem under several tasks (1 group(s), e.g. " in done.stderr
    assert "fixtures__textstats-1, fixtures__textstats-1-copy" in done.stderr and "Nothing was graded" in done.stderr


def test_a_run_stops_waiting_for_another_runs_claims_after_max_wait(tmp_path):
    from pytest_objective_scoring import batch
    from pytest_objective_scoring.claims import Claims
    from pytest_objective_scoring.errors import CommandError
    from pytest_objective_scoring.jobs import grade_jobs
    from pytest_objective_scoring.instances import load_instances
    from pytest_objective_scoring.ledger import Ledger

    predictions = batch.load_predictions(FIXTURES / "predictions" / "fixtures.jsonl")[:1]
    settings = {"python": sys.executable, "timeout": 60.0, "compat": "strict", "compute_rate": 0.0, "network": False}
    jobs = batch.plan_jobs(load_instances(DATASET), predictions, FIXTURES / "repos", settings)
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as other_ledger, Claims(other_ledger, run_id="the-other-run") as other:  # alive: it holds its lock
        assert other.take(jobs[0].key, {"instance_id": jobs[0].instance.instance_id}).state == "mine"
        with Ledger(path) as ledger, pytest.raises(CommandError) as stopped:
            grade_jobs(ledger, jobs, settings, workers=1, scheduler=None, quiet=True, poll=0.1, max_wait=0.5)
        assert "1 job(s) still claimed by another run after --max-wait 0.5 s" in str(stopped.value)
        assert f"pid {__import__('os').getpid()}" in str(stopped.value)
    with Ledger(path, read_only=True) as ledger:
        assert [e.kind for e in ledger.entries()] == ["claim", "release"], "nothing graded; the claim released at exit"
        assert next(ledger.entries("release")).data["instance_id"] == jobs[0].instance.instance_id
