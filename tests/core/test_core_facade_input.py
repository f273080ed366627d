"""The library facade's arguments: each wrong one is a typed error naming it, before any
write, and nothing is read as written that was not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memcore
from memcore.errors import ConfigError, InvalidInput
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message


def _memory() -> memcore.Memory:
    return memcore.Memory(InMemoryMemoryStore())


@pytest.mark.parametrize("messages", [123, "I have two cats", b"x", {"role": "user"}, None])
def test_messages_that_are_not_a_list_are_refused(messages: Any) -> None:
    mem = _memory()
    with pytest.raises(InvalidInput) as refused:
        mem.add(messages=messages) if messages is not None else mem.add(text=None, messages=None)
    assert refused.value.field in ("messages", "text")


@pytest.mark.parametrize(
    "chat", [[{"role": "user", "content": "I like jazz"}], (Message("user", "I like jazz"),)]
)
def test_a_chat_given_as_the_text_says_to_pass_it_as_messages(chat: Any) -> None:
    """mem0's ``add(messages, user_id=...)`` takes the chat first; here the first argument
    is the text, and the refusal said only that text must be a string, not list."""
    mem = _memory()
    with pytest.raises(InvalidInput, match=r"add\(messages=\[\.\.\.\]\)") as refused:
        mem.add(chat)
    assert refused.value.field == "text"
    assert mem.list().items == ()


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": ""}],
        [Message("user", "  "), Message("assistant", "\u200b")],
    ],
)
def test_messages_without_text_are_refused_not_dropped(messages: list[Any]) -> None:
    """They used to answer ``[]``: a caller could not tell them from a write."""
    mem = _memory()
    with pytest.raises(InvalidInput, match="no text"):
        mem.add(messages=messages)
    assert mem.list().items == ()


@pytest.mark.parametrize("key", ["tenant_id", "scope", "app_id", "agent_id", "run_id"])
def test_a_message_cannot_carry_a_scope_key(key: str) -> None:
    """As ``add(text=..., metadata=...)`` refuses it; such a memory could not be imported
    back from its own export."""
    mem = _memory()
    with pytest.raises(InvalidInput, match="reserved") as refused:
        mem.add(messages=[Message("user", "I have two cats", metadata={key: "bob"})])
    assert refused.value.field == f"messages[0].metadata.{key}"
    with pytest.raises(InvalidInput, match="reserved"):
        mem.add(messages=[{"role": "user", "content": "I have two cats"}], metadata={key: "bob"})
    assert mem.list().items == ()


@pytest.mark.parametrize("key", ["tenant_id", "scope", "app_id", "agent_id", "run_id"])
def test_a_filter_on_a_scope_key_is_refused_not_an_empty_answer(key: str) -> None:
    """No memory's metadata can hold such a key, so ``filters={"agent_id": "bob"}`` (the way
    some other memory libraries narrow a search) answered ``[]``, which reads as "nothing
    remembered"."""
    mem = _memory()
    mem.add(text="I have two cats", agent_id="bob")
    assert [h.memory.text for h in mem.search("cats", agent_id="bob")] == ["I have two cats"]
    with pytest.raises(InvalidInput, match=r"reserved.*match nothing") as refused:
        mem.search("cats", filters={key: "bob"})
    assert refused.value.field == f"filters.{key}"


def test_a_filter_on_user_id_is_refused_not_another_tenant_s_answer() -> None:
    """``filters={"user_id": "alex"}`` (how other memory libraries scope a search) read the
    metadata of the default tenant: alex's own memory never, another's that said the name."""
    mem = _memory()
    mem.add(text="Alex loves basketball", user_id="alex")
    mem.add(text="Someone loves basketball", metadata={"user_id": "alex"})
    with pytest.raises(InvalidInput, match="names a tenant") as refused:
        mem.search("basketball", filters={"user_id": "alex"})
    assert refused.value.field == "filters.user_id"
    assert [h.memory.text for h in mem.search("basketball", user_id="alex")] == [
        "Alex loves basketball"
    ]


def test_an_update_cuts_a_recall_block_as_an_add_does() -> None:
    mem = _memory()
    fenced = "<recalled-memory>The user likes tea</recalled-memory> The user likes coffee"
    [mid] = mem.add(text=fenced)
    assert mem.get(mid).text == "The user likes coffee"
    assert mem.update(mid, text="<recalled-memory>x</recalled-memory> Espresso").text == "Espresso"
    with pytest.raises(InvalidInput, match="empty"):
        mem.update(mid, text="<recalled-memory>only the block</recalled-memory>")


