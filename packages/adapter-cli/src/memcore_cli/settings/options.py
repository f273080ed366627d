"""The global options (``memcore [OPTIONS] COMMAND``) and the hook tests use to inject a store.

The bottom of the CLI's module graph: ``scopes``, ``settings``, ``runtime`` and ``state`` all
read these values, and this module imports none of them. Plain dataclasses rather than attrs:
it is imported for ``--help``, which must stay import-light.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcore.ports import MemoryStore
    from memcore_cli.settings.resolve import Settings

#: Builds the store for resolved settings; the default opens the backend by entry point.
StoreFactory = Callable[["Settings"], "MemoryStore"]

#: How data reaches stdout: rich tables, tab-separated lines, or JSON.
FORMATS = ("table", "plain", "json")

#: The scope flags, as (flag, GlobalOptions field); paging hints repeat every one given.
SCOPE_FLAGS = (("--app", "app"), ("--tenant", "tenant"), ("--agent", "agent"), ("--run", "run"))


@dataclasses.dataclass(frozen=True)
class GlobalOptions:
    """The options that come before the command."""

    json: bool = False
    backend: str | None = None
    config: str | None = None
    app: str | None = None
    tenant: str | None = None
    agent: str | None = None
    run: str | None = None
    debug: bool = False
    format: str | None = None
    hermes_home: str | None = None

    def scope_argv(self) -> list[str]:
        """The scope (and backend/config) flags as given, to repeat them in a hint."""
        argv: list[str] = []
        for flag, name in (
            ("--hermes-home", "hermes_home"),
            ("--backend", "backend"),
            ("--config", "config"),
            *SCOPE_FLAGS,
        ):
            value = getattr(self, name)
            if value is not None:
                argv += [flag, value]
        return argv


@dataclasses.dataclass(frozen=True)
class Overrides:
    """Dependencies a caller may inject through ``obj=`` (tests pass a store factory here)."""

    store_factory: StoreFactory | None = None
    environ: Mapping[str, str] | None = None
