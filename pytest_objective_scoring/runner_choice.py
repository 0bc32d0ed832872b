"""Which program runs an instance's tests, with what command, on which targets: chosen by data.

Four runners (:data:`RUNNERS`): ``pytest`` (the default), ``django`` (``tests/runtests.py``),
``sympy`` (``bin/test``) and ``unittest`` (``python -m unittest``). An instance's runner and command
come from, in this order (:func:`choose`):

1. the instance itself: a ``runner`` field (and optionally ``test_cmd``, the command as a shell
   line, SWE-bench's spelling);
2. an override: the ``runner`` / ``test_cmd`` of its ``--environments`` entry, or ``grade --runner``
   / ``--test-cmd``; an override that contradicts the instance's own ``runner`` is refused;
3. the table the package ships (``data/swebench_specs.json``): SWE-bench's specifications of every
   Python repository and version (``repo`` and ``version`` fields of a SWE-bench row), from
   swebench 4.1.0's ``MAP_REPO_VERSION_TO_SPECS_PY`` (``benchmarks/make_swebench_specs.py``);
4. ``pytest``.

The command line is read as SWE-bench's eval script runs it: leading ``NAME=value`` assignments and
the spec's ``export`` lines are the run's environment (``PYTHONWARNINGS`` becomes ``-W`` options:
the interpreter starts isolated and reads no ``PYTHON*`` variable), then the program: a script
(``./tests/runtests.py``, ``bin/test``) or ``python -m MODULE``. For pytest the command is kept as
a record only: the runner runs pytest through its recorder (:mod:`.testrun`).

The targets are SWE-bench's *test directives* (:func:`directives`): the test patch's files without
data files; Django's as module labels (``tests/auth_tests/test_x.py`` -> ``auth_tests.test_x``),
unittest's as module names. Without a test patch they come from the listed ids (:func:`id_targets`).

Pure functions and data; this module never imports pytest.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Iterable, Mapping, Sequence

from .instances import Instance

__all__ = [
    "RUNNERS",
    "CommandError",
    "Runner",
    "RunnerCommand",
    "choose",
    "directives",
    "id_targets",
    "parse_command",
    "spec_for",
    "specs_table",
    "unused_test_cmd",
]

PYTEST: Final = "pytest"
DJANGO: Final = "django"
SYMPY: Final = "sympy"
UNITTEST: Final = "unittest"
COMMAND: Final = "command"  # another language's runner, run by the instance's own test_command (:mod:`.command_spec`)
SPECS_FILE: Final = Path(__file__).with_name("data") / "swebench_specs.json"
# SWE-bench's NON_TEST_EXTS (swebench.harness.constants): test-patch files that are not test modules
NON_TEST_EXTS: Final = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_EXPORT: Final = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_DJANGO_ID: Final = re.compile(r"^(?P<name>[^\s()]+) \((?P<path>[A-Za-z_][\w.]*)\)")


class CommandError(ValueError):
    """A runner or command that cannot be used for an instance: which, where from, what was expected."""


@dataclass(frozen=True)
class Runner:
    """What a runner is: its default command, the files that are part of its judge, and whether
    the environment must have pytest."""

    name: str
    command: str  # the default command line (SWE-bench's for Django and SymPy)
    log: str | None  # the console-log reader of :mod:`.runner_logs` that reads its output
    protected: Mapping[str, str] = field(default_factory=dict)  # path -> why (the repository's test harness)
    needs_pytest: bool = False
    ids: str = ""  # how its test ids are spelled


RUNNERS: Final[Mapping[str, Runner]] = {
    PYTEST: Runner(PYTEST, "pytest -rA", None, needs_pytest=True, ids="pytest node ids (path/to/test_x.py::test_name)"),
    DJANGO: Runner(DJANGO, "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", "django",
                   {"tests/runtests.py": "Django's test runner script",
                    "tests/test_sqlite.py": "the settings Django's tests run with"},
                   ids="unittest descriptions: test_name (app.tests.Class), or a docstring's first line"),  # fmt: skip
    SYMPY: Runner(SYMPY, "bin/test -C --verbose", "sympy",
                  {"bin/test": "SymPy's test runner script",
                   "sympy/testing/runtests.py": "SymPy's test runner (its reporter is what the recorder reads)",
                   "sympy/utilities/runtests.py": "SymPy's test runner before 1.6",
                   "sympy/testing/pytest.py": "SymPy's test helpers (raises, XFAIL, skip)",
                   "sympy/utilities/pytest.py": "SymPy's test helpers before 1.6"},
                  ids="test function names (test_foo), or path/to/test_x.py:test_foo"),  # fmt: skip
    UNITTEST: Runner(UNITTEST, "python -m unittest -v", "django",
                     ids="unittest descriptions: test_name (package.module.Class), or package.module.Class.test_name"),
    COMMAND: Runner(COMMAND, "", None, ids="the report's own ids (docs/runner-languages.md): com.x.FooTest.testBar, "
                    "path/foo.test.js->full name, import/path TestName, binary-id test::path"),
}


@dataclass(frozen=True)
class RunnerCommand:
    """How one instance's tests run."""

    runner: str
    program: tuple[str, ...]  # ``("tests/runtests.py", ARGS...)`` or ``("-m", "unittest", ARGS...)``; () for pytest
    env: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # ``-W`` options (from PYTHONWARNINGS)
    command: str = ""  # the command line as given
    source: str = "default"  # where it came from
    ignored: tuple[str, ...] = ()  # parts of the specification that build environments, not run tests

    @property
    def kind(self) -> Runner:
        return RUNNERS[self.runner]

    @property
    def is_pytest(self) -> bool:
        return self.runner == PYTEST

    def argv(self, python: str, boot: str, targets: Sequence[str]) -> list[str]:
        """The test process's command line (non-pytest runners): the interpreter isolated through
        the boot module, then the program with its targets."""
        options = [item for warning in self.warnings for item in ("-W", warning)]
        return [python, "-I", "-S", "-B", *options, boot, *self.program, *targets]

    def to_dict(self) -> dict[str, Any]:
        return {"runner": self.runner, "command": self.command, "program": list(self.program), "env": dict(self.env),
                "warnings": list(self.warnings), "source": self.source, "ignored": list(self.ignored)}  # fmt: skip


