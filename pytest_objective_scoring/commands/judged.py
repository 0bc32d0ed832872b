"""``objective-score import-judged``: a model judge's scores appended to the ledger as
``judged_score`` entries, labelled judge-based and never admissible. Thin: reading and labelling
the rows, and the rule that nothing decides on them, are :mod:`pytest_objective_scoring.judged`'s.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .. import judged
from ..ledger import DEFAULT_LEDGER
from . import HELP

__all__ = ["cmd_import", "register"]


def _body(entry: dict[str, Any]) -> Any:
    return lambda _: entry


def cmd_import(args: argparse.Namespace) -> int:
    from ..ledger import Ledger

    entries = judged.parse_rows(Path(args.file), args.benchmark, args.judge)
    with Ledger(Path(args.ledger) if args.ledger else DEFAULT_LEDGER) as ledger:
        written = ledger.append_linked([("judged_score", _body(e)) for e in entries])
    if args.json:
        print(json.dumps({"imported": len(entries), "first_seq": written[0].seq, "label": judged.LABEL,
                          "entries": entries}, indent=2, ensure_ascii=False))  # fmt: skip
    else:
        print(f"imported {len(entries)} judge-based score(s) of {args.benchmark} (judge {args.judge}) at ledger seq "
              f"{written[0].seq}..{written[-1].seq}")  # fmt: skip
        print(judged.LABEL)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``import-judged`` to the ``objective-score`` parser."""
    parser = sub.add_parser("import-judged", help=HELP["import-judged"],
                            description=judged.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("file", metavar="FILE", help="JSONL or JSON rows: task_id, harness, score (and anything else, kept)")
    parser.add_argument("--benchmark", required=True, metavar="NAME", help="The benchmark the scores belong to")
    parser.add_argument("--judge", required=True, metavar="NAME", help="The judge that produced them (model and rubric)")
    parser.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
    parser.add_argument("--json", action="store_true", help="Print the result as JSON")
    parser.set_defaults(handler=cmd_import)
