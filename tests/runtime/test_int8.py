"""Quantized models at run time: small float models quantized with
onnxruntime's quantize_static (QDQ, per-channel int8 weights, uint8
activations, a random calibration set) run natively, their convolutions as
conv_int8 and every QuantizeLinear / DequantizeLinear a native operation, and
agree with onnxruntime's own int8 session.

The bound, in steps of the output's quantization (its DequantizeLinear's
scale): at most one step.  Why it holds:
  - conv_int8 computes what onnxruntime's QLinearConv (which its optimiser
    makes of DQ -> Conv -> Q) computes: exact integer sums, the per-channel
    scale x_scale * w_scale / y_scale in float, acc * scale rounded to
    nearest even; quantize is QuantizeLinear's division and rounding.  So a
    model of convolutions alone gives the same bytes (the tests see 0 steps);
  - an Add between quantized tensors is a quantized_add here (the sum of
    the dequantized values in double, quantized), where onnxruntime fuses it
    into QLinearAdd, which folds the scales differently: a sum landing
    within a float rounding of a half-step may round to the neighbouring
    step.  The model with a residual
    Add ends on it, so that step is the output's, not amplified by a later
    convolution.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

from acltuner.app.run import CHECK_TOLERANCE
from acltuner.armnn_default import armnn_default
from acltuner.board.registry import load_board
from acltuner.engine import native
from acltuner.engine.graph import Graph
from acltuner.engine.launcher import LauncherClient
from acltuner.engine.launcher_graph import LauncherGraph
from acltuner.onnx.fold import constant_dequantized
from acltuner.onnx.graph import OnnxGraph, conv_nodes
from acltuner.onnx.model import load_model, load_model_detached
from acltuner.runtime import compile_model
from acltuner.runtime.program import NativeRunner
from acltuner.runtime.load import int8_nodes
from acltuner.runtime import measure
from acltuner.runtime.measure import check
from acltuner.runtime.reference import reference
from acltuner.runtime.quant_steps import Step, output_steps
from acltuner.taskgen.int8 import int8_conv_nodes
from acltuner.taskgen.tasks import signature

BOARD = load_board("split-host")
SHAPE = (1, 8, 12, 12)


class _Calibration(CalibrationDataReader):
    def __init__(self, name: str, shape: tuple[int, ...], seed: int):
        rng = np.random.default_rng(seed)
        self._batches = iter([{name: rng.standard_normal(shape).astype(np.float32)}
                              for _ in range(8)])

    def get_next(self):
        return next(self._batches, None)


class _Model:
    """A float model built node by node, its weights random."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.shape = SHAPE

    def conv(self, x: str, cin: int, cout: int, k: int, *, group: int = 1, stride: int = 1,
             pads: tuple[int, int, int, int] | None = None, bias: bool = True) -> str:
        name = f"conv{len(self.nodes)}"
        w = self.rng.normal(0, 1 / np.sqrt(cin // group * k * k), (cout, cin // group, k, k))
        self.inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        if bias:
            self.inits.append(numpy_helper.from_array(
                self.rng.normal(0, 0.1, cout).astype(np.float32), f"{name}_b"))
        p = pads if pads is not None else (k // 2,) * 4
        inputs = [x, f"{name}_w", *([f"{name}_b"] if bias else [])]
        self.nodes.append(helper.make_node("Conv", inputs, [name],
                                           name=name, group=group, strides=[stride, stride],
                                           pads=list(p), kernel_shape=[k, k]))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        name = f"{op_type.lower()}{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    def quantized(self, tmp_path, outputs: list[str], **extra) -> str:
        """The model saved, quantized as users do, and that file's path."""
        graph = helper.make_graph(
            self.nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape)],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(model, tmp_path / "float.onnx")
        quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "int8.onnx"),
                        _Calibration("x", self.shape, 1), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, extra_options=extra)
        return str(tmp_path / "int8.onnx")


def _configs(model: onnx.ModelProto, weights) -> dict:
    ukernels = [uk.__dict__ for uk in native.ukernels()]
    clusters = [list(c.cpus) for c in BOARD.clusters]
    speeds = [c.capacity or c.max_freq_mhz for c in BOARD.clusters]
    return {c.name: armnn_default(signature(c.shape), clusters, speeds, BOARD.ncores, ukernels,
                                  native.isa(), native.uses_ukernel, native.check)
            for c in conv_nodes(model, weights)[0]}


