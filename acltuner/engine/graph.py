"""ctypes bindings to the engine's whole-model programs (native/include/aclgraph.h).

A Graph owns one float arena; every tensor is a Tensor(offset, dims) region of
it (NHWC for 4-D activations), constants included.  Operations are added by
name with add(kind, inputs, out, **attrs), their attributes those of the
kind's line in the engine's ACL_GRAPH_OPS (op_schema.py builds the ctypes struct
from the engine's own description); they are checked and their weights packed
when added, then run in order by run(), which copies the inputs in and the
outputs out around them and returns each node's time.  Weights are copied or
packed by the engine, so the caller need not keep them.

GraphBackend is what a program needs of a graph, met by Graph and by
LauncherGraph (a launcher's graph, over its protocol), so one Program runs
either.
"""
from __future__ import annotations

import ctypes
import functools
import math
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.native import EngineError

MAX_RANK = 6  # ACL_MAX_RANK
# An output this large and transposed is read back by the engine, by blocks
# (2.5x numpy's time for a 384x384x21 map); a smaller one by numpy, whose
# copy costs less than the engine call.
ENGINE_EXPORT_FLOATS = 1 << 14
# One kept in its layout, from this size on: the engine splits the copy over
# the program's cores, which numpy's single thread cannot match past about a
# megabyte (LR-ASPP's 21x512x512 map: 1.7 ms against 2.7).
ENGINE_COPY_FLOATS = 1 << 18

@dataclass(frozen=True)
class Tensor:
    """A region of the arena: offset in floats, row-major dims (innermost last)."""
    offset: int
    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        if self.offset < 0:
            raise ValueError(f"tensor offset must be >= 0, got {self.offset}")
        if len(self.dims) > MAX_RANK:
            raise ValueError(f"tensor has rank {len(self.dims)}; at most {MAX_RANK} is supported")

    @property
    def size(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64))

    @property
    def end(self) -> int:
        return self.offset + self.size


class _TensorC(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_size_t), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int * MAX_RANK)]


def _tensor_c(t: Tensor) -> _TensorC:
    return _TensorC(t.offset, len(t.dims), (ctypes.c_int * MAX_RANK)(*t.dims))


_FLOAT_P = ctypes.POINTER(ctypes.c_float)
_INT_P = ctypes.POINTER(ctypes.c_int)
_T = ctypes.POINTER(_TensorC)
_G = ctypes.c_void_p
_EX = ctypes.POINTER(native._ExecC)
_INT = ctypes.c_int
_SIGNATURES = {
    "acl_graph_create": ([ctypes.c_size_t, _EX, ctypes.POINTER(ctypes.c_void_p)], _INT),
    "acl_graph_destroy": ([_G], None),
    "acl_graph_arena": ([_G], _FLOAT_P),
    "acl_graph_add": ([_G, _INT, ctypes.c_void_p, _INT, _T, _T], _INT),
    "acl_graph_import": ([_G, _FLOAT_P, _INT_P, _T], _INT),
    "acl_graph_export": ([_G, _T, _INT_P, _FLOAT_P], _INT),
    "acl_graph_node_count": ([_G], _INT),
    "acl_graph_workspace_bytes": ([_G], ctypes.c_size_t),
    "acl_graph_order": ([_G, _INT_P], _INT),
    "acl_graph_run": ([_G, ctypes.POINTER(ctypes.c_double)], _INT),
    "acl_graph_set_balance": ([_G, _INT], _INT),
}

# acl_balance: how a run spreads each operation over its cores (aclengine.h).
BALANCES = {"strict": 0, "adaptive": 1}


def balance_code(balance: str) -> int:
    if balance not in BALANCES:
        raise ValueError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
    return BALANCES[balance]


@functools.cache
def _lib() -> ctypes.CDLL:
    return native.bind(native.library(), _SIGNATURES)


_ok = native.ensure_ok


def _ints(values: Sequence[int]) -> ctypes.Array:
    return (ctypes.c_int * max(len(values), 1))(*values)


def _exactly(values: Sequence[int], count: int, what: str) -> ctypes.Array:
    """The C side reads exactly `count` ints: check before handing them over."""
    if len(values) != count:
        raise ValueError(f"{what} needs {count} values, got {len(values)}: {list(values)}")
    return _ints(values)


def conv_attrs(shape: ConvShape, config: ExecConfig, weight, bias) -> dict:
    """A conv's attributes from the tuner's types: weight OIHW, bias oc floats or None."""
    return {"shape": shape, "algorithm": config.algorithm, "ukernel": config.ukernel,
            "core_weights": config.core_weights, "workloads": config.workloads,
            "weight": weight, "bias": bias}


