"""Half of the Alibaba Cloud key pair in the environment (``ALIBABA_CLOUD_ACCESS_KEY_ID``
without its secret): ``doctor`` and every command name the missing variable, and no command
hands the search to the SDK's default chain, whose providers reach the network (the ECS
metadata service, a credentials URI). Here the chain's URI provider points at a loopback
socket, which tells whether the chain ran; the metadata service is switched off."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("memcore")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback socket no one answers on: the kernel queues a connection to it, so one
    made by the chain is seen afterwards, without an answer that would satisfy it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def _contacted(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
        ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_ACCESS_KEY_ID"),
    ],
)
@pytest.mark.parametrize("command", [("--json", "doctor"), ("add", "hello")])
def test_half_the_cloud_key_pair_names_the_other_half_and_tries_no_chain(
    tmp_path: Path,
    listener: socket.socket,
    given: str,
    missing: str,
    command: tuple[str, ...],
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    port = listener.getsockname()[1]
    config = {"backend": "tablestore", "endpoint": f"http://127.0.0.1:{port}"}
    (home / "config.json").write_text(json.dumps({**config, "instance_name": "x"}))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "user-home"),
        "MEMCORE_HOME": str(home),
        "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
        "ALIBABA_CLOUD_CREDENTIALS_URI": f"http://127.0.0.1:{port}/credentials",
        given: "half-of-a-pair-value",
    }
    done = subprocess.run(
        [str(SCRIPT), *command], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 4, (done.stdout, done.stderr)
    said = f"{missing} is not set, but {given} is; set both"
    if command[-1] == "doctor":
        checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
        assert not checks["credentials"]["ok"]
        assert said in checks["credentials"]["detail"]
    else:
        assert done.stderr == f"memcore: error: {said}\n"
    assert "half-of-a-pair-value" not in done.stdout + done.stderr
    assert not _contacted(listener), "the default chain ran (its URI provider called out)"
