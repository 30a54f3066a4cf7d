"""The model zoo: valid ONNX that onnxruntime runs, torchvision's ResNet, VGG-16,
AlexNet, GoogLeNet and MobileNetV2 layouts, timm's ConvNeXt-atto, and ResNetXY
as the paper's Table 5 describes it."""
from __future__ import annotations

import functools
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from click.testing import CliRunner
from onnx import numpy_helper

from acltuner import zoo
from acltuner.cli import main

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
    # ConvNeXt's LayerNormalization is an opset-17 operator.
    assert model.ir_version == 8
    assert model.opset_import[0].version == (17 if name == "convnext_atto" else 13)
    assert [i.name for i in model.graph.input] == ["input"]
    assert [o.name for o in model.graph.output] == ["output"]
    names = [n.name for n in model.graph.node]
    assert len(names) == len(set(names)) and all(names)
    y = _run(model)
    assert y.shape == (1, 1000)
    # He-scale weights and the damped residual branches keep the logits O(1)-ish.
    assert np.all(np.isfinite(y)) and 0.1 < np.abs(y).max() < 1e3


def test_cli_lists_the_models():
    result = CliRunner().invoke(main, ["zoo", "--list"])
    assert result.exit_code == 0 and result.output.split() == list(zoo.MODELS)
    listed = CliRunner().invoke(main, ["zoo", "--list", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.output) == {"models": list(zoo.MODELS)}


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


# --- VGG-16, AlexNet, GoogLeNet, MobileNetV2 --------------------------------------



def _params(model: onnx.ModelProto) -> int:
    """torchvision's parameter count: the weights and biases of convs, BNs and Gemms,
    not BN running statistics, Clip bounds or Dropout ratios."""
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer
               if t.name.endswith((".weight", ".bias")))


def _weight_dims(model: onnx.ModelProto, layer: str) -> list[int]:
    return next(list(t.dims) for t in model.graph.initializer if t.name == f"{layer}.weight")


# The builder's determinism; VGG-16 (138 M weights, the same layers as the
# others) would add seconds of CI for nothing more.
@pytest.mark.parametrize("name", ["alexnet", "googlenet", "mobilenetv2"])
def test_torchvision_model_builds_the_same_bytes(name):
    assert zoo.build(name).SerializeToString() == _model(name).SerializeToString()


# torchvision's num_params (GoogLeNet without its training-only aux classifiers).
@pytest.mark.parametrize("name, params", [("vgg16", 138_357_544), ("alexnet", 61_100_840),
                                          ("googlenet", 6_624_904),
                                          ("mobilenetv2", 3_504_872)])
def test_torchvision_parameter_counts(name, params):
    assert _params(_model(name)) == params


