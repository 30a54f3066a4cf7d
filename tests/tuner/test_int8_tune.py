"""int8 tasks tuned as their own (tuner/int8_search.py): a quantized model's
convolutions that run in int8 get an int8 config (conv_int8's kernel and
split), chosen from their times in the whole model, which the plan stores
and `run` uses; the float tasks of those convolutions are not tuned.  No
assertion here is on a measured time: choices are checked with a fake run."""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner

from acltuner.cli import main
from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.plan import load_plan
from acltuner.onnx.model import load_model_detached
from acltuner.runtime.load import check, load
from acltuner.runtime.lower import lower
from acltuner.runtime.quant_steps import output_steps
from acltuner.taskgen.int8 import INT8_ALGORITHM, Int8Task
from acltuner.tuner.int8_tasks import split_int8
from acltuner.taskgen.tasks import generate_tasks
from acltuner.tuner.in_model import choose_in_model
from acltuner.tuner.int8_search import int8_candidates
from tests.runtime.test_int8 import SHAPE, _Model
from tests.support.cli_checks import assert_one_line_error
from tests.support.records_checks import read_records

KERNELS = ["8x32c4-rows-avx512vnni", "8x16c4-interleaved-avx512vnni"]


def _quantized(tmp_path) -> tuple[str, str]:
    """A model of three int8 convolutions (a 3x3, a depthwise 3x3, a 1x1) and
    its output's name."""
    m = _Model()
    a = m.op("Relu", [m.conv("x", SHAPE[1], 16, 3)])
    y = m.conv(m.conv(a, 16, 16, 3, group=16), 16, 8, 1)
    return m.quantized(tmp_path, [y]), y


def _within_a_step_of_onnxruntime(path: str, y: str, plan_path, seed: int) -> None:
    """The plan's output on a random input within one quantisation step of
    onnxruntime's int8 session."""
    x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    ours = load(plan_path).run({"x": x})[y]
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run([y], {"x": x})[0]
    step = output_steps(path)[y]
    assert float(np.abs(ours - theirs).max() / step.scale.max()) <= 1.0 + 1e-3


def _task(key: str, nodes: list[str], group: int = 1) -> Int8Task:
    shape = ConvShape(n=1, c=16, h=12, w=12, oc=16, kh=3, kw=3, pad_top=1, pad_left=1,
                      pad_bottom=1, pad_right=1, group=group)
    return Int8Task(key, shape, ("u8", "s8", "u8"), nodes, shape.flops * len(nodes))


def test_candidates_are_every_int8_kernel_on_a_few_splits():
    default = ExecConfig(INT8_ALGORITHM, KERNELS[0], (1, 1), 2)
    cands = int8_candidates(_task("t", ["a"]), default, KERNELS, [[0], [1]], 2)
    assert cands[0] == default and len(set(cands)) == len(cands)
    assert {c.ukernel for c in cands} == set(KERNELS)
    assert {(c.core_weights, c.workloads) for c in cands} == \
        {((1, 1), 2), ((1, 1), 8), ((1, 0), 1), ((0, 1), 1)}
    depthwise = int8_candidates(_task("d", ["b"], group=16),
                                ExecConfig(INT8_ALGORITHM, None, (1, 1), 2), KERNELS,
                                [[0], [1]], 2)
    assert {c.ukernel for c in depthwise} == {None} and len(depthwise) == 4


def test_each_task_keeps_its_fastest_candidate_in_the_model():
    """Measured in the model, task t1's best is a single core with the second
    kernel, not its default nor the float task's winner (both cores, 32
    workloads); t2's best beats its default by less than the margin, so t2
    keeps its default.  Each plan given to run() holds every task's i-th
    candidate."""
    float_winner = ExecConfig("im2col", "8x32-hybrid-avx512", (1, 1), 32)
    default = ExecConfig(INT8_ALGORITHM, KERNELS[0], (1, 1), 2)
    fast = ExecConfig(INT8_ALGORITHM, KERNELS[1], (1, 0), 1)
    slightly = ExecConfig(INT8_ALGORITHM, KERNELS[1], (1, 1), 8)
    t1, t2 = _task("t1", ["a", "b"]), _task("t2", ["c"])
    times = {default: 1.0, fast: 0.6, slightly: 0.99,
             ExecConfig(INT8_ALGORITHM, KERNELS[0], (1, 1), 32): 0.8}
    seen = []

    def run(plans):
        seen.extend(plans)
        return [{node: times[c] for node, c in p.items()} for p in plans]

    cands1 = [default, ExecConfig(INT8_ALGORITHM, KERNELS[0], (1, 1), 32), fast]
    cands2 = [default, slightly]
    choices = choose_in_model([(t1, cands1), (t2, cands2)], run)
    assert choices["t1"].config == fast != float_winner
    assert (choices["t1"].default_ms, choices["t1"].ms) == (1.0, 0.6)
    assert choices["t2"].config == default
    assert seen == [{"a": default, "b": default, "c": default},
                    {"a": cands1[1], "b": cands1[1], "c": slightly},
                    {"a": fast, "b": fast, "c": default}]


