"""What a caller may inject through ``obj=`` (tests pass a store factory and an environment).

It lives beside the runtime that uses it, not with the global options: the factory takes the
resolved :class:`~memcore_cli.settings.resolve.Settings`, and the options sit below them.
Plain dataclasses rather than attrs: ``app`` imports this for ``--help``.
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


@dataclasses.dataclass(frozen=True)
class Overrides:
    """Dependencies a caller may inject through ``obj=`` (tests pass a store factory here)."""

    store_factory: StoreFactory | None = None
    environ: Mapping[str, str] | None = None
