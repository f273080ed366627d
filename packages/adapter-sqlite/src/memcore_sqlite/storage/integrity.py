"""Is the database file sound? ``PRAGMA quick_check``, timed, and the fix when it is not.

``quick_check`` reads every page and checks each b-tree's structure (not the indexes against
their tables, which ``integrity_check`` adds at several times the cost): 49 ms on a 20 MB
store with 20,000 memories, against 323 ms for ``integrity_check``, on a loaded 2-core machine.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs

from memcore_sqlite.storage import fork_guard
from memcore_sqlite.storage.errors import SQLITE_CORRUPT, SQLITE_NOTADB, map_error, primary_code

# Re-exported: both doctors name a damaged file's fix through this module.
from memcore_sqlite.storage.errors import corrupted as corrupted
from memcore_sqlite.storage.errors import recovery_hint as recovery_hint

#: The problems a report keeps; the first few name the damage well enough.
MAX_PROBLEMS = 5
#: SQLite's primary result code for a refused write, and its message (Python 3.10 has no
#: code).
_SQLITE_READONLY = 8
_READONLY_MESSAGE = "attempt to write a readonly database"


@attrs.frozen
class IntegrityReport:
    """``problems`` is empty when the file is sound; ``seconds`` is how long the check took."""

    path: str
    problems: tuple[str, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.problems


def quick_check(path: str | Path) -> IntegrityReport:
    """Run ``PRAGMA quick_check`` on a read-only connection of its own (no write lock taken,
    :func:`reading`). A file SQLite cannot even read as a database is reported as a problem,
    not raised. A check that could not run for another reason (a full disk or a file-size
    limit refusing the shared-memory file, no file handles left, a lock) says nothing of the
    pages: it raises the mapped error (``Unavailable``), lest a sound file be called damaged
    and its writes refused."""
    started = time.perf_counter()
    problems: tuple[str, ...]
    try:
        with fork_guard.working(), reading(path) as conn:
            rows = conn.execute(f"PRAGMA quick_check({MAX_PROBLEMS})").fetchall()
        problems = tuple(str(r[0]) for r in rows if str(r[0]) != "ok")
    except sqlite3.DatabaseError as exc:
        if not _about_the_pages(exc):
            raise map_error(exc, path=str(path)) from exc
        problems = (str(exc),)
    return IntegrityReport(str(path), problems, time.perf_counter() - started)


def _about_the_pages(exc: sqlite3.DatabaseError) -> bool:
    """SQLite found the pages damaged (SQLITE_CORRUPT) or no database (SQLITE_NOTADB); an
    error without a known code counts too unless it is an operational one."""
    code = primary_code(exc)
    if code is None:
        return not isinstance(exc, sqlite3.OperationalError)
    return code in (SQLITE_CORRUPT, SQLITE_NOTADB)


@contextmanager
def reading(path: str | Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection of its own. A reader of a WAL database must create its
    shared-memory file beside it, and SQLite answers a folder this process cannot write with
    "attempt to write a readonly database", which says nothing of the pages: there the file
    is read as immutable (nobody without write access to the folder changes it meanwhile)."""
    uri = Path(path).resolve().as_uri()
    try:
        conn = _opened(uri + "?mode=ro")
    except sqlite3.OperationalError as exc:
        if not _read_only(exc):
            raise
        conn = _opened(uri + "?mode=ro&immutable=1")
    try:
        yield conn
    finally:
        conn.close()


def _opened(uri: str) -> sqlite3.Connection:
    """A connection that has read the file's schema (where a refused shared-memory file shows)."""
    conn = fork_guard.connect(uri, uri=True, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _read_only(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_READONLY (any of its extended codes): a write was refused, no page was read."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is None:
        return str(exc) == _READONLY_MESSAGE
    return bool(code & 0xFF == _SQLITE_READONLY)
