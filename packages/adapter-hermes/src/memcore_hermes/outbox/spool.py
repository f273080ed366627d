"""A durable, bounded SQLite spool: the Hermes plugin's outbox of writes not yet acknowledged.

Every write the agent makes lands here before any network call, so a backend outage or a
crash loses nothing: an entry leaves only when the backend acknowledged it. When a bound is
hit the spool refuses new entries loudly (and counts them) instead of dropping old ones;
entries older than the age bound move to a dead-letter table that ``doctor`` reports.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import attrs

from memcore.errors import Unavailable
from memcore.limits import utf8_len
from memcore.outbox import OutboxEntry, OutboxStats
from memcore.wording import counted
from memcore_hermes.outbox.spool_connection import (
    INSERT_ROW,
    OUTBOX_COLUMNS,
    acquire,
    encode_entry,
    is_damage,
    outbox_row,
    release,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


@attrs.frozen
class SpoolLimits:
    """Bounds on what may wait locally; defaults hold weeks of heavy use."""

    max_entries: int = 10_000
    max_bytes: int = 64 * 1024 * 1024
    max_age_s: float = 30 * 24 * 3600.0


@attrs.frozen
class DeadLetter:
    key: str
    kind: str
    payload: str
    attempts: int
    created_at: float
    dead_at: float
    reason: str


@attrs.frozen
class Claim:
    """The outcome of :meth:`SqliteOutbox.claim`: the entry, or how long it stays busy."""

    entry: OutboxEntry | None
    busy_for_s: float | None

    @property
    def gone(self) -> bool:
        return self.entry is None and self.busy_for_s is None


def new_owner() -> str:
    """A lease owner id: this process and one worker in it."""
    return f"{os.getpid()}:{uuid.uuid4().hex[:12]}"


#: The lease owner of an entry whose last request got no answer: held until it can no longer
#: be landing (a name, not a process id: it never counts as a dead worker's lease).
IN_FLIGHT_OWNER = "in-flight"


def owner_alive(owner: str | None) -> bool:
    """Whether a lease's worker may still be sending (another lane of ours, or a live process)."""
    if not owner:
        return False
    pid_text = owner.split(":", 1)[0]
    if not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    if sys.platform == "win32":
        return True  # os.kill there ends the process it names: a lease expires instead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but is not ours to signal
        return True
    return True


