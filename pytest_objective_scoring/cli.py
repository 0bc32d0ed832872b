"""The ``objective-score`` command line: the parser, assembled from the :mod:`.commands` modules
(one per workflow, each registering its subcommands), and :func:`main`, which runs one command.

Exit statuses (:mod:`.errors`): 0 resolved (or the command succeeded), 1 not resolved,
2 bad input, 3 infrastructure failure (never the candidate's fault).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Sequence

from . import __version__
from .commands import COMMANDS
from .errors import EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, CommandError, Terminated, interrupted_status, problems_text, terminate

__all__ = ["main"]


def command_module(module: str) -> Any:
    """The :mod:`.commands` module ``module`` (imported now)."""
    import importlib

    return importlib.import_module(f"{__package__}.commands.{module}")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. With ``argv``, only the module of the command it names registers its
    subcommands' arguments; every other command is its name and help. Without it, every module
    registers (the whole parser, for tools that read it)."""
    parser = argparse.ArgumentParser(
        prog="objective-score",
        description="Decide by executing tests, never by asking a model, whether a candidate patch resolves a task.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if argv is None:
        wanted = {module for module, _, _ in COMMANDS}
    else:
        named = next((a for a in argv if not a.startswith("-")), None)
        wanted = {module for module, name, _ in COMMANDS if name == named}
    registered: set[str] = set()
    for module, name, text in COMMANDS:
        if module in wanted:
            if module not in registered:
                command_module(module).register(sub)
                registered.add(module)
        else:
            sub.add_parser(name, help=text)
    return parser


ENV_LEDGER = "OBJECTIVE_SCORE_LEDGER"


def ledger_from_environment(args: argparse.Namespace) -> None:
    """``$OBJECTIVE_SCORE_LEDGER`` as ``--ledger`` for a command that takes one when neither
    ``--ledger`` nor ``--no-ledger`` is given (the command line wins)."""
    import os

    value = os.environ.get(ENV_LEDGER)
    if value and hasattr(args, "ledger") and args.ledger is None and not getattr(args, "no_ledger", False):
        args.ledger = value


def _internal_error(command: str) -> int:
    """The grader's own failure: an infrastructure failure (exit 3), never "not resolved"."""
    import traceback

    traceback.print_exc()
    print(f"objective-score {command}: internal error (infrastructure failure, exit 3)", file=sys.stderr)
    return EXIT_INFRASTRUCTURE


def _last_frame(exc: BaseException) -> str | None:
    """The name of the function that raised ``exc``."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return None if tb is None else tb.tb_frame.f_code.co_name


def _print(message: str | None, file: Any = None) -> None:
    """argparse's printing, less its silence about write errors."""
    if message:
        (file or sys.stderr).write(message)


def _one_line_error(parser: argparse.ArgumentParser) -> Callable[[str], Any]:
    """argparse's ``error``, less its usage block: one line naming the problem and where the options
    are listed (a refusal is read in a CI log, where 15 lines of usage hide it), exit 2."""

    def error(message: str) -> Any:
        parser.exit(EXIT_BAD_INPUT, f"{parser.prog}: error: {message} (see {parser.prog} --help)\n")

    return error


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser under it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found.extend(_parsers(sub))
    return found


def unknown_options(parser: argparse.ArgumentParser, arguments: Sequence[str]) -> None:
    """Refuse an option no command knows before argparse says a required one is missing (a
    misspelt ``--instnace`` is reported as itself, not as "--instance is required")."""
    required = [a for p in _parsers(parser) for a in p._actions if a.required and a.option_strings]
    for action in required:
        action.required = False
    try:
        import contextlib
        import io

        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):  # argparse's, below
            try:
                _, extra = parser.parse_known_args(list(arguments))
            except SystemExit:
                return
    finally:
        for action in required:
            action.required = True
    unknown = [a for a in extra if a.startswith("-") and a != "-"]
    if unknown:
        named = next((a for a in arguments if not a.startswith("-")), None)
        owner = next((p for p in _parsers(parser)[1:] if named and p.prog.split()[-1] == named), parser)
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")


def _bad_input() -> tuple[type[Exception], ...]:
    """The refusals every command reports as bad input (exit 2): a :class:`.CommandError`, and a
    ledger's or a benchmark set's refusal when the command used those modules (only then can one
    be raised: they are not imported for it)."""
    kinds: list[type[Exception]] = [CommandError]
    for module, name in (("ledger", "LedgerError"), ("sets", "SetError")):
        loaded = sys.modules.get(f"{__package__}.{module}")
        if loaded is not None:
            kinds.append(getattr(loaded, name))
    return tuple(kinds)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. A pipe closed by its reader (``... --json | head``) ends the command
    quietly with exit 141 (128 + SIGPIPE, as a shell reports it): see :mod:`.outputs`."""
    from . import outputs

    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(arguments)
    for each in _parsers(parser):  # argparse swallows a write error: a closed pipe must end as one (141)
        each._print_message = _print  # type: ignore[method-assign]
        each.error = _one_line_error(each)  # type: ignore[method-assign,assignment]
    try:
        unknown_options(parser, arguments)
        args = parser.parse_args(arguments)
    except BrokenPipeError:  # --help into a closed pipe
        return outputs.closed_pipe()
    except SystemExit as exc:  # --help or --version: flushed here, so that a closed pipe ends as one
        if exc.code in (0, None):
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                return outputs.closed_pipe()
        raise
    handler: Callable[[argparse.Namespace], int] = args.handler
    import signal
    import threading

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminate) if main_thread else None  # as Ctrl-C does, exit 143
    try:
        ledger_from_environment(args)
        from . import inputs

        closed = inputs.closed_output_problem()  # `>&-`: nothing printed could be read; said before any work
        if closed:
            if sys.stderr is not None:
                print(f"objective-score {args.command}: infrastructure failure (exit 3): {closed}", file=sys.stderr)
            return EXIT_INFRASTRUCTURE
        undecodable = inputs.undecodable_options(parser, args)  # a name that is not UTF-8 cannot be recorded
        if undecodable:
            raise CommandError(undecodable)
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
    except SystemExit as exc:  # rich ends a table printed into a closed pipe with exit 1: a closed pipe is 141
        if exc.code == 1 and _last_frame(exc) == "on_broken_pipe":
            return outputs.closed_pipe()
        raise
    except KeyboardInterrupt as exc:
        print(f"objective-score {args.command}: interrupted{' (SIGTERM)' if isinstance(exc, Terminated) else ''}",
              file=sys.stderr)  # fmt: skip
        return interrupted_status(exc)
    except OSError as exc:  # a full disk (or quota) anywhere: one line, an infrastructure failure
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            return _internal_error(args.command)
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"objective-score {args.command}: infrastructure failure (exit 3): {exc.strerror}{where}; what was "
              "written before stays as it was", file=sys.stderr)  # fmt: skip
        return EXIT_INFRASTRUCTURE
    except Exception as exc:
        unavailable = getattr(sys.modules.get(f"{__package__}.ledger"), "LedgerUnavailable", None)
        if unavailable is not None and isinstance(exc, unavailable):  # a full disk, quota or I/O error: not input
            print(f"objective-score {args.command}: infrastructure failure (exit 3): {exc}", file=sys.stderr)
            return EXIT_INFRASTRUCTURE
        if isinstance(exc, _bad_input()):
            print(f"objective-score {args.command}: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        return _internal_error(args.command)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
