"""The exit code of a stdio server stopped with SIGTERM, as a process manager reads it: 5 with
the ``outcome_unknown`` line when the grace ran out and calls were cut, as on HTTP
(tests/mcp/test_mcp_http_exit.py); 0 once every call was answered
(tests/mcp/test_mcp_stdio_wire.py). It exited 0 either way."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from mcp_rig import Backend
from test_mcp_stdio_wire import RawStdio, _call

from memcore_mcp.serve import SHUTDOWN_GRACE

#: ``memcore mcp`` itself, over an embedded store whose write of a text starting "Slow" lands
#: and then takes 15 s more to return, past the stop's grace (10 s at ``--busy-timeout 0``).
#: The process exits once that call's thread ends: a thread cannot be stopped.
_SLOW_WRITE = """
import sys, time
from memcore_cli.entry import main
from memcore_sqlite.operations.writes import MemoryWrites

landed = MemoryWrites.add_text

def add_text(self, store, scope, text, **options):
    receipt = landed(self, store, scope, text, **options)
    if text.startswith("Slow"):
        time.sleep(15)
    return receipt

MemoryWrites.add_text = add_text
sys.argv[0] = "memcore"
main()
"""


class SlowStdio(RawStdio):
    """A ``memcore mcp`` process whose store answers a "Slow" write late."""

    def __init__(self, backend: Backend) -> None:
        self.log = backend.stderr.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SLOW_WRITE, "--tenant", "alice", "mcp", "--busy-timeout", "0"],
            env={**os.environ, **backend.env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        self.pending = b""


def test_a_stop_whose_grace_cuts_a_call_exits_5_and_says_so(local_backend: Backend) -> None:
    server = SlowStdio(local_backend)
    try:
        server.start()
        server.send(_call(1, "remember", b'{"text": "Slow to answer: the user keeps bees"}'))
        time.sleep(2)  # the write has landed; its call is still running
        kept = server.request(
            json.loads(_call(2, "remember", b'{"text": "The user drinks green tea"}'))
        )
        assert kept["id"] == 2 and not kept["result"]["isError"], kept
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=SHUTDOWN_GRACE + 40)
    finally:
        server.close()
    assert code == 5
    log = local_backend.stderr.read_text(encoding="utf-8")
    assert log.splitlines()[-1].startswith("memcore: error: the server stopped with call(s)"), log
    assert "a write among them may have landed" in log and "Traceback" not in log, log
    stored = sqlite3.connect(local_backend.home / "memcore.db")
    texts = sorted(row[0] for row in stored.execute("SELECT text FROM memories"))
    stored.close()
    # The answered write is there once; the cut one landed once, never twice.
    assert texts == ["Slow to answer: the user keeps bees", "The user drinks green tea"]
