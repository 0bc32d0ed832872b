"""Other languages' runners graded live (issue 30): the command instance's fields, the readers of
``go test -json``, jest's ``--json`` and libtest's JSON, protection by role per ecosystem, the test
patch over a candidate's mixed files, and what a run's report and exit status say. Pure parts here;
real runs in images are in ``test_command_container.py``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import protect
from pytest_objective_scoring.command_reports import assess, read_report, signals
from pytest_objective_scoring.command_spec import (
    SpecError,
    command_spec,
    language_reason,
    role_protected,
)
from pytest_objective_scoring.foreign import grade_run
from pytest_objective_scoring.instances import parse_instance
from pytest_objective_scoring.runner_choice import CommandError, choose
from pytest_objective_scoring.testrecord import RunRecord

GO_FIELDS = {"runner": "command", "language": "go", "test_command": "go test -json ./...",
             "report": {"format": "go-test-json", "path": "-"}}  # fmt: skip


def _instance(**fields: Any) -> Any:
    row = {"instance_id": "x__y-1", "repo": "x/y", "base_commit": "abc", "patch": "", "test_patch": "",
           "FAIL_TO_PASS": ["example.com/m TestNew"], "PASS_TO_PASS": ["example.com/m TestOld"], **GO_FIELDS, **fields}
    return parse_instance(row, "task.json")


# ---------------------------------------------------------------- the instance's fields


def test_a_command_instance_names_its_language_command_and_report():
    spec = command_spec({**GO_FIELDS, "build_command": "go build ./..."}, "task.json")
    assert (spec.language, spec.reader, spec.from_console, spec.build_command) == ("go", "go", True, "go build ./...")
    assert choose(_instance()).runner == "command" and choose(_instance()).command == "go test -json ./..."


@pytest.mark.parametrize(("change", "said"), [
    ({"language": "cobol"}, "field 'language': expected one of java, javascript, typescript, go, rust"),
    ({"report": {"format": "tap", "path": "-"}}, "field 'report.format': expected one of"),
    ({"report": {"format": "junit-surefire", "path": "/etc/passwd"}}, "must be relative to the repository"),
    ({"report": {"format": "junit-surefire", "path": "../x.xml"}}, "must be relative to the repository"),
    ({"report": {"format": "junit-surefire", "path": ["-", "a.xml"]}}, "cannot be read beside files"),
    ({"report": "junit"}, "field 'report': expected an object"),
    ({"test_command": "go test 'unclosed"}, "cannot be read as a shell line"),
    ({"test_command": ""}, "field 'test_command'"),
    ({"build_command": 3}, "field 'build_command'"),
])  # fmt: skip
def test_a_command_instance_with_a_bad_field_is_refused_naming_it(change, said):
    with pytest.raises(SpecError) as caught:
        command_spec({**GO_FIELDS, **change}, "task.json")
    assert said in str(caught.value) and str(caught.value).startswith("task.json: ")


def test_the_command_runner_is_named_by_the_instance_and_needs_its_test_command():
    with pytest.raises(CommandError, match="field 'test_command': the command runner needs"):
        choose(_instance(test_command=None))
    with pytest.raises(CommandError, match="named by the instance itself"):
        choose(parse_instance({"instance_id": "a", "FAIL_TO_PASS": ["t"], "PASS_TO_PASS": []}, "p.json"), runner="command",
               override_source="--runner")  # fmt: skip


def test_grade_refuses_a_command_instance_without_an_image(tmp_path):
    from pytest_objective_scoring.cli import main

    task = tmp_path / "task.json"
    task.write_text(json.dumps({"instance_id": "x__y-1", "FAIL_TO_PASS": ["m TestA"], "PASS_TO_PASS": [], **GO_FIELDS}))
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "go.mod").write_text("module m\n")
    patch = tmp_path / "p.diff"
    patch.write_text("")
    code = main(["grade", "--instance", str(task), "--patch", str(patch), "--repo", str(tmp_path / "repo")])
    assert code == 2


# ---------------------------------------------------------------- readers


def _events(*rows: dict[str, Any], extra: str = "") -> str:
    return "".join(json.dumps(r) + "\n" for r in rows) + extra


def _go(path: Path, text: str) -> Any:
    path.write_text(text)
    return read_report([path], "go", "go-test-json", "/testbed")


def test_go_test_json_gives_each_tests_last_result_and_a_crash_is_a_failure(tmp_path):
    run = _go(tmp_path / "c.log", _events(
        {"Action": "run", "Package": "example.com/m", "Test": "TestOld"},
        {"Action": "output", "Package": "example.com/m", "Test": "TestOld", "Output": "--- PASS: TestOld\n"},
        {"Action": "pass", "Package": "example.com/m", "Test": "TestOld", "Elapsed": 0.01},
        {"Action": "run", "Package": "example.com/m", "Test": "TestNew"},
        {"Action": "output", "Package": "example.com/m", "Test": "TestNew", "Output": "panic: boom\n"},
        {"Action": "run", "Package": "example.com/m", "Test": "TestNew/sub"},
        {"Action": "skip", "Package": "example.com/m", "Test": "TestNew/sub"},
        {"Action": "fail", "Package": "example.com/m", "Elapsed": 0.2},
    ))  # fmt: skip
    outcomes = {c.test_id: (c.outcome, c.message) for c in run.cases}
    assert outcomes["example.com/m TestOld"] == ("passed", "")
    assert outcomes["example.com/m TestNew"][0] == "failed" and "never ended" in outcomes["example.com/m TestNew"][1]
    assert outcomes["example.com/m TestNew/sub"][0] == "skipped"
    grading, reason, _ = grade_run(run, _instance(), "strict")
    assert reason is None and grading.fail_to_pass.verdict == "violated" and grading.pass_to_pass.verdict == "satisfied"


def test_a_go_package_that_did_not_build_is_no_verdict_for_its_listed_tests(tmp_path):
    """Go 1.19 (Debian 12) writes no event for such a package: only ``FAIL <pkg> [build failed]``."""
    run = _go(tmp_path / "c.log", "# example.com/m [example.com/m.test]\n./a_test.go:3:2: undefined: New\n"
              "FAIL\texample.com/m [build failed]\n" + _events(
                  {"Action": "skip", "Package": "example.com/m/cmd", "Elapsed": 0}))  # fmt: skip
    run_record = RunRecord(command=[], runner="command", exit_code=2, session={"exitstatus": 2})
    run_record.report = run
    _grading, reason, failure = assess(run_record, _instance(), "strict", 60)
    assert failure == "build" and "example.com/m: the package did not build ([build failed])" in str(reason)
    assert "not go test -json events" in " ".join(run.notes)


def test_jest_json_names_each_test_by_its_file_and_full_name_and_a_suite_that_did_not_run(tmp_path):
    report = {"testResults": [
        {"name": "/testbed/test/a.test.js", "status": "passed", "assertionResults": [
            {"ancestorTitles": ["parse"], "title": "keeps zeros", "fullName": "parse keeps zeros", "status": "passed",
             "duration": 3, "failureMessages": []},
            {"ancestorTitles": [], "title": "todo", "fullName": "todo", "status": "todo", "failureMessages": []}]},
        {"name": "/testbed/test/b.test.js", "status": "failed", "message": "Cannot find module '../src/new'",
         "assertionResults": []}]}  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps(report))
    run = read_report([tmp_path / "r.json"], "jest", "jest-json", "/testbed")
    assert {c.test_id: c.outcome for c in run.cases} == {"test/a.test.js->parse keeps zeros": "passed",
                                                        "test/a.test.js->todo": "skipped"}  # fmt: skip
    assert [(e.scope, e.failed) for e in run.events] == [("test/b.test.js", True)]
    instance = _instance(FAIL_TO_PASS=["test/b.test.js->new works"], PASS_TO_PASS=["test/a.test.js->parse keeps zeros"],
                         language="javascript")  # fmt: skip
    _grading, reason, _ = grade_run(run, instance, "strict")
    assert reason is not None and "test/b.test.js failed as a whole" in reason


def test_libtest_json_names_each_test_by_the_binary_cargo_said_it_ran(tmp_path):
    console = ("   Compiling bytes v1.7.1 (/testbed)\n"
               "     Running unittests src/lib.rs (target/debug/deps/bytes-a9b9b98715235d89)\n"
               + _events({"type": "suite", "event": "started", "test_count": 1},
                         {"type": "test", "name": "bytes_mut::tests::repr", "event": "ok", "exec_time": 0.001})
               + "     Running tests/test_buf.rs (target/debug/deps/test_buf-1510ffe7af4adde7)\n"
               + _events({"type": "test", "name": "test_get_int", "event": "failed", "stdout": "assertion failed"},
                         {"type": "test", "name": "test_slow", "event": "ignored"}))  # fmt: skip
    (tmp_path / "c.log").write_text(console)
    run = read_report([tmp_path / "c.log"], "libtest", "libtest-json", "/testbed")
    assert {c.test_id: c.outcome for c in run.cases} == {"bytes bytes_mut::tests::repr": "passed",
                                                        "bytes::test_buf test_get_int": "failed",
                                                        "bytes::test_buf test_slow": "skipped"}  # fmt: skip
    instance = _instance(FAIL_TO_PASS=["test_get_int"], PASS_TO_PASS=["bytes_mut::tests::repr"], language="rust")
    grading, reason, _ = grade_run(run, instance, "strict")  # Multi-SWE-bench's bare names match too
    assert reason is None and grading.fail_to_pass.verdict == "violated" and grading.pass_to_pass.verdict == "satisfied"


def test_a_crate_that_did_not_compile_is_a_build_failure(tmp_path):
    (tmp_path / "c.log").write_text("error[E0425]: cannot find function `get_int` in this scope\n"
                                    "error: could not compile `bytes` due to previous error\n")  # fmt: skip
    record = RunRecord(command=[], runner="command", exit_code=101, session={"exitstatus": 101})
    record.report = read_report([tmp_path / "c.log"], "libtest", "libtest-json", "/testbed")
    _, reason, failure = assess(record, _instance(language="rust"), "strict", 60)
    assert failure == "build" and "did not compile" in str(reason)


def test_no_report_is_no_verdict_and_a_clean_report_beside_a_failed_exit_is_a_signal(tmp_path):
    record = RunRecord(command=[], runner="command", exit_code=1, session={"exitstatus": 1})
    record.report_problem = "the run left no report where the instance's 'report.path' says"
    _, reason, failure = assess(record, _instance(), "strict", 60)
    assert reason == "no report was read: the run left no report where the instance's 'report.path' says"
    assert failure == "verifier"
    with pytest.raises(ValueError, match="no report"):
        read_report([], "go", "go-test-json", "/testbed")
    record.report = _go(tmp_path / "c.log", _events({"Action": "pass", "Package": "example.com/m", "Test": "TestOld"}))
    assert [s["kind"] for s in signals(record)] == ["report_disagrees_with_exit_status"]
    record.exit_code = 0
    record.writes = ["changed a_test.go"]
    assert signals(record) == [{"kind": "protected_file_modified", "detail": "changed a_test.go"}]


# ---------------------------------------------------------------- protection by role


@pytest.mark.parametrize(("language", "path", "judged"), [
    ("java", "core/src/test/java/com/x/FooTest.java", True),
    ("java", "src/main/java/com/x/Foo.java", False),
    ("java", "pom.xml", True), ("java", "sub/pom.xml", True), ("java", ".mvn/jvm.config", True),
    ("java", "src/main/java/com/x/LatestTest.java", False), ("java", "module/test/java/com/x/FooIT.java", True),
    ("java", "src/main/java/org/junit/Assert.java", True),
    ("java", "src/main/resources/META-INF/services/javax.annotation.processing.Processor", True),
    ("javascript", "src/__snapshots__/a.test.js.snap", True), ("javascript", "src/setupTests.js", True),
    ("rust", "src/build.rs", False), ("rust", "crates/core/build.rs", True), ("rust", ".cargo/config", True),
    ("rust", "tests/snapshots/a.snap", True),
    ("javascript", "src/__tests__/a.js", True), ("javascript", "src/util.spec.ts", True),
    ("javascript", "jest.config.js", True), ("javascript", "package.json", True), ("javascript", "src/index.js", False),
    ("javascript", "node_modules/jest/bin/jest.js", True), ("typescript", "tsconfig.build.json", True),
    ("go", "parse_test.go", True), ("go", "internal/testdata/a.toml", True), ("go", "go.mod", True),
    ("go", "parse.go", False), ("go", "vendor/x/y.go", True),
    ("rust", "tests/test_buf.rs", True), ("rust", "Cargo.toml", True), ("rust", ".cargo/config.toml", True),
    ("rust", "build.rs", True), ("rust", "src/lib.rs", False),
])  # fmt: skip
def test_each_ecosystems_judge_files_are_protected_by_their_role(language, path, judged):
    assert (language_reason(language, path) is not None) is judged


def test_a_candidate_loses_its_changes_to_the_judges_files_and_keeps_the_rest():
    patch = "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n"
                    for p in ("parse.go", "parse_test.go", "go.mod", "vendor/m/x.go"))  # fmt: skip
    result = protect.filter_candidate(patch, [], language="go")
    assert result.kept == ("parse.go",)
    assert {d.path for d in result.dropped} == {"parse_test.go", "go.mod", "vendor/m/x.go"}
    assert protect.filter_candidate(patch, []).kept == ("parse.go", "parse_test.go", "go.mod", "vendor/m/x.go"), \
        "without the language, Python's rules only"


def test_a_rust_source_file_that_holds_tests_is_mixed_not_protected():
    tests, mixed = role_protected("rust", ["tests/test_buf.rs", "src/bytes_mut.rs"])
    assert tests == ["tests/test_buf.rs"] and mixed == ["src/bytes_mut.rs"]


def _repo(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    return repo, subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def test_the_test_patch_goes_over_the_candidates_mixed_file_and_wins_where_both_cannot_apply(tmp_path):
    from pytest_objective_scoring.workspace import over_candidate

    lib = "fn a() {}\n\nfn b() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn old() {}\n}\n"
    repo, base = _repo(tmp_path, {"src/lib.rs": lib, "tests/t.rs": "#[test]\nfn t() {}\n"})
    test_patch = ("diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -8,2 +8,4 @@ mod tests {\n"
                  "     fn old() {}\n+    #[test]\n+    fn new() {}\n }\n")  # fmt: skip
    (repo / "src/lib.rs").write_text(lib.replace("fn a() {}", "fn a() { fixed(); }"))  # the candidate's fix
    (repo / "tests/t.rs").write_text("// the candidate's edit of a test file\n")
    said = over_candidate(repo, base, test_patch, ["tests/t.rs"], ["src/lib.rs", "tests/t.rs"], tmp_path)
    text = (repo / "src/lib.rs").read_text()
    assert "fixed()" in text and "fn new() {}" in text and said["over_the_candidate"] == ["src/lib.rs"]
    assert (repo / "tests/t.rs").read_text() == "#[test]\nfn t() {}\n", "a test file by role is reset"
    (repo / "src/lib.rs").write_text(lib.replace("    fn old() {}\n", "    fn old() { changed(); }\n"))  # clashes
    said = over_candidate(repo, base, test_patch, [], ["src/lib.rs"], tmp_path)
    assert said["test_patch_won"] == ["src/lib.rs"] and "changed()" not in (repo / "src/lib.rs").read_text()


def test_a_pass_a_test_prints_after_its_real_failure_does_not_make_it_pass(tmp_path):
    """Code under test can write a line of go test -json's format to the container's console after the
    runner wrote the test's failure: two results for one test, the worst counts (never the last); a
    libtest binary's test reported twice is two testcases of one id, graded by the worst."""
    forged = _events({"Action": "fail", "Package": "example.com/m", "Test": "TestNew"},
                     {"Action": "pass", "Package": "example.com/m", "Test": "TestNew"},
                     {"Action": "pass", "Package": "example.com/m", "Test": "TestOld"})  # fmt: skip
    grading, _, _ = grade_run(_go(tmp_path / "c.log", forged), _instance(), "strict")
    assert {r.test_id: r.outcome for r in grading.results}["example.com/m TestNew"] == "failed"
    (tmp_path / "r.log").write_text("     Running tests/t.rs (target/debug/deps/t-0123456789abcdef)\n" + _events(
        {"type": "test", "name": "new", "event": "failed"}, {"type": "test", "name": "new", "event": "ok"}))
    run = read_report([tmp_path / "r.log"], "libtest", "libtest-json", "/testbed")
    grading, _, _ = grade_run(run, _instance(FAIL_TO_PASS=["t new"], PASS_TO_PASS=[], language="rust"), "strict")
    assert grading.fail_to_pass.verdict == "violated"


