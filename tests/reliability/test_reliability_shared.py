"""Two processes sharing one spool, or one spool and one database: every turn of both lands
exactly once, and neither process blocks the other into an error.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter

import pytest
import reliability_rig as rig

from memcore.scope import Scope


def _run_children(home, ledgers, count, interval, sessions, env=None):
    procs = [
        subprocess.Popen(
            rig.child_command(home, ledger.nonce, count, interval, session),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for ledger, session in zip(ledgers, sessions)
    ]
    acked: list[list[str]] = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        lines = out.splitlines()
        assert proc.returncode == 0 and "DONE" in lines, err[-3000:]
        acked.append([line[4:] for line in lines if line.startswith("ACK ")])
    return acked


def _count(contents, ledgers, acked):
    counts = Counter(c for c in contents if c.startswith("turn "))
    issued = sum(len(a) for a in acked)
    all_acked = [t for a in acked for t in a]
    lost = sum(1 for t in all_acked if counts[t] == 0)
    dup = sum(n - 1 for t, n in counts.items() if n > 1 and any(lg.nonce in t for lg in ledgers))
    stored = sum(1 for t in all_acked if counts[t] > 0)
    return {
        "issued": issued,
        "acknowledged": len(all_acked),
        "stored": stored,
        "lost": lost,
        "duplicated": dup,
    }


@pytest.mark.slow
def test_reliability_two_processes_share_spool_and_database(tmp_path, scenario, pick):
    """Local backend: one spool file and one SQLite database under the same Hermes home."""
    home = rig.make_hermes_home(tmp_path / "hermes", rig.LOCAL_CONFIG)
    ledgers = [rig.TurnLedger("p1"), rig.TurnLedger("p2")]
    count = int(pick(150, 1500, 600))
    with scenario(
        "two processes, one spool + one SQLite db",
        "two Hermes processes on the same home, writing at once",
    ) as s:
        acked = _run_children(home, ledgers, count, 0.002, ["session-a", "session-b"])
        from memcore_sqlite import SqliteMemoryStore

        store = SqliteMemoryStore(home / "tablestore_memory_local.sqlite3")
        try:
            contents = []
            for session in ("session-a", "session-b"):
                contents += rig.all_messages(
                    store, Scope("hermes", "telegram:alice", "hermes", session)
                )
            integrity = store._tx.conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            store.close()
        counts = _count(contents, ledgers, acked)
        s.counts(**counts)
        s.note(integrity=integrity)
        assert integrity == "ok"
        assert counts["acknowledged"] == 2 * count
        assert counts["lost"] == 0 and counts["duplicated"] == 0, counts


@pytest.mark.slow
def test_reliability_two_processes_share_spool_tablestore(emulator, tmp_path, scenario, pick):
    """TableStore backend: two processes drain one spool into the emulator (some answers 503)."""
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults

    backing = InMemoryMemoryStore()
    server = emulator(backing, faults=Faults(latency_ms=5, error_rate=0.1, seed=3))
    home = rig.hermes_home_for(tmp_path / "hermes", server.url, timeout=5.0)
    ledgers = [rig.TurnLedger("p1"), rig.TurnLedger("p2")]
    count = int(pick(150, 1500, 600))
    with scenario(
        "two processes, one spool (TableStore)",
        "two Hermes processes drain one spool; 10% of calls 503",
    ) as s:
        acked = _run_children(home, ledgers, count, 0.005, ["session-a", "session-b"])
        server.set_faults(Faults())
        survivor = rig.new_provider(home)
        try:
            drained = rig.drain(survivor)
        finally:
            survivor.shutdown()
        contents = []
        for session in ("session-a", "session-b"):
            contents += rig.all_messages(
                backing, Scope("hermes", "telegram:alice", "hermes", session)
            )
        counts = _count(contents, ledgers, acked)
        s.counts(**counts)
        assert drained
        assert counts["lost"] == 0 and counts["duplicated"] == 0, counts


def test_reliability_forced_flush_does_not_resend_an_entry_in_flight(emulator, tmp_path, scenario):
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults

    backing = InMemoryMemoryStore()
    server = emulator(backing)
    home = rig.hermes_home_for(tmp_path / "hermes", server.url, timeout=5.0)
    sender = rig.new_provider(home, session="s-a")
    flusher = rig.new_provider(home, session="s-b")
    with scenario(
        "flush while another worker sends",
        "second spool user flushes while the first is mid-send (1 s latency)",
    ) as s:
        try:
            assert sender.runtime.wait_idle(10) and flusher.runtime.wait_idle(10)
            server.set_faults(Faults(latency_ms=1000, apis=("AddMemories",)))
            sender.sync_turn("say this exactly once", "ok")
            deadline = time.monotonic() + 10
            while (
                time.monotonic() < deadline
            ):  # until the sender's lane has claimed it (and is sending)
                pending = sender.runtime.spool.pending(limit=5)
                if pending and pending[0].attempts > 0:
                    break
                time.sleep(0.01)
            assert pending and pending[0].attempts > 0
            time.sleep(0.1)
            flusher.runtime.flush(10.0)
            server.set_faults(Faults())
            assert sender.runtime.flush(10.0)
            contents = rig.all_messages(backing, sender.runtime.scope)
        finally:
            sender.shutdown()
            flusher.shutdown()
        n = contents.count("say this exactly once")
        s.counts(
            issued=1, acknowledged=1, stored=int(n > 0), lost=int(n == 0), duplicated=max(0, n - 1)
        )
        assert n == 1, f"stored {n} times"
