"""The emulator's service rules, through the unmodified SDK: codes, scopes, limits, PATCH
semantics, readiness, tasks, audit and messages. Dreams are in the next file."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.emulator.ledger import Ledger
from memcore_tablestore.testing import refusal as refused
from memcore_tablestore.testing import sdk_for as client_for

STORE = "agent_memory"
S1 = {"appId": "app-001", "tenantId": "user-001", "agentId": "assistant", "runId": "session-001"}
S2 = {**S1, "runId": "session-002"}
OTHER_TENANT = {**S1, "tenantId": "user-002"}


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    with EmulatorServer(InMemoryMemoryStore()) as emulator:
        yield emulator


@pytest.fixture
def sdk(server: EmulatorServer) -> Any:
    client = client_for(server)
    client.create_memory_store({"memoryStoreName": STORE})
    return client


def add(sdk: Any, scope: dict[str, str], text: str, **extra: Any) -> str:
    """A sync text write; the id of the memory it made."""
    body = {"memoryStoreName": STORE, "scope": scope, "text": text, "sync": True, **extra}
    return str(sdk.add_memories(body)["memoryIds"][0])


# -- error codes ------------------------------------------------------------------------
def test_a_missing_store_or_memory_is_404_not_found(sdk: Any) -> None:
    assert refused(lambda: sdk.get_memory_store({"memoryStoreName": "nope"})) == (404, "NOT_FOUND")
    assert refused(
        lambda: sdk.search_memories({"memoryStoreName": "nope", "scope": S1, "query": "q"})
    ) == (404, "NOT_FOUND")
    body = {"memoryStoreName": STORE, "scope": S1, "memoryId": "0" * 32}
    assert refused(lambda: sdk.get_memory(body)) == (404, "NOT_FOUND")


def test_another_scopes_memory_is_reported_as_missing(sdk: Any) -> None:
    mid = add(sdk, S1, "a private fact")
    body = {"memoryStoreName": STORE, "scope": OTHER_TENANT, "memoryId": mid}
    status, code = refused(lambda: sdk.get_memory(body))
    assert (status, code) == (404, "NOT_FOUND")
    assert refused(lambda: sdk.delete_memory(body)) == (404, "NOT_FOUND")
    assert sdk.get_memory({**body, "scope": S1})["memory"]["text"] == "a private fact"


def test_injected_unavailability_is_the_documented_503(server: EmulatorServer, sdk: Any) -> None:
    server.set_faults(Faults(error_burst=1, error_status=503, error_code="SERVICE_UNAVAILABLE"))
    call = {"memoryStoreName": STORE, "scope": S1, "query": "q"}
    assert refused(lambda: sdk.search_memories(call)) == (503, "SERVICE_UNAVAILABLE")
    assert sdk.search_memories(call)["results"] == []


def test_a_duplicate_store_is_a_final_409(sdk: Any) -> None:
    status, code = refused(lambda: sdk.create_memory_store({"memoryStoreName": STORE}))
    assert (status, code) == (409, "OTSObjectAlreadyExist")


# -- scope rules ------------------------------------------------------------------------
def test_omitted_write_levels_are_default(sdk: Any) -> None:
    add(sdk, {"appId": "app-001"}, "only the app is known")
    listed = sdk.list_memory_store_scopes({"memoryStoreName": STORE, "scope": {"appId": "*"}})
    assert listed["scopes"] == [
        {
            "appId": "app-001",
            "tenantId": "__default__",
            "agentId": "__default__",
            "runId": "__default__",
        }
    ]


def test_search_omitted_levels_are_default_and_star_is_explicit(sdk: Any) -> None:
    add(sdk, S1, "the user drinks green tea")
    base = {"memoryStoreName": STORE, "query": "green tea"}
    tenant_only = {**base, "scope": {"appId": "app-001", "tenantId": "user-001"}}
    assert sdk.search_memories(tenant_only)["results"] == []
    everything = {**base, "scope": {"appId": "app-001", "tenantId": "user-001", "agentId": "*"}}
    hits = sdk.search_memories(everything)["results"]
    assert [h["unit"]["text"] for h in hits] == ["the user drinks green tea"]
    assert sdk.search_memories(everything)["scope"]["runId"] == "*"


def test_context_scope_ranks_its_session_and_must_lie_inside_scope(sdk: Any) -> None:
    add(sdk, S1, "deploys happen on friday")
    add(sdk, S2, "deploys happen on monday friday")
    pattern = {"appId": "app-001", "tenantId": "user-001", "agentId": "*"}
    base = {"memoryStoreName": STORE, "scope": pattern, "query": "deploys friday"}
    plain = sdk.search_memories(base)["results"]
    assert "rankingScore" not in plain[0]
    ranked = sdk.search_memories({**base, "contextScope": S2})["results"]
    assert ranked[0]["unit"]["scope"] == S2
    assert ranked[0]["rankingSignals"]["sameSession"] is True
    assert [r["rankingScore"] for r in ranked] == sorted(
        (r["rankingScore"] for r in ranked), reverse=True
    )
    outside = {**base, "contextScope": OTHER_TENANT}
    assert refused(lambda: sdk.search_memories(outside)) == (400, "INVALID_PARAMETER")


def test_search_filters_by_metadata_equality_and_min_similarity(sdk: Any) -> None:
    add(sdk, S1, "coffee every morning", metadata={"topic": "food"})
    add(sdk, S1, "coffee with colleagues", metadata={"topic": "work"})
    base = {"memoryStoreName": STORE, "scope": {**S1}, "query": "coffee"}
    hits = sdk.search_memories({**base, "metadata": {"topic": "work"}})["results"]
    assert [h["unit"]["text"] for h in hits] == ["coffee with colleagues"]
    half = {**base, "query": "coffee tonight"}  # half the query's words match: score 0.5
    assert len(sdk.search_memories({**half, "minSimilarity": 0.5})["results"]) == 2
    assert sdk.search_memories({**half, "minSimilarity": 0.6})["results"] == []
    assert refused(lambda: sdk.search_memories({**base, "minSimilarity": -0.1}))[0] == 400
    assert sdk.search_memories({**base, "topK": 0})["results"] == []


def test_list_tasks_scope_is_a_value_not_a_filter(sdk: Any) -> None:
    add(sdk, S1, "something")
    body = {"memoryStoreName": STORE, "scope": {}}
    assert sdk.list_memory_tasks(body)["tasks"] == []
    assert sdk.list_memory_tasks(body)["scope"]["appId"] == "__default__"
    everything = {"memoryStoreName": STORE, "scope": {"appId": "*"}}
    assert len(sdk.list_memory_tasks(everything)["tasks"]) == 1


# -- limits -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "api,body",
    [
        ("search_memories", {"scope": S1, "query": "q", "topK": 51}),
        ("search_memories", {"scope": S1, "query": "q" * 8193}),
        ("add_memories", {"scope": S1, "text": "x" * 32_001}),
        ("add_memories", {"scope": S1, "messages": [{"role": "user", "content": "x"}] * 21}),
        ("add_memories", {"scope": S1, "text": "x", "metadata": {f"k{i}": "v" for i in range(17)}}),
        ("add_memories", {"scope": S1, "text": "x", "metadata": {"k": 1}}),
        ("add_memories", {"scope": S1}),
        (
            "add_memories",
            {"scope": S1, "text": "x", "messages": [{"role": "user", "content": "x"}]},
        ),
        (
            "add_memories",
            {"scope": S1, "messages": [{"role": "user", "content": "x", "messageId": "m" * 257}]},
        ),
        ("list_memories", {"scope": S1, "limit": 101}),
        ("list_memory_store_messages", {"scope": S1, "limit": 501}),
        ("list_memory_store_requests", {"limit": 101}),
        ("list_memory_tasks", {"scope": S1, "limit": 101}),
        ("update_memory_store", {"description": "é" * 513}),
        ("update_memory_store", {"extractInstructions": "x" * 4097}),
    ],
)
def test_limits_are_400_invalid_parameter(sdk: Any, api: str, body: dict[str, Any]) -> None:
    call = getattr(sdk, api)
    assert refused(lambda: call({"memoryStoreName": STORE, **body})) == (400, "INVALID_PARAMETER")


def test_instruction_limit_counts_code_points_and_description_bytes(sdk: Any) -> None:
    wide = "记" * 4096  # 4096 code points, 12288 bytes: within the rune limit
    answer = sdk.update_memory_store({"memoryStoreName": STORE, "extractInstructions": wide})
    assert answer["extractInstructions"] == wide
    body = {"memoryStoreName": STORE, "description": "é" * 512}  # 1024 bytes exactly
    assert sdk.update_memory_store(body)["description"] == "é" * 512


# -- stores ---------------------------------------------------------------------------
def test_store_settings_are_a_strict_patch(sdk: Any) -> None:
    created = sdk.create_memory_store(
        {"memoryStoreName": "second", "description": "d", "extractInstructions": "keep facts"}
    )
    assert created["storageMode"] == "ots" and created["extractInstructions"] == "keep facts"
    assert created["lastSeenAt"] == "0001-01-01T00:00:00Z"
    unchanged = sdk.update_memory_store({"memoryStoreName": "second"})
    assert (unchanged["description"], unchanged["extractInstructions"]) == ("d", "keep facts")
    cleared = sdk.update_memory_store({"memoryStoreName": "second", "extractInstructions": ""})
    assert "extractInstructions" not in cleared and cleared["description"] == "d"
    kept = sdk.update_memory_store({"memoryStoreName": "second", "description": None})
    assert kept["description"] == "d"
    immutable = {"memoryStoreName": "second", "storageMode": "filemem"}
    assert refused(lambda: sdk.update_memory_store(immutable)) == (400, "INVALID_PARAMETER")
    listed = sdk.list_memory_stores({})
    assert listed["stores"] == [{"memoryStoreName": STORE}, {"memoryStoreName": "second"}]


def test_store_listing_pages_every_store_once(sdk: Any) -> None:
    for i in range(4):
        sdk.create_memory_store({"memoryStoreName": f"s{i}"})
    seen: list[str] = []
    body: dict[str, Any] = {"limit": 2}
    while True:
        page = sdk.list_memory_stores(body)
        seen += [s["memoryStoreName"] for s in page["stores"]]
        if "nextToken" not in page:
            break
        body = {"limit": 2, "nextToken": page["nextToken"]}
    assert sorted(seen) == sorted([STORE, "s0", "s1", "s2", "s3"])


def test_deleting_a_store_forgets_its_records(sdk: Any) -> None:
    add(sdk, S1, "x")
    assert sdk.delete_memory_store({"memoryStoreName": STORE})["deleted"] is True
    sdk.create_memory_store({"memoryStoreName": STORE})
    assert sdk.list_memory_tasks({"memoryStoreName": STORE, "scope": {"appId": "*"}})["tasks"] == []


# -- UpdateMemory ---------------------------------------------------------------------
def test_update_memory_merges_metadata(sdk: Any) -> None:
    mid = add(sdk, S1, "likes jazz", metadata={"a": "1", "b": "2"})
    base = {"memoryStoreName": STORE, "scope": S1, "memoryId": mid}
    merged = sdk.update_memory({**base, "metadata": {"b": "3", "c": "4"}})
    assert merged["updated"] is True
    assert merged["memory"]["metadata"] == {"a": "1", "b": "3", "c": "4"}
    text_only = sdk.update_memory({**base, "text": "likes free jazz"})
    assert text_only["memory"]["metadata"] == {"a": "1", "b": "3", "c": "4"}
    assert text_only["memory"]["text"] == "likes free jazz"
    assert sdk.update_memory({**base, "metadata": {}})["memory"]["metadata"] == {}
    same = sdk.update_memory({**base, "text": "likes free jazz"})
    assert same["updated"] is False
    assert refused(lambda: sdk.update_memory(base)) == (400, "INVALID_PARAMETER")


def test_update_memory_merge_respects_the_key_limit(sdk: Any) -> None:
    mid = add(sdk, S1, "many keys", metadata={f"k{i}": "v" for i in range(10)})
    body = {
        "memoryStoreName": STORE,
        "scope": S1,
        "memoryId": mid,
        "metadata": {f"n{i}": "v" for i in range(10)},
    }
    assert refused(lambda: sdk.update_memory(body)) == (400, "INVALID_PARAMETER")


# -- readiness ------------------------------------------------------------------------
def test_readiness_window_is_configurable_and_ends(server: EmulatorServer) -> None:
    sdk = client_for(server)
    server.set_faults(Faults(init_seconds=0.3))
    sdk.create_memory_store({"memoryStoreName": "fresh"})
    write = {"memoryStoreName": "fresh", "scope": S1, "text": "x"}
    assert refused(lambda: sdk.add_memories(write)) == (409, "CONFLICT")
    assert refused(lambda: sdk.list_memory_tasks({"memoryStoreName": "fresh", "scope": S1})) == (
        409,
        "CONFLICT",
    )
    assert sdk.get_memory_store({"memoryStoreName": "fresh"})["memoryStoreName"] == "fresh"
    time.sleep(0.35)
    assert sdk.add_memories(write)["status"] == "queued"


def test_by_default_a_new_store_is_ready_at_once(server: EmulatorServer) -> None:
    sdk = client_for(server)
    sdk.create_memory_store({"memoryStoreName": "fresh"})
    assert sdk.add_memories({"memoryStoreName": "fresh", "scope": S1, "text": "x"})["status"]


# -- tasks ----------------------------------------------------------------------------
def test_tasks_are_keyed_by_the_add_request_id(sdk: Any) -> None:
    written = sdk.add_memories({"memoryStoreName": STORE, "scope": S1, "text": "async fact"})
    assert written["status"] == "queued" and "memoryIds" not in written
    task = sdk.get_memory_task({"memoryStoreName": STORE, "requestId": written["requestId"]})
    assert task["task"]["requestId"] == written["requestId"]
    assert task["task"]["status"] == "completed" and len(task["task"]["derivedUnitIds"]) == 1
    assert task["task"]["acceptedMessages"] == 1
    owned = {"memoryStoreName": STORE, "requestId": written["requestId"]}
    assert sdk.get_memory_task({**owned, "scope": {"appId": "app-001", "tenantId": "*"}})
    wrong = {**owned, "scope": {"appId": "app-001", "tenantId": "user-002", "agentId": "*"}}
    assert refused(lambda: sdk.get_memory_task(wrong)) == (400, "INVALID_PARAMETER")


def test_task_listing_filters_by_status_and_unix_ms_only(sdk: Any) -> None:
    before = int(time.time() * 1000) - 1
    add(sdk, S1, "one")
    add(sdk, S1, "two")
    body = {"memoryStoreName": STORE, "scope": {"appId": "app-001", "tenantId": "*"}}
    assert len(sdk.list_memory_tasks({**body, "status": "completed"})["tasks"]) == 2
    assert sdk.list_memory_tasks({**body, "status": "failed"})["tasks"] == []
    assert len(sdk.list_memory_tasks({**body, "minTimestamp": str(before)})["tasks"]) == 2
    assert sdk.list_memory_tasks({**body, "maxTimestamp": before})["tasks"] == []
    rfc = {**body, "minTimestamp": "2026-01-01T00:00:00Z"}
    assert refused(lambda: sdk.list_memory_tasks(rfc)) == (400, "INVALID_PARAMETER")
    assert refused(lambda: sdk.list_memory_tasks({**body, "status": "pending"}))[0] == 400


def test_tasks_survive_a_restart_with_the_same_ledger() -> None:
    backing, ledger = InMemoryMemoryStore(), Ledger()
    with EmulatorServer(backing, ledger=ledger) as first:
        sdk = client_for(first)
        sdk.create_memory_store({"memoryStoreName": STORE})
        rid = sdk.add_memories({"memoryStoreName": STORE, "scope": S1, "text": "x"})["requestId"]
    with EmulatorServer(backing, ledger=ledger) as second:
        task = client_for(second).get_memory_task({"memoryStoreName": STORE, "requestId": rid})
        assert task["task"]["requestId"] == rid


# -- audit and messages ---------------------------------------------------------------
def test_the_audit_records_each_call_with_its_response_status(sdk: Any) -> None:
    mid = add(sdk, S1, "audited")
    bad = {"memoryStoreName": STORE, "scope": S1, "query": "q", "topK": 99}
    refused(lambda: sdk.search_memories(bad))
    records = sdk.list_memory_store_requests({"memoryStoreName": STORE})["requests"]
    assert [(r["operation"], r["responseStatus"]) for r in records] == [
        ("SearchMemories", 400),
        ("AddMemories", 200),
    ]
    assert records[1]["targetId"] == mid and records[1]["scope"] == S1
    assert records[0]["lastError"]
    adds = sdk.list_memory_store_requests({"memoryStoreName": STORE, "operation": "AddMemories"})
    assert [r["operation"] for r in adds["requests"]] == ["AddMemories"]
    other = {"memoryStoreName": STORE, "scope": {"appId": "app-001", "tenantId": "user-002"}}
    assert sdk.list_memory_store_requests(other)["requests"] == []
    future = {"memoryStoreName": STORE, "minTimestamp": "2100-01-01T00:00:00Z"}
    assert sdk.list_memory_store_requests(future)["requests"] == []


def test_messages_keep_their_id_and_rfc3339_time(sdk: Any) -> None:
    messages = [
        {
            "role": "user",
            "content": f"turn {i}",
            "messageId": f"m{i}",
            "timestamp": f"2026-08-25T05:52:1{i}Z",
        }
        for i in range(5)
    ]
    sdk.add_memories({"memoryStoreName": STORE, "scope": S1, "messages": messages})
    seen: list[dict[str, Any]] = []
    body: dict[str, Any] = {"memoryStoreName": STORE, "scope": S1, "limit": 2}
    while True:
        page = sdk.list_memory_store_messages(body)
        assert page["session"]["scope"] == S1
        seen += page["session"]["messages"]
        if "nextToken" not in page:
            break
        assert page["session"]["nextToken"] == page["nextToken"]
        body = {**body, "nextToken": page["nextToken"]}
    assert [m["messageId"] for m in seen] == [f"m{i}" for i in range(5)]
    assert seen[3]["timestamp"] == "2026-08-25T05:52:13Z"
    window = {
        "memoryStoreName": STORE,
        "scope": S1,
        "minTimestamp": "2026-08-25T05:52:11Z",
        "maxTimestamp": "1787637133000",
    }
    found = sdk.list_memory_store_messages(window)["session"]["messages"]
    assert [m["messageId"] for m in found] == ["m1", "m2", "m3"]
    bad = [{"role": "user", "content": "x", "timestamp": 1756101130}]
    write = {"memoryStoreName": STORE, "scope": S1, "messages": bad}
    assert refused(lambda: sdk.add_memories(write)) == (400, "INVALID_PARAMETER")


def test_evidence_comes_only_when_asked(sdk: Any) -> None:
    messages = [{"role": "user", "content": "I debug with pdb.", "messageId": "m-7"}]
    sdk.add_memories({"memoryStoreName": STORE, "scope": S1, "messages": messages, "sync": True})
    base = {"memoryStoreName": STORE, "scope": S1, "query": "debug pdb"}
    (plain,) = sdk.search_memories(base)["results"]
    assert "evidence" not in plain
    (hit,) = sdk.search_memories({**base, "includeEvidence": True})["results"]
    assert [e["messageId"] for e in hit["evidence"]] == ["m-7"]
