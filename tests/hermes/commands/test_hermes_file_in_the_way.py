"""A ``local_path`` whose folder cannot be made because a file stands where a folder must be:
no retry makes it, so the start fails and doctor says so, as for a read-only folder. It was
taken for an outage: the session started, every turn waited in the spool for ever, and doctor
passed with "the first session creates it"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import PermissionDenied
from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite.storage.file_modes import make_home


@pytest.fixture
def in_the_way(tmp_path: Path) -> Path:
    placed = tmp_path / "notes"
    placed.write_text("a file, not a folder\n", encoding="utf-8")
    return placed


@pytest.mark.parametrize("below", ["", "a/b"])
def test_a_folder_under_a_file_is_refused_not_retried(in_the_way: Path, below: str) -> None:
    with pytest.raises(PermissionDenied) as refused:
        make_home(in_the_way / below if below else in_the_way)
    assert not refused.value.retryable
    assert str(in_the_way) in str(refused.value)


def test_the_session_does_not_start_and_doctor_fails(
    hermes_home: Path, in_the_way: Path, kit: Any
) -> None:
    local_path = in_the_way / "memories.db"
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=str(local_path))
    result = kit.run_hermes(hermes_home, "tablestore-mem", "doctor")
    assert result.returncode == 1, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report["ok"] is False
    error = report["store"]["error"]
    assert (error["code"], error["field"]) == ("permission_denied", "local_path")
    assert f"cannot create {in_the_way}: it is a file" in error["message"]
    assert str(hermes_home / "tablestore_memory.json") in error["message"]

    provider = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    try:
        with pytest.raises(PermissionDenied):
            provider.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    finally:
        provider.shutdown()
