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
