"""Task generator: model loading, BN folding and epilogue fusion (checked
numerically against onnxruntime), task grouping, and the `acltuner tasks` command."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from acltuner import zoo
from acltuner.app.run import CHECK_TOLERANCE
from acltuner.cli import main
from acltuner.engine import native
from acltuner.onnx.activation import FLT_MAX
from acltuner.onnx.graph import conv_nodes
from acltuner.onnx.model import ModelError, load_model
from acltuner.taskgen.tasks import generate_tasks
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import default_plan, run_check
from tests.support.conv_oracle import rel_err

TOL = 1e-4
PYTORCH_CONVERTED = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data",
                                 "pytorch-converted")


@pytest.fixture(scope="module")
def zoo_path(tmp_path_factory):
    """name -> path of the zoo model saved once for the module."""
    root, paths = tmp_path_factory.mktemp("zoo"), {}

    def get(name: str) -> str:
        if name not in paths:
            paths[name] = str(root / f"{name}.onnx")
            onnx.save(zoo.build(name), paths[name])
        return paths[name]
    return get


def _tasks_cli(*args):
    return CliRunner().invoke(main, ["tasks", *args], catch_exceptions=False)


def _save(model: onnx.ModelProto, tmp_path, name: str = "m.onnx") -> str:
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


# Expected counts, by hand.  BasicBlock nets: stem + 2 convs per block + one
# downsample in each of stages 2-4; tasks: stem, stage 1's 3x3, and per later
# stage the strided 3x3, the plain 3x3 and the downsample.  Bottleneck nets:
# stem + 3 convs per block + 4 downsamples; tasks: stem, stage 1's four
# (1x1 64->64, 3x3, 1x1 64->256 = its downsample, 1x1 256->64) and six per
# later stage (first 1x1, strided 3x3, last 1x1, downsample, the other blocks'
# first 1x1 and 3x3).  ResNetXY: stage 1's downsample (51->154) differs from
# its last conv (77->154), so one task more than ResNet-50.
@pytest.mark.parametrize("name, convs, tasks", [
    ("resnet18", 1 + 8 * 2 + 3, 1 + 1 + 3 * 3),
    ("resnet50", 1 + 16 * 3 + 4, 1 + 4 + 3 * 6),
    ("resnet101", 1 + 33 * 3 + 4, 1 + 4 + 3 * 6),
    ("resnetxy", 1 + 16 * 3 + 4, 1 + 5 + 3 * 6),
])
def test_zoo_task_counts(zoo_path, name, convs, tasks):
    result = _tasks_cli(zoo_path(name), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["convolutions"], len(data["tasks"])) == (convs, tasks)
    assert data["model"] == zoo_path(name) and data["skipped"] == []
    rows = data["tasks"]
    assert sum(t["nodes"] for t in rows) == convs
    assert all(t["nodes"] == len(t["node_names"]) for t in rows)
    assert len({t["key"] for t in rows}) == tasks
    assert [t["flops"] for t in rows] == sorted((t["flops"] for t in rows), reverse=True)
    assert sum(t["share"] for t in rows) == pytest.approx(100.0)
    assert all("reference" not in t["algorithms"] and "im2col" in t["algorithms"] for t in rows)


def test_resnet18_tasks_and_table(zoo_path):
    ts = generate_tasks(zoo_path("resnet18"))
    first = ts.tasks[0]
    # Same shape, different epilogues (Relu; residual Add + Relu): one task.
    assert first.key == "n1.c64.h56.w56-oc64-k3x3-s1x1-p1.1.1.1-d1x1-g1"
    assert first.nodes == ["layer1.0.conv1", "layer1.0.conv2", "layer1.1.conv1",
                           "layer1.1.conv2"]
    assert first.flops == 4 * first.shape.flops == 4 * 2 * 56 * 56 * 64 * 64 * 9
    assert "winograd_4x4_3x3" in first.algorithms and "gemm1x1" not in first.algorithms
    for t in ts.tasks:
        assert t.shape.act == "none" and not t.shape.has_residual
        for a in t.algorithms:
            uks = [uk.name for uk in native.ukernels()] if native.uses_ukernel(a) else [None]
            assert any(native.check(t.shape, a, uk) is None for uk in uks)
    out = _tasks_cli(zoo_path("resnet18")).stdout.splitlines()
    assert out[0].split() == ["key", "nodes", "GFLOPs", "share%", "kinds", "algorithms"]
    assert out[1].split()[:3] == [first.key, "4", f"{first.flops / 1e9:.3f}"]
    assert out[-1] == ("20 convolutions -> 11 tasks; 1 product (MatMul or Gemm), tuned in the "
                       "whole model")


# --- numerics: each ConvNode through the engine's reference algorithm -----------

def _intermediates(model: onnx.ModelProto, feeds: dict, names: set[str]) -> dict:
    """Values of the named tensors, by running onnxruntime with them as graph outputs."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    have = {o.name for o in model.graph.output} | set(feeds)
    model.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                              for n in sorted(names - have))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in model.graph.output]
    return {**feeds, **dict(zip(wanted, sess.run(wanted, feeds)))}


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _check_numerics(model: onnx.ModelProto, nodes, input_shape) -> None:
    feeds = {"input": np.random.default_rng(1).standard_normal(input_shape).astype(np.float32)}
    names = {t for n in nodes for t in (n.input, n.output, n.residual) if t}
    values = _intermediates(model, feeds, names)
    for node in nodes:
        residual = _nhwc(values[node.residual]) if node.residual else None
        with native.Conv(node.shape, "reference", None, node.weight, node.bias) as conv:
            y, _ = conv.run(_nhwc(values[node.input]), (1,), 1, residual)
        err = rel_err(y, _nhwc(values[node.output]))
        assert err <= TOL, f"{node.name} (fused {node.fused}): relative error {err:.2e}"


