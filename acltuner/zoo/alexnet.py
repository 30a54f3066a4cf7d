"""AlexNet in torchvision's layout (the single-GPU variant of "One weird trick").

Five convs with bias and Relu (11x11/4 64, 5x5 192, 3x3 384, 256, 256), a 3x3/2
max pool after the first, second and fifth; then Dropout + Gemm 4096 + Relu
twice and Gemm 1000.  Nodes carry torchvision's module names (features.3,
classifier.4), so a weight's name is the state_dict key it stands for.

torchvision's AdaptiveAvgPool2d((6, 6)) is left out: on a 224x224 input the
last pool already gives 6x6 (224 -> 55 -> 27 -> 13 -> 6), where it is an
identity.
"""
from __future__ import annotations

import onnx

from acltuner.zoo.builder import GraphBuilder

# (torchvision index, output channels, kernel, stride, pad, max pool follows)
_CONVS = ((0, 64, 11, 4, 2, True), (3, 192, 5, 1, 2, True), (6, 384, 3, 1, 1, False),
          (8, 256, 3, 1, 1, False), (10, 256, 3, 1, 1, True))


def build_alexnet(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    x = b.input
    for i, channels, kernel, stride, pad, pool in _CONVS:
        x = b.conv(x, f"features.{i}", channels, kernel, stride, pad, bias=True,
                   relu=f"features.{i + 1}")
        if pool:
            x = b.maxpool(x, f"features.{i + 2}", 3, 2, 0)
    x = b.flatten(x, "flatten", hw=(6, 6))
    for i in (0, 3):
        x = b.dropout(x, f"classifier.{i}", 0.5)
        x = b.node("Relu", [b.gemm(x, f"classifier.{i + 1}", 4096)], f"classifier.{i + 2}")
    return b.model(b.gemm(x, "classifier.6", 1000), "alexnet")