def matmul_attrs(ukernel: str, b: np.ndarray, bias: np.ndarray | None, act: str = "none",
                 act_a: float = 0.0, act_b: float = 0.0) -> dict:
    """A matmul's attributes for B given as K x N, with the activation its
    epilogue applies (act_a, act_b as a unary operation's a, b).  Gemm's
    transB weights are the transpose of a contiguous N x K array: the engine
    packs them from there, without a transposed copy."""
    b = np.asarray(b, dtype=np.float32)
    if b.ndim != 2:
        raise ValueError(f"matmul: B must be K x N, got shape {b.shape}")
    transposed = not b.flags.c_contiguous and b.T.flags.c_contiguous
    return {"ukernel": ukernel, "k": b.shape[0], "n": b.shape[1],
            "b": b.T if transposed else np.ascontiguousarray(b), "b_transposed": transposed,
            "bias": bias, "act": act, "act_a": act_a, "act_b": act_b}


@dataclass(frozen=True)
class GraphRun:
    """What a graph's run() measured, where the graph runs."""
    times_ms: list[float]  # each timed run: inputs in, every node, outputs out
    node_ms: list[float]  # each node's median over the timed runs
    copy_ms: float  # median time of the copies in and out
    outputs: list[np.ndarray]  # the last run's, transposed as asked, the caller's to keep
    peak_rss_mb: float  # of the process running the graph


Perm = Sequence[int]


class GraphBackend(Protocol):
    """What a program needs of a graph: the arena to write constants into
    (arena[start:stop] = floats), operations added by name, the run order, how
    its runs balance their operations over the cores, and runs: `inputs` as
    (tensor, array, perm), each written as array.transpose(perm), and
    `outputs` as (tensor, perm), each read back as view(tensor).transpose(perm)."""
    arena: Any

    @property
    def node_count(self) -> int: ...

    def add(self, kind: str, inputs: Sequence[Tensor], out: Tensor, **attrs) -> None: ...

    def order(self, order: Sequence[int]) -> None: ...

    def set_balance(self, balance: str) -> None: ...

    def run(self, inputs: Sequence[tuple[Tensor, np.ndarray, Perm]] = (),
            outputs: Sequence[tuple[Tensor, Perm]] = (), *, repeat: int = 1,
            warmup: int = 0) -> GraphRun: ...


@dataclass(frozen=True)
class _Binding:
    """A run input's or output's arena view, whether its layout is the arena's
    own, and whether an output is large enough for the engine's copy."""
    view: np.ndarray
    identity: bool
    large: bool


