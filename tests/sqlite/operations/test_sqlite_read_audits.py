"""Reads' audit records, written with the store's next write transaction: every read made
before a listing is in it; another connection sees them after a batch, a memory write, the
delay or close; a rolled-back write keeps them; a killed process loses fewer than a batch."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.operations.read_audits import BATCH

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


def _on_file(path: Path, operation: str = "SearchMemories") -> int:
    """Records another connection reads in the file."""
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM requests WHERE operation = ?", (operation,)
            ).fetchone()[0]
        )
    finally:
        conn.close()


def _listed(store: SqliteMemoryStore, operation: str = "SearchMemories") -> int:
    n, token = 0, None
    while True:
        page = store.list_requests(STORE, operation=operation, limit=100, next_token=token)
        n += len(page.items)
        token = page.next_token
        if token is None:
            return n


def _store(path: Path, delay: float = 60.0) -> SqliteMemoryStore:
    store = SqliteMemoryStore(path)
    store.ensure_store(STORE)
    store._tx.read_audits.delay = delay
    return store


def _search(store: SqliteMemoryStore, times: int) -> None:
    for _ in range(times):
        store.search(STORE, ALICE.pattern(), "tea")


def test_a_listing_holds_every_read_made_before_it(db_path: Path) -> None:
    with _store(db_path) as store:
        store.add_text(STORE, ALICE, "green tea")
        for total in (1, 5, BATCH, 2 * BATCH + 3):
            _search(store, total - _listed(store))
            assert _listed(store) == total
        memory = store.list_memories(STORE, ALICE.pattern()).items[0]
        store.get_memory(STORE, ALICE, memory.id)
        assert _listed(store, "GetMemory") == 1
        assert _listed(store, "ListMemories") == 1


def test_another_connection_sees_them_after_a_batch_a_write_or_close(db_path: Path) -> None:
    store = _store(db_path)
    store.add_text(STORE, ALICE, "green tea")
    _search(store, BATCH - 1)
    assert _on_file(db_path) == 0  # kept, not yet written
    _search(store, 1)
    assert _on_file(db_path) == BATCH  # a full batch is written in the read that fills it
    _search(store, 3)
    store.add_text(STORE, ALICE, "black tea")  # the write's transaction takes them along
    assert _on_file(db_path) == BATCH + 3
    assert _on_file(db_path, "AddMemories") == 2
    _search(store, 2)
    store.close()
    assert _on_file(db_path) == BATCH + 5


def test_they_reach_the_file_after_the_delay_without_any_write(db_path: Path) -> None:
    with _store(db_path, delay=0.1) as store:
        store.add_text(STORE, ALICE, "green tea")
        _search(store, 3)
        deadline = time.monotonic() + 10
        while _on_file(db_path) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _on_file(db_path) == 3
        _search(store, 2)  # the next ones start the timer again
        deadline = time.monotonic() + 10
        while _on_file(db_path) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _on_file(db_path) == 5


def test_a_rolled_back_write_keeps_them_for_the_next_one(db_path: Path) -> None:
    with _store(db_path) as store:
        store.add_text(STORE, ALICE, "green tea")
        _search(store, 4)
        try:
            with store._tx.write():
                raise RuntimeError("the write fails")
        except RuntimeError:
            pass
        assert _on_file(db_path) == 0
        assert _listed(store) == 4
        assert _on_file(db_path) == 4


def _searches_in_a_child(path: Path, searches: int, *, killed: bool) -> None:
    """A process that searches and exits without closing its store; ``killed``: at once,
    as a killed process would (no interpreter shutdown)."""
    with _store(path) as store:
        store.add_text(STORE, ALICE, "green tea")
    child = (
        "import os, sys\n"
        "from memcore.scope import Scope\n"
        "from memcore_sqlite import SqliteMemoryStore\n"
        "s = SqliteMemoryStore(sys.argv[1])\n"
        "s._tx.read_audits.delay = 60.0\n"
        f"for _ in range({searches}):\n"
        "    s.search('mem', Scope('app', 'alice', 'agent', 'run').pattern(), 'tea')\n"
        + ("os._exit(0)\n" if killed else "")
    )
    subprocess.run([sys.executable, "-c", child, str(path)], check=True, timeout=60)


def test_a_process_that_exits_without_closing_its_store_writes_them(db_path: Path) -> None:
    _searches_in_a_child(db_path, 5, killed=False)
    assert _on_file(db_path) == 5


def test_a_killed_process_loses_fewer_than_a_batch(db_path: Path) -> None:
    _searches_in_a_child(db_path, BATCH + 5, killed=True)
    assert _on_file(db_path) == BATCH  # the last 5 were still kept when it died
    with SqliteMemoryStore(db_path) as store:
        assert store.search(STORE, ALICE.pattern(), "tea")  # the file is whole


def _audit_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memcore-sqlite-audit"]


def test_one_thread_writes_them_and_close_stops_it(db_path: Path) -> None:
    before = len(_audit_threads())
    store = _store(db_path, delay=0.05)
    store.add_text(STORE, ALICE, "green tea")
    for _ in range(3):  # three rounds of records, each written when due, by one thread
        _search(store, 2)
        time.sleep(0.3)
    assert len(_audit_threads()) == before + 1
    store.close()
    assert len(_audit_threads()) == before
    assert _on_file(db_path) == 6


def test_closing_while_another_thread_starts_the_writer_does_not_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A warm-up starts the writer in the background while the store closes (a server
    stopped at once): ``close`` joined the thread between its creation and its start, and
    ``Thread.join`` raised "cannot join thread before it is started"."""
    from memcore_sqlite.operations import read_audits

    creating = threading.Event()

    class SlowToStart(threading.Thread):
        def start(self) -> None:
            creating.set()
            time.sleep(0.2)  # the gap between creating the thread and starting it, widened
            super().start()

    audits = read_audits.ReadAudits(lambda wait: None)
    starter = threading.Thread(target=audits.start)  # made before the patch: a plain thread
    monkeypatch.setattr(read_audits.threading, "Thread", SlowToStart)
    starter.start()
    assert creating.wait(5)
    audits.close()  # raised RuntimeError
    starter.join(5)
    assert not starter.is_alive()


