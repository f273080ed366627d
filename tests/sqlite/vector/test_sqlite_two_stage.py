"""Two-stage vector search (codes pick candidates, the stored vectors rescore them) against an
exact scan of the stored vectors (float16, read back as float32): same rows, same order, same
scores; after writes, across processes and tenants."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.schema import MIGRATIONS
from memcore_sqlite.vector import code_pages, quantize, sketch
from memcore_sqlite.vector.cache import VectorCache, _Entry, exact_top
from memcore_sqlite.vector.quantize import encode
from memcore_sqlite.vector.sketch import Sketch

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")
BOB = Scope("app", "bob", "agent", "run")
DIM = 64


def as_stored(rows: Any) -> Any:
    """Vectors as the file holds them: float16, read back as float32."""
    return np.asarray(rows, dtype=np.float32).astype("<f2").astype(np.float32)


def _data(n: int, seed: int, dim: int = DIM) -> tuple[Any, Any]:
    """Random unit rows with neighbours of the query planted at many distances, some of them
    duplicated (exact ties), and the query."""
    rng = np.random.default_rng(seed)
    query = rng.standard_normal(dim).astype(np.float32)
    query /= np.linalg.norm(query)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    planted = min(n, 60)
    for i in range(planted):
        rows[i] = query + rng.uniform(0.2, 3.0) * rng.standard_normal(dim) / np.sqrt(dim)
    for i in range(0, planted - 1, 7):  # duplicates: identical vectors, identical scores
        rows[i + 1] = rows[i]
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rng.shuffle(rows)
    return as_stored(rows), query


def _fetch(seqs: Any, rows: Any) -> Any:
    blobs = {int(s): r.astype("<f2").tobytes() for s, r in zip(seqs, rows)}

    def fetch(wanted: Sequence[int]) -> list[tuple[int, bytes]]:
        return [(s, blobs[s]) for s in wanted]

    return fetch


def _two_stage(
    rows: Any, query: Any, n: int, *, sketched: bool = True, **sizes: Any
) -> list[tuple[int, float]]:
    """``sketched``: with the scope's sketch built first (every stage), else as a scope's
    first search, which does not wait for it."""
    seqs = np.arange(1, len(rows) + 1, dtype=np.int64) * 3  # seqs need not be dense
    cache = VectorCache(rows.shape[1], **sizes)
    entry = _Entry(0, encode(seqs, rows), None)
    if sketched and len(rows):
        entry.sketch()
    return cache.top(entry, query, n, _fetch(seqs, rows))


@pytest.mark.parametrize("n", [0, 1, 2, 29, 30, 31, 99, 100, 101, 1_999, 2_000, 2_001, 6_000])
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("sketched", [True, False])
def test_two_stage_equals_the_exact_scan(n: int, seed: int, sketched: bool) -> None:
    rows, query = _data(n, seed)
    seqs = np.arange(1, n + 1, dtype=np.int64) * 3
    exact = exact_top(seqs, rows, query, 30)
    got = _two_stage(rows, query, 30, sketched=sketched)
    assert [s for s, _ in got] == [s for s, _ in exact]
    assert [c for _, c in got] == pytest.approx([c for _, c in exact], abs=1e-6)


def _no_sketch_builds_running() -> None:
    """Earlier tests' background builds, which would call a patched build too."""
    for thread in threading.enumerate():
        if thread.name == "memcore-sketch":
            thread.join(60)


@pytest.fixture
def held_sketch_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[threading.Event, list[str]]]:
    """Sketch builds wait for the event; the list gets the name of each build's thread."""
    _no_sketch_builds_running()
    release = threading.Event()
    threads: list[str] = []
    real = Sketch.build

    def build(q8: Any, scales: Any, capacity: int, *stop: Any) -> Sketch:
        threads.append(threading.current_thread().name)
        release.wait(30)
        return real(q8, scales, capacity, *stop)

    monkeypatch.setattr(Sketch, "build", staticmethod(build))
    yield release, threads
    release.set()


def _started(threads: list[str]) -> None:
    deadline = time.monotonic() + 30
    while not threads and time.monotonic() < deadline:
        time.sleep(0.001)


