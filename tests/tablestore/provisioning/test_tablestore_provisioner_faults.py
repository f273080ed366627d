"""First runs under the faults a real purchase meets: late listings, lost answers, timeouts,
service-chosen names, a new instance's warm-up, and instances that are not ``normal``.

The property at the end draws whole fault schedules with hypothesis; time is a fake clock, so
minutes of warm-up and listing lag cost nothing."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tablestore_conftest_provisioner as _fx  # registered by conftest.py
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.config import MemcoreConfig
from memcore.errors import (
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from memcore.ports import InstanceFacts
from memcore_tablestore.credentials import Credentials
from memcore_tablestore.emulator.control_plane import ControlPlane
from memcore_tablestore.provisioning.control_client import ControlPlaneClient
from memcore_tablestore.provisioning.files import (
    PENDING_MARKER,
    PendingInstance,
    read_pending,
    write_pending,
)
from memcore_tablestore.provisioning.provisioner import TableStoreProvisioner


def _buy(control_endpoint: str, credentials: Credentials, alias: str) -> str:
    """An instance bought behind the provisioner's back, as an earlier run would have."""
    client = ControlPlaneClient(
        region="cn-beijing", credentials=credentials, endpoint=control_endpoint, protocol="http"
    )
    return client.create_vcu_instance(alias=alias, description="")


def _saved(config_path: Path) -> dict[str, Any]:
    return json.loads(config_path.read_text(encoding="utf-8"))


def _finished(config_path: Path, control_plane: ControlPlane, facts: InstanceFacts) -> None:
    """Exactly one instance bought, and it is the one saved; no bootstrap left unfinished."""
    assert control_plane.create_count == 1
    assert [i["InstanceName"] for i in control_plane.instances()] == [facts.instance_name]
    saved = _saved(config_path)
    assert (saved["instance_name"], saved["endpoint"]) == (facts.instance_name, facts.endpoint)
    assert not (config_path.parent / PENDING_MARKER).exists()


# -- at most one purchase per intent ---------------------------------------------------------
def test_a_lost_create_answer_and_a_late_listing_buy_once(
    make: Any, control_plane: ControlPlane, config_path: Path, clock: Any
) -> None:
    # The create takes effect, its answer is a 500, and the listing shows it only 60 s later.
    control_plane.configure({"list_lag": 60.0})
    control_plane.fail("CreateVCUInstance", code="InternalError", status=500, commit=True)
    steps: list[str] = []

    facts = make().ensure_instance(progress=steps.append)

    _finished(config_path, control_plane, facts)
    assert facts.created is True
    assert control_plane.call_count("CreateVCUInstance") == 1
    assert any("not listed yet" in step for step in steps)


