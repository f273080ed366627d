"""Opening a store and searching it must not load what only writes and dream passes need.

A fresh install has no bytecode, so every module imported before the first search is compiled
from source at each start. This checks what is imported, not how long it takes (the timings
live in benchmarks/).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore

#: Modules a store open and a search do not need: the dream pass (store side and the core's
#: planner), the write paths, the core's configuration and the prompts for the user's model.
NOT_FOR_SEARCH = (
    "memcore.config",
    "memcore.dream",
    "memcore.extraction",
    "memcore_sqlite.chat_model.client",
    "memcore_sqlite.dream",
    "memcore_sqlite.operations.facts",
    "memcore_sqlite.operations.writes",
)

# The child's sequence is the cold-start benchmark's (benchmarks.sqlite_search._COLD).
_CHILD = """
import json, sys
import numpy as np
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore

class Named:  # the stored vectors' model; the query comes as a vector
    name, dimension = sys.argv[2], int(sys.argv[3])
    def embed(self, texts):
        raise AssertionError("not used")

store = SqliteMemoryStore(sys.argv[1], embedder=Named())
pattern = Scope("app", "alice", "agent", "run").tenant_pattern()
hits = store.search_vector("mem", pattern, "weekend hike", json.loads(sys.argv[4]))
print(json.dumps({"hits": [h.memory.text for h in hits], "modules": sorted(sys.modules)}))
"""


def _loaded(modules: list[str]) -> list[str]:
    return sorted(
        m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_FOR_SEARCH)
    )


def test_a_store_open_and_search_load_no_write_or_dream_module(tmp_path: Path) -> None:
    path = tmp_path / "memcore.db"
    embedder = HashingEmbedder(64)
    with SqliteMemoryStore(path, embedder=embedder) as store:
        store.ensure_store("mem")
        scope = Scope("app", "alice", "agent", "run")
        store.add_text("mem", scope, "A hike in the hills on the weekend")
        store.add_text("mem", scope, "The user drinks tea")
    [query] = embedder.embed(["weekend hike"])
    args = [str(path), embedder.name, "64", json.dumps(list(query))]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["hits"][0] == "A hike in the hills on the weekend"
    assert _loaded(seen["modules"]) == []


def test_the_lazy_operations_are_bound_on_first_use(tmp_path: Path) -> None:
    """The operations built on first use answer like any other and stay bound after."""
    with SqliteMemoryStore(tmp_path / "memcore.db") as store:
        store.ensure_store("mem")
        scope = Scope("app", "alice", "agent", "run")
        receipt = store.add_text("mem", scope, "The user drinks tea")
        assert "add_text" in vars(store)  # bound once, found on the instance after
        [memory_id] = receipt.memory_ids
        assert store.get_memory("mem", scope, memory_id).text == "The user drinks tea"
        assert store.list_dream_tasks("mem").items == ()
        try:
            store.no_such_operation  # noqa: B018
        except AttributeError as exc:
            assert "no_such_operation" in str(exc)
        else:
            raise AssertionError("an unknown attribute must raise AttributeError")


def test_the_operations_hosts_check_with_isinstance_are_on_the_class(tmp_path: Path) -> None:
    """From Python 3.12 a runtime-checkable protocol looks members up statically, without
    ``__getattr__``: the store must still be a ``NeighbourTurns`` and a ``DreamUndo``."""
    import inspect

    from memcore.ports import DreamUndo, NeighbourTurns

    with SqliteMemoryStore(tmp_path / "memcore.db") as store:
        for name in ("neighbour_turns", "undo_dream_action"):
            inspect.getattr_static(store, name)  # raises AttributeError if only __getattr__ has it
        assert isinstance(store, NeighbourTurns) and isinstance(store, DreamUndo)


def test_a_fresh_store_is_every_port_it_implements_before_any_operation_ran(tmp_path: Path) -> None:
    """From Python 3.12 a runtime-checkable protocol looks only at static attributes: the
    operations built on first use must still be found on a store that has run none of them."""
    from memcore.ports import DreamUndo, MemoryStore, NeighbourTurns

    store = SqliteMemoryStore(tmp_path / "m.db")
    try:
        for port in (MemoryStore, NeighbourTurns, DreamUndo):
            assert isinstance(store, port), port
        assert "ensure_store" in dir(store)
    finally:
        store.close()
