"""Writes: a long turn is split within the limits, and no write scope ever holds a wildcard."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore import limits
from memcore.errors import InvalidInput
from memcore.paging import every_item
from memcore.scope import Scope, ScopePattern, SessionContext, resolve_scope
from memcore.service import MemoryService
from memcore.values import Message
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.protocol.plans import Call
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import store_for

STORE = "turns"


def _adds(server: EmulatorServer) -> list[dict]:
    return [body for api, body in server.recorded if api == "AddMemories"]


def test_long_turn_is_split_and_sent_within_limits(
    ts: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    ts.ensure_store(STORE)
    scope = Scope("hermes", "u1", "hermes", "s1")
    service = MemoryService(ts, store_name=STORE, scope=scope)
    user = "".join(
        f"line {i}: the user explains something important.\n" for i in range(2_000)
    )  # ~90 KB
    extra = [Message("tool", f"tool output {i}") for i in range(30)]
    messages = [Message("user", user), *extra, Message("assistant", "done " * 4_000)]
    receipts = service.sync_turn("", "", messages=messages, sync=True)
    bodies = _adds(emulator)
    assert len(receipts) == len(bodies) > 3
    for body in bodies:
        sent = body["messages"]
        assert 1 <= len(sent) <= limits.MAX_MESSAGES_PER_WRITE
        assert sum(len(m["content"].encode()) for m in sent) <= limits.MAX_MESSAGES_BYTES
        assert body["scope"] == {
            "appId": "hermes",
            "tenantId": "u1",
            "agentId": "hermes",
            "runId": "s1",
        }
    # Nothing was cut off: the pieces put back together are the turn.
    sent_all = [m for body in bodies for m in body["messages"]]
    assert "".join(m["content"] for m in sent_all if m["role"] == "user") == user
    assert [m["content"] for m in sent_all if m["role"] == "tool"] == [m.content for m in extra]
    stored = list(
        every_item(lambda token: ts.list_messages(STORE, scope, limit=100, next_token=token))
    )
    assert len(stored) == len(sent_all)


def test_a_pattern_is_never_accepted_as_a_write_scope(
    ts: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    ts.ensure_store(STORE)
    pattern = ScopePattern("app", "t1", "*", "*")
    for call in (
        lambda: ts.add_text(STORE, pattern, "x"),  # type: ignore[arg-type]
        lambda: ts.add_messages(STORE, pattern, [Message("user", "x")]),  # type: ignore[arg-type]
        lambda: ts.delete_memory(STORE, pattern, "m"),  # type: ignore[arg-type]
    ):
        try:
            call()
        except InvalidInput as exc:
            assert exc.field == "scope"
        else:
            raise AssertionError("a wildcard scope was accepted for a write")
    assert _adds(emulator) == []


_untrusted = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from(["*", "a/*", "**", " * ", "%2A", "__default__"]),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(user=_untrusted, agent=_untrusted, run=_untrusted, tenant=_untrusted)
def test_no_write_scope_ever_contains_a_wildcard(
    ts: TableStoreMemoryStore,
    emulator: EmulatorServer,
    user: str | None,
    agent: str | None,
    run: str | None,
    tenant: str | None,
) -> None:
    ts.ensure_store(STORE)
    given_tenant = tenant if tenant is not None else user
    if given_tenant is not None and not given_tenant.strip():
        return  # refused by resolve_scope (a blank tenant id), so never written
    scope = resolve_scope(
        SessionContext(user_id=user, agent_identity=agent, session_id=run), tenant_id=tenant
    )
    ts.add_text(STORE, scope, "a fact", sync=True)
    ts.add_messages(STORE, scope, [Message("user", "a message")])
    for body in _adds(emulator):
        assert all("*" not in value for value in body["scope"].values())
        assert set(body["scope"]) == {"appId", "tenantId", "agentId", "runId"}


@pytest.mark.parametrize("seed", range(9))
def test_a_2xx_write_answer_that_cannot_be_read_is_never_resent(
    emulator: EmulatorServer, caplog: pytest.LogCaptureFixture, seed: int
) -> None:
    """Every kind of unreadable 200 (non-JSON, wrong shapes, a failed envelope) on AddMemories:
    a JSON object carrying the service's request id is the service's answer ('unconfirmed',
    logged); anything else is OutcomeUnknown. Either way the write is sent exactly once."""
    from memcore.errors import OutcomeUnknown
    from memcore.values import UNCONFIRMED

    store = store_for(emulator)
    store.ensure_store("landed")
    emulator.set_faults(Faults(chaos=True, apis=("AddMemories",), seed=seed))
    sent: list[object] = []
    send = store._client.add_memories
    store._client.add_memories = lambda body: (sent.append(body), send(body))[1]
    outcomes = []
    with caplog.at_level("WARNING", logger="memcore_tablestore"):
        for write in (
            lambda: store.add_text("landed", Scope("a", "t", "g", "r"), "a fact", sync=True),
            lambda: store.add_messages(
                "landed", Scope("a", "t", "g", "r"), [Message("user", "hi")]
            ),
        ):
            try:
                receipt = write()
            except OutcomeUnknown:
                outcomes.append("unknown")
            else:
                assert receipt.status == UNCONFIRMED and receipt.problem
                assert "will not be sent again" in caplog.text
                outcomes.append(UNCONFIRMED)
    assert len(sent) == 2
    store.close()


def test_no_unreadable_answer_makes_a_write_landed() -> None:
    """A non-JSON body behind an error status (a proxy's HTML 503) is a refusal to retry; the
    same body behind a 200 is not the service's answer: OutcomeUnknown for a write (look before
    resending), a ProtocolError to retry for a read."""
    from tablestore.error import OTSServiceError

    from memcore.errors import OutcomeUnknown, ProtocolError, Unavailable
    from memcore_tablestore.client.driver import classify

    write = Call("AddMemories", {}, replay_safe=False)
    read = Call("SearchMemories", {})
    html_503 = OTSServiceError(503, "JsonDecodeError", "Expecting value", "rid-1")
    garbled_200 = OTSServiceError(200, "JsonDecodeError", "Expecting value", "rid-2")
    refused = classify(write, html_503)
    assert isinstance(refused.error, Unavailable) and refused.refused
    assert not isinstance(refused.error, OutcomeUnknown)
    assert isinstance(classify(write, garbled_200).error, OutcomeUnknown)
    assert isinstance(
        classify(write, TypeError("list indices must be integers")).error, OutcomeUnknown
    )
    read_failure = classify(read, garbled_200)
    assert isinstance(read_failure.error, ProtocolError)
    assert not isinstance(read_failure.error, OutcomeUnknown)


@pytest.mark.parametrize(
    "raw", [{"requestId": ""}, {}, {"requestId": None, "status": "completed"}, [], "ok"]
)
def test_a_2xx_without_the_services_request_id_is_not_landed(raw: object) -> None:
    """The SDK copies the ``x-ots-requestid`` header into ``requestId`` (empty when absent): a
    2xx without it came from something in between, so a write's outcome is unknown."""
    from memcore.errors import OutcomeUnknown, ProtocolError
    from memcore_tablestore.client.driver import settle
    from memcore_tablestore.client.error_map import Failure

    with pytest.raises(Failure) as caught:
        settle(Call("AddMemories", {}, replay_safe=False), raw)
    assert isinstance(caught.value.error, OutcomeUnknown)
    with pytest.raises(Failure) as caught:
        settle(Call("ListMemories", {}), raw)
    assert type(caught.value.error) is ProtocolError
    assert settle(Call("AddMemories", {}, replay_safe=False), {"requestId": "r1"}) == {
        "requestId": "r1"
    }


