"""A session whose spool cannot be opened (a read-only or full Hermes home, a permission
denied): it starts with spooled writes off rather than not at all.

Hermes keeps a provider whose start failed, tools and all, so failing the start only took
recall and search away as well. With writes off the session still recalls and searches; a
turn is logged as NOT recorded, ``remember`` answers why (``sync: true`` still stores at once,
nothing waiting on this process), and no write is ever taken that only a spool could keep.
The delivery machinery runs over an empty stand-in spool in a private temporary folder,
which nothing is written to and which is removed when the session ends.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memcore.errors import MemcoreError
from memcore_hermes.outbox.delivery import retold
from memcore_hermes.outbox.spool import SpoolLimits, SqliteOutbox

if TYPE_CHECKING:
    from memcore_hermes.config.home import HermesHome


def refused_writes(error: MemcoreError, home: HermesHome) -> MemcoreError:
    """``error`` (the spool's) as every spooled write of the session answers it."""
    return retold(
        error,
        f"memory writes are off: {error} (run `hermes tablestore-mem doctor`; make {home.root} "
        "writable, or free space there, then start again); nothing can be queued, so only a "
        "remember with sync: true (`hermes tablestore-mem add --sync`) stores a memory, at "
        "once; recall and search still work",
    )


class StandInSpool:
    """An empty spool in a private temporary folder, for the lane to drain (nothing)."""

    def __init__(self, limits: SpoolLimits | None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tablestore-mem-nospool-"))
        try:
            self.spool = SqliteOutbox(self.folder / "empty.sqlite3", limits=limits)
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
