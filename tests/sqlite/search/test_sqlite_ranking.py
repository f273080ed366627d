"""Hybrid ranking: top k independent of k, relevance floors, long texts, repeated texts."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.lexical import analysis
from memcore_sqlite.search import ranking
from memcore_sqlite.vector import passages

#: A vector against itself as stored (float16): within 2**-11 of 1 (half a float16 step).
SELF_MATCH = 2.0**-11
STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")


def add(store: SqliteMemoryStore, text: str, **meta: str) -> str:
    return store.add_text(STORE, ALICE, text, metadata=meta or None, sync=True).memory_ids[0]


def test_the_first_hits_do_not_depend_on_top_k(hybrid_store: SqliteMemoryStore) -> None:
    words = ["garden", "tomato", "basil", "river", "kayak", "paddle", "violin", "concert"]
    hybrid_store.add_many(
        STORE,
        [
            TextItem(ALICE, f"{words[i % 8]} {words[(i * 3) % 8]} note {i} {words[(i * 5) % 8]}")
            for i in range(300)
        ],
    )
    pattern = ALICE.tenant_pattern()
    for query in ("garden basil kayak", "violin river", "tomato concert paddle note"):
        longest = [h.memory.id for h in hybrid_store.search(STORE, pattern, query, top_k=50)]
        for k in (1, 5, 10, 20):
            got = [h.memory.id for h in hybrid_store.search(STORE, pattern, query, top_k=k)]
            assert got == longest[:k]


def test_min_similarity_filters_on_the_reported_relevance(
    hybrid_store: SqliteMemoryStore,
) -> None:
    for i in range(10):
        add(hybrid_store, f"the garden has {i} tomato plants")
    add(hybrid_store, "violin lessons on tuesday")
    pattern = ALICE.tenant_pattern()
    every = hybrid_store.search(STORE, pattern, "garden tomato plants", top_k=50)
    floor = sorted(h.score for h in every)[len(every) // 2]
    kept = hybrid_store.search(
        STORE, pattern, "garden tomato plants", top_k=50, min_similarity=floor
    )
    assert [h.memory.id for h in kept] == [h.memory.id for h in every if h.score >= floor]


def test_a_query_with_no_word_in_the_scope_ranks_by_vector_alone(
    hybrid_store: SqliteMemoryStore,
) -> None:
    mid = add(hybrid_store, "quantum chromodynamics lecture")
    vec = HashingEmbedder(64).embed(["quantum chromodynamics lecture"])[0]
    [hit] = hybrid_store.search_vector(STORE, ALICE.tenant_pattern(), "zzqq", vec, top_k=1)
    assert hit.memory.id == mid
    assert hit.score == pytest.approx(1.0, abs=SELF_MATCH)
    assert set(hit.signals) == {"vector"}


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_a_long_memory_is_embedded_whole_as_passages(db_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    embedder = RecordingEmbedder()
    store = SqliteMemoryStore(db_path, embedder=embedder)
    store.ensure_store(STORE)
    head = " ".join(f"alpha{i}." for i in range(150))
    tail = " ".join(f"omega{i}." for i in range(150))
    text = f"{head} {tail}"
    mid = add(store, text)
    [call] = embedder.calls
    assert call == passages.passages(text) and len(call) == 3
    assert " ".join(call).split() == text.split()  # every word reaches the model
    assert store.get_memory(STORE, ALICE, mid).text == text  # nothing stored is cut
    stored = store._tx.conn.execute("SELECT vector FROM memory_vectors").fetchone()[0]
    vector = np.frombuffer(stored, dtype="<f2").astype(np.float32)  # stored as float16
    expected = np.mean(np.asarray(embedder.embed(call), dtype=np.float32), axis=0)
    expected = (expected / np.linalg.norm(expected)).astype("<f2").astype(np.float32)
    assert vector == pytest.approx(expected, abs=1e-6)
    # The end of the text counts: a query about it finds the memory by vector.
    tail_vec = HashingEmbedder(64).embed([tail])[0]
    [hit] = store.search_vector(STORE, ALICE.tenant_pattern(), "zzqq", tail_vec, mode="vector")
    assert hit.signals["vector"] > 0.4
    store.close()


def test_passages_cover_every_word_and_respect_the_bound() -> None:
    text = "Short one. " + " ".join(["word"] * 250) + ". Last sentence here!"
    parts = passages.passages(text, max_words=100)
    assert " ".join(parts).split() == text.split()
    assert all(len(p.split()) <= 100 for p in parts)
    assert passages.passages("a short memory") == ["a short memory"]


def test_a_repeated_text_takes_its_newest_occurrence(lexical_store: SqliteMemoryStore) -> None:
    first = add(lexical_store, "I moved to Lisbon", session="s1", date="2023-01-01")
    before = lexical_store.get_memory(STORE, ALICE, first)
    again = add(lexical_store, "I moved to Lisbon", session="s2")
    assert again == first
    memory = lexical_store.get_memory(STORE, ALICE, first)
    # The newest occurrence's keys win; a key only the older one set is kept.
    assert memory.metadata == {"session": "s2", "date": "2023-01-01"}
    assert memory.created_at == before.created_at
    assert memory.updated_at is not None and before.updated_at is not None
    assert memory.updated_at >= before.updated_at
    assert memory.version == (before.version or 0) + 1
    # The index follows: a filter on the new metadata finds it, the old value no longer does.
    pattern = ALICE.tenant_pattern()
    assert lexical_store.search(STORE, pattern, "Lisbon", filters={"session": "s2"})
    assert not lexical_store.search(STORE, pattern, "Lisbon", filters={"session": "s1"})


def test_each_repeated_message_stays_in_the_message_log(
    lexical_store: SqliteMemoryStore,
) -> None:
    for session in ("s1", "s2"):
        lexical_store.add_messages(
            STORE, ALICE, [Message("user", "same words", metadata={"session": session})]
        )
    [memory] = lexical_store.list_memories(STORE, ALICE.pattern()).items
    assert memory.metadata["session"] == "s2"
    log = lexical_store.list_messages(STORE, ALICE).items
    assert [m.metadata["session"] for m in log] == ["s1", "s2"]


def test_an_older_import_of_a_repeated_text_changes_nothing(
    lexical_store: SqliteMemoryStore,
) -> None:
    mid = add(lexical_store, "imported fact", origin="live")
    lexical_store.add_many(
        STORE, [TextItem(ALICE, "imported fact", {"origin": "backup"}, created_at=1.0)]
    )
    assert lexical_store.get_memory(STORE, ALICE, mid).metadata == {"origin": "live"}


def test_a_file_at_version_4_gets_the_word_counts(db_path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    store = SqliteMemoryStore(db_path)
    store.ensure_store(STORE)
    add(store, "three words here")
    store.close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP INDEX memories_words")  # versions 6 and 7's; a version 4 file has neither
    conn.execute("DROP INDEX memories_tenant_words")
    conn.execute("ALTER TABLE memories DROP COLUMN words")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    store = SqliteMemoryStore(db_path)
    assert store._tx.conn.execute("SELECT words FROM memories").fetchall() == [(3,)]
    add(store, "and a second memory")
    assert len(store.search(STORE, ALICE.tenant_pattern(), "memory words")) == 2
    store.close()


def test_a_length_discount_passed_in_replaces_the_default(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    """Benchmarks score other settings of the discount on one store through the same code."""
    short = add(lexical_store, "a museum visit")
    long = add(lexical_store, "museum " + " ".join(f"filler{i}" for i in range(400)))
    conn = sqlite3.connect(db_path)
    seq = {row[1]: row[0] for row in conn.execute("SELECT seq, id FROM memories")}
    query = analysis.LexicalQuery(("museum",))
    shipped = ranking.lexical(conn, query, 10, 20)
    assert shipped[seq[long]].score < shipped[seq[short]].score
    none = ranking.lexical(conn, query, 10, 20, discount=partial(ranking.length_discount, b=0.0))
    assert none[seq[long]].score == none[seq[short]].score
    same = ranking.lexical(conn, query, 10, 20, discount=ranking.length_discount)
    conn.close()
    assert same == shipped


def whole(term: str) -> float:
    return 1.0


def test_a_coverage_power_passed_in_replaces_the_default(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    """Benchmarks score other powers on one store through the same code: the lexical order
    stays, a row holding part of the query scores its share to that power."""
    # Each term in two of the three rows: equal weights.
    every = add(lexical_store, "we take a trip for the autumn leaves")
    three = add(lexical_store, "autumn leaves on a trip")
    one = add(lexical_store, "take the train")
    conn = sqlite3.connect(db_path)
    seq = {row[1]: row[0] for row in conn.execute("SELECT seq, id FROM memories")}
    query = analysis.LexicalQuery(("take", "trip", "autumn", "leaves"))
    # Every term's IDF whole (no English prior): the shares are the rows' counts alone.
    linear = ranking.lexical(conn, query, 10, 20, power=1.0, prior=whole)
    squared = ranking.lexical(conn, query, 10, 20, power=2.0, prior=whole)
    shipped = ranking.lexical(conn, query, 10, 20, prior=whole)
    conn.close()
    assert linear[seq[one]].score == pytest.approx(0.25)
    assert squared[seq[one]].score == pytest.approx(0.25**2)
    assert squared[seq[three]].score == pytest.approx(0.75**2)
    assert linear[seq[every]].score == squared[seq[every]].score == 1.0
    assert shipped == (squared if ranking.COVERAGE_POWER == 2.0 else linear)
