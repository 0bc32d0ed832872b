"""Benchmark sets and the contamination discipline (spec 3.4, 5.3; build phases 4 and 5).

Three kinds of task set, never conflated: ``development`` (small, fast, may hold
known tasks), ``regression`` (run before and after every architecture change) and
``holdout_live`` (unseen or continuously refreshed tasks: the only number that may
be called *generalization*). Each set is a :class:`BenchmarkSet` with exactly the
spec's fields; everything that explains it (which instance each task id is, when it
was created, the rule that gave each task its status, the decisions that burned it,
the set's history) lives beside the record in :class:`SetState`, never inside it.

State is event-sourced: every change is one ledger entry of kind ``set`` (``create``,
``burn``, ``rotate``), and the state of every set is a pure fold over those entries
(:func:`fold`). Each event is checked against the state folded from the entries
before it *inside* the ledger's write transaction, so two writers cannot both pass a
check that only one of them may pass, and a hand-written entry that breaks a rule,
or claims a status its rule does not give, is refused when the ledger is read.

The contamination status is **assigned by rule, never typed in** (no function or
command takes a status):

- a burned task (used in a decision, in any set, ever) is ``known``;
- a task of a ``static:`` source is ``known`` (public, historical);
- a task of a ``held_out:`` source is ``unseen`` (never publicly released);
- a task of a ``live:`` or ``timestamp_gated:`` source needs the model's training
  cutoff: created after it, ``continuously_refreshed``; on or before it, or with no
  readable ``created_at``, ``known`` (it cannot be shown to postdate the cutoff).

Dates and times are read by one grammar, the same on every Python (:func:`read_instant`): a
date in any ISO 8601 spelling (``2025-03-11``, ``20250311``, ``2025-W11-2``, ``2025-070``) is
that whole day in UTC; a time is that instant (UTC without an offset); what is ambiguous or not
a day (a year, a month, a week, six or seven digits, an hour alone, a date with an offset) is
refused with the reason. Nothing is dated in the future: a task created after now is an error in
its dataset and refused when it enters a set, naming the file, the task and the date; so is a
cutoff or a decision time after now, and an entry recording one after it was written.

A set's status: every task alike, that status; generalization-grade tasks
(``unseen``, ``continuously_refreshed``) mixed with ``known`` ones,
``partially_known``. Pure functions over plain data; this module never imports
pytest, and nothing in it asks a model.

Why over 800 lines: the contamination rules, the ISO 8601 date grammar they rely on and the
event-sourced fold that checks every event against the state before it are one discipline;
the fold must see every rule, and every rule is written once, here. The commands are in
:mod:`.commands`.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import hashlib
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from .batch import instance_digest
from .identity import problem_facets, problem_key
from .instances import Instance
from .ledger import Entry, Ledger

__all__ = [
    "GENERALIZATION_GRADE",
    "ROLES",
    "SOURCE_KINDS",
    "STATUSES",
    "BenchmarkSet",
    "Cutoff",
    "DateError",
    "GateResult",
    "GateTask",
    "SetError",
    "SetState",
    "TaskState",
    "Use",
    "burn",
    "classify_task",
    "create_set",
    "epoch_iso",
    "fold",
    "gate",
    "load_sets",
    "parse_cutoff",
    "parse_source",
    "read_instant",
    "refuse_future_cutoff",
    "refuse_future_tasks",
    "require_generalization",
    "resolve_set",
    "rotate_set",
    "set_status",
    "task_id_of",
]

Role = Literal["development", "regression", "holdout_live"]
Status = Literal["known", "partially_known", "unseen", "continuously_refreshed"]
SourceKind = Literal["static", "live", "timestamp_gated", "held_out"]

ROLES: Final = ("development", "regression", "holdout_live")
STATUSES: Final = ("known", "partially_known", "unseen", "continuously_refreshed")
SOURCE_KINDS: Final = ("static", "live", "timestamp_gated", "held_out")
GENERALIZATION_GRADE: Final = frozenset({"unseen", "continuously_refreshed"})
NEEDS_CUTOFF: Final = frozenset({"live", "timestamp_gated"})
KIND: Final = "set"
EVENTS: Final = ("create", "burn", "rotate")
SET_FIELDS: Final = ("set_id", "role", "task_ids", "contamination_status", "refresh_source",
                     "last_decision_use", "burned")  # fmt: skip

NAME_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SET_ID_RE: Final = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,99})@v(?P<version>[1-9][0-9]*)")
TASK_ID_RE: Final = re.compile(r"sha256:[0-9a-f]{64}")
SOURCE_RE: Final = re.compile(r"(?P<kind>[a-z_]+):(?P<name>[A-Za-z0-9][A-Za-z0-9._/-]*)")

# Why a rule gave a task its status; stored with every task so a reader sees the reason.
RULES: Final = ("burned", "static_source", "held_out_source", "after_cutoff", "before_cutoff", "no_created_at")


class SetError(ValueError):
    """A refused set operation or an unreadable set entry: says which task, which set and which rule."""


LEGACY_PROBLEM_FIELDS: Final = ("repo", "base_commit", "problem_statement", "patch", "test_patch", "FAIL_TO_PASS",
                                 "PASS_TO_PASS")  # fmt: skip


def legacy_problem_digest(fields: Mapping[str, Any]) -> str:
    """The problem identity that versions before :func:`.identity.problem_key` recorded (``problem`` of a
    task in older set entries: the exact fields, statement and repository name included). Kept beside the
    new key (``problem_v1``) only so that a task burned in an older ledger still burns its exact copies."""
    from .ledger import canonical

    return "sha256:" + hashlib.sha256(canonical({k: fields.get(k) for k in LEGACY_PROBLEM_FIELDS}).encode("utf-8")).hexdigest()


def _problems(task: Mapping[str, Any]) -> tuple[str, ...]:
    """Every identity a task's row records for its problem: the key, the keys of its fix and its tests
    (:func:`.identity.problem_facets`) and the older digest, each when present."""
    facets = task.get("problem_facets")
    facets = facets if isinstance(facets, list) else []
    return tuple(p for p in (task.get("problem"), *facets, task.get("problem_v1")) if isinstance(p, str) and p)


def tasks_digest(task_ids: Iterable[str]) -> str:
    """The digest a preregistration pins a set version's tasks by: of their sorted ids."""
    from .ledger import canonical

    return "sha256:" + hashlib.sha256(canonical(sorted(task_ids)).encode()).hexdigest()


def task_id_of(instance: Instance) -> str:
    """A task's content address: ``sha256:`` and the digest of the canonical instance."""
    return "sha256:" + instance_digest(instance)


def epoch_iso(epoch: int | None) -> str:
    """An epoch as UTC ISO 8601 (``never`` for None)."""
    if epoch is None:
        return "never"
    try:
        return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError, OSError):  # beyond the years a date holds: said as the number it is
        return f"epoch {epoch}"


# --- the record -------------------------------------------------------------------------------


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SetError(message)


