"""The provider's turn path, tools, mirror and lifecycle, over the in-memory fake store."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import Unavailable
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message, WriteReceipt
from memcore_hermes.outbox.spool import SpoolLimits, SqliteOutbox

STORE = "hermes_mem"


def run_scope(run: str = "s1", tenant: str = "telegram:alice") -> Scope:
    return Scope("hermes", tenant, "hermes", run)


def contents(store: InMemoryMemoryStore, scope: Scope) -> list[str]:
    return [m.content for m in store.list_messages(STORE, scope, limit=100).items]


class GatedStore(InMemoryMemoryStore):
    """A fake whose writes wait for a gate; on release they fail (the connection died)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def add_messages(
        self, store: str, scope: Scope, messages: Sequence[Message], **kw: Any
    ) -> WriteReceipt:
        self.entered.set()
        self.gate.wait(30)
        raise Unavailable("connection reset")

    def search(self, *args: Any, **kw: Any) -> Any:
        self.entered.set()
        self.gate.wait(30)
        raise Unavailable("connection reset")


def release(store: GatedStore, lane: Any) -> None:
    """Open the gate and let the lane finish its failing call inside the test, so its warning
    is not logged into a capture pytest has already closed."""
    store.gate.set()
    deadline = time.monotonic() + 10
    while lane.alive and time.monotonic() < deadline:
        if lane.idle(0.2):  # a stopped lane answers False at once: then wait for its thread
            break
        time.sleep(0.01)


class LostAnswerStore(InMemoryMemoryStore):
    """The first write lands, but its answer is lost (the client sees a failure)."""

    def __init__(self) -> None:
        super().__init__()
        self.lost = 0

    def add_messages(
        self, store: str, scope: Scope, messages: Sequence[Message], **kw: Any
    ) -> WriteReceipt:
        receipt = super().add_messages(store, scope, messages, **kw)
        if self.lost == 0:
            self.lost += 1
            raise Unavailable("read timed out")
        return receipt


def test_sync_turn_returns_while_the_backend_is_stuck(make_provider: Any) -> None:
    store = GatedStore()
    provider = make_provider(store)
    provider.sync_turn("hello", "hi there", session_id="s1")
    assert store.entered.wait(5)  # the lane is inside the backend call, the agent thread is not
    assert provider.runtime.spool.stats(0).depth == 1
    release(store, provider.runtime.lane)


def test_prefetch_answers_from_cache_while_the_backend_is_stuck(make_provider: Any) -> None:
    store = GatedStore()
    provider = make_provider(store)
    started = time.monotonic()
    assert provider.prefetch("anything") == ""  # nothing recalled yet in this session
    assert store.entered.is_set()
    assert time.monotonic() - started < 5  # the budget (1 s by default), not the backend's 30 s
    release(store, provider.runtime.lane)


