"""The tuned plan checked whole against its default plan (tune --in-context):
a node whose tuned config loses in the model takes its default back, a plan
the launcher cannot run whole is left as it is, and the plan kept still runs
right against onnxruntime."""
from __future__ import annotations

import dataclasses
import importlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from acltuner import plan as plan_module
from acltuner.app.tune import run_tune
from acltuner.engine.launcher import LauncherClient, default_launcher_path
from acltuner.plan import load_plan, save_plan
from acltuner.runtime.load import load
from acltuner.runtime.measure import check
from acltuner.onnx import model as onnx_model
from acltuner.tuner.in_context import MARGIN, check_in_context, choose


def _model(path, extra_node: bool = False) -> None:
    """Two 3x3 convolutions on a 32x32 map (and a Sin between them, which the
    engine does not compute, when extra_node)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, c, 3, 3)).astype(np.float32) * 0.2,
                                     f"w{i}") for i, c in enumerate((8, 16))]
    middle = "s" if extra_node else "a"
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", [middle, "w1"], ["y"], name="conv1", pads=[1, 1, 1, 1])]
    if extra_node:
        nodes.insert(1, helper.make_node("Sin", ["a"], ["s"], name="sin"))
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 8, 32, 32])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def _default_plan(tmp_path, extra_node: bool = False):
    model, plan_path = tmp_path / "two.onnx", tmp_path / "two.plan.json"
    _model(model, extra_node)
    run_tune(str(model), str(plan_path), board_name="host", trials=None,
             early_stopping=None, strategy="default", records_path=str(tmp_path / "r"),
             input_shapes=(), config_path=None, seed=0)
    return load_plan(plan_path), plan_path


def _with(plan, node: str, **changes):
    nodes = tuple(dataclasses.replace(n, config=dataclasses.replace(n.config, **changes))
                  if n.node == node else n for n in plan.nodes)
    return dataclasses.replace(plan, nodes=nodes)


def test_a_node_slower_in_the_model_takes_its_default_back(tmp_path):
    plan, _ = _default_plan(tmp_path)
    # The reference algorithm (a plain loop nest) is far slower than the
    # rule's choice: as if its task had won alone and lost in the model.
    tuned = _with(plan, "conv0", algorithm="reference", ukernel=None)
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(tuned, client, rounds=2, repeat=3)
    assert result.skipped is None
    assert "conv0" in result.reverted
    assert result.kept in ("default", "mixed")
    assert result.ms[result.kept] < result.ms["tuned"]
    kept = {n.node: n for n in result.plan.nodes}
    assert kept["conv0"].config == kept["conv0"].default_config
    # The plan kept runs, and right.
    path = tmp_path / "kept.plan.json"
    save_plan(result.plan, path)
    program = load(path)
    x = {"x": np.random.default_rng(1).standard_normal((1, 8, 32, 32)).astype(np.float32)}
    got = check(str(plan.model_path), x, program.run(x), 1e-4, reference_timeout_s=60)
    assert got.max_rel < 1e-4


def test_the_check_parses_the_model_once_and_writes_no_plan_file(tmp_path, monkeypatch):
    """Every round compiles its plans in memory, from one parse of the ONNX."""
    plan, _ = _default_plan(tmp_path)
    tuned = _with(plan, "conv0", algorithm="reference", ukernel=None)
    parses, writes = [], []
    for name in ("_read", "_read_detached"):
        real = getattr(onnx_model, name)
        monkeypatch.setattr(onnx_model, name,
                            lambda *a, real=real: parses.append(a) or real(*a))
    real_save = plan_module.save_plan
    for module in list(sys.modules.values()):
        if getattr(module, "save_plan", None) is real_save:
            monkeypatch.setattr(module, "save_plan", lambda *a, **k: writes.append(a))
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(tuned, client, rounds=2, repeat=1)
    assert result.skipped is None and result.ms
    assert len(parses) == 1 and writes == []


def test_each_plan_is_lowered_once_however_many_rounds(tmp_path, monkeypatch):
    """The launcher holds one graph, so every turn builds its plan's graph
    again, but from the plan's one lowering; the tuned plan's serves the
    mix's rounds too."""
    plan, _ = _default_plan(tmp_path)
    # conv0 loses in the model; conv1, pinned off its default, stays: the mix is measured.
    tuned = _with(_with(plan, "conv0", algorithm="reference", ukernel=None), "conv1",
                  workloads=plan.nodes[1].config.workloads + 1)
    tuned = dataclasses.replace(tuned, nodes=(
        tuned.nodes[0], dataclasses.replace(tuned.nodes[1], pinned="conv1=test")))
    load_module = importlib.import_module("acltuner.runtime.load")
    real, lowered = load_module.lower, []
    monkeypatch.setattr(load_module, "lower",
                        lambda *a, **k: lowered.append(a[1]) or real(*a, **k))
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(tuned, client, rounds=3, repeat=1)
    assert result.reverted == ("conv0",) and set(result.ms) == {"tuned", "default", "mixed"}
    assert len(lowered) == 3


