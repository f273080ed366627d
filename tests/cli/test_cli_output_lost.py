"""Output that cannot be written (stdout closed, a full disk, a file grown past its limit) is
one plain line and exit 5, never an "unexpected" error or a silent exit 0; a command started
with stdout closed does nothing; an export that fails leaves no file behind as if complete.

Each case runs the real console entry point in a child process, as a shell would."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

MAIN = "from memcore_cli.entry import main; main()"
#: ``sh -c`` running ``$0 -c $1 ARGS`` with stdout closed (``memcore ... >&-``).
SHELL_WITHOUT_STDOUT = 'code=$1; shift; exec "$0" -c "$code" "$@" >&-'
CLOSED = "memcore: error: cannot write the output: stdout is closed (nothing was done)"
FULL = "memcore: error: cannot write the output: no space left on device"

needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "MEMCORE_HOME": str(home)}


def _run(home: Path, *args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
        **kwargs,
    )


def _without_stdout(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", SHELL_WITHOUT_STDOUT, sys.executable, MAIN, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )


@pytest.fixture
def seeded(tmp_path) -> Path:
    home = tmp_path / "home"
    for text in ("User prefers concise answers", "User lives in Hangzhou"):
        assert _run(home, "add", "--sync", text).returncode == 0
    return home


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["--format", "table", "list"],
        ["list", "--all"],
        ["count"],
        ["search", "answers"],
        ["export"],
        ["config", "show"],
        ["--version"],
        ["--help"],
        ["list", "--help"],
        [],
    ],
)
def test_a_closed_stdout_is_one_line_and_exit_5(seeded, args):
    done = _without_stdout(seeded, *args)
    assert (done.returncode, done.stderr.splitlines()) == (5, [CLOSED])


def test_a_closed_stdout_with_json_is_the_json_error(seeded):
    done = _without_stdout(seeded, "--json", "list")
    assert done.returncode == 5
    [line] = done.stderr.splitlines()
    error = json.loads(line)["error"]
    assert (error["code"], error["field"], error["exit_code"]) == ("unavailable", "stdout", 5)


def test_a_write_with_stdout_closed_is_not_made(seeded):
    done = _without_stdout(seeded, "add", "--sync", "User drinks tea")
    assert (done.returncode, done.stderr.splitlines()) == (5, [CLOSED])
    listed = _run(seeded, "--json", "list", "--all")
    assert "tea" not in listed.stdout and len(listed.stdout.splitlines()) == 2


@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["--format", "table", "list"],
        ["list", "--all"],
        ["get", "--help"],
        ["export"],
        ["--version"],
        ["--help"],
        [],
    ],
)
def test_stdout_on_a_full_disk_is_one_line_and_exit_5(seeded, args):
    with open("/dev/full", "w") as full:
        done = _run(seeded, *args, stdout=full.fileno())
    assert (done.returncode, done.stderr.splitlines()) == (5, [FULL])


@needs_dev_full
def test_export_out_onto_a_full_device_is_one_line_and_exit_5(seeded):
    done = _run(seeded, "export", "--out", "/dev/full")
    assert done.returncode == 5
    assert done.stderr.splitlines() == [
        "memcore: error: cannot write /dev/full (no space left on device)"
    ]


@needs_dev_full
@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["add", "User drinks tea"], "add"),
        (["--json", "add", "--sync", "User drinks tea"], "add"),
        (["forget", "--yes", "--filter", "topic=food"], "forget"),
        (["config", "set", "top_k", "7"], "config set"),
    ],
)
def test_a_write_whose_answer_is_lost_says_it_was_made(seeded, args, command):
    """A full disk under a command that writes: the write has landed, so the line says so
    (and exit 5 for the lost answer), rather than reading as a failed write to try again."""
    if command == "forget":
        assert _run(seeded, "add", "--metadata", "topic=food", "User likes coffee").returncode == 0
    before = _run(seeded, "--json", "list", "--all").stdout
    with open("/dev/full", "w") as full:
        done = _run(seeded, *args, stdout=full.fileno())
    assert done.returncode == 5, done.stderr
    [line] = done.stderr.splitlines()
    message = json.loads(line)["error"]["message"] if "--json" in args else line
    assert message.startswith(("cannot write the output: no space left on device", FULL)), message
    assert f"memcore {command} was done before its answer was lost" in message, message
    assert "do not run it again" in message, message
    if command != "config set":
        assert _run(seeded, "--json", "list", "--all").stdout != before  # it did land


@pytest.mark.parametrize("json_option", [(), ("--json",)])
def test_a_write_whose_reader_went_away_says_it_was_made(seeded, json_option):
    """A pipe whose reader is gone (``memcore add x | (exec 0<&-)``): the write landed, yet
    the command exited 1 without a word, as a read to a closed ``| head`` quietly does."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _run(seeded, *json_option, "add", "User drinks tea", stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 5, done.stderr
    [line] = done.stderr.splitlines()
    message = json.loads(line)["error"]["message"] if json_option else line
    assert "cannot write the output: broken pipe" in message, message
    assert "memcore add was done before its answer was lost" in message, message
    listed = _run(seeded, "--json", "list", "--all").stdout.splitlines()
    assert "User drinks tea" in [json.loads(line)["text"] for line in listed]


