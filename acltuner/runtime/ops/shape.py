"""Operators that move data or only relabel it: Reshape and friends,
Identity, Dropout, Transpose, Concat, Pad, Gather with constant indices.

A Transpose only relabels its input's layout: the copy, if any, is left to
the consumer that needs another layout.  A reshape keeps the buffer when the
layout lets its axis groups stay in place (layout.reshaped), and otherwise
transposes its input once, to the layout that makes the result NHWC (4-D)
or ONNX order."""
from __future__ import annotations

import onnx

from acltuner.runtime.ir import Value
from acltuner.runtime.layout import identity, inverse, preferred, reshaped, source_layout, \
    then
from acltuner.runtime.ops.registry import attrs, handles, shape
from acltuner.taskgen.graph import OnnxGraph, node_name


def _reshape(g: OnnxGraph, node: onnx.NodeProto):
    """Output = the input's elements in ONNX order, with the inferred output shape."""
    dims = shape(g, node.output[0])

    def lower(low) -> None:
        x = low.get(node.input[0])
        layout = reshaped(x.shape, x.perm, dims)
        if layout is None:
            # One transpose of the input, to the layout that makes the output
            # NHWC (4-D) or ONNX order: e.g. after a channel shuffle.
            layout = preferred(len(dims))
            source = source_layout(x.shape, dims, layout)
            if source is None:
                source, layout = identity(len(x.shape)), identity(len(dims))
            x = low.get(node.input[0], source)
        low.alias(node.output[0], Value(x.buffer, dims, layout))
    return lower


@handles("Reshape")
def _reshape_node(g: OnnxGraph, node: onnx.NodeProto):
    # A shape computed at run time stays with onnxruntime.
    return _reshape(g, node) if node.input[1] in g.constants else None


@handles("Squeeze", "Unsqueeze")
def _squeeze(g: OnnxGraph, node: onnx.NodeProto):
    axes = node.input[1] if len(node.input) > 1 else ""
    return _reshape(g, node) if not axes or axes in g.constants else None


@handles("Flatten")
def _flatten(g: OnnxGraph, node: onnx.NodeProto):
    return _reshape(g, node)


@handles("Identity")
def _identity(g: OnnxGraph, node: onnx.NodeProto):
    return lambda low: low.alias(node.output[0], low.get(node.input[0]))


@handles("Dropout")
def _dropout(g: OnnxGraph, node: onnx.NodeProto):
    """The identity at inference, unless training_mode may be on (a used mask is
    boolean: the node is delegated before this)."""
    training = node.input[2] if len(node.input) > 2 else ""
    if training and (training not in g.constants or g.constants[training].any()):
        return None
    return _identity(g, node)


@handles("Transpose")
def _transpose(g: OnnxGraph, node: onnx.NodeProto):
    rank = len(shape(g, node.input[0]))
    perm = tuple(attrs(node).get("perm", range(rank - 1, -1, -1)))

    def lower(low) -> None:
        x = low.get(node.input[0])
        # The output in layout L is x's buffer when perm then L equals x's layout.
        low.alias(node.output[0], Value(x.buffer, shape(g, node.output[0]),
                                        then(inverse(perm), x.perm)))
    return lower


@handles("Concat")
def _concat(g: OnnxGraph, node: onnx.NodeProto):
    out = shape(g, node.output[0])
    axis = attrs(node)["axis"] % len(out)

    def lower(low) -> None:
        computed = [t for t in node.input if t not in g.constants]
        perm = low.get(computed[0]).perm if computed else identity(len(out))
        ins = [low.operand(t, len(out), perm) for t in node.input if t]
        yv = low.new(node.output[0], out, perm)
        low.emit("concat", node_name(node), "concat", {"ins": ins, "out": yv},
                 axis=perm.index(axis))
    return lower


_PAD_MODES = ("constant", "edge", "reflect")  # negative pads crop, in every mode


@handles("Pad")
def _pad(g: OnnxGraph, node: onnx.NodeProto):
    a = attrs(node)
    rank = len(shape(g, node.input[0]))
    if g.opset < 11:
        pads, value = list(a["pads"]), a.get("value", 0.0)
    else:
        inputs = list(node.input) + ["", ""]
        if any(t and t not in g.constants for t in inputs[1:4]):
            return None
        pads = [int(p) for p in g.constants[inputs[1]].reshape(-1)]
        value = float(g.constants[inputs[2]].reshape(-1)[0]) if inputs[2] else 0.0
        if inputs[3]:  # opset 18: pads for these axes only
            axes = [int(x) % rank for x in g.constants[inputs[3]].reshape(-1)]
            full = [0] * (2 * rank)
            for i, ax in enumerate(axes):
                full[ax], full[rank + ax] = pads[i], pads[len(axes) + i]
            pads = full
    mode = a.get("mode", "constant")
    if mode not in _PAD_MODES:  # wrap
        return None

    def lower(low) -> None:
        x = low.get(node.input[0])
        yv = low.new(node.output[0], shape(g, node.output[0]), x.perm)
        begins = [pads[p] for p in x.perm]
        ends = [pads[rank + p] for p in x.perm]
        low.emit("pad", node_name(node), f"{mode} pad", {"x": x, "out": yv},
                 mode=mode, value=value, pads=tuple(begins + ends))
    return lower


@handles("Gather")
def _gather(g: OnnxGraph, node: onnx.NodeProto):
    """Constant indices of any rank, gathered flat along the axis in the data's
    own layout: the indices' axes take the axis's place in it (a scalar index
    drops it)."""
    indices = g.constants.get(node.input[1])
    if indices is None or indices.size == 0:
        return None
    rank = len(shape(g, node.input[0]))
    axis = attrs(node).get("axis", 0) % rank
    q = indices.ndim

    def lower(low) -> None:
        x = low.get(node.input[0])
        perm = []
        for p in x.perm:
            perm += [p] if p < axis else list(range(axis, axis + q)) if p == axis else [p + q - 1]
        yv = low.new(node.output[0], shape(g, node.output[0]), tuple(perm))
        held = list(x.dims)
        held[x.perm.index(axis)] = indices.size
        low.emit("gather", node_name(node), "gather", {"x": x, "out": low.view(yv, tuple(held))},
                 axis=x.perm.index(axis), indices=[int(i) for i in indices.reshape(-1)])
    return lower
