"""Property: whatever the control plane does wrong, a first run buys one instance and saves it,
or buys none and says why in one line. Faults come in schedules drawn by hypothesis; time is a
fake clock, so minutes of warm-up and listing lag cost nothing."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.errors import MemcoreError, PermissionDenied
from memcore.ports import InstanceFacts
from memcore_tablestore.emulator.control_plane import ControlPlane
from memcore_tablestore.provisioner import TableStoreProvisioner
from memcore_tablestore.provisioner_files import PENDING_MARKER


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
