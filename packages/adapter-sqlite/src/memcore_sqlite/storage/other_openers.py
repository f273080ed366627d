"""Other processes that have a database file open, for a schema upgrade to wait for.

An older memcore that opened the file before it was upgraded goes on writing the format it
knows (full-text rows straight into the index, float32 vectors): the index then no longer
matches its rows, and a later add fails on every call. SQLite gives no count of a file's
connections, but in WAL mode each holds a shared lock on the file and on its ``-shm`` for as
long as it is open, and Linux lists every lock with its process in ``/proc/locks``. Where that
list cannot be read nothing is known, and the upgrade runs as before.

A current memcore that is upgrading the file too is no such writer: each holds a shared
``flock`` on the file's folder while it upgrades (:func:`upgrading`), which the list shows.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

_LOCKS = Path("/proc/locks")


def _key(path: str) -> str | None:
    """How ``/proc/locks`` names the file: device major:minor (hex) and inode."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def _holders(keys: set[str], kind: str | None = None) -> set[int]:
    """Processes holding (or waiting for) a lock on one of ``keys``; ``kind`` picks the lock
    type (``POSIX``, ``FLOCK``). Unknown (nothing listed, or no list) is empty."""
    try:
        text = _LOCKS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    found = set()
    for line in text.splitlines():
        fields = [f for f in line.split() if f != "->"]
        if len(fields) < 6 or fields[5] not in keys or (kind and fields[1] != kind):
            continue
        if fields[4].isdigit() and int(fields[4]) > 0:  # an OFD lock names no process (-1)
            found.add(int(fields[4]))
    return found


def others(path: str) -> set[int]:
    """Ids of other processes that have ``path`` open (SQLite's locks on it or its ``-shm``)
    and are not upgrading it (:func:`upgrading`)."""
    keys = {k for k in (_key(path), _key(path + "-shm")) if k}
    if not keys:
        return set()
    folder = _key(os.path.dirname(os.path.abspath(path)))
    upgrading_too = _holders({folder}, "FLOCK") if folder else set()
    return _holders(keys, "POSIX") - upgrading_too - {os.getpid()}


@contextlib.contextmanager
def upgrading(path: str) -> Iterator[None]:
    """Mark this process as upgrading ``path`` (a shared ``flock`` on its folder, released
    at the end); a folder that cannot be opened is simply not marked."""
    try:
        import fcntl

        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except (ImportError, OSError):  # not a POSIX system, or a folder we cannot open
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)  # a folder's descriptor: SQLite's locks on the files stay
