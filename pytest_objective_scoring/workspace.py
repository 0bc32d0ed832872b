"""The private workspace a candidate is graded in: its folder's life, the copy, apply, protect, reset.

A workspace is a folder under the temporary folder owned by its grading (a lock on its owner
file, :mod:`.liveness`) and swept by a later grading once that lock is free (:func:`sweep_workspaces`).
Everything done to the copy shells out to ``git`` (and GNU ``patch`` as the last apply strategy)
inside it; the user's repository is only ever read. Which changes are protected is
:mod:`.protect`'s to say; this module applies and undoes them.
"""

from __future__ import annotations

import errno
import io
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Any, Final, Mapping, Sequence

from . import liveness, protect
from .remade import Remade

__all__ = [
    "APPLY_STRATEGIES",
    "OWNER_FILE",
    "STAGING_PREFIX",
    "WORKSPACE_PREFIX",
    "BadInput",
    "InfraFailure",
    "Workspace",
    "apply_candidate",
    "apply_test_patch",
    "changed_files",
    "existed_at",
    "fresh",
    "holds_nothing",
    "import_roots",
    "patch_applies",
    "prepare_copy",
    "reset",
    "restore_files",
    "roots_below",
    "sweep_workspaces",
]

APPLY_STRATEGIES: Final = (
    ("git apply", ["git", "apply", "--verbose", "--whitespace=nowarn"]),
    ("git apply --3way", ["git", "apply", "--verbose", "--3way", "--whitespace=nowarn"]),
    ("git apply --reject", ["git", "apply", "--verbose", "--reject", "--whitespace=nowarn"]),
    ("patch --fuzz=5", ["patch", "--batch", "--forward", "--fuzz=5", "-p1", "-i"]),
)
COPY_SKIP: Final = frozenset({".git", "__pycache__", ".pytest_cache", ".tox", ".nox", ".mypy_cache", ".objective-scoring"})
ENV_KEEP: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "TERM")
GIT_IDENTITY: Final = (
    "-c", "user.name=objective-score", "-c", "user.email=objective-score@localhost",
    "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
    "-c", "core.quotePath=false", "-c", "core.fsmonitor=false", "-c", "core.attributesFile=/dev/null",
    "-c", "core.autocrlf=false", "-c", "core.sshCommand=false", "-c", "protocol.allow=never",
    "-c", "maintenance.auto=false", "-c", "gc.auto=0",  # a throw-away copy: no background upkeep after a commit
)  # fmt: skip
GIT_ENV: Final = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1",
                  "GIT_ATTR_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
OUTPUT_KEPT: Final = 1000  # characters of an apply strategy's output kept in the envelope
_OUTPUT_READ: Final = 1 << 16  # bytes read from the end of a long output
NOT_SOURCE_DIRS: Final = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "build", "dist"})
WORKSPACE_PREFIX: Final = "objective-score-"
STAGING_PREFIX: Final = ".objective-score-making-"  # a workspace before its owner file is in place
OWNER_FILE: Final = ".owner"
_SWEPT: set[str] = set()


class BadInput(ValueError):
    """The request cannot be graded as given (exit status 2)."""


class InfraFailure(Remade, RuntimeError):
    """The environment, not the candidate, failed (exit status 3)."""

    def __init__(self, failure_class: str, detail: str) -> None:
        self.failure_class = failure_class
        super().__init__(detail)



def fresh(path: Path) -> None:
    """Remove whatever is at ``path`` (a file, a folder, a link, a FIFO), never following a link;
    folders a run left unreadable (an overlay's work folder, a test's chmod 000) are opened first."""

    top = os.path.abspath(path)

    def unlock(function: Any, name: str, _: Any) -> None:
        parent = os.path.dirname(name)
        for place in (parent, name):
            # only folders of the tree being removed: never the one that holds it (the temporary
            # folder itself, which a failing removal of a workspace at its top once made 0700)
            inside = os.path.abspath(place) == top or os.path.abspath(place).startswith(top + os.sep)
            if inside and os.path.isdir(place) and not os.path.islink(place):
                os.chmod(place, 0o700)
        if os.path.isdir(name) and not os.path.islink(name):
            shutil.rmtree(name, ignore_errors=True)
        else:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass

    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, onerror=unlock)
    except FileNotFoundError:
        pass


