"""The packaged model with int8 matrix products, made on this machine from the packaged file.

The packaged model stores int8 weights, but onnxruntime folds them back to float32 when it
optimises the graph, so every product ran in float. The recipe: fold them (a basic
optimisation pass), fuse each layer's attention into onnxruntime's ``Attention`` operator and
Gelu into ``BiasGelu`` (:mod:`memcore_sqlite.embedders.fusion`), then dynamic quantisation
(onnxruntime's own ``quantize_dynamic``, per-channel scales), which turns each weight product
and each attention into an int8 one (``QAttention``: one product for the three projections).

Measured on a 2-core x86 machine, two texts at a time, CPU per word piece: 58 µs on 1,094
LongMemEval passages (93 with the first recipe, which quantised the products alone and kept
the exported attention, 170 in float) and 69 µs on 1,000 short texts (103; 235), under
onnxruntime 1.32; under 1.23, 62 against 77 and 74 against 84. The vectors are within a
cosine of 0.97 of the float ones (median 0.995, as with the first recipe, and within 0.994 of
that recipe's), and recall on the LongMemEval_S development split is the same (user turns:
hybrid session recall_any@5 0.992, turn recall_any@5 0.916, turn NDCG@10 0.795).

Nothing is downloaded: the result is built once from the packaged model and saved with the
other optimised models (:mod:`memcore_sqlite.embedders.model_cache`). The recipe is fixed and
deterministic (two builds are byte for byte the same), so every process on a machine computes
the same vectors.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memcore_sqlite.embedders import fusion
from memcore_sqlite.embedders.model_cache import Recipe

#: Names the recipe in cache keys; bump it when the recipe changes, and with it
#: ``onnx.QUANTIZED_MODEL_NAME``: vectors from another recipe must not share a name.
RECIPE = "fused-attention-int8-per-channel-v2"
#: Earlier recipes, whose saved models this one replaces.
EARLIER = ("dynamic-int8-per-channel-v1",)
QUANTIZED = "quantized.onnx"
#: onnxruntime fusions the saved graph is built without. Under onnxruntime 1.32 a run on one
#: thread took a third longer with ``SkipLayerNormalization`` than with the ``Add`` and
#: ``LayerNormalization`` it replaces (9.4 against 6.9 ms for 128 word pieces, 2.1 against 1.5
#: for 24); under 1.23 the fused operator is 3-4% faster. One graph for both.
DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)


def fold(onnxruntime: Any, source: Path, workdir: Path) -> Any:
    """``source`` with its stored int8 weights as plain float initialisers (what fusion and
    quantisation read), as an ``onnx.ModelProto``; ``workdir`` holds nothing afterwards."""
    import onnx

    workdir.mkdir(parents=True, exist_ok=True)
    folded = workdir / "folded.onnx"
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    options.log_severity_level = 3
    onnxruntime.InferenceSession(
        str(source), sess_options=options, providers=["CPUExecutionProvider"]
    )
    try:
        return onnx.load(str(folded))
    finally:
        folded.unlink(missing_ok=True)


def quantize(onnxruntime: Any, source: Path, workdir: Path) -> Path:
    """``source`` with int8 weight products, written into ``workdir``; returns its path."""
    import onnx
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        QuantType,
        quantize_dynamic,
    )

    model = fold(onnxruntime, source, workdir)
    fusion.fuse(model)
    fused = workdir / "fused.onnx"
    onnx.save(model, str(fused))
    graph = model.graph
    weights = {init.name for init in graph.initializer}
    # A product of two activations (scores of a layer left unfused) has no weight to quantise.
    activations_only = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul" and not any(name in weights for name in node.input)
    ]
    out = workdir / QUANTIZED
    with _quiet():
        quantize_dynamic(
            str(fused),
            str(out),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=activations_only,
            per_channel=True,
        )
    fused.unlink(missing_ok=True)
    return out


#: What the embedder loads: :func:`quantize` under :data:`RECIPE`.
INT8 = Recipe(RECIPE, quantize, DISABLED_OPTIMIZERS, replaces=EARLIER)


class _DropQuantizerAdvice(logging.Filter):
    """``quantize_dynamic`` logs advice meant for image models on the root logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    root = logging.getLogger()
    drop = _DropQuantizerAdvice()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
