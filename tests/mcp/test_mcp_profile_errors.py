"""A failed read of ``memcore://profile`` answers the tools' typed JSON error (in the JSON-RPC
error's ``data``), not the SDK's untyped "Error reading resource", and names no server path."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_rig import Backend, http_session, payload, token

from memcore_cli.settings.home import DB_FILENAME

PROFILE = "memcore://profile"
#: A user name that must not reach a client (it is in the server's home folder).
USER = "grace-hopper"


async def _failed_read(session: Any) -> dict[str, Any]:
    with pytest.raises(MCPError) as failed:
        await session.read_resource(PROFILE)
    return failed.value.error.model_dump(mode="json")


def test_a_failed_read_is_the_tools_typed_error_and_names_no_path(tmp_path: Path) -> None:
    """Another process renames a table under the server (a damaged schema): the read's error
    names the database file, which the client sees only as "the server's database"."""
    home = tmp_path / "users" / USER
    server = Backend("local", home / ".memcore", {"HOME": str(home)}, [])
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with server.stdio("--tenant", "alice") as session:
            payload(await session.call_tool("remember", {"text": "Alice likes tea"}))
            assert "Alice likes tea" in (await session.read_resource(PROFILE)).contents[0].text
            other = sqlite3.connect(server.home / DB_FILENAME, isolation_level=None)
            with contextlib.closing(other):
                other.execute("ALTER TABLE memories RENAME TO memories_moved")
            seen["resource"] = await _failed_read(session)
            seen["tool"] = payload(await session.call_tool("list_memories", {}))

    anyio.run(main)
    error = seen["resource"]
    assert error["data"] == seen["tool"], error  # the very object the tools answer
    body = error["data"]["error"]
    assert (body["type"], body["code"], body["field"], body["retryable"]) == (
        "Unavailable",
        "unavailable",
        "database",
        True,
    ), body
    assert body["message"].startswith("the server's database failed"), body
    assert error["message"] == body["message"]
    assert USER not in json.dumps(error), error


def test_a_backend_that_goes_away_is_a_retryable_typed_error_over_http(
    tablestore_backend: Backend,
) -> None:
    alice = token()

    async def main(url: str) -> None:
        async with http_session(url, alice) as session:
            payload(await session.call_tool("remember", {"text": "Alice plays the cello"}))
            tablestore_backend.emulator.stop()
            error = await _failed_read(session)
            body = error["data"]["error"]
            assert (body["code"], body["retryable"]) == ("unavailable", True), error
            assert "Traceback" not in body["message"]

    with tablestore_backend.http({"alice": alice}) as url:
        anyio.run(main, url)
