"""``objective-score ab preregister|run|show|report``: the controlled A/B comparison, thin.

The rules are in :mod:`~pytest_objective_scoring.ab`, the comparison record and its re-reading in
:mod:`~pytest_objective_scoring.ab_comparison`; grading reuses ``grade-batch``'s machinery
(:mod:`~pytest_objective_scoring.jobs`: the same jobs, the same resume, the same ledger records).

Why over 800 lines: ``ab run`` is one transaction-ordered sequence (pin, grade, refuse on an
environment failure, burn, record) whose checks must be read in the order they run, and the claim
readers share its ledger reading; split, the order would be spread over modules.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import ab
from ..errors import EXIT_INFRASTRUCTURE, CommandError, interrupted_status
from ..identity import shown_name
from ..ledger import DEFAULT_LEDGER
from ..ab_comparison import environment_failures, reassess, summarize_comparison
from . import HELP
from .shared import environments_of, existing_ledger, probe_environments

AB_EPILOG = """\
A walk-through is in docs/ab.md. In short:

  objective-score sets create regression --role regression --dataset data.jsonl --source static:fixtures
  objective-score ab preregister experiment.json           # before any outcome is graded
  objective-score ab run experiment.json --arm baseline=base.jsonl --arm candidate=cand.jsonl \\
      --dataset data.jsonl --repos checkouts/
  objective-score ab report my-experiment --out report/     # Markdown and a self-contained HTML page

The manifest is hashed into the ledger at preregistration and cannot change afterwards.
Each arm's predictions carry a seed (one of the manifest's) and may declare the frozen
fields they ran under; a declared field that differs from the manifest refuses the run, an
undeclared one makes the evidence undetermined. Every arm must cover exactly the task set
on every seed. The comparison burns the tasks it used.
"""


def _error(message: str) -> CommandError:
    return CommandError(message)


def _ledger(args: argparse.Namespace) -> Path:
    return Path(args.ledger) if args.ledger else DEFAULT_LEDGER


MANIFEST_BYTES = 16 << 20  # a manifest is a page of JSON: a larger file (a wrong path, a pipe that never ends) is refused
ARM_BYTES = 1 << 30  # an arm's predictions: every task times every seed, each with its patch


def _load_manifest(path: str) -> tuple[ab.Manifest, dict[str, Any]]:
    """The manifest at ``path`` and its JSON, read once (:func:`.cost_ledger.input_text`: a named pipe
    nobody writes to, a device or a file over :data:`MANIFEST_BYTES` refused; NaN and numbers too
    long to read refused by :func:`.cost_ledger.loads`)."""
    from ..cost_ledger import NotJson, UnreadableInput, input_text, loads

    try:
        data = loads(input_text(path, MANIFEST_BYTES, "a JSON manifest"))
    except UnreadableInput as exc:
        raise _error(str(exc)) from None
    except NotJson as exc:
        raise _error(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _error(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    try:
        return ab.parse_manifest(data, path), data
    except ab.ABError as exc:
        raise _error(str(exc)) from None


def _registered(ledger: Any, name: str) -> dict[str, Any] | None:
    found = None
    for entry in ledger.entries("ab_manifest"):
        if entry.data["name"] == name:
            found = {"seq": entry.seq, "created": entry.created, **entry.data}
    return found


def cmd_preregister(args: argparse.Namespace) -> int:
    from ..ledger import Ledger
    from ..sets import resolve_set

    manifest, data = _load_manifest(args.manifest)
    digest = ab.manifest_digest(data)
    invalid, _ = ab.access_findings(manifest)
    if invalid:
        raise _error(f"{args.manifest}: {invalid[0]}: a comparison where a solver could reach the expected answer can "
                     "never be evidence (RFC 6.5: invalid); nothing was registered")  # fmt: skip
    with Ledger(_ledger(args)) as ledger:
        state = resolve_set(ledger, manifest.frozen.task_set)  # the task set must exist before anything runs
        _check_generalization(state, manifest)
        eligible, excluded = _eligible_tasks(state, manifest)
        power = design_power(manifest, len(eligible))
        if manifest.min_effect is not None and power["problems"]:
            raise _error(f"{args.manifest}: the design cannot reach C2, the claim its decision_rule.min_effect "
                         f"({manifest.min_effect:g}) asks for: " + "; ".join(power["problems"])
                         + ". Add tasks or seeds, or preregister it as exploratory (without min_effect)")  # fmt: skip
        earlier = _registered(ledger, manifest.name)
        if earlier is not None and earlier["digest"] != digest:
            changed = sorted(k for k in set(data) | set(earlier["manifest"]) if data.get(k) != earlier["manifest"].get(k))
            raise _error(f"experiment {manifest.name!r} was preregistered at ledger seq {earlier['seq']} ({earlier['created']}) "
                         f"with another manifest: {', '.join(changed)} changed. A preregistration cannot change; "
                         "name a new experiment")  # fmt: skip
        if earlier is not None:
            entry_seq, created, note = earlier["seq"], earlier["created"], "already preregistered"
            relations = earlier.get("change_relation") or []
        else:
            relations = _review_change(ledger, manifest, args.manifest)
            body = {"name": manifest.name, "digest": digest, "manifest": data, "task_set": _pin(state), "power": power,
                    "excluded_tasks": excluded, **({"change_relation": relations} if relations else {})}  # fmt: skip
            entry = ledger.append("ab_manifest", body)
            entry_seq, created, note = entry.seq, entry.created, "preregistered"
    result = {"name": manifest.name, "digest": digest, "seq": entry_seq, "created": created, "status": note,
              "power": power, "excluded_tasks": excluded, "change_relation": relations}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{manifest.name}: {note} at ledger seq {entry_seq} ({created}); manifest {digest}")
        print(power["statement"])
        for task in excluded:
            print(f"excluded: {task['instance_id']}: {'; '.join(task['why'])}")
        for relation in relations:
            print(f"declared {relation['relation']} {shown_name(relation['change'])}: {relation['reason']}")
    return 0


def _review_change(ledger: Any, manifest: ab.Manifest, path: str) -> list[dict[str, Any]]:
    """:func:`.ab.review_change` against every experiment preregistered in ``ledger``: the declarations
    the preregistration records, or one line naming the existing change the name resembles."""
    known, stated = [], []
    for entry in ledger.entries("ab_manifest"):
        written = entry.data.get("manifest")
        if isinstance(written, dict) and isinstance(written.get("change_under_test"), str):
            known.append({"name": entry.data.get("name"), "change": written["change_under_test"], "seq": entry.seq})
            stated.append(written)
    try:
        return ab.review_change(manifest, known, ab.change_links(stated), ab.change_splits(stated))
    except ab.ABError as exc:
        raise _error(f"{path}: {exc}; nothing was registered") from None


def design_power(manifest: ab.Manifest, tasks: int) -> dict[str, Any]:
    """What the design can detect (:func:`.ab_inference.minimum_detectable_effect`), and every reason
    it cannot reach C2 (``problems``; judged against ``min_effect`` when the manifest names one)."""
    from ..ab_claims import C2_MIN_TASKS
    from ..ab_inference import minimum_detectable_effect

    seeds = len(manifest.seeds)
    found = minimum_detectable_effect(tasks, seeds, manifest.alpha, manifest.task_effect_sd,
                                      run_effect_sd=manifest.run_effect_sd)  # fmt: skip
    problems = []
    if tasks < C2_MIN_TASKS:
        problems.append(f"{tasks} task(s), C2 needs at least {C2_MIN_TASKS}")
    if seeds < ab.PROMOTION_SEEDS:
        problems.append(f"{seeds} seed(s), C2 needs at least {ab.PROMOTION_SEEDS}")
    if not found["reachable"]:
        problems.append(found["why"])
    elif manifest.min_effect is not None and found["mde"] > manifest.min_effect:
        problems.append(f"the smallest effect it detects with {found['power']:.0%} power is {found['mde']:.3f} "
                        f"({found['mde'] * 100:.1f} points), more than min_effect {manifest.min_effect:g}")  # fmt: skip
    around = found.get("mde_interval")
    simulated = f" [{around[0]:.3f}, {around[1]:.3f}], simulated" if around else ""
    mde = (f"none: {found['why']}" if found["mde"] is None else
           f"{found['mde']:.3f}{simulated} ({found['mde'] * 100:.1f} resolve-rate points)")  # fmt: skip
    statement = (f"power: {tasks} tasks x {seeds} seeds at alpha {manifest.alpha:g}: minimum detectable effect at "
                 f"{found['power']:.0%} power {mde}; assuming per-task effects spread with sd {manifest.task_effect_sd:g} "
                 f"(decision_rule.task_effect_sd), seed-run shocks with sd {manifest.run_effect_sd:g} "
                 "(decision_rule.run_effect_sd) and seed noise at its binary maximum; "
                 + ("C2 within reach" if not problems and manifest.min_effect is not None else
                    "exploratory: C2 needs decision_rule.min_effect" if manifest.min_effect is None else
                    "C2 out of reach: " + "; ".join(problems)))  # fmt: skip
    return {**found, "min_effect": manifest.min_effect, "problems": problems,
            "powered": manifest.min_effect is not None and not problems, "statement": statement,
            "why": "; ".join(problems) if problems else None}  # fmt: skip


def _eligible_tasks(state: Any, manifest: ab.Manifest) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """The (task id, instance id) pairs a comparison grades, and the tasks it excludes with why: on a
    holdout_live set, the tasks that fail the cutoff gate against the frozen model's training cutoff."""
    tasks = sorted(state.instances.items(), key=lambda item: item[1])
    if state.record.role != "holdout_live" or manifest.model_training_cutoff is None:
        return tasks, []
    from ..sets import gate

    result = gate(state, manifest.model_training_cutoff)
    failing = {row.task_id: row for row in result.tasks if not row.eligible}
    excluded = [{"task_id": t, "instance_id": i, "reasons": list(failing[t].reasons), "why": list(failing[t].why)}
                for t, i in tasks if t in failing]  # fmt: skip
    return [(t, i) for t, i in tasks if t not in failing], excluded


