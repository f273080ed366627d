"""Map ``sqlite3`` failures to memcore errors by their SQLite result code, never their text."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memcore.errors import (
    InvalidInput,
    MemcoreError,
    PermissionDenied,
    ProtocolError,
    StoreCorrupted,
    Unavailable,
)

# Primary result codes from sqlite3.h.
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_NOMEM = 7
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
#: The WAL's shared-memory file could not be grown: on Unix its one write failed, which a
#: full disk (ENOSPC) or a file-size limit (EFBIG, ``ulimit -f``) causes.
SQLITE_IOERR_SHMSIZE = SQLITE_IOERR | (19 << 8)

#: SQLite's fixed messages (sqlite3_errstr) for the codes we act on: Python 3.10 gives the
#: message but no result code, and these texts are part of SQLite's stable interface.
_FIXED_MESSAGES = {
    "database is locked": SQLITE_BUSY,
    "database table is locked": SQLITE_LOCKED,
    "attempt to write a readonly database": SQLITE_READONLY,
    "access permission denied": SQLITE_PERM,
    "unable to open database file": SQLITE_CANTOPEN,
    "database or disk is full": SQLITE_FULL,
    "disk I/O error": SQLITE_IOERR,
    "database disk image is malformed": SQLITE_CORRUPT,
    "file is not a database": SQLITE_NOTADB,
}


def primary_code(exc: sqlite3.Error) -> int | None:
    """The primary result code of ``exc``: its own on Python 3.11+, else read off the message."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    return _FIXED_MESSAGES.get(str(exc))


def map_error(exc: sqlite3.Error, *, path: str, advice: str | None = None) -> MemcoreError:
    """The memcore error for a sqlite3 exception; the database path is the ``field`` and is
    named in the message too (a user with several homes needs to know which file).
    ``advice`` ends a file that cannot be written: how to move it (as a file that cannot be
    created says)."""
    primary = primary_code(exc)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    if primary in (SQLITE_BUSY, SQLITE_LOCKED):
        return Unavailable(
            f"the memory database {path} is busy (another process holds a lock) [{name}]; retry",
            field=path,
            retryable=True,
        )
    if primary == SQLITE_FULL or getattr(exc, "sqlite_errorcode", None) == SQLITE_IOERR_SHMSIZE:
        limit = _size_limit()
        if limit and _room_on_disk(path):  # `ulimit -f`, with 65 GB free, was "the disk is full"
            return Unavailable(
                f"the memory database {path} could not grow [{name}]{limit}", field=path
            )
        return Unavailable(
            f"the disk holding the memory database {path} is full [{name}]; free space and retry",
            field=path,
            retryable=True,
        )
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return corrupted(path, f"{exc} [{name}]")
    if primary == SQLITE_CANTOPEN and os.path.isdir(path):
        return InvalidInput(
            f"the memory database {path} is a folder; give the path of a file [{name}]",
            field=path,
        )
    if primary in (SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN):
        move = f"; {advice}" if advice else ""
        return PermissionDenied(
            f"the memory database {path} cannot be written (read-only file or folder) "
            f"[{name}]{move}",
            field=path,
        )
    if primary in (SQLITE_IOERR, SQLITE_NOMEM):
        return Unavailable(
            f"the memory database {path} hit an I/O error [{name}]{_size_limit()}", field=path
        )
    if primary is None and isinstance(exc, sqlite3.OperationalError):
        # Python < 3.11 carries no result code; an operational error is the transient kind.
        return Unavailable(f"the memory database {path} failed [{name}]: {exc}", field=path)
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return ProtocolError(
            f"the memory database {path} failed [{name}]: {exc}", field=path, retryable=False
        )
    return Unavailable(f"the memory database {path} failed [{name}]: {exc}", field=path)


def _room_on_disk(path: str) -> bool:
    """The folder of ``path`` has a MiB free or more (so a full disk is not the cause)."""
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free >= 1 << 20
    except OSError:
        return False


def _size_limit() -> str:
    """The file-size limit this process runs under (``ulimit -f``), when it has one: a write
    past it fails with EFBIG, which SQLite reports as an I/O error, not as a full disk."""
    try:
        import resource
    except ImportError:  # Windows
        return ""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY:
        return ""
    return f"; this process may not write a file past {soft:,} bytes (ulimit -f), the likely cause"


@contextmanager
def mapped(path: str, advice: str | None = None) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise map_error(exc, path=path, advice=advice) from exc


def recovery_hint(path: str | Path) -> str:
    """The fix for a damaged file: keep a copy, recover what SQLite can read into a new file."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = f"{path}.damaged-{stamp}"
    return (
        f"copy it aside first (cp '{path}' '{backup}'), then recover what is readable: "
        f"sqlite3 '{backup}' .recover | sqlite3 '{path}.recovered' ('.dump' where your "
        f"sqlite3 lacks '.recover'), check that it holds your memories (sqlite3 "
        f"'{path}.recovered' 'SELECT count(*) FROM memories') and move "
        f"'{path}.recovered' to '{path}' (with every program using it stopped)"
    )


def corrupted(path: str | Path, detail: str) -> StoreCorrupted:
    """The typed error for a damaged file, naming the file, what SQLite said, and the fix."""
    return StoreCorrupted(
        f"the memory database {path} is damaged ({detail}); nothing more is written to it. "
        f"To repair it, {recovery_hint(path)}",
        field=str(path),
    )