class SqliteOutbox:
    """The spool. Thread-safe; several processes may share the file (WAL, claim leases).

    Instances on one file in one process share a single connection and turn journal
    (:mod:`memcore_hermes.outbox.spool_connection`).
    """

    def __init__(self, path: str | os.PathLike[str], *, limits: SpoolLimits | None = None) -> None:
        self.path = Path(path)
        self.limits = limits or SpoolLimits()
        self._closed = False
        try:
            self._key, self._conn = acquire(self.path)
        except (sqlite3.Error, OSError) as exc:
            raise Unavailable(f"cannot open the spool {self.path}: {exc}", field="spool") from None
        self._lock = self._conn.lock

    def __repr__(self) -> str:
        return f"SqliteOutbox({str(self.path)!r})"

    @property
    def _db(self) -> sqlite3.Connection:
        """The shared connection's database (a new one after a damaged spool is rebuilt)."""
        return self._conn.db

    def _run(self, fn: Callable[[sqlite3.Connection], T], /) -> T:
        """Run ``fn(db)`` under the lock, mapping SQLite errors to :class:`Unavailable`."""
        with self._lock:
            if self._closed:
                raise Unavailable("the spool is closed", field="spool")
            try:
                self._conn.ingest()
            except (sqlite3.Error, OSError) as exc:
                # The records stay in the journal (accepted, on disk) and move on a later call;
                # the operation itself still runs: an ack must free space even on a full disk.
                self._rollback()
                logger.warning(
                    "tablestore-mem: journal records not moved into the spool yet: %s", exc
                )
            try:
                return fn(self._db)
            except sqlite3.Error as exc:
                self._rollback()
                if not is_damage(exc):
                    raise Unavailable(f"spool error: {exc}", field="spool") from None
                problem = str(exc)
            except BaseException:
                # Whatever failed inside, never leave a transaction open for the next write.
                self._rollback()
                raise
            # The file is damaged: move it aside, rebuild it, and run the operation (which
            # rolled back) once more on the fresh spool.
            self._conn.rebuild(problem)
            try:
                self._conn.ingest()
                return fn(self._db)
            except sqlite3.Error as exc:
                self._rollback()
                raise Unavailable(f"spool error: {exc}", field="spool") from None
            except BaseException:
                # Whatever failed inside, never leave a transaction open for the next write.
                self._rollback()
                raise

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    # -- the turn path ----------------------------------------------------------------------
    def prepare(self) -> bool:
        """Create this process's turn journal now (off the turn path); False when it cannot."""
        with self._lock:
            return not self._closed and self._conn.open_journal() is not None

    def put_fast(self, entries: list[OutboxEntry]) -> None:
        """Queue entries from the agent's thread: a memory copy into the journal when they fit.

        Otherwise (no journal, journal full, or the spool near a bound) this is
        :meth:`put_many`, which checks the bounds exactly and raises :class:`Unavailable`
        when the spool is full. Bounds seen here are at most one ingest old; records already
        in the journal are accepted writes and always reach the spool, even past a bound.
        """
        conn = self._conn
        if not self._closed and entries:
            records = [encode_entry(e) for e in entries]
            size = sum(len(r) for r in records)
            for _ in range(2):  # a second look when the journal was swapped meanwhile
                j = conn.journal
                if j is None:
                    if time.monotonic() < conn.journal_retry_at or not self.prepare():
                        break
                    continue
                if (
                    conn.known_depth + j.pending_entries + len(entries) > self.limits.max_entries
                    or conn.known_bytes + j.pending_bytes + size > self.limits.max_bytes
                ):
                    break
                if j.append(records):
                    return
                if not j.sealed:
                    break
        self.put_many(entries)

    # -- the queue: put, claim, ack -----------------------------------------------------------
    def put(self, entry: OutboxEntry) -> bool:
        return self.put_many([entry]) == 1

    def put_many(self, entries: list[OutboxEntry]) -> int:
        """Store the entries atomically (all or none); returns how many were new.

        :class:`Unavailable` when a bound would be exceeded: nothing is stored then, and the
        refusal is counted and logged.
        """
        if not entries:
            return 0
        sizes = [utf8_len(e.payload) for e in entries]
        size = sum(sizes)
        rows = [outbox_row(e, n) for e, n in zip(entries, sizes)]

        def fast(db: sqlite3.Connection) -> int:
            # The common case in one statement, so one implicit transaction: the bound check
            # and the insert happen together, all rows or none (the WHERE is per statement).
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows))
            params = [value for row in rows for value in row]
            params += [len(entries), self.limits.max_entries, size, self.limits.max_bytes]
            cur = db.execute(
                f"INSERT OR IGNORE INTO outbox({OUTBOX_COLUMNS}) SELECT * FROM (VALUES {values}) "
                "WHERE (SELECT value FROM counters WHERE name = 'depth') + ? <= ? "
                "AND (SELECT value FROM counters WHERE name = 'bytes') + ? <= ?",
                params,
            )
            return cur.rowcount

        added_now: int = self._run(fast)
        if added_now > 0:
            self._conn.known_depth += added_now
            self._conn.known_bytes += size
            return added_now
        # Nothing went in: every key was there already, or a bound was hit. The slow path tells
        # which, and counts a refusal.

        def tx(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            totals = dict(
                db.execute("SELECT name, value FROM counters WHERE name IN ('depth', 'bytes')")
            )
            depth, used = totals.get("depth", 0), totals.get("bytes", 0)
            if (
                depth + len(entries) > self.limits.max_entries
                or used + size > self.limits.max_bytes
            ):
                db.execute(
                    "INSERT INTO counters(name, value) VALUES('refused_full', ?) "
                    "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                    (len(entries),),
                )
                db.execute("COMMIT")
                return -1
            added = db.executemany(INSERT_ROW, rows).rowcount
            db.execute("COMMIT")
            if added > 0:  # space freed between the two statements: keep put_fast's view true
                self._conn.refresh_totals()
            return added

        added: int = self._run(tx)
        if added < 0:
            logger.error(
                "tablestore-mem spool %s is FULL (limits: %d entries, %d bytes); %s %s "
                "NOT queued. The backend has not accepted writes for a while; run "
                "`hermes tablestore-mem doctor`.",
                self.path,
                self.limits.max_entries,
                self.limits.max_bytes,
                counted(len(entries), "write"),
                "was" if len(entries) == 1 else "were",
            )
            raise Unavailable("the memory spool is full; the write was not queued", field="spool")
        return added

    def due(self, now: float, *, limit: int = 50) -> list[OutboxEntry]:
        rows = self._run(
            lambda db: db.execute(
                "SELECT key, kind, payload, attempts, created_at, next_attempt_at, last_error "
                "FROM outbox WHERE next_attempt_at <= ? ORDER BY seq LIMIT ?",
                (now, limit),
            ).fetchall()
        )
        return [OutboxEntry(*row) for row in rows]

    def pending(self, *, limit: int = 50) -> list[OutboxEntry]:
        """The oldest entries whatever their retry time (for flushing and diagnostics)."""
        return self.due(float("inf"), limit=limit)

    def claim(
        self,
        key: str,
        *,
        now: float,
        lease_s: float,
        owner: str,
        force: bool = False,
        in_flight_s: float = 0.0,
    ) -> Claim:
        """Take ``key`` for one attempt: counts the attempt and leases it to ``owner``.

        A lease keeps two workers (lanes, processes) from sending one entry at once; it ends
        with :meth:`ack` or :meth:`retry_later`, or at ``lease_s``. When its process is gone
        (killed), the lease still holds for ``in_flight_s`` after it was taken: the dead
        worker's request may still be landing at the backend, and replaying before it lands
        would store the write twice. ``force`` ignores the retry delay, never a lease.
        """

        def tx(db: sqlite3.Connection) -> Claim:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT key, kind, payload, attempts, created_at, next_attempt_at, last_error, "
                "lease_until, lease_owner, lease_taken_at FROM outbox WHERE key = ?",
                (key,),
            ).fetchone()
            if row is None:
                db.execute("COMMIT")
                return Claim(None, None)
            lease_until, lease_owner, lease_taken_at = row[7], row[8], row[9]
            if lease_until > now and lease_owner != owner:
                holds_until = lease_until
                if not owner_alive(lease_owner):
                    holds_until = min(lease_until, lease_taken_at + in_flight_s)
                if holds_until > now:
                    db.execute("COMMIT")
                    return Claim(None, holds_until - now)
            if not force and row[5] > now:
                db.execute("COMMIT")
                return Claim(None, row[5] - now)
            db.execute(
                "UPDATE outbox SET attempts = attempts + 1, lease_until = ?, lease_owner = ?, "
                "lease_taken_at = ? WHERE key = ?",
                (now + lease_s, owner, now, key),
            )
            db.execute("COMMIT")
            return Claim(OutboxEntry(*row[:7]), None)

        result: Claim = self._run(tx)
        return result

    def ack(self, key: str) -> None:
        self._run(lambda db: db.execute("DELETE FROM outbox WHERE key = ?", (key,)))

    def retry_later(
        self, key: str, *, next_attempt_at: float, error: str, hold_until: float | None = None
    ) -> None:
        """Release ``key`` for a later attempt. ``hold_until``: its last request may still be
        landing (no answer came), so no worker takes it before then, not even a forced flush."""
        if hold_until is None:
            lease: tuple[float, str | None, float] = (0.0, None, 0.0)
        else:
            lease = (hold_until, IN_FLIGHT_OWNER, hold_until)
        self._run(
            lambda db: db.execute(
                "UPDATE outbox SET next_attempt_at = ?, last_error = ?, lease_until = ?, "
                "lease_owner = ?, lease_taken_at = ? WHERE key = ?",
                (next_attempt_at, error[:1000], *lease, key),
            )
        )

    def note_error(self, key: str, error: str) -> None:
        """Keep ``error`` next to ``key`` (for ``doctor``) without touching its retry time or
        lease: another worker may be sending it."""
        self._run(
            lambda db: db.execute(
                "UPDATE outbox SET last_error = ? WHERE key = ?", (error[:1000], key)
            )
        )

    def dead_letter(self, key: str, *, now: float, reason: str) -> None:
        """Move an entry that can never succeed out of the way, keeping it for inspection."""

        def tx(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT OR REPLACE INTO dead_letter(seq, key, kind, payload, attempts, created_at, "
                "dead_at, reason) SELECT seq, key, kind, payload, attempts, created_at, ?, ? "
                "FROM outbox WHERE key = ?",
                (now, reason[:1000], key),
            )
            db.execute("DELETE FROM outbox WHERE key = ?", (key,))
            db.execute("COMMIT")

        self._run(tx)
        logger.error(
            "tablestore-mem: a queued write was moved to the dead-letter table: %s", reason
        )

    def expire(self, now: float) -> int:
        """Dead-letter entries older than the age bound; returns how many moved."""
        cutoff = now - self.limits.max_age_s
        old = self._run(
            lambda db: db.execute(
                "SELECT key FROM outbox WHERE created_at < ? ORDER BY seq", (cutoff,)
            ).fetchall()
        )
        for (key,) in old:
            self.dead_letter(
                key,
                now=now,
                reason=f"not accepted by the backend within {self.limits.max_age_s:.0f} s",
            )
        return len(old)

    def stats(self, now: float) -> OutboxStats:
        def q(db: sqlite3.Connection) -> OutboxStats:
            depth, used, oldest = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0), MIN(created_at) FROM outbox"
            ).fetchone()
            refused = db.execute(
                "SELECT value FROM counters WHERE name = 'refused_full'"
            ).fetchone()
            last = db.execute(
                "SELECT last_error FROM outbox WHERE last_error IS NOT NULL ORDER BY seq LIMIT 1"
            ).fetchone()
            waiting = self._conn.journal.pending_entries if self._conn.journal is not None else 0
            return OutboxStats(
                depth=depth + waiting,
                bytes=used,
                oldest_age_s=None if oldest is None else max(0.0, now - oldest),
                dropped_full=refused[0] if refused else 0,
                last_error=last[0] if last else None,
            )

        result: OutboxStats = self._run(q)
        return result

    def dead_letters(self, *, limit: int = 20) -> list[DeadLetter]:
        rows = self._run(
            lambda db: db.execute(
                "SELECT key, kind, payload, attempts, created_at, dead_at, reason FROM dead_letter "
                "ORDER BY seq LIMIT ?",
                (limit,),
            ).fetchall()
        )
        return [DeadLetter(*row) for row in rows]

    def dead_letter_count(self) -> int:
        count: int = self._run(
            lambda db: db.execute("SELECT COUNT(*) FROM dead_letter").fetchone()[0]
        )
        return count

    def checkpoint(self) -> None:
        """Fold the WAL into the database without blocking writers (a separate connection)."""
        try:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=0.1)
            try:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                db.close()
        except sqlite3.Error as exc:
            logger.debug("tablestore-mem: spool checkpoint skipped: %s", exc)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        release(self._key, self._conn)
