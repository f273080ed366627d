"""``Memory.open`` on the embedded store: it owns the store it opened, a config that names the
tenant pins it, and a read policy narrows in one argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memcore
from memcore import MemcoreConfig, Memory
from memcore.errors import InvalidInput, NotFound, StoreClosed

LEXICAL = MemcoreConfig(embedder="none")


def test_open_owns_the_store_and_close_closes_it(tmp_path: Path) -> None:
    mem = Memory.open("local", config=LEXICAL, user_id="alice", path=tmp_path / "m.db")
    shared = Memory(mem.store, scope=mem.scope, store_name=LEXICAL.memory_store_name)
    [mid] = shared.add(text="Alice keeps a diary", user_id="alice")
    shared.close()  # built on a given store: leaves it open
    assert mem.get(mid).text == "Alice keeps a diary"
    mem.close()
    with pytest.raises(StoreClosed):
        mem.store.list_stores()


def test_a_config_tenant_refuses_per_call_users(tmp_path: Path) -> None:
    cfg = MemcoreConfig(embedder="none", tenant_id="acme")
    with pytest.raises(InvalidInput) as refused:  # the config's tenant would win over Alice
        Memory.open("local", config=cfg, user_id="alice", path=tmp_path / "m.db")
    assert refused.value.field == "user_id"
    with Memory.open("local", config=cfg, path=tmp_path / "m.db") as mem:
        mem.add(text="Shared by the whole company")
        with pytest.raises(InvalidInput):
            mem.search("company", user_id="bob")
        assert mem.scope.tenant_id == "acme"


def test_open_takes_a_read_policy(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.open("local", config=LEXICAL, user_id="u", run_id="r1", path=path) as mem:
        mem.add(text="The user said this in run one")
        mem.add(text="The user said this in run two", run_id="r2")
    narrow = Memory.open(
        "local", config=LEXICAL, user_id="u", run_id="r1", policy=memcore.SessionRead(), path=path
    )
    with narrow:
        assert [m.text for m in narrow.list().items] == ["The user said this in run one"]
        assert len(narrow.search("user said")) == 1


def test_history_dates_every_version(tmp_path: Path) -> None:
    with Memory.open("local", config=LEXICAL, path=tmp_path / "m.db") as mem:
        [mid] = mem.add(text="Fay lives in Lyon", user_id="fay")
        mem.update(mid, text="Fay lives in Porto", user_id="fay")
        [entry] = mem.history(mid, user_id="fay")
        assert (entry.text, entry.version) == ("Fay lives in Porto", 2)
        assert entry.created_at is not None and entry.updated_at is not None
        assert entry.updated_at >= entry.created_at


def test_an_id_reaches_its_memory_in_a_large_tenant(tmp_path: Path) -> None:
    """get, update and delete by id alone reach a memory of another agent of the tenant
    however many memories the tenant holds (a scan of the tenant's listing stopped at 5,000,
    so a user could no longer erase such a memory by its id). In one read: the store finds
    the id itself, so every other row is left alone."""
    from memcore.values import TextItem

    with Memory.open("local", config=LEXICAL, user_id="alice", path=tmp_path / "m.db") as mem:
        scope = mem.scope_for(user_id="alice", agent_id="bot", run_id="r1")
        service = mem._for("alice", "bot", "r1")
        for start in range(0, 5_100, 1_700):
            service.restore(
                [TextItem(text=f"fact {i}", scope=scope) for i in range(start, start + 1_700)]
            )
        [last] = mem.add(text="the very last fact", user_id="alice", agent_id="bot", run_id="r1")
        assert mem.get(last, user_id="alice").text == "the very last fact"
        mem.update(last, text="the last fact, changed", user_id="alice")
        assert [m.text for m in mem.history(last, user_id="alice")] == ["the last fact, changed"]
        with pytest.raises(NotFound):
            mem.get(last, user_id="bob")
        mem.delete(last, user_id="alice")
        with pytest.raises(NotFound):
            mem.get(last, user_id="alice", agent_id="bot", run_id="r1")


@pytest.mark.parametrize("message_id", ["\ud800", 10**20])
def test_a_bad_message_id_is_a_typed_error_and_writes_nothing(
    tmp_path: Path, message_id: Any
) -> None:
    with Memory.open("local", config=LEXICAL, user_id="u", path=tmp_path / "m.db") as mem:
        turn = [
            memcore.Message("user", "I have two cats"),
            memcore.Message("user", "hi", id=message_id),
        ]
        with pytest.raises(InvalidInput):
            mem.add(messages=turn)
        assert mem.list().items == ()
        assert mem.service.messages().items == ()


def _open_files(path: Path) -> list[str]:
    """This process's open descriptors on ``path`` and its side files (Linux)."""
    fds = Path("/proc/self/fd")
    names = []
    for fd in fds.iterdir():
        try:
            names.append(str(fd.readlink()))
        except OSError:
            continue
    return [name for name in names if name.startswith(str(path))]