@pytest.mark.parametrize(
    "text", ["\u200b", " \ufeff ", "\u200c\u200d\u2060", "\u00ad", "\x00\x01\x02"]
)
def test_text_that_shows_nothing_is_empty(text: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        _memory().add(text=text)


@pytest.mark.parametrize("query", ["\u200b", " \ufeff ", "\u200c\u200d\u2060", "\u00ad"])
def test_a_query_that_shows_nothing_is_empty(query: str) -> None:
    """It was searched, and answered with whatever ranked first, as if it asked something;
    the same characters as a text to remember were refused as empty."""
    mem = _memory()
    mem.add(text="The user likes tea")
    with pytest.raises(InvalidInput, match="empty"):
        mem.search(query)


#: Characters that show nothing besides the zero-width ones: bidi embeddings and isolates
#: (U+202A-202E, U+2066-2069), the Arabic letter mark, the Mongolian vowel separator, a
#: variation selector, the grapheme joiner, a Hangul filler and the language tag.
OTHER_INVISIBLE = [
    "\u202e",
    "\u202a\u202c",
    "\u2066\u2069",
    "\u061c",
    "\u180e",
    "\ufe0f",
    "\u034f",
    "\u3164",
    "\U000e0001",
]


@pytest.mark.parametrize("query", OTHER_INVISIBLE)
def test_a_query_of_other_invisible_characters_is_empty(query: str) -> None:
    """A query of a right-to-left override alone (or an isolate, a variation selector, ...)
    was searched and answered with whatever ranked first, while the zero-width space was
    refused; it asks nothing either."""
    mem = _memory()
    mem.add(text="The user likes tea")
    with pytest.raises(InvalidInput, match="empty") as refused:
        mem.search(query)
    assert refused.value.field == "query"


@pytest.mark.parametrize("text", OTHER_INVISIBLE)
def test_a_text_of_other_invisible_characters_is_empty(text: str) -> None:
    """Such a text was stored: a memory that shows nothing when listed or recalled."""
    mem = _memory()
    with pytest.raises(InvalidInput, match="empty"):
        mem.add(text=text)
    assert mem.list().items == ()


def test_a_text_with_invisible_characters_and_words_is_kept() -> None:
    mem = _memory()
    [kept] = mem.add(text="\u202eThe user likes tea\ufe0f")
    assert [h.memory.id for h in mem.search("\u2066tea\u2069")] == [kept]


@pytest.mark.parametrize("field", ["agent_id", "run_id"])
@pytest.mark.parametrize("value", ["", "   ", 123, b"u"])
def test_open_refuses_a_blank_agent_or_run(field: str, value: Any) -> None:
    """They became the default agent or run silently; per call they were refused already."""
    with pytest.raises(InvalidInput) as refused:
        memcore.Memory.open("local", **{field: value})
    assert refused.value.field == field


def test_open_refuses_a_user_id_when_the_config_names_the_tenant(tmp_path: Path) -> None:
    """``open(config={"tenant_id": ...}, user_id="alice")`` put Alice's memories in the
    configured tenant, so two such opens for two users shared one tenant; a per-call user_id
    on that Memory was refused already. Refused before a file is opened."""
    db = tmp_path / "memcore.db"
    for user in ("alice", "bob"):
        with pytest.raises(InvalidInput) as refused:
            memcore.Memory.open(
                "local", config={"tenant_id": "team", "local_path": str(db)}, user_id=user
            )
        assert refused.value.field == "user_id"
    assert not db.exists()
    with memcore.Memory.open("local", config={"tenant_id": "team", "local_path": str(db)}) as mem:
        assert mem.scope.tenant_id == "team"


def test_open_takes_a_config_mapping_and_names_a_bad_key() -> None:
    with pytest.raises(ConfigError, match="top_k") as bad:
        memcore.Memory.open("local", config={"top_k": 0})
    assert bad.value.field == "top_k"
    with pytest.raises(ConfigError, match="unknown key"):
        memcore.Memory.open("local", config={"topk": 3})
    with pytest.raises(InvalidInput, match="config must be"):
        memcore.Memory.open("local", config=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "field"),
    [(("notastore",), "store"), ((None,), "store")],
)
def test_memory_needs_a_store(args: tuple[Any, ...], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        memcore.Memory(*args)
    assert refused.value.field == field


@pytest.mark.parametrize("field", ["enable_rerank", "ensure_store", "owns_store", "tenant_pinned"])
def test_memory_refuses_a_yes_no_argument_that_is_not_a_boolean(field: str) -> None:
    """``Memory(store, owns_store="no")`` was read as yes: closing that Memory closed the
    store passed in, under the other Memory objects sharing it."""
    store = InMemoryMemoryStore()
    with pytest.raises(InvalidInput) as refused:
        memcore.Memory(store, **{field: "no"})
    assert refused.value.field == field
    assert not store.closed


@pytest.mark.parametrize("field", ["enable_rerank", "read_only"])
def test_a_service_refuses_a_yes_no_argument_that_is_not_a_boolean(field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        memcore.MemoryService(
            InMemoryMemoryStore(),
            store_name="m",
            scope=memcore.Scope("app", "t", "a", "r"),
            **{field: "no"},
        )
    assert refused.value.field == field


def test_memory_needs_a_scope_value() -> None:
    with pytest.raises(InvalidInput) as refused:
        memcore.Memory(InMemoryMemoryStore(), scope="x")  # type: ignore[arg-type]
    assert refused.value.field == "scope"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.list(all_versions="no"), "all_versions"),
        (lambda m: m.list(current_only=1), "current_only"),
        (lambda m: m.add(text="The user likes tea", sync="no"), "sync"),
        (lambda m: m.search("tea", enable_rerank="x"), "enable_rerank"),
        (lambda m: m.iter_all(all_versions="yes"), "all_versions"),
        (lambda m: m.iter_all(page_size=0), "page_size"),
    ],
)
def test_a_yes_no_or_size_argument_is_checked_when_given(call: Any, field: str) -> None:
    """``"no"`` was read as true; ``iter_all`` said nothing until its first page."""
    mem = _memory()
    with pytest.raises(InvalidInput) as refused:
        call(mem)
    assert refused.value.field == field
    assert mem.list().items == ()


