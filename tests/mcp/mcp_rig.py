"""The MCP tests' rig: a real ``memcore mcp`` process per session, driven by
the SDK's own client over stdio or streamable HTTP, on the embedded store or on TableStore
through the loopback emulator. Imported by name (the conftest puts this folder on sys.path)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memcore.recall import FENCE_CLOSE, FENCE_OPEN

MEMCORE = str(Path(sys.executable).with_name("memcore"))
EMULATOR_AK = "mcp-test-ak"
EMULATOR_SK = "mcp-test-secret-value"
#: The first message a client sends, for tests that speak the wire themselves (raw HTTP).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-http", "version": "1"},
    },
}


class Backend:
    """How to start ``memcore`` on one backend: its home, environment and global flags."""

    def __init__(self, name: str, home: Path, env: dict[str, str], flags: list[str]) -> None:
        self.name = name
        self.home = home
        self.env = {"MEMCORE_HOME": str(home), "PYTHONUNBUFFERED": "1", **env}
        self.flags = flags
        #: The loopback emulator behind a TableStore backend (None on the local store).
        self.emulator: Any = None
        #: The process of the running :meth:`http` server (None outside it).
        self.server: subprocess.Popen[bytes] | None = None
        home.mkdir(parents=True, exist_ok=True)
        self.stderr = home / "server-stderr.log"

    def argv(self, *args: str) -> list[str]:
        return [*self.flags, *args]

    @contextlib.asynccontextmanager
    async def stdio(
        self,
        *global_args: str,
        env: dict[str, str] | None = None,
        mcp_args: tuple[str, ...] = (),
    ) -> AsyncIterator[ClientSession]:
        """A client session with a fresh ``memcore [flags] mcp [mcp_args]`` process over stdio."""
        params = StdioServerParameters(
            command=MEMCORE,
            args=self.argv(*global_args, "mcp", *mcp_args),
            env={**self.env, **(env or {})},
        )
        with self.stderr.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session

    @contextlib.contextmanager
    def http(
        self, tokens: dict[str, Any], *extra: str, preexec_fn: Callable[[], None] | None = None
    ) -> Iterator[str]:
        """``memcore [flags] mcp --transport http`` on 127.0.0.1 (a free port): its URL.
        ``preexec_fn`` runs in the child before it starts (to set its limits)."""
        token_file = self.home / f"tokens-{secrets.token_hex(4)}.json"
        token_file.write_text(json.dumps(tokens), encoding="utf-8")
        token_file.chmod(0o600)
        argv = [MEMCORE, *self.argv("mcp", "--transport", "http", "--port", "0")]
        argv += ["--tokens", str(token_file), *extra]
        log = self.stderr.open("a", encoding="utf-8")
        start = self.stderr.stat().st_size
        proc = subprocess.Popen(
            argv,
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            preexec_fn=preexec_fn,
        )
        self.server = proc
        try:
            deadline = time.monotonic() + 60
            while True:
                lines = self.stderr.read_text(encoding="utf-8")[start:].splitlines()
                serving = [line for line in lines if line.startswith("memcore mcp: serving")]
                if serving:
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"server did not start ({proc.returncode}): {lines}")
                time.sleep(0.05)
            yield serving[0].split(" on ", 1)[1].split()[0]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()
                proc.wait()
            log.close()
            self.server = None


@contextlib.asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def run_memcore(backend: Backend, *args: str) -> None:
    """``memcore [flags] ARGS`` on ``backend`` as a command (to seed a store); must succeed."""
    done = subprocess.run(
        [MEMCORE, *backend.argv(*args)],
        env={**os.environ, **backend.env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def payload(result: Any) -> Any:
    """The JSON of a tool answer (inside the fence when it holds stored text); checks that the
    structured copy says the same."""
    text = result.content[0].text
    if text.startswith(FENCE_OPEN):
        assert text.endswith(FENCE_CLOSE)
        body = text[len(FENCE_OPEN) : -len(FENCE_CLOSE)].strip().split("\n", 1)[1]
        data = json.loads(body)
    else:
        data = json.loads(text)
    assert result.structured_content == data
    return data


def token() -> str:
    return secrets.token_hex(24)


def post(
    url: str, headers: dict[str, str], message: dict[str, Any], *, timeout: float = 60
) -> tuple[int, dict[str, str], str]:
    """One HTTP request on its own connection, beside the SDK's client (which hides what the
    tests look at): status, headers (lower-case) and body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.request("POST", parts.path, body=json.dumps(message), headers=headers)
        response = connection.getresponse()
        body = response.read().decode("utf-8")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        connection.close()


def session_headers(url: str, secret: str) -> dict[str, str]:
    """The headers of a new, initialized MCP session of the tenant ``secret`` is for."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {secret}",
    }
    status, got, _ = post(url, headers, INITIALIZE)
    assert status == 200
    headers = {**headers, "Mcp-Session-Id": got["mcp-session-id"]}
    headers["Mcp-Protocol-Version"] = "2025-06-18"
    post(url, headers, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def emulated(tmp_path: Path, backing: Any) -> Iterator[Backend]:
    """A Backend on TableStore through the loopback emulator serving ``backing``."""
    from memcore_tablestore.emulator import EmulatorServer

    server = EmulatorServer(backing, access_key_id=EMULATOR_AK, access_key_secret=EMULATOR_SK)
    server.start()
    home = tmp_path / "ts-home"
    home.mkdir()
    (home / "config.json").write_text(
        json.dumps(
            {"endpoint": server.url, "instance_name": server.instance_name, "timeout": 20.0}
        ),
        encoding="utf-8",
    )
    backend = Backend(
        "tablestore",
        home,
        {"TABLESTORE_MEMORY_AK": EMULATOR_AK, "TABLESTORE_MEMORY_SK": EMULATOR_SK},
        ["--backend", "tablestore"],
    )
    backend.emulator = server
    try:
        yield backend
    finally:
        server.stop()
        backing.close()
