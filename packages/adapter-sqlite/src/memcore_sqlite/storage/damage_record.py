"""The record a damaged file leaves beside it, so the next process refuses to write it too.

The whole-file check of an open runs beside the store's work (opening stays fast), so a
short-lived writer (one CLI ``add``) nearly always committed before the check reported: a
file that ``count`` and ``doctor`` had just called damaged, "nothing more is written to
it", took four ``add`` of five, exit 0. A store that finds its file damaged therefore leaves
``<file>-damaged``; an open that sees it checks the whole file before anything else, and
refuses every write when the damage is still there. A file found sound (repaired in place)
loses the record.

A file the record calls damaged that is now empty was replaced by a recovery that wrote
nothing (``.recover`` is missing from some builds of ``sqlite3``, and the pipe still exits
0): serving it as a new store hid every memory, so it is refused until the record is
deleted on purpose.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memcore_sqlite.storage import file_modes

_SUFFIX = "-damaged"


def record_path(path: str) -> Path:
    return Path(path + _SUFFIX)


def noted(path: str) -> bool:
    """Whether a store found ``path`` damaged and no check has found it sound since."""
    return record_path(path).exists()


def note(path: str, detail: str) -> None:
    """Leave the record (what SQLite said); a folder that cannot be written keeps none."""
    target = record_path(path)
    if target.exists():
        return
    with contextlib.suppress(OSError):
        file_modes.create_private(target)
        target.write_text(detail + "\n", encoding="utf-8")


def clear(path: str) -> None:
    """The file was found sound: no record."""
    with contextlib.suppress(OSError):
        record_path(path).unlink()


def emptied(path: str) -> bool:
    """The record stands and the file is now empty (a recovery that wrote nothing)."""
    try:
        return noted(path) and os.stat(path).st_size == 0
    except OSError:
        return False
