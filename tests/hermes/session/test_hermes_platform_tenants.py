"""One user id on two platforms is two people: each gets a tenant of its own.

Telegram's ``12345`` and Discord's ``12345`` used to share one tenant (the user id alone), so
each read, and could delete, the other's memories. Driven through Hermes' own
``MemoryManager`` on one shared SQLite file, as a gateway serving both platforms runs it.
Memories kept before (the tenant of the user id alone) are not read by either, are reported,
and ``hermes tablestore-mem migrate-tenant`` moves them by the platform their session names.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from memcore import Memory
from memcore.scope import Scope
from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite import SqliteMemoryStore

STORE = "hermes_mem"
USER = "12345"
SECRET = "My locker code is 4417"
TELEGRAM_RUN = "agent:main:telegram:dm:12345"
DISCORD_RUN = "agent:main:discord:dm:777"


@pytest.fixture
def db(hermes_home: Path, kit: Any, tmp_path: Path) -> Path:
    path = tmp_path / "shared.sqlite3"
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=str(path))
    return path


@pytest.fixture
def open_session(hermes_home: Path, kit: Any) -> Iterator[Callable[..., Any]]:
    """Start a Hermes session (the real MemoryManager) for USER on a platform."""
    from agent.memory_manager import MemoryManager

    managers: list[Any] = []

    def start(platform: str, user_id: str | None = USER, session: str = "s1", **more: Any) -> Any:
        mm = MemoryManager()
        mm.add_provider(MemcoreMemoryProvider(retry=kit.FAST_RETRY))
        mm.initialize_all(
            session_id=session,
            platform=platform,
            agent_context="primary",
            user_id=user_id,
            **{"gateway_session_key": f"agent:main:{platform}:dm:{session}", **more},
        )
        managers.append(mm)
        return mm

    yield start
    for mm in managers:
        mm.shutdown_all()


def call(mm: Any, tool: str, **args: Any) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(mm.handle_tool_call(tool, args))
    return answer


def provider_of(mm: Any) -> MemcoreMemoryProvider:
    provider = mm.get_provider("tablestore-mem")
    assert isinstance(provider, MemcoreMemoryProvider) and provider.runtime is not None
    return provider


def without_id(error: dict[str, Any], memory_id: str) -> str:
    return json.dumps(error).replace(memory_id, "<id>")


def test_the_same_user_id_on_two_platforms_is_two_tenants(
    db: Path, open_session: Callable[..., Any]
) -> None:
    telegram = open_session("telegram")
    written = call(telegram, "tablestore_remember", content=SECRET, sync=True)
    (memory_id,) = written["memory_ids"]
    assert provider_of(telegram).runtime.scope.tenant_id == "telegram:12345"  # type: ignore[union-attr]

    discord = open_session("discord")
    assert provider_of(discord).runtime.scope.tenant_id == "discord:12345"  # type: ignore[union-attr]
    found = call(discord, "tablestore_search", query="locker code 4417", top_k=50)["results"]
    listed = call(discord, "tablestore_profile", limit=100)["memories"]
    assert not found and not listed
    discord.on_turn_start(1, "what is my locker code?")
    assert "4417" not in discord.prefetch_all("what is my locker code?")
    # Every id-taking tool answers the other platform's id exactly as one that does not exist.
    missing = "0" * len(memory_id)
    for tool in ("tablestore_forget",):
        theirs = call(discord, tool, memory_id=memory_id)["error"]
        absent = call(discord, tool, memory_id=missing)["error"]
        assert theirs["code"] == "not_found"
        assert without_id(theirs, memory_id) == without_id(absent, missing)

    # Telegram's memory is untouched, and its own recall finds it.
    hits = call(telegram, "tablestore_search", query="locker code 4417")["results"]
    assert [h["id"] for h in hits] == [memory_id]


def test_tenant_scope_user_keeps_one_tenant_per_user_id(
    db: Path, hermes_home: Path, kit: Any, open_session: Callable[..., Any]
) -> None:
    # For one person reaching the agent from several platforms: the 0.1.0 behaviour, asked for.
    kit.write_config(
        hermes_home, backend="local", embedder="none", local_path=str(db), tenant_scope="user"
    )
    telegram = open_session("telegram")
    call(telegram, "tablestore_remember", content=SECRET, sync=True)
    discord = open_session("discord")
    assert provider_of(discord).runtime.scope.tenant_id == USER  # type: ignore[union-attr]
    assert call(discord, "tablestore_search", query="locker code 4417")["results"]


def test_a_session_without_a_user_is_the_default_tenant_on_every_platform(
    db: Path, open_session: Callable[..., Any]
) -> None:
    for platform in ("cli", "telegram"):
        scope = provider_of(open_session(platform, user_id=None)).runtime.scope  # type: ignore[union-attr]
        assert scope.tenant_id == "__default__"


def test_a_group_whose_sender_hermes_drops_is_the_chats_tenant_not_the_owners(
    db: Path, hermes_home: Path, kit: Any, open_session: Callable[..., Any]
) -> None:
    # Hermes observes a Telegram group as one shared session: it drops the sender (user_id
    # None) and keeps the chat. The owner's own CLI sessions are the default tenant.
    owner = open_session("cli", user_id=None)
    (private,) = call(owner, "tablestore_remember", content=SECRET, sync=True)["memory_ids"]
    group = open_session("telegram", user_id=None, chat_id="-100123", chat_type="group")
    assert tenant_of(group) == "telegram#chat:-100123"
    assert not call(group, "tablestore_search", query="locker code 4417", top_k=50)["results"]
    assert not call(group, "tablestore_profile", limit=100)["memories"]
    group.on_turn_start(1, "what is the locker code?")
    assert "4417" not in group.prefetch_all("what is the locker code?")
    missing = "0" * len(private)
    theirs = call(group, "tablestore_forget", memory_id=private)["error"]
    absent = call(group, "tablestore_forget", memory_id=missing)["error"]
    assert without_id(theirs, private) == without_id(absent, missing)
    # The group's own memory stays the group's, in its next session; another group has none.
    call(group, "tablestore_remember", content="The team offsite is in Porto", sync=True)
    again = open_session("telegram", user_id=None, chat_id="-100123", session="s2")
    assert call(again, "tablestore_search", query="where is the offsite")["results"]
    other = open_session("telegram", user_id=None, chat_id="-100999", session="s3")
    assert not call(other, "tablestore_search", query="where is the offsite", top_k=50)["results"]
    assert [m["text"] for m in call(owner, "tablestore_profile", limit=100)["memories"]] == [SECRET]
    # The same with the user id alone as the tenant; a configured tenant_id still wins.
    _configure(kit, hermes_home, db, tenant_scope="user")
    shared = open_session("telegram", user_id=None, chat_id="-100123", session="s4")
    assert tenant_of(shared) == "telegram#chat:-100123"
    _configure(kit, hermes_home, db, tenant_id="family")
    fixed = open_session("telegram", user_id=None, chat_id="-100123", session="s5")
    assert tenant_of(fixed) == "family"


@pytest.mark.parametrize("platform", ["   ", 7])
def test_a_blank_or_odd_platform_is_refused(db: Path, hermes_home: Path, platform: object) -> None:
    from memcore.errors import InvalidInput

    provider = MemcoreMemoryProvider()
    with pytest.raises(InvalidInput):
        provider.initialize("s1", hermes_home=str(hermes_home), platform=platform, user_id=USER)


def _keep_before(db: Path, text: str, run: str, user: str = USER) -> str:
    """A memory as 0.1.0 kept it: under the tenant of the user id alone."""
    store = SqliteMemoryStore(db)
    try:
        store.ensure_store(STORE)
        mem = Memory(store, scope=Scope("hermes", user, "hermes", run), store_name=STORE)
        (added,) = mem.add(text)
        return added
    finally:
        store.close()


def test_memories_of_before_are_reported_and_moved_by_their_platform(
    db: Path,
    open_session: Callable[..., Any],
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _keep_before(db, "I live in Lisbon", TELEGRAM_RUN)
    _keep_before(db, "My gamer tag is NightOwl", DISCORD_RUN)
    _keep_before(db, "I take my coffee black", "cli")

    with caplog.at_level(logging.WARNING, logger="memcore_hermes"):
        telegram = open_session("telegram")
        assert provider_of(telegram).runtime.wait_idle(10)  # type: ignore[union-attr]
    warned = [r.getMessage() for r in caplog.records if "migrate-tenant" in r.getMessage()]
    assert warned and "'12345'" in warned[0]
    assert not call(telegram, "tablestore_search", query="Where do I live? Lisbon")["results"]
    telegram.shutdown_all()

    code, report = kit.run_cli(capsys, "doctor", "--user-id", USER, "--platform", "telegram")
    assert report["legacy_tenant"]["read"] == "hermes/12345/*/*"

    code, planned = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER, "--dry-run")
    assert code == 0, planned
    assert planned["moved"] == {
        "hermes/discord:12345/*/*": {"memories": 1, "messages": 0},
        "hermes/telegram:12345/*/*": {"memories": 1, "messages": 0},
    }
    assert planned["left"] == 1 and planned["left_runs"] == ["cli"]

    code, moved = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER)
    assert code == 0, moved
    assert moved["moved"]["hermes/telegram:12345/*/*"] == {
        "memories": 1,
        "messages": 0,
        "added": 1,
        "present": 0,
        "messages_moved": 0,
        "deleted": 1,
    }
    assert moved["left"] == 1
    # The rest, whose session names no platform, only where the operator says.
    code, rest = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER, "--platform", "telegram")
    assert code == 0 and rest["left"] == 0 and rest["memories"] == 1

    telegram = open_session("telegram", session="s2")
    texts = {m["text"] for m in call(telegram, "tablestore_profile", limit=100)["memories"]}
    assert texts == {"I live in Lisbon", "I take my coffee black"}
    listed = call(open_session("discord"), "tablestore_profile", limit=100)["memories"]
    assert [m["text"] for m in listed] == ["My gamer tag is NightOwl"]
    assert [m["scope"] for m in listed] == [f"hermes/discord:12345/hermes/{DISCORD_RUN}"]
    code, after = kit.run_cli(capsys, "doctor", "--user-id", USER, "--platform", "telegram")
    assert "legacy_tenant" not in after


def test_a_migration_stopped_after_its_copies_is_finished_without_duplicates(
    db: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    old_id = _keep_before(db, "I live in Lisbon", TELEGRAM_RUN)
    store = SqliteMemoryStore(db)
    try:  # the copy landed; the delete of the original did not
        target = Scope("hermes", "telegram:12345", "hermes", TELEGRAM_RUN)
        Memory(store, scope=target, store_name=STORE).add("I live in Lisbon")
    finally:
        store.close()
    code, moved = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER)
    assert code == 0, moved
    share = moved["moved"]["hermes/telegram:12345/*/*"]
    assert (share["added"], share["present"], share["deleted"]) == (0, 1, 1)
    code, listed = kit.run_cli(capsys, "list", "--user-id", USER, "--platform", "telegram", "--all")
    assert [m["text"] for m in listed["items"]] == ["I live in Lisbon"]
    assert listed["items"][0]["id"] != old_id


@pytest.mark.parametrize("args", [["list", "--user-id", USER], ["list", "--platform", "telegram"]])
def test_a_user_id_needs_its_platform_on_the_command_line(
    db: Path, kit: Any, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, answer = kit.run_cli(capsys, *args)
    assert code == 2 and answer["error"]["field"] == "platform"


def test_migrate_tenant_refuses_where_tenants_are_not_per_platform(
    db: Path, hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.write_config(
        hermes_home, backend="local", embedder="none", local_path=str(db), tenant_scope="user"
    )
    code, answer = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER)
    assert code == 2 and answer["error"]["field"] == "tenant_scope"
    code, answer = kit.run_cli(capsys, "list", "--user-id", USER, "--platform", "telegram")
    assert code == 2 and answer["error"]["field"] == "platform"


@pytest.mark.parametrize(
    ("run", "platform"),
    [
        (TELEGRAM_RUN, "telegram"),
        ("agent:coder:discord:group:9:12345", "discord"),
        ("agent:main:local:dm:1", "cli"),  # Hermes names its local platform "cli" to memory
        ("agent:main:telegram", None),
        ("cli", None),
        ("s1", None),
        ("agent:main::dm:1", None),
    ],
)
def test_the_platform_a_run_names(run: str, platform: str | None) -> None:
    from memcore.scope import normalize_segment
    from memcore_hermes.commands.migrating import run_platform

    assert run_platform(normalize_segment(run)) == platform


@pytest.mark.parametrize("args", [["--user-id", "   "], ["--user-id", USER, "--platform", " "]])
def test_migrate_tenant_refuses_a_blank_user_or_platform(
    db: Path, kit: Any, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    _keep_before(db, "I live in Lisbon", TELEGRAM_RUN)  # one that would not need --platform
    code, answer = kit.run_cli(capsys, "migrate-tenant", *args)
    assert code == 2 and answer["error"]["field"] == "tenant_id"
    code, listed = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER, "--dry-run")
    assert listed["memories"] == 1  # nothing moved


def test_migrate_tenant_refuses_a_user_id_that_is_a_platform_users_tenant(
    db: Path, kit: Any, capsys: pytest.CaptureFixture[str], open_session: Callable[..., Any]
) -> None:
    # "telegram:12345" as a user id names the tenant Telegram's 12345 uses now: a migration
    # for it would move that user's memories to "telegram:telegram:12345", out of their reach.
    telegram = open_session("telegram")
    call(telegram, "tablestore_remember", content=SECRET, sync=True)
    telegram.shutdown_all()
    for extra in (["--dry-run"], []):
        code, answer = kit.run_cli(capsys, "migrate-tenant", "--user-id", "telegram:12345", *extra)
        assert code == 2 and answer["error"]["field"] == "user_id", answer
    listed = call(open_session("telegram", session="s2"), "tablestore_profile", limit=100)
    assert [m["text"] for m in listed["memories"]] == [SECRET]


def test_a_superseded_memory_stays_as_history_and_is_not_made_current_again(
    db: Path, kit: Any, capsys: pytest.CaptureFixture[str], open_session: Callable[..., Any]
) -> None:
    import sqlite3

    old = _keep_before(db, "I live in Lisbon", TELEGRAM_RUN)
    new = _keep_before(db, "I moved to Porto", TELEGRAM_RUN)
    conn = sqlite3.connect(db)
    try:  # as a dream pass leaves an outdated fact
        conn.execute(
            "UPDATE memories SET superseded_by = ?, superseded_how = 'updated' WHERE id = ?",
            (new, old),
        )
        conn.commit()
    finally:
        conn.close()
    code, moved = kit.run_cli(capsys, "migrate-tenant", "--user-id", USER)
    assert code == 0, moved
    assert moved["superseded_left"] == 1 and moved["left"] == 0
    assert moved["moved"]["hermes/telegram:12345/*/*"]["memories"] == 1

    telegram = open_session("telegram")
    listed = call(telegram, "tablestore_profile", limit=100, include_superseded=True)
    assert [m["text"] for m in listed["memories"]] == ["I moved to Porto"]
    hits = call(telegram, "tablestore_search", query="where do I live Lisbon Porto")["results"]
    assert "I live in Lisbon" not in [h["text"] for h in hits]
    # Only history is left behind: nothing to warn about, nothing for doctor to report.
    code, report = kit.run_cli(capsys, "doctor", "--user-id", USER, "--platform", "telegram")
    assert "legacy_tenant" not in report


# Signal: user_id is the phone number when the sender shares it, the account UUID when not;
# user_id_alt is the UUID. Feishu: user_id is the tenant user id or the per-app open_id, by
# the bot's permissions; user_id_alt is the union_id. Hermes keys participants on the second.
PHONE, UUID = "+15550100", "8c1f3a52-7f0e-4c1b-9a3e-2d6b5c4e1f00"


def tenant_of(mm: Any) -> str:
    return provider_of(mm).runtime.scope.tenant_id  # type: ignore[union-attr]


def test_signals_uuid_names_the_user_whether_or_not_the_number_is_shared(
    db: Path, open_session: Callable[..., Any]
) -> None:
    shared = open_session("signal", user_id=PHONE, user_id_alt=UUID)
    assert tenant_of(shared) == f"signal:{UUID}"
    call(shared, "tablestore_remember", content=SECRET, sync=True)
    # The same person with the number hidden: Hermes' user_id is now the UUID itself.
    hidden = open_session("signal", user_id=UUID, user_id_alt=UUID, session="s2")
    assert tenant_of(hidden) == f"signal:{UUID}"
    assert call(hidden, "tablestore_search", query="locker code 4417")["results"]
    # Feishu: the open_id (no permission for the tenant user id) then the user id, one union_id.
    first = open_session("feishu", user_id="ou_7d8a", user_id_alt="on_c3f1", session="s3")
    call(first, "tablestore_remember", content="I sit on floor 9", sync=True)
    later = open_session("feishu", user_id="u_5b2e", user_id_alt="on_c3f1", session="s4")
    assert tenant_of(later) == "feishu:on_c3f1"
    assert call(later, "tablestore_search", query="which floor do I sit on")["results"]
    # Google Chat: the email address, then the same account renamed; users/... stays.
    mail = open_session("google_chat", user_id="ana@x.org", user_id_alt="users/1170", session="s5")
    call(mail, "tablestore_remember", content="My desk is by the window", sync=True)
    renamed = open_session("google_chat", user_id="ana.b@x.org", user_id_alt="users/1170")
    assert tenant_of(renamed) == tenant_of(mail) != tenant_of(later)
    assert call(renamed, "tablestore_search", query="where is my desk window")["results"]


def test_another_signal_user_does_not_read_the_uuids_tenant(
    db: Path, open_session: Callable[..., Any]
) -> None:
    mine = open_session("signal", user_id=PHONE, user_id_alt=UUID)
    call(mine, "tablestore_remember", content=SECRET, sync=True)
    # A sender without a UUID keeps the user id, and a phone number is no one's UUID.
    other = open_session("signal", user_id="+15550199", session="s2")
    assert tenant_of(other) == "signal:+15550199"
    assert not call(other, "tablestore_search", query="locker code 4417", top_k=50)["results"]


def test_dingtalks_staff_id_does_not_name_the_tenant(
    db: Path, open_session: Callable[..., Any]
) -> None:
    # A staff id is unique only within one organisation: two organisations' "manager01" are
    # two people, told apart by DingTalk's own sender ids.
    first = open_session("dingtalk", user_id="$:LWCP_v1:$aaa", user_id_alt="manager01")
    call(first, "tablestore_remember", content=SECRET, sync=True)
    other = open_session(
        "dingtalk", user_id="$:LWCP_v1:$bbb", user_id_alt="manager01", session="s2"
    )
    assert tenant_of(other) == "dingtalk:$:LWCP_v1:$bbb" != tenant_of(first)
    assert not call(other, "tablestore_search", query="locker code 4417", top_k=50)["results"]


@pytest.mark.parametrize("alt", ["", "   ", None, 7])
def test_a_blank_or_odd_alternate_id_leaves_the_user_id(
    db: Path, open_session: Callable[..., Any], alt: object
) -> None:
    assert tenant_of(open_session("signal", user_id=PHONE, user_id_alt=alt)) == f"signal:{PHONE}"


def test_tenant_scope_user_keeps_the_user_id_not_the_alternate(
    db: Path, hermes_home: Path, kit: Any, open_session: Callable[..., Any]
) -> None:
    # One phone number on Signal and on BlueBubbles, shared on purpose: the 0.1.0 tenant.
    kit.write_config(
        hermes_home, backend="local", embedder="none", local_path=str(db), tenant_scope="user"
    )
    assert tenant_of(open_session("signal", user_id=PHONE, user_id_alt=UUID)) == PHONE


@pytest.mark.parametrize(
    ("platform", "user", "alt"),
    [
        ("signal", PHONE, UUID),
        ("signal", UUID, UUID),  # the number hidden: the UUID is the user id
        ("feishu", "ou_7d8a", "on_c3f1"),
    ],
)
def test_memories_of_before_move_to_the_tenant_of_the_alternate_id(
    db: Path,
    kit: Any,
    open_session: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    platform: str,
    user: str,
    alt: str,
) -> None:
    """Sessions on these platforms name their tenant by user_id_alt, which the old tenant does
    not know. Moved by the user id alone, the memories would land in a tenant no session reads
    (and the old tenant, emptied, would no longer be reported): nothing moves. The command the
    warning prints moves them where the platform's sessions read."""
    # 0.1.0 kept them under the user id alone.
    _keep_before(db, "I live in Lisbon", f"agent:main:{platform}:dm:1", user)
    _keep_before(db, SECRET, "cli", user)
    with caplog.at_level(logging.WARNING, logger="memcore_hermes"):
        session = open_session(platform, user_id=user, user_id_alt=alt)
        assert provider_of(session).runtime.wait_idle(10)  # type: ignore[union-attr]
    (warned,) = [r.getMessage() for r in caplog.records if "migrate-tenant" in r.getMessage()]
    command = f"--user-id {user} --user-id-alt {platform}={alt}"
    assert command in warned
    session.shutdown_all()

    for extra in (["--dry-run"], [], ["--platform", platform]):
        code, answer = kit.run_cli(capsys, "migrate-tenant", "--user-id", user, *extra)
        assert code == 2 and answer["error"]["field"] == "user_id_alt", answer
        assert f"--user-id-alt {platform}=ID" in answer["error"]["message"]
    for bad in (alt, f"telegram={alt}", f"{platform}={alt} {platform}=other"):
        options = [x for value in bad.split() for x in ("--user-id-alt", value)]
        code, answer = kit.run_cli(capsys, "migrate-tenant", "--user-id", user, *options)
        assert code == 2 and answer["error"]["field"] == "user_id_alt", answer
    code, moved = kit.run_cli(capsys, "migrate-tenant", *command.split())
    assert code == 0, moved
    share = moved["moved"][f"hermes/{platform}:{alt}/*/*"]
    # The memory of a run that names no platform stays: the alternate id says nothing of it.
    assert share["added"] == 1 and moved["left"] == 1 and moved["left_runs"] == ["cli"]
    code, rest = kit.run_cli(capsys, "migrate-tenant", *command.split(), "--platform", platform)
    assert code == 0 and rest["moved"][f"hermes/{platform}:{alt}/*/*"]["added"] == 1
    again = open_session(platform, user_id=f"{user}-renamed", user_id_alt=alt, session="s2")
    texts = {m["text"] for m in call(again, "tablestore_profile", limit=100)["memories"]}
    assert texts == {"I live in Lisbon", SECRET}


