"""Outages seen from the agent's shutdown and from ``hermes tablestore-mem`` commands: the emulator
on real HTTP on 127.0.0.1, stopped and restarted on the same port."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider

STORE = "hermes_mem"


class Outage:
    """An emulator that can be stopped and started again on its port, over one backing store."""

    def __init__(self) -> None:
        from memcore_tablestore.emulator import EmulatorServer

        self.backing = InMemoryMemoryStore()
        self._server_type = EmulatorServer
        self.server = EmulatorServer(self.backing).start()
        self.port = self.server.port
        self.up = True

    def stop(self) -> None:
        if self.up:
            self.server.stop()
            self.up = False

    def start(self) -> None:
        if not self.up:
            self.server = self._server_type(self.backing, port=self.port).start()
            self.up = True

    def texts(self) -> list[str]:
        try:
            memories = self.backing.all_memories(STORE)
        except Exception:
            return []
        return sorted(m.text for m in memories)


@pytest.fixture
def outage(hermes_home: Path, kit: Any) -> Iterator[Outage]:
    emu = Outage()
    kit.emulator_home(hermes_home, emu.server, timeout=3.0)
    try:
        yield emu
    finally:
        emu.stop()


def test_agent_shutdown_with_the_backend_down_returns_within_a_second(
    hermes_home: Path, outage: Outage, kit: Any
) -> None:
    from agent.memory_manager import MemoryManager

    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    manager = MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all(session_id="s1", platform="cli", agent_context="primary", user_id="ann")
    manager.sync_all("I keep bees", "Noted.", session_id="s1")
    assert manager.flush_pending(10)  # Hermes' own worker runs sync_turn after sync_all returned
    assert kit.settle(provider, 10.0)
    outage.stop()
    manager.sync_all("My hives are on the roof", "Noted.", session_id="s1")
    started = time.monotonic()
    manager.on_session_end([])
    manager.shutdown_all()
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"shutdown took {elapsed:.2f} s with the backend down"
    # The turn waits in the spool for the next start.
    from memcore_hermes.commands.doctor import spool_report
    from memcore_hermes.config.home import HermesHome

    assert spool_report(HermesHome(hermes_home))["depth"] >= 1


def test_a_spooled_write_leaves_on_the_next_command_after_the_backend_returns(
    hermes_home: Path, outage: Outage, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = kit.run_cli(capsys, "add", "the first note", "--sync")
    assert code == 0
    outage.stop()
    code, added = kit.run_cli(capsys, "add", "written while the backend was down")
    assert code != 0 and added["status"] == "queued"
    code, report = kit.run_cli(capsys, "doctor")
    assert code != 0
    waiting = report["spool"]["waiting"]
    assert [w["text"] for w in waiting] == ["written while the backend was down"]
    assert waiting[0]["error"]  # why it waits
    outage.start()
    code, found = kit.run_cli(capsys, "search", "backend down")
    assert code == 0
    assert "written while the backend was down" in outage.texts()
    assert "written while the backend was down" in [r["text"] for r in found["results"]]
    code, report = kit.run_cli(capsys, "doctor")
    assert code == 0 and report["spool"]["depth"] == 0


def test_doctor_delivers_what_waits_once_the_backend_is_back(
    hermes_home: Path, outage: Outage, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.run_cli(capsys, "add", "the first note", "--sync")
    outage.stop()
    kit.run_cli(capsys, "add", "kept through the outage")
    outage.start()
    code, report = kit.run_cli(capsys, "doctor")
    assert code == 0, report
    assert report["spool"]["depth"] == 0
    assert "kept through the outage" in outage.texts()


EXCLUSIVE_FOR = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
conn.execute("BEGIN EXCLUSIVE")
print("HELD", flush=True)
time.sleep(float(sys.argv[2]))
conn.close()
"""


def test_a_command_waits_for_the_whole_opening(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session starts without a store still opening after 7.5 s; a one-shot command does
    not: its process would end the opening, so it waits for it, and stores its write."""
    import subprocess
    import sys

    kit.write_config(hermes_home, backend="local", embedder="none")
    code, _ = kit.run_cli(capsys, "add", "the first note", "--sync")
    assert code == 0
    database = hermes_home / "tablestore_memory_local.sqlite3"
    holder = subprocess.Popen(
        [sys.executable, "-c", EXCLUSIVE_FOR, str(database), "10"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
        started = time.monotonic()
        code, added = kit.run_cli(capsys, "add", "written while another process held the file")
        assert code == 0, added
        assert added["status"] == "stored", added
        assert time.monotonic() - started >= 8.0  # it waited for the lock to go
    finally:
        holder.wait(30)


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="lock list is Linux only")
def test_a_command_whose_store_cannot_open_says_the_next_start_stores_its_write(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A one-shot command said its store was "opened again in the background, and queued
    writes are stored once it opens": its process exits right after, and opens nothing."""
    from tests.older_store import held_open, write_older

    kit.write_config(hermes_home, backend="local", embedder="none")
    database = hermes_home / "tablestore_memory_local.sqlite3"
    write_older(database)
    with held_open(database):
        code, added, err = kit.run_cli_full(capsys, "add", "written while an older one ran")
        assert code == 5 and added["status"] == "queued", added
        code, synced, _ = kit.run_cli_full(capsys, "add", "wanted now", "--sync")
        assert code == 5, synced
    for message in (added["error"]["message"], synced["error"]["message"], err):
        assert "background" not in message, message
        assert "conflict" in message, message
    assert "the next command or agent start" in added["note"]
    # --sync kept nothing: its error must not read as if it had.
    assert "spool" not in synced["error"]["message"], synced
    code, found = kit.run_cli(capsys, "search", "older")
    assert code == 0
    assert [r["text"] for r in found["results"]] == ["written while an older one ran"]
    code, found = kit.run_cli(capsys, "search", "wanted")
    assert code == 0 and found["results"] == [], found
