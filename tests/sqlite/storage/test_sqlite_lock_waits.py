"""Another process holding SQLite's write lock: this process's writes wait for it, its reads
do not (WAL readers never wait for a writer), and the writes still land once it is free."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


def test_reads_go_on_while_a_write_waits_for_another_process(
    db_path: Path, held_write_lock: Any
) -> None:
    with SqliteMemoryStore(db_path, busy_timeout=15.0) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "green tea")
        outcome: list[object] = []
        with held_write_lock(db_path):
            writer = threading.Thread(
                target=lambda: outcome.append(store.add_text(STORE, ALICE, "black tea"))
            )
            writer.start()
            time.sleep(0.5)  # the write is waiting for the lock now
            started = time.monotonic()
            hits = store.search(STORE, ALICE.pattern(), "tea")
            listed = store.list_memories(STORE, ALICE.pattern()).items
            took = time.monotonic() - started
            assert writer.is_alive()  # still waiting: the reads did not wait for it
        writer.join(15)
        # The reads waited for the write's whole busy timeout before (15 s).
        assert took < 5.0
        assert [h.memory.text for h in hits] == ["green tea"]
        assert [m.text for m in listed] == ["green tea"]
        assert len(outcome) == 1  # the waiting write landed once the lock was free
        texts = [m.text for m in store.list_memories(STORE, ALICE.pattern()).items]
        assert texts == ["green tea", "black tea"]
