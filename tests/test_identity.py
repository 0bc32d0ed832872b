"""Identities that cannot be respelled (issue 29, item 2), and three small defects (item 5).

One definition (:mod:`pytest_objective_scoring.identity`) for the sets and the A/B comparison: a change
name or a benchmark family respelled with a look-alike letter, an invisible character, punctuation or
another case is the same name; a problem copied under another id, with a reworded statement, a renamed
repository or a reformatted patch is the same problem. Each respelling below escaped before this change.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import ab, sets
from pytest_objective_scoring.ab_claims import C4_SCOPE, claim_level
from pytest_objective_scoring.identity import (
    CONFUSABLES,
    FACET_PREFIXES,
    PROBLEM_KEY_PREFIX,
    derive_table,
    near_keys,
    problem_key,
    shown_name,
    text_key,
)
from pytest_objective_scoring.instances import parse_instance
from pytest_objective_scoring.ledger import Ledger
from pytest_objective_scoring.sets import (
    SetError,
    burn,
    create_set,
    resolve_set,
    rotate_set,
)

from .conftest import FIXTURES
from .runner_helpers import run_cli_here as run_cli

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
CSVLITE = "fixtures__csvlite-1"
P = PROBLEM_KEY_PREFIX
F = FACET_PREFIXES[0]  # the key of a task's fix, recorded beside the whole task's

# the spellings of "loc v2" that escaped its family (issue 29: "come back C2, keep")
RESPELLINGS = {
    "cyrillic o": "l\u043ec v2",
    "greek omicron": "l\u03bfc v2",
    "zero-width space": "loc\u200b v2",
    "byte-order mark": "\ufeffloc v2",
    "soft hyphen": "lo\u00adc v2",
    "added comma": "loc, v2",
    "hyphen for space": "LOC-V2",
    "full width": "\uff4c\uff4f\uff43 \uff56\uff12",
    "combining accent": "lo\u0301c v2",
    "mathematical bold": "\U0001d425oc v2",
    "lunate sigma": "lo\u03f2 v2",
    "small capitals": "\u029f\u1d0f\u1d04 \u1d20\u2082",
    "right-to-left override": "\u202e2v col\u202c",
}


# ---------------------------------------------------------------------- the canonical form of a name


@pytest.mark.parametrize("spelling", list(RESPELLINGS.values()), ids=list(RESPELLINGS))
def test_every_respelling_of_a_name_has_its_key(spelling):
    assert text_key(spelling) == text_key("loc v2")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("synth-a", "SYNTH-A"),
        ("synth-a", "synth_a"),
        ("synth-a", "\u0455\u0443nth-\u0430"),  # Cyrillic dze, u, a
        ("retry on failure", "Retry, on failure!"),
        ("YES", "\u03a5ES"),  # a Greek capital upsilon looks like Y
        ("Index v1", "\u0406ndex vl"),  # a Cyrillic capital I; the digit one and the letter l
        ("warm cache", "warrn cache"),  # m and rn
        ("v2.0", "v2.o"),
        ("loc v2", "loc\u00a0v2 "),
    ],
)  # fmt: skip
def test_look_alikes_case_and_punctuation_fold_into_one_key(a, b):
    assert text_key(a) == text_key(b)


@pytest.mark.parametrize(("a", "b"), [("loc v2", "loc v3"), ("synth-a", "synth-b"), ("кэш", "кош"), ("ノート", "メモ")])
def test_different_names_keep_different_keys(a, b):
    assert text_key(a) != text_key(b)


def test_near_names_are_found_by_edit_distance_on_their_keys():
    assert near_keys(text_key("localization subsystem v2"), text_key("localization subsystem v3")) == 1
    assert near_keys(text_key("localization subsystem v2"), text_key("localisation subsystm v2")) == 2
    assert near_keys(text_key("retry-v1"), text_key("retry-v2")) == 1
    assert near_keys(text_key("loc"), text_key("lod")) is None, "short names: no guess"
    assert near_keys(text_key("localization subsystem v2"), text_key("test selection v2")) is None


def test_the_look_alike_table_is_derived_from_unicodes_confusables_txt():
    # an excerpt of confusables.txt (Unicode 17.0.0, (c) Unicode, Inc., Unicode License v3)
    excerpt = (
        "0430 ;\t0061 ;\tMA\t# ( \u0430 \u2192 a ) CYRILLIC SMALL LETTER A \u2192 LATIN SMALL LETTER A\t#\n"
        "03A5 ;\t0059 ;\tMA\t# ( \u03a5 \u2192 Y ) GREEK CAPITAL LETTER UPSILON \u2192 LATIN CAPITAL LETTER Y\t#\n"
        "0406 ;\t006C ;\tMA\t# ( \u0406 \u2192 l ) CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I \u2192 LATIN SMALL LETTER L\t#\n"
        "02BC ;\t0027 ;\tMA\t# ( \u02bc \u2192 ' ) MODIFIER LETTER APOSTROPHE \u2192 APOSTROPHE\t#\n"
        "05D9 ;\t0027 ;\tMA\t# ( \u05d9 \u2192 ' ) HEBREW LETTER YOD \u2192 APOSTROPHE\t#\n"
        "FF41 ;\t0061 ;\tMA\t# ( \uff41 \u2192 a ) FULLWIDTH LATIN SMALL LETTER A \u2192 LATIN SMALL LETTER A\t#\n"
        "0031 ;\t006C ;\tMA\t# ( 1 \u2192 l ) DIGIT ONE \u2192 LATIN SMALL LETTER L\t#\n"
    )  # fmt: skip
    derived = derive_table(excerpt)
    assert derived == {"": "02BC", "a": "0430", "l": "0406", "y": "03A5"}, "NFKC, ASCII and letters of their own script aside"
    table = {point for points in CONFUSABLES.values() for point in points.split()}
    assert all(point in table for points in derived.values() for point in points.split())
    assert len(table) > 800


def test_a_name_is_shown_so_that_its_look_alike_can_be_seen():
    assert shown_name("loc v2") == "'loc v2'"
    assert shown_name("l\u043ec\u200b v2") == "'l\\u043ec\\u200b v2'"


# ---------------------------------------------------------------------- the identity of a problem


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATASET.read_text().splitlines()]


def _csvlite() -> dict[str, Any]:
    return next(row for row in _rows() if row["instance_id"] == CSVLITE)


def _reformatted(patch: str) -> str:
    """The same patch as another tool writes it: CRLF, another index line, no hunk section headings,
    timestamps on the file lines, no a/ b/ prefixes."""
    lines = []
    for line in patch.split("\n"):
        if line.startswith("index "):
            line = "index 0000000..1111111 100644"
        elif line.startswith("@@"):
            line = line[: line.index("@@", 2) + 2]
        elif line.startswith("--- a/"):
            line = "--- " + line[len("--- a/"):] + "\t2025-01-01 10:00:00.000000000 +0000"
        elif line.startswith("+++ b/"):
            line = "+++ " + line[len("+++ b/"):]
        elif line.startswith("diff --git "):
            _, _, a, b = line.split(" ")
            line = f"diff --git {a[2:]} {b[2:]}"
        lines.append(line)
    return "\r\n".join(lines)


COPIES = {
    "new id, trailing space in the statement": lambda r: {**r, "instance_id": "csv-copy", "problem_statement": r["problem_statement"] + " "},
    "new id, reworded statement": lambda r: {**r, "instance_id": "csv-copy", "problem_statement": "Parse quoted CSV fields."},
    "new id, repository renamed": lambda r: {**r, "instance_id": "csv-copy", "repo": "someone-else/csv-fork"},
    "new id, patches reformatted": lambda r: {**r, "instance_id": "csv-copy", "patch": _reformatted(r["patch"]),
                                              "test_patch": _reformatted(r["test_patch"])},
    "new id, test lists reordered as a JSON string": lambda r: {**r, "instance_id": "csv-copy",
                                                                "FAIL_TO_PASS": json.dumps(r["FAIL_TO_PASS"][::-1])},
    "git's mnemonic prefixes (i/ w/)": lambda r: {**r, "instance_id": "csv-copy",
                                                  "patch": _mnemonic(r["patch"]), "test_patch": _mnemonic(r["test_patch"])},
    "hunks in another order": lambda r: {**r, "instance_id": "csv-copy", "patch": _hunks_reversed(r["patch"])},
    "a blank line after the test patch": lambda r: {**r, "instance_id": "csv-copy", "test_patch": r["test_patch"] + "\n\n"},
    "test ids written with ./": lambda r: {**r, "instance_id": "csv-copy",
                                           "FAIL_TO_PASS": ["./" + t for t in r["FAIL_TO_PASS"]]},
}  # fmt: skip


def _mnemonic(patch: str) -> str:
    """The patch as `git -c diff.mnemonicPrefix=true diff` writes it: i/ and w/ for a/ and b/."""
    out = []
    for line in patch.split("\n"):
        if line.startswith("diff --git a/"):
            line = line.replace(" a/", " i/", 1).replace(" b/", " w/", 1)
        elif line.startswith("--- a/"):
            line = "--- i/" + line[len("--- a/"):]
        elif line.startswith("+++ b/"):
            line = "+++ w/" + line[len("+++ b/"):]
        out.append(line)
    return "\n".join(out)


def _hunks_reversed(patch: str) -> str:
    """Each file's hunks in the reverse order (git apply takes them so)."""
    out, hunks, head = [], [], []
    for line in patch.rstrip("\n").split("\n") + ["diff --git end"]:
        if line.startswith("diff --git"):
            out += head + [l for h in reversed(hunks) for l in h]
            head, hunks = [line], []
        elif line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
        else:
            head.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("make", list(COPIES.values()), ids=list(COPIES))
