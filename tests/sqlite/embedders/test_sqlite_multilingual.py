"""The Universal Sentence Encoder embedder (the ``multilingual-use`` extra): Chinese by meaning.

On the English default, ``宠物``, ``饮料``, ``职业`` and ``运动习惯`` all found
``用户喜欢喝绿茶`` first; this model finds the fact each one asks about, also across
languages. It is chosen with ``embedder: multilingual-use``; ``embedder: multilingual``
chooses e5 (test_sqlite_e5).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.config import MemcoreConfig
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem, choose_embedder, open_backend
from memcore_sqlite.embedders import missing_use_requirements
from memcore_sqlite.vector.coverage import coverage

pytestmark = pytest.mark.skipif(
    bool(missing_use_requirements()), reason="the multilingual-use extra is not installed"
)
USER = Scope("app", "user1", "agent", "run")
FACTS = {
    "tea": "用户喜欢喝绿茶",
    "dog": "用户养了一只叫豆豆的柯基犬",
    "job": "用户是一名软件工程师",
    "run": "用户每周跑步三次",
    "coffee": "The user drinks black coffee every morning",
}


@pytest.fixture(scope="module")
def embedder() -> Any:
    from memcore_sqlite.embedders.multilingual import MultilingualEmbedder

    model = MultilingualEmbedder()
    model.warm_up()
    return model


@pytest.fixture
def store(tmp_path: Path, embedder: Any) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "s.db", embedder=embedder) as opened:
        opened.ensure_store("mem")
        opened.add_many("mem", [TextItem(USER, text) for text in FACTS.values()])
        yield opened


def test_unit_vectors_of_512_dimensions(embedder: Any) -> None:
    import numpy as np

    vectors = np.asarray(embedder.embed(["宠物", "a longer English sentence " * 30]))
    assert vectors.shape == (2, 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.embed([]) == []


def test_it_covers_chinese_and_english(embedder: Any) -> None:
    assert coverage(embedder, "宠物") == 1.0
    assert coverage(embedder, "我喜欢 green tea") == 1.0


@pytest.mark.parametrize(
    ("query", "fact"),
    [("宠物", "dog"), ("饮料", "tea"), ("职业", "job"), ("运动习惯", "run"), ("green tea", "tea")],
)
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_chinese_is_recalled_by_meaning(
    store: SqliteMemoryStore, query: str, fact: str, mode: str
) -> None:
    hits = store.search("mem", USER.tenant_pattern(), query, mode=mode)
    assert hits[0].memory.text == FACTS[fact]


def test_unrelated_memories_score_low_enough_to_filter(store: SqliteMemoryStore) -> None:
    hits = store.search("mem", USER.tenant_pattern(), "宠物", mode="vector", min_similarity=0.2)
    assert [h.memory.text for h in hits] == [FACTS["dog"]]


def test_chosen_by_the_embedder_setting(tmp_path: Path) -> None:
    embedder = choose_embedder("multilingual-use")
    assert embedder is not None and embedder.name == "use-multilingual-v3"
    config = MemcoreConfig(embedder="multilingual-use", local_path=str(tmp_path / "m.db"))
    store = open_backend(config)
    try:
        assert store.embedder is not None and store.embedder.name == "use-multilingual-v3"
    finally:
        store.close()


ROOT = Path(__file__).resolve().parents[3]


def _recall_at_5(store: SqliteMemoryStore, pairs: list[tuple[str, set[str]]], mode: str) -> float:
    found = 0.0
    for query, relevant in pairs:
        hits = store.search("mem", USER.tenant_pattern(), query, top_k=5, mode=mode)
        found += len({h.memory.id for h in hits} & relevant) / len(relevant)
    return found / len(pairs)


def test_recall_on_the_chinese_paraphrases_and_the_english_retrieval_set(
    tmp_path: Path, embedder: Any
) -> None:
    import json

    zh = json.loads((ROOT / "benchmarks/data/zh_paraphrases.json").read_text("utf-8"))["pairs"]
    en = json.loads((ROOT / "tests/data/sqlite_retrieval_set.json").read_text("utf-8"))
    with SqliteMemoryStore(tmp_path / "r.db", embedder=embedder) as store:
        store.ensure_store("mem")
        zh_ids = store.add_many("mem", [TextItem(USER, p["fact"]) for p in zh])
        zh_pairs = [(p["question"], {mid}) for p, mid in zip(zh, zh_ids)]
        zh_recall = _recall_at_5(store, zh_pairs, "hybrid")
    with SqliteMemoryStore(tmp_path / "e.db", embedder=embedder) as store:
        store.ensure_store("mem")
        new = store.add_many("mem", [TextItem(USER, f["text"]) for f in en["facts"]])
        ids = {f["id"]: mid for f, mid in zip(en["facts"], new)}
        en_pairs = [(q["query"], {ids[r] for r in q["relevant"]}) for q in en["queries"]]
        en_recall = _recall_at_5(store, en_pairs, "hybrid")
    print("hybrid recall@5", {"zh": zh_recall, "en": en_recall})
    # Measured: zh 0.875 (the English default: 0.14), en 0.91 (the default: 0.96).
    assert zh_recall >= 0.8
    assert en_recall >= 0.85
