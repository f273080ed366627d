"""The preloaded embedder Hermes hands the store says which scripts its model covers, so a
Chinese query on the English default gets no vector score under Hermes too."""

from __future__ import annotations

from memcore.config import MemcoreConfig
from memcore.testing import HashingEmbedder
from memcore_hermes.backend.preload import ModelPreload
from memcore_sqlite.vector.coverage import Script, coverage


class _LatinOnly(HashingEmbedder):
    scripts = frozenset({Script.LATIN})


def test_the_preloaded_embedder_declares_its_model_scripts() -> None:
    preload = ModelPreload("onnx", _LatinOnly(16))
    preload.wait()
    embedder = preload.embedder_for(MemcoreConfig(backend="local", embedder="onnx"))
    assert embedder is not None
    assert coverage(embedder, "宠物") == 0.0
    assert coverage(embedder, "pets") == 1.0


def test_a_model_that_declares_nothing_still_covers_everything() -> None:
    preload = ModelPreload("onnx", HashingEmbedder(16))
    preload.wait()
    embedder = preload.embedder_for(MemcoreConfig(backend="local", embedder="onnx"))
    assert embedder is not None and coverage(embedder, "宠物") == 1.0
