"""`run --check`'s yardstick: a NaN or infinity in our output where
onnxruntime has a number fails the check; the same NaN or infinity in both
passes it."""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from acltuner.runtime.measure import check


def _identity_model(path) -> str:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return str(path)


def test_nan_where_the_reference_has_a_number_fails(tmp_path):
    model = _identity_model(tmp_path / "id.onnx")
    x = np.array([1, 2, 3, 4], np.float32)
    ours = {"y": np.array([1, np.nan, 3, 4], np.float32)}
    d = check(model, {"x": x}, ours, tolerance=1e-3, reference_timeout_s=30)
    assert math.isinf(d.max_rel) and not d.passed


def test_the_same_nan_and_infinity_in_both_pass(tmp_path):
    model = _identity_model(tmp_path / "id.onnx")
    x = np.array([1, np.nan, np.inf, -np.inf], np.float32)
    d = check(model, {"x": x}, {"y": x.copy()}, tolerance=1e-3, reference_timeout_s=30)
    assert d.max_rel == 0.0 and d.passed


def test_an_infinity_where_the_reference_is_finite_fails(tmp_path):
    model = _identity_model(tmp_path / "id.onnx")
    x = np.array([1, 2, 3, 4], np.float32)
    ours = {"y": np.array([1, 2, np.inf, 4], np.float32)}
    assert not check(model, {"x": x}, ours, tolerance=1e-3, reference_timeout_s=30).passed
