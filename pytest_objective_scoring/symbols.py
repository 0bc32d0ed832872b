"""Which files and which symbols a patch touches, read mechanically from a diff and the sources.

This feeds the localization and structure metrics (file recall, symbol recall, correct and
unnecessary entities touched). The diff is read with ``unidiff``, Python sources with the
stdlib ``ast``; there are no heuristics and no similarity measures. Pure functions; this
module never imports pytest.

Rules:

* **Paths** are repository-relative POSIX paths as the diff spells them: git's C-style
  quoting is undone, one leading ``a/`` or ``b/`` is stripped, ``/dev/null`` means "no
  file on that side". A file diff has a source side (its path before the patch) and a
  target side (after). Every path on either side is a touched file, so a rename touches
  both paths, a deletion its source, a new file its target. A copy (``copy from``) touches
  only its target: the source is read, not changed.
* **Symbols.** A Python file is one whose path ends in ``.py`` (and that is not a binary
  diff, a symlink or a submodule). A changed line of a Python file touches
  ``"<path>::<qualname>"``, where ``qualname`` is the dotted name of the innermost
  function, async function or class whose span holds the line (``Outer.Inner.method``,
  ``func.inner``; defs under ``if``/``try``/``with``/``match`` blocks are named as if the
  block were not there), or ``"<path>::<module>"`` when no def or class holds it. A
  def's or class's span runs from its first decorator line (its ``def``/``class`` line
  when it has none) to its ``end_lineno``.
* **Which AST.** Removed lines (the old half of a modified line) are located in the base
  file's AST by their source line numbers; added lines in the patched file's AST by
  their target line numbers. So an added def or class is touched (its added lines lie in
  it in the patched file), and so is a removed one (its removed lines lie in it in the
  base file). A deleted file has only a base side, a new file only a patched side, and a
  rename's removed lines belong to the source path, its added lines to the target path.
* **Blank lines.** A changed line that is empty or whitespace only touches no symbol (the
  file is still touched), even inside a docstring.
* **Comments** count by position like any other line: a changed comment inside a def's
  span touches that def. Spans are the AST's, so a comment (or blank line) after a def's
  last statement lies outside the def, as does a comment above its first decorator; a
  line inside a module-level string lies at module level.
* **A Python file with no non-blank changed line** (a pure rename, a mode change, blank
  lines only) touches its path(s) and no symbol.
* **Other files.** A file that is not Python (not ``.py``, a binary diff, a symlink, a
  submodule) is touched and is its own single entity: ``"<path>"``, without ``::``, so
  entity counts include it. A renamed non-Python file gives two entities.
* **The two texts.** ``base(path)`` gives a file's text at the base. The patched text is
  ``patched(path)`` when the caller has it (the runner's applied copy), else it is rebuilt
  in memory by :func:`apply_hunks` from the base text. A text is that side's text only if
  the hunks' lines for that side (context and removed lines for the source side, context
  and added lines for the target side) equal its lines at the numbers the hunk headers
  give, line terminators aside; a ``patched(path)`` text that fails this check (applied
  with an offset, or with other changes on top) is replaced by the rebuilt one. The
  side's text must then parse (``ast.parse`` of the text encoded back to bytes with UTF-8
  and ``surrogateescape``, so a PEP 263 coding line is honoured as on import) and hold no
  lone carriage return (git and Python number such lines differently).
* **File-level fallback.** When a side has no usable text (absent, a hunk that does not
  match it, no rebuild, a syntax error, a lone CR) and has at least one non-blank changed
  line, each such line touches ``"<path>::<module>"`` and the path is listed in
  ``unparsable``. The other side of the same file diff is still located if it can be.
* **Line endings and bytes.** Lines are split at ``\\n`` only, as git does, and compared
  without their terminators, so CRLF files and bases read with universal newlines both
  work; ``\\ No newline at end of file`` is honoured when rebuilding. Texts and diffs are
  ``str`` decoded from bytes as UTF-8 with ``surrogateescape`` (:func:`touched` also takes the
  diff's bytes, decoded a line at a time).
* **Large inputs.** A diff longer than :data:`~.protect.LARGE_DIFF` is read by unidiff without
  an object per line or per hunk (:class:`~.large_diff.LargeDiff`: the same checks and messages) and its
  hunks' lines are read again from its text whenever they are needed, one at a time; a side whose hunk lines
  alone are longer than :data:`AST_LIMIT` is located at file level without reading any text;
  a source larger than :data:`IN_PROCESS_AST` is parsed in a child process whose memory is
  bounded (:data:`CHECK_MEMORY`), so the grader's own memory stays a small multiple of the diff.
* **An empty (or whitespace-only) diff** touches nothing. Anything else that is not a
  unified diff raises :class:`PatchError`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from unidiff.constants import (
    LINE_TYPE_ADDED,
    LINE_TYPE_CONTEXT,
    LINE_TYPE_EMPTY,
    LINE_TYPE_NO_NEWLINE,
    LINE_TYPE_REMOVED,
    LINE_VALUE_NO_NEWLINE,
    RE_DIFF_GIT_DELETED_FILE,
    RE_DIFF_GIT_HEADER,
    RE_DIFF_GIT_HEADER_NO_PREFIX,
    RE_DIFF_GIT_HEADER_URI_LIKE,
    RE_DIFF_GIT_NEW_FILE,
    RE_HUNK_BODY_LINE,
    RE_HUNK_EMPTY_BODY_LINE,
    RE_HUNK_HEADER,
    RE_NO_NEWLINE_MARKER,
    RE_SOURCE_FILENAME,
    RE_TARGET_FILENAME,
)
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk, Line, PatchedFile, PatchInfo, PatchSet

from . import protect
from .large_diff import LargeDiff, lines_at
from .protect import unquote

__all__ = [
    "MODULE",
    "FileDiff",
    "HunkLines",
    "LargeDiff",
    "PatchError",
    "Touched",
    "apply_hunks",
    "file_diffs",
    "parse_diff",
    "python_check",
    "touched",
]

MODULE: Final = "<module>"
"""The qualname of a changed line that no function or class holds."""

Side = Literal["source", "target"]
TextOf = Callable[[str], "str | None"]

_NOT_SOURCE_MODES: Final = frozenset({"120000", "160000"})  # git modes of a symlink and a submodule
_LONE_CR: Final = re.compile(r"\r(?!\n)")
_DEFS: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BLOCKS: Final = (ast.stmt, ast.excepthandler, ast.match_case)


class PatchError(ValueError):
    """The text is not a unified diff that can be read file by file."""


@dataclass(frozen=True)
class Touched:
    """What a patch touches.

    ``files``: every touched path. ``symbols``: the touched entities, Python symbols
    (``path::qualname``, ``path::<module>``) and non-Python file paths. ``unparsable``:
    sorted Python paths whose changed lines were located at file level because a side did not
    parse, did not match the diff or could not be rebuilt.
    """

    files: frozenset[str]
    symbols: frozenset[str]
    unparsable: tuple[str, ...]

    def to_dict(self) -> dict[str, list[str]]:
        return {"files": sorted(self.files), "symbols": sorted(self.symbols), "unparsable": list(self.unparsable)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Touched:
        return cls(frozenset(data["files"]), frozenset(data["symbols"]), tuple(data["unparsable"]))


class HunkLines(Protocol):
    """What this module reads of a hunk: unidiff's :class:`~unidiff.patch.Hunk`, or one of a large
    diff whose lines are read from its text as they are iterated (:class:`_StreamedHunk`)."""

    source_start: int
    source_length: int
    target_start: int
    target_length: int

    def __iter__(self) -> Iterator[Line]: ...


class FileDiff(Protocol):
    """What this module reads of a file diff: unidiff's :class:`~unidiff.patch.PatchedFile`, or
    :class:`_StreamedFile`."""

    @property
    def source_file(self) -> str: ...
    @property
    def target_file(self) -> str: ...
    @property
    def patch_info(self) -> PatchInfo | None: ...
    @property
    def is_binary_file(self) -> bool: ...
    @property
    def source_mode(self) -> str | None: ...
    @property
    def target_mode(self) -> str | None: ...

    def __iter__(self) -> Iterator[HunkLines]: ...


def parse_diff(text: str) -> PatchSet:
    """The diff parsed file by file; an empty or whitespace-only text gives an empty PatchSet.

    Raises :class:`PatchError` when unidiff rejects the text, when a non-blank text holds no
    file diff, or when a file diff names no file on either side.
    """
    if protect.is_blank(text):
        return PatchSet("")
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise PatchError(f"malformed diff: {exc}") from None
    _check_files(patch)
    return patch


def _check_files(patch: PatchSet) -> None:
    """:func:`parse_diff`'s checks of what unidiff accepted: some file diff, and a file for each."""
    if not patch:
        raise PatchError("no file diffs found (expected a unified diff with ---/+++ headers)")
    for patched_file in patch:
        if _side_path(patched_file.source_file) is None and _side_path(patched_file.target_file) is None:
            raise PatchError(f"a file diff names no file (line {patched_file.diff_line_no} of the diff)")


