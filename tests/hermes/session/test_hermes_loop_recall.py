"""Recall in the agent's loop, driven through Hermes' own ``MemoryManager``: memories for the
message being answered from a session's first turn, what a turn stores, and the wait budget
on a slow remote store."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.paging import pages
from memcore.recall import FENCE_OPEN
from memcore.scope import Scope, ScopePattern
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.session import runtime as runtime_module
from memcore_sqlite import SqliteMemoryStore

STORE = "hermes_mem"
SISTER = "My sister Maya moved to Lisbon last spring and works there as a night nurse"
FILLER = [
    ("Can you suggest a quick pasta recipe for tonight?", "Try aglio e olio: garlic, oil, chili."),
    ("What is the capital of Australia?", "Canberra is the capital of Australia."),
    ("Remind me how to reverse a list in Python", "Use reversed(items) or items[::-1]."),
]


class Loop:
    """Hermes' MemoryManager with the provider, living sessions as the agent does."""

    def __init__(self, home: Path, provider: MemcoreMemoryProvider, user: str = "nell") -> None:
        from agent.memory_manager import MemoryManager

        self.provider = provider
        self.mm = MemoryManager()
        self.mm.add_provider(provider)
        self.session = "s1"
        self.mm.initialize_all(
            session_id="s1",
            hermes_home=str(home),
            platform="cli",
            agent_context="primary",
            user_id=user,
        )
        assert provider.runtime is not None

    def turn(self, user: str, reply: str | Any) -> str:
        """One turn: prefetch for the message, answer (``reply`` may read the context), sync,
        queue the next prefetch; returns the injected context."""
        from agent.memory_manager import build_memory_context_block

        self.mm.on_turn_start(1, user)
        context = build_memory_context_block(self.mm.prefetch_all(user, session_id=self.session))
        answer = reply(context) if callable(reply) else reply
        self.mm.sync_all(user, answer, session_id=self.session)
        self.mm.queue_prefetch_all(user, session_id=self.session)
        return context

    def new_session(self, session_id: str) -> None:
        self.mm.commit_session_boundary_async([], new_session_id=session_id)
        self.session = session_id
        assert self.mm.flush_pending(30)

    def settle(self) -> None:
        assert self.mm.flush_pending(30)
        assert self.provider.runtime.flush(30)

    def ask(self, message: str) -> str:
        from agent.memory_manager import build_memory_context_block

        return build_memory_context_block(self.mm.prefetch_all(message, session_id=self.session))

    def memories(self) -> list[str]:
        runtime = self.provider.runtime
        store = runtime.handle.ready()
        pattern = ScopePattern("hermes", runtime.scope.tenant_id)
        listing = pages(lambda token: store.list_memories(STORE, pattern, next_token=token))
        return [m.text for page in listing for m in page.items]

    def close(self) -> None:
        self.mm.shutdown_all()


@pytest.fixture
def local_loop(hermes_home: Path, kit: Any) -> Iterator[Any]:
    def make(**config: Any) -> Loop:
        kit.write_config(hermes_home, backend="local", embedder="none", **config)
        loop = Loop(hermes_home, MemcoreMemoryProvider(retry=kit.FAST_RETRY))
        made.append(loop)
        return loop

    made: list[Loop] = []
    yield make
    for loop in made:
        loop.close()


def live_first_session(loop: Loop) -> None:
    loop.turn(FILLER[0][0], FILLER[0][1])
    loop.turn(SISTER, "That sounds like a big move for her.")
    for user, reply in FILLER[1:]:
        loop.turn(user, reply)
    loop.settle()


def test_the_first_message_of_a_session_gets_memories_for_itself(local_loop: Any) -> None:
    loop = local_loop()
    live_first_session(loop)
    loop.new_session("s2")
    context = loop.ask("What did I tell you about my sister?")
    assert "Maya" in context and FENCE_OPEN in context


def test_the_second_message_gets_memories_for_itself_not_for_the_first(local_loop: Any) -> None:
    loop = local_loop()
    live_first_session(loop)
    loop.new_session("s2")
    loop.turn("What is the capital of Australia again?", "Canberra.")
    loop.settle()
    context = loop.ask("Where does my sister live these days?")
    assert "Lisbon" in context


