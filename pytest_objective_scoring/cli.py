"""The ``objective-score`` command line: the parser, assembled from the :mod:`.commands` modules
(one per workflow, each registering its subcommands), and :func:`main`, which runs one command.

Exit statuses (:mod:`.errors`): 0 resolved (or the command succeeded), 1 not resolved,
2 bad input, 3 infrastructure failure (never the candidate's fault).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Final, Sequence

from . import __version__
from .commands import ab, audit, batch, costs, demo, grade, harbor, judged, ledger, samples, scorecard, sets
from .errors import EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, EXIT_INTERRUPTED, CommandError, problems_text

__all__ = ["main"]

# in the order ``objective-score --help`` lists them
COMMANDS: Final = (grade, demo, ledger, batch, sets, ab, audit, samples, harbor, judged, scorecard, costs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="objective-score",
        description="Decide by executing tests, never by asking a model, whether a candidate patch resolves a task.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. A pipe closed by its reader (``... --json | head``) ends the command
    quietly with exit 141 (128 + SIGPIPE, as a shell reports it): see :mod:`.outputs`."""
    from . import outputs

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except BrokenPipeError:  # --help into a closed pipe
        return outputs.closed_pipe()
    handler: Callable[[argparse.Namespace], int] = args.handler
    from .ledger import LedgerError
    from .sets import SetError

    try:
        # before any work: every output path the command line names, and the optional dependencies it needs
        problems = outputs.problems_of(args)
        extra = outputs.extra_problem(args)
        if extra:
            problems.append(extra)
        if problems:
            raise CommandError(problems_text("\n".join(problems), "output path or dependency"))
        code = handler(args)
        sys.stdout.flush()  # a pipe the reader closed fails here at the latest, not in the interpreter's exit
        return code
    except BrokenPipeError:  # `objective-score ... | head`: the reader has what it wanted; end quietly
        return outputs.closed_pipe()
    except (CommandError, LedgerError, SetError) as exc:
        print(f"objective-score {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"objective-score {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # the grader's own failure is an infrastructure failure, never "not resolved"
        import traceback

        traceback.print_exc()
        print(f"objective-score {args.command}: internal error (infrastructure failure, exit 3)", file=sys.stderr)
        return EXIT_INFRASTRUCTURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
