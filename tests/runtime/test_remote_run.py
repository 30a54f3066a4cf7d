"""Whole-model programs run inside a launcher (PROTOCOL.md, graph commands):
the local launcher and the AArch64 one under qemu run plans with every native
operation kind and match onnxruntime (and, locally, the in-process program
bit for bit); bad graph requests get one-line errors and leave the launcher
serving; a model that needs onnxruntime is refused before anything runs."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import acltuner
from acltuner import zoo
from acltuner.board.registry import load_board
from acltuner.engine.graph import Tensor
from acltuner.engine.launcher import PROTOCOL_VERSION, LauncherClient, LauncherError, \
    default_launcher_path
from acltuner.engine.launcher_graph import LauncherGraph
from acltuner.onnx.model import load_model
from acltuner.plan import load_plan
from acltuner.runtime.inputs import random_inputs
from acltuner.runtime.lower import lower
from acltuner.runtime.measure import check
from acltuner.runtime.profile import HOST_COPIES, summarize
from acltuner.runtime.remote import RemoteProgram, run_remote
from acltuner.runtime.render import render_json
from acltuner.taskgen.tasks import generate_tasks
from acltuner.tuner.tune import tune_model
from acltuner.tuner.tuner_config import load_tuner_config
from acltuner.zoo.builder import GraphBuilder
from tests.support.engine_backends import QEMU, aarch64_launcher_or_skip

BOARD = load_board("split-host")  # cpu0 and cpu1, which qemu-user also has
REL_TOL = 1e-4
EVERY_KIND = {"conv", "unary", "affine", "binary", "pool", "global_average_pool", "concat",
              "transpose", "matmul", "softmax", "lrn", "pad", "resize", "batch_matmul", "gather",
              "slice"}


def every_kind_model() -> onnx.ModelProto:
    """Small, with every kind of native operation: conv (+residual, relu),
    pools, concat, LRN, a channel shuffle (a gather), a Slice reversing the
    channels, pad, a per-channel Mul and sigmoid (one affine pass), tanh and the
    difference of two computed maps, a bilinear resize, the transpose
    a Flatten of an NHWC map needs, Gemm, softmax, a Gather of channels and
    the MatMul of two computed tensors, scaled (its scale attribute); three
    outputs."""
    b = GraphBuilder(seed=3, input_shape=(1, 3, 12, 12))
    a = b.conv("input", "conv1", 8, 3, pads=1, bias=True, relu="relu1")
    r = b.conv(a, "conv2", 8, 3, pads=1, bn="bn2")
    r = b.add(r, a, "add2", relu="relu2")
    c = b.maxpool(r, "pool_max", 2, 2, 0)
    d = b.node("AveragePool", [c], "pool_avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    e = b.concat([c, d], "cat")
    f = b.node("LRN", [e], "lrn", size=3, alpha=1e-3)
    f = b.node("Reshape", [f, b.constant("groups.shape", np.array([1, 2, 8, 6, 6]))], "groups")
    f = b.node("Transpose", [f], "shuffle", perm=[0, 2, 1, 3, 4])
    f = b.node("Reshape", [f, b.constant("merge.shape", np.array([1, 16, 6, 6]))], "merge",
               channels=16)
    f = b.node("Slice", [f] + [b.constant(f"reverse.{k}", np.array([v], np.int64)) for k, v in (
        ("starts", -1), ("ends", -2 ** 63), ("axes", 1), ("steps", -1))], "reverse")
    pads = b.constant("pad.pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    value = b.constant("pad.value", np.float32(0.5))
    g = b.node("Pad", [f, pads, value], "pad")
    scale = b.constant("scale", b.rng.uniform(0.5, 1.5, (1, 16, 1, 1)))
    h = b.node("Sigmoid", [b.node("Mul", [g, scale], "mul")], "sigmoid")
    i = b.maxpool(h, "pool_last", 2, 2, 0)
    i = b.node("Resize", [i, "", b.constant("resize.scales", np.array([1, 1, 2, 2], np.float32))],
               "resize", mode="linear")
    i = b.maxpool(i, "pool_resized", 2, 2, 0)
    j = b.flatten(i, "flatten", hw=(4, 4))
    y = b.node("Softmax", [b.gemm(j, "fc", 10)], "softmax", axis=1)
    gap = b.global_avg_pool(b.node("Sub", [h, b.node("Tanh", [h], "tanh")], "sub"), "gap")
    some = b.node("Gather", [h, b.constant("channels", np.array([0, 3, -1]))], "some", axis=1)
    gram = b.node("MatMul", [some, b.node("Transpose", [some], "some_t", perm=[0, 1, 3, 2])],
                  "gram")
    gram = b.node("Mul", [gram, b.constant("gram.scale", np.float32(0.3))], "gram_scaled")
    model = b.model(y, "every_kind")
    model.graph.output.extend(helper.make_tensor_value_info(t, TensorProto.FLOAT, None)
                              for t in (gap, gram))
    return model


def make_plan(model: onnx.ModelProto, client: LauncherClient, tmp_path, name: str):
    """The ArmNN-rule plan for the launcher's engine (its micro-kernels): no measurement."""
    model_path = tmp_path / f"{name}.onnx"
    onnx.save(model, model_path)
    plan_path = tmp_path / f"{name}.plan.json"
    tune_model(generate_tasks(model_path), str(plan_path), board=BOARD, client=client,
               records_path=str(tmp_path / "records.jsonl"), config=load_tuner_config(),
               strategy="default")
    return plan_path, model_path


