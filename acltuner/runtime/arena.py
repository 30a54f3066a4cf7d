"""Arena planning: an offset for every buffer of a native stage, reusing the
regions of buffers no longer needed.

Buffers are placed in the order the operations first write them; a buffer is
freed after the last operation that reads it.  Constants stay for the whole
program, inputs from the host from the start, and tensors copied out after
the run to the end.  Each new buffer takes the lowest free region that fits
(first fit) or goes on top of the arena.

An operation's output never overlaps its inputs, except that an elementwise
one (IN_PLACE_KINDS) writes over an input that no other operation reads, of
the output's size and layout (aclgraph.h allows it): a residual Add or a
transformer block's Mul then touches half the memory (MobileViT-XXS's arena
10.1 -> 6.1 MiB, its elementwise nodes 0.71-0.92 -> 0.58-0.81 ms).  Not
over a tensor another operation read first: a squeeze-and-excitation gate's
pooling reads every line of its map on both cores, and overwriting those
lines in place then takes each back from the other core's cache
(MobileNetV3's 28x28x120 gates took 2-3x as long in place).
"""
from __future__ import annotations

import math

from acltuner.runtime.ir import Buffer, NativeStage

# Offsets are multiples of 16 floats (64 bytes, a cache line and an AVX-512 vector).
ALIGN = 16
_FOREVER = math.inf
# The operations the engine lets write over an input with exactly the
# output's region and dims: each output element from the input's at its place.
IN_PLACE_KINDS = frozenset({"unary", "binary", "softmax", "affine"})


class _FirstFit:
    def __init__(self) -> None:
        self.holes: list[tuple[int, int]] = []  # (offset, floats), sorted, each below `end`
        self.end = 0  # everything from here up is free
        self.peak = 0

    def alloc(self, floats: int) -> int:
        floats = -(-max(floats, 1) // ALIGN) * ALIGN
        for i, (offset, size) in enumerate(self.holes):
            if size >= floats:
                if size == floats:
                    del self.holes[i]
                else:
                    self.holes[i] = (offset + floats, size - floats)
                return offset
        offset = self.end
        self.end += floats
        self.peak = max(self.peak, self.end)
        return offset

    def free(self, offset: int, floats: int) -> None:
        floats = -(-max(floats, 1) // ALIGN) * ALIGN
        holes = sorted([*self.holes, (offset, floats)])
        merged: list[tuple[int, int]] = []
        for off, size in holes:
            if merged and merged[-1][0] + merged[-1][1] == off:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((off, size))
        if merged and merged[-1][0] + merged[-1][1] == self.end:
            self.end = merged.pop()[0]
        self.holes = merged


def lifetimes(stage: NativeStage) -> dict[Buffer, tuple[float, float]]:
    """(first write, last read) of every buffer, as operation indices; -1 is
    before the first operation, infinity after the last."""
    span: dict[Buffer, list[float]] = {}
    for b in stage.constants:
        span[b] = [-1, _FOREVER]
    for v in stage.imports.values():
        span.setdefault(v.buffer, [-1, -1])
    for i, op in enumerate(stage.ops):
        for v in op.reads:
            if v.buffer not in span:
                raise AssertionError(f"{op.node}: reads a tensor no earlier operation wrote")
            span[v.buffer][1] = max(span[v.buffer][1], i)
        span.setdefault(op.out.buffer, [i, i])
    for v in stage.exports.values():
        span[v.buffer][1] = _FOREVER
    return {b: (first, last) for b, (first, last) in span.items()}


def in_place_donors(stage: NativeStage, spans: dict[Buffer, tuple[float, float]]
                    ) -> dict[Buffer, Buffer]:
    """Output buffer -> the input buffer whose region it takes over: the
    operation is elementwise, writes the whole output first, and is the only
    one to read that input, which is a float tensor read whole (every read
    of it by the operation), of the output's floats and dims."""
    readers: dict[Buffer, set[int]] = {}
    for i, op in enumerate(stage.ops):
        for v in op.reads:
            readers.setdefault(v.buffer, set()).add(i)
    donors: dict[Buffer, Buffer] = {}
    for i, op in enumerate(stage.ops):
        out = op.out
        if op.kind not in IN_PLACE_KINDS or out.u8 or out.offset or spans[out.buffer][0] != i:
            continue
        for v in op.reads:
            b = v.buffer
            whole = all(w.offset == 0 and w.dims == out.dims and not w.u8
                        for w in op.reads if w.buffer is b)
            if whole and readers[b] == {i} and spans[b][1] == i \
                    and b.floats == out.buffer.floats:
                donors[out.buffer] = b
                break
    return donors


def plan_arena(stage: NativeStage) -> int:
    """Sets every buffer's offset; returns the arena's size in floats."""
    spans = lifetimes(stage)
    donors = in_place_donors(stage, spans)
    donated = set(donors.values())
    starting: dict[float, list[Buffer]] = {}
    ending: dict[float, list[Buffer]] = {}
    for b, (first, last) in spans.items():  # dicts keep first-write order
        starting.setdefault(first, []).append(b)
        ending.setdefault(last, []).append(b)
    fit = _FirstFit()
    for t in range(-1, len(stage.ops)):
        for b in starting.get(t, []):
            donor = donors.get(b)
            b.offset = donor.offset if donor is not None else fit.alloc(b.floats)
        for b in ending.get(t, []):
            if b not in donated:  # its region lives on as its recipient's
                fit.free(b.offset, b.floats)
    return fit.peak
