"""A speaker's label is not embedded: in short "Name: text" turns the name was most of the
vector, and name-only filler outranked the turn that answers a question naming the speaker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore, TextItem

CHAT = Scope("dlg", "c1", "agent", "run")
#: The short turns of the dialog development set (benchmarks/data/dialogs_dev.json).
FILLER = [
    "Always.",
    "Any plans for the weekend?",
    "Can't today, maybe Thursday.",
    "Classic you, honestly.",
    "Classic.",
    "Coffee later?",
    "Congrats!!",
    "Declare email bankruptcy, start over.",
    "Did you catch the game?",
    "Did you watch the finale?",
    "Earplugs, my friend.",
    "Finally.",
    "Good for you!",
    "Ha, I can picture it.",
    "Happy Friday!",
    "How did that go?",
    "How was your week?",
    "Huh, I never knew that.",
    "I finally finished that puzzle.",
    "I love that for you.",
    "I tried meditating this morning.",
    "I'm thinking of getting bangs.",
    "It's so humid today.",
    "Lasted about three minutes.",
    "Leftovers, as usual.",
    "Long day?",
    "Look at you, green thumb!",
    "Makes sense.",
    "My phone screen cracked again.",
    "No way, that's amazing!",
    "Oh I'm so sorry.",
    "Oof.",
    "Seriously? Tell me more.",
    "Tell her hi back!",
    "That sounds like a lot.",
    "That's a start!",
    "That's so you.",
    "That's wonderful news.",
    "The thousand-piece one? Respect.",
    "Ugh, Mondays.",
    "Wait, really?",
    "Want to split a pizza?",
    "Weather's been wild lately.",
    "What are you cooking tonight?",
    "Winter is coming, literally.",
    "Work gave us Friday off!",
    "Yes! I'll bring snacks.",
]
ANSWER = "Nobody beats Khruangbin live, I'd fly anywhere to see them"


#: "Name: text", and "[Name] text" as Hermes gives a session several people share.
FORMS = ("{name}: {text}", "[{name}] {text}")


def _chat(store: SqliteMemoryStore, form: str) -> None:
    store.ensure_store("mem")
    turns = [form.format(name="Yuki", text=t) for t in FILLER]
    turns += [form.format(name="Sam", text=t) for t in FILLER]
    turns.insert(5, form.format(name="Yuki", text=ANSWER))
    messages = [Message("user", t, metadata={"turn": str(i)}) for i, t in enumerate(turns)]
    for start in range(0, len(messages), 20):  # sessions of 20 turns
        store.add_messages("mem", CHAT, messages[start : start + 20])


#: Who asks: nobody named, or, in a shared session, another member ("[Sam] ..."), whose name
#: is not a term of the question, or every one of Sam's turns would match it.
ASKERS = ("", "[Sam] ")


@pytest.mark.parametrize("asker", ASKERS)
@pytest.mark.parametrize("form", FORMS)
def test_a_question_naming_the_speaker_finds_what_they_said(
    tmp_path: Path, onnx_embedder: Any, form: str, asker: str
) -> None:
    with SqliteMemoryStore(tmp_path / "s.db", embedder=onnx_embedder) as store:
        _chat(store, form)
        asked = f"{asker}Which group is Yuki a big fan of?"
        for mode in ("vector", "hybrid"):
            hits = store.search("mem", CHAT.pattern(), asked, mode=mode)
            assert hits[0].memory.text == form.format(name="Yuki", text=ANSWER), mode


@pytest.mark.parametrize("asker", ASKERS)
@pytest.mark.parametrize("form", FORMS)
def test_the_label_stays_in_the_text_and_the_lexical_index(
    tmp_path: Path, onnx_embedder: Any, form: str, asker: str
) -> None:
    with SqliteMemoryStore(tmp_path / "s.db", embedder=onnx_embedder) as store:
        _chat(store, form)
        hits = store.search("mem", CHAT.pattern(), f"{asker}Yuki", top_k=50, mode="lexical")
        said = [*FILLER, ANSWER]
        assert {h.memory.text for h in hits} == {form.format(name="Yuki", text=t) for t in said}


def test_the_vector_reads_what_was_said(tmp_path: Path, onnx_embedder: Any) -> None:
    # "Name: text", and "[Name] text" as Hermes gives a session several people share.
    texts = [f"Yuki: {ANSWER}", f"Sam: {ANSWER}", f"[Sam] {ANSWER}", f"[yuki_92] {ANSWER}"]
    with SqliteMemoryStore(tmp_path / "s.db", embedder=onnx_embedder) as store:
        store.ensure_store("mem")
        store.add_many("mem", [TextItem(CHAT, t) for t in texts])
        hits = store.search("mem", CHAT.pattern(), ANSWER, top_k=4, mode="vector")
        assert sorted(h.memory.text for h in hits) == sorted(texts)
        assert all(h.score > 0.99 for h in hits), [(h.memory.text, h.score) for h in hits]
