"""A tool's error answer never names the server's database file, its folder or the home folder
of the user running the server: over HTTP a client may be another tenant. The error keeps its
type, code and retryable flag; only the path gives way to a neutral word."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp_rig import Backend, http_session, payload, token

from memcore_cli.settings.home import DB_FILENAME

#: A user name that must not reach a client (it is in the server's home folder).
USER = "ada-lovelace"


def _secrets(home: Path, database: Path) -> list[str]:
    """Every spelling of the server's paths that an answer could give away."""
    spellings = {USER, str(home), str(home.resolve())}
    for path in (database, database.parent):
        spellings |= {str(path), str(path.resolve()), "~/" + str(path.relative_to(home))}
    return sorted(spellings)


def test_a_busy_database_is_a_retryable_error_that_names_no_path(
    tmp_path: Path, held_write_lock: Callable[[Path], AbstractContextManager[None]]
) -> None:
    """Both transports, at once: each write waits the server's busy timeout (1 s) first."""
    home = tmp_path / "users" / USER
    server = Backend("local", home / ".memcore", {"HOME": str(home)}, [])
    database = server.home / DB_FILENAME
    alice = token()
    answers: dict[str, Any] = {}

    async def write(name: str, session: ClientSession) -> None:
        answers[name] = await session.call_tool("remember", {"text": f"{name} likes tea"})

    async def main(url: str) -> None:
        async with (
            server.stdio("--tenant", "bob", mcp_args=("--busy-timeout", "1")) as stdio,
            http_session(url, alice) as http,
        ):
            sessions = {"stdio": stdio, "http": http}
            for session in sessions.values():
                assert not (await session.call_tool("list_memories", {})).is_error
            with held_write_lock(database):
                async with anyio.create_task_group() as group:
                    for name, session in sessions.items():
                        group.start_soon(write, name, session)

    with server.http({"alice": alice}, "--busy-timeout", "1") as url:
        assert database.exists()
        anyio.run(main, url)

    assert set(answers) == {"stdio", "http"}
    for name, result in answers.items():
        assert result.is_error, name
        error = payload(result)["error"]
        assert (error["type"], error["code"], error["retryable"]) == (
            "Unavailable",
            "unavailable",
            True,
        ), error
        assert error["field"] == "database", error
        assert "the server's database is busy" in error["message"], error
        shown = result.content[0].text + json.dumps(result.structured_content)
        for secret in _secrets(home, database):
            assert secret not in shown, (name, secret, error)
