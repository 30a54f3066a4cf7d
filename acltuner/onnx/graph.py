"""The convolutions of a shape-inferred ONNX model, each with what it absorbs.

A Conv absorbs a chain of per-channel affine nodes before it (as below; only
a scale where the convolution is padded), and a Conv or ConvTranspose
absorbs, after it, in this order, each only while the tensor between them has
no other consumer and is not a graph output:
  any chain of per-channel affine nodes, folded into weight and bias:
  BatchNormalization (inference, per-channel constants), and Add or Mul of a
  per-channel constant (a bias or scale exported as its own node, as Paddle
  does),
  Add with a tensor of the same shape (the residual the engine adds),
  an activation the engine has (onnx/activation.py: Relu, Clip with
  constant bounds, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Mish, PRelu
  with one slope, and x * gate(x) for SiLU, HardSwish and Mish).
Kernel rows and columns that read only padding are dropped
(conv_attrs.drop_padding_taps).  Non-2-D and non-float32 convolutions, and
those whose attributes give another output size than the model's (shape
inference and onnxruntime disagreeing on a ConvTranspose's padding), are not
tunable: they are listed as skipped rather than refused, because whole-model
runs delegate every node the engine does not run to onnxruntime.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from acltuner.engine.config import ConvShape
from acltuner.onnx.activation import DEFAULT_DOMAINS, following_activation, is_op
from acltuner.onnx.conv_attrs import conv_shape, drop_padding_taps
from acltuner.onnx.errors import ModelError



@dataclass
class ConvNode:
    name: str
    shape: ConvShape  # with the fused epilogue (act, bounds, has_residual)
    conv_weight: np.ndarray  # the node's own float32 weight: OIHW, or IOHW when transposed
    conv_bias: np.ndarray | None  # the node's own float32 bias
    input: str
    output: str  # the last fused node's output
    residual: str | None
    fused: list[str] = field(default_factory=list)  # the input's affine nodes first
    # The fused affine nodes' per-channel (scale, shift), applied after conv_bias.
    affine: tuple[np.ndarray, np.ndarray] | None = None
    # Per input channel (scale, shift) of the affine nodes between `input` and
    # the node, applied to the input before the convolution.
    input_affine: tuple[np.ndarray, np.ndarray] | None = None

    # Folded on each access rather than stored, so that a model's folded
    # weights need not all exist at once (whole-model runs pack one at a time).
    @property
    def weight(self) -> np.ndarray:
        """conv_weight's layout, float32, the affine nodes folded in."""
        w = self.conv_weight
        if self.input_affine is not None:
            w = (self._by_input_channel(w) * self._input_per_tap(self.input_affine[0])
                 ).reshape(w.shape)
        if self.affine is None:
            return w if w is self.conv_weight else w.astype(np.float32)
        if not self.shape.transposed:
            return (w * self.affine[0][:, None, None, None]).astype(np.float32)
        # (c, oc / group, kh, kw): output channel g * ocg + j is group g's column j.
        group = self.shape.group
        scale = self.affine[0].reshape(group, 1, -1, 1, 1)
        return (w.reshape(group, -1, *w.shape[1:]) * scale).reshape(w.shape).astype(np.float32)

    @property
    def bias(self) -> np.ndarray | None:
        """float32, the affine nodes folded in; None when there is neither bias nor affine."""
        bias = self.conv_bias
        if self.input_affine is not None:
            # Each output sums its weights times the shift of the channel they read.
            w = self._by_input_channel(self.conv_weight)
            bias = (0.0 if bias is None else bias) + (
                w * self._input_per_tap(self.input_affine[1])).sum(axis=(2, 3, 4)).reshape(-1)
        if self.affine is None:
            return None if bias is None else bias.astype(np.float32)
        scale, shift = self.affine
        return ((0.0 if bias is None else bias) * scale + shift).astype(np.float32)

    def _by_input_channel(self, w: np.ndarray) -> np.ndarray:
        """An OIHW weight as (group, oc / group, c / group, kh, kw)."""
        return w.reshape(self.shape.group, -1, *w.shape[1:])

    def _input_per_tap(self, values: np.ndarray) -> np.ndarray:
        """Per input channel values, broadcast against _by_input_channel."""
        return values.reshape(self.shape.group, 1, -1, 1, 1)


