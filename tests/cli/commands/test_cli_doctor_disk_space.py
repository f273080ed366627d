"""``memcore doctor`` on a disk with next to no room: every check could pass (the file is
sound, and a search reads it while another process holds its shared-memory file) while
every write fails, so the data home fails, naming the free bytes, exit 5."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _statvfs_with(free: int, home: Path, real=os.statvfs):  # type: ignore[no-untyped-def]
    def statvfs(path):  # type: ignore[no-untyped-def]
        st = real(path)
        if Path(path) != home:
            return st
        fields = list(st)
        fields[4] = free // st.f_frsize  # f_bavail
        return os.statvfs_result(fields)

    return statvfs


@pytest.mark.skipif(not hasattr(os, "statvfs"), reason="no statvfs")
def test_doctor_fails_the_data_home_on_a_nearly_full_disk(local_cli, monkeypatch) -> None:
    local_cli.ok("add", "--sync", "doctor needs a store")
    monkeypatch.setattr(os, "statvfs", _statvfs_with(8192, local_cli.home))
    result = local_cli("--json", "doctor")
    assert result.exit_code == 5, result.stdout
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    home = checks["data home"]
    assert not home["ok"]
    assert "8,192 bytes free" in home["detail"] and "writes fail" in home["detail"]
    assert checks["integrity"]["ok"]  # the file itself is sound


@pytest.mark.skipif(not hasattr(os, "statvfs"), reason="no statvfs")
def test_doctor_passes_the_data_home_with_room(local_cli, monkeypatch) -> None:
    local_cli.ok("add", "--sync", "doctor needs a store")
    monkeypatch.setattr(os, "statvfs", _statvfs_with(64 << 20, local_cli.home))
    checks = {c["name"]: c for c in local_cli.json("doctor")["checks"]}
    assert checks["data home"]["ok"], checks["data home"]
