"""Keep a hostile candidate away from the tests that judge it.

A candidate patch is split file by file (with ``unidiff``): a file diff that
touches anything able to change how tests are collected, run or reported is
dropped, never applied, and listed with its reason in the envelope. Pure
functions; this module never imports pytest. The patch is scanned, never split into
a list of lines, and a file diff over :data:`LARGE_DIFF` is read by unidiff a line at
a time without its hunk lines: the filter's memory stays a small multiple of the patch.

Files are protected by the role they play, not only by their name
(``docs/untrusted-candidates.md`` explains each):

* the instance's tests: every file the test patch touches and every file holding
  a listed test; everything inside the folders holding them when those are test
  folders (``testing/python/`` for ``testing/python/test_x.py``, never the package
  above ``astropy/io/fits/tests/``); an ``__init__.py`` added to or removed from a
  folder on the path from the repository root to them (it changes their module
  names);
* test code by name: ``conftest.py`` anywhere, test modules (``test_*.py``,
  ``*_test.py``, ``tests.py``) and anything below a ``tests`` directory;
* pytest configuration at any level: ``pytest.toml``, ``.pytest.toml``,
  ``pytest.ini``, ``.pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``;
* interpreter start-up hooks: ``sitecustomize``/``usercustomize`` as a module,
  a package or an extension module, and ``*.pth``;
* compiled byte code: ``__pycache__`` folders, ``*.pyc``, ``*.pyo``;
* git's own files: ``.gitattributes`` anywhere, ``.gitmodules``;
* plugin entry points and packaging metadata: ``setup.py``, ``entry_points.txt``;
* a NEW top-level module or package (at the repository root, ``src/`` or another
  import root) named like a standard-library module or like pytest, a plugin or
  one of its dependencies (:func:`shadowing_reason`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable, Final, Iterable, Iterator, Mapping

if TYPE_CHECKING:
    from unidiff.patch import PatchSet

__all__ = [
    "Dropped",
    "ProtectionResult",
    "RUNNER_MODULES",
    "STDLIB_MODULES",
    "filter_candidate",
    "is_blank",
    "patch_files",
    "protected_reason",
    "shadowing_reason",
    "snapshot",
    "snapshot_change_reason",
    "snapshot_changes",
    "protected_test_folders",
]

CONFIG_FILES: Final = {
    "pytest.ini": "pytest configuration",
    ".pytest.ini": "pytest configuration",
    "pytest.toml": "pytest configuration",
    ".pytest.toml": "pytest configuration",
    "tox.ini": "pytest configuration",
    "setup.cfg": "pytest configuration",
    "pyproject.toml": "pytest configuration",
    "conftest.py": "conftest.py (pytest hooks and fixtures)",
    "sitecustomize.py": "interpreter start-up hook",
    "usercustomize.py": "interpreter start-up hook",
    "setup.py": "packaging metadata (plugin entry points)",
    "entry_points.txt": "plugin entry points",
}
SKIP_DIRS: Final = frozenset({".git", "__pycache__", ".pytest_cache", ".tox", ".nox", ".mypy_cache", "node_modules"})

TEST_FILE_REASON: Final = "a file of the instance's tests (test patch or listed tests)"
BELOW_TESTS_REASON: Final = "below a tests directory"
BYTECODE_REASON: Final = "compiled byte code (__pycache__, .pyc, .pyo): Python can run it instead of the source"
GIT_FILES: Final = {
    ".gitattributes": "git attributes (.gitattributes: how git applies, compares and restores files)",
    ".gitmodules": "git submodules (.gitmodules)",
}

# Names Python imports at start-up when it finds them on the path, in any importable form.
STARTUP_MODULES: Final = ("sitecustomize", "usercustomize")
# The suffixes of a file that defines an importable module (sources, byte code, extension modules:
# ``name.cpython-311-x86_64-linux-gnu.so``, ``name.abi3.so``, ``name.pyd``).
MODULE_SUFFIXES: Final = (".py", ".pyw", ".pyc", ".pyo", ".so", ".pyd")

# Standard-library top-level names the running interpreter may not list (``sys.stdlib_module_names``
# is this interpreter's; the tests may run under another Python): removed or added in 3.7-3.14.
STDLIB_OTHER_VERSIONS: Final = frozenset({
    # removed: 3.8 macpath; 3.9 dummy_threading; 3.10 formatter, parser, symbol; 3.12 PEP 632 and
    # the asyncore family; 3.13 PEP 594's dead batteries and lib2to3
    "macpath", "_dummy_thread", "dummy_threading", "formatter", "parser", "symbol", "_bootlocale",
    "distutils", "imp", "asynchat", "asyncore", "smtpd",
    "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "_crypt", "imghdr", "mailcap", "msilib", "_msi",
    "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib", "lib2to3",
    # added: 3.7 contextvars, dataclasses; 3.9 zoneinfo, graphlib; 3.11 tomllib; 3.12-3.14 internals
    "contextvars", "_contextvars", "dataclasses", "zoneinfo", "_zoneinfo", "graphlib", "tomllib",
    "_pydatetime", "_pylong", "_wmi", "_tokenize", "_pyrepl", "_colorize", "_interpreters",
    "_interpchannels", "_interpqueues", "_suggestions", "_sysconfig", "_opcode_metadata",
    "_android_support", "_ios_support", "_apple_support", "annotationlib", "compression", "_zstd",
})  # fmt: skip
STDLIB_MODULES: Final = frozenset(getattr(sys, "stdlib_module_names", ())) | STDLIB_OTHER_VERSIONS
# pytest, the grader's own modules in the test process, and what pytest and its usual plugins
# import (pytest 4-9: py, six, attrs, pathlib2 ... for the old ones); any ``pytest_*`` name too.
RUNNER_MODULES: Final = frozenset({
    "pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "colorama",
    "attr", "attrs", "atomicwrites", "more_itertools", "xdist", "execnet",
    "_objective_scoring_recorder", "_objective_scoring_boot", "pytest_objective_scoring",
    "importlib_metadata", "zipp", "typing_extensions", "six", "wcwidth", "funcsigs", "pathlib2",
    "pkg_resources", "setuptools", "_distutils_hack", "hypothesis", "_hypothesis_pytestplugin",
    "_hypothesis_globals",
})  # fmt: skip

# Folder names that only ever hold tests. ``test`` and ``testing`` are also names of library
# packages (``django/test/``, ``numpy/testing/``, ``sphinx/testing/``): they make a folder a test
# folder only at the top (``testing/``, ``src/test/``) or when the file there is a test module.
_TEST_DIR: Final = re.compile(r"(?i)tests|unit_?tests?|testsuite|test_suite|e2e|tests?[_-].+|.+[_-]tests?")
_AMBIGUOUS_TEST_DIRS: Final = frozenset({"test", "testing"})
_TEST_MODULE_FILE: Final = re.compile(r"(?i)(test.*|.*_tests?)\.py")

# snapshot() records an ``__init__.py`` on the path to the tests by its presence only: its content
# is the project's (``sympy/__init__.py``), whether it exists decides the tests' module names.
INIT_PRESENT: Final = "__init__.py present"
INIT_ABSENT: Final = "no __init__.py"
UNREADABLE_FOLDER: Final = "a folder the grader cannot read"
_MARKERS: Final = frozenset({INIT_PRESENT, INIT_ABSENT, UNREADABLE_FOLDER})

CHANGE_KINDS: Final = ("added", "removed")


class PatchParseError(ValueError):
    """The candidate is not a unified diff that can be read file by file."""


@dataclass(frozen=True)
class Dropped:
    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class ProtectionResult:
    patch: str
    kept: tuple[str, ...]
    dropped: tuple[Dropped, ...]


def _norm(path: str) -> str:
    """A repository-relative path in one spelling: ``/`` separators, no ``./``, no trailing ``/``."""
    text = str(PurePosixPath(path.replace("\\", "/")))
    return "" if text == "." else text


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _is_test_folder(folder: tuple[str, ...], filename: str) -> bool:
    """Whether ``folder``, which holds a file of the instance's tests, is a folder of tests."""
    if not folder:
        return False  # the repository root (requests' test_requests.py): never the whole repository
    if any(_TEST_DIR.fullmatch(part) for part in folder):
        return True
    lowered = [part.lower() for part in folder]
    top = 1 if lowered[0] == "src" and len(lowered) > 1 else 0
    if lowered[top] in _AMBIGUOUS_TEST_DIRS:
        return True
    return any(part in _AMBIGUOUS_TEST_DIRS for part in lowered) and bool(_TEST_MODULE_FILE.fullmatch(filename))