def test_split_int8_leaves_no_float_task_of_int8_convolutions(tmp_path):
    path, _ = _quantized(tmp_path)
    taskset, int8 = split_int8(generate_tasks(path))
    assert taskset.tasks == []  # every convolution runs in int8
    assert len(taskset.conv_nodes) == 3
    assert sorted(n for t in int8 for n in t.nodes) == sorted(c.name for c in taskset.conv_nodes)
    assert all(t.key.endswith("-qu8s8u8") for t in int8)


def test_tasks_lists_int8_tasks(tmp_path):
    path, _ = _quantized(tmp_path)
    result = CliRunner().invoke(main, ["tasks", path, "--json"])
    assert result.exit_code == 0, result.output
    tasks = json.loads(result.output)["tasks"]
    assert len(tasks) == 3
    assert all(t["algorithms"] == [INT8_ALGORITHM] and t["precision"] == "int8" for t in tasks)
    table = CliRunner().invoke(main, ["tasks", path])
    assert "3 convolutions -> 3 tasks (3 int8)" in table.output


def test_a_tuned_int8_plan_stores_int8_configs_and_runs_them(tmp_path):
    """`tune` on a quantized model: no float task is measured (the records
    hold none), every node's config is an int8 one, a kernel the launcher
    runs or none (conv_int8's own pick; always for the depthwise), and the
    program `run` builds from the plan runs each with its config; its output
    is within a step of onnxruntime's int8 session."""
    path, y = _quantized(tmp_path)
    plan_path, records = tmp_path / "p.json", tmp_path / "r.jsonl"
    result = CliRunner().invoke(main, ["tune", path, "-o", str(plan_path), "--board",
                                       "split-host", "--trials", "4", "--records", str(records)])
    assert result.exit_code == 0, result.output
    assert "(times in the whole model)" in result.output
    assert not records.exists() or read_records(records) == []
    plan = load_plan(plan_path)
    with LauncherClient() as client:
        kernels = native.hello_int8_ukernels(client.hello_info)
    assert kernels  # this launcher names its int8 kernels
    for node in plan.nodes:
        assert node.config.algorithm == INT8_ALGORITHM, node
        assert node.task.endswith("-qu8s8u8")
        assert node.default_config.ukernel is None  # conv_int8's own pick
        assert node.config.ukernel in (None, *kernels)
        assert node.node != "conv2" or node.config.ukernel is None  # the depthwise
    checked = check(plan_path)  # what load(), and so `run`, builds
    ops = {op.node: op for stage in checked.stages for op in getattr(stage, "ops", [])
           if op.kind == "conv_int8"}
    assert set(ops) == {n.node for n in plan.nodes}
    for node in plan.nodes:
        attrs = ops[node.node].args
        assert attrs["ukernel"] == (node.config.ukernel or "")
        assert (tuple(attrs["core_weights"]), attrs["workloads"]) == \
            (node.config.core_weights, node.config.workloads)
    _within_a_step_of_onnxruntime(path, y, plan_path, seed=3)


def test_an_int8_config_on_a_float_convolution_is_refused(tmp_path):
    """A plan whose int8 config lands on a convolution that runs in float
    (the model changed, or a plan edited) fails to load, naming the node."""
    path, _ = _quantized(tmp_path)
    plan_path = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["tune", path, "-o", str(plan_path), "--board",
                                       "split-host", "--strategy", "default"])
    assert result.exit_code == 0, result.output
    data = json.loads(plan_path.read_text())
    assert all(n["config"]["algorithm"] == INT8_ALGORITHM for n in data["nodes"])
    plan = load_plan(plan_path)
    model, weights = load_model_detached(path, None)
    with pytest.raises(ValueError, match=r"Conv node conv0: its config conv_int8/"):
        lower(model, {n.node: n.config for n in plan.nodes}, None, weights, int8=None)


def test_plan_edit_sets_int8_configs_and_the_plan_runs_them(tmp_path):
    """`plan edit` on a quantized model's plan: an int8 node takes conv_int8
    with one of the engine's int8 kernels or '-' (conv_int8's own pick), the
    nodes are pinned, and the program built from the plan runs each edited
    node with that kernel and split, its output within a step of
    onnxruntime's int8 session."""
    path, y = _quantized(tmp_path)
    plan_path = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["tune", path, "-o", str(plan_path), "--board",
                                       "split-host", "--strategy", "default"])
    assert result.exit_code == 0, result.output
    kernel = native.int8_ukernels()[-1]
    result = CliRunner().invoke(main, ["plan", "edit", str(plan_path),
                                       "--set", f"conv0=conv_int8/{kernel}/1:1/w3",
                                       "--set", "conv3=conv_int8/-/1:0/w1",
                                       "--set", "conv2=conv_int8"])
    assert result.exit_code == 0, result.output
    nodes = {n.node: n for n in load_plan(plan_path).nodes}
    assert str(nodes["conv0"].config) == f"conv_int8/{kernel}/1:1/w3"
    assert str(nodes["conv3"].config) == "conv_int8/-/1:0/w1"
    assert nodes["conv2"].config.ukernel is None  # the depthwise: a direct loop
    assert nodes["conv0"].pinned == f"plan edit conv0=conv_int8/{kernel}/1:1/w3"
    ops = {op.node: op.args for stage in check(plan_path).stages
           for op in getattr(stage, "ops", []) if op.kind == "conv_int8"}
    assert (ops["conv0"]["ukernel"], tuple(ops["conv0"]["core_weights"]),
            ops["conv0"]["workloads"]) == (kernel, (1, 1), 3)
    assert (ops["conv3"]["ukernel"], tuple(ops["conv3"]["core_weights"])) == ("", (1, 0))
    _within_a_step_of_onnxruntime(path, y, plan_path, seed=5)