def test_close_does_not_wait_out_another_process_s_lock(
    db_path: Path, held_write_lock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The reads' records are dropped, logged, after a short wait: close waited the whole
    busy timeout (30 s) for them."""
    store = _store(db_path)
    store.add_text(STORE, ALICE, "green tea")
    _search(store, 3)
    with held_write_lock(db_path):
        started = time.monotonic()
        store.close()
        took = time.monotonic() - started
    assert took < 5.0
    assert "3 records of reads" in caplog.text
    assert _on_file(db_path) == 0
    assert _on_file(db_path, "AddMemories") == 1


def test_close_does_not_wait_for_the_writing_thread_s_wait(
    db_path: Path, held_write_lock: Any
) -> None:
    """The thread that writes them when due was waiting for the lock too, and close joined it."""
    store = _store(db_path, delay=0.05)
    store.add_text(STORE, ALICE, "green tea")
    with held_write_lock(db_path):
        _search(store, 2)
        time.sleep(0.3)  # the records are due: the thread is trying to write them
        started = time.monotonic()
        store.close()
        took = time.monotonic() - started
    assert took < 5.0


def test_a_read_that_fills_a_batch_does_not_wait_for_the_lock(
    db_path: Path, held_write_lock: Any
) -> None:
    """The batch is kept and written once the lock is free; each read returned at once
    (the read that filled it waited the busy timeout, then failed)."""
    with _store(db_path) as store:
        store.add_text(STORE, ALICE, "green tea")
        with held_write_lock(db_path):
            started = time.monotonic()
            _search(store, BATCH + 3)
            took = time.monotonic() - started
        assert took < 5.0
        assert _listed(store) == BATCH + 3
