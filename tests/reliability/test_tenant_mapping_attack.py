"""The tenant mapping attacked with the strings most likely to collide, and the one tenant rule
checked through every host (library, CLI, Hermes provider).

An attacker picks their own user id freely. The pairs below are built to land on a victim's
tenant: ids around the 128-character limit, ids spelled in the shortening's own alphabet
(``~`` and hex), escape-shaped ids (``%7E``, ``%25``), the mapped form of another id,
Unicode normalisation, whitespace and case variants. No two different ids may share a tenant.
Reversibility is checked against ``urllib.parse.unquote``, a decoder we did not write.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import reliability_rig as rig
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memcore
from memcore.config import MemcoreConfig
from memcore.errors import InvalidInput
from memcore.scope import (
    DEFAULT_SEGMENT,
    MAX_SEGMENT_CHARS,
    Scope,
    is_shortened,
    tenant_segment,
    unescape_segment,
)

#: The pair from issue 28: the attacker's id is, character for character, the segment the
#: victim's long id was shortened to before ``~`` was escaped.
VICTIM = "0" * 129
ATTACKER = "0" * 103 + "~beab3966389f2ad495c7db4f"
SECRET = "victim secret: the door code is 2741"

HEX = "0123456789abcdef"
#: Pieces an attacker would build from: the shortening's alphabet, escape-shaped runs, the
#: characters that are escaped, and characters whose Unicode forms differ.
PIECES = [
    "0",
    "a",
    "f",
    "~",
    "%",
    "7E",
    "%7E",
    "%7e",
    "%25",
    "%2A",
    "%20",
    "%5F",
    "%%",
    "*",
    "/",
    "\\",
    "_",
    "__",
    " ",
    "\t",
    "\u00a0",
    "\u200b",
    "é",
    "e\u0301",
    "ﬁ",
    "Å",
    "A\u030a",
    "\u212b",
    "ß",
    "김",
    "\U0001f600",
    "\ud800",
]


def _mapped(text: str) -> str:
    return tenant_segment(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _usable(text: str) -> bool:
    return bool(text.strip())


@st.composite
def seeds(draw: st.DrawFn) -> str:
    """An id that is long (around the limit), shortening-shaped or escape-shaped."""
    kind = draw(st.sampled_from(["pieces", "long", "shortened-shape", "text"]))
    if kind == "pieces":
        pieces = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12)))
        return pieces * draw(st.integers(min_value=1, max_value=12))
    if kind == "long":
        piece = draw(st.sampled_from(PIECES))
        tail = "".join(draw(st.lists(st.sampled_from(PIECES), max_size=3)))
        return (piece * 200)[: draw(st.integers(min_value=100, max_value=200))] + tail
    if kind == "shortened-shape":  # what a shortened segment looks like, typed as an id
        prefix = "".join(draw(st.lists(st.sampled_from(PIECES), max_size=8)))
        room = draw(st.integers(min_value=80, max_value=110))
        digest = draw(st.text(alphabet=HEX, min_size=20, max_size=28))
        return (prefix + "0" * room)[:room] + "~" + digest
    return draw(st.text(min_size=1, max_size=150))


def variants(a: str, cut: int) -> list[str]:
    """Ids made from ``a`` to land on its tenant: its segment, that segment read back as an
    id, its pre-fix shortened form (the attack of issue 28), Unicode forms, whitespace and
    case variants, one-character edits, and escape look-alikes."""
    out = [
        a[:cut] + "~" + _digest(a),
        a[:103] + "~" + _digest(a),
        a[: max(len(a) - 1, 0)],
        a + a[-1:],
        a[:cut] + "0" + a[cut:],
        a.upper(),
        a.lower(),
        a.swapcase(),
        a.casefold(),
        a.strip(),
        a.replace(" ", "\u00a0"),
        a.replace("~", "%7E"),
        a.replace("%7E", "~"),
        a.replace("%", "%25"),
        a.replace("%25", "%"),
        a.replace("*", "%2A"),
        urllib.parse.quote(a, safe="", errors="surrogatepass"),
    ]
    out += [unicodedata.normalize(form, a) for form in ("NFC", "NFD", "NFKC", "NFKD")]  # type: ignore[arg-type]
    out += [w + a for w in (" ", "\t", "\u00a0", "\u3000", "\n")]
    out += [a + w for w in (" ", "\t", "\u00a0", "\u3000", "\n")]
    if _usable(a):
        segment = _mapped(a)
        out += [segment, unescape_segment(segment), segment.replace("%7E", "~")]
    return out


def _check_pair(a: str, b: str) -> None:
    if a == b or not _usable(a) or not _usable(b):
        return
    ta, tb = _mapped(a), _mapped(b)
    assert ta != tb, f"{a!r} and {b!r} share tenant {ta!r}"


def _check_segment(raw: str, segment: str) -> None:
    """Every segment is a valid concrete tenant, and an unshortened one decodes back exactly."""
    Scope("app", segment, "agent", "run")
    assert len(segment) <= MAX_SEGMENT_CHARS
    assert segment != DEFAULT_SEGMENT
    if is_shortened(segment):
        assert segment.count("~") == 1 and segment.endswith("~" + _digest(raw))
    else:
        assert urllib.parse.unquote(segment, errors="surrogatepass") == raw
        assert unescape_segment(segment) == raw


def test_the_issue_pair_maps_to_two_tenants() -> None:
    # The attacker's id is exactly the victim's shortened segment as it was stored before.
    assert "0" * 103 + "~" + _digest(VICTIM) == ATTACKER
    assert _mapped(VICTIM) != _mapped(ATTACKER)
    assert "~" not in _mapped("0" * 10 + "~" + "0" * 10)  # a short id's `~` is escaped


def test_segments_of_long_ids_around_the_limit_are_distinct() -> None:
    """Every length from 100 to 160 of the shortening's own alphabet, and each such id's
    segment taken as an id, exhaustively: no two share a tenant."""
    ids = set()
    for size in range(100, 161):
        for fill in ("0", "~", "%", "%7E", "0~", "é", "e\u0301"):
            base = (fill * size)[:size]
            ids.update(
                {base, base + "~" + _digest(base), _mapped(base), unescape_segment(_mapped(base))}
            )
    seen: dict[str, str] = {}
    for raw in ids:
        segment = _mapped(raw)
        _check_segment(raw, segment)
        assert seen.setdefault(segment, raw) == raw, f"{raw!r} and {seen[segment]!r} collide"


def _run_pairs(examples: int, seen: dict[str, str]) -> int:
    """Check every generated id against each of its :func:`variants` and against the other
    ids of its example; ``seen`` maps each segment to its one id across the run, so every id
    is in effect paired with every other. Returns the number of pairs checked directly."""
    checked = 0

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(
        ids=st.lists(seeds(), min_size=2, max_size=4),
        cut=st.integers(min_value=0, max_value=130),
    )
    def prop(ids: list[str], cut: int) -> None:
        nonlocal checked
        candidates = [(a, b) for a in ids for b in ids if a < b]
        candidates += [(a, v) for a in ids for v in variants(a, cut)]
        for a, b in candidates:
            _check_pair(a, b)
            checked += 1
            for raw in (a, b):
                if _usable(raw):
                    segment = _mapped(raw)
                    _check_segment(raw, segment)
                    assert seen.setdefault(segment, raw) == raw, f"{raw!r}, {seen[segment]!r}"

    prop()
    return checked


def test_generated_pairs_never_share_a_tenant() -> None:
    """One run of more than 10,000 collision-prone pairs (issue 28 asks for at least that)."""
    seen: dict[str, str] = {}
    assert _run_pairs(150, seen) >= 10_000


@pytest.mark.slow
def test_many_more_generated_pairs_never_share_a_tenant() -> None:
    seen: dict[str, str] = {}
    assert _run_pairs(600, seen) >= 40_000


# ------------------------------------------------- one user id on two platforms (Hermes)

#: What an attacker would build a (platform, user id) pair from: the separator, its escape
#: and the escape of ``%``, on top of the pieces above.
PAIR_PIECES = [
    *PIECES,
    *[":", "::", "%3A", "%3a", "%253A", "telegram", "12345"],
    *["#", "#chat", "#chat:", "%23", "%2523", "-100123"],  # a chat's tenant: platform#chat:id
]


@st.composite
def platform_pairs(draw: st.DrawFn) -> tuple[str, str, str]:
    """A user on a platform, or a chat on one whose messages name no user."""
    kind = draw(st.sampled_from(["user", "chat"]))
    platform = "".join(draw(st.lists(st.sampled_from(PAIR_PIECES), min_size=1, max_size=5)))
    who = draw(st.one_of(seeds(), st.sampled_from(PAIR_PIECES)))
    return kind, platform, who


def _pair_tenant(platform: str, user: str, kind: str = "user") -> str:
    from memcore.scope import SessionContext, chat_tenant, resolve_scope

    if kind == "chat":  # as the Hermes provider resolves a session with a chat and no user
        return resolve_scope(SessionContext(), tenant_id=chat_tenant(platform, user)).tenant_id
    return resolve_scope(SessionContext(user_id=user, platform=platform)).tenant_id


def test_the_separator_cannot_move_between_platform_and_user() -> None:
    pairs = [
        ("a:b", "c"),
        ("a", "b:c"),
        ("a%3Ab", "c"),
        ("a%b", "c"),
        ("a", "%3Ab:c"),
        ("telegram", "12345"),
        ("discord", "12345"),
        ("telegram:", "12345"),
        ("telegram", ":12345"),
        ("telegram#chat", "-100123"),
        ("telegram", "#chat:-100123"),
        ("a#b", "c"),
    ]
    chats = [("telegram", "-100123"), ("telegram", "12345"), ("a", "b#chat:c"), ("a#chat", "c")]
    tenants = [_pair_tenant(*pair) for pair in pairs]
    tenants += [_pair_tenant(*chat, kind="chat") for chat in chats]
    assert len(set(tenants)) == len(pairs) + len(chats)
    assert DEFAULT_SEGMENT not in tenants
    from memcore.scope import chat_tenant, platform_tenant, tenant_platform

    for platform, user in pairs:  # the platform reads back from the tenant id
        assert tenant_platform(platform_tenant(platform, user)) == platform
    assert tenant_platform("12345") is None
    assert tenant_platform(chat_tenant("telegram", "-100123")) is None  # a chat names no user


def test_generated_platform_and_user_pairs_never_share_a_tenant() -> None:
    seen: dict[str, tuple[str, str, str]] = {}

    @settings(max_examples=600, deadline=None, database=None)
    @given(pairs=st.lists(platform_pairs(), min_size=2, max_size=6))
    def prop(pairs: list[tuple[str, str, str]]) -> None:
        for kind, platform, who in pairs:
            if not (_usable(platform) and _usable(who)):
                with pytest.raises(InvalidInput):
                    _pair_tenant(platform, who, kind)
                continue
            tenant = _pair_tenant(platform, who, kind)
            assert tenant != DEFAULT_SEGMENT and len(tenant) <= MAX_SEGMENT_CHARS
            pair = (kind, platform, who)
            assert seen.setdefault(tenant, pair) == pair, f"{pair!r} and {seen[tenant]!r}"

    prop()
    assert len(seen) > 500  # distinct pairs checked against each other (about 750 a run)


# ---------------------------------------------------------------- the one rule, per host


def _config(db: Path) -> MemcoreConfig:
    return MemcoreConfig(embedder="none", local_path=str(db))


def _library_add(db: Path, user_id: str | None, text: str) -> str:
    with memcore.Memory.open("local", config=_config(db), user_id=user_id) as mem:
        mem.add(text)
        return mem.scope.tenant_id


def _library_texts(db: Path, user_id: str | None) -> list[str]:
    with memcore.Memory.open("local", config=_config(db), user_id=user_id) as mem:
        return [m.text for m in mem.iter_all()]


def test_library_keeps_the_issue_pair_apart_and_follows_the_tenant_rule(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite3"
    victim_tenant = _library_add(db, VICTIM, SECRET)
    with memcore.Memory.open("local", config=_config(db), user_id=ATTACKER) as attacker:
        assert attacker.scope.tenant_id != victim_tenant
        assert [m.text for m in attacker.iter_all()] == []
        assert all(h.memory.text != SECRET for h in attacker.search("door code", top_k=50))
    assert _library_texts(db, VICTIM) == [SECRET]

    _library_add(db, "alice", "alice's note")
    assert _library_texts(db, "alice ") == []  # exact: "alice " is not alice
    with memcore.Memory.open("local", config=_config(db), user_id="alice ") as mem:
        assert mem.scope.tenant_id == "alice%20"
    for blank in ("", "  "):
        with pytest.raises(InvalidInput):
            memcore.Memory.open("local", config=_config(db), user_id=blank)
    with memcore.Memory.open("local", config=_config(db), user_id=None) as mem:
        assert mem.scope.tenant_id == DEFAULT_SEGMENT


async def _async_tenant(db: Path, user_id: str | None) -> str:
    async with await memcore.AsyncMemory.open("local", config=_config(db), user_id=user_id) as m:
        return m.scope.tenant_id


def test_async_library_follows_the_same_rule(tmp_path: Path) -> None:
    import asyncio

    db = tmp_path / "async.sqlite3"
    assert asyncio.run(_async_tenant(db, VICTIM)) != asyncio.run(_async_tenant(db, ATTACKER))
    assert asyncio.run(_async_tenant(db, "alice ")) == "alice%20"
    with pytest.raises(InvalidInput):
        asyncio.run(_async_tenant(db, ""))


class _Cli:
    """``memcore`` through Typer's runner, on the SQLite file the library test writes."""

    def __init__(self, home: Path, db: Path) -> None:
        from typer.testing import CliRunner

        home.mkdir(parents=True, exist_ok=True)
        (home / "config.json").write_text(
            json.dumps({"embedder": "none", "local_path": str(db)}), encoding="utf-8"
        )
        self.env = {"MEMCORE_HOME": str(home), "MEMCORE_BACKEND": "local", "NO_COLOR": "1"}
        self.runner = CliRunner()

    def __call__(self, *argv: str) -> Any:
        from memcore_cli.app import app
        from memcore_cli.wiring.overrides import Overrides

        overrides = Overrides(environ=self.env)
        return self.runner.invoke(app, list(argv), env=self.env, obj=overrides)

    def texts(self, *scope: str) -> list[str]:
        result = self(*scope, "--json", "list", "--all")
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return [json.loads(line)["text"] for line in result.stdout.splitlines() if line.strip()]