def test_a_prefetch_queued_after_a_turn_sees_that_turn(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    provider = make_provider(fake_store)
    provider.sync_turn("My favourite colour is teal", "Noted.", session_id="s1")
    provider.queue_prefetch("favourite colour")
    assert provider.runtime.wait_idle(10)
    recalled = provider.prefetch("favourite colour")
    assert "teal" in recalled
    assert recalled.startswith("<recalled-memory>")


@pytest.mark.parametrize(
    "message",
    [
        "Which language do I code in, C++? \U0001f44d\U0001f44d \ud83d",  # cut mid-emoji
        " " * 9_000 + "Which language do I code in, C++?",  # past the query limit
    ],
)
def test_the_recall_before_a_turn_searches_a_message_a_query_would_refuse(
    make_provider: Any, fake_store: InMemoryMemoryStore, message: str
) -> None:
    """A message holding half an emoji (a platform cut it there), or whose words came after
    8,192 blank characters, failed the search on every turn ("recall failed") and the turn
    was shown the block recalled for the message before; the turn's capture of the same
    text is repaired and kept. The recall now searches the message's words."""
    provider = make_provider(fake_store)
    provider.handle_tool_call("tablestore_remember", {"content": "I code in C++", "sync": True})
    provider.handle_tool_call(
        "tablestore_remember", {"content": "My favourite colour is teal", "sync": True}
    )
    assert "teal" in provider.prefetch("favourite colour")
    recalled = provider.prefetch(message)
    assert "I code in C++" in recalled and "teal" not in recalled


def test_turns_are_stored_as_messages_in_order(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    provider = make_provider(fake_store)
    for i in range(5):
        provider.sync_turn(f"question {i}", f"answer {i}", session_id="s1")
    assert provider.runtime.flush(10)
    expected = [x for i in range(5) for x in (f"question {i}", f"answer {i}")]
    assert contents(fake_store, run_scope()) == expected


def test_a_long_turn_is_split_not_truncated(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    provider = make_provider(fake_store)
    long_answer = "word " * 9_000  # 45,000 bytes: over one write's limit
    provider.sync_turn("tell me a lot", long_answer, session_id="s1")
    assert provider.runtime.flush(10)
    stored = contents(fake_store, run_scope())
    assert stored[0] == "tell me a lot"
    assert "".join(stored[1:]) == long_answer


def test_failed_writes_are_retried_and_arrive_once_in_order(
    make_provider: Any, fake_store: InMemoryMemoryStore, kit: Any
) -> None:
    fake_store.faults.fail_operation("add_messages", Unavailable("backend down"), times=4)
    provider = make_provider(fake_store)
    for i in range(3):
        provider.sync_turn(f"u{i}", f"a{i}", session_id="s1")
    assert kit.settle(provider, 10.0)
    assert contents(fake_store, run_scope()) == ["u0", "a0", "u1", "a1", "u2", "a2"]


def test_a_write_whose_answer_was_lost_is_not_duplicated(make_provider: Any, kit: Any) -> None:
    store = LostAnswerStore()
    provider = make_provider(store)
    provider.sync_turn("only once please", "sure", session_id="s1")
    assert kit.settle(provider, 10.0)
    assert store.lost == 1
    assert contents(store, run_scope()) == ["only once please", "sure"]


def test_shutdown_is_bounded_and_the_next_start_replays_once(
    make_provider: Any, hermes_home: Path, fake_store: InMemoryMemoryStore, kit: Any
) -> None:
    stuck = GatedStore()
    first = make_provider(stuck, flush_timeout=0.3)
    first.sync_turn("remember the milk", "ok", session_id="s1")
    assert stuck.entered.wait(5)
    lane = first.runtime.lane
    first.shutdown()  # returns although the backend call hangs
    spool = SqliteOutbox(hermes_home / "tablestore_memory_spool.sqlite3")
    assert spool.stats(0).depth == 1
    spool.close()
    release(stuck, lane)
    second = make_provider(fake_store)
    assert kit.settle(second, 10.0)
    assert contents(fake_store, run_scope()) == ["remember the milk", "ok"]


def test_a_full_spool_is_loud_and_the_agent_keeps_going(
    make_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = GatedStore()
    provider = make_provider(store, spool_limits=SpoolLimits(max_entries=1))
    provider.sync_turn("one", "1", session_id="s1")
    provider.sync_turn("two", "2", session_id="s1")  # refused, not raised
    assert "NOT queued" in caplog.text and "NOT recorded" in caplog.text
    assert provider.runtime.spool.stats(0).dropped_full == 1
    release(store, provider.runtime.lane)


def test_tool_schemas_are_bare_functions(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    schemas = make_provider(fake_store).get_tool_schemas()
    assert [s["name"] for s in schemas] == [
        "tablestore_profile",
        "tablestore_search",
        "tablestore_remember",
        "tablestore_forget",
    ]
    for s in schemas:
        assert "type" not in s and s["parameters"]["type"] == "object"
    forget = next(s for s in schemas if s["name"] == "tablestore_forget")
    assert set(forget["parameters"]["properties"]) == {"memory_id", "agent_id", "run_id"}


def call(provider: Any, name: str, **args: Any) -> dict[str, Any]:
    answer = provider.handle_tool_call(name, args)
    assert isinstance(answer, str)
    return json.loads(answer)


def test_remember_search_profile_forget(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    provider = make_provider(fake_store)
    stored = call(
        provider,
        "tablestore_remember",
        content="Alice writes Rust",
        metadata={"topic": "lang"},
        sync=True,
    )
    assert stored["status"] == "completed" and len(stored["memory_ids"]) == 1
    queued = call(provider, "tablestore_remember", content="Alice drinks green tea")
    assert queued["status"] == "queued"
    assert provider.runtime.flush(10)
    hits = call(provider, "tablestore_search", query="Rust", metadata={"topic": "lang"})["results"]
    assert [h["text"] for h in hits] == ["Alice writes Rust"]
    assert hits[0]["scope"] == "hermes/telegram:alice/hermes/s1" and isinstance(
        hits[0]["score"], float
    )
    profile = call(provider, "tablestore_profile", limit=10)
    assert {m["text"] for m in profile["memories"]} == {
        "Alice writes Rust",
        "Alice drinks green tea",
    }
    assert profile["scope"] == "hermes/telegram:alice/*/*"
    forgotten = call(provider, "tablestore_forget", memory_id=hits[0]["id"])
    assert forgotten["status"] == "deleted"
    assert [m["text"] for m in call(provider, "tablestore_profile")["memories"]] == [
        "Alice drinks green tea"
    ]


def test_the_profile_tool_pages_with_its_next_token(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    """The answer carried a next_token the tool could not take back."""
    provider = make_provider(fake_store)
    for i in range(5):
        call(provider, "tablestore_remember", content=f"Alice fact number {i}", sync=True)
    first = call(provider, "tablestore_profile", limit=3)
    assert len(first["memories"]) == 3 and first["next_token"]
    rest = call(provider, "tablestore_profile", limit=3, next_token=first["next_token"])
    texts = [m["text"] for m in first["memories"] + rest["memories"]]
    assert sorted(texts) == [f"Alice fact number {i}" for i in range(5)]


@pytest.mark.parametrize(
    ("name", "args", "code", "field"),
    [
        ("tablestore_search", {"query": ""}, "invalid_input", "query"),
        ("tablestore_search", {"query": "x", "top_k": 500}, "invalid_input", "top_k"),
        (
            "tablestore_search",
            {"query": "x", "enable_rerank": "yes"},
            "invalid_input",
            "enable_rerank",
        ),
        # The filter is the tool's metadata argument: an error names it so, not "filters".
        (
            "tablestore_search",
            {"query": "x", "metadata": {f"k{i}": "v" for i in range(17)}},
            "invalid_input",
            "metadata",
        ),
        ("tablestore_search", {"query": "x", "metadata": {"k": 5}}, "invalid_input", "metadata.k"),
        ("tablestore_search", {"query": "x", "metadata": "k=v"}, "invalid_input", "metadata"),
        # A scope key matches no memory's tags: it answered [], read as "nothing remembered".
        (
            "tablestore_search",
            {"query": "x", "metadata": {"run_id": "r"}},
            "invalid_input",
            "metadata.run_id",
        ),
        ("tablestore_profile", {"limit": 0}, "invalid_input", "limit"),
        ("tablestore_remember", {"content": "x" * 40_000}, "invalid_input", "content"),
        (
            "tablestore_remember",
            {"content": "x", "metadata": {"tenant_id": "bob"}},
            "invalid_input",
            "metadata.tenant_id",
        ),
        (
            "tablestore_remember",
            {"content": "x", "metadata": {"source": "builtin_memory"}},
            "invalid_input",
            "metadata.source",
        ),
        (
            "tablestore_forget",
            {"memory_id": "m1", "tenant_id": "bob"},
            "invalid_input",
            "tenant_id",
        ),
        ("tablestore_forget", {"memory_id": "m1", "app_id": "other"}, "invalid_input", "app_id"),
        ("tablestore_forget", {"memory_id": "does-not-exist"}, "not_found", "memory_id"),
        # Not read as the session's own agent or run (which deleted from there).
        ("tablestore_forget", {"memory_id": "m1", "agent_id": 5}, "invalid_input", "agent_id"),
        ("tablestore_forget", {"memory_id": "m1", "run_id": ["x"]}, "invalid_input", "run_id"),
        ("tablestore_forget", {"memory_id": "m1", "run_id": {"a": 1}}, "invalid_input", "run_id"),
        ("tablestore_forget", {"memory_id": "m1", "agent_id": " "}, "invalid_input", "agent_id"),
        ("tablestore_remember", {"content": "\u200b\u200b"}, "invalid_input", "content"),
        ("tablestore_remember", {"content": "\x00\x01"}, "invalid_input", "content"),
        ("tablestore_nope", {}, "invalid_input", "tool"),
    ],
)
def test_bad_tool_calls_answer_an_error_object(
    make_provider: Any,
    fake_store: InMemoryMemoryStore,
    name: str,
    args: dict[str, Any],
    code: str,
    field: str,
) -> None:
    answer = call(make_provider(fake_store), name, **args)
    assert answer["error"]["code"] == code
    assert answer["error"]["field"] == field


def test_a_long_unknown_name_is_quoted_by_its_ends_only(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    """The model reads the refusal: a 100,000-character tool or argument name came back whole
    in it, filling the model's context with what it had just sent."""
    provider = make_provider(fake_store)
    long = "a" * 50_000 + "MIDDLE" + "z" * 50_000
    for name, args in ((long, {}), ("tablestore_search", {"query": "tea", long: 1})):
        error = json.loads(provider.handle_tool_call(name, args))["error"]
        assert error["code"] == "invalid_input"
        assert len(error["message"]) < 200, error["message"][:200]
        assert "aaaa...zzzz" in error["message"] and "MIDDLE" not in error["message"]


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("tablestore_remember", "content"),
        ("tablestore_search", "query"),
        ("tablestore_forget", "memory_id"),
    ],
)
def test_a_missing_required_argument_is_named_missing(
    make_provider: Any, fake_store: InMemoryMemoryStore, name: str, field: str
) -> None:
    """A call without its required argument was answered as if it had been sent wrong
    ("content must be a string, not NoneType"): the model could not tell it left it out."""
    answer = call(make_provider(fake_store), name)
    assert answer["error"]["code"] == "invalid_input"
    assert answer["error"]["field"] == field
    assert answer["error"]["message"] == f"{field} is required"


def test_backend_failures_in_tools_are_errors_not_exceptions(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    provider = make_provider(fake_store)
    assert provider.runtime.wait_idle(5)
    fake_store.faults.fail_operation("search", Unavailable("down"))
    answer = call(provider, "tablestore_search", query="x")
    assert answer["error"]["code"] == "unavailable" and answer["error"]["retryable"] is True


def test_non_primary_contexts_read_but_never_write(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    fake_store.ensure_store(STORE)
    fake_store.add_text(STORE, run_scope("old"), "Alice likes chess")
    provider = make_provider(fake_store, agent_context="cron")
    provider.sync_turn("cron prompt", "cron output", session_id="s1")
    provider.on_memory_write("add", "user", "should not mirror")
    assert (
        call(provider, "tablestore_remember", content="x")["error"]["code"] == "permission_denied"
    )
    memory_id = fake_store.all_memories(STORE)[0].id
    assert (
        call(provider, "tablestore_forget", memory_id=memory_id)["error"]["code"]
        == "permission_denied"
    )
    assert [h["text"] for h in call(provider, "tablestore_search", query="chess")["results"]] == [
        "Alice likes chess"
    ]
    assert provider.runtime.flush(5)
    assert [m.text for m in fake_store.all_memories(STORE)] == ["Alice likes chess"]
    assert "read-only" in provider.system_prompt_block()


def test_builtin_memory_writes_are_mirrored(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    provider = make_provider(fake_store)
    provider.on_memory_write(
        "add", "user", "Name: Alice", {"write_origin": "tool", "session_id": "s1", "n": object()}
    )
    provider.on_memory_write("add", "memory", "Project uses Postgres")
    assert provider.runtime.flush(10)
    mirrored = {m.text: m.metadata for m in fake_store.all_memories(STORE)}
    assert mirrored["Name: Alice"]["source"] == "builtin_memory"
    assert (
        mirrored["Name: Alice"]["target"] == "user" and mirrored["Name: Alice"]["action"] == "add"
    )
    assert mirrored["Name: Alice"]["write_origin"] == "tool"
    provider.on_memory_write(
        "replace", "memory", "Project uses Postgres 16", {"old_text": "Project uses Postgres"}
    )
    provider.on_memory_write("remove", "user", "", {"old_text": "Name: Alice"})
    assert provider.runtime.flush(10)
    texts = {m.text: m.metadata.get("action") for m in fake_store.all_memories(STORE)}
    assert texts == {"Project uses Postgres 16": "replace"}


def test_a_session_switch_moves_new_turns_only(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    store = GatedStore()
    provider = make_provider(store)
    provider.sync_turn("first session", "ok", session_id="s1")
    provider.on_session_switch("s2", parent_session_id="s1", reset=True)
    provider.sync_turn("second session", "ok", session_id="s2")
    queued = [json.loads(e.payload)["scope"]["run_id"] for e in provider.runtime.spool.pending()]
    assert queued == ["s1", "s2"]
    release(store, provider.runtime.lane)


def test_the_system_prompt_names_store_scope_and_tools(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    block = make_provider(fake_store, user_id="carol").system_prompt_block()
    assert "hermes_mem" in block and "hermes/telegram:carol/hermes/s1" in block
    for tool in (
        "tablestore_search",
        "tablestore_profile",
        "tablestore_remember",
        "tablestore_forget",
    ):
        assert tool in block


def test_the_system_prompt_says_whose_memories_a_shared_tenant_holds(
    make_provider: Any, fake_store: InMemoryMemoryStore, hermes_home: Path, kit: Any
) -> None:
    """A group chat's tenant is the chat's and a fixed tenant is everyone's: the model must not
    be told they hold the current user's memories (it would give one member another's)."""
    own = make_provider(fake_store, user_id="carol").system_prompt_block()
    assert "Memories of this user (hermes/telegram:carol," in own

    chat = make_provider(
        fake_store,
        session_id="g1",
        user_id=None,
        chat_id="-100123",
        chat_type="group",
        gateway_session_key="agent:main:telegram:group:-100123",
    ).system_prompt_block()
    assert "of this user" not in chat
    assert "telegram#chat:-100123" in chat and "everyone in this chat" in chat

    kit.write_config(hermes_home, tenant_id="team")
    fixed = make_provider(fake_store, session_id="f1", user_id="dave").system_prompt_block()
    assert "of this user" not in fixed
    assert "hermes/team" in fixed and "every user" in fixed


def test_a_persons_session_in_a_group_is_told_others_read_the_replies(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    """Hermes gives each person of a group a session of their own by default, under their
    own tenant, so what they said in a direct chat is recalled there, and the reply is read
    by the whole group; the model was told only that the memories were the user's."""

    def prompt(chat_type: str, chat_id: str) -> str:
        return make_provider(
            fake_store,
            session_id=f"{chat_type}-session",
            user_id="111",
            chat_id=chat_id,
            chat_type=chat_type,
            gateway_session_key=f"agent:main:telegram:{chat_type}:{chat_id}:111",
        ).system_prompt_block()

    group = prompt("group", "-100500")
    assert "Memories of this user (hermes/telegram:111," in group
    assert "other people read your replies" in group and "in private" in group
    assert "other people read your replies" not in prompt("dm", "111")


def test_on_session_end_flushes(
    make_provider: Any, fake_store: InMemoryMemoryStore, kit: Any
) -> None:
    fake_store.faults.fail_operation("add_messages", Unavailable("blip"), times=1)
    provider = make_provider(fake_store)
    provider.sync_turn("bye", "see you", session_id="s1")
    provider.on_session_end([])
    assert kit.settle(provider, 10.0)
    assert contents(fake_store, run_scope()) == ["bye", "see you"]


def test_an_uninitialised_provider_warns_once_and_answers_errors(
    hermes_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memcore_hermes import MemcoreMemoryProvider

    provider = MemcoreMemoryProvider()
    provider.sync_turn("u", "a")
    provider.sync_turn("u", "a")
    assert caplog.text.count("not initialised") == 1
    assert provider.prefetch("q") == ""
    assert (
        json.loads(provider.handle_tool_call("tablestore_search", {"query": "q"}))["error"]["code"]
        == "unavailable"
    )


def test_a_forgotten_memory_is_not_recalled_from_the_last_turns_block(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    """When a turn's search does not answer in time, the last block stands in; the memory the
    model deleted since must not come back in it."""
    provider = make_provider(fake_store)
    provider.handle_tool_call(
        "tablestore_remember", {"content": "Alice's locker code is 4411", "sync": True}
    )
    assert "4411" in provider.prefetch("locker code")
    [hit] = json.loads(provider.handle_tool_call("tablestore_search", {"query": "locker"}))[
        "results"
    ]
    forgot = json.loads(provider.handle_tool_call("tablestore_forget", {"memory_id": hit["id"]}))
    assert forgot["status"] == "deleted"
    fake_store.faults.fail_operation("search", Unavailable("read timed out"), times=1)
    assert "4411" not in provider.prefetch("what is my locker code?")


@pytest.mark.parametrize(
    "reply",
    [
        "⚠️ No reply: the model returned empty content after retries and any fallback "
        "providers. Try `continue`, switch model/provider, or inspect the tool output above.",
        "(empty)",
    ],
)
def test_hermes_notice_of_no_reply_is_not_a_memory(
    make_provider: Any, fake_store: InMemoryMemoryStore, reply: str
) -> None:
    """It was stored, and recalled in the next turns as authoritative reference data."""
    provider = make_provider(fake_store, store_assistant="always")
    provider.sync_turn("My locker code is 4411", reply, session_id="s1")
    assert provider.runtime.wait_idle(10)
    assert contents(fake_store, run_scope()) == ["My locker code is 4411"]


def test_hermes_notice_in_the_users_place_is_not_a_memory(
    make_provider: Any, fake_store: InMemoryMemoryStore
) -> None:
    """A background delegation's results reach ``sync_turn`` as the user's message; they
    were a memory already (``on_delegation``), and were stored again as the user's words."""
    provider = make_provider(fake_store, store_assistant="always")
    notice = (
        "[ASYNC DELEGATION BATCH COMPLETE — deleg_1a2b]\nTask 1: find the cheapest flight\n"
        "Result: LH 123 at 210 EUR\nFull live transcript: /tmp/task-0.log"
    )
    provider.sync_turn(notice, "The cheapest flight is LH 123 at 210 EUR.", session_id="s1")
    provider.sync_turn("Book it for Friday", "Done.", session_id="s1")
    assert provider.runtime.wait_idle(10)
    said = contents(fake_store, run_scope())
    assert not any("ASYNC DELEGATION" in text for text in said)
    assert "Book it for Friday" in said
