"""The control-plane twin, driven by the unmodified ``alibabacloud-tablestore20201209`` client.

The tests after the first block check the twin against the vendor's pages (ranges, defaults,
name rules, statuses) and its injectable faults; each cites the page it checks.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

import pytest
import tablestore_conftest_provisioner as _fx  # registered by conftest.py
from alibabacloud_tablestore20201209 import models
from alibabacloud_tablestore20201209.client import Client
from alibabacloud_tea_openapi import models as openapi_models
from alibabacloud_tea_openapi.exceptions import ClientException, ServerException
from darabonba.exceptions import UnretryableException
from darabonba.runtime import RuntimeOptions

from memcore.errors import InvalidInput
from memcore_tablestore.emulator.control_plane import (
    FORBIDDEN_NAME_WORDS,
    ControlPlane,
    valid_instance_name,
)


def _client(endpoint: str, *, read_timeout: int | None = None) -> Client:
    return Client(
        openapi_models.Config(
            access_key_id=_fx.ACCESS_KEY_ID,
            access_key_secret=_fx.ACCESS_KEY_SECRET,
            endpoint=endpoint,
            protocol="http",
            region_id="cn-beijing",
            read_timeout=read_timeout,
        )
    )


@pytest.fixture
def sdk(control_endpoint: str) -> Client:
    return _client(control_endpoint)


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


@pytest.mark.parametrize(
    ("path", "version", "status", "code"),
    [
        ("/v2/openapi/nothing", "2020-12-09", 404, "InvalidAction.NotFound"),
        ("/v2/openapi/getinstance", "2019-01-01", 400, "InvalidVersion"),
    ],
    ids=["wrong_path", "wrong_version"],
)
def test_wrong_path_or_version_is_refused(
    control_plane: ControlPlane, path: str, version: str, status: int, code: str
) -> None:
    answer, _, raw = control_plane.handle(
        "GET", path, "", {"x-acs-action": "GetInstance", "x-acs-version": version}, b""
    )
    assert answer == status
    assert json.loads(raw)["Code"] == code


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


# -- against the vendor's pages ---------------------------------------------------------
def _list(sdk: Client, **fields: Any) -> Any:
    return sdk.list_instances_with_options(
        models.ListInstancesRequest(**fields), {}, RuntimeOptions()
    ).body


def _bulk_create(twin: ControlPlane, count: int) -> None:
    """Many instances at once, straight through the twin's handler (no signature check)."""
    headers = {
        "x-acs-action": "CreateVCUInstance",
        "x-acs-version": "2020-12-09",
        "authorization": "unchecked",
    }
    body = json.dumps(
        {"ClusterType": "SSD", "VCU": 0, "PeriodInMonth": 1, "EnableElasticVCU": True}
    ).encode()
    for _ in range(count):
        status, _, _ = twin.handle("POST", "/v2/openapi/createvcuinstance", "", headers, body)
        assert status == 200


def test_max_results_defaults_to_100_and_allows_0_to_200(clock: Any) -> None:
    """ListInstances, MaxResults: "Valid values: 0 to 200. If you do not configure this
    parameter or set this parameter to 0, the default value of 100 is used."
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-listinstances
    """
    twin = ControlPlane(clock=clock)
    _bulk_create(twin, 205)
    server = _fx.LocalControlServer(twin)
    server.start()
    try:
        sdk = _client(server.endpoint)
        assert len(_list(sdk).instances) == 100
        assert len(_list(sdk, max_results=0).instances) == 100
        full = _list(sdk, max_results=200)
        assert len(full.instances) == 200 and full.next_token
        assert full.total_count == 205
        for bad in (201, -1):
            with pytest.raises(ClientException) as info:
                _list(sdk, max_results=bad)
            assert info.value.code == "InvalidParameter.MaxResults"
    finally:
        server.stop()


def test_instances_are_listed_in_lexicographical_order(sdk: Client) -> None:
    """ListInstances, NextToken: "Instances are returned in lexicographical order starting from
    the position that is specified by this parameter."
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-listinstances
    """
    for _ in range(6):
        _create(sdk)
    seen: list[str] = []
    token = None
    while True:
        body = _list(sdk, max_results=4, next_token=token)
        seen += [i.instance_name for i in body.instances]
        token = body.next_token
        if not token:
            break
    assert seen == sorted(seen) and len(seen) == 6


@pytest.mark.parametrize(
    ("field", "low", "high"),
    [("period_in_month", 1, 24), ("auto_renew_period_in_month", 1, 24), ("vcu", 0, 2000)],
)
def test_purchase_ranges(
    field: str, low: int, high: int, sdk: Client, control_plane: ControlPlane
) -> None:
    """ALIYUN::OTS::VCUInstance: PeriodInMonth "Valid values: 1 to 24", AutoRenewPeriodInMonth
    "Valid values: 1 to 24", VCU "Valid values: 0 to 2000" (the CreateVCUInstance API page
    names the fields, Unit: month, without a range).
    https://www.alibabacloud.com/help/en/ros/developer-reference/aliyun-ots-vcuinstance
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-createvcuinstance
    """
    base: dict[str, Any] = {"enable_auto_renew": True, "auto_renew_period_in_month": 1}
    for ok in (low, high):
        _create(sdk, **{**base, field: ok})
    for bad in (low - 1, high + 1):
        with pytest.raises(ClientException) as info:
            _create(sdk, **{**base, field: bad})
        assert info.value.code.startswith("InvalidParameter.")
    assert control_plane.create_count == 2


