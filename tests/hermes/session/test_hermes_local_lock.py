"""The local backend while another process holds the SQLite file's write lock."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memcore_hermes import MemcoreMemoryProvider

HOLD = (
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "print('held', flush=True)\n"
    "sys.stdin.readline()\n"
)


@contextmanager
def _another_process_writing(database: Path) -> Iterator[None]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.stdin.close()  # it lets the lock go and ends
        holder.wait(30)


def test_shutdown_does_not_wait_for_another_processs_write_lock(
    hermes_home: Path, kit: Any
) -> None:
    """Nothing waits to be delivered, only the records of the session's reads: shutdown
    waited the whole busy timeout (30 s) to write them."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    provider.sync_turn("My cat is called Miso", "What a lovely name.", session_id="s1")
    provider.queue_prefetch("cat name")
    assert provider.runtime.wait_idle(10)
    assert "Miso" in provider.prefetch("cat name")
    with _another_process_writing(hermes_home / "tablestore_memory_local.sqlite3"):
        started = time.monotonic()
        provider.shutdown()
        took = time.monotonic() - started
    assert took < 10.0


def test_a_search_answers_while_a_turn_waits_for_another_processs_lock(
    hermes_home: Path, kit: Any
) -> None:
    """The turn's write waits in the delivery lane; the search waited for it (30 s) before.
    The turn lands, once, when the lock is let go."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        provider.sync_turn("My cat is called Miso", "What a lovely name.", session_id="s1")
        assert provider.runtime.wait_idle(10)
        with _another_process_writing(hermes_home / "tablestore_memory_local.sqlite3"):
            provider.sync_turn("My dog is called Rex", "A classic.", session_id="s1")
            time.sleep(0.5)  # the lane is waiting for the lock now
            started = time.monotonic()
            answer = json.loads(provider.handle_tool_call("tablestore_search", {"query": "Miso"}))
            took = time.monotonic() - started
        assert took < 5.0
        assert any("Miso" in hit["text"] for hit in answer["results"])
        assert provider.runtime.wait_idle(30)
        rex = json.loads(provider.handle_tool_call("tablestore_search", {"query": "dog Rex"}))
        assert [h["text"] for h in rex["results"]].count("My dog is called Rex") == 1
    finally:
        provider.shutdown()
