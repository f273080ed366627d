"""A real ``run_agent.AIAgent`` turn: fake chat server on loopback, TableStore emulator, the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.slow
def test_a_turn_is_stored_and_recalled_in_the_next_turn(
    hermes_home: Path, emulator: Any, chat_server: Any, kit: Any
) -> None:
    from run_agent import AIAgent

    kit.install_plugin(hermes_home)
    kit.emulator_home(hermes_home, emulator)
    agent = AIAgent(
        base_url=chat_server.url,
        api_key="sk-loopback",
        model="fake-model",
        quiet_mode=True,
        skip_context_files=True,
        enabled_toolsets=["memory"],
        max_iterations=3,
        session_id="e2e-session",
        platform="cli",
        user_id="erin",
    )
    try:
        manager = agent._memory_manager
        assert manager is not None
        provider = manager.get_provider("tablestore-mem")
        assert provider is not None and provider.runtime is not None

        first = agent.run_conversation("My favourite editor is helix")
        assert first["final_response"] == "Noted, thanks!"
        assert manager.flush_pending(10)
        assert provider.runtime.wait_idle(10)

        agent.run_conversation("Which editor do I like?")
        last = chat_server.chat_requests()[-1]
        tools = {t["function"]["name"] for t in last.get("tools", [])}
        assert {
            "tablestore_search",
            "tablestore_remember",
            "tablestore_profile",
            "tablestore_forget",
        } <= tools
        user_turn = last["messages"][-1]["content"]
        assert "<memory-context>" in user_turn
        context = user_turn.split("<memory-context>", 1)[1]
        assert "<recalled-memory>" in context and "My favourite editor is helix" in context

        scope = provider.runtime.scope
        assert (scope.app_id, scope.tenant_id, scope.run_id) == (
            "hermes",
            "cli:erin",
            "e2e-session",
        )
        assert manager.flush_pending(10)
        assert provider.runtime.flush(10)
        stored = [m.content for m in emulator.store.list_messages("hermes_mem", scope).items]
        assert stored == [
            "My favourite editor is helix",
            "Noted, thanks!",
            "Which editor do I like?",
            "Noted, thanks!",
        ]
    finally:
        agent.shutdown_memory_provider()