@dataclass(frozen=True)
class _Tests:
    """What the instance's test files (test patch and listed tests) make protected."""

    files: frozenset[str]
    folders: tuple[str, ...]  # test folders holding them: everything below is protected
    on_path: frozenset[str]  # folders from the root ("") to each of their folders

    def folder_of(self, path: str) -> str | None:
        return next((f for f in self.folders if path.startswith(f + "/")), None)


@functools.lru_cache(maxsize=64)
def _tests_of(files: tuple[str, ...]) -> _Tests:
    folders: set[str] = set()
    on_path: set[str] = set()
    for path in files:
        parts = tuple(p for p in path.split("/") if p)
        if not parts:
            continue
        folder = parts[:-1]
        on_path.update("/".join(folder[:i]) for i in range(len(folder) + 1))
        if _is_test_folder(folder, parts[-1]):
            folders.add("/".join(folder))
    # a folder inside another one adds nothing
    outer = tuple(sorted(f for f in folders if not any(f.startswith(g + "/") for g in folders)))
    return _Tests(frozenset(files), outer, frozenset(on_path))


def _tests(files: Iterable[str]) -> _Tests:
    return _tests_of(tuple(sorted({_norm(f) for f in files})))


def protected_test_folders(protected: Iterable[str]) -> list[str]:
    """The folders everything inside of which is protected, derived from the instance's test files.

    A folder holding a listed test or a test-patch file counts when it is a folder of tests: one
    of its components is a test-folder name (``tests``, ``unit_tests``, ``tests_x``, ``x_tests``,
    ``e2e``...), or it is below a top-level ``test``/``testing`` folder, or it is a ``test`` or
    ``testing`` folder holding a test module (``tornado/test/web_test.py``). The repository root
    and a package holding its tests next to its sources (``pkg/test_x.py``) never count, and a
    folder above the one holding the tests never does.
    """
    return list(_tests(protected).folders)


