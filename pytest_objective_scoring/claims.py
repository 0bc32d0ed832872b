"""Claims: each job graded once per ledger, whatever else runs at the same time.

Before a batch (``grade-batch``, ``ab run``) grades a job it records a ``claim`` entry for the job's
key. The claim is written in the same write transaction that checks the ledger for the job (see
:meth:`.Ledger.append_decided`), so of two runs asking at once exactly one gets it:

- the job already has a ``score`` entry: it is not graded again (the row is read back);
- another run holds a live claim on it: this run grades the rest and then waits for that result;
- otherwise this run claims it and grades it.

A claim ends with the job's ``score`` entry, or with a ``release`` entry that says why: the run was
interrupted before the result was recorded, the result could not be recorded, or the claimant was
proven dead. A claimant is proven dead by :mod:`.liveness`: every claiming run holds a lock on its
own owner file in ``<ledger>.claims/`` for as long as it lives, which the kernel drops however the
run ends (SIGKILL included). Whoever next finds that lock free releases all of the dead run's open
claims in one transaction, naming it, and removes its owner file. A claim whose owner file is gone
is taken back only when its process is proven absent on this very host; a claim made on another host
with no owner file left waits (nothing here can prove that run dead).

Claims are ledger entries like any other, chained and append-only: who graded what, when, and every
grading that was started but never recorded, stay on the record.

This module never imports pytest.
"""

from __future__ import annotations

import json
import os
import secrets
import platform
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Literal, Mapping, Sequence

from . import liveness
from .ledger import Entry, Ledger, canonical

__all__ = ["Claims", "Taken", "claims_folder"]

TRACKED: Final = ("score", "claim", "release")
INTERRUPTED: Final = "interrupted before its result was recorded"
UNRECORDED: Final = "its result could not be recorded"
DEAD: Final = "the claimant was proven dead (its lock was free)"
ABSENT: Final = "the claimant's process is no longer running on this host"

Items = Sequence[tuple[str, Callable[[list[Entry]], Any]]]


def claims_folder(ledger_path: Path) -> Path:
    """Where the claimants of a ledger keep their owner files: ``<ledger>.claims/`` beside it."""
    return ledger_path.with_name(ledger_path.name + ".claims")


@dataclass(frozen=True)
class Taken:
    """What :meth:`Claims.take` found: ``mine`` (graded by this run now), ``recorded`` (a score
    entry exists: ``seq``) or ``held`` (another live run claimed it: ``holder`` says who)."""

    state: Literal["mine", "recorded", "held"]
    seq: int | None = None
    holder: Mapping[str, Any] = field(default_factory=dict)


def _pattern(name: str, value: str) -> str:
    """A LIKE pattern for ``"name":"value"`` in a canonical body (``value`` is a hex digest)."""
    return "%" + canonical({name: value})[1:-1].replace("%", r"\%").replace("_", r"\_") + "%"


def _latest(conn: sqlite3.Connection, key: str) -> tuple[int, str, dict[str, Any]] | None:
    """The last score, claim or release entry of the job ``key``."""
    rows = conn.execute(
        "SELECT seq, kind, body FROM entries WHERE kind IN ('score', 'claim', 'release') AND body LIKE ? ESCAPE '\\'"
        " ORDER BY seq DESC",
        (_pattern("job_key", key),),
    )
    for seq, kind, body in rows:
        data = json.loads(body)
        if isinstance(data, dict) and data.get("job_key") == key:
            return int(seq), str(kind), data
    return None


def _open_claims(conn: sqlite3.Connection, claimant: str) -> list[tuple[int, dict[str, Any]]]:
    """The claims of ``claimant`` that no score or release has ended yet."""
    found = []
    for seq, body in conn.execute(
        "SELECT seq, body FROM entries WHERE kind = 'claim' AND body LIKE ? ESCAPE '\\' ORDER BY seq",
        (_pattern("claimant", claimant),),
    ):
        data = json.loads(body)
        if not isinstance(data, dict) or data.get("claimant") != claimant:
            continue
        latest = _latest(conn, str(data.get("job_key")))
        if latest is not None and latest[0] == seq:
            found.append((int(seq), data))
    return found


def _process_absent(holder: Mapping[str, Any]) -> bool:
    """True when the holder ran on this host and its process id is free now (never a guess across
    hosts; a reused id keeps the claim, which is the safe side)."""
    if holder.get("host") != platform.node() or not isinstance(holder.get("pid"), int):
        return False
    return liveness.pid_absent(holder["pid"])


