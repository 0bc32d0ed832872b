"""Bounded nesting for every reader of instances, datasets and reports.

A JSON document or an XML file nested thousands of levels deep is no instance, dataset or report
anyone made by hand or by a test run: it is bad input, and it must be refused as bad input (the
file, where, and why: exit 2), never end in a ``RecursionError`` raised from inside a parser or a
walk of the parsed tree (exit 3, an internal error). :data:`LIMIT` levels are far more than any real
file holds (SWE-bench rows: 2; pytest-json-report: 6; JUnit XML: 4 or 5).

:func:`loads` is ``json.loads`` with that bound; what it raises is a :class:`json.JSONDecodeError`
(``TooDeep``), so every reader's existing handling of invalid JSON names the file, the line and the
column. XML readers check the depth of their own element stack against :data:`LIMIT`.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Final

__all__ = ["LIMIT", "TooDeep", "bounded", "deep_at", "depth", "loads", "too_deep"]

LIMIT: Final = 100
"""Arrays and objects (JSON) or elements (XML) inside one another, at most."""


def too_deep(what: str = "arrays and objects") -> str:
    return (f"nested more than {LIMIT} levels deep ({what} inside one another; no real instance, dataset or report "
            "nests that deep)")


class TooDeep(json.JSONDecodeError):
    """A JSON document nested more than :data:`LIMIT` levels deep."""

    def __init__(self, doc: str, pos: int = 0) -> None:
        super().__init__(too_deep(), doc, pos)

    def __reduce__(self) -> tuple[type, tuple[str, int]]:
        return type(self), (self.doc, self.pos)


def depth(value: Any) -> int:
    """How many arrays and objects stand inside one another in a parsed JSON value (iteratively:
    the walk itself never recurses)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if deepest > LIMIT:
            return deepest
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def bounded(parse: Callable[[str], Any], text: str, error: Callable[[str], Exception]) -> Any:
    """``parse(text)`` (TOML's or YAML's reader), refusing a document nested more than :data:`LIMIT`
    deep with ``error(message)``: the parser's own ``RecursionError`` never escapes."""
    try:
        value = parse(text)
    except RecursionError:
        raise _made(error, too_deep("arrays and tables"), text) from None
    if depth(value) > LIMIT:
        raise _made(error, too_deep("arrays and tables"), text)
    return value


def _made(error: Callable[..., Exception], message: str, text: str) -> Exception:
    """``error(message)``, or ``error(message, text, 0)`` for a decode error that takes only those
    (tomli 2.1 and later, Python 3.10's TOML reader, deprecate a message alone)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return error(message)
        except DeprecationWarning:
            pass
    return error(message, text, 0)


def deep_at(text: str, start: int = 0, end: int | None = None, level: int = 0) -> int:
    """The offset of the first bracket past :data:`LIMIT` levels in ``text[start:end]`` (strings
    skipped), ``level`` levels deep at ``start``; ``start`` if none (a streamed reader counts from
    where a value stands)."""
    in_string = escaped = False
    for offset in range(start, len(text) if end is None else end):
        char = text[offset]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            if level > LIMIT:
                return offset
        elif char in "]}":
            level -= 1
    return start


def long_number(exc: ValueError) -> bool:
    """Whether ``exc`` is Python refusing to convert an integer of too many digits (a hook's own
    ValueError, such as a refused NaN, is not)."""
    return "integer string conversion" in str(exc)


def number_too_long(doc: str, start: int) -> json.JSONDecodeError:
    """The refusal of an integer longer than Python converts (``sys.get_int_max_str_digits``, 4300
    digits by default), at its place in ``doc`` (searched from ``start``), as json says a syntax
    error: a line, never a ``ValueError`` from inside the parser."""
    import re
    import sys

    most = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
    found = re.compile(r"-?[0-9]{%d,}" % (most + 1)).search(doc, start)
    digits = len(found.group().lstrip("-")) if found else most + 1
    return json.JSONDecodeError(f"a number of {digits} digits, more than the {most} Python reads", doc,
                                found.start() if found else start)  # fmt: skip


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)``, refusing a document nested more than :data:`LIMIT` deep with
    :class:`TooDeep` (a ``json.JSONDecodeError``) whether the parser gave up on it or not."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        value, deep = None, True
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or not long_number(exc):
            raise
        doc = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else text
        raise number_too_long(doc, 0) from None
    else:
        deep = depth(value) > LIMIT
    if deep:
        doc = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else text
        raise TooDeep(doc, deep_at(doc)) from None
    return value