def _startup_hook(parts: tuple[str, ...]) -> str | None:
    for part in parts[:-1]:
        if part in STARTUP_MODULES:
            return f"interpreter start-up hook (inside a {part} package)"
    name = parts[-1]
    stem = name.split(".", 1)[0]
    if stem in STARTUP_MODULES and name != stem and name.endswith(MODULE_SUFFIXES):
        return f"interpreter start-up hook ({stem} module: {name})"
    return None


def _classify(path: str, tests: _Tests, change: str | None, language: str | None = None) -> tuple[str, bool] | None:
    """The reason ``path`` is protected and whether it is a test folder's file (data the tests may
    write themselves), or None. ``language``: another ecosystem's judge files too
    (:func:`.command_spec.language_reason`)."""
    if path in tests.files:
        return TEST_FILE_REASON, False
    if language is not None:
        from .command_spec import language_reason

        why = language_reason(language, path)
        if why is not None:
            return why, "data" in why or "resources" in why
    parts = tuple(path.split("/"))
    name = parts[-1]
    if name in CONFIG_FILES:
        return CONFIG_FILES[name], False
    if name.endswith(".pth"):
        return "interpreter start-up hook (.pth)", False
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py") or name == "tests.py"):
        return "test module", False
    if "tests" in parts[:-1]:
        return BELOW_TESTS_REASON, True
    startup = _startup_hook(parts)
    if startup:
        return startup, False
    if "__pycache__" in parts[:-1] or name.endswith((".pyc", ".pyo")):
        return BYTECODE_REASON, False
    if name in GIT_FILES:
        return GIT_FILES[name], False
    folder = tests.folder_of(path)
    if folder is not None:
        return f"inside a folder of the instance's tests ({folder}/)", True
    if name == "__init__.py" and change in CHANGE_KINDS and _parent(path) in tests.on_path:
        where = _parent(path) + "/" if _parent(path) else "the repository root"
        return f"__init__.py {change} in {where}, on the path to the instance's tests (changes their module names)", False
    return None


