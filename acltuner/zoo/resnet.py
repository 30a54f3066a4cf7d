"""ResNets in torchvision's layout, and the paper's ResNetXY (Table 5).

One builder covers both: a stem conv + BN + Relu and a 3x3/2 max pool, four
stages of residual blocks, global average pool and a 1000-way Gemm.  A block is
a chain of conv + BN (+ Relu except the last), added to the identity or to a
downsample (1x1 conv + BN, when the stride or the channel count changes), then
Relu.  As in torchvision, the first block of stages 2-4 carries stride 2 on
its spatial conv: the 3x3 of a BasicBlock's first conv, the middle conv of a
Bottleneck.

ResNetXY is ResNet-50 with each Table 5 row's kernels and channels: stem 14x14
stride 2 with 51 channels, blocks 4x4 -> 6x6 -> 1x1 with e.g. 77, 77, 154.
The table does not give pads.  Even kernels cannot be centred, so every conv
uses ONNX auto_pad SAME_UPPER (output = ceil(input / stride), an odd pixel of
padding goes to the bottom/right), which gives exactly the table's output sizes:
14x14/2 on 224 pads 6 on every side -> 112; 4x4/1 pads 1 before and 2 after;
6x6/1 pads 2 and 3; 6x6/2 pads 2 and 2 -> half size; 1x1 pads nothing.  The
stride stays on the middle (6x6) conv, where ResNet-50 has it.
"""
from __future__ import annotations

from dataclasses import dataclass

import onnx

from acltuner.zoo.builder import RESIDUAL_GAMMA, GraphBuilder, Pads


@dataclass(frozen=True)
class ResNetSpec:
    stem_kernel: int
    stem_channels: int
    block_kernels: tuple[int, ...]
    stride_at: int  # which conv of a block carries the stage's stride
    # (blocks, channels of each conv of a block) per stage
    stages: tuple[tuple[int, tuple[int, ...]], ...]
    same_upper: bool = False  # pads: SAME_UPPER (ResNetXY) or kernel // 2 (torchvision)

    def pads(self, kernel: int) -> Pads:
        return "SAME_UPPER" if self.same_upper else kernel // 2


def _basic(blocks: tuple[int, ...]) -> ResNetSpec:
    return ResNetSpec(7, 64, (3, 3), 0, tuple(
        (n, (c, c)) for n, c in zip(blocks, (64, 128, 256, 512))))


def _bottleneck(blocks: tuple[int, ...]) -> ResNetSpec:
    return ResNetSpec(7, 64, (1, 3, 1), 1, tuple(
        (n, (c, c, 4 * c)) for n, c in zip(blocks, (64, 128, 256, 512))))


SPECS = {
    "resnet18": _basic((2, 2, 2, 2)),
    "resnet34": _basic((3, 4, 6, 3)),
    "resnet50": _bottleneck((3, 4, 6, 3)),
    "resnet101": _bottleneck((3, 4, 23, 3)),
    "resnetxy": ResNetSpec(14, 51, (4, 6, 1), 1, (
        (3, (77, 77, 154)), (4, (97, 97, 194)), (6, (279, 279, 558)), (3, (511, 511, 1022))),
        same_upper=True),
}




def _block(b: GraphBuilder, spec: ResNetSpec, x: str, name: str, channels: tuple[int, ...],
           stride: int) -> str:
    y = x
    last = len(channels)
    for i, (k, c) in enumerate(zip(spec.block_kernels, channels), start=1):
        y = b.conv(y, f"{name}.conv{i}", c, k, stride if i - 1 == spec.stride_at else 1,
                   spec.pads(k), bn=f"{name}.bn{i}", relu=f"{name}.relu{i}" if i < last else None,
                   bn_gamma=RESIDUAL_GAMMA if i == last else (0.5, 1.5))
    identity = x
    if stride != 1 or b.channels[x] != channels[-1]:
        identity = b.conv(x, f"{name}.downsample.0", channels[-1], 1, stride, spec.pads(1),
                          bn=f"{name}.downsample.1")
    return b.add(y, identity, f"{name}.add", relu=f"{name}.relu{last}")


def build_resnet(name: str, seed: int = 0) -> onnx.ModelProto:
    spec = SPECS[name]
    b = GraphBuilder(seed)
    x = b.conv(b.input, "conv1", spec.stem_channels, spec.stem_kernel, 2,
               spec.pads(spec.stem_kernel), bn="bn1", relu="relu")
    x = b.maxpool(x, "maxpool", 3, 2, 1)
    for s, (blocks, channels) in enumerate(spec.stages, start=1):
        for i in range(blocks):
            x = _block(b, spec, x, f"layer{s}.{i}", channels, 2 if s > 1 and i == 0 else 1)
    x = b.flatten(b.global_avg_pool(x, "avgpool"), "flatten")
    return b.model(b.gemm(x, "fc", 1000), name)
