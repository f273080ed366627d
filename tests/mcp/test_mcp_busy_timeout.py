"""``memcore mcp --busy-timeout``: a write that meets another process's write lock answers the
retryable busy error once that many seconds are over, not after SQLite's default 30."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
from mcp_rig import Backend, payload

from memcore_cli.settings.home import DB_FILENAME


def test_a_held_lock_answers_busy_after_the_configured_wait(
    local_backend: Backend, held_write_lock: Callable[[Path], AbstractContextManager[None]]
) -> None:
    database = local_backend.home / DB_FILENAME
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with local_backend.stdio(
            "--tenant", "alice", mcp_args=("--busy-timeout", "1")
        ) as session:
            assert not (await session.call_tool("list_memories", {})).is_error
            with held_write_lock(database):
                start = time.monotonic()
                seen["result"] = await session.call_tool("remember", {"text": "Alice likes tea"})
                seen["waited"] = time.monotonic() - start

    anyio.run(main)
    result, waited = seen["result"], seen["waited"]
    assert result.is_error
    error = payload(result)["error"]
    assert (error["code"], error["retryable"], error["field"]) == ("unavailable", True, "database")
    assert "the server's database is busy" in error["message"], error
    # At least the wait asked for; far less than the 30 s default (the model may still load).
    assert 0.9 <= waited < 10, waited
