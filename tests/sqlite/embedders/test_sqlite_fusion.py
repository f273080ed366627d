"""The int8 recipe's graph: the packaged model's attention fused into onnxruntime's operator
computes the same function, the saved model holds the fused operators, and a graph that does
not have the known shape is left as it is."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore_sqlite.embedders import missing_onnx_requirements

pytestmark = pytest.mark.skipif(
    bool(missing_onnx_requirements()), reason="the semantic extra is not installed"
)

LAYERS = 6


@pytest.fixture(scope="module")
def folded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import onnxruntime  # type: ignore[import-untyped]

    from memcore_sqlite.embedders.onnx import _default_model
    from memcore_sqlite.embedders.quantize import fold

    return fold(onnxruntime, _default_model(), tmp_path_factory.mktemp("fold"))


def _hidden(model: Any, ids: Any) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )
    mask = np.ones_like(ids)
    mask[1, -3:] = 0  # a padded row: its mask reaches the fused operator
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    return session.run(None, feeds)[0], mask


def _ops(model: Any) -> collections.Counter[str]:
    return collections.Counter(node.op_type for node in model.graph.node)


def test_fused_attention_computes_what_the_exported_layers_compute(folded: Any) -> None:
    import onnx

    from memcore_sqlite.embedders import fusion

    fused = onnx.ModelProto()
    fused.CopyFrom(folded)
    assert fusion.fuse(fused) == LAYERS
    ops = _ops(fused)
    assert ops["Attention"] == LAYERS and ops["BiasGelu"] == LAYERS
    assert ops["Softmax"] == 0 and ops["Transpose"] == 0
    ids = np.random.default_rng(7).integers(1000, 20000, (2, 40)).astype(np.int64)
    want, mask = _hidden(folded, ids)
    got, _ = _hidden(fused, ids)
    real = mask.astype(bool)  # padded positions are never pooled
    assert np.abs(got[real] - want[real]).max() < 1e-4


def test_a_graph_of_another_shape_is_left_as_it_is(folded: Any) -> None:
    import onnx

    from memcore_sqlite.embedders import fusion

    other = onnx.ModelProto()
    other.CopyFrom(folded)
    # With 6 heads the scaling the export applies is not the operator's: nothing matches.
    assert fusion.fuse_attention(other, num_heads=6) == 0
    assert other == folded


def test_the_saved_int8_model_holds_the_fused_operators(tmp_path: Path) -> None:
    import onnx

    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    OnnxEmbedder(cache_dir=tmp_path).warm_up()
    [entry] = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    ops = _ops(onnx.load(str(entry / "model.onnx"), load_external_data=False))
    assert ops["QAttention"] == LAYERS and ops["BiasGelu"] == LAYERS
    assert ops["DynamicQuantizeMatMul"] + ops["MatMulIntegerToFloat"] == 3 * LAYERS
    assert ops["SkipLayerNormalization"] == 0 and ops["Softmax"] == 0
