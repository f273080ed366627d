"""Disk full while writing the spool or the SQLite store (a real 1 MiB tmpfs, filled up).

A refused write must give a clear, typed error; nothing half-written may remain; the files
must stay intact; and once space is back, writing simply works again.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from pathlib import Path

import pytest
import reliability_rig as rig

from memcore.errors import MemcoreError


def _fill(root: Path, leave_bytes: int) -> Path:
    """Fill the filesystem at ``root`` until about ``leave_bytes`` remain."""
    filler = root / "filler.bin"
    st = os.statvfs(root)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as fh:
        try:
            fh.write(b"\0" * max(0, free - leave_bytes))
        except OSError:
            pass
    return filler


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.slow
def test_reliability_disk_full_while_spooling(tiny_fs, emulator, scenario, caplog):
    if tiny_fs is None:
        pytest.skip("mounting a tmpfs needs root here")
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults

    backing = InMemoryMemoryStore()
    server = emulator(backing)
    home = rig.hermes_home_for(tiny_fs / "hermes", server.url, timeout=2.0)
    provider = rig.new_provider(home)
    ledger = rig.TurnLedger()
    raised: list[BaseException] = []
    with scenario(
        "disk full while spooling",
        "Hermes home on a 1 MiB tmpfs filled up; backend refusing writes",
    ) as s:
        try:
            assert provider.runtime.wait_idle(30)
            server.set_faults(Faults(error_rate=1.0, apis=("AddMemories",)))
            filler = _fill(tiny_fs, 150_000)
            caplog.set_level(logging.ERROR, logger="memcore_hermes")
            for _ in range(3000):
                try:
                    ledger.issue(provider)
                except BaseException as exc:  # the property: nothing raises into the agent
                    raised.append(exc)
                    break
                if len(ledger.refused) >= 20:
                    break
            refused_during = len(ledger.refused)
            logged = [r for r in caplog.records if "NOT recorded" in r.getMessage()]
            spool_file = home / "tablestore_memory_spool.sqlite3"
            integrity_full = _integrity(spool_file)
            filler.unlink()
            for _ in range(10):
                ledger.issue(provider)
            server.set_faults(Faults())
            drained = rig.drain(provider)
            stored = rig.all_messages(backing, provider.runtime.scope)
            counts = ledger.tally(stored)
            stored_set = set(stored)
            refused_stored = [t for t in ledger.refused if t in stored_set]
            s.counts(**counts)
            s.note(
                refused_while_full=refused_during,
                logged_errors=len(logged),
                spool_integrity=integrity_full,
                refused_but_stored=len(refused_stored),
            )
            assert not raised, raised
            assert refused_during > 0, "the disk never filled up"
            assert len(logged) >= refused_during
            assert integrity_full == "ok"
            assert drained
            assert counts["lost"] == 0 and counts["duplicated"] == 0, counts
            assert not refused_stored, "a refused turn was stored anyway"
            assert ledger.acknowledged[-10:] == ledger.issued[-10:], (
                "writes did not resume after space came back"
            )
        finally:
            provider.shutdown()


@pytest.mark.slow
def test_reliability_disk_full_sqlite_store(tiny_fs, scenario):
    if tiny_fs is None:
        pytest.skip("mounting a tmpfs needs root here")
    from memcore.scope import Scope
    from memcore_sqlite import SqliteMemoryStore

    path = tiny_fs / "memcore.db"
    scope = Scope("app", "tenant", "agent", "run")
    store = SqliteMemoryStore(path)
    store.ensure_store("mem")
    acked: list[str] = []
    errors: list[BaseException] = []
    with scenario("disk full in the SQLite store", "database on a 1 MiB tmpfs filled up") as s:
        filler = _fill(tiny_fs, 400_000)
        issued = 0
        for i in range(2000):
            text = f"fact {i} {uuid.uuid4().hex} " + "lorem ipsum dolor " * 150
            issued += 1
            try:
                store.add_text("mem", scope, text, sync=True)
            except Exception as exc:
                errors.append(exc)
                if len(errors) >= 10:
                    break
                continue
            acked.append(text)
        store.close()
        integrity_full = _integrity(path)
        filler.unlink()
        reopened = SqliteMemoryStore(path)
        try:
            from memcore.scope import ScopePattern

            stored = rig.all_memory_texts(reopened, ScopePattern("app", "tenant"))
            after = reopened.add_text("mem", scope, "written after space came back", sync=True)
            hits = reopened.search("mem", ScopePattern("app", "tenant"), "space came back", top_k=3)
        finally:
            reopened.close()
        typed = [e for e in errors if isinstance(e, MemcoreError)]
        half = set(stored) - set(acked)
        lost = set(acked) - set(stored)
        s.counts(
            issued=issued,
            acknowledged=len(acked),
            stored=len(set(stored) & set(acked)),
            lost=len(lost),
            duplicated=len(stored) - len(set(stored)),
        )
        s.note(
            errors=len(errors),
            typed_errors=len(typed),
            error_types=sorted({type(e).__name__ for e in errors}),
            integrity=integrity_full,
            half_written=len(half),
        )
        assert errors, "the disk never filled up"
        assert len(typed) == len(errors), (
            f"untyped errors: {[type(e).__name__ for e in errors if e not in typed]}"
        )
        assert integrity_full == "ok"
        assert not half and not lost
        assert after.status == "completed" and hits
