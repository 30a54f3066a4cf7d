"""Tensor layouts as permutations.

A tensor's layout is the permutation `perm` such that the arena holds
onnx_tensor.transpose(perm): the identity is ONNX's own order, NHWC is
(0, 2, 3, 1).  Keeping the permutation (rather than a layout name) lets a
Transpose node, a layout conversion and a Softmax that moves its axis
innermost compose into a single copy, or into none.
"""
from __future__ import annotations

from collections.abc import Sequence

Perm = tuple[int, ...]

NHWC: Perm = (0, 2, 3, 1)


def identity(rank: int) -> Perm:
    return tuple(range(rank))


def inverse(perm: Sequence[int]) -> Perm:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)


def then(first: Sequence[int], second: Sequence[int]) -> Perm:
    """x.transpose(first).transpose(second) == x.transpose(then(first, second))."""
    return tuple(first[i] for i in second)


def permuted(dims: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(dims[p] for p in perm)


def same_memory(dims: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether x.transpose(perm) has x's memory order: axes of size 1 may move
    anywhere, the others must keep their order (e.g. NHWC of a 1x1 map)."""
    moved = [p for p in perm if dims[p] != 1]
    return moved == sorted(moved)


def preferred(rank: int) -> Perm:
    """The layout new 4-D activations get: NHWC, what convolutions and pools read."""
    return NHWC if rank == 4 else identity(rank)


def _groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Pairs (source axes, destination axes) of a reshape whose sizes match,
    each as small as possible; axes of size 1 are left out."""
    s = [i for i, d in enumerate(src) if d != 1]
    t = [j for j, d in enumerate(dst) if d != 1]
    groups = []
    i = j = 0
    while i < len(s):
        gs, gt = [s[i]], [t[j]]
        ps, pt = src[s[i]], dst[t[j]]
        i, j = i + 1, j + 1
        while ps != pt:
            if ps < pt:
                gs.append(s[i])
                ps *= src[s[i]]
                i += 1
            else:
                gt.append(t[j])
                pt *= dst[t[j]]
                j += 1
        groups.append((gs, gt))
    return groups


def reshaped(src: Sequence[int], perm: Sequence[int], dst: Sequence[int]) -> Perm | None:
    """A layout for reshaping a tensor of dims `src` held in layout `perm` to
    `dst` without moving data, or None when the ONNX order must be restored
    first.  It exists when each group of source axes that becomes a group of
    destination axes is contiguous and in order in the layout, e.g. splitting
    the channels of an NHWC map, or flattening a 1x1 one."""
    groups = _groups(src, dst)
    group_of = {axes[0]: (axes, out) for axes, out in groups}
    order = [p for p in perm if src[p] != 1]
    layout = [j for j, d in enumerate(dst) if d == 1]
    pos = 0
    while pos < len(order):
        if order[pos] not in group_of:
            return None
        axes, out = group_of[order[pos]]
        if order[pos:pos + len(axes)] != axes:
            return None
        layout += out
        pos += len(axes)
    return tuple(layout)


def source_layout(src: Sequence[int], dst: Sequence[int], layout: Sequence[int]) -> Perm | None:
    """The converse of reshaped(): a layout for the source that the reshape
    turns into `layout` of the destination without moving data, or None."""
    group_of = {out[0]: (axes, out) for axes, out in _groups(src, dst)}
    order = [p for p in layout if dst[p] != 1]
    found = [i for i, d in enumerate(src) if d == 1]
    pos = 0
    while pos < len(order):
        if order[pos] not in group_of:
            return None
        axes, out = group_of[order[pos]]
        if order[pos:pos + len(out)] != out:
            return None
        found += axes
        pos += len(out)
    return tuple(found)
