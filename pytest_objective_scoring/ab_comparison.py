"""The A/B comparison's record, built from the graded rows of both arms, and what is re-read later.

:func:`summarize_comparison` turns every graded prediction of both arms into the ``ABComparison``
record (exactly its fields) and its details beside it: counts per seed, costs, pass@k, the
environment parity (:func:`environment_parity`), identity and the claim. :func:`reassess` runs on
every read of a recorded comparison: under today's audits a task may have become quarantined, and
the experiment family (:func:`experiment_family`, Holm over every comparison of one change) may
have grown, so the claim level can only go down. The statistics are in :mod:`.ab_inference`, the
claim rules in :mod:`.ab_claims`; ``objective-score ab`` (:mod:`.commands.ab`) calls these.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import ab


def _sum(values: Sequence[Any]) -> Any:
    return None if not values or any(v is None for v in values) else sum(values)


class UngradedRuns(ValueError):
    """Some gradings of a comparison failed for the environment: no comparison is computed from them."""


def environment_failures(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose grading was an infrastructure failure, or whose result the ledger could not take
    (``ledger_error``: no graded run to cite). Either is an outcome of neither arm (the machine, not the
    patch, failed): until it is graded again, the comparison does not exist."""
    return [row for row in rows if row.get("failure_class") == "infrastructure_failure" or row.get("ledger_error")]


