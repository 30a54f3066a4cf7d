"""The whole-model runtime (acltuner.runtime): layouts, arena planning, every
native operator against onnxruntime, delegation, and load()'s checks.

Models here are small graphs built with the zoo's GraphBuilder, compiled with
the ArmNN-rule config for each convolution; whole zoo and ONNX models run
through the CLI in test_run_cli.py."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from acltuner import zoo
from acltuner.armnn_default import armnn_default
from acltuner.board.registry import load_board
from acltuner.engine import native
from acltuner.engine.config import ExecConfig
from acltuner.runtime import compile_model
from acltuner.runtime.lower import lower
from acltuner.runtime.arena import ALIGN, IN_PLACE_KINDS, lifetimes, plan_arena
from acltuner.runtime.ir import Buffer, NativeStage, Op, Value
from acltuner.runtime.layout import NHWC, identity, reshaped, same_memory, source_layout
from acltuner.runtime.ops.shape import contiguous_offset, onnx_slice_range
from acltuner.onnx.onnxrt import session
from acltuner.onnx.graph import conv_nodes
from acltuner.onnx.model import load_model
from acltuner.taskgen.tasks import signature
from acltuner.zoo.builder import GraphBuilder

BOARD = load_board("split-host")
SHAPE = (2, 4, 10, 10)  # batch 2: rows of a Gemm, images of a pool


def _configs(model: onnx.ModelProto) -> dict:
    """The ArmNN-rule config of every convolution, as `tune --strategy default` writes."""
    ukernels = [uk.__dict__ for uk in native.ukernels()]
    clusters = [list(c.cpus) for c in BOARD.clusters]
    speeds = [c.capacity or c.max_freq_mhz for c in BOARD.clusters]
    return {c.name: armnn_default(signature(c.shape), clusters, speeds, BOARD.ncores, ukernels,
                                  native.isa(), native.uses_ukernel, native.check)
            for c in conv_nodes(model)[0]}


def _compile(model: onnx.ModelProto, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    # Simplified first, as the convolutions' weights may be folded constants.
    loaded = load_model(path)
    return compile_model(loaded, _configs(loaded), BOARD), path


def _max_rel_diff(model: onnx.ModelProto, tmp_path, seed: int = 0):
    """Runs the model compiled and through onnxruntime: the program and the
    worst output's max |diff| / max |reference|."""
    program, path = _compile(model, tmp_path)
    rng = np.random.default_rng(seed)
    inputs = {name: rng.standard_normal(dims).astype(np.float32)
              for name, (dims, _) in program.inputs.items()}
    outputs = program.run(inputs)
    reference = session(path).run(list(outputs), inputs)
    worst = 0.0
    for name, ref in zip(outputs, reference):
        assert outputs[name].shape == ref.shape, name
        worst = max(worst, float(np.abs(outputs[name] - ref).max() / np.abs(ref).max()))
    return program, worst


# Layouts.

def test_same_memory_ignores_axes_of_size_one():
    assert same_memory((1, 64, 1, 1), NHWC)  # a pooled feature map: NHWC is NCHW
    assert not same_memory((1, 64, 7, 7), NHWC)
    assert same_memory((2, 1, 5, 5), NHWC)


def test_reshape_keeps_the_layout_when_axis_groups_stay_contiguous():
    # Splitting the channels of an NHWC map (channel shuffle): no copy.
    assert reshaped((1, 64, 8, 8), NHWC, (1, 4, 16, 8, 8)) == (0, 3, 4, 1, 2)
    # Flattening a 1x1 map: no copy.  Flattening a 7x7 one needs NCHW order.
    assert reshaped((1, 512, 1, 1), NHWC, (1, 512)) == (0, 1)
    assert reshaped((1, 512, 7, 7), NHWC, (1, 512 * 49)) is None
    assert reshaped((6, 4), identity(2), (2, 3, 4)) == (0, 1, 2)
    # Merging shuffled channels back into NHWC: the source layout to convert to first.
    assert source_layout((1, 16, 4, 8, 8), (1, 64, 8, 8), NHWC) == (0, 3, 4, 1, 2)
    assert source_layout((1, 64, 7, 7), (1, 64 * 49), (0, 1)) == (0, 1, 2, 3)


def test_a_slice_is_a_view_when_it_is_one_contiguous_range():
    dims = (2, 10, 10, 8)  # NHWC
    whole = [(0, 1, d) for d in dims]
    assert contiguous_offset(dims, whole) == 0
    assert contiguous_offset(dims, [(1, 1, 1)] + whole[1:]) == 800  # image 1
    assert contiguous_offset(dims, [(1, 1, 1), (3, 1, 4)] + whole[2:]) == 800 + 240  # its rows
    assert contiguous_offset(dims, [(1, 1, 1), (3, 1, 1), (5, 1, 1), (2, 1, 3)]) == 1082
    assert contiguous_offset((1, 1, 4), [(0, 1, 1), (0, 1, 1), (3, -1, 1)]) == 3
    assert contiguous_offset(dims, whole[:3] + [(2, 1, 3)]) is None  # channels of every pixel
    assert contiguous_offset(dims, [(1, -1, 2)] + whole[1:]) is None  # images reversed
    assert contiguous_offset(dims, [(0, 1, 1), (0, 2, 5)] + whole[2:]) is None  # every other row