class Workspace:
    """One grading's folder (``/tmp/objective-score-*/``), owned by the grading while it lives.

    It never exists under its own name without its owner file: the folder is made under a staging
    name that carries the grader's pid, takes its owner file there, and only then is renamed into
    place (a rename is atomic). It is removed with its owner file last. A grading killed at any
    point therefore leaves either a folder whose owner lock is free, or a staging folder whose pid
    is gone: the next sweep removes both."""

    def __init__(self, workdir: Path | None) -> None:
        base = Path(workdir) if workdir is not None else Path(tempfile.gettempdir())
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=base))
        try:
            self.owner = liveness.hold(staging / OWNER_FILE)  # a killed grading's workspace is swept by the next
        except BaseException:
            fresh(staging)
            raise
        self.path = _publish(staging, base)

    def close(self, keep: bool) -> None:
        """Remove the workspace, or keep it (``--keep``) without its owner file, so that no later
        sweep takes it. Its owner file goes last, so a removal cut short is still a dead owner's."""
        if keep:
            liveness.release(self.owner, self.path / OWNER_FILE)
            return
        try:
            children = [child for child in self.path.iterdir() if child.name != OWNER_FILE]
        except OSError:
            children = []
        for child in children:
            fresh(child)
        liveness.release(self.owner, self.path / OWNER_FILE)
        fresh(self.path)


def _publish(staging: Path, base: Path) -> Path:
    """Rename a staged workspace to a fresh ``objective-score-*`` name (never over another's: a
    published workspace always holds its owner file, so a rename onto it fails)."""
    while True:
        target = base / f"{WORKSPACE_PREFIX}{secrets.token_hex(5)}"
        try:
            os.rename(staging, target)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue
            fresh(staging)
            raise
        return target


def _pid_gone(name: str) -> bool:
    """Whether the process whose pid a staging folder's name carries is gone from this machine."""
    text = name[len(STAGING_PREFIX):].partition("-")[0]
    return text.isdigit() and liveness.pid_absent(int(text))


def _mine(path: Path) -> bool:
    """Whether this user owns ``path``: another user's workspaces in a shared temporary folder are
    never probed or removed (and cannot be)."""
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False


def sweep_workspaces(folder: str | Path | None = None) -> list[Path]:
    """Remove the workspaces that gradings killed outright (SIGKILL, a power cut) left in ``folder``
    (the temporary folder by default), once per process and folder; returns what was removed.

    A workspace is removed only when its owner file's lock is free (:mod:`.liveness`): its grading
    is proven over. A workspace with no owner file (kept with ``--keep``, or made by an older
    version) is never touched. A staging folder (:class:`Workspace`) is removed once the pid its
    name carries is gone from this machine and nothing holds its owner file."""
    base = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    if str(base) in _SWEPT:
        return []
    _SWEPT.add(str(base))
    removed = []
    try:
        candidates = sorted(base.glob(WORKSPACE_PREFIX + "*"))
    except OSError:
        return []
    candidates = [c for c in candidates if _mine(c)]
    for workspace in candidates:
        if liveness.probe(workspace / OWNER_FILE) == liveness.DEAD:
            fresh(workspace)
            removed.append(workspace)
    try:
        staged = sorted(base.glob(STAGING_PREFIX + "*"))
    except OSError:
        staged = []
    for staging in [s for s in staged if _mine(s)]:  # a grader killed before its workspace was in place
        if liveness.probe(staging / OWNER_FILE) != liveness.ALIVE and _pid_gone(staging.name):
            fresh(staging)
            removed.append(staging)
    return removed