def test_a_scopes_first_search_does_not_wait_for_its_sketch(
    held_sketch_builds: tuple[threading.Event, list[str]],
) -> None:
    """The sketch is built in a thread of its own while the first searches estimate every
    row: the same hits before it is there and after."""
    release, threads = held_sketch_builds
    rows, query = _data(6_000, 4)
    seqs = np.arange(1, 6_001, dtype=np.int64) * 3
    cache = VectorCache(DIM)
    entry = _Entry(0, encode(seqs, rows), None)
    fetch = _fetch(seqs, rows)
    exact = exact_top(seqs, rows, query, 10)
    assert [s for s, _ in cache.top(entry, query, 10, fetch)] == [s for s, _ in exact]
    assert [s for s, _ in cache.top(entry, query, 10, fetch)] == [s for s, _ in exact]
    _started(threads)
    assert threads == ["memcore-sketch"]  # one build, and not in the searching thread
    release.set()
    assert entry.wait_sketch(30)
    assert [s for s, _ in cache.top(entry, query, 10, fetch)] == [s for s, _ in exact]


def test_asking_for_the_sketch_during_its_build_waits_for_that_build(
    held_sketch_builds: tuple[threading.Event, list[str]],
) -> None:
    """A warm-up that asks for the sketch while a first search's build runs in the
    background gets that build's sketch: the projections are made once, not twice."""
    release, threads = held_sketch_builds
    rows, _ = _data(6_000, 6)
    entry = _Entry(0, encode(np.arange(1, 6_001, dtype=np.int64), rows), None)
    assert entry.ready_sketch() is None
    _started(threads)
    got: list[Sketch] = []
    warming = threading.Thread(target=lambda: got.append(entry.sketch()))
    warming.start()
    time.sleep(0.2)  # the warm-up is waiting, not building
    release.set()
    warming.join(30)
    assert threads == ["memcore-sketch"]
    assert got and got[0] is entry.ready_sketch()


def test_a_warm_up_and_a_searchs_build_started_on_its_way_out_build_once(
    held_sketch_builds: tuple[threading.Event, list[str]],
) -> None:
    """A search hands its build to the list it starts once it has returned; a warm-up that asks
    for the sketch in between starts that build itself, and the search's start finds it under
    way: the projections are made once."""
    release, threads = held_sketch_builds
    rows, _ = _data(6_000, 8)
    entry = _Entry(0, encode(np.arange(1, 6_001, dtype=np.int64), rows), None)
    later: list[Any] = []
    assert entry.ready_sketch(later) is None
    assert threads == [] and len(later) == 1  # nothing started while the search runs
    got: list[Sketch] = []
    warming = threading.Thread(target=lambda: got.append(entry.sketch()))
    warming.start()
    _started(threads)
    for start in later:  # the search returns
        start()
    release.set()
    warming.join(30)
    assert entry.wait_sketch(30)
    assert threads == ["memcore-sketch"]
    assert got and got[0] is entry.ready_sketch()


def test_a_write_during_a_sketch_build_discards_it(
    held_sketch_builds: tuple[threading.Event, list[str]],
) -> None:
    """Rows appended and removed while the sketch is built from a snapshot: that sketch is
    thrown away and built again from the rows as they are, so no row lacks its bound."""
    release, threads = held_sketch_builds
    rows, query = _data(6_000, 5)
    seqs = np.arange(1, 6_001, dtype=np.int64) * 3
    cache = VectorCache(DIM)
    entry = _Entry(0, encode(seqs[:5_000], rows[:5_000]), None)
    assert entry.ready_sketch() is None
    _started(threads)  # the build has taken its snapshot of the rows
    entry.append(encode(seqs[5_000:], rows[5_000:]), rows[5_000:], cache.exact_rows)
    entry.remove(int(seqs[0]))
    release.set()
    assert entry.wait_sketch(30)
    assert len(threads) == 2  # the first build was overtaken by the writes
    kept = slice(1, None)
    exact = exact_top(seqs[kept], rows[kept], query, 10)
    # The best rows of the query planted at the end, after the first build began.
    tail = rows[5_000:].copy()
    tail_query = tail[3]
    got = cache.top(entry, tail_query, 10, _fetch(seqs, rows))
    assert [s for s, _ in got] == [s for s, _ in exact_top(seqs[kept], rows[kept], tail_query, 10)]
    got = cache.top(entry, query, 10, _fetch(seqs, rows))
    assert [s for s, _ in got] == [s for s, _ in exact]


