"""The activation a convolution's epilogue absorbs: the ONNX node (or the
x * gate(x) pattern exporters write for SiLU, HardSwish and Mish, HardSwish
also as x * clip(x + 3, 0, 6) / 6 with the division on either side; GELU
as its erf or tanh formula in the orders exporters write it, or ONNX's Gelu)
that follows a tensor as its only use, as one of the engine's ACL_ACTIVATIONS.

Parameters follow the engine: clip's bounds are (act_min, act_max), the
others' (act_alpha, act_beta).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

import onnx
from onnx import helper

if TYPE_CHECKING:  # graph.py imports this module
    from acltuner.onnx.graph import OnnxGraph

# The engine's activation bounds are finite floats: a missing Clip bound is +-FLT_MAX.
FLT_MAX = 3.4e38
DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class Activation:
    act: str
    a: float = 0.0
    b: float = 0.0
    nodes: tuple[onnx.NodeProto, ...] = ()  # what it absorbs, in order; the last one's
    # output is the activation's

    @property
    def shape_fields(self) -> dict:
        """The ConvShape fields that carry it."""
        if self.act == "clip":
            return {"act": "clip", "act_min": self.a, "act_max": self.b}
        return {"act": self.act, "act_alpha": self.a, "act_beta": self.b}


def is_op(node: onnx.NodeProto | None, op: str) -> TypeGuard[onnx.NodeProto]:
    return node is not None and node.op_type == op and node.domain in DEFAULT_DOMAINS


def _attr(node: onnx.NodeProto, name: str, default: float) -> float:
    return next((float(helper.get_attribute_value(a)) for a in node.attribute if a.name == name),
                default)


def clip_bounds(g: OnnxGraph, clip: onnx.NodeProto) -> tuple[float, float] | None:
    """Clip's (min, max) clamped to +-FLT_MAX; None when a bound is not a constant."""
    lo: float | None
    hi: float | None
    if g.opset < 11:
        lo, hi = _attr(clip, "min", -FLT_MAX), _attr(clip, "max", FLT_MAX)
    else:
        inputs = list(clip.input) + ["", ""]
        lo, hi = scalar(g, inputs[1], -FLT_MAX), scalar(g, inputs[2], FLT_MAX)
        if lo is None or hi is None:
            return None
    lo, hi = (min(max(float(v), -FLT_MAX), FLT_MAX) for v in (lo, hi))
    return (lo, hi) if lo <= hi else None


def scalar(g: OnnxGraph, t: str, default: float | None) -> float | None:
    """A constant one-element input's value, default when absent, else None."""
    if not t:
        return default
    c = g.constants.get(t)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 else None


ACTIVATION_OPS = ("Relu", "Sigmoid", "Mish", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish",
                  "Gelu")


def activation_node(g: OnnxGraph, node: onnx.NodeProto) -> Activation | None:
    """An activation node on its own (ACTIVATION_OPS, or PRelu with one slope)."""
    op = node.op_type if node.domain in DEFAULT_DOMAINS else None
    if op in ("Relu", "Sigmoid", "Mish"):
        return Activation(op.lower(), nodes=(node,))
    if op == "Clip":
        bounds = clip_bounds(g, node)
        return None if bounds is None else Activation("clip", *bounds, nodes=(node,))
    if op == "LeakyRelu":
        return Activation("leaky_relu", _attr(node, "alpha", 0.01), nodes=(node,))
    if op == "PRelu":  # one slope for every channel is a LeakyRelu
        slope = scalar(g, node.input[1], 0.0)
        return None if slope is None else Activation("leaky_relu", slope, nodes=(node,))
    if op == "HardSigmoid":
        return Activation("hard_sigmoid", _attr(node, "alpha", 0.2), _attr(node, "beta", 0.5),
                          nodes=(node,))
    if op == "HardSwish":
        return Activation("hard_swish", 1.0 / 6.0, 0.5, nodes=(node,))
    if op == "Gelu":  # opset 20
        approximate = next((helper.get_attribute_value(a) for a in node.attribute
                            if a.name == "approximate"), b"none")
        act = {b"none": "gelu", b"tanh": "gelu_tanh"}.get(approximate)
        return None if act is None else Activation(act, nodes=(node,))
    return None


