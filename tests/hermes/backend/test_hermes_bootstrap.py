"""First run without an instance: the provisioner bootstrap, through the provider and doctor."""

from __future__ import annotations

import json
import logging
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.commands.doctor import run_doctor
from memcore_hermes.config.home import HermesHome
from memcore_hermes.outbox.spool import SqliteOutbox


@pytest.fixture
def twin() -> Iterator[Any]:
    """The emulator with its control-plane twin; the twin names the new instance ``emulator``."""
    from memcore_tablestore.emulator import EmulatorServer
    from memcore_tablestore.emulator.control_plane import ControlPlane

    server = EmulatorServer(
        InMemoryMemoryStore(), control_plane=ControlPlane(instance_names=["emulator"])
    ).start()
    yield server
    server.stop()


def options(server: Any) -> dict[str, Any]:
    return {
        "control_endpoint": f"127.0.0.1:{server.port}",
        "control_protocol": "http",
        "endpoint_template": server.url,
    }


def test_initialize_bootstraps_reports_progress_and_persists(
    hermes_home: Path, kit: Any, twin: Any
) -> None:
    config = kit.write_config(hermes_home, backend="tablestore", timeout=3.0, app_id="team")
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    progress: list[str] = []
    provider = MemcoreMemoryProvider(provisioner_options=options(twin))
    provider.initialize("s1", hermes_home=str(hermes_home), status_callback=progress.append)
    try:
        saved = json.loads(config.read_text())
        assert saved["instance_name"] == "emulator" and saved["endpoint"] == twin.url
        assert saved["app_id"] == "team"  # merged, not replaced
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert any("Created instance emulator" in m for m in progress)
        answer = json.loads(
            provider.handle_tool_call(
                "tablestore_remember", {"content": "first fact", "sync": True}
            )
        )
        assert answer["status"] == "completed"
    finally:
        provider.shutdown()


def test_doctor_bootstraps_and_confirms_the_endpoint(
    hermes_home: Path, kit: Any, twin: Any
) -> None:
    kit.write_config(hermes_home, backend="tablestore", timeout=3.0)
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    report = run_doctor(HermesHome(hermes_home), provisioner_options=options(twin))
    assert report["bootstrap"] == {
        "instance_name": "emulator",
        "endpoint": twin.url,
        "serves_requests": True,
    }
    assert report["ok"] is True
    assert twin.store.list_stores() == []  # doctor created no memory store


