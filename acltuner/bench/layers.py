"""The distinct convolution layers of ResNet-18 and VGG-16 at 1x3x224x224 (NHWC shapes)."""
from __future__ import annotations

from acltuner.engine.config import ConvShape


def _conv(name: str, hw: int, c: int, oc: int, k: int, stride: int = 1) -> tuple[str, ConvShape]:
    pad = k // 2
    return name, ConvShape(n=1, h=hw, w=hw, c=c, oc=oc, kh=k, kw=k, stride_h=stride,
                           stride_w=stride, pad_top=pad, pad_left=pad, pad_bottom=pad,
                           pad_right=pad, act="relu")


RESNET18 = [
    _conv("resnet18.conv1", 224, 3, 64, 7, 2),
    _conv("resnet18.layer1", 56, 64, 64, 3),
    _conv("resnet18.layer2.down3x3", 56, 64, 128, 3, 2),
    _conv("resnet18.layer2.down1x1", 56, 64, 128, 1, 2),
    _conv("resnet18.layer2", 28, 128, 128, 3),
    _conv("resnet18.layer3.down3x3", 28, 128, 256, 3, 2),
    _conv("resnet18.layer3.down1x1", 28, 128, 256, 1, 2),
    _conv("resnet18.layer3", 14, 256, 256, 3),
    _conv("resnet18.layer4.down3x3", 14, 256, 512, 3, 2),
    _conv("resnet18.layer4.down1x1", 14, 256, 512, 1, 2),
    _conv("resnet18.layer4", 7, 512, 512, 3),
]

VGG16 = [
    _conv("vgg16.conv1_1", 224, 3, 64, 3),
    _conv("vgg16.conv1_2", 224, 64, 64, 3),
    _conv("vgg16.conv2_1", 112, 64, 128, 3),
    _conv("vgg16.conv2_2", 112, 128, 128, 3),
    _conv("vgg16.conv3_1", 56, 128, 256, 3),
    _conv("vgg16.conv3_2", 56, 256, 256, 3),
    _conv("vgg16.conv4_1", 28, 256, 512, 3),
    _conv("vgg16.conv4_2", 28, 512, 512, 3),
    _conv("vgg16.conv5_1", 14, 512, 512, 3),
]

LAYERS = RESNET18 + VGG16
