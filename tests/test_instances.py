from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring.instances import (
    Instance,
    InstanceError,
    load_instance,
    load_instances,
    parse_instance,
)

F2P = ["tests/test_words.py::test_count[hello  world]", "tests/test_words.py::test_tabs"]
P2P = ["tests/test_sentences.py::test_split", "tests/test_words.py::test_one"]


def row(instance_id: str = "owner__repo-1", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "instance_id": instance_id,
        "repo": "owner/repo",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "patch": "diff --git a/x.py b/x.py\n",
        "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
        "problem_statement": "it is broken",
        "FAIL_TO_PASS": list(F2P),
        "PASS_TO_PASS": list(P2P),
    }
    data.update(overrides)
    return data


def write_json(tmp_path: Path, data: Any, name: str = "instance.json", **dump: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, **dump), encoding="utf-8")
    return path


def write_jsonl(tmp_path: Path, rows: list[Any], name: str = "dataset.jsonl", blank_lines: bool = False) -> Path:
    lines = []
    for item in rows:
        lines.append(item if isinstance(item, str) else json.dumps(item))
        if blank_lines:
            lines.append("")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def error_for(path: Path, instance_id: str | None = None) -> InstanceError:
    with pytest.raises(InstanceError) as excinfo:
        load_instance(path, instance_id)
    return excinfo.value


# --- happy paths ----------------------------------------------------------------------------


def test_load_instance_with_json_lists(tmp_path: Path) -> None:
    instance = load_instance(write_json(tmp_path, row()))
    assert instance.instance_id == "owner__repo-1"
    assert instance.fail_to_pass == tuple(F2P)
    assert instance.pass_to_pass == tuple(P2P)
    assert instance.source == str(tmp_path / "instance.json")


def test_load_instance_with_json_encoded_string_lists(tmp_path: Path) -> None:
    data = row(FAIL_TO_PASS=json.dumps(F2P), PASS_TO_PASS=json.dumps(P2P))
    instance = load_instance(write_json(tmp_path, data))
    assert instance.fail_to_pass == tuple(F2P)
    assert instance.pass_to_pass == tuple(P2P)


def test_empty_pass_to_pass_is_allowed(tmp_path: Path) -> None:
    instance = load_instance(write_json(tmp_path, row(PASS_TO_PASS="[]")))
    assert instance.pass_to_pass == ()


def test_other_fields_are_kept(tmp_path: Path) -> None:
    data = row(version="1.0", hints_text="", created_at="2025-03-04T10:00:00Z", extra={"nested": [1, 2]})
    instance = load_instance(write_json(tmp_path, data))
    for key, value in data.items():
        assert instance.fields[key] == value
    assert instance.get("extra") == {"nested": [1, 2]}
    assert instance.get("absent", "dflt") == "dflt"
    assert instance.patch == data["patch"]
    assert instance.test_patch == data["test_patch"]
    assert instance.base_commit == data["base_commit"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("patch", None), ("test_patch", 3), ("base_commit", None), ("base_commit", "")],
    ids=["patch-null", "test-patch-int", "base-commit-null", "base-commit-empty"],
)
def test_optional_string_properties_are_none_when_absent_or_not_strings(field: str, value: Any) -> None:
    instance = parse_instance(row(**{field: value}))
    assert getattr(instance, field) is None
    assert instance.fields[field] == value


def test_optional_properties_none_when_missing() -> None:
    data = row()
    for name in ("patch", "test_patch", "base_commit"):
        del data[name]
    instance = parse_instance(data)
    assert (instance.patch, instance.test_patch, instance.base_commit) == (None, None, None)


def test_ids_with_spaces_and_non_ascii_are_kept_exactly(tmp_path: Path) -> None:
    f2p = [
        "tests/test_words.py::test_word_count[hello  world]",
        "tests/test_words.py::test_word_count[cr\u00e8me  br\u00fbl\u00e9e]",
        "tests/test_words.py::test_word_count[ leading and trailing ]",
        "tests/test_\u00fcnicode.py::test_\u65e5\u672c",
    ]
    data = row(FAIL_TO_PASS=json.dumps(f2p), PASS_TO_PASS=[])
    for ensure_ascii in (True, False):
        path = write_json(tmp_path, data, name=f"ids-{ensure_ascii}.json", ensure_ascii=ensure_ascii)
        instance = load_instance(path)
        assert instance.fail_to_pass == tuple(f2p)
        assert list(instance.listed) == f2p


