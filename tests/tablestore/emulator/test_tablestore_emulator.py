"""The emulator itself: admin endpoint, raw protocol checks, service-side rules, dispatch."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from tablestore import OTSClient
from tablestore.auth import RequestContext
from tablestore.error import OTSServiceError

from memcore.errors import ConfigError, InvalidInput, Unavailable, Unsupported
from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.testing import store_for

STORE = "emu"
GOOD = {"appId": "app", "tenantId": "t1", "agentId": "a1", "runId": "r1"}


def _raw(
    server: EmulatorServer,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), data


@pytest.fixture
def sdk(emulator: EmulatorServer) -> Any:
    client = OTSClient(emulator.url, "emu-ak", "emu-sk", "emulator", retry_policy=None)
    client.create_memory_store({"memoryStoreName": STORE})
    return client


def _code(call: Any) -> tuple[int, str]:
    with pytest.raises(OTSServiceError) as caught:
        call()
    return caught.value.get_http_status(), caught.value.get_error_code()


def test_answers_carry_lowercase_request_id(emulator: EmulatorServer) -> None:
    status, headers, body = _raw(emulator, "POST", "/ListMemoryStores", b"{}")
    assert status == 403  # unsigned
    assert "x-ots-requestid" in headers
    assert json.loads(body)["code"] == "OTSAuthFailed"


def test_tampered_body_fails_the_md5_check(emulator: EmulatorServer) -> None:
    client = OTSClient(emulator.url, "emu-ak", "emu-sk", "emulator")
    context = RequestContext(client.credentials_provider.get_credentials())
    query, headers, body = client.protocol.make_json_request(
        "ListMemoryStores", client._signer, {}, context
    )
    status, _, answer = _raw(emulator, "POST", query, b'{"limit":5}', headers)
    assert status == 403
    assert "contentmd5" in json.loads(answer)["message"]
    status, _, _ = _raw(emulator, "POST", query, body, headers)
    assert status == 200


def test_service_side_scope_rules(sdk: Any) -> None:
    base = {"memoryStoreName": STORE}
    star_write = {**base, "scope": {**GOOD, "agentId": "*"}, "text": "x"}
    assert _code(lambda: sdk.add_memories(star_write)) == (400, "INVALID_PARAMETER")
    no_app = {**base, "scope": {"tenantId": "t1"}, "text": "x"}
    assert _code(lambda: sdk.add_memories(no_app)) == (400, "INVALID_PARAMETER")
    middle_star = {**base, "scope": {**GOOD, "tenantId": "*"}, "query": "q"}
    assert _code(lambda: sdk.search_memories(middle_star)) == (400, "INVALID_PARAMETER")
    tenant_star = {**base, "scope": {"appId": "app", "tenantId": "*"}, "query": "q"}
    assert _code(lambda: sdk.search_memories(tenant_star)) == (400, "INVALID_PARAMETER")
    suffix_star = {**base, "scope": {**GOOD, "agentId": "*", "runId": "*"}, "query": "q"}
    assert sdk.search_memories(suffix_star)["results"] == []
    star_get = {**base, "scope": {**GOOD, "runId": "*"}, "memoryId": "m"}
    assert _code(lambda: sdk.get_memory(star_get)) == (400, "INVALID_PARAMETER")
    star_messages = {**base, "scope": {**GOOD, "runId": "*"}}
    assert _code(lambda: sdk.list_memory_store_messages(star_messages)) == (
        400,
        "INVALID_PARAMETER",
    )


def test_service_side_limits(sdk: Any) -> None:
    base = {"memoryStoreName": STORE, "scope": GOOD}
    assert _code(lambda: sdk.search_memories({**base, "query": "q", "topK": 51}))[0] == 400
    assert _code(lambda: sdk.add_memories({**base, "text": "x" * 32_001}))[0] == 400
    assert (
        _code(
            lambda: sdk.add_memories({**base, "messages": [{"role": "user", "content": "x"}] * 21})
        )[0]
        == 400
    )
    assert _code(lambda: sdk.add_memories({**base, "text": "x", "metadata": {"k": 1}}))[0] == 400
    assert _code(lambda: sdk.add_memories({**base}))[0] == 400
    assert _code(lambda: sdk.list_memories({**base, "limit": 101}))[0] == 400
    assert _code(lambda: sdk.create_memory_store({"memoryStoreName": "bad-name"}))[0] == 400
    assert _code(lambda: sdk.create_memory_store({"memoryStoreName": STORE})) == (
        409,
        "OTSObjectAlreadyExist",
    )


def test_non_object_body_is_refused(sdk: Any) -> None:
    assert _code(lambda: sdk.list_memory_stores("[1,2]")) == (400, "INVALID_PARAMETER")


def test_501_unsupported_operation_maps_to_unsupported(emulator: EmulatorServer) -> None:
    emulator.set_faults(Faults(error_burst=1, error_status=501, error_code="OTSUnsupportOperation"))
    store = store_for(emulator)
    with pytest.raises(Unsupported):
        store.list_stores()
    store.close()


def test_backing_store_crash_is_a_500_and_unavailable(
    backing: InMemoryMemoryStore, emulator: EmulatorServer
) -> None:
    store = store_for(emulator, retry=False)
    backing.faults.fail_operation("list_stores", RuntimeError("disk on fire"), times=1)  # type: ignore[arg-type]
    with pytest.raises(Unavailable) as caught:
        store.list_stores()
    assert "500" in str(caught.value)
    assert "disk on fire" not in str(caught.value)
    assert store.list_stores() == []
    store.close()


def test_admin_endpoint_reads_and_sets_faults(emulator: EmulatorServer) -> None:
    status, _, body = _raw(emulator, "GET", "/__admin/faults")
    assert status == 200 and json.loads(body)["latency_ms"] == 0.0
    status, _, body = _raw(
        emulator,
        "POST",
        "/__admin/faults",
        json.dumps(
            {"error_burst": 2, "error_status": 429, "error_code": "OTSOperationThrottled"}
        ).encode(),
    )
    assert status == 200
    assert emulator.faults.error_burst == 2 and emulator.faults.error_status == 429
    status, _, body = _raw(emulator, "POST", "/__admin/faults", b'{"latency": 5}')
    assert status == 400 and json.loads(body)["code"] == "INVALID_PARAMETER"
    status, _, body = _raw(emulator, "POST", "/__admin/faults", b'{"error_rate": 2}')
    assert status == 400


def test_faults_validate() -> None:
    with pytest.raises(InvalidInput):
        Faults(error_rate=1.5)
    with pytest.raises(InvalidInput):
        Faults(error_status=200)
    with pytest.raises(InvalidInput):
        Faults.from_dict({"chaos": "yes"})
    assert Faults.from_dict(Faults(latency_ms=3, apis=("GetMemory",)).to_dict()) == Faults(
        latency_ms=3, apis=("GetMemory",)
    )


def test_x_acs_action_goes_to_the_control_plane(emulator: EmulatorServer) -> None:
    headers = {"x-acs-action": "ListInstances", "x-acs-version": "2020-12-09"}
    status, reply_headers, body = _raw(
        emulator, "GET", "/v2/openapi/listinstances", headers=headers
    )
    # The twin answers in the OpenAPI error shape (Code/Message/RequestId), not the data plane's.
    assert status == 400
    assert "x-acs-request-id" in reply_headers
    assert json.loads(body)["Code"] == "MissingAuthorization"


def test_only_post_reaches_the_data_plane(emulator: EmulatorServer) -> None:
    status, _, _ = _raw(emulator, "GET", "/ListMemoryStores")
    assert status == 405


def test_only_loopback_addresses() -> None:
    with pytest.raises(ConfigError):
        EmulatorServer(InMemoryMemoryStore(), host="0.0.0.0")


def test_stop_closes_keep_alive_connections(backing: InMemoryMemoryStore) -> None:
    server = EmulatorServer(backing).start()
    store = store_for(server, timeout=1.0)
    store.list_stores()
    server.stop()
    with pytest.raises(Unavailable):
        store.list_stores()
    store.close()


def test_an_initialising_store_answers_409_on_the_data_plane_only(
    emulator: EmulatorServer, sdk: Any
) -> None:
    emulator.set_faults(Faults(init_seconds=5))
    created = sdk.create_memory_store({"memoryStoreName": "fresh"})
    assert "status" not in created  # GetMemoryStore has no status: 409 is the signal
    assert _code(lambda: sdk.list_memories({"memoryStoreName": "fresh", "scope": GOOD})) == (
        409,
        "CONFLICT",
    )
    assert "status" not in sdk.get_memory_store({"memoryStoreName": "fresh"})
    assert sdk.list_memories({"memoryStoreName": STORE, "scope": GOOD})["memories"] == []


def test_newest_first_listings_give_each_item_once_while_writes_land(
    emulator: EmulatorServer,
) -> None:
    """Tasks, the request audit and dreams are listed newest first; what lands between two
    pages goes in front of the first page, and must neither repeat nor hide an older item."""
    from memcore.paging import pages
    from memcore.scope import Scope

    scope = Scope("app", "t1", "a1", "r1")
    with store_for(emulator, timeout=5.0) as ts:
        ts.ensure_store(STORE)
        for i in range(5):
            ts.add_text(STORE, scope, f"fact {i}", sync=True)
            ts.create_dream_task(STORE, scope.tenant_pattern())
        listings = {
            "tasks": lambda token: ts.list_tasks(
                STORE, limit=2, next_token=token, pattern=scope.tenant_pattern()
            ),
            "requests": lambda token: ts.list_requests(
                STORE, operation="AddMemories", limit=2, next_token=token
            ),
            "dreams": lambda token: ts.list_dream_tasks(
                STORE, limit=2, next_token=token, pattern=scope.tenant_pattern()
            ),
        }
        for name, fetch in listings.items():
            before = [item.id for page in pages(fetch) for item in page.items]
            seen: list[str] = []
            for page in pages(fetch):
                seen.extend(item.id for item in page.items)
                ts.add_text(STORE, scope, f"landed while listing {name}", sync=True)
                ts.create_dream_task(STORE, scope.tenant_pattern())
            assert seen == before, name