def test_resnet18_fusion_is_numerically_right(zoo_path):
    model = load_model(zoo_path("resnet18"))
    nodes, skipped = conv_nodes(model)
    assert len(nodes) == 20 and not skipped
    by_name = {n.name: n for n in nodes}
    assert by_name["conv1"].fused == ["bn1", "relu"] and by_name["conv1"].output == "relu"
    block = by_name["layer1.0.conv2"]
    assert block.fused == ["layer1.0.bn2", "layer1.0.add", "layer1.0.relu2"]
    assert block.residual == "maxpool" and block.shape.has_residual and block.shape.act == "relu"
    # The downsample's BN output feeds the Add, which layer2.0.conv2 has claimed.
    down = by_name["layer2.0.downsample.0"]
    assert down.fused == ["layer2.0.downsample.1"] and down.shape.act == "none"
    assert by_name["layer2.0.conv2"].residual == "layer2.0.downsample.1"
    assert all(n.bias is not None and n.weight.dtype == np.float32 for n in nodes)
    _check_numerics(model, nodes, (1, 3, 224, 224))


def _custom_graph() -> onnx.ModelProto:
    b = GraphBuilder(seed=3, input_shape=(1, 8, 10, 10))
    a = b.conv(b.input, "conv_bn_relu", 8, 3, pads=1, bias=True, bn="bn_a", relu="relu_a")
    # A residual written as a Sum of two tensors (Caffe2's exports).
    s = b.node("Relu", [b.node("Sum", [b.conv(a, "conv_add", 8, 3, pads=1), a], "add_b")],
               "relu_b")
    c = b.node("Clip", [b.conv(s, "conv_clip", 8, 1), b.constant("lo", np.float32(-0.5)),
                        b.constant("hi", np.float32(0.7))], "clip_c")
    half = b.node("Clip", [b.conv(c, "conv_clip_max", 8, 1), "", b.constant("six", 6.0)], "clip_m")
    # The conv output also feeds a Sigmoid: BN and Relu must stay out.
    d = b.conv(half, "conv_shared", 8, 3, pads=(0, 1, 2, 1))
    e = b.node("Relu", [b.batchnorm(d, "bn_d")], "relu_d")
    f = b.add(e, b.node("Sigmoid", [d], "sig_d"), "add_f")
    # Add of two convolutions: only the first one absorbs it.
    g = b.add(b.conv(f, "conv_left", 8, 3, stride=2, pads=1),
              b.conv(f, "conv_right", 8, 1, stride=2), "add_g")
    # A conv output that is also a graph output: its Relu must not be fused.
    h = b.conv(g, "conv_out", 4, 3, pads="SAME_UPPER")
    model = b.model(b.node("Relu", [h], "relu_out"), "custom")
    model.graph.output.append(helper.make_tensor_value_info(h, TensorProto.FLOAT, None))
    return model


def test_custom_graph_fusion_is_numerically_right(tmp_path):
    model = load_model(_save(_custom_graph(), tmp_path))
    nodes, skipped = conv_nodes(model)
    got = {n.name: (n.fused, n.shape.act, n.residual) for n in nodes}
    assert got == {
        "conv_bn_relu": (["bn_a", "relu_a"], "relu", None),
        "conv_add": (["add_b", "relu_b"], "relu", "relu_a"),
        "conv_clip": (["clip_c"], "clip", None),
        "conv_clip_max": (["clip_m"], "clip", None),
        "conv_shared": ([], "none", None),
        "conv_left": (["add_g"], "none", "conv_right"),
        "conv_right": ([], "none", None),
        "conv_out": ([], "none", None),
    }
    by_name = {n.name: n for n in nodes}
    assert (by_name["conv_clip"].shape.act_min, by_name["conv_clip"].shape.act_max) == \
        pytest.approx((-0.5, 0.7))
    assert (by_name["conv_clip_max"].shape.act_min, by_name["conv_clip_max"].shape.act_max) == \
        (-FLT_MAX, 6.0)
    shared = by_name["conv_shared"].shape
    assert (shared.pad_top, shared.pad_left, shared.pad_bottom, shared.pad_right) == (0, 1, 2, 1)
    assert by_name["conv_out"].shape.pad_bottom == 1 and not skipped
    _check_numerics(model, nodes, (1, 8, 10, 10))


