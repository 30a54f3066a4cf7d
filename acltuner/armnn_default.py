"""The baseline every task is compared with: ArmNN / Arm Compute Library's rules
(the ACLTuner paper, Appendix B, Algorithm 1 and Table 3) mapped onto this engine.

Method (Algorithm 1, per group, NHWC):
  dilation != 1 or stride != 1                 -> General   = im2col
  input > 1e6 elements and kernel height > 7  -> Naive     = im2col (no naive method here)
  kernel height > 7 and C_in > C_out          -> FFT       = im2col (no FFT here)
  C_in < 16 or a 1x1 kernel                    -> General   = gemm1x1 for 1x1, else im2col
  kernel 3x3 / 3x1                             -> Winograd  = winograd_4x4_3x3 / _4x1_3x1
  (5x1 and 7x1 Winograd do not exist here and fall through)
  kernel smaller than 4x4                      -> Direct    = indirect (GEMM on the input in place)
  otherwise                                    -> General   = im2col
Depthwise convolutions (group == C) use ACL's NHWC depthwise kernel, which
vectorises over channels: depthwise_channel_block, or depthwise_pixel when
there are several output channels per input channel.
Transposed convolutions: ACL's NEON deconvolution (NEDeconvolutionLayer)
upsamples the input with zeros, then runs a stride-1 convolution: here
deconv_phase, the same convolution without the zeros; depthwise ones
(group == C) the direct deconv_depthwise, as for ordinary convolutions.

GEMM kernel (ADDGEMM): among the best ISA family's kernels valid for the GEMM,
the one with the lowest estimated cost: smallK kernels first when K is small
(Table 3's conditions), else padded MxNxK work divided by the tile's arithmetic
intensity MR*NR/(MR+NR), plus A's repacking for interleaved kernels.

Threads (Appendix B.1): as many as the smallest cluster has cores, on the fastest
cluster first, equal weights, one workload per thread.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from acltuner.engine.config import ConvShape, ExecConfig


def armnn_method(shape: ConvShape) -> str:
    depthwise = shape.group == shape.c and shape.group > 1
    if shape.transposed:
        return "deconv_depthwise" if depthwise else "deconv_phase"
    if depthwise:
        return "depthwise_channel_block" if shape.oc == shape.c else "depthwise_pixel"
    cg, ocg = shape.c // shape.group, shape.oc // shape.group
    # ACL reads the input in place only for stride-1 1x1 kernels and needs stride 1
    # for Winograd, so any stride means General.
    if (shape.dil_h, shape.dil_w) != (1, 1) or (shape.stride_h, shape.stride_w) != (1, 1):
        return "im2col"
    if shape.n * shape.h * shape.w * shape.c > 1_000_000 and shape.kh > 7:
        return "im2col"
    if shape.kh > 7 and cg > ocg:
        return "im2col"
    if (shape.kh, shape.kw) == (1, 1):
        return "gemm1x1"
    if cg < 16:
        return "im2col"
    if (shape.kh, shape.kw) == (3, 3):
        return "winograd_4x4_3x3"
    if (shape.kh, shape.kw) == (3, 1):
        return "winograd_4x1_3x1"
    if shape.kh < 4 and shape.kw < 4:
        return "indirect"
    return "im2col"


def _gemm_cost(uk: dict, m: int, n: int, k: int) -> float:
    mr, nr = uk["mr"], uk["nr"]
    padded = math.ceil(m / mr) * mr * math.ceil(n / nr) * nr * k
    cost = padded / (mr * nr / (mr + nr))
    if uk["style"] == "interleaved":
        cost += m * k
    return cost


def gemm_dims(shape: ConvShape, algorithm: str) -> tuple[int, int, int]:
    """M, N, K of one group's GEMM under `algorithm`."""
    cg, ocg, taps = shape.c // shape.group, shape.oc // shape.group, shape.kh * shape.kw
    if algorithm == "deconv_col2im":  # every input pixel through every tap
        return shape.n * shape.h * shape.w, taps * ocg, cg
    oh, ow = shape.out_hw
    if shape.transposed:  # an output pixel receives about taps / (stride_h * stride_w) taps
        return shape.n * oh * ow, ocg, max(1, taps // (shape.stride_h * shape.stride_w)) * cg
    return shape.n * oh * ow, ocg, taps * cg


def armnn_ukernel(shape: ConvShape, algorithm: str, ukernels: Sequence[dict], isa: str,
                  check) -> str | None:
    """ADDGEMM: the cheapest valid kernel of the engine's best ISA family."""
    family = [uk for uk in ukernels if uk["isa"] == isa]
    valid = [uk for uk in family if check(shape, algorithm, uk["name"]) is None]
    if not valid:
        return None
    smallk = [uk for uk in valid if uk["style"] == "smallk"]
    if smallk:
        valid = smallk
    m, n, k = gemm_dims(shape, algorithm)
    return min(valid, key=lambda uk: _gemm_cost(uk, m, n, k))["name"]


def armnn_placement(clusters: Sequence[Sequence[int]], cluster_speed: Sequence[float],
                    ncores: int) -> tuple[int, ...]:
    """min(cluster sizes) threads, on the fastest cluster's cores first, equal weights."""
    threads = min(len(c) for c in clusters)
    order = sorted(range(len(clusters)), key=lambda i: -cluster_speed[i])
    cpus = [cpu for i in order for cpu in sorted(clusters[i])][:threads]
    return tuple(1 if c in cpus else 0 for c in range(ncores))


def armnn_default(shape: ConvShape, clusters: Sequence[Sequence[int]],
                  cluster_speed: Sequence[float], ncores: int, ukernels: Sequence[dict],
                  isa: str, uses_ukernel, check) -> ExecConfig:
    """The configuration ArmNN's rules would run this convolution with."""
    algorithm = armnn_method(shape)
    ukernel = None
    if uses_ukernel(algorithm):
        ukernel = armnn_ukernel(shape, algorithm, ukernels, isa, check)
        if ukernel is None:  # the rule's method cannot run it: fall back to General
            algorithm = "deconv_col2im" if shape.transposed else "im2col"
            ukernel = armnn_ukernel(shape, algorithm, ukernels, isa, check)
    weights = armnn_placement(clusters, cluster_speed, ncores)
    return ExecConfig(algorithm, ukernel, weights, sum(1 for w in weights if w))
