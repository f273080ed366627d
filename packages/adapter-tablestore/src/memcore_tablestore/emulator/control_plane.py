"""A twin of the TableStore control plane (instance management), for offline provisioning.

It answers the four actions the provisioner uses, on the paths, bodies and response shapes of
the ``2020-12-09`` OpenAPI version, so the unmodified ``alibabacloud-tablestore20201209``
client can be pointed at it (``endpoint="127.0.0.1:PORT"``, ``protocol="http"``). Errors use
the Alibaba Cloud OpenAPI shape (``Code``, ``Message``, ``RequestId``, ``Recommend``).

Fault knobs make the awkward cases reproducible: an action failing with a given code, an answer
lost after the action took effect (a hang-up, or silence long enough to be a read timeout),
a listing that shows a new instance only after a while, instances that are ``forbidden`` or
``Deleting``, added latency, and a data endpoint whose DNS name only resolves after a while.

Ranges, defaults and rules follow the vendor's pages (each cited where it is enforced):
ListInstances https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-listinstances,
CreateVCUInstance https://www.alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-createvcuinstance,
ALIYUN::OTS::VCUInstance https://www.alibabacloud.com/help/en/ros/developer-reference/aliyun-ots-vcuinstance,
CreateInstance (naming) https://alibabacloud.com/help/en/tablestore/developer-reference/api-tablestore-2020-12-09-createinstance.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import attrs

from memcore.errors import InvalidInput

API_VERSION = "2020-12-09"
DEFAULT_DATA_ENDPOINT_TEMPLATE = "https://{instance}.{region}.ots.aliyuncs.com"

#: action -> (HTTP method, path), as the SDK's ``Params`` for each action say.
ROUTES: dict[str, tuple[str, str]] = {
    "CreateVCUInstance": ("POST", "/v2/openapi/createvcuinstance"),
    "UpdateInstance": ("POST", "/v2/openapi/updateinstance"),
    "GetInstance": ("GET", "/v2/openapi/getinstance"),
    "ListInstances": ("GET", "/v2/openapi/listinstances"),
}

CLUSTER_TYPES = ("SSD", "HYBRID")
NETWORK_TYPE_ACL = ("INTERNET", "VPC", "CLASSIC")
NETWORK_SOURCE_ACL = ("TRUST_PROXY",)
_SIGN_ALGORITHM = "ACS3-HMAC-SHA256"
#: ListInstances: "Valid values: 0 to 200. If you do not configure this parameter or set this
#: parameter to 0, the default value of 100 is used."
_MAX_LIST_RESULTS = 200
_DEFAULT_LIST_RESULTS = 100
#: ALIYUN::OTS::VCUInstance: PeriodInMonth and AutoRenewPeriodInMonth 1 to 24, VCU 0 to 2000
#: (the API page itself gives no range).
PERIOD_RANGE = (1, 24)
AUTO_RENEW_RANGE = (1, 24)
VCU_RANGE = (0, 2000)
#: Instance statuses, as GetInstance/ListInstances name them.
STATUSES = ("normal", "forbidden", "Deleting")
#: CreateInstance's naming rules: letters, digits and '-', starting with a letter, not ending
#: with '-', 3 to 16 characters, none of these words. The names this twin makes up obey them.
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]{1,14}[A-Za-z0-9]")
FORBIDDEN_NAME_WORDS = ("ali", "ay", "ots", "taobao", "admin")

Headers = dict[str, str]
Reply = tuple[int, Headers, bytes]


class ServiceError(Exception):
    """An OpenAPI error answer: HTTP status plus the service's code, message and advice."""

    def __init__(self, status: int, code: str, message: str, recommend: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.recommend = recommend if recommend is not None else _recommend(code)


def _recommend(code: str) -> str:
    return f"https://api.aliyun.com/troubleshoot?q={quote(code, safe='')}&product=Tablestore"


@attrs.frozen
class Fault:
    """Make ``action`` answer ``status``/``code`` for the next ``times`` calls (None: always)."""

    action: str
    code: str
    status: int = 400
    message: str = "injected failure"
    recommend: str | None = None
    times: int | None = 1
    #: Perform the action, then answer the error anyway: an answer lost on the way back.
    commit: bool = False
    #: Answer nothing at all (the server hangs up, after ``hold`` seconds of silence).
    lose: bool = False
    hold: float = 0.0


class LostAnswer(Exception):
    """Raised by :meth:`ControlPlane.handle` when no answer is to be sent: the HTTP server
    waits ``hold`` seconds (past the client's read timeout, that is a timeout) and hangs up."""

    def __init__(self, hold: float = 0.0) -> None:
        super().__init__("the answer is lost")
        self.hold = hold


def hang_up(http: Any, hold: float = 0.0) -> None:
    """How an HTTP server serves a :class:`LostAnswer`: silence for ``hold`` seconds (real time:
    the client's read timeout is real), then the connection closes with nothing sent."""
    if hold > 0:
        time.sleep(hold)
    http.close_connection = True
    try:
        http.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def valid_instance_name(name: str) -> bool:
    """Whether ``name`` follows CreateInstance's naming rules (see ``NAME_RE``)."""
    lower = name.lower()
    return bool(NAME_RE.fullmatch(name)) and not any(w in lower for w in FORBIDDEN_NAME_WORDS)


@attrs.define
class _Instance:
    name: str
    alias: str
    region: str
    cluster_type: str
    vcu: int
    elastic_vcu: bool
    period_in_month: int
    auto_renew: bool
    auto_renew_period_in_month: int | None
    description: str
    tags: list[dict[str, str]]
    created_at: float
    create_time: str
    network_type_acl: list[str] = attrs.field(factory=lambda: list(NETWORK_TYPE_ACL))
    network_source_acl: list[str] = attrs.field(factory=lambda: list(NETWORK_SOURCE_ACL))
    dns_lookups: int = 0
    status: str = "normal"

    def summary(self) -> dict[str, Any]:
        """One entry of ``ListInstances``."""
        return {
            "AliasName": self.alias,
            "CreateTime": self.create_time,
            "InstanceDescription": self.description,
            "InstanceName": self.name,
            "InstanceSpecification": self.cluster_type,
            "InstanceStatus": self.status,
            "IsMultiAZ": False,
            "PaymentType": "Subscription",
            "RegionId": self.region,
            "ResourceGroupId": "",
            "SPInstanceId": "",
            "StorageType": self.cluster_type,
            "UserId": "",
            "VCUQuota": self.vcu,
        }

    def detail(self) -> dict[str, Any]:
        """The body of ``GetInstance`` (without ``RequestId``)."""
        out = self.summary()
        out.update(
            {
                "ElasticVCUUpperLimit": float(max(self.vcu, 1) * 10) if self.elastic_vcu else 0.0,
                "Network": "NORMAL",
                "NetworkSourceACL": list(self.network_source_acl),
                "NetworkTypeACL": list(self.network_type_acl),
                "Policy": "",
                "PolicyVersion": 0,
                "TableQuota": 64,
                "Tags": [
                    {
                        "Key": t["Key"],
                        "Value": t["Value"],
                        "TagKey": t["Key"],
                        "TagValue": t["Value"],
                    }
                    for t in self.tags
                ],
            }
        )
        return out


class ControlPlane:
    """The control-plane twin; :meth:`handle` is called by the emulator's HTTP server.

    ``access_keys`` (access key id -> secret) turns on ACS3-HMAC-SHA256 signature checks; without
    it any signed request is accepted. ``instance_names`` are handed out, in order, to the
    instances created (then random ``inst-…`` names that follow the naming rules): give it the
    emulator's data-plane instance so a bootstrapped config works against the emulator end to
    end. ``dns_delay`` seconds (on ``clock``) and ``dns_misses`` lookups must pass after an
    instance is created before :meth:`resolve` finds its data host. ``list_lag`` seconds (on
    ``clock``) pass before ListInstances shows a new instance (GetInstance knows it at once).
    """

    def __init__(
        self,
        *,
        region: str = "cn-beijing",
        data_endpoint_template: str | None = None,
        access_keys: Mapping[str, str] | None = None,
        instance_names: Iterable[str] = (),
        dns_delay: float = 0.0,
        dns_misses: int = 0,
        list_lag: float = 0.0,
        latency: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.region = region
        self.data_endpoint_template = data_endpoint_template or DEFAULT_DATA_ENDPOINT_TEMPLATE
        self._access_keys = dict(access_keys) if access_keys is not None else None
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._instances: dict[str, _Instance] = {}
        self._faults: list[Fault] = []
        self._calls: dict[str, int] = {}
        self._orders: list[dict[str, Any]] = []
        self._next_names = list(instance_names)
        self.dns_delay = float(dns_delay)
        self.dns_misses = int(dns_misses)
        self.list_lag = float(list_lag)
        self.latency = float(latency)

    def __repr__(self) -> str:
        return f"ControlPlane(region={self.region!r}, instances={len(self._instances)})"

    # -- knobs and inspection -------------------------------------------------------------
    def fail(
        self,
        action: str,
        *,
        code: str,
        status: int = 400,
        message: str = "injected failure",
        recommend: str | None = None,
        times: int | None = 1,
        commit: bool = False,
    ) -> None:
        """Make ``action`` fail with ``code`` for the next ``times`` calls (None: until cleared).

        With ``commit`` the action takes effect before the error is answered.
        """
        if action not in ROUTES:
            raise InvalidInput(f"unknown action {action!r}", field="action")
        if not 400 <= status <= 599:
            raise InvalidInput("an injected failure needs a status from 400 to 599", field="status")
        if times is not None and times < 1:
            raise InvalidInput("times must be at least 1 (or None for always)", field="times")
        with self._lock:
            self._faults.append(Fault(action, code, status, message, recommend, times, commit))

    def lose(
        self, action: str, *, times: int | None = 1, commit: bool = True, hold: float = 0.0
    ) -> None:
        """Answer nothing to the next ``times`` calls of ``action`` (None: until cleared).

        With ``commit`` (the default) the action takes effect first: a create whose answer is
        lost has bought the instance all the same. ``hold`` seconds of silence before hanging up
        make it a read timeout for a client with a shorter one.
        """
        if action not in ROUTES:
            raise InvalidInput(f"unknown action {action!r}", field="action")
        if times is not None and times < 1:
            raise InvalidInput("times must be at least 1 (or None for always)", field="times")
        if not 0 <= hold <= 600:
            raise InvalidInput("hold must be seconds from 0 to 600", field="hold")
        with self._lock:
            self._faults.append(
                Fault(action, "", times=times, commit=commit, lose=True, hold=float(hold))
            )

    def set_status(self, instance_name: str, status: str) -> None:
        """Put an instance in one of the documented statuses (``normal``, ``forbidden``,
        ``Deleting``)."""
        if status not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", field="status")
        with self._lock:
            inst = self._instances.get(instance_name)
            if inst is None:
                raise InvalidInput(f"no instance {instance_name!r}", field="instance_name")
            inst.status = status

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def configure(self, knobs: Mapping[str, Any]) -> None:
        """Apply knobs from JSON (the emulator's admin endpoint): ``faults``, ``dns_delay``,
        ``dns_misses``, ``latency``. Unknown keys are refused rather than ignored."""
        known = {"faults", "dns_delay", "dns_misses", "list_lag", "latency", "clear_faults"}
        unknown = sorted(set(knobs) - known)
        if unknown:
            raise InvalidInput(f"unknown control-plane knob {unknown[0]!r}", field=unknown[0])
        if knobs.get("clear_faults"):
            self.clear_faults()
        for name in ("dns_delay", "list_lag", "latency"):
            if name in knobs:
                value = knobs[name]
                if (
                    isinstance(value, bool)
                    or not isinstance(value, (int, float))
                    or not 0 <= value <= 3600
                ):
                    raise InvalidInput(f"{name} must be seconds from 0 to 3600", field=name)
                setattr(self, name, float(value))
        if "dns_misses" in knobs:
            value = knobs["dns_misses"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput("dns_misses must be a whole number >= 0", field="dns_misses")
            self.dns_misses = value
        for raw in knobs.get("faults", ()) or ():
            if not isinstance(raw, Mapping) or "action" not in raw:
                raise InvalidInput("each fault needs an action", field="faults")
            extra = sorted(
                set(raw)
                - {"action", "code", "status", "message", "recommend", "times", "commit"}
                - {"lose", "hold"}
            )
            if extra:
                raise InvalidInput(f"unknown fault key {extra[0]!r}", field="faults")
            if raw.get("lose"):
                self.lose(
                    str(raw["action"]),
                    times=raw.get("times", 1),
                    commit=bool(raw.get("commit", True)),
                    hold=float(raw.get("hold", 0.0)),
                )
                continue
            if "code" not in raw:
                raise InvalidInput("each error fault needs a code", field="faults")
            self.fail(
                str(raw["action"]),
                code=str(raw["code"]),
                status=int(raw.get("status", 400)),
                message=str(raw.get("message", "injected failure")),
                recommend=raw.get("recommend"),
                times=raw.get("times", 1),
                commit=bool(raw.get("commit", False)),
            )

    def call_count(self, action: str) -> int:
        """How many requests for ``action`` were accepted (after auth, faults included)."""
        with self._lock:
            return self._calls.get(action, 0)

    @property
    def create_count(self) -> int:
        """How many instances were really created (a paid resource each)."""
        with self._lock:
            return len(self._instances)

    def orders(self) -> list[dict[str, Any]]:
        """The accepted ``CreateVCUInstance`` request bodies, in order (what was bought)."""
        with self._lock:
            return [dict(order) for order in self._orders]

    def instances(self) -> list[dict[str, Any]]:
        """Every instance as ``GetInstance`` would describe it."""
        with self._lock:
            return [inst.detail() for inst in self._instances.values()]

    def age(self, instance_name: str) -> float:
        """Seconds (on ``clock``) since the instance was created: how new it is."""
        with self._lock:
            return self._clock() - self._instance(instance_name).created_at

    def data_endpoint(self, instance_name: str) -> str:
        return self.data_endpoint_template.format(instance=instance_name, region=self.region)

    def resolve(self, host: str) -> list[str]:
        """Resolve a data host the way public DNS would: unknown until created and propagated.

        Raises :class:`socket.gaierror` like :func:`socket.getaddrinfo` does; meant to be
        injected as the provisioner's resolver.
        """
        with self._lock:
            for inst in self._instances.values():
                if (urlsplit(self.data_endpoint(inst.name)).hostname or "") != host.lower():
                    continue
                inst.dns_lookups += 1
                young = self._clock() - inst.created_at < self.dns_delay
                if young or inst.dns_lookups <= self.dns_misses:
                    break
                return ["127.0.0.1"]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    # -- HTTP ------------------------------------------------------------------------------
    def handle(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        """Answer one HTTP request carrying an ``x-acs-action`` header.

        Raises :class:`LostAnswer` when a fault says no answer is to be sent.
        """
        lower = {k.lower(): v for k, v in headers.items()}
        request_id = str(uuid.uuid4()).upper()
        if self.latency > 0:
            self._sleep(self.latency)
        try:
            payload = self._dispatch(method, path, query, lower, body)
        except ServiceError as err:
            return _error_reply(err, request_id)
        payload["RequestId"] = request_id
        return _json_reply(200, payload, request_id)

    def _dispatch(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> dict[str, Any]:
        action = headers.get("x-acs-action", "")
        route = ROUTES.get(action)
        if route is None:
            raise ServiceError(
                404, "InvalidAction.NotFound", f"the action {action!r} is not supported"
            )
        if headers.get("x-acs-version") != API_VERSION:
            raise ServiceError(
                400,
                "InvalidVersion",
                f"specified version {headers.get('x-acs-version')!r} is not supported",
            )
        want_method, want_path = route
        if method.upper() != want_method or path.split("?", 1)[0] != want_path:
            raise ServiceError(
                404, "InvalidAction.NotFound", f"{action} is served by {want_method} {want_path}"
            )
        params = dict(parse_qsl(query, keep_blank_values=True))
        self._authenticate(method.upper(), want_path, params, headers, body)
        data = _json_body(body) if want_method == "POST" else {}
        with self._lock:
            self._calls[action] = self._calls.get(action, 0) + 1
            fault = self._take_fault(action)
            if fault is not None and not fault.commit:
                if fault.lose:
                    raise LostAnswer(fault.hold)
                raise ServiceError(fault.status, fault.code, fault.message, fault.recommend)
            if action == "CreateVCUInstance":
                result = self._create(data)
            elif action == "UpdateInstance":
                result = self._update(data)
            elif action == "GetInstance":
                result = self._get(params)
            else:
                result = self._list(params)
            if fault is not None and fault.lose:
                raise LostAnswer(fault.hold)
            if fault is not None:
                raise ServiceError(fault.status, fault.code, fault.message, fault.recommend)
            return result

    def _take_fault(self, action: str) -> Fault | None:
        for i, fault in enumerate(self._faults):
            if fault.action != action:
                continue
            if fault.times is not None:
                left = fault.times - 1
                if left <= 0:
                    del self._faults[i]
                else:
                    self._faults[i] = attrs.evolve(fault, times=left)
            return fault
        return None

    def _authenticate(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes,
    ) -> None:
        """Check the ACS3-HMAC-SHA256 signature the SDK puts in ``Authorization``."""
        auth = headers.get("authorization", "")
        if not auth:
            raise ServiceError(400, "MissingAuthorization", "the request is not signed")
        if self._access_keys is None:
            return
        algorithm, _, rest = auth.partition(" ")
        fields = dict(part.split("=", 1) for part in rest.split(",") if "=" in part)
        if algorithm != _SIGN_ALGORITHM or not {"Credential", "SignedHeaders", "Signature"} <= set(
            fields
        ):
            raise ServiceError(400, "IncompleteSignature", "the Authorization header is malformed")
        secret = self._access_keys.get(fields["Credential"])
        if secret is None:
            raise ServiceError(
                404, "InvalidAccessKeyId.NotFound", "the access key id does not exist"
            )
        payload_hash = hashlib.sha256(body).hexdigest()
        if headers.get("x-acs-content-sha256", "") != payload_hash:
            raise ServiceError(
                400, "SignatureDoesNotMatch", "the content hash does not match the body"
            )
        signed = fields["SignedHeaders"].split(";")
        canonical_headers = "".join(f"{name}:{headers.get(name, '').strip()}\n" for name in signed)
        canonical_query = "&".join(
            f"{key}={quote(params[key], safe='~')}" for key in sorted(params)
        )
        canonical = f"{method}\n{path}\n{canonical_query}\n{canonical_headers}\n{';'.join(signed)}\n{payload_hash}"
        to_sign = f"{_SIGN_ALGORITHM}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        expected = hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, fields["Signature"]):
            raise ServiceError(
                400,
                "SignatureDoesNotMatch",
                "the request signature does not conform to Aliyun standards",
            )

    # -- actions ---------------------------------------------------------------------------
    def _create(self, data: Mapping[str, Any]) -> dict[str, Any]:
        cluster_type = _required(data, "ClusterType", str)
        if cluster_type not in CLUSTER_TYPES:
            raise _invalid("ClusterType", f"must be one of {', '.join(CLUSTER_TYPES)}")
        period = _required(data, "PeriodInMonth", int)
        if not PERIOD_RANGE[0] <= period <= PERIOD_RANGE[1]:
            raise _invalid("PeriodInMonth", "must be from {} to {}".format(*PERIOD_RANGE))
        vcu = _required(data, "VCU", int)
        if not VCU_RANGE[0] <= vcu <= VCU_RANGE[1]:
            raise _invalid("VCU", "must be from {} to {}".format(*VCU_RANGE))
        auto_renew = _optional(data, "EnableAutoRenew", bool, False)
        renew_period = _optional(data, "AutoRenewPeriodInMonth", int, None)
        if auto_renew and renew_period is None:
            raise ServiceError(
                400,
                "MissingAutoRenewPeriodInMonth",
                "AutoRenewPeriodInMonth is mandatory when EnableAutoRenew is true",
            )
        if (
            renew_period is not None
            and not AUTO_RENEW_RANGE[0] <= renew_period <= AUTO_RENEW_RANGE[1]
        ):
            raise _invalid(
                "AutoRenewPeriodInMonth", "must be from {} to {}".format(*AUTO_RENEW_RANGE)
            )
        elastic = _optional(data, "EnableElasticVCU", bool, False)
        if vcu == 0 and not elastic:
            raise _invalid("VCU", "must be at least 1 unless EnableElasticVCU is true")
        alias = _optional(data, "AliasName", str, "")
        if len(alias) > 64:
            raise _invalid("AliasName", "must be at most 64 characters")
        tags = _tags(data.get("Tags"))
        if _optional(data, "DryRun", bool, False):
            return {}
        self._orders.append(dict(data))
        name = self._new_name()
        self._instances[name] = _Instance(
            name=name,
            alias=alias or name,
            region=self.region,
            cluster_type=cluster_type,
            vcu=vcu,
            elastic_vcu=elastic,
            period_in_month=period,
            auto_renew=auto_renew,
            auto_renew_period_in_month=renew_period,
            description=_optional(data, "InstanceDescription", str, ""),
            tags=tags,
            created_at=self._clock(),
            create_time=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        )
        return {"InstanceName": name}

    def _new_name(self) -> str:
        while self._next_names:
            name = self._next_names.pop(0)
            if name not in self._instances:
                return name
        # Hex digits cannot spell any of the forbidden words, and "inst-" holds none.
        name = f"inst-{secrets.token_hex(5)}"
        while name in self._instances:  # pragma: no cover - 40 random bits
            name = f"inst-{secrets.token_hex(5)}"
        return name

    def _instance(self, name: str) -> _Instance:
        inst = self._instances.get(name)
        if inst is None:
            raise ServiceError(
                404, "InvalidInstanceName.NotFound", f"the instance {name!r} does not exist"
            )
        return inst

    def _update(self, data: Mapping[str, Any]) -> dict[str, Any]:
        inst = self._instance(_required(data, "InstanceName", str))
        type_acl = _acl(data, "NetworkTypeACL", NETWORK_TYPE_ACL)
        source_acl = _acl(data, "NetworkSourceACL", NETWORK_SOURCE_ACL)
        alias = _optional(data, "AliasName", str, None)
        description = _optional(data, "InstanceDescription", str, None)
        if type_acl is not None:
            inst.network_type_acl = type_acl
        if source_acl is not None:
            inst.network_source_acl = source_acl
        if alias is not None:
            inst.alias = alias
        if description is not None:
            inst.description = description
        return {}

    def _get(self, params: Mapping[str, str]) -> dict[str, Any]:
        name = params.get("InstanceName", "")
        if not name:
            raise ServiceError(
                400, "MissingInstanceName", "InstanceName is mandatory for this action"
            )
        return self._instance(name).detail()

    def _list(self, params: Mapping[str, str]) -> dict[str, Any]:
        limit = _int_param(params, "MaxResults", 0)
        if not 0 <= limit <= _MAX_LIST_RESULTS:
            raise _invalid("MaxResults", f"must be from 0 to {_MAX_LIST_RESULTS}")
        limit = limit or _DEFAULT_LIST_RESULTS
        start = _decode_token(params.get("NextToken", ""))
        # "Instances are returned in lexicographical order"; a new one shows after list_lag.
        now = self._clock()
        rows = sorted(
            (r for r in self._instances.values() if now - r.created_at >= self.list_lag),
            key=lambda r: r.name,
        )
        if params.get("InstanceName"):
            rows = [r for r in rows if r.name == params["InstanceName"]]
        if params.get("InstanceNameList"):
            wanted = set(params["InstanceNameList"].split(","))
            rows = [r for r in rows if r.name in wanted]
        if params.get("Status"):
            # The request enumerates normal/deleting/forbidden; answers spell "Deleting".
            rows = [r for r in rows if r.status.lower() == params["Status"].lower()]
        if params.get("Tag"):
            for tag in _tags(_json_value(params["Tag"], "Tag")):
                rows = [r for r in rows if tag in r.tags]
        page = rows[start : start + limit]
        out: dict[str, Any] = {"Instances": [r.summary() for r in page], "TotalCount": len(rows)}
        if start + limit < len(rows):
            out["NextToken"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
        return out


# -- request parsing helpers ---------------------------------------------------------------
def _invalid(name: str, why: str) -> ServiceError:
    return ServiceError(400, f"InvalidParameter.{name}", f"the parameter {name} {why}")


def _required(data: Mapping[str, Any], name: str, kind: type) -> Any:
    if data.get(name) is None:
        raise ServiceError(400, f"Missing{name}", f"{name} is mandatory for this action")
    return _optional(data, name, kind, None)


def _optional(data: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, bool) and kind is not bool:
        raise _invalid(name, f"must be {kind.__name__}")
    if not isinstance(value, kind):
        raise _invalid(name, f"must be {kind.__name__}")
    return value


def _acl(data: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> list[str] | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, str):  # the SDK sends arrays as JSON; tolerate a comma list
        value = [v for v in value.split(",") if v]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(name, "must be a list of strings")
    bad = [v for v in value if v not in allowed]
    if bad:
        raise _invalid(name, f"has the unknown value {bad[0]!r}; allowed: {', '.join(allowed)}")
    return list(dict.fromkeys(value))


def _tags(value: Any) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid("Tags", "must be a list")
    out = []
    for tag in value:
        if (
            not isinstance(tag, Mapping)
            or not isinstance(tag.get("Key"), str)
            or not isinstance(tag.get("Value"), str)
        ):
            raise _invalid("Tags", "entries need a string Key and Value")
        if not 1 <= len(tag["Key"]) <= 64 or len(tag["Value"]) > 64:
            raise _invalid("Tags", "keys are 1 to 64 characters, values up to 64")
        out.append({"Key": tag["Key"], "Value": tag["Value"]})
    return out


def _json_body(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ServiceError(400, "InvalidParameter", "the request body is not JSON") from None
    if not isinstance(data, dict):
        raise ServiceError(400, "InvalidParameter", "the request body must be a JSON object")
    return data


def _json_value(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _invalid(name, "is not valid JSON") from None


def _int_param(params: Mapping[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise _invalid(name, "must be a whole number") from None


def _decode_token(token: str) -> int:
    if not token:
        return 0
    try:
        start = int(base64.urlsafe_b64decode(token.encode()).decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _invalid("NextToken", "is not a token this service issued") from None
    if start < 0:
        raise _invalid("NextToken", "is not a token this service issued")
    return start


def _json_reply(status: int, payload: Mapping[str, Any], request_id: str) -> Reply:
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    headers = {
        "content-type": "application/json;charset=utf-8",
        "x-acs-request-id": request_id,
        "content-length": str(len(body)),
    }
    return status, headers, body


def _error_reply(err: ServiceError, request_id: str) -> Reply:
    payload = {
        "Code": err.code,
        "Message": err.message,
        "RequestId": request_id,
        "HostId": "tablestore.emulator",
        "Recommend": err.recommend,
    }
    return _json_reply(err.status, payload, request_id)


__all__ = [
    "API_VERSION",
    "DEFAULT_DATA_ENDPOINT_TEMPLATE",
    "ROUTES",
    "FORBIDDEN_NAME_WORDS",
    "STATUSES",
    "ControlPlane",
    "Fault",
    "LostAnswer",
    "ServiceError",
    "hang_up",
    "valid_instance_name",
]
