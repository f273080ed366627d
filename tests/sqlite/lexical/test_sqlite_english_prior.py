"""A query word's lexical weight also reflects how common it is in ordinary English."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.lexical import analysis, english
from memcore_sqlite.search import ranking

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")


def test_a_common_verb_weighs_less_than_a_rare_word_held_by_as_many_rows(
    lexical_store: SqliteMemoryStore,
) -> None:
    """In a small store both words are in one row, so the store alone gives them the same
    IDF, and the newest row won the tie: the one holding only the verb."""
    kayak = lexical_store.add_text(STORE, ALICE, "Sofia: the kayak flipped over", sync=True)
    lexical_store.add_text(STORE, ALICE, "Sofia: we should take the bus", sync=True)
    for i in range(6):
        lexical_store.add_text(STORE, ALICE, f"Sofia: note {i} about lunch", sync=True)
    hits = lexical_store.search(
        STORE, ALICE.tenant_pattern(), "When did Sofia take the kayak out?", mode="lexical"
    )
    assert hits[0].memory.id == kayak.memory_ids[0]


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
    assert shipped != whole  # the shipped prior weighs "take" below "kayak"


def test_the_table_is_read_by_the_first_search_that_weighs_a_word(
    lexical_store: SqliteMemoryStore,
) -> None:
    english.ranks.cache_clear()
    lexical_store.add_text(STORE, ALICE, "take the kayak", sync=True)
    assert english.ranks.cache_info().currsize == 0
    lexical_store.search(STORE, ALICE.tenant_pattern(), "kayak", mode="lexical")
    assert english.ranks.cache_info().currsize == 1


def test_start_up_does_not_import_the_prior() -> None:
    """Start-up stays as fast: the module and its table wait for the first query."""
    code = "import sys, memcore_sqlite.search.ranking as r; print(r.__name__, sys.modules.keys())"
    names = subprocess.check_output([sys.executable, "-c", code], text=True)
    assert "memcore_sqlite.search.ranking" in names
    assert "memcore_sqlite.lexical.english" not in names


@pytest.mark.parametrize("damage", ["missing", "not JSON", "no vocabulary"])
def test_a_word_list_that_cannot_be_read_leaves_the_scope_idf_and_search_works(
    lexical_store: SqliteMemoryStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    damage: str,
) -> None:
    """The word list ships with the package's data, which an installer may strip: searches
    then rank as they did without the prior (a warning says why), not fail."""
    table = tmp_path / "tokenizer.json"
    if damage == "not JSON":
        table.write_text("{not json", encoding="utf-8")
    elif damage == "no vocabulary":
        table.write_text('{"model": {}}', encoding="utf-8")
    monkeypatch.setattr(english, "TOKENIZER", table)
    english.ranks.cache_clear()
    try:
        kayak = lexical_store.add_text(STORE, ALICE, "the kayak flipped over", sync=True)
        for _ in range(2):
            hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "kayak", mode="lexical")
            assert [h.memory.id for h in hits] == list(kayak.memory_ids)
        assert english.share("the", 10_000) == 1.0  # no prior: every word kept whole
        warned = [r for r in caplog.records if "word list" in r.getMessage()]
        assert len(warned) == 1 and str(table) in warned[0].getMessage()
    finally:
        english.ranks.cache_clear()
