"""One ``Memory`` for many users: per-call identity (sync and async), policies, search options
(the contract suite runs the isolation, history and delete_all cases on every backend)."""

from __future__ import annotations

import asyncio

import attrs
import pytest

import memcore
from memcore import AsyncMemory, Memory, Scope, SessionContext, resolve_scope
from memcore.errors import InvalidInput, NotFound
from memcore.testing import InMemoryMemoryStore

OPENED = resolve_scope(
    SessionContext(user_id="alice", agent_identity="bot", session_id="r1"), app_id="app"
)


def library(**kwargs: object) -> Memory:
    return Memory(InMemoryMemoryStore(), scope=OPENED, store_name="m", **kwargs)  # type: ignore[arg-type]


def test_per_call_identity_resolves_as_open_does() -> None:
    mem = library()
    for user in ("bob", "bob ", "carol/*", "__default__"):
        expected = resolve_scope(
            SessionContext(user_id=user, agent_identity="bot", session_id="r1"), app_id="app"
        )
        assert mem.scope_for(user_id=user) == expected
    assert mem.scope_for() == OPENED
    assert mem.scope_for(agent_id="coder", run_id="r2") == Scope("app", "alice", "coder", "r2")


@pytest.mark.parametrize("blank", ["", "   ", 7])
def test_a_blank_per_call_id_is_refused_before_any_write(blank: object) -> None:
    mem = library()
    for field in ("user_id", "agent_id", "run_id"):
        with pytest.raises(InvalidInput) as info:
            mem.add(text="Goes nowhere", **{field: blank})  # type: ignore[arg-type]
        assert info.value.field == field
    assert mem.list(all_versions=True).items == ()
    assert mem.list(user_id="__default__").items == ()


def test_a_memory_whose_config_names_the_tenant_refuses_other_users() -> None:
    mem = library(tenant_pinned=True)
    with pytest.raises(InvalidInput) as info:
        mem.add(text="Would land in the pinned tenant", user_id="bob")
    assert info.value.field == "user_id"
    assert mem.list().items == ()


def test_the_opened_identity_stays_the_default() -> None:
    mem = library()
    [own] = mem.add(text="Alice owns this")
    [bobs] = mem.add(text="Bob owns this", user_id="bob")
    assert [m.id for m in mem.list().items] == [own]
    assert mem.get(own).scope == OPENED
    with pytest.raises(NotFound):
        mem.get(bobs)
    assert mem.get(bobs, user_id="bob").scope == Scope("app", "bob", "bot", "r1")


def test_search_min_similarity_and_filters() -> None:
    mem = library()
    mem.add(text="The user likes green tea", metadata={"topic": "drinks"}, user_id="bob")
    mem.add(text="The user likes tea parties", metadata={"topic": "events"}, user_id="bob")
    hits = mem.search("green tea", user_id="bob")
    assert len(hits) == 2
    [best] = mem.search("green tea", user_id="bob", filters={"topic": "drinks"})
    assert best.memory.text == "The user likes green tea"
    floor = (hits[0].score + hits[1].score) / 2
    assert hits[0].score > hits[1].score
    strong = mem.search("green tea", user_id="bob", min_similarity=floor)
    assert [h.memory.id for h in strong] == [hits[0].memory.id]
    with pytest.raises(InvalidInput):
        mem.search("green tea", min_similarity=1.5)


def _two_runs() -> tuple[InMemoryMemoryStore, Memory]:
    """A store with one memory said in the opened run and one in run ``r2``, and a Memory
    over it that reads the whole tenant."""
    store = InMemoryMemoryStore()
    wide = Memory(store, scope=OPENED, store_name="m")
    wide.add(text="Said in run one")
    wide.add(text="Said in run two", run_id="r2")
    return store, wide