def test_every_stage_runs_and_still_matches_the_exact_scan() -> None:
    rows, query = _data(3_000, 3)
    seqs = np.arange(1, 3_001, dtype=np.int64) * 3
    exact = exact_top(seqs, rows, query, 10)
    got = _two_stage(rows, query, 10)
    assert [s for s, _ in got] == [s for s, _ in exact]


@pytest.mark.parametrize("allowed", [None, "odd"])
def test_a_widened_shortlist_is_a_fresh_ones_and_bounds_the_head_once(
    allowed: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One search's shortlist of the best 10, widened to the pool of 100, is what a
    shortlist of 100 made from scratch would be, and every row's head is bounded once."""
    rows, query = _data(6_000, 4)
    seqs = np.arange(1, 6_001, dtype=np.int64) * 3
    only = None if allowed is None else seqs[1::2]
    entry = _Entry(0, encode(seqs, rows), None)
    entry.sketch()  # as it is once its build in the background is done
    cache = VectorCache(DIM, exact_rows=0)
    heads: list[int] = []
    block = sketch.Turned.block

    def counted(self: sketch.Turned, j: int, *args: Any) -> Any:
        heads.append(j)
        return block(self, j, *args)

    monkeypatch.setattr(sketch.Turned, "block", counted)
    shortlister = cache.shortlister(entry, query, only)
    for n in (10, 100):
        got = shortlister(n)
        fresh = cache.shortlist(entry, query, n, only)
        for a, b in zip(got, fresh):
            assert a.tolist() == b.tolist()
    # Each block of the head read by the shortlister once, and by the two fresh ones.
    assert sorted(heads) == sorted(3 * list(range(len(entry.sketch().cuts))))


@pytest.mark.parametrize("n", [0, 1, 5, 100])
def test_scopes_no_larger_than_the_rescoring_set_are_exact_on_any_data(n: int) -> None:
    rng = np.random.default_rng(n)
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    rows = as_stored(rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9))
    query = rows[0] if n else rng.standard_normal(DIM).astype(np.float32)
    seqs = np.arange(1, n + 1, dtype=np.int64) * 3
    assert _two_stage(rows, query, 7) == exact_top(seqs, rows, query, 7)


def test_an_entry_knows_whether_its_seqs_rise_with_the_row() -> None:
    rows = np.eye(4, DIM, dtype=np.float32)
    entry = _Entry(0, encode(np.array([2, 5, 9, 11], dtype=np.int64), rows), None)
    assert entry.ascending()
    entry.remove(5)  # the last row moves into its place: 2, 11, 9
    assert not entry.ascending()
    assert entry.positions(np.array([9, 11, 2, 5])).tolist() == [2, 1, 0, -1]


def test_rows_tied_at_the_cut_are_all_kept_and_the_newest_win() -> None:
    """Every row the same vector (seqs out of position order): every row ties at both cuts,
    so none can be dropped on a bound; the answer is the newest rows, as the exact scan's."""
    rng = np.random.default_rng(3)
    vector = rng.standard_normal(DIM).astype(np.float32)
    vector = as_stored(vector / np.linalg.norm(vector))
    seqs = rng.permutation(np.arange(1, 3_001, dtype=np.int64) * 3)
    rows = np.tile(vector, (len(seqs), 1))
    entry = _Entry(0, encode(seqs, rows), None)
    entry.sketch()
    cache = VectorCache(DIM, exact_rows=0)
    got, _, _ = cache.shortlist(entry, vector, 10)
    assert sorted(got.tolist()) == sorted(seqs.tolist())
    blobs = {int(s): r.astype("<f2").tobytes() for s, r in zip(seqs, rows)}
    top = cache.top(entry, vector, 10, lambda want: [(s, blobs[s]) for s in want])
    assert top == exact_top(seqs, rows, vector, 10)


@pytest.mark.parametrize(
    "index", [[], [3, 1], [True, False, True, False, True], slice(1, 3), np.array([4, 0, 4])]
)
def test_a_subset_of_codes_holds_the_rows_asked_for(index: Any) -> None:
    """Positions (repeats too), masks, slices, nothing: the same rows as indexing each array."""
    rng = np.random.default_rng(1)
    codes = encode(np.arange(10, 15, dtype=np.int64), rng.standard_normal((5, 70)))
    codes = codes.take(slice(0, 5))
    plain = np.asarray(index) if isinstance(index, list) else index
    if isinstance(index, list) and not index:
        plain = np.zeros(0, dtype=np.int64)
    got = codes.take(index)
    for have, want in zip(
        (got.seqs, got.scales, got.q8),
        (codes.seqs[plain], codes.scales[plain], codes.q8[plain]),
    ):
        assert have.dtype == want.dtype and np.array_equal(have, want)


