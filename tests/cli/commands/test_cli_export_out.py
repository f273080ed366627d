"""``export --out`` writes what it names: a FIFO or a device is written through, a symlink's
target is replaced (the link stays), and a folder is refused with one line, exit 2.

Device nodes are made with mknod inside the test's own folder, never taken from /dev.
"""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest


def _seed(cli) -> None:
    cli.ok("add", "--sync", "User prefers concise answers")
    cli.ok("add", "--sync", "User lives in Hangzhou")


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path, local_cli):
    _seed(local_cli)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    local_cli.ok("export", "--out", str(fifo))
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(got[0].decode().splitlines()) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")
def test_a_character_device_is_written_through_and_stays_a_device(tmp_path, local_cli):
    _seed(local_cli)
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the null device, made here
    assert "exported 2 memories" in local_cli.ok("export", "--out", str(null)).stdout
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("existing", [True, False])
def test_a_symlink_keeps_pointing_at_its_target_which_gets_the_export(
    tmp_path, local_cli, existing
):
    _seed(local_cli)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "t.jsonl"
    if existing:
        target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "l.jsonl"
    link.symlink_to(target)
    local_cli.ok("export", "--out", str(link))
    assert link.is_symlink() and os.readlink(link) == str(target)
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2
    assert stat.S_ISREG(os.lstat(target).st_mode)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["t.jsonl"]


def test_a_folder_is_refused_with_one_line_and_nothing_written(tmp_path, local_cli):
    _seed(local_cli)
    folder = tmp_path / "out"
    folder.mkdir()
    result = local_cli("export", "--out", str(folder))
    assert result.exit_code == 2
    assert result.stderr == f"memcore: error: cannot write {folder} (a folder)\n"
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "home",
        "out",
    ]


@pytest.mark.parametrize("existing", [False, True])
def test_a_folder_this_user_cannot_write_exits_4_naming_the_file(tmp_path, local_cli, existing):
    """A file that cannot be written exits 4 and names it, as a read-only home does (README,
    "When something is wrong"): it exited 2, as if the path were mistyped."""
    from tests.cli.settings.test_cli_homes import read_only

    _seed(local_cli)
    folder = tmp_path / "locked"
    folder.mkdir()
    out = folder / "backup.jsonl"
    if existing:
        out.write_text("old\n", encoding="utf-8")
    with read_only(folder):
        result = local_cli("export", "--out", str(out))
    assert result.exit_code == 4, result.stderr
    assert result.stderr == f"memcore: error: cannot write {out} (permission denied)\n"
    assert sorted(p.name for p in folder.iterdir()) == (["backup.jsonl"] if existing else [])
    if existing:
        assert out.read_text(encoding="utf-8") == "old\n"


def test_a_regular_file_is_still_replaced_whole_with_mode_0600(tmp_path, local_cli):
    _seed(local_cli)
    out = tmp_path / "m.jsonl"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o644)
    local_cli.ok("export", "--out", str(out))
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="lchown needs root")
@pytest.mark.parametrize("planted", ["symlink", "fifo"])
def test_a_link_or_fifo_another_user_left_in_a_shared_folder_is_refused(
    tmp_path, local_cli, planted
):
    """In a sticky world-writable folder such as /tmp, another user can leave a symlink to a
    file of ours (the export would replace it) or a FIFO they read (they would get every
    memory). The kernel's protected_symlinks and protected_fifos refuse to follow those, but
    not everywhere, and a link resolved by the program itself escapes them: refused here,
    with exit 4, as `config set` refuses such a link (it exited 2, as if mistyped)."""
    _seed(local_cli)
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = tmp_path / "mine.txt"
    mine.write_text("keep me\n", encoding="utf-8")
    out = shared / "memories.jsonl"
    if planted == "symlink":
        out.symlink_to(mine)
    else:
        os.mkfifo(out, 0o666)
    os.lchown(out, 65534, 65534)  # another user's
    # Their reader, already waiting (so a write through would not block).
    reader = os.open(out, os.O_RDONLY | os.O_NONBLOCK) if planted == "fifo" else None
    result = local_cli("export", "--out", str(out))
    if reader is not None:
        try:
            assert os.read(reader, 1 << 16) == b""  # nothing reached them
        finally:
            os.close(reader)
    assert result.exit_code == 4
    assert result.stderr == (
        f"memcore: error: cannot write {out} (a {planted} another user left in a shared folder)\n"
    )
    assert mine.read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in shared.iterdir()) == ["memories.jsonl"]


def test_our_own_symlink_in_a_shared_folder_is_still_followed(tmp_path, local_cli):
    _seed(local_cli)
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    target = tmp_path / "t.jsonl"
    link = shared / "l.jsonl"
    link.symlink_to(target)
    local_cli.ok("export", "--out", str(link))
    assert len(target.read_text(encoding="utf-8").splitlines()) == 2


@pytest.mark.parametrize("as_json", [False, True])
def test_out_dev_stdout_into_a_pipe_holds_only_the_export(tmp_path, as_json):
    """``--out /dev/stdout | import -`` (the README's "a device such as /dev/stdout is
    written through") ended the data with the summary line, which import refused."""
    import subprocess

    from tests.cli.conftest import MEMCORE

    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(tmp_path / "home")}
    run = {"capture_output": True, "env": env, "timeout": 120, "check": False}
    assert subprocess.run([MEMCORE, "add", "--sync", "User likes coffee"], **run).returncode == 0
    flags = ["--json"] if as_json else []
    done = subprocess.run([MEMCORE, *flags, "export", "--out", "/dev/stdout"], **run)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert [json.loads(line)["text"] for line in lines] == ["User likes coffee"]
    assert b"exported 1 memory" in done.stderr
