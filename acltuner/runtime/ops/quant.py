"""Quantized tensors at run time: QDQ models' QuantizeLinear and
DequantizeLinear as the native quantize / dequantize operations, and their
int8 convolutions (taskgen.int8's pattern: DQ(x), DQ(w), [DQ(b)] -> Conv ->
[Relu | Clip] -> Q) as conv_int8 operations, and its fully connected layers
(DQ(x), DQ(w) -> Gemm | MatMul -> ... -> Q) as conv_int8 operations on an
M x 1 x 1 map, the (M, K) and (M, N) tensors' bytes seen as NHWC ones.

A QuantizeLinear's uint8 output stays in the arena (Value.u8) when every
reader is a DequantizeLinear.  The int8 convolution reads that uint8 tensor
itself and writes its own output's QuantizeLinear tensor, so a chain of int8
convolutions never goes through float: the DequantizeLinear between two of
them is not run at all (lazy: only a reader that needs floats, an Add, a
pool, the model's output, has it run).  Where a native stage ends before a
delegated segment, every DequantizeLinear of its uint8 tensors that a later
node may still read is run then, and a later int8 convolution quantizes
that float tensor back, which gives the same bytes: (q - z) * s / s rounds
back to q - z exactly for |q - z| <= 255.

A MaxPool, an Add or a Concat between the DequantizeLinear of each input and
one QuantizeLinear of its output runs on the uint8 tensors too: the uint8
max pool, where the two quantizations are the same (as quantizers make
them), gives the float pool's bytes; quantized_add sums in double, so that a
sum landing on a half-step may round to the other step than float's or
onnxruntime's QLinearAdd; the uint8 concat requantizes each input of
another quantization as a dequantize and a quantize would (aclgraph.h).

Delegation stays possible for the rest: a QuantizeLinear with another
reader, per-axis or int8 activations, a model output in uint8.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import TensorProto

from acltuner.engine.config import ExecConfig
from acltuner.onnx.activation import is_op
from acltuner.onnx.graph import ConvNode, OnnxGraph, node_name
from acltuner.runtime.ir import Buffer, Deferred, Value
from acltuner.runtime.layout import NHWC, identity, inverse, preferred, then
from acltuner.runtime.ops.nn import pool_args
from acltuner.runtime.ops.registry import HANDLERS, Action, attrs, shape
from acltuner.taskgen.int8 import INT8_ALGORITHM, Int8ConvNode, is_depthwise

if TYPE_CHECKING:
    from acltuner.runtime.lower import Lowering

OPS = ("QuantizeLinear", "DequantizeLinear")
MAX_RANK = 6  # the native graph API's


def scalar_quantization(g: OnnxGraph, node: onnx.NodeProto) -> tuple[float, int] | None:
    """(scale, zero point) of a Q or DQ node with one constant float scale
    and a uint8 zero point (absent: 0); None for any other form."""
    scale, zp = ([*node.input, "", ""][1:3])
    if scale not in g.constants or (zp and zp not in g.constants):
        return None
    s = np.asarray(g.constants[scale])
    z = np.asarray(g.constants[zp]) if zp else np.zeros((), np.uint8)
    if s.size != 1 or z.size != 1 or z.dtype != np.uint8 or s.dtype.kind != "f":
        return None
    value = float(s.reshape(()))
    return (value, int(z.reshape(()))) if math.isfinite(value) and value > 0 else None


def _static(g: OnnxGraph, t: str, elem_type: int) -> bool:
    tt = g.types.get(t)
    dims = g.static_shape(t)
    return (tt is not None and tt.elem_type == elem_type and dims is not None
            and len(dims) <= MAX_RANK)


def native_quantize(g: OnnxGraph, node: onnx.NodeProto | None) -> bool:
    """A QuantizeLinear whose uint8 output can stay in the arena: read by
    DequantizeLinear nodes only, none of it a model output."""
    if not is_op(node, "QuantizeLinear") or scalar_quantization(g, node) is None:
        return False
    out = node.output[0]
    readers = g.consumers.get(out, [])
    return (out not in g.outputs and bool(readers) and _static(g, out, TensorProto.UINT8)
            and all(is_op(r, "DequantizeLinear") and scalar_quantization(g, r) is not None
                    for r in readers))


def _new_u8(low: Lowering, name: str | None, shape: tuple[int, ...], perm) -> Value:
    value = Value(Buffer(-(-math.prod(shape) // 4)), tuple(shape), tuple(perm), u8=True)
    return value if name is None else low.produce(name, value)


def _u8_value(low: Lowering, name: str) -> Value | None:
    return next((v for v in low.stage.values.get(name, []) if v.u8), None)


def dequantize(low: Lowering, node: onnx.NodeProto) -> None:
    """Runs DequantizeLinear `node` now, in the current stage."""
    q = _u8_value(low, node.input[0])
    assert q is not None, f"{node_name(node)}: its uint8 input is not in this native stage"
    scale, zp = scalar_quantization(low.g, node) or (1.0, 0)
    out = low.new(node.output[0], q.shape, q.perm)
    low.emit("dequantize", node_name(node), "dequantize", {"x": q, "out": out}, scale=scale,
             zero_point=zp)


def action(g: OnnxGraph, node: onnx.NodeProto) -> Action | None:
    """How to lower a QuantizeLinear or DequantizeLinear, or None to delegate it."""
    if is_op(node, "QuantizeLinear"):
        return _quantize_action(g, node) if native_quantize(g, node) and \
            _static(g, node.input[0], TensorProto.FLOAT) else None
    # A DequantizeLinear of a constant was folded when the model was loaded.
    if is_op(node, "DequantizeLinear") and native_quantize(g, g.producer.get(node.input[0])):
        return _dequantize_action(g, node)
    return None


def _quantize_action(g: OnnxGraph, node: onnx.NodeProto) -> Action:
    scale, zp = scalar_quantization(g, node) or (1.0, 0)

    def lower(low: Lowering) -> None:
        # A model's image comes in as it is (NCHW) and is quantized straight
        # into the NHWC bytes the int8 convolutions read: one pass, where the
        # float copy in transposed it first (a 224x224 image's copy took
        # twice its plain copy's time).
        x = low.get(node.input[0], prefer=identity(len(shape(g, node.input[0]))))
        out = _new_u8(low, node.output[0], x.shape, preferred(len(x.shape)))
        perm = then(inverse(x.perm), out.perm)
        low.emit("quantize", node_name(node), "quantize", {"x": x, "out": out}, scale=scale,
                 zero_point=zp, **({"perm": list(perm)} if perm != identity(len(perm)) else {}))
    return lower


def _dequantize_action(g: OnnxGraph, node: onnx.NodeProto) -> Action:
    readers = [node_name(r) for r in g.consumers.get(node.output[0], [])]

    def lower(low: Lowering) -> None:
        if node.output[0] in low.producer:
            return  # run already, at the end of an earlier stage (flush)
        if node.output[0] not in g.outputs and readers and \
                all(r in low.u8_readers for r in readers):
            return  # its readers read the uint8 tensor itself
        dequantize(low, node)
    return lower


def flush(low: Lowering) -> None:
    """Before the current native stage ends: every DequantizeLinear of its
    uint8 tensors that has not run and has a reader still to come runs now,
    since the uint8 tensor stays behind in this stage's arena."""
    for name, values in list(low.stage.values.items()):
        if not any(v.u8 for v in values):
            continue
        for dq in low.g.consumers.get(name, []):
            out = dq.output[0]
            later = [r for r in low.g.consumers.get(out, []) if node_name(r) not in low.visited]
            if out not in low.producer and (later or out in low.g.outputs):
                dequantize(low, dq)


