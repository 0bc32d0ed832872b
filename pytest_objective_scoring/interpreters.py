"""The folders an interpreter needs in a root of its own (:mod:`.sandbox`), asked of the interpreter
once: its prefixes, its ``sys.path`` (site-packages, editable installs, the folders its ``.pth``
files name), the targets of links in its site folders, and the folders of the shared libraries it
loads (its ``libpython`` through RUNPATH, RPATH or the loader's paths). A whole interpreter (conda's
environments, a copied Python) has no ``pyvenv.cfg``: its prefixes tell it. :func:`visible` keeps
what may be shown of them beside the paths a run never sees.

The grader's side only: the launcher (:mod:`.sandbox`) runs with ``-I -S`` and never imports this.
"""

import json
import os
import struct
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .sandbox import SYSTEM, inside

__all__ = ["interpreter_folders", "interpreter_prefixes", "library_paths", "link_targets", "loader_paths", "visible"]

_FOLDERS = {}  # type: Dict[str, List[str]]  # interpreter path -> the folders it needs
_PREFIXES = {}  # type: Dict[str, List[str]]  # interpreter path -> its prefixes

_PROBE = ("import sys, json, os\n"
          "try:\n"
          "    maps = [l.split(None, 5)[5].strip() for l in open('/proc/self/maps') if len(l.split(None, 5)) == 6]\n"
          "except Exception:\n"
          "    maps = []\n"
          "print(json.dumps({'prefixes': [sys.prefix, getattr(sys, 'base_prefix', sys.prefix), sys.exec_prefix, "
          "getattr(sys, 'base_exec_prefix', sys.exec_prefix)], 'executable': sys.executable, 'path': [p for p in sys.path if p], "
          "'maps': [m for m in maps if m.startswith('/')]}))")


def interpreter_folders(python):
    # type: (str) -> List[str]
    """What an interpreter needs to run in a root of its own: its prefixes, its executable's folders
    (links followed), every entry of its ``sys.path`` (site-packages, editable installs, the folders
    its ``.pth`` files name) and the folders of the shared libraries it loads (its ``libpython``,
    found through the binary's RUNPATH, RPATH or the loader's paths, seen mapped in the interpreter
    itself, and the RUNPATH and RPATH of its executable and extension modules, for libraries loaded
    later), asked of the interpreter itself once (isolated: no PYTHON* variables, no user site, from
    ``/``). Without its own ``libpython`` shown, a copied interpreter would start with another one
    of the same name from the system, frozen modules and all."""
    import subprocess

    if python in _FOLDERS:
        return _FOLDERS[python]
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH") if k in os.environ}
    result = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True, cwd="/", env=env,
                            timeout=120, stdin=subprocess.DEVNULL)
    said = (result.stderr or result.stdout).strip()[-500:] or "exit code %d, nothing printed" % result.returncode
    if result.returncode != 0:
        raise OSError("%s cannot report its folders: %s" % (python, said))
    try:
        report = json.loads(result.stdout.strip().splitlines()[-1])
        report["prefixes"], report["path"], report["maps"]
    except (ValueError, IndexError, KeyError, TypeError):
        raise OSError("%s cannot report its folders: it printed %r" % (python, result.stdout.strip()[-200:])) from None
    executable = report["executable"] or python
    folders = [os.path.dirname(path) for path in link_chain(python)]
    folders.extend(os.path.dirname(path) for path in link_chain(executable))
    for path in report["prefixes"]:
        folders.append(path)
        folders.append(os.path.realpath(path))
    for path in report["path"]:
        folders.append(path)
        folders.append(os.path.realpath(path))
        if os.path.basename(os.path.normpath(path)) in SITE_FOLDERS:  # not a repository put on the path
            folders.extend(link_targets(path))
    binaries = [os.path.realpath(python), os.path.realpath(executable)]
    for path in report["path"]:
        if os.path.basename(os.path.normpath(path)) == "lib-dynload":
            binaries.extend(_extension_modules(path))
    libraries = [os.path.dirname(m) for m in report["maps"] if os.path.isfile(m)]
    for binary in binaries:
        libraries.extend(library_paths(binary))
    libraries.extend(p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p.startswith("/"))
    libraries.extend(loader_paths())
    for folder in libraries:
        if os.path.isdir(folder) and not any(inside(os.path.realpath(folder), s) for s in SYSTEM):
            folders.extend([folder, os.path.realpath(folder)])
    _FOLDERS[python] = list(dict.fromkeys(folders))
    _PREFIXES[python] = list(dict.fromkeys(os.path.realpath(p) for p in report["prefixes"]))
    return _FOLDERS[python]


def link_chain(path):
    # type: (str) -> List[str]
    """``path``, every link it passes through on the way to its file, and that file: a venv's
    ``python`` may lead to another venv's ``python`` before the real binary, and the loader needs
    each step shown (a bounded walk: a loop ends it)."""
    chain = [os.path.abspath(path)]
    for _ in range(40):
        current = chain[-1]
        if not os.path.islink(current):
            break
        try:
            target = os.readlink(current)
        except OSError:
            break
        chain.append(os.path.normpath(os.path.join(os.path.dirname(current), target)))
    chain.append(os.path.realpath(path))
    return list(dict.fromkeys(chain))


