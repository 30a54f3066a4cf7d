"""`acltuner bench conv`: every algorithm on the distinct ResNet-18 / VGG-16
layers, each with its fastest micro-kernel, measured side by side."""
from __future__ import annotations

import math

import click
import numpy as np

from acltuner.bench.layers import LAYERS
from acltuner.engine import native
from acltuner.engine.config import ConvShape
from acltuner.engine.timing import median_ms
from acltuner.taskgen.tasks import task_key


def _candidate_ukernels(algorithm: str, quick: bool) -> list[str | None]:
    if not native.uses_ukernel(algorithm):
        return [None]
    kernels = native.ukernels()
    if quick:  # the first (fastest family's) kernel of each packing style
        seen: dict[str, str] = {}
        for uk in kernels:
            seen.setdefault(uk.style, uk.name)
        return list(seen.values())
    return [uk.name for uk in kernels]


def best_time_ms(shape: ConvShape, algorithm: str, ukernels: list[str | None],
                 weights: tuple[int, ...], workloads: int,
                 rng: np.random.Generator) -> tuple[float, str | None]:
    """The fastest (median ms, micro-kernel) of `algorithm` over `ukernels`;
    ValueError if none applies."""
    x = rng.standard_normal(shape.input_shape, dtype=np.float32)
    w = rng.standard_normal(shape.weight_shape, dtype=np.float32)
    out = np.empty(shape.output_shape, dtype=np.float32)
    best = None
    for uk in ukernels:
        if native.check(shape, algorithm, uk) is not None:
            continue
        with native.Conv(shape, algorithm, uk, w) as conv:
            ms = median_ms(lambda: conv.run(x, weights, workloads, out=out),
                           min_repeat_ms=60, min_repeats=3)
        if best is None or ms < best[0]:
            best = (ms, uk)
    if best is None:
        raise ValueError(f"{algorithm} runs none of the micro-kernels "
                         f"{', '.join(str(uk) for uk in ukernels)} on {task_key(shape)}")
    return best


def run(quick: bool = False, names: list[str] | None = None) -> float:
    rng = np.random.default_rng(0)
    layers = [(n, s) for n, s in LAYERS if not names or n in names]
    unknown = set(names or ()) - {n for n, _ in layers}
    if unknown:
        raise ValueError(f"unknown layer(s) {', '.join(sorted(unknown))}; known: "
                         f"{', '.join(n for n, _ in LAYERS)}")
    ncpu = native.cpu_count()
    weights = (1,) * ncpu
    workloads = 4 * ncpu
    algos = [a for a in native.algorithms() if a != "reference"]
    applies = {name: [a for a in algos if any(native.check(shape, a, uk) is None
                                              for uk in _candidate_ukernels(a, quick))]
               for name, shape in layers}
    shown = [a for a in algos if any(a in row for row in applies.values())]
    click.echo(f"Convolution layers, ms (median; best micro-kernel per algorithm), isa "
               f"{native.isa()}, core weights {':'.join(map(str, weights))}, "
               f"{workloads} workloads")
    click.echo(f"{'layer':26s}{'GFLOP':>7s}" + "".join(f"{a:>18s}" for a in shown))
    results: dict[str, dict[str, float]] = {}
    for name, shape in layers:  # each row is printed as soon as it is measured
        row = {}
        for algo in applies[name]:
            row[algo] = best_time_ms(shape, algo, _candidate_ukernels(algo, quick), weights,
                                     workloads, rng)[0]
        results[name] = row
        cells = "".join(f"{row[a]:18.2f}" if a in row else f"{'-':>18s}" for a in shown)
        click.echo(f"{name:26s}{shape.flops / 1e9:7.2f}{cells}")
    ratios = [row["im2col"] / row["winograd_4x4_3x3"] for row in results.values()
              if "winograd_4x4_3x3" in row and "im2col" in row]
    if not ratios:
        raise ValueError("none of the chosen layers can run both im2col and winograd_4x4_3x3")
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    click.echo(f"winograd4x4_vs_im2col: {geomean:.3f}")
    return geomean
