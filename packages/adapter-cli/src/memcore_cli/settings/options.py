"""The global options (``memcore [OPTIONS] COMMAND``).

The bottom of the CLI's module graph: ``scopes``, ``resolve``, ``runtime`` and ``state`` all
read these values, and this module imports none of them (the store hook tests use is
:mod:`memcore_cli.wiring.overrides`). Plain dataclasses rather than attrs:
it is imported for ``--help``, which must stay import-light.
"""

from __future__ import annotations

import dataclasses

#: How data reaches stdout: rich tables, tab-separated lines, or JSON.
FORMATS = ("table", "plain", "json")

#: The scope flags, as (flag, GlobalOptions field); paging hints repeat every one given.
SCOPE_FLAGS = (("--app", "app"), ("--tenant", "tenant"), ("--agent", "agent"), ("--run", "run"))

#: The flags that choose the backend and store, as (flag, GlobalOptions field).
STORE_FLAGS = (("--hermes-home", "hermes_home"), ("--backend", "backend"), ("--config", "config"))


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
        argv = self.store_argv()
        for flag, name in SCOPE_FLAGS:
            value = getattr(self, name)
            if value is not None:
                argv += [flag, value]
        return argv

    def store_argv(self) -> list[str]:
        """The flags that chose the backend and store (``--hermes-home``, ``--backend``,
        ``--config``) as given: a command a message advises must reach the same store."""
        argv: list[str] = []
        for flag, name in STORE_FLAGS:
            value = getattr(self, name)
            if value is not None:
                argv += [flag, value]
        return argv
