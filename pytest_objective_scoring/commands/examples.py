"""``objective-score examples DIR``: the examples the README's walk-through uses (the demo's projects,
instances and candidate patches, a dataset and predictions, an A/B experiment, JUnit reports, function-level
samples, a Harbor task) copied out of the installed package into a new or empty folder, so that every
command of the README runs from there, with paths relative to it.

The bundle is the package's ``demo_fixtures`` (in a source checkout a link to ``fixtures/``; in a wheel
the files ``pyproject.toml``'s package data lists), found as ``demo`` finds it; only the entries of
:data:`BUNDLE` are copied, never what a source checkout holds beside them (caches, tools, large data).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any, Final

from ..errors import CommandError
from . import HELP

__all__ = ["BUNDLE", "bundle_files", "bundle_root", "cmd_examples", "register", "write_whole_tree"]

# what is copied, in this order: a path of the bundle (a folder or a file) and what it holds
BUNDLE: Final = (
    ("repos", "the example projects, plain folders (grade makes a git repository of its copy)"),
    ("instances", "one SWE-bench-style instance per project"),
    ("patches", "candidate patches per project (gold, break_p2p, empty, tamper, noapply; attacks/), test patches"),
    ("datasets", "the three pytest projects' instances as one dataset (JSONL, JSON)"),
    ("predictions", "18 predictions of six made-up models, with their costs (grade-batch)"),
    ("ab", "an A/B experiment's manifest and its two arms' predictions (ab)"),
    ("junit", "JUnit XML of Go, Java, JavaScript and Rust runners, with instances (grade --from-report)"),
    ("functional/problems.jsonl", "function-level problems of four benchmarks' styles (grade-samples)"),
    ("functional/samples.jsonl", "samples to grade against them (grade-samples)"),
    ("harbor/fix-csv-total", "a Harbor / Terminal-Bench task directory (harbor run)"),
)  # fmt: skip

SKIP: Final = frozenset({"__pycache__", ".pytest_cache", ".objective-scoring", ".mypy_cache", ".git"})

EXAMPLES_EPILOG = """\
examples:
  objective-score examples objective-examples
  cd objective-examples
  objective-score grade --repo repos/intervals --instance instances/intervals.json \\
      --patch patches/intervals/gold.diff

DIR must not exist yet (its parent folder must) or be an empty folder: a file, or a
folder that holds anything, is refused (exit 2) and nothing is written. The copies
are plain files, readable and writable by you (runner scripts stay executable), so
the examples can be edited, patched and graded. Every command of the README's
walk-through runs from DIR as written. The copy is made in a temporary folder
and moved into DIR once whole: a full disk or an interrupt leaves DIR as it was.
Exit status 0 written, 2 bad input, 3 not written (a full disk).
"""


def bundle_root() -> Path:
    """Where the installed bundle is: the package's ``demo_fixtures``, else (a source tree whose link
    was not kept) the checkout's ``fixtures/``; the same places ``demo`` looks in."""
    package = Path(__file__).resolve().parent.parent
    candidates = (package / "demo_fixtures", package.parent / "fixtures")
    for path in candidates:
        if (path / "repos").is_dir() and (path / "instances").is_dir():
            return path
    raise CommandError(f"no examples found (looked in {', '.join(map(str, candidates))}): reinstall the package")


def bundle_files(root: Path) -> list[str]:
    """The bundle's files below ``root``, as paths relative to it (``/``-separated), sorted: every file
    of each :data:`BUNDLE` entry, less caches (``__pycache__``, ``*.pyc``, ...)."""
    found = []
    for entry, _ in BUNDLE:
        path = root / entry
        if path.is_file():
            found.append(entry)
            continue
        if not path.is_dir():
            raise CommandError(f"{path}: missing from the installed examples (reinstall the package)")
        for folder, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
            for name in filenames:
                if not name.endswith((".pyc", ".pyo")):
                    found.append((Path(folder) / name).relative_to(root).as_posix())
    return sorted(found)


def _target_problem(target: Path) -> str | None:
    """Why the examples cannot be written to ``target``, or None (nothing is created)."""
    if target.is_symlink() and not target.exists():
        return f"{target}: a dangling symbolic link: expected a new or empty folder"
    if target.exists():
        if not target.is_dir():
            return f"{target}: is a file: expected a new or empty folder to write the examples into"
        try:
            held = sorted(os.listdir(target))
        except OSError as exc:
            return f"{target}: cannot be read ({exc.strerror or exc})"
        if held:
            shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
            return (f"{target}: not empty ({len(held)} entr{'y' if len(held) == 1 else 'ies'}: {shown}): the examples "
                    "are written only into a new or empty folder")  # fmt: skip
        if not os.access(target, os.W_OK | os.X_OK):
            return f"{target}: the folder cannot be written (permission denied)"
        return None
    parent = target.parent
    if not parent.is_dir():
        return f"{target}: the folder {parent} does not exist (missing folders are not created: make it first)"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{target}: the folder {parent} cannot be written (permission denied)"
    return None