class Graph:
    """A whole-model program over one arena; core_weights/workloads are the
    split of every operation but convolutions (which bring their own)."""

    def __init__(self, arena_floats: int, core_weights: Sequence[int], workloads: int):
        self._handle = None
        self._times: ctypes.Array[ctypes.c_double] | None = None  # one buffer for every run
        # Per (tensor, layout) of a run's inputs and outputs, made at its first
        # run: a small model's run is tens of microseconds, and building the
        # view and its checks again every run cost a third more.
        self._io: dict[tuple[Tensor, tuple[int, ...]], _Binding] = {}
        ex, _keep = native._exec_c(tuple(core_weights), workloads)
        handle = ctypes.c_void_p()
        _ok(_lib().acl_graph_create(arena_floats, ctypes.byref(ex), ctypes.byref(handle)))
        self._handle = handle
        # A view of engine memory: valid until close(), None after.
        self.arena: Any = np.ctypeslib.as_array(_lib().acl_graph_arena(handle),
                                                shape=(arena_floats,))

    def _h(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise EngineError("graph already closed")
        return self._handle

    def view(self, t: Tensor) -> np.ndarray:
        """The arena region of t, shaped: read outputs or write inputs and constants."""
        return self.arena[t.offset:t.end].reshape(t.dims)

    def write_transposed(self, x: np.ndarray, perm: Sequence[int], t: Tensor) -> None:
        """view(t)[...] = x.transpose(perm), by the engine (numpy copies an
        image's NCHW -> NHWC element by element), waking the program's cores
        for the run that follows."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        if tuple(x.shape[p] for p in perm) != t.dims:
            raise ValueError(f"cannot write an array of shape {x.shape} transposed by "
                             f"{tuple(perm)} into a tensor of dims {t.dims}")
        _ok(_lib().acl_graph_import(self._h(), native._fptr(x),
                                    _exactly(perm, len(t.dims), "import perm"),
                                    ctypes.byref(_tensor_c(t))))

    def read_transposed(self, t: Tensor, perm: Sequence[int]) -> np.ndarray:
        """A new array holding view(t).transpose(perm), by the engine (numpy
        reads an NHWC output back to NCHW element by element, a C-th of each
        cache line at a time)."""
        y = np.empty(tuple(t.dims[p] for p in perm), dtype=np.float32)
        _ok(_lib().acl_graph_export(self._h(), ctypes.byref(_tensor_c(t)),
                                    _exactly(perm, len(t.dims), "export perm"), native._fptr(y)))
        return y

    def add(self, kind: str, inputs: Sequence[Tensor], out: Tensor, **attrs) -> None:
        """Appends operation `kind` reading `inputs` and writing `out`; attrs by
        the names of its ACL_GRAPH_OPS line (absent ones are zero or none)."""
        op = native.schema().op(kind)
        op.check(len(inputs), attrs)
        keep: list = []
        struct = native.layout().attrs(op, attrs, keep)
        ins = (_TensorC * max(len(inputs), 1))(*(_tensor_c(t) for t in inputs))
        _ok(_lib().acl_graph_add(self._h(), op.code, ctypes.byref(struct), len(inputs), ins,
                                 ctypes.byref(_tensor_c(out))))

    # ---- running ------------------------------------------------------------------

    @property
    def node_count(self) -> int:
        return _lib().acl_graph_node_count(self._h())

    @property
    def workspace_bytes(self) -> int:
        """The one scratch buffer every node's run shares: the largest need, not the sum."""
        return _lib().acl_graph_workspace_bytes(self._h())

    def order(self, order: Sequence[int]) -> None:
        """Run order: the node added order[i]-th (from 0) runs i-th."""
        _ok(_lib().acl_graph_order(self._h(), _exactly(order, self.node_count, "graph order")))

    def set_balance(self, balance: str) -> None:
        """"strict": each core runs its share only, as measured; "adaptive":
        cores done early take over what a late core has not run (same output)."""
        _ok(_lib().acl_graph_set_balance(self._h(), balance_code(balance)))

    def run(self, inputs: Sequence[tuple[Tensor, np.ndarray, Perm]] = (),
            outputs: Sequence[tuple[Tensor, Perm]] = (), *, repeat: int = 1,
            warmup: int = 0) -> GraphRun:
        """`warmup` untimed runs, then `repeat` timed ones, each writing `inputs`
        first and reading `outputs` after (as in GraphBackend) and running
        every node in order."""
        times, node_runs, copies = [], [], []
        for i in range(warmup + repeat):
            start = time.perf_counter()
            for t, x, perm in inputs:
                self._write(t, x, perm)
            nodes_start = time.perf_counter()
            node_ms = self._run_nodes()
            nodes_end = time.perf_counter()
            arrays = [self._read(t, perm) for t, perm in outputs]
            end = time.perf_counter()
            if i >= warmup:
                times.append((end - start) * 1e3)
                node_runs.append(node_ms)
                copies.append((end - nodes_end + nodes_start - start) * 1e3)
        # One timed run (a program's run) skips the medians: they cost more than small nodes.
        node_ms = node_runs[0] if repeat == 1 else np.median(node_runs, axis=0).tolist()
        copy_ms = copies[0] if repeat == 1 else float(np.median(copies))
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return GraphRun(times, node_ms, copy_ms, arrays, rss_mb)

    def _binding(self, t: Tensor, perm: Perm) -> "_Binding":
        key = (t, tuple(perm))
        b = self._io.get(key)
        if b is None:
            identity = key[1] == tuple(range(len(perm)))
            b = self._io[key] = _Binding(self.view(t), identity, math.prod(t.dims) >= (
                ENGINE_COPY_FLOATS if identity else ENGINE_EXPORT_FLOATS))
        return b

    def _write(self, t: Tensor, x: np.ndarray, perm: Perm) -> None:
        """An input that keeps its layout is a numpy copy: the engine's parallel
        transpose is for the others, and its call costs more than a small
        tensor's copy."""
        b = self._binding(t, perm)
        if b.identity and x.shape == b.view.shape:
            np.copyto(b.view, x, casting="same_kind")
        else:
            self.write_transposed(x, perm, t)

    def _read(self, t: Tensor, perm: Perm) -> np.ndarray:
        """A copy, never the arena itself: the next run overwrites it."""
        b = self._binding(t, perm)
        if b.large:
            return self.read_transposed(t, perm)
        return b.view.transpose(perm).copy(order="C")

    def _run_nodes(self) -> list[float]:
        """Runs every node in order; returns each one's wall time in ms."""
        n = self.node_count
        if self._times is None or len(self._times) != max(n, 1):
            self._times = (ctypes.c_double * max(n, 1))()
        _ok(_lib().acl_graph_run(self._h(), self._times))
        return self._times[:n]

    def close(self) -> None:
        if self._handle is not None:
            self.arena = None
            self._io.clear()
            _lib().acl_graph_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self) -> "Graph":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
