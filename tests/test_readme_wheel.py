"""The README, run as a reader runs it: its walk-through from the built wheel, installed in a fresh
virtualenv, in a fresh folder outside the source tree; its quick start as CI runs it; and the
``examples`` command (and ``demo --ledger``) the walk-through starts with.

A command of the walk-through is a line of a ```console block that starts with ``$ `` (continued on
the lines after it while a line ends with ``\\``); its documented exit status is its trailing
``# exit N`` comment, else 0. A line without ``$`` is output, or a command the README says is not
part of the walk-through (a container engine, a Dask cluster, SWE-bench's data).

The fresh virtualenv gets the package from the wheel alone (``--no-deps``) and its third-party
dependencies from this interpreter's site-packages through a ``.pth`` line, which adds that folder to
``sys.path`` after the virtualenv's own (the ``.pth`` files inside it are not run: no editable
install of the checkout is ever imported). The walk-through asserts the package it imports is the
wheel's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import FIXTURES, ROOT
from .runner_helpers import run_cli

README = ROOT / "README.md"
STATUS = re.compile(r"#\s*exit\s+(\d+)\b")


@dataclass(frozen=True)
class Command:
    text: str  # as bash runs it (continuation lines included)
    status: int  # the documented exit status
    line: int  # where it starts in the README (1-based)


def console_blocks(markdown: str) -> list[tuple[int, list[str]]]:
    """Every ```console block: (the line its first line is on, its lines)."""
    blocks: list[tuple[int, list[str]]] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        fence = lines[index].strip()
        if fence.startswith("```"):
            language = fence[3:].strip()
            body_start = index + 1
            index += 1
            while index < len(lines) and lines[index].strip() != "```":
                index += 1
            if language == "console":
                blocks.append((body_start + 1, lines[body_start:index]))
        index += 1
    return blocks


def walkthrough(markdown: str) -> list[Command]:
    """The README's walk-through: every ``$`` command of its console blocks, in order."""
    commands = []
    for first, lines in console_blocks(markdown):
        index = 0
        while index < len(lines):
            line = lines[index]
            if not line.startswith("$ "):
                index += 1
                continue
            start = first + index
            parts = [line[2:]]
            while parts[-1].endswith("\\") and index + 1 < len(lines):
                index += 1
                parts.append(lines[index])
            found = STATUS.search(parts[-1])
            commands.append(Command("\n".join(parts), int(found.group(1)) if found else 0, start))
            index += 1
    return commands


