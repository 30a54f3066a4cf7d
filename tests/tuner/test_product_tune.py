"""The graph's products (MatMul, Gemm) tuned in the whole model: a product
node's config chooses its micro-kernel, the products are grouped by shape
into tasks, each task keeps the kernel its nodes are fastest with in the
model, and `tune` writes them into the plan, which `run --check` runs."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from acltuner.app.run import CHECK_TOLERANCE
from acltuner.board.registry import load_board
from acltuner.engine.config import ExecConfig
from acltuner.onnx.model import load_model
from acltuner.plan import load_plan
from acltuner.runtime.ir import NativeStage
from acltuner.runtime.load import compile_model, lower_plan, read_model
from acltuner.runtime.lower import lower
from acltuner.runtime.product_kernels import (PRODUCT_ALGORITHM, matmul_ukernel,
                                              product_candidates)
from acltuner.runtime.target import local_target
from acltuner.tuner.in_context import MARGIN
from acltuner.tuner.product_search import (MIN_SHARE, product_key, product_shape,
                                           product_tasks, tune_products)
from tests.runtime.test_attention import TOKENS, _attention
from tests.support.cli_checks import assert_one_line_error, default_plan, invoke, run_check

BOARD = load_board("split-host")
SPLIT = (1, 1), 8


def _model(tmp_path) -> tuple[onnx.ModelProto, str]:
    path = tmp_path / "attention.onnx"
    onnx.save(_attention(), path)
    return load_model(path), str(path)


def _products(model: onnx.ModelProto, configs: dict[str, ExecConfig]) -> dict[str, tuple]:
    """Each product op's node -> (its shape, the kernel it runs)."""
    stages, _ = lower(model, configs)
    return {op.node: (op.product, op.args["ukernel"]) for s in stages
            if isinstance(s, NativeStage) for op in s.ops if op.product is not None}


def _conv_configs(model: onnx.ModelProto) -> dict[str, ExecConfig]:
    from tests.runtime.test_runtime import _configs
    return _configs(model)


def _other_kernel(shape, target) -> str:
    """A kernel that runs the product but is not the rule's."""
    _, m, k, n = shape
    others = product_candidates(m, k, n, target)[1:]
    if not others:
        pytest.skip(f"this engine runs the {m}x{k}x{n} product on one kernel only")
    return others[-1]


def test_a_product_nodes_config_chooses_its_kernel_and_keeps_the_outputs(tmp_path):
    """Each product op records its shape; a config of algorithm matmul on
    its node changes the kernel it runs, not its outputs (the K sums of each
    output keep their order), and nodes without one keep the rule's."""
    model, path = _model(tmp_path)
    target = local_target()
    configs = _conv_configs(model)
    rule = _products(model, configs)
    assert {shape[0][2] for shape in rule.values()} >= {4, 40}  # the scores' K, the context's
    for node, (shape, kernel) in rule.items():
        assert kernel == matmul_ukernel(*shape[1:], target)
    chosen_node, (shape, _) = next(iter(rule.items()))
    other = _other_kernel(shape, target)
    chosen = {**configs, chosen_node: ExecConfig(PRODUCT_ALGORITHM, other, *SPLIT)}
    assert _products(model, chosen) == {**rule, chosen_node: (shape, other)}
    inputs = {"input": np.random.default_rng(0).standard_normal((1, 3, 4, 10), np.float32)}
    ours = [next(iter(compile_model(model, c, BOARD).run(inputs).values()))
            for c in (configs, chosen)]
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    np.testing.assert_array_equal(ours[0], ours[1])
    assert np.abs(ours[1] - theirs).max() <= CHECK_TOLERANCE * np.abs(theirs).max()


@pytest.mark.parametrize("kernel, why", [("no-such-kernel", "has no micro-kernel"),
                                         (None, "has no micro-kernel")])
def test_a_product_config_the_engine_cannot_run_names_the_node(tmp_path, kernel, why):
    model, _ = _model(tmp_path)
    configs = _conv_configs(model)
    node = next(iter(_products(model, configs)))
    with pytest.raises(ValueError, match=f"node {node}: its config .* cannot run .*{why}"):
        lower(model, {**configs, node: ExecConfig(PRODUCT_ALGORITHM, kernel, *SPLIT)})


def test_products_of_one_shape_are_one_task(tmp_path):
    """Five products of three shapes: the scores; the two contexts (all
    heads, and the first head's values broadcast), and their projections.
    Each task holds the nodes of its shape, in graph order."""
    model, path = _model(tmp_path)
    plan_path = default_plan(tmp_path / "attention.onnx", tmp_path)
    plan = load_plan(plan_path)
    tasks = product_tasks(lower_plan(plan, read_model(plan)))
    found = _products(model, _conv_configs(model))
    assert sorted(n for t in tasks for n in t.nodes) == sorted(found)
    for t in tasks:
        assert t.key == product_key(t.shape) and {found[n][0] for n in t.nodes} == {t.shape}
    assert len({t.shape for t in tasks}) == len(tasks)
    contexts = next(t for t in tasks if "context" in t.nodes)
    assert contexts.nodes == ["context", "context0"] and contexts.shape == (2, TOKENS, TOKENS, 4)


