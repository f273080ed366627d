"""Whether a writable open must check the whole file: the record a clean close leaves.

``PRAGMA quick_check`` reads every page: 0.5 s of CPU at 100k memories and about 5 s at a
million, which every writable open spent although nothing had changed since the last check.
A store that closes cleanly, its file found sound since anything else last changed it,
leaves ``<file>-clean`` beside it: the file's device, inode, size and modification time, and
when the file was last checked in full. The close first sets the modification time to a
moment a second or more in the past, with nanoseconds of its own choosing; any later write,
by any program, sets it to the present, which no record holds.

A writable open skips the whole-file check only when the record matches the file, no
write-ahead log with content is beside it (a writer that has not closed cleanly: a crash, or
one still at work) and the last full check is younger than :data:`MAX_AGE`. Otherwise (after
a crash, a copy from elsewhere, a stray write, or once a day) the file is checked in full, as
before. Statements that meet damage latch the store either way (``storage.errors``). Damage
made by another program while a store is open and writing is found by the next full check
(at most :data:`MAX_AGE` later) or by the first statement that reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path

from memcore_sqlite.storage import file_modes

#: Seconds after which a file is checked in full again, however cleanly it was closed.
MAX_AGE = 24 * 3600.0
_SUFFIX = "-clean"
_SECOND_NS = 1_000_000_000


def record_path(path: str) -> Path:
    return Path(path + _SUFFIX)


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _wal_written(path: str) -> bool:
    try:
        return os.stat(path + "-wal").st_size > 0
    except OSError:
        return False


def checked_since(path: str, now: float | None = None) -> float | None:
    """When the file was last checked in full, if the record shows nothing changed it since
    (read before this process opens it); None when it must be checked now."""
    try:
        record = json.loads(record_path(path).read_text(encoding="utf-8"))
        st = os.stat(path)
        checked = float(record["checked_at"])
        same = record["file"] == _identity(st)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = time.time() if now is None else now
    if not same or _wal_written(path) or not 0 <= now - checked < MAX_AGE:
        return None
    return checked


def forget(path: str) -> None:
    """No record: the next writable open checks the whole file."""
    with contextlib.suppress(OSError):
        record_path(path).unlink()


def closed_cleanly(path: str, checked_at: float) -> None:
    """After the store's last connection closed: stamp the file and record it, unless a
    write-ahead log with content is left (another connection is still writing)."""
    forget(path)
    if _wal_written(path):
        return
    staging: Path | None = None
    try:
        st = os.stat(path)
        stamp = time.time_ns() - _SECOND_NS - secrets.randbelow(_SECOND_NS)
        os.utime(path, ns=(st.st_atime_ns, stamp))
        identity = _identity(os.stat(path))
        target = record_path(path)
        staging = Path(f"{target}.{os.getpid()}")
        file_modes.create_private(staging)
        staging.write_text(
            json.dumps({"file": identity, "checked_at": checked_at}), encoding="utf-8"
        )
        os.replace(staging, target)
    except OSError:
        if staging is not None:
            with contextlib.suppress(OSError):
                staging.unlink()
        forget(path)  # no record: the next open checks, as it would have anyway