def test_a_copied_problem_has_the_problem_key_of_its_original(make):
    assert problem_key(make(_csvlite())) == problem_key(_csvlite())


def test_what_changes_a_problem_changes_its_key():
    row = _csvlite()
    assert problem_key(row).startswith(P)
    assert problem_key({**row, "patch": row["patch"].replace("+    fields = []", "+    fields = [1]")}) != problem_key(row)
    assert problem_key({**row, "base_commit": "0" * 40}) != problem_key(row)
    commit = "9fceb02d0ae598e95dc970b74767f19372d61af8"
    assert problem_key({**row, "base_commit": commit}) == problem_key({**row, "base_commit": " 9FCEB02 "}), "abbreviated"
    assert problem_key({**row, "PASS_TO_PASS": [*row["PASS_TO_PASS"], "tests/test_x.py::test_new"]}) != problem_key(row)
    assert len({problem_key(r) for r in _rows()}) == 3


def test_a_binary_payload_is_part_of_a_patch():
    binary = "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 5\nMcmZ?l{Q|\n\nliteral 0\nHcmV?d00001\n"
    row = {"FAIL_TO_PASS": ["t::a"], "base_commit": "abc"}
    assert problem_key({**row, "patch": binary}) != problem_key({**row, "patch": binary.replace("McmZ?l{Q|", "McmZ?x{Q|")})


