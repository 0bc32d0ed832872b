"""Read and validate SWE-bench-style instances.

An instance file is one JSON object; a dataset file is a JSON array of objects
or JSONL (one object a line). ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` are JSON
lists of test ids, or JSON-encoded strings of such lists, as the SWE-bench
datasets store them. Every other field is kept as it was.

Every problem raises :class:`InstanceError` naming the file, the field and what
was expected. An instance read from a file also has the fields the grader reads
checked for their type (:data:`TEXT_FIELDS`): a ``test_patch`` that is a number
is bad input, never "no test patch". This module never imports pytest.
"""

from __future__ import annotations

import difflib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Iterator, Mapping

from . import nesting
from .remade import Remade

__all__ = ["TEXT_FIELDS", "Instance", "InstanceError", "TwiceGiven", "check_text_fields", "load_instance", "load_instances",
           "once_each", "parse_instance"]

F2P = "FAIL_TO_PASS"
P2P = "PASS_TO_PASS"


class InstanceError(Remade, ValueError):
    """An instance or dataset that cannot be graded, with where and why."""

    def __init__(self, source: str, field_name: str | None, problem: str) -> None:
        self.source = source
        self.field = field_name
        self.problem = problem
        where = f"{source}: field {field_name!r}: " if field_name else f"{source}: "
        super().__init__(where + problem)



@dataclass(frozen=True)
class Instance:
    """One task: its id, the two test lists and every other field untouched."""

    instance_id: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    source: str = field(default="<memory>", compare=False)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    @property
    def patch(self) -> str | None:
        value = self.fields.get("patch")
        return value if isinstance(value, str) else None

    @property
    def test_patch(self) -> str | None:
        value = self.fields.get("test_patch")
        return value if isinstance(value, str) else None

    @property
    def base_commit(self) -> str | None:
        value = self.fields.get("base_commit")
        return value if isinstance(value, str) and value else None

    @property
    def listed(self) -> dict[str, str]:
        """Every listed id mapped to its gate name."""
        gates = {test_id: F2P for test_id in self.fail_to_pass}
        gates.update({test_id: P2P for test_id in self.pass_to_pass})
        return gates

    def test_files(self) -> list[str]:
        """The files that hold the listed tests, in first-listed order."""
        files: dict[str, None] = {}
        for test_id in (*self.fail_to_pass, *self.pass_to_pass):
            files.setdefault(test_id.split("::", 1)[0], None)
        return list(files)


def _test_list(data: Mapping[str, Any], name: str, source: str) -> tuple[str, ...]:
    if name not in data:
        raise InstanceError(source, name, "missing: expected a list of test ids (or a JSON string of one)")
    value = data[name]
    if isinstance(value, str):
        try:
            value = nesting.loads(value, parse_int=_whole_number, parse_float=_finite_number)
        except json.JSONDecodeError as exc:
            raise InstanceError(
                source, name, f"is a string but not a JSON-encoded list of test ids ({exc.msg} at char {exc.pos})"
            ) from None
        except _NotJson as exc:
            raise InstanceError(source, name, f"is a string but not a JSON-encoded list of test ids: {exc}") from None
    if not isinstance(value, list):
        raise InstanceError(source, name, f"expected a list of test ids, got {type(value).__name__}")
    seen: set[str] = set()
    for index, test_id in enumerate(value):
        if not isinstance(test_id, str):
            raise InstanceError(source, name, f"item {index} must be a string test id, got {test_id!r}")
        if not test_id.strip():
            raise InstanceError(source, name, f"item {index} is an empty test id")
        if test_id in seen:
            raise InstanceError(source, name, f"duplicate test id {test_id!r} (item {index})")
        seen.add(test_id)
    return tuple(value)


TEXT_FIELDS: Final[Mapping[str, str]] = {
    "patch": "a string holding a diff (the gold patch), or absent, null or empty",
    "test_patch": "a string holding a diff, or absent, null or empty",
    "base_commit": "a commit (a string), or absent or null",
    "environment_setup_commit": "a commit (a string), or absent or null",
    "repo": "a string (owner/name), or absent or null",
    "version": "a string such as \"3.0\" (a JSON number loses digits: 3.10 reads as 3.1), or absent or null",
    "runner": "a runner's name (a string), or absent or null",
    "test_cmd": "a command line (a string), or absent or null",
    "build_command": "a command line (a string), or absent or null",
}
"""The fields the grader reads as text, and what each must hold: another type (a number, a list,
an object) is refused, never read as if the field were absent."""


