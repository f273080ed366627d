"""A TableStore endpoint that refuses connections: every surface names it, none hangs."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.commands.doctor import run_doctor
from memcore_hermes.config.home import HermesHome

KEYS = {"TABLESTORE_MEMORY_AK": "ak-down", "TABLESTORE_MEMORY_SK": "sk-down-secret-42"}
SECRETS = tuple(KEYS.values())


@pytest.fixture
def down_home(hermes_home: Path, kit: Any) -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    kit.write_config(
        hermes_home, backend="tablestore", endpoint=endpoint, instance_name="inst", timeout=30.0
    )
    kit.write_env(hermes_home, KEYS)
    return endpoint


def test_the_cli_search_names_the_endpoint(
    down_home: str, capsys: pytest.CaptureFixture[str], kit: Any
) -> None:
    code, answer = kit.run_cli(capsys, "search", "anything", secrets=SECRETS)
    assert code == 5  # unavailable, as the memcore CLI says it
    assert answer["error"]["message"].startswith(f"cannot reach {down_home}: connection refused")


def test_the_cli_add_keeps_the_write_and_says_why(
    down_home: str, capsys: pytest.CaptureFixture[str], kit: Any
) -> None:
    code, answer = kit.run_cli(capsys, "add", "kept while the endpoint is down", secrets=SECRETS)
    assert code == 5 and answer["status"] == "queued"  # kept, but the backend did not take it
    assert answer["error"]["message"].startswith(f"cannot reach {down_home}")
    code, report = kit.run_cli(capsys, "doctor", secrets=SECRETS)
    assert code == 1 and report["spool"]["depth"] == 1


def test_doctor_names_the_endpoint(down_home: str, hermes_home: Path) -> None:
    report = run_doctor(HermesHome(hermes_home), environ={})
    assert report["ok"] is False
    assert report["store"]["error"]["message"].startswith(f"cannot reach {down_home}")
    assert report["search"]["mode"].startswith("tablestore")


def test_a_tool_call_answers_json_naming_the_endpoint(down_home: str, hermes_home: Path) -> None:
    provider = MemcoreMemoryProvider(environ={}, flush_timeout=1.0)
    provider.initialize("s1", hermes_home=str(hermes_home), user_id="dana")
    try:
        answer = json.loads(provider.handle_tool_call("tablestore_search", {"query": "x"}))
    finally:
        provider.shutdown()
    assert answer["error"]["code"] == "unavailable"
    assert answer["error"]["message"].startswith(f"cannot reach {down_home}: connection refused")
