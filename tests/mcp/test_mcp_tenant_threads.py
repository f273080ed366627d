"""On HTTP each tenant's calls run on worker threads of their own: one tenant's calls waiting
(here for a lock another process holds) no longer take every thread, so another tenant's
calls are answered meanwhile. The SDK's way gave all tenants one pool of 40 threads, and a
tenant with 40 calls waiting made every other tenant wait until they were done."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any

from mcp_rig import Backend, post, session_headers, token

#: More calls than the SDK's shared pool has threads.
FLOOD = 45
BUSY_TIMEOUT = 15


def _post(url: str, headers: dict[str, str], message: dict[str, Any]) -> tuple[int, dict, Any]:
    status, got, body = post(url, headers, message, timeout=120)
    return status, got, json.loads(body) if body else None


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_one_tenants_waiting_calls_do_not_hold_up_another_tenant(local_backend: Backend) -> None:
    alice, bob = token(), token()
    flags = ("--busy-timeout", str(BUSY_TIMEOUT))
    with local_backend.http({"alice": alice, "bob": bob}, *flags) as url:
        alice_session, bob_session = session_headers(url, alice), session_headers(url, bob)
        lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        flood = [
            threading.Thread(
                target=_post,
                args=(url, alice_session, _call(n, "remember", {"text": f"Fact {n} to keep"})),
                daemon=True,
            )
            for n in range(FLOOD)
        ]
        try:
            for one in flood:
                one.start()
            time.sleep(3)  # alice's calls have reached the server and wait for the lock
            started = time.monotonic()
            status, _, body = _post(url, bob_session, _call(1, "list_memories", {}))
            waited = time.monotonic() - started
        finally:
            lock.execute("ROLLBACK")
            lock.close()
            for one in flood:
                one.join(timeout=120)
    assert status == 200 and not body["result"]["isError"], body
    assert waited < 5, f"bob waited {waited:.1f} s for alice's calls"
