"""Every id-taking entry point, attacked by a second tenant, on every backend.

The victim holds memories, a write task, a dream task with one applied and one proposed
action, and an operator's dream task over the whole app. The attacker (another tenant, same
store) hands every one of those ids to every public entry point that takes an id: the library
(``Memory``, ``AsyncMemory``), the ``memcore`` CLI and the Hermes tools. Each answer must be
exactly the answer for an id that does not exist (same error, same message, same exit code,
same JSON, with the id itself swapped), listings must not name the victim's objects, and the
victim's objects must be unchanged afterwards. Runs on the fake, SQLite, and TableStore over
the loopback emulator.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memcore import AsyncMemory, Memory
from memcore.errors import MemcoreError, NotFound
from memcore.ports import MemoryStore
from memcore.scope import Scope, ScopePattern
from memcore.service import MemoryService

STORE = "hermes_mem"
VICTIM = Scope("hermes", "victim", "hermes", "run1")
ATTACKER = Scope("hermes", "attacker", "hermes", "run1")
PAIRS = (
    ("Likes green tea", "likes  green TEA"),
    ("Owns a red bicycle", "owns a  RED bicycle"),
)
ID = "<ID>"
EMULATOR_AK = "xt-ak"
EMULATOR_SK = "xt-secret-value"


# -- backends ----------------------------------------------------------------------------------
class Backend:
    """``open()`` gives a new handle on one shared set of data (the fake: the same object)."""

    def __init__(self, name: str, open_store: Callable[[], MemoryStore], server: Any = None):
        self.name = name
        self._open = open_store
        self.server = server
        self.opened: list[MemoryStore] = []
        self.path: Path | None = None

    def open(self) -> MemoryStore:
        store = self._open()
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            with contextlib.suppress(Exception):
                store.close()


@pytest.fixture(params=["fake", "sqlite", "tablestore"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "fake":
        from memcore.testing import InMemoryMemoryStore

        fake = InMemoryMemoryStore()
        made = Backend("fake", fake.reopen)  # one object: a new handle reopens it
    elif request.param == "sqlite":
        from memcore_sqlite import SqliteMemoryStore

        path = tmp_path / "shared.db"
        made = Backend("sqlite", lambda: SqliteMemoryStore(path))
        made.path = path
    else:
        from memcore_tablestore.emulator import EmulatorServer
        from memcore_tablestore.testing import store_for

        server = EmulatorServer(_fake(), access_key_id=EMULATOR_AK, access_key_secret=EMULATOR_SK)
        server.start()
        request.addfinalizer(server.stop)
        made = Backend("tablestore", lambda: store_for(server, timeout=10.0), server)
    yield made
    made.close()


def _fake() -> MemoryStore:
    from memcore.testing import InMemoryMemoryStore

    return InMemoryMemoryStore()


# -- the victim's objects ----------------------------------------------------------------------
class Victim:
    """Ids of everything the victim owns, and a snapshot of its state."""

    def __init__(self, service: MemoryService, operator_task: str) -> None:
        self.service = service
        memories = service.store.list_memories(STORE, VICTIM.tenant_pattern(), limit=100).items
        self.memory_ids = [m.id for m in memories]
        self.write_task = ""
        self.dream_task = ""
        self.applied_action = ""
        self.proposed_action = ""
        self.operator_task = operator_task

    @property
    def ids(self) -> list[str]:
        """Every id the victim's objects have, of any kind."""
        return [
            *self.memory_ids,
            self.write_task,
            self.dream_task,
            self.applied_action,
            self.proposed_action,
            self.operator_task,
        ]

    def snapshot(self) -> Any:
        store = self.service.store
        memories = sorted(
            (m.id, m.text, dict(m.metadata), str(m.scope))
            for m in store.list_memories(STORE, VICTIM.tenant_pattern(), limit=100).items
        )
        task = store.get_dream_task(STORE, self.dream_task)
        actions = sorted(
            (a.id, a.action, a.status)
            for a in store.list_dream_actions(STORE, self.dream_task, limit=100).items
        )
        operator = store.get_dream_task(STORE, self.operator_task)
        write = store.get_task(STORE, self.write_task)
        return memories, task.status, actions, operator.status, (write.id, write.status)


