"""The package's layout (issue 17): no import loop, nothing imports the command line back, and every
module says what it owns.

The import graph is read from the source with :mod:`ast`, imports inside functions included (a
lazy import back up is still a loop in the design, only a slower one to notice); imports under
``if TYPE_CHECKING:`` are left out, as they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "pytest_objective_scoring"
NAME = PACKAGE.name
LONG = 800  # lines; a longer module says why in its docstring
LONG_NOTE = "Why over 800 lines:"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "demo_fixtures" in parts:  # the demo's small projects under test, not this package's code
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``name`` imports, anywhere in it (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    where = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    where = child.module or ""
                found.add(where)
                found.update(f"{where}.{alias.name}" for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(name, path, set(found)) for name, path in found.items()}


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each an import loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in index:
                strong(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            strong(module)
    return found


def test_the_package_has_no_import_loop():
    graph = import_graph()
    assert len(graph) > 40, "the whole package was read"
    assert loops(graph) == []


def test_the_loop_finder_finds_a_loop_through_a_lazy_import(tmp_path):
    """The check above would catch the loop it replaced: cli importing a command module that imports
    ``CommandError`` back from cli inside a function."""
    cli = tmp_path / "cli.py"
    cli.write_text("from . import ab_commands\n")
    ab = tmp_path / "ab_commands.py"
    ab.write_text("def run():\n    from .cli import CommandError\n")
    known = {"p.cli", "p.ab_commands"}
    graph = {"p.cli": imported("p.cli", cli, known), "p.ab_commands": imported("p.ab_commands", ab, known)}
    assert loops(graph) == [["p.ab_commands", "p.cli"]]
    ab.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .cli import CommandError\n")
    graph["p.ab_commands"] = imported("p.ab_commands", ab, known)
    assert loops(graph) == [], "a type-only import never runs"


def test_nothing_below_the_command_line_imports_it():
    """The entry point assembles the parser from ``commands``; the commands call down into the core.
    No module outside them imports either (errors and exit codes live in their own small module)."""
    graph = import_graph()
    top = {name for name in graph if name in (f"{NAME}.cli", f"{NAME}.__main__") or name.startswith(f"{NAME}.commands")}
    assert f"{NAME}.commands" in top, "the commands package exists"
    reaching_up = {name: sorted(graph[name] & top) for name in graph if name not in top and graph[name] & top}
    assert reaching_up == {}


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_module_says_what_it_owns(name):
    path = modules()[name]
    source = path.read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source)) or ""
    assert len(docstring.split()) >= 5, f"{path.relative_to(ROOT)}: a docstring saying what the module owns"
    lines = source.count("\n")
    if lines > LONG:
        assert LONG_NOTE in docstring, f"{path.relative_to(ROOT)} has {lines} lines: its docstring says why ({LONG_NOTE!r})"


def test_the_command_table_is_what_each_command_module_registers():
    """``cli.COMMANDS`` stands in for the modules not imported: it must name exactly the commands each
    module registers, in order, with the same help, or ``--help`` and a mistyped command would lie."""
    import argparse

    from pytest_objective_scoring import cli

    listed: dict[str, list[tuple[str, str]]] = {}
    for module, name, text in cli.COMMANDS:
        listed.setdefault(module, []).append((name, text))
    for module, commands in listed.items():
        sub = argparse.ArgumentParser().add_subparsers()
        cli.command_module(module).register(sub)
        assert [(a.dest, a.help) for a in sub._choices_actions] == commands, module
    every = {path.stem for path in (ROOT / "pytest_objective_scoring" / "commands").glob("*.py")}
    assert every - set(listed) == {"__init__", "shared"}, "a command module the command line never registers"


def _help(argv: list[str], parser: object) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args(argv)  # type: ignore[attr-defined]
    return out.getvalue()


def test_the_parser_built_for_one_command_reads_it_as_the_whole_parser_does():
    from pytest_objective_scoring import cli

    whole = cli.build_parser()
    assert _help(["--help"], cli.build_parser(["--help"])) == _help(["--help"], whole)
    for _, name, _ in cli.COMMANDS:
        argv = [name, "--help"]
        assert _help(argv, cli.build_parser(argv)) == _help(argv, whole), name
    nested = ["ab", "run", "--help"]
    assert _help(nested, cli.build_parser(nested)) == _help(nested, whole)


def test_a_command_line_imports_only_the_command_it_runs():
    import subprocess
    import sys

    probe = ("import sys; from pytest_objective_scoring import cli; cli.build_parser(sys.argv[1:]); "
             "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('pytest_objective_scoring.commands.')"
             " and not m.endswith('.shared')))")
    for argv, expected in ((["--help"], "[]"), (["ledger", "list"], "['ledger']"), (["receipt", "x"], "['audit']")):
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == expected, (argv, done.stderr)
