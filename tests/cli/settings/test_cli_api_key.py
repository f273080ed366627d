"""``TABLESTORE_MEMORY_API_KEY`` in the CLI: the memory commands against an emulator that knows
only the key, a wrong key (exit 4), HTTPS only, and the key never printed."""

from __future__ import annotations

import json

KEY = "cli-test-api-key-value"  # conftest's EMULATOR_API_KEY


def _text(result) -> str:
    return result.stdout + result.stderr


def test_the_memory_commands_work_with_an_api_key(api_key_cli):
    added = api_key_cli.json("add", "--sync", "Prefers tea over coffee")
    hits = api_key_cli.json("search", "tea")
    assert [h["text"] for h in hits] == ["Prefers tea over coffee"]
    memory_id = hits[0]["id"]
    assert api_key_cli.json("get", memory_id)["text"] == "Prefers tea over coffee"
    assert [m["text"] for m in api_key_cli.json("list")["items"]] == ["Prefers tea over coffee"]
    api_key_cli.ok("forget", "--yes", memory_id)
    assert api_key_cli.json("list")["items"] == []
    assert KEY not in json.dumps(added)


def test_a_wrong_api_key_exits_4_without_printing_it(api_key_cli):
    wrong = "wrong-api-key-9c4e7a1b"
    result = api_key_cli("search", "tea", env={"TABLESTORE_MEMORY_API_KEY": wrong})
    assert result.exit_code == 4, _text(result)
    assert wrong not in _text(result) and KEY not in _text(result)
    assert "Traceback" not in _text(result)


def test_the_api_key_wins_over_a_wrong_access_key_pair(api_key_cli):
    api_key_cli.ok("stores", "create", "hermes_mem")  # a read does not create it
    result = api_key_cli(
        "--json",
        "list",
        env={"TABLESTORE_MEMORY_AK": "some-ak", "TABLESTORE_MEMORY_SK": "wrong-sk"},
    )
    assert result.exit_code == 0, _text(result)


def test_doctor_says_api_key_and_never_shows_it(api_key_cli):
    result = api_key_cli("--json", "doctor")
    assert result.exit_code == 0, _text(result)
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert all(c["ok"] for c in checks.values()), checks
    assert "API key" in checks["credentials"]["detail"]
    assert KEY not in _text(result)


def test_config_show_says_set_or_not_set(api_key_cli, local_cli):
    shown = api_key_cli.json("config", "show")
    assert shown["credentials"]["TABLESTORE_MEMORY_API_KEY"] == "set (hidden)"
    assert KEY not in json.dumps(shown)
    assert local_cli.json("config", "show")["credentials"]["TABLESTORE_MEMORY_API_KEY"] == "not set"


def test_config_set_keeps_the_api_key_out_of_the_config_file(home, local_cli):
    result = local_cli("config", "set", "api_key", KEY)
    assert result.exit_code == 2
    assert "TABLESTORE_MEMORY_API_KEY" in _text(result) and KEY not in _text(result)
    assert KEY not in (home / "config.json").read_text(encoding="utf-8")


def test_an_api_key_is_refused_on_plain_http_to_a_remote_host(home, local_cli, set_config):
    set_config(
        home, {"endpoint": "http://inst.cn-hangzhou.ots.aliyuncs.com", "instance_name": "inst"}
    )
    result = local_cli("--backend", "tablestore", "list", env={"TABLESTORE_MEMORY_API_KEY": KEY})
    assert result.exit_code == 2, _text(result)
    assert "HTTPS" in _text(result) and KEY not in _text(result)
