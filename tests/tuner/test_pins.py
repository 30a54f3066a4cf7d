"""Pins (`tune --pin`, `--pins FILE`) and `plan edit`, end to end on this host
(split-host: cpu0 and cpu1 as two clusters): the pinned configs are the ones
in the plan and the records, the whole model still matches onnxruntime, and
every bad pin or edit is one line.  No assertion is on a measured time."""
from __future__ import annotations

import dataclasses
import json

import onnx
import pytest

from acltuner.armnn_default import armnn_ukernel
from acltuner.engine import native
from acltuner.plan import load_plan
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, default_plan, invoke, run_check
from tests.support.records_checks import latest, read_records

# By construction below: which nodes are of which kind.
DEPTHWISE = {"dw", "dw2"}
STRIDED = {"c4", "dw2"}


@pytest.fixture
def model(tmp_path):
    b = GraphBuilder(seed=3, input_shape=(1, 3, 20, 20))
    x = b.conv("input", "c1", 16, 3, pads=1, bn="c1.bn", relu="c1.relu")
    y = b.conv(x, "c2", 16, 3, pads=1, relu="c2.relu")
    y = b.conv(y, "c3", 16, 3, pads=1)  # c2's task
    y = b.add(y, x, "add", relu="add.relu")
    y = b.conv(y, "dw", 16, 3, pads=1, group=16, relu="dw.relu")
    y = b.conv(y, "pw", 32, 1, bias=True)
    y = b.conv(y, "c4", 32, 1, stride=2)
    y = b.conv(y, "dw2", 32, 3, stride=2, pads=1, group=32)
    path = tmp_path / "m.onnx"
    onnx.save(b.model(y, "pins"), path)
    return path


def _tune(model, tmp_path, *args):
    plan = tmp_path / "m.plan.json"
    result = invoke("tune", model, "-o", plan, "--board", "split-host", "--records",
                    tmp_path / "r.jsonl", *args)
    return result, plan


def _rule_kernel(plan, node: str, algorithm: str) -> str:
    """The ArmNN rule's micro-kernel for `algorithm` on the node's shape."""
    from acltuner.taskgen.tasks import generate_tasks
    shape = next(t.shape for t in generate_tasks(plan.model_path).tasks if node in t.nodes)
    kernels = [dataclasses.asdict(uk) for uk in native.ukernels()]
    return armnn_ukernel(shape, algorithm, kernels, native.isa(), native.check)


def test_a_node_pin_is_measured_once_not_searched_and_runs_right(model, tmp_path):
    result, plan_path = _tune(model, tmp_path, "--trials", "6", "--pin", "c2=im2col")
    assert result.exit_code == 0, result.output
    assert "pinned (c2=im2col)" in result.output
    plan = load_plan(plan_path)
    nodes = {n.node: n for n in plan.nodes}
    c2, c3 = nodes["c2"], nodes["c3"]
    assert c2.pinned == "c2=im2col" and c3.pinned is None
    assert c2.config.algorithm == "im2col"
    assert c2.config.ukernel == _rule_kernel(plan, "c2", "im2col")
    # The rule's placement and workloads.
    assert c2.config.core_weights == c2.default_config.core_weights
    assert c2.config.workloads == c2.default_config.workloads
    # Measured once (or again, once, if noise control asked: latest() checks).
    records = latest(read_records(tmp_path / "r.jsonl"))
    pinned = [r for r in records
              if r["task"] == c2.task and r["config"] == c2.config.to_dict()]
    assert [r["strategy"] for r in pinned] == ["pinned"]
    assert c2.tuned_ms == pinned[0]["median_ms"]
    # c3, of c2's task, is still searched: more than the default and the pin measured.
    searched = [r for r in read_records(tmp_path / "r.jsonl") if r["task"] == c3.task]
    assert len({str(r["config"]) for r in searched}) >= 6
    assert run_check(plan_path)["max_rel_diff"] < 1e-3


