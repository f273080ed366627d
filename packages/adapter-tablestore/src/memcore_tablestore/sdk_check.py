"""Refuse, clearly, an installed ``tablestore`` SDK that predates the Memory Store API.

Hermes installs ``plugin.yaml`` dependencies by name and keeps an older SDK it already has.
"""

from __future__ import annotations

from memcore.errors import ConfigError

MIN_SDK = "6.4.7"


def require_memory_api(client_cls: type) -> None:
    if not callable(getattr(client_cls, "add_memories", None)):
        raise ConfigError(
            f"the installed tablestore SDK has no Memory Store API; tablestore >= {MIN_SDK} is "
            f"required (pip install -U 'tablestore>={MIN_SDK}')",
            field="tablestore",
        )