# The message log: the turns a session records, which ``recall_neighbours`` shows around a hit.
TURNS = [
    ("Which trail should we take on Saturday?", "Take the ridge trail above Lake Bled."),
    ("I booked the mountain hut near Triglav for the night", "The hut serves dinner until eight."),
]
HUT = "Where is the mountain hut I booked?"
MOVED_TO = "hermes/telegram:12345/*/*"
#: A tenant's message log: (run, role, content, id) of each message.
Log = list[tuple[str, str, str, str | None]]


def _talk_before(
    open_session: Callable[..., Any], user: str = USER, turns: list[tuple[str, str]] = TURNS
) -> None:
    """Turns said on Telegram through Hermes and kept as 0.1.0 kept them (the configuration
    says ``tenant_scope: user``): memories and messages under the tenant of the user id alone."""
    mm = open_session("telegram", user_id=user)
    for said, answered in turns:
        mm.sync_all(said, answered, session_id="s1")
    assert mm.flush_pending(30)  # Hermes' own worker runs sync_turn after sync_all returned
    runtime = provider_of(mm).runtime
    assert runtime is not None and runtime.flush(30) is not False and runtime.wait_idle(30)
    mm.shutdown_all()


def _configure(kit: Any, home: Path, db: Path, **more: Any) -> None:
    kit.write_config(home, backend="local", embedder="none", local_path=str(db), **more)