def test_instance_id_with_spaces_and_non_ascii_is_kept(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("caf\u00e9 repo-1"), row("other-2")])
    instance = load_instance(path, "caf\u00e9 repo-1")
    assert instance.instance_id == "caf\u00e9 repo-1"


def test_parse_instance_in_memory() -> None:
    instance = parse_instance(row(), source="mem")
    assert isinstance(instance, Instance)
    assert instance.source == "mem"
    assert instance.fail_to_pass == tuple(F2P)


# --- datasets -------------------------------------------------------------------------------


def test_dataset_as_json_array(tmp_path: Path) -> None:
    path = write_json(tmp_path, [row("a-1"), row("b-2"), row("c-3")], name="dataset.json")
    instances = load_instances(path)
    assert [i.instance_id for i in instances] == ["a-1", "b-2", "c-3"]
    assert instances[1].source == f"{path} [item 1]"
    chosen = load_instance(path, "b-2")
    assert chosen.instance_id == "b-2"
    assert chosen.source == f"{path} [item 1]"


def test_dataset_as_jsonl_with_blank_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), row("b-2"), row("c-3")], blank_lines=True)
    text = path.read_text(encoding="utf-8")
    assert "\n\n" in text
    instances = load_instances(path)
    assert [i.instance_id for i in instances] == ["a-1", "b-2", "c-3"]
    chosen = load_instance(path, "c-3")
    assert chosen.instance_id == "c-3"
    assert chosen.source == f"{path}:5"  # line numbers count the blank lines


def test_jsonl_content_in_a_json_named_file_is_read_as_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), row("b-2")], name="dataset.json")
    assert [i.instance_id for i in load_instances(path)] == ["a-1", "b-2"]
    assert load_instance(path, "b-2").source == f"{path}:2"


def test_single_instance_file_can_be_selected_by_id(tmp_path: Path) -> None:
    path = write_json(tmp_path, row("only-1"))
    assert load_instance(path, "only-1").instance_id == "only-1"
    assert [i.instance_id for i in load_instances(path)] == ["only-1"]


def test_single_row_dataset_needs_no_id(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("only-1")])
    assert load_instance(path).instance_id == "only-1"


def test_jsonl_with_a_raw_line_separator_inside_a_string(tmp_path: Path) -> None:
    # json.dumps(..., ensure_ascii=False) writes U+2028 / U+2029 / U+0085 raw inside strings:
    # that is valid JSON on one physical line, so it is valid JSONL.
    rows = [row("a-1", problem_statement="first\u2028second\u0085third"), row("b-2")]
    path = tmp_path / "dataset.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    assert [i.instance_id for i in load_instances(path)] == ["a-1", "b-2"]
    assert load_instance(path, "a-1").fields["problem_statement"] == "first\u2028second\u0085third"


# --- Instance helpers -----------------------------------------------------------------------


def test_test_files_first_listed_order_and_dedup() -> None:
    instance = parse_instance(
        row(
            FAIL_TO_PASS=["b/test_b.py::t1", "a/test_a.py::T::t2", "b/test_b.py::t3[x::y]"],
            PASS_TO_PASS=["c/test_c.py::x", "a/test_a.py::y", "d/test_d.py"],
        )
    )
    assert instance.test_files() == ["b/test_b.py", "a/test_a.py", "c/test_c.py", "d/test_d.py"]


def test_listed_maps_every_id_to_its_gate_in_order() -> None:
    instance = parse_instance(row())
    assert instance.listed == {
        F2P[0]: "FAIL_TO_PASS",
        F2P[1]: "FAIL_TO_PASS",
        P2P[0]: "PASS_TO_PASS",
        P2P[1]: "PASS_TO_PASS",
    }
    assert list(instance.listed) == F2P + P2P


# --- bad input: every path names file, field and expectation --------------------------------