def touched(diff_text: str | bytes, base: TextOf, patched: TextOf | None = None) -> Touched:
    """The files and entities ``diff_text`` touches (see the module docstring for the rules).

    ``base(path)`` returns a file's text at the base, or None when it does not exist there;
    ``patched(path)``, when given, the text after the patch (None: rebuild it from the base).
    The diff may be given as bytes (UTF-8, ``surrogateescape``): a large one is then never
    decoded whole. Raises :class:`PatchError` on a malformed diff.
    """
    read_base = _cached(base)
    files: set[str] = set()
    symbols: set[str] = set()
    unparsable: set[str] = set()
    for patched_file in file_diffs(diff_text):
        for side, path in _sides(patched_file):
            files.add(path)
            if not _is_python(patched_file, side, path):
                symbols.add(path)
                continue
            if next(_changed_line_numbers(patched_file, side), None) is None:
                continue
            too_large = _longer_than_ast_limit(patched_file, side)
            owners = None if too_large else _side_owners(patched_file, side, path, read_base, patched)
            if owners is None:
                unparsable.add(path)
                symbols.add(f"{path}::{MODULE}")
            else:
                symbols.update(f"{path}::{owners[n] if n < len(owners) else MODULE}"
                               for n in _changed_line_numbers(patched_file, side))  # fmt: skip
    return Touched(frozenset(files), frozenset(symbols), tuple(sorted(unparsable)))