class TableEmbedder:
    """Each text's vector is given: tests know every cosine exactly."""

    def __init__(self, table: dict[str, Any]) -> None:
        self.table = table

    dimension = DIM
    name = "table-64"

    def embed(self, texts: Sequence[str]) -> list[Any]:
        return [self.table[t] for t in texts]


def _expected(table: dict[str, Any], live: list[str], query: Any, k: int) -> list[str]:
    """The exact scan's order over the live texts' stored vectors (inserted in list order:
    newer = later)."""
    scores = {t: float(np.dot(as_stored(table[t]), query)) for t in live}
    order = sorted(range(len(live)), key=lambda i: (-scores[live[i]], -i))
    return [live[i] for i in order[:k]]


def _open(path: Path, embedder: Any, exact_rows: int) -> SqliteMemoryStore:
    """A store whose scopes up to ``exact_rows`` rows are scanned exactly (0: always two-stage)."""
    store = SqliteMemoryStore(path, embedder=embedder)
    assert store._tx.vectors is not None
    store._tx.vectors.exact_rows = exact_rows
    return store


BOTH = pytest.mark.parametrize("exact_rows", [0, 2_000], ids=["two-stage", "small-exact"])


def _texts(store: SqliteMemoryStore, scope: Scope, query: Any, k: int = 10) -> list[str]:
    hits = store.search_vector(STORE, scope.tenant_pattern(), "q", query, mode="vector", top_k=k)
    return [h.memory.text for h in hits]


@BOTH
def test_adds_updates_and_deletes_are_seen_by_this_process_and_a_fresh_one(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, exact_rows: int
) -> None:
    monkeypatch.setattr(code_pages, "PAGE_ROWS", 16)  # many pages, splits and empty pages
    rows, query = _data(400, 5)
    texts = [f"memory {i}" for i in range(len(rows))]
    table = dict(zip(texts, rows))
    table.update({f"new {i}": r for i, r in enumerate(_data(50, 6)[0])})
    embedder = TableEmbedder(table)
    live = list(texts)
    with _open(db_path, embedder, exact_rows) as store:
        store.ensure_store(STORE)
        ids = store.add_many(STORE, [TextItem(ALICE, t) for t in texts])
        assert _texts(store, ALICE, query) == _expected(table, live, query, 10)
        best = _expected(table, live, query, 40)
        for text in best[:20:2]:  # delete half of the best rows
            store.delete_memory(STORE, ALICE, ids[texts.index(text)])
            live.remove(text)
        for i, text in enumerate(best[1:20:2][:5]):  # re-embed others with new text
            store.update_memory(STORE, ALICE, ids[texts.index(text)], text=f"new {i}")
            live[live.index(text)] = f"new {i}"
        for i in range(5, 50):
            store.add_text(STORE, ALICE, f"new {i}")
            live.append(f"new {i}")
        in_process = _texts(store, ALICE, query, 30)
    # Updated rows keep their seq, so their place in the tie order is where they were.
    expected = _expected(table, live, query, 30)
    assert in_process == expected
    with _open(db_path, embedder, exact_rows) as fresh:
        assert _texts(fresh, ALICE, query, 30) == expected


@BOTH
def test_a_write_by_another_process_reaches_a_loaded_scope(db_path: Path, exact_rows: int) -> None:
    embedder = HashingEmbedder(DIM)
    with _open(db_path, embedder, exact_rows) as store:
        store.ensure_store(STORE)
        ids = store.add_many(
            STORE, [TextItem(ALICE, f"note {i} about gardening") for i in range(300)]
        )
        target = "the walrus plays the tuba at dawn"
        gone = "note 7 about gardening"
        vector = embedder.embed([target])[0]
        assert target not in _texts(store, ALICE, vector)  # the codes are loaded now
        child = (
            "import sys\n"
            "from memcore.scope import Scope\n"
            "from memcore.testing import HashingEmbedder\n"
            "from memcore_sqlite import SqliteMemoryStore\n"
            "s = SqliteMemoryStore(sys.argv[1], embedder=HashingEmbedder(64))\n"
            "scope = Scope('app', 'alice', 'agent', 'run')\n"
            "s.add_text('mem', scope, sys.argv[2])\n"
            "s.delete_memory('mem', scope, sys.argv[3])\n"
            "s.close()\n"
        )
        subprocess.run(
            [sys.executable, "-c", child, str(db_path), target, ids[7]], check=True, timeout=60
        )
        found = _texts(store, ALICE, vector)
        assert found[0] == target
        assert gone not in _texts(store, ALICE, embedder.embed([gone])[0], 50)


