"""Deterministic mutants of a gold patch's changed lines, for the mutation audit (issue 31).

A **mutant** is the gold patch with one small, mechanical change made to a line the gold adds:
an operator flipped, a constant nudged, a statement replaced by ``pass``. Each one is later graded
like any candidate patch (:mod:`.audit`); a mutant that still resolves the task shows a behaviour
of the gold patch that its tests do not pin down. This module only makes them: pure functions over
the gold's text and the base files, no model, no randomness, no network; it never imports pytest.

**Changed lines** are the lines the gold adds (unidiff's added lines, numbered in the patched
file). A mutation is made only where the whole span of the node it acts on (``lineno`` to
``end_lineno``) lies on changed lines: a call that starts on an added line and closes on a context
line is not mutated, nor is anything on a line the gold keeps or removes.

**Operators** (:data:`OPERATORS`; the node whose span must be changed is in brackets):

* ``compare`` [the comparison]: each operator, ``<``/``<=``, ``>``/``>=``, ``==``/``!=``,
  ``in``/``not in``, ``is``/``is not``, each into its partner;
* ``boolean``: ``and``/``or`` (every one of a chain at once) [the chain]; ``not x`` into ``x``
  [the ``not``]; ``True``/``False`` [the constant];
* ``constant`` [the constant]: an int literal (not a bool) ``n`` into ``n + 1`` and ``n - 1``;
* ``slice`` [the bound]: each lower or upper bound ``b`` of a slice into ``b + 1`` and ``b - 1``;
* ``statement`` [the statement]: each simple statement into ``pass`` (not docstrings, not ``pass``);
* ``condition`` [the test]: the test of an ``if``/``elif`` into ``True`` and ``False``, of a
  ``while`` into ``True``;
* ``arguments`` [the call]: the first two positional, non-starred arguments of a call swapped
  (not when their texts are equal);
* ``return`` [the statement]: ``return <expr>`` into ``return None`` (not when it already is).

Mutations are text splices at the nodes' positions (``ast`` columns are UTF-8 byte offsets,
converted line by line), so the rest of the file stays byte for byte: comments, formatting, CRLF
line endings, a BOM. Expressions inside f-strings are not mutated.

**Equivalence.** The gold text and each mutant's text are compiled (``compile(text, path,
"exec", dont_inherit=True)``) and compared by a code key that ignores line numbers, positions and
the file name (:func:`_code_key`). A mutant with the gold's key is *equivalent* (``x = 2 * 0``
into ``x = 3 * 0`` folds to the same constant): listed, never counted nor graded. One with the key
of an earlier mutant (in the order below) is a *duplicate* and one that does not compile is
*invalid*; both are dropped and counted. Equivalence is judged by the bytecode of the Python the
grader runs, which can differ between versions (constant folding, peephole rules); the ids do not
depend on it. It cannot see mutants that compile differently but behave the same (``x >= 0`` for
``x > 0`` where ``x`` is never 0, a log call replaced by ``pass``, a cache size 128 made 129): those
stay in the plan, and surviving them says nothing about the tests.

**Order and limit.** All mutants are made, then ordered: the operator groups are interleaved in
:data:`OPERATORS` order (the first ``compare`` mutant, the first ``boolean``, ... then the second of
each), each group in (file order in the gold, line, column) order. Duplicates are judged in that
order; the survivors are interleaved the same way and ``limit`` keeps the first ``limit`` of them,
so a small limit still samples every operator. ``generated`` counts them before the limit.

**Not mutated** (listed in ``skipped_files`` with the reason): files that are not Python (``.py``),
binary, symlinks or submodules; test and other protected files (:func:`.protect.protected_reason`);
files the gold deletes; files whose post-gold text cannot be rebuilt, does not parse or compile,
holds a lone carriage return or is very large; files the gold adds no line to.

**A mutant's patch** is the gold text with the mutated file's section (from its ``diff --git``
line, or its ``--- `` header when the gold has none, to the next file's) replaced by a git-style
diff from the base text to the mutated text (:func:`file_diff`); the other sections and any text
before the first one are kept verbatim. A rename, copy or mode change keeps the gold's own header
lines (without ``index``). A mutant that gives its file back its base text (the gold changed
``x = 1`` into ``x = 2``, the mutant makes it ``1`` again) leaves that file out of its patch, which
is then empty for a one-file gold: it is still a mutant, graded like the others.

Compiling runs under ``warnings.catch_warnings`` (a ``SyntaxWarning`` in the project's code must
not turn into an error under ``-W error``), which is process-wide state: plan mutants from one
thread at a time.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from unidiff.patch import PatchedFile

from . import protect
from .protect import protected_reason, unquote
from .symbols import AST_LIMIT, apply_hunks, parse_diff

__all__ = ["OPERATORS", "Mutant", "MutantPlan", "file_diff", "plan_mutants", "side_path"]

OPERATORS: Final = ("compare", "boolean", "constant", "slice", "statement", "condition", "arguments", "return")
"""The mutation operators, in the order their groups are interleaved."""

_COMPARE: Final[dict[type[ast.cmpop], tuple[str, str]]] = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
}  # fmt: skip
_SIMPLE: Final = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Delete, ast.Raise, ast.Assert,
                  ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Break, ast.Continue)  # fmt: skip
# Expressions that bind at least as tightly as ``+``/``-``: ``b + 1`` needs no parentheses around them.
_TIGHT: Final = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Call, ast.Await, ast.List, ast.Tuple,
                 ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.JoinedStr)  # fmt: skip
_LOOSE_BINOPS: Final = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitXor, ast.BitOr)
_NOT_SOURCE_MODES: Final = frozenset({"120000", "160000"})  # git modes of a symlink and a submodule
_COMPILE_ERRORS: Final = (SyntaxError, ValueError, RecursionError, OverflowError, MemoryError)
_PLAIN_INFO: Final = ("", "new file mode 100644")

T = TypeVar("T")


@dataclass(frozen=True)
class Mutant:
    """One mutant: where it changes the gold-patched file, how, and the candidate patch it makes.

    ``id`` is ``operator@path:line:column`` (column: 1-based, in characters, where the replaced
    text starts), with ``:2``, ``:3``... when one spot gives several mutants of one operator.
    ``patch`` is the full candidate patch; ``diff`` the mutant's difference from the gold-patched
    file alone.
    """

    id: str
    operator: str
    path: str
    line: int
    original: str
    replacement: str
    description: str
    patch: str
    diff: str

    def to_dict(self) -> dict[str, Any]:
        """Every field except ``patch``."""
        return {"id": self.id, "operator": self.operator, "path": self.path, "line": self.line,
                "original": self.original, "replacement": self.replacement, "description": self.description,
                "diff": self.diff}  # fmt: skip


@dataclass(frozen=True)
class MutantPlan:
    """The mutants of one gold patch (module docstring: order, limit, equivalence).

    ``mutants``: those selected, in order. ``generated``: distinct, non-equivalent mutants before
    the limit. ``equivalent``: ``{id, operator, path, line, original, replacement}`` of each mutant
    that compiles to the gold's code (not counted). ``duplicates``/``invalid``: how many were
    dropped for compiling like an earlier mutant / not compiling. ``skipped_files``: ``{path,
    reason}`` of each gold-touched file not mutated.
    """

    mutants: tuple[Mutant, ...]
    generated: int
    equivalent: tuple[dict[str, Any], ...]
    duplicates: int
    invalid: int
    skipped_files: tuple[dict[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"mutants": [mutant.to_dict() for mutant in self.mutants], "generated": self.generated,
                "equivalent": [dict(entry) for entry in self.equivalent], "duplicates": self.duplicates,
                "invalid": self.invalid, "skipped_files": [dict(entry) for entry in self.skipped_files]}  # fmt: skip


def plan_mutants(gold: str, read_base: Callable[[str], str | None], limit: int | None = None) -> MutantPlan:
    """The mutants of ``gold``'s changed lines (see the module docstring).

    ``read_base(path)`` gives a file's text at the base commit, None when it does not exist there.
    ``limit`` (None: all) keeps the first ``limit`` mutants of the interleaved order. An empty or
    blank gold gives an empty plan; a malformed one raises :class:`.symbols.PatchError`.
    """
    if protect.is_blank(gold):
        return MutantPlan((), 0, (), 0, 0, ())
    patch = parse_diff(gold)
    files, skipped = _files(patch, read_base)
    groups: dict[str, list[_Candidate]] = {operator: [] for operator in OPERATORS}
    for file in files:
        for seq, site in enumerate(_sites(file.source, file.tree, file.changed)):
            groups[site.operator].append(_Candidate(file, site, seq))
    for group in groups.values():
        group.sort(key=lambda c: (c.file.order, c.site.start, c.seq))
    _name(groups)

    kept: dict[str, list[_Candidate]] = {operator: [] for operator in OPERATORS}
    equivalent: list[dict[str, Any]] = []
    seen: set[tuple[str, tuple[Any, ...]]] = set()
    duplicates = invalid = 0
    for candidate in _interleave(list(groups.values())):
        key = _compile_key(candidate.mutated_body(), candidate.file.path)
        if key is None:
            invalid += 1
        elif key == candidate.file.key:
            equivalent.append(candidate.summary())
        elif (candidate.file.path, key) in seen:
            duplicates += 1
        else:
            seen.add((candidate.file.path, key))
            kept[candidate.site.operator].append(candidate)
    ordered = _interleave(list(kept.values()))
    chosen = ordered if limit is None else ordered[: max(limit, 0)]
    sections = _Sections(gold, patch)
    mutants = tuple(candidate.mutant(sections) for candidate in chosen)
    return MutantPlan(mutants, len(ordered), tuple(equivalent), duplicates, invalid, tuple(skipped))


def file_diff(path: str, old: str | None, new: str | None) -> str:
    """A git-style unified diff of one file (``a/``, ``b/`` prefixes); ``""`` when nothing changed.

    None on a side means the file does not exist there (``new file mode 100644`` / ``deleted file
    mode 100644``). A last line without a newline gets git's ``\\ No newline at end of file``
    marker. A path git would quote is quoted as git does (C-style, octal bytes).
    """
    if old == new:
        return ""
    a, b = _git_name("a/", path), _git_name("b/", path)
    header = f"diff --git {a} {b}\n"
    if old is None:
        header += "new file mode 100644\n"
    elif new is None:
        header += "deleted file mode 100644\n"
    return header + _unified(old, new, "/dev/null" if old is None else a, "/dev/null" if new is None else b)


# --- the files to mutate ----------------------------------------------------------------------


class _Source:
    """A Python text (without its BOM) and where ``ast`` positions fall in it."""

    def __init__(self, text: str) -> None:
        self.bom = "\ufeff" if text.startswith("\ufeff") else ""
        self.body = text[len(self.bom) :]
        self.starts = [0]  # where each line starts; lines end after each \n, as git and Python count them
        cut = self.body.find("\n")
        while cut >= 0:
            self.starts.append(cut + 1)
            cut = self.body.find("\n", cut + 1)

    def offset(self, line: int, col: int) -> int:
        """The character offset of ``ast``'s (line, UTF-8 byte column)."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.body)
        text = self.body[start:end]
        return start + (col if text.isascii() else len(text.encode("utf-8")[:col].decode("utf-8", "ignore")))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def text(self, node: ast.AST) -> str:
        return self.body[self.start(node) : self.end(node)]

    def place(self, offset: int) -> tuple[int, int]:
        """(line, 1-based character column) of an offset."""
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


