"""Lexical search: the query builder, CJK text, scopes and filters, score invariants."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.errors import InvalidInput
from memcore.scope import Scope, ScopePattern
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.lexical import analysis

#: A vector against itself as stored (float16): within 2**-11 of 1 (half a float16 step).
SELF_MATCH = 2.0**-11
STORE = "mem"  # the store the conftest fixtures create
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")


def add(store: SqliteMemoryStore, scope: Scope, text: str, **meta: str) -> str:
    return store.add_text(STORE, scope, text, metadata=meta or None, sync=True).memory_ids[0]


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory.id for h in hits]


# -- analysis -------------------------------------------------------------------------------
def test_cjk_runs_become_bigrams_plus_last_char() -> None:
    assert analysis.tokens("我喜欢喝咖啡") == ["我喜", "喜欢", "欢喝", "喝咖", "咖啡", "啡"]
    assert analysis.tokens("Tea与咖啡 ok") == ["tea", "与咖", "咖啡", "啡", "ok"]


def test_query_drops_stop_words_and_caps_terms() -> None:
    assert analysis.query_terms("What is the name of the cat?") == ("name", "cat")
    long = " ".join(f"word{i}" for i in range(20))
    assert len(analysis.query_terms(long)) == analysis.MAX_QUERY_TERMS


def test_a_hedge_in_a_question_is_not_a_term(lexical_store: SqliteMemoryStore) -> None:
    """The stemmer reads "likely" as "like": the question matched every "sounds like" turn
    of the person it names."""
    question = "Would Maya likely read an Agatha Christie novel?"
    assert analysis.query_terms(question) == ("maya", "read", "agatha", "christie", "novel")
    filler = add(lexical_store, ALICE, "Maya: That sounds like a lot.")
    add(lexical_store, ALICE, "Maya: Give me a rainy day and a whodunit")
    add(lexical_store, ALICE, "Jonah: I'd read that")
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), question)
    ranked = {h.memory.id: h.score for h in hits}
    best = max(ranked.values())
    assert ranked[filler] < best
    # A query of nothing else keeps it, as it keeps other stop-words.
    assert analysis.query_terms("likely") == ("likely",)
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "likely")) == [filler]


def test_a_preference_verb_in_a_question_is_not_a_term(
    lexical_store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question such as "Would Ada enjoy backpacking in a national park?" asks about a
    preference; its verb is the frame, and chat is full of it: "Enjoy it while it lasts."
    held the question's name and the verb, and outranked turns about its subject."""
    question = "Would Ada enjoy backpacking in a national park?"
    assert analysis.query_terms(question) == ("ada", "backpacking", "national", "park")
    for verb in ("like", "likes", "liked", "enjoys", "enjoyed", "want", "wants", "wanted"):
        assert analysis.query_terms(f"Would Ada {verb} a tent?") == ("ada", "tent")
    filler = add(lexical_store, ALICE, "Ada: Enjoy it while it lasts.")
    add(lexical_store, ALICE, "Ada: I could spend every weekend in the mountains with a tent")
    subject = add(lexical_store, ALICE, "Ravi: My backpacking trip got rained out")

    def scores() -> dict[str, float]:
        hits = lexical_store.search(STORE, ALICE.tenant_pattern(), question)
        return {h.memory.id: h.score for h in hits}

    assert scores()[subject] > scores()[filler]
    # Without the rule the filler's two terms win: the test sees the difference.
    frames = set(analysis._FRAME_TEXT.split())
    monkeypatch.setattr(analysis, "STOP_WORDS", analysis.STOP_WORDS - frames)
    assert scores()[filler] > scores()[subject]
    monkeypatch.undo()
    # A query of nothing else keeps it, as it keeps other stop-words.
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "enjoy")) == [filler]


