"""Elementwise operators: activations, PRelu, math functions, Pow by a constant,
float Cast, broadcasting arithmetic, Sum/Max/Min/Mean, and chains of
per-channel affine nodes no convolution absorbed (BatchNormalization, Paddle's
Mul and Add constants) with their activation, as one pass.

Outputs keep the layout of the input they take their shape from, so an
activation after a pool or an Add of two feature maps moves no data."""
from __future__ import annotations

import numpy as np
import onnx

from acltuner.runtime.layout import identity
from acltuner.runtime.ops.registry import attrs, handles, pattern, shape
from acltuner.onnx.activation import (ACTIVATION_OPS, activation_node, following_activation,
                                         gelu, is_op, scalar)
from acltuner.onnx.graph import OnnxGraph, channel_affine, node_name

_MATH = {"Sqrt": "sqrt", "Log": "log", "Exp": "exp", "Abs": "abs", "Neg": "neg",
         "Reciprocal": "reciprocal", "Tanh": "tanh", "Softplus": "softplus", "Erf": "erf"}
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
_VARIADIC = {"Sum": "add", "Max": "max", "Min": "min"}


def _unary(node: onnx.NodeProto, op: str, a: float = 0.0, b: float = 0.0):
    def lower(low) -> None:
        x = low.get(node.input[0])
        out = low.new(node.output[0], x.shape, x.perm)
        low.emit("unary", node_name(node), op, {"x": x, "out": out}, op=op, a=a, b=b)
    return lower


@pattern
def _gelu_chain(g: OnnxGraph, node: onnx.NodeProto):
    """GELU's erf or tanh formula (onnx.activation.gelu) that no convolution
    or linear layer absorbed, as one unary pass: tried at its first node, a
    use of x."""
    x = node.input[0] if node.input else ""
    if not x or x in g.constants or x in g.outputs:
        return None
    act = gelu(g, x)
    if act is None or node not in act.nodes:
        return None
    last = act.nodes[-1]

    def lower(low) -> None:
        xv = low.get(x)
        out = low.new(last.output[0], xv.shape, xv.perm)
        low.emit("unary", node_name(last), act.act, {"x": xv, "out": out}, op=act.act)
    return list(act.nodes), lower


@handles(*ACTIVATION_OPS)
def _activation(g: OnnxGraph, node: onnx.NodeProto):
    act = activation_node(g, node)
    if act is not None:
        return _unary(node, act.act, act.a, act.b)
    if node.op_type == "Clip":  # bounds computed at run time: Max, then Min
        bounds = [(op, t) for op, t in (("max", node.input[1:2]), ("min", node.input[2:3]))
                  if t and t[0]]
        return lambda low: _clip_chain(low, g, node, bounds)
    return None


def _clip_chain(low, g: OnnxGraph, node: onnx.NodeProto, bounds) -> None:
    out_shape = shape(g, node.output[0])
    perm = _layout_from(low, g, [node.input[0]], out_shape)
    x = low.operand(node.input[0], len(out_shape), perm)
    for i, (op, (bound,)) in enumerate(bounds):
        out = low.new(node.output[0] if i == len(bounds) - 1 else None, out_shape, perm)
        low.emit("binary", node_name(node), op,
                 {"a": x, "b": low.operand(bound, len(out_shape), perm), "out": out}, op=op)
        x = out


@handles(*_MATH)
def _math(g: OnnxGraph, node: onnx.NodeProto):
    return _unary(node, _MATH[node.op_type])


@handles("Pow")
def _pow(g: OnnxGraph, node: onnx.NodeProto):
    """x ** a constant scalar exponent."""
    exponent = scalar(g, node.input[1], 0.0)
    return None if exponent is None else _unary(node, "pow", exponent)


@handles("Cast")
def _cast(g: OnnxGraph, node: onnx.NodeProto):
    """float32 to float32 moves nothing (other types are not the engine's)."""
    src = g.types.get(node.input[0])
    to = attrs(node).get("to")
    if src is None or src.elem_type != onnx.TensorProto.FLOAT or to != onnx.TensorProto.FLOAT:
        return None
    return lambda low: low.alias(node.output[0], low.get(node.input[0]))


@handles("PRelu")
def _prelu(g: OnnxGraph, node: onnx.NodeProto):
    """A slope per channel (one slope is an activation above)."""
    if activation_node(g, node) is not None:
        return _activation(g, node)
    return lambda low: _binary_chain(low, g, node, "prelu", list(node.input))


def _layout_from(low, g: OnnxGraph, inputs: list[str], out_shape: tuple[int, ...]):
    """The layout of the first computed input with the output's shape (else ONNX order)."""
    for t in inputs:
        if t not in g.constants and shape(g, t) == out_shape:
            return low.get(t).perm
    return identity(len(out_shape))


