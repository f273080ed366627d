"""Configuring the provider through Hermes' own web dashboard functions (``hermes_cli.web_server``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

NAME = "tablestore-mem"
AK = "LTAI5tDashboardKeyId"
SK = "dashboard-secret-Qw81zPm4"
API_KEY = "dashboard-api-key-Zx40Lk7q"
VARS = ("TABLESTORE_MEMORY_AK", "TABLESTORE_MEMORY_SK", "TABLESTORE_MEMORY_API_KEY")


@pytest.fixture
def dashboard(hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The dashboard's module with the plugin installed in a fresh home; the keys it saves to
    ``.env`` are also put in ``os.environ`` by Hermes, so they are removed again afterwards."""
    kit.install_plugin(hermes_home)
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    for name in list(sys.modules):
        if name.startswith("_hermes_user_memory"):
            del sys.modules[name]
    from hermes_cli import web_server

    yield web_server
    for var in VARS:
        monkeypatch.delenv(var, raising=False)


def http_client(web_server: Any) -> Any:
    """The dashboard's own HTTP routes, as its page calls them."""
    from fastapi.testclient import TestClient

    return TestClient(
        web_server.app,
        base_url="http://127.0.0.1",
        headers={"X-Hermes-Session-Token": web_server._SESSION_TOKEN},
    )


def row(web_server: Any) -> dict[str, Any]:
    [found] = [r for r in web_server._discover_memory_provider_statuses() if r["name"] == NAME]
    return dict(found)


def test_keys_entered_in_the_dashboard_reach_env_and_the_provider_is_ready(
    dashboard: Any, hermes_home: Path
) -> None:
    provider = dashboard._load_memory_provider(NAME)
    assert provider is not None
    before = row(dashboard)
    assert before["status"] == "needs_config" and before["configured"] is False

    dashboard._write_memory_provider_config_values(
        NAME,
        provider,
        {
            "backend": "tablestore",
            "access_key_id": AK,
            "access_key_secret": SK,
            "instance_name": "dash-inst",
            "endpoint": "http://127.0.0.1:9/",
        },
    )

    env_text = (hermes_home / ".env").read_text()
    assert f"TABLESTORE_MEMORY_AK={AK}" in env_text
    assert f"TABLESTORE_MEMORY_SK={SK}" in env_text
    config_text = (hermes_home / "tablestore_memory.json").read_text()
    assert AK not in config_text and SK not in config_text
    config = json.loads(config_text)
    assert config["backend"] == "tablestore" and config["instance_name"] == "dash-inst"

    after = row(dashboard)
    assert after["configured"] is True and after["available"] is True
    assert after["status"] == "ready"
    fields = {f["key"]: f for f in dashboard._memory_provider_payload(NAME, provider)["fields"]}
    assert fields["access_key_id"]["is_set"] and fields["access_key_secret"]["is_set"]
    assert fields["access_key_secret"]["value"] == ""  # a secret is never sent back


def test_an_api_key_alone_configures_the_provider_in_the_dashboard(
    dashboard: Any, hermes_home: Path
) -> None:
    """The API key stands in for the pair (on an existing instance): with it entered, the
    pair is no longer required and the dashboard shows the provider ready; without any key
    the pair is what it asks for."""
    provider = dashboard._load_memory_provider(NAME)
    assert provider is not None
    fields = {f["key"]: f for f in dashboard._memory_provider_payload(NAME, provider)["fields"]}
    assert fields["access_key_id"]["required"] and fields["access_key_secret"]["required"]
    assert row(dashboard)["status"] == "needs_config"

    dashboard._write_memory_provider_config_values(
        NAME,
        provider,
        {
            "backend": "tablestore",
            "api_key": API_KEY,
            "instance_name": "dash-inst",
            "endpoint": "https://dash-inst.cn-beijing.ots.aliyuncs.com",
        },
    )

    assert f"TABLESTORE_MEMORY_API_KEY={API_KEY}" in (hermes_home / ".env").read_text()
    after = row(dashboard)
    assert after["configured"] is True and after["available"] is True
    assert after["status"] == "ready"
    fields = {f["key"]: f for f in dashboard._memory_provider_payload(NAME, provider)["fields"]}
    assert fields["api_key"]["is_set"] and fields["api_key"]["value"] == ""
    assert not fields["access_key_id"]["required"] and not fields["access_key_secret"]["required"]
    assert not fields["access_key_id"]["is_set"]


