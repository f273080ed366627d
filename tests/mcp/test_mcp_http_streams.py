"""One tenant cannot hold every connection the HTTP server can keep through event streams: a
session's GET stream and a ``subscriptions/listen`` request stay open until the client goes,
so each tenant holds at most its own budget of them; past it the next is refused at once
(429), another tenant still gets its stream, and a stream that ends gives its place back. The
SDK's own client, its GET stream refused, goes on with its calls."""

from __future__ import annotations

import http.client
import json
import logging
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp_rig import INITIALIZE, Backend, http_session, payload, token

from memcore_mcp.serve import DEFAULT_BUSY_TIMEOUT, SHUTDOWN_GRACE, STREAMS_PER_TENANT
from memcore_mcp.streams import LISTEN

VERSION = "2025-06-18"
#: The protocol revision without sessions, whose ``subscriptions/listen`` is a stream.
MODERN = "2026-07-28"


class Tenant:
    """Raw requests for one token: sessions on one kept-alive connection, each stream on a
    socket of its own (left open until closed here)."""

    def __init__(self, url: str, secret: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port or 80, parts.path
        self.secret = secret
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def _headers(self, session: str | None = None) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self.secret}",
        }
        if session is not None:
            headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": VERSION}
        return headers

    def send(self, method: str, body: Any = None, session: str | None = None) -> tuple:
        data = None if body is None else json.dumps(body)
        self.connection.request(method, self.path, body=data, headers=self._headers(session))
        response = self.connection.getresponse()
        return response.status, response.getheader("mcp-session-id"), response.read()

    def session(self) -> str:
        status, session, _ = self.send("POST", INITIALIZE)
        assert status == 200
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.send("POST", initialized, session)[0] == 202
        return str(session)

    def stream(
        self,
        method: str,
        session: str | None,
        body: Any = None,
        *,
        spelled: dict[str, str] | None = None,
        **extra: str,
    ) -> tuple[Any, ...]:
        """A request whose answer may be a stream: its socket, status, headers, and (when it
        is not a stream) its body. ``spelled`` writes some of the body's JSON text otherwise
        (the same value with other escapes)."""
        text = "" if body is None else json.dumps(body)
        for plain, other in (spelled or {}).items():
            text = text.replace(plain, other)
        data = text.encode()
        headers = self._headers(session) | {"Host": f"{self.host}:{self.port}"} | extra
        if method == "GET":
            headers["Accept"] = "text/event-stream"
        head = f"{method} {self.path} HTTP/1.1\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(data)}\r\n\r\n"
        sock = socket.create_connection((self.host, self.port), timeout=30)
        sock.sendall(head.encode() + data)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = sock.recv(65536)
            assert chunk, got
            got += chunk
        raw, rest = got.split(b"\r\n\r\n", 1)
        status = int(raw.split(b" ", 2)[1])
        fields = dict(line.split(": ", 1) for line in raw.decode().split("\r\n")[1:])
        fields = {k.lower(): v for k, v in fields.items()}
        if "content-length" in fields:
            while len(rest) < int(fields["content-length"]):
                rest += sock.recv(65536)
            sock.close()
            return sock, status, fields, json.loads(rest)
        return sock, status, fields, None

    def get(self, session: str) -> tuple[Any, ...]:
        return self.stream("GET", session)

    def listen(self, request_id: int, method: str = f'"{LISTEN}"') -> tuple[Any, ...]:
        """A ``subscriptions/listen`` request, as the SDK's sessionless protocol sends it (it
        has no such method in a session); ``method``: the method name as its JSON text."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": LISTEN,
            "params": {"notifications": {"toolsListChanged": True}, "_meta": meta},
        }
        modern = {"Mcp-Protocol-Version": MODERN, "Mcp-Method": LISTEN}
        spelled = {f'"method": "{LISTEN}"': f'"method": {method}'}
        return self.stream("POST", None, body, spelled=spelled, **modern)


def _refused(answer: tuple[Any, ...], request_id: int | None = None) -> None:
    _, status, fields, body = answer
    assert status == 429, answer
    assert fields["content-type"] == "application/json"
    assert body["id"] == request_id
    assert body["error"]["message"].startswith("Too many open streams: this tenant holds 32")


def _opened(answer: tuple[Any, ...]) -> Any:
    sock, status, fields, _ = answer
    assert status == 200, answer
    assert fields["content-type"].startswith("text/event-stream")
    return sock


def _eventually_opened(tenant: Tenant, session: str) -> Any:
    """A GET stream, once the place of one that ended is given back (the server hears of a
    client that went a moment later)."""
    deadline = time.monotonic() + 10
    while True:
        answer = tenant.get(session)
        if answer[1] == 200 or time.monotonic() > deadline:
            return _opened(answer)
        time.sleep(0.1)


def _wait_ended(sock: socket.socket) -> None:
    """Wait for the server to end the stream on ``sock`` (its last chunk, or closing it); a
    stream still open after 10 s fails."""
    sock.settimeout(10)
    got = b""
    while not got.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            return
        got += chunk


def test_a_tenant_holds_its_budget_of_streams_and_the_others_theirs(
    local_backend: Backend,
) -> None:
    alice_token, bob_token = token(), token()
    with local_backend.http({"alice": alice_token, "bob": bob_token}) as url:
        alice, bob = Tenant(url, alice_token), Tenant(url, bob_token)
        sessions = [alice.session() for _ in range(STREAMS_PER_TENANT + 1)]
        streams = [_opened(alice.get(session)) for session in sessions[:-1]]

        spare = sessions[-1]
        _refused(alice.get(spare))
        _refused(alice.listen(7), 7)
        # The refused session itself is served; only its stream is not.
        ping = {"jsonrpc": "2.0", "id": 8, "method": "ping"}
        assert alice.send("POST", ping, spare)[0] == 200

        bobs = _opened(bob.get(bob.session()))

        streams.pop().close()  # a client that goes gives its place back
        streams.append(_eventually_opened(alice, spare))
        _refused(alice.get(alice.session()))

        first = sessions[0]
        assert alice.send("DELETE", session=first)[0] == 200  # so does a deleted session
        _wait_ended(streams[0])
        _eventually_opened(alice, alice.session())
        bobs.close()


def test_a_listen_stream_counts_and_gives_its_place_back(local_backend: Backend) -> None:
    alice_token = token()
    with local_backend.http({"alice": alice_token}) as url:
        alice = Tenant(url, alice_token)
        sessions = [alice.session() for _ in range(STREAMS_PER_TENANT)]
        streams = [_opened(alice.get(session)) for session in sessions[:-1]]
        listening = _opened(alice.listen(3))
        _refused(alice.get(sessions[-1]))
        listening.close()
        _eventually_opened(alice, sessions[-1])
        for sock in streams:
            sock.close()


def test_a_listen_stream_counts_however_its_method_is_escaped(local_backend: Backend) -> None:
    """JSON may write any character of the method name as an escape, which the SDK decodes
    alike: a listen written so was never counted, and one tenant held as many streams as it
    sent."""
    alice_token = token()
    with local_backend.http({"alice": alice_token}) as url:
        alice = Tenant(url, alice_token)
        sessions = [alice.session() for _ in range(STREAMS_PER_TENANT)]
        streams = [_opened(alice.get(session)) for session in sessions[:-2]]
        streams.append(_opened(alice.listen(3, '"subscriptions\\/listen"')))
        streams.append(_opened(alice.listen(4, '"\\u0073ubscriptions/listen"')))
        _refused(alice.listen(5, '"subscriptions\\u002flisten"'), 5)
        _refused(alice.listen(6), 6)
        _refused(alice.get(sessions[-1]))
        for sock in streams:
            sock.close()


def test_the_sdk_client_works_on_when_its_stream_is_refused(
    local_backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp.client.streamable_http")
    alice_token = token()
    with local_backend.http({"alice": alice_token}) as url:
        alice = Tenant(url, alice_token)
        streams = [_opened(alice.get(alice.session())) for _ in range(STREAMS_PER_TENANT)]

        async def use() -> tuple[Any, Any]:
            async with http_session(url, alice_token) as session:
                await anyio.sleep(2.5)  # its GET is refused, tried again, and given up
                stored = await session.call_tool("remember", {"text": "I keep bees"})
                found = await session.call_tool("recall", {"query": "bees"})
                return payload(stored), payload(found)

        stored, found = anyio.run(use)
        assert stored["memory_ids"], stored
        assert [hit["text"] for hit in found["results"]] == ["I keep bees"]
        refusals = [r for r in caplog.records if r.exc_info and "429" in str(r.exc_info[1])]
        assert [r.getMessage() for r in refusals] == ["GET stream error"] * 2  # tried twice
        _refused(alice.get(alice.session()))  # the client holds no stream past the budget
        for sock in streams:
            sock.close()


def test_a_stopped_server_ends_its_streams_and_exits_at_once(local_backend: Backend) -> None:
    alice_token = token()
    with local_backend.http({"alice": alice_token}) as url:
        server = local_backend.server
        assert server is not None
        alice = Tenant(url, alice_token)
        listening = _opened(alice.listen(3))
        streaming = _opened(alice.get(alice.session()))
        time.sleep(0.5)
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=SHUTDOWN_GRACE + DEFAULT_BUSY_TIMEOUT + 20)
        # Neither stream is a call that will end by itself: waiting for them was no use.
        assert time.monotonic() - started < SHUTDOWN_GRACE
        listening.settimeout(5)
        told = b""
        while chunk := listening.recv(65536):
            told += chunk
        # The listen stream ended as the protocol says: its result as the last frame.
        last = json.loads(told.split(b"data: ")[-1].split(b"\r\n")[0])
        assert last["id"] == 3 and "result" in last, told
        streaming.close()


def test_a_stream_asked_to_resume_is_opened_afresh(local_backend: Backend) -> None:
    """A GET carrying ``Last-Event-ID`` opens the session's stream as any GET does."""
    alice_token = token()
    with local_backend.http({"alice": alice_token}) as url:
        alice = Tenant(url, alice_token)
        session = alice.session()
        # The server keeps no events to replay (it sends no event ids): the SDK answered such
        # a GET with nothing at all, which uvicorn turned into a bare 500.
        resumed = _opened(alice.stream("GET", session, **{"Last-Event-ID": "5"}))
        _, status, _, body = alice.get(session)  # it is the session's one stream
        assert status == 409, body
        resumed.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_server_raises_its_descriptor_limit_to_the_hard_one(local_backend: Backend) -> None:
    """Started with a soft limit on open files under the hard one (1,024 is usual), about 30
    tenants holding their 32 streams took every descriptor; it now serves with the hard one."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if wanted <= 128:
        pytest.skip("no room under the hard limit to start lower")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, wanted))

    with local_backend.http({"alice": token()}, preexec_fn=limited):
        server = local_backend.server
        assert server is not None
        limits = Path(f"/proc/{server.pid}/limits").read_text(encoding="utf-8")
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        assert line.split()[3:5] == [str(wanted), str(wanted)], line
