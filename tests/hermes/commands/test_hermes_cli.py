"""``hermes tablestore-mem add|search|doctor`` run as the real Hermes CLI against the emulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

AK = "LTAI5tCliTestKeyId"
SK = "cli-secret-Vq93kLm2Xz"
KEYS = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}


@pytest.fixture
def cli_emulator() -> Iterator[Any]:
    from memcore_tablestore.testing import running_emulator

    with running_emulator(access_key_id=AK, access_key_secret=SK) as server:
        yield server


@pytest.fixture
def cli_home(hermes_home: Path, cli_emulator: Any, kit: Any) -> Path:
    kit.install_plugin(hermes_home)
    kit.emulator_home(hermes_home, cli_emulator, keys=KEYS)
    return hermes_home


def run_json(kit: Any, home: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    result = kit.run_hermes(home, "tablestore-mem", *args)
    assert SK not in result.stdout + result.stderr
    assert AK not in result.stdout + result.stderr
    try:
        data = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"not JSON: {result.stdout!r} {result.stderr[-2000:]!r}")
    return result.returncode, data, result.stderr


@pytest.fixture
def run_inprocess(kit: Any) -> Any:
    """The same command handler Hermes calls, without paying for a Hermes start."""

    def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
        code, answer = kit.run_cli(capsys, *args, secrets=(AK, SK))
        return code, answer

    return run


def test_add_search_doctor_through_the_hermes_cli(
    cli_home: Path, kit: Any, cli_emulator: Any
) -> None:
    code, added, _ = run_json(
        kit, cli_home, "add", "The build server is called hydra", "--metadata", "kind=infra"
    )
    assert code == 0 and added["status"] == "stored"
    code, synced, _ = run_json(
        kit,
        cli_home,
        "add",
        "Deploys happen on Tuesdays",
        "--sync",
        "--user-id",
        "ops",
        "--platform",
        "slack",
    )
    assert (
        code == 0
        and synced["status"] == "completed"
        and synced["scope"].startswith("hermes/slack:ops/")
    )
    code, found, _ = run_json(kit, cli_home, "search", "build server", "--top-k", "3")
    assert code == 0
    assert [r["text"] for r in found["results"]] == ["The build server is called hydra"]
    [memory] = [m for m in cli_emulator.store.all_memories("hermes_mem") if "hydra" in m.text]
    assert memory.metadata["kind"] == "infra"
    code, report, _ = run_json(kit, cli_home, "doctor")
    assert code == 0, report
    assert report["ok"] is True
    assert report["backend"] == "tablestore" and report["endpoint"] == cli_emulator.url
    assert report["store"]["status"] == "ready"
    assert [s["text"] for s in report["store"]["sample"]] == ["The build server is called hydra"]
    assert report["scope"]["read"] == "hermes/__default__/*/*"
    assert report["secrets"]["TABLESTORE_MEMORY_AK"] == "set"
    assert report["spool"]["depth"] == 0 and report["spool"]["running_journals"] == 0


def test_add_with_bad_metadata_is_a_json_error(
    cli_home: Path, capsys: pytest.CaptureFixture[str], run_inprocess: Any
) -> None:
    code, data = run_inprocess(capsys, "add", "x", "--metadata", "no-equals-sign")
    assert code == 2 and data["error"]["field"] == "metadata"  # invalid input, as in memcore


def test_doctor_writes_nothing(
    cli_home: Path, cli_emulator: Any, capsys: pytest.CaptureFixture[str], run_inprocess: Any
) -> None:
    code, report = run_inprocess(capsys, "doctor")
    assert code == 0
    assert "missing" in report["store"]["status"]
    assert cli_emulator.store.list_stores() == []


def test_doctor_shows_waiting_writes_when_the_backend_is_down(
    cli_home: Path,
    kit: Any,
    cli_emulator: Any,
    capsys: pytest.CaptureFixture[str],
    run_inprocess: Any,
) -> None:
    from memcore_tablestore.emulator import Faults

    kit.emulator_home(cli_home, cli_emulator, keys=KEYS, timeout=0.5)
    cli_emulator.set_faults(Faults(error_rate=1.0, error_status=503))
    code, added = run_inprocess(capsys, "add", "queued while down")
    assert code == 5 and added["status"] == "queued"  # kept, but not stored: unavailable
    code, report = run_inprocess(capsys, "doctor")
    assert code == 1 and report["ok"] is False
    assert report["spool"]["depth"] == 1 and report["spool"]["last_error"]
    assert "error" in report["store"]
    cli_emulator.set_faults(Faults())
    code, _ = run_inprocess(capsys, "add", "after recovery")
    texts = sorted(m.text for m in cli_emulator.store.all_memories("hermes_mem"))
    assert texts == ["after recovery", "queued while down"]


def test_doctor_on_an_unsafe_secrets_file(
    cli_home: Path, capsys: pytest.CaptureFixture[str], run_inprocess: Any
) -> None:
    (cli_home / ".env").chmod(0o666)
    code, report = run_inprocess(capsys, "doctor")
    assert code == 1
    assert report["secrets"]["env_file_ok"] is False
    assert "chmod 600" in report["secrets"]["env_file_problem"]


def test_search_shows_hits_as_the_search_tool_does(
    cli_home: Path, capsys: pytest.CaptureFixture[str], run_inprocess: Any
) -> None:
    code, _ = run_inprocess(capsys, "add", "The build server is called hydra", "--sync")
    assert code == 0
    code, found = run_inprocess(capsys, "search", "build server")
    assert code == 0
    [hit] = found["results"]
    assert set(hit) >= {"id", "text", "score", "similarity", "scope"}
    assert hit["text"] == "The build server is called hydra"


def test_switching_to_per_platform_tenants_and_moving_the_old_memories(
    cli_home: Path, kit: Any, cli_emulator: Any
) -> None:
    """The way an operator of 0.1.0 takes it: memories kept for a user id alone, then per
    platform tenants, then ``migrate-tenant``, all through the real ``hermes`` on TableStore."""
    kit.emulator_home(cli_home, cli_emulator, keys=KEYS, tenant_scope="user")
    code, kept, _ = run_json(kit, cli_home, "add", "I live in Lisbon", "--sync", "--user-id", "42")
    assert code == 0 and kept["scope"].startswith("hermes/42/")

    kit.emulator_home(cli_home, cli_emulator, keys=KEYS)  # the default: per platform
    code, listed, _ = run_json(kit, cli_home, "list", "--user-id", "42", "--platform", "telegram")
    assert code == 0 and listed["items"] == []  # the old tenant is not read
    code, report, _ = run_json(kit, cli_home, "doctor", "--user-id", "42", "--platform", "telegram")
    assert report["legacy_tenant"]["read"] == "hermes/42/*/*"
    code, planned, _ = run_json(kit, cli_home, "migrate-tenant", "--user-id", "42", "--dry-run")
    assert code == 0 and planned["left"] == 1 and planned["moved"] == {}
    code, moved, _ = run_json(
        kit, cli_home, "migrate-tenant", "--user-id", "42", "--platform", "telegram"
    )
    assert code == 0, moved
    assert moved["moved"] == {
        "hermes/telegram:42/*/*": {"memories": 1, "added": 1, "present": 0, "deleted": 1}
    }
    code, listed, _ = run_json(kit, cli_home, "list", "--user-id", "42", "--platform", "telegram")
    assert [m["text"] for m in listed["items"]] == ["I live in Lisbon"]
    code, refused, stderr = run_json(kit, cli_home, "list", "--user-id", "42")
    assert code == 2 and refused["error"]["field"] == "platform" and "--platform" in stderr
