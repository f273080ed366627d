"""Re-embedding after the embedder changed: in the background on start, and on demand."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite import SqliteMemoryStore, TextItem

STORE = "hermes_mem"
SCOPE = Scope("hermes", "lea", "hermes", "old-session")


def _lacking_once_started(db: Path, hermes_home: Path, kit: Any) -> int:
    """Memories without a current vector once a provider with an embedder has started on
    ``db`` and its background re-embedding is done."""
    provider = MemcoreMemoryProvider(
        store_factory=lambda _config: SqliteMemoryStore(db, embedder=HashingEmbedder(64)),
        environ={},
    )
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="lea")
    try:
        return int(kit.lacking_vectors(provider, STORE, 20))
    finally:
        provider.shutdown()


def test_the_provider_re_embeds_in_the_background_on_start(hermes_home: Path, kit: Any) -> None:
    db = hermes_home / "shared.sqlite3"
    with SqliteMemoryStore(db) as lexical:  # written before the embedder existed
        lexical.ensure_store(STORE)
        lexical.add_many(STORE, [TextItem(SCOPE, f"fact number {i}") for i in range(40)])
    assert _lacking_once_started(db, hermes_home, kit) == 0


def test_the_provider_re_embeds_what_an_older_release_embedded_with_the_speaker(
    hermes_home: Path, kit: Any, older_release: Any
) -> None:
    """A group session's "[Name] text" memories, embedded name and all before schema 11."""
    db = hermes_home / "shared.sqlite3"
    said = [f"[Yuki] small talk {i}" for i in range(30)] + ["[Sam] I love Khruangbin"]
    with older_release.writing(), SqliteMemoryStore(db, embedder=HashingEmbedder(64)) as old:
        old.ensure_store(STORE)
        old.add_many(STORE, [TextItem(SCOPE, text) for text in said])
    older_release.leave(db)
    with SqliteMemoryStore(db, embedder=HashingEmbedder(64)) as reopened:
        assert reopened.missing_vectors(STORE) == len(said)
    assert _lacking_once_started(db, hermes_home, kit) == 0


def test_doctor_counts_and_reindex_embeds_the_memories_lacking_a_vector(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    kit.write_config(hermes_home, backend="local", embedder="none")
    for text in ("I'm vegetarian", "I live in Porto"):
        code, _ = kit.run_cli(capsys, "add", text)
        assert code == 0
    code, report = kit.run_cli(capsys, "doctor")
    assert report["search"]["mode"] == "lexical" and "embedder" not in report["search"]

    kit.write_config(hermes_home, backend="local")  # the semantic packages are installed
    code, report = kit.run_cli(capsys, "doctor")
    assert report["search"]["mode"] == "hybrid"
    assert report["search"]["memories_without_vector"] == 2
    assert "hermes tablestore-mem reindex" in report["search"]["reindex"]
    code, done = kit.run_cli(capsys, "reindex")
    assert code == 0 and done == {"embedded": 2, "model": "all-MiniLM-L6-v2-qint8-fused"}
    code, report = kit.run_cli(capsys, "doctor")
    assert report["search"]["memories_without_vector"] == 0
    code, found = kit.run_cli(capsys, "search", "dietary restrictions")
    assert found["results"][0]["text"] == "I'm vegetarian"


def test_reindex_on_tablestore_is_refused_with_a_reason(
    hermes_home: Path, kit: Any, emulator: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.emulator_home(hermes_home, emulator)
    code, answer = kit.run_cli(capsys, "reindex")
    assert code == 2 and "TableStore embeds on the server" in answer["error"]["message"]


class _CountingEmbedder(HashingEmbedder):
    """Counts every text it embeds (slowly enough that threads embedding side by side meet)."""

    def __init__(self) -> None:
        super().__init__(64)
        self.embedded: Counter[str] = Counter()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.embedded.update(texts)
        time.sleep(0.02)
        return super().embed(texts)


def test_sessions_starting_together_re_embed_each_memory_once(hermes_home: Path, kit: Any) -> None:
    """A gateway starts a provider per session, each with its own store on the one file: the
    first starts the re-embedding, the others must not repeat it side by side (each memory
    embedded once per session on the cores the turns need)."""
    db = hermes_home / "shared.sqlite3"
    facts = [f"fact number {i}" for i in range(300)]
    with SqliteMemoryStore(db) as lexical:
        lexical.ensure_store(STORE)
        lexical.add_many(STORE, [TextItem(SCOPE, text) for text in facts])
    embedder = _CountingEmbedder()
    providers = []
    try:
        for i in range(4):
            provider = MemcoreMemoryProvider(
                store_factory=lambda _config: SqliteMemoryStore(db, embedder=embedder),
                environ={},
            )
            provider.initialize(f"s{i}", hermes_home=str(hermes_home), user_id=f"user{i}")
            providers.append(provider)
        assert kit.lacking_vectors(providers[0], STORE, 30) == 0
        assert {text: embedder.embedded[text] for text in facts} == dict.fromkeys(facts, 1)
    finally:
        for provider in providers:
            provider.shutdown()
