"""Decoding service answers: envelopes, spellings, extras, and shapes that are not the protocol."""

from __future__ import annotations

import pytest

from memcore.errors import InvalidInput, ProtocolError
from memcore.scope import Scope, ScopePattern
from memcore.testing import InMemoryMemoryStore
from memcore_tablestore import wire
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.store import TableStoreMemoryStore
from memcore_tablestore.testing import running_emulator, store_for

A1 = Scope("app", "t1", "a1", "r1")
UNIT = {
    "id": "m1",
    "text": "likes tea",
    "scope": {"appId": "app", "tenantId": "t1", "agentId": "a1", "runId": "r1"},
    "metadata": {"k": "v"},
    "created_at": 1_700_000_000_000,
    "unitType": "fact",
    "salience": 0.5,
    "version": 2,
    "embedding_model": "x-1",
}


def test_memory_unit_keeps_unknown_fields_in_extras() -> None:
    memory = wire.decode_memory({"memory": UNIT})
    assert (memory.id, memory.text, memory.scope, dict(memory.metadata)) == (
        "m1",
        "likes tea",
        A1,
        {"k": "v"},
    )
    assert memory.unit_type == "fact" and memory.version == 2 and memory.salience == 0.5
    assert memory.created_at == 1_700_000_000.0  # milliseconds become seconds
    assert memory.extras == {"embedding_model": "x-1"}


def test_iso_timestamps_are_parsed() -> None:
    memory = wire.decode_memory({**UNIT, "created_at": "2023-11-14T22:13:20Z"})
    assert memory.created_at == 1_700_000_000.0


def test_envelope_is_unwrapped_and_request_id_kept() -> None:
    body = wire.unwrap(
        {
            "code": "OK",
            "message": "",
            "data": {"taskId": "task-1", "status": "Pending"},
            "requestId": "hdr-1",
        }
    )
    receipt = wire.decode_receipt(body)
    assert (receipt.task_id, receipt.status, receipt.request_id) == ("task-1", "pending", "hdr-1")


def test_task_id_is_never_taken_from_request_id() -> None:
    receipt = wire.decode_receipt(
        {"requestId": "header-id", "taskId": "the-task", "status": "completed", "memoryIds": ["m"]}
    )
    assert receipt.task_id == "the-task"
    assert receipt.request_id == "header-id"


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
    with pytest.raises(ProtocolError):
        wire.unwrap(body)


@pytest.mark.parametrize(
    "unit",
    [
        {**UNIT, "text": 5},
        {**UNIT, "metadata": {"k": 1}},
        {**UNIT, "scope": {"appId": "app", "tenantId": "*", "agentId": "a", "runId": "r"}},
        {**UNIT, "scope": "app/t1"},
        {**UNIT, "version": "2"},
        {**UNIT, "salience": True},
        {k: v for k, v in UNIT.items() if k != "id"},
        "not an object",
    ],
)
def test_wrong_types_are_protocol_errors(unit: object) -> None:
    with pytest.raises(ProtocolError):
        wire.decode_memory({"memory": unit})


def test_memory_ids_must_be_a_list_of_strings() -> None:
    with pytest.raises(ProtocolError):
        wire.decode_receipt({"taskId": "t", "status": "completed", "memoryIds": "abc"})
    with pytest.raises(ProtocolError):
        wire.decode_task({"task": {"id": "t", "status": "completed", "memory_ids": "abc"}})


def test_hits_need_numeric_scores() -> None:
    hits = wire.decode_hits({"memories": [{**UNIT, "score": 0.75}, {"memory": UNIT, "score": 1}]})
    assert [h.score for h in hits] == [0.75, 1.0]
    assert "score" not in hits[0].memory.extras
    with pytest.raises(ProtocolError):
        wire.decode_hits({"memories": [{**UNIT, "score": "high"}]})


def test_scope_rules_on_the_wire() -> None:
    with pytest.raises(InvalidInput):
        wire.scope_from_wire({"appId": "a", "tenantId": "t", "agentId": "*", "runId": "r"})
    with pytest.raises(InvalidInput):
        wire.scope_from_wire({"appId": "a", "tenantId": "t", "agentId": "g"})
    with pytest.raises(InvalidInput):
        wire.pattern_from_wire({"appId": "a", "tenantId": "*", "agentId": "g", "runId": "*"})
    with pytest.raises(InvalidInput):
        wire.pattern_from_wire({"tenantId": "t"})
    assert wire.pattern_from_wire({"appId": "a", "tenantId": "t"}) == ScopePattern(
        "a", "t", "*", "*"
    )


def test_encode_decode_round_trip_over_the_emulator(
    ts: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    ts.ensure_store("rt")
    receipt = ts.add_text("rt", A1, "round trip", metadata={"a": "b"}, sync=True)
    # The SDK replaces the body's requestId with the x-ots-requestid header; the task survives.
    assert receipt.task_id and receipt.request_id and receipt.task_id != receipt.request_id
    assert ts.get_task("rt", receipt.task_id).memory_ids == receipt.memory_ids


def test_enveloped_answers_carry_the_task_id() -> None:
    backing = InMemoryMemoryStore()
    with running_emulator(backing, envelope=True) as server:
        store = store_for(server)
        store.ensure_store("env")
        receipt = store.add_text("env", A1, "wrapped", sync=True)
        assert store.get_task("env", receipt.task_id or "").id == receipt.task_id
        store.close()


def test_an_answer_without_its_list_is_empty_only_when_it_holds_nothing_else() -> None:
    """``{}`` may be how the service says "none"; ``{"status": "ok"}`` is not a page we know:
    reading it as empty would make a landed write look unsent, and it would be sent twice."""
    assert wire.decode_messages({}).items == ()
    assert wire.decode_messages({"requestId": "r-1", "nextToken": ""}).items == ()
    assert wire.decode_memories({"memories": None}).items == ()
    with pytest.raises(ProtocolError) as info:
        wire.decode_messages({"status": "ok", "requestId": "r-1"})
    assert info.value.field == "messages" and "status" in str(info.value)
    with pytest.raises(ProtocolError):
        wire.decode_memories({"memory": UNIT})
