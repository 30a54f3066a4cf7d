"""`acltuner bench gemm`: single-core SGEMM GFLOP/s of every micro-kernel, and
the best one against numpy's BLAS on one thread, measured in the same run."""
from __future__ import annotations

import os
import subprocess
import sys

import click
import numpy as np

from acltuner.engine import native
from acltuner.engine.timing import median_ms

# (label, M, N, K) beside the square GEMM: ResNet-18 layer1's im2col GEMM, and small-K
# GEMMs (a first layer's shape) where the smallk kernels apply.
SHAPES = [
    ("3136x64x576", 3136, 64, 576),
    ("12544x64x16", 12544, 64, 16),
    ("12544x64x8", 12544, 64, 8),
]

_NUMPY_PROBE = """
import os, statistics, sys, time
os.sched_setaffinity(0, {int(sys.argv[2])})
import numpy as np
n = int(sys.argv[1])
rng = np.random.default_rng(0)
a = rng.random((n, n), dtype=np.float32)
b = rng.random((n, n), dtype=np.float32)
a @ b
times = []
for _ in range(7):
    t = time.perf_counter(); a @ b; times.append(time.perf_counter() - t)
print(2 * n ** 3 / statistics.median(times) / 1e9)
"""


def numpy_gflops(n: int, cpu: int) -> float:
    """numpy's matmul GFLOP/s on one thread pinned to `cpu`, in a fresh process so the
    BLAS thread count can be fixed before numpy loads."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _NUMPY_PROBE, str(n), str(cpu)], env=env,
                         check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def _gflops(uk: native.UkernelInfo, m: int, n: int, k: int, weights: tuple[int, ...],
            rng: np.random.Generator) -> float | None:
    if (uk.kmax and not uk.kmin < k <= uk.kmax) or n % uk.n_multiple:
        return None
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    gemm = native.Gemm(uk.name, b)
    try:
        c = np.empty((m, n), dtype=np.float32)
        ms = median_ms(lambda: gemm.run(a, weights, 1, out=c), min_repeat_ms=200, min_repeats=3)
    finally:
        gemm.close()
    return 2.0 * m * n * k / (ms * 1e6)


def run(cpu: int = 0, square: int = 1024, kernels: list[str] | None = None) -> float:
    rng = np.random.default_rng(0)
    shapes = [(f"{square}^3", square, square, square)] + SHAPES
    chosen = [uk for uk in native.ukernels() if not kernels or uk.name in kernels]
    unknown = set(kernels or ()) - {uk.name for uk in chosen}
    if unknown:
        raise ValueError(f"unknown micro-kernel(s) {', '.join(sorted(unknown))}; "
                         f"see 'acltuner engine list'")
    weights = tuple(1 if i == cpu else 0 for i in range(native.cpu_count()))
    click.echo(f"SGEMM GFLOP/s, one thread pinned to CPU {cpu}, isa {native.isa()}")
    header = f"{'micro-kernel':28s}" + "".join(f"{label:>14s}" for label, *_ in shapes)
    click.echo(header)
    best = 0.0
    for uk in chosen:
        row = []
        for label, m, n, k in shapes:
            g = _gflops(uk, m, n, k, weights, rng)
            row.append(f"{g:14.1f}" if g is not None else f"{'-':>14s}")
            if g is not None and label == shapes[0][0]:
                best = max(best, g)
        click.echo(f"{uk.name:28s}" + "".join(row))
    blas = numpy_gflops(square, cpu)
    click.echo(f"{'numpy matmul (1 thread)':28s}{blas:14.1f}")
    ratio = best / blas
    click.echo(f"gemm_vs_blas: {ratio:.3f}")
    return ratio
