"""What the upgrade and doctor tests share: a store written by memcore 0.1.0 (schema 1),
the shape of a file (its version and tables, to show a diagnostic changed nothing), and
another process keeping a file open, as an older memcore left running would."""

from __future__ import annotations

import gzip
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: A small store memcore 0.1.0 wrote: two tenants' memories and messages, at schema 1.
FIXTURE = Path(__file__).parent / "data" / "sqlite_0_1_0_store.db.gz"

_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM memories").fetchone()
print("READY", flush=True)
sys.stdin.read()
conn.close()
"""


def write_older(path: Path) -> Path:
    """``path``, made a copy of the 0.1.0 store (only its owner may read it, as memcore's)."""
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    path.chmod(0o600)
    return path


def file_shape(db: Path) -> tuple[int, list[tuple[str, str]]]:
    """The file's schema version and every table with its SQL, read without writing."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
    finally:
        conn.close()
    return version, [(str(n), str(s)) for n, s in tables]


class Holder:
    """Another process that has a file open: its ``pid``, and :meth:`let_go` to close it."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.pid = process.pid
        self._process = process

    def let_go(self) -> None:
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()
        self._process.wait(timeout=30)


@contextmanager
def held_open(database: Path) -> Iterator[Holder]:
    """Another process keeps ``database`` open (a read done, its connection kept) until
    :meth:`Holder.let_go` or the end of the block."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    holder = Holder(process)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "READY"
        yield holder
    finally:
        holder.let_go()