def _pin(state: Any) -> dict[str, str]:
    """The exact task set a preregistration holds the experiment to: its version and its tasks."""
    from ..sets import tasks_digest

    return {"set_id": state.record.set_id, "tasks_digest": tasks_digest(state.record.task_ids)}


def _check_generalization(state: Any, manifest: ab.Manifest) -> None:
    """A holdout_live set is a generalization claim: gated against the frozen model's cutoff."""
    if state.record.role != "holdout_live":
        return
    if manifest.model_training_cutoff is None:
        raise _error(f"task set {state.record.set_id} is holdout_live: the manifest must name the frozen model's "
                     "model_training_cutoff, so the set is gated against it")  # fmt: skip
    from ..sets import require_generalization

    require_generalization(state, manifest.model_training_cutoff)


# ---------------------------------------------------------------------- ab run


def _arm_files(values: Sequence[str], manifest: ab.Manifest) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not path:
            raise _error(f"--arm {value!r}: expected NAME=PREDICTIONS")
        if name not in ab.ARM_NAMES:
            raise _error(f"--arm {name}: the manifest's arms are baseline and candidate")
        if name in files:
            raise _error(f"--arm {name} is given twice")
        files[name] = Path(path)
    missing = [n for n in ab.ARM_NAMES if n not in files]
    if missing:
        raise _error(f"--arm {missing[0]}=PREDICTIONS is missing: both arms are graded together")
    return files