def _log(db: Path, tenant: str) -> Log:
    """Every message the tenant logs: (run, role, content, id), each run in the order said."""
    from memcore.paging import every_item
    from memcore.scope import ScopePattern

    store = SqliteMemoryStore(db)
    try:
        runs = store.message_counts(STORE, ScopePattern("hermes", tenant, "*", "*"))
        return [
            (scope.run_id, m.role, m.content, m.id)
            for scope in runs
            for m in every_item(lambda t, s=scope: store.list_messages(STORE, s, next_token=t))
        ]
    finally:
        store.close()


def _shows_the_neighbours(mm: Any) -> None:
    """A session on the new tenant recalls the hut with the turns said around it."""
    block = mm.prefetch_all(HUT, session_id="s2")
    assert "mountain hut near Triglav" in block
    assert "before, assistant: Take the ridge trail above Lake Bled." in block
    # The turn after it is recalled as a memory of its own, so it is shown once, as that.
    assert block.count("The hut serves dinner until eight.") == 1
    [hit] = call(mm, "tablestore_search", query=HUT, top_k=1, neighbours=1)["results"]
    assert hit["text"] == TURNS[1][0]
    assert [t["content"] for t in hit["neighbours"]["before"]] == [TURNS[0][1]]
    assert [t["content"] for t in hit["neighbours"]["after"]] == [TURNS[1][1]]