@dataclass(frozen=True)
class _File:
    order: int  # its file diff's index in the gold
    path: str
    base: str | None
    source: _Source  # the gold-patched text
    tree: ast.Module
    key: tuple[Any, ...]
    changed: frozenset[int]
    diff: PatchedFile


def side_path(raw: str | None) -> str | None:
    """The repository-relative path of one side of a file diff, or None for ``/dev/null``."""
    if raw is None:
        return None
    path = unquote(raw.rstrip("\t\r"))
    if path == "/dev/null":
        return None
    return (path[2:] if path.startswith(("a/", "b/")) else path) or None


def _files(patch: Sequence[PatchedFile], read_base: Callable[[str], str | None]) -> tuple[list[_File], list[dict[str, str]]]:
    """The gold's Python files to mutate, in gold order, and ``{path, reason}`` for those it skips."""
    files: list[_File] = []
    skipped: list[dict[str, str]] = []
    targets = [side_path(patched.target_file) for patched in patch]
    for order, patched in enumerate(patch):
        source, target = side_path(patched.source_file), targets[order]
        path = target or source or ""
        reason = _skip_reason(patched, source, target, targets.count(target))
        if reason is None:
            file = _read(order, patched, path, source, read_base)
            reason = file if isinstance(file, str) else None
            if isinstance(file, _File):
                files.append(file)
        if reason is not None:
            skipped.append({"path": path, "reason": reason})
    return files, skipped