def test_a_warming_instance_is_waited_for_and_logged(
    hermes_home: Path, kit: Any, twin: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The new instance refuses UpdateInstance for a while; the wait shows in the Hermes log and
    # the status line, and runs on the injected clock (no real minutes spent).
    twin.control_plane.fail(
        "UpdateInstance", code="InvalidInstanceName.NotFound", status=404, times=3
    )
    kit.write_config(hermes_home, backend="tablestore", timeout=3.0)
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    slept: list[float] = []
    now = [1000.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    progress: list[str] = []
    caplog.set_level(logging.INFO)
    provider = MemcoreMemoryProvider(
        provisioner_options={**options(twin), "clock": lambda: now[0], "sleep": sleep}
    )
    provider.initialize("s1", hermes_home=str(hermes_home), status_callback=progress.append)
    try:
        assert sum("warming up" in m for m in progress) == 3
        assert caplog.text.count("warming up (InvalidInstanceName.NotFound)") >= 3
        assert len(slept) >= 3
        assert twin.control_plane.create_count == 1
    finally:
        provider.shutdown()


def test_a_control_plane_down_at_the_first_start_bootstraps_later_and_keeps_the_turns(
    hermes_home: Path, kit: Any, twin: Any
) -> None:
    """The bootstrap failed at ``initialize`` (the control plane answered 503 for longer
    than its retries): the provider did not start and the session's turns were lost. Now
    the turns wait in the spool, the bootstrap is tried again in the background, and they
    land once it succeeds."""
    from memcore.scope import Scope

    twin.control_plane.fail("ListInstances", code="ServiceUnavailable", status=503, times=None)
    config = kit.write_config(hermes_home, backend="tablestore", timeout=3.0)
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    now = [1000.0]

    def sleep(seconds: float) -> None:  # the provisioner's waits pass on its own clock
        now[0] += seconds

    provider = MemcoreMemoryProvider(
        retry=kit.FAST_RETRY,
        provisioner_options={**options(twin), "clock": lambda: now[0], "sleep": sleep},
    )
    provider.initialize("s1", hermes_home=str(hermes_home), platform="telegram", user_id="ann")
    try:
        assert provider.runtime is not None
        provider.sync_turn("I ride a red bike", "Noted.", session_id="s1")
        assert not kit.settle(provider, 0.5)
        assert "instance_name" not in json.loads(config.read_text())
        twin.control_plane.clear_faults()
        assert kit.settle(provider, 20.0)
        assert json.loads(config.read_text())["instance_name"] == "emulator"
        scope = Scope("hermes", "telegram:ann", "hermes", "s1")
        turns = [m.content for m in twin.store.list_messages("hermes_mem", scope).items]
        assert turns == ["I ride a red bike", "Noted."]
    finally:
        provider.shutdown()


#: The longest ``initialize`` may take while the bootstrap cannot finish: what Hermes 0.19
#: gives a memory prefetch (8 s, less the plugin's 0.5 s margin), with room for a busy machine.
START_WITHIN_S = 20.0


def _start(provider: MemcoreMemoryProvider, home: Path, progress: list[str]) -> float:
    """``initialize`` through Hermes' own manager, as its CLI calls it; how long it took."""
    from agent.memory_manager import MemoryManager

    mm = MemoryManager()
    mm.add_provider(provider)
    started = time.monotonic()
    mm.initialize_all(
        session_id="s1",
        hermes_home=str(home),
        platform="telegram",
        user_id="ann",
        agent_context="primary",
        status_callback=progress.append,
    )
    return time.monotonic() - started


def test_a_control_plane_answering_503_does_not_hold_the_start(
    hermes_home: Path, kit: Any, twin: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The bootstrap retried the 503s for a minute on Hermes' thread before the agent could
    answer. Now the session starts after a short wait, the status line says the instance is
    still being prepared, and that same bootstrap goes on in the background (none other is
    started): once the control plane answers, it saves the instance and the turn lands."""
    from memcore.scope import Scope

    twin.control_plane.fail("ListInstances", code="ServiceUnavailable", status=503, times=None)
    config = kit.write_config(hermes_home, backend="tablestore", timeout=3.0)
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    caplog.set_level(logging.INFO)
    progress: list[str] = []
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, provisioner_options=options(twin))
    try:
        took = _start(provider, hermes_home, progress)
        assert took < START_WITHIN_S, took
        assert provider.runtime is not None
        assert "first run, preparing a TableStore instance" in progress[0]
        assert "still being opened" in progress[-1], progress
        said = len(progress)
        provider.sync_turn("I ride a red bike", "Noted.", session_id="s1")
        found = json.loads(provider.handle_tool_call("tablestore_search", {"query": "bike"}))
        assert found["error"]["code"] == "unavailable", found
        twin.control_plane.clear_faults()
        assert kit.settle(provider, 60.0)
        assert json.loads(config.read_text())["instance_name"] == "emulator"
        scope = Scope("hermes", "telegram:ann", "hermes", "s1")
        turns = [m.content for m in twin.store.list_messages("hermes_mem", scope).items]
        assert turns == ["I ride a red bike", "Noted."]
        assert caplog.text.count("first run, preparing a TableStore instance") == 1
        assert "using instance emulator" in caplog.text
        assert len(progress) == said, progress  # Hermes' start is over: the log goes on
    finally:
        provider.shutdown()


@pytest.fixture
def silent_control_plane() -> Iterator[int]:
    """A loopback port that takes connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_a_control_plane_that_never_answers_does_not_hold_the_start(
    hermes_home: Path, kit: Any, silent_control_plane: int
) -> None:
    """Each call waited its timeout and the bootstrap retried for a minute on Hermes'
    thread. Now the session starts after a short wait with its writes spooled, and the end
    of the session does not wait for the bootstrap either."""
    kit.write_config(hermes_home, backend="tablestore", timeout=2.0)
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    progress: list[str] = []
    provider = MemcoreMemoryProvider(
        retry=kit.FAST_RETRY,
        provisioner_options={
            "control_endpoint": f"127.0.0.1:{silent_control_plane}",
            "control_protocol": "http",
            "control_timeout": 30.0,
        },
    )
    took = _start(provider, hermes_home, progress)
    runtime = provider.runtime
    try:
        assert took < START_WITHIN_S, took
        assert runtime is not None
        assert "still being opened" in progress[-1], progress
        provider.sync_turn("I ride a red bike", "Noted.", session_id="s1")
        assert runtime.spool.stats(time.time()).depth == 1
    finally:
        started = time.monotonic()
        provider.shutdown()
    assert time.monotonic() - started < 5.0
    # Kept for the next start: read from the file, since the lane closes this session's
    # spool once its queued work (now skipped after shutdown) is done.
    spool = SqliteOutbox(runtime.spool.path)
    try:
        assert spool.stats(time.time()).depth == 1
    finally:
        spool.close()


def test_a_bootstrap_refused_after_the_start_is_given_up(
    hermes_home: Path, kit: Any, twin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control plane answered 503 past the start's wait, then refused the keys: the
    session went on bootstrapping every backoff, and its tools said memory would open. Now
    it stops, the tools name the refusal, and the turn taken before waits in the spool."""
    from agent import memory_manager

    monkeypatch.setattr(memory_manager, "_EXTERNAL_PREFETCH_TIMEOUT_S", 1.5)  # waits 1 s
    plane = twin.control_plane
    plane.fail("ListInstances", code="ServiceUnavailable", status=503, times=None)
    kit.write_config(hermes_home, backend="tablestore", timeout=3.0)
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, provisioner_options=options(twin))
    try:
        _start(provider, hermes_home, [])
        runtime = provider.runtime
        assert runtime is not None and runtime.handle.opening
        provider.sync_turn("I ride a red bike", "Noted.", session_id="s1")
        plane.clear_faults()
        plane.fail("ListInstances", code="InvalidAccessKeyId.NotFound", status=403, times=None)
        deadline = time.monotonic() + 60
        while runtime.handle.refused is None and time.monotonic() < deadline:
            time.sleep(0.05)
        found = json.loads(provider.handle_tool_call("tablestore_search", {"query": "bike"}))
        assert found["error"]["code"] == "permission_denied", found
        assert found["error"]["retryable"] is False
        calls = plane.call_count("ListInstances")
        provider.on_turn_start(2, "next")
        time.sleep(0.5)
        assert plane.call_count("ListInstances") == calls
        assert runtime.spool.stats(time.time()).depth == 1
    finally:
        provider.shutdown()
