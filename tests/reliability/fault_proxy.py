"""A loopback HTTP proxy that stands between the plugin and the emulator and answers the way a
broken middlebox does: a 2xx that is not the service's (garbage, empty, HTML; instead of
forwarding or after it), the real answer too late, or a reset connection.

Only requests to the APIs in ``apis`` are touched, each distinct request body only the first
time it is seen (so every write meets the fault once, and a resend goes through), and only while
``budget`` lasts; the modes are used in turn. Nothing here knows memcore: it reads and writes raw HTTP/1.1.
"""

from __future__ import annotations

import hashlib
import itertools
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Sequence

#: What the proxy answers instead of the service (none of it carries ``x-ots-requestid``).
BODIES = {
    "garbage": (b"application/octet-stream", b"\x00\x01<not json at all{"),
    "empty": (b"application/json", b""),
    "html": (b"text/html; charset=utf-8", b"<html><body><h1>200 OK</h1>Welcome</body></html>"),
}
#: Every mode: ``<body>`` answers instead of forwarding, ``<body>_after`` forwards first (the
#: write landed); ``late`` forwards and answers after ``late_s``, ``late_apply`` waits
#: ``late_s`` before forwarding (the write lands after the client gave up); ``reset`` hangs up
#: before forwarding, ``reset_after`` after.
MODES = (
    *BODIES,
    *(f"{b}_after" for b in BODIES),
    "late",
    "late_apply",
    "reset",
    "reset_after",
)


def read_message(sock: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
    """One HTTP message (head and Content-Length body) from ``sock``; None at end of stream."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return head + b"\r\n\r\n" + rest[:length], rest[length:]


def _reset(sock: socket.socket) -> None:
    """Close with RST instead of FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class LoopbackProxy:
    """A threaded HTTP proxy on 127.0.0.1 in front of ``upstream_port``; ``_serve`` handles one
    client connection (subclasses decide what reaches the client)."""

    def __init__(self, upstream_port: int, *, name: str = "proxy") -> None:
        self.upstream_port = upstream_port
        self.forwarded = 0
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = int(self._sock.getsockname()[1])
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True, name=name).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._stopped = True
        try:
            self._sock.close()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _forward(self, request: bytes) -> bytes | None:
        """Send ``request`` upstream on a fresh connection; its whole answer (None if cut)."""
        with socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30) as up:
            up.sendall(request)
            answer = read_message(up, b"")
        with self._lock:
            self.forwarded += 1
        return None if answer is None else answer[0]

    def _serve(self, client: socket.socket) -> None:
        """Each request of a kept-alive client connection in turn, until one ends it."""
        buf = b""
        try:
            while True:
                got = read_message(client, buf)
                if got is None:
                    return
                request, buf = got
                if not self._handle(client, request):
                    return
        except OSError:
            return
        finally:
            try:
                client.close()
            except OSError:
                pass

    def _handle(self, client: socket.socket, request: bytes) -> bool:
        """Answer one request; False when the connection is over."""
        raise NotImplementedError


class FaultProxy(LoopbackProxy):
    def __init__(
        self,
        upstream_port: int,
        *,
        modes: Sequence[str] = (),
        budget: int = 0,
        apis: Sequence[str] = ("AddMemories",),
        late_s: float = 1.5,
    ) -> None:
        unknown = set(modes) - set(MODES)
        if unknown:
            raise ValueError(f"unknown modes {sorted(unknown)}")
        self.apis = {a.encode() for a in apis}
        self.late_s = late_s
        self.injected: Counter[str] = Counter()
        self._seen: set[bytes] = set()
        super().__init__(upstream_port, name="fault-proxy")
        self.configure(modes, budget)

    def configure(self, modes: Sequence[str], budget: int) -> None:
        """Inject ``modes`` in turn into the next ``budget`` matching requests."""
        with self._lock:
            self._modes = itertools.cycle(list(modes)) if modes else None
            self._budget = budget if modes else 0

    def _next_mode(self, request: bytes) -> str | None:
        path = request.split(b" ", 2)[1] if request.count(b" ") >= 2 else b""
        if path.strip(b"/") not in self.apis:
            return None
        body = hashlib.sha256(request.partition(b"\r\n\r\n")[2]).digest()
        with self._lock:
            if self._budget <= 0 or self._modes is None or body in self._seen:
                return None
            self._seen.add(body)
            self._budget -= 1
            mode = next(self._modes)
            self.injected[mode] += 1
            return mode

    def _handle(self, client: socket.socket, request: bytes) -> bool:
        mode = self._next_mode(request)
        if mode == "reset":
            _reset(client)
            return False
        if mode in BODIES:
            client.sendall(self._fake_answer(mode))
            return True
        if mode == "late_apply":
            time.sleep(self.late_s)
        response = self._forward(request)
        if response is None:
            return False
        if mode == "reset_after":
            _reset(client)
            return False
        if mode is not None and mode.endswith("_after"):
            client.sendall(self._fake_answer(mode[: -len("_after")]))
            return True
        if mode == "late":
            time.sleep(self.late_s)
        client.sendall(response)
        return True

    @staticmethod
    def _fake_answer(kind: str) -> bytes:
        content_type, body = BODIES[kind]
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        return head + body
