"""Error mapping and retries, one behaviour per test, through the real SDK and the emulator."""

from __future__ import annotations

import time

import pytest

from memcore.errors import (
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    OutcomeUnknown,
    PermissionDenied,
    StoreNotFound,
    Throttled,
    Unavailable,
)
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message
from memcore_tablestore.credentials import Credentials
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import store_for

A1 = Scope("app", "tenant_a", "agent1", "run1")
STORE = "errs"


def _count(server: EmulatorServer, api: str) -> int:
    return sum(1 for name, _ in server.recorded if name == api)


@pytest.fixture
def ready(ts: TableStoreMemoryStore) -> TableStoreMemoryStore:
    ts.ensure_store(STORE)
    return ts


def test_400_bad_parameter_is_invalid_input_and_not_retried(
    ready: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    before = _count(emulator, "ListMemories")  # ensure_store probed the new index once
    with pytest.raises(InvalidInput) as caught:
        ready.list_memories(STORE, A1.tenant_pattern(), next_token="forged-token")
    assert "400" in str(caught.value)
    assert _count(emulator, "ListMemories") == before + 1


def test_403_wrong_secret_is_a_signature_mismatch(emulator: EmulatorServer) -> None:
    wrong = store_for(emulator, credentials=Credentials("emu-ak", "not-the-secret"))
    with pytest.raises(PermissionDenied) as caught:
        wrong.list_stores()
    assert "OTSAuthFailed" in str(caught.value)
    assert "signature" in str(caught.value)
    assert "not-the-secret" not in str(caught.value)
    assert not caught.value.retryable
    wrong.close()


def test_403_wrong_access_key_id(emulator: EmulatorServer) -> None:
    wrong = store_for(emulator, credentials=Credentials("someone-else", "emu-sk"))
    with pytest.raises(PermissionDenied):
        wrong.describe_store(STORE)
    wrong.close()


def test_404_missing_memory_is_not_found(ready: TableStoreMemoryStore) -> None:
    with pytest.raises(NotFound) as caught:
        ready.get_memory(STORE, A1, "nope")
    # The adapter's own words, not the service's: another scope's id reads the same.
    assert str(caught.value) == f"memory 'nope' was not found in scope {A1}"
    with pytest.raises(StoreNotFound) as caught:
        ready.describe_store("no_such_store")
    assert "memory store 'no_such_store' does not exist" in str(caught.value)


def test_409_while_index_initialises_then_ensure_store_waits(emulator: EmulatorServer) -> None:
    emulator.set_faults(Faults(init_seconds=0.6))
    impatient = store_for(emulator, retry=False)
    patient = store_for(emulator)
    started = time.monotonic()
    heard: list[str] = []
    info = patient.ensure_store("fresh", progress=heard.append)
    waited = time.monotonic() - started
    assert info.status == "ready"
    assert waited >= 0.5
    # GetMemoryStore reports no state: the wait follows the 409s, and says so as it goes.
    assert any("initialise" in m for m in heard)
    assert heard[-1].endswith("is ready")
    emulator.set_faults(Faults(init_seconds=5.0))
    impatient.create_store("fresh2")
    with pytest.raises(Conflict) as caught:
        impatient.add_text("fresh2", A1, "too early", sync=True)
    assert caught.value.retryable
    # No status field on the service: describing the store cannot tell it is initialising.
    assert patient.describe_store("fresh2").name == "fresh2"
    impatient.close()
    patient.close()


def test_ensure_store_gives_up_after_ready_timeout(emulator: EmulatorServer) -> None:
    emulator.set_faults(Faults(init_seconds=30.0))
    store = store_for(emulator, ready_timeout=0.3)
    with pytest.raises(Conflict) as caught:
        store.ensure_store("slowpoke")
    assert "initialising" in str(caught.value)
    store.close()


def test_ensure_store_without_auto_create(emulator: EmulatorServer) -> None:
    store = store_for(emulator, auto_create=False)
    with pytest.raises(NotFound):
        store.ensure_store("never_made")
    store.close()


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (503, "OTSServerBusy"),
        (429, "OTSOperationThrottled"),
        (503, "SERVICE_UNAVAILABLE"),
        # The SDK's retry policy counts it as throttling, whatever the API; its status is 403.
        (403, "OTSNotEnoughCapacityUnit"),
    ],
)
def test_refusal_bursts_are_retried_even_for_message_writes(
    ready: TableStoreMemoryStore,
    emulator: EmulatorServer,
    backing: InMemoryMemoryStore,
    status: int,
    code: str,
) -> None:
    emulator.set_faults(
        Faults(error_burst=3, error_status=status, error_code=code, apis=("AddMemories",))
    )
    receipt = ready.add_messages(STORE, A1, [Message("user", "remember the burst")], sync=True)
    assert receipt.status == "completed"
    assert [m.content for m in ready.list_messages(STORE, A1).items] == ["remember the burst"]
    assert backing.count(STORE) == 1


