"""Per-node times of a run, and their summary over many runs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The entry a native stage adds for copying tensors between numpy and its arena.
HOST_COPIES = "(host copies)"
DELEGATED = "delegated to onnxruntime"
# The `op` of those two entries; a native operation's is its kind in the graph.
COPIES_OP, DELEGATED_OP = "copies", "delegated"


@dataclass(frozen=True)
class ProfileEntry:
    node: str  # the ONNX node (a delegated segment: its nodes, comma-separated)
    kind: str  # the native operation with its config, or DELEGATED and the operators
    ms: float
    op: str  # the graph operation ("conv", "pool", ...), COPIES_OP or DELEGATED_OP


@dataclass(frozen=True)
class NodeTime:
    node: str
    kind: str
    ms: float  # median over the runs
    share: float  # of the sum of all entries' medians
    op: str


def summarize(runs: list[list[ProfileEntry]]) -> list[NodeTime]:
    """The median time of every entry over runs of one program, slowest first."""
    medians = [float(np.median([run[i].ms for run in runs])) for i in range(len(runs[0]))]
    total = sum(medians) or 1.0
    rows = [NodeTime(e.node, e.kind, ms, ms / total, e.op) for e, ms in zip(runs[0], medians)]
    return sorted(rows, key=lambda r: -r.ms)
