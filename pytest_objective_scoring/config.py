"""Project configuration: the ``[tool.objective-scoring]`` table of ``pyproject.toml``.

Only settings that describe a standing policy live here (the audit schedule); everything
about one run is an option. Read from the current folder's ``pyproject.toml``; a missing
file or table means the defaults.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

from . import nesting

__all__ = ["AUDIT_EVERY_DAYS", "ConfigError", "audit_every_days", "load"]

AUDIT_EVERY_DAYS: Final = 30.0
TABLE: Final = "objective-scoring"


class ConfigError(ValueError):
    """A configuration value that cannot be used: names the file, the key and what was expected."""


def load(start: Path | None = None) -> tuple[dict[str, Any], Path | None]:
    path = (start or Path.cwd()) / "pyproject.toml"
    if not path.is_file():
        return {}, None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = nesting.bounded(tomllib.loads, path.read_text(encoding="utf-8"), tomllib.TOMLDecodeError)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read as TOML ({exc})") from None
    table = data.get("tool", {}).get(TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    return table, path


def audit_every_days(option: float | None, start: Path | None = None) -> tuple[float, str]:
    """The audit interval in days and where it came from: the option, the config, the default."""
    if option is not None:
        return option, "option"
    table, path = load(start)
    value = table.get("audit_every_days")
    if value is None:
        return AUDIT_EVERY_DAYS, "default"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{path}: [tool.{TABLE}] audit_every_days: expected a number of days > 0, got {value!r}")
    return float(value), f"{path}"