@BOTH
def test_a_tenant_never_sees_another_tenants_vectors(db_path: Path, exact_rows: int) -> None:
    rows, query = _data(300, 7)
    table = {f"alice {i}": r for i, r in enumerate(rows)}
    table.update({"bob exact": query, **{f"bob {i}": r for i, r in enumerate(rows)}})
    with _open(db_path, TableEmbedder(table), exact_rows) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, f"alice {i}") for i in range(300)])
        store.add_many(
            STORE, [TextItem(BOB, f"bob {i}") for i in range(300)] + [TextItem(BOB, "bob exact")]
        )
        alice = _texts(store, ALICE, query, 50)
        assert alice and all(t.startswith("alice ") for t in alice)
        assert _texts(store, BOB, query, 1) == ["bob exact"]


def test_a_file_from_before_code_pages_gets_them_on_open(db_path: Path) -> None:
    rows, query = _data(500, 8)
    table = {f"memory {i}": r for i, r in enumerate(rows)}
    embedder = TableEmbedder(table)
    with SqliteMemoryStore(db_path, embedder=embedder) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, t) for t in table])
    conn = sqlite3.connect(db_path)
    # The version just before code pages (migration 4), whatever came before it; vectors were
    # float32 then.
    before = max(v for v, _ in MIGRATIONS if v < 4)
    conn.executemany(
        "UPDATE memory_vectors SET vector = ? WHERE seq = ?",
        [
            (np.frombuffer(blob, "<f2").astype("<f4").tobytes(), seq)
            for seq, blob in conn.execute("SELECT seq, vector FROM memory_vectors").fetchall()
        ],
    )
    conn.commit()
    conn.executescript(f"DROP TABLE vector_pages; PRAGMA user_version = {before};")
    conn.close()
    with _open(db_path, embedder, 0) as store:
        assert _texts(store, ALICE, query) == _expected(table, list(table), query, 10)


def test_a_small_scope_that_grows_past_the_exact_size_still_finds_the_best(db_path: Path) -> None:
    rows, query = _data(200, 9)
    texts = [f"memory {i}" for i in range(200)]
    table = dict(zip(texts, rows))
    with _open(db_path, TableEmbedder(table), 100) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, t) for t in texts[:80]])
        assert _texts(store, ALICE, query) == _expected(table, texts[:80], query, 10)
        store.add_many(STORE, [TextItem(ALICE, t) for t in texts[80:]])  # 200 > 100 now
        assert store._tx.vectors is not None
        assert all(e.matrix is None for e in store._tx.vectors._entries.values())
        assert _texts(store, ALICE, query, 30) == _expected(table, texts, query, 30)


@BOTH
def test_vectors_of_deferred_and_backfilled_writes_get_codes(
    db_path: Path, exact_rows: int
) -> None:
    rows, query = _data(300, 10)
    table = {f"memory {i}": r for i, r in enumerate(rows)}
    embedder = TableEmbedder(table)
    texts = list(table)
    with SqliteMemoryStore(db_path) as lexical:  # written without vectors at all
        lexical.ensure_store(STORE)
        lexical.add_many(STORE, [TextItem(ALICE, t) for t in texts[:150]])
    with _open(db_path, embedder, exact_rows) as store:
        assert store.backfill_vectors(STORE) == 150
        store.defer_vectors = True
        for t in texts[150:]:
            store.add_text(STORE, ALICE, t)  # embedded by the next semantic search
        assert _texts(store, ALICE, query, 30) == _expected(table, texts, query, 30)
    with _open(db_path, embedder, exact_rows) as fresh:
        assert _texts(fresh, ALICE, query, 30) == _expected(table, texts, query, 30)