class Before(NamedTuple):
    """USER's log and another user's, as said before the migration; ``log`` reads one now."""

    said: Log
    others: Log
    log: Callable[[str], Log]


@pytest.fixture
def before(db: Path, hermes_home: Path, kit: Any, open_session: Callable[..., Any]) -> Before:
    """USER's turns and another user's, kept as 0.1.0 kept them; then tenants per platform,
    with ``recall_neighbours: 1``."""
    _configure(kit, hermes_home, db, tenant_scope="user")
    _talk_before(open_session)
    _talk_before(open_session, "777", [("My bike lock code is 2231", "Noted, 2231.")])
    said, others = _log(db, USER), _log(db, "777")
    assert len(said) == 4 and len(others) == 2
    _configure(kit, hermes_home, db, recall_neighbours=1)
    return Before(said, others, lambda tenant: _log(db, tenant))


@pytest.fixture
def migrate(
    kit: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, dict[str, Any]]]:
    """``migrate-tenant --user-id USER`` and more arguments; ``failing`` names a
    ``MemoryService`` operation (``move_messages``: its logs' move) that fails as a store
    gone away would, stopping it there."""
    from memcore.errors import Unavailable
    from memcore.service import MemoryService
    from memcore.service.logs import Logs

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise Unavailable("the store went away", retryable=True)

    def run(*extra: str, failing: str | None = None) -> tuple[int, dict[str, Any]]:
        with monkeypatch.context() as patched:
            if failing is not None:
                if failing == "move_messages":
                    patched.setattr(Logs, "move", gone)
                else:
                    patched.setattr(MemoryService, failing, gone)
            answer: tuple[int, dict[str, Any]] = kit.run_cli(
                capsys, "migrate-tenant", "--user-id", USER, *extra
            )
            return answer

    return run


