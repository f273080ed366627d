"""A server stopped (SIGTERM) while tool calls run answers each of them before it exits: a
write that landed is reported as landed, so the client neither loses it nor sends it again."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from mcp_rig import Backend, post, session_headers, token

from memcore_mcp.serve import SHUTDOWN_GRACE


def _result(body: str) -> dict[str, Any]:
    """The JSON-RPC message of an answer, sent as JSON or as one server-sent event."""
    if body.lstrip().startswith("{"):
        return dict(json.loads(body))
    data = [line[len("data:") :] for line in body.splitlines() if line.startswith("data:")]
    assert data, f"no answer in {body!r}"
    return dict(json.loads(data[-1]))


def test_writes_running_when_the_server_is_stopped_are_answered(local_backend: Backend) -> None:
    alice = token()
    answers: dict[int, str] = {}
    with local_backend.http({"alice": alice}) as url:
        server = local_backend.server
        assert server is not None
        headers = session_headers(url, alice)

        def remember(number: int) -> None:
            call = {"name": "remember", "arguments": {"text": f"Fact number {number} to keep"}}
            message = {"jsonrpc": "2.0", "id": 10 + number, "method": "tools/call", "params": call}
            answers[number] = post(url, headers, message)[2]

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
        # Drained, it exits 0, as on stdio (it died by the signal again: -15).
        assert server.wait(timeout=60) == 0

    stored = sqlite3.connect(local_backend.home / "memcore.db")
    landed = {row[0] for row in stored.execute("SELECT id FROM memories")}
    stored.close()
    reported = set()
    for number in range(3):
        result = _result(answers[number])["result"]
        assert not result["isError"], result
        reported.update(result["structuredContent"]["memory_ids"])
    assert len(reported) == 3 and reported == landed


def test_a_stopped_server_exits_in_time_while_a_lock_is_never_released(
    local_backend: Backend,
) -> None:
    """Writes waiting for a lock another process never releases: stopped, the server answers
    them once their wait is over (busy, retryable) and exits; it waits for running calls no
    longer than a write may wait for the lock, and a margin. (Two calls sent with one id, which
    the SDK left waiting for ever, are refused now: tests/mcp/test_mcp_http_ids.py.)"""
    alice = token()
    answers: list[str] = []
    with local_backend.http({"alice": alice}, "--busy-timeout", "3") as url:
        server = local_backend.server
        assert server is not None
        headers = session_headers(url, alice)
        lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")

        def call(number: int) -> None:
            remember = {"name": "remember", "arguments": {"text": f"Fact {number} to keep"}}
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call"}
            answers.append(post(url, headers, {**message, "params": remember})[2])

        calls = [threading.Thread(target=call, args=(n,), daemon=True) for n in range(2)]
        for one in calls:
            one.start()
        time.sleep(1)
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=3 + SHUTDOWN_GRACE + 20) == 0  # each call answered (busy)
        assert time.monotonic() - started < 3 + SHUTDOWN_GRACE
        for one in calls:
            one.join(timeout=10)
        lock.close()
    assert len(answers) == 2
    for answer in answers:
        result = _result(answer)["result"]
        assert result["isError"] and result["structuredContent"]["error"]["retryable"], result


def test_a_write_whose_client_went_during_the_stop_still_lands_once(
    local_backend: Backend,
) -> None:
    """A ``remember`` waiting for the lock, SIGTERM, then the client goes before the answer:
    the server still finishes the write it accepted (once), then exits 0."""
    alice = token()
    with local_backend.http({"alice": alice}) as url:
        server = local_backend.server
        assert server is not None
        headers = session_headers(url, alice)
        lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        parts = urlsplit(url)
        call = {"name": "remember", "arguments": {"text": "The user left in a hurry"}}
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call})
        head = f"POST {parts.path} HTTP/1.1\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in {**headers, "Host": parts.netloc}.items())
        client = socket.create_connection((parts.hostname, parts.port))
        client.sendall(f"{head}\r\n{body}".encode())
        time.sleep(1.5)  # the call waits for the lock
        server.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        client.close()  # gone before its answer
        time.sleep(0.5)
        lock.execute("ROLLBACK")
        lock.close()
        assert server.wait(timeout=60) == 0
    stored = sqlite3.connect(local_backend.home / "memcore.db")
    texts = [row[0] for row in stored.execute("SELECT text FROM memories")]
    stored.close()
    assert texts == ["The user left in a hurry"]