@pytest.mark.parametrize("message_id", ["\ud800", "a\x00b", "x" * 257, "  ", 10**20, 5, ["m1"]])
def test_a_message_id_that_is_not_an_id_is_refused(message_id: Any) -> None:
    """A store keeps a message's id as given (TableStore's ``messageId``: at most 256
    characters); the embedded one failed on it with a raw UnicodeEncodeError or OverflowError."""
    mem = _memory()
    with pytest.raises(InvalidInput) as refused:
        mem.add(messages=[Message("user", "I have two cats", id=message_id)])
    assert refused.value.field == "messages[0].id"
    assert mem.list().items == ()


def test_a_message_id_is_kept_as_given() -> None:
    mem = _memory()
    mem.add(messages=[Message("user", "I have two cats", id="m-1"), Message("user", "hi", id="")])
    first, second = mem.service.messages().items
    assert first.id == "m-1"
    assert second.id  # "" is no id: the store made one


@pytest.mark.parametrize("remember", ["no", "false", 0, None])
def test_a_message_whose_remember_is_not_a_boolean_is_refused(remember: Any) -> None:
    """``remember="no"`` was read as yes and the message became a memory; nothing of the
    turn is written."""
    mem = _memory()
    turn = [
        Message("user", "Keep this one"),
        Message("user", "Do not keep this", remember=remember),
    ]
    with pytest.raises(InvalidInput) as refused:
        mem.add(messages=turn)
    assert refused.value.field == "messages[1].remember"
    assert mem.list().items == ()
    assert mem.add(messages=[Message("user", "Log only", remember=False)]) == []


def test_a_dict_message_keeps_its_metadata_and_has_it_checked() -> None:
    """A dict message's ``metadata`` (the form a CLI messages file takes) was dropped without a
    word, scope keys and all; it is kept, and checked as a `Message`'s is."""
    mem = _memory()
    [kept] = mem.add(
        messages=[{"role": "user", "content": "I like hiking", "metadata": {"topic": "outdoors"}}],
        metadata={"source": "import"},
    )
    assert dict(mem.get(kept).metadata) == {"topic": "outdoors", "source": "import"}
    with pytest.raises(InvalidInput) as reserved:
        mem.add(messages=[{"role": "user", "content": "hi there", "metadata": {"tenant_id": "b"}}])
    assert reserved.value.field == "messages[0].metadata.tenant_id"
    with pytest.raises(InvalidInput) as shape:
        mem.add(messages=[{"role": "user", "content": "hi there", "metadata": ["topic"]}])
    assert shape.value.field == "messages[0].metadata"
    assert [m.text for m in mem.list().items] == ["I like hiking"]


class _OwnBytes(str):
    """A string whose own ``encode`` hides what it holds (every one the same bytes)."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        return b"same"


class _AlwaysEqual(str):
    """A string equal to anything, of one hash: set lookups never find it."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 1


class _ShortAndFull(str):
    """A string that says it is short and not blank, whatever it holds."""

    def __len__(self) -> int:
        return 5

    def strip(self, chars: str | None = None) -> str:
        return "x"