@pytest.mark.parametrize("setting, needles", [
    ("conv0=im2col", ["conv0 runs in int8", "conv_int8 only"]),
    ("conv0=conv_int8/8x12-interleaved-neon", ["unknown int8 micro-kernel",
                                              "8x12-interleaved-neon"]),
    ("conv2=conv_int8/{kernel}", ["depthwise", "takes no micro-kernel"]),
    ("conv3=conv_int8/-/1:1:1/w2", ["3 core weights"]),
])
def test_a_bad_int8_edit_is_refused_and_leaves_the_file(tmp_path, setting, needles):
    path, _ = _quantized(tmp_path)
    plan_path = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["tune", path, "-o", str(plan_path), "--board",
                                       "split-host", "--strategy", "default"])
    assert result.exit_code == 0, result.output
    before = plan_path.read_bytes()
    setting = setting.format(kernel=native.int8_ukernels()[0])
    assert_one_line_error(CliRunner().invoke(main, ["plan", "edit", str(plan_path), "--set",
                                                    setting]), *needles)
    assert plan_path.read_bytes() == before


def test_int8_convolutions_are_pinned_and_keep_their_pin(tmp_path):
    """`--pin NODE=conv_int8/KERNEL` and a kind pin of conv_int8: the pinned
    int8 nodes are not searched in the model and keep their pin through the
    in-context check; the others are searched; the plan runs each pinned
    node with its kernel, within a step of onnxruntime's int8 session."""
    path, y = _quantized(tmp_path)
    plan_path = tmp_path / "p.json"
    kernel = native.int8_ukernels()[-1]
    result = CliRunner().invoke(main, ["tune", path, "-o", str(plan_path), "--board",
                                       "split-host", "--trials", "2",
                                       "--records", str(tmp_path / "r.jsonl"),
                                       "--pin", f"conv0=conv_int8/{kernel}",
                                       "--pin", "kind=depthwise:conv_int8"])
    assert result.exit_code == 0, result.output
    nodes = {n.node: n for n in load_plan(plan_path).nodes}
    assert nodes["conv0"].config.ukernel == kernel
    assert nodes["conv0"].pinned == f"conv0=conv_int8/{kernel}"
    assert nodes["conv2"].pinned == "kind=depthwise:conv_int8"
    assert nodes["conv2"].config == nodes["conv2"].default_config  # conv_int8's own pick
    for name in ("conv0", "conv2"):
        assert nodes[name].config.core_weights == nodes[name].default_config.core_weights
        assert nodes[name].tuned_ms is None and nodes[name].reverted is None
    assert not any(n.pinned for name, n in nodes.items() if name not in ("conv0", "conv2"))
    ops = {op.node: op.args for stage in check(plan_path).stages
           for op in getattr(stage, "ops", []) if op.kind == "conv_int8"}
    assert ops["conv0"]["ukernel"] == kernel
    _within_a_step_of_onnxruntime(path, y, plan_path, seed=6)


@pytest.mark.parametrize("pin, needles", [
    ("conv0=im2col", ["conv0 runs in int8", "pin it to conv_int8"]),
    ("conv0=conv_int8/8x12-interleaved-neon", ["unknown int8 micro-kernel",
                                              "8x12-interleaved-neon"]),
    ("conv2=conv_int8/{kernel}", ["depthwise", "takes no micro-kernel"]),
    ("kind=transposed:conv_int8", ["no int8 convolution of the model is transposed"]),
    ("nope=conv_int8", ["no convolution named 'nope'", "conv0"]),
])
def test_a_bad_int8_pin_is_one_line(tmp_path, pin, needles):
    """Checked against the engine before anything is measured or written."""
    path, _ = _quantized(tmp_path)
    plan_path = tmp_path / "p.json"
    assert_one_line_error(CliRunner().invoke(main, [
        "tune", path, "-o", str(plan_path), "--board", "split-host", "--strategy", "default",
        "--pin", pin.format(kernel=native.int8_ukernels()[0])]), *needles)
    assert not plan_path.exists()
