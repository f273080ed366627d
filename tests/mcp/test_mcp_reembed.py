"""``memcore mcp`` gives the memories that lack a current vector theirs in the background
after a start, as the Hermes provider does: a store an older release wrote (its speaker
labels embedded) or one whose embedder changed needs no ``memcore reindex`` first."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_cli.settings.options import GlobalOptions
from memcore_cli.wiring.runtime import Runtime
from memcore_mcp import reembed
from memcore_mcp import serve as serve_module
from memcore_sqlite import SqliteMemoryStore, TextItem

SAID = ["[Yuki] lol same", "[Sam] I love Khruangbin", "plain note"]


def _runtime(tmp_path: Path, embedder: Any) -> Runtime:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return Runtime(
        GlobalOptions(),
        {"MEMCORE_HOME": str(home)},
        lambda _settings: SqliteMemoryStore(tmp_path / "m.db", embedder=embedder),
        explicit_environ=True,
    )


def _older_release(tmp_path: Path, older: Any) -> None:
    """The server's store as a release before schema 11 left it: labels embedded."""
    runtime = _runtime(tmp_path, HashingEmbedder(64))
    try:
        with older.writing():
            store: Any = runtime.ready_store()
            store.add_many(
                runtime.store_name, [TextItem(Scope("a", "t", "g", "r"), t) for t in SAID]
            )
    finally:
        runtime.close()
    older.leave(tmp_path / "m.db")


def test_the_labelled_memories_are_re_embedded_once_after_a_start(
    tmp_path: Path, older_release: Any
) -> None:
    _older_release(tmp_path, older_release)
    runtime = _runtime(tmp_path, HashingEmbedder(64))
    try:
        store: Any = runtime.ready_store()
        assert store.missing_vectors(runtime.store_name) == 2
        thread = reembed.start(runtime)
        assert thread is not None
        thread.join(30)
        assert store.missing_vectors(runtime.store_name) == 0
        assert reembed.start(runtime) is None  # nothing left: no thread
    finally:
        runtime.close()


def test_a_store_without_an_embedder_starts_nothing(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, None)
    try:
        assert reembed.start(runtime) is None
    finally:
        runtime.close()


def test_a_store_closed_under_it_ends_the_thread_quietly(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    older_release: Any,
) -> None:
    """A server stopping at once: the store closes before the backfill's first batch."""
    _older_release(tmp_path, older_release)
    runtime = _runtime(tmp_path, HashingEmbedder(64))
    store: Any = runtime.ready_store()

    def closed_first(*args: Any, **kwargs: Any) -> int:
        runtime.close()
        return int(SqliteMemoryStore.backfill_vectors(store, *args, **kwargs))

    monkeypatch.setattr(store, "backfill_vectors", closed_first)
    with caplog.at_level("INFO", logger="memcore_mcp.reembed"):
        thread = reembed.start(runtime)
        assert thread is not None
        thread.join(30)
    assert not thread.is_alive()
    assert "background re-embedding stopped (StoreClosed)" in caplog.text


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_server_starts_it_once_the_store_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    calls: list[Runtime] = []
    monkeypatch.setattr(reembed, "start", calls.append)
    monkeypatch.setattr(serve_module.anyio, "run", lambda *a, **k: None)
    monkeypatch.setattr(serve_module, "_run_http", lambda *a, **k: None)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"embedder": "none"}), encoding="utf-8")
    tokens = {"ana": secrets.token_hex(16)}
    environ = {"MEMCORE_HOME": str(home), "MEMCORE_MCP_TOKENS": json.dumps(tokens)}
    port = {"port": 0} if transport == "http" else {}  # stdio refuses an HTTP option
    serve_module.serve(GlobalOptions(), environ, explicit_environ=True, transport=transport, **port)
    assert len(calls) == 1
