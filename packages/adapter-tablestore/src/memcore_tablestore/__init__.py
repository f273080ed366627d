"""Alibaba Cloud TableStore Memory Store adapter for memcore, with a loopback emulator.

Importing this package is cheap: the SDK (and urllib3, aiohttp) load only when a store is
built, so hosts can import it at start-up without paying for the cloud client.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

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
    "open_backend",
    "resolve_auth",
    "resolve_credentials",
]


def import_sdk_quietly() -> None:
    """Import the ``tablestore`` SDK without its start-up noise on our streams.

    On import the SDK logs "Native C++ encoder/decoder not available" (shown by Python's
    last-resort handler when the host configured none) and its native module may write to
    fd 1, which would corrupt ``--json`` output. Those two loggers keep their errors only, and
    fd 1 points at stderr for the duration of the import. Later imports are free.
    """
    if "tablestore" in sys.modules:
        return
    for name in ("tablestore.encoder", "tablestore.decoder"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with _stdout_to_stderr():
        importlib.import_module("tablestore")


@contextlib.contextmanager
def _stdout_to_stderr() -> Any:
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real fd 1 (an embedding host): nothing to guard
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memcore_tablestore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
