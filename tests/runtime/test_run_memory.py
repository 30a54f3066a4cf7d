"""What keeps `acltuner run`'s peak memory low, checked structurally (no
thresholds): weights read from the file one by one, exactly as onnx.load
reads them; each released by the program once packed; onnxruntime left
unloaded when the engine runs the whole model."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from onnx import numpy_helper

from acltuner.cli import main
from acltuner.plan import load_plan
from acltuner.runtime.load import compile_plan, lower_plan, read_model
from acltuner.runtime.lower import lower
from acltuner.runtime.program import Program
from acltuner.board.registry import load_board
from acltuner.onnx.model import load_model, load_model_detached


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """googlenet (Conv, Concat, pooling, Gemm with transB, LRN) and its rule plan."""
    tmp = tmp_path_factory.mktemp("memory")
    model, plan = tmp / "googlenet.onnx", tmp / "googlenet.plan.json"
    runner = CliRunner()
    assert runner.invoke(main, ["zoo", "googlenet", "-o", str(model)]).exit_code == 0
    result = runner.invoke(main, ["tune", str(model), "-o", str(plan), "--strategy", "default",
                                  "--board", "split-host", "--records", str(tmp / "r.jsonl")])
    assert result.exit_code == 0, result.output
    return model, plan


def test_detached_weights_are_the_initializers_onnx_load_reads(planned):
    model_path, _ = planned
    full = load_model(model_path)
    stub, weights = load_model_detached(model_path)
    arrays = {t.name: numpy_helper.to_array(t) for t in full.graph.initializer}
    assert weights and set(weights) <= set(arrays)
    for name, w in weights.items():
        assert w.dtype == arrays[name].dtype and np.array_equal(w, arrays[name])
    assert [(t.name, list(t.dims), t.data_type) for t in stub.graph.initializer] == \
        [(t.name, list(t.dims), t.data_type) for t in full.graph.initializer]
    assert stub.graph.node == full.graph.node and stub.graph.output == full.graph.output
    assert stub.ByteSize() < full.ByteSize() / 100


def test_a_program_keeps_no_weights_once_packed(planned):
    model_path, plan_path = planned
    plan = load_plan(plan_path)
    model, weights = load_model_detached(model_path)
    stages, g = lower(model, {n.node: n.config for n in plan.nodes}, weights=weights)
    weights.clear()
    Program(model, g, stages, load_board("split-host"))
    assert g.constants == {}
    for stage in stages:
        assert all(op.args == {} for op in stage.ops)
        assert all(b.constant is None for b in stage.constants)


def test_a_program_gives_the_freed_weights_back_to_the_system(planned, monkeypatch):
    """Once every weight is packed and freed, the heap's free pages go back
    (glibc keeps them otherwise: a quantized light_resnet50 stayed at 302 MB
    resident with 145 MB live); a lowering kept for more programs has
    nothing freed to give back."""
    from acltuner.engine import native
    model_path, plan_path = planned
    plan = load_plan(plan_path)
    model, weights = load_model_detached(model_path)
    stages, g = lower(model, {n.node: n.config for n in plan.nodes}, weights=weights)
    weights.clear()
    seen = []
    monkeypatch.setattr(native, "trim_heap", lambda: seen.append(
        (dict(g.constants), [op.args for s in stages for op in s.ops])))
    Program(model, g, stages, load_board("split-host"))
    assert len(seen) == 1
    constants, args = seen[0]
    assert constants == {} and all(a == {} for a in args)
    seen.clear()
    lower_plan(plan, read_model(plan)).program()
    assert seen == []


def test_a_lowered_plan_keeps_its_weights_for_the_next_program(planned):
    """lower_plan's Programs are all built from one lowering, which building
    leaves whole: the second runs as the first, and as compile_plan's."""
    _, plan_path = planned
    plan = load_plan(plan_path)
    model = read_model(plan)
    lowered = lower_plan(plan, model)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    first, second = (lowered.program().run(x) for _ in range(2))
    for name, y in compile_plan(plan, model).run(x).items():
        assert np.array_equal(first[name], y) and np.array_equal(second[name], y), name


_PROBE = """
import sys, acltuner
acltuner.load(sys.argv[1]).run(__import__("numpy").zeros((1, 3, 224, 224), "float32"))
print(sorted(m for m in ("onnxruntime", "xgboost", "pandas", "sklearn") if m in sys.modules))
"""


def test_running_a_native_model_loads_no_onnxruntime_nor_tuner_libraries(planned):
    _, plan_path = planned
    out = subprocess.run([sys.executable, "-c", _PROBE, str(plan_path)], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"')) == []