@dataclass(frozen=True)
class BenchmarkSet:
    """One version of a benchmark set (spec 5.3), with exactly the spec's fields."""

    set_id: str
    role: Role
    task_ids: tuple[str, ...]
    contamination_status: Status
    refresh_source: str
    last_decision_use: int | None
    burned: bool

    def __post_init__(self) -> None:
        _require(isinstance(self.set_id, str) and SET_ID_RE.fullmatch(self.set_id) is not None,
                 f"BenchmarkSet.set_id must be NAME@vN (e.g. holdout@v2), got {self.set_id!r}")  # fmt: skip
        _require(self.role in ROLES, f"BenchmarkSet.role must be one of {', '.join(ROLES)}, got {self.role!r}")
        _require(isinstance(self.task_ids, tuple), "BenchmarkSet.task_ids must be a tuple of task ids")
        for task_id in self.task_ids:
            _require(isinstance(task_id, str) and TASK_ID_RE.fullmatch(task_id) is not None,
                     f"BenchmarkSet.task_ids: {task_id!r} is not a content address (sha256:<64 hex digits>)")  # fmt: skip
        _require(len(set(self.task_ids)) == len(self.task_ids), f"BenchmarkSet.task_ids of {self.set_id} repeat a task")
        _require(self.contamination_status in STATUSES,
                 f"BenchmarkSet.contamination_status must be one of {', '.join(STATUSES)}, "
                 f"got {self.contamination_status!r}")  # fmt: skip
        parse_source(self.refresh_source)
        _require(self.last_decision_use is None or (isinstance(self.last_decision_use, int)
                                                    and not isinstance(self.last_decision_use, bool)
                                                    and self.last_decision_use >= 0),
                 f"BenchmarkSet.last_decision_use must be an epoch (integer >= 0) or null, "
                 f"got {self.last_decision_use!r}")  # fmt: skip
        _require(isinstance(self.burned, bool), f"BenchmarkSet.burned must be a boolean, got {self.burned!r}")

    @property
    def name(self) -> str:
        return self.set_id.rsplit("@v", 1)[0]

    @property
    def version(self) -> int:
        return int(self.set_id.rsplit("@v", 1)[1])

    def to_dict(self) -> dict[str, Any]:
        return {
            "set_id": self.set_id,
            "role": self.role,
            "task_ids": list(self.task_ids),
            "contamination_status": self.contamination_status,
            "refresh_source": self.refresh_source,
            "last_decision_use": self.last_decision_use,
            "burned": self.burned,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchmarkSet:
        if not isinstance(data, Mapping):
            raise SetError(f"BenchmarkSet must be a JSON object, got {type(data).__name__}")
        missing = [f for f in SET_FIELDS if f not in data]
        extra = sorted(k for k in data if k not in SET_FIELDS)
        if missing or extra:
            parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"unexpected {', '.join(extra)}"] if extra else [])  # fmt: skip
            raise SetError(f"BenchmarkSet must have exactly the fields {', '.join(SET_FIELDS)}: {'; '.join(parts)}")
        task_ids = data["task_ids"]
        if not isinstance(task_ids, list):
            raise SetError(f"BenchmarkSet.task_ids must be a list, got {type(task_ids).__name__}")
        return cls(set_id=data["set_id"], role=data["role"], task_ids=tuple(task_ids),
                   contamination_status=data["contamination_status"], refresh_source=data["refresh_source"],
                   last_decision_use=data["last_decision_use"], burned=data["burned"])  # fmt: skip


# --- the rules --------------------------------------------------------------------------------


def parse_source(text: str) -> tuple[SourceKind, str]:
    """``KIND:NAME`` with KIND one of static, live, timestamp_gated, held_out."""
    match = SOURCE_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None or match["kind"] not in SOURCE_KINDS:
        raise SetError(f"refresh source {text!r}: expected KIND:NAME with KIND one of {', '.join(SOURCE_KINDS)} "
                       "(e.g. static:human_eval, live:swe_bench_live, timestamp_gated:live_code_bench, "
                       "held_out:swe_bench_pro)")  # fmt: skip
    return cast(SourceKind, match["kind"]), match["name"]


# --- dates and times: one reading for every spelling, the same on every Python ------------------
#
# Python's datetime.fromisoformat reads more on 3.11 (basic dates, week dates, hour-only times) than
# on 3.10, and reads a basic or week date as its midnight. A task's status must not depend on the
# interpreter, so dates are read here, by one grammar (docs/sets.md, "Dates and times"):
#   a date (the whole day, UTC)  2025-03-11, 20250311, 2025-W11-2, 2025W112, 2025-070
#   a time (that instant)        a date, T (or t, or a space), HH:MM[:SS[.fraction]] or HHMM[SS[.fraction]],
#                                then Z, +HH:MM, +HHMM or +HH (without one: UTC)
# and everything else is refused with the reason: a year, a month or a week (not a day), a
# seven-digit or six-digit number (a basic ordinal date or a mistyped YYYYMMDD: ambiguous), a date
# with an offset but no time, an hour without minutes, hour 24, a leap second.

_DATE: Final = r"\d{4}-\d{2}-\d{2}|\d{8}|\d{4}-W\d{2}-\d|\d{4}W\d{3}|\d{4}-\d{3}"
_TIME: Final = r"\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?|\d{4}(?:\d{2}(?:[.,]\d{1,9})?)?"
_OFFSET: Final = r"[Zz]|[+-]\d{2}(?::?\d{2})?"
_INSTANT_RE: Final = re.compile(rf"(?P<date>{_DATE})(?:[Tt ](?P<time>{_TIME})(?P<offset>{_OFFSET})?)?")
_REFUSED: Final = (
    (re.compile(rf"(?:{_DATE})(?:{_OFFSET})"), "a date with an offset but no time: give a bare date (the whole day, "
     "UTC) or a time with its offset (2025-03-11T00:00:00+02:00)"),
    (re.compile(rf"(?:{_DATE})[Tt ]\d{{2}}(?:{_OFFSET})?"), "an hour without minutes: write HH:MM (2025-03-11T12:00Z)"),
    (re.compile(r"\d{4}"), "a year, not a day: give the day (2025-03-11)"),
    (re.compile(r"\d{4}-\d{2}"), "a month, not a day: give the day (2025-03-11)"),
    (re.compile(r"\d{4}-?W\d{2}"), "a week, not a day: give the day (2025-W11-2)"),
    (re.compile(r"\d{7}"), "ambiguous: seven digits may be a basic ordinal date (YYYYDDD) or a mistyped YYYYMMDD; "
     "write the ordinal date with its dash (2025-070) or the calendar date (2025-03-11)"),
    (re.compile(r"\d{6}"), "ambiguous: six digits may be YYMMDD or YYYYMM; write the calendar date (2025-03-11)"),
)  # fmt: skip


class DateError(SetError):
    """A text that is not read as a date or time, and why."""


def _day(text: str) -> _dt.date:
    try:
        week = re.fullmatch(r"(\d{4})-?W(\d{2})-?(\d)", text)
        if week is not None:
            return _dt.date.fromisocalendar(int(week[1]), int(week[2]), int(week[3]))
        digits = text.replace("-", "")
        if len(digits) == 7:  # an ordinal date, YYYY-DDD
            year, ordinal = int(digits[:4]), int(digits[4:])
            day = _dt.date(year, 1, 1) + _dt.timedelta(days=ordinal - 1)
            if ordinal < 1 or day.year != year:
                raise ValueError(f"{year} has no day {ordinal}")
            return day
        return _dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except (ValueError, OverflowError) as exc:
        raise DateError(f"no such day ({exc})") from None


