"""Model zoo: CNNs built with onnx.helper and seeded random weights, for tuning
and testing without downloading anything."""
from __future__ import annotations

import functools
from collections.abc import Callable

import onnx

from acltuner.zoo import alexnet, convnext, googlenet, mobilenet, resnet, vgg

MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    **{name: functools.partial(resnet.build_resnet, name) for name in resnet.SPECS},
    "vgg16": vgg.build_vgg16,
    "alexnet": alexnet.build_alexnet,
    "googlenet": googlenet.build_googlenet,
    "mobilenetv2": mobilenet.build_mobilenetv2,
    "convnext_atto": convnext.build_convnext_atto,
}


def build(name: str) -> onnx.ModelProto:
    """The zoo model `name` (a fresh ModelProto; the same bytes every time)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: choose from {', '.join(MODELS)}")
    return MODELS[name]()
