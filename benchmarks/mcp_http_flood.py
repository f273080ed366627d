"""Connections without a valid token against ``memcore mcp --transport http``. Prints JSON.

A flood opens ``--rate`` connections a second for ``--seconds``, on 127.0.0.1, of one kind:
``no_token`` (a whole request head without ``Authorization``, then its body a byte a second),
``wrong_token`` (the same with a token the map does not hold) or ``half_head`` (half a request
head, then a byte a second). For each kind: how long until the server answers (the 401 or
408) and until it closes the connection (median, max), and the most connections the server
held at once (its open descriptors over the count before the flood, Linux ``/proc``).

    uv run python -m benchmarks mcp_http_flood [--rate 35] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import selectors
import socket
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.mcp_server import _serve_http

KINDS = ("no_token", "wrong_token", "half_head")
#: How long a flood waits for its last connection to close.
GIVE_UP_S = 60.0


def _opening(kind: str, host: str) -> bytes:
    head = f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    if kind == "half_head":
        return head.encode()
    if kind == "wrong_token":
        head += f"Authorization: Bearer {secrets.token_hex(24)}\r\n"
    return (head + "Content-Length: 1000\r\n\r\n").encode()


class _Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.opened = time.monotonic()
        self.answered: float | None = None
        self.closed: float | None = None


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _flood(kind: str, host: str, port: int, pid: int, rate: float, seconds: float) -> dict:
    base = _descriptors(pid)
    selector = selectors.DefaultSelector()
    conns: list[_Conn] = []
    peak = 0
    started = time.monotonic()
    next_open = started
    next_trickle = started + 1.0
    while time.monotonic() - started < seconds + GIVE_UP_S:
        now = time.monotonic()
        if now >= next_open and now - started < seconds:
            sock = socket.create_connection((host, port))
            sock.sendall(_opening(kind, host))
            sock.setblocking(False)
            conn = _Conn(sock)
            conns.append(conn)
            selector.register(sock, selectors.EVENT_READ, conn)
            next_open += 1.0 / rate
        if now >= next_trickle:
            next_trickle += 1.0
            for conn in conns:
                if conn.closed is None:
                    try:
                        conn.sock.send(b"x")
                    except OSError:
                        pass
        for key, _ in selector.select(timeout=0.01):
            conn = key.data
            try:
                data = conn.sock.recv(65536)
            except OSError:
                data = b""
            at = time.monotonic() - conn.opened
            if data and conn.answered is None:
                conn.answered = at
            if not data:
                conn.closed = at
                selector.unregister(conn.sock)
                conn.sock.close()
        peak = max(peak, _descriptors(pid) - base)
        if now - started >= seconds and all(c.closed is not None for c in conns):
            break
    for conn in conns:
        if conn.closed is None:
            conn.sock.close()
    answered = [c.answered for c in conns if c.answered is not None]
    closed = [c.closed for c in conns if c.closed is not None]
    return {
        "connections": len(conns),
        "answered": len(answered),
        "answer_s": _spread(answered),
        "closed": len(closed),
        "close_s": _spread(closed),
        "most_held_at_once": peak,
    }


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=35.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {**os.environ, "MEMCORE_HOME": str(root / "home")}
        proc, url = _serve_http(env, root, secrets.token_hex(24))
        parts = urlsplit(url)
        results = {}
        try:
            for kind in args.kinds.split(","):
                host, port = parts.hostname or "127.0.0.1", parts.port or 80
                results[kind] = _flood(kind, host, port, proc.pid, args.rate, args.seconds)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    report = {"benchmark": "mcp_http_flood", "rate_per_s": args.rate, "seconds": args.seconds}
    print(json.dumps({**report, "floods": results}, indent=2))


if __name__ == "__main__":
    main()
