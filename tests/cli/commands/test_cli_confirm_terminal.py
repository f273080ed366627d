"""``forget`` and ``stores delete`` ask on a terminal; Ctrl-C at the question is an interrupt
(exit 130, as everywhere), and any way of not answering yes deletes nothing and says so."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import MEMCORE, run_memcore

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")

PROMPT = b"[y/N]:"


def _ask(home: Path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``memcore *args`` with a terminal for stdin, once it has asked its question."""
    master, slave = pty.openpty()
    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(home)}
    proc = subprocess.Popen(
        [MEMCORE, *args], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    asked = b""
    deadline = time.monotonic() + 60
    assert proc.stderr is not None
    while not asked.endswith(PROMPT):
        assert time.monotonic() < deadline and proc.poll() is None, asked
        asked += os.read(proc.stderr.fileno(), 1)
    return proc, master


@pytest.mark.parametrize("command", [("forget", "--all"), ("stores", "delete", "hermes_mem")])
def test_ctrl_c_at_the_question_is_an_interrupt_that_deleted_nothing(tmp_path, command):
    """It exited 1 ("memcore: aborted"), the code of an unexpected failure, where the exit
    code table gives Ctrl-C 130."""
    home = tmp_path / "home"
    run_memcore(home, "add", "keep me")
    proc, master = _ask(home, *command)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 130, err
    assert err.decode().strip().endswith("memcore: interrupted (nothing was deleted)"), err
    assert run_memcore(home, "count").stdout.strip() == "1"


@pytest.mark.parametrize("command", [("forget", "--all"), ("stores", "delete", "hermes_mem")])
@pytest.mark.parametrize("said", [b"n\n", b"oui\n", b"nope\n", b"\n"])
def test_any_answer_but_yes_is_a_no(tmp_path, command, said):
    """click's confirm asked again after an answer it could not read ("oui", "nope"), where
    the README says any answer but yes deletes nothing and says so (exit 1)."""
    home = tmp_path / "home"
    run_memcore(home, "add", "keep me")
    proc, master = _ask(home, *command)
    os.write(master, said)
    _, err = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 1, err
    assert err.decode().strip().endswith("memcore: error: not confirmed; nothing was deleted"), err
    assert run_memcore(home, "count").stdout.strip() == "1"


@pytest.mark.parametrize("command", [("forget", "--all"), ("stores", "delete", "hermes_mem")])
def test_a_closed_stdin_is_refused_as_no_terminal(tmp_path, command):
    """Started with stdin closed (``<&-``), it failed as an unexpected AttributeError (exit 1)."""
    home = tmp_path / "home"
    run_memcore(home, "add", "keep me")
    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(home)}
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" "$@" <&-', MEMCORE, *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "stdin is not a terminal; pass --yes" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr
    assert run_memcore(home, "count").stdout.strip() == "1"


def test_no_at_the_question_is_a_json_error_with_json(tmp_path):
    """With --json every failure is one JSON object on stderr; this one was plain text."""
    error = _json_answer(tmp_path, ("--json",), lambda proc, master: os.write(master, b"n\n"), 1)
    assert (error["message"], error["field"], error["exit_code"]) == (
        "not confirmed; nothing was deleted",
        "yes",
        1,
    )


@pytest.mark.parametrize("json_option", [("--json",), ("--format", "json")])
def test_ctrl_c_at_the_question_is_a_json_error_with_json(tmp_path, json_option):
    """The README: with --json every failure is one JSON object on stderr; an interrupt was
    the plain "memcore: interrupted" line."""
    answer = lambda proc, master: proc.send_signal(signal.SIGINT)  # noqa: E731
    error = _json_answer(tmp_path, json_option, answer, 130)
    assert (error["code"], error["message"], error["exit_code"]) == (
        "interrupted",
        "interrupted (nothing was deleted)",
        130,
    )


def _json_answer(
    tmp_path: Path, json_option: tuple[str, ...], answer: Any, code: int
) -> dict[str, Any]:
    """The JSON error ``forget --all`` ends with after ``answer(proc, master)`` at its
    question, which it exits ``code`` from, having deleted nothing."""
    home = tmp_path / "home"
    run_memcore(home, "add", "keep me")
    proc, master = _ask(home, *json_option, "forget", "--all")
    answer(proc, master)
    _, err = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == code, err
    assert run_memcore(home, "count").stdout.strip() == "1"
    line = err.decode().strip().splitlines()[-1]
    error: dict[str, Any] = json.loads(line[line.index("{") :])["error"]
    return error
