"""API keys: the vendor's ``tablestore-agent-storage`` client against the emulator over real
HTTP on 127.0.0.1, HTTPS-only endpoints, precedence over an access key pair, and the key kept
out of reprs, errors and logs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from memcore.errors import ConfigError, PermissionDenied, Throttled
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore_tablestore import open_backend
from memcore_tablestore.credentials import ApiKey, Credentials, resolve_auth
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import (
    async_store_for,
    emulator_config,
    emulator_credentials,
    running_emulator,
    store_for,
)

KEY = "emu-api-key-5b1c9e0d7f"
WRONG = "not-the-key-3a8f2c6e1d"
A1 = Scope("app", "tenant_a", "agent1", "run1")
STORE = "keyed"


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    with running_emulator(InMemoryMemoryStore(), api_key=KEY) as emulator:
        yield emulator


def test_a_wrong_api_key_is_permission_denied_and_not_echoed(server: EmulatorServer) -> None:
    ts = store_for(server, credentials=ApiKey(WRONG))
    with pytest.raises(PermissionDenied) as caught:
        ts.list_stores()
    ts.close()
    assert WRONG not in str(caught.value) and KEY not in str(caught.value)


def test_the_emulator_refuses_a_wrong_key_as_the_service_does(server: EmulatorServer) -> None:
    """The vendor client, unmodified, gets 403 OTSAuthFailed for a wrong key; an emulator
    started without an API key refuses every key."""
    from tablestore_agent_storage import OTSServiceError
    from tablestore_agent_storage.ots_json_client import OTSJSONClient

    from memcore_tablestore.client.agent_storage import LoopbackPlainHTTP

    def refusal(emulator: EmulatorServer, key: str) -> tuple[int, str]:
        import urllib3

        client = OTSJSONClient(
            "https" + emulator.url[len("http") :],
            emulator.instance_name,
            api_key=key,
            transport=LoopbackPlainHTTP(emulator.url, urllib3.PoolManager()),
        )
        with pytest.raises(OTSServiceError) as caught:
            client.request("ListMemoryStores", {})
        return caught.value.get_http_status(), caught.value.get_error_code()

    assert refusal(server, WRONG) == (403, "OTSAuthFailed")
    with running_emulator(InMemoryMemoryStore()) as keyless:
        assert refusal(keyless, KEY) == (403, "OTSAuthFailed")


def test_an_api_key_needs_https_except_on_loopback() -> None:
    with pytest.raises(ConfigError) as caught:
        TableStoreMemoryStore("http://inst.cn-hangzhou.ots.aliyuncs.com", "inst", ApiKey(KEY))
    assert caught.value.field == "endpoint" and "HTTPS" in str(caught.value)
    assert KEY not in str(caught.value)
    TableStoreMemoryStore("https://inst.cn-hangzhou.ots.aliyuncs.com", "inst", ApiKey(KEY)).close()
    TableStoreMemoryStore("http://localhost:9", "inst", ApiKey(KEY)).close()
    # An access key pair may still use http:// (signed requests), as before.
    TableStoreMemoryStore(
        "http://inst.cn-hangzhou.ots.aliyuncs.com", "inst", Credentials("ak", "sk")
    ).close()


def test_the_api_key_takes_precedence_over_an_access_key_pair() -> None:
    env = {
        "TABLESTORE_MEMORY_API_KEY": f" {KEY} ",
        "TABLESTORE_MEMORY_AK": "ak",
        "TABLESTORE_MEMORY_SK": "sk",
    }
    assert resolve_auth(env) == ApiKey(KEY)
    env["TABLESTORE_MEMORY_API_KEY"] = "  "
    assert resolve_auth(env) == Credentials("ak", "sk")


def test_an_access_key_pair_still_works_where_an_api_key_is_accepted(
    server: EmulatorServer,
) -> None:
    with store_for(server, credentials=ApiKey(KEY)) as ts:
        ts.ensure_store(STORE)
        ts.add_text(STORE, A1, "Prefers window seats", sync=True)
    with store_for(server) as ts:  # the emulator's access key pair
        found = ts.list_memories(STORE, A1.tenant_pattern()).items
        assert [m.text for m in found] == ["Prefers window seats"]


def test_the_key_is_never_in_a_repr_an_error_or_a_log(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    assert KEY not in repr(ApiKey(KEY)) and KEY not in str(ApiKey(KEY))
    caplog.set_level(logging.DEBUG)
    with store_for(server, credentials=ApiKey(KEY)) as ts:
        assert KEY not in repr(ts)
        ts.ensure_store(STORE)
        ts.add_text(STORE, A1, "Keeps a cat", sync=True)
        ts.search(STORE, A1.tenant_pattern(), "cat")
    with store_for(server, credentials=ApiKey(WRONG)) as bad, pytest.raises(PermissionDenied):
        bad.list_stores()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert KEY not in text and WRONG not in text


def test_retries_go_through_the_vendor_client_too(server: EmulatorServer) -> None:
    busy = Faults(error_burst=2, error_status=503, error_code="OTSServerBusy")
    with store_for(server, credentials=ApiKey(KEY), retry=False) as once:
        once.ensure_store(STORE)
        server.set_faults(busy)
        with pytest.raises(Throttled):
            once.list_memories(STORE, A1.tenant_pattern())
    with store_for(server, credentials=ApiKey(KEY)) as ts:
        server.set_faults(busy)
        assert ts.list_memories(STORE, A1.tenant_pattern()).items == ()


def test_open_backend_reads_the_api_key_from_the_environment(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLESTORE_MEMORY_API_KEY", KEY)
    monkeypatch.delenv("TABLESTORE_MEMORY_AK", raising=False)
    monkeypatch.delenv("TABLESTORE_MEMORY_SK", raising=False)
    store = open_backend(emulator_config(server))
    try:
        assert store._settings.api_key
        store.ensure_store(STORE)
    finally:
        store.close()
    assert emulator_credentials(server).access_key_id  # the pair stays available alongside


def test_the_async_store_uses_the_api_key_too(server: EmulatorServer) -> None:
    async def run() -> None:
        ts = async_store_for(server, credentials=ApiKey(KEY))
        try:
            await ts.ensure_store(STORE)
            receipt = await ts.add_text(STORE, A1, "Runs on Sundays", sync=True)
            got = await ts.get_memory(STORE, A1, receipt.memory_ids[0])
            assert got.text == "Runs on Sundays"
        finally:
            await ts.close()
        bad = async_store_for(server, credentials=ApiKey(WRONG))
        try:
            with pytest.raises(PermissionDenied):
                await bad.list_stores()
        finally:
            await bad.close()

    asyncio.run(run())


# Chaos seeds whose answer is JSON of the wrong shape (0, 3), bytes that are not UTF-8 (16, 18)
# and text that is not JSON (17, 23).
@pytest.mark.parametrize("seed", [0, 3, 16, 17, 18, 23])
def test_an_unreadable_2xx_write_is_sent_once(server: EmulatorServer, seed: int) -> None:
    """The vendor client raises its own error for a 2xx body it cannot parse. As on the
    access-key path, an answer that is the service's (a JSON object with its request id) makes
    the write 'unconfirmed', anything else leaves its outcome unknown; either way it is sent
    exactly once."""
    from memcore.errors import OutcomeUnknown
    from memcore.values import UNCONFIRMED

    with store_for(server, credentials=ApiKey(KEY)) as ts:
        ts.ensure_store(STORE)
        server.set_faults(Faults(chaos=True, apis=("AddMemories",), seed=seed))
        sent: list[object] = []
        send = ts._client.add_memories
        ts._client.add_memories = lambda body: (sent.append(body), send(body))[1]
        try:
            receipt = ts.add_text(STORE, A1, "a fact", sync=True)
        except OutcomeUnknown:
            pass
        else:
            assert receipt.status == UNCONFIRMED and receipt.problem
        assert len(sent) == 1


def test_an_answer_carries_the_request_id_of_its_header(server: EmulatorServer) -> None:
    """The vendor client returns only the body; the store takes each answer's request id from
    its ``x-ots-requestid`` header, as the tablestore SDK does, so an answer is known to be the
    service's (without it a write's outcome would be unknown)."""
    with store_for(server, credentials=ApiKey(KEY)) as ts:
        ts.ensure_store(STORE)
        receipt = ts.add_text(STORE, A1, "Swims on Fridays", sync=True)
        assert receipt.memory_ids
        answer = ts._client.list_memory_stores({})
        assert isinstance(answer.get("requestId"), str) and answer["requestId"]


def test_a_refused_connection_names_the_endpoint_and_ends_early() -> None:
    import socket
    import time

    from memcore.errors import Unavailable

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    started = time.monotonic()
    with (
        TableStoreMemoryStore(
            endpoint, "inst", ApiKey(KEY), timeout=60.0, connect_timeout=0.5
        ) as ts,
        pytest.raises(Unavailable) as caught,
    ):
        ts.list_stores()
    assert str(caught.value).startswith(f"cannot reach {endpoint}: connection refused")
    assert KEY not in str(caught.value)
    assert time.monotonic() - started < 20


def test_without_the_vendor_package_an_api_key_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "tablestore_agent_storage", None)  # import fails
    with pytest.raises(ConfigError) as caught:
        TableStoreMemoryStore("https://inst.cn-hangzhou.ots.aliyuncs.com", "inst", ApiKey(KEY))
    assert "pip install 'tablestore-agent-storage>=1.0.10'" in str(caught.value)


@pytest.mark.parametrize("key", ["emu-api-key-\udcff", "emu-api-key-é", "emu-api-key-\n1"])
def test_a_key_no_header_can_carry_is_refused_before_anything_is_sent(key: str) -> None:
    """A stray byte in ``TABLESTORE_MEMORY_API_KEY`` (an environment not in UTF-8 gives
    ``\\udcff``) failed on the first call as "the service answered with a non-object JSON
    body". It is refused where the key is read, naming the variable, never quoting it."""
    with pytest.raises(PermissionDenied) as caught:
        resolve_auth({"TABLESTORE_MEMORY_API_KEY": key})
    said = str(caught.value)
    assert "TABLESTORE_MEMORY_API_KEY holds a character no HTTP header can carry" in said
    assert "emu-api-key" not in said
