"""Elementwise operators: activations, broadcasting arithmetic, Sum/Max/Min, and a
BatchNormalization no convolution absorbed (a per-channel Mul then Add).

Outputs keep the layout of the input they take their shape from, so an
activation after a pool or an Add of two feature maps moves no data."""
from __future__ import annotations

import numpy as np
import onnx

from acltuner.runtime.layout import identity
from acltuner.runtime.ops.registry import attrs, handles, shape
from acltuner.taskgen.graph import bn_affine, clip_bounds, OnnxGraph, node_name

_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "HardSwish": "hard_swish"}
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
_VARIADIC = {"Sum": "add", "Max": "max", "Min": "min"}


def _unary(node: onnx.NodeProto, op: str, a: float = 0.0, b: float = 0.0):
    def lower(low) -> None:
        x = low.get(node.input[0])
        out = low.new(node.output[0], x.shape, x.perm)
        low.emit("unary", node_name(node), op, {"x": x, "out": out}, op=op, a=a, b=b)
    return lower


@handles(*_UNARY)
def _activation(g: OnnxGraph, node: onnx.NodeProto):
    return _unary(node, _UNARY[node.op_type])


@handles("LeakyRelu")
def _leaky_relu(g: OnnxGraph, node: onnx.NodeProto):
    return _unary(node, "leaky_relu", attrs(node).get("alpha", 0.01))


@handles("HardSigmoid")
def _hard_sigmoid(g: OnnxGraph, node: onnx.NodeProto):
    a = attrs(node)
    return _unary(node, "hard_sigmoid", a.get("alpha", 0.2), a.get("beta", 0.5))


@handles("Clip")
def _clip(g: OnnxGraph, node: onnx.NodeProto):
    bounds = clip_bounds(g, node)
    return None if bounds is None else _unary(node, "clip", *bounds)


def _layout_from(low, g: OnnxGraph, inputs: list[str], out_shape: tuple[int, ...]):
    """The layout of the first computed input with the output's shape (else ONNX order)."""
    for t in inputs:
        if t not in g.constants and shape(g, t) == out_shape:
            return low.get(t).perm
    return identity(len(out_shape))


def _binary_chain(low, g: OnnxGraph, node: onnx.NodeProto, op: str, inputs: list[str]) -> None:
    """out = in0 op in1 op in2 ..., numpy broadcasting, left to right."""
    out_shape = shape(g, node.output[0])
    rank = len(out_shape)
    perm = _layout_from(low, g, inputs, out_shape)
    acc = low.operand(inputs[0], rank, perm)
    for i, t in enumerate(inputs[1:], 2):
        b = low.operand(t, rank, perm)
        last = i == len(inputs)
        step = out_shape if last else tuple(np.broadcast_shapes(acc.shape, b.shape))
        out = low.new(node.output[0] if last else None, step, perm)
        low.emit("binary", node_name(node), op, {"a": acc, "b": b, "out": out}, op=op)
        acc = out


@handles(*_BINARY)
def _binary(g: OnnxGraph, node: onnx.NodeProto):
    if "broadcast" in attrs(node):  # opset < 7: broadcasting along an axis, not numpy's
        return None
    return lambda low: _binary_chain(low, g, node, _BINARY[node.op_type], list(node.input))


@handles(*_VARIADIC)
def _variadic(g: OnnxGraph, node: onnx.NodeProto):
    if len(node.input) == 1:
        return lambda low: low.alias(node.output[0], low.get(node.input[0]))
    return lambda low: _binary_chain(low, g, node, _VARIADIC[node.op_type], list(node.input))


@handles("BatchNormalization")
def _batch_norm(g: OnnxGraph, node: onnx.NodeProto):
    dims = shape(g, node.input[0])
    affine = bn_affine(g, node, dims[1]) if len(dims) >= 2 else None
    if affine is None:
        return None
    per_channel = (1, dims[1]) + (1,) * (len(dims) - 2)

    def lower(low) -> None:
        x = low.get(node.input[0])
        scale, shift = (low.constant(v.reshape(per_channel), x.perm) for v in affine)
        scaled = low.new(None, x.shape, x.perm)
        low.emit("binary", node_name(node), "mul", {"a": x, "b": scale, "out": scaled}, op="mul")
        out = low.new(node.output[0], x.shape, x.perm)
        low.emit("binary", node_name(node), "add", {"a": scaled, "b": shift, "out": out}, op="add")
    return lower
