"""Fixtures for the SQLite store: fresh files under tmp_path, lexical and hashed-vector modes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.embedders import missing_onnx_requirements

STORE = "mem"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memcore.db"


@pytest.fixture
def lexical_store(db_path: Path) -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(db_path)
    store.ensure_store(STORE)
    yield store
    store.close()


@pytest.fixture
def hybrid_store(db_path: Path) -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64))
    store.ensure_store(STORE)
    yield store
    store.close()


@pytest.fixture(scope="session")
def onnx_embedder():  # type: ignore[no-untyped-def]
    """The real default embedder, loaded once for the whole test run (about 1 s)."""
    if missing_onnx_requirements():
        pytest.skip("the semantic extra is not installed")
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    embedder.warm_up()
    return embedder


@pytest.fixture
def sketch_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the sketches built (each build appends 1), building them as usual."""
    from memcore_sqlite.vector.sketch import Sketch

    builds: list[int] = []
    real = Sketch.build

    def counted(*args: Any) -> Any:
        builds.append(1)
        return real(*args)

    monkeypatch.setattr(Sketch, "build", counted)
    return builds
