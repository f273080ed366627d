"""A remember or a mirrored write whose answer was lost is looked for before it is sent again:
by the write marker it carries, or by its exact text when the metadata limit left no room."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.outbox.delivery import WRITE_MARKER


class Applied(InMemoryMemoryStore):
    """The fake, counting every text it applies (before its own deduplication)."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: Counter[str] = Counter()

    def add_text(self, store: str, scope: Any, text: str, **kwargs: Any) -> Any:
        receipt = super().add_text(store, scope, text, **kwargs)
        self.applied[text] += 1
        return receipt


def _provider(home: Path, kit: Any) -> MemcoreMemoryProvider:
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=0.5)
    provider.initialize("replay", hermes_home=str(home), agent_context="primary", user_id="fay")
    return provider


@pytest.mark.parametrize(
    ("write", "keys"),
    [("remember", 0), ("remember", 16), ("mirror", 0)],
)
def test_a_text_write_applied_but_unanswered_is_sent_once(
    hermes_home: Path, kit: Any, write: str, keys: int
) -> None:
    from memcore_tablestore.emulator import Faults
    from memcore_tablestore.testing import running_emulator

    backing = Applied()
    lost_answer = Faults(drop_burst=1, drop_after_apply=True, apis=("AddMemories",))
    meta = {f"k{i}": "v" for i in range(keys)}
    text = f"a {write} whose answer was lost"
    with running_emulator(backing) as server:
        kit.emulator_home(hermes_home, server, timeout=0.5)
        provider = _provider(hermes_home, kit)
        try:
            assert kit.settle(provider, 10.0)
            server.set_faults(lost_answer)
            if write == "remember":
                args = {"content": text, "metadata": meta}
                assert '"queued"' in provider.handle_tool_call("tablestore_remember", args)
            else:
                provider.on_memory_write("add", "memory", text, meta)
            assert kit.settle(provider, 15.0)
            assert backing.applied[text] == 1
            (memory,) = [m for m in backing.all_memories("hermes_mem") if m.text == text]
            # The marker goes along while the limit leaves room for it (16 keys in all).
            assert (WRITE_MARKER in memory.metadata) == (keys == 0)
        finally:
            provider.shutdown()


def test_a_held_entry_is_not_taken_even_by_a_forced_flush(tmp_path: Path) -> None:
    """After an answer that never came, the entry waits until its request can no longer be
    landing; a forced pass does not override that."""
    from memcore.outbox import OutboxEntry
    from memcore_hermes.outbox.spool import SqliteOutbox

    spool = SqliteOutbox(tmp_path / "spool.sqlite3")
    now = time.time()
    spool.put(OutboxEntry(key="k1", kind="text", payload="{}", created_at=now, next_attempt_at=now))
    claim = spool.claim("k1", now=now, lease_s=10, owner="1:a")
    assert claim.entry is not None
    spool.retry_later("k1", next_attempt_at=now, error="outcome_unknown", hold_until=now + 5)
    held = spool.claim("k1", now=now + 1, lease_s=10, owner="1:a", force=True)
    assert held.entry is None and held.busy_for_s == pytest.approx(4.0)
    later = spool.claim("k1", now=now + 5.1, lease_s=10, owner="1:a", force=True)
    assert later.entry is not None
    spool.close()


def test_the_write_marker_is_not_a_key_a_caller_may_set(hermes_home: Path, kit: Any) -> None:
    """A caller's own ``memcore_write`` would make the replay look for the wrong value."""
    from memcore_tablestore.testing import running_emulator

    with running_emulator(Applied()) as server:
        kit.emulator_home(hermes_home, server)
        provider = _provider(hermes_home, kit)
        try:
            answer = json.loads(
                provider.handle_tool_call(
                    "tablestore_remember", {"content": "x", "metadata": {WRITE_MARKER: "k"}}
                )
            )
            assert answer["error"]["field"] == f"metadata.{WRITE_MARKER}"
        finally:
            provider.shutdown()


def test_the_model_never_sees_the_write_marker(make_provider: Any, kit: Any) -> None:
    """Search and profile answers showed the spool's key as a metadata pair: noise to the
    model, and a write of it back is refused as reserved."""
    store = InMemoryMemoryStore()
    provider = make_provider(store)
    args = {"content": "Nell keeps bees on the roof", "metadata": {"topic": "hobby"}}
    assert '"queued"' in provider.handle_tool_call("tablestore_remember", args)
    assert kit.settle(provider, 10.0)
    (memory,) = store.all_memories("hermes_mem")
    assert WRITE_MARKER in memory.metadata  # kept in the store for a replay to look for
    answers = [
        json.loads(provider.handle_tool_call("tablestore_search", {"query": "bees roof"})),
        json.loads(provider.handle_tool_call("tablestore_profile", {})),
    ]
    for answer in answers:
        assert WRITE_MARKER not in json.dumps(answer), answer
    assert answers[1]["memories"][0]["metadata"] == {"topic": "hobby"}


def test_metadata_the_marker_would_take_past_the_byte_limit_is_sent_without_it(
    make_provider: Any, kit: Any
) -> None:
    """Metadata within the service's 65,536 bytes as JSON was queued, and the marker the spool
    added took it past them: the service refused the write and it was dead-lettered. The
    marker goes along only where it fits (a replay then looks the write up by its text)."""
    from memcore import limits

    store = InMemoryMemoryStore()
    provider = make_provider(store)
    # A control character is six bytes as JSON ("\u0001"): ten full values and a shorter one.
    meta = {f"k{i:02d}": "\x01" * limits.MAX_METADATA_VALUE_CHARS for i in range(10)}
    meta["k10"] = "\x01" * 660
    size = limits.metadata_bytes(meta)
    assert limits.MAX_METADATA_JSON_BYTES - 40 < size <= limits.MAX_METADATA_JSON_BYTES
    args = {"content": "Otto keeps the spare key under the mat", "metadata": meta}
    assert '"queued"' in provider.handle_tool_call("tablestore_remember", args)
    assert kit.settle(provider, 10.0)
    (memory,) = store.all_memories("hermes_mem")
    assert dict(memory.metadata) == meta