def _clock(text: str) -> _dt.time:
    main, _, fraction = text.replace(",", ".").partition(".")
    digits = main.replace(":", "")
    hour, minute, second = int(digits[:2]), int(digits[2:4]), int(digits[4:6] or 0)
    if hour > 23:
        raise DateError(f"hour {hour} does not exist (hour 24 is not read: write 00:00 of the next day)")
    if minute > 59:
        raise DateError(f"minute {minute} does not exist")
    if second > 59:
        raise DateError(f"second {second} does not exist (a leap second is not read)")
    return _dt.time(hour, minute, second, int((fraction + "000000")[:6]))  # a fraction is truncated to microseconds


def _zone(text: str | None) -> _dt.timezone:
    if text is None or text in ("Z", "z"):
        return _dt.timezone.utc
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise DateError(f"offset {text} does not exist")
    sign = -1 if text[0] == "-" else 1
    return _dt.timezone(sign * _dt.timedelta(hours=hours, minutes=minutes))


def read_instant(text: Any) -> tuple[_dt.datetime, bool]:
    """A UTC instant and whether the text was a date (the whole day, counted from its start), read
    by the grammar above; :class:`DateError` (a SetError) saying why otherwise."""
    if not isinstance(text, str):
        what = "a number" if isinstance(text, (int, float)) else f"a {type(text).__name__}"
        raise DateError(f"{what}, not a text: numbers are not read as epochs")
    value = text.strip()
    if not value:
        raise DateError("empty")
    match = _INSTANT_RE.fullmatch(value)
    if match is None:
        for pattern, why in _REFUSED:
            if pattern.fullmatch(value):
                raise DateError(why)
        raise DateError("not an ISO 8601 date or time")
    day = _day(match["date"])
    if match["time"] is None:
        return _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc), True
    moment = _dt.datetime.combine(day, _clock(match["time"]), tzinfo=_zone(match["offset"]))
    return moment.astimezone(_dt.timezone.utc), False


def _parse_instant(text: Any) -> tuple[_dt.datetime, bool] | None:
    """:func:`read_instant`, or None when the text is not read."""
    try:
        return read_instant(text)
    except DateError:
        return None


def _why_unread(text: Any) -> str:
    try:
        read_instant(text)
    except DateError as exc:
        return str(exc)
    return ""


@dataclass(frozen=True)
class Cutoff:
    """A model's training cutoff. A date (in any of its spellings) covers the whole day (UTC): a
    task created on that day is on, not after, the cutoff. A time is that instant."""

    text: str
    latest: _dt.datetime  # the last instant the model may have seen
    earliest: _dt.datetime  # where the cutoff starts: the day's first instant for a date, else latest

    def postdates(self, created: _dt.datetime) -> bool:
        return created > self.latest


CUTOFF_FORMS: Final = ("an ISO 8601 date (2025-03-10, 20250310, 2025-W11-1 or 2025-069: the whole day, UTC) or time "
                       "(2025-03-10T12:00:00Z, or with an offset; without one, UTC)")  # fmt: skip


def parse_cutoff(value: str | Cutoff) -> Cutoff:
    """A date (the whole day, UTC) or an ISO 8601 time, read by :func:`read_instant`."""
    if isinstance(value, Cutoff):
        return value
    try:
        moment, bare = read_instant(value)
    except DateError as exc:
        raise SetError(f"cutoff {value!r}: {exc}; expected {CUTOFF_FORMS}") from None
    if bare:
        return Cutoff(moment.date().isoformat(), _dt.datetime.combine(moment.date(), _dt.time.max, _dt.timezone.utc),
                      moment)  # fmt: skip
    return Cutoff(_iso(moment), moment, moment)


def _iso(moment: _dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def refuse_future_cutoff(cutoff: str | Cutoff, now: _dt.datetime | None = None) -> Cutoff:
    """The cutoff, or SetError when it starts after now: a model's training cutoff is in the past
    (a date cutoff of today is not in the future)."""
    parsed = parse_cutoff(cutoff)
    moment = now or _now()
    if parsed.earliest > moment:
        raise SetError(f"cutoff {parsed.text} is in the future (now {_iso(moment.replace(microsecond=0))}): a model's "
                       "training cutoff has passed; check the date (a time without an offset is read as UTC)")  # fmt: skip
    return parsed


def refuse_copies(instances: Iterable[Instance]) -> None:
    """SetError naming both tasks when two instances are the same problem (:func:`.identity.problem_key`):
    a set holds each problem once (a copy under another id would count twice, and burning one burns
    the other, which a burn written task by task cannot express)."""
    seen: dict[str, Instance] = {}
    for instance in instances:
        keys = _problems(_task_row(instance))
        first = next((seen[k] for k in keys if k in seen and seen[k].instance_id != instance.instance_id), None)
        if first is not None:  # the same id twice is said later
            raise SetError(f"{instance.source}: task {instance.instance_id!r} is the same problem as {first.instance_id!r} "
                           f"({first.source}): the same gold patch, or the same test patch and FAIL_TO_PASS tests, as "
                           "code (its id, dates, statement, repository name, base commit, comments and PASS_TO_PASS "
                           "list do not make another problem); a set holds each problem once")  # fmt: skip
        seen.update({k: instance for k in keys})


def refuse_future_tasks(instances: Iterable[Instance], now: _dt.datetime | None = None) -> None:
    """SetError naming the file, the task and the date when a task is dated after now: a task
    cannot have been created in the future, so its dataset is in error (whatever the set's source)."""
    moment = now or _now()
    future = [instance for instance in instances
              if (parsed := _parse_instant(instance.fields.get("created_at"))) is not None and parsed[0] > moment]  # fmt: skip
    if future:
        first = future[0]
        more = f" (and {len(future) - 1} more task(s) dated in the future)" if len(future) > 1 else ""
        raise SetError(f"{first.source}: task {first.instance_id} is dated in the future: created_at "
                       f"{first.fields.get('created_at')!r} is after now ({_iso(moment.replace(microsecond=0))}); a "
                       "task cannot have been created after now, so the dataset is in error: fix its created_at (a "
                       f"time without an offset is read as UTC){more}")  # fmt: skip


@dataclass(frozen=True)
class Use:
    """One decision that consumed a task."""

    decision: str
    when: int
    seq: int
    set_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "when": self.when, "when_iso": epoch_iso(self.when),
                "seq": self.seq, "set_id": self.set_id}  # fmt: skip


def classify_task(source: str, created_at: Any, cutoff: Cutoff | None, burned_by: Use | None) -> tuple[Status, str]:
    """A task's contamination status and the rule that gave it (see the module docstring)."""
    kind, _ = parse_source(source)
    if burned_by is not None:
        return "known", "burned"
    if kind == "static":
        return "known", "static_source"
    if kind == "held_out":
        return "unseen", "held_out_source"
    if cutoff is None:
        raise SetError(f"a {kind} source ({source}) needs the model's training cutoff (--cutoff DATE): whether a "
                       "task is continuously_refreshed or known depends on whether it was created after it")  # fmt: skip
    parsed = _parse_instant(created_at) if isinstance(created_at, str) else None
    if parsed is None:
        return "known", "no_created_at"
    return ("continuously_refreshed", "after_cutoff") if cutoff.postdates(parsed[0]) else ("known", "before_cutoff")