def _activations_graph() -> onnx.ModelProto:
    """A conv followed by each activation the engine fuses, as exporters write them."""
    b = GraphBuilder(seed=4, input_shape=(1, 8, 9, 9), opset=18)
    x = b.node("LeakyRelu", [b.conv(b.input, "conv_leaky", 8, 3, pads=1)], "leaky", alpha=0.1)
    x = b.node("PRelu", [b.conv(x, "conv_prelu", 8, 1), b.constant("slope", np.float32(0.25))],
               "prelu")
    x = b.node("HardSigmoid", [b.conv(x, "conv_hsig", 8, 1)], "hsig", alpha=0.3, beta=0.4)
    x = b.node("HardSwish", [b.conv(x, "conv_hswish", 8, 3, pads=1)], "hswish")
    x = b.node("Sigmoid", [b.conv(x, "conv_sig", 8, 1)], "sig")
    x = b.node("Mish", [b.conv(x, "conv_mish", 8, 1)], "mish")
    c = b.conv(x, "conv_silu", 8, 3, pads=1)
    x = b.node("Mul", [c, b.node("Sigmoid", [c], "silu_gate")], "silu")
    c = b.conv(x, "conv_gated_hswish", 8, 1)
    x = b.node("Mul", [b.node("HardSigmoid", [c], "hs_gate", alpha=1 / 6, beta=0.5), c], "hs")
    c = b.conv(x, "conv_mish_parts", 8, 1)
    tanh = b.node("Tanh", [b.node("Softplus", [c], "softplus")], "tanh")
    x = b.node("Mul", [c, tanh], "mish_parts")
    # x * clip(x + 3, 0, 6) / 6, and x * (clip(x + 3, 0, 6) * (1 / 6))
    three, zero, six = (b.constant(n, np.float32(v)) for n, v in (("three", 3), ("zero", 0),
                                                                     ("six", 6)))
    c = b.conv(x, "conv_clip_hswish", 8, 3, pads=1)
    clip = b.node("Clip", [b.node("Add", [c, three], "cs_add"), zero, six], "cs_clip")
    x = b.node("Div", [b.node("Mul", [c, clip], "cs_mul"), six], "cs_div")
    c = b.conv(x, "conv_clip_hsig_gate", 8, 1)
    clip = b.node("Clip", [b.node("Add", [c, three], "cg_add"), zero, six], "cg_clip")
    gate = b.node("Mul", [clip, b.constant("sixth", np.float32(1 / 6))], "cg_scale")
    x = b.node("Mul", [gate, c], "cg_mul")
    # A per-channel PRelu is no activation of the engine's: it stays out.
    c = b.conv(x, "conv_prelu_channels", 8, 1)
    slopes = b.constant("slopes", np.linspace(0.1, 0.8, 8, dtype=np.float32).reshape(8, 1, 1))
    return b.model(b.node("PRelu", [c, slopes], "prelu_channels"), "activations")


def test_every_engine_activation_is_fused_and_numerically_right(tmp_path):
    path = Path(_save(_activations_graph(), tmp_path))
    model = load_model(path)
    nodes, _ = conv_nodes(model)
    got = {n.name: (n.fused, n.shape.act, round(n.shape.act_alpha, 6), round(n.shape.act_beta, 6))
           for n in nodes}
    assert got == {
        "conv_leaky": (["leaky"], "leaky_relu", 0.1, 0.0),
        "conv_prelu": (["prelu"], "leaky_relu", 0.25, 0.0),
        "conv_hsig": (["hsig"], "hard_sigmoid", 0.3, 0.4),
        "conv_hswish": (["hswish"], "hard_swish", round(1 / 6, 6), 0.5),
        "conv_sig": (["sig"], "sigmoid", 0.0, 0.0),
        "conv_mish": (["mish"], "mish", 0.0, 0.0),
        "conv_silu": (["silu_gate", "silu"], "silu", 0.0, 0.0),
        "conv_gated_hswish": (["hs_gate", "hs"], "hard_swish", round(1 / 6, 6), 0.5),
        "conv_mish_parts": (["softplus", "tanh", "mish_parts"], "mish", 0.0, 0.0),
        "conv_clip_hswish": (["cs_add", "cs_clip", "cs_mul", "cs_div"], "hard_swish",
                             round(1 / 6, 6), 0.5),
        "conv_clip_hsig_gate": (["cg_add", "cg_clip", "cg_scale", "cg_mul"], "hard_swish",
                                round(1 / 6, 6), 0.5),
        "conv_prelu_channels": ([], "none", 0.0, 0.0),
    }
    _check_numerics(model, nodes, (1, 8, 9, 9))
    # The whole model, per-channel PRelu included, runs natively.
    report = run_check(default_plan(path, tmp_path))
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE


def _gelu_graph() -> onnx.ModelProto:
    """Convolutions each followed by GELU as an exporter writes it: the erf form
    x * 0.5 * (1 + erf(x / sqrt 2)) with the product in each order exporters
    use and the scaling as Div or Mul, the tanh form with x^3 as Pow and as
    two Muls, opset 20's Gelu op in both modes, and after a BatchNormalization
    and an Identity."""
    b = GraphBuilder(seed=5, input_shape=(1, 8, 7, 7), opset=20)
    k = {n: b.constant(n, np.float32(v)) for n, v in (
        ("sqrt2", np.sqrt(2.0)), ("rsqrt2", 1 / np.sqrt(2.0)), ("one", 1.0), ("half", 0.5),
        ("three", 3.0), ("kappa", 0.044715), ("beta", np.sqrt(2 / np.pi)))}
    # PyTorch and Paddle: ((x * (1 + erf(x / sqrt 2))) * 0.5
    c = b.conv(b.input, "conv_erf_torch", 8, 3, pads=1)
    e = b.node("Add", [b.node("Erf", [b.node("Div", [c, k["sqrt2"]], "t_div")], "t_erf"),
                       k["one"]], "t_add")
    x = b.node("Mul", [b.node("Mul", [c, e], "t_mul"), k["half"]], "t_half")
    # (x * 0.5) * (1 + erf(x * (1 / sqrt 2))), constants first
    c = b.conv(x, "conv_erf_half_first", 8, 1)
    half = b.node("Mul", [k["half"], c], "h_half", channels=8)
    scaled = b.node("Mul", [k["rsqrt2"], c], "h_scale", channels=8)
    e = b.node("Add", [k["one"], b.node("Erf", [scaled], "h_erf")], "h_add", channels=8)
    x = b.node("Mul", [e, half], "h_mul")
    # x * ((1 + erf(x / sqrt 2)) * 0.5)
    c = b.conv(x, "conv_erf_half_inner", 8, 1)
    e = b.node("Add", [b.node("Erf", [b.node("Div", [c, k["sqrt2"]], "i_div")], "i_erf"),
                       k["one"]], "i_add")
    x = b.node("Mul", [c, b.node("Mul", [e, k["half"]], "i_half")], "i_mul")
    # The tanh form with Pow, then with x * (x * x) as PyTorch writes it
    c = b.conv(x, "conv_tanh_pow", 8, 3, pads=1)
    cube = b.node("Mul", [b.node("Pow", [c, k["three"]], "p_cube"), k["kappa"]], "p_kappa")
    u = b.node("Mul", [b.node("Add", [c, cube], "p_inner"), k["beta"]], "p_beta")
    e = b.node("Add", [b.node("Tanh", [u], "p_tanh"), k["one"]], "p_add")
    x = b.node("Mul", [b.node("Mul", [c, e], "p_mul"), k["half"]], "p_half")
    c = b.conv(x, "conv_tanh_muls", 8, 1)
    cube = b.node("Mul", [c, b.node("Mul", [c, c], "m_square")], "m_cube")
    inner = b.node("Add", [c, b.node("Mul", [k["kappa"], cube], "m_kappa", channels=8)], "m_inner")
    u = b.node("Mul", [k["beta"], inner], "m_beta", channels=8)
    e = b.node("Add", [k["one"], b.node("Tanh", [u], "m_tanh")], "m_add", channels=8)
    x = b.node("Mul", [k["half"], b.node("Mul", [c, e], "m_mul")], "m_half", channels=8)
    x = b.node("Gelu", [b.conv(x, "conv_gelu_op", 8, 1)], "gelu_op")
    x = b.node("Gelu", [b.conv(x, "conv_gelu_op_tanh", 8, 1)], "gelu_op_tanh",
               approximate="tanh")
    # Paddle's: BatchNormalization, an Identity (a cast to float32), then GELU
    c = b.node("Identity", [b.conv(x, "conv_bn_cast", 8, 1, bn="c_bn")], "c_cast")
    e = b.node("Add", [b.node("Erf", [b.node("Div", [c, k["sqrt2"]], "c_div")], "c_erf"),
                       k["one"]], "c_add")
    x = b.node("Mul", [b.node("Mul", [c, e], "c_mul"), k["half"]], "c_half")
    # x read by something else too: no GELU to fuse, the nodes run as they are.
    c = b.conv(x, "conv_shared", 8, 1)
    e = b.node("Add", [b.node("Erf", [b.node("Div", [c, k["sqrt2"]], "s_div")], "s_erf"),
                       k["one"]], "s_add")
    g = b.node("Mul", [b.node("Mul", [c, e], "s_mul"), k["half"]], "s_half")
    return b.model(b.node("Add", [g, c], "s_residual"), "gelus")


