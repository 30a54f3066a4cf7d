"""ctypes bindings to the engine's whole-model programs (native/include/aclgraph.h).

A Graph owns one float arena; every tensor is a Tensor(offset, dims) region of
it (NHWC for 4-D activations), constants included.  Operations are checked and
their weights packed when added, then run in order by run(), which allocates
nothing and returns each node's time.  Weights passed to an add method are
copied or packed by the engine, so the caller need not keep them.
"""
from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.native import EngineError

MAX_RANK = 6  # ACL_MAX_RANK

UNARY_OPS = {"relu": 0, "clip": 1, "leaky_relu": 2, "sigmoid": 3, "hard_sigmoid": 4,
             "hard_swish": 5, "copy": 6}
BINARY_OPS = {"add": 0, "mul": 1, "sub": 2, "div": 3}
POOL_OPS = {"max": 0, "average": 1}
PAD_MODES = {"constant": 0, "edge": 1, "reflect": 2}


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
_INT, _FLOAT = ctypes.c_int, ctypes.c_float
_SIGNATURES = {
    "acl_graph_create": ([ctypes.c_size_t, _EX, ctypes.POINTER(ctypes.c_void_p)], _INT),
    "acl_graph_destroy": ([_G], None),
    "acl_graph_arena": ([_G], _FLOAT_P),
    "acl_graph_conv": ([_G, ctypes.POINTER(native._ConvShapeC), ctypes.c_char_p,
                        ctypes.c_char_p, _EX, _FLOAT_P, _FLOAT_P, _T, _T, _T], _INT),
    "acl_graph_unary": ([_G, _INT, _FLOAT, _FLOAT, _T, _T], _INT),
    "acl_graph_binary": ([_G, _INT, _T, _T, _T], _INT),
    "acl_graph_pool": ([_G, _INT, _INT, _INT, _INT, _INT, _INT, _INT, _INT_P, _INT, _T, _T],
                       _INT),
    "acl_graph_global_average_pool": ([_G, _T, _T], _INT),
    "acl_graph_concat": ([_G, _INT, _INT, _T, _T], _INT),
    "acl_graph_transpose": ([_G, _INT_P, _T, _T], _INT),
    "acl_graph_import": ([_G, _FLOAT_P, _INT_P, _T], _INT),
    "acl_graph_matmul": ([_G, ctypes.c_char_p, _INT, _INT, _FLOAT_P, _INT, _FLOAT_P, _T, _T],
                         _INT),
    "acl_graph_softmax": ([_G, _T, _T], _INT),
    "acl_graph_lrn": ([_G, _INT, _FLOAT, _FLOAT, _FLOAT, _T, _T], _INT),
    "acl_graph_pad": ([_G, _INT, _FLOAT, _INT_P, _T, _T], _INT),
    "acl_graph_node_count": ([_G], _INT),
    "acl_graph_workspace_bytes": ([_G], ctypes.c_size_t),
    "acl_graph_order": ([_G, _INT_P], _INT),
    "acl_graph_run": ([_G, ctypes.POINTER(ctypes.c_double)], _INT),
}


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


def _op(table: dict[str, int], kind: str, name: str) -> int:
    if name not in table:
        raise ValueError(f"unknown {kind} operation {name!r} (known: {', '.join(table)})")
    return table[name]


