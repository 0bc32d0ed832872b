"""The pytest plugin's settings, resolved once from a pytest ``Config``: command line >
environment > ini > default (:class:`Settings`, :func:`resolve_settings`).

Below :mod:`.plugin` (which reads them in ``pytest_configure``) and reached lazily from
:mod:`.options` (``options.Settings``); it imports only the option definitions of
:mod:`.plugin_options`, so neither of those imports back up.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from . import plugin_options as options
from .cost_ledger import DEFAULT_COMPUTE_RATE


@dataclass(frozen=True)
class Settings:
    """The plugin's settings, resolved once: command line > environment > ini > default."""

    instance: Path | None
    instance_id: str | None
    out: Path | None
    compat: str
    patch_ref: str | None
    gate: bool
    select: bool
    ledger: Path | None = None
    cost: Path | None = None
    harness: str | None = None
    compute_rate: float = DEFAULT_COMPUTE_RATE

    @property
    def enabled(self) -> bool:
        return self.instance is not None


def resolve_settings(config: Any, usage_error: type[Exception]) -> Settings:
    """Read the settings from a pytest ``Config``; bad values raise ``usage_error``."""

    def pick(option: str, ini: str | None, env: str | None = None) -> tuple[Any, str]:
        value = config.getoption(option)
        if value is not None:
            return value, "command line"
        if env and os.environ.get(env):
            return os.environ[env], f"${env}"
        if ini is not None:
            ini_value = config.getini(ini)
            if ini_value not in (None, ""):
                return ini_value, "config file"
        return None, "default"

    instance, instance_source = pick("objective_score", "objective_score", options.ENV_INSTANCE)
    instance_id, _ = pick("objective_instance_id", "objective_instance_id")
    out, out_source = pick("objective_score_out", "objective_score_out", ENV_OUT)
    out_path = _path(config, out, out_source)
    _check_output(usage_error, "--objective-score-out", out_path, out_source)
    compat, source = pick("objective_compat", "objective_compat")
    if compat is not None and compat not in options.COMPAT_MODES:
        raise usage_error(f"objective_compat {compat!r} (from {source}) is not one of {', '.join(options.COMPAT_MODES)}")
    gate, gate_source = pick("objective_gate", "objective_gate", ENV_GATE)
    if gate_source == f"${ENV_GATE}":
        gate = _switch(usage_error, ENV_GATE, str(gate))
    select, _ = pick("objective_select", "objective_select")
    ledger, ledger_source = pick("objective_ledger", "objective_ledger", ENV_LEDGER)
    if config.getoption("objective_no_ledger"):
        if config.getoption("objective_ledger"):
            raise usage_error(f"--objective-no-ledger and --objective-ledger {config.getoption('objective_ledger')} "
                              "contradict each other: give one of them")  # fmt: skip
        ledger_path = None
    else:
        ledger_path = _path(config, ledger, ledger_source)
        _check_output(usage_error, "--objective-ledger", ledger_path, ledger_source)
        ledger_path = ledger_path or (Path(config.rootpath) / ".objective-scoring" / "ledger.sqlite")
    cost, cost_source = pick("objective_cost", None)
    rate, rate_source = pick("objective_compute_rate", "objective_compute_rate")
    if rate is not None and rate_source == "config file":
        try:
            rate = options.compute_rate(str(rate))
        except argparse.ArgumentTypeError as exc:
            raise usage_error(f"objective_compute_rate (from config file): {exc}") from None
    return Settings(
        cost=_path(config, cost, cost_source),
        harness=config.getoption("objective_harness"),
        compute_rate=DEFAULT_COMPUTE_RATE if rate is None else rate,
        instance=_path(config, instance, instance_source),
        instance_id=instance_id or None,
        out=out_path,
        compat=compat or "strict",
        patch_ref=config.getoption("objective_patch_ref"),
        gate=bool(gate),
        select=bool(select),
        ledger=ledger_path,
    )


# Environment variables read when the flag is not given (the command line wins, then the environment,
# then the ini file), as $PYTEST_OBJECTIVE_SCORE is for the instance.
ENV_OUT: Final = "PYTEST_OBJECTIVE_SCORE_OUT"
ENV_GATE: Final = "PYTEST_OBJECTIVE_GATE"
ENV_LEDGER: Final = "PYTEST_OBJECTIVE_LEDGER"
SWITCH_WORDS: Final = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False,
                       "off": False}  # fmt: skip


def _switch(usage_error: type[Exception], name: str, value: str) -> bool:
    """A yes/no environment variable; anything else is refused, never read as one or the other."""
    word = value.strip().lower()
    if word not in SWITCH_WORDS:
        raise usage_error(f"${name}={value!r}: expected 1/0, true/false, yes/no or on/off")
    return SWITCH_WORDS[word]


def _check_output(usage_error: type[Exception], option: str, path: Path | None, source: str) -> None:
    """A file the plugin writes, checked before the run as the command line checks its outputs
    (:mod:`.outputs`): a missing folder is never created (but a ``.objective-scoring`` folder)."""
    from .outputs import file_problem
    from .own_folder import OWN_FOLDER

    if path is None:
        return
    try:
        if path.parent.name == OWN_FOLDER and not path.parent.exists() and path.parent.parent.is_dir():
            return
    except OSError:  # a folder that cannot be entered, a name too long: file_problem says which
        pass
    problem = file_problem(option, path)
    if problem:
        raise usage_error(f"{problem} (from {source})")


def _path(config: Any, value: str | None, source: str) -> Path | None:
    """Paths from the config file are relative to the rootdir, others to where pytest started."""
    if not value:
        return None
    base = Path(config.rootpath) if source == "config file" else Path(config.invocation_params.dir)
    try:
        return (base / str(value)).resolve()
    except (OSError, RuntimeError):  # a link loop (RuntimeError before 3.13): said where the file is read
        return Path(os.path.abspath(base / str(value)))
