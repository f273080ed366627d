"""Over stdio every line a client writes gets the JSON-RPC answer it asks for: a line that is
not JSON a parse error, JSON that is not a message an invalid-request error, each for the
request's id when it has one; and the server goes on serving. Driven with raw bytes on a real
``memcore mcp`` process's stdin, since the SDK's client cannot send such lines."""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_rig import MEMCORE, Backend, payload, token

from memcore_mcp.stdio import too_long

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-stdio", "version": "1"},
    },
}
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class RawStdio:
    """A ``memcore mcp`` process spoken to in bytes, one answer line at a time."""

    def __init__(self, backend: Backend, *args: str) -> None:
        self.log = backend.stderr.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [MEMCORE, *backend.argv(*args, "mcp")],
            env={**os.environ, **backend.env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        self.pending = b""

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps(message).encode() + b"\n")
        return self.answer()

    def answer(self, timeout: float = 60.0) -> dict[str, Any]:
        """The next line the server writes (fails instead of waiting forever)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"no answer within {timeout:g} s")
            chunk = os.read(fd, 65_536)
            if not chunk:
                raise AssertionError("the server closed stdout without answering")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return dict(json.loads(line))

    def start(self) -> None:
        answer = self.request(INITIALIZE)
        assert answer["id"] == "init" and "result" in answer, answer
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.returncode is None:  # pragma: no cover
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self.log.close()


def _call(request_id: Any, name: str, arguments: bytes) -> bytes:
    """A tools/call line with ``arguments`` as given (raw JSON text, possibly broken)."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call"})[:-1]
    return (
        head.encode()
        + b', "params": {"name": "'
        + name.encode()
        + b'", "arguments": '
        + arguments
        + b"}}\n"
    )


#: A line, then the error code and the id its answer carries.
BAD_LINES = [
    (b"not json\n", PARSE_ERROR, None),
    (b'{"jsonrpc": "2.0", "id": 3, "meth\n', PARSE_ERROR, None),
    (b"[1, 2]\n", INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 4}\n', INVALID_REQUEST, None),
    (b'{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}\n', INVALID_REQUEST, 5),
    (b'{"jsonrpc": "2.0", "id": 6, "method": 7}\n', INVALID_REQUEST, 6),
    # JSON text of half a UTF-16 pair: the HTTP transport refuses the same body as a parse error.
    (_call(7, "remember", b'{"text": "tea \\ud800 please"}'), PARSE_ERROR, 7),
    (_call("eight", "recall", b'{"query": "\\udfff"}'), PARSE_ERROR, "eight"),
    # An id MCP does not allow: the line was read as a notification, which gets no answer.
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}\n', INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}\n', INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}\n', INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}\n', INVALID_REQUEST, None),
    # A byte that is not UTF-8 (Latin-1 text): it was stored as U+FFFD, the text silently changed.
    (_call(9, "remember", b'{"text": "caf\xe9 au lait"}'), PARSE_ERROR, 9),
    # Nested past the parsers' depth: its id, which comes first, was answered as null.
    (
        _call(10, "remember", b'{"text": "x", "metadata": ' + b"[" * 1500 + b"]" * 1500 + b"}"),
        PARSE_ERROR,
        10,
    ),
]


@pytest.fixture
def raw(local_backend: Backend) -> Any:
    server = RawStdio(local_backend, "--tenant", "alice")
    try:
        server.start()
        yield server
    finally:
        server.close()


def test_every_bad_line_gets_its_error_and_the_server_goes_on(raw: RawStdio) -> None:
    for number, (line, code, request_id) in enumerate(BAD_LINES):
        raw.send(line)
        answer = raw.answer(timeout=20)
        assert answer["id"] == request_id, (line, answer)
        assert answer["error"]["code"] == code, (line, answer)
        assert "Traceback" not in answer["error"]["message"]
        assert raw.request({"jsonrpc": "2.0", "id": f"ping-{number}", "method": "ping"}) == {
            "jsonrpc": "2.0",
            "id": f"ping-{number}",
            "result": {},
        }
    listed = raw.request(
        {
            "jsonrpc": "2.0",
            "id": "list",
            "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {}},
        }
    )
    assert listed["result"]["structuredContent"]["memories"] == []  # nothing was written


#: The longest line the server reads: the HTTP transport's limit on a request body.
MAX_LINE_BYTES = 4 * 1024 * 1024


