"""A Hermes built-in memory entry mirrored into a store that keeps one memory per text in a
scope: the user's own memory of the same text must never be deleted by the entry's removal."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.scope import SessionContext, resolve_scope
from memcore.service import BUILTIN_SOURCE, MemoryService
from memcore_sqlite import SqliteMemoryStore

TEXT = "Nell prefers metric units"


def _service(tmp_path: Path) -> tuple[SqliteMemoryStore, MemoryService]:
    store = SqliteMemoryStore(tmp_path / "m.db", embedder=None)
    store.ensure_store("m")
    scope = resolve_scope(SessionContext(user_id="nell", session_id="s1"))
    return store, MemoryService(store, store_name="m", scope=scope)


def _memories(store: SqliteMemoryStore, svc: MemoryService) -> list[tuple[str, dict[str, str]]]:
    return [(m.text, dict(m.metadata)) for m in store.list_memories("m", svc.search_pattern).items]


@pytest.mark.parametrize("first", ["user", "builtin"])
def test_a_builtin_removal_never_deletes_the_users_memory_of_the_same_text(
    tmp_path: Path, first: str
) -> None:
    """Both writes became one memory carrying the mirror's tags, which the removal deleted:
    what the user asked to remember was gone, in either order."""
    store, svc = _service(tmp_path)
    if first == "user":
        svc.remember(TEXT, metadata={"topic": "units"}, sync=True)
        assert svc.mirror_builtin("add", "user", TEXT) is None  # held already: not mirrored
    else:
        svc.mirror_builtin("add", "user", TEXT)
        svc.remember(TEXT, metadata={"topic": "units"}, sync=True)
    assert _memories(store, svc) == [(TEXT, {"topic": "units"})]
    svc.mirror_builtin("remove", "user", "metric")
    assert _memories(store, svc) == [(TEXT, {"topic": "units"})]


def test_a_mirror_alone_is_still_removed(tmp_path: Path) -> None:
    store, svc = _service(tmp_path)
    svc.remember("Nell lives in Leeds", sync=True)
    svc.mirror_builtin("add", "user", TEXT)
    assert [m[1].get("source") for m in _memories(store, svc) if m[0] == TEXT] == [BUILTIN_SOURCE]
    svc.mirror_builtin("remove", "user", "metric")
    assert _memories(store, svc) == [("Nell lives in Leeds", {})]
