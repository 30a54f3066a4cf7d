"""ctypes bindings to the native engine library (libaclengine.so).

The same library backs the launcher; this in-process path is for tests, the
benchmarks and (later) whole-model runs.  ctypes releases the GIL during each
call, so the engine's pinned workers run unhindered.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.resources
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.op_schema import CtypesLayout, Schema

_LIB_NAME = "libaclengine.so"


class EngineError(RuntimeError):
    """A one-line error reported by the native engine."""


class _ExecC(ctypes.Structure):
    _fields_ = [("ncores", ctypes.c_int), ("weights", ctypes.POINTER(ctypes.c_int)),
                ("workloads", ctypes.c_int)]


class _StageTimesC(ctypes.Structure):
    _fields_ = [("pre_ms", ctypes.c_double), ("gemm_ms", ctypes.c_double),
                ("post_ms", ctypes.c_double), ("total_ms", ctypes.c_double)]


class _UkernelInfoC(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("isa", ctypes.c_char_p), ("style", ctypes.c_char_p),
                ("mr", ctypes.c_int), ("nr", ctypes.c_int), ("kmin", ctypes.c_int),
                ("kmax", ctypes.c_int), ("n_multiple", ctypes.c_int),
                ("precision", ctypes.c_char_p)]


@dataclass(frozen=True)
class StageTimes:
    pre_ms: float
    gemm_ms: float
    post_ms: float
    total_ms: float


@dataclass(frozen=True)
class UkernelInfo:
    name: str
    isa: str
    style: str
    mr: int
    nr: int
    kmin: int
    kmax: int
    n_multiple: int
    precision: str = "fp32"  # "fp16": an Armv8.2-A FP16 kernel (acl_ukernel_info)


def native_dir() -> Path:
    """Where the built library and launcher live (ACLTUNER_NATIVE_DIR overrides).

    Resolved through importlib.resources because an editable install keeps the
    build's outputs in site-packages, apart from the sources."""
    override = os.environ.get("ACLTUNER_NATIVE_DIR")
    if override:
        return Path(override)
    return Path(str(importlib.resources.files("acltuner.engine") / "_native"))


