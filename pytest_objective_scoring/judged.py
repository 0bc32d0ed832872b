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


def parse_rows(path: Path, benchmark: str, judge: str) -> list[dict[str, Any]]:
    """The ledger entries of a judged file's rows, each labelled judge-based and not admissible. The
    file is read once (``<(...)`` and ``-`` work) through :func:`.cost_ledger.input_text`; a named pipe
    nobody writes to, a device, a file over :data:`MAX_BYTES`, NaN or a number too long to read is
    a :class:`CommandError` of one line."""
    from .batch import BatchError, read_rows
    from .cost_ledger import UnreadableInput, finite_number, input_text, shown

    try:
        rows = list(read_rows(path, input_text(path, MAX_BYTES, EXPECTED)))
    except (UnreadableInput, BatchError) as exc:
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
