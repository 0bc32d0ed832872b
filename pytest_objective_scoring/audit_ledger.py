"""Audits as a standing activity: recorded in the ledger with when they ran and when they are
next due; what is overdue, failed or missing; the audit state a grading reports.

An ``audit`` entry keeps the task's content address (so an edited instance is a new task,
never audited), when the audit ran, the interval of the schedule it ran under, when it is
next due, the task's disposition, whether every check completed, and the findings.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping, Sequence

from .integrity import DAY, audit_state, task_id_of
from .ledger import Entry, Ledger

__all__ = ["audit_entry", "audit_of", "audits", "due", "record_audit"]


def audit_entry(report: Mapping[str, Any], fields: Mapping[str, Any], every_days: float, now: int,
                environment: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
    return {
        "instance_id": report["instance_id"],
        "task_id": task_id_of(fields),
        "ran_at": now,
        "every_days": every_days,
        "next_due": int(now + every_days * DAY),
        "disposition": report["disposition"],
        "complete": bool(report.get("complete", True)),
        "findings": list(report.get("findings", [])),
        "checks": list(report.get("checks", [])),
        "environment": dict(environment),
    }


def record_audit(ledger: Ledger, report: Mapping[str, Any], fields: Mapping[str, Any], every_days: float,
                 environment: Mapping[str, Any], now: int | None = None) -> Entry:  # fmt: skip
    return ledger.append("audit", audit_entry(report, fields, every_days, int(time.time()) if now is None else now,
                                              environment))  # fmt: skip


def audits(ledger: Ledger) -> list[dict[str, Any]]:
    """Every audit entry, oldest first, with its ledger seq."""
    return [{"seq": e.seq, **e.data} for e in ledger.entries("audit")]


def read_audits(path: Any, timeout: float = 2.0) -> list[dict[str, Any]]:
    """The audit entries of a ledger, read-only and without waiting long for a writer (the plugin's
    end-of-session lookup must never stall or break the run). Raises on any problem."""
    import json
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
    try:
        return [{"seq": seq, **json.loads(body)}
                for seq, body in conn.execute("SELECT seq, body FROM entries WHERE kind = 'audit' ORDER BY seq")]  # fmt: skip
    finally:
        conn.close()


def audit_of(recorded: Sequence[Mapping[str, Any]], fields: Mapping[str, Any], now: int | None = None) -> dict[str, Any]:
    """The audit state of the task an instance's fields describe (see :func:`.integrity.audit_state`)."""
    return audit_state(recorded, task_id_of(fields), int(time.time()) if now is None else now)


def due(recorded: Sequence[Mapping[str, Any]], instances: Iterable[Any] = (), now: int | None = None,
        every_days: float | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """One row per audited task (its latest audit) and per given instance never audited: its state.

    With ``every_days``, a task is due that long after its last audit (the schedule now in force);
    otherwise when its own audit said.
    """
    now = int(time.time()) if now is None else now
    latest: dict[str, Mapping[str, Any]] = {}
    for entry in recorded:
        latest[entry["task_id"]] = entry
    rows = []
    for task_id, entry in latest.items():
        next_due = int(entry["ran_at"] + every_days * DAY) if every_days is not None else entry["next_due"]
        state = audit_state([{**entry, "next_due": next_due}], task_id, now)["state"]
        rows.append({"instance_id": entry["instance_id"], "task_id": task_id, "state": state, "ran_at": entry["ran_at"],
                     "next_due": next_due, "disposition": entry["disposition"], "seq": entry.get("seq"),
                     "findings": [f.get("kind") for f in entry.get("findings", [])]})  # fmt: skip
    instances = list(instances)
    if instances:  # a task id the dataset no longer holds (an edited instance) is superseded, not due
        current = {task_id_of(i.fields) for i in instances}
        for row in rows:
            if row["task_id"] not in current:
                row["state"] = "superseded"
    for instance in instances:
        task_id = task_id_of(instance.fields)
        if task_id not in latest:
            rows.append({"instance_id": instance.instance_id, "task_id": task_id, "state": "missing", "ran_at": None,
                         "next_due": None, "disposition": None, "seq": None, "findings": []})  # fmt: skip
            latest[task_id] = {}
    order = {"invalid": 0, "missing": 1, "incomplete": 2, "overdue": 3, "weak": 4, "valid": 5, "superseded": 6}
    return sorted(rows, key=lambda r: (order.get(r["state"], 9), r["instance_id"]))
