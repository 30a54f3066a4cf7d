"""Operators that move data or only relabel it: Reshape and friends,
Identity, Dropout, Transpose, Concat, Pad, Gather with constant indices,
Slice, Split, and the channel shuffle pattern.

A Transpose only relabels its input's layout: the copy, if any, is left to
the consumer that needs another layout.  A reshape keeps the buffer when the
layout lets its axis groups stay in place (layout.reshaped), and otherwise
transposes its input once, to the layout that makes the result NHWC (4-D)
or ONNX order.  A Slice, and each output of a Split, is a strided copy in
its input's layout (a channel range of an NHWC map: a short copy per
pixel), or no copy at all when it is one contiguous range of its input (a
view).  A channel shuffle (Reshape, Transpose, Reshape) is one gather of
the channels of an NHWC map."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from acltuner.runtime.ir import Value
from acltuner.runtime.layout import NHWC, identity, inverse, preferred, reshaped, \
    source_layout, then
from acltuner.runtime.ops.registry import attrs, handles, pattern, shape
from acltuner.onnx.activation import is_op
from acltuner.onnx.graph import OnnxGraph, node_name


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
        low.alias(node.output[0], x.relabel(dims, layout))
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
        low.alias(node.output[0], x.relabel(shape(g, node.output[0]),
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


# Slice and Split: a span (start, step, size) per ONNX axis.

Span = tuple[int, int, int]


def contiguous_offset(dims: Sequence[int], spans: Sequence[Span]) -> int | None:
    """Where the slice `spans` of a row-major array of `dims` starts, when its
    elements are one contiguous range of the array in order; else None.  It is
    when the axes before the last partial one keep one index, and the last
    partial one steps by 1."""
    whole = [size == d and (d == 1 or (start, step) == (0, 1))
             for d, (start, step, size) in zip(dims, spans)]
    partial = [i for i, w in enumerate(whole) if not w]
    if partial:
        k = partial[-1]
        if any(size != 1 for _, _, size in spans[:k]) or (spans[k][2] > 1 and spans[k][1] != 1):
            return None
    offset, stride = 0, 1
    for d, (start, _, _) in zip(reversed(dims), reversed(spans)):
        offset += start * stride
        stride *= d
    return offset


def _take(low, node: onnx.NodeProto, x: Value, out: str, spans: Sequence[Span]) -> None:
    """Tensor `out` = x sliced by `spans` (ONNX axes), in x's layout: a view of
    x's buffer when that is a contiguous range of it, else a strided copy."""
    stored = [spans[p] for p in x.perm]
    out_shape = tuple(size for _, _, size in spans)
    offset = contiguous_offset(x.dims, stored)
    if offset is not None:
        low.alias(out, Value(x.buffer, out_shape, x.perm, x.offset + offset))
        return
    yv = low.new(out, out_shape, x.perm)
    low.emit("slice", node_name(node), "slice", {"x": x, "out": yv},
             starts=tuple(s[0] for s in stored), steps=tuple(s[1] for s in stored))


# Ends that onnxruntime reads as "past the last index", whichever the direction.
_OPEN_ENDS = (2 ** 31 - 1, 2 ** 63 - 1)


def onnx_slice_range(start: int, end: int, step: int, dim: int) -> range:
    """The indices ONNX Slice takes along an axis of size `dim`, as
    onnxruntime reads the bounds: negative ones count from the end, then a
    start is clamped to [0, dim] ([0, dim - 1] stepping backwards) and an end
    to [0, dim] ([-1, dim]); an end of INT32_MAX or INT64_MAX goes past the
    last index in the step's direction (where shape inference, stepping
    backwards, stops at the end of the axis: such a node is delegated, as
    the shapes differ)."""
    back = step < 0
    start += dim if start < 0 else 0
    start = min(max(start, 0), dim - 1 if back else dim)
    if end in _OPEN_ENDS:
        end = -1 if back else dim
    else:
        end += dim if end < 0 else 0
        end = min(max(end, -1 if back else 0), dim)
    return range(start, end, step)


def _ints(g: OnnxGraph, t: str) -> list[int]:
    return [int(v) for v in g.constants[t].reshape(-1)]


