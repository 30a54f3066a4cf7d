"""LSTM: one direction at a time on the engine's lstm operation, whose one
output holds every step's hidden state and then the last cell state, so that
ONNX's three outputs are views of it: Y the steps, Y_h the step computed last,
Y_c the cell row."""
from __future__ import annotations

import numpy as np
import onnx

from acltuner.runtime.ir import Value
from acltuner.runtime.layout import identity
from acltuner.runtime.ops.registry import attrs, handles, shape
from acltuner.taskgen.graph import OnnxGraph, node_name

# ONNX's default activations: the only ones the engine's lstm computes.
DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"]
# X, W, R, B, sequence_lens, initial_h, initial_c, P
X, W, R, B, SEQUENCE_LENS, INITIAL_H, INITIAL_C, P = range(8)


def _input(node: onnx.NodeProto, i: int) -> str:
    return node.input[i] if len(node.input) > i else ""


@handles("LSTM")
def _lstm(g: OnnxGraph, node: onnx.NodeProto):
    """Forward or reverse, layout 0, default activations, no clip, coupled gates
    or peepholes, constant weights, every sequence at full length; else None."""
    a = attrs(node)
    direction = a.get("direction", "forward")
    if (direction not in ("forward", "reverse") or a.get("layout", 0) != 0
            or "clip" in a or a.get("input_forget", 0)
            or list(a.get("activations", DEFAULT_ACTIVATIONS)) != DEFAULT_ACTIVATIONS
            or _input(node, P)):
        return None
    weights = [g.constants.get(_input(node, i)) for i in (W, R)]
    if any(w is None for w in weights) or (_input(node, B) and _input(node, B) not in g.constants):
        return None
    seq, batch, size = shape(g, node.input[X])
    hidden = a["hidden_size"]
    w, r = (np.asarray(x, np.float32) for x in weights)
    if w.shape != (1, 4 * hidden, size) or r.shape != (1, 4 * hidden, hidden):
        return None
    lens = _input(node, SEQUENCE_LENS)
    if lens and not (lens in g.constants and np.all(g.constants[lens] == seq)):
        return None
    bias = np.zeros(8 * hidden, np.float32) if not _input(node, B) else \
        np.asarray(g.constants[_input(node, B)], np.float32).reshape(8 * hidden)

    def lower(low) -> None:
        def state(i: int) -> Value:
            name = _input(node, i)
            if not name:
                return low.constant(np.zeros((batch, hidden), np.float32), identity(2))
            return low.view(low.get(name, identity(3)), (batch, hidden))

        step = batch * hidden
        out = low.new(None, (seq + 1, batch, hidden), identity(3))
        low.emit("lstm", node_name(node), f"lstm {direction} {size}->{hidden}",
                 {"x": low.get(node.input[X], identity(3)), "h0": state(INITIAL_H),
                  "c0": state(INITIAL_C), "out": out},
                 hidden=hidden, reverse=int(direction == "reverse"), w=w.reshape(-1),
                 r=r.reshape(-1), bias=bias[:4 * hidden] + bias[4 * hidden:])
        last = 0 if direction == "reverse" else seq - 1
        views = [((seq, 1, batch, hidden), 0), ((1, batch, hidden), last * step),
                 ((1, batch, hidden), seq * step)]
        for name, (dims, offset) in zip(node.output, views):
            if name:
                low.alias(name, Value(out.buffer, dims, identity(len(dims)), offset))
    return lower
