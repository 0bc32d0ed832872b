"""Benchmark sets and the contamination discipline (spec 3.4, 5.3; build phases 4 and 5).

Real ledgers in tmp_path, the bundled fixture dataset (created 2025-03-04, 2025-03-11 and
2025-03-18) and small datasets with chosen ``created_at`` values.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import sets
from pytest_objective_scoring.commands import sets as sets_commands
from pytest_objective_scoring.batch import instance_digest
from pytest_objective_scoring.instances import Instance, load_instances, parse_instance
from pytest_objective_scoring.ledger import Ledger, verify
from pytest_objective_scoring.sets import (
    GENERALIZATION_GRADE,
    ROLES,
    SET_FIELDS,
    BenchmarkSet,
    SetError,
    burn,
    classify_task,
    create_set,
    fold,
    gate,
    load_sets,
    parse_cutoff,
    require_generalization,
    resolve_set,
    rotate_set,
    set_status,
    task_id_of,
)

from .conftest import FIXTURES, ROOT
from .test_zero_learned import DENIED

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
TEXTSTATS, INTERVALS, CSVLITE = "fixtures__textstats-1", "fixtures__intervals-1", "fixtures__csvlite-1"
LIVE = "live:swe_bench_live"
T0 = 1_700_000_000


@pytest.fixture
def fx() -> dict[str, Instance]:
    """The fixture dataset's instances by id."""
    return {instance.instance_id: instance for instance in load_instances(DATASET)}


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "ledger.sqlite") as opened:
        yield opened


def task(instance_id: str, created_at: Any = "2025-06-01T00:00:00Z", **fields: Any) -> Instance:
    """A small instance with a chosen created_at (None leaves the field out)."""
    data = {"instance_id": instance_id, "FAIL_TO_PASS": ["tests/test_x.py::test_x"], "PASS_TO_PASS": [],
            "problem_statement": f"the problem of {instance_id}", **fields}  # each its own problem
    if created_at is not None:
        data["created_at"] = created_at
    return parse_instance(data, f"<{instance_id}>")


def write_dataset(path: Path, instances: list[Instance]) -> Path:
    path.write_text("".join(json.dumps(dict(i.fields)) + "\n" for i in instances), encoding="utf-8")
    return path


def refused(call: Any, *fragments: str) -> str:
    """Run ``call``, expect SetError, check every fragment is in the message, return it."""
    with pytest.raises(SetError) as caught:
        call()
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# ------------------------------------------------------------------------------------ the record


def test_the_record_has_exactly_the_specs_fields():
    assert [f.name for f in dataclasses.fields(BenchmarkSet)] == list(SET_FIELDS) == [
        "set_id", "role", "task_ids", "contamination_status", "refresh_source", "last_decision_use", "burned"]  # fmt: skip


def test_the_record_round_trips_and_refuses_extra_or_missing_fields():
    record = BenchmarkSet("hold@v2", "holdout_live", ("sha256:" + "a" * 64,), "unseen", "held_out:swe_bench_pro", None, False)
    assert BenchmarkSet.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.burned = True  # type: ignore[misc]
    refused(lambda: BenchmarkSet.from_dict({**record.to_dict(), "notes": "x"}), "unexpected notes")
    data = record.to_dict()
    del data["burned"]
    refused(lambda: BenchmarkSet.from_dict(data), "missing burned")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"set_id": "hold"}, "NAME@vN"),
        ({"set_id": "hold@v0"}, "NAME@vN"),
        ({"role": "holdout"}, "role must be one of"),
        ({"contamination_status": "fresh"}, "contamination_status must be one of"),
        ({"refresh_source": "rss:feed"}, "KIND:NAME"),
        ({"task_ids": ["fixtures__csvlite-1"]}, "not a content address"),
        ({"task_ids": ["sha256:" + "a" * 64] * 2}, "repeat a task"),
        ({"last_decision_use": -1}, "epoch"),
        ({"last_decision_use": True}, "epoch"),
        ({"burned": "yes"}, "boolean"),
    ],
    ids=["no-version", "version-0", "role", "status", "source", "task-id", "repeated", "negative-epoch",
         "bool-epoch", "burned-string"],
)  # fmt: skip
def test_the_record_refuses_values_outside_the_spec(change, fragment):
    data = {"set_id": "hold@v1", "role": "holdout_live", "task_ids": ["sha256:" + "a" * 64],
            "contamination_status": "unseen", "refresh_source": "held_out:x", "last_decision_use": None, "burned": False}  # fmt: skip
    refused(lambda: BenchmarkSet.from_dict({**data, **change}), fragment)


def test_task_ids_are_content_addresses_of_the_canonical_instance(fx):
    instance = fx[CSVLITE]
    assert task_id_of(instance) == "sha256:" + instance_digest(instance)
    reordered = parse_instance(dict(reversed(list(instance.fields.items()))), "elsewhere.json")
    assert task_id_of(reordered) == task_id_of(instance)  # the same task, whatever file it came from
    edited = parse_instance({**instance.fields, "hints_text": "changed"}, "edited.json")
    assert task_id_of(edited) != task_id_of(instance)


# ------------------------------------------------------------------------------------ the rules


CUT = parse_cutoff("2025-03-10")
BURN = sets.Use("promote v2", T0, 7, "dev@v1")


@pytest.mark.parametrize(
    ("source", "created_at", "cutoff", "burned_by", "expected"),
    [
        ("static:human_eval", "2030-01-01", CUT, None, ("known", "static_source")),
        ("static:human_eval", None, None, None, ("known", "static_source")),
        ("held_out:swe_bench_pro", "2020-01-01", CUT, None, ("unseen", "held_out_source")),
        ("held_out:swe_bench_pro", None, None, None, ("unseen", "held_out_source")),
        ("live:swe_bench_live", "2025-03-11T00:00:00Z", CUT, None, ("continuously_refreshed", "after_cutoff")),
        ("live:swe_bench_live", "2025-03-10T23:59:59Z", CUT, None, ("known", "before_cutoff")),
        ("live:swe_bench_live", "2025-03-10", CUT, None, ("known", "before_cutoff")),
        ("live:swe_bench_live", "2025-03-11", CUT, None, ("continuously_refreshed", "after_cutoff")),
        ("live:swe_bench_live", "2025-03-11T01:00:00+02:00", CUT, None, ("known", "before_cutoff")),
        ("live:swe_bench_live", "2025-03-11 00:00:01", CUT, None, ("continuously_refreshed", "after_cutoff")),
        ("timestamp_gated:live_code_bench", "2025-02-01T00:00:00Z", CUT, None, ("known", "before_cutoff")),
        ("timestamp_gated:live_code_bench", "2025-04-01T00:00:00Z", CUT, None, ("continuously_refreshed", "after_cutoff")),
        ("live:swe_bench_live", None, CUT, None, ("known", "no_created_at")),
        ("live:swe_bench_live", "", CUT, None, ("known", "no_created_at")),
        ("live:swe_bench_live", "last spring", CUT, None, ("known", "no_created_at")),
        ("live:swe_bench_live", 1_800_000_000, CUT, None, ("known", "no_created_at")),
        ("live:swe_bench_live", "2025-03-10T12:00:00Z", parse_cutoff("2025-03-10T12:00:00Z"), None, ("known", "before_cutoff")),
        ("live:swe_bench_live", "2025-03-10T12:00:01Z", parse_cutoff("2025-03-10T12:00:00Z"), None,
         ("continuously_refreshed", "after_cutoff")),
        ("held_out:swe_bench_pro", "2030-01-01", CUT, BURN, ("known", "burned")),
        ("live:swe_bench_live", "2030-01-01", CUT, BURN, ("known", "burned")),
    ],
    ids=["static", "static-no-date", "held-out", "held-out-no-cutoff", "live-after", "live-last-second-of-cutoff-day",
         "live-date-on-cutoff-day", "live-date-after", "live-offset-converted-to-utc", "live-naive-is-utc",
         "gated-before", "gated-after", "no-created-at", "empty-created-at", "unparseable", "epoch-number-not-read",
         "time-cutoff-equal", "time-cutoff-after", "burned-held-out", "burned-live"],
)  # fmt: skip
def test_a_tasks_status_comes_from_its_rule(source, created_at, cutoff, burned_by, expected):
    assert classify_task(source, created_at, cutoff, burned_by) == expected


