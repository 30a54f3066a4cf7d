"""`acltuner run`: every zoo model runs natively with a rule-based plan (and
some with other configs) and matches onnxruntime (the real models, the onnx
light nets among them, are test_real_models'); Slice, Split, Mean and the
channel shuffle between convolutions and in the light ShuffleNet run natively;
bad input is refused in one line; the Python API returns what the CLI writes."""
from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import acltuner
from acltuner import zoo
from acltuner.app.run import CHECK_TOLERANCE
from acltuner.engine import native
from acltuner.onnx.graph import conv_nodes
from acltuner.onnx.model import load_model
from acltuner.runtime.compare_ort import OrtProfile, compare
from acltuner.runtime.profile import NodeTime
from acltuner.taskgen.tasks import applicable_algorithms, signature
from acltuner.zoo.builder import GraphBuilder
from acltuner.zoo.reweight import randomize_weights
from tests.support.json_edit import set_node_config
from tests.support.cli_checks import assert_one_line_error, default_plan, invoke, run_check


# Every zoo model, with the rule-based plan; the operators each still delegates.
DELEGATED_OPS: dict[str, set[str]] = {}


@pytest.mark.parametrize("name", list(zoo.MODELS))
def test_zoo_model_matches_onnxruntime(name, tmp_path):
    path = tmp_path / f"{name}.onnx"
    assert invoke("zoo", name, "-o", path).exit_code == 0
    report = run_check(default_plan(path, tmp_path))
    print(f"{name}: max_rel_diff {report['max_rel_diff']:.3g}")
    assert report["max_rel_diff"] <= CHECK_TOLERANCE
    assert {op for d in report["delegated"] for op in d["op_types"]} == DELEGATED_OPS.get(name,
                                                                                         set())


def _other_configs(plan_path, model_path) -> int:
    """Gives every convolution another applicable algorithm than the rule's (cycling
    through them and through the micro-kernels that fit), on both cores."""
    shapes = {c.name: c.shape for c in conv_nodes(load_model(model_path))[0]}
    kernels = [uk.name for uk in native.ukernels()]
    data = json.loads(plan_path.read_text())
    changed = 0
    for i, node in enumerate(data["nodes"]):
        shape = signature(shapes[node["node"]])
        others = [a for a in applicable_algorithms(shape) if a != node["config"]["algorithm"]]
        if not others:
            continue
        algorithm = others[i % len(others)]
        fits = [k for k in kernels if native.check(shape, algorithm, k) is None]
        set_node_config(node, {"algorithm": algorithm,
                               "ukernel": fits[i % len(fits)] if native.uses_ukernel(algorithm)
                               else None, "core_weights": [1, 1 + i % 2],
                               "workloads": 2 + i % 5})
        changed += 1
    plan_path.write_text(json.dumps(data))
    return changed


@pytest.mark.parametrize("name", ["resnet18", "mobilenetv2", "googlenet"])
def test_other_configs_match_too(name, tmp_path):
    path = tmp_path / f"{name}.onnx"
    onnx.save(zoo.build(name), path)
    plan = default_plan(path, tmp_path)
    assert _other_configs(plan, path) > 0
    report = run_check(plan)
    print(f"{name} (other configs): max_rel_diff {report['max_rel_diff']:.3g}")
    assert report["max_rel_diff"] <= CHECK_TOLERANCE


# A decoder's ConvTranspose, tuned and run natively.

def _upsampling_model(path):
    """Conv -> ConvTranspose (4x4, stride 2, pad 1, bias, BN and Relu fused) -> Conv."""
    b = GraphBuilder(seed=5, input_shape=(1, 3, 12, 12))
    x = b.conv(b.input, "down", 16, 3, stride=2, pads=1, bn="down.bn", relu="down.relu")
    y = b.conv_transpose(x, "up", 8, 4, 2, pads=1, bias=True, bn="up.bn", relu="up.relu")
    onnx.save(b.model(b.conv(y, "out", 4, 3, pads=1), "upsampling"), path)