def _output_steps(path: str, seed: int = 3):
    """The native program and, per output, the largest difference from
    onnxruntime's int8 session in steps of that output's quantization."""
    model, weights = load_model_detached(path, None)
    int8 = int8_nodes(path, model, weights)
    program = compile_model(model, _configs(model, weights), BOARD, weights=weights, int8=int8)
    x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32) * 1.5
    ours = program.run({"x": x})
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    theirs = dict(zip([o.name for o in session.get_outputs()], session.run(None, {"x": x})))
    raw = onnx.load(path)
    scales = {n.output[0]: numpy_helper.to_array(next(i for i in raw.graph.initializer
                                                      if i.name == n.input[1]))
              for n in raw.graph.node if n.op_type == "DequantizeLinear"}
    # An output no DequantizeLinear makes (a float op's): its plain difference.
    steps = {name: float(np.abs(ours[name] - theirs[name]).max() / scales.get(name, 1.0))
             for name in ours}
    return program, steps


def _kinds(program) -> list[str]:
    program.run({"x": np.zeros(SHAPE, np.float32)})
    return [e.op for e in program.last_profile]


def _check(program, steps: dict[str, float], convs: int, bound: float = 0.0,
           float_convs: int = 0) -> None:
    """No Q/DQ node (nor any other) delegated, `convs` convolutions int8 and
    `float_convs` float, and the outputs within `bound` steps (a float
    rounding's slack)."""
    assert program.delegated == []
    kinds = _kinds(program)
    assert kinds.count("conv_int8") == convs and kinds.count("conv") == float_convs, kinds
    for name, s in steps.items():
        assert s <= bound + 1e-3, f"output {name}: {s} quantization steps from onnxruntime's"


def test_dequantized_weights_are_detached_as_onnxruntime_computes_them(tmp_path):
    """Loading folds each weight's DequantizeLinear into a float weight, which
    goes into the weights dict like a float model's, not into the model: inline,
    every shape inference after the fold copied it (light_resnet50 in int8
    peaked at 657 MB, against 156 for its float model)."""
    m = _Model()
    path = m.quantized(tmp_path, [m.conv(m.conv("x", SHAPE[1], 16, 3), 16, 24, 1)])
    model, weights = load_model_detached(path, None)
    raw = onnx.load(path)
    dequantize = [n for n in raw.graph.node if n.op_type == "DequantizeLinear"
                  and any(i.name == n.input[0] and i.data_type == TensorProto.INT8
                          for i in raw.graph.initializer)]
    assert len(dequantize) == 2
    sub = helper.make_model(helper.make_graph(
        dequantize, "w", [], [helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None)
                              for n in dequantize],
        [i for i in raw.graph.initializer if i.name in {t for n in dequantize for t in n.input}]),
        opset_imports=raw.opset_import)
    expected = ort.InferenceSession(sub.SerializeToString(), providers=["CPUExecutionProvider"]
                                    ).run(None, {})
    for n, want in zip(dequantize, expected):
        assert np.array_equal(weights[n.output[0]], want), n.output[0]
    floats = [t for t in model.graph.initializer if t.data_type == TensorProto.FLOAT]
    assert all(t.data_location == TensorProto.EXTERNAL or np.prod(t.dims) <= 16 for t in floats)
    assert model.ByteSize() < 2048


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_constant_dequantize_gives_onnxruntimes_bits_with_zero_points(dtype):
    """The fold's DequantizeLinear, per channel with zero points over the
    type's whole range, bit for bit onnxruntime's."""
    rng, info = np.random.default_rng(0), np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (32, 3, 3, 3), endpoint=True).astype(dtype)
    zero = rng.integers(info.min, info.max, 32, endpoint=True).astype(dtype)
    scale = (rng.random(32) * 0.1 + 1e-4).astype(np.float32)
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0)
    model = helper.make_model(helper.make_graph(
        [node], "dq", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, n) for n, v in (("x", x), ("s", scale), ("z", zero))]),
        opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {})[0]
    assert np.array_equal(constant_dequantized(node, {"x": x, "s": scale, "z": zero}), want)


