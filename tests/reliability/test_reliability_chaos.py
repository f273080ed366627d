"""Backend answers that are not the protocol: the emulator's chaos mode answers 200 with a
non-object body, a truncated body, a huge body, undecodable bytes, an error envelope, or
memory units with wrong types. The adapter raises typed errors; it never crashes or hangs, and
never returns values with the wrong types.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from memcore.errors import MemcoreError
from memcore.scope import Scope, ScopePattern
from memcore.values import UNCONFIRMED, MemoryRecord, Message, Page, SearchHit, WriteReceipt

STORE = "chaos_mem"
SCOPE = Scope("app", "tenant", "agent", "run")
PATTERN = ScopePattern("app", "tenant")


def _operations(store, memory_id):
    return {
        "describe_store": lambda: store.describe_store(STORE),
        "list_stores": lambda: store.list_stores(),
        "add_text": lambda: store.add_text(STORE, SCOPE, "chaos fact", sync=True),
        "add_messages": lambda: store.add_messages(STORE, SCOPE, [Message("user", "hello chaos")]),
        "search": lambda: store.search(STORE, PATTERN, "chaos", top_k=5),
        "list_memories": lambda: store.list_memories(STORE, PATTERN, limit=10),
        "get_memory": lambda: store.get_memory(STORE, SCOPE, memory_id),
        "update_memory": lambda: store.update_memory(STORE, SCOPE, memory_id, text="changed"),
        "list_messages": lambda: store.list_messages(STORE, SCOPE, limit=10),
        "list_requests": lambda: store.list_requests(STORE, limit=10),
        "list_scopes": lambda: store.list_scopes(STORE, PATTERN, limit=10),
        "list_tasks": lambda: store.list_tasks(STORE, limit=10),
        "get_task": lambda: store.get_task(STORE, "task-1"),
    }


def _well_typed(name, value) -> bool:
    if name in ("search",):
        return isinstance(value, list) and all(
            isinstance(h, SearchHit)
            and isinstance(h.memory, MemoryRecord)
            and isinstance(h.memory.text, str)
            and isinstance(h.memory.scope, Scope)
            and isinstance(h.score, float)
            for h in value
        )
    if name in ("add_text", "add_messages"):
        return isinstance(value, WriteReceipt) and all(isinstance(i, str) for i in value.memory_ids)
    if name in ("get_memory", "update_memory"):
        return (
            isinstance(value, MemoryRecord)
            and isinstance(value.text, str)
            and isinstance(value.scope, Scope)
        )
    if name == "list_memories":
        return isinstance(value, Page) and all(
            isinstance(m, MemoryRecord) and isinstance(m.text, str) and isinstance(m.scope, Scope)
            for m in value.items
        )
    if name.startswith("list_") and name != "list_stores":
        return isinstance(value, Page)
    return value is not None


def _bounded(fn, seconds):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "call hung"
    return box


@pytest.mark.slow
@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_reliability_chaos_answers_are_typed_errors(emulator, scenario, pick, rate):
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import store_for

    backing = InMemoryMemoryStore()
    backing.ensure_store(STORE)
    memory_id = backing.add_text(STORE, SCOPE, "a real memory", sync=True).memory_ids[0]
    server = emulator(backing)
    store = store_for(server, timeout=1.0)
    server.set_faults(Faults(chaos=True, chaos_rate=rate, seed=21))
    stats: Counter = Counter()
    foreign: list[str] = []
    mistyped: list[str] = []
    rounds = int(pick(4, 10, 6))
    writes = {"add_text", "add_messages", "update_memory"}
    write_stats: Counter = Counter()
    with scenario(
        f"chaos answers ({int(rate * 100)}% of calls)",
        "200 with non-object, truncated, huge, undecodable or mistyped JSON",
    ) as s:
        try:
            for _ in range(rounds):
                for name, op in _operations(store, memory_id).items():
                    stats["calls"] += 1
                    write_stats["issued"] += name in writes
                    box = _bounded(op, 60)
                    value = box.get("value")
                    if isinstance(value, WriteReceipt) and value.status == UNCONFIRMED:
                        # An unreadable 2xx: reported as such, never claimed as stored (and
                        # never resent, since a real service would have applied it).
                        write_stats["unconfirmed"] += 1
                        assert value.problem
                    elif name in writes and "value" in box:
                        write_stats["acknowledged"] += 1
                    if "error" in box:
                        err = box["error"]
                        if isinstance(err, MemcoreError):
                            stats["typed_errors"] += 1
                            stats[type(err).__name__] += 1
                        else:
                            foreign.append(f"{name}: {type(err).__name__}: {str(err)[:120]}")
                    elif _well_typed(name, box["value"]):
                        stats["ok"] += 1
                    else:
                        mistyped.append(f"{name}: {box['value']!r:.150}")
        finally:
            store.close()
        # A write acknowledged under 100% chaos never reached the store: it would be a lost write.
        stored_texts = {m.text for m in backing.list_memories(STORE, PATTERN, limit=100).items}
        really = (
            int("chaos fact" in stored_texts)
            + int("hello chaos" in stored_texts)
            + int("changed" in stored_texts)
        )
        false_acks = write_stats["acknowledged"] if rate == 1.0 else 0
        s.counts(
            issued=write_stats["issued"],
            acknowledged=write_stats["acknowledged"],
            stored=write_stats["acknowledged"] - false_acks,
            lost=false_acks,
            duplicated=0,
        )
        s.note(
            typed_errors=stats["typed_errors"],
            foreign_errors=len(foreign),
            mistyped_values=len(mistyped),
            by_type={k: v for k, v in stats.items() if k[0].isupper()},
            examples=(foreign + mistyped)[:4],
            calls=stats["calls"],
            unconfirmed_writes=write_stats["unconfirmed"],
            reads_ok=stats["ok"] - write_stats["acknowledged"] - write_stats["unconfirmed"],
            distinct_writes_stored=really,
        )
        assert not foreign, foreign[:5]
        assert not mistyped, mistyped[:5]
        assert false_acks == 0
        assert stats["typed_errors"] > 0


@pytest.mark.slow
def test_reliability_chaos_through_hermes_tools(emulator, tmp_path, scenario, pick):
    import reliability_rig as rig

    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults

    server = emulator(InMemoryMemoryStore())
    home = rig.hermes_home_for(tmp_path / "hermes", server.url, timeout=3.0)
    provider = rig.new_provider(home)
    stats: Counter = Counter()
    try:
        assert provider.runtime.wait_idle(30)
        server.set_faults(Faults(chaos=True, chaos_rate=1.0, seed=5))
        calls = [
            ("tablestore_search", {"query": "anything"}),
            ("tablestore_profile", {"limit": 5}),
            ("tablestore_remember", {"content": "chaos sync", "sync": True}),
            ("tablestore_forget", {"memory_id": "m-1"}),
        ]
        with scenario("chaos answers via Hermes tools", "every backend answer is garbage") as s:
            for _ in range(int(pick(3, 8, 5))):
                for tool, args in calls:
                    stats["calls"] += 1
                    out = json.loads(provider.handle_tool_call(tool, args))
                    assert isinstance(out, dict)
                    if "error" in out:
                        stats["errors"] += 1
                        assert out["error"]["type"] != "Error", out
                    elif out.get("status") == "unconfirmed":
                        # A sync remember answered 200 with garbage: said so, not "completed".
                        stats["unconfirmed"] += 1
                        assert tool == "tablestore_remember", out
            s.counts(issued=stats["calls"], acknowledged=0, stored=0, lost=0, duplicated=0)
            s.note(json_errors=stats["errors"], unconfirmed=stats["unconfirmed"])
            assert stats["errors"] + stats["unconfirmed"] == stats["calls"]
    finally:
        server.set_faults(Faults())
        provider.shutdown()


def test_reliability_emulator_is_quiet_when_a_client_hangs_up(emulator, capfd):
    from memcore.errors import Unavailable
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import store_for

    server = emulator(InMemoryMemoryStore(), faults=Faults(latency_ms=800))
    store = store_for(server, timeout=0.3, retry=False)
    try:
        with pytest.raises(Unavailable):
            store.list_stores()
        import time

        time.sleep(1.2)  # the emulator answers into the closed socket
    finally:
        store.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[-800:]
