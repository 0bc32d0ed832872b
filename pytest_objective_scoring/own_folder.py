"""The ``.objective-scoring`` folder, made self-ignored (issue 16): whoever first writes into it (the
plugin's ledger or envelope, ``objective-score grade``'s ledger) creates it with a ``.gitignore`` of
``*`` and a README, as pytest creates ``.pytest_cache``, so it never shows in ``git status``.

This module never imports pytest.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["OWN_FOLDER", "OWN_FOLDER_FILES", "make_own_folder", "make_parent"]

OWN_FOLDER = ".objective-scoring"
OWN_FOLDER_FILES = {
    ".gitignore": "# Created by pytest-objective-scoring automatically.\n*\n",
    "README.md": "# pytest-objective-scoring\n\n"
    "This folder holds the ledger of graded runs (`ledger.sqlite`) that pytest-objective-scoring writes "
    "by default. It ignores itself in git (`.gitignore`); keep it, or delete it to start a new ledger.\n"
    "See docs/ledger.md of pytest-objective-scoring.\n",
}


def make_own_folder(folder: Path) -> None:
    """Create ``.objective-scoring`` self-ignored, as pytest creates ``.pytest_cache``: its files are
    written in a folder beside it that is then renamed into place, so the folder never exists without
    its ``.gitignore``; a folder that exists already (or that a concurrent run made first) is left as it is."""
    if folder.is_dir():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{OWN_FOLDER}-files-", dir=folder.parent))
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        staging.chmod(0o777 - umask)
        for name, content in OWN_FOLDER_FILES.items():
            (staging / name).write_text(content, encoding="utf-8")
        staging.rename(folder)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def make_parent(path: Path) -> None:
    """The folders of a file the plugin writes; a ``.objective-scoring`` among them is made self-ignored."""
    for folder in reversed(path.parents):
        if folder.name == OWN_FOLDER and not folder.is_dir():
            make_own_folder(folder)
    os.makedirs(path.parent, exist_ok=True)
