"""Interpreters a user can point ``--python`` at, graded in the sandbox wherever they live (issue 28):
a whole interpreter prefix with no ``pyvenv.cfg`` (a conda environment, a copied Python) whose
``libpython`` is found through the binary's RUNPATH in a folder of its own, and whose ``.pth`` names
a site folder elsewhere, under the temp folder (beside the gradings' workspaces) and outside it."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pytest_objective_scoring import interpreters, sandbox
from pytest_objective_scoring.testrun import gradings

from .runner_helpers import grade, patch_of

SKIP = {"test", "idlelib", "tkinter", "turtledemo", "site-packages", "__pycache__", "ensurepip", "lib2to3"}


def whole_prefix(where: Path) -> Path:
    """A copy of this interpreter as a prefix of its own (``bin/pythonX.Y`` and the standard library,
    no ``pyvenv.cfg``), its site-packages holding one ``.pth`` that names this environment's site
    folder (where pytest is). Its binary keeps the RUNPATH of the original, as a copied or relocated
    Python does."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    real = Path(os.path.realpath(sys.executable))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    (where / "bin").mkdir(parents=True)
    shutil.copy2(real, where / "bin" / version)
    shutil.copytree(stdlib, where / "lib" / version, symlinks=True,
                    ignore=lambda folder, names: [n for n in names if n in SKIP or n.startswith("config-")])
    site = where / "lib" / version / "site-packages"
    site.mkdir()
    (site / "environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    python = where / "bin" / version
    probe = subprocess.run([str(python), "-c", "import sys, pytest; print(sys.prefix)"], capture_output=True,
                           text=True, cwd="/")  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == str(where)
    assert not (where / "pyvenv.cfg").exists()
    return python


@pytest.mark.parametrize("place", ["beside-the-workspaces", "elsewhere"])
def test_a_whole_interpreter_prefix_is_graded_wherever_it_lives(tmp_path, place):
    """Gold resolved, a broken candidate not: the interpreter starts in the sandbox with its own
    ``libpython`` (not a system one of the same name, frozen ``site`` and all) and imports pytest
    from the folder its ``.pth`` names. The workspaces' folder is the grader's temp folder (``workdir``),
    and the prefix is put in it, or beside it."""
    workdir = tmp_path / "tmp"
    workdir.mkdir()
    python = whole_prefix(workdir / "conda-env" if place == "beside-the-workspaces" else tmp_path / "opt" / "env")
    gold = grade("intervals", patch_of("intervals", "gold"), python=str(python), workdir=workdir)
    assert (gold.exit_code, gold.envelope["no_verdict_reason"]) == (0, None), gold.envelope["runner"]["run"]
    assert gold.envelope["score"]["resolved"] == "resolved"
    assert gold.envelope["runner"]["run"]["isolation"]["mode"] == "namespaces"
    broken = grade("intervals", patch_of("intervals", "break_p2p"), python=str(python), workdir=workdir)
    assert (broken.exit_code, broken.envelope["no_verdict_reason"]) == (1, None)


def test_the_interpreters_libraries_are_among_its_folders(tmp_path):
    """The folder of the ``libpython`` the binary loads (through RUNPATH, outside the system folders)
    is shown, or the copy starts with the system's."""
    python = whole_prefix(tmp_path / "env")
    folders = interpreters.interpreter_folders(str(python))
    for path in interpreters.library_paths(os.path.realpath(sys.executable)):
        if os.path.isdir(path) and not any(sandbox.inside(os.path.realpath(path), s) for s in sandbox.SYSTEM):
            assert path in folders or os.path.realpath(path) in folders
    assert str(tmp_path / "env") in interpreters.interpreter_prefixes(str(python))


def elf(paths: list[str], tag: int = interpreters.DT_RUNPATH) -> bytes:
    """A minimal 64-bit little-endian ELF with one PT_LOAD and a dynamic section naming ``paths``."""
    strings = b"\0" + ":".join(paths).encode() + b"\0"
    phoff, dyn = 64, 64 + 2 * 56
    strtab = dyn + 3 * 16
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, phoff, 0, 0, 64,
                                                                    56, 2, 0, 0, 0)  # fmt: skip
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0x400000, 0x400000, strtab + len(strings), strtab + len(strings), 0x1000)
    dynamic = struct.pack("<IIQQQQQQ", 2, 6, dyn, 0x400000 + dyn, 0x400000 + dyn, 48, 48, 8)
    entries = struct.pack("<qQ", interpreters.DT_STRTAB, 0x400000 + strtab) + struct.pack("<qQ", tag, 1) + bytes(16)
    return header + load + dynamic + entries + strings


