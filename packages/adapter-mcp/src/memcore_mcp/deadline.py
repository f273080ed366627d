"""HTTP connections that must send their request in time, or are closed.

uvicorn closes a connection idle between requests (``timeout_keep_alive``) but has no limit
on how long a request may take to arrive: a connection that sends nothing, half a request
line, or headers and half a body was held open for ever, and a client could hold as many as
the process has file descriptors (slowloris). Here each request, headers and body, must have
arrived :data:`REQUEST_TIMEOUT` seconds after the connection opened or the previous answer
went out; otherwise the connection is closed, with a 408 when no answer is under way. Once
a request has arrived whole the limit no longer applies: a tool call that runs long (a
write waiting for the lock) is answered however long it takes.

The 408 is closed in stages (RFC 9112, section 9.6): a close with the client's bytes unread
sends a reset, which can erase the answer before the client reads it. So the connection
stops writing, reads and discards what still comes for :data:`LINGER` seconds (or until the
client closes), and only then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: How long a request may take to arrive, headers and body (far longer than any MCP message
#: needs, even at 4 MiB on a slow link).
REQUEST_TIMEOUT = 30.0
#: How long a connection answered before its body arrived stays open: time for the client to
#: read the answer before the close (a close with its bytes unread could reset it first).
LINGER = 1.0

_TIMED_OUT = b"the request was not received in time\n"
_RESPONSE_408 = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_TIMED_OUT)).encode("ascii") + b"\r\n"
    b"connection: close\r\n\r\n" + _TIMED_OUT
)


class RequestDeadline(H11Protocol):
    """uvicorn's h11 protocol with a deadline on receiving each request (the h11 one is
    always installed with uvicorn; its parser's state says whether a request is whole)."""

    #: Seconds; a class attribute so a subclass (or a test) can choose another.
    timeout: float = REQUEST_TIMEOUT
    linger: float = LINGER

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._draining = False

    def data_received(self, data: bytes) -> None:
        if not self._draining:  # after the 408 what comes is read only to be dropped
            super().data_received(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.SEND_BODY:  # answered on its head (401, 413)
            self._arm(self.linger)
        else:
            self._arm()  # the next request on this connection has its own time

    def _arm(self, seconds: float | None = None) -> None:
        self._disarm()
        if not self.transport.is_closing():
            wait = self.timeout if seconds is None else seconds
            self._deadline = self.loop.call_later(wait, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        """Close the connection if its request has not arrived whole (h11 still waits for
        its head, IDLE, or for the rest of its body, SEND_BODY); else leave it be."""
        self._deadline = None
        if self.transport.is_closing():
            return
        theirs = self.conn.their_state
        if theirs is h11.IDLE:
            if self.conn.trailing_data[0]:  # part of a request, no answer under way
                self._refuse()
                return
        elif theirs is not h11.SEND_BODY:
            return
        if self.conn.our_state is h11.SEND_RESPONSE:
            # Headers and part of a body, nothing answered yet: the 408 says why, and the
            # call waiting for the rest hears that the client went when the close comes.
            self._refuse()
            return
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()  # an answer under way: the call hears that the client went

    def _refuse(self) -> None:
        """Say why the connection is closed (408), then close it in stages."""
        with contextlib.suppress(h11.LocalProtocolError):  # a request whose body is awaited
            self.conn.send(h11.ConnectionClosed())
        self.transport.write(_RESPONSE_408)
        self._draining = True
        if not self.transport.can_write_eof():  # TLS: no half-close, so close at once
            self.transport.close()
            return
        self.transport.write_eof()
        self.transport.resume_reading()  # a paused read would leave bytes to reset with
        self._deadline = self.loop.call_later(self.linger, self.transport.close)


__all__ = ["LINGER", "REQUEST_TIMEOUT", "RequestDeadline"]
