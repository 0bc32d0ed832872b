"""Which program runs an instance's tests: the shipped SWE-bench table, the precedence of the
instance's own fields and overrides, command lines read as SWE-bench's eval script runs them, and
the targets (SWE-bench's test directives)."""

from __future__ import annotations

import json
import re

import pytest

from pytest_objective_scoring import runner_choice as tc
from pytest_objective_scoring.grade_task import program_targets
from pytest_objective_scoring.instances import parse_instance
from pytest_objective_scoring.workspace import BadInput

TWELVE = ("astropy/astropy", "django/django", "matplotlib/matplotlib", "mwaskom/seaborn", "pallets/flask",
          "psf/requests", "pydata/xarray", "pylint-dev/pylint", "pytest-dev/pytest", "scikit-learn/scikit-learn",
          "sphinx-doc/sphinx", "sympy/sympy")  # fmt: skip


def row(**fields: object) -> object:
    base = {"instance_id": "x__y-1", "FAIL_TO_PASS": ["test_a (app.tests.T)"], "PASS_TO_PASS": []}
    return parse_instance({**base, **fields}, "<row>")


def test_the_shipped_table_names_its_source_and_covers_swebench_s_twelve_repositories() -> None:
    table = tc.specs_table()
    assert table["source"]["package"] == "swebench 4.1.0 (PyPI)"
    assert table["source"]["module"].startswith("swebench/harness/constants/python.py")
    assert len(table["source"]["module_sha256"]) == 64
    assert set(TWELVE) <= set(table["specs"])
    assert {"dbt-labs/dbt-core", "swe-bench/humaneval"} == set(table["excluded"])
    runners = {(repo, spec["runner"]) for repo, versions in table["specs"].items() for spec in versions.values()}
    assert {r for repo, r in runners if repo == "django/django"} == {"django"}
    assert {r for repo, r in runners if repo == "sympy/sympy"} == {"sympy"}
    assert {r for repo, r in runners if repo not in ("django/django", "sympy/sympy")} == {"pytest"}


def test_every_version_of_the_table_reads_as_a_command_of_its_runner() -> None:
    count = 0
    for repo, versions in tc.specs_table()["specs"].items():
        for version in versions:
            command = tc.choose(row(repo=repo, version=version))
            assert command.runner == versions[version]["runner"], (repo, version)
            assert command.source.startswith(f"SWE-bench's specification of {repo}@{version}")
            count += 1
    assert count == 282


def test_swebench_s_django_and_sympy_commands_are_read_as_their_eval_scripts_run_them() -> None:
    django = tc.choose(row(repo="django/django", version="3.0"))
    assert django.program == ("tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1")
    assert django.env == {"LANG": "en_US.UTF-8", "LANGUAGE": "en_US:en", "LC_ALL": "en_US.UTF-8"}
    assert any("locale-gen" in ignored for ignored in django.ignored)  # building the environment, not running it
    assert tc.choose(row(repo="django/django", version="1.9")).program == ("tests/runtests.py", "--verbosity", "2")
    old = tc.choose(row(repo="django/django", version="2.2"))
    assert "PYTHONIOENCODING" not in old.env and any(i.startswith("PYTHONIOENCODING=utf8") for i in old.ignored)
    sympy = tc.choose(row(repo="sympy/sympy", version="1.7"))
    assert sympy.program == ("bin/test", "-C", "--verbose")
    assert sympy.warnings == ("ignore::UserWarning", "ignore::SyntaxWarning")  # PYTHONWARNINGS, as -W options
    assert sympy.argv("py", "boot.py", ["a.py"]) == ["py", "-I", "-S", "-B", "-W", "ignore::UserWarning", "-W",
                                                      "ignore::SyntaxWarning", "boot.py", "bin/test", "-C", "--verbose",
                                                      "a.py"]  # fmt: skip
    pytest_row = tc.choose(row(repo="pytest-dev/pytest", version="5.4"))
    assert pytest_row.is_pytest and pytest_row.program == () and pytest_row.command == "pytest -rA"


def test_the_instance_s_own_runner_wins_over_the_table_and_an_override_that_contradicts_it_is_refused() -> None:
    own = row(repo="django/django", version="3.0", runner="unittest")
    assert tc.choose(own).runner == "unittest"
    assert tc.choose(own).program == ("-m", "unittest", "-v")
    assert tc.choose(own, "unittest", None, "--runner").runner == "unittest"
    with pytest.raises(tc.CommandError, match=r"field 'runner' is 'unittest' but envs.json \['k'\] says 'django'"):
        tc.choose(own, "django", None, "envs.json ['k']")
    with pytest.raises(tc.CommandError, match="unknown runner 'nose'"):
        tc.choose(row(runner="nose"))
    with pytest.raises(tc.CommandError, match="field 'test_cmd': expected a non-empty string"):
        tc.choose(row(runner="django", test_cmd=""))


