"""`acltuner run --compare-ort`: our time per node beside onnxruntime's own
profile of the original model (its enable_profiling trace), matched by ONNX
node name and sorted by the time we lose, so that a slow model shows where.

onnxruntime runs with its default graph optimisations and the better of 1 and
2 intra-op threads, as `acltuner bench compare` measures it; its latency is
timed without profiling, which slows it, and its nodes with.  Its nodes that
fused several ONNX nodes keep the first one's name; ours list a convolution
under its Conv with what it absorbed.  A node of one side with no match on the
other (onnxruntime's layout reorders, our host copies) has a row of its own.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from acltuner.runtime.profile import NodeTime

_KERNEL = "_kernel_time"
_TOKEN = re.compile(r"_token_\d+$")


def _onnx_name(ort_name: str, known: set[str]) -> str:
    """The ONNX node (or output tensor) an onnxruntime node came from: its
    optimisers name a fusion "<node>/<Fusion>/" or "fused <node>" (Gemm with
    its activation), a node of the NCHWc layout "<output>_nchwc", and one its
    quantized and NHWC rewrites made "<node>_token_<n>" (a QLinearConv from a
    DequantizeLinear, Conv and QuantizeLinear; an NhwcMaxPool).  ONNX names
    may hold "/" themselves (TensorFlow exports: "model/conv2d/Conv2D:0"), so
    the longest known "/"-prefix wins."""
    stripped = ort_name.removeprefix("fused ").removesuffix("_nchwc")
    for name in (stripped, _TOKEN.sub("", stripped)):
        parts = name.split("/")
        prefixes = ("/".join(parts[:end]) for end in range(len(parts), 0, -1))
        found = next((p for p in prefixes if p in known), None)
        if found is not None:
            return found
    return ort_name


@dataclass(frozen=True)
class OrtProfile:
    median_ms: float
    threads: int
    nodes: dict[str, tuple[str, float]]  # ONNX node name -> (operator, median ms)


@dataclass(frozen=True)
class ComparedNode:
    node: str
    kind: str  # ours, else onnxruntime's operator
    ours_ms: float
    ort_ms: float

    @property
    def lost_ms(self) -> float:
        return self.ours_ms - self.ort_ms


def _session(model_path: str, threads: int, profile_prefix: str | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])


def _median_ms(session, inputs: dict[str, np.ndarray], repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        session.run(None, inputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def _node_times(model_path: str, inputs: dict[str, np.ndarray], repeat: int, warmup: int,
                threads: int) -> dict[str, tuple[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        session = _session(model_path, threads, os.path.join(tmp, "ort"))
        _median_ms(session, inputs, repeat, warmup)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    durations: dict[str, list[float]] = defaultdict(list)
    operators: dict[str, str] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith(_KERNEL):
            name = e["name"][:-len(_KERNEL)]
            durations[name].append(e["dur"] / 1e3)
            operators[name] = e.get("args", {}).get("op_name", "?")
    # A node's last `repeat` events are the timed runs; the first ones, warmup.
    return {n: (operators[n], float(np.median(d[-repeat:]))) for n, d in durations.items()}


def ort_latency(model_path: str, inputs: dict[str, np.ndarray], repeat: int,
                warmup: int) -> tuple[float, int]:
    """onnxruntime's median latency with the faster of 1 and 2 intra-op
    threads, and that thread count."""
    return min((_median_ms(_session(model_path, t), inputs, repeat, warmup), t)
               for t in (1, 2))


def profile_onnxruntime(model_path: str, inputs: dict[str, np.ndarray], repeat: int,
                        warmup: int) -> OrtProfile:
    """onnxruntime's latency with the faster of 1 and 2 intra-op threads, and
    its profile with that many."""
    latency, threads = ort_latency(model_path, inputs, repeat, warmup)
    return OrtProfile(latency, threads,
                      _node_times(model_path, inputs, repeat, warmup, threads))


def compare(ours: list[NodeTime], ort: OrtProfile, aliases: dict[str, str]
            ) -> list[ComparedNode]:
    """One row per node of ours (its onnxruntime nodes' times summed in), then
    onnxruntime's unmatched nodes; most time lost first.  aliases maps an ONNX
    node a convolution absorbed to the convolution's name, and a node's output
    tensors to the node (or the convolution that absorbed it)."""
    ours_ms: dict[str, float] = defaultdict(float)
    kinds: dict[str, str] = {}
    owner: dict[str, str] = {}
    for row in ours:
        ours_ms[row.node] += row.ms
        kinds.setdefault(row.node, row.kind)
        for name in row.node.split(", "):  # a delegated segment lists its nodes
            owner[name] = row.node
    ort_ms: dict[str, float] = defaultdict(float)
    known = set(owner) | set(aliases)
    for name, (operator, ms) in ort.nodes.items():
        onnx_name = _onnx_name(name, known)
        # A chain's operation is named after its first node (a MatMul whose
        # bias and GELU it took) or its last (a channel shuffle's Reshape).
        key = owner.get(aliases.get(onnx_name, onnx_name)) or owner.get(onnx_name, name)
        ort_ms[key] += ms
        kinds.setdefault(key, f"onnxruntime only: {operator}")
    rows = [ComparedNode(n, kinds[n], ours_ms.get(n, 0.0), ort_ms.get(n, 0.0))
            for n in {**ours_ms, **ort_ms}]
    return sorted(rows, key=lambda r: -r.lost_ms)


def node_aliases(model_path: str, input_shapes: dict | None) -> dict[str, str]:
    """compare()'s aliases for the model: the nodes each convolution absorbs,
    to the convolution's name; those of a chain one operation covers (a
    channel shuffle), to the chain's last node, whose name that operation has;
    and every node's output tensors, to what their node maps to."""
    from acltuner.onnx.graph import OnnxGraph, conv_nodes, node_name
    from acltuner.onnx.model import load_model_detached
    from acltuner.runtime.lower import pattern_actions

    model, weights = load_model_detached(model_path, input_shapes)
    convs = conv_nodes(model, weights)[0]
    owner = {name: c.name for c in convs for name in c.fused}
    claimed = {name for c in convs for name in [c.name, *c.fused]}
    for names, _ in pattern_actions(OnnxGraph(model, weights), model, claimed).values():
        owner.update(dict.fromkeys(names[:-1], names[-1]))
    aliases = dict(owner)
    for node in model.graph.node:
        for t in node.output:
            aliases.setdefault(t, owner.get(node_name(node), node_name(node)))
    return aliases