def test_the_message_log_moves_with_the_memories_so_a_hit_keeps_its_neighbours(
    open_session: Callable[..., Any], migrate: Callable[..., Any], before: Before
) -> None:
    code, planned = migrate("--dry-run")
    assert code == 0, planned
    assert planned["messages"] == 4 and planned["messages_left"] == 0
    assert planned["moved"] == {MOVED_TO: {"memories": 4, "messages": 4}}
    assert before.log(USER) == before.said  # a dry run moves nothing

    code, moved = migrate()
    assert code == 0, moved
    share = moved["moved"][MOVED_TO]
    assert (share["added"], share["messages_moved"], share["deleted"]) == (4, 4, 4)
    assert "messages_note" not in moved
    assert before.log("telegram:12345") == before.said  # in the order said, with their ids
    assert before.log(USER) == []
    assert before.log("777") == before.others  # another tenant's turns are not touched
    _shows_the_neighbours(open_session("telegram", session="s2"))


@pytest.mark.parametrize("stop", ["move_messages", "forget"])
def test_a_migration_stopped_midway_moves_each_message_once(
    open_session: Callable[..., Any], migrate: Callable[..., Any], before: Before, stop: str
) -> None:
    """Stopped after the copies (the log not moved yet) or after the log moved (the
    originals not deleted yet), the next run finishes and no message is there twice."""
    code, stopped = migrate(failing=stop)
    assert code != 0 and stopped["error"]["code"] == "unavailable"

    code, moved = migrate()
    assert code == 0, moved
    share = moved["moved"][MOVED_TO]
    assert (share["added"], share["present"], share["deleted"]) == (0, 4, 4)
    assert share["messages_moved"] == (4 if stop == "move_messages" else 0)
    assert before.log("telegram:12345") == before.said and before.log(USER) == []
    assert before.log("777") == before.others
    _shows_the_neighbours(open_session("telegram", session="s2"))