def assert_matches_onnxruntime(model_path, inputs, outputs) -> None:
    diff = check(str(model_path), inputs, outputs, REL_TOL, reference_timeout_s=60)
    assert diff.max_rel <= REL_TOL, diff


def test_every_kind_model_lowers_to_every_native_kind(tmp_path):
    # So that the runs below send every graph_op kind.
    with LauncherClient() as client:
        plan_path, model_path = make_plan(every_kind_model(), client, tmp_path, "every_kind")
    configs = {n.node: n.config for n in load_plan(plan_path).nodes}
    stages, _ = lower(load_model(model_path), configs)
    assert len(stages) == 1 and {op.kind for op in stages[0].ops} == EVERY_KIND


@pytest.mark.parametrize("name", ["every_kind", "mobilenetv2", "resnet18"])
def test_local_launcher_runs_the_plan_like_the_program(name, tmp_path):
    model = every_kind_model() if name == "every_kind" else zoo.build(name)
    with LauncherClient() as client:
        plan_path, model_path = make_plan(model, client, tmp_path, name)
    local = acltuner.load(plan_path)
    inputs = random_inputs(local)
    run, program, used = run_remote(plan_path, [default_launcher_path()], inputs, repeat=3,
                                    warmup=1)
    assert used is inputs and list(run.outputs) == local.outputs
    expected = local.run(inputs)
    for out in local.outputs:  # same engine build, so the same bits
        np.testing.assert_array_equal(run.outputs[out], expected[out])
    assert_matches_onnxruntime(model_path, inputs, run.outputs)
    lat = run.latency
    assert 0 < lat.p10_ms <= lat.median_ms <= lat.p90_ms
    (profile,) = lat.profiles
    assert [(e.node, e.op) for e in profile[:-1]] \
        == [(e.node, e.op) for e in local.last_profile[:-1]]
    assert profile[-1].node == HOST_COPIES and all(e.ms >= 0 for e in profile)
    assert run.peak_rss_mb > program.arena_bytes / 2**20
    # What `acltuner run` prints takes the remote run as it is.
    report = json.loads(render_json(lat, run.peak_rss_mb, program, summarize(lat.profiles),
                                    None, True))
    assert report["delegated"] == [] and len(report["nodes"]) == len(profile)