def seed_victim(store: MemoryStore, scope: Scope = VICTIM) -> Victim:
    """Two duplicate pairs (two MERGE proposals: one applied, one left), a write task, and an
    operator's dream task over the whole app; set up through the store port itself."""
    store.ensure_store(STORE)
    for pair in PAIRS:
        for text in pair:
            store.add_text(STORE, scope, text, metadata={"owner": "victim"}, sync=True)
    receipt = store.add_text(STORE, scope, "victim's write with a task id", sync=True)
    task = store.create_dream_task(STORE, scope.tenant_pattern(), apply_mode="proposal")
    actions = store.list_dream_actions(STORE, task.id).items
    assert len(actions) == 2, actions
    [applied] = store.apply_dream_actions(STORE, task.id, [actions[0].id])
    assert applied.status == "applied"
    operator = store.create_dream_task(STORE, ScopePattern("hermes", "*", "*", "*"))
    victim = Victim(MemoryService(store, store_name=STORE, scope=scope), operator.id)
    assert receipt.task_id
    victim.write_task = receipt.task_id
    victim.dream_task = task.id
    victim.applied_action = actions[0].id
    victim.proposed_action = actions[1].id
    return victim


def missing_like(value: str) -> str:
    """An id of the same length and alphabet that no object has."""
    if all(c in "0123456789abcdef" for c in value):
        return secrets.token_hex(len(value) // 2 + 1)[: len(value)]
    return ("zz" + secrets.token_hex(len(value)))[: len(value)]


def scrub(value: Any, *ids: str) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    for i in ids:
        text = text.replace(i, ID)
    return text


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        value = call()
    except MemcoreError as exc:
        return type(exc).__name__, exc.to_dict()
    if hasattr(value, "__attrs_attrs__"):
        value = _plain(value)
    elif isinstance(value, list):
        value = [_plain(v) for v in value]
    return "ok", value


def _plain(value: Any) -> Any:
    import attrs

    return attrs.asdict(value) if attrs.has(type(value)) else value


# -- the findings of issue 28, one test each ----------------------------------------------------
def test_finding_another_tenants_dream_actions_are_not_readable(backend: Backend) -> None:
    """``Memory.dream_actions`` listed any task's proposals (texts, memory ids in reasons)."""
    victim = seed_victim(backend.open())
    attacker = Memory(backend.open(), scope=ATTACKER, store_name=STORE)
    with pytest.raises(NotFound):
        attacker.dream_actions(victim.dream_task)
    with pytest.raises(NotFound):
        attacker.dream_actions(victim.operator_task)


def test_finding_another_tenants_dream_actions_cannot_be_applied(backend: Backend) -> None:
    """``Memory.apply_dream_actions`` applied another tenant's MERGE, deleting its memory."""
    victim = seed_victim(backend.open())
    before = victim.snapshot()
    attacker = Memory(backend.open(), scope=ATTACKER, store_name=STORE)
    with pytest.raises(NotFound):
        attacker.apply_dream_actions(victim.dream_task, [victim.proposed_action])
    assert victim.snapshot() == before


@pytest.mark.parametrize("command", ["status", "actions", "apply", "undo", "cancel"])
def test_finding_cli_dream_commands_check_the_tenant(cli: Cli, command: str) -> None:
    """``memcore --tenant X dream actions|apply|undo|cancel|status`` took any task id."""
    ids = _cli_victim(cli)
    before = _cli_state(cli, ids)
    extra = {"apply": [ids["proposed"]], "undo": [ids["applied"]]}.get(command, [])
    result = cli("--tenant", "attacker", "dream", command, ids["dream_task"], *extra)
    # Only the local store keeps undo records: elsewhere undo is refused for any id (usage).
    expected = 2 if command == "undo" and cli.backend != "sqlite" else 3
    assert result.exit_code == expected, (result.stdout, result.stderr)
    assert _cli_state(cli, ids) == before


def test_finding_dream_tasks_are_listed_only_to_their_tenant(backend: Backend, cli: Cli) -> None:
    """The store lists every tenant's dream tasks without a pattern, and one over the whole
    app under any tenant's pattern; a tenant's listing shows its own tasks only."""
    ids = _cli_victim(cli)
    operator = backend.open().create_dream_task(STORE, ScopePattern("hermes", "*", "*", "*"))
    as_attacker = ["--tenant", "attacker"]
    cli.json(*as_attacker, "add", "--sync", "the attacker's own note")
    own = cli.json(*as_attacker, "dream", "create")["id"]
    listed = {t["id"] for t in cli.json(*as_attacker, "dream", "list", "--limit", "100")["items"]}
    assert listed == {own}, (ids["dream_task"], operator.id)
    service = MemoryService(backend.open(), store_name=STORE, scope=ATTACKER)
    assert {t.id for t in service.dreams.tasks(limit=100).items} <= {own}


# -- the library -------------------------------------------------------------------------------
def library_attacks(mem: Any, own_task: str, victim: Victim) -> list[tuple[str, str, Any]]:
    """(name, target id, call taking an id): every id-taking operation of the facade."""
    attacks: list[tuple[str, str, Any]] = []
    for target in victim.ids:
        attacks += [
            ("get", target, lambda i: mem.get(i)),
            ("update", target, lambda i: mem.update(i, text="overwritten by the attacker")),
            ("delete", target, lambda i: mem.delete(i)),
            ("task", target, lambda i: mem.task(i)),
        ]
    for target in (victim.dream_task, victim.operator_task, victim.write_task):
        attacks += [
            ("dream_task", target, lambda i: mem.dream_task(i)),
            ("dream_actions", target, lambda i: mem.dream_actions(i)),
            (
                "apply_dream_actions",
                target,
                lambda i: mem.apply_dream_actions(i, [victim.proposed_action]),
            ),
            (
                "undo_dream_action",
                target,
                lambda i: mem.undo_dream_action(i, victim.applied_action),
            ),
            ("cancel_dream_task", target, lambda i: mem.cancel_dream_task(i)),
        ]
    for target in (victim.proposed_action, victim.applied_action):
        # The attacker's own task, the victim's action ids.
        attacks += [
            ("apply_own_task", target, lambda i: mem.apply_dream_actions(own_task, [i])),
            ("undo_own_task", target, lambda i: mem.undo_dream_action(own_task, i)),
        ]
    return attacks


def _calls(store: MemoryStore) -> int | None:
    """The fake counts its calls: the foreign id must cost the store what a missing one does."""
    return getattr(store, "_calls", None)


def test_library_answers_another_tenants_ids_as_missing(backend: Backend) -> None:
    victim = seed_victim(backend.open())
    before = victim.snapshot()
    store = backend.open()
    attacker = Memory(store, scope=ATTACKER, store_name=STORE)
    attacker.add(text="the attacker's own note")
    own_task = attacker.dream(apply_mode="proposal").id
    checked = 0
    for name, target, attack in library_attacks(attacker, own_task, victim):
        ghost = missing_like(target)
        calls = _calls(store)
        foreign = outcome(lambda a=attack, t=target: a(t))
        spent = None if calls is None else _calls(store) - calls  # type: ignore[operator]
        calls = _calls(store)
        missing = outcome(lambda a=attack, g=ghost: a(g))
        assert scrub(foreign, target) == scrub(missing, ghost), (name, foreign, missing)
        if spent is not None:
            assert spent == _calls(store) - calls, name  # type: ignore[operator]
        checked += 1
    assert checked >= 50
    listed = {t.id for t in attacker.dream_tasks(limit=100).items}
    assert listed == {own_task}
    assert victim.snapshot() == before
    attacker.close()


def test_async_library_answers_another_tenants_ids_as_missing(backend: Backend) -> None:
    victim = seed_victim(backend.open())
    before = victim.snapshot()
    attacker = AsyncMemory(Memory(backend.open(), scope=ATTACKER, store_name=STORE))

    async def attack_all() -> None:
        await attacker.add(text="the attacker's own note")
        own_task = (await attacker.dream(apply_mode="proposal")).id
        for name, target, attack in library_attacks(attacker, own_task, victim):
            ghost = missing_like(target)
            foreign = await _async_outcome(attack(target))
            missing = await _async_outcome(attack(ghost))
            assert scrub(foreign, target) == scrub(missing, ghost), (name, foreign, missing)
        listed = {t.id for t in (await attacker.dream_tasks(limit=100)).items}
        assert listed == {own_task}
        await attacker.close()

    asyncio.run(attack_all())
    assert victim.snapshot() == before


async def _async_outcome(awaitable: Any) -> tuple[str, Any]:
    try:
        value = await awaitable
    except MemcoreError as exc:
        return type(exc).__name__, exc.to_dict()
    return outcome(lambda: value)


def test_library_refuses_every_foreign_id_as_not_found(backend: Backend) -> None:
    """The answer is not merely equal to a missing id's: it is NotFound (or, for an action id
    under the attacker's own task, the ``not_found`` result)."""
    victim = seed_victim(backend.open())
    attacker = Memory(backend.open(), scope=ATTACKER, store_name=STORE)
    attacker.add(text="the attacker's own note")
    own_task = attacker.dream(apply_mode="proposal").id
    for name, target, attack in library_attacks(attacker, own_task, victim):
        kind, value = outcome(lambda a=attack, t=target: a(t))
        if name == "apply_own_task":
            assert kind == "ok" and [a["status"] for a in value] == ["not_found"], name
        elif name == "undo_own_task" or (name == "undo_dream_action" and backend.name != "sqlite"):
            # Only the local store keeps undo records; elsewhere undo is Unsupported, for
            # any id; on the local store the attacker's own task has no such action.
            assert kind in ("Unsupported", "NotFound"), (name, kind, value)
        else:
            assert kind == "NotFound", (name, kind, value)
    attacker.close()


# -- the CLI -----------------------------------------------------------------------------------
class Cli:
    def __init__(
        self, backend: str, home: Path, env: dict[str, str], prefix: list[str], factory: Any
    ):
        self.backend = backend
        self.home = home
        self.env = {"MEMCORE_HOME": str(home), **env}
        self.prefix = prefix
        self.factory = factory
        self.runner = CliRunner()

    def __call__(self, *args: str) -> Any:
        from memcore_cli.app import app
        from memcore_cli.wiring.state import Overrides

        overrides = Overrides(store_factory=self.factory, environ=self.env)
        return self.runner.invoke(
            app, [*self.prefix, *args], env=self.env, obj=overrides, catch_exceptions=False
        )

    def json(self, *args: str) -> Any:
        result = self("--json", *args)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout)


