"""int8 tasks of quantized models: onnxruntime's quantize_static (QDQ with
per-channel weights, and QOperator's QLinearConv) on a tiny float model built
here, and hand-written QDQ graphs for what quantize_static does not write (a
Relu it kept, float weights, uint8 weights)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

from acltuner.onnx.graph import OnnxGraph
from acltuner.onnx.model import load_model, read_model
from acltuner.taskgen.int8 import generate_int8_tasks, int8_conv_nodes
from acltuner.taskgen.tasks import generate_tasks
from tests.support.conv_oracle import ort_conv

RNG = np.random.default_rng(29)
X = [1, 3, 8, 8]


def _float_model(path: Path) -> Path:
    """x -> Conv 3x3 (bias) -> Relu -> Conv 1x1 -> Clip(0, 6) -> Conv 1x1 -> y:
    the two 1x1 convolutions share a shape."""
    init = {"w1": RNG.standard_normal((8, 3, 3, 3)), "b1": RNG.standard_normal(8),
            "w2": RNG.standard_normal((8, 8, 1, 1)), "w3": RNG.standard_normal((8, 8, 1, 1)),
            "lo": np.array(0.0), "hi": np.array(6.0)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
             helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"], name="clip2"),
             helper.make_node("Conv", ["r2", "w3"], ["y"], name="conv3")]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in init.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


class _Batches(CalibrationDataReader):
    def __init__(self):
        self.batches = iter([{"x": RNG.standard_normal(X).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def _quantized(tmp_path: Path, fmt=QuantFormat.QDQ, weights=QuantType.QInt8) -> Path:
    out = tmp_path / f"q-{fmt.name}-{weights.name}.onnx"
    quantize_static(str(_float_model(tmp_path / "f32.onnx")), str(out), _Batches(),
                    quant_format=fmt, per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=weights)
    return out


@pytest.fixture(scope="module")
def qdq(tmp_path_factory) -> Path:
    return _quantized(tmp_path_factory.mktemp("qdq"))


def _nodes(path: Path):
    return int8_conv_nodes(read_model(path), OnnxGraph(load_model(path)))


def test_qdq_convolutions_are_int8_tasks(qdq):
    tasks, skipped = generate_int8_tasks(qdq)
    assert skipped == []
    assert [(t.key, t.nodes) for t in tasks] == [
        ("n1.c3.h8.w8-oc8-k3x3-s1x1-p1.1.1.1-d1x1-g1-qu8s8u8", ["conv1"]),
        ("n1.c8.h8.w8-oc8-k1x1-s1x1-p0.0.0.0-d1x1-g1-qu8s8u8", ["conv2", "conv3"])]
    assert tasks[0].flops == 2 * 8 * 8 * 8 * 27 and tasks[1].flops == 2 * 2 * 8 * 8 * 8 * 8


def test_qdq_records_dtypes_scales_and_zero_points(qdq):
    nodes, _ = _nodes(qdq)
    raw = {t.name: numpy_helper.to_array(t) for t in read_model(qdq).graph.initializer}
    conv1 = nodes[0]
    assert (conv1.name, conv1.pattern) == ("conv1", "qdq")
    assert (conv1.input.dtype, conv1.weight.dtype, conv1.output.dtype) == ("u8", "s8", "u8")
    assert conv1.weight.scale.shape == (8,) and not conv1.weight.zero_point.any()
    np.testing.assert_array_equal(conv1.weight_q, raw["w1_quantized"])
    np.testing.assert_array_equal(conv1.weight.scale, raw["w1_scale"])
    assert conv1.input.scale == raw["x_scale"] and conv1.input.zero_point == raw["x_zero_point"]
    assert conv1.bias_q.dtype == np.int32
    np.testing.assert_array_equal(conv1.bias_q, raw["b1_quantized"])
    # The Relu and Clip went into the outputs' ranges: the Relu's zero point is 0.
    assert conv1.shape.act == "none" and conv1.output.zero_point == 0
    assert conv1.nodes == ["conv1", "x_DequantizeLinear", "w1_DequantizeLinear",
                           "b1_DequantizeLinear", "r1_QuantizeLinear"]
    assert nodes[1].bias_q is None and len(nodes[1].nodes) == 4


def test_qdq_parameters_reproduce_onnxruntime(qdq, tmp_path):
    """conv1 in integers with the recorded parameters, requantized with ties to
    even, against onnxruntime's own uint8 output of the quantized model."""
    conv1 = _nodes(qdq)[0][0]
    model = onnx.load(qdq)
    model.graph.output.extend([helper.make_tensor_value_info(t, TensorProto.UINT8, None)
                               for t in (conv1.input_name, conv1.output_name)])
    x = RNG.standard_normal(X).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x_q, y_q = sess.run([conv1.input_name, conv1.output_name], {"x": x})
    centred = (x_q.astype(np.float32) - conv1.input.zero_point).transpose(0, 2, 3, 1)
    acc = ort_conv(conv1.shape, centred, conv1.weight_q.astype(np.float32),
                   conv1.bias_q.astype(np.float32)).transpose(0, 3, 1, 2)
    scale = (conv1.input.scale * conv1.weight.scale / conv1.output.scale).reshape(1, -1, 1, 1)
    ours = np.clip(np.rint(acc * scale) + conv1.output.zero_point, 0, 255)
    diff = np.abs(ours - y_q.astype(np.float64))
    assert len(np.unique(y_q)) > 20  # not a saturated or constant output
    assert diff.max() <= 1 and np.mean(diff == 0) > 0.95


