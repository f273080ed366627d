"""``provision`` against the emulator's control-plane twin, then use of the new instance."""

from __future__ import annotations

import json
import stat

import pytest

AK, SK = "prov-ak", "prov-secret-value"


@pytest.fixture
def twin():
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import EmulatorServer
    from memcore_tablestore.emulator.control_plane import ControlPlane

    control = ControlPlane(instance_names=["emulator"], access_keys={AK: SK})
    server = EmulatorServer(
        InMemoryMemoryStore(), access_key_id=AK, access_key_secret=SK, control_plane=control
    )
    server.start()
    yield server, control
    server.stop()


def _provision_args(server):
    return [
        "provision",
        "--control-endpoint",
        server.url.removeprefix("http://"),
        "--control-protocol",
        "http",
        "--endpoint-template",
        server.url,
        "--dns-timeout",
        "10",
    ]


def test_provision_creates_saves_and_is_safe_to_rerun(home, twin, local_cli):
    server, control = twin
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
    args = _provision_args(server)
    first = local_cli("--json", *args, env=env)
    assert first.exit_code == 0, first.stderr
    facts = json.loads(first.stdout)
    assert facts["instance_name"] == "emulator"
    assert facts["created"] is True
    path = home / "config.json"
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["instance_name"] == "emulator"
    assert saved["endpoint"] == server.url
    assert saved["embedder"] == "none"  # the rest of the file is kept
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert SK not in first.stdout + first.stderr

    again = local_cli("--json", *args, env=env)
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["created"] is False
    assert control.create_count == 1

    added = local_cli(
        "--json", "--backend", "tablestore", "add", "--sync", "provisioned and used", env=env
    )
    assert added.exit_code == 0, added.stderr
    hits = json.loads(
        local_cli("--json", "--backend", "tablestore", "search", "provisioned", env=env).stdout
    )
    assert [h["text"] for h in hits] == ["provisioned and used"]


def test_provision_against_the_emulator_as_served_gives_a_config_that_works(home, local_cli):
    """``memcore emulator serve`` builds its server with no control plane of its own choosing:
    the instance its control plane creates first must be the one its data plane serves, or the
    saved config is refused (403) by the very emulator that created it."""
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import EmulatorServer

    with EmulatorServer(InMemoryMemoryStore(), access_key_id=AK, access_key_secret=SK) as server:
        env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
        made = local_cli("--json", *_provision_args(server), env=env)
        assert made.exit_code == 0, made.stderr
        assert json.loads(made.stdout)["instance_name"] == server.instance_name
        added = local_cli("--backend", "tablestore", "add", "--sync", "bootstrapped", env=env)
        assert added.exit_code == 0, added.stderr
        doctor = local_cli("--backend", "tablestore", "doctor", env=env)
        assert doctor.exit_code == 0, doctor.stdout + doctor.stderr


def test_provision_help_shows_how_to_provision_against_the_emulator(local_cli):
    usage = " ".join(local_cli.ok("provision", "--help").stdout.replace("\\\n", " ").split())
    assert (
        "memcore provision --control-endpoint 127.0.0.1:8765 --control-protocol http"
        " --endpoint-template http://127.0.0.1:8765"
    ) in usage, usage


def test_provision_without_credentials_exits_4(home, twin, local_cli):
    server, _ = twin
    result = local_cli(
        "provision",
        "--control-endpoint",
        server.url.removeprefix("http://"),
        "--control-protocol",
        "http",
    )
    assert result.exit_code == 4
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (home / ".tablestore_pending.json").exists()


@pytest.mark.parametrize("seconds", ["nan", "inf", "-5"])
def test_a_dns_timeout_that_is_not_a_time_is_refused_before_buying(home, twin, local_cli, seconds):
    server, control = twin
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
    args = [*_provision_args(server)[:-1], seconds]

    result = local_cli(*args, env=env)

    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"memcore: error: dns_timeout must be a number of seconds, 0 or more, not {seconds}"
    ]
    assert control.create_count == 0


def test_provision_waits_out_the_new_instance_and_says_so_on_stderr(home, twin, local_cli):
    server, control = twin
    # Right after the purchase the instance refuses UpdateInstance twice (it is not running yet).
    control.fail("UpdateInstance", code="OTSAuthFailed", status=403, times=2)
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}

    result = local_cli("--json", *_provision_args(server), env=env)

    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["instance_name"] == "emulator"
    assert result.stderr.count("warming up (OTSAuthFailed)") == 2
    assert control.create_count == 1


