"""The fused order of one search, made exact only as far as the caller reads it.

Hybrid relevance (:func:`memcore_sqlite.search.ranking.fuse`) needs the cosine of every candidate:
the vector pool (the best :data:`~memcore_sqlite.search.ranking.POOL` rows by exact cosine among the
shortlist of :meth:`~memcore_sqlite.vector.cache.VectorCache.shortlist`) and every lexical
candidate. Reading each one's float vector by key was most of a search's vector cost, yet a
search returns ten hits. The int8 codes bound each cosine (:func:`memcore_sqlite.vector.quantize.
error_bound`), and relevance never falls when the cosine rises, so each candidate's relevance
lies between two bounds. Asked for the first ``k`` of the order, :class:`FusedOrder` reads
the float vectors of the candidates whose upper bound reaches the ``k``-th best lower bound
and of no others: every row it leaves unread scores below ``k`` rows it has read. A
shortlisted row that holds no query term is a candidate only if it is in the vector pool; it
counts as one only when its bounds prove it, otherwise every shortlisted vector is read, as
the plain path does. Returned scores, signals and order are therefore those of the plain
path (``tests/sqlite/test_sqlite_fused_order.py``).

The shortlist itself is built only as far as the order read needs it. It may start empty
(a hybrid search: every row's cosine is below the ceiling :meth:`~memcore_sqlite.vector.cache.
VectorCache.ceiling`) or hold every row that may be among the best ``first`` by cosine (every
row left out scores below its cut, the ``first``-th best lower bound, which at least
``first`` of its rows reach). A row left out is a candidate only if it is in the vector pool
and has no query term, so its relevance is at most the vector share of the cut: when that
is below the ``k``-th best lower bound, no row left out can be among the first ``k``, and a
shortlisted row with fewer than ``first`` possible betters has its exact rank among them.
Otherwise the shortlist widens (to the best ``first``, then to the pool) and the order is
worked out again, keeping the cosines already read.

A widened shortlist is also narrowed by the order's own floor ``F``, the ``k``-th best lower
bound on the relevance of the rows surely among the candidates (every lexical candidate, and
every shortlisted row proved in the pool): the ``k``-th best relevance is at least ``F``, so a
row scoring below it cannot be among the first ``k``. A row holding no query term scores its
vector share alone, ``clip(w * clip(cosine))`` with the same float operations as
:func:`~memcore_sqlite.search.ranking.fuse` (the lexical share it adds is 0.0, exactly; the
score is absolute, not normalised over the candidates, so no candidate set moves it), and
that score never falls as the cosine rises. :func:`vector_only_below` finds the float32
cosine ``t`` whose score is below ``F - NARROW_SLACK``; the shortlist's stages
(:meth:`~memcore_sqlite.vector.shortlist.Shortlister.__call__`) then also drop every row whose
cosine upper bound is below ``t`` (a float32 value, so their float32 bounds compare with it
without rounding). Such a row, whatever its cosine, scores below
``F - NARROW_SLACK`` as a candidate, whether or not it is in the pool; and a lexical candidate
left out is still a candidate (its bounds come from its own codes). What the narrowing costs
is the shortlist's completeness: a row at or above ``t`` still has every row that beats it on
the shortlist, so the pool membership proved for it (:meth:`BoundedOrder._pool_status`) holds;
a row below ``t`` may be counted in the pool wrongly, but it scores below ``F`` and, while the
floor of the prefix read stays at least ``F - NARROW_SLACK``, neither raises that floor nor
enters the prefix. Rows left out of a narrowed shortlist of the best ``first`` either score
below the floor or have a cosine below its ``first``-th best lower bound (the rows that
proved that bound have cosines of at least ``t`` and stayed; the bound is taken again from
the shortlist's float32 lows, plus :data:`CUT_MARGIN`). A prefix whose floor falls
below ``F - NARROW_SLACK`` (a longer one, read later) drops the narrowing and takes the whole
shortlist again; making the whole order exact (:meth:`BoundedOrder._resolve_all`) always does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memcore_sqlite.search import ranking
from memcore_sqlite.search.ranking import LexicalHit, Relevance

if TYPE_CHECKING:
    import numpy as np

#: Exact cosines of the given seqs: (seqs that have a vector, their cosines).
ReadCosines = Callable[[Sequence[int]], "tuple[np.ndarray, np.ndarray]"]
#: Cosine estimates of the given seqs from their codes: (has codes, estimates, error bounds).
Estimate = Callable[["np.ndarray"], "tuple[np.ndarray, np.ndarray, np.ndarray]"]
#: The shortlist of every row that may be among the best ``n`` by cosine, less those whose
#: cosine is below the second argument (a float32 value; -inf for none).
Widen = Callable[[int, float], "tuple[np.ndarray, np.ndarray, np.ndarray]"]
Ranked = list[tuple[int, Relevance]]


def _np() -> Any:
    import numpy

    return numpy


def _lookup(values: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whether each of ``wanted`` is among the distinct ``values``, its position there)."""
    np_ = _np()
    if not len(values):
        return np_.zeros(len(wanted), bool), np_.zeros(len(wanted), np_.int64)
    order = np_.argsort(values)
    at = np_.minimum(np_.searchsorted(values, wanted, sorter=order), len(values) - 1)
    where = order[at]
    found: np.ndarray = values[where] == wanted
    return found, where