def test_a_kind_pins_every_matching_node_and_only_those(model, tmp_path):
    result, plan_path = _tune(model, tmp_path, "--trials", "5",
                              "--pin", "kind=depthwise:depthwise_pixel",
                              "--pin", "kind=strided:im2col", "--pin", "dw2=depthwise_pixel")
    assert result.exit_code == 0, result.output
    plan = load_plan(plan_path)
    pinned = {n.node: n for n in plan.nodes if n.pinned}
    assert set(pinned) == DEPTHWISE | STRIDED
    for name in DEPTHWISE:
        assert pinned[name].config.algorithm == "depthwise_pixel"
    assert pinned["c4"].config.algorithm == "im2col"
    assert pinned["dw2"].pinned == "dw2=depthwise_pixel"  # the node's own pin wins
    assert ", 3 node(s) pinned" in result.output
    # Not searched: its task measured the pin and the default only.
    dw = pinned["dw"]
    measured = {str(r["config"]) for r in read_records(tmp_path / "r.jsonl")
                if r["task"] == dw.task}
    assert measured == {str(dw.config.to_dict()), str(dw.default_config.to_dict())}
    show = invoke("plan", "show", plan_path)
    assert show.exit_code == 0, show.output
    for line in show.output.splitlines():
        name = line.split(" ", 1)[0]
        assert ("pinned (" in line) == (name in pinned), line
    run_check(plan_path)


def test_a_pins_file(model, tmp_path):
    pins = tmp_path / "pins.yaml"
    pins.write_text("schema_version: 1\npins:\n"
                    "  - {node: c1, algorithm: direct_nhwc}\n"
                    "  - {kind: pointwise, algorithm: gemm1x1}\n")
    result, plan_path = _tune(model, tmp_path, "--strategy", "default", "--pins", pins,
                              "--pin", "c3=indirect")
    assert result.exit_code == 0, result.output
    plan = load_plan(plan_path)
    algorithms = {n.node: (n.config.algorithm, n.pinned) for n in plan.nodes}
    assert algorithms["c1"] == ("direct_nhwc", "c1=direct_nhwc")
    assert algorithms["pw"] == ("gemm1x1", "kind=pointwise:gemm1x1")
    assert algorithms["c4"] == ("gemm1x1", "kind=pointwise:gemm1x1")
    assert algorithms["c3"] == ("indirect", "c3=indirect")
    assert algorithms["c2"][1] is None
    run_check(plan_path)


@pytest.mark.parametrize("pin, needles", [
    ("nope=im2col", ["nope", "no convolution named"]),
    ("c1=magic", ["c1=magic", "unknown algorithm 'magic'"]),
    ("c1=im2col/no-such-kernel", ["c1=im2col/no-such-kernel", "unknown micro-kernel"]),
    ("c1=depthwise_pixel/x", ["takes no micro-kernel"]),
    ("pw=winograd_4x4_3x3", ["pw=winograd_4x4_3x3", "cannot run it", "3x3"]),
    ("kind=depthwise:gemm1x1", ["kind=depthwise:gemm1x1", "node dw", "cannot run it"]),
    ("kind=grouped:im2col", ["kind=grouped", "no convolution of the model is grouped"]),
    ("kind=transposed:im2col", ["no convolution of the model is transposed"]),
    ("kind=bogus:im2col", ["unknown kind 'bogus'"]),
    ("c1", ["'c1'", "NODE=ALGORITHM"]),
    ("c1=im2col/", ["ALGORITHM/KERNEL"]),
])
def test_a_bad_pin_is_one_line_and_measures_nothing(model, tmp_path, pin, needles):
    result, plan = _tune(model, tmp_path, "--trials", "2", "--pin", pin)
    assert_one_line_error(result, *needles)
    assert not plan.exists() and not (tmp_path / "r.jsonl").exists()


def test_two_kinds_pinning_one_node_differently_is_refused(model, tmp_path):
    result, _ = _tune(model, tmp_path, "--strategy", "default",
                      "--pin", "kind=depthwise:depthwise_pixel",
                      "--pin", "kind=strided:im2col")
    assert_one_line_error(result, "dw2", "pinned differently")


@pytest.mark.parametrize("text, needles", [
    ("schema_version: 2\npins: []\n", ["schema_version"]),
    ("schema_version: 1\n", ["pins"]),
    ("schema_version: 1\npins:\n  - {node: c1}\n", ["pins[0]", "algorithm"]),
    ("schema_version: 1\npins:\n  - {node: c1, kind: first, algorithm: im2col}\n",
     ["pins[0]", "exactly one of node and kind"]),
    ("schema_version: 1\npins:\n  - {node: c1, algoritm: im2col}\n", ["pins[0]", "algoritm"]),
    ("schema_version: 1\npins:\n  - {kind: huge, algorithm: im2col}\n", ["pins[0].kind"]),
    ("schema_version: 1\npins:\n  - {node: c1, algorithm: 3}\n", ["pins[0].algorithm"]),
    ("schema_version: 1\npins:\n  - {node: zz, algorithm: im2col}\n", ["pins[0]", "zz"]),
    ("pins: [", ["not valid YAML"]),
])
def test_a_bad_pins_file_is_one_line_naming_file_and_field(model, tmp_path, text, needles):
    pins = tmp_path / "pins.yaml"
    pins.write_text(text)
    result, _ = _tune(model, tmp_path, "--strategy", "default", "--pins", pins)
    assert_one_line_error(result, str(pins), *needles)