# ---- int8 convolutions ---------------------------------------------------------------

def _int8_ends(g: OnnxGraph, dq_x: onnx.NodeProto | None, q8: Int8ConvNode
               ) -> onnx.NodeProto | None:
    """The QuantizeLinear writing q8's output, where dq_x dequantizes q8's
    input, both uint8 tensors can stay in the arena and conv_int8 takes q8's
    scales; else None."""
    quantize = g.producer.get(q8.output_name)
    if (not is_op(dq_x, "DequantizeLinear") or dq_x.input[0] != q8.input_name
            or not native_quantize(g, g.producer.get(q8.input_name))
            or not native_quantize(g, quantize) or quantize is None):
        return None
    scales = [q8.input.scale, q8.weight.scale, q8.output.scale]
    if not all(np.all(np.isfinite(s)) and np.all(s > 0) for s in scales):
        return None  # conv_int8 would refuse them: the float node runs it as written
    return quantize


def int8_chain(g: OnnxGraph, conv: ConvNode, q8: Int8ConvNode) -> list[str] | None:
    """The nodes an int8 convolution replaces in the loaded model (the Conv,
    its fused Relu or Clip, the QuantizeLinear), or None when the loaded
    model's fusion differs from the int8 pattern's (a residual Add...) or
    the tensors around it cannot stay uint8."""
    if (q8.pattern != "qdq" or conv.residual or conv.shape.transposed
            or conv.affine is not None):
        return None
    quantize = _int8_ends(g, g.producer.get(conv.input), q8)
    if quantize is None:
        return None
    s = q8.shape
    if 1 < s.group and not s.c == s.oc == s.group:
        # Grouped (not depthwise): conv_int8 runs a GEMM per group, and the
        # float convolution with the dequantized weights (grouped_channel_block)
        # is several times faster; its sums, quantized by the QuantizeLinear,
        # land on the same step but where a float rounding straddles a
        # half-step.  A quantized RegNetY-400MF: 5.2 -> 1.8 ms, its output
        # unchanged.  Until the tuner chooses int8 or float per layer.
        return None
    chain = [conv.name, *conv.fused, node_name(quantize)]
    return chain if set(chain) <= {*q8.nodes} else None