def _sorted_top(seqs: Any, rows: Any, query: Any, n: int) -> list[tuple[int, float]]:
    """The exact scan by sorting every row: score descending, newest first, numbers only."""
    scores = np.einsum("ij,j->i", rows, query)
    order = np.lexsort((-seqs, -scores))[: max(n, 0)]
    order = order[np.isfinite(scores[order])]
    return list(zip(seqs[order].tolist(), scores[order].tolist()))


@pytest.mark.parametrize("n", [0, 1, 7, 10, 59, 60, 61, 499, 500, 501])
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_exact_top_sorts_only_what_can_make_the_cut_and_equals_sorting_all(
    n: int, seed: int
) -> None:
    """Ties at the cut (duplicated rows, a query orthogonal to many rows), scrambled seqs and,
    in one case, rows that are not numbers: the same pairs in the same order as a full sort."""
    rows, query = _data(500, seed)
    rng = np.random.default_rng(seed)
    seqs = rng.permutation(5_000)[:500].astype(np.int64)
    rows[rng.integers(0, 500, 40)] = rows[0]  # many rows tied with one another
    rows[rng.integers(0, 500, 20)] = 0.0  # many tied at 0
    if seed == 5:
        rows[rng.integers(0, 500, 5)] = np.nan
        rows[7] = np.inf
    assert exact_top(seqs, rows, query, n) == _sorted_top(seqs, rows, query, n)


def test_a_sketch_build_that_fails_leaves_searches_exact_and_is_not_retried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def build(q8: Any, scales: Any, capacity: int, *stop: Any) -> Sketch:
        calls.append(len(q8))
        raise MemoryError

    _no_sketch_builds_running()
    monkeypatch.setattr(Sketch, "build", staticmethod(build))
    rows, query = _data(3_000, 6)
    seqs = np.arange(1, 3_001, dtype=np.int64) * 3
    cache = VectorCache(DIM)
    entry = _Entry(0, encode(seqs, rows), None)
    exact = exact_top(seqs, rows, query, 10)
    for _ in range(3):
        got = cache.top(entry, query, 10, _fetch(seqs, rows))
        assert [s for s, _ in got] == [s for s, _ in exact]
        assert not entry.wait_sketch(30)
    assert calls == [3_000]
    assert "MemoryError" in caplog.text


def test_a_search_starts_the_sketch_build_only_once_it_has_returned(
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    held_sketch_builds: tuple[threading.Event, list[str]],
) -> None:
    """A fresh process's first search of a large scope estimates every row; a build beside it
    would take the second core from it. The build starts when the search has returned, and
    the searches before and after it is there find the same rows."""
    release, threads = held_sketch_builds
    rows, query = _data(600, 7)
    texts = [f"memory {i}" for i in range(len(rows))]
    building: list[bool] = []
    estimate = quantize.approx_dot

    def watched(*args: Any) -> Any:
        building.append(any(t.name == "memcore-sketch" for t in threading.enumerate()))
        return estimate(*args)

    with _open(db_path, TableEmbedder(dict(zip(texts, rows))), 0) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, t) for t in texts])
        monkeypatch.setattr(quantize, "approx_dot", watched)
        first = _texts(store, ALICE, query)
        assert building and not any(building)  # no build ran while the search estimated rows
        _started(threads)
        assert threads == ["memcore-sketch"]  # started once the search had returned
        assert _texts(store, ALICE, query) == first  # a second search does not start another
        release.set()
        assert store.settle(timeout=30)
        assert threads == ["memcore-sketch"]
        assert (
            _texts(store, ALICE, query)
            == first
            == _expected(dict(zip(texts, rows)), texts, query, 10)
        )


def test_settle_waits_for_a_sketch_being_built(
    db_path: Path, held_sketch_builds: tuple[threading.Event, list[str]]
) -> None:
    """A benchmark settles before it times the steady state: that includes the sketch."""
    release, threads = held_sketch_builds
    embedder = HashingEmbedder(DIM)
    with SqliteMemoryStore(db_path, embedder=embedder) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, f"memory {i} of alice") for i in range(2_500)])
        hits = store.search(STORE, ALICE.tenant_pattern(), "memory 7 of alice", mode="vector")
        assert hits
        _started(threads)
        assert not store.settle(timeout=0.2)
        release.set()
        assert store.settle(timeout=30)
        again = store.search(STORE, ALICE.tenant_pattern(), "memory 7 of alice", mode="vector")
        assert [h.memory.id for h in again] == [h.memory.id for h in hits]
