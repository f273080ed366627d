"""Across process lifetimes: the backend down for a whole session, and ``kill -9`` mid-session.
The spool on disk is what carries the turns over; on the next start it replays them exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest
import reliability_rig as rig

from memcore.scope import Scope


@pytest.mark.slow
def test_reliability_backend_down_whole_session_then_replay(emulator, tmp_path, scenario, pick):
    from memcore.testing import InMemoryMemoryStore

    port = rig.free_port()
    home = rig.hermes_home_for(tmp_path / "hermes", f"http://127.0.0.1:{port}", timeout=1.0)
    ledger = rig.TurnLedger()
    turns = int(pick(100, 1000, 500))
    with scenario(
        "backend down for a session, up on next start",
        "nothing listens on the endpoint for the whole first session (a real process)",
    ) as s:
        proc = subprocess.run(
            rig.child_command(home, ledger.nonce, turns, 0.02, "session-1", flush_timeout=1.0),
            capture_output=True,
            text=True,
            timeout=600,
        )
        lines = proc.stdout.splitlines()
        assert proc.returncode == 0 and "DONE" in lines, proc.stderr[-2000:]
        ledger.issued = [
            line.split(" ", 1)[1] for line in lines if line.startswith(("ACK ", "REFUSED "))
        ]
        ledger.acknowledged = [line[4:] for line in lines if line.startswith("ACK ")]
        scope = Scope("hermes", "telegram:alice", "hermes", "session-1")
        from memcore_hermes.outbox.spool import SqliteOutbox

        spool = SqliteOutbox(home / "tablestore_memory_spool.sqlite3")
        depth = spool.stats(time.time()).depth
        spool.close()
        backing = InMemoryMemoryStore()
        emulator(backing, port=port)
        second = rig.new_provider(home)
        try:
            drained = rig.drain(second)
        finally:
            second.shutdown()
        counts = ledger.tally(rig.all_messages(backing, scope))
        s.counts(**counts)
        s.note(spooled_at_shutdown=depth)
        assert depth == len(ledger.acknowledged) > 0
        assert drained
        assert counts["lost"] == 0 and counts["duplicated"] == 0, counts
        assert counts["stored"] == counts["acknowledged"]


def _read_lines(proc, sink: list[str]) -> None:
    for line in proc.stdout:
        sink.append(line.rstrip("\n"))


@pytest.mark.slow
def test_reliability_kill_9_mid_session_replays_exactly_once(emulator, tmp_path, scenario, pick):
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults

    backing = InMemoryMemoryStore()
    # Slow answers keep a backlog in the spool, and some entries in flight, at the kill.
    server = emulator(backing, faults=Faults(latency_ms=60))
    home = rig.hermes_home_for(tmp_path / "hermes", server.url, timeout=2.5)
    rounds = int(pick(2, 4, 3))
    ledger = rig.TurnLedger()
    scope = Scope("hermes", "telegram:alice", "hermes", "session-1")
    with scenario(
        "kill -9 mid-session",
        f"Hermes process SIGKILLed mid-session ({rounds} times), then restarted",
    ) as s:
        acked: list[str] = []
        issued_estimate = 0
        for r in range(rounds):
            lines: list[str] = []
            proc = subprocess.Popen(
                rig.child_command(home, ledger.nonce + f"r{r}", 100_000, 0.005, "session-1"),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            reader = threading.Thread(target=_read_lines, args=(proc, lines), daemon=True)
            reader.start()
            deadline = time.monotonic() + 60
            while "READY" not in lines and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert "READY" in lines, lines[-5:]
            time.sleep(pick(1.5, 5.0, 3.0))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            # A request the dead process had in flight lands at the backend a moment later; the
            # race between it and an immediate replay is the separate test below.
            time.sleep(0.5)
            reader.join(10)
            round_acks = [line[4:] for line in lines if line.startswith("ACK ")]
            acked.extend(round_acks)
            issued_estimate += len(round_acks) + 1  # at most one turn was mid-call at the kill
        from memcore_hermes.outbox.spool import SqliteOutbox

        spool = SqliteOutbox(home / "tablestore_memory_spool.sqlite3")
        left = spool.stats(time.time()).depth
        integrity = spool._db.execute("PRAGMA integrity_check").fetchone()[0]
        spool.close()
        server.set_faults(Faults())
        # The next start replays on its own: the lane respects the dead process's claim lease
        # (5 s here), so a request still in flight at the backend lands before the replay checks.
        survivor = rig.new_provider(home)
        try:
            drained = rig.wait_spool_empty(survivor, deadline_s=120.0)
        finally:
            survivor.shutdown()
        stored = rig.all_messages(backing, scope)
        mine = [t for t in stored if ledger.nonce in t and t.startswith("turn ")]
        from collections import Counter

        counts = Counter(mine)
        lost = [t for t in acked if counts[t] == 0]
        dup = sum(n - 1 for n in counts.values() if n > 1)
        s.counts(
            issued=issued_estimate,
            acknowledged=len(acked),
            stored=len(counts),
            lost=len(lost),
            duplicated=dup,
        )
        s.note(spool_depth_at_kill=left, spool_integrity=integrity, kills=rounds)
        assert integrity == "ok"
        assert left > 0, "the kill should leave a backlog in the spool"
        assert drained
        assert not lost, lost[:3]
        assert dup == 0
        assert len(acked) > 0


@pytest.mark.slow
def test_reliability_kill_9_with_a_request_in_flight_replays_exactly_once(
    emulator, tmp_path, scenario
):
    from memcore.testing import InMemoryMemoryStore
    from memcore_hermes.outbox.spool import SqliteOutbox
    from memcore_tablestore.emulator import Faults

    backing = InMemoryMemoryStore()
    server = emulator(backing, faults=Faults(latency_ms=1500, apis=("AddMemories",)))
    home = rig.hermes_home_for(tmp_path / "hermes", server.url, timeout=5.0)
    ledger = rig.TurnLedger()
    with scenario(
        "kill -9 with a request in flight",
        "SIGKILL while the turn's AddMemories is at the backend (1.5 s), immediate restart",
    ) as s:
        lines: list[str] = []
        proc = subprocess.Popen(
            rig.child_command(home, ledger.nonce, 1, 60.0, "session-1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        reader = threading.Thread(target=_read_lines, args=(proc, lines), daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 60
            while "READY" not in lines and time.monotonic() < deadline:
                time.sleep(0.02)
            while (
                not any(line.startswith("ACK ") for line in lines) and time.monotonic() < deadline
            ):
                time.sleep(0.02)
            spool = SqliteOutbox(home / "tablestore_memory_spool.sqlite3")
            try:
                while (
                    time.monotonic() < deadline
                ):  # until the child's lane holds the lease and is sending
                    pending = spool.pending(limit=5)
                    if pending and pending[0].attempts > 0:
                        break
                    time.sleep(0.02)
                else:
                    raise AssertionError("the child never started sending")
            finally:
                spool.close()
            time.sleep(0.2)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        survivor = rig.new_provider(home)
        try:
            drained = rig.wait_spool_empty(survivor, deadline_s=60.0)
            time.sleep(2.0)  # let the dead process's request land
        finally:
            survivor.shutdown()
        acked = [line[4:] for line in lines if line.startswith("ACK ")]
        ledger.issued = list(acked)
        ledger.acknowledged = list(acked)
        counts = ledger.tally(
            rig.all_messages(backing, Scope("hermes", "telegram:alice", "hermes", "session-1"))
        )
        s.counts(**counts)
        assert acked and drained
        assert counts["lost"] == 0
        assert counts["duplicated"] == 0, counts