def test_memory_status_gives_the_real_reason_with_the_keys_set(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_env(hermes_home, {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK})
    kit.write_config(hermes_home, backend="tablestore", top_k=500)
    out = kit.run_hermes(hermes_home, "memory", "status").stdout
    assert "not available" in out and "top_k must be from 1 to 50" in out
    assert "✗ TABLESTORE_MEMORY_AK" not in out  # the keys are there: not named as missing
    assert AK not in out and SK not in out


def test_the_dashboard_shows_and_keeps_the_saved_settings(
    dashboard: Any, hermes_home: Path, kit: Any
) -> None:
    """The dashboard reads a provider's values from files of its own naming, not from
    ``tablestore_memory.json``: it showed the defaults, called a working local store
    unconfigured, and a save of one field wrote every other one back to its default (another
    backend, store, app and tenant rule: the memories out of sight)."""
    kit.write_config(
        hermes_home,
        backend="local",
        memory_store_name="my_store",
        app_id="myapp",
        tenant_scope="user",
        top_k=9,
        enable_rerank=False,
    )
    provider = dashboard._load_memory_provider(NAME)
    assert provider is not None
    assert row(dashboard)["status"] == "ready"
    shown = {
        f["key"]: f["value"] for f in dashboard._memory_provider_payload(NAME, provider)["fields"]
    }
    assert shown["backend"] == "local" and shown["memory_store_name"] == "my_store"
    assert (shown["app_id"], shown["tenant_scope"]) == ("myapp", "user")
    assert (shown["top_k"], shown["enable_rerank"]) == ("9", "false")

    dashboard._write_memory_provider_config_values(NAME, provider, {"top_k": "7"})

    config = json.loads((hermes_home / "tablestore_memory.json").read_text())
    assert config["top_k"] == 7
    assert (config["backend"], config["memory_store_name"]) == ("local", "my_store")
    assert (config["app_id"], config["tenant_scope"], config["enable_rerank"]) == (
        "myapp",
        "user",
        False,
    )


def test_an_api_key_saved_in_the_dashboard_keeps_the_instance(
    dashboard: Any, hermes_home: Path, kit: Any
) -> None:
    """Entering only a key used to wipe the instance and endpoint (the next start would
    create a new instance) and put the region back to its default."""
    endpoint = "https://inst1.cn-hangzhou.ots.aliyuncs.com"
    kit.write_config(
        hermes_home,
        backend="tablestore",
        instance_name="inst1",
        endpoint=endpoint,
        region="cn-hangzhou",
    )
    provider = dashboard._load_memory_provider(NAME)
    assert provider is not None

    dashboard._write_memory_provider_config_values(NAME, provider, {"api_key": API_KEY})

    config = json.loads((hermes_home / "tablestore_memory.json").read_text())
    assert (config["instance_name"], config["endpoint"], config["region"]) == (
        "inst1",
        endpoint,
        "cn-hangzhou",
    )
    assert API_KEY not in json.dumps(config)
    assert row(dashboard)["status"] == "ready"


def test_a_bad_value_saved_in_the_dashboard_is_refused_with_its_reason(
    dashboard: Any, hermes_home: Path, kit: Any
) -> None:
    """Hermes' dashboard answers a ``ValueError`` from a provider's ``save_config`` with a 400
    and its message, anything else with a 500 "Internal server error" and no reason."""
    path = kit.write_config(hermes_home, backend="local", top_k=9)
    before = path.read_text()
    client = http_client(dashboard)
    answer = client.put(f"/api/memory/providers/{NAME}/config", json={"values": {"top_k": "500"}})
    assert answer.status_code == 400
    assert "top_k must be from 1 to 50" in answer.json()["detail"]
    assert path.read_text() == before

    answer = client.put(f"/api/memory/providers/{NAME}/config", json={"values": {"top_k": "7"}})
    assert answer.status_code == 200
    assert json.loads(path.read_text())["top_k"] == 7


def test_a_dashboard_save_keeps_a_tenant_id_it_did_not_change(
    dashboard: Any, hermes_home: Path, kit: Any
) -> None:
    """Hermes' dashboard trims every value it sends back on a save, unchanged ones too: a
    saved tenant ``"alice "`` (a tenant of its own) became ``"alice"`` when another field
    was saved, and the memories under it dropped out of every recall."""
    path = kit.write_config(hermes_home, backend="local", tenant_id="alice ", embedder="none")
    client = http_client(dashboard)
    answer = client.put(
        f"/api/memory/providers/{NAME}/config", json={"values": {"store_assistant": "never"}}
    )
    assert answer.status_code == 200, answer.text
    saved = json.loads(path.read_text())
    assert (saved["tenant_id"], saved["store_assistant"]) == ("alice ", "never")
    answer = client.put(
        f"/api/memory/providers/{NAME}/config", json={"values": {"tenant_id": "bob"}}
    )
    assert json.loads(path.read_text())["tenant_id"] == "bob"


def test_the_dashboard_never_shows_an_endpoints_password(
    dashboard: Any, hermes_home: Path, kit: Any
) -> None:
    """A hand-written endpoint with ``user:password@`` loads; the dashboard showed it whole as
    the endpoint field's value, and a save of any field wrote it back, which the config
    refuses (it keeps no user:password@), so nothing could be saved. It is shown, and kept,
    without them (TableStore signs with the keys, never with these)."""
    kit.write_config(
        hermes_home,
        backend="tablestore",
        endpoint="https://urlUser:UrlPasswordCanary@inst.cn-beijing.ots.aliyuncs.com",
        instance_name="inst",
    )
    provider = dashboard._load_memory_provider(NAME)
    assert provider is not None
    payload = json.dumps(dashboard._memory_provider_payload(NAME, provider))
    assert "UrlPasswordCanary" not in payload and "urlUser" not in payload, payload
    assert "https://inst.cn-beijing.ots.aliyuncs.com" in payload

    dashboard._write_memory_provider_config_values(NAME, provider, {"top_k": "7"})

    config = json.loads((hermes_home / "tablestore_memory.json").read_text())
    assert config["top_k"] == 7
    assert config["endpoint"] == "https://inst.cn-beijing.ots.aliyuncs.com"


def test_a_field_blanked_in_the_dashboard_is_cleared(
    dashboard: Any, hermes_home: Path, kit: Any
) -> None:
    """The form sends every field it shows; Hermes turns a blank one into the field's
    default, which is its saved value, so blanking ``tenant_id``, ``instance_name`` or
    ``endpoint`` kept it. Blanked, each is now removed (as ``setup --tenant-id ""`` does), a
    field blanked with a default of its own gets that default, and the rest are kept."""
    saved = {"backend": "tablestore", "instance_name": "inst1", "region": "cn-hangzhou"}
    saved.update(endpoint="https://inst1.cn-hangzhou.ots.aliyuncs.com", tenant_id="acme")
    path = kit.write_config(hermes_home, app_id="myapp", top_k=9, **saved)
    client = http_client(dashboard)
    shown = client.get(f"/api/memory/providers/{NAME}/config").json()["fields"]
    form = {f["key"]: f["value"] for f in shown}
    assert (form["tenant_id"], form["instance_name"], form["top_k"]) == ("acme", "inst1", "9")
    form.update(tenant_id="", instance_name="  ", endpoint="", top_k="")
    form.update(access_key_id=AK, access_key_secret=SK)

    answer = client.put(f"/api/memory/providers/{NAME}/config", json={"values": form})

    assert answer.status_code == 200, answer.text
    config = json.loads(path.read_text())
    for cleared in ("tenant_id", "instance_name", "endpoint"):
        assert config.get(cleared) is None, config
    assert config["top_k"] == 5
    assert (config["region"], config["app_id"], config["backend"]) == (
        "cn-hangzhou",
        "myapp",
        "tablestore",
    )
    shown = client.get(f"/api/memory/providers/{NAME}/config").json()["fields"]
    form = {f["key"]: f["value"] for f in shown}
    assert (form["tenant_id"], form["instance_name"], form["top_k"]) == ("", "", "5")


@pytest.mark.parametrize(
    ("key", "saved", "default"),
    [("memory_store_name", "work", "hermes_mem"), ("app_id", "myapp", "hermes")],
)
def test_blanking_where_memories_live_is_refused_with_what_it_would_hide(
    dashboard: Any, hermes_home: Path, kit: Any, key: str, saved: str, default: str
) -> None:
    """A blanked ``memory_store_name`` or ``app_id`` was saved as its default: every later
    session read another store (or app), and the memories kept under the saved one vanished
    from recall with nothing said. The save is now refused (400) naming what it would hide;
    typing the default switches, and a blank that is the default already changes nothing."""
    path = kit.write_config(hermes_home, backend="local", **{key: saved})
    client = http_client(dashboard)
    form = {
        f["key"]: f["value"]
        for f in client.get(f"/api/memory/providers/{NAME}/config").json()["fields"]
    }
    assert form[key] == saved

    answer = client.put(f"/api/memory/providers/{NAME}/config", json={"values": {**form, key: ""}})

    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert f"{key} left blank" in detail and repr(saved) in detail and repr(default) in detail
    assert json.loads(path.read_text())[key] == saved
    answer = client.put(
        f"/api/memory/providers/{NAME}/config", json={"values": {**form, key: default}}
    )
    assert answer.status_code == 200, answer.text
    assert json.loads(path.read_text())[key] == default
    answer = client.put(f"/api/memory/providers/{NAME}/config", json={"values": {**form, key: " "}})
    assert answer.status_code == 200, answer.text
    assert json.loads(path.read_text()).get(key, default) == default


def test_recall_wait_is_offered_for_both_backends() -> None:
    """It bounds a local session's wait for a store still opening too (README's table), but
    the dashboard showed it for TableStore only."""
    from memcore_hermes.config.dashboard import settings_schema

    [field] = [f for f in settings_schema(False) if f["key"] == "recall_wait_ms"]
    assert "when" not in field
