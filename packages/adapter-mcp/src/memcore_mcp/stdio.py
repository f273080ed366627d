"""The stdio transport: the SDK's, except that every line gets the answer JSON-RPC asks for.

The SDK's reader drops a line it cannot read as a message (not JSON, half a UTF-16 pair in a
string, JSON that is no message), so a client waiting on that request's id waited forever.
Here each line is checked before the SDK reads it: a line that is not JSON is answered with a
parse error (-32700), JSON that is not a message with an invalid-request error (-32600), each
for the request's id when one can be read from the line (else null), and the next line is
served. A request whose id MCP does not allow (null, 1.5, true) is refused too: the SDK took
it for a notification, which is never answered. The parse error is the HTTP transport's for
the same body. A blank line is no message and gets no answer. What passes goes to the SDK's
own reader and loop unchanged.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO, Protocol, cast

import anyio
import pydantic_core
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

RequestId = int | str


class Answers(Protocol):
    """Where answers go: the SDK's write stream."""

    async def send(self, item: SessionMessage, /) -> None: ...


class Lines:
    """The lines of the client's stream that are messages, as the SDK's reader takes them
    (``async for line in stdin``); each other line is answered on the stream given to
    :meth:`answer_on` (which the SDK creates only once its reader runs, hence the wait)."""

    def __init__(self, wire: BinaryIO) -> None:
        self.wire = anyio.wrap_file(wire)
        self._out: Answers | None = None
        self._bound = anyio.Event()

    def answer_on(self, out: Answers) -> None:
        self._out = out
        self._bound.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in self.wire:
            checked = check(raw)
            if isinstance(checked, str):
                yield checked
            elif checked is not None:
                await self._bound.wait()
                assert self._out is not None
                try:
                    await self._out.send(SessionMessage(checked))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the server has stopped; nothing more can be answered


def check(raw: bytes) -> str | JSONRPCError | None:
    """``raw`` as the SDK reads it when it is a message; else its error answer (None for a
    blank line)."""
    if not raw.strip():
        return None
    try:
        data = pydantic_core.from_json(raw)
        line = raw.decode("utf-8")
    except ValueError as exc:  # the HTTP transport's words, for the same bytes
        return _error(PARSE_ERROR, f"Parse error: {exc}", _lenient_id(raw))
    try:
        message = jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        return _error(
            INVALID_REQUEST,
            "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
            _request_id(data),
        )
    if isinstance(message, JSONRPCNotification) and "id" in data:
        # The SDK reads a request whose id it cannot take (null, 1.5, true) as a notification,
        # which is never answered; the client waits on its id.
        return _error(
            INVALID_REQUEST, "Invalid Request: the id must be a string or an integer", None
        )
    return line


def _lenient_id(raw: bytes) -> RequestId | None:
    """The id of a line the strict parser refused, read as Python's ``json`` reads it (which
    keeps half a UTF-16 pair, and a byte that is not UTF-8, as a lone surrogate)."""
    try:
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    return _request_id(data)


def _request_id(data: Any) -> RequestId | None:
    """The id of what was meant as a request (it names a method), if it is a valid id."""
    if not isinstance(data, dict) or "method" not in data:
        return None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if isinstance(request_id, str) and not _encodable(request_id):
        return None
    return request_id


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _error(code: int, message: str, request_id: RequestId | None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


@contextlib.asynccontextmanager
async def streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server`` streams, reading stdin through :class:`Lines`. stdin is
    claimed as the SDK claims it (fd 0 then reads the null device, so nothing else in the
    process can take the client's bytes); the SDK's version is pinned, so its helper is
    used rather than copied."""
    wire, release = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    lines = Lines(wire)
    try:
        # The SDK only iterates ``stdin``; Lines yields the same text lines an AsyncFile would.
        async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (
            read_stream,
            write_stream,
        ):
            lines.answer_on(write_stream)
            yield read_stream, write_stream
    finally:
        if release is not None:
            release()
