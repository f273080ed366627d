"""A tenant's postings in memory: the lexical stage on them gives exactly what the FTS5
statements give, on many kinds of query; they follow every kind of write (this process's and
another's); the background build behaves under searches, writes, close and failure."""

from __future__ import annotations

import importlib.util
import logging
import random
import threading
from pathlib import Path

import pytest

from memcore.scope import Scope, ScopePattern
from memcore.testing import HashingEmbedder
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.lexical import analysis, build_pace, tags
from memcore_sqlite.lexical.postings import cache as postings_cache
from memcore_sqlite.lexical.postings import table as postings
from memcore_sqlite.lexical.query_tokens import QueryTokens
from memcore_sqlite.search import ranking
from memcore_sqlite.storage import tenant_prefixes as prefixes

from ..deleting_reviewer import DeletingReviewer

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
ALICE_OTHER_AGENT = Scope("app", "alice", "helper", "run2")
BOB = Scope("app", "bob", "agent", "run1")
QUERIES = (
    "kayak paddle",
    "kayak river trip",
    "paddle note",
    "the and of",
    "咖啡",
    "喜欢喝咖啡",
    "咖",
    "running runs",
    "café menu",
    "zzzmissing kayak",
    "zzzmissing",
)


@pytest.fixture(autouse=True)
def small_tenants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Postings for tenants of any size here, so the stores stay small."""
    monkeypatch.setattr(postings_cache, "MIN_ROWS", 1)


def _open(path: Path) -> SqliteMemoryStore:
    store = SqliteMemoryStore(path)
    store.ensure_store(STORE)
    return store


def _results(store: SqliteMemoryStore, queries: tuple[str, ...] = QUERIES) -> list[object]:
    return [
        [
            (h.memory.id, repr(h.score), sorted(h.signals.items()))
            for h in store.search(STORE, ALICE.tenant_pattern(), q, top_k=50, mode="lexical")
        ]
        for q in queries
    ]


def _from_file(path: Path, queries: tuple[str, ...] = QUERIES) -> list[object]:
    """The same searches in a fresh store: its first searches take the FTS5 path."""
    with SqliteMemoryStore(path) as fresh:
        fresh._tx.postings._connect = None  # never builds: every search on FTS5
        return [_results(fresh, (q,))[0] for q in queries]


def _held(store: SqliteMemoryStore) -> postings.Postings | None:
    return store._tx.postings._entries.get(_tenant(store))


def _tenant(store: SqliteMemoryStore) -> tuple[int, str, str]:
    sid = store._tx.conn.execute("SELECT id FROM stores WHERE name = ?", (STORE,)).fetchone()[0]
    return (int(sid), ALICE.app_id, ALICE.tenant_id)


def _settled(store: SqliteMemoryStore) -> postings.Postings:
    """Searched at one generation until the tenant's postings are built, and waited for
    (a tenant whose entry went soon after its build waits longer: build_pace)."""
    for _ in range(build_pace.MAX_WAIT + 1):
        _results(store, QUERIES[:1])
        assert store.settle(30)
        if (entry := _held(store)) is not None:
            return entry
    raise AssertionError("the tenant's postings were not built")


def _fill(store: SqliteMemoryStore) -> list[str]:
    items = [TextItem(ALICE, f"kayak paddle note {i}") for i in range(30)]
    items += [TextItem(ALICE, f"kayak river {i} trip " + "word " * (i * 20)) for i in range(10)]
    items += [TextItem(ALICE_OTHER_AGENT, "我喜欢喝咖啡 café menu running")]
    items += [TextItem(ALICE, "the runs of the café and 咖啡馆")]
    items += [TextItem(BOB, f"kayak paddle bob {i}") for i in range(10)]
    return store.add_many(STORE, items)


def _used(store: SqliteMemoryStore, query: str) -> bool:
    """Whether a search for ``query`` takes the postings."""
    taken: list[bool] = []
    real = store._tx.postings.term_rows

    def spy(*args: object) -> object:
        got = real(*args)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got

    store._tx.postings.term_rows = spy  # type: ignore[method-assign,assignment]
    try:
        _results(store, (query,))
    finally:
        del store._tx.postings.term_rows
    return taken == [True]


# -- the same results -------------------------------------------------------------------


def _corpus(rng: random.Random) -> tuple[list[str], list[str]]:
    """Texts over a Zipf-like vocabulary, so some terms are in most rows (common, past
    ranking.COMMON_TERM_ROWS) and most in a few; with stems, diacritics, CJK and stop-words."""
    words = [f"w{i}x" for i in range(600)] + ["running", "runs", "run", "café", "cafe"]
    words += ["paddle", "paddles", "kayak", "naïve"]
    weights = [1.0 / (i + 1) ** 0.9 for i in range(len(words))]
    cjk = ["咖啡", "喜欢", "茶", "我喜欢喝咖啡", "东京"]
    stop = sorted(analysis.STOP_WORDS)
    texts = []
    for i in range(3_000):
        n = rng.randint(2, 14)
        parts = rng.choices(words, weights, k=n) + rng.sample(stop, 2)
        if i % 7 == 0:
            parts.append(rng.choice(cjk))
        texts.append(" ".join(parts))
    return texts, words + cjk


def _queries(rng: random.Random, vocab: list[str]) -> list[str]:
    common, rare = vocab[:8], vocab[300:600]
    out = [" ".join(rng.sample(vocab, rng.randint(1, 6))) for _ in range(150)]
    out += [rng.choice(vocab) for _ in range(40)]
    out += [f"{rng.choice(rare)} {rng.choice(common)} {rng.choice(common)}" for _ in range(40)]
    out += [" ".join(rng.sample(common, rng.randint(2, 4))) for _ in range(40)]
    out += [f"{rng.choice(vocab)} nowhere{i}" for i in range(20)]
    out += ["the and of", "what was it", "咖", "喜欢喝咖啡", "nowhere at all", "Running RUNS"]
    return out


def test_postings_rank_exactly_as_fts5(db_path: Path) -> None:
    rng = random.Random(17)
    texts, vocab = _corpus(rng)
    store = _open(db_path)
    store.add_many(STORE, [TextItem(ALICE, t) for t in texts])
    store.add_many(STORE, [TextItem(BOB, t) for t in texts[:300]])
    queries = _queries(rng, vocab)
    entry = _settled(store)
    assert entry.rows == len(set(texts))
    sid, app, tenant = _tenant(store)
    pattern = ALICE.tenant_pattern()
    prefix = prefixes.lookup(store._tx.conn, sid, app, tenant)
    scope = tags.filter_expression(sid, pattern, {})
    conn = store._tx.conn
    generation = entry.generation
    compared, prefixed = 0, 0
    with store._tx.read():
        for q in queries:
            query = analysis.build_query(q, tags=None, prefix=prefix, scope=scope)
            held = store._tx.postings.term_rows(conn, (sid, app, tenant), generation, query, None)
            if held is None:
                assert any(analysis.is_prefix_term(t) for t in query.terms), q
                prefixed += 1
                continue
            for want, enough in ((100, 20), (10, 3), (5, 50)):
                fts = ranking.lexical(conn, query, want, enough, (sid, app, tenant))
                mem = ranking.lexical(conn, query, want, enough, (sid, app, tenant), None, held)
                assert list(mem.items()) == list(fts.items()), q
                assert all(type(seq) is int for seq in mem)
            compared += 1
    assert compared == len(queries) - prefixed and prefixed < 20
    common = [w for w in vocab if len(entry.rows_of(_id(entry, prefix, w))) > 500]
    assert len(common) >= 4  # queries of common terms only, and rare+common mixes
    # And through the store, against a fresh store's FTS5 path.
    sample = tuple(queries[::10])
    assert _results(store, sample) == _from_file(db_path, sample)
    terms = [analysis.query_terms(q) for q in sample]
    assert all(
        _used(store, q) for q, t in zip(sample, terms) if not any(map(analysis.is_prefix_term, t))
    )
    store.close()


def _id(entry: postings.Postings, prefix: str, word: str) -> int:
    token = prefix + word  # these words are their own stems
    term_id = entry.term_id(token)
    assert term_id is not None
    return term_id


def test_fallbacks_take_the_fts5_path(db_path: Path) -> None:
    store = _open(db_path)
    _fill(store)
    store.add_many(STORE, [TextItem(ALICE, "ab\u19b0cd marks", metadata={"topic": "x"})])
    _settled(store)
    assert _used(store, "kayak paddle")
    # A one-character CJK query is a prefix query.
    assert not _used(store, "咖")
    # A term FTS5 splits in two is a phrase, with no one token to look up. Since schema 15
    # (marks are token characters) no word of the analysis is one: "ab\u19b0cd" was.
    assert QueryTokens().tokens(store._tx.conn, ["ab cd", "ab\u19b0cd", "ข้"]) == [
        None,
        "ab\u19b0cd",
        "ข้",
    ]
    # A filter, or a scope below the tenant, never asks for the postings.
    hits = store.search(STORE, ALICE.tenant_pattern(), "marks", filters={"topic": "x"})
    assert [h.memory.text for h in hits] == ["ab\u19b0cd marks"]
    agent = store.search(STORE, ScopePattern("app", "alice", "helper"), "café", mode="lexical")
    assert [h.memory.scope for h in agent] == [ALICE_OTHER_AGENT]
    assert _results(store) == _from_file(db_path)
    store.close()


# -- staleness --------------------------------------------------------------------------


def test_first_search_never_builds(db_path: Path) -> None:
    store = _open(db_path)
    _fill(store)
    store.close()
    store = SqliteMemoryStore(db_path)
    _results(store, QUERIES[:1])
    assert store._tx.postings._thread is None and not store._tx.postings._entries
    store.close()


def test_a_write_to_another_tenant_keeps_the_postings(db_path: Path) -> None:
    store = _open(db_path)
    _fill(store)
    entry = _settled(store)
    before = entry.generation
    store.add_text(STORE, BOB, "kayak paddle from bob")
    store.add_many(STORE, [TextItem(BOB, "more kayak river trips")])
    assert _held(store) is entry and entry.generation == before + 2
    assert _used(store, "kayak paddle")
    assert _results(store) == _from_file(db_path)
    store.close()


def _writes(store: SqliteMemoryStore, ids: list[str]) -> list[object]:
    return [
        lambda: store.update_memory(STORE, ALICE, ids[0], text="kayak only"),
        lambda: store.update_memory(STORE, ALICE, ids[1], metadata={"k": "v"}),
        lambda: store.delete_memory(STORE, ALICE, ids[2]),
    ]


def _appends(store: SqliteMemoryStore) -> list[object]:
    return [
        lambda: store.add_text(STORE, ALICE, "a new kayak paddle trip zzzfresh"),
        lambda: store.add_many(
            STORE, [TextItem(ALICE, "kayak river runs"), TextItem(ALICE, "咖啡 zzzfresh café")]
        ),
        lambda: store.add_text(STORE, ALICE_OTHER_AGENT, "paddle café running"),
        lambda: store.add_messages(STORE, ALICE, [Message("user", "kayak paddle by message")]),
        # A repeated text rewrites its row's full-text entry with the same words.
        lambda: store.add_many(
            STORE, [TextItem(ALICE, "kayak paddle note 3"), TextItem(ALICE, "new canoe")]
        ),
    ]


APPENDED_QUERIES = (*QUERIES, "zzzfresh", "zzzfresh kayak", "canoe", "river runs", "message")


@pytest.mark.parametrize("which", range(5))
def test_rows_added_to_the_tenant_are_appended_exactly(db_path: Path, which: int) -> None:
    store = _open(db_path)
    _fill(store)
    entry = _settled(store)
    before = entry.generation
    _appends(store)[which]()  # type: ignore[operator]
    assert _held(store) is entry and entry.generation == before + 1 and entry.appended
    assert _used(store, "kayak paddle") and _used(store, "zzzfresh")
    assert _results(store, APPENDED_QUERIES) == _from_file(db_path, APPENDED_QUERIES)
    store.close()


def test_many_appends_stay_exact_until_the_cap(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings, "MAX_APPENDED", 12)
    store = _open(db_path)
    _fill(store)
    entry = _settled(store)
    for i in range(6):
        store.add_many(
            STORE, [TextItem(ALICE, f"kayak turn{i} zzzfresh"), TextItem(ALICE, f"paddle {i}")]
        )
        assert _held(store) is entry
        assert _results(store, APPENDED_QUERIES) == _from_file(db_path, APPENDED_QUERIES)
    store.add_text(STORE, ALICE, "one past the cap")
    assert _held(store) is None
    assert _results(store, APPENDED_QUERIES) == _from_file(db_path, APPENDED_QUERIES)
    store.close()


def test_a_row_written_again_is_not_appended(db_path: Path) -> None:
    """A seq that is not past every row held (here a vector stored later for a row the
    entry holds) is not an append: the entry goes."""
    store = _open(db_path)
    _fill(store)
    entry = _settled(store)
    tenant = _tenant(store)
    rows = [(entry.last_rowid, [entry.prefix + "kayak"])]
    assert not entry.append(rows) and not entry.appended
    store._tx.postings.apply_write(
        tenant[0], entry.generation, entry.generation + 1, [tenant[1:]], {tenant[1:]: rows}
    )
    assert _held(store) is None
    store.close()


@pytest.mark.parametrize("which", range(3))
def test_a_change_to_the_tenant_drops_the_postings(db_path: Path, which: int) -> None:
    store = _open(db_path)
    ids = _fill(store)
    _settled(store)
    _writes(store, ids)[which]()  # type: ignore[operator]
    assert _held(store) is None
    assert not _used(store, "kayak paddle")
    assert _results(store) == _from_file(db_path)
    # Built again by the same rule, and exact again.
    _settled(store)
    assert _used(store, "kayak paddle")
    assert _results(store) == _from_file(db_path)
    store.close()


def test_a_tenant_with_the_same_tag_drops_them(db_path: Path) -> None:
    """A tag collision, made here by hand: the colliding tenant's rows are in the scope count.
    Prefixes cannot collide (each tenant has its own number): a write to another tenant, of
    this store or another, leaves the entry in use."""
    store = _open(db_path)
    _fill(store)
    sid = _tenant(store)[0]
    store.ensure_store("other")
    other = store._tx.conn.execute("SELECT id FROM stores WHERE name = 'other'").fetchone()[0]
    carol = Scope("app", "carol", "agent", "run1")
    entry = _settled(store)
    entry.tag = tags.tenant_tag(sid, "app", "carol")
    store.add_text(STORE, carol, "kayak tag")
    assert _held(store) is None
    entry = _settled(store)
    store.add_text(STORE, carol, "a write to another tenant, no collision")
    store.add_text("other", ALICE, "a write to another store, no collision")
    store.add_text("other", carol, "a write to another store, no collision")
    assert _held(store) is entry
    conn = store._tx.conn
    held = {prefixes.lookup(conn, s, "app", t) for s in (sid, other) for t in ("alice", "carol")}
    assert len(held) == 4 and prefixes.UNNUMBERED not in held
    store.close()


def test_another_process_write_shows_up_as_a_new_generation(db_path: Path) -> None:
    store = _open(db_path)
    _fill(store)
    entry = _settled(store)
    with SqliteMemoryStore(db_path) as other:
        other.add_text(STORE, ALICE, "kayak paddle from the other process")
    assert not _used(store, "kayak paddle")
    assert _results(store) == _from_file(db_path)
    rebuilt = _settled(store)
    assert rebuilt is not entry and rebuilt.generation == entry.generation + 1
    assert _results(store) == _from_file(db_path)
    store.close()


def test_dream_actions_and_store_deletion_drop_them(db_path: Path) -> None:
    store = SqliteMemoryStore(db_path, dream_reviewer=DeletingReviewer())
    store.ensure_store(STORE)
    _fill(store)
    when = [Message("user", "We have 30 dozen eggs stocked in the kayak", timestamp=1.0)]
    store.add_messages(STORE, ALICE, when)
    later = [Message("user", "We now have 20 dozen eggs stocked in the kayak", timestamp=2.0)]
    store.add_messages(STORE, ALICE, later)
    task = store.create_dream_task(
        STORE, ALICE.pattern(), apply_mode="safe_auto", confidence_thresholds={"update": 0.0}
    )
    [action] = store.list_dream_actions(STORE, task.id).items
    _settled(store)
    [done] = store.apply_dream_actions(STORE, task.id, [action.id])
    assert done.status == "applied" and _held(store) is None
    assert _results(store) == _from_file(db_path)
    held = _settled(store)
    # The undo stores the deleted memory again, under a new seq: an append, nothing else.
    store.undo_dream_action(STORE, task.id, action.id)
    assert _held(store) is held and held.appended == 1
    assert _results(store) == _from_file(db_path)
    _settled(store)
    store.delete_store(STORE)
    assert not store._tx.postings._entries
    store.close()


# -- the background build ---------------------------------------------------------------


class _HeldBuild:
    """Makes the next build wait for ``go`` once it has read its snapshot."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started, self.go = threading.Event(), threading.Event()
        real = postings.build

        def build(*args: object, **kwargs: object) -> postings.Postings:
            got = real(*args, **kwargs)  # type: ignore[arg-type]
            self.started.set()
            assert self.go.wait(30)
            return got

        monkeypatch.setattr(postings, "build", build)


