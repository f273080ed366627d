"""The control-plane twin against the vendor's pages: ranges, defaults, name rules, statuses,
and the faults a real control plane shows (a lagging listing, lost answers, timeouts).

Each test cites the page it checks. Requests go through the unmodified
``alibabacloud-tablestore20201209`` client.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from alibabacloud_tablestore20201209 import models
from alibabacloud_tablestore20201209.client import Client
from alibabacloud_tea_openapi import models as openapi_models
from alibabacloud_tea_openapi.exceptions import ClientException
from darabonba.exceptions import UnretryableException
from darabonba.runtime import RuntimeOptions

from memcore.errors import InvalidInput
from memcore_tablestore.emulator.control_plane import (
    FORBIDDEN_NAME_WORDS,
    ControlPlane,
    valid_instance_name,
)


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


def _create(sdk: Client, alias: str | None = None, **overrides: Any) -> str:
    fields: dict[str, Any] = {
        "cluster_type": "SSD",
        "vcu": 0,
        "period_in_month": 1,
        "enable_elastic_vcu": True,
        "alias_name": alias,
    }
    fields.update(overrides)
    response = sdk.create_vcuinstance_with_options(
        models.CreateVCUInstanceRequest(**fields), {}, RuntimeOptions()
    )
    return str(response.body.instance_name)


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
