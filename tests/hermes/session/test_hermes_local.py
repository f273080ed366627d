"""The offline ``local`` backend: the embedded SQLite store under ``$HERMES_HOME``."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider


def test_offline_turns_tools_and_recall(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    assert provider.is_available()
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        provider.sync_turn("My cat is called Miso", "What a lovely name.", session_id="s1")
        provider.queue_prefetch("cat name")
        assert provider.runtime.wait_idle(10)
        assert "Miso" in provider.prefetch("cat name")
        hits = json.loads(provider.handle_tool_call("tablestore_search", {"query": "cat Miso"}))[
            "results"
        ]
        assert hits and hits[0]["scope"] == "hermes/cli:gus/hermes/s1"
    finally:
        provider.shutdown()
    assert (hermes_home / "tablestore_memory_local.sqlite3").is_file()
    assert MemcoreMemoryProvider().backup_paths() == []  # Hermes' backup walks the home


def test_the_local_database_is_as_private_as_the_spool(hermes_home: Path, kit: Any) -> None:
    """One file-mode policy for every entry point: 0600 files (the spool always was)."""
    import stat

    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        provider.handle_tool_call("tablestore_remember", {"content": "Gus speaks Portuguese"})
    finally:
        provider.shutdown()
    database = hermes_home / "tablestore_memory_local.sqlite3"
    assert stat.S_IMODE(database.stat().st_mode) == 0o600


def test_local_memories_survive_a_restart(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    first = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    first.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    first.handle_tool_call("tablestore_remember", {"content": "Gus speaks Portuguese"})
    first.shutdown()
    second = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    second.initialize("s2", hermes_home=str(hermes_home), user_id="gus")
    try:
        profile = json.loads(second.handle_tool_call("tablestore_profile", {}))
        assert [m["text"] for m in profile["memories"]] == ["Gus speaks Portuguese"]
    finally:
        second.shutdown()


def test_session_end_consolidates_the_local_store_off_the_agent_thread(
    hermes_home: Path, kit: Any
) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    stale = "Gus keeps 30 dozen eggs in the fridge at the moment"
    try:
        for text in (stale, "Gus has 3 cats"):
            provider.handle_tool_call("tablestore_remember", {"content": text, "sync": True})
        newer = "Gus now keeps 20 dozen eggs in the fridge"
        provider.handle_tool_call("tablestore_remember", {"content": newer, "sync": True})
        provider.on_session_end([])
        assert provider.last_consolidation is not None
        dream_id = provider.last_consolidation.result(timeout=30)
        store = provider.runtime.handle.ready()
        [action] = store.list_dream_actions(provider.runtime.store_name, dream_id).items
        assert (action.action, action.status) == ("UPDATE", "applied")
        current = json.loads(provider.handle_tool_call("tablestore_profile", {}))
        assert stale not in [m["text"] for m in current["memories"]]
        everything = json.loads(
            provider.handle_tool_call("tablestore_profile", {"include_superseded": True})
        )
        assert stale in [m["text"] for m in everything["memories"]]
    finally:
        provider.shutdown()


def test_session_end_never_hides_a_fact_the_user_stated(hermes_home: Path, kit: Any) -> None:
    """The pass runs for every user without asking: a statement and its negation, or a
    count said of someone else, are two facts, and both stay in the profile."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    said = [
        "Gus is vegetarian",
        "Gus's sister has 2 kids and lives in Lisbon",
        "Gus goes to the Italian place every Friday with his wife and kids",
        "Gus is not vegetarian",
        "Gus's brother now has 3 kids and lives in Lisbon",
        "Gus goes to the Italian place every Friday with his wife",
    ]
    try:
        for text in said:
            provider.handle_tool_call("tablestore_remember", {"content": text, "sync": True})
        provider.on_session_end([])
        assert provider.last_consolidation is not None
        provider.last_consolidation.result(timeout=30)
        current = json.loads(provider.handle_tool_call("tablestore_profile", {}))
        assert sorted(m["text"] for m in current["memories"]) == sorted(said)
    finally:
        provider.shutdown()


