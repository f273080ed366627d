"""The vendor's ``tablestore-agent-storage`` client, used for the Memory Store calls when the
credentials are an API key (``tablestore`` 6.4.8 cannot send ``x-ots-apikey``).

Its signing, headers and transport are the vendor's; this module only builds the client and
lets it talk plain HTTP to a loopback emulator, which the vendor client refuses for API keys.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit

from memcore.errors import ConfigError

#: Hosts an API key may be sent to over plain HTTP (the emulator and tests).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(endpoint: str) -> bool:
    return (urlsplit(endpoint).hostname or "") in LOOPBACK_HOSTS


def check_endpoint(endpoint: str) -> None:
    """An API key travels only over HTTPS, except to a loopback address."""
    if endpoint.startswith("https://") or is_loopback(endpoint):
        return
    raise ConfigError(
        "an API key is sent only over HTTPS: use an https:// endpoint "
        "(plain http:// is accepted only for a loopback emulator on 127.0.0.1 or localhost)",
        field="endpoint",
    )


class LoopbackPlainHTTP:
    """The vendor's urllib3 transport, with the endpoint's ``https://`` origin sent as
    ``http://``: the client is built for ``https://127.0.0.1:<port>`` (it refuses an API key
    otherwise), and this sends its requests to the plain-HTTP emulator there."""

    def __init__(self, endpoint: str, pool: Any) -> None:
        self._secure = "https://" + endpoint[len("http://") :]
        self._plain = endpoint
        self.pool = pool

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        if url.startswith(self._secure):
            url = self._plain + url[len(self._secure) :]
        return self.pool.request(method, url, **kwargs)

    def clear(self) -> None:
        self.pool.clear()


class RequestIds:
    """Wraps the vendor client's transport and keeps, per thread, the ``x-ots-requestid`` header
    of the last answer: the vendor client returns only the body and, unlike ``tablestore``, does
    not copy the header into it, and an answer without the service's request id is taken as not
    the service's (``driver.settle``)."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self._last = threading.local()

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self._last.value = ""
        response = self.transport.request(method, url, **kwargs)
        headers = getattr(response, "headers", None) or {}
        value = headers.get("x-ots-requestid", "") if hasattr(headers, "get") else ""
        self._last.value = value if isinstance(value, str) else ""
        return response

    def last(self) -> str:
        return str(getattr(self._last, "value", ""))

    def clear(self) -> None:
        clear = getattr(self.transport, "clear", None)
        if callable(clear):
            clear()


class Client:
    """The vendor client with each answer's ``requestId`` taken from its header, as the
    ``tablestore`` SDK gives it; everything else is the vendor's."""

    def __init__(self, vendor: Any, ids: RequestIds) -> None:
        self.vendor = vendor
        self.ots_client = vendor.ots_client
        self._ids = ids

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.vendor, name)
        if name.startswith("_") or not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            answer = method(*args, **kwargs)
            rid = self._ids.last()
            if isinstance(answer, dict) and rid:
                answer = {**answer, "requestId": rid}
            return answer

        return call


def build(
    endpoint: str,
    instance_name: str,
    api_key: str,
    *,
    socket_timeout: Any,
    logger_name: str,
    max_connection: int = 50,
) -> Any:
    """An ``AgentStorageClient`` that authenticates with ``api_key``; the vendor's own retries
    are off (the caller retries with its write-safety rule)."""
    import urllib3

    check_endpoint(endpoint)
    try:
        from tablestore_agent_storage import AgentStorageClient, NoRetryPolicy
    except ImportError:
        # Hermes installs plugin.yaml dependencies by name and may have skipped this one.
        raise ConfigError(
            "an API key needs the vendor's client: pip install 'tablestore-agent-storage>=1.0.10'",
            field="tablestore-agent-storage",
        ) from None
    kwargs: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "retry_policy": NoRetryPolicy(),
        "logger_name": logger_name,
        "max_connection": max_connection,
    }
    target = endpoint
    if endpoint.startswith("http://"):
        pool = urllib3.PoolManager(maxsize=max_connection, block=True)
        kwargs["_ots_transport"] = LoopbackPlainHTTP(endpoint, pool)
        target = "https://" + endpoint[len("http://") :]
    vendor = AgentStorageClient(
        ots_endpoint=target, ots_instance_name=instance_name, api_key=api_key, **kwargs
    )
    ids = RequestIds(vendor.ots_client.transport)
    vendor.ots_client.transport = ids
    return Client(vendor, ids)


def release(client: Any) -> None:
    """Close the pooled connections of a client from :func:`build`."""
    transport = getattr(getattr(client, "ots_client", None), "transport", None)
    clear = getattr(transport, "clear", None)
    if callable(clear):
        clear()
