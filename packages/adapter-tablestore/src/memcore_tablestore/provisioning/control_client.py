"""The four control-plane calls the provisioner needs, over ``alibabacloud-tablestore20201209``.

The SDK is imported inside the constructor so that importing this module (and the Hermes
plugin that may use it) stays cheap. Every SDK failure leaves as a memcore error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from memcore.errors import MemcoreError
from memcore_tablestore.provisioning.errors import (
    ControlPlaneNotFound,
    ControlPlaneUnavailable,
    from_sdk_error,
)

T = TypeVar("T")

#: What the original plugin buys: an SSD VCU instance with elastic VCU, one month, auto-renewed
#: monthly. ``VCU=0`` with elasticity on means pay-per-use on top of no reserved capacity.
CLUSTER_TYPE = "SSD"
RESERVED_VCU = 0
PERIOD_IN_MONTH = 1
AUTO_RENEW_PERIOD_IN_MONTH = 1
#: Reachable from the Internet, VPCs and the classic network, and from the console (proxy).
NETWORK_TYPE_ACL = ("INTERNET", "VPC", "CLASSIC")
NETWORK_SOURCE_ACL = ("TRUST_PROXY",)
_LIST_PAGE = 100
_MAX_PAGES = 1000


class AccessKeys(Protocol):
    """Explicit credentials; ``memcore_tablestore``'s credential values satisfy it."""

    @property
    def access_key_id(self) -> str: ...

    @property
    def access_key_secret(self) -> str: ...

    @property
    def security_token(self) -> str | None: ...


@attrs.frozen
class InstanceRecord:
    """What the control plane says about one instance."""

    name: str
    alias: str
    region: str | None
    status: str | None
    network_type_acl: tuple[str, ...] = ()
    network_source_acl: tuple[str, ...] = ()


def control_endpoint(region: str) -> str:
    """The public control-plane endpoint of a region."""
    return f"tablestore.{region}.aliyuncs.com"


