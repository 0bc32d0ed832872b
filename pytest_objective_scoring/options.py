"""Option definitions shared by the pytest plugin and the command line.

Each factory takes an ``addoption``-like callable (``parser.getgroup(...).addoption``
in the plugin, ``ArgumentParser.add_argument`` in the CLI) and a flag prefix, so
a setting has one name, one help text and one validator in both places.
Help texts follow pytest-xdist's rules: capitalised, a single phrase has no period.

The plugin's own options live in :mod:`.plugin_options` (every pytest run of a
project where the package is installed imports it, so it stays small) and are
re-exported here. The plugin's resolved :class:`~.settings.Settings` and
:func:`~.settings.resolve_settings` live in :mod:`.settings`, imported on first use.
"""

from __future__ import annotations

import argparse
from typing import Any, Final

from .plugin_options import (  # noqa: F401 (re-exported: the CLI reads them from here)
    COMPAT_MODES,
    ENV_INSTANCE,
    HELP_COMPAT,
    HELP_COMPUTE_RATE,
    HELP_COST,
    HELP_GATE,
    HELP_HARNESS,
    HELP_INSTANCE,
    HELP_INSTANCE_ID,
    HELP_LEDGER,
    HELP_NO_LEDGER,
    HELP_OUT,
    HELP_PATCH_REF,
    HELP_SELECT,
    PLUGIN_INI,
    AddOption,
    add_compat_option,
    add_cost_options,
    add_ledger_options,
    add_plugin_ini,
    add_plugin_options,
    add_scoring_options,
    compat_type,
    compute_rate,
)

__all__ = [
    "Settings",
    "add_cost_options",
    "add_environment_options",
    "add_scoring_options",
    "compat_type",
    "positive_seconds",
    "whole_number",
]

HELP_PYTHON_PER_INSTANCE: Final = (
    "Interpreter of the environment under test, for every instance --environments does not name "
    "(default: this one; with --environments, an instance the file does not name is refused)"
)
HELP_ENVIRONMENTS: Final = (
    "A JSON (or .toml) object mapping an instance id or owner/name@version to an interpreter path, or to "
    '{"python": PATH, "image": NAME}; the instance id wins over repo@version, which wins over --python. '
    "Every interpreter is checked (import pytest) before anything is graded"
)


MAX_SECONDS: Final = 7 * 24 * 3600.0  # a week: a longer timeout is a typo (or inf), never a grading's budget


def shown(value: str, limit: int = 40) -> str:
    """``value`` quoted for a refusal, cut after ``limit`` characters (a 5,000-digit number is one line)."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"... ({len(value)} characters)"


def positive_seconds(value: str) -> float:
    """A timeout: a finite number of seconds, more than 0 and at most a week (``inf``, ``nan`` and
    ``1e309`` are refused before work, never met as an overflow after it)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(value)} is not a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{shown(value)}: the timeout must be more than 0 seconds")
    if not seconds <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{shown(value)}: the timeout must be at most {MAX_SECONDS:.0f} seconds (a week)")
    return seconds


def whole_number(low: int, high: int, what: str, note: str = "") -> Any:
    """An argparse type: a whole number from ``low`` to ``high`` (both included); ``what`` names it
    in the refusal ("the number of workers"), ``note`` says why the range is what it is."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(value)} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{shown(value)}: {what} must be from {low} to {high}{note}")
        return number

    parse.__name__ = "whole_number"
    return parse


def add_environment_options(addoption: AddOption) -> None:
    """Where each instance is graded (``grade-batch``, ``audit run``, ``ab run``): ``--python``,
    whose default (None: this interpreter) the commands tell apart from an explicit value, and
    ``--environments FILE`` (:mod:`.environments`)."""
    addoption("--python", metavar="PATH", default=None, help=HELP_PYTHON_PER_INSTANCE)
    addoption("--environments", metavar="FILE", default=None, help=HELP_ENVIRONMENTS)
    addoption("--image", metavar="TEMPLATE", default=None,
              help="Container mode for every instance the environments file does not name: grade it in this image "
              "({instance_id}, {swebench_id} filled in; the preset 'swebench' is SWE-bench's naming); --python is "
              "then the interpreter inside the image (default: python3). See docs/containers.md")
    addoption("--engine", choices=("podman", "docker", "auto"), default="auto",
              help="The container engine for images (default: auto, the first that answers)")


HELP_AGAINST_GOLD = (
    "For a resolved candidate, also run the tests beyond the listed ones under the candidate and under the gold "
    "patch, and report each test gold passes that the candidate does not (a regression, confirmed by a second run): "
    "'packages' (the test files under the folders of the Python files gold touches, and beside the listed tests' "
    "files) or 'suite' (the whole suite). The Score stays the listed tests'; the second figure, resolved and free of "
    "regressions against gold, is reported beside it (docs/against-gold.md)"
)


def add_against_gold(addoption: AddOption) -> None:
    """``--against-gold SCOPE`` (``grade``, ``grade-batch``, ``ab run``; :mod:`.against_gold`)."""
    addoption("--against-gold", choices=("packages", "suite"), default=None, metavar="SCOPE", help=HELP_AGAINST_GOLD)


def __getattr__(name: str) -> Any:
    """``Settings`` and ``resolve_settings``, from :mod:`.settings` on first use (PEP 562)."""
    if name in ("Settings", "resolve_settings"):
        from . import settings

        return getattr(settings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