def node_name(node: onnx.NodeProto) -> str:
    return node.name or node.output[0]


class OnnxGraph:
    """Consumers, constants and inferred types of a model's main graph.

    weights: arrays of initializers whose data was taken out of the model
    (load_model_detached), shared rather than copied."""

    def __init__(self, model: onnx.ModelProto, weights: Mapping[str, np.ndarray] | None = None):
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import
                           if o.domain in DEFAULT_DOMAINS), 1)
        self.outputs = {o.name for o in graph.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        self.producer = {t: node for node in graph.node for t in node.output if t}
        for node in graph.node:
            for t in node.input:
                if t:
                    self.consumers[t].append(node)
            # A subgraph (If, Loop) may read any outer tensor: count it as a consumer.
            for t in subgraph_names(node):
                self.consumers[t].append(node)
        weights = weights or {}
        self.constants = {t.name: weights[t.name] if t.name in weights else numpy_helper.to_array(t)
                          for t in graph.initializer}
        for node in graph.node:
            if is_op(node, "Constant") and node.attribute:
                value = helper.get_attribute_value(node.attribute[0])
                if isinstance(value, TensorProto):
                    self.constants[node.output[0]] = numpy_helper.to_array(value)
                elif isinstance(value, (int, float, list)):  # value_float(s) / value_int(s)
                    self.constants[node.output[0]] = np.asarray(value)
        self.types = {vi.name: vi.type.tensor_type
                      for vi in [*graph.input, *graph.value_info, *graph.output]}

    def rank(self, t: str) -> int | None:
        tt = self.types.get(t)
        return len(tt.shape.dim) if tt is not None and tt.HasField("shape") else None

    def static_shape(self, t: str) -> tuple[int, ...] | None:
        tt = self.types.get(t)
        if tt is None or not tt.HasField("shape"):
            return None
        dims = tuple(d.dim_value for d in tt.shape.dim)
        return dims if all(d > 0 for d in dims) else None

    def sole_consumer(self, t: str) -> onnx.NodeProto | None:
        users = self.consumers.get(t, [])
        return users[0] if len(users) == 1 and t not in self.outputs else None


def subgraph_names(node: onnx.NodeProto) -> set[str]:
    """The tensors of enclosing graphs that the node's subgraphs (If, Loop,
    Scan bodies, at any depth) read: not those a subgraph computes itself or
    takes as its own inputs and initializers."""
    names: set[str] = set()
    for attr in node.attribute:
        for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
            local = {i.name for i in g.input} | {t.name for t in g.initializer}
            for n in g.node:
                names.update(t for t in n.input if t and t not in local)
                names |= subgraph_names(n) - local
                local.update(n.output)
    return names


def bn_affine(g: OnnxGraph, bn: onnx.NodeProto, oc: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) of an inference BatchNormalization with per-channel constants, else None."""
    attrs = {a.name: helper.get_attribute_value(a) for a in bn.attribute}
    # training_mode / is_test=0 (opset < 7) / extra outputs: statistics are computed, not constant;
    # spatial=0 (opsets 7-8): per-pixel parameters.
    if (attrs.get("training_mode", 0) or attrs.get("spatial", 1) == 0
            or (g.opset < 7 and not attrs.get("is_test", 0)) or any(bn.output[1:])):
        return None
    params = [g.constants.get(t) for t in bn.input[1:5]]
    per_channel = [p.astype(np.float64) for p in params if p is not None and p.shape == (oc,)]
    if len(per_channel) < len(params):
        return None
    gamma, beta, mean, var = per_channel
    scale = gamma / np.sqrt(var + attrs.get("epsilon", 1e-5))
    return scale, beta - mean * scale


def _constant(g: OnnxGraph, node: onnx.NodeProto, index: int, what: str) -> np.ndarray | None:
    t = node.input[index] if len(node.input) > index else ""
    if not t:
        return None
    if t not in g.constants:
        raise ModelError(f"{node.op_type} node '{node_name(node)}': {what} '{t}' is not a constant "
                         f"(initializer or Constant node); only fixed weights can be tuned")
    return np.asarray(g.constants[t], dtype=np.float32)  # shared, not copied: never written


def _channel_constant(g: OnnxGraph, node: onnx.NodeProto, out: str, oc: int,
                      rank: int) -> np.ndarray | None:
    """The (oc,) float64 values of node's constant operand (the one that is not
    out) when it broadcasts per channel (a scalar, (oc, 1, 1), (1, oc, 1, 1)...)."""
    if len(node.input) != 2 or list(node.input).count(out) != 1:
        return None
    value = g.constants.get(node.input[1] if node.input[0] == out else node.input[0])
    per_channel = (1, oc) + (1,) * (rank - 2)
    if value is None or value.dtype != np.float32 or value.ndim > rank:
        return None
    try:
        if np.broadcast_shapes(value.shape, per_channel) != per_channel:
            return None
    except ValueError:
        return None
    return np.broadcast_to(value, per_channel).reshape(oc).astype(np.float64)


def channel_affine(g: OnnxGraph, node: onnx.NodeProto, out: str, oc: int,
                    rank: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) of a per-channel affine node reading out, else None.  An
    Identity is the affine 1, 0 (Paddle's exports put one, a cast to float32,
    between a BatchNormalization and its GELU: it must not stop the fusion)."""
    if is_op(node, "BatchNormalization"):
        return bn_affine(g, node, oc)
    if is_op(node, "Identity"):
        return np.ones(oc), np.zeros(oc)
    if not (is_op(node, "Add") or is_op(node, "Mul")):
        return None
    value = _channel_constant(g, node, out, oc, rank)
    if value is None:
        return None
    return (np.ones(oc), value) if node.op_type == "Add" else (value, np.zeros(oc))


