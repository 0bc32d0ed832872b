"""Batch grading (``objective-score grade-batch``): many predictions, one ledger.

A SWE-bench predictions file (JSONL, a JSON list, or a JSON object keyed by
instance id) is joined to a dataset; each prediction becomes a :class:`Job` with
a content-addressed key. Jobs run on local threads (each grading is mostly a
pytest subprocess) or on a Dask distributed cluster; results come back to the
client, which alone writes the ledger, one run per transaction, as each one
arrives. A job whose key is already in the ledger is not graded again: an
interrupted batch resumes where it stopped.

Why over 800 lines: reading predictions, keying jobs, recording results and SWE-bench's
per-instance reports and logs are one contract with the ledger (a job key decides what is
resumed, what is recorded and where its logs go), so they stay together; the engine that
grades many jobs with claims is :mod:`.jobs` and the command is in :mod:`.commands`.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    BinaryIO,
    Callable,
    Final,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)

from . import against_gold, nesting
from .cost_ledger import (
    INFRA_CLASSES,
    CostError,
    HarnessCost,
    NotJson,
    input_problem,
    loads,
    parse_harness_cost,
)
from .environments import Environment
from .instances import Instance
from .ledger import Ledger, canonical, run_entries

__all__ = [
    "BatchError",
    "Job",
    "Prediction",
    "benchmark_of",
    "failure_outcome",
    "fitted",
    "grade_job",
    "load_predictions",
    "plan_jobs",
    "recorded_jobs",
    "run_id_part",
]

GOLD: Final = "gold"
OUTCOMES: Final = ("resolved", "not_resolved", "patch_did_not_apply", "infrastructure_failure")


class BatchError(ValueError):
    """Bad input to a batch: names the file, the row and what was expected."""


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model: str
    patch: str | None
    cost: HarnessCost
    source: str
    plan: tuple[str, ...] | None = None
    retrieval: tuple[str, ...] | None = None
    # a patch over the size limit is kept only as its first limit + 1 bytes (enough to be refused as
    # patch_too_large), with the whole patch's size and content address
    oversize: tuple[int, str] | None = None


@dataclass(frozen=True)
class Job:
    key: str
    instance: Instance
    prediction: Prediction
    repo: Path | None  # None only in container mode without a checkout: the image holds the repository
    patch: str
    python: str | None = None  # the interpreter this job is graded with (settings' python when None)
    image: str | None = None  # the container image, in container mode
    environment: str = ""  # where python / image came from: "FILE ['key']", "--python", ...
    runner: str | None = None  # the environment's runner and test command, over SWE-bench's table
    test_cmd: str | None = None

    def payload(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Everything a worker needs, as plain data (it may cross to another machine)."""
        return {
            "key": self.key,
            "instance": dict(self.instance.fields),
            "instance_source": self.instance.source,
            "repo": None if self.repo is None else str(self.repo),
            "patch": self.patch,
            "model": self.prediction.model,
            "cost": {"tokens": self.prediction.cost.tokens, "calls": self.prediction.cost.calls,
                     "dollars": self.prediction.cost.dollars},  # fmt: skip
            "plan": list(self.prediction.plan) if self.prediction.plan is not None else None,
            "retrieval": list(self.prediction.retrieval) if self.prediction.retrieval is not None else None,
            "patch_ref": self.prediction.oversize[1] if self.prediction.oversize else None,
            **settings,
            "python": self.python if self.python is not None else settings.get("python"),
            "image": self.image,
            "environment": self.environment,
            "runner": self.runner,
            "test_cmd": self.test_cmd,
        }


# ---------------------------------------------------------------------- reading predictions