@pytest.fixture
def cli(backend: Backend, tmp_path: Path) -> Cli:
    """``memcore`` on the backend: the fake injected, SQLite and TableStore through the real
    entry points (the SQLite file and the emulator are the shared data)."""
    home = tmp_path / "cli-home"
    home.mkdir()
    if backend.name == "fake":
        shared = backend.open()
        return Cli("fake", home, {}, [], lambda settings: shared.reopen())
    if backend.name == "sqlite":
        config = {"embedder": "none", "local_path": str(backend.path)}
        (home / "config.json").write_text(json.dumps(config))
        return Cli("sqlite", home, {}, [], None)
    server = backend.server
    config = {"endpoint": server.url, "instance_name": server.instance_name, "timeout": 10.0}
    (home / "config.json").write_text(json.dumps(config))
    keys = {"TABLESTORE_MEMORY_AK": EMULATOR_AK, "TABLESTORE_MEMORY_SK": EMULATOR_SK}
    return Cli("tablestore", home, keys, ["--backend", "tablestore"], None)


def _cli_victim(cli: Cli) -> dict[str, Any]:
    as_victim = ["--tenant", "victim"]
    memory_ids = []
    for pair in PAIRS:
        for text in pair:
            memory_ids += cli.json(*as_victim, "add", "--sync", text)["memory_ids"]
    write = cli.json(*as_victim, "add", "--sync", "victim's write with a task id")
    task = cli.json(*as_victim, "dream", "create")
    actions = cli.json(*as_victim, "dream", "actions", task["id"])["items"]
    assert len(actions) == 2, actions
    cli.json(*as_victim, "dream", "apply", task["id"], actions[0]["id"])
    return {
        "memories": memory_ids,
        "write_task": write["receipts"][0]["task_id"],
        "dream_task": task["id"],
        "applied": actions[0]["id"],
        "proposed": actions[1]["id"],
    }


