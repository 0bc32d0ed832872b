"""Files and symbols a patch touches: the fixture patches on known answers, then one synthetic
diff (made by real git) per rule and edge case, apply_hunks against ``git apply``, python_check."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pytest_objective_scoring import protect, symbols
from pytest_objective_scoring.protect import unquote
from pytest_objective_scoring.symbols import (
    MODULE,
    FileDiff,
    PatchError,
    Touched,
    apply_hunks,
    file_diffs,
    parse_diff,
    python_check,
    touched,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

Files = Mapping[str, "str | bytes | None"]


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def repo_base(project: str) -> Callable[[str], str | None]:
    """``base(path)`` over a fixture repository, bytes kept as they are (CRLF, odd encodings)."""
    root = FIXTURES / "repos" / project

    def base(path: str) -> str | None:
        file = root / path
        return decode(file.read_bytes()) if file.is_file() else None

    return base


def fixture_diff(project: str, candidate: str) -> str:
    return decode((FIXTURES / "patches" / project / f"{candidate}.diff").read_bytes())


def texts(files: Files) -> Callable[[str], str | None]:
    """``base(path)``/``patched(path)`` over a dict of file contents (None: absent)."""

    def read(path: str) -> str | None:
        value = files.get(path)
        return decode(value) if isinstance(value, bytes) else value

    return read


def share(part: frozenset[str], whole: frozenset[str]) -> float:
    return len(part & whole) / len(whole)


def shape(files: list[FileDiff]) -> list[object]:
    """Everything this module reads of parsed file diffs: headers, ranges and every hunk line."""
    return [(f.source_file, f.target_file, f.is_binary_file, f.source_mode, f.target_mode, list(f.patch_info or []),
             [(h.source_start, h.source_length, h.target_start, h.target_length,
               [(line.line_type, line.value, line.source_line_no, line.target_line_no) for line in h]) for h in f])
            for f in files]  # fmt: skip


def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read every diff as a large one: unidiff's metadata_only, and hunk lines streamed from the text."""
    monkeypatch.setattr(protect, "LARGE_DIFF", 0)


# --- the fixture patches ---------------------------------------------------------------------

WORDS, INTERVAL, MERGE = "textstats/words.py", "src/intervals/interval.py", "src/intervals/merge.py"
PARSER, WRITER = "csvlite/parser.py", "csvlite/writer.py"

FIXTURE_CASES = {
    ("textstats", "gold"): ({WORDS}, {f"{WORDS}::word_count"}, ()),
    ("textstats", "break_p2p"): ({WORDS}, {f"{WORDS}::word_count", f"{WORDS}::<module>"}, ()),  # + import re
    ("textstats", "tamper"): (
        {"tests/conftest.py", "tests/test_words.py"},
        {"tests/conftest.py::<module>", "tests/conftest.py::pytest_runtest_makereport",
         "tests/test_words.py::test_word_count"},  # the new params sit in its decorator
        (),
    ),
    ("textstats", "noapply"): ({WORDS}, {f"{WORDS}::<module>"}, (WORDS,)),
    ("textstats", "test"): ({"tests/test_words.py"}, {"tests/test_words.py::test_word_count"}, ()),
    ("textstats", "empty"): (set(), set(), ()),
    ("intervals", "gold"): ({INTERVAL}, {f"{INTERVAL}::Interval.overlaps"}, ()),
    ("intervals", "break_p2p"): ({MERGE}, {f"{MERGE}::merge"}, ()),
    ("intervals", "tamper"): (
        {"tests/conftest.py", "tests/test_merge.py"},
        {"tests/conftest.py::<module>", "tests/conftest.py::pytest_runtest_makereport",
         "tests/test_merge.py::TestMerge.test_touching", "tests/test_merge.py::TestMerge.test_touching_chain"},
        (),
    ),
    ("intervals", "noapply"): ({INTERVAL}, {f"{INTERVAL}::<module>"}, (INTERVAL,)),
    ("intervals", "test"): (
        {"tests/test_merge.py"},
        {"tests/test_merge.py::TestMerge.test_touching", "tests/test_merge.py::TestMerge.test_touching_chain"},
        (),
    ),
    ("csvlite", "gold"): (
        {PARSER, WRITER},
        {f"{PARSER}::parse_line", f"{PARSER}::_unquote", f"{WRITER}::_needs_quotes"},  # _unquote is removed
        (),
    ),
    ("csvlite", "break_p2p"): ({PARSER, WRITER}, {f"{PARSER}::parse_line", f"{WRITER}::_needs_quotes"}, ()),
    ("csvlite", "tamper"): (
        {"conftest.py", "tests/test_parser.py", "tests/test_writer.py"},
        {"conftest.py::<module>", "conftest.py::pytest_runtest_makereport",
         "tests/test_parser.py::test_quoted_field_with_comma", "tests/test_writer.py::test_field_with_delimiter_is_quoted",
         "tests/test_writer.py::test_round_trip_with_delimiter"},
        (),
    ),
    ("csvlite", "noapply"): ({PARSER}, {f"{PARSER}::<module>"}, (PARSER,)),
    ("csvlite", "test"): (
        {"tests/test_parser.py", "tests/test_writer.py"},
        {"tests/test_parser.py::test_quoted_field_with_comma", "tests/test_writer.py::<module>",
         "tests/test_writer.py::test_field_with_delimiter_is_quoted",
         "tests/test_writer.py::test_round_trip_with_delimiter"},
        (),
    ),
    ("csvlite", "empty"): (set(), set(), ()),
}