def test_gelu_in_every_exporters_form_is_fused(tmp_path):
    path = Path(_save(_gelu_graph(), tmp_path))
    model = load_model(path)
    nodes, _ = conv_nodes(model)
    got = {n.name: (n.fused, n.shape.act) for n in nodes}
    assert got == {
        "conv_erf_torch": (["t_div", "t_erf", "t_add", "t_mul", "t_half"], "gelu"),
        "conv_erf_half_first": (["h_scale", "h_erf", "h_add", "h_half", "h_mul"], "gelu"),
        "conv_erf_half_inner": (["i_div", "i_erf", "i_add", "i_half", "i_mul"], "gelu"),
        "conv_tanh_pow": (["p_cube", "p_kappa", "p_inner", "p_beta", "p_tanh", "p_add",
                           "p_mul", "p_half"], "gelu_tanh"),
        "conv_tanh_muls": (["m_square", "m_cube", "m_kappa", "m_inner", "m_beta", "m_tanh",
                            "m_add", "m_mul", "m_half"], "gelu_tanh"),
        "conv_gelu_op": (["gelu_op"], "gelu"),
        "conv_gelu_op_tanh": (["gelu_op_tanh"], "gelu_tanh"),
        "conv_bn_cast": (["c_bn", "c_cast", "c_div", "c_erf", "c_add", "c_mul", "c_half"],
                         "gelu"),
        "conv_shared": ([], "none"),
    }
    _check_numerics(model, nodes, (1, 8, 7, 7))
    report = run_check(default_plan(path, tmp_path))
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE


def test_conv_transpose_fusion_and_tasks_are_right(tmp_path):
    """A decoder: grouped 4x4/2 ConvTranspose with bias, BN and Relu folded in (the
    scale per output channel of the (c, oc/group, k, k) weight), then a 2x2/2 one
    with output padding adding a skip connection."""
    b = GraphBuilder(seed=4, input_shape=(1, 8, 6, 5))
    x = b.conv(b.input, "enc", 8, 3, stride=2, pads=1, relu="enc.relu")
    up = b.conv_transpose(x, "up1", 12, 4, 2, pads=1, group=2, bias=True, bn="up1.bn",
                          relu="up1.relu")
    skip = b.conv(b.input, "skip", 6, (1, 1), stride=1)
    skip = b.node("Pad", [skip, b.constant("pads", np.array([0, 0, 3, 4, 0, 0, 4, 4]))], "pad")
    up2 = b.add(b.conv_transpose(up, "up2", 6, 2, 2, output_padding=1), skip, "add")
    model = load_model(_save(b.model(up2, "decoder"), tmp_path))
    nodes, skipped = conv_nodes(model)
    by_name = {n.name: n for n in nodes}
    assert not skipped and by_name["up1"].fused == ["up1.bn", "up1.relu"]
    assert by_name["up2"].fused == ["add"] and by_name["up2"].residual == "pad"
    s1, s2 = by_name["up1"].shape, by_name["up2"].shape
    assert s1.transposed and (s1.group, s1.oc, s1.output_shape) == (2, 12, (1, 6, 6, 12))
    assert (s2.out_pad_h, s2.out_pad_w, s2.output_shape) == (1, 1, (1, 13, 13, 6))
    _check_numerics(model, nodes, (1, 8, 6, 5))
    ts = generate_tasks(_save(b.model(up2, "decoder"), tmp_path))
    keys = {t.nodes[0]: t.key for t in ts.tasks}
    assert keys["up1"] == "n1.c8.h3.w3-oc12-k4x4-s2x2-p1.1.1.1-d1x1-g2-t-o0x0"
    assert keys["up2"].endswith("-g1-t-o1x1") and keys["enc"].endswith("-g1")
    algorithms = {t.nodes[0]: t.algorithms for t in ts.tasks}
    assert set(algorithms["up1"]) == {"deconv_col2im", "deconv_phase"}
    assert not {"deconv_col2im", "deconv_phase"} & set(algorithms["enc"])