def test_an_override_wins_over_the_table_and_keeps_the_table_s_command_for_the_same_runner() -> None:
    django = row(repo="django/django", version="4.0")
    assert tc.choose(django, "django", None, "--runner").program[0] == "tests/runtests.py"
    custom = tc.choose(django, None, "./tests/runtests.py --verbosity 2 --parallel 1 --noinput", "envs.json ['k']")
    assert custom.program == ("tests/runtests.py", "--verbosity", "2", "--parallel", "1", "--noinput")
    assert custom.source == "envs.json ['k']"
    assert tc.choose(django, "pytest", None, "--runner").is_pytest
    plain = tc.choose(row(), None, None)
    assert plain.is_pytest and plain.source.startswith("default")


@pytest.mark.parametrize(
    ("runner", "line", "problem"),
    [
        ("django", "bin/test -C", "does not run tests/runtests.py"),
        ("sympy", "./tests/runtests.py", "does not run bin/test"),
        ("unittest", "/usr/bin/evil -v", "must be a path inside the repository"),
        ("unittest", "../outside/run.py", "must be a path inside the repository"),
        ("unittest", "python -m", "-m names no module"),
        ("django", "LANG=C", "names no program"),
        ("unittest", "run 'unclosed", "cannot be read as a shell line"),
    ],
    ids=["django-not-runtests", "sympy-not-bin-test", "absolute-script", "script-outside", "m-without-module",
         "assignment-only", "unbalanced-quote"],
)
def test_a_command_that_is_not_its_runner_s_is_refused_naming_where_it_came_from(runner: str, line: str,
                                                                                  problem: str) -> None:  # fmt: skip
    with pytest.raises(tc.CommandError, match=f"envs.json: .*{problem}"):
        tc.parse_command(runner, line, source="envs.json")


def test_assignments_and_exports_become_the_run_s_environment_and_python_variables_are_set_aside() -> None:
    command = tc.parse_command("unittest", "FOO=1 PYTHONWARNINGS=error python3 -m unittest -v",
                               ["export BAR='two words'", "echo not an export"], "here")  # fmt: skip
    assert command.env == {"FOO": "1", "BAR": "two words"}
    assert command.warnings == ("error",)
    assert command.program == ("-m", "unittest", "-v")
    assert command.ignored == ("echo not an export",)


def test_directives_are_swebench_s_django_labels_unittest_modules_and_sympy_paths_without_data_files() -> None:
    files = ["tests/auth_tests/test_validators.py", "tests/auth_tests/fixtures/data.json", "tests/i18n/sampleproject/x.txt",
             "tests/templates/base.html", "README.md"]  # fmt: skip
    django = tc.choose(row(runner="django"))
    assert tc.directives(django, files) == ["auth_tests.test_validators", "templates.base.html"]  # SWE-bench's rule
    unit = tc.choose(row(runner="unittest"))
    assert tc.directives(unit, ["pkg/tests/test_x.py", "pkg/tests/data.csv", "pkg/tests/page.html"]) == ["pkg.tests.test_x"]
    sympy = tc.choose(row(runner="sympy"))
    assert tc.directives(sympy, ["sympy/core/tests/test_basic.py", "doc/src/x.md"]) == ["sympy/core/tests/test_basic.py"]


def test_without_a_test_patch_the_listed_ids_name_the_targets_or_the_instance_is_refused() -> None:
    django = row(runner="django", FAIL_TO_PASS=["test_a (app.tests.T)", "test_b (app.tests.T.test_b)",
                                                "other.tests.U.test_c"], PASS_TO_PASS=[])  # fmt: skip
    assert program_targets(django, tc.choose(django), []) == ["app.tests.T", "other.tests.U"]
    sympy = row(runner="sympy", FAIL_TO_PASS=["sympy/core/tests/test_basic.py:test_a", "sympy/x/tests/test_y.py::test_b"])
    assert program_targets(sympy, tc.choose(sympy), []) == ["sympy/core/tests/test_basic.py", "sympy/x/tests/test_y.py"]
    docstring = row(runner="django", FAIL_TO_PASS=["Regression test for #123."], PASS_TO_PASS=[])
    with pytest.raises(BadInput, match=r"has no test patch and test id 'Regression test for #123\.' names no module"):
        program_targets(docstring, tc.choose(docstring), [])
    bare = row(runner="sympy", FAIL_TO_PASS=["test_immutable"], PASS_TO_PASS=[])
    with pytest.raises(BadInput, match="names no module or file"):
        program_targets(bare, tc.choose(bare), [])
    assert program_targets(bare, tc.choose(bare), ["sympy/core/tests/test_basic.py"]) == ["sympy/core/tests/test_basic.py"]


def test_the_runner_s_harness_files_are_protected_like_the_tests() -> None:
    from pytest_objective_scoring.protect import protected_reason

    guarded = list(tc.RUNNERS["sympy"].protected)
    for path in ("bin/test", "sympy/testing/runtests.py", "sympy/utilities/runtests.py", "sympy/testing/pytest.py"):
        assert protected_reason(path, guarded) is not None, path
    assert protected_reason("sympy/core/basic.py", guarded) is None
    assert protected_reason("tests/runtests.py", list(tc.RUNNERS["django"].protected)) is not None
    assert protected_reason("django/test/testcases.py", list(tc.RUNNERS["django"].protected)) is None  # code under test


