"""The packaged model's self-attention as onnxruntime's ``Attention`` operator, which
``quantize_dynamic`` turns into ``QAttention``.

The packaged graph was exported from PyTorch's scaled-dot-product attention: per layer about
twenty small operators (three projections, reshapes and transposes, a mask built from
``attention_mask``, softmax, a NaN guard, two activation products). onnxruntime's transformer
optimiser does not recognise that export, so the layers are matched here and each becomes one
``com.microsoft.Attention`` node holding the three projections as one weight. On the float
model the fused graph gives the same vectors (cosine 1.0000 on 2,094 texts), and once
quantised its one int8 product replaces three. A layer that does not have this shape is left
as it is (the recipe then only quantises it), so another export never fails to load.

Gelu is fused with onnxruntime's own fusers (``BiasGelu``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: The operator's raw two-dimensional mask input, made once from ``attention_mask``.
MASK = "attention_mask_int32"


class _NoMatch(Exception):
    """This softmax is not the attention of the exported layer this module knows."""


def fuse(model: Any, num_heads: int = 12) -> int:
    """Fuse attention and Gelu in ``model`` (an ``onnx.ModelProto``, changed in place);
    returns how many attention layers were fused."""
    layers = fuse_attention(model, num_heads)
    _fuse_gelu(model)
    return layers


def fuse_attention(model: Any, num_heads: int) -> int:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)

    def projection(name: str) -> tuple[str, Any, Any, float]:
        """Up a chain of reshapes, transposes and constant scalings to ``x @ W + b``:
        returns x, W, b and the product of the scalings."""
        scale = 1.0
        while True:
            node = producer.get(name)
            if node is None:
                raise _NoMatch(name)
            if node.op_type == "Mul" and sum(i in weights for i in node.input) == 1:
                constant, data = sorted(node.input, key=lambda i: i not in weights)
                factor = numpy_helper.to_array(weights[constant])
                if factor.size != 1:
                    raise _NoMatch(node.name)
                scale *= float(factor.reshape(()))
                name = data
            elif node.op_type in ("Reshape", "Transpose"):
                name = node.input[0]
            elif node.op_type == "Add" and sum(i in weights for i in node.input) == 1:
                bias, data = sorted(node.input, key=lambda i: i not in weights)
                matmul = producer.get(data)
                if matmul is None or matmul.op_type != "MatMul" or matmul.input[1] not in weights:
                    raise _NoMatch(node.name)
                w = numpy_helper.to_array(weights[matmul.input[1]])
                b = numpy_helper.to_array(weights[bias])
                return matmul.input[0], w, b, scale
            else:
                raise _NoMatch(node.op_type)

    def only(name: str, op_type: str) -> Any:
        found = [n for n in consumers[name] if n.op_type == op_type]
        if len(found) != 1:
            raise _NoMatch(name)
        return found[0]

    replaced: dict[str, Any] = {}
    for softmax in [n for n in graph.node if n.op_type == "Softmax"]:
        try:
            masked = producer[softmax.input[0]]
            scores = producer.get(masked.input[0]) if masked.op_type == "Add" else None
            if scores is None or scores.op_type != "MatMul":
                raise _NoMatch(softmax.name)
            x, wq, bq, sq = projection(scores.input[0])
            xk, wk, bk, sk = projection(scores.input[1])
            guarded = only(softmax.output[0], "Where")  # softmax of a fully masked row: 0
            mixed = only(guarded.output[0], "MatMul")
            xv, wv, bv, sv = projection(mixed.input[1])
            merge = only(mixed.output[0], "Transpose")
            out = only(merge.output[0], "Reshape")
            head = wq.shape[1] // num_heads
            # the operator scales scores by 1/sqrt(head size), as the export does
            if not (x == xk == xv) or abs(sq * sk * sv * np.sqrt(head) - 1) > 1e-5:
                raise _NoMatch(softmax.name)
        except (_NoMatch, KeyError, IndexError, ValueError):
            continue
        tag = softmax.name
        w = numpy_helper.from_array(np.concatenate([wq, wk, wv], axis=1), f"{tag}_qkv_weight")
        b = numpy_helper.from_array(np.concatenate([bq, bk, bv]), f"{tag}_qkv_bias")
        graph.initializer.extend([w, b])
        replaced[out.name] = helper.make_node(
            "Attention",
            [x, w.name, b.name, MASK],
            [out.output[0]],
            name=f"Attention_{tag}",
            domain="com.microsoft",
            num_heads=num_heads,
        )
    if not replaced:
        return 0
    cast = helper.make_node(
        "Cast", ["attention_mask"], [MASK], name="attention_mask_to_int32", to=TensorProto.INT32
    )
    nodes = [cast, *(replaced.get(n.name, n) for n in graph.node)]
    del graph.node[:]
    graph.node.extend(nodes)
    _prune(graph)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(replaced)


def _prune(graph: Any) -> None:
    """Drop the nodes and weights that no longer lead to an output."""
    needed = {out.name for out in graph.output}
    kept = []
    for node in reversed(list(graph.node)):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    used = [init for init in graph.initializer if init.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(used)


def _fuse_gelu(model: Any) -> None:
    from onnxruntime.transformers.fusion_biasgelu import (  # type: ignore[import-untyped]
        FusionBiasGelu,
    )
    from onnxruntime.transformers.fusion_gelu import FusionGelu  # type: ignore[import-untyped]
    from onnxruntime.transformers.onnx_model import OnnxModel  # type: ignore[import-untyped]

    wrapped = OnnxModel(model)
    FusionGelu(wrapped).apply()
    FusionBiasGelu(wrapped, is_fastgelu=False).apply()
    wrapped.prune_graph()
