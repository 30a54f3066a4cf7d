"""int8 tasks tuned where they run: in the whole model.

An int8 convolution (conv_int8) reads the uint8 tensor of the layer before it
and writes one for the layer after, inside the model's native graph, so its
candidates are measured there, as in_context.py runs the whole model: the
launcher runs it with every int8 task on its i-th candidate in the i-th plan
(in turns, some rounds), and its per-node profile times each node.  K
candidates cost K whole-model runs a round, whatever the number of tasks.  A
task keeps the candidate whose nodes' median times are the least, where it
beats its default by in_context.MARGIN; the in-context check that follows
compares the plan with the default plan as for float tasks, so the plan kept
is never slower than the default one as far as it can tell.

The candidates: each int8 kernel the launcher runs (none for a depthwise
shape, which runs a direct loop) on a few splits of the float search's
space: the default's, all cores at one weight with one and with four
workloads a core, and each cluster's first core alone.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from acltuner.engine.config import ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.plan import Plan, Tuning
from acltuner.runtime.load import lower_plan, read_model
from acltuner.runtime.target import launcher_target
from acltuner.taskgen.int8 import INT8_ALGORITHM, Int8Task, is_depthwise
from acltuner.taskgen.tasks import Task
from acltuner.tuner.in_context import MARGIN, WholeModelRuns, with_configs
from acltuner.tuner.tune import TaskReport

ROUNDS, REPEAT = 3, 10

# Each plan's node times: by node, its median in the model (None: not in
# the profile), one dict per plan run.
RunPlans = Callable[[list[dict[str, ExecConfig]]], list[dict[str, float | None]]]


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


@dataclass(frozen=True)
class Int8Choice:
    config: ExecConfig
    default_ms: float | None  # a node's mean of its median times in the model, the default's
    ms: float | None          # the same with config


def choose_int8(tasks: Sequence[tuple[Int8Task, list[ExecConfig]]], run: RunPlans
                ) -> dict[str, Int8Choice]:
    """Each task's choice by key, its candidates (the default first) run in
    the i-th plan given to run()."""
    count = max(len(cands) for _, cands in tasks)
    plans = [{node: cands[i] if i < len(cands) else cands[0]
              for task, cands in tasks for node in task.nodes} for i in range(count)]
    node_ms = run(plans)
    choices = {}
    for task, cands in tasks:
        scores = [_mean([node_ms[i].get(n) for n in task.nodes]) for i in range(len(cands))]
        timed = {i: s for i, s in enumerate(scores) if s is not None}
        best = min(timed, key=timed.__getitem__, default=0)
        default_ms = scores[0]
        if default_ms is None or not timed[best] < default_ms * (1 - MARGIN):
            best = 0
        choices[task.key] = Int8Choice(cands[best], default_ms, scores[best])
    return choices


def _mean(times: list[float | None]) -> float | None:
    if not times or any(t is None for t in times):
        return None
    return sum(t for t in times if t is not None) / len(times)


def whole_model_runs(plan: Plan, client: LauncherClient, rounds: int = ROUNDS,
                     repeat: int = REPEAT) -> RunPlans:
    """run() for choose_int8: `plan` with each set of node configs, run whole
    in the launcher in turns; a ValueError where the model cannot run there
    natively."""
    model = read_model(plan)
    target = launcher_target(client)

    def run(configs: list[dict[str, ExecConfig]]) -> list[dict[str, float | None]]:
        lowered = {str(i): lower_plan(with_configs(plan, c), model, target, native_only=True)
                   for i, c in enumerate(configs)}
        runs = WholeModelRuns(client, lowered)
        runs.rounds(rounds, repeat)
        return [{node: runs.node_median(str(i), node) for node in c}
                for i, c in enumerate(configs)]
    return run


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
    start = time.perf_counter()
    board = plan.board
    assert board is not None  # build_plan records it
    clusters = [list(c.cpus) for c in board.clusters]
    units = [(t, int8_candidates(t, node_of[t.nodes[0]].default_config, kernels, clusters,
                                 board.ncores)) for t in tasks]
    count = max(len(c) for _, c in units)
    progress(f"int8 tasks in the whole model: {len(units)} task(s), {count} candidate plans")
    measured = sum(len(cands) for _, cands in units)
    try:
        choices = choose_int8(units, run)
    except ValueError as e:  # nodes outside the engine: the launcher cannot run the model
        progress(f"int8 tasks not searched, on their defaults: {e}")
        choices = {t.key: Int8Choice(cands[0], None, None) for t, cands in units}
        measured = 0
    of_node, reports = {}, []
    for t, cands in units:
        c = choices[t.key]
        of_node.update({name: c for name in t.nodes})
        reports.append(TaskReport(Task(t.key, t.shape, t.nodes, t.flops, [INT8_ALGORITHM]),
                                  cands[0], c.config, c.default_ms, c.ms,
                                  len(cands) if measured else 0, 0, len(cands), 0.0,
                                  in_model=True))
    nodes = tuple(dataclasses.replace(n, config=of_node[n.node].config,
                                      tuned_ms=of_node[n.node].ms,
                                      default_ms=of_node[n.node].default_ms)
                  if n.node in of_node else n for n in plan.nodes)
    tuning = Tuning(wall_s=plan.tuning.wall_s + time.perf_counter() - start,
                    tuner_s=plan.tuning.tuner_s,
                    measurements=plan.tuning.measurements + measured)
    return dataclasses.replace(plan, nodes=nodes, tuning=tuning), reports