def rule_text(rule: str, *, source: str, created_at: Any, cutoff: str | None, burned_by: Use | None) -> str:
    """The sentence a reader sees for a rule code."""
    if rule == "burned" and burned_by is not None:
        return (f"burned: used in decision {burned_by.decision!r} at {epoch_iso(burned_by.when)} "
                f"(through {burned_by.set_id}); a burned task is known forever")  # fmt: skip
    if rule == "static_source":
        return f"static source {source}: public, historical tasks are known"
    if rule == "held_out_source":
        return f"held-out source {source}: never publicly released, so unseen"
    if rule == "after_cutoff":
        return f"created {created_at}, after the cutoff {cutoff}"
    if rule == "before_cutoff":
        return f"created {created_at}, on or before the cutoff {cutoff}"
    if rule == "no_created_at":
        what = ("no created_at" if created_at in (None, "")
                else f"created_at {created_at!r} is not read ({_why_unread(created_at)})")  # fmt: skip
        return f"{what}: it cannot be shown to postdate the cutoff {cutoff}"
    return rule


def set_status(statuses: Iterable[str]) -> Status:
    """The set's status from its tasks': all alike, that one; generalization-grade tasks mixed with
    known ones, ``partially_known``. (Unseen mixed with continuously_refreshed cannot arise, a set
    having one source; it would be ``continuously_refreshed``, the weaker of the two claims.)"""
    present = set(statuses)
    if not present:
        raise SetError("a benchmark set holds at least one task")
    if len(present) == 1:
        return cast(Status, present.pop())
    if "known" in present or "partially_known" in present:
        return "partially_known"
    return "continuously_refreshed"


# --- the state: a fold over the ledger's set entries ------------------------------------------


@dataclass(frozen=True)
class TaskState:
    """One task of a set version, with its status as of now and the rule that gave it."""

    task_id: str
    instance_id: str
    created_at: Any
    status: Status
    rule: str
    why: str
    burned_by: Use | None
    uses: tuple[Use, ...]

    @property
    def label(self) -> str:
        return f"{self.instance_id} ({self.task_id})"

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "instance_id": self.instance_id, "created_at": self.created_at,
                "status": self.status, "rule": self.rule, "why": self.why,
                "burned_by": self.burned_by.to_dict() if self.burned_by else None,
                "uses": [use.to_dict() for use in self.uses]}  # fmt: skip


@dataclass(frozen=True)
class SetState:
    """A set version's record and, beside it, everything that explains the record."""

    record: BenchmarkSet
    tasks: tuple[TaskState, ...]
    cutoff: str | None
    current: bool
    latest_version: int
    seq: int  # the ledger entry that made this version
    created: str  # when that entry was written (UTC)
    dataset: str | None
    retired: tuple[dict[str, Any], ...]  # tasks the rotation that made this version retired, with why
    history: tuple[dict[str, Any], ...]  # every set entry of this name: seq, created, event, set_id, summary

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def version(self) -> int:
        return self.record.version

    @property
    def set_id(self) -> str:
        return self.record.set_id

    @property
    def role(self) -> Role:
        return self.record.role

    @property
    def instances(self) -> dict[str, str]:
        """task id -> instance id, in the set's order."""
        return {task.task_id: task.instance_id for task in self.tasks}

    def task(self, ref: str) -> TaskState:
        """A task of this set by task id or instance id; SetError with close matches otherwise."""
        for task in self.tasks:
            if ref in (task.task_id, task.instance_id):
                return task
        ids = [t.instance_id for t in self.tasks]
        close = difflib.get_close_matches(ref, ids, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise SetError(f"task {ref!r} is not in {self.set_id} ({len(self.tasks)} tasks){hint}")

    def details(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "current": self.current,
                "latest_version": self.latest_version, "cutoff": self.cutoff, "dataset": self.dataset,
                "seq": self.seq, "created": self.created, "tasks": [t.to_dict() for t in self.tasks],
                "retired": list(self.retired), "history": list(self.history)}  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"record": self.record.to_dict(), "details": self.details()}


@dataclass
class _Version:
    name: str
    version: int
    role: Role
    source: str
    cutoff: str | None
    tasks: list[dict[str, Any]]  # task_id, instance_id, created_at
    seq: int
    created: str
    dataset: str | None
    retired: list[dict[str, Any]]


@dataclass
class _Fold:
    """The folded state: every version of every set, and every decision use of every task."""

    versions: dict[str, list[_Version]] = field(default_factory=dict)
    uses: dict[str, list[Use]] = field(default_factory=dict)  # task id -> uses
    instance_uses: dict[str, list[Use]] = field(default_factory=dict)  # instance id -> uses
    problem_uses: dict[str, list[Use]] = field(default_factory=dict)  # problem key (or older digest) -> uses
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def current(self, name: str) -> _Version | None:
        versions = self.versions.get(name)
        return versions[-1] if versions else None

    def active(self) -> list[_Version]:
        return [versions[-1] for versions in self.versions.values()]

    def uses_of(self, task_id: str, instance_id: str, problems: Sequence[str] = ()) -> list[Use]:
        """A burned task is burned by its content, by its instance id and by its problem
        (:func:`.identity.problem_key`): a copy of a burned instance under another id, with a reworded
        statement or a renamed repository, is still the same problem."""
        found = {(u.seq, u.decision): u for u in self.uses.get(task_id, [])}
        found.update({(u.seq, u.decision): u for u in self.instance_uses.get(instance_id, [])})
        for problem in problems:
            found.update({(u.seq, u.decision): u for u in self.problem_uses.get(problem, [])})
        return sorted(found.values(), key=lambda u: (u.seq, u.when))

    def task_state(self, version: _Version, task: Mapping[str, Any], cutoff: str | None) -> TaskState:
        uses = tuple(self.uses_of(task["task_id"], task["instance_id"], _problems(task)))
        burned_by = uses[0] if uses else None
        parsed = parse_cutoff(cutoff) if cutoff is not None else None
        status, rule = classify_task(version.source, task.get("created_at"), parsed, burned_by)
        why = rule_text(rule, source=version.source, created_at=task.get("created_at"), cutoff=cutoff, burned_by=burned_by)
        return TaskState(task["task_id"], task["instance_id"], task.get("created_at"), status, rule, why, burned_by, uses)

    def state(self, version: _Version) -> SetState:
        tasks = tuple(self.task_state(version, task, version.cutoff) for task in version.tasks)
        whens = [use.when for task in tasks for use in task.uses]
        record = BenchmarkSet(
            set_id=f"{version.name}@v{version.version}",
            role=version.role,
            task_ids=tuple(task.task_id for task in tasks),
            contamination_status=set_status(task.status for task in tasks),
            refresh_source=version.source,
            last_decision_use=max(whens) if whens else None,
            burned=any(task.burned_by is not None for task in tasks),
        )
        latest = self.versions[version.name][-1]
        return SetState(record, tasks, version.cutoff, latest is version, latest.version, version.seq, version.created,
                        version.dataset, tuple(version.retired), tuple(self.history.get(version.name, [])))  # fmt: skip