def _skip_reason(patched: PatchedFile, source: str | None, target: str | None, count: int) -> str | None:
    """Why a file diff is not mutated, from the diff alone, or None."""
    if target is None:
        return "deleted by the gold patch"
    if not target.endswith(".py"):
        return "not a Python file"
    if patched.is_binary_file:
        return "a binary diff"
    if patched.target_mode in _NOT_SOURCE_MODES:
        return f"not a regular file (mode {patched.target_mode})"
    for path in dict.fromkeys(p for p in (source, target) if p is not None):
        why = protected_reason(path)
        if why is not None:
            return f"a test or protected file ({why})"
    if count > 1:
        return "changed by more than one file diff of the gold patch"
    if not any(line.is_added for hunk in patched for line in hunk):
        return "the gold patch adds no lines to it"
    return None


def _read(order: int, patched: PatchedFile, path: str, source: str | None, read_base: Callable[[str], str | None]) -> _File | str:
    """The file ready to mutate, or why it is skipped."""
    base = read_base(source) if source is not None else None
    text = apply_hunks(base, patched)
    if text is None and base is not None:  # the hunks' context where it is, as git apply finds it (an offset)
        moved = _at_offsets(base, patched, path)
        if moved is not None:
            patched, text = moved, apply_hunks(base, moved)
    if text is None:
        return "the gold patch does not apply to its base text"
    if len(text) > AST_LIMIT:
        return f"larger than {AST_LIMIT} characters"
    if "\r" in text.replace("\r\n", ""):
        return "holds a lone carriage return (git and Python number its lines differently)"
    src = _Source(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(src.body, path)
    except _COMPILE_ERRORS:
        return "does not parse after the gold patch"
    key = _compile_key(src.body, path)
    if key is None:
        return "does not compile after the gold patch"
    changed = frozenset(line.target_line_no for hunk in patched for line in hunk if line.is_added and line.target_line_no)
    return _File(order, path, base, src, tree, key, changed, patched)


def _at_offsets(base: str, patched: PatchedFile, path: str) -> PatchedFile | None:
    """The file diff with each hunk moved to where its context and removed lines stand in ``base``
    (the nearest place at or after the previous hunk, as ``git apply`` finds an offset, no fuzz), or
    None when a hunk's lines are nowhere. A tree whose base is not the gold's own commit (a release's
    sdist with the patches reverse-applied) holds the same code a few lines away."""
    lines = [line.rstrip("\r\n") for line in base.splitlines(keepends=True)]
    floor, moved, drift = 0, [], 0
    for hunk in patched:
        block = [line.value.rstrip("\r\n") for line in hunk if line.is_context or line.is_removed]
        stated = max(hunk.source_start - 1, 0) if block else hunk.source_start
        found = None
        for distance in range(len(lines) + 1):
            for start in (stated + distance, stated - distance):
                if start >= floor and lines[start:start + len(block)] == block:
                    found = start
                    break
            if found is not None:
                break
        if found is None:
            return None
        header = f"@@ -{found + 1},{hunk.source_length} +{found + 1 + drift},{hunk.target_length} @@\n"
        moved.append(header + "".join(str(line) for line in hunk))
        floor, drift = found + len(block), drift + hunk.added - hunk.removed
    text = f"--- a/{path}\n+++ b/{path}\n" + "".join(moved)
    try:
        return parse_diff(text)[0]
    except (ValueError, IndexError):
        return None


# --- where to mutate --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Site:
    """One mutation of one file: replace ``body[start:end]`` with ``replacement``."""

    operator: str
    start: int
    end: int
    replacement: str
    description: str


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, not descending into f-strings (their inner positions are not reliable in every
    Python version); iterative, so deep trees cannot exhaust the recursion limit."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.JoinedStr):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _docstrings(tree: ast.Module) -> set[int]:
    """``id()`` of each docstring statement."""
    found: set[int] = set()
    for node in _walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first))
    return found


