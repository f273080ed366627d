"""The stdio transport: the SDK's, except that every line gets the answer JSON-RPC asks for.

The SDK's reader drops a line it cannot read as a message (not JSON, half a UTF-16 pair in a
string, JSON that is no message), so a client waiting on that request's id waited forever.
Here stdin is read and each line checked: a line that is not JSON is answered with a
parse error (-32700), JSON that is not a message with an invalid-request error (-32600), each
for the request's id when one can be read from the line (else null), and the next line is
served. A request whose id MCP does not allow (null, 1.5, true) is refused too: the SDK took
it for a notification, which is never answered. A request with the id of one still running
is not run (:func:`duplicate`). The parse error is the HTTP transport's for
the same body. A blank line is no message and gets no answer. A line longer than the HTTP
transport's body limit (4 MiB, far above any message these tools take) is not held whole: it
is read past and refused as an invalid request, for the id it opens or ends with. The messages go to
the SDK's loop as its reader would pass them; the SDK's transport writes the answers.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO, Protocol, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import attrs
import pydantic_core
from anyio.lowlevel import EventLoopToken
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from memcore_mcp.stopping import cut_short

RequestId = int | str
CANCELLED = "notifications/cancelled"
#: The longest line read (its newline aside): the HTTP transport's limit on a request body.
MAX_LINE_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
#: How much of a longer line is kept to find its id in (the rest is read past, not kept).
_HEAD_BYTES = 64 * 1024


class Answers(Protocol):
    """Where answers go: the SDK's write stream."""

    async def send(self, item: SessionMessage, /) -> None: ...


class Stopping:
    """How reading ends early: :meth:`stop` takes no more lines, and gives the requests
    already passed on ``grace`` seconds to be answered (0: none, the input is cut at once).
    ``cut``: the grace ran out with requests unanswered, which the SDK then cancels."""

    def __init__(self) -> None:
        self.taking = anyio.CancelScope()
        self.settling = anyio.CancelScope()
        self.cut = False

    def stop(self, grace: float) -> None:
        self.taking.cancel()
        self.settling.deadline = min(self.settling.deadline, anyio.current_time() + grace)


async def read(
    wire: BinaryIO,
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    out: Answers,
    unanswered: Unanswered,
    stopping: Stopping | None = None,
) -> None:
    """Pass each message on ``wire`` to ``messages`` and answer each other line on ``out``,
    until the end of input, until ``stopping`` stops it, or until the server stops receiving.
    Then the requests passed are answered first, and ``messages`` closes: the SDK cancels what
    is still running when it closes, so a write could land with no answer (``cat requests |
    memcore mcp``, or SIGTERM)."""
    stopping = stopping or Stopping()
    lines, lines_in = anyio.create_memory_object_stream[bytes | Refused](0)
    token = anyio.lowlevel.current_token()
    # A read blocks until the client writes. In a worker thread (the SDK's way) it held the
    # process when stopped, so Ctrl-C did nothing until one more line came; a daemon does not.
    threading.Thread(target=_pump, args=(wire, lines, token), name="mcp-stdin", daemon=True).start()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        async with messages, lines_in:
            with stopping.taking:
                async for raw in lines_in:
                    checked = raw if isinstance(raw, Refused) else check(raw)
                    # Not cut by a stop: a request noted as passed is then surely passed.
                    with anyio.CancelScope(shield=True):
                        if isinstance(checked, JSONRPCRequest) and unanswered.running(checked.id):
                            checked = duplicate(checked.id)
                        if isinstance(checked, Refused):
                            await out.send(SessionMessage(checked.answer))
                        elif checked is not None:
                            unanswered.passed(checked)
                            await messages.send(SessionMessage(checked))
            with stopping.settling:
                await unanswered.settled()
            stopping.cut = stopping.settling.cancelled_caught