def test_a_contraction_typed_without_its_apostrophe_is_a_stop_word(
    lexical_store: SqliteMemoryStore,
) -> None:
    """ "whats my sisters name" is "what's my sister's name" typed fast: "whats" was a term,
    which the index's stemmer reads as "what", so a stored question outranked the answer."""
    assert analysis.query_terms("whats my sisters name?") == ("sisters", "name")
    assert analysis.query_terms("im sure i dont eat meat") == ("sure", "eat", "meat")
    answer = add(lexical_store, ALICE, "My sister is called Mei")
    add(lexical_store, ALICE, "What's the name of that movie with the blue aliens?")
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "whats my sisters name?")
    assert ids(hits)[0] == answer


def test_query_of_only_stop_words_keeps_them() -> None:
    assert analysis.query_terms("who are you") == ("who", "are", "you")


def test_query_expressions_are_restricted_by_tags() -> None:
    q = analysis.build_query("quick brown fox", tags='"t1"')
    assert q.all_of() == 'tags : ("t1") AND body : ("quick" AND "brown" AND "fox")'
    assert (
        q.with_any("fox", ("quick", "brown"))
        == 'tags : ("t1") AND body : ("fox" AND ("quick" OR "brown"))'
    )
    assert q.scope_only() == 'tags : ("t1")'


@given(st.text(max_size=200))
@settings(max_examples=200, deadline=None)
def test_any_query_builds_valid_fts_expressions(text: str) -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body, tags)")
    conn.execute("INSERT INTO f VALUES (?, 'x')", (analysis.index_text(analysis.tokens(text)),))
    q = analysis.build_query(text, tags='"x"')
    if not q.terms:
        return
    for expression in (q.all_of(), q.all_of(q.terms[:1]), q.with_any(q.terms[0], q.terms)):
        conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (expression,)).fetchall()


def test_common_words_do_not_flood_the_or_stage(
    lexical_store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore_sqlite.search import ranking

    monkeypatch.setattr(ranking, "COMMON_TERM_ROWS", 5)
    lexical_store.add_many(
        STORE, [TextItem(ALICE, f"the user mentioned item {i}") for i in range(20)]
    )
    rare = add(lexical_store, ALICE, "the user owns a kayak")
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "user kayak paddles", top_k=5)
    # "user" is common: rows holding only "user" are not OR-matched; "kayak" pairs with it.
    assert ids(hits) == [rare]


def test_only_common_words_fall_back_to_recent_rows(
    lexical_store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore_sqlite.search import ranking

    monkeypatch.setattr(ranking, "COMMON_TERM_ROWS", 5)
    # Words no English list holds, so both weigh alike and only recency decides.
    lexical_store.add_many(STORE, [TextItem(ALICE, f"frobnitz note {i}") for i in range(10)])
    lexical_store.add_many(STORE, [TextItem(ALICE, f"quuxly thing {i}") for i in range(10)])
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "frobnitz quuxly", top_k=3)
    assert [h.memory.text for h in hits] == [
        "quuxly thing 9",
        "quuxly thing 8",
        "quuxly thing 7",
    ]


@pytest.mark.parametrize("before", [0, 1], ids=["oldest", "among-one-words-newest"])
def test_an_older_row_holding_every_common_word_ranks_first(
    lexical_store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch, before: int
) -> None:
    from memcore_sqlite.search import ranking

    monkeypatch.setattr(ranking, "COMMON_TERM_ROWS", 5)
    many = ranking.POOL + 10
    batches = [
        [f"user note {i}" for i in range(many)],
        [f"mentioned thing {i}" for i in range(many)],
    ]
    for texts in batches[:before]:
        lexical_store.add_many(STORE, [TextItem(ALICE, t) for t in texts])
    both = add(lexical_store, ALICE, "the user mentioned it once")
    # Newer rows push it out of one or both words' newest rows: only the AND of both words
    # finds it, and it ranks as holding both, not as one of "user"'s newest rows.
    for texts in batches[before:]:
        lexical_store.add_many(STORE, [TextItem(ALICE, t) for t in texts])
    hits = lexical_store.search(
        STORE, ALICE.tenant_pattern(), "user mentioned", mode="lexical", top_k=3
    )
    assert ids(hits)[0] == both
    assert hits[0].score > hits[1].score


