"""The fused order of a small scope, whose every candidate's cosine is exact at once.

:func:`memcore_sqlite.search.ranking.fuse` makes a :class:`~memcore_sqlite.search.ranking.Relevance` and a
signals dict for each of the ~150 candidates of a search, and the order sorts them all, yet
a search reads about ten. Here the candidates are scored as arrays, with the operations of
``fuse`` in its order (:func:`~memcore_sqlite.search.fused_order.relevance_bound`, whose clipping
is Python's ``min(1.0, max(0.0, x))`` for NaN and -0.0 too), sorted
as :func:`~memcore_sqlite.search.fused_order.ordered` sorts (score descending, newest first), and a
relevance is made only for the prefix the caller reads: the same scores, signals and order
(``tests/sqlite/test_sqlite_exact_order.py``). In a 1k scope it took the search's fusion from
about 0.2 to 0.05 ms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memcore_sqlite.search.fused_order import FusedOrder, Ranked, clipped, relevance_bound
from memcore_sqlite.search.ranking import LexicalHit, Relevance


class ExactOrder(FusedOrder):
    """The hybrid (or vector) order of ``semantic`` cosines and ``lexical`` hits; every
    lexical candidate without a cosine counts 0, as in ``fuse``."""

    def __init__(
        self, lexical: Mapping[int, LexicalHit] | None, semantic: Mapping[int, float]
    ) -> None:
        super().__init__()
        import numpy as np

        self._hybrid = bool(lexical)
        lex = lexical or {}
        # The lexical candidates without a cosine come last, at 0.
        alone = [s for s in lex if s not in semantic]
        seqs = [*semantic, *alone]
        cos = np.array([*semantic.values(), *([0.0] * len(alone))], dtype=np.float64)
        if self._hybrid:
            lexs = np.array(
                [h.score if (h := lex.get(s)) is not None else 0.0 for s in seqs], np.float64
            )
            self._lex: list[float] = lexs.tolist()
        else:
            lexs = np.zeros(len(seqs))  # not read without lexical hits
        score = relevance_bound(cos, lexs, self._hybrid)
        self._at = np.array(seqs, dtype=np.int64)
        self._scores = score
        self._seqs = seqs
        self._score: list[float] = score.tolist()
        self._vector: list[float] = clipped(cos).tolist()
        self._made: Ranked = []

    def _order(self, k: int) -> list[int]:
        """The first ``k`` candidates' positions in the order (score descending, then newest
        first). Only the candidates scoring at least the ``k``-th best can be among the first
        ``k``, so only those are sorted (a search reads ten of about 150); scores are never
        NaN (:func:`~memcore_sqlite.search.fused_order.clipped` makes them 0)."""
        import numpy as np

        score, at = self._scores, self._at
        if k >= len(score):
            return list(np.lexsort((-at, -score)).tolist())
        edge = np.partition(score, len(score) - k)[len(score) - k]
        rows = np.flatnonzero(score >= edge)
        return list(rows[np.lexsort((-at[rows], -score[rows]))[:k]].tolist())

    def first(self, k: int) -> Ranked:
        made = self._made
        if k <= len(made):
            return made[:k]
        for i in self._order(k)[len(made) :]:
            signals: dict[str, Any] = (
                {"lexical": self._lex[i], "vector": self._vector[i]}
                if self._hybrid
                else {"vector": self._vector[i]}
            )
            made.append((self._seqs[i], Relevance(self._score[i], signals)))
        return made[:k]