def test_a_plan_of_defaults_or_one_the_launcher_cannot_run_is_kept(tmp_path):
    plan, _ = _default_plan(tmp_path)
    with LauncherClient([default_launcher_path()]) as client:
        same = check_in_context(plan, client)
    assert same.kept == "tuned" and same.plan is plan and same.skipped

    (tmp_path / "sin").mkdir()
    mixed, _ = _default_plan(tmp_path / "sin", extra_node=True)
    tuned = _with(mixed, "conv0", workloads=mixed.nodes[0].config.workloads + 1)
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(tuned, client)
    assert result.kept == "tuned" and result.plan is tuned
    assert "Sin" in result.skipped


def test_a_plan_replaces_the_default_only_when_clearly_faster():
    clearly, barely = 1 - 2 * MARGIN, 1 - MARGIN / 2
    assert choose({"tuned": clearly, "default": 1.0}) == "tuned"
    assert choose({"tuned": barely, "default": 1.0}) == "default"
    assert choose({"tuned": 1.1, "default": 1.0}) == "default"
    assert choose({"tuned": clearly, "default": 1.0, "mixed": clearly - 0.01}) == "mixed"
    assert choose({"tuned": 1.2, "default": 1.0, "mixed": barely}) == "default"


def test_plans_are_chosen_on_their_nodes_medians_not_on_whole_runs(tmp_path, monkeypatch):
    """Each of the tuned plan's nodes is faster than its default in every run
    but one, and the host's noise lands on a different node in two of the
    three runs: whole runs make the tuned plan the slower (14 against 10 ms),
    its nodes' medians the faster (8 against 10)."""
    from acltuner.tuner import in_context
    plan, _ = _default_plan(tmp_path)
    tuned = _with(plan, "conv0", workloads=plan.nodes[0].config.workloads + 1)
    node_times = {"tuned": {"conv0": [4.0, 4.0, 10.0], "conv1": [4.0, 10.0, 4.0]},
                  "default": {"conv0": [5.0, 5.0, 5.0], "conv1": [5.0, 5.0, 5.0]}}

    def rounds(self, count, repeat):
        self.inputs = {}
        for name in self.plans:
            self.node_ms[name] = {node: list(t) for node, t in node_times[name].items()}
            self.ms[name] = [float(sum(run)) for run in zip(*node_times[name].values())]
    monkeypatch.setattr(in_context.WholeModelRuns, "rounds", rounds)
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(tuned, client)
    assert result.ms == {"tuned": 14.0, "default": 10.0}
    assert result.nodes_ms == {"tuned": 8.0, "default": 10.0}
    assert result.kept == "tuned" and result.plan.in_context.nodes_ms == result.nodes_ms
    assert result.reverted == ()


def test_a_verdict_against_the_tasks_alone_is_measured_again(tmp_path, monkeypatch):
    """The tasks alone predict the tuned plan 2 ms faster; the first rounds
    (a spell of noise over its turns) make it the slower, so the check runs
    as many rounds again and chooses on all six: the tuned plan.  Where the
    tasks alone predict no gain, one set of rounds decides."""
    from acltuner.tuner import in_context
    plan, _ = _default_plan(tmp_path)
    tuned = _with(plan, "conv0", workloads=plan.nodes[0].config.workloads + 1)
    spell = {"tuned": [9.0, 9.0, 4.0], "default": [5.0, 5.0, 5.0]}
    quiet = {"tuned": [4.0, 4.0, 4.0], "default": [5.0, 5.0, 5.0]}
    passes = []

    def rounds(self, count, repeat):
        self.inputs = {}
        times = (spell, quiet)[min(len(passes), 1)]
        passes.append(count)
        for name in self.plans:
            self.node_ms[name].setdefault("conv0", []).extend(times[name])
            self.node_ms[name].setdefault("conv1", []).extend([1.0] * 3)
            self.ms[name].extend(t + 1.0 for t in times[name])
    monkeypatch.setattr(in_context.WholeModelRuns, "rounds", rounds)

    def alone(gain):
        return dataclasses.replace(tuned, nodes=tuple(
            dataclasses.replace(n, tuned_ms=3.0, default_ms=3.0 + gain) if n.node == "conv0"
            else n for n in tuned.nodes))
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(alone(2.0), client)
        assert passes == [3, 3] and result.kept == "tuned"
        assert result.nodes_ms == {"tuned": 4.0 + 1.0, "default": 5.0 + 1.0}
        passes.clear()
        result = check_in_context(alone(0.0), client)
    assert passes == [3] and result.kept == "default"