def _input_affine(g: OnnxGraph, x: str, shape: ConvShape, taken: set[str]
                  ) -> tuple[str, tuple[np.ndarray, np.ndarray], list[str]] | None:
    """The tensor before the chain of per-channel affine nodes making input x
    (a scale and bias after an activation, as PP-LCNetV3's learnable affine
    blocks), their combined (scale, shift) and their names in graph order;
    None when there is none to fold.  Each must have no other reader, nor
    belong to another convolution (`taken`).  A padded convolution folds only
    a scale: its padding is 0 after the affine, and a shift would move it."""
    scale, shift, rank = np.ones(shape.c), np.zeros(shape.c), g.rank(x)
    names: list[str] = []
    while rank is not None and (p := g.producer.get(x)) is not None and \
            node_name(p) not in taken and g.sole_consumer(p.output[0]) is not None:
        data = [t for t in p.input if t and t not in g.constants]
        if len(data) != 1 or g.static_shape(data[0]) != g.static_shape(x) or \
                g.types[data[0]].elem_type != TensorProto.FLOAT:
            break
        step = channel_affine(g, p, data[0], shape.c, rank)
        if step is None:
            break
        scale, shift = scale * step[0], scale * step[1] + shift
        names.insert(0, node_name(p))
        x = data[0]
    padded = shape.pad_top or shape.pad_left or shape.pad_bottom or shape.pad_right
    if (scale == 1).all() and (shift == 0).all() or padded and (shift != 0).any():
        return None
    return x, (scale, shift), names


