"""The float64 reference `run --check` judges both engines by where they
disagree: onnx's reference evaluator on the model made float64 agrees with
onnxruntime on operators the evaluator gets wrong as it ships (LRN; opset 9
BatchNormalization and Dropout), on the convolutions it runs its own way, on
a Resize's float32 scales, constants and casts, and it is float64 all
through."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from acltuner.onnx.onnxrt import session
from acltuner.runtime.reference import float64_model, reference

_SHAPE = [1, 8, 6, 6]


def _model(path, nodes, initializers, opset: int) -> None:
    graph = helper.make_graph(
        nodes, "case", [helper.make_tensor_value_info("x", TensorProto.FLOAT, _SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                ir_version=7), path)


def _opset9(path) -> None:
    """LRN, an opset 9 BatchNormalization and Dropout, a Constant float, an Upsample."""
    rng = np.random.default_rng(1)
    channel = {k: rng.uniform(0.5, 1.5, 8).astype(np.float32) for k in ("s", "b", "m", "v")}
    _model(path, [
        helper.make_node("LRN", ["x"], ["lrn"], size=5, alpha=0.2, beta=0.75, bias=1.0),
        helper.make_node("BatchNormalization", ["lrn", "s", "b", "m", "v"], ["bn"]),
        helper.make_node("Dropout", ["bn"], ["drop"], ratio=0.5),
        helper.make_node("Constant", [], ["half"], value_float=0.5),
        helper.make_node("Mul", ["drop", "half"], ["scaled"]),
        helper.make_node("Upsample", ["scaled", "scales"], ["y"], mode="nearest"),
    ], {**channel, "scales": np.array([1, 1, 2, 2], np.float32)}, 9)


def _opset13(path) -> None:
    """A Resize with float32 scales, a Cast to float, a ConstantOfShape of floats."""
    _model(path, [
        helper.make_node("Resize", ["x", "", "scales"], ["up"], mode="linear"),
        helper.make_node("Cast", ["up"], ["cast"], to=TensorProto.FLOAT),
        helper.make_node("Shape", ["cast"], ["shape"]),
        helper.make_node("ConstantOfShape", ["shape"], ["third"],
                         value=numpy_helper.from_array(np.array([1 / 3], np.float32))),
        helper.make_node("Add", ["cast", "third"], ["y"]),
    ], {"scales": np.array([1, 1, 1.5, 2], np.float32)}, 13)


def _convs(path) -> None:
    """Convolutions: dilated depthwise, strided and padded unevenly; grouped;
    SAME_UPPER padding (the evaluator's own Conv)."""
    rng = np.random.default_rng(2)
    _model(path, [
        helper.make_node("Conv", ["x", "dw", "b"], ["a"], group=8, dilations=[3, 2],
                         strides=[2, 1], pads=[3, 2, 1, 2]),
        helper.make_node("Conv", ["a", "grouped"], ["c"], group=2, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c", "same"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2]),
    ], {"dw": rng.standard_normal((8, 1, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(8).astype(np.float32),
        "grouped": rng.standard_normal((6, 4, 3, 3)).astype(np.float32),
        "same": rng.standard_normal((5, 6, 2, 2)).astype(np.float32)}, 13)


def _transposed(path) -> None:
    """Transposed convolutions (the reference's own): grouped, strided
    unevenly, dilated, padded unevenly, with output padding and a bias; then
    a depthwise one."""
    rng = np.random.default_rng(3)
    _model(path, [
        helper.make_node("ConvTranspose", ["x", "grouped", "b"], ["a"], group=2,
                         strides=[2, 3], dilations=[2, 1], pads=[1, 0, 2, 1],
                         output_padding=[1, 2]),
        helper.make_node("ConvTranspose", ["a", "dw"], ["y"], group=6, strides=[2, 2],
                         pads=[1, 1, 1, 1]),
    ], {"grouped": rng.standard_normal((8, 3, 3, 2)).astype(np.float32),
        "b": rng.standard_normal(6).astype(np.float32),
        "dw": rng.standard_normal((6, 1, 4, 4)).astype(np.float32)}, 13)


def test_the_float64_reference_agrees_with_onnxruntime(tmp_path):
    x = {"x": np.random.default_rng(0).uniform(-3, 3, _SHAPE).astype(np.float32)}
    for make in (_opset9, _opset13, _convs, _transposed):
        path = tmp_path / f"{make.__name__}.onnx"
        make(path)
        ref = reference(str(path), x, ["y"], timeout_s=120)
        assert ref.problem is None, ref.problem
        (theirs,) = session(path).run(["y"], x)
        (exact,) = ref.outputs.values()
        assert exact.dtype == np.float64 and exact.shape == theirs.shape
        assert np.max(np.abs(exact - theirs)) / np.max(np.abs(exact)) < 1e-6, make.__name__


def test_every_float32_tensor_becomes_float64_but_the_scales(tmp_path):
    path = tmp_path / "opset13.onnx"
    _opset13(path)
    model = float64_model(onnx.load(path))
    graph = model.graph
    assert {i.type.tensor_type.elem_type for i in [*graph.input, *graph.output]} == {
        TensorProto.DOUBLE}
    assert {t.name: t.data_type for t in graph.initializer} == {"scales": TensorProto.DOUBLE}
    casts = {n.output[0]: helper.get_attribute_value(n.attribute[0]) for n in graph.node
             if n.op_type == "Cast"}
    resize = next(n for n in graph.node if n.op_type == "Resize")
    assert casts.pop(resize.input[2]) == TensorProto.FLOAT  # the scales, cast back
    assert set(casts.values()) == {TensorProto.DOUBLE}
    fill = next(n for n in graph.node if n.op_type == "ConstantOfShape").attribute[0].t
    assert fill.data_type == TensorProto.DOUBLE


def test_a_model_the_evaluator_cannot_run_is_a_problem_in_one_line(tmp_path):
    path = tmp_path / "custom.onnx"
    graph = helper.make_graph(
        [helper.make_node("Frobnicate", ["x"], ["y"], domain="example.custom")], "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, _SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("example.custom", 1)],
                                ir_version=8), path)
    ref = reference(str(path), {"x": np.zeros(_SHAPE, np.float32)}, ["y"], timeout_s=120)
    assert ref.outputs is None
    assert ref.problem.startswith("onnx's reference evaluator failed: ")
    assert "\n" not in ref.problem
