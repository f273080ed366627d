"""Data homes: read-only ones still serve reads, failures name the path and exit 4, the first
run is announced only once it worked, and every entry point makes homes 0700 and files 0600."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memcore


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` cannot be written while inside: mode bits for a user, the immutable flag for
    root (which mode bits do not stop)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a read-only folder")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("this filesystem has no immutable flag")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _first_line(result) -> str:
    return result.stderr.splitlines()[0]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def filled(local_cli):
    memory_id = local_cli.json("add", "The user drinks green tea")["memory_ids"][0]
    return local_cli, memory_id


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_read_only_home_still_serves_reads(filled, what):
    cli, memory_id = filled
    target = cli.home if what == "folder" else cli.home / "memcore.db"
    with read_only(target):
        assert cli.json("list")["items"][0]["id"] == memory_id
        assert cli.json("search", "green tea")[0]["id"] == memory_id
        assert cli.json("get", memory_id[:8])["text"] == "The user drinks green tea"
        assert cli.json("count")["count"] == 1
        assert "green tea" in cli.ok("export").stdout
        refused = cli("add", "another memory")
        assert refused.exit_code == 4
        assert str(cli.home / "memcore.db") in _first_line(refused)
    assert cli.json("count")["count"] == 1


def test_doctor_on_a_read_only_home_exits_4(filled):
    cli, _ = filled
    with read_only(cli.home):
        result = cli("--json", "doctor")
    assert result.exit_code == 4
    import json

    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["data home"]["ok"] and "reads work" in checks["data home"]["detail"]


def test_an_empty_read_only_home_fails_with_the_path_and_no_welcome(home, local_cli):
    home.mkdir(parents=True, exist_ok=True)
    with read_only(home):
        result = local_cli("list")
    assert result.exit_code == 4
    assert "first run" not in result.stderr
    assert _first_line(result).startswith(f"memcore: error: cannot create {home / 'memcore.db'}")


def test_a_home_under_a_read_only_parent_exits_4(tmp_path):
    from tests.cli.conftest import Cli

    parent = tmp_path / "locked"
    parent.mkdir()
    cli = Cli(parent / "home")
    with read_only(parent):
        result = cli("list")
    assert result.exit_code == 4
    assert "first run" not in result.stderr
    assert str(parent / "home") in _first_line(result)


def test_the_first_run_is_announced_after_the_file_exists(local_cli):
    result = local_cli.ok("add", "hello")
    assert result.stderr.startswith("memcore: first run; your memories are stored in")
    assert "first run" not in local_cli.ok("add", "again").stderr


def test_the_cli_makes_a_private_home(tmp_path):
    from tests.cli.conftest import Cli

    home = tmp_path / "new" / "home"
    Cli(home).ok("--format", "plain", "list")
    assert mode(home) == 0o700
    assert mode(home / "memcore.db") == 0o600


def test_the_library_makes_a_private_home(tmp_path, monkeypatch):
    home = tmp_path / "lib-home"
    monkeypatch.setenv("MEMCORE_HOME", str(home))
    with memcore.Memory.open("local", config=memcore.MemcoreConfig(embedder="none")) as mem:
        mem.add(text="The user likes tea")
    assert mode(home) == 0o700
    for name in ("memcore.db", "memcore.db-wal", "memcore.db-shm"):
        if (home / name).exists():
            assert mode(home / name) == 0o600, name


def test_an_existing_world_readable_database_is_tightened(tmp_path):
    from memcore_sqlite import SqliteMemoryStore

    path = tmp_path / "old.db"
    SqliteMemoryStore(path).close()
    path.chmod(0o644)
    SqliteMemoryStore(path).close()
    assert mode(path) == 0o600


def test_a_closed_sqlite_store_raises_store_closed(tmp_path):
    from memcore_sqlite import SqliteMemoryStore

    store = SqliteMemoryStore(tmp_path / "x.db")
    store.close()
    with pytest.raises(memcore.StoreClosed) as info:
        store.list_stores()
    assert str(tmp_path / "x.db") in str(info.value)


def test_an_unreadable_config_exits_4_and_names_it(local_cli, monkeypatch):
    """Mode bits do not stop root, so the refusal is the operating system's own error."""
    from pathlib import Path as _Path

    config = local_cli.home / "config.json"
    real = _Path.read_bytes

    def refuse(self: _Path) -> bytes:
        if self == config:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(_Path, "read_bytes", refuse)
    result = local_cli("list")
    assert result.exit_code == 4
    assert _first_line(result) == (
        f"memcore: error: cannot read the config file {config}: permission denied"
    )


