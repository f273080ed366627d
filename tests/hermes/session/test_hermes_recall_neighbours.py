"""``recall_neighbours`` in the plugin's config: the recall before a turn shows each memory's
turns of its own conversation under it (the embedded store); off by default; on a store that
keeps no order of turns it is left out rather than failing every recall. Driven by Hermes'
real ``MemoryManager``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore import limits
from memcore.config import MemcoreConfig, config_from_mapping
from memcore.errors import ConfigError
from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite import SqliteMemoryStore

QUESTION = "Where is the mountain hut I booked?"
TURNS = [
    ("Which trail should we take on Saturday?", "Take the ridge trail above Lake Bled."),
    ("I booked the mountain hut near Triglav for the night", "The hut serves dinner until eight."),
]


@pytest.fixture
def manager(hermes_home: Path, kit: Any, tmp_path: Path, emulator: Any) -> Iterator[Any]:
    """Hermes' ``MemoryManager`` over the embedded store, or TableStore through the loopback
    emulator, the plugin configured with ``config`` keys; the turns above synced, delivered."""
    from agent.memory_manager import MemoryManager

    made: list[Any] = []

    def make(backend: str = "local", **config: Any) -> Any:
        if backend == "local":
            kit.write_config(hermes_home, backend="local", embedder="none", **config)
            store = SqliteMemoryStore(tmp_path / "n.sqlite3")
            provider = MemcoreMemoryProvider(
                store_factory=lambda _config: store, retry=kit.FAST_RETRY
            )
        else:
            kit.emulator_home(hermes_home, emulator, **config)
            provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
        mm = MemoryManager()
        mm.add_provider(provider)
        mm.initialize_all(
            session_id="s1", platform="telegram", agent_context="primary", user_id="dana"
        )
        made.append(mm)
        for user, assistant in TURNS:
            mm.sync_all(user, assistant, session_id="s1")
        assert mm.flush_pending(30)  # Hermes' worker has handed every turn to the provider
        provider.runtime.flush(30)
        provider.runtime.wait_idle(30)
        return mm

    yield make
    for mm in made:
        mm.shutdown_all()


def test_the_recall_shows_the_turns_around_each_memory(manager: Any) -> None:
    block = manager(recall_neighbours=1).prefetch_all(QUESTION, session_id="s1")
    hut = block.index("- ") + block[block.index("- ") :].index("mountain hut near Triglav")
    assert "before, assistant: Take the ridge trail above Lake Bled." in block
    # The turn after it is a recalled memory of its own: shown once, as that memory.
    assert block.count("The hut serves dinner until eight.") == 1
    assert "] The hut serves dinner until eight." in block[hut:]


def test_a_turn_is_shown_once_however_many_memories_it_neighbours(manager: Any) -> None:
    """Adjacent memories share their turns: each text once in the block, and no turn shown
    as adjacent to a memory when a turn between them was left out."""
    mm = manager(recall_neighbours=3, top_k=10)
    for i in range(6):
        mm.sync_all(f"hut story {i} in the mountains", f"hut reply {i}: go on", session_id="s1")
    assert mm.flush_pending(30)
    provider = mm.get_provider("tablestore-mem")
    assert provider.runtime.flush(30)
    block = mm.prefetch_all("hut story", session_id="s1")
    for i in range(6):
        assert block.count(f"hut story {i} in") == 1, block
    turns = [t for u, a in TURNS for t in (u, a)]
    turns += [
        t for i in range(6) for t in (f"hut story {i} in the mountains", f"hut reply {i}: go on")
    ]
    for memory in block.split("\n- ")[1:]:
        told, *around = memory.removesuffix("\n</recalled-memory>").split("\n")
        before = [t.split(": ", 1)[1] for t in around if t.startswith("  before, ")]
        after = [t.split(": ", 1)[1] for t in around if t.startswith("  after, ")]
        said = [turns.index(t) for t in (*before, told.split("] ", 1)[1], *after)]
        assert said == list(range(said[0], said[0] + len(said))), block


def test_off_by_default(manager: Any) -> None:
    assert MemcoreConfig().recall_neighbours == 0
    block = manager().prefetch_all(QUESTION, session_id="s1")
    assert "mountain hut near Triglav" in block and "before," not in block


def test_a_store_without_turn_order_recalls_without_them(manager: Any) -> None:
    block = manager("tablestore", recall_neighbours=1).prefetch_all(QUESTION, session_id="s1")
    assert "mountain hut near Triglav" in block and "before," not in block


def test_out_of_range_is_a_config_error() -> None:
    assert config_from_mapping({"recall_neighbours": 2}).recall_neighbours == 2
    for bad in (6, -1, "one", True):
        with pytest.raises(ConfigError, match="recall_neighbours"):
            config_from_mapping({"recall_neighbours": bad})


def _search(mm: Any, **args: Any) -> dict[str, Any]:
    return dict(json.loads(mm.handle_tool_call("tablestore_search", {"query": QUESTION, **args})))


def test_the_search_tool_returns_each_hits_turns_around_it(manager: Any) -> None:
    """``tablestore_search`` takes ``neighbours`` as MCP ``recall`` does: the turns of the
    hit's own conversation said before and after it come back in its JSON."""
    mm = manager()
    schema = next(s for s in mm.get_all_tool_schemas() if s["name"] == "tablestore_search")
    declared = schema["parameters"]["properties"]["neighbours"]
    assert (declared["type"], declared["minimum"], declared["maximum"]) == (
        "integer",
        0,
        limits.MAX_NEIGHBOURS,
    )
    assert str(limits.DEFAULT_NEIGHBOUR_CHARS) in declared["description"]
    plain = _search(mm, top_k=1)["results"][0]
    assert "mountain hut near Triglav" in plain["text"] and "neighbours" not in plain
    [hit] = _search(mm, top_k=1, neighbours=1)["results"]
    assert hit["text"] == TURNS[1][0]
    before, after = hit["neighbours"]["before"], hit["neighbours"]["after"]
    assert [(t["role"], t["content"]) for t in before] == [("assistant", TURNS[0][1])]
    assert [(t["role"], t["content"]) for t in after] == [("assistant", TURNS[1][1])]
    assert all(isinstance(t["timestamp"], float) for t in (*before, *after))
    [wider] = _search(mm, top_k=1, neighbours=3)["results"]
    assert [t["content"] for t in wider["neighbours"]["before"]] == [TURNS[0][0], TURNS[0][1]]
    for bad in (6, -1, "one", True, 1.5):
        error = _search(mm, neighbours=bad)["error"]
        assert (error["code"], error["field"]) == ("invalid_input", "neighbours"), bad