def test_provision_keeps_a_long_service_chosen_name(home, local_cli):
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import EmulatorServer
    from memcore_tablestore.emulator.control_plane import ControlPlane

    name = "tbl-8f3a2c1d9e7b6a5f"  # 20 characters, chosen by the service
    control = ControlPlane(instance_names=[name], access_keys={AK: SK})
    server = EmulatorServer(
        InMemoryMemoryStore(), access_key_id=AK, access_key_secret=SK, control_plane=control
    ).start()
    try:
        env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
        first = local_cli("--json", *_provision_args(server), env=env)
        assert first.exit_code == 0, first.stderr
        assert json.loads((home / "config.json").read_text())["instance_name"] == name
        again = local_cli("--json", *_provision_args(server), env=env)
        assert again.exit_code == 0, again.stderr
        assert json.loads(again.stdout)["created"] is False
        assert control.create_count == 1
    finally:
        server.stop()


URL_PASSWORD = "UrlPasswordCanary42"


def test_provision_never_shows_a_configured_endpoints_password(home, twin, local_cli, set_config):
    """A hand-written endpoint with ``user:password@`` loads (``config set`` refuses one), and
    every command shows it hidden; ``provision`` of the configured instance printed it whole."""
    server, control = twin
    endpoint = server.url.replace("http://", f"http://user:{URL_PASSWORD}@")
    set_config(home, {"embedder": "none", "instance_name": "emulator", "endpoint": endpoint})
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
    for args in (["provision"], ["--json", "provision"]):
        result = local_cli(*args, env=env)
        assert result.exit_code == 0, result.stderr
        shown = result.stdout + result.stderr
        assert URL_PASSWORD not in shown and "user:" not in shown, shown
        assert "http://***@127.0.0.1" in shown, shown
    assert control.create_count == 0


def test_an_endpoint_template_with_a_password_is_refused_before_buying(home, twin, local_cli):
    """The saved endpoint would carry the password (which ``config set`` refuses), and it was
    shown in the progress lines: refused up front, nothing bought, the password not quoted."""
    server, control = twin
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
    args = _provision_args(server)
    template = args.index("--endpoint-template") + 1
    args[template] = server.url.replace("http://", f"http://user:{URL_PASSWORD}@")
    result = local_cli(*args, env=env)
    assert result.exit_code == 2, result.stdout + result.stderr
    shown = result.stdout + result.stderr
    assert URL_PASSWORD not in shown, shown
    assert "endpoint" in result.stderr
    assert control.create_count == 0
    assert "instance_name" not in (home / "config.json").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--control-endpoint", ""),
        ("--control-endpoint", "  "),
        ("--control-endpoint", "127.0.0.1:99999"),
        ("--control-endpoint", "http://127.0.0.1:8765"),
        ("--control-endpoint", "127.0.0.1:8765\x1b[2J"),
        ("--endpoint-template", ""),
    ],
)
def test_an_empty_or_malformed_endpoint_is_refused_before_any_call(
    home, local_cli, monkeypatch, option, value
):
    """An empty --control-endpoint (an unset shell variable) meant the region's real control
    plane, where provision buys a paid instance; an empty --endpoint-template meant the real
    data host. A malformed endpoint was retried as "the control plane is busy" for minutes."""
    from memcore_tablestore.provisioning import provisioner

    called = []

    def no_call(**kwargs):
        called.append(kwargs)
        raise AssertionError("the control plane was called")

    monkeypatch.setattr(provisioner, "ControlPlaneClient", no_call)
    args = {
        "--control-endpoint": "127.0.0.1:8765",
        "--control-protocol": "http",
        "--endpoint-template": "http://127.0.0.1:8765",
        option: value,
    }
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
    result = local_cli("provision", *[w for pair in args.items() for w in pair], env=env)
    assert called == []
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert option.removeprefix("--").replace("-", "_") in result.stderr, result.stderr
    assert not (home / ".tablestore_pending.json").exists()


def test_provision_where_nothing_listens_exits_5_within_seconds_naming_the_address(home, local_cli):
    """A refused connection on the control endpoint is said at once to be one (not a busy
    control plane retried for a minute): exit 5, one line naming the address, never a key."""
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        endpoint = f"127.0.0.1:{probe.getsockname()[1]}"
    env = {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
    args = ["provision", "--control-endpoint", endpoint, "--control-protocol", "http"]

    started = time.monotonic()
    result = local_cli(*args, env=env)

    assert time.monotonic() - started < 15, result.stderr
    assert result.exit_code == 5, result.stderr
    assert "busy" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("memcore: error: "), result.stderr
    assert f"nothing answers at the control plane {endpoint}" in last, last
    assert "connection refused" in last, last
    assert SK not in result.stderr and AK not in result.stderr