def file_diffs(diff: str | bytes) -> list[FileDiff]:
    """The diff's file diffs, checked as :func:`parse_diff` checks them (the same errors).

    A diff up to :data:`~.protect.LARGE_DIFF` characters (bytes) is :func:`parse_diff`'s
    PatchSet. A longer one is read as a :class:`LargeDiff` (by unidiff, every line checked,
    without an object per line or per hunk) and each hunk's lines are read again from the diff
    whenever they are iterated (:class:`_StreamedHunk`): its cost is about the diff itself.
    """
    if len(diff) <= protect.LARGE_DIFF:
        return list(parse_diff(diff if isinstance(diff, str) else diff.decode("utf-8", "surrogateescape")))
    if all(line.isspace() for _, line in lines_at(diff)):
        return []
    try:
        large = LargeDiff(diff)
    except UnidiffParseError as exc:
        raise PatchError(f"malformed diff: {exc}") from None
    _check_files(large)
    headers = [array("q") for _ in large]
    for index, at in zip(large.hunk_files, large.hunk_headers, strict=True):
        headers[index].append(at)
    return [_StreamedFile(patched_file, diff, at) for patched_file, at in zip(large, headers, strict=True)]


class _StreamedFile:
    """A file diff of a :class:`LargeDiff`: unidiff's headers, and hunks made from the diff's text
    each time they are iterated."""

    def __init__(self, meta: PatchedFile, diff: str | bytes, headers: array[int]) -> None:
        self.source_file, self.target_file = meta.source_file, meta.target_file
        self.patch_info = meta.patch_info
        self.is_binary_file = meta.is_binary_file
        self.source_mode, self.target_mode = meta.source_mode, meta.target_mode
        self.diff_line_no = meta.diff_line_no
        self._diff, self._headers = diff, headers

    def __iter__(self) -> Iterator[HunkLines]:
        return (_StreamedHunk(self._diff, at, self.target_file) for at in self._headers)