def test_a_twenty_turn_session_stores_no_acknowledgement_and_no_echo(local_loop: Any) -> None:
    loop = local_loop()
    live_first_session(loop)
    loop.new_session("s2")
    facts = [f"My locker code at gym number {i} is {1000 + i}" for i in range(5)]
    replies: list[Any] = [
        "Noted!",
        "Got it, I'll remember that.",
        lambda ctx: f"Based on memory: {json.dumps({'results': [{'text': ctx[-200:]}]})}",
        lambda ctx: f"Here is what I have on file:\n{ctx}",
        "Gyms usually reset locker codes each season, so it is worth checking with the desk "
        "whether yours carries over after the renovation in June.",
    ]
    for i in range(20):
        user = facts[i % 5] if i < 10 else f"What is my locker code at gym number {i % 5}?"
        if i % 4 == 3:  # a user who pastes back what the agent showed them
            user = f"{user}\n{loop.ask(user)}"
        loop.turn(user, replies[i % 5])
        loop.settle()  # turns seconds apart, as a person types: each is delivered
    stored = loop.memories()
    assert not [
        t for t in stored if t.strip().rstrip("!.") in ("Noted", "Got it, I'll remember that")
    ]
    assert not [t for t in stored if "Based on memory" in t]
    assert not [t for t in stored if "<recalled-memory>" in t or "memory-context" in t]
    assert not [t for t in stored if "recalled from long-term storage" in t]
    assert not [t for t in stored if t.startswith("Here is what I have on file")]
    assert any("renovation in June" in t for t in stored)  # an informative reply is kept
    assert all(any(f in t for t in stored) for f in facts)
    # The acknowledgements are still in the session's message log.
    runtime = loop.provider.runtime
    log = runtime.handle.ready().list_messages(STORE, runtime.scope, limit=100).items
    assert any(m.content == "Noted!" for m in log)


def test_the_same_sentence_from_two_sessions_is_recalled_once(local_loop: Any) -> None:
    loop = local_loop()
    loop.turn("I am allergic to peanuts and shellfish", "I will keep that in mind.")
    loop.new_session("s2")
    loop.turn("I am allergic to peanuts and shellfish!", "Understood.")
    loop.settle()
    loop.new_session("s3")
    context = loop.ask("what am I allergic to?")
    assert context.lower().count("allergic to peanuts and shellfish") == 1


@pytest.mark.parametrize(
    ("mode", "kept"),
    [
        (
            "auto",
            {
                "I moved to Porto",
                "Porto's Ribeira district floods most winters, so pick a flat uphill.",
            },
        ),
        ("never", {"I moved to Porto"}),
        (
            "always",
            {
                "I moved to Porto",
                "Noted!",
                "Porto's Ribeira district floods most winters, so pick a flat uphill.",
            },
        ),
    ],
)
def test_store_assistant_decides_which_replies_become_memories(
    local_loop: Any, mode: str, kept: set[str]
) -> None:
    loop = local_loop(store_assistant=mode)
    loop.turn("I moved to Porto", "Noted!")
    loop.turn(
        "I moved to Porto", "Porto's Ribeira district floods most winters, so pick a flat uphill."
    )
    loop.settle()
    assert set(loop.memories()) == kept
    runtime = loop.provider.runtime
    log = runtime.handle.ready().list_messages(STORE, runtime.scope, limit=100).items
    assert {"I moved to Porto", "Noted!"} <= {m.content for m in log}


def test_a_bad_store_assistant_setting_is_refused(hermes_home: Path, kit: Any) -> None:
    from memcore.errors import ConfigError

    kit.write_config(hermes_home, backend="local", embedder="none", store_assistant="sometimes")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    with pytest.raises(ConfigError) as err:
        provider.initialize("s1", hermes_home=str(hermes_home), user_id="nell")
    assert err.value.field == "store_assistant"


def test_a_recall_block_written_back_is_not_stored(local_loop: Any) -> None:
    loop = local_loop()
    live_first_session(loop)
    block = loop.ask("my sister")
    assert "Maya" in block
    out = json.loads(
        loop.mm.handle_tool_call(
            "tablestore_remember", {"content": f"Nell likes kites\n{block}", "sync": True}
        )
    )
    assert out["status"] == "completed"
    loop.mm.on_memory_write("add", "user", f"Nell's cat is Pip {block}")
    loop.settle()
    stored = loop.memories()
    assert "Nell likes kites" in stored and "Nell's cat is Pip" in stored
    assert sum(SISTER in t for t in stored) == 1


