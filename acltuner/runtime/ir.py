"""What lowering produces: native operations over arena buffers, and the
delegated segments between them.

A Buffer is a region of a native stage's arena (placed by arena.py); a Value is
an ONNX tensor as stored in a buffer: its ONNX shape and layout, and where it
starts in the buffer.  Aliases (Reshape, Flatten, Dropout...) are several
Values of one Buffer, and so are views (a Slice or Split output that is a
contiguous range of its input), so liveness is tracked per buffer.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx

from acltuner.runtime.layout import Perm, permuted


@dataclass(eq=False)
class Buffer:
    floats: int
    constant: np.ndarray | None = None  # contents of a constant, in arena order
    offset: int = -1  # in floats, set by arena planning


@dataclass(eq=False)
class Value:
    buffer: Buffer
    shape: tuple[int, ...]  # ONNX order
    perm: Perm  # the arena holds the ONNX tensor transposed by perm
    offset: int = 0  # in floats from the buffer's start (views)
    # A quantized tensor: one uint8 a value, its buffer a quarter of the
    # floats (aclgraph.h); only the quantized operations read or write one.
    u8: bool = False

    def relabel(self, shape: tuple[int, ...], perm: Perm) -> Value:
        """The same floats seen with another shape and layout."""
        return Value(self.buffer, tuple(shape), tuple(perm), self.offset, self.u8)

    @property
    def dims(self) -> tuple[int, ...]:
        """The shape as laid out in the arena."""
        return permuted(self.shape, self.perm)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Deferred:
    """An argument computed when its operation is built (a folded weight), so
    that such arrays exist one at a time, each freed once packed."""
    make: Callable[[], np.ndarray]
    nbytes: int


@dataclass(eq=False)
class Op:
    """One operation of the native graph: `kind` its name in ACL_GRAPH_OPS,
    `tensors` its tensors by role ("out" is written, the rest are its inputs
    in order), `args` its attributes (Deferred ones computed when built).
    `node` and `what` label it in profiles.  `product`: (batches, M, K, N) of
    a MatMul or Gemm whose micro-kernel the plan may choose (product_search.py),
    else None."""
    kind: str
    node: str
    what: str
    tensors: dict[str, Value | list[Value] | None]
    args: dict = field(default_factory=dict)
    product: tuple[int, int, int, int] | None = None

    @property
    def out(self) -> Value:
        out = self.tensors["out"]
        assert isinstance(out, Value), f"{self.node}: an operation writes one tensor"
        return out

    @property
    def reads(self) -> list[Value]:
        found: list[Value] = []
        for name, t in self.tensors.items():
            if name != "out" and t is not None:
                found.extend(t if isinstance(t, list) else [t])
        return found


@dataclass(eq=False)
class NativeStage:
    """Operations run by one native graph.  imports are tensors copied in from
    the host before it runs (graph inputs, results of earlier stages); exports
    are copied out after it (graph outputs, inputs of later stages)."""
    ops: list[Op] = field(default_factory=list)
    imports: dict[str, Value] = field(default_factory=dict)
    exports: dict[str, Value] = field(default_factory=dict)
    # Every ONNX tensor lowered here, by name: its Values in each layout made so far.
    values: dict[str, list[Value]] = field(default_factory=dict)
    constants: list[Buffer] = field(default_factory=list)
    # Named constants placed so far, by (name, rank, layout).
    constant_values: dict[tuple, Value] = field(default_factory=dict)


@dataclass(eq=False)
class DelegatedSegment:
    """Consecutive nodes run by onnxruntime as one sub-model."""
    nodes: list[onnx.NodeProto]
    inputs: list[str]
    outputs: list[str]


Stage = NativeStage | DelegatedSegment