def int8_fc(g: OnnxGraph, q8: Int8ConvNode, config: ExecConfig | None
            ) -> tuple[list[str], Action] | None:
    """A fully connected layer's int8 convolution (pattern "qdq-fc"): the
    nodes it replaces in the loaded model (the Gemm or MatMul, its Relu or
    Clip, the QuantizeLinear), found back from the QuantizeLinear, and its
    action; None as int8_chain."""
    chain: list[onnx.NodeProto] = []
    node = g.producer.get(q8.output_name)
    while node is not None and len(chain) < 3:
        chain.insert(0, node)
        if node_name(node) == q8.name:
            break
        node = g.producer.get(node.input[0])
    fc = chain[0] if chain else None
    if (q8.pattern != "qdq-fc" or fc is None or node_name(fc) != q8.name
            or _int8_ends(g, g.producer.get(fc.input[0]), q8) is None
            or any(g.sole_consumer(a.output[0]) is not b for a, b in zip(chain, chain[1:]))):
        return None
    names = [node_name(n) for n in chain]
    if not set(names) <= {*q8.nodes}:
        return None
    return names, int8_conv_action(g, q8.name, fc.input[0], q8, config)


def _algorithm(q8: Int8ConvNode) -> str:
    """The engine's choice (conv_int8.h), for profiles."""
    s = q8.shape
    if is_depthwise(s):
        return "depthwise"
    pointwise = s.kh == s.kw == s.stride_h == s.stride_w == 1 and \
        not (s.pad_top or s.pad_left or s.pad_bottom or s.pad_right)
    return "pointwise" if pointwise else "im2col"


def conv_int8_attrs(q8: Int8ConvNode, config: ExecConfig | None) -> dict:
    """conv_int8's attributes (aclgraph.h): the weights as floats holding
    int8 values, converted when built (Deferred) so that one exists at a
    time.  config: the int8 task's (INT8_ALGORITHM), or, in plans older than
    int8 tasks, the float task's, whose split runs with the first int8
    kernel; None (a fully connected layer, which plans hold none for): the
    graph's own split and kernel."""
    w = q8.weight_q
    ukernel = (config.ukernel or "") if config and config.algorithm == INT8_ALGORITHM else ""
    return {"shape": q8.shape, "ukernel": ukernel,
            "core_weights": config.core_weights if config else (),
            "workloads": config.workloads if config else 1,
            "weight": Deferred(lambda: w.astype(np.float32), w.size * 4),
            "bias": None if q8.bias_q is None else [int(b) for b in q8.bias_q],
            "x_scale": float(q8.input.scale.reshape(())),
            "x_zero_point": int(q8.input.zero_point.reshape(())),
            "w_scale": q8.weight.scale.astype(np.float32).reshape(-1),
            "y_scale": float(q8.output.scale.reshape(())),
            "y_zero_point": int(q8.output.zero_point.reshape(()))}


