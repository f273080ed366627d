"""A memory store deleted under a running Hermes session: the tools say the store is missing
(a typed JSON error with the fix), never an empty search nor an unknown memory id."""

from __future__ import annotations

import json
import shlex
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
                told = f"'memcore --hermes-home {hermes_home} stores create {STORE}'"
                assert told in error["message"]
        finally:
            provider.shutdown()


def _advised(message: str) -> list[str]:
    """The argv of the ``create it with '...'`` command a message advises."""
    return shlex.split(message.split("create it with '", 1)[1].split("'", 1)[0])


def test_the_advised_command_creates_the_store_the_session_reads(
    hermes_home: Path, kit: Any, capsys: Any
) -> None:
    """The tools and ``hermes tablestore-mem`` advised ``memcore stores create hermes_mem``:
    run as written, it read memcore's own config (the embedded store under $MEMCORE_HOME),
    not this Hermes home, so the store the session reads stayed missing. The advice names
    ``--hermes-home``, and run as given it brings the session's store back."""
    from typer.testing import CliRunner

    from memcore_cli.app import app
    from memcore_tablestore.testing import running_emulator, store_for

    with running_emulator() as server:
        kit.emulator_home(hermes_home, server, auto_create_store=False)
        with store_for(server, timeout=5.0) as admin:
            admin.ensure_store(STORE)
        provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=2.0)
        provider.initialize(
            "s1", hermes_home=str(hermes_home), agent_context="primary", user_id="fay"
        )
        try:
            with store_for(server, timeout=5.0) as admin:
                admin.delete_store(STORE)
            error = json.loads(provider.handle_tool_call("tablestore_search", {"query": "x"}))
            told = _advised(error["error"]["message"])
            code, answer, _ = kit.run_cli_full(capsys, "search", "bike")
            assert code == 3 and _advised(answer["error"]["message"]) == told
            assert told[:3] == ["memcore", "--hermes-home", str(hermes_home)], told
            env = {"MEMCORE_HOME": str(hermes_home.parent / "memcore-home"), **kit.EMULATOR_KEYS}
            done = CliRunner().invoke(app, told[1:], env=env, catch_exceptions=False)
            assert done.exit_code == 0, done.stderr
            answer = json.loads(provider.handle_tool_call("tablestore_search", {"query": "x"}))
            assert "error" not in answer, answer
        finally:
            provider.shutdown()
