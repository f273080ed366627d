"""Property: ``memcore export`` then ``memcore import`` into a fresh store restores the tenant.

Any history of adds, repeats (the same text again, new metadata), updates and deletes, with
Unicode and metadata up to the limits, written through the service as every host writes:
the fresh store then holds the same memories, with the same ids, texts, scopes, metadata and
creation times. ``updated_at`` and ``version`` are the import's own (documented in transfer.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore import limits
from memcore.errors import InvalidInput
from memcore.paging import every_item
from memcore.scope import Scope
from memcore.service import RESERVED_METADATA_KEYS, MemoryService
from memcore_sqlite import SqliteMemoryStore
from tests.cli.conftest import Cli

STORE = "hermes_mem"
TENANT = Scope("hermes", "__default__", "hermes", "__default__")
SCOPES = (
    TENANT,
    Scope("hermes", "__default__", "coder", "r1"),
    Scope("hermes", "__default__", "hermes", "s2"),
)
OUTSIDER = Scope("hermes", "someone_else", "hermes", "x")
_dirs = itertools.count()

unicode_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40
).filter(lambda s: not limits.is_blank(s))  # text that shows something, as check_text reads it
texts = st.one_of(
    unicode_text,
    st.sampled_from(["咖啡 ☕ coffee", "Ünïcödé naïve café", "emoji 👩‍👩‍👧 family", "  padded  "]),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "咖", "🙂"]), st.integers(1, 7_999)),
)
keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),
    min_size=1,
    max_size=limits.MAX_METADATA_KEY_CHARS,
).filter(lambda k: k not in RESERVED_METADATA_KEYS)
values = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20),
    st.builds(lambda c: c * limits.MAX_METADATA_VALUE_CHARS, st.sampled_from(["v", "值"])),
)
metadata = st.dictionaries(keys, values, max_size=limits.MAX_METADATA_KEYS)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 2), texts, metadata),
        st.tuples(st.just("repeat"), st.integers(0, 50), metadata),
        st.tuples(st.just("update"), st.integers(0, 50), st.none() | texts, st.none() | metadata),
        st.tuples(st.just("delete"), st.integers(0, 50)),
    ),
    min_size=1,
    max_size=25,
)


def _tenant(store: SqliteMemoryStore) -> list:
    return list(
        every_item(
            lambda token: store.list_memories(
                STORE, TENANT.tenant_pattern(), limit=limits.MAX_PAGE_LIMIT, next_token=token
            )
        )
    )


def _state(store: SqliteMemoryStore) -> dict:
    return {m.id: (m.text, m.scope, dict(m.metadata), m.created_at) for m in _tenant(store)}


def _play(store: SqliteMemoryStore, history) -> None:
    service = MemoryService(store, store_name=STORE, scope=TENANT)
    service.store.add_text(STORE, OUTSIDER, "another tenant's memory", sync=True)
    for op in history:
        present = sorted(_tenant(store), key=lambda m: m.id)
        if op[0] == "add":
            service.switch_scope(SCOPES[op[1]])
            service.remember(op[2], metadata=op[3], sync=True)
            continue
        if not present:
            continue
        target = present[op[1] % len(present)]
        service.switch_scope(target.scope)
        if op[0] == "repeat":
            service.remember(target.text, metadata=op[2], sync=True)
        elif op[0] == "delete":
            service.forget(target.id)
        else:
            _, _, text, meta = op
            # The store keeps one memory per text and scope; an update to a text its scope
            # already holds would make two (import, deduplicating by content, keeps one).
            held = {m.text.strip() for m in present if m.scope == target.scope}
            if text is not None and text.strip() in held - {target.text.strip()}:
                text = None
            if text is None and meta is None:
                continue
            try:
                service.update(target.id, text=text, metadata=meta)
            except InvalidInput as exc:  # the merge would pass the key limit: refused, unchanged
                assert "limit" in exc.message


def _cli(home: Path, db: Path) -> Cli:
    return Cli(home, store_factory=lambda settings: SqliteMemoryStore(db))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=ops)
def test_export_then_import_into_a_fresh_store_restores_the_tenant(tmp_path, history):
    root = tmp_path / str(next(_dirs))
    source_db, target_db = root / "a" / "memcore.db", root / "b" / "memcore.db"
    source_db.parent.mkdir(parents=True)
    target_db.parent.mkdir(parents=True)
    with SqliteMemoryStore(source_db) as store:
        store.ensure_store(STORE)
        _play(store, history)
        before = _state(store)
    assert all(len(m[2]) <= limits.MAX_METADATA_KEYS for m in before.values())

    out = root / "export.jsonl"
    _cli(source_db.parent, source_db).ok("export", "--out", str(out))
    report = _cli(target_db.parent, target_db).json("import", str(out))
    assert (report["total"], report["added"], report["id_map"]) == (len(before), len(before), {})
    with SqliteMemoryStore(target_db) as fresh:
        assert _state(fresh) == before