def test_a_str_subclass_user_id_names_the_tenant_its_characters_name() -> None:
    """Two long user ids of a str subclass whose ``encode`` lies were cut to one tenant (the
    segment's digest read ``encode``): one user's memories were found by the other."""
    mem = _memory()
    alice, bob = _OwnBytes("u" * 300 + "alice"), _OwnBytes("u" * 300 + "bob")
    assert mem.scope_for(user_id=alice) == mem.scope_for(user_id=str(alice[:]))
    assert mem.scope_for(user_id=alice) != mem.scope_for(user_id=bob)
    mem.add(text="Alice's secret", user_id=alice)
    assert mem.search("secret", user_id=bob) == []


def test_a_str_subclass_key_cannot_name_the_scope() -> None:
    """A metadata key of a str subclass that hashes apart from ``"tenant_id"`` passed the
    reserved-key check and was stored as ``tenant_id``, on every write path."""
    mem = _memory()
    [kept] = mem.add(text="The user likes tea")
    writes = [
        lambda: mem.add(text="I have two cats", metadata={_AlwaysEqual("tenant_id"): "b"}),
        lambda: mem.add(
            messages=[{"role": "user", "content": "I have two cats"}],
            metadata={_AlwaysEqual("scope"): "b"},
        ),
        lambda: mem.add(
            messages=[
                {
                    "role": "user",
                    "content": "I have cats",
                    "metadata": {_AlwaysEqual("app_id"): "b"},
                }
            ]
        ),
        lambda: mem.add(
            messages=[Message("user", "I have two cats", metadata={_AlwaysEqual("run_id"): "b"})]
        ),
        lambda: mem.update(kept, metadata={_AlwaysEqual("agent_id"): "b"}),
    ]
    for write in writes:
        with pytest.raises(InvalidInput, match="reserved"):
            write()
    assert [(m.text, dict(m.metadata)) for m in mem.list().items] == [("The user likes tea", {})]


def test_a_str_subclass_is_held_to_the_limits_of_what_it_holds() -> None:
    """A text, query or user id that said it was short (``__len__``) or not blank (``strip``)
    was kept past the limits: a 100,000-character memory, a blank user id."""
    mem = _memory()
    with pytest.raises(InvalidInput, match="limit"):
        mem.add(text=_ShortAndFull("z" * 100_000))
    with pytest.raises(InvalidInput, match="limit"):
        mem.search(_ShortAndFull("q" * 100_000))
    with pytest.raises(InvalidInput) as blank:
        mem.add(text="I have two cats", user_id=_ShortAndFull("   "))
    assert blank.value.field == "user_id"
    assert mem.list().items == ()


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.search("tea", min_similarity=10**400), "min_similarity"),
        (
            lambda m: m.add(messages=[{"role": "user", "content": "hi", "timestamp": 10**400}]),
            "messages[0].timestamp",
        ),
        (
            lambda m: m.add(messages=[Message("user", "hi", timestamp=10**400)]),
            "messages[0].timestamp",
        ),
    ],
)
def test_a_number_no_float_can_hold_is_refused(call: Any, field: str) -> None:
    """An int past a float's range (what a JSON document's long number parses to) failed as a
    raw OverflowError from the finiteness check."""
    mem = _memory()
    with pytest.raises(InvalidInput) as refused:
        call(mem)
    assert refused.value.field == field
    assert mem.list().items == ()


def test_an_imported_time_no_float_can_hold_is_refused() -> None:
    from memcore import limits

    with pytest.raises(InvalidInput) as refused:
        limits.check_stored_time(10**400, field="created_at")
    assert refused.value.field == "created_at"


class _NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.search("tea", top_k=10**5000), "top_k"),
        (lambda m: m.list(limit=10**5000), "limit"),
        (lambda m: m.iter_all(page_size=10**5000), "page_size"),
        (lambda m: m.dream_tasks(limit=10**5000), "limit"),
        (lambda m: m.add(text="I have two cats", sync=10**5000), "sync"),
        (lambda m: m.search("tea", enable_rerank=10**5000), "enable_rerank"),
        (lambda m: m.list(all_versions=10**5000), "all_versions"),
        (lambda m: m.add(text="I have two cats", sync=_NoRepr()), "sync"),
    ],
)
def test_a_value_too_long_to_print_is_still_refused_by_name(call: Any, field: str) -> None:
    """The refusal quoted the value, and an int past Python's 4,300 printable digits (or an
    object whose repr fails) made the message itself fail, as a raw ValueError."""
    mem = _memory()
    with pytest.raises(InvalidInput) as refused:
        call(mem)
    assert refused.value.field == field
    assert len(str(refused.value)) < 200
    assert mem.list().items == ()