class _StreamedHunk:
    """A hunk of a large diff: its range, read by unidiff from its header line, and lines made
    from the diff's text as they are iterated, exactly as unidiff makes them (types, values, line
    numbers, the markers it appends after the hunk), one at a time and not kept."""

    def __init__(self, diff: str | bytes, header: int, target_file: str) -> None:
        lines = lines_at(diff, header)
        _, line = next(lines)
        found = RE_HUNK_HEADER.match(line)
        assert found is not None, line
        hunk = Hunk(*found.groups())
        self.source_start, self.source_length = hunk.source_start, hunk.source_length
        self.target_start, self.target_length = hunk.target_start, hunk.target_length
        self._diff, self._body, self._target_file = diff, next(lines, (len(diff), ""))[0], target_file

    def __iter__(self) -> Iterator[Line]:
        lines = (line for _, line in lines_at(self._diff, self._body))
        source, target = self.source_start, self.target_start
        source_end, target_end = source + self.source_length, target + self.target_length
        for text in lines:  # unidiff reads a line before it looks whether the hunk is complete
            line = _hunk_line(text)
            if line.line_type in (LINE_TYPE_REMOVED, LINE_TYPE_CONTEXT):
                line.source_line_no, source = source, source + 1
            if line.line_type in (LINE_TYPE_ADDED, LINE_TYPE_CONTEXT):
                line.target_line_no, target = target, target + 1
            yield line
            if source == source_end and target == target_end:
                yield from _appended_lines(lines, self._target_file)
                return


def _hunk_line(text: str) -> Line:
    """A line of a hunk's body as unidiff reads it (the diff was checked: it is one)."""
    found = RE_HUNK_BODY_LINE.match(text) or RE_HUNK_EMPTY_BODY_LINE.match(text)
    assert found is not None, text
    line_type = found.group("line_type")
    return Line(found.group("value"), line_type=LINE_TYPE_CONTEXT if line_type == LINE_TYPE_EMPTY else line_type)


def _appended_lines(lines: Iterator[str], target_file: str) -> Iterator[Line]:
    """What unidiff appends to a hunk after its last counted line: a ``\\ No newline`` marker or an
    empty line each, until a line that ends the hunk. A ``+++`` line repeating the file's target
    (unidiff only notes its timestamp) does not end it."""
    for text in lines:
        if (RE_DIFF_GIT_HEADER.match(text) or RE_DIFF_GIT_HEADER_URI_LIKE.match(text)
                or RE_DIFF_GIT_HEADER_NO_PREFIX.match(text) or RE_DIFF_GIT_NEW_FILE.match(text)
                or RE_DIFF_GIT_DELETED_FILE.match(text) or RE_SOURCE_FILENAME.match(text)):  # fmt: skip
            return
        target = RE_TARGET_FILENAME.match(text)
        if target:
            if target.group("filename") != target_file:
                return
            continue
        if RE_HUNK_HEADER.match(text):
            return
        if RE_NO_NEWLINE_MARKER.match(text):
            yield Line(LINE_VALUE_NO_NEWLINE + "\n", line_type=LINE_TYPE_NO_NEWLINE)
        elif text == "\n":
            yield Line("\n", line_type=LINE_TYPE_EMPTY)
        else:
            return


def apply_hunks(base_text: str | None, patched_file: FileDiff) -> str | None:
    """The file's text after its hunks, applied in memory to ``base_text``.

    ``base_text`` None means the file does not exist at the base: that is fine (empty)
    for a new file and a failure otherwise. Returns None when a hunk's context or removed
    lines do not equal the base's lines at the stated numbers (line terminators aside),
    when hunks overlap or run past the end, and for binary diffs. Context lines keep the
    base's own text; ``\\ No newline at end of file`` after an added line drops its newline.
    """
    if patched_file.is_binary_file:
        return None
    if base_text is None:
        if _side_path(patched_file.source_file) is not None:
            return None
        base_text = ""
    lines = _split_lines(base_text)
    out: list[str] = []
    cursor = 0
    for hunk in patched_file:
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        if start < cursor or start + hunk.source_length > len(lines):
            return None
        out.extend(lines[cursor:start])
        for line, following in _with_next(hunk):
            if line.is_removed or line.is_context:
                number = line.source_line_no
                if number is None or _bare(lines[number - 1]) != _bare(line.value):
                    return None
                if line.is_context:
                    out.append(lines[number - 1])
            elif line.is_added:
                no_newline = following is not None and following.line_type == "\\"
                value = line.value
                if no_newline:
                    value = value.removesuffix("\n")
                elif not value.endswith("\n"):
                    value += "\n"
                out.append(value)
        cursor = start + hunk.source_length
    out.extend(lines[cursor:])
    return "".join(out)


def _with_next(lines: Iterable[Line]) -> Iterator[tuple[Line, Line | None]]:
    """Each line with the one after it (None after the last): a hunk is read once, in order."""
    previous: Line | None = None
    for line in lines:
        if previous is not None:
            yield previous, line
        previous = line
    if previous is not None:
        yield previous, None


