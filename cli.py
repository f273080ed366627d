"""Hermes CLI shim for ``hermes tablestore-mem add|search|doctor``; see ``memcore_hermes.commands.cli``."""

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

from memcore_hermes.commands.cli import register_cli, tablestore_mem_command  # noqa: E402

# Hermes looks the handler up as ``<provider name>_command``, dash included.
globals()["tablestore-mem_command"] = tablestore_mem_command

__all__ = ["register_cli", "tablestore_mem_command"]