@pytest.mark.parametrize("code", ["OTSTimeout", "OTSServerUnavailable", "OTSInternalServerError"])
def test_a_503_that_may_follow_the_write_is_not_sent_again(
    ready: TableStoreMemoryStore, emulator: EmulatorServer, backing: InMemoryMemoryStore, code: str
) -> None:
    """Every 503 was taken for a refusal: an ``AddMemories`` answered "Operation timeout"
    after it landed was sent again, and the turn was stored twice (the vendor SDK's retry
    policy resends these for reads only)."""
    from memcore.errors import OutcomeUnknown

    emulator.set_faults(
        Faults(error_burst=1, error_status=503, error_code=code, apis=("AddMemories",))
    )
    with pytest.raises(OutcomeUnknown):
        ready.add_messages(STORE, A1, [Message("user", "sent once")], sync=True)
    assert backing.count(STORE) == 0  # the one attempt was the fault's: nothing resent


def test_persistent_503_surfaces_after_the_timeout(emulator: EmulatorServer) -> None:
    store = store_for(emulator, timeout=0.6)
    emulator.set_faults(Faults(error_rate=1.0, error_status=503, error_code="OTSServerBusy"))
    started = time.monotonic()
    with pytest.raises(Throttled):
        store.list_stores()
    assert time.monotonic() - started < 2.0
    store.close()


def test_too_little_capacity_is_throttled_not_a_permission_problem(
    emulator: EmulatorServer,
) -> None:
    store = store_for(emulator, retry=False)
    emulator.set_faults(
        Faults(error_burst=1, error_status=403, error_code="OTSNotEnoughCapacityUnit")
    )
    with pytest.raises(Throttled) as caught:
        store.list_stores()
    assert caught.value.retryable
    store.close()


def test_retry_off_raises_the_first_refusal(emulator: EmulatorServer) -> None:
    store = store_for(emulator, retry=False)
    emulator.set_faults(Faults(error_burst=1, error_status=503, error_code="OTSServerBusy"))
    with pytest.raises(Throttled):
        store.list_stores()
    assert store.list_stores() == []
    store.close()