def _open_after(path: Path, *, seconds: float) -> list[str]:
    """:func:`_open_files` once none is left, or after ``seconds`` (the check of a new file
    runs on a connection of its own for a moment after the store opened)."""
    import time

    deadline = time.monotonic() + seconds
    while (names := _open_files(path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return names


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_memory_dropped_without_close_lets_go_of_its_file_and_threads(tmp_path: Path) -> None:
    import gc
    import threading
    import time

    path = tmp_path / "m.db"
    before = {t.ident for t in threading.enumerate()}
    for _ in range(3):  # as a web handler that opens one per request and never closes it
        mem = Memory.open("local", config=LEXICAL, user_id="alice", path=path)
        mem.add(text="Alice keeps a diary")
        assert mem.search("diary")  # a read starts the store's thread for its records
        del mem
        gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        started = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
        if not started and not _open_files(path):
            break
        time.sleep(0.05)
    assert [t.name for t in started] == []
    assert _open_files(path) == []
    # What was read before the drop was recorded: the store was closed, not abandoned.
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as mem:
        assert [m.text for m in mem.list().items] == ["Alice keeps a diary"]
        searches = mem.store.list_requests(
            LEXICAL.memory_store_name, operation="SearchMemories", limit=100
        )
        assert len(searches.items) == 3


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_open_leaves_no_file_open_when_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore.errors import Unavailable
    from memcore_sqlite import SqliteMemoryStore

    path = tmp_path / "m.db"
    # The errors are kept, as an app that logs or reports them does: their tracebacks hold
    # the frames open() failed in, so nothing is left for the collector to close.
    with pytest.raises(InvalidInput) as refused:
        Memory.open("local", config=LEXICAL, path=path, policy=3)  # type: ignore[arg-type]
    assert _open_after(path, seconds=10) == []

    def busy(self: SqliteMemoryStore, name: str, **_: Any) -> None:
        raise Unavailable("the memory database is busy", retryable=True)

    monkeypatch.setattr(SqliteMemoryStore, "ensure_store", busy)
    with pytest.raises(Unavailable, match="busy") as failed:
        Memory.open("local", config=LEXICAL, path=path)
    assert _open_after(path, seconds=10) == []
    assert refused.value.field == "policy"
    assert failed.value.retryable


_CHAT = [
    {"role": "user", "content": "My flight to Oslo leaves on Friday"},
    {"role": "assistant", "content": "Your Oslo flight is on Friday; I booked window seat 14A."},
    {"role": "assistant", "content": "Noted, I'll remember that!"},
]


@pytest.mark.parametrize(
    ("setting", "kept"),
    [("auto", 2), ("never", 1), ("always", 3)],
)
def test_the_configs_store_assistant_decides_what_a_conversation_keeps(
    tmp_path: Path, setting: str, kept: int
) -> None:
    """``store_assistant`` was checked at open and then ignored: every setting kept what
    ``auto`` keeps (a user's ``never`` still stored the assistant's replies)."""
    cfg = MemcoreConfig(embedder="none", store_assistant=setting)
    with Memory.open("local", config=cfg, user_id="alice", path=tmp_path / "m.db") as mem:
        mem.add(messages=_CHAT)
        mem.add(messages=_CHAT[1:], user_id="bob")  # another user's service: the same rule
        texts = [m.text for m in mem.iter_all()]
        assert texts == [m["content"] for m in _CHAT][:kept]
        assert len(list(mem.iter_all(user_id="bob"))) == kept - 1


@pytest.mark.parametrize("user_id", ["", "   ", 5])
def test_open_names_user_id_for_a_blank_or_wrong_user(tmp_path: Path, user_id: Any) -> None:
    """``Memory.open(user_id="")`` named ``tenant_id``, a field the caller never gave, where
    the same mistake in a call names ``user_id``."""
    with pytest.raises(InvalidInput) as refused:
        Memory.open("local", config=LEXICAL, user_id=user_id, path=tmp_path / "m.db")
    assert refused.value.field == "user_id"
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("role", ["User", "human", "developer"])
def test_a_message_role_not_taken_names_role_and_the_roles_taken(tmp_path: Path, role: str) -> None:
    """An unknown role said only "messages[0] is not a valid message"."""
    path = tmp_path / "m.db"
    with (
        Memory.open("local", config=LEXICAL, user_id="alice", path=path) as mem,
        pytest.raises(InvalidInput) as refused,
    ):
        mem.add(messages=[{"role": role, "content": "I like hiking"}])
    assert refused.value.field == "messages[0].role"
    assert str(refused.value) == (
        f"messages[0].role must be one of assistant, system, tool, user, not {role!r}"
    )


def test_open_creates_no_mistyped_store_a_write_does(tmp_path: Path) -> None:
    """``Memory.open`` created the store it was given by name: a mistyped one, on a file
    holding other stores, was made empty and every read found nothing. Reads now say it does
    not exist, and the first write creates it (``auto_create_store``), as the CLI and the MCP
    server do."""
    from memcore.errors import StoreNotFound

    path = tmp_path / "m.db"
    right = MemcoreConfig(embedder="none", memory_store_name="main_store")
    with Memory.open("local", config=right, user_id="alice", path=path) as mem:
        assert mem.list().items == ()  # a new file: its first read makes the store
        mem.add(text="The locker code is 4411")
    typo = MemcoreConfig(embedder="none", memory_store_name="mian_store")
    with Memory.open("local", config=typo, user_id="alice", path=path) as mem:
        with pytest.raises(StoreNotFound):
            mem.list()
        with pytest.raises(StoreNotFound):
            mem.search("locker")
        assert [s.name for s in mem.store.list_stores()] == ["main_store"]
        [added] = mem.add(text="A fact for the new store")
        assert [m.id for m in mem.list().items] == [added]
        assert sorted(s.name for s in mem.store.list_stores()) == ["main_store", "mian_store"]
    off = MemcoreConfig(embedder="none", memory_store_name="other", auto_create_store=False)
    with Memory.open("local", config=off, user_id="alice", path=path) as mem:
        with pytest.raises(StoreNotFound):
            mem.add(text="Nothing creates it")
        assert "other" not in [s.name for s in mem.store.list_stores()]


def test_a_config_local_path_of_memory_is_a_scratch_database(tmp_path, monkeypatch) -> None:
    """``config={"local_path": ":memory:"}`` made a file named ``:memory:`` under the data
    home, so the next run of an "ephemeral" test saw the last one's memories."""
    import memcore

    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path / "home"))
    for run in range(2):
        with memcore.Memory.open(
            "local", config={"local_path": ":memory:", "embedder": "none"}
        ) as m:
            m.add(text=f"ephemeral fact {run}")
            assert [x.text for x in m.iter_all()] == [f"ephemeral fact {run}"]
    assert not (tmp_path / "home" / ":memory:").exists()


def test_add_names_each_memory_once_however_the_turn_was_cut() -> None:
    """A repeat is one memory; thirty copies (two write batches) answered its id twice."""
    with Memory.open("local", config={"local_path": ":memory:", "embedder": "none"}) as mem:
        ids = mem.add(messages=[{"role": "user", "content": "I like apples"}] * 30)
        assert len(ids) == len(set(ids)) == len(mem.list().items) == 1
        three = mem.add(
            messages=[{"role": "user", "content": c} for c in ("figs", "plums", "figs")]
        )
        assert len(three) == len(set(three)) == 2
