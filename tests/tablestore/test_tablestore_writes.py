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
from memcore_tablestore.store import TableStoreMemoryStore
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
def test_a_2xx_write_answer_that_cannot_be_read_is_landed_not_resent(
    emulator: EmulatorServer, caplog: pytest.LogCaptureFixture, seed: int
) -> None:
    """Every kind of unreadable 200 (non-JSON, wrong shapes, a failed envelope) on AddMemories:
    the receipt says 'unconfirmed', a warning is logged, and the write is sent exactly once."""
    from memcore.values import UNCONFIRMED

    store = store_for(emulator)
    store.ensure_store("landed")
    emulator.set_faults(Faults(chaos=True, apis=("AddMemories",), seed=seed))
    sent: list[object] = []
    send = store._client.add_memories
    store._client.add_memories = lambda body: (sent.append(body), send(body))[1]
    with caplog.at_level("WARNING", logger="memcore_tablestore"):
        text = store.add_text("landed", Scope("a", "t", "g", "r"), "a fact", sync=True)
        msgs = store.add_messages("landed", Scope("a", "t", "g", "r"), [Message("user", "hi")])
    assert (text.status, msgs.status) == (UNCONFIRMED, UNCONFIRMED)
    assert text.problem and msgs.problem
    assert len(sent) == 2
    assert "will not be sent again" in caplog.text
    store.close()


def test_only_a_2xx_answer_makes_an_unreadable_write_landed() -> None:
    """A non-JSON body behind an error status (a proxy's HTML 503) is a failure to retry, not
    a landed write; the same body behind a 200 is landed."""
    from tablestore.error import OTSServiceError

    from memcore.errors import Unavailable
    from memcore_tablestore.bodies import UNDECODABLE
    from memcore_tablestore.driver import classify
    from memcore_tablestore.error_map import Failure
    from memcore_tablestore.plans import Call

    write = Call("AddMemories", {}, landed_on_success=True)
    read = Call("SearchMemories", {})
    html_503 = OTSServiceError(503, "JsonDecodeError", "Expecting value", "rid-1")
    garbled_200 = OTSServiceError(200, "JsonDecodeError", "Expecting value", "rid-2")
    failure = classify(write, html_503)
    assert isinstance(failure, Failure) and isinstance(failure.error, Unavailable)
    landed = classify(write, garbled_200)
    assert isinstance(landed, dict) and landed[UNDECODABLE] and landed["requestId"] == "rid-2"
    assert isinstance(classify(write, TypeError("list indices must be integers")), dict)
    assert isinstance(classify(read, garbled_200), Failure)
    assert isinstance(
        classify(write, AttributeError("'list' object has no attribute 'get'")), Failure
    )