def test_conv_transpose_is_tuned_and_runs_natively(tmp_path):
    path, plan = tmp_path / "up.onnx", tmp_path / "up.plan.json"
    _upsampling_model(path)
    result = invoke("tasks", path, "--json")
    assert result.exit_code == 0, result.output
    [task] = [t for t in json.loads(result.stdout)["tasks"] if t["node_names"] == ["up"]]
    assert task["key"] == "n1.c16.h6.w6-oc8-k4x4-s2x2-p1.1.1.1-d1x1-g1-t-o0x0"
    assert set(task["algorithms"]) == {"deconv_col2im", "deconv_phase"}
    result = invoke("tune", path, "-o", plan, "--board", "split-host", "--trials", "8",
                    "--records", tmp_path / "r.jsonl")
    assert result.exit_code == 0, result.output
    report = run_check(plan)
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE
    # Each algorithm, on both cores, through the whole program.
    data = json.loads(plan.read_text())
    [node] = [n for n in data["nodes"] if n["node"] == "up"]
    shape = signature(conv_nodes(load_model(path))[0][1].shape)
    for algorithm in task["algorithms"]:
        ukernel = next(k.name for k in native.ukernels()
                       if native.check(shape, algorithm, k.name) is None)
        set_node_config(node, {"algorithm": algorithm, "ukernel": ukernel,
                               "core_weights": [1, 2], "workloads": 5})
        plan.write_text(json.dumps(data))
        report = run_check(plan)
        assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE, algorithm


# Slice, Split, Mean and the channel shuffle between convolutions.

def _between_convs(name: str, opset: int) -> onnx.ModelProto:
    """Conv -> `name` -> Conv on a 1x16x12x12 map (NHWC inside)."""
    b = GraphBuilder(seed=11, input_shape=(1, 8, 12, 12), opset=opset)
    x = b.conv(b.input, "c1", 24, 3, pads=1, bn="bn1", relu="r1")
    if name == "split":  # ShuffleNetV2's channel split, and an uneven one along W
        sizes = [10, 14]
        if opset >= 18:
            parts, attrs, ins = ["half.0", "half.1"], {"num_outputs": 2}, [x]
            sizes = [12, 12]
        else:
            parts, attrs = ["half.0", "half.1"], {}
            ins = [x, b.constant("half.split", np.array(sizes, np.int64))]
        b.nodes.append(helper.make_node("Split", ins, parts, name="half", axis=1, **attrs))
        b.channels.update(zip(parts, sizes))
        cols = ["cols.0", "cols.1"]
        b.nodes.append(helper.make_node("Split", [parts[1], b.constant("cols.split", np.array(
            [5, 7], np.int64))] if opset < 18 else [parts[1]], cols, name="cols", axis=-1,
            **({"num_outputs": 2} if opset >= 18 else {})))
        b.channels.update(dict.fromkeys(cols, sizes[1]))
        y = b.conv(parts[0], "c_left", 16, 1)
        z = b.node("Concat", [b.conv(cols[1], "c_right", 16, 3, pads=1),
                              b.conv(cols[0], "c_mid", 16, 1)], "cat", axis=3)
        y = b.node("Add", [y, z], "join", channels=16)
    elif name == "slice":  # every other channel backwards, a crop, one image row (a view)
        big = 2 ** 63 - 1
        y = b.node("Slice", [x] + [b.constant(f"s.{k}", np.array(v, np.int64)) for k, v in (
            ("starts", [-1, 1, -11]), ("ends", [-big, big, -1]), ("axes", [1, 2, -1]),
            ("steps", [-2, 1, 1]))], "slice", channels=12)
        row = b.node("Slice", [y] + [b.constant(f"r.{k}", np.array(v, np.int64)) for k, v in (
            ("starts", [4]), ("ends", [5]), ("axes", [2]))], "row")
        y = b.node("Add", [y, row], "add")
    elif name == "mean":
        y = b.node("Mean", [x, b.conv(x, "c_a", 24, 1), b.conv(x, "c_b", 24, 3, pads=1)],
                   "mean")
    else:  # ShuffleNet's channel shuffle, 3 groups
        y = b.node("Reshape", [x, b.constant("s1", np.array([1, 3, 8, 12, 12]))], "groups")
        y = b.node("Transpose", [y], "shuffle", perm=[0, 2, 1, 3, 4])
        y = b.node("Reshape", [y, b.constant("s2", np.array([1, 24, 12, 12]))], "merge",
                   channels=24)
    return b.model(b.conv(y, "c2", 8, 3, pads=1), name)


BETWEEN_CONVS = [("split", 13, "slice"), ("split", 18, "slice"), ("slice", 13, "slice"),
                 ("mean", 13, "add"), ("shuffle", 13, "channel shuffle")]


@pytest.mark.parametrize("name,opset,kind", BETWEEN_CONVS,
                         ids=[f"{n}{o}" for n, o, _ in BETWEEN_CONVS])
def test_slicing_between_convolutions_runs_natively(name, opset, kind, tmp_path):
    path = tmp_path / f"{name}.onnx"
    onnx.save(_between_convs(name, opset), path)
    report = run_check(default_plan(path, tmp_path), "--profile")
    print(f"{name} (opset {opset}): max_rel_diff {report['max_rel_diff']:.3g}")
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE
    kinds = [n["kind"] for n in report["nodes"]]
    assert kind in kinds and "transpose" not in kinds, kinds