@pytest.mark.parametrize("case", ["3x3", "1x1", "stride2", "pads", "depthwise", "grouped"])
def test_single_convolution_matches_onnxruntime(tmp_path, case):
    m = _Model()
    c = SHAPE[1]
    if case == "3x3":
        y = m.conv("x", c, 16, 3)
    elif case == "1x1":
        y = m.conv("x", c, 24, 1)
    elif case == "stride2":
        y = m.conv("x", c, 16, 3, stride=2, pads=(0, 0, 0, 0))
    elif case == "pads":
        y = m.conv("x", c, 16, 3, pads=(2, 0, 1, 2))
    elif case == "depthwise":
        y = m.conv("x", c, c, 3, group=c)
    else:
        y = m.conv("x", c, 16, 3, group=2)
    program, steps = _output_steps(m.quantized(tmp_path, [y]))
    if case == "grouped":  # a float convolution (quant.int8_chain): a float rounding's step
        _check(program, steps, convs=0, bound=1.0, float_convs=1)
    else:
        _check(program, steps, convs=1)


def test_relu_removed_by_the_quantizer(tmp_path):
    """quantize_static folds a Relu into its output's range: the int8
    convolution's output clamps at the zero point as onnxruntime's does."""
    m = _Model()
    y = m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)])
    program, steps = _output_steps(m.quantized(tmp_path, [y]))
    _check(program, steps, convs=1)


@pytest.mark.parametrize("act", ["Relu", "Clip"])
def test_fused_relu_and_clip_kept_in_the_model(tmp_path, act):
    """DQ -> Conv -> Relu | Clip -> Q (the activation kept between the Conv
    and its QuantizeLinear): fused into conv_int8 as a uint8 clamp."""
    m = _Model()
    conv = m.conv("x", SHAPE[1], 16, 3)
    if act == "Relu":
        y = m.op("Relu", [conv])
    else:
        m.inits += [numpy_helper.from_array(np.float32(-0.2), "lo"),
                    numpy_helper.from_array(np.float32(0.3), "hi")]
        y = m.op("Clip", [conv, "lo", "hi"])
    path = m.quantized(tmp_path, [y], QDQKeepRemovableActivations=True)
    # The quantizer gives the activation's input no QuantizeLinear of its
    # own: take the pair it put between the Conv and the activation out.
    model = onnx.load(path)
    between = [n for n in model.graph.node if conv in n.input and n.op_type == "QuantizeLinear"]
    if between:
        q = between[0]
        dq = next(n for n in model.graph.node if q.output[0] in n.input)
        for n in model.graph.node:
            n.input[:] = [conv if t == dq.output[0] else t for t in n.input]
        model.graph.node.remove(q)
        model.graph.node.remove(dq)
        onnx.save(model, path)
    act_node = next(n for n in onnx.load(path).graph.node if n.op_type == act)
    assert act_node.input[0] == conv
    program, steps = _output_steps(path)
    _check(program, steps, convs=1)
    assert not any(k == "unary" for k in _kinds(program))  # the activation was fused


def test_two_convolutions_stay_uint8_between(tmp_path):
    """The tensor between two int8 convolutions is never dequantized: its
    DequantizeLinear does not run."""
    m = _Model()
    y = m.conv(m.conv("x", SHAPE[1], 16, 3), 16, 12, 3, stride=2)
    program, steps = _output_steps(m.quantized(tmp_path, [y]))
    _check(program, steps, convs=2)
    kinds = _kinds(program)
    assert kinds.count("dequantize") == 1 and kinds.count("quantize") == 1, kinds


def test_the_image_is_quantized_into_nhwc_in_one_pass(tmp_path):
    """The model's NCHW input comes into the arena as it is and its
    QuantizeLinear writes the NHWC bytes the convolution reads: no float
    transpose, in the copy in or as a node."""
    m = _Model()
    y = m.conv("x", SHAPE[1], 16, 3)
    program, steps = _output_steps(m.quantized(tmp_path, [y]))
    _check(program, steps, convs=1)
    assert "transpose" not in _kinds(program)
    (stage,) = [s for s in program._stages if isinstance(s, NativeRunner)]
    assert [(name, perm) for name, _, perm in stage.imports] == [("x", (0, 1, 2, 3))]