def base_env() -> dict[str, str]:
    """The scrubbed environment every subprocess starts from."""
    return {k: os.environ[k] for k in ENV_KEEP if k in os.environ}


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["git", *GIT_IDENTITY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        env={**base_env(), **GIT_ENV},
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {(result.stderr or result.stdout).strip()}")
    return result


def uncopied(directory: str, names: list[str]) -> set[str]:
    """Entries of ``directory`` never copied into a working copy: what cannot be read, fifos,
    sockets and devices (nothing a test suite reads from a checkout), and virtualenvs (used in
    place: the tests run in ``--python``'s environment)."""
    skipped = set()
    for name in names:
        path = os.path.join(directory, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            skipped.add(name)
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            skipped.add(name)
        elif stat.S_ISDIR(mode) and os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            skipped.add(name)
    return skipped


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in COPY_SKIP} | uncopied(directory, names)


def prepare_copy(repo: Path, dest: Path, base_commit: str | None) -> str:
    """Copy ``repo`` to ``dest`` and return the baseline commit of the copy."""
    if base_commit and (repo / ".git").exists():
        return _checkout_copy(repo, dest, base_commit)
    try:
        shutil.copytree(repo, dest, symlinks=True, ignore=_ignore)
    except (OSError, shutil.Error) as exc:
        raise InfraFailure("setup", f"could not copy {repo} to the workspace: {exc}") from None
    try:
        if (repo / ".git").exists():
            clone = dest.parent / "clone"
            result = subprocess.run(
                ["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(clone)],
                capture_output=True,
                text=True,
                env={**base_env(), "GIT_TERMINAL_PROMPT": "0"},
            )
            if result.returncode != 0:
                raise BadInput(f"--repo {repo}: git clone failed: {result.stderr.strip()}")
            shutil.move(str(clone / ".git"), str(dest / ".git"))
            shutil.rmtree(clone, ignore_errors=True)
            if base_commit:
                if git(dest, "cat-file", "-e", f"{base_commit}^{{commit}}", check=False).returncode != 0:
                    raise BadInput(f"--repo {repo} has no commit {base_commit} (the instance's base_commit)")
                git(dest, "reset", "--quiet", "--hard", base_commit)
                git(dest, "clean", "-fdq")
            else:
                git(dest, "reset", "--quiet", "--mixed", "HEAD")
                git(dest, "add", "-A")
                git(dest, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "objective-score: working tree")
        else:
            if base_commit:
                raise BadInput(f"--repo {repo} is not a git repository, but the instance names base_commit {base_commit}")
            git(dest, "init", "--quiet")
            git(dest, "add", "-A")
            git(dest, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "objective-score: baseline")
        return git(dest, "rev-parse", "HEAD").stdout.strip()
    except RuntimeError as exc:
        raise InfraFailure("setup", f"could not prepare the isolated copy: {exc}") from None


def _checkout_copy(repo: Path, dest: Path, base_commit: str) -> str:
    """A git repository at ``base_commit``: a ``--shared`` clone checked out at the commit (each
    tracked file written once), then what the repository's working tree holds beside its tracked
    files (build artefacts compiled in place, as SWE-bench environments have them), copied as a
    whole copy would copy it and cleaned by the commit's own ignore rules (``git clean -fd`` keeps
    ignored files): the same copy as copying the tree and resetting it, without writing every file twice."""
    try:
        result = subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(dest)],
                                capture_output=True, text=True, env={**base_env(), "GIT_TERMINAL_PROMPT": "0"})  # fmt: skip
        if result.returncode != 0:
            raise BadInput(f"--repo {repo}: git clone failed: {result.stderr.strip()}")
        if git(dest, "cat-file", "-e", f"{base_commit}^{{commit}}", check=False).returncode != 0:
            raise BadInput(f"--repo {repo} has no commit {base_commit} (the instance's base_commit)")
        git(dest, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", base_commit)
        exclude = repo / git(repo, "rev-parse", "--git-path", "info/exclude").stdout.strip()
        if exclude.is_file():  # what the repository ignores besides its .gitignore files (build products, say)
            own = dest / ".git" / "info" / "exclude"
            own.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(exclude, own)
        listed = git(repo, "ls-files", "--others", "--directory", "-z")  # untracked and ignored: what a copy adds
        for entry in filter(None, listed.stdout.split("\0")):
            rel = entry.rstrip("/")
            parent, _, name = rel.rpartition("/")
            if name in COPY_SKIP or uncopied(str(repo / parent) if parent else str(repo), [name]):
                continue
            source, target = repo / rel, dest / rel
            if target.exists() or target.is_symlink():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, target, symlinks=True, ignore=_ignore)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
        git(dest, "clean", "-fdq")
        return git(dest, "rev-parse", "HEAD").stdout.strip()
    except (OSError, shutil.Error) as exc:
        raise InfraFailure("setup", f"could not copy {repo} to the workspace: {exc}") from None
    except RuntimeError as exc:
        raise InfraFailure("setup", f"could not prepare the isolated copy: {exc}") from None


def reset(copy: Path, baseline: str) -> None:
    git(copy, "reset", "--quiet", "--hard", baseline)
    git(copy, "clean", "-fdq")


