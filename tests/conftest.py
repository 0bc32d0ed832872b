from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PROJECTS = ("textstats", "intervals", "csvlite")


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist's default ``--dist load``, hand tests out one or two at a time (``--maxschedchunk
    1``) unless asked otherwise: its first hand-out is otherwise a contiguous quarter of the suite per
    worker, fixed in advance, so one worker can be left with most of the long gradings while the
    other idles at the end."""
    if getattr(config.option, "maxschedchunk", "absent") is None:
        config.option.maxschedchunk = 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first (in their usual order), the fast ones after them: with tests
    handed out as workers free up, the long gradings start at once and the run ends on short tests
    that fill both workers, instead of on one long test while the other worker idles. Same order on
    every worker, as xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def write_instance(pytester: pytest.Pytester) -> Callable[..., Path]:
    """Write an instance JSON into the pytester directory and return its path."""

    def write(f2p: Sequence[str], p2p: Sequence[str] = (), name: str = "instance.json", **fields: Any) -> Path:
        data = {"instance_id": fields.pop("instance_id", "demo__demo-1"), "FAIL_TO_PASS": list(f2p),
                "PASS_TO_PASS": list(p2p), **fields}  # fmt: skip
        path = pytester.path / name
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return path

    return write


@pytest.fixture(params=[0, 2], ids=["serial", "xdist-2"])
def num_processes(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def check_envelope(envelope: dict[str, Any]) -> None:
    """Invariants every envelope must hold, checked on every integration run."""
    tests = envelope["tests"]
    ids = [t["id"] for t in tests]
    assert len(ids) == len(set(ids)), "each listed id is recorded once"
    score = envelope["score"]
    if score is None:
        assert envelope["status"] == "no_verdict" and envelope["no_verdict_reason"]
        return
    assert list(score) == ["instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass",
                           "graded_by", "graded_at"]  # fmt: skip
    for gate, key, good in (("FAIL_TO_PASS", "fail_to_pass", "passed"), ("PASS_TO_PASS", "pass_to_pass", "preserved")):
        mine = [t for t in tests if t["gate"] == gate]
        assert score[key]["total"] == len(mine)
        assert score[key]["passed"] == sum(t["status"] == good for t in mine)
        assert score[key]["verdict"] == ("satisfied" if score[key]["passed"] == score[key]["total"] else "violated")
    both = score["fail_to_pass"]["verdict"] == score["pass_to_pass"]["verdict"] == "satisfied"
    assert score["resolved"] == ("resolved" if both else "not_resolved")


def normalize(envelope: dict[str, Any]) -> dict[str, Any]:
    """Strip what legitimately differs between two runs (times, paths, worker ids)."""
    data = json.loads(json.dumps(envelope))
    data.pop("created", None)
    data.pop("cost", None)  # measured: differs from run to run
    data.pop("digests", None)  # the Score's digest covers graded_at
    data.pop("cost_breakdown", None)
    data["session"] = {"exitstatus": data["session"].get("exitstatus")}
    if data["score"]:
        data["score"].pop("graded_at")
    for test in data["tests"]:
        test.pop("duration", None)
        test.pop("message", None)
        test.pop("hint", None)
    return data


@pytest.fixture
def run_and_parse(pytester: pytest.Pytester) -> Callable[..., tuple[pytest.RunResult, dict[str, Any]]]:
    """Run pytest with the plugin, load the envelope and check its invariants. A serial run is in
    this process (pytester's in-process run: a fresh config and plugin manager, about a tenth of a
    subprocess's start-up); under xdist (``n``), or with ``subprocess=True`` when the test measures
    the process itself (its CPU), it is a subprocess."""

    def run(instance: Path, *args: str, n: int = 0, out: str = "envelope.json",
            subprocess: bool = False) -> tuple[pytest.RunResult, dict[str, Any]]:  # fmt: skip
        extra = ["-n", str(n)] if n else []
        runner = pytester.runpytest_subprocess if n or subprocess else pytester.runpytest_inprocess
        result = runner(f"--objective-score={instance}", f"--objective-score-out={out}", "-p", "no:randomly", *extra, *args)
        path = pytester.path / out
        assert path.exists(), result.stdout.str() + result.stderr.str()
        envelope = json.loads(path.read_text(encoding="utf-8"))
        check_envelope(envelope)
        return result, envelope

    return run


def by_id(envelope: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in envelope["tests"]}
