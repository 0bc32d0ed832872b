"""Run integrity (RFC 6.5): every graded run is eligible, quarantined or invalid, by rule.

The disposition is computed from structured facts only: which files the candidate touched
and whether its changes to protected files were dropped, the integrity flags the recorder
raised in the test process, who ran the tests (the isolated runner, a live pytest run, an
outcome file from elsewhere), whether the network was isolated, the environment and
interpreter digests, and the audit state of the task. Never from prose, never from how
similar a patch looks to anything.

* ``invalid``: the candidate reached the judge (a tampered outcome, pytest internals patched,
  hooks of unknown origin, protected files written while the tests ran), or the task's audit
  found it invalid.
* ``quarantined``: the evidence is incomplete or parity cannot be established (no sandbox, no verdict, the
  task never audited or its audit overdue or incomplete, tests the candidate could edit, outcomes
  observed elsewhere, an un-isolated network, an unknown environment).
* ``eligible``: none of the above. Informational codes (changes to protected files dropped,
  a weak task audit, the network allowed on request) ride along without changing it.

A public receipt carries the run identity, the digests, the disposition and the reason codes,
and no private evidence. Pure functions; this module never imports pytest.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Final, Mapping, Sequence

from .ledger import canonical

__all__ = ["DISPOSITIONS", "assess", "audit_state", "digests", "environment_digest", "interpreter_digest", "receipt",
           "settle", "task_id_of"]

DISPOSITIONS: Final = ("eligible", "quarantined", "invalid")
INVALID_FLAGS: Final = {
    "raised_but_passed": "tampered_outcome",
    "runtest_replaced": "tampered_outcome",
    "pytest_internals_patched": "pytest_internals_patched",
    "hook_of_unknown_origin": "hook_of_unknown_origin",
    "protected_file_modified": "protected_file_modified",
    "record_forged": "tampered_outcome",
    "code_replaced": "tampered_outcome",
    "objects_walked": "judge_inspected",
    "console_disagrees": "tampered_outcome",
    "test_runs": "tampered_outcome",
    "test_code_outside_tests": "tampered_outcome",
    "test_loaded_by_copy": "tampered_outcome",
    "import_hook": "tampered_outcome",
    "record_malformed": "tampered_outcome",
    "test_code_replaced": "tampered_outcome",
    "hook_registered": "tampered_outcome",
    "trace_set": "tampered_outcome",
    "protected_path_changed": "protected_file_modified",
    "record_written_by_copy": "tampered_outcome",
    "memory_read": "judge_inspected",
    "code_disguised": "tampered_outcome",
}
DAY: Final = 86400


def audit_state(audits: Sequence[Mapping[str, Any]], task_id: str, now: int) -> dict[str, Any]:
    """The state of a task's audit from the ledger's audit entries (latest for that task id):
    ``missing``, ``invalid`` (the audit found the task invalid), ``incomplete``, ``overdue``,
    ``weak`` or ``valid``, with when it ran and when it is next due."""
    mine = [a for a in audits if a.get("task_id") == task_id]
    if not mine:
        return {"state": "missing", "ran_at": None, "next_due": None, "seq": None}
    last = mine[-1]
    base = {"ran_at": last["ran_at"], "next_due": last["next_due"], "seq": last.get("seq"),
            "disposition": last["disposition"]}  # fmt: skip
    if last["disposition"] == "invalid":
        return {"state": "invalid", **base}
    if not last.get("complete", True):
        return {"state": "incomplete", **base}
    if last["next_due"] is not None and now > last["next_due"]:
        return {"state": "overdue", **base}
    return {"state": last["disposition"], **base}


def _file_digest(path: str) -> str | None:
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()
    except OSError:
        return None


_INTERPRETERS: dict[str, str | None] = {}


def interpreter_digest(python: str) -> str | None:
    """sha256 of the interpreter's executable (symlinks resolved), cached per path."""
    real = os.path.realpath(python)
    if real not in _INTERPRETERS:
        _INTERPRETERS[real] = _file_digest(real)
    return _INTERPRETERS[real]


def environment_digest(session: Mapping[str, Any]) -> str | None:
    """sha256 of what the test process reported about itself: Python, pytest, platform and
    every installed distribution it could see; None when the tests never reported."""
    if not session or "python_version" not in session:
        return None
    facts = {key: session.get(key) for key in ("python_implementation", "python_version", "pytest_version", "platform",
                                              "distributions")}  # fmt: skip
    return "sha256:" + hashlib.sha256(canonical(facts).encode("utf-8")).hexdigest()


def _mode(envelope: Mapping[str, Any]) -> str:
    if "report" in envelope:
        return "report"
    if "runner" in envelope:
        return "runner"
    return "plugin"