@pytest.mark.parametrize(("project", "candidate"), list(FIXTURE_CASES), ids=[f"{p}-{c}" for p, c in FIXTURE_CASES])
def test_fixture_patches(project: str, candidate: str, monkeypatch: pytest.MonkeyPatch) -> None:
    files, symbols, unparsable = FIXTURE_CASES[project, candidate]
    diff = fixture_diff(project, candidate)
    result = touched(diff, repo_base(project))
    assert result == Touched(frozenset(files), frozenset(symbols), unparsable)
    whole = shape(list(parse_diff(diff)))
    streamed(monkeypatch)  # read as a large diff is, from the text or its bytes: the same lines, the same answer
    for given in (diff, diff.encode("utf-8", "surrogateescape")):
        assert shape(file_diffs(given)) == whole
        assert touched(given, repo_base(project)) == result


def test_fixture_localization_known_answers() -> None:
    """The metrics the scorecard derives: recall of gold files and symbols, extra entities."""

    def both(project: str, candidate: str) -> tuple[Touched, Touched]:
        base = repo_base(project)
        return touched(fixture_diff(project, "gold"), base), touched(fixture_diff(project, candidate), base)

    gold, cand = both("intervals", "break_p2p")  # touches nothing the gold touches
    assert share(cand.files, gold.files) == 0.0 and share(cand.symbols, gold.symbols) == 0.0
    gold, cand = both("csvlite", "break_p2p")  # both files, but keeps _unquote
    assert share(cand.files, gold.files) == 1.0 and share(cand.symbols, gold.symbols) == pytest.approx(2 / 3)
    assert cand.symbols - gold.symbols == frozenset()
    gold, cand = both("textstats", "break_p2p")  # the right function, plus a module-level import
    assert share(cand.symbols, gold.symbols) == 1.0 and cand.symbols - gold.symbols == {f"{WORDS}::{MODULE}"}
    gold, cand = both("textstats", "tamper")
    assert share(cand.files, gold.files) == 0.0 and len(cand.symbols - gold.symbols) == 3


@needs_git
@pytest.mark.parametrize("project", ["textstats", "intervals", "csvlite"])
def test_apply_hunks_matches_git_apply_on_fixtures(project: str, tmp_path: Path) -> None:
    base = repo_base(project)
    for candidate in ("gold", "break_p2p", "tamper", "test"):
        copy = tmp_path / candidate
        shutil.copytree(FIXTURES / "repos" / project, copy, ignore=shutil.ignore_patterns("__pycache__"))
        diff = fixture_diff(project, candidate)
        subprocess.run(["git", "apply", "-"], cwd=copy, input=diff.encode(), check=True, capture_output=True)
        for patched_file in parse_diff(diff):
            path = patched_file.path
            assert apply_hunks(base(path), patched_file) == decode((copy / path).read_bytes()), (candidate, path)


def test_noapply_fixture_does_not_rebuild() -> None:
    (patched_file,) = parse_diff(fixture_diff("csvlite", "noapply"))
    assert apply_hunks(repo_base("csvlite")(PARSER), patched_file) is None


def test_patched_text_from_the_caller() -> None:
    """The caller's applied copy is used when it matches the diff; a stale one is replaced by
    the rebuild; a matching one that does not parse sends that side to file level."""
    diff, base = fixture_diff("intervals", "gold"), repo_base("intervals")
    expected = touched(diff, base)
    (patched_file,) = parse_diff(diff)
    applied = apply_hunks(base(INTERVAL), patched_file)
    assert applied is not None
    assert touched(diff, base, {INTERVAL: applied}.get) == expected
    assert touched(diff, base, texts({INTERVAL: base(INTERVAL)})) == expected  # stale: rebuilt
    assert touched(diff, base, texts({})) == expected  # the caller lacks it: rebuilt
    broken = applied + "def oops(:\n"
    assert touched(diff, base, {INTERVAL: broken}.get) == Touched(
        frozenset({INTERVAL}), frozenset({f"{INTERVAL}::Interval.overlaps", f"{INTERVAL}::{MODULE}"}), (INTERVAL,)
    )


