"""The provider driven by Hermes' real ``MemoryManager``, against the TableStore emulator."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore_hermes import MemcoreMemoryProvider

STORE = "hermes_mem"


@pytest.fixture
def manager(hermes_home: Path, emulator: Any, kit: Any) -> Iterator[Any]:
    from agent.memory_manager import MemoryManager

    kit.emulator_home(hermes_home, emulator)
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    mm = MemoryManager()
    mm.add_provider(provider)
    mm.initialize_all(session_id="s1", platform="telegram", agent_context="primary", user_id="dana")
    assert provider.runtime is not None
    yield mm
    mm.shutdown_all()


def provider_of(mm: Any) -> MemcoreMemoryProvider:
    provider = mm.get_provider("tablestore-mem")
    assert isinstance(provider, MemcoreMemoryProvider)
    return provider


def test_tools_are_routed_and_answer_json(manager: Any) -> None:
    names = {s["name"] for s in manager.get_all_tool_schemas()}
    assert {
        "tablestore_profile",
        "tablestore_search",
        "tablestore_remember",
        "tablestore_forget",
    } <= names
    stored = json.loads(
        manager.handle_tool_call(
            "tablestore_remember", {"content": "Dana rides a bike", "sync": True}
        )
    )
    assert stored["status"] == "completed"
    found = json.loads(manager.handle_tool_call("tablestore_search", {"query": "bike"}))
    assert [r["text"] for r in found["results"]] == ["Dana rides a bike"]
    bad = json.loads(manager.handle_tool_call("tablestore_search", {"query": "bike", "top_k": 0}))
    assert bad["error"]["field"] == "top_k"


def test_sync_prefetch_and_flush(manager: Any, emulator: Any) -> None:
    provider = provider_of(manager)
    manager.sync_all("I am allergic to peanuts", "I will remember that.", session_id="s1")
    manager.queue_prefetch_all("allergic to peanuts", session_id="s1")
    assert manager.flush_pending(10)
    assert provider.runtime.wait_idle(10)
    context = manager.prefetch_all("what am I allergic to?", session_id="s1")
    assert "peanuts" in context
    stored = emulator.store.list_messages(
        STORE, Scope("hermes", "telegram:dana", "hermes", "s1")
    ).items
    assert [m.content for m in stored] == ["I am allergic to peanuts", "I will remember that."]
    # The prefetch names the current session, so the service can rank its memories higher.
    searches = [body for api, body in emulator.recorded if api == "SearchMemories"]
    assert searches
    session = {"appId": "hermes", "tenantId": "telegram:dana", "agentId": "hermes", "runId": "s1"}
    assert all(body["contextScope"] == session for body in searches)


def test_search_tool_passes_evidence_and_floor(manager: Any, emulator: Any) -> None:
    manager.handle_tool_call("tablestore_remember", {"content": "Dana rides a bike", "sync": True})
    found = json.loads(
        manager.handle_tool_call(
            "tablestore_search",
            {"query": "bike", "include_evidence": True, "min_similarity": 0.0},
        )
    )
    assert "results" in found, found
    assert found["results"] and "similarity" in found["results"][0]
    (body,) = [b for api, b in emulator.recorded if api == "SearchMemories"]
    assert body["includeEvidence"] is True and body["minSimilarity"] == 0.0
    assert body["contextScope"]["runId"] == "s1"


def test_builtin_memory_writes_are_bridged(manager: Any, emulator: Any) -> None:
    provider = provider_of(manager)
    manager.notify_memory_tool_write(
        json.dumps({"success": True}),
        {"action": "add", "target": "user", "content": "Dana prefers metric units"},
    )
    manager.notify_memory_tool_write(
        json.dumps({"success": True, "staged": True}),
        {"action": "add", "target": "user", "content": "staged only"},
    )
    manager.on_session_end([])
    assert provider.runtime.flush(10)
    mirrored = {m.text: dict(m.metadata) for m in emulator.store.all_memories(STORE)}
    assert set(mirrored) == {"Dana prefers metric units"}
    assert mirrored["Dana prefers metric units"]["source"] == "builtin_memory"


def test_the_system_prompt_block_reaches_the_manager(manager: Any) -> None:
    prompt = manager.build_system_prompt()
    assert "tablestore-mem" in prompt and "hermes/telegram:dana/hermes/s1" in prompt


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _lanes() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tablestore-mem-")]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_agents_the_gateway_drops_without_ending_them_let_go_of_threads_and_sockets(
    hermes_home: Path, emulator: Any, kit: Any
) -> None:
    """Hermes' gateway evicts cached agents (LRU cap, idle TTL, a model switch) with
    ``release_clients()`` only: their provider is never shut down, just dropped. Each one's
    lane, store and connections must go with it, and the turn it had queued still lands."""
    from agent.memory_manager import MemoryManager

    kit.emulator_home(hermes_home, emulator)
    fds, lanes = _open_fds(), len(_lanes())
    runtimes: list[weakref.ref[Any]] = []
    for i in range(5):
        mm = MemoryManager()
        provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
        mm.add_provider(provider)
        mm.initialize_all(
            session_id=f"evicted-{i}", platform="telegram", agent_context="primary", user_id=f"u{i}"
        )
        mm.prefetch_all(f"what did user {i} say?", session_id=f"evicted-{i}")
        mm.sync_all(f"user {i} keeps bees", "Noted.", session_id=f"evicted-{i}")
        assert mm.flush_pending(5)
        runtimes.append(weakref.ref(provider.runtime))
        del mm, provider  # evicted: no on_session_end, no shutdown_all
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        gc.collect()
        if not any(r() for r in runtimes) and _open_fds() <= fds:
            break
        time.sleep(0.05)
    assert len(_lanes()) == lanes
    assert not any(r() for r in runtimes)
    assert _open_fds() <= fds
    for i in range(5):
        stored = emulator.store.list_messages(
            STORE, Scope("hermes", f"telegram:u{i}", "hermes", f"evicted-{i}")
        ).items
        assert [m.content for m in stored] == [f"user {i} keeps bees", "Noted."]


def test_a_recall_wait_longer_than_hermes_gives_still_shows_the_sessions_last_recall(
    hermes_home: Path, emulator: Any, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hermes' manager gives a provider's prefetch a fixed time (8 s in 0.19) and then shows
    nothing, and skips the next turns while that prefetch still runs. A ``recall_wait_ms``
    above it (up to 10,000 is allowed) must still end in this session's last recall."""
    import agent.memory_manager as hermes_manager
    from agent.memory_manager import MemoryManager

    from memcore_tablestore.emulator.faults import Faults

    monkeypatch.setattr(hermes_manager, "_EXTERNAL_PREFETCH_TIMEOUT_S", 1.5)
    kit.emulator_home(hermes_home, emulator, recall_wait_ms=3000)
    mm = MemoryManager()
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    mm.add_provider(provider)
    mm.initialize_all(session_id="s1", platform="telegram", agent_context="primary", user_id="fay")
    try:
        mm.handle_tool_call(
            "tablestore_remember", {"content": "Fay sails on Sundays", "sync": True}
        )
        first = mm.prefetch_all("when does Fay sail?", session_id="s1")
        assert "Fay sails on Sundays" in first
        emulator.set_faults(Faults(latency_ms=2500, apis=("SearchMemories",)))
        started = time.monotonic()
        late = mm.prefetch_all("where does Fay sail?", session_id="s1")
        assert "Fay sails on Sundays" in late
        assert time.monotonic() - started < 1.5
    finally:
        emulator.set_faults(Faults())
        mm.shutdown_all()