def test_residual_add(tmp_path):
    """A residual Add between two int8 convolutions' outputs runs on their
    uint8 tensors (quantized_add): neither input is dequantized, only the
    model's output is; one step of slack (the module's docstring)."""
    m = _Model()
    a = m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)])
    b = m.conv(a, 16, 16, 3, group=16)
    y = m.op("Add", [a, b])
    program, steps = _output_steps(m.quantized(tmp_path, [y]))
    _check(program, steps, convs=2, bound=1.0)
    kinds = _kinds(program)
    assert "quantized_add" in kinds and "binary" not in kinds, kinds
    assert kinds.count("dequantize") == 1, kinds


def test_max_pool_between_int8_convolutions(tmp_path):
    """DQ -> MaxPool -> Q of one quantization runs on the uint8 tensor: the
    same bytes as onnxruntime's (0 steps), nothing dequantized but the output."""
    m = _Model()
    pooled = m.op("MaxPool", [m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)])],
                  kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = m.conv(pooled, 16, 8, 1)
    program, steps = _output_steps(m.quantized(tmp_path, [y]))
    _check(program, steps, convs=2)
    program.run({"x": np.zeros(SHAPE, np.float32)})
    pools = [e.kind for e in program.last_profile if e.op == "pool"]
    assert pools == ["max pool 3x3 (uint8)"], pools
    assert _kinds(program).count("dequantize") == 1


def test_stage_boundary_keeps_int8(tmp_path):
    """A node run by onnxruntime (Floor) between a quantized tensor and the
    int8 convolution reading it: the tensor's float form is left for the
    next stage, which quantizes it back (the same bytes), and no Q/DQ node
    is delegated."""
    m = _Model()
    a = m.conv("x", SHAPE[1], 16, 3)
    floor = m.op("Floor", [a])
    y = m.conv(a, 16, 8, 1)
    path = m.quantized(tmp_path, [floor, y])
    program, steps = _output_steps(path)
    delegated = [op for d in program.delegated for op in d.op_types]
    assert delegated == ["Floor"]
    assert _kinds(program).count("conv_int8") == 2
    assert steps[y] == 0.0


def test_runs_inside_the_launcher(tmp_path):
    """The same program built in a launcher (its graph requests carry the
    int8 weights as base64 floats) gives the in-process program's bytes,
    a convolution without a bias included (its bias is null in the request)."""
    m = _Model()
    a = m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)])
    y = m.conv(m.op("Add", [a, m.conv(a, 16, 16, 3, group=16)]), 16, 8, 1, bias=False)
    path = m.quantized(tmp_path, [y])
    x = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)
    outputs = []
    with LauncherClient() as client:
        for make_graph in (Graph, functools.partial(LauncherGraph, client)):
            model, weights = load_model_detached(path, None)
            program = compile_model(model, _configs(model, weights), BOARD, weights=weights,
                                    int8=int8_nodes(path, model, weights), make_graph=make_graph)
            outputs.append(program.run({"x": x})[y])
    assert np.array_equal(outputs[0], outputs[1])


def test_weight_scale_of_zero_runs_in_float(tmp_path):
    """A weight scale conv_int8 would refuse (0: a channel of zero weights,
    as some tools write it) leaves that convolution in float, as written:
    nothing delegated, and the result still onnxruntime's."""
    m = _Model()
    y = m.conv(m.conv("x", SHAPE[1], 16, 3), 16, 8, 1)
    path = m.quantized(tmp_path, [y])
    model = onnx.load(path)
    first = next(n for n in model.graph.node if n.op_type == "Conv")
    dq_w = next(n for n in model.graph.node if n.output[0] == first.input[1])
    scale = next(i for i in model.graph.initializer if i.name == dq_w.input[1])
    values = numpy_helper.to_array(scale).copy()
    values[3] = 0.0
    scale.CopyFrom(numpy_helper.from_array(values, scale.name))
    onnx.save(model, path)
    program, steps = _output_steps(path)
    assert program.delegated == []
    kinds = _kinds(program)
    assert kinds.count("conv") == 1 and kinds.count("conv_int8") == 1, kinds
    assert steps[y] <= 1.0 + 1e-3  # the float convolution's output quantized: one step