def test_compare_ort_counts_a_shuffle_with_its_three_nodes(tmp_path):
    path = tmp_path / "shuffle.onnx"
    onnx.save(_between_convs("shuffle", 13), path)
    result = invoke("run", default_plan(path, tmp_path), "--repeat", "3", "--warmup", "1",
                    "--compare-ort", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["node"]: r for r in json.loads(result.stdout)["compare_ort"]["nodes"]}
    # Our gather is named after the last Reshape; onnxruntime's Reshape,
    # Transpose and Reshape are summed beside it.
    assert rows["merge"]["kind"] == "channel shuffle" and rows["merge"]["ort_ms"] > 0
    assert not {"groups", "shuffle"} & set(rows)


def test_light_shufflenet_shuffles_channels_with_one_gather_each(tmp_path):
    """The onnx package's light ShuffleNet (v1, 3 groups, seeded weights):
    each of its 16 channel shuffles is one gather, and nothing is delegated."""
    light = Path(onnx.__file__).parent / "backend/test/data/light/light_shufflenet.onnx"
    path = tmp_path / "shufflenet.onnx"
    onnx.save(randomize_weights(onnx.load(light)), path)
    report = run_check(default_plan(path, tmp_path), "--profile")
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE
    kinds = [n["kind"] for n in report["nodes"]]
    assert kinds.count("channel shuffle") == 16 and "transpose" not in kinds, kinds


# A small model with a delegated node, for the command's other paths.

@pytest.fixture
def small(tmp_path):
    b = GraphBuilder(seed=5, input_shape=(1, 8, 12, 12))
    y = b.conv(b.input, "c1", 16, 3, pads=1, bn="bn1", relu="r1")
    y = b.node("Sin", [y], "sin")
    y = b.conv(y, "c2", 16, 3, stride=2, pads=1, bias=True)
    y = b.gemm(b.flatten(b.global_avg_pool(y, "gap"), "flat"), "fc", 10)
    path = tmp_path / "small.onnx"
    onnx.save(b.model(y, "small"), path)
    return path, default_plan(path, tmp_path)


def test_text_report_and_profile(small):
    _, plan = small
    result = invoke("run", plan, "--repeat", "2", "--warmup", "1", "--profile", "--check")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "latency  median" in out and "p10" in out and "p90" in out and "peak RSS" in out
    assert "delegated: sin (Sin)" in out and "max rel diff" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("node "))
    rows = {line.split()[0]: line for line in lines[header + 1:]}
    assert "conv " in rows["c1"] and "/w" in rows["c1"]  # algorithm and config
    assert "delegated to onnxruntime: Sin" in rows["sin"]
    assert "matmul" in rows["fc"]


def test_compare_ort_maps_onnxruntime_names_back_to_onnx_nodes():
    """onnxruntime names an NCHWc node after its output tensor and a fusion
    "<node>/<Fusion>/" or "fused <node>"; an absorbed BatchNormalization counts
    for its Conv."""
    ours = [NodeTime("conv", "conv im2col", 3.0, 0.6, "conv"),
            NodeTime("sig", "unary", 1.0, 0.2, "unary"),
            NodeTime("(host copies)", "copies", 1.0, 0.2, "copies")]
    ort = OrtProfile(4.0, 1, {"bn_out_nchwc": ("Conv", 0.75), "sig/QuickGeluFusion/": ("X", 0.5),
                              "fused conv": ("FusedConv", 0.25),
                              "ReorderOutput": ("ReorderOutput", 0.25)})
    rows = {r.node: r for r in compare(ours, ort, {"bn": "conv", "bn_out": "conv",
                                                   "sig_out": "sig"})}
    assert (rows["conv"].ours_ms, rows["conv"].ort_ms) == (3.0, 1.0)
    assert (rows["sig"].ours_ms, rows["sig"].ort_ms) == (1.0, 0.5)
    assert rows["ReorderOutput"].kind == "onnxruntime only: ReorderOutput"
    assert [r.node for r in rows.values()] == ["conv", "(host copies)", "sig", "ReorderOutput"]


