"""The shortlist of rows whose cosine may reach a threshold (a hybrid search's narrowing): the
lead's looser bound drops rows first, and what comes out is what the int8 codes alone give,
on data built so that the lead alone says little (rows that differ only past it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memcore_sqlite.vector import shortlist, sketch
from memcore_sqlite.vector.cache import _Entry, exact_top
from memcore_sqlite.vector.quantize import encode
from memcore_sqlite.vector.shortlist import Shortlister

DIM = 384


def _unit(rows: Any) -> Any:
    rows = np.asarray(rows, dtype=np.float32)
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def _templated(n: int, seed: int) -> tuple[Any, Any]:
    """Rows with a shared direction (as real embeddings have) in a few templates, each
    template's rows alike in their principal coordinates and told apart only by parts
    spread over all the others; the query is one template's too, and a few rows are the
    query told again in other words (alike past the principal coordinates as well: the
    rows whose cosine the lead's bound underrates most)."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(DIM)
    templates = common + 0.8 * rng.standard_normal((12, DIM))
    rows = templates[rng.integers(0, 12, n)] + 0.35 * rng.standard_normal((n, DIM))
    detail = 0.35 * rng.standard_normal(DIM)
    query = templates[0] + detail
    for i, noise in enumerate(np.linspace(0.05, 0.5, 6)):
        told = templates[i % 12] + (1.5 - 2 * noise) * detail  # another template's words
        rows[i] = told + noise * rng.standard_normal(DIM)
    return _unit(rng.permutation(rows)), _unit(query)


def _entry(rows: Any, sketched: bool) -> tuple[Any, _Entry]:
    seqs = np.arange(1, len(rows) + 1, dtype=np.int64) * 3
    entry = _Entry(0, encode(seqs, rows), None)
    if sketched:
        entry.sketch()
    return seqs, entry


def _thresholds(rows: Any, query: Any) -> list[float]:
    """Cosines around the best ones: above every row, at the best, the 10th, the 100th
    best, and in the thick of the scope."""
    cosines = np.sort(rows @ query)[::-1]
    at = [float(cosines[0]) + 0.05, float(cosines[0]), float(cosines[9]), float(cosines[99])]
    return [float(np.float32(t)) for t in [*at, float(np.median(cosines)), -2.0]]


def _as_lists(out: Any) -> list[list[Any]]:
    return [a.tolist() for a in out]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
def test_the_lead_drops_only_rows_the_codes_would_drop(
    seed: int, share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For every threshold and size: the sketched shortlist (the rest of the head read for
    every row, gathered for the rows the lead keeps, or as the share decides) is the one the
    int8 codes give alone, and it holds every row of the exact best that reaches the
    threshold."""
    monkeypatch.setattr(shortlist, "GATHER_SHARE", share)
    rows, query = _templated(6_000, seed)
    seqs, plain = _entry(rows, sketched=False)
    _, sketched = _entry(rows, sketched=True)
    for n in (1, 10, 100):
        best = exact_top(seqs, rows, query, n)
        for at_least in _thresholds(rows, query):
            want = Shortlister(plain, query, None)(n, at_least)
            got = Shortlister(sketched, query, None)(n, at_least)
            assert _as_lists(got) == _as_lists(want)
            reaching = {s for s, c in best if c >= at_least}
            assert reaching <= set(got[0].tolist())


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, Any]]:
    """Each block of the head read from now on: (block, the rows read; None: in order)."""
    reads: list[tuple[int, Any]] = []
    block = sketch.Turned.block

    def counted(self: sketch.Turned, j: int, n: int, rows: Any = None) -> Any:
        reads.append((j, None if rows is None else rows.tolist()))
        return block(self, j, n, rows)

    monkeypatch.setattr(sketch.Turned, "block", counted)
    return reads


def test_above_every_row_the_shortlist_is_empty_after_the_first_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows, query = _templated(6_000, 3)
    _, entry = _entry(rows, sketched=True)
    reads = _reads(monkeypatch)
    top = float(np.max(rows @ query))
    seqs, estimates, slack = Shortlister(entry, query, None)(10, top + 0.2)
    assert (len(seqs), len(estimates), len(slack)) == (0, 0, 0)
    assert reads == [(0, None)]


@pytest.mark.parametrize("allowed", [None, "odd"])
def test_one_querys_shortlists_are_fresh_ones_and_read_each_block_once(
    allowed: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search's narrowing, widening and dropping of the narrowing, in the order a fused
    order asks for them: each answer is a fresh shortlister's, and no row's block is read
    twice until the narrowing is dropped (then the whole head is read, once)."""
    rows, query = _templated(6_000, 4)
    seqs, entry = _entry(rows, sketched=True)
    only = None if allowed is None else seqs[1::2]
    allowed_rows = list(range(len(seqs))) if only is None else np.flatnonzero(np.isin(seqs, only))
    cosines = np.sort(rows @ query)[::-1]
    asked = [(10, cosines[0]), (10, cosines[30]), (100, cosines[60]), (100, -np.inf)]
    want = [_as_lists(Shortlister(entry, query, only)(n, float(t))) for n, t in asked]
    reads = _reads(monkeypatch)
    one = Shortlister(entry, query, only)
    blocks = len(entry.sketch().cuts)
    for step, ((n, t), fresh) in enumerate(zip(asked, want)):
        assert _as_lists(one(n, float(t))) == fresh
        if step == len(asked) - 2:
            narrowed = list(reads)
    assert len(narrowed) > blocks  # some rows were gathered
    for j in range(blocks):
        read = [
            row
            for block, at in narrowed
            if block == j
            for row in (allowed_rows if at is None else at)
        ]
        assert len(read) == len(set(read))
    everything = None if only is None else list(allowed_rows)
    assert reads[len(narrowed) :] == [(j, everything) for j in range(blocks)]


def test_rows_written_and_removed_after_the_sketch_keep_their_bounds() -> None:
    """The sketch's basis is chosen from the rows there when it is built; the rows told like
    the query arrive later (projected on that basis, their lead's bound the loosest) and
    other rows go (the last row moved into each one's place): the same shortlists as the
    int8 codes alone give for what the scope holds."""
    rows, query = _templated(6_000, 5)
    seqs = np.arange(1, len(rows) + 1, dtype=np.int64) * 3
    told = np.argsort(rows @ query)[-8:]  # the rows most like the query come last
    first = np.setdiff1d(np.arange(len(rows)), told)[:5_000]
    later = np.concatenate([np.setdiff1d(np.arange(len(rows)), [*first, *told]), told])
    entry = _Entry(0, encode(seqs[first], rows[first]), None)
    entry.sketch()
    entry.append(encode(seqs[later], rows[later]), rows[later], 0)
    gone = seqs[first[::7]]
    for seq in gone.tolist():
        entry.remove(seq)
    left = np.isin(seqs, gone, invert=True)
    _, plain = _entry(rows[left], sketched=False)
    plain_seqs = seqs[left]
    for n in (1, 10, 100):
        for at_least in _thresholds(rows[left], query):
            got = Shortlister(entry, query, None)(n, at_least)
            want = Shortlister(plain, query, None)(n, at_least)
            assert sorted(got[0].tolist()) == sorted(plain_seqs[want[0] // 3 - 1].tolist())
