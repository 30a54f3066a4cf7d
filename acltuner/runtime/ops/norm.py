"""LayerNormalization: the ONNX operator (opset 17) and the chain exporters
write for it, ReduceMean -> Sub -> Pow (or Mul by itself) -> ReduceMean ->
Add epsilon -> Sqrt -> Div, with the Mul and Add of constants after it, as
one layer_norm operation over rows of the normalised axes.

The engine normalises the innermost axis: the input keeps its layout when
the normalised axes already lie innermost (the last axis of tokens, and the
channels of an NHWC map, so a channel-first LayerNorm moves no data) and is
transposed once otherwise.  The scale and shift are laid out in the order
the normalised axes have in memory."""
from __future__ import annotations

import math
from typing import TypeGuard

import numpy as np
import onnx

from acltuner.runtime.ops.reduce import _axes as reduced_axes
from acltuner.runtime.ops.registry import attrs, handles, pattern, shape
from acltuner.onnx.activation import is_op, scalar
from acltuner.onnx.graph import OnnxGraph, node_name


def _lower(low, label: str, x: str, out: str, axes: list[int], scale: np.ndarray,
           shift: np.ndarray, epsilon: float) -> None:
    """out = layer norm of x over `axes` (sorted); scale and shift hold the
    normalised block's values in ONNX order (dims[axes])."""
    dims = shape(low.g, x)
    xv = low.get(x)
    wide = [p for p in xv.perm if dims[p] != 1]  # the axes that decide memory order
    normalised = [p for p in wide if p in axes]
    if wide[len(wide) - len(normalised):] != normalised:
        xv = low.get(x, tuple(p for p in xv.perm if p not in axes)
                     + tuple(p for p in xv.perm if p in axes))
    held = [p for p in xv.perm if p in axes]  # their order in memory
    d = math.prod(dims[a] for a in axes)

    def in_memory_order(values: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(values.transpose([axes.index(a) for a in held]).reshape(d))

    yv = low.new(out, dims, xv.perm)
    rows = xv.size // d
    low.emit("layer_norm", label, "layer_norm",
             {"x": low.view(xv, (rows, d)),
              "scale": low.constant(in_memory_order(scale), (0,)),
              "shift": low.constant(in_memory_order(shift), (0,)),
              "out": low.view(yv, (rows, d))}, epsilon=epsilon)


def _block(dims: tuple[int, ...], axes: list[int], c: np.ndarray) -> np.ndarray | None:
    """Constant c (numpy broadcasting against dims) as values over the
    normalised block, dims[axes]; None when it varies along another axis or
    would widen the tensor."""
    if c.ndim > len(dims):
        return None
    # Annotated: numpy's stubs give a reshape to a tuple[int, ...] the 0-D shape tuple[()].
    padded: np.ndarray = c.reshape((1,) * (len(dims) - c.ndim) + c.shape)
    if any(n != 1 and (i not in axes or n != dims[i]) for i, n in enumerate(padded.shape)):
        return None
    block = np.broadcast_to(padded, dims)[tuple(slice(None) if i in axes else 0
                                                for i in range(len(dims)))]
    return np.asarray(block, np.float32)


@handles("LayerNormalization")
def _layer_norm(g: OnnxGraph, node: onnx.NodeProto):
    a = attrs(node)
    dims = shape(g, node.input[0])
    axis = a.get("axis", -1) % len(dims)
    axes = list(range(axis, len(dims)))
    if any(t and (t in g.outputs or g.consumers.get(t)) for t in node.output[1:]):
        return None  # its Mean and InvStdDev are used
    inputs = list(node.input) + [""]
    scale = g.constants.get(inputs[1])
    shift = g.constants.get(inputs[2]) if inputs[2] else np.zeros(1, np.float32)
    if scale is None or shift is None:
        return None
    scale, shift = (_block(dims, axes, c) for c in (scale, shift))
    if scale is None or shift is None:
        return None
    epsilon = float(a.get("epsilon", 1e-5))
    return lambda low: _lower(low, node_name(node), node.input[0], node.output[0], axes, scale,
                              shift, epsilon)


def _mean_over(node: onnx.NodeProto | None, g: OnnxGraph, x: str, rank: int,
               axes: list[int]) -> TypeGuard[onnx.NodeProto]:
    """node is ReduceMean(x) over `axes` of the rank-`rank` x, dims kept."""
    return (is_op(node, "ReduceMean") and node.input[0] == x
            and attrs(node).get("keepdims", 1) == 1 and reduced_axes(g, node, rank) == axes)


def _squares(g: OnnxGraph, node: onnx.NodeProto, d: str) -> bool:
    if is_op(node, "Pow"):
        return node.input[0] == d and scalar(g, node.input[1], None) == 2.0
    return is_op(node, "Mul") and list(node.input) == [d, d]


def _constant_operand(g: OnnxGraph, node: onnx.NodeProto | None, op: str, t: str
                      ) -> np.ndarray | None:
    """The constant other operand of node = t op constant (either order)."""
    if not is_op(node, op) or t not in node.input or len(node.input) != 2:
        return None
    other = node.input[1] if node.input[0] == t else node.input[0]
    return g.constants.get(other)


@pattern
def _layer_norm_chain(g: OnnxGraph, node: onnx.NodeProto):
    """The exporters' LayerNorm, tried at its first ReduceMean: x - mean over
    `axes`, its squares' mean plus epsilon, square-rooted, divides it; then
    a Mul and an Add of constants along the normalised axes, if present."""
    if not is_op(node, "ReduceMean") or node.input[0] in g.constants:
        return None
    x = node.input[0]
    dims = g.static_shape(x)
    if not dims:
        return None
    axes = reduced_axes(g, node, len(dims))
    if not axes or not _mean_over(node, g, x, len(dims), axes):
        return None
    sub = g.sole_consumer(node.output[0])
    if not (is_op(sub, "Sub") and list(sub.input) == [x, node.output[0]]):
        return None
    d = sub.output[0]
    users = g.consumers.get(d, [])
    square = next((u for u in users if _squares(g, u, d)), None)
    # d's uses: the square (listed twice when it is d * d) and the division
    if square is None or d in g.outputs or len(users) != (3 if is_op(square, "Mul") else 2):
        return None
    divide = next(u for u in users if u is not square)
    var = g.sole_consumer(square.output[0])
    if not _mean_over(var, g, square.output[0], len(dims), axes):
        return None
    add = g.sole_consumer(var.output[0])
    eps = _constant_operand(g, add, "Add", var.output[0])
    if add is None or eps is None or eps.size != 1:
        return None
    root = g.sole_consumer(add.output[0])
    if not (is_op(root, "Sqrt") and is_op(divide, "Div")
            and list(divide.input) == [d, root.output[0]]
            and g.sole_consumer(root.output[0]) is divide):
        return None
    nodes = [node, sub, square, var, add, root, divide]
    out = divide.output[0]
    block = [dims[a] for a in axes]
    scale, shift = np.ones(block, np.float32), np.zeros(block, np.float32)
    for op in ("Mul", "Add"):
        step = g.sole_consumer(out)
        c = _constant_operand(g, step, op, out)
        if step is None or c is None or g.static_shape(step.output[0]) != dims:
            continue
        values = _block(dims, axes, c)
        if values is None:
            continue
        if op == "Mul":
            scale = values
        else:
            shift = values
        nodes.append(step)
        out = step.output[0]
    epsilon = float(eps.reshape(-1)[0])
    return nodes, lambda low: _lower(low, node_name(nodes[-1]), x, out, axes, scale, shift,
                                     epsilon)