@handles("Slice")
def _slice(g: OnnxGraph, node: onnx.NodeProto):
    dims = shape(g, node.input[0])
    if g.opset < 10:
        a = attrs(node)
        starts, ends = list(a["starts"]), list(a["ends"])
        axes, steps = list(a.get("axes", range(len(starts)))), [1] * len(starts)
    else:
        inputs = list(node.input) + ["", ""]
        if any(t and t not in g.constants for t in inputs[1:5]):
            return None  # bounds computed at run time: onnxruntime's
        starts, ends = _ints(g, inputs[1]), _ints(g, inputs[2])
        axes = _ints(g, inputs[3]) if inputs[3] else list(range(len(starts)))
        steps = _ints(g, inputs[4]) if inputs[4] else [1] * len(starts)
    spans: list[Span] = [(0, 1, d) for d in dims]
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if step == 0:
            return None
        r = onnx_slice_range(start, end, step, dims[axis % len(dims)])
        spans[axis % len(dims)] = (r.start, r.step, len(r))
    if tuple(size for _, _, size in spans) != shape(g, node.output[0]):
        return None  # shape inference read the bounds otherwise (or the output is empty)
    return lambda low: _take(low, node, low.get(node.input[0]), node.output[0], spans)


def split_sizes(g: OnnxGraph, node: onnx.NodeProto, dim: int) -> list[int] | None:
    """The sizes of a Split's outputs along its axis of size `dim`: given as
    an attribute (opsets < 13) or a constant input, or num_outputs chunks of
    ceil(dim / num_outputs), the last one smaller (opset 18), or equal parts;
    None when not constant, or when an output would be empty."""
    a = attrs(node)
    if len(node.input) > 1 and node.input[1]:
        if node.input[1] not in g.constants:
            return None
        sizes = _ints(g, node.input[1])
    elif "split" in a:
        sizes = list(a["split"])
    elif "num_outputs" in a:
        n = a["num_outputs"]
        chunk = math.ceil(dim / n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    else:
        n = len(node.output)
        sizes = [dim // n] * n if dim % n == 0 else []
    ok = len(sizes) == len(node.output) and sum(sizes) == dim and min(sizes, default=0) > 0
    return sizes if ok else None


@handles("Split")
def _split(g: OnnxGraph, node: onnx.NodeProto):
    dims = shape(g, node.input[0])
    axis = attrs(node).get("axis", 0) % len(dims)
    sizes = split_sizes(g, node, dims[axis])
    if sizes is None:
        return None
    starts = np.cumsum([0, *sizes[:-1]])
    used = [(t, int(start), size) for t, start, size in zip(node.output, starts, sizes)
            if t and (t in g.outputs or g.consumers.get(t))]
    if any(shape(g, t) != dims[:axis] + (size,) + dims[axis + 1:] for t, _, size in used):
        return None  # shape inference read the sizes otherwise

    def lower(low) -> None:
        x = low.get(node.input[0])
        for t, start, size in used:
            spans = [(start, 1, size) if i == axis else (0, 1, d) for i, d in enumerate(dims)]
            _take(low, node, x, t, spans)
    return lower


# Channel shuffle.

@pattern
def _channel_shuffle(g: OnnxGraph, node: onnx.NodeProto):
    """Reshape [N, C, H, W] -> [N, G, C/G, H, W], Transpose (0, 2, 1, 3, 4),
    Reshape back to [N, C, H, W] (ShuffleNet), the tensors between them used by
    nothing else: output channel i * G + j is input channel j * C/G + i, one
    gather of the channels of an NHWC map."""
    if not is_op(node, "Reshape"):
        return None
    transpose = g.sole_consumer(node.output[0])
    if not is_op(transpose, "Transpose") or \
            tuple(attrs(transpose).get("perm", ())) != (0, 2, 1, 3, 4):
        return None
    merge = g.sole_consumer(transpose.output[0])
    if not is_op(merge, "Reshape") or any(r.input[1] not in g.constants for r in (node, merge)):
        return None
    x, split, out = (g.static_shape(t) for t in (node.input[0], node.output[0], merge.output[0]))
    if x is None or len(x) != 4 or out != x or split is None or len(split) != 5:
        return None
    n, c, h, w = x
    groups = split[1]
    if split != (n, groups, c // groups, h, w) or c % groups:
        return None
    index = tuple(int(i) for i in np.arange(c).reshape(groups, c // groups).T.reshape(-1))

    def lower(low) -> None:
        xv = low.get(node.input[0], NHWC)
        yv = low.new(merge.output[0], x, NHWC)
        low.emit("gather", node_name(merge), "channel shuffle", {"x": xv, "out": yv},
                 axis=3, indices=index)
    return [node, transpose, merge], lower
