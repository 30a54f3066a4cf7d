"""The model zoo: valid ONNX that onnxruntime runs, torchvision's ResNet layout,
and ResNetXY as the paper's Table 5 describes it."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from acltuner import zoo

# Building is slow for the big models (ResNetXY has 88 M weights): once per module.
_model = functools.cache(zoo.build)


def _run(model: onnx.ModelProto) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    return sess.run(None, {"input": x})[0]


def _convs(model: onnx.ModelProto) -> dict[str, tuple[list[int], dict]]:
    """Conv name -> (inferred output shape, attributes)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in inferred.graph.value_info}
    return {n.name: (shapes[n.output[0]], {a.name: onnx.helper.get_attribute_value(a)
                                           for a in n.attribute})
            for n in model.graph.node if n.op_type == "Conv"}


@pytest.mark.parametrize("name", list(zoo.MODELS))
def test_model_is_valid_and_runs(name):
    model = _model(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8 and model.opset_import[0].version == 13
    assert [i.name for i in model.graph.input] == ["input"]
    assert [o.name for o in model.graph.output] == ["output"]
    names = [n.name for n in model.graph.node]
    assert len(names) == len(set(names)) and all(names)
    y = _run(model)
    assert y.shape == (1, 1000)
    # He-scale weights and the damped residual branches keep the logits O(1)-ish.
    assert np.all(np.isfinite(y)) and 0.1 < np.abs(y).max() < 1e3


def test_build_is_deterministic_and_unknown_name_fails():
    assert zoo.build("resnet18").SerializeToString() == zoo.build("resnet18").SerializeToString()
    with pytest.raises(ValueError, match="unknown model 'resnet9'.*resnet18"):
        zoo.build("resnet9")


@pytest.mark.parametrize("name, params_m", [("resnet18", 11.69), ("resnet50", 25.56),
                                            ("resnet101", 44.55)])
def test_resnet_has_torchvision_layout(name, params_m):
    model = _model(name)
    # torchvision's parameter counts (BN running statistics are buffers, not parameters).
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if "running" not in t.name)
    assert params / 1e6 == pytest.approx(params_m, abs=0.01)
    convs = _convs(model)
    assert convs["conv1"][0] == [1, 64, 112, 112]
    assert convs["conv1"][1]["kernel_shape"] == [7, 7] and convs["conv1"][1]["pads"] == [3] * 4
    # The stride sits on the 3x3: conv1 of a BasicBlock, conv2 of a Bottleneck.
    strided = "layer2.0.conv1" if name == "resnet18" else "layer2.0.conv2"
    assert convs[strided][1]["kernel_shape"] == [3, 3] and convs[strided][1]["strides"] == [2, 2]
    assert convs["layer2.0.downsample.0"][1]["strides"] == [2, 2]
    assert convs["layer4.0.downsample.0"][0][2:] == [7, 7]
    ops = {n.name: n.op_type for n in model.graph.node}
    assert ops["layer1.0.bn1"] == "BatchNormalization" and ops["layer1.0.add"] == "Add"


def test_resnetxy_follows_table5():
    model = _model("resnetxy")
    convs = _convs(model)
    assert convs["conv1"][0] == [1, 51, 112, 112]
    assert convs["conv1"][1]["kernel_shape"] == [14, 14] and convs["conv1"][1]["strides"] == [2, 2]
    table = {1: (3, 56, (77, 77, 154)), 2: (4, 28, (97, 97, 194)), 3: (6, 14, (279, 279, 558)),
             4: (3, 7, (511, 511, 1022))}
    for stage, (blocks, size, channels) in table.items():
        for block in range(blocks):
            for i, (kernel, oc) in enumerate(zip((4, 6, 1), channels), start=1):
                shape, attrs = convs[f"layer{stage}.{block}.conv{i}"]
                assert attrs["kernel_shape"] == [kernel, kernel]
                # conv1 of a strided block still sees the previous stage's size.
                hw = size * 2 if i == 1 and block == 0 and stage > 1 else size
                assert shape == [1, oc, hw, hw], (stage, block, i)
    assert len(convs) == 1 + 16 * 3 + 4
    # Table 5 counts 16.35 G multiply-accumulates; the convolutions are nearly all of it.
    weights = {t.name: t.dims for t in model.graph.initializer}
    macs = sum(np.prod(shape[1:]) * np.prod(weights[f"{name}.weight"][1:])
               for name, (shape, _) in convs.items()) / 1e9
    assert macs == pytest.approx(16.35, rel=0.01), macs


def test_builder_lists_initializers_as_inputs_for_old_ir():
    from acltuner.zoo.builder import GraphBuilder
    b = GraphBuilder(input_shape=(1, 3, 8, 8), opset=7, ir_version=3)
    model = b.model(b.conv(b.input, "c", 4, 3, pads=1, bn="bn", relu="r"), "old")
    onnx.checker.check_model(model)
    assert {i.name for i in model.graph.input} == {"input"} | {
        t.name for t in model.graph.initializer}
    assert numpy_helper.to_array(model.graph.initializer[0]).dtype == np.float32