def _as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """AddMemories answers exactly as ``AddMemoriesResponse`` types it: no ``memoryIds`` (only
    the documentation names them for sync writes)."""
    from memcore_tablestore.emulator.apis.handlers import TABLE

    vendor = TABLE["AddMemories"]

    def typed(svc: object, call: object) -> dict:
        answer = vendor(svc, call)  # type: ignore[arg-type]
        answer.pop("memoryIds", None)
        return answer

    monkeypatch.setitem(TABLE, "AddMemories", typed)


def test_a_sync_write_names_its_memories_when_the_answer_does_not(
    ts: TableStoreMemoryStore, emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ts.ensure_store(STORE)
    scope = Scope("app", "u1", "agent", "run")
    _as_typed(monkeypatch)
    receipt = ts.add_text(STORE, scope, "Allergic to peanuts", sync=True)
    assert receipt.status == "completed"
    assert [ts.get_memory(STORE, scope, m).text for m in receipt.memory_ids] == [
        "Allergic to peanuts"
    ]
    said = ts.add_messages(STORE, scope, [Message("user", "I live in Lisbon")], sync=True)
    assert len(said.memory_ids) == 1
    assert len(_adds(emulator)) == 2  # looked up, never sent again


def test_a_landed_sync_write_stays_landed_when_its_ids_cannot_be_read(
    ts: TableStoreMemoryStore, emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ts.ensure_store(STORE)
    _as_typed(monkeypatch)
    # A key that may write but not read tasks: the lookup is refused, the write stands.
    emulator.set_faults(
        Faults(
            error_status=403,
            error_code="OTSNoPermissionAccess",
            error_rate=1.0,
            apis=("GetMemoryTask",),
        )
    )
    receipt = ts.add_text(STORE, Scope("app", "u1", "agent", "run"), "Owns a bike", sync=True)
    assert receipt.status == "completed" and receipt.task_id
    assert receipt.memory_ids == ()
    assert len(_adds(emulator)) == 1
