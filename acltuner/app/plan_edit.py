"""`acltuner plan edit`: nodes' configs set by hand, each checked against the
engine that will run them before the plan is written again.

A setting is NODE=CONFIG, CONFIG as `plan show` prints one
(ALGORITHM/KERNEL/WEIGHTS/wWORKLOADS, `-` for no kernel) or its first part
only: ALGORITHM keeps the node's placement and takes the ArmNN rule's kernel
for the algorithm, ALGORITHM/KERNEL keeps the node's placement.  A
convolution that runs in int8 (a quantized model's) takes conv_int8 only,
with an int8 kernel or none (conv_int8's own pick), and the others conv_int8
never.  A graph product's node (product_search.py) takes matmul/KERNEL only:
it runs on the graph's split.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from acltuner.engine import native
from acltuner.engine.config import ConvShape
from acltuner.measure.launchers import open_launcher
from acltuner.plan import Plan, PlanError, PlanNode, check_plan, load_plan, plan_board, save_plan
from acltuner.runtime.product_kernels import PRODUCT_ALGORITHM, product_check
from acltuner.taskgen.int8 import INT8_ALGORITHM
from acltuner.taskgen.tasks import generate_tasks
from acltuner.tuner.int8_tasks import split_int8
from acltuner.tuner.pins import EngineRules, some_names
from acltuner.tuner.product_search import product_shape

_CONFIG_FORMS = "ALGORITHM, ALGORITHM/KERNEL or ALGORITHM/KERNEL/W:W:../wN ('-': no kernel)"


@dataclass(frozen=True)
class Setting:
    text: str  # as the user wrote it
    node: str
    algorithm: str
    ukernel: str | None
    kernel_given: bool
    core_weights: tuple[int, ...] | None = None
    workloads: int | None = None


def parse_setting(text: str) -> Setting:
    node, eq, config = text.partition("=")
    parts = config.split("/")
    if not eq or not node or len(parts) not in (1, 2, 4) or not all(parts):
        raise ValueError(f"--set {text!r}: expected NODE=CONFIG, CONFIG one of {_CONFIG_FORMS}")
    ukernel = None if len(parts) == 1 or parts[1] == "-" else parts[1]
    if len(parts) < 4:
        return Setting(text, node, parts[0], ukernel, len(parts) > 1)
    weights, workloads = parts[2], parts[3]
    try:
        core_weights = tuple(int(w) for w in weights.split(":"))
        if not workloads.startswith("w"):
            raise ValueError
        count = int(workloads[1:])
    except ValueError:
        raise ValueError(f"--set {text!r}: expected core weights like 1:1:0:0 and workloads "
                         f"like w4, got {weights!r} and {workloads!r}") from None
    return Setting(text, node, parts[0], ukernel, True, core_weights, count)


def edit_plan(plan: Plan, settings: Iterable[Setting], shapes: Mapping[str, ConvShape],
              rules: EngineRules, ncores: int, int8_nodes: frozenset[str] = frozenset()
              ) -> Plan:
    """The plan with each setting's node set to its config, marked pinned and
    its tuned time dropped (not measured); ValueError, one line, for a node
    the plan lacks or a config the engine or the board cannot run.
    int8_nodes: the convolutions that run in int8."""
    nodes = {n.node: n for n in plan.nodes}
    for s in settings:
        old = nodes.get(s.node)
        if old is None:
            raise ValueError(f"--set {s.text}: no node {s.node!r} in the plan "
                             f"(its nodes: {some_names(nodes)})")
        if PRODUCT_ALGORITHM in (old.config.algorithm, s.algorithm):
            nodes[s.node] = _product_setting(s, old, rules)
            continue
        weights = s.core_weights or old.config.core_weights
        if len(weights) != ncores:
            raise ValueError(f"--set {s.text}: {len(weights)} core weights for a board of "
                             f"{ncores} cores")
        int8 = s.node in int8_nodes
        if int8 != (s.algorithm == INT8_ALGORITHM):
            raise ValueError(
                f"--set {s.text}: {s.node} runs in int8 and takes {INT8_ALGORITHM} only "
                f"({INT8_ALGORITHM}/KERNEL/.., '-' for conv_int8's own kernel)" if int8 else
                f"--set {s.text}: {s.node} runs in float; {INT8_ALGORITHM} is for the "
                f"convolutions of a quantized model that run in int8")
        workloads = s.workloads or old.config.workloads
        try:
            config = rules.int8_config(shapes[s.node], s.ukernel, weights, workloads) if int8 \
                else rules.config(shapes[s.node], s.algorithm, s.ukernel, weights, workloads)
        except ValueError as e:
            raise ValueError(f"--set {s.text}: {e}") from None
        if s.kernel_given and s.ukernel is None and config.ukernel is not None:
            raise ValueError(f"--set {s.text}: {s.algorithm} needs a micro-kernel, not '-'")
        nodes[s.node] = dataclasses.replace(old, config=config, tuned_ms=None,
                                            pinned=f"plan edit {s.text}", reverted=None)
    return dataclasses.replace(plan, nodes=tuple(nodes[n.node] for n in plan.nodes))


def _product_setting(s: Setting, old: PlanNode, rules: EngineRules) -> PlanNode:
    """A product node set to s (matmul/KERNEL), or ValueError, one line."""
    shape = product_shape(old.task)
    if shape is None or old.config.algorithm != PRODUCT_ALGORITHM:
        raise ValueError(f"--set {s.text}: {s.node} is a convolution; {PRODUCT_ALGORITHM} is "
                         f"for the graph's products (MatMul, Gemm)")
    if s.algorithm != PRODUCT_ALGORITHM or s.ukernel is None or s.core_weights is not None:
        raise ValueError(f"--set {s.text}: {s.node} is a graph product and takes "
                         f"{PRODUCT_ALGORITHM}/KERNEL only (it runs on the graph's split)")
    why = product_check(rules.ukernels, rules.check, *shape[1:], s.ukernel)
    if why:
        raise ValueError(f"--set {s.text}: {why}")
    return dataclasses.replace(old, config=dataclasses.replace(old.config, ukernel=s.ukernel),
                               tuned_ms=None, pinned=f"plan edit {s.text}", reverted=None)


def edit_plan_file(plan_path: str, texts: Iterable[str], *, output_path: str | None,
                   board_name: str | None, host: str | None, force: bool, warn) -> list[PlanNode]:
    """The settings `texts` applied to the plan file, checked by the launcher
    of the board that runs it (on `host`, or here) and written to output_path
    (default: over plan_path); the edited nodes.  warn(line) for each of the
    plan's mismatches that force lets through."""
    parsed = [parse_setting(text) for text in texts]
    p = load_plan(plan_path)
    if not Path(p.model_path).is_file():
        raise PlanError(f"{plan_path}: its model {p.model_path} is not a file (plan edit reads "
                        f"it for each node's shape)")
    board = plan_board(p, board_name)
    with open_launcher(board, host) as client:
        engine = native.hello_engine_id(client.hello_info)
        for warning in check_plan(p, p.model_path, board.fingerprint, engine, force):
            warn(warning)
        taskset = generate_tasks(p.model_path, p.input_shapes)
        shapes = {name: t.shape for t in taskset.tasks for name in t.nodes}
        _, int8 = split_int8(taskset, p.input_shapes)
        edited = edit_plan(p, parsed, shapes, EngineRules.of(client, p.precision, board),
                           board.ncores, frozenset(n for t in int8 for n in t.nodes))
    save_plan(edited, output_path or plan_path)
    return [next(n for n in edited.nodes if n.node == s.node) for s in parsed]
