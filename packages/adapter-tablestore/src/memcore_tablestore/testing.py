"""Helpers for tests and local development against the loopback emulator.

``running_emulator()`` starts an :class:`EmulatorServer` (over the in-memory fake unless a
store is given) and stops it afterwards; ``store_for(server)`` and ``async_store_for(server)``
build adapters pointed at it with the emulator's credentials.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from memcore.ports import MemoryStore
from memcore_tablestore.credentials import Credentials
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.emulator.auth import Identity
from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore


@contextmanager
def running_emulator(store: MemoryStore | None = None, **kwargs: Any) -> Iterator[EmulatorServer]:
    """An emulator on 127.0.0.1 (a free port) for the ``with`` block; ``kwargs`` go to
    :class:`EmulatorServer` (``faults=``, ``envelope=``, ``record_requests=``, ...)."""
    if store is None:
        from memcore.testing import InMemoryMemoryStore

        store = InMemoryMemoryStore()
    server = EmulatorServer(store, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@attrs.frozen
class SpawnedEmulator:
    """An emulator in a child process (for benchmarks: no GIL shared with the client)."""

    url: str
    port: int
    instance_name: str
    identity: Identity


@contextmanager
def spawned_emulator(faults: Faults | None = None) -> Iterator[SpawnedEmulator]:
    """Run ``python -m memcore_tablestore.emulator`` over the in-memory fake until the block ends."""
    spec = json.dumps((faults or Faults()).to_dict())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memcore_tablestore.emulator",
            "--faults",
            spec,
            "--until-stdin-closes",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield SpawnedEmulator(
            info["url"],
            info["port"],
            info["instance_name"],
            Identity("emu-ak", "emu-sk", info["instance_name"]),
        )
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sdk_for(server: EmulatorServer | SpawnedEmulator, **kwargs: Any) -> Any:
    """The unmodified SDK's ``OTSClient`` for ``server``, without retries (``kwargs`` go to
    the client): for tests that must not go through memcore's adapter."""
    from tablestore import OTSClient

    identity = server.identity
    kwargs.setdefault("retry_policy", None)
    return OTSClient(
        server.url,
        identity.access_key_id,
        identity.access_key_secret,
        server.instance_name,
        sts_token=identity.security_token,
        **kwargs,
    )


def refusal(call: Callable[[], Any]) -> tuple[int, str]:
    """The HTTP status and error code of the service error ``call`` raises (an
    ``AssertionError`` if it raises none)."""
    from tablestore.error import OTSServiceError

    try:
        call()
    except OTSServiceError as exc:
        return exc.get_http_status(), exc.get_error_code()
    raise AssertionError("the call was not refused")


def emulator_credentials(server: EmulatorServer | SpawnedEmulator) -> Credentials:
    identity = server.identity
    return Credentials(identity.access_key_id, identity.access_key_secret, identity.security_token)


def store_for(server: EmulatorServer | SpawnedEmulator, **kwargs: Any) -> TableStoreMemoryStore:
    """A :class:`TableStoreMemoryStore` for ``server``; ``kwargs`` go to the constructor
    (``timeout=``, ``retry=``, ``region=``, ``credentials=`` to use other keys)."""
    credentials = kwargs.pop("credentials", None) or emulator_credentials(server)
    kwargs.setdefault("timeout", 10.0)
    return TableStoreMemoryStore(server.url, server.instance_name, credentials, **kwargs)


def async_store_for(
    server: EmulatorServer | SpawnedEmulator, **kwargs: Any
) -> AsyncTableStoreMemoryStore:
    """The asyncio twin of :func:`store_for`; build it inside the event loop that uses it."""
    credentials = kwargs.pop("credentials", None) or emulator_credentials(server)
    kwargs.setdefault("timeout", 10.0)
    return AsyncTableStoreMemoryStore(server.url, server.instance_name, credentials, **kwargs)


def emulator_config(server: EmulatorServer, **changes: Any) -> Any:
    """A :class:`MemcoreConfig` naming ``server`` (use with ``open_backend(config,
    credentials=emulator_credentials(server))``)."""
    from memcore.config import MemcoreConfig

    return MemcoreConfig(
        endpoint=server.url, instance_name=server.instance_name, backend="tablestore", **changes
    )


__all__ = [
    "SpawnedEmulator",
    "async_store_for",
    "emulator_config",
    "emulator_credentials",
    "refusal",
    "running_emulator",
    "sdk_for",
    "spawned_emulator",
    "store_for",
]