@functools.lru_cache(maxsize=1)
def specs_table() -> Mapping[str, Any]:
    """The shipped table (``data/swebench_specs.json``): ``{"source": ..., "specs": {repo: {version: spec}}}``."""
    return json.loads(SPECS_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def spec_for(repo: Any, version: Any) -> Mapping[str, Any] | None:
    """SWE-bench's specification of ``repo`` at ``version``, or None."""
    if not isinstance(repo, str) or version is None:
        return None
    versions = specs_table()["specs"].get(repo)
    return None if versions is None else versions.get(str(version))


def parse_command(runner: str, line: str, exports: Iterable[str] = (), source: str = "") -> RunnerCommand:
    """A test command line as SWE-bench's eval script runs it (leading ``NAME=value`` assignments,
    then the program), with the ``export NAME=value`` lines of its specification, read for
    ``runner``. Raises :class:`CommandError` naming ``source`` when it is not that runner's."""
    where = f"{source}: " if source else ""
    if runner not in RUNNERS:
        raise CommandError(f"{where}unknown runner {runner!r}: expected one of {', '.join(RUNNERS)}")
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise CommandError(f"{where}test command {line!r} cannot be read as a shell line ({exc})") from None
    env: dict[str, str] = {}
    ignored: list[str] = []
    for export in exports:
        found = _EXPORT.match(export)
        if found is None:
            ignored.append(export)
            continue
        words_of_value = shlex.split(found.group(2)) or [""]
        env[found.group(1)] = words_of_value[0]
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    warnings = tuple(w for w in env.pop("PYTHONWARNINGS", "").split(",") if w)
    for name in [n for n in env if n.startswith("PYTHON")]:
        ignored.append(f"{name}={env.pop(name)} (the interpreter starts isolated: it reads no PYTHON* variable; "
                       "output is UTF-8 whatever the locale)")  # fmt: skip
    if runner == PYTEST:
        return RunnerCommand(PYTEST, (), env, warnings, line, source, tuple(ignored))
    if runner == COMMAND:  # a shell line run as it is, in the image (:mod:`.command_spec`)
        return RunnerCommand(COMMAND, (), {}, (), line, source)
    if words and words[0] in ("python", "python3") or (words and re.fullmatch(r"python3?\.\d+", words[0])):
        words = words[1:]
    if not words:
        raise CommandError(f"{where}test command {line!r} names no program: expected {RUNNERS[runner].command!r}")
    if words[0] == "-m":
        if len(words) < 2:
            raise CommandError(f"{where}test command {line!r}: -m names no module")
        program = tuple(words)
    else:
        script = words[0].removeprefix("./")
        if script.startswith("/") or ".." in script.split("/"):
            raise CommandError(f"{where}test command {line!r}: the script must be a path inside the repository")
        program = (script, *words[1:])
    expected = {DJANGO: "tests/runtests.py", SYMPY: "bin/test"}.get(runner)
    if expected is not None and program[0] != expected:
        raise CommandError(f"{where}test command {line!r} does not run {expected}: expected the {runner} runner's "
                           f"command ({RUNNERS[runner].command!r})")  # fmt: skip
    return RunnerCommand(runner, program, env, warnings, line, source, tuple(ignored))


def _field(fields: Mapping[str, Any], name: str, where: str) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise CommandError(f"{where}: field {name!r}: expected a non-empty string, got {value!r}")
    return value.strip()


def unused_test_cmd(test_cmd: str | None, command: RunnerCommand, option: str) -> str | None:
    """Why a test command (``--test-cmd``, an environments file's ``test_cmd``: ``option``) would not be
    used for the command :func:`choose` chose, or None: never ignored silently. Under pytest the
    runner runs pytest itself (its recorder, the repository's configuration pinned, the listed tests'
    files): a command line's options would change what is judged, so it is refused, not honoured; and
    an instance that names its own runner or test command wins over it (its data says how its tests
    run)."""
    if test_cmd is None:
        return None
    if command.is_pytest:
        return (f"{option} {test_cmd!r}: the pytest runner runs pytest itself (its recorder, the repository's "
                "configuration pinned, the listed tests' files), so a test command would be ignored; it is for the "
                "django, sympy and unittest runners (name one as the runner: --runner or the entry's 'runner', or drop "
                "the test command)")  # fmt: skip
    if command.command != test_cmd:
        return (f"{option} {test_cmd!r}: not used: {command.source} says how the tests run ({command.command!r}); "
                "drop the test command, or the instance's own 'runner'/'test_cmd' fields")  # fmt: skip
    return None


def choose(instance: Instance, runner: str | None = None, test_cmd: str | None = None,
           override_source: str = "") -> RunnerCommand:  # fmt: skip
    """The command that runs ``instance``'s tests: its own ``runner``/``test_cmd`` fields, else the
    override (``runner``/``test_cmd`` from the environments file or the command line, named by
    ``override_source``), else the shipped SWE-bench table for its ``repo@version``, else pytest."""
    where = instance.source
    own_runner = _field(instance.fields, "runner", where)
    own_cmd = _field(instance.fields, "test_cmd", where)
    if own_runner is not None and own_runner not in RUNNERS:
        raise CommandError(f"{where}: field 'runner': unknown runner {own_runner!r}: expected one of {', '.join(RUNNERS)}")
    if own_runner is not None and runner is not None and runner != own_runner:
        raise CommandError(f"{where}: field 'runner' is {own_runner!r} but {override_source} says {runner!r}: "
                           "remove one of them")  # fmt: skip
    spec = spec_for(instance.fields.get("repo"), instance.fields.get("version"))
    spec_source = f"SWE-bench's specification of {instance.fields.get('repo')}@{instance.fields.get('version')} " \
                  f"({specs_table()['source']['package']})"  # fmt: skip
    exports: Sequence[str] = spec.get("eval_commands", ()) if spec is not None else ()
    if own_runner == COMMAND:
        line = _field(instance.fields, "test_command", where)
        if line is None:
            raise CommandError(f"{where}: field 'test_command': the command runner needs the shell line that runs the "
                               "tests (and 'language' and 'report': docs/runner-languages.md)")  # fmt: skip
        return parse_command(COMMAND, line, (), f"{where}: the instance's own fields")
    if runner == COMMAND:
        raise CommandError(f"{override_source or 'the override'}: the command runner is named by the instance itself "
                           "('runner': 'command' with its 'language', 'test_command' and 'report')")  # fmt: skip
    if own_runner is not None or own_cmd is not None:
        name = own_runner or (spec["runner"] if spec is not None else PYTEST)
        line = own_cmd or (spec["test_cmd"] if spec is not None and spec["runner"] == name else RUNNERS[name].command)
        return parse_command(name, line, exports if spec is not None and spec["runner"] == name else (),
                             f"{where}: the instance's own fields")  # fmt: skip
    if runner is not None or test_cmd is not None:
        name = runner or (spec["runner"] if spec is not None else PYTEST)
        line = test_cmd or (spec["test_cmd"] if spec is not None and spec["runner"] == name else RUNNERS[name].command)
        return parse_command(name, line, exports if spec is not None and spec["runner"] == name else (),
                             override_source or "the override")  # fmt: skip
    if spec is not None:
        return parse_command(spec["runner"], spec["test_cmd"], exports, spec_source)
    return RunnerCommand(PYTEST, (), {}, (), RUNNERS[PYTEST].command, "default (no runner named, no SWE-bench specification)")


def directives(command: RunnerCommand, test_patch_files: Sequence[str]) -> list[str]:
    """SWE-bench's test directives: the test patch's files that are not data files, as the runner
    names them (Django: module labels below ``tests/``; unittest: module names; SymPy: paths)."""
    found: list[str] = []
    for path in test_patch_files:
        if any(path.endswith(ext) for ext in NON_TEST_EXTS):
            continue
        if command.runner == DJANGO:
            label = path.removesuffix(".py").removeprefix("tests/").replace("/", ".")
        elif command.runner == UNITTEST:
            if not path.endswith(".py"):
                continue
            label = path.removesuffix(".py").replace("/", ".")
        else:
            label = path
        if label not in found:
            found.append(label)
    return found


def _class_path(test_id: str) -> str | None:
    found = _DJANGO_ID.match(test_id)
    if found is not None:
        name, path = found.group("name"), found.group("path")
        return path.removesuffix("." + name) if path.endswith("." + name) else path
    if re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*){2,}", test_id):  # app.tests.Class.test_name
        return test_id.rpartition(".")[0]
    return None


