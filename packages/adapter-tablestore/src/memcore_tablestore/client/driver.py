"""What the sync and async stores share: settings, the SDK check and client construction, one
attempt's error handling. The stores differ only in how they wait (``time.sleep`` vs ``await``)."""

from __future__ import annotations

import math
import re
from typing import Any

from memcore.errors import ConfigError, OutcomeUnknown, ProtocolError, Unavailable
from memcore_tablestore.client import agent_storage
from memcore_tablestore.client.error_map import Failure, failure_from_exception, shows_secret
from memcore_tablestore.credentials import ApiKey, Credentials
from memcore_tablestore.protocol import wire
from memcore_tablestore.protocol.apis import SDK_METHODS
from memcore_tablestore.protocol.plans import Call, Plans

_ENDPOINT = re.compile(r"https?://[^\s/]+/?")
#: How long to keep trying to open a connection before saying the endpoint is unreachable.
CONNECT_TIMEOUT = 3.0

#: The first ``tablestore`` release with the Memory Store API.
MIN_SDK = "6.4.7"


def require_memory_api(client_cls: type) -> None:
    """Refuse, clearly, an installed SDK that predates the Memory Store API (Hermes installs
    ``plugin.yaml`` dependencies by name and keeps an older SDK it already has)."""
    if not callable(getattr(client_cls, SDK_METHODS["AddMemories"], None)):
        raise ConfigError(
            f"the installed tablestore SDK has no Memory Store API; tablestore >= {MIN_SDK} is "
            f"required (pip install -U 'tablestore>={MIN_SDK}')",
            field="tablestore",
        )