def python_check(path: str, text: str | bytes) -> tuple[bool, bool, str | None]:
    """Whether ``text`` parses with ``ast`` and compiles with ``compile(..., "exec")``.

    Returns ``(parses, compiles, error)``: ``error`` is the first error as
    ``"path:line: message"`` (``"path: message"`` when the error has no line), None when
    both succeed. ``compile`` also catches what the parser accepts but the compiler does
    not (``return`` or ``nonlocal`` at module level, ``await`` outside a function). The
    text is parsed as bytes (UTF-8 with ``surrogateescape``; given as bytes, as they are), so a
    coding line is honoured. A source larger than :data:`IN_PROCESS_AST` is checked in a child
    process (:func:`_apart`) whose answer is kept for the same path and bytes.
    """
    if isinstance(text, str) and len(text) > IN_PROCESS_AST:  # its UTF-8 is no shorter
        return _checked_apart(path, text)
    if isinstance(text, str):
        try:
            source = text.encode("utf-8", "surrogateescape")
        except ValueError as exc:  # a lone surrogate: not text any parser reads
            return False, False, _message(path, exc)
    else:
        source = text
    if len(source) > IN_PROCESS_AST:
        return _checked_apart(path, source)
    return _check_here(path, source)


def _check_here(path: str, source: bytes) -> tuple[bool, bool, str | None]:
    """:func:`python_check` of UTF-8 source, in this process."""
    try:
        ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return False, False, _message(path, exc)
    try:
        compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return True, False, _message(path, exc)
    return True, True, None


AST_LIMIT: Final = 1 << 20  # characters: a larger file is mapped at file level (its changed lines touch <module>)
IN_PROCESS_AST: Final = 64 << 10  # characters or bytes: a larger source is parsed in a child process (an AST
#                                   takes ~60 times its text), never in the grader's own memory
CHECK_MEMORY: Final = 2 << 30  # the address space that child may use
_PIECE: Final = 1 << 16  # characters encoded at a time for a child
_CHECKED: dict[tuple[str, str], tuple[bool, bool, str | None]] = {}  # (path, sha256) -> a child's answer
_CHECKED_KEPT: Final = 64


def _checked_apart(path: str, text: str | bytes) -> tuple[bool, bool, str | None]:
    """:func:`python_check` of a large source in a bounded child process (:func:`_apart`).

    The same path and bytes (the grader checks a candidate's files for its build and again for
    its scorecard) are checked once. An unencodable text gives the error a whole encode gives."""
    try:
        digest, size = _digest(text)
    except ValueError as exc:
        return False, False, _message(path, exc)
    key = (path, digest)
    if key in _CHECKED:
        return _CHECKED[key]
    try:
        answer = _apart("check", path, text)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, False, f"{path}: {size} bytes: could not be checked ({exc})"
    if isinstance(answer, list):
        parses, compiles, error = answer
        result = (bool(parses), bool(compiles), None if error is None else str(error))
    else:
        result = (False, False, f"{path}: {size} bytes: too large to check within {CHECK_MEMORY >> 30} GiB")
    if len(_CHECKED) >= _CHECKED_KEPT:
        del _CHECKED[next(iter(_CHECKED))]
    _CHECKED[key] = result
    return result


def _encoded(text: str | bytes) -> Iterator[bytes]:
    """``text`` as UTF-8 with ``surrogateescape``, a piece at a time (each character encodes on
    its own, so the pieces join into the whole encoding)."""
    if isinstance(text, bytes):
        yield text
        return
    for start in range(0, len(text), _PIECE):
        yield text[start : start + _PIECE].encode("utf-8", "surrogateescape")


def _digest(text: str | bytes) -> tuple[str, int]:
    """sha256 and length of the encoded text. Raises the ``UnicodeEncodeError`` encoding it whole
    raises (its position is the whole text's)."""
    digest, size = hashlib.sha256(), 0
    try:
        for piece in _encoded(text):
            digest.update(piece)
            size += len(piece)
    except ValueError:
        if isinstance(text, str):
            text.encode("utf-8", "surrogateescape")
        raise
    return digest.hexdigest(), size