def _rows(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    stripped = text.strip()
    if not stripped:
        raise BatchError(f"{path}: the file is empty: expected JSONL, a JSON list or a JSON object of predictions")
    if stripped[0] in "[{" and not path.name.endswith(".jsonl"):
        try:
            value = loads(text)
        except NotJson as exc:
            raise BatchError(f"{path}: {exc}") from None
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise BatchError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        else:
            if isinstance(value, list):
                for index, row in enumerate(value):
                    yield f"{path} [item {index}]", row
            elif isinstance(value, dict) and "instance_id" in value and ("model_patch" in value or "model_name_or_path" in value):
                yield str(path), value
            elif isinstance(value, dict):
                for key, row in value.items():  # SWE-agent's preds.json: {instance_id: prediction}
                    if isinstance(row, dict):
                        row = {"instance_id": key, **row}
                    yield f"{path} [{key!r}]", row
            else:
                raise BatchError(f"{path}: expected predictions as JSONL, a JSON list or a JSON object")
            return
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield f"{path}:{lineno}", _line_row(path, lineno, line)


def _line_row(path: Path, lineno: int, line: str) -> Any:
    """One JSONL line's row; a line that is not one JSON value is a :class:`BatchError` naming it."""
    try:
        return loads(line)
    except NotJson as exc:
        raise BatchError(f"{path}:{lineno}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BatchError(f"{path}:{lineno}: invalid JSON in JSONL line: {exc.msg}") from None


def read_rows(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """``(where, row)`` for every row of a JSONL, JSON list or JSON object file (where: file and line or item)."""
    return _rows(path, text)


def _bounded(patch: str | None, limit: int | None) -> tuple[str | None, tuple[int, str] | None]:
    """A patch over ``limit`` bytes cut to its first ``limit + 1`` (the runner refuses it unread), with
    the whole one's size and content address (hashed a slice at a time: never a second whole copy);
    any other patch as it is."""
    if patch is None or limit is None or len(patch) <= limit // 4:  # 4 bytes at most per character
        return patch, None
    digest, size, step = hashlib.sha256(), 0, 1 << 20
    for start in range(0, len(patch), step):
        chunk = patch[start : start + step].encode("utf-8", "surrogateescape")
        digest.update(chunk)
        size += len(chunk)
    if size <= limit:
        return patch, None
    return patch[: limit + 1], (size, "sha256:" + digest.hexdigest())


HEAD: Final = 1 << 16  # what is looked at to tell JSONL from one JSON document
# The most read at once: one JSONL line (a prediction and its patch: --max-patch-size is at most 1 GiB) or
# a whole JSON document. A pipe that never ends (`cat /dev/zero |`) is refused at it, never read until the
# machine runs out of memory.
MAX_READ: Final = (1 << 30) + (1 << 24)
PREDICTIONS_EXPECTED: Final = "JSONL, a JSON list or a JSON object of predictions"


def _looks_jsonl(path: Path, head: bytes) -> bool:
    """A ``.jsonl`` file, or one whose first line is a whole JSON object followed by more."""
    if path.name.endswith(".jsonl"):
        return True
    return head.lstrip()[:1] == b"{" and b"\n{" in head.replace(b"\r\n", b"\n")


def _lines(head: bytes, handle: BinaryIO, path: Path) -> Iterator[bytes]:
    """The lines (split at ``\\n`` only, as a file in binary mode is) of ``head`` and then of the rest of
    ``handle``, which ``head`` was read from: the file is read once, as a pipe can only be."""
    *whole, rest = head.split(b"\n")
    for line in whole:
        yield line + b"\n"
    del whole
    rest += handle.readline(MAX_READ + 1)
    while rest:
        if len(rest) > MAX_READ and not rest.endswith(b"\n"):
            raise BatchError(f"{path}: a line longer than {MAX_READ >> 20} MiB: expected JSON Lines of predictions (a "
                             "patch is at most 1 GiB)")  # fmt: skip
        yield rest
        rest = handle.readline(MAX_READ + 1)


def _stream_jsonl(path: Path, lines: Iterable[bytes]) -> Iterator[tuple[str, Any]]:
    """The rows of a JSONL file read a line at a time (a huge row is held once, not the whole file)."""
    for lineno, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BatchError(f"{path}:{lineno}: not UTF-8 text ({exc.reason} at byte {exc.start} of the line)") from None
        del raw
        if line.strip():
            yield f"{path}:{lineno}", _line_row(path, lineno, line)


def _prediction_rows(path: Path) -> Generator[tuple[str, Any], None, None]:
    """The rows of a predictions file, which is opened and read once (:func:`.inputs.open_input`: a
    named pipe nobody writes to and a device are refused at once; ``<(...)`` and ``-``, standard
    input, are read as they come): JSONL a line at a time, anything else whole."""
    import stat
    import sys

    from .inputs import NO_WRITER, InputProblem, open_input

    try:
        handle = open_input(path)
    except InputProblem as exc:
        raise BatchError(f"{path}: {input_problem(path, str(exc), PREDICTIONS_EXPECTED)}") from None
    try:
        head = handle.read(HEAD)
        if not head and str(path) != "-" and stat.S_ISFIFO(os.fstat(handle.fileno()).st_mode):
            raise BatchError(f"{path}: {NO_WRITER}")
        if head.strip() and _looks_jsonl(path, head):
            yield from _stream_jsonl(path, _lines(head, handle, path))
            return
        data = head + handle.read(MAX_READ + 1 - len(head))
        del head
        if len(data) > MAX_READ:
            raise BatchError(f"{path}: larger than {MAX_READ >> 20} MiB as one JSON document: expected JSON Lines "
                             "(read a line at a time) for a file this large")  # fmt: skip
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BatchError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        del data
        yield from _rows(path, text)
    except OSError as exc:
        raise BatchError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def load_predictions(path: str | Path, max_patch_bytes: int | None = None) -> list[Prediction]:
    """Every prediction of a file, validated; duplicates of (instance, model) are refused. A patch
    over ``max_patch_bytes`` is not kept whole (:class:`Prediction` ``oversize``): one at a time is
    held while the file is read, so memory grows with the largest patch, not with their sum. The
    file is read once (``<(...)`` and ``-`` work) and closed however the reading ends."""
    import contextlib

    path = Path(path)
    predictions: list[Prediction] = []
    seen: dict[tuple[str, str], str] = {}
    with contextlib.closing(_prediction_rows(path)) as rows:
        for where, row in rows:
            predictions.append(_prediction(where, row, seen, max_patch_bytes))
    if not predictions:
        raise BatchError(f"{path}: holds no predictions")
    return predictions


def _prediction(where: str, row: Any, seen: dict[tuple[str, str], str], max_patch_bytes: int | None) -> Prediction:
    """One row as a :class:`Prediction`, validated (``seen``: the (instance, model) pairs before it)."""
    if not isinstance(row, dict):
        raise BatchError(f"{where}: expected a JSON object with instance_id, model_name_or_path, model_patch")
    for name in ("instance_id", "model_name_or_path"):
        if not isinstance(row.get(name), str) or not row[name]:
            raise BatchError(f"{where}: field {name!r}: expected a non-empty string, got {row.get(name)!r}")
    patch = row.get("model_patch")
    if patch is not None and not isinstance(patch, str):
        raise BatchError(f"{where}: field 'model_patch': expected a string (a unified diff) or null, got {type(patch).__name__}")
    if patch is None and row["model_name_or_path"] != GOLD and "model_patch" not in row:
        raise BatchError(f"{where}: field 'model_patch' is missing (use null or \"\" for an empty patch)")
    try:
        cost = parse_harness_cost({k: v for k, v in row.items() if k != "model_name_or_path"}, where)
    except CostError as exc:
        raise BatchError(str(exc)) from None
    artifacts = {}
    for name in ("plan", "retrieval"):
        value = row.get(name)
        if value is not None:
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise BatchError(f"{where}: field {name!r}: expected a JSON list of non-empty strings")
            artifacts[name] = tuple(value)
    pair = (row["instance_id"], row["model_name_or_path"])
    if pair in seen:
        raise BatchError(f"{where}: a second prediction of {pair[1]!r} for {pair[0]!r} (first at {seen[pair]})")
    seen[pair] = where
    patch, oversize = _bounded(patch, max_patch_bytes)
    row.clear()
    return Prediction(pair[0], pair[1], patch, cost, where, **artifacts, oversize=oversize)


# ---------------------------------------------------------------------- planning


def benchmark_of(dataset: str | Path) -> str | None:
    """The benchmark a dataset's file name gives by default: the name before its first dot
    (``swe-bench-lite.jsonl``: ``swe-bench-lite``). None for standard input (``-``) and a path under
    ``/dev`` or ``/proc`` (``<(...)`` is ``/dev/fd/63``): such a name names no benchmark, and a
    benchmark called ``63`` would be ranked beside whatever else was read through that descriptor."""
    if str(dataset) == "-":
        return None
    absolute = os.path.abspath(dataset)
    if absolute.startswith(("/dev/", "/proc/")):
        return None
    return Path(absolute).name.split(".")[0] or None


def repo_dir(repos: Path, instance: Instance) -> tuple[Path | None, list[Path]]:
    """Where an instance's repository is checked out: DIR/owner/name, DIR/owner__name or DIR/name."""
    repo = instance.get("repo")
    if not isinstance(repo, str) or "/" not in repo:
        return None, []
    owner, name = repo.split("/", 1)
    tried = [repos / owner / name, repos / f"{owner}__{name}", repos / name]
    return next((p for p in tried if p.is_dir()), None), tried


def instance_digest(instance: Instance) -> str:
    """A sha256 of the canonical instance: the same task, whatever file it came from."""
    return hashlib.sha256(canonical(dict(instance.fields)).encode("utf-8")).hexdigest()


def checkout_identity(repo: Path, instance: Instance) -> str:
    """What the grading starts from. With a ``base_commit`` the copy is made at that commit, so
    the commit is the identity; without one the checkout's current state is copied, so it is
    the resolved path and a digest of every file's path, size and modification time."""
    if instance.base_commit:
        return f"commit:{instance.base_commit}"
    digest = hashlib.sha256(str(repo.resolve()).encode("utf-8", "surrogateescape"))
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo)
        if relative.parts and relative.parts[0] in (".git", "__pycache__", ".pytest_cache") or "__pycache__" in relative.parts:
            continue
        if path.is_file():
            stat = path.stat()
            digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return f"tree:{digest.hexdigest()}"


def job_key(instance: Instance, model: str, patch: str, settings: Mapping[str, Any], checkout: str = "",
            environment: Environment | None = None, oversize: tuple[int, str] | None = None) -> str:  # fmt: skip
    """What makes two gradings the same: the task, the checkout it starts from, the model, the
    patch and how it is graded (compat mode, interpreter, container image, network). The
    interpreter is the instance's own (``environment``) or the settings' ``python``; an image
    enters the key only when there is one, so keys of jobs without one are unchanged."""
    identity = {
        "instance": instance_digest(instance),
        "checkout": checkout,
        "model": model,
        "patch": hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest(),
        "compat": settings.get("compat"),
        "python": environment.python if environment is not None else settings.get("python"),
        "network": bool(settings.get("network")),
    }
    if environment is not None and environment.image is not None:
        identity["image"] = environment.image
    if environment is not None and (environment.runner is not None or environment.test_cmd is not None):
        identity["test_command"] = [environment.runner, environment.test_cmd]
    if settings.get("against_gold"):  # a wider check asked for: another grading (keys without it unchanged)
        identity["against_gold"] = settings["against_gold"]
    if oversize is not None:  # the whole patch's address, and the limit it was refused under
        identity["patch"] = oversize[1].split(":", 1)[-1]
        identity["max_patch_bytes"] = settings.get("max_patch_bytes")
    return hashlib.sha256(canonical(identity).encode("utf-8")).hexdigest()


def plan_jobs(
    instances: Sequence[Instance], predictions: Sequence[Prediction], repos: Path, settings: Mapping[str, Any],
    environments: Mapping[str, Environment] | None = None,
) -> list[Job]:
    """One job per prediction; refuses unknown instances and missing repositories, all named at once.

    ``environments`` (instance id -> :class:`~.environments.Environment`, from
    :func:`~.environments.assign`) gives each instance its interpreter or image; without it every
    job is graded with ``settings["python"]``. An instance graded in an image uses no checkout
    (the image holds the repository): its key names the image instead.
    """
    by_id = {i.instance_id: i for i in instances}
    checkouts: dict[tuple[Path, str], str] = {}
    problems: list[str] = []
    jobs: list[Job] = []
    for prediction in predictions:
        instance = by_id.get(prediction.instance_id)
        if instance is None:
            close = difflib.get_close_matches(prediction.instance_id, list(by_id), n=3)
            problems.append(f"{prediction.source}: instance {prediction.instance_id!r} is not in the dataset"
                            + (f" (did you mean {', '.join(close)}?)" if close else ""))  # fmt: skip
            continue
        environment = None if environments is None else environments.get(instance.instance_id)
        if environments is not None and environment is None:
            problems.append(f"{instance.source}: instance {instance.instance_id!r} has no environment")
            continue
        if environment is not None and environment.image is not None:
            repo, tried = None, list[Path]()  # container mode: the image holds the repository, no checkout is used
        else:
            repo, tried = repo_dir(repos, instance)
        if repo is None and (environment is None or environment.image is None):
            problems.append(
                f"{instance.source}: field 'repo': {instance.get('repo')!r} is not checked out under {repos}"
                + (f" (looked for {', '.join(map(str, tried))})" if tried else " (expected 'owner/name')")
            )
            continue
        patch = prediction.patch
        if prediction.model == GOLD and patch is None:
            patch = instance.patch or ""
        patch = patch or ""
        if repo is None:
            assert environment is not None
            checkout = f"image:{environment.image}" + (f" commit:{instance.base_commit}" if instance.base_commit else "")
        else:
            where = (repo, instance.base_commit or "")
            if where not in checkouts:
                checkouts[where] = checkout_identity(repo, instance)
            checkout = checkouts[where]
        key = job_key(instance, prediction.model, patch, settings, checkout, environment, prediction.oversize)
        if environment is None:
            jobs.append(Job(key, instance, prediction, repo, patch, settings.get("python"), None, "--python"))
        else:
            jobs.append(Job(key, instance, prediction, repo, patch, environment.python, environment.image, environment.source,
                            environment.runner, environment.test_cmd))  # fmt: skip
    if problems:
        shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
        raise BatchError("\n  ".join([f"{len(problems)} prediction(s) cannot be graded:", *shown]))
    return jobs


# ---------------------------------------------------------------------- grading one job


def grade_job(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Grade one job; runs on a local thread or a Dask worker. Returns the envelope.

    Never raises for the candidate's or the environment's failures: those are results.
    A bad instance (say, test ids that are not pytest node ids) is an infrastructure
    failure of class ``setup``, never the candidate's.
    """
    from .instances import parse_instance
    from .runner import BadInput, GradeRequest, grade_candidate

    instance = parse_instance(payload["instance"], payload.get("instance_source", "<batch>"))
    harness_cost = HarnessCost(harness=payload["model"], **payload["cost"])
    patch = payload["patch"].encode("utf-8", "surrogateescape")
    container: dict[str, Any] = {}
    if payload.get("image") is not None:
        if "image" not in {f.name for f in dataclasses.fields(GradeRequest)}:  # a worker of an older version
            return ungraded(payload, "setup", f"cannot be graded here: image {payload['image']!r} given, but this "
                            "version of the runner has no container mode", instance.instance_id)  # fmt: skip
        container["image"] = payload["image"]
        container["engine"] = payload.get("engine") or "auto"
    request = GradeRequest(
        repo=Path(payload["repo"]) if payload.get("repo") is not None else None,  # type: ignore[arg-type]
        instance=instance,
        patch=patch,
        python=payload["python"],
        **container,
        timeout=payload["timeout"],
        compat=payload["compat"],
        network=payload.get("network", False),
        harness_cost=harness_cost,
        harness=payload["model"],
        compute_rate=payload["compute_rate"],
        plan=tuple(payload["plan"]) if payload.get("plan") is not None else None,
        retrieval=tuple(payload["retrieval"]) if payload.get("retrieval") is not None else None,
        reruns=int(payload.get("reruns", 0)),
        hidden=tuple(Path(p) for p in payload.get("hidden") or ()),
        patch_ref=payload.get("patch_ref"),
    )
    if payload.get("against_gold"):
        request = dataclasses.replace(request, against_gold=payload["against_gold"])
    if payload.get("runner") is not None or payload.get("test_cmd") is not None:
        request = dataclasses.replace(request, runner=payload.get("runner"), test_cmd=payload.get("test_cmd"),
                                      command_source=payload.get("environment") or "the environments file")  # fmt: skip
    if payload.get("max_patch_bytes"):
        request = dataclasses.replace(request, max_patch_bytes=int(payload["max_patch_bytes"]))
    try:
        return {**grade_candidate(request).envelope, "batch": _batch_of(payload)}
    except BadInput as exc:  # a bad instance, or an interpreter / repository missing where the job ran
        return ungraded(payload, "setup", f"cannot be graded here: {exc}", instance.instance_id)


def ungraded(payload: Mapping[str, Any], failure_class: str, detail: str, instance_id: str) -> dict[str, Any]:
    """The envelope of a job that produced no grading: an infrastructure failure, with the
    harness's cost still recorded (what the candidate cost does not depend on the grader)."""
    from . import envelope as env

    patch = payload["patch"].encode("utf-8", "surrogateescape")
    harness = payload["cost"]
    # nothing ran here: CPU and wall time are unknown (null), never made-up zeros
    cost = {"tokens": harness["tokens"], "calls": harness["calls"], "cpu": None, "wall_time": None,
            "dollars": harness["dollars"]}  # fmt: skip
    breakdown = {"model_dollars": harness["dollars"], "compute_dollars": None,
                 "compute_rate_per_cpu_second": payload["compute_rate"],
                 "harness_reported": any(v is not None for v in harness.values()),
                 "cpu_note": "no grading ran: CPU and wall time not measured"}  # fmt: skip
    envelope = env.build_envelope(
        instance_id=instance_id, score=None, grading=None, no_verdict=f"infrastructure failure ({failure_class}): {detail}",
        session={}, extra={"runner": {"failure_class": failure_class, "failure_detail": detail},
                           "patch_ref": env.patch_ref_of(patch), "harness": payload["model"],
                           "cost": cost, "cost_breakdown": breakdown},
    )  # fmt: skip
    envelope["batch"] = _batch_of(payload)
    return envelope


def _batch_of(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope's ``batch`` section: the job, and the environment it was graded in."""
    data = {"job_key": payload["key"], "model_name_or_path": payload["model"], "python": payload.get("python"),
            "environment": payload.get("environment") or None}  # fmt: skip
    if payload.get("image") is not None:
        data["image"] = payload["image"]
    if payload.get("environment_digests"):  # what was installed where it ran, probed before the batch (ab run)
        data["environment_digest"] = payload["environment_digests"].get(payload.get("python") or "") or "unknown"
    return data


def crashed_job(job: Job, exc: BaseException, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope of a job whose grading itself crashed (a dead worker, a lost task)."""
    detail = f"the grading crashed: {type(exc).__name__}: {exc}"
    return ungraded(job.payload(settings), "verifier", detail, job.instance.instance_id)


def _outcome_of(job: Job, future: Any, settings: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return dict(future.result())
    except Exception as exc:  # the grader's or the cluster's failure: never the candidate's
        return crashed_job(job, exc, settings)


def failure_outcome(envelope: Mapping[str, Any]) -> str:
    """The batch report's failure class of a graded run (one of :data:`OUTCOMES`)."""
    failure_class = (envelope.get("runner") or {}).get("failure_class")
    if failure_class in INFRA_CLASSES or envelope.get("score") is None:
        return "infrastructure_failure"
    if failure_class in ("patch_apply", "patch_too_large"):  # never applied: refused, or refused unread
        return "patch_did_not_apply"
    return "resolved" if envelope["score"]["resolved"] == "resolved" else "not_resolved"


# ---------------------------------------------------------------------- the ledger side


def _as_recorded(score: Any, cost: Mapping[str, Any] | None) -> dict[str, Any]:
    cost = cost or {}
    return {**score.data, "seq": score.seq, "cost": cost.get("cost"), "cost_breakdown": cost.get("breakdown")}


def recorded_jobs(ledger: Ledger) -> dict[str, dict[str, Any]]:
    """Job key -> the latest score entry recorded for it (with its ``seq`` and cost)."""
    found: dict[str, dict[str, Any]] = {}
    costs: dict[int, Any] = {}
    for entry in ledger.entries("cost"):
        costs[entry.data.get("score_seq")] = entry.data
    for entry in ledger.entries("score"):
        key = entry.data.get("job_key")
        if key:
            found[key] = _as_recorded(entry, costs.get(entry.seq))
    return found


def recorded_job(ledger: Ledger, seq: int) -> dict[str, Any]:
    """The job recorded by the score entry ``seq`` (as :func:`recorded_jobs` gives it), read alone: a job
    another run recorded while this one ran, without reading the whole ledger again for each."""
    score, *linked = ledger.entries_from(seq, 3)  # its cost is written right after it, in the same transaction
    cost = next((e.data for e in linked if e.kind == "cost" and e.data.get("score_seq") == seq), None)
    return _as_recorded(score, cost)


def record_result(ledger: Ledger, envelope: Mapping[str, Any]) -> int:
    """Write one graded job (score and cost, one transaction); returns the score's seq."""
    batch = envelope["batch"]
    extra = {"job_key": batch["job_key"], "model_name_or_path": batch["model_name_or_path"],
             "outcome": failure_outcome(envelope), "python": batch.get("python"),
             "environment": batch.get("environment")}  # fmt: skip
    if batch.get("image") is not None:
        extra["image"] = batch["image"]
    if batch.get("environment_digest") is not None:
        extra["environment_digest"] = batch["environment_digest"]
    return ledger.append_linked(run_entries(envelope, "grade-batch", extra))[0].seq


def result_row(job: Job, envelope: Mapping[str, Any] | None, recorded: Mapping[str, Any] | None,
               seq: int | None) -> dict[str, Any]:  # fmt: skip
    """One entry of ``--report``: from a fresh envelope, or from the ledger on resume (``seq`` is
    None for a fresh result the ledger could not take)."""
    if envelope is not None:
        runner = envelope.get("runner") or {}
        return {
            "instance_id": job.instance.instance_id,
            "model_name_or_path": job.prediction.model,
            "score": envelope.get("score"),
            "failure_class": failure_outcome(envelope),
            "failure_detail": runner.get("failure_detail") or envelope.get("no_verdict_reason"),
            "cost": envelope.get("cost"),
            "cost_breakdown": envelope.get("cost_breakdown"),
            "disposition": (envelope.get("integrity") or {}).get("disposition"),
            "reasons": (envelope.get("integrity") or {}).get("reasons", []),
            "ledger_seq": seq,
            "resumed": False,
            **({"against_gold": against_gold.compact(envelope["against_gold"])} if "against_gold" in envelope else {}),
            "job_key": job.key,
            **environment_fields(job),
            **({"environment_digest": envelope["batch"]["environment_digest"]}
               if "environment_digest" in (envelope.get("batch") or {}) else {}),
        }  # fmt: skip
    assert recorded is not None
    return {
        "instance_id": job.instance.instance_id,
        "model_name_or_path": job.prediction.model,
        "score": recorded.get("score"),
        "failure_class": recorded.get("outcome"),
        "failure_detail": recorded.get("no_verdict_reason"),
        "cost": recorded.get("cost"),
        "cost_breakdown": recorded.get("cost_breakdown"),
        "disposition": recorded.get("disposition"),
        "reasons": recorded.get("reasons", []),
        "ledger_seq": recorded["seq"],
        "resumed": True,
        **({"against_gold": recorded["against_gold"]} if "against_gold" in recorded else {}),
        "job_key": job.key,
        **environment_fields(job),
        **({"environment_digest": recorded["environment_digest"]} if "environment_digest" in recorded else {}),
    }


def environment_fields(job: Job) -> dict[str, Any]:
    """A report row's environment: the interpreter (and image) the job is graded with, and where
    they came from. The job key covers them, so a result read back from the ledger had the same."""
    return {"python": job.python, "image": job.image, "environment": job.environment or None}


def swebench_run_reports(rows: Sequence[Mapping[str, Any]], jobs: Sequence[Job], dataset_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per model, the run report SWE-bench's harness writes (``{model}.{run_id}.json``).

    Its id lists: ``resolved_ids`` and ``unresolved_ids`` (graded, with a verdict),
    ``empty_patch_ids`` (a model_patch that is "" or missing: SWE-bench does not grade those),
    ``incomplete_ids`` (dataset instances the model submitted nothing for),
    ``error_ids`` (SWE-bench's errors: the patch did not apply, or the grading broke), and,
    beside them, ``infrastructure_failure_ids`` (the gradings that broke, also in ``error_ids``,
    so a reader of SWE-bench's schema counts them as it would and ours can tell them apart).
    """
    reports: dict[str, dict[str, Any]] = {}
    for job, row in zip(jobs, rows):
        report = reports.setdefault(job.prediction.model, {key: [] for key in (
            "submitted_ids", "completed_ids", "incomplete_ids", "empty_patch_ids", "resolved_ids", "unresolved_ids",
            "error_ids", "infrastructure_failure_ids")})  # fmt: skip
        instance_id = job.instance.instance_id
        report["submitted_ids"].append(instance_id)
        if job.prediction.patch in (None, "") and not job.patch:
            report["empty_patch_ids"].append(instance_id)  # SWE-bench: only "" or None is empty
            continue
        outcome = row["failure_class"]
        if outcome in ("resolved", "not_resolved"):
            report["completed_ids"].append(instance_id)
            report["resolved_ids" if outcome == "resolved" else "unresolved_ids"].append(instance_id)
        else:
            report["error_ids"].append(instance_id)
            if outcome == "infrastructure_failure":
                report["infrastructure_failure_ids"].append(instance_id)
    for report in reports.values():
        # every dataset instance this model submitted nothing for (SWE-bench's make_run_report)
        report["incomplete_ids"] = sorted(set(dataset_ids) - set(report["submitted_ids"]))
        for key in list(report):
            report[key] = sorted(set(report[key]))
        report.update(
            total_instances=len(dataset_ids),
            incomplete_instances=len(report["incomplete_ids"]),
            submitted_instances=len(report["submitted_ids"]),
            completed_instances=len(report["completed_ids"]),
            resolved_instances=len(report["resolved_ids"]),
            unresolved_instances=len(report["unresolved_ids"]),
            empty_patch_instances=len(report["empty_patch_ids"]),
            error_instances=len(report["error_ids"]),
            infrastructure_failure_instances=len(report["infrastructure_failure_ids"]),
            metric_space="binary_resolved",
            schema_version=2,
        )
    return reports


# ---------------------------------------------------------------------- SWE-bench's outputs: run reports and the log tree


LOG_FILES: Final = ("patch.diff", "test_output.txt", "report.json", "envelope.json")
RESUMED_ENTRY: Final = "ledger_entry.json"  # in place of envelope.json for a result read back from the ledger


NAME_MAX: Final = 255
"""Bytes in one file or folder name, at most (ext4, XFS, Btrfs, APFS, NTFS: 255)."""
MAX_RUN_ID: Final = 128  # bytes of a run id: it names a folder, and a run report beside the model's name
WHOLE_FILE_ROOM: Final = 64
"""Bytes a file written whole (:mod:`.atomic`) needs beyond its name: its temporary file is named
``.NAME.PID.NANOSECONDS.partial`` in the same folder."""


def _quoted(name: str) -> str:
    """``name`` quoted back in a message, cut after 40 characters."""
    return repr(name) if len(name) <= 40 else repr(name[:40]) + f"... ({len(name)} characters)"


def fitted(part: str, room: int = NAME_MAX) -> str:
    """``part`` as it is when its UTF-8 spelling fits in ``room`` bytes; a longer one cut to fit
    with ``-`` and 16 hex digits of the whole one's sha256 after it, so that two long names that
    share their beginning still name two files (the records keep the whole name)."""
    encoded = part.encode("utf-8", "surrogatepass")
    if len(encoded) <= room:
        return part
    tail = "-" + hashlib.sha256(encoded).hexdigest()[:16]
    return encoded[: room - len(tail)].decode("utf-8", "ignore") + tail


def path_part(name: str, what: str, *, model: bool = False, room: int = NAME_MAX) -> str:
    """``name`` as one path component of at most ``room`` bytes (:func:`fitted`). A model's ``/`` is
    written ``__`` (SWE-bench's spelling); anything else that cannot be one folder or file name is
    refused."""
    part = name.replace("/", "__") if model else name
    if part in ("", ".", "..") or "/" in part or "\0" in part or (os.altsep and os.altsep in part):
        raise BatchError(f"{what} {_quoted(name)}: cannot name a folder or a file (expected no '/', not '.' or '..')")
    return fitted(part, room)


def run_id_part(run_id: str) -> str:
    """A run id as the folder it names: refused (never cut: it is the name the user asked for and will
    look for) when longer than :data:`MAX_RUN_ID` bytes."""
    size = len(run_id.encode("utf-8", "surrogatepass"))
    if size > MAX_RUN_ID:
        raise BatchError(f"--run-id {_quoted(run_id)}: {size} bytes long: expected at most {MAX_RUN_ID} (it names a "
                         "folder of the log tree and the run reports)")  # fmt: skip
    return path_part(run_id, "--run-id")


def run_report_path(folder: Path, model: str, run_id: str) -> Path:
    """SWE-bench's run report of one model: ``{model}.{run_id}.json`` (a model's ``/`` as ``__``; a model
    name too long for one file name, with room for the temporary name it is written under, cut to fit:
    :func:`fitted`)."""
    suffix = f".{run_id_part(run_id)}.json"
    room = NAME_MAX - WHOLE_FILE_ROOM - len(suffix.encode("utf-8", "surrogatepass"))
    return folder / f"{path_part(model, 'model_name_or_path', model=True, room=room)}{suffix}"


def instance_log_dir(log_dir: Path, run_id: str, model: str, instance_id: str) -> Path:
    """SWE-bench's per-instance log folder: ``LOG_DIR/run_evaluation/RUN_ID/MODEL/INSTANCE_ID`` (a
    name too long for one folder name cut to fit, :func:`fitted`)."""
    return (log_dir / "run_evaluation" / run_id_part(run_id) / path_part(model, "model_name_or_path", model=True)
            / path_part(instance_id, "instance_id"))  # fmt: skip


def _check_folder(folder: Path, flag: str) -> str | None:
    """Whether ``folder`` can be made and written: every part of it that exists is a folder, and
    the deepest one that exists is writable. None, or what is wrong (one line)."""
    for part in (folder, *folder.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                return f"{flag}: {part} is a file, not a folder: expected a folder to write {folder} in"
            if not os.access(part, os.W_OK | os.X_OK):
                return f"{flag}: {part} is not writable: expected a folder {folder} can be made in"
            return None
    return None  # pragma: no cover - the root exists


def _job_key_in(folder: Path) -> str | None:
    """The job key recorded in a per-instance log folder (its envelope or ledger entry), if any."""
    for name, path in (("envelope.json", ("batch", "job_key")), (RESUMED_ENTRY, ("job_key",))):
        try:
            data: Any = nesting.loads((folder / name).read_text(encoding="utf-8"))
            for key in path:
                data = data[key]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(data, str):
            return data
    return None


def check_outputs(jobs: Sequence[Job], run_id: str, log_dir: Path | None, report: Path | None) -> list[str]:
    """Every problem with this run's output paths, before anything is graded (one line each).

    A run id is one run: it may be continued (the same command again after an interruption:
    its per-instance folders hold the same job keys) but never overwritten. Refused: a run
    report ``{model}.{run_id}.json`` that exists beside ``report``; a per-instance folder of
    this run id that holds another grading; a file where a folder is needed; a folder that
    cannot be written."""
    problems: list[str] = []
    try:
        run_id_part(run_id)
    except BatchError as exc:
        return [str(exc)]
    models = sorted({job.prediction.model for job in jobs})
    if report is not None:
        if report.is_dir():
            problems.append(f"--report {report}: is a folder: expected a file")
        problem = _check_folder(report.parent, "--report")
        if problem:
            problems.append(problem)
        seen: dict[Path, str] = {}
        for model in models:
            try:
                path = run_report_path(report.parent, model, run_id)
            except BatchError as exc:
                problems.append(str(exc))
                continue
            if path in seen:
                problems.append(f"models {seen[path]!r} and {model!r} would both write the run report {path}")
            seen[path] = model
            if path.exists() or path.is_symlink():
                problems.append(f"--run-id {run_id}: the run report {path} exists: a run report is never overwritten "
                                "(choose another --run-id; the default is a new timestamp)")  # fmt: skip
    if log_dir is not None:
        checked: set[Path] = set()
        for job in jobs:
            try:
                folder = instance_log_dir(log_dir, run_id, job.prediction.model, job.instance.instance_id)
            except BatchError as exc:
                problems.append(str(exc))
                continue
            if folder.parent not in checked:
                checked.add(folder.parent)
                problem = _check_folder(folder.parent, "--log-dir")
                if problem:
                    problems.append(problem)
                    continue
            if folder.exists() or folder.is_symlink():
                if not folder.is_dir():
                    problems.append(f"--log-dir: {folder} is a file, not a folder: expected a folder")
                elif any(folder.iterdir()) and _job_key_in(folder) != job.key:
                    problems.append(f"--run-id {run_id}: {folder} holds another grading (not job {job.key[:12]}): a run's "
                                    "logs are never overwritten (choose another --run-id; the default is a new timestamp)")  # fmt: skip
    return list(dict.fromkeys(problems))


def swebench_instance_report(instance_id: str, outcome: str, tests: Sequence[Mapping[str, Any]],
                             reason: str | None = None) -> dict[str, Any]:  # fmt: skip
    """SWE-bench's per-instance ``report.json`` from a recorded result (outcome and per-test statuses),
    the same shape the runner's envelope carries in ``swebench.report``."""
    entry: dict[str, Any] = {"patch_is_None": False, "patch_exists": True,
                             "patch_successfully_applied": outcome != "patch_did_not_apply", "resolved": outcome == "resolved"}  # fmt: skip
    if outcome == "infrastructure_failure":
        entry.update(infra_failure=True, infra_failure_reason=reason)
    elif outcome != "patch_did_not_apply":
        status: dict[str, dict[str, list[str]]] = {}
        for gate, good in (("FAIL_TO_PASS", "passed"), ("PASS_TO_PASS", "preserved")):
            mine = [t for t in tests if t.get("gate") == gate]
            status[gate] = {"success": [t["id"] for t in mine if t.get("status") == good],
                            "failure": [t["id"] for t in mine if t.get("status") != good]}  # fmt: skip
        status["FAIL_TO_FAIL"] = {"success": [], "failure": []}
        status["PASS_TO_FAIL"] = {"success": [], "failure": []}
        entry["tests_status"] = status
    return {instance_id: entry}


def _run_section(title: str, run: Mapping[str, Any]) -> list[str]:
    command = " ".join(str(c) for c in run.get("command") or []) or "-"
    facts = (f"exit code {run.get('exit_code')}, pytest exit status {run.get('pytest_exitstatus')}, "
             f"{run.get('wall_time')} s" + (", TIMED OUT" if run.get("timed_out") else ""))  # fmt: skip
    return [f"===== {title}: {facts}", f"===== command: {command}", str(run.get("output_tail") or "(no output)").rstrip("\n"), ""]


def output_log(envelope: Mapping[str, Any], job: Job, run_id: str) -> str:
    """``test_output.txt``: what this grading kept of its test runs' output. The runner keeps the
    last 4,000 characters of pytest's output of each run (``runner.run.output_tail``), not the
    whole log; when no test ran, why, with each apply strategy's output."""
    runner = envelope.get("runner") or {}
    lines = [f"objective-score grade-batch, run {run_id}: {job.instance.instance_id}, model {job.prediction.model}",
             f"interpreter: {job.python}" + (f" in image {job.image}" if job.image else "") + f" (from {job.environment or '--python'})",
             f"outcome: {failure_outcome(envelope)} (failure class {runner.get('failure_class')})"]  # fmt: skip
    detail = runner.get("failure_detail") or envelope.get("no_verdict_reason")
    if detail:
        lines.append(f"detail: {detail}")
    lines += ["what follows is the last 4,000 characters of pytest's output of each test run (the envelope's "
              "runner.run.output_tail); the whole log is not kept", ""]  # fmt: skip
    if runner.get("run"):
        lines += _run_section("the candidate's run", runner["run"])
    if runner.get("control_run"):
        lines += _run_section(f"the control run ({runner['control_run'].get('kind')})", runner["control_run"])
    if not runner.get("run") and not runner.get("control_run"):
        lines.append("===== no test ran")
        for attempt in (runner.get("apply") or {}).get("attempts") or []:
            lines += [f"----- apply with {attempt.get('strategy')}: {'ok' if attempt.get('ok') else 'failed'}",
                      str(attempt.get("output") or "").rstrip("\n")]  # fmt: skip
    return "\n".join(lines).rstrip("\n") + "\n"


def write_instance_logs(folder: Path, job: Job, row: Mapping[str, Any], run_id: str, *,
                        envelope: Mapping[str, Any] | None = None, recorded: Mapping[str, Any] | None = None,
                        ledger: str | None = None) -> bool:  # fmt: skip
    """Write one result's folder of the log tree: ``envelope.json`` (a fresh grading; for a result
    read back from the ledger ``ledger_entry.json``, the recorded entry), ``patch.diff`` (the
    candidate as submitted), ``report.json`` (SWE-bench's per-instance report) and
    ``test_output.txt``, each written whole (a full disk leaves no 0-byte file to hold the run id
    later). A result read back from the ledger whose folder is whole (this run id, continued: its last
    file is there) leaves it as it is. Returns whether anything was written."""
    from .atomic import write_whole
    from .envelope import dumps

    if envelope is None and (folder / "test_output.txt").exists():  # written last: the folder is whole
        return False
    folder.mkdir(parents=True, exist_ok=True)
    if envelope is not None:
        data = {**envelope, "ledger": {"path": ledger, "seq": row.get("ledger_seq"),
                                       **({"error": row["ledger_error"]} if row.get("ledger_error") else {})}}  # fmt: skip
        write_whole(folder / "envelope.json", dumps(data))
        (folder / RESUMED_ENTRY).unlink(missing_ok=True)
        report = (envelope.get("swebench") or {}).get("report") or swebench_instance_report(
            job.instance.instance_id, row["failure_class"], envelope.get("tests") or [], row.get("failure_detail"))
        output = output_log(envelope, job, run_id)
    else:
        assert recorded is not None
        write_whole(folder / RESUMED_ENTRY, json.dumps({**recorded, "job_key": job.key}, indent=2, ensure_ascii=False) + "\n")
        report = swebench_instance_report(job.instance.instance_id, row["failure_class"], recorded.get("tests") or [],
                                          row.get("failure_detail"))  # fmt: skip
        output = (f"objective-score grade-batch, run {run_id}: {job.instance.instance_id}, model {job.prediction.model}\n"
                  f"interpreter: {job.python}" + (f" in image {job.image}" if job.image else "")
                  + f" (from {job.environment or '--python'})\n"
                  f"outcome: {row['failure_class']}, read back from the ledger (score entry {recorded.get('seq')}): graded "
                  "by an earlier run, whose test output the ledger does not keep (see that run's log folder)\n")  # fmt: skip
    write_whole(folder / "patch.diff", job.patch.encode("utf-8", "surrogateescape"))
    write_whole(folder / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_whole(folder / "test_output.txt", output.encode("utf-8", "surrogateescape"))
    return True


def summarize(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per model: how many predictions fell in each failure class, and how many were resumed."""
    table: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = table.setdefault(row["model_name_or_path"], {"predictions": 0, **{o: 0 for o in OUTCOMES}, "resumed": 0})
        counts["predictions"] += 1
        counts[row["failure_class"]] += 1
        counts["resumed"] += bool(row["resumed"])
        check = row.get("against_gold")
        if isinstance(check, Mapping):  # --against-gold: the second figure, beside the verdicts
            counts["resolved_against_gold"] = counts.get("resolved_against_gold", 0) + (check.get("resolved_against_gold") is True)
            counts["regressed"] = counts.get("regressed", 0) + (check.get("status") == "regressions")
            counts["against_gold_unknown"] = counts.get("against_gold_unknown", 0) + (check.get("resolved_against_gold") is None)
    return table


# ---------------------------------------------------------------------- executors


ResultHandler = Callable[[Job, dict[str, Any]], None]


def run_local(jobs: Sequence[Job], settings: Mapping[str, Any], workers: int, on_result: ResultHandler,
              claim: Callable[[Job], bool] | None = None) -> None:  # fmt: skip
    """Grade on ``workers`` threads; ``on_result`` runs on this thread, in completion order. With
    ``claim``, a job is handed to a thread only if ``claim(job)`` (called on this thread, just before)
    says this run grades it.

    On an interrupt, every running test process group is killed and nothing more is
    handed to ``on_result``: a half-run grading is never recorded.
    """
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    from .testrun import allow_runs, kill_all

    allow_runs()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grade")
    pending: dict[Future[dict[str, Any]], Job] = {}
    queue = list(jobs)
    try:
        while queue or pending:
            while queue and len(pending) < workers:
                job = queue.pop(0)
                if claim is not None and not claim(job):
                    continue
                pending[pool.submit(grade_job, job.payload(settings))] = job
            if not pending:
                break
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                job = pending.pop(future)
                on_result(job, _outcome_of(job, future, settings))
    except BaseException:
        kill_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def connect(address: str, timeout: float | None = None) -> Any:
    """A Dask client for ``address``; a clear error when dask is missing or the scheduler is not there.

    The connection timeout is 20 s, or ``$OBJECTIVE_SCORE_CONNECT_TIMEOUT`` seconds.
    """
    import os

    if timeout is None:
        timeout = float(os.environ.get("OBJECTIVE_SCORE_CONNECT_TIMEOUT", "20"))
    try:
        from distributed import Client
    except ImportError:
        raise BatchError(
            "--scheduler needs dask.distributed: pip install 'pytest-objective-scoring[cluster]'"
        ) from None
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise BatchError(f"--scheduler {address}: cannot reach a Dask scheduler ({exc})") from None


def run_cluster(jobs: Sequence[Job], settings: Mapping[str, Any], address: str, on_result: ResultHandler,
                claim: Callable[[Job], bool] | None = None) -> None:  # fmt: skip
    """Grade on a Dask cluster; results come back to this client, which alone handles them. With
    ``claim``, only the jobs it says this run grades are submitted (all claimed before any is).

    Every worker must see the repositories at the same paths (a shared filesystem) and
    have this package installed; each job is one task, retried by Dask if its worker dies.
    """
    from distributed import as_completed

    client = connect(address)
    try:
        if claim is not None:
            jobs = [job for job in jobs if claim(job)]
        futures = {}
        for job in jobs:
            future = client.submit(grade_job, job.payload(settings), key=f"grade-{job.key}", pure=False)
            futures[future] = job
        try:
            for future in as_completed(list(futures)):
                on_result(futures[future], _outcome_of(futures[future], future, settings))
        except BaseException:
            client.cancel(list(futures))
            raise
    finally:
        client.close()