def test_the_table_file_is_valid_json_with_one_entry_per_repository_and_version() -> None:
    data = json.loads(tc.SPECS_FILE.read_text(encoding="utf-8"))
    assert data["specs"]["django/django"]["5.0"]["python"] == "3.11"
    assert data["specs"]["sympy/sympy"]["1.7"]["pip_packages"][0] == "mpmath==1.3.0"


# ---------------------------------------------------------------------- the environments file's runner and test_cmd


def _environments(tmp_path, data):  # type: ignore[no-untyped-def]
    from pytest_objective_scoring.environments import load_environments

    path = tmp_path / "envs.json"
    path.write_text(json.dumps(data))
    return load_environments(path)


def test_an_environments_entry_may_name_a_runner_and_a_command_which_override_the_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sys

    from pytest_objective_scoring.environments import assign

    file = _environments(tmp_path, {"django/django@3.0": {"python": sys.executable, "runner": "unittest",
                                                          "test_cmd": "python -m unittest -v -b"},
                                    "sympy/sympy@1.7": sys.executable})  # fmt: skip
    django = row(instance_id="django__django-1", repo="django/django", version="3.0")
    sympy = row(instance_id="sympy__sympy-1", repo="sympy/sympy", version="1.7", FAIL_TO_PASS=["test_a"])
    plain = row(instance_id="x__x-1", repo="sympy/sympy", version="1.7", runner="pytest",
                FAIL_TO_PASS=["t.py::test_a"])  # fmt: skip
    assigned = assign([django, sympy, plain], file, None)
    assert (assigned["django__django-1"].runner, assigned["django__django-1"].test_cmd) == ("unittest", "python -m unittest -v -b")
    assert assigned["django__django-1"].pytest is False  # its interpreter need not have pytest
    assert assigned["sympy__sympy-1"].runner is None and assigned["sympy__sympy-1"].pytest is False  # the table's sympy
    assert assigned["x__x-1"].pytest is True  # the instance's own runner: pytest
    assert assigned["django__django-1"].to_dict()["runner"] == "unittest"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"python": "python3", "runner": "nose"}, "field 'runner': unknown runner 'nose'"),
        ({"python": "python3", "runner": ""}, "field 'runner': expected a non-empty string"),
        ({"python": "python3", "shell": "x"}, "unknown field 'shell': expected python and/or image"),
        ({}, "expected python, image, runner or test_cmd, got none of them"),
    ],
    ids=["unknown-runner", "empty-runner", "unknown-field", "empty"],
)
def test_a_bad_runner_entry_is_one_line_naming_the_key(tmp_path, entry, problem) -> None:  # type: ignore[no-untyped-def]
    from pytest_objective_scoring.environments import EnvironmentsError

    with pytest.raises(EnvironmentsError, match=r"envs.json \['k'\]: " + re.escape(problem)):
        _environments(tmp_path, {"k": entry})


def test_a_runner_only_entry_takes_its_interpreter_from_python_or_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sys

    from pytest_objective_scoring.environments import EnvironmentsError, assign

    file = _environments(tmp_path, {"django/django@3.0": {"runner": "django"}})
    django = row(instance_id="django__django-1", repo="django/django", version="3.0")
    [environment] = assign([django], file, sys.executable).values()
    assert environment.python == sys.executable and environment.runner == "django"
    assert environment.source.endswith("with --python")
    with pytest.raises(EnvironmentsError, match="names a runner or test command but no python or image"):
        assign([django], file, None)


def test_a_command_the_runner_cannot_run_is_refused_before_anything_is_graded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sys

    from pytest_objective_scoring.environments import EnvironmentsError, assign

    file = _environments(tmp_path, {"django/django@3.0": {"python": sys.executable, "test_cmd": "bin/test -C"}})
    with pytest.raises(EnvironmentsError, match="does not run tests/runtests.py"):
        assign([row(instance_id="django__django-1", repo="django/django", version="3.0")], file, None)


def test_a_runner_override_is_part_of_a_job_s_key_and_travels_with_it() -> None:
    import sys

    from pytest_objective_scoring import batch
    from pytest_objective_scoring.environments import Environment

    instance = row(instance_id="django__django-1", repo="django/django", version="3.0")
    settings = {"python": sys.executable, "compat": "strict", "network": False}
    plain = Environment(sys.executable, None, "here")
    override = Environment(sys.executable, None, "here", runner="unittest", test_cmd="python -m unittest -v")
    assert batch.job_key(instance, "m", "", settings, "c", plain) != batch.job_key(instance, "m", "", settings, "c", override)
    assert batch.job_key(instance, "m", "", settings, "c", plain) == batch.job_key(instance, "m", "", settings, "c", None)
    job = batch.Job("k", instance, batch.Prediction("django__django-1", "m", "", batch.HarnessCost(), "<t>"), None, "",
                    sys.executable, None, "envs.json ['k']", "unittest", "python -m unittest -v")  # fmt: skip
    payload = job.payload(settings)
    assert (payload["runner"], payload["test_cmd"]) == ("unittest", "python -m unittest -v")
