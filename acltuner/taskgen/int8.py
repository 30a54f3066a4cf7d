"""The int8 convolutions of a quantized ONNX model, as users quantize models
for Arm boards with onnxruntime's quantize_static:

  QDQ format: DequantizeLinear(x_q) -> Conv -> [Relu | Clip] -> QuantizeLinear,
      the weight a DequantizeLinear of an int8 initializer (per-channel scales
      along axis 0, zero points 0), the bias absent, a float initializer or a
      DequantizeLinear of an int32 one.  quantize_static removes a Relu or
      Clip it can fold into the output's range, so most convolutions come
      without one;
  QOperator format: QLinearConv.

A fully connected layer, DequantizeLinear(x_q) and DequantizeLinear(W_int8)
-> Gemm | MatMul -> [Relu | Clip] -> QuantizeLinear (a classifier's, the
bias a Gemm's C), is recorded as the 1x1 convolution it is on an M x 1 x 1
map of K channels (M rows of K in features, N out features as output
channels), its weight transposed to OIHW where written K x N: the int8
kernels then read 4x fewer weight bytes than the float GEMM does, which
decides a layer that reads each weight once per row.

Each is recorded with its shape, dtypes, scales and zero points, and the
convolutions of one shape and dtypes are one int8 task.  The patterns are
read from the model as written: loading folds a DequantizeLinear of an
initializer into a float weight (which the fp32 tasks then tune), and the
int8 weight and its scales would be gone.  Static shapes come from the loaded
model, whose activation tensors keep their names.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from acltuner.engine.config import ConvShape
from acltuner.onnx.activation import clip_bounds, is_op
from acltuner.onnx.conv_attrs import ConvAttributeError, conv_shape
from acltuner.onnx.graph import OnnxGraph, node_name
from acltuner.onnx.model import load_model, read_model
from acltuner.taskgen.tasks import signature, task_key

# What the int8 kernels take: uint8 activations in and out, int8 weights.
ACTIVATION_DTYPE, WEIGHT_DTYPE = np.uint8, np.int8
# An int8 task's configs name it as their algorithm: conv_int8 (aclgraph.h)
# with an int8 micro-kernel (None: depthwise, which runs none) on a split.
INT8_ALGORITHM = "conv_int8"
_SHORT = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "s8"}


@dataclass(frozen=True)
class Quantization:
    """A quantized tensor's parameters: real = (q - zero_point) * scale, per
    output channel when scale has one value per channel."""
    dtype: str  # "u8" or "s8"
    scale: np.ndarray  # float32, () or (oc,)
    zero_point: np.ndarray  # the dtype's integers, shaped like scale


@dataclass
class Int8ConvNode:
    name: str  # the Conv, QLinearConv, Gemm or MatMul node
    pattern: str  # "qdq", "qlinearconv" or "qdq-fc" (a Gemm or MatMul)
    shape: ConvShape  # with a fused Relu or Clip as act
    input: Quantization
    weight: Quantization
    output: Quantization
    weight_q: np.ndarray  # int8, OIHW
    bias_q: np.ndarray | None  # int32 in units of input scale x weight scale
    input_name: str  # the quantized tensor read
    output_name: str  # the quantized tensor written
    nodes: list[str]  # every node the int8 convolution replaces, the Conv's (Gemm's...) first


@dataclass
class Int8Task:
    key: str
    shape: ConvShape  # the signature, as fp32 tasks have it
    dtypes: tuple[str, str, str]  # input, weight, output
    nodes: list[str]  # the Conv, QLinearConv, Gemm or MatMul nodes
    flops: int  # all nodes together


class _NotInt8(Exception):
    """Why a convolution of a quantized model is no int8 task (one line)."""


def generate_int8_tasks(model_path: str | Path,
                        input_shapes: dict[str, tuple[int, ...]] | None = None
                        ) -> tuple[list[Int8Task], list[str]]:
    """The model's int8 tasks, most FLOPs first, and one line for each
    convolution next to quantization nodes that is none; both empty for a
    model without quantization."""
    nodes, skipped = int8_conv_nodes(read_model(model_path),
                                     OnnxGraph(load_model(model_path, input_shapes)))
    return int8_tasks(nodes), skipped


def int8_tasks(nodes: list[Int8ConvNode]) -> list[Int8Task]:
    """The nodes grouped into int8 tasks by shape and dtypes, most FLOPs first."""
    groups: dict[tuple, list[Int8ConvNode]] = {}
    for node in nodes:
        dtypes = (node.input.dtype, node.weight.dtype, node.output.dtype)
        groups.setdefault((signature(node.shape), dtypes), []).append(node)
    tasks = [Int8Task(f"{task_key(s)}-q{''.join(dtypes)}", s, dtypes,
                      [n.name for n in members], s.flops * len(members))
             for (s, dtypes), members in groups.items()]
    tasks.sort(key=lambda t: -t.flops)
    return tasks


def is_depthwise(shape: ConvShape) -> bool:
    """conv_int8 runs a depthwise shape with a direct loop, no int8 kernel."""
    return shape.c // shape.group == 1 and shape.oc // shape.group == 1


def int8_conv_nodes(raw: onnx.ModelProto, loaded: OnnxGraph
                    ) -> tuple[list[Int8ConvNode], list[str]]:
    """The int8 convolutions of `raw` (the model as written), in graph order,
    with static shapes from `loaded` (the same model loaded for tasks)."""
    g = OnnxGraph(raw)
    producer = {t: n for n in raw.graph.node for t in n.output}
    nodes, skipped = [], []
    for node in raw.graph.node:
        try:
            if is_op(node, "QLinearConv"):
                nodes.append(_qlinearconv(g, loaded, node))
            elif is_op(node, "Conv") and is_op(producer.get(node.input[0]), "DequantizeLinear"):
                nodes.append(_qdq_conv(g, loaded, producer, node))
            elif _fully_connected(g, producer, node):
                nodes.append(_qdq_fc(g, loaded, producer, node))
        except _NotInt8 as e:
            skipped.append(f"{node.op_type} node '{node_name(node)}': {e}")
    return nodes, skipped


def _constant(g: OnnxGraph, t: str, what: str) -> np.ndarray:
    if t not in g.constants:
        raise _NotInt8(f"its {what} '{t}' is not a constant")
    return np.asarray(g.constants[t])


def _quantization(g: OnnxGraph, scale: str, zero_point: str, what: str,
                  dtype: type) -> Quantization:
    s = _constant(g, scale, f"{what} scale").astype(np.float32)
    z = _constant(g, zero_point, f"{what} zero point") if zero_point else np.zeros(s.shape, dtype)
    if z.dtype != np.dtype(dtype):
        raise _NotInt8(f"{z.dtype} {what}, not {np.dtype(dtype)} (the int8 kernels take uint8 "
                       f"activations and int8 weights)")
    return Quantization(_SHORT[z.dtype], s, z)


def _weight(g: OnnxGraph, w: np.ndarray, scale: str, zero_point: str, axis: int
            ) -> tuple[np.ndarray, Quantization]:
    """w (its output channels along axis 0) and its quantization, whose
    per-channel scales lie along `axis` of w."""
    quant = _quantization(g, scale, zero_point, "weight", WEIGHT_DTYPE)
    if w.dtype != np.int8:
        raise _NotInt8(f"{w.dtype} weight, not int8")
    if quant.scale.size not in (1, w.shape[0]) or (quant.scale.size > 1 and axis != 0):
        raise _NotInt8(f"weight scales of shape {list(quant.scale.shape)} along axis {axis}: "
                       f"expected one, or one per output channel along axis 0")
    if np.any(quant.zero_point != 0):
        raise _NotInt8("weight zero points other than 0 (the int8 kernels take symmetric "
                       "weights)")
    return w, quant


def _static_shape(loaded: OnnxGraph, t: str) -> tuple[int, ...]:
    shape = loaded.static_shape(t)
    if shape is None or len(shape) != 4:
        raise _NotInt8(f"input '{t}' has no static 4-D shape (only 2-D convolutions are int8 "
                       f"tasks)")
    return shape


def _shape(node: onnx.NodeProto, x_shape: tuple[int, ...], w: np.ndarray,
           **epilogue) -> ConvShape:
    try:
        return conv_shape(node, x_shape, w.shape, **epilogue)
    except ConvAttributeError as e:
        raise _NotInt8(str(e).split(": ", 1)[-1]) from None


def _axis(node: onnx.NodeProto) -> int:
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 1)


def _inputs(node: onnx.NodeProto, count: int) -> list[str]:
    """The node's first `count` inputs, "" for those it leaves out."""
    return [*node.input, *[""] * count][:count]


