"""``memcore doctor`` on a disk with next to no room: every check could pass (the file is
sound, and a search reads it while another process holds its shared-memory file) while
every write fails, so the data home fails, naming the free bytes, exit 5."""

from __future__ import annotations

import json
import os

import pytest


@pytest.mark.skipif(not hasattr(os, "statvfs"), reason="no statvfs")
def test_doctor_fails_the_data_home_on_a_nearly_full_disk(local_cli, nearly_full) -> None:
    local_cli.ok("add", "--sync", "doctor needs a store")
    nearly_full(local_cli.home, 8192)
    result = local_cli("--json", "doctor")
    assert result.exit_code == 5, result.stdout
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    home = checks["data home"]
    assert not home["ok"]
    assert "8,192 bytes free" in home["detail"] and "writes fail" in home["detail"]
    assert checks["integrity"]["ok"]  # the file itself is sound


@pytest.mark.skipif(not hasattr(os, "statvfs"), reason="no statvfs")
def test_doctor_passes_the_data_home_with_room(local_cli, nearly_full) -> None:
    local_cli.ok("add", "--sync", "doctor needs a store")
    nearly_full(local_cli.home, 64 << 20)
    checks = {c["name"]: c for c in local_cli.json("doctor")["checks"]}
    assert checks["data home"]["ok"], checks["data home"]