def apply_candidate(copy: Path, baseline: str, patch_file: Path, text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Try each strategy in turn; return the one that worked (or None) and every attempt."""
    if protect.is_blank(text):
        return "nothing to apply", []
    attempts = []
    for name, command in APPLY_STRATEGIES:
        try:
            code, output = _run_for_output([*command, str(patch_file)], copy)
            ok = code == 0
        except OSError as exc:
            ok, output = False, f"{command[0]} is not available: {exc.strerror}"
        attempts.append({"strategy": name, "ok": ok, "output": output[-OUTPUT_KEPT:]})
        if ok:
            return name, attempts
        reset(copy, baseline)
    return None, attempts


def _run_for_output(command: list[str], cwd: Path) -> tuple[int, str]:
    """Run an apply strategy: its exit status and its output, stdout then stderr, stripped, as
    ``capture_output=True, text=True, errors="replace"`` gives them; only its end is used, so the
    output goes to files and only their ends are read (a strategy may print a line per hunk of a
    huge patch: the grader's memory does not grow with it)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        done = subprocess.run(command, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                              env={**base_env(), **GIT_ENV})  # fmt: skip
        return done.returncode, (_output_end(out) + _output_end(err)).strip()


def _output_end(handle: IO[bytes]) -> str:
    """A captured output decoded as subprocess's text mode decodes it (the locale's encoding, errors
    replaced, universal newlines): its last ``_OUTPUT_READ`` bytes when they hold twice
    ``OUTPUT_KEPT`` characters of text (a character cut where they start is then far from the end
    kept), all of it otherwise."""
    size = handle.seek(0, os.SEEK_END)
    if size > _OUTPUT_READ:
        handle.seek(size - _OUTPUT_READ)
        text = _decoded(handle.read())
        if len(text.strip()) >= 2 * OUTPUT_KEPT:
            return text
    handle.seek(0)
    return _decoded(handle.read())


def _decoded(data: bytes) -> str:
    return io.TextIOWrapper(io.BytesIO(data), errors="replace").read()


def restore_files(copy: Path, baseline: str, paths: Sequence[str]) -> list[str]:
    """Put ``paths`` back as they are at the baseline; returns those that could not be restored."""
    stuck = []
    for path in paths:
        target = copy / path
        if git(copy, "cat-file", "-e", f"{baseline}:{path}", check=False).returncode == 0:
            if git(copy, "checkout", baseline, "--", path, check=False).returncode != 0:
                stuck.append(path)
        elif target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            stuck.append(path)
    return stuck


def revert_protected(
    copy: Path, baseline: str, before: Mapping[str, str], guarded: Sequence[str], language: str | None = None
) -> tuple[list[protect.Dropped], list[str]]:
    """Undo whatever the applied candidate did to protected files, whatever the diff's format.

    The filter reads unified diffs; this is the safety net for everything it could
    not see (formats only GNU patch reads, paths spelled in ways unidiff misses).
    Returns the files put back and those that could not be.
    """
    changes = protect.snapshot_changes(before, protect.snapshot(copy, guarded, language))
    reasons = {change.split(" ", 1)[1]: protect.snapshot_change_reason(change, guarded) for change in changes}
    roots = roots_below(copy)

    def existed(path: str) -> bool:
        return existed_at(copy, baseline, path)

    # git's own view of every path written: test data below tests/ (which the snapshot leaves
    # to the tests themselves) and files written through a symlink show up here too
    for path in [*changed_files(copy, baseline), *byte_code(copy)]:
        target = copy / path
        if target.is_symlink() and not _inside(target.resolve(), copy, guarded, language):
            reasons.setdefault(path, "a symlink to a protected file or out of the repository")
        reason = protect.protected_reason(path, guarded, language=language) or (
            None if language is not None else protect.shadowing_reason(path, existed, guarded, roots))
        if reason:
            reasons.setdefault(path, reason)
    paths = sorted(reasons)
    stuck = restore_files(copy, baseline, paths)
    dropped = [
        protect.Dropped(path, f"{reasons[path]}; written by the patch although the filter did not see it")
        for path in paths
        if path not in stuck
    ]
    return dropped, stuck


def byte_code(copy: Path) -> list[str]:
    """Byte code in the copy (``__pycache__`` folders, ``.pyc``/``.pyo`` files), which git may ignore:
    the copy starts without any, so whatever is there after applying came with the candidate. Installed
    JavaScript packages (``node_modules``, an image's own: jasmine-core ships an ``__init__.pyc``) are not
    the copy's code: a candidate's change there is dropped by role (:mod:`.command_spec`)."""
    found = []
    for directory, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules")]
        rel = os.path.relpath(directory, copy)
        for name in filenames:
            if name.endswith((".pyc", ".pyo")) or "__pycache__" in rel.split(os.sep):
                found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found


def _inside(target: Path, copy: Path, guarded: Sequence[str], language: str | None = None) -> bool:
    """A symlink target that stays in the copy and points at nothing protected."""
    root = copy.resolve()
    if not target.is_relative_to(root):
        return False
    rel = target.relative_to(root).as_posix()
    return protect.protected_reason(rel, guarded, language=language) is None and not any(
        part in ("tests",) for part in rel.split("/")
    )


def existed_at(copy: Path, baseline: str, path: str) -> bool:
    """Whether ``path`` (a file or a folder) exists at the copy's baseline commit."""
    return git(copy, "cat-file", "-e", f"{baseline}:{path}", check=False).returncode == 0


def roots_below(copy: Path) -> list[str]:
    """The copy's import roots below its top, repository-relative (``lib/`` in ``lib/pkg/``)."""
    return [os.path.relpath(r, copy) for r in import_roots(copy)[0] if os.path.relpath(r, copy) != "."]


def base_text(copy: Path, baseline: str, path: str) -> str | None:
    """A file's text at the baseline commit of the copy (None when it does not exist there)."""
    result = subprocess.run(
        ["git", "show", f"{baseline}:{path}"], cwd=copy, capture_output=True, stdin=subprocess.DEVNULL,
        env={**base_env(), **GIT_ENV},
    )  # fmt: skip
    if result.returncode != 0:
        return None
    return result.stdout.decode("utf-8", "surrogateescape")


def changed_files(copy: Path, baseline: str) -> list[str]:
    """Files the working tree of the copy changes against the baseline (tracked and untracked)."""
    tracked = git(copy, "diff", "--name-only", "-z", baseline).stdout.split("\0")
    untracked = git(copy, "ls-files", "--others", "--exclude-standard", "-z").stdout.split("\0")
    return sorted({p for p in (*tracked, *untracked) if p})


class TestPatchBlocked(Exception):
    """The test patch applies to the base but not over the candidate's tree: the candidate put something
    where the test patch writes (a file named like the folder it creates, a link in its place)."""

    __test__ = False  # not a test class, when a test module imports it


def _test_patch_failed(copy: Path, baseline: str, test_patch: str, result: subprocess.CompletedProcess[str]) -> Exception:
    """Why the test patch did not apply: the candidate's doing when it applies to the base
    (:class:`TestPatchBlocked`), else the task's (an infrastructure failure)."""
    said = (result.stderr or result.stdout).strip()[-800:]
    if patch_applies(copy, baseline, test_patch):
        return TestPatchBlocked(f"the test patch applies to the base but not over the candidate's changes: {said}")
    return InfraFailure("setup", f"the test patch does not apply to the base: {said}")


def apply_test_patch(copy: Path, baseline: str, test_patch: str, files: Sequence[str], workspace: Path) -> None:
    """Reset the test patch's files to the base, then apply it strictly; :class:`TestPatchBlocked` when
    the candidate's tree keeps it from applying although it applies to the base."""
    restore_files(copy, baseline, files)
    patch_file = workspace / "test.diff"
    patch_file.write_bytes(test_patch.encode("utf-8", "surrogateescape"))
    result = git(copy, "apply", "--verbose", "--whitespace=nowarn", str(patch_file), check=False)
    if result.returncode != 0:
        raise _test_patch_failed(copy, baseline, test_patch, result)


def over_candidate(copy: Path, baseline: str, test_patch: str, judged: Sequence[str], files: Sequence[str],
                   workspace: Path) -> dict[str, Any]:  # fmt: skip
    """A command instance's test patch (:mod:`.command_spec`): its files that are tests by their role
    (``judged``) reset to the base, then the patch applied over the candidate's version of the others,
    the *mixed* files (a Rust source file holding a ``#[cfg(test)]`` module). Where it does not apply
    over them, the mixed files are reset too and it is applied again: the test patch's version wins
    and the candidate's change to those files is lost, as the envelope says (``test_patch_won``).
    One that does not apply to the base either is an infrastructure failure."""
    tests = [f for f in files if f in judged]
    mixed = [f for f in files if f not in judged]
    restore_files(copy, baseline, tests)
    patch_file = workspace / "test.diff"
    patch_file.write_bytes(test_patch.encode("utf-8", "surrogateescape"))
    if git(copy, "apply", "--whitespace=nowarn", str(patch_file), check=False).returncode == 0:
        return {"mixed_files": mixed, "over_the_candidate": mixed}
    if mixed and git(copy, "apply", "-C1", "--whitespace=nowarn", str(patch_file), check=False).returncode == 0:
        # the candidate's change sits in the test patch's context lines: applied with one line of context
        return {"mixed_files": mixed, "over_the_candidate": mixed, "context_lines": 1}
    restore_files(copy, baseline, mixed)
    result = git(copy, "apply", "--verbose", "--whitespace=nowarn", str(patch_file), check=False)
    if result.returncode != 0:
        raise _test_patch_failed(copy, baseline, test_patch, result)
    return {"mixed_files": mixed, "test_patch_won": mixed}


def holds_nothing(repo: Path) -> bool:
    """Whether a folder holds nothing a copy would take (only ``.git``, caches, virtualenvs...)."""
    try:
        names = os.listdir(repo)
    except OSError:
        return False
    return not [name for name in names if name not in COPY_SKIP and name not in uncopied(str(repo), [name])]


def patch_applies(repo: Path, base_commit: str | None, text: str) -> bool | None:
    """Whether ``text`` applies (``git apply --check``, strictly, as the test patch is applied) to the
    copy :func:`prepare_copy` would make of ``repo``, read where it is and never written: the tree of
    ``base_commit`` (through a throw-away index), else the folder as it is. None when it cannot tell
    (git missing or failing, ``base_commit`` not in ``repo``: :func:`prepare_copy` says that itself)."""
    with tempfile.TemporaryDirectory(prefix="objective-score-check-") as place:
        patch_file = Path(place) / "check.diff"
        patch_file.write_bytes(text.encode("utf-8", "surrogateescape"))
        # never a repository above the folder: its own .git, or none (then git apply works as patch does)
        env = {**base_env(), **GIT_ENV, "GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.abspath(repo))}
        check = ["git", *GIT_IDENTITY, "apply", "--check", "--whitespace=nowarn"]
        try:
            if base_commit and (repo / ".git").exists():
                env["GIT_INDEX_FILE"] = str(Path(place) / "index")
                read = subprocess.run(["git", *GIT_IDENTITY, "read-tree", f"{base_commit}^{{tree}}"], cwd=repo, env=env,
                                      capture_output=True, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
                if read.returncode != 0:
                    return None
                check.append("--cached")
            done = subprocess.run([*check, str(patch_file)], cwd=repo, env=env, capture_output=True,
                                  stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        except OSError:
            return None
        return {0: True, 1: False}.get(done.returncode)  # 1: it does not apply; 128: git itself failed


def import_roots(copy: Path) -> tuple[list[str], list[str]]:
    """The copy's import roots and its top-level package names.

    Roots are ``src/`` when present, every folder (up to two levels down) that
    holds a top-level package (``lib/`` in ``lib/pkg/__init__.py``), then the
    copy itself; test, documentation and build folders are not searched.
    """
    roots: dict[Path, None] = {}
    names: dict[str, None] = {}
    if (copy / "src").is_dir():
        roots[copy / "src"] = None

    def visit(folder: Path, depth: int) -> None:
        try:
            children = sorted(folder.iterdir())
        except OSError:
            return
        for child in children:
            if child.name.startswith(".") or child.name in NOT_SOURCE_DIRS or not child.is_dir() or child.is_symlink():
                continue
            if (child / "pyvenv.cfg").exists():
                continue
            if (child / "__init__.py").exists():
                if not (folder / "__init__.py").exists():
                    roots.setdefault(folder, None)
                    names.setdefault(child.name, None)
            elif depth < 2:
                visit(child, depth + 1)

    visit(copy, 0)
    roots.pop(copy, None)
    ordered = [*roots, copy]
    return [str(r) for r in ordered], list(names)