# ---------------------------------------------------------------- red team of issue 30 (/tmp/rt30)


def test_a_report_the_candidate_planted_is_removed_before_the_run(tmp_path):
    """A candidate adds report.json and stops the runner before it writes its own: the planted file is
    gone before the run starts, so the run leaves no report (no verdict), never the planted one."""
    from pytest_objective_scoring.command_run import clear_report, collect_report

    spec = command_spec({**GO_FIELDS, "language": "javascript", "report": {"format": "jest-json", "path": "out/*.json"}},
                        "task.json")  # fmt: skip
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text('{"testResults": []}')
    (tmp_path / "out" / "linked.json").symlink_to("/etc/hostname")
    assert sorted(clear_report(spec, tmp_path)) == ["out/linked.json", "out/report.json"]
    files, _ = collect_report(spec, tmp_path, tmp_path / "console.log", tmp_path / "copied")
    assert files == []


def test_a_report_file_with_a_long_name_is_copied_by_its_index_and_reading_stops_at_the_budget(tmp_path, monkeypatch):
    from pytest_objective_scoring import command_run

    spec = command_spec({**GO_FIELDS, "report": {"format": "junit-go", "path": "r/*.xml"}}, "task.json")
    (tmp_path / "r").mkdir()
    for index in range(3):
        (tmp_path / "r" / (f"{index}" + "x" * 240 + ".xml")).write_bytes(b"<testsuites/>" + b" " * 100)
    monkeypatch.setattr(command_run, "REPORT_BUDGET", 150)
    files, notes = command_run.collect_report(spec, tmp_path, tmp_path / "c.log", tmp_path / "copied")
    assert [f.name for f in files] == ["00000.xml", "00001.xml"] and "the rest were not read" in notes[-1]


