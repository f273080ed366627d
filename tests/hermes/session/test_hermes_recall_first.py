"""The turn's recall comes first on the embedded store: the caches its first search would build
are built in the background after ``initialize`` (which does not wait for them), and a
delivery the lane would start during a recall waits for it to end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.paging import pages
from memcore.scope import ScopePattern
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.session import runtime as runtime_module
from memcore_sqlite import SqliteMemoryStore

STORE = "hermes_mem"
SISTER = "My sister Maya moved to Lisbon last spring and works there as a night nurse"


class Agent:
    """Hermes' MemoryManager with the provider, as the agent drives it."""

    def __init__(self, home: Path, provider: MemcoreMemoryProvider, session: str) -> None:
        from agent.memory_manager import MemoryManager

        self.provider = provider
        self.session = session
        self.mm = MemoryManager()
        self.mm.add_provider(provider)
        self.mm.initialize_all(
            session_id=session,
            hermes_home=str(home),
            platform="cli",
            agent_context="primary",
            user_id="nell",
        )

    def ask(self, message: str) -> str:
        return str(self.mm.prefetch_all(message, session_id=self.session))

    def settle(self) -> None:
        assert self.mm.flush_pending(30)
        assert self.provider.runtime.flush(30)

    def memories(self) -> list[str]:
        runtime = self.provider.runtime
        store = runtime.handle.ready()
        pattern = ScopePattern("hermes", runtime.scope.tenant_id)
        listing = pages(lambda token: store.list_memories(STORE, pattern, next_token=token))
        return [m.text for page in listing for m in page.items]


@pytest.fixture
def agents(hermes_home: Path, kit: Any) -> Iterator[Any]:
    made: list[Agent] = []

    def make(session: str = "s1") -> Agent:
        kit.write_config(hermes_home, backend="local", embedder="none")
        agent = Agent(hermes_home, MemcoreMemoryProvider(retry=kit.FAST_RETRY), session)
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.mm.shutdown_all()


def test_initialize_warms_the_search_in_the_background_and_recall_is_unchanged(
    agents: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = agents("s1")
    first.mm.sync_all(SISTER, "That sounds like a big move.", session_id="s1")
    first.settle()
    expected = first.ask("Where does my sister live?")
    assert "Lisbon" in expected
    first.mm.shutdown_all()

    warming, release = threading.Event(), threading.Event()
    real = getattr(SqliteMemoryStore, "warm", None)

    def slow_warm(self: SqliteMemoryStore, *args: Any) -> None:
        warming.set()
        release.wait(10)
        if real is not None:
            real(self, *args)

    monkeypatch.setattr(SqliteMemoryStore, "warm", slow_warm, raising=False)
    started = time.monotonic()
    second = agents("s2")
    assert time.monotonic() - started < 5  # initialize did not wait for the warm-up
    assert warming.wait(10), "the store's search caches were not warmed after initialize"
    release.set()
    assert second.provider.runtime.wait_idle(10)
    assert second.ask("Where does my sister live?") == expected


def test_a_delivery_waits_for_the_recall_running_on_the_agents_thread(
    agents: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = agents("s1")
    agent.mm.sync_all(SISTER, "That sounds like a big move.", session_id="s1")
    agent.settle()
    monkeypatch.setattr(runtime_module, "RECALL_FIRST_S", 30.0, raising=False)
    inside, release = threading.Event(), threading.Event()
    search = runtime_module.MemoryRuntime._search_recall

    def held_search(self: Any, query: str, scope: Any) -> str:
        inside.set()
        release.wait(10)
        return search(self, query, scope)

    monkeypatch.setattr(runtime_module.MemoryRuntime, "_search_recall", held_search)
    answer: list[str] = []
    asking = threading.Thread(target=lambda: answer.append(agent.ask("my sister?")))
    asking.start()
    try:
        assert inside.wait(10)
        agent.mm.sync_all("I bought a red kayak last week", "Nice!", session_id="s1")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert not any("kayak" in t for t in agent.memories()), "delivered during the recall"
            time.sleep(0.05)
    finally:
        release.set()
        asking.join(10)
    assert answer and "Lisbon" in answer[0]
    agent.settle()
    assert any("kayak" in t for t in agent.memories())  # delivered once the recall ended
