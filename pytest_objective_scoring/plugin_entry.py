"""The ``pytest11`` entry point: the plugin's options, and nothing more until a run asks for grading.

pytest imports this module in every run where the package is installed, so it only puts
:class:`PlainImports` in place, registers the ``--objective-*`` options and ini keys (from
:mod:`.plugin_options`) and imports :mod:`.plugin` only when one of them is given or
``$PYTEST_OBJECTIVE_SCORE`` is set.
"""

from __future__ import annotations

import importlib.machinery
import sys
from typing import Any, Sequence

import pytest

PACKAGE = __name__.rpartition(".")[0]


class PlainImports:
    """Imports the package's other modules as ordinary modules, ahead of pytest's assertion rewriting.

    pytest rewrites every module of a plugin's distribution; where it cannot cache the result
    (``PYTHONDONTWRITEBYTECODE``, a read-only install) it parses and compiles each of them again
    in every run: about 30 ms in a run that does not enable the plugin and 70 ms in every process
    of one that does (``benchmarks/bench_plugin_idle_xdist.py``). None of them is a test.
    """

    objective_scoring_plain_imports = True

    def find_spec(self, name: str, path: Sequence[str] | None, target: Any = None) -> Any:
        if path is None or not name.startswith(PACKAGE + "."):
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)


if not any(getattr(finder, "objective_scoring_plain_imports", False) for finder in sys.meta_path):
    sys.meta_path.insert(0, PlainImports())  # type: ignore[arg-type]

from . import plugin_options  # noqa: E402 (through PlainImports)

# The options hook comes from plugin_options, which stays free of pytest (the command line shares it).
pytest_addoption = plugin_options.pytest_addoption


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if plugin_options.asked(config):  # resolved, checked and, with an instance, enabled by the plugin itself
        from . import plugin

        plugin.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = sys.modules.get(PACKAGE + ".plugin")
    if plugin is not None:
        plugin.unconfigure(config)
