"""What a session's first search costs: a store warmed for a scope builds nothing more in that
search, and a query asked again is not embedded again; the hits stay the same either way."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.testing import CountingEmbedder, HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.search import pipeline, ranking
from memcore_sqlite.vector import code_pages
from memcore_sqlite.vector.sketch import Sketch

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")
TEXTS = [
    "My sister Maya moved to Lisbon last spring",
    "I adopted a grey cat called Pixel in March",
    "The dentist appointment moved to Thursday at 3pm",
    "I have been learning to play the cello since June",
    "My favourite tea is a smoky lapsang souchong",
]


def _filled(path: Path, embedder: HashingEmbedder) -> SqliteMemoryStore:
    store = SqliteMemoryStore(path, embedder=embedder)
    store.ensure_store(STORE)
    for text in TEXTS:
        store.add_text(STORE, ALICE, text, sync=True)
    store.add_text(STORE, BOB, "Bob's sister lives in Lisbon too", sync=True)
    return store


def _ids(store: SqliteMemoryStore, query: str) -> list[tuple[str, float]]:
    hits = store.search(STORE, ALICE.tenant_pattern(), query, top_k=3)
    return [(h.memory.id, round(h.score, 6)) for h in hits]


def test_a_query_asked_again_is_embedded_once_with_the_same_hits(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with _filled(tmp_path / "m.db", embedder) as store:
        embedder.texts.clear()
        first = _ids(store, "where does my sister live?")
        again = _ids(store, "where does my sister live?")
        other = _ids(store, "what is my cat called?")
    assert embedder.texts == ["where does my sister live?", "what is my cat called?"]
    assert first == again and first != other


def test_a_warmed_scope_is_not_loaded_again_by_its_first_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    _filled(path, HashingEmbedder(64)).close()
    loads: list[object] = []
    real = code_pages.load

    def counted(*args: object, **kwargs: object) -> object:
        loads.append(args[2:4])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(code_pages, "load", counted)
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as cold:
        expected = _ids(cold, "where does my sister live?")
    assert loads, "a search of a fresh store reads the scope's codes"
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        before = len(store.list_requests(STORE, limit=100).items)
        loads.clear()
        store.warm(STORE, ALICE.tenant_pattern())
        assert loads  # the warm-up read them
        loads.clear()
        assert _ids(store, "where does my sister live?") == expected
        assert loads == []  # and the first search did not
        # Warming is not a request of the user's: no search is recorded for it.
        assert len(store.list_requests(STORE, limit=100).items) == before + 1


def test_a_warm_up_reads_the_english_word_list_the_first_search_would(tmp_path: Path) -> None:
    from memcore_sqlite.lexical import english

    with _filled(tmp_path / "m.db", HashingEmbedder(64)) as store:
        english.ranks.cache_clear()
        store.warm(STORE, ALICE.tenant_pattern())
        assert english.ranks.cache_info().currsize == 1


def test_warming_a_store_that_does_not_exist_yet_does_nothing(tmp_path: Path) -> None:
    with SqliteMemoryStore(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
        store.warm("nothing_here", ALICE.tenant_pattern())
        assert store.list_stores() == []


def test_a_warm_up_runs_no_query_and_holds_the_tenants_lengths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    _filled(path, HashingEmbedder(64)).close()
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        expected = _ids(store, "where does my sister live?")
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:

        def no_query(*args: object, **kwargs: object) -> None:
            raise AssertionError("a warm-up ran a query")

        with monkeypatch.context() as patched:
            patched.setattr(pipeline, "ranked", no_query)
            patched.setattr(ranking, "lexical", no_query)
            store.warm(STORE, ALICE.tenant_pattern())
        sid, generation, _ = store._tx.store_key(store._tx.conn, STORE)
        assert store._tx.lengths.held((sid, "app", "alice"), generation) == len(TEXTS)
        assert _ids(store, "where does my sister live?") == expected


def test_a_warmed_two_stage_scope_builds_no_sketch_in_its_first_search(
    tmp_path: Path, sketch_builds: list[int]
) -> None:
    """A scope searched in stages bounds rows from its sketch, which the first search that
    needs it builds (seconds at 100k rows): a warm-up builds it instead."""
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        store.ensure_store(STORE)
        store.add_many(
            STORE, [TextItem(ALICE, f"{t} (note {i})") for i in range(12) for t in TEXTS]
        )
    builds = sketch_builds
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        assert store._tx.vectors is not None
        store._tx.vectors.exact_rows = 0  # searched in stages, as a large scope is
        store.warm(STORE, ALICE.tenant_pattern())
        assert builds == [1]
        hits = store.search(STORE, ALICE.tenant_pattern(), "my sister", mode="vector")
        assert hits and builds == [1]  # the search needed the sketch, and found it built


def test_a_search_during_a_warm_ups_sketch_build_does_not_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up waits for the sketch, but not holding the store: a session's first
    question that comes while the sketch is being built is answered meanwhile (the same
    hits, from every row's int8 estimate), and the warm-up still returns with it built."""
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        store.ensure_store(STORE)
        store.add_many(
            STORE, [TextItem(ALICE, f"{t} (note {i})") for i in range(12) for t in TEXTS]
        )
        expected = store.search(STORE, ALICE.tenant_pattern(), "my sister", mode="vector")
    building, release = threading.Event(), threading.Event()
    real = Sketch.build

    def held(*args: Any) -> Sketch:
        building.set()
        assert release.wait(30)
        return real(*args)

    monkeypatch.setattr(Sketch, "build", held)
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        assert store._tx.vectors is not None
        store._tx.vectors.exact_rows = 0  # searched in stages, as a large scope is
        warm = threading.Thread(target=store.warm, args=(STORE, ALICE.tenant_pattern()))
        warm.start()
        try:
            assert building.wait(30)
            answered: list[Any] = []
            search = threading.Thread(
                target=lambda: answered.append(
                    store.search(STORE, ALICE.tenant_pattern(), "my sister", mode="vector")
                )
            )
            search.start()
            search.join(10)
            assert not search.is_alive(), "the search waited for the sketch's build"
            assert [(h.memory.id, h.score) for h in answered[0]] == [
                (h.memory.id, h.score) for h in expected
            ]
            assert warm.is_alive()  # the warm-up is still waiting for the build
        finally:
            release.set()
            warm.join(30)
        assert not warm.is_alive()
        [entry] = list(store._tx.vectors._entries.values())
        assert entry.ready_sketch() is not None