class Claims:
    """This run's claims on one ledger; a context manager that releases what it still holds."""

    def __init__(self, ledger: Ledger, *, run_id: str | None = None, retry_infra: bool = False) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.retry_infra = retry_infra
        self.token = secrets.token_hex(8)
        self.folder = claims_folder(ledger.path)
        self.held: dict[str, int] = {}  # job key -> seq of this run's claim entry
        self.instances: dict[str, Any] = {}  # job key -> its instance id (named in a release)
        self.released: list[dict[str, Any]] = []  # dead claimants' claims this run released
        self.folder.mkdir(exist_ok=True)
        self.owner_file = self.folder / f"{self.token}.lock"
        self._descriptor = liveness.hold(self.owner_file, {"run_id": run_id})
        self.started = ledger.head().seq  # with retry_infra: only what was recorded before this run is retried
        self.sweep()

    # ------------------------------------------------------------------ the claimants' owner files

    def _holder_state(self, holder: Mapping[str, Any]) -> str:
        token = str(holder.get("claimant") or "")
        state = liveness.probe(self.folder / f"{token}.lock") if token else liveness.GONE
        if state == liveness.GONE and _process_absent(holder):
            return "absent"
        return state

    def sweep(self) -> None:
        """Release every open claim of every dead claimant of this ledger, and remove its owner file."""
        for path in sorted(self.folder.glob("*.lock")):
            token = path.name[: -len(".lock")]
            if token == self.token or liveness.probe(path) != liveness.DEAD:
                continue
            who = liveness.about(path)
            self.ledger.append_decided(lambda conn, token=token, who=who: self._release_all(conn, token, who))  # type: ignore[misc]
            if liveness.probe(path) == liveness.DEAD:
                try:
                    path.unlink(missing_ok=True)
                except OSError:  # a folder made read-only: its claims are released all the same
                    pass

    def _release_all(self, conn: sqlite3.Connection, token: str, who: Mapping[str, Any]) -> Items:
        items = []
        for seq, data in _open_claims(conn, token):
            body = self._release_body(data, seq, DEAD)
            self.released.append({**body, "host": who.get("host"), "pid": who.get("pid")})
            items.append(("release", lambda _, body=body: body))
        return items

    def _release_body(self, claim: Mapping[str, Any], seq: int, why: str) -> dict[str, Any]:
        return {"job_key": claim.get("job_key"), "claim_seq": seq, "claimant": claim.get("claimant"),
                "instance_id": claim.get("instance_id"), "why": why, "by": self.token}  # fmt: skip

    # ------------------------------------------------------------------ claims

    def take(self, key: str, about: Mapping[str, Any] | None = None) -> Taken:
        """Claim job ``key`` unless it is recorded or held by a live run (see the module docstring)."""
        found: list[Taken] = []

        def decide(conn: sqlite3.Connection) -> Items:
            latest = _latest(conn, key)
            items: list[tuple[str, Callable[[list[Entry]], Any]]] = []
            if latest is not None:
                seq, kind, data = latest
                retried = (self.retry_infra and data.get("outcome") == "infrastructure_failure" and seq <= self.started)
                if kind == "score" and not retried:
                    found.append(Taken("recorded", seq=seq))
                    return []
                if kind == "claim" and data.get("claimant") == self.token:
                    found.append(Taken("mine", seq=seq))
                    return []
                if kind == "claim":
                    state = self._holder_state(data)
                    if state not in (liveness.DEAD, "absent"):
                        found.append(Taken("held", seq=seq, holder=data))
                        return []
                    body = self._release_body(data, seq, DEAD if state == liveness.DEAD else ABSENT)
                    self.released.append(body)
                    items.append(("release", lambda _: body))
            claim = {**(about or {}), "job_key": key, "claimant": self.token, "run_id": self.run_id,
                     **{k: v for k, v in liveness.owner().items() if k in ("host", "pid")}}  # fmt: skip
            items.append(("claim", lambda _: claim))
            return items

        self.instances[key] = (about or {}).get("instance_id")
        written = self.ledger.append_decided(decide)
        if found:
            if found[0].state == "mine":
                self.held[key] = int(found[0].seq or 0)
            return found[0]
        self.held[key] = written[-1].seq
        return Taken("mine", seq=written[-1].seq)

    def recorded(self, key: str) -> None:
        """The job's score entry was written: its claim ended with it."""
        self.held.pop(key, None)

    def release(self, key: str, why: str) -> None:
        """End this run's claim on ``key`` without a result."""
        seq = self.held.get(key)
        if seq is None:
            return
        claim = {"job_key": key, "claimant": self.token, "instance_id": self.instances.get(key)}

        def decide(conn: sqlite3.Connection) -> Items:
            latest = _latest(conn, key)
            if latest is None or latest[0] != seq:  # ended already (its score was written)
                return []
            body = self._release_body(claim, seq, why)
            return [("release", lambda _: body)]

        self.ledger.append_decided(decide)
        self.held.pop(key, None)

    def close(self, why: str = INTERRUPTED) -> None:
        """Release every claim still held, then the owner file. A release the ledger refuses leaves
        its claim open and the owner file in place: the lock goes with this process, and the next run
        proves it dead and releases the claim."""
        for key in list(self.held):
            try:
                self.release(key, why)
            except Exception:  # noqa: BLE001 - the next run's sweep ends it
                pass
        if self.held:
            os.close(self._descriptor)
        else:
            liveness.release(self._descriptor, self.owner_file)

    def __enter__(self) -> Claims:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