def test_affine_chains_are_absorbed(tmp_path):
    """Paddle exports a bias or a scale as its own Add or Mul of a constant: any
    chain of per-channel constants (any broadcastable shape) and BatchNormalization
    folds in, then the activation; a constant that varies over pixels stays out."""
    b = GraphBuilder(seed=6, input_shape=(1, 8, 6, 6))
    rng = np.random.default_rng(6)
    x = b.conv(b.input, "conv", 8, 3, pads=1, bias=True)
    x = b.node("Mul", [x, b.constant("s1", rng.standard_normal((8, 1, 1), np.float32))], "mul1")
    x = b.node("Add", [x, b.constant("c1", rng.standard_normal((1, 8, 1, 1), np.float32))], "add1")
    x = b.node("Relu", [b.batchnorm(x, "bn1")], "relu1")
    x = b.conv_transpose(x, "up", 4, 2, 2)
    x = b.node("Add", [b.constant("c2", rng.standard_normal((4, 1, 1), np.float32)), x], "add2",
               channels=4)
    x = b.node("Relu", [b.batchnorm(x, "bn2")], "relu2")
    x = b.node("Add", [b.conv(x, "scalar", 4, 1), b.constant("c3", np.float32(0.5))], "add3")
    x = b.node("Add", [b.conv(x, "pixels", 4, 1),
                       b.constant("c4", rng.standard_normal((1, 4, 12, 12), np.float32))], "add4")
    path = Path(_save(b.model(x, "biases"), tmp_path))
    model = load_model(path)
    nodes, _ = conv_nodes(model)
    assert {n.name: n.fused for n in nodes} == {
        "conv": ["mul1", "add1", "bn1", "relu1"], "up": ["add2", "bn2", "relu2"],
        "scalar": ["add3"], "pixels": []}
    _check_numerics(model, nodes, (1, 8, 6, 6))
    report = run_check(default_plan(path, tmp_path))
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE


def test_affine_chains_before_a_convolution_fold_into_it(tmp_path):
    """A scale and bias after an activation (PP-LCNetV3's learnable affine
    blocks) fold into the convolution reading them, grouped ones included; a
    padded convolution folds a scale but not a shift (its padding must stay
    0), and a chain with another reader stays a node of its own."""
    b = GraphBuilder(seed=7, input_shape=(1, 8, 6, 6), opset=14)
    rng = np.random.default_rng(7)

    def scale_and_bias(x: str, name: str, shift: bool = True) -> str:
        x = b.node("Mul", [b.constant(f"{name}.s", rng.uniform(0.5, 2, (8, 1, 1)).astype(
            np.float32)), x], f"{name}.mul", channels=8)
        x = b.node("Identity", [x], f"{name}.id")
        if shift:
            x = b.node("Add", [x, b.constant(f"{name}.t", rng.standard_normal(
                (1, 8, 1, 1)).astype(np.float32))], f"{name}.add")
        return x

    x = b.node("HardSwish", [b.conv(b.input, "dw", 8, 3, pads=1, group=8)], "hs")
    # Each with an activation, so that the chain after it is the next one's.
    x = b.conv(scale_and_bias(x, "lab1"), "pw", 8, 1, bias=True, relu="pw.relu")
    x = b.conv(scale_and_bias(x, "lab2"), "grouped", 8, 1, group=2, relu="grouped.relu")
    x = b.conv(scale_and_bias(x, "lab3", shift=False), "scaled", 8, 3, pads=1,
               relu="scaled.relu")
    shared = scale_and_bias(x, "lab4")
    x = b.add(b.conv(shared, "padded", 8, 3, pads=1), b.conv(shared, "other", 8, 1), "sum")
    path = Path(_save(b.model(x, "labs"), tmp_path))
    model = load_model(path)
    nodes, _ = conv_nodes(model)
    by_name = {n.name: n for n in nodes}
    assert by_name["pw"].fused == ["lab1.mul", "lab1.id", "lab1.add", "pw.relu"]
    assert by_name["pw"].input == "hs"
    assert by_name["grouped"].fused == ["lab2.mul", "lab2.id", "lab2.add", "grouped.relu"]
    assert by_name["scaled"].fused == ["lab3.mul", "lab3.id", "scaled.relu"]
    assert by_name["padded"].input_affine is None and by_name["other"].input_affine is None
    _check_numerics(model, nodes, (1, 8, 6, 6))
    report = run_check(default_plan(path, tmp_path))
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE


def test_1d_conv_transpose_runs_as_height_1(tmp_path):
    """A 1-D ConvTranspose (stride 2, pads, output padding) after a 1-D Conv: its
    (c, oc, k) weight is the IOHW of height 1, and the model runs natively."""
    rng = np.random.default_rng(6)
    weights = [onnx.numpy_helper.from_array(rng.uniform(-0.3, 0.3, dims).astype(np.float32), n)
               for n, dims in (("w1", (8, 4, 3)), ("w2", (8, 6, 4)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1], name="c1"),
             helper.make_node("ConvTranspose", ["a", "w2"], ["y"], strides=[2], pads=[1, 1],
                              output_padding=[1], name="up1d")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 4, 20])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], weights)
    path = Path(_save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                        ir_version=8), tmp_path))
    up = conv_nodes(load_model(path))[0][1]
    assert up.shape.transposed and (up.shape.h, up.shape.kh, up.shape.out_pad_w) == (1, 1, 1)
    assert up.weight.shape == (8, 6, 1, 4) and up.shape.output_shape == (1, 1, 41, 6)
    report = run_check(default_plan(path, tmp_path))
    assert report["max_rel_diff"] <= CHECK_TOLERANCE and report["delegated"] == []


