"""The emulator's dream tasks through the unmodified SDK: planning, listing, applying,
cancelling, idempotency and the two action-listing modes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.testing import refusal as refused
from memcore_tablestore.testing import sdk_for

STORE = "agent_memory"
S1 = {"appId": "app-001", "tenantId": "user-001", "agentId": "assistant", "runId": "session-001"}
S2 = {**S1, "runId": "session-002"}
TENANT = {"appId": "app-001", "tenantId": "user-001", "agentId": "*"}


@pytest.fixture
def sdk() -> Iterator[Any]:
    with EmulatorServer(InMemoryMemoryStore()) as server:
        client = sdk_for(server)
        client.create_memory_store({"memoryStoreName": STORE})
        yield client


def add(sdk: Any, scope: dict[str, str], text: str, **metadata: str) -> str:
    """A sync text write with ``metadata``; the id of the memory it made."""
    body = {"memoryStoreName": STORE, "scope": scope, "text": text, "sync": True}
    if metadata:
        body["metadata"] = metadata
    return str(sdk.add_memories(body)["memoryIds"][0])


def dream(sdk: Any, **options: Any) -> str:
    body = {"memoryStoreName": STORE, "scopes": [TENANT], **options}
    created = sdk.create_memory_dream_task(body)
    assert created["status"] == "queued"
    return str(created["dreamId"])


def actions(sdk: Any, dream_id: str, **filters: Any) -> list[dict[str, Any]]:
    body = {"memoryStoreName": STORE, "dreamId": dream_id, **filters}
    return list(sdk.list_memory_dream_actions(body)["actions"])


def texts(sdk: Any, scope: dict[str, str]) -> list[str]:
    listed = sdk.list_memories({"memoryStoreName": STORE, "scope": scope})["memories"]
    return sorted(m["text"] for m in listed)


def test_a_dream_proposes_merging_duplicates_per_scope(sdk: Any) -> None:
    keep = add(sdk, S1, "The user prefers dark mode.", a="1")
    dup = add(sdk, S1, "the user PREFERS dark mode", b="2")
    add(sdk, S2, "the user prefers dark mode")  # another session: not merged across scopes
    add(sdk, S1, "The user lives in Hangzhou.")
    dream_id = dream(sdk)
    task = sdk.get_memory_dream_task({"memoryStoreName": STORE, "dreamId": dream_id})
    assert task["status"] == "completed" and task["actions"]["proposed"] == 1
    assert task["input"]["memoryCount"] == 4
    (merge,) = actions(sdk, dream_id)
    assert merge["action"] == "MERGE" and merge["status"] == "proposed"
    assert merge["targetMemoryId"] == keep and merge["sourceMemoryIds"] == [keep, dup]
    assert merge["newMemory"]["metadata"] == {"a": "1", "b": "2"}
    assert merge["confidence"] == pytest.approx(0.95)


def test_applying_merges_and_reapplying_answers_applied_again(sdk: Any) -> None:
    keep = add(sdk, S1, "The user prefers dark mode.")
    add(sdk, S1, "the user prefers dark mode")
    dream_id = dream(sdk)
    (merge,) = actions(sdk, dream_id)
    body = {
        "memoryStoreName": STORE,
        "dreamId": dream_id,
        "actionIds": [merge["actionId"], "no-such-action"],
        "applier": "tests",
    }
    applied = sdk.apply_memory_dream_actions(body)
    assert (applied["applied"], applied["failed"], applied["notFound"]) == (1, 0, 1)
    assert applied["results"][0] == {
        "actionId": merge["actionId"],
        "status": "applied",
        "memoryId": keep,
    }
    assert texts(sdk, S1) == ["The user prefers dark mode."]
    again = sdk.apply_memory_dream_actions({**body, "actionIds": [merge["actionId"]]})
    assert again["results"][0]["status"] == "applied" and again["applied"] == 1
    (after,) = actions(sdk, dream_id)
    assert after["applier"] == "tests" and after["attemptCount"] == 1
    task = sdk.get_memory_dream_task({"memoryStoreName": STORE, "dreamId": dream_id})
    assert task["actions"]["applied"] == 1 and task["actions"]["proposed"] == 0


def test_a_changed_target_makes_the_action_stale(sdk: Any) -> None:
    keep = add(sdk, S1, "The user prefers dark mode.")
    add(sdk, S1, "the user prefers dark mode")
    dream_id = dream(sdk)
    (merge,) = actions(sdk, dream_id)
    sdk.update_memory(
        {
            "memoryStoreName": STORE,
            "scope": S1,
            "memoryId": keep,
            "text": "The user prefers light mode.",
        }
    )
    body = {"memoryStoreName": STORE, "dreamId": dream_id, "actionIds": [merge["actionId"]]}
    result = sdk.apply_memory_dream_actions(body)["results"][0]
    assert result["status"] == "skipped"
    (after,) = actions(sdk, dream_id)
    assert after["skippedReason"] == "stale_target_memory"
    task = sdk.get_memory_dream_task({"memoryStoreName": STORE, "dreamId": dream_id})
    assert task["actions"]["skippedByReason"] == {"stale_target_memory": 1}


def test_safe_auto_applies_above_the_threshold_only(sdk: Any) -> None:
    add(sdk, S1, "The user prefers dark mode.")
    add(sdk, S1, "the user prefers dark mode")
    add(sdk, S2, "standup is at nine every weekday morning sharp")
    add(sdk, S2, "standup is at nine every weekday morning")  # near: confidence 0.75
    dream_id = dream(sdk, applyMode="safe_auto", confidenceThresholds={"MERGE": 0.9})
    by_scope = {a["targetScope"]["runId"]: a for a in actions(sdk, dream_id)}
    assert by_scope["session-001"]["status"] == "applied"
    assert by_scope["session-002"]["status"] == "skipped"
    assert by_scope["session-002"]["skippedReason"] == "confidence_below_threshold"
    assert texts(sdk, S1) == ["The user prefers dark mode."]
    assert len(texts(sdk, S2)) == 2


def test_dream_request_rules(sdk: Any) -> None:
    base = {"memoryStoreName": STORE, "scopes": [TENANT]}
    for bad in (
        {"scopes": []},
        {"scopes": [TENANT] * 21},
        {"scopes": [{"appId": "*", "tenantId": "user-001"}]},
        {"minTimestamp": "2026-01-01T00:00:00Z"},
        {"minTimestamp": -1},
        {"minTimestamp": 5, "maxTimestamp": 4},
        {"taskType": "profile", "applyMode": "safe_auto"},
        {"applyMode": "plan"},
        {"confidenceThresholds": {"delete": 0.5}},
        {"confidenceThresholds": {"add": 1.5}},
        {"maxMessages": 20_001},
        {"expandedScopeLimit": 1001},
        {"instructions": "é" * 2001},
    ):
        call = {**base, **bad}
        assert refused(lambda c=call: sdk.create_memory_dream_task(c)) == (400, "INVALID_PARAMETER")


def test_a_client_token_resolves_to_the_same_dream(sdk: Any) -> None:
    first = dream(sdk, clientToken="nightly-1")
    again = sdk.create_memory_dream_task(
        {"memoryStoreName": STORE, "scopes": [TENANT], "clientToken": "nightly-1"}
    )
    assert again["dreamId"] == first
    assert dream(sdk, clientToken="nightly-2") != first


def test_an_incremental_dream_resumes_after_the_watermark(sdk: Any) -> None:
    add(sdk, S1, "The user prefers dark mode.")
    add(sdk, S1, "the user prefers dark mode")
    first = dream(sdk)
    add(sdk, S1, "The user lives in Hangzhou.")
    second = dream(sdk, incremental=True)
    got = sdk.get_memory_dream_task({"memoryStoreName": STORE, "dreamId": second})
    assert got["input"]["incremental"] is True and got["input"]["memoryCount"] == 1
    earlier = sdk.get_memory_dream_task({"memoryStoreName": STORE, "dreamId": first})
    assert got["input"]["minTimestamp"] == earlier["processedThroughMs"] + 1


def test_listing_dreams_by_scope_status_and_time(sdk: Any) -> None:
    first = dream(sdk)
    other = sdk.create_memory_dream_task(
        {"memoryStoreName": STORE, "scopes": [{"appId": "app-002", "tenantId": "*"}]}
    )["dreamId"]
    body = {"memoryStoreName": STORE, "scope": {"appId": "app-001", "tenantId": "user-001"}}
    listed = sdk.list_memory_dream_tasks(body)
    assert [t["dreamId"] for t in listed["tasks"]] == []  # omitted levels are __default__
    body["scope"] = {"appId": "*"}
    assert [t["dreamId"] for t in sdk.list_memory_dream_tasks(body)["tasks"]] == [other, first]
    body["scope"] = {"appId": "app-001", "tenantId": "*"}
    assert [t["dreamId"] for t in sdk.list_memory_dream_tasks(body)["tasks"]] == [first]
    assert sdk.list_memory_dream_tasks({**body, "status": "cancelled"})["tasks"] == []
    late = {**body, "minTimestamp": 4102444800000}
    assert sdk.list_memory_dream_tasks(late)["tasks"] == []
    rfc = {**body, "minTimestamp": "2026-01-01T00:00:00Z"}
    assert refused(lambda: sdk.list_memory_dream_tasks(rfc)) == (400, "INVALID_PARAMETER")
    assert refused(lambda: sdk.list_memory_dream_tasks({"memoryStoreName": STORE}))[0] == 400


def test_extracts_are_listed_by_scope_and_cannot_be_applied(sdk: Any) -> None:
    add(sdk, S1, "The user deploys with Helm.")
    skill = dream(sdk, taskType="skill")
    (emit,) = actions(sdk, skill)
    assert emit["action"] == "EMIT_SKILL" and set(emit["newExtract"]) == {
        "kind",
        "name",
        "description",
        "instructions",
    }
    body = {"memoryStoreName": STORE, "scope": TENANT, "actionType": "EMIT_SKILL"}
    listed = sdk.list_memory_dream_actions(body)
    assert "dreamId" not in listed and [a["actionId"] for a in listed["actions"]] == [
        emit["actionId"]
    ]
    profiles = sdk.list_memory_dream_actions({**body, "actionType": "EMIT_PROFILE"})
    assert profiles["actions"] == []
    apply = {"memoryStoreName": STORE, "dreamId": skill, "actionIds": [emit["actionId"]]}
    assert refused(lambda: sdk.apply_memory_dream_actions(apply)) == (400, "INVALID_PARAMETER")


def test_action_listing_modes_and_filters(sdk: Any) -> None:
    add(sdk, S1, "The user prefers dark mode.")
    add(sdk, S1, "the user prefers dark mode")
    add(sdk, S2, "standup is at nine every weekday morning sharp")
    add(sdk, S2, "standup is at nine every weekday morning")
    dream_id = dream(sdk)
    assert [a["confidence"] for a in actions(sdk, dream_id, orderBy="confidence_desc")] == [
        0.95,
        0.75,
    ]
    assert len(actions(sdk, dream_id, minConfidence=0.9)) == 1
    assert len(actions(sdk, dream_id, targetScope=S2)) == 1
    assert actions(sdk, dream_id, action="DELETE") == []
    assert len(actions(sdk, dream_id, limit=1)) == 1
    both = {"memoryStoreName": STORE, "dreamId": dream_id, "scope": TENANT}
    assert refused(lambda: sdk.list_memory_dream_actions(both)) == (400, "INVALID_PARAMETER")
    extract_in_dream_mode = {
        "memoryStoreName": STORE,
        "dreamId": dream_id,
        "actionType": "EMIT_SKILL",
    }
    assert refused(lambda: sdk.list_memory_dream_actions(extract_in_dream_mode))[0] == 400


def test_cancelling_a_finished_dream_leaves_it(sdk: Any) -> None:
    dream_id = dream(sdk)
    answer = sdk.cancel_memory_dream_task({"memoryStoreName": STORE, "dreamId": dream_id})
    assert (answer["status"], answer["taskType"]) == ("completed", "memory")
    missing = {"memoryStoreName": STORE, "dreamId": "no-such-dream"}
    assert refused(lambda: sdk.cancel_memory_dream_task(missing)) == (404, "NOT_FOUND")
