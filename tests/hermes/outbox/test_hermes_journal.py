"""The turn journal in front of the spool: fast appends that are never lost, reordered or doubled."""

from __future__ import annotations

import signal
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.errors import Unavailable
from memcore.outbox import OutboxEntry
from memcore_hermes.outbox import journal as journal_mod
from memcore_hermes.outbox.journal import HEADER_BYTES, Journal, journal_glob
from memcore_hermes.outbox.spool import SpoolLimits, SqliteOutbox


def entry(key: str, payload: str = "{}", *, at: float = 0.0) -> OutboxEntry:
    return OutboxEntry(key=key, kind="messages", payload=payload, created_at=at, next_attempt_at=at)


def keys(spool: SqliteOutbox) -> list[str]:
    return [e.key for e in spool.pending(limit=100_000)]


def test_fast_puts_land_in_the_journal_and_are_read_in_order(tmp_path: Path) -> None:
    spool = SqliteOutbox(tmp_path / "s.sqlite3")
    try:
        assert spool.prepare()
        spool.put_fast([entry("a", '{"x": "ü\\ud83d"}')])
        [journal] = list(journal_glob(spool.path))
        assert stat.S_IMODE(journal.stat().st_mode) == 0o600
        # Not yet in SQLite: a second connection (another process's view) does not see it...
        import sqlite3

        other = sqlite3.connect(spool.path)
        assert other.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0
        # ...and a slow-path put after it is still read after it.
        spool.put_many([entry("b")])
        spool.put_fast([entry("c"), entry("d")])
        assert keys(spool) == ["a", "b", "c", "d"]
        assert other.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 4
        other.close()
        [a] = spool.pending(limit=1)
        assert a.payload == '{"x": "ü\\ud83d"}'
        assert spool.stats(0.0).depth == 4
    finally:
        spool.close()
    assert list(journal_glob(tmp_path / "s.sqlite3")) == []  # a clean close leaves no journal


def test_a_record_keeps_every_field_and_costs_about_the_payload_s_utf8_size(tmp_path: Path) -> None:
    from memcore_hermes.outbox.spool_connection import encode_entry

    payload = '{"content": "记忆' * 200 + '\n"}'  # CJK and a raw newline
    odd = OutboxEntry(
        key="k1",
        kind="messages",
        payload=payload,
        attempts=2,
        created_at=1.5,
        next_attempt_at=2.5,
        last_error="超时\n",
    )
    size = len(payload.encode("utf-8", "surrogatepass"))
    assert size < len(encode_entry(odd)) < size + 100
    spool = SqliteOutbox(tmp_path / "s.sqlite3")
    try:
        assert spool.prepare()
        spool.put_fast([odd])
        assert spool.pending(limit=1) == [odd]
        assert spool.stats(0.0).bytes == size
    finally:
        spool.close()


def test_stats_count_what_is_still_in_the_journal(tmp_path: Path) -> None:
    spool = SqliteOutbox(tmp_path / "s.sqlite3")
    spool.put_fast([entry("a"), entry("b")])
    assert spool.stats(0.0).depth == 2
    spool.close()


_PRELUDE = """
import os, signal, sys
from memcore.outbox import OutboxEntry
from memcore_hermes.outbox.spool import SqliteOutbox
def entry(key, payload="{}"):
    return OutboxEntry(key=key, kind="messages", payload=payload, created_at=0.0, next_attempt_at=0.0)
spool = SqliteOutbox(sys.argv[1])
"""


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_killed_process_journal_is_replayed_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    code = """
for i in range(40):
    spool.put_fast([entry(f"k{i}", '{"turn": %d}' % i)])
os.kill(os.getpid(), signal.SIGKILL)  # before anything moved the records into SQLite
"""
    proc = _python(code, str(path))
    assert proc.wait(60) == -signal.SIGKILL
    [left] = list(journal_glob(path))  # the dead process's journal, records not ingested
    assert left.exists()
    spool = SqliteOutbox(path)
    try:
        assert keys(spool) == [f"k{i}" for i in range(40)]
        assert spool.pending(limit=1)[0].payload == '{"turn": 0}'
        assert list(journal_glob(path)) == []
    finally:
        spool.close()
    again = SqliteOutbox(path)
    try:
        assert keys(again) == [f"k{i}" for i in range(40)]
    finally:
        again.close()