def test_the_next_session_end_plans_only_what_was_written_since(
    hermes_home: Path, kit: Any
) -> None:
    """A pass costs what the session added: what the last one left proposed is not planned
    again (a full pass, ``memcore dream create``, would)."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        store = provider.runtime.handle.ready()
        name = provider.runtime.store_name
        for text in (
            "Gus wants to keep 30 dozen eggs in the fridge",
            "Gus now keeps 20 dozen eggs in the fridge",
        ):
            provider.handle_tool_call("tablestore_remember", {"content": text, "sync": True})
        provider.on_session_end([])
        assert provider.last_consolidation is not None
        first = provider.last_consolidation.result(timeout=30)
        [proposed] = store.list_dream_actions(name, first).items
        assert (proposed.action, proposed.status) == ("UPDATE", "skipped")
        cats = [
            "Gus has 3 cats called Miso, Tofu and Nori",
            "gus has 3 cats called miso tofu and nori!",
        ]
        ids = set()
        for text in cats:
            out = provider.handle_tool_call("tablestore_remember", {"content": text, "sync": True})
            ids.update(json.loads(out)["memory_ids"])
        provider.on_session_end([])
        second = provider.last_consolidation.result(timeout=30)
        [merge] = store.list_dream_actions(name, second).items
        assert merge.action == "MERGE" and set(merge.memory_ids) == ids
    finally:
        provider.shutdown()


def test_the_users_own_model_turns_hermes_turns_into_facts(
    hermes_home: Path, kit: Any, monkeypatch: Any
) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "fake_chat", Path(__file__).parents[2] / "sqlite" / "fake_chat.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    chat = module.FakeChat()
    monkeypatch.setenv("MEMCORE_MODEL_BASE_URL", chat.base_url)
    monkeypatch.setenv("MEMCORE_MODEL", "the-agents-model")
    kit.write_config(hermes_home, backend="local", embedder="none")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        provider.sync_turn("Can you help? My cat is called Miso.", "Sure!", session_id="s1")
        assert provider.runtime.wait_idle(10)
        profile = json.loads(provider.handle_tool_call("tablestore_profile", {}))
        assert [m["text"] for m in profile["memories"]] == ["My cat is called Miso."]
        assert chat.requests and chat.requests[0]["model"] == "the-agents-model"
    finally:
        provider.shutdown()
        chat.close()


def test_a_turn_the_embedder_failed_on_is_retried_not_dead_lettered(
    hermes_home: Path, kit: Any, monkeypatch: Any
) -> None:
    """An embedder failure was reported as invalid input, so the spool moved the turn to the
    dead-letter table for good; at shutdown the embedder's worker pool refuses work that way
    (RuntimeError), about one run in twenty under load. It is retryable now."""
    import memcore_sqlite.backend
    from memcore.testing import HashingEmbedder

    class Flaky(HashingEmbedder):
        failures = 2

        def embed(self, texts: Any) -> list[list[float]]:
            if Flaky.failures:
                Flaky.failures -= 1
                raise RuntimeError("cannot schedule new futures after shutdown")
            return super().embed(texts)

    monkeypatch.setattr(memcore_sqlite.backend, "choose_embedder", lambda *a, **k: Flaky())
    kit.write_config(hermes_home, backend="local", embedder="onnx")
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        provider.sync_turn("My cat is called Miso", "What a lovely name.", session_id="s1")
        assert kit.settle(provider, 20)
        assert provider.runtime.spool.dead_letters() == []
        hits = json.loads(provider.handle_tool_call("tablestore_search", {"query": "cat Miso"}))
        assert "Miso" in hits["results"][0]["text"]
    finally:
        provider.shutdown()
    assert Flaky.failures == 0


@pytest.mark.parametrize("placed", ["home", "local_path"])
def test_a_database_that_cannot_be_created_says_what_moves_it(
    hermes_home: Path, tmp_path: Path, kit: Any, placed: str
) -> None:
    """The plugin's database is in ``$HERMES_HOME`` (or at the config's ``local_path``), so
    that is what the refusal says to change: ``MEMCORE_HOME`` moves nothing here."""
    import shutil
    import subprocess

    from memcore.errors import PermissionDenied

    locked = tmp_path / "locked"
    locked.mkdir()
    if placed == "home":
        home = locked
        kit.write_config(home, backend="local", embedder="none")
    else:
        home = hermes_home
        kit.write_config(
            home, backend="local", embedder="none", local_path=str(locked / "memories.db")
        )
    if os.geteuid() == 0:  # mode bits do not stop root; the immutable flag does
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr")
        if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode:
            pytest.skip("this filesystem has no immutable flag")
    else:
        locked.chmod(0o500)
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    try:
        with pytest.raises(PermissionDenied) as refused:
            provider.initialize("s1", hermes_home=str(home), user_id="gus")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(locked)], check=True)
        else:
            locked.chmod(0o700)
        provider.shutdown()
    message = str(refused.value)
    assert "MEMCORE_HOME" not in message
    if placed == "home":
        assert message.endswith("(set HERMES_HOME to a writable folder)")
    else:
        assert message.endswith(
            f"(set local_path in {home / 'tablestore_memory.json'} to a file in a writable folder)"
        )


#: A session whose delivery of a remembered fact hangs: it says so in a file, then waits
#: to be killed with the fact leased to it in the spool.
_HANGING_SESSION = """
import sys, time
from pathlib import Path
from memcore.service import MemoryService
from memcore_hermes import MemcoreMemoryProvider

def hang(self, *args, **kwargs):
    Path(sys.argv[2]).write_text("sending")
    time.sleep(600)

