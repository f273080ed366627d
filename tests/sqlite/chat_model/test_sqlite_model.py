"""The user's own model (a fake chat-completions server on loopback): facts and plan review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memcore.config import MemcoreConfig
from memcore.errors import ConfigError
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.backend import open_backend
from memcore_sqlite.chat_model.client import ModelSettings, model_strategies

from ..fake_chat import FakeChat

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")


@pytest.fixture
def chat() -> Iterator[FakeChat]:
    fake = FakeChat()
    yield fake
    fake.close()


@pytest.fixture
def store(tmp_path: Path, chat: FakeChat) -> Iterator[SqliteMemoryStore]:
    extractor, reviewer = model_strategies(
        ModelSettings(chat.base_url, "tiny-model", "sk-secret-123")
    )
    s = SqliteMemoryStore(tmp_path / "m.db", extractor=extractor, dream_reviewer=reviewer)
    s.ensure_store(STORE)
    yield s
    s.close()


def test_a_chat_turn_becomes_concise_facts(store: SqliteMemoryStore, chat: FakeChat) -> None:
    turn = [
        Message("user", "Can you help me? My cat is called Miso. I live in Porto."),
        Message("assistant", "Of course. Miso is a lovely name."),
    ]
    receipt = store.add_messages(STORE, ALICE, turn)
    texts = [m.text for m in store.list_memories(STORE, ALICE.pattern()).items]
    assert texts == ["My cat is called Miso.", "I live in Porto."]
    assert len(receipt.memory_ids) == 2
    assert [m.content for m in store.list_messages(STORE, ALICE).items] == [m.content for m in turn]
    [request] = chat.requests
    assert request["model"] == "tiny-model"
    assert chat.headers[0]["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in repr(
        model_strategies(ModelSettings(chat.base_url, "m", "sk-secret-123"))
    ) + repr(ModelSettings("http://x", "m", "sk-secret-123"))


@pytest.mark.parametrize("mode", ["garbage", "error"])
def test_a_failing_model_never_loses_the_turn(
    store: SqliteMemoryStore, chat: FakeChat, mode: str
) -> None:
    chat.mode = mode
    store.add_messages(STORE, ALICE, [Message("user", "My cat is called Miso. I live in Porto.")])
    texts = [m.text for m in store.list_memories(STORE, ALICE.pattern()).items]
    assert texts == ["My cat is called Miso. I live in Porto."]


def test_the_model_checks_the_dream_plan(store: SqliteMemoryStore, chat: FakeChat) -> None:
    store.add_text(STORE, ALICE, "The user likes green tea")
    store.add_text(STORE, ALICE, "the user likes green TEA!")
    task = store.create_dream_task(STORE, ALICE.pattern())
    [merge] = store.list_dream_actions(STORE, task.id).items
    assert (merge.action, merge.confidence, merge.text) == (
        "MERGE",
        0.95,
        "The user likes green tea (checked)",
    )
    assert "checked by the model" in (merge.reason or "")
    chat.drop_all = True
    dropped = store.create_dream_task(STORE, ALICE.pattern())
    assert store.list_dream_actions(STORE, dropped.id).items == ()


def test_backend_reads_the_model_from_the_environment(
    tmp_path: Path, chat: FakeChat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCORE_MODEL_BASE_URL", chat.base_url)
    monkeypatch.setenv("MEMCORE_MODEL", "tiny-model")
    with open_backend(MemcoreConfig(local_path=str(tmp_path / "b.db"), embedder="none")) as s:
        s.ensure_store(STORE)
        s.add_messages(STORE, ALICE, [Message("user", "I play the cello.")])
        assert [m.text for m in s.list_memories(STORE, ALICE.pattern()).items] == [
            "I play the cello."
        ]
    monkeypatch.delenv("MEMCORE_MODEL")
    with pytest.raises(ConfigError):
        open_backend(MemcoreConfig(local_path=str(tmp_path / "c.db"), embedder="none"))


def test_a_password_in_the_model_url_is_sent_but_never_logged_or_shown(
    tmp_path: Path,
    chat: FakeChat,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``MEMCORE_MODEL_BASE_URL=http://user:password@host/v1`` (a proxy with basic auth): the
    credentials go in the ``Authorization`` header, as before, but httpx logged every request
    with its URL, password included, and the reprs showed it."""
    import base64
    import logging

    caplog.set_level(logging.DEBUG)
    # Whatever an earlier test (or a host's logging setup) did to httpx's own logger.
    caplog.set_level(logging.DEBUG, logger="httpx")
    monkeypatch.setattr(logging.getLogger("httpx"), "disabled", False)
    base = chat.base_url.replace("http://", "http://proxyUser:ModelUrlPassword77@")
    settings = ModelSettings.from_env(
        {"MEMCORE_MODEL_BASE_URL": base, "MEMCORE_MODEL": "tiny-model"}
    )
    assert settings is not None
    extractor, reviewer = model_strategies(settings)
    s = SqliteMemoryStore(tmp_path / "m.db", extractor=extractor, dream_reviewer=reviewer)
    try:
        s.ensure_store(STORE)
        s.add_messages(STORE, ALICE, [Message("user", "My cat is called Miso.")])
    finally:
        s.close()
    assert len(chat.requests) == 1
    sent = base64.b64encode(b"proxyUser:ModelUrlPassword77").decode()
    assert chat.headers[0]["Authorization"] == f"Basic {sent}"
    shown = "\n".join(
        [caplog.text, repr(settings), repr(extractor), repr(reviewer), repr(extractor.model)]
    )
    assert "HTTP Request" in caplog.text  # httpx did log the request
    assert "ModelUrlPassword77" not in shown and sent not in shown, shown
    assert "proxyUser" not in shown, shown
