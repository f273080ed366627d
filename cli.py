"""Hermes CLI shim for ``hermes tablestore-mem add|search|doctor``; see ``memcore_hermes.commands.cli``.

Hermes' memory-provider loader also runs this file, with the plugin's package already published
and before the package's ``__init__`` (which defines ``register``): an agent built meanwhile
finds no provider. So this file imports nothing of the plugin; the command tree loads when
Hermes builds it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def _use_bundled_packages() -> None:
    for src in sorted((Path(__file__).resolve().parent / "packages").glob("*/src")):
        for pkg in src.iterdir():
            missing = (pkg / "__init__.py").exists() and importlib.util.find_spec(pkg.name) is None
            if missing and str(src) not in sys.path:
                sys.path.append(str(src))


def register_cli(subparser: argparse.ArgumentParser) -> None:
    """Build the argument tree under ``hermes tablestore-mem``."""
    _use_bundled_packages()
    from memcore_hermes.commands.cli import register_cli as build

    build(subparser)


def tablestore_mem_command(args: argparse.Namespace) -> None:
    """Run the chosen sub-command (Hermes exits with its ``SystemExit``)."""
    _use_bundled_packages()
    from memcore_hermes.commands.cli import tablestore_mem_command as run

    run(args)


# Hermes looks the handler up as ``<provider name>_command``, dash included.
globals()["tablestore-mem_command"] = tablestore_mem_command

__all__ = ["register_cli", "tablestore_mem_command"]