def _cli_state(cli: Cli, ids: dict[str, Any]) -> Any:
    as_victim = ["--tenant", "victim"]
    memories = sorted(
        (m["id"], m["text"]) for m in cli.json(*as_victim, "list", "--limit", "100")["items"]
    )
    task = cli.json(*as_victim, "dream", "status", ids["dream_task"])
    actions = sorted(
        (a["id"], a["status"])
        for a in cli.json(*as_victim, "dream", "actions", ids["dream_task"])["items"]
    )
    write = cli.json(*as_victim, "tasks", "get", ids["write_task"])
    return memories, task["status"], actions, write["status"]


def cli_attacks(ids: dict[str, Any], own_task: str) -> list[tuple[str, list[str]]]:
    """(target id, argv with ``{}`` for it): every CLI command that takes an id (one memory
    id stands for all: the library test tries each)."""
    every = [ids["memories"][0], ids["write_task"], ids["dream_task"], ids["applied"]]
    every.append(ids["proposed"])
    argvs: list[tuple[str, list[str]]] = []
    for target in every:
        argvs += [
            (target, ["get", "{}"]),
            (target, ["update", "{}", "--text", "overwritten by the attacker"]),
            (target, ["forget", "--yes", "{}"]),
            (target, ["tasks", "get", "{}"]),
            (target, ["dream", "status", "{}"]),
            (target, ["dream", "actions", "{}"]),
            (target, ["dream", "apply", "{}", ids["proposed"]]),
            (target, ["dream", "undo", "{}", ids["applied"]]),
            (target, ["dream", "cancel", "{}"]),
        ]
    for memory_id in ids["memories"]:
        # A unique prefix of an id is taken as the id: never across tenants.
        argvs += [(memory_id[:8], ["get", "{}"]), (memory_id[:8], ["forget", "--yes", "{}"])]
    for action in (ids["proposed"], ids["applied"]):
        argvs += [
            (action, ["dream", "apply", own_task, "{}"]),
            (action, ["dream", "undo", own_task, "{}"]),
        ]
    return argvs