@pytest.mark.parametrize("tag", [interpreters.DT_RUNPATH, interpreters.DT_RPATH])
def test_runpath_and_rpath_are_read_with_origin_expanded(tmp_path, tag):
    binary = tmp_path / "bin" / "python"
    binary.parent.mkdir()
    binary.write_bytes(elf(["$ORIGIN/../lib", "/opt/conda/lib", "relative"], tag))
    assert interpreters.library_paths(str(binary)) == [str(tmp_path / "lib"), "/opt/conda/lib"]


@pytest.mark.parametrize("data", [b"", b"#!/bin/sh\n", b"\x7fELF\x02\x01", b"\x7fELF" + bytes(60), b"\x7fELF\x07"])
def test_what_is_not_a_whole_elf_names_no_library_folder(tmp_path, data):
    path = tmp_path / "thing"
    path.write_bytes(data)
    assert interpreters.library_paths(str(path)) == []
    truncated = tmp_path / "cut"
    truncated.write_bytes(elf(["/opt/lib"])[:150])
    assert interpreters.library_paths(str(truncated)) == []
    assert interpreters.library_paths(str(tmp_path / "missing")) == []


def test_the_loaders_configuration_is_followed_through_includes_and_loops(tmp_path):
    conf, folder = tmp_path / "ld.so.conf", tmp_path / "ld.so.conf.d"
    folder.mkdir()
    conf.write_text("include ld.so.conf.d/*.conf\n/opt/first  # a comment\n", encoding="utf-8")
    (folder / "a.conf").write_text("/opt/vendor/lib\ninclude " + str(conf) + "\n", encoding="utf-8")
    assert sorted(interpreters.loader_paths(str(conf))) == ["/opt/first", "/opt/vendor/lib"]


def test_only_the_gradings_workspaces_are_hidden_in_the_temp_folder(tmp_path):
    """The temp folder is not hidden as a whole (an interpreter or a ``.pth``'s folder may live there);
    a workspace of any grading that holds a folder is."""
    base = tmp_path
    folders = [str(base / "conda" / "lib"), str(base / "objective-score-0a1b2c3d4e" / "copy"),
               str(base / ".objective-score-making-12-x" / "env")]
    assert gradings(folders, base) == [base / "objective-score-0a1b2c3d4e", base / ".objective-score-making-12-x"]
    kept = interpreters.visible(folders, gradings(folders, base))
    assert kept == [str(base / "conda" / "lib")]


def test_a_folder_holding_the_workspaces_is_never_shown(tmp_path):
    """``/tmp`` itself on an interpreter's path would show every grading's workspace, and cover the
    run's own fresh ``/tmp``: it is left out of the root."""
    from pytest_objective_scoring.testrun import confined

    place = tmp_path / "objective-score-0123456789" / "runs" / "run"
    place.mkdir(parents=True)
    interpreters._FOLDERS["/fake/python"] = [str(tmp_path), str(tmp_path / "env"), "/", str(tmp_path.parent)]
    interpreters._PREFIXES["/fake/python"] = [str(tmp_path / "env")]
    try:
        command, _, (reader, writer) = confined(["true"], mode="namespaces", why="", place=place, cwd=place,
                                                network=False, python="/fake/python")  # fmt: skip
    finally:
        del interpreters._FOLDERS["/fake/python"], interpreters._PREFIXES["/fake/python"]
        os.close(reader), os.close(writer)
    import json

    assert json.loads(command[-1])["read_only"] == [str(tmp_path / "env")]


def test_a_prefix_is_shown_inside_a_hidden_folder_but_never_one_holding_it(tmp_path):
    repo = tmp_path / "repo"
    (repo / "env" / "lib").mkdir(parents=True)
    inside = [str(repo / "env" / "lib"), str(repo / "src")]
    assert interpreters.visible(inside, [repo], prefixes=[str(repo / "env")]) == [str(repo / "env" / "lib")]
    assert interpreters.visible(inside, [repo], prefixes=[str(repo)]) == []
    assert interpreters.visible(inside, [repo], prefixes=["/"]) == []


def test_a_venv_made_from_another_venvs_python_starts_through_each_link(tmp_path):
    """``python -m venv`` run with a venv's ``python`` links to that link, not to the binary: every
    folder on the way is shown, or the interpreter "cannot start" (no such file) in the sandbox."""
    first, second = tmp_path / "first", tmp_path / "second"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(first)], check=True)
    subprocess.run([str(first / "bin" / "python"), "-m", "venv", "--without-pip", str(second)], check=True)
    python = second / "bin" / "python"
    python.unlink()
    python.symlink_to(first / "bin" / "python")  # as Python 3.10's venv makes it (3.11's resolves the first link)
    assert interpreters.link_chain(str(python))[1] == str(first / "bin" / "python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    Path(purelib).mkdir(parents=True, exist_ok=True)
    Path(purelib, "environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    assert str(first / "bin") in interpreters.interpreter_folders(str(python))
    result = grade("intervals", patch_of("intervals", "gold"), python=str(python), workdir=tmp_path)
    assert (result.exit_code, result.envelope["no_verdict_reason"]) == (0, None)