def _arm_predictions(path: Path, arm: str, manifest: ab.Manifest) -> tuple[list[Any], dict[int, set[str]], set[str], dict[str, Any]]:
    """The arm's predictions (one per task and seed), the tasks per seed, the frozen fields it left
    undeclared, and its fingerprint (what :func:`_pinned_predictions` holds later runs to)."""
    from ..batch import BatchError, Prediction, read_rows
    from ..cost_ledger import CostError, UnreadableInput, input_text, parse_harness_cost

    try:  # read once (<(...) works), never blocking on a pipe nobody writes to, never past ARM_BYTES
        text = input_text(path, ARM_BYTES, "JSONL or JSON predictions (instance_id, seed, model_patch)", f"--arm {arm}=")
    except UnreadableInput as exc:
        raise _error(str(exc)) from None
    predictions: list[Any] = []
    per_seed: dict[int, set[str]] = {}
    undeclared: set[str] = set()
    seen: dict[tuple[str, int], str] = {}
    fingerprint: dict[str, Any] = {}
    try:
        rows = list(read_rows(path, text))
    except BatchError as exc:
        raise _error(str(exc)) from None
    for where, row in rows:
        if not isinstance(row, dict):
            raise _error(f"{where}: expected a JSON object with instance_id, seed, model_patch")
        instance_id, seed, patch = row.get("instance_id"), row.get("seed"), row.get("model_patch")
        if not isinstance(instance_id, str) or not instance_id:
            raise _error(f"{where}: field 'instance_id': expected a non-empty string")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed not in manifest.seeds:
            raise _error(f"{where}: field 'seed': {seed!r} is not one of the manifest's seeds {list(manifest.seeds)}")
        if patch is not None and not isinstance(patch, str):
            raise _error(f"{where}: field 'model_patch': expected a unified diff or null")
        if (instance_id, seed) in seen:
            raise _error(f"{where}: a second prediction for {instance_id!r} under seed {seed} (first at {seen[(instance_id, seed)]})")
        seen[(instance_id, seed)] = where
        declared = row.get("frozen", {})
        if not isinstance(declared, dict):
            raise _error(f"{where}: field 'frozen': expected an object of the frozen fields the run used")
        differ, missing = ab.frozen_mismatches(declared, manifest.frozen)
        if differ:
            raise _error(f"{where}: arm {arm} ran under another configuration than the manifest froze: {differ[0]}")
        undeclared.update(missing)
        try:
            cost = parse_harness_cost({k: v for k, v in row.items() if k not in ("model_name_or_path", "frozen")}, where)
        except CostError as exc:
            raise _error(str(exc)) from None
        if cost.tokens is not None and cost.tokens > manifest.frozen.token_budget:
            raise _error(f"{where}: {cost.tokens} tokens exceed the frozen token_budget {manifest.frozen.token_budget}")
        model = f"ab:{manifest.name}/{arm}/seed{seed}"
        predictions.append(Prediction(instance_id, model, patch or "", cost, where))
        per_seed.setdefault(seed, set()).add(instance_id)
        fingerprint[_prediction_key(instance_id, seed)] = _fingerprint(row)
    return predictions, per_seed, undeclared, fingerprint


# ---------------------------------------------------------------- the predictions an experiment grades
#
# A preregistered experiment grades one set of predictions. The first `ab run` that grades pins
# both arms' predictions (an ``ab_predictions`` ledger entry, written before any grading): each
# prediction's patch by its digest and every other field (cost fields, frozen, model name) by value.
# Every later run of the experiment (a resume after an interrupt, a read-back) compares its files with
# the pin before anything else is checked or graded, and refuses any difference by arm, instance,
# seed and field.


def _prediction_key(instance_id: str, seed: int) -> str:
    return f"{instance_id} seed {seed}"


def _fingerprint(row: dict[str, Any]) -> dict[str, Any]:
    import hashlib

    patch = row.get("model_patch")
    fields = {k: v for k, v in row.items() if k not in ("instance_id", "seed", "model_patch")}
    fields["model_patch"] = None if patch is None else "sha256:" + hashlib.sha256(patch.encode("utf-8")).hexdigest()
    return fields


def _predictions_digest(arms: dict[str, dict[str, Any]]) -> str:
    import hashlib

    from ..ledger import canonical

    return "sha256:" + hashlib.sha256(canonical(arms).encode()).hexdigest()


def _pinned_predictions(ledger: Any, name: str) -> dict[str, Any] | None:
    found = None
    for entry in ledger.entries("ab_predictions"):
        if entry.data["name"] == name:
            found = {"seq": entry.seq, "created": entry.created, **entry.data}
    return found


def _named(conn: Any, kind: str, name: str) -> dict[str, Any] | None:
    """The last ``kind`` entry of experiment ``name``, read inside the caller's write transaction."""
    found = None
    for seq, created, body in conn.execute("SELECT seq, created, body FROM entries WHERE kind = ? ORDER BY seq", (kind,)):
        data = json.loads(body)
        if data.get("name") == name:
            found = {"seq": seq, "created": created, **data}
    return found


def pin_predictions(ledger: Any, name: str, manifest_digest: str, fingerprints: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Record both arms' predictions as the ones the experiment grades (before its first grading), in the
    transaction that checks no other run pinned them first; returns that other run's pin, if one did."""
    raced: list[dict[str, Any]] = []

    def decide(conn: Any) -> list[Any]:
        earlier = _named(conn, "ab_predictions", name)
        if earlier is not None:
            raced.append(earlier)
            return []
        body = {"name": name, "manifest_digest": manifest_digest, "arms": fingerprints,
                "digest": _predictions_digest(fingerprints)}  # fmt: skip
        return [("ab_predictions", lambda _: body)]

    ledger.append_decided(decide)
    return raced[0] if raced else None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str) and value.startswith("sha256:"):
        text = value[: len("sha256:") + 12] + "..."
    return text if len(text) <= 60 else text[:57] + "..."