def _opset7_graph() -> onnx.ModelProto:
    """What an old exporter writes: opset 7 BatchNormalization, Clip bounds as
    attributes, initializers listed as graph inputs (IR 3)."""
    b = GraphBuilder(seed=5, input_shape=(1, 3, 16, 16), opset=7, ir_version=3)
    a = b.node("Clip", [b.conv(b.input, "conv_a", 8, 3, stride=2, pads=1, bn="bn_a")], "clip_a",
               min=0.0, max=6.0)
    r = b.conv(a, "conv_b", 8, 3, pads=1, bias=True, bn="bn_b")
    return b.model(b.add(r, a, "add_b", relu="relu_b"), "opset7")


def test_opset7_model_loads_and_fuses(tmp_path):
    model = load_model(_save(_opset7_graph(), tmp_path))
    nodes, _ = conv_nodes(model)
    assert [(n.name, n.fused, n.shape.act) for n in nodes] == [
        ("conv_a", ["bn_a", "clip_a"], "clip"), ("conv_b", ["bn_b", "add_b", "relu_b"], "relu")]
    assert (nodes[0].shape.act_min, nodes[0].shape.act_max) == (0.0, 6.0)
    _check_numerics(model, nodes, (1, 3, 16, 16))


def test_pytorch_converted_models(tmp_path):
    """The onnx package's opset-6 PyTorch exports: 2-D convs load, and 1-D ones
    as 2-D convolutions of height 1, numerically right; 3-D is refused."""
    ts = generate_tasks(os.path.join(PYTORCH_CONVERTED, "test_Conv2d_strided", "model.onnx"))
    assert ts.convolutions == 1 and ts.tasks[0].shape.stride_h == 2
    assert ts.conv_nodes[0].bias is not None
    for case in ("test_Conv1d_pad2", "test_Conv1d_stride", "test_Conv1d_dilated"):
        path = os.path.join(PYTORCH_CONVERTED, case, "model.onnx")
        model = load_model(path)
        nodes, _ = conv_nodes(model)
        assert nodes[0].shape.h == nodes[0].shape.kh == 1, case
        report = run_check(default_plan(Path(shutil.copy(path, tmp_path / f"{case}.onnx")),
                                        tmp_path))
        assert report["max_rel_diff"] <= CHECK_TOLERANCE and report["delegated"] == [], case
    with pytest.raises(ModelError, match="no 2-D Conv or ConvTranspose, nor MatMul or Gemm, "
                                         "to tune.*3-D convolution"):
        generate_tasks(os.path.join(PYTORCH_CONVERTED, "test_Conv3d", "model.onnx"))


def test_non_2d_conv_is_skipped_with_a_warning(tmp_path):
    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    x = b.node("Reshape", [b.conv(b.input, "conv2d", 8, 3, pads=1),
                          b.constant("shape", np.array([1, 8, 4, 4, 4]))], "cube")
    w = b.constant("w3d", np.ones((4, 8, 3, 3, 3), np.float32))
    path = _save(b.model(b.node("Conv", [x, w], "conv3d", channels=4), "mixed"), tmp_path)
    result = _tasks_cli(path)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "1 convolutions -> 1 tasks"
    assert result.stderr.strip() == (
        "skipped: Conv node 'conv3d': 3-D convolution, not tunable (left to onnxruntime)")
    assert json.loads(_tasks_cli(path, "--json").stdout)["skipped"] == [
        "Conv node 'conv3d': 3-D convolution, not tunable (left to onnxruntime)"]


def test_the_tasks_line_counts_the_products_tuned_in_the_whole_model(tmp_path):
    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    features = b.flatten(b.conv(b.input, "conv", 8, 3, pads=1), "flat", hw=(8, 8))
    path = _save(b.model(b.gemm(b.gemm(features, "fc1", 16), "fc2", 4), "head"), tmp_path)
    result = _tasks_cli(path)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "1 convolutions -> 1 tasks; 2 products (MatMul or Gemm), tuned in the whole model")
    assert json.loads(_tasks_cli(path, "--json").stdout)["products"] == 2


def test_constant_node_weights(tmp_path):
    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    w_out = b.node("Constant", [], "w_const", channels=4, value=onnx.numpy_helper.from_array(w))
    model = load_model(_save(b.model(b.node("Conv", [b.input, w_out], "conv_c", pads=[1] * 4),
                                     "const"), tmp_path))
    nodes, _ = conv_nodes(model)
    assert np.array_equal(nodes[0].weight, w) and nodes[0].bias is None
    _check_numerics(model, nodes, (1, 3, 8, 8))


def test_non_constant_weight_is_refused(tmp_path):
    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    # A weight computed from the input; one computed from constants is folded.
    mean = b.node("ReduceMean", [b.input], "mean", keepdims=0)
    w = b.node("Mul", [b.constant("w", np.ones((4, 3, 3, 3))), mean], "w_scaled")
    path = _save(b.model(b.node("Conv", [b.input, w], "conv_w"), "dynw"), tmp_path)
    with pytest.raises(ModelError, match=r"^Conv node 'conv_w': weight 'w_scaled' is not a con"):
        generate_tasks(path)


