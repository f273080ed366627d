"""Room on the disk for a SQLite file not made yet, or one about to be written: the nearest
folder that exists, and whether the disk holding it has the room a write needs.

Both hosts' ``doctor`` fail a folder by this one rule (``memcore doctor``'s data home,
``hermes tablestore-mem doctor``'s home and local store folder): a file can be sound, and a
read can work, while every write fails for want of room.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Free bytes below which a folder fails: an add puts its pages (tens of KiB) in the
#: write-ahead log, and a reader needs room for the 32 KiB shared-memory file; a few writes
#: fill less than this, and then every write (and a read that makes that file) fails.
LOW_SPACE = 1 << 20


def nearest_existing(path: Path) -> Path:
    """``path`` or its nearest parent that exists: where a file not made yet would go, and
    whose file system's limits, room and permissions it would get."""
    existing = path
    while existing != existing.parent and not _exists(existing):
        existing = existing.parent
    return existing


def free_bytes(path: Path) -> int | None:
    """Bytes this user may still write on the disk holding ``path`` (or its nearest existing
    folder); None where the system does not say."""
    try:
        st = os.statvfs(nearest_existing(path))
    except (OSError, AttributeError):  # no statvfs on Windows
        return None
    return st.f_bavail * st.f_frsize


def too_little(free: int | None) -> str | None:
    """What ``free`` bytes (from :func:`free_bytes`) mean for a write, when under
    :data:`LOW_SPACE`: "the disk holding it has N bytes free: ..."; None with room (or
    where the system does not say)."""
    if free is None or free >= LOW_SPACE:
        return None
    return (
        f"the disk holding it has {free:,} bytes free: writes fail (and reads may) until "
        "space is freed"
    )


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # too long a name to look up: it does not exist
        return False
