"""Tenant isolation under attack, as a property over every adapter.

An attacker controls every session value (``user_id``, ``agent_identity``, ``session_title``,
...) and every argument a model can put in a tool call (ids to forget or read, agent and run
overrides, metadata keys). Whatever they try, they never read, list, update or delete a memory
of another tenant. The victim's memories are checked byte for byte after each attack.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import reliability_rig as rig
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.errors import InvalidInput, MemcoreError
from memcore.scope import Scope, SessionContext, identity_segment, normalize_segment, resolve_scope
from memcore.service import MemoryService
from memcore.values import MemoryRecord

STORE = "tenancy_mem"
VICTIM_TENANT = "victim"
VICTIM_SCOPES = (
    Scope("hermes", VICTIM_TENANT, "hermes", "run1"),
    Scope("hermes", VICTIM_TENANT, "other-agent", "run2"),
)
VICTIM_TEXTS = (
    "victim secret: the launch code is 4711",
    "victim prefers green tea in the morning",
)

#: Values built to smuggle a wildcard, a path or a separator into a scope.
NASTY = [
    "*",
    "**",
    "victim/*",
    "victim/hermes/run1",
    "hermes/victim/*/*",
    "../victim",
    "..\\victim",
    "victim\x00",
    "victim/",
    "/victim",
    "%2A",
    "victim%2F*",
    "__default__",
    "%",
    "victim*",
    "*victim",
    "victim\n",
    "victim\u200b",
    "ｖｉｃｔｉｍ",
    "VICTIM",
    "",
    " ",
    "\t",
    "a" * 600,
    "victim" + "/" * 200,
    "☃/*",
    "\ud800",
]
nasty_text = st.one_of(st.sampled_from(NASTY), st.text(max_size=40), st.none())


def _victim_snapshot(store, memories: list[MemoryRecord]) -> list[tuple[str, str, dict[str, str]]]:
    out = []
    for m in memories:
        got = store.get_memory(STORE, m.scope, m.id)
        out.append((got.id, got.text, dict(got.metadata)))
    return out


def _seed_victim(store) -> list[MemoryRecord]:
    store.ensure_store(STORE)
    seeded = []
    for scope, text in zip(VICTIM_SCOPES, VICTIM_TEXTS):
        receipt = store.add_text(STORE, scope, text, metadata={"owner": VICTIM_TENANT}, sync=True)
        seeded.append(store.get_memory(STORE, scope, receipt.memory_ids[0]))
    return seeded


def _attack(
    store, session: SessionContext, tool: dict, victims: list[MemoryRecord], stats: Counter
) -> None:
    """One attacker session: every read, write and delete path a model can reach."""
    try:
        scope = resolve_scope(session, app_id="hermes")
    except InvalidInput:  # a blank user id is refused, never sent to the default tenant
        assert isinstance(session.user_id, str) and not session.user_id.strip()
        stats["refused_blank_user_id"] += 1
        return
    if scope.tenant_id == VICTIM_TENANT:  # a real user of that name is the victim itself
        stats["skipped_same_tenant"] += 1
        return
    svc = MemoryService(store, store_name=STORE, scope=scope)
    victim_ids = {m.id for m in victims}
    seen: set[str] = set()

    def attempt(name: str, fn: Callable[[], object]) -> object:
        stats["attempts"] += 1
        try:
            result = fn()
        except MemcoreError:
            stats["typed_errors"] += 1
            return None
        stats[f"ok_{name}"] += 1
        return result

    # Writes with metadata keys that try to name the scope: refused, or stored in the attacker's
    # own scope only.
    attempt(
        "remember",
        lambda: svc.remember(
            "attacker note " + VICTIM_TEXTS[0], metadata=tool["metadata"], sync=True
        ),
    )
    hits = attempt("search", lambda: svc.search(VICTIM_TEXTS[0], top_k=50)) or []
    seen.update(h.memory.id for h in hits)
    for h in hits:
        assert h.memory.scope.tenant_id == scope.tenant_id
    page = attempt("profile", lambda: svc.profile(limit=100))
    if page is not None:
        seen.update(m.id for m in page.items)
        assert all(m.scope.tenant_id == scope.tenant_id for m in page.items)
    scopes = attempt("scopes", lambda: store.list_scopes(STORE, scope.tenant_pattern(), limit=100))
    if scopes is not None:
        assert all(s.tenant_id == scope.tenant_id for s in scopes.items)
    for victim in victims:
        for target in (victim.id, tool["memory_id"]):
            if not isinstance(target, str):
                continue
            got = attempt(
                "get", lambda t=target: svc.get(t, agent_id=tool["agent_id"], run_id=tool["run_id"])
            )
            if isinstance(got, MemoryRecord):
                seen.add(got.id)
            attempt("get_tenant", lambda t=target: svc.get(t))
            attempt(
                "update", lambda t=target: svc.update(t, text="pwned", agent_id=tool["agent_id"])
            )
            attempt(
                "forget",
                lambda t=target: svc.forget(t, agent_id=tool["agent_id"], run_id=tool["run_id"]),
            )
            attempt("forget_tenant", lambda t=target: svc.forget(t))
    leaked = seen & victim_ids
    stats["cross_tenant_reads"] += len(leaked)
    assert not leaked, f"attacker in {scope} saw victim memories {leaked}"


@pytest.fixture(params=["fake", "sqlite", "tablestore"])
def adapter(request, tmp_path):
    """A fresh store per adapter (the TableStore one goes through the emulator)."""
    if request.param == "fake":
        from memcore.testing import InMemoryMemoryStore

        store = InMemoryMemoryStore()
    elif request.param == "sqlite":
        from memcore_sqlite import SqliteMemoryStore

        store = SqliteMemoryStore(tmp_path / "tenancy.db")
    else:
        from memcore_tablestore.testing import store_for

        store = store_for(request.getfixturevalue("emulator")(), timeout=10.0)
    yield request.param, store
    store.close()


EXAMPLES = {"fake": (150, 600, 300), "sqlite": (60, 250, 120), "tablestore": (20, 80, 40)}


@pytest.mark.slow
def test_reliability_tenancy_no_cross_tenant_access(adapter, scenario, pick):
    name, store = adapter
    victims = _seed_victim(store)
    before = _victim_snapshot(store, victims)
    stats: Counter = Counter()
    short, full, medium = EXAMPLES[name]

    @rig.fuzz_settings(pick(short, full, medium))
    @given(
        session=st.builds(
            SessionContext,
            user_id=nasty_text,
            agent_identity=nasty_text,
            gateway_session_key=nasty_text,
            session_title=nasty_text,
            session_id=nasty_text,
        ),
        tool=st.fixed_dictionaries(
            {
                "memory_id": st.one_of(
                    st.sampled_from([v.id for v in victims]), nasty_text, st.integers()
                ),
                "agent_id": st.one_of(
                    st.sampled_from(["hermes", "other-agent", *NASTY]), st.none()
                ),
                "run_id": st.one_of(st.sampled_from(["run1", "run2", *NASTY]), st.none()),
                "metadata": st.one_of(
                    st.sampled_from(
                        [
                            {"tenant_id": VICTIM_TENANT},
                            {"app_id": "hermes", "tenant_id": VICTIM_TENANT, "agent_id": "*"},
                            {"scope": f"hermes/{VICTIM_TENANT}/*/*"},
                            {"run_id": "run1"},
                            {"owner": VICTIM_TENANT},
                        ]
                    ),
                    st.dictionaries(
                        st.sampled_from(["tenant_id", "scope", "x", "agent_id"]),
                        st.text(max_size=10),
                        max_size=3,
                    ),
                    st.none(),
                ),
            }
        ),
    )
    def attack(session, tool):
        stats["examples"] += 1
        _attack(store, session, tool, victims, stats)
        assert _victim_snapshot(store, victims) == before

    with scenario(f"tenant isolation ({name})", "adversarial session values and tool args") as s:
        try:
            attack()
        finally:
            after = _victim_snapshot(store, victims) if stats["examples"] else before
            altered = sum(1 for a, b in zip(before, after) if a != b)
            s.counts(
                issued=stats["attempts"],
                acknowledged=stats["attempts"] - stats["typed_errors"],
                stored=len(after) - altered,
                lost=len(victims) - len(after) + altered + stats["cross_tenant_reads"],
                duplicated=0,
            )
            s.note(
                examples=stats["examples"],
                attacks=stats["attempts"],
                typed_errors=stats["typed_errors"],
                untyped_errors=stats["untyped_errors"],
                cross_tenant_reads=stats["cross_tenant_reads"],
                attacker_writes_ok=stats["ok_remember"],
            )
    assert stats["examples"] > 0


def test_reliability_tenancy_normalized_segments_never_collide_with_victim():
    """The building block: no untrusted value normalises into a wildcard or a separator."""

    @settings(max_examples=500, database=None)
    @given(st.one_of(st.sampled_from(NASTY), st.text()))
    def check(value):
        seg = normalize_segment(value)
        assert "*" not in seg and "/" not in seg and seg
        if isinstance(value, str) and value.strip() != VICTIM_TENANT:
            assert seg != VICTIM_TENANT

    check()


@pytest.mark.slow
def test_reliability_tenancy_hermes_tools_under_attack(tmp_path, scenario, pick):
    """Two Hermes users on one store; the attacker's model tries every tool on the victim's ids."""
    import json

    from memcore_hermes import MemcoreMemoryProvider

    home = rig.make_hermes_home(tmp_path / "hermes", rig.LOCAL_CONFIG)
    victim = MemcoreMemoryProvider(environ={})
    victim.initialize("victim-session", hermes_home=str(home), user_id=VICTIM_TENANT)
    ids = []
    for text in VICTIM_TEXTS:
        out = json.loads(
            victim.handle_tool_call("tablestore_remember", {"content": text, "sync": True})
        )
        ids.extend(out["memory_ids"])
    stats: Counter = Counter()

    @rig.fuzz_settings(pick(25, 100, 50))
    @given(
        user=nasty_text,
        agent=nasty_text,
        title=nasty_text,
        extra=st.sampled_from(
            [
                {},
                {"tenant_id": VICTIM_TENANT},
                {"app_id": "hermes"},
                {"agent_id": "hermes", "run_id": "victim-session"},
                {"agent_id": "*", "run_id": "*"},
                {"run_id": "../victim-session"},
            ]
        ),
    )
    def attack(user, agent, title, extra):
        if identity_segment(user) == VICTIM_TENANT:
            return
        attacker = MemcoreMemoryProvider(environ={})
        if isinstance(user, str) and not user.strip():  # refused, never the default tenant
            with pytest.raises(InvalidInput):
                attacker.initialize("attacker", hermes_home=str(home), user_id=user)
            stats["refused_blank_user_id"] += 1
            return
        attacker.initialize(
            "attacker",
            hermes_home=str(home),
            user_id=user,
            agent_identity=agent,
            session_title=title,
        )
        try:
            stats["sessions"] += 1
            reads = [
                attacker.handle_tool_call("tablestore_profile", {"limit": 100}),
                attacker.handle_tool_call(
                    "tablestore_search", {"query": VICTIM_TEXTS[0], "top_k": 50}
                ),
            ]
            forgets = [
                attacker.handle_tool_call("tablestore_forget", {"memory_id": i, **extra})
                for i in ids
            ]
            writes = [
                attacker.handle_tool_call(
                    "tablestore_remember",
                    {"content": "x", "metadata": {"tenant_id": VICTIM_TENANT}},
                )
            ]
            for answer in reads + forgets + writes:
                stats["calls"] += 1
                stats["errors"] += "error" in json.loads(answer)
                assert VICTIM_TEXTS[0] not in answer and VICTIM_TEXTS[1] not in answer
            for answer in reads:
                assert not any(i in answer for i in ids), answer[:300]
            for (
                answer
            ) in forgets:  # refused: the id is not in the attacker's tenant (or args refused)
                assert json.loads(answer)["error"]["type"] in ("NotFound", "InvalidInput"), answer[
                    :300
                ]
            assert "error" in json.loads(writes[0])
        finally:
            attacker.shutdown()

    with scenario(
        "tenant isolation (Hermes tools)", "attacker sessions call every tool on the victim's ids"
    ) as s:
        try:
            attack()
            profile = json.loads(victim.handle_tool_call("tablestore_profile", {"limit": 100}))
            intact = sum(1 for m in profile["memories"] if m["id"] in ids)
            s.counts(
                issued=stats["calls"],
                acknowledged=stats["calls"] - stats["errors"],
                stored=intact,
                lost=len(ids) - intact,
                duplicated=0,
            )
            s.note(attacker_sessions=stats["sessions"], typed_errors=stats["errors"])
            assert intact == len(ids)
        finally:
            victim.shutdown()
