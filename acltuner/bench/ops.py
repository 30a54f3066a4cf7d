"""`acltuner bench ops`: the operations around the convolutions of today's
CNNs, one node at a time, against onnxruntime's time for the same node.

Each case is one operation at a shape taken from a real model of the
real-model set (the MatMuls, Softmax, LayerNorm and GELU of MobileViT,
EfficientFormer and ConvNeXt; the dilated convolutions of DeepLabV3 and
LR-ASPP; the grouped ones of ResNeXt and RegNet), written as a small ONNX model
whose inputs are the operation's activations.  A convolution or a product
(MatMul, Gemm) is tuned first (a convolution's tasks at `trials`, a
product's kernel in the whole model), the other operations need no tuning.  Each round
times our run with its profile, then onnxruntime's with its own (the better of
1 and 2 threads), in a fresh process of its own; a case's times are the
medians of its rounds.  Layout changes are left out on both sides (our host
copies into NHWC, onnxruntime's NCHWc reorders): in a model they happen at the
edges of a block, not at every node.

Every input reaches the operation through a lead node (a Neg, left out of the
times on both sides), as an operation of a model reads what the node before
it wrote.  The first node of a run also pays for the run's start: our engine
wakes its cores and reads the input the caller just copied in (MobileViT's
attention context, 16x256x256x16: 0.171 ms as a run's first node, 0.155 as
its second; onnxruntime, whose threads spin between runs and which reads the
caller's array in place, 0.157 either way), a cost of the run that lands on
whichever node comes first.  ops.csv keeps the lead nodes' times apart.
"""
from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from acltuner.bench.compare import _acltuner, _call, _geomean, _json_run, realtime_allowed
from acltuner.taskgen.tasks import PRODUCT_OPS

_OPSET = 17
_LAYOUT_CHANGES = ("(host copies)", "onnxruntime only: ReorderInput",
                   "onnxruntime only: ReorderOutput")
# The lead nodes' names start so, and their outputs' end so (_model).
_LEAD, _LED = "lead/", "_led"


@dataclass(frozen=True)
class OpCase:
    name: str    # family.operation, e.g. "mobilevit.attn_scores"
    model: str   # the real model the shape comes from
    build: Callable[[], onnx.ModelProto]


def _model(nodes: list, inputs: dict[str, list[int]], weights: dict[str, np.ndarray],
           output: str = "y", rows: bool = False) -> onnx.ModelProto:
    """The operation `nodes`, each input through a lead node first.  rows: the
    inputs are a token tensor's rows (a Linear's output, which an attention
    reshapes into heads), so each one arrives as [rows, features] and the
    lead reshapes it too; else a feature map, as an image model holds it."""
    led = {name: name + _LED for name in inputs}
    for node in nodes:
        node.input[:] = [led.get(i, i) for i in node.input]
    lead, declared, weights = [], {}, dict(weights)
    for name, dims in inputs.items():
        if rows:
            declared[name] = [int(np.prod(dims[:-1])), dims[-1]]
            weights[f"{name}_dims"] = np.array(dims, np.int64)
            lead += [helper.make_node("Neg", [name], [f"{name}_neg"], name=f"{_LEAD}{name}"),
                     helper.make_node("Reshape", [f"{name}_neg", f"{name}_dims"], [led[name]],
                                      name=f"{_LEAD}{name}/reshape")]
        else:
            declared[name] = dims
            lead.append(helper.make_node("Neg", [name], [led[name]], name=f"{_LEAD}{name}"))
    graph = helper.make_graph(
        lead + nodes, "op",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in declared.items()],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, n) for n, w in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8
    return model


def _weights(*shape: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) / np.sqrt(shape[0])
            ).astype(np.float32)


def _linear(x: list[int], n: int) -> Callable[[], onnx.ModelProto]:
    """x @ W + b: a token MLP or an attention projection with constant weights."""
    def build():
        return _model([helper.make_node("MatMul", ["x", "w"], ["xw"]),
                       helper.make_node("Add", ["xw", "b"], ["y"])],
                      {"x": x}, {"w": _weights(x[-1], n), "b": _weights(n, seed=1)}, rows=True)
    return build


def _batched(a: list[int], b: list[int]) -> Callable[[], onnx.ModelProto]:
    """A batched MatMul of two activations: attention scores or context."""
    return lambda: _model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, {},
                          rows=True)