def test_a_live_or_timestamp_gated_source_needs_the_cutoff_and_says_why():
    for source in ("live:swe_bench_live", "timestamp_gated:live_code_bench"):
        refused(lambda source=source: classify_task(source, "2025-04-01", None, None), "--cutoff DATE", "training cutoff")


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["known", "known"], "known"),
        (["unseen"], "unseen"),
        (["continuously_refreshed"] * 3, "continuously_refreshed"),
        (["unseen", "known"], "partially_known"),
        (["continuously_refreshed", "known", "continuously_refreshed"], "partially_known"),
        (["unseen", "continuously_refreshed"], "continuously_refreshed"),
    ],
    ids=["all-known", "all-unseen", "all-refreshed", "unseen+known", "refreshed+known", "unseen+refreshed"],
)  # fmt: skip
def test_a_sets_status_comes_from_its_tasks(statuses, expected):
    assert set_status(statuses) == expected


def test_parsing_sources_and_cutoffs_refuses_what_it_cannot_read():
    assert sets.parse_source("timestamp_gated:live_code_bench") == ("timestamp_gated", "live_code_bench")
    for bad in ("swe_bench_live", "rss:feed", "live:", ":x", "live: x"):
        refused(lambda bad=bad: sets.parse_source(bad), "KIND:NAME")
    for bad in ("yesterday", "2025-13-01", "", "03/10/2025"):
        refused(lambda bad=bad: parse_cutoff(bad), "ISO 8601")
    assert parse_cutoff("2025-03-10T14:00:00+02:00").text == "2025-03-10T12:00:00Z"


def test_no_function_or_command_takes_a_status():
    for function in (create_set, rotate_set, burn, gate):
        assert not {"status", "contamination_status"} & set(inspect.signature(function).parameters)
    parser = _parser()
    for action in ("create", "rotate"):
        with pytest.raises(SystemExit):
            parser.parse_args(["sets", action, "x", "--dataset", "d.jsonl", "--role", "holdout_live",
                               "--source", "held_out:x", "--status", "unseen"])  # fmt: skip


# ------------------------------------------------------------------------ phase 4: the three sets


def test_phase4_three_roles_never_conflated_and_a_burned_task_is_never_unseen_again(ledger, fx):
    dev = create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:fixtures")
    reg = create_set(ledger, "regression", "regression", [fx[INTERVALS]], "static:fixtures")
    hold = create_set(ledger, "holdout", "holdout_live", [fx[CSVLITE]], LIVE, cutoff="2025-03-10")
    states = load_sets(ledger)
    assert {s.role for s in states.values()} == set(ROLES) and len(states) == 3
    # never conflated: every task sits in exactly one role
    owners: dict[str, set[str]] = {}
    for state in states.values():
        for task_id in state.record.task_ids:
            owners.setdefault(task_id, set()).add(state.role)
    assert all(len(roles) == 1 for roles in owners.values()) and len(owners) == 3
    assert [t.status for t in hold.tasks] == ["continuously_refreshed"]
    assert hold.record.contamination_status in GENERALIZATION_GRADE
    assert dev.record.contamination_status == reg.record.contamination_status == "known"
    assert dev.record.burned is False and dev.record.last_decision_use is None

    # the development task is used in a decision: burned at that moment
    assert burn(ledger, "dev", "adopt retrieval v3", when=T0) == [task_id_of(fx[TEXTSTATS])]
    dev = resolve_set(ledger, "dev")
    assert dev.record.burned is True and dev.record.last_decision_use == T0
    assert dev.tasks[0].burned_by is not None and dev.tasks[0].burned_by.decision == "adopt retrieval v3"

    # it can never be reclassified unseen: a held-out holdout refuses it, naming the task and the rule
    message = refused(lambda: create_set(ledger, "fresh", "holdout_live", [fx[TEXTSTATS]], "held_out:swe_bench_pro"),
                      TEXTSTATS, task_id_of(fx[TEXTSTATS]), "fresh@v1", "adopt retrieval v3",
                      "a holdout_live set only holds unseen or continuously_refreshed tasks")  # fmt: skip
    assert "its status is known" in message
    # even in a set whose source would make it unseen, the burn wins
    again = create_set(ledger, "dev-heldout", "development", [fx[TEXTSTATS]], "held_out:swe_bench_pro")
    assert again.tasks[0].status == "known" and again.tasks[0].rule == "burned"
    assert again.record.burned is True and again.record.last_decision_use == T0
    assert verify(ledger.path).ok


def test_a_holdout_live_set_only_holds_unseen_or_continuously_refreshed_tasks(ledger, fx):
    refused(lambda: create_set(ledger, "h", "holdout_live", list(fx.values()), "static:human_eval"),
            TEXTSTATS, "h@v1", "static source static:human_eval", "(and 2 more task(s) like it)")  # fmt: skip
    refused(lambda: create_set(ledger, "h", "holdout_live", list(fx.values()), LIVE, cutoff="2025-03-11"),
            TEXTSTATS, "created 2025-03-04T10:00:00Z, on or before the cutoff 2025-03-11", "(and 1 more")  # fmt: skip
    refused(lambda: create_set(ledger, "h", "holdout_live", [task("a", None)], LIVE, cutoff="2025-03-11"),
            "a (sha256:", "no created_at: it cannot be shown to postdate the cutoff 2025-03-11")  # fmt: skip
    assert len(ledger) == 0  # a refused operation writes nothing
    ok = create_set(ledger, "h", "holdout_live", [fx[CSVLITE]], LIVE, cutoff="2025-03-11")
    assert ok.record.contamination_status == "continuously_refreshed"