def _assert_error(error: InstanceError, path: Path, field: str | None, *fragments: str) -> None:
    message = str(error)
    assert str(path) in message, message
    assert error.field == field
    if field is not None:
        assert repr(field) in message, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize(
    ("mutate", "field", "fragments"),
    [
        (lambda d: d.pop("FAIL_TO_PASS"), "FAIL_TO_PASS", ["missing", "expected a list of test ids"]),
        (lambda d: d.pop("PASS_TO_PASS"), "PASS_TO_PASS", ["missing", "expected a list of test ids"]),
        (lambda d: d.update(FAIL_TO_PASS={"a": 1}), "FAIL_TO_PASS", ["expected a list of test ids, got dict"]),
        (lambda d: d.update(PASS_TO_PASS=7), "PASS_TO_PASS", ["expected a list of test ids, got int"]),
        (lambda d: d.update(FAIL_TO_PASS='"just a string"'), "FAIL_TO_PASS", ["expected a list of test ids, got str"]),
        (
            lambda d: d.update(FAIL_TO_PASS="tests/test_x.py::t"),
            "FAIL_TO_PASS",
            ["is a string but not a JSON-encoded list of test ids"],
        ),
        (
            lambda d: d.update(PASS_TO_PASS='["a", 3]'),
            "PASS_TO_PASS",
            ["item 1 must be a string test id, got 3"],
        ),
        (lambda d: d.update(FAIL_TO_PASS=["ok::t", None]), "FAIL_TO_PASS", ["item 1 must be a string test id"]),
        (lambda d: d.update(FAIL_TO_PASS=["ok::t", ""]), "FAIL_TO_PASS", ["item 1 is an empty test id"]),
        (lambda d: d.update(PASS_TO_PASS=["   "]), "PASS_TO_PASS", ["item 0 is an empty test id"]),
        (
            lambda d: d.update(FAIL_TO_PASS=["x::a", "x::b", "x::a"]),
            "FAIL_TO_PASS",
            ["duplicate test id 'x::a' (item 2)"],
        ),
        (
            lambda d: d.update(PASS_TO_PASS=[F2P[1]]),
            "PASS_TO_PASS",
            [repr(F2P[1]), "listed in both FAIL_TO_PASS and PASS_TO_PASS"],
        ),
        (lambda d: d.update(FAIL_TO_PASS=[]), "FAIL_TO_PASS", ["is empty", "at least one test"]),
        (lambda d: d.update(FAIL_TO_PASS="[]"), "FAIL_TO_PASS", ["is empty", "at least one test"]),
        (lambda d: d.pop("instance_id"), "instance_id", ["missing", "expected a non-empty string"]),
        (lambda d: d.update(instance_id=""), "instance_id", ["expected a non-empty string, got ''"]),
        (lambda d: d.update(instance_id="  "), "instance_id", ["expected a non-empty string"]),
        (lambda d: d.update(instance_id=12), "instance_id", ["expected a non-empty string, got 12"]),
    ],
    ids=[
        "missing-f2p",
        "missing-p2p",
        "f2p-not-a-list",
        "p2p-not-a-list",
        "string-encoding-a-non-list",
        "string-not-json",
        "non-string-id-in-encoded-list",
        "null-id",
        "empty-id",
        "whitespace-id",
        "duplicate-id-in-list",
        "id-in-both-lists",
        "empty-f2p",
        "empty-f2p-encoded",
        "missing-instance-id",
        "empty-instance-id",
        "blank-instance-id",
        "non-string-instance-id",
    ],
)
def test_bad_instance_fields(tmp_path: Path, mutate: Any, field: str, fragments: list[str]) -> None:
    data = row()
    mutate(data)
    path = write_json(tmp_path, data)
    error = error_for(path)
    _assert_error(error, path, field, *fragments)
    if "instance_id" in data and field != "instance_id":
        assert "(instance owner__repo-1)" in str(error)
    with pytest.raises(InstanceError):
        load_instances(path)


def test_non_object_instance(tmp_path: Path) -> None:
    path = write_json(tmp_path, [row("a-1"), 5], name="dataset.json")
    with pytest.raises(InstanceError) as excinfo:
        load_instances(path)
    _assert_error(excinfo.value, path, None, "[item 1]", "an instance must be a JSON object, got int")


@pytest.mark.parametrize("name", ["instance.json", "dataset.jsonl"])
def test_a_key_given_twice_is_refused_never_last_one_wins(tmp_path: Path, name: str) -> None:
    """JSON keeps the last of two equal keys silently: an instance whose FAIL_TO_PASS is given
    twice (``[]`` then a list) would be graded on whichever came last."""
    text = '{"instance_id": "x", "FAIL_TO_PASS": [], "FAIL_TO_PASS": ["t.py::test_a"], "PASS_TO_PASS": []}'
    path = tmp_path / name
    lines = [text] if name.endswith(".json") else [json.dumps(row("a-1")), text]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    error = error_for(path)
    _assert_error(error, path, "FAIL_TO_PASS", "given twice in one object", "last")
    if name.endswith(".jsonl"):
        assert f"{path}:2:" in str(error)


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "instance_id": "x",\n  "FAIL_TO_PASS": [,]\n}\n', encoding="utf-8")
    error = error_for(path)
    _assert_error(error, path, None, "invalid JSON at line 3 column 20")


