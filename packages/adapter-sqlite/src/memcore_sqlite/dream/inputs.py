"""What a local dream task plans over: the current memories of its scopes and their neighbours.

A memory's time is when its fact was stated: the earliest message it was made from, else its
creation time. Superseded memories are left out (their successor speaks for them).

The planner and the actions it writes name memories by id, which is unique per tenant
(schema 16): a task over several tenants leaves out of its pass the ids two of them hold
(:func:`joined`), rather than take one tenant's memory for another's.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence

from memcore.dream import Candidate, Neighbour
from memcore.scope import Scope, ScopePattern
from memcore_sqlite.storage.rows import pattern_sql
from memcore_sqlite.vector import stored
from memcore_sqlite.vector.coverage import coverage

#: Each memory's nearest neighbours the planner looks at, and the cosine below which a pair
#: is not worth comparing.
NEIGHBOURS = 10
MIN_COSINE = 0.3
#: A cosine counts only when the embedder reads at least this share of both texts' words
#: (:func:`memcore_sqlite.vector.coverage.coverage`).
MIN_COVERAGE = 0.5


_CANDIDATE = (
    "SELECT m.seq, m.id, m.app_id, m.tenant_id, m.agent_id, m.run_id, m.text,"
    " m.version, COALESCE((SELECT MIN(g.timestamp) FROM messages g"
    " WHERE g.memory_seq = m.seq), m.created_at), v.vector"
    " FROM memories m LEFT JOIN memory_vectors v ON v.seq = m.seq AND v.model = ?"
)


def load_candidates(
    conn: sqlite3.Connection,
    store_id: int,
    patterns: Sequence[ScopePattern],
    max_memories: int,
    model: str | None,
    seqs: Sequence[int] | None = None,
) -> tuple[list[Candidate], dict[str, bytes]]:
    """The newest ``max_memories`` current memories of the patterns (of ``seqs`` only, when
    given), and their vector blobs; none whose id another of their tenants holds too."""
    found: dict[int, Candidate] = {}
    blobs: dict[int, bytes] = {}
    for pattern in patterns:
        where, params = pattern_sql(pattern, "m.")
        only = "" if seqs is None else f" AND m.seq IN ({','.join('?' * len(seqs))})"
        rows = conn.execute(
            _CANDIDATE + f" WHERE m.store_id = ?{where} AND m.superseded_by IS NULL{only}"
            " ORDER BY m.seq DESC LIMIT ?",
            (model, store_id, *params, *(seqs or ()), max_memories),
        ).fetchall()
        for seq, mid, app_id, tenant_id, agent_id, run_id, text, version, said, blob in rows:
            scope = Scope(app_id, tenant_id, agent_id, run_id)
            if not pattern.matches(scope):
                continue
            found[seq] = Candidate(mid, scope, text, float(said), int(seq), int(version))
            if blob is not None:
                blobs[seq] = blob
    ordered = sorted(found.values(), key=lambda c: c.order)[-max_memories:] if found else []
    return joined(
        [],
        {},
        ordered,
        {c.id: blobs[c.order] for c in ordered if c.order in blobs},
        shared(ordered),
    )


def shared(candidates: Sequence[Candidate]) -> set[str]:
    """The ids more than one tenant among ``candidates`` holds."""
    tenants: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for c in candidates:
        tenants[c.id].add((c.scope.app_id, c.scope.tenant_id))
    return {i for i, held in tenants.items() if len(held) > 1}


def joined(
    candidates: Sequence[Candidate],
    blobs: dict[str, bytes],
    more: Sequence[Candidate],
    more_blobs: dict[str, bytes],
    drop: set[str] | None = None,
) -> tuple[list[Candidate], dict[str, bytes]]:
    """``candidates`` and ``more`` (read later: a memory of both is kept once), with their
    blobs, leaving out every id two tenants hold (``drop``, else found here): the planner
    would take one for the other."""
    have = {c.order for c in candidates}
    every = [*candidates, *(c for c in more if c.order not in have)]
    gone = shared(every) if drop is None else drop
    kept = [c for c in every if c.id not in gone]
    held = {**blobs, **more_blobs}
    return kept, {c.id: held[c.id] for c in kept if c.id in held}


def neighbours(
    candidates: Sequence[Candidate], blobs: dict[str, bytes], dimension: int
) -> list[Neighbour]:
    """Each memory's nearest others of the same tenant, by cosine (one matrix product each)."""
    if not blobs:
        return []
    import numpy

    by_tenant: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in candidates:
        if len(blobs.get(c.id, b"")) == stored.width(dimension):
            by_tenant[(c.scope.app_id, c.scope.tenant_id)].append(c.id)
    out: list[Neighbour] = []
    for ids in by_tenant.values():
        if len(ids) < 2:
            continue
        matrix = stored.matrix([blobs[i] for i in ids], dimension)
        sims = matrix @ matrix.T
        numpy.fill_diagonal(sims, -1.0)
        k = min(NEIGHBOURS, len(ids) - 1)
        top = numpy.argpartition(-sims, k - 1, axis=1)[:, :k]
        for i, row in enumerate(top):
            for j in row:
                s = float(sims[i, j])
                if s >= MIN_COSINE:
                    out.append(Neighbour(ids[i], ids[int(j)], s))
    return out


#: A session pass looks this far among each new memory's nearest for the memories that
#: may count it among their own nearest (the pairs a full pass also forms from that side).
REVERSE_REACH = 50


