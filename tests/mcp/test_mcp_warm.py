"""``memcore mcp`` builds each served tenant's search caches at start, in the background and
through that tenant's own service: the first ``recall`` after a start does not pay for them,
and a warm-up never reaches beyond the tenants the server serves."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import ScopePattern
from memcore_cli.settings.options import GlobalOptions
from memcore_cli.wiring.runtime import Runtime
from memcore_mcp import serve as serve_module
from memcore_mcp.tenants import Tenants
from memcore_sqlite import SqliteMemoryStore


class Recording(SqliteMemoryStore):
    """The embedded store, noting each warm-up's pattern (a test double by subclass: the
    protocol checks look at the class's own attributes)."""

    warmed: list[ScopePattern]

    def warm(self, store: str, pattern: ScopePattern) -> None:
        self.warmed.append(pattern)
        super().warm(store, pattern)


def _runtime(tmp_path: Path) -> tuple[Runtime, list[ScopePattern]]:
    warmed: list[ScopePattern] = []

    def factory(settings: Any) -> Recording:
        store = Recording(tmp_path / "m.db", embedder=None)
        store.warmed = warmed
        return store

    home = tmp_path / "home"
    home.mkdir()
    environ = {"MEMCORE_HOME": str(home)}
    return Runtime(GlobalOptions(), environ, factory, explicit_environ=True), warmed


def test_each_served_tenant_warms_its_own_pattern_only(tmp_path: Path) -> None:
    runtime, warmed = _runtime(tmp_path)
    try:
        tenants = Tenants(runtime, GlobalOptions(), lambda: None)
        runtime.ready_store()
        tenants.warm(["ana", "bob"]).join(30)
    finally:
        runtime.close()
    assert [(p.tenant_id, p.agent_id, p.run_id) for p in warmed] == [
        ("ana", "*", "*"),
        ("bob", "*", "*"),
    ]


def test_a_failed_warm_up_ends_quietly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The store closed under a warm-up (a server stopping at once): the thread ends, and
    only a debug line says so; the next search would report the error itself."""
    runtime, warmed = _runtime(tmp_path)
    tenants = Tenants(runtime, GlobalOptions(), lambda: None)
    runtime.ready_store()
    tenants.warm(["ana"]).join(30)
    runtime.close()
    with caplog.at_level("DEBUG", logger="memcore_mcp.tenants"):
        thread = tenants.warm(["ana"])
        thread.join(30)
    assert not thread.is_alive() and len(warmed) == 2
    assert "search caches not warmed (StoreClosed)" in caplog.text


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_server_warms_what_it_serves_once_the_store_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    calls: list[list[str | None]] = []
    monkeypatch.setattr(Tenants, "warm", lambda self, served: calls.append(list(served)))
    monkeypatch.setattr(serve_module.anyio, "run", lambda *a, **k: None)
    monkeypatch.setattr(serve_module, "_run_http", lambda *a, **k: None)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"embedder": "none"}), encoding="utf-8")
    tokens = {"carol": secrets.token_hex(16), "ana": secrets.token_hex(16)}
    environ = {"MEMCORE_HOME": str(home), "MEMCORE_MCP_TOKENS": json.dumps(tokens)}
    port = {"port": 0} if transport == "http" else {}  # stdio refuses an HTTP option
    serve_module.serve(GlobalOptions(), environ, explicit_environ=True, transport=transport, **port)
    assert calls == ([[None]] if transport == "stdio" else [["ana", "carol"]])