@pytest.fixture
def on_tablestore(
    hermes_home: Path, kit: Any, emulator: Any, open_session: Callable[..., Any]
) -> None:
    """The turns of before on the TableStore emulator, then per-platform tenants configured."""
    kit.emulator_home(hermes_home, emulator, tenant_scope="user")
    _talk_before(open_session)
    kit.emulator_home(hermes_home, emulator)


def test_where_the_log_cannot_move_the_memories_move_and_the_answer_says_so(
    on_tablestore: None, open_session: Callable[..., Any], migrate: Any
) -> None:
    for extra in (["--dry-run"], []):
        code, answer = migrate(*extra)
        assert code == 0, answer
        assert answer["messages"] is None
        assert answer["messages_note"].startswith("the message log was not moved")
        assert "messages" not in answer["moved"][MOVED_TO]
    assert answer["moved"][MOVED_TO]["added"] == answer["moved"][MOVED_TO]["memories"] > 0
    listed = call(open_session("telegram", session="s2"), "tablestore_profile", limit=100)
    assert TURNS[1][0] in [m["text"] for m in listed["memories"]]


def test_a_migration_stopped_before_its_deletes_copies_nothing_twice_on_tablestore(
    on_tablestore: None, open_session: Callable[..., Any], migrate: Any
) -> None:
    # The copies of the stopped run are found, and only the originals are deleted.
    code, stopped = migrate(failing="forget")
    assert code != 0 and stopped["error"]["code"] == "unavailable"
    code, moved = migrate()
    assert code == 0, moved
    share = moved["moved"][MOVED_TO]
    assert share["added"] == 0 and share["present"] == share["deleted"] == share["memories"] > 0
    listed = call(open_session("telegram", session="s2"), "tablestore_profile", limit=100)
    texts = [m["text"] for m in listed["memories"]]
    assert len(texts) == len(set(texts)) == share["memories"]
    code, again = migrate()
    assert code == 0 and again["memories"] == 0 and again["moved"] == {}


