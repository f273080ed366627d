"""Alibaba Cloud TableStore Memory Store adapter for memcore, with a loopback emulator.

Importing this package is cheap: the SDK (and urllib3, aiohttp) load only when a store is
built, so hosts can import it at start-up without paying for the cloud client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore_tablestore.async_store import AsyncTableStoreMemoryStore
    from memcore_tablestore.backend import open_backend
    from memcore_tablestore.credentials import Credentials, resolve_credentials
    from memcore_tablestore.store import TableStoreMemoryStore

_EXPORTS = {
    "TableStoreMemoryStore": "memcore_tablestore.store",
    "AsyncTableStoreMemoryStore": "memcore_tablestore.async_store",
    "Credentials": "memcore_tablestore.credentials",
    "resolve_credentials": "memcore_tablestore.credentials",
    "open_backend": "memcore_tablestore.backend",
}

__all__ = [
    "AsyncTableStoreMemoryStore",
    "Credentials",
    "TableStoreMemoryStore",
    "open_backend",
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
