"""An instance whose tests another language's runner runs (``"runner": "command"``): what to run, where
its report lands, and which files play the judge's part in its ecosystem.

Multi-SWE-bench, SWE-PolyBench and SWE-bench-Live hold Java, JavaScript/TypeScript, Go and Rust tasks.
Such an instance names, besides the SWE-bench fields::

    "runner": "command",
    "language": "go",                                   # java, javascript, typescript, go or rust
    "test_command": "go test -json ./...",              # a shell line, run in the repository (/testbed)
    "report": {"format": "go-test-json", "path": "-"},  # the console ("-") or report files (globs)
    "build_command": "go vet ./..."                     # optional: compiled before any test runs

(an ``--environments`` entry may give the same fields for the instances it covers). The formats
(:data:`FORMATS`) are the JUnit XML of Maven Surefire, jest-junit, go-junit-report and cargo-nextest
(read by :mod:`.foreign`), ``go test -json``'s event stream, jest's ``--json`` report and libtest's
JSON (``cargo test -- -Z unstable-options --format json``), read by :mod:`.command_reports`.

**Protection by role** (:func:`language_reason`): the files of each ecosystem that decide which tests
run and what their results say are the judge's, dropped from a candidate whatever their name says
they are (``docs/runner-languages.md`` lists each with why). What cannot be protected by file is said
there too: Rust's unit tests live in ``#[cfg(test)]`` modules inside source files, and a Go package's
tests may sit beside its code; a test patch's change to such a *mixed* file is applied over the
candidate's version of it, and where the two cannot both apply the test patch's version wins.

Pure functions and data; this module never imports pytest.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["FORMATS", "LANGUAGES", "CommandSpec", "SpecError", "command_spec", "language_reason", "role_protected"]

LANGUAGES: Final = ("java", "javascript", "typescript", "go", "rust")
CONSOLE: Final = "-"  # the report is the run's console output (its standard output and error)
# format -> (the reader, what the file is, the languages it is written for)
FORMATS: Final[Mapping[str, tuple[str, str]]] = {
    "junit-surefire": ("surefire", "Maven Surefire / Failsafe's TEST-*.xml"),
    "junit-jest": ("jest", "jest-junit's XML"),
    "junit-go": ("go", "go-junit-report's XML"),
    "junit-nextest": ("nextest", "cargo-nextest's JUnit XML"),
    "go-test-json": ("go", "go test -json's event stream"),
    "jest-json": ("jest", "jest --json's report"),
    "libtest-json": ("libtest", "libtest's JSON events (cargo test -- -Z unstable-options --format json)"),
}
MAX_COMMAND: Final = 8192  # characters of a test or build command


class SpecError(ValueError):
    """A command instance's fields that cannot be run: which field, what was expected."""


@dataclass(frozen=True)
class CommandSpec:
    """How a command instance's tests run and where their report is read."""

    language: str
    test_command: str
    report_format: str
    report_paths: tuple[str, ...]  # globs relative to the repository, or (CONSOLE,)
    build_command: str | None = None
    source: str = "the instance's own fields"

    @property
    def reader(self) -> str:
        return FORMATS[self.report_format][0]

    @property
    def from_console(self) -> bool:
        return self.report_paths == (CONSOLE,)

    def to_dict(self) -> dict[str, Any]:
        return {"runner": "command", "language": self.language, "test_command": self.test_command,
                "report": {"format": self.report_format, "path": list(self.report_paths)},
                "build_command": self.build_command, "source": self.source}  # fmt: skip


def _text(fields: Mapping[str, Any], name: str, where: str, required: bool = True) -> str | None:
    value = fields.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: field {name!r}: expected a non-empty shell line, got {value!r}")
    if len(value) > MAX_COMMAND or "\x00" in value:
        raise SpecError(f"{where}: field {name!r}: a shell line of at most {MAX_COMMAND} characters without NUL")
    try:
        shlex.split(value)
    except ValueError as exc:
        raise SpecError(f"{where}: field {name!r}: {value!r} cannot be read as a shell line ({exc})") from None
    return value.strip()