def _qlinearconv(g: OnnxGraph, loaded: OnnxGraph, node: onnx.NodeProto) -> Int8ConvNode:
    x, x_scale, x_zp, w_q, w_scale, w_zp, y_scale, y_zp, b = _inputs(node, 9)
    w, weight = _weight(g, _constant(g, w_q, "weight"), w_scale, w_zp, 0)
    bias = _constant(g, b, "bias").astype(np.int32) if b else None
    return Int8ConvNode(
        node_name(node), "qlinearconv", _shape(node, _static_shape(loaded, x), w),
        _quantization(g, x_scale, x_zp, "input", ACTIVATION_DTYPE), weight,
        _quantization(g, y_scale, y_zp, "output", ACTIVATION_DTYPE), w, bias, x,
        node.output[0], [node_name(node)])


def _weight_dq(g: OnnxGraph, producer: dict[str, onnx.NodeProto], node: onnx.NodeProto
               ) -> tuple[np.ndarray, str, str, int]:
    """The int8 initializer, scale, zero point and axis of the
    DequantizeLinear making node's weight (input 1)."""
    dq_w = producer.get(node.input[1])
    if dq_w is None or not is_op(dq_w, "DequantizeLinear"):
        raise _NotInt8("its weight is not a DequantizeLinear of an int8 initializer")
    w_q, w_scale, w_zp = _inputs(dq_w, 3)
    return _constant(g, w_q, "weight"), w_scale, w_zp, _axis(dq_w)


