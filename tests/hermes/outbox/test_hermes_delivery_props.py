"""Property: whatever the backend does (refuse, lose answers) and however often the agent
restarts, every turn arrives exactly once and in order; two lanes on one spool never double-send."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.errors import Throttled, Unavailable
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message, WriteReceipt
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.outbox.delivery import RetryPolicy

STORE = "hermes_mem"
FAST = RetryPolicy(base_s=0.001, cap_s=0.005, jitter=0.0)


class ScriptedStore(InMemoryMemoryStore):
    """``add_messages`` follows a script: ``ok``, ``refuse`` (fails before storing) or ``lose``
    (stores, then the answer is lost); after the script every call succeeds."""

    def __init__(self, script: Sequence[str]) -> None:
        super().__init__()
        self.script = list(script)
        self._script_lock = threading.Lock()

    def add_messages(
        self, store: str, scope: Scope, messages: Sequence[Message], **kw: Any
    ) -> WriteReceipt:
        with self._script_lock:
            step = self.script.pop(0) if self.script else "ok"
        if step == "refuse":
            raise Throttled("slow down")
        receipt = super().add_messages(store, scope, messages, **kw)
        if step == "lose":
            raise Unavailable("read timed out")
        return receipt

    def reopen(self) -> ScriptedStore:
        """A client of its own over the same data and script: a stopped host's lane that ends
        its last call after the shutdown wait closes its own client, not the next host's."""
        client = copy.copy(self)
        client.closed = False
        return client


def start(home: Path, store: InMemoryMemoryStore, session: str = "prop") -> MemcoreMemoryProvider:
    provider = MemcoreMemoryProvider(
        store_factory=lambda _c: store.reopen(), retry=FAST, flush_timeout=0.05
    )
    provider.initialize(session, hermes_home=str(home), user_id="hal")
    return provider


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    script=st.lists(st.sampled_from(["ok", "refuse", "lose"]), max_size=25),
    plan=st.lists(st.sampled_from(["turn", "turn", "turn", "restart"]), min_size=1, max_size=15),
)
def test_every_turn_arrives_once_in_order(
    tmp_path_factory: pytest.TempPathFactory, kit: Any, script: list[str], plan: list[str]
) -> None:
    home = tmp_path_factory.mktemp("home")
    store = ScriptedStore(script)
    provider = start(home, store)
    sent: list[str] = []
    try:
        for step in plan:
            if step == "restart":
                provider.shutdown()
                provider = start(home, store)
            else:
                n = len(sent) // 2
                provider.sync_turn(f"q{n}", f"a{n}", session_id="prop")
                sent.extend([f"q{n}", f"a{n}"])
        assert kit.settle(provider, 20.0)
        scope = Scope("hermes", "cli:hal", "hermes", "prop")
        stored = [m.content for m in store.list_messages(STORE, scope, limit=100).items]
        assert stored == sent
    finally:
        provider.shutdown()


def test_two_lanes_on_one_spool_deliver_each_turn_once(hermes_home: Path, kit: Any) -> None:
    store = ScriptedStore(["lose", "refuse"] * 5)
    first, second = start(hermes_home, store, "one"), start(hermes_home, store, "two")
    try:
        for i in range(20):
            first.sync_turn(f"one-{i}", "ok", session_id="one")
            second.sync_turn(f"two-{i}", "ok", session_id="two")
        assert kit.settle(first, 20.0) and kit.settle(second, 20.0)
        for run in ("one", "two"):
            scope = Scope("hermes", "cli:hal", "hermes", run)
            users = [
                m.content
                for m in store.list_messages(STORE, scope, limit=100).items
                if m.role == "user"
            ]
            assert sorted(users) == sorted(f"{run}-{i}" for i in range(20))
            assert len(users) == len(set(users))
    finally:
        first.shutdown()
        second.shutdown()
