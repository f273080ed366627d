"""On HTTP, a request sent with the id of one still running in its session is refused, and so
is an invalid request the SDK would not answer rightly (:func:`_invalid`).

The SDK's streamable HTTP transport routes an answer to the POST waiting on its id (as text:
``5`` and ``"5"`` are one id there). A second request with the id of one still running took
the first one's place: the first POST then waited for ever, and the second got whichever
answer came first; the other was dropped, a write that landed among them. JSON-RPC says a
client must not do this, but a client that does is told so here: the second request is
answered at once with an invalid-request error (HTTP 409), and never reaches the server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.types import INVALID_REQUEST
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("latin-1")


class DistinctIds:
    """ASGI middleware: at most one request per id runs in a session of a tenant.
    ``tenant_of`` gives the tenant of an ``Authorization`` header (None: no valid token, which
    the SDK refuses itself)."""

    def __init__(self, app: ASGIApp, tenant_of: Callable[[str], str | None]) -> None:
        self.app = app
        self.tenant_of = tenant_of
        self._running: set[tuple[str, str, str]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:  # the first of each, as the SDK reads them
            headers.setdefault(name, value)
        session = headers.get(_SESSION_HEADER)
        tenant = self.tenant_of(headers.get(b"authorization", b"").decode("latin-1"))
        if session is None or tenant is None:  # initialize, or refused by the SDK anyway
            await self.app(scope, receive, send)
            return
        read, replay = await read_body(receive)
        refused = _invalid(read)
        if refused is not None:
            await JSONResponse(refused, status_code=400)(scope, replay, send)
            return
        request_id = _request_id(read)
        if request_id is None:
            await self.app(scope, replay, send)
            return
        key = (tenant, session.decode("latin-1"), str(request_id))
        if key in self._running:
            await _refuse(request_id, scope, receive, send)
            return
        self._running.add(key)

        async def answering(message: Message) -> None:
            if message["type"] == "http.response.start":
                # The SDK has let go of the id: the client may use it again once answered.
                self._running.discard(key)
            await send(message)

        try:
            await self.app(scope, replay, answering)
        finally:
            self._running.discard(key)


async def read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The request's body (None when it is larger than the SDK takes, or the client went) and
    a ``receive`` that hands the app the same messages."""
    messages: list[Message] = []
    body = b""
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, _replaying(messages, receive)
        body += message.get("body", b"")
        if len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None, _replaying(messages, receive)
        if not message.get("more_body", False):
            return body, _replaying(messages, receive)


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _invalid(body: bytes | None) -> dict[str, Any] | None:
    """The invalid-request answer (-32600) the stdio transport gives ``body``: a request whose
    id is null, a float, a boolean, a list or an object, which the SDK took for a
    notification and answered with an empty 202 (its client waits on the id for ever), and a
    JSON array or null, which it answered with a pydantic dump as invalid params. None for
    what the SDK answers rightly itself (a message, or a body it cannot parse)."""
    if body is None:
        return None
    from memcore_mcp.stdio import Refused, check

    checked = check(body)
    if not isinstance(checked, Refused) or checked.answer.error.code != INVALID_REQUEST:
        return None
    answer: dict[str, Any] = checked.answer.model_dump(mode="json", by_alias=True)
    return answer


def _request_id(body: bytes | None) -> int | str | None:
    """The id of the JSON-RPC request in ``body`` (the SDK keys it as text); None for anything
    else (a notification, a response, what the SDK refuses itself)."""
    if body is None:
        return None
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("method"), str):
        return None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id


async def _refuse(request_id: int | str, scope: Scope, receive: Receive, send: Send) -> None:
    message = (
        f"Invalid Request: a request with id {json.dumps(request_id)} is still running in "
        "this session; give each request its own id"
    )
    error = {"code": INVALID_REQUEST, "message": message}
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    await JSONResponse(body, status_code=409)(scope, receive, send)


__all__ = ["DistinctIds", "read_body"]
