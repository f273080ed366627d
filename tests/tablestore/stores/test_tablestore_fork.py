"""A store built before a ``fork`` (gunicorn ``--preload``, ``multiprocessing`` with the fork
start method) and used in the parent and its children at once, over real HTTP on 127.0.0.1:
each process sends on connections of its own, so no request or answer crosses processes, and
every write lands once."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.credentials import ApiKey, Credentials
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import (
    async_store_for,
    emulator_credentials,
    running_emulator,
    store_for,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

KEY = "emu-api-key-7d2e4a9c1b"
STORE = "forked"
ROUNDS = 60
CHILDREN = ("bob", "carol")


@pytest.fixture
def backing() -> InMemoryMemoryStore:
    return InMemoryMemoryStore()


@pytest.fixture
def server(backing: InMemoryMemoryStore) -> Iterator[EmulatorServer]:
    with running_emulator(backing, api_key=KEY) as emulator:
        yield emulator


def _scope(user: str) -> Scope:
    return Scope("app", user, "agent", "run")


def _credentials(server: EmulatorServer, kind: str) -> Credentials | ApiKey:
    return ApiKey(KEY) if kind == "api-key" else emulator_credentials(server)


def _fork(work: Callable[[], dict[str, Any]]) -> tuple[int, int]:
    """Run ``work`` in a forked child; its result comes back as JSON over a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read)
            try:
                result = work()
            except BaseException as exc:  # reported to the parent
                result = {"crashed": f"{type(exc).__name__}: {exc}"}
            os.write(write, json.dumps(result).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> dict[str, Any]:
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    result: dict[str, Any] = json.loads(b"".join(chunks) or b"{}")
    return result


def _hammer(store: TableStoreMemoryStore, user: str) -> dict[str, Any]:
    """Adds and searches in ``user``'s tenant; every error and every foreign answer counted."""
    errors: list[str] = []
    foreign = 0
    scope = _scope(user)
    for i in range(ROUNDS):
        try:
            store.add_text(STORE, scope, f"{user} fact {i}", sync=True)
            hits = store.search(STORE, scope.tenant_pattern(), "fact", top_k=3)
            foreign += sum(not h.memory.text.startswith(user) for h in hits)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
    return {"errors": errors, "foreign": foreign}


def _landed_once(backing: InMemoryMemoryStore, users: tuple[str, ...]) -> None:
    texts = sorted(m.text for m in backing.all_memories(STORE))
    assert texts == sorted(f"{u} fact {i}" for u in users for i in range(ROUNDS))


@pytest.mark.parametrize("kind", ["key-pair", "api-key"])
def test_a_sync_store_works_in_forked_children_and_in_the_parent(
    server: EmulatorServer, backing: InMemoryMemoryStore, kind: str
) -> None:
    store = store_for(server, credentials=_credentials(server, kind), timeout=5.0)
    store.ensure_store(STORE)
    for _ in range(5):  # pooled keep-alive connections for the children to inherit
        store.search(STORE, _scope("alice").tenant_pattern(), "fact")
    inherited = store._client

    def child(user: str) -> Callable[[], dict[str, Any]]:
        def work() -> dict[str, Any]:
            result = _hammer(store, user)
            result["own_client"] = store._client is not inherited
            return result

        return work

    forked = [_fork(child(user)) for user in CHILDREN]
    mine = _hammer(store, "alice")
    results = [_collect(pid, read) for pid, read in forked]
    for result in results:
        assert result.get("crashed") is None
        assert result["own_client"], "the child sent on the parent's connections"
        assert result["errors"] == [] and result["foreign"] == 0
    assert mine["errors"] == [] and mine["foreign"] == 0
    assert store._client is inherited  # the parent keeps its own connections
    store.search(STORE, _scope("alice").tenant_pattern(), "fact")  # and they still work
    _landed_once(backing, ("alice", *CHILDREN))
    store.close()


@pytest.mark.parametrize("kind", ["key-pair", "api-key"])
def test_an_async_store_works_in_a_forked_child_on_a_new_event_loop(
    server: EmulatorServer, backing: InMemoryMemoryStore, kind: str
) -> None:
    async def build_and_use() -> AsyncTableStoreMemoryStore:
        built = async_store_for(server, credentials=_credentials(server, kind), timeout=5.0)
        await built.ensure_store(STORE)
        await built.search(STORE, _scope("alice").tenant_pattern(), "fact")
        return built

    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(build_and_use())  # a session with a pooled connection
    inherited = store._client

    async def hammer(user: str) -> dict[str, Any]:
        errors: list[str] = []
        foreign = 0
        scope = _scope(user)
        for i in range(ROUNDS):
            try:
                await store.add_text(STORE, scope, f"{user} fact {i}", sync=True)
                hits = await store.search(STORE, scope.tenant_pattern(), "fact", top_k=3)
                foreign += sum(not h.memory.text.startswith(user) for h in hits)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
        return {"errors": errors, "foreign": foreign}

    def child() -> dict[str, Any]:
        async def main() -> dict[str, Any]:
            result = await hammer("bob")
            result["own_client"] = store._client is not inherited
            await store.close()
            return result

        return asyncio.run(main())

    pid, read = _fork(child)
    mine = loop.run_until_complete(hammer("alice"))
    result = _collect(pid, read)
    assert result.get("crashed") is None
    assert result["own_client"], "the child sent on the parent's session"
    assert result["errors"] == [] and result["foreign"] == 0
    assert mine["errors"] == [] and mine["foreign"] == 0
    assert not store._closed and store._client is inherited  # the child's close() was its own
    loop.run_until_complete(store.search(STORE, _scope("alice").tenant_pattern(), "fact"))
    _landed_once(backing, ("alice", "bob"))
    loop.run_until_complete(store.close())
    loop.close()


def test_a_store_closed_before_the_fork_stays_closed_in_the_child(server: EmulatorServer) -> None:
    from memcore.errors import StoreClosed

    store = store_for(server, timeout=5.0)
    store.close()

    def work() -> dict[str, Any]:
        try:
            store.list_stores()
        except StoreClosed:
            return {"closed": True}
        return {"closed": False}

    assert _collect(*_fork(work)) == {"closed": True}