def test_context_lines_and_hunk_splits_do_not_change_a_patch():
    wide = "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@ def f():\n a\n b\n-c\n+C\n d\n e\n"
    narrow = "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -3 +3 @@\n-c\n+C\n"
    row = {"FAIL_TO_PASS": ["t::a"], "base_commit": "abc"}
    assert problem_key({**row, "patch": wide}) == problem_key({**row, "patch": narrow})
    assert problem_key({**row, "patch": narrow.replace("@@ -3 +3 @@", "@@ -4 +4 @@")}) != problem_key({**row, "patch": narrow})


def test_a_task_with_nothing_that_locates_its_content_is_told_apart_by_its_statement():
    bare = {"FAIL_TO_PASS": ["tests/test_x.py::test_x"], "PASS_TO_PASS": []}
    assert problem_key({**bare, "problem_statement": "a"}) != problem_key({**bare, "problem_statement": "b"})
    assert problem_key({**bare, "problem_statement": "the problem "}) == problem_key({**bare, "problem_statement": "The problem"})


def test_sets_and_ab_share_one_definition_of_a_problem():
    from pytest_objective_scoring import ab_claims
    from pytest_objective_scoring.commands import ab as ab_commands

    instance = parse_instance(_csvlite(), "<csvlite>")
    assert sets._task_row(instance)["problem"] == problem_key(instance.fields)
    assert ab_claims.problem_identity is problem_key
    assert ab_commands._copies({"a": problem_key(_csvlite()), "b": problem_key(COPIES["new id, repository renamed"](_csvlite()))}) == [["a", "b"]]


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "ledger.sqlite") as opened:
        yield opened