def test_a_read_policy_alone_narrows_search_and_list() -> None:
    store, wide = _two_runs()
    narrow = Memory(store, scope=OPENED, store_name="m", policy=memcore.SessionRead())
    assert [m.text for m in narrow.list().items] == ["Said in run one"]
    assert [h.memory.text for h in narrow.search("said", run_id="r2")] == ["Said in run two"]
    assert len(wide.list().items) == 2
    with pytest.raises(InvalidInput):
        Memory(store, policy="session")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("policy", "kept"),
    [
        (memcore.SessionRead(), ["Another run's", "Another agent's", "Bob's"]),
        (memcore.AgentRead(), ["Another agent's", "Bob's"]),
        (memcore.TenantRead(), ["Bob's"]),
    ],
)
def test_delete_all_deletes_only_what_the_read_policy_lists(
    policy: memcore.ReadPolicy, kept: list[str]
) -> None:
    """A Memory opened on one run with ``SessionRead`` lists only that run: its
    ``delete_all()`` wiped the whole tenant, memories it could not see among them."""
    store = InMemoryMemoryStore()
    wide = Memory(store, scope=OPENED, store_name="m")
    for text, where in [
        ("This run's", {}),
        ("Another run's", {"run_id": "r2"}),
        ("Another agent's", {"agent_id": "coder"}),
        ("Bob's", {"user_id": "bob"}),
    ]:
        wide.add(text=text, **where)
    narrow = Memory(store, scope=OPENED, store_name="m", policy=policy)
    listed = len(narrow.list().items)
    assert narrow.delete_all() == listed
    left = [m.text for m in wide.list().items] + [m.text for m in wide.list(user_id="bob").items]
    assert sorted(left) == sorted(kept)


def test_delete_all_narrowed_by_a_call_stays_within_the_read_policy() -> None:
    store, wide = _two_runs()
    session = Memory(store, scope=OPENED, store_name="m", policy=memcore.SessionRead())
    assert session.delete_all(agent_id="bot") == 1  # the agent, as far as this run sees it
    assert [m.text for m in wide.list().items] == ["Said in run two"]
    agent = Memory(store, scope=OPENED, store_name="m", policy=memcore.AgentRead())
    assert agent.delete_all(agent_id="coder") == 0
    assert agent.delete_all(run_id="r2") == 1
    assert wide.list().items == ()


def test_the_policies_are_exported() -> None:
    for name in ("SessionRead", "AgentRead", "TenantRead", "ScopePolicy", "ReadPolicy"):
        assert name in memcore.__all__ and getattr(memcore, name)


def test_list_hides_superseded_memories_unless_asked() -> None:
    store = InMemoryMemoryStore()
    mem = Memory(store, scope=OPENED, store_name="m")
    [old] = mem.add(text="Lives in Lyon")
    [new] = mem.add(text="Lives in Porto")
    # A dream pass on the embedded store links the two so; the fake keeps whatever it is told.
    unit = store._stores["m"].units[old]
    unit.memory = attrs.evolve(unit.memory, extras={"superseded_by": new})
    assert [m.id for m in mem.list().items] == [new]
    assert [m.id for m in mem.list(all_versions=True).items] == [old, new]
    assert [m.id for m in mem.list(current_only=False).items] == [old, new]
    assert [m.id for m in mem.iter_all()] == [new]
    with pytest.raises(InvalidInput):
        mem.list(all_versions=True, current_only=True)


def test_closing_only_closes_a_store_the_memory_opened() -> None:
    store = InMemoryMemoryStore()
    Memory(store, store_name="m").close()
    assert not store.closed
    Memory(store, store_name="m", owns_store=True).close()
    assert store.closed


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_memory_that_owns_its_store_is_refused_in_a_forked_child() -> None:
    """What ``Memory.open`` opened (a SQLite connection, a pool of HTTP connections to the
    service) cannot be shared with a forked child: two processes on one socket read each
    other's answers. The child is told to open its own; its close leaves the store alone."""
    import os

    owned = InMemoryMemoryStore()
    mem = Memory(owned, scope=OPENED, store_name="m", owns_store=True)
    given = library()
    mem.add(text="Alice wrote this before the fork")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            given.add(text="A store passed in is the caller's to share")
            try:
                mem.search("Alice")
                code = 2
            except memcore.StoreClosed as exc:
                mem.close()
                told = "fork" in exc.message and "open" in exc.message
                code = 0 if told and not owned.closed else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [h.memory.text for h in mem.search("Alice")] == ["Alice wrote this before the fork"]


def test_async_memory_takes_the_per_call_identity() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        mem = AsyncMemory(library())
        [bobs] = await mem.add(text="Bob likes chess", user_id="bob")
        with pytest.raises(NotFound):
            await mem.history(bobs)
        history = [m.id for m in await mem.history(bobs, user_id="bob")]
        listed = [m.id for m in (await mem.list(user_id="bob")).items]
        return history, listed

    history, listed = asyncio.run(scenario())
    assert history == listed and len(listed) == 1