def summarize_comparison(manifest: ab.Manifest, eligible: Sequence[tuple[str, str]], task_set: Any,
                         by_prediction: dict[tuple[str, str], dict[str, Any]], undeclared: list[str],
                         python: str) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """The ABComparison record and its details from every graded prediction of both arms, on the
    ``eligible`` (task id, instance id) pairs. Raises :class:`UngradedRuns` when any grading is an
    infrastructure failure (:func:`environment_failures`): it is never counted as unresolved."""
    from dataclasses import asdict

    failed = environment_failures(list(by_prediction.values()))
    if failed:
        raise UngradedRuns(f"{len(failed)} of {len(by_prediction)} grading(s) failed for the environment "
                           "(infrastructure failures): they are outcomes of neither arm; grade them again")  # fmt: skip
    tasks = sorted(instance_id for _, instance_id in eligible)
    n = len(tasks)
    arms, per_seed, per_task, costs_per_seed = [], {}, {}, {}
    infra = 0
    outcomes: dict[str, dict[tuple[int, str], str]] = {}
    for spec in manifest.arms:
        counts, rows_of_arm = [], []
        outcomes[spec.name] = {}
        for seed in manifest.seeds:
            model = f"ab:{manifest.name}/{spec.name}/seed{seed}"
            rows = [by_prediction[(model, task)] for task in tasks]
            rows_of_arm += rows
            counts.append(sum(r["failure_class"] == "resolved" for r in rows))
            infra += sum(r["failure_class"] == "infrastructure_failure" for r in rows)
            for task, row in zip(tasks, rows):
                outcomes[spec.name][(seed, task)] = row["failure_class"]
        mean, variance, interval = ab.arm_statistics(counts, n, manifest.alpha)
        totals = {field: _sum([(r.get("cost") or {}).get(field) for r in rows_of_arm])
                  for field in ("tokens", "calls", "cpu", "wall_time", "dollars")}  # fmt: skip
        if any((r.get("cost_breakdown") or {}).get("model_dollars") is None for r in rows_of_arm):
            totals["dollars"] = None  # LLM + compute: unknown when the harness did not report its dollars
        cost = ab.Cost(**totals)
        arms.append(ab.Arm(spec.name, spec.harness_version, tuple(counts), mean, variance, interval, cost))
        per_seed[spec.name] = counts
        costs_per_seed[spec.name] = None if cost.dollars is None else cost.dollars / len(manifest.seeds)
        per_task[spec.name] = {task: sum(outcomes[spec.name][(s, task)] == "resolved" for s in manifest.seeds) for task in tasks}
    row_reasons = _quarantined_rows([row.get("disposition") for row in by_prediction.values()],
                                    [row.get("reasons") for row in by_prediction.values()])  # fmt: skip
    identical = outcomes["baseline"] == outcomes["candidate"]
    reasons = fixed_reasons(manifest, undeclared, identical)
    if infra:
        reasons.insert(len(reasons) - (manifest.arm("candidate").kind == "passive" and not identical),
                       f"{infra} grading(s) were infrastructure failures: those runs are quarantined")  # fmt: skip
    static_reasons = list(reasons)  # what no later audit changes; the rows' dispositions are re-read later
    reasons += row_reasons
    admissible = not reasons
    resolved_pairs = {name: {key: value == "resolved" for key, value in outcomes[name].items()} for name in outcomes}
    delta, significant, test = ab.compare(resolved_pairs["baseline"], resolved_pairs["candidate"], manifest.seeds, tasks,
                                          manifest.alpha, admissible)  # fmt: skip
    mean_resolved = {name: sum(c) / len(c) for name, c in per_seed.items()}
    recommendation, why = ab.recommend(delta, significant, costs_per_seed, mean_resolved, manifest.max_dollars_per_extra_resolve,
                                       task_set.record.role, seeds=len(manifest.seeds))  # fmt: skip
    record = ab.ABComparison(manifest.change_under_test, manifest.frozen, tuple(arms), manifest.seeds,
                             ab.ComparisonResult(delta, significant, recommendation))  # fmt: skip
    from .ab_inference import cost_distributions, pass_at_k_interval

    seeds = len(manifest.seeds)
    pass_k = {name: {f"pass@{k}": _mean([ab.pass_at_k(seeds, c, k) for c in per_task[name].values()])
                     for k in sorted({1, seeds})} for name in per_task}  # fmt: skip
    pass_k_intervals = {name: {f"pass@{k}": pass_at_k_interval([(seeds, c) for c in per_task[name].values()], k,
                                                                 manifest.alpha)
                               for k in sorted({1, seeds})} for name in per_task}  # fmt: skip
    cost_distribution = {spec.name: cost_distributions(
        [(task, _known_dollars(by_prediction[(f"ab:{manifest.name}/{spec.name}/seed{seed}", task)]))
         for seed in manifest.seeds for task in tasks], manifest.alpha) for spec in manifest.arms}  # fmt: skip
    details = {
        "benchmark": dict(manifest.benchmark),
        "task_set": task_set.record.set_id,
        "tasks": n,
        "task_digests": sorted(task_id for task_id, _ in eligible),
        "arm_kinds": [asdict(a) for a in manifest.arms],
        "admissible": admissible,
        "inadmissible_because": reasons,
        "inadmissible_fixed": static_reasons,
        "environment_parity": environment_parity(manifest, tasks, by_prediction),
        "infrastructure_failures": infra,
        "test": test,
        "recommendation_because": why,
        "per_task_resolved_seeds": per_task,
        "pass_at_k": pass_k,
        "pass_at_k_intervals": pass_k_intervals,
        "cost_distribution": cost_distribution,
        "dollars_per_seed": costs_per_seed,
        "outcomes_identical": identical,
        "role": task_set.record.role,
        "identity": [
            {"benchmark_id": manifest.benchmark["id"], "benchmark_revision": manifest.benchmark["revision"],
             "task_set": task_set.record.set_id, "task_stratum": "unknown", "environment_digest": manifest.frozen.environment_image,
             "interpreter": python, "verifier_revision": _verifier(), "model_id": manifest.frozen.model, "model_revision": "unknown",
             "harness_id": spec.name, "harness_revision": spec.harness_version, "policy_profile": spec.kind,
             "seeds": list(manifest.seeds), "budget": {"tokens": manifest.frozen.token_budget, "tools": manifest.frozen.tool_budget}}
            for spec in manifest.arms
        ],  # fmt: skip
    }
    beside = against_gold_per_arm(manifest, tasks, by_prediction)
    if beside is not None:  # ``ab run --against-gold``: the second figure, never the comparison's own
        details["against_gold"] = beside
    return record.to_dict(), details


def against_gold_per_arm(manifest: ab.Manifest, tasks: Sequence[str],
                         by_prediction: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Any] | None:  # fmt: skip
    """Per arm, resolved and free of regressions against gold (:func:`.against_gold.summarise`), over
    every seed and task; None when the gradings did not ask for the check."""
    from .against_gold import summarise

    arms: dict[str, Any] = {}
    for spec in manifest.arms:
        rows = [by_prediction[(f"ab:{manifest.name}/{spec.name}/seed{seed}", task)] for seed in manifest.seeds for task in tasks]
        checks = [r["against_gold"] if isinstance(r.get("against_gold"), Mapping) else {} for r in rows]
        summary = summarise((c.get("status"), c.get("resolved_against_gold")) for c in checks)
        if summary is not None:
            summary["resolved"] = sum(r["failure_class"] == "resolved" for r in rows)
        arms[spec.name] = summary
    return arms if any(v is not None for v in arms.values()) else None


