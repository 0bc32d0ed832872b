"""``objective-score import-judged``: scores a model judge produced, kept as data, never as evidence.

Some benchmarks grade with a model (a rubric judge, a judge component). Those scores may be
imported for reference, but the scoring path of this project holds zero learned entries:
they are recorded as ``judged_score`` entries, labelled ``judge_based`` and ``admissible:
false`` in the metric space ``judge_rubric``, and nothing that decides anything (costs,
scorecards, comparisons, audits) ever reads that kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from .errors import CommandError

__all__ = ["LABEL", "parse_rows"]

LABEL = "judge-based: imported as data, never admissible as objective evidence"


MAX_BYTES: Final = 1 << 30
"""A judged file larger than this (1 GiB) is refused, not read to its end: rows of scores are small."""
EXPECTED: Final = "JSONL or JSON rows with task_id, harness and score"


ROW_FIELDS: Final = ("task_id", "harness", "score")
TWICE: Final = ("given twice in one object: JSON keeps the last and drops the first silently, so which value is "
                "imported would be an accident")


def _value(text: str, where: str, invalid: str) -> Any:
    """One JSON value (:func:`.cost_ledger.loads`: NaN, overlong numbers, lone surrogates refused), every
    object's keys given once (:func:`.instances.once_each`, as an instance's are); ``invalid`` words a
    syntax error from its ``json.JSONDecodeError``."""
    import json

    from . import nesting
    from .cost_ledger import NotJson, loads
    from .instances import once_each, TwiceGiven

    try:
        value = loads(text)
        nesting.loads(text, object_pairs_hook=once_each)  # the same text again: only keys given twice stop it
    except NotJson as exc:
        raise CommandError(f"{where}: {exc}") from None
    except TwiceGiven as exc:
        raise CommandError(f"{where}: field {exc.key!r} {TWICE}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{where}: {invalid.format(exc=exc)}") from None
    return value


def _is_jsonl(path: Path, text: str) -> bool:
    """Whether ``text`` is JSONL, decided by its content, not by its name alone (``<(...)`` is
    ``/dev/fd/63``): a ``.jsonl`` name, or a first line that alone is a JSON object holding a row field
    (task_id, harness or score). A JSON list, a keyed object or a row written over several lines is not."""
    from . import nesting

    if path.name.endswith(".jsonl"):
        return True
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        value = nesting.loads(first)
    except ValueError:  # not one line's value (a document over several lines), or not JSON: said when read
        return False
    return isinstance(value, dict) and any(name in value for name in ROW_FIELDS)


def read_judged(path: Path, text: str) -> list[tuple[str, Any]]:
    """``(where, row)`` for every row of a judged file: JSONL (one object per line, :func:`_is_jsonl`),
    a JSON list of rows, one row, or an object of rows keyed by name. Any object with a key given twice
    is refused by name (:func:`_value`)."""
    if not text.strip():
        raise CommandError(f"{path}: the file is empty: expected {EXPECTED}")
    if _is_jsonl(path, text):
        return [(f"{path}:{n}", _value(line, f"{path}:{n}", "invalid JSON in JSONL line: {exc.msg}"))
                for n, line in enumerate(text.split("\n"), 1) if line.strip()]  # fmt: skip
    value = _value(text, str(path), "invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
    if isinstance(value, list):
        return [(f"{path} [item {index}]", row) for index, row in enumerate(value)]
    if isinstance(value, dict) and any(name in value for name in ROW_FIELDS):
        return [(str(path), value)]
    if isinstance(value, dict):
        return [(f"{path} [{key!r}]", row) for key, row in value.items()]
    raise CommandError(f"{path}: expected {EXPECTED}")


def parse_rows(path: Path, benchmark: str, judge: str) -> list[dict[str, Any]]:
    """The ledger entries of a judged file's rows, each labelled judge-based and not admissible. The
    file is read once (``<(...)`` and ``-`` work) through :func:`.cost_ledger.input_text` and its rows
    told apart by content (:func:`read_judged`); a named pipe nobody writes to, a device, a file over
    :data:`MAX_BYTES`, NaN, a number too long to read or a key given twice is a :class:`CommandError`
    of one line."""
    from .cost_ledger import UnreadableInput, finite_number, input_text, shown

    try:
        rows = read_judged(path, input_text(path, MAX_BYTES, EXPECTED))
    except UnreadableInput as exc:
        raise CommandError(str(exc)) from None
    entries = []
    for where, row in rows:
        if not isinstance(row, dict):
            raise CommandError(f"{where}: expected a JSON object with task_id, harness and score")
        for name in ("task_id", "harness"):
            if not isinstance(row.get(name), str) or not row[name]:
                raise CommandError(f"{where}: field {name!r}: expected a non-empty string")
        score = row.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not finite_number(score):
            raise CommandError(f"{where}: field 'score': expected a number, got {shown(score)}")
        entries.append({"benchmark": benchmark, "judge": judge, "task_id": row["task_id"], "harness": row["harness"],
                        "score": float(score), "metric_space": "judge_rubric", "judge_based": True,
                        "admissible": False, "source": where,
                        "extra": {k: v for k, v in row.items() if k not in ("task_id", "harness", "score")}})  # fmt: skip
    if not entries:
        raise CommandError(f"{path}: holds no scores")
    return entries