def _sites(src: _Source, tree: ast.Module, changed: frozenset[int]) -> Iterator[_Site]:
    """Every mutation of the nodes that lie wholly on changed lines."""
    docstrings = _docstrings(tree)

    def inside(node: ast.AST) -> bool:
        first: int = node.lineno  # type: ignore[attr-defined]
        last: int = node.end_lineno or first  # type: ignore[attr-defined]
        return all(number in changed for number in range(first, last + 1))

    for node in _walk(tree):
        if isinstance(node, ast.Compare) and inside(node):
            yield from _compare(src, node)
        elif isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.Constant)) and inside(node):
            yield from _boolean(src, node)
            yield from _constant(src, node)
        elif isinstance(node, ast.Slice):
            yield from _slice(src, [b for b in (node.lower, node.upper) if b is not None and inside(b)])
        elif isinstance(node, ast.Call) and inside(node):
            yield from _arguments(src, node)
        elif isinstance(node, (ast.If, ast.While)) and inside(node.test):
            yield from _condition(src, node)
        if isinstance(node, _SIMPLE) and id(node) not in docstrings and inside(node):
            text = src.text(node)
            yield _Site("statement", src.start(node), src.end(node), "pass", f"`{_short(text)}` replaced by `pass`")
        if isinstance(node, ast.Return) and node.value is not None and inside(node):
            value = node.value
            if not (isinstance(value, ast.Constant) and value.value is None):
                desc = f"returned `{_short(src.text(value))}` replaced by `None`"
                yield _Site("return", src.start(value), src.end(value), "None", desc)