# Expected counts, by hand.  A task is a distinct (input, output, kernel, stride,
# pads, group) signature.
# VGG-16: 2 + 2 + 3 + 3 + 3 convs; a stage's first conv changes the channel count
#   (a task of its own) and its others share one task, except in stage 5, whose
#   first conv is 512->512 like the rest: 2 + 2 + 2 + 2 + 1 = 9.
# AlexNet: five convs, no two alike.
# GoogLeNet: stem 3 + 6 per Inception; tasks: stem 3, 3a 6, 3b 5 (its 1x1 and
#   3x3-reduce are both 256->128), 4a 6, 4b 6, 4c 2 (only 512->128 and the 3x3
#   128->256 are new: 4b has its 512->24, 24->64 and 512->64), 4d 4 (512->112
#   and 512->64 as in 4b), 4e 6, 5a 6 (7x7 maps: none as in 4e), 5b 5
#   (832->128 as 5a's pool projection): 49.
# MobileNetV2: stem + 2 + 16 * 3 + last 1x1 = 52.  Tasks: stem 1; block 1 2
#   (depthwise, projection); in stages 2-7 the repeated blocks share 3 (expand,
#   depthwise, projection) and the first block adds its projection, its
#   depthwise when strided (else it is the previous stage's repeated one), and
#   its expand only in stage 2 (elsewhere the previous stage's repeated expand;
#   stage 1 has none): stage 2 3 + 3, 3 2 + 3, 4 2 + 3, 5 1 + 3, 6 2 + 3,
#   7 1 + 0; last 1x1 1: 1 + 2 + 6 + 5 + 5 + 4 + 5 + 1 + 1 = 30.
@pytest.mark.parametrize("name, convs, tasks", [
    ("vgg16", 13, 9),
    ("alexnet", 5, 5),
    ("googlenet", 3 + 9 * 6, 3 + 6 + 5 + 6 + 6 + 2 + 4 + 6 + 6 + 5),
    ("mobilenetv2", 1 + 2 + 16 * 3 + 1, 1 + 2 + 6 + 5 + 5 + 4 + 5 + 1 + 1),
])
def test_torchvision_task_counts(tmp_path, name, convs, tasks):
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(_model(name), path)
    result = CliRunner().invoke(main, ["tasks", path, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["convolutions"], len(data["tasks"]), data["skipped"]) == (convs, tasks, [])


def test_vgg16_and_alexnet_have_torchvision_layout():
    stages = ((64, 224, (0, 2)), (128, 112, (5, 7)), (256, 56, (10, 12, 14)),
              (512, 28, (17, 19, 21)), (512, 14, (24, 26, 28)))
    convs = _convs(_model("vgg16"))
    assert len(convs) == 13
    for channels, size, indices in stages:
        for i in indices:
            shape, attrs = convs[f"features.{i}"]
            assert shape == [1, channels, size, size] and attrs["kernel_shape"] == [3, 3]
    assert _weight_dims(_model("vgg16"), "classifier.0") == [4096, 512 * 7 * 7]
    convs = _convs(_model("alexnet"))
    assert {name: (shape, attrs["kernel_shape"][0], attrs["strides"][0])
            for name, (shape, attrs) in convs.items()} == {
        "features.0": ([1, 64, 55, 55], 11, 4), "features.3": ([1, 192, 27, 27], 5, 1),
        "features.6": ([1, 384, 13, 13], 3, 1), "features.8": ([1, 256, 13, 13], 3, 1),
        "features.10": ([1, 256, 13, 13], 3, 1)}
    assert _weight_dims(_model("alexnet"), "classifier.1") == [4096, 256 * 6 * 6]


def test_googlenet_has_torchvision_layout():
    model = _model("googlenet")
    convs = _convs(model)
    assert convs["conv1.conv"][0] == [1, 64, 112, 112] and convs["conv3.conv"][0][2:] == [56, 56]
    # ceil_mode max pools: floor mode would give 27, 13 and 6.
    for block, size in (("3a", 28), ("4a", 14), ("5b", 7)):
        assert convs[f"inception{block}.branch1.conv"][0][2:] == [size, size]
    assert convs["inception3a.branch3.1.conv"][1]["kernel_shape"] == [3, 3]
    assert _weight_dims(model, "inception3b.branch1.conv") == [128, 256, 1, 1]
    assert _weight_dims(model, "inception4a.branch1.conv") == [192, 480, 1, 1]
    assert _weight_dims(model, "fc") == [1000, 1024]
    nodes = model.graph.node
    assert all(n.attribute[0].f == pytest.approx(1e-3)
               for n in nodes if n.op_type == "BatchNormalization")
    assert sum(n.op_type == "Concat" for n in nodes) == 9


def test_mobilenetv2_has_torchvision_layout():
    model = _model("mobilenetv2")
    convs = _convs(model)
    assert convs["features.0.0"][0] == [1, 32, 112, 112]
    # Block 1 (t = 1) starts with its depthwise conv; block 2 expands 16 -> 96 first.
    assert convs["features.1.conv.0.0"][1]["group"] == 32
    assert convs["features.2.conv.1.0"][1]["group"] == 96
    assert convs["features.2.conv.1.0"][0] == [1, 96, 56, 56]
    assert convs["features.17.conv.2"][0] == [1, 320, 7, 7]
    assert convs["features.18.0"][0] == [1, 1280, 7, 7]
    ops = [n.op_type for n in model.graph.node]
    # A residual in each repeated block of stages 2-6: 1 + 2 + 3 + 2 + 2.
    assert ops.count("Add") == 10 and ops.count("Clip") == 52 - 17


def test_convnext_has_timm_layout():
    """timm's convnext_atto: 3.7 M parameters, 17 LayerNorms (stem, 3
    downsamples, 12 blocks, head), 12 depthwise 7x7 convolutions."""
    model = _model("convnext_atto")
    params = sum(numpy_helper.to_array(t).size for t in model.graph.initializer
                 if numpy_helper.to_array(t).ndim)  # the GELUs' scalars are no parameters
    assert abs(params / 1e6 - 3.70) < 0.01
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("LayerNormalization") == 17 and ops.count("Erf") == 12
    depthwise = [(shape, a) for shape, a in _convs(model).values() if a["group"] > 1]
    assert len(depthwise) == 12 and all(a["kernel_shape"] == [7, 7] for _, a in depthwise)