def test_run_check_judges_quantized_outputs_in_steps(tmp_path):
    """`run --check` on an int8 model: an output a DequantizeLinear makes is
    compared with onnxruntime's int8 session in steps of its scale, one step
    passing (a rounding of a sum near a half-step), two failing; the same
    outputs relative to their largest value would fail at the first."""
    m = _Model()
    a = m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)])
    y = m.op("Add", [a, m.conv(a, 16, 16, 3, group=16)])
    path = m.quantized(tmp_path, [y])
    model, weights = load_model_detached(path, None)
    program = compile_model(model, _configs(model, weights), BOARD, weights=weights,
                            int8=int8_nodes(path, model, weights))
    inputs = {"x": np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)}
    ours = program.run(inputs)
    step = output_steps(path)[y]
    assert step.scale.size == 1
    diff = check(path, inputs, ours, CHECK_TOLERANCE, reference_timeout_s=60)
    assert diff.passed and diff.max_steps is not None and diff.max_steps <= 1 + 1e-3

    # onnxruntime's own output, moved by whole steps at one element.
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run([y], inputs)[0]
    for moved, passes in ((1, True), (2, False)):
        off = theirs.copy()
        off.flat[7] += moved * float(step.scale[0])
        judged = check(path, inputs, {y: off}, CHECK_TOLERANCE, reference_timeout_s=60)
        assert judged.max_steps == pytest.approx(moved, abs=1e-3)
        assert judged.passed == passes
        assert judged.max_rel > CHECK_TOLERANCE  # relative to the largest, one step fails


def test_run_check_judges_many_steps_by_the_float64_reference(tmp_path, monkeypatch):
    """Two outputs more than a step apart: the quantized model run in float64
    says which engine is nearer (a gate's narrow range turns one step of a
    rounding into many).  Ours passes when it is no more steps from that
    reference than onnxruntime's output is, and fails when it is more."""
    m = _Model()
    y = m.conv(m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)]), 16, 8, 1)
    path = m.quantized(tmp_path, [y])
    inputs = {"x": np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32)}
    exact = reference(path, inputs, [y], timeout_s=60).outputs[y].astype(np.float32)
    step = float(output_steps(path)[y].scale[0])

    def moved(at: int, steps: int) -> np.ndarray:
        out = exact.copy()
        out.flat[at] += steps * step
        return out

    class Session:  # onnxruntime's int8 session, its output given
        def __init__(self, out):
            self.out = out

        def run(self, names, feed):
            return [self.out]

    for ours, theirs, passes in ((exact, moved(3, 4), True), (moved(9, 3), moved(3, 3), True),
                                 (moved(9, 3), moved(3, 2), False)):
        monkeypatch.setattr(measure, "session", lambda _path, out=theirs: Session(out))
        diff = check(path, inputs, {y: ours}, CHECK_TOLERANCE, reference_timeout_s=60)
        assert diff.max_steps is not None and diff.max_steps > 1
        judged = diff.steps64
        assert judged is not None and judged.ours is not None
        assert judged.ours == pytest.approx(np.abs(ours - exact).max() / step, abs=1e-3)
        assert judged.onnxruntime == pytest.approx(np.abs(theirs - exact).max() / step, abs=1e-3)
        assert diff.passed == passes


def test_a_per_channel_step_scales_each_channel():
    step = Step(np.array([0.5, 2.0], np.float32), axis=1)
    ours = np.zeros((1, 2, 3), np.float32)
    theirs = ours.copy()
    theirs[0, 1, 2] = 3.0  # 1.5 steps of channel 1
    assert step.steps(ours, theirs) == pytest.approx(1.5)
    theirs[0, 0, 0] = 1.0  # 2 steps of channel 0
    assert step.steps(ours, theirs) == pytest.approx(2.0)
    assert Step(np.array([0.5, 2.0]), axis=-2).steps(ours, theirs) == pytest.approx(2.0)


