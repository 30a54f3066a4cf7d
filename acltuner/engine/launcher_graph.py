"""A whole-model program built and run inside acl-launcher (PROTOCOL.md, graph
commands), for a board that has the launcher but no Python.

LauncherGraph meets GraphBackend (acltuner.engine.graph) as Graph does: each
add() is one graph_op request whose attributes are encoded by the schema the
launcher reported in its hello; tensors travel as {"offset", "dims"}, weights
as base64 float32.  The launcher holds
one graph, so creating a LauncherGraph replaces the one it had.  The arena is
on the other side: constants are written with write() (or assigned to
`arena[a:b]`, as with a local Graph), and run() copies inputs in and outputs
out around the timed runs.
"""
from __future__ import annotations

import base64
from collections.abc import Sequence
import numpy as np

from acltuner.engine.graph import GraphRun, Perm, Tensor, balance_code
from acltuner.engine.launcher import LauncherClient
from acltuner.engine.op_schema import Schema, floats_base64, to_json


def _tensor(t: Tensor) -> dict:
    return {"offset": t.offset, "dims": list(t.dims)}


class _RemoteArena:
    """Stands in for Graph.arena where only slice assignment is needed: it
    writes the floats into the launcher's arena."""

    def __init__(self, graph: "LauncherGraph"):
        self._graph = graph

    def __setitem__(self, where: slice, values) -> None:
        if not isinstance(where, slice) or where.step not in (None, 1) or where.start is None:
            raise TypeError("a launcher's arena takes only arena[start:stop] = floats")
        values = np.asarray(values, dtype=np.float32).reshape(-1)
        if where.stop is not None and where.stop - where.start != values.size:
            raise ValueError(f"arena[{where.start}:{where.stop}] needs "
                             f"{where.stop - where.start} floats, got {values.size}")
        self._graph.write(where.start, values)


class LauncherGraph:
    """Graph's interface over a launcher: core_weights/workloads are the split
    of every operation but convolutions (which bring their own)."""

    def __init__(self, client: LauncherClient, arena_floats: int, core_weights: Sequence[int],
                 workloads: int):
        self.client = client
        self.arena_floats = arena_floats
        self.node_count = 0
        self.schema = Schema.from_json(client.hello_info["schema"])
        self.balance = "strict"
        client.request({"cmd": "graph_create", "arena_floats": arena_floats,
                        "core_weights": list(core_weights), "workloads": workloads})
        self.arena = _RemoteArena(self)

    def write(self, offset: int, values: np.ndarray) -> None:
        """Copies float32 values into the arena from `offset` (constants)."""
        self.client.request({"cmd": "graph_write", "offset": offset, "data": floats_base64(values)})

    def add(self, kind: str, inputs: Sequence[Tensor], out: Tensor, **attrs) -> None:
        """As Graph.add, inside the launcher."""
        op = self.schema.op(kind)
        op.check(len(inputs), attrs)
        answer = self.client.request({"cmd": "graph_op", "kind": kind,
                                      "attrs": to_json(op.fields, attrs),
                                      "inputs": [_tensor(t) for t in inputs], "out": _tensor(out)})
        self.node_count = answer["nodes"]

    def order(self, order: Sequence[int]) -> None:
        """Run order: the node added order[i]-th (from 0) runs i-th."""
        self.client.request({"cmd": "graph_order", "order": [int(i) for i in order]})

    # ---- running ------------------------------------------------------------------------

    def set_balance(self, balance: str) -> None:
        """As Graph.set_balance, for this graph's runs in the launcher."""
        balance_code(balance)
        self.balance = balance

    def view(self, t: Tensor) -> np.ndarray:
        raise TypeError("a launcher's arena cannot be viewed: pass inputs and outputs to run()")

    def run(self, inputs: Sequence[tuple[Tensor, np.ndarray, Perm]] = (),
            outputs: Sequence[tuple[Tensor, Perm]] = (), *, repeat: int = 1,
            warmup: int = 0) -> GraphRun:
        """As Graph.run, timed in the launcher: the arrays are transposed here,
        so only the arena's floats travel."""
        arrays = [np.ascontiguousarray(np.transpose(a, perm)) for _, a, perm in inputs]
        for (t, _, _), a in zip(inputs, arrays):
            if a.shape != t.dims:
                raise ValueError(f"input for arena offset {t.offset} must have dims {t.dims}, "
                                 f"got {a.shape}")
        answer = self.client.request({
            "cmd": "graph_run", "warmup": warmup, "repeat": repeat, "balance": self.balance,
            "inputs": [{"offset": t.offset, "data": floats_base64(a)}
                       for (t, _, _), a in zip(inputs, arrays)],
            "outputs": [{"offset": t.offset, "floats": t.size} for t, _ in outputs]})
        results = [np.ascontiguousarray(np.frombuffer(bytearray(base64.b64decode(data)),
                                                      dtype="<f4").reshape(t.dims).transpose(perm))
                   for (t, perm), data in zip(outputs, answer["outputs"])]
        return GraphRun(list(answer["times_ms"]), list(answer["node_ms"]), answer["copy_ms"],
                        results, answer["peak_rss_kib"] / 1024)
