"""Backend discovery through the ``memcore.backends`` entry-point group.

Adapters register a factory ``open_backend(config, **options) -> MemoryStore``; the core finds
them by name and never imports an adapter module itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any, cast

from memcore.config import MemcoreConfig, given_config
from memcore.errors import ConfigError
from memcore.ports import BackendFactory, MemoryStore
from memcore.wording import shown

GROUP = "memcore.backends"


def installed_backends() -> list[str]:
    return sorted({ep.name for ep in metadata.entry_points(group=GROUP)})


def load_backend(name: str) -> BackendFactory:
    """The factory registered as ``name``; :class:`ConfigError` lists the installed ones."""
    for ep in metadata.entry_points(group=GROUP):
        if ep.name == name:
            return cast(BackendFactory, ep.load())
    installed = ", ".join(installed_backends()) or "none"
    raise ConfigError(
        f"unknown backend {shown(name)}; installed backends: {installed}", field="backend"
    )


def open_store(
    name: str, config: MemcoreConfig | Mapping[str, Any] | None = None, /, **options: Any
) -> MemoryStore:
    """Open the backend registered as ``name`` with ``config`` (a config, or a mapping of its
    keys as ``Memory.open`` takes)."""
    return load_backend(name)(given_config(config), **options)