def _conv_node(g: OnnxGraph, node: onnx.NodeProto, claimed: set[str],
               taken: set[str]) -> ConvNode | str:
    """The node with its fused epilogue, or why it is not tunable."""
    name, x, op = node_name(node), node.input[0], node.op_type
    rank = g.rank(x)
    if rank is not None and rank not in (3, 4):
        return f"{op} node '{name}': {rank - 2}-D convolution, not tunable (left to onnxruntime)"
    if g.types.get(x) is not None and g.types[x].elem_type != TensorProto.FLOAT:
        dtype = TensorProto.DataType.Name(g.types[x].elem_type).lower()
        return f"{op} node '{name}': {dtype} convolution, not tunable (the engine is float32)"
    x_shape = g.static_shape(x)
    if x_shape is None:
        raise ModelError(f"{op} node '{name}': input '{x}' has no static shape after shape "
                         f"inference")
    weight, bias = _constant(g, node, 1, "weight"), _constant(g, node, 2, "bias")
    if weight is None:
        raise ModelError(f"{op} node '{name}' has no weight input")
    base = conv_shape(node, x_shape, weight.shape)
    declared = g.static_shape(node.output[0])
    n, oh, ow, oc = base.output_shape
    given = [n, oc, oh, ow] if len(x_shape) == 4 else [n, oc, ow]
    if declared is not None and list(declared) != given:
        return (f"{op} node '{name}': the model says its output is {list(declared)}, its "
                f"attributes give {given}; not tunable (left to onnxruntime)")
    base, weight = drop_padding_taps(base, weight.reshape(base.weight_shape))
    fused: list[str] = []
    out = node.output[0]
    input_affine = None
    if not base.transposed and (found := _input_affine(g, x, base, taken)) is not None:
        x, input_affine, fused = found

    affine = None
    while (nxt := g.sole_consumer(out)) is not None:
        step = channel_affine(g, nxt, out, base.oc, len(x_shape))
        if step is None:
            break
        scale, shift = step
        affine = step if affine is None else (affine[0] * scale, affine[1] * scale + shift)
        fused.append(node_name(nxt))
        out = nxt.output[0]

    residual = None
    add = g.sole_consumer(out)
    # A Sum of two tensors is an Add (Caffe2 exports write residuals so).
    if (is_op(add, "Add") or (is_op(add, "Sum") and len(add.input) == 2)) and \
            add.output[0] not in claimed:
        other = add.input[1] if add.input[0] == out else add.input[0]
        if g.static_shape(other) == g.static_shape(out) and \
                g.types[other].elem_type == TensorProto.FLOAT:
            # Add(a, b) of two convolutions: only the first one claims it.
            claimed.add(add.output[0])
            residual = other
            fused.append(node_name(add))
            out = add.output[0]

    act = following_activation(g, out)
    if act is not None:
        fused += [node_name(n) for n in act.nodes]
        out = act.nodes[-1].output[0]

    shape = dataclasses.replace(base, has_residual=residual is not None,
                                **(act.shape_fields if act else {}))
    # A 1-D convolution's OIK (IOK) weight is the OIHW (IOHW) of height 1.
    taken.update(fused)
    return ConvNode(name, shape, weight.reshape(shape.weight_shape), bias, x, out, residual,
                    fused, affine, input_affine)


def conv_nodes(model: onnx.ModelProto, weights: Mapping[str, np.ndarray] | None = None
               ) -> tuple[list[ConvNode], list[str]]:
    """Every tunable Conv and ConvTranspose of a shape-inferred model in graph
    order, and one line for each that is not tunable (weights: as OnnxGraph's)."""
    g = OnnxGraph(model, weights)
    nodes: list[ConvNode] = []
    skipped: list[str] = []
    claimed: set[str] = set()
    taken: set[str] = set()  # the nodes earlier convolutions fused
    for node in model.graph.node:
        if is_op(node, "Conv") or is_op(node, "ConvTranspose"):
            conv = _conv_node(g, node, claimed, taken)
            if isinstance(conv, str):
                skipped.append(conv)
            else:
                nodes.append(conv)
    return nodes, skipped
