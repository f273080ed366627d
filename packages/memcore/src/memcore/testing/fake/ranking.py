"""How the fake scores one memory against a query: word overlap, or cosine with an embedder."""

from __future__ import annotations

from collections.abc import Mapping

from memcore.scope import Scope
from memcore.testing.fake.reading import tokens
from memcore.testing.fake.state import StoreState, Unit
from memcore.values import MemoryRecord, SearchHit


def hit_for(
    st: StoreState,
    unit: Unit,
    words: set[str],
    vector: list[float] | None,
    *,
    filters: Mapping[str, str],
    floor: float | None,
    context_scope: Scope | None,
    include_evidence: bool,
) -> SearchHit | None:
    """``unit`` as a hit for the query's ``words`` (and ``vector``), or None when it misses
    a filter, shares nothing with the query or scores under ``floor``. A hit of the
    ``context_scope`` conversation ranks first (``ranking_score``)."""
    m = unit.memory
    if any(m.metadata.get(k) != v for k, v in filters.items()):
        return None
    lexical = len(words & tokens(m.text)) / len(words) if words else 0.0
    score = lexical
    similarity = None
    if vector is not None and unit.vector is not None:
        cosine = sum(a * b for a, b in zip(vector, unit.vector))
        similarity = round((cosine + 1.0) / 2.0, 6)
        score = max(lexical, similarity if cosine > 0.2 else 0.0)
    if score <= 0.0 or (floor is not None and score < floor):
        return None
    score = round(min(1.0, score), 6)
    ranking = None
    if context_scope is not None:
        ranking = round(score + (0.1 if m.scope == context_scope else 0.0), 6)
    found = evidence(st, m) if include_evidence else ()
    return SearchHit(m, score, similarity, "vector" if vector else "text", found, ranking)


def evidence(st: StoreState, memory: MemoryRecord) -> tuple[dict[str, str], ...]:
    """The messages a memory came from (at most 8, each cut to 1,200 characters)."""
    out = []
    for _, msg in st.messages.get(memory.scope, []):
        if msg.content.strip() == memory.text.strip():
            out.append({"messageId": msg.id or "", "role": msg.role, "content": msg.content[:1200]})
    return tuple(out[:8])
