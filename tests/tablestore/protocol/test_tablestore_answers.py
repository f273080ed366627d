"""The per-API decoders against the hand-written golden answers and hand-written edge cases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import ProtocolError
from memcore.scope import Scope, ScopePattern
from memcore_tablestore.protocol import answers

GOLDEN = Path(__file__).parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*.json"))


def _golden(api: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"{api}.json").read_text(encoding="utf-8"))


def _drop(data: Any, path: list[str]) -> None:
    """Remove one dotted ``optional`` path (``[]`` = every item of a list)."""
    head, rest = path[0], path[1:]
    items = head.endswith("[]")
    key = head[:-2] if items else head
    if key not in data:
        return
    if not rest:
        del data[key]
        return
    targets = data[key] if items else [data[key]]
    for target in targets:
        if isinstance(target, dict):
            _drop(target, rest)


def test_one_golden_file_per_api() -> None:
    assert {p.stem for p in FILES} == set(answers.DECODERS)
    assert len(FILES) == 22


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_golden_answer_decodes(path: Path) -> None:
    golden = json.loads(path.read_text(encoding="utf-8"))
    assert answers.DECODERS[golden["api"]](golden["response"]) is not None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_golden_answer_without_optional_fields_decodes(path: Path) -> None:
    golden = json.loads(path.read_text(encoding="utf-8"))
    body = copy.deepcopy(golden["response"])
    for optional in golden.get("optional", []):
        _drop(body, optional.split("."))
    assert answers.DECODERS[golden["api"]](body) is not None


def test_search_hit_reads_unit_score_similarity_and_source() -> None:
    body = _golden("SearchMemories")["response"]
    (hit,) = answers.search(body)
    assert hit.memory.id == "1b88d0d65a5b6c0d9142e9b7c7347048"
    assert hit.memory.scope == Scope("app-001", "user-001", "assistant", "session-001")
    assert (hit.score, hit.similarity, hit.ranking_score, hit.source) == (
        0.91,
        0.88,
        0.93,
        "memory",
    )
    assert hit.extras["rankingSignals"] == {"sameSession": True, "sessionAffinityWeight": 0.1}
    assert hit.memory.extras["entities"] == ["user", "Python"]
    assert hit.memory.created_at is not None


def test_unknown_fields_are_kept_never_fatal() -> None:
    body = copy.deepcopy(_golden("SearchMemories")["response"])
    body["fileResults"] = [{"path": "/x"}]
    body["results"][0]["brandNew"] = {"a": 1}
    body["results"][0]["unit"]["title"] = "Scripting language"
    body["results"][0]["evidence"] = [{"messageId": "m1", "content": "I use Python"}]
    (hit,) = answers.search(body)
    assert hit.extras["brandNew"] == {"a": 1}
    assert hit.memory.extras["title"] == "Scripting language"
    assert hit.evidence == ({"messageId": "m1", "content": "I use Python"},)


def test_evidence_of_an_unknown_shape_is_kept_in_extras() -> None:
    body = copy.deepcopy(_golden("SearchMemories")["response"])
    body["results"][0]["evidence"] = "free text"
    (hit,) = answers.search(body)
    assert hit.evidence == ()
    assert hit.extras["evidence"] == "free text"


@pytest.mark.parametrize(
    ("api", "mutate", "named"),
    [
        ("SearchMemories", lambda b: b.pop("results"), "results"),
        ("SearchMemories", lambda b: b["results"][0].pop("unit"), "results[0].unit"),
        ("SearchMemories", lambda b: b["results"][0].pop("score"), "results[0].score"),
        ("SearchMemories", lambda b: b["results"][0]["unit"].pop("id"), "results[0].unit.id"),
        ("ListMemoryStores", lambda b: b.pop("stores"), "stores"),
        ("ListMemoryStores", lambda b: b["stores"][0].pop("memoryStoreName"), "memoryStoreName"),
        ("GetMemoryStore", lambda b: b.pop("memoryStoreName"), "memoryStoreName"),
        ("AddMemories", lambda b: b.pop("status"), "status"),
        ("ListMemoryStoreMessages", lambda b: b.pop("session"), "session"),
        ("ListMemoryStoreMessages", lambda b: b["session"].pop("messages"), "session.messages"),
        ("ListMemoryStoreRequests", lambda b: b["requests"][0].pop("requestId"), "requestId"),
        ("GetMemoryTask", lambda b: b["task"].pop("requestId"), "task.requestId"),
        ("ListMemoryTasks", lambda b: b["tasks"][0].pop("status"), "tasks[0].status"),
        ("GetMemoryDreamTask", lambda b: b.pop("dreamId"), "dreamId"),
        ("ListMemoryDreamTasks", lambda b: b["tasks"][0].pop("dreamId"), "tasks[0].dreamId"),
        ("ListMemoryDreamActions", lambda b: b["actions"][0].pop("action"), "actions[0].action"),
        ("ApplyMemoryDreamActions", lambda b: b.pop("results"), "results"),
        ("ApplyMemoryDreamActions", lambda b: b["results"][0].pop("status"), "results[0].status"),
        ("GetMemory", lambda b: b.pop("memory"), "memory"),
        ("DeleteMemoryStore", lambda b: b.update(deleted="yes"), "deleted"),
    ],
)
def test_missing_or_wrong_field_names_the_api_and_the_field(api, mutate, named) -> None:
    body = copy.deepcopy(_golden(api)["response"])
    mutate(body)
    with pytest.raises(ProtocolError) as info:
        answers.DECODERS[api](body)
    assert api in str(info.value)
    assert named in str(info.value)


def test_wrong_types_are_protocol_errors() -> None:
    body = copy.deepcopy(_golden("SearchMemories")["response"])
    body["results"][0]["score"] = "0.9"
    with pytest.raises(ProtocolError, match=r"results\[0\]\.score"):
        answers.search(body)
    body = copy.deepcopy(_golden("ListMemories")["response"])
    body["memories"][0]["metadata"] = {"k": 1}
    with pytest.raises(ProtocolError, match=r"memories\[0\]\.metadata"):
        answers.list_memories(body)
    body = copy.deepcopy(_golden("ListMemories")["response"])
    body["memories"][0]["scope"]["runId"] = "*"
    with pytest.raises(ProtocolError, match=r"memories\[0\]\.scope\.runId"):
        answers.list_memories(body)


def test_receipt_task_handle_is_the_request_id() -> None:
    receipt = answers.receipt(_golden("AddMemories")["response"])
    assert receipt.task_id == receipt.request_id == "4b41a912f8c8a66202896e880a505d4a"
    assert receipt.accepted_messages == 2
    assert receipt.memory_ids == ("1b88d0d65a5b6c0d9142e9b7c7347048",)


def test_messages_read_the_session_and_either_token() -> None:
    body = copy.deepcopy(_golden("ListMemoryStoreMessages")["response"])
    page = answers.messages(body)
    assert page.items[0].id == "msg-0001"
    assert page.items[0].speaker == "user"
    assert page.items[0].scope == Scope("app-001", "user-001", "assistant", "session-001")
    assert page.next_token == "eyJvZmZzZXQiOjF9"
    del body["session"]["nextToken"]
    assert answers.messages(body).next_token == "eyJvZmZzZXQiOjF9"
    del body["nextToken"]
    body["session"]["nextToken"] = "inner"
    assert answers.messages(body).next_token == "inner"


def test_dream_summary_and_rows_give_the_same_value_shape() -> None:
    summary = answers.dream("GetMemoryDreamTask", _golden("GetMemoryDreamTask")["response"])
    assert summary.scopes == (ScopePattern("app-001", "user-001", "assistant", "session-001"),)
    assert summary.action_counts["total"] == 2
    assert summary.extras["skippedByReason"] == {"confidence_below_threshold": 1}
    (row,) = answers.dreams(_golden("ListMemoryDreamTasks")["response"]).items
    assert row.scopes == (ScopePattern("app-001", "user-001", "*", "*"),)
    assert set(row.action_counts) <= {"total", "proposed", "applied", "skipped", "failed"}


def test_dream_action_lists_target_then_sources() -> None:
    (action, *_) = answers.actions(_golden("ListMemoryDreamActions")["response"]).items
    assert action.action == "MERGE"
    assert action.memory_ids[0] == action.target_memory_id
    assert action.text == "The user writes scripts only in Python."


def test_apply_results_report_not_found() -> None:
    results = answers.applied(_golden("ApplyMemoryDreamActions")["response"])
    assert [r.status for r in results] == ["applied", "not_found"]
    assert results[0].result_memory_id == "1b88d0d65a5b6c0d9142e9b7c7347048"


def test_store_info_hides_the_zero_last_seen_and_defaults_storage_mode() -> None:
    body = copy.deepcopy(_golden("GetMemoryStore")["response"])
    info = answers.store_info("GetMemoryStore", body)
    assert info.storage_mode == "ots"
    assert "lastSeenAt" not in info.extras
    assert info.extract_instructions
    del body["storageMode"]
    assert answers.store_info("GetMemoryStore", body).storage_mode == "ots"


def test_omitted_scope_levels_follow_the_service_rules() -> None:
    from memcore_tablestore.protocol import answer_fields

    assert answer_fields.pattern("X", {"appId": "a", "tenantId": "*"}, "scope") == ScopePattern(
        "a", "*", "*", "*"
    )
    assert answer_fields.pattern("X", {"appId": "a"}, "scope") == ScopePattern(
        "a", "__default__", "__default__", "__default__"
    )
    assert answer_fields.scope("X", {"appId": "a", "tenantId": "t"}, "scope") == Scope(
        "a", "t", "__default__", "__default__"
    )


@pytest.mark.parametrize(
    "body",
    [
        [1, 2],
        "text",
        None,
        {"code": "InternalError", "data": None, "message": "no"},
        {"code": "OK", "data": [1], "message": ""},
    ],
)
def test_non_object_and_failed_envelopes_are_protocol_errors(body: object) -> None:
    from memcore_tablestore.protocol import wire

    with pytest.raises(ProtocolError):
        wire.unwrap(body)


def test_the_success_envelope_of_delete_store_is_accepted() -> None:
    from memcore_tablestore.protocol import wire

    body = wire.unwrap({"code": "SUCCESS", "data": {}, "message": "succeed"})
    assert answers.deleted("DeleteMemoryStore", body) is True


def test_an_envelopes_request_id_reaches_the_decoders() -> None:
    from memcore_tablestore.protocol import wire

    body = wire.unwrap({"code": "SUCCESS", "data": {}, "message": "", "requestId": "r-1"})
    assert answers.request_id(body) == "r-1"
    assert answers.deleted("DeleteMemoryStore", body) is True
    inner = wire.unwrap({"code": "SUCCESS", "data": {"requestId": "r-2"}, "requestId": "r-1"})
    assert answers.request_id(inner) == "r-2"  # the data's own id wins


_UNIT = _golden("GetMemory")["response"]["memory"]


@pytest.mark.parametrize(
    "unit",
    [
        {**_UNIT, "text": 5},
        {**_UNIT, "metadata": {"k": 1}},
        {**_UNIT, "scope": {"appId": "a", "tenantId": "*", "agentId": "a", "runId": "r"}},
        {**_UNIT, "scope": "app/t1"},
        {**_UNIT, "version": "2"},
        {**_UNIT, "salience": True},
        {**_UNIT, "created_at": "yesterday"},
        {k: v for k, v in _UNIT.items() if k != "id"},
        "not an object",
    ],
)
def test_malformed_units_are_protocol_errors_naming_get_memory(unit: object) -> None:
    with pytest.raises(ProtocolError, match="GetMemory answered"):
        answers.one_memory("GetMemory", {"memory": unit, "memoryStoreName": "m"})
