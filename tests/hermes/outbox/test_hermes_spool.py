"""The durable spool: ordering, idempotency keys, bounds, leases, dead letters, file safety."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.errors import Unavailable
from memcore.outbox import OutboxEntry
from memcore_hermes.outbox.spool import SpoolLimits, SqliteOutbox


def entry(key: str, payload: str = "{}", *, at: float = 0.0) -> OutboxEntry:
    return OutboxEntry(key=key, kind="text", payload=payload, created_at=at, next_attempt_at=at)


@pytest.fixture
def spool(tmp_path: Path) -> SqliteOutbox:
    s = SqliteOutbox(tmp_path / "spool.sqlite3")
    yield s
    s.close()


def test_put_keeps_order_and_refuses_a_duplicate_key(spool: SqliteOutbox) -> None:
    assert spool.put(entry("a"))
    assert spool.put(entry("b"))
    assert not spool.put(entry("a", payload='{"other": 1}'))
    assert [e.key for e in spool.due(1.0)] == ["a", "b"]


def test_an_entry_leaves_only_through_ack(spool: SqliteOutbox) -> None:
    spool.put(entry("a"))
    spool.retry_later("a", next_attempt_at=50.0, error="unavailable: down")
    assert spool.due(10.0) == []
    assert spool.stats(10.0).depth == 1
    assert spool.stats(10.0).last_error == "unavailable: down"
    assert [e.key for e in spool.due(60.0)] == ["a"]
    spool.ack("a")
    assert spool.stats(60.0).depth == 0


def test_entries_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite3"
    first = SqliteOutbox(path)
    first.put(entry("a", '{"x": "ü"}'))
    first.close()
    second = SqliteOutbox(path)
    try:
        [again] = second.due(1.0)
        assert again.key == "a" and again.payload == '{"x": "ü"}'
    finally:
        second.close()


def test_the_spool_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite3"
    path.write_bytes(b"")
    path.chmod(0o644)
    s = SqliteOutbox(path)
    s.put(entry("a"))
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        for side in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            if side.exists():
                assert stat.S_IMODE(side.stat().st_mode) & 0o077 == 0
        mode = s._db.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    finally:
        s.close()


def test_a_spool_in_a_folder_every_user_can_write_is_refused(tmp_path: Path) -> None:
    """As the embedded store's file: another user could leave the spool's ``-wal`` there
    first and read every turn SQLite writes into it."""
    from memcore.errors import PermissionDenied

    shared = tmp_path / "hermes-home"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "spool.sqlite3-wal"
    planted.write_bytes(b"")
    with pytest.raises(PermissionDenied) as refused:
        SqliteOutbox(shared / "spool.sqlite3")
    assert str(refused.value).endswith("(set HERMES_HOME to a writable folder)")
    assert planted.read_bytes() == b""
    assert sorted(p.name for p in shared.iterdir()) == ["spool.sqlite3-wal"]


def test_a_full_spool_refuses_loudly_and_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = SqliteOutbox(tmp_path / "s.sqlite3", limits=SpoolLimits(max_entries=2))
    s.put(entry("a"))
    s.put(entry("b"))
    with pytest.raises(Unavailable) as info:
        s.put(entry("c"))
    assert info.value.field == "spool"
    assert "FULL" in caplog.text
    stats = s.stats(1.0)
    assert stats.depth == 2 and stats.dropped_full == 1
    assert [e.key for e in s.due(1.0)] == ["a", "b"]  # nothing old was pushed out
    s.close()


def test_the_byte_bound_applies(tmp_path: Path) -> None:
    s = SqliteOutbox(tmp_path / "s.sqlite3", limits=SpoolLimits(max_bytes=100))
    s.put(entry("a", "x" * 80))
    with pytest.raises(Unavailable):
        s.put(entry("b", "y" * 30))
    s.close()


def test_put_many_is_all_or_nothing(tmp_path: Path) -> None:
    s = SqliteOutbox(tmp_path / "s.sqlite3", limits=SpoolLimits(max_entries=3))
    s.put(entry("a"))
    with pytest.raises(Unavailable):
        s.put_many([entry("b"), entry("c"), entry("d")])
    assert [e.key for e in s.pending()] == ["a"]
    s.close()


def test_old_entries_become_dead_letters_not_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = SqliteOutbox(tmp_path / "s.sqlite3", limits=SpoolLimits(max_age_s=100.0))
    s.put(entry("old", '{"v": 1}', at=0.0))
    s.put(entry("new", at=150.0))
    assert s.expire(now=200.0) == 1
    assert [e.key for e in s.pending()] == ["new"]
    [dead] = s.dead_letters()
    assert dead.key == "old" and dead.payload == '{"v": 1}'
    assert s.dead_letter_count() == 1
    assert "dead-letter" in caplog.text
    s.close()


def test_a_claim_leases_the_entry_to_one_worker(spool: SqliteOutbox) -> None:
    spool.put(entry("a"))
    first = spool.claim("a", now=10.0, lease_s=30.0, owner="1:lane-a")
    assert first.entry is not None and first.entry.attempts == 0
    other = spool.claim("a", now=11.0, lease_s=30.0, owner="1:lane-b", force=True)
    assert other.entry is None and other.busy_for_s == pytest.approx(29.0)
    again = spool.claim("a", now=41.0, lease_s=30.0, owner="1:lane-b")
    assert again.entry is not None and again.entry.attempts == 1
    assert spool.claim("gone", now=50.0, lease_s=1.0, owner="1:lane-b").gone


def test_a_retry_ends_the_lease_and_force_skips_only_the_delay(spool: SqliteOutbox) -> None:
    spool.put(entry("a"))
    spool.claim("a", now=10.0, lease_s=30.0, owner="1:lane-a")
    spool.retry_later("a", next_attempt_at=100.0, error="unavailable: down")
    waiting = spool.claim("a", now=11.0, lease_s=30.0, owner="1:lane-b")
    assert waiting.entry is None and waiting.busy_for_s == pytest.approx(89.0)
    forced = spool.claim("a", now=11.0, lease_s=30.0, owner="1:lane-b", force=True)
    assert forced.entry is not None


def test_a_lease_of_a_dead_process_is_void_once_its_request_cannot_still_land(
    spool: SqliteOutbox,
) -> None:
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    spool.put(entry("a"))
    spool.claim("a", now=10.0, lease_s=1000.0, owner=f"{dead_pid}:lane")
    # Its last request may still be landing for one call timeout: replaying now would double it.
    early = spool.claim("a", now=11.0, lease_s=30.0, owner="me:lane", force=True, in_flight_s=5.0)
    assert early.entry is None and early.busy_for_s == pytest.approx(4.0)
    assert (
        spool.claim("a", now=15.5, lease_s=30.0, owner="me:lane", force=True, in_flight_s=5.0).entry
        is not None
    )


def test_a_closed_spool_raises_unavailable(tmp_path: Path) -> None:
    s = SqliteOutbox(tmp_path / "s.sqlite3")
    s.close()
    with pytest.raises(Unavailable):
        s.put(entry("a"))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["put", "ack", "retry"]), max_size=40))
def test_every_put_entry_leaves_exactly_once(
    tmp_path_factory: pytest.TempPathFactory, ops: list[str]
) -> None:
    """Whatever the interleaving of puts, retries and acks, each entry is acked exactly once."""
    s = SqliteOutbox(tmp_path_factory.mktemp("p") / "s.sqlite3")
    put: list[str] = []
    acked: list[str] = []
    n = 0
    for op in ops:
        pending = s.pending(limit=1000)
        if op == "put":
            key = f"k{n}"
            n += 1
            assert s.put(entry(key))
            put.append(key)
        elif op == "ack" and pending:
            s.ack(pending[0].key)
            acked.append(pending[0].key)
        elif op == "retry" and pending:
            s.retry_later(pending[-1].key, next_attempt_at=5.0, error="x")
    acked.extend(e.key for e in s.pending(limit=1000))
    assert sorted(acked) == sorted(put)
    assert len(set(acked)) == len(acked)
    s.close()


_OPEN_AT_ONCE = """
import os, sys, time
from memcore_hermes.outbox.spool import SqliteOutbox
folder, rounds, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for i in range(rounds):
    time.sleep(max(0.0, start + i * 0.05 - time.time()))
    try:
        SqliteOutbox(os.path.join(folder, f"s{i}.sqlite3")).close()
    except Exception as exc:
        print(f"FAIL {i} {exc!r}", flush=True)
"""


@pytest.mark.slow
def test_processes_creating_one_new_spool_at_once_all_open_it(tmp_path: Path) -> None:
    """Two Hermes processes starting together on a new home both get the spool, not BUSY."""
    import subprocess
    import sys
    import time

    rounds = 40
    start = time.time() + 2.0  # after every child has imported the plugin
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AT_ONCE, str(tmp_path), str(rounds), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert out == "", out


def test_a_lease_owner_on_windows_is_not_probed_with_os_kill(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``os.kill(pid, 0)`` ends the process it names on Windows: the lease runs out instead."""
    from memcore_hermes.outbox import spool

    def kill(pid: int, sig: int) -> None:
        raise AssertionError(f"os.kill({pid}, {sig}) would end that process on Windows")

    monkeypatch.setattr(spool.sys, "platform", "win32")
    monkeypatch.setattr(spool.os, "kill", kill)
    assert spool.owner_alive(f"{os.getpid() + 1}:lane")