def _binary_chain(low, g: OnnxGraph, node: onnx.NodeProto, op: str, inputs: list[str],
                  scale: float | None = None) -> None:
    """out = in0 op in1 op in2 ..., numpy broadcasting, left to right; then
    times `scale` if given (Mean: 1 / n, as onnxruntime scales the sum)."""
    out_shape = shape(g, node.output[0])
    rank = len(out_shape)
    perm = _layout_from(low, g, inputs, out_shape)
    acc = low.operand(inputs[0], rank, perm)
    steps = [(op, t) for t in inputs[1:]] + ([("mul", None)] if scale is not None else [])
    for i, (step_op, t) in enumerate(steps, 1):
        b = (low.operand(t, rank, perm) if t is not None
             else low.constant(np.full((1,) * rank, scale, np.float32), perm))
        last = i == len(steps)
        step = out_shape if last else tuple(np.broadcast_shapes(acc.shape, b.shape))
        out = low.new(node.output[0] if last else None, step, perm)
        low.emit("binary", node_name(node), step_op, {"a": acc, "b": b, "out": out}, op=step_op)
        acc = out


@handles(*_BINARY)
def _binary(g: OnnxGraph, node: onnx.NodeProto):
    if "broadcast" in attrs(node):  # opset < 7: broadcasting along an axis, not numpy's
        return None
    return lambda low: _binary_chain(low, g, node, _BINARY[node.op_type], list(node.input))


def _zeros(g: OnnxGraph, t: str) -> bool:
    return t in g.constants and not np.any(g.constants[t])


@pattern
def _div_no_nan(g: OnnxGraph, node: onnx.NodeProto):
    """Where(Equal(b, 0), 0, a / b), TensorFlow's div_no_nan as tf2onnx writes
    it, as one binary pass (Equal's boolean is no tensor of the engine's)."""
    if not is_op(node, "Div") or "broadcast" in attrs(node):
        return None
    a, b = node.input
    where = g.sole_consumer(node.output[0])
    if (not is_op(where, "Where") or where.input[2] != node.output[0]
            or not _zeros(g, where.input[1])):
        return None
    equal = next((n for n in g.consumers.get(b, []) if is_op(n, "Equal")
                  and n.output[0] == where.input[0]), None)
    if (equal is None or g.sole_consumer(equal.output[0]) is not where
            or not _zeros(g, equal.input[1] if equal.input[0] == b else equal.input[0])):
        return None

    def lower(low) -> None:
        _binary_chain(low, g, where, "div_no_nan", [a, b])
    return [node, equal, where], lower


@handles(*_VARIADIC)
def _variadic(g: OnnxGraph, node: onnx.NodeProto):
    if len(node.input) == 1:
        return lambda low: low.alias(node.output[0], low.get(node.input[0]))
    return lambda low: _binary_chain(low, g, node, _VARIADIC[node.op_type], list(node.input))


@handles("Mean")
def _mean(g: OnnxGraph, node: onnx.NodeProto):
    if len(node.input) == 1:
        return _variadic(g, node)
    return lambda low: _binary_chain(low, g, node, "add", list(node.input), 1.0 / len(node.input))


def _channel_last(rank: int) -> tuple[int, ...]:
    """The layout with ONNX's channel axis (1) innermost: NHWC for 4-D."""
    return (0, *range(2, rank), 1)


@pattern
def _affine_chain(g: OnnxGraph, node: onnx.NodeProto):
    """A chain of per-channel affine nodes (BatchNormalization, Add or Mul of a
    per-channel or scalar constant) and the activation after it, as one pass:
    a BatchNormalization on its own, or at least two nodes (a lone Add or Mul
    stays a binary operation, free to keep its input's layout)."""
    data = [t for t in node.input[:1 if is_op(node, "BatchNormalization") else 2]
            if t not in g.constants]
    dims = g.static_shape(data[0]) if len(data) == 1 else None
    if dims is None or len(dims) < 2:
        return None
    x, out, nodes, affine = data[0], data[0], [], None
    step_node: onnx.NodeProto | None = node
    while step_node is not None and \
            (step := channel_affine(g, step_node, out, dims[1], len(dims))) is not None:
        scale, shift = step
        affine = step if affine is None else (affine[0] * scale, affine[1] * scale + shift)
        nodes.append(step_node)
        out = step_node.output[0]
        step_node = g.sole_consumer(out)
    act = following_activation(g, out) if nodes else None
    if act is not None:
        nodes += act.nodes
    if affine is None or (len(nodes) == 1 and not is_op(node, "BatchNormalization")):
        return None
    # Identities alone (Paddle's exports put two in a row before a Concat)
    # are aliases, not a pass copying the tensor (4% of PP-OCRv5's detector).
    if act is None and (affine[0] == 1).all() and (affine[1] == 0).all():
        return None
    perm = _channel_last(len(dims))

    def lower(low) -> None:
        xv = low.get(x, perm)
        scale, shift = (low.constant(v.astype(np.float32), (0,)) for v in affine)
        y = low.new(nodes[-1].output[0], dims, perm)
        low.emit("affine", node_name(nodes[-1]), f"affine {act.act if act else 'none'}",
                 {"x": xv, "scale": scale, "shift": shift, "out": y},
                 act=act.act if act else "none", a=act.a if act else 0.0,
                 b=act.b if act else 0.0)
    return nodes, lower
