"""A whole-model program built and run inside acl-launcher (PROTOCOL.md, graph
commands), for a board that has the launcher but no Python.

LauncherGraph has Graph's operation methods (acltuner.engine.graph), each sent
as one graph_op request whose fields are the method's parameters; tensors
travel as {"offset", "dims"}, weights as base64 float32.  The launcher holds
one graph, so creating a LauncherGraph replaces the one it had.  The arena is
on the other side: constants are written with write() (or assigned to
`arena[a:b]`, as with a local Graph), and run() copies inputs in and outputs
out around the timed runs.
"""
from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.graph import Tensor
from acltuner.engine.launcher import LauncherClient, _encode_tensor


def _tensor(t: Tensor) -> dict:
    return {"offset": t.offset, "dims": list(t.dims)}


def _floats(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4")).decode("ascii")


@dataclass(frozen=True)
class GraphRun:
    """What graph_run measured on the launcher's machine."""
    times_ms: list[float]  # each timed run: inputs in, every node, outputs out
    node_ms: list[float]  # each node's median over the timed runs
    copy_ms: float  # median time of the copies in and out
    outputs: list[np.ndarray]  # the last run's, shaped as the tensors asked for
    peak_rss_mb: float  # of the launcher process


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
        client.request({"cmd": "graph_create", "arena_floats": arena_floats,
                        "core_weights": list(core_weights), "workloads": workloads})
        self.arena = _RemoteArena(self)

    def write(self, offset: int, values: np.ndarray) -> None:
        """Copies float32 values into the arena from `offset` (constants)."""
        self.client.request({"cmd": "graph_write", "offset": offset, "data": _floats(values)})

    def _op(self, kind: str, **fields) -> None:
        answer = self.client.request({"cmd": "graph_op", "kind": kind, **fields})
        self.node_count = answer["nodes"]

    # ---- operations, as in Graph ------------------------------------------------------

    def conv(self, shape: ConvShape, config: ExecConfig, weight: np.ndarray,
             bias: np.ndarray | None, x: Tensor, out: Tensor,
             residual: Tensor | None = None) -> None:
        self._op("conv", shape=shape.to_dict(), config=config.to_dict(),
                 weight=_encode_tensor("weight", weight, shape.weight_shape),
                 bias=None if bias is None else _encode_tensor("bias", bias, (shape.oc,)),
                 x=_tensor(x), out=_tensor(out),
                 residual=None if residual is None else _tensor(residual))

    def unary(self, op: str, x: Tensor, out: Tensor, a: float = 0.0, b: float = 0.0) -> None:
        self._op("unary", op=op, x=_tensor(x), out=_tensor(out), a=float(a), b=float(b))

    def binary(self, op: str, a: Tensor, b: Tensor, out: Tensor) -> None:
        self._op("binary", op=op, a=_tensor(a), b=_tensor(b), out=_tensor(out))

    def pool(self, op: str, x: Tensor, out: Tensor, kernel: tuple[int, int],
             strides: tuple[int, int] = (1, 1), dilations: tuple[int, int] = (1, 1),
             pads: tuple[int, int, int, int] = (0, 0, 0, 0),
             count_include_pad: bool = False) -> None:
        self._op("pool", op=op, x=_tensor(x), out=_tensor(out), kernel=list(kernel),
                 strides=list(strides), dilations=list(dilations), pads=list(pads),
                 count_include_pad=bool(count_include_pad))

    def global_average_pool(self, x: Tensor, out: Tensor) -> None:
        self._op("global_average_pool", x=_tensor(x), out=_tensor(out))

    def concat(self, axis: int, ins: Sequence[Tensor], out: Tensor) -> None:
        self._op("concat", axis=axis, ins=[_tensor(t) for t in ins], out=_tensor(out))

    def transpose(self, perm: Sequence[int], x: Tensor, out: Tensor) -> None:
        self._op("transpose", perm=[int(p) for p in perm], x=_tensor(x), out=_tensor(out))

    def matmul(self, ukernel: str, b: np.ndarray, bias: np.ndarray | None, x: Tensor,
               out: Tensor) -> None:
        b = np.asarray(b)
        if b.ndim != 2:
            raise ValueError(f"matmul: B must be K x N, got shape {b.shape}")
        k, n = b.shape
        self._op("matmul", ukernel=ukernel, k=k, n=n, b=_floats(b),
                 bias=None if bias is None else _encode_tensor("bias", bias, (n,)),
                 x=_tensor(x), out=_tensor(out))

    def softmax(self, x: Tensor, out: Tensor) -> None:
        self._op("softmax", x=_tensor(x), out=_tensor(out))

    def lrn(self, size: int, x: Tensor, out: Tensor, alpha: float = 1e-4, beta: float = 0.75,
            bias: float = 1.0) -> None:
        self._op("lrn", size=size, x=_tensor(x), out=_tensor(out), alpha=float(alpha),
                 beta=float(beta), bias=float(bias))

    def pad(self, mode: str, pads: Sequence[int], x: Tensor, out: Tensor,
            value: float = 0.0) -> None:
        self._op("pad", mode=mode, pads=[int(p) for p in pads], x=_tensor(x), out=_tensor(out),
                 value=float(value))

    def order(self, order: Sequence[int]) -> None:
        """Run order: the node added order[i]-th (from 0) runs i-th."""
        self.client.request({"cmd": "graph_order", "order": [int(i) for i in order]})

    # ---- running ------------------------------------------------------------------------

    def view(self, t: Tensor) -> np.ndarray:
        raise TypeError("a launcher's arena cannot be viewed: pass inputs and outputs to run()")

    def run(self, inputs: Sequence[tuple[Tensor, np.ndarray]], outputs: Sequence[Tensor], *,
            repeat: int = 10, warmup: int = 1) -> GraphRun:
        """warmup untimed runs, then `repeat` timed ones, each copying `inputs`
        (arrays of their tensor's dims, in arena order) into the arena first
        and the `outputs` tensors out after."""
        for t, a in inputs:
            if np.shape(a) != t.dims:
                raise ValueError(f"input for arena offset {t.offset} must have dims {t.dims}, "
                                 f"got {np.shape(a)}")
        answer = self.client.request({
            "cmd": "graph_run", "warmup": warmup, "repeat": repeat,
            "inputs": [{"offset": t.offset, "data": _floats(a)} for t, a in inputs],
            "outputs": [{"offset": t.offset, "floats": t.size} for t in outputs]})
        arrays = [np.frombuffer(bytearray(base64.b64decode(data)), dtype="<f4").reshape(t.dims)
                  for t, data in zip(outputs, answer["outputs"])]
        return GraphRun(list(answer["times_ms"]), list(answer["node_ms"]), answer["copy_ms"],
                        arrays, answer["peak_rss_kib"] / 1024)
