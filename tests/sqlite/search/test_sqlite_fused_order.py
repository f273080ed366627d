"""The fused order made exact from cosine bounds: every prefix equals the plain path's (read
every candidate's vector, fuse, sort), hits, scores and signals, on data built to put rows at
every edge: ties, the vector pool's boundary, rows without vectors; and in a real store."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.search import ranking
from memcore_sqlite.search.fused_order import (
    BoundedOrder,
    ordered,
    relevance_bound,
    vector_only_below,
)
from memcore_sqlite.search.ranking import LexicalHit
from memcore_sqlite.vector.cache import VectorCache, _Entry, exact_top
from memcore_sqlite.vector.quantize import encode
from memcore_sqlite.vector.shortlist import Shortlister

DIM = 64
STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")
BOB = Scope("app", "bob", "agent", "run")


def _rows(n: int, seed: int) -> tuple[Any, Any]:
    """Unit rows near and far from the query, a fifth of them duplicated (equal cosines), as
    the file stores them (float16, read back as float32)."""
    rng = np.random.default_rng(seed)
    query = rng.standard_normal(DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    rows = query + rng.uniform(0.3, 4.0, (n, 1)) * rng.standard_normal((n, DIM)) / np.sqrt(DIM)
    rows = rows.astype(np.float32)
    for i in range(0, n - 1, 5):
        rows[i + 1] = rows[i]
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype("<f2").astype(np.float32), query


class _Case:
    """A two-stage scope with lexical candidates, searched both ways."""

    def __init__(
        self,
        n: int,
        seed: int,
        pool: int,
        lexical_share: float,
        *,
        without_vector: int = 0,
    ) -> None:
        rng = random.Random(seed)
        self.rows, self.query = _rows(n, seed)
        self.seqs = np.arange(1, n + 1, dtype=np.int64) * 2
        self.pool = pool
        self.cache = VectorCache(DIM, exact_rows=0)
        self.entry = _Entry(0, encode(self.seqs, self.rows), None)
        self.blobs = {int(s): r.astype("<f2").tobytes() for s, r in zip(self.seqs, self.rows)}
        for seq in rng.sample(sorted(self.blobs), without_vector):
            del self.blobs[seq]  # codes whose vector is gone: only the plain path is sure
        chosen = rng.sample(self.seqs.tolist(), int(lexical_share * n))
        # Few distinct lexical scores, as shares of IDF weights are: many exact ties.
        levels = [0.25, 0.5, 0.5, 0.75, 1.0]
        self.lexical = {s: LexicalHit(rng.choice(levels), True) for s in chosen}
        # Lexical candidates with no vector at all (never embedded): cosine 0.
        self.lexical.update({10_001 + i: LexicalHit(1.0, True) for i in range(3)})
        self.reads = 0

    def fetch(self, wanted: Sequence[int]) -> list[tuple[int, bytes]]:
        self.reads += len(wanted)
        return [(s, self.blobs[s]) for s in wanted if s in self.blobs]

    def plain(self, lexical: dict[int, LexicalHit] | None) -> list[tuple[int, Any]]:
        """The order before bounds: the pool by exact cosine, every lexical cosine read."""
        semantic = dict(self.cache.top(self.entry, self.query, self.pool, self.fetch))
        if lexical:
            missing = [s for s in lexical if s not in semantic]
            semantic.update(self.cache.cosines(self.entry, missing, self.query, self.fetch))
        return ordered(ranking.fuse(lexical, semantic))

    def bounded(self, lexical: dict[int, LexicalHit] | None, start: str = "pool") -> BoundedOrder:
        """``start``: the shortlist of the pool up front; of the first few (``first``), or
        none (``none``), widened as the order needs."""
        if start == "pool":
            return BoundedOrder(
                self.cache.shortlist(self.entry, self.query, self.pool),
                lexical,
                self.pool,
                lambda seqs: self.cache.estimates(self.entry, seqs, self.query),
                lambda seqs: self.cache.exact_cosines(seqs, self.query, self.fetch),
            )
        first = min(3, self.pool)
        return BoundedOrder(
            self.cache.shortlist(self.entry, self.query, first) if start == "first" else None,
            lexical,
            self.pool,
            lambda seqs: self.cache.estimates(self.entry, seqs, self.query),
            lambda seqs: self.cache.exact_cosines(seqs, self.query, self.fetch),
            widen=self.cache.shortlister(self.entry, self.query),
            first=first,
            ceiling=lambda: self.cache.ceiling(self.entry, self.query),
        )


def _same(got: list[tuple[int, Any]], want: list[tuple[int, Any]]) -> None:
    assert [(s, r.score, dict(r.signals)) for s, r in got] == [
        (s, r.score, dict(r.signals)) for s, r in want
    ]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pool", [5, 30, 100])
@pytest.mark.parametrize("lexical_share", [0.0, 0.02, 0.3])
@pytest.mark.parametrize("start", ["pool", "first", "none"])
def test_every_prefix_equals_the_plain_order(
    seed: int, pool: int, lexical_share: float, start: str
) -> None:
    case = _Case(3_000, seed, pool, lexical_share)
    lexical = case.lexical if lexical_share else {}
    want = case.plain(lexical)
    for k in (1, 3, 10, 20, 40, len(want) + 5):
        _same(case.bounded(lexical, start).first(k), want[:k])
    order = case.bounded(lexical, start)  # one order read further and further, as hits() does
    for k in (10, 20, 30, 40, 1_000):
        _same(order.first(k), want[:k])


@pytest.mark.parametrize("seed", range(4))
def test_vector_search_prefixes_equal_the_exact_pool(seed: int) -> None:
    case = _Case(2_500, seed, 30, 0.0)
    exact = exact_top(case.seqs, case.rows, case.query, 30)
    want = case.plain(None)
    assert [s for s, _ in want] == [s for s, _ in exact]
    for k in (1, 10, 20, 30, 31):
        _same(case.bounded(None).first(k), want[:k])


def test_it_reads_far_fewer_vectors_than_the_plain_path() -> None:
    case = _Case(5_000, 7, 100, 0.02)
    case.plain(case.lexical)
    plain_reads, case.reads = case.reads, 0
    case.bounded(case.lexical).first(20)
    assert case.reads < plain_reads / 2


@pytest.mark.parametrize("seed", range(3))
def test_lexical_candidates_that_all_have_codes_give_the_plain_order(seed: int) -> None:
    """No lexical candidate lacks codes (the usual case): nothing is read up front, and the
    order is still the plain path's."""
    case = _Case(2_000, seed, 30, 0.05)
    lexical = {s: hit for s, hit in case.lexical.items() if s < 10_001}
    want = case.plain(lexical)
    case.reads = 0
    order = case.bounded(lexical)
    assert case.reads == 0
    for k in (1, 10, 20, len(want)):
        _same(order.first(k), want[:k])


