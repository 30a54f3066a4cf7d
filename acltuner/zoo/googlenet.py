"""GoogLeNet (Inception v1) in torchvision's layout, without the auxiliary
classifiers (they only run in training).

Every conv is torchvision's BasicConv2d: conv without bias, BatchNormalization
(epsilon 1e-3) and Relu.  Stem: 7x7/2 conv 64, 3x3/2 max pool, 1x1 conv 64,
3x3 conv 192, 3x3/2 max pool.  Then nine Inception blocks (3a-3b, 4a-4e,
5a-5b) with a max pool before stages 4 and 5, global average pool, Dropout and
a 1000-way Gemm.  An Inception block concatenates four branches on channels:
1x1; 1x1 -> 3x3; 1x1 -> 3x3 (the paper has 5x5 there: a known slip that
torchvision keeps so that its pretrained weights load); 3x3/1 max pool -> 1x1.

Every max pool rounds its output size up (ceil_mode) as torchvision's does:
56 -> 28 -> 14 -> 7 after the stem's 112, where floor mode would give
55 -> 27 -> 13 -> 6.  Nodes carry torchvision's module names
(inception3a.branch2.1.conv), so a weight's name is the state_dict key it
stands for.
"""
from __future__ import annotations

import onnx

from acltuner.zoo.builder import GraphBuilder

# Per block: 1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5" (a 3x3), pool projection.
_BLOCKS = {
    "3a": (64, 96, 128, 16, 32, 32),
    "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64),
    "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}
# The max pool before each stage's first block: (name, kernel).
_STAGE_POOLS = {"4a": ("maxpool3", 3), "5a": ("maxpool4", 2)}


def _basic_conv(b: GraphBuilder, x: str, name: str, channels: int, kernel: int,
                stride: int = 1) -> str:
    y = b.batchnorm(b.conv(x, f"{name}.conv", channels, kernel, stride, kernel // 2),
                    f"{name}.bn", epsilon=1e-3)
    return b.node("Relu", [y], f"{name}.relu")


def _inception(b: GraphBuilder, x: str, name: str, ch: tuple[int, ...]) -> str:
    c1, c3_reduce, c3, c5_reduce, c5, pool_proj = ch
    branches = [
        _basic_conv(b, x, f"{name}.branch1", c1, 1),
        _basic_conv(b, _basic_conv(b, x, f"{name}.branch2.0", c3_reduce, 1),
                    f"{name}.branch2.1", c3, 3),
        _basic_conv(b, _basic_conv(b, x, f"{name}.branch3.0", c5_reduce, 1),
                    f"{name}.branch3.1", c5, 3),
        _basic_conv(b, b.maxpool(x, f"{name}.branch4.0", 3, 1, 1, ceil_mode=True),
                    f"{name}.branch4.1", pool_proj, 1),
    ]
    return b.concat(branches, f"{name}.concat")


def build_googlenet(seed: int = 0) -> onnx.ModelProto:
    b = GraphBuilder(seed)
    x = _basic_conv(b, b.input, "conv1", 64, 7, 2)
    x = b.maxpool(x, "maxpool1", 3, 2, 0, ceil_mode=True)
    x = _basic_conv(b, _basic_conv(b, x, "conv2", 64, 1), "conv3", 192, 3)
    x = b.maxpool(x, "maxpool2", 3, 2, 0, ceil_mode=True)
    for block, channels in _BLOCKS.items():
        if block in _STAGE_POOLS:
            pool, kernel = _STAGE_POOLS[block]
            x = b.maxpool(x, pool, kernel, 2, 0, ceil_mode=True)
        x = _inception(b, x, f"inception{block}", channels)
    x = b.flatten(b.global_avg_pool(x, "avgpool"), "flatten")
    return b.model(b.gemm(b.dropout(x, "dropout", 0.2), "fc", 1000), "googlenet")