def _task_row(instance: Instance) -> dict[str, Any]:
    return {"task_id": task_id_of(instance), "instance_id": instance.instance_id,
            "created_at": instance.fields.get("created_at"), "problem": problem_key(instance.fields),
            "problem_facets": list(problem_facets(instance.fields)),
            "problem_v1": legacy_problem_digest(instance.fields)}  # fmt: skip


def _where(seq: int) -> str:
    return f"ledger entry {seq}" if seq > 0 else "this operation"


def _check_tasks(folded: _Fold, version: _Version, seq: int) -> list[TaskState]:
    """The rules every new version obeys; returns its tasks' states. Refusals name the task,
    the set and the rule."""
    set_id = f"{version.name}@v{version.version}"
    if not version.tasks:
        raise SetError(f"{set_id} would hold no task: a benchmark set holds at least one task")
    seen: dict[str, str] = {}
    for task in version.tasks:
        for key in ("task_id", "instance_id"):
            if task[key] in seen:
                raise SetError(f"{set_id}: {key} {task[key]!r} is listed twice ({_where(seq)})")
            seen[task[key]] = key
    states = [folded.task_state(version, task, version.cutoff) for task in version.tasks]
    if version.role == "holdout_live":
        for state in states:
            if state.status not in GENERALIZATION_GRADE:
                bad = [s for s in states if s.status not in GENERALIZATION_GRADE]
                more = f" (and {len(bad) - 1} more task(s) like it)" if len(bad) > 1 else ""
                raise SetError(f"task {state.label} cannot be in holdout_live set {set_id}: its status is "
                               f"{state.status} ({state.why}); rule: a holdout_live set only holds unseen or "
                               f"continuously_refreshed tasks{more}")  # fmt: skip
    for other in folded.active():
        if other.name == version.name or other.role == version.role:
            continue
        theirs = {t["task_id"]: t for t in other.tasks}
        their_instances = {t["instance_id"]: t for t in other.tasks}
        for state in states:
            clash = theirs.get(state.task_id) or their_instances.get(state.instance_id)
            if clash is not None:
                copy = "" if clash["task_id"] == state.task_id else f" (its instance, as task {clash['task_id']})"
                raise SetError(f"task {state.label} is already in {other.role} set {other.name}@v{other.version}{copy}; "
                               f"rule: one task never sits in two roles at once, so it cannot also be in "
                               f"{version.role} set {set_id}")  # fmt: skip
    return states


def _summary(body: Mapping[str, Any]) -> str:
    event = body["event"]
    if event == "create":
        return f"created with {len(body['tasks'])} task(s), role {body['role']}, source {body['source']}"
    if event == "rotate":
        return (f"rotated from {body['from']}: retired {len(body['retired'])}, added {len(body['added'])}, "
                f"{len(body['tasks'])} task(s)")  # fmt: skip
    return (f"decision {body['decision']!r} at {epoch_iso(body['when'])} used {len(body['task_ids'])} task(s), "
            f"{len(body['newly_burned'])} newly burned")  # fmt: skip


def _apply(folded: _Fold, body: Mapping[str, Any], seq: int, created: str) -> None:
    """Fold one set entry into the state, refusing one that breaks a rule or misstates a status."""
    if not isinstance(body, Mapping) or body.get("event") not in EVENTS:
        raise SetError(f"{_where(seq)}: not a set event (expected event one of {', '.join(EVENTS)})")
    try:
        event = body["event"]
        name = body["name"]
        if event in ("create", "rotate"):
            _apply_version(folded, body, seq, created)
        else:
            _apply_burn(folded, body, seq, created)
    except KeyError as exc:
        raise SetError(f"{_where(seq)}: {body.get('event')} event without {exc.args[0]!r}") from None
    except (TypeError, AttributeError) as exc:
        raise SetError(f"{_where(seq)}: malformed {body.get('event')} event ({exc})") from None
    history = folded.history.setdefault(name, [])
    history.append({"seq": seq, "created": created, "event": event, "set_id": body["set_id"], "summary": _summary(body)})
    stored = body.get("record")
    if stored is not None:
        current = folded.current(name)
        assert current is not None
        derived = folded.state(current).record.to_dict()
        if dict(stored) != derived:
            diff = sorted(k for k in derived if stored.get(k) != derived[k])
            raise SetError(f"{_where(seq)}: the stored record of {body['set_id']} contradicts the rules "
                           f"(fields {', '.join(diff)} differ from what the rules derive)")  # fmt: skip


def _name_free(folded: _Fold, name: str) -> None:
    current = folded.current(name)
    if current is not None:
        raise SetError(f"set {name!r} exists ({name}@v{current.version}, created at ledger entry "
                       f"{folded.versions[name][0].seq}); names are unique: choose another, or change "
                       f"a holdout_live set's tasks with objective-score sets rotate {name}")  # fmt: skip


def _apply_version(folded: _Fold, body: Mapping[str, Any], seq: int, created: str) -> None:
    name, event = body["name"], body["event"]
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        raise SetError(f"{_where(seq)}: set name {name!r} is not valid")
    current = folded.current(name)
    if event == "create":
        _name_free(folded, name)
        version, role, source = 1, body["role"], body["source"]
        retired: list[dict[str, Any]] = []
    else:
        if current is None:
            raise SetError(f"{_where(seq)}: rotate of unknown set {name!r}")
        if body["from"] != f"{name}@v{current.version}":
            raise SetError(f"{_where(seq)}: rotates {body['from']}, but the current version is {name}@v{current.version}")
        version, role, source = current.version + 1, current.role, current.source
        retired = [dict(r) for r in body["retired"]]
    if role not in ROLES:
        raise SetError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    parse_source(source)
    if body["set_id"] != f"{name}@v{version}":
        raise SetError(f"{_where(seq)}: set_id {body['set_id']!r} should be {name}@v{version}")
    cutoff = body.get("cutoff")
    if cutoff is not None:
        cutoff = parse_cutoff(cutoff).text
    elif parse_source(source)[0] in NEEDS_CUTOFF:
        _cutoff_required(source, name)
    tasks = [{"task_id": t["task_id"], "instance_id": t["instance_id"], "created_at": t.get("created_at"),
              "problem": t.get("problem"), "problem_facets": t.get("problem_facets"), "problem_v1": t.get("problem_v1")}
             for t in body["tasks"]]  # fmt: skip
    for task in tasks:
        if not isinstance(task["task_id"], str) or TASK_ID_RE.fullmatch(task["task_id"]) is None:
            raise SetError(f"{_where(seq)}: task id {task['task_id']!r} is not a content address")
    _dated_before_entry(body["set_id"], cutoff, tasks, seq, created)
    new = _Version(name, version, role, source, cutoff, tasks, seq, created, body.get("dataset"), retired)
    if event == "rotate":
        assert current is not None
        _check_rotation(folded, current, new, body, seq)
    states = _check_tasks(folded, new, seq)
    for task, state in zip(body["tasks"], states):
        if (task.get("status"), task.get("rule")) != (state.status, state.rule):
            raise SetError(f"{_where(seq)}: task {state.label} of {body['set_id']} is recorded as "
                           f"{task.get('status')} ({task.get('rule')}), but the rule gives {state.status} "
                           f"({state.why}): a status is assigned by rule, never typed in")  # fmt: skip
    folded.versions.setdefault(name, []).append(new)


