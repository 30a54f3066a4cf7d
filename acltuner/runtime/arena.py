"""Arena planning: an offset for every buffer of a native stage, reusing the
regions of buffers no longer needed.

Buffers are placed in the order the operations first write them; a buffer is
freed after the last operation that reads it, so an operation's output never
overlaps its own inputs.  Constants stay for the whole program, inputs from
the host from the start, and tensors copied out after the run to the end.
Each new buffer takes the lowest free region that fits (first fit) or goes on
top of the arena.
"""
from __future__ import annotations

import math

from acltuner.runtime.ir import Buffer, NativeStage

# Offsets are multiples of 16 floats (64 bytes, a cache line and an AVX-512 vector).
ALIGN = 16
_FOREVER = math.inf


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


def plan_arena(stage: NativeStage) -> int:
    """Sets every buffer's offset; returns the arena's size in floats."""
    spans = lifetimes(stage)
    starting: dict[float, list[Buffer]] = {}
    ending: dict[float, list[Buffer]] = {}
    for b, (first, last) in spans.items():  # dicts keep first-write order
        starting.setdefault(first, []).append(b)
        ending.setdefault(last, []).append(b)
    fit = _FirstFit()
    for t in range(-1, len(stage.ops)):
        for b in starting.get(t, []):
            b.offset = fit.alloc(b.floats)
        for b in ending.get(t, []):
            fit.free(b.offset, b.floats)
    return fit.peak
