"""A query word's lexical weight also reflects how common it is in ordinary English."""

from __future__ import annotations

import sqlite3
from functools import partial
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.lexical import analysis, english
from memcore_sqlite.search import ranking

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")


def test_the_share_follows_the_words_english_rank() -> None:
    share = partial(english.share, rare_rank=10_000)
    assert 0.0 < share("the") < share("take") < share("autumn") < 1.0
    # Not a word of the vocabulary (a name, a year) or not ASCII: rare, kept whole.
    for term in ("stowe", "2022", "咖啡", "café"):
        assert share(term) == 1.0
    assert english.share("take", 10_000, strength=2.0) == pytest.approx(share("take") ** 2)
    # A word past the rare rank keeps its whole weight.
    assert english.share("autumn", 1_000) == 1.0


def test_a_prior_passed_in_replaces_the_default(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    """Benchmarks score other priors on one store through the same code."""
    lexical_store.add_text(STORE, ALICE, "kayak on the lake", sync=True)
    lexical_store.add_text(STORE, ALICE, "take a nap", sync=True)
    lexical_store.add_text(STORE, ALICE, "a quiet lunch", sync=True)
    conn = sqlite3.connect(db_path)
    query = analysis.LexicalQuery(("take", "kayak"))
    whole = ranking.lexical(conn, query, 10, 20, prior=lambda term: 1.0)
    halved = ranking.lexical(conn, query, 10, 20, prior=lambda term: 0.5)
    shipped = ranking.lexical(conn, query, 10, 20)
    conn.close()
    assert whole == halved  # the same share for every term: the same scores
    assert shipped == whole  # no prior shipped