def _gate_chain(g: OnnxGraph, first: onnx.NodeProto
                ) -> tuple[str, float, float, list[onnx.NodeProto], float] | None:
    """The gate of x * gate(x) / m starting at `first`: (activation, a, b, its
    nodes, m), m = 1 when no division follows the Mul."""
    if is_op(first, "Sigmoid"):
        return "silu", 0.0, 0.0, [first], 1.0
    if is_op(first, "HardSigmoid"):
        return "hard_swish", _attr(first, "alpha", 0.2), _attr(first, "beta", 0.5), [first], 1.0
    if is_op(first, "Softplus"):
        tanh = g.sole_consumer(first.output[0])
        if is_op(tanh, "Tanh"):
            return "mish", 0.0, 0.0, [first, tanh], 1.0
    if is_op(first, "Add"):  # x * clip(x + k, 0, m) / m is hard_swish(1/m, k/m)
        k = scalar(g, first.input[1], None)
        clip = g.sole_consumer(first.output[0])
        if k is None or not is_op(clip, "Clip"):
            return None
        bounds = clip_bounds(g, clip)
        if bounds is not None and bounds[0] == 0.0 and 0.0 < bounds[1] < FLT_MAX:
            m = bounds[1]
            divide = g.sole_consumer(clip.output[0])
            if _divides_by(divide, g, clip.output[0], m):  # the division inside the gate
                return "hard_swish", 1.0 / m, k / m, [first, clip, divide], 1.0
            return "hard_swish", 1.0 / m, k / m, [first, clip], m
    return None


def _divides_by(node: onnx.NodeProto | None, g: OnnxGraph, x: str, m: float
                ) -> TypeGuard[onnx.NodeProto]:
    """node is x / m or x * (1 / m)."""
    if is_op(node, "Div") and node.input[0] == x:
        return scalar(g, node.input[1], None) == m
    if is_op(node, "Mul") and x in node.input:
        other = node.input[1] if node.input[0] == x else node.input[0]
        factor = scalar(g, other, None)
        return factor is not None and abs(factor * m - 1.0) <= 1e-6
    return False


def _gated(g: OnnxGraph, x: str, users: list[onnx.NodeProto]) -> Activation | None:
    """x * gate(x): x's two uses are the gate's first node and the Mul."""
    for gate_start, mul in (users, users[::-1]):
        chain = _gate_chain(g, gate_start)
        if chain is None or not is_op(mul, "Mul"):
            continue
        act, a, b, nodes, m = chain
        gate_out = nodes[-1].output[0]
        if g.sole_consumer(gate_out) is not mul or sorted(mul.input) != sorted([x, gate_out]):
            continue
        if m == 1.0:
            return Activation(act, a, b, (*nodes, mul))
        divide = g.sole_consumer(mul.output[0])
        if _divides_by(divide, g, mul.output[0], m):
            return Activation(act, a, b, (*nodes, mul, divide))
    return None


def _near(g: OnnxGraph, t: str, value: float) -> bool:
    """t is a constant scalar within float32 rounding of value (exporters
    write sqrt(2) and its kin to a few digits)."""
    c = scalar(g, t, None)
    return c is not None and abs(c - value) <= 1e-6 * abs(value)


def _by_constant(node: onnx.NodeProto | None, g: OnnxGraph, x: str, value: float
                 ) -> TypeGuard[onnx.NodeProto]:
    """node is x * value (either order), or x / (1 / value)."""
    if is_op(node, "Mul") and x in node.input:
        return _near(g, node.input[1] if node.input[0] == x else node.input[0], value)
    return is_op(node, "Div") and node.input[0] == x and _near(g, node.input[1], 1.0 / value)


def _other_input(node: onnx.NodeProto, t: str) -> str:
    return node.input[1] if node.input[0] == t else node.input[0]


