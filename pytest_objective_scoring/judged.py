"""``objective-score import-judged``: scores a model judge produced, kept as data, never as evidence.

Some benchmarks grade with a model (a rubric judge, a judge component). Those scores may be
imported for reference, but the scoring path of this project holds zero learned entries:
they are recorded as ``judged_score`` entries, labelled ``judge_based`` and ``admissible:
false`` in the metric space ``judge_rubric``, and nothing that decides anything (costs,
scorecards, comparisons, audits) ever reads that kind.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .errors import CommandError

__all__ = ["LABEL", "parse_rows"]

LABEL = "judge-based: imported as data, never admissible as objective evidence"


def parse_rows(path: Path, benchmark: str, judge: str) -> list[dict[str, Any]]:
    from .batch import BatchError, read_rows

    try:
        text = path.read_text(encoding="utf-8")
        rows = list(read_rows(path, text))
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        from .outputs import not_text

        raise CommandError(not_text("", path, exc, "JSONL or JSON rows with task_id, harness and score")) from None
    except BatchError as exc:
        raise CommandError(str(exc)) from None
    entries = []
    for where, row in rows:
        if not isinstance(row, dict):
            raise CommandError(f"{where}: expected a JSON object with task_id, harness and score")
        for name in ("task_id", "harness"):
            if not isinstance(row.get(name), str) or not row[name]:
                raise CommandError(f"{where}: field {name!r}: expected a non-empty string")
        score = row.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise CommandError(f"{where}: field 'score': expected a number, got {score!r}")
        entries.append({"benchmark": benchmark, "judge": judge, "task_id": row["task_id"], "harness": row["harness"],
                        "score": float(score), "metric_space": "judge_rubric", "judge_based": True,
                        "admissible": False, "source": where,
                        "extra": {k: v for k, v in row.items() if k not in ("task_id", "harness", "score")}})  # fmt: skip
    if not entries:
        raise CommandError(f"{path}: holds no scores")
    return entries