def test_invalid_json_line_number_counts_leading_blank_lines(tmp_path: Path) -> None:
    # The position must point into the file as it is on disk, leading blank lines included.
    path = tmp_path / "broken.json"
    path.write_text('\n\n{\n  "instance_id": "x",\n  "FAIL_TO_PASS": [,]\n}\n', encoding="utf-8")
    error = error_for(path)
    _assert_error(error, path, None, "invalid JSON at line 5 column 20")


def test_invalid_jsonl_line_reports_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), "", '{"instance_id": "b-2", oops}', row("c-3")])
    with pytest.raises(InstanceError) as excinfo:
        load_instances(path)
    _assert_error(excinfo.value, path, None, f"{path}:3:", "invalid JSON in JSONL line")


def test_invalid_later_line_in_a_json_named_jsonl_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), "{not json"], name="dataset.json")
    with pytest.raises(InstanceError) as excinfo:
        load_instances(path)
    _assert_error(excinfo.value, path, None, f"{path}:2:", "invalid JSON in JSONL line")


@pytest.mark.parametrize("content", ["", "   \n\n\t\n"], ids=["zero-bytes", "whitespace-only"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "instance.json"
    path.write_text(content, encoding="utf-8")
    _assert_error(error_for(path), path, None, "the file is empty", "expected a JSON object, a JSON array or JSONL")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    _assert_error(error_for(path), path, None, "no such file")
    with pytest.raises(InstanceError, match="no such file"):
        load_instances(path)
    with pytest.raises(InstanceError, match="no such file"):
        load_instance(path, "x")


def test_directory(tmp_path: Path) -> None:
    path = tmp_path / "adir.json"
    path.mkdir()
    _assert_error(error_for(path), path, None, "is a directory", "expected a JSON or JSONL file")


def test_non_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(row("caf\u00e9")).replace("\\u00e9", "\u00e9").encode("latin-1"))
    _assert_error(error_for(path), path, None, "not UTF-8 text", "at byte")


def test_dataset_without_an_id_lists_ids_and_the_option(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), row("b-2"), row("c-3")])
    error = error_for(path)
    _assert_error(error, path, "instance_id", "holds 3 instances", "--objective-instance-id", "'a-1'", "'b-2'", "'c-3'")


def test_dataset_without_an_id_lists_at_most_five_ids(tmp_path: Path) -> None:
    path = write_json(tmp_path, [row(f"id-{n}") for n in range(8)], name="dataset.json")
    message = str(error_for(path))
    assert "holds 8 instances" in message
    assert "'id-4'" in message
    assert "'id-5'" not in message


def test_unknown_id_suggests_a_close_match(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("django__django-11099"), row("sympy__sympy-20590")])
    error = error_for(path, "django__django-11090")
    _assert_error(error, path, "instance_id", "no instance 'django__django-11090' among 2", "did you mean 'django__django-11099'")


def test_unknown_id_without_a_close_match(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), row("b-2")])
    message = str(error_for(path, "zzzzzzzzzzzz"))
    assert "no instance 'zzzzzzzzzzzz' among 2" in message
    assert "did you mean" not in message


def test_duplicate_instance_id_in_a_dataset(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [row("a-1"), row("b-2"), row("a-1")])
    with pytest.raises(InstanceError) as excinfo:
        load_instances(path)
    _assert_error(excinfo.value, path, "instance_id", "duplicate instance_id 'a-1'", f"also at {path}:1")
    error = error_for(path, "a-1")
    _assert_error(error, path, "instance_id", "'a-1' appears 2 times", f"{path}:1", f"{path}:3")
    assert load_instance(path, "b-2").instance_id == "b-2"


def test_malformed_other_row_does_not_block_selection_by_id(tmp_path: Path) -> None:
    bad = row("bad-1")
    del bad["FAIL_TO_PASS"]
    path = write_jsonl(tmp_path, [bad, row("good-2"), 17, {"no": "id"}])
    assert load_instance(path, "good-2").instance_id == "good-2"
    with pytest.raises(InstanceError) as excinfo:
        load_instance(path, "bad-1")
    _assert_error(excinfo.value, path, "FAIL_TO_PASS", f"{path}:1 (instance bad-1)", "missing")
    with pytest.raises(InstanceError):
        load_instances(path)  # loading all still validates every row


def test_instance_error_is_a_value_error_with_parts(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    error = error_for(path)
    assert isinstance(error, ValueError)
    assert error.source == str(path)
    assert error.problem == "no such file"
