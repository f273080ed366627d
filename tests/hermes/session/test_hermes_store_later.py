"""A store that cannot be opened at start for a reason that passes (another process has an
older file open, a busy or full disk, TableStore unreachable): the session starts anyway,
its writes wait in the spool and land exactly once when the store opens; bad config still
fails loudly. Driven through Hermes' own ``MemoryManager``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import ConfigError, Conflict, MemcoreError, PermissionDenied, Unavailable
from memcore.scope import Scope, ScopePattern
from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider
from tests.older_store import held_open, write_older

STORE = "hermes_mem"
TURN_SCOPE = Scope("hermes", "telegram:dana", "hermes", "s1")
DANA = ScopePattern.parse("hermes/telegram:dana/*/*")


def _manager(provider: MemcoreMemoryProvider, home: Path) -> Any:
    from agent.memory_manager import MemoryManager

    mm = MemoryManager()
    mm.add_provider(provider)
    mm.initialize_all(
        session_id="s1",
        hermes_home=str(home),
        platform="telegram",
        agent_context="primary",
        user_id="dana",
    )
    return mm


def _wait_for(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _write_everything(mm: Any) -> dict[str, Any]:
    """A turn, a built-in memory write and a queued remember, through the manager."""
    mm.sync_all("My bike is red", "A red bike, noted.", session_id="s1")
    assert mm.flush_pending(10)
    mm.on_memory_write("add", "user", "Dana drinks green tea")
    answer: dict[str, Any] = json.loads(
        mm.handle_tool_call("tablestore_remember", {"content": "Dana owns a kayak"})
    )
    return answer


def _once_each(texts: list[str]) -> None:
    """The mirrored and the remembered memory are there, each exactly once."""
    for text in ("Dana drinks green tea", "Dana owns a kayak"):
        assert texts.count(text) == 1, texts


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="lock list is Linux only")
def test_writes_made_while_an_older_process_holds_the_file_land_once_it_lets_go(
    hermes_home: Path, kit: Any
) -> None:
    """Before, ``initialize`` raised the upgrade's Conflict and every turn, mirror and
    remember of the session was lost ("not initialised ... not recorded")."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    database = hermes_home / "tablestore_memory_local.sqlite3"
    write_older(database)
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=1.0)
    with held_open(database) as holder:
        mm = _manager(provider, hermes_home)
        try:
            assert provider.runtime is not None
            queued = _write_everything(mm)
            assert queued["status"] == "queued", queued
            # Recall says plainly that memory is unavailable, and does not wait for the
            # opening (each try waits a second for the other process).
            started = time.monotonic()
            found = json.loads(mm.handle_tool_call("tablestore_search", {"query": "bike"}))
            assert time.monotonic() - started < 0.9
            assert found["error"]["code"] == "unavailable", found
            assert found["error"]["message"].startswith("memory is unavailable")
            assert "queued writes are stored once it opens" in found["error"]["message"]
            # A remember the model wants stored now is refused, not said to be kept.
            now = json.loads(
                mm.handle_tool_call("tablestore_remember", {"content": "x y", "sync": True})
            )
            assert now["error"]["code"] == "unavailable", now
            assert found["error"]["retryable"] is True
            assert mm.prefetch_all("what colour is my bike?", session_id="s1") == ""
            holder.let_go()
            runtime = provider.runtime
            assert _wait_for(lambda: runtime.spool.stats(time.time()).depth == 0, 30)
            hits = json.loads(mm.handle_tool_call("tablestore_search", {"query": "kayak"}))
            assert [h["text"] for h in hits["results"]].count("Dana owns a kayak") == 1
            store = runtime.handle.store
            texts = [m.text for m in store.list_memories(STORE, DANA, limit=100).items]
            _once_each(texts)
            turns = [m.content for m in store.list_messages(STORE, TURN_SCOPE).items]
            assert turns == ["My bike is red", "A red bike, noted."]
            # The older file was upgraded and kept what it held.
            alice = ScopePattern.parse("hermes/alice/*/*")
            assert len(store.list_memories(STORE, alice, limit=100).items) == 2
        finally:
            mm.on_session_end([])
            mm.shutdown_all()


