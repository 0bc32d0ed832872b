"""``objective-score ledger verify|export|show|head``: the append-only, hash-chained ledger,
verified, exported as JSONL, listed, or its head printed (signed with ``--key-file``). Every
action opens the ledger read-only. Thin: the chain is
:mod:`pytest_objective_scoring.ledger`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..errors import CommandError
from ..ledger import DEFAULT_LEDGER, KNOWN_KINDS
from . import HELP
from .shared import existing_ledger

__all__ = ["entry_summary", "register", "unavailable"]

def _ledger_key(args: argparse.Namespace) -> bytes | None:
    """The bytes of --key-file (a trailing newline dropped), or None."""
    if not getattr(args, "key_file", None):
        return None
    path = Path(args.key_file)
    try:
        key = path.read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise CommandError(f"--key-file {path}: cannot be read ({exc.strerror or exc})") from None
    if not key:
        raise CommandError(f"--key-file {path}: empty: a key must not be empty")
    return key


def cmd_ledger_head(args: argparse.Namespace) -> int:
    from ..ledger import head, sign_head

    path = existing_ledger(args)
    key = _ledger_key(args)
    if args.sign and key is None:
        raise CommandError("--sign needs --key-file FILE (the key that signs the head)")
    if key is not None and not args.sign:
        raise CommandError("--key-file is used with --sign")
    top = head(path)
    mac = sign_head(top, key) if key is not None else None
    if args.json:
        print(json.dumps({"ledger": str(path), "seq": top.seq, "hash": top.hash,
                          **({"hmac": mac} if mac else {})}, indent=2))  # fmt: skip
    else:
        print(f"{top}:{mac}" if mac else str(top))
    return 0


def cmd_ledger_verify(args: argparse.Namespace) -> int:
    from ..ledger import verify

    from ..ledger import LedgerError, key_from_environment

    path = existing_ledger(args)
    key = _ledger_key(args)
    if key is None and args.expect_head is None:  # the writers' key checks the seals too
        try:
            key = key_from_environment()
        except LedgerError as exc:
            raise CommandError(str(exc)) from None
    result = verify(path, expect_head=args.expect_head, key=key)
    seals = {"none": "", "checked": ", every row sealed with the key",
             "unchecked": "; sealed with a key: seals not checked (give --key-file or $OBJECTIVE_SCORE_LEDGER_KEY_FILE)"}
    if args.json:
        print(json.dumps({"ledger": str(existing_ledger(args)), "rows": result.rows, "ok": result.ok,
                          "seals": result.seals, "problems": list(result.problems)}, indent=2))  # fmt: skip
    else:
        print(f"{existing_ledger(args)}: {result.rows} rows, " + ("chain intact" if result.ok else "TAMPERED")
              + (seals[result.seals] if result.ok else ""))  # fmt: skip
        for problem in result.problems:
            print(f"  {problem}")
    return 0 if result.ok else 1


def cmd_ledger_export(args: argparse.Namespace) -> int:
    from ..ledger import Ledger

    with Ledger(existing_ledger(args), read_only=True) as ledger:
        lines = [json.dumps(entry.to_dict(), ensure_ascii=False) for entry in ledger.entries()]
    text = "".join(line + "\n" for line in lines)
    if args.out:
        from ..atomic import fallback, write_whole
        from ..errors import EXIT_INFRASTRUCTURE

        try:
            write_whole(args.out, text)
        except OSError as exc:  # as every output: said in one line, and what it held printed in full
            fallback(f"{args.command} {args.action}", "--out", args.out, exc, text)
            return EXIT_INFRASTRUCTURE
    else:
        sys.stdout.write(text)
    return 0


SUMMARY_KEYS: Final = ("task_id", "task", "instance_id", "harness", "style", "mode", "n", "c", "status", "reward",
                       "solved", "verdict")  # fmt: skip


def entry_summary(data: Any) -> str:
    """The fields of an entry's body a person looks for first, as ``key=value`` (any kind of entry)."""
    if not isinstance(data, dict):
        return ""
    return " ".join(f"{key}={data[key]}" for key in SUMMARY_KEYS if data.get(key) is not None)[:120]


