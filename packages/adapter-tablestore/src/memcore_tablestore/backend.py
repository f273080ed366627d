"""The ``memcore.backends`` entry point: a TableStore store from a :class:`MemcoreConfig`."""

from __future__ import annotations

from typing import Any

from memcore.config import MemcoreConfig
from memcore.errors import ConfigError
from memcore_tablestore.client.sdk_import import import_sdk_quietly
from memcore_tablestore.credentials import ApiKey, Credentials, resolve_auth
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore

_OPTIONS = frozenset(
    {"endpoint", "instance_name", "credentials", "region", "retry", "timeout", "ready_timeout"}
)


def open_backend(config: MemcoreConfig, /, **options: Any) -> TableStoreMemoryStore:
    """Open the data plane named by ``config`` (or by ``endpoint=``/``instance_name=`` options).

    ``credentials=`` (a :class:`Credentials` or :class:`ApiKey`) overrides :func:`resolve_auth`
    (an API key in ``TABLESTORE_MEMORY_API_KEY`` first). ``region=`` turns on SignV4. A
    config without an instance means the instance was never provisioned.
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigError(
            f"unknown option(s) for the tablestore backend: {', '.join(unknown)}", field=unknown[0]
        )
    endpoint = options.get("endpoint") or config.endpoint
    instance = options.get("instance_name") or config.instance_name
    if not endpoint or not instance:
        missing = "endpoint" if not endpoint else "instance_name"
        raise ConfigError(
            f"the tablestore backend has no {missing}; run provisioning first "
            "(it creates the instance and records endpoint and instance_name)",
            field=missing,
        )
    import_sdk_quietly()
    credentials = options.get("credentials")
    if credentials is None:
        credentials = resolve_auth()
    elif not isinstance(credentials, (Credentials, ApiKey)):
        raise ConfigError(
            "credentials must be a memcore_tablestore.Credentials or ApiKey", field="credentials"
        )
    return TableStoreMemoryStore(
        endpoint,
        instance,
        credentials,
        timeout=options.get("timeout", config.timeout),
        region=options.get("region"),
        retry=options.get("retry", True),
        auto_create=config.auto_create_store,
        ready_timeout=options.get("ready_timeout", 180.0),
    )