class _OpensLater:
    """A store factory that fails with ``error`` until ``open`` is set."""

    def __init__(self, error: MemcoreError) -> None:
        self.error = error
        self.store = InMemoryMemoryStore()
        self.open = threading.Event()
        self.calls: list[str] = []

    def __call__(self, _config: Any) -> Any:
        self.calls.append(threading.current_thread().name)
        if not self.open.is_set():
            raise self.error
        return getattr(self.store, "reopen", lambda: self.store)()


@pytest.mark.parametrize(
    "error",
    [
        Unavailable("the disk holding the memory database is full; free space and retry"),
        Conflict("the file is open in another process"),
        Unavailable("TableStore could not be reached"),
    ],
    ids=["disk-full", "conflict", "unreachable"],
)
def test_a_store_that_opens_later_gets_every_write_exactly_once(
    hermes_home: Path, kit: Any, error: MemcoreError
) -> None:
    factory = _OpensLater(error)
    provider = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    try:
        assert provider.runtime is not None
        assert _write_everything(mm)["status"] == "queued"
        mm.on_turn_start(2, "next")
        time.sleep(0.3)  # several failed tries, each with its backoff
        assert provider.runtime.spool.stats(time.time()).depth == 3
        # Only the background lane opens the store, never the agent's thread.
        assert factory.calls and all(n.startswith("tablestore-mem-") for n in factory.calls[1:])
        factory.open.set()
        assert kit.settle(provider, 10.0)
        scope = provider.runtime.scope
        _once_each([m.text for m in factory.store.all_memories(STORE)])
        turns = [m.content for m in factory.store.list_messages(STORE, scope).items]
        assert turns == ["My bike is red", "A red bike, noted."]
        found = json.loads(mm.handle_tool_call("tablestore_search", {"query": "kayak"}))
        assert [h["text"] for h in found["results"]] == ["Dana owns a kayak"]
    finally:
        mm.shutdown_all()


def test_a_store_that_stays_shut_keeps_the_sessions_writes_for_the_next_start(
    hermes_home: Path, kit: Any
) -> None:
    """The session ends and shuts down without waiting for the store; the next start
    delivers what it left, once."""
    factory = _OpensLater(Conflict("the file is open in another process"))
    provider = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    _write_everything(mm)
    started = time.monotonic()
    mm.on_session_end([])
    mm.shutdown_all()
    assert time.monotonic() - started < 3.0
    assert factory.store.list_stores() == []

    factory.open.set()
    later = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    mm = _manager(later, hermes_home)
    try:
        assert kit.settle(later, 10.0)
        _once_each([m.text for m in factory.store.all_memories(STORE)])
    finally:
        mm.shutdown_all()


