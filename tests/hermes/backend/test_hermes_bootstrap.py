"""First run without an instance: the provisioner bootstrap, through the provider and doctor."""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.commands.doctor import run_doctor
from memcore_hermes.config.home import HermesHome


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