def test_compare_ort_matches_names_holding_slashes():
    """TensorFlow exports name nodes and tensors with "/" inside."""
    ours = [NodeTime("model/conv2d/Conv2D", "conv im2col", 2.0, 1.0, "conv")]
    ort = OrtProfile(2.0, 1, {"model/conv2d/Conv2D:0_nchwc": ("Conv", 0.5),
                              "model/conv2d/Conv2D/FusedConv/": ("FusedConv", 0.25),
                              "model/other/Reshape": ("Reshape", 0.125)})
    rows = {r.node: r for r in compare(ours, ort, {"model/conv2d/Conv2D:0": "model/conv2d/Conv2D"})}
    assert rows["model/conv2d/Conv2D"].ort_ms == 0.75
    assert rows["model/other/Reshape"].kind == "onnxruntime only: Reshape"


def test_compare_ort_matches_onnxruntime_nodes_to_ours(small):
    _, plan = small
    result = invoke("run", plan, "--repeat", "3", "--warmup", "1", "--compare-ort", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    compared = report["compare_ort"]
    rows = {r["node"]: r for r in compared["nodes"]}
    # Each of our nodes meets onnxruntime's, the absorbed BatchNormalization and
    # Relu counted with c1 whatever onnxruntime fused them into.
    for node in ("c1", "sin", "c2", "gap", "fc"):
        assert rows[node]["ours_ms"] > 0 and rows[node]["ort_ms"] > 0, rows[node]
    assert not {"bn1", "r1"} & set(rows)
    lost = [r["lost_ms"] for r in compared["nodes"]]
    assert lost == sorted(lost, reverse=True)
    assert compared["vs_onnxruntime"] == pytest.approx(
        compared["ort_median_ms"] / report["median_ms"])
    refused = invoke("run", plan, "--compare-ort", "--host", "nowhere")
    assert refused.exit_code == 2 and "cannot be combined with --host" in refused.output


def test_json_report(small):
    _, plan = small
    report = run_check(plan, "--profile")
    assert report["p10_ms"] <= report["median_ms"] <= report["p90_ms"]
    assert report["peak_rss_mb"] > 0 and report["max_rel_diff"] <= CHECK_TOLERANCE
    [segment] = report["delegated"]
    assert segment["nodes"] == ["sin"] and 0 < segment["share"] < 1
    nodes = report["nodes"]
    assert [n["ms"] for n in nodes] == sorted((n["ms"] for n in nodes), reverse=True)
    assert abs(sum(n["share"] for n in nodes) - 1) < 1e-6
    ops = {n["node"]: n["op"] for n in nodes}
    assert ops.pop("sin") == "delegated" and ops.pop("(host copies)") == "copies"
    assert "conv" in ops.values() and all(op in native.schema().ops for op in ops.values())


def test_api_returns_what_the_cli_writes(small, tmp_path):
    _, plan = small
    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    result = invoke("run", plan, tmp_path / "x.npy", "--output", tmp_path / "y.npy",
                     "--repeat", "1", "--warmup", "0")
    assert result.exit_code == 0, result.output
    named = invoke("run", plan, "--input", f"input={tmp_path / 'x.npy'}", "--output",
                    tmp_path / "z.npy", "--repeat", "1", "--warmup", "0")
    assert named.exit_code == 0, named.output
    api = acltuner.load(plan).run({"input": x})["output"]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), api)
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), api)


def test_bad_inputs_are_one_line(small, tmp_path):
    _, plan = small
    assert_one_line_error(invoke("run", plan, tmp_path / "missing.npy"), "missing.npy",
                    "no such input file", "'input'")
    np.save(tmp_path / "wrong.npy", np.zeros((1, 3, 12, 12), np.float32))
    assert_one_line_error(invoke("run", plan, tmp_path / "wrong.npy"), "wrong.npy", "'input'",
                    "float32 [1, 8, 12, 12]", "got float32 [1, 3, 12, 12]")
    np.save(tmp_path / "f64.npy", np.zeros((1, 8, 12, 12)))
    assert_one_line_error(invoke("run", plan, tmp_path / "f64.npy"), "f64.npy",
                    "float32 [1, 8, 12, 12]", "got float64")
    assert_one_line_error(invoke("run", plan, "--input", f"nope={tmp_path / 'f64.npy'}"),
                    "no input 'nope'")
    (tmp_path / "text.npy").write_text("not numpy")
    assert_one_line_error(invoke("run", plan, tmp_path / "text.npy"), "text.npy", "not a .npy")