def _dated(row: dict[str, Any]) -> Any:
    return parse_instance({**row, "created_at": "2025-06-01T00:00:00Z"}, f"<{row['instance_id']}>")


@pytest.mark.parametrize("make", list(COPIES.values()), ids=list(COPIES))
def test_a_burned_holdout_task_copied_is_still_burned_and_never_counts_for_generalization(ledger, make):
    original = _dated(_csvlite())
    create_set(ledger, "hold", "holdout_live", [original], "live:fresh", cutoff="2025-01-01")
    burn(ledger, "hold", "promote x", when=1_750_000_000)
    copied = _dated(make(_csvlite()))
    with pytest.raises(SetError, match=r"cannot be in holdout_live set hold@v2: its status is known \(burned"):
        rotate_set(ledger, "hold", add=[copied])
    with pytest.raises(SetError, match="its status is known"):
        create_set(ledger, "fresh", "holdout_live", [copied], "live:fresh", cutoff="2025-01-01")
    create_set(ledger, "reg", "regression", [copied], "static:fixtures")
    [state] = resolve_set(ledger, "reg").tasks
    assert state.status == "known" and state.burned_by is not None and state.burned_by.decision == "promote x"


def test_a_set_holds_a_problem_once_however_it_is_copied(ledger):
    original = _dated(_csvlite())
    copied = _dated(COPIES["new id, repository renamed"](_csvlite()))
    with pytest.raises(SetError, match="task 'csv-copy' is the same problem as 'fixtures__csvlite-1'"):
        create_set(ledger, "reg", "regression", [original, copied], "static:fixtures")


def test_a_task_burned_by_an_older_version_still_burns_its_exact_copies(ledger, monkeypatch):
    def older_row(instance: Any) -> dict[str, Any]:  # what versions before problem_key wrote
        return {"task_id": sets.task_id_of(instance), "instance_id": instance.instance_id,
                "created_at": instance.fields.get("created_at"), "problem": sets.legacy_problem_digest(instance.fields)}  # fmt: skip

    with monkeypatch.context() as older:
        older.setattr(sets, "_task_row", older_row)
        create_set(ledger, "hold", "holdout_live", [_dated(_csvlite())], "live:fresh", cutoff="2025-01-01")
        burn(ledger, "hold", "an older decision", when=1_750_000_000)
    copied = _dated({**_csvlite(), "instance_id": "csv-copy"})
    create_set(ledger, "reg", "regression", [copied], "static:fixtures")
    [state] = resolve_set(ledger, "reg").tasks
    assert state.burned_by is not None and state.burned_by.decision == "an older decision"


def _flask() -> dict[str, Any]:
    """A real SWE-bench Lite row (pallets__flask-4992), as the dataset holds it."""
    return json.loads((Path(__file__).parent.parent / "fixtures" / "identity" / "pallets__flask-4992.json").read_text())


def _comment_in_gold(row: dict[str, Any]) -> dict[str, Any]:
    """A comment line added to the gold patch's first hunk (its header counted again, as git would)."""
    patch = row["patch"].replace("@@ -234,6 +234,7 @@", "@@ -234,6 +234,8 @@", 1)
    patch = patch.replace("+        text: bool = True,\n", "+        text: bool = True,\n+        # binary loaders (tomllib) need text=False\n", 1)
    assert patch != row["patch"]
    return {**row, "instance_id": "flask-copy", "patch": patch}


PART_COPIES = {
    "a PASS_TO_PASS id dropped": lambda r: {**r, "instance_id": "flask-copy", "PASS_TO_PASS": json.loads(r["PASS_TO_PASS"])[:-1]},
    "a comment line added to the gold patch": _comment_in_gold,
    "a comment at the end of a gold line": lambda r: {**r, "instance_id": "flask-copy", "patch": r["patch"].replace(
        "+        text: bool = True,", "+        text: bool = True,  # new in 2.3", 1)},
    "the same tree under another commit id": lambda r: {**r, "instance_id": "flask-copy", "base_commit": "1" * 40},
    "all three at once": lambda r: {**_comment_in_gold(r), "base_commit": "1" * 40,
                                  "PASS_TO_PASS": json.dumps(json.loads(r["PASS_TO_PASS"])[1:])},
}  # fmt: skip