@pytest.mark.aarch64
def test_aarch64_launcher_under_qemu_runs_the_plan(tmp_path):
    command = QEMU + [aarch64_launcher_or_skip()]
    model = every_kind_model()
    with LauncherClient(command, timeout_s=300) as client:
        assert client.hello_info["isa"] == "neon"
        plan_path, model_path = make_plan(model, client, tmp_path, "every_kind")
    with LauncherClient(command, timeout_s=300) as client:
        remote = RemoteProgram(plan_path, client)
        inputs = random_inputs(remote.program)
        run = remote.run(inputs, repeat=2, warmup=0)
        again = remote.run({k: v * 0.5 for k, v in inputs.items()}, repeat=1, warmup=0)
    assert_matches_onnxruntime(model_path, inputs, run.outputs)
    # Built for the board's engine: its convolutions and GEMMs on NEON kernels.
    assert {n.config.ukernel for n in load_plan(plan_path).nodes} <= {None} | {
        uk["name"] for uk in client.ukernels if uk["isa"] == "neon"}
    kinds = [e.kind for e in run.latency.profiles[0]]
    assert any(k.startswith("matmul") and k.endswith("-neon") for k in kinds), kinds
    # The in-process program (this machine's kernels) agrees too.
    (tmp_path / "local").mkdir()
    with LauncherClient() as client:
        local_plan, _ = make_plan(model, client, tmp_path / "local", "every_kind")
    expected = acltuner.load(local_plan).run(inputs)
    for out, y in expected.items():
        assert np.max(np.abs(run.outputs[out] - y)) <= REL_TOL * np.max(np.abs(y))
    # A second run with other inputs computes them, not the first run's result.
    assert not np.array_equal(again.outputs["output"], run.outputs["output"])
    assert_matches_onnxruntime(model_path, {k: v * 0.5 for k, v in inputs.items()},
                               again.outputs)


def test_a_model_needing_onnxruntime_is_refused_naming_its_nodes(tmp_path):
    b = GraphBuilder(seed=1, input_shape=(1, 3, 8, 8))
    x = b.conv("input", "conv", 4, 3, pads=1)
    y = b.node("Sin", [b.node("Sin", [x], "sin_a")], "sin_b")
    model = b.model(y, "delegated")
    with LauncherClient() as client:
        plan_path, _ = make_plan(model, client, tmp_path, "delegated")
    with pytest.raises(ValueError) as e:
        run_remote(plan_path, [default_launcher_path()])
    message = str(e.value)
    assert "\n" not in message
    assert "2 node(s)" in message and "sin_a (Sin)" in message and "sin_b (Sin)" in message
    assert "onnxruntime" in message


# ---- the graph commands themselves ----

@pytest.fixture
def client():
    with LauncherClient() as c:
        yield c


def _error(client: LauncherClient, request: dict) -> str:
    with pytest.raises(LauncherError) as e:
        client.request(request)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_graph_order_runs_nodes_added_out_of_order_in_model_order(client):
    g = LauncherGraph(client, 48, [1, 1], 4)
    x, mid, out = Tensor(0, (2, 8)), Tensor(16, (2, 8)), Tensor(32, (2, 8))
    g.add("unary", [mid], out, op="clip", a=-1.0, b=0.5)  # added first, runs second
    g.add("unary", [x], mid, op="leaky_relu", a=0.25)
    g.order([1, 0])
    xs = np.linspace(-6, 6, 16, dtype=np.float32).reshape(2, 8)
    run = g.run([(x, xs, (0, 1))], [(out, (0, 1))], repeat=1, warmup=0)
    np.testing.assert_array_equal(run.outputs[0],
                                  np.clip(np.where(xs > 0, xs, np.float32(0.25) * xs), -1, 0.5))


def test_graph_requests_without_a_graph_are_refused(client):
    assert "graph_run: no graph: send graph_create first" in _error(client, {"cmd": "graph_run"})
    assert "no graph" in _error(client, {"cmd": "graph_op", "kind": "softmax"})
    assert "no graph" in _error(client, {"cmd": "graph_write", "offset": 0, "data": ""})


