"""ReduceSum / Mean / Max / Min over constant axes.

The engine reduces axes adjacent in the stored order, so the input keeps its
layout when they already are (the last axis of a LayerNorm, the channels of
an NHWC map) and is transposed once otherwise, kept axes first.  The output
has the input's layout with the reduced dims 1; without keepdims it is that
buffer seen without them.
"""
from __future__ import annotations

import onnx

from acltuner.runtime.layout import reshaped
from acltuner.runtime.ops.registry import attrs, handles, shape
from acltuner.onnx.graph import OnnxGraph, node_name

_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min"}


def _axes(g: OnnxGraph, node: onnx.NodeProto, rank: int) -> list[int] | None:
    """The reduced axes (sorted, non-negative); [] for none; None when not constant."""
    a = attrs(node)
    axes = a.get("axes")
    if len(node.input) > 1 and node.input[1]:  # an input from opset 13 (Sum) / 18 (the rest)
        if node.input[1] not in g.constants:
            return None
        axes = g.constants[node.input[1]].reshape(-1).tolist()
    if not axes:
        return [] if a.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted({int(ax) % rank for ax in axes})


@handles(*_REDUCE)
def _reduce(g: OnnxGraph, node: onnx.NodeProto):
    dims = shape(g, node.input[0])
    axes = _axes(g, node, len(dims))
    if axes is None:
        return None
    if not axes:
        return lambda low: low.alias(node.output[0], low.get(node.input[0]))
    return reduce_lowering(node, dims, axes, _REDUCE[node.op_type],
                           bool(attrs(node).get("keepdims", 1)))


def reduce_lowering(node: onnx.NodeProto, dims: tuple[int, ...], axes: list[int], op: str,
                    keepdims: bool):
    """The lowering of node as the engine's reduce `op` of its first input over
    `axes` (sorted, non-empty) into its first output."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(dims))

    def lower(low) -> None:
        x = low.get(node.input[0])
        at = sorted(x.perm.index(ax) for ax in axes)
        if at != list(range(at[0], at[0] + len(at))):
            x = low.get(node.input[0], tuple(i for i in range(len(dims)) if i not in axes)
                        + tuple(axes))
            at = list(range(len(dims) - len(axes), len(dims)))
        out = low.new(node.output[0] if keepdims else None, kept, x.perm)
        low.emit("reduce", node_name(node), op, {"x": x, "out": out}, op=op, axes=at)
        if not keepdims:
            squeezed = tuple(d for i, d in enumerate(dims) if i not in axes)
            low.alias(node.output[0], out.relabel(squeezed, reshaped(kept, x.perm, squeezed)))
    return lower