@pytest.mark.parametrize("make", list(PART_COPIES.values()), ids=list(PART_COPIES))
def test_a_copy_that_changes_one_part_of_a_real_task_is_still_the_same_problem(ledger, make):
    """The issue 29 review's three escapes, on a real SWE-bench row: each copy has another whole-task
    key, but its fix or its tests keep theirs, and one shared key is one problem (sets and A/B alike)."""
    from pytest_objective_scoring.commands import ab as ab_commands
    from pytest_objective_scoring.identity import problem_facets, problem_keys

    row, copy_ = _flask(), make(_flask())
    assert problem_key(copy_) != problem_key(row) or copy_["patch"] != row["patch"], "the copy changes the task"
    assert set(problem_facets(copy_)) & set(problem_facets(row))
    assert ab_commands._copies({"a": problem_keys(row), "b": problem_keys(copy_)}) == [["a", "b"]]
    with pytest.raises(SetError, match="task 'flask-copy' is the same problem as 'pallets__flask-4992'"):
        create_set(ledger, "reg", "regression", [_dated(row), _dated(copy_)], "static:swe-bench")
    create_set(ledger, "hold", "holdout_live", [_dated(row)], "live:fresh", cutoff="2025-01-01")
    burn(ledger, "hold", "promote x", when=1_750_000_000)
    with pytest.raises(SetError, match="its status is known"):
        create_set(ledger, "fresh", "holdout_live", [_dated(copy_)], "live:fresh", cutoff="2025-01-01")


def test_what_changes_a_fix_and_its_tests_changes_both_parts_keys():
    """Not every edit is a copy: a changed line of code in the fix, another FAIL_TO_PASS test with another
    test patch, give keys of their own (a different problem is never merged by its comments alone)."""
    from pytest_objective_scoring.identity import problem_facets

    row = _flask()
    fix, tests = problem_facets(row)
    changed_fix = {**row, "patch": row["patch"].replace("+        text: bool = True,", "+        text: bool = False,", 1)}
    assert problem_facets(changed_fix)[0] != fix and problem_facets(changed_fix)[1] == tests
    other_tests = {**row, "FAIL_TO_PASS": ["tests/test_config.py::test_other"]}
    assert problem_facets(other_tests)[1] != tests and problem_facets(other_tests)[0] == fix
    assert problem_facets({**row, "patch": "", "test_patch": ""}) == ()
    assert problem_facets({**row, "patch": "+# only a comment\n"}) == (tests,), "nothing but comments: no fix key"


def test_an_older_comparisons_problems_without_parts_cannot_be_shown_disjoint():
    from pytest_objective_scoring.ab_claims import _comparable
    from pytest_objective_scoring.identity import problem_keys

    assert _comparable(list(problem_keys(_flask())))
    assert not _comparable([problem_key(_flask())]), "recorded before the parts' keys: no C3 from it"


# ---------------------------------------------------------------------- families of a change, and C3


def _stored(ledger: Any, name: str, **kwargs: Any) -> None:
    from .test_ab_claims import _stored_comparison

    _stored_comparison(ledger, name, **kwargs)


@pytest.mark.parametrize("spelling", list(RESPELLINGS.values()), ids=list(RESPELLINGS))
def test_a_respelled_change_stays_in_the_family_of_its_failed_experiment(tmp_path, spelling):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        _stored(ledger, "failed", change="loc v2", p_value=0.6, recommendation="reject", claim="C0")
        _stored(ledger, "retry", change=spelling, p_value=0.03, claim="C2")
    done = run_cli("ab", "show", "retry", "--ledger", str(path), "--json")
    assert done.returncode == 0, done.stderr
    details = json.loads(done.stdout)["details"]
    retry = next(m for m in details["family"]["members"] if m["name"] == "retry")
    assert details["family"]["experiments"] == 2 and details["holm_p_value"] == pytest.approx(2 * retry["p_value"])
    assert retry["p_value"] < 0.05 < details["holm_p_value"]
    assert details["claim"] == "C0" and details["claim_downgraded"]["from"] == "C2"
    assert "not significant once the 2 experiments on this change are counted" in details["claim_reasons"][1]


