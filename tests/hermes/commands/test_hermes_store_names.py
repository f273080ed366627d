"""A mistyped ``memory_store_name`` on the embedded store, through the real ``hermes``.

``hermes tablestore-mem search`` (list, get, stats, export, forget, migrate-tenant, reindex)
created the mistyped store, empty, and answered as if there were no memories, where
``memcore`` refuses: a read of a missing store exits 3 and names the close stores. The same
rule now holds here: a read creates the store only in a file that holds none yet, the first
write (``add``, ``import``, a session's turn) creates it, and doctor names the close stores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite import SqliteMemoryStore

HINT = "; did you mean 'hermes_mem'?"


def _stores(home: Path) -> list[str]:
    with SqliteMemoryStore(home / "memcore.sqlite3") as store:
        return [s.name for s in store.list_stores()]


def _local(home: Path, kit: Any, **config: Any) -> None:
    config = {"embedder": "none", **config}
    kit.write_config(home, backend="local", local_path="memcore.sqlite3", **config)


def test_reads_of_a_mistyped_embedded_store_exit_3_and_create_nothing(
    hermes_home: Path, kit: Any
) -> None:
    kit.install_plugin(hermes_home)
    _local(hermes_home, kit)
    added = kit.run_hermes(hermes_home, "tablestore-mem", "add", "I keep bees", "--sync")
    assert added.returncode == 0, added.stderr
    (memory_id,) = json.loads(added.stdout)["memory_ids"]
    _local(hermes_home, kit, memory_store_name="hermes_me")
    for argv in (
        ("search", "bees"),
        ("list",),
        ("get", memory_id),
        ("stats",),
        ("export", "--out", "-"),
        ("forget", "--yes", memory_id),
    ):
        result = kit.run_hermes(hermes_home, "tablestore-mem", *argv)
        assert result.returncode == 3, (argv, result.stdout, result.stderr)
        (line,) = result.stderr.splitlines()
        assert line == (
            "tablestore-mem: error: memory store 'hermes_me' does not exist (a read does not "
            "create it: the first write does)" + HINT
        ), argv
        assert json.loads(result.stdout)["error"]["code"] == "store_not_found", argv
    assert _stores(hermes_home) == ["hermes_mem"]
    checked = kit.run_hermes(hermes_home, "tablestore-mem", "doctor")
    doctor = json.loads(checked.stdout)
    assert doctor["store"]["status"].endswith(HINT), doctor["store"]
    # It passed ("ok": true, exit 0) while every read refused, exit 3.
    assert (doctor["ok"], checked.returncode) == (False, 1)
    assert doctor["store"]["error"]["code"] == "store_not_found"
    added = kit.run_hermes(hermes_home, "tablestore-mem", "add", "I keep wasps", "--sync")
    assert added.returncode == 0, added.stderr  # the first write creates it
    assert _stores(hermes_home) == ["hermes_me", "hermes_mem"]


def test_a_reindex_of_a_mistyped_store_is_refused_not_made_on_it(
    hermes_home: Path, kit: Any
) -> None:
    """``reindex`` made the mistyped store, empty, re-embedded 0 memories and exited 0."""
    kit.install_plugin(hermes_home)
    _local(hermes_home, kit)
    assert kit.run_hermes(hermes_home, "tablestore-mem", "add", "I keep bees").returncode == 0
    _local(hermes_home, kit, memory_store_name="hermes_me", embedder="auto")  # the shipped model
    result = kit.run_hermes(hermes_home, "tablestore-mem", "reindex")
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert result.stderr.splitlines()[-1].endswith(HINT)
    assert _stores(hermes_home) == ["hermes_mem"]


def test_the_first_read_of_a_new_file_still_makes_its_store(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    _local(hermes_home, kit)
    listed = kit.run_hermes(hermes_home, "tablestore-mem", "list")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["items"] == []
    assert _stores(hermes_home) == ["hermes_mem"]


def test_a_session_makes_the_configured_store_beside_others(hermes_home: Path, kit: Any) -> None:
    """A session writes: its first turn creates the configured store even where the file
    holds other stores (a renamed ``memory_store_name`` is a new store, not a typo to refuse)."""
    kit.install_plugin(hermes_home)
    _local(hermes_home, kit)
    assert kit.run_hermes(hermes_home, "tablestore-mem", "add", "I keep bees").returncode == 0
    _local(hermes_home, kit, memory_store_name="hermes_me")
    provider = MemcoreMemoryProvider(environ={}, retry=kit.FAST_RETRY)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="fay")
    try:
        provider.sync_turn("I keep wasps too", "Noted.")
        assert kit.settle(provider, 20)
    finally:
        provider.shutdown()
    assert _stores(hermes_home) == ["hermes_me", "hermes_mem"]
