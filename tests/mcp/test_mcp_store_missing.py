"""A TableStore memory store that is not there yet (a first run, a mistyped
``memory_store_name``): the server still starts and says so on stderr; every tool but
``remember`` answers ``store_not_found`` instead of creating it empty and finding nothing; the
first ``remember`` creates it (``auto_create_store`` is on)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_rig import Backend, emulated, payload, run_memcore

from memcore.errors import StoreNotFound
from memcore.testing import InMemoryMemoryStore

MISSING = "0" * 32
READS = [
    ("recall", {"query": "music"}),
    ("list_memories", {}),
    ("get_memory", {"memory_id": MISSING}),
    ("update_memory", {"memory_id": MISSING, "text": "Erin plays the cello"}),
    ("forget", {"memory_id": MISSING}),
    ("dream_propose", {}),
    ("dream_status", {"task_id": MISSING}),
    ("dream_apply", {"task_id": MISSING, "action_ids": ["a"]}),
]


def _stores(backend: Backend) -> list[str]:
    from memcore_tablestore.testing import store_for

    with store_for(backend.emulator, timeout=5.0) as admin:
        return [s.name for s in admin.list_stores()]


def _name_store(backend: Backend, name: str, **more: Any) -> None:
    config = backend.home / "config.json"
    settings = json.loads(config.read_text(encoding="utf-8"))
    config.write_text(json.dumps({**settings, "memory_store_name": name, **more}), "utf-8")


def _store_not_found(result: Any, tool: str, name: str) -> None:
    assert result.is_error, (tool, result)
    error = payload(result)["error"]
    assert (error["code"], error["type"]) == ("store_not_found", "StoreNotFound"), (tool, error)
    assert f"memory store {name!r} does not exist" in error["message"], (tool, error)


def test_a_mistyped_store_is_reported_not_created_until_the_first_remember(
    tablestore_fake_backend: Backend,
) -> None:
    backend = tablestore_fake_backend
    _name_store(backend, "hermes_mme")

    async def main() -> None:
        async with backend.stdio("--tenant", "erin") as session:
            assert _stores(backend) == []
            for tool, arguments in READS:
                _store_not_found(await session.call_tool(tool, arguments), tool, "hermes_mme")
            with pytest.raises(MCPError) as failed:
                await session.read_resource("memcore://profile")
            assert failed.value.error.data["error"]["code"] == "store_not_found"
            assert _stores(backend) == []
            refused = await session.call_tool("remember", {"text": "\u200b\u200b"})
            assert payload(refused)["error"]["code"] == "invalid_input"  # checked first
            assert _stores(backend) == []
            texts = ["Erin plays the viola", "Erin plays the viola in a quartet"]
            written: list[Any] = []

            async def remember(text: str) -> None:
                written.append(await session.call_tool("remember", {"text": text}))

            async with anyio.create_task_group() as writes:  # both meet the missing store
                for text in texts:
                    writes.start_soon(remember, text)
            assert not any(w.is_error for w in written), [payload(w) for w in written]
            assert _stores(backend) == ["hermes_mme"]
            found = payload(await session.call_tool("recall", {"query": "viola"}))
            assert sorted(hit["text"] for hit in found["results"]) == texts

    anyio.run(main)
    log = backend.stderr.read_text(encoding="utf-8")
    assert "memory store 'hermes_mme' does not exist yet" in log, log
    assert "the first remember creates it" in log, log


def test_without_auto_create_the_server_starts_and_nothing_creates_the_store(
    tablestore_fake_backend: Backend,
) -> None:
    backend = tablestore_fake_backend
    _name_store(backend, "hermes_mme", auto_create_store=False)

    async def main() -> None:
        async with backend.stdio("--tenant", "erin") as session:
            for tool, arguments in [*READS, ("remember", {"text": "Erin plays the viola"})]:
                _store_not_found(await session.call_tool(tool, arguments), tool, "hermes_mme")
            assert _stores(backend) == []

    anyio.run(main)
    log = backend.stderr.read_text(encoding="utf-8")
    assert "memory store 'hermes_mme' does not exist" in log, log
    assert "(memcore --backend tablestore stores create hermes_mme)" in log, log


def test_the_command_said_at_start_creates_the_store_the_server_reads(
    tablestore_fake_backend: Backend,
) -> None:
    """Started with ``--backend tablestore`` (the README's way), the server's line names the
    create command with that flag: run as written without it, it made the store in the
    embedded store and the server kept answering store_not_found."""
    backend = tablestore_fake_backend
    _name_store(backend, "hermes_mme", auto_create_store=False)

    async def main() -> None:
        async with backend.stdio("--tenant", "erin") as session:
            said = backend.stderr.read_text(encoding="utf-8")
            command = said.rsplit("until it is created (memcore ", 1)[1].split(")", 1)[0]
            run_memcore(Backend("advised", backend.home, backend.env, []), *shlex.split(command))
            assert _stores(backend) == ["hermes_mme"]
            stored = await session.call_tool("remember", {"text": "Erin plays the viola"})
            assert not stored.is_error, payload(stored)

    anyio.run(main)


def test_an_embedded_store_without_auto_create_serves_and_says_the_store_is_missing(
    local_backend: Backend,
) -> None:
    """The embedded store with the default embedder: the background re-embedding at start
    must not stop the server it said would serve."""
    (local_backend.home / "config.json").write_text(
        json.dumps({"auto_create_store": False}), encoding="utf-8"
    )

    async def main() -> None:
        async with local_backend.stdio("--tenant", "erin") as session:
            for tool, arguments in [("recall", {"query": "music"}), ("remember", {"text": "x"})]:
                _store_not_found(await session.call_tool(tool, arguments), tool, "hermes_mem")

    anyio.run(main)
    log = local_backend.stderr.read_text(encoding="utf-8")
    assert "memcore stores create hermes_mem" in log, log


def test_a_mistyped_embedded_store_is_reported_as_on_tablestore(local_backend: Backend) -> None:
    """The embedded store made a mistyped store on the server's start, empty, and every
    recall found nothing; in a file that holds other stores it is now missing as on
    TableStore, until the first remember creates it (a new file still makes its own)."""
    backend = local_backend
    backend.home.mkdir(parents=True, exist_ok=True)
    (backend.home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    run_memcore(backend, "add", "--sync", "Erin plays the cello")
    _name_store(backend, "hermes_mme")

    async def main() -> None:
        async with backend.stdio("--tenant", "erin") as session:
            _store_not_found(
                await session.call_tool("recall", {"query": "music"}), "recall", "hermes_mme"
            )
            remembered = await session.call_tool("remember", {"text": "Erin plays the viola"})
            assert not remembered.is_error, payload(remembered)
            found = payload(await session.call_tool("recall", {"query": "viola"}))
            assert [hit["text"] for hit in found["results"]] == ["Erin plays the viola"]

    anyio.run(main)


class MadeMeanwhile(InMemoryMemoryStore):
    """A store whose first add finds the memory store missing, and another client makes it
    just after (as a second first write does)."""

    raced = False

    def add_text(self, store: str, *args: Any, **kwargs: Any) -> Any:
        if not self.raced and store not in [s.name for s in self.list_stores()]:
            self.raced = True
            self.ensure_store(store, create=True)
            raise StoreNotFound(f"memory store {store!r} does not exist", field="store")
        return super().add_text(store, *args, **kwargs)


@pytest.fixture
def made_meanwhile_backend(tmp_path: Path) -> Iterator[Backend]:
    yield from emulated(tmp_path, MadeMeanwhile())


def test_a_write_that_met_the_store_missing_while_another_made_it_is_sent_again(
    made_meanwhile_backend: Backend,
) -> None:
    """Two first remembers at once both met the missing store; the one whose 404 came back
    after the other had made it was told plain ``not_found`` ("AddMemories failed: HTTP 404"),
    since the store it then asked about was there, and its memory was not kept. Its write was
    refused (nothing landed), so it is sent again once the store is made."""
    backend = made_meanwhile_backend

    async def main() -> None:
        async with backend.stdio("--tenant", "erin") as session:
            remembered = await session.call_tool("remember", {"text": "Erin plays the viola"})
            assert not remembered.is_error, payload(remembered)
            found = payload(await session.call_tool("recall", {"query": "viola"}))
            assert [hit["text"] for hit in found["results"]] == ["Erin plays the viola"]

    anyio.run(main)


def test_a_store_busy_at_start_is_served_and_answers_once_it_is_not(
    tablestore_fake_backend: Backend,
) -> None:
    """A few seconds of throttling at launch ended the server (exit 5): the client had no
    memory server for its session, where the same answer later is one tool's error."""
    from memcore_tablestore.emulator import Faults

    backend = tablestore_fake_backend
    run_memcore(backend, "--tenant", "erin", "add", "--sync", "Erin plays the viola")
    config = backend.home / "config.json"
    settings = json.loads(config.read_text(encoding="utf-8"))
    config.write_text(json.dumps({**settings, "timeout": 2.0}), "utf-8")
    backend.emulator.set_faults(
        Faults(error_rate=1.0, error_status=503, error_code="OTSServerBusy")
    )

    async def main() -> None:
        async with backend.stdio("--tenant", "erin") as session:
            busy = await session.call_tool("recall", {"query": "viola"})
            assert busy.is_error and payload(busy)["error"]["retryable"] is True
            backend.emulator.set_faults(Faults())
            found = payload(await session.call_tool("recall", {"query": "viola"}))
            assert [hit["text"] for hit in found["results"]] == ["Erin plays the viola"]

    anyio.run(main)
    log = backend.stderr.read_text(encoding="utf-8")
    assert "the store did not answer at start" in log, log
