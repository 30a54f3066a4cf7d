"""MobileNetV2 (width 1.0) in torchvision's layout.

A 3x3/2 conv 32 + BN + ReLU6, seventeen inverted residual blocks, a 1x1 conv
1280 + BN + ReLU6, global average pool, Dropout and a 1000-way Gemm.  A block
expands its input t times with a 1x1 conv + BN + ReLU6 (not when t = 1),
filters each channel with a 3x3 depthwise conv (group = channels) + BN + ReLU6
that carries the stride, and projects back with a linear 1x1 conv + BN; when
the stride is 1 and the channel count does not change, its input is added to
the result.  Convs have no bias and pad k // 2.  Nodes carry torchvision's
module names (features.2.conv.1.0 is block 2's depthwise conv), so a weight's
name is the state_dict key it stands for.

ReLU6 is Clip(0, 6), which the task generator fuses into the conv like a Relu.
"""
from __future__ import annotations

import onnx

from acltuner.zoo.builder import RESIDUAL_GAMMA, GraphBuilder
# Damped residual branches, for the reason resnet.py gives.

# (expansion t, output channels c, blocks n, first block's stride s), the paper's Table 2.
_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1))


def _conv_bn_relu6(b: GraphBuilder, x: str, name: str, channels: int, kernel: int,
                   stride: int = 1, group: int = 1) -> str:
    """torchvision's Conv2dNormActivation: conv, BN and ReLU6 as modules name.0-2."""
    y = b.conv(x, f"{name}.0", channels, kernel, stride, kernel // 2, group, bn=f"{name}.1")
    return b.relu6(y, f"{name}.2")


def _inverted_residual(b: GraphBuilder, x: str, name: str, t: int, channels: int,
                       stride: int) -> str:
    residual = stride == 1 and b.channels[x] == channels
    hidden = b.channels_of(x) * t
    y, i = x, 0  # i: torchvision's index of the next module in the block's `conv`
    if t != 1:
        y, i = _conv_bn_relu6(b, y, f"{name}.conv.0", hidden, 1), 1
    y = _conv_bn_relu6(b, y, f"{name}.conv.{i}", hidden, 3, stride, group=hidden)
    # The projection is linear: conv and BN (modules i+1, i+2), no activation.
    y = b.conv(y, f"{name}.conv.{i + 1}", channels, 1, bn=f"{name}.conv.{i + 2}",
               bn_gamma=RESIDUAL_GAMMA if residual else (0.5, 1.5))
    return b.add(y, x, f"{name}.add") if residual else y


def build_mobilenetv2(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    x = _conv_bn_relu6(b, b.input, "features.0", 32, 3, 2)
    block = 1
    for t, channels, n, stride in _STAGES:
        for i in range(n):
            x = _inverted_residual(b, x, f"features.{block}", t, channels, stride if i == 0 else 1)
            block += 1
    x = _conv_bn_relu6(b, x, f"features.{block}", 1280, 1)
    x = b.flatten(b.global_avg_pool(x, "avgpool"), "flatten")
    return b.model(b.gemm(b.dropout(x, "classifier.0", 0.2), "classifier.1", 1000),
                   "mobilenetv2")