def one_line_refusal(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit 2 with one line on standard error, holding each fragment."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def quick_start(markdown: str) -> list[list[str]]:
    """The console blocks of the README's Quick start section."""
    section = markdown.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [lines for _, lines in console_blocks(section)]


# ---------------------------------------------------------------- the README's shape (fast)


def test_the_walkthrough_parser_reads_prompts_continuations_and_statuses() -> None:
    sample = (
        "```console\n$ one --a  # exit 1: why\noutput line\n$ two \\\n    --b  # exit 3\n$ three\n```\n"
        "\n```console\nnot a command\n```\n```text\n$ not console\n```"
    )
    assert walkthrough(sample) == [Command("one --a  # exit 1: why", 1, 2), Command("two \\\n    --b  # exit 3", 3, 4),
                                   Command("three", 0, 6)]  # fmt: skip


def test_the_quick_start_is_two_commands_and_the_second_is_what_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = quick_start(text)
    assert [len([line for line in block if line.strip()]) for block in blocks] == [1, 1], blocks
    (install_and_demo,), (suite,) = ([line for line in b if line.strip()] for b in blocks)
    assert install_and_demo == "pip install . && objective-score demo"
    assert suite == "pip install -e '.[test]' && python -m pytest -n 3"
    assert suite in (ROOT / ".ci" / "run").read_text(encoding="utf-8"), ".ci/run runs the README's test command"
    assert not [c for c in walkthrough(text.split("## Quick start", 1)[1].split("\n## ", 1)[0])], \
        "the quick start runs from the checkout: none of its commands is part of the walk-through"


def test_the_walkthrough_covers_the_commands_the_readme_promises() -> None:
    commands = walkthrough(README.read_text(encoding="utf-8"))
    texts = [" ".join(c.text.split()) for c in commands]
    assert texts[:3] == ["objective-score examples objective-examples", "cd objective-examples",
                         "objective-score demo --ledger demo.sqlite"]  # fmt: skip
    for needed in ("objective-score ledger show --ledger demo.sqlite", "objective-score costs --ledger demo.sqlite",
                   "objective-score receipt 1 --ledger demo.sqlite"):  # fmt: skip
        assert needed in texts, needed
    used = {t.split()[1] for t in texts if t.startswith("objective-score ")}
    assert used >= {"examples", "demo", "ledger", "costs", "receipt", "scorecard", "grade", "grade-batch", "audit",
                    "sets", "ab", "grade-samples", "harbor"}, used  # fmt: skip
    assert {c.status for c in commands} == {0, 1, 2, 3}, "grade's four exit statuses are each shown once at least"
    assert not [t for t in texts if "fixtures/" in t], "the walk-through reads the examples folder, not the checkout"
    assert not [t for t in texts if re.match(r"(\S+/)?pytest\b", t)], "python -m pytest: the virtualenv's pytest"


def test_the_option_table_names_every_plugin_option_and_exactly_the_ini_keys_there_are() -> None:
    from pytest_objective_scoring import plugin_options

    class Recorder:
        @staticmethod
        def addoption(name: str, **more: object) -> None:
            flags.append(name)

    flags: list[str] = []
    plugin_options.add_plugin_options(Recorder)
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(--objective-[a-z-]+)[=`][^|]*\| (`[a-z_]+`|none) \|", text, flags=re.MULTILINE)
    assert sorted(flag for flag, _ in rows) == sorted(flags), "one row per option of the plugin"
    ini = {flag: key.strip("`") for flag, key in rows if key != "none"}
    assert sorted(ini.values()) == sorted(name for name, _, _ in plugin_options.PLUGIN_INI), "the ini keys there are"
    assert all(key == flag[2:].replace("-", "_") for flag, key in ini.items()), "each ini key mirrors its flag"
    numbers = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    said = " ".join(text.split("| `--objective-compute-rate", 1)[1].split("\n\n", 2)[1].split())
    assert said.startswith(f"{numbers[len(ini)].capitalize()} of the {numbers[len(rows)]} options have an ini key"), said
    without = said.split(";", 1)[1].split("have none", 1)[0]
    assert sorted(re.findall(r"`(--objective-[a-z-]+)`", without)) == sorted(f for f, k in rows if k == "none"), said
    from pytest_objective_scoring import settings

    for variable in (plugin_options.ENV_INSTANCE, settings.ENV_OUT, settings.ENV_GATE, settings.ENV_LEDGER):
        assert f"`${variable}" in text, f"the option table names ${variable}"
    gate = next(line for line in text.splitlines() if line.startswith("| `--objective-gate`"))
    assert "0 resolved, 1 not resolved, 6 no verdict" in gate and "0 resolved, 1 not resolved, 6 no verdict" in \
        plugin_options.HELP_GATE, "the gate's exit statuses, as --help says them"


# ---------------------------------------------------------------- objective-score examples (fast)


def test_examples_help_explains_what_it_writes_and_refuses() -> None:
    result = run_cli("examples", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for fragment in ("DIR", "--json", "must not exist yet", "empty folder", "refused (exit 2)", "walk-through"):
        assert fragment in text, fragment


def test_examples_writes_the_bundle_and_lists_it(tmp_path: Path) -> None:
    from pytest_objective_scoring.commands.examples import BUNDLE, bundle_files

    target = tmp_path / "ex"
    result = run_cli("examples", str(target), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == report["files"] == bundle_files(FIXTURES)
    assert [w["path"] for w in report["written"]] == [entry for entry, _ in BUNDLE]
    assert sum(w["files"] for w in report["written"]) == len(written)
    assert not [f for f in written if "__pycache__" in f or f.endswith(".pyc")]
    assert os.access(target / "repos" / "sympy-mini" / "bin" / "test", os.X_OK), "a runner script stays executable"
    assert (target / "repos" / "intervals" / "src" / "intervals" / "interval.py").stat().st_mode & 0o200
    empty = tmp_path / "empty"
    empty.mkdir()  # an empty folder is fine too; the table lists each entry
    result = run_cli("examples", str(empty))
    assert result.returncode == 0, result.stderr
    assert f"files written to {empty}" in result.stdout and "harbor/fix-csv-total/" in result.stdout


def test_examples_refuses_a_folder_that_holds_anything_a_file_and_a_missing_parent(tmp_path: Path) -> None:
    held = tmp_path / "held"
    held.mkdir()
    (held / "mine.txt").write_text("keep me")
    one_line_refusal(run_cli("examples", str(held)), f"{held}: not empty (1 entry: mine.txt)")
    assert sorted(p.name for p in held.iterdir()) == ["mine.txt"], "nothing written beside it"
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    one_line_refusal(run_cli("examples", str(a_file)), f"{a_file}: is a file")
    missing = tmp_path / "missing" / "ex"
    one_line_refusal(run_cli("examples", str(missing)), "does not exist (missing folders are not created")
    assert not missing.parent.exists()


def test_demo_refuses_a_ledger_that_is_a_folder_before_grading(tmp_path: Path) -> None:
    started = time.perf_counter()
    result = run_cli("demo", "--ledger", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "[1/" not in result.stderr and time.perf_counter() - started < 30, "refused before any grading"


@pytest.mark.slow
def test_demo_with_a_ledger_records_runs_the_next_commands_read(tmp_path: Path) -> None:
    few = tmp_path / "few"  # one project's five candidates: the ledger, not every grading again
    shutil.copytree(FIXTURES / "repos" / "intervals", few / "repos" / "intervals",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copytree(FIXTURES / "patches" / "intervals", few / "patches" / "intervals")
    (few / "instances").mkdir()
    shutil.copy(FIXTURES / "instances" / "intervals.json", few / "instances")
    ledger = tmp_path / "demo.sqlite"
    result = run_cli("demo", "--fixtures", str(few), "--ledger", str(ledger), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["results"]
    seqs = [row["ledger_seq"] for row in rows]
    assert seqs[0] == 1 and seqs == sorted(seqs) and len(set(seqs)) == 5
    shown = json.loads(run_cli("ledger", "show", "--ledger", str(ledger), "--json").stdout)
    assert [row["seq"] for row in shown] == seqs
    assert [row["resolved"] for row in shown] == [row["resolved"] for row in rows]
    receipt = json.loads(run_cli("receipt", "1", "--ledger", str(ledger)).stdout)
    assert receipt["run"]["harness"] == "demo-gold" and receipt["run"]["resolved"] == "resolved"
    assert receipt["disposition"] and receipt["task_audit"] == "missing"
    costs = json.loads(run_cli("costs", "--ledger", str(ledger), "--json").stdout)
    [benchmark] = costs["benchmarks"]
    assert benchmark["benchmark"] == "demo"
    assert {h["harness"] for h in benchmark["harnesses"]} == {f"demo-{c}" for c in ("gold", "break_p2p", "empty",
                                                                                   "tamper", "noapply")}  # fmt: skip
    assert run_cli("scorecard", "diff", "harness:demo-empty", "harness:demo-gold", "--ledger", str(ledger)).returncode == 0


# ---------------------------------------------------------------- the walk-through, from the wheel


def _without(variables: dict[str, str]) -> dict[str, str]:
    """The environment a reader's shell would have: none of this test run's pytest or Python settings,
    and no folder of this interpreter's scripts on the PATH (its pytest, its objective-score)."""
    here = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    env = {k: v for k, v in variables.items()
           if not k.startswith(("PYTEST_", "PYTHON", "COV_", "VIRTUAL_ENV", "OBJECTIVE_SCORE_"))}  # fmt: skip
    env["PATH"] = os.pathsep.join(p for p in variables.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p not in here)
    return env


def _run(args: list[str], **more: Any) -> subprocess.CompletedProcess[str]:
    """``args`` run to its end, its output captured as text; its exit status is the caller's to check."""
    return subprocess.run(args, capture_output=True, text=True, check=False, **more)


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the package from its built wheel alone."""
    place = tmp_path_factory.mktemp("wheel")
    source = place / "source"  # built from a copy: the build leaves nothing in the checkout
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".objective-scoring")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("pytest_objective_scoring", "fixtures"):  # demo_fixtures is a link to ../fixtures: kept a link
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=ignore)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(place / "dist")],
                 timeout=600)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (place / "dist").glob("*.whl")
    venv = place / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=120)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                      str(wheel)], timeout=600)  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    asked = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout=60)
    assert asked.returncode == 0, asked.stderr
    deps = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))  # this interpreter's
    (Path(asked.stdout.strip()) / "readme-wheel-deps.pth").write_text("".join(f"{d}\n" for d in deps), encoding="utf-8")
    return venv


@pytest.mark.slow
def test_every_walkthrough_command_of_the_readme_runs_from_the_wheel(wheel_venv: Path, tmp_path: Path) -> None:
    venv = wheel_venv.resolve()
    env = _without(dict(os.environ))
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv), COLUMNS="160")
    probe = _run(["python", "-c", "import sys, pytest_objective_scoring as p; print(p.__file__); print(sys.prefix)"],
                 env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    module, prefix = probe.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(prefix) == venv, "the wheel's package, in the fresh virtualenv"
    assert shutil.which("objective-score", path=env["PATH"]) == str(venv / "bin" / "objective-score")

    commands = walkthrough(README.read_text(encoding="utf-8"))
    cwd = tmp_path / "reader"
    cwd.mkdir()
    assert not cwd.resolve().is_relative_to(ROOT) and not list(cwd.iterdir()), "a fresh folder outside the source tree"
    took = []
    for command in commands:
        assert not cwd.resolve().is_relative_to(ROOT), command
        moved = re.fullmatch(r"cd (\S+)", command.text.strip())
        if moved:
            cwd = (cwd / moved.group(1)).resolve()
            assert cwd.is_dir(), f"README line {command.line}: cd {moved.group(1)}: no such folder"
            continue
        started = time.perf_counter()
        done = _run(["bash", "-c", command.text], cwd=cwd, env=env, timeout=900)
        took.append((round(time.perf_counter() - started, 1), command.line))
        assert done.returncode == command.status, (
            f"README line {command.line}: {command.text}\nexit {done.returncode}, documented {command.status}\n"
            f"--- stdout (end)\n{done.stdout[-3000:]}\n--- stderr (end)\n{done.stderr[-3000:]}"
        )
        assert "Traceback" not in done.stderr, (command.text, done.stderr[-3000:])
    print("walk-through seconds per README line:", sorted(took, reverse=True)[:8])

    # the bundle the wheel carries is the one the checkout's examples are: pyproject's package data holds all of it
    from pytest_objective_scoring.commands.examples import bundle_files

    again = _run(["objective-score", "examples", "again", "--json"], cwd=tmp_path, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert Path(report["source"]).is_relative_to(venv)
    assert report["files"] == bundle_files(FIXTURES), "files of the bundle missing from the wheel (package data)"
