"""The spool file's one connection per process, and the turn journal that feeds it.

Every :class:`~memcore_hermes.outbox.spool.SqliteOutbox` on a file in this process shares one
:class:`SpoolConnection`: a gateway's many providers then wait on a Python lock instead of
SQLite's busy handler, which sleeps in whole milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

from memcore.limits import utf8_len
from memcore.outbox import OutboxEntry
from memcore_hermes.outbox.journal import HEADER_BYTES, Journal, journal_glob
from memcore_sqlite.storage.errors import SQLITE_CORRUPT, SQLITE_NOTADB, primary_code
from memcore_sqlite.storage.file_modes import FILE_MODE, make_home, open_to_all
from memcore_sqlite.storage.wal import enable_wal

logger = logging.getLogger("memcore_hermes.outbox.spool")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    next_attempt_at REAL NOT NULL,
    last_error TEXT,
    lease_until REAL NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_taken_at REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS dead_letter (
    seq INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created_at REAL NOT NULL,
    dead_at REAL NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS journal_progress (name TEXT PRIMARY KEY, consumed INTEGER NOT NULL);
INSERT OR IGNORE INTO counters(name, value) SELECT 'depth', COUNT(*) FROM outbox;
INSERT OR IGNORE INTO counters(name, value) SELECT 'bytes', COALESCE(SUM(bytes), 0) FROM outbox;
CREATE TRIGGER IF NOT EXISTS outbox_added AFTER INSERT ON outbox BEGIN
    UPDATE counters SET value = value + 1 WHERE name = 'depth';
    UPDATE counters SET value = value + NEW.bytes WHERE name = 'bytes';
END;
CREATE TRIGGER IF NOT EXISTS outbox_removed AFTER DELETE ON outbox BEGIN
    UPDATE counters SET value = value - 1 WHERE name = 'depth';
    UPDATE counters SET value = value - OLD.bytes WHERE name = 'bytes';
END;
"""
# The bounds are checked on every put, on the agent's thread: running totals keep that O(1).


def check_folder(path: Path) -> None:
    """Refuse a spool ``path`` in a folder every user can write, as for the embedded store's
    file: another user could leave the spool or its ``-wal`` there first and read every turn
    written into it (:class:`~memcore.errors.PermissionDenied`)."""
    from memcore.errors import PermissionDenied
    from memcore_hermes.config.home import HOME_ADVICE

    if open_to_all(path.parent):
        raise PermissionDenied(
            f"{path.parent} can be written by every user, who could read the turns through "
            f"files they put beside the spool; use a folder only you can write ({HOME_ADVICE})",
            field=str(path),
        )


