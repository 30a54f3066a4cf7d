"""LSTM: one direction at a time on the engine's lstm operation, whose one
output holds every step's hidden state and then the last cell state, so that
ONNX's three outputs are views of it: Y the steps, Y_h the step computed last,
Y_c the cell row.  A bidirectional LSTM is a forward and a reverse one on the
same input, their outputs joined by concats (Y's directions interleave by
step).  Each direction's input gate sums, x W^T plus both biases, are one
matmul over all steps before its recurrence."""
from __future__ import annotations

import numpy as np
import onnx

from acltuner.engine.graph import matmul_attrs
from acltuner.runtime.ir import Value
from acltuner.runtime.layout import identity
from acltuner.runtime.product_kernels import matmul_ukernel
from acltuner.runtime.ops.registry import attrs, handles, shape
from acltuner.onnx.graph import OnnxGraph, node_name

# ONNX's default activations (per direction): the only ones the engine's lstm
# computes.
DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"]
# X, W, R, B, sequence_lens, initial_h, initial_c, P
X, W, R, B, SEQUENCE_LENS, INITIAL_H, INITIAL_C, P = range(8)


def _input(node: onnx.NodeProto, i: int) -> str:
    return node.input[i] if len(node.input) > i else ""


@handles("LSTM")
def _lstm(g: OnnxGraph, node: onnx.NodeProto):
    """Forward, reverse or bidirectional, layout 0, default activations, no
    clip, coupled gates or peepholes, constant weights, every sequence at full
    length; else None."""
    a = attrs(node)
    direction = a.get("direction", "forward")
    if (direction not in ("forward", "reverse", "bidirectional") or a.get("layout", 0) != 0
            or "clip" in a or a.get("input_forget", 0)
            or list(a.get("activations", [])) not in ([], DEFAULT_ACTIVATIONS,
                                                      DEFAULT_ACTIVATIONS * 2)
            or _input(node, P)):
        return None
    weights = [g.constants.get(_input(node, i)) for i in (W, R)]
    if any(w is None for w in weights) or (_input(node, B) and _input(node, B) not in g.constants):
        return None
    seq, batch, size = shape(g, node.input[X])
    hidden = a["hidden_size"]
    dirs = 2 if direction == "bidirectional" else 1
    w, r = (np.asarray(x, np.float32) for x in weights)
    if w.shape != (dirs, 4 * hidden, size) or r.shape != (dirs, 4 * hidden, hidden):
        return None
    lens = _input(node, SEQUENCE_LENS)
    if lens and not (lens in g.constants and np.all(g.constants[lens] == seq)):
        return None
    bias = np.zeros((dirs, 8 * hidden), np.float32) if not _input(node, B) else \
        np.asarray(g.constants[_input(node, B)], np.float32).reshape(dirs, 8 * hidden)
    reverses = [0, 1] if dirs == 2 else [int(direction == "reverse")]
    step = batch * hidden

    def lower(low) -> None:
        def state(i: int, d: int) -> Value:
            name = _input(node, i)
            if not name:
                return low.constant(np.zeros((batch, hidden), np.float32), identity(2))
            v = low.get(name, identity(3))
            return Value(v.buffer, (batch, hidden), identity(2), v.offset + d * step)

        # Per direction: every step's input gate sums in one GEMM, then the
        # recurrence; views of its output: every step, its last step, its cell row.
        x = low.view(low.get(node.input[X], identity(3)), (seq * batch, size))
        ukernel = matmul_ukernel(seq * batch, size, 4 * hidden, low.target)
        parts = []
        for d, reverse in enumerate(reverses):
            gates = low.new(None, (seq, batch, 4 * hidden), identity(3))
            low.emit("matmul", node_name(node),
                     f"lstm input gates {seq * batch}x{size}x{4 * hidden} {ukernel}",
                     {"x": x, "out": low.view(gates, (seq * batch, 4 * hidden))},
                     **matmul_attrs(ukernel, w[d].T, bias[d, :4 * hidden] + bias[d, 4 * hidden:]))
            out = low.new(None, (seq + 1, batch, hidden), identity(3))
            low.emit("lstm", node_name(node),
                     f"lstm {'reverse' if reverse else 'forward'} {size}->{hidden}",
                     {"x": gates, "h0": state(INITIAL_H, d), "c0": state(INITIAL_C, d),
                      "out": out},
                     hidden=hidden, reverse=reverse, r=r[d].reshape(-1))
            last = 0 if reverse else seq - 1
            parts.append([Value(out.buffer, (seq, 1, batch, hidden), identity(4), 0),
                          Value(out.buffer, (1, batch, hidden), identity(3), last * step),
                          Value(out.buffer, (1, batch, hidden), identity(3), seq * step)])
        for k, name in enumerate(node.output):
            if not name:
                continue
            if dirs == 1:
                low.alias(name, parts[0][k])
                continue
            dims = (seq, 2, batch, hidden) if k == 0 else (2, batch, hidden)
            joined = low.new(name, dims, identity(len(dims)))
            low.emit("concat", node_name(node), "concat",
                     {"ins": [p[k] for p in parts], "out": joined}, axis=1 if k == 0 else 0)
    return lower
