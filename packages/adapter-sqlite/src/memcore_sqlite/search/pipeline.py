"""The search path: argument checks, candidate generation, fusion and the hits it returns.

Candidates come from two signals: lexical (:func:`memcore_sqlite.search.ranking.lexical` over FTS5)
and vector (codes pick candidates, exact cosine rescores them: :mod:`memcore_sqlite.vector.cache`).
:func:`memcore_sqlite.search.ranking.fuse` merges them into one ordering.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from memcore import limits
from memcore.scope import ScopePattern
from memcore.values import SearchHit
from memcore_sqlite.lexical import analysis, tags
from memcore_sqlite.lexical.lengths import LengthCache
from memcore_sqlite.lexical.postings.cache import PostingsCache
from memcore_sqlite.search import ranking
from memcore_sqlite.search.exact_order import ExactOrder
from memcore_sqlite.search.fused_order import BoundedOrder, FusedOrder, ordered
from memcore_sqlite.search.overlap import Overlap
from memcore_sqlite.search.supersession import LINK_COLUMNS, Links, key, link
from memcore_sqlite.storage import tenant_prefixes as prefixes
from memcore_sqlite.storage.rows import (
    MEMORY_COLUMNS,
    MEMORY_SEQ,
    check_pattern,
    memory_from_row,
    rows_in,
)
from memcore_sqlite.vector import code_pages
from memcore_sqlite.vector.cache import FetchVectors, VectorCache
from memcore_sqlite.vector.quantize import Codes
from memcore_sqlite.vector.shortlist import Later


def check_search(
    pattern: object,
    query: object,
    top_k: object,
    filters: Mapping[str, str] | None,
    min_similarity: float | None,
) -> tuple[dict[str, str], float | None]:
    """The arguments both searches share, checked before anything is embedded.

    Returns the checked filters and the similarity floor.
    """
    check_pattern(pattern)
    limits.check_query(query)
    limits.check_top_k(top_k)
    flt = limits.check_metadata(filters, field="filters")
    floor = limits.check_min_similarity(min_similarity)
    return flt, floor


def vector_candidates(
    conn: sqlite3.Connection,
    vectors: VectorCache,
    model: str,
    store_id: int,
    pattern: ScopePattern,
    restrict: str | None,
    generation: int,
) -> tuple[Any, Any]:
    """The pattern's cached codes (reloaded when not at the store's ``generation``, read in
    the caller's snapshot) and the seqs filters allow."""

    def load() -> Codes:
        return code_pages.load(conn, store_id, model, pattern.as_tuple(), vectors.dimension)

    entry = vectors.get(
        (store_id, pattern.as_tuple()), generation, load, float_vectors(conn, model)
    )
    allowed = None
    if restrict is not None:
        import numpy

        allowed = numpy.fromiter(
            (
                r[0]
                for r in conn.execute(
                    "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?",
                    (f"tags : ({restrict})",),
                )
            ),
            dtype=numpy.int64,
        )
    return entry, allowed


def warm_scope(
    conn: sqlite3.Connection,
    store_id: int,
    pattern: ScopePattern,
    vectors: VectorCache | None,
    model: str | None,
    *,
    generation: int,
    lengths: LengthCache | None,
    postings: PostingsCache | None,
) -> Callable[[], object] | None:
    """Build now, inside the caller's snapshot at ``generation``, what the first searches of
    ``pattern`` (without filters) would: its vector codes (floats for a small scope, the
    sketch of a large one), its tenant's rows' lengths, and a large tenant's postings (their
    build started in the background). Nothing is ranked. The sketch is what a first search that
    needs a shortlist would otherwise build (1.5-2.5 s of CPU at 100k rows on the loaded
    2-core machine, ``benchmarks/search_tail.py``): every vector search, and a hybrid one
    whose lexical hits leave room for a vector-only row.

    The sketch is not waited for here: its build runs on the cached rows, and the caller
    holds the store's lock for this snapshot, so a search arriving meanwhile would wait for
    the whole build. It is returned instead, as the step that waits for it, for the caller to
    run once it has let the lock go (a search then goes on without it, as exact)."""
    sketch: Callable[[], object] | None = None
    if vectors is not None and model is not None:
        entry, _ = vector_candidates(conn, vectors, model, store_id, pattern, None, generation)
        if entry.matrix is None and entry.n:
            entry.start_sketch()
            sketch = entry.sketch
    if pattern.app_id == "*" or pattern.tenant_id == "*":  # no one tenant: nothing held by tenant
        return sketch
    tenant = (store_id, pattern.app_id, pattern.tenant_id)
    rows = None if lengths is None else lengths.warm_scope(conn, tenant, generation)
    if postings is not None and pattern.agent_id == "*":  # postings serve a whole tenant
        postings.warm_scope(tenant, generation, rows)
    return sketch


