"""An endpoint nobody listens on: a named error within the connect timeout, not the call timeout."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import pytest

from memcore.errors import ConfigError, Unavailable
from memcore_tablestore import AsyncTableStoreMemoryStore, Credentials, TableStoreMemoryStore

CREDS = Credentials("ak-unreachable", "sk-unreachable-secret")


@pytest.fixture
def closed_endpoint() -> Iterator[str]:
    """A loopback port that was just free: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


def test_a_refused_connection_names_the_endpoint_and_ends_early(closed_endpoint: str) -> None:
    store = TableStoreMemoryStore(closed_endpoint, "inst", CREDS, timeout=60.0, connect_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(Unavailable) as info:
        store.list_stores()
    elapsed = time.monotonic() - started
    assert str(info.value).startswith(f"cannot reach {closed_endpoint}: connection refused")
    assert "sk-unreachable-secret" not in str(info.value)
    # Retried only within the connect timeout, far from the 60 s call timeout.
    assert elapsed < 20, elapsed
    store.close()


def test_the_async_store_names_the_endpoint_too(closed_endpoint: str) -> None:
    async def call() -> None:
        store = AsyncTableStoreMemoryStore(
            closed_endpoint, "inst", CREDS, timeout=60.0, connect_timeout=0.5
        )
        try:
            await store.list_stores()
        finally:
            await store.close()

    with pytest.raises(Unavailable) as info:
        asyncio.run(call())
    assert str(info.value).startswith(f"cannot reach {closed_endpoint}: ")


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("-inf"), float("nan"), True, "3"])
@pytest.mark.parametrize("field", ["timeout", "connect_timeout", "ready_timeout"])
def test_a_bad_number_of_seconds_is_a_config_error(field: str, bad: object) -> None:
    for store in (TableStoreMemoryStore, AsyncTableStoreMemoryStore):
        with pytest.raises(ConfigError) as info:
            store("http://127.0.0.1:1", "inst", CREDS, **{field: bad})
        assert info.value.field == field
        assert "positive, finite number of seconds" in str(info.value)