def test_a_jest_report_with_fields_of_the_wrong_type_is_read_not_a_crash(tmp_path):
    report = {"testResults": [{"name": "/testbed/a.test.js", "assertionResults": 3},
                              {"name": "/testbed/b.test.js", "assertionResults": [
                                  {"title": "t", "ancestorTitles": 5, "failureMessages": 7, "status": "failed",
                                   "duration": float("nan")}]}]}  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps(report))
    run = read_report([tmp_path / "r.json"], "jest", "jest-json", "/testbed")
    assert [(c.test_id, c.outcome, c.duration) for c in run.cases] == [("b.test.js->t", "failed", 0.0)]


def test_a_nan_duration_never_reaches_a_record(tmp_path):
    (tmp_path / "c.log").write_text("     Running unittests src/lib.rs (target/debug/deps/w-0123456789abcdef)\n"
                                    '{"type": "test", "name": "t", "event": "ok", "exec_time": NaN}\n')  # fmt: skip
    run = read_report([tmp_path / "c.log"], "libtest", "libtest-json", "/testbed")
    assert [c.duration for c in run.cases] == [0.0]


def test_a_candidate_that_blocks_where_the_test_patch_writes_is_tampering_not_an_infrastructure_failure(tmp_path):
    from pytest_objective_scoring.workspace import (
        TestPatchBlocked,
        apply_test_patch,
        over_candidate,
    )

    repo, base = _repo(tmp_path, {"pkg/a.go": "package pkg\n"})
    test_patch = ("diff --git a/pkg/testdata/in.txt b/pkg/testdata/in.txt\nnew file mode 100644\n--- /dev/null\n"
                  "+++ b/pkg/testdata/in.txt\n@@ -0,0 +1 @@\n+data\n")  # fmt: skip
    (repo / "pkg" / "testdata").write_text("a file where the test patch makes a folder\n")
    with pytest.raises(TestPatchBlocked, match="applies to the base but not over the candidate"):
        over_candidate(repo, base, test_patch, ["pkg/testdata/in.txt"], ["pkg/testdata/in.txt"], tmp_path)
    with pytest.raises(TestPatchBlocked):
        apply_test_patch(repo, base, test_patch, ["pkg/testdata/in.txt"], tmp_path)


