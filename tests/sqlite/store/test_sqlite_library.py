"""``Memory.open`` on the embedded store: it owns the store it opened, a config that names the
tenant pins it, and a read policy narrows in one argument."""

from __future__ import annotations

from pathlib import Path

import pytest

import memcore
from memcore import MemcoreConfig, Memory
from memcore.errors import InvalidInput, StoreClosed

LEXICAL = MemcoreConfig(embedder="none")


def test_open_owns_the_store_and_close_closes_it(tmp_path: Path) -> None:
    mem = Memory.open("local", config=LEXICAL, user_id="alice", path=tmp_path / "m.db")
    shared = Memory(mem.store, scope=mem.scope, store_name=LEXICAL.memory_store_name)
    [mid] = shared.add(text="Alice keeps a diary", user_id="alice")
    shared.close()  # built on a given store: leaves it open
    assert mem.get(mid).text == "Alice keeps a diary"
    mem.close()
    with pytest.raises(StoreClosed):
        mem.store.list_stores()


def test_a_config_tenant_refuses_per_call_users(tmp_path: Path) -> None:
    cfg = MemcoreConfig(embedder="none", tenant_id="acme")
    with Memory.open("local", config=cfg, user_id="alice", path=tmp_path / "m.db") as mem:
        mem.add(text="Shared by the whole company")
        with pytest.raises(InvalidInput):
            mem.search("company", user_id="bob")
        assert mem.scope.tenant_id == "acme"


def test_open_takes_a_read_policy(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.open("local", config=LEXICAL, user_id="u", run_id="r1", path=path) as mem:
        mem.add(text="The user said this in run one")
        mem.add(text="The user said this in run two", run_id="r2")
    narrow = Memory.open(
        "local", config=LEXICAL, user_id="u", run_id="r1", policy=memcore.SessionRead(), path=path
    )
    with narrow:
        assert [m.text for m in narrow.list().items] == ["The user said this in run one"]
        assert len(narrow.search("user said")) == 1


def test_history_dates_every_version(tmp_path: Path) -> None:
    with Memory.open("local", config=LEXICAL, path=tmp_path / "m.db") as mem:
        [mid] = mem.add(text="Fay lives in Lyon", user_id="fay")
        mem.update(mid, text="Fay lives in Porto", user_id="fay")
        [entry] = mem.history(mid, user_id="fay")
        assert (entry.text, entry.version) == ("Fay lives in Porto", 2)
        assert entry.created_at is not None and entry.updated_at is not None
        assert entry.updated_at >= entry.created_at