def test_500_is_unavailable_and_a_message_write_is_not_replayed(
    ready: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    emulator.set_faults(
        Faults(error_burst=1, error_status=500, error_code="OTSInternalServerError")
    )
    with pytest.raises(Unavailable):
        ready.add_messages(STORE, A1, [Message("user", "maybe stored")])


def test_dropped_connection_on_a_read_is_retried(
    ready: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    mid = ready.add_text(STORE, A1, "survives a hang-up", sync=True).memory_ids[0]
    emulator.set_faults(Faults(drop_burst=2, apis=("GetMemory",)))
    assert ready.get_memory(STORE, A1, mid).text == "survives a hang-up"


def test_dropped_connection_on_a_message_write_is_unavailable_and_not_replayed(
    ready: TableStoreMemoryStore, emulator: EmulatorServer, backing: InMemoryMemoryStore
) -> None:
    # Only the first attempt is cut off: a replay would succeed and store the turn.
    emulator.set_faults(Faults(drop_burst=1, apis=("AddMemories",)))
    with pytest.raises(Unavailable):
        ready.add_messages(STORE, A1, [Message("user", "dropped")])
    assert backing.count(STORE) == 0
    assert ready.list_messages(STORE, A1).items == ()


def test_dropped_connection_on_text_write_is_unknown_and_not_resent(
    ready: TableStoreMemoryStore, emulator: EmulatorServer, backing: InMemoryMemoryStore
) -> None:
    """Nothing documented says the service deduplicates a text: the store does not resend it,
    it says the outcome is unknown (the spool looks before resending)."""
    sent: list[object] = []
    send = ready._client.add_memories
    ready._client.add_memories = lambda body: (sent.append(body), send(body))[1]
    emulator.set_faults(Faults(drop_burst=1, apis=("AddMemories",)))
    with pytest.raises(OutcomeUnknown):
        ready.add_text(STORE, A1, "a dropped answer", sync=True)
    assert len(sent) == 1
    assert backing.count(STORE) == 0


def test_timeout_is_unavailable_and_bounded(emulator: EmulatorServer) -> None:
    store = store_for(emulator, timeout=0.4)
    emulator.set_faults(Faults(latency_ms=1500))
    started = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        store.list_stores()
    elapsed = time.monotonic() - started
    assert "in time" in str(caught.value)
    assert elapsed < 1.4
    store.close()


def test_unreachable_endpoint_is_unavailable() -> None:
    with EmulatorServer(InMemoryMemoryStore()) as server:
        url = server.url
    store = TableStoreMemoryStore(url, "emulator", Credentials("emu-ak", "emu-sk"), timeout=0.5)
    with pytest.raises(Unavailable) as caught:
        store.list_stores()
    assert "connect" in str(caught.value)
    store.close()


def test_chaos_answers_become_typed_errors(emulator: EmulatorServer) -> None:
    store = store_for(emulator, retry=False)
    store.ensure_store(STORE)
    mid = store.add_text(STORE, A1, "chaos victim", sync=True).memory_ids[0]
    emulator.set_faults(Faults(chaos=True, chaos_rate=0.7, seed=7))
    outcomes: dict[str, int] = {}
    for i in range(60):
        try:
            if i % 3 == 0:
                store.get_memory(STORE, A1, mid)
            elif i % 3 == 1:
                store.search(STORE, A1.tenant_pattern(), "chaos")
            else:
                store.add_text(STORE, A1, f"chaos write {i}", sync=True)
            outcomes["ok"] = outcomes.get("ok", 0) + 1
        except MemcoreError as exc:  # anything else fails the test
            assert exc.retryable or isinstance(exc, OutcomeUnknown)  # a write: look first
            outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
    assert outcomes.get("ProtocolError", 0) > 10
    assert outcomes.get("ok", 0) > 5
    store.close()


def test_sign_v4_with_a_region(backing: InMemoryMemoryStore) -> None:
    with EmulatorServer(backing, region="cn-beijing") as server:
        good = store_for(server, region="cn-beijing")
        assert good.ensure_store(STORE).name == STORE
        wrong_region = store_for(server, region="cn-hangzhou")
        with pytest.raises(PermissionDenied):
            wrong_region.describe_store(STORE)
        bad_secret = store_for(
            server, region="cn-beijing", credentials=Credentials("emu-ak", "nope-nope")
        )
        with pytest.raises(PermissionDenied) as caught:
            bad_secret.describe_store(STORE)
        assert "SignV4" in str(caught.value)
        for s in (good, wrong_region, bad_secret):
            s.close()


def test_sts_token_is_passed_and_checked(backing: InMemoryMemoryStore) -> None:
    with EmulatorServer(backing, security_token="sts-token-1") as server:
        ok = store_for(server, credentials=Credentials("emu-ak", "emu-sk", "sts-token-1"))
        assert ok.list_stores() == []
        missing = store_for(server, credentials=Credentials("emu-ak", "emu-sk"))
        with pytest.raises(PermissionDenied):
            missing.list_stores()
        ok.close()
        missing.close()


def test_wrong_instance_is_refused(emulator: EmulatorServer) -> None:
    store = TableStoreMemoryStore(emulator.url, "another", Credentials("emu-ak", "emu-sk"))
    with pytest.raises(PermissionDenied):
        store.list_stores()
    store.close()


def test_closed_store_refuses(ts: TableStoreMemoryStore) -> None:
    ts.close()
    with pytest.raises(MemcoreError):
        ts.list_stores()


def test_creating_an_existing_store_is_a_final_conflict(
    ready: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    with pytest.raises(Conflict) as caught:
        ready.create_store(STORE)
    assert not caught.value.retryable
    assert (
        _count(emulator, "CreateMemoryStore") == 2
    )  # the ensure_store one, and this one: no retry


def test_answer_lost_after_a_text_write_is_not_replayed(
    ready: TableStoreMemoryStore, emulator: EmulatorServer, backing: InMemoryMemoryStore
) -> None:
    emulator.set_faults(Faults(drop_burst=1, drop_after_apply=True, apis=("AddMemories",)))
    with pytest.raises(OutcomeUnknown):
        ready.add_text(STORE, A1, "applied, then the answer was lost", sync=True)
    assert _count(emulator, "AddMemories") == 1  # sent once
    assert backing.count(STORE) == 1  # and it landed


def test_answer_lost_after_a_message_write_is_not_replayed(
    ready: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    emulator.set_faults(Faults(drop_burst=1, drop_after_apply=True, apis=("AddMemories",)))
    with pytest.raises(Unavailable):
        ready.add_messages(STORE, A1, [Message("user", "said once")])
    emulator.set_faults(Faults())
    # The turn was stored once; a replay would have logged it twice.
    assert [m.content for m in ready.list_messages(STORE, A1).items] == ["said once"]


@pytest.mark.parametrize("after_apply", [False, True])
def test_under_mixed_faults_a_text_write_lands_once_or_is_reported_unknown(
    ready: TableStoreMemoryStore,
    emulator: EmulatorServer,
    backing: InMemoryMemoryStore,
    after_apply: bool,
) -> None:
    emulator.set_faults(
        Faults(
            error_rate=0.2,
            drop_rate=0.15,
            drop_after_apply=after_apply,
            seed=11,
            apis=("AddMemories",),
        )
    )
    receipts, unknown = {}, []
    for i in range(25):
        try:
            receipts[f"durable fact {i}"] = ready.add_text(
                STORE, A1, f"durable fact {i}", sync=True
            )
        except OutcomeUnknown:
            unknown.append(f"durable fact {i}")  # the caller looks before it resends
    emulator.set_faults(Faults())
    stored = {m.id: m.text for m in backing.all_memories(STORE)}
    assert sorted(stored[r.memory_ids[0]] for r in receipts.values()) == sorted(receipts)
    landed_unknown = set(stored.values()) - set(receipts)
    assert landed_unknown <= set(unknown)
    assert len(stored) == len(set(stored.values()))  # nothing stored twice
    if after_apply:
        assert landed_unknown == set(unknown)
    else:
        assert not landed_unknown


def test_answer_lost_after_creating_a_dream_resends_it_under_the_same_client_token(
    ready: TableStoreMemoryStore, emulator: EmulatorServer
) -> None:
    ready.add_text(STORE, A1, "Likes green tea", sync=True)
    emulator.set_faults(
        Faults(drop_burst=1, drop_after_apply=True, apis=("CreateMemoryDreamTask",))
    )
    task = ready.create_dream_task(STORE, A1.tenant_pattern())
    sent = [body for api, body in emulator.recorded if api == "CreateMemoryDreamTask"]
    assert len(sent) == 2 and sent[0]["clientToken"] == sent[1]["clientToken"]
    # The resend named the dream the lost answer had started: there is one dream, not two.
    listed = ready.list_dream_tasks(STORE, pattern=A1.tenant_pattern()).items
    assert [t.id for t in listed] == [task.id]
    # A new call is a new dream (a new token).
    again = ready.create_dream_task(STORE, A1.tenant_pattern())
    assert again.id != task.id


@pytest.mark.parametrize("code", ["QUOTA_EXCEEDED", "READ_ONLY_STORE"])
def test_a_409_the_typed_sdk_names_as_final_is_not_retried_as_busy(
    ready: TableStoreMemoryStore, emulator: EmulatorServer, code: str
) -> None:
    """``@tablestore/agent-storage`` documents 409 ``QUOTA_EXCEEDED`` (a scope's item quota)
    and 409 ``READ_ONLY_STORE`` (a read-only projection): final answers, not the
    ``CONFLICT`` of an index still initialising, so nothing resends them until the timeout,
    and callers (the Hermes spool, scripts by exit code) are told not to try again."""
    from memcore.exit_codes import ExitCode, exit_code_for

    emulator.set_faults(
        Faults(error_rate=1.0, error_status=409, error_code=code, apis=("AddMemories",))
    )
    started = time.monotonic()
    with pytest.raises(Conflict) as caught:
        ready.add_text(STORE, A1, "one more", sync=True)
    assert time.monotonic() - started < 1.0  # the store's timeout is 5 s: not retried
    assert caught.value.retryable is False
    assert code in str(caught.value)
    assert exit_code_for(caught.value) == ExitCode.USAGE


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "PermissionDenied"), (403, "PermissionDenied"), (404, "NotFound")]
)
def test_a_gateways_html_4xx_is_read_by_its_status(status: int, kind: str) -> None:
    """A 401/403/404 whose body is no JSON (a gateway's HTML page) was a garbled answer:
    retried for the whole timeout (21 requests, 30 s), then exit 5 as unavailable, where the
    API-key path said exit 4 at once."""
    from tablestore.error import OTSServiceError

    from memcore_tablestore.client.driver import classify
    from memcore_tablestore.protocol.plans import Call

    failure = classify(
        Call("GetMemoryStore", {}), OTSServiceError(status, "JsonDecodeError", "Expecting value")
    )
    assert type(failure.error).__name__ == kind and not failure.error.retryable
