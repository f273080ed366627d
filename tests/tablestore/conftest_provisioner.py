"""Shared fixtures for the provisioner tests: a control-plane twin served on 127.0.0.1.

Imported explicitly by the provisioner test modules. The emulator's own server is used when
the package provides it; a small local HTTP server around ``ControlPlane.handle`` is the
fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memcore_tablestore.credentials import Credentials
from memcore_tablestore.emulator.control_plane import ControlPlane, LostAnswer, hang_up
from memcore_tablestore.provisioning.provisioner import TableStoreProvisioner

ACCESS_KEY_ID = "LTAI5tEmulatorKeyId"
ACCESS_KEY_SECRET = "emulator-secret-Zq8vX2pL9wK4"  # a test value, checked by the twin's signature


class _Handler(BaseHTTPRequestHandler):
    control: ControlPlane

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            status, out_headers, out = self.control.handle(self.command, path, query, headers, body)
        except LostAnswer as lost:
            hang_up(self, lost.hold)
            return
        self.send_response(status)
        for key, value in out_headers.items():
            if key != "content-length":
                self.send_header(key, value)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = _serve
    do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LocalControlServer:
    """Serves one :class:`ControlPlane` on an ephemeral loopback port."""

    def __init__(self, control: ControlPlane) -> None:
        handler = type("Handler", (_Handler,), {"control": control})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _serve_with_emulator(control: ControlPlane) -> Any:
    """Start the package's ``EmulatorServer`` around ``control`` when it exists, else None."""
    try:
        from memcore.testing import InMemoryMemoryStore
        from memcore_tablestore.emulator import EmulatorServer  # type: ignore[attr-defined]
    except ImportError:
        return None
    try:
        server = EmulatorServer(InMemoryMemoryStore(), port=0, control_plane=control)
    except TypeError:
        return None
    server.start()
    return server


@pytest.fixture
def control_endpoint(control_plane: ControlPlane) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a loopback server that answers with ``control_plane``."""
    server = _serve_with_emulator(control_plane)
    if server is not None:
        try:
            yield f"127.0.0.1:{server.port}"
        finally:
            server.stop()
        return
    local = LocalControlServer(control_plane)
    local.start()
    try:
        yield local.endpoint
    finally:
        local.stop()


@pytest.fixture
def credentials() -> Credentials:
    return Credentials(ACCESS_KEY_ID, ACCESS_KEY_SECRET)


class FakeClock:
    """A monotonic clock that only moves when ``sleep`` is called; records every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def control_plane(clock: FakeClock) -> ControlPlane:
    """The twin, checking signatures with the test key; its DNS delays run on ``clock``."""
    return ControlPlane(
        region="cn-beijing", access_keys={ACCESS_KEY_ID: ACCESS_KEY_SECRET}, clock=clock
    )


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "hermes" / "tablestore_memory.json"


@pytest.fixture
def make(
    control_plane: ControlPlane,
    control_endpoint: str,
    credentials: Credentials,
    clock: FakeClock,
    config_path: Path,
) -> Callable[..., TableStoreProvisioner]:
    """Build a provisioner wired to the twin, reading the config file as a fresh start would;
    every wait runs on ``clock``."""

    def build(**overrides: Any) -> TableStoreProvisioner:
        options: dict[str, Any] = {
            "credentials": credentials,
            "control_endpoint": control_endpoint,
            "control_protocol": "http",
            "resolver": control_plane.resolve,
            "clock": clock,
            "sleep": clock.sleep,
            "wall_clock": clock,
            "control_timeout": 30.0,
            "dns_timeout": 120.0,
            "probe_timeout": 60.0,
        }
        options.update(overrides)
        return TableStoreProvisioner.from_file(config_path, **options)

    return build
