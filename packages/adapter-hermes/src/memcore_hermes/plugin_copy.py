"""The plugin as ``hermes plugins install`` leaves it in ``$HERMES_HOME/plugins``.

Tests and benchmarks run the real ``hermes`` against such a copy: the repository root's shims
and ``plugin.yaml`` with the packages' sources, without bytecode or caches.
"""

from __future__ import annotations

import shutil
from pathlib import Path

SHIMS = ("plugin.yaml", "__init__.py", "cli.py")


def copy_plugin(source: Path, target: Path) -> Path:
    """Copy the plugin root ``source`` (a clone of the repository) to ``target``."""
    target.mkdir(parents=True)
    for name in SHIMS:
        shutil.copy2(source / name, target / name)
    shutil.copytree(
        source / "packages",
        target / "packages",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return target