_FLOAT_P = ctypes.POINTER(ctypes.c_float)
_SHAPE_P = ctypes.c_void_p  # an acl_conv_shape, laid out by layout()
_SIGNATURES = {
    "acl_version": ([], ctypes.c_char_p),
    "acl_fingerprint": ([], ctypes.c_char_p),
    "acl_describe": ([], ctypes.c_char_p),
    "acl_isa": ([], ctypes.c_char_p),
    "acl_last_error": ([], ctypes.c_char_p),
    "acl_cpu_count": ([], ctypes.c_int),
    "acl_algorithm_count": ([], ctypes.c_int),
    "acl_algorithm_name": ([ctypes.c_int], ctypes.c_char_p),
    "acl_algorithm_uses_ukernel": ([ctypes.c_char_p], ctypes.c_int),
    "acl_ukernel_count": ([], ctypes.c_int),
    "acl_ukernel_get": ([ctypes.c_int, ctypes.POINTER(_UkernelInfoC)], ctypes.c_int),
    "acl_int8_ukernel_count": ([], ctypes.c_int),
    "acl_int8_ukernel_name": ([ctypes.c_int], ctypes.c_char_p),
    "acl_conv_check": ([_SHAPE_P, ctypes.c_char_p, ctypes.c_char_p],
                       ctypes.c_int),
    "acl_conv_create": ([_SHAPE_P, ctypes.c_char_p, ctypes.c_char_p,
                         _FLOAT_P, _FLOAT_P, ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int),
    "acl_conv_run": ([ctypes.c_void_p, ctypes.POINTER(_ExecC), _FLOAT_P, _FLOAT_P, _FLOAT_P,
                      ctypes.POINTER(_StageTimesC)], ctypes.c_int),
    "acl_conv_destroy": ([ctypes.c_void_p], None),
    "acl_release_caller": ([], None),
    "acl_conv_scratch_bytes": ([ctypes.c_void_p], ctypes.c_size_t),
    "acl_gemm_create": ([ctypes.c_char_p, ctypes.c_int, ctypes.c_int, _FLOAT_P, ctypes.c_int,
                         ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int),
    "acl_gemm_run": ([ctypes.c_void_p, ctypes.POINTER(_ExecC), ctypes.c_int, _FLOAT_P,
                      ctypes.c_int, _FLOAT_P, ctypes.c_int, ctypes.POINTER(_StageTimesC)],
                     ctypes.c_int),
    "acl_gemm_destroy": ([ctypes.c_void_p], None),
    # Test hooks of the adaptive balance (aclengine.h).
    "acl_pool_test_stall": ([ctypes.c_int, ctypes.c_double], None),
    "acl_pool_units_taken_over": ([], ctypes.c_longlong),
}


@functools.cache
def library() -> ctypes.CDLL:
    path = native_dir() / _LIB_NAME
    if not path.exists():
        raise EngineError(f"native engine not found at {path}: install acltuner with "
                          f"'pip install .' (it builds the engine) or set ACLTUNER_NATIVE_DIR")
    return bind(ctypes.CDLL(str(path)), _SIGNATURES)


def bind(lib: ctypes.CDLL, signatures: dict) -> ctypes.CDLL:
    """Declares the argument and result types of the library's functions."""
    for name, (args, res) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res
    return lib


def trim_heap() -> None:
    """Gives the heap's free pages back to the system where the C library
    can (glibc's malloc_trim; elsewhere nothing).  Weights freed once packed
    otherwise stay in the process: a quantized light_resnet50's program held
    302 MB resident, 145 MB of it live."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


def ensure_ok(rc: int) -> None:
    """Raises the engine's one-line error for a failed call."""
    if rc != 0:
        raise EngineError(library().acl_last_error().decode())


def version() -> str:
    return library().acl_version().decode()


def fingerprint() -> str:
    """The hash of the engine's sources and compile flags this library was built from."""
    return library().acl_fingerprint().decode()


def engine_id(engine_version: str, engine_fingerprint: str) -> str:
    """What records and plans name an engine by: its version with the build's
    fingerprint as SemVer build metadata ("0.1.0+5ed377c76c95e323"), since the
    version alone does not change with each kernel edit or compile flag."""
    return f"{engine_version}+{engine_fingerprint}"


def local_engine_id() -> str:
    return engine_id(version(), fingerprint())


def hello_engine_id(hello: dict) -> str:
    """The engine id of a launcher, from its hello answer."""
    return engine_id(hello["version"], hello["fingerprint"])


def int8_ukernels() -> list[str]:
    """The int8 micro-kernels this engine's conv_int8 runs on this CPU, fastest first."""
    lib = library()
    names = [lib.acl_int8_ukernel_name(i) for i in range(lib.acl_int8_ukernel_count())]
    if any(n is None for n in names):
        raise EngineError(lib.acl_last_error().decode())
    return [n.decode() for n in names]


def hello_int8_ukernels(hello: dict) -> list[str]:
    """The int8 kernels a launcher's conv_int8 runs, fastest first, from its
    hello answer; none from a launcher older than them there (PROTOCOL.md)."""
    return list(hello.get("int8_ukernels", []))


def isa() -> str:
    return library().acl_isa().decode()


def cpu_count() -> int:
    return library().acl_cpu_count()


def algorithms() -> list[str]:
    lib = library()
    return [lib.acl_algorithm_name(i).decode() for i in range(lib.acl_algorithm_count())]


def uses_ukernel(algorithm: str) -> bool:
    return bool(library().acl_algorithm_uses_ukernel(algorithm.encode()))


def ukernels() -> list[UkernelInfo]:
    lib = library()
    out = []
    for i in range(lib.acl_ukernel_count()):
        info = _UkernelInfoC()
        ensure_ok(lib.acl_ukernel_get(i, ctypes.byref(info)))
        out.append(UkernelInfo(info.name.decode(), info.isa.decode(), info.style.decode(),
                               info.mr, info.nr, info.kmin, info.kmax, info.n_multiple,
                               info.precision.decode()))
    return out


@functools.cache
def schema() -> Schema:
    """This engine's schema, as it describes itself."""
    text = library().acl_describe()
    if text is None:
        raise EngineError(library().acl_last_error().decode())
    return Schema.from_json(text.decode())


@functools.cache
def layout() -> CtypesLayout:
    """The schema's structs as ctypes types."""
    return CtypesLayout(schema())


def _shape_c(shape: ConvShape) -> ctypes.Structure:
    return layout().shape(shape)


def _exec_c(core_weights: tuple[int, ...], workloads: int) -> tuple[_ExecC, ctypes.Array]:
    weights = (ctypes.c_int * len(core_weights))(*core_weights)
    return _ExecC(len(core_weights), weights, workloads), weights


def _fptr(a: np.ndarray | None):
    return None if a is None else a.ctypes.data_as(_FLOAT_P)


def _as_f32(a: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float32)
    if a.shape != tuple(shape):
        raise ValueError(f"{what} must have shape {tuple(shape)}, got {a.shape}")
    return a


def check(shape: ConvShape, algorithm: str, ukernel: str | None) -> str | None:
    """None if the engine can run this combination, else its one-line reason."""
    lib = library()
    rc = lib.acl_conv_check(ctypes.byref(_shape_c(shape)), algorithm.encode(),
                            (ukernel or "").encode())
    return None if rc == 0 else lib.acl_last_error().decode()


def _times(t: _StageTimesC) -> StageTimes:
    return StageTimes(t.pre_ms, t.gemm_ms, t.post_ms, t.total_ms)


class Conv:
    """One convolution with its weights packed for an algorithm and micro-kernel."""

    def __init__(self, shape: ConvShape, algorithm: str, ukernel: str | None,
                 weight: np.ndarray, bias: np.ndarray | None = None):
        self._handle = None
        self.shape = shape
        self.algorithm = algorithm
        self.ukernel = ukernel
        weight = _as_f32(weight, shape.weight_shape, "weight")
        bias = None if bias is None else _as_f32(bias, (shape.oc,), "bias")
        handle = ctypes.c_void_p()
        ensure_ok(library().acl_conv_create(ctypes.byref(_shape_c(shape)), algorithm.encode(),
                                         (ukernel or "").encode(), _fptr(weight), _fptr(bias),
                                         ctypes.byref(handle)))
        self._handle = handle

    @classmethod
    def from_config(cls, shape: ConvShape, config: ExecConfig, weight: np.ndarray,
                    bias: np.ndarray | None = None) -> "Conv":
        return cls(shape, config.algorithm, config.ukernel, weight, bias)

    @property
    def scratch_bytes(self) -> int:
        """What a run overwrites (im2col blocks, Winograd tiles, A panels, ...), sized
        for up to cpu_count() workers; a program shares one such buffer."""
        if self._handle is None:
            raise EngineError("convolution already closed")
        return library().acl_conv_scratch_bytes(self._handle)

    def run(self, x: np.ndarray, core_weights: tuple[int, ...], workloads: int,
            residual: np.ndarray | None = None,
            out: np.ndarray | None = None) -> tuple[np.ndarray, StageTimes]:
        """y = conv(x) (NHWC) on the given split; returns y and the stage times."""
        if self._handle is None:
            raise EngineError("convolution already closed")
        x = _as_f32(x, self.shape.input_shape, "input")
        if self.shape.has_residual:
            if residual is None:
                raise ValueError("this convolution fuses a residual add: pass residual=")
            residual = _as_f32(residual, self.shape.output_shape, "residual")
        else:
            residual = None
        if out is None:
            out = np.empty(self.shape.output_shape, dtype=np.float32)
        ex, _keep = _exec_c(core_weights, workloads)
        times = _StageTimesC()
        try:
            ensure_ok(library().acl_conv_run(self._handle, ctypes.byref(ex), _fptr(x),
                                             _fptr(residual), _fptr(out), ctypes.byref(times)))
        finally:
            library().acl_release_caller()  # this thread back on all its CPUs
        return out, _times(times)

    def close(self) -> None:
        if self._handle is not None:
            library().acl_conv_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self) -> "Conv":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Gemm:
    """C = A @ B with B packed once for a micro-kernel."""

    def __init__(self, ukernel: str, b: np.ndarray):
        self._handle = None
        b = np.ascontiguousarray(b, dtype=np.float32)
        self.k, self.n = b.shape
        handle = ctypes.c_void_p()
        ensure_ok(library().acl_gemm_create(ukernel.encode(), self.k, self.n, _fptr(b), self.n,
                                         ctypes.byref(handle)))
        self._handle = handle

    def run(self, a: np.ndarray, core_weights: tuple[int, ...], workloads: int,
            out: np.ndarray | None = None) -> tuple[np.ndarray, StageTimes]:
        a = np.ascontiguousarray(a, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != self.k:
            raise ValueError(f"A must be M x {self.k}, got {a.shape}")
        if out is None:
            out = np.empty((a.shape[0], self.n), dtype=np.float32)
        ex, _keep = _exec_c(core_weights, workloads)
        times = _StageTimesC()
        try:
            ensure_ok(library().acl_gemm_run(self._handle, ctypes.byref(ex), a.shape[0],
                                             _fptr(a), self.k, _fptr(out), self.n,
                                             ctypes.byref(times)))
        finally:
            library().acl_release_caller()
        return out, _times(times)

    def close(self) -> None:
        if self._handle is not None:
            library().acl_gemm_destroy(self._handle)
            self._handle = None

    __del__ = close
