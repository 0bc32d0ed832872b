"""A large diff read by unidiff a line at a time, keeping only its file diffs' headers.

Both readers of diffs use it: :mod:`.protect` (which file diffs a candidate may keep) and
:mod:`.symbols` (which files and symbols a patch touches), for a diff longer than
:data:`.protect.LARGE_DIFF`. It sits below both, so neither imports the other to read one.
Pure functions over text; this module never imports pytest.
"""

from __future__ import annotations

from array import array
from typing import Iterator

from unidiff.constants import RE_HUNK_HEADER
from unidiff.patch import PatchedFile, PatchSet

__all__ = ["LargeDiff", "lines_at"]


def lines_at(diff: str | bytes, start: int = 0) -> Iterator[tuple[int, str]]:
    """The lines of ``diff[start:]`` as unidiff reads the text (cut after each ``\\n`` only,
    terminators kept), each with the offset where it starts, one at a time.

    Bytes are decoded a line at a time: the same text as decoding them whole, since a ``\\n``
    never falls inside a UTF-8 sequence (nor inside an invalid one ``surrogateescape`` keeps).
    """
    while start < len(diff):
        cut = diff.find("\n", start) if isinstance(diff, str) else diff.find(b"\n", start)
        after = len(diff) if cut < 0 else cut + 1
        line = diff[start:after]
        yield start, line if isinstance(line, str) else line.decode("utf-8", "surrogateescape")
        start = after


class LargeDiff(PatchSet):
    """A large diff read by unidiff a line at a time with ``metadata_only``: every line checked,
    the same errors as reading it whole, but only the file diffs' headers are kept.

    A hunk is dropped when the next one (or the next file diff) starts: unidiff only ever adds
    to the last hunk of the last file diff. Where each hunk header line starts, and the index
    of its file diff, are noted instead (``hunk_headers``, ``hunk_files``): in a diff unidiff
    accepts, every line that matches its hunk header pattern starts a hunk (hunk lines start
    with `` ``, ``-``, ``+``, ``\\`` or a line break) of the last file diff begun.
    """

    def __init__(self, diff: str | bytes) -> None:
        self.hunk_files = array("q")
        self.hunk_headers = array("q")
        super().__init__(self._read(diff), metadata_only=True)

    def append(self, patched_file: PatchedFile) -> None:
        if self:
            del self[-1][:]  # a file diff unidiff has left: nothing reads its hunks again
        super().append(patched_file)

    def _read(self, diff: str | bytes) -> Iterator[str]:
        for at, line in lines_at(diff):
            if self and line.startswith("@@ -") and RE_HUNK_HEADER.match(line):
                del self[-1][:]  # its hunks so far: unidiff reads only the one this line starts
                self.hunk_files.append(len(self) - 1)
                self.hunk_headers.append(at)
            yield line
