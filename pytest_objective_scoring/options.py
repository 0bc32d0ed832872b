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


def positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{value!r}: the timeout must be more than 0 seconds")
    return seconds


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


def __getattr__(name: str) -> Any:
    """``Settings`` and ``resolve_settings``, from :mod:`.settings` on first use (PEP 562)."""
    if name in ("Settings", "resolve_settings"):
        from . import settings

        return getattr(settings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