def test_a_row_holding_every_common_word_scores_as_holding_them_all(
    lexical_store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row is among two words' newest rows but not the third's: it still scores as a
    row holding all three, not as one holding two."""
    from memcore_sqlite.search import ranking

    monkeypatch.setattr(ranking, "COMMON_TERM_ROWS", 5)
    many = ranking.POOL + 10
    lexical_store.add_many(STORE, [TextItem(ALICE, f"user garden {i}") for i in range(many)])
    every = add(lexical_store, ALICE, "the user mentioned the garden")
    lexical_store.add_many(STORE, [TextItem(ALICE, f"mentioned thing {i}") for i in range(many)])
    hits = lexical_store.search(
        STORE, ALICE.tenant_pattern(), "user mentioned garden", mode="lexical", top_k=3
    )
    assert ids(hits)[0] == every
    assert hits[0].score == 1.0
    assert hits[1].score < 1.0


def test_enough_rows_holding_every_rare_word_leave_partial_matches_out(
    lexical_store: SqliteMemoryStore,
) -> None:
    from memcore_sqlite.search import ranking

    lexical_store.add_many(
        STORE, [TextItem(ALICE, f"kayak paddle {i}") for i in range(ranking.ENOUGH + 5)]
    )
    lexical_store.add_many(STORE, [TextItem(ALICE, f"kayak trip {i}") for i in range(10)])
    lexical_store.add_many(STORE, [TextItem(ALICE, f"paddle board {i}") for i in range(10)])
    hits = lexical_store.search(
        STORE, ALICE.tenant_pattern(), "kayak paddle", mode="lexical", top_k=50
    )
    assert len(hits) == ranking.ENOUGH + 5
    assert all(h.memory.text.startswith("kayak paddle") for h in hits)
    # Newest first among equal scores.
    assert [h.memory.text for h in hits[:2]] == [
        f"kayak paddle {ranking.ENOUGH + 4}",
        f"kayak paddle {ranking.ENOUGH + 3}",
    ]


def test_a_row_holding_some_of_the_words_is_scored_by_them(
    lexical_store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With fewer rows holding every word than enough, rows holding more of the words rank
    higher, a common word counting only in rows that hold a rare one."""
    from memcore_sqlite.search import ranking

    monkeypatch.setattr(ranking, "COMMON_TERM_ROWS", 5)
    lexical_store.add_many(STORE, [TextItem(ALICE, f"garden note {i}") for i in range(30)])
    three = add(lexical_store, ALICE, "kayak paddle garden")
    two = add(lexical_store, ALICE, "kayak paddle")
    one = add(lexical_store, ALICE, "kayak")
    hits = lexical_store.search(
        STORE, ALICE.tenant_pattern(), "kayak paddle garden", mode="lexical", top_k=50
    )
    # "garden" is common: it lifts the row that also holds the rare words, and rows holding
    # only it are not matched.
    assert ids(hits) == [three, two, one]


# -- CJK ------------------------------------------------------------------------------------
def test_two_character_cjk_word_is_found_inside_a_sentence(
    lexical_store: SqliteMemoryStore,
) -> None:
    mid = add(lexical_store, ALICE, "喜欢喝咖啡")
    add(lexical_store, ALICE, "喜欢喝茶")
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "咖啡")
    assert ids(hits) == [mid]


def test_single_cjk_character_matches_any_position(lexical_store: SqliteMemoryStore) -> None:
    mid = add(lexical_store, ALICE, "喜欢喝咖啡")
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "啡")) == [mid]
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "喝")) == [mid]


def test_cjk_sentence_query_and_japanese(lexical_store: SqliteMemoryStore) -> None:
    zh = add(lexical_store, ALICE, "我的女儿在杭州上大学")
    ja = add(lexical_store, ALICE, "東京でラーメンを食べました")
    ko = add(lexical_store, ALICE, "저는 서울에 살아요")
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "女儿在哪里上大学")) == [zh]
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "ラーメン")) == [ja]
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "서울")) == [ko]


