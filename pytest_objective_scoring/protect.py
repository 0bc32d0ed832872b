"""Keep a hostile candidate away from the tests that judge it.

A candidate patch is split file by file (with ``unidiff``): a file diff that
touches anything able to change how tests are collected, run or reported is
dropped, never applied, and listed with its reason in the envelope. Pure
functions; this module never imports pytest.

Protected paths (``docs/untrusted-candidates.md`` explains each):

* every file the instance's test patch touches;
* ``conftest.py`` anywhere, test modules (``test_*.py``, ``*_test.py``,
  ``tests.py``) and anything below a ``tests`` directory;
* the files that hold the instance's listed tests;
* pytest configuration: ``pytest.toml``, ``.pytest.toml``, ``pytest.ini``, ``.pytest.ini``, ``tox.ini``,
  ``setup.cfg``, ``pyproject.toml``;
* interpreter start-up hooks: ``sitecustomize.py``, ``usercustomize.py``, ``*.pth``;
* plugin entry points and packaging metadata: ``setup.py``, ``entry_points.txt``.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Iterable, Mapping

__all__ = ["Dropped", "ProtectionResult", "filter_candidate", "patch_files", "protected_reason", "snapshot"]

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


def protected_reason(path: str, test_patch_files: Iterable[str] = ()) -> str | None:
    """Why a repository-relative path must not be changed by a candidate, or None."""
    posix = PurePosixPath(path.replace("\\", "/"))
    if str(posix) in set(test_patch_files):
        return "a file of the instance's tests (test patch or listed tests)"
    name = posix.name
    if name in CONFIG_FILES:
        return CONFIG_FILES[name]
    if name.endswith(".pth"):
        return "interpreter start-up hook (.pth)"
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py") or name == "tests.py"):
        return "test module"
    if "tests" in posix.parts[:-1]:
        return "below a tests directory"
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


def patch_files(patch_text: str) -> list[str]:
    """Every repository-relative path a diff touches (sources and targets)."""
    from unidiff.patch import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch = PatchSet(patch_text)
    except UnidiffParseError as exc:
        raise PatchParseError(str(exc)) from None
    paths: dict[str, None] = {}
    for patched in patch:
        for candidate in (_strip(patched.source_file), _strip(patched.target_file)):
            if candidate:
                paths.setdefault(candidate, None)
    return list(paths)


def _file_chunks(patch_text: str) -> list[str]:
    """The patch split into one verbatim chunk per file diff.

    Git-style patches are cut at their ``diff --git`` lines, so extended headers
    and ``GIT binary patch`` data stay byte for byte; other unified diffs are cut
    at each ``--- `` / ``+++ `` header pair.
    """
    lines = patch_text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    if not starts:
        starts = [
            i
            for i, line in enumerate(lines)
            if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ]
    if not starts:
        return []
    bounds = [*starts[1:], len(lines)]
    # Text before the first file diff (a mail header, a commit message) is dropped: it changes
    # nothing for git apply, and GNU patch could read a diff of another format hidden there.
    return ["".join(lines[a:b]) for a, b in zip(starts, bounds, strict=True)]


_QUOTED = r'"(?:[^"\\]|\\.)*"'
_GIT_HEADER = re.compile(
    rf"^diff --git (?:(?P<qa>{_QUOTED})|a/(?P<a>.+?)) (?:(?P<qb>{_QUOTED})|b/(?P<b>.+?))$", re.MULTILINE
)
# Lines that start a file diff of another format inside what should be one unified file diff.
_FOREIGN = re.compile(r"^(\*\*\* |Index: |diff |Only in |Binary files )", re.MULTILINE)


def _chunk_paths(chunk: str) -> list[str]:
    from unidiff.patch import PatchSet
    from unidiff.errors import UnidiffParseError

    paths: dict[str, None] = {}
    try:
        for patched in PatchSet(chunk):
            for candidate in (_strip(patched.source_file), _strip(patched.target_file)):
                if candidate:
                    paths.setdefault(candidate, None)
    except UnidiffParseError as exc:
        raise PatchParseError(str(exc)) from None
    header = _GIT_HEADER.search(chunk)
    if header:
        for quoted, plain in (("qa", "a"), ("qb", "b")):
            candidate = _strip(header.group(quoted)) if header.group(quoted) else header.group(plain)
            if candidate:
                paths.setdefault(candidate, None)
    body = chunk.split("\n", 1)[1] if chunk.startswith("diff --git ") else chunk
    foreign = _FOREIGN.search(body)
    if foreign:
        line = body[foreign.start() :].split("\n", 1)[0]
        raise PatchParseError(f"a file diff of another format is mixed into a unified diff: {line[:200]!r}")
    for prefix in ("rename from ", "rename to ", "copy from ", "copy to "):
        for line in chunk.splitlines():
            if line.startswith(prefix):
                paths.setdefault(unquote(line[len(prefix) :]), None)
    return list(paths)


def filter_candidate(patch_text: str, protected: Iterable[str] = ()) -> ProtectionResult:
    """Drop every file diff that touches a protected path; keep the rest verbatim.

    ``protected`` names paths protected for this instance (the test patch's files
    and the files holding its listed tests) on top of the general rules.
    """
    if not patch_text.strip():
        return ProtectionResult("", (), ())
    chunks = _file_chunks(patch_text)
    if not chunks:
        raise PatchParseError("no file diffs found (expected a unified diff with ---/+++ headers)")
    extra = set(protected)
    kept_text: list[str] = []
    kept: list[str] = []
    dropped: list[Dropped] = []
    for chunk in chunks:
        paths = _chunk_paths(chunk)
        if not paths:
            raise PatchParseError(f"cannot tell which file this diff changes: {chunk.splitlines()[0][:200]!r}")
        hit = next(((p, r) for p in paths if (r := protected_reason(p, extra))), None)
        if hit:
            dropped.append(Dropped(hit[0], hit[1]))
            continue
        kept.append(paths[-1])
        kept_text.append(chunk)
    return ProtectionResult("".join(kept_text), tuple(kept), tuple(dropped))


def snapshot(root: Path, test_patch_files: Iterable[str] = ()) -> dict[str, str]:
    """sha256 of every protected file under ``root``: compared before and after a run."""
    test_files = list(test_patch_files)
    digests: dict[str, str] = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        rel_dir = os.path.relpath(directory, root)
        for filename in filenames:
            rel = filename if rel_dir == "." else f"{rel_dir}/{filename}".replace(os.sep, "/")
            reason = protected_reason(rel, test_files)
            if reason is None or (reason == "below a tests directory" and not filename.endswith(".py")):
                continue  # test data may legitimately be written by the tests themselves
            path = os.path.join(directory, filename)
            try:
                with open(path, "rb") as handle:
                    digests[rel] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                digests[rel] = "unreadable"
    return digests


def snapshot_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Protected files added, removed or changed between two snapshots."""
    changes = [f"added {p}" for p in after if p not in before]
    changes += [f"removed {p}" for p in before if p not in after]
    changes += [f"changed {p}" for p in before if p in after and before[p] != after[p]]
    return sorted(changes)