class Unanswered:
    """The requests passed to the server that it has not answered (nor the client cancelled:
    the SDK answers no cancelled request). Ids count as the SDK's dispatcher counts them."""

    def __init__(self) -> None:
        self._ids: Counter[RequestId] = Counter()
        self._changed = anyio.Event()

    def passed(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self._ids[coerce_request_id(message.id)] += 1
        elif isinstance(message, JSONRPCNotification) and message.method == CANCELLED:
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                self._settle(request_id)

    def running(self, request_id: RequestId) -> bool:
        return self._ids[coerce_request_id(request_id)] > 0

    def answered(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._settle(message.id)

    def _settle(self, request_id: RequestId) -> None:
        key = coerce_request_id(request_id)
        if self._ids[key] > 0:
            self._ids[key] -= 1
            if not self._ids[key]:
                del self._ids[key]
            self._changed.set()
            self._changed = anyio.Event()

    async def settled(self) -> None:
        while self._ids:
            await self._changed.wait()


class _Noting:
    """The server's write stream: the SDK's, noting each answer in ``unanswered``."""

    def __init__(self, out: Any, unanswered: Unanswered) -> None:
        self.out = out
        self.unanswered = unanswered

    async def send(self, item: SessionMessage, /) -> None:
        await self.out.send(item)
        self.unanswered.answered(item.message)

    async def aclose(self) -> None:
        await self.out.aclose()

    async def __aenter__(self) -> _Noting:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _pump(
    wire: BinaryIO, lines: MemoryObjectSendStream[bytes | Refused], token: EventLoopToken
) -> None:
    """Pass each line of ``wire`` to ``lines`` (a line too long as its refusal) until the end
    of input (or a read that fails, which ends it too), then close ``lines``; stop when no one
    receives any more."""
    try:
        for raw in _lines(wire):
            anyio.from_thread.run(lines.send, raw, token=token)
    except (OSError, ValueError):
        pass  # the input is gone: its end, as for EOF
    except (anyio.BrokenResourceError, RuntimeError):
        return  # the server stopped reading (or has exited)
    with contextlib.suppress(RuntimeError):
        anyio.from_thread.run_sync(lines.close, token=token)


def _lines(wire: BinaryIO) -> Iterator[bytes | Refused]:
    """The lines of ``wire``; one longer than :data:`MAX_LINE_BYTES` is read past in pieces
    (so it is never held whole) and comes as its refusal."""
    while raw := wire.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        head, tail, size = raw[:_HEAD_BYTES], raw[-_HEAD_BYTES:], len(raw)
        while not raw.endswith(b"\n"):
            raw = wire.readline(_HEAD_BYTES)
            if not raw:
                break
            size += len(raw)
            tail = (tail + raw)[-_HEAD_BYTES:]
        yield too_long(head, size - 1 if raw.endswith(b"\n") else size, tail)


def duplicate(request_id: RequestId) -> Refused:
    """The refusal of a request sent with the id of one still running. The SDK ran both and
    answered both with that id (a ``remember`` sent twice was stored twice); the client
    matches an answer to its call by id alone, so an error carrying the id would be taken
    as the running call's. The duplicate is not run, and is refused with a null id, as
    JSON-RPC answers a request it cannot tell apart; the running call keeps its one answer."""
    return _error(
        INVALID_REQUEST,
        f"Invalid Request: a request with id {json.dumps(request_id)} is still running; it "
        "was not run again (give each request its own id)",
        None,
    )


def too_long(head: bytes, size: int, tail: bytes = b"") -> Refused:
    """The refusal of a line of ``size`` bytes (past the limit) that starts with ``head``
    and ends with ``tail``."""
    request_id = _leading_id(head)
    if request_id is None:
        request_id = _trailing_id(head, tail)
    return _error(
        INVALID_REQUEST,
        f"Invalid Request: the message is {size:,} bytes; the limit is {MAX_LINE_BYTES:,}",
        request_id,
    )


#: A top-level ``id`` as the last member of an object: the TypeScript SDK (behind most MCP
#: clients) writes it after the params. In a line of JSON, a member right before the final
#: brace is the outermost object's (a string or an inner object would end after it).
_LAST_ID = re.compile(rb'[{,]\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*}\s*$')


def _trailing_id(head: bytes, tail: bytes) -> RequestId | None:
    """The id of a request whose line ends with ``tail`` (its ``id`` last), when its head
    shows a request (an object naming its method, as far as it was read)."""
    found = _LAST_ID.search(tail)
    if found is None or not re.match(rb"\s*\{", head) or b'"method"' not in head:
        return None
    try:
        request_id = json.loads(found.group(1))
    except ValueError:
        return None
    return _request_id({"method": "", "id": request_id})


def _leading_id(head: bytes) -> RequestId | None:
    """The id of a request whose line was cut after ``head``, when its top-level ``id`` and
    ``method`` come before the cut (the SDK writes them first, before the params)."""
    text = head.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    members: dict[str, Any] = {}
    at = _skip_blank(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    try:
        while True:
            key, at = decoder.raw_decode(text, _skip_blank(text, at))
            at = _skip_blank(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                break
            members[key], at = decoder.raw_decode(text, _skip_blank(text, at + 1))
            at = _skip_blank(text, at)
            if not text.startswith(",", at):
                break
            at += 1
    except (ValueError, RecursionError):  # cut off here (or nested too deeply)
        pass
    return _request_id(members)


def _skip_blank(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


@attrs.frozen
class Refused:
    """A line that is no message, and the error it is answered with. Not a bare
    :class:`JSONRPCError`: an error the client sends (its answer to a server request) is a
    message for the server, not an answer to write back."""

    answer: JSONRPCError


def check(raw: bytes) -> JSONRPCMessage | Refused | None:
    """The message on line ``raw``, else its error answer (None for a blank line)."""
    if not raw.strip():
        return None
    try:
        data = pydantic_core.from_json(raw)
        raw.decode("utf-8")  # from_json checks the strings only
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
    return message


def _lenient_id(raw: bytes) -> RequestId | None:
    """The id of a line the strict parser refused, read as Python's ``json`` reads it (which
    keeps half a UTF-16 pair, and a byte that is not UTF-8, as a lone surrogate); of a line
    broken or nested past the parsers' depth, its members before that point."""
    try:
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return _leading_id(raw)
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


def _error(code: int, message: str, request_id: RequestId | None) -> Refused:
    error = ErrorData(code=code, message=message)
    return Refused(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


@contextlib.asynccontextmanager
async def streams(grace: float = 0.0) -> AsyncIterator[tuple[Any, Any]]:
    """The server's read and write streams over stdin and stdout: the SDK's ``stdio_server``
    writes (and claims stdout), :func:`read` reads. stdin is claimed as the SDK claims it
    (fd 0 then reads the null device, so nothing else in the process takes the client's
    bytes); the SDK's version is pinned, so its helper is used rather than copied.

    A client gone with requests still running (their answers meet a closed stdout) ends the
    server as the end of input does. SIGTERM ends the input too, and the requests already
    read are answered (for ``grace`` seconds at most) before the server stops, as at the end
    of input; the process then exits 0. Ctrl-C ends the input at once, and once the server
    has stopped raises ``KeyboardInterrupt``: cancelled mid-loop, the SDK's loop could fail
    its stop with an error group instead (a relay sending to a stream already closed). A
    SIGTERM whose grace ran out with requests still running raises
    :func:`~memcore_mcp.stopping.cut_short` (exit 5), as on HTTP: it exited 0, which told a
    process manager nothing was lost while a write's outcome was unknown."""
    wire, release = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    _quiet_closed_pipe()
    served = anyio.Event()
    interrupted = anyio.Event()
    stopping = Stopping()
    messages, messages_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    try:
        # The SDK's own reader is given no lines (it dropped the bad ones, and its pending
        # send failed the stop when the server stopped receiving first).
        async with (
            stdio_server(stdin=cast("anyio.AsyncFile[str]", _NoLines(served))) as (_, out),
            anyio.create_task_group() as tasks,
        ):
            unanswered = Unanswered()
            tasks.start_soon(read, wire, messages, out, unanswered, stopping)
            tasks.start_soon(_stop_on_signal, stopping, interrupted, grace)
            try:
                yield messages_in, _Noting(out, unanswered)
            finally:
                served.set()
                tasks.cancel_scope.cancel()
    except BaseException as exc:
        if not _client_gone(exc):
            raise
    finally:
        if release is not None:
            release()
    if interrupted.is_set():
        raise KeyboardInterrupt
    if stopping.cut:
        raise cut_short()


def _quiet_closed_pipe() -> None:
    """Leave unsaid the broken pipe of an answer's writer collected after the client went:
    the SDK's text layer over its copy of stdout keeps the answer it could not write and
    flushes it again when collected (or at exit), which Python reports as "Exception
    ignored ... BrokenPipeError" on stderr. The server writes to no other pipe, so such a
    report is only ever the client's going, which ends the session quietly (exit 0)."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, BrokenPipeError):
            previous(unraisable)

    sys.unraisablehook = hook


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is only answers meeting a closed stdout: the client has gone, which
    ends the session as the end of input does."""
    if isinstance(exc, BrokenPipeError):
        return True
    inner = getattr(exc, "exceptions", None)  # an exception group (its backport on 3.10)
    return isinstance(inner, tuple) and bool(inner) and all(_client_gone(e) for e in inner)


async def _stop_on_signal(stopping: Stopping, interrupted: anyio.Event, grace: float) -> None:
    """On SIGTERM, stop reading and give the requests read ``grace`` seconds to be answered;
    on Ctrl-C, stop reading at once. Where no handler can be set (Windows, a thread other than
    the main one) both keep their usual effect, as does a SIGTERM the process was started
    ignoring."""
    wanted = [signal.SIGINT]
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        wanted.append(signal.SIGTERM)
    try:
        with anyio.open_signal_receiver(*wanted) as signals:
            async for number in signals:
                if number == signal.SIGINT:
                    interrupted.set()
                    stopping.stop(0.0)
                    return
                stopping.stop(grace)
    except (NotImplementedError, ValueError, RuntimeError):
        return


class _NoLines:
    """stdin for the SDK's reader: no line, and its end once the server is done."""

    def __init__(self, served: anyio.Event) -> None:
        self.served = served

    def __aiter__(self) -> _NoLines:
        return self

    async def __anext__(self) -> str:
        await self.served.wait()
        raise StopAsyncIteration