MemoryService.remember = hang
provider = MemcoreMemoryProvider()
provider.initialize("s1", hermes_home=sys.argv[1], user_id="gus")
provider.handle_tool_call("tablestore_remember", {"content": "Gus keeps bees on the roof"})
time.sleep(600)
"""


def test_a_killed_sessions_write_is_sent_at_once_on_the_local_store(
    hermes_home: Path, kit: Any, tmp_path: Path
) -> None:
    """A remote server may still be applying a killed process's last request, so its entry
    waits one call timeout (30 s here) before a resend. The local store's write ended with
    the process that made it, yet the next session waited as long, its recall missing it."""
    import signal
    import subprocess
    import sys
    import time

    kit.write_config(hermes_home, backend="local", embedder="none", timeout=30)
    sending = tmp_path / "sending"
    child = subprocess.Popen(
        [sys.executable, "-c", _HANGING_SESSION, str(hermes_home), str(sending)],
        env={**os.environ, "HERMES_HOME": str(hermes_home)},
    )
    try:
        deadline = time.monotonic() + 60
        while not sending.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sending.exists(), "the child never began to send"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    provider.initialize("s2", hermes_home=str(hermes_home), user_id="gus")
    try:
        started = time.monotonic()
        texts: list[str] = []
        while time.monotonic() - started < 10 and not texts:
            profile = json.loads(provider.handle_tool_call("tablestore_profile", {}))
            texts = [m["text"] for m in profile["memories"]]
            time.sleep(0.1)
        assert texts == ["Gus keeps bees on the roof"]
        assert provider.runtime.spool.stats(time.time()).depth == 0
    finally:
        provider.shutdown()


def test_recall_dates_a_memory_in_the_time_zone_hermes_is_set_to(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hermes dates its system prompt in its configured time zone; the recall block and the
    search tool dated memories in UTC, so a fact said in the evening west of UTC showed the
    next day, one the model's clock had not reached."""
    from datetime import datetime, timezone
    from zoneinfo import ZoneInfo

    # A zone whose day differs from UTC's right now, whatever the hour the test runs at.
    name = "Etc/GMT+12" if datetime.now(timezone.utc).hour < 12 else "Etc/GMT-14"
    with _provider_in_zone(hermes_home, kit, monkeypatch, name) as provider:
        provider.handle_tool_call(
            "tablestore_remember", {"content": "Gus had sushi tonight", "sync": True}
        )
        local = datetime.now(ZoneInfo(name)).strftime("%Y-%m-%d")
        assert local != datetime.now(timezone.utc).strftime("%Y-%m-%d")
        assert f"[{local}] Gus had sushi tonight" in provider.prefetch("sushi")
        found = json.loads(provider.handle_tool_call("tablestore_search", {"query": "sushi"}))
        assert found["results"][0]["date"] == local


@contextlib.contextmanager
def _provider_in_zone(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch, name: str
) -> Iterator[MemcoreMemoryProvider]:
    """Gus's provider on the embedded store, Hermes set to the time zone ``name``."""
    import hermes_time

    monkeypatch.setenv("HERMES_TIMEZONE", name)
    hermes_time.reset_cache()
    try:
        kit.write_config(hermes_home, backend="local", embedder="none")
        provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
        provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
        try:
            yield provider
        finally:
            provider.shutdown()
    finally:
        monkeypatch.delenv("HERMES_TIMEZONE")
        hermes_time.reset_cache()


@pytest.mark.parametrize("asked", ["2025-06-08T06:00:00", "2025-06-08", "2025-06-07T16:00:00Z"])
def test_the_search_tools_reference_time_is_read_and_shown_in_hermes_zone(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch, asked: str
) -> None:
    """With ``reference_time`` the search tool read a time without an offset as UTC and
    showed every ``date`` in UTC: for a user 14 hours ahead, passing the date the model
    sees made "yesterday" the wrong day, and the dates disagreed with the recall block's."""
    from datetime import datetime

    from memcore.scope import Scope
    from memcore.values import Message

    with _provider_in_zone(hermes_home, kit, monkeypatch, "Etc/GMT-14") as provider:
        service = provider.runtime.service(provider.runtime.handle.ready())
        scope = service.write_scope
        for run, said in (
            ("june7", "2025-06-07T09:00:00+14:00"),
            ("june8", "2025-06-08T04:00:00+14:00"),
        ):
            service.store.add_messages(
                service.store_name,
                Scope(scope.app_id, scope.tenant_id, scope.agent_id, run),
                [
                    Message(
                        "user",
                        "I went hiking with Sam",
                        timestamp=datetime.fromisoformat(said).timestamp(),
                    )
                ],
                sync=True,
            )
        found = json.loads(
            provider.handle_tool_call(
                "tablestore_search",
                {"query": "Where did I go hiking yesterday?", "reference_time": asked},
            )
        )
        shown = [(r["scope"].rsplit("/", 1)[-1], r["date"]) for r in found["results"]]
        assert shown == [("june7", "2025-06-07"), ("june8", "2025-06-08")], shown