def prediction_changes(pinned: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Every difference between one arm's pinned fingerprint and its file's, one phrase each."""
    changes = []
    for key in sorted(set(pinned) | set(now)):
        if key not in now:
            changes.append(f"{key}: removed (pinned, not in the file)")
        elif key not in pinned:
            changes.append(f"{key}: added (in the file, not pinned)")
        else:
            old, new = pinned[key], now[key]
            for field in sorted(set(old) | set(new)):
                if field not in new:
                    changes.append(f"{key}: field {field!r} removed (was {_short(old[field])})")
                elif field not in old:
                    changes.append(f"{key}: field {field!r} added ({_short(new[field])})")
                elif old[field] != new[field]:
                    changes.append(f"{key}: field {field!r} changed ({_short(old[field])} -> {_short(new[field])})")
    return changes


def check_pinned_predictions(pinned: dict[str, Any], arm: str, path: Path, fingerprint: dict[str, Any]) -> None:
    """Refuse an arm's predictions that differ from the ones the experiment pinned at its first run."""
    changes = prediction_changes((pinned.get("arms") or {}).get(arm, {}), fingerprint)
    if changes:
        more = f" (and {len(changes) - 5} more)" if len(changes) > 5 else ""
        raise _error(f"--arm {arm}={path}: the predictions changed since experiment {pinned['name']!r} pinned them at "
                     f"ledger seq {pinned['seq']} ({pinned['created']}): " + "; ".join(changes[:5]) + more
                     + ". A preregistered experiment grades one set of predictions: restore them, or preregister "
                     "a new experiment")  # fmt: skip


def _preregistered_ledger(args: argparse.Namespace) -> Path:
    """``--ledger``, which must exist (:func:`.shared.existing_ledger`, a check that only reads): ``ab run``
    grades a preregistered experiment, so a ledger that is not there is refused before anything,
    a ledger file included, is made."""
    try:
        return existing_ledger(args)
    except CommandError as exc:
        raise _error(f"{exc}: ab run grades only an experiment preregistered in it (objective-score ab preregister "
                     f"{args.manifest} first); nothing was made") from None  # fmt: skip


def cmd_run(args: argparse.Namespace) -> int:
    from .. import batch
    from ..jobs import grade_jobs
    from ..instances import InstanceError, load_instances
    from ..ledger import Ledger
    from ..identity import problem_keys
    from ..sets import burn, resolve_set, task_id_of

    import importlib.util

    if importlib.util.find_spec("scipy") is None:  # checked before any grading, not after
        raise _error("ab run computes its statistics with scipy: pip install 'pytest-objective-scoring[stats]'")
    path = _preregistered_ledger(args)  # read, never made: a missing ledger holds no preregistration
    manifest, data = _load_manifest(args.manifest)
    digest = ab.manifest_digest(data)
    files = _arm_files(args.arm, manifest)
    with Ledger(path) as ledger:
        registered = _registered(ledger, manifest.name)
        if registered is None:
            raise _error(f"experiment {manifest.name!r} is not preregistered: run objective-score ab preregister "
                         f"{args.manifest} before grading any outcome")  # fmt: skip
        if registered["digest"] != digest:
            changed = sorted(k for k in set(data) | set(registered["manifest"]) if data.get(k) != registered["manifest"].get(k))
            raise _error(f"{args.manifest} differs from the manifest preregistered at seq {registered['seq']}: "
                         f"{', '.join(changed)} changed after preregistration")  # fmt: skip
        pinned = registered.get("task_set") or {}
        task_set = resolve_set(ledger, pinned.get("set_id", manifest.frozen.task_set))
        if _pin(task_set) != pinned:
            raise _error(f"the task set changed since preregistration: {pinned.get('set_id')} was pinned, "
                         f"{task_set.record.set_id} holds other tasks now")  # fmt: skip
        if not task_set.current:
            raise _error(f"task set {task_set.record.set_id} was retired since preregistration (rotated): "
                         "its tasks can no longer decide anything; preregister a new experiment on the current version")  # fmt: skip
        existing = [e.data for e in ledger.entries("ab_comparison") if e.data["name"] == manifest.name]
        if not existing and task_set.record.role == "holdout_live" and task_set.record.burned:
            raise _error(f"task set {task_set.record.set_id} is a holdout_live set whose tasks were used in a decision: "
                         "rotate it (objective-score sets rotate) before another comparison")  # fmt: skip
        if existing:  # the comparison is written: its tasks (burned since) are the ones it graded
            excluded = list(existing[-1]["details"].get("excluded_tasks") or [])
            graded_ids = {t["instance_id"] for t in excluded}
            eligible = [(t, i) for t, i in sorted(task_set.instances.items(), key=lambda item: item[1]) if i not in graded_ids]
        else:
            _check_generalization(task_set, manifest)
            eligible, excluded = _eligible_tasks(task_set, manifest)
        expected = {instance_id for _, instance_id in eligible}
        dropped = {t["instance_id"] for t in excluded}
        try:
            instances = [i for i in load_instances(args.dataset) if i.instance_id in expected]
        except InstanceError as exc:
            raise _error(str(exc)) from None
        absent = sorted(expected - {i.instance_id for i in instances})
        if absent:
            raise _error(f"--dataset {args.dataset} lacks task(s) of {task_set.record.set_id}: {', '.join(absent[:5])}")
        changed = sorted(i.instance_id for i in instances if task_id_of(i) not in task_set.instances)
        if changed:
            raise _error(f"--dataset {args.dataset}: {', '.join(changed[:5])} differ(s) from the task set's content-addressed "
                         f"task(s) in {task_set.record.set_id}: the comparison would not grade the tasks the set holds")  # fmt: skip
        problems = {i.instance_id: problem_keys(i.fields) for i in instances}
        copies = _copies(problems)
        if copies:
            raise _error(f"task set {task_set.record.set_id} holds the same problem under several tasks ({len(copies)} "
                         f"group(s), e.g. {', '.join(copies[0])}: the same gold patch, or the same test patch and "
                         "FAIL_TO_PASS tests, as code): a comparison "
                         "counts problems, not copies; make a set without the copies. Nothing was graded")  # fmt: skip
        predictions, undeclared, fingerprints = [], set(), {}
        pinned_predictions = _pinned_predictions(ledger, manifest.name)
        for arm, path in files.items():
            arm_predictions, per_seed, missing, fingerprints[arm] = _arm_predictions(path, arm, manifest)
            if pinned_predictions is not None:  # before anything else is checked or graded
                check_pinned_predictions(pinned_predictions, arm, path, fingerprints[arm])
            for seed in manifest.seeds:
                got = per_seed.get(seed, set()) - dropped  # an excluded holdout task's predictions are not graded
                if got != expected:
                    lacking, extra = sorted(expected - got), sorted(got - expected)
                    raise _error(f"--arm {arm}={path}: seed {seed} does not cover the task set {task_set.record.set_id} exactly"
                                 + (f"; missing {', '.join(lacking[:5])}" if lacking else "")
                                 + (f"; not in the set {', '.join(extra[:5])}" if extra else ""))  # fmt: skip
            predictions += [p for p in arm_predictions if p.instance_id not in dropped]
            undeclared |= missing
        # each task's interpreter (or image): the same for both arms and every seed, checked before any grading
        assigned, environments = environments_of(instances, args)
        versions = probe_environments(list(assigned.values()), images=not args.scheduler)
        interpreters = sorted({e.python or "" for e in assigned.values()})
        python = interpreters[0] if len(interpreters) == 1 and environments is None else None
        digests = {path: v.get("packages_digest", "unknown") for path, v in versions.items()}
        settings = {"python": python, "timeout": float(manifest.frozen.timeout), "compat": args.compat or "strict",
                    "compute_rate": args.compute_rate if args.compute_rate is not None else _default_rate(),
                    "network": False, "reruns": 0, "engine": getattr(args, "engine", "auto"),
                    "environment_digests": digests,
                    **({"against_gold": args.against_gold} if getattr(args, "against_gold", None) else {})}  # fmt: skip
        try:
            jobs = batch.plan_jobs(instances, predictions, Path(args.repos).resolve(), settings, assigned)
        except batch.BatchError as exc:
            raise _error(str(exc)) from None
        jobs_digest = _jobs_digest(jobs)
        if existing and pinned_predictions is None and existing[-1].get("jobs_digest") != jobs_digest:
            # a comparison written before predictions were pinned: its jobs are the pin (patches, not cost fields)
            raise _error(f"experiment {manifest.name!r} already has its comparison: a preregistered experiment is "
                         "run once; the same predictions only read it back, other predictions are refused "
                         "(preregister a new experiment)")  # fmt: skip
        if not existing:  # a resumed run grades in the environment the interrupted one graded in, or not at all
            _check_resumed_environment(batch.recorded_jobs(ledger), jobs, digests)
        if pinned_predictions is None and not existing:
            raced = pin_predictions(ledger, manifest.name, digest, fingerprints)
            if raced is not None:  # another run of the experiment pinned its predictions a moment ago
                for arm, path in files.items():
                    check_pinned_predictions(raced, arm, path, fingerprints[arm])
        try:  # an infrastructure failure is never "already graded": it is graded again (grade-batch --retry-infra)
            rows, _ = grade_jobs(ledger, jobs, settings, workers=args.workers, scheduler=args.scheduler, quiet=args.json,
                                 retry_infra=not existing)  # fmt: skip
        except KeyboardInterrupt as exc:
            print("objective-score ab run: interrupted; run the same command again to resume", file=sys.stderr)
            return interrupted_status(exc)
        if not existing:
            failed = environment_failures([rows[j.key] for j in jobs])
            if failed:
                return _environment_failed(failed, len(jobs))
        by_prediction = {(j.prediction.model, j.instance.instance_id): rows[j.key] for j in jobs}
        invalid = sorted({f"{model.rsplit('/', 2)[-2]} {model.rsplit('/', 1)[-1]} {task}: {', '.join(row.get('reasons') or [])}"
                          for (model, task), row in by_prediction.items() if row.get("disposition") == "invalid"})  # fmt: skip
        if invalid:
            raise _error(f"the comparison refuses invalid runs ({len(invalid)}): " + "; ".join(invalid[:5])
                         + " (they are recorded in the ledger; see objective-score ledger show)")  # fmt: skip
        if existing:
            if existing[-1].get("jobs_digest") != jobs_digest:
                raise _error(f"experiment {manifest.name!r} already has its comparison: a preregistered experiment is "
                             "run once; the same predictions only read it back, other predictions are refused "
                             "(preregister a new experiment)")  # fmt: skip
            output = {"name": manifest.name, **existing[-1], "resumed": True}
            output["details"] = _read_back(ledger, _ledger(args), output)
            return _print(output, args)
        record, details = summarize_comparison(manifest, eligible, task_set, by_prediction, sorted(undeclared),
                                               python or _per_instance(assigned, environments))  # fmt: skip
        details["excluded_tasks"] = excluded
        details["problem_digests"] = sorted({key for keys in problems.values() for key in keys})  # every key of each
        details["power"] = registered.get("power") or design_power(manifest, len(eligible))
        details["graded_runs"] = sorted(({"seq": row["ledger_seq"], "task_id": task_id_of(job.instance)}
                                         for job in jobs for row in [rows[job.key]] if row.get("ledger_seq") is not None),
                                        key=lambda r: r["seq"])  # fmt: skip
        details = reassess(ledger, record, details, name=manifest.name, pending=True)
        # the decision burns its tasks first: a crash after this line leaves them burned (the safe side)
        details["burned_now"] = burn(ledger, task_set.record.name, f"ab:{manifest.name}", [i for _, i in eligible])
        body = {"name": manifest.name, "manifest_digest": digest, "record": record, "details": details,
                "claim_c2": details["claim"] in ("C2", "C3"), "jobs_digest": jobs_digest}  # fmt: skip
        first: list[dict[str, Any]] = []

        def decide(conn: Any) -> list[Any]:  # one comparison per experiment, whatever ran at the same time
            earlier = _named(conn, "ab_comparison", manifest.name)
            if earlier is not None:
                first.append(earlier)
                return []
            return [("ab_comparison", lambda _: body)]

        written = ledger.append_decided(decide)
        if first:
            if first[0].get("jobs_digest") != jobs_digest:
                raise _error(f"experiment {manifest.name!r} got its comparison from another run a moment ago, over "
                             "other predictions: a preregistered experiment is run once (preregister a new experiment)")  # fmt: skip
            output = {**first[0], "resumed": True}
            output["details"] = _read_back(ledger, _ledger(args), output)
            return _print(output, args)
    output = {"name": manifest.name, "seq": written[0].seq, "record": record, "details": details}
    return _print(output, args)


def _environment_failed(failed: Sequence[dict[str, Any]], total: int) -> int:
    """Say in one line that ``failed`` gradings broke for the environment and no comparison was
    computed; exit 3. They are in the ledger as infrastructure failures (or not in it at all): the
    next ``ab run`` grades exactly those again (and reads the others back)."""
    first = failed[0]
    detail = (f"not recorded in the ledger: {first['ledger_error']}" if first.get("ledger_error") else
              str(first.get("failure_detail") or "no detail recorded"))  # fmt: skip
    detail = (detail.splitlines() or [""])[0][:200]
    print(f"objective-score ab run: {len(failed)} of {total} grading(s) failed for the environment (infrastructure "
          f"failures; first: {first['instance_id']} {first['model_name_or_path']}: {detail}): no comparison was "
          f"computed and neither arm is blamed; fix the environment and run the same command again: it grades those "
          f"{len(failed)} again and reads the others from the ledger", file=sys.stderr)  # fmt: skip
    return EXIT_INFRASTRUCTURE


def _copies(problems: Mapping[str, str | Sequence[str]]) -> list[list[str]]:
    """Groups of instance ids that are the same problem: that share any key (:func:`.identity.problem_keys`)."""
    group_of: dict[str, str] = {}  # instance id -> the first instance id of its group
    owner: dict[str, str] = {}  # key -> an instance id holding it
    for instance_id, keys in sorted(problems.items()):
        group_of[instance_id] = instance_id
        for key in [keys] if isinstance(keys, str) else keys:
            if key in owner:
                mine, theirs = group_of[instance_id], group_of[owner[key]]
                group_of.update({i: theirs for i, g in group_of.items() if g == mine})
            else:
                owner[key] = instance_id
    groups: dict[str, list[str]] = {}
    for instance_id, group in sorted(group_of.items()):
        groups.setdefault(group, []).append(instance_id)
    return [ids for ids in groups.values() if len(ids) > 1]


def _check_resumed_environment(done: dict[str, dict[str, Any]], jobs: Sequence[Any], digests: dict[str, str]) -> None:
    """Refuse to go on grading an experiment whose earlier gradings ran in another environment (an
    install between an interrupted run and its resume): both arms must be graded in one environment."""
    for job in jobs:
        recorded = done.get(job.key)
        if recorded is None:
            continue
        then = recorded.get("environment_digest")
        now = digests.get(job.python or "", "unknown")
        if then != now:
            raise _error(f"{job.instance.instance_id} ({job.prediction.model}) was graded at ledger seq {recorded['seq']} "
                         f"in an environment with packages {then or 'not recorded'}; {job.python} has {now} now: the "
                         "environment changed since the interrupted run. A comparison is graded in one environment: "
                         "restore it, or preregister a new experiment")  # fmt: skip


def _per_instance(assigned: dict[str, Any], environments: Any) -> str:
    """The identity's ``interpreter`` when tasks have environments of their own: the file and the
    digest of the bytes read (each task's interpreter is in its graded runs and their job keys)."""
    digest = (environments.sha256 or "unreadable")[:16]
    used = len({(e.python, e.image) for e in assigned.values()})
    return f"per instance: {environments.path} (sha256 {digest}..., {used} environment(s))"


def _jobs_digest(jobs: Sequence[Any]) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256("\n".join(sorted(j.key for j in jobs)).encode()).hexdigest()


def _print(output: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps(output, indent=2, ensure_ascii=False))
    else:
        _comparison_table(output)
    return 0


def _default_rate() -> float:
    from ..cost_ledger import DEFAULT_COMPUTE_RATE

    return DEFAULT_COMPUTE_RATE


def _comparison_table(output: dict[str, Any]) -> None:
    """The comparison as a rich table and lines. Every string is printed as written, never read as rich
    markup or emoji codes (a benchmark ``[synth-a]``, a change ``:x:``): each line goes through
    :func:`rich.markup.escape`, and the console reads no emoji codes."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    record, details = output["record"], output["details"]
    console = Console(emoji=False) if Console().is_terminal else Console(width=140, emoji=False)

    def say(text: str) -> None:
        console.print(escape(text), soft_wrap=True)

    table = Table(title=escape(f"A/B {output['name']}: {record['change_under_test']} ({details['tasks']} tasks × "
                               f"{len(record['seeds'])} seeds)"))  # fmt: skip
    from ..ab_report import _interval_text, _member_interval, pass_at_k_intervals, total_text, variance_text

    # the totals over the arm's runs, each with the interval of the mean per run times the runs
    # (ab_report.total_text); the variance of the per-seed rates with its chi-squared interval
    for column in ("arm", "kind", "harness", "resolved per seed", "mean", "interval", "variance over seeds",
                   "dollars (sum)", "tokens (sum)"):  # fmt: skip
        table.add_column(column, overflow="fold")
    kinds = {a["name"]: a["kind"] for a in details["arm_kinds"]}
    alpha = float((details.get("test") or {}).get("alpha") or 0.05)
    for arm in record["arms"]:
        low, high = arm["confidence_interval"]
        spread = (details.get("cost_distribution") or {}).get(arm["name"]) or {}
        cells = (arm["name"], kinds[arm["name"]], arm["harness_version"], " ".join(map(str, arm["resolved"])),
                 f"{arm['mean']:.1%}", f"[{low:.1%}, {high:.1%}]", variance_text(arm["variance"], len(record["seeds"]), alpha),
                 total_text(arm["cost"]["dollars"], spread.get("dollars"), ".4f"),
                 total_text(arm["cost"]["tokens"], spread.get("tokens"), ".6g"))  # fmt: skip
        table.add_row(*(escape(str(cell)) for cell in cells))
    console.print(table)

    for arm, values in pass_at_k_intervals(output).items():
        say(f"{arm}: " + "; ".join(f"{name} {found['estimate']:.1%}{_interval_text(found, '.1%')}"
                                   if found.get("estimate") is not None else f"{name} undefined"
                                   for name, found in values.items()))  # fmt: skip
    for arm, check in (details.get("against_gold") or {}).items():  # --against-gold: both figures side by side
        if check:
            say(f"{arm}: resolved {check['resolved']}/{check['graded']}; resolved and free of regressions against gold "
                f"{check['resolved_against_gold']}/{check['graded']} ({check['regressions']} with regressions, "
                f"{check['unknown']} unknown)")  # fmt: skip
    for arm, quantities in (details.get("cost_distribution") or {}).items():
        parts = []
        for field in ("dollars", "cpu", "wall_time", "tokens"):
            found = quantities.get(field) or {}
            if found.get("mean") is None:
                continue
            spread = "" if found.get("p10") is None else f", p10-p90 {found['p10']:.4g}-{found['p90']:.4g}"
            parts.append(f"{field} mean {found['mean']:.4g}{_interval_text(found, '.4g')}{spread}")
        if parts:
            say(f"{arm} cost per run: " + "; ".join(parts))
    result, test = record["result"], details["test"]
    p = "" if test["p_value"] is None else f", p = {test['p_value']:.4g}"
    say(f"delta {result['delta']:+.1%}; significant: {result['significant']} ({test['test']}{p})")
    say(f"recommendation: {result['recommendation']} ({details['recommendation_because']})")
    if test.get("interval"):
        low, high = test["interval"]
        say(f"interval of delta (1 - alpha, same model): [{low:+.1%}, {high:+.1%}]")
    for view in (test.get("secondary") or {}).values():
        shown = "n/a" if view.get("p_value") is None else f"{view['p_value']:.4g}"
        say(f"secondary (not decided on): {view['test']}: p = {shown}; assumes {view['assumes']}")
    for reason in details["inadmissible_because"]:
        say(f"not admissible: {reason}")
    from ..ab_report import access_text

    say("access, as declared in the manifest (not observed by the grader): " + access_text(details))
    for task in details.get("excluded_tasks") or []:
        say(f"excluded: {task['instance_id']}: {'; '.join(task['why'])}")
    family = details.get("family") or {}
    if family.get("experiments", 0) > 1:
        say(f"every experiment on {family['change_under_test']!r} ({family['correction']}):")
        for member in family["members"]:
            p_text = "n/a" if member["p_value"] is None else f"{member['p_value']:.4g}"
            spelt = member.get("change_under_test")
            other = "" if spelt in (None, family["change_under_test"]) else f" (as {shown_name(spelt)})"
            delta = "" if member.get("delta") is None else (f", delta {member['delta']:+.1%}"
                                                             + _member_interval(member, details, output["name"]))
            say(f"  {member['name']} [{member['benchmark']}]{other}: {member['status']}{delta}, recommendation "
                f"{member['recommendation'] or '-'}, p = {p_text}, Holm p = {member['holm_p_value']:.4g}")  # fmt: skip
    for relation in family.get("declared") or []:
        say(f"  declared: {shown_name(str(relation['change']))} {relation['relation']} {shown_name(str(relation['to']))}: "
            f"{relation['reason']}")  # fmt: skip
    say(f"claim level: {details['claim']}")
    for reason in details.get("claim_reasons") or []:
        say(f"  {reason}")
    downgrade = details.get("claim_downgraded")
    if downgrade:
        say(f"DOWNGRADED from {downgrade['from']} (when written) to {downgrade['to']}: " + "; ".join(downgrade["because"]))


def cmd_show(args: argparse.Namespace) -> int:
    output = _latest(args)
    if args.json:
        print(json.dumps(output, indent=2, ensure_ascii=False))
    else:
        _comparison_table(output)
    return 0


class NoClaim(Exception):
    """The evidence behind a claim does not hold (a tampered ledger, a summary its graded runs do not
    bear out): no claim is printed, exit 1."""


def _latest(args: argparse.Namespace) -> dict[str, Any]:
    """The latest comparison named ``args.name``, its claim recomputed from evidence: the ledger's
    chain verified first (and its seals, with the ledger key), then the outcomes and the primary test
    recomputed from the graded runs (:func:`.ab_comparison.recomputed`), then the claim reassessed."""
    from ..ledger import Ledger

    path = _ledger(args)
    if not path.exists():
        raise _error(f"--ledger {path}: no such ledger")
    with Ledger(path, read_only=True) as ledger:
        found = [{"seq": e.seq, **e.data} for e in ledger.entries("ab_comparison") if e.data["name"] == args.name]
        names = sorted({e.data["name"] for e in ledger.entries("ab_comparison")})
        if not found:
            raise _error(f"no comparison named {args.name!r} in {path} (comparisons: {', '.join(names) or 'none'})")
        latest = found[-1]  # its claim as the ledger stands now, not as it stood when it was written
        latest["details"] = _read_back(ledger, path, latest, getattr(args, "expect_head", None), _key(args))
    return latest


def _key(args: argparse.Namespace) -> bytes | None:
    """``--key-file``'s key (it checks a signed ``--expect-head`` and the ledger's seals), else None:
    the seals are then checked with ``$OBJECTIVE_SCORE_LEDGER_KEY_FILE``'s key when it is set."""
    from .ledger import _ledger_key

    return _ledger_key(args)