def test_a_live_process_journal_is_never_adopted(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    code = """
spool.put_fast([entry("live")])
print("ready", flush=True)
sys.stdin.readline()
spool.close()
"""
    proc = _python(code, str(path))
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        spool = SqliteOutbox(path)
        assert keys(spool) == []  # still the other process's, which is alive
        spool.close()
    finally:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(60) == 0
    spool = SqliteOutbox(path)
    try:
        assert keys(spool) == ["live"]  # it moved its records in when it closed
    finally:
        spool.close()


def _write_journal(path: Path, records: list[bytes]) -> Path:
    spool_dir = path.parent
    spool_dir.mkdir(parents=True, exist_ok=True)
    j = Journal.create(path, size=64 * 1024)
    assert j.append(records)
    name = j.path
    j.close(unlink=False)
    return name


def test_a_torn_tail_ends_the_replay_and_keeps_what_was_whole(tmp_path: Path) -> None:
    from memcore_hermes.outbox.spool_connection import encode_entry as _encode

    path = tmp_path / "s.sqlite3"
    file = _write_journal(path, [_encode(entry("one")), _encode(entry("two"))])
    raw = bytearray(file.read_bytes())
    length, _ = struct.unpack_from("<II", raw, HEADER_BYTES)
    second = HEADER_BYTES + 8 + length
    raw[second + 8 + 3] ^= 0xFF  # the second record was half-written when the process died
    file.write_bytes(bytes(raw))
    spool = SqliteOutbox(path)
    try:
        assert keys(spool) == ["one"]
    finally:
        spool.close()


def test_a_journal_already_moved_into_the_spool_is_not_replayed(tmp_path: Path) -> None:
    """A crash after the records were committed and acknowledged never brings them back."""
    path = tmp_path / "s.sqlite3"
    spool = SqliteOutbox(path)
    spool.put_fast([entry("a"), entry("b")])
    assert keys(spool) == ["a", "b"]  # ingested; the progress row now says so
    spool.ack("a")
    spool.ack("b")
    # Simulate dying right after: leave the journal file behind and drop the connection.
    conn = spool._conn
    journal = conn.journal
    assert journal is not None
    journal.close(unlink=False)
    conn.journal = None
    spool.close()
    assert len(list(journal_glob(path))) == 1
    spool = SqliteOutbox(path)
    try:
        assert keys(spool) == []
        assert list(journal_glob(path)) == []
    finally:
        spool.close()


def test_a_full_journal_falls_back_to_the_spool_and_rotates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_mod, "DEFAULT_BYTES", 4096)
    created: list[Path] = []
    real_create = Journal.create.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Journal], spool: Path, *, size: int | None = None) -> Journal:
        made: Journal = real_create(cls, spool, size=size)
        created.append(made.path)
        return made

    monkeypatch.setattr(Journal, "create", classmethod(counting))
    fallbacks: list[int] = []
    real_put_many = SqliteOutbox.put_many

    def counting_put_many(self: SqliteOutbox, entries: list[OutboxEntry]) -> int:
        fallbacks.append(len(entries))
        return real_put_many(self, entries)

    monkeypatch.setattr(SqliteOutbox, "put_many", counting_put_many)
    path = tmp_path / "s.sqlite3"
    spool = SqliteOutbox(path)
    try:
        payload = '{"t": "' + "x" * 300 + '"}'
        for i in range(60):
            spool.put_fast([entry(f"k{i:02d}", payload)])
            if i % 12 == 0:
                spool.due(1.0)  # what a lane pass does: move the journal in, maybe rotate
        assert keys(spool) == [f"k{i:02d}" for i in range(60)]
        assert len(list(journal_glob(path))) <= 1
        assert len(created) >= 3, created  # rotated
        assert fallbacks, "the journal never filled up"
        # Bigger than the whole journal: straight into the spool.
        spool.put_fast([entry("big", '{"t": "' + "y" * 10_000 + '"}')])
        assert keys(spool)[-1] == "big"
    finally:
        spool.close()
    assert list(journal_glob(path)) == []


def test_fast_puts_respect_the_spool_bounds(tmp_path: Path) -> None:
    spool = SqliteOutbox(tmp_path / "s.sqlite3", limits=SpoolLimits(max_entries=3))
    try:
        spool.put_fast([entry("a"), entry("b")])
        spool.put_fast([entry("c")])
        with pytest.raises(Unavailable):
            spool.put_fast([entry("d")])
        assert keys(spool) == ["a", "b", "c"]
        assert spool.stats(0.0).dropped_full == 1
    finally:
        spool.close()


def test_without_room_for_a_journal_puts_go_straight_to_the_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(*args: object, **kwargs: object) -> Journal:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Journal, "create", classmethod(lambda cls, *a, **k: no_space()))
    spool = SqliteOutbox(tmp_path / "s.sqlite3")
    try:
        assert not spool.prepare()
        spool.put_fast([entry("a")])
        assert keys(spool) == ["a"]
        assert list(journal_glob(spool.path)) == []
    finally:
        spool.close()


def test_spools_on_one_file_in_a_process_share_one_connection_and_journal(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    first, second = SqliteOutbox(path), SqliteOutbox(path)
    try:
        first.put_fast([entry("a")])
        second.put_fast([entry("b")])
        assert len(list(journal_glob(path))) == 1
        assert keys(first) == keys(second) == ["a", "b"]
        first.close()
        assert keys(second) == ["a", "b"]  # the other user keeps the connection open
    finally:
        second.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["fast", "slow", "ack", "reopen", "crash"]), max_size=30))
