"""``hermes tablestore-mem`` reads of a memory store that is not there (deleted, or a mistyped
``memory_store_name``) say so, exit 3, instead of creating it empty and finding nothing; the
first write still creates it (``auto_create_store`` is on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope


def _stores(server: Any) -> list[str]:
    from memcore_tablestore.testing import store_for

    with store_for(server, timeout=5.0) as admin:
        return [s.name for s in admin.list_stores()]


def test_reads_of_a_deleted_or_mistyped_store_exit_3_and_create_nothing(
    hermes_home: Path, emulator: Any, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from memcore_tablestore.testing import store_for

    kit.emulator_home(hermes_home, emulator)
    with store_for(emulator, timeout=5.0) as admin:
        admin.ensure_store("hermes_mem")
        admin.add_text("hermes_mem", Scope("hermes", "fay", "hermes", "s1"), "a note", sync=True)
        admin.delete_store("hermes_mem")
    for args in (("search", "note"), ("list",), ("stats",), ("export", "--out", "-")):
        code, answer = kit.run_cli(capsys, *args)
        assert code == 3, (args, answer)
        assert answer["error"]["code"] == "store_not_found", (args, answer)
        assert "'hermes_mem' does not exist" in answer["error"]["message"]
    assert _stores(emulator) == []
    kit.emulator_home(hermes_home, emulator, memory_store_name="hermes_mme")
    code, answer = kit.run_cli(capsys, "search", "note")
    assert (code, answer["error"]["code"]) == (3, "store_not_found"), answer
    assert _stores(emulator) == []
    code, answer = kit.run_cli(capsys, "add", "a new note")  # the first write creates it
    assert code == 0, answer
    assert _stores(emulator) == ["hermes_mme"]