@pytest.mark.parametrize("size", [MAX_LINE_BYTES + 1, 60 * 1024 * 1024])
def test_a_line_longer_than_the_limit_is_refused_and_the_server_goes_on(
    raw: RawStdio, size: int
) -> None:
    """A line is read up to the HTTP transport's body limit: a longer one was read whole (60 MB
    held ~375 MB) and parsed. It gets an invalid-request error for its id, what follows it is
    served, and nothing of it is written."""
    line = _call(11, "remember", b'{"text": "' + b"x" * size + b'"}')
    raw.send(line)
    answer = raw.answer(timeout=60)
    assert answer["id"] == 11, answer
    assert answer["error"]["code"] == INVALID_REQUEST, answer
    message = answer["error"]["message"]
    assert f"{len(line) - 1:,} bytes" in message and f"{MAX_LINE_BYTES:,}" in message, message
    assert raw.request({"jsonrpc": "2.0", "id": "after", "method": "ping"})["result"] == {}
    listed = raw.request(
        {
            "jsonrpc": "2.0",
            "id": "list",
            "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {}},
        }
    )
    assert listed["result"]["structuredContent"]["memories"] == []


@pytest.mark.parametrize(
    ("head", "request_id"),
    [
        (
            b'{"jsonrpc": "2.0", "id": "abc", "method": "tools/call", "params": {"arguments": {"te',
            "abc",
        ),
        (b'{ "method" : "ping" , "id" : 5 , "params": [1, 2, 3', 5),
        # The id comes after the part that was cut, and no end of the line is given: null.
        (b'{"jsonrpc": "2.0", "params": {"text": "xxx', None),
        # A response (no method) is no request of the client's to answer.
        (b'{"jsonrpc": "2.0", "id": 4, "result": {"a": "xxx', None),
        (b'[{"id": 1, "method": "ping"}, {"id": 2', None),
        (b'{"id": null, "method": "ping", "params": {"x', None),
    ],
)
def test_a_line_too_long_is_refused_for_the_id_it_opens_with(
    head: bytes, request_id: object
) -> None:
    answer = too_long(head, 5_000_000).answer
    assert answer.id == request_id
    assert answer.error.code == INVALID_REQUEST
    assert answer.error.message.endswith("the message is 5,000,000 bytes; the limit is 4,194,304")


def test_a_line_too_long_whose_id_comes_last_is_refused_for_its_id(raw: RawStdio) -> None:
    """The TypeScript SDK (behind most MCP clients) writes a request's ``id`` after its
    ``params``: a line too long was refused for the id null, which the client cannot match
    to its request, so it waited for its own timeout instead of reading why."""
    arguments = b'{"text": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}'
    line = (
        b'{"method":"tools/call","params":{"name":"remember","arguments":'
        + arguments
        + b'},"jsonrpc":"2.0","id":21}\n'
    )
    raw.send(line)
    answer = raw.answer(timeout=60)
    assert answer["id"] == 21, answer
    assert answer["error"]["code"] == INVALID_REQUEST, answer
    assert raw.request({"jsonrpc": "2.0", "id": "after", "method": "ping"})["result"] == {}


@pytest.mark.parametrize(
    ("tail", "request_id"),
    [
        (b'xxx"}},"jsonrpc":"2.0","id":21}\n', 21),
        (b'xxx"}}, "jsonrpc": "2.0", "id" : "k-9" }\r\n', "k-9"),
        # An "id" inside the params, or in a string, is not the request's.
        (b'xxx", "id": 3}}}\n', None),
        (b'xxx \\", \\"id\\": 4}"}}\n', None),
        (b'xxx"}}, "id": true}\n', None),
        (b'xxx"}}, "id": 1.5}\n', None),
    ],
)
def test_a_line_too_long_is_refused_for_the_id_it_ends_with(
    tail: bytes, request_id: object
) -> None:
    head = b'{"method": "tools/call", "params": {"arguments": {"text": "xxx'
    answer = too_long(head, 5_000_000, tail).answer
    assert answer.id == request_id


def test_a_line_at_the_limit_is_read(raw: RawStdio) -> None:
    head = _call(12, "remember", b'{"text": "')
    tail = b'"}}}\n'
    line = head[:-3] + b"x" * (MAX_LINE_BYTES - len(head) - 1) + tail
    assert len(line) == MAX_LINE_BYTES + 1  # the limit, and the newline
    raw.send(line)
    answer = raw.answer(timeout=60)
    assert answer["id"] == 12 and answer["result"]["isError"], answer  # read, then refused
    assert "the limit is 32000" in answer["result"]["structuredContent"]["error"]["message"]


def test_a_blank_line_is_no_message_and_gets_no_answer(raw: RawStdio) -> None:
    raw.send(b"\n   \r\n")
    assert raw.request({"jsonrpc": "2.0", "id": 1, "method": "ping"})["id"] == 1