def test_qlinearconv_is_an_int8_task(tmp_path):
    path = _quantized(tmp_path, QuantFormat.QOperator)
    nodes, skipped = _nodes(path)
    assert skipped == [] and [n.pattern for n in nodes] == ["qlinearconv"] * 3
    assert nodes[0].weight.scale.shape == (8,) and nodes[0].bias_q.dtype == np.int32
    tasks, _ = generate_int8_tasks(path)
    assert [t.nodes for t in tasks] == [[nodes[0].name], [nodes[1].name, nodes[2].name]]


def test_uint8_weights_are_no_int8_task(tmp_path):
    _, skipped = generate_int8_tasks(_quantized(tmp_path, weights=QuantType.QUInt8))
    assert len(skipped) == 3 and all("uint8 weight, not int8" in line for line in skipped)


def _hand_qdq(path: Path, weight_q: bool, act: str) -> Path:
    """QuantizeLinear -> DequantizeLinear -> Conv (float bias) -> act -> QuantizeLinear ->
    DequantizeLinear, the weight int8 through a DequantizeLinear or float."""
    w = RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    init = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
            numpy_helper.from_array(np.array(128, np.uint8), "z"),
            numpy_helper.from_array(np.full(4, 0.01, np.float32), "ws"),
            numpy_helper.from_array(np.zeros(4, np.int8), "wz"),
            numpy_helper.from_array(np.array([0.0, 0.0005, -0.001, 0.01], np.float32), "b"),
            numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
            numpy_helper.from_array(np.array(3.0, np.float32), "hi")]
    if weight_q:
        init.append(numpy_helper.from_array(w, "wq"))
        wdq = [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0,
                                name="dq_w")]
    else:
        init.append(numpy_helper.from_array(w.astype(np.float32) * 0.01, "w"))
        wdq = []
    act_nodes = {"relu": [helper.make_node("Relu", ["c"], ["a"], name="act")],
                 "clip": [helper.make_node("Clip", ["c", "lo", "hi"], ["a"], name="act")]}[act]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_x"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_x"), *wdq,
             helper.make_node("Conv", ["xd", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             *act_nodes,
             helper.make_node("QuantizeLinear", ["a", "s", "z"], ["yq"], name="q_y"),
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["y"], name="dq_y")]
    graph = helper.make_graph(nodes, "hand", [helper.make_tensor_value_info("x", 1, X)],
                              [helper.make_tensor_value_info("y", 1, None)], init)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.parametrize("act, fields", [("relu", ("relu", 0.0, 0.0)),
                                         ("clip", ("clip", 0.0, 3.0))])
def test_a_kept_relu_or_clip_is_fused(tmp_path, act, fields):
    (node,), skipped = _nodes(_hand_qdq(tmp_path / "m.onnx", True, act))
    assert skipped == []
    assert (node.shape.act, node.shape.act_min, node.shape.act_max) == fields
    assert node.nodes == ["conv", "dq_x", "dq_w", "act", "q_y"]
    assert (node.input_name, node.output_name) == ("xq", "yq")
    # The float bias in units of 0.05 * 0.01, rounded half to even (0.0005 / 0.0005 = 1).
    assert node.bias_q.tolist() == [0, 1, -2, 20]


def test_float_weights_are_skipped_with_the_reason(tmp_path):
    nodes, skipped = _nodes(_hand_qdq(tmp_path / "m.onnx", False, "relu"))
    assert nodes == [] and skipped == [
        "Conv node 'conv': its weight is not a DequantizeLinear of an int8 initializer"]


def test_a_float_model_has_no_int8_tasks_and_its_fp32_tasks_stay(tmp_path):
    path = _float_model(tmp_path / "f32.onnx")
    assert generate_int8_tasks(path) == ([], [])
    assert [t.nodes for t in generate_tasks(path).tasks] == [["conv1"], ["conv2", "conv3"]]
