"""Hermes Agent plugin root: the ``tablestore-mem`` MemoryProvider (register_memory_provider).

A thin shim. When the memcore packages are not installed (a plain ``hermes plugins install``
clone), their ``packages/*/src`` folders are put on ``sys.path``; then ``memcore_hermes`` takes over.
"""

import importlib.util
import sys
from pathlib import Path


def _use_bundled_packages() -> None:
    for src in sorted((Path(__file__).resolve().parent / "packages").glob("*/src")):
        for pkg in src.iterdir():
            missing = (pkg / "__init__.py").exists() and importlib.util.find_spec(pkg.name) is None
            if missing and str(src) not in sys.path:
                sys.path.append(str(src))


_use_bundled_packages()

from memcore_hermes.provider import TablestoreMemProvider  # noqa: E402


def register(ctx):  # type: ignore[no-untyped-def]
    """Hermes calls this; it registers the provider with ``ctx.register_memory_provider``."""
    ctx.register_memory_provider(TablestoreMemProvider())


__all__ = ["TablestoreMemProvider", "register"]