def test_a_read_whose_reader_went_away_stays_quiet(seeded):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _run(seeded, "--json", "list", "--all", stdout=write_end)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, "")


@needs_dev_full
def test_a_read_whose_answer_is_lost_says_nothing_of_writes(seeded):
    with open("/dev/full", "w") as full:
        done = _run(seeded, "search", "answers", stdout=full.fileno())
    assert (done.returncode, done.stderr.splitlines()) == (5, [FULL])


#: Room for SQLite's 32 KiB shared-memory file, not for the export of :func:`_long_memories`.
FILE_LIMIT = 64 * 1024


def _limit_file_size() -> None:
    """The child may grow a file to FILE_LIMIT bytes: beyond that a write fails (EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def _long_memories(home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "".join(f"Note {i}: " + "the user keeps long notes " * 120 + "\n" for i in range(40)),
        encoding="utf-8",
    )
    assert _run(home, "import", "--lines", str(notes)).returncode == 0
    notes.unlink()


def test_an_export_that_cannot_be_written_whole_leaves_the_old_file(tmp_path):
    seeded = tmp_path / "home"
    _long_memories(seeded, tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_text("old\n", encoding="utf-8")
    done = _run(seeded, "export", "--out", str(out), preexec_fn=_limit_file_size)
    assert done.returncode == 5
    assert done.stderr.splitlines() == [f"memcore: error: cannot write {out} (file too large)"], (
        done.stderr
    )
    assert out.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "out.jsonl"]


#: ``sh -c`` running ``$0 -c $1 ARGS`` with stderr closed (``memcore ... 2>&-``).
SHELL_WITHOUT_STDERR = 'code=$1; shift; exec "$0" -c "$code" "$@" 2>&-'


def _without_stderr(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", SHELL_WITHOUT_STDERR, sys.executable, MAIN, *args],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["list"], 0),
        (["export"], 0),
        (["count"], 0),
        (["get", "0123456789abcdef0123456789abcdef"], 3),
        (["list", "--limit", "0"], 2),
        (["no-such-command"], 2),
    ],
)
def test_a_closed_stderr_changes_no_exit_code(seeded, args, code):
    """Run with stderr closed (``2>&-``, as some cron jobs and services are), a command
    that succeeded exited 1 when it wrote a remark ("exported 2 memories"), and one that
    failed exited 1 whatever its error: the exit code is all such a caller gets."""
    done = _without_stderr(seeded, *args)
    assert done.returncode == code, done.stdout
    assert "Traceback" not in done.stdout


def test_a_first_run_with_stderr_closed_still_adds(tmp_path):
    """The first-run note could not be written, and the add that opened the store failed
    (exit 1) without storing the memory."""
    home = tmp_path / "fresh"
    done = _without_stderr(home, "add", "--sync", "User keeps bees")
    assert done.returncode == 0 and done.stdout.startswith("remembered ")
    assert _run(home, "count").stdout.strip() == "1"


@needs_dev_full
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["export"], 0),
        (["get", "0123456789abcdef0123456789abcdef"], 3),
        (["list", "--limit", "0"], 2),
    ],
)
def test_stderr_on_a_full_disk_changes_no_exit_code(seeded, args, code):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", MAIN, *args],
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            env=_env(seeded),
            timeout=120,
            check=False,
        )
    assert done.returncode == code, done.stdout


@pytest.fixture
def big(tmp_path) -> Path:
    """A store whose listing is far more than a pipe holds (64 KiB on Linux)."""
    home = tmp_path / "big"
    lines = tmp_path / "lines.txt"
    lines.write_text(
        "".join(f"memory {i} " + f"word{i} " * 300 + "\n" for i in range(100)), encoding="utf-8"
    )
    assert _run(home, "import", "--lines", str(lines)).returncode == 0
    return home


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "list", "--all"],
        ["--json", "list", "--limit", "100"],
        ["list", "--limit", "100"],
        ["list", "--all"],
        ["--json", "search", "word1", "--top-k", "50"],
    ],
)
def test_a_reader_that_goes_away_ends_every_listing_alike(big, args):
    """``memcore list --all | head -1``: a listing written line by line stopped with exit 1
    (the reader went away), but one written in a single piece (a table, a JSON document)
    exited 0, the rest of its output silently dropped past the first 64 KiB."""
    child = subprocess.Popen(
        [sys.executable, "-c", MAIN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(big),
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(10)
    child.stdout.close()
    assert child.wait(timeout=120) == 1
    assert child.stderr.read() == b""
    child.stderr.close()