def _secure_file(path: Path) -> None:
    """Create ``path`` with mode 0600 (or tighten it), before SQLite opens it; a folder every
    user can write is refused (:func:`check_folder`)."""
    from memcore_hermes.config.home import HOME_ADVICE

    check_folder(path)
    make_home(path.parent, advice=HOME_ADVICE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


#: Insert one spool row (see :func:`outbox_row`); a key already there is left alone.
OUTBOX_COLUMNS = "key, kind, payload, bytes, attempts, created_at, next_attempt_at, last_error"
INSERT_ROW = f"INSERT OR IGNORE INTO outbox({OUTBOX_COLUMNS}) VALUES(?, ?, ?, ?, ?, ?, ?, ?)"


def outbox_row(e: OutboxEntry, size: int | None = None) -> tuple[object, ...]:
    """The parameters of :data:`INSERT_ROW` for ``e``."""
    size = utf8_len(e.payload) if size is None else size
    return (
        e.key,
        e.kind,
        e.payload,
        size,
        e.attempts,
        e.created_at,
        e.next_attempt_at,
        e.last_error,
    )


def encode_entry(entry: OutboxEntry) -> bytes:
    """A journal record: the other fields as one line of ASCII JSON, then the payload as UTF-8.

    The payload is already JSON text; copying its bytes instead of quoting it again keeps the
    turn path short and a CJK turn at its UTF-8 size (quoted, it doubled).
    """
    head = [
        entry.key,
        entry.kind,
        entry.attempts,
        entry.created_at,
        entry.next_attempt_at,
        entry.last_error,
    ]
    # ASCII JSON holds no raw newline, so the first one ends the head; surrogates survive.
    return b"%s\n%s" % (
        json.dumps(head, separators=(",", ":")).encode("ascii"),
        entry.payload.encode("utf-8", "surrogatepass"),
    )


def _row(record: bytes, *, tried: bool = False) -> tuple[object, ...]:
    """The spool row of a journal record; ``tried``: it may have been delivered already
    (counted as one attempt, so delivery looks for it before sending it again)."""
    head, _, payload = record.partition(b"\n")
    key, kind, attempts, created_at, next_attempt_at, last_error = json.loads(head)
    entry = OutboxEntry(
        key=key,
        kind=kind,
        payload=payload.decode("utf-8", "surrogatepass"),
        attempts=max(attempts, 1) if tried else attempts,
        created_at=created_at,
        next_attempt_at=next_attempt_at,
        last_error=last_error,
    )
    return outbox_row(entry, len(payload))


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    try:
        enable_wal(db, timeout=10.0)
        # NORMAL in WAL mode: a commit survives a process crash without an fsync per turn.
        db.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints are run by :meth:`SqliteOutbox.checkpoint` from the background lane,
        # never inside a commit on the agent's thread.
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(outbox)")}
        if "lease_taken_at" not in columns:  # a spool written by 0.1.0 pre-releases
            db.execute("ALTER TABLE outbox ADD COLUMN lease_taken_at REAL NOT NULL DEFAULT 0")
    except BaseException:
        db.close()
        raise
    return db


def is_damage(exc: sqlite3.Error) -> bool:
    """SQLite found the file damaged (SQLITE_CORRUPT) or not a database (SQLITE_NOTADB)."""
    return primary_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB)


def _damage(db: sqlite3.Connection) -> str | None:
    """The first problem ``PRAGMA quick_check`` finds (a spool is small: milliseconds)."""
    rows = db.execute("PRAGMA quick_check(1)").fetchall()
    first = str(rows[0][0]) if rows else "ok"
    return None if first == "ok" else first


