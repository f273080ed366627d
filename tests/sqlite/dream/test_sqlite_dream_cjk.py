"""Local dream on Chinese text with the shipped embedder, which reads English only: the
pass judges such text by its words, as search does, and never by the model's noise."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")


def _turn(store: SqliteMemoryStore, text: str, when: float) -> str:
    receipt = store.add_messages(STORE, ALICE, [Message("user", text, timestamp=when)])
    return receipt.memory_ids[0]


@pytest.fixture
def store(tmp_path: Path, onnx_embedder: object):  # type: ignore[no-untyped-def]
    s = SqliteMemoryStore(tmp_path / "m.db", embedder=onnx_embedder)  # type: ignore[arg-type]
    s.ensure_store(STORE)
    yield s
    s.close()


def test_a_chinese_fact_said_again_is_merged_by_the_session_pass(
    store: SqliteMemoryStore,
) -> None:
    old = _turn(store, "我在杭州的一家互联网公司当程序员", 1.0)
    _turn(store, "我每周去两次健身房", 2.0)
    new = _turn(store, "我在杭州一家互联网公司当程序员", 3.0)
    task = store.create_session_dream_task(STORE, ALICE.tenant_pattern())
    [action] = store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.status, set(action.memory_ids)) == (
        "MERGE",
        "applied",
        {old, new},
    )
    current = store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert sorted(m.text for m in current) == [
        "我在杭州一家互联网公司当程序员",
        "我每周去两次健身房",
    ]


#: What else one user said: with them, the words the two share weigh as they would in use.
OTHERS = ("我女儿叫小雨", "我每周跑步三次", "我的车是白色的丰田", "我喜欢吃辣", "私は28歳です")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("我姐姐住在杭州", "我姐姐住在苏州"),
        ("我买了一辆特斯拉", "我卖了一辆特斯拉"),
        ("我每天喝两杯咖啡", "我每天喝两杯茶"),
        ("弟は大学生です", "妹は大学生です"),
        ("我对花生过敏", "我对花生不过敏"),
    ],
)
def test_a_cosine_the_embedder_cannot_read_proposes_nothing(
    store: SqliteMemoryStore, old: str, new: str
) -> None:
    """all-MiniLM-L6-v2 gives each of these pairs a cosine of 0.9 to 1.0 (it reads neither
    city, nor 买 from 卖): a MERGE was proposed on it, which would have kept one fact of two."""
    _turn(store, old, 1.0)
    for i, other in enumerate(OTHERS):
        _turn(store, other, 1.1 + i / 10)
    _turn(store, new, 2.0)
    task = store.create_dream_task(STORE, ALICE.tenant_pattern())
    assert store.list_dream_actions(STORE, task.id).items == ()