def _copy(source: Path, destination: Path) -> None:
    """One file, as a plain file its user can read and write (executable when the source is: the
    runners' scripts), whatever the installed copy's permissions."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, destination)
    executable = source.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.chmod(destination, 0o755 if executable else 0o644)


def _staging(target: Path) -> tuple[Path, bool]:
    """Where the copy is made before it is whole, and whether it is moved in entry by entry: a new
    folder beside ``target`` (renamed to it in one step), or, when ``target`` is an existing empty
    folder, a hidden folder inside it (on its file system, which may be a mount of its own: its
    entries are renamed up into it)."""
    if target.is_dir():
        return target / f".objective-examples.{os.getpid()}.partial", True
    return target.with_name(f".{target.name}.{os.getpid()}.partial"), False


def write_whole_tree(root: Path, files: list[str], target: Path) -> None:
    """Copy ``files`` (relative to ``root``) into ``target`` whole or not at all: into a temporary
    folder first, moved into place by renames once every file is there. A full disk, an interrupt or
    any failure removes what was copied and leaves ``target`` as it was (missing, or empty)."""
    staging, inside = _staging(target)
    moved: list[Path] = []
    try:
        staging.mkdir()
        for relative in files:
            _copy(root / relative, staging / relative)
        if not inside:
            os.rename(staging, target)  # over a missing name, or an empty folder made meanwhile
            return
        for entry in sorted(os.listdir(staging)):
            os.rename(staging / entry, target / entry)
            moved.append(target / entry)
        staging.rmdir()
    except BaseException:
        for path in (*moved, staging):
            _remove_quietly(path)
        raise


def _remove_quietly(path: Path) -> None:
    """Remove what this command made at ``path`` (a file or a folder); never raises."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def cmd_examples(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    problem = _target_problem(target)
    if problem:
        raise CommandError(problem)
    root = bundle_root()
    files = bundle_files(root)  # every entry is checked before anything is written
    try:
        write_whole_tree(root, files, target)
    except OSError as exc:  # a full disk: nothing is left, said in one line
        from ..atomic import why
        from ..errors import EXIT_INFRASTRUCTURE

        print(f"objective-score examples: {target}: NOT written ({why(exc)}); nothing was left behind (exit 3)",
              file=sys.stderr)  # fmt: skip
        return EXIT_INFRASTRUCTURE
    written = []
    for entry, what in BUNDLE:
        count = sum(1 for f in files if f == entry or f.startswith(entry + "/"))
        written.append({"path": entry, "files": count, "what": what})
    if args.json:
        print(json.dumps({"dir": str(target), "source": str(root), "written": written, "files": files}, indent=2,
                         ensure_ascii=False))  # fmt: skip
        return 0
    _report(target, written, len(files))
    return 0


def _report(target: Path, written: list[dict[str, Any]], total: int) -> None:
    print(f"objective-score examples: {total} files written to {target}:")
    width = max(len(w["path"]) for w in written) + 1
    for w in written:
        shown = w["path"] + ("" if "." in Path(w["path"]).name else "/")
        print(f"  {shown:<{width}} {w['what']} ({w['files']} file{'' if w['files'] == 1 else 's'})")
    print(f"next: cd {target} and run the README's walk-through, e.g. objective-score grade --repo repos/intervals "
          "--instance instances/intervals.json --patch patches/intervals/gold.diff")  # fmt: skip


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``examples`` to the ``objective-score`` parser."""
    parser = sub.add_parser("examples", help=HELP["examples"],
                            description="Copy the bundled examples (projects, instances, candidate patches, a dataset "
                            "and predictions, an A/B experiment, JUnit reports, function-level samples, a Harbor task) "
                            "into DIR, where every command of the README's walk-through runs as written.",
                            epilog=EXAMPLES_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("dir", metavar="DIR", help="A folder that does not exist yet (its parent must) or is empty")
    parser.add_argument("--json", action="store_true", help="Print what was written as JSON (every file, relative to DIR)")
    parser.set_defaults(handler=cmd_examples)