def _softmax(x: list[int]) -> Callable[[], onnx.ModelProto]:
    return lambda: _model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": x}, {},
                          rows=True)


def _layer_norm(x: list[int]) -> Callable[[], onnx.ModelProto]:
    d = x[-1]
    return lambda: _model(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-6)],
        {"x": x}, {"g": _weights(d) + 1, "b": _weights(d, seed=1)}, rows=True)


def _layer_norm_channels_first(x: list[int]) -> Callable[[], onnx.ModelProto]:
    """ConvNeXt's channels-first LayerNorm as exporters write it: ReduceMean,
    Sub, Pow, ReduceMean, Add, Sqrt, Div over axis 1, then the affine."""
    c = x[1]

    def build():
        nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], axes=[1]),
                 helper.make_node("Sub", ["x", "mu"], ["xc"]),
                 helper.make_node("Pow", ["xc", "two"], ["sq"]),
                 helper.make_node("ReduceMean", ["sq"], ["var"], axes=[1]),
                 helper.make_node("Add", ["var", "eps"], ["ve"]),
                 helper.make_node("Sqrt", ["ve"], ["sd"]),
                 helper.make_node("Div", ["xc", "sd"], ["xn"]),
                 helper.make_node("Mul", ["xn", "g"], ["xg"]),
                 helper.make_node("Add", ["xg", "b"], ["y"])]
        return _model(nodes, {"x": x}, {
            "two": np.array(2, np.float32), "eps": np.array(1e-6, np.float32),
            "g": (_weights(c) + 1).reshape(c, 1, 1), "b": _weights(c, seed=1).reshape(c, 1, 1)})
    return build


def _gelu_erf(x: list[int], rows: bool = False) -> Callable[[], onnx.ModelProto]:
    """x * 0.5 * (1 + erf(x / sqrt(2))), as torch.onnx writes nn.GELU();
    rows: between two Linears (_model)."""
    def build():
        nodes = [helper.make_node("Div", ["x", "sqrt2"], ["s"]),
                 helper.make_node("Erf", ["s"], ["e"]),
                 helper.make_node("Add", ["e", "one"], ["e1"]),
                 helper.make_node("Mul", ["x", "e1"], ["m"]),
                 helper.make_node("Mul", ["m", "half"], ["y"])]
        return _model(nodes, {"x": x}, {"sqrt2": np.array(np.sqrt(2), np.float32),
                                        "one": np.array(1, np.float32),
                                        "half": np.array(0.5, np.float32)}, rows=rows)
    return build


def _gelu_tanh(x: list[int]) -> Callable[[], onnx.ModelProto]:
    """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): nn.GELU('tanh')."""
    def build():
        nodes = [helper.make_node("Pow", ["x", "three"], ["x3"]),
                 helper.make_node("Mul", ["x3", "k"], ["kx3"]),
                 helper.make_node("Add", ["x", "kx3"], ["inner"]),
                 helper.make_node("Mul", ["inner", "c"], ["arg"]),
                 helper.make_node("Tanh", ["arg"], ["t"]),
                 helper.make_node("Add", ["t", "one"], ["t1"]),
                 helper.make_node("Mul", ["x", "t1"], ["m"]),
                 helper.make_node("Mul", ["m", "half"], ["y"])]
        return _model(nodes, {"x": x}, {
            "three": np.array(3, np.float32), "k": np.array(0.044715, np.float32),
            "c": np.array(np.sqrt(2 / np.pi), np.float32), "one": np.array(1, np.float32),
            "half": np.array(0.5, np.float32)})
    return build


