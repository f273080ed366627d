"""Resolve what one invocation runs against: backend, config, data home and scope.

Precedence, from strongest: the ``--backend`` flag, ``MEMCORE_BACKEND``, the config file's
``backend`` key, then ``local``. The config file is ``--config PATH`` or
``$MEMCORE_HOME/config.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from memcore.config import MemcoreConfig
from memcore.discovery import installed_backends
from memcore.errors import ConfigError
from memcore_cli.config_file import read_config
from memcore_cli.home import data_home, database_path, default_config_path
from memcore_cli.options import GlobalOptions
from memcore_cli.scopes import ScopeChoice, choose_scope

BACKEND_ENV = "MEMCORE_BACKEND"
DEFAULT_BACKEND = "local"


@attrs.frozen
class Settings:
    """Everything resolved for one invocation; no store is opened yet."""

    backend: str
    backend_source: str
    config: MemcoreConfig
    config_path: Path
    config_explicit: bool
    home: Path
    db_path: Path
    scope: ScopeChoice


def resolve_settings(options: GlobalOptions, environ: Mapping[str, str]) -> Settings:
    home = data_home(environ)
    explicit = options.config is not None
    config_path = Path(options.config).expanduser() if options.config else default_config_path(home)
    config = read_config(config_path, required=explicit)
    backend, source = _choose_backend(options, environ, config, config_path)
    return Settings(
        backend=backend,
        backend_source=source,
        config=config,
        config_path=config_path,
        config_explicit=explicit,
        home=home,
        db_path=database_path(home, config.local_path),
        scope=choose_scope(options, config),
    )


def _choose_backend(
    options: GlobalOptions, environ: Mapping[str, str], config: MemcoreConfig, config_path: Path
) -> tuple[str, str]:
    env_value = environ.get(BACKEND_ENV, "").strip()
    if options.backend is not None:
        name, source = options.backend.strip(), "--backend"
    elif env_value:
        name, source = env_value, BACKEND_ENV
    elif config.backend:
        name, source = config.backend, str(config_path)
    else:
        name, source = DEFAULT_BACKEND, "default"
    installed = installed_backends()
    if name not in installed:
        raise ConfigError(
            f"unknown backend {name!r} (from {source}); installed backends: "
            f"{', '.join(installed) or 'none'}",
            field="backend",
        )
    return name, source