def test_each_product_task_keeps_the_kernel_its_nodes_are_fastest_with(tmp_path):
    """tune_products adds a plan node per product on its task's choice: the
    fastest candidate in the model where it beats the rule's by the margin,
    else the rule's; the candidate plans carry every product's config.  (No
    convolution FLOPs here: every product weighs enough to be searched.)"""
    _model(tmp_path)
    plan = load_plan(default_plan(tmp_path / "attention.onnx", tmp_path))
    target = local_target()
    tasks = product_tasks(lower_plan(plan, read_model(plan)))
    fast = {t.key: product_candidates(*t.shape[1:], target)[-1] for t in tasks}
    # The first task's last candidate wins clearly, the others' by less than the margin.
    first = tasks[0].key

    def node_ms(node: str, config: ExecConfig) -> float:
        key = next(t.key for t in tasks if node in t.nodes)
        if config.ukernel != fast[key]:
            return 1.0
        return 0.5 if key == first else 1.0 - MARGIN / 2

    seen = []

    def runs_of(candidate_plan, model):
        products = {n for t in tasks for n in t.nodes}
        assert {n.node for n in candidate_plan.nodes} >= products
        assert {n.name for n in model.model.graph.node} >= products  # the plan's, read once

        def run(plans):
            seen.extend(plans)
            return [{node: node_ms(node, c) for node, c in p.items()} for p in plans]
        return run

    tuned, reports = tune_products(plan, target, runs_of, 0)
    products = {n.node: n for n in tuned.nodes if n.config.algorithm == PRODUCT_ALGORITHM}
    assert sorted(products) == sorted(n for t in tasks for n in t.nodes)
    assert tuned.nodes[:len(plan.nodes)] == plan.nodes  # the convolutions as they were
    for t in tasks:
        rule = matmul_ukernel(*t.shape[1:], target)
        for name in t.nodes:
            node = products[name]
            assert node.default_config.ukernel == rule and node.task == t.key
            assert node.config.ukernel == (fast[t.key] if t.key == first and fast[t.key] != rule
                                           else rule)
    assert len(reports) == len(tasks) and all(r.in_model for r in reports)
    assert len(seen) == max(len(product_candidates(*t.shape[1:], target)) for t in tasks)
    # Tuned again, the plan's products are known and nothing is searched;
    # products of less than MIN_SHARE of the model's FLOPs are not searched.
    assert tune_products(tuned, target, runs_of, 0) == (tuned, [])
    light = sum(t.flops * len(t.nodes) for t in tasks) / MIN_SHARE
    assert tune_products(plan, target, runs_of, int(light)) == (plan, [])


def test_tune_writes_product_nodes_that_run_checks(tmp_path):
    """`tune` on a model with products: its plan holds a node per product,
    each on a kernel that runs it, and `run --check` runs the plan."""
    model, path = _model(tmp_path)
    plan_path = tmp_path / "p.json"
    result = invoke("tune", path, "-o", plan_path, "--board", "split-host", "--trials", "2",
                    "--records", tmp_path / "r.jsonl")
    assert result.exit_code == 0, result.output
    assert "graph products in the whole model" in result.output
    plan = load_plan(plan_path)
    products = [n for n in plan.nodes if n.config.algorithm == PRODUCT_ALGORITHM]
    target = local_target()
    shapes = {node: shape for node, (shape, _) in _products(model, _conv_configs(model)).items()}
    assert sorted(n.node for n in products) == sorted(shapes)
    for n in products:
        assert n.config.ukernel in product_candidates(*shapes[n.node][1:], target)
    report = run_check(plan_path)
    assert report["max_rel_diff"] <= CHECK_TOLERANCE


def test_a_model_of_products_only_is_tuned(tmp_path):
    """No convolution, but products: `tasks` says so, and `tune` writes a
    plan of its product nodes that `run --check` runs."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(1)
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 24], rng.standard_normal(384).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 24])], [w])
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    tasks = invoke("tasks", path)
    assert tasks.exit_code == 0 and "no task" in tasks.output, tasks.output
    plan_path = tmp_path / "mlp.plan.json"
    result = invoke("tune", path, "-o", plan_path, "--board", "split-host", "--trials", "2",
                    "--records", tmp_path / "r.jsonl")
    assert result.exit_code == 0, result.output
    plan = load_plan(plan_path)
    assert [n.task for n in plan.nodes] == [product_key((1, 32, 16, 24))]
    assert run_check(plan_path)["max_rel_diff"] <= CHECK_TOLERANCE


def test_plan_edit_sets_a_products_kernel_and_refuses_what_it_cannot_run(tmp_path):
    """A product node takes matmul/KERNEL only, a kernel the engine runs on
    its shape; the edit is pinned, and the program runs that kernel."""
    model, path = _model(tmp_path)
    plan_path = tmp_path / "p.json"
    assert invoke("tune", path, "-o", plan_path, "--board", "split-host", "--trials", "1",
                  "--records", tmp_path / "r.jsonl").exit_code == 0
    node = next(n for n in load_plan(plan_path).nodes if n.config.algorithm == PRODUCT_ALGORITHM)
    shape = product_shape(node.task)
    assert shape is not None
    other = _other_kernel(shape, local_target())
    conv = next(n.node for n in load_plan(plan_path).nodes if n is not node
                and n.config.algorithm != PRODUCT_ALGORITHM)
    for setting, why in ((f"{node.node}=matmul/no-such-kernel", "no micro-kernel 'no-such"),
                         (f"{node.node}=im2col", "takes matmul/KERNEL only"),
                         (f"{node.node}=matmul/{other}/1:0/w1", "takes matmul/KERNEL only"),
                         (f"{conv}=matmul/{other}", "is a convolution")):
        assert_one_line_error(invoke("plan", "edit", plan_path, "--set", setting), why)
    result = invoke("plan", "edit", plan_path, "--set", f"{node.node}=matmul/{other}")
    assert result.exit_code == 0, result.output
    edited = next(n for n in load_plan(plan_path).nodes if n.node == node.node)
    assert edited.config.ukernel == other and edited.pinned and edited.tuned_ms is None
    assert _products(model, {**_conv_configs(model), node.node: edited.config})[node.node][1] \
        == other
    assert run_check(plan_path)["max_rel_diff"] <= CHECK_TOLERANCE