def test_one_task_never_sits_in_two_roles_at_once(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS], fx[INTERVALS]], "static:fixtures")
    refused(lambda: create_set(ledger, "reg", "regression", [fx[CSVLITE], fx[INTERVALS]], "static:fixtures"),
            INTERVALS, task_id_of(fx[INTERVALS]), "already in development set dev@v1",
            "one task never sits in two roles at once", "regression set reg@v1")  # fmt: skip
    # an edited copy of the same instance is still the same problem
    edited = parse_instance({**fx[INTERVALS].fields, "hints_text": "reworded"}, "edited.json")
    refused(lambda: create_set(ledger, "reg", "regression", [edited], "static:fixtures"),
            f"already in development set dev@v1 (its instance, as task {task_id_of(fx[INTERVALS])})")  # fmt: skip
    # the same role twice is not two roles
    also = create_set(ledger, "dev-small", "development", [fx[TEXTSTATS]], "static:fixtures")
    assert also.record.task_ids == (task_id_of(fx[TEXTSTATS]),)


def test_burns_are_per_task_everywhere_and_forever(ledger, fx):
    create_set(ledger, "dev-a", "development", [fx[TEXTSTATS], fx[INTERVALS]], "static:fixtures")
    create_set(ledger, "dev-b", "development", [fx[INTERVALS]], "static:fixtures")
    assert burn(ledger, "dev-a", "decision one", [INTERVALS], when=T0) == [task_id_of(fx[INTERVALS])]
    states = load_sets(ledger)
    assert states["dev-b"].record.burned is True and states["dev-b"].record.last_decision_use == T0
    assert states["dev-a"].record.burned is True  # any of its tasks
    assert [t.burned_by is not None for t in states["dev-a"].tasks] == [False, True]
    # an already burned task: nothing newly burned, but the decision's use is recorded
    before = len(ledger)
    assert burn(ledger, "dev-b", "decision two", when=T0 + 60) == []
    assert len(ledger) == before + 1
    later = resolve_set(ledger, "dev-a")
    assert later.record.last_decision_use == T0 + 60
    burned_task = later.tasks[1]
    assert burned_task.burned_by is not None and burned_task.burned_by.decision == "decision one"  # the first burn stands
    assert [u.decision for u in burned_task.uses] == ["decision one", "decision two"]
    # a burned instance with an edited field is still burned
    edited = parse_instance({**fx[INTERVALS].fields, "problem_statement": "same bug, new words"}, "edited.json")
    refused(lambda: create_set(ledger, "h", "holdout_live", [edited], "held_out:x"), "decision one",
            "only holds unseen or continuously_refreshed")  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"decision": "  "}, ["names its decision"]),
        ({"decision": "d", "task_ids": [CSVLITE]}, [f"task '{CSVLITE}' is not in dev@v1"]),
        ({"decision": "d", "task_ids": ["fixtures__textstat-1"]}, ["did you mean 'fixtures__textstats-1'"]),
        ({"decision": "d", "task_ids": []}, ["no task given"]),
        ({"decision": "d", "task_ids": [TEXTSTATS, TEXTSTATS]}, ["given twice"]),
        ({"decision": "d", "when": -5}, ["epoch"]),
        ({"decision": "d", "when": True}, ["epoch"]),
        ({"decision": "d", "set_name": "deb"}, ["no benchmark set 'deb'", "did you mean 'dev'"]),
    ],
    ids=["empty-decision", "task-of-another-set", "close-match", "empty-list", "twice", "negative-time",
         "bool-time", "unknown-set"],
)  # fmt: skip
def test_burn_refusals(ledger, fx, kwargs, fragments):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:fixtures")
    create_set(ledger, "other", "development", [fx[CSVLITE]], "static:fixtures")
    name = kwargs.pop("set_name", "dev")
    refused(lambda: burn(ledger, name, **kwargs), *fragments)
    assert len(ledger) == 2