def test_an_answer_lost_in_transit_is_resolved_by_looking(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    control_plane.configure({"list_lag": 100.0})
    control_plane.lose("CreateVCUInstance")  # bought, then the connection drops

    facts = make().ensure_instance()

    _finished(config_path, control_plane, facts)
    assert control_plane.call_count("CreateVCUInstance") == 1


def test_a_timed_out_create_is_resolved_by_looking(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    # A real read timeout: the client waits 0.3 s, the twin stays silent for 1 s.
    config_path.parent.mkdir(parents=True)
    config_path.write_text(json.dumps({"timeout": 0.3}))
    control_plane.configure({"list_lag": 45.0})
    control_plane.lose("CreateVCUInstance", hold=1.0)

    facts = make().ensure_instance()

    _finished(config_path, control_plane, facts)
    assert control_plane.call_count("CreateVCUInstance") == 1


def test_a_create_that_never_landed_is_sent_again_after_the_patience(
    make: Any, control_plane: ControlPlane, config_path: Path, clock: Any
) -> None:
    # Lost before taking effect: nothing is listed for the whole patience, then one purchase.
    control_plane.lose("CreateVCUInstance", commit=False)
    start = clock()

    facts = make(listing_patience=90.0).ensure_instance()

    _finished(config_path, control_plane, facts)
    assert control_plane.call_count("CreateVCUInstance") == 2
    assert clock() - start >= 90.0


def test_a_rerun_after_a_crash_mid_create_looks_before_buying(
    make: Any,
    control_plane: ControlPlane,
    config_path: Path,
    clock: Any,
    credentials: Credentials,
    control_endpoint: str,
) -> None:
    # An earlier run sent the create (marker says so) and died; the listing still lags.
    control_plane.configure({"list_lag": 120.0})
    bought = _buy(control_endpoint, credentials, "memcore-0123456789ab")
    write_pending(
        config_path.parent,
        PendingInstance(
            alias="memcore-0123456789ab", region="cn-beijing", create_sent_at=clock() - 5.0
        ),
    )

    facts = make().ensure_instance()

    assert facts.instance_name == bought
    _finished(config_path, control_plane, facts)


@pytest.mark.parametrize("garble", ["unreadable", "endless"])
def test_a_listing_that_cannot_be_read_through_buys_nothing(
    make: Any,
    control_plane: ControlPlane,
    config_path: Path,
    clock: Any,
    credentials: Credentials,
    control_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    garble: str,
) -> None:
    # A rerun long after a crash mid-create: the instance exists, but the listing that would
    # show it is garbled (a body the SDK cannot read) or never ends (the same token again).
    bought = _buy(control_endpoint, credentials, "memcore-0123456789ab")
    write_pending(
        config_path.parent,
        PendingInstance(
            alias="memcore-0123456789ab", region="cn-beijing", create_sent_at=clock() - 3600.0
        ),
    )
    answer = control_plane.handle

    def handle(method: str, path: str, query: str, headers: Any, body: bytes) -> Any:
        status, out_headers, out = answer(method, path, query, headers, body)
        action = {k.lower(): v for k, v in headers.items()}.get("x-acs-action")
        if action == "ListInstances":  # whatever was asked, even a token it never gave
            page = {"Instances": "garbled"} if garble == "unreadable" else {"NextToken": "again"}
            out = json.dumps(page).encode()
            status, out_headers = 200, {**out_headers, "content-length": str(len(out))}
        return status, out_headers, out

    monkeypatch.setattr(control_plane, "handle", handle)

    with pytest.raises(Unavailable) as info:
        make().ensure_instance()

    assert control_plane.create_count == 1  # the earlier run's, and no second one
    assert [i["InstanceName"] for i in control_plane.instances()] == [bought]
    assert "ListInstances" in str(info.value) and "\n" not in str(info.value)
    assert read_pending(config_path.parent).alias == "memcore-0123456789ab"  # resumable


def test_a_refused_create_bought_nothing_and_says_so_in_one_line(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    control_plane.fail("CreateVCUInstance", code="InvalidParameter.VCU", status=400)
    with pytest.raises(InvalidInput) as info:
        make().ensure_instance()
    assert control_plane.create_count == 0
    assert "\n" not in str(info.value)
    assert read_pending(config_path.parent).create_sent_at is None  # nothing in flight


# -- the service's name, as the service gives it ---------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "abc",
        "inst-abcdefghij0",  # 16, the longest CreateInstance allows
        "tbl-8f3a2c1d9e7b6a5f",  # 20: bought, then refused at the save before the fix
        "7c1e0d2f-memory-store",  # starts with a digit
        "vcu_instance_2026_12_03",  # underscores
        "x" * 32,
    ],
)
def test_a_service_chosen_name_is_saved_as_given(
    name: str, control_endpoint: str, credentials: Credentials, config_path: Path, clock: Any
) -> None:
    twin = ControlPlane(
        region="cn-beijing",
        access_keys={_fx.ACCESS_KEY_ID: _fx.ACCESS_KEY_SECRET},
        instance_names=[name],
        clock=clock,
    )
    server = _fx.LocalControlServer(twin)
    server.start()
    try:
        facts = TableStoreProvisioner.from_file(
            config_path,
            credentials=credentials,
            control_endpoint=server.endpoint,
            control_protocol="http",
            resolver=twin.resolve,
            clock=clock,
            sleep=clock.sleep,
            wall_clock=clock,
        ).ensure_instance()
    finally:
        server.stop()

    assert facts.instance_name == name
    _finished(config_path, twin, facts)
    assert MemcoreConfig(instance_name=name).instance_name == name


def test_the_name_is_saved_before_the_acl_can_fail(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    control_plane.fail("UpdateInstance", code="InvalidParameter", status=400, times=None)
    with pytest.raises(InvalidInput):
        make(warmup=0.0).ensure_instance()
    saved = _saved(config_path)
    assert saved["instance_name"] == control_plane.instances()[0]["InstanceName"]
    assert "endpoint" not in saved

    control_plane.clear_faults()
    facts = make().ensure_instance()
    _finished(config_path, control_plane, facts)


# -- warm-up, bounded and visible ------------------------------------------------------------
def test_auth_failures_of_a_new_instance_are_waited_out(
    make: Any, control_plane: ControlPlane, config_path: Path, clock: Any
) -> None:
    # The data plane answers OTSAuthFailed ("instance is not running") for its first 200 s.
    def probe(facts: InstanceFacts) -> None:
        if control_plane.age(facts.instance_name) < 200.0:
            raise PermissionDenied(
                "ListMemoryStores failed: HTTP 403 OTSAuthFailed: The instance is not running."
            )

    steps: list[str] = []
    facts = make(probe=probe).ensure_instance(progress=steps.append)

    _finished(config_path, control_plane, facts)
    assert sum(clock.sleeps) >= 200.0
    assert any("warming up" in step for step in steps)


@pytest.mark.parametrize(
    ("code", "status"),
    [("InvalidInstanceName.NotFound", 404), ("OTSAuthFailed", 403), ("Forbidden", 403)],
)
def test_4xx_on_the_first_update_is_waited_out(
    code: str, status: int, make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    control_plane.fail("UpdateInstance", code=code, status=status, times=4)
    steps: list[str] = []

    facts = make().ensure_instance(progress=steps.append)

    _finished(config_path, control_plane, facts)
    assert control_plane.call_count("UpdateInstance") == 5
    assert sum("warming up" in step for step in steps) == 4


def test_the_warm_up_is_bounded(make: Any, control_plane: ControlPlane, clock: Any) -> None:
    control_plane.fail(
        "UpdateInstance", code="InvalidInstanceName.NotFound", status=404, times=None
    )
    start = clock()
    with pytest.raises(NotFound):
        make(warmup=120.0).ensure_instance()
    assert 120.0 - 1e-6 <= clock() - start <= 120.0 + 15.0
    assert control_plane.create_count == 1


def test_an_old_instance_gets_no_warm_up(
    make: Any,
    config_path: Path,
    clock: Any,
    credentials: Credentials,
    control_endpoint: str,
) -> None:
    # Bought an hour ago by an unfinished bootstrap: an auth failure now is a real one.
    name = _buy(control_endpoint, credentials, "memcore-old")
    write_pending(
        config_path.parent,
        PendingInstance(
            alias="memcore-old", region="cn-beijing", instance_name=name, bought_at=clock() - 3600
        ),
    )

    def probe(_: InstanceFacts) -> None:
        raise PermissionDenied("OTSAuthFailed: Request denied by instance ACL policies.")

    with pytest.raises(PermissionDenied):
        make(probe=probe).ensure_instance()
    assert clock.sleeps == []


# -- a wall clock stepped back since the marker was written (a VM restored, NTP) --------------
SIX_HOURS = 6 * 3600.0


def test_a_create_marked_in_the_future_is_looked_for_for_the_patience_only(
    make: Any, control_plane: ControlPlane, config_path: Path, clock: Any
) -> None:
    write_pending(
        config_path.parent,
        PendingInstance(
            alias="memcore-0123456789ab", region="cn-beijing", create_sent_at=clock() + SIX_HOURS
        ),
    )
    start = clock()

    facts = make(listing_patience=90.0).ensure_instance()

    _finished(config_path, control_plane, facts)
    assert 90.0 - 1e-6 <= clock() - start <= 90.0 + 15.0


def test_a_purchase_marked_in_the_future_gets_the_warm_up_only(
    make: Any, config_path: Path, clock: Any, credentials: Credentials, control_endpoint: str
) -> None:
    name = _buy(control_endpoint, credentials, "memcore-ahead")
    write_pending(
        config_path.parent,
        PendingInstance(
            alias="memcore-ahead",
            region="cn-beijing",
            instance_name=name,
            bought_at=clock() + SIX_HOURS,
        ),
    )

    def probe(_: InstanceFacts) -> None:
        raise PermissionDenied("OTSAuthFailed: Request denied by instance ACL policies.")

    start = clock()
    with pytest.raises(PermissionDenied):
        make(probe=probe, warmup=120.0).ensure_instance()
    assert clock() - start <= 120.0 + 15.0


def test_a_key_without_permission_fails_on_the_first_call(
    make: Any, control_plane: ControlPlane, clock: Any
) -> None:
    control_plane.fail("ListInstances", code="Forbidden.RAM", status=403, times=None)
    with pytest.raises(PermissionDenied) as info:
        make().ensure_instance()
    assert info.value.service_code == "Forbidden.RAM"
    assert control_plane.call_count("ListInstances") == 1
    assert control_plane.call_count("CreateVCUInstance") == 0
    assert clock.sleeps == []


# -- status respected ------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["forbidden", "Deleting"])
def test_an_instance_that_is_not_normal_is_never_reused(
    status: str,
    make: Any,
    control_plane: ControlPlane,
    config_path: Path,
    credentials: Credentials,
    control_endpoint: str,
) -> None:
    name = _buy(control_endpoint, credentials, "memcore-abcdef012345")
    control_plane.set_status(name, status)
    write_pending(
        config_path.parent, PendingInstance(alias="memcore-abcdef012345", region="cn-beijing")
    )

    with pytest.raises(Conflict) as info:
        make().ensure_instance()

    message = str(info.value)
    assert name in message and status.lower() in message.lower()
    assert str(config_path.parent / PENDING_MARKER) in message  # what to do next
    assert "\n" not in message
    assert control_plane.create_count == 1
    assert control_plane.call_count("UpdateInstance") == 0
    assert not config_path.exists()


def test_a_resumed_instance_that_became_forbidden_is_not_used(
    make: Any, control_plane: ControlPlane, config_path: Path
) -> None:
    class Crash(BaseException):
        pass

    def dies(_: InstanceFacts) -> None:
        raise Crash

    with pytest.raises(Crash):
        make(probe=dies).ensure_instance()
    name = control_plane.instances()[0]["InstanceName"]
    control_plane.set_status(name, "forbidden")

    with pytest.raises(Conflict):
        make().ensure_instance()
    assert "endpoint" not in _saved(config_path)


# -- property: every fault schedule ends in one purchase saved, or none and one line -------
PATIENCE = 180.0
#: What CreateVCUInstance can do to one call: (kind, takes effect).
CREATE_FAULTS = {
    "lost": ("lose", True),  # bought; the connection drops before the answer
    "lost_early": ("lose", False),  # dropped before it took effect
    "error_500_bought": ("error", True),
    "error_500": ("error", False),
    "throttled": ("throttled", False),
    "refused": ("refused", False),  # a final 4xx: nothing bought, the run must stop
}
UPDATE_CODES = [
    ("InvalidInstanceName.NotFound", 404),
    ("OTSAuthFailed", 403),
    ("Forbidden", 403),
    ("IncorrectInstanceStatus", 409),
]

schedules = st.fixed_dictionaries(
    {
        # How late ListInstances shows a new instance, up to the documented patience.
        "list_lag": st.integers(0, int(PATIENCE)),
        "create": st.lists(st.sampled_from(sorted(CREATE_FAULTS)), max_size=3),
        "list_errors": st.integers(0, 2),
        "update_errors": st.integers(0, 4),
        "update_code": st.sampled_from(UPDATE_CODES),
        # The data endpoint answers OTSAuthFailed for this long after the purchase.
        "auth_window": st.integers(0, 400),
        "dns_delay": st.integers(0, 90),
        # The service picks the name: 3 to 32 characters, in a format its pages do not give.
        "name": st.from_regex(r"[a-z0-9][a-z0-9_-]{1,30}[a-z0-9]", fullmatch=True),
    }
)


def _arm(twin: ControlPlane, schedule: dict[str, Any]) -> None:
    twin.configure({"list_lag": float(schedule["list_lag"]), "dns_delay": schedule["dns_delay"]})
    for fault in schedule["create"]:
        kind, commit = CREATE_FAULTS[fault]
        if kind == "lose":
            twin.lose("CreateVCUInstance", commit=commit)
        elif kind == "error":
            twin.fail("CreateVCUInstance", code="InternalError", status=500, commit=commit)
        elif kind == "throttled":
            twin.fail("CreateVCUInstance", code="Throttling.User", status=400)
        else:
            twin.fail("CreateVCUInstance", code="InvalidParameter.VCU", status=400)
    if schedule["list_errors"]:
        twin.fail("ListInstances", code="InternalError", status=500, times=schedule["list_errors"])
    if schedule["update_errors"]:
        code, status = schedule["update_code"]
        twin.fail("UpdateInstance", code=code, status=status, times=schedule["update_errors"])


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schedule=schedules)
def test_one_instance_bought_and_saved_or_none_and_one_line(schedule: dict[str, Any]) -> None:
    clock = _fx.FakeClock()
    twin = ControlPlane(
        region="cn-beijing",
        access_keys={_fx.ACCESS_KEY_ID: _fx.ACCESS_KEY_SECRET},
        instance_names=[schedule["name"]],
        clock=clock,
    )
    _arm(twin, schedule)

    def probe(facts: InstanceFacts) -> None:
        if twin.age(facts.instance_name) < schedule["auth_window"]:
            raise PermissionDenied(
                "ListMemoryStores failed: HTTP 403 OTSAuthFailed: The instance is not running."
            )

    server = _fx.LocalControlServer(twin)
    server.start()
    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "tablestore_memory.json"
        try:
            provisioner = TableStoreProvisioner.from_file(
                config_path,
                credentials=_fx.Credentials(_fx.ACCESS_KEY_ID, _fx.ACCESS_KEY_SECRET),
                control_endpoint=server.endpoint,
                control_protocol="http",
                resolver=twin.resolve,
                probe=probe,
                clock=clock,
                sleep=clock.sleep,
                wall_clock=clock,
                listing_patience=PATIENCE,
            )
            facts: InstanceFacts | None = provisioner.ensure_instance()
            error: MemcoreError | None = None
        except MemcoreError as exc:
            facts, error = None, exc
        finally:
            server.stop()

        if error is not None:
            assert twin.create_count == 0, (schedule, str(error))
            assert str(error) and "\n" not in str(error)
            # Only a final refusal (or running out of attempts) may end a first run this way.
            assert set(schedule["create"]) & {"refused", "lost_early", "error_500"}, schedule
            return
        assert facts is not None
        assert twin.create_count == 1, schedule
        assert facts.instance_name == schedule["name"]
        saved = json.loads(config_path.read_text(encoding="utf-8"))
        assert saved["instance_name"] == facts.instance_name
        assert saved["endpoint"] == facts.endpoint
        assert not (config_path.parent / PENDING_MARKER).exists()


# -- nothing answers at the control endpoint -------------------------------------------------
def _closed_port() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_a_control_endpoint_where_nothing_listens_is_said_so_within_seconds(
    make: Any, clock: Any, credentials: Credentials
) -> None:
    """A refused connection is not a busy control plane: a few quick tries, then one error
    naming the address that does not answer (never the keys); nothing bought."""
    endpoint = _closed_port()
    said: list[str] = []
    start = clock()
    with pytest.raises(Unavailable) as info:
        make(control_endpoint=endpoint).ensure_instance(progress=said.append)
    assert clock() - start <= 5.0, clock.sleeps
    assert len(clock.sleeps) <= 3, clock.sleeps
    message = str(info.value)
    assert f"nothing answers at the control plane {endpoint}" in message, message
    assert "connection refused" in message, message
    assert credentials.access_key_secret not in message + "".join(said)
    assert said and all("busy" not in line for line in said), said
    assert all(f"nothing answers at {endpoint}" in line for line in said), said