def _start_build(store: SqliteMemoryStore) -> None:
    for _ in range(3):
        _results(store, QUERIES[:1])


def _building(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[SqliteMemoryStore, _HeldBuild]:
    """A store whose tenant's build has read its snapshot and waits."""
    store = _open(db_path)
    _fill(store)
    held = _HeldBuild(monkeypatch)
    _start_build(store)
    assert held.started.wait(30)
    return store, held


def test_search_during_a_build_takes_fts5(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, held = _building(db_path, monkeypatch)
    assert not _used(store, "kayak paddle")
    assert _results(store) == _from_file(db_path)
    assert not store.settle(0.05)
    held.go.set()
    assert store.settle(30)
    assert _used(store, "kayak paddle")
    store.close()


def test_close_during_a_build(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, held = _building(db_path, monkeypatch)
    thread = store._tx.postings._thread
    assert thread is not None
    threading.Timer(0.2, held.go.set).start()
    store.close()
    assert not thread.is_alive() and not store._tx.postings._entries


def test_a_write_during_a_build_discards_it(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, held = _building(db_path, monkeypatch)
    store.add_text(STORE, BOB, "another tenant, during the build")
    held.go.set()
    assert store.settle(30)
    assert _held(store) is None
    assert _results(store) == _from_file(db_path)
    store.close()


def test_a_build_overtaken_by_another_process(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, held = _building(db_path, monkeypatch)
    with SqliteMemoryStore(db_path) as other:
        other.add_text(STORE, ALICE, "kayak paddle written meanwhile")
    held.go.set()
    assert store.settle(30)
    # Held at the generation it read, which is no longer the store's: not used.
    assert not _used(store, "kayak paddle")
    assert _results(store) == _from_file(db_path)
    store.close()


def test_a_failed_build_only_logs(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = _open(db_path)
    _fill(store)

    def broken(*args: object, **kwargs: object) -> postings.Postings:
        raise OSError("secret-path-/home/someone")

    monkeypatch.setattr(postings, "build", broken)
    with caplog.at_level(logging.WARNING, logger="memcore_sqlite.lexical.postings.cache"):
        _start_build(store)
        assert store.settle(30)
    assert _held(store) is None
    assert _results(store) == _from_file(db_path)
    logged = [r for r in caplog.records if r.name == "memcore_sqlite.lexical.postings.cache"]
    assert len(logged) == 1 and logged[0].exc_info is None
    assert "OSError" in logged[0].getMessage() and "secret" not in logged[0].getMessage()
    store.close()


def test_in_memory_store_never_builds() -> None:
    store = SqliteMemoryStore(":memory:")
    store.ensure_store(STORE)
    _fill(store)
    _start_build(store)
    assert store.settle(1) and not store._tx.postings._entries
    store.close()


def test_a_lexical_only_install_never_builds(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without numpy (the base install) there is nothing to build them into: no thread, and
    no warning at every new generation."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real(name, *a)
    )
    store = _open(db_path)
    _fill(store)
    with caplog.at_level(logging.WARNING, logger="memcore_sqlite.lexical.postings.cache"):
        _start_build(store)
        assert store.settle(1)
    assert store._tx.postings._thread is None and not store._tx.postings._entries
    assert not [r for r in caplog.records if r.name == "memcore_sqlite.lexical.postings.cache"]
    assert _results(store) == _from_file(db_path)
    store.close()


def _counting_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    builds: list[int] = []
    real = postings.build

    def counted(*args: object, **kwargs: object) -> postings.Postings:
        builds.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(postings, "build", counted)
    return builds


def test_a_tenant_changed_between_every_few_searches_stops_being_built(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant changed each turn (an update; adds are appended) and searched two or three
    times: one build, not one a turn; the searches stay exact on FTS5."""
    store = _open(db_path)
    ids = _fill(store)
    builds = _counting_builds(monkeypatch)
    for turn in range(12):
        for _ in range(3):
            _results(store, QUERIES[:1])
            assert store.settle(30)
        store.update_memory(STORE, ALICE, ids[turn], text=f"kayak turn {turn}")
    assert len(builds) == 1
    assert _results(store) == _from_file(db_path)
    store.close()


def test_a_tenant_whose_entry_served_many_searches_is_built_again_soon(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(db_path)
    ids = _fill(store)
    builds = _counting_builds(monkeypatch)
    _settled(store)
    store.delete_memory(STORE, ALICE, ids[0])  # went having served nothing: the wait doubles
    tenant = _tenant(store)
    assert store._tx.postings._pace.wait(tenant) == 2 * build_pace.FIRST_WAIT
    _settled(store)
    for _ in range(build_pace.SERVED):
        assert _used(store, "kayak paddle")
    store.delete_memory(STORE, ALICE, ids[1])  # went having served many: back to the first wait
    assert store._tx.postings._pace.wait(tenant) == build_pace.FIRST_WAIT
    _settled(store)
    assert len(builds) == 3
    assert _results(store) == _from_file(db_path)
    store.close()


def test_build_pace_doubles_up_to_its_cap_and_forgets_evictions() -> None:
    pace = build_pace.BuildPace()
    tenant = (1, "app", "t")
    assert not pace.due(tenant, 5) and pace.due(tenant, 5)  # the second search at one generation
    assert not pace.due(tenant, 6)  # a new generation counts again
    waits = []
    for _ in range(10):
        pace.built(tenant)
        pace.gone(tenant)
        waits.append(pace.wait(tenant))
    assert waits == [4, 8, 16, 32, 64, 64, 64, 64, 64, 64]
    pace.built(tenant)
    pace.gone(tenant, evicted=True)  # for room: says nothing of the writes
    assert pace.wait(tenant) == 64
    pace.gone(tenant)  # no entry held: nothing to learn
    assert pace.wait(tenant) == 64


def test_a_vector_stored_later_for_an_appended_row_drops_them(db_path: Path) -> None:
    """A deferred write's row is appended; its vector, stored by the next semantic search,
    reports the same seq again, which is not an append: the entry goes, results stay exact."""
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), defer_vectors=True) as store:
        store.ensure_store(STORE)
        _fill(store)
        store.search(STORE, ALICE.tenant_pattern(), "kayak")  # indexes the deferred rows
        entry = _settled(store)
        store.add_text(STORE, ALICE, "a deferred kayak zzzfresh")
        assert _held(store) is entry and entry.appended == 1
        assert _used(store, "zzzfresh")
        store.search(STORE, ALICE.tenant_pattern(), "kayak")  # stores the vector
        assert _held(store) is None
        assert _results(store, APPENDED_QUERIES) == _from_file(db_path, APPENDED_QUERIES)


def test_a_warm_up_builds_the_tenants_postings_before_its_first_search(tmp_path: Path) -> None:
    """A serving process warms the scope it will search: the build then runs before the
    session's first search instead of beside its first few, which took FTS5 meanwhile."""
    path = tmp_path / "m.db"
    with _open(path) as store:
        _fill(store)
    with _open(path) as store:
        store.warm(STORE, ALICE.tenant_pattern())
        assert store.settle(30)
        assert _held(store) is not None
        assert _used(store, "kayak paddle")
        assert _results(store) == _from_file(path)