def _read_back(ledger: Any, path: Path, output: dict[str, Any], expect_head: str | None = None,
               key: bytes | None = None) -> dict[str, Any]:  # fmt: skip
    """A comparison already recorded, as ``ab run`` reads it back: from verified evidence only, as
    ``ab show`` reads it (:func:`_latest`): the ledger verified (against ``expect_head``, a head kept
    from ``ledger head`` where the ledger's writers cannot reach, when given: a removed tail, which the
    file alone cannot show, then gives no claim), the summary recomputed from its graded runs, then the
    claim reassessed. :class:`NoClaim` when either fails."""
    from ..ab_comparison import recomputed
    from ..ledger import LedgerError, key_from_environment, parse_head, verify

    try:
        signed = expect_head is not None and parse_head(expect_head)[2] is not None
    except ValueError as exc:
        raise CommandError(f"--expect-head {exc}") from None
    if expect_head is not None and key is not None and not signed:
        raise CommandError("--expect-head: a key was given (--key-file) but the head is not signed (expected SEQ:HASH:HMAC)")
    key = key if key is not None else key_from_environment()
    try:
        checked = verify(path, expect_head if signed else None, key)  # the chain, the seals (and a signed head) with the key
        problems = list(checked.problems)
        if expect_head is not None and not signed:  # an unsigned head, whatever key seals the rows
            problems += [p for p in verify(path, expect_head).problems if p not in problems]
    except LedgerError as exc:
        raise NoClaim(f"{path}: {exc}") from None
    if problems:
        raise NoClaim(f"{path} fails verification, so no claim is read from it: " + "; ".join(problems[:5])
                      + " (objective-score ledger verify" + (" --expect-head" if expect_head else "") + ")")
    details, problems = recomputed(ledger, output)
    if problems:
        raise NoClaim(f"comparison {output['name']!r}: its stored summary is not borne out by its graded runs, so no "
                      "claim is read from it: " + "; ".join(problems[:5]))  # fmt: skip
    details = reassess(ledger, output["record"], details, name=output["name"])
    if checked.seals == "unchecked":
        details["ledger_seals"] = "not checked: the ledger is sealed with a key this reader was not given"
    return details


