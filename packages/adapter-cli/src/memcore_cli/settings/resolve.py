"""Resolve what one invocation runs against: backend, config, data home and scope.

Precedence, from strongest: the ``--backend`` flag, ``MEMCORE_BACKEND``, the config file's
``backend`` key, then ``local``. The config file is ``--config PATH`` or
``$MEMCORE_HOME/config.json``.

A Hermes home (``--hermes-home DIR``, or ``--config`` naming a ``tablestore_memory.json``) is
read as the Hermes plugin reads it, so both open one store: its config file, its database
(``local_path`` or ``tablestore_memory_local.sqlite3`` in the home), its TableStore keys (the
environment over the home's ``.env``), and its backend rule (the ``backend`` key, else
TableStore when keys exist, else an error); ``MEMCORE_BACKEND`` and ``MEMCORE_HOME`` do not
apply there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from memcore.config import MemcoreConfig
from memcore.discovery import installed_backends
from memcore.errors import ConfigError
from memcore_cli.settings.config_file import read_config
from memcore_cli.settings.home import data_home, database_path, default_config_path, expand
from memcore_cli.settings.options import GlobalOptions
from memcore_cli.settings.scopes import ScopeChoice, choose_scope

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
    #: Set when the store is a Hermes home's (see the module docstring).
    hermes_home: Path | None = None

    @property
    def database_setting(self) -> str:
        """What places the embedded database, for advice: the config file's ``local_path``
        when it is set (or a Hermes home's config, which ``MEMCORE_HOME`` does not reach),
        else ``MEMCORE_HOME``."""
        if self.config.local_path or self.hermes_home is not None:
            return f"local_path in {self.config_path}"
        return "MEMCORE_HOME"

    @property
    def move_advice(self) -> str:
        """How to put the embedded database where it can be written."""
        if self.database_setting == "MEMCORE_HOME":
            return "set MEMCORE_HOME to a writable folder"
        return f"set {self.database_setting} to a file in a writable folder"


def resolve_settings(options: GlobalOptions, environ: Mapping[str, str]) -> Settings:
    hermes_root = _hermes_root(options)
    if hermes_root is not None:
        return _hermes_settings(options, environ, hermes_root)
    home = data_home(environ)
    explicit = options.config is not None
    config_path = (
        expand(options.config, field="config") if options.config else default_config_path(home)
    )
    config = read_config(config_path, required=explicit)
    backend, source = _choose_backend(options, environ, config, config_path)
    return Settings(
        backend=backend,
        backend_source=source,
        config=config,
        config_path=config_path,
        config_explicit=explicit,
        home=home,
        db_path=database_path(home, config.local_path, source=str(config_path)),
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
    _check_installed(name, source)
    return name, source


def _check_installed(name: str, source: str) -> None:
    installed = installed_backends()
    if name not in installed:
        raise ConfigError(
            f"unknown backend {name!r} (from {source}); installed backends: "
            f"{', '.join(installed) or 'none'}",
            field="backend",
        )


#: The Hermes plugin's config file; its folder is the Hermes home.
HERMES_CONFIG_FILE = "tablestore_memory.json"


def config_file(options: GlobalOptions, environ: Mapping[str, str]) -> Path:
    """The config file the settings are read from, for ``config set`` to write without
    reading the rest (a store, keys): ``--config``, else a Hermes home's
    ``tablestore_memory.json``, else the one in the data home."""
    if options.config:
        return expand(options.config, field="config")
    root = _hermes_root(options)
    if root is not None:
        return root / HERMES_CONFIG_FILE
    return default_config_path(data_home(environ))


def _hermes_root(options: GlobalOptions) -> Path | None:
    if options.hermes_home is not None:
        if not options.hermes_home.strip():
            raise ConfigError(
                "--hermes-home is empty (an unset shell variable?); give a directory or leave "
                "it out",
                field="hermes_home",
            )
        root = expand(options.hermes_home, field="hermes_home")
        try:
            is_dir = root.is_dir()
        except OSError as exc:  # a name too long for the file system, say
            raise ConfigError(
                f"--hermes-home {root} cannot be opened ({exc.strerror})", field="hermes_home"
            ) from None
        if not is_dir:
            raise ConfigError(f"--hermes-home {root} is not a directory", field="hermes_home")
        return root
    if options.config is not None:
        path = expand(options.config, field="config")
        if path.name == HERMES_CONFIG_FILE:
            return path.parent
    return None


def _hermes_settings(options: GlobalOptions, environ: Mapping[str, str], root: Path) -> Settings:
    """The store of the Hermes home ``root``, resolved by the plugin's own rules."""
    try:
        from memcore_hermes.backend.open_store import choose_backend
        from memcore_hermes.config.credentials import access_keys, load_environment
        from memcore_hermes.config.home import HermesHome
    except ImportError:
        raise ConfigError(
            "reading a Hermes home needs the memcore-hermes package: install "
            "memcore-cli[hermes], or run memcore from the Python environment Hermes uses",
            field="hermes_home",
        ) from None

    home = HermesHome(root)
    explicit = options.config is not None
    config_path = expand(options.config, field="config") if options.config else home.config_file
    # Hermes reads a missing file as the defaults; a --config that names one must exist.
    config = read_config(config_path, required=explicit)
    if options.backend is not None:
        name, source = options.backend.strip(), "--backend"
    else:
        keys = access_keys(load_environment(home.env_file, environ))
        name = choose_backend(config, keys)
        source = str(config_path) if config.backend else f"keys in {home.env_file}"
    _check_installed(name, source)
    return Settings(
        backend=name,
        backend_source=source,
        config=config,
        config_path=config_path,
        config_explicit=explicit,
        home=root,
        db_path=home.local_db_file(config),
        scope=choose_scope(options, config),
        hermes_home=root,
    )
