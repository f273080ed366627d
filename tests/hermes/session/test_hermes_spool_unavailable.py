"""A spool that cannot be opened (a read-only or full Hermes home, a permission denied),
driven through Hermes' own loader and ``MemoryManager`` as a session is.

Hermes logs a provider's failed start and keeps the provider, tools and all: failing the
start left the agent running with no recall and every tool answering "could not start". The
session now starts with spooled writes off: recall and search work, a turn is logged as NOT
recorded (never claimed), ``remember`` answers why, and ``sync: true`` stores at once."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.config.home import SPOOL_FILE

NAME = "tablestore-mem"


def _session(home: Path) -> Any:
    """Hermes' ``MemoryManager`` over the provider its loader finds in ``home``."""
    from agent.memory_manager import MemoryManager
    from plugins.memory import load_memory_provider

    provider = load_memory_provider(NAME)
    assert provider is not None
    mm = MemoryManager()
    mm.add_provider(provider)
    mm.initialize_all(session_id="s1", platform="telegram", user_id="dana")
    return mm


def _search(mm: Any, query: str) -> list[str]:
    answer = json.loads(mm.handle_tool_call("tablestore_search", {"query": query}))
    assert "error" not in answer, answer
    return [hit["text"] for hit in answer["results"]]


@pytest.fixture
def unopenable_spool(hermes_home: Path, kit: Any) -> Path:
    """A local store holding one memory of Dana's, and a spool nothing can open as a file."""
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none")
    first = MemcoreMemoryProvider()
    first.initialize("s0", hermes_home=str(hermes_home), platform="telegram", user_id="dana")
    first.handle_tool_call("tablestore_remember", {"content": "Dana owns a kayak", "sync": True})
    first.shutdown()
    spool = hermes_home / SPOOL_FILE
    spool.unlink()
    spool.mkdir()  # as a permission denied or a full disk: SQLite cannot open it
    return spool


def test_without_its_spool_a_session_recalls_but_takes_no_write_it_cannot_keep(
    unopenable_spool: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        mm = _session(unopenable_spool.parent)
    try:
        [provider] = mm.providers
        assert provider.runtime is not None, "the start failed"
        assert "memory writes are off" in caplog.text and str(unopenable_spool) in caplog.text
        assert "Memory writes are off in this session" in mm.build_system_prompt()
        assert _search(mm, "kayak") == ["Dana owns a kayak"]
        assert "kayak" in mm.prefetch_all("what boat does Dana own?")

        error = json.loads(
            mm.handle_tool_call("tablestore_remember", {"content": "Dana moved to Porto"})
        )["error"]
        assert error["retryable"] is False
        assert error["message"].startswith("memory writes are off: cannot open the spool ")
        assert str(unopenable_spool) in error["message"] and "sync: true" in error["message"]

        caplog.clear()
        with caplog.at_level(logging.ERROR):
            mm.sync_all("I sold the kayak last week", "Noted.")
            mm.on_memory_write("add", "user", "Dana sold the kayak")
            deadline = time.monotonic() + 10
            while "NOT recorded" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
        assert "the turn was NOT recorded" in caplog.text

        stored = json.loads(
            mm.handle_tool_call(
                "tablestore_remember", {"content": "Dana moved to Porto", "sync": True}
            )
        )
        assert "error" not in stored, stored
        assert _search(mm, "Porto") == ["Dana moved to Porto"]
        assert _search(mm, "sold") == []  # neither the turn nor the mirror was taken
        stand_in = provider.runtime.spool.path.parent
    finally:
        mm.shutdown_all()
    assert unopenable_spool.is_dir() and not any(unopenable_spool.iterdir())
    deadline = time.monotonic() + 10
    while stand_in.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not stand_in.exists()  # the empty stand-in is removed with the session
