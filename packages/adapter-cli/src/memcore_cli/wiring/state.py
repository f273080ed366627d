"""Per-invocation state, built once from the global options in the root callback.

Every command reads its output mode, environment and :class:`~memcore_cli.wiring.runtime.Runtime`
from here. The runtime (and with it the core) is imported on first use only, so that
``--help`` stays import-light.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memcore_cli.settings.options import GlobalOptions
from memcore_cli.wiring.overrides import Overrides, StoreFactory

if TYPE_CHECKING:
    from memcore_cli.output.render import Output
    from memcore_cli.wiring.runtime import Runtime

#: Commands whose every run embeds text (a query or a memory).
EMBEDDING_COMMANDS = frozenset({"search", "import"})
HELP_FLAGS = frozenset({"--help", "-h"})

__all__ = [
    "CliState",
    "GlobalOptions",
    "Overrides",
    "StoreFactory",
    "configure_logging",
    "state_of",
]


class CliState:
    """Per-invocation state: the global options, the output mode, and the runtime on first use."""

    def __init__(self, options: GlobalOptions, overrides: Overrides | None = None) -> None:
        self.options = options
        self.overrides = overrides or Overrides()
        self._runtime: Runtime | None = None
        self._output: Output | None = None

    @property
    def format(self) -> str:
        """``json`` with ``--json``; else ``--format``; else a table on a terminal, plain lines
        when stdout is a pipe or a file."""
        if self.options.json:
            return "json"
        if self.options.format is not None:
            return self.options.format
        return "table" if sys.stdout.isatty() else "plain"

    @property
    def json(self) -> bool:
        return self.format == "json"

    @property
    def debug(self) -> bool:
        return self.options.debug

    @property
    def environ(self) -> Mapping[str, str]:
        return self.overrides.environ if self.overrides.environ is not None else os.environ

    @property
    def output(self) -> Output:
        if self._output is None:
            from memcore_cli.output.render import Output

            self._output = Output(self.format)
        return self._output

    def more_hint(self, command: str, next_token: str, extra: Sequence[str] = ()) -> str:
        """The command that fetches the next page, with every global flag this one was given
        (a hint that dropped ``--tenant`` would page through another tenant)."""
        argv = ["memcore", *self.options.scope_argv(), *command.split(), *extra]
        argv += ["--next-token", next_token]
        return "more: " + " ".join(shlex.quote(a) for a in argv)

    def prepare(self, command: str | None, args: Sequence[str]) -> None:
        """Start what the command will need before it is even parsed: the embedding model
        for the commands that embed (never for ``--help``; ``add`` only with ``--sync``, as
        without it the vector is left to the next search)."""
        words = set(args)
        embeds = command in EMBEDDING_COMMANDS or (command == "add" and "--sync" in words)
        if embeds and not HELP_FLAGS & words:
            self.runtime().warm_embedder()

    def runtime(self) -> Runtime:
        """The composition root for this invocation (resolves config; opens nothing yet)."""
        if self._runtime is None:
            from memcore_cli.wiring.runtime import Runtime

            self._runtime = Runtime(
                self.options,
                self.environ,
                self.overrides.store_factory,
                explicit_environ=self.overrides.environ is not None,
            )
        return self._runtime

    @property
    def opened_runtime(self) -> Runtime | None:
        """The runtime, if a command made one (an error's advice reads its open store)."""
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
    # A handler of an earlier invocation in this process (a library or test runner calling
    # the CLI again) holds the stderr of its own time, which may be closed by now.
    for stale in [h for h in root.handlers if getattr(h, "_memcore_cli", False)]:
        root.removeHandler(stale)
    if debug:
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