class Graph:
    """A whole-model program over one arena; core_weights/workloads are the
    split of every operation but convolutions (which bring their own)."""

    def __init__(self, arena_floats: int, core_weights: Sequence[int], workloads: int):
        self._handle = None
        ex, _keep = native._exec_c(tuple(core_weights), workloads)
        handle = ctypes.c_void_p()
        _ok(_lib().acl_graph_create(arena_floats, ctypes.byref(ex), ctypes.byref(handle)))
        self._handle = handle
        # A view of engine memory: valid until close().
        self.arena = np.ctypeslib.as_array(_lib().acl_graph_arena(handle), shape=(arena_floats,))

    def _h(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise EngineError("graph already closed")
        return self._handle

    def view(self, t: Tensor) -> np.ndarray:
        """The arena region of t, shaped: read outputs or write inputs and constants."""
        return self.arena[t.offset:t.end].reshape(t.dims)

    def write_transposed(self, x: np.ndarray, perm: Sequence[int], t: Tensor) -> None:
        """view(t)[...] = x.transpose(perm), on the program's cores (numpy copies
        an image's NCHW -> NHWC element by element)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        if tuple(x.shape[p] for p in perm) != t.dims:
            raise ValueError(f"cannot write an array of shape {x.shape} transposed by "
                             f"{tuple(perm)} into a tensor of dims {t.dims}")
        _ok(_lib().acl_graph_import(self._h(), native._fptr(x),
                                    _exactly(perm, len(t.dims), "import perm"),
                                    ctypes.byref(_tensor_c(t))))

    # ---- operations --------------------------------------------------------------

    def conv(self, shape: ConvShape, config: ExecConfig, weight: np.ndarray,
             bias: np.ndarray | None, x: Tensor, out: Tensor,
             residual: Tensor | None = None) -> None:
        """Convolution with its fused epilogue (shape.act, shape.has_residual);
        weight is OIHW, run with config's algorithm, micro-kernel and split."""
        weight = native._as_f32(weight, shape.weight_shape, "weight")
        bias = None if bias is None else native._as_f32(bias, (shape.oc,), "bias")
        ex, _keep = native._exec_c(config.core_weights, config.workloads)
        _ok(_lib().acl_graph_conv(
            self._h(), ctypes.byref(native._shape_c(shape)), config.algorithm.encode(),
            (config.ukernel or "").encode(), ctypes.byref(ex), native._fptr(weight),
            native._fptr(bias), ctypes.byref(_tensor_c(x)),
            None if residual is None else ctypes.byref(_tensor_c(residual)),
            ctypes.byref(_tensor_c(out))))

    def unary(self, op: str, x: Tensor, out: Tensor, a: float = 0.0,
              b: float = 0.0) -> None:
        """relu, clip (a=min, b=max), leaky_relu (a=alpha), sigmoid, hard_sigmoid
        (a=alpha, b=beta), hard_swish or copy; out may be x (in place)."""
        _ok(_lib().acl_graph_unary(self._h(), _op(UNARY_OPS, "unary", op), a, b,
                                      ctypes.byref(_tensor_c(x)),
                                      ctypes.byref(_tensor_c(out))))

    def binary(self, op: str, a: Tensor, b: Tensor, out: Tensor) -> None:
        """add, mul, sub or div with numpy broadcasting at equal ranks."""
        _ok(_lib().acl_graph_binary(self._h(), _op(BINARY_OPS, "binary", op),
                                       ctypes.byref(_tensor_c(a)), ctypes.byref(_tensor_c(b)),
                                       ctypes.byref(_tensor_c(out))))

    def pool(self, op: str, x: Tensor, out: Tensor, kernel: tuple[int, int],
             strides: tuple[int, int] = (1, 1), dilations: tuple[int, int] = (1, 1),
             pads: tuple[int, int, int, int] = (0, 0, 0, 0),
             count_include_pad: bool = False) -> None:
        """NHWC max or average pooling; pads are top, left, bottom, right.  out's
        spatial dims may be the floor or the ceil (ceil_mode) output size."""
        _ok(_lib().acl_graph_pool(self._h(), _op(POOL_OPS, "pool", op), *kernel,
                                     *strides, *dilations, _exactly(pads, 4, "pool pads"),
                                     int(count_include_pad),
                                     ctypes.byref(_tensor_c(x)),
                                     ctypes.byref(_tensor_c(out))))

    def global_average_pool(self, x: Tensor, out: Tensor) -> None:
        """[N, H, W, C] -> [N, 1, 1, C]."""
        _ok(_lib().acl_graph_global_average_pool(self._h(), ctypes.byref(_tensor_c(x)),
                                                    ctypes.byref(_tensor_c(out))))

    def concat(self, axis: int, ins: Sequence[Tensor], out: Tensor) -> None:
        """ins share out's dims but along axis (negative counts from the end)."""
        tensors = (_TensorC * max(len(ins), 1))(*(_tensor_c(t) for t in ins))
        _ok(_lib().acl_graph_concat(self._h(), axis, len(ins), tensors,
                                       ctypes.byref(_tensor_c(out))))

    def transpose(self, perm: Sequence[int], x: Tensor, out: Tensor) -> None:
        """out.dims[i] = x.dims[perm[i]], as numpy.transpose."""
        perm = _exactly(perm, len(x.dims), "transpose perm")
        _ok(_lib().acl_graph_transpose(self._h(), perm, ctypes.byref(_tensor_c(x)),
                                          ctypes.byref(_tensor_c(out))))

    def matmul(self, ukernel: str, b: np.ndarray, bias: np.ndarray | None, x: Tensor,
               out: Tensor) -> None:
        """out[..., N] = x[..., K] @ b[K, N] + bias[N] on the named micro-kernel.
        b may be the transpose of a contiguous N x K array (Gemm's transB):
        the engine packs it from there, without a transposed copy."""
        b = np.asarray(b, dtype=np.float32)
        if b.ndim != 2:
            raise ValueError(f"matmul: B must be K x N, got shape {b.shape}")
        k, n = b.shape
        transposed = not b.flags.c_contiguous and b.T.flags.c_contiguous
        stored = b.T if transposed else np.ascontiguousarray(b)
        bias = None if bias is None else native._as_f32(bias, (n,), "bias")
        _ok(_lib().acl_graph_matmul(self._h(), ukernel.encode(), k, n, native._fptr(stored),
                                       int(transposed), native._fptr(bias),
                                       ctypes.byref(_tensor_c(x)), ctypes.byref(_tensor_c(out))))

    def softmax(self, x: Tensor, out: Tensor) -> None:
        """Softmax over the innermost axis; out may be x (in place)."""
        _ok(_lib().acl_graph_softmax(self._h(), ctypes.byref(_tensor_c(x)),
                                        ctypes.byref(_tensor_c(out))))

    def lrn(self, size: int, x: Tensor, out: Tensor, alpha: float = 1e-4, beta: float = 0.75,
            bias: float = 1.0) -> None:
        """ONNX LRN across the innermost (channel) axis; defaults are ONNX's."""
        _ok(_lib().acl_graph_lrn(self._h(), size, alpha, beta, bias,
                                    ctypes.byref(_tensor_c(x)), ctypes.byref(_tensor_c(out))))

    def pad(self, mode: str, pads: Sequence[int], x: Tensor, out: Tensor,
            value: float = 0.0) -> None:
        """ONNX Pad: pads are the begins of every axis, then the ends (negative crops)."""
        pads = _exactly(pads, 2 * len(x.dims), "pad pads")
        _ok(_lib().acl_graph_pad(self._h(), _op(PAD_MODES, "pad", mode), value, pads,
                                    ctypes.byref(_tensor_c(x)),
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

    def run(self) -> list[float]:
        """Runs every node in order; returns each one's wall time in ms."""
        times = (ctypes.c_double * max(self.node_count, 1))()
        _ok(_lib().acl_graph_run(self._h(), times))
        return list(times[:self.node_count])

    def close(self) -> None:
        if self._handle is not None:
            self.arena = None
            _lib().acl_graph_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self) -> "Graph":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