def protected_reason(path: str, test_patch_files: Iterable[str] = (), *, change: str | None = None,
                     language: str | None = None) -> str | None:
    """Why a repository-relative path must not be changed by a candidate, or None.

    ``test_patch_files`` are the instance's test files (the test patch's and those holding the
    listed tests). ``change`` is ``"added"`` or ``"removed"`` when the candidate creates or deletes
    the file (``None``: modified, or not known): an ``__init__.py`` on the path to the tests is
    protected only against being added or removed, its content is the project's. An ``__init__.py``
    added to a folder the candidate creates is not "added" in that sense (pass ``None``).
    """
    hit = _classify(_norm(path), _tests(test_patch_files), change, language)
    return hit[0] if hit else None


def _guarded_module(module: str) -> str | None:
    """What a top-level module of that name would shadow, or None."""
    if module in RUNNER_MODULES or module.startswith("pytest_"):
        return "the test runner (pytest, its plugins or their dependencies)"
    if module in STDLIB_MODULES:
        return "the standard-library module"
    return None


def _top_level(parts: tuple[str, ...], root: tuple[str, ...]) -> str | None:
    """The top-level module a file at ``parts`` defines or belongs to when ``root`` is an import root."""
    if len(parts) <= len(root) or parts[: len(root)] != root:
        return None
    rest = parts[len(root) :]
    if len(rest) == 1:
        if not rest[0].endswith(MODULE_SUFFIXES):
            return None
        module = rest[0].split(".", 1)[0]
    else:
        module = rest[0]
        # a folder of data named like a module shadows nothing (without a module in it, it is at
        # most a namespace portion that an installed module wins over), unless pytest's own
        if not rest[-1].endswith(MODULE_SUFFIXES) and not (module in RUNNER_MODULES or module.startswith("pytest_")):
            return None
    return module if module.isidentifier() else None


def _is_basedir(root: str, tests: _Tests, existed_at_base: Callable[[str], bool]) -> bool:
    """Whether pytest's default import mode puts ``root`` on ``sys.path`` for a test module: the
    first folder above a test file without an ``__init__.py`` (``pkg/`` for ``pkg/test_x.py``)."""
    if root and existed_at_base(f"{root}/__init__.py"):
        return False
    prefix = root + "/" if root else ""
    for path in tests.files:
        if not path.endswith(".py") or not path.startswith(prefix):
            continue
        folders = path[len(prefix) :].split("/")[:-1]
        if all(existed_at_base(f"{prefix}{'/'.join(folders[: i + 1])}/__init__.py") for i in range(len(folders))):
            return True
    return False


def shadowing_reason(
    path: str,
    existed_at_base: Callable[[str], bool],
    protected: Iterable[str] = (),
    roots: Iterable[str] = (),
) -> str | None:
    """Why ``path`` would make a NEW top-level module shadow one the tests need, or None.

    A file defining or inside a top-level module (``json.py``, ``json/__init__.py``,
    ``pluggy/hooks.py``, ``typing.cpython-311-x86_64-linux-gnu.so``) at an import root, named like a
    standard-library module (this interpreter's ``sys.stdlib_module_names`` and those of 3.7-3.14)
    or like pytest, a plugin or a dependency, which did not exist at the base: a module the base
    has is the project's own (the ``py`` project's ``py/``). Import roots are the repository root,
    ``src/``, ``roots`` (repository-relative folders holding top-level packages, ``lib/`` in
    ``lib/matplotlib/``), and, given the instance's test files as ``protected``, the folders pytest
    puts on ``sys.path`` for them (the first folder above a test without an ``__init__.py``).
    ``existed_at_base`` answers for files and folders (``git cat-file -e BASE:path``).
    """
    rel = _norm(path)
    parts = tuple(rel.split("/"))
    if not rel:
        return None
    explicit = {"", "src", *(_norm(r) for r in roots)}
    tests: _Tests | None = None
    for depth in range(len(parts)):
        root = parts[:depth]
        module = _top_level(parts, root)
        what = _guarded_module(module) if module else None
        if module is None or what is None:
            continue
        root_text = "/".join(root)
        if root_text not in explicit:
            tests = tests or _tests(protected)
            if not _is_basedir(root_text, tests, existed_at_base):
                continue
        base = f"{root_text}/{module}" if root_text else module
        if existed_at_base(rel) or existed_at_base(base) or existed_at_base(base + ".py"):
            continue
        at = f"{root_text}/" if root_text else "the repository root"
        return f"a new top-level module {module} at {at} would shadow {what}"
    return None