def test_paths_are_checked_before_running_and_named(small, tmp_path, monkeypatch):
    _, plan = small

    def never(*args):
        raise AssertionError("ran before checking the paths")
    monkeypatch.setattr("acltuner.runtime.measure.time_runs", never)
    for output in ("/proc/x.npy", tmp_path / "missing" / "y.npy", tmp_path):
        assert_one_line_error(invoke("run", plan, "--output", output), str(output),
                              "cannot write")
    for missing in (tmp_path / "missing.plan.json", tmp_path):
        assert_one_line_error(invoke("run", missing), str(missing), "cannot read")
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_the_output_is_written_where_asked(small, tmp_path, monkeypatch):
    _, plan = small
    out = tmp_path / "logits"  # no .npy added: the file is the one named
    assert invoke("run", plan, "--output", out, "--repeat", "1", "--warmup", "0").exit_code == 0
    assert np.load(out).shape == (1, 10)
    assert [p.name for p in tmp_path.glob("logits*")] == ["logits"]

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", full)
    assert_one_line_error(invoke("run", plan, "--output", tmp_path / "y.npy", "--repeat", "1",
                                 "--warmup", "0"), str(tmp_path / "y.npy"), "cannot write",
                          os.strerror(errno.ENOSPC))
    assert not list(tmp_path.glob("*y.npy*"))  # nor a temporary file left behind


def test_a_plan_for_another_model_is_refused(small):
    path, plan = small
    model = onnx.load(path)
    weight = model.graph.initializer[0]
    weight.raw_data = weight.raw_data[:-4] + b"\0" * 4  # any change of the file
    onnx.save(model, path)
    assert_one_line_error(invoke("run", plan), "changed since tuning", "--force")
    result = invoke("run", plan, "--force", "--repeat", "1", "--warmup", "0")
    assert result.exit_code == 0 and "warning: model" in result.output


def test_a_plan_missing_a_conv_is_refused(small):
    _, plan = small
    data = json.loads(plan.read_text())
    data["nodes"] = [n for n in data["nodes"] if n["node"] != "c2"]
    plan.write_text(json.dumps(data))
    assert_one_line_error(invoke("run", plan), "no config for Conv node", "c2")


def _sigmoid_far_below_one(path) -> None:
    """A Conv biased to -16 and a Sigmoid: every output below 1.6e-5, where
    onnxruntime's Sigmoid is about 1e-2 from exact relative to the largest."""
    rng = np.random.default_rng(0)
    w = (0.3 * rng.standard_normal((4, 3, 3, 3))).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1] * 4),
         helper.make_node("Sigmoid", ["c"], ["y"], name="sigmoid")], "sigmoid",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(np.full(4, -16, np.float32), "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)


def test_check_judges_both_engines_by_float64_where_they_disagree(tmp_path):
    """onnxruntime the inexact one: the check passes, saying so."""
    path = tmp_path / "sigmoid.onnx"
    _sigmoid_far_below_one(path)
    plan = default_plan(path, tmp_path)
    report = run_check(plan)
    judged = report["float64_reference"]
    assert report["max_rel_diff"] > CHECK_TOLERANCE and report["check_passed"]
    assert judged["ours_max_rel_err"] < 1e-4 < CHECK_TOLERANCE < judged["onnxruntime_max_rel_err"]
    text = invoke("run", plan, "--check", "--repeat", "1", "--warmup", "0")
    assert text.exit_code == 0, text.output
    assert "check vs float64" in text.output and "max rel diff ours" in text.output


def _wrong_by(monkeypatch, factor: float) -> None:
    """Ours' outputs scaled by `factor` after every timed run."""
    from acltuner.runtime import measure
    time_runs = measure.time_runs

    def wrong(*args):
        latency, outputs = time_runs(*args)
        return latency, {name: out * np.float32(factor) for name, out in outputs.items()}
    monkeypatch.setattr(measure, "time_runs", wrong)


def test_check_fails_when_ours_is_far_from_float64(small, monkeypatch):
    _, plan = small
    _wrong_by(monkeypatch, 1.01)
    result = invoke("run", plan, "--check", "--repeat", "1", "--warmup", "0", "--json")
    assert result.exit_code == 1
    assert "check failed: max relative difference from onnxruntime 0.01 > 0.001, and ours is " \
           "0.01 from a float64 reference (onnxruntime " in result.output
    report = json.loads(result.output.splitlines()[0])
    judged = report["float64_reference"]
    assert not report["check_passed"] and judged["problem"] is None
    assert judged["ours_max_rel_err"] == pytest.approx(0.01, rel=1e-3)
    assert judged["onnxruntime_max_rel_err"] < 1e-5


def test_check_fails_without_a_float64_reference_in_time(small, monkeypatch):
    from acltuner.app import run
    _, plan = small
    _wrong_by(monkeypatch, 1.01)
    monkeypatch.setattr(run, "REFERENCE_TIMEOUT_S", 0.01)
    result = invoke("run", plan, "--check", "--repeat", "1", "--warmup", "0")
    assert result.exit_code == 1
    assert "no float64 reference to judge by: not done within 0.01 s" in result.output