def _shown(value: Any) -> str:
    """A value quoted back with its JSON type, cut after 40 characters."""
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else repr(value)
    if len(text) > 40:
        text = text[:39] + "\u2026"
    return f"{kinds.get(type(value), type(value).__name__)} ({text})"


def check_text_fields(data: Mapping[str, Any], where: str) -> None:
    """Each of :data:`TEXT_FIELDS` that ``data`` holds is a string or null; :class:`InstanceError`
    (the field and what it must hold) otherwise."""
    for name, expected in TEXT_FIELDS.items():
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            raise InstanceError(where, name, f"expected {expected}, got {_shown(value)}")


def _read_row(row: Any, where: str) -> Instance:
    """One instance read from a file: :func:`parse_instance`, and its text fields' types checked
    (:func:`check_text_fields`)."""
    instance = parse_instance(row, where)
    check_text_fields(instance.fields, f"{where} (instance {instance.instance_id})")
    return instance


def parse_instance(data: Any, source: str = "<memory>") -> Instance:
    """Validate one instance object; raises :class:`InstanceError`."""
    if not isinstance(data, Mapping):
        raise InstanceError(source, None, f"an instance must be a JSON object, got {type(data).__name__}")
    instance_id = data.get("instance_id")
    if "instance_id" not in data:
        raise InstanceError(source, "instance_id", "missing: expected a non-empty string")
    if not isinstance(instance_id, str) or not instance_id.strip():
        raise InstanceError(source, "instance_id", f"expected a non-empty string, got {instance_id!r}")
    where = f"{source} (instance {instance_id})"
    fail_to_pass = _test_list(data, F2P, where)
    pass_to_pass = _test_list(data, P2P, where)
    if not fail_to_pass:
        raise InstanceError(
            where,
            F2P,
            "is empty: an instance needs at least one test that must pass "
            "(SWE-bench would resolve an empty list vacuously; this grader refuses)",
        )
    p2p = set(pass_to_pass)
    both = [t for t in fail_to_pass if t in p2p]
    if both:
        raise InstanceError(where, P2P, f"test id {both[0]!r} is listed in both FAIL_TO_PASS and PASS_TO_PASS")
    return Instance(instance_id, fail_to_pass, pass_to_pass, dict(data), source)


