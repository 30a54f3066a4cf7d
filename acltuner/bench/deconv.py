"""`acltuner bench deconv`: a decoder's ConvTranspose layers (1x64x40x40 -> 32
channels, 2x2 and 4x4 kernels at stride 2) through each native algorithm and
through onnxruntime, measured side by side."""
from __future__ import annotations

import math

import click
import numpy as np
import onnxruntime as ort

from acltuner.bench.conv import _candidate_ukernels, best_time_ms
from acltuner.engine import native
from acltuner.engine.config import ConvShape
from acltuner.engine.timing import median_ms
from acltuner.onnx.conv_attrs import conv_model

ALGORITHMS = ("deconv_col2im", "deconv_phase")


def _layer(k: int, pad: int) -> ConvShape:
    return ConvShape(n=1, h=40, w=40, c=64, oc=32, kh=k, kw=k, stride_h=2, stride_w=2,
                     pad_top=pad, pad_left=pad, pad_bottom=pad, pad_right=pad, transposed=True)


LAYERS = [("k2s2", _layer(2, 0)), ("k4s2p1", _layer(4, 1))]


def onnxruntime_ms(shape: ConvShape, threads: int, rng: np.random.Generator) -> float:
    """Median ms of the one-node model under onnxruntime (default optimisations)."""
    weight = rng.standard_normal(shape.weight_shape, dtype=np.float32)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(conv_model(shape, weight, None).SerializeToString(), opts,
                                   providers=["CPUExecutionProvider"])
    n, h, w, c = shape.input_shape
    feed = {"X": rng.standard_normal((n, c, h, w), dtype=np.float32)}
    return median_ms(lambda: session.run(None, feed), min_repeat_ms=60, min_repeats=3)


def run(quick: bool = False) -> float:
    rng = np.random.default_rng(0)
    ncpu = native.cpu_count()
    weights, workloads = (1,) * ncpu, 4 * ncpu
    click.echo(f"ConvTranspose 1x64x40x40 -> 32, stride 2, ms (median; best micro-kernel per "
               f"algorithm), isa {native.isa()}, core weights {':'.join(map(str, weights))}, "
               f"{workloads} workloads; onnxruntime on {ncpu} intra-op threads")
    click.echo(f"{'layer':10s}{'GFLOP':>7s}" + "".join(f"{a:>16s}" for a in ALGORITHMS)
               + f"{'onnxruntime':>14s}{'ort/best':>10s}")
    ratios = []
    for name, shape in LAYERS:
        ours = [best_time_ms(shape, a, _candidate_ukernels(a, quick), weights, workloads, rng)[0]
                for a in ALGORITHMS]
        theirs = onnxruntime_ms(shape, ncpu, rng)
        ratios.append(theirs / min(ours))
        click.echo(f"{name:10s}{shape.flops / 1e9:7.3f}" + "".join(f"{t:16.3f}" for t in ours)
                   + f"{theirs:14.3f}{ratios[-1]:10.2f}")
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    click.echo(f"deconv_vs_onnxruntime: {geomean:.3f}")
    return geomean
