"""A damaged spool file (a page of garbage, a cut-off file) no longer turns Hermes memory off:
it is kept aside under a timestamped name, a fresh spool is built, the entries the old file
still gives are copied in, the turn journals are replayed, and one warning line says so."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

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
