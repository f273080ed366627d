"""``hermes tablestore-mem`` with a spool that cannot be opened (a read-only or full Hermes
home): reads go on without sending what waits in it, and say so; an ``add`` that only the
spool could keep is refused with its reason, and ``add --sync`` stores at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes.config.home import SPOOL_FILE


def test_commands_without_a_spool_read_and_store_only_what_they_can_keep(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    spool = hermes_home / SPOOL_FILE
    spool.mkdir()  # as a permission denied: SQLite cannot open it

    code, answer, _ = kit.run_cli_full(capsys, "add", "Dana owns a kayak")
    assert code == 5
    assert answer["error"]["message"].startswith("memory writes are off: cannot open the spool")
    assert answer["error"]["retryable"] is False

    code, answer, err = kit.run_cli_full(capsys, "add", "--sync", "Dana sails")
    assert code == 0, err

    code, answer, err = kit.run_cli_full(capsys, "list")
    assert code == 0, err  # was exit 5: the spool it reads first could not be opened
    assert [m["text"] for m in answer["items"]] == ["Dana sails"]
    (line,) = err.splitlines()
    assert line.startswith(f"tablestore-mem: warning: cannot open the spool {spool}")
    assert "not sent first" in line
    assert json.dumps(answer).count("kayak") == 0
