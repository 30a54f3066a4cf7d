"""Delegated segments: nodes the native engine does not run, as onnxruntime
sub-models.

A segment's sub-model holds its nodes and the constants they read; its inputs
and outputs are the tensors crossing its boundary, in ONNX layout (the native
stages convert on the way in and out).  Sessions are created once, at load.
"""
from __future__ import annotations

import time

import onnx
from onnx import helper, numpy_helper

from acltuner.runtime.ir import DelegatedSegment
from acltuner.taskgen.onnxrt import ir_version, session, value_info
from acltuner.runtime.profile import DELEGATED, DELEGATED_OP, ProfileEntry
from acltuner.taskgen.graph import OnnxGraph, node_name, subgraph_names


def segment_model(model: onnx.ModelProto, g: OnnxGraph, seg: DelegatedSegment) -> onnx.ModelProto:
    read = {t for n in seg.nodes for t in [*n.input, *subgraph_names(n)] if t}
    graph = helper.make_graph(
        seg.nodes, "delegated", [value_info(g, t) for t in seg.inputs],
        [value_info(g, t) for t in seg.outputs],
        [numpy_helper.from_array(g.constants[t], t) for t in sorted(read & g.constants.keys())])
    return helper.make_model(graph, opset_imports=model.opset_import,
                             ir_version=ir_version(model))


class DelegatedRunner:
    """One segment's session; reads its inputs from and writes its outputs to `env`."""

    def __init__(self, model: onnx.ModelProto, g: OnnxGraph, seg: DelegatedSegment, threads: int):
        self.inputs, self.outputs = seg.inputs, seg.outputs
        self.node_names = [node_name(n) for n in seg.nodes]
        self.op_types = sorted({n.op_type for n in seg.nodes})
        self.session = session(segment_model(model, g, seg), threads)
        self._entry = (", ".join(self.node_names), f"{DELEGATED}: {', '.join(self.op_types)}")

    def run(self, env: dict) -> float:
        """Runs the segment; returns the time spent copying (none: onnxruntime
        reads and writes the host's arrays)."""
        start = time.perf_counter()
        results = self.session.run(self.outputs, {t: env[t] for t in self.inputs})
        env.update(zip(self.outputs, results))
        self._ms = (time.perf_counter() - start) * 1e3
        return 0.0

    def profile(self) -> list[ProfileEntry]:
        """The latest run's time, one entry for the segment."""
        return [ProfileEntry(*self._entry, self._ms, DELEGATED_OP)]