def test_cli_keeps_the_issue_pair_apart_and_follows_the_tenant_rule(tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite3"
    cli = _Cli(tmp_path / "home", db)
    assert cli("--tenant", VICTIM, "add", SECRET).exit_code == 0
    assert cli.texts("--tenant", ATTACKER) == []
    with memcore.Memory.open("local", config=_config(db), user_id=VICTIM) as mem:
        (memory_id,) = [m.id for m in mem.iter_all()]
    assert cli("--tenant", ATTACKER, "forget", "--yes", memory_id).exit_code != 0
    assert cli.texts("--tenant", VICTIM) == [SECRET]

    # The CLI reaches the tenant the library (and Hermes) give "alice ", and only that one.
    _library_add(db, "alice", "alice's note")
    _library_add(db, "alice ", "the other alice's note")
    assert cli.texts("--tenant", "alice ") == ["the other alice's note"]
    assert cli.texts("--tenant", "alice") == ["alice's note"]
    for blank in ("", "  "):
        refused = cli("--tenant", blank, "list")
        assert refused.exit_code != 0 and "tenant" in refused.stderr
    _library_add(db, " * ", "a note of the user ' * '")
    assert cli.texts("--tenant", " * ") == ["a note of the user ' * '"]
    assert cli("--tenant", "*", "list").exit_code != 0  # the wildcard itself stays refused
    _library_add(db, None, "default note")
    assert cli.texts() == ["default note"]  # no --tenant: the default tenant, as None is


def _provider(home: Path, user_id: Any) -> Any:
    from memcore_hermes import MemcoreMemoryProvider

    provider = MemcoreMemoryProvider(environ={}, flush_timeout=10.0)
    kwargs = {} if user_id is None else {"user_id": user_id}
    provider.initialize(
        "s1", hermes_home=str(home), platform="telegram", agent_context="primary", **kwargs
    )
    return provider


def _tool(provider: Any, name: str, **args: Any) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(provider.handle_tool_call(name, args))
    return answer


def test_hermes_keeps_the_issue_pair_apart_and_follows_the_tenant_rule(tmp_path: Path) -> None:
    db = tmp_path / "hermes.sqlite3"
    home = rig.make_hermes_home(tmp_path / "hermes", {**rig.LOCAL_CONFIG, "local_path": str(db)})
    victim = _provider(home, VICTIM)
    try:
        (memory_id,) = _tool(victim, "tablestore_remember", content=SECRET, sync=True)["memory_ids"]
    finally:
        victim.shutdown()
    attacker = _provider(home, ATTACKER)
    try:
        assert attacker.runtime.scope.tenant_id != tenant_segment(f"telegram:{VICTIM}")
        found = _tool(attacker, "tablestore_search", query="door code", top_k=50)["results"]
        listed = _tool(attacker, "tablestore_profile", limit=100)["memories"]
        assert SECRET not in [h["text"] for h in found] + [m["text"] for m in listed]
        assert _tool(attacker, "tablestore_forget", memory_id=memory_id)["error"]["code"] == (
            "not_found"
        )
    finally:
        attacker.shutdown()
    # A Hermes user's tenant is the platform's id, by the same rule (README "Platforms").
    assert _library_texts(db, f"telegram:{VICTIM}") == [SECRET]

    spaced = _provider(home, "alice ")
    try:
        tenant = spaced.runtime.scope.tenant_id
        assert tenant == tenant_segment("telegram:alice ") == "telegram:alice%20"
    finally:
        spaced.shutdown()
    for blank in ("", "  "):
        refused = _provider_refusal(home, blank)
        assert isinstance(refused, InvalidInput) and refused.field == "tenant_id"
    nobody = _provider(home, None)
    try:
        assert nobody.runtime.scope.tenant_id == DEFAULT_SEGMENT
    finally:
        nobody.shutdown()


def _provider_refusal(home: Path, user_id: str) -> Exception | None:
    try:
        _provider(home, user_id).shutdown()
    except Exception as exc:  # the typed error initialize raises, not a shared tenant
        return exc
    return None
