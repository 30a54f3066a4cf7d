"""VGG-16 in torchvision's layout (configuration D).

Thirteen 3x3 convs (pad 1, with bias) and Relus in five stages of 64, 128,
256, 512, 512 channels, each stage closed by a 2x2/2 max pool; then three
fully connected layers (4096, 4096, 1000) with Relu and Dropout between.
Nodes carry torchvision's module names (features.0, classifier.3), so a
weight's name is the state_dict key it stands for.

torchvision's AdaptiveAvgPool2d((7, 7)) is left out: on a 224x224 input the
last pool already gives 7x7, where it is an identity.
"""
from __future__ import annotations

import onnx

from acltuner.zoo.builder import GraphBuilder

# Output channels of each conv, "M" for a max pool (torchvision's cfgs["D"]).
_LAYERS = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M")


def build_vgg16(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    x, i = b.input, 0  # i: the torchvision index of the next features module
    for layer in _LAYERS:
        if isinstance(layer, str):  # "M"
            x, i = b.maxpool(x, f"features.{i}", 2, 2, 0), i + 1
        else:
            x = b.conv(x, f"features.{i}", layer, 3, pads=1, bias=True, relu=f"features.{i + 1}")
            i += 2
    x = b.flatten(x, "flatten", hw=(7, 7))
    for i in (0, 3):
        x = b.node("Relu", [b.gemm(x, f"classifier.{i}", 4096)], f"classifier.{i + 1}")
        x = b.dropout(x, f"classifier.{i + 2}", 0.5)
    return b.model(b.gemm(x, "classifier.6", 1000), "vgg16")