def interpreter_prefixes(python):
    # type: (str) -> List[str]
    """The interpreter's prefixes (``sys.prefix``, ``base_prefix`` and the exec ones, links followed):
    a whole interpreter (conda's environments, a copied Python) has no ``pyvenv.cfg`` to tell it by."""
    interpreter_folders(python)
    return _PREFIXES[python]


def _extension_modules(folder):
    # type: (str) -> List[str]
    try:
        with os.scandir(folder) as entries:
            return [e.path for e in entries if e.name.endswith(".so") and e.is_file()]
    except OSError:
        return []


DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29


def library_paths(binary):
    # type: (str) -> List[str]
    """The folders an ELF file's RUNPATH and RPATH name (``$ORIGIN`` expanded), read from its dynamic
    section; nothing for anything else (a script, a file that cannot be read, a truncated ELF)."""
    try:
        with open(binary, "rb") as handle:
            data = handle.read(64 << 20)
    except OSError:
        return []
    try:
        return _elf_paths(data, os.path.dirname(binary))
    except (struct.error, IndexError, ValueError):
        return []


def _elf_paths(data, origin):
    # type: (bytes, str) -> List[str]
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return []
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        phoff, = struct.unpack_from(order + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
    else:
        phoff, = struct.unpack_from(order + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x2A)
    loads, dynamic = [], None  # type: List[Tuple[int, int, int]], Optional[Tuple[int, int]]
    for index in range(min(phnum, 512)):
        at = phoff + index * phentsize
        if wide:
            kind, _, offset, vaddr, _, filesz = struct.unpack_from(order + "IIQQQQ", data, at)
        else:
            kind, offset, vaddr, _, filesz = struct.unpack_from(order + "IIIII", data, at)
        if kind == 1:
            loads.append((vaddr, offset, filesz))
        elif kind == 2:
            dynamic = (offset, filesz)
    if dynamic is None:
        return []
    entry = struct.Struct(order + ("qQ" if wide else "iI"))
    strtab, names = None, []  # type: Optional[int], List[int]
    for index in range(min(dynamic[1] // entry.size, 4096)):
        tag, value = entry.unpack_from(data, dynamic[0] + index * entry.size)
        if tag == 0:
            break
        if tag == DT_STRTAB:
            strtab = value
        elif tag in (DT_RPATH, DT_RUNPATH):
            names.append(value)
    if strtab is None:
        return []
    base = next((offset + strtab - vaddr for vaddr, offset, size in loads if vaddr <= strtab < vaddr + size), None)
    if base is None:
        return []
    found = []  # type: List[str]
    for name in names:
        end = data.index(b"\0", base + name)
        for part in data[base + name:end].decode("utf-8", "replace").split(":"):
            part = part.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
            if part.startswith("/"):
                found.append(os.path.normpath(part))
    return found


def loader_paths(config="/etc/ld.so.conf"):
    # type: (str) -> List[str]
    """The folders the loader's configuration names (``include`` lines followed, depth-bounded)."""
    import glob

    found = []  # type: List[str]
    pending, seen = [config], set()  # type: List[str], set
    while pending and len(seen) < 256:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read(1 << 20).splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = line[len("include "):].strip()
                if not pattern.startswith("/"):
                    pattern = os.path.join(os.path.dirname(path), pattern)
                pending.extend(sorted(glob.glob(pattern)))
            elif line.startswith("/"):
                found.append(line)
    return found


SITE_FOLDERS = ("site-packages", "dist-packages")


def link_targets(folder):
    # type: (str) -> List[str]
    """Where the links directly inside a site-packages folder lead: one made of links (as Nix builds
    a Python environment) imports from their targets, so the sandbox shows those too (a linked
    folder, or the folder of a linked file), read-only like the rest of the interpreter's folders.
    Only site folders are read this way: a repository on the path (an editable install) may hold
    links to anywhere, and what they lead to is not the interpreter's."""
    found = []  # type: List[str]
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_symlink():
                    real = os.path.realpath(entry.path)
                    target = real if os.path.isdir(real) else os.path.dirname(real)
                    if os.path.exists(target) and target not in found:
                        found.append(target)
    except OSError:  # not a folder (a zip on sys.path), or unreadable: nothing more to show
        pass
    return found


def visible(folders, hidden, prefixes=()):
    # type: (Iterable[str], Iterable[Any], Iterable[str]) -> List[str]
    """``folders`` less everything inside a hidden path (the user's repository, the ledger, the
    workspaces): a folder inside a hidden path is kept only when it is, or is inside, an
    interpreter's own environment (a folder holding ``pyvenv.cfg``, or one of ``prefixes``: a whole
    interpreter such as conda's) that holds no hidden path itself, or is such an environment (the
    hidden path inside it is covered later)."""
    hidden = [os.path.realpath(h) for h in hidden if h]
    roots = [os.path.realpath(p) for p in prefixes if p]
    roots = [r for r in roots if r != "/" and not any(inside(h, r) for h in hidden)]
    kept = []
    for folder in folders:
        real = os.path.realpath(folder)
        if any(inside(real, h) or inside(folder, h) for h in hidden):
            if not os.path.isfile(os.path.join(real, "pyvenv.cfg")) and not any(inside(real, r) for r in roots):
                continue
        kept.append(folder)
    return kept
