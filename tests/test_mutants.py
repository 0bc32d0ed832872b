"""Mutants of a gold patch: each operator on a small gold, the splice is exact and its patch
applies to the base, the changed-lines rule, equivalence and duplicates, skipped files, order and
limit, odd texts (non-ASCII, CRLF, BOM, no final newline), and ``git apply --check`` of every
mutant patch of a multi-file gold made by real git."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from pytest_objective_scoring.mutants import (
    OPERATORS,
    Mutant,
    MutantPlan,
    file_diff,
    plan_mutants,
)
from pytest_objective_scoring.protect import unquote
from pytest_objective_scoring.symbols import PatchError, apply_hunks, parse_diff

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

Texts = Mapping[str, "str | None"]

HEAD = "def f(a, b, items, n):\n"
BASE = HEAD + "    return None\n"


def side(raw: str) -> str | None:
    path = unquote(raw.rstrip("\t"))
    return None if path == "/dev/null" else path[2:] if path.startswith(("a/", "b/")) else path


def gold_of(base: Texts, new: Texts) -> str:
    """A git-style gold patch base -> new, one file diff per path of ``new`` (None: deleted)."""
    return "".join(file_diff(path, base.get(path), text) for path, text in new.items())


def applied(patch: str, base: Texts) -> dict[str, str | None]:
    """Each file the patch names, as the patch leaves it (None: deleted), applied in memory."""
    out: dict[str, str | None] = {}
    for patched in parse_diff(patch):
        source, target = side(patched.source_file), side(patched.target_file)
        text = apply_hunks(base.get(source) if source else None, patched) if target else None
        assert target is None or text is not None, f"{target} does not apply"
        out[target or source or ""] = text
    return out


def spot(mutant: Mutant) -> tuple[int, int]:
    line, col = mutant.id.split("@", 1)[1].split(":")[1:3]
    return int(line), int(col)


def check(plan: MutantPlan, gold: str, base: Texts) -> None:
    """Every mutant is one exact splice of the gold text at its id's spot, its patch applied to the
    base gives that text and leaves every other file as the gold does, and its diff is gold -> it."""
    golds = applied(gold, base)
    ids = [m.id for m in plan.mutants] + [e["id"] for e in plan.equivalent]
    assert len(ids) == len(set(ids))
    for mutant in plan.mutants:
        assert mutant.operator in OPERATORS and mutant.id.startswith(f"{mutant.operator}@{mutant.path}:{mutant.line}:")
        text = golds[mutant.path]
        assert text is not None
        line, col = spot(mutant)
        start = sum(len(part) + 1 for part in text.split("\n")[: line - 1]) + col - 1
        start += 1 if line == 1 and text.startswith("\ufeff") else 0
        assert text[start : start + len(mutant.original)] == mutant.original
        mutated = text[:start] + mutant.replacement + text[start + len(mutant.original) :]
        assert mutated != text
        after = applied(mutant.patch, base)
        assert after.pop(mutant.path, base.get(mutant.path)) == mutated, mutant.id  # absent: the base text
        assert after == {p: t for p, t in golds.items() if p != mutant.path}
        assert apply_hunks(text, parse_diff(mutant.diff)[0]) == mutated


def plan_of(body: str, limit: int | None = None) -> tuple[MutantPlan, str, dict[str, str | None]]:
    base: dict[str, str | None] = {"pkg/mod.py": BASE}
    gold = gold_of(base, {"pkg/mod.py": HEAD + body})
    plan = plan_mutants(gold, base.get, limit)
    check(plan, gold, base)
    return plan, gold, base


def pairs(plan: MutantPlan, operator: str) -> list[tuple[str, str]]:
    return sorted((m.original, m.replacement) for m in plan.mutants if m.operator == operator)


OPERATOR_CASES = [
    ("compare", "    return (a < b, a >= b, a == b, a != b, a in b, a not in b, a is b, a is not b, a > b, a <= b)\n",
     [("!=", "=="), ("<", "<="), ("<=", "<"), ("==", "!="), (">", ">="), (">=", ">"), ("in", "not in"),
      ("is", "is not"), ("is not", "is"), ("not in", "in")]),
    ("boolean", "    return (a and b or n), not a, True, False\n",
     [("False", "True"), ("True", "False"), ("and", "or"), ("not ", ""), ("or", "and")]),
    ("constant", "    return 0x10 + a * 7\n", [("0x10", "15"), ("0x10", "17"), ("7", "6"), ("7", "8")]),
    ("slice", "    return items[a:n * 2], items[b or 1:]\n",
     [("a", "a + 1"), ("a", "a - 1"), ("b or 1", "(b or 1) + 1"), ("b or 1", "(b or 1) - 1"),
      ("n * 2", "n * 2 + 1"), ("n * 2", "n * 2 - 1")]),
    ("statement", '    """Doc."""\n    x = a; del b\n    pass\n    print(x)\n',
     [("del b", "pass"), ("print(x)", "pass"), ("x = a", "pass")]),
    ("condition", "    if a:\n        n = 1\n    elif b:\n        n = 2\n    while n:\n        n -= 1\n",
     [("a", "False"), ("a", "True"), ("b", "False"), ("b", "True"), ("n", "True")]),
    ("arguments", "    return max(a, b), min(n, n), f(*items, a, b), g(a)\n", [("a, b", "b, a"), ("a, b", "b, a")]),
    ("return", "    if a:\n        return\n    if b:\n        return None\n    return a + b\n", [("a + b", "None")]),
]  # fmt: skip


@pytest.mark.parametrize(("operator", "body", "expected"), OPERATOR_CASES, ids=[case[0] for case in OPERATOR_CASES])
def test_each_operator(operator: str, body: str, expected: list[tuple[str, str]]) -> None:
    plan, _, _ = plan_of(body)
    assert pairs(plan, operator) == expected


def test_mutant_fields_and_patch() -> None:
    plan, _, base = plan_of("    return a < b\n")
    first = plan.mutants[0]
    assert (first.id, first.operator, first.path, first.line) == ("compare@pkg/mod.py:2:14", "compare", "pkg/mod.py", 2)
    assert (first.original, first.replacement, first.description) == ("<", "<=", "`<` replaced by `<=`")
    assert applied(first.patch, base)["pkg/mod.py"] == HEAD + "    return a <= b\n"
    assert first.patch.startswith("diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n")
    assert "-    return a < b\n+    return a <= b\n" in first.diff
    record = first.to_dict()
    assert "patch" not in record and set(record) == {"id", "operator", "path", "line", "original", "replacement", "description", "diff"}
    json.dumps(plan.to_dict())
    assert plan.to_dict()["mutants"][0] == record


def test_descriptions() -> None:
    plan, _, _ = plan_of("    if not a:\n        return items[n:]\n    elif max(a, b):\n        x = 3\n    print(x)\n")
    descriptions = {m.description for m in plan.mutants}
    assert {"`not` removed", "`if` condition replaced by `True`", "`elif` condition replaced by `False`",
            "arguments `a` and `b` swapped", "returned `items[n:]` replaced by `None`", "`x = 3` replaced by `pass`",
            "`3` replaced by `4`", "slice bound `n` replaced by `n + 1`"} <= descriptions  # fmt: skip


def test_untouched_and_removed_lines_are_not_mutated() -> None:
    old = "x = 1 < 2\nw = 5 > 3 and True\ny = [1, 2][0:1]\nprint(x, y)\n"
    new = "x = 1 < 2\ny = [1, 2][0:1]\nz = x or y\nprint(x, y)\n"
    base = {"m.py": old}
    gold = gold_of(base, {"m.py": new})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    assert plan.mutants and {m.line for m in plan.mutants} == {3}
    assert {m.operator for m in plan.mutants} == {"boolean", "statement"}


def test_node_spanning_a_context_line_is_not_mutated() -> None:
    old = "def f(a, b):\n    return g(\n        a,\n        b,\n    )\n"
    base = {"m.py": old}
    gold = gold_of(base, {"m.py": old.replace("        b,\n", "        b < 2,\n")})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    assert {m.operator for m in plan.mutants} == {"compare", "constant"}  # not the call, nor the return
    assert {m.line for m in plan.mutants} == {4}


def test_equivalent_mutants_are_listed_not_counted() -> None:
    base: dict[str, str | None] = {"m.py": "y = 1\n"}
    gold = gold_of(base, {"m.py": "y = 1\nx = 2 * 0\n"})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    assert plan.equivalent == (
        {"id": "constant@m.py:2:5", "operator": "constant", "path": "m.py", "line": 2, "original": "2", "replacement": "3"},
        {"id": "constant@m.py:2:5:2", "operator": "constant", "path": "m.py", "line": 2, "original": "2", "replacement": "1"},
    )
    assert pairs(plan, "constant") == [("0", "-1"), ("0", "1")]
    assert plan.generated == len(plan.mutants) == 3 and plan.duplicates == plan.invalid == 0


def test_duplicates_are_dropped() -> None:
    base: dict[str, str | None] = {"m.py": ""}
    gold = gold_of(base, {"m.py": "def h(x):\n    return x\n"})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    # `return x` -> `pass` and -> `return None` compile alike: the statement mutant comes first
    assert [m.id for m in plan.mutants] == ["statement@m.py:2:5"]
    assert plan.duplicates == 1 and plan.generated == 1


def test_invalid_mutants_are_dropped() -> None:
    base: dict[str, str | None] = {}
    gold = gold_of(base, {"m.py": "from __future__ import annotations\nfrom __future__ import division\nx = 1\n"})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    assert plan.invalid == 1  # a future import after `pass`
    assert "statement@m.py:1:1" not in {m.id for m in plan.mutants}


def test_skipped_files() -> None:
    base: dict[str, str | None] = {
        "README.md": "Hello\n", "tests/test_x.py": "x = 1\n", "conftest.py": "x = 1\n", "old.py": "x = 1\n",
        "broken.py": "x = 1\n", "shrunk.py": "x = 1\ny = 2\n", "stale.py": "x = 1\n", "cr.py": "x = 1\n", "pkg/ok.py": "x = 1\n",
    }  # fmt: skip
    new: dict[str, str | None] = {
        "README.md": "Hello there\n", "tests/test_x.py": "x = 2\n", "conftest.py": "x = 2\n", "old.py": None,
        "broken.py": "def (:\n", "shrunk.py": "x = 1\n", "stale.py": "x = 3\n", "cr.py": "x = 1\ry = 2\n",
        "pkg/ok.py": "x = 1 < 2\n",
    }  # fmt: skip
    gold = gold_of(base, new)
    plan = plan_mutants(gold, {**base, "stale.py": "x = 9\n"}.get)  # not the base the gold was made on
    assert plan.skipped_files == (
        {"path": "README.md", "reason": "not a Python file"},
        {"path": "tests/test_x.py", "reason": "a test or protected file (test module)"},
        {"path": "conftest.py", "reason": "a test or protected file (conftest.py (pytest hooks and fixtures))"},
        {"path": "old.py", "reason": "deleted by the gold patch"},
        {"path": "broken.py", "reason": "does not parse after the gold patch"},
        {"path": "shrunk.py", "reason": "the gold patch adds no lines to it"},
        {"path": "stale.py", "reason": "the gold patch does not apply to its base text"},
        {"path": "cr.py", "reason": "holds a lone carriage return (git and Python number its lines differently)"},
    )
    assert {m.path for m in plan.mutants} == {"pkg/ok.py"}


def test_new_file_is_mutated() -> None:
    base: dict[str, str | None] = {}
    gold = gold_of(base, {"pkg/new.py": "def f(a):\n    if a:\n        return a + 1\n    print(a)\n"})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    assert {m.operator for m in plan.mutants} == {"constant", "statement", "return", "condition"}
    for mutant in plan.mutants:
        assert mutant.patch.startswith("diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n")


def test_multi_file_gold_keeps_other_sections_verbatim() -> None:
    base: dict[str, str | None] = {"a.py": "x = 1\n", "b.py": "y = 1\n", "c.txt": "c\n"}
    sections = [
        "diff --git a/a.py b/a.py\nindex 1111111..2222222 100644\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n x = 1\n+z = x < 3\n",
        "diff --git a/c.txt b/c.txt\nindex 3333333..4444444 100644\n--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c\n+d\n",
        "diff --git a/b.py b/b.py\nindex 5555555..6666666 100644\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-y = 1\n+y = 2  # two\n",
    ]  # fmt: skip
    preamble = "Fix the comparison.\n\n"
    gold = preamble + "".join(sections)
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    assert {m.path for m in plan.mutants} == {"a.py", "b.py"}
    for mutant in plan.mutants:
        kept = [s for s in sections if not s.startswith(f"diff --git a/{mutant.path} ")]
        assert mutant.patch.startswith(preamble)
        rest = mutant.patch[len(preamble) :]
        if mutant.path == "a.py":
            assert rest.startswith("diff --git a/a.py b/a.py\n--- a/a.py\n") and rest.endswith("".join(kept))
        else:
            assert rest.startswith("".join(kept)) and rest.endswith("+y = 3  # two\n" if "3" in mutant.replacement else "\n")


def test_plain_unified_gold_without_git_headers() -> None:
    base: dict[str, str | None] = {"a.py": "x = 1\n", "b.py": "y = 1\n"}
    gold = ("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 1 if y else 2\n"
            "--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-y = 1\n+y = 2\n")  # fmt: skip
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    b_mutant = next(m for m in plan.mutants if m.path == "b.py")
    assert b_mutant.patch.startswith("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 1 if y else 2\ndiff --git a/b.py b/b.py\n")


ALL_OPERATORS = (
    "    if a < b and not n:\n"
    "        items = items[n:2]\n"
    "    return max(a, b)\n"
)  # fmt: skip


def test_determinism_order_and_limit() -> None:
    plan, gold, base = plan_of(ALL_OPERATORS)
    assert plan == plan_mutants(gold, base.get)
    assert {m.operator for m in plan.mutants} == set(OPERATORS)
    short = plan_mutants(gold, base.get, limit=len(OPERATORS))
    assert [m.operator for m in short.mutants] == list(OPERATORS)
    assert short.mutants == plan.mutants[: len(OPERATORS)]
    assert short.generated == plan.generated == len(plan.mutants)
    assert plan_mutants(gold, base.get, limit=0).mutants == () and plan_mutants(gold, base.get, limit=-3).mutants == ()
    # within a group: file order, then line, then column
    for operator in OPERATORS:
        spots = [spot(m) for m in plan.mutants if m.operator == operator]
        assert spots == sorted(spots)


def test_interleaving_skips_exhausted_groups() -> None:
    plan, _, _ = plan_of("    return a < b < n\n")
    assert [m.operator for m in plan.mutants] == ["compare", "statement", "compare"]


def test_non_ascii_before_the_operator() -> None:
    plan, _, base = plan_of('    s = "héllo wörld €" if a < b else "ñ"; return s\n')
    mutant = next(m for m in plan.mutants if m.operator == "compare")
    assert mutant.id == "compare@pkg/mod.py:2:30"
    assert applied(mutant.patch, base)["pkg/mod.py"] == HEAD + '    s = "héllo wörld €" if a <= b else "ñ"; return s\n'
    statement = next(m for m in plan.mutants if m.operator == "statement")
    assert statement.original == 's = "héllo wörld €" if a < b else "ñ"'


def test_operator_gap_with_comments_and_line_breaks() -> None:
    plan, _, _ = plan_of("    ok = ((a)  # left side\n          not\n          in (b))\n    return ok\n")
    mutant = next(m for m in plan.mutants if m.operator == "compare")
    assert (mutant.original, mutant.replacement, mutant.line) == ("not\n          in", "in", 3)


def test_crlf_file() -> None:
    base: dict[str, str | None] = {"m.py": "def f(a):\r\n    return 0\r\n"}
    new = "def f(a):\r\n    x = [a,\r\n         1]\r\n    return a > x[0]\r\n"
    gold = gold_of(base, {"m.py": new})
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    compare = next(m for m in plan.mutants if m.operator == "compare")
    assert applied(compare.patch, base)["m.py"] == new.replace(">", ">=")
    statement = next(m for m in plan.mutants if m.operator == "statement")
    assert applied(statement.patch, base)["m.py"] == "def f(a):\r\n    pass\r\n    return a > x[0]\r\n"


def test_bom_and_no_final_newline() -> None:
    base: dict[str, str | None] = {"m.py": "\ufeffx = 1"}
    gold = gold_of(base, {"m.py": "\ufeffx = 1 < 2"})
    assert gold.endswith("\\ No newline at end of file\n")
    plan = plan_mutants(gold, base.get)
    check(plan, gold, base)
    compare = next(m for m in plan.mutants if m.operator == "compare")
    assert compare.id == "compare@m.py:1:7"
    assert applied(compare.patch, base)["m.py"] == "\ufeffx = 1 <= 2"


def test_negative_constant_before_power_is_parenthesised() -> None:
    plan, _, _ = plan_of("    return 0 ** a\n")
    assert ("0", "(-1)") in pairs(plan, "constant")


def test_malformed_gold_raises() -> None:
    with pytest.raises(PatchError):
        plan_mutants("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n", lambda path: None)
    with pytest.raises(PatchError):
        plan_mutants("not a diff\n", lambda path: None)


@pytest.mark.parametrize("gold", ["", "  \n\n"])
def test_blank_gold_gives_an_empty_plan(gold: str) -> None:
    assert plan_mutants(gold, lambda path: None) == MutantPlan((), 0, (), 0, 0, ())


def test_file_diff_quotes_paths_as_git_does() -> None:
    diff = file_diff("pkg/café.py", "x = 1\n", "x = 2\n")
    assert diff.startswith('diff --git "a/pkg/caf\\303\\251.py" "b/pkg/caf\\303\\251.py"\n')
    assert side(parse_diff(diff)[0].target_file) == "pkg/café.py"
    assert file_diff("m.py", "x\n", "x\n") == ""


# --- real git ---------------------------------------------------------------------------------

BASE_FILES = {
    "pkg/a.py": "def total(items, start=0):\n    result = start\n    for item in items:\n        result += item\n    return result\n",
    "pkg/c.py": "def c(x):\n    # one\n    # two\n    # three\n    # four\n    return x\n",
    "pkg/crlf.py": "def g(a, b):\r\n    return a\r\n",
    "pkg/old.py": "gone = True\n",
    "README.md": "Project\n",
    "tests/test_a.py": "def test_total():\n    assert True\n",
}
GOLD_FILES = {
    "pkg/a.py": ("def total(items, start=0, limit=None):\n    result = start\n    for item in items[:limit]:\n"
                 "        if item is None or item < 0:\n            continue\n        result += item\n    return result\n"),
    "pkg/b.py": "def b(x, y):\n    return divmod(x, y)[0] if y != 0 else 0\n",
    "pkg/d.py": "def c(x):\n    # one\n    # two\n    # three\n    # four\n    return x and not x\n",
    "pkg/crlf.py": "def g(a, b):\r\n    return a if a > b else b\r\n",
    "README.md": "Project, documented\n",
    "tests/test_a.py": "def test_total():\n    assert total([1, -1]) == 1\n",
}  # fmt: skip


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
                           "-c", "core.autocrlf=false", *args], cwd=root, capture_output=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode("utf-8", "surrogateescape")


def write(root: Path, files: Mapping[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(text.encode())


@needs_git
def test_every_mutant_patch_passes_git_apply_check(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, BASE_FILES)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    for path in ("pkg/old.py", "pkg/c.py"):
        (root / path).unlink()
    write(root, GOLD_FILES)
    git(root, "add", "-A")
    gold = git(root, "diff", "--cached", "-M")
    git(root, "reset", "-q", "--hard")
    assert "rename from pkg/c.py" in gold and "new file mode" in gold and "deleted file mode" in gold

    def read_base(path: str) -> str | None:
        file = root / path
        return file.read_bytes().decode() if file.is_file() else None

    plan = plan_mutants(gold, read_base)
    base = {path: read_base(path) for path in [*BASE_FILES, *GOLD_FILES]}
    check(plan, gold, base)
    assert {m.path for m in plan.mutants} == {"pkg/a.py", "pkg/b.py", "pkg/d.py", "pkg/crlf.py"}
    assert {s["path"] for s in plan.skipped_files} == {"pkg/old.py", "README.md", "tests/test_a.py"}
    assert {m.operator for m in plan.mutants} == set(OPERATORS)
    for mutant in plan.mutants:
        (tmp_path / "mutant.diff").write_bytes(mutant.patch.encode())
        git(root, "apply", "--check", str(tmp_path / "mutant.diff"))
    renamed = next(m for m in plan.mutants if m.path == "pkg/d.py")
    assert "rename from pkg/c.py\nrename to pkg/d.py\n" in renamed.patch
    (tmp_path / "mutant.diff").write_bytes(renamed.patch.encode())
    git(root, "apply", str(tmp_path / "mutant.diff"))
    assert not (root / "pkg/c.py").exists()
    assert (root / "pkg/d.py").read_bytes().decode() == applied(renamed.patch, base)["pkg/d.py"]


@needs_git
def test_a_gold_whose_hunks_stand_a_few_lines_away_is_mutated_where_git_apply_puts_it(tmp_path: Path) -> None:
    """A tree whose base is not the gold's own commit (a release's sdist with the patches
    reverse-applied, django__django-13933) holds the same code a few lines away: the hunks are
    found at their offsets, as git apply finds them, and every mutant's patch applies to that base."""
    stated = "import os\n\n\ndef f(x):\n    if x > 0:\n        return 1\n    return 0\n\n\ndef g(y):\n    return y\n"
    fixed = stated.replace("    return y\n", "    if y < 10:\n        return y + 1\n    return y\n")
    gold = gold_of({"m.py": stated}, {"m.py": fixed})
    base = "# a header the release adds\n# over three\n# lines\n" + stated  # every hunk 3 lines further down
    plan = plan_mutants(gold, {"m.py": base}.get)
    assert plan.skipped_files == () and plan.mutants
    assert {m.line for m in plan.mutants} <= {14, 15}  # the added lines (11 and 12 as stated) where they stand here
    (tmp_path / "m.py").write_text(base)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for mutant in plan.mutants:
        (tmp_path / "mutant.diff").write_text(mutant.patch)
        subprocess.run(["git", "apply", "--check", "mutant.diff"], cwd=tmp_path, check=True)
    nowhere = gold_of({"m.py": stated}, {"m.py": fixed})
    plan = plan_mutants(nowhere, {"m.py": stated.replace("    return y\n", "    return -y\n")}.get)
    assert plan.mutants == () and plan.skipped_files[0]["reason"] == "the gold patch does not apply to its base text"
