"""The search space of one task: algorithm x micro-kernel x core placement x workloads.

A placement gives each core a weight.  Cores of one cluster are identical, so a
placement is chosen per cluster: how many of its cores run (always the first
ones) and at which weight; placements that are the same up to a common factor
(2:2 and 1:1) split the work identically and are kept once.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence, Set

import numpy as np

from acltuner.engine.config import ConvShape, ExecConfig

WEIGHT_LEVELS = (1, 2, 3, 4)
WORKLOADS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64)

CheckFn = Callable[[ConvShape, str, "str | None"], "str | None"]


def placements(clusters: Sequence[Sequence[int]], ncores: int,
               levels: Sequence[int] = WEIGHT_LEVELS) -> list[tuple[int, ...]]:
    """Every distinct core-weight vector: per cluster, its first k cores at one weight."""
    per_cluster = [[(0, 0)] + [(k, w) for k in range(1, len(cpus) + 1) for w in levels]
                   for cpus in clusters]
    seen: set[tuple[int, ...]] = set()
    out = []
    for choice in itertools.product(*per_cluster):
        weights = [0] * ncores
        for cpus, (k, w) in zip(clusters, choice):
            for cpu in sorted(cpus)[:k]:
                weights[cpu] = w
        g = math.gcd(*weights)
        if g == 0:
            continue
        vec = tuple(x // g for x in weights)
        if vec not in seen:
            seen.add(vec)
            out.append(vec)
    return out


class SearchSpace:
    """The valid ExecConfigs of one convolution on one board, indexable as a product."""

    def __init__(self, shape: ConvShape, clusters: Sequence[Sequence[int]], ncores: int,
                 algorithms: Sequence[tuple[str, bool]], ukernels: Sequence[str],
                 check: CheckFn, workloads: Sequence[int] = WORKLOADS,
                 levels: Sequence[int] = WEIGHT_LEVELS):
        self.shape = shape
        self.cluster_of = tuple(next((i for i, cpus in enumerate(clusters) if c in cpus), -1)
                                for c in range(ncores))
        self.nclusters = len(clusters)
        self.pairs = [(a, uk) for a, uses in algorithms if a != "reference"
                      for uk in (ukernels if uses else [None])
                      if check(shape, a, uk) is None]
        if not self.pairs:
            raise ValueError(f"no algorithm of this engine can run {shape}")
        # Pair indices by algorithm: random picks choose the algorithm first, so
        # that a direct algorithm (one pair) is not drowned by a GEMM-based one
        # with a pair per micro-kernel.
        by_algorithm: dict[str, list[int]] = {}
        for i, (a, _) in enumerate(self.pairs):
            by_algorithm.setdefault(a, []).append(i)
        self.by_algorithm = list(by_algorithm.values())
        self.placements = placements(clusters, ncores, levels)
        self.workloads = tuple(workloads)
        self.size = len(self.pairs) * len(self.placements) * len(self.workloads)
        self._index = ({p: i for i, p in enumerate(self.pairs)},
                       {p: i for i, p in enumerate(self.placements)},
                       {w: i for i, w in enumerate(self.workloads)})

    def config(self, index: int) -> ExecConfig:
        rest, w = divmod(index, len(self.workloads))
        pair, p = divmod(rest, len(self.placements))
        algorithm, ukernel = self.pairs[pair]
        return ExecConfig(algorithm, ukernel, self.placements[p], self.workloads[w])

    def heads(self, config: ExecConfig, kernel_of: Callable[[str], str | None]
              ) -> list[ExecConfig]:
        """Each algorithm of the space but config's, once, on config's
        placement and workloads, with the micro-kernel kernel_of(algorithm)
        names where the space has that pair, else the algorithm's first.
        Measured before any search, they show every algorithm on all the
        cores the rule uses: a search that happens never to draw an algorithm
        there can miss it (ResNeXt's 32 groups of 16 channels on 14x14:
        grouped_direct drawn four times in 30, each time on one core, 0.27 ms,
        against 0.16 ms on both)."""
        out = []
        for indices in self.by_algorithm:
            a = self.pairs[indices[0]][0]
            if a != config.algorithm:
                options = [self.pairs[i][1] for i in indices]
                wanted = kernel_of(a)
                out.append(ExecConfig(a, wanted if wanted in options else options[0],
                                      config.core_weights, config.workloads))
        return out

    def neighbours(self, config: ExecConfig) -> list[ExecConfig]:
        """The configs of the space one move from config: another (algorithm,
        kernel) pair, placement or workload count, the rest kept."""
        pairs, places, loads = self._index
        key = ((config.algorithm, config.ukernel), config.core_weights, config.workloads)
        if key[0] not in pairs or key[1] not in places or key[2] not in loads:
            return []
        pair, p, w = pairs[key[0]], places[key[1]], loads[key[2]]
        npl, nw = len(self.placements), len(self.workloads)
        out = [(q * npl + p) * nw + w for q in range(len(self.pairs)) if q != pair]
        out += [(pair * npl + q) * nw + w for q in range(npl) if q != p]
        out += [(pair * npl + p) * nw + q for q in range(nw) if q != w]
        return [self.config(i) for i in out]

    def all(self) -> list[ExecConfig]:
        return [self.config(i) for i in range(self.size)]

    def sample(self, rng: np.random.Generator, k: int,
               exclude: Set[ExecConfig] = frozenset()) -> list[ExecConfig]:
        """Up to k distinct configs not in `exclude`: the algorithm uniformly, then
        its micro-kernel, placement and workloads (uniformly over what is left
        when little is)."""
        if k <= 0:
            return []
        if self.size <= 4 * (k + len(exclude)):  # dense: draw from what is left
            left = [c for c in self.all() if c not in exclude]
            picks = rng.permutation(len(left))[:k]
            return [left[i] for i in picks]
        out: dict[ExecConfig, None] = {}
        while len(out) < k:
            for _ in range(2 * (k - len(out))):
                pairs = self.by_algorithm[rng.integers(len(self.by_algorithm))]
                pair = pairs[rng.integers(len(pairs))]
                p, w = rng.integers(len(self.placements)), rng.integers(len(self.workloads))
                c = self.config(int((pair * len(self.placements) + p) * len(self.workloads) + w))
                if c not in exclude and c not in out:
                    out[c] = None
                    if len(out) == k:
                        break
        return list(out)
