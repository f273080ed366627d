"""Opening the configured backend (the composition root of the plugin).

``local`` is the embedded SQLite store under ``$HERMES_HOME``; ``tablestore`` is the cloud
Memory Store, provisioned on first run when no instance is configured yet. The SDKs are
imported here, never at plugin import.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from memcore.config import LOCAL, MemcoreConfig
from memcore.errors import ConfigError
from memcore.ports import InstanceFacts, MemoryStore, ProgressCallback
from memcore_hermes.config.credentials import AccessKeys
from memcore_hermes.config.home import HOME_ADVICE, HermesHome

if TYPE_CHECKING:
    from memcore_hermes.backend.preload import ModelPreload

logger = logging.getLogger(__name__)

TABLESTORE = "tablestore"

Progress = Callable[[str], None]


def choose_backend(config: MemcoreConfig, keys: AccessKeys | None) -> str:
    """The configured backend; unset means TableStore when keys exist, else an error."""
    if config.backend:
        return config.backend
    if keys is not None:
        return TABLESTORE
    raise ConfigError(
        "no backend is usable: set TABLESTORE_MEMORY_AK and TABLESTORE_MEMORY_SK (or "
        "TABLESTORE_MEMORY_API_KEY) in $HERMES_HOME/.env, or choose the offline store with "
        '"backend": "local"',
        field="backend",
    )


def tablestore_credentials(keys: AccessKeys) -> Any:
    """What the Memory Store calls authenticate with: the API key when one is set."""
    from memcore_tablestore import ApiKey, Credentials

    if keys.api_key:
        return ApiKey(keys.api_key)
    return Credentials(keys.access_key_id, keys.access_key_secret, keys.security_token)


def _pair(keys: AccessKeys) -> Any:
    """The access key pair, which creating an instance needs (an API key cannot)."""
    from memcore_tablestore import Credentials

    if not keys.has_pair:
        raise ConfigError(
            "an API key reaches the Memory Store of an existing instance only: set endpoint "
            "and instance_name in tablestore_memory.json (hermes tablestore-mem setup), or add "
            "TABLESTORE_MEMORY_AK and TABLESTORE_MEMORY_SK to create an instance",
            field="instance_name",
        )
    return Credentials(keys.access_key_id, keys.access_key_secret, keys.security_token)


def bootstrap_instance(
    home: HermesHome,
    config: MemcoreConfig,
    keys: AccessKeys,
    *,
    progress: Progress | None = None,
    provisioner_options: Mapping[str, Any] | None = None,
) -> MemcoreConfig:
    """First run: find or create the instance, check its endpoint answers, persist it.

    The provisioner merges ``instance_name`` and ``endpoint`` into the config file itself
    (atomically, mode 0600); the config is read back from there.
    """
    from memcore_tablestore.provisioning.provisioner import TableStoreProvisioner

    say = progress or (lambda _m: None)
    pair = _pair(keys)
    credentials = tablestore_credentials(keys)

    def probe(facts: InstanceFacts) -> object:
        store = _data_plane(facts.endpoint, facts.instance_name, credentials, config)
        try:
            return store.list_stores()
        finally:
            store.close()

    say("tablestore-mem: first run, preparing a TableStore instance (this can take a few minutes)")
    provisioner = TableStoreProvisioner(
        config,
        home.config_file,
        credentials=pair,
        probe=probe,
        **dict(provisioner_options or {}),
    )
    facts = provisioner.ensure_instance(progress=cast("ProgressCallback", say))
    saved = home.load_config()
    if saved.instance_name != facts.instance_name or not saved.endpoint:
        saved = home.save_config({"instance_name": facts.instance_name, "endpoint": facts.endpoint})
    say(f"tablestore-mem: using instance {facts.instance_name} at {facts.endpoint}")
    return saved


def _data_plane(
    endpoint: str, instance_name: str, credentials: Any, config: MemcoreConfig
) -> MemoryStore:
    from memcore_tablestore import TableStoreMemoryStore

    store: MemoryStore = TableStoreMemoryStore(
        endpoint,
        instance_name,
        credentials,
        timeout=config.timeout,
        auto_create=config.auto_create_store,
    )
    return store


def location_advice(config: MemcoreConfig, home: HermesHome) -> str:
    """How to move the local database: the Hermes home, or the config's ``local_path``;
    never the CLI's MEMCORE_HOME, which a refusal would otherwise advise."""
    if config.local_path is None:
        return HOME_ADVICE
    return f"set local_path in {home.config_file} to a file in a writable folder"


def open_backend_store(
    home: HermesHome,
    config: MemcoreConfig,
    keys: AccessKeys | None,
    *,
    progress: Progress | None = None,
    provisioner_options: Mapping[str, Any] | None = None,
    defer_vectors: bool = False,
    preload: ModelPreload | None = None,
    environ: Mapping[str, str],
    local_path: str | None = None,
) -> tuple[MemcoreConfig, MemoryStore]:
    """Open the store the config selects; may bootstrap (and so update) the config.

    ``environ`` is where the local store's own model (``MEMCORE_MODEL_*``) is read from: the
    environment over ``$HERMES_HOME/.env``, as ``credentials.load_environment`` returns it.

    For the local store, ``defer_vectors`` leaves an unsynced ``add``'s vector to the next
    semantic search or the background re-embedding (a one-shot command then never loads the
    model), and ``preload`` hands over the embedder a command started loading early;
    ``local_path`` opens another file instead (``doctor`` probes the search mode in memory).
    """
    backend = choose_backend(config, keys)
    if backend == LOCAL:
        # Imported directly, not through entry points: a plugin clone has none registered.
        from memcore_sqlite import open_backend
        from memcore_sqlite.chat_model.client import ModelSettings

        model = ModelSettings.from_env(environ)
        options: dict[str, Any] = {
            "path": local_path or str(home.local_db_file(config)),
            "model": model,
            "location_advice": location_advice(config, home),
        }
        if defer_vectors:
            options["defer_vectors"] = True
        embedder = preload.embedder_for(config) if preload is not None else None
        if embedder is not None:
            options["embedder"] = embedder
        return config, open_backend(config, **options)
    if keys is None:
        raise ConfigError(
            "the tablestore backend needs TABLESTORE_MEMORY_AK and TABLESTORE_MEMORY_SK (or "
            f"TABLESTORE_MEMORY_API_KEY) in {home.env_file}",
            field="TABLESTORE_MEMORY_AK",
        )
    if not config.instance_name or not config.endpoint:
        config = bootstrap_instance(
            home, config, keys, progress=progress, provisioner_options=provisioner_options
        )
    if not config.instance_name or not config.endpoint:
        raise ConfigError("the bootstrap did not yield an instance and endpoint", field="endpoint")
    return config, _data_plane(
        config.endpoint, config.instance_name, tablestore_credentials(keys), config
    )
