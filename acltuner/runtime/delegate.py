"""Delegated segments: nodes the native engine does not run, as onnxruntime
sub-models.

A segment's sub-model holds its nodes and the constants they read; its inputs
and outputs are the tensors crossing its boundary, in ONNX layout (the native
stages convert on the way in and out).  Sessions are created once, at load,
with threads that sleep when idle (onnx.onnxrt.session): one, unless the
segment's arithmetic is worth waking more for.
"""
from __future__ import annotations

import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

from acltuner.runtime.ir import DelegatedSegment
from acltuner.onnx.onnxrt import ir_version, session, value_info
from acltuner.runtime.profile import DELEGATED, DELEGATED_OP, ProfileEntry
from acltuner.onnx.graph import OnnxGraph, node_name, subgraph_names


# A segment of fewer floating-point operations runs on one thread: waking
# sleeping threads costs tens of microseconds per parallel section, about what
# one core computes of such a segment in that time.
PARALLEL_FLOPS = 2_000_000


def _flops(g: OnnxGraph, node: onnx.NodeProto) -> int:
    """About how many floating-point operations a node takes, from its
    inferred shapes: 2 x outputs x the reduced length for products, the
    gate products of recurrent layers, one per output element otherwise (0
    where the shapes are unknown)."""
    out = g.static_shape(node.output[0]) if node.output else None
    if out is None:
        return 0
    elements = int(np.prod(out))

    def shape(t: str) -> tuple[int, ...] | None:  # weights are constants, not typed values
        return g.constants[t].shape if t in g.constants else g.static_shape(t)
    if node.op_type in ("MatMul", "Gemm") and len(node.input) >= 2:
        a = shape(node.input[0])
        transposed = any(at.name == "transA" and at.i for at in node.attribute)
        return 2 * elements * (a[-2 if transposed else -1] if a else 1)
    if node.op_type in ("Conv", "ConvTranspose") and len(node.input) >= 2:
        w = shape(node.input[1])
        return 2 * elements * (int(np.prod(w[1:])) if w else 1)
    if node.op_type in ("LSTM", "GRU", "RNN") and len(node.input) >= 3:
        # Each step multiplies its input and the last hidden state by every
        # direction's gate weights, W [dirs, gates x H, I] and R [.., H].
        x, w, r = (shape(t) for t in node.input[:3])
        if x and w and r:
            return 2 * x[0] * x[1] * w[0] * w[1] * (w[2] + r[2])
    return elements


def segment_threads(g: OnnxGraph, seg: DelegatedSegment, threads: int) -> int:
    """`threads` for a segment of PARALLEL_FLOPS or more, else 1."""
    return threads if sum(_flops(g, n) for n in seg.nodes) >= PARALLEL_FLOPS else 1


def segment_model(model: onnx.ModelProto, g: OnnxGraph, seg: DelegatedSegment) -> onnx.ModelProto:
    read = {t for n in seg.nodes for t in [*n.input, *subgraph_names(n)] if t}
    graph = helper.make_graph(
        seg.nodes, "delegated", [value_info(g, t) for t in seg.inputs],
        [value_info(g, t) for t in seg.outputs],
        [numpy_helper.from_array(g.constants[t], t) for t in sorted(read & g.constants.keys())])
    return helper.make_model(graph, opset_imports=model.opset_import,
                             ir_version=ir_version(model))


class DelegatedRunner:
    """One segment's session; reads its inputs from and writes its outputs to
    `env`.  threads: the most it may use (segment_threads picks)."""

    def __init__(self, model: onnx.ModelProto, g: OnnxGraph, seg: DelegatedSegment, threads: int):
        self.inputs, self.outputs = seg.inputs, seg.outputs
        self.node_names = [node_name(n) for n in seg.nodes]
        self.op_types = sorted({n.op_type for n in seg.nodes})
        self.threads = segment_threads(g, seg, threads)
        self.session = session(segment_model(model, g, seg), self.threads)
        how = "1 thread" if self.threads == 1 else f"{self.threads} threads, not spinning"
        self._entry = (", ".join(self.node_names),
                       f"{DELEGATED}: {', '.join(self.op_types)} ({how})")
        self.replay = False  # for benchmarks: give the last outputs back, onnxruntime idle
        self._last: list | None = None

    def run(self, env: dict) -> float:
        """Runs the segment; returns the time spent copying (none: onnxruntime
        reads and writes the host's arrays)."""
        start = time.perf_counter()
        if not self.replay or self._last is None:
            self._last = self.session.run(self.outputs, {t: env[t] for t in self.inputs})
        env.update(zip(self.outputs, self._last))
        self._ms = (time.perf_counter() - start) * 1e3
        return 0.0

    def profile(self) -> list[ProfileEntry]:
        """The latest run's time, one entry for the segment."""
        return [ProfileEntry(*self._entry, self._ms, DELEGATED_OP)]