def test_input_shape_fixes_dynamic_dims(tmp_path):
    b = GraphBuilder(input_shape=("N", 3, "H", "W"))
    path = _save(b.model(b.conv(b.input, "c", 8, 3, pads=1), "dyn"), tmp_path)
    ts = generate_tasks(path, {"input": (2, 3, 32, 24)})
    assert ts.tasks[0].key == "n2.c3.h32.w24-oc8-k3x3-s1x1-p1.1.1.1-d1x1-g1"


# --- bad input: one line, non-zero exit, no traceback ---------------------------

def _dynamic_model(tmp_path) -> str:
    b = GraphBuilder(input_shape=("N", 3, 32, 32))
    return _save(b.model(b.conv(b.input, "c", 8, 3, pads=1), "dyn"), tmp_path, "dyn.onnx")


def _no_conv_model(tmp_path) -> str:
    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    return _save(b.model(b.node("Relu", [b.input], "r"), "noconv"), tmp_path, "noconv.onnx")


def _text_file(tmp_path) -> str:
    path = tmp_path / "model.onnx"
    path.write_text("this is not a model\n")
    return str(path)


def _json_file(tmp_path) -> str:
    """onnx.load would read a .json file as the JSON form of a model."""
    path = tmp_path / "model.json"
    path.write_text('{"irVersion": 8}')
    return str(path)


def _truncated_model(tmp_path) -> str:
    whole = Path(_dynamic_model(tmp_path)).read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(whole[:len(whole) * 2 // 3])
    return str(path)


def _cut_in_a_varint(tmp_path) -> str:
    """A model whose last bytes start a field's length and stop inside its
    varint (bench fuzz found it: an IndexError from the weights' reader)."""
    path = tmp_path / "varint.onnx"
    path.write_bytes(Path(_dynamic_model(tmp_path)).read_bytes() + b"\x3a\x80")
    return str(path)


def _external_data_at(location: str):
    """A model whose weights are external data at `location` (relative to its folder)."""
    def make(tmp_path) -> str:
        (tmp_path / "sub").mkdir()
        path = tmp_path / "sub" / "model.onnx"
        onnx.save(onnx.load(_dynamic_model(tmp_path)), path, save_as_external_data=True,
                  location="w.bin", size_threshold=0)
        model = onnx.load(path, load_external_data=False)
        for t in model.graph.initializer:
            for entry in t.external_data:
                if entry.key == "location":
                    entry.value = location.format(tmp=tmp_path)
        onnx.save(model, path)
        return str(path)
    return make


@pytest.mark.parametrize("make, extra, expected", [
    (lambda p: str(p / "missing.onnx"), [], r"missing\.onnx: no such file"),
    (_text_file, [], r"model\.onnx: not an ONNX model"),
    (_json_file, [], r"model\.json: not an ONNX model \(cannot parse it as ONNX protobuf"),
    (_truncated_model, [], r"cut\.onnx: truncated ONNX model: the file ends inside a field"),
    (_cut_in_a_varint, [], r"varint\.onnx: not an ONNX model"),
    (_external_data_at("../w.bin"), [], r"model\.onnx: bad external data: .*'\.\./w\.bin' "
                                        r"points outside the directory"),
    (_external_data_at("{tmp}/sub/w.bin"), [], r"model\.onnx: bad external data: .* should be "
                                               r"a relative path"),
    (_no_conv_model, [], r"noconv\.onnx: no 2-D Conv or ConvTranspose, nor MatMul or Gemm, "
                         r"to tune"),
    (_dynamic_model, [], r"dyn\.onnx: input 'input' has dynamic dims \[N, 3, 32, 32\]: "
                         r"pass --input-shape input=N,3,32,32"),
    (_dynamic_model, ["--input-shape", "input=1,3;32,32"], r"bad --input-shape 'input=1,3;32,32'"),
    (_dynamic_model, ["--input-shape", "input"], r"bad --input-shape 'input'"),
    (_dynamic_model, ["--input-shape", "x=1,3,32,32"], r"names 'x', not an input.*inputs: input"),
    (_dynamic_model, ["--input-shape", "input=1,3,32"], r"rank 4 \[N, 3, 32, 32\], .* gives 3"),
    (_dynamic_model, ["--input-shape", "input=1,4,32,32"], r"has 3 at dim 1, .* gives 4"),
], ids=["missing", "text", "json", "truncated", "cut-varint", "external-outside",
        "external-absolute",
        "no-conv", "dynamic", "syntax", "no-dims", "unknown-name", "rank",
        "static-dim"])
def test_bad_input_is_one_line(tmp_path, make, extra, expected):
    result = _tasks_cli(make(tmp_path), *extra)
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith("Error: ")
    assert re.search(expected, lines[0]), lines[0]