def _gap_words(gap: str) -> list[tuple[int, int]]:
    """Where the words and operator symbols of the text between two operands are, skipping
    whitespace, parentheses, line continuations and comments."""
    spans: list[tuple[int, int]] = []
    at = 0
    while at < len(gap):
        char = gap[at]
        if char == "#":
            newline = gap.find("\n", at)
            at = len(gap) if newline < 0 else newline
        elif char.isspace() or char in "()\\":
            at += 1
        else:
            end = at + 1
            if char.isalnum() or char == "_":
                while end < len(gap) and (gap[end].isalnum() or gap[end] == "_"):
                    end += 1
            else:
                while end < len(gap) and gap[end] in "<>=!":
                    end += 1
            spans.append((at, end))
            at = end
    return spans


def _operator_span(src: _Source, left: ast.AST, right: ast.AST, words: list[str]) -> tuple[int, int] | None:
    """Where the operator spelled ``words`` is between two operands, or None when the gap holds
    anything else."""
    start = src.end(left)
    gap = src.body[start : src.start(right)]
    spans = _gap_words(gap)
    if [gap[a:b] for a, b in spans] != words:
        return None
    return start + spans[0][0], start + spans[-1][1]


def _compare(src: _Source, node: ast.Compare) -> Iterator[_Site]:
    for op, left, right in zip(node.ops, [node.left, *node.comparators], node.comparators):
        spelled, partner = _COMPARE[type(op)]
        span = _operator_span(src, left, right, spelled.split())
        if span is not None:
            yield _Site("compare", span[0], span[1], partner, f"`{spelled}` replaced by `{partner}`")


def _boolean(src: _Source, node: ast.AST) -> Iterator[_Site]:
    if isinstance(node, ast.BoolOp):
        word, partner = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        found = [_operator_span(src, a, b, [word]) for a, b in zip(node.values, node.values[1:])]
        spans = [span for span in found if span is not None]
        if spans and len(spans) == len(found):
            first, last = spans[0][0], spans[-1][1]
            pieces, cursor = [], first
            for a, b in spans:
                pieces += [src.body[cursor:a], partner]
                cursor = b
            yield _Site("boolean", first, last, "".join(pieces), f"`{word}` replaced by `{partner}`")
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        start = src.start(node)
        if src.body.startswith("not", start):
            end = start + 3
            while end < len(src.body) and src.body[end] in " \t":
                end += 1
            yield _Site("boolean", start, end, "", "`not` removed")
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        spelled, partner = ("True", "False") if node.value else ("False", "True")
        if src.text(node) == spelled:
            yield _Site("boolean", src.start(node), src.end(node), partner, f"`{spelled}` replaced by `{partner}`")


