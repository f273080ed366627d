"""Keeps the full-text index in few segments, so a query term costs about one b-tree lookup.

FTS5 writes each transaction's rows as a new segment and merges segments of similar size
(``automerge``), so an index grown by many writes is a dozen or more segments, and every
term of every query is looked up in each. With tenant-prefixed terms a small tenant in a
large file then paid for the file: at 100k rows, 15 segments made one 1k tenant's lexical
search 1.5 times slower than the same tenant alone in a file, and one 100k tenant's 8
segments cost a fifth of its lexical time. Merging into one segment (FTS5 ``optimize``)
changes no result, only the cost of finding them.

After enough memory writes the store looks at the segments' sizes, and merges them when
those outside the largest hold more than :data:`LOOSE_SHARE` of the index: the index is
then rewritten each time it has grown by about a quarter, a bounded multiple of writing it
once. The merge is its own transaction after the write committed: it never undoes the write,
never waits for another writer, and a merge that fails (a busy file, a full disk) leaves the
index as it was.

Between those merges, once there are more than :data:`TIDY_SEGMENTS` segments, the small
ones are merged among themselves: FTS5's ``merge`` command with ``usermerge`` 2 combines
segments of one size level, at most :data:`TIDY_PAGES` pages of work a time, and leaves the
largest alone. A 1k tenant among 100 at 100k rows had 7 segments after its fill and paid
about a quarter more per lexical search than alone in a file; merged to 3 segments (0.1 s of
CPU, against 0.48 s for a full merge) it pays about a seventh more.
"""

from __future__ import annotations

import sqlite3

#: Memory writes, and rows changed, between two looks at the segments.
CHECK_WRITES = 64
CHECK_CHANGES = 5_000
#: Share of the index's pages outside its largest segment that makes it worth a merge.
LOOSE_SHARE = 0.2
#: Segments past which the small ones are merged among themselves, and the pages of work
#: (FTS5 pages of about 1 KB) one such merge may do.
TIDY_SEGMENTS = 3
TIDY_PAGES = 2_000


def segment_pages(conn: sqlite3.Connection) -> list[int]:
    """Leaf pages per segment of the full-text index (one row per segment)."""
    return [int(r[0]) for r in conn.execute("SELECT count(*) FROM memory_fts_idx GROUP BY segid")]


def loose(pages: list[int]) -> bool:
    total = sum(pages)
    return len(pages) > 1 and total - max(pages) > LOOSE_SHARE * total


class Upkeep:
    """Counts this process's memory writes and merges the index when it has become loose."""

    def __init__(self) -> None:
        self._writes = 0
        self._changes = 0

    def note_write(self) -> None:
        self._writes += 1

    def after_commit(self, conn: sqlite3.Connection) -> bool:
        """Called after every COMMIT of this connection; True when it merged the index."""
        if not self._writes:
            return False
        if self._writes < CHECK_WRITES and conn.total_changes - self._changes < CHECK_CHANGES:
            return False
        self._writes = 0
        self._changes = conn.total_changes
        # Never wait for another writer: the caller's write is done, and a merge can wait
        # for the next look.
        timeout = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            pages = segment_pages(conn)
            if loose(pages):
                command = "INSERT INTO memory_fts (memory_fts) VALUES ('optimize')"
            elif len(pages) > TIDY_SEGMENTS:
                command = (
                    f"INSERT INTO memory_fts (memory_fts, rank) VALUES ('merge', {TIDY_PAGES})"
                )
            else:
                return False
            conn.execute("BEGIN IMMEDIATE")
            # Stored in the index's config: any two segments of one level may merge.
            conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('usermerge', 2)")
            conn.execute(command)
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return False
        finally:
            conn.execute(f"PRAGMA busy_timeout = {timeout}")
        self._changes = conn.total_changes
        return True