class TwiceGiven(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


def once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (``json``'s ``object_pairs_hook``)."""
    made: dict[str, Any] = {}
    for key, value in pairs:
        if key in made:
            raise TwiceGiven(key)
        made[key] = value
    return made


TWICE: Final = ("given twice in one object: JSON keeps the last and drops the first silently, so which value is "
                "graded would be an accident")


class _NotJson(ValueError):
    """A number the instance cannot hold, with why (the whole line said)."""


NOT_JSON: Final = ("is not a JSON value (JSON has no NaN or Infinity; Python's json module reads them, other tools "
                   "do not, and no digest or ledger can hold them): write null or a number")


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} {NOT_JSON}")


def _whole_number(text: str) -> int:
    """A JSON integer as ``int``; one longer than Python converts (``sys.get_int_max_str_digits``,
    4300 digits by default) is refused by name, never a ``ValueError`` from inside the parser."""
    try:
        return int(text)
    except ValueError:
        digits = len(text.lstrip("-"))
        raise _NotJson(f"a number of {digits} digits ({text[:12]}...): more than the {sys.get_int_max_str_digits()} "
                       "digits Python reads; no instance field holds such a number") from None  # fmt: skip


def _finite_number(text: str) -> float:
    """A JSON number with a fraction or exponent as ``float``; one too large for a float (``1e999``)
    is refused, never read as infinity (which no digest or ledger can hold)."""
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 40 else text[:39] + "\u2026"
        raise _NotJson(f"the number {shown} is too large for a float (it would read as infinity): write a smaller "
                       "number, or a string")  # fmt: skip
    return value


def _loads(where: str, text: str) -> Any:
    """One JSON value of an instance file: a key given twice, ``NaN``, a number too long or too
    large, and a string holding a lone surrogate (``"\\ud800"``: no test output, envelope or ledger
    can be written with it: the gold would be graded, then get no verdict) are refused by name."""
    try:
        value = nesting.loads(text, object_pairs_hook=once_each, parse_constant=_refuse_constant,
                              parse_int=_whole_number, parse_float=_finite_number)  # fmt: skip
        lone = surrogate_problem(text, value)
        if lone:
            raise _NotJson(lone)
        return value
    except TwiceGiven as exc:
        raise InstanceError(where, exc.key, TWICE) from None
    except _NotJson as exc:
        raise InstanceError(where, None, str(exc)) from None


def surrogate_problem(text: str, value: Any) -> str | None:
    """Why the parsed JSON ``value`` of ``text`` is not Unicode text (a string or key holding a lone
    surrogate, ``"\\ud800"``), or None; the walk and the wording of :func:`.cost_ledger.loads`, and
    only when ``text`` holds such an escape (most texts are never walked)."""
    from .cost_ledger import _SURROGATE_ESCAPE, _lone_surrogate

    if not _SURROGATE_ESCAPE.search(text):
        return None
    found = _lone_surrogate(value)
    if found is None:
        return None
    at = next(i for i, c in enumerate(found) if "\ud800" <= c <= "\udfff")
    return (f"a string holding a lone surrogate ({found[at]!r} at character {at}): not Unicode text, it can be "
            "neither graded nor recorded: expected UTF-8 text")


def _json_rows(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(where, object)`` from a JSON object, a JSON array or JSONL (a key given twice in an
    object is refused, never resolved by JSON's last-one-wins)."""
    source = str(path)
    stripped = text.strip()
    if not stripped:
        raise InstanceError(source, None, "the file is empty: expected a JSON object, a JSON array or JSONL")
    if not path.name.endswith(".jsonl"):
        try:
            value = _loads(source, text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise InstanceError(
                    source, None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                ) from None
        else:
            if isinstance(value, list):
                for index, row in enumerate(value):
                    yield f"{source} [item {index}]", row
            else:
                yield source, value
            return
    # split on newlines only: U+2028 and friends may stand raw inside JSON strings
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield f"{source}:{lineno}", _loads(f"{source}:{lineno}", line)
        except json.JSONDecodeError as exc:
            raise InstanceError(f"{source}:{lineno}", None, f"invalid JSON in JSONL line: {exc.msg}") from None


def _read(path: str | Path) -> tuple[Path, str]:
    from .inputs import InputProblem, read_bytes

    path = Path(path)
    try:
        return path, read_bytes(path).decode("utf-8")
    except InputProblem as exc:
        text = str(exc)
        if text == "no such file or directory":
            text = "no such file"
        elif text.startswith("is a directory"):
            text = "is a directory, expected a JSON or JSONL file"
        raise InstanceError(str(path), None, text) from None
    except UnicodeDecodeError as exc:
        raise InstanceError(str(path), None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def load_instances(path: str | Path) -> list[Instance]:
    """Every instance of a file (one object, an array or JSONL), validated."""
    path, text = _read(path)
    instances = [_read_row(row, where) for where, row in _json_rows(path, text)]
    seen: dict[str, str] = {}
    for instance in instances:
        if instance.instance_id in seen:
            raise InstanceError(
                instance.source,
                "instance_id",
                f"duplicate instance_id {instance.instance_id!r} (also at {seen[instance.instance_id]})",
            )
        seen[instance.instance_id] = instance.source
    return instances


def load_instance(path: str | Path, instance_id: str | None = None) -> Instance:
    """One instance from an instance file, or from a dataset by ``instance_id``."""
    if instance_id is None:
        path, text = _read(path)
        rows = list(_json_rows(path, text))
        if not rows:
            raise InstanceError(str(path), None, "holds no instances (an empty JSON array)")
        if len(rows) != 1:
            some = [row.get("instance_id") for _, row in rows[:5] if isinstance(row, Mapping)]
            raise InstanceError(
                str(path),
                "instance_id",
                f"the file holds {len(rows)} instances; choose one with --objective-instance-id "
                f"(objective-score: --instance-id), for example {', '.join(map(repr, some))}",
            )
        where, row = rows[0]
        return _read_row(row, where)
    # Find the row first so that a malformed *other* row does not block this one.
    path, text = _read(path)
    found: list[tuple[str, Any]] = []
    ids: list[str] = []
    for where, row in _json_rows(path, text):
        row_id = row.get("instance_id") if isinstance(row, Mapping) else None
        if isinstance(row_id, str):
            ids.append(row_id)
        if row_id == instance_id:
            found.append((where, row))
    if not found:
        close = difflib.get_close_matches(instance_id, ids, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise InstanceError(str(path), "instance_id", f"no instance {instance_id!r} among {len(ids)}{hint}")
    if len(found) > 1:
        raise InstanceError(
            str(path), "instance_id", f"instance {instance_id!r} appears {len(found)} times ({found[0][0]}, {found[1][0]})"
        )
    return _read_row(found[0][1], found[0][0])
