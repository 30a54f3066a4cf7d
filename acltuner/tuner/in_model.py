"""Choices measured where they run: in the whole model.

Some choices cannot be timed alone: an int8 convolution reads and writes the
uint8 tensors of its neighbours (int8_search.py), a graph product runs in the
native graph between other operations (product_search.py).  Their candidates
are measured as in_context.py runs the whole model: the launcher runs every
task on its i-th candidate in the i-th plan (in turns, some rounds), and its
per-node profile times each node.  K candidates cost K whole-model runs a
round, whatever the number of tasks.  A task keeps the candidate whose nodes'
median times are the least, where it beats its default by in_context.MARGIN.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from acltuner.engine.config import ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.plan import Plan, Tuning
from acltuner.runtime.load import LoadedModel, lower_plan, read_model
from acltuner.runtime.target import launcher_target
from acltuner.taskgen.tasks import Task
from acltuner.tuner.in_context import MARGIN, WholeModelRuns, with_configs
from acltuner.tuner.tune import TaskReport

ROUNDS, REPEAT = 3, 10

# Each plan's node times: by node, its median in the model (None: not in
# the profile), one dict per plan run.
RunPlans = Callable[[list[dict[str, ExecConfig]]], list[dict[str, float | None]]]


class InModelTask(Protocol):
    key: str
    nodes: list[str]


T = TypeVar("T", bound=InModelTask)


@dataclass(frozen=True)
class InModelChoice:
    config: ExecConfig
    default_ms: float | None  # a node's mean of its median times in the model, the default's
    ms: float | None          # the same with config


def choose_in_model(tasks: Sequence[tuple[InModelTask, list[ExecConfig]]], run: RunPlans
                    ) -> dict[str, InModelChoice]:
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
        choices[task.key] = InModelChoice(cands[best], default_ms, scores[best])
    return choices


def _mean(times: list[float | None]) -> float | None:
    if not times or any(t is None for t in times):
        return None
    return sum(t for t in times if t is not None) / len(times)


def whole_model_runs(plan: Plan, client: LauncherClient, rounds: int = ROUNDS,
                     repeat: int = REPEAT, model: LoadedModel | None = None) -> RunPlans:
    """run() for choose_in_model: `plan` with each set of node configs, run
    whole in the launcher in turns; a ValueError where the model cannot run
    there natively.  model: the plan's, read_model's, if read already."""
    model = model or read_model(plan)
    target = launcher_target(client)

    def run(configs: list[dict[str, ExecConfig]]) -> list[dict[str, float | None]]:
        lowered = {str(i): lower_plan(with_configs(plan, c), model, target, native_only=True)
                   for i, c in enumerate(configs)}
        runs = WholeModelRuns(client, lowered)
        runs.rounds(rounds, repeat)
        return [{node: runs.node_median(str(i), node) for node in c}
                for i, c in enumerate(configs)]
    return run


def tune_in_model(plan: Plan, units: Sequence[tuple[T, list[ExecConfig]]],
                  run: RunPlans, as_task: Callable[[T], Task], what: str,
                  progress: Callable[[str], None]) -> tuple[Plan, list[TaskReport]]:
    """`plan`, which holds the units' nodes, with each task's choice among its
    candidates (the default first) for them, and a report per task (its
    times the nodes' in the model, its Task as_task gives it).  Where the
    launcher cannot run the model natively, every task keeps its default.
    what: the tasks, for the progress lines."""
    start = time.perf_counter()
    count = max(len(c) for _, c in units)
    progress(f"{what} in the whole model: {len(units)} task(s), {count} candidate plans")
    measured = sum(len(cands) for _, cands in units)
    try:
        choices = choose_in_model(units, run)
    except ValueError as e:  # nodes outside the engine: the launcher cannot run the model
        progress(f"{what} not searched, on their defaults: {e}")
        choices = {t.key: InModelChoice(cands[0], None, None) for t, cands in units}
        measured = 0
    of_node, reports = {}, []
    for t, cands in units:
        c = choices[t.key]
        of_node.update({name: c for name in t.nodes})
        reports.append(TaskReport(as_task(t), cands[0], c.config, c.default_ms, c.ms,
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