def test_create_refusals(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:fixtures")
    refused(lambda: create_set(ledger, "dev", "development", [fx[INTERVALS]], "static:fixtures"),
            "set 'dev' exists (dev@v1", "names are unique")  # fmt: skip
    for bad in ("dev@v2", "my set", "", "-x", "a/b"):
        refused(lambda bad=bad: create_set(ledger, bad, "development", [fx[INTERVALS]], "static:fixtures"), "set name")
    refused(lambda: create_set(ledger, "x", "development", [], "static:fixtures"), "at least one task")
    refused(lambda: create_set(ledger, "x", "holdout", [fx[INTERVALS]], "static:fixtures"), "role 'holdout'")
    refused(lambda: create_set(ledger, "x", "development", [fx[INTERVALS]], "feed"), "KIND:NAME")
    refused(lambda: create_set(ledger, "x", "development", [fx[INTERVALS]], LIVE), "--cutoff DATE is required",
            "created after the model's training cutoff")  # fmt: skip
    refused(lambda: create_set(ledger, "x", "development", [fx[INTERVALS], fx[INTERVALS]], "static:fixtures"),
            "listed twice")  # fmt: skip
    assert len(ledger) == 1


def test_names_and_versions_resolve_or_are_refused_with_the_known_names(ledger, fx):
    refused(lambda: resolve_set(ledger, "dev"), "no benchmark set 'dev'", "none yet")
    create_set(ledger, "holdout", "holdout_live", [fx[CSVLITE]], LIVE, cutoff="2025-03-10")
    assert resolve_set(ledger, "holdout").set_id == resolve_set(ledger, "holdout@v1").set_id == "holdout@v1"
    refused(lambda: resolve_set(ledger, "holdot"), "did you mean 'holdout'", "(sets: holdout)")
    refused(lambda: resolve_set(ledger, "holdout@v2"), "no such version; holdout has v1..v1")
    refused(lambda: resolve_set(ledger, "holdout@2"), "expected NAME")


# ------------------------------------------------------------- phase 5: the contamination discipline


def test_phase5_gate_by_cutoff_and_rotate_a_held_out_task_after_a_decision(ledger, fx):
    hold = create_set(ledger, "holdout", "holdout_live", list(fx.values()), LIVE, cutoff="2025-03-01")
    assert hold.record.contamination_status == "continuously_refreshed"
    # only tasks created after the cutoff may count for generalization
    result = gate(hold, "2025-03-10")
    assert result.usable and result.cutoff == "2025-03-10"
    assert result.eligible == [task_id_of(fx[INTERVALS]), task_id_of(fx[CSVLITE])]
    assert result.excluded == {task_id_of(fx[TEXTSTATS]): ("before_cutoff",)}
    assert gate(hold, "2025-03-11").eligible == [task_id_of(fx[CSVLITE])]  # created on the cutoff day: not after
    assert gate(hold, "2025-03-11T14:29:59Z").eligible == [task_id_of(fx[INTERVALS]), task_id_of(fx[CSVLITE])]
    assert gate(hold, "2025-03-18T09:15:00Z").usable is False

    # a decision consumes the generalization tasks: they are burned, the set is unusable until rotated
    used = [task_id_of(fx[INTERVALS]), task_id_of(fx[CSVLITE])]
    assert burn(ledger, "holdout", "promote localization v2", used, when=T0) == used
    burned = resolve_set(ledger, "holdout")
    assert burned.record.burned and burned.record.contamination_status == "partially_known"
    message = refused(lambda: require_generalization(burned, "2025-03-10"), "2 of 3 task(s) of holdout@v1 are burned",
                      "cannot be used for generalization until rotated")  # fmt: skip
    assert INTERVALS in message

    fresh = task("live__fresh-1", "2025-05-01T00:00:00Z")
    rotated = rotate_set(ledger, "holdout", add=[fresh])
    assert rotated.set_id == "holdout@v2" and rotated.current
    assert rotated.record.task_ids == (task_id_of(fx[TEXTSTATS]), task_id_of(fresh))  # the retired tasks are gone
    assert {r["instance_id"]: r["rule"] for r in rotated.retired} == {INTERVALS: "burned", CSVLITE: "burned"}
    assert rotated.record.burned is False and rotated.record.last_decision_use is None
    after = require_generalization(rotated, "2025-03-10")
    assert after.eligible == [task_id_of(fresh)]
    # the old version stays readable, retired, and never usable again
    old = resolve_set(ledger, "holdout@v1")
    assert not old.current and old.latest_version == 2 and old.record.burned
    assert "retired" in str(gate(old, "2025-03-10").refusal)
    assert verify(ledger.path).ok


def test_status_is_structural_a_hand_written_status_is_refused_when_the_ledger_is_read(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:human_eval")
    entry = next(ledger.entries("set")).data
    forged = {**entry, "name": "forged", "set_id": "forged@v1",
              "tasks": [{**entry["tasks"][0], "status": "unseen", "rule": "held_out_source"}], "record": None}  # fmt: skip
    ledger.append("set", forged)
    refused(lambda: load_sets(ledger), "ledger entry 2", "recorded as unseen", "the rule gives known",
            "a status is assigned by rule, never typed in")  # fmt: skip


def test_a_hand_written_holdout_of_known_tasks_is_refused_when_the_ledger_is_read(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:human_eval")
    entry = next(ledger.entries("set")).data
    ledger.append("set", {**entry, "name": "forged", "set_id": "forged@v1", "role": "holdout_live", "record": None})
    refused(lambda: load_sets(ledger), "ledger entry 2 is refused", TEXTSTATS, "only holds unseen")


def test_a_stored_record_that_contradicts_the_rules_is_refused(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:human_eval")
    entry = next(ledger.entries("set")).data
    ledger.append("set", {**entry, "name": "b", "set_id": "b@v1",
                          "record": {**entry["record"], "set_id": "b@v1", "contamination_status": "unseen"}})  # fmt: skip
    refused(lambda: load_sets(ledger), "ledger entry 2", "contradicts the rules", "contamination_status")


@pytest.mark.parametrize(
    "body",
    [
        {"event": "delete", "name": "dev"},
        {"event": "burn", "name": "dev", "set_id": "dev@v1", "decision": "d", "when": T0, "task_ids": [],
         "newly_burned": []},
        {"event": "burn", "name": "dev", "set_id": "dev@v1", "decision": "d", "when": T0},
        {"event": "rotate", "name": "dev", "set_id": "dev@v2", "from": "dev@v1", "retired": [], "added": [],
         "tasks": "none"},
    ],
    ids=["unknown-event", "burn-nothing", "burn-without-tasks", "malformed-rotate"],
)  # fmt: skip
def test_a_malformed_set_entry_is_refused_naming_it(ledger, fx, body):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:human_eval")
    ledger.append("set", body)
    refused(lambda: load_sets(ledger), "ledger entry 2")


def test_a_rotation_entry_must_retire_exactly_what_the_rules_retire(ledger, fx):
    create_set(ledger, "h", "holdout_live", [fx[INTERVALS], fx[CSVLITE]], LIVE, cutoff="2025-03-10")
    first = next(ledger.entries("set")).data
    keep = [t for t in first["tasks"] if t["instance_id"] == CSVLITE]
    ledger.append("set", {"event": "rotate", "name": "h", "set_id": "h@v2", "from": "h@v1", "cutoff": "2025-03-10",
                          "retired": [{"task_id": first["tasks"][0]["task_id"], "instance_id": INTERVALS}],
                          "added": [], "tasks": keep})  # fmt: skip
    refused(lambda: load_sets(ledger), "retires task fixtures__intervals-1", "continuously_refreshed")


def test_a_dataset_with_chosen_dates_is_gated_task_by_task(ledger):
    rows = [task("t-early", "2024-12-31T23:59:59Z"), task("t-late", "2025-01-01T00:00:01+00:00"),
            task("t-nodate", None), task("t-garbled", "31/12/2024")]  # fmt: skip
    state = create_set(ledger, "dev", "development", rows, "timestamp_gated:live_code_bench", cutoff="2024-06-30")
    assert [t.status for t in state.tasks] == ["continuously_refreshed", "continuously_refreshed", "known", "known"]
    assert state.record.contamination_status == "partially_known"
    result = gate(state, "2024-12-31")
    reasons = {t.instance_id: t.reasons for t in result.tasks}
    assert reasons == {"t-early": ("role", "before_cutoff"), "t-late": ("role",),
                       "t-nodate": ("role", "no_created_at"), "t-garbled": ("role", "no_created_at")}  # fmt: skip
    assert result.usable is False and "only a holdout_live set's number may be called generalization" in str(result.refusal)
    assert "created_at '31/12/2024' is not read (not an ISO 8601 date or time)" in " ".join(result.tasks[3].why)


def test_a_held_out_task_is_eligible_whatever_its_date_and_a_static_one_never(ledger):
    held = create_set(ledger, "pro", "holdout_live", [task("p-1", "2001-01-01"), task("p-2", None)], "held_out:swe_bench_pro")
    assert held.record.contamination_status == "unseen"
    assert len(gate(held, "2025-01-01").eligible) == 2
    static = create_set(ledger, "he", "regression", [task("s-1", "2025-06-01")], "static:human_eval")
    assert gate(static, "2025-01-01").excluded == {task_id_of(task("s-1", "2025-06-01")): ("role", "static_source")}


def test_rotation_rules_and_refusals(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:fixtures")
    create_set(ledger, "h", "holdout_live", [fx[INTERVALS], fx[CSVLITE]], LIVE, cutoff="2025-03-10")
    refused(lambda: rotate_set(ledger, "dev"), "dev@v1 is a development set", "create a new set")
    refused(lambda: rotate_set(ledger, "h"), "nothing to rotate in h@v1")
    refused(lambda: rotate_set(ledger, "h", add=[fx[CSVLITE]]), "already in h@v1", "fresh tasks")
    refused(lambda: rotate_set(ledger, "h", add=[fx[TEXTSTATS]]), TEXTSTATS, "on or before the cutoff",
            "only holds unseen or continuously_refreshed")  # fmt: skip
    refused(lambda: rotate_set(ledger, "h", add=[task("new-1", "2025-02-01")]), "new-1", "on or before the cutoff 2025-03-10")
    burn(ledger, "h", "decision", when=T0)
    refused(lambda: rotate_set(ledger, "h"), "retire all of its 2 task(s)", "--add")
    # a later cutoff (a newer model) retires what it may have seen, with the reason
    v2 = rotate_set(ledger, "h", add=[task("new-2", "2025-04-01"), task("new-3", "2025-05-01")])
    v3 = rotate_set(ledger, "h", cutoff="2025-04-15")
    assert [t.instance_id for t in v3.tasks] == ["new-3"] and v3.cutoff == "2025-04-15"
    assert [(r["instance_id"], r["rule"]) for r in v3.retired] == [("new-2", "before_cutoff")]
    refused(lambda: rotate_set(ledger, "h@v2"), "h@v2 is retired", "current version is h@v3")
    refused(lambda: burn(ledger, "h@v2", "late"), "h@v2 is retired")
    assert v2.version == 2
    # a retired, burned task is no longer active: it may become development data, known
    reused = create_set(ledger, "dev2", "development", [fx[INTERVALS]], LIVE, cutoff="2025-03-10")
    assert reused.tasks[0].status == "known" and reused.tasks[0].rule == "burned"
    # but a task of an active holdout still cannot
    refused(lambda: create_set(ledger, "dev3", "development", [task("new-3", "2025-05-01")], "static:x"),
            "already in holdout_live set h@v3")  # fmt: skip


def test_the_state_is_a_pure_fold_over_the_set_events(ledger, fx):
    create_set(ledger, "dev", "development", [fx[TEXTSTATS]], "static:fixtures")
    create_set(ledger, "h", "holdout_live", [fx[CSVLITE]], LIVE, cutoff="2025-03-10")
    burn(ledger, "h", "d", when=T0)
    rotate_set(ledger, "h", add=[task("n-1")])
    ledger.append("score", {"not": "a set entry"})  # other kinds are not the fold's
    entries = list(ledger.entries())
    bodies = [e.data for e in entries if e.kind == "set"]
    by_entries, by_bodies = fold(entries), fold(bodies)
    assert {k: v.record for k, v in by_entries.items()} == {k: v.record for k, v in by_bodies.items()}
    assert {k: v.record for k, v in load_sets(ledger).items()} == {k: v.record for k, v in by_entries.items()}
    assert fold(bodies[:2])["h"].record.burned is False  # the state at any point is the fold of its prefix
    assert fold([]) == {}
    kinds = [e.data["event"] for e in ledger.entries("set")]
    assert kinds == ["create", "create", "burn", "rotate"]
    assert all(e.data["record"]["set_id"] == e.data["set_id"] for e in ledger.entries("set"))


def test_two_writers_cannot_both_take_a_name(tmp_path, fx):
    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def create(index: int) -> None:
        with Ledger(path) as mine:
            barrier.wait()
            try:
                create_set(mine, "shared", "development", [fx[TEXTSTATS]], "static:fixtures", dataset=str(index))
                outcomes.append("created")
            except SetError:
                outcomes.append("refused")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["created", "refused", "refused", "refused"]
    with Ledger(path) as check:
        assert len(list(check.entries("set"))) == 1
    assert verify(path).ok


# ----------------------------------------------------------- the commands, in process and as run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="objective-score")
    sub = parser.add_subparsers(dest="command", required=True)
    sets_commands.register(sub)
    return parser


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``objective-score ARGV`` in this process, as cli.main maps SetError (exit 2)."""
    args = _parser().parse_args(list(argv))
    try:
        code = args.handler(args)
    except SetError as exc:
        print(f"objective-score {args.command}: error: {exc}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


def test_commands_in_process_with_json_everywhere(tmp_path, capsys):
    led = ["--ledger", str(tmp_path / "l.sqlite")]
    code, out, err = run(capsys, "sets", "list", *led, "--json")
    assert code == 2 and "no such ledger" in err  # a misspelt path is never an empty listing
    assert json.loads(out) == {"error": err.strip().removeprefix("objective-score sets: error: "), "exit": 2}
    assert not (tmp_path / "l.sqlite").exists()  # reading creates no ledger
    code, out, _ = run(capsys, "sets", "create", "h", "--role", "holdout_live", "--source", LIVE, "--cutoff", "2025-03-10",
                       "--dataset", str(DATASET), "--instance-id", INTERVALS, "--instance-id", CSVLITE, *led, "--json")  # fmt: skip
    created = json.loads(out)
    assert code == 0 and created["record"]["set_id"] == "h@v1"
    assert [t["instance_id"] for t in created["details"]["tasks"]] == [INTERVALS, CSVLITE]
    code, out, _ = run(capsys, "sets", "list", *led, "--json")
    assert (code, [row["set_id"] for row in json.loads(out)]) == (0, ["h@v1"])
    code, out, _ = run(capsys, "sets", "show", "h@v1", *led, "--json")
    assert json.loads(out)["record"] == created["record"]
    code, out, _ = run(capsys, "sets", "gate", "h", "--cutoff", "2025-03-11", *led, "--json")
    assert code == 0 and json.loads(out)["eligible"] == [created["record"]["task_ids"][1]]
    code, out, _ = run(capsys, "sets", "burn", "h", "--decision", "ship", "--task", CSVLITE, "--when", "2025-06-01T00:00:00Z",
                       *led, "--json")  # fmt: skip
    burned = json.loads(out)
    assert code == 0 and burned["newly_burned"] == [created["record"]["task_ids"][1]] and burned["already_burned"] == []
    assert burned["record"]["last_decision_use"] == 1748736000
    code, out, _ = run(capsys, "sets", "gate", "h", "--cutoff", "2025-03-10", *led, "--json")
    assert code == 1 and json.loads(out)["usable"] is False
    fresh = write_dataset(tmp_path / "fresh.jsonl", [task("f-1", "2025-07-01")])
    code, out, _ = run(capsys, "sets", "rotate", "h", "--dataset", str(fresh), "--add", "f-1", *led, "--json")
    assert code == 0 and json.loads(out)["record"]["set_id"] == "h@v2"
    code, out, _ = run(capsys, "sets", "list", *led, "--json")
    assert [(r["set_id"], r["versions"], r["task_count"]) for r in json.loads(out)] == [("h@v2", 2, 2)]
    assert verify(tmp_path / "l.sqlite").ok


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["sets", "show", "nope"], "no ledger at"),
        (["sets", "create", "x", "--role", "development", "--source", "static:x", "--dataset", "missing.jsonl"],
         "--dataset missing.jsonl: no such file"),
        (["sets", "create", "x", "--role", "development", "--source", "static:x", "--dataset", str(DATASET),
          "--instance-id", "fixtures__csvlit-1"], "did you mean 'fixtures__csvlite-1'"),
        (["sets", "create", "x", "--role", "development", "--source", "static:x", "--dataset", str(DATASET),
          "--instance-id", CSVLITE, CSVLITE], "given twice"),
        (["sets", "create", "x", "--role", "holdout_live", "--source", LIVE, "--dataset", str(DATASET)],
         "--cutoff DATE is required"),
        (["sets", "rotate", "nope", "--add", "a"], "no ledger at"),
    ],
    ids=["show-no-ledger", "missing-dataset", "unknown-instance", "twice", "live-without-cutoff", "rotate-no-ledger"],
)  # fmt: skip
def test_command_refusals_exit_2_with_the_reason(tmp_path, capsys, argv, fragment):
    code, _, err = run(capsys, *argv, "--ledger", str(tmp_path / "l.sqlite"))
    assert code == 2 and err.startswith("objective-score sets: error: ") and fragment in err, err


def test_command_argument_types_refuse_bad_values(capsys):
    for argv in (["sets", "gate", "x", "--cutoff", "soon"], ["sets", "create", "x", "--role", "holdout",
                 "--source", "static:x", "--dataset", "d"], ["sets", "create", "x", "--role", "development",
                 "--source", "feed", "--dataset", "d"], ["sets", "burn", "x", "--decision", "d", "--when", "later"]):  # fmt: skip
        with pytest.raises(SystemExit) as caught:
            _parser().parse_args(argv)
        assert caught.value.code == 2
    assert "ISO 8601" in capsys.readouterr().err


def test_rotate_add_needs_a_dataset_and_gate_out_writes_the_eligible_instances(tmp_path, capsys, fx):
    led = ["--ledger", str(tmp_path / "l.sqlite")]
    run(capsys, "sets", "create", "h", "--role", "holdout_live", "--source", LIVE, "--cutoff", "2025-03-01",
        "--dataset", str(DATASET), *led)  # fmt: skip
    code, _, err = run(capsys, "sets", "rotate", "h", "--add", "x", *led)
    assert code == 2 and "--add needs --dataset" in err
    code, _, err = run(capsys, "sets", "gate", "h", "--cutoff", "2025-03-10", "--out", str(tmp_path / "o.jsonl"), *led)
    assert code == 2 and "--out needs --dataset" in err
    out = tmp_path / "eligible.jsonl"
    code, text, _ = run(capsys, "sets", "gate", "h", "--cutoff", "2025-03-10", "--dataset", str(DATASET), "--out", str(out), *led)
    assert code == 0 and "2 of 3 task(s) may count for generalization" in text
    assert [i.instance_id for i in load_instances(out)] == [INTERVALS, CSVLITE]
    assert [task_id_of(i) for i in load_instances(out)] == [task_id_of(fx[INTERVALS]), task_id_of(fx[CSVLITE])]
    changed = write_dataset(tmp_path / "changed.jsonl", [parse_instance({**i.fields, "version": "9"}, "x") for i in fx.values()])
    code, _, err = run(capsys, "sets", "gate", "h", "--cutoff", "2025-03-10", "--dataset", str(changed), *led)
    assert code == 2 and "is there with other content" in err and "a changed instance is a different task" in err


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_objective_scoring", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120, check=False)  # fmt: skip


def test_the_cli_end_to_end(tmp_path):
    """As a user runs it: the default ledger in the current folder, tables, exit statuses."""
    help_text = cli("sets", "--help", cwd=tmp_path).stdout
    for fragment in ("create", "rotate", "gate", "assigned by rule; no option sets it", "holdout_live",
                     "partially_known", "two roles at once"):  # fmt: skip
        assert fragment in help_text, fragment
    create_help = cli("sets", "create", "--help", cwd=tmp_path).stdout
    assert "--status" not in create_help and "--cutoff DATE" in create_help
    done = cli("sets", "create", "dev", "--role", "development", "--source", "static:fixtures", "--dataset", str(DATASET),
               "--instance-id", TEXTSTATS, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "BenchmarkSet dev@v1" in done.stdout and "static source static:fixtures" in done.stdout
    assert (tmp_path / ".objective-scoring" / "ledger.sqlite").exists()
    done = cli("sets", "create", "h", "--role", "holdout_live", "--source", LIVE, "--cutoff", "2025-03-10",
               "--dataset", str(DATASET), "--instance-id", INTERVALS, CSVLITE, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = cli("sets", "create", "reg", "--role", "regression", "--source", "static:fixtures", "--dataset", str(DATASET),
               "--instance-id", INTERVALS, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("objective-score sets: error: task fixtures__intervals-1 (sha256:")
    assert "already in holdout_live set h@v1" in done.stderr and "two roles at once" in done.stderr
    listed = cli("sets", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "dev@v1" in listed.stdout and "h@v1" in listed.stdout
    gated = cli("sets", "gate", "h", "--cutoff", "2025-03-11", cwd=tmp_path)
    assert gated.returncode == 0 and "1 of 2 task(s) may count for generalization" in gated.stdout
    burned = cli("sets", "burn", "h", "--decision", "promote v2", cwd=tmp_path)
    assert burned.returncode == 0 and "2 newly burned" in burned.stdout and "until rotated" in burned.stdout
    gated = cli("sets", "gate", "h", "--cutoff", "2025-03-11", cwd=tmp_path)
    assert gated.returncode == 1 and "not usable for generalization" in gated.stdout
    rotated = cli("sets", "rotate", "h", cwd=tmp_path)
    assert rotated.returncode == 2 and "leave it empty" in rotated.stderr
    shown = cli("sets", "show", "h", "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["record"]["burned"] is True
    checked = cli("ledger", "verify", "--json", cwd=tmp_path)
    assert checked.returncode == 0 and json.loads(checked.stdout)["rows"] == 3


# ------------------------------------------------------------------------------ zero learned entries


SCRIPT = """
import argparse, importlib.abc, json, sys
denied = set(json.loads(sys.argv[1]))
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in denied or name.split(".")[0] in denied:
            raise ImportError(f"the sets tried to import {name}")
        return None
sys.meta_path.insert(0, Refuse())
from pytest_objective_scoring.commands import sets as sets_commands
parser = argparse.ArgumentParser(prog="objective-score")
sets_commands.register(parser.add_subparsers(dest="command"))
codes = []
for argv in json.loads(sys.argv[2]):
    args = parser.parse_args(argv)
    codes.append(args.handler(args))
print(json.dumps({"codes": codes, "imported": sorted(m for m in sys.modules if m.split(".")[0] in denied)}))
"""


def test_no_network_or_model_client_is_imported_or_needed(tmp_path):
    for path in (ROOT / "pytest_objective_scoring" / "sets.py", ROOT / "pytest_objective_scoring" / "commands" / "sets.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        assert not {n for n in names if n in DENIED or n.split(".")[0] in DENIED}, path
        assert "pytest" not in {n.split(".")[0] for n in names}, path
    led = ["--ledger", str(tmp_path / "l.sqlite"), "--json"]
    argvs = [["sets", "create", "h", "--role", "holdout_live", "--source", LIVE, "--cutoff", "2025-03-01",
              "--dataset", str(DATASET), *led], ["sets", "gate", "h", "--cutoff", "2025-03-10", *led],
             ["sets", "burn", "h", "--decision", "d", *led], ["sets", "list", *led]]  # fmt: skip
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(sorted(DENIED)), json.dumps(argvs)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"codes": [0, 0, 0, 0], "imported": []}


def test_a_burned_task_renamed_is_still_burned(ledger, fx):
    create_set(ledger, "dev", "development", [fx[CSVLITE]], "static:fixtures")
    burn(ledger, "dev", "decision one", when=T0)
    renamed = parse_instance({**fx[CSVLITE].fields, "instance_id": "fixtures__csvlite-1-copy",
                              "created_at": "2025-09-01T00:00:00Z"}, "<renamed copy>")  # fmt: skip
    assert task_id_of(renamed) != task_id_of(fx[CSVLITE])
    refused(lambda: create_set(ledger, "fresh", "holdout_live", [renamed], "held_out:private"),
            "fixtures__csvlite-1-copy", "holdout_live")  # fmt: skip
    create_set(ledger, "reg", "regression", [renamed], "static:fixtures")
    [state] = resolve_set(ledger, "reg").tasks
    assert state.burned_by is not None and state.burned_by.decision == "decision one"


def test_a_rotation_never_lowers_the_cutoff(ledger):
    fresh = task("fresh-1", "2025-06-01T00:00:00Z")
    create_set(ledger, "hold", "holdout_live", [fresh], "timestamp_gated:fixtures", cutoff="2025-05-01")
    older = task("older-1", "2025-01-15T00:00:00Z")
    refused(lambda: rotate_set(ledger, "hold", add=[older], cutoff="2020-01-01"),
            "--cutoff 2020-01-01 is earlier than the set's cutoff 2025-05-01", "never lowers the cutoff")


# ---------------------------------------------- dates (issue 15.6): one meaning per spelling, none in the future

DAY_SPELLINGS = ["2025-03-11", "20250311", "2025-W11-2", "2025W112", "2025-070"]


@pytest.mark.parametrize("spelling", DAY_SPELLINGS, ids=["extended", "basic", "week", "basic-week", "ordinal"])
def test_every_spelling_of_a_date_cutoff_covers_the_whole_day(spelling):
    cutoff = parse_cutoff(spelling)
    assert cutoff.text == "2025-03-11"
    assert cutoff == parse_cutoff("2025-03-11")  # the same end of day, whatever the spelling
    assert classify_task(LIVE, "2025-03-11T14:30:00Z", cutoff, None) == ("known", "before_cutoff")
    assert classify_task(LIVE, "2025-03-11T23:59:59.999999Z", cutoff, None) == ("known", "before_cutoff")
    assert classify_task(LIVE, "2025-03-12T00:00:00Z", cutoff, None) == ("continuously_refreshed", "after_cutoff")


@pytest.mark.parametrize("spelling", DAY_SPELLINGS, ids=["extended", "basic", "week", "basic-week", "ordinal"])
def test_every_spelling_of_a_created_at_date_is_that_day(spelling):
    assert classify_task(LIVE, spelling, parse_cutoff("2025-03-10"), None) == ("continuously_refreshed", "after_cutoff")
    assert classify_task(LIVE, spelling, parse_cutoff("2025-03-11"), None) == ("known", "before_cutoff")  # on the day


@pytest.mark.parametrize(
    "spelling",
    ["2025-03-11T12:00:00Z", "2025-03-11t12:00:00z", "2025-03-11 12:00:00", "2025-03-11T12:00", "2025-03-11T14:00:00+02:00",
     "2025-03-11T14:00:00+0200", "2025-03-11T14:00+02", "2025-03-11T07:00:00-05:00", "20250311T120000Z",
     "2025-W11-2T12:00:00Z", "2025-070T12:00Z", "2025-03-11T12:00:00-00:00"],
    ids=["z", "lowercase", "space-no-offset-is-utc", "no-seconds", "offset", "basic-offset", "hour-offset",
         "negative-offset", "basic", "week", "ordinal", "minus-zero"],
)  # fmt: skip
def test_every_spelling_of_a_time_is_that_instant(spelling):
    assert sets.read_instant(spelling) == (sets.read_instant("2025-03-11T12:00:00Z")[0], False)
    assert parse_cutoff(spelling).text == "2025-03-11T12:00:00Z"


@pytest.mark.parametrize(
    ("spelling", "reason"),
    [
        ("2025-W11", "a week, not a day"),
        ("2025-03", "a month, not a day"),
        ("2025", "a year, not a day"),
        ("2025070", "ambiguous: seven digits may be a basic ordinal date"),
        ("250311", "ambiguous: six digits"),
        ("2025-03-11T12", "an hour without minutes"),
        ("2025-03-11Z", "a date with an offset but no time"),
        ("2025-03-11+02:00", "a date with an offset but no time"),
        ("2025-03-11T24:00:00Z", "hour 24 does not exist"),
        ("2025-03-11T12:00:60Z", "second 60 does not exist (a leap second is not read)"),
        ("2025-03-11T12:00:00+24:00", "offset +24:00 does not exist"),
        ("2025-02-30", "no such day"),
        ("2025-366", "no such day (2025 has no day 366)"),
        ("2025-W53-1", "no such day"),
        ("2025-03-11T12:00:00 UTC", "not an ISO 8601 date or time"),
    ],
    ids=["week", "month", "year", "basic-ordinal", "six-digits", "hour-alone", "date-with-z", "date-with-offset",
         "hour-24", "leap-second", "offset-24", "february-30", "ordinal-366", "week-53", "named-zone"],
)  # fmt: skip
def test_ambiguous_or_impossible_spellings_are_refused_with_the_reason(spelling, reason):
    refused(lambda: sets.read_instant(spelling), reason)
    refused(lambda: parse_cutoff(spelling), f"cutoff {spelling!r}: {reason}", "ISO 8601")
    assert classify_task(LIVE, spelling, CUT, None) == ("known", "no_created_at")
    why = sets.rule_text("no_created_at", source=LIVE, created_at=spelling, cutoff="2025-03-10", burned_by=None)
    assert f"created_at {spelling!r} is not read (" in why and reason in why


def test_the_grammar_never_asks_the_interpreter():
    """datetime.fromisoformat reads 20250311 on Python 3.11 and refuses it on 3.10: a status must not
    depend on the interpreter, so this module reads dates itself."""
    assert "fromisoformat(" not in inspect.getsource(sets) + inspect.getsource(sets_commands)


FUTURE = "2999-01-01T00:00:00Z"


@pytest.mark.parametrize("source", [LIVE, "static:fixtures", "held_out:private"])
def test_a_task_dated_in_the_future_is_refused_naming_the_file_the_task_and_the_date(ledger, tmp_path, source):
    dataset = write_dataset(tmp_path / "future.jsonl", [task("ok-1", "2025-06-01"), task("late-1", FUTURE),
                                                        task("late-2", "29990101")])  # fmt: skip
    message = refused(lambda: create_set(ledger, "s", "development", load_instances(dataset), source, cutoff="2025-03-10"),
                      f"{dataset}:2: task late-1 is dated in the future: created_at '{FUTURE}' is after now",
                      "the dataset is in error", "(and 1 more task(s) dated in the future)")  # fmt: skip
    assert "\n" not in message
    assert load_sets(ledger) == {}


def test_a_task_created_today_is_not_in_the_future(ledger):
    import datetime as dt

    today = dt.datetime.now(dt.timezone.utc).date()
    state = create_set(ledger, "s", "development", [task("t-1", today.isoformat()), task("t-2", today.strftime("%Y%m%d"))],
                       "static:fixtures")  # fmt: skip
    assert len(state.tasks) == 2
    refused(lambda: sets.refuse_future_tasks([task("t-3", today.isoformat())], now=dt.datetime.combine(
        today, dt.time(), dt.timezone.utc) - dt.timedelta(microseconds=1)), "t-3 is dated in the future")  # fmt: skip


def test_rotation_refuses_a_fresh_task_dated_in_the_future(ledger):
    create_set(ledger, "h", "holdout_live", [task("h-1", "2025-06-01")], LIVE, cutoff="2025-03-10")
    refused(lambda: rotate_set(ledger, "h", add=[task("h-2", FUTURE)]), "<h-2>: task h-2 is dated in the future")
    assert resolve_set(ledger, "h").set_id == "h@v1"


def test_a_cutoff_or_a_decision_in_the_future_is_refused(ledger):
    import datetime as dt

    refused(lambda: create_set(ledger, "h", "holdout_live", [task("h-1", "2025-06-01")], LIVE, cutoff="2999-01-01"),
            "cutoff 2999-01-01 is in the future", "a model's training cutoff has passed")  # fmt: skip
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    state = create_set(ledger, "h", "holdout_live", [task("h-1", "2025-06-01")], LIVE, cutoff="2025-03-10")
    assert gate(state, today).cutoff == today  # a date cutoff of today has started: not in the future
    refused(lambda: gate(state, "2999-W01-1"), "cutoff 2998-12-31 is in the future")  # ISO week 1 of 2999 starts in 2998
    refused(lambda: rotate_set(ledger, "h", cutoff="29990101"), "cutoff 2999-01-01 is in the future")
    refused(lambda: burn(ledger, "h", "later", when=32_503_680_000), "a decision's time 3000-01-01T00:00:00Z is in the future")


def test_an_entry_dated_before_what_it_records_is_refused_when_the_ledger_is_read(ledger):
    create_set(ledger, "dev", "development", [task("d-1", "2025-06-01")], "timestamp_gated:x", cutoff="2025-03-10")
    entry = next(ledger.entries("set")).data
    ledger.append("set", {**entry, "name": "forged", "set_id": "forged@v1", "record": None,
                          "tasks": [{**entry["tasks"][0], "instance_id": "d-2", "created_at": FUTURE}]})  # fmt: skip
    refused(lambda: load_sets(ledger), "ledger entry 2", f"task d-2 of forged@v1 is dated {FUTURE}",
            "after the entry was written")  # fmt: skip


def test_an_entry_with_a_future_cutoff_or_decision_is_refused_when_the_ledger_is_read(tmp_path):
    with Ledger(tmp_path / "a.sqlite") as first:
        create_set(first, "dev", "development", [task("d-1", "2025-06-01")], "timestamp_gated:x", cutoff="2025-03-10")
        entry = next(first.entries("set")).data
        first.append("set", {**entry, "name": "forged", "set_id": "forged@v1", "record": None, "cutoff": "2999-01-01"})
        refused(lambda: load_sets(first), "ledger entry 2", "the cutoff 2999-01-01 of forged@v1 is after the entry")
    with Ledger(tmp_path / "b.sqlite") as second:
        create_set(second, "dev", "development", [task("d-1", "2025-06-01")], "static:x")
        [task_id] = resolve_set(second, "dev").record.task_ids
        second.append("set", {"event": "burn", "name": "dev", "set_id": "dev@v1", "decision": "d",
                              "when": 32_503_680_000, "task_ids": [task_id], "newly_burned": [task_id]})  # fmt: skip
        refused(lambda: load_sets(second), "ledger entry 2", "the decision's time 3000-01-01T00:00:00Z is after the entry")


def test_the_commands_refuse_future_dates_and_ambiguous_spellings_with_one_line(tmp_path, capsys):
    led = ["--ledger", str(tmp_path / "l.sqlite")]
    dataset = write_dataset(tmp_path / "d.jsonl", [task("ok-1", "2025-06-01"), task("late-1", FUTURE)])
    code, out, err = run(capsys, "sets", "create", "s", "--role", "development", "--source", "static:x",
                         "--dataset", str(dataset), *led)  # fmt: skip
    assert code == 2 and out == ""
    assert err.startswith(f"objective-score sets: error: {dataset}:2: task late-1 is dated in the future: "
                          f"created_at '{FUTURE}'") and err.count("\n") == 1, err  # fmt: skip
    code, _, err = run(capsys, "sets", "create", "s", "--role", "development", "--source", "static:x",
                       "--dataset", str(dataset), "--instance-id", "ok-1", "--cutoff", "2999-01-01", *led)  # fmt: skip
    assert code == 2 and "cutoff 2999-01-01 is in the future" in err
    code, out, _ = run(capsys, "sets", "create", "s", "--role", "development", "--source", LIVE, "--dataset", str(dataset),
                       "--instance-id", "ok-1", "--cutoff", "2025-W11-2", *led, "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["details"]["cutoff"] == "2025-03-11"
    for argv, fragment in ((["sets", "gate", "s", "--cutoff", "2025-W11"], "a week, not a day"),
                           (["sets", "burn", "s", "--decision", "d", "--when", "20250311"], "eight digits may be a basic date"),
                           (["sets", "burn", "s", "--decision", "d", "--when", "2025-03"], "a month, not a day")):  # fmt: skip
        with pytest.raises(SystemExit) as caught:
            _parser().parse_args([*argv, *led])
        assert caught.value.code == 2 and fragment in capsys.readouterr().err
    code, _, err = run(capsys, "sets", "burn", "s", "--decision", "d", "--when", "2999-01-01", *led)
    assert code == 2 and "a decision's time 2999-01-01T00:00:00Z is in the future" in err
    code, out, _ = run(capsys, "sets", "burn", "s", "--decision", "d", "--when", "2025-W23-1", *led, "--json")
    assert code == 0 and json.loads(out)["record"]["last_decision_use"] == 1748822400  # 2025-06-02T00:00:00Z


def test_a_set_holds_each_problem_once(tmp_path):
    import json as _json

    from .runner_helpers import run_cli_here as run_cli

    dataset = FIXTURES / "datasets" / "fixtures.jsonl"
    rows = [_json.loads(line) for line in dataset.read_text().splitlines()]
    copies = tmp_path / "copies.jsonl"
    copies.write_text("".join(_json.dumps(r) + "\n" for r in [*rows, dict(rows[0], instance_id="renamed-copy")]))
    done = run_cli("sets", "create", "s", "--role", "regression", "--dataset", str(copies), "--source", "static:x",
                   "--ledger", str(tmp_path / "l.sqlite"))  # fmt: skip
    assert done.returncode == 2 and "task 'renamed-copy' is the same problem as 'fixtures__textstats-1'" in done.stderr
    assert not (tmp_path / "l.sqlite").exists() or "set" not in done.stdout
