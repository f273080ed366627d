"""On HTTP, a request sent with the id of one still running in its session is refused at once
(409, a JSON-RPC invalid-request error for that id); the running one is answered. The SDK
routed the answer by id, so one of the two POSTs waited for ever and one answer was dropped."""

from __future__ import annotations

import http.client
import json
import sqlite3
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from mcp_rig import Backend, post, session_headers, token

INVALID_REQUEST = -32600


def _post(url: str, headers: dict[str, str], message: dict[str, Any]) -> tuple[int, dict, Any]:
    """One request on its own connection: status, headers (lower-case) and JSON body."""
    status, got, body = post(url, headers, message)
    return status, got, json.loads(body) if body else None


def _post_twice_named(
    url: str, headers: dict[str, str], extra: tuple[str, str], message: dict[str, Any]
) -> tuple[int, Any]:
    """As :func:`_post`, with the header ``extra`` sent after ``headers`` (a second copy)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        body = json.dumps(message).encode()
        connection.putrequest("POST", parts.path)
        for name, value in [*headers.items(), extra, ("Content-Length", str(len(body)))]:
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, json.loads(response.read().decode("utf-8"))
    finally:
        connection.close()


def _remember(request_id: int | str, text: str) -> dict[str, Any]:
    call = {"name": "remember", "arguments": {"text": text}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}


def test_a_second_request_with_a_running_id_is_refused_and_the_first_answered(
    local_backend: Backend,
) -> None:
    alice, bob = token(), token()
    with local_backend.http({"alice": alice, "bob": bob}) as url:
        headers = session_headers(url, alice)
        first: dict[str, Any] = {}

        def run_first() -> None:
            status, _, body = _post(url, headers, _remember(5, "I keep bees"))
            first.update(status=status, body=body)

        # Another process holds the write lock: the first write waits in the server.
        lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        thread = threading.Thread(target=run_first)
        thread.start()
        time.sleep(2)  # the first call has reached the server and waits for the lock
        started = time.monotonic()
        for same in (5, "5"):  # the SDK keys ids as text: "5" is the same id
            status, _, body = _post(url, headers, _remember(same, "I keep wasps"))
            assert status == 409, body
            assert body["id"] == same and body["error"]["code"] == INVALID_REQUEST, body
            assert "still running" in body["error"]["message"]
        # The SDK goes by the first session header; a second one does not get past.
        extra = ("Mcp-Session-Id", "not-a-session")
        status, body = _post_twice_named(url, headers, extra, _remember(5, "I keep ants"))
        assert status == 409 and body["id"] == 5, body
        assert time.monotonic() - started < 10  # refused at once, not after the first
        # Another session, of another tenant, may use the same id meanwhile.
        status, _, body = _post(
            url, session_headers(url, bob), {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        )
        assert status == 200 and body == {"jsonrpc": "2.0", "id": 5, "result": {}}, body
        lock.execute("ROLLBACK")
        lock.close()
        thread.join(timeout=60)
        assert first["status"] == 200, first
        result = first["body"]["result"]
        assert not result["isError"], result
        # Once answered, the id may be used again.
        status, _, body = _post(url, headers, _remember(5, "I keep hornets"))
        assert status == 200 and not body["result"]["isError"], body

    stored = sqlite3.connect(local_backend.home / "memcore.db")
    texts = sorted(row[0] for row in stored.execute("SELECT text FROM memories"))
    stored.close()
    assert texts == ["I keep bees", "I keep hornets"]


def test_a_request_with_an_id_no_client_can_match_is_answered_as_invalid(
    local_backend: Backend,
) -> None:
    """The SDK took a request whose id was null, a float, a boolean, a list or an object for
    a notification (an empty 202: its client waits on that id for ever), and a batch or a
    null body for invalid params, with a pydantic dump; stdio answered both as invalid
    requests. HTTP now does too, and runs nothing."""
    alice = token()
    with local_backend.http({"alice": alice}) as url:
        headers = session_headers(url, alice)
        for bad in (None, 1.5, True, [1], {}):
            status, _, body = _post(url, headers, {**_remember(0, "x"), "id": bad})
            assert status == 400, (bad, body)
            assert body["id"] is None and body["error"]["code"] == INVALID_REQUEST, body
            assert "string or an integer" in body["error"]["message"], body
        for whole in ([_remember(1, "x")], None):
            status, _, body = _post(url, headers, whole)  # type: ignore[arg-type]
            assert status == 400 and body["error"]["code"] == INVALID_REQUEST, (whole, body)
            assert "pydantic" not in body["error"]["message"], body
        status, _, body = _post(url, headers, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
        assert status == 200 and body == {"jsonrpc": "2.0", "id": 7, "result": {}}, body
    stored = sqlite3.connect(local_backend.home / "memcore.db")
    assert stored.execute("SELECT COUNT(*) FROM memories").fetchone() == (0,)
    stored.close()