_ESCAPES: Final = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(path: str) -> str:
    """Undo git's C-style quoting of a path (``"a/caf\\303\\251 \\"x\\".py"``)."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and body[i + 1 : i + 4].isdigit():
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
        out.extend(char.encode("utf-8", "surrogateescape"))
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip(path: str | None) -> str | None:
    if path is None:
        return None
    path = unquote(path.rstrip("\t"))
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


LARGE_DIFF: Final = 1 << 18
"""Characters: a diff (or one file diff) longer than this is read by unidiff one line at a time,
without an object per line or per hunk (:class:`~.large_diff.LargeDiff`), so that reading it costs
about its text; a smaller one (every patch of SWE-bench) is read whole."""

# Where ``str.splitlines`` ends a line: the file diffs are cut, and their headers read, at its lines.
_LINE_BREAKS: Final = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK: Final = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def is_blank(text: str) -> bool:
    """``not text.strip()`` without a stripped copy of a large text."""
    return not text or text.isspace()


def _line_starts(text: str, prefix: str) -> Iterator[int]:
    """Where a line of ``text``, as ``str.splitlines`` cuts it, starts with ``prefix``."""
    at = text.find(prefix)
    while at >= 0:
        if at == 0 or text[at - 1] in _LINE_BREAKS:
            yield at
        at = text.find(prefix, at + 1)


def _next_line(text: str, at: int) -> int:
    """Where the ``str.splitlines`` line after the one holding ``at`` starts (``len(text)``: none)."""
    found = _BREAK.search(text, at)
    return len(text) if found is None else found.end()


def _line_at(text: str, at: int) -> str:
    """The ``str.splitlines`` line of ``text`` starting at ``at``, without its terminator."""
    found = _BREAK.search(text, at)
    return text[at:] if found is None else text[at : found.start()]


def _lines_of(text: str, start: int = 0) -> Iterator[str]:
    """``text[start:].splitlines()``, one line at a time."""
    while start < len(text):
        yield _line_at(text, start)
        start = _next_line(text, start)


def _parse(text: str) -> PatchSet:
    """``text`` read by unidiff: whole when it is small, as a :class:`~.large_diff.LargeDiff` (a line
    at a time, the same checks and messages, only the file diffs' headers kept) when it is large."""
    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    try:
        if len(text) > LARGE_DIFF:
            from .large_diff import LargeDiff

            return LargeDiff(text)
        return PatchSet(text)
    except UnidiffParseError as exc:
        raise PatchParseError(str(exc)) from None


def patch_files(patch_text: str) -> list[str]:
    """Every repository-relative path a diff touches (sources and targets)."""
    paths: dict[str, None] = {}
    for patched in _parse(patch_text):
        for candidate in (_strip(patched.source_file), _strip(patched.target_file)):
            if candidate:
                paths.setdefault(candidate, None)
    return list(paths)


def _file_bounds(patch_text: str) -> list[tuple[int, int]]:
    """Where each file diff of the patch starts and ends, as offsets into the text.

    Git-style patches are cut at their ``diff --git`` lines, so extended headers
    and ``GIT binary patch`` data stay byte for byte; other unified diffs are cut
    at each ``--- `` / ``+++ `` header pair. Lines are ``str.splitlines``'s; the text is
    scanned, never split into a list of lines.
    """
    starts = list(_line_starts(patch_text, "diff --git "))
    if not starts:
        starts = [at for at in _line_starts(patch_text, "--- ") if patch_text.startswith("+++ ", _next_line(patch_text, at))]
    # Text before the first file diff (a mail header, a commit message) is dropped: it changes
    # nothing for git apply, and GNU patch could read a diff of another format hidden there.
    return list(zip(starts, [*starts[1:], len(patch_text)]))


_QUOTED = r'"(?:[^"\\]|\\.)*"'
_GIT_HEADER = re.compile(
    rf"^diff --git (?:(?P<qa>{_QUOTED})|a/(?P<a>.+?)) (?:(?P<qb>{_QUOTED})|b/(?P<b>.+?))$", re.MULTILINE
)
# Lines that start a file diff of another format inside what should be one unified file diff.
_FOREIGN = re.compile(r"^(\*\*\* |Index: |diff |Only in |Binary files )", re.MULTILINE)
_INFO_PREFIXES: Final = ("rename from ", "rename to ", "copy from ", "copy to ")


def _body_start(chunk: str) -> int:
    """Where a file diff's text below its ``diff --git`` line starts (all of it for another diff)."""
    if not chunk.startswith("diff --git "):
        return 0
    newline = chunk.find("\n")
    return len(chunk) if newline < 0 else newline + 1


def _chunk_paths(chunk: str) -> list[str]:
    """The paths one file diff names: unidiff's sides, its ``diff --git`` line's, its renames' and
    copies'. Raises :class:`PatchParseError` when it is not one unified file diff."""
    paths: dict[str, None] = {}
    for patched in _parse(chunk):
        for candidate in (_strip(patched.source_file), _strip(patched.target_file)):
            if candidate:
                paths.setdefault(candidate, None)
    header = _GIT_HEADER.search(chunk)
    if header:
        for quoted, plain in (("qa", "a"), ("qb", "b")):
            candidate = _strip(header.group(quoted)) if header.group(quoted) else header.group(plain)
            if candidate:
                paths.setdefault(candidate, None)
    foreign = _FOREIGN.search(chunk, _body_start(chunk))
    if foreign:
        end = chunk.find("\n", foreign.start())
        line = chunk[foreign.start() : end if end >= 0 else len(chunk)]
        raise PatchParseError(f"a file diff of another format is mixed into a unified diff: {line[:200]!r}")
    for prefix in _INFO_PREFIXES:
        for at in _line_starts(chunk, prefix):
            paths.setdefault(unquote(_line_at(chunk, at)[len(prefix) :]), None)
    return list(paths)


def _chunk_changes(chunk: str) -> tuple[set[str], set[str]]:
    """The paths a file diff creates and those it deletes (a rename does both).

    Read from git's extended headers and ``/dev/null`` sides only: a hunk ``@@ -0,0 +1 @@`` also
    fills an existing empty file, so it says nothing about creation.
    """
    created: set[str] = set()
    removed: set[str] = set()
    header = _GIT_HEADER.match(chunk)
    old = new = None
    if header:
        old = _strip(header.group("qa")) if header.group("qa") else header.group("a")
        new = _strip(header.group("qb")) if header.group("qb") else header.group("b")
    minus: str | None = None
    for line in _lines_of(chunk, _next_line(chunk, 0) if header else 0):
        if line.startswith(("@@", "GIT binary patch", "Binary files ")):
            break
        if line.startswith("new file mode") and new:
            created.add(new)
        elif line.startswith("deleted file mode") and old:
            removed.add(old)
        elif line.startswith("rename from "):
            removed.add(unquote(line[len("rename from ") :]))
        elif line.startswith(("rename to ", "copy to ")):
            created.add(unquote(line.split(" to ", 1)[1]))
        elif line.startswith("--- "):
            minus = line[4:].split("\t", 1)[0].rstrip()
        elif line.startswith("+++ ") and minus is not None:
            plus = line[4:].split("\t", 1)[0].rstrip()
            if minus == "/dev/null" and (target := _strip(plus)):
                created.add(target)
            elif plus == "/dev/null" and (source := _strip(minus)):
                removed.add(source)
    return {_norm(p) for p in created}, {_norm(p) for p in removed}


def _module_defining(path: str, roots: Iterable[str]) -> bool:
    """``json.py``, ``json.cpython-311-x86_64-linux-gnu.so`` or ``json/__init__.py`` at an import root."""
    parts = tuple(path.split("/"))
    for root in roots:
        prefix = tuple(root.split("/")) if root else ()
        if parts[: len(prefix)] != prefix:
            continue
        rest = parts[len(prefix) :]
        if len(rest) == 1 and rest[0].endswith(MODULE_SUFFIXES):
            return True
        if len(rest) == 2 and rest[1].split(".", 1)[0] == "__init__" and rest[1].endswith(MODULE_SUFFIXES):
            return True
    return False


def filter_candidate(
    patch_text: str,
    protected: Iterable[str] = (),
    *,
    existed_at_base: Callable[[str], bool] | None = None,
    roots: Iterable[str] = (),
    language: str | None = None,
) -> ProtectionResult:
    """Drop every file diff that touches a protected path; keep the rest verbatim.

    ``protected`` names paths protected for this instance (the test patch's files
    and the files holding its listed tests) on top of the general rules; the test
    folders and the folders on the path to them are derived from them.

    ``language`` adds that ecosystem's judge files (:func:`.command_spec.language_reason`: Maven's
    ``src/test/``, jest's configuration, Go's ``*_test.go``, Cargo's manifest...).

    ``existed_at_base`` (whether a file or folder exists at the base commit) makes two rules
    exact: a new top-level module shadowing the standard library or the test runner
    (:func:`shadowing_reason`, with ``roots`` as extra import roots), and an ``__init__.py`` added
    to a folder on the path to the tests that existed at the base (one in a folder the candidate
    creates, a new package, is the candidate's). Without it the diff is the only evidence: a
    created ``json.py`` / ``json/__init__.py`` at the repository root or ``src/`` is new unless the
    candidate also changes existing files of that module, and a folder is new when the candidate
    creates files in it and changes none there; :func:`snapshot` catches the rest.
    """
    if is_blank(patch_text):
        return ProtectionResult("", (), ())
    bounds = _file_bounds(patch_text)
    if not bounds:
        raise PatchParseError("no file diffs found (expected a unified diff with ---/+++ headers)")
    tests = _tests(protected)
    parsed = [(bound, *_read_chunk(patch_text[bound[0] : bound[1]])) for bound in bounds]
    all_created = {p for _, _, created, _ in parsed for p in created}
    # every other path a file diff names existed at the base (modified, deleted, renamed or copied from)
    existing = {_norm(p) for _, paths, _, _ in parsed for p in paths} - all_created
    root_list = ["", "src", *(_norm(r) for r in roots)]

    def seen_existing(path: str) -> bool:
        return path in existing or any(p.startswith(path + "/") for p in existing)

    def folder_existed(folder: str) -> bool:
        if not folder:
            return True
        if existed_at_base is not None:
            return existed_at_base(folder)
        # a folder the candidate creates files in (other than this __init__.py) and changes nothing in
        creates_more = any(p.startswith(folder + "/") and p != f"{folder}/__init__.py" for p in all_created)
        return seen_existing(folder) or not creates_more

    def reason_for(path: str, created: set[str], removed: set[str]) -> str | None:
        rel = _norm(path)
        change = "added" if rel in created else "removed" if rel in removed else None
        on_path = rel.rsplit("/", 1)[-1] == "__init__.py" and _parent(rel) in tests.on_path
        if existed_at_base is not None and on_path and change is None:
            change = None if existed_at_base(rel) else "added"  # however the diff spells a creation
        if change == "added" and on_path and not folder_existed(_parent(rel)):
            change = None  # the __init__.py of a package the candidate creates
        hit = _classify(rel, tests, change, language)
        if hit:
            return hit[0]
        if language is not None:  # another language's tree: no Python module shadows its runner
            return None
        if existed_at_base is not None:
            return shadowing_reason(rel, existed_at_base, tests.files, roots)
        if rel in all_created and _module_defining(rel, root_list):
            return shadowing_reason(rel, seen_existing, (), roots)
        return None

    kept_bounds: list[tuple[int, int]] = []
    kept: list[str] = []
    dropped: list[Dropped] = []
    for bound, paths, created, removed in parsed:
        hit = next(((p, r) for p in paths if (r := reason_for(p, created, removed))), None)
        if hit:
            dropped.append(Dropped(hit[0], hit[1]))
            continue
        kept.append(paths[-1])
        kept_bounds.append(bound)
    return ProtectionResult(_joined(patch_text, kept_bounds), tuple(kept), tuple(dropped))


def _read_chunk(chunk: str) -> tuple[list[str], set[str], set[str]]:
    """One file diff's paths, and the paths it creates and removes (see :func:`_chunk_changes`)."""
    paths = _chunk_paths(chunk)
    if not paths:
        raise PatchParseError(f"cannot tell which file this diff changes: {_line_at(chunk, 0)[:200]!r}")
    created, removed = _chunk_changes(chunk)
    return paths, created, removed


def _joined(text: str, bounds: list[tuple[int, int]]) -> str:
    """The parts of ``text`` between ``bounds``, in order: ``text`` itself when they cover all of it,
    so that a large candidate kept whole is not copied."""
    merged: list[list[int]] = []
    for start, end in bounds:
        if merged and merged[-1][1] == start:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    if len(merged) == 1 and merged[0] == [0, len(text)]:
        return text
    return "".join(text[start:end] for start, end in merged)


def snapshot(root: Path, test_patch_files: Iterable[str] = (), language: str | None = None) -> dict[str, str]:
    """sha256 of every protected file under ``root``: compared before and after a run.

    Data files in test folders are left out (the tests may write them), and so is byte code in
    ``__pycache__`` (Python writes it; the filter and the workspace's safety net cover what a patch
    puts there). For every folder on the path to the instance's tests, its ``__init__.py`` is
    recorded by presence only (:data:`INIT_PRESENT` / :data:`INIT_ABSENT`), so that
    :func:`snapshot_changes` reports one added to or removed from an existing folder and nothing
    for the project's edits of its content or for a package the candidate creates.
    """
    tests = _tests(test_patch_files)
    digests: dict[str, str] = {}

    def refused(error: OSError) -> None:  # a folder that cannot be read is never skipped silently
        where = os.path.relpath(error.filename, root).replace(os.sep, "/") if error.filename else "."
        digests[where + "/"] = UNREADABLE_FOLDER

    for directory, dirnames, filenames in os.walk(root, onerror=refused):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        rel_dir = os.path.relpath(directory, root)
        for filename in filenames:
            rel = filename if rel_dir == "." else f"{rel_dir}/{filename}".replace(os.sep, "/")
            hit = _classify(rel, tests, None, language)
            if hit is None or (hit[1] and not filename.endswith(".py")):
                continue  # test data may legitimately be written by the tests themselves
            path = os.path.join(directory, filename)
            try:
                with open(path, "rb") as handle:
                    digests[rel] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                digests[rel] = "unreadable"
    for folder in sorted(tests.on_path):
        init = f"{folder}/__init__.py" if folder else "__init__.py"
        if _classify(init, tests, None) is not None:
            continue  # hashed above when it exists (in a test folder, below tests/): a new one shows as added
        where = root / folder if folder else root
        if where.is_dir() and not where.is_symlink():
            digests[init] = INIT_PRESENT if os.path.lexists(where / "__init__.py") else INIT_ABSENT
    return digests


def snapshot_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Protected files added, removed or changed between two snapshots."""
    changes = [f"unreadable {p.rstrip('/')}" for p in after if after[p] == UNREADABLE_FOLDER and before.get(p) != after[p]]
    changes += [f"added {p}" for p in after if p not in before and after[p] not in _MARKERS]
    changes += [f"removed {p}" for p in before if p not in after and before[p] != INIT_ABSENT]
    for path in before:
        if path not in after or before[path] == after[path]:
            continue
        if after[path] == INIT_PRESENT and before[path] == INIT_ABSENT:
            changes.append(f"added {path}")
        elif after[path] == INIT_ABSENT and before[path] == INIT_PRESENT:
            changes.append(f"removed {path}")
        else:
            changes.append(f"changed {path}")
    return sorted(changes)


def snapshot_change_reason(change: str, protected: Iterable[str] = ()) -> str:
    """The reason for one line of :func:`snapshot_changes` (``"added testing/__init__.py"``)."""
    kind, _, path = change.partition(" ")
    reason = protected_reason(path, protected, change=kind if kind in CHANGE_KINDS else None)
    return reason or protected_reason(path, protected) or "a protected file"