@pytest.mark.parametrize("seed", range(3))
def test_shortlisted_rows_without_a_vector_give_the_plain_order(seed: int) -> None:
    case = _Case(2_000, seed, 30, 0.05, without_vector=40)
    for lexical in (case.lexical, None):
        want = case.plain(lexical)
        for k in (1, 10, 20, len(want)):
            _same(case.bounded(lexical).first(k), want[:k])


def test_identical_vectors_at_the_pool_boundary_keep_the_newest() -> None:
    """Every row has the same vector: pool membership is decided by seq alone."""
    rows = np.tile(np.eye(1, DIM, dtype=np.float32), (400, 1))
    seqs = np.arange(1, 401, dtype=np.int64)
    cache = VectorCache(DIM, exact_rows=0)
    entry = _Entry(0, encode(seqs, rows), None)
    blobs = {int(s): r.astype("<f2").tobytes() for s, r in zip(seqs, rows)}

    def fetch(wanted: Sequence[int]) -> list[tuple[int, bytes]]:
        return [(s, blobs[s]) for s in wanted]

    query = rows[0]
    lexical = {5: LexicalHit(0.5, True), 390: LexicalHit(0.25, True)}
    semantic = dict(cache.top(entry, query, 20, fetch))
    semantic.update(cache.cosines(entry, [s for s in lexical if s not in semantic], query, fetch))
    want = ordered(ranking.fuse(lexical, semantic))
    order = BoundedOrder(
        cache.shortlist(entry, query, 20),
        lexical,
        20,
        lambda s: cache.estimates(entry, s, query),
        lambda s: cache.exact_cosines(s, query, fetch),
    )
    _same(order.first(len(want)), want)