def _dated_before_entry(set_id: str, cutoff: str | None, tasks: Sequence[Mapping[str, Any]], seq: int,
                        created: str) -> None:  # fmt: skip
    """Nothing an entry records is dated after the entry was written: a cutoff or a task created in
    the future is an error in the data (refused when written; refused here when written by hand)."""
    written = _parse_instant(created)
    if written is None:
        return
    if cutoff is not None and parse_cutoff(cutoff).earliest > written[0]:
        raise SetError(f"{_where(seq)}: the cutoff {cutoff} of {set_id} is after the entry was written ({created}): "
                       "a model's training cutoff has passed")  # fmt: skip
    for task in tasks:
        parsed = _parse_instant(task.get("created_at"))
        if parsed is not None and parsed[0] > written[0]:
            raise SetError(f"{_where(seq)}: task {task['instance_id']} of {set_id} is dated {task['created_at']}, "
                           f"after the entry was written ({created}): a task cannot have been created in the future")  # fmt: skip


def _check_rotation(folded: _Fold, old: _Version, new: _Version, body: Mapping[str, Any], seq: int) -> None:
    """A rotation retires exactly the tasks the rules no longer let count for generalization."""
    before = [t["task_id"] for t in old.tasks]
    after = {t["task_id"] for t in new.tasks}
    gone = [task_id for task_id in before if task_id not in after]
    if sorted(gone) != sorted(r["task_id"] for r in new.retired):
        raise SetError(f"{_where(seq)}: {new.name}@v{new.version} drops {len(gone)} task(s) but records "
                       f"{len(new.retired)} retired")  # fmt: skip
    if list(body["added"]) != [t["task_id"] for t in new.tasks if t["task_id"] not in set(before)]:
        raise SetError(f"{_where(seq)}: the added tasks of {new.name}@v{new.version} do not match its task list")
    for task in old.tasks:
        now = folded.task_state(new, task, new.cutoff)
        retiring = task["task_id"] in gone
        if retiring == (now.status in GENERALIZATION_GRADE):
            what = "retires" if retiring else "keeps"
            raise SetError(f"{_where(seq)}: the rotation to {new.name}@v{new.version} {what} task {now.label}, "
                           f"whose status is {now.status} ({now.why}); rule: rotation retires exactly the tasks "
                           "that can no longer count for generalization")  # fmt: skip


def _cutoff_required(source: str, name: str) -> None:
    kind, _ = parse_source(source)
    raise SetError(f"--cutoff DATE is required for set {name!r} with a {kind} source ({source}): a task of it is "
                   "continuously_refreshed only if it was created after the model's training cutoff, and known "
                   "otherwise; without the cutoff its status cannot be assigned")  # fmt: skip


def _apply_burn(folded: _Fold, body: Mapping[str, Any], seq: int, created: str) -> None:
    name = body["name"]
    current = folded.current(name)
    if current is None:
        raise SetError(f"{_where(seq)}: burn of unknown set {name!r}")
    if body["set_id"] != f"{name}@v{current.version}":
        raise SetError(f"{_where(seq)}: burns {body['set_id']}, but the current version is {name}@v{current.version}")
    decision, when = body["decision"], body["when"]
    if not isinstance(decision, str) or not decision.strip():
        raise SetError("a burn names its decision (--decision TEXT): a non-empty text")
    if isinstance(when, bool) or not isinstance(when, int) or when < 0:
        raise SetError(f"a decision's time is an epoch (integer seconds >= 0), got {when!r}")
    written = _parse_instant(created)
    if written is not None and when > written[0].timestamp():
        raise SetError(f"{_where(seq)}: the decision's time {epoch_iso(when)} is after the entry was written "
                       f"({created}): a burn records a decision already made")  # fmt: skip
    members = {t["task_id"]: t for t in current.tasks}
    newly = []
    use = Use(decision, when, seq, body["set_id"])
    if not body["task_ids"]:
        raise SetError(f"{_where(seq)}: a burn uses at least one task")
    if len(set(body["task_ids"])) != len(body["task_ids"]):
        raise SetError(f"{_where(seq)}: a burn lists a task twice")
    for task_id in body["task_ids"]:
        task = members.get(task_id)
        if task is None:
            raise SetError(f"{_where(seq)}: task {task_id} is not in {body['set_id']}")
        if not folded.uses_of(task_id, task["instance_id"], _problems(task)):
            newly.append(task_id)
        folded.uses.setdefault(task_id, []).append(use)
        folded.instance_uses.setdefault(task["instance_id"], []).append(use)
        for problem in _problems(task):
            folded.problem_uses.setdefault(problem, []).append(use)
    if list(body["newly_burned"]) != newly:
        raise SetError(f"{_where(seq)}: the burn records newly burned tasks {body['newly_burned']} but the "
                       f"state before it gives {newly}")  # fmt: skip


def _events(items: Iterable[Entry | Mapping[str, Any]]) -> Iterable[tuple[int, str, Any]]:
    for index, item in enumerate(items, 1):
        if isinstance(item, Entry):
            if item.kind == KIND:
                yield item.seq, item.created, item.data
        else:
            yield index, "", item


def _fold(items: Iterable[Entry | Mapping[str, Any]]) -> _Fold:
    folded = _Fold()
    for seq, created, body in _events(items):
        try:
            _apply(folded, body, seq, created)
        except SetError as exc:
            if str(exc).startswith(_where(seq)):
                raise
            raise SetError(f"{_where(seq)} is refused: {exc}") from None
    return folded


def fold(events: Iterable[Entry | Mapping[str, Any]]) -> dict[str, SetState]:
    """The current version of every set, keyed by name: a pure fold over set events (ledger
    entries of kind ``set``, or their bodies in order). Raises SetError on an event that breaks
    a rule or claims a status its rule does not give."""
    folded = _fold(events)
    return {name: folded.state(versions[-1]) for name, versions in folded.versions.items()}


def load_sets(ledger: Ledger) -> dict[str, SetState]:
    """Every set's current version in the ledger, keyed by set name."""
    return fold(list(ledger.entries(KIND)))


def _resolve(folded: _Fold, ref: str) -> SetState:
    if not isinstance(ref, str):
        raise SetError(f"set {ref!r}: expected NAME or NAME@vN")
    match = SET_ID_RE.fullmatch(ref)
    name = match["name"] if match else ref
    if not match and NAME_RE.fullmatch(ref) is None:
        raise SetError(f"set {ref!r}: expected NAME (the current version) or NAME@vN (that version)")
    versions = folded.versions.get(name)
    if not versions:
        known = sorted(folded.versions)
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        listing = ", ".join(known) if known else "none yet (objective-score sets create NAME ...)"
        raise SetError(f"no benchmark set {name!r}{hint} (sets: {listing})")
    if match is None:
        return folded.state(versions[-1])
    number = int(match["version"])
    if not 1 <= number <= len(versions):
        raise SetError(f"{ref}: no such version; {name} has v1..v{len(versions)}")
    return folded.state(versions[number - 1])