def _constant(src: _Source, node: ast.AST) -> Iterator[_Site]:
    if not (isinstance(node, ast.Constant) and type(node.value) is int):
        return
    start, end = src.start(node), src.end(node)
    text = src.body[start:end]
    try:
        if ast.literal_eval(text) != node.value:
            return
        values = [str(node.value + 1), str(node.value - 1)]
    except (ValueError, SyntaxError):  # not the literal itself; more digits than str() converts
        return
    # a negative number before ``**``, ``.``, ``[`` or ``(`` would bind differently: (-1) ** 2
    postfix = src.body[end : end + 64].lstrip(" \t").startswith(("**", ".", "[", "("))
    for value in values:
        replacement = f"({value})" if value.startswith("-") and postfix else value
        yield _Site("constant", start, end, replacement, f"`{_short(text)}` replaced by `{value}`")


def _slice(src: _Source, bounds: list[ast.expr]) -> Iterator[_Site]:
    for bound in bounds:
        text = src.text(bound)
        tight = isinstance(bound, _TIGHT) or (isinstance(bound, ast.BinOp) and not isinstance(bound.op, _LOOSE_BINOPS))
        tight = tight or (isinstance(bound, ast.UnaryOp) and not isinstance(bound.op, ast.Not))
        operand = text if tight else f"({text})"
        for sign in "+-":
            replacement = f"{operand} {sign} 1"
            desc = f"slice bound `{_short(text)}` replaced by `{_short(replacement)}`"
            yield _Site("slice", src.start(bound), src.end(bound), replacement, desc)


def _condition(src: _Source, node: ast.If | ast.While) -> Iterator[_Site]:
    keyword = "while" if isinstance(node, ast.While) else "elif" if src.body.startswith("elif", src.start(node)) else "if"
    test = node.test
    for value in (True, False) if isinstance(node, ast.If) else (True,):
        if not (isinstance(test, ast.Constant) and test.value is value):
            yield _Site("condition", src.start(test), src.end(test), str(value), f"`{keyword}` condition replaced by `{value}`")


def _arguments(src: _Source, node: ast.Call) -> Iterator[_Site]:
    positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
    if len(positional) < 2:
        return
    first, second = positional[:2]
    a, b = src.text(first), src.text(second)
    if a != b:
        middle = src.body[src.end(first) : src.start(second)]
        yield _Site("arguments", src.start(first), src.end(second), b + middle + a,
                    f"arguments `{_short(a)}` and `{_short(b)}` swapped")  # fmt: skip


def _short(text: str, width: int = 40) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


# --- equivalence ------------------------------------------------------------------------------


def _compile_key(body: str, path: str) -> tuple[Any, ...] | None:
    """:func:`_code_key` of the module ``body`` holds, or None when it does not compile."""
    try:
        with warnings.catch_warnings():  # SyntaxWarnings (invalid escapes...) must not become errors
            warnings.simplefilter("ignore")
            code = compile(body, path, "exec", dont_inherit=True)
        return _code_key(code)
    except _COMPILE_ERRORS:
        return None


def _code_key(code: types.CodeType) -> tuple[Any, ...]:
    """What a code object does, without where: bytecode, constants (nested code objects keyed the
    same way), names, flags, argument counts, its name and its exception table; no line numbers,
    positions or file name."""
    return (code.co_code, tuple(_const_key(value) for value in code.co_consts), code.co_names, code.co_varnames,
            code.co_freevars, code.co_cellvars, code.co_flags, code.co_argcount, code.co_posonlyargcount,
            code.co_kwonlyargcount, code.co_name, getattr(code, "co_exceptiontable", b""))  # fmt: skip


def _const_key(value: object) -> tuple[Any, ...]:
    """A constant with its type (``1``, ``1.0`` and ``True`` are equal but not the same code; so
    are ``0.0`` and ``-0.0``, told apart by their repr)."""
    if isinstance(value, types.CodeType):
        return ("code", _code_key(value))
    if isinstance(value, tuple):
        return ("tuple", tuple(_const_key(item) for item in value))
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted((_const_key(item) for item in value), key=repr)))
    if isinstance(value, (int, str, bytes)) or value is None or value is Ellipsis:
        return (type(value).__name__, value)
    return (type(value).__name__, repr(value))


# --- ordering and naming ----------------------------------------------------------------------


