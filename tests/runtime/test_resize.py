"""Resize and Upsample in whole models: Conv -> Resize -> Conv models of every
opset's form (Resize 10, 11, 13, 18, 19, Upsample 7 and 9; scales, sizes,
sizes computed from shapes, opset 18's axes) through `acltuner tune --strategy
default` and `acltuner run --check`: the resizes run natively and match
onnxruntime.  The forms the engine does not cover stay delegated.  (The
operation itself, every coordinate and rounding mode, is in
test_graph_ops.py.)"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from acltuner.app.run import CHECK_TOLERANCE
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import default_plan, run_check

SHAPE = (2, 4, 10, 10)


def _features(b: GraphBuilder) -> str:
    return b.conv(b.input, "features", 8, 3, pads=1, bias=True, relu="features.relu")


def _scales(b: GraphBuilder, name: str, h: float, w: float) -> str:
    return b.constant(name, np.array([1, 1, h, w], np.float32))


def _no_roi(b: GraphBuilder) -> str:
    return b.constant("roi", np.zeros(0, np.float32))


def _yolo_neck(b):
    """PyTorch's nn.Upsample(scale_factor=2), as YOLO necks export it."""
    return b.node("Resize", [_features(b), "", _scales(b, "s", 2, 2)], "up", mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def _bilinear_fractional(b):
    """F.interpolate(scale_factor=(1.5, 2.5), mode="bilinear"), and a linear
    shrink to a size (align_corners)."""
    y = b.node("Resize", [_features(b), "", _scales(b, "s", 1.5, 2.5)], "up", mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")
    return b.node("Resize", [y, "", "", b.constant("sz", np.array([2, 8, 7, 9]))], "down",
                  mode="linear", coordinate_transformation_mode="align_corners")


def _opset11_sizes(b):
    """Opset 11 exports: an empty roi and scales beside the sizes."""
    roi = _no_roi(b)
    empty = b.constant("empty", np.zeros(0, np.float32))
    y = b.node("Resize", [_features(b), roi, empty,
                          b.constant("sz", np.array([2, 8, 17, 23]))], "up", mode="nearest",
               coordinate_transformation_mode="tf_half_pixel_for_nn",
               nearest_mode="round_prefer_ceil")
    return b.node("Resize", [y, roi, _scales(b, "s", 0.5, 0.5)], "down",
                  mode="nearest", coordinate_transformation_mode="half_pixel")


def _opset10(b):
    """Resize-10: asymmetric coordinates, nearest truncating up and rounding
    up down."""
    y = b.node("Resize", [_features(b), _scales(b, "s", 2, 3)], "up", mode="nearest")
    y = b.node("Resize", [y, _scales(b, "s2", 0.5, 0.75)], "down", mode="nearest")
    return b.node("Resize", [y, _scales(b, "s3", 1.5, 0.5)], "mixed", mode="linear")


def _upsample7(b):
    y = b.node("Upsample", [_features(b)], "up", mode="nearest", scales=[1.0, 1.0, 2.0, 3.0])
    return b.node("Upsample", [y], "up_linear", mode="linear", scales=[1.0, 1.0, 1.5, 1.0])


def _upsample9(b):
    y = b.node("Upsample", [_features(b), _scales(b, "s", 2, 2)], "up", mode="linear")
    return b.node("Upsample", [y, _scales(b, "s2", 3, 1)], "up_nearest", mode="nearest")


def _opset18_axes(b):
    """Scales and sizes for the spatial axes only."""
    y = b.node("Resize", [_features(b), "", b.constant("s", np.array([2.0, 1.5], np.float32))],
               "up", mode="nearest", axes=[2, 3], coordinate_transformation_mode="half_pixel",
               nearest_mode="round_prefer_ceil")
    return b.node("Resize", [y, "", "", b.constant("sz", np.array([13, 11]))], "down",
                  mode="linear", axes=[-2, -1], keep_aspect_ratio_policy="stretch")


def _fpn(b):
    """A top-down FPN merge: the coarse map resized to the fine map's size,
    computed from its Shape (loading folds it into a constant)."""
    fine = _features(b)
    coarse = b.conv(fine, "coarse", 8, 3, stride=2, pads=1)
    hw = b.node("Slice", [b.node("Shape", [fine], "shape"), b.constant("two", np.array([2])),
                          b.constant("four", np.array([4]))], "hw")
    nc = b.node("Slice", [b.node("Shape", [coarse], "shape_c"), b.constant("zero", np.array([0])),
                          b.constant("two_", np.array([2]))], "nc")
    sizes = b.node("Concat", [nc, hw], "sizes", axis=0)
    up = b.node("Resize", [coarse, "", "", sizes], "up", channels=8, mode="nearest")
    return b.add(fine, up, "merge")


def _nchw_layout(b):
    """A map rebuilt by Reshape from a Gemm's rows is in ONNX order: resized
    in place as [N*C, H, W, 1] without a transpose first."""
    flat = b.flatten(b.global_avg_pool(_features(b), "gap"), "flat")
    rows = b.node("Reshape", [b.gemm(flat, "fc", 48), b.constant("shape", np.array([2, 3, 4, 4]))],
                  "map", channels=3)
    return b.node("Resize", [rows, "", _scales(b, "s", 2.5, 1.75)], "up", mode="linear")


# name: (builder, opset)
NATIVE = {
    "yolo_neck": (_yolo_neck, 13), "bilinear_fractional": (_bilinear_fractional, 13),
    "opset11_sizes": (_opset11_sizes, 11), "opset10": (_opset10, 10),
    "upsample7": (_upsample7, 7), "upsample9": (_upsample9, 9),
    "opset18_axes": (_opset18_axes, 18), "opset19_axes": (_opset18_axes, 19),
    "fpn_sizes_from_shape": (_fpn, 13),
}


def _model(make, opset: int, path) -> None:
    b = GraphBuilder(seed=3, input_shape=SHAPE, opset=opset)
    y = b.conv(make(b), "after", 4, 3, pads=1)
    onnx.save(b.model(y, "resize"), path)


def test_nchw_map_is_resized_without_a_transpose_first(tmp_path):
    path = tmp_path / "nchw.onnx"
    _model(_nchw_layout, 13, path)
    report = run_check(default_plan(path, tmp_path), "--profile")
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE
    kinds = [n["kind"] for n in report["nodes"]]
    # The one transpose is the NHWC copy the last Conv needs, after the resize.
    assert sum(k == "transpose" for k in kinds) == 1
    assert "linear resize 4x4 -> 10x7" in kinds


def test_upsampled_model_output_is_resized_in_onnx_order(tmp_path):
    """A segmentation head's last Resize writes the model's output: its small
    input goes to ONNX's order, so the output leaves with a plain copy, and
    the planar path covers rows wider than its column chunk (600 > 512)."""
    b = GraphBuilder(seed=5, input_shape=(1, 3, 12, 40), opset=13)
    y = b.node("Resize", [b.conv(b.input, "logits", 5, 3, pads=1), "", _scales(b, "s", 4, 15)],
               "up", mode="linear", coordinate_transformation_mode="half_pixel")
    path = tmp_path / "head.onnx"
    onnx.save(b.model(y, "head"), path)
    report = run_check(default_plan(path, tmp_path), "--profile")
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE
    kinds = [n["kind"] for n in report["nodes"]]
    assert "linear resize 12x40 -> 48x600" in kinds
    # One transpose: the logits (5 x 12 x 40) into ONNX's order, not the output.
    assert [n["node"] for n in report["nodes"] if n["kind"] == "transpose"] == [
        "logits (layout)"]


def _cubic(b):
    return b.node("Resize", [_features(b), "", _scales(b, "s", 2, 2)], "up", mode="cubic")


def _channels_resized(b):
    return b.node("Resize", [_features(b), "", b.constant("s", np.array([1, 0.5, 2, 2],
                                                                        np.float32))],
                  "up", channels=4, mode="nearest")


def _antialiased(b):
    return b.node("Resize", [_features(b), "", _scales(b, "s", 0.5, 0.5)], "down",
                  mode="linear", antialias=1)


def _crop_and_resize(b):
    roi = b.constant("roi", np.array([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7], np.float32))
    return b.node("Resize", [_features(b), roi, _scales(b, "s", 2, 2)], "up", mode="linear",
                  coordinate_transformation_mode="tf_crop_and_resize")


def _not_larger(b):
    return b.node("Resize", [_features(b), "", "", b.constant("sz", np.array([15, 30]))], "up",
                  mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_larger")


DELEGATED = {
    "cubic": (_cubic, 13), "channels_resized": (_channels_resized, 13),
    "antialias": (_antialiased, 18), "tf_crop_and_resize": (_crop_and_resize, 13),
    "keep_aspect_ratio": (_not_larger, 18),
}


@pytest.mark.parametrize("name", [*NATIVE, *DELEGATED])
def test_resize_matches_onnxruntime_natively_or_delegated(name, tmp_path):
    """The engine's forms run natively; the others stay with onnxruntime."""
    make, opset = NATIVE.get(name) or DELEGATED[name]
    path = tmp_path / f"{name}.onnx"
    _model(make, opset, path)
    report = run_check(default_plan(path, tmp_path))
    assert [d["op_types"] for d in report["delegated"]] == ([] if name in NATIVE else [["Resize"]])
    assert report["max_rel_diff"] <= CHECK_TOLERANCE
