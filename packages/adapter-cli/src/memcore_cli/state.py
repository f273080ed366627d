"""What the root callback records for the commands, and the hook tests use to inject a store.

Plain dataclasses rather than attrs: this module is imported for ``--help``, which must stay
import-light; everything heavier lives in :mod:`memcore_cli.runtime`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore.ports import MemoryStore
    from memcore_cli.output import Output
    from memcore_cli.runtime import Runtime
    from memcore_cli.settings import Settings

#: Builds the store for resolved settings; the default opens the backend by entry point.
StoreFactory = Callable[["Settings"], "MemoryStore"]


@dataclasses.dataclass(frozen=True)
class GlobalOptions:
    """The options that come before the command (``memcore [OPTIONS] COMMAND``)."""

    json: bool = False
    backend: str | None = None
    config: str | None = None
    app: str | None = None
    tenant: str | None = None
    agent: str | None = None
    run: str | None = None
    debug: bool = False


@dataclasses.dataclass(frozen=True)
class Overrides:
    """Dependencies a caller may inject through ``obj=`` (tests pass a store factory here)."""

    store_factory: StoreFactory | None = None
    environ: Mapping[str, str] | None = None


class CliState:
    """Per-invocation state: the global options, plus the runtime built on first use."""

    def __init__(self, options: GlobalOptions, overrides: Overrides | None = None) -> None:
        self.options = options
        self.overrides = overrides or Overrides()
        self._runtime: Runtime | None = None
        self._output: Output | None = None

    @property
    def json(self) -> bool:
        return self.options.json

    @property
    def debug(self) -> bool:
        return self.options.debug

    @property
    def environ(self) -> Mapping[str, str]:
        return self.overrides.environ if self.overrides.environ is not None else os.environ

    @property
    def output(self) -> Output:
        if self._output is None:
            from memcore_cli.output import Output

            self._output = Output(as_json=self.options.json)
        return self._output

    def runtime(self) -> Runtime:
        """The composition root for this invocation (resolves config; opens nothing yet)."""
        if self._runtime is None:
            from memcore_cli.runtime import Runtime

            self._runtime = Runtime(
                self.options,
                self.environ,
                self.overrides.store_factory,
                explicit_environ=self.overrides.environ is not None,
            )
        return self._runtime

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()


def state_of(ctx: Any) -> CliState:
    """The :class:`CliState` of the root context."""
    state = ctx.find_root().obj
    if not isinstance(state, CliState):  # pragma: no cover - the root callback always sets it
        raise RuntimeError("memcore CLI state is missing")
    return state


def configure_logging(debug: bool) -> None:
    """Keep library log chatter (the SDK warns about its encoder) off the terminal.

    Without a handler, Python prints warnings through its last-resort handler, which would
    break the one-line error contract; ``--debug`` shows warnings and above on stderr.
    Called once per invocation, in the root callback.
    """
    import logging

    root = logging.getLogger()
    if debug:
        if not any(getattr(h, "_memcore_cli", False) for h in root.handlers):
            handler = logging.StreamHandler()
            handler.setLevel(logging.WARNING)
            handler._memcore_cli = True  # type: ignore[attr-defined]
            root.addHandler(handler)
        return
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    # alibabacloud-credentials attaches its own stderr handler to this logger and prints
    # every failed provider of its chain with a traceback; the error we raise says it once.
    logging.getLogger("credentials").disabled = True
