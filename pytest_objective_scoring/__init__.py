"""pytest-objective-scoring: decide by executing tests whether a code change works.

Importing the package is cheap: the public records are re-exported lazily so
that the pytest plugin costs nothing measurable in runs that do not enable it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Instance", "InstanceError", "Score", "TestGate", "__version__", "load_instance"]

_LAZY = {
    "__version__": "_version",  # not even this one-line module in a pytest run that does not enable the plugin
    "Score": "records",
    "TestGate": "records",
    "Instance": "instances",
    "InstanceError": "instances",
    "load_instance": "instances",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_objective_scoring' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