# --- synthetic diffs made by real git ---------------------------------------------------------

GIT_CONFIG = ("-c", "core.autocrlf=false", "-c", "core.quotePath=true", "-c", "core.symlinks=true",
              "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false")  # fmt: skip


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, HOME=str(cwd))
    result = subprocess.run(["git", *GIT_CONFIG, *args], cwd=cwd, env=env, capture_output=True, check=True)
    return decode(result.stdout)


def repo_path(raw: str) -> str | None:
    """A diff header's path as the repository spells it (None for /dev/null)."""
    path = unquote(raw)
    return None if path == "/dev/null" else path[2:]


def _write(root: Path, files: Files) -> None:
    for rel, content in files.items():
        path = root / rel
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogateescape"))


@pytest.fixture
def git_diff(tmp_path: Path) -> Callable[..., str]:
    """``git_diff(before, after, *flags)``: the ``git diff`` between two trees (after: changes, None deletes).

    Also checks that :func:`apply_hunks` rebuilds every patched file byte for byte.
    """
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    counter = iter(range(1000))

    def make(before: Files, after: Files, *flags: str) -> str:
        root = tmp_path / f"repo{next(counter)}"
        root.mkdir()
        _git(root, "init", "-q", ".")
        _write(root, before)
        _git(root, "add", "-A")
        old = _git(root, "write-tree").strip()
        _write(root, after)
        _git(root, "add", "-A")
        new = _git(root, "write-tree").strip()
        diff = _git(root, "diff", "--no-ext-diff", "--no-color", "-M", *flags, old, new)
        final = {**before, **after}
        with pytest.MonkeyPatch.context() as patch:
            streamed(patch)
            assert shape(file_diffs(diff)) == shape(list(parse_diff(diff)))
        for patched_file in parse_diff(diff):
            source, target = repo_path(patched_file.source_file), repo_path(patched_file.target_file)
            if patched_file.is_binary_file or target is None:
                continue
            rebuilt = apply_hunks(texts(before)(source) if source else None, patched_file)
            assert rebuilt is not None and rebuilt == texts(final)(target), target
        return diff

    return make


def syms(*names: str, path: str = "pkg/m.py") -> frozenset[str]:
    return frozenset(f"{path}::{name}" for name in names)


FUNCS = """\
import functools

LIMIT = 10


def first(x):
    return x + 1


@functools.lru_cache(maxsize=None)
def decorated(x):
    return x * 2


class Config:
    retries = 3
    timeout = 10

    @staticmethod
    def helper():
        return 1

    def load(self):
        return self.retries
"""