def test_a_store_refused_for_good_still_fails_the_start(hermes_home: Path, kit: Any) -> None:
    """Read-only files, bad config: nothing passes by itself, so nothing is accepted."""
    factory = _OpensLater(PermissionDenied("the memory database cannot be written"))
    provider = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    with pytest.raises(PermissionDenied):
        provider.initialize("s1", hermes_home=str(hermes_home), user_id="dana")
    assert provider.runtime is None
    (hermes_home / "tablestore_memory.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(MemcoreError) as info:
        MemcoreMemoryProvider(retry=kit.FAST_RETRY).initialize(
            "s1", hermes_home=str(hermes_home), user_id="dana"
        )
    assert info.value.code == "config_error"


def test_a_store_that_opens_only_after_the_session_ended_is_closed(
    hermes_home: Path, kit: Any
) -> None:
    """Shutdown does not wait for an opening that takes long (a first run's bootstrap);
    what that opening opens afterwards is closed, not left open for the process's life."""
    factory = _OpensLater(Unavailable("TableStore could not be reached"))
    release = threading.Event()
    opening = threading.Event()

    def slow(config: Any) -> Any:
        if factory.calls:
            opening.set()
            release.wait(30)
            factory.open.set()
        return factory(config)

    provider = MemcoreMemoryProvider(store_factory=slow, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    _write_everything(mm)
    assert opening.wait(10)
    started = time.monotonic()
    mm.shutdown_all()
    assert time.monotonic() - started < 3.0
    release.set()
    assert _wait_for(lambda: factory.store.closed, 10)
    # Nothing was sent after the shutdown: the next start delivers it.
    store = factory.store.reopen()
    assert all(store.all_memories(info.name) == [] for info in store.list_stores())


def test_a_local_file_found_damaged_at_start_keeps_the_turns_until_it_is_repaired(
    hermes_home: Path, kit: Any
) -> None:
    """Damage found by a write already kept the turns in the spool until the file was
    repaired; damage found when the file was opened lost the session's turns."""
    from memcore_sqlite import SqliteMemoryStore

    kit.write_config(hermes_home, backend="local", embedder="none")
    database = hermes_home / "tablestore_memory_local.sqlite3"
    database.write_bytes(b"\xff" * 16384)  # a damaged header: "file is not a database"
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=1.0)
    mm = _manager(provider, hermes_home)
    try:
        assert provider.runtime is not None
        mm.sync_all("My bike is red", "A red bike, noted.", session_id="s1")
        assert mm.flush_pending(10)
        found = json.loads(mm.handle_tool_call("tablestore_search", {"query": "bike"}))
        assert "store_corrupted" in found["error"]["message"], found
        assert "To repair it" in found["error"]["message"]
        time.sleep(0.3)
        runtime = provider.runtime
        assert runtime.spool.stats(time.time()).depth == 1
        assert runtime.spool.dead_letters() == []
        # The user repairs it (here: a fresh file where the damaged one was).
        for side in hermes_home.glob("tablestore_memory_local.sqlite3*"):
            side.unlink()
        SqliteMemoryStore(database).close()
        assert _wait_for(lambda: runtime.spool.stats(time.time()).depth == 0, 20)
        turns = [m.content for m in runtime.handle.store.list_messages(STORE, TURN_SCOPE).items]
        assert turns == ["My bike is red", "A red bike, noted."]
    finally:
        mm.shutdown_all()


def _lanes() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tablestore-mem-")]


def _evict(provider: MemcoreMemoryProvider, home: Path, user: str) -> None:
    """A session the gateway drops without ending it (``release_clients()`` only), once
    its turn is spooled."""
    mm = _manager(provider, home)
    mm.sync_all(f"{user} keeps bees", "Noted.", session_id="s1")
    assert mm.flush_pending(10)


def _lanes_end(lanes: int, seconds: float) -> bool:
    import gc

    def ended() -> bool:
        gc.collect()
        return len(_lanes()) <= lanes

    return _wait_for(ended, seconds)


def test_sessions_dropped_while_their_store_is_not_open_let_go_of_their_lanes(
    hermes_home: Path, kit: Any
) -> None:
    """The gateway evicts cached agents without ending their provider; a provider whose
    store had not opened yet was kept alive by its own lane (the opening it left there held
    it), so the lane tried to open the store for the rest of the process. Now it goes as
    one with an open store does, and its writes stay in the spool for the next start."""
    factory = _OpensLater(Unavailable("TableStore could not be reached"))
    lanes = len(_lanes())
    for user in ("ann", "bob"):
        _evict(
            MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY), hermes_home, user
        )
    assert _lanes_end(lanes, 10)
    tries = len(factory.calls)
    time.sleep(0.3)
    assert len(factory.calls) == tries

    factory.open.set()
    later = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    mm = _manager(later, hermes_home)
    try:
        assert kit.settle(later, 10.0)
        turns = [m.content for m in factory.store.list_messages(STORE, TURN_SCOPE).items]
        assert turns == ["ann keeps bees", "Noted.", "bob keeps bees", "Noted."]
    finally:
        mm.shutdown_all()


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="lock list is Linux only")
def test_a_session_dropped_while_an_older_process_holds_the_file_lets_go_of_its_lane(
    hermes_home: Path, kit: Any
) -> None:
    """As above, with the configured local store (its opener, not a test's factory)."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    database = hermes_home / "tablestore_memory_local.sqlite3"
    write_older(database)
    lanes = len(_lanes())
    with held_open(database):
        _evict(MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=1.0), hermes_home, "dana")
        assert _lanes_end(lanes, 15)


EXCLUSIVE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
conn.execute("BEGIN EXCLUSIVE")
print("HELD", flush=True)
sys.stdin.read()
conn.close()
"""
#: The longest ``initialize`` may take while the store cannot open: what Hermes 0.19 gives a
#: memory prefetch (8 s, less the plugin's 0.5 s margin), with room for a busy 2-core machine.
START_WITHIN_S = 20.0


