"""The append-only, hash-chained ledger (spec section 9), in SQLite.

Every entry is one row: a sequence number, a kind (``score``, ``cost``, ...), the
UTC time it was written, its body as canonical JSON, and a sha256 chained to the
previous row's. The database itself refuses updates and deletes (triggers), and
:func:`verify` recomputes the chain to name any row that was edited, removed or
reordered behind its back. Writers serialise on ``BEGIN IMMEDIATE``, so several
processes can append at once without losing, duplicating or forking a row; a
writer killed mid-transaction leaves nothing half-written (SQLite's journal).

A chain alone does not stop someone who can write the file from appending rows with hashes he
computed himself. **A ledger key** (a secret file outside the ledger, named by
``$OBJECTIVE_SCORE_LEDGER_KEY_FILE``) seals it: each transaction of a writer holding the key ends
with a ``seal`` row, ``{"through": SEQ, "mac": HMAC-SHA256(key, "SEQ:HASH")}`` of the row before it.
Once a ledger holds a seal, a writer without the key (or with another key) is refused, and
:func:`verify` with the key names every row no valid seal covers: rows appended without the key.

Why over 800 lines: the writer (its transactions, seals and whole-or-nothing creation) and
:func:`verify` must agree byte for byte on what a row, a hash and a seal are; kept in one module,
a change to one is read beside the other.

This module never imports pytest.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import hmac
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Final, Iterator, Mapping, Sequence

from . import against_gold

__all__ = ["DEFAULT_LEDGER", "GENESIS", "KNOWN_KINDS", "Entry", "Head", "Ledger", "LedgerError", "LedgerUnavailable",
           "Verification", "canonical", "head", "key_from_environment", "parse_head", "sign_head", "verify"]

ENV_KEY_FILE: Final = "OBJECTIVE_SCORE_LEDGER_KEY_FILE"
SEAL: Final = "seal"

GENESIS: Final = "0" * 64
SCHEMA_VERSION: Final = 2
SQLITE_HEADER: Final = b"SQLite format 3\0"
BUSY_TIMEOUT_S: Final = 60.0

MIGRATIONS: Final[Mapping[int, tuple[str, ...]]] = {
    1: (
        "CREATE TABLE entries ("
        " seq INTEGER PRIMARY KEY,"
        " kind TEXT NOT NULL,"
        " created TEXT NOT NULL,"
        " body TEXT NOT NULL,"
        " prev_hash TEXT NOT NULL,"
        " hash TEXT NOT NULL UNIQUE)",
        "CREATE INDEX entries_kind ON entries (kind)",
        "CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries"
        " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: a row cannot be updated'); END",
        "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries"
        " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: a row cannot be deleted'); END",
    ),
    2: (  # the schema version is kept like an entry: a meta row can be neither changed nor removed
        "CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta"
        " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: its schema version cannot be changed'); END",
        "CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta"
        " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: its schema version cannot be removed'); END",
    ),
}
TRIGGERS: Final = ("entries_no_update", "entries_no_delete")


def _normalised(sql: str) -> str:
    """A trigger's SQL text as compared by :func:`verify`: whitespace collapsed, case folded."""
    return " ".join(sql.replace("(", " ( ").replace(")", " ) ").replace(";", " ; ").split()).casefold()


def expected_triggers(version: int) -> dict[str, str]:
    """Every trigger a ledger of schema ``version`` must hold, by name: its normalised definition."""
    found: dict[str, str] = {}
    for v in range(1, min(version, SCHEMA_VERSION) + 1):
        for statement in MIGRATIONS[v]:
            match = re.match(r"CREATE TRIGGER (\w+) ", statement)
            if match:
                found[match.group(1)] = _normalised(statement)
    return found


class LedgerError(RuntimeError):
    """The ledger cannot be opened or written as asked."""


class LedgerUnavailable(LedgerError):
    """The machine cannot read or write the ledger now (a full disk, an I/O error): an infrastructure
    failure (exit 3), never bad input; the ledger itself is left as it was."""


# SQLite's primary result codes: the disk cannot take or give the bytes (IOERR, FULL); and, for a reader,
# the shared-memory files beside the ledger cannot be made (READONLY, CANTOPEN)
_DISK_CODES: Final = {10: "disk I/O error", 13: "disk is full"}
_UNSHARED_CODES: Final = {**_DISK_CODES, 8: "readonly", 14: "unable to open"}


def _failed_with(exc: sqlite3.Error, codes: Mapping[int, str]) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in codes
    return any(words in str(exc) for words in codes.values())


