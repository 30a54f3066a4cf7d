"""A ConvNeXt in timm's layout, at the atto size (dims 40-80-160-320, depths
2-2-6-2): a hybrid that carries a transformer's blocks over a CNN's stages.

A 4x4/4 conv stem and a channels-first LayerNorm; four stages, each but the
first opening with a channels-first LayerNorm and a 2x2/2 conv; a block is a
7x7 depthwise conv, then channels last (Transpose) a LayerNorm over the
channels, a Linear to 4x the channels, GELU (the Erf form torch exports), a
Linear back, a per-channel layer scale, channels first again, and the
residual add.  The head pools globally, normalises and classifies.
LayerNormalization needs opset 17.  Nodes carry timm's module names.
"""
from __future__ import annotations

import numpy as np
import onnx

from acltuner.zoo.builder import GraphBuilder

DIMS, DEPTHS = (40, 80, 160, 320), (2, 2, 6, 2)
TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
LAYER_SCALE = 1e-1  # timm starts at 1e-6; trained models hold O(0.1)


def _layer_norm(b: GraphBuilder, x: str, name: str, dim: int) -> str:
    scale = b.constant(f"{name}.weight", b.rng.uniform(0.5, 1.5, dim))
    bias = b.constant(f"{name}.bias", b.rng.uniform(-0.1, 0.1, dim))
    return b.node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-6)


def _layer_norm_2d(b: GraphBuilder, x: str, name: str, dim: int) -> str:
    """timm's LayerNorm2d: channels last, normalised, channels first."""
    y = b.node("Transpose", [x], f"{name}.to_nhwc", perm=TO_NHWC)
    y = _layer_norm(b, y, name, dim)
    return b.node("Transpose", [y], f"{name}.to_nchw", channels=dim, perm=TO_NCHW)


def _linear(b: GraphBuilder, x: str, name: str, dim_in: int, dim_out: int) -> str:
    """A MatMul by [in, out] weights and a bias Add, as torch exports nn.Linear."""
    w = b.constant(f"{name}.weight", b.rng.normal(0.0, np.sqrt(1.0 / dim_in), (dim_in, dim_out)))
    y = b.node("MatMul", [x, w], f"{name}.matmul", channels=dim_out)
    return b.node("Add", [y, b.constant(f"{name}.bias", b.rng.uniform(-0.1, 0.1, dim_out))],
                  name, channels=dim_out)


def _gelu(b: GraphBuilder, x: str, name: str) -> str:
    """x * 0.5 * (1 + erf(x / sqrt(2)))."""
    y = b.node("Div", [x, b.constant(f"{name}.sqrt2", np.float32(np.sqrt(2.0)))], f"{name}.div")
    y = b.node("Erf", [y], f"{name}.erf")
    y = b.node("Add", [y, b.constant(f"{name}.one", np.float32(1.0))], f"{name}.add")
    y = b.node("Mul", [x, y], f"{name}.mul")
    return b.node("Mul", [y, b.constant(f"{name}.half", np.float32(0.5))], name)


def _block(b: GraphBuilder, x: str, name: str, dim: int) -> str:
    y = b.conv(x, f"{name}.conv_dw", dim, 7, pads=3, group=dim, bias=True)
    y = b.node("Transpose", [y], f"{name}.to_nhwc", perm=TO_NHWC)
    y = _layer_norm(b, y, f"{name}.norm", dim)
    y = _gelu(b, _linear(b, y, f"{name}.mlp.fc1", dim, 4 * dim), f"{name}.mlp.act")
    y = _linear(b, y, f"{name}.mlp.fc2", 4 * dim, dim)
    y = b.node("Mul", [y, b.constant(f"{name}.gamma", np.full(dim, LAYER_SCALE))],
               f"{name}.layer_scale")
    y = b.node("Transpose", [y], f"{name}.to_nchw", channels=dim, perm=TO_NCHW)
    return b.add(y, x, f"{name}.add")


def build_convnext_atto(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed, opset=17)
    x = b.conv(b.input, "stem.0", DIMS[0], 4, stride=4, bias=True)
    x = _layer_norm_2d(b, x, "stem.1", DIMS[0])
    for s, (dim, depth) in enumerate(zip(DIMS, DEPTHS)):
        if s:
            x = _layer_norm_2d(b, x, f"stages.{s}.downsample.0", DIMS[s - 1])
            x = b.conv(x, f"stages.{s}.downsample.1", dim, 2, stride=2, bias=True)
        for i in range(depth):
            x = _block(b, x, f"stages.{s}.blocks.{i}", dim)
    x = b.node("Flatten", [b.global_avg_pool(x, "head.global_pool")], "head.flatten", axis=1)
    x = _layer_norm(b, x, "head.norm", DIMS[-1])
    return b.model(b.gemm(x, "head.fc", 1000), "convnext_atto")