def _epilogue(g: OnnxGraph, out: str
              ) -> tuple[dict[str, Any], list[onnx.NodeProto], onnx.NodeProto, Quantization]:
    """What follows the product written to `out`: a Relu or Clip fused (as
    ConvShape's act), the nodes that absorbs, and the QuantizeLinear that
    must be the sole reader, with its quantization."""
    act: dict[str, Any] = {}
    fused = g.sole_consumer(out)
    bounds = clip_bounds(g, fused) if fused is not None and is_op(fused, "Clip") else None
    if fused is not None and is_op(fused, "Relu"):
        act = {"act": "relu"}
    elif bounds is not None:
        act = {"act": "clip", "act_min": bounds[0], "act_max": bounds[1]}
    absorbed = [fused] if act and fused is not None else []
    quantize = g.sole_consumer(absorbed[0].output[0] if absorbed else out)
    if quantize is None or not is_op(quantize, "QuantizeLinear"):
        raise _NotInt8("its output is not only quantized (no QuantizeLinear as its sole "
                       "consumer): it stays a float convolution")
    _, y_scale, y_zp = _inputs(quantize, 3)
    return act, absorbed, quantize, _quantization(g, y_scale, y_zp, "output", ACTIVATION_DTYPE)


def _qdq_conv(g: OnnxGraph, loaded: OnnxGraph, producer: dict[str, onnx.NodeProto],
              conv: onnx.NodeProto) -> Int8ConvNode:
    dq_x = producer[conv.input[0]]
    w_q, w_scale, w_zp, axis = _weight_dq(g, producer, conv)
    _, x_scale, x_zp = _inputs(dq_x, 3)
    inp = _quantization(g, x_scale, x_zp, "input", ACTIVATION_DTYPE)
    w, weight = _weight(g, w_q, w_scale, w_zp, axis)
    bias, bias_nodes = _qdq_bias(g, producer, conv, inp, weight)
    act, absorbed, quantize, output = _epilogue(g, conv.output[0])
    shape = _shape(conv, _static_shape(loaded, conv.input[0]), w, **act)
    return Int8ConvNode(node_name(conv), "qdq", shape, inp, weight, output, w, bias,
                        dq_x.input[0], quantize.output[0],
                        [node_name(conv), node_name(dq_x), node_name(producer[conv.input[1]]),
                         *bias_nodes, *(node_name(n) for n in absorbed), node_name(quantize)])


