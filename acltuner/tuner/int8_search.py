"""int8 tasks tuned where they run: in the whole model (in_model.py).

An int8 convolution (conv_int8) reads the uint8 tensor of the layer before it
and writes one for the layer after, inside the model's native graph, so its
candidates are measured there; the in-context check that follows
compares the plan with the default plan as for float tasks, so the plan kept
is never slower than the default one as far as it can tell.

The candidates: each int8 kernel the launcher runs (none for a depthwise
shape, which runs a direct loop) on a few splits of the float search's
space: the default's, all cores at one weight with one and with four
workloads a core, and each cluster's first core alone.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from acltuner.engine.config import ExecConfig
from acltuner.plan import Plan
from acltuner.taskgen.int8 import INT8_ALGORITHM, Int8Task, is_depthwise
from acltuner.taskgen.tasks import Task
from acltuner.tuner.in_model import RunPlans, tune_in_model
from acltuner.tuner.tune import TaskReport


def int8_candidates(task: Int8Task, default: ExecConfig, kernels: Sequence[str],
                    clusters: Sequence[Sequence[int]], ncores: int) -> list[ExecConfig]:
    """The task's candidates, its default first (the module's docstring)."""
    everyone = (1,) * ncores
    splits = [(default.core_weights, default.workloads), (everyone, ncores),
              (everyone, 4 * ncores)]
    for cpus in clusters:
        splits.append((tuple(int(c == min(cpus)) for c in range(ncores)), 1))
    chosen = [None] if is_depthwise(task.shape) or not kernels else list(kernels)
    return list(dict.fromkeys([default, *(ExecConfig(INT8_ALGORITHM, k, weights, workloads)
                                          for weights, workloads in splits for k in chosen)]))


def tune_int8(plan: Plan, tasks: Sequence[Int8Task], kernels: Sequence[str],
              run: RunPlans, progress: Callable[[str], None] = lambda _: None
              ) -> tuple[Plan, list[TaskReport]]:
    """`plan` (its int8 tasks' nodes on their default or their pin,
    build_plan's) with each int8 task's choice for its unpinned nodes, and a
    report per task searched (its times the nodes' in the model); kernels: the
    int8 kernels the launcher runs."""
    node_of = {n.node: n for n in plan.nodes}
    tasks = [dataclasses.replace(t, nodes=[n for n in t.nodes if not node_of[n].pinned])
             for t in tasks]
    tasks = [t for t in tasks if t.nodes]
    if not tasks:
        return plan, []
    board = plan.board
    assert board is not None  # build_plan records it
    clusters = [list(c.cpus) for c in board.clusters]
    units = [(t, int8_candidates(t, node_of[t.nodes[0]].default_config, kernels, clusters,
                                 board.ncores)) for t in tasks]
    return tune_in_model(plan, units, run,
                         lambda t: Task(t.key, t.shape, t.nodes, t.flops, [INT8_ALGORITHM]),
                         "int8 tasks", progress)
