"""The vector signal weighs only what the embedder covers of a query.

With the English default, a Chinese query used to get confident vector scores for any
Chinese memory (``宠物`` found ``用户喜欢喝绿茶`` at 0.8), which ``min_similarity`` could
not filter. The embedder now declares its scripts, and a query outside them is decided by
lexical matching.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.vector.coverage import Script, coverage, covered_share, words_by_script

USER = Scope("app", "user1", "agent", "run")
FACTS = ["用户喜欢喝绿茶", "用户养了一只叫豆豆的柯基犬", "The user likes coffee"]


def test_words_are_counted_per_script_and_han_characters_one_by_one() -> None:
    assert words_by_script("我喜欢 green tea!") == {"CJK": 3, "LATIN": 2}
    assert words_by_script("東京に行った") == {"CJK": 3, "HIRAGANA": 3}
    assert words_by_script("2024 - ?") == {}


def test_the_covered_share_of_a_query() -> None:
    latin = frozenset({Script.LATIN})
    assert covered_share(latin, "green tea") == 1.0
    assert covered_share(latin, "宠物") == 0.0
    assert covered_share(latin, "我喜欢 green tea") == pytest.approx(0.4)
    assert covered_share(latin, "2024") == 1.0  # nothing to judge


def test_an_embedder_that_declares_nothing_covers_everything() -> None:
    assert coverage(HashingEmbedder(16), "宠物") == 1.0


def test_the_default_model_covers_latin_only(onnx_embedder: Any) -> None:
    assert coverage(onnx_embedder, "What pets?") == 1.0
    assert coverage(onnx_embedder, "宠物") == 0.0


def _store(tmp_path: Path, embedder: Any) -> SqliteMemoryStore:
    store = SqliteMemoryStore(tmp_path / "s.db", embedder=embedder)
    store.ensure_store("mem")
    store.add_many("mem", [TextItem(USER, text) for text in FACTS])
    return store


@pytest.mark.parametrize("query", ["宠物", "饮料", "职业", "运动习惯"])
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_an_uncovered_query_gets_no_confident_vector_score(
    tmp_path: Path, onnx_embedder: Any, query: str, mode: str
) -> None:
    with _store(tmp_path, onnx_embedder) as store:
        hits = store.search("mem", USER.tenant_pattern(), query, mode=mode)
        scores = {h.memory.text: h.score for h in hits}
        assert scores.get("用户喜欢喝绿茶", 0.0) < 0.1, scores
        assert not store.search("mem", USER.tenant_pattern(), query, mode=mode, min_similarity=0.1)


def test_lexical_cjk_matching_decides_for_an_uncovered_query(
    tmp_path: Path, onnx_embedder: Any
) -> None:
    with _store(tmp_path, onnx_embedder) as store:
        hits = store.search("mem", USER.tenant_pattern(), "绿茶", min_similarity=0.1)
        assert [h.memory.text for h in hits] == ["用户喜欢喝绿茶"]
        assert hits[0].signals["vector"] == 0.0


def test_a_covered_query_keeps_its_vector_score(tmp_path: Path, onnx_embedder: Any) -> None:
    with _store(tmp_path, onnx_embedder) as store:
        hits = store.search("mem", USER.tenant_pattern(), "favourite beverage", mode="vector")
        assert hits[0].memory.text == "The user likes coffee"
        assert hits[0].score > 0.3


class _LatinHashing(HashingEmbedder):
    """A hashing embedder that says it covers Latin script only."""

    scripts = frozenset({Script.LATIN})


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_an_uncovered_query_scores_zero_on_a_two_stage_scope(tmp_path: Path, mode: str) -> None:
    """Past EXACT_ROWS a scope is searched by int8 bounds; a scaled query scales them too."""
    from memcore_sqlite.vector.cache import EXACT_ROWS

    texts = [f"记忆 {i} 号 memory number {i}" for i in range(EXACT_ROWS + 100)]
    with SqliteMemoryStore(tmp_path / "big.db", embedder=_LatinHashing(64)) as store:
        store.ensure_store("mem")
        store.add_many("mem", [TextItem(USER, text) for text in texts])
        uncovered = store.search("mem", USER.tenant_pattern(), "宠物", mode=mode)
        assert uncovered and all(h.signals.get("vector", 0.0) == 0.0 for h in uncovered)
        assert not store.search(
            "mem", USER.tenant_pattern(), "宠物", mode=mode, min_similarity=0.01
        )
        covered = store.search("mem", USER.tenant_pattern(), "memory number 7", mode=mode)
        assert covered[0].signals["vector"] > 0.5


def test_emoji_are_words_of_their_own_script() -> None:
    assert words_by_script("I love 🍕🍺") == {"LATIN": 2, "EMOJI": 2}
    assert covered_share(frozenset({Script.LATIN}), "🍔") == 0.0
    assert covered_share(frozenset(Script), "🍔") == 1.0


def test_an_emoji_query_gets_no_vector_score_from_the_default_model(
    tmp_path: Path, onnx_embedder: Any
) -> None:
    """The default model reads every emoji as one unknown word piece, so "🍔" found "🍕🍺"
    at 1.0 and any Chinese memory at 0.5; emoji are now matched by the lexical index."""
    with _store(tmp_path, onnx_embedder) as store:
        store.add_many("mem", [TextItem(USER, "🍕🍺"), TextItem(USER, "🐶")])
        assert not store.search("mem", USER.tenant_pattern(), "🍔", min_similarity=0.1)
        hits = store.search("mem", USER.tenant_pattern(), "🍕", min_similarity=0.1)
        assert [h.memory.text for h in hits] == ["🍕🍺"]


def test_digits_of_another_script_are_words_of_that_script() -> None:
    assert words_by_script("２０２３年") == {"FULLWIDTH": 1, "CJK": 1}
    assert words_by_script("٢٠٢٣") == {"ARABIC-INDIC": 1}
    assert covered_share(frozenset({Script.LATIN}), "２０２３") == 0.0
    assert covered_share(frozenset({Script.LATIN}), "2023") == 1.0


def test_a_fullwidth_number_gets_no_vector_score_from_the_default_model(
    tmp_path: Path, onnx_embedder: Any
) -> None:
    """The default model reads "２０２３" as one unknown word piece, as it reads an emoji:
    the number found "🍕🍺" at 1.0. It is now matched by the lexical index, as "2023"."""
    with _store(tmp_path, onnx_embedder) as store:
        store.add_many("mem", [TextItem(USER, "🍕🍺"), TextItem(USER, "我在2023年去了上海")])
        hits = store.search("mem", USER.tenant_pattern(), "２０２３", min_similarity=0.1)
        assert [h.memory.text for h in hits] == ["我在2023年去了上海"]