def assess(envelope: Mapping[str, Any], audit: Mapping[str, Any] | None) -> tuple[str, list[str], list[str]]:
    """``(disposition, reason codes that set it, informational codes)`` of one graded run."""
    invalid: list[str] = []
    quarantined: list[str] = []
    info: list[str] = []
    for flag in (envelope.get("integrity") or {}).get("flags", []):
        code = INVALID_FLAGS.get(flag.get("kind"))
        if code and code not in invalid:
            invalid.append(code)
    runner = envelope.get("runner") or {}
    mode = _mode(envelope)
    if envelope.get("score") is None:
        quarantined.append("no_verdict")
    if mode == "plugin":
        quarantined.append("tests_not_protected")  # the tests ran in the user's own tree, candidate's edits included
    elif mode == "report":
        quarantined.append("outcomes_not_observed")  # who ran the tests, and how, is not known here
    else:
        isolation = runner.get("isolation") or {}
        if isolation.get("mode") == "none":
            quarantined.append("not_sandboxed")  # the candidate's code ran with the grader's reach
        network = str(runner.get("network", ""))
        if network.startswith("not isolated"):
            quarantined.append("network_not_isolated")
        elif network == "allowed":
            info.append("network_allowed")
        if (runner.get("apply") or {}).get("dropped"):
            info.append("protected_changes_dropped")
        if (runner.get("test_patch") or {}).get("source") == "file":
            quarantined.append("test_patch_overridden")  # not the audited task's tests
        ran_tests = bool((runner.get("run") or {}).get("command"))
        if ran_tests and not (envelope.get("digests") or {}).get("environment"):
            quarantined.append("environment_unknown")
    state = (audit or {}).get("state", "unknown")
    if state == "invalid":
        invalid.append("task_audit_invalid")
    elif state in ("missing", "unknown", "overdue", "incomplete"):
        quarantined.append(f"task_audit_{state}")
    elif state == "weak":
        info.append("task_audit_weak")
    if invalid:
        return "invalid", invalid, quarantined + info
    if quarantined:
        return "quarantined", quarantined, info
    return "eligible", [], info


INVALID_CODES: Final = frozenset({*INVALID_FLAGS.values(), "task_audit_invalid"})
INFO_CODES: Final = frozenset({"protected_changes_dropped", "task_audit_weak", "network_allowed"})


def recombine(codes: Sequence[str], disposition: str | None, audit: Mapping[str, Any]) -> tuple[str, list[str], list[str]]:
    """The disposition of a recorded run under the task's audit state *now*: the run's own codes
    stand, the audit's are replaced (a re-audit can quarantine or clear a run graded before it).
    A run recorded without a disposition (an older ledger) is quarantined."""
    own = [c for c in codes if not c.startswith("task_audit_")]
    if disposition is None:
        own.append("recorded_without_integrity")
    state = audit.get("state", "unknown")
    if state == "invalid":
        own.append("task_audit_invalid")
    elif state in ("missing", "unknown", "overdue", "incomplete"):
        own.append(f"task_audit_{state}")
    elif state == "weak":
        own.append("task_audit_weak")
    invalid = [c for c in own if c in INVALID_CODES]
    info = [c for c in own if c in INFO_CODES]
    quarantined = [c for c in own if c not in INVALID_CODES and c not in INFO_CODES]
    if invalid:
        return "invalid", invalid, quarantined + info
    if quarantined:
        return "quarantined", quarantined, info
    return "eligible", [], info


def digests(task_id: str | None, patch_ref: str | None, python: str | None, session: Mapping[str, Any] | None,
            score: Mapping[str, Any] | None) -> dict[str, str | None]:  # fmt: skip
    """The digests a receipt names: the task, the patch, the interpreter, the environment, the Score."""
    from . import __version__

    return {
        "task": task_id,
        "patch": patch_ref,
        "interpreter": interpreter_digest(python) if python else None,
        "environment": environment_digest(session or {}),
        "verifier": f"pytest-objective-scoring/{__version__}",
        "score": ("sha256:" + hashlib.sha256(canonical(dict(score)).encode("utf-8")).hexdigest()) if score else None,
    }


def task_id_of(fields: Mapping[str, Any]) -> str:
    """The content address of an instance (the same as a benchmark set's task id)."""
    return "sha256:" + hashlib.sha256(canonical(dict(fields)).encode("utf-8")).hexdigest()


def settle(envelope: dict[str, Any], audit: Mapping[str, Any] | None) -> dict[str, Any]:
    """Put the task's audit state and the run's disposition into the envelope; returns the integrity section."""
    envelope["audit"] = dict(audit) if audit is not None else {"state": "unknown"}
    disposition, reasons, info = assess(envelope, envelope["audit"])
    section = envelope.setdefault("integrity", {"flags": []})
    section.update(disposition=disposition, reasons=reasons, info=info)
    return section


def _public_name(name: Any) -> Any:
    """A harness named by a filesystem path (``model_name_or_path`` often is one) is named by the
    digest of that path in public: a receipt carries no paths."""
    if isinstance(name, str) and ("/" in name or os.sep in name):
        return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return name


def receipt(envelope: Mapping[str, Any], seq: int | None = None) -> dict[str, Any]:
    """The public receipt of a graded run: identity, digests, disposition and reason codes; no
    test output, no paths, no messages (the evidence stays in the ledger entry it points to)."""
    integrity = envelope.get("integrity") or {}
    score = envelope.get("score") or {}
    return {
        "receipt_version": 1,
        "run": {
            "instance_id": envelope.get("instance_id"),
            "patch_ref": score.get("patch_ref") or envelope.get("patch_ref"),
            "harness": _public_name(envelope.get("harness")),
            "resolved": score.get("resolved"),
            "graded_by": score.get("graded_by"),
            "graded_at": score.get("graded_at"),
        },
        "digests": dict(envelope.get("digests") or {}),
        "disposition": integrity.get("disposition"),
        "reason_codes": list(integrity.get("reasons") or []),
        "informational_codes": list(integrity.get("info") or []),
        "task_audit": (envelope.get("audit") or {}).get("state"),
        "evidence": f"private: ledger entry {seq}" if seq is not None else "private: not recorded",
    }