def _fully_connected(g: OnnxGraph, producer: dict[str, onnx.NodeProto],
                     node: onnx.NodeProto) -> bool:
    """A Gemm or MatMul of a dequantized tensor by a dequantized constant: a
    MatMul of two activations (attention's) is no fully connected layer."""
    dq_w = producer.get(node.input[1]) if len(node.input) > 1 else None
    return ((is_op(node, "Gemm") or is_op(node, "MatMul"))
            and is_op(producer.get(node.input[0]), "DequantizeLinear")
            and is_op(dq_w, "DequantizeLinear") and dq_w.input[0] in g.constants)


def _qdq_fc(g: OnnxGraph, loaded: OnnxGraph, producer: dict[str, onnx.NodeProto],
            fc: onnx.NodeProto) -> Int8ConvNode:
    """A Gemm or MatMul as the module's docstring says, or _NotInt8."""
    a = {x.name: helper.get_attribute_value(x) for x in fc.attribute}
    if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
        raise _NotInt8("transA, alpha or beta other than 0, 1 and 1")
    dq_x = producer[fc.input[0]]
    w_q, w_scale, w_zp, axis = _weight_dq(g, producer, fc)
    if w_q.ndim != 2:
        raise _NotInt8(f"a {w_q.ndim}-D weight, not a 2-D one")
    # OIHW has the out features first: MatMul's weight and a Gemm's without
    # transB are K x N, their per-channel scales along axis 1.
    n_axis = 0 if a.get("transB", 0) else 1
    w, weight = _weight(g, w_q.T if n_axis else w_q, w_scale, w_zp,
                        0 if axis % 2 == n_axis else 1)
    x_shape = loaded.static_shape(fc.input[0])
    if x_shape is None or len(x_shape) != 2 or x_shape[1] != w.shape[1]:
        raise _NotInt8(f"input '{fc.input[0]}' is no static M x {w.shape[1]} matrix")
    _, x_scale, x_zp = _inputs(dq_x, 3)
    inp = _quantization(g, x_scale, x_zp, "input", ACTIVATION_DTYPE)
    bias, bias_nodes = _qdq_bias(g, producer, fc, inp, weight)
    if bias is not None:
        if bias.size != w.shape[0]:
            raise _NotInt8(f"a bias of shape {list(bias.shape)}, not one per output feature")
        bias = bias.reshape(-1)
    act, absorbed, quantize, output = _epilogue(g, fc.output[0])
    shape = ConvShape(n=x_shape[0], h=1, w=1, c=w.shape[1], oc=w.shape[0], kh=1, kw=1, **act)
    return Int8ConvNode(node_name(fc), "qdq-fc", shape, inp, weight, output,
                        np.ascontiguousarray(w[:, :, None, None]), bias, dq_x.input[0],
                        quantize.output[0],
                        [node_name(fc), node_name(dq_x), node_name(producer[fc.input[1]]),
                         *bias_nodes, *(node_name(n) for n in absorbed), node_name(quantize)])


def _qdq_bias(g: OnnxGraph, producer: dict[str, onnx.NodeProto], conv: onnx.NodeProto,
              inp: Quantization, weight: Quantization) -> tuple[np.ndarray | None, list[str]]:
    """The bias (node's input 2, a Conv's or a Gemm's) in int32 units of
    input scale x weight scale: a DequantizeLinear of an int32 initializer
    as written (quantize_static makes that scale), a float initializer
    rounded to them."""
    t = conv.input[2] if len(conv.input) > 2 else ""
    if not t:
        return None, []
    dq_b = producer.get(t)
    if dq_b is not None and is_op(dq_b, "DequantizeLinear"):
        b = _constant(g, dq_b.input[0], "bias")
        if b.dtype != np.int32:
            raise _NotInt8(f"{b.dtype} bias, not int32")
        return b, [node_name(dq_b)]
    b = _constant(g, t, "bias").astype(np.float64)
    return np.rint(b / (inp.scale * weight.scale.astype(np.float64))).astype(np.int32), []