def test_add_of_a_tensor_left_in_an_earlier_stage(tmp_path):
    """A quantized Add whose input's uint8 tensor stayed in the stage before a
    delegated node (Floor) runs as written: that input's float form (the
    stage's last dequantize), a float Add and a quantize, within a step."""
    def q_dq(x: str, scale: float, zp: int) -> list[onnx.NodeProto]:
        return [helper.make_node("QuantizeLinear", [x, f"s{scale}", f"z{zp}"], [f"{x}_q"]),
                helper.make_node("DequantizeLinear", [f"{x}_q", f"s{scale}", f"z{zp}"],
                                 [f"{x}_dq"])]
    nodes = [*q_dq("x", 0.02, 128), helper.make_node("Floor", ["x_dq"], ["f"]),
             *q_dq("f", 0.05, 100), helper.make_node("Add", ["x_dq", "f_dq"], ["y"]),
             *q_dq("y", 0.06, 110)]
    inits = [numpy_helper.from_array(np.float32(s), f"s{s}") for s in (0.02, 0.05, 0.06)] + \
        [numpy_helper.from_array(np.uint8(z), f"z{z}") for z in (128, 100, 110)]
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y_dq", TensorProto.FLOAT, SHAPE)], inits)
    path = tmp_path / "stages.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    model, weights = load_model_detached(str(path), None)
    program = compile_model(model, {}, BOARD, weights=weights, int8=[])
    assert [op for d in program.delegated for op in d.op_types] == ["Floor"]
    inputs = {"x": np.random.default_rng(2).standard_normal(SHAPE).astype(np.float32)}
    diff = check(str(path), inputs, program.run(inputs), CHECK_TOLERANCE, 60)
    assert diff.max_steps is not None and diff.max_steps <= 1 + 1e-3
    kinds = _kinds(program)
    assert "binary" in kinds and "quantized_add" not in kinds, kinds


def test_concat_of_int8_convolutions(tmp_path):
    """DQs -> Concat -> Q (GhostNet's, Inception's) runs on the uint8
    tensors, each input of another scale requantized as a dequantize and a
    quantize would: no dequantize but the output's, within a step of
    onnxruntime's QLinearConcat."""
    m = _Model()
    a = m.op("Relu", [m.conv("x", SHAPE[1], 8, 3)])
    b = m.conv("x", SHAPE[1], 12, 1)
    y = m.conv(m.op("Concat", [a, b], axis=1), 20, 8, 1)
    path = m.quantized(tmp_path, [y])
    program, steps = _output_steps(path)
    _check(program, steps, convs=3, bound=1.0)
    program.run({"x": np.zeros(SHAPE, np.float32)})
    concats = [e.kind for e in program.last_profile if e.op == "concat"]
    assert concats == ["concat (uint8)"], concats
    assert _kinds(program).count("dequantize") == 1


@pytest.mark.parametrize("op", ["Gemm", "MatMul"])
def test_fully_connected_layer_runs_as_conv_int8(tmp_path, op):
    """A classifier's DQ(x), DQ(W) -> Gemm (transB, a bias) or MatMul (K x N
    weights, scales along axis 1; its rows the 8 rows of a Reshape) -> Q runs
    as conv_int8 of a 1x1 kernel on the rows: no float matmul, no
    dequantize but the output's, and onnxruntime's bytes (its QGemm and
    QLinearMatMul sum in integers and requantize as conv_int8 does)."""
    m = _Model()
    k = math.prod(SHAPE[1:])
    if op == "Gemm":
        rows, features = 1, m.op("Flatten", ["x"], axis=1)
        w = m.rng.normal(0, 1 / np.sqrt(k), (10, k))
        m.inits += [numpy_helper.from_array(w.astype(np.float32), "fc_w"),
                    numpy_helper.from_array(m.rng.normal(0, 0.1, 10).astype(np.float32), "fc_b")]
        y = m.op("Gemm", [features, "fc_w", "fc_b"], transB=1)
    else:
        rows = 8
        m.inits.append(numpy_helper.from_array(np.array([rows, k // rows], np.int64), "rows"))
        features = m.op("Reshape", ["x", "rows"])
        w = m.rng.normal(0, 1 / np.sqrt(k // rows), (k // rows, 24))
        m.inits.append(numpy_helper.from_array(w.astype(np.float32), "fc_w"))
        y = m.op("MatMul", [features, "fc_w"])
    path = m.quantized(tmp_path, [y])
    (fc,), _ = int8_conv_nodes(onnx.load(path), OnnxGraph(load_model(path)))
    assert fc.pattern == "qdq-fc" and fc.shape.n == rows and fc.shape.h == fc.shape.w == 1
    program, steps = _output_steps(path)
    _check(program, steps, convs=1)
    assert "matmul" not in _kinds(program)
    assert [e.op for e in program.last_profile if e.node == fc.name] == ["conv_int8"]
