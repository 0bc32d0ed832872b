"""What several commands share: the interpreters and images gradings use, resolved and probed
before anything is graded; what a test process must never see; the options ``grade`` and
``grade-batch`` both take; a ledger that must already exist; a file written whole.

Imports no command module, so every command may import it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from .. import options
from ..errors import CommandError, problems_text
from ..ledger import DEFAULT_LEDGER

__all__ = [
    "add_patch_limit",
    "add_runner_options",
    "compute_rate",
    "environments_of",
    "existing_ledger",
    "hidden_paths",
    "probe_environments",
    "reruns",
]


def environments_of(instances: Sequence[Any], args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """Each instance's environment from ``--environments`` and ``--python`` (``grade-batch``,
    ``audit run``, ``ab run``), resolved; bad input is a :class:`CommandError` (one line a problem)."""
    from ..environments import EnvironmentsError, assign, load_environments, require_container_mode

    try:
        file = load_environments(args.environments) if getattr(args, "environments", None) else None
        assigned = assign(instances, file, args.python, image=getattr(args, "image", None))
        require_container_mode(assigned)
    except EnvironmentsError as exc:
        raise CommandError(problems_text(str(exc), "environment")) from None
    return assigned, file


def probe_environments(environments: Sequence[Any], images: bool = True, engine: str | None = None) -> dict[str, dict[str, str]]:
    """Before any grading: run every interpreter of this machine the gradings will use (``import
    pytest``), and (``images``: the gradings run here, not on a cluster) look for every image."""
    from ..environments import EnvironmentsError, check_images, probe_all

    try:
        versions = probe_all(environments)
        if images:
            check_images(environments, engine)
    except EnvironmentsError as exc:
        raise CommandError(problems_text(str(exc), "environment")) from None
    return versions


def hidden_paths(args: argparse.Namespace) -> tuple[Path, ...]:
    """What the test process must never see, even inside a folder it is shown (an interpreter's):
    the ledger and every output file of the command (docs/untrusted-candidates.md)."""
    ledger = None if getattr(args, "no_ledger", False) else Path(getattr(args, "ledger", None) or DEFAULT_LEDGER)
    paths = [*(Path(v) for v in (getattr(args, name, None) for name in ("out", "receipt", "report")) if v)]
    if ledger is not None:  # with its write-ahead log and its claimants' owner files
        paths[:0] = [ledger, Path(f"{ledger}-wal"), Path(f"{ledger}-shm"), ledger.with_name(ledger.name + ".claims")]
    import os

    key_file = os.environ.get("OBJECTIVE_SCORE_LEDGER_KEY_FILE")  # the ledger's key: a candidate that read it could seal
    if key_file:
        paths.append(Path(key_file))
    return tuple(p.resolve() for p in paths)


MAX_PATCH_BYTES = 1 << 30  # 1 GiB: a larger limit is a typo; the limit exists to refuse such patches unread
MAX_RERUNS = 100


patch_bytes = options.whole_number(1, MAX_PATCH_BYTES, "a patch size limit", " bytes (below 1 byte every candidate, "
                                   "the gold patch included, would be refused unread)")  # fmt: skip
"""A patch size limit: a whole number of bytes, from 1 to 1 GiB."""


def add_patch_limit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-patch-size", metavar="BYTES", type=patch_bytes, default=16 << 20,
                        help="Refuse a candidate larger than this, unread (failure class patch_too_large; default 16 MiB)")


def add_runner_options(parser: argparse.ArgumentParser, keep: bool = True, per_instance: bool = False,
                       python_default: str | None = sys.executable) -> None:  # fmt: skip
    if per_instance:  # --python and --environments FILE (grade-batch)
        options.add_environment_options(parser.add_argument)
    else:
        parser.add_argument("--python", metavar="PATH", default=python_default,
                            help="Interpreter of the environment under test (default: this one; in container "
                            "mode the image's python3)")  # fmt: skip
    parser.add_argument("--timeout", metavar="S", type=options.positive_seconds, default=1800.0,
                        help="Kill the test run's whole process group after S seconds (default: 1800)")  # fmt: skip
    if keep:
        parser.add_argument("--keep", action="store_true", help="Keep the workspace (its path is in the envelope)")
    parser.add_argument("--allow-network", action="store_true",
                        help="Let the tests reach the network (default: unshared where the machine allows)")  # fmt: skip


reruns = options.whole_number(0, MAX_RERUNS, "the number of re-runs")
"""``--reruns N``: a whole number from 0 to 100."""


def compute_rate(args: argparse.Namespace) -> float:
    """``--compute-rate``, else the default dollars per CPU-second."""
    from ..cost_ledger import DEFAULT_COMPUTE_RATE

    return DEFAULT_COMPUTE_RATE if args.compute_rate is None else args.compute_rate


def existing_ledger(args: argparse.Namespace) -> Path:
    """``--ledger`` (default :data:`~pytest_objective_scoring.ledger.DEFAULT_LEDGER`), which must exist: the commands
    that only read a ledger never create one."""
    from ..inputs import stat_problem

    path = Path(args.ledger) if args.ledger else DEFAULT_LEDGER
    found, problem = stat_problem(path)
    if found is None:
        raise CommandError(f"--ledger {path}: " + ("no such ledger" if problem == "no such file or directory" else str(problem)))
    return path