def fixed_reasons(manifest: ab.Manifest, undeclared: Sequence[str], identical: bool) -> list[str]:
    """Why a comparison's evidence is not admissible, whatever later audits say: what its arms could
    reach (as declared in the manifest), frozen fields its runs did not declare, and a passive
    candidate arm that changed an official outcome (treatment integrity)."""
    _, reasons = ab.access_findings(manifest)
    reasons = list(reasons)
    if undeclared:
        reasons.append(f"frozen fields not declared by the runs (unknown): {', '.join(undeclared)}")
    if manifest.arm("candidate").kind == "passive" and not identical:
        reasons.append("the passive candidate arm changed official outcomes: treatment integrity fails (a passive arm "
                       "observes and decides nothing)")  # fmt: skip
    return reasons


def _known_dollars(row: dict[str, Any]) -> dict[str, Any]:
    """A graded row's cost, its dollars unknown (None) when the harness did not report its model's."""
    cost = dict(row.get("cost") or {})
    if (row.get("cost_breakdown") or {}).get("model_dollars") is None:
        cost["dollars"] = None
    return cost


def _quarantined_rows(dispositions: Sequence[str | None], reasons: Sequence[Sequence[str] | None]) -> list[str]:
    """One line per disposition that makes runs inadmissible, with every reason code and its count."""
    lines = []
    for kind in ("invalid", "quarantined"):
        counts: dict[str, int] = {}
        for disposition, codes in zip(dispositions, reasons):
            if disposition == kind:
                for code in codes or ["unknown"]:
                    counts[code] = counts.get(code, 0) + 1
        if counts:
            lines.append(f"{kind} runs are not admissible: " + ", ".join(f"{code} ({n})" for code, n in sorted(counts.items())))
    return lines