def ordered(fused: Mapping[int, Relevance]) -> Ranked:
    """Best first; equal scores newest first."""
    return sorted(fused.items(), key=lambda kv: (-kv[1].score, -kv[0]))


def clipped(x: np.ndarray) -> np.ndarray:
    """``min(1.0, max(0.0, x))`` as Python computes it, element by element: ``max`` keeps 0.0
    unless ``x`` is greater (so NaN and -0.0 give 0.0), ``min`` keeps 1.0 unless it is less."""
    np_ = _np()
    above = np_.where(x > 0.0, x, 0.0)
    out: np.ndarray = np_.where(above < 1.0, above, 1.0)
    return out


#: How far below the floor it was worked out for a narrowed shortlist stays valid: float
#: bounds recomputed after a widening (the same codes, summed in other blocks) may differ in
#: their last bit, and that must not throw the narrowing away.
NARROW_SLACK = 1e-6
#: Added to a shortlist's ``first``-th best lower bound before it bounds the rows left out:
#: the shortlister chose them on the same int8 sums computed in other blocks, whose float32
#: rounding may differ (at most 384 * 2**-24 of the norms' product, about 2.3e-5).
CUT_MARGIN = 1e-4


def vector_only_below(floor: float, hybrid: bool) -> float:
    """The largest float32 cosine ``t`` (at most 2) at which a candidate holding no query term
    scores below ``floor``; as that score never falls as the cosine rises, every cosine up to
    ``t`` does too. -inf when none does (``floor`` at most 0)."""
    np_ = _np()
    if not floor > 0.0:
        return -float("inf")
    weight = ranking.VECTOR_WEIGHT if hybrid else 1.0
    none = np_.zeros(1, np_.float64)

    def below(t: Any) -> bool:
        return bool(relevance_bound(np_.array([t], np_.float64), none, hybrid)[0] < floor)

    if below(2.0):  # above the score of a cosine of 1: every row
        return 2.0
    # Near the quotient the float scores step with the float32 cosines: a step or two.
    t = np_.float32(floor / weight)
    up, down = np_.float32(np_.inf), np_.float32(-np_.inf)
    while below(t):
        t = np_.nextafter(t, up)
    while not below(t):
        t = np_.nextafter(t, down)
    return float(t)