def _unavailable(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed for want of the disk (full, an I/O error), not for the file."""
    return _failed_with(exc, _DISK_CODES)


def canonical(value: Any) -> str:
    """The one JSON spelling of a value: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def entry_hash(seq: int, kind: str, created: str, body: str, prev_hash: str) -> str:
    payload = "\n".join((str(seq), kind, created, prev_hash, body))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    seq: int
    kind: str
    created: str
    body: str
    prev_hash: str
    hash: str

    @property
    def data(self) -> Any:
        return json.loads(self.body)

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "created": self.created, "body": self.data,
                "prev_hash": self.prev_hash, "hash": self.hash}  # fmt: skip


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes the file nor creates one, its schema read once (so that a
    failure to open is found here).

    A ledger nobody may write (no write permission bits, or a folder that cannot be written) and with
    no pending write-ahead log is read as immutable: SQLite then creates no -wal or -shm beside it
    either, so an auditor with read access only can read and verify it. So is one whose folder cannot
    take SQLite's shared-memory files (a full disk, a read-only file system) and that has no pending
    write-ahead log: nobody can be appending to it either (a writer needs the same disk); the -wal
    and -shm files the failed open made are removed.
    """
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    pending = wal.exists() and wal.stat().st_size > 0
    frozen = not (path.stat().st_mode & 0o222) or not os.access(path.resolve().parent, os.W_OK)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    if frozen and not pending:
        return _opened(uri + "&immutable=1")
    there = {side for side in (wal, shm) if side.exists()}
    try:
        return _opened(uri)
    except sqlite3.OperationalError as exc:
        if pending or not _failed_with(exc, _UNSHARED_CODES):
            raise
        for side in (wal, shm):  # what the failed open made (a few bytes at most), never what was there
            if side not in there:
                with contextlib.suppress(OSError):
                    if side.stat().st_size <= 32768:
                        side.unlink()
    return _opened(uri + "&immutable=1")


def _opened(uri: str) -> sqlite3.Connection:
    """A read-only connection to ``uri`` whose schema was read (the file opened for real), or the error."""
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if _failed_with(exc, _UNSHARED_CODES):
            conn.close()
            raise
    except sqlite3.DatabaseError:  # the file's own damage: found and said by what reads it, as before
        pass
    except BaseException:
        conn.close()
        raise
    return conn


def _create(path: Path) -> None:
    """Make a new ledger at ``path`` whole or not at all: its schema is built in a temporary file in
    the same folder, flushed to the disk, and only then linked to its name, which never replaces a
    ledger another writer made meanwhile (theirs is kept, and appended to). A full disk, a kill or a
    crash leaves nothing, never the 0-byte file a later run would refuse as not a ledger.
    :class:`LedgerUnavailable` when the disk cannot take it. (On a file system without hard links
    nothing is linked: the writer's connection makes the file, as SQLite always did.)"""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path  # a link keeps being a link
    partial = target.with_name(f".{target.name}.{os.getpid()}.{time.monotonic_ns()}.creating")
    try:
        conn = sqlite3.connect(str(partial), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            _migrate(conn)
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]  # as every writer opens it
        finally:
            conn.close()
        if str(mode).lower() != "wal":
            raise LedgerUnavailable(f"cannot be created (its write-ahead log could not be set up: {mode})")
        fd = os.open(partial, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(partial, target)
        except FileExistsError:  # another writer's new ledger: it is the one
            pass
        except OSError as exc:  # a file system without hard links: SQLite makes the file in place, as it did
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
    except sqlite3.Error as exc:
        raise (LedgerUnavailable if _unavailable(exc) else LedgerError)(f"cannot be created ({exc})") from None
    except OSError as exc:
        raise _os_error(exc)(f"cannot be created ({exc.strerror or exc})") from None
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{partial}{suffix}")


def damage(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a ledger, read from the file itself, or None when it may be one."""
    if not path.exists() and not path.is_symlink():
        return "no such ledger"
    if path.is_dir():
        return "a directory, not a ledger file"
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size == 0:
        return "an empty file, not a ledger"
    if not header.startswith(SQLITE_HEADER):
        return "not a ledger: not an SQLite database (its first bytes are not SQLite's header)"
    if len(header) < 100:
        return f"truncated: {size} bytes, shorter than SQLite's 100-byte header"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96] and page_size >= 512 and page_size & (page_size - 1) == 0  # the page count is current when these two counters agree
    wal = Path(f"{path}-wal")
    if valid and pages and not (wal.exists() and wal.stat().st_size) and size < pages * page_size:
        return (f"truncated: its header declares {pages} pages of {page_size} bytes ({pages * page_size} bytes) "
                f"but the file holds {size}")  # fmt: skip
    return None


def foreign_tables(conn: sqlite3.Connection) -> list[str]:
    """The tables of a database that are not a ledger's (a database named as ``--ledger`` by mistake)."""
    return sorted(name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                  if name not in ("entries", "meta") and not name.startswith("sqlite_"))  # fmt: skip


def ledger_path_problem(path: Path) -> str | None:
    """Why ``path``, which exists, cannot be appended to as a ledger, read before any work (never
    written): not a ledger file (:func:`damage`), or someone else's SQLite database. None for a
    ledger, and for what the append itself must find out (locks, permissions, a full disk)."""
    problem = damage(path)
    if problem is not None:
        return None if problem == "an empty file, not a ledger" else problem  # the empty file: its own rule
    try:
        conn = _connect_read_only(path)
    except (sqlite3.DatabaseError, LedgerError, OSError):
        return None
    try:
        if _schema_version(conn) == 0 and foreign_tables(conn):
            return (f"an SQLite database that is not a ledger (it holds the table(s) {', '.join(foreign_tables(conn)[:5])}): "
                    "never turned into one; name a new path")  # fmt: skip
    except (sqlite3.DatabaseError, LedgerError):
        return None
    finally:
        conn.close()
    return None


def _schema_version(conn: sqlite3.Connection) -> int | None:
    """The recorded schema version; 0 for a file with no ledger tables; None when the meta row was removed."""
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        return None if "entries" in tables else 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None if "entries" in tables else 0
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise LedgerError(f"the schema version {row[0]!r} in the meta table is not a number") from None


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _schema_version(conn)
        if current is None:
            raise LedgerError("the ledger's schema version (its meta row) was removed; it is not converted")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        if current > SCHEMA_VERSION:
            raise LedgerError(f"the ledger has schema version {current}; this version of the package knows up to {SCHEMA_VERSION}")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            # the version is written before the statements (a migration's triggers may protect the meta row)
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(version),))
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class Ledger:
    """An open ledger file; safe to use from several processes at once.

    An existing ledger is opened read-only and stays so until something is appended: reading never
    writes, converts or migrates the file. With ``read_only=True`` nothing is ever written and a path
    that is not a readable ledger (missing, empty, a directory, not SQLite, truncated, damaged, no
    schema version) raises :class:`LedgerError` naming the file and what is wrong with it.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False, key: bytes | None = None) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._key = key
        self._writable = False
        self._empty = False
        try:
            problem = damage(self.path)
            exists = self.path.exists()
        except PermissionError:  # a folder on its path that cannot be entered
            raise LedgerError(f"{self.path}: permission denied (a folder on its path cannot be entered, or the file "
                              "cannot be read)") from None
        if problem and (read_only or (exists and problem != "an empty file, not a ledger")):
            raise LedgerError(f"{self.path}: {problem}")
        if not exists:
            self._open_for_writing()
            return
        try:
            if problem:  # an existing empty file: read as no entries, made a ledger only by an append
                self._empty = True
                self.conn = sqlite3.connect(":memory:", isolation_level=None)
                return
            self.conn = _connect_read_only(self.path)
            version = _schema_version(self.conn)
            if version is None:
                raise LedgerError("its schema version (the meta row) was removed: run objective-score ledger verify")
            if version > SCHEMA_VERSION:
                raise LedgerError(f"the ledger has schema version {version}; this version of the package knows up "
                                  f"to {SCHEMA_VERSION}")  # fmt: skip
            if read_only:  # a damaged page anywhere is reported now, not as a row silently missing from a query
                _check_pages(self.conn)
            if version == 0:
                if read_only:
                    raise LedgerError("an SQLite database, but not a ledger (it has no ledger tables)")
                foreign = foreign_tables(self.conn)
                if foreign:  # someone else's database, named by mistake: never turned into a ledger
                    raise LedgerError(f"an SQLite database that is not a ledger (it holds the table(s) "
                                      f"{', '.join(foreign[:5])}): never turned into one; name a new path")  # fmt: skip
                self._empty = True  # an SQLite file with no tables at all: made a ledger only by an append
        except LedgerError as exc:
            self._close_quietly()
            raise LedgerError(f"{self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:  # OperationalError: locked, read-only, cannot be opened
            self._close_quietly()
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None

    def _close_quietly(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()

    def _open_for_writing(self) -> None:
        """Open the ledger to append, made first when missing (:func:`_create`: whole or not at all)."""
        if self._writable:
            return
        if self.read_only:
            raise LedgerError(f"{self.path}: opened read-only")
        self._close_quietly()
        try:
            from .own_folder import make_parent

            make_parent(self.path)  # a .objective-scoring folder among them is made self-ignored
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(self.path) or (self.path.is_symlink() and not self.path.exists()):
                _create(self.path)
            self.conn = _connect(self.path)
            _migrate(self.conn)
        except LedgerError as exc:
            self._close_quietly()
            raise type(exc)(f"{self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None
        except OSError as exc:  # the folder cannot be made (a full disk, permissions)
            raise _os_error(exc)(f"{self.path}: cannot be created ({exc.strerror or exc})") from None
        self._writable, self._empty = True, False

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __del__(self) -> None:  # a ledger dropped unclosed closes its connection (3.13 warns of it otherwise)
        conn = self.__dict__.get("conn")
        if conn is not None:
            try:
                conn.close()
            except Exception:  # pragma: no cover - an interpreter shutting down
                pass

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, kind: str, body: Any) -> Entry:
        """Write one entry at the end of the chain, atomically."""
        return self.append_linked([(kind, lambda _: body)])[0]

    def append_linked(self, items: Sequence[tuple[str, Callable[[list[Entry]], Any]]]) -> list[Entry]:
        """Write several entries in one transaction: all of them or none.

        Each body is made by a callable given the entries written before it in the same
        transaction, so a cost entry can name the sequence number of its score entry.
        """
        return self.append_decided(lambda _: items)

    def append_decided(
        self, decide: Callable[[sqlite3.Connection], Sequence[tuple[str, Callable[[list[Entry]], Any]]]]
    ) -> list[Entry]:
        """Like :meth:`append_linked`, with the entries chosen by ``decide`` inside the write
        transaction, after the ledger is locked: what it reads cannot change before its entries are
        written (a claim taken only when no other run holds one). It may choose none."""
        self._open_for_writing()
        created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
        written: list[Entry] = []
        self.conn.execute("BEGIN IMMEDIATE")  # one writer at a time: the chain cannot fork
        try:
            items = decide(self.conn)
            key = self._sealing_key() if items else None
            last = self.conn.execute("SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (last[0], last[1]) if last else (0, GENESIS)
            for kind, make_body in items:
                text = canonical(make_body(written))
                seq += 1
                digest = entry_hash(seq, kind, created, text, prev)
                self.conn.execute(
                    "INSERT INTO entries (seq, kind, created, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)",
                    (seq, kind, created, text, prev, digest),
                )
                written.append(Entry(seq, kind, created, text, prev, digest))
                prev = digest
            if key is not None:  # the transaction's rows (and every one before them) vouched for by the key
                text = canonical(seal_body(seq, prev, key))
                digest = entry_hash(seq + 1, SEAL, created, text, prev)
                self.conn.execute(
                    "INSERT INTO entries (seq, kind, created, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)",
                    (seq + 1, SEAL, created, text, prev, digest),
                )
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:  # an interrupt right after COMMIT leaves nothing to roll back
                self.conn.execute("ROLLBACK")
            raise
        return written

    def _sealing_key(self) -> bytes | None:
        """The key this transaction seals with (the one given, else ``$OBJECTIVE_SCORE_LEDGER_KEY_FILE``'s),
        inside the write lock: a sealed ledger refuses a writer without its key, or with another key."""
        key = self._key if self._key is not None else key_from_environment()
        last = self.conn.execute("SELECT seq, body FROM entries WHERE kind = ? ORDER BY seq DESC LIMIT 1",
                                 (SEAL,)).fetchone()  # fmt: skip
        if last is None:
            return key
        if key is None:
            raise LedgerError(f"{self.path}: the ledger is sealed with a key: a writer without it would append rows "
                              f"verify refuses (set ${ENV_KEY_FILE} to the key file)")  # fmt: skip
        body = json.loads(last[1])
        row = self.conn.execute("SELECT hash FROM entries WHERE seq = ?", (body.get("through"),)).fetchone()
        if row is None or not hmac.compare_digest(str(body.get("mac")), seal_body(int(body["through"]), row[0], key)["mac"]):
            raise LedgerError(f"{self.path}: the key in ${ENV_KEY_FILE} is not the one this ledger is sealed with")
        return key

    def entries(self, kind: str | None = None) -> Iterator[Entry]:
        if self._empty:
            return
        query = "SELECT seq, kind, created, body, prev_hash, hash FROM entries"
        try:
            rows = self.conn.execute(query + (" WHERE kind = ? ORDER BY seq" if kind else " ORDER BY seq"),
                                     (kind,) if kind else ())  # fmt: skip
            for row in rows:
                yield Entry(*row)
        except sqlite3.DatabaseError as exc:  # a page damaged past the header: found only when read
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None

    def entries_holding(self, kind: str, text: str) -> Iterator[Entry]:
        """The entries of ``kind`` whose body holds ``text`` (a canonical ``"key":"value"`` pair, say),
        in order: found by SQLite, not by reading every body here (a run's rows among a large ledger's)."""
        if self._empty:
            return
        query = ("SELECT seq, kind, created, body, prev_hash, hash FROM entries WHERE kind = ? AND instr(body, ?) > 0 "
                 "ORDER BY seq")  # fmt: skip
        try:
            for row in self.conn.execute(query, (kind, text)):
                yield Entry(*row)
        except sqlite3.DatabaseError as exc:
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None

    def kinds(self) -> list[str]:
        """The kinds of entry this ledger holds, sorted."""
        if self._empty:
            return []
        try:
            return sorted(row[0] for row in self.conn.execute("SELECT DISTINCT kind FROM entries"))
        except sqlite3.DatabaseError as exc:
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None

    def entries_from(self, seq: int, count: int) -> list[Entry]:
        """At most ``count`` entries, from ``seq`` on."""
        if self._empty:
            return []
        try:
            rows = self.conn.execute("SELECT seq, kind, created, body, prev_hash, hash FROM entries WHERE seq >= ? "
                                     "ORDER BY seq LIMIT ?", (seq, count)).fetchall()  # fmt: skip
        except sqlite3.DatabaseError as exc:
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None
        return [Entry(*row) for row in rows]

    def __len__(self) -> int:
        if self._empty:
            return 0
        try:
            return int(self.conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None

    def head(self) -> Head:
        """The chain's head: the last row's seq and hash (0 and GENESIS for an empty ledger)."""
        if self._empty:
            return Head(0, GENESIS)
        try:
            last = self.conn.execute("SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise _error(exc)(f"{self.path}: {_what(exc)} ({exc})") from None
        return Head(int(last[0]), str(last[1])) if last else Head(0, GENESIS)


def _check_pages(conn: sqlite3.Connection, pragma: str = "quick_check") -> None:
    """Raise :class:`LedgerError` (one line) when SQLite finds a damaged page anywhere in the file."""
    checked = [" ".join(str(row[0]).replace("*** in database main ***", "").split())
               for row in conn.execute(f"PRAGMA {pragma}(3)")]  # fmt: skip
    if checked != ["ok"]:
        raise LedgerError(f"damaged: SQLite's integrity check fails ({'; '.join(c for c in checked if c)})")


def _os_error(exc: OSError) -> type[LedgerError]:
    """:class:`LedgerUnavailable` for a disk that cannot take the bytes (full, a quota, an I/O error), else
    :class:`LedgerError` (a folder that cannot be written is the path's problem)."""
    return LedgerUnavailable if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO) else LedgerError


def _error(exc: sqlite3.Error) -> type[LedgerError]:
    """The refusal a failure of SQLite's is: :class:`LedgerUnavailable` for the machine's (a full disk),
    else :class:`LedgerError` (the file)."""
    return LedgerUnavailable if isinstance(exc, sqlite3.OperationalError) and _unavailable(exc) else LedgerError


def _what(exc: sqlite3.DatabaseError) -> str:
    if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
        return "cannot be opened"
    return "damaged: not a readable ledger" if "malformed" in str(exc) else "not a ledger"


@dataclass(frozen=True)
class Verification:
    rows: int
    problems: tuple[str, ...]
    seals: str = "none"  # "none" (never sealed), "checked" (every row under a valid seal), "unchecked" (no key)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class Head:
    """The chain's head: the last row's sequence number and hash. Written ``SEQ:HASH``."""

    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"


def sign_head(head: Head, key: bytes) -> str:
    """HMAC-SHA256 (hex) of ``SEQ:HASH`` under ``key``: an anchor only the key's holder can make."""
    return hmac.new(key, str(head).encode("ascii"), hashlib.sha256).hexdigest()


def read_key(path: str | Path, where: str) -> bytes:
    """The bytes of a key file (a final newline dropped); :class:`LedgerError` naming ``where`` when
    it cannot be read or is empty."""
    from .inputs import InputProblem, read_bytes

    try:
        key = read_bytes(path, 1 << 16)
    except InputProblem as exc:
        raise LedgerError(f"{where} {path}: {exc}") from None
    key = key[:-1] if key.endswith(b"\n") else key
    if not key:
        raise LedgerError(f"{where} {path}: empty: a key must not be empty")
    return key


def key_from_environment() -> bytes | None:
    """The ledger key ``$OBJECTIVE_SCORE_LEDGER_KEY_FILE`` names, or None when it is not set."""
    path = os.environ.get(ENV_KEY_FILE)
    return read_key(path, f"${ENV_KEY_FILE}") if path else None


def seal_body(seq: int, digest: str, key: bytes) -> dict[str, Any]:
    """The body of the seal of row ``seq`` (whose hash is ``digest``)."""
    return {"through": seq, "mac": sign_head(Head(seq, digest), key)}


def parse_head(text: str) -> tuple[int | None, str, str | None]:
    """``HASH``, ``SEQ:HASH`` or ``SEQ:HASH:HMAC`` as (seq or None, hash, hmac or None); ValueError if neither."""
    parts = text.strip().split(":")
    hexes = re.compile(r"[0-9a-f]{64}")
    if len(parts) == 1 and hexes.fullmatch(parts[0]):
        return None, parts[0], None
    if len(parts) in (2, 3) and parts[0].isdigit() and hexes.fullmatch(parts[1]):
        if len(parts) == 3 and not hexes.fullmatch(parts[2]):
            raise ValueError(f"{text!r}: the signature is not 64 hex digits")
        return int(parts[0]), parts[1], (parts[2] if len(parts) == 3 else None)
    raise ValueError(f"{text!r}: expected HASH, SEQ:HASH or SEQ:HASH:HMAC (HASH and HMAC: 64 lowercase hex digits)")


def head(path: str | Path) -> Head:
    """The head of the ledger at ``path``, read-only."""
    with Ledger(path, read_only=True) as ledger:
        return ledger.head()


def verify(path: str | Path, expect_head: str | None = None, key: bytes | None = None) -> Verification:
    """Recompute the chain; name every row that was edited, removed or reordered, a removed schema
    version, and every protecting trigger that is missing or whose definition was changed.

    The file is opened read-only and never written. ``expect_head`` (``HASH``, ``SEQ:HASH`` or
    ``SEQ:HASH:HMAC``, kept from an earlier ``ledger head``) must still be in the chain: a tail removed,
    or removed and written again, is reported. With ``key``, the anchor must carry an HMAC made with it.
    A file that cannot be read as a ledger raises :class:`LedgerError`; a failed check is a problem.
    """
    path = Path(path)
    problem = damage(path)
    if problem:
        raise LedgerError(f"{path}: {problem}")
    anchor = None
    if expect_head is not None:
        try:
            anchor = parse_head(expect_head)
        except ValueError as exc:
            raise LedgerError(f"--expect-head {exc}") from None
        if key is not None and anchor[2] is None:
            raise LedgerError("--expect-head: a key was given but the head is not signed (expected SEQ:HASH:HMAC)")
        if anchor[2] is not None and key is None:
            raise LedgerError("--expect-head: the head is signed: give the key that signed it (--key-file)")
        if anchor[2] is not None and anchor[0] is None:
            raise LedgerError("--expect-head: a signed head is SEQ:HASH:HMAC")
    try:
        conn = _connect_read_only(path)
    except sqlite3.DatabaseError as exc:
        raise _error(exc)(f"{path}: {_what(exc)} ({exc})") from None
    problems: list[str] = []
    rows = 0
    try:
        try:  # a damaged page is the file altered below its rows: a failed verification, rows still read
            _check_pages(conn, "integrity_check")
        except LedgerError as exc:
            problems.append(f"the file was altered below its rows ({str(exc).removeprefix('damaged: ')})")
        version = _schema_version(conn)
        if version == 0:
            raise LedgerError(f"{path}: an SQLite database, but not a ledger (it has no ledger tables)")
        if version is None:
            problems.append("the schema version (the meta row schema_version) was removed")
            version = SCHEMA_VERSION
        elif version > SCHEMA_VERSION:
            raise LedgerError(f"{path}: the ledger has schema version {version}; this version of the package "
                              f"knows up to {SCHEMA_VERSION}")  # fmt: skip
        present = {name: (table, sql or "") for name, table, sql in
                   conn.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")}  # fmt: skip
        for trigger, definition in expected_triggers(version).items():
            if trigger not in present:
                problems.append(f"the append-only trigger {trigger} was removed")
            elif _normalised(present[trigger][1]) != definition:
                problems.append(f"the append-only trigger {trigger} was replaced: its definition is not the ledger's "
                                f"({' '.join(present[trigger][1].split())[:160]})")  # fmt: skip
        expected_seq, prev = 1, GENESIS
        hashes: dict[int, str] = {}
        seals: list[tuple[int, str, str]] = []  # (seq, body, prev_hash) of every seal row
        last_seq = 0
        for seq, kind, created, body, prev_hash, digest in conn.execute(
            "SELECT seq, kind, created, body, prev_hash, hash FROM entries ORDER BY seq"
        ):
            rows += 1
            if not isinstance(seq, int) or not all(isinstance(v, str) for v in (kind, created, body, prev_hash, digest)):
                problems.append(f"row {rows} was edited: a field is no longer text (its stored type was changed)")
                expected_seq, prev = (seq + 1 if isinstance(seq, int) else expected_seq + 1), str(digest)
                continue
            if seq != expected_seq:
                problems.append(f"rows {expected_seq}..{seq - 1} are missing (removed)")
            if prev_hash != prev:
                problems.append(f"row {seq} does not follow the row before it (a row was removed or reordered)")
            if entry_hash(seq, kind, created, body, prev_hash) != digest:
                problems.append(f"row {seq} ({kind}) was edited: its content no longer matches its hash")
            expected_seq, prev = seq + 1, digest
            last_seq = seq
            if anchor is not None:
                hashes[seq] = digest
            if kind == SEAL:
                seals.append((seq, body, prev_hash))
        if anchor is not None:
            problems.extend(_anchor_problems(anchor, hashes, key))
        state = "none"
        if seals:
            state = "unchecked" if key is None else "checked"
            if key is not None:
                problems.extend(_seal_problems(seals, last_seq, key))
        elif key is not None and expect_head is None:
            problems.append("a key was given, but the ledger holds no seal: none of its rows was written with a key")
        return Verification(rows, tuple(problems), state)
    except sqlite3.DatabaseError as exc:
        if "malformed" not in str(exc) and not problems:
            raise _error(exc)(f"{path}: {_what(exc)} ({exc})") from None
        # an SQLite file whose structure was altered: tampering, said as a failed verification (exit 1)
        where = f"after row {rows}" if rows else "from its first row"
        return Verification(rows, (*problems, f"the file was altered: its rows cannot be read {where} ({exc})"))
    finally:
        conn.close()


def _seal_problems(seals: Sequence[tuple[int, str, str]], last_seq: int, key: bytes) -> list[str]:
    """Every seal the key did not make, and every row no valid seal covers (appended without the key).
    A seal vouches for the row before it (its ``prev_hash``, which the chain check holds to that row's
    hash) and so for every row before that: rows after the last valid seal were appended without it."""
    problems: list[str] = []
    covered = 0
    for seq, body, prev_hash in seals:
        try:
            data = json.loads(body)
            through, mac = int(data["through"]), str(data["mac"])
        except (ValueError, KeyError, TypeError):
            problems.append(f"row {seq} (seal) is not a seal: its body is not {{through, mac}}")
            continue
        if through != seq - 1 or not hmac.compare_digest(mac, seal_body(through, prev_hash, key)["mac"]):
            problems.append(f"row {seq} (seal) was not made with this key (a forged seal, or the wrong key)")
            continue
        covered = seq
    if covered < last_seq:
        problems.append(f"rows {covered + 1}..{last_seq} are not sealed with the ledger's key: appended without it")
    return problems


def _anchor_problems(anchor: tuple[int | None, str, str | None], hashes: Mapping[int, str],
                     key: bytes | None) -> list[str]:  # fmt: skip
    seq, digest, mac = anchor
    if mac is not None and key is not None:
        if not hmac.compare_digest(mac, sign_head(Head(seq or 0, digest), key)):
            return [f"the expected head {seq}:{digest} does not carry a valid signature for this key "
                    "(a forged or altered anchor, or the wrong key)"]  # fmt: skip
    if seq is None:
        found = [s for s, h in hashes.items() if h == digest]
        if digest == GENESIS or found:
            return []
        return [f"the expected head {digest} is not in the chain: rows were removed, or removed and written again"]
    if seq == 0 and digest == GENESIS:
        return []
    if seq not in hashes:
        last = max(hashes, default=0)
        return [f"the expected head is row {seq}, but the chain ends at row {last}: its tail was removed"]
    if hashes[seq] != digest:
        return [f"row {seq} is not the expected head {digest}: the chain was rewritten from there back"
                " (rows removed and written again)"]
    return []


DEFAULT_LEDGER: Final = Path(".objective-scoring") / "ledger.sqlite"

# Every kind of entry the package writes (``ledger show --kind`` refuses another unless the ledger
# holds it: a misspelt kind is never an empty, successful listing). tests/test_faults.py checks the
# package's sources against it.
KNOWN_KINDS: Final = frozenset({
    "score", "cost", "scorecard", "batch", "audit", "harbor", "set", "judged_score", "claim", "release",
    "ab_manifest", "ab_predictions", "ab_comparison", "samples_run", "sample_problem", "sample_result", "seal",
})


def failure_class_of(envelope: Mapping[str, Any]) -> str:
    """For a run that does not name its failure class (the plugin's): a run with no verdict
    (interrupted, crashed, --collect-only) is the verifier's failure, never the candidate's."""
    score = envelope.get("score")
    if not score:
        return "verifier"
    return "none" if score.get("resolved") == "resolved" else "solver"


def score_entry(envelope: Mapping[str, Any], source: str) -> dict[str, Any]:
    """What the ledger keeps of a graded run: the Score and every listed test's outcome."""
    runner = envelope.get("runner") or {}
    return {
        "source": source,
        "benchmark": envelope.get("benchmark"),
        "metric_space": envelope.get("metric_space", "binary_resolved"),
        "instance_id": envelope.get("instance_id"),
        "harness": envelope.get("harness"),
        "status": envelope.get("status"),
        "no_verdict_reason": envelope.get("no_verdict_reason"),
        "score": envelope.get("score"),
        "failure_class": runner.get("failure_class") or envelope.get("failure_class") or failure_class_of(envelope),
        "patch_ref": (envelope.get("score") or {}).get("patch_ref") or envelope.get("patch_ref"),
        "compat": envelope.get("compat"),
        "tests": [
            {key: test.get(key) for key in ("id", "gate", "outcome", "status", "duration")}
            for test in envelope.get("tests", [])
        ],
        "integrity": (envelope.get("integrity") or {}).get("flags", []),
        "disposition": (envelope.get("integrity") or {}).get("disposition"),
        "reasons": (envelope.get("integrity") or {}).get("reasons", []),
        "info": (envelope.get("integrity") or {}).get("info", []),
        "audit_state": (envelope.get("audit") or {}).get("state"),
        "digests": envelope.get("digests"),
        **({"against_gold": against_gold.compact(envelope["against_gold"])} if "against_gold" in envelope else {}),
    }


def run_entries(
    envelope: Mapping[str, Any], source: str, extra: Mapping[str, Any] | None = None
) -> list[tuple[str, Callable[[list[Entry]], Any]]]:
    """The ledger entries of one graded run: its score, its cost when measured, its scorecard when made."""
    score = {**score_entry(envelope, source), **(extra or {})}
    items: list[tuple[str, Callable[[list[Entry]], Any]]] = [("score", lambda _: score)]

    def linked(body: Mapping[str, Any]) -> Callable[[list[Entry]], Any]:
        """An entry that belongs to the run's score entry, written just before it."""
        return lambda written: {"instance_id": score["instance_id"], "patch_ref": score["patch_ref"],
                                "harness": score["harness"], "benchmark": score["benchmark"],
                                "score_seq": written[0].seq, **body}  # fmt: skip

    if envelope.get("cost"):
        items.append(("cost", linked({"cost": envelope["cost"], "breakdown": envelope.get("cost_breakdown") or {}})))
    if envelope.get("scorecard"):
        items.append(("scorecard", linked({"failure_class": score["failure_class"], "scorecard": envelope["scorecard"],
                                           "details": envelope.get("scorecard_details") or {}})))  # fmt: skip
    return items


def record_run(
    path: str | Path, envelope: Mapping[str, Any], source: str, extra: Mapping[str, Any] | None = None
) -> list[Entry]:
    """Append a graded run: its score entry and its cost entry, in one transaction."""
    with Ledger(path) as ledger:
        return ledger.append_linked(run_entries(envelope, source, extra))