def test_a_file_another_process_holds_exclusive_does_not_hold_the_start(
    hermes_home: Path, kit: Any
) -> None:
    """Another process held the file EXCLUSIVE (rollback journal): ``initialize`` waited the
    whole busy timeout (about a minute) on Hermes' thread before the agent could answer.
    Now the session starts after a short wait; the same opening goes on in the background,
    the first turn's recall uses the store once it opens, and the turn lands once."""
    kit.write_config(hermes_home, backend="local", embedder="none", recall_wait_ms=7000)
    earlier = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    earlier.initialize("s0", hermes_home=str(hermes_home), platform="telegram", user_id="dana")
    kept = json.loads(
        earlier.handle_tool_call("tablestore_remember", {"content": "Dana's bike is red"})
    )
    assert kept["status"] == "queued"
    assert kit.settle(earlier, 10.0)
    earlier.shutdown()
    database = hermes_home / "tablestore_memory_local.sqlite3"
    holder = subprocess.Popen(
        [sys.executable, "-c", EXCLUSIVE, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    from agent.memory_manager import MemoryManager

    progress: list[str] = []
    mm = MemoryManager()
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY, flush_timeout=1.0)
    mm.add_provider(provider)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        started = time.monotonic()
        mm.initialize_all(
            session_id="s1",
            hermes_home=str(hermes_home),
            platform="telegram",
            user_id="dana",
            agent_context="primary",
            status_callback=progress.append,
        )
        took = time.monotonic() - started
        assert took < START_WITHIN_S, took
        runtime = provider.runtime
        assert runtime is not None and runtime.handle.store is None
        assert any("still being opened" in m for m in progress), progress
        said = len(progress)
        mm.sync_all("My bike is red", "A red bike, noted.", session_id="s1")
        assert mm.flush_pending(10)
        found = json.loads(mm.handle_tool_call("tablestore_search", {"query": "bike"}))
        assert found["error"]["code"] == "unavailable", found
        # The other process lets go while the first turn is being prepared: its recall
        # waits for the opening that is under way and searches the store.
        holder.stdin.close()
        holder.wait(30)
        mm.on_turn_start(1, "what colour is my bike?")
        assert "Dana's bike is red" in mm.prefetch_all("what colour is my bike?", session_id="s1")
        assert kit.settle(provider, 20.0)
        store = runtime.handle.store
        turns = [m.content for m in store.list_messages(STORE, TURN_SCOPE).items]
        assert turns == ["My bike is red", "A red bike, noted."]
        # Hermes' start is over: the store's opening said nothing more on its status line.
        assert len(progress) == said, progress
    finally:
        if not holder.stdin.closed:
            holder.stdin.close()
        holder.wait(30)
        mm.shutdown_all()


class _RefusedLater:
    """A store factory whose first opening fails for a reason that passes, and every later
    one for ``error``, one that does not (keys refused, a bad config, a newer file)."""

    def __init__(self, error: MemcoreError) -> None:
        self.error = error
        self.calls = 0

    def __call__(self, _config: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise Unavailable("TableStore could not be reached")
        raise self.error


def _refused_for_good(mm: Any, provider: MemcoreMemoryProvider, code: str) -> None:
    """What a session says and does once its store was refused for good: the tools name
    the refusal (not retryable), new writes are not taken, those taken before stay."""
    runtime = provider.runtime
    assert runtime is not None
    depth = runtime.spool.stats(time.time()).depth
    found = json.loads(mm.handle_tool_call("tablestore_search", {"query": "bike"}))
    assert found["error"]["code"] == code, found
    assert found["error"]["retryable"] is False
    assert "cannot be used" in found["error"]["message"], found
    kept = json.loads(mm.handle_tool_call("tablestore_remember", {"content": "Dana owns a van"}))
    assert kept["error"]["code"] == code, kept
    mm.sync_all("My van is blue", "Noted.", session_id="s1")
    assert mm.flush_pending(10)
    mm.on_memory_write("add", "user", "Dana likes vans")
    assert runtime.spool.stats(time.time()).depth == depth


#: Openings that fail for good: keys refused, a config the opening finds wrong.
REFUSED_FOR_GOOD = pytest.mark.parametrize(
    "error",
    [
        PermissionDenied("the access keys were refused"),
        ConfigError("endpoint is not a URL", field="endpoint"),
    ],
    ids=["keys-refused", "bad-config"],
)


@REFUSED_FOR_GOOD
def test_a_store_refused_for_good_after_the_start_stops_the_retries(
    hermes_home: Path, kit: Any, error: MemcoreError
) -> None:
    """The store's first opening failed for a reason that passes, a later one for one that
    does not: the lane went on opening it every backoff for the session's life, the tools
    said it would be opened again, and writes kept being taken that no try could store."""
    factory = _RefusedLater(error)
    provider = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    try:
        assert _wait_for(lambda: factory.calls >= 2, 10)
        assert _wait_for(lambda: provider.runtime.handle.refused is not None, 10)
        tries = factory.calls
        _refused_for_good(mm, provider, error.code)
        mm.on_turn_start(2, "next")
        time.sleep(0.3)  # several backoffs of the fast retry policy
        assert factory.calls == tries
    finally:
        mm.shutdown_all()


class _PastTheStart:
    """A session (through Hermes' manager) whose store's first opening outlasts the start's
    wait, 0.1 s here, until :attr:`release` is set, and then fails with ``first``; a later
    opening returns :attr:`store`."""

    def __init__(self, home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch, first: Exception):
        from agent import memory_manager

        monkeypatch.setattr(memory_manager, "_EXTERNAL_PREFETCH_TIMEOUT_S", 0.6)
        self.release = threading.Event()
        self.store = InMemoryMemoryStore()
        self.calls = 0
        self._first = first
        self.provider = MemcoreMemoryProvider(store_factory=self._open, retry=kit.FAST_RETRY)
        self.mm = _manager(self.provider, home)
        self.runtime = self.provider.runtime
        assert self.runtime is not None and self.runtime.handle.opening

    def _open(self, _config: Any) -> Any:
        self.calls += 1
        if self.calls > 1:
            return self.store
        self.release.wait(30)
        raise self._first


@REFUSED_FOR_GOOD
def test_an_opening_past_the_start_that_ends_refused_is_not_retried(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch, error: MemcoreError
) -> None:
    """The opening ``initialize`` stopped waiting for ends with a refusal for good (keys
    refused in a first run's bootstrap, a config the bootstrap finds wrong): the session
    said so nowhere and kept opening."""
    late = _PastTheStart(hermes_home, kit, monkeypatch, error)
    try:
        queued = _write_everything(late.mm)
        assert queued["status"] == "queued", queued
        late.release.set()
        assert _wait_for(lambda: late.runtime.handle.refused is not None, 10)
        _refused_for_good(late.mm, late.provider, error.code)
        time.sleep(0.3)
        assert late.calls == 1
        # What was taken before the refusal waits for a start that can store it.
        assert late.runtime.spool.stats(time.time()).depth == 3
    finally:
        late.mm.shutdown_all()


def test_an_opening_past_the_start_that_ends_in_a_bug_is_tried_again_on_its_own(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening ``initialize`` stopped waiting for ends late with an error that is no
    memcore error: the lane opens again on its own timer, not at the next write, and
    delivers what waited, once each."""
    late = _PastTheStart(hermes_home, kit, monkeypatch, KeyError("endpoint"))
    try:
        _write_everything(late.mm)
        time.sleep(0.3)  # the writes' own passes are over
        late.release.set()
        assert _wait_for(lambda: late.runtime.spool.stats(time.time()).depth == 0, 10)
        _once_each([m.text for m in late.store.all_memories(STORE)])
    finally:
        late.mm.shutdown_all()


def test_an_opening_that_fails_with_a_bug_is_tried_again_without_a_new_write(
    hermes_home: Path, kit: Any
) -> None:
    """An error that is no memcore error in a later opening escaped the delivery pass: the
    lane then slept until the next write, and the writes already spooled waited for it."""
    factory = _OpensLater(Unavailable("TableStore could not be reached"))
    bug = threading.Event()
    broke: list[int] = []

    def buggy(config: Any) -> Any:
        if bug.is_set() and not broke:
            broke.append(1)
            factory.open.set()  # the next try opens it
            raise KeyError("endpoint")
        return factory(config)

    provider = MemcoreMemoryProvider(store_factory=buggy, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    try:
        _write_everything(mm)
        time.sleep(0.3)  # the writes' own passes are over: the lane retries on its timer
        tries = len(factory.calls)
        assert _wait_for(lambda: len(factory.calls) >= tries + 2, 10)
        bug.set()
        runtime = provider.runtime
        assert _wait_for(lambda: runtime.spool.stats(time.time()).depth == 0, 10)
        assert broke == [1]
        _once_each([m.text for m in factory.store.all_memories(STORE)])
    finally:
        mm.shutdown_all()


@pytest.mark.parametrize("late", [False, True], ids=["opened", "still-opening"])
def test_a_spool_that_cannot_be_opened_turns_writes_off_and_the_store_closes_with_the_session(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch, late: bool
) -> None:
    """Without a spool no write can be kept: the session takes none (``remember`` answers
    why, not retryable) but starts, its store opened at once or later, and closed with it
    (test_hermes_spool_unavailable drives it through Hermes' loader)."""
    from agent import memory_manager

    from memcore_hermes.config.home import SPOOL_FILE

    (hermes_home / SPOOL_FILE).mkdir()  # nothing can open it as a database
    if late:
        monkeypatch.setattr(memory_manager, "_EXTERNAL_PREFETCH_TIMEOUT_S", 0.6)  # 0.1 s
    release = threading.Event()
    store = InMemoryMemoryStore()

    def factory(_config: Any) -> Any:
        if late:
            release.wait(30)
        return store

    provider = MemcoreMemoryProvider(store_factory=factory, retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="dana")
    try:
        answer = json.loads(provider.handle_tool_call("tablestore_remember", {"content": "x y"}))
        assert answer["error"]["retryable"] is False
        assert "cannot open the spool" in answer["error"]["message"]
        release.set()
    finally:
        provider.shutdown()
    assert _wait_for(lambda: store.closed, 10)


def test_after_a_failed_start_the_tools_answer_why(hermes_home: Path, kit: Any) -> None:
    """Hermes keeps a provider whose start failed, tools and all: they answered "tablestore-mem
    is not initialised", retryable, which neither said why nor was true (nothing retries)."""
    kit.write_config(hermes_home, backend="local", embedder="none", top_k="many")
    mm = _manager(MemcoreMemoryProvider(retry=kit.FAST_RETRY), hermes_home)
    try:
        for tool, args in (
            ("tablestore_search", {"query": "bike"}),
            ("tablestore_remember", {"content": "Dana owns a kayak"}),
        ):
            error = json.loads(mm.handle_tool_call(tool, args))["error"]
            assert error["code"] == "config_error", error
            assert error["retryable"] is False
            assert error["message"].startswith("tablestore-mem could not start (config_error: ")
            assert "top_k" in error["message"], error
            assert "doctor" in error["message"]
    finally:
        mm.shutdown_all()


class _EnsureFails(InMemoryMemoryStore):
    """A store whose ``ensure_store`` fails while ``down`` is set, once with ``bug`` (an
    error that is no memcore error, as an SDK's escaping an adapter would be)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.down.set()
        self.bug: Exception | None = None
        self.ensures = 0

    def ensure_store(self, *args: Any, **kwargs: Any) -> Any:
        self.ensures += 1
        bug, self.bug = self.bug, None
        if bug is not None:
            self.down.clear()  # the next try succeeds
            raise bug
        if self.down.is_set():
            raise Unavailable("TableStore could not be reached")
        return super().ensure_store(*args, **kwargs)


def test_a_store_check_that_fails_with_a_bug_is_tried_again_without_a_new_write(
    hermes_home: Path, kit: Any
) -> None:
    """The delivery pass's first look at the store let an error that is no memcore error
    escape it: the lane slept until the next write, and the spooled writes waited for it."""
    store = _EnsureFails()
    provider = MemcoreMemoryProvider(store_factory=lambda _c: store, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    try:
        _write_everything(mm)
        time.sleep(0.3)  # the writes' own passes are over: the lane retries on its timer
        tries = store.ensures
        assert _wait_for(lambda: store.ensures >= tries + 2, 10)
        store.bug = KeyError("endpoint")
        runtime = provider.runtime
        assert _wait_for(lambda: runtime.spool.stats(time.time()).depth == 0, 10)
        _once_each([m.text for m in store.all_memories(STORE)])
    finally:
        mm.shutdown_all()


class _DreamsLocally(InMemoryMemoryStore):
    """A store that consolidates in-process (as the embedded one does), noting each pass."""

    LOCAL_DREAM = True

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[str] = []

    def create_dream_task(self, *args: Any, max_memories: int = 0, **kwargs: Any) -> Any:
        self.passes.append(threading.current_thread().name)
        return super().create_dream_task(*args, **kwargs)


def test_a_session_end_pass_queued_before_the_store_opened_does_not_run_after_shutdown(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session ended while its store was still being opened past the start's wait: the
    consolidation pass it queued ran once the opening ended, after ``shutdown`` had
    returned, on a store that shutdown was closing. Now nothing runs after shutdown; the
    session's writes stay in the spool for the next start, whose session end plans them."""
    from agent import memory_manager

    monkeypatch.setattr(memory_manager, "_EXTERNAL_PREFETCH_TIMEOUT_S", 0.6)  # waits 0.1 s
    store = _DreamsLocally()
    release = threading.Event()

    def slow(_config: Any) -> Any:
        release.wait(30)
        return store

    provider = MemcoreMemoryProvider(store_factory=slow, retry=kit.FAST_RETRY)
    mm = _manager(provider, hermes_home)
    runtime = provider.runtime
    assert runtime is not None and runtime.handle.opening
    _write_everything(mm)
    mm.on_session_end([])
    mm.shutdown_all()
    release.set()
    assert _wait_for(lambda: store.closed, 10)
    time.sleep(0.2)
    assert store.passes == []
    assert provider.last_consolidation is not None
    assert provider.last_consolidation.result(timeout=5) is None
    store.reopen()
    assert all(store.all_memories(info.name) == [] for info in store.list_stores())

    later = MemcoreMemoryProvider(store_factory=lambda _config: store, retry=kit.FAST_RETRY)
    mm = _manager(later, hermes_home)
    try:
        assert kit.settle(later, 10.0)
        _once_each([m.text for m in store.all_memories(STORE)])
        mm.on_session_end([])
        assert later.last_consolidation is not None
        assert later.last_consolidation.result(timeout=10) is not None
        assert len(store.passes) == 1
    finally:
        mm.shutdown_all()


def test_after_shutdown_the_tools_say_the_session_ended(
    hermes_home: Path, kit: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool call after ``shutdown`` answered "tablestore-mem is not initialised",
    retryable, and a turn was logged as "initialize() was not called": neither was true,
    and nothing retries. Now they say the session was shut down, not retryable; a new
    start serves the tools again."""
    store = InMemoryMemoryStore()
    provider = MemcoreMemoryProvider(
        store_factory=lambda _config: store.reopen(), retry=kit.FAST_RETRY
    )
    mm = _manager(provider, hermes_home)
    mm.on_session_end([])
    mm.shutdown_all()
    for tool, args in (
        ("tablestore_search", {"query": "bike"}),
        ("tablestore_remember", {"content": "Dana owns a kayak"}),
    ):
        error = json.loads(mm.handle_tool_call(tool, args))["error"]
        assert error["code"] == "store_closed", error
        assert error["retryable"] is False
        assert "was shut down" in error["message"]
    assert mm.prefetch_all("bike", session_id="s1") == ""
    provider.sync_turn("My bike is red", "Noted.", session_id="s1")
    assert "it was shut down" in caplog.text
    assert "initialize() was not called" not in caplog.text

    mm = _manager(provider, hermes_home)
    try:
        kept = json.loads(mm.handle_tool_call("tablestore_remember", {"content": "Dana rows"}))
        assert kept["status"] == "queued", kept
    finally:
        mm.shutdown_all()


def test_a_tool_call_that_raced_the_shutdown_says_the_session_ended(
    hermes_home: Path, kit: Any
) -> None:
    """A tool call already past the provider when ``shutdown`` closed the session's store
    answered that the store "is opened again in the background, and queued writes are
    stored once it opens": nothing was opening it any more."""
    from memcore_hermes.session.tools import handle_tool

    store = InMemoryMemoryStore()
    provider = MemcoreMemoryProvider(
        store_factory=lambda _config: store.reopen(), retry=kit.FAST_RETRY
    )
    mm = _manager(provider, hermes_home)
    runtime = provider.runtime
    mm.shutdown_all()
    for tool, args in (
        ("tablestore_search", {"query": "bike"}),
        ("tablestore_profile", {}),
        ("tablestore_remember", {"content": "Dana owns a kayak", "sync": True}),
        ("tablestore_remember", {"content": "Dana owns a kayak"}),
    ):
        error = json.loads(handle_tool(runtime, tool, args))["error"]
        assert error["code"] == "store_closed", error
        assert "shut down" in error["message"]
        assert "opened again" not in error["message"]
    assert runtime.recall("what colour is my bike?") == ""