class ControlPlaneClient:
    """A small, typed face over the generated ``Client``; no secret is kept in its repr."""

    def __init__(
        self,
        *,
        region: str,
        credentials: AccessKeys | None = None,
        endpoint: str | None = None,
        protocol: str = "https",
        timeout: float = 30.0,
    ) -> None:
        from alibabacloud_tablestore20201209.client import Client
        from alibabacloud_tea_openapi import models as openapi_models

        self.region = region
        self.endpoint = endpoint or control_endpoint(region)
        self._secrets: tuple[str | None, ...] = ()
        millis = max(1, int(timeout * 1000))
        config = openapi_models.Config(
            region_id=region,
            endpoint=self.endpoint,
            protocol=protocol,
            read_timeout=millis,
            connect_timeout=millis,
        )
        if credentials is not None:
            config.access_key_id = credentials.access_key_id
            config.access_key_secret = credentials.access_key_secret
            config.security_token = credentials.security_token or None
            # The key id too: an answer that quotes the string to sign carries it.
            self._secrets = (
                credentials.access_key_id,
                credentials.access_key_secret,
                credentials.security_token,
            )
        else:
            # The default chain: ALIBABA_CLOUD_* variables, profile files, RAM roles.
            config.credential = self._call("Credentials", _default_credential)
        self._client = self._call("Connect", lambda: Client(config))

    def __repr__(self) -> str:
        return f"ControlPlaneClient(region={self.region!r}, endpoint={self.endpoint!r})"

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except MemcoreError:
            raise
        except Exception as exc:
            raise from_sdk_error(
                exc, action=action, endpoint=self.endpoint, secrets=self._secrets
            ) from None

    def create_vcu_instance(self, *, alias: str, description: str) -> str:
        """Buy the instance; returns the name the service gave it."""
        from alibabacloud_tablestore20201209 import models
        from darabonba.runtime import RuntimeOptions

        request = models.CreateVCUInstanceRequest(
            alias_name=alias,
            cluster_type=CLUSTER_TYPE,
            vcu=RESERVED_VCU,
            period_in_month=PERIOD_IN_MONTH,
            enable_elastic_vcu=True,
            enable_auto_renew=True,
            auto_renew_period_in_month=AUTO_RENEW_PERIOD_IN_MONTH,
            instance_description=description,
        )
        response = self._call(
            "CreateVCUInstance",
            lambda: self._client.create_vcuinstance_with_options(request, {}, RuntimeOptions()),
        )
        name = getattr(response.body, "instance_name", None)
        if not isinstance(name, str) or not name:
            # The instance may exist all the same; a re-run finds it by its alias.
            raise ControlPlaneUnavailable(
                "CreateVCUInstance answered without an InstanceName", action="CreateVCUInstance"
            )
        return name

    def set_network_acl(
        self,
        instance_name: str,
        *,
        network_type_acl: Sequence[str] = NETWORK_TYPE_ACL,
        network_source_acl: Sequence[str] = NETWORK_SOURCE_ACL,
    ) -> None:
        from alibabacloud_tablestore20201209 import models
        from darabonba.runtime import RuntimeOptions

        request = models.UpdateInstanceRequest(
            instance_name=instance_name,
            network_type_acl=list(network_type_acl),
            network_source_acl=list(network_source_acl),
        )
        self._call(
            "UpdateInstance",
            lambda: self._client.update_instance_with_options(request, {}, RuntimeOptions()),
        )

    def get_instance(self, instance_name: str) -> InstanceRecord:
        from alibabacloud_tablestore20201209 import models
        from darabonba.runtime import RuntimeOptions

        request = models.GetInstanceRequest(instance_name=instance_name)
        response = self._call(
            "GetInstance",
            lambda: self._client.get_instance_with_options(request, {}, RuntimeOptions()),
        )
        return _record(_read_body(response, "GetInstance"), fallback_name=instance_name)

    def find_by_alias(self, alias: str) -> InstanceRecord | None:
        """The instance carrying ``alias``, paging through ``ListInstances``; None if absent.

        None only after the last page was read: a page that cannot be read, or paging that
        does not end, raises, since "absent" is what makes the provisioner buy.
        """
        from alibabacloud_tablestore20201209 import models
        from darabonba.runtime import RuntimeOptions

        token: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            request = models.ListInstancesRequest(max_results=_LIST_PAGE, next_token=token)

            def page(request: Any = request) -> Any:
                return self._client.list_instances_with_options(request, {}, RuntimeOptions())

            body = _read_body(self._call("ListInstances", page), "ListInstances")
            for item in getattr(body, "instances", None) or []:
                if getattr(item, "alias_name", None) == alias and getattr(
                    item, "instance_name", None
                ):
                    return _record(item, fallback_name=item.instance_name)
            token = getattr(body, "next_token", None) or None
            if token is None:
                return None
            if token in seen:
                break
            seen.add(token)
        raise ControlPlaneUnavailable(
            "ListInstances failed: the control plane's listing did not end (its NextToken "
            "repeats), so whether an instance is there is unknown",
            action="ListInstances",
        )

    def exists(self, instance_name: str) -> InstanceRecord | None:
        try:
            return self.get_instance(instance_name)
        except ControlPlaneNotFound:
            return None


def _default_credential() -> Any:
    from alibabacloud_credentials.client import Client as CredentialClient

    return CredentialClient()


def _read_body(response: Any, action: str) -> Any:
    """The body of an answer; the SDK leaves it unset when it could not read it."""
    body = getattr(response, "body", None)
    if body is None:
        raise ControlPlaneUnavailable(
            f"{action} failed: the control plane's answer could not be read", action=action
        )
    return body


def _record(body: Any, *, fallback_name: str) -> InstanceRecord:
    return InstanceRecord(
        name=getattr(body, "instance_name", None) or fallback_name,
        alias=getattr(body, "alias_name", None) or "",
        region=getattr(body, "region_id", None),
        status=getattr(body, "instance_status", None),
        network_type_acl=tuple(getattr(body, "network_type_acl", None) or ()),
        network_source_acl=tuple(getattr(body, "network_source_acl", None) or ()),
    )


__all__ = [
    "AUTO_RENEW_PERIOD_IN_MONTH",
    "CLUSTER_TYPE",
    "NETWORK_SOURCE_ACL",
    "NETWORK_TYPE_ACL",
    "PERIOD_IN_MONTH",
    "RESERVED_VCU",
    "AccessKeys",
    "ControlPlaneClient",
    "InstanceRecord",
    "control_endpoint",
]
