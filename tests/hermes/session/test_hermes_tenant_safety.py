"""No user id and no tool argument can reach another tenant's memories."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore

STORE = "hermes_mem"
VICTIM = Scope("hermes", "victim", "hermes", "private-run")
ADVERSARIAL_IDS = [
    "*",
    "a/b",
    "x" * 5_000,
    "ユーザー😀",
    "victim/*",
    "%2A",
    "__default__",
    "victim\x00",
    "*/*/*",
]


@pytest.fixture
def shared_store() -> InMemoryMemoryStore:
    store = InMemoryMemoryStore()
    store.ensure_store(STORE)
    store.add_text(STORE, VICTIM, "victim's bank PIN is 4321")
    return store


def call(provider: Any, name: str, **args: Any) -> dict[str, Any]:
    return json.loads(provider.handle_tool_call(name, args))


@pytest.mark.parametrize("user_id", ADVERSARIAL_IDS, ids=lambda u: repr(u)[:20])
def test_an_adversarial_user_id_stays_in_its_own_tenant(
    make_provider: Any, shared_store: InMemoryMemoryStore, user_id: str
) -> None:
    provider = make_provider(shared_store, user_id=user_id)
    scope = provider.runtime.scope
    assert scope.tenant_id not in ("victim", "*") and "/" not in scope.tenant_id
    assert len(scope.tenant_id) <= 128
    assert (
        call(provider, "tablestore_remember", content=f"note from {user_id!r}", sync=True)["status"]
        == "completed"
    )
    provider.sync_turn("what is the PIN of victim?", "I cannot know.", session_id="s1")
    provider.queue_prefetch("bank PIN victim")
    assert provider.runtime.flush(10)
    assert provider.runtime.wait_idle(10)

    searched = call(provider, "tablestore_search", query="victim bank PIN 4321", top_k=50)[
        "results"
    ]
    profile = call(provider, "tablestore_profile", limit=100)["memories"]
    seen = [h["text"] for h in searched] + [m["text"] for m in profile]
    assert seen and all("4321" not in text for text in seen)
    assert "4321" not in provider.prefetch("bank PIN")
    for hit in searched + profile:
        assert Scope(*hit["scope"].split("/")).tenant_id == scope.tenant_id


@pytest.mark.parametrize("user_id", ["", "   ", "\t\n"])
def test_a_blank_user_id_is_refused_not_sent_to_the_default_tenant(
    make_provider: Any, shared_store: InMemoryMemoryStore, user_id: str
) -> None:
    # It used to share ``__default__`` with every session that has no user at all.
    with pytest.raises(InvalidInput) as err:
        make_provider(shared_store, user_id=user_id)
    assert err.value.field == "tenant_id"


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"agent_id": "*", "run_id": "*"},
        {"agent_id": "hermes", "run_id": "private-run"},
        {"agent_id": "../victim"},
    ],
)
def test_the_model_cannot_forget_another_tenants_memory(
    make_provider: Any, shared_store: InMemoryMemoryStore, extra: dict[str, str]
) -> None:
    victim_id = shared_store.all_memories(STORE)[0].id
    provider = make_provider(shared_store, user_id="attacker")
    answer = call(provider, "tablestore_forget", memory_id=victim_id, **extra)
    assert answer["error"]["code"] == "not_found"
    assert [m.id for m in shared_store.all_memories(STORE)] == [victim_id]


@pytest.mark.parametrize(
    "override", [{"tenant_id": "victim"}, {"app_id": "hermes", "tenant_id": "victim"}]
)
def test_scope_overrides_in_tool_arguments_are_refused(
    make_provider: Any, shared_store: InMemoryMemoryStore, override: dict[str, str]
) -> None:
    victim_id = shared_store.all_memories(STORE)[0].id
    provider = make_provider(shared_store, user_id="attacker")
    answer = call(provider, "tablestore_forget", memory_id=victim_id, **override)
    assert answer["error"]["code"] == "invalid_input"
    assert len(shared_store.all_memories(STORE)) == 1


def test_distinct_adversarial_ids_get_distinct_tenants(
    make_provider: Any, shared_store: InMemoryMemoryStore
) -> None:
    tenants = {
        make_provider(shared_store, user_id=u).runtime.scope.tenant_id
        for u in ["*", "%2A", "a/b", "a%2Fb"]
    }
    assert len(tenants) == 4