def test_added_function(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("\n\n@functools", "\n\ndef added(y):\n    return y\n\n\n@functools")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result == Touched(frozenset({"pkg/m.py"}), syms("added"), ())


def test_added_method(git_diff: Callable[..., str]) -> None:
    after = FUNCS + "\n    def save(self):\n        pass\n"
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result.symbols == syms("Config.save")


def test_removed_function(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("def first(x):\n    return x + 1\n\n\n", "")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result.symbols == syms("first")


def test_decorator_only_changes(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("maxsize=None", "maxsize=128").replace("@staticmethod", "@functools.cache")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result.symbols == syms("decorated", "Config.helper")


def test_added_decorator_line_belongs_to_the_def(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("\ndef first", "\n@functools.cache\ndef first")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result.symbols == syms("first")


def test_class_attribute_change(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("retries = 3", "retries = 5")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result.symbols == syms("Config")


def test_module_level_constant_change(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("LIMIT = 10", "LIMIT = 20")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result == Touched(frozenset({"pkg/m.py"}), syms(MODULE), ())


NESTED = """\
import sys


def outer():
    def inner():
        return 1

    return inner()


class Outer:
    class Inner:
        def method(self):
            return "a"


if sys.version_info >= (3,):
    def conditional():
        return 0
else:
    pass

try:
    import json
except ImportError:
    def loads(text):
        return None
"""


def test_nested_functions_and_classes(git_diff: Callable[..., str]) -> None:
    after = (
        NESTED.replace("return 1", "return 2")
        .replace('return "a"', 'return "b"')
        .replace("return 0", "return -1")
        .replace("return None", "return {}")
    )
    result = touched(git_diff({"pkg/m.py": NESTED}, {"pkg/m.py": after}), texts({"pkg/m.py": NESTED}))
    assert result.symbols == syms("outer.inner", "Outer.Inner.method", "conditional", "loads")


def test_def_line_of_a_nested_function_is_that_function(git_diff: Callable[..., str]) -> None:
    after = NESTED.replace("def inner():", "def inner(x=0):").replace("    return inner()", "    return inner(1)")
    result = touched(git_diff({"pkg/m.py": NESTED}, {"pkg/m.py": after}), texts({"pkg/m.py": NESTED}))
    assert result.symbols == syms("outer.inner", "outer")


ASYNC = """\
async def fetch(url):
    return url


class Client:
    async def get(self):
        async with self.session() as session:
            return await session.get()
"""


def test_async_functions(git_diff: Callable[..., str]) -> None:
    after = ASYNC.replace("return url", "return url.strip()").replace("session.get()", "session.get(timeout=1)")
    result = touched(git_diff({"pkg/m.py": ASYNC}, {"pkg/m.py": after}), texts({"pkg/m.py": ASYNC}))
    assert result.symbols == syms("fetch", "Client.get")


def test_blank_lines_touch_the_file_only(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("    return x + 1\n", "\n    return x + 1\n").replace("\n\nclass Config", "\n\n\nclass Config")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    assert result == Touched(frozenset({"pkg/m.py"}), frozenset(), ())


def test_comment_lines_count_by_position(git_diff: Callable[..., str]) -> None:
    after = (
        FUNCS.replace("    return x + 1\n", "    # one more\n    return x + 1\n")
        .replace("\n\n@functools", "\n\n# a cached helper\n@functools")  # above the decorator: module
        .replace("        return self.retries\n", "        return self.retries\n        # trailing\n")
    )
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    # the trailing comment lies after load's last statement: outside load, inside nothing but the module
    assert result.symbols == syms("first", MODULE)


def test_non_python_files(git_diff: Callable[..., str]) -> None:
    before = {"README.md": "# Demo\n", "setup.cfg": "[metadata]\nname = demo\n", "pkg/m.py": FUNCS}
    after = {"README.md": "# Demo\n\nMore.\n", "setup.cfg": "[metadata]\nname = demo2\n"}
    result = touched(git_diff(before, after), texts(before))
    assert result == Touched(frozenset({"README.md", "setup.cfg"}), frozenset({"README.md", "setup.cfg"}), ())


def test_renamed_file(git_diff: Callable[..., str]) -> None:
    before = {"pkg/old.py": FUNCS}
    diff = git_diff(before, {"pkg/old.py": None, "pkg/new.py": FUNCS.replace("return x + 1", "return x + 2")})
    assert "rename from pkg/old.py" in diff
    result = touched(diff, texts(before))
    assert result == Touched(
        frozenset({"pkg/old.py", "pkg/new.py"}), syms("first", path="pkg/old.py") | syms("first", path="pkg/new.py"), ()
    )


def test_pure_renames(git_diff: Callable[..., str]) -> None:
    before = {"pkg/old.py": FUNCS, "docs/old.md": "# Notes\n"}
    diff = git_diff(before, {"pkg/old.py": None, "pkg/new.py": FUNCS, "docs/old.md": None, "docs/new.md": "# Notes\n"})
    result = touched(diff, texts(before))
    assert result.files == {"pkg/old.py", "pkg/new.py", "docs/old.md", "docs/new.md"}
    assert result.symbols == {"docs/old.md", "docs/new.md"}  # no changed Python line: no Python symbol


def test_copied_file_touches_only_the_copy(git_diff: Callable[..., str]) -> None:
    before = {"pkg/m.py": FUNCS}
    diff = git_diff(before, {"pkg/copy.py": FUNCS.replace("return x + 1", "return x + 2")}, "-C", "--find-copies-harder")
    assert "copy from pkg/m.py" in diff
    assert touched(diff, texts(before)) == Touched(frozenset({"pkg/copy.py"}), syms("first", path="pkg/copy.py"), ())


def test_deleted_file(git_diff: Callable[..., str]) -> None:
    before = {"pkg/m.py": FUNCS, "pkg/keep.py": "X = 1\n"}
    result = touched(git_diff(before, {"pkg/m.py": None}), texts(before))
    assert result == Touched(
        frozenset({"pkg/m.py"}), syms(MODULE, "first", "decorated", "Config", "Config.helper", "Config.load"), ()
    )


def test_new_file(git_diff: Callable[..., str]) -> None:
    before = {"pkg/keep.py": "X = 1\n"}
    result = touched(git_diff(before, {"pkg/n.py": ASYNC, "pkg/empty.py": ""}), texts(before))
    assert result == Touched(frozenset({"pkg/n.py", "pkg/empty.py"}), syms("fetch", "Client", "Client.get", path="pkg/n.py"), ())


def test_crlf_file(git_diff: Callable[..., str]) -> None:
    crlf = FUNCS.replace("\n", "\r\n")
    diff = git_diff({"pkg/m.py": crlf}, {"pkg/m.py": crlf.replace("retries = 3", "retries = 4")})
    assert "\r\n" in diff
    expected = Touched(frozenset({"pkg/m.py"}), syms("Config"), ())
    assert touched(diff, texts({"pkg/m.py": crlf})) == expected
    assert touched(diff, texts({"pkg/m.py": FUNCS})) == expected  # a base read with universal newlines
    lf_diff = git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": FUNCS.replace("retries = 3", "retries = 4")})
    assert touched(lf_diff.replace("\n", "\r\n"), texts({"pkg/m.py": FUNCS})) == expected  # a diff saved as CRLF


def test_no_newline_at_end_of_file(git_diff: Callable[..., str]) -> None:
    before = {"pkg/m.py": "def f():\n    return 1", "pkg/n.py": "X = 1\n\ndef g():\n    return 1"}
    after = {"pkg/m.py": "def f():\n    return 2", "pkg/n.py": "X = 1\n\ndef g():\n    return 1\n"}
    diff = git_diff(before, after)
    assert "\\ No newline at end of file" in diff
    assert touched(diff, texts(before)).symbols == syms("f") | syms("g", path="pkg/n.py")


def test_git_quoted_paths(git_diff: Callable[..., str]) -> None:
    path = 'pkg/caf\u00e9 "x".py'
    diff = git_diff({path: FUNCS}, {path: FUNCS.replace("retries = 3", "retries = 4")})
    assert '"a/pkg/caf\\303\\251 \\"x\\".py"' in diff
    assert touched(diff, texts({path: FUNCS})) == Touched(frozenset({path}), syms("Config", path=path), ())


def test_binary_diffs(git_diff: Callable[..., str]) -> None:
    before: Files = {"data/blob.bin": b"\x00\x01", "pkg/odd.py": b"X = 1\x00\n"}
    after: Files = {"data/blob.bin": b"\x00\x02", "pkg/odd.py": b"X = 2\x00\n"}
    for flags, marker in (((), "Binary files a/data/blob.bin and b/data/blob.bin differ"), (("--binary",), "GIT binary patch")):
        diff = git_diff(before, after, *flags)
        assert marker in diff
        assert touched(diff, texts(before)) == Touched(frozenset(before), frozenset(before), ()), flags


@needs_git
def test_symlink_is_not_python(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    _git(root, "init", "-q", ".")
    (root / "pkg/m.py").write_text(FUNCS, encoding="utf-8")
    _git(root, "add", "-A")
    old = _git(root, "write-tree").strip()
    try:
        os.symlink("m.py", root / "pkg/link.py")
    except OSError:
        pytest.skip("symlinks are not available")
    _git(root, "add", "-A")
    diff = _git(root, "diff", "--no-ext-diff", "--no-color", old, _git(root, "write-tree").strip())
    assert "new file mode 120000" in diff  # its "content" is the link target, not Python
    result = touched(diff, texts({"pkg/m.py": FUNCS}))
    assert result == Touched(frozenset({"pkg/link.py"}), frozenset({"pkg/link.py"}), ())


# --- sides that cannot be located --------------------------------------------------------------


def test_patched_file_with_a_syntax_error(git_diff: Callable[..., str]) -> None:
    after = FUNCS.replace("    return x + 1\n", "    return (x + 1\n")
    result = touched(git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after}), texts({"pkg/m.py": FUNCS}))
    # the removed line is still located in the base; the added one falls back to file level
    assert result == Touched(frozenset({"pkg/m.py"}), syms("first", MODULE), ("pkg/m.py",))


def test_base_file_that_does_not_parse(git_diff: Callable[..., str]) -> None:
    before = {"pkg/m.py": "def f():\n    print 'old'\n"}
    result = touched(git_diff(before, {"pkg/m.py": "def f():\n    print('new')\n"}), texts(before))
    assert result == Touched(frozenset({"pkg/m.py"}), syms("f", MODULE), ("pkg/m.py",))


def test_hunk_that_does_not_match_the_base(git_diff: Callable[..., str]) -> None:
    diff = git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": FUNCS.replace("retries = 3", "retries = 4")})
    other_base = {"pkg/m.py": FUNCS.replace("timeout = 10", "timeout = 99")}  # a context line differs
    (patched_file,) = parse_diff(diff)
    assert apply_hunks(texts(other_base)("pkg/m.py"), patched_file) is None
    assert touched(diff, texts(other_base)) == Touched(frozenset({"pkg/m.py"}), syms(MODULE), ("pkg/m.py",))
    assert touched(diff, texts({})) == Touched(frozenset({"pkg/m.py"}), syms(MODULE), ("pkg/m.py",))  # absent


def test_lone_carriage_returns_fall_back(git_diff: Callable[..., str]) -> None:
    before = {"pkg/m.py": "X = 1\rdef f():\r    return 1\n"}  # one line for git, three for Python
    result = touched(git_diff(before, {"pkg/m.py": "X = 1\rdef f():\r    return 2\n"}), texts(before))
    assert result == Touched(frozenset({"pkg/m.py"}), syms(MODULE), ("pkg/m.py",))


def test_non_utf8_sources(git_diff: Callable[..., str]) -> None:
    cookie = b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n"
    bare = b"def g():\n    return '\xe9'\n"
    before: Files = {"pkg/latin.py": cookie, "pkg/bare.py": bare}
    after: Files = {"pkg/latin.py": cookie.replace(b"'\xe9'", b"'\xe8'"), "pkg/bare.py": bare.replace(b"'\xe9'", b"'\xe8'")}
    result = touched(git_diff(before, after), texts(before))
    # with a coding line it parses as on import; without one it is not valid UTF-8 Python
    assert result.symbols == syms("f", path="pkg/latin.py") | syms(MODULE, path="pkg/bare.py")
    assert result.unparsable == ("pkg/bare.py",)


# --- diffs that touch nothing, or are not diffs ------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n"], ids=["empty", "newline", "whitespace"])
def test_empty_diff_touches_nothing(text: str) -> None:
    assert touched(text, texts({})) == Touched(frozenset(), frozenset(), ())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("this is not a diff\n", "no file diffs found"),
        ("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n", "malformed diff: Hunk is shorter than expected"),
        ("+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", "malformed diff: Target without source"),
        ("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n*x = 1\n", "malformed diff: Hunk diff line expected"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n", "names no file"),
    ],
    ids=["prose", "short-hunk", "no-source-header", "bad-line", "no-path"],
)
def test_malformed_diff(text: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PatchError, match=message):
        touched(text, texts({}))
    assert issubclass(PatchError, ValueError)
    streamed(monkeypatch)
    for given in (text, text.encode()):
        with pytest.raises(PatchError, match=message):
            touched(given, texts({}))


# --- apply_hunks -------------------------------------------------------------------------------


def test_apply_hunks_cases() -> None:
    modify = parse_diff("--- a/m.py\n+++ b/m.py\n@@ -2 +2,2 @@\n-b\n+B\n+C\n")[0]
    assert apply_hunks("a\nb\nc\n", modify) == "a\nB\nC\nc\n"
    assert apply_hunks("a\nx\nc\n", modify) is None  # the removed line differs
    assert apply_hunks("a\n", modify) is None  # runs past the end
    assert apply_hunks(None, modify) is None  # the file is not there to modify
    insert = parse_diff("--- a/m.py\n+++ b/m.py\n@@ -1,0 +2 @@\n+new\n")[0]
    assert apply_hunks("a\r\nb\r\n", insert) == "a\r\nnew\nb\r\n"  # a pure insertion after line 1
    added = parse_diff("--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n\\ No newline at end of file\n")[0]
    assert apply_hunks(None, added) == "x = 1\ny = 2"
    unordered = parse_diff("--- a/m.py\n+++ b/m.py\n@@ -3 +3 @@\n-c\n+C\n@@ -1 +1 @@\n-a\n+A\n")[0]
    assert apply_hunks("a\nb\nc\n", unordered) is None
    binary = parse_diff("diff --git a/x.bin b/x.bin\nindex 1..2 100644\nBinary files a/x.bin and b/x.bin differ\n")[0]
    assert apply_hunks("", binary) is None


# --- python_check ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("def f():\n    return 1\n", (True, True, None)),
        ("x = 1\ny = (\n", (False, False, "pkg/m.py:2: '(' was never closed")),
        ("def f():\n    pass\nreturn 1\n", (True, False, "pkg/m.py:3: 'return' outside function")),
        ("y = 1\nnonlocal x\n", (True, False, "pkg/m.py:2: nonlocal declaration not allowed at module level")),
        ("x = 1\nawait x\n", (True, False, "pkg/m.py:2: 'await' outside function")),
        (b"# coding: latin-1\nx = '\xe9'\n".decode("utf-8", "surrogateescape"), (True, True, None)),
    ],
    ids=["valid", "syntax-error", "return-at-module-level", "nonlocal-at-module-level", "await-outside", "latin-1"],
)
def test_python_check(text: str, expected: tuple[bool, bool, str | None]) -> None:
    assert python_check("pkg/m.py", text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("x = 1\x00\n", "null bytes"), (decode(b"x = '\xe9'\n"), "codec can't decode"), ("x = '\ud800'\n", "surrogates")],
    ids=["null-byte", "not-utf8", "lone-surrogate"],
)
def test_python_check_unreadable_sources(text: str, fragment: str) -> None:
    parses, compiles, error = python_check("pkg/m.py", text)
    assert (parses, compiles) == (False, False)
    assert error is not None and error.startswith("pkg/m.py") and fragment in error


def test_touched_round_trips_through_a_dict() -> None:
    result = touched(fixture_diff("csvlite", "noapply"), repo_base("csvlite"))
    assert result.to_dict() == {"files": [PARSER], "symbols": [f"{PARSER}::<module>"], "unparsable": [PARSER]}
    assert Touched.from_dict(result.to_dict()) == result


# --- large diffs and sources ---------------------------------------------------------------------

# What unidiff does around hunks, which a large diff's streamed hunks must do alike.
STREAM_CASES = {
    "marker-after-the-last-line": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n",
    "marker-inside-a-hunk": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n+b\n c\n",
    "blank-lines-after-a-hunk": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-a\n+b\n\n\n\\ No newline at end of file\n"
    "@@ -5 +5 @@\n-c\n+d\n",
    "target-repeated-after-a-hunk": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-a\n+b\n+++ b/pkg/m.py\n"
    "\\ No newline at end of file\n",
    "empty-hunk": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -0,0 +0,0 @@\n\\ No newline at end of file\n",
    "empty-lines-in-a-hunk": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,4 +1,4 @@\n a\n\n\r\n-b\n+c\n",
    "lone-carriage-returns": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n x = 1\rdef f():\n-a\r\n+b\r\n",
    "plain-files-with-words-between": "words\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-a\n+b\nmore words\n"
    "--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -2,0 +3 @@\n+c\n",
    "git-new-deleted-renamed": "diff --git a/pkg/n.py b/pkg/n.py\nnew file mode 100755\n--- /dev/null\n+++ b/pkg/n.py\n"
    "@@ -0,0 +1 @@\n+x = 1\ndiff --git a/pkg/o.py b/pkg/o.py\ndeleted file mode 100644\n--- a/pkg/o.py\n+++ /dev/null\n"
    "@@ -1 +0,0 @@\n-y = 2\ndiff --git a/pkg/p.py b/pkg/q.py\nsimilarity index 90%\nrename from pkg/p.py\n"
    "rename to pkg/q.py\nindex 1..2 100644\n--- a/pkg/p.py\n+++ b/pkg/q.py\n@@ -1 +1 @@\n-z = 3\n+z = 4\n",
    "binary": "diff --git a/x.bin b/x.bin\nindex 1..2 100644\nBinary files a/x.bin and b/x.bin differ\n"
    "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-a\n+b\n",
    "not-utf8": "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-x = '\udce9'\n+x = '\udce8'\n",
}  # fmt: skip


@pytest.mark.parametrize("name", list(STREAM_CASES))
def test_large_diffs_give_unidiffs_lines(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A diff read as a large one gives the lines unidiff gives reading it whole (values, types,
    numbers, the markers and empty lines it appends after a hunk), and so the same answer."""
    diff = STREAM_CASES[name]
    base = texts({"pkg/m.py": "a\nb\nc\nd\ne\n", "pkg/o.py": "y = 2\n", "pkg/p.py": "z = 3\n"})
    whole, answer = shape(list(parse_diff(diff))), touched(diff, base)
    streamed(monkeypatch)
    for given in (diff, diff.encode("utf-8", "surrogateescape")):
        assert shape(file_diffs(given)) == whole
        assert touched(given, base) == answer


def _new_module(path: str, body: str) -> str:
    lines = body.splitlines(keepends=True)
    added = "".join("+" + line for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{added}"


def test_a_module_larger_than_the_ast_limit_is_located_at_file_level() -> None:
    """A large diff (its bytes, as the runner passes them) adding a module over AST_LIMIT: read
    without a text of the module, at file level, as before; a Python file after it is located."""
    body = "".join(f"x_{i} = {i}\n" for i in range(symbols.AST_LIMIT // 8))
    diff = _new_module("pkg/big.py", body) + _new_module("pkg/small.py", "def f():\n    return 1\n")
    assert len(diff) > protect.LARGE_DIFF and len(body) > symbols.AST_LIMIT
    expected = Touched(frozenset({"pkg/big.py", "pkg/small.py"}),
                       frozenset({"pkg/big.py::<module>", "pkg/small.py::f"}), ("pkg/big.py",))  # fmt: skip
    assert touched(diff.encode(), texts({})) == expected
    assert touched(diff, texts({}), texts({"pkg/big.py": body})) == expected
    large = symbols.LargeDiff(diff)  # headers only: a hunk is dropped once unidiff has left it
    assert [len(f) for f in large] == [0, 1] and list(large.hunk_files) == [0, 1]
    with pytest.raises(PatchError, match="^malformed diff: Hunk is shorter than expected$"):
        touched(_new_module("pkg/big.py", body).replace("+x_9 = 9\n", "").encode(), texts({}))
    with pytest.raises(PatchError, match="^malformed diff: Hunk diff line expected: diff --git a/pkg/small.py"):
        touched(diff.replace("+x_9 = 9\n", "").encode(), texts({}))


def test_hunks_that_overlap_are_never_taken_for_a_long_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hunk lines longer than AST_LIMIT mean a longer text only when the hunks are distinct lines:
    overlapping ones are located in the (short) base as ever."""
    monkeypatch.setattr(symbols, "AST_LIMIT", 50)
    diff = "--- a/pkg/m.py\n+++ b/pkg/m.py\n" + "@@ -2 +2 @@\n-    return 1\n+    return 2\n" * 10
    result = touched(diff, texts({"pkg/m.py": "def f():\n    return 1\n"}))
    assert result == Touched(frozenset({"pkg/m.py"}), syms("f", MODULE), ("pkg/m.py",))  # the rebuild overlaps
    ordered = "--- a/pkg/m.py\n+++ b/pkg/m.py\n" + "".join(f"@@ -{i} +{i} @@\n-x_{i} = {i}\n+x_{i} = 0\n" for i in range(1, 11))
    base = "".join(f"x_{i} = {i}\n" for i in range(1, 11))
    assert touched(ordered, texts({"pkg/m.py": base})) == Touched(frozenset({"pkg/m.py"}), syms(MODULE), ("pkg/m.py",))


def test_symbols_of_sources_parsed_apart(git_diff: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Past IN_PROCESS_AST a text's defs are found in a child process: the same symbols."""
    after = FUNCS.replace("retries = 3", "retries = 5").replace("return x + 1", "return x + 2")
    diff = git_diff({"pkg/m.py": FUNCS}, {"pkg/m.py": after})
    expected = touched(diff, texts({"pkg/m.py": FUNCS}))
    assert expected.symbols == syms("first", "Config")
    monkeypatch.setattr(symbols, "IN_PROCESS_AST", 16)
    assert touched(diff, texts({"pkg/m.py": FUNCS})) == expected
    broken = texts({"pkg/m.py": FUNCS + "def oops(:\n"})  # the child finds no parse: file level
    assert touched(diff, broken) == Touched(frozenset({"pkg/m.py"}), syms(MODULE), ("pkg/m.py",))


@pytest.mark.parametrize(
    "text",
    ["def f():\n    return 1\n", "x = 1\ny = (\n", "def f():\n    pass\nreturn 1\n", "x = 1\x00\n",
     decode(b"x = '\xe9'\n"), "x = '\ud800'\n", decode(b"# coding: latin-1\nx = '\xe9'\n")],
    ids=["valid", "syntax-error", "compile-error", "null-byte", "not-utf8", "lone-surrogate", "latin-1"],
)  # fmt: skip
def test_python_check_apart_answers_as_in_process(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source past IN_PROCESS_AST is checked by a bounded child: the same answer and message;
    bytes give the answer of their text."""
    expected = python_check("pkg/m.py", text)
    if "\ud800" not in text:
        assert python_check("pkg/m.py", text.encode("utf-8", "surrogateescape")) == expected
    monkeypatch.setattr(symbols, "IN_PROCESS_AST", 4)
    assert python_check("pkg/m.py", text) == expected
    assert python_check("pkg/m.py", text) == expected  # kept: not checked again
    if "\ud800" not in text:
        assert python_check("pkg/m.py", text.encode("utf-8", "surrogateescape")) == expected
