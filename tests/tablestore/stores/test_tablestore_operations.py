"""The operations are declared once (``stores.base``) and the APIs listed once
(``protocol.apis``); both twins, the installed SDK and the emulator agree with them."""

from __future__ import annotations

import inspect

import pytest

from memcore.ports import MemoryStore
from memcore_tablestore.emulator.apis.handlers import TABLE
from memcore_tablestore.protocol import answers
from memcore_tablestore.protocol.apis import APIS, READ_ONLY, SDK_METHODS
from memcore_tablestore.protocol.plans import Plans
from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore
from memcore_tablestore.stores.base import Operation
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore

PORT = sorted(
    name
    for name, value in vars(MemoryStore).items()
    if inspect.isfunction(value) and not name.startswith("_") and name != "close"
)


def _parameters(function: object) -> list[tuple[str, object, object]]:
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


@pytest.mark.parametrize("name", PORT)
def test_both_twins_have_each_port_method_with_the_ports_parameters(name: str) -> None:
    port = _parameters(getattr(MemoryStore, name))
    # Bound to stores that were never connected: only the methods are looked at.
    sync = getattr(object.__new__(TableStoreMemoryStore), name)
    asynchronous = getattr(object.__new__(AsyncTableStoreMemoryStore), name)
    assert _parameters(sync) == port
    assert _parameters(asynchronous) == port
    assert not inspect.iscoroutinefunction(sync)
    assert inspect.iscoroutinefunction(asynchronous)


def test_an_operation_is_declared_under_the_name_of_its_plan() -> None:
    with pytest.raises((TypeError, RuntimeError)) as info:  # RuntimeError before 3.12

        class _Misnamed:
            find = Operation(Plans.search)

    error = info.value.__cause__ or info.value
    assert isinstance(error, TypeError)
    assert "_Misnamed.find is declared with plan search" in str(error)


def test_every_api_has_its_method_on_the_installed_sdk_clients() -> None:
    from tablestore import AsyncOTSClient, OTSClient

    for api in APIS:
        assert callable(getattr(OTSClient, SDK_METHODS[api], None)), api
        assert callable(getattr(AsyncOTSClient, SDK_METHODS[api], None)), api


def test_the_client_the_decoders_and_the_emulator_name_the_same_apis() -> None:
    assert len(APIS) == len(set(APIS)) == 22
    assert set(APIS) == set(answers.DECODERS) == set(TABLE)
    assert set(READ_ONLY) < set(APIS)
    assert all(api.startswith(("Get", "List", "Search")) for api in READ_ONLY)


def test_max_connections_sizes_the_sync_pool_and_none_keeps_the_sdks_default() -> None:
    from tablestore import OTSClient

    from memcore_tablestore.credentials import Credentials

    def pool_size(**options: int) -> int:
        store = TableStoreMemoryStore(
            "http://127.0.0.1:9", "inst", Credentials("a", "b"), **options
        )
        try:
            return int(store._client.connection.pool.connection_pool_kw["maxsize"])
        finally:
            store.close()

    assert pool_size(max_connections=7) == 7
    assert pool_size() == OTSClient.DEFAULT_MAX_CONNECTION