def _apart(kind: Literal["check", "scopes"], path: str, text: str | bytes) -> Any:
    """:func:`_check_here` (``check``) or :func:`_scopes_of` (``scopes``) of ``text``, run by
    :func:`_apart_main` in a child process of this interpreter with this process's import path
    and at most :data:`CHECK_MEMORY` of address space: the grader's own memory does not grow
    with a candidate's file (an AST takes ~60 times its text).

    Returns the child's answer decoded from JSON, or ``"memory"`` when it ends without one (out
    of memory). Raises OSError or SubprocessError when it cannot run or runs 10 minutes, and
    the ``UnicodeEncodeError`` of a text that does not encode."""
    import tempfile

    where = [str(Path(__file__).resolve().parents[1]), *sys.path]
    script = (f"import sys\nsys.path[:0] = {where!r}\n"
              "from pytest_objective_scoring.symbols import _apart_main\n_apart_main()\n")  # fmt: skip
    with tempfile.TemporaryFile() as source:  # written a piece at a time: no encoded copy of a large text
        for piece in _encoded(text):
            source.write(piece)
        source.seek(0)
        done = subprocess.run([sys.executable, "-I", "-S", "-c", script, kind, path], stdin=source,
                              capture_output=True, timeout=600)  # fmt: skip
    try:
        return json.loads(done.stdout)
    except ValueError:
        return "memory"


def _apart_main() -> None:
    """The child of :func:`_apart`: bound its memory, read the source on stdin, print the answer."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CHECK_MEMORY, CHECK_MEMORY))
    kind, path = sys.argv[1:3]
    source = sys.stdin.buffer.read()
    try:
        answer: Any = _check_here(path, source) if kind == "check" else _scopes_of(source)
    except MemoryError:
        answer = "memory"
    print(json.dumps(answer))


def _message(path: str, exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"{path}:{exc.lineno}: {exc.msg}" if exc.lineno else f"{path}: {exc.msg}"
    return f"{path}: {exc}"


def _side_path(raw: str | None) -> str | None:
    """The repository-relative path of one side of a file diff, or None for ``/dev/null``."""
    if raw is None:
        return None
    path = unquote(raw.rstrip("\t\r"))
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path or None


def _sides(patched_file: FileDiff) -> Iterator[tuple[Side, str]]:
    """The touched sides of a file diff: the source unless absent or copied from, the target unless absent."""
    source, target = _side_path(patched_file.source_file), _side_path(patched_file.target_file)
    copied = any(info.startswith("copy from ") for info in patched_file.patch_info or ())
    if source is not None and not copied:
        yield "source", source
    if target is not None:
        yield "target", target


def _is_python(patched_file: FileDiff, side: Side, path: str) -> bool:
    mode = patched_file.source_mode if side == "source" else patched_file.target_mode
    return path.endswith(".py") and not patched_file.is_binary_file and mode not in _NOT_SOURCE_MODES


def _changed_line_numbers(patched_file: FileDiff, side: Side) -> Iterator[int]:
    """The line numbers of one side's non-blank changed lines: removed (source) or added (target)."""
    for hunk in patched_file:
        for line in hunk:
            number = line.source_line_no if side == "source" else line.target_line_no
            changed = line.is_removed if side == "source" else line.is_added
            if changed and number is not None and line.value.strip():
                yield number


def _longer_than_ast_limit(patched_file: FileDiff, side: Side) -> bool:
    """Whether any text of this side that its hunks match is longer than :data:`AST_LIMIT`, read
    from the hunks alone: hunks in order and apart give distinct lines of that text, and the
    lines of theirs it must hold are longer than the limit. Such a side is located at file
    level (as :func:`_owners` would) without reading, splitting or rebuilding a large text."""
    total = end = 0
    for hunk in patched_file:
        start, length = (hunk.source_start, hunk.source_length) if side == "source" else (hunk.target_start, hunk.target_length)
        if length:
            if start < end:
                return False  # hunks out of order or overlapping: the same line may count twice
            end = start + length
        for line in hunk:
            if (line.source_line_no if side == "source" else line.target_line_no) is not None:
                total += len(_bare(line.value))
        if total > AST_LIMIT:
            return True
    return False


def _side_owners(
    patched_file: FileDiff, side: Side, path: str, base: TextOf, patched: TextOf | None
) -> list[str] | None:
    """Qualname per line number of the side's text, or None when no usable text parses."""
    for text in _candidate_texts(patched_file, side, path, base, patched):
        if text is not None and _matches(_TextLines(text), patched_file, side):
            return _owners(text)
    return None


