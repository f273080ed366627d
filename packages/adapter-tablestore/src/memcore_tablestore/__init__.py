"""Alibaba Cloud TableStore Memory Store adapter for memcore, with a loopback emulator.

Importing this package is cheap: the SDK (and urllib3, aiohttp) load only when a store is
built, so hosts can import it at start-up without paying for the cloud client.

Folders, each importing only those below it (checked by the ``layers`` contract in the
repository's ``pyproject.toml``)::

    testing.py      stores pointed at a running emulator, for tests and local development
    provisioning/   first run: buy an instance, save it in the config, wait until it serves
    backend.py      the ``memcore.backends`` entry point: a store from a config
    stores/         the ``MemoryStore`` port, sync and async, driving the plans
    live_check.py   ``memcore doctor --live``: the read-only APIs against a real store
    client/         the vendor SDK clients, one attempt's errors, retry and backoff
    emulator/       a loopback Memory Store and control plane the unmodified SDK talks to
    protocol/       sans-IO: the API list, plans, request bodies, answer decoders
    credentials.py  API key or access key pair, never shown
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memcore_tablestore.client.sdk_import import import_sdk_quietly

if TYPE_CHECKING:
    from memcore_tablestore.backend import open_backend
    from memcore_tablestore.credentials import (
        ApiKey,
        Credentials,
        resolve_auth,
        resolve_credentials,
    )
    from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore
    from memcore_tablestore.stores.sync_store import TableStoreMemoryStore

_EXPORTS = {
    "TableStoreMemoryStore": "memcore_tablestore.stores.sync_store",
    "AsyncTableStoreMemoryStore": "memcore_tablestore.stores.async_store",
    "ApiKey": "memcore_tablestore.credentials",
    "Credentials": "memcore_tablestore.credentials",
    "resolve_auth": "memcore_tablestore.credentials",
    "resolve_credentials": "memcore_tablestore.credentials",
    "open_backend": "memcore_tablestore.backend",
}

__all__ = [
    "ApiKey",
    "AsyncTableStoreMemoryStore",
    "Credentials",
    "TableStoreMemoryStore",
    "import_sdk_quietly",
    "open_backend",
    "resolve_auth",
    "resolve_credentials",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memcore_tablestore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
