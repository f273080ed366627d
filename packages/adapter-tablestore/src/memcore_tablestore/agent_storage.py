"""The vendor's ``tablestore-agent-storage`` client, used for the Memory Store calls when the
credentials are an API key (``tablestore`` 6.4.8 cannot send ``x-ots-apikey``).

Its signing, headers and transport are the vendor's; this module only builds the client and
lets it talk plain HTTP to a loopback emulator, which the vendor client refuses for API keys.
"""

from __future__ import annotations

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
    return AgentStorageClient(
        ots_endpoint=target, ots_instance_name=instance_name, api_key=api_key, **kwargs
    )


def release(client: Any) -> None:
    """Close the pooled connections of a client from :func:`build`."""
    transport = getattr(getattr(client, "ots_client", None), "transport", None)
    clear = getattr(transport, "clear", None)
    if callable(clear):
        clear()
