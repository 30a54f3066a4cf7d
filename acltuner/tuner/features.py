"""Appendix F's cost-model features: one numeric row per (task, ExecConfig).

Task columns (constant within one task, kept so one matrix layout serves every
task): input W, H, C; weights N, W, H; the four paddings; both strides; both
dilations; group; whether it is a transposed convolution and its output
padding.  Config columns: algorithm one-hot; the micro-kernel both
one-hot (two kernels can share a tile and a style, e.g. the same tile for two
ISAs) and by its attributes MR, NR and a style one-hot (so a tree can split on
"wide tiles" with few samples); log2 of the workload count; the total thread
count; and per cluster its thread count, its share of the total weight and the
largest single-core share in it -- the static split in the engine's pool hands
each core workloads in proportion to its weight, so those shares decide which
core finishes last.  The same two shares are also given as the pool actually
rounds them (whole workloads), which with few workloads differ a lot from the
weights: 1 workload over 1:1:1:1 runs on one core.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from acltuner.engine.config import ConvShape, ExecConfig

_TASK_FIELDS = (("in_w", "w"), ("in_h", "h"), ("in_c", "c"), ("wt_n", "oc"), ("wt_w", "kw"),
                ("wt_h", "kh"), ("pad_top", "pad_top"), ("pad_left", "pad_left"),
                ("pad_bottom", "pad_bottom"), ("pad_right", "pad_right"),
                ("stride_h", "stride_h"), ("stride_w", "stride_w"), ("dil_h", "dil_h"),
                ("dil_w", "dil_w"), ("group", "group"), ("transposed", "transposed"),
                ("out_pad_h", "out_pad_h"), ("out_pad_w", "out_pad_w"))


class FeatureEncoder:
    """algorithms: every algorithm name a config may use; ukernels: micro-kernel
    name -> mapping with at least mr, nr and style (extra keys are ignored, so
    vars() of the engine's UkernelInfo works); cluster_of: cluster index of
    each CPU id, in core_weights order, -1 for a CPU the tuner never uses
    (SearchSpace.cluster_of)."""

    def __init__(self, algorithms: Sequence[str], ukernels: Mapping[str, Mapping],
                 cluster_of: Sequence[int]):
        self.algorithms = tuple(algorithms)
        self.ukernels = tuple(ukernels)
        self.cluster_of = np.asarray(cluster_of, dtype=np.int64)
        if (self.cluster_of.ndim != 1 or not len(self.cluster_of)
                or self.cluster_of.min() < -1 or self.cluster_of.max() < 0):
            raise ValueError(f"cluster_of needs a cluster index (-1: none) per CPU, "
                             f"got {cluster_of}")
        self.nclusters = int(self.cluster_of.max()) + 1
        styles = sorted({str(ukernels[u]["style"]) for u in self.ukernels})
        self._alg_index = {a: i for i, a in enumerate(self.algorithms)}
        # Row u + 1 holds kernel u's attribute columns; row 0 is "no micro-kernel"
        # (direct algorithms), all zeros.
        self._uk_index: dict[str | None, int] = {u: i + 1 for i, u in enumerate(self.ukernels)}
        self._uk_index[None] = 0
        nuk = len(self.ukernels)
        self._uk_table = np.zeros((nuk + 1, nuk + 2 + len(styles)))
        for i, u in enumerate(self.ukernels):
            info, row = ukernels[u], i + 1
            self._uk_table[row, i] = 1.0
            self._uk_table[row, nuk] = info["mr"]
            self._uk_table[row, nuk + 1] = info["nr"]
            self._uk_table[row, nuk + 2 + styles.index(str(info["style"]))] = 1.0
        self.feature_names = (
            [name for name, _ in _TASK_FIELDS]
            + [f"alg={a}" for a in self.algorithms]
            + [f"uk={u}" for u in self.ukernels] + ["uk_mr", "uk_nr"]
            + [f"uk_style={s}" for s in styles]
            + ["log2_workloads", "threads"]
            + [f"c{c}_{what}" for c in range(self.nclusters)
               for what in ("threads", "share", "max_core_share", "unit_share",
                            "max_core_unit_share")])

    def encode(self, shape: ConvShape, configs: Sequence[ExecConfig]) -> np.ndarray:
        n = len(configs)
        ncores = len(self.cluster_of)
        try:
            alg = np.fromiter((self._alg_index[c.algorithm] for c in configs), np.int64, n)
        except KeyError as e:
            raise ValueError(f"algorithm {e.args[0]!r} is not one of {self.algorithms}") from None
        try:
            uk = np.fromiter((self._uk_index[c.ukernel] for c in configs), np.int64, n)
        except KeyError as e:
            raise ValueError(f"micro-kernel {e.args[0]!r} is not one of {self.ukernels}") from None
        bad = next((c for c in configs if len(c.core_weights) != ncores), None)
        if bad is not None:
            raise ValueError(f"config {bad} has {len(bad.core_weights)} core weights, "
                             f"the board has {ncores} CPUs")
        weights = np.array([c.core_weights for c in configs], dtype=np.float64).reshape(n, ncores)
        workloads = np.fromiter((c.workloads for c in configs), np.float64, n)

        total = weights.sum(axis=1, keepdims=True)
        share = weights / total
        # The pool's split: core i runs workloads [floor(W * cum_{i-1} / total),
        # floor(W * cum_i / total)), so with few workloads some cores get none.
        # (The engine caps W at the row or tile count, rarely that small.)
        bounds = np.floor(workloads[:, None] * np.cumsum(weights, axis=1) / total)
        unit_share = np.diff(bounds, axis=1, prepend=0.0) / workloads[:, None]
        active = weights > 0
        per_cluster = []
        for cl in range(self.nclusters):
            cols = self.cluster_of == cl
            per_cluster += [active[:, cols].sum(axis=1), share[:, cols].sum(axis=1),
                            share[:, cols].max(axis=1, initial=0.0),
                            unit_share[:, cols].sum(axis=1),
                            unit_share[:, cols].max(axis=1, initial=0.0)]

        task = np.array([getattr(shape, f) for _, f in _TASK_FIELDS], dtype=np.float64)
        return np.hstack([
            np.broadcast_to(task, (n, len(task))),
            np.eye(len(self.algorithms))[alg],
            self._uk_table[uk],
            np.column_stack([np.log2(workloads), active.sum(axis=1)] + per_cluster),
        ])