def test_every_accepted_entry_reaches_the_spool_exactly_once(
    tmp_path_factory: pytest.TempPathFactory, ops: list[str]
) -> None:
    """Whatever mix of fast and slow puts, acks, reopens and crashes: each entry once, in order."""
    path = tmp_path_factory.mktemp("j") / "s.sqlite3"
    spool = SqliteOutbox(path)
    put: list[str] = []
    acked: list[str] = []
    for n, op in enumerate(ops):
        if op == "fast":
            spool.put_fast([entry(f"k{n:03d}")])
            put.append(f"k{n:03d}")
        elif op == "slow":
            spool.put_many([entry(f"k{n:03d}")])
            put.append(f"k{n:03d}")
        elif op == "ack":
            pending = spool.pending(limit=1)
            if pending:
                spool.ack(pending[0].key)
                acked.append(pending[0].key)
        elif op == "reopen":
            spool.close()
            spool = SqliteOutbox(path)
        else:  # the process dies: its journal stays behind, unlocked, records maybe not moved
            conn = spool._conn
            if conn.journal is not None:
                conn.journal.close(unlink=False)
                conn.journal = None
            spool.close()
            spool = SqliteOutbox(path)
    left = keys(spool)
    spool.close()
    assert acked + left == sorted(put)  # order kept, nothing lost, nothing twice


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_never_writes_into_the_parents_journal(tmp_path: Path) -> None:
    import os

    path = tmp_path / "s.sqlite3"
    spool = SqliteOutbox(path)
    try:
        spool.put_fast([entry("parent-before")])
        pid = os.fork()
        if pid == 0:  # the child: its own connection and journal, the parent's left alone
            code = 1
            try:
                inherited_journal = spool._conn.journal
                child = SqliteOutbox(path)
                child.put_fast([entry("child")])
                child.close()
                code = 0 if inherited_journal is None else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        spool.put_fast([entry("parent-after")])
        # Each process keeps its own order; between processes the spool makes no promise.
        assert sorted(keys(spool)) == ["child", "parent-after", "parent-before"]
        assert keys(spool).index("parent-before") < keys(spool).index("parent-after")
    finally:
        spool.close()
    assert list(journal_glob(path)) == []


def test_a_journal_adopted_by_someone_else_meanwhile_is_not_replayed_again(tmp_path: Path) -> None:
    """Open, then lock: if another process adopted and unlinked it in between, skip it."""
    from memcore_hermes.outbox.spool_connection import encode_entry

    path = tmp_path / "s.sqlite3"
    file = _write_journal(path, [encode_entry(entry("once"))])
    import fcntl
    import os

    early = os.open(file, os.O_RDWR)  # a slow adopter opened it...
    spool = SqliteOutbox(path)  # ...while this one adopted, replayed and unlinked it
    try:
        assert keys(spool) == ["once"]
        spool.ack("once")
        fcntl.flock(early, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the slow one now gets the lock
        real_open = os.open
        try:
            os.open = lambda *a, **k: os.dup(early)  # type: ignore[assignment]
            assert Journal.adopt(file) is None
        finally:
            os.open = real_open  # type: ignore[assignment]
    finally:
        os.close(early)
        spool.close()


def test_without_posix_fallocate_the_journal_is_written_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS has no posix_fallocate: the space is reserved by writing zeros instead."""
    import os

    monkeypatch.delattr(os, "posix_fallocate", raising=False)
    j = Journal.create(tmp_path / "s.sqlite3", size=256 * 1024)
    try:
        assert j.path.stat().st_size == 256 * 1024
        assert j.path.stat().st_blocks * 512 >= 256 * 1024  # really allocated, not sparse
        assert j.append([b"record"])
    finally:
        j.close(unlink=True)


def _puts_racing_a_close(path: Path) -> tuple[list[str], list[BaseException]]:
    """Three writers put until refused while the spool closes under them: the keys of the
    puts that returned, and any error other than ``Unavailable`` that escaped a put."""
    import threading

    spool = SqliteOutbox(path)
    assert spool.prepare()
    accepted: list[str] = []
    foreign: list[BaseException] = []
    started = threading.Event()

    def writer(name: str) -> None:
        for i in range(100_000):
            try:
                spool.put_fast([entry(f"{name}-{i}")])
            except Unavailable:
                return
            except Exception as exc:  # anything else escaped into the agent's thread
                foreign.append(exc)
                return
            accepted.append(f"{name}-{i}")
            started.set()

    threads = [threading.Thread(target=writer, args=(f"t{t}",)) for t in range(3)]
    for t in threads:
        t.start()
    assert started.wait(10)
    spool.close()
    for t in threads:
        t.join(30)
    return accepted, foreign


def test_a_put_racing_the_close_is_kept_or_refused_never_lost(tmp_path: Path) -> None:
    """Turns still arriving while the provider shuts down: each put either returns (and its
    entry is in the spool afterwards) or raises ``Unavailable``; none is copied into a
    journal that the close had already moved and then deleted."""
    for run in range(10):
        path = tmp_path / f"s{run}.sqlite3"
        accepted, foreign = _puts_racing_a_close(path)
        assert foreign == []
        reopened = SqliteOutbox(path)
        try:
            assert set(accepted) <= set(keys(reopened))
        finally:
            reopened.close()