def id_targets(command: RunnerCommand, listed: Iterable[str]) -> tuple[list[str], list[str]]:
    """Targets named by the listed ids themselves (an instance without a test patch): Django's and
    unittest's class labels, SymPy's files; and the ids that name no place (a docstring, a bare
    SymPy name)."""
    targets: list[str] = []
    unplaced: list[str] = []
    for test_id in listed:
        if command.runner == SYMPY:
            target = test_id.partition("::")[0] if "::" in test_id else test_id.rpartition(":")[0]
            target = target if target.endswith(".py") else ""
        else:
            target = _class_path(test_id) or ""
        if not target:
            unplaced.append(test_id)
        elif target not in targets:
            targets.append(target)
    return targets, unplaced


def listed_files(command: RunnerCommand, listed: Iterable[str]) -> list[str]:
    """The files the listed ids name (protected like the test patch's): pytest's node ids' files,
    SymPy's ``path:name`` files; Django's and unittest's ids name modules, not files."""
    if command.is_pytest:
        return list(dict.fromkeys(t.split("::", 1)[0] for t in listed))
    if command.runner == SYMPY:
        return id_targets(command, listed)[0]
    if command.runner == COMMAND:  # jest's ids name their file (path/x.test.js->title): it holds a listed test
        return list(dict.fromkeys(t.split("->", 1)[0] for t in listed if "->" in t and "/" in t.split("->", 1)[0]))
    return []
