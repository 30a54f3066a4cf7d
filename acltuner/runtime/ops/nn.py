"""Pooling, LRN, Softmax, the fully connected layers (Gemm, MatMul by a
constant, with the bias Add and activation after them fused) and MatMul of
two computed tensors."""
from __future__ import annotations

import math

import numpy as np
import onnx

from acltuner.engine.graph import matmul_attrs
from acltuner.runtime.ir import Value
from acltuner.runtime.layout import NHWC, identity
from acltuner.runtime.ops.registry import attrs, handles, pattern, shape
from acltuner.runtime.ops.reduce import reduce_lowering
from acltuner.onnx.activation import Activation, following_activation, is_op
from acltuner.onnx.conv_attrs import same_pads
from acltuner.onnx.graph import OnnxGraph, node_name


def _pool_pads(a: dict, x: tuple[int, ...], kernel, strides, dilations) -> list[int]:
    """(top, left, bottom, right).  ceil_mode needs nothing more: the native
    pool takes the ceil output size and clips the last window itself."""
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        (top, bottom), (left, right) = (
            same_pads(x[i], kernel[i - 2], strides[i - 2], dilations[i - 2],
                       auto_pad == "SAME_LOWER") for i in (2, 3))
        return [top, left, bottom, right]
    if auto_pad == "VALID":
        return [0, 0, 0, 0]
    return list(a.get("pads", [0, 0, 0, 0]))


def pool_args(g: OnnxGraph, node: onnx.NodeProto) -> tuple[str, dict] | None:
    """(profile label, attributes) of the native pool running a 2-D MaxPool
    or AveragePool, or None."""
    a = attrs(node)
    x = shape(g, node.input[0])
    if len(x) != 4:  # (MaxPool's Indices, if used, are int64: delegated before this)
        return None
    kernel = a["kernel_shape"]
    strides, dilations = a.get("strides", [1, 1]), a.get("dilations", [1, 1])
    op = "max" if node.op_type == "MaxPool" else "average"
    return f"{op} pool {kernel[0]}x{kernel[1]}", dict(
        op=op, kernel=tuple(kernel), strides=tuple(strides), dilations=tuple(dilations),
        pads=tuple(_pool_pads(a, x, kernel, strides, dilations)),
        count_include_pad=bool(a.get("count_include_pad", 0)))


@handles("MaxPool", "AveragePool")
def _pool(g: OnnxGraph, node: onnx.NodeProto):
    found = pool_args(g, node)
    if found is None:
        return None
    what, args = found
    out = shape(g, node.output[0])

    def lower(low) -> None:
        xv = low.get(node.input[0], NHWC)
        yv = low.new(node.output[0], out, NHWC)
        low.emit("pool", node_name(node), what, {"x": xv, "out": yv}, **args)
    return lower


@handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(g: OnnxGraph, node: onnx.NodeProto):
    x, out = shape(g, node.input[0]), shape(g, node.output[0])
    if len(x) != 4:  # a 1-D or 3-D map: a reduction over its spatial axes
        op = "mean" if node.op_type == "GlobalAveragePool" else "max"
        return reduce_lowering(node, x, list(range(2, len(x))), op, keepdims=True)

    def lower(low) -> None:
        xv = low.get(node.input[0], NHWC)
        yv = low.new(node.output[0], out, NHWC)
        if node.op_type == "GlobalAveragePool":
            low.emit("global_average_pool", node_name(node), "global average pool",
                     {"x": xv, "out": yv})
        else:  # a max pool with the whole map as its window
            low.emit("pool", node_name(node), "global max pool", {"x": xv, "out": yv}, op="max",
                     kernel=x[2:], strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0),
                     count_include_pad=False)
    return lower


@handles("LRN")
def _lrn(g: OnnxGraph, node: onnx.NodeProto):
    if len(shape(g, node.input[0])) != 4:
        return None
    a = attrs(node)

    def lower(low) -> None:
        xv = low.get(node.input[0], NHWC)
        yv = low.new(node.output[0], xv.shape, NHWC)
        low.emit("lrn", node_name(node), f"lrn size {a['size']}", {"x": xv, "out": yv},
                 size=a["size"], alpha=a.get("alpha", 1e-4), beta=a.get("beta", 0.75),
                 bias=a.get("bias", 1.0))
    return lower