def resolve_set(ledger: Ledger, set_id: str) -> SetState:
    """``NAME`` (its current version) or ``NAME@vN`` (that version, with today's burns)."""
    return _resolve(_fold(list(ledger.entries(KIND))), set_id)


# --- writing: each event is checked against the state inside the write transaction ------------


def _write(ledger: Ledger, build: Callable[[_Fold], dict[str, Any]]) -> tuple[dict[str, Any], SetState]:
    """Fold, build the event, fold it in (which checks every rule), add the record it gives,
    append: one ledger transaction, so no other writer can slip an event in between the check
    and the append."""
    out: dict[str, Any] = {}

    def make(_: list[Entry]) -> dict[str, Any]:
        folded = _fold(list(ledger.entries(KIND)))
        body = build(folded)
        _apply(folded, body, 0, "")
        current = folded.current(body["name"])
        assert current is not None
        out["state"] = folded.state(current)
        body["record"] = out["state"].record.to_dict()
        return body

    entry = ledger.append_linked([(KIND, make)])[0]
    state: SetState = out["state"]
    history = tuple({**item, "seq": entry.seq, "created": entry.created} if item["seq"] == 0 else item
                    for item in state.history)  # fmt: skip
    if state.seq == 0:
        state = dataclasses.replace(state, seq=entry.seq, created=entry.created)
    return entry.data, dataclasses.replace(state, history=history)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        raise SetError(f"set name {name!r}: expected letters, digits, '.', '_' or '-', starting with a letter or "
                       "digit, at most 100 characters (the version is added as @vN)")  # fmt: skip


def _task_bodies(states: Sequence[TaskState], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    problems = {row["task_id"]: row for row in rows}
    bodies = []
    for s in states:
        row = problems.get(s.task_id, {})
        body = {"task_id": s.task_id, "instance_id": s.instance_id, "created_at": s.created_at, "status": s.status,
                "rule": s.rule, "problem": row.get("problem")}  # fmt: skip
        if row.get("problem_facets"):  # its fix's and its tests' keys: a copy that changes one part keeps the other's
            body["problem_facets"] = row["problem_facets"]
        if row.get("problem_v1"):  # the older digest, for burns an older version recorded
            body["problem_v1"] = row["problem_v1"]
        bodies.append(body)
    return bodies


def create_set(ledger: Ledger, name: str, role: str, instances: Sequence[Instance], source: str,
               cutoff: str | Cutoff | None = None, dataset: str | None = None) -> SetState:  # fmt: skip
    """Create ``NAME@v1`` from instances. There is no status argument: every task's status
    comes from the rules (source, cutoff, burns)."""
    _check_name(name)
    if role not in ROLES:
        raise SetError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    kind, _ = parse_source(source)
    normalized = refuse_future_cutoff(cutoff).text if cutoff is not None else None
    if normalized is None and kind in NEEDS_CUTOFF:
        _cutoff_required(source, name)
    if not instances:
        raise SetError(f"set {name!r} would hold no task: a benchmark set holds at least one task")
    refuse_future_tasks(instances)
    refuse_copies(instances)
    rows = [_task_row(instance) for instance in instances]

    def build(folded: _Fold) -> dict[str, Any]:
        _name_free(folded, name)
        draft = _Version(name, 1, cast(Role, role), source, normalized, rows, 0, "", dataset, [])
        states = _check_tasks(folded, draft, 0)
        return {"event": "create", "name": name, "set_id": f"{name}@v1", "role": role, "source": source,
                "cutoff": normalized, "dataset": dataset, "tasks": _task_bodies(states, rows)}  # fmt: skip

    return _write(ledger, build)[1]


def burn(ledger: Ledger, set_name: str, decision: str, task_ids: Iterable[str] | None = None,
         when: int | None = None) -> list[str]:  # fmt: skip
    """Record that a decision used tasks of a set's current version (default: all of them);
    returns the task ids burned by it for the first time. Tasks are burned per task, everywhere
    and forever. Using an already burned task is still recorded (it moves last_decision_use)."""
    if not isinstance(decision, str) or not decision.strip():
        raise SetError("a burn names its decision (--decision TEXT): a non-empty text")
    now = int(time.time())
    moment = now if when is None else when
    if isinstance(moment, bool) or not isinstance(moment, int) or moment < 0:
        raise SetError(f"a decision's time is an epoch (integer seconds >= 0), got {when!r}")
    if moment > now:
        raise SetError(f"a decision's time {epoch_iso(moment)} is in the future (now {epoch_iso(now)}): a burn records a "
                       "decision already made")  # fmt: skip
    wanted = None if task_ids is None else list(task_ids)

    def build(folded: _Fold) -> dict[str, Any]:
        state = _resolve(folded, set_name)
        if not state.current:
            raise SetError(f"{state.set_id} is retired (the current version is {state.name}@v{state.latest_version}): "
                           "a decision uses the current version")  # fmt: skip
        if wanted is None:
            chosen = [task.task_id for task in state.tasks]
        else:
            if not wanted:
                raise SetError(f"burn of {state.set_id}: no task given (give --task IDs, or none to burn every task)")
            chosen = []
            for ref in wanted:
                task_id = state.task(ref).task_id
                if task_id in chosen:
                    raise SetError(f"burn of {state.set_id}: task {ref!r} is given twice")
                chosen.append(task_id)
        by_id = {task.task_id: task for task in state.tasks}
        newly = [task_id for task_id in chosen if by_id[task_id].burned_by is None]
        return {"event": "burn", "name": state.name, "set_id": state.set_id, "decision": decision.strip(),
                "when": moment, "task_ids": chosen, "newly_burned": newly}  # fmt: skip

    body, _ = _write(ledger, build)
    return list(body["newly_burned"])


def rotate_set(ledger: Ledger, name: str, add: Sequence[Instance] = (), cutoff: str | Cutoff | None = None,
               dataset: str | None = None) -> SetState:  # fmt: skip
    """Make the next version of a holdout_live set: retire every task that can no longer count for
    generalization (burned; or, under a new cutoff, not created after it) and add fresh tasks,
    which obey the same rules as at creation. The cutoff defaults to the current version's."""
    if cutoff is not None:
        refuse_future_cutoff(cutoff)
    refuse_future_tasks(add)
    refuse_copies(add)
    rows = [_task_row(instance) for instance in add]

    def build(folded: _Fold) -> dict[str, Any]:
        state = _resolve(folded, name)
        if not state.current:
            raise SetError(f"{state.set_id} is retired (the current version is {state.name}@v{state.latest_version}): "
                           "rotation starts from the current version")  # fmt: skip
        if state.role != "holdout_live":
            raise SetError(f"{state.set_id} is a {state.role} set: rotation retires the burned tasks of a holdout_live "
                           "set after a decision; burned tasks are development and regression data, so they stay "
                           "(to change those tasks, create a new set)")  # fmt: skip
        version = folded.versions[state.name][-1]
        new_cutoff = parse_cutoff(cutoff).text if cutoff is not None else version.cutoff
        if cutoff is not None and version.cutoff is not None and parse_cutoff(cutoff).latest < parse_cutoff(version.cutoff).latest:
            raise SetError(f"{state.set_id}: --cutoff {new_cutoff} is earlier than the set's cutoff {version.cutoff}: "
                           "a rotation never lowers the cutoff (that would let older, possibly seen tasks count as "
                           "fresh); a model with an earlier cutoff gets a new set")  # fmt: skip
        if new_cutoff is None and parse_source(version.source)[0] in NEEDS_CUTOFF:
            _cutoff_required(version.source, state.name)
        probe = _Version(state.name, version.version, version.role, version.source, new_cutoff, version.tasks, 0, "",
                         None, [])  # fmt: skip
        kept, retired = [], []
        for task in version.tasks:
            now = folded.task_state(probe, task, new_cutoff)
            if now.status in GENERALIZATION_GRADE:
                kept.append(task)
            else:
                retired.append({"task_id": now.task_id, "instance_id": now.instance_id, "rule": now.rule,
                                "why": now.why})  # fmt: skip
        present = {t["task_id"]: t for t in kept} | {t["instance_id"]: t for t in kept}
        present |= {problem: t for t in kept for problem in _problems(t)}
        for row in rows:
            clash = (present.get(row["task_id"]) or present.get(row["instance_id"])
                     or next((present[p] for p in _problems(row) if p in present), None))  # fmt: skip
            if clash is not None:
                raise SetError(f"task {row['instance_id']} ({row['task_id']}) is already in {state.set_id}: --add "
                               "takes fresh tasks")  # fmt: skip
        if not retired and not rows:
            raise SetError(f"nothing to rotate in {state.set_id}: no task is burned or predates the cutoff "
                           f"{new_cutoff}, and no task is added (--add ID)")  # fmt: skip
        if retired and len(retired) == len(version.tasks) and not rows:
            raise SetError(f"rotating {state.set_id} would retire all of its {len(retired)} task(s) and leave it empty: "
                           "add fresh tasks with --dataset FILE --add ID")  # fmt: skip
        draft = _Version(state.name, version.version + 1, version.role, version.source, new_cutoff, kept + rows, 0, "",
                         dataset, retired)  # fmt: skip
        states = _check_tasks(folded, draft, 0)
        return {"event": "rotate", "name": state.name, "set_id": f"{state.name}@v{draft.version}",
                "from": state.set_id, "cutoff": new_cutoff, "dataset": dataset, "retired": retired,
                "added": [r["task_id"] for r in rows], "tasks": _task_bodies(states, [*version.tasks, *rows])}  # fmt: skip

    return _write(ledger, build)[1]


# --- the gate: which tasks may count for generalization under a cutoff ------------------------


@dataclass(frozen=True)
class GateTask:
    task_id: str
    instance_id: str
    created_at: Any
    eligible: bool
    reasons: tuple[str, ...]  # codes: role, burned, static_source, before_cutoff, no_created_at
    why: tuple[str, ...]  # one sentence per reason

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "instance_id": self.instance_id, "created_at": self.created_at,
                "eligible": self.eligible, "reasons": list(self.reasons), "why": list(self.why)}  # fmt: skip