def test_a_fix_in_the_test_patchs_context_lines_of_a_mixed_file_is_kept(tmp_path):
    from pytest_objective_scoring.workspace import over_candidate

    lib = "fn a() {}\n\nfn b() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn old() {}\n}\n"
    repo, base = _repo(tmp_path, {"src/lib.rs": lib})
    test_patch = ("diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -6,4 +6,6 @@ fn b() {}\n"
                  " mod tests {\n     #[test]\n     fn old() {}\n+    #[test]\n+    fn new() {}\n }\n")  # fmt: skip
    (repo / "src/lib.rs").write_text(lib.replace("mod tests {", "mod tests { // the fix touched this line"))
    said = over_candidate(repo, base, test_patch, [], ["src/lib.rs"], tmp_path)
    text = (repo / "src/lib.rs").read_text()
    assert said.get("context_lines") == 1 and "the fix touched" in text and "fn new() {}" in text


def test_the_control_applies_the_gold_patch_filtered_as_a_candidate_is():
    """A gold patch that needs a change to the judge's files (a dependency in go.mod) loses it as a
    candidate would: the control fails the same way, an infrastructure failure, never a candidate graded
    not resolved for what protection took from it (red team 9)."""
    from types import SimpleNamespace

    from pytest_objective_scoring.runner import Run

    gold = "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n" for p in ("go.mod", "a.go"))
    task = SimpleNamespace(instance=SimpleNamespace(patch=gold), spec=command_spec(GO_FIELDS, "t.json"), guarded=[],
                           language="go")  # fmt: skip
    run = Run.__new__(Run)
    run.task = task  # type: ignore[assignment]
    assert "go.mod" not in run.gold() and "a.go" in run.gold()