def cmd_ledger_show(args: argparse.Namespace) -> int:
    from ..ledger import Ledger

    rows = []
    kinds: dict[str, int] = {}
    with Ledger(existing_ledger(args), read_only=True) as ledger:
        present = ledger.kinds()
        if args.kind not in ("score", "all") and args.kind not in KNOWN_KINDS and args.kind not in present:
            raise CommandError(f"--kind {args.kind}: no such kind of entry (this ledger holds "
                               f"{', '.join(present) or 'no entries'}; known kinds: {', '.join(sorted(KNOWN_KINDS))})")
        for entry in ledger.entries(None if args.kind in ("score", "all") else args.kind):
            kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
            data = entry.data
            if args.kind == "score" and entry.kind != "score":
                continue
            if entry.kind == "score":
                score = data.get("score") or {}
                rows.append({"seq": entry.seq, "kind": entry.kind, "created": entry.created, "source": data.get("source"),
                             "instance_id": data.get("instance_id"), "resolved": score.get("resolved", data.get("status")),
                             "failure_class": data.get("failure_class"), "patch_ref": data.get("patch_ref"),
                             "benchmark": data.get("benchmark"), "metric_space": data.get("metric_space")})  # fmt: skip
            else:
                body = data if isinstance(data, dict) else {}
                rows.append({"seq": entry.seq, "kind": entry.kind, "created": entry.created,
                             "benchmark": body.get("benchmark"), "metric_space": body.get("metric_space"),
                             "summary": entry_summary(body)})  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=140)
    if args.kind == "score":
        table = Table(title=f"graded runs in {existing_ledger(args)}")
        for column in ("seq", "created", "source", "instance", "resolved", "failure class", "patch"):
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(str(row["seq"]), row["created"], str(row["source"]), str(row["instance_id"]),
                          str(row["resolved"]), str(row["failure_class"] or "-"), str(row["patch_ref"])[:23])  # fmt: skip
        console.print(table)
        others = {kind: count for kind, count in sorted(kinds.items()) if kind != "score"}
        if others:
            listed = ", ".join(f"{count} {kind}" for kind, count in others.items())
            console.print(f"also in this ledger: {listed} (ledger show --kind KIND, or --kind all)", highlight=False)
        return 0
    table = Table(title=f"{args.kind} entries in {existing_ledger(args)}")
    for column in ("seq", "created", "kind", "benchmark", "metric space", "summary"):
        table.add_column(column, overflow="fold")
    for row in rows:
        summary = row.get("summary") or f"instance_id={row.get('instance_id')} resolved={row.get('resolved')}"
        table.add_row(str(row["seq"]), row["created"], row["kind"], str(row.get("benchmark") or "-"),
                      str(row.get("metric_space") or "-"), summary)  # fmt: skip
    console.print(table)
    return 0


def unavailable(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler``, with a ledger the machine cannot read now (a full disk or an I/O error where even a
    read-only open fails) said in one line as an infrastructure failure, exit 3: never bad input (2),
    never a tampered ledger (1). Every action only reads, so nothing was changed."""

    def run(args: argparse.Namespace) -> int:
        from ..errors import EXIT_INFRASTRUCTURE
        from ..ledger import LedgerUnavailable

        try:
            return handler(args)
        except LedgerUnavailable as exc:
            print(f"objective-score ledger {args.action}: infrastructure failure (exit 3): {exc}; the ledger was not "
                  "changed", file=sys.stderr)  # fmt: skip
            return EXIT_INFRASTRUCTURE

    run.__name__ = run.__qualname__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``ledger`` and its actions to the ``objective-score`` parser."""
    ledger = sub.add_parser("ledger", help=HELP["ledger"],
                            description="The append-only, hash-chained ledger of graded runs. Every action but "
                            "appending opens it read-only; a file that cannot be read as a ledger is exit 2.")  # fmt: skip
    actions = ledger.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, handler, text in (
        ("verify", cmd_ledger_verify, "Recompute the chain; name every edited, removed or reordered row, a removed "
         "schema version, a removed or altered trigger, a removed or rewritten tail (--expect-head) (exit 1)"),
        ("export", cmd_ledger_export, "Write every entry as JSONL"),
        ("show", cmd_ledger_show, "List the graded runs as a table"),
        ("head", cmd_ledger_head, "Print the chain's head (SEQ:HASH), to keep where the ledger's writers cannot reach "
         "and check later with ledger verify --expect-head"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("--ledger", metavar="PATH", default=None, help=f"The ledger (default: {DEFAULT_LEDGER})")
        if name == "export":
            action.add_argument("--out", metavar="FILE", help="Write to FILE instead of standard output")
        if name == "show":
            action.add_argument("--kind", metavar="KIND", default="score",
                                help="Which entries: score (graded runs, the default), another kind (samples_run, "
                                "sample_problem, sample_result, harbor, batch, ...) or all")  # fmt: skip
        if name == "verify":
            action.add_argument("--expect-head", metavar="HEAD", default=None,
                                help="A head kept from ledger head (HASH, SEQ:HASH, or SEQ:HASH:HMAC when signed): it "
                                "must still be in the chain, or the tail was removed or rewritten (exit 1)")  # fmt: skip
        if name == "head":
            action.add_argument("--sign", action="store_true", help="Append an HMAC-SHA256 of the head made with "
                                "--key-file: SEQ:HASH:HMAC")  # fmt: skip
        if name in ("verify", "head"):
            action.add_argument("--key-file", metavar="FILE", default=None,
                                help="A secret key (the file's bytes) that signs the head (head --sign) or checks a "
                                "signed --expect-head; for verify alone, the ledger's seals (default: "
                                "$OBJECTIVE_SCORE_LEDGER_KEY_FILE)")  # fmt: skip
        if name != "export":
            action.add_argument("--json", action="store_true", help="Print the result as JSON")
        action.set_defaults(handler=unavailable(handler))
