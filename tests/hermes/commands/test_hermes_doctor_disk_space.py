"""``hermes tablestore-mem doctor`` on a disk with next to no room: every check passed (the
spool and the local file are sound, the store answers) while every write of the spool
failed. Now the folders the plugin writes (the Hermes home, and the local store's folder
when it is elsewhere) are checked by ``memcore doctor``'s rule: under 1 MiB free fails."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "statvfs"), reason="no statvfs")


def _home_with_a_memory(hermes_home: Path, kit: Any, capsys: Any, **config: Any) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none", **config)
    code, answer = kit.run_cli(capsys, "add", "doctor needs a store", "--sync")
    assert code == 0, answer


def test_doctor_fails_on_a_nearly_full_disk(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str], nearly_full: Any
) -> None:
    _home_with_a_memory(hermes_home, kit, capsys)
    nearly_full(hermes_home, 8192)
    code, report = kit.run_cli(capsys, "doctor")
    assert code == 1 and not report["ok"], report
    (folder,) = report["disk"]
    assert folder["path"] == str(hermes_home) and not folder["ok"]
    assert folder["free_bytes"] == 8192
    assert "8,192 bytes free" in folder["problem"] and "writes fail" in folder["problem"]
    assert report["integrity"]["ok"] and report["spool"]["integrity"]["ok"]  # files are sound


def test_doctor_checks_the_local_store_folder_elsewhere_too(
    hermes_home: Path,
    tmp_path: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    nearly_full: Any,
) -> None:
    elsewhere = tmp_path / "memories"
    _home_with_a_memory(hermes_home, kit, capsys, local_path=str(elsewhere / "m.sqlite3"))
    nearly_full(elsewhere, 8192)
    code, report = kit.run_cli(capsys, "doctor")
    assert code == 1 and not report["ok"], report
    assert [(f["path"], f["ok"]) for f in report["disk"]] == [
        (str(hermes_home), True),
        (str(elsewhere), False),
    ]


def test_doctor_passes_with_room(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str], nearly_full: Any
) -> None:
    _home_with_a_memory(hermes_home, kit, capsys)
    nearly_full(hermes_home, 64 << 20)
    code, report = kit.run_cli(capsys, "doctor")
    assert code == 0 and report["ok"], report
    assert [f["ok"] for f in report["disk"]] == [True]
