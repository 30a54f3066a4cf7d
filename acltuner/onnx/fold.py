"""Graph clean-up while loading: nodes no output depends on are dropped, and
nodes computable at load time are folded into constants.

Folding covers Shape of a tensor whose shape inference made static and every
deterministic standard node whose inputs are all constants (Constant,
ConstantOfShape, Unsqueeze of a weight, the Shape -> Gather -> Concat chain
that computes a Reshape's or Resize's sizes...), so that shapes become
static and weights reached through such nodes are plain constants for the
convolution fusion and the native operations.  The foldable nodes run once,
together, through onnxruntime; shape inference after a fold may make more
Shape nodes static, which is why the loader alternates the two.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from acltuner.onnx.onnxrt import ir_version, session, value_info
from acltuner.onnx.activation import DEFAULT_DOMAINS
from acltuner.onnx.detached import initializer
from acltuner.onnx.graph import OnnxGraph, subgraph_names

_RANDOM = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
           "Multinomial", "Bernoulli"}


def _live_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    needed = {o.name for o in graph.output}
    keep = []
    for node in reversed(graph.node):
        if any(t in needed for t in node.output):
            keep.append(node)
            needed.update(t for t in node.input if t)
            needed |= subgraph_names(node)
    return keep[::-1]


def _shape_of(g: OnnxGraph, node: onnx.NodeProto) -> np.ndarray | None:
    """Shape(x) for a static x, honouring the start/end attributes (opset 15)."""
    dims = g.static_shape(node.input[0])
    if dims is None:
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return np.array(dims[attrs.get("start", 0):attrs.get("end", len(dims))], dtype=np.int64)


def _foldable(node: onnx.NodeProto, known: set[str]) -> bool:
    return (node.domain in DEFAULT_DOMAINS and node.op_type not in _RANDOM
            and not any(a.g.node or a.graphs for a in node.attribute)
            and all(t in known for t in node.input if t))


def _evaluate(model: onnx.ModelProto, g: OnnxGraph, nodes: list[onnx.NodeProto],
              constants: dict[str, np.ndarray], wanted: list[str]) -> dict[str, np.ndarray]:
    used = {t for n in nodes for t in n.input if t}
    graph = helper.make_graph(
        nodes, "fold", [], [value_info(g, t) for t in wanted],
        [numpy_helper.from_array(constants[t], t) for t in sorted(used & constants.keys())])
    sub = helper.make_model(graph, opset_imports=model.opset_import,
                            ir_version=ir_version(model))
    return dict(zip(wanted, session(sub).run(wanted, {})))


_DEQUANTIZED_TYPES = (np.int8, np.uint8, np.int16, np.uint16)


def constant_dequantized(node: onnx.NodeProto, constants: dict[str, np.ndarray]
                         ) -> np.ndarray | None:
    """A DequantizeLinear of constants computed here as onnxruntime computes
    it, (x - zero_point) * scale in float32, the same bits (exact in float32
    for 8- and 16-bit integers, then one rounding); None for a form this does
    not cover (block quantization, other types), which the session folds.
    A quantized model's weights are such nodes, and through a session each
    was held twice, its output and the copy handed back (light_resnet50 in
    int8: 97 MB of weights, a 379 MB peak of loading)."""
    if node.op_type != "DequantizeLinear" or node.domain not in DEFAULT_DOMAINS:
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    inputs = [constants.get(t) if t else None for t in node.input]
    x, scale = inputs[0], inputs[1]
    zero = inputs[2] if len(inputs) > 2 else None
    if (x is None or scale is None or attrs.get("block_size", 0)
            or x.dtype not in _DEQUANTIZED_TYPES or scale.dtype != np.float32
            or scale.ndim > 1 or (zero is not None and zero.shape != scale.shape)
            or (len(node.input) > 2 and node.input[2] and zero is None)):
        return None
    shape = [1] * x.ndim
    if scale.ndim == 1 and x.ndim:
        shape[attrs.get("axis", 1) % x.ndim] = scale.size
    # In float32 in place, one array: x - zero point is exact there (at most
    # 17 bits), and the product then rounds once, as in int32 then float.
    values = x.astype(np.float32)
    if zero is not None:
        values -= zero.astype(np.float32).reshape(shape)
    values *= scale.reshape(shape)
    return values


def fold(model: onnx.ModelProto, weights: dict[str, np.ndarray] | None = None) -> int:
    """Changes the model in place: dead nodes dropped, constant subgraphs folded
    into initializers (weights: as OnnxGraph's; those of dropped initializers
    are dropped from it too, and folded weights are detached into it).
    Returns how many nodes were folded."""
    g = OnnxGraph(model, weights)
    nodes = _live_nodes(model.graph)
    constants = dict(g.constants)
    known = set(constants)  # constants, and outputs of nodes to fold
    folded: list[onnx.NodeProto] = []
    rest: list[onnx.NodeProto] = []
    for node in nodes:
        shape = _shape_of(g, node) if node.op_type == "Shape" and node.domain in \
            DEFAULT_DOMAINS else None
        if shape is not None:
            constants[node.output[0]] = shape
            known.add(node.output[0])
        elif _foldable(node, known):
            folded.append(node)
            known.update(node.output)
        else:
            rest.append(node)
    needed = {t for n in rest for t in n.input if t} | {o.name for o in model.graph.output}
    for n in rest:
        needed |= subgraph_names(n)
    for node in folded:
        value = constant_dequantized(node, constants)
        if value is not None:
            constants[node.output[0]] = value
    folded = [n for n in folded if n.output[0] not in constants]
    wanted = [t for n in folded for t in n.output if t in needed]
    if wanted:
        constants.update(_evaluate(model, g, folded, constants, wanted))
    graph = model.graph
    model.ir_version = ir_version(model)
    # Edited in place, not rebuilt: copying a model's weights costs more than the rest.
    _keep(graph.node, lambda n: any(n is r for r in rest))
    _keep(graph.input, lambda i: i.name not in constants)
    _keep(graph.initializer, lambda t: t.name in needed)
    kept = {t.name for t in graph.initializer}
    if weights is not None:
        for t in set(weights) - kept:
            del weights[t]
    # Detached like the model's own weights: a quantized model's weights are
    # DequantizeLinear outputs, and inline they would be copied by every
    # shape inference after this (light_resnet50 in int8: a 657 MB peak).
    graph.initializer.extend(initializer(t, np.asarray(constants[t]), weights)
                             for t in sorted(needed & constants.keys() - kept))
    return len(nodes) - len(rest)


def _keep(field, wanted) -> None:
    """Deletes the items of a repeated protobuf field that are not wanted."""
    for i in reversed([i for i, item in enumerate(field) if not wanted(item)]):
        del field[i]
