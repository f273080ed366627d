"""The exit code of an HTTP server stopped with SIGTERM, as a process manager reads it: 5
(``outcome_unknown``) when the grace ran out and calls were cut (0 once every call was
answered: tests/mcp/test_mcp_http_shutdown.py); never death by the signal (-15)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

#: uvicorn as ``memcore mcp`` runs it, over an app whose call outlasts a one-second grace.
_CUT = textwrap.dedent(
    """
    import asyncio, socket, sys
    from memcore.errors import OutcomeUnknown
    from memcore_mcp.serve import http_config
    from memcore_mcp.stopping import DrainingServer

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        print("called", flush=True)
        await asyncio.sleep(60)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    print(sock.getsockname()[1], flush=True)
    try:
        DrainingServer(http_config(app, grace=1), lambda: None).serve_until_stopped(sock)
    except OutcomeUnknown as exc:
        print(exc, file=sys.stderr)
        sys.exit(5)
    """
)


def test_a_stop_that_cuts_a_call_says_so_and_exits_5() -> None:
    import socket

    proc = subprocess.Popen(
        [sys.executable, "-c", _CUT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        port = int(proc.stdout.readline())
        time.sleep(0.5)
        client = socket.create_connection(("127.0.0.1", port), timeout=30)
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert proc.stdout.readline().strip() == "called"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 5
        assert "a write among them may have landed" in proc.stderr.read()
        client.close()
    finally:
        proc.kill()
        proc.wait()