def test_the_search_tool_on_a_store_without_turn_order_is_a_typed_error(manager: Any) -> None:
    mm = manager("tablestore")
    error = _search(mm, neighbours=1)["error"]
    assert (error["code"], error["field"]) == ("unsupported", "neighbours")
    assert "Traceback" not in error["message"]
    assert "error" not in _search(mm, neighbours=0)


def test_whole_numbers_written_as_floats_are_taken_as_integers(manager: Any) -> None:
    """JSON Schema's ``integer`` holds 1.0, and MCP's ``recall`` takes it; ``tablestore_search``
    refused ``top_k: 1.0`` as "must be a whole number". 1.5 is still refused."""
    mm = manager()
    [hit] = _search(mm, top_k=1.0, neighbours=1.0)["results"]
    assert hit["text"] == TURNS[1][0] and len(hit["neighbours"]["before"]) == 1
    for name in ("top_k", "neighbours"):
        error = _search(mm, **{name: 1.5})["error"]
        assert (error["code"], error["field"]) == ("invalid_input", name)


def test_numbers_and_flags_written_as_strings_and_nulls_are_taken_as_meant(
    manager: Any,
) -> None:
    """Hermes coerces "3" and "true" for its own tools only and hands a provider's arguments
    on as the model wrote them (the bundled providers read ``int(args.get(...))``): "1" was
    refused as "must be a whole number", and ``neighbours: null`` too, while a ``null`` of
    the other arguments meant the default. Text that is no number is still refused."""
    mm = manager()
    [hit] = _search(mm, top_k="1", neighbours=" 1 ", min_similarity="0.0")["results"]
    assert hit["text"] == TURNS[1][0] and len(hit["neighbours"]["before"]) == 1
    [hit] = _search(mm, top_k=1, neighbours=None, enable_rerank="false")["results"]
    assert "neighbours" not in hit or hit["neighbours"] == {"before": [], "after": []}
    assert _search(mm, top_k=1, include_evidence="true")["results"]
    profile = json.loads(mm.handle_tool_call("tablestore_profile", {"limit": "2"}))
    assert profile["count"] == 2
    assert "error" not in json.loads(mm.handle_tool_call("tablestore_profile", {"limit": None}))
    for name, value in (("top_k", "three"), ("top_k", "1.5"), ("enable_rerank", "yes")):
        error = _search(mm, **{name: value})["error"]
        assert (error["code"], error["field"]) == ("invalid_input", name)
