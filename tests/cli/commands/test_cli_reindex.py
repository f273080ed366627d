"""``memcore reindex``: memories written lexically get vectors once an embedder is there."""

from __future__ import annotations

from typing import Any

import pytest

from memcore_cli.output.exit_codes import ExitCode
from memcore_cli.settings.home import DB_FILENAME

pytest.importorskip("onnxruntime")


def test_reindex_embeds_what_was_stored_without_vectors(
    local_cli: Any, set_config: Any, home: Any
) -> None:
    set_config(home, {"embedder": "none"})
    for text in ("I'm vegetarian", "I live in Lisbon", "My cat is called Miso"):
        local_cli.ok("add", text)
    set_config(home, {"embedder": "auto"})
    vectors = _vector_check(local_cli)
    assert vectors["ok"] and vectors["detail"].startswith("3 memories have no current vector")
    assert "memcore reindex" in vectors["detail"]
    first = local_cli.json("reindex")
    assert first == {"embedded": 3, "model": "all-MiniLM-L6-v2-qint8-fused"}
    assert local_cli.json("reindex")["embedded"] == 0
    assert _vector_check(local_cli)["detail"].startswith("every memory has a vector")
    hits = local_cli.json("search", "dietary restrictions")
    assert hits[0]["text"] == "I'm vegetarian"


def test_reindex_replaces_the_vectors_an_older_release_took_from_the_speakers_label(
    local_cli: Any, set_config: Any, home: Any, older_release: Any
) -> None:
    set_config(home, {"embedder": "auto"})
    with older_release.writing():
        local_cli.ok("add", "--sync", "Priya: I signed up for pottery")
        local_cli.ok("add", "--sync", "I live in Lisbon")
    older_release.leave(home / DB_FILENAME)
    local_cli.ok("count")  # the first command upgrades the file (doctor reads it as it is)
    assert _vector_check(local_cli)["detail"].startswith("1 memory has no current vector")
    assert local_cli.json("reindex")["embedded"] == 1
    assert local_cli.json("reindex")["embedded"] == 0
    assert _vector_check(local_cli)["detail"].startswith("every memory has a vector")


def _vector_check(local_cli: Any) -> Any:
    checks = local_cli.json("doctor")["checks"]
    return next(c for c in checks if c["name"] == "vectors")


def test_reindex_without_an_embedder_is_refused_with_a_reason(
    local_cli: Any, set_config: Any, home: Any
) -> None:
    set_config(home, {"embedder": "none"})
    result = local_cli("reindex")
    assert result.exit_code == ExitCode.USAGE
    assert "no embedder" in result.stderr


def test_reindex_with_embedder_none_says_so_and_creates_no_database(
    local_cli: Any, set_config: Any, home: Any
) -> None:
    """With ``embedder none`` set, reindex opened (on a fresh home, created) the database and
    then advised installing memcore-sqlite[semantic], which is installed; it now names the
    setting, and opens nothing."""
    set_config(home, {"embedder": "none"})
    result = local_cli("reindex")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert "embedder none" in line and "install" not in line
    assert sorted(p.name for p in home.iterdir()) == ["config.json"]


def test_reindex_on_tablestore_is_refused_without_calling_the_service(
    local_cli: Any, set_config: Any, home: Any
) -> None:
    """reindex asked the service for its memory store first, so an unreachable one answered
    exit 5 "cannot reach", and a reachable one only then "applies to the local store"."""
    set_config(home, {"endpoint": "http://127.0.0.1:1", "instance_name": "nowhere"})
    env = {"TABLESTORE_MEMORY_AK": "ak", "TABLESTORE_MEMORY_SK": "sk"}
    result = local_cli("--backend", "tablestore", "reindex", env=env)
    assert result.exit_code == ExitCode.USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert "applies to the local store" in line


def test_doctor_counts_the_vectors_its_own_tenant_lacks(
    local_cli: Any, set_config: Any, home: Any
) -> None:
    """``doctor``'s vectors line counted every tenant's memories without a vector: Bob was
    told about Alice's deferred adds (and that his next search embeds them, which it does
    not: a search embeds its own tenant's)."""
    set_config(home, {"embedder": "none"})
    for text in ("Alice keeps bees", "Alice rows at dawn"):
        local_cli.ok("--tenant", "alice", "add", text)
    set_config(home, {"embedder": "auto"})
    local_cli.ok("--tenant", "bob", "add", "--sync", "Bob collects stamps")
    checks = local_cli.json("--tenant", "bob", "doctor")["checks"]
    bob = next(c for c in checks if c["name"] == "vectors")
    assert bob["detail"].startswith("every memory has a vector"), bob
    checks = local_cli.json("--tenant", "alice", "doctor")["checks"]
    alice = next(c for c in checks if c["name"] == "vectors")
    assert alice["detail"].startswith("2 memories have no current vector"), alice