def test_slice_bounds_are_onnxruntimes():
    """Negative and out-of-range starts and ends, clamped as onnxruntime does:
    stepping backwards from before the start takes element 0 (numpy: nothing),
    and an end of INT_MAX backwards runs to the start."""
    big = 2 ** 63 - 1
    combos = [(s, e, step) for s in (-8, -5, -1, 0, 2, 4, 5, 7)
              for e in (-big, -8, -6, -1, 0, 3, 5, 8, 2 ** 31 - 1, big) for step in (-3, -1, 1, 2)]
    nodes, outputs, consts = [], [], []
    for i, bounds in enumerate(combos):
        names = [f"{k}{i}" for k in "sea"]
        consts += [helper.make_tensor(n, TensorProto.INT64, [1], [v])
                   for n, v in zip(names, bounds)]
        nodes.append(helper.make_node("Slice", ["x", names[0], names[1], "axes", names[2]],
                                      [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    consts.append(helper.make_tensor("axes", TensorProto.INT64, [1], [0]))
    graph = helper.make_graph(nodes, "slices", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [5])], outputs, consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = np.arange(5, dtype=np.float32)
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for bounds, y in zip(combos, got):
        assert list(onnx_slice_range(*bounds, 5)) == y.astype(int).tolist(), bounds


# Arena planning.

def _chain_stage(sizes: list[int], skips: list[int], kinds: list[str]) -> NativeStage:
    """Op i reads op i-1's output and, if skips[i], the output skips[i] ops
    back; an elementwise kinds[i] ("unary") is a binary op where it reads two."""
    stage = NativeStage()
    first = Value(Buffer(sizes[0]), (sizes[0],), (0,))
    stage.imports["x"] = first
    outs = [first]
    for i, size in enumerate(sizes[1:], 1):
        out = Value(Buffer(size), (size,), (0,))
        back = outs[max(0, i - 1 - skips[i])] if skips[i] else None
        kind = "binary" if back and kinds[i] == "unary" else kinds[i]
        stage.ops.append(Op(kind, f"op{i}", "", {"x": outs[-1], "b": back, "out": out}))
        outs.append(out)
    stage.exports["y"] = outs[-1]
    return stage


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_arena_never_overlaps_live_buffers_but_in_place(data):
    n = data.draw(st.integers(2, 30))
    sizes = data.draw(st.lists(st.sampled_from([1, 17, 1000, 5000]), min_size=n, max_size=n))
    skips = data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    kinds = data.draw(st.lists(st.sampled_from(["unary", "pool"]), min_size=n, max_size=n))
    stage = _chain_stage(sizes, skips, kinds)
    floats = plan_arena(stage)
    spans = lifetimes(stage)
    shared = set()
    for i, op in enumerate(stage.ops):  # an output over an input: only where allowed
        out = op.out.buffer
        for v in op.reads:
            if v.buffer.offset == out.offset:
                assert op.kind in IN_PLACE_KINDS and spans[v.buffer][1] == i
                assert v.buffer.floats == out.floats and v.dims == op.out.dims
                shared.add((v.buffer, out))
    buffers = list(spans)
    for b in buffers:
        assert b.offset % ALIGN == 0 and b.offset + b.floats <= floats
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            (a0, a1), (b0, b1) = spans[a], spans[b]
            if a0 <= b1 and b0 <= a1 and (a, b) not in shared and (b, a) not in shared:
                assert a.offset + a.floats <= b.offset or b.offset + b.floats <= a.offset


def test_a_chain_reuses_freed_buffers():
    # Each op needs its input and output: two buffers, whatever the chain's length.
    assert plan_arena(_chain_stage([1000] * 10, [0] * 10, ["pool"] * 10)) == 2 * 1008


def test_elementwise_operations_write_over_an_input_only_they_read():
    assert plan_arena(_chain_stage([1000] * 10, [0] * 10, ["unary"] * 10)) == 1008
    # A residual Add: it reads op 1's output, live until then, beside op 3's.
    stage = _chain_stage([1000] * 4, [0, 0, 0, 1], ["unary", "pool", "pool", "binary"])
    plan_arena(stage)
    add = stage.ops[-1]
    assert add.out.buffer.offset == add.tensors["x"].buffer.offset
    assert add.out.buffer.offset != add.tensors["b"].buffer.offset
    # A tensor of another size keeps its region.
    stage = _chain_stage([1000, 1000, 500], [0, 0, 0], ["unary"] * 3)
    plan_arena(stage)
    assert stage.ops[-1].out.buffer.offset != stage.ops[-1].tensors["x"].buffer.offset


def test_a_squeeze_and_excitation_gate_runs_in_place_and_right(tmp_path):
    b = GraphBuilder(input_shape=(1, 16, 12, 12))
    x = _features(b, 16)
    gate = b.node("Sigmoid", [b.node("GlobalAveragePool", [x], "squeeze")], "gate")
    model = b.model(b.node("Add", [b.node("Mul", [x, gate], "excite"), x], "residual"), "se")
    onnx.save(model, tmp_path / "se.onnx")
    loaded = load_model(tmp_path / "se.onnx")
    stage = next(s for s in lower(loaded, _configs(loaded))[0] if isinstance(s, NativeStage))
    plan_arena(stage)
    ops = {op.node: op for op in stage.ops}
    # The Add over the Mul's output, which only it reads; the Mul not over the
    # map the pooling read before it.
    assert ops["residual"].out.buffer.offset in {v.buffer.offset for v in ops["residual"].reads}
    assert ops["excite"].out.buffer.offset not in {v.buffer.offset for v in ops["excite"].reads}
    assert _max_rel_diff(model, tmp_path)[1] < 1e-5


# Operators, each after a convolution so that its input is an NHWC feature map.

def _features(b: GraphBuilder, channels: int = 8) -> str:
    return b.conv(b.input, "features", channels, 3, pads=1, bias=True, relu="features.relu")


def _pools(b):
    x = _features(b)
    y1 = b.node("MaxPool", [x], "max_ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    y1 = b.node("Add", [y1, b.node("GlobalMaxPool", [x], "gmax")], "plus_max")
    y2 = b.node("AveragePool", [x], "avg_ceil", kernel_shape=[3, 3], strides=[2, 2],
                ceil_mode=1, count_include_pad=0)
    y3 = b.node("AveragePool", [x], "avg_incl", kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)  # 6x6, the last clipped
    y3 = b.node("MaxPool", [y3], "max_2x2", kernel_shape=[2, 2])
    y4 = b.node("AveragePool", [x], "avg_same", kernel_shape=[3, 3], strides=[2, 2],
                auto_pad="SAME_UPPER")
    y5 = b.node("MaxPool", [x], "max_dil", kernel_shape=[2, 2], strides=[2, 2],
                dilations=[2, 2], pads=[0, 0, 1, 1])
    return b.node("Concat", [y1, y2, y3, y4, y5], "cat", axis=1)


def _lrn_softmax(b):
    x = b.node("LRN", [_features(b)], "lrn", size=3, alpha=1e-3, beta=0.75, bias=2.0)
    y = b.node("Softmax", [x], "over_channels", axis=1)  # innermost in NHWC: no transpose
    return b.node("Softmax", [y], "over_rows", axis=2)  # moved innermost first


def _softmax_opset11(b):
    x = _features(b)
    y = b.node("Softmax", [x], "flattened", axis=1)  # over C*H*W
    return b.node("Add", [y, b.node("LogSoftmax", [x], "log_flattened", axis=2)], "both")


def _div_no_nan(b):
    """TensorFlow's div_no_nan as tf2onnx writes it: Where(Equal(d, 0), 0, n / d),
    d exactly 0 at some pixels (a Relu's), one pass."""
    x = b.conv(b.input, "features", 8, 3, pads=1, bias=True)
    d = b.node("Relu", [x], "d")
    n = b.node("Add", [x, b.constant("one", np.float32(1))], "n")
    q = b.node("Div", [n, d], "q")
    zero = b.constant("zero", np.zeros((1,), np.float32))
    is_zero = b.node("Equal", [d, zero], "is_zero")
    return b.node("Where", [is_zero, zero, q], "no_nan")


def _log_softmax(b):
    """LogSoftmax over the channels (innermost in NHWC) and over the rows, of
    logits far apart: no log of a probability rounded to 0."""
    x = b.node("Mul", [_features(b), b.constant("spread", np.float32(40))], "logits")
    y = b.node("LogSoftmax", [x], "over_channels", axis=1)
    return b.node("LogSoftmax", [y], "over_rows", axis=2)


def _fully_connected(b):
    x = b.flatten(_features(b, 3), "flat")  # 10x10 map: back to NCHW order first
    w = b.constant("w", b.rng.normal(0, 0.1, (300, 16)))
    y = b.node("Gemm", [x, w, b.constant("c", b.rng.normal(0, 1, (16,)))], "gemm",
               alpha=0.5, beta=2.0)
    y = b.node("Relu", [y], "relu")
    # A bias per row and column is added after the product.
    w2 = b.constant("w2", b.rng.normal(0, 0.3, (5, 16)))
    y = b.node("Gemm", [y, w2, b.constant("c2", b.rng.normal(0, 1, (2, 5)))], "gemm2",
               transB=1)
    return b.node("MatMul", [y, b.constant("m", b.rng.normal(0, 0.3, (5, 7)))], "matmul")


def _matmul_3d(b):
    x = b.node("Reshape", [_features(b), b.constant("s", np.array([0, 8, -1]))], "rows")
    return b.node("MatMul", [x, b.constant("m", b.rng.normal(0, 0.1, (100, 6)))], "matmul")


def _channel_shuffle(b):
    x = _features(b)
    y = b.node("Reshape", [x, b.constant("s1", np.array([2, 2, 4, 10, 10]))], "split")
    y = b.node("Transpose", [y], "shuffle", perm=[0, 2, 1, 3, 4])
    y = b.node("Reshape", [y, b.constant("s2", np.array([2, 8, 10, 10]))], "merge", channels=8)
    return b.conv(y, "after", 8, 1)


def _shuffle_shared(b):
    """A channel shuffle whose transposed 5-D tensor is read twice (shuffled
    back as well): not the pattern, but relabellings and one transpose."""
    x = _features(b)
    y = b.node("Reshape", [x, b.constant("s1", np.array([2, 4, 2, 10, 10]))], "split")
    y = b.node("Transpose", [y], "shuffle", perm=[0, 2, 1, 3, 4])
    z = b.node("Reshape", [y, b.constant("s2", np.array([2, 8, 10, 10]))], "merge", channels=8)
    back = b.node("Transpose", [y], "unshuffle", perm=[0, 2, 1, 3, 4])
    back = b.node("Reshape", [back, "s2"], "merge_back", channels=8)
    return b.node("Add", [b.conv(z, "after", 8, 1), back], "sum")


def _split(b, opset: int):
    """Split of the NHWC channels (strided copies), of the batch and of the
    rows of one image (views: contiguous ranges); the sizes given the way
    `opset` does (attribute, input, num_outputs) or left to equal parts."""
    def split(x, name, axis, sizes, outputs):
        names = [f"{name}.{i}" for i in range(outputs)]
        extra, inputs = {}, [x]
        if sizes is None and opset >= 18:
            extra["num_outputs"] = outputs
        elif sizes is not None and opset >= 13:
            inputs.append(b.constant(f"{name}.split", np.array(sizes, np.int64)))
        elif sizes is not None:
            extra["split"] = sizes
        b.nodes.append(helper.make_node("Split", inputs, names, name=name, axis=axis, **extra))
        for i, t in enumerate(names):
            b.channels[t] = sizes[i] if axis == 1 else b.channels[x]
        return names

    x = _features(b)
    c = split(x, "channels", 1, [3, 5], 2)
    halves = split(x, "batch", 0, None, 2)
    rows = split(halves[1], "rows", -2, [4, 4, 2] if opset < 18 else None, 3)  # 18: ceil(10/3)
    y = b.node("Mul", [b.conv(c[1], "on5", 3, 1), c[0]], "mul")
    y = b.node("Add", [b.conv(y, "back", 8, 1), b.node("Concat", halves, "images", axis=0)], "add")
    return b.node("Add", [y, b.node("Concat", [rows[2], rows[0], rows[1]], "rows_back", axis=2)],
                  "out")


def _slice(b, opset: int):
    """Slices copied (a channel range, a crop with clamped and negative bounds,
    backward steps) and views (one image, then 3 or 5 channels of one pixel
    of it) broadcast onto them."""
    def slice_(y, name, starts, ends, axes, steps=None):
        if opset < 10:
            return b.node("Slice", [y], name, starts=starts, ends=ends, axes=axes)
        inputs = [y] + [b.constant(f"{name}.{k}", np.array(v, np.int64)) for k, v in
                        (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps))
                        if v is not None]
        return b.node("Slice", inputs, name)

    big = 2 ** 63 - 1
    x = _features(b)
    y = slice_(x, "chan", [2], [7], [1])  # channels 2..6
    y = slice_(y, "crop", [-9, 1], [big, -1], [2, -1 if opset >= 11 else 3])  # H 1..9, W 1..8
    k = 5
    if opset >= 10:  # channels 4, 2, 0; H 8, 5, 2; W 7, 5, 3, 1 (the start clamped)
        y = slice_(y, "flip", [-1, 12, -1], [-big, -big, -8], [1, 2, 3], [-2, -3, -2])
        k = 3
    z = slice_(x, "image1", [1], [2], [0])
    z = slice_(z, "pixel", [2, 4, 6], [2 + k, 5, 7], [1, 2, 3])
    return b.node("Add", [y, z], "out")


def _view_output(b):
    """The model's output is a view: image 1, its rows 2 to 7."""
    x = b.node("Slice", [_features(b)] + [b.constant(f"v.{k}", np.array(v, np.int64)) for k, v in (
        ("starts", [1, 2]), ("ends", [2, 8]), ("axes", [0, 2]))], "rows")
    return b.node("Identity", [x], "same")


def _mean(b):
    x = _features(b)
    y = b.conv(x, "other", 8, 3, pads=1)
    return b.node("Mean", [x, b.constant("shift", b.rng.normal(0, 1, (8, 1, 1))), y], "mean")


def _concat_pad(b):
    x = _features(b)
    y = b.conv(b.input, "other", 4, 1)
    y = b.node("Concat", [x, y], "cat", axis=1, channels=12)
    y = b.node("Pad", [y, b.constant("p1", np.array([0, 0, 1, 2, 0, 0, 2, 1])),
                       b.constant("v", np.array(0.5, np.float32))], "pad_const")
    y = b.node("Pad", [y, b.constant("p2", np.array([0, 0, 2, 1, 0, 0, 1, 2]))], "pad_reflect",
               mode="reflect")
    y = b.node("Pad", [y, b.constant("p3", np.array([0, 1, 1, 0, 0, 2, 0, 1]))], "pad_edge",
               mode="edge")
    return b.node("Pad", [y, b.constant("p4", np.array([0, -1, 0, -2, 0, 0, -3, 1]))], "crop")


def _broadcasting(b):
    x = _features(b)
    y = b.node("Add", [x, b.constant("per_channel", b.rng.normal(0, 1, (8, 1, 1)))], "add")
    y = b.node("Mul", [y, b.constant("scalar", np.array(0.5, np.float32))], "mul")
    y = b.node("Sub", [b.constant("lhs", b.rng.normal(0, 1, (1, 8, 1, 1))), y], "sub", channels=8)
    y = b.node("Div", [y, b.constant("per_column", b.rng.uniform(1, 2, (10,)))], "div")
    # Squeeze-and-excitation: a computed per-channel gate.
    gate = b.conv(b.global_avg_pool(y, "gap"), "squeeze", 8, 1, bias=True)
    gate = b.node("Sigmoid", [gate], "gate")
    return b.node("Mul", [y, gate], "excite")


def _activations(b):
    x = _features(b)
    x = b.node("LeakyRelu", [b.node("Sub", [x, b.constant("one", np.array(1.0, np.float32))],
                                    "shift")], "leaky", alpha=0.2)
    x = b.node("HardSigmoid", [x], "hsig", alpha=0.3, beta=0.4)
    x = b.node("HardSwish", [b.node("Mul", [x, b.constant("k", np.array(8.0, np.float32))],
                                    "scale")], "hswish")
    return b.node("Clip", [x, b.constant("lo", np.array(0.1, np.float32)),
                           b.constant("hi", np.array(0.9, np.float32))], "clip")


def _gelu_erf(b, x: str, name: str, sqrt2: str, one: str, half: str) -> str:
    e = b.node("Add", [b.node("Erf", [b.node("Div", [x, sqrt2], f"{name}.div")], f"{name}.erf"),
                       one], f"{name}.add")
    return b.node("Mul", [b.node("Mul", [x, e], f"{name}.mul"), half], name)


def _gelus(b):
    """GELU after operations that do not absorb it (a Sub, a pool): one
    unary pass each, the erf form and the tanh form."""
    k = {n: b.constant(n, np.float32(v)) for n, v in (
        ("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5), ("kappa", 0.044715),
        ("beta", np.sqrt(2 / np.pi)))}
    x = b.node("Sub", [_features(b), b.constant("offset", np.float32(1.5))], "shift")
    x = _gelu_erf(b, x, "gelu", k["sqrt2"], k["one"], k["half"])
    x = b.maxpool(x, "pool", 2, 2, 0)
    cube = b.node("Mul", [x, b.node("Mul", [x, x], "square")], "cube")
    inner = b.node("Add", [x, b.node("Mul", [cube, k["kappa"]], "kappa_cube")], "inner")
    e = b.node("Add", [b.node("Tanh", [b.node("Mul", [inner, k["beta"]], "u")], "tanh"),
                       k["one"]], "tanh1")
    return b.node("Mul", [b.node("Mul", [x, e], "tanh_mul"), k["half"]], "gelu_tanh")


def _linear_epilogues(b):
    """Token MLPs: a MatMul by a constant, its bias Add (either order) and a
    GELU, then one with the bias only, and a Gemm with a Relu: each one
    matmul with the bias and activation in its epilogue."""
    k = {n: b.constant(n, np.float32(v)) for n, v in (
        ("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5))}
    tokens = b.node("Reshape", [_features(b), b.constant("s", np.array([0, 8, -1]))], "tokens")
    x = b.node("MatMul", [tokens, b.constant("w1", b.rng.normal(0, 0.1, (100, 24)))], "fc1")
    x = b.node("Add", [b.constant("b1", b.rng.normal(0, 1, (24,))), x], "fc1.bias")
    x = _gelu_erf(b, x, "act", k["sqrt2"], k["one"], k["half"])
    x = b.node("MatMul", [x, b.constant("w2", b.rng.normal(0, 0.2, (24, 12)))], "fc2")
    x = b.node("Add", [x, b.constant("b2", b.rng.normal(0, 1, (1, 1, 12)))], "fc2.bias")
    x = b.node("Reshape", [x, b.constant("to_rows", np.array([16, 12]))], "rows")
    w3 = b.constant("w3", b.rng.normal(0, 0.3, (5, 12)))
    y = b.node("Gemm", [x, w3, b.constant("c3", b.rng.normal(0, 1, (5,)))], "gemm", transB=1)
    return b.node("Relu", [y], "relu")


def _batchnorm_alone(b):
    x = b.maxpool(_features(b), "pool", 2, 2, 0)
    return b.node("Relu", [b.batchnorm(x, "bn")], "relu")


def _affine_chains(b):
    """Per-channel affine chains no convolution absorbs: BatchNormalization and
    Relu after a pool, Paddle's scale and bias with a HardSwish, a scalar pair,
    a BatchNormalization of [N, C]."""
    x = _batchnorm_alone(b)
    x = b.node("Mul", [b.constant("lab_s", b.rng.normal(1, 0.5, (8, 1, 1))), x], "lab_mul",
               channels=8)
    x = b.node("HardSwish", [b.node("Add", [x, b.constant("lab_b", np.float32(0.25))],
                                    "lab_add")], "lab_act")
    x = b.node("Add", [b.node("Mul", [x, b.constant("half", np.float32(0.5))], "s_mul"),
                       b.constant("one", np.float32(1))], "s_add")
    return b.batchnorm(b.flatten(b.global_avg_pool(x, "gap"), "flat"), "bn_1d")


def _aliases(b):
    x = _features(b)
    y = b.node("Dropout", [b.node("Identity", [x], "id")], "drop")
    z = b.conv(x, "other", 8, 3, pads=1)
    gap = b.global_avg_pool(z, "gap")
    # The first two broadcast to less than the output.
    return b.node("Sum", [gap, b.constant("bias", b.rng.normal(0, 1, (8, 1, 1))), x, y, z],
                  "sum")


def _identity_pairs(b):
    """Paddle's Identity pairs: between a convolution and a Concat, and ahead of
    the model's output."""
    x = _features(b)
    y = b.node("Identity", [b.node("Identity", [b.conv(x, "other", 8, 3, pads=1)], "id1")], "id2")
    z = b.node("Concat", [x, y], "cat", axis=1)
    return b.node("Identity", [b.node("Identity", [z], "id3")], "id4")


def _max_min(b):
    x = _features(b)
    y = b.conv(x, "other", 8, 3, pads=1)
    peak = b.node("Max", [x, b.constant("floor", b.rng.normal(0, 1, (8, 1, 1))), y], "max")
    return b.node("Min", [peak, b.constant("ceiling", np.array(0.5, np.float32))], "min")


def _reshapes(b):
    x = b.global_avg_pool(_features(b), "gap")
    y = b.node("Squeeze", [x, b.constant("axes", np.array([2, 3]))], "squeeze")
    y = b.node("Unsqueeze", [y, b.constant("axes1", np.array([1]))], "unsqueeze")
    y = b.node("Reshape", [y, b.constant("shape", np.array([0, -1]))], "reshape")
    return b.node("Transpose", [y], "transpose", perm=[1, 0])


def _transposed_output(b):
    return b.node("Transpose", [_features(b)], "to_nhwc", perm=[0, 2, 3, 1])


def _layer_norm_and_math(b):
    """A LayerNorm as exporters decompose it, then math, reductions (adjacent in
    NHWC or not, kept dims or not, down to a scalar) and a Clip whose lower
    bound is computed, as a log-mel front end writes it."""
    x = _features(b)
    mean = b.node("ReduceMean", [x], "mean", axes=[-1])
    centred = b.node("Sub", [x, mean], "centred")
    var = b.node("ReduceMean", [b.node("Pow", [centred, b.constant("two", np.float32(2))],
                                       "square")], "var", axes=[-1])
    std = b.node("Sqrt", [b.node("Add", [var, b.constant("eps", np.float32(1e-5))], "var_eps")],
                 "std")
    y = b.node("Div", [centred, std], "norm")
    y = b.node("Log", [b.node("Add", [b.node("Abs", [y], "abs"), b.constant("one", np.float32(1))],
                              "abs1")], "log")
    peak = b.node("ReduceMax", [y], "peak", keepdims=0)
    floor = b.node("Sub", [peak, b.constant("range", np.float32(0.5))], "floor")
    y = b.node("Cast", [b.node("Clip", [y, floor], "clip_floor")], "cast", to=TensorProto.FLOAT)
    y = b.node("Tanh", [b.node("Exp", [b.node("Neg", [y], "neg")], "exp")], "tanh")
    channels = b.node("ReduceSum", [y, b.constant("c_axis", np.array([1]))], "sum_c")
    hw = b.node("ReduceMin", [y], "min_hw", axes=[2, 3], keepdims=0)  # adjacent in NHWC
    ch = b.node("ReduceMax", [y], "max_ch", axes=[1, 2])  # C and H: not adjacent in NHWC
    ch = b.node("Reshape", [ch, b.constant("flat", np.array([2, 10]))], "ch_flat")
    y = b.node("Add", [b.node("ReduceMean", [channels], "mean_hw", axes=[2, 3], keepdims=0), hw],
               "both")
    return b.node("Concat", [y, b.node("Erf", [ch], "erf")], "out", axis=1)


def _layer_norm_chain(b, x: str, name: str, axes: list[int], affine: tuple | None,
                      squares: str = "Pow") -> str:
    """The LayerNorm exporters decompose: ReduceMean, Sub, Pow (or Mul), ReduceMean,
    Add epsilon, Sqrt, Div, then Mul and Add of constants if `affine` holds them."""
    mean = b.node("ReduceMean", [x], f"{name}.mean", axes=axes)
    d = b.node("Sub", [x, mean], f"{name}.d")
    sq = (b.node("Pow", [d, b.constant(f"{name}.two", np.float32(2))], f"{name}.sq")
          if squares == "Pow" else b.node("Mul", [d, d], f"{name}.sq"))
    var = b.node("ReduceMean", [sq], f"{name}.var", axes=axes)
    std = b.node("Sqrt", [b.node("Add", [var, b.constant(f"{name}.eps", np.float32(1e-5))],
                                 f"{name}.var_eps")], f"{name}.std")
    y = b.node("Div", [d, std], f"{name}.norm")
    if affine is None:
        return y
    y = b.node("Mul", [y, b.constant(f"{name}.scale", affine[0])], f"{name}.scaled")
    return b.node("Add", [b.constant(f"{name}.shift", affine[1]), y], name, channels=b.channels[y])


def _layer_norms(b):
    """LayerNormalization as the operator (the last axis of tokens with and
    without a bias, the last two axes) and as exporters decompose it (over
    the channels of a map, ConvNeXt's LayerNorm2d, and the last axis of
    tokens with the squares as a Mul): each one layer_norm operation."""
    x = _features(b)  # [2, 8, 10, 10], NHWC in memory
    c = b.rng.normal(1, 0.2, (1, 8, 1, 1)), b.rng.normal(0, 0.2, (1, 8, 1, 1))
    x = _layer_norm_chain(b, x, "ln2d", [1], c)  # the channels: innermost in NHWC
    tokens = b.node("Reshape", [x, b.constant("to_tokens", np.array([2, 8, 100]))], "tokens")
    y = b.node("LayerNormalization", [tokens, b.constant("g1", b.rng.normal(1, 0.2, 100)),
                                      b.constant("b1", b.rng.normal(0, 0.2, 100))], "ln_op",
               axis=-1, epsilon=1e-6)
    y = b.node("LayerNormalization", [y, b.constant("g2", b.rng.normal(1, 0.2, 100))],
               "ln_no_bias")
    y = b.node("LayerNormalization", [y, b.constant("g3", b.rng.normal(1, 0.2, (8, 100))),
                                      b.constant("b3", b.rng.normal(0, 0.2, (1, 100)))],
               "ln_two_axes", axis=1)
    c = b.rng.normal(1, 0.2, 100), b.rng.normal(0, 0.2, 100)
    return _layer_norm_chain(b, y, "ln_tokens", [-1], c, squares="Mul")


def _reductions_opset18(b):
    """Opset 18's reductions, their axes an input: any set of axes of a 4-D
    map (two apart, the batch and height, all of them) and of a 3-D view of it."""
    x = _features(b)  # [2, 8, 10, 10]
    axes = {name: b.constant(name, np.array(v)) for name, v in
            {"a13": [1, 3], "a02": [0, 2], "a_last": [-1]}.items()}
    y = b.node("Add", [b.node("ReduceMax", [x, axes["a13"]], "max_cw"),
                       b.node("ReduceMin", [x, axes["a02"]], "min_nh")], "both")
    y = b.node("Add", [y, b.node("ReduceSum", [x], "sum_all")], "all3")
    flat = b.node("Reshape", [x, b.constant("to3", np.array([16, 10, 10]))], "flat")
    means = b.node("ReduceMean", [flat, axes["a02"]], "mean_3d")  # [1, 10, 1]
    rows = b.node("ReduceMean", [flat, axes["a_last"]], "mean_rows", keepdims=0)  # [16, 10]
    y = b.node("Add", [y, means], "plus_means")
    columns = b.node("ReduceMax", [rows, b.constant("a0", np.array([0]))], "max_rows")  # [1, 10]
    return b.node("Add", [y, columns], "out")


def _global_pools_1d_3d(b):
    """GlobalAveragePool and GlobalMaxPool of a 1-D and a 3-D map (an audio
    CNN's, a video net's): reductions over their spatial axes."""
    x = _features(b)  # [2, 8, 10, 10]
    seq = b.node("Reshape", [x, b.constant("to_seq", np.array([2, 8, 100]))], "seq")
    vol = b.node("Reshape", [x, b.constant("to_vol", np.array([2, 8, 2, 5, 10]))], "vol")
    y = b.node("Add", [b.node("GlobalAveragePool", [seq], "gap_1d"),
                       b.node("GlobalMaxPool", [seq], "gmax_1d")], "pools_1d")
    z = b.node("Add", [b.node("GlobalAveragePool", [vol], "gap_3d"),
                       b.node("GlobalMaxPool", [vol], "gmax_3d")], "pools_3d")
    z = b.node("Reshape", [z, b.constant("to_1d", np.array([2, 8, 1]))], "flat_3d")
    return b.node("Add", [y, z], "out")


def _aspp(b):
    """DeepLab's ASPP in small: 3x3 convolutions at rates whose outer taps
    read only padding (all of them at 12 on a 10x10 map, one row and column
    at 6, padded on one side)."""
    x = _features(b)
    branches = []
    for rate, pads in ((12, [12] * 4), (6, [12, 12, 0, 0]), (2, [2] * 4)):
        w = b.constant(f"rate{rate}.weight", b.rng.normal(0, 0.3, (8, 8, 3, 3)))
        branches.append(b.node("Conv", [x, w], f"rate{rate}", channels=8, kernel_shape=[3, 3],
                               dilations=[rate, rate], pads=pads))
    return b.node("Concat", branches, "cat", axis=1)


CASES = {f.__name__[1:]: f for f in (
    _pools, _lrn_softmax, _fully_connected, _matmul_3d, _channel_shuffle, _shuffle_shared,
    _concat_pad, _broadcasting, _activations, _batchnorm_alone, _affine_chains, _aliases, _max_min,
    _mean, _identity_pairs,
    _reshapes, _transposed_output, _layer_norm_and_math, _view_output, _gelus,
    _linear_epilogues, _global_pools_1d_3d, _log_softmax, _div_no_nan, _aspp)}
OPSETS = {"softmax_opset11": (_softmax_opset11, 11), "layer_norms": (_layer_norms, 17),
          "reductions_opset18": (_reductions_opset18, 18),
          **{f"split_opset{v}": (lambda b, v=v: _split(b, v), v) for v in (11, 13, 18)},
          **{f"slice_opset{v}": (lambda b, v=v: _slice(b, v), v) for v in (9, 13)}}


def _build(make, opset: int = 14) -> onnx.ModelProto:
    b = GraphBuilder(seed=3, input_shape=SHAPE, opset=opset)
    return b.model(make(b), "case")


@pytest.mark.parametrize("case", [*CASES, *OPSETS])
def test_operator_matches_onnxruntime(case, tmp_path):
    make, opset = OPSETS.get(case, (CASES.get(case), 14))
    program, diff = _max_rel_diff(_build(make, opset), tmp_path)
    assert program.delegated == []
    assert diff < 1e-4


def _kinds(case, tmp_path) -> list[str]:
    program, _ = _compile(_build(*OPSETS[case]) if case in OPSETS else _build(CASES[case]),
                          tmp_path)
    program.run(np.zeros(SHAPE, np.float32))
    return [entry.kind for entry in program.last_profile]


def test_affine_chains_are_one_pass_each(tmp_path):
    kinds = _kinds("affine_chains", tmp_path)
    assert [k for k in kinds if k.startswith("affine")] == [
        "affine relu", "affine hard_swish", "affine none", "affine none"], kinds
    assert not {"mul", "add", "relu", "hard_swish"} & set(kinds), kinds


def test_identity_pairs_copy_nothing(tmp_path):
    kinds = _kinds("identity_pairs", tmp_path)
    assert not [k for k in kinds if k.startswith("affine")], kinds


def test_gelu_is_one_pass_and_rides_the_matmul_epilogue(tmp_path):
    kinds = [k for k in _kinds("gelus", tmp_path) if not k.startswith("conv ")]
    assert kinds == ["sub", "gelu", "max pool 2x2", "gelu_tanh",
                     "copies into and out of arenas"], kinds
    kinds = [k for k in _kinds("linear_epilogues", tmp_path)
             if not k.startswith("conv ") and k != "transpose"]  # features to NCHW order
    assert [k.split()[0] for k in kinds] == ["matmul", "matmul", "matmul", "copies"], kinds
    assert kinds[0].endswith(" gelu") and kinds[2].endswith(" relu"), kinds


def test_layer_norms_are_one_pass_each_in_place_of_the_layout(tmp_path):
    kinds = [k for k in _kinds("layer_norms", tmp_path) if not k.startswith("conv ")]
    # The channels of the NHWC map are normalised where they lie; the tokens
    # need the map in NCHW order once, for the Reshape.
    assert kinds == ["layer_norm", "transpose", "layer_norm", "layer_norm", "layer_norm",
                     "layer_norm", "copies into and out of arenas"], kinds
    assert "layer_norm" in _kinds("layer_norm_and_math", tmp_path)


def test_channel_shuffle_is_one_gather(tmp_path):
    kinds = _kinds("channel_shuffle", tmp_path)
    assert [k for k in kinds if not k.startswith("conv ")] == ["channel shuffle",
                                                               "copies into and out of arenas"]


def test_a_shuffle_read_twice_moves_data_once(tmp_path):
    # Splitting the NHWC channels is free, the Transpose a relabelling, and
    # merging needs the one transpose that makes the merged map NHWC.
    kinds = _kinds("shuffle_shared", tmp_path)
    assert kinds.count("transpose") == 1 and "channel shuffle" not in kinds, kinds


@pytest.mark.parametrize("opset", [13, 18])
def test_split_copies_channels_and_views_contiguous_ranges(opset, tmp_path):
    # The channel split: two strided copies; the batch halves and the rows of
    # one image are contiguous ranges: no copy.
    assert _kinds(f"split_opset{opset}", tmp_path).count("slice") == 2


def test_slice_copies_only_what_is_not_a_contiguous_range(tmp_path):
    assert _kinds("slice_opset13", tmp_path).count("slice") == 3  # chan, crop, flip
    assert "slice" not in _kinds("view_output", tmp_path)  # copied out of the arena as it is


# Delegation.

def test_nodes_outside_the_native_set_run_through_onnxruntime(tmp_path):
    def make(b):
        y = b.node("Sin", [_features(b)], "sin")
        y = b.conv(y, "middle", 8, 3, pads=1, bn="middle.bn", relu="middle.relu")
        y = b.node("Cos", [y], "cos")
        y = b.node("Add", [y, "features.relu"], "add")  # a native input from two stages back
        # A 1-D convolution, through a 3-D view of a 4-D feature map: native.
        y = b.node("Reshape", [y, b.constant("s", np.array([2, 8, 100]))], "rows")
        w = b.constant("w1d", b.rng.normal(0, 0.3, (4, 8, 3)))
        return b.node("Relu", [b.node("Conv", [y, w], "conv1d", pads=[1, 1])], "out")
    program, diff = _max_rel_diff(_build(make), tmp_path)
    assert [d.nodes for d in program.delegated] == [["sin"], ["cos"]]
    assert [d.op_types for d in program.delegated] == [["Sin"], ["Cos"]]
    assert diff < 1e-4
    kinds = {e.kind.split(":")[0] for e in program.last_profile}
    assert "delegated to onnxruntime" in kinds and any(k.startswith("conv ") for k in kinds)


def test_constant_subgraphs_are_folded(tmp_path):
    """Weights behind ConstantOfShape / Unsqueeze, a shape computed by Shape."""
    def make(b):
        x = _features(b)
        shape = b.constant("wshape", np.array([8, 8, 1, 1]))
        w = b.node("ConstantOfShape", [shape], "w", value=helper.make_tensor(
            "v", TensorProto.FLOAT, [1], [0.1]))
        y = b.node("Conv", [x, w], "conv", channels=8)
        s = b.node("Unsqueeze", [b.constant("s", b.rng.uniform(0.5, 1.5, (8,))),
                                 b.constant("ax", np.array([1, 2]))], "unsq")
        y = b.node("Mul", [y, s], "mul")
        return b.node("Reshape", [y, b.node("Shape", [x], "shape")], "same_shape")
    program, diff = _max_rel_diff(_build(make), tmp_path)
    assert program.delegated == [] and diff < 1e-4


# The program as a whole.

def test_arena_is_smaller_than_all_activations(tmp_path):
    model = zoo.build("resnet18")
    program, _ = _compile(model, tmp_path)
    inferred = load_model(tmp_path / "model.onnx")
    activations = sum(4 * np.prod([d.dim_value for d in vi.type.tensor_type.shape.dim])
                      for vi in inferred.graph.value_info)
    assert program.arena_bytes < activations / 4


def test_run_checks_its_inputs(tmp_path):
    program, _ = _compile(_build(_activations), tmp_path)
    x = np.zeros(SHAPE, np.float32)
    assert program.run(x)["output"].shape == (2, 8, 10, 10)
    with pytest.raises(ValueError, match=r"input 'input' must be float32 \[2, 4, 10, 10\], "
                                         r"got float64"):
        program.run(x.astype(np.float64))
    with pytest.raises(ValueError, match=r"must be float32 \[2, 4, 10, 10\], got float32 \[1"):
        program.run({"input": x[:1]})
    with pytest.raises(ValueError, match="unknown input"):
        program.run({"input": x, "other": x})


@pytest.mark.parametrize("case", ["view_output", "transposed_output", "activations"])
def test_outputs_of_a_run_survive_the_next_run(case, tmp_path):
    program, _ = _compile(_build(CASES[case]), tmp_path)
    rng = np.random.default_rng(0)
    first = program.run(rng.standard_normal(SHAPE).astype(np.float32))
    kept = {name: a.copy() for name, a in first.items()}
    program.run(rng.standard_normal(SHAPE).astype(np.float32))
    for name, a in first.items():
        np.testing.assert_array_equal(a, kept[name], err_msg=name)


def test_a_conv_missing_from_the_plan_is_named(tmp_path):
    model = _build(_aliases)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    loaded = load_model(path)
    configs = _configs(loaded)
    del configs["other"]
    with pytest.raises(ValueError, match="no config for Conv node.*other"):
        compile_model(loaded, configs, BOARD)


@pytest.mark.parametrize("second", [False, True], ids=["alone", "also_read_nhwc"])
def test_an_image_input_is_copied_in_as_it_is_for_a_direct_first_layer(second, tmp_path):
    """A first layer on direct_nhwc reads the model's NCHW input where it was
    copied in, no transpose before it; a second convolution reading the
    input NHWC gets its own transposed copy."""
    b = GraphBuilder(seed=5, input_shape=(2, 3, 15, 13))
    y = b.conv(b.input, "rgb", 24, 3, stride=2, pads=1, bias=True, relu="rgb.relu")
    if second:
        y = b.node("Add", [y, b.conv(b.input, "also", 24, 3, stride=2, pads=1)], "sum")
    path = tmp_path / "model.onnx"
    onnx.save(b.model(y, "image"), path)
    loaded = load_model(path)
    configs = {**_configs(loaded), "rgb": ExecConfig("direct_nhwc", None, (1,), 4)}
    program = compile_model(loaded, configs, BOARD)
    x = np.random.default_rng(0).standard_normal((2, 3, 15, 13)).astype(np.float32)
    got = next(iter(program.run(x).values()))
    ref = session(path).run(None, {b.input: x})[0]
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
    (stage,) = program._stages
    assert [perm for _, _, perm in stage.imports] == [identity(4)]
    kinds = [e.kind for e in program.last_profile]
    assert kinds.count("transpose") == second, kinds