def test_plan_edit_changes_the_plan_and_it_still_runs_right(model, tmp_path):
    plan_path = default_plan(model, tmp_path)
    before = {n.node: n for n in load_plan(plan_path).nodes}
    kernel = _rule_kernel(load_plan(plan_path), "pw", "gemm1x1")
    result = invoke("plan", "edit", plan_path, "--set", "c1=direct_nhwc",
                    "--set", "dw=depthwise_pixel",
                    "--set", f"pw=gemm1x1/{kernel}/1:1/w3")
    assert result.exit_code == 0, result.output
    after = {n.node: n for n in load_plan(plan_path).nodes}
    assert str(after["c1"].config) == f"direct_nhwc/-/{before['c1'].config.weights_str}/" \
                                      f"w{before['c1'].config.workloads}"
    assert after["dw"].config.algorithm == "depthwise_pixel"
    assert str(after["pw"].config) == f"gemm1x1/{kernel}/1:1/w3"
    assert after["pw"].pinned == f"plan edit pw=gemm1x1/{kernel}/1:1/w3"
    assert after["c2"] == before["c2"]
    show = invoke("plan", "show", plan_path)
    assert show.exit_code == 0 and "pinned (plan edit c1=direct_nhwc)" in show.output
    run_check(plan_path)


@pytest.mark.parametrize("setting, needles", [
    ("nope=im2col", ["no node 'nope'"]),
    ("c1=magic", ["unknown algorithm 'magic'"]),
    ("pw=winograd_4x4_3x3", ["pw=winograd_4x4_3x3", "cannot run it"]),
    ("dw=depthwise_pixel/k", ["takes no micro-kernel"]),
    ("c1=im2col/-", ["needs a micro-kernel"]),
    ("c1=im2col/-/1:1:1/w2", ["3 core weights", "2 cores"]),
    ("c1=direct_nhwc/-/0:0/w2", ["core weights"]),
    ("c1=direct_nhwc/-/1:1/x2", ["workloads like w4"]),
    ("c1=im2col/a/b", ["expected NODE=CONFIG"]),
    ("c1=conv_int8", ["c1 runs in float", "conv_int8 is for"]),
])
def test_a_bad_edit_is_refused_and_leaves_the_file(model, tmp_path, setting, needles):
    plan_path = default_plan(model, tmp_path)
    before = plan_path.read_bytes()
    result = invoke("plan", "edit", plan_path, "--set", "c2=im2col", "--set", setting)
    assert_one_line_error(result, *needles)
    assert plan_path.read_bytes() == before


def test_tasks_shows_the_kinds_a_selector_matches(model):
    result = invoke("tasks", model, "--json")
    assert result.exit_code == 0, result.output
    kinds = {name: set(t["kinds"]) for t in json.loads(result.stdout)["tasks"]
             for name in t["node_names"]}
    assert {n for n, k in kinds.items() if "depthwise" in k} == DEPTHWISE
    assert {n for n, k in kinds.items() if "strided" in k} == STRIDED
    assert {n for n, k in kinds.items() if "first" in k} == {"c1"}
    assert {n for n, k in kinds.items() if "pointwise" in k} == {"pw", "c4"}


@pytest.mark.parametrize("k", range(1, 8))
@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2)])
def test_the_winograd_kind_is_the_square_kernels_a_winograd_algorithm_runs(k, stride, dilation):
    """Ungrouped: grouped convolutions are the `grouped` kind."""
    from acltuner.engine.config import ConvShape
    from acltuner.tuner.pins import kinds_of
    shape = ConvShape(n=1, h=13, w=13, c=8, oc=8, kh=k, kw=k, stride_h=stride, stride_w=stride,
                      dil_h=dilation, dil_w=dilation, pad_top=k // 2, pad_left=k // 2,
                      pad_bottom=k // 2, pad_right=k // 2)
    runs = [a for a in native.algorithms() if a.startswith("winograd_")
            and any(native.check(shape, a, uk.name) is None for uk in native.ukernels())]
    assert ("winograd" in kinds_of(shape, False)) == bool(runs), runs
