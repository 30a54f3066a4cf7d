"""Seeded random weights for a model whose weights were stripped, such as the
onnx package's light models (onnx/backend/test/data/light)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


def randomize_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """The light models hold no weights: ConstantOfShape nodes fill them.  Every
    float weight becomes a seeded random initializer, at He scale for convolution
    and fully connected weights and positive for BatchNormalization scales and
    variances, so activations stay O(1) through plain chains of layers."""
    rng = np.random.default_rng(seed)
    graph = model.graph
    consumer = {t: (n.op_type, i) for n in graph.node for i, t in enumerate(n.input)}

    def weight(name: str, dims: tuple[int, ...]) -> onnx.TensorProto:
        op, index = consumer.get(name, ("", 0))
        if op in ("Conv", "Gemm") and index == 1:
            value = rng.standard_normal(dims, np.float32) * np.sqrt(2.0 / np.prod(dims[1:]))
        elif (op, index) in (("BatchNormalization", 1), ("BatchNormalization", 4), ("Mul", 1)):
            value = 0.5 + rng.random(dims, np.float32)
        else:
            value = 0.2 * rng.random(dims, np.float32) - 0.1
        return numpy_helper.from_array(value.astype(np.float32), name)

    shapes = {t.name: tuple(numpy_helper.to_array(t)) for t in graph.initializer}
    filled = [n for n in graph.node if n.op_type == "ConstantOfShape"]
    weights = [weight(n.output[0], shapes[n.input[0]]) for n in filled]
    weights += [weight(t.name, tuple(t.dims)) for t in graph.initializer
                if t.data_type == onnx.TensorProto.FLOAT]
    nodes = [n for n in graph.node if n.op_type != "ConstantOfShape"]
    used = {t for n in nodes for t in n.input}
    weights += [t for t in graph.initializer  # e.g. Reshape's shapes
                if t.data_type != onnx.TensorProto.FLOAT and t.name in used]
    inputs = [i for i in graph.input if i.name not in shapes]
    new = helper.make_graph(nodes, graph.name, inputs, graph.output, weights)
    # IR 3 would want every initializer listed as an input as well.
    out = helper.make_model(new, opset_imports=model.opset_import, ir_version=4)
    # A random network's softmax is often saturated: its input is an output too.
    # (Shapes inferred on the original, whose weights are not stored yet.)
    logits = {n.input[0] for n in nodes if n.op_type == "Softmax"}
    inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    out.graph.output.extend(vi for vi in inferred if vi.name in logits)
    return out
