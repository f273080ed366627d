"""Every one of the 22 Memory Store APIs, driven through the adapter and the unmodified SDK
against the emulator: the requests carry only documented keys and every answer has the
documented shape (the hand-written golden files), and the adapter decodes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message
from memcore_tablestore.credentials import ApiKey
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.emulator.shapes import shape_mismatches
from memcore_tablestore.protocol.apis import SDK_METHODS
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import running_emulator, store_for

GOLDEN = {
    p.stem: json.loads(p.read_text("utf-8"))
    for p in sorted((Path(__file__).parent.parent / "golden").glob("*.json"))
}
A1 = Scope("app", "tenant_a", "agent1", "run1")
STORE = "round_trip"
_BY_METHOD = {method: api for api, method in SDK_METHODS.items()}


class _Recorder:
    """Wraps the SDK client: every (api, request body, raw answer) the adapter exchanged."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if name not in _BY_METHOD:
            return target

        def call(body: dict[str, Any]) -> Any:
            answer = target(body)
            self.calls.append((_BY_METHOD[name], json.loads(json.dumps(body)), answer))
            return answer

        return call


def _request_keys(golden: dict[str, Any]) -> set[str]:
    keys: set[str] = set()
    for body in [golden["request"], *golden.get("requests", [])]:
        keys |= set(body)
    return keys


def _drive_all(ts: TableStoreMemoryStore) -> None:
    ts.list_stores()
    ts.create_store("rt_extra", description="d", extract_instructions="Keep facts.")
    ts.update_store("rt_extra", description="second")
    ts.describe_store("rt_extra")
    ts.delete_store("rt_extra")
    ts.ensure_store(STORE)
    receipt = ts.add_text(STORE, A1, "Likes green tea", sync=True)
    ts.add_text(STORE, A1, "likes GREEN  tea", sync=True)
    ts.add_messages(
        STORE,
        A1,
        [Message("user", "I moved to Hangzhou", id="m-1", timestamp=1_756_000_000.5)],
        sync=True,
    )
    mid = receipt.memory_ids[0]
    assert ts.search(STORE, A1.tenant_pattern(), "green tea", context_scope=A1)
    ts.list_memories(STORE, A1.tenant_pattern())
    ts.get_memory(STORE, A1, mid)
    ts.update_memory(STORE, A1, mid, metadata={"k": "v"})
    ts.list_messages(STORE, A1)
    ts.list_requests(STORE, pattern=A1.tenant_pattern())
    ts.list_scopes(STORE, A1.tenant_pattern())
    assert receipt.task_id is not None
    ts.get_task(STORE, receipt.task_id)
    ts.list_tasks(STORE, pattern=A1.tenant_pattern())
    dream = ts.create_dream_task(STORE, A1.tenant_pattern())
    ts.get_dream_task(STORE, dream.id)
    ts.list_dream_tasks(STORE, pattern=A1.tenant_pattern())
    actions = ts.list_dream_actions(STORE, dream.id).items
    ts.apply_dream_actions(STORE, dream.id, [a.id for a in actions] or ["no-such-action"])
    ts.cancel_dream_task(STORE, dream.id)
    ts.delete_memory(STORE, A1, mid)


def _walk(ts: TableStoreMemoryStore) -> _Recorder:
    """Every API through ``ts``'s client, recorded."""
    recorder = _Recorder(ts._client)
    ts._client = recorder
    _drive_all(ts)
    seen = {api for api, _, _ in recorder.calls}
    assert seen == set(SDK_METHODS), sorted(set(SDK_METHODS) - seen)
    return recorder


def _shape_problems(recorder: _Recorder) -> list[str]:
    problems: list[str] = []
    for api, body, answer in recorder.calls:
        golden = GOLDEN[api]
        extra = set(body) - _request_keys(golden)
        if extra:
            problems.append(f"{api} request sent undocumented keys {sorted(extra)}")
        raw = dict(answer)
        if "requestId" not in golden["response"]:
            raw.pop("requestId", None)  # the SDK writes the header's request id into every body
        for mismatch in shape_mismatches(
            golden["response"],
            raw,
            optional=golden.get("optional", ()),
            maps=golden.get("maps", ()),
            nullable=golden.get("nullable", ()),
        ):
            problems.append(f"{api}: {mismatch}")
    return problems


def test_every_api_round_trips_with_documented_shapes(ts: TableStoreMemoryStore) -> None:
    assert _shape_problems(_walk(ts)) == []


def test_every_api_round_trips_with_an_api_key_through_the_vendor_client() -> None:
    """``x-ots-apikey`` over real HTTP to the emulator, sent by ``tablestore-agent-storage``:
    the emulator has no way in for this client but the key (it holds no access key pair)."""
    from tablestore_agent_storage import AgentStorageClient

    with running_emulator(InMemoryMemoryStore(), api_key="emu-api-key-0123456789") as server:
        ts = store_for(server, credentials=ApiKey("emu-api-key-0123456789"), timeout=5.0)
        try:
            assert isinstance(ts._client.vendor, AgentStorageClient)
            assert _shape_problems(_walk(ts)) == []
        finally:
            ts.close()


def test_search_context_and_evidence_reach_the_service(
    ts: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    ts.ensure_store(STORE)
    ts.add_text(STORE, A1, "The team lunch is on friday", sync=True)
    ts.search(
        STORE,
        A1.tenant_pattern(),
        "team lunch",
        filters={"k": "v"},
        min_similarity=0.0,
        context_scope=A1,
        include_evidence=True,
    )
    (body,) = [b for api, b in emulator.recorded if api == "SearchMemories"]
    assert body["contextScope"] == {
        "appId": "app",
        "tenantId": "tenant_a",
        "agentId": "agent1",
        "runId": "run1",
    }
    assert body["includeEvidence"] is True
    assert body["metadata"] == {"k": "v"}
    assert "filters" not in body
    assert body["minSimilarity"] == 0.0


def test_messages_are_sent_with_message_id_and_rfc3339_time(
    ts: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    ts.ensure_store(STORE)
    ts.add_messages(STORE, A1, [Message("user", "hello", id="m-7", timestamp=1_756_000_000.25)])
    (body,) = [b for api, b in emulator.recorded if api == "AddMemories"]
    assert body["messages"] == [
        {
            "role": "user",
            "content": "hello",
            "messageId": "m-7",
            "timestamp": "2025-08-24T01:46:40.250Z",
        }
    ]
    page = ts.list_messages(STORE, A1)
    assert [(m.id, m.timestamp) for m in page.items] == [("m-7", 1_756_000_000.25)]


def test_a_message_said_before_1970_is_listed_as_the_embedded_store_lists_it(
    ts: TableStoreMemoryStore,
) -> None:
    """A message may be dated from year 1000 on; the emulator's message listing started at
    the epoch when no minTimestamp was asked, so a turn said in 1969 went missing from it."""
    ts.ensure_store(STORE)
    said = [Message("user", "moon landing", id="m-1", timestamp=-14_000_000.0)]
    said.append(Message("user", "hello", id="m-2", timestamp=1_756_000_000.25))
    ts.add_messages(STORE, A1, said)
    page = ts.list_messages(STORE, A1)
    assert [(m.id, m.timestamp) for m in page.items] == [
        ("m-1", -14_000_000.0),
        ("m-2", 1_756_000_000.25),
    ]
