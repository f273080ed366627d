"""A memory store deleted under a running Hermes session: the tools say the store is missing
(a typed JSON error with the fix), never an empty search nor an unknown memory id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcore_hermes import MemcoreMemoryProvider

STORE = "hermes_mem"


def test_tools_say_a_deleted_store_is_missing(hermes_home: Path, kit: Any) -> None:
    from memcore_tablestore.testing import running_emulator, store_for

    with running_emulator() as server:
        kit.emulator_home(hermes_home, server)
        provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=2.0)
        provider.initialize(
            "s1", hermes_home=str(hermes_home), agent_context="primary", user_id="fay"
        )
        try:
            kept = json.loads(
                provider.handle_tool_call(
                    "tablestore_remember", {"content": "Fay rides a red bike", "sync": True}
                )
            )
            assert "error" not in kept, kept
            with store_for(server, timeout=5.0) as admin:
                admin.delete_store(STORE)
            for tool, args in [
                ("tablestore_search", {"query": "bike"}),
                ("tablestore_forget", {"memory_id": "0123456789abcdef0123456789abcdef"}),
            ]:
                answer = json.loads(provider.handle_tool_call(tool, args))
                error = answer["error"]
                assert error["code"] == "store_not_found", (tool, answer)
                assert f"{STORE!r} does not exist" in error["message"]
                assert "memcore stores create" in error["message"]
        finally:
            provider.shutdown()
