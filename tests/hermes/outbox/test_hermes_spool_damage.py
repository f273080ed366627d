"""A damaged spool file (a page of garbage, a cut-off file) no longer turns Hermes memory off:
it is kept aside under a timestamped name, a fresh spool is built, the entries the old file
still gives are copied in, the turn journals are replayed, and one warning line says so."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memcore.outbox import OutboxEntry
from memcore_hermes.outbox.journal import Journal, journal_glob
from memcore_hermes.outbox.spool import SqliteOutbox
from memcore_hermes.outbox.spool_connection import encode_entry


def entry(key: str, payload: str = "{}") -> OutboxEntry:
    return OutboxEntry(
        key=key, kind="messages", payload=payload, created_at=0.0, next_attempt_at=0.0
    )


def keys(spool: SqliteOutbox) -> list[str]:
    return [e.key for e in spool.pending(limit=100_000)]


def _filled_spool(path: Path, n: int = 300) -> None:
    spool = SqliteOutbox(path)
    try:
        spool.put_many([entry(f"s{i}", '{"text": "%s"}' % ("x" * 200)) for i in range(n)])
        spool.checkpoint()
    finally:
        spool.close()
    assert not list(journal_glob(path))


def _dead_process_journal(path: Path, names: list[str]) -> None:
    """A journal left by a killed process: records on disk, not yet in the spool."""
    j = Journal.create(path, size=64 * 1024)
    assert j.append([encode_entry(entry(k)) for k in names])
    j.close(unlink=False)


def _aside(path: Path) -> list[Path]:
    found = path.parent.glob(f"{path.name}.damaged-*")
    return sorted(p for p in found if not p.name.endswith(("-wal", "-shm")))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "damaged" in r.getMessage()
    ]


def test_a_truncated_spool_is_kept_aside_rebuilt_and_the_journal_replayed(
    tmp_path: Path, damage, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: a truncated spool answered 'Unavailable ... malformed' until fixed by hand."""
    path = tmp_path / "spool.sqlite3"
    _filled_spool(path)
    _dead_process_journal(path, ["j1", "j2", "j3"])
    before = path.stat().st_size
    damage.truncate(path, 0.5)
    caplog.set_level(logging.WARNING, logger="memcore_hermes")
    spool = SqliteOutbox(path)
    try:
        assert keys(spool)[-3:] == ["j1", "j2", "j3"]
        spool.put_many([entry("after")])
        assert "after" in keys(spool)
    finally:
        spool.close()
    [kept] = _aside(path)
    assert kept.stat().st_size == before // 2  # the damaged file itself, untouched
    [line] = _warnings(caplog)
    assert "\n" not in line and str(path) in line and kept.name in line
    reopened = SqliteOutbox(path)
    try:
        assert "after" in keys(reopened)
    finally:
        reopened.close()


def test_a_page_of_garbage_under_an_open_spool_is_rebuilt_and_keeps_what_it_can(
    tmp_path: Path, damage, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "spool.sqlite3"
    spool = SqliteOutbox(path)
    try:
        spool.put_many([entry(f"s{i}", '{"text": "%s"}' % ("y" * 300)) for i in range(200)])
        spool.checkpoint()
        assert spool.prepare()
        spool.put_fast([entry("fast1"), entry("fast2")])
        assert keys(spool)[-2:] == ["fast1", "fast2"]
        for page in damage.pages(path, "outbox"):
            damage.garble(path, page)
        other = sqlite3.connect(path)  # another process's write: the open spool rereads pages
        other.execute("PRAGMA user_version = 1")
        other.close()
        caplog.set_level(logging.WARNING, logger="memcore_hermes")
        spool.put_many([entry("next")])
        waiting = keys(spool)
        # What the journal still held is back; the garbled rows are gone with the old file.
        assert waiting[-3:] == ["fast1", "fast2", "next"]
        assert len(waiting) == len(set(waiting))
    finally:
        spool.close()
    assert len(_aside(path)) == 1
    assert len(_warnings(caplog)) == 1


def test_a_file_that_is_not_a_database_is_kept_aside_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    spool = SqliteOutbox(path)
    try:
        spool.put_many([entry("a")])
        assert keys(spool) == ["a"]
    finally:
        spool.close()
    [kept] = _aside(path)
    assert kept.read_bytes() == b"this is not a database" * 100
    assert sqlite3.connect(path).execute("PRAGMA quick_check").fetchone() == ("ok",)


def _said(store: Any, scope: Any) -> list[str]:
    return [m.content for m in store.list_messages("hermes_mem", scope, limit=100).items]


def test_turns_delivered_before_the_spool_was_damaged_are_not_stored_again(
    make_provider: Any, fake_store: Any, damage: Any, kit: Any
) -> None:
    """The rebuilt spool replays the whole turn journal, turns already delivered included:
    those are looked for at the service before a send, not stored a second time."""
    provider = make_provider(fake_store)
    for i in range(3):
        provider.sync_turn(f"question {i}", f"answer {i}", session_id="s1")
    assert kit.settle(provider, 5.0)
    spool = provider.runtime.spool
    spool.checkpoint()
    for page in damage.pages(spool.path, "outbox"):
        damage.garble(spool.path, page)
    other = sqlite3.connect(spool.path)  # another process's write: the open spool rereads pages
    other.execute("PRAGMA user_version = 1")
    other.close()
    provider.sync_turn("question 3", "answer 3", session_id="s1")
    assert kit.settle(provider, 5.0)
    assert _aside(spool.path)  # it was rebuilt
    said = _said(fake_store, provider.runtime.scope)
    assert sorted(said) == sorted(f"{w} {i}" for i in range(4) for w in ("question", "answer"))


_KILLED_AFTER_DELIVERY = """
import os, signal, sys
from memcore.outbox import OutboxEntry
from memcore_hermes.outbox.spool import SqliteOutbox
spool = SqliteOutbox(sys.argv[1])
spool.put_fast([OutboxEntry(key=k, kind="messages", payload="{}", created_at=0.0,
                            next_attempt_at=0.0) for k in ("k1", "k2")])
for e in spool.pending(limit=10):  # moved into SQLite, then delivered and acknowledged
    spool.ack(e.key)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_dead_process_journal_replayed_into_a_rebuilt_spool_is_checked_before_a_send(
    tmp_path: Path,
) -> None:
    """A killed process had delivered what its journal held; then the spool file was lost.
    The fresh spool no longer knows how far that journal was moved, so its records come
    back as tried once: delivery then asks the service whether each landed before sending
    it (a never-tried entry is sent without asking)."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "spool.sqlite3"
    proc = subprocess.run([sys.executable, "-c", _KILLED_AFTER_DELIVERY, str(path)], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert journal_glob(path)  # left behind, its progress recorded in the spool only
    for side in ("-wal", "-shm"):  # the record of how far the journal was moved goes too
        Path(f"{path}{side}").unlink()
    path.write_bytes(b"this is not a database" * 200)
    spool = SqliteOutbox(path)
    try:
        back = spool.pending(limit=10)
        assert [e.key for e in back] == ["k1", "k2"]
        assert all(e.attempts >= 1 for e in back)
    finally:
        spool.close()
