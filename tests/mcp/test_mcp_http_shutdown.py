"""A server stopped (SIGTERM) while tool calls run answers each of them before it exits: a
write that landed is reported as landed, so the client neither loses it nor sends it again."""

from __future__ import annotations

import http.client
import json
import signal
import sqlite3
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from mcp_rig import INITIALIZE, Backend, token

from memcore_mcp.serve import SHUTDOWN_GRACE


def _post(url: str, headers: dict[str, str], message: dict[str, Any]) -> tuple[int, dict, str]:
    """One request on its own connection: status, headers (lower-case) and body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        connection.request("POST", parts.path, body=json.dumps(message), headers=headers)
        response = connection.getresponse()
        body = response.read().decode("utf-8")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        connection.close()


def _result(body: str) -> dict[str, Any]:
    """The JSON-RPC message of an answer, sent as JSON or as one server-sent event."""
    if body.lstrip().startswith("{"):
        return dict(json.loads(body))
    data = [line[len("data:") :] for line in body.splitlines() if line.startswith("data:")]
    assert data, f"no answer in {body!r}"
    return dict(json.loads(data[-1]))


def test_writes_running_when_the_server_is_stopped_are_answered(local_backend: Backend) -> None:
    alice = token()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {alice}",
    }
    answers: dict[int, str] = {}
    with local_backend.http({"alice": alice}) as url:
        server = local_backend.server
        assert server is not None
        status, got, _ = _post(url, headers, INITIALIZE)
        assert status == 200
        headers = {**headers, "Mcp-Session-Id": got["mcp-session-id"]}
        headers["Mcp-Protocol-Version"] = "2025-06-18"
        _post(url, headers, {"jsonrpc": "2.0", "method": "notifications/initialized"})

        def remember(number: int) -> None:
            call = {"name": "remember", "arguments": {"text": f"Fact number {number} to keep"}}
            message = {"jsonrpc": "2.0", "id": 10 + number, "method": "tools/call", "params": call}
            answers[number] = _post(url, headers, message)[2]

        # Another process holds the write lock: the writes wait in the server until it goes.
        lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        calls = [threading.Thread(target=remember, args=(n,)) for n in range(3)]
        for call in calls:
            call.start()
        time.sleep(2)  # the calls have reached the server and wait for the lock
        server.send_signal(signal.SIGTERM)
        time.sleep(1.5)  # the server has begun to stop
        lock.execute("ROLLBACK")
        lock.close()
        for call in calls:
            call.join(timeout=60)
        server.wait(timeout=60)

    stored = sqlite3.connect(local_backend.home / "memcore.db")
    landed = {row[0] for row in stored.execute("SELECT id FROM memories")}
    stored.close()
    reported = set()
    for number in range(3):
        result = _result(answers[number])["result"]
        assert not result["isError"], result
        reported.update(result["structuredContent"]["memory_ids"])
    assert len(reported) == 3 and reported == landed


def test_a_call_that_never_ends_does_not_keep_a_stopped_server_running(
    local_backend: Backend,
) -> None:
    """Two calls sent with one id at once: the SDK routes the answer to one of them only, and
    the other waits for ever. Stopped, the server waits for running calls only so long (the
    longest a write waits for the lock, and a margin), then exits."""
    alice = token()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {alice}",
    }
    with local_backend.http({"alice": alice}, "--busy-timeout", "0") as url:
        server = local_backend.server
        assert server is not None
        _, got, _ = _post(url, headers, INITIALIZE)
        headers = {**headers, "Mcp-Session-Id": got["mcp-session-id"]}
        headers["Mcp-Protocol-Version"] = "2025-06-18"
        _post(url, headers, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        ping = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
        ping["params"] = {"name": "list_memories", "arguments": {}}

        def call() -> None:
            try:
                _post(url, headers, ping)
            except OSError:
                pass  # the server went: what this test waits for

        calls = [threading.Thread(target=call, daemon=True) for _ in range(2)]
        for one in calls:
            one.start()
        time.sleep(2)
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=SHUTDOWN_GRACE + 20)
        assert time.monotonic() - started < SHUTDOWN_GRACE + 20