def _u8_input(low: Lowering, dq_x: onnx.NodeProto, perm) -> Value:
    """The node's uint8 input in layout `perm`: the QuantizeLinear's tensor
    of this stage, or its float form (an earlier stage's) quantized back."""
    name = dq_x.input[0]
    found = _in_stage(low, dq_x, perm)
    if found is not None:
        return found
    if dq_x.output[0] not in low.producer and _u8_value(low, name) is not None:
        dequantize(low, dq_x)  # held in another layout here: through float, once
    x = low.get(dq_x.output[0], perm)
    scale, zp = scalar_quantization(low.g, dq_x) or (1.0, 0)
    out = _new_u8(low, None, x.shape, perm)
    low.emit("quantize", node_name(dq_x), "quantize (back to uint8)", {"x": x, "out": out},
             scale=scale, zero_point=zp)
    low.stage.values.setdefault(name, []).append(out)
    return out


def int8_conv_action(g: OnnxGraph, node: str, x: str, q8: Int8ConvNode,
                     config: ExecConfig | None) -> Action:
    """Node `node` (a Conv, or a Gemm or MatMul of pattern "qdq-fc") reading
    float tensor x, as conv_int8 on x's uint8 tensor."""
    dq_x = g.producer[x]
    n, oh, ow, oc = q8.shape.output_shape
    # A fully connected layer's (M, K) and (M, N) in ONNX order: the same
    # bytes as NHWC (M, 1, 1, K) and (M, 1, 1, N).
    fc = q8.pattern == "qdq-fc"
    perm = identity(2) if fc else NHWC

    def lower(low: Lowering) -> None:
        x = _u8_input(low, dq_x, perm)
        out = _new_u8(low, q8.output_name, (n, oc) if fc else (n, oc, oh, ow), perm)
        if fc:
            x, out = (v.relabel((n, v.shape[1], 1, 1), NHWC) for v in (x, out))
        low.emit("conv_int8", node, f"conv int8 {_algorithm(q8)}", {"x": x, "out": out},
                 **conv_int8_attrs(q8, config))
    return lower


# ---- max pools, adds and concats between uint8 tensors -----------------------------

def _dequantized_u8(g: OnnxGraph, t: str) -> onnx.NodeProto | None:
    """The DequantizeLinear making float tensor t of a uint8 tensor that stays
    in the arena, or None."""
    dq = g.producer.get(t)
    if is_op(dq, "DequantizeLinear") and scalar_quantization(g, dq) is not None and \
            native_quantize(g, g.producer.get(dq.input[0])):
        return dq
    return None


def _sole_quantize(g: OnnxGraph, t: str) -> onnx.NodeProto | None:
    """The QuantizeLinear that is float tensor t's only reader, its uint8
    output staying in the arena, or None."""
    readers = g.consumers.get(t, [])
    if t in g.outputs or len(readers) != 1 or not native_quantize(g, readers[0]):
        return None
    return readers[0]


def u8_chains(g: OnnxGraph, model: onnx.ModelProto) -> dict[str, tuple[list[str], Action]]:
    """DQ -> MaxPool -> Q, DQ, DQ -> Add -> Q and DQs -> Concat -> Q, run on
    the uint8 tensors:
    by the QuantizeLinear's name, the names of the node and the
    QuantizeLinear, and the action.  Their DequantizeLinear nodes are the
    caller's to leave out where only such readers read them (u8_readers)."""
    found: dict[str, tuple[list[str], Action]] = {}
    for node in model.graph.node:
        q = _sole_quantize(g, node.output[0]) if node.output else None
        if q is None or not node.input:
            continue
        dqs = [dq for dq in (_dequantized_u8(g, t) for t in node.input) if dq is not None]
        if len(dqs) != len(node.input):
            continue
        action = None
        if is_op(node, "MaxPool") and len(node.output) == 1 and \
                scalar_quantization(g, dqs[0]) == scalar_quantization(g, q):
            action = _u8_pool_action(g, node, dqs[0], q)
        elif is_op(node, "Concat"):
            action = _u8_concat_action(g, node, dqs, q)
        elif is_op(node, "Add") and len(dqs) == 2 and \
                g.static_shape(node.input[0]) == g.static_shape(node.input[1]) == \
                g.static_shape(node.output[0]) is not None:
            action = _quantized_add_action(g, node, dqs, q)
        if action is not None:
            found[node_name(q)] = [node_name(node), node_name(q)], action
    return found