def _salvage(aside: Path, db: sqlite3.Connection) -> int:
    """Copy the waiting entries the damaged file still gives into the fresh spool."""
    try:
        old = sqlite3.connect(f"{aside.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = old.execute(f"SELECT {OUTBOX_COLUMNS} FROM outbox ORDER BY seq").fetchall()
        finally:
            old.close()
    except sqlite3.Error:
        return 0
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany(INSERT_ROW, rows)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return len(rows)


class SpoolConnection:
    """One SQLite connection to a spool file, shared by every spool on it in this process.

    The turn path does not even take its lock: it appends to this
    process's :class:`~memcore_hermes.outbox.journal.Journal`, and every spool operation first moves
    what the journal holds into SQLite (:meth:`ingest`), so nothing is ever read out of order.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.users = 0
        self.journal: Journal | None = None
        #: Journals swapped out whose last records may not be in the spool yet.
        self.retiring: list[Journal] = []
        self.journal_retry_at = 0.0
        self.known_depth = 0
        self.known_bytes = 0
        self._adopt_at = 0.0
        _secure_file(path)
        opened: sqlite3.Connection | None = None
        try:
            opened = _open(path)
            problem = _damage(opened)
        except sqlite3.DatabaseError as exc:
            if opened is not None:
                opened.close()
            if not is_damage(exc):
                raise
            opened, problem = None, str(exc)
        if opened is not None and problem is not None:
            opened.close()
        self.db: sqlite3.Connection = (
            opened if opened is not None and problem is None else self._rebuild(problem or "")
        )
        # SQLite gives new -wal/-shm files the database's mode; these may predate the 0600 file.
        for suffix in ("-wal", "-shm"):
            side = Path(f"{path}{suffix}")
            if side.exists():
                try:
                    os.chmod(side, FILE_MODE)
                except OSError:
                    pass

    # -- a damaged spool (under ``self.lock`` once open) -------------------------------------
    def rebuild(self, problem: str) -> None:
        """The open spool turned out damaged: move it aside and start a fresh one."""
        try:
            self.db.close()
        except sqlite3.Error:
            pass
        self.db = self._rebuild(problem)
        self.refresh_totals()

    def _rebuild(self, problem: str) -> sqlite3.Connection:
        """Keep the damaged file (renamed with the time), open a fresh spool, copy in the rows
        the old file still gives, and replay every record the journals still hold.

        Rows are keyed: a record both salvaged and replayed is stored once. What the old file
        had delivered and the journals still hold comes back counted as tried once, so
        delivery looks for it at the service before sending it again
        (see :mod:`memcore_hermes.outbox.delivery`).
        """
        aside = Path(f"{self.path}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            side = Path(f"{self.path}{suffix}")
            if side.exists():
                os.replace(side, f"{aside}{suffix}")
        _secure_file(self.path)
        db = _open(self.path)
        salvaged = _salvage(aside, db)
        for j in self.journals():
            j.replay_all()  # their earlier records went into the damaged file
        logger.warning(
            "tablestore-mem: the spool %s was damaged (%s); kept as %s, rebuilt with %d "
            "readable entries, and the turn journals replayed",
            self.path,
            problem.splitlines()[0][:200] if problem else "unreadable",
            aside.name,
            salvaged,
        )
        return db

    # -- journal (all under ``self.lock``) --------------------------------------------------
    def open_journal(self) -> Journal | None:
        """This process's journal, created on first use; None when the disk refuses one."""
        if self.journal is None and time.monotonic() >= self.journal_retry_at:
            try:
                self.journal = Journal.create(self.path)
            except OSError as exc:
                self.journal_retry_at = time.monotonic() + 60.0
                logger.warning(
                    "tablestore-mem: no turn journal beside %s (%s); turns are written to the "
                    "spool directly",
                    self.path,
                    exc.strerror or exc,
                )
        return self.journal

    def ingest(self) -> None:
        """Move journal records into the spool (one transaction each), and adopt dead processes'."""
        self._drain_retiring()  # sealed journals first: their records came first
        j = self.journal
        if j is not None:
            self._move(j)
            if j.used > j.size // 2:
                self._rotate(j)
        if time.monotonic() >= self._adopt_at:
            self._adopt_orphans()

    def journals(self) -> list[Journal]:
        """Every journal this process holds, oldest first."""
        return [*self.retiring, *([self.journal] if self.journal is not None else [])]

    def _drain_retiring(self) -> None:
        for old in list(self.retiring):
            self._move(old)
            self.retiring.remove(old)
            self._retire(old)

    def _move(self, j: Journal) -> None:
        start, end = j.consumed, j.head
        if start != end:
            records = j.read(start, end)
            tried = len(j.read(start, min(j.tried_until, end))) if start < j.tried_until else 0
            self._insert(j.name, records, end, tried=tried)
            j.mark_consumed(end, len(records))

    def refresh_totals(self) -> None:
        totals = dict(
            self.db.execute("SELECT name, value FROM counters WHERE name IN ('depth', 'bytes')")
        )
        self.known_depth, self.known_bytes = totals.get("depth", 0), totals.get("bytes", 0)

    def _insert(self, name: str, records: list[bytes], upto: int, *, tried: int = 0) -> None:
        """Store ``records``, the first ``tried`` of them as possibly delivered already."""
        # The records and how far they reach commit together: a crash between the two can
        # never replay a record that was already delivered and acknowledged.
        rows = []
        for i, record in enumerate(records):
            try:
                rows.append(_row(record, tried=i < tried))
            except (ValueError, TypeError, UnicodeDecodeError) as exc:  # CRC-checked: not expected
                logger.error(
                    "tablestore-mem: unreadable journal record in %s kept aside: %s", name, exc
                )
                key = f"journal-{name}-{hashlib.sha256(record).hexdigest()[:16]}"
                rows.append(
                    (
                        key,
                        "corrupt",
                        record.decode("utf-8", "replace"),
                        len(record),
                        0,
                        0.0,
                        float("inf"),
                        str(exc),
                    )
                )
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(INSERT_ROW, rows)
            db.execute(
                "INSERT INTO journal_progress(name, consumed) VALUES(?, ?) "
                "ON CONFLICT(name) DO UPDATE SET consumed = excluded.consumed",
                (name, upto),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self.refresh_totals()

    def _rotate(self, old: Journal) -> None:
        """Swap in a fresh journal once the current one is half used; the old one drains out."""
        try:
            new = Journal.create(self.path)
        except OSError:
            return  # keep appending to the old one; the slow path takes over when it is full
        with old.lock:  # appends after this go to the new journal, so order is kept
            old.sealed = True
            self.journal = new
        self.retiring.append(old)
        self._drain_retiring()

    def _retire(self, journal: Journal) -> None:
        # Unlink first: a crash then leaves a stale progress row, never a file to replay twice.
        journal.close(unlink=True)
        self.db.execute("DELETE FROM journal_progress WHERE name = ?", (journal.name,))

    def _adopt_orphans(self) -> None:
        """Replay the journals of processes that died before moving them into the spool."""
        self._adopt_at = time.monotonic() + 30.0
        mine = self.journal.name if self.journal is not None else None
        for path in journal_glob(self.path):
            if path.name == mine:
                continue
            orphan = Journal.adopt(path)
            if orphan is None:
                continue
            try:
                row = self.db.execute(
                    "SELECT consumed FROM journal_progress WHERE name = ?", (orphan.name,)
                ).fetchone()
                start = min(row[0], orphan.head) if row else HEADER_BYTES
                records = orphan.read(start, orphan.head)
                if records:
                    # Without a progress row (a spool that was lost or rebuilt since) nothing
                    # says which records its process delivered: each is looked for first.
                    tried = 0 if row else len(records)
                    self._insert(orphan.name, records, orphan.head, tried=tried)
                    logger.info(
                        "tablestore-mem: replayed %d write(s) left in %s by an earlier process",
                        len(records),
                        orphan.name,
                    )
            except BaseException:
                orphan.close(unlink=False)
                raise
            self._retire(orphan)

    def close(self) -> None:
        """Move what the journals hold into the spool, then close (a failure keeps the files)."""
        with self.lock:
            try:
                for j in self.journals():
                    # Sealed first, under the append lock: a put racing this close either
                    # landed before (and is moved now) or is refused, never copied into a
                    # journal that was already moved and is about to be deleted.
                    with j.lock:
                        j.sealed = True
                    try:
                        self._move(j)
                        self._retire(j)
                    except (sqlite3.Error, OSError) as exc:
                        logger.error(
                            "tablestore-mem: the turn journal %s could not be moved into the spool "
                            "(%s); it is kept and replayed on the next start",
                            j.name,
                            exc,
                        )
                        j.close(unlink=False)
                self.retiring.clear()
                self.journal = None
            finally:
                self.db.close()


_OPEN: dict[tuple[int, str], SpoolConnection] = {}
_OPEN_LOCK = threading.Lock()
#: Connections inherited over a fork: never used or closed in the child, only kept alive.
_INHERITED: list[SpoolConnection] = []


def _after_fork_in_child() -> None:
    global _OPEN_LOCK
    _OPEN_LOCK = threading.Lock()  # another thread may have held it at the fork
    for conn in _OPEN.values():
        for j in conn.journals():
            j.forget_after_fork()
        # A spool object the child inherited must never write into the parent's mapping.
        conn.journal, conn.retiring, conn.journal_retry_at = None, [], float("inf")
    _INHERITED.extend(_OPEN.values())
    _OPEN.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def acquire(path: Path) -> tuple[tuple[int, str], SpoolConnection]:
    key = (os.getpid(), os.path.realpath(path))
    with _OPEN_LOCK:
        conn = _OPEN.get(key)
        if conn is None:
            conn = _OPEN[key] = SpoolConnection(path)
            with conn.lock:
                try:
                    conn.ingest()  # adopt what crashed processes left, before anyone reads
                    conn.refresh_totals()
                except BaseException:
                    del _OPEN[key]
                    conn.db.close()
                    raise
        conn.users += 1
        return key, conn


def release(key: tuple[int, str], conn: SpoolConnection) -> None:
    with _OPEN_LOCK:
        conn.users -= 1
        if conn.users > 0:
            return
        if _OPEN.get(key) is conn:
            del _OPEN[key]
    conn.close()