def test_bad_graph_requests_name_the_field_and_keep_the_graph(client):
    g = LauncherGraph(client, 64, [1, 1], 4)
    x, out = Tensor(0, (2, 8)), Tensor(16, (2, 8))
    g.add("unary", [x], out, op="clip", a=-1.0, b=1.0)
    assert g.node_count == 1
    cases = [
        ({"cmd": "graph_create", "arena_floats": 64, "core_weights": [1], "workloads": 1,
          "colour": 1}, 'unknown field "colour" in graph_create'),
        ({"cmd": "graph_op", "kind": "warp", "inputs": []}, 'unknown kind "warp"'),
        ({"cmd": "graph_op", "kind": "unary", "attrs": {"op": "relu"},
          "inputs": [{"offset": 60, "dims": [2, 8]}], "out": {"offset": 16, "dims": [2, 8]}},
         "graph_op unary: relu: input"),
        ({"cmd": "graph_op", "kind": "unary", "attrs": {"op": "sin"},
          "inputs": [{"offset": 0, "dims": [2]}], "out": {"offset": 16, "dims": [2]}},
         'field "op" must be one of none, relu'),
        ({"cmd": "graph_op", "kind": "unary", "attrs": {"op": "relu", "alpha": 1},
          "inputs": [{"offset": 0, "dims": [2]}], "out": {"offset": 16, "dims": [2]}},
         'graph_op unary: unknown field "alpha" in attrs'),
        ({"cmd": "graph_op", "kind": "softmax", "inputs": [{"offset": 0, "dims": [2, 8], "at": 1}],
          "out": {"offset": 16, "dims": [2, 8]}},
         'graph_op softmax: inputs[0]: unknown field "at"'),
        ({"cmd": "graph_op", "kind": "softmax", "inputs": [], "out": {"offset": 16, "dims": [2]}},
         "graph_op softmax: softmax: takes 1 input, got 0"),
        ({"cmd": "graph_op", "kind": "pool", "attrs": {"op": "max", "kernel": [2]},
          "inputs": [{"offset": 0, "dims": [1, 4, 4, 1]}],
          "out": {"offset": 16, "dims": [1, 2, 2, 1]}},
         'pool: kernel must hold 2 values, got 1'),
        ({"cmd": "graph_op", "kind": "matmul",
          "attrs": {"ukernel": "none", "k": 8, "n": 2, "b": "AAAAAA=="},
          "inputs": [{"offset": 0, "dims": [2, 8]}], "out": {"offset": 32, "dims": [2, 2]}},
         'matmul: b must hold 16 values, got 1'),
        ({"cmd": "graph_op", "kind": "matmul", "attrs": {"ukernel": "none", "b": "AAAAA"},
          "inputs": [{"offset": 0, "dims": [2, 8]}], "out": {"offset": 32, "dims": [2, 2]}},
         'field "b" is not base64 of float32'),
        ({"cmd": "graph_write", "offset": 62, "data": "AAAAAAAAAAAAAAAA"},
         "graph_write: floats [62, 65) lie outside the arena of 64 floats"),
        ({"cmd": "graph_run", "outputs": [{"offset": 60, "floats": 8}]},
         "graph_run: outputs[0]: floats [60, 68) lie outside the arena"),
        ({"cmd": "graph_run", "repeat": 0}, 'field "repeat" must be an integer in [1'),
        ({"cmd": "graph_order", "order": [0, 0]}, 'graph_order: field "order" must hold 1 '),
        ({"cmd": "graph_order", "order": [1]}, "graph_order"),
    ]
    for request, expected in cases[1:]:
        assert expected in _error(client, request), request
    # None of that changed the graph, and it still runs.
    xs = np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8)
    run = g.run([(x, xs, (0, 1))], [(out, (0, 1))], repeat=2, warmup=0)
    assert g.node_count == 1 and len(run.node_ms) == 1 and len(run.times_ms) == 2
    np.testing.assert_array_equal(run.outputs[0], np.clip(xs, -1, 1))
    # A bad graph_create leaves no graph (it replaces the old one first).
    assert cases[0][1] in _error(client, cases[0][0])
    assert "no graph" in _error(client, {"cmd": "graph_run"})
    assert client.request({"cmd": "hello"})["protocol"] == PROTOCOL_VERSION
