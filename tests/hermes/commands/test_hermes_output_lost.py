"""``hermes tablestore-mem`` whose output cannot be written says so in one line on stderr and
exits 5, as ``memcore`` does, instead of ending in a traceback."""

from __future__ import annotations

import errno
import io
from pathlib import Path
from typing import Any

import pytest


class _FullDisk(io.StringIO):
    """stdout on a full disk: every write fails as ``/dev/full`` does."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def _run(monkeypatch: pytest.MonkeyPatch, stream: Any, *args: str) -> int:
    import argparse
    import sys

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    parser = argparse.ArgumentParser(prog="hermes tablestore-mem")
    register_cli(parser)
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        tablestore_mem_command(parser.parse_args(list(args)))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.parametrize("command", [["list"], ["export"], ["search", "cello"], ["stats"]])
def test_a_full_disk_is_one_line_and_exit_5(
    hermes_home: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    code, _ = kit.run_cli(capsys, "add", "I play the cello on Sundays", "--sync")
    assert code == 0
    code = _run(monkeypatch, _FullDisk(), *command)
    err = capsys.readouterr().err
    assert code == 5
    assert err.splitlines()[-1] == (
        "tablestore-mem: error: cannot write the output: no space left on device"
    ), err
    assert "Traceback" not in err


def test_a_reader_gone_ends_quietly(
    hermes_home: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class _Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    kit.write_config(hermes_home, backend="local", embedder="none")
    code = _run(monkeypatch, _Gone(), "list")
    assert (code, capsys.readouterr().err) == (1, "")


@pytest.mark.parametrize(
    ("command", "written"),
    [
        (["add", "I keep bees", "--sync"], 2),
        (["forget", "--yes"], 0),
    ],
)
def test_a_write_whose_answer_is_lost_says_it_was_done(
    hermes_home: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    written: int,
) -> None:
    """The change has landed before its answer is printed: the line says so (exit 5 for the
    lost answer), so that the command is not run again as if it had failed."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    code, out = kit.run_cli(capsys, "add", "I play the cello on Sundays", "--sync")
    assert code == 0
    if command[0] == "forget":
        command = [*command, out["memory_ids"][0]]
    import sys

    captured = sys.stdout
    code = _run(monkeypatch, _FullDisk(), *command)
    monkeypatch.setattr(sys, "stdout", captured)
    err = capsys.readouterr().err
    assert code == 5
    assert err.splitlines()[-1] == (
        "tablestore-mem: error: cannot write the output: no space left on device; "
        f"hermes tablestore-mem {command[0]} was done before its answer was lost, so do not "
        "run it again: see what it changed with hermes tablestore-mem list"
    ), err
    code, listed = kit.run_cli(capsys, "list")
    assert (code, len(listed["items"])) == (0, written)
