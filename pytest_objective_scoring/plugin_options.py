"""The pytest plugin's options (names, help texts, validators, shared with the CLI by :mod:`.options`),
the ``pytest_addoption`` hook of its entry point (:mod:`.plugin_entry`) and :func:`asked`.

pytest imports this module in every run where the package is installed: it stays small, imports
nothing pytest has not imported already, and not pytest itself (the command line imports it too).
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Final

AddOption = Callable[..., Any]
COMPAT_MODES: Final = ("strict", "swebench")
ENV_INSTANCE: Final = "PYTEST_OBJECTIVE_SCORE"

HELP_INSTANCE: Final = (
    "Grade this run against a SWE-bench-style instance (a JSON object, or a JSON array / JSONL dataset "
    "with --objective-instance-id); also from $PYTEST_OBJECTIVE_SCORE or the objective_score ini key"
)
HELP_INSTANCE_ID: Final = "Which instance to grade when the instance file is a dataset of several"
HELP_OUT: Final = "Write the Score and its envelope (per-test outcomes, SWE-bench report shape) as JSON to this file"
HELP_COMPAT: Final = (
    "Grading rules: 'strict' (default: only passes count, skipped PASS_TO_PASS is broken, an id cut at a space "
    "needs every test it was cut from) or 'swebench' (SWE-bench 5.x: XFAIL passes, skipped PASS_TO_PASS preserved, "
    "truncated ids matched by prefix)"
)
HELP_PATCH_REF: Final = "Name the candidate under test in the Score (default: a sha256 of the working tree's diff)"
HELP_GATE: Final = ("Set pytest's exit status from the verdict: 0 resolved, 1 not resolved, 6 no verdict (a status no "
                     "pytest outcome uses; pytest's own non-zero status stands); also $PYTEST_OBJECTIVE_GATE=1")
HELP_SELECT: Final = "Run only the tests the instance lists; deselect every other collected test"
HELP_LEDGER: Final = "Append the Score and its per-test outcomes to this ledger (default: .objective-scoring/ledger.sqlite)"
HELP_NO_LEDGER: Final = "Do not write the ledger"
HELP_COST: Final = (
    "The harness's cost of the candidate: a JSON object with tokens, calls and dollars (or SWE-agent's "
    "model_stats), and optionally harness / model_name_or_path naming it"
)
HELP_COMPUTE_RATE: Final = "Dollars per CPU-second of grading, added to the cost's dollars (default: 0.00001, $0.036 per CPU-hour)"
HELP_HARNESS: Final = "Name of the harness or model that produced the candidate (groups objective-score costs)"


def compat_type(value: str) -> str:
    if value not in COMPAT_MODES:
        raise argparse.ArgumentTypeError(f"{value!r} is not a compat mode; choose one of {', '.join(COMPAT_MODES)}")
    return value


def compute_rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of dollars per CPU-second") from None
    if not (rate >= 0 and rate != float("inf")):
        raise argparse.ArgumentTypeError(f"{value!r}: the compute rate must be a finite number >= 0")
    return rate


def _add(addoption: AddOption, prefix: str, name: str, metavar: str | None, text: str, **more: Any) -> None:
    """``--PREFIXNAME`` with dest ``PREFIX_NAME`` (dashes as underscores); a flag when metavar is None."""
    if metavar is None:
        more["action"] = "store_true"
    else:
        more["metavar"] = metavar
    more.setdefault("default", None)
    addoption(f"--{prefix}{name}", dest=(prefix + name).replace("-", "_"), help=text, **more)


def add_compat_option(addoption: AddOption, prefix: str = "objective-") -> None:
    _add(addoption, prefix, "compat", "MODE", HELP_COMPAT, type=compat_type)


def add_scoring_options(addoption: AddOption, prefix: str = "objective-") -> None:
    """Options that decide how outcomes are graded (plugin and ``objective-score grade``)."""
    _add(addoption, prefix, "instance-id", "ID", HELP_INSTANCE_ID)
    add_compat_option(addoption, prefix)
    _add(addoption, prefix, "patch-ref", "REF", HELP_PATCH_REF)


def add_ledger_options(addoption: AddOption, prefix: str = "objective-") -> None:
    """Where graded runs are recorded (plugin and ``objective-score``)."""
    _add(addoption, prefix, "ledger", "PATH", HELP_LEDGER)
    _add(addoption, prefix, "no-ledger", None, HELP_NO_LEDGER, default=False)


def add_cost_options(addoption: AddOption, prefix: str = "objective-", cost_file: bool = True) -> None:
    """What a graded run cost (plugin, ``objective-score grade`` and ``grade-batch``)."""
    if cost_file:
        _add(addoption, prefix, "cost", "FILE", HELP_COST)
        _add(addoption, prefix, "harness", "NAME", HELP_HARNESS)
    _add(addoption, prefix, "compute-rate", "DOLLARS", HELP_COMPUTE_RATE, type=compute_rate)


def add_plugin_options(group: Any) -> None:
    """Every ``--objective-*`` option of the plugin, in one group."""
    add = group.addoption
    _add(add, "objective-", "score", "INSTANCE", HELP_INSTANCE)
    add_scoring_options(add)
    _add(add, "objective-", "score-out", "FILE", HELP_OUT)
    _add(add, "objective-", "gate", None, HELP_GATE)
    _add(add, "objective-", "select", None, HELP_SELECT)
    add_ledger_options(add)
    add_cost_options(add)


# The plugin's ini keys, each the flag of the same name: (name, help, a bool?).
PLUGIN_INI: Final = (
    ("objective_score", HELP_INSTANCE, False),
    ("objective_instance_id", HELP_INSTANCE_ID, False),
    ("objective_score_out", HELP_OUT, False),
    ("objective_compat", HELP_COMPAT, False),
    ("objective_gate", HELP_GATE, True),
    ("objective_select", HELP_SELECT, True),
    ("objective_ledger", HELP_LEDGER, False),
    ("objective_compute_rate", HELP_COMPUTE_RATE, False),
)


def add_plugin_ini(parser: Any) -> None:
    for name, text, flag in PLUGIN_INI:
        if flag:
            parser.addini(name, text, type="bool", default=False)
        else:
            parser.addini(name, text, default=None)


def pytest_addoption(parser: Any) -> None:
    add_plugin_options(parser.getgroup("objective-scoring", "Classify tests and gate on FAIL_TO_PASS / PASS_TO_PASS outcomes"))
    add_plugin_ini(parser)


def plugin_dests() -> frozenset[str]:
    """The ``dest`` of every option :func:`add_plugin_options` registers (and of no other plugin's
    or conftest's option, whatever its name)."""

    class Recorder:
        @staticmethod
        def addoption(*names: str, dest: str, **more: Any) -> None:
            dests.append(dest)

    dests: list[str] = []
    add_plugin_options(Recorder)
    return frozenset(dests)


def asked(config: Any) -> bool:
    """Whether any of the plugin's flags, ini keys or its environment variable is given."""
    if os.environ.get(ENV_INSTANCE):
        return True
    if any(getattr(config.option, dest, None) for dest in plugin_dests()):
        return True
    return any(config.getini(name) for name, _, _ in PLUGIN_INI)