def test_the_bound_formula_is_the_fusion_formula() -> None:
    """The bounds assume relevance is fuse's score and rises with the cosine: if the fusion
    changes shape, this fails before any hit can be lost."""
    rng = np.random.default_rng(0)
    cosines = np.concatenate([rng.uniform(-1.2, 1.2, 500), [-1.0, 0.0, 1.0, 1.5]])
    lexical = rng.choice([0.0, 0.1, 1 / 3, 0.5, 1.0], len(cosines))
    for hybrid in (True, False):
        got = relevance_bound(cosines, lexical, hybrid)
        for c, lex, score in zip(cosines.tolist(), lexical.tolist(), got.tolist()):
            hits = {1: LexicalHit(lex, True), 2: LexicalHit(1.0, True)} if hybrid else None
            assert ranking.fuse(hits, {1: c})[1].score == score
        order = np.argsort(cosines, kind="stable")
        for lex in (0.0, 0.5):
            rising = relevance_bound(cosines[order], np.full(len(cosines), lex), hybrid)
            assert (np.diff(rising) >= 0).all()


def _vector_only_score(cosine: float, hybrid: bool) -> float:
    """A candidate's score by fuse itself when it holds no query term."""
    lexical = {-1: LexicalHit(1.0, True)} if hybrid else None
    return ranking.fuse(lexical, {1: cosine})[1].score


@pytest.mark.parametrize("hybrid", [True, False])
def test_the_narrowing_cosine_is_the_last_float32_below_the_floor(hybrid: bool) -> None:
    """Every cosine up to it scores below the floor (by fuse, not by the bound's own formula),
    and the next float32 does not: one ulp higher would drop a row that reaches the floor."""
    rng = np.random.default_rng(3)
    weight = ranking.VECTOR_WEIGHT
    floors = [*rng.uniform(1e-6, 0.35, 300).tolist(), *(weight * c for c in (0.1, 0.5, 1.0))]
    floors += [0.7 * 0.2, 0.7 * 0.25 + weight * 0.125, 1e-12, 0.3, 1.0]
    for floor in floors:
        t = vector_only_below(floor, hybrid)
        assert np.float32(t) == t
        assert _vector_only_score(t, hybrid) < floor
        above = float(np.nextafter(np.float32(t), np.float32(np.inf)))
        assert t == 2.0 or _vector_only_score(above, hybrid) >= floor
    assert vector_only_below(0.0, hybrid) == -np.inf


class _ExactWorld:
    """Cosines given outright, bounds with no slack: a shortlist and a narrowing are exactly
    as wide as they claim, so a narrowing that is too tight drops a row the order needs,
    however small the excess (above the order's own slack)."""

    def __init__(self, seed: int, level: float) -> None:
        rng = np.random.default_rng(seed)
        weight = ranking.VECTOR_WEIGHT
        floor = (1 - weight) * level  # a lexical candidate with no vector scores this exactly
        edge = np.float32(floor / weight)
        ulp = float(np.spacing(edge))
        # Vector-only rows around the cosine whose score is the floor: a few ulps either
        # side, up to a few thousandths; the newest, so ties with the floor go their way.
        near = [edge + ulp * i for i in range(-12, 13)]
        near += [edge + d for d in (-1e-3, -1e-4, -3e-6, -1e-6, 1e-6, 3e-6, 1e-5, 1e-4, 2e-3)]
        near += rng.uniform(edge - 0.01, edge + 0.01, 20).tolist()
        far = rng.uniform(-0.3, edge - 0.05, 1_500).tolist()
        cosines = np.asarray(far + near + [edge + 0.02, edge + 0.05], np.float32)
        self.cos = {2 * (i + 1): float(c) for i, c in enumerate(cosines)}
        self.seqs = np.asarray(sorted(self.cos), np.int64)
        # Lexical candidates: a dozen at the floor with no vector (older than every row), a
        # few with vectors and a lower share.
        self.lexical = {1 + 2 * i: LexicalHit(level, True) for i in range(12)}
        for seq in rng.choice(self.seqs[:1_500], 5, replace=False).tolist():
            self.lexical[int(seq)] = LexicalHit(level / 2, True)
        self.pool = 30
        self.narrowed: list[float] = []

    def estimate(self, seqs: Any) -> tuple[Any, Any, Any]:
        have = np.asarray([int(s) in self.cos for s in seqs], bool)
        est = np.asarray([self.cos.get(int(s), 0.0) for s in seqs], np.float32)
        return have, est, np.zeros(len(seqs), np.float32)

    def read(self, seqs: Sequence[int]) -> tuple[Any, Any]:
        have = [s for s in seqs if s in self.cos]
        return np.asarray(have, np.int64), np.asarray([self.cos[s] for s in have], np.float32)

    def widen(self, n: int, at_least: float = -np.inf) -> tuple[Any, Any, Any]:
        if at_least > -np.inf:
            self.narrowed.append(at_least)
        cos = np.asarray([self.cos[int(s)] for s in self.seqs], np.float32)
        nth = np.sort(cos)[-n]
        keep = (cos >= nth) & (cos >= np.float32(at_least))
        return self.seqs[keep], cos[keep], np.zeros(int(keep.sum()), np.float32)

    def plain(self) -> list[tuple[int, Any]]:
        best = sorted(self.cos.items(), key=lambda kv: (-kv[1], -kv[0]))[: self.pool]
        semantic = dict(best)
        semantic.update({s: self.cos[s] for s in self.lexical if s in self.cos})
        return ordered(ranking.fuse(self.lexical, semantic))

    def bounded(self) -> BoundedOrder:
        return BoundedOrder(
            None,
            self.lexical,
            self.pool,
            self.estimate,
            self.read,
            widen=self.widen,
            first=3,
            ceiling=lambda: max(self.cos.values()),
        )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("level", [0.2, 0.3, 1 / 3, 0.37])