def environment_parity(manifest: ab.Manifest, tasks: Sequence[str],
                       by_prediction: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """Whether every grading of a task, in both arms and on every seed, ran in one environment (the
    interpreter's installed packages, probed before the run and recorded with each grading)."""
    per_arm: dict[str, set[str]] = {}
    differing = []
    for task in tasks:
        seen = set()
        for spec in manifest.arms:
            for seed in manifest.seeds:
                row = by_prediction[(f"ab:{manifest.name}/{spec.name}/seed{seed}", task)]
                value = str(row.get("environment_digest") or "unknown")
                seen.add(value)
                per_arm.setdefault(spec.name, set()).add(value)
        if len(seen) > 1:
            differing.append(task)
    unknown = any("unknown" in values for values in per_arm.values())
    why = None
    if differing:
        why = f"{len(differing)} task(s) graded in different environments across arms or seeds: {', '.join(differing[:5])}"
    elif unknown:
        why = "an environment's packages could not be recorded (an image, or an interpreter too old to list them)"
    return {"identical": not differing and not unknown, "digests": {k: sorted(v) for k, v in per_arm.items()}, "why": why}


def reassess(ledger: Any, record: dict[str, Any], details: dict[str, Any], *, name: str,
             pending: bool = False) -> dict[str, Any]:  # fmt: skip
    """The comparison's details with its claim recomputed against the ledger now (the runs' dispositions
    under the current audits, every experiment on the same change, replications elsewhere); a claim
    lower than the one stored is a downgrade, and says why. ``pending``: the comparison being written."""
    from .ab_claims import LEVELS, c2_blockers, claim_level
    from .audit_ledger import audits

    recorded_audits = audits(ledger)
    details = _admissible_now(ledger, details, recorded_audits)
    stored = None if pending else details.get("claim")
    family = experiment_family(ledger, record["change_under_test"], name, record, details)
    adjusted = family["holm"]
    details["family"] = {k: v for k, v in family.items() if k not in ("holm", "comparisons")}
    holm_p = adjusted.get(name)
    replications = []
    for other in family["comparisons"]:
        if other["name"] == name:
            continue
        if not other["borne_out"]:  # a comparison whose summary its graded runs do not bear out replicates nothing
            continue
        now = _admissible_now(ledger, other["details"], recorded_audits)  # as this one: under today's audits
        blockers = c2_blockers(now, other["record"], adjusted.get(other["name"]))
        replications.append({"name": other["name"], "benchmark": now["benchmark"]["id"],
                             "problem_digests": now.get("problem_digests"), "c2": not blockers})  # fmt: skip
    level, reasons = claim_level(details, record, holm_p=holm_p, replications=replications)
    details["holm_p_value"] = holm_p
    details["claim"], details["claim_reasons"] = level, reasons
    details.pop("claim_downgraded", None)
    if stored in LEVELS and LEVELS.index(level) < LEVELS.index(stored):
        details["claim_downgraded"] = {"from": stored, "to": level,
                                       "because": [r for r in reasons if r.startswith("not ")]}  # fmt: skip
    if not pending and stored is not None:
        details["claim_when_written"] = stored
    return details


def _admissible_now(ledger: Any, details: dict[str, Any], recorded_audits: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A comparison's details with its admissibility recomputed: every graded run's disposition re-read
    under its task's audit as it stands now (a comparison without ``graded_runs`` keeps its own)."""
    from .integrity import recombine

    details = dict(details)
    graded = details.get("graded_runs")
    if graded is None:
        return details
    wanted = {r["seq"]: r["task_id"] for r in graded}
    dispositions, codes = [], []
    for entry in ledger.entries("score"):
        if entry.seq in wanted:
            data = entry.data
            state, reasons, _ = recombine([*(data.get("reasons") or []), *(data.get("info") or [])], data.get("disposition"),
                                          _audit_for(recorded_audits, wanted[entry.seq]))  # fmt: skip
            dispositions.append(state)
            codes.append(reasons)
    now = [*(details.get("inadmissible_fixed") or []), *_quarantined_rows(dispositions, codes)]
    details["inadmissible_because"], details["admissible"] = now, not now
    return details


def _audit_for(recorded_audits: Sequence[dict[str, Any]], task_id: str) -> dict[str, Any]:
    import time

    from .integrity import audit_state

    return audit_state(recorded_audits, task_id, int(time.time()))


def experiment_family(ledger: Any, change: str, name: str, record: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    """Every experiment preregistered in this ledger on ``change`` however it is spelled (the same
    :func:`.identity.text_key`: case, punctuation, spacing, invisible and look-alike characters folded) or
    declared the same change by a manifest's ``change_relation`` (:func:`.ab.change_family`), this one
    included (a spelling that differs from it by a sign and was declared ``different_from`` it is not:
    :func:`.ab.in_family`), whatever became of them: each one's status and primary p-value, Holm-adjusted over all of
    them (one not yet run counts as p = 1, and so does one recorded by an older version, whose p-value
    pooled (seed, task) pairs)."""
    from .ab_inference import holm
    from .identity import text_key

    entries = list(ledger.entries("ab_manifest"))
    stated = [e.data["manifest"] for e in entries if isinstance(e.data.get("manifest"), dict)]
    links, splits = ab.change_links(stated), ab.change_splits(stated)
    keys = ab.change_family(change, links)
    manifests: dict[str, dict[str, Any]] = {}
    for entry in entries:
        data = entry.data
        spelled = (data.get("manifest") or {}).get("change_under_test")
        if isinstance(spelled, str) and ab.in_family(change, spelled, keys, splits):
            manifests.setdefault(data["name"], {"seq": entry.seq, "benchmark": (data["manifest"].get("benchmark") or {}).get("id"),
                                                "change_under_test": spelled})  # fmt: skip
    declared = [{"change": m["change_under_test"], **r} for m in stated
                if isinstance(m.get("change_under_test"), str) and text_key(m["change_under_test"]) in keys
                for r in _relations(m)]  # fmt: skip
    comparisons: dict[str, dict[str, Any]] = {}
    for entry in ledger.entries("ab_comparison"):
        if entry.data["name"] in manifests or entry.data["name"] == name:
            comparisons[entry.data["name"]] = {"name": entry.data["name"], "record": entry.data["record"],
                                               "details": entry.data["details"],
                                               "jobs_digest": entry.data.get("jobs_digest")}  # fmt: skip
    comparisons[name] = {"name": name, "record": record, "details": details}
    manifests.setdefault(name, {"seq": None, "benchmark": details["benchmark"]["id"]})
    p_values = {n: _primary_p(comparisons[n]["details"]) if n in comparisons else None for n in manifests}
    for other, compared in comparisons.items():  # another comparison its graded runs do not bear out: p = 1
        compared["borne_out"] = other == name or not recomputed(ledger, compared)[1]
        if not compared["borne_out"]:
            p_values[other] = None
    adjusted = holm(p_values)
    members = []
    for member, info in sorted(manifests.items(), key=lambda item: (item[1]["seq"] is None, item[1]["seq"] or 0)):
        found = comparisons.get(member)
        result = found["record"]["result"] if found else {}
        members.append({"name": member, "benchmark": info["benchmark"], "preregistered_seq": info["seq"],
                        "change_under_test": info.get("change_under_test", change),
                        "status": "compared" if found else "preregistered, not run", "delta": result.get("delta"),
                        "significant": result.get("significant"), "recommendation": result.get("recommendation"),
                        "p_value": p_values[member], "holm_p_value": adjusted[member],
                        "interval": ((found["details"].get("test") or {}).get("interval") if found else None),
                        "claim_when_written": (found["details"].get("claim") if found and member != name else None)})  # fmt: skip
    return {"change_under_test": change, "experiments": len(members), "members": members, "holm": adjusted,
            "comparisons": list(comparisons.values()), "declared": declared,
            "correction": "Holm step-down over every experiment preregistered on this change, however spelt or "
                          "declared the same (not run: p = 1)"}  # fmt: skip


def _relations(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """A preregistered manifest's ``change_relation`` declarations as written (a malformed one: none)."""
    if "change_relation" not in manifest:
        return []
    try:
        return [{"relation": r.relation, "to": r.change, "reason": r.reason}
                for r in ab.parse_relations(manifest["change_relation"], "")]  # fmt: skip
    except ab.ABError:
        return []


def _primary_p(details: dict[str, Any]) -> float | None:
    test = details.get("test") or {}
    value = test.get("p_value")
    if value is None or not test.get("primary"):  # not a task-level test: counts as p = 1
        return None
    return float(value)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _verifier() -> str:
    from . import __version__

    return f"pytest-objective-scoring/{__version__}"


def recomputed(ledger: Any, output: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A recorded comparison's details with its outcomes and primary test recomputed from the graded
    runs it names (their score entries in ``ledger``), and every way the stored summary disagrees
    with them. A claim is read from this, never from the stored summary alone: a row appended by
    hand that says "20 tasks" for a 3-task experiment, or a resolve count edited in place, is a
    disagreement, and the reader gives no claim.

    What is checked: every graded run is a score entry of this experiment (``ab:NAME/ARM/seedN``), one
    per arm, seed and task; the digest of their job keys is the comparison's ``jobs_digest`` (the
    jobs planned from the pinned predictions and the task set); the resolve counts per seed and per
    task, the number of tasks and the primary test's Δ and p-value follow from their outcomes; none of
    them is an infrastructure failure (an earlier version counted one as unresolved)."""
    import hashlib

    name, record, details = output["name"], output["record"], dict(output["details"])
    graded = details.get("graded_runs")
    if not graded:
        return details, ["the comparison names no graded runs (written by an earlier version): its claim cannot be "
                         "recomputed from evidence"]  # fmt: skip
    wanted = {int(r["seq"]) for r in graded}
    found = {e.seq: e.data for e in ledger.entries("score") if e.seq in wanted}
    problems = []
    missing = sorted(wanted - set(found))
    if missing:
        problems.append(f"graded run(s) {', '.join(map(str, missing[:5]))} are not score entries of this ledger")
    arms = [arm["name"] for arm in record["arms"]]
    seeds = [int(s) for s in record["seeds"]]
    outcomes: dict[str, dict[tuple[int, str], bool]] = {arm: {} for arm in arms}
    prefix = f"ab:{name}/"
    keys = []
    for seq, data in sorted(found.items()):
        model = str(data.get("model_name_or_path") or "")
        arm, _, seed_text = model[len(prefix):].partition("/seed") if model.startswith(prefix) else ("", "", "")
        if arm not in outcomes or not seed_text.isdigit() or int(seed_text) not in seeds:
            problems.append(f"graded run {seq} ({model or 'no model'}) is not a run of experiment {name!r}")
            continue
        key = (int(seed_text), str(data.get("instance_id")))
        if key in outcomes[arm]:
            problems.append(f"graded run {seq}: {arm} seed {key[0]} {key[1]} is graded twice")
        if data.get("outcome") == "infrastructure_failure":  # written by an earlier version, which counted it unresolved
            problems.append(f"graded run {seq}: {arm} seed {key[0]} {key[1]} is an infrastructure failure, an outcome "
                            "of neither arm")  # fmt: skip
        outcomes[arm][key] = data.get("outcome") == "resolved"
        keys.append(str(data.get("job_key")))
    tasks = sorted({task for arm in arms for _, task in outcomes[arm]})
    for arm in arms:
        lacking = [(s, t) for s in seeds for t in tasks if (s, t) not in outcomes[arm]]
        if lacking:
            problems.append(f"arm {arm}: {len(lacking)} (seed, task) pair(s) have no graded run")
    registered, pin = _first(ledger, "ab_manifest", name), _first(ledger, "ab_predictions", name)
    problems += _pinned_problems(name, registered, pin, found, {arm: set(outcomes[arm]) for arm in arms})
    if problems:
        return details, problems
    problems += _from_preregistration(ledger, registered, pin, details, found, outcomes)
    if problems:
        return details, problems
    digest = "sha256:" + hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()
    if output.get("jobs_digest") is not None and digest != output["jobs_digest"]:
        problems.append("the graded runs are not the jobs the comparison planned (their job keys' digest differs)")
    if details.get("tasks") != len(tasks):
        problems.append(f"the stored summary says {details.get('tasks')} task(s); its graded runs cover {len(tasks)}")
    for arm in record["arms"]:
        counts = [sum(outcomes[arm["name"]][(s, t)] for t in tasks) for s in seeds]
        if list(arm["resolved"]) != counts:
            problems.append(f"arm {arm['name']}: the stored resolve counts {list(arm['resolved'])} are not its graded "
                            f"runs' {counts}")  # fmt: skip
    per_task = {arm: {t: sum(outcomes[arm][(s, t)] for s in seeds) for t in tasks} for arm in arms}
    if details.get("per_task_resolved_seeds") != per_task:
        problems.append("the stored per-task resolve counts are not its graded runs'")
    if "baseline" in outcomes and "candidate" in outcomes and tasks:
        alpha = float((details.get("test") or {}).get("alpha") or 0.05)
        delta, significant, test = ab.compare(outcomes["baseline"], outcomes["candidate"], seeds, tasks, alpha,
                                              bool(details.get("admissible")))  # fmt: skip
        stored = details.get("test") or {}
        # a p-value recorded under an earlier degrees-of-freedom rule differs from today's on the same runs:
        # checked only under one rule (the claim is read from today's test, recomputed, either way)
        same_rule = stored.get("degrees_of_freedom_rule") == test.get("degrees_of_freedom_rule")
        if abs(float(record["result"]["delta"]) - delta) > 1e-9 or (
                same_rule and abs(float(stored.get("p_value", -1)) - test["p_value"]) > 1e-9):  # fmt: skip
            problems.append(f"the stored delta or p-value ({record['result']['delta']:+.4f}, p = {stored.get('p_value')}) "
                            f"are not its graded runs' ({delta:+.4f}, p = {test['p_value']:.4g})")  # fmt: skip
        elif same_rule and record["result"].get("significant") != significant:
            problems.append(f"the stored significance {record['result'].get('significant')!r} is not its graded runs' "
                            f"({significant!r})")  # fmt: skip
        details["test"] = {**stored, **{k: v for k, v in test.items() if k != "secondary"},
                           "secondary": test.get("secondary", stored.get("secondary"))}  # fmt: skip
        recommended = _recommendation(ledger, name, registered, details, found, outcomes, seeds, tasks, alpha)
        if recommended is not None and recommended[0] != record["result"].get("recommendation"):
            problems.append(f"the stored recommendation {record['result'].get('recommendation')!r} is not what its "
                            f"evidence gives ({recommended[0]!r}: {recommended[1]})")  # fmt: skip
    details["evidence"] = {"graded_runs": len(found), "tasks": len(tasks), "recomputed": not problems}
    return details, problems


def _recommendation(ledger: Any, name: str, registered: dict[str, Any] | None, details: dict[str, Any],
                    runs: dict[int, dict[str, Any]],
                    outcomes: dict[str, dict[tuple[int, str], bool]], seeds: Sequence[int], tasks: Sequence[str],
                    alpha: float) -> tuple[str, str] | None:  # fmt: skip
    """The Piper-rule recommendation as the comparison was written, recomputed from its evidence: the
    outcomes, the admissibility of its runs as recorded, their costs (the ledger's ``cost`` entries of
    the graded runs) and the preregistered cap; None when the preregistration cannot be read."""
    try:
        manifest = ab.parse_manifest((registered or {}).get("manifest"), name)
    except ab.ABError:
        return None
    admissible = not details.get("inadmissible_fixed") and not _quarantined_rows(
        [r.get("disposition") for r in runs.values()], [r.get("reasons") for r in runs.values()])  # fmt: skip
    delta, significant, _ = ab.compare(outcomes["baseline"], outcomes["candidate"], seeds, tasks, alpha, admissible)
    costs: dict[int, dict[str, Any]] = {}
    for entry in ledger.entries("cost"):
        if entry.data.get("score_seq") in runs:
            costs[int(entry.data["score_seq"])] = entry.data
    per_seed: dict[str, float | None] = {}
    for arm in ("baseline", "candidate"):
        prefix = f"ab:{name}/{arm}/"
        dollars: list[float | None] = []
        for seq, data in runs.items():
            if str(data.get("model_name_or_path") or "").startswith(prefix):
                cost = costs.get(seq) or {}
                known = (cost.get("breakdown") or {}).get("model_dollars") is not None
                dollars.append((cost.get("cost") or {}).get("dollars") if known else None)
        known_dollars = [float(d) for d in dollars if d is not None]
        per_seed[arm] = None if not dollars or len(known_dollars) < len(dollars) else sum(known_dollars) / len(seeds)
    mean = {arm: sum(outcomes[arm][(s, t)] for s in seeds for t in tasks) / len(seeds) for arm in ("baseline", "candidate")}
    return ab.recommend(delta, significant, per_seed, mean, manifest.max_dollars_per_extra_resolve,
                        str(details.get("role") or "regression"), seeds=len(seeds))  # fmt: skip


def _pinned_problems(name: str, registered: dict[str, Any] | None, pin: dict[str, Any] | None,
                     runs: dict[int, dict[str, Any]], graded: dict[str, set[tuple[int, str]]]) -> list[str]:  # fmt: skip
    """How the graded runs differ from what the experiment pinned before its first grading: its
    predictions (``ab_predictions``: each arm's (seed, task) and its patch's digest) less the tasks its
    preregistration excluded (``ab_manifest``). A comparison over a subset of them (the tasks one arm
    happened to win), or over other patches, is not the experiment's."""
    if pin is None or registered is None:
        return [f"experiment {name!r} has no pinned predictions or no preregistration in this ledger: its graded runs "
                "cannot be tied to it"]  # fmt: skip
    excluded = {str(t.get("instance_id")) for t in registered.get("excluded_tasks") or [] if isinstance(t, dict)}
    problems = []
    pinned_patches: dict[tuple[str, int, str], Any] = {}
    for arm, rows in (pin.get("arms") or {}).items():
        for key, row in (rows or {}).items():
            task, _, seed = str(key).rpartition(" seed ")
            if seed.isdigit() and task not in excluded:
                pinned_patches[(arm, int(seed), task)] = (row or {}).get("model_patch")
    expected = set(pinned_patches)
    got = {(arm, seed, task) for arm, pairs in graded.items() for seed, task in pairs}
    if got != expected:
        problems.append(f"the graded runs are not the pinned predictions: {len(expected - got)} pinned (arm, seed, task) "
                        f"without a graded run, {len(got - expected)} graded but not pinned")  # fmt: skip
    for seq, data in runs.items():
        model = str(data.get("model_name_or_path") or "")
        parts = model[len(f"ab:{name}/"):].split("/seed")
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        pinned = pinned_patches.get((parts[0], int(parts[1]), str(data.get("instance_id"))))
        if pinned is not None and data.get("patch_ref") is not None and data["patch_ref"] != pinned:
            problems.append(f"graded run {seq}: its patch is not the one pinned for it")
            break
    return problems


def _from_preregistration(ledger: Any, registered: dict[str, Any] | None, pin: dict[str, Any] | None,
                          details: dict[str, Any], runs: dict[int, dict[str, Any]],
                          outcomes: dict[str, dict[tuple[int, str], bool]]) -> list[str]:  # fmt: skip
    """The facts a claim rests on besides the outcomes, recomputed into ``details`` from the
    preregistration, the pinned predictions, the task set's own entries and the graded runs (never the
    stored summary): the task set's role, the arms' kinds and harness versions, the preregistered power,
    why the evidence is not admissible whatever the audits say (access, undeclared frozen fields, a
    passive arm that changed outcomes), and the environment parity of the runs. Returns the problems (a
    preregistration that cannot be read, a pinned task set the ledger does not hold)."""
    from dataclasses import asdict

    name = str((registered or {}).get("name"))
    try:
        manifest = ab.parse_manifest((registered or {}).get("manifest"), f"the preregistration of {name!r}")
    except ab.ABError as exc:
        return [f"its preregistered manifest cannot be read ({exc})"]
    role = _pinned_role(ledger, (registered or {}).get("task_set"))
    if role is None:
        return [f"the task set its preregistration pinned ({((registered or {}).get('task_set') or {}).get('set_id')}) "
                "is not in this ledger with the tasks pinned: its role cannot be read from evidence"]  # fmt: skip
    if details.get("role") not in (None, role):
        return [f"the stored summary says the task set's role is {details.get('role')!r}; the set it pinned is {role!r}"]
    details["role"] = role
    undeclared: set[str] = set()
    for rows in ((pin or {}).get("arms") or {}).values():
        for row in (rows or {}).values():
            undeclared |= set(ab.frozen_mismatches((row or {}).get("frozen") or {}, manifest.frozen)[1])
    details["arm_kinds"] = [asdict(a) for a in manifest.arms]
    if (registered or {}).get("power") is not None:
        details["power"] = registered["power"]  # type: ignore[index]
    details["inadmissible_fixed"] = fixed_reasons(manifest, sorted(undeclared),
                                                  outcomes.get("baseline") == outcomes.get("candidate"))  # fmt: skip
    per_task: dict[str, set[str]] = {}
    for data in runs.values():
        per_task.setdefault(str(data.get("instance_id")), set()).add(str(data.get("environment_digest") or "unknown"))
    differing = sorted(task for task, seen in per_task.items() if len(seen) > 1)
    unknown = any("unknown" in seen for seen in per_task.values())
    why = (f"{len(differing)} task(s) graded in different environments across arms or seeds: {', '.join(differing[:5])}"
           if differing else "an environment's packages could not be recorded (an image, or an interpreter too old to "
           "list them)" if unknown else None)  # fmt: skip
    details["environment_parity"] = {**(details.get("environment_parity") or {}),
                                     "identical": not differing and not unknown, "why": why}  # fmt: skip
    return []


def _pinned_role(ledger: Any, pinned: Any) -> str | None:
    """The role (regression, development, holdout_live) of the task set version a preregistration
    pinned, read from the set's own entries in the ledger (a role is fixed when a version is created),
    or None when the ledger holds no such version with the pinned tasks."""
    from .sets import SetError, resolve_set, tasks_digest

    if not isinstance(pinned, dict) or not isinstance(pinned.get("set_id"), str):
        return None
    try:
        state = resolve_set(ledger, pinned["set_id"])
    except (SetError, KeyError, ValueError):
        return None
    return str(state.record.role) if tasks_digest(state.record.task_ids) == pinned.get("tasks_digest") else None


def _first(ledger: Any, kind: str, name: str) -> dict[str, Any] | None:
    """The first entry of ``kind`` for experiment ``name``: an experiment is preregistered and pinned
    once, so a later row of the same name (appended by hand) never replaces what it pinned."""
    for entry in ledger.entries(kind):
        if entry.data.get("name") == name:
            return dict(entry.data)
    return None