def _paths(value: Any, where: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(p, str) and p.strip() for p in items):
        raise SpecError(f"{where}: field 'report.path': expected \"-\" (the console) or a path or glob relative to "
                        f"the repository (or a list of them), got {value!r}")  # fmt: skip
    paths = tuple(p.strip() for p in items)
    if CONSOLE in paths and len(paths) > 1:
        raise SpecError(f"{where}: field 'report.path': \"-\" (the console) cannot be read beside files")
    for path in paths:
        if path != CONSOLE and (path.startswith("/") or ".." in path.split("/") or "\\" in path):
            raise SpecError(f"{where}: field 'report.path': {path!r} must be relative to the repository, inside it")
    return paths


def command_spec(fields: Mapping[str, Any], where: str, override: Mapping[str, Any] | None = None,
                 override_source: str = "") -> CommandSpec:  # fmt: skip
    """The spec of a ``"runner": "command"`` instance: its own fields, each missing one taken from
    ``override`` (an ``--environments`` entry); :class:`SpecError` names the field and what was expected."""
    merged = {**(override or {}), **{k: v for k, v in fields.items() if v is not None}}
    language = merged.get("language")
    if language not in LANGUAGES:
        raise SpecError(f"{where}: field 'language': expected one of {', '.join(LANGUAGES)}, got {language!r} (it "
                        "decides which files are the tests' and their runner's, protected from a candidate)")  # fmt: skip
    report = merged.get("report")
    if not isinstance(report, Mapping) or set(report) - {"format", "path"}:
        raise SpecError(f"{where}: field 'report': expected an object {{\"format\": ..., \"path\": ...}} (formats: "
                        f"{', '.join(FORMATS)})")  # fmt: skip
    if report.get("format") not in FORMATS:
        raise SpecError(f"{where}: field 'report.format': expected one of {', '.join(FORMATS)}, got {report.get('format')!r}")
    paths = _paths(report.get("path", CONSOLE), where)
    test_command = _text(merged, "test_command", where)
    assert test_command is not None
    source = override_source if override and not any(k in fields for k in ("test_command", "report")) else \
        "the instance's own fields"  # fmt: skip
    return CommandSpec(str(language), test_command, str(report["format"]), paths,
                       _text(merged, "build_command", where, required=False), source)  # fmt: skip


# ----------------------------------------------------------------------- protection by role