def test_a_narrowed_shortlist_keeps_every_row_that_reaches_the_prefix(
    seed: int, level: float
) -> None:
    """Rows holding no query term sit on the cosine where their score meets the lexical
    candidates' floor; every prefix, each asked of a fresh order and of one order read
    further and further (which drops the narrowing), is the plain path's."""
    world = _ExactWorld(seed, level)
    want = world.plain()
    for k in (1, 3, 5, 8, 10, 12, 15, 20, 40, len(want) + 5):
        _same(world.bounded().first(k), want[:k])
    assert world.narrowed  # the shortlist was narrowed, not merely widened
    order = world.bounded()
    for k in (5, 10, 20, 1_000):
        _same(order.first(k), want[:k])


def _near_the_floor(seed: int, level: float) -> tuple[_Case, float]:
    """A two-stage scope (real codes, float16 vectors) whose rows holding no query term have
    cosines around the one where their score meets a dozen lexical candidates' (with no
    vector, so scoring exactly ``(1 - w) * level``); the rest far below. (The case, that
    cosine.)"""
    rng = np.random.default_rng(seed)
    case = _Case(16, seed, 30, 0.0)
    edge = (1 - ranking.VECTOR_WEIGHT) * level / ranking.VECTOR_WEIGHT
    cosines = np.concatenate(
        [
            rng.uniform(-0.2, edge - 0.08, 2_500),
            rng.uniform(edge - 0.01, edge + 0.01, 50),
            edge + rng.uniform(-1e-3, 1e-3, 30),
        ]
    )
    noise = rng.standard_normal((len(cosines), DIM)).astype(np.float32)
    noise -= np.outer(noise @ case.query, case.query)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    rows = cosines[:, None] * case.query + np.sqrt(1 - cosines**2)[:, None] * noise
    rows = rows.astype("<f2").astype(np.float32)
    case.rows, case.seqs = rows, np.arange(1, len(rows) + 1, dtype=np.int64) * 2
    case.entry = _Entry(0, encode(case.seqs, rows), None)
    case.blobs = {int(s): r.astype("<f2").tobytes() for s, r in zip(case.seqs, rows)}
    case.lexical = {1 + 2 * i: LexicalHit(level, True) for i in range(12)}  # no vector
    for seq in rng.choice(case.seqs[:2_500], 5, replace=False).tolist():
        case.lexical[int(seq)] = LexicalHit(level / 2, True)
    return case, edge


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", [0.2, 1 / 3, 0.37])
def test_real_codes_near_the_floor_give_the_plain_order(
    seed: int, level: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with int8 codes, their error bounds and the sketch: every prefix is the plain
    path's, and the narrowing did drop rows (a shortlist narrowed to the rows that may reach
    the floor is shorter than the one of the pool). The codes' error bounds (about 0.005 in
    cosine here) keep rows a narrowing too tight by less; ``_ExactWorld`` has none."""
    case, _ = _near_the_floor(seed, level)
    calls: list[tuple[float, int]] = []
    real = Shortlister.__call__

    def counted(self: Shortlister, n: int, at_least: float = -np.inf) -> Any:
        out = real(self, n, at_least)
        calls.append((at_least, len(out[0])))
        return out

    monkeypatch.setattr(Shortlister, "__call__", counted)
    want = case.plain(case.lexical)
    for start in ("none", "first"):
        for k in (1, 5, 10, 12, 20, 40, len(want) + 5):
            _same(case.bounded(case.lexical, start).first(k), want[:k])
        order = case.bounded(case.lexical, start)
        for k in (10, 20, 1_000):
            _same(order.first(k), want[:k])
    narrowed = [size for at_least, size in calls if at_least > -np.inf]
    assert narrowed and min(narrowed) < len(case.cache.shortlist(case.entry, case.query, 30)[0])


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["coffee", "tea", "museum", "trip", "paris", "dog", "cat", "piano", "bike", "rain"]
    return [" ".join(rng.choices(words, k=rng.randint(2, 9))) + f" note {i}" for i in range(n)]


def test_a_two_stage_store_answers_as_the_exact_store(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    texts = _texts(600, 1)
    with SqliteMemoryStore(path, embedder=HashingEmbedder(DIM)) as store:
        store.ensure_store(STORE)
        store.add_many(
            STORE, [TextItem(ALICE, t, metadata={"k": str(i % 3)}) for i, t in enumerate(texts)]
        )
        store.add_many(STORE, [TextItem(BOB, t) for t in _texts(300, 2)])  # same words, Bob's
    queries = ["coffee in paris", "the dog and the cat", "piano", "rain bike trip", "zebra"]
    answers = []
    for exact_rows in (10_000, 0):  # small-exact in memory, then always two-stage
        with SqliteMemoryStore(path, embedder=HashingEmbedder(DIM)) as store:
            assert store._tx.vectors is not None
            store._tx.vectors.exact_rows = exact_rows
            got = []
            for q in queries:
                for kw in (
                    {},
                    {"top_k": 1},
                    {"top_k": 50},
                    {"filters": {"k": "1"}},
                    {"min_similarity": 0.4},
                    {"mode": "vector"},
                ):
                    hits = store.search(STORE, ALICE.tenant_pattern(), q, **kw)  # type: ignore[arg-type]
                    assert all(h.memory.scope == ALICE for h in hits)
                    got.append([(h.memory.id, h.score, dict(h.signals)) for h in hits])
            answers.append(got)
    assert answers[0] == answers[1]
    assert any(answers[0])


@pytest.mark.parametrize("shuffled", [False, True], ids=["in-seq-order", "shuffled"])
def test_lexical_candidates_find_their_codes_after_writes(shuffled: bool) -> None:
    rows, _ = _rows(300, 3)
    seqs = np.arange(1, 301, dtype=np.int64) * 5
    if shuffled:  # codes of several scopes interleave
        np.random.default_rng(1).shuffle(seqs)
    entry = _Entry(0, encode(seqs, rows), None)
    where = {int(s): i for i, s in enumerate(seqs)}
    asked = np.asarray([5, 7, 1_500, 750, 1_505, 0], dtype=np.int64)
    assert entry.positions(asked).tolist() == [where.get(int(s), -1) for s in asked]
    entry.remove(750)
    entry.append(encode(np.asarray([3, 2_000], dtype=np.int64), rows[:2]), rows[:2], 0)
    codes = entry.view()
    got = entry.positions(np.asarray([750, 3, 2_000, 5], dtype=np.int64))
    assert got[0] == -1
    assert [int(codes.seqs[i]) for i in got[1:]] == [3, 2_000, 5]


def test_codes_of_seqs_without_a_gap_are_found_by_offset_and_a_gap_is_searched() -> None:
    """Seqs with no gap (a one-tenant file) are found by their offset from the first; after a
    removal (a gap, and the last row moved into its place), an append after a gap, or in
    codes that repeat a seq, every seq is still found where it is, and others nowhere."""
    rows, _ = _rows(200, 4)
    entry = _Entry(0, encode(np.arange(100, 300, dtype=np.int64), rows), None)

    def check(asked: list[int]) -> None:
        have = entry.view().seqs.tolist()
        got = entry.positions(np.asarray(asked, dtype=np.int64)).tolist()
        assert got == [have.index(s) if s in have else -1 for s in asked]

    check([100, 299, 150, 99, 300, -5, 10**12, 200, 100])
    entry.remove(150)  # a gap, and row 299 moves to row 50: no longer in seq order
    check([150, 299, 151, 149, 100, 298])
    entry.append(encode(np.asarray([150], dtype=np.int64), rows[:1]), rows[:1], 0)
    check([150, 299, 100])  # no gap again, but not in seq order
    repeated = _Entry(0, encode(np.asarray([1, 1, 2, 4], dtype=np.int64), rows[:4]), None)
    assert repeated.positions(np.asarray([2, 4, 3])).tolist() == [2, 3, -1]
    after_gap = _Entry(0, encode(np.asarray([1, 2, 3, 7], dtype=np.int64), rows[:4]), None)
    assert after_gap.positions(np.asarray([7, 3, 4, 0])).tolist() == [3, 2, -1, -1]
