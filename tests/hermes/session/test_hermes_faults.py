"""Backend outages: every turn taken while TableStore is down or failing arrives exactly once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from memcore.paging import every_item
from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider

TURNS = 30
STORE = "hermes_mem"


def start_provider(home: Path, kit: Any, session: str = "outage") -> MemcoreMemoryProvider:
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=0.5)
    provider.initialize(session, hermes_home=str(home), agent_context="primary", user_id="fay")
    return provider


def expected(turns: range) -> list[str]:
    return [text for i in turns for text in (f"turn {i}: question", f"turn {i}: answer")]


def stored(store: InMemoryMemoryStore, provider: MemcoreMemoryProvider) -> list[str]:
    scope = provider.runtime.scope
    listing = every_item(
        lambda token: store.list_messages(STORE, scope, limit=100, next_token=token)
    )
    return [m.content for m in listing]


@pytest.mark.slow
def test_503_for_30_turns_then_recovery(hermes_home: Path, kit: Any) -> None:
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import running_emulator

    backing = InMemoryMemoryStore()
    with running_emulator(backing, faults=Faults(error_rate=1.0, error_status=503)) as server:
        kit.emulator_home(hermes_home, server, timeout=0.3)
        provider = start_provider(hermes_home, kit)
        try:
            for i in range(TURNS):
                provider.sync_turn(f"turn {i}: question", f"turn {i}: answer", session_id="outage")
            time.sleep(0.3)  # let the lane fail a few times
            assert provider.runtime.spool.stats(time.time()).depth == TURNS
            server.set_faults(Faults())
            assert kit.settle(provider, 30.0)
            assert stored(backing, provider) == expected(range(TURNS))
        finally:
            provider.shutdown()


@pytest.mark.slow
def test_backend_down_for_30_turns_across_a_restart(hermes_home: Path, kit: Any) -> None:
    from memcore_tablestore.emulator import EmulatorServer

    backing = InMemoryMemoryStore()
    server = EmulatorServer(backing).start()
    port = server.port
    kit.emulator_home(hermes_home, server, timeout=0.3)
    server.stop()  # nothing listens now: connections are refused

    provider = start_provider(hermes_home, kit)
    for i in range(TURNS // 2):
        provider.sync_turn(f"turn {i}: question", f"turn {i}: answer", session_id="outage")
    provider.shutdown()  # bounded; the turns stay in the spool

    provider = start_provider(hermes_home, kit)  # the next start replays them
    try:
        for i in range(TURNS // 2, TURNS):
            provider.sync_turn(f"turn {i}: question", f"turn {i}: answer", session_id="outage")
        assert provider.runtime.spool.stats(time.time()).depth == TURNS
        revived = EmulatorServer(backing, port=port).start()
        try:
            assert kit.settle(provider, 30.0)
            assert stored(backing, provider) == expected(range(TURNS))
        finally:
            provider.shutdown()
            revived.stop()
    finally:
        provider.shutdown()


@pytest.mark.slow
def test_flaky_backend_and_dropped_connections_never_duplicate(hermes_home: Path, kit: Any) -> None:
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import running_emulator

    backing = InMemoryMemoryStore()
    flaky = Faults(error_rate=0.3, drop_rate=0.2, seed=7, apis=("AddMemories",))
    with running_emulator(backing, faults=flaky) as server:
        kit.emulator_home(hermes_home, server, timeout=0.3)
        provider = start_provider(hermes_home, kit)
        try:
            for i in range(TURNS):
                provider.sync_turn(f"turn {i}: question", f"turn {i}: answer", session_id="outage")
            provider.queue_prefetch("turn 29")
            assert kit.settle(provider, 30.0)
            assert stored(backing, provider) == expected(range(TURNS))
        finally:
            provider.shutdown()


def test_a_turn_answered_with_garbage_stays_spooled_until_the_service_answers(
    hermes_home: Path, kit: Any
) -> None:
    """A 2xx AddMemories the client cannot read is not the service's answer: the turn is not
    dropped from the spool as 'landed' (here it was never applied), it is delivered once the
    service answers again, and exactly once."""
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import running_emulator

    backing = InMemoryMemoryStore()
    garbled = Faults(chaos=True, apis=("AddMemories",), seed=1)
    with running_emulator(backing, faults=garbled) as server:
        kit.emulator_home(hermes_home, server, timeout=0.3)
        provider = start_provider(hermes_home, kit)
        try:
            provider.sync_turn("turn 0: question", "turn 0: answer", session_id="outage")
            assert not kit.settle(provider, 1.0)
            assert provider.runtime.spool.stats(time.time()).depth == 1
            server.set_faults(Faults())
            assert kit.settle(provider, 10.0)
            assert stored(backing, provider) == expected(range(1))
        finally:
            provider.shutdown()


def test_a_replay_check_the_service_refuses_keeps_the_turn_spooled(
    hermes_home: Path, kit: Any
) -> None:
    """A turn whose answer was lost is looked for before it is sent again; when the service
    refuses that look (a 400 on ListMemoryStoreMessages, as for a page token it rejects), the
    turn itself was not refused: it stays in the spool and lands once, never dead-lettered."""
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import running_emulator

    backing = InMemoryMemoryStore()
    with running_emulator(backing) as server:
        kit.emulator_home(hermes_home, server, timeout=0.3)
        provider = start_provider(hermes_home, kit)
        try:
            assert kit.settle(provider, 10.0)
            # The send is cut off unapplied, then the look before the resend is refused.
            server.set_faults(
                Faults(
                    drop_burst=1,
                    error_burst=1,
                    error_status=400,
                    error_code="INVALID_PARAMETER",
                    apis=("AddMemories", "ListMemoryStoreMessages"),
                )
            )
            provider.sync_turn("turn 0: question", "turn 0: answer", session_id="outage")
            assert kit.settle(provider, 10.0)
            assert provider.runtime.spool.dead_letters() == []
            assert stored(backing, provider) == expected(range(1))
        finally:
            provider.shutdown()
