"""Exceptions made again from the arguments they were made with (:class:`Remade`).

An exception whose ``__init__`` takes other arguments than its message (a file, a field and a
problem) cannot be unpickled or copied the default way, which calls its class with ``args`` (the
message alone). Dask pickles what a worker raises, so each of the package's error classes mixes
this in: one mechanism for all of them, keyword arguments included.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["Remade"]


class Remade:
    """Mixed into an exception class (before the exception base): pickled and copied by calling its
    class again with the positional and keyword arguments it was made with."""

    _made_with: tuple[tuple[Any, ...], dict[str, Any]]

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        made = super().__new__(cls, *args, **kwargs)  # type: ignore[call-arg]  # BaseException.__new__ takes them
        made._made_with = (args, kwargs)
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        args, kwargs = self._made_with
        return (functools.partial(type(self), **kwargs) if kwargs else type(self), args)