def test_cli_answers_another_tenants_ids_as_missing(cli: Cli) -> None:
    ids = _cli_victim(cli)
    before = _cli_state(cli, ids)
    as_attacker = ["--tenant", "attacker"]
    cli.json(*as_attacker, "add", "--sync", "the attacker's own note")
    own_task = cli.json(*as_attacker, "dream", "create")["id"]
    for target, argv in cli_attacks(ids, own_task):
        ghost = missing_like(target)
        for mode in ([], ["--json"]):
            foreign = cli(*as_attacker, *mode, *[a.replace("{}", target) for a in argv])
            missing = cli(*as_attacker, *mode, *[a.replace("{}", ghost) for a in argv])
            seen = (foreign.exit_code, scrub(foreign.stdout, target), scrub(foreign.stderr, target))
            expected = (
                missing.exit_code,
                scrub(missing.stdout, ghost),
                scrub(missing.stderr, ghost),
            )
            assert seen == expected, (argv, mode)
            assert foreign.exit_code != 0 or argv[:2] == ["dream", "apply"], (argv, foreign.stdout)
    for listing in (["dream", "list"], ["tasks", "list"], ["list"], ["messages"]):
        out = cli(*as_attacker, "--json", *listing, "--limit", "100")
        assert out.exit_code == 0, (listing, out.stderr)
        assert not any(i in out.stdout for i in [*ids["memories"], ids["dream_task"]]), listing
        assert ids["write_task"] not in out.stdout
    assert _cli_state(cli, ids) == before


# -- the Hermes tools --------------------------------------------------------------------------
def _provider(backend: Backend, home: Path, user_id: str) -> Any:
    from memcore_hermes import MemcoreMemoryProvider
    from memcore_hermes.outbox.delivery import RetryPolicy

    provider = MemcoreMemoryProvider(
        store_factory=lambda _config: backend.open(),
        retry=RetryPolicy(base_s=0.02, cap_s=0.1, jitter=0.0),
        flush_timeout=5.0,
    )
    provider.initialize(
        f"{user_id}-session",
        hermes_home=str(home),
        platform="cli",
        agent_context="primary",
        user_id=user_id,
    )
    return provider