def _in_stage(low: Lowering, dq: onnx.NodeProto, perm=None) -> Value | None:
    """The uint8 tensor dq reads, held in this stage (in `perm`, if given)."""
    return next((v for v in low.stage.values.get(dq.input[0], [])
                 if v.u8 and (perm is None or v.perm == perm)), None)


def _through_float(low: Lowering, g: OnnxGraph, dqs: list[onnx.NodeProto],
                   node: onnx.NodeProto, q: onnx.NodeProto) -> None:
    """The chain as written, where its uint8 tensors are not at hand (another
    stage's, another layout): dequantize, the float node, quantize."""
    for dq in dqs:
        if dq.output[0] not in low.producer:
            dequantize(low, dq)
    float_op = HANDLERS[node.op_type](g, node)
    assert float_op is not None, f"{node_name(node)}: no float lowering"
    float_op(low)
    _quantize_action(g, q)(low)


def _u8_pool_action(g: OnnxGraph, node: onnx.NodeProto, dq: onnx.NodeProto,
                    q: onnx.NodeProto) -> Action | None:
    found = pool_args(g, node)
    if found is None:
        return None
    what, args = found
    out_shape = shape(g, node.output[0])

    def lower(low: Lowering) -> None:
        x = _in_stage(low, dq, NHWC)
        if x is None:
            return _through_float(low, g, [dq], node, q)
        out = _new_u8(low, q.output[0], out_shape, NHWC)
        low.emit("pool", node_name(node), f"{what} (uint8)", {"x": x, "out": out}, **args,
                 u8=True)
    return lower


def _common_layout(low: Lowering, dqs: list[onnx.NodeProto]) -> list[Value] | None:
    """The uint8 tensors the dqs read, held in this stage in one layout, or None."""
    for first in (v for v in low.stage.values.get(dqs[0].input[0], []) if v.u8):
        found = [_in_stage(low, dq, first.perm) for dq in dqs]
        if all(v is not None for v in found):
            return [v for v in found if v is not None]
    return None


def _u8_concat_action(g: OnnxGraph, node: onnx.NodeProto, dqs: list[onnx.NodeProto],
                      q: onnx.NodeProto) -> Action:
    out_shape = shape(g, node.output[0])
    axis = attrs(node)["axis"] % len(out_shape)
    quantizations = [scalar_quantization(g, n) or (1.0, 0) for n in (*dqs, q)]

    def lower(low: Lowering) -> None:
        ins = _common_layout(low, dqs)
        if ins is None:
            return _through_float(low, g, dqs, node, q)
        out = _new_u8(low, q.output[0], out_shape, ins[0].perm)
        low.emit("concat", node_name(node), "concat (uint8)", {"ins": ins, "out": out},
                 axis=ins[0].perm.index(axis), u8=True,
                 scales=tuple(s for s, _ in quantizations),
                 zero_points=tuple(z for _, z in quantizations))
    return lower


def _quantized_add_action(g: OnnxGraph, node: onnx.NodeProto, dqs: list[onnx.NodeProto],
                          q: onnx.NodeProto) -> Action:
    (a_scale, a_zp), (b_scale, b_zp), (scale, zp) = (
        scalar_quantization(g, n) or (1.0, 0) for n in (*dqs, q))  # all scalar: u8_chains

    def lower(low: Lowering) -> None:
        ins = _common_layout(low, dqs)
        if ins is None:
            return _through_float(low, g, dqs, node, q)
        a, b = ins
        out = _new_u8(low, q.output[0], a.shape, a.perm)
        low.emit("quantized_add", node_name(node), "add (uint8)", {"a": a, "b": b, "out": out},
                 a_scale=a_scale, a_zero_point=a_zp, b_scale=b_scale, b_zero_point=b_zp,
                 scale=scale, zero_point=zp)
    return lower