def test_copies_a_stopped_run_left_are_found_on_a_store_that_keeps_a_text_twice() -> None:
    """A store that adds a text again when asked (TableStore's dedupe is its extraction's, and
    not documented): the next run copies only what the target does not hold."""
    from memcore.scope import SessionContext, resolve_scope
    from memcore.service import MemoryService
    from memcore.testing import InMemoryMemoryStore
    from memcore_hermes.commands.migrating import migrate_tenant

    class KeepsTwice(InMemoryMemoryStore):
        def add_text(self, store: str, scope: Scope, text: str, **kw: Any) -> Any:
            self._stores[store].by_content.clear()  # no dedupe: each add is a new memory
            return super().add_text(store, scope, text, **kw)

    store = KeepsTwice()
    store.ensure_store(STORE)

    def open_service(context: SessionContext) -> MemoryService:
        return MemoryService(store, store_name=STORE, scope=resolve_scope(context, app_id="hermes"))

    legacy = open_service(SessionContext(user_id=USER, session_id=TELEGRAM_RUN))
    for text in ("I live in Lisbon", "I take my coffee black"):
        legacy.remember(text, sync=True)
    # As an older version may have kept one: a recalled block inside, which a write cuts out.
    block = "<recalled-memory>\n- I live in Lisbon\n</recalled-memory>\nMy dog is Rex"
    store.add_text(STORE, legacy.write_scope, block, sync=True)
    target = open_service(
        SessionContext(user_id=USER, session_id=TELEGRAM_RUN, platform="telegram")
    )
    for copy in ("I live in Lisbon", "My dog is Rex"):  # the copies a stopped run left
        target.remember(copy, sync=True)
    assert len(list(target.every_memory())) == 2

    moved = migrate_tenant(open_service, USER)["moved"][MOVED_TO]
    assert (moved["added"], moved["present"], moved["deleted"]) == (1, 2, 3)
    texts = sorted(m.text for m in target.every_memory())
    assert texts == ["I live in Lisbon", "I take my coffee black", "My dog is Rex"]
    assert list(legacy.every_memory()) == []


def _gateway_session(
    open_session: Callable[..., Any], session: str, **source: Any
) -> tuple[Any, str]:
    """A session as Hermes' gateway starts one for ``source`` (its own session key), and the
    key; ``thread_sessions_per_user`` and ``group_sessions_per_user`` as Hermes takes them."""
    from gateway.config import Platform
    from gateway.session import SessionSource, build_session_key

    rules = {
        k: source.pop(k)
        for k in ("thread_sessions_per_user", "group_sessions_per_user")
        if k in source
    }
    platform = source.pop("platform")
    key = build_session_key(SessionSource(platform=Platform(platform), **source), **rules)
    mm = open_session(
        platform,
        user_id=source.get("user_id"),
        session=session,
        chat_id=source.get("chat_id"),
        chat_type=source.get("chat_type"),
        thread_id=source.get("thread_id"),
        gateway_session_key=key,
    )
    return mm, key


def _alices_own_memory(open_session: Callable[..., Any]) -> Any:
    """Alice's session in her one-to-one Slack chat with the agent, holding SECRET."""
    dm, _ = _gateway_session(
        open_session, "dm", platform="slack", chat_id="D1", chat_type="dm", user_id="UA"
    )
    call(dm, "tablestore_remember", content=SECRET, sync=True)
    assert tenant_of(dm) == "slack:UA"
    return dm


def test_a_thread_everyone_shares_is_the_chats_tenant_not_its_first_speakers(
    db: Path, open_session: Callable[..., Any]
) -> None:
    dm = _alices_own_memory(open_session)
    # Alice opens a thread in a channel: Hermes shares threads by default, so Bob's turns are
    # served by the agent built for her. Its memory is the channel's, not hers.
    thread, key = _gateway_session(
        open_session,
        "t1",
        platform="slack",
        chat_id="C1",
        chat_type="channel",
        user_id="UA",
        thread_id="171.5",
    )
    assert not key.endswith(":UA") and tenant_of(thread) == "slack#chat:C1"
    assert not call(thread, "tablestore_search", query="locker code 4417", top_k=50)["results"]
    thread.on_turn_start(1, "[Bob] what is Alice's locker code?")
    assert "4417" not in thread.prefetch_all("[Bob] what is Alice's locker code?")
    call(thread, "tablestore_remember", content="Bob is allergic to peanuts", sync=True)
    mine = {m["text"] for m in call(dm, "tablestore_profile", limit=100)["memories"]}
    assert mine == {SECRET}  # what Bob said is not kept as Alice's
    # Where Hermes isolates people (threads per user, or a group without a thread), each is
    # their own tenant, as before.
    for session, extra in (
        ("t2", {"thread_id": "171.5", "thread_sessions_per_user": True}),
        ("g1", {}),
    ):
        own, key = _gateway_session(
            open_session,
            session,
            platform="slack",
            chat_id="C1",
            chat_type="channel",
            user_id="UA",
            **extra,
        )
        assert key.endswith(":UA") and tenant_of(own) == "slack:UA"
    shared, _ = _gateway_session(
        open_session,
        "g2",
        platform="slack",
        chat_id="C1",
        chat_type="channel",
        user_id="UA",
        group_sessions_per_user=False,
    )
    assert tenant_of(shared) == "slack#chat:C1"


