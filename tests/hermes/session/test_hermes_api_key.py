"""Hermes with only ``TABLESTORE_MEMORY_API_KEY`` in ``.env``: turns go through the spool and the
vendor's client to the emulator exactly once, across an outage, and the key is never logged."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from memcore.paging import every_item
from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider

KEY = "hermes-api-key-4f9d2b7c"
STORE = "hermes_mem"
TURNS = 6


def _home(home: Path, server: Any, kit: Any) -> None:
    kit.emulator_home(home, server, timeout=0.5)
    kit.write_env(home, {"TABLESTORE_MEMORY_API_KEY": KEY})  # the key only, no pair


def _stored(store: InMemoryMemoryStore, provider: MemcoreMemoryProvider) -> list[str]:
    scope = provider.runtime.scope
    listing = every_item(
        lambda token: store.list_messages(STORE, scope, limit=100, next_token=token)
    )
    return [m.content for m in listing]


def test_turns_reach_the_store_once_through_the_spool_across_an_outage(
    hermes_home: Path, kit: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import running_emulator

    caplog.set_level(logging.DEBUG)
    backing = InMemoryMemoryStore()
    down = Faults(error_rate=1.0, error_status=503, error_code="SERVICE_UNAVAILABLE")
    with running_emulator(backing, api_key=KEY) as server:
        _home(hermes_home, server, kit)
        provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=0.5)
        provider.initialize(
            "s1", hermes_home=str(hermes_home), agent_context="primary", user_id="ann"
        )
        try:
            server.set_faults(down)
            for i in range(TURNS):
                provider.sync_turn(f"turn {i}: question", f"turn {i}: answer", session_id="s1")
            time.sleep(0.3)
            assert provider.runtime.spool.stats(time.time()).depth == TURNS
            server.set_faults(Faults())
            assert kit.settle(provider, 30.0)
            assert _stored(backing, provider) == [
                text for i in range(TURNS) for text in (f"turn {i}: question", f"turn {i}: answer")
            ]
        finally:
            provider.shutdown()
    assert KEY not in "\n".join(r.getMessage() for r in caplog.records)


def test_a_wrong_api_key_keeps_turns_in_the_spool(hermes_home: Path, kit: Any) -> None:
    from memcore_tablestore.testing import running_emulator

    with running_emulator(InMemoryMemoryStore(), api_key="the-right-key-123456") as server:
        _home(hermes_home, server, kit)
        provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=0.5)
        provider.initialize(
            "s1", hermes_home=str(hermes_home), agent_context="primary", user_id="ann"
        )
        try:
            provider.sync_turn("a question", "an answer", session_id="s1")
            time.sleep(0.3)
            assert provider.runtime.spool.stats(time.time()).depth == 1
        finally:
            provider.shutdown()


def test_doctor_says_the_api_key_is_set_and_never_shows_it(hermes_home: Path, kit: Any) -> None:
    import json

    from memcore_hermes.commands.doctor import run_doctor
    from memcore_hermes.config.home import HermesHome
    from memcore_tablestore.testing import running_emulator

    with running_emulator(InMemoryMemoryStore(), api_key=KEY) as server:
        _home(hermes_home, server, kit)
        report = run_doctor(HermesHome(hermes_home), environ={}, user_id="ann")
    secrets = report["secrets"]
    assert secrets["TABLESTORE_MEMORY_API_KEY"] == "set"
    assert secrets["TABLESTORE_MEMORY_AK"] == secrets["TABLESTORE_MEMORY_SK"] == "missing"
    assert report["ok"], report
    assert KEY not in json.dumps(report)
