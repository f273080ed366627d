"""Hermes Agent plugin root: the ``tablestore-mem`` MemoryProvider (register_memory_provider).

A thin shim. When the memcore packages are not installed (a plain ``hermes plugins install``
clone), their ``packages/*/src`` folders are put on ``sys.path``; then ``memcore_hermes`` takes over.

A clone named ``memcore`` next to a script would shadow the library (``import memcore`` finds
this folder first). Imported under that name, this module hands over to the real library
(installed, or this clone's ``packages/memcore/src``) instead of being the plugin.
"""

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def _use_bundled_packages() -> None:
    for src in sorted((_ROOT / "packages").glob("*/src")):
        for pkg in src.iterdir():
            missing = (pkg / "__init__.py").exists() and importlib.util.find_spec(pkg.name) is None
            if missing and str(src) not in sys.path:
                sys.path.append(str(src))


def _become_the_library() -> None:
    """Load the real ``memcore`` package in place of this one (``sys.modules`` is consulted
    after an import runs, so the importer receives the library)."""
    me = Path(__file__).resolve()
    outside = [p for p in sys.path if (Path(p or ".") / "memcore" / "__init__.py").resolve() != me]
    search = [*outside, str(_ROOT / "packages" / "memcore" / "src")]
    spec = importlib.machinery.PathFinder.find_spec("memcore", search)
    if spec is None or spec.loader is None:  # pragma: no cover - the clone always has it
        raise ImportError("the memcore library is not installed and not in this clone")
    module = importlib.util.module_from_spec(spec)
    sys.modules["memcore"] = module
    spec.loader.exec_module(module)


if __name__ == "memcore":
    _become_the_library()
else:

    def register(ctx):  # type: ignore[no-untyped-def]
        """Hermes calls this; it registers the provider with ``ctx.register_memory_provider``.

        Defined before anything is imported: Hermes' loader publishes this module before it
        runs it, and an agent built meanwhile (a gateway's sessions starting together) takes
        the module as it finds it, without a provider when ``register`` is not there yet."""
        _use_bundled_packages()
        from memcore_hermes.session.provider import MemcoreMemoryProvider

        ctx.register_memory_provider(MemcoreMemoryProvider())

    _use_bundled_packages()

    from memcore_hermes.session.provider import MemcoreMemoryProvider

    __all__ = ["MemcoreMemoryProvider", "register"]