class Settings:
    """Validated connection settings; the secret stays inside :class:`Credentials`."""

    def __init__(
        self,
        endpoint: str,
        instance_name: str,
        credentials: Credentials | ApiKey,
        *,
        timeout: float,
        region: str | None,
        retry: bool,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        if not isinstance(endpoint, str) or not _ENDPOINT.fullmatch(endpoint):
            raise ConfigError(
                "endpoint must look like https://<instance>.<region>.ots.aliyuncs.com",
                field="endpoint",
            )
        if not isinstance(instance_name, str) or not instance_name:
            raise ConfigError("instance_name must be a non-empty string", field="instance_name")
        if not isinstance(credentials, (Credentials, ApiKey)):
            raise ConfigError(
                "credentials must be a memcore_tablestore.Credentials or ApiKey",
                field="credentials",
            )
        if isinstance(credentials, ApiKey):
            agent_storage.check_endpoint(endpoint)
        timeout = positive_seconds(timeout, "timeout")
        connect_timeout = positive_seconds(connect_timeout, "connect_timeout")
        if region is not None and (not isinstance(region, str) or not region):
            raise ConfigError(
                "region must be a non-empty string such as cn-beijing", field="region"
            )
        self.endpoint = endpoint.rstrip("/")
        self.instance_name = instance_name
        self.credentials = credentials
        self.timeout = float(timeout)
        self.connect_timeout = min(float(connect_timeout), self.timeout)
        self.region = region
        self.retry = bool(retry)

    def budget(self, failure: Failure) -> float:
        """How long one call may keep retrying after ``failure``."""
        return self.connect_timeout if failure.unreachable else self.timeout

    @property
    def sdk_endpoint(self) -> str:
        """The endpoint the SDK is given: without a hand-written ``user:password@``, which
        TableStore does not use (it signs with the keys) and the async client sent along as a
        Basic ``Authorization`` header, where an answer quoting the request could show it."""
        from memcore.config import strip_userinfo

        return str(strip_userinfo(self.endpoint))

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials' secrets, kept out of every error (:func:`classify`)."""
        return self.credentials.secrets

    @property
    def api_key(self) -> bool:
        """Whether the calls go through the vendor's ``tablestore-agent-storage`` client."""
        return isinstance(self.credentials, ApiKey)

    def client_arguments(self, *, asynchronous: bool = False) -> tuple[list[Any], dict[str, Any]]:
        """Arguments for ``OTSClient``/``AsyncOTSClient``; SignV4 when a region is set.

        The connect timeout is separate from the read timeout: urllib3's ``Timeout`` for the
        sync client, the ``(connect, read)`` pair the async client takes.
        """
        from tablestore.retry import NoRetryPolicy

        c = self.credentials
        assert isinstance(c, Credentials)
        if asynchronous:
            socket_timeout: Any = (self.connect_timeout, self.timeout)
        else:
            import urllib3

            socket_timeout = urllib3.Timeout(connect=self.connect_timeout, read=self.timeout)
        kwargs: dict[str, Any] = {
            "socket_timeout": socket_timeout,
            # Memory APIs are retried here, with a write-safety rule the SDK does not know.
            "retry_policy": NoRetryPolicy(),
            "logger_name": "memcore_tablestore.sdk",
        }
        if c.security_token:
            kwargs["sts_token"] = c.security_token
        if self.region:
            kwargs["region"] = self.region
        if c.renewal is not None:
            kwargs["credentials_provider"] = _renewing_provider(c)
        args = [self.sdk_endpoint, c.access_key_id, c.access_key_secret, self.instance_name]
        return args, kwargs

    def client(self, client_cls: type, *, asynchronous: bool = False, **extra: Any) -> Any:
        """A ``client_cls`` (``OTSClient``/``AsyncOTSClient``) for these settings, once the
        installed SDK is known to have the Memory Store API; ``extra`` goes to the constructor.

        With an API key, the vendor's ``AgentStorageClient`` instead (synchronous; the async
        store runs its calls in a worker thread)."""
        if isinstance(self.credentials, ApiKey):
            import urllib3

            return agent_storage.build(
                self.sdk_endpoint,
                self.instance_name,
                self.credentials.key,
                socket_timeout=urllib3.Timeout(connect=self.connect_timeout, read=self.timeout),
                logger_name="memcore_tablestore.sdk",
                max_connection=int(extra.get("max_connection", 50)),
            )
        require_memory_api(client_cls)
        args, kwargs = self.client_arguments(asynchronous=asynchronous)
        return client_cls(*args, **extra, **kwargs)

    def __repr__(self) -> str:
        from memcore.config import without_userinfo

        endpoint = without_userinfo(self.endpoint)
        return f"Settings(endpoint={endpoint!r}, instance_name={self.instance_name!r}, region={self.region!r})"


def _renewing_provider(credentials: Credentials) -> Any:
    """An SDK ``CredentialsProvider`` that the SDK asks before each request, for credentials
    that are renewed (:class:`~memcore_tablestore.credentials.ChainRenewal`)."""
    from tablestore.credentials import Credentials as SdkCredentials
    from tablestore.credentials import CredentialsProvider

    class Renewing(CredentialsProvider):  # type: ignore[misc]
        def get_credentials(self) -> SdkCredentials:
            c = credentials.current()
            return SdkCredentials(c.access_key_id, c.access_key_secret, c.security_token)

        def __repr__(self) -> str:
            return "Renewing()"

    return Renewing()


def settle(call: Call, raw: Any) -> dict[str, Any]:
    """The decoded answer of one attempt, or a :class:`Failure` describing why it is unusable.

    The service puts an ``x-ots-requestid`` header on every answer and the SDK copies it into
    ``requestId``; a 2xx without it did not come from the service (a proxy, a portal, a cache)
    and says nothing about the request: its outcome is unknown, never "landed"."""
    if not isinstance(raw, dict) or not _service_request_id(raw.get("requestId")):
        raise unknown(call, "a 2xx answer without the service's request id (not the service's)")
    try:
        return wire.unwrap(raw)
    except ProtocolError as exc:
        raise unknown(call, str(exc)) from None


def classify(
    call: Call, exc: Exception, *, endpoint: str = "", secrets: tuple[str, ...] = ()
) -> Failure:
    """The failure of one attempt. SDK 6.4.8 raises ``OTSServiceError(<status>,
    "JsonDecodeError")`` for a body that is not JSON (2xx included), a ``TypeError`` when a 2xx
    body is JSON but not an object and a ``UnicodeDecodeError`` for bad bytes: none of these is
    an answer of the service's, so for a write the outcome is unknown, as after a timeout.

    ``secrets`` are kept out of the error's text, and out of its traceback: the SDK's exception
    stays attached as the cause only when it does not quote one of them."""
    failure = ambiguous(
        call, failure_from_exception(exc, api=call.api, endpoint=endpoint, secrets=secrets)
    )
    failure.__cause__ = None if shows_secret(exc, secrets) else exc
    failure.__suppress_context__ = True
    return failure


def ambiguous(call: Call, failure: Failure) -> Failure:
    """A write that may have been applied, said so: :class:`OutcomeUnknown` (look before
    sending it again) for a call that is not replay-safe, when the service did not refuse it."""
    error = failure.error
    if (
        call.replay_safe
        or failure.refused
        or failure.unreachable
        or not isinstance(error, Unavailable)
        or isinstance(error, OutcomeUnknown)
    ):
        return failure
    return Failure(
        OutcomeUnknown(
            f"{error} (the request was sent; whether it was applied is unknown)"[:600],
            field=error.field,
        )
    )


def unknown(call: Call, reason: str) -> Failure:
    """An attempt that got no answer of the service's (see :func:`settle`)."""
    return ambiguous(call, Failure(ProtocolError(f"{call.api}: {reason}"[:600])))


def _service_request_id(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def positive_seconds(value: object, field: str) -> float:
    """A finite number of seconds above zero (``inf`` would wait forever, ``nan`` never)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(
            f"{field} must be a positive, finite number of seconds, not {value!r}", field=field
        )
    return float(value)


def make_plans(*, auto_create: bool, ready_timeout: float) -> Plans:
    seconds = positive_seconds(ready_timeout, "ready_timeout")
    return Plans(auto_create=bool(auto_create), ready_timeout=seconds)