def test_a_running_line_written_by_code_under_test_is_a_signal(tmp_path):
    """Red team 4: code under test writes forged ``ok`` events and a ``Running`` line, so that the
    binary's real failures are credited to another binary: no single cargo run writes that console."""
    def suite(*tests: dict[str, Any], passed: int, failed: int) -> str:
        return _events({"type": "suite", "event": "started", "test_count": len(tests)}, *tests,
                       {"type": "suite", "event": "failed" if failed else "ok", "passed": passed, "failed": failed,
                        "ignored": 0})  # fmt: skip

    honest = ("     Running tests/count.rs (target/debug/deps/count-0123456789abcdef)\n"
              + suite({"type": "test", "name": "new", "event": "failed"}, passed=0, failed=1))  # fmt: skip
    (tmp_path / "honest.log").write_text(honest)
    record = RunRecord(command=[], runner="command", exit_code=101, session={"exitstatus": 101})
    record.report = read_report([tmp_path / "honest.log"], "libtest", "libtest-json", "/testbed")
    assert signals(record) == []
    forged = ("     Running tests/count.rs (target/debug/deps/count-0123456789abcdef)\n"
              + _events({"type": "suite", "event": "started", "test_count": 1}, {"type": "test", "name": "new", "event": "ok"})
              + "     Running tests/zz.rs (target/debug/deps/zz-0123456789abcdef)\n"
              + _events({"type": "test", "name": "new", "event": "failed"},
                        {"type": "suite", "event": "failed", "passed": 0, "failed": 1, "ignored": 0}))  # fmt: skip
    (tmp_path / "forged.log").write_text(forged)
    record.report = read_report([tmp_path / "forged.log"], "libtest", "libtest-json", "/testbed")
    kinds = [s["kind"] for s in signals(record)]
    assert kinds == ["report_inconsistent"], kinds
    assert "inside another binary's results" in signals(record)[0]["detail"]