@pytest.fixture
def placed(local_cli, set_config, tmp_path):
    """A CLI whose config places the database by ``local_path``, outside ``MEMCORE_HOME``."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    config = set_config(local_cli.home, {"embedder": "none", "local_path": str(folder / "m.db")})
    return local_cli, folder, f"set local_path in {config}"


def test_the_first_run_with_local_path_names_local_path_not_memcore_home(placed):
    cli, folder, advice = placed
    result = cli.ok("add", "hello")
    assert result.stderr == (
        f"memcore: first run; your memories are stored in {folder / 'm.db'} "
        f"({advice} to keep them elsewhere)\n"
    )


def test_a_read_only_local_path_folder_names_local_path_not_memcore_home(placed):
    cli, folder, advice = placed
    with read_only(folder):
        result = cli("add", "hello")
        doctor = cli("--json", "doctor")
    assert result.exit_code == 4
    assert _first_line(result) == (
        f"memcore: error: cannot create {folder / 'm.db'}: {folder} is not writable "
        f"({advice} to a file in a writable folder)"
    )
    import json

    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert not checks["data home"]["ok"]
    assert checks["data home"]["detail"].endswith(f"({advice} to a file in a writable folder)")
    assert "MEMCORE_HOME" not in result.stderr + doctor.stdout


def test_a_local_path_folder_that_cannot_be_created_names_local_path(placed, set_config):
    cli, folder, advice = placed
    config = set_config(cli.home, {"embedder": "none", "local_path": str(folder / "new/m.db")})
    assert advice == f"set local_path in {config}"
    with read_only(folder):
        result = cli("add", "hello")
    assert result.exit_code == 4
    assert _first_line(result) == (
        f"memcore: error: cannot create {folder / 'new'}: permission denied "
        f"({advice} to a file in a writable folder)"
    )


def test_without_local_path_the_advice_stays_memcore_home(home, local_cli):
    home.mkdir(parents=True, exist_ok=True)
    with read_only(home):
        result = local_cli("list")
    assert _first_line(result).endswith("(set MEMCORE_HOME to a writable folder)")
    assert "(set MEMCORE_HOME to keep them elsewhere)" in local_cli.ok("add", "hi").stderr


@contextlib.contextmanager
def read_only_mount(root: Path) -> Iterator[None]:
    """Nothing can be created under ``root``, as on a read-only mount: the system answers
    EROFS, which is not a PermissionError (a test cannot mount, so the two calls that create
    files and folders answer it here)."""
    import errno

    real_mkdir, real_open = os.mkdir, os.open

    def refused(path: object) -> bool:
        return str(path).startswith(str(root) + os.sep)

    def mkdir(path: object, *args: object, **kwargs: object) -> None:
        if refused(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    def open_(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if refused(path) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    real_path_mkdir = Path.mkdir

    def path_mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        # Python 3.10's Path.mkdir calls the os.mkdir it bound at import, not the patched one.
        if refused(self):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        real_path_mkdir(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "mkdir", mkdir)
        patch.setattr(os, "open", open_)
        patch.setattr(Path, "mkdir", path_mkdir)
        yield


def test_a_home_on_a_read_only_file_system_exits_4_with_the_advice(tmp_path):
    """A read-only mount is a read-only home: the refusal a permission gets (exit 4, the
    path, how to move it), not "unavailable" (exit 5, which invites a retry)."""
    from tests.cli.conftest import Cli

    mount = tmp_path / "mnt"
    mount.mkdir()
    cli = Cli(mount / "home")
    with read_only_mount(mount):
        result = cli("list")
    assert result.exit_code == 4, result.stderr
    assert _first_line(result) == (
        f"memcore: error: cannot create {mount / 'home'}: read-only file system "
        "(set MEMCORE_HOME to a writable folder)"
    )


def test_config_set_on_a_read_only_file_system_exits_4(tmp_path):
    from tests.cli.conftest import Cli

    cli = Cli(tmp_path / "home")
    cli.ok("config", "set", "top_k", "4")
    with read_only_mount(tmp_path):
        result = cli("config", "set", "top_k", "3")
    assert result.exit_code == 4, result.stderr
    assert _first_line(result) == (
        f"memcore: error: cannot write the config file {tmp_path / 'home' / 'config.json'}: "
        "read-only file system"
    )
    assert '"top_k": 4' in (tmp_path / "home" / "config.json").read_text(encoding="utf-8")


def test_a_home_every_user_can_write_is_refused(tmp_path):
    """In a folder every user can write (``/tmp`` itself, or the README's ``/tmp/demo/memcore``
    made 0777 by another user first), another user can leave the database, or its ``-wal``
    file, for memcore to write the memories into, and read them there. Refused (exit 4)
    before anything is written."""
    from tests.cli.conftest import Cli

    shared = tmp_path / "demo"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "memcore.db-wal"
    planted.write_bytes(b"")
    planted.chmod(0o666)
    result = Cli(shared)("add", "My diagnosis is private")
    assert result.exit_code == 4
    assert _first_line(result) == (
        f"memcore: error: {shared} can be written by every user, who could read the memories "
        "through files they put beside the database; use a folder only you can write "
        "(set MEMCORE_HOME to a writable folder)"
    )
    assert planted.read_bytes() == b""
    assert sorted(p.name for p in shared.iterdir()) == ["memcore.db-wal"]


@pytest.mark.parametrize(
    ("where", "args", "field"),
    [
        ("config", ("add", "hello"), "local_path"),
        ("env", ("add", "hello"), "MEMCORE_HOME"),
        ("none", ("--config", "~no-such-user-here/c.json", "list"), "config"),
        ("none", ("--hermes-home", "~no-such-user-here/h", "list"), "hermes_home"),
        ("none", ("import", "~no-such-user-here/backup.jsonl"), "file"),
        ("none", ("export", "--out", "~no-such-user-here/backup.jsonl"), "file"),
    ],
)
def test_a_path_in_an_unknown_user_s_home_is_a_usage_error(local_cli, where, args, field):
    """``~nobody/x`` made Python's expanduser raise RuntimeError: "unexpected error", exit 1."""
    env = {}
    if where == "config":
        (local_cli.home / "config.json").write_text('{"local_path": "~no-such-user-here/x.db"}')
    elif where == "env":
        env = {"MEMCORE_HOME": "~no-such-user-here/home"}
    result = local_cli(*args, env=env)
    assert result.exit_code == 2, result.stderr
    assert "no-such-user-here" in result.stderr and "unexpected" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert field == "file" or repr(field) in result.stderr