def test_hermes_tools_answer_another_tenants_ids_as_missing(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model may put any id in any argument; the attacker's tools never reach the victim."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    victim_provider = _provider(backend, home, "victim")
    attacker = _provider(backend, home, "attacker")
    try:
        scope = victim_provider.runtime.scope
        victim = seed_victim(backend.open(), scope)
        before = victim.snapshot()

        def tool(name: str, **args: Any) -> Any:
            return json.loads(attacker.handle_tool_call(name, args))

        variants: list[dict[str, str]] = [
            {},
            {"agent_id": scope.agent_id},
            {"agent_id": scope.agent_id, "run_id": scope.run_id},
            {"run_id": scope.run_id},
        ]
        for target in victim.ids:
            ghost = missing_like(target)
            for extra in variants:
                foreign = tool("tablestore_forget", memory_id=target, **extra)
                missing = tool("tablestore_forget", memory_id=ghost, **extra)
                assert foreign["error"]["code"] == "not_found", (target, extra, foreign)
                assert scrub(foreign, target) == scrub(missing, ghost), (extra, foreign, missing)
        reads = [
            tool("tablestore_search", query=PAIRS[0][0], top_k=50),
            tool("tablestore_search", query="green tea", metadata={"owner": "victim"}),
            tool("tablestore_search", query="bicycle", include_evidence=True),
            tool("tablestore_profile", limit=100, include_superseded=True),
        ]
        seen = json.dumps(reads)
        assert not any(i in seen for i in victim.ids), seen
        assert "victim" not in seen
        assert victim.snapshot() == before
    finally:
        attacker.shutdown()
        victim_provider.shutdown()


# -- the hosts reach stores only through the service --------------------------------------------
def _id_taking_store_methods() -> frozenset[str]:
    """Every port method with a parameter naming an object id (``memory_id``, ``task_id``,
    ``action_ids``...), read from the ports themselves, so that a method added later (as
    ``NeighbourTurns.neighbour_turns`` was) is in the scan without anyone listing it."""
    import inspect

    from memcore import ports

    found = set()
    for _, port in inspect.getmembers(ports, inspect.isclass):
        if not getattr(port, "_is_protocol", False):
            continue
        for method, function in inspect.getmembers(port, inspect.isfunction):
            names = inspect.signature(function).parameters
            if any(n.endswith(("_id", "_ids")) for n in names):
                found.add(method)
    return frozenset(found)


#: Store methods that take an object id: a host calls the service for these, never the store.
#: ``list_dream_tasks`` takes none, but lists by a scope only the service resolves for a tenant.
ID_TAKING = _id_taking_store_methods() | {"list_dream_tasks"}


def test_the_id_taking_methods_are_read_from_every_port() -> None:
    """The scan's list holds each id-taking method of the store port and of the optional
    ports, including those it was once written out by hand with and the later ones."""
    assert {
        "get_task",
        "get_memory",
        "get_dream_task",
        "list_dream_actions",
        "apply_dream_actions",
        "undo_dream_action",
        "cancel_dream_task",
        "update_memory",
        "delete_memory",
        "neighbour_turns",
    } <= ID_TAKING


#: Every host package's source root; each must exist and hold modules, so a moved or renamed
#: host is not silently left out of the scan.
HOSTS = ("adapter-cli/src", "adapter-hermes/src", "adapter-mcp/src")


def _host_sources() -> Iterator[tuple[str, str]]:
    root = Path(__file__).resolve().parents[2] / "packages"
    for package in HOSTS:
        paths = sorted((root / package).rglob("*.py"))
        assert paths, f"no host sources under packages/{package}"
        for path in paths:
            yield path.relative_to(root / package).as_posix(), path.read_text(encoding="utf-8")


def _store_calls(name: str, source: str) -> Iterator[str]:
    """Calls of an id-taking store method in one host module. A call on a service (the
    receiver's last part names one: ``service``, ``runtime.service()``) or on the module's own
    class is fine; ``service.store.get_dream_task`` is not."""
    import ast

    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        receiver = ast.unparse(node.func.value)
        if "service" in receiver.rsplit(".", 1)[-1] or receiver in ("self", "cls"):
            continue
        if method in ID_TAKING:
            yield f"{name}:{node.lineno} {receiver}.{method}"


def test_the_host_call_check_sees_direct_store_calls() -> None:
    """The check below, on code that reaches a store around the service in the ways a host
    might (held store, a service's own store, a runtime's), finds each call."""
    source = """
def status(tenants, service, runtime, task_id):
    tenants.store.get_dream_task(service.store_name, task_id)
    service.store.apply_dream_actions(service.store_name, task_id, ["a"])
    runtime.ready_store().list_dream_actions(service.store_name, task_id, limit=100)
    store = runtime.ready_store()
    store.get_memory(service.store_name, service.scope, "m")
    service.dream_task(task_id)
    runtime.service().apply_dream_actions(task_id, ["a"])
"""
    found = {call.split(" ", 1)[1] for call in _store_calls("memcore_mcp/x.py", source)}
    assert found == {
        "tenants.store.get_dream_task",
        "service.store.apply_dream_actions",
        "runtime.ready_store().list_dream_actions",
        "store.get_memory",
    }


def test_hosts_never_call_an_id_taking_store_method() -> None:
    found = [call for name, source in _host_sources() for call in _store_calls(name, source)]
    assert found == []