def test_a_whatsapp_member_is_one_tenant_in_the_form_hermes_keys_them(
    db: Path, open_session: Callable[..., Any]
) -> None:
    own, key = _gateway_session(
        open_session,
        "w1",
        platform="whatsapp",
        chat_id="g1@g.us",
        chat_type="group",
        user_id="15550100:12@s.whatsapp.net",
    )
    assert key.endswith(":15550100")
    # One person whatever form the bridge gives: the tenant follows the key's canonical number.
    assert tenant_of(own) == "whatsapp:15550100"
    phone, _ = _gateway_session(
        open_session,
        "w2",
        platform="whatsapp",
        chat_id="15550100@s.whatsapp.net",
        chat_type="dm",
        user_id="15550100@s.whatsapp.net",
    )
    assert tenant_of(phone) == "whatsapp:15550100"


def test_a_slack_group_dm_is_the_chats_tenant_not_its_first_speakers(
    db: Path, open_session: Callable[..., Any]
) -> None:
    # Slack's adapter gives a group DM (an mpim, id G... or C...) chat_type "dm", as it does a
    # one-to-one IM (id D...), and Hermes keys a DM by its chat alone: everyone in the group DM
    # is served by the agent built for whoever spoke first.
    own = _alices_own_memory(open_session)
    for session, chat, thread in (("m1", "G01", None), ("m2", "C02", "171.5")):
        group, key = _gateway_session(
            open_session,
            session,
            platform="slack",
            chat_id=chat,
            chat_type="dm",
            user_id="UA",
            thread_id=thread,
        )
        assert not key.endswith(":UA") and tenant_of(group) == f"slack#chat:{chat}"
        assert not call(group, "tablestore_search", query="locker code 4417", top_k=50)["results"]
        call(group, "tablestore_remember", content="Bob is allergic to peanuts", sync=True)
    mine = {m["text"] for m in call(own, "tablestore_profile", limit=100)["memories"]}
    assert mine == {SECRET}


@pytest.mark.parametrize("stand_in", ["1087968824", "136817688", "777000"])
def test_telegrams_stand_in_sender_is_the_chats_tenant_not_one_shared_by_every_group(
    db: Path, open_session: Callable[..., Any], stand_in: str
) -> None:
    # Telegram gives a message sent on behalf of a chat a stand-in sender (Bot API,
    # Message.from_user): GroupAnonymousBot for an anonymous admin, Channel_Bot for a message
    # sent as a channel, 777000 for a linked channel's post. Hermes keys the group session by
    # it, but one id in every group is not one person.
    sessions = [
        _gateway_session(
            open_session,
            f"g{n}",
            platform="telegram",
            chat_id=chat,
            chat_type="group",
            user_id=stand_in,
        )[0]
        for n, chat in enumerate(("-100111", "-100222"))
    ]
    call(sessions[0], "tablestore_remember", content=SECRET, sync=True)
    assert [tenant_of(s) for s in sessions] == ["telegram#chat:-100111", "telegram#chat:-100222"]
    assert not call(sessions[1], "tablestore_search", query="locker code 4417", top_k=50)["results"]


@pytest.mark.parametrize("stand_in", ["1087968824", "777000"])
def test_a_stand_in_sender_without_a_chat_runs_without_memory_not_in_the_default_tenant(
    db: Path, open_session: Callable[..., Any], stand_in: str
) -> None:
    """Without a chat_id, Telegram's stand-in sender had no tenant but the default one: the
    owner's, whose memories it recalled."""
    owner = open_session("cli", user_id=None, session="owner")
    call(owner, "tablestore_remember", content=SECRET, sync=True)
    assert tenant_of(owner) == "__default__"
    anonymous = open_session("telegram", user_id=stand_in, session="anonymous")
    assert anonymous.get_provider("tablestore-mem").runtime is None
    assert anonymous.prefetch_all("locker code 4417", session_id="anonymous") == ""
    refused = call(anonymous, "tablestore_search", query="locker code 4417")
    assert refused["error"]["field"] == "chat_id" and SECRET not in json.dumps(refused)


def test_whatsapp_memories_of_before_move_to_the_tenant_sessions_read(
    db: Path, kit: Any, open_session: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    jid = "15550100@s.whatsapp.net"  # as the bridge gave it, and 0.1.0 kept it
    _keep_before(db, "I live in Lisbon", "agent:main:whatsapp:dm:15550100", jid)
    code, moved = kit.run_cli(capsys, "migrate-tenant", "--user-id", jid)
    assert code == 0 and list(moved["moved"]) == ["hermes/whatsapp:15550100/*/*"], moved
    session, _ = _gateway_session(
        open_session, "w3", platform="whatsapp", chat_id=jid, chat_type="dm", user_id=jid
    )
    assert [m["text"] for m in call(session, "tablestore_profile", limit=100)["memories"]] == [
        "I live in Lisbon"
    ]