@dataclass(frozen=True)
class GateResult:
    """Which tasks of a set may count for generalization under a model's cutoff, and why not the others."""

    set_id: str
    role: str
    cutoff: str
    tasks: tuple[GateTask, ...]
    usable: bool  # the set's number may be reported as generalization (on the eligible tasks)
    refusal: str | None

    @property
    def eligible(self) -> list[str]:
        return [task.task_id for task in self.tasks if task.eligible]

    @property
    def excluded(self) -> dict[str, tuple[str, ...]]:
        return {task.task_id: task.reasons for task in self.tasks if not task.eligible}

    def to_dict(self) -> dict[str, Any]:
        return {"set_id": self.set_id, "role": self.role, "cutoff": self.cutoff, "usable": self.usable,
                "refusal": self.refusal, "eligible": self.eligible,
                "tasks": [task.to_dict() for task in self.tasks]}  # fmt: skip


_ROLE_REFUSAL: Final = "{set_id} is a {role} set: only a holdout_live set's number may be called generalization"


def gate(state: SetState, cutoff: str | Cutoff) -> GateResult:
    """Timestamp gating: a task may count for generalization only if its set is holdout_live, it is
    not burned, its source is not static, and (live and timestamp-gated sources) it was created after
    the cutoff. Held-out tasks were never public, so their date does not matter. The set is usable
    only if it is a holdout_live set's current version, none of its tasks is burned (rotate first)
    and at least one task is eligible; then its eligible tasks are the generalization number's."""
    parsed = refuse_future_cutoff(cutoff)
    kind, _ = parse_source(state.record.refresh_source)
    rows = []
    for task in state.tasks:
        reasons: list[tuple[str, str]] = []
        if state.role != "holdout_live":
            reasons.append(("role", _ROLE_REFUSAL.format(set_id=state.set_id, role=state.role)))
        if task.burned_by is not None:
            reasons.append(("burned", rule_text("burned", source="", created_at=None, cutoff=None,
                                                burned_by=task.burned_by)))  # fmt: skip
        if kind == "static":
            reasons.append(("static_source", rule_text("static_source", source=state.record.refresh_source,
                                                       created_at=None, cutoff=None, burned_by=None)))  # fmt: skip
        elif kind in NEEDS_CUTOFF:
            _, rule = classify_task(state.record.refresh_source, task.created_at, parsed, None)
            if rule != "after_cutoff":
                reasons.append((rule, rule_text(rule, source=state.record.refresh_source, created_at=task.created_at,
                                                cutoff=parsed.text, burned_by=None)))  # fmt: skip
        rows.append(GateTask(task.task_id, task.instance_id, task.created_at, not reasons,
                             tuple(code for code, _ in reasons), tuple(text for _, text in reasons)))  # fmt: skip
    burned = [task for task in state.tasks if task.burned_by is not None]
    refusal = None
    if not state.current:
        refusal = (f"{state.set_id} is retired (the current version is {state.name}@v{state.latest_version}): "
                   "a retired version is never used for a decision")  # fmt: skip
    elif state.role != "holdout_live":
        refusal = _ROLE_REFUSAL.format(set_id=state.set_id, role=state.role)
    elif burned:
        first = burned[0]
        assert first.burned_by is not None
        refusal = (f"{len(burned)} of {len(state.tasks)} task(s) of {state.set_id} are burned (first: {first.label}, "
                   f"by decision {first.burned_by.decision!r}); rule: a holdout_live set whose tasks are burned cannot "
                   f"be used for generalization until rotated (objective-score sets rotate {state.name})")  # fmt: skip
    elif not any(row.eligible for row in rows):
        refusal = (f"no task of {state.set_id} may count for generalization under the cutoff {parsed.text} "
                   "(none was created after it)")  # fmt: skip
    return GateResult(state.set_id, state.role, parsed.text, tuple(rows), refusal is None, refusal)


def require_generalization(state: SetState, cutoff: str | Cutoff) -> GateResult:
    """:func:`gate`, raising SetError when the set cannot give a generalization number."""
    result = gate(state, cutoff)
    if not result.usable:
        raise SetError(result.refusal)
    return result