@dataclass
class _Candidate:
    file: _File
    site: _Site
    seq: int  # its place in the walk of its file: breaks ties at one spot
    id: str = ""  # set by _name

    def mutated_body(self) -> str:
        body = self.file.source.body
        return body[: self.site.start] + self.site.replacement + body[self.site.end :]

    def line(self) -> int:
        return self.file.source.place(self.site.start)[0]

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "operator": self.site.operator, "path": self.file.path, "line": self.line(),
                "original": self.file.source.body[self.site.start : self.site.end],
                "replacement": self.site.replacement}  # fmt: skip

    def mutant(self, sections: _Sections) -> Mutant:
        gold_text = self.file.source.bom + self.file.source.body
        mutated = self.file.source.bom + self.mutated_body()
        info = self.summary()
        return Mutant(info["id"], info["operator"], info["path"], info["line"], info["original"], info["replacement"],
                      self.site.description, sections.replaced(self.file, mutated), file_diff(self.file.path, gold_text, mutated))  # fmt: skip


def _name(groups: dict[str, list[_Candidate]]) -> None:
    """Give every candidate its id, ``operator@path:line:col`` and ``:2``... for later ones at the
    same spot (over all candidates, so an id does not depend on what compiles to what)."""
    seen: dict[str, int] = {}
    for group in groups.values():
        for candidate in group:
            line, col = candidate.file.source.place(candidate.site.start)
            spot = f"{candidate.site.operator}@{candidate.file.path}:{line}:{col}"
            seen[spot] = seen.get(spot, 0) + 1
            candidate.id = spot if seen[spot] == 1 else f"{spot}:{seen[spot]}"


def _interleave(groups: list[list[T]]) -> list[T]:
    """Round robin: the first of each group, then the second of each..."""
    out: list[T] = []
    for index in range(max((len(group) for group in groups), default=0)):
        out.extend(group[index] for group in groups if index < len(group))
    return out


# --- patches ----------------------------------------------------------------------------------


class _Sections:
    """The gold text cut into its file diffs, verbatim: what comes before the first, then each
    one from its ``diff --git`` line (or its ``--- `` header) to the next one's."""

    def __init__(self, gold: str, patch: Sequence[PatchedFile]) -> None:
        lines = _split(gold)
        starts: list[int] = []
        for patched in patch:
            at = (patched.diff_line_no or 1) - 1
            if lines[at].startswith("+++ ") and at > 0 and lines[at - 1].startswith("--- "):
                at -= 1  # unidiff starts a file without a git header at its +++ line
            starts.append(at)
        self.preamble = "".join(lines[: starts[0]])
        self.parts = ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)])]

    def replaced(self, file: _File, mutated: str) -> str:
        """The gold with ``file``'s section made base -> ``mutated``."""
        parts = list(self.parts)
        parts[file.order] = _section(file, mutated)
        return self.preamble + "".join(parts)


def _section(file: _File, mutated: str) -> str:
    """A file diff base -> ``mutated``: :func:`file_diff`, unless the gold renames, copies or changes
    the mode of the file, whose header lines (but ``index``) are then kept."""
    patched = file.diff
    info = [line for line in patched.patch_info or () if not line.startswith("index ")]
    git = bool(info) and info[0].startswith("diff --git ")
    extra = [line.rstrip("\r\n") for line in info[1:]] if git else []
    source = side_path(patched.source_file)
    if source in (None, file.path) and all(line in _PLAIN_INFO for line in extra):
        return file_diff(file.path, file.base, mutated)
    header = "".join(line if line.endswith("\n") else line + "\n" for line in info) if git else ""
    return header + _unified(file.base, mutated, patched.source_file, patched.target_file)


def _unified(old: str | None, new: str | None, old_name: str, new_name: str) -> str:
    """``---``/``+++`` lines and difflib's hunks (3 lines of context), with git's no-newline markers."""
    names = [name + "\t" if " " in name and not name.startswith('"') else name for name in (old_name, new_name)]
    lines = difflib.unified_diff(_split(old or ""), _split(new or ""), names[0], names[1], lineterm="\n")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _split(text: str) -> list[str]:
    """Lines as git counts them: split after each ``\\n`` only, terminators kept."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _git_name(prefix: str, path: str) -> str:
    """``prefix + path`` as git writes it in a diff header: C-quoted when it holds a quote, a
    backslash, a control character or a non-ASCII one."""
    name = prefix + path
    if all(" " <= char < "\x7f" and char not in '"\\' for char in name):
        return name
    out = []
    for byte in name.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        out.append("\\" + char if char in '"\\' else char if 0x20 <= byte < 0x7F else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
