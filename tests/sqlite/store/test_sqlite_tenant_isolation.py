"""Two user ids built to collide never share data in one SQLite file.

The mapping from ids to tenants is attacked on its own in
``tests/reliability/test_tenant_mapping_attack.py``; here the pairs go through the library to
the real store, where SQL could still join what the mapping keeps apart (a ``LIKE`` with ``%``
or ``_``, a case-insensitive collation, a prefix match, a digest tag shared by two tenants).
The attacker's every id-taking call on the victim's memory must answer exactly as for an id
that does not exist, and change nothing.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore import MemcoreConfig, Memory
from memcore.errors import MemcoreError

#: Pieces whose forms differ by case, normalisation, escaping or SQL pattern meaning.
PIECES = ["a", "A", "%", "_", "%25", "%5F", "\\", "é", "e\u0301", "Å", "\u212b", "ß", "ss", " "]


def _variants(a: str) -> list[str]:
    """Ids an attacker would try to land on ``a``'s tenant with."""
    return [
        a.upper(),
        a.lower(),
        a.casefold(),
        *(unicodedata.normalize(f, a) for f in ("NFC", "NFD", "NFKC", "NFKD")),  # type: ignore[arg-type]
        a + "%",
        a + "_",
        a[:-1],
        a[:-1] + "_",
        a[:-1] + "%",
        a.replace("%", "_"),
        a.replace("_", "%"),
        a.replace("%", "%25"),
        a.replace("%25", "%"),
        a + " ",
        "%",
        "_",
    ]


@st.composite
def pairs(draw: st.DrawFn) -> tuple[str, str]:
    victim = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6)))
    attacker = draw(st.sampled_from(_variants(victim)) | st.text(min_size=1, max_size=8))
    return victim, attacker


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Memory]]:
    db: Path = tmp_path_factory.mktemp("isolation") / "m.db"
    handles: dict[str, Memory] = {}

    def for_user(user: str) -> Memory:
        if user not in handles:
            handles[user] = Memory.open(
                "local", config=MemcoreConfig(embedder="none"), user_id=user, path=db
            )
        return handles[user]

    yield for_user
    for mem in handles.values():
        mem.close()


def _answer(call: Callable[[], object], memory_id: str) -> tuple[str, str]:
    try:
        call()
    except MemcoreError as exc:
        return type(exc).__name__, exc.message.replace(memory_id, "<ID>")
    return "ok", ""


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pair=pairs())
def test_ids_built_to_collide_never_share_a_memory(
    opened: Callable[[str], Memory], pair: tuple[str, str]
) -> None:
    victim_id, attacker_id = pair
    if victim_id == attacker_id or not victim_id.strip() or not attacker_id.strip():
        return
    try:
        attacker = opened(attacker_id)
    except MemcoreError:
        return  # an id the library refuses (a lone surrogate) reaches no tenant at all
    victim = opened(victim_id)
    assert victim.scope.tenant_id != attacker.scope.tenant_id
    secret = f"walrus secret {uuid.uuid4().hex}"
    [mid] = victim.add(text=secret, metadata={"kind": "secret"})
    missing = uuid.uuid4().hex

    assert all(m.id != mid for m in attacker.iter_all())
    hits = attacker.search(secret, top_k=50) + attacker.search(
        "walrus secret", top_k=50, filters={"kind": "secret"}
    )
    assert all(h.memory.id != mid for h in hits)
    calls: list[Callable[[str], Callable[[], object]]] = [
        lambda i: lambda: attacker.get(i),
        lambda i: lambda: attacker.history(i),
        lambda i: lambda: attacker.update(i, text="overwritten"),
        lambda i: lambda: attacker.delete(i),
    ]
    for call in calls:
        assert _answer(call(mid), mid) == _answer(call(missing), missing)
    attacker.delete_all()

    kept = victim.get(mid)
    assert (kept.text, dict(kept.metadata)) == (secret, {"kind": "secret"})