def test_an_error_answer_the_client_sends_is_not_written_back_to_it(raw: RawStdio) -> None:
    """A JSON-RPC error the client sends (its answer to a server request) is the client's
    message for the server: it was written back on stdout, as if the server had failed the
    client's own request of that id."""
    raw.send(b'{"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "no roots"}}\n')
    assert raw.request({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }


def test_a_line_cut_off_by_end_of_input_gets_its_error_and_the_server_exits(
    local_backend: Backend,
) -> None:
    server = RawStdio(local_backend, "--tenant", "alice")
    server.start()
    server.send(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/li')
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    answer = server.answer(timeout=20)
    assert answer["error"]["code"] == PARSE_ERROR and answer["id"] is None, answer
    assert server.proc.wait(timeout=30) == 0


def test_http_refuses_the_same_surrogate_with_the_same_code(local_backend: Backend) -> None:
    """The stdio answer above is the HTTP transport's for the same bytes (there the error goes
    back on the request's own response, so its id is null)."""
    alice = token()
    with local_backend.http({"alice": alice}) as url:
        request = urllib.request.Request(
            url,
            data=_call(7, "remember", b'{"text": "tea \\ud800 please"}'),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {alice}",
            },
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 400
        assert json.loads(refused.value.read())["error"]["code"] == PARSE_ERROR


def test_the_sdk_client_goes_on_after_an_answer_it_did_not_ask_for(local_backend: Backend) -> None:
    """A line the client did not send (here ahead of its own) is answered with id null, which
    the SDK's client sets aside; its own requests are answered as before."""
    script = '{ printf \'not json\\n{"jsonrpc": "2.0", "id": null, "method": "ping"}\\n\'; cat; } | "$0" "$@"'
    params = StdioServerParameters(
        command="sh",
        args=["-c", script, MEMCORE, *local_backend.argv("--tenant", "alice", "mcp")],
        env=local_backend.env,
    )

    async def main() -> None:
        with local_backend.stderr.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                written = payload(
                    await session.call_tool("remember", {"text": "I drink green tea"})
                )
                assert written["status"] == "completed"
                listed = payload(await session.call_tool("list_memories", {}))
                assert [m["text"] for m in listed["memories"]] == ["I drink green tea"]

    anyio.run(main)


def test_ctrl_c_stops_the_server_at_once_with_exit_130(local_backend: Backend) -> None:
    """The read of the next line blocked the stop: Ctrl-C did nothing until one more line came
    (which then got no answer)."""
    server = RawStdio(local_backend, "--tenant", "alice")
    try:
        server.start()
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=15) == 130
    finally:
        server.close()
    assert local_backend.stderr.read_text(encoding="utf-8").endswith("memcore: interrupted\n")


def test_sigterm_answers_the_calls_already_read_then_exits_0(local_backend: Backend) -> None:
    """SIGTERM killed the server at once: a write waiting for the lock (or running) when it
    came could land with no answer, and the client, seeing none, would send it again. Now
    the input ends, the calls read are answered, and the server exits 0."""
    server = RawStdio(local_backend, "--tenant", "alice")
    try:
        server.start()
        # Another process holds the write lock: the writes wait in the server until it goes.
        lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        for number in range(3):
            call = {"name": "remember", "arguments": {"text": f"Fact number {number} to keep"}}
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call}
            server.send(json.dumps(message).encode() + b"\n")
        time.sleep(2)  # the calls have reached the server and wait for the lock
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(1.5)  # the server has begun to stop
        lock.execute("ROLLBACK")
        lock.close()
        answers = [server.answer() for _ in range(3)]
        assert server.proc.wait(timeout=30) == 0
    finally:
        server.close()
    stored = sqlite3.connect(local_backend.home / "memcore.db")
    landed = {row[0] for row in stored.execute("SELECT id FROM memories")}
    stored.close()
    assert sorted(answer["id"] for answer in answers) == [0, 1, 2]
    reported = set()
    for answer in answers:
        assert not answer["result"]["isError"], answer
        reported.update(answer["result"]["structuredContent"]["memory_ids"])
    assert len(reported) == 3 and reported == landed


def test_requests_read_before_the_end_of_input_are_all_answered(local_backend: Backend) -> None:
    """``cat requests | memcore mcp``: at the end of input the requests still running were
    cancelled, so most writes landed with no answer (or a "Connection closed" error)."""
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [
        {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": f"fact {number}: I like tea"}},
        }
        for number in range(10)
    ]
    answers = _piped(local_backend, lines)
    assert sorted(answers, key=str) == sorted(["init", *range(10)], key=str)
    for number in range(10):
        assert answers[number]["result"]["structuredContent"]["status"] == "completed", answers[
            number
        ]