def _conv(c: int, hw: int, oc: int, k: int, group: int = 1, dilation: int = 1,
          stride: int = 1) -> Callable[[], onnx.ModelProto]:
    """A convolution with its bias and ReLU, padded to keep the size."""
    pad = dilation * (k - 1) // 2

    def build():
        return _model([helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                                        pads=[pad] * 4, strides=[stride] * 2, group=group,
                                        dilations=[dilation] * 2),
                       helper.make_node("Relu", ["c"], ["y"])],
                      {"x": [1, c, hw, hw]},
                      {"w": _weights(oc, c // group, k, k), "b": _weights(oc, seed=1)})
    return build


CASES = [
    OpCase("mobilevit.qkv", "mobilevit_xxs", _linear([4, 256, 64], 192)),
    OpCase("mobilevit.mlp_out", "mobilevit_xxs", _linear([4, 64, 160], 80)),
    OpCase("mobilevit.attn_scores", "mobilevit_xxs", _batched([4, 4, 256, 16], [4, 4, 16, 256])),
    OpCase("mobilevit.attn_context", "mobilevit_xxs", _batched([4, 4, 256, 256], [4, 4, 256, 16])),
    OpCase("mobilevit.attn_scores_64", "mobilevit_xxs", _batched([4, 4, 64, 20], [4, 4, 20, 64])),
    OpCase("mobilevit.softmax", "mobilevit_xxs", _softmax([4, 4, 256, 256])),
    OpCase("mobilevit.layernorm", "mobilevit_xxs", _layer_norm([4, 256, 64])),
    OpCase("efficientformer.mlp", "efficientformer_l1", _linear([1, 49, 448], 1792)),
    OpCase("efficientformer.attn_context", "efficientformer_l1",
           _batched([1, 8, 49, 49], [1, 8, 49, 128])),
    OpCase("efficientformer.softmax", "efficientformer_l1", _softmax([1, 8, 49, 49])),
    OpCase("efficientformer.layernorm", "efficientformer_l1", _layer_norm([1, 49, 448])),
    OpCase("efficientformer.gelu_nchw", "efficientformer_l1", _gelu_erf([1, 192, 56, 56])),
    OpCase("convnext.fc1", "convnext_atto", _linear([1, 56, 56, 40], 160)),
    OpCase("convnext.fc2", "convnext_atto", _linear([1, 56, 56, 160], 40)),
    OpCase("convnext.fc1_stage4", "convnext_atto", _linear([1, 7, 7, 320], 1280)),
    OpCase("convnext.layernorm", "convnext_atto", _layer_norm([1, 56, 56, 40])),
    OpCase("convnext.layernorm_channels_first", "convnext_atto",
           _layer_norm_channels_first([1, 40, 56, 56])),
    OpCase("convnext.gelu", "convnext_atto", _gelu_erf([1, 56, 56, 160], rows=True)),
    OpCase("gelu_tanh", "mobilenetv4_small", _gelu_tanh([1, 28, 28, 320])),
    OpCase("deeplabv3.aspp_rate12", "deeplabv3_mobilenetv3", _conv(960, 24, 128, 3, dilation=12)),
    OpCase("deeplabv3.aspp_rate36", "deeplabv3_mobilenetv3", _conv(960, 24, 128, 3, dilation=36)),
    OpCase("deeplabv3.dw5x5_rate2", "deeplabv3_mobilenetv3",
           _conv(960, 24, 960, 5, group=960, dilation=2)),
    OpCase("lraspp.dw5x5_rate2", "lraspp_mobilenetv3",
           _conv(672, 32, 672, 5, group=672, dilation=2)),
    OpCase("resnext.g32_56x56x128", "resnext50_32x4d", _conv(128, 56, 128, 3, group=32)),
    OpCase("resnext.g32_28x28x256", "resnext50_32x4d", _conv(256, 28, 256, 3, group=32)),
    OpCase("resnext.g32_14x14x512", "resnext50_32x4d", _conv(512, 14, 512, 3, group=32)),
    OpCase("resnext.g32_7x7x1024", "resnext50_32x4d", _conv(1024, 7, 1024, 3, group=32)),
    OpCase("regnet.g26_14x14x208", "regnety_400mf", _conv(208, 14, 208, 3, group=26)),
    OpCase("regnet.g55_7x7x440", "regnety_400mf", _conv(440, 7, 440, 3, group=55)),
]


def measure(model_path: str, plan_path: str | None, board: str, repeat: int) -> dict:
    """One round of a case, in this process: our time for its nodes and
    onnxruntime's (layout changes left out), and the kind of our slowest node.
    Without a plan (nothing to tune), every node runs the engine's own way."""
    from acltuner.board.registry import load_board
    from acltuner.onnx.model import load_model_detached
    from acltuner.runtime import load
    from acltuner.runtime.compare_ort import compare, node_aliases, profile_onnxruntime
    from acltuner.runtime.inputs import random_inputs
    from acltuner.runtime.load import compile_model
    from acltuner.runtime.measure import time_runs
    from acltuner.runtime.profile import summarize

    if plan_path:
        program = load(plan_path)
    else:
        model, weights = load_model_detached(model_path, None)
        program = compile_model(model, {}, load_board(board), weights=weights)
    inputs = random_inputs(program)
    latency, _ = time_runs(program, inputs, repeat, warmup=5)
    ort = profile_onnxruntime(model_path, inputs, repeat, warmup=5)
    # The graph inputs' own layout changes (a 4-D input put into NHWC and back
    # for an operation on its last axis, at the input or after its lead node)
    # happen once per model, not per node.
    inputs_layout = {f"{name}{led} (layout)" for name in inputs for led in ("", _LED)}
    compared = compare(summarize(latency.profiles), ort, node_aliases(model_path, None))
    lead = [r for r in compared if r.node.startswith(_LEAD)]
    rows = [r for r in compared
            if r.node not in _LAYOUT_CHANGES and r.kind not in _LAYOUT_CHANGES
            and r.node not in inputs_layout and r not in lead]
    return {"ours_ms": sum(r.ours_ms for r in rows), "ort_ms": sum(r.ort_ms for r in rows),
            "kind": max(rows, key=lambda r: r.ours_ms).kind,
            "lead_ours_ms": sum(r.ours_ms for r in lead),
            "lead_ort_ms": sum(r.ort_ms for r in lead)}


def tunable(model: onnx.ModelProto) -> bool:
    """Whether `tune` takes the model: it has a convolution or a product."""
    return any(n.op_type in ("Conv", "ConvTranspose", *PRODUCT_OPS) for n in model.graph.node)


def run(cases: list[OpCase], trials: int, rounds: int, repeat: int, out_dir: Path,
        board: str, realtime: bool = True) -> float:
    """Prints a row per case and the geomean of onnxruntime's time over ours
    (above 1: ours is faster); returns it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if realtime and not realtime_allowed():
        click.echo("real-time priority refused here: timing at normal priority", err=True)
        realtime = False
    records = out_dir / "records.jsonl"
    rows = []
    click.echo(f"{'case':34s} {'from':22s} {'ours ms':>8s} {'ort ms':>8s} {'vs ort':>7s}  kind")
    for case in cases:
        built = case.build()
        model, plan = out_dir / f"{case.name}.onnx", out_dir / f"{case.name}.plan.json"
        onnx.save(built, model)
        if tunable(built):
            _call(_acltuner("tune", str(model), "-o", str(plan), "--trials", str(trials),
                            "--board", board, "--records", str(records)))
        probe = [sys.executable, "-m", "acltuner.bench.ops", str(model),
                 str(plan) if tunable(built) else "", board, str(repeat)]
        times = [_json_run(probe, realtime) for _ in range(rounds)]
        ours = statistics.median(t["ours_ms"] for t in times)
        ort = statistics.median(t["ort_ms"] for t in times)
        rows.append({"case": case.name, "model": case.model, "ours_ms": ours, "ort_ms": ort,
                     "vs_onnxruntime": ort / ours, "kind": times[-1]["kind"],
                     **{key: statistics.median(t[key] for t in times)
                        for key in ("lead_ours_ms", "lead_ort_ms")}})
        click.echo(f"{case.name:34s} {case.model:22s} {ours:8.3f} {ort:8.3f} "
                   f"{ort / ours:6.2f}x  {times[-1]['kind']}")
    with open(out_dir / "ops.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    ratios = [r["vs_onnxruntime"] for r in rows]
    worst = min(rows, key=lambda r: r["vs_onnxruntime"])
    result = _geomean(ratios)
    click.echo(f"{sum(x < 1.0 for x in ratios)} of {len(rows)} operations slower than "
               f"onnxruntime; the slowest {worst['case']} at {worst['vs_onnxruntime']:.2f}x")
    click.echo(f"ops_vs_onnxruntime: {result:.3f}")
    return result


if __name__ == "__main__":  # one round of one case: run()'s probe process
    import json
    print(json.dumps(measure(sys.argv[1], sys.argv[2] or None, sys.argv[3], int(sys.argv[4]))))
