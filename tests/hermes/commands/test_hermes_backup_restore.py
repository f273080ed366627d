"""``hermes tablestore-mem export``, a fresh Hermes home, ``import``: the recall before a turn
is the one the old home gave, the turns ``recall_neighbours`` shows around each memory
included. Driven by Hermes' real ``MemoryManager`` over the embedded store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider

TURNS = [
    ("Which trail should we take on Saturday?", "Take the ridge trail above Lake Bled."),
    ("I booked the mountain hut near Triglav for the night", "The hut serves dinner until eight."),
    ("Remind me to pack the blue rain jacket", "Noted: the blue rain jacket."),
]
QUESTIONS = ["Where is the mountain hut I booked?", "What should I pack?", "Which trail?"]


@pytest.fixture
def open_manager(kit: Any) -> Iterator[Any]:
    """Hermes' MemoryManager with the plugin over the Hermes home ``HERMES_HOME`` names."""
    from agent.memory_manager import MemoryManager

    made: list[Any] = []

    def make() -> Any:
        mm = MemoryManager()
        mm.add_provider(MemcoreMemoryProvider(retry=kit.FAST_RETRY))
        mm.initialize_all(
            session_id="s1", platform="telegram", agent_context="primary", user_id="dana"
        )
        made.append(mm)
        return mm

    yield make
    for mm in made:
        mm.shutdown_all()


def _recalls(mm: Any) -> list[str]:
    return [mm.prefetch_all(question, session_id="s1") for question in QUESTIONS]


def test_a_restored_home_recalls_the_same_turns_around_each_memory(
    hermes_home: Path,
    kit: Any,
    open_manager: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none", recall_neighbours=2)
    mm = open_manager()
    for user, assistant in TURNS:
        mm.sync_all(user, assistant, session_id="s1")
    assert mm.flush_pending(30)  # Hermes' worker has handed every turn to the provider
    provider = mm.get_provider("tablestore-mem")
    assert provider.runtime.flush(30) and provider.runtime.wait_idle(30)
    before = _recalls(mm)
    assert "before, assistant: Take the ridge trail above Lake Bled." in before[0]
    mm.shutdown_all()

    out = tmp_path / "backup.jsonl"
    args = ("--user-id", "dana", "--platform", "telegram")
    code, exported = kit.run_cli(capsys, "export", "--out", str(out), *args)
    assert code == 0 and exported["messages"] == 2 * len(TURNS)

    fresh = tmp_path / "fresh-hermes-home"
    fresh.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(fresh))
    kit.write_config(fresh, backend="local", embedder="none", recall_neighbours=2)
    code, imported = kit.run_cli(capsys, "import", str(out), *args)
    assert code == 0, imported
    assert (imported["messages_added"], imported["messages_present"]) == (2 * len(TURNS), 0)
    assert _recalls(open_manager()) == before

    code, again = kit.run_cli(capsys, "import", str(out), *args)
    assert code == 0 and (again["added"], again["messages_added"]) == (0, 0)
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert {line.get("kind", "memory") for line in lines} == {"memory", "message"}
