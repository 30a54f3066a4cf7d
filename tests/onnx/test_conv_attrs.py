"""ONNX Conv and ConvTranspose attributes -> engine shapes, checked against
onnx.reference's and onnxruntime's output sizes."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from acltuner.onnx.conv_attrs import ConvAttributeError, conv_model, conv_shape, drop_padding_taps
from tests.support.conv_oracle import ort_conv, reference_conv


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("size,kernel,stride,dilation", [(7, 3, 2, 1), (8, 4, 3, 1), (9, 3, 1, 2),
                                                          (5, 2, 2, 1)])
def test_auto_pad_matches_onnx_reference(auto_pad, size, kernel, stride, dilation):
    node = helper.make_node("Conv", ["X", "W"], ["Y"], auto_pad=auto_pad,
                            strides=[stride, stride], dilations=[dilation, dilation])
    x = np.random.default_rng(0).uniform(-1, 1, (1, 2, size, size + 1)).astype(np.float32)
    w = np.random.default_rng(1).uniform(-1, 1, (3, 2, kernel, kernel)).astype(np.float32)
    shape = conv_shape(node, x.shape, w.shape)
    from onnx import TensorProto, numpy_helper
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "W")])
    from onnx.reference import ReferenceEvaluator
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    expected = ReferenceEvaluator(model).run(None, {"X": x})[0]
    assert shape.output_shape == (1, expected.shape[2], expected.shape[3], 3)
    ours = reference_conv(shape, x.transpose(0, 2, 3, 1), w)
    np.testing.assert_allclose(ours, expected.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_errors_name_the_node():
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="conv7", kernel_shape=[5, 5])
    with pytest.raises(ConvAttributeError, match="conv7.*kernel_shape"):
        conv_shape(node, (1, 3, 8, 8), (4, 3, 3, 3))
    with pytest.raises(ConvAttributeError, match="'conv7': only 1-D and 2-D"):
        conv_shape(node, (1, 3, 8, 8, 8), (4, 3, 3, 3, 3))
    grouped = helper.make_node("Conv", ["X", "W"], ["Y"], name="g", group=2)
    with pytest.raises(ConvAttributeError, match="'g'.*group=2"):
        conv_shape(grouped, (1, 3, 8, 8), (4, 3, 3, 3))


def test_conv_model_roundtrip_uses_every_attribute():
    node = helper.make_node("Conv", ["X", "W"], ["Y"], strides=[2, 1], dilations=[1, 2],
                            pads=[0, 1, 2, 3], group=2)
    shape = conv_shape(node, (2, 4, 9, 10), (6, 2, 3, 2))
    assert (shape.stride_h, shape.stride_w, shape.dil_h, shape.dil_w) == (2, 1, 1, 2)
    assert (shape.pad_top, shape.pad_left, shape.pad_bottom, shape.pad_right) == (0, 1, 2, 3)
    built = conv_model(shape, np.zeros((6, 2, 3, 2), np.float32), None).graph.node[0]
    assert conv_shape(built, (2, 4, 9, 10), (6, 2, 3, 2)) == shape


@pytest.mark.parametrize("attrs", [
    {"auto_pad": "SAME_UPPER"}, {"auto_pad": "SAME_LOWER"}, {"auto_pad": "VALID"},
    {"output_shape": [11, 8]}, {"output_shape": [9, 6], "auto_pad": "SAME_UPPER"},
    {"output_shape": [8, 5], "auto_pad": "SAME_LOWER"}, {"output_shape": [13, 8]},
    {"pads": [1, 0, 2, 1], "output_padding": [1, 1]}, {"auto_pad": "SAME_UPPER", "strides": [1, 3]},
])
def test_conv_transpose_output_size_and_pads_match_onnxruntime(attrs):
    """auto_pad and output_shape give the pads (and output padding) onnxruntime uses."""
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper
    attrs = {"strides": [3, 2], "dilations": [1, 2], **attrs}
    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], **attrs)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 2, 4, 3)).astype(np.float32)
    w = np.random.default_rng(1).uniform(-1, 1, (2, 3, 3, 2)).astype(np.float32)
    shape = conv_shape(node, x.shape, w.shape)
    assert shape.transposed and shape.weight_shape == w.shape
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"X": x})[0].transpose(0, 2, 3, 1)
    assert shape.output_shape == expected.shape
    ours = ort_conv(shape, x.transpose(0, 2, 3, 1), w)  # through explicit pads
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


def test_conv_transpose_weight_names_its_channels():
    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], name="up1", group=2)
    with pytest.raises(ConvAttributeError, match="ConvTranspose node 'up1'.*3 input channels"):
        conv_shape(node, (1, 4, 8, 8), (3, 2, 3, 3))
    assert conv_shape(node, (1, 4, 8, 8), (4, 3, 3, 3)).oc == 6


@pytest.mark.parametrize("size,kernel,stride,dilation,pads,kept", [
    (24, 3, 1, 36, (36, 36, 36, 36), (1, 1)),  # DeepLab's ASPP at rate 36: the centre tap
    (24, 3, 1, 24, (24, 24, 24, 24), (1, 3)),  # at 24 (the map is 25 wide)
    (24, 3, 1, 12, (12, 12, 12, 12), (3, 3)),  # at 12 every tap reads the map somewhere
    (6, 5, 1, 2, (4, 4, 4, 4), (5, 5)),        # a dilated depthwise 5x5 on a small map
    (5, 5, 2, 3, (9, 2, 1, 7), (2, 3)),        # strided, pads unequal on every side
    (6, 3, 1, 4, (4, 4, 0, 0), (2, 2)),        # padded on one side only
    (4, 3, 1, 5, (5, 0, 2, 6), (3, 3)),        # a cut that would need negative pads
    (7, 4, 3, 1, (3, 3, 3, 3), (4, 4)),        # even kernel, stride 3
])
def test_drop_padding_taps_keeps_the_output(size, kernel, stride, dilation, pads, kept):
    node = helper.make_node("Conv", ["X", "W"], ["Y"], strides=[stride, stride],
                            dilations=[dilation, dilation], pads=list(pads))
    x = np.random.default_rng(0).uniform(-1, 1, (1, size, size + 1, 4)).astype(np.float32)
    w = np.random.default_rng(1).uniform(-1, 1, (3, 4, kernel, kernel)).astype(np.float32)
    shape = conv_shape(node, (1, 4, size, size + 1), w.shape)
    cut, w_cut = drop_padding_taps(shape, w)
    assert (cut.kh, cut.kw) == kept and cut.out_hw == shape.out_hw
    assert w_cut.shape == cut.weight_shape
    assert (cut.dil_h, cut.dil_w) == tuple(1 if k == 1 else dilation for k in kept)
    np.testing.assert_allclose(reference_conv(cut, x, w_cut), reference_conv(shape, x, w),
                               rtol=1e-5, atol=1e-5)