def last_pass(
    conn: sqlite3.Connection, store_id: int, scopes_json: str, apply_mode: str
) -> float | None:
    """When the newest finished task over exactly these scopes, in this apply mode, started
    (a proposal someone reviews does not stand for a pass that applies, nor the reverse)."""
    row = conn.execute(
        "SELECT MAX(created_at) FROM dream_tasks WHERE store_id = ? AND scopes = ?"
        " AND apply_mode = ? AND status IN ('completed', 'completed_with_failures')",
        (store_id, scopes_json, apply_mode),
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def written_since(
    conn: sqlite3.Connection,
    store_id: int,
    patterns: Sequence[ScopePattern],
    since: float | None,
    limit: int,
) -> list[str]:
    """Ids of the newest ``limit`` current memories of the patterns written (or changed)
    at or after ``since`` (all of them when None).

    A write takes its time inside its write transaction, and a task its start time before
    it asks for one, so a memory stamped before the last pass started was committed before
    that pass read (it saw it) and one it did not see is stamped after."""
    found: dict[str, int] = {}
    tenants: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for pattern in patterns:
        where, params = pattern_sql(pattern, "m.")
        rows = conn.execute(
            "SELECT m.seq, m.id, m.app_id, m.tenant_id, m.agent_id, m.run_id FROM memories m"
            f" WHERE m.store_id = ?{where} AND m.superseded_by IS NULL AND m.updated_at >= ?"
            " ORDER BY m.seq DESC LIMIT ?",
            (store_id, *params, -1.0 if since is None else since, limit),
        ).fetchall()
        for seq, mid, *levels in rows:
            if pattern.matches(Scope(*levels)):
                found[mid] = int(seq)
                tenants[mid].add((levels[0], levels[1]))
    for mid, held in tenants.items():
        if len(held) > 1:  # two tenants' memories: neither is planned (:func:`joined`)
            del found[mid]
    return sorted(found, key=found.__getitem__)[-limit:] if limit else []


def neighbours_of(
    focus: Sequence[str],
    candidates: Sequence[Candidate],
    blobs: dict[str, bytes],
    dimension: int,
) -> list[Neighbour]:
    """The pairs :func:`neighbours` forms that hold a memory of ``focus``: each one's
    nearest, and the memories near it that count it among their own nearest. Costs what
    ``focus`` holds times the candidates, not the square of the candidates."""
    if not blobs or not focus:
        return []
    import numpy

    by_tenant: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in candidates:
        if len(blobs.get(c.id, b"")) == stored.width(dimension):
            by_tenant[(c.scope.app_id, c.scope.tenant_id)].append(c.id)
    wanted = set(focus)
    out: dict[tuple[str, str], float] = {}
    for ids in by_tenant.values():
        rows = [i for i, mid in enumerate(ids) if mid in wanted]
        if len(ids) < 2 or not rows:
            continue
        matrix = stored.matrix([blobs[i] for i in ids], dimension)
        k = min(NEIGHBOURS, len(ids) - 1)
        sims = matrix[rows] @ matrix.T
        sims[numpy.arange(len(rows)), rows] = -1.0
        reach = min(REVERSE_REACH, len(ids) - 1)
        near = numpy.argpartition(-sims, reach - 1, axis=1)[:, :reach]
        for r, row in enumerate(near):
            top = row[numpy.argsort(-sims[r, row], kind="stable")][:k]
            for j in top:
                if sims[r, j] >= MIN_COSINE:
                    out[(ids[rows[r]], ids[int(j)])] = float(sims[r, j])
        # Who counts a focus memory among its own nearest: its k-th best cosine decides.
        others = sorted({int(j) for row in near for j in row})
        theirs = matrix[others] @ matrix.T
        theirs[numpy.arange(len(others)), others] = -1.0
        kth = -numpy.partition(-theirs, k - 1, axis=1)[:, k - 1]
        cross = theirs[:, rows]
        near_them = (cross >= kth[:, None]) & (cross >= MIN_COSINE)
        for o, r in zip(*numpy.nonzero(near_them)):
            out.setdefault((ids[others[o]], ids[rows[r]]), float(cross[o, r]))
    return [Neighbour(a, b, s) for (a, b), s in out.items()]


def read_by(
    near: Sequence[Neighbour], candidates: Sequence[Candidate], embedder: object
) -> list[Neighbour]:
    """The pairs of ``near`` whose two texts ``embedder`` reads (:data:`MIN_COVERAGE`).

    A model that never saw a script still returns a vector for it: all-MiniLM-L6-v2 gave
    "我姐姐住在杭州" and "我姐姐住在苏州" (two cities) a cosine of 1.0, and a fullwidth copy of
    an English text 0.08. Such a pair is judged by its words alone, as in a store without
    vectors, whose MERGE asks for nearly the same words."""
    latin = coverage(embedder, "a") >= MIN_COVERAGE

    def reads(text: str) -> bool:
        if text.isascii():  # Latin letters or none (most text: no need to look at each one)
            return latin or not any(c.isalpha() for c in text)
        return coverage(embedder, text) >= MIN_COVERAGE

    wanted = {i for n in near for i in (n.a, n.b)}
    read = {c.id: reads(c.text) for c in candidates if c.id in wanted}
    return [n for n in near if read.get(n.a, False) and read.get(n.b, False)]