def _candidate_texts(
    patched_file: FileDiff, side: Side, path: str, base: TextOf, patched: TextOf | None
) -> Iterator[str | None]:
    """The side's text: the base for the source; the caller's patched text, then a rebuild, for the target."""
    if side == "source":
        yield base(path)
        return
    if patched is not None:
        yield patched(path)
    source = _side_path(patched_file.source_file)
    yield apply_hunks(base(source) if source is not None else None, patched_file)


def _matches(lines: _TextLines, patched_file: FileDiff, side: Side) -> bool:
    """Whether every hunk line of this side equals the text's line at its stated number."""
    for hunk in patched_file:
        for line in hunk:
            number = line.source_line_no if side == "source" else line.target_line_no
            if number is None:
                continue
            if not 1 <= number <= lines.count or lines.bare(number) != _bare(line.value):
                return False
    return True


class _TextLines:
    """A text's lines as git counts them (:func:`_split_lines`), by where they start: looking
    lines of a large text up holds no list of them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = array("q", [0])  # 0, then after each \n
        cut = text.find("\n")
        while cut >= 0:
            self.starts.append(cut + 1)
            cut = text.find("\n", cut + 1)
        self.count = len(self.starts) - (1 if self.starts[-1] == len(text) else 0)

    def bare(self, number: int) -> str:
        """Line ``number`` (from 1) without its terminator."""
        end = self.starts[number] if number < len(self.starts) else len(self.text)
        return _bare(self.text[self.starts[number - 1] : end])


def _owners(text: str) -> list[str] | None:
    """For each line number (index 0 unused), the qualname holding it; None if it does not parse.

    A text over :data:`AST_LIMIT` is mapped at file level; one over :data:`IN_PROCESS_AST` is
    parsed in a bounded child process (:func:`_apart`; no answer from it: file level too)."""
    if _LONE_CR.search(text) or len(text) > AST_LIMIT:  # a very large file is mapped at file level
        return None
    scopes = _text_scopes(text)
    if scopes is None:
        return None
    owners = [MODULE] * (text.count("\n") + (0 if text.endswith("\n") or not text else 1) + 2)
    for start, end, qualname in scopes:  # outer scopes first, so inner ones overwrite them
        end = min(end, len(owners) - 1)
        owners[start : end + 1] = [qualname] * (end + 1 - start)
    return owners


def _text_scopes(text: str) -> list[tuple[int, int, str]] | None:
    """:func:`_scopes_of` of a text's UTF-8: in this process up to :data:`IN_PROCESS_AST` bytes,
    else in a bounded child (:func:`_apart`). None when it does not encode or parse, or when the
    child gives no answer (the file is then located at file level)."""
    try:
        if len(text) <= IN_PROCESS_AST:
            source = text.encode("utf-8", "surrogateescape")
            if len(source) <= IN_PROCESS_AST:
                return _scopes_of(source)
        answer = _apart("scopes", "<text>", text)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return [(int(start), int(end), str(name)) for start, end, name in answer] if isinstance(answer, list) else None


def _scopes_of(source: bytes) -> list[tuple[int, int, str]] | None:
    """:func:`_scopes` of the module ``source`` holds, or None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return list(_scopes(tree, ""))


def _scopes(node: ast.AST, prefix: str) -> Iterator[tuple[int, int, str]]:
    """``(first line, last line, qualname)`` of every def and class under ``node``, outer first.

    Only statements are descended into (defs cannot hide in expressions; lambdas are not
    symbols), so deep expressions cannot exhaust the recursion limit.
    """
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _DEFS):
            qualname = prefix + child.name
            start = min([child.lineno, *(decorator.lineno for decorator in child.decorator_list)])
            yield start, child.end_lineno or child.lineno, qualname
            yield from _scopes(child, qualname + ".")
        elif isinstance(child, _BLOCKS):
            yield from _scopes(child, prefix)


def _split_lines(text: str) -> list[str]:
    """Lines as git counts them: split after each ``\\n`` only, terminators kept."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _bare(line: str) -> str:
    """A line without its terminator (``\\n``, ``\\r\\n``)."""
    return line.removesuffix("\n").removesuffix("\r")


def _cached(read: TextOf) -> TextOf:
    """``read`` called at most once per path."""
    seen: dict[str, str | None] = {}

    def cached(path: str) -> str | None:
        if path not in seen:
            seen[path] = read(path)
        return seen[path]

    return cached