@pytest.mark.parametrize(
    ("answer", "other", "question"),
    [
        ("用户对花生过敏", "用户喜欢喝咖啡", "你知道我对什么东西过敏吗"),
        (
            "私の一番好きなコーヒーはモカです",
            "あなたは私の名前を覚えていますか",
            "あなたは私が一番好きなコーヒーの名前を覚えていますか",
        ),
    ],
)
def test_a_long_cjk_question_keeps_its_subject_among_its_terms(
    lexical_store: SqliteMemoryStore, answer: str, other: str, question: str
) -> None:
    """Its bigrams are all of one length, and the cap kept the first eight: the question's
    frame. The one word it shares with its answer was dropped, and the answer scored 0."""
    wanted = add(lexical_store, ALICE, answer)
    add(lexical_store, ALICE, other)
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), question)
    assert ids(hits)[0] == wanted and hits[0].score > 0


# -- ladder ---------------------------------------------------------------------------------
def test_and_matches_rank_above_partial_matches(lexical_store: SqliteMemoryStore) -> None:
    full = add(lexical_store, ALICE, "the red bicycle is in the garage")
    partial = add(lexical_store, ALICE, "a red apple")
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "red bicycle garage")
    assert ids(hits)[0] == full
    assert partial in ids(hits)
    assert hits[0].score > hits[-1].score


def test_or_fallback_finds_rows_sharing_any_term(lexical_store: SqliteMemoryStore) -> None:
    mid = add(lexical_store, ALICE, "Alice plays the violin")
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "violin concerto tickets")) == [
        mid
    ]


def test_stemming_matches_word_forms(lexical_store: SqliteMemoryStore) -> None:
    mid = add(lexical_store, ALICE, "The user likes running marathons")
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "liked to run a marathon")) == [
        mid
    ]


def test_no_match_returns_nothing(lexical_store: SqliteMemoryStore) -> None:
    add(lexical_store, ALICE, "The user likes coffee")
    assert lexical_store.search(STORE, ALICE.tenant_pattern(), "zebra") == []


def test_punctuation_and_fts_syntax_in_queries_are_plain_text(
    lexical_store: SqliteMemoryStore,
) -> None:
    mid = add(lexical_store, ALICE, "NEAR the AND gate: OR logic")
    for query in ['"', "NEAR(", "AND OR NOT", "*", "gate*:^", "-(logic)"]:
        hits = lexical_store.search(STORE, ALICE.tenant_pattern(), query)
        assert all(h.memory.id == mid for h in hits)


# -- scopes and filters ----------------------------------------------------------------------
def test_search_never_returns_another_tenant(lexical_store: SqliteMemoryStore) -> None:
    add(lexical_store, BOB, "bob's secret recipe uses saffron")
    assert lexical_store.search(STORE, ALICE.tenant_pattern(), "saffron recipe") == []
    assert len(lexical_store.search(STORE, ScopePattern("app"), "saffron recipe")) == 1


def test_wildcard_everything_pattern(lexical_store: SqliteMemoryStore) -> None:
    a = add(lexical_store, ALICE, "shared word pumpkin")
    b = add(lexical_store, Scope("other", "x", "y", "z"), "pumpkin again")
    found = ids(lexical_store.search(STORE, ScopePattern("*"), "pumpkin"))
    assert sorted(found) == sorted([a, b])


def test_filters_with_many_rows_are_exact(lexical_store: SqliteMemoryStore) -> None:
    items = [TextItem(ALICE, f"status report {i}", {"team": f"t{i % 5}"}) for i in range(100)]
    lexical_store.add_many(STORE, items)
    hits = lexical_store.search(
        STORE, ALICE.tenant_pattern(), "status report", top_k=50, filters={"team": "t3"}
    )
    assert len(hits) == 20
    assert all(h.memory.metadata["team"] == "t3" for h in hits)