def _gelu_tail(g: OnnxGraph, x: str, one_plus: str) -> list[onnx.NodeProto] | None:
    """The nodes making x * (1 + f) * 0.5 from x and one_plus = 1 + f, the
    product in any order: (x * one_plus) * 0.5 (or / 2), x * (one_plus *
    0.5), or (x * 0.5) * one_plus; the last one's output is GELU's."""
    nxt = g.sole_consumer(one_plus)
    if not is_op(nxt, "Mul"):
        return None
    other = _other_input(nxt, one_plus)
    if other == x:  # (x * one_plus) * 0.5
        half = g.sole_consumer(nxt.output[0])
        return [nxt, half] if _by_constant(half, g, nxt.output[0], 0.5) else None
    if _near(g, other, 0.5):  # x * (one_plus * 0.5)
        final = g.sole_consumer(nxt.output[0])
        if is_op(final, "Mul") and sorted(final.input) == sorted([x, nxt.output[0]]):
            return [nxt, final]
        return None
    half = next((u for u in g.consumers.get(x, []) if u.output[0] == other), None)
    if _by_constant(half, g, x, 0.5) and g.sole_consumer(other) is nxt:  # (x * 0.5) * one_plus
        return [half, nxt]
    return None


def _plus_one(g: OnnxGraph, t: str) -> onnx.NodeProto | None:
    add = g.sole_consumer(t)
    return add if is_op(add, "Add") and _near(g, _other_input(add, t), 1.0) else None


def _cube_chain(g: OnnxGraph, x: str, users: list[onnx.NodeProto]) -> list[onnx.NodeProto] | None:
    """x^3 as Pow(x, 3), x * (x * x) or (x * x) * x: its nodes, the last one's
    output the cube."""
    for u in users:
        if is_op(u, "Pow") and u.input[0] == x and _near(g, u.input[1], 3.0):
            return [u]
        if is_op(u, "Mul") and list(u.input) == [x, x]:
            cube = g.sole_consumer(u.output[0])
            if is_op(cube, "Mul") and sorted(cube.input) == sorted([x, u.output[0]]):
                return [u, cube]
    return None


def gelu(g: OnnxGraph, x: str) -> Activation | None:
    """GELU of x as exporters write it, every use of x inside it:
    erf form   x * 0.5 * (1 + erf(x / sqrt 2))   (or x * (1 / sqrt 2))
    tanh form  x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))"""
    users = g.consumers.get(x, [])
    for scale in users:
        if not _by_constant(scale, g, x, 1.0 / math.sqrt(2.0)):
            continue
        erf = g.sole_consumer(scale.output[0])
        if not is_op(erf, "Erf"):
            continue
        add = _plus_one(g, erf.output[0])
        if add is None:
            continue
        tail = _gelu_tail(g, x, add.output[0])
        if tail is not None:
            nodes = [scale, erf, add, *tail]
            if all(u in nodes for u in users):
                return Activation("gelu", nodes=tuple(nodes))
    cube = _cube_chain(g, x, users)
    if cube is None:
        return None
    coef = g.sole_consumer(cube[-1].output[0])
    if not _by_constant(coef, g, cube[-1].output[0], 0.044715):
        return None
    inner = g.sole_consumer(coef.output[0])
    if not (is_op(inner, "Add") and sorted(inner.input) == sorted([x, coef.output[0]])):
        return None
    root = g.sole_consumer(inner.output[0])
    if not _by_constant(root, g, inner.output[0], math.sqrt(2.0 / math.pi)):
        return None
    tanh = g.sole_consumer(root.output[0])
    if not is_op(tanh, "Tanh"):
        return None
    add = _plus_one(g, tanh.output[0])
    if add is None:
        return None
    tail = _gelu_tail(g, x, add.output[0])
    if tail is None:
        return None
    nodes = [*cube, coef, inner, root, tanh, add, *tail]
    return Activation("gelu_tanh", nodes=tuple(nodes)) if all(u in nodes for u in users) else None


def following_activation(g: OnnxGraph, x: str) -> Activation | None:
    """The activation that is x's only use, if the engine has it."""
    if x in g.outputs:
        return None
    users = g.consumers.get(x, [])
    if len(users) == 1 and users[0].input[0] == x:
        return activation_node(g, users[0])
    if len(users) == 2:
        gated = _gated(g, x, users)
        if gated is not None:
            return gated
    if len(users) >= 2:
        return gelu(g, x)
    return None
