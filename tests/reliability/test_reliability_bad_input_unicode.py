"""Lone surrogates: JSON ``"\\ud83d"`` (half an emoji, from a message cut in two) decodes to a
Python string that cannot be encoded as UTF-8. A turn or tool call holding one must get a typed
error or be stored; it must never raise into the agent, and never cost the next write.
"""

from __future__ import annotations

import json

import pytest

HALF_EMOJI = json.loads('"cut \\ud83d here"')


def _stored_texts(provider) -> list[str]:
    runtime = provider.runtime
    assert runtime.flush(10.0)
    store = runtime.handle.ready()
    page = store.list_messages(runtime.store_name, runtime.scope, limit=100)
    return [m.content for m in page.items]


def test_reliability_unicode_half_emoji_turn_does_not_cost_the_next_turn(local_provider, scenario):
    with scenario(
        "bad input: lone surrogate in a turn", "sync_turn with half an emoji, then a normal turn"
    ) as s:
        raised = None
        try:
            local_provider.sync_turn(HALF_EMOJI, "assistant answer")
        except Exception as exc:  # the property under test: nothing raises into Hermes
            raised = exc
        local_provider.sync_turn("the next turn", "is a normal one")
        texts = _stored_texts(local_provider)
        s.counts(
            issued=1,
            acknowledged=1,
            stored=int("the next turn" in texts),
            lost=int("the next turn" not in texts),
            duplicated=0,
        )
        s.note(raised=type(raised).__name__ if raised else None)
        assert raised is None, f"sync_turn raised {type(raised).__name__}"
        assert "the next turn" in texts


def test_reliability_unicode_half_emoji_remember_is_a_typed_error(local_provider):
    out = json.loads(
        local_provider.handle_tool_call("tablestore_remember", {"content": HALF_EMOJI})
    )
    assert "error" in out, out
    assert out["error"]["type"] == "InvalidInput", out
    assert out["error"].get("field") == "content", out
    out2 = json.loads(
        local_provider.handle_tool_call("tablestore_remember", {"content": "plain fact"})
    )
    assert "error" not in out2, out2


def test_reliability_unicode_sqlite_store_maps_surrogates(tmp_path):
    from memcore.errors import MemcoreError
    from memcore.scope import Scope
    from memcore_sqlite import SqliteMemoryStore

    store = SqliteMemoryStore(tmp_path / "s.db")
    try:
        store.ensure_store("s")
        scope = Scope("a", "t", "g", "r")
        for call in (
            lambda: store.add_text("s", scope, HALF_EMOJI, sync=True),
            lambda: store.get_memory("s", scope, HALF_EMOJI),
        ):
            with pytest.raises(MemcoreError):
                call()
    finally:
        store.close()