def test_prefetch_waits_at_most_its_budget_on_a_slow_remote_store(
    hermes_home: Path, emulator: Any, kit: Any
) -> None:
    from memcore_tablestore.emulator.faults import Faults

    kit.emulator_home(hermes_home, emulator, recall_wait_ms=150)
    loop = Loop(hermes_home, MemcoreMemoryProvider(retry=kit.FAST_RETRY))
    try:
        live_first_session(loop)
        # Fast enough: the answer is for the message itself, from the first turn.
        loop.new_session("s2")
        assert "Maya" in loop.ask("What did I tell you about my sister?")
        # Slow: the prefetch returns at its budget with what this session already had.
        emulator.set_faults(Faults(latency_ms=1500, apis=("SearchMemories",)))
        started = time.monotonic()
        late = loop.ask("And where does she work, my sister Maya?")
        assert time.monotonic() - started < 1.0
        assert "Maya" in late  # the earlier recall of this session stands in
        # A new session never gets the previous session's recall.
        loop.new_session("s3")
        started = time.monotonic()
        assert loop.ask("my sister Maya") == ""
        assert time.monotonic() - started < 1.0
        # The late search finished meanwhile and serves this session's next turn.
        time.sleep(2.0)
        assert "Maya" in loop.ask("capital of Australia")
    finally:
        emulator.set_faults(Faults())
        loop.close()


def test_read_only_scope_is_not_widened_by_recall(local_loop: Any) -> None:
    """Recall reads the user's memories of every session, never another tenant's."""
    loop = local_loop()
    live_first_session(loop)
    runtime = loop.provider.runtime
    runtime.switch_scope(Scope("hermes", "someone-else", "hermes", "s9"))
    assert "Maya" not in loop.ask("What did I tell you about my sister?")