def test_a_request_the_client_cancelled_is_not_waited_for_at_the_end_of_input(
    local_backend: Backend,
) -> None:
    """The SDK answers no cancelled request, so the end of input does not wait for one."""
    call = {"name": "remember", "arguments": {"text": "I like green tea"}}
    lines = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    answers = _piped(local_backend, lines, timeout=60)
    assert answers[2]["result"] == {}


def test_a_client_gone_while_its_requests_run_ends_the_server_quietly(
    local_backend: Backend,
) -> None:
    """The client quits (both pipes closed) with requests still running: they are finished,
    and their answers, which no one can read, end the server as the client's going does. It
    said "unexpected ExceptionGroup" and exited 1 (the broken pipe of the answer's write)."""
    server = RawStdio(local_backend, "--tenant", "alice")
    server.start()
    for number in range(20):
        call = {"name": "remember", "arguments": {"text": f"fact {number}: I like tea"}}
        server.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call}
            ).encode()
            + b"\n"
        )
    assert server.proc.stdout is not None
    server.proc.stdout.close()
    assert server.close() == 0
    log = local_backend.stderr.read_text(encoding="utf-8")
    assert "error" not in log and "Traceback" not in log, log


def _piped(backend: Backend, lines: list[dict[str, Any]], timeout: float = 120) -> dict[Any, Any]:
    """The answers, by id, of ``memcore mcp`` given ``lines`` and then the end of input."""
    done = subprocess.run(
        [MEMCORE, *backend.argv("--tenant", "alice", "mcp")],
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        env={**os.environ, **backend.env},
        capture_output=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}


_COLLECTED = """
from memcore_mcp.stdio import _quiet_closed_pipe

class Pending:
    def __init__(self, exc):
        self.exc = exc

    def __del__(self):
        raise self.exc

_quiet_closed_pipe()
Pending(BrokenPipeError(32, "Broken pipe"))
Pending(ValueError("another failure"))
"""


def test_an_answer_flushed_again_after_the_client_went_is_not_reported() -> None:
    """The SDK's writer over its copy of stdout flushes an answer it could not write again
    when it is collected; on Python 3.13 that printed "Exception ignored ... BrokenPipeError"
    and a traceback after the client had gone. Such a broken pipe is left unsaid; any other
    failure in a finalizer is still reported."""
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _COLLECTED], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "BrokenPipeError" not in done.stderr
    assert "ValueError: another failure" in done.stderr


def test_a_request_with_the_id_of_one_running_is_not_run(
    raw: RawStdio, local_backend: Backend
) -> None:
    """Two ``remember`` calls with one id, the first still waiting for the lock: the SDK ran
    both and answered both with that id, so the text was stored twice. The second is now
    refused with a null id (one carrying the id would be taken as the first call's answer),
    and the first is answered once."""
    lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    first = _call(42, "remember", b'{"text": "The user keeps bees on the roof"}')
    raw.send(first)
    time.sleep(1)  # the first call waits for the lock
    raw.send(first)
    refused = raw.answer(timeout=20)
    assert refused["id"] is None and refused["error"]["code"] == INVALID_REQUEST, refused
    assert "id 42 is still running" in refused["error"]["message"], refused
    lock.execute("ROLLBACK")
    lock.close()
    answered = raw.answer(timeout=60)
    assert answered["id"] == 42 and not answered["result"]["isError"], answered
    assert raw.request({"jsonrpc": "2.0", "id": 43, "method": "ping"})["id"] == 43  # no other
    stored = sqlite3.connect(local_backend.home / "memcore.db")
    texts = [row[0] for row in stored.execute("SELECT text FROM memories")]
    stored.close()
    assert texts == ["The user keeps bees on the roof"]


def test_a_write_whose_client_went_during_the_stop_still_lands_once(
    local_backend: Backend,
) -> None:
    """As on HTTP: a ``remember`` waiting for the lock, SIGTERM, then the client goes (its end
    of stdout closed) before the answer: the write lands once and the server exits 0."""
    server = RawStdio(local_backend, "--tenant", "alice")
    server.start()
    lock = sqlite3.connect(local_backend.home / "memcore.db", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    server.send(_call(5, "remember", b'{"text": "The user left in a hurry"}'))
    time.sleep(1.5)  # the call waits for the lock
    server.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert server.proc.stdout is not None
    server.proc.stdout.close()  # gone before its answer
    lock.execute("ROLLBACK")
    lock.close()
    assert server.close() == 0
    stored = sqlite3.connect(local_backend.home / "memcore.db")
    texts = [row[0] for row in stored.execute("SELECT text FROM memories")]
    stored.close()
    assert texts == ["The user left in a hurry"]