def test_generated_names_follow_the_naming_rules(sdk: Client) -> None:
    """CreateInstance, InstanceName: letters, digits and hyphens; starts with a letter; does not
    end with a hyphen; 3 to 16 characters; "cannot contain the following words: ali, ay, ots,
    taobao, and admin" (so no ``ots-`` prefix).
    https://alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-createinstance
    """
    names = [_create(sdk) for _ in range(20)]
    assert all(valid_instance_name(n) for n in names), names
    assert not any(n.lower().startswith("ots") for n in names)
    assert len(set(names)) == 20
    for bad in ("ots-1234", "my-ali-db", "ab", "1abc", "abc-", "x" * 17, "has_under"):
        assert not valid_instance_name(bad), bad
    assert set(FORBIDDEN_NAME_WORDS) == {"ali", "ay", "ots", "taobao", "admin"}


def test_statuses_are_reported_and_filtered(sdk: Client, control_plane: ControlPlane) -> None:
    """ListInstances/GetInstance, InstanceStatus: normal (running as expected), forbidden
    (disabled), Deleting (being released); the Status filter takes normal, deleting, forbidden.
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-listinstances
    (and ``GetInstanceResponseBody.instance_status`` in alibabacloud-tablestore20201209 3.2.0)
    """
    ok, off, going = (_create(sdk) for _ in range(3))
    control_plane.set_status(off, "forbidden")
    control_plane.set_status(going, "Deleting")
    by_name = {i.instance_name: i.instance_status for i in _list(sdk).instances}
    assert by_name == {ok: "normal", off: "forbidden", going: "Deleting"}
    body = sdk.get_instance_with_options(
        models.GetInstanceRequest(instance_name=going), {}, RuntimeOptions()
    ).body
    assert body.instance_status == "Deleting"
    for wanted, name in (("normal", ok), ("forbidden", off), ("deleting", going)):
        assert [i.instance_name for i in _list(sdk, status=wanted).instances] == [name]
    with pytest.raises(InvalidInput):
        control_plane.set_status(ok, "stopped")


def test_a_new_instance_is_listed_late_but_known_to_get_instance(
    sdk: Client, control_plane: ControlPlane, clock: Any
) -> None:
    """Injectable fault: ListInstances shows a new instance only after ``list_lag`` seconds
    (the pages promise no read-after-create listing), while GetInstance, by name, knows it.
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-listinstances
    """
    control_plane.configure({"list_lag": 30.0})
    name = _create(sdk, alias="late")
    assert _list(sdk).instances == []
    assert (
        sdk.get_instance_with_options(
            models.GetInstanceRequest(instance_name=name), {}, RuntimeOptions()
        ).body.alias_name
        == "late"
    )
    clock.sleep(30.0)
    assert [i.instance_name for i in _list(sdk).instances] == [name]


def test_a_lost_answer_still_buys(sdk: Client, control_plane: ControlPlane) -> None:
    """Injectable fault: the CreateVCUInstance answer (InstanceName, RequestId) never arrives,
    though the purchase went through.
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-createvcuinstance
    """
    control_plane.lose("CreateVCUInstance")
    with pytest.raises(UnretryableException):
        _create(sdk, alias="lost")
    assert [i["AliasName"] for i in control_plane.instances()] == ["lost"]
    control_plane.lose("CreateVCUInstance", commit=False)
    with pytest.raises(UnretryableException):
        _create(sdk, alias="never")
    assert control_plane.create_count == 1


def test_a_timeout_is_silence_past_the_read_timeout(
    control_plane: ControlPlane, control_endpoint: str
) -> None:
    """Injectable fault: the twin holds the answer longer than the client's read timeout.
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-createvcuinstance
    """
    control_plane.lose("CreateVCUInstance", hold=1.0)
    with pytest.raises(UnretryableException) as info:
        _create(_client(control_endpoint, read_timeout=300), alias="slow")
    assert "timed out" in str(info.value).lower() or "timeout" in repr(info.value).lower()
    assert control_plane.create_count == 1


def test_lost_answers_and_lag_are_admin_knobs(control_plane: ControlPlane) -> None:
    """The knobs arrive as JSON through the emulator's admin endpoint; unknown keys are refused.
    https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-listinstances
    """
    control_plane.configure(
        {
            "list_lag": 12.5,
            "faults": [{"action": "CreateVCUInstance", "lose": True, "hold": 0.0, "times": 2}],
        }
    )
    assert control_plane.list_lag == 12.5
    with pytest.raises(InvalidInput):
        control_plane.configure({"list_lag": -1})
    with pytest.raises(InvalidInput):
        control_plane.configure({"faults": [{"action": "CreateVCUInstance", "drop": True}]})
    with pytest.raises(InvalidInput):
        control_plane.lose("CreateVCUInstance", hold=601.0)