def _c2(benchmark: str, problems: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    from .test_ab_claims import c2_facts

    return c2_facts(benchmark={"id": benchmark}, problem_digests=problems)


@pytest.mark.parametrize("other", ["SYNTH-A", "synth_a", "Synth A", "\u0455ynth-\u0430", "synth\u200b-a"])
def test_c3_counts_one_benchmark_family_however_it_is_spelt(other):
    details, record = _c2("synth-a", [f"{F}a1", f"{F}a2"])
    replication = {"name": "half-two", "benchmark": other, "problem_digests": [f"{F}b1"], "c2": True}
    level, reasons = claim_level(details, record, holm_p=0.001, replications=[replication])
    assert level == "C2" and "the same benchmark family as synth-a, spelt otherwise" in reasons[2]
    elsewhere = dict(replication, benchmark="synth-b")
    assert claim_level(details, record, holm_p=0.001, replications=[elsewhere])[0] == "C3"


def test_c3_never_rests_on_problems_an_older_version_identified():
    details, record = _c2("synth-a", [f"{F}a1"])
    older = {"name": "old", "benchmark": "synth-b", "problem_digests": ["sha256:b1"], "c2": True}
    level, reasons = claim_level(details, record, holm_p=0.001, replications=[older])
    assert level == "C2" and "problems recorded by an older version cannot be shown disjoint" in reasons[2]


# ---------------------------------------------------------------------- near-duplicates at preregistration


def _ledger_and_manifest(tmp_path: Path) -> tuple[Path, Any]:
    from .test_ab import MANIFEST

    ledger = tmp_path / "ledger.sqlite"
    made = run_cli("sets", "create", "regression", "--role", "regression", "--dataset", str(DATASET), "--source",
                   "static:fixtures", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 0, made.stderr
    first = tmp_path / "first.json"
    first.write_text(json.dumps(MANIFEST))
    assert run_cli("ab", "preregister", str(first), "--ledger", str(ledger)).returncode == 0

    def manifest(name: str, change: str, **extra: Any) -> Path:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**copy.deepcopy(MANIFEST), "name": name, "change_under_test": change, **extra}))
        return path

    return ledger, manifest


def _preregister(path: Path, ledger: Path) -> Any:
    return run_cli("ab", "preregister", str(path), "--ledger", str(ledger), "--json")


def test_a_near_duplicate_change_name_must_be_declared_the_same_change_or_another(tmp_path):
    ledger, manifest = _ledger_and_manifest(tmp_path)
    refused = _preregister(manifest("exp-2", "localization subsystem v3"), ledger)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert ("change_under_test 'localization subsystem v3' is 1 edit(s) away from the existing change "
            "'localization subsystem v2' (experiment 'exp-1', ledger seq") in refused.stderr
    assert '"change_relation": {"same_as" or "different_from": "localization subsystem v2"' in refused.stderr
    other = {"different_from": "localization subsystem v2", "reason": "v3 replaces the ranking, not the index"}
    done = _preregister(manifest("exp-2", "localization subsystem v3", change_relation=other), ledger)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["change_relation"][0]["relation"] == "different_from"
    same = {"same_as": "localization subsystem v2", "reason": "a typo fixed in v2's name"}
    done = _preregister(manifest("exp-3", "localization subsystm v2", change_relation=same), ledger)
    assert done.returncode == 0, done.stderr
    again = _preregister(manifest("exp-4", "localization subsystem v3"), ledger)
    assert again.returncode == 0, ("decided once by exp-2's declaration", again.stderr)
    with Ledger(ledger, read_only=True) as opened:
        entries = {e.data["name"]: e.data for e in opened.entries("ab_manifest")}
        assert entries["exp-3"]["change_relation"] == [{"relation": "same_as", "change": "localization subsystem v2",
                                                        "reason": "a typo fixed in v2's name", "key": text_key("localization subsystem v2"),
                                                        "matches": ["localization subsystem v2"]}]  # fmt: skip
        from pytest_objective_scoring.ab_comparison import experiment_family

        family = experiment_family(opened, "localization subsystm v2", "exp-3", {"result": {}}, {"benchmark": {"id": "fixtures"}})
        assert [m["name"] for m in family["members"]] == ["exp-1", "exp-3"], "same_as joins the family"
        assert family["declared"][0]["reason"] == "a typo fixed in v2's name"
        separate = experiment_family(opened, "localization subsystem v3", "exp-2", {"result": {}}, {"benchmark": {"id": "fixtures"}})
        assert [m["name"] for m in separate["members"]] == ["exp-2", "exp-4"], "different_from keeps it apart"