def test_initialize_starts_loading_the_model_for_the_first_turn(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded store gets the embedder loading since ``initialize``: the first prefetch
    embeds its query without loading the model itself."""
    from memcore_hermes.backend import preload

    # One load per process, for the config it was chosen for: a load an earlier test of this
    # process started for another home must not stand in for this one's.
    monkeypatch.setattr(preload, "_current", None)
    kit.write_config(hermes_home, backend="local", embedder="auto")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="nell")
    try:
        embedder = provider.runtime.handle.store.embedder
        assert repr(embedder).startswith("preloaded")
        provider.sync_turn(SISTER, "Lisbon is lovely in spring.", session_id="s1")
        assert provider.runtime.flush(60)
        assert "Maya" in provider.prefetch("Who in my family works in healthcare?")
    finally:
        provider.shutdown()


# -- the turn's recall comes first on the embedded store: the caches its first search would
# build are built in the background after ``initialize`` (which does not wait for them), and
# a delivery the lane would start during a recall waits for it to end.


def test_initialize_warms_the_search_in_the_background_and_recall_is_unchanged(
    local_loop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = local_loop()
    first.turn(SISTER, "That sounds like a big move.")
    first.settle()
    expected = first.ask("Where does my sister live?")
    assert "Lisbon" in expected

    warming, release = threading.Event(), threading.Event()
    real = getattr(SqliteMemoryStore, "warm", None)

    def slow_warm(self: SqliteMemoryStore, *args: Any) -> None:
        warming.set()
        release.wait(10)
        if real is not None:
            real(self, *args)

    monkeypatch.setattr(SqliteMemoryStore, "warm", slow_warm, raising=False)
    started = time.monotonic()
    second = local_loop()
    assert time.monotonic() - started < 5  # initialize did not wait for the warm-up
    assert warming.wait(10), "the store's search caches were not warmed after initialize"
    release.set()
    assert second.provider.runtime.wait_idle(10)
    assert second.ask("Where does my sister live?") == expected


def test_a_delivery_waits_for_the_recall_running_on_the_agents_thread(
    local_loop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = local_loop()
    agent.turn(SISTER, "That sounds like a big move.")
    agent.settle()
    monkeypatch.setattr(runtime_module, "RECALL_FIRST_S", 30.0, raising=False)
    inside, release = threading.Event(), threading.Event()
    search = runtime_module.MemoryRuntime._search_recall

    def held_search(self: Any, *args: Any) -> str:
        inside.set()
        release.wait(10)
        return search(self, *args)

    monkeypatch.setattr(runtime_module.MemoryRuntime, "_search_recall", held_search)
    answer: list[str] = []
    asking = threading.Thread(target=lambda: answer.append(agent.ask("my sister?")))
    asking.start()
    try:
        assert inside.wait(10)
        agent.mm.sync_all("I bought a red kayak last week", "Nice!", session_id="s1")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert not any("kayak" in t for t in agent.memories()), "delivered during the recall"
            time.sleep(0.05)
    finally:
        release.set()
        asking.join(10)
    assert answer and "Lisbon" in answer[0]
    agent.settle()
    assert any("kayak" in t for t in agent.memories())  # delivered once the recall ended


# -- a session several people share: Hermes gives each message as "[Name] text".

GROUP_FILLER = [
    "Any plans for the weekend?",
    "Classic.",
    "Coffee later?",
    "Finally.",
    "How did that go?",
    "Long day?",
    "Makes sense.",
    "No way, that's amazing!",
    "Seriously? Tell me more.",
    "That sounds like a lot.",
    "The thousand-piece one? Respect.",
    "Wait, really?",
]


def test_a_group_question_naming_a_member_recalls_what_they_said(
    hermes_home: Path, kit: Any
) -> None:
    """The display name is most of a short message's words: with it in the vector, Yuki's
    small talk outranked what Yuki said about the band."""
    kit.write_config(hermes_home, backend="local", embedder="auto")
    loop = Loop(hermes_home, MemcoreMemoryProvider(retry=kit.FAST_RETRY))
    try:
        for i, filler in enumerate(GROUP_FILLER):
            loop.turn(f"[Yuki] {filler}", "Ha, noted.")
            loop.turn(f"[Sam] {filler}", "Ha, noted.")
            if i == 5:
                loop.turn("[Yuki] Nobody beats Khruangbin live, I'd fly anywhere to see them", "!")
        loop.settle()
        loop.new_session("s2")
        context = loop.ask("[Sam] Which group is Yuki a big fan of?")
        recalled = [line for line in context.splitlines() if "[Yuki]" in line]
        assert recalled and "Khruangbin" in recalled[0], context
    finally:
        loop.close()


def test_the_builtin_memory_tools_replace_and_remove_reach_the_mirrored_entry(
    local_loop: Any,
) -> None:
    """Hermes' memory tool names the entry to replace or remove by a substring (``old_text``);
    the mirrored copy goes with it, and nothing else does: not the user's own memory with
    similar words, not the new text of the replace."""
    from tools.memory_tool import MemoryStore, memory_tool

    loop = local_loop()
    builtin = MemoryStore()
    builtin.load_from_disk()

    def memory(**args: Any) -> None:
        result = memory_tool(store=builtin, **args)
        assert json.loads(result)["success"] is True, result
        loop.mm.notify_memory_tool_write(result, args)

    own = "Nell prefers metric units when she cooks"
    loop.mm.handle_tool_call("tablestore_remember", {"content": own, "sync": True})
    memory(action="add", target="user", content="Nell prefers metric units")
    memory(action="add", target="memory", content="Project uses Postgres 15")
    loop.settle()
    memory(
        action="replace", target="memory", old_text="Postgres", content="Project uses Postgres 16"
    )
    memory(action="remove", target="user", old_text="metric", content="stray words")
    loop.settle()
    assert sorted(loop.memories()) == sorted([own, "Project uses Postgres 16"])
    assert "Nell prefers metric units\n" not in loop.ask("which units does Nell prefer?") + "\n"


def test_a_message_without_words_recalls_nothing_not_the_last_block(local_loop: Any) -> None:
    """A blank message (or one that is only a pasted recall block) asks nothing: the block
    of the previous message, for another question, is not shown again."""
    loop = local_loop()
    live_first_session(loop)
    block = loop.ask("my sister")
    assert "Maya" in block
    for blank in ("   ", "\n", block):
        assert loop.mm.prefetch_all(blank, session_id=loop.session) == "", repr(blank[:20])
