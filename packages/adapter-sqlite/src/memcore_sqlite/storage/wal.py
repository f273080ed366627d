"""Switch a connection's file to WAL, waiting out other processes that open it at the same time.

SQLite takes the exclusive lock that the switch needs without calling the busy handler, so
``busy_timeout`` does not cover it: two processes opening a new file at once would see
SQLITE_BUSY at once. We retry the switch instead, within the same time budget. A file already
in WAL mode (every open after the first) answers at once, so tenacity is imported only when
the first try meets a lock: it costs about 20 ms of CPU, a tenth of a ``memcore list``.
"""

from __future__ import annotations

import sqlite3

from memcore_sqlite.storage.errors import SQLITE_BUSY, SQLITE_LOCKED, primary_code


def is_busy(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED (and their extended codes)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    return primary_code(exc) in (SQLITE_BUSY, SQLITE_LOCKED)


def enable_wal(conn: sqlite3.Connection, *, timeout: float) -> str:
    """Put the file in WAL mode; the journal mode SQLite reports (``memory`` for ``:memory:``)."""
    try:
        return _switch(conn)
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise
    import tenacity

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_busy),
        stop=tenacity.stop_after_delay(timeout),
        wait=tenacity.wait_exponential_jitter(initial=0.002, max=0.1, jitter=0.005),
        reraise=True,
    )
    for attempt in retrying:
        with attempt:
            return _switch(conn)
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


def _switch(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
