"""The table of ONNX operators lowered to native operations.

A handler looks at a node and returns how to lower it, or None when the
node's form is not covered (a non-constant shape, a non-2-D pool...) so that
the node is delegated to onnxruntime instead.  Deciding before lowering
anything lets the compiler group consecutive delegated nodes first.

A pattern covers a chain of nodes that lowers to one operation (a channel
shuffle's Reshape -> Transpose -> Reshape), as a convolution absorbs the
nodes fused into it: tried at every node, it returns the nodes it covers, in
graph order, and how to lower them, which runs where the last one was; the
others are skipped.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import onnx

from acltuner.onnx.graph import OnnxGraph

if TYPE_CHECKING:
    from acltuner.runtime.lower import Lowering

Action = Callable[["Lowering"], None]
Handler = Callable[[OnnxGraph, onnx.NodeProto], Action | None]

Pattern = Callable[[OnnxGraph, onnx.NodeProto], tuple[list[onnx.NodeProto], Action] | None]

HANDLERS: dict[str, Handler] = {}
PATTERNS: list[Pattern] = []


def handles(*op_types: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for op in op_types:
            HANDLERS[op] = fn
        return fn
    return register


def pattern(fn: Pattern) -> Pattern:
    PATTERNS.append(fn)
    return fn


def attrs(node: onnx.NodeProto) -> dict:
    """The node's attributes by name, strings decoded."""
    out = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


def shape(g: OnnxGraph, t: str) -> tuple[int, ...]:
    """The static shape of a tensor the driver has checked (lower._static_float)."""
    dims = g.static_shape(t)
    assert dims is not None, f"'{t}' has no static shape: the driver lowers none such"
    return dims