def float_vectors(conn: sqlite3.Connection, model: str) -> FetchVectors:
    """Reads the exact vectors of a few candidates by primary key, inside the snapshot."""

    sql = "SELECT seq, vector FROM memory_vectors WHERE seq IN ({}) AND model = ?"

    def fetch(seqs: Sequence[int]) -> Iterator[tuple[int, bytes]]:
        return rows_in(conn, sql, seqs, after=(model,))

    return fetch


def ranked(
    conn: sqlite3.Connection,
    store_id: int,
    pattern: ScopePattern,
    query: str,
    flt: Mapping[str, str],
    qvec: Any,
    vectors: VectorCache | None,
    model: str | None,
    *,
    generation: int,
    use_lexical: bool = True,
    beside: Overlap | None = None,
    lengths: LengthCache | None = None,
    postings: PostingsCache | None = None,
    later: Later | None = None,
) -> FusedOrder:
    """The candidates with their relevance, best first; inside the caller's read snapshot.

    Each signal contributes its best :data:`~memcore_sqlite.search.ranking.POOL` candidates whatever
    the caller's top_k, and every candidate is scored on both signals before they are fused,
    so the order does not depend on how many hits are asked for. In a two-stage scope the
    order is made exact only as far as it is read (:mod:`memcore_sqlite.search.fused_order`).
    ``generation`` is the store's in this snapshot (its cached codes must match it).
    With ``beside``, a large two-stage scope's shortlist runs in its thread while the lexical
    stage runs here on FTS5 (:mod:`memcore_sqlite.search.overlap`), not when the tenant's postings
    serve it; the result is the same either way.
    ``lengths`` keeps rows' lengths for the lexical stage; without it they are read.
    ``postings`` keeps large tenants' postings for it (a whole tenant without filters).
    ``later`` gets what the caller starts once the search has returned: a two-stage scope's
    sketch build, which would otherwise take the second core from this search.
    """
    pool = ranking.POOL
    restrict = tags.filter_expression(store_id, pattern, flt)
    prefix = prefixes.pattern_prefix(conn, store_id, pattern)
    exact_tenant = pattern.agent_id == "*" and prefix is not None and not flt
    # For a whole tenant without filters the prefixed terms already select the scope:
    # ANDing the tenant's tag would only walk its postings once more.
    lexq = analysis.build_query(
        query, tags=None if exact_tenant else restrict, prefix=prefix, scope=restrict
    )
    tenant = None if prefix is None else (store_id, pattern.app_id, pattern.tenant_id)
    lookup = None if lengths is None else lengths.reader(conn, tenant, generation)

    held = None
    if use_lexical and postings is not None and exact_tenant and tenant is not None:
        size = None if lengths is None else lengths.held(tenant, generation)
        held = postings.term_rows(conn, tenant, generation, lexq, size)

    def lexical_stage() -> dict[int, ranking.LexicalHit] | None:
        if not use_lexical:
            return None
        return ranking.lexical(conn, lexq, pool, ranking.ENOUGH, tenant, lookup, held)

    if qvec is None or vectors is None or model is None:
        return FusedOrder(ordered(ranking.fuse(lexical_stage(), None)))
    # Everything that reads SQLite for the vector signal happens here, before the fork.
    entry, allowed = vector_candidates(
        conn, vectors, model, store_id, pattern, restrict if flt else None, generation
    )
    fetch = float_vectors(conn, model)
    if entry.matrix is not None:
        lexical = lexical_stage()
        semantic = dict(vectors.top(entry, qvec, pool, fetch, allowed))
        if lexical:
            missing = [seq for seq in lexical if seq not in semantic]
            semantic.update(vectors.cosines(entry, missing, qvec, fetch))
        return ExactOrder(lexical, semantic)

    # One shortlister per search: a shortlist widened to the pool reuses the first's bounds.
    shortlister = vectors.shortlister(entry, qvec, allowed, later)

    def shortlist(
        n: int = ranking.FIRST_READ, at_least: float = -float("inf")
    ) -> tuple[Any, Any, Any]:
        return shortlister(n, at_least)

    def bounded(short: Any, lexical: dict[int, ranking.LexicalHit] | None) -> BoundedOrder:
        return BoundedOrder(
            short,
            lexical,
            pool,
            lambda seqs: vectors.estimates(entry, seqs, qvec),
            lambda seqs: vectors.exact_cosines(seqs, qvec, fetch),
            widen=shortlist,
            first=ranking.FIRST_READ,
            ceiling=lambda: vectors.ceiling(entry, qvec),
        )

    rows = entry.n if allowed is None else min(entry.n, len(allowed))
    # The overlap pays while the lexical stage waits on FTS5 (SQLite releases the GIL at
    # each step). From the tenant's postings it is numpy and Python, and the two stages would
    # only take turns at the GIL (:mod:`memcore_sqlite.search.overlap`): one after the other then.
    if use_lexical and held is None and beside is not None and beside.fits(rows):
        short, lexical = beside.run(shortlist, lexical_stage)
        return bounded(short, lexical)
    lexical = lexical_stage()
    # One after the other, the shortlist waits until the lexical candidates show it is
    # needed: a row no term matched scores at most the vector share of its cosine, often
    # below the tenth hit's relevance.
    return bounded(None if lexical else shortlist(), lexical)


