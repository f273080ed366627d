"""Every ``hermes tablestore-mem`` failure exits non-zero, with the ``memcore`` CLI's codes
(0 ok, 1 unexpected, 2 usage/config, 3 not found, 4 permission, 5 unavailable)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

AK = "LTAI5tExitCodeKeyId"
SK = "exit-code-secret-Pz71Lk"


@pytest.fixture
def keyed_emulator() -> Iterator[Any]:
    from memcore_tablestore.testing import running_emulator

    with running_emulator(access_key_id=AK, access_key_secret=SK) as server:
        yield server


def with_wrong_key(home: Path, server: Any, kit: Any) -> None:
    """The emulator's endpoint with its key id, but a secret that is not its."""
    kit.emulator_home(home, server, timeout=3.0)
    kit.write_env(home, {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": "wrong-key"})


def test_add_with_a_wrong_secret_key_exits_4_through_hermes(
    hermes_home: Path, keyed_emulator: Any, kit: Any
) -> None:
    kit.install_plugin(hermes_home)
    with_wrong_key(hermes_home, keyed_emulator, kit)
    result = kit.run_hermes(hermes_home, "tablestore-mem", "add", "a note")
    assert result.returncode == 4, (result.stdout, result.stderr[-2000:])
    answer = json.loads(result.stdout)
    assert answer["error"]["code"] == "permission_denied"
    assert answer["status"] == "queued"  # kept in the spool for when the key is fixed
    errors = [
        line for line in result.stderr.splitlines() if line.startswith("tablestore-mem: error")
    ]
    assert len(errors) == 1
    assert "wrong-key" not in result.stdout + result.stderr


def test_search_with_a_wrong_secret_key_exits_4(
    hermes_home: Path, keyed_emulator: Any, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with_wrong_key(hermes_home, keyed_emulator, kit)
    code, answer = kit.run_cli(capsys, "search", "note", secrets=("wrong-key",))
    assert code == 4 and answer["error"]["exit_code"] == 4


def test_memory_setup_for_tablestore_without_keys_exits_non_zero(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit.install_plugin(hermes_home)
    monkeypatch.setenv("TABLESTORE_MEMORY_BACKEND", "tablestore")
    result = kit.run_hermes(hermes_home, "memory", "setup", "tablestore-mem")
    assert result.returncode == 2, (result.stdout, result.stderr[-2000:])
    assert "not available yet" in result.stdout


def test_setup_with_an_unknown_backend_is_an_error_not_local(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit.install_plugin(hermes_home)
    monkeypatch.setenv("TABLESTORE_MEMORY_BACKEND", "tablestor")
    for argv in (("memory", "setup", "tablestore-mem"), ("tablestore-mem", "setup")):
        result = kit.run_hermes(hermes_home, *argv)
        assert result.returncode == 2, (argv, result.stdout, result.stderr[-2000:])
        assert "unknown backend 'tablestor'" in result.stdout + result.stderr
        assert not (hermes_home / "tablestore_memory.json").exists()
    bad_flag = kit.run_hermes(hermes_home, "tablestore-mem", "setup", "--backend", "sqlite")
    assert bad_flag.returncode == 2


def test_setup_answers_one_json_document_and_says_its_words_on_stderr(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README: every command answers one JSON document; setup printed its wizard's
    lines on stdout, and an unusable backend's failure had no error line."""
    kit.install_plugin(hermes_home)
    done = kit.run_hermes(hermes_home, "tablestore-mem", "setup", "--backend", "local")
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert (answer["saved"], answer["available"], answer["backend"]) == (True, True, "local")
    assert answer["config"] == str(hermes_home / "tablestore_memory.json")
    assert "Settings saved" in done.stderr
    monkeypatch.setenv("TABLESTORE_MEMORY_BACKEND", "tablestore")
    unusable = kit.run_hermes(hermes_home, "tablestore-mem", "setup")
    assert unusable.returncode == 2, unusable.stderr[-2000:]
    assert json.loads(unusable.stdout)["available"] is False
    assert unusable.stderr.splitlines()[-1].startswith("tablestore-mem: error: ")


def test_get_of_an_unknown_id_exits_3(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.write_config(hermes_home, backend="local", embedder="none")
    code, answer = kit.run_cli(capsys, "get", "no-such-id")
    assert code == 3 and answer["error"]["code"] == "not_found"


def test_a_hermes_home_that_cannot_be_made_is_named_with_its_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    # sysfs refuses a new folder even to root, while reading a file there is "not found"
    # (the defaults), so setup gets as far as writing its configuration into the home.
    home = Path("/sys/memcore-test-home/hermes")
    if not Path("/sys/kernel").is_dir() or home.parent.exists():
        pytest.skip("needs Linux's sysfs")
    monkeypatch.setenv("HERMES_HOME", str(home))
    parser = argparse.ArgumentParser()
    register_cli(parser)
    with pytest.raises(SystemExit) as stopped:
        tablestore_mem_command(parser.parse_args(["setup", "--backend", "local"]))
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "error:" in x]
    assert stopped.value.code == 4 and "set HERMES_HOME to a writable folder" in line
    assert "MEMCORE_HOME" not in line


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("list", "--limit", "abc"), "list: argument --limit: invalid int value: 'abc'"),
        (("get",), "get: the following arguments are required: memory_id"),
        (("no-such-command",), "invalid choice: 'no-such-command'"),
    ],
)
def test_a_usage_error_answers_json_and_one_line_exit_2(
    hermes_home: Path, kit: Any, argv: tuple[str, ...], said: str
) -> None:
    """argparse printed its usage block and ``hermes tablestore-mem list: error: ...``, no
    JSON, where the README promises one JSON document and one line for every failure."""
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none")
    result = kit.run_hermes(hermes_home, "tablestore-mem", *argv)
    assert result.returncode == 2, (result.stdout, result.stderr[-2000:])
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_input" and said in error["message"]
    assert error["exit_code"] == 2
    lines = [line for line in result.stderr.splitlines() if "tablestore-mem" in line]
    assert lines == [f"tablestore-mem: error: {error['message']}"], result.stderr
    assert "usage:" not in result.stderr
