"""The vector shortlist run in the store's thread beside the lexical stage: the same answers
as the sequential path, errors that surface as they would there, a thread that close() joins,
and correct answers when several threads search at once."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import InvalidInput, ProtocolError, StoreClosed, Unavailable
from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.search import ranking
from memcore_sqlite.search.overlap import Overlap
from memcore_sqlite.vector.shortlist import Shortlister

DIM = 64
STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")
BOB = Scope("app", "bob", "agent", "run")
THREAD = "memcore-sqlite-search"
QUERIES = ["coffee in paris", "the dog and the cat", "piano", "rain bike trip", "zebra"]
ASKS: list[dict[str, Any]] = [
    {},
    {"top_k": 1},
    {"top_k": 50},
    {"filters": {"k": "1"}},
    {"min_similarity": 0.4},
    {"mode": "vector"},
    {"mode": "lexical"},
]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["coffee", "tea", "museum", "trip", "paris", "dog", "cat", "piano", "bike", "rain"]
    return [" ".join(rng.choices(words, k=rng.randint(2, 9))) + f" note {i}" for i in range(n)]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("overlap") / "m.db"
    with SqliteMemoryStore(path, embedder=HashingEmbedder(DIM)) as store:
        store.ensure_store(STORE)
        store.add_many(
            STORE,
            [TextItem(ALICE, t, metadata={"k": str(i % 3)}) for i, t in enumerate(_texts(900, 1))],
        )
        store.add_many(STORE, [TextItem(BOB, t) for t in _texts(300, 2)])
    return path


def _open(path: Path, *, overlap: bool) -> SqliteMemoryStore:
    """A store whose every scope is two-stage, overlapped or not."""
    store = SqliteMemoryStore(path, embedder=HashingEmbedder(DIM))
    assert store._tx.vectors is not None
    store._tx.vectors.exact_rows = 0
    store._tx.overlap.min_rows = 0 if overlap else float("inf")
    store._tx.overlap.adaptive = False  # every search overlaps, however busy the machine
    return store


def _answers(store: SqliteMemoryStore) -> list[list[tuple[str, float, dict[str, float]]]]:
    out = []
    for q in QUERIES:
        for ask in ASKS:
            hits = store.search(STORE, ALICE.tenant_pattern(), q, **ask)
            assert all(h.memory.scope == ALICE for h in hits)
            out.append([(h.memory.id, h.score, dict(h.signals)) for h in hits])
    return out


def _search_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD)]


@pytest.fixture
def sequential(path: Path) -> list[list[tuple[str, float, dict[str, float]]]]:
    with _open(path, overlap=False) as store:
        return _answers(store)


@pytest.fixture
def slow_shortlist(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """The shortlist takes a while, so the lexical stage surely runs while it does; the list
    records each one that finished."""
    finished: list[bool] = []
    real = Shortlister.__call__

    def slow(self: Shortlister, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.01)
        out = real(self, *args, **kwargs)
        finished.append(threading.current_thread().name.startswith(THREAD))
        return out

    monkeypatch.setattr(Shortlister, "__call__", slow)
    yield finished


def test_overlapped_searches_answer_as_sequential_ones(path: Path, sequential: Any) -> None:
    assert any(sequential)
    before = len(_search_threads())
    with _open(path, overlap=True) as store:
        assert _answers(store) == sequential
        assert len(_search_threads()) == before + 1  # the shortlists did run in the thread


def test_small_scopes_and_single_signal_searches_start_no_thread(path: Path) -> None:
    before = len(_search_threads())
    with SqliteMemoryStore(path, embedder=HashingEmbedder(DIM)) as store:
        assert store._tx.vectors is not None
        store._tx.vectors.exact_rows = 0  # two-stage, but far below the overlap's threshold
        store.search(STORE, ALICE.tenant_pattern(), "coffee")
    with _open(path, overlap=True) as store:
        for mode in ("vector", "lexical"):
            store.search(STORE, ALICE.tenant_pattern(), "coffee", mode=mode)
        assert len(_search_threads()) == before


def test_closing_the_store_joins_its_search_thread(path: Path) -> None:
    before = _search_threads()
    store = _open(path, overlap=True)
    store.search(STORE, ALICE.tenant_pattern(), "coffee in paris")
    started = [t for t in _search_threads() if t not in before]
    assert len(started) == 1 and started[0].is_alive()
    store.close()
    assert not started[0].is_alive()
    with pytest.raises(StoreClosed):
        store.search(STORE, ALICE.tenant_pattern(), "coffee in paris")
    assert _search_threads() == before


@pytest.mark.parametrize("overlap", [False, True], ids=["sequential", "overlapped"])
def test_a_database_error_in_the_thread_surfaces_as_the_typed_error(
    path: Path, overlap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(Shortlister, "__call__", broken)
    # One after the other, a hybrid search builds the shortlist only when its lexical hits
    # leave room for a vector-only row: a vector search always builds it.
    mode = "hybrid" if overlap else "vector"
    with _open(path, overlap=overlap) as store:
        with pytest.raises(ProtocolError) as caught:
            store.search(STORE, ALICE.tenant_pattern(), "coffee in paris", mode=mode)
        assert str(path) in str(caught.value)
        assert store.search(STORE, ALICE.tenant_pattern(), "coffee", mode="lexical")


def test_a_memcore_error_in_the_thread_reaches_the_caller_unchanged(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = InvalidInput("bad vector", field="vector")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(Shortlister, "__call__", broken)
    with _open(path, overlap=True) as store, pytest.raises(InvalidInput) as caught:
        store.search(STORE, ALICE.tenant_pattern(), "coffee in paris")
    assert caught.value is error


def test_a_failing_lexical_stage_waits_for_the_thread_and_raises_its_typed_error(
    path: Path, monkeypatch: pytest.MonkeyPatch, slow_shortlist: list[bool]
) -> None:
    def locked(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(ranking, "lexical", locked)
    with _open(path, overlap=True) as store:
        with pytest.raises(Unavailable):
            store.search(STORE, ALICE.tenant_pattern(), "coffee in paris")
        # The shortlist had finished before the error left the search (and the lock).
        assert slow_shortlist == [True]


def test_searches_from_several_threads_at_once_stay_correct(
    path: Path, sequential: Any, slow_shortlist: list[bool]
) -> None:
    results: list[Any] = []
    with _open(path, overlap=True) as store:

        def searcher() -> None:
            results.append(_answers(store))

        def writer() -> None:  # another tenant's writes change the codes under the searches
            for i in range(5):
                store.add_many(STORE, [TextItem(BOB, f"coffee and tea {i} {j}") for j in range(20)])

        threads = [threading.Thread(target=searcher) for _ in range(4)]
        threads.append(threading.Thread(target=writer))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 4
    assert all(r == sequential for r in results)
    # Every hybrid search's shortlist ran in the thread (vector searches run it in the caller's).
    hybrid = sum(1 for ask in ASKS if ask.get("mode") is None)
    assert slow_shortlist.count(True) == 4 * len(QUERIES) * hybrid


def test_overlap_returns_both_results_and_prefers_the_callers_error() -> None:
    overlap = Overlap(min_rows=0)
    overlap.adaptive = False
    try:
        assert overlap.run(lambda: "side", lambda: "main") == ("side", "main")

        def fail(what: str) -> Any:
            raise ValueError(what)

        with pytest.raises(ValueError, match="side"):
            overlap.run(lambda: fail("side"), lambda: "main")
        with pytest.raises(ValueError, match="main"):
            overlap.run(lambda: fail("side"), lambda: fail("main"))
    finally:
        overlap.close()
    assert not overlap.fits(10**9)
    before = len(_search_threads())
    assert overlap.run(lambda: 1, lambda: 2) == (1, 2)  # closed: in the caller's thread
    assert len(_search_threads()) == before


@pytest.mark.parametrize(("load", "together"), [(0.3, True), (1.5, True), (1.6, False)])
def test_the_stages_overlap_only_while_the_load_leaves_a_core_free(
    load: float, together: bool
) -> None:
    overlap = Overlap(min_rows=0)
    overlap.cores, overlap.load = 2, lambda: load
    try:
        ran_in = overlap.run(lambda: threading.current_thread().name, lambda: None)[0]
        assert ran_in.startswith(THREAD) is together
    finally:
        overlap.close()


def test_the_shortlist_runs_beside_fts5_and_not_beside_the_tenants_postings(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the tenant's postings serve its lexical stage (numpy and Python, which would only
    take turns at the GIL with the shortlist), a whole-tenant search runs its stages one after
    the other; searches the postings do not serve (before they are built, with filters, for
    one agent's scope) still overlap; the answers are those of the sequential store."""
    from memcore_sqlite.lexical.postings import cache as postings_cache

    monkeypatch.setattr(postings_cache, "MIN_ROWS", 0)  # this tenant of 900 rows is built
    tenant = ALICE.tenant_pattern()

    def overlapped(store: SqliteMemoryStore, pattern: Any, **ask: Any) -> bool:
        before = store._tx.overlap.eligible
        store.search(STORE, pattern, "coffee in paris", **ask)
        return store._tx.overlap.eligible > before

    with _open(path, overlap=True) as store, _open(path, overlap=False) as plain:
        assert overlapped(store, tenant)  # the first search: FTS5, nothing built yet
        for _ in range(2):
            store.search(STORE, tenant, "coffee in paris")
        assert store.settle(30) and store._tx.postings._entries, "the postings were not built"
        assert not overlapped(store, tenant)
        assert not overlapped(store, tenant, top_k=50)
        assert overlapped(store, tenant, filters={"k": "1"})
        assert overlapped(store, ALICE.pattern())
        assert not overlapped(store, tenant, mode="vector")  # a single signal: never
        assert _answers(store) == _answers(plain)