def test_a_database_name_too_long_for_the_file_system_is_a_clear_error(local_cli):
    """The first-run check asked whether the file existed and got OSError ENAMETOOLONG."""
    name = "a" * 300 + ".db"
    (local_cli.home / "config.json").write_text(f'{{"local_path": "{name}"}}')
    result = local_cli("add", "hello")
    assert result.exit_code == 2, result.stderr
    assert "too long" in result.stderr and "unexpected" not in result.stderr


def test_a_hermes_home_name_too_long_for_the_file_system_is_a_usage_error(local_cli):
    """Asking whether the folder existed raised OSError ENAMETOOLONG: "unexpected", exit 1."""
    result = local_cli("--hermes-home", "h" * 300, "list")
    assert result.exit_code == 2, result.stderr
    assert "too long" in result.stderr and "unexpected" not in result.stderr
    assert "'hermes_home'" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("where", ["env", "emulator"])
def test_a_home_or_database_path_that_is_not_utf8_is_a_usage_error(local_cli, tmp_path, where):
    """SQLite names its files in UTF-8: a path holding other bytes opened, then failed as
    "the memory database ... failed [OperationalError]", exit 5 and retryable, as if the disk
    were busy; retrying never helps."""
    odd = str(tmp_path / "h\udcff")
    if where == "env":
        result = local_cli("--json", "add", "hello", env={"MEMCORE_HOME": odd})
    else:
        result = local_cli("--json", "emulator", "serve", "--port", "0", "--database", odd)
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    error = json.loads(line)["error"]
    assert error["retryable"] is False and "UTF-8" in error["message"], error


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_emulator_database_is_refused_not_read_as_the_default(
    local_cli, monkeypatch, value
):
    """``--database ""`` (an unset shell variable) served $MEMCORE_HOME/emulator.db without a
    word, as ``--config ""`` once read the default config file."""
    import memcore_tablestore.emulator as emulator

    class NoServer:
        def __init__(self, *args, **kwargs):
            raise AssertionError("the emulator was started")

    monkeypatch.setattr(emulator, "EmulatorServer", NoServer)
    result = local_cli("emulator", "serve", "--port", "0", "--database", value)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "--database is empty" in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (local_cli.home / "emulator.db").exists()