@handles("Softmax", "LogSoftmax")
def _softmax(g: OnnxGraph, node: onnx.NodeProto):
    dims = shape(g, node.input[0])
    rank = len(dims)
    # Opset 13 normalizes one axis; before, every axis from `axis` on as one.
    axis = attrs(node).get("axis", -1 if g.opset >= 13 else 1) % rank
    reduced = [axis] if g.opset >= 13 else list(range(axis, rank))

    def lower(low) -> None:
        xv = low.get(node.input[0], prefer=tuple(
            [p for p in range(rank) if p not in reduced] + reduced))
        # Softmax over a set of elements ignores their order: it suffices that
        # the reduced axes be the innermost ones of the layout, in any order.
        kept = [p for p in xv.perm if p not in reduced and dims[p] != 1]
        perm = tuple(p for p in xv.perm if p not in reduced) + tuple(
            p for p in xv.perm if p in reduced)
        innermost = [p for p in xv.perm if dims[p] != 1][:len(kept)] == kept
        if not innermost:
            xv = low.get(node.input[0], perm)
        yv = low.new(node.output[0], dims, xv.perm)
        inner = math.prod(dims[p] for p in reduced)
        view = (xv.size // inner, inner)
        log = node.op_type == "LogSoftmax"
        low.emit("softmax", node_name(node), "log softmax" if log else "softmax",
                 {"x": low.view(xv, view), "out": low.view(yv, view)}, log=log)
    return lower


def _matmul(low, node: onnx.NodeProto, a: str, b: np.ndarray, bias: np.ndarray | None,
            out_name: str | None, act: Activation | None = None) -> Value:
    """out[..., N] = act(a[..., K] x b[K, N] + bias): `a`'s leading axes are the rows."""
    k, n = b.shape
    av = low.get(a, identity(len(shape(low.g, a))))
    out_shape = av.shape[:-1] + (n,)
    m = av.size // k
    yv = low.new(out_name, out_shape, identity(len(out_shape)))
    ukernel = low.product_ukernel(node_name(node), m, k, n)
    fused = f" {act.act}" if act else ""
    low.emit_product((1, m, k, n), "matmul", node_name(node),
                     f"matmul {m}x{k}x{n} {ukernel}{fused}",
                     {"x": low.view(av, (m, k)), "out": low.view(yv, (m, n))},
                     **matmul_attrs(ukernel, b, bias, *((act.act, act.a, act.b) if act else ())))
    return yv


def _gemm_operands(g: OnnxGraph, node: onnx.NodeProto
                   ) -> tuple[np.ndarray, np.ndarray | None, bool] | None:
    """A Gemm's B as K x N (alpha folded in), its C times beta (or None) and
    whether C is one bias per column; None when the engine does not run it."""
    a = attrs(node)
    b_name, c_name = node.input[1], (node.input[2] if len(node.input) > 2 else "")
    if (a.get("transA", 0) or b_name not in g.constants or len(shape(g, node.input[0])) != 2
            or (c_name and c_name not in g.constants)):
        return None
    b = np.asarray(g.constants[b_name], np.float32)
    b = b.T if a.get("transB", 0) else b  # packed as K x N
    if a.get("alpha", 1.0) != 1.0:
        b = np.float32(a["alpha"]) * b
    n = shape(g, node.output[0])[1]
    c = np.float32(a.get("beta", 1.0)) * np.asarray(g.constants[c_name], np.float32) \
        if c_name else None
    return b, c, c is not None and (c.size == 1 or c.shape in ((n,), (1, n)))


@handles("Gemm")
def _gemm(g: OnnxGraph, node: onnx.NodeProto):
    operands = _gemm_operands(g, node)
    if operands is None:
        return None
    b, c, per_column = operands
    out_shape = shape(g, node.output[0])
    n = out_shape[1]

    def lower(low) -> None:
        if c is None or per_column:
            bias = None if c is None else np.broadcast_to(c.reshape(-1), (n,))
            _matmul(low, node, node.input[0], b, bias, node.output[0])
            return
        # A bias that differs between rows: the product, then an Add.
        product = _matmul(low, node, node.input[0], b, None, None)
        bias = low.constant(np.broadcast_to(c, out_shape), identity(2))
        out = low.new(node.output[0], out_shape, identity(2))
        low.emit("binary", node_name(node), "add", {"a": product, "b": bias, "out": out}, op="add")
    return lower


def _column_bias(g: OnnxGraph, add: onnx.NodeProto, y: str, n: int) -> np.ndarray | None:
    """The N floats of `add` = y + a constant of one value per column (any
    leading 1s, either order), not broadcasting y any wider; else None."""
    if not is_op(add, "Add") or y not in add.input:
        return None
    c = g.constants.get(add.input[1] if add.input[0] == y else add.input[0])
    if (c is None or c.size != n or c.ndim > len(shape(g, y)) or c.shape[-1] != n
            or shape(g, add.output[0]) != shape(g, y)):
        return None
    return np.asarray(c, np.float32).reshape(n)


@pattern
def _linear(g: OnnxGraph, node: onnx.NodeProto):
    """A MatMul by a constant (or a Gemm with one bias per column), the Add
    of a bias per column after it, and the activation after that (a GELU,
    a ReLU...), as one matmul whose epilogue adds and applies them: at least
    one of the two, else the node's handler runs it alone."""
    dims = g.static_shape(node.input[0]) if node.input else None
    if dims is None or g.static_shape(node.output[0]) is None:
        return None
    if is_op(node, "MatMul"):
        b = g.constants.get(node.input[1])
        if b is None or b.ndim != 2 or len(dims) < 2:
            return None
        b, bias = np.asarray(b, np.float32), None
    elif is_op(node, "Gemm"):
        operands = _gemm_operands(g, node)
        if operands is None or (operands[1] is not None and not operands[2]):
            return None
        b, c, _ = operands
        bias = None if c is None else np.broadcast_to(c.reshape(-1), (b.shape[1],))
    else:
        return None
    nodes, out = [node], node.output[0]
    add = g.sole_consumer(out)
    if bias is None and add is not None:
        bias = _column_bias(g, add, out, b.shape[1])
        if bias is not None:
            nodes.append(add)
            out = add.output[0]
    act = following_activation(g, out)
    if act is not None:
        nodes += act.nodes
    if len(nodes) == 1:
        return None

    def lower(low) -> None:
        _matmul(low, node, node.input[0], b, bias, nodes[-1].output[0], act)
    return nodes, lower


def _by_constant(g: OnnxGraph, node: onnx.NodeProto) -> bool:
    """Whether the MatMul `node` is by a constant matrix: a fully connected
    layer, lowered to matmul with its weights packed once."""
    b = g.constants.get(node.input[1])
    return b is not None and b.ndim == 2 and len(shape(g, node.input[0])) >= 2


@handles("MatMul")
def _matmul_node(g: OnnxGraph, node: onnx.NodeProto):
    if _by_constant(g, node):
        b = g.constants[node.input[1]]
        return lambda low: _matmul(low, node, node.input[0], b, None, node.output[0])
    return _batch_matmul(g, node)


def _product_scale(g: OnnxGraph, node: onnx.NodeProto | None, y: str) -> float | None:
    """The factor of `node` = y times a constant of one finite, nonzero
    value (an attention's scores times 1 / sqrt(d)) that keeps y's shape;
    else None."""
    if not is_op(node, "Mul") or y not in node.input:
        return None
    c = g.constants.get(node.input[1] if node.input[0] == y else node.input[0])
    if (c is None or c.size != 1 or c.ndim > len(shape(g, y))
            or shape(g, node.output[0]) != shape(g, y)):
        return None
    value = float(np.asarray(c, np.float32).reshape(()))
    return value if value != 0.0 and math.isfinite(value) else None


@pattern
def _scaled_batch_matmul(g: OnnxGraph, node: onnx.NodeProto):
    """A MatMul of two computed tensors and the Mul by a scalar after it, as
    one batch_matmul whose packed B takes the factor."""
    if not is_op(node, "MatMul") or not all(
            t in g.constants or g.static_shape(t) is not None for t in [*node.input, *node.output]):
        return None
    mul = g.sole_consumer(node.output[0])
    scale = _product_scale(g, mul, node.output[0])
    if mul is None or scale is None or _by_constant(g, node):
        return None
    lower = _batch_matmul(g, node, mul.output[0], scale)
    return None if lower is None else ([node, mul], lower)


def _dims(g: OnnxGraph, t: str) -> tuple[int, ...]:
    return tuple(g.constants[t].shape) if t in g.constants else shape(g, t)


def _padded(v: Value, rank: int) -> Value:
    """v seen with leading axes of size 1 up to `rank` (numpy's broadcasting),
    in the same memory."""
    d = rank - len(v.shape)
    return v.relabel((1,) * d + v.shape, tuple(range(d)) + tuple(p + d for p in v.perm))


def _contiguous_along(v: Value, axis: int) -> bool:
    """Whether v's layout steps through `axis` one float at a time (or it has size 1)."""
    return v.shape[axis] == 1 or all(v.shape[p] == 1 for p in v.perm[v.perm.index(axis) + 1:])


def _batch_matmul(g: OnnxGraph, node: onnx.NodeProto, out_name: str | None = None,
                  scale: float = 1.0):
    """MatMul of two tensors of the program (or of a constant stack): numpy's
    rules, a 1-D operand promoted to a row (A) or a column (B) whose axis the
    output drops.  A is read in any layout keeping its K axis innermost, B in
    any layout; the output is written in the layout its sole consumer, a
    Transpose keeping the last axis last, turns into ONNX order.  out_name:
    the tensor written (default: the node's output), the product times
    `scale`."""
    a_name, b_name = node.input[0], node.input[1]
    out_name = out_name or node.output[0]
    da, db, out = _dims(g, a_name), _dims(g, b_name), shape(g, out_name)
    if min(len(da), len(db)) < 1:
        return None
    rank = max(len(da), len(db), 2)
    m, k = da[-2:] if len(da) > 1 else (1, da[0])
    n = db[-1] if len(db) > 1 else 1
    full = tuple(np.broadcast_shapes(da[:-2], db[:-2])) + (m, n)
    full = (1,) * (rank - len(full)) + full
    out_perm = identity(rank)
    consumer = g.sole_consumer(out_name)
    if full == out and consumer is not None and consumer.op_type == "Transpose":
        perm = tuple(attrs(consumer).get("perm", ()))
        if perm and perm[-1] == rank - 1:
            out_perm = perm

    def stack(low, name: str, column: bool) -> Value:
        v = low.get(name, prefer=identity(len(_dims(g, name))))
        if len(v.shape) == 1:  # the row [1, K] or the column [K, 1]
            v = v.relabel((v.shape[0], 1) if column else (1, v.shape[0]), identity(2))
        return _padded(v, rank)

    def lower(low) -> None:
        a = stack(low, a_name, column=False)
        if not _contiguous_along(a, rank - 1):
            a = _padded(low.get(a_name, identity(len(da))), rank)
        b = stack(low, b_name, column=True)
        yv = low.new(None if full != out else out_name, full, out_perm)
        if full != out:  # a promoted operand's axis dropped: the same floats in order
            low.alias(out_name, yv.relabel(out, identity(len(out))))
        ukernel = low.product_ukernel(node_name(node), m, k, n)
        batches = math.prod(full[:-2])
        scaled = {} if scale == 1.0 else {"scale": scale}
        low.emit_product((batches, m, k, n), "batch_matmul", node_name(node),
                         f"batch matmul {batches}x{m}x{k}x{n} {ukernel}"
                         f"{' scaled' if scaled else ''}",
                         {"a": a, "b": b, "out": yv}, ukernel=ukernel, a_perm=a.perm,
                         b_perm=b.perm, out_perm=yv.perm, **scaled)
    return lower
