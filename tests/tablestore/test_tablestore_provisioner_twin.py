"""The control-plane twin, driven by the unmodified ``alibabacloud-tablestore20201209`` client."""

from __future__ import annotations

import http.client
import importlib.util
import json
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from alibabacloud_tablestore20201209 import models
from alibabacloud_tablestore20201209.client import Client
from alibabacloud_tea_openapi import models as openapi_models
from alibabacloud_tea_openapi.exceptions import ClientException, ServerException
from darabonba.runtime import RuntimeOptions

from memcore.errors import InvalidInput
from memcore_tablestore.emulator.control_plane import ControlPlane


def _load_fixtures() -> ModuleType:
    name = "tablestore_conftest_provisioner"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("conftest_provisioner.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_fx = _load_fixtures()
clock = _fx.clock
control_plane = _fx.control_plane
control_endpoint = _fx.control_endpoint


@pytest.fixture
def sdk(control_endpoint: str) -> Client:
    return Client(
        openapi_models.Config(
            access_key_id=_fx.ACCESS_KEY_ID,
            access_key_secret=_fx.ACCESS_KEY_SECRET,
            endpoint=control_endpoint,
            protocol="http",
            region_id="cn-beijing",
        )
    )


def _create(sdk: Client, alias: str = "", **overrides: Any) -> str:
    fields: dict[str, Any] = {
        "cluster_type": "SSD",
        "vcu": 0,
        "period_in_month": 1,
        "enable_elastic_vcu": True,
        "enable_auto_renew": True,
        "auto_renew_period_in_month": 1,
        "alias_name": alias or None,
    }
    fields.update(overrides)
    request = models.CreateVCUInstanceRequest(**fields)
    response = sdk.create_vcuinstance_with_options(request, {}, RuntimeOptions())
    assert response.status_code == 200
    return str(response.body.instance_name)


def _raw(
    endpoint: str, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, Any, dict]:
    host, port = endpoint.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), json.loads(resp.read())
    finally:
        conn.close()


def test_create_get_update_round_trip(sdk: Client, control_plane: ControlPlane) -> None:
    name = _create(sdk, alias="memcore-x1", instance_description="notes")
    sdk.update_instance_with_options(
        models.UpdateInstanceRequest(
            instance_name=name, network_type_acl=["INTERNET"], network_source_acl=[]
        ),
        {},
        RuntimeOptions(),
    )
    body = sdk.get_instance_with_options(
        models.GetInstanceRequest(instance_name=name), {}, RuntimeOptions()
    ).body

    assert body.instance_name == name
    assert body.alias_name == "memcore-x1"
    assert body.instance_description == "notes"
    assert body.storage_type == "SSD"
    assert body.region_id == "cn-beijing"
    assert body.network_type_acl == ["INTERNET"]
    assert body.network_source_acl == []
    assert body.request_id
    assert control_plane.call_count("GetInstance") == 1


def test_list_pages_return_every_instance_once(sdk: Client) -> None:
    names = {_create(sdk, alias=f"a{i}") for i in range(5)}
    seen: list[str] = []
    token = None
    for _ in range(10):
        body = sdk.list_instances_with_options(
            models.ListInstancesRequest(max_results=2, next_token=token), {}, RuntimeOptions()
        ).body
        assert body.total_count == 5
        seen += [item.instance_name for item in body.instances]
        token = body.next_token
        if not token:
            break
    assert sorted(seen) == sorted(names)


def test_list_filters_by_name(sdk: Client) -> None:
    first = _create(sdk)
    _create(sdk)
    body = sdk.list_instances_with_options(
        models.ListInstancesRequest(instance_name_list=[first]), {}, RuntimeOptions()
    ).body
    assert [i.instance_name for i in body.instances] == [first]


def test_errors_use_the_openapi_shape(sdk: Client) -> None:
    with pytest.raises(ClientException) as info:
        sdk.get_instance_with_options(
            models.GetInstanceRequest(instance_name="ghost"), {}, RuntimeOptions()
        )
    err = info.value
    assert err.status_code == 404
    assert err.code == "InvalidInstanceName.NotFound"
    assert set(err.data) >= {"Code", "Message", "RequestId", "Recommend"}
    assert "InvalidInstanceName.NotFound" in err.data["Recommend"]


def test_unsigned_requests_are_refused(control_endpoint: str) -> None:
    status, headers, body = _raw(
        control_endpoint,
        "GET",
        "/v2/openapi/listinstances",
        {"x-acs-action": "ListInstances", "x-acs-version": "2020-12-09"},
    )
    assert status == 400
    assert body["Code"] == "MissingAuthorization"
    assert headers["x-acs-request-id"] == body["RequestId"]


def test_wrong_path_or_version_is_refused(control_plane: ControlPlane) -> None:
    status, _, raw = control_plane.handle(
        "GET",
        "/v2/openapi/nothing",
        "",
        {"x-acs-action": "GetInstance", "x-acs-version": "2020-12-09"},
        b"",
    )
    assert status == 404
    assert json.loads(raw)["Code"] == "InvalidAction.NotFound"
    status, _, raw = control_plane.handle(
        "GET",
        "/v2/openapi/getinstance",
        "",
        {"x-acs-action": "GetInstance", "x-acs-version": "2019-01-01"},
        b"",
    )
    assert status == 400
    assert json.loads(raw)["Code"] == "InvalidVersion"