_JS: Final = r"(js|jsx|mjs|cjs|ts|tsx|mts|cts)"
# (pattern over the repository-relative path, why): the first that matches says why a path is the judge's
_ROLES: Final[Mapping[str, tuple[tuple[re.Pattern[str], str], ...]]] = {
    "java": (
        (re.compile(r"(^|/)src/test/"), "test sources and resources (Maven's src/test/)"),
        (re.compile(r"(^|/)test/.*/[^/]*(Test|Tests|TestCase|IT)\.(java|kt|groovy)$|(^|/)test/(.*/)?Test[^/]*\.(java|kt|groovy)$"),
         "a test class (Surefire's and Failsafe's includes, in a test source folder)"),
        (re.compile(r"(^|/)(org/junit|junit/framework|org/hamcrest|org/opentest4j|org/assertj|org/mockito|org/testng)/"),
         "a class in a test framework's package: on the classpath before the framework's own, it would replace it"),
        (re.compile(r"(^|/)META-INF/services/(javax\.annotation\.processing\.Processor|org\.testng\.)"),
         "an annotation processor or test framework extension: it runs while the tests are compiled or run"),
        (re.compile(r"(^|/)pom\.xml$"), "the Maven build: Surefire's settings, test dependencies, skipped tests"),
        (re.compile(r"(^|/)(build|settings)\.gradle(\.kts)?$|(^|/)gradle\.properties$"), "the Gradle build and its test task"),
        (re.compile(r"(^|/)\.mvn/|(^|/)(mvnw|gradlew)(\.cmd)?$|(^|/)gradle/wrapper/"), "the build tool's configuration or wrapper"),
        (re.compile(r"(^|/)junit-platform\.properties$|(^|/)META-INF/services/org\.junit\."), "JUnit's configuration or extensions"),
    ),
    "javascript": (
        (re.compile(r"(^|/)__tests__/|(^|/)__mocks__/|(^|/)__snapshots__/|\.snap$"), "jest's test, mock and snapshot folders"),
        (re.compile(rf"(^|/)(setupTests|setup-tests|test-setup|jest[.-]setup|jest[.-]global-?(setup|teardown))\.{_JS}$"),
         "a test setup file (jest's setupFiles, globalSetup)"),
        (re.compile(rf"\.(test|spec)\.{_JS}$"), "a test file (jest's testMatch)"),
        (re.compile(r"(^|/)(test|tests)/"), "below a test folder"),
        (re.compile(rf"(^|/)(jest|vitest|vite|karma|babel)\.(config|setup)[^/]*\.({_JS[1:-1]}|json)$|(^|/)\.babelrc[^/]*$|(^|/)\.mocharc[^/]*$"),
         "the test runner's or its transform's configuration"),
        (re.compile(r"(^|/)package\.json$"), "package.json: the test script, jest's configuration, the dependencies"),
        (re.compile(r"(^|/)(package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|\.npmrc|\.yarnrc[^/]*)$"),
         "the installed dependencies' lock or the package manager's configuration"),
        (re.compile(r"(^|/)tsconfig[^/]*\.json$"), "TypeScript's configuration (ts-jest compiles the tests with it)"),
        (re.compile(r"(^|/)node_modules/"), "installed dependencies: the test runner itself"),
    ),
    "go": (
        (re.compile(r"_test\.go$"), "a Go test file (*_test.go)"),
        (re.compile(r"(^|/)testdata/"), "test data (Go's testdata/)"),
        (re.compile(r"(^|/)(go\.mod|go\.sum|go\.work|go\.work\.sum)$"), "the module's definition and its dependencies' sums"),
        (re.compile(r"(^|/)vendor/"), "vendored dependencies (the test helpers among them)"),
    ),
    "rust": (
        (re.compile(r"(^|/)(tests|benches)/"), "integration tests or benchmarks (Cargo's tests/ and benches/)"),
        (re.compile(r"(^|/)Cargo\.(toml|lock)$"), "the crate's manifest: test targets, features, dependencies"),
        (re.compile(r"(^|/)\.cargo(/|$)|(^|/)\.config/nextest\.toml$|(^|/)rust-toolchain(\.toml)?$"),
         "Cargo's, nextest's or the toolchain's configuration"),
        (re.compile(r"^(?!(.*/)?src/)(.*/)?build\.rs$"), "a build script: it runs before the tests and decides what is compiled"),
        (re.compile(r"(^|/)snapshots/[^/]*\.snap(\.new)?$"), "a snapshot the tests compare against (insta)"),
        (re.compile(r"(^|/)vendor/"), "vendored dependencies"),
    ),
}
ROLES: Final = {**_ROLES, "typescript": _ROLES["javascript"]}
TEST_FILES: Final[Mapping[str, re.Pattern[str]]] = {  # what is a test file by name: the rest of a test patch is mixed
    "java": re.compile(r"(^|/)src/test/|(^|/)test/.*(Test|Tests|TestCase|IT)\.(java|kt|groovy)$"),
    "javascript": re.compile(rf"(^|/)(__tests__|__mocks__|test|tests)/|\.(test|spec)\.{_JS}$"),
    "typescript": re.compile(rf"(^|/)(__tests__|__mocks__|test|tests)/|\.(test|spec)\.{_JS}$"),
    "go": re.compile(r"_test\.go$|(^|/)testdata/"),
    "rust": re.compile(r"(^|/)(tests|benches)/"),
}


def language_reason(language: str, path: str) -> str | None:
    """Why ``path`` plays the judge's part in ``language``'s ecosystem, or None."""
    for pattern, why in ROLES.get(language, ()):
        if pattern.search(path):
            return why
    return None


def role_protected(language: str, test_patch_files: list[str]) -> tuple[list[str], list[str]]:
    """The test patch's files split into test files by role (protected, reset, then patched) and *mixed*
    ones (source files that hold tests too: Rust's ``#[cfg(test)]`` modules), whose test-patch changes
    go over the candidate's version of them."""
    pattern = TEST_FILES[language]
    tests = [f for f in test_patch_files if pattern.search(f) or language_reason(language, f)]
    return tests, [f for f in test_patch_files if f not in tests]