def _claim_reader(handler: Any) -> Any:
    """``handler`` with :class:`NoClaim` said in one line on stderr, exit 1 (never a claim printed)."""

    def read(args: argparse.Namespace) -> int:
        try:
            return int(handler(args))
        except NoClaim as exc:
            print(f"objective-score ab {args.action}: no claim: {exc}", file=sys.stderr)
            return 1

    return read


def cmd_report(args: argparse.Namespace) -> int:
    from ..ab_report import write_report

    output = _latest(args)
    out = Path(args.out)
    try:
        written = write_report(output, out)
    except OSError as exc:  # a full disk, a folder that cannot be written: nothing partial is left (write_all)
        from ..atomic import why

        print(f"objective-score ab report: --out {out}: NOT written ({why(exc)}); nothing of the report was left "
              "there: free the space and run it again", file=sys.stderr)  # fmt: skip
        return EXIT_INFRASTRUCTURE
    if args.json:
        print(json.dumps({"name": args.name, "written": [str(p) for p in written], "claim": output["details"]["claim"]}))
    else:
        for path in written:
            print(f"written: {path}")
    return 0


def register(sub: Any) -> None:
    from .. import options

    parser = sub.add_parser("ab", help=HELP["ab"],
                            description="Freeze everything, change one thing, repeat over seeds, report cost beside correctness.",
                            epilog=AB_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    pre = actions.add_parser("preregister", help="Hash the manifest into the ledger before any outcome is graded",
                             description="Record the experiment's manifest; it cannot change afterwards.")  # fmt: skip
    pre.add_argument("manifest", metavar="MANIFEST")
    pre.set_defaults(handler=cmd_preregister)

    run = actions.add_parser("run", help="Grade both arms per seed and write the ABComparison",
                             description="Grade each arm's predictions per seed (the manifest's frozen timeout applies) and compare.",
                             epilog=AB_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    run.add_argument("manifest", metavar="MANIFEST")
    run.add_argument("--arm", action="append", default=[], metavar="NAME=PREDICTIONS", required=True,
                     help="An arm's predictions (JSONL or JSON: instance_id, seed, model_patch, optional frozen and cost fields)")  # fmt: skip
    run.add_argument("--dataset", required=True, metavar="FILE", help="The instances of the task set")
    run.add_argument("--repos", required=True, metavar="DIR", help="Where repositories are checked out: DIR/owner/name")
    run.add_argument("--workers", type=options.whole_number(1, 1024, "the number of workers"), default=1, metavar="N",
                     help="Gradings at once on this machine")
    run.add_argument("--scheduler", metavar="ADDRESS", help="Run the gradings on this Dask scheduler")
    options.add_environment_options(run.add_argument)
    options.add_against_gold(run.add_argument)
    options.add_compat_option(run.add_argument, prefix="")
    options.add_cost_options(run.add_argument, prefix="", cost_file=False)
    run.set_defaults(handler=_claim_reader(cmd_run))

    show = actions.add_parser("show", help="Show the latest comparison of an experiment")
    show.add_argument("name", metavar="NAME")
    show.set_defaults(handler=_claim_reader(cmd_show))

    report = actions.add_parser("report", help="Write the comparison as Markdown and a self-contained HTML page with plots")
    report.add_argument("name", metavar="NAME")
    report.add_argument("--out", metavar="DIR", default="ab-report", help="Where to write report.md and report.html (default: ab-report)")
    report.set_defaults(handler=_claim_reader(cmd_report))

    for action in (show, report):
        action.add_argument("--expect-head", metavar="HEAD", default=None,
                            help="A head kept from objective-score ledger head (HASH, SEQ:HASH, or SEQ:HASH:HMAC when "
                            "signed) where the ledger's writers cannot reach: it must still be in the chain, else the "
                            "ledger's tail was removed or rewritten and no claim is read (exit 1)")  # fmt: skip
        action.add_argument("--key-file", metavar="FILE", default=None,
                            help="The ledger key (the file's bytes): checks a signed --expect-head and the ledger's "
                            "seals (default: $OBJECTIVE_SCORE_LEDGER_KEY_FILE)")  # fmt: skip
    for action in (pre, run, show, report):
        action.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
        action.add_argument("--json", action="store_true", help="Print the result as JSON")