def relevance_bound(cosines: np.ndarray, lexical: np.ndarray, hybrid: bool) -> np.ndarray:
    """:func:`memcore_sqlite.search.ranking.fuse`'s score, row by row, for arrays: with the same
    operations in the same order, so a bound on the cosine gives a bound on the score, and
    an exact cosine gives the exact score (:mod:`memcore_sqlite.search.exact_order`)."""
    vector = clipped(cosines)
    if hybrid:
        weight = ranking.VECTOR_WEIGHT
        score = weight * vector + (1 - weight) * lexical
    else:
        score = vector
    return clipped(score)


class FusedOrder:
    """The candidates of one search in fused order; :meth:`first` makes a prefix exact."""

    def __init__(self, ranked: Ranked | None = None) -> None:
        self._all = ranked

    def first(self, k: int) -> Ranked:
        """The first ``k`` (seq, relevance) pairs of the order (all of them if fewer)."""
        assert self._all is not None
        return self._all[:k]


class BoundedOrder(FusedOrder):
    """The fused order of a two-stage scope, resolved from cosine bounds on demand.

    ``shortlist`` is (seqs, int8 estimates, error bounds) of the rows that may be in the
    vector pool of ``pool`` rows; ``lexical`` the lexical candidates (None or empty: a vector
    search); ``estimate`` bounds the cosines of lexical candidates from their codes and
    ``read`` gives exact cosines. ``ceiling`` gives a bound on every row's cosine, asked
    only when the shortlist starts empty (none: no bound): it costs a pass over every code of
    the scope the first time (30-60 ms at 100k rows, in a fresh process's first search).
    """

    def __init__(
        self,
        shortlist: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        lexical: Mapping[int, LexicalHit] | None,
        pool: int,
        estimate: Estimate,
        read: ReadCosines,
        widen: Widen | None = None,
        first: int | None = None,
        ceiling: Callable[[], float] | None = None,
    ) -> None:
        super().__init__()
        np_ = _np()
        self._lexical = lexical or {}
        self._hybrid = bool(lexical)
        self._pool = pool
        self._read_cosines = read
        self._estimate = estimate
        self._widen = widen
        self._first_n = pool if widen is None or first is None else min(first, pool)
        #: The shortlist holds every row that may be among the best ``_n`` by cosine; none
        #: yet (0) when it is left until the lexical candidates show it is needed.
        self._n = self._first_n if shortlist is not None else 0
        #: Exact cosines read so far (None: no vector), kept when the shortlist widens.
        self._found: dict[int, float | None] = {}
        self._ceiling = ceiling
        #: A narrowed shortlist (module docstring) leaves out rows of cosine below
        #: ``_at_least`` (-inf: not narrowed), which score below ``_vector_floor``.
        self._at_least = -float("inf")
        self._vector_floor = -float("inf")
        self._may_narrow = self._widen is not None
        #: The floor of the prefix last tried (None: fewer candidates than it asked for).
        self._floor_seen: float | None = None
        if shortlist is None:
            empty = np_.empty(0, np_.float64)
            shortlist = (np_.empty(0, np_.int64), empty, empty)
        self._setup(shortlist)

    def _setup(self, shortlist: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        np_ = _np()
        s_seqs, s_est, s_slack = shortlist
        n_lex = len(self._lexical)
        lex_seqs = np_.fromiter(self._lexical, dtype=np_.int64, count=n_lex)
        lex_scores = np_.array([hit.score for hit in self._lexical.values()], dtype=np_.float64)
        # Sorted lookups, not numpy.isin: isin's first call imports numpy.ma (about 30 ms of a
        # fresh process's first search); not sets either, which cost a Python step per seq.
        listed, _ = _lookup(s_seqs, lex_seqs)
        extra = lex_seqs[~listed]
        l_has, l_est, l_slack = self._estimate(extra)
        self.seqs: np.ndarray = np_.concatenate([s_seqs, extra])
        n_short = len(s_seqs)
        self.in_shortlist = np_.zeros(len(self.seqs), bool)
        self.in_shortlist[:n_short] = True
        short_lexical, at = _lookup(lex_seqs, s_seqs)
        self.in_lexical = np_.concatenate([short_lexical, np_.ones(len(extra), bool)])
        #: Shortlisted rows with no query term: candidates only if in the vector pool.
        self._vector_only = np_.concatenate([~short_lexical, np_.zeros(len(extra), bool)])
        self._n_short = n_short
        short_scores = np_.zeros(n_short, np_.float64)
        short_scores[short_lexical] = lex_scores[at[short_lexical]]
        self.lexical_score = np_.concatenate([short_scores, lex_scores[~listed]])
        #: The lexical share of each candidate's relevance, for :meth:`_bound`.
        self._lexical_part = (1 - ranking.VECTOR_WEIGHT) * self.lexical_score
        both = np_.concatenate([s_est, l_est, s_slack, l_slack]).astype(np_.float64)
        est, slack = both[: len(self.seqs)], both[len(self.seqs) :]
        self.low = est - slack
        self.high = est + slack
        #: Every row left out of the shortlist that may score ``_vector_floor`` or more as a
        #: candidate has a cosine below this (-inf: no such row; see :meth:`first`).
        self._cut = -np_.inf
        if self._n == 0:
            self._cut = np_.inf if self._ceiling is None else self._ceiling()
        if 0 < self._n < self._pool:
            # In float32, as the shortlister computed them when it chose the rows.
            lows = s_est - s_slack
            lows = lows[np_.isfinite(lows)]
            if len(lows) >= self._n:
                nth = np_.partition(lows, len(lows) - self._n)[len(lows) - self._n]
                self._cut = float(nth) + CUT_MARGIN
            elif self._at_least == -np_.inf:
                self._cut = np_.inf
            # Narrowed, with fewer than ``_n`` rows: no row was left out on the ``_n``-th
            # best bound (the rows proving it would be here), only below ``_at_least``.
        self.known = np_.zeros(len(self.seqs), bool)
        self.has_vector = np_.ones(len(self.seqs), bool)
        self.coded = np_.concatenate([np_.ones(n_short, bool), l_has])
        self._broken = not np_.isfinite(self.low + self.high).all()
        if self._found:
            seen = [i for i, seq in enumerate(self.seqs.tolist()) if seq in self._found]
            for row in seen:
                cosine = self._found[int(self.seqs[row])]
                self.known[row] = True
                if cosine is None:
                    self.has_vector[row] = False
                    self.low[row] = self.high[row] = 0.0
                else:
                    self.low[row] = self.high[row] = cosine
            self._broken = not np_.isfinite(self.low + self.high).all()
        # Lexical candidates without codes have no bounds: read them now (normally none).
        if not l_has.all():
            self._read(np_.flatnonzero(~self.coded & ~self.known))

    def _widened(self) -> bool:
        """Widen the shortlist: from none to the best ``first``, then to the pool, narrowed
        by the floor of the prefix last tried; or drop a narrowing that floor no longer
        allows (the module docstring)."""
        if self._widen is None:
            return False
        floor = self._floor_seen
        if self._at_least > -float("inf") and (floor is None or floor < self._vector_floor):
            self._may_narrow = False
            self._narrow(-float("inf"))
            self._setup(self._widen(self._n, -float("inf")))
            return True
        if self._n >= self._pool:
            return False
        self._n = self._first_n if self._n == 0 else self._pool
        below = floor - NARROW_SLACK if self._may_narrow and floor is not None else 0.0
        self._narrow(below)
        self._setup(self._widen(self._n, self._at_least))
        return True

    def _narrow(self, floor: float) -> None:
        at_least = vector_only_below(floor, self._hybrid)
        self._at_least = at_least
        self._vector_floor = floor if at_least > -float("inf") else -float("inf")

    def _complete(self) -> None:
        """The whole shortlist of the pool, not narrowed."""
        if self._widen is None or (self._n >= self._pool and self._at_least == -float("inf")):
            return
        self._n = self._pool
        self._may_narrow = False
        self._narrow(-float("inf"))
        self._setup(self._widen(self._n, -float("inf")))

    # -- reading -------------------------------------------------------------------------
    def _read(self, rows: np.ndarray) -> None:
        np_ = _np()
        if not len(rows):
            return
        have, cosines = self._read_cosines(self.seqs[rows].tolist())
        found = dict(zip(have.tolist(), cosines.tolist()))
        for row in rows.tolist():
            seq = int(self.seqs[row])
            self._found[seq] = found.get(seq)
            if seq in found:
                self.low[row] = self.high[row] = found[seq]
            else:
                self.has_vector[row] = False
                self.low[row] = self.high[row] = 0.0
                if self.coded[row]:
                    self._broken = True  # codes without a vector: its bounds were wrong
            self.known[row] = True
        if not np_.isfinite(self.low[rows]).all():
            self._broken = True

    # -- membership of the vector pool ---------------------------------------------------
    def _pool_status(self) -> tuple[np.ndarray, np.ndarray]:
        """(surely in the pool, surely not in it) for each row; only a shortlisted row's
        answer means anything (the shortlisted rows come first)."""
        m = self._n_short
        highs = self.high[:m].copy()
        highs.sort()
        lows = self.low[:m].copy()
        lows.sort()
        # Rows that might beat a row (its own upper bound always reaches its lower one):
        # m - (highs below its low) - 1; rows that surely beat it: m - (lows up to its high).
        # Before widening the shortlist holds every row that may be among the best ``_n`` (at
        # least ``_n`` of its rows score above every row left out): a row with fewer than
        # ``_n`` possible betters in it has its rank there, below ``_n <= pool``.
        inside: np.ndarray = highs.searchsorted(self.low, side="left") > m - 1 - self._n
        outside: np.ndarray = lows.searchsorted(self.high, side="right") <= m - self._pool
        return inside, outside

    def _bound(self, cosines: np.ndarray, rows: Any = slice(None)) -> np.ndarray:
        """:func:`relevance_bound` of these cosines (of the candidates at ``rows``), in half
        its array operations: it is only compared here, never returned, and its inputs are
        numbers (a NaN or infinite bound takes :meth:`_resolve_all`), where ``numpy.clip``
        gives the same values as Python's ``min``/``max`` (-0.0 against 0.0 compares equal)
        and the lexical share is the same product, computed once."""
        np_ = _np()
        vector: np.ndarray = np_.clip(cosines, 0.0, 1.0)
        if not self._hybrid:
            return vector
        score = ranking.VECTOR_WEIGHT * vector
        score += self._lexical_part[rows]
        out: np.ndarray = np_.clip(score, 0.0, 1.0, out=score)
        return out

    # -- the order ------------------------------------------------------------------------
    def first(self, k: int) -> Ranked:
        if self._all is not None:
            return self._all[:k]
        budget = max(2 * k, 16)
        while not self._broken and k > 0:
            made, more = self._first(k, budget)
            if made is not None:
                return made
            if self._broken:
                break
            if more:  # vectors were read, best bound first: try again, reading more if needed
                budget *= 2
                continue
            if not self._widened():
                break
        self._all = self._resolve_all()
        return self._all[:k]

    def _read_best(self, rows: np.ndarray, budget: int) -> bool:
        """Read the vectors of at most ``budget`` of ``rows``, those of highest upper bound
        first (near-duplicates tie with the k-th hit by their bounds; reading the best first
        raises the floor and leaves most of them unread). Whether any was read."""
        np_ = _np()
        if not len(rows):
            return False
        if len(rows) > budget:
            rows = rows[np_.argpartition(-self.high[rows], budget - 1)[:budget]]
        self._read(rows)
        return True

    def _first(self, k: int, budget: int) -> tuple[Ranked | None, bool]:
        """(the first ``k`` when the bounds decide them, None otherwise; whether vectors were
        read towards deciding them, so that trying again may succeed without widening)."""
        np_ = _np()
        self._floor_seen = None
        inside, outside = self._pool_status()
        member = self.in_lexical | inside
        count = np_.count_nonzero(member)
        unread = self.in_shortlist & ~self.known & ~outside
        if count < k:
            return None, self._read_best(np_.flatnonzero(unread), budget)
        low = self._bound(self.low[member], member)
        low.partition(count - k)
        floor = low[count - k]
        self._floor_seen = float(floor)
        # A narrowed shortlist left out rows scoring below its floor: they cannot reach this
        # prefix while its floor is at least that (the module docstring).
        if floor < self._vector_floor:
            return None, False
        # A row left out of a shortlist narrower than the pool scores below its cut, so at
        # most the vector share of the cut: it cannot reach the floor when that is less.
        if not self._left_out_below(floor):
            return None, False
        possible = self.in_lexical | (self.in_shortlist & ~outside)
        high = self._bound(self.high)
        need = np_.flatnonzero(possible & ~self.known & (high >= floor))
        if len(need) > budget:
            return None, self._read_best(need, budget)
        self._read(need)
        if self._broken:
            return None, False
        inside, outside = self._pool_status()
        undecided = self._vector_only & ~(inside | outside)
        high = self._bound(self.high)
        if (undecided & (high >= floor)).any():
            unread = self.in_shortlist & ~self.known & ~outside
            return None, self._read_best(np_.flatnonzero(unread), budget)
        rows = np_.flatnonzero(self.known & (self.in_lexical | inside))
        return ordered(self._fuse(rows))[:k], False

    def _left_out_below(self, floor: float) -> bool:
        np_ = _np()
        if self._cut == -np_.inf:
            return True
        cut = np_.clip(np_.float64(self._cut), 0.0, 1.0)
        score = ranking.VECTOR_WEIGHT * cut if self._hybrid else cut
        return bool(min(1.0, max(0.0, float(score))) < floor)

    def _fuse(self, rows: np.ndarray) -> dict[int, Relevance]:
        """Exact relevances of these known candidates, by :func:`ranking.fuse` itself."""
        seqs = self.seqs[rows].tolist()
        semantic = {
            s: float(c)
            for s, c, v in zip(seqs, self.low[rows].tolist(), self.has_vector[rows].tolist())
            if v
        }
        if not self._hybrid:
            return ranking.fuse(None, semantic)
        lexical = {s: self._lexical[s] for s in seqs if s in self._lexical}
        if not lexical:
            # fuse reads "no lexical hit at all" as a vector search; any one hit keeps it hybrid.
            first = next(iter(self._lexical))
            lexical = {first: self._lexical[first]}
        fused = ranking.fuse(lexical, semantic)
        return {s: fused[s] for s in seqs}

    def _resolve_all(self) -> Ranked:
        """Every candidate exact: the vector pool is the shortlist's best by exact cosine."""
        np_ = _np()
        self._complete()
        self._read(np_.flatnonzero(~self.known))
        # As exact_top: the best by (cosine, seq), then those that are not numbers dropped.
        short = np_.flatnonzero(self.in_shortlist & self.has_vector)
        best = short[np_.lexsort((-self.seqs[short], -self.low[short]))[: self._pool]]
        best = best[np_.isfinite(self.low[best])]
        candidate = self.in_lexical.copy()
        candidate[best] = True
        rows = np_.flatnonzero(candidate)
        semantic = {
            int(self.seqs[r]): float(self.low[r]) for r in rows.tolist() if self.has_vector[r]
        }
        if not self._hybrid:
            return ordered(ranking.fuse(None, semantic))
        return ordered(ranking.fuse(self._lexical, semantic))