def test_a_look_alike_spelling_joins_its_change_and_cannot_be_declared_another(tmp_path):
    ledger, manifest = _ledger_and_manifest(tmp_path)
    cyrillic = "l\u043ecalization subsystem v2"
    refused = _preregister(manifest("exp-2", cyrillic), ledger)
    assert refused.returncode == 2 and "'l\\u043ecalization subsystem v2' is spelt differently from the existing change " \
        "'localization subsystem v2'" in refused.stderr and '{"same_as": "localization subsystem v2"' in refused.stderr
    split = {"different_from": "localization subsystem v2", "reason": "we say so"}
    refused = _preregister(manifest("exp-2", cyrillic, change_relation=split), ledger)
    assert refused.returncode == 2 and "cannot be different from 'localization subsystem v2'" in refused.stderr
    unknown = {"same_as": "another change entirely", "reason": "?"}
    refused = _preregister(manifest("exp-2", cyrillic, change_relation=unknown), ledger)
    assert refused.returncode == 2 and "no experiment in this ledger is on that change" in refused.stderr
    same = {"same_as": "localization subsystem v2", "reason": "pasted from a Russian keyboard layout"}
    assert _preregister(manifest("exp-2", cyrillic, change_relation=same), ledger).returncode == 0
    with Ledger(ledger, read_only=True) as opened:
        assert not any(e.data["name"] == "exp-2" and "change_relation" not in e.data for e in opened.entries("ab_manifest"))


@pytest.mark.parametrize(("first", "second"), [("retry budget +20%", "retry budget -20%"), ("lr 1e-3", "lr 1e3"),
                                               ("port to C++", "port to C"), ("cache v1.2", "cache v12")])  # fmt: skip
def test_names_one_only_once_their_signs_are_dropped_are_one_change_until_declared_apart(tmp_path, first, second):
    """``+20%`` and ``-20%`` share a text key (signs are punctuation): undeclared they are one change (one
    Holm family, the safe side); ``different_from`` with a reason splits them, because a sign tells them
    apart (issue 29 review: the split was refused). A spelling that differs by no sign cannot be split."""
    from pytest_objective_scoring.identity import symbol_key

    from .test_ab import MANIFEST

    assert text_key(first) == text_key(second) and symbol_key(first) != symbol_key(second)
    ledger, manifest = _ledger_and_manifest(tmp_path)
    assert _preregister(manifest("exp-a", first), ledger).returncode == 0
    refused = _preregister(manifest("exp-b", second), ledger)
    assert refused.returncode == 2 and '{"same_as" or "different_from": ' + json.dumps(first) in refused.stderr, refused.stderr
    apart = {"different_from": first, "reason": "the opposite setting"}
    assert _preregister(manifest("exp-b", second, change_relation=apart), ledger).returncode == 0
    respelt = second.upper().replace(" ", "\u200b  ")  # a respelling of the second: said the same, joins its family
    refused = _preregister(manifest("exp-c", respelt), ledger)
    assert refused.returncode == 2 and '{"same_as": ' + json.dumps(second) in refused.stderr, refused.stderr
    assert json.dumps(first) not in refused.stderr, "its signs were declared apart from the first once: not asked again"
    same = {"same_as": second, "reason": "capitals"}
    assert _preregister(manifest("exp-c", respelt, change_relation=same), ledger).returncode == 0
    from pytest_objective_scoring.ab_comparison import experiment_family

    with Ledger(ledger, read_only=True) as opened:
        def members(change: str, name: str) -> list[str]:
            return [m["name"] for m in experiment_family(opened, change, name, {"result": {}},
                                                         {"benchmark": {"id": "fixtures"}})["members"]]  # fmt: skip
        assert members(first, "exp-a") == ["exp-a"]
        assert members(second, "exp-b") == ["exp-b", "exp-c"]
        assert MANIFEST["change_under_test"] not in (first, second)
    same_signs = {"different_from": second, "reason": "we say so"}
    refused = _preregister(manifest("exp-d", second.title(), change_relation=same_signs), ledger)
    assert refused.returncode == 2 and "differ by no sign" in refused.stderr, refused.stderr


