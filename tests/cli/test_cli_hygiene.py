"""What importing and starting memcore must not do: print SDK noise, open sockets, or be
shadowed by a clone of this repository named ``memcore``; and the emulator's edges."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAIN = "from memcore_cli.app import main; main()"

SOCKETS_AND_SDK = """
import json, os, sys
sys.path.insert(0, {parent!r})
import importlib
importlib.import_module({plugin!r})
import memcore_cli.app
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink("/proc/self/fd/" + fd))
    except OSError:
        pass
print(json.dumps({{
    "sockets": [f for f in fds if f.startswith("socket:")],
    "sdk": sorted(m for m in sys.modules if m.split(".")[0] in ("tablestore", "aiohttp")),
}}))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_importing_the_cli_and_the_plugin_opens_no_socket_and_loads_no_sdk(tmp_path):
    link = tmp_path / "tablestore_mem"
    link.symlink_to(REPO)
    code = SOCKETS_AND_SDK.format(parent=str(tmp_path), plugin="tablestore_mem")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"sockets": [], "sdk": []}
    assert done.stdout.count("\n") == 1, done.stdout


def test_the_sdk_import_keeps_our_streams_clean():
    code = (
        "from memcore_tablestore import import_sdk_quietly\n"
        "import_sdk_quietly()\n"
        "import tablestore, sys\n"
        "print('ready')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout == "ready\n"
    assert "Native C++" not in done.stderr


def test_a_script_next_to_a_clone_named_memcore_gets_the_library(tmp_path):
    (tmp_path / "memcore").symlink_to(REPO)
    script = tmp_path / "agent.py"
    script.write_text(
        "import memcore\n"
        "from memcore.testing import InMemoryMemoryStore\n"
        "mem = memcore.Memory(InMemoryMemoryStore())\n"
        "print(memcore.AsyncMemory.__name__, len(mem.add(text='The user likes tea')))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "AsyncMemory 1"


def _memcore(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMCORE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_the_emulator_on_a_busy_port_says_so_in_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _memcore(tmp_path / "home", "emulator", "serve", "--port", str(port))
    assert result.returncode == 5
    assert result.stderr.splitlines() == [
        f"memcore: error: port {port} on 127.0.0.1 is already in use; stop what holds it, "
        "or pick another with --port (0 picks a free one)"
    ]


def test_the_emulator_serves_its_own_database_by_default(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "MEMCORE_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-c", MAIN, "--json", "emulator", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        announced = json.loads(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert announced["database"] == str(home / "emulator.db")
    assert not (home / "memcore.db").exists()


def _memcore_into(stdout: int, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMCORE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("args", [[], ["dream"], ["--help"], ["--version"]])
def test_help_into_a_pipe_its_reader_closed_ends_quietly(tmp_path, args):
    read, write = os.pipe()
    os.close(read)  # `memcore | head -0`: the reader is gone before anything is written
    try:
        done = _memcore_into(write, tmp_path / "home", *args)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [[], ["dream"], ["--help"], ["--version"]])
def test_help_onto_a_full_disk_is_one_line(tmp_path, args):
    with open("/dev/full", "w") as full:
        done = _memcore_into(full.fileno(), tmp_path / "home", *args)
    assert done.returncode == 5
    [line] = done.stderr.splitlines()
    assert line == "memcore: error: cannot write the output: no space left on device", line


#: ``sh -c`` running ``$0 -c $1 --json ARGS`` with stdin closed.
SHELL_WITHOUT_STDIN = 'code=$1; shift; exec "$0" -c "$code" --json "$@" <&-'


@pytest.mark.parametrize(("args", "field"), [(["add", "-"], "text"), (["import", "-"], "file")])
def test_reading_a_closed_stdin_is_one_line_and_exit_2(tmp_path, args, field):
    env = {**os.environ, "MEMCORE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        ["sh", "-c", SHELL_WITHOUT_STDIN, sys.executable, MAIN, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    error = json.loads(line)["error"]
    assert (error["code"], error["field"]) == ("invalid_input", field)
    assert error["message"] == "cannot read '-': stdin is closed"
    assert not (tmp_path / "home" / "memcore.db").exists()
