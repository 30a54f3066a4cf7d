"""ONNX Conv and ConvTranspose attributes -> ConvShape, following the operators'
specifications.

Kept apart from model loading so that a single node (a conformance case, a
test) can be turned into an engine convolution.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from acltuner.engine.config import ConvShape


class ConvAttributeError(ValueError):
    """A Conv or ConvTranspose node that acltuner cannot express; the message names the node."""


def same_pads(size: int, kernel: int, stride: int, dilation: int, lower: bool) -> tuple[int, int]:
    out = -(-size // stride)
    eff = dilation * (kernel - 1) + 1
    total = max(0, (out - 1) * stride + eff - size)
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


def as_2d(x_shape: Sequence[int], w_shape: Sequence[int], attrs: dict):
    """A 1-D convolution's input, weight shapes and attributes as those of a
    2-D one over a height of 1 (its NLC layout is the NHWC of that).  The
    height goes before the length: output_shape may hold N and C too."""
    one = {"kernel_shape": 1, "strides": 1, "dilations": 1, "output_padding": 0,
           "output_shape": 1}
    attrs = {k: [*v[:-1], one[k], v[-1]] if k in one else v for k, v in attrs.items()}
    if "pads" in attrs:
        left, right = attrs["pads"]
        attrs["pads"] = [0, left, 0, right]
    n, c, length = x_shape
    return (n, c, 1, length), (*w_shape[:2], 1, w_shape[2]), attrs


def transposed_pads(size: int, kernel: int, stride: int, dilation: int, out_pad: int,
                    out_size: int | None, upper: bool) -> tuple[int, int, int]:
    """ConvTranspose's (pad begin, pad end, output padding) for an output of
    out_size (output_shape; None: size * stride, as SAME_* asks): the full
    output less out_size is cut from both ends, the odd one at the end when
    `upper`.  An output_shape beyond the full output is output padding; SAME_*
    never pads the full output (onnxruntime and onnx's shape inference agree)."""
    total = stride * (size - 1) + out_pad + dilation * (kernel - 1) + 1 - (
        size * stride if out_size is None else out_size)
    if total < 0:
        return 0, 0, out_pad - (0 if out_size is None else total)
    begin = total // 2 if upper else total - total // 2
    return begin, total - begin, out_pad


def conv_shape(node: onnx.NodeProto, x_shape: Sequence[int], w_shape: Sequence[int],
               **epilogue) -> ConvShape:
    """The engine shape of a 2-D Conv node with NCHW input x_shape and OIHW weight w_shape,
    or of a 1-D one (NCL, OIK) as a 2-D convolution of height 1; of a ConvTranspose
    node alike, with its (c, oc / group, kh, kw) weight; epilogue: the ConvShape
    fields of what it absorbs (act and its parameters, has_residual)."""
    name, op = node.name or node.output[0], node.op_type
    transposed = op == "ConvTranspose"
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if len(x_shape) == 3 and len(w_shape) == 3:
        x_shape, w_shape, attrs = as_2d(x_shape, w_shape, attrs)
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ConvAttributeError(f"{op} node '{name}': only 1-D and 2-D convolutions are "
                                 f"supported (input rank {len(x_shape)})")
    n, c, h, w = (int(v) for v in x_shape)
    kh, kw = (int(v) for v in w_shape[2:])
    kernel = list(attrs.get("kernel_shape", [kh, kw]))
    if kernel != [kh, kw]:
        raise ConvAttributeError(f"{op} node '{name}': kernel_shape {kernel} does not match "
                                 f"weight shape {list(w_shape)}")
    group = int(attrs.get("group", 1))
    if transposed:
        oc = int(w_shape[1]) * group
        if int(w_shape[0]) != c:
            raise ConvAttributeError(f"{op} node '{name}': weight has {w_shape[0]} input "
                                     f"channels, but input has {c}")
    else:
        oc, cg = int(w_shape[0]), int(w_shape[1])
        if cg * group != c:
            raise ConvAttributeError(f"{op} node '{name}': weight has {cg} input channels per "
                                     f"group, but input has {c} channels with group={group}")
    sh, sw = attrs.get("strides", [1, 1])
    dh, dw = attrs.get("dilations", [1, 1])
    oph, opw = attrs.get("output_padding", [0, 0]) if transposed else (0, 0)
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"):
        raise ConvAttributeError(f"{op} node '{name}': unknown auto_pad {auto_pad!r}")
    out_shape = attrs.get("output_shape") if transposed else None
    if transposed and (out_shape or auto_pad.startswith("SAME")):
        out_h, out_w = out_shape[-2:] if out_shape else (None, None)
        upper = auto_pad == "SAME_UPPER"
        top, bottom, oph = transposed_pads(h, kh, sh, dh, oph, out_h, upper)
        left, right, opw = transposed_pads(w, kw, sw, dw, opw, out_w, upper)
    elif auto_pad.startswith("SAME"):
        lower = auto_pad == "SAME_LOWER"
        top, bottom = same_pads(h, kh, sh, dh, lower)
        left, right = same_pads(w, kw, sw, dw, lower)
    elif auto_pad == "VALID":
        top = left = bottom = right = 0
    else:
        top, left, bottom, right = attrs.get("pads", [0, 0, 0, 0])
    try:
        return ConvShape(n=n, h=h, w=w, c=c, oc=oc, kh=kh, kw=kw, stride_h=sh, stride_w=sw,
                         dil_h=dh, dil_w=dw, pad_top=top, pad_left=left, pad_bottom=bottom,
                         pad_right=right, group=group, transposed=transposed, out_pad_h=oph,
                         out_pad_w=opw, **epilogue)
    except ValueError as e:
        raise ConvAttributeError(f"{op} node '{name}': {e}") from None


def _live_taps(size: int, out: int, stride: int, dilation: int, pad: int, kernel: int
               ) -> list[int]:
    """The taps along one axis that read the input for some output position:
    tap i reads input rows i * dilation - pad + [0, (out - 1) * stride], a
    window sliding with i, so the live taps are one run."""
    last = (out - 1) * stride
    return [i for i in range(kernel) if -last <= i * dilation - pad < size]


def drop_padding_taps(shape: ConvShape, weight: np.ndarray) -> tuple[ConvShape, np.ndarray]:
    """A convolution without the kernel rows and columns that read only
    padding, with its padding cut to match: the same output, fewer taps.
    DeepLab's ASPP runs 3x3 convolutions at rates 24 and 36 on a 24x24 map,
    whose outer taps never touch it: 1x1 convolutions doing 9x the work.  An
    axis whose cut would need a negative pad is kept whole."""
    if shape.transposed:
        return shape, weight
    oh, ow = shape.out_hw
    cut: dict = {}
    kept = [slice(None), slice(None)]
    for i, (size, out, stride, dil, before, after, k, axis) in enumerate((
            (shape.h, oh, shape.stride_h, shape.dil_h, "pad_top", "pad_bottom", shape.kh, "h"),
            (shape.w, ow, shape.stride_w, shape.dil_w, "pad_left", "pad_right", shape.kw, "w"))):
        live = _live_taps(size, out, stride, dil, getattr(shape, before), k)
        if not live or len(live) == k:
            continue
        first, stop = live[0], live[-1] + 1
        pads = getattr(shape, before) - first * dil, getattr(shape, after) - (k - stop) * dil
        if min(pads) < 0:
            continue
        cut |= {f"k{axis}": stop - first, before: pads[0], after: pads[1],
                f"dil_{axis}": dil if stop - first > 1 else 1}
        kept[i] = slice(first, stop)
    if not cut:
        return shape, weight
    return dataclasses.replace(shape, **cut), np.ascontiguousarray(weight[:, :, kept[0], kept[1]])


def conv_model(shape: ConvShape, weight: np.ndarray, bias: np.ndarray | None) -> onnx.ModelProto:
    """The inverse of conv_shape: a one-node model (Conv, or ConvTranspose when
    transposed) from NCHW X to Y, its epilogue left out."""
    inits = [onnx.numpy_helper.from_array(weight, "W")]
    inputs = ["X", "W"]
    if bias is not None:
        inits.append(onnx.numpy_helper.from_array(bias, "B"))
        inputs.append("B")
    node = helper.make_node(
        "ConvTranspose" if shape.transposed else "Conv", inputs, ["Y"],
        kernel_shape=[shape.kh, shape.kw], strides=[shape.stride_h, shape.stride_w],
        dilations=[shape.dil_h, shape.dil_w],
        pads=[shape.pad_top, shape.pad_left, shape.pad_bottom, shape.pad_right],
        group=shape.group,
        # make_node leaves out None attributes: a Conv has no output_padding.
        output_padding=[shape.out_pad_h, shape.out_pad_w] if shape.transposed else None)
    n, h, w, c = shape.input_shape
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    # An IR version onnxruntime accepts: onnx may default to a newer one.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