def test_scores_are_bounded_and_sorted(lexical_store: SqliteMemoryStore) -> None:
    lexical_store.add_many(
        STORE, [TextItem(ALICE, f"apples and pears number {i}") for i in range(40)]
    )
    hits = lexical_store.search(STORE, ALICE.tenant_pattern(), "apples pears number 7", top_k=50)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert hits[0].memory.text == "apples and pears number 7"


def test_bad_inputs_are_refused(lexical_store: SqliteMemoryStore) -> None:
    with pytest.raises(InvalidInput):
        lexical_store.search(STORE, ALICE.tenant_pattern(), "x", min_similarity=1.5)
    with pytest.raises(InvalidInput):
        lexical_store.search(STORE, ALICE, "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        lexical_store.search(STORE, ALICE.tenant_pattern(), "x", filters={"k": 1})  # type: ignore[dict-item]


# -- hybrid ---------------------------------------------------------------------------------
def test_hybrid_score_is_the_documented_mix_of_its_signals(
    hybrid_store: SqliteMemoryStore,
) -> None:
    from memcore_sqlite.search import ranking

    hybrid_store.add_many(
        STORE, [TextItem(ALICE, f"The user owns item number {i}") for i in range(20)]
    )
    best = add(hybrid_store, ALICE, "The user owns a golden retriever")
    hits = hybrid_store.search(STORE, ALICE.tenant_pattern(), "golden retriever", top_k=20)
    assert hits[0].memory.id == best
    for hit in hits:
        lexical, vector = hit.signals["lexical"], hit.signals["vector"]
        assert 0.0 <= lexical <= 1.0 and 0.0 <= vector <= 1.0
        w = ranking.VECTOR_WEIGHT
        assert hit.score == pytest.approx(w * vector + (1 - w) * lexical)
    # Both query terms held: the full lexical score; the others hold neither.
    assert hits[0].signals["lexical"] == pytest.approx(1.0)
    assert all(h.signals["lexical"] == 0.0 for h in hits[1:])


def test_vector_only_and_lexical_only_modes(hybrid_store: SqliteMemoryStore) -> None:
    mid = add(hybrid_store, ALICE, "The user owns a golden retriever")
    lexical = hybrid_store.search(STORE, ALICE.tenant_pattern(), "golden retriever", mode="lexical")
    vector = hybrid_store.search(STORE, ALICE.tenant_pattern(), "golden retriever", mode="vector")
    assert ids(lexical) == ids(vector) == [mid]
    with pytest.raises(InvalidInput):
        hybrid_store.search(STORE, ALICE.tenant_pattern(), "x", mode="fuzzy")


def test_vector_mode_needs_an_embedder(lexical_store: SqliteMemoryStore) -> None:
    from memcore.errors import Unsupported

    with pytest.raises(Unsupported):
        lexical_store.search(STORE, ALICE.tenant_pattern(), "x", mode="vector")


def test_hybrid_filters_apply_to_vector_candidates(hybrid_store: SqliteMemoryStore) -> None:
    hybrid_store.add_many(
        STORE, [TextItem(ALICE, f"note {i}", {"k": str(i % 2)}) for i in range(30)]
    )
    hits = hybrid_store.search(
        STORE, ALICE.tenant_pattern(), "completely unrelated words", filters={"k": "1"}, top_k=50
    )
    assert hits and all(h.memory.metadata["k"] == "1" for h in hits)


def test_vector_cache_sees_writes_of_another_connection(db_path: Path) -> None:
    first = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64))
    second = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64))
    try:
        first.ensure_store(STORE)
        add(first, ALICE, "zeppelin flights over the lake")
        first.search(STORE, ALICE.tenant_pattern(), "zeppelin")  # fills first's cache
        other = add(second, ALICE, "xylophone lessons every tuesday")
        hits = first.search_vector(
            STORE,
            ALICE.tenant_pattern(),
            "zzqq",
            HashingEmbedder(64).embed(["xylophone lessons"])[0],
        )
        assert other in ids(hits)
        second.delete_memory(STORE, ALICE, other)
        hits = first.search_vector(
            STORE,
            ALICE.tenant_pattern(),
            "zzqq",
            HashingEmbedder(64).embed(["xylophone lessons"])[0],
        )
        assert other not in ids(hits)
    finally:
        first.close()
        second.close()


