"""What a local dream task plans over: the current memories of its scopes and their neighbours.

A memory's time is when its fact was stated: the earliest message it was made from, else its
creation time. Superseded memories are left out (their successor speaks for them).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence

from memcore.dream import Candidate, Neighbour
from memcore.scope import Scope, ScopePattern
from memcore_sqlite.rows import pattern_sql

#: Each memory's nearest neighbours the planner looks at, and the cosine below which a pair
#: is not worth comparing.
NEIGHBOURS = 10
MIN_COSINE = 0.3


def load_candidates(
    conn: sqlite3.Connection,
    store_id: int,
    patterns: Sequence[ScopePattern],
    max_memories: int,
    model: str | None,
) -> tuple[list[Candidate], dict[str, bytes]]:
    """The newest ``max_memories`` current memories of the patterns, and their vector blobs."""
    found: dict[str, Candidate] = {}
    blobs: dict[str, bytes] = {}
    for pattern in patterns:
        where, params = pattern_sql(pattern, "m.")
        rows = conn.execute(
            "SELECT m.seq, m.id, m.app_id, m.tenant_id, m.agent_id, m.run_id, m.text,"
            " m.version, COALESCE((SELECT MIN(g.timestamp) FROM messages g"
            " WHERE g.memory_seq = m.seq), m.created_at), v.vector"
            " FROM memories m LEFT JOIN memory_vectors v ON v.seq = m.seq AND v.model = ?"
            f" WHERE m.store_id = ?{where} AND m.superseded_by IS NULL"
            " ORDER BY m.seq DESC LIMIT ?",
            (model, store_id, *params, max_memories),
        ).fetchall()
        for r in rows:
            scope = Scope(r[2], r[3], r[4], r[5])
            if not pattern.matches(scope):
                continue
            found[r[1]] = Candidate(r[1], scope, r[6], float(r[8]), int(r[0]), int(r[7]))
            if r[9] is not None:
                blobs[r[1]] = r[9]
    ordered = sorted(found.values(), key=lambda c: c.order)[-max_memories:] if found else []
    return ordered, {c.id: blobs[c.id] for c in ordered if c.id in blobs}


def neighbours(
    candidates: Sequence[Candidate], blobs: dict[str, bytes], dimension: int
) -> list[Neighbour]:
    """Each memory's nearest others of the same tenant, by cosine (one matrix product each)."""
    if not blobs:
        return []
    import numpy

    by_tenant: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in candidates:
        if len(blobs.get(c.id, b"")) == 4 * dimension:
            by_tenant[(c.scope.app_id, c.scope.tenant_id)].append(c.id)
    out: list[Neighbour] = []
    for ids in by_tenant.values():
        if len(ids) < 2:
            continue
        matrix = numpy.stack([numpy.frombuffer(blobs[i], dtype="<f4") for i in ids])
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
