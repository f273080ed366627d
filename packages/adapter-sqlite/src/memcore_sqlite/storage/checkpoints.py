"""Keeps the WAL short without checkpointing inside a search.

Every read is audited in a short write of its own, and SQLite's auto-checkpoint runs inside
whichever commit takes the WAL past ``wal_autocheckpoint`` pages (1000): at about two pages
per audit row, one search in some 475 copied the WAL into the file and synced it before it
returned (3-9 ms measured on a 1k file, where a search's median is 0.5-1.3 ms). The audit commits of reads
therefore run with the auto-checkpoint off, and every :data:`AUDITS` of them a thread folds the
WAL into the file with ``PASSIVE`` checkpoints on a connection of its own (SQLite releases the
GIL while it copies and syncs). The first runs beside the searches; the second, which copies
only what they committed meanwhile, holds the store's lock, so that the next writer finds the
WAL all in the file and starts it over (else a busy store's WAL would only grow). Memory writes
keep SQLite's auto-checkpoint, so a write still folds in what the reads left.

A checkpoint only copies committed pages from the WAL into the file: where it runs changes
neither what survives a crash nor what another process reads.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from memcore_sqlite.storage import fork_guard

#: Audit commits of reads between two checkpoints: about the pages SQLite's default allows.
AUDITS = 400


class Checkpoints:
    """Counts the reads' audit commits of one store and checkpoints its file in a thread."""

    def __init__(self, path: str, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._path = path
        self._lock = lock
        self._pages = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        self._audits = 0
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    @contextmanager
    def off(self, conn: sqlite3.Connection) -> Iterator[None]:
        """Around one transaction of ``conn``, under the store's lock: its commit runs no
        checkpoint."""
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            yield
        finally:
            conn.execute(f"PRAGMA wal_autocheckpoint = {self._pages}")

    def audited(self) -> None:
        """One more audit commit of a read; every :data:`AUDITS` the thread checkpoints."""
        self._audits += 1
        if self._audits < AUDITS or self._closed or self._path == ":memory:":
            return
        self._audits = 0
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="memcore-sqlite-checkpoint", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        try:
            with fork_guard.working():
                conn = fork_guard.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return  # memory writes still checkpoint, and so does the last close
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closed:
                    return
                try:
                    self._fold(conn)
                except sqlite3.Error:
                    pass  # a busy or full file: the next round, or a write, folds it in
        finally:
            with fork_guard.working():
                conn.close()

    def _fold(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL into the file while searches go on, then what they committed meanwhile
        while none runs (nothing left to copy costs nothing)."""
        with fork_guard.working():
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            with self._lock:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running); before the store's
        connection closes (so that the last close still checkpoints, as SQLite does) and
        without the store's lock (which the thread may be waiting for)."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
