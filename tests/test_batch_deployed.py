"""One grade-batch over a mixed dataset (pytest, Django's layout, SymPy's bin/test, unittest) on
a Dask deployment started the way a cluster is: ``dask scheduler`` and two ``dask worker``
processes, each started on its own on this machine's loopback; the verdicts equal those of
per-instance ``grade``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from pytest_objective_scoring.ledger import verify

from .conftest import FIXTURES
from .runner_helpers import run_cli_here as run_cli

pytestmark = pytest.mark.slow

PROJECTS = ("intervals", "recipes", "sympy-mini", "units")
CANDIDATES = ("gold", "break_p2p")


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[str]:
    """``dask scheduler`` and two ``dask worker`` processes, started separately, bound to loopback."""
    pytest.importorskip("distributed", reason="dask.distributed is a test dependency: pip install -e '.[test]'")
    dask = Path(sys.executable).with_name("dask")
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this interpreter")
    info = tmp_path / "scheduler.json"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    processes = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(info)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        for name in ("worker-a", "worker-b"):
            processes.append(subprocess.Popen([str(dask), "worker", address, "--name", name, "--nthreads", "1",
                                               "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0"],
                                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))  # fmt: skip
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            assert sorted(w["name"] for w in client.scheduler_info()["workers"].values()) == ["worker-a", "worker-b"]
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_a_mixed_dataset_on_a_deployed_cluster_gets_the_verdicts_of_per_instance_grade(tmp_path: Path,
                                                                                        deployment: str) -> None:  # fmt: skip
    dataset, predictions = tmp_path / "mixed.jsonl", tmp_path / "preds.jsonl"
    instances = [json.loads((FIXTURES / "instances" / f"{p}.json").read_text()) for p in PROJECTS]
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances))
    rows = [{"instance_id": i["instance_id"], "model_name_or_path": candidate,
             "model_patch": (FIXTURES / "patches" / project / f"{candidate}.diff").read_text()}
            for project, i in zip(PROJECTS, instances) for candidate in CANDIDATES]  # fmt: skip
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ledger = tmp_path / "ledger.sqlite"
    done = run_cli("grade-batch", "--dataset", str(dataset), "--predictions", str(predictions), "--repos",
                   str(FIXTURES / "repos"), "--scheduler", deployment, "--ledger", str(ledger), "--timeout", "120",
                   "--log-dir", str(tmp_path / "logs"), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert len(results) == len(rows)
    for project, instance in zip(PROJECTS, instances):
        for candidate in CANDIDATES:
            [row] = [r for r in results if r["instance_id"] == instance["instance_id"] and r["model_name_or_path"] == candidate]
            single = run_cli("grade", "--repo", str(FIXTURES / "repos" / project), "--instance",
                             str(FIXTURES / "instances" / f"{project}.json"), "--patch",
                             str(FIXTURES / "patches" / project / f"{candidate}.diff"), "--no-ledger", "--json")  # fmt: skip
            alone = json.loads(single.stdout)["score"]
            assert (row["score"]["resolved"], row["score"]["fail_to_pass"], row["score"]["pass_to_pass"]) == (
                alone["resolved"], alone["fail_to_pass"], alone["pass_to_pass"]), (project, candidate)
            assert row["score"]["resolved"] == ("resolved" if candidate == "gold" else "not_resolved")
    assert verify(ledger).ok
    graded_by = {r["instance_id"]: r["score"]["graded_by"] for r in results if r["model_name_or_path"] == "gold"}
    assert "(runner:django)" in graded_by["fixtures__recipes-1"] and "(runner:sympy)" in graded_by["fixtures__sympy-mini-1"]
    assert "(runner:unittest)" in graded_by["fixtures__units-1"] and "(runner)" in graded_by["fixtures__intervals-1"]
