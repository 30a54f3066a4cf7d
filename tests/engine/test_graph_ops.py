"""Whole-model program operations (acltuner.engine.graph) against onnxruntime
single-node models (NCHW models fed NHWC data transposed) or numpy; identical
output under every core split; one-line errors."""
from __future__ import annotations

import os

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.graph import Graph, Tensor, conv_attrs, matmul_attrs
from acltuner.engine.native import EngineError
from tests.support.conv_oracle import ort_conv, rel_err

EXACT = 1e-5          # one rounding per element or short sums
TRANSCENDENTAL = 1e-4  # exp / pow, long dot products
NCHW, NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
SPLITS = [((1,), 1), ((1, 1), 3), ((0, 1), 16), ((2, 1), 64)]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _uniform(rng, shape, lo=-1.0, hi=1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(np.float32)


def ort_node(op: str, inputs: list[np.ndarray], consts: dict[str, np.ndarray] | None = None,
             **attrs) -> np.ndarray:
    """Output of one ONNX node: inputs X0, X1, ... then named constants."""
    names = [f"X{i}" for i in range(len(inputs))]
    consts = consts or {}
    node = helper.make_node(op, names + list(consts), ["Y"], **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                     for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    # An IR version onnxruntime accepts: onnx may default to a newer one.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, inputs)))[0]


def run_node(add, inputs: list[np.ndarray], out_dims: list[tuple[int, ...]],
             split=SPLITS[0], in_place: bool = False, balance: str = "strict") -> list[np.ndarray]:
    """Lays the inputs and outputs out in a fresh arena (a few floats apart, or
    output 0 over input 0 when in_place), adds one node with add(g, ins, outs)
    and returns the outputs after a run."""
    offset, ins, outs = 0, [], []
    for a in inputs:
        ins.append(Tensor(offset, a.shape))
        offset += a.size + 3
    for i, dims in enumerate(out_dims):
        if in_place and i == 0:
            outs.append(ins[0])
            continue
        outs.append(Tensor(offset, dims))
        offset += outs[-1].size + 3
    with Graph(offset + 5, *split) as g:
        g.arena[:] = np.nan  # unwritten outputs show
        for t, a in zip(ins, inputs):
            g.view(t)[...] = a
        add(g, ins, outs)
        g.set_balance(balance)
        times = g.run().node_ms
        assert g.node_count == 1 and len(times) == 1 and times[0] >= 0
        return [g.view(t).copy() for t in outs]


def assert_close(got: np.ndarray, ref: np.ndarray, tol: float) -> None:
    assert got.shape == ref.shape
    assert rel_err(got, ref.astype(np.float32)) <= tol, rel_err(got, ref)


# ---- unary / binary ----------------------------------------------------------------

UNARY_CASES = [  # name, a, b, ONNX op, attributes, constant inputs, tolerance
    ("relu", 0, 0, "Relu", {}, {}, EXACT),
    ("clip", -1.5, 2.5, "Clip", {}, {"lo": np.float32(-1.5), "hi": np.float32(2.5)}, EXACT),
    ("leaky_relu", 0.15, 0, "LeakyRelu", {"alpha": 0.15}, {}, EXACT),
    ("sigmoid", 0, 0, "Sigmoid", {}, {}, TRANSCENDENTAL),
    ("hard_sigmoid", 0.3, 0.4, "HardSigmoid", {"alpha": 0.3, "beta": 0.4}, {}, EXACT),
    ("hard_swish", 1 / 6, 0.5, "HardSwish", {}, {}, EXACT),
    ("mish", 0, 0, "Mish", {}, {}, TRANSCENDENTAL),
    ("none", 0, 0, "Identity", {}, {}, EXACT),
]


@pytest.mark.parametrize("name,a,b,op,attrs,consts,tol", UNARY_CASES,
                         ids=[c[0] for c in UNARY_CASES])
@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in_place"])
def test_unary(name, a, b, op, attrs, consts, tol, in_place):
    x = _uniform(_rng(), (2, 5, 7, 3), -8, 8)
    (y,) = run_node(lambda g, i, o: g.add("unary", i, o[0], op=name, a=a, b=b), [x], [x.shape],
                    in_place=in_place)
    assert_close(y, ort_node(op, [x], consts, **attrs), tol)


@pytest.mark.parametrize("name,a,b", [("silu", 0, 0), ("hard_swish", 0.2, 0.5)])
def test_gated_unary_is_x_times_its_gate(name, a, b):
    """SiLU, and HardSwish with HardSigmoid's alpha and beta, which ONNX has no node for."""
    x = _uniform(_rng(), (3, 50), -30, 30)
    (y,) = run_node(lambda g, i, o: g.add("unary", i, o[0], op=name, a=a, b=b), [x], [x.shape])
    gate = "Sigmoid" if name == "silu" else "HardSigmoid"
    assert_close(y, x * ort_node(gate, [x], **({"alpha": a, "beta": b} if a else {})),
                 TRANSCENDENTAL)


MATH_CASES = [  # name, exponent, ONNX op, constant inputs
    ("sqrt", 0, "Sqrt", {}), ("log", 0, "Log", {}), ("exp", 0, "Exp", {}), ("abs", 0, "Abs", {}),
    ("neg", 0, "Neg", {}), ("reciprocal", 0, "Reciprocal", {}), ("tanh", 0, "Tanh", {}),
    ("softplus", 0, "Softplus", {}), ("erf", 0, "Erf", {}),
    ("pow", 2, "Pow", {"e": np.float32(2)}), ("pow", 0.5, "Pow", {"e": np.float32(0.5)}),
    ("pow", 3, "Pow", {"e": np.float32(3)}),
]


@pytest.mark.parametrize("name,a,op,consts", MATH_CASES, ids=[f"{c[0]}{c[1] or ''}"
                                                              for c in MATH_CASES])
def test_unary_math(name, a, op, consts):
    """Over (0, 8]: where every one of them is defined."""
    x = _uniform(_rng(), (4, 33), 1e-3, 8)
    (y,) = run_node(lambda g, i, o: g.add("unary", i, o[0], op=name, a=a), [x], [x.shape])
    assert_close(y, ort_node(op, [x], consts), TRANSCENDENTAL)


REDUCTIONS = [  # input dims, adjacent axes
    ((2, 3, 4, 5), [3]), ((2, 3, 4, 5), [1, 2]), ((2, 3, 4, 5), [0]), ((6, 7), [0, 1]),
    ((1, 5, 5, 8), [1, 2]), ((3,), [0]),
    ((3, 37, 70), [1]),  # 3 blocks of rows (the last short); a 64-column tile and 6 columns
    ((2, 1000), [1]), ((4, 15), [1]),  # rows of 16 lanes and a tail of 8; a tail alone
    ((1, 300, 130), [1]),  # 19 blocks merged pairwise
]


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("dims,axes", REDUCTIONS, ids=[f"{d}-{a}" for d, a in REDUCTIONS])
def test_reduce(op, dims, axes):
    x = _uniform(_rng(2), dims)
    out = tuple(1 if i in axes else d for i, d in enumerate(dims))
    (y,) = run_node(lambda g, i, o: g.add("reduce", i, o[0], op=op, axes=axes), [x], [out])
    assert_close(y, getattr(np, op)(x, axis=tuple(axes), keepdims=True), EXACT)


def test_reduce_refuses_axes_that_are_not_adjacent():
    x = Tensor(0, (2, 3, 4))
    with Graph(64, (1,), 1) as g, pytest.raises(EngineError, match="axes must be adjacent"):
        g.add("reduce", [x], Tensor(30, (1, 3, 1)), op="sum", axes=[0, 2])


BROADCASTS = [
    ((2, 3, 4, 5), (2, 3, 4, 5)),
    ((2, 3, 4, 5), (1, 1, 1, 5)),  # per-channel
    ((1, 1, 1, 5), (2, 3, 4, 5)),
    ((1, 3, 1, 5), (2, 1, 4, 1)),
    ((6,), (1,)),
    ((2, 1, 3, 1, 2, 4), (1, 5, 3, 1, 1, 4)),
]


@pytest.mark.parametrize("name,op", [("add", "Add"), ("mul", "Mul"), ("sub", "Sub"),
                                     ("div", "Div"), ("prelu", "PRelu")])
@pytest.mark.parametrize("sa,sb", BROADCASTS, ids=[f"{a}x{b}" for a, b in BROADCASTS])
def test_binary(name, op, sa, sb):
    rng = _rng(1)
    a = _uniform(rng, sa)
    b = np.sign(_uniform(rng, sb)) * _uniform(rng, sb, 0.5, 1.5)
    out = np.broadcast_shapes(sa, sb)
    (y,) = run_node(lambda g, i, o: g.add("binary", i, o[0], op=name), [a, b], [out])
    assert_close(y, ort_node(op, [a, b]), EXACT)


def test_binary_in_place_over_a():
    a, b = _uniform(_rng(2), (3, 4, 8)), _uniform(_rng(3), (1, 1, 8))
    (y,) = run_node(lambda g, i, o: g.add("binary", i, o[0], op="mul"), [a, b], [a.shape],
                    in_place=True)
    assert_close(y, a * b, EXACT)


# ---- pooling -----------------------------------------------------------------------

POOLS = [  # op, kernel, strides, dilations, pads (t, l, b, r), ceil_mode, count_include_pad
    ("max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0, 0),  # ResNet stem
    ("max", (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), 1, 0),  # GoogLeNet / SqueezeNet ceil_mode
    ("max", (2, 3), (1, 2), (2, 1), (1, 0, 1, 2), 0, 0),
    ("max", (2, 2), (3, 3), (2, 2), (1, 1, 1, 1), 1, 0),
    ("average", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 0, 0),
    ("average", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 0, 1),
    ("average", (2, 2), (2, 2), (1, 1), (0, 0, 1, 1), 1, 0),
    ("average", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, 1),
    ("average", (2, 3), (2, 1), (2, 2), (1, 2, 0, 1), 0, 1),
    ("average", (7, 7), (1, 1), (1, 1), (0, 0, 0, 0), 0, 0),
]


# 85 channels: blocks of 4 vectors, single vectors and a last vector overlapping
# the one before (AVX-512 and AVX2); 5: single channels, fewer than a vector.
@pytest.mark.parametrize("channels", [85, 5])
@pytest.mark.parametrize("op,kernel,strides,dilations,pads,ceil_mode,include", POOLS)
def test_pool(op, kernel, strides, dilations, pads, ceil_mode, include, channels):
    x = _uniform(_rng(4), (2, 11, 13, channels))
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations,
             "pads": [pads[0], pads[1], pads[2], pads[3]], "ceil_mode": ceil_mode}
    if op == "average":
        attrs["count_include_pad"] = include
    ref = ort_node("MaxPool" if op == "max" else "AveragePool",
                   [np.ascontiguousarray(x.transpose(NCHW))], **attrs).transpose(NHWC)
    (y,) = run_node(lambda g, i, o: g.add("pool", i, o[0], op=op, kernel=kernel,
                                          strides=strides, dilations=dilations, pads=pads,
                                          count_include_pad=bool(include)), [x], [ref.shape])
    assert_close(y, ref, EXACT)


@pytest.mark.parametrize("shape", [(2, 7, 9, 70), (1, 45, 50, 24)])  # 1 and 3 pixel chunks
def test_global_average_pool(shape):
    x = _uniform(_rng(5), shape)
    ref = ort_node("GlobalAveragePool", [np.ascontiguousarray(x.transpose(NCHW))])
    (y,) = run_node(lambda g, i, o: g.add("global_average_pool", i, o[0]), [x],
                    [(shape[0], 1, 1, shape[3])])
    assert_close(y, ref.transpose(NHWC), EXACT)


LONG_SUMS = {  # NHWC input, then the node: 160 x 160 = 25,600 terms per output
    "reduce_mean_pixels": ((1, 160, 160, 8), "ReduceMean", [1, 2]),
    "reduce_sum_row": ((8, 1, 1, 25600), "ReduceSum", [3]),  # one contiguous row each
    "global_average_pool": ((1, 160, 160, 8), "GlobalAveragePool", None),
}


@pytest.mark.parametrize("case", list(LONG_SUMS))
def test_long_sums_are_summed_in_blocks_and_pairs(case):
    """Positive terms, so that a sum's error is at most k roundings of the
    exact sum: blocks of 16 in order and the blocks pairwise take k <= 16 +
    log2(n) (+1 for the mean's scale), where left to right takes up to n - 1
    (it was 7x further from exact than onnxruntime on a 160x160 ReduceMean).
    Against float64, ours within that bound and no further than onnxruntime's."""
    dims, op, axes = LONG_SUMS[case]
    x = _uniform(_rng(7), dims, 0, 1)
    reduced = (1, 2) if axes is None else tuple(axes)
    exact = x.astype(np.float64).sum(axis=reduced, keepdims=True)
    if op != "ReduceSum":
        exact /= np.prod([dims[a] for a in reduced])
    out = exact.shape
    if axes is None:
        (y,) = run_node(lambda g, i, o: g.add("global_average_pool", i, o[0]), [x], [out])
    else:
        (y,) = run_node(lambda g, i, o: g.add("reduce", i, o[0], op=op[6:].lower(), axes=axes),
                        [x], [out])
    nchw = {"axes": np.array([NCHW.index(a) for a in reduced], np.int64)} if axes else {}
    theirs = ort_node(op, [np.ascontiguousarray(x.transpose(NCHW))], nchw).transpose(NHWC)

    def error(got):
        return float(np.max(np.abs(got - exact) / exact))
    n = np.prod([dims[a] for a in reduced])
    assert error(y) <= (16 + np.log2(n) + 1) * 2.0 ** -24, error(y)
    assert error(y) <= error(theirs), (error(y), error(theirs))


# ---- data movement -------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1])
def test_concat(axis):
    rng = _rng(6)
    shapes = [[2, 3, 4, 5] for _ in range(3)]
    for i, s in enumerate(shapes):
        s[axis] = i + 1
    xs = [_uniform(rng, s) for s in shapes]
    ref = np.concatenate(xs, axis)
    (y,) = run_node(lambda g, i, o: g.add("concat", i, o[0], axis=axis), xs, [ref.shape])
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("perm", [NCHW, NHWC, (1, 0), (2, 0, 1), (3, 2, 1, 0),
                                  (0, 1, 2, 3), (5, 1, 3, 0, 4, 2)])
def test_transpose(perm):
    x = _uniform(_rng(7), (2, 3, 4, 5, 2, 3)[:len(perm)])
    (y,) = run_node(lambda g, i, o: g.add("transpose", i, o[0], perm=perm), [x],
                    [x.transpose(perm).shape])
    np.testing.assert_array_equal(y, x.transpose(perm))


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("shape,perm", [
    ((1, 3, 37, 41), NHWC),    # an image: rows of 3 channels, interleaved whole
    ((1, 4, 37, 41), NHWC),    # rows of 4 channels: many blocks of rows
    ((2, 5, 9, 7), NHWC),      # batched: the general walk
    ((70, 17), (1, 0)),        # rows longer than the short-row path takes
    ((4, 6, 8), (0, 1, 2)),    # identity: a plain copy
])
def test_write_transposed(shape, perm, split):
    """An array outside the arena written into it transposed, on any split."""
    x = _uniform(_rng(8), shape)
    out = Tensor(5, x.transpose(perm).shape)
    with Graph(out.end + 5, *split) as g:
        g.arena[:] = np.nan
        g.write_transposed(x, perm, out)
        np.testing.assert_array_equal(g.view(out), x.transpose(perm))
        assert np.isnan(g.arena[:5]).all() and np.isnan(g.arena[out.end:]).all()


NCHW = (0, 3, 1, 2)


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("shape,perm", [
    ((1, 3, 37, 41), NHWC),    # an image: pixels in blocks of 64, and a tail
    ((1, 1, 9, 7), NHWC),      # one channel: the same bytes in order
    ((1, 4, 9, 7), NHWC),      # four channels, interleaved like the image's three
    ((1, 8, 70, 2), NHWC),     # more: a channel at a time, over a block boundary
    ((2, 5, 9, 7), NHWC),      # batched: the general walk
    ((4, 6, 8), (2, 0, 1)),    # a 3-D transpose
    ((4, 6, 8), (0, 1, 2)),    # in order: the flat path
])
def test_quantize_through_a_transpose(shape, perm, split):
    """quantize with a perm: numpy's transpose, then QuantizeLinear's
    division, rounding half to even and saturation, on any split."""
    x = _uniform(_rng(9), shape, -3.0, 3.0)
    scale, zp = np.float32(0.02), 128
    x.flat[:4] = np.array([0.5, 1.5, -0.5, 2.5], np.float32) * scale  # ties, or near them
    want = np.clip(np.rint(x.transpose(perm) / scale) + zp, 0, 255).astype(np.uint8)
    src, out = Tensor(3, x.shape), Tensor(3 + x.size + 2, want.shape)
    with Graph(out.end + 5, *split) as g:
        g.arena[:] = np.nan
        g.view(src)[...] = x
        g.add("quantize", [src], out, scale=float(scale), zero_point=zp, perm=list(perm))
        g.run()
        got = g.arena.view(np.uint8)[4 * out.offset:4 * out.offset + want.size].copy()
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("shape,perm", [
    ((1, 37, 41, 21), NCHW),   # a segmentation map's classes: blocks of columns
    ((1, 5, 7, 300), NCHW),    # long input rows: the smallest column blocks
    ((1, 37, 41, 3), NCHW),
    ((2, 5, 9, 7), (3, 1, 0, 2)),  # the general walk
    ((4, 6, 8), (0, 1, 2)),
    ((1, 21, 64, 64), (0, 1, 2, 3)),  # a large output kept in its layout: a split copy
])
@pytest.mark.parametrize("weights,workloads", [((1,), 1), ((1, 1), 8)])
def test_read_transposed(shape, perm, weights, workloads):
    """An arena tensor read out into a new array transposed, the arena
    untouched; on two cores, a large one is split between them, and the
    caller's thread keeps its own CPUs (threads it starts later inherit them)."""
    if len(weights) > native.cpu_count():
        pytest.skip("needs two CPUs")
    x = _uniform(_rng(10), shape)
    t = Tensor(5, shape)
    own = os.sched_getaffinity(0)
    with Graph(t.end + 5, weights, workloads) as g:
        g.view(t)[...] = x
        before = g.arena.copy()
        y = g.read_transposed(t, perm)
        assert os.sched_getaffinity(0) == own
        np.testing.assert_array_equal(y, x.transpose(perm))
        np.testing.assert_array_equal(g.arena, before)


def test_transpose_node_over_column_blocks():
    """NHWC -> NCHW inside a program, split over the cores by columns."""
    x = _uniform(_rng(11), (1, 29, 31, 21))
    (y,) = run_node(lambda g, i, o: g.add("transpose", i, o[0], perm=NCHW), [x],
                    [x.transpose(NCHW).shape])
    np.testing.assert_array_equal(y, x.transpose(NCHW))


def test_write_transposed_checks_the_shape():
    with Graph(64, (1,), 1) as g, pytest.raises(ValueError, match=r"shape \(2, 3\).*\(3, 3\)"):
        g.write_transposed(np.zeros((2, 3), np.float32), (1, 0), Tensor(0, (3, 3)))


def test_image_transpose_node_over_blocks():
    """NCHW -> NHWC of a 3-channel image inside a program (the short-row path)."""
    x = _uniform(_rng(9), (1, 3, 40, 50))
    for split in SPLITS:
        (y,) = run_node(lambda g, i, o: g.add("transpose", i, o[0], perm=NHWC), [x],
                        [x.transpose(NHWC).shape], split)
        np.testing.assert_array_equal(y, x.transpose(NHWC))


SLICES = [  # input dims, then (start, step, size) per axis
    ((2, 5, 6, 12), [(0, 1, 2), (0, 1, 5), (0, 1, 6), (4, 1, 5)]),   # channels 4..8 of NHWC
    ((2, 5, 6, 12), [(1, 1, 1), (1, 2, 2), (5, -1, 6), (11, -3, 4)]),  # steps, backwards
    ((1, 9, 7, 3), [(0, 1, 1), (2, 1, 4), (0, 1, 7), (0, 1, 3)]),     # whole rows
    ((40,), [(39, -1, 40)]),
    ((3, 2, 4, 2, 5, 3), [(2, -1, 2), (1, 1, 1), (0, 3, 2), (0, 1, 2), (1, 2, 2), (2, -2, 2)]),
]


@pytest.mark.parametrize("dims,spans", SLICES, ids=[str(s[0]) for s in SLICES])
def test_slice(dims, spans):
    x = _uniform(_rng(19), dims)
    ref = x[np.ix_(*[start + step * np.arange(size) for start, step, size in spans])]
    for split in SPLITS:
        (y,) = run_node(lambda g, i, o: g.add("slice", i, o[0], starts=[s for s, _, _ in spans],
                                             steps=[st for _, st, _ in spans]),
                        [x], [ref.shape], split)
        np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_split_is_a_slice_per_output(axis):
    """np.split along any axis of an NHWC tensor, one slice node per part, in one program."""
    x = _uniform(_rng(20), (5, 7, 8, 9))
    sizes = [1, x.shape[axis] - 3, 2]
    parts = np.split(x, np.cumsum(sizes)[:-1], axis)
    xt = Tensor(0, x.shape)
    outs, offset = [], x.size + 7
    for p in parts:
        outs.append(Tensor(offset, p.shape))
        offset += p.size + 1
    with Graph(offset, (1,), 2) as g:
        g.arena[:] = np.nan
        g.view(xt)[...] = x
        start = 0
        for t, size in zip(outs, sizes):
            g.add("slice", [xt], t, starts=[start if d == axis else 0 for d in range(4)],
                  steps=[1] * 4)
            start += size
        g.run()
        for t, p in zip(outs, parts):
            np.testing.assert_array_equal(g.view(t), p)


def shuffle_index(channels: int, groups: int) -> np.ndarray:
    """ShuffleNet's channel shuffle: output channel i * groups + j is input
    channel j * channels / groups + i."""
    return np.arange(channels).reshape(groups, channels // groups).T.reshape(-1)


@pytest.mark.parametrize("groups,channels", [(2, 24), (3, 240), (4, 8), (8, 64), (5, 10), (1, 5)])
def test_gather_of_channels_shuffles_like_the_onnx_pattern(groups, channels):
    x = _uniform(_rng(21), (2, 5, 7, channels))
    nchw = np.ascontiguousarray(x.transpose(NCHW))
    n, c, h, w = nchw.shape
    ref = nchw.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)
    index = shuffle_index(channels, groups)
    for split in SPLITS:
        (y,) = run_node(lambda g, i, o: g.add("gather", i, o[0], axis=3, indices=index.tolist()),
                        [x], [x.shape], split)
        np.testing.assert_array_equal(y, ref.transpose(NHWC))


@pytest.mark.parametrize("axis", [2, -1])
def test_gather_of_channels_may_repeat_and_drop_channels(axis):
    x = _uniform(_rng(22), (3, 4, 10))
    index = [9, 0, 0, 3, -1, 1, 2]
    (y,) = run_node(lambda g, i, o: g.add("gather", i, o[0], axis=axis, indices=index), [x],
                    [(3, 4, len(index))])
    np.testing.assert_array_equal(y, x[..., index])


PADS = [  # mode, pads (begins, then ends) of an NHWC tensor
    ("constant", (0, 1, 2, 0, 0, 2, 1, 0)),
    ("constant", (1, -1, 0, 2, 0, 1, -2, 1)),  # negative pads crop
    ("edge", (0, 2, 1, 0, 0, 1, 3, 0)),
    ("reflect", (0, 2, 1, 0, 0, 3, 2, 0)),
    ("reflect", (0, 0, 0, 1, 1, 0, 0, 2)),
]


@pytest.mark.parametrize("mode,pads", PADS)
def test_pad(mode, pads):
    x = _uniform(_rng(8), (2, 5, 6, 3))
    ref = ort_node("Pad", [x], {"pads": np.array(pads, np.int64),
                                "value": np.float32(0.75)}, mode=mode)
    (y,) = run_node(lambda g, i, o: g.add("pad", i, o[0], mode=mode, pads=pads,
                                         value=0.75), [x], [ref.shape])
    np.testing.assert_array_equal(y, ref)


def test_reflect_pad_wider_than_the_axis_bounces_like_numpy():
    x = _uniform(_rng(9), (3, 4))
    ref = np.pad(x, ((5, 7), (6, 2)), mode="reflect")
    (y,) = run_node(lambda g, i, o: g.add("pad", i, o[0], mode="reflect",
                                         pads=(5, 6, 7, 2)), [x],
                    [ref.shape])
    np.testing.assert_array_equal(y, ref)


# ---- resize ----------------------------------------------------------------------------

COORDINATE_MODES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
RESIZES = {  # name: (h, w, c), ("scales" or "sizes", height, width)
    "up_2x": ((5, 7, 3), ("scales", 2.0, 2.0)),
    "down": ((9, 12, 4), ("scales", 0.5, 0.75)),
    "fractional": ((6, 5, 3), ("scales", 1.7, 2.3)),  # to 10x11
    "sizes": ((5, 7, 2), ("sizes", 13, 4)),  # up one axis, down the other
    "one_pixel": ((1, 1, 8), ("sizes", 4, 3)),  # the pooled branch of an ASPP / PSP head
    "nchw_view": ((9, 6, 1), ("scales", 1.5, 3.0)),  # [N*C, H, W, 1]: an NCHW map
}


def _resize_case(name: str):
    """The case's NHWC input, its float32 (height, width) scales as onnxruntime
    derives them, the output dims, and the ONNX scales / sizes inputs."""
    (h, w, c), (given, sh, sw) = RESIZES[name]
    x = _uniform(_rng(20), (2, h, w, c))
    roi = np.zeros(0, np.float32)
    if given == "sizes":
        oh, ow = sh, sw
        scales = (np.float32(oh) / np.float32(h), np.float32(ow) / np.float32(w))
        consts = {"roi": roi, "scales": roi, "sizes": np.array([2, c, oh, ow], np.int64)}
    else:
        scales = (np.float32(sh), np.float32(sw))
        oh, ow = int(scales[0] * np.float32(h)), int(scales[1] * np.float32(w))
        consts = {"roi": roi, "scales": np.array([1, 1, sh, sw], np.float32)}
    return x, scales, (2, oh, ow, c), consts


def _resize_axis(mode, coordinates, rounding, scale, n_in, n_out):
    """Per output index of one axis: the two input indices and their weights
    (nearest: the same index twice, weights 1 and 0), as the ONNX spec
    computes them in float32, with onnxruntime's conventions: an axis of scale
    1 maps onto itself, and a nearest coordinate within 1e-6 of a half rounds
    as the half."""
    f = np.float32
    i0, i1, w0, w1 = [], [], [], []
    for o in range(n_out):
        if scale == 1:
            v = f(o)
        elif coordinates == "align_corners":
            v = f(0) if n_out == 1 else f(o) * f(n_in - 1) / f(n_out - 1)
        elif coordinates == "asymmetric":
            v = f(o) / scale
        elif coordinates == "tf_half_pixel_for_nn":
            v = (f(o) + f(0.5)) / scale
        elif coordinates == "pytorch_half_pixel" and n_out == 1:
            v = f(0)
        else:  # half_pixel, pytorch_half_pixel
            v = (f(o) + f(0.5)) / scale - f(0.5)
        if mode == "nearest":
            half = abs(float(v) - np.floor(v) - 0.5) <= 1e-6
            k = {"floor": np.floor(v), "ceil": np.ceil(v),
                 "simple": np.ceil(v) if scale < 1 else np.trunc(v),
                 "round_prefer_floor": np.floor(v) if half else np.floor(v + 0.5),
                 "round_prefer_ceil": np.ceil(v) if half else np.floor(v + 0.5)}[rounding]
            k = min(max(int(k), 0), n_in - 1)
            i0.append(k), i1.append(k), w0.append(1.0), w1.append(0.0)
            continue
        v = min(max(v, f(0)), f(n_in - 1))
        a = min(int(v), n_in - 1)
        b = min(a + 1, n_in - 1)
        i0.append(a), i1.append(b)
        w0.append(0.5 if a == b else float(b - v)), w1.append(0.5 if a == b else float(v - a))
    return np.array(i0), np.array(i1), np.array(w0), np.array(w1)


def resize_reference(x, mode, coordinates, rounding, scales, out):
    """ONNX Resize of an NHWC array's axes 1 and 2, in float64."""
    _, h, w, _ = x.shape
    same = out[1:3] == (h, w)  # onnxruntime copies an output of the input's size
    ys = _resize_axis(mode, coordinates, rounding, 1 if same else scales[0], h, out[1])
    xs = _resize_axis(mode, coordinates, rounding, 1 if same else scales[1], w, out[2])
    x = x.astype(np.float64)
    y = np.zeros(out)
    for rows, wy in ((ys[0], ys[2]), (ys[1], ys[3])):
        for cols, wx in ((xs[0], xs[2]), (xs[1], xs[3])):
            y += wy[None, :, None, None] * wx[None, None, :, None] * x[:, rows][:, :, cols]
    return y


def _add_resize(mode, coordinates, rounding, scales):
    return lambda g, i, o: g.add("resize", i, o[0], mode=mode, coordinate_mode=coordinates,
                                 nearest_mode=rounding, scales=scales)


@pytest.mark.parametrize("case", list(RESIZES))
@pytest.mark.parametrize("coordinates", COORDINATE_MODES)
@pytest.mark.parametrize("mode,rounding", [("nearest", r) for r in NEAREST_MODES] +
                         [("linear", "round_prefer_floor")])
def test_resize(case, coordinates, mode, rounding):
    """Against the spec in numpy and against onnxruntime's Resize (opset 19)."""
    x, scales, out, consts = _resize_case(case)
    ref = ort_node("Resize", [np.ascontiguousarray(x.transpose(NCHW))], consts, mode=mode,
                   coordinate_transformation_mode=coordinates,
                   nearest_mode=rounding).transpose(NHWC)
    assert ref.shape == out
    (y,) = run_node(_add_resize(mode, coordinates, rounding, scales), [x], [out])
    spec = resize_reference(x, mode, coordinates, rounding, scales, out)
    if mode == "nearest":  # copies: exact
        np.testing.assert_array_equal(y, spec)
        np.testing.assert_array_equal(y, ref)
    else:
        assert_close(y, spec, EXACT)
        assert_close(y, ref, EXACT)


@pytest.mark.parametrize("scales", [(2.0, 3.0), (0.5, 0.4), (2.5, 0.75)])
def test_resize_simple_rounding(scales):
    """Resize-10 and Upsample: asymmetric, truncating up and taking the
    ceiling down (the whole-model tests check it against onnxruntime)."""
    x = _uniform(_rng(21), (1, 10, 10, 5))
    scales = tuple(np.float32(s) for s in scales)
    out = (1, int(scales[0] * np.float32(10)), int(scales[1] * np.float32(10)), 5)
    (y,) = run_node(_add_resize("nearest", "asymmetric", "simple", scales), [x], [out])
    np.testing.assert_array_equal(y, resize_reference(x, "nearest", "asymmetric", "simple",
                                                      scales, out))


def test_resize_to_the_same_size_copies_whatever_the_scales():
    """As onnxruntime: an output of the input's size is the input."""
    x = _uniform(_rng(22), (1, 6, 7, 3))
    for mode in ("nearest", "linear"):
        (y,) = run_node(_add_resize(mode, "tf_half_pixel_for_nn", "round_prefer_ceil",
                                    (1.05, 1.1)), [x], [x.shape])
        np.testing.assert_array_equal(y, x)


# ---- softmax / LRN / matmul / conv --------------------------------------------------------

@pytest.mark.parametrize("shape,scale", [((4, 10), 1.0), ((2, 3, 1000), 50.0), ((7,), 300.0)])
def test_softmax(shape, scale):
    x = _uniform(_rng(10), shape) * np.float32(scale)
    (y,) = run_node(lambda g, i, o: g.add("softmax", i, o[0]), [x], [x.shape])
    assert_close(y, ort_node("Softmax", [x], axis=-1), TRANSCENDENTAL)


def lrn_spec(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """ONNX's LRN formula over the innermost axis, in float64."""
    c = x.shape[-1]
    sq = np.zeros(x.shape)
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c - 1, ch + size // 2)
        sq[..., ch] = np.sum(x[..., lo:hi + 1].astype(np.float64) ** 2, axis=-1)
    return x / (bias + alpha / size * sq) ** beta


@pytest.mark.parametrize("size,alpha,beta,bias", [(5, 1e-4, 0.75, 1.0), (4, 0.5, 0.6, 2.0),
                                                  (3, 2.0, 1.0, 1.5), (1, 0.3, 0.5, 1.0)])
def test_lrn(size, alpha, beta, bias):
    x = _uniform(_rng(11), (2, 5, 6, 17), -3, 3)
    if size % 2:
        ref = ort_node("LRN", [np.ascontiguousarray(x.transpose(NCHW))], size=size, alpha=alpha,
                       beta=beta, bias=bias).transpose(NHWC)
    else:  # onnxruntime takes odd sizes only (and onnx.reference sums over the wrong axis)
        ref = lrn_spec(x, size, alpha, beta, bias)
    (y,) = run_node(lambda g, i, o: g.add("lrn", i, o[0], size=size, alpha=alpha,
                                         beta=beta, bias=bias), [x],
                    [x.shape])
    assert_close(y, ref, TRANSCENDENTAL)


def _kn(uk: native.UkernelInfo) -> tuple[int, int]:
    """A K and N the micro-kernel accepts."""
    k = min(uk.kmax, 37) if uk.kmax else 150
    return max(k, uk.kmin + 1), uk.n_multiple * max(1, 40 // uk.n_multiple)


@pytest.mark.parametrize("uk", native.ukernels(), ids=lambda u: u.name)
@pytest.mark.parametrize("lead", [(1,), (37,), (3, 5)])
@pytest.mark.parametrize("stored", ["KxN", "NxK"])
def test_matmul(uk, lead, stored):
    rng = _rng(12)
    k, n = _kn(uk)
    x, b, bias = _uniform(rng, (*lead, k)), _uniform(rng, (k, n)), _uniform(rng, (n,))
    ref = (x.astype(np.float64) @ b + bias) if len(lead) > 1 else ort_node(
        "Gemm", [x.reshape(-1, k)], {"B": b, "C": bias}).reshape(*lead, n)
    # NxK: B handed over as the transpose of a contiguous N x K array (Gemm's
    # transB), which the engine packs without a copy.
    given = b if stored == "KxN" else np.ascontiguousarray(b.T).T
    (y,) = run_node(lambda g, i, o: g.add("matmul", i, o[0],
                                         **matmul_attrs(uk.name, given, bias)), [x],
                    [(*lead, n)])
    assert_close(y, ref, TRANSCENDENTAL)


def _held(x: np.ndarray, perm) -> np.ndarray:
    """x as a tensor held in layout perm stores it: transposed, contiguous."""
    return np.ascontiguousarray(x.transpose(perm))


def batch_matmul_ukernel(k: int, n: int) -> str:
    """The first micro-kernel that accepts K and N."""
    return next(u.name for u in native.ukernels()
                if u.kmin < k and (not u.kmax or k <= u.kmax) and n % u.n_multiple == 0)


BATCH_MATMULS = [  # a, b (numpy matmul shapes of equal rank), perms of a, b, out (None: in order)
    ((8, 40, 15), (8, 15, 40), None, None, None),          # attention scores, per head
    ((1, 8, 40, 40), (1, 8, 40, 15), None, None, None),    # scores x values
    ((2, 1, 5, 9), (1, 3, 9, 7), None, None, None),        # both batches broadcast
    ((3, 37, 20), (1, 20, 33), None, None, None),          # one B for every batch
    ((1, 8, 40, 15), (1, 8, 15, 40), (0, 2, 1, 3), (0, 2, 3, 1), None),  # q and k^T from [B,T,H,D]
    ((2, 3, 6, 10), (2, 3, 10, 5), (1, 0, 2, 3), (3, 1, 2, 0), (0, 2, 1, 3)),
    ((70, 12), (12, 50), None, (1, 0), None),              # rank 2, B held transposed
]


@pytest.mark.parametrize("sa,sb,pa,pb,pout", BATCH_MATMULS,
                         ids=[f"{a}x{b}" for a, b, *_ in BATCH_MATMULS])
def test_batch_matmul(sa, sb, pa, pb, pout):
    rng = _rng(21)
    a, b = _uniform(rng, sa), _uniform(rng, sb)
    ref = a.astype(np.float64) @ b
    ident = tuple(range(ref.ndim))
    pa, pb, pout = pa or ident, pb or ident, pout or ident
    uk = batch_matmul_ukernel(sa[-1], sb[-1])
    (y,) = run_node(lambda g, i, o: g.add("batch_matmul", i, o[0], ukernel=uk, a_perm=pa,
                                         b_perm=pb, out_perm=pout),
                    [_held(a, pa), _held(b, pb)], [ref.transpose(pout).shape])
    assert_close(y, ref.transpose(pout), TRANSCENDENTAL)


@pytest.mark.parametrize("uk", native.ukernels(), ids=lambda u: u.name)
def test_batch_matmul_every_ukernel(uk):
    """Interleaved kernels pack A into the workspace too; small-K ones bound K."""
    k, n = _kn(uk)
    a, b = _uniform(_rng(22), (3, 11, k)), _uniform(_rng(23), (3, k, n))
    (y,) = run_node(lambda g, i, o: g.add("batch_matmul", i, o[0], ukernel=uk.name), [a, b],
                    [(3, 11, n)])
    assert_close(y, a.astype(np.float64) @ b, TRANSCENDENTAL)


GATHERS = [  # shape, axis, indices
    ((2, 5, 6, 3), 1, [4, 0, -1, 2, 2]),
    ((3, 1, 8, 40, 15), 0, [1]),
    ((7, 9), -1, [-9, 8]),
    ((4,), 0, [3, -4, 0]),
]


@pytest.mark.parametrize("shape,axis,indices", GATHERS, ids=[str(g[0]) for g in GATHERS])
def test_gather(shape, axis, indices):
    x = _uniform(_rng(24), shape)
    ref = ort_node("Gather", [x], {"i": np.array(indices, np.int64)}, axis=axis)
    (y,) = run_node(lambda g, i, o: g.add("gather", i, o[0], axis=axis, indices=indices), [x],
                    [ref.shape])
    np.testing.assert_array_equal(y, ref)


CONVS = [
    ConvShape(1, 9, 9, 8, 16, 3, 3, pad_top=1, pad_left=1, pad_bottom=1, pad_right=1,
              act="relu", has_residual=True),
    ConvShape(2, 8, 7, 12, 12, 3, 3, stride_h=2, stride_w=2, pad_top=1, pad_left=1, group=12,
              act="clip", act_min=-0.5, act_max=0.5),
    ConvShape(1, 6, 6, 16, 24, 1, 1),
    ConvShape(1, 5, 6, 8, 12, 4, 4, stride_h=2, stride_w=2, pad_top=1, pad_left=1, pad_bottom=1,
              pad_right=1, act="relu", has_residual=True, transposed=True, out_pad_w=1),
]


@pytest.mark.parametrize("shape", CONVS,
                         ids=["3x3_residual", "depthwise_s2", "1x1", "transposed"])
def test_conv(shape):
    rng = _rng(13)
    x, w = _uniform(rng, shape.input_shape), _uniform(rng, shape.weight_shape)
    bias = _uniform(rng, (shape.oc,))
    inputs = [x] + ([_uniform(rng, shape.output_shape)] if shape.has_residual else [])
    ref = ort_conv(shape, x, w, bias, inputs[1] if shape.has_residual else None)
    algorithms = [(a, uk.name if native.uses_ukernel(a) else None) for a in native.algorithms()
                  for uk in native.ukernels()]
    tried = 0
    for algorithm, ukernel in dict.fromkeys(algorithms):
        if native.check(shape, algorithm, ukernel) is not None:
            continue
        config = ExecConfig(algorithm, ukernel, (1,), 4)
        (y,) = run_node(lambda g, i, o: g.add("conv", i, o[0],
                                              **conv_attrs(shape, config, w, bias)),
                        inputs, [shape.output_shape])
        assert rel_err(y, ref) <= TRANSCENDENTAL, (algorithm, ukernel, rel_err(y, ref))
        tried += 1
    assert tried >= 2


NCHW_CONVS = [  # RGB (its own code path) and any other count, borders and a residual
    ConvShape(2, 17, 19, 3, 40, 3, 3, stride_h=2, stride_w=2, pad_top=1, pad_left=1,
              pad_bottom=1, pad_right=1, act="relu"),
    ConvShape(1, 9, 11, 5, 16, 5, 3, pad_top=2, pad_left=1, pad_bottom=2, pad_right=1,
              act="sigmoid", has_residual=True),
]


@pytest.mark.parametrize("shape", NCHW_CONVS, ids=["rgb_s2", "c5_residual"])
@pytest.mark.parametrize("split", SPLITS[:2], ids=["one_core", "two_cores"])
def test_direct_conv_reads_an_nchw_input(shape, split):
    """x_nchw: the same bits as from the NHWC input (each pixel sums its taps
    in the same order), within a rounding of onnxruntime."""
    if split[0] == (1, 1) and native.cpu_count() < 2:
        pytest.skip("needs two CPUs")
    rng = _rng(21)
    x, w = _uniform(rng, shape.input_shape), _uniform(rng, shape.weight_shape)
    bias = _uniform(rng, (shape.oc,))
    residual = [_uniform(rng, shape.output_shape)] if shape.has_residual else []
    config = ExecConfig("direct_nhwc", None, split[0], split[1])
    outs = [run_node(lambda g, i, o: g.add("conv", i, o[0], **conv_attrs(shape, config, w, bias),
                                           x_nchw=nchw),
                     [x.transpose(NCHW) if nchw else x, *residual], [shape.output_shape],
                     split)[0] for nchw in (False, True)]
    assert np.array_equal(outs[0], outs[1])
    assert rel_err(outs[1], ort_conv(shape, x, w, bias, *residual)) <= TRANSCENDENTAL


# ---- splits, programs, errors ----------------------------------------------------------

def _big_cases():
    rng = _rng(14)
    x, b = _uniform(rng, (2, 40, 40, 32)), _uniform(rng, (32, 16))
    return {
        "unary": ([x], [x.shape], lambda g, i, o: g.add("unary", i, o[0], op="sigmoid")),
        "binary": ([x, _uniform(rng, (1, 1, 1, 32))], [x.shape],
                   lambda g, i, o: g.add("binary", i, o[0], op="add")),
        "pool": ([x], [(2, 20, 20, 32)],
                 lambda g, i, o: g.add("pool", i, o[0], op="average", kernel=(3, 3),
                                       strides=(2, 2), dilations=(1, 1), pads=(1, 1, 1, 1))),
        "gap": ([x], [(2, 1, 1, 32)], lambda g, i, o: g.add("global_average_pool", i, o[0])),
        "reduce_pixels": ([x.reshape(2, 20, 80, 32)], [(2, 1, 1, 32)],
                          lambda g, i, o: g.add("reduce", i, o[0], op="mean", axes=[1, 2])),
        "reduce_tiles": ([x.reshape(2, 160, 320)], [(2, 1, 320)],  # 5 tiles of columns each
                         lambda g, i, o: g.add("reduce", i, o[0], op="sum", axes=[1])),
        "reduce_rows": ([x.reshape(400, 256)], [(400, 1)],
                        lambda g, i, o: g.add("reduce", i, o[0], op="max", axes=[1])),
        "concat": ([x, x[..., :8].copy()], [(2, 40, 40, 40)],
                   lambda g, i, o: g.add("concat", i, o[0], axis=3)),
        "transpose": ([x], [(2, 32, 40, 40)],
                      lambda g, i, o: g.add("transpose", i, o[0], perm=NCHW)),
        "slice": ([x], [(2, 20, 39, 11)],
                  lambda g, i, o: g.add("slice", i, o[0], starts=(0, 39, 1, 3),
                                        steps=(1, -2, 1, 2))),
        "channel_shuffle": ([x], [x.shape],
                            lambda g, i, o: g.add("gather", i, o[0], axis=3,
                                                  indices=shuffle_index(32, 4).tolist())),
        "pad": ([x], [(2, 43, 42, 32)],
                lambda g, i, o: g.add("pad", i, o[0], mode="reflect",
                                      pads=(0, 1, 1, 0, 0, 2, 1, 0))),
        "softmax": ([x], [x.shape], lambda g, i, o: g.add("softmax", i, o[0])),
        "resize_nearest": ([x], [(2, 80, 80, 32)],
                           _add_resize("nearest", "asymmetric", "floor", (2.0, 2.0))),
        "resize_linear": ([x], [(2, 60, 90, 32)],
                          _add_resize("linear", "half_pixel", "round_prefer_floor", (1.5, 2.25))),
        "lrn": ([x], [x.shape], lambda g, i, o: g.add("lrn", i, o[0], size=5, alpha=1e-4,
                                                            beta=0.75, bias=1.0)),
        "matmul": ([x], [(2, 40, 40, 16)],
                   lambda g, i, o: g.add("matmul", i, o[0],
                                         **matmul_attrs(_hybrid().name, b, None))),
        "batch_matmul": ([x, _uniform(rng, (2, 1, 32, 40))], [(2, 40, 40, 40)],
                         lambda g, i, o: g.add("batch_matmul", i, o[0],
                                               ukernel=batch_matmul_ukernel(32, 40))),
        # A B per batch: whole batches a core where they split evenly over
        # the cores taking a share (one core, (0, 1)), tiles otherwise.
        "batch_matmul_per_head": ([_uniform(rng, (3, 40, 32)), _uniform(rng, (3, 32, 40))],
                                  [(3, 40, 40)],
                                  lambda g, i, o: g.add("batch_matmul", i, o[0],
                                                        ukernel=batch_matmul_ukernel(32, 40))),
        "gather": ([x], [(2, 40, 12, 32)],
                   lambda g, i, o: g.add("gather", i, o[0], axis=2, indices=(5, -1, 0) * 4)),
    }


def _hybrid() -> native.UkernelInfo:
    return next(u for u in native.ukernels() if u.style == "hybrid")


@pytest.mark.skipif(native.cpu_count() < 2, reason="needs two CPUs")
@pytest.mark.parametrize("name", list(_big_cases()))
def test_core_splits_give_identical_output(name):
    inputs, outs, add = _big_cases()[name]
    results = [run_node(add, inputs, outs, split)[0] for split in SPLITS]
    for other in results[1:]:
        assert np.array_equal(results[0], other, equal_nan=True)
    assert not np.isnan(results[0]).any()


def _conv_cases():
    """A 3x3 convolution through every algorithm and micro-kernel that takes
    it, but the reference (the oracle, on one thread)."""
    shape = ConvShape(1, 24, 24, 16, 32, 3, 3, pad_top=1, pad_left=1, pad_bottom=1,
                      pad_right=1, act="relu")
    rng = _rng(15)
    x, w, bias = (_uniform(rng, shape.input_shape), _uniform(rng, shape.weight_shape),
                  _uniform(rng, (shape.oc,)))
    cases = {}
    for a in (a for a in native.algorithms() if a != "reference"):
        for uk in native.ukernels() if native.uses_ukernel(a) else [None]:
            name = uk.name if uk else None
            if native.check(shape, a, name) is None:
                config = ExecConfig(a, name, (1, 1), 16)
                cases[f"conv_{a}_{name}"] = (
                    [x], [shape.output_shape],
                    lambda g, i, o, c=config: g.add("conv", i, o[0],
                                                    **conv_attrs(shape, c, w, bias)))
    return cases


@pytest.mark.skipif(native.cpu_count() < 2, reason="needs two CPUs")
@pytest.mark.parametrize("name", [*_big_cases(), *_conv_cases()])
def test_adaptive_balance_gives_identical_output_when_a_core_is_held_back(name):
    """CPU 1's worker sleeps before each of its jobs (a core another thread
    holds): in the adaptive balance the caller takes over its units, and the
    output is bit for bit the strict one."""
    inputs, outs, add = {**_big_cases(), **_conv_cases()}[name]
    strict = run_node(add, inputs, outs, ((1, 1), 16))[0]
    lib = native.library()
    before = lib.acl_pool_units_taken_over()
    lib.acl_pool_test_stall(1, 3.0)
    try:
        adaptive = run_node(add, inputs, outs, ((1, 1), 16), balance="adaptive")[0]
    finally:
        lib.acl_pool_test_stall(-1, 0.0)
    assert np.array_equal(strict, adaptive, equal_nan=True)
    assert not np.isnan(strict).any()
    assert lib.acl_pool_units_taken_over() > before


@pytest.mark.skipif(native.cpu_count() < 2, reason="needs two CPUs")
@pytest.mark.parametrize("balance", ["strict", "adaptive"])
def test_an_output_copied_out_follows_the_programs_balance(balance):
    """An export, a model's output transposed out after the run, runs in the
    program's balance: with CPU 1's worker held back, the adaptive program's
    caller takes over its units (a worker descheduled in its half held the
    copy for a whole time slice), the strict one's does not; the same bytes."""
    x = _uniform(_rng(17), (1, 64, 64, 32))
    xt, y = Tensor(0, x.shape), Tensor(x.size, x.shape)
    lib = native.library()
    with Graph(2 * x.size, (1, 1), 16) as g:
        g.view(xt)[...] = x
        g.add("unary", [xt], y, op="relu")
        g.set_balance(balance)
        g.run()
        before = lib.acl_pool_units_taken_over()
        lib.acl_pool_test_stall(1, 3.0)
        try:
            out = g.read_transposed(y, NCHW)
        finally:
            lib.acl_pool_test_stall(-1, 0.0)
        taken = lib.acl_pool_units_taken_over() - before
    np.testing.assert_array_equal(out, np.maximum(x, 0).transpose(NCHW))
    assert (taken > 0) == (balance == "adaptive"), taken


def test_program_of_several_nodes_runs_in_order():
    x = _uniform(_rng(16), (1, 4, 4, 8))
    xt, r, s, y = (Tensor(0, x.shape), Tensor(200, x.shape), Tensor(400, x.shape),
                   Tensor(600, (1, 8, 4, 4)))
    with Graph(800, (1,), 2) as g:
        g.view(xt)[...] = x
        g.add("unary", [xt], r, op="relu")
        g.add("binary", [r, xt], s, op="add")
        g.add("transpose", [s], y, perm=NCHW)
        times = g.run().node_ms
        assert g.node_count == 3 and len(times) == 3 and min(times) >= 0
        np.testing.assert_array_equal(g.view(y), (np.maximum(x, 0) + x).transpose(NCHW))


def test_convolutions_share_one_workspace_of_the_largest_scratch():
    # Two 3x3 convolutions through different algorithms, one after the other.
    first = ConvShape(1, 12, 12, 8, 32, 3, 3, pad_top=1, pad_left=1, pad_bottom=1, pad_right=1,
                      act="relu")
    second = ConvShape(1, 12, 12, 32, 16, 3, 3, pad_top=1, pad_left=1, pad_bottom=1,
                       pad_right=1)
    uk = _hybrid().name
    configs = [ExecConfig("im2col", uk, (1, 1), 3), ExecConfig("winograd_4x4_3x3", uk, (1, 1), 3)]
    rng = _rng(17)
    x = _uniform(rng, first.input_shape)
    weights = [_uniform(rng, s.weight_shape, -0.3, 0.3) for s in (first, second)]
    biases = [_uniform(rng, (s.oc,)) for s in (first, second)]
    mid = ort_conv(first, x, weights[0], biases[0])
    ref = ort_conv(second, mid, weights[1], biases[1])
    scratch = []
    for shape, config, w, b in zip((first, second), configs, weights, biases):
        with native.Conv.from_config(shape, config, w, b) as conv:
            scratch.append(conv.scratch_bytes)
    xt, mt = Tensor(0, first.input_shape), Tensor(2000, first.output_shape)
    yt = Tensor(8000, second.output_shape)
    with Graph(11000, (1,), 1) as g:
        g.view(xt)[...] = x
        g.add("conv", [xt], mt, **conv_attrs(first, configs[0], weights[0], biases[0]))
        g.add("conv", [mt], yt, **conv_attrs(second, configs[1], weights[1], biases[1]))
        assert min(scratch) > 0 and g.workspace_bytes == max(scratch)
        for _ in range(2):  # the second run starts from the first's leftovers
            g.run()
            assert rel_err(g.view(yt), ref) <= TRANSCENDENTAL


BAD = {
    "concat": (lambda g: g.add("concat", [Tensor(0, (1, 7, 7, 32)), Tensor(2000, (1, 7, 6, 32))],
                                 Tensor(5000, (1, 7, 7, 64)), axis=3),
               "concat: input 1 has dims [1,7,6,32] but axis 3 needs the other dims of "
               "[1,7,7,64]"),
    "arena": (lambda g: g.add("unary", [Tensor(9990, (4, 5))], Tensor(0, (4, 5)), op="relu"),
              "relu: input [4,5] at offset 9990 runs past the end of the arena"),
    "broadcast": (lambda g: g.add("binary", [Tensor(0, (2, 3)), Tensor(10, (3, 2))],
                                  Tensor(20, (2, 3)), op="add"), "add: a [2,3] and b [3,2]"),
    "overlap": (lambda g: g.add("transpose", [Tensor(0, (4, 5))], Tensor(10, (5, 4)),
                                     perm=(1, 0)),
                "transpose: the output [10, 30) overlaps the input [0, 20)"),
    "slice": (lambda g: g.add("slice", [Tensor(0, (1, 7, 7, 32))], Tensor(2000, (1, 7, 7, 16)),
                              starts=(0, 0, 0, 1), steps=(1, 1, 1, -1)),
              "slice: axis 3 reads indices 1 to -14 (step -1) of the input [1,7,7,32]"),
    "pool": (lambda g: g.add("pool", [Tensor(0, (1, 8, 8, 4))], Tensor(500, (1, 5, 4, 4)),
                             op="max", kernel=(2, 2), strides=(2, 2), dilations=(1, 1),
                             pads=(0, 0, 0, 0)), "max pool: output height is 5 but must be 4"),
    "conv": (lambda g: g.add("conv", [Tensor(0, (1, 8, 8, 3))], Tensor(1000, (1, 8, 8, 4)),
                             **conv_attrs(ConvShape(1, 8, 8, 4, 4, 1, 1),
                                          ExecConfig("reference", None, (1,), 1),
                                          np.zeros((4, 4, 1, 1), np.float32), None)),
             "conv: input has dims [1,8,8,3] but must have [1,8,8,4]"),
    "conv_nchw": (lambda g: g.add("conv", [Tensor(0, (1, 4, 8, 8))], Tensor(1000, (1, 8, 8, 4)),
                                  **conv_attrs(ConvShape(1, 8, 8, 4, 4, 1, 1),
                                               ExecConfig("reference", None, (1,), 1),
                                               np.zeros((4, 4, 1, 1), np.float32), None),
                                  x_nchw=True),
                  "conv: reference reads an NHWC input only, not NCHW"),
    "resize": (lambda g: g.add("resize", [Tensor(0, (1, 7, 7, 4))], Tensor(500, (1, 14, 14, 5)),
                               mode="linear", scales=(2.0, 2.0)),
               "resize: output has dims [1,14,14,5] but must have [1,14,14,4]"),
    "resize_scales": (lambda g: g.add("resize", [Tensor(0, (1, 7, 7, 4))],
                                      Tensor(500, (1, 14, 14, 4)), scales=(2.0, 0.0)),
                      "resize: scales must be finite and > 0, got 0 (width)"),
    "matmul": (lambda g: g.add("matmul", [Tensor(0, (3, 9))], Tensor(100, (3, 16)),
                               **matmul_attrs(_hybrid().name, np.zeros((8, 16), np.float32),
                                              None)),
               "matmul: input has dims [3,9] but its innermost dim must be K = 8"),
    "batch_matmul": (lambda g: g.add("batch_matmul", [Tensor(0, (2, 3, 4)), Tensor(100, (2, 5, 6))],
                                     Tensor(200, (2, 3, 6)), ukernel=_hybrid().name),
                     "batch_matmul: a [2,3,4] times b [2,5,6] does not give the output's "
                     "[2,3,6]"),
    "batch_matmul_layout": (lambda g: g.add("batch_matmul", [Tensor(0, (2, 4, 3)),
                                                             Tensor(100, (2, 4, 6))],
                                            Tensor(200, (2, 3, 6)), ukernel=_hybrid().name,
                                            a_perm=(0, 2, 1)),
                            "batch_matmul: a's K axis must be innermost in its layout"),
    "gather": (lambda g: g.add("gather", [Tensor(0, (3, 4))], Tensor(100, (3, 1)), axis=1,
                               indices=[4]),
               "gather: indices[0] = 4 is out of range for axis 1 of size 4"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_are_one_line(name):
    add, message = BAD[name]
    with Graph(10000, (1,), 1) as g:
        with pytest.raises(EngineError) as err:
            add(g)
        assert message in str(err.value) and "\n" not in str(err.value)
        assert g.node_count == 0


def test_closed_graph_refuses_work():
    g = Graph(10, (1,), 1)
    g.close()
    with pytest.raises(EngineError, match="closed"):
        g.run()
