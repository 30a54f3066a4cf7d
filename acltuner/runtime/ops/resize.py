"""Resize and Upsample: nearest and linear resizing of a feature map's two
spatial axes, as the engine's resize operation (native/include/aclgraph.h).

What runs natively: a 4-D input whose batch and channel axes keep their size
(scale 1), modes nearest and linear, scales or sizes that are constants
(loading folds sizes computed from shapes), the coordinate modes half_pixel,
pytorch_half_pixel, align_corners, asymmetric and tf_half_pixel_for_nn, no
antialiasing and the stretch aspect-ratio policy.  Anything else (cubic,
tf_crop_and_resize, half_pixel_symmetric, 3-D or 5-D inputs, a resized
channel axis) returns None and stays with onnxruntime.

Resize-10 and Upsample (7, 9) have no coordinate or rounding attributes:
onnxruntime reads them as asymmetric coordinates with "simple" rounding
(truncate when the axis grows, ceiling when it shrinks).

The engine resizes axes 1 and 2 of an [outer, H, W, inner] tensor: an NHWC
map is [N, H, W, C] as it is, and any layout that keeps H then W next to each
other is such a view too (an NCHW map is [N*C, H, W, 1]), so no transpose is
needed unless H and W are apart."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

import numpy as np
import onnx

from acltuner.runtime.layout import NHWC, Perm, identity
from acltuner.runtime.ops.registry import attrs, handles, shape
from acltuner.onnx.graph import OnnxGraph, node_name

MODES = ("nearest", "linear")
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
H, W = 2, 3  # the spatial axes of an NCHW tensor


def _constant(g: OnnxGraph, node: onnx.NodeProto, i: int) -> np.ndarray | Literal[False] | None:
    """Input i as a flat array; None when absent or empty; False when it is
    computed at run time (then the node is delegated)."""
    name = node.input[i] if len(node.input) > i else ""
    if not name:
        return None
    if name not in g.constants:
        return False
    value = np.asarray(g.constants[name]).reshape(-1)
    return value if value.size else None


T = TypeVar("T")


def _full(values: Sequence[T], axes: list[int], rank: int, fill: Callable[[int], T]
          ) -> list[T] | None:
    """Per-axis values given for `axes` (opset 18), the other axes `fill`."""
    if len(values) != len(axes):
        return None
    out = [fill(i) for i in range(rank)]
    for axis, v in zip(axes, values):
        out[axis] = v
    return out


def resize_scales(g: OnnxGraph, node: onnx.NodeProto, x: tuple[int, ...],
                  out: tuple[int, ...]) -> list[np.float32] | None:
    """The float32 scale of every axis, as onnxruntime computes it, checked
    against the inferred output size; None when unknown or inconsistent."""
    a = attrs(node)
    rank = len(x)
    if node.op_type == "Upsample":
        scales = a.get("scales")  # opset 7-8: an attribute; 9: an input
        scales = np.asarray(scales, np.float32) if scales is not None else _constant(g, node, 1)
        sizes = None
    elif g.opset < 11:
        scales, sizes = _constant(g, node, 1), None
    else:
        scales, sizes = _constant(g, node, 2), _constant(g, node, 3)
    if scales is False or sizes is False:
        return None
    axes = [int(v) % rank for v in a.get("axes", range(rank))]
    if sizes is not None and scales is None:
        full_sizes = _full([int(v) for v in sizes], axes, rank, lambda i: x[i])
        if full_sizes is None or tuple(full_sizes) != tuple(out):
            return None
        return [np.float32(o) / np.float32(i) for o, i in zip(out, x)]
    if scales is None or sizes is not None:  # neither given, or both
        return None
    full_scales = _full([np.float32(v) for v in scales], axes, rank, lambda i: np.float32(1))
    # onnxruntime's output size: float32 scale x size, truncated.
    if full_scales is None or any(not s > 0 or int(s * np.float32(i)) != o
                                  for s, i, o in zip(full_scales, x, out)):
        return None
    return full_scales


def _spatial_view(perm: Perm) -> bool:
    """Whether a layout keeps H then W next to each other."""
    return perm.index(W) == perm.index(H) + 1


@handles("Resize", "Upsample")
def _resize(g: OnnxGraph, node: onnx.NodeProto):
    x, out = shape(g, node.input[0]), shape(g, node.output[0])
    if len(x) != 4 or len(out) != 4:
        return None
    a = attrs(node)
    mode = a.get("mode", "nearest")
    if node.op_type == "Upsample" or g.opset < 11:
        coordinates, rounding = "asymmetric", "simple"
    else:
        coordinates = a.get("coordinate_transformation_mode", "half_pixel")
        rounding = a.get("nearest_mode", "round_prefer_floor")
        if (coordinates not in COORDINATE_MODES or rounding not in NEAREST_MODES
                or a.get("antialias", 0)
                or a.get("keep_aspect_ratio_policy", "stretch") != "stretch"):
            return None
    if mode not in MODES:
        return None
    scales = resize_scales(g, node, x, out)
    if scales is None or scales[0] != 1 or scales[1] != 1:
        return None
    scale_h, scale_w = float(scales[H]), float(scales[W])

    def lower(low) -> None:
        if node.output[0] in low.g.outputs and math.prod(out) > math.prod(x):
            # A model output leaves in ONNX's layout: the small input goes
            # there instead, so that the way out is a plain copy rather than a
            # transposing one (LR-ASPP's 21 x 512 x 512 map: 2.5 ms).
            xv = low.get(node.input[0], identity(4))
        else:
            xv = low.get(node.input[0])
        if not _spatial_view(xv.perm):
            xv = low.get(node.input[0], NHWC)
        yv = low.new(node.output[0], out, xv.perm)
        at = xv.perm.index(H)
        outer = math.prod(x[p] for p in xv.perm[:at])
        inner = math.prod(x[p] for p in xv.perm[at + 2:])
        low.emit("resize", node_name(node),
                 f"{mode} resize {x[H]}x{x[W]} -> {out[H]}x{out[W]}",
                 {"x": low.view(xv, (outer, x[H], x[W], inner)),
                  "out": low.view(yv, (outer, out[H], out[W], inner))},
                 mode=mode, coordinate_mode=coordinates, nearest_mode=rounding,
                 scales=(scale_h, scale_w))
    return lower