def test_own_writes_update_the_cache_in_place(hybrid_store: SqliteMemoryStore) -> None:
    pattern = ALICE.tenant_pattern()
    add(hybrid_store, ALICE, "warm up the cache")
    hybrid_store.search(STORE, pattern, "cache")
    mid = add(hybrid_store, ALICE, "quantum chromodynamics lecture")
    vec = HashingEmbedder(64).embed(["quantum chromodynamics lecture"])[0]
    assert ids(hybrid_store.search_vector(STORE, pattern, "zzqq", vec))[0] == mid
    assert hybrid_store.search_vector(STORE, pattern, "zzqq", vec)[0].score == pytest.approx(
        1.0, abs=SELF_MATCH
    )
    hybrid_store.update_memory(STORE, ALICE, mid, text="a different sentence entirely")
    new_vec = HashingEmbedder(64).embed(["a different sentence entirely"])[0]
    top = hybrid_store.search_vector(STORE, pattern, "zzqq", new_vec)[0]
    assert (top.memory.id, top.score) == (mid, pytest.approx(1.0, abs=SELF_MATCH))
    old = {h.memory.id: h.score for h in hybrid_store.search_vector(STORE, pattern, "zzqq", vec)}
    assert old[mid] < 0.9


def test_two_stores_in_one_file_never_mix(lexical_store: SqliteMemoryStore) -> None:
    lexical_store.ensure_store("other")
    mine = add(lexical_store, ALICE, "the harbour lighthouse keeper")
    lexical_store.add_text("other", ALICE, "the harbour lighthouse keeper", sync=True)
    assert ids(lexical_store.search(STORE, ALICE.tenant_pattern(), "lighthouse keeper")) == [mine]
    assert ids(lexical_store.search(STORE, ScopePattern("*"), "lighthouse keeper")) == [mine]


@pytest.mark.parametrize(
    "pattern",
    [
        ScopePattern("*"),
        ScopePattern("app"),
        ALICE.tenant_pattern(),
        ScopePattern("app", "alice", "agent", "*"),
        ALICE.pattern(),
    ],
)
def test_filters_work_at_every_pattern_level(
    lexical_store: SqliteMemoryStore, pattern: ScopePattern
) -> None:
    red = add(lexical_store, ALICE, "weekly planning meeting", team="red")
    add(lexical_store, ALICE, "weekly planning meeting notes", team="blue")
    add(lexical_store, BOB, "weekly planning meeting too", team="red")
    hits = lexical_store.search(STORE, pattern, "weekly planning", filters={"team": "red"})
    expected = (
        {red}
        if pattern.tenant_id == "alice"
        else {red, ids(lexical_store.search(STORE, BOB.pattern(), "too"))[0]}
    )
    assert set(ids(hits)) == expected


def test_codes_load_from_many_pages_and_stay_writable(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore_sqlite.vector import code_pages

    monkeypatch.setattr(code_pages, "PAGE_ROWS", 3)
    emb = HashingEmbedder(64)
    with SqliteMemoryStore(db_path, embedder=emb) as writer:
        writer.ensure_store(STORE)
        writer.add_many(STORE, [TextItem(ALICE, f"chunked row {i} {'x' * i}") for i in range(10)])
    with SqliteMemoryStore(db_path, embedder=emb) as reader:
        target = "chunked row 7 xxxxxxx"
        top = reader.search_vector(STORE, ALICE.tenant_pattern(), "zzqq", emb.embed([target])[0])[0]
        assert (top.memory.text, top.score) == (target, pytest.approx(1.0, abs=SELF_MATCH))
        # Deleting swaps rows inside the loaded codes, which must therefore be writable.
        reader.delete_memory(STORE, ALICE, top.memory.id)
        after = reader.search_vector(STORE, ALICE.tenant_pattern(), "zzqq", emb.embed([target])[0])
        assert top.memory.id not in ids(after)
        assert len(after) == 9