def hits(
    conn: sqlite3.Connection,
    store_id: int,
    pattern: ScopePattern,
    order: FusedOrder,
    flt: Mapping[str, str],
    floor: float | None,
    top_k: int,
) -> tuple[list[SearchHit], Links]:
    """The first ``top_k`` ranked memories that are in the scope, pass the filters and the floor,
    and their supersession links (read with their rows, for
    :func:`~memcore_sqlite.search.supersession.prefer_current`).

    Rows are read in slices of the order, so a search reads about ``top_k`` memories, not the
    whole candidate pool (each is a random page of a large file). A slice of ``top_k`` (not
    twice that) also keeps the bounded order's exact prefix, and its vector reads, short.
    """
    found: list[SearchHit] = []
    links: Links = {}
    size = max(top_k, ranking.FIRST_READ)
    start = 0
    while part := order.first(start + size)[start:]:
        start += size
        # By primary key only; the store and scope are checked below (a scope clause
        # here would lure the planner onto the scope index and scan the whole scope).
        rows = {
            int(r[MEMORY_SEQ]): r
            for r in rows_in(
                conn,
                f"SELECT {MEMORY_COLUMNS}, {LINK_COLUMNS}, store_id FROM memories"
                " WHERE seq IN ({})",
                [seq for seq, _ in part],
            )
        }
        for seq, relevance in part:
            row = rows.get(seq)
            if row is None or row[-1] != store_id:
                continue
            memory = memory_from_row(row)
            if not pattern.matches(memory.scope):
                continue
            if any(memory.metadata.get(k) != v for k, v in flt.items()):
                continue
            if floor is not None and relevance.score < floor:
                return found, links  # best first: no later candidate reaches the floor either
            found.append(SearchHit(memory, relevance.score, signals=relevance.signals))
            links[key(memory)] = link(row[-4:-1])
            if len(found) == top_k:
                return found, links
    return found, links