def test_a_sign_look_alike_or_an_invisible_character_is_no_sign_of_another_change():
    from pytest_objective_scoring.identity import symbol_key

    assert symbol_key("retry budget \u221220%") == symbol_key("retry budget -20%"), "a minus sign is a hyphen-minus"
    assert symbol_key("retry\u2010on\u2013failure") == symbol_key("retry on failure"), "dashes between letters"
    assert symbol_key("retry\u200b-\u200bon") == symbol_key("retry on"), "an invisible character does not make a sign"
    assert symbol_key("c\u2795\u2795") == symbol_key("C++")
    assert symbol_key("v1.2") != symbol_key("v12") and symbol_key("v1. 2") == symbol_key("v1.2")
    assert symbol_key("retry on failure.") == symbol_key("retry on failure"), "a full stop is no sign"


@pytest.mark.parametrize(
    ("relation", "fragment"),
    [({"same_as": "x"}, "field 'reason' is missing"),
     ({"same_as": "x", "different_from": "y", "reason": "r"}, "exactly one of same_as and different_from"),
     ({"same_as": "x", "reason": "r", "why": "w"}, "'why' is not part of a change relation"),
     ([], "expected an object (or a list of them)"),
     ("x", "expected an object with same_as or different_from")],
)  # fmt: skip
def test_a_malformed_change_relation_is_refused_naming_the_field(relation, fragment):
    from .test_ab import MANIFEST

    with pytest.raises(ab.ABError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        ab.parse_manifest({**MANIFEST, "change_relation": relation}, "m.json")


# ---------------------------------------------------------------------- three small defects (item 5)


def test_ab_show_prints_every_name_as_written_never_as_markup(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        _stored(ledger, "first", change="[bold]loc[/bold] v2", benchmark="synth-a", p_value=0.001)
        _stored(ledger, "second", change="[bold]loc[/bold] v2", benchmark="[red]synth-b", p_value=0.001)
    done = run_cli("ab", "show", "first", "--ledger", str(path))
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "first [synth-a]: compared" in text and "second [[red]synth-b]: compared" in text
    assert "A/B first: [bold]loc[/bold] v2" in text


def test_c4_is_said_once_as_the_scope_never_as_a_downgrade(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        _stored(ledger, "failed", change="loc v2", p_value=0.6, recommendation="reject", claim="C0")
        _stored(ledger, "retry", change="loc v2", p_value=0.03, claim="C2")
    details = json.loads(run_cli("ab", "show", "retry", "--ledger", str(path), "--json").stdout)["details"]
    assert details["claim_downgraded"]["to"] == "C0"
    assert not any("C4" in reason for reason in details["claim_downgraded"]["because"]), details["claim_downgraded"]
    assert [r for r in details["claim_reasons"] if "C4" in r] == [C4_SCOPE]
    table = run_cli("ab", "show", "retry", "--ledger", str(path)).stdout
    downgraded = next(line for line in table.splitlines() if line.startswith("DOWNGRADED"))
    assert "C4" not in downgraded and table.count("C4 is never reached") == 1


def test_sets_json_refusals_are_json_on_standard_output(tmp_path, capsys):
    from pytest_objective_scoring.cli import main

    argv = ["sets", "create", "s", "--role", "holdout_live", "--dataset", str(DATASET), "--source", "static:x",
            "--ledger", str(tmp_path / "l.sqlite")]  # fmt: skip
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    message = err.strip().removeprefix("objective-score sets: error: ")
    assert len(err.splitlines()) == 1 and "cannot be in holdout_live set s@v1" in message
    assert json.loads(out) == {"error": message, "exit": 2}
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "cannot be in holdout_live set s@v1" in err, "without --json: the line on stderr only"
    assert main(["sets", "show", "nope", "--ledger", str(tmp_path / "none.sqlite"), "--json"]) == 2
    assert "no ledger at" in json.loads(capsys.readouterr().out)["error"]
