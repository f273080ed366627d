"""Hermes Agent memory provider ``tablestore-mem`` built on memcore.

Nothing is imported here: Hermes imports ``memcore_hermes.commands.cli`` on every start to build its
argument tree, and the provider class loads only when Hermes asks for the provider.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore_hermes.session.provider import PROVIDER_NAME, MemcoreMemoryProvider, register

__all__ = ["PROVIDER_NAME", "MemcoreMemoryProvider", "register"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'memcore_hermes' has no attribute {name!r}")
    from memcore_hermes.session import provider

    return getattr(provider, name)
