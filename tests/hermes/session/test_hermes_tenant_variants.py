"""Look-alike user ids never reach the victim's tenant: whitespace, case, Unicode forms, zero-width.

On both backends: a real SQLite file, and the TableStore store over HTTP to the emulator.

Platform user ids are opaque strings; the tenant mapping escapes them and never strips or
folds, so a session whose id merely *looks* like the victim's gets a tenant of its own. Each
example opens a real provider on a shared SQLite store and tries the tools that read, list
and delete.
"""

from __future__ import annotations

import json
import tempfile
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.scope import SessionContext, identity_segment, resolve_scope, unescape_segment
from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite import SqliteMemoryStore

STORE = "hermes_mem"
VICTIMS = ["alice", "Élodie", "ﬁona", "straße", "Åsa Öberg", "김민준", "user-42"]
SECRET = "PIN 4321"

WHITESPACE = [" ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\r\n"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


@st.composite
def look_alikes(draw: st.DrawFn) -> tuple[str, str]:
    """(victim id, a different id that a human would read as the same)."""
    victim = draw(st.sampled_from(VICTIMS))
    kind = draw(st.sampled_from(["whitespace", "case", "unicode", "zero-width", "mixed"]))
    variant = victim
    if kind in ("whitespace", "mixed"):
        before = draw(st.lists(st.sampled_from(WHITESPACE), max_size=2))
        after = draw(st.lists(st.sampled_from(WHITESPACE), min_size=0 if before else 1, max_size=2))
        variant = "".join(before) + variant + "".join(after)
    if kind in ("case", "mixed"):
        fold = draw(st.sampled_from([str.upper, str.lower, str.title, str.casefold, str.swapcase]))
        variant = fold(variant)
    if kind in ("unicode", "mixed"):
        form = draw(st.sampled_from(["NFC", "NFD", "NFKC", "NFKD"]))
        variant = unicodedata.normalize(form, variant)  # type: ignore[arg-type]
    if kind in ("zero-width", "mixed") or variant == victim:
        at = draw(st.integers(min_value=0, max_value=len(variant)))
        variant = variant[:at] + draw(st.sampled_from(ZERO_WIDTH)) + variant[at:]
    return victim, variant


@given(pair=look_alikes())
@settings(max_examples=300, deadline=None)
def test_look_alike_ids_map_to_other_tenants_and_back(pair: tuple[str, str]) -> None:
    victim, variant = pair
    assert variant != victim
    tenant = resolve_scope(SessionContext(user_id=variant)).tenant_id
    assert tenant != identity_segment(victim)
    assert unescape_segment(tenant) == variant  # reversible: the id is recoverable as typed


@pytest.fixture(scope="module")
def emulator() -> Iterator[Any]:
    from memcore_tablestore.testing import running_emulator

    with running_emulator(access_key_id="ak-variants", access_key_secret="sk-variants") as server:
        yield server


@pytest.fixture(params=["sqlite", "tablestore"])
def opener(request: pytest.FixtureRequest) -> Callable[[Path], Any]:
    """Opens the shared store of one example: a SQLite file, or the emulator over real HTTP."""
    if request.param == "sqlite":
        return lambda home: SqliteMemoryStore(home / "shared.sqlite3")
    from memcore_tablestore import Credentials, TableStoreMemoryStore

    server = request.getfixturevalue("emulator")
    creds = Credentials("ak-variants", "sk-variants")
    return lambda home: TableStoreMemoryStore(server.url, server.instance_name, creds, timeout=5.0)


def _provider(home: Path, opener: Callable[[Path], Any], user_id: str) -> MemcoreMemoryProvider:
    """A provider on the example's shared store (each opens, and on shutdown closes, its own)."""
    provider = MemcoreMemoryProvider(store_factory=lambda _config: opener(home), environ={})
    provider.initialize("s1", hermes_home=str(home), platform="cli", user_id=user_id)
    return provider


def _call(provider: MemcoreMemoryProvider, name: str, **args: Any) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(provider.handle_tool_call(name, args))
    return answer


@given(pair=look_alikes())
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_look_alike_reads_lists_or_deletes_the_victims_memories(
    opener: Callable[[Path], Any], pair: tuple[str, str]
) -> None:
    victim_id, variant = pair
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        store_name = f"s{uuid.uuid4().hex[:12]}"  # one memory store per example on the emulator
        (home / "tablestore_memory.json").write_text(json.dumps({"memory_store_name": store_name}))
        victim = _provider(home, opener, victim_id)
        written = _call(victim, "tablestore_remember", content=f"{victim_id}'s {SECRET}", sync=True)
        (memory_id,) = written["memory_ids"]
        victim.shutdown()

        attacker = _provider(home, opener, variant)
        try:
            assert attacker.runtime is not None
            assert attacker.runtime.scope.tenant_id != identity_segment(victim_id)
            found = _call(attacker, "tablestore_search", query=f"{victim_id} {SECRET}", top_k=50)
            listed = _call(attacker, "tablestore_profile", limit=100)
            texts = [h["text"] for h in found["results"]] + [m["text"] for m in listed["memories"]]
            assert all(SECRET not in text for text in texts)
            forgot = _call(attacker, "tablestore_forget", memory_id=memory_id)
            assert forgot["error"]["code"] == "not_found"
        finally:
            attacker.shutdown()

        victim = _provider(home, opener, victim_id)
        try:
            profile = _call(victim, "tablestore_profile", limit=100)["memories"]
            assert [m["id"] for m in profile] == [memory_id]
        finally:
            victim.shutdown()
