"""The JSON envelope written beside the spec's Score record.

The Score keeps exactly its fields; everything else a user needs to explain a
verdict (per-test outcomes, phases, durations, hints, the session's health, the
runner's steps, SWE-bench's report shape) lives here, around it. Pure functions
that return dicts; this module never imports pytest.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from typing import Any, Final, Mapping, Sequence

from . import __version__
from .instances import F2P, P2P
from .records import Score
from .scorer import Grading

__all__ = ["SCHEMA_VERSION", "build_envelope", "dumps", "graded_by", "patch_ref_of", "swebench_report"]

SCHEMA_VERSION: Final = 1
PACKAGE: Final = "pytest-objective-scoring"


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def graded_by(
    *,
    mode: str,
    pytest_version: str,
    python: str,
    platform: str,
    timeout: float | None,
    compat: str,
) -> str:
    """The instrument that produced a verdict, as one reproducible string."""
    limit = "none" if timeout is None else f"{timeout:g}s"
    return (
        f"{PACKAGE}/{__version__} ({mode}) pytest/{pytest_version} {python} {platform} "
        f"timeout={limit} compat={compat}"
    )


def patch_ref_of(diff: bytes) -> str:
    """A content address for a candidate diff."""
    return "sha256:" + hashlib.sha256(diff).hexdigest()


def swebench_resolution(grading: Grading) -> str:
    """SWE-bench's FULL / PARTIAL / NO from the two gates' ratios."""
    f2p = grading.fail_to_pass
    p2p = grading.pass_to_pass
    f2p_rate = 1.0 if f2p.total == 0 else f2p.passed / f2p.total
    p2p_rate = 1.0 if p2p.total == 0 else p2p.passed / p2p.total
    if f2p_rate == 1 and p2p_rate == 1:
        return "RESOLVED_FULL"
    if 0 < f2p_rate < 1 and p2p_rate == 1:
        return "RESOLVED_PARTIAL"
    return "RESOLVED_NO"


def swebench_report(
    grading: Grading | None, instance_id: str, *, patch_exists: bool = True, patch_applied: bool = True
) -> dict[str, Any]:
    """The per-instance report SWE-bench's harness writes, from our results."""
    entry: dict[str, Any] = {
        "patch_is_None": False,
        "patch_exists": patch_exists,
        "patch_successfully_applied": patch_applied,
        "resolved": False,
    }
    if grading is not None and patch_applied:
        status: dict[str, dict[str, list[str]]] = {}
        for gate in (F2P, P2P):
            results = grading.of_gate(gate)
            status[gate] = {
                "success": [r.test_id for r in results if r.counted],
                "failure": [r.test_id for r in results if not r.counted],
            }
        status["FAIL_TO_FAIL"] = {"success": [], "failure": []}
        status["PASS_TO_FAIL"] = {"success": [], "failure": []}
        entry["resolved"] = swebench_resolution(grading) == "RESOLVED_FULL"
        entry["tests_status"] = status
    return {instance_id: entry}


def build_envelope(
    *,
    instance_id: str,
    score: Score | None,
    grading: Grading | None,
    no_verdict: str | None,
    session: Mapping[str, Any],
    integrity: Sequence[Mapping[str, Any]] = (),
    extra: Mapping[str, Any] | None = None,
    patch_applied: bool = True,
) -> dict[str, Any]:
    """The document written by ``--objective-score-out`` and ``objective-score grade --out``."""
    envelope: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "version": __version__,
        "created": utc_now_iso(),
        "instance_id": instance_id,
        "status": "verdict" if score is not None and no_verdict is None else "no_verdict",
        "no_verdict_reason": no_verdict,
        "score": score.to_dict() if score is not None else None,
        "compat": grading.compat if grading is not None else None,
        "tests": [r.to_dict() for r in grading.results] if grading is not None else [],
        "summary": _summary(grading),
        "session": dict(session),
        "integrity": {"flags": [dict(f) for f in integrity]},
        "swebench": _swebench_section(grading, instance_id, score is None or no_verdict is not None, no_verdict,
                                      patch_applied),  # fmt: skip
    }
    if extra:
        envelope.update(extra)
    return envelope


def _swebench_section(
    grading: Grading | None, instance_id: str, no_verdict: bool, reason: str | None, patch_applied: bool
) -> dict[str, Any]:
    """SWE-bench's view of the run. No verdict is reported as SWE-bench 5.x reports an
    infrastructure failure (``infra_failure``), never as the candidate's failure."""
    if no_verdict:
        return {
            "resolution": None,
            "report": {
                instance_id: {
                    "patch_is_None": False,
                    "patch_exists": True,
                    "patch_successfully_applied": patch_applied,
                    "resolved": False,
                    "infra_failure": True,
                    "infra_failure_reason": reason,
                }
            },
        }
    return {
        "resolution": swebench_resolution(grading) if grading is not None and patch_applied else "RESOLVED_NO",
        "report": swebench_report(grading, instance_id, patch_applied=patch_applied),
    }


def _summary(grading: Grading | None) -> dict[str, Any]:
    if grading is None:
        return {}
    summary: dict[str, Any] = {"executed": grading.executed, "unlisted": grading.unlisted}
    for gate in (F2P, P2P):
        results = grading.of_gate(gate)
        summary[gate] = {
            "total": len(results),
            "counted": sum(r.counted for r in results),
            "not_counted": [r.test_id for r in results if not r.counted and r.status != "missing"],
            "missing": [r.test_id for r in results if r.status == "missing"],
        }
    return summary


def dumps(envelope: Mapping[str, Any]) -> str:
    """The envelope as JSON a person can read and a big suite can afford.

    One top-level key a line and one test a line: each value is encoded by the
    C encoder (``indent`` would switch to the pure-Python one, which costs
    more than the grading on a suite of tens of thousands of tests).
    """
    import json

    one = json.JSONEncoder(ensure_ascii=False).encode  # one C encoder for every value

    lines = []
    for key, value in envelope.items():
        if key == "tests" and isinstance(value, list) and value:
            inner = ",\n".join(f"    {one(test)}" for test in value)
            lines.append(f"  {one(key)}: [\n{inner}\n  ]")
        else:
            lines.append(f"  {one(key)}: {one(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