def test_required_parameters_are_checked(sdk: Client, control_plane: ControlPlane) -> None:
    with pytest.raises(ClientException) as info:
        sdk.create_vcuinstance_with_options(
            models.CreateVCUInstanceRequest(vcu=1, period_in_month=1), {}, RuntimeOptions()
        )
    assert info.value.code == "MissingClusterType"
    with pytest.raises(ClientException) as info:
        _create(sdk, auto_renew_period_in_month=None)
    assert info.value.code == "MissingAutoRenewPeriodInMonth"
    with pytest.raises(ClientException) as info:
        _create(sdk, enable_elastic_vcu=False)
    assert info.value.code == "InvalidParameter.VCU"
    assert control_plane.create_count == 0


def test_dry_run_buys_nothing(sdk: Client, control_plane: ControlPlane) -> None:
    request = models.CreateVCUInstanceRequest(
        cluster_type="SSD", vcu=1, period_in_month=1, dry_run=True
    )
    sdk.create_vcuinstance_with_options(request, {}, RuntimeOptions())
    assert control_plane.create_count == 0


def test_unknown_acl_values_are_refused(sdk: Client) -> None:
    name = _create(sdk)
    with pytest.raises(ClientException) as info:
        sdk.update_instance_with_options(
            models.UpdateInstanceRequest(instance_name=name, network_type_acl=["MOON"]),
            {},
            RuntimeOptions(),
        )
    assert info.value.code == "InvalidParameter.NetworkTypeACL"


def test_injected_faults_fire_the_given_times(sdk: Client, control_plane: ControlPlane) -> None:
    control_plane.fail("CreateVCUInstance", code="ServiceUnavailable", status=503, times=2)
    for _ in range(2):
        with pytest.raises(ServerException) as info:
            _create(sdk)
        assert info.value.status_code == 503
        assert info.value.code == "ServiceUnavailable"
    _create(sdk)
    assert control_plane.create_count == 1


def test_a_committed_fault_takes_effect_and_still_fails(
    sdk: Client, control_plane: ControlPlane
) -> None:
    control_plane.fail("CreateVCUInstance", code="InternalError", status=500, commit=True)
    with pytest.raises(ServerException):
        _create(sdk, alias="lost")
    assert [i["AliasName"] for i in control_plane.instances()] == ["lost"]


def test_configure_refuses_unknown_or_bad_knobs(control_plane: ControlPlane) -> None:
    with pytest.raises(InvalidInput):
        control_plane.configure({"dns_dely": 3})
    with pytest.raises(InvalidInput):
        control_plane.configure({"dns_delay": -1})
    with pytest.raises(InvalidInput):
        control_plane.configure({"faults": [{"action": "Nope", "code": "X"}]})
    open_twin = ControlPlane()  # no access keys: signatures are not checked
    open_twin.configure(
        {"faults": [{"action": "GetInstance", "code": "Throttling", "status": 400}]}
    )
    headers = {
        "x-acs-action": "GetInstance",
        "x-acs-version": "2020-12-09",
        "authorization": "unchecked",
    }
    status, _, raw = open_twin.handle(
        "GET", "/v2/openapi/getinstance", "InstanceName=x", headers, b""
    )
    assert (status, json.loads(raw)["Code"]) == (400, "Throttling")
    status, _, raw = open_twin.handle(
        "GET", "/v2/openapi/getinstance", "InstanceName=x", headers, b""
    )
    assert (status, json.loads(raw)["Code"]) == (404, "InvalidInstanceName.NotFound")


def test_dns_resolves_only_created_instances_after_the_delay(
    sdk: Client, control_plane: ControlPlane, clock: Any
) -> None:
    control_plane.configure({"dns_delay": 30.0, "dns_misses": 0})
    name = _create(sdk)
    host = f"{name}.cn-beijing.ots.aliyuncs.com"
    with pytest.raises(socket.gaierror):
        control_plane.resolve("other.cn-beijing.ots.aliyuncs.com")
    with pytest.raises(socket.gaierror):
        control_plane.resolve(host)
    clock.sleep(30.0)
    assert control_plane.resolve(host) == ["127.0.0.1"]


def test_dns_misses_count_lookups(sdk: Client, control_plane: ControlPlane) -> None:
    control_plane.configure({"dns_misses": 2})
    host = f"{_create(sdk)}.cn-beijing.ots.aliyuncs.com"
    for _ in range(2):
        with pytest.raises(socket.gaierror):
            control_plane.resolve(host)
    assert control_plane.resolve(host) == ["127.0.0.1"]


def test_data_endpoint_template_names_the_host() -> None:
    twin = ControlPlane(
        region="cn-hangzhou", data_endpoint_template="http://{instance}.{region}.localhost:8080"
    )
    assert twin.data_endpoint("ots-1") == "http://ots-1.cn-hangzhou.localhost:8080"


def test_latency_is_added_with_the_injected_sleep() -> None:
    slept: list[float] = []
    twin = ControlPlane(latency=0.25, sleep=slept.append)
    twin.handle("GET", "/v2/openapi/listinstances", "", {"x-acs-action": "ListInstances"}, b"")
    assert slept == [0.25]
