"""The provisioner against the control-plane twin, through the real control-plane SDK."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
import tablestore_conftest_provisioner as _fx  # registered by conftest.py

from memcore.config import MemcoreConfig
from memcore.errors import ConfigError, InvalidInput, PermissionDenied, Unavailable
from memcore.ports import InstanceFacts, Provisioner
from memcore_tablestore.credentials import Credentials
from memcore_tablestore.emulator.control_plane import ControlPlane
from memcore_tablestore.provisioning.errors import ControlPlaneError
from memcore_tablestore.provisioning.files import PENDING_MARKER, PendingInstance, write_pending
from memcore_tablestore.provisioning.provisioner import TableStoreProvisioner, data_endpoint

FakeClock = _fx.FakeClock


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing on the way catches it."""


def _saved(config_path: Path) -> dict[str, Any]:
    return json.loads(config_path.read_text(encoding="utf-8"))


def test_first_run_creates_opens_and_saves_the_instance(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    steps: list[str] = []
    provisioner: Provisioner = make()  # the port, as hosts hold it
    facts = provisioner.ensure_instance(progress=steps.append)

    assert facts.created is True
    assert facts.region == "cn-beijing"
    assert facts.endpoint == f"https://{facts.instance_name}.cn-beijing.ots.aliyuncs.com"
    assert control_plane.create_count == 1
    (order,) = control_plane.orders()
    assert order["ClusterType"] == "SSD"
    assert order["VCU"] == 0
    assert order["EnableElasticVCU"] is True
    assert order["PeriodInMonth"] == 1
    assert order["EnableAutoRenew"] is True
    assert order["AutoRenewPeriodInMonth"] == 1
    (instance,) = control_plane.instances()
    assert instance["InstanceName"] == facts.instance_name
    assert instance["NetworkTypeACL"] == ["INTERNET", "VPC", "CLASSIC"]
    assert instance["NetworkSourceACL"] == ["TRUST_PROXY"]
    saved = _saved(config_path)
    assert saved["instance_name"] == facts.instance_name
    assert saved["endpoint"] == facts.endpoint
    assert not (config_path.parent / PENDING_MARKER).exists()
    assert any("Created instance" in step for step in steps)


def test_a_configured_instance_needs_no_control_plane(
    make: Any, control_plane: ControlPlane
) -> None:
    first = make().ensure_instance()
    calls = {
        a: control_plane.call_count(a)
        for a in ("CreateVCUInstance", "UpdateInstance", "ListInstances")
    }

    again = make().ensure_instance()

    assert again == InstanceFacts(first.instance_name, first.endpoint, first.region, created=False)
    assert {a: control_plane.call_count(a) for a in calls} == calls


def test_configured_instance_without_endpoint_gets_the_derived_one(tmp_path: Path) -> None:
    config = MemcoreConfig(instance_name="myinst", region="cn-hangzhou")
    # Points at a closed port: the control plane must not be called at all.
    provisioner = TableStoreProvisioner(
        config, tmp_path / "c.json", control_endpoint="127.0.0.1:9", control_protocol="http"
    )
    facts = provisioner.ensure_instance()
    assert facts.endpoint == "https://myinst.cn-hangzhou.ots.aliyuncs.com"
    assert data_endpoint("x1y", "cn-beijing") == "https://x1y.cn-beijing.ots.aliyuncs.com"


def test_crash_after_create_before_persist_reuses_the_instance(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    def dies(_: InstanceFacts) -> None:
        raise Crash

    with pytest.raises(Crash):
        make(probe=dies).ensure_instance()
    assert control_plane.create_count == 1
    # The name was saved first; the endpoint only comes with a finished bootstrap.
    assert "endpoint" not in _saved(config_path)
    assert (config_path.parent / PENDING_MARKER).exists()

    facts = make().ensure_instance()

    assert control_plane.create_count == 1
    assert facts.created is False
    assert facts.instance_name == control_plane.instances()[0]["InstanceName"]
    assert _saved(config_path)["instance_name"] == facts.instance_name
    assert not (config_path.parent / PENDING_MARKER).exists()


def test_failed_save_is_reported_and_the_next_run_reuses_the_instance(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    def path_turns_into_a_directory(_: InstanceFacts) -> None:
        config_path.unlink()
        config_path.mkdir()  # the final save can neither read nor replace it now

    with pytest.raises(ConfigError) as info:
        make(probe=path_turns_into_a_directory).ensure_instance()
    assert str(config_path) in str(info.value)
    assert control_plane.create_count == 1
    config_path.rmdir()

    facts = make().ensure_instance()

    assert control_plane.create_count == 1
    assert _saved(config_path)["instance_name"] == facts.instance_name


def test_crash_right_after_create_is_found_by_alias(
    make: Any,
    control_plane: ControlPlane,
    config_path: Path,
    credentials: Credentials,
    control_endpoint: str,
) -> None:
    # An earlier run recorded its alias, bought the instance, and died before noting its name.
    from memcore_tablestore.provisioning.control_client import ControlPlaneClient

    client = ControlPlaneClient(
        region="cn-beijing", credentials=credentials, endpoint=control_endpoint, protocol="http"
    )
    for i in range(3):
        client.create_vcu_instance(alias=f"someone-else-{i}", description="")
    bought = client.create_vcu_instance(alias="memcore-abc123", description="")
    write_pending(config_path.parent, PendingInstance(alias="memcore-abc123", region="cn-beijing"))
    assert control_plane.create_count == 4

    facts = make().ensure_instance()

    assert facts.instance_name == bought
    assert control_plane.create_count == 4
    assert control_plane.call_count("ListInstances") >= 1


def test_a_lost_create_answer_does_not_buy_twice(make: Any, control_plane: ControlPlane) -> None:
    # The service creates the instance but the answer is a 500: retrying blindly would buy twice.
    control_plane.fail("CreateVCUInstance", code="InternalError", status=500, commit=True)

    facts = make().ensure_instance()

    assert control_plane.create_count == 1
    assert facts.instance_name == control_plane.instances()[0]["InstanceName"]


def test_throttled_create_is_retried(make: Any, control_plane: ControlPlane, clock: Any) -> None:
    control_plane.fail("CreateVCUInstance", code="Throttling.User", status=400, times=2)

    make().ensure_instance()

    assert control_plane.create_count == 1
    assert control_plane.call_count("CreateVCUInstance") == 3
    assert clock.sleeps  # it backed off


def test_acl_failure_is_surfaced_with_its_code_and_recommend(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    control_plane.fail(
        "UpdateInstance",
        code="Forbidden.RAM",
        status=403,
        message="User not authorized to operate on the specified resource.",
        recommend="https://api.aliyun.com/troubleshoot?q=Forbidden.RAM",
        times=None,
    )
    with pytest.raises(PermissionDenied) as info:
        make().ensure_instance()  # after the new instance's warm-up has run out

    err = info.value
    assert isinstance(err, ControlPlaneError)
    assert err.service_code == "Forbidden.RAM"
    assert err.action == "UpdateInstance"
    assert err.status == 403
    assert "Forbidden.RAM" in str(err)
    assert "User not authorized" in str(err)
    assert "https://api.aliyun.com/troubleshoot?q=Forbidden.RAM" in str(err)
    assert err.to_dict()["recommend"] == "https://api.aliyun.com/troubleshoot?q=Forbidden.RAM"
    assert "endpoint" not in _saved(config_path)

    # Once the permission is granted, a re-run finishes with the same instance.
    control_plane.clear_faults()
    facts = make().ensure_instance()
    assert control_plane.create_count == 1
    assert control_plane.instances()[0]["InstanceName"] == facts.instance_name


def test_parameter_errors_are_invalid_input(make: Any, control_plane: ControlPlane) -> None:
    control_plane.fail(
        "CreateVCUInstance", code="InvalidParameter.VCU", status=400, message="bad VCU"
    )
    with pytest.raises(InvalidInput) as info:
        make().ensure_instance()
    assert info.value.service_code == "InvalidParameter.VCU"
    assert info.value.field == "VCU"
    assert control_plane.create_count == 0


def test_server_errors_give_up_as_unavailable_within_the_timeout(
    make: Any, control_plane: ControlPlane, clock: Any
) -> None:
    control_plane.fail("ListInstances", code="InternalError", status=500, times=None)
    start = clock()
    with pytest.raises(Unavailable) as info:
        make(control_timeout=20.0).ensure_instance()
    assert info.value.retryable
    assert info.value.service_code == "InternalError"
    assert clock() - start <= 20.0 + 1e-6
    assert control_plane.create_count == 0


def test_slow_dns_is_waited_for(make: Any, control_plane: ControlPlane, clock: Any) -> None:
    control_plane.configure({"dns_delay": 25.0})
    steps: list[str] = []

    facts = make().ensure_instance(progress=steps.append)

    assert facts.created
    assert sum(clock.sleeps) >= 25.0
    assert any("does not resolve yet" in step for step in steps)


def test_dns_that_never_resolves_is_bounded_and_resumable(
    make: Any, control_plane: ControlPlane, clock: Any, config_path: Path
) -> None:
    control_plane.configure({"dns_delay": 1000.0})
    with pytest.raises(Unavailable) as info:
        make(dns_timeout=60.0).ensure_instance()
    assert info.value.field == "endpoint"
    assert "endpoint" not in _saved(config_path)

    control_plane.configure({"dns_delay": 0.0})
    facts = make().ensure_instance()
    assert control_plane.create_count == 1
    assert _saved(config_path)["instance_name"] == facts.instance_name


def test_transient_data_plane_errors_are_retried(make: Any) -> None:
    answers: list[BaseException | None] = [Unavailable("warming up"), ConnectionResetError(), None]
    seen: list[InstanceFacts] = []

    def probe(facts: InstanceFacts) -> None:
        seen.append(facts)
        answer = answers.pop(0)
        if answer is not None:
            raise answer

    facts = make(probe=probe).ensure_instance()
    assert seen == [facts, facts, facts]


def test_a_refused_probe_stops_the_bootstrap_after_the_warm_up(
    make: Any, config_path: Path, clock: Any
) -> None:
    def probe(_: InstanceFacts) -> None:
        raise PermissionDenied("OTSAuthFailed", field="credentials")

    start = clock()
    with pytest.raises(PermissionDenied):
        make(probe=probe, warmup=300.0).ensure_instance()
    assert 300.0 - 1e-6 <= clock() - start <= 300.0 + 60.0
    assert "endpoint" not in _saved(config_path)
    assert (config_path.parent / PENDING_MARKER).exists()


def test_config_is_merged_and_written_0600(make: Any, config_path: Path) -> None:
    config_path.parent.mkdir(parents=True)
    config_path.write_text(json.dumps({"memory_store_name": "team_mem", "tenant_id": "alice"}))
    os.chmod(config_path, 0o644)

    facts = make().ensure_instance()

    saved = _saved(config_path)
    assert saved["memory_store_name"] == "team_mem"
    assert saved["tenant_id"] == "alice"
    assert saved["instance_name"] == facts.instance_name
    assert saved["endpoint"] == facts.endpoint
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    assert sorted(p.name for p in config_path.parent.iterdir()) == [
        ".tablestore_pending.lock",
        "tablestore_memory.json",
    ]


def test_edits_made_during_the_bootstrap_are_kept(make: Any, config_path: Path) -> None:
    def user_edits(_: InstanceFacts) -> None:
        config_path.write_text(json.dumps({"top_k": 9}))

    make(probe=user_edits).ensure_instance()
    assert _saved(config_path)["top_k"] == 9


def test_a_bad_config_file_is_refused_before_buying(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    config_path.parent.mkdir(parents=True)
    config_path.write_text('{"top_k": "many"}')
    with pytest.raises(ConfigError) as info:
        make().ensure_instance()
    assert info.value.field == "top_k"
    assert control_plane.create_count == 0


def test_pending_marker_from_another_region_is_refused(
    make: Any, config_path: Path, control_plane: ControlPlane
) -> None:
    write_pending(config_path.parent, PendingInstance(alias="memcore-zzz", region="cn-hangzhou"))
    with pytest.raises(ConfigError) as info:
        make().ensure_instance()
    assert info.value.field == "region"
    assert control_plane.create_count == 0
    # Nothing was bought or sent there (a refused create, a quota): the message says so.
    assert "nothing was bought" in str(info.value)
    assert "removing that instance" not in str(info.value)


@pytest.mark.parametrize(
    "recorded",
    [{"instance_name": "memc-old"}, {"create_sent_at": 1000.0}],
    ids=["bought", "in-flight"],
)
def test_a_marker_of_a_purchase_in_another_region_says_to_release_it(
    make: Any, config_path: Path, control_plane: ControlPlane, recorded: dict[str, Any]
) -> None:
    pending = PendingInstance(alias="memcore-zzz", region="cn-hangzhou", **recorded)
    write_pending(config_path.parent, pending)
    with pytest.raises(ConfigError) as info:
        make().ensure_instance()
    assert "removing that instance" in str(info.value) and "memcore-zzz" in str(info.value)
    assert control_plane.create_count == 0


def test_pending_marker_is_private(make: Any, config_path: Path) -> None:
    with pytest.raises(Crash):
        make(probe=lambda _: (_ for _ in ()).throw(Crash())).ensure_instance()
    marker = config_path.parent / PENDING_MARKER
    assert stat.S_IMODE(marker.stat().st_mode) == 0o600
    data = json.loads(marker.read_text())
    assert data["alias"].startswith("memcore-")
    assert data["instance_name"]


@pytest.mark.parametrize("refused", ["lock", "marker"])
def test_a_folder_that_cannot_be_written_is_one_error_naming_it_before_buying(
    make: Any,
    control_plane: ControlPlane,
    config_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    refused: str,
) -> None:
    """Mode bits do not stop root, so the refusal is the operating system's own error."""
    from memcore_tablestore.provisioning import files

    def no(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(config_path.parent))

    opened = files.os.open
    if refused == "lock":
        monkeypatch.setattr(
            files.os,
            "open",
            lambda path, *rest: (
                no() if str(path).endswith(files.LOCK_FILE) else opened(path, *rest)
            ),
        )
    else:
        monkeypatch.setattr(files.tempfile, "mkstemp", no)

    with pytest.raises(PermissionDenied) as info:
        make().ensure_instance()

    assert str(config_path.parent) in str(info.value) and "\n" not in str(info.value)
    assert control_plane.create_count == 0


def test_concurrent_first_runs_buy_one_instance(
    control_plane: ControlPlane, control_endpoint: str, credentials: Credentials, config_path: Path
) -> None:
    results: list[InstanceFacts] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            provisioner = TableStoreProvisioner.from_file(
                config_path,
                credentials=credentials,
                control_endpoint=control_endpoint,
                control_protocol="http",
                resolver=control_plane.resolve,
            )
            results.append(provisioner.ensure_instance())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert control_plane.create_count == 1
    assert len({r.instance_name for r in results}) == 1


def test_a_wrong_secret_is_permission_denied_and_never_shown(
    make: Any, control_plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "wrong-secret-value-8d1f0c"
    bad = Credentials(_fx.ACCESS_KEY_ID, secret, security_token="sts-token-value-55aa")
    caplog.set_level(logging.DEBUG)
    provisioner = make(credentials=bad)
    steps: list[str] = []
    with pytest.raises(PermissionDenied) as info:
        provisioner.ensure_instance(progress=steps.append)
    err = info.value
    assert err.service_code == "SignatureDoesNotMatch"
    for text in (
        str(err),
        repr(err),
        json.dumps(err.to_dict()),
        caplog.text,
        repr(provisioner),
        *steps,
    ):
        assert secret not in text
        assert "sts-token-value-55aa" not in text
    assert control_plane.create_count == 0


def test_secrets_echoed_by_the_service_are_redacted(make: Any, control_plane: ControlPlane) -> None:
    control_plane.fail(
        "ListInstances",
        code="Forbidden",
        status=403,
        message=f"denied for secret {_fx.ACCESS_KEY_SECRET}",
    )
    with pytest.raises(PermissionDenied) as info:
        make().ensure_instance()
    assert _fx.ACCESS_KEY_SECRET not in str(info.value)
    assert "***" in str(info.value)


def test_a_string_to_sign_echoed_back_shows_no_key_id_or_token(
    make: Any, control_plane: ControlPlane
) -> None:
    # SignatureDoesNotMatch answers quote the string to sign: the key id and the STS token.
    token = "CAIS-sts-token-Hx81kd02"
    quoted = f"AccessKeyId={_fx.ACCESS_KEY_ID}&SecurityToken={token}"
    control_plane.fail(
        "ListInstances",
        code="SignatureDoesNotMatch",
        status=400,
        message=f"string to sign: GET&/v2/openapi/listinstances&{quoted}",
        recommend=f"https://api.aliyun.com/troubleshoot?q={quoted}",
    )
    keys = Credentials(_fx.ACCESS_KEY_ID, _fx.ACCESS_KEY_SECRET, token)
    with pytest.raises(PermissionDenied) as info:
        make(credentials=keys).ensure_instance()
    shown = f"{info.value} {info.value!r} {info.value.to_dict()}"
    assert _fx.ACCESS_KEY_ID not in shown and token not in shown
    assert "AccessKeyId=***" in str(info.value)


def test_an_unknown_key_is_permission_denied_whatever_the_status(make: Any) -> None:
    with pytest.raises(PermissionDenied) as info:
        make(credentials=Credentials("LTAI-unknown-key", "whatever-secret")).ensure_instance()
    assert info.value.service_code == "InvalidAccessKeyId.NotFound"
    assert info.value.status == 404


def test_an_unreachable_control_plane_is_unavailable(
    tmp_path: Path, credentials: Credentials
) -> None:
    clock = FakeClock()
    provisioner = TableStoreProvisioner(
        MemcoreConfig(timeout=2.0),
        tmp_path / "c.json",
        credentials=credentials,
        control_endpoint="127.0.0.1:9",
        control_protocol="http",
        clock=clock,
        sleep=clock.sleep,
        control_timeout=5.0,
    )
    with pytest.raises(Unavailable) as info:
        provisioner.ensure_instance()
    assert "127.0.0.1:9" in str(info.value)
    # Nothing answered: not "answered, but its answer could not be read (RetryError)".
    assert "nothing answers at the control plane 127.0.0.1:9" in str(info.value), str(info.value)
    assert "answered" not in str(info.value)


@pytest.mark.parametrize(
    ("status", "body"),
    [(502, b"<html><body>Bad Gateway</body></html>"), (200, b"not json at all")],
    ids=["proxy-page", "not-json"],
)
def test_an_answer_that_is_not_json_is_not_called_unreachable(
    make: Any,
    control_plane: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    body: bytes,
) -> None:
    # A proxy in front of the control plane answers with its own page: it was reached.
    def handle(*args: Any) -> Any:
        return status, {"content-type": "text/html", "content-length": str(len(body))}, body

    monkeypatch.setattr(control_plane, "handle", handle)
    with pytest.raises(Unavailable) as info:
        make().ensure_instance()
    message = str(info.value)
    assert "could not be reached" not in message
    assert message.startswith("ListInstances failed: the control plane at 127.0.0.1:")
    assert "answered, but its answer could not be read" in message
    assert control_plane.create_count == 0


def test_emulator_mode_saves_the_emulator_as_the_data_endpoint(
    make: Any, control_endpoint: str, config_path: Path
) -> None:
    # How `memcore provision` targets a local emulator: both planes on 127.0.0.1, real resolver.
    from memcore_tablestore.provisioning.wait import system_resolver

    url = f"http://{control_endpoint}"
    facts = make(endpoint_template=url, resolver=system_resolver).ensure_instance()

    assert facts.endpoint == url
    assert _saved(config_path)["endpoint"] == url


def test_offline_bootstrap_against_the_emulator_end_to_end(tmp_path: Path, clock: Any) -> None:
    # Both planes on one emulator: the bootstrapped config opens a working data-plane store,
    # after the probe has ridden out two busy answers from the new instance.
    from memcore.config import parse_config
    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.backend import open_backend
    from memcore_tablestore.emulator import EmulatorServer, Faults
    from memcore_tablestore.provisioning.provisioner import data_plane_probe
    from memcore_tablestore.provisioning.wait import system_resolver

    keys = Credentials("emu-ak", "emu-sk-0123456789")
    twin = ControlPlane(
        instance_names=["emulator"], access_keys={"emu-ak": "emu-sk-0123456789"}, clock=clock
    )
    server = EmulatorServer(
        InMemoryMemoryStore(),
        access_key_id="emu-ak",
        access_key_secret="emu-sk-0123456789",
        control_plane=twin,
        faults=Faults(error_burst=2),
    ).start()
    steps: list[str] = []
    try:
        path = tmp_path / "tablestore_memory.json"
        facts = TableStoreProvisioner.from_file(
            path,
            credentials=keys,
            control_endpoint=f"127.0.0.1:{server.port}",
            control_protocol="http",
            endpoint_template=server.url,
            resolver=system_resolver,
            probe=data_plane_probe(keys),
            clock=clock,
            sleep=clock.sleep,
        ).ensure_instance(progress=steps.append)

        assert (facts.instance_name, facts.endpoint) == ("emulator", server.url)
        assert sum("data endpoint is not ready" in step for step in steps) == 2
        store = open_backend(parse_config(path.read_bytes()), credentials=keys)
        try:
            assert store.list_stores() == []
        finally:
            store.close()
    finally:
        server.stop()


@pytest.mark.parametrize(
    "template", ["ftp://{instance}", "https://{instance}.{zone}.x", "{instance}"]
)
def test_a_bad_endpoint_template_is_refused_before_buying(template: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        TableStoreProvisioner(MemcoreConfig(), tmp_path / "c.json", endpoint_template=template)
    assert info.value.field == "endpoint_template"
