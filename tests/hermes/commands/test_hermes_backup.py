"""``hermes backup`` and ``hermes import`` with the plugin's files, through the real ``hermes``.

Hermes' backup walks the home itself and restores each path a provider's ``backup_paths``
names to where it was: a path inside the home, named there too, was written back into the
profile the backup came from when the archive was imported into another home.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider

pytestmark = pytest.mark.slow


def _hermes(kit: Any, user: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = kit.run_hermes(home, *args, timeout=120, user_home=user)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def _texts(kit: Any, user: Path, home: Path) -> set[str]:
    listed = json.loads(_hermes(kit, user, home, "tablestore-mem", "list").stdout)
    return {m["text"] for m in listed["items"]}


def test_importing_a_backup_elsewhere_leaves_the_profile_it_came_from_alone(
    tmp_path: Path, kit: Any
) -> None:
    user = tmp_path / "user"
    profile = user / ".hermes" / "profiles" / "a"
    profile.mkdir(parents=True)
    kit.install_plugin(profile)
    kit.write_config(profile, backend="local", embedder="none")
    _hermes(kit, user, profile, "tablestore-mem", "add", "my locker code is 4411", "--sync")
    _hermes(kit, user, profile, "backup", "-o", str(tmp_path / "a.zip"))
    _hermes(kit, user, profile, "tablestore-mem", "add", "my wifi password is hunter2", "--sync")

    scratch = user / "scratch"
    scratch.mkdir()
    _hermes(kit, user, scratch, "import", "--force", str(tmp_path / "a.zip"))

    assert _texts(kit, user, profile) == {"my locker code is 4411", "my wifi password is hunter2"}
    # The archive holds the profile under the root it was a profile of.
    assert _texts(kit, user, scratch / "profiles" / "a") == {"my locker code is 4411"}


def test_only_a_database_outside_the_home_is_named(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local", local_path="db/mem.sqlite3")
    assert MemcoreMemoryProvider().backup_paths() == []
    outside = hermes_home.parent / "elsewhere" / "mem.sqlite3"
    kit.write_config(hermes_home, backend="local", local_path=str(outside))
    assert MemcoreMemoryProvider().backup_paths() == [str(outside)]
    linked = hermes_home / "linked"
    linked.symlink_to(outside.parent, target_is_directory=True)
    kit.write_config(hermes_home, backend="local", local_path=str(linked / "mem.sqlite3"))
    assert MemcoreMemoryProvider().backup_paths() == [str(linked / "mem.sqlite3")]
