"""``hermes tablestore-mem export --out`` writes what it names, as ``memcore export --out``
does: a FIFO or a device is written through (a reader gets the export), a symlink keeps
pointing at its target, which gets the export, and neither is replaced by a regular file."""

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


def _seeded(kit: Any, capsys: pytest.CaptureFixture[str], home: Path) -> None:
    kit.write_config(home, backend="local", embedder="none")
    for text in ("My sister is called Ines", "I play the cello on Sundays"):
        code, answer = kit.run_cli(capsys, "add", text, "--sync")
        assert code == 0, answer


def test_a_fifo_is_written_through_and_stays_a_fifo(
    hermes_home: Path, tmp_path: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _seeded(kit, capsys, hermes_home)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # waiting, so the write cannot block
    try:
        code, answer = kit.run_cli(capsys, "export", "--out", str(fifo))
        got = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert code == 0 and answer["exported"] == 2
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(got.decode().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["fifo", "hermes-home", "user-home"]
    )


def test_a_symlink_keeps_pointing_at_its_target_which_gets_the_export(
    hermes_home: Path, tmp_path: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _seeded(kit, capsys, hermes_home)
    target = tmp_path / "elsewhere" / "t.jsonl"
    target.parent.mkdir()
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "l.jsonl"
    link.symlink_to(target)
    code, _ = kit.run_cli(capsys, "export", "--out", str(link))
    assert code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    records = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="lchown needs root")
def test_a_symlink_another_user_left_in_a_shared_folder_is_refused(
    hermes_home: Path, tmp_path: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _seeded(kit, capsys, hermes_home)
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = tmp_path / "mine.txt"
    mine.write_text("keep me\n", encoding="utf-8")
    out = shared / "memories.jsonl"
    out.symlink_to(mine)
    os.lchown(out, 65534, 65534)
    code, answer = kit.run_cli(capsys, "export", "--out", str(out))
    # exit 4, as the plugin's own config writer refuses such a link
    assert code == 4 and answer["error"]["code"] == "permission_denied"
    assert "another user left in a shared folder" in answer["error"]["message"]
    assert mine.read_text(encoding="utf-8") == "keep me\n"
    assert out.is_symlink()


def test_out_dash_writes_stdout_as_import_dash_reads_stdin(
    hermes_home: Path,
    tmp_path: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--out -`` made a file named ``-`` in the working folder, where ``import -`` reads
    stdin: a pipe into another command got only the summary."""
    import argparse

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    _seeded(kit, capsys, hermes_home)
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser(prog="hermes tablestore-mem")
    register_cli(parser)
    tablestore_mem_command(parser.parse_args(["export", "--out", "-"]))
    lines = capsys.readouterr().out.splitlines()
    assert sorted(json.loads(line)["text"] for line in lines) == [
        "I play the cello on Sundays",
        "My sister is called Ines",
    ]
    assert not (tmp_path / "-").exists()


def test_a_folder_this_user_cannot_write_exits_4(
    hermes_home: Path, tmp_path: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that cannot be written exits 4, the code for a permission (README, "Hermes
    plugin"), as with ``memcore export --out``: it exited 2, as if the path were mistyped."""
    _seeded(kit, capsys, hermes_home)
    folder = tmp_path / "locked"
    folder.mkdir()
    out = folder / "backup.jsonl"
    with _unwritable(folder):
        code, answer = kit.run_cli(capsys, "export", "--out", str(out))
    assert code == 4 and answer["error"]["code"] == "permission_denied"
    assert answer["error"]["message"] == f"cannot write {out} (permission denied)"
    assert list(folder.iterdir()) == []


def test_a_file_this_user_cannot_read_exits_4(
    hermes_home: Path,
    tmp_path: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``import`` of a file this user may not read: exit 4 naming it, not 2. Mode bits do not
    stop root, so the refusal is the operating system's own error."""
    import builtins

    kit.write_config(hermes_home, backend="local", embedder="none")
    path = tmp_path / "locked.jsonl"
    path.write_text("", encoding="utf-8")
    real = builtins.open

    def refuse(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refuse)
    code, answer = kit.run_cli(capsys, "import", str(path))
    assert code == 4 and answer["error"]["code"] == "permission_denied"
    assert answer["error"]["message"] == f"cannot read {path} (permission denied)"


@contextlib.contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """Mode bits for a user; the immutable flag for root, whom mode bits do not stop."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr")
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("this filesystem has no immutable flag")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_an_export_of_one_memory_says_memory_not_memories(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    assert kit.run_cli(capsys, "add", "My sister is called Ines", "--sync")[0] == 0
    code, record, err = kit.run_cli_full(capsys, "export")
    assert code == 0 and record["text"] == "My sister is called Ines"
    assert err.splitlines()[-1] == "exported 1 memory"


def test_out_dev_stdout_into_a_pipe_holds_only_the_export(
    hermes_home: Path, tmp_path: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary's JSON followed the data on stdout, and the backup no longer imported."""
    _seeded(kit, capsys, hermes_home)
    read, write = os.pipe()
    saved = os.dup(1)
    os.dup2(write, 1)
    os.close(write)
    import argparse

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    parser = argparse.ArgumentParser(prog="hermes tablestore-mem")
    register_cli(parser)
    try:
        tablestore_mem_command(parser.parse_args(["export", "--out", "/dev/stdout"]))
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    got = os.read(read, 1 << 16).decode()
    os.close(read)
    assert "exported 2 memories" in capsys.readouterr().err
    assert sorted(json.loads(line)["text"] for line in got.splitlines()) == [
        "I play the cello on Sundays",
        "My sister is called Ines",
    ]
