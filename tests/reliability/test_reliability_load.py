"""Load: a Hermes gateway with 8 threads, each with its own provider and session, taking turns
against the emulator (20 ms per call); and the embedded store under 4 writer and 4 reader
processes. Every turn and every acknowledged write must be stored; the timings and RSS are
recorded for RELIABILITY.md, never asserted (the machine is shared and noisy).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import pytest
import reliability_rig as rig

from memcore.scope import Scope


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@pytest.mark.slow
def test_reliability_load_gateway_8_threads(tmp_path, subprocess_env, scenario, pick):
    server = rig.EmulatorProcess(tmp_path / "emulator.db", latency_ms=20, env=subprocess_env)
    home = rig.hermes_home_for(
        tmp_path / "hermes", server.url, timeout=10.0, keys=rig.CLI_EMULATOR_KEYS
    )
    threads, turns = 8, int(pick(40, 200, 100))
    ledgers = [rig.TurnLedger(f"t{i}-") for i in range(threads)]
    timings: list[list[float]] = [[] for _ in range(threads)]
    providers = [
        rig.new_provider(home, user_id=f"user{i}", session=f"gateway-{i}") for i in range(threads)
    ]
    errors: list[BaseException] = []
    rss_start = rss_mb()
    start = time.monotonic()

    def agent(i: int) -> None:
        try:
            for _ in range(turns):
                t0 = time.perf_counter()
                ledgers[i].issue(providers[i])
                timings[i].append((time.perf_counter() - t0) * 1000.0)
                time.sleep(0.005)
        except BaseException as exc:
            errors.append(exc)

    with scenario(
        "gateway load: 8 threads x own provider",
        f"{threads} threads x {turns} turns, 20 ms latency (emulator process on SQLite), one shared spool",
    ) as s:
        try:
            workers = [threading.Thread(target=agent, args=(i,)) for i in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join(600)
            issue_s = time.monotonic() - start
            # Let the lanes deliver on their own (no forced flush), then stop.
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if providers[0].runtime.spool.stats(time.time()).depth == 0:
                    break
                time.sleep(0.2)
            delivered_s = time.monotonic() - start
            depth = providers[0].runtime.spool.stats(time.time()).depth
        finally:
            for p in providers:
                p.shutdown()
            server.stop()
        rss_end = rss_mb()
        totals = Counter()
        from memcore_sqlite import SqliteMemoryStore

        backing = SqliteMemoryStore(server.database)
        try:
            for i, ledger in enumerate(ledgers):
                totals.update(
                    ledger.tally(
                        rig.all_messages(
                            backing, Scope("hermes", f"telegram:user{i}", "hermes", f"gateway-{i}")
                        )
                    )
                )
        finally:
            backing.close()
        flat = [t for ts in timings for t in ts]
        lost, dup = totals["lost"], totals["duplicated"]
        s.counts(
            issued=totals["issued"],
            acknowledged=totals["acknowledged"],
            stored=totals["stored"],
            lost=lost,
            duplicated=dup,
        )
        s.note(
            turn_ms_p50=round(statistics.median(flat), 3),
            turn_ms_p99=round(_percentile(flat, 0.99), 3),
            turn_ms_max=round(max(flat), 3),
            rss_mb_start=round(rss_start, 1),
            rss_mb_end=round(rss_end, 1),
            issue_seconds=round(issue_s, 2),
            delivered_seconds=round(delivered_s, 2),
            turns_per_s_delivered=round(totals["stored"] / delivered_s, 1),
            spool_depth_before_shutdown=depth,
        )
        assert not errors, errors[:3]
        assert depth == 0
        assert totals["acknowledged"] == threads * turns
        assert lost == 0 and dup == 0, dict(totals)


WORKER = textwrap.dedent(
    r"""
    import sys, time, uuid, json
    from memcore.scope import Scope, ScopePattern
    from memcore.errors import MemcoreError
    from memcore_sqlite import SqliteMemoryStore
    path, role, seconds, index = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    store = SqliteMemoryStore(path)
    scope = Scope("app", "tenant", f"writer{index}", "run")
    ops = errors = 0
    acked = []
    kinds = {}
    samples = []
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        try:
            if role == "w":
                text = f"writer {index} fact {ops} {uuid.uuid4().hex} about coffee and tea"
                store.add_text("mem", scope, text, sync=True)
                acked.append(text)
            elif ops % 2:
                store.search("mem", ScopePattern("app", "tenant"), "coffee fact", top_k=10)
            else:
                store.list_memories("mem", ScopePattern("app", "tenant"), limit=50)
        except Exception as exc:
            errors += 1
            kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
            if len(samples) < 3:
                samples.append(f"{time.monotonic() - start:.1f}s {type(exc).__name__}: {exc}"[:300])
        ops += 1
    store.close()
    print(json.dumps({"role": role, "ops": ops, "errors": errors, "kinds": kinds, "samples": samples, "acked": acked}))
    """
)


@pytest.mark.slow
def test_reliability_load_embedded_store_4_writers_4_readers(tmp_path, scenario, pick):
    import json

    from memcore.scope import ScopePattern
    from memcore_sqlite import SqliteMemoryStore

    path = tmp_path / "shared.db"
    setup = SqliteMemoryStore(path)
    setup.ensure_store("mem")
    setup.close()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    seconds = pick(8, 60, 20)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), role, str(seconds), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("w", "r")
        for i in range(4)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=seconds + 120)
        assert p.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    with scenario(
        "embedded store: 4 writer + 4 reader processes",
        f"8 processes on one SQLite file for {seconds:.0f} s",
    ) as s:
        store = SqliteMemoryStore(path)
        try:
            stored = rig.all_memory_texts(store, ScopePattern("app", "tenant"))
            integrity = store._tx.conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            store.close()
        acked = [t for r in results if r["role"] == "w" for t in r["acked"]]
        writes = sum(r["ops"] for r in results if r["role"] == "w")
        reads = sum(r["ops"] for r in results if r["role"] == "r")
        errors = sum(r["errors"] for r in results)
        kinds: Counter = Counter()
        samples: list[str] = []
        for r in results:
            kinds.update(r["kinds"])
            samples.extend(f"{r['role']}: {x}" for x in r["samples"])
        stored_set = set(stored)
        s.counts(
            issued=writes,
            acknowledged=len(acked),
            stored=sum(1 for t in acked if t in stored_set),
            lost=sum(1 for t in acked if t not in stored_set),
            duplicated=len(stored) - len(stored_set),
        )
        s.note(
            seconds=seconds,
            write_ops_per_s=round(writes / seconds, 1),
            read_ops_per_s=round(reads / seconds, 1),
            errors=errors,
            error_kinds=dict(kinds),
            error_samples=samples[:4],
            integrity=integrity,
        )
        assert integrity == "ok"
        assert errors == 0, (dict(kinds), samples[:4])
        assert len(stored_set) == len(acked)
