"""On HTTP, each tenant holds at most so many event streams open at once.

Two kinds of request are answered with a stream that stays open until the client goes: a
``GET`` (the standalone stream of a session, one per session) and a ``subscriptions/listen``
request (the protocol revision without sessions: any number, outside the session limit).
Neither is bound by the request deadline (:mod:`memcore_mcp.deadline`), which ends once a
request has arrived whole. So one tenant could hold a connection, and a file descriptor, for
each of its 1,000 sessions, and more through ``subscriptions/listen``, and take every
descriptor of a process limited to the common 1,024, locking every other tenant out. Here a
stream past the tenant's budget is refused at once (429: this tenant's own count, not the
server, is the reason; a JSON-RPC error), and a stream's place is given back when its request
ends: the client went, its session was deleted, or the server stopped. The SDK's client
treats the ``GET`` stream as optional: refused, it tries once more and goes on sending
requests.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from mcp.types import INVALID_REQUEST
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memcore_mcp.distinct import read_body

#: The JSON-RPC method whose answer is a stream of notifications.
LISTEN = "subscriptions/listen"


class StreamBudget:
    """ASGI middleware: a tenant holds at most ``per_tenant`` streams open at once.
    ``tenant_of`` gives the tenant of an ``Authorization`` header (None: no valid token, which
    the SDK refuses itself)."""

    def __init__(
        self, app: ASGIApp, tenant_of: Callable[[str], str | None], per_tenant: int
    ) -> None:
        self.app = app
        self.tenant_of = tenant_of
        self.per_tenant = per_tenant
        self._open: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method") if scope["type"] == "http" else None
        if method not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        tenant = self.tenant_of(header.decode("latin-1"))
        if tenant is None:
            await self.app(scope, receive, send)
            return
        request_id: int | str | None = None
        if method == "GET":
            scope = _fresh(scope)
        elif method == "POST":
            body, receive = await read_body(receive)
            listen, request_id = _listen(body)
            if not listen:
                await self.app(scope, receive, send)
                return
        if self._open[tenant] >= self.per_tenant:
            await self._refuse(request_id, scope, receive, send)
            return
        self._open[tenant] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._open[tenant] -= 1
            if not self._open[tenant]:
                del self._open[tenant]

    async def _refuse(
        self, request_id: int | str | None, scope: Scope, receive: Receive, send: Send
    ) -> None:
        message = (
            f"Too many open streams: this tenant holds {self.per_tenant}, the most it may "
            "hold at once; close one, or send requests without a stream"
        )
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": INVALID_REQUEST, "message": message},
        }
        await JSONResponse(body, status_code=429)(scope, receive, send)


def _fresh(scope: Scope) -> Scope:
    """``scope`` without ``Last-Event-ID``: the server keeps no events to replay (it gives
    none an id), and the SDK answered a GET asking to resume with nothing at all, which
    uvicorn sent as a bare 500. The protocol leaves replaying to the server: the stream is
    opened afresh instead."""
    headers = [(k, v) for k, v in scope["headers"] if k != b"last-event-id"]
    return {**scope, "headers": headers} if len(headers) < len(scope["headers"]) else scope


def _listen(body: bytes | None) -> tuple[bool, int | str | None]:
    """Whether ``body`` is a ``subscriptions/listen`` request, and its id. Only a body that
    may name the method is parsed: one holding it as written, or a JSON escape that could
    spell it otherwise (any letter as ``\\u0073``, the slash as ``\\/``), which the SDK
    decodes alike: a listen spelled so was never counted."""
    if body is None or not (LISTEN.encode() in body or b"\\u" in body or b"\\/" in body):
        return False, None
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return False, None
    if not isinstance(data, dict) or data.get("method") != LISTEN:
        return False, None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return True, request_id


__all__ = ["LISTEN", "StreamBudget"]
