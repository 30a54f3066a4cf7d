"""`acltuner tune`: every task of a model tuned on a board, into a plan.

Tasks run in order of their share of the model's convolution FLOPs.  Every
batch of measurements is appended to the records file before the search goes
on, so a run killed at any point loses nothing: the next run reloads those
records, measures no configuration twice, and a task already tuned on this
board and engine (by any model) is not tuned again.
"""
from __future__ import annotations

import dataclasses
import time
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from acltuner.armnn_default import armnn_default, armnn_ukernel
from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.measure.launcher_runner import LauncherRunner
from acltuner.measure.runner import Result, Runner
from acltuner.plan import Plan, PlanNode, Tuning, save_plan, sha256_file
from acltuner.taskgen.int8 import INT8_ALGORITHM, Int8Task
from acltuner.taskgen.tasks import Task, TaskSet
from acltuner.tuner import TUNE_STRATEGIES
from acltuner.tuner.callbacks import TuneReporter
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.pins import EngineRules, Pin, PinnedNode, resolve_pins
from acltuner.tuner.records import Record, RecordStore
from acltuner.tuner.search import search
from acltuner.tuner.space import SearchSpace
from acltuner.tuner.tuner_config import TunerConfig
from acltuner.tuner.warm_start import WarmStart


@dataclasses.dataclass
class TaskReport:
    task: Task
    default: ExecConfig
    best: ExecConfig
    default_ms: float | None
    tuned_ms: float | None
    measured: int      # measurements taken by this run
    reused: int        # measurements found in the records
    space_size: int
    tuner_s: float
    pinned: str | None = None  # the pin that chose `best`, as written (Pin.text)
    transferred: bool = False  # warm-started by the transfer model
    in_model: bool = False  # its times a node's in the whole model (in_model.py), not alone

    @property
    def speedup(self) -> float | None:
        if self.default_ms and self.tuned_ms:
            return self.default_ms / self.tuned_ms
        return None


class TaskTuner:
    """Tunes tasks on one board through one launcher, logging to one records file."""

    def __init__(self, board: Board, client: LauncherClient, store: RecordStore,
                 config: TunerConfig, strategy: str, seed: int = 0,
                 reporter: TuneReporter | None = None, transfer: str = "auto",
                 precision: str = "fp32"):
        if strategy not in TUNE_STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; one of "
                             f"{', '.join(TUNE_STRATEGIES)}")
        self.board, self.client, self.store = board, client, store
        self.config, self.strategy, self.seed = config, strategy, seed
        self.reporter = reporter or TuneReporter()
        self.engine = native.hello_engine_id(client.hello_info)
        self.precision = precision
        self.rules = EngineRules.of(client, precision, board)
        self.algorithms = list(self.rules.algorithms.items())
        self.ukernels = self.rules.ukernels
        self.int8_ukernels = native.hello_int8_ukernels(client.hello_info)
        self.clusters = [list(c.cpus) for c in board.clusters]
        self.runner = LauncherRunner(client, config.measure.options(client.largest_cache_bytes))
        self.warm_start = WarmStart(transfer, config.transfer, board, store)

    def default_config(self, task: Task) -> ExecConfig:
        return rule_default(self.board, self.rules, task.shape)

    def int8_default(self, task: Int8Task) -> ExecConfig:
        """An int8 task's default: the ArmNN rule's split (its float
        convolution's) and no kernel named, so conv_int8 picks its own (the
        fastest, narrower for a narrow layer)."""
        split = rule_default(self.board, self.rules, task.shape)
        return ExecConfig(INT8_ALGORITHM, None, split.core_weights, split.workloads)

    def _begin(self, task: Task, runner: Runner | None):
        """The runner measuring the task (the tuner's own unless given), its
        default config, and the results the records already hold for it."""
        runner = runner or self.runner
        records = self.store.measured(self.board.fingerprint, self.engine, task.key,
                                      measure=runner.options)
        # Configs of kernels this precision does not allow (an earlier fp16
        # tune's) are not results of this one.
        allowed = {r.config: r.result() for r in records.values()
                   if r.config.ukernel is None or r.config.ukernel in self.ukernels}
        return runner, self.default_config(task), allowed

    def tune(self, task: Task, label: str, runner: Runner | None = None) -> TaskReport:
        """runner: what measures this task (a farm gives each task its own,
        tuned side by side); by default the tuner's one launcher."""
        runner, default, already = self._begin(task, runner)
        if self.strategy == "default":
            return TaskReport(task, default, default, None, None, 0, len(already), 0, 0.0)
        space = SearchSpace(task.shape, self.clusters, self.board.ncores, self.algorithms,
                            list(self.ukernels), self.client.check)
        encoder = FeatureEncoder([a for a, _ in self.algorithms], self.ukernels,
                                 space.cluster_of)
        measure = self._measurer(task, default, already, self.strategy, runner)

        def progress(outcome) -> None:
            done = len(already) + len(outcome.measured)
            best = outcome.best.median_ms if outcome.best else None
            default_ms = _time_of(default, already, outcome.measured)
            text = f"{label} trials {done}/{self.config.search.trials}"
            if best:
                text += f"  best {best:.3f} ms"
                if default_ms:
                    text += f"  {default_ms / best:.2f}x over default"
            self.reporter.progress(text)

        rng = np.random.default_rng([self.seed, zlib.crc32(task.key.encode())])
        searching = self.strategy == "xgb" and len(already) < self.config.search.trials
        prior = self.warm_start.prior(task) if searching else None
        outcome = search(space, measure, self.config, self.strategy, rng, encoder=encoder,
                         seed_configs=self._seeds(task, space, default), already=already,
                         on_round=progress,
                         prior=prior, prune=self.config.pruning.after is not None)
        best = outcome.best
        return TaskReport(task, default, best.config if best else default,
                          _time_of(default, already, outcome.measured),
                          best.median_ms if best else None, len(outcome.measured),
                          len(already), space.size, outcome.model_s,
                          transferred=prior is not None)

    def _seeds(self, task: Task, space: SearchSpace, default: ExecConfig) -> list[ExecConfig]:
        """The default, then each other algorithm on the default's cores
        (space.heads) with the rule's micro-kernel for it, within half the
        trials: the rest is the search's."""
        def kernel_of(algorithm: str) -> str | None:
            return armnn_ukernel(task.shape, algorithm, list(self.rules.ukernels.values()),
                                 self.rules.isa, self.rules.check)

        heads = space.heads(default, kernel_of)
        return [default, *heads[:max(self.config.search.trials // 2 - 1, 0)]]

    def tune_pinned(self, task: Task, config: ExecConfig, pin: str, label: str,
                    runner: Runner | None = None) -> TaskReport:
        """The task's nodes all pinned to `config`: nothing searched; it and
        the default are measured once each unless the records have them."""
        runner, default, already = self._begin(task, runner)
        if self.strategy == "default":
            return TaskReport(task, default, config, None, None, 0, len(already), 0, 0.0, pin)
        todo = [c for c in dict.fromkeys([default, config]) if c not in already]
        self.reporter.progress(f"{label} pinned ({pin}): {len(todo)} to measure, not searched")
        measured = self._measurer(task, default, already, "pinned", runner)(todo) if todo else []
        result = next(r for r in [*measured, already.get(config)] if r and r.config == config)
        if not result.ok:
            raise ValueError(f"pin {pin}: {config} failed on task {task.key}: {result.error}")
        return TaskReport(task, default, config, _time_of(default, already, measured),
                          result.median_ms, len(todo), len(already), 1, 0.0, pin)

    def planned(self, task: Task, pin: PinnedNode | None) -> tuple[int, int]:
        """(the unit's budget of measurements, those the records hold for its task)."""
        found = len(self.store.measured(self.board.fingerprint, self.engine, task.key,
                                        measure=self.runner.options))
        return (2 if pin else self.config.search.trials), found

    def _measurer(self, task: Task, default: ExecConfig, already: dict[ExecConfig, Result],
                  strategy: str, runner: Runner):
        """measure(configs) -> their Results through `runner`, each recorded under `strategy`."""
        loaded = False

        def measure(configs: list[ExecConfig]) -> list[Result]:
            nonlocal loaded
            if not loaded:  # only now: a task found complete in the records needs no device
                runner.load(task.shape, seed=self.seed)
                runner.default_ms = _time_of(default, already, [])
                loaded = True
            # The default first: its time scales the hang timeout of the rest.
            ordered = sorted(configs, key=lambda c: c != default)
            by_config = dict(zip(ordered, self._measure_and_record(task, runner, ordered,
                                                                   strategy)))
            pairs = [by_config[c] for c in configs]
            # A time taken while throttled or too spread is taken again once
            # the rest of the batch has run; the second time replaces it.
            again = [i for i, (_, m) in enumerate(pairs) if runner.options.needs_again(m)]
            for i, pair in zip(again, self._measure_and_record(
                    task, runner, [configs[i] for i in again], strategy)):
                pairs[i] = pair
            self.reporter.measured(len(configs))
            return [r for r, _ in pairs]
        return measure

    def _measure_and_record(self, task: Task, runner: Runner, configs: list[ExecConfig],
                            strategy: str) -> list:
        pairs = runner.measure(configs)
        self.store.append([Record.from_measurement(
            self.board.fingerprint, self.engine, task.key, task.shape, c, m, strategy,
            measure=runner.options) for c, (_, m) in zip(configs, pairs)])
        return pairs


def rule_default(board: Board, rules: EngineRules, shape: ConvShape) -> ExecConfig:
    """The config ArmNN's rules run `shape` with on this board and engine."""
    return armnn_default(shape, [list(c.cpus) for c in board.clusters],
                         [c.capacity or c.max_freq_mhz for c in board.clusters], board.ncores,
                         list(rules.ukernels.values()), rules.isa, rules.algorithms.__getitem__,
                         rules.check)


def pin_nodes(taskset: TaskSet, pins: list[Pin], board: Board, rules: EngineRules,
              int8_nodes: Iterable[tuple[str, ConvShape]] = ()) -> dict[str, PinnedNode]:
    """Every pinned node's config, checked against the engine (ValueError, one
    line); int8_nodes: (name, shape) of the int8 tasks' convolutions
    (split_int8), which conv_int8 pins only."""
    shape_of = {name: t.shape for t in taskset.tasks for name in t.nodes}
    nodes = [(n.name, shape_of[n.name], taskset.reads_model_input(n)) for n in taskset.conv_nodes
             if n.name in shape_of]
    return resolve_pins(pins, nodes, rules, lambda shape: rule_default(board, rules, shape),
                        int8_nodes)


def units(tasks: list[Task], pinned: dict[str, PinnedNode]) -> list[tuple[Task, PinnedNode | None]]:
    """The tasks as tuned: a task's unpinned nodes searched together, and
    its pinned nodes, one part per pinned config, not searched."""
    out = []
    for task in tasks:
        parts: dict[PinnedNode | None, list[str]] = {}
        for name in task.nodes:
            parts.setdefault(pinned.get(name), []).append(name)
        for pin, names in parts.items():
            part = dataclasses.replace(task, nodes=names,
                                       flops=task.flops // len(task.nodes) * len(names))
            out.append((part, pin))
    return out


def _time_of(config: ExecConfig, already: dict[ExecConfig, Result], measured) -> float | None:
    for r in [already.get(config), *measured]:
        if r is not None and r.config == config and r.ok:
            return r.median_ms
    return None


def build_plan(taskset: TaskSet, reports: list[TaskReport], board: Board, engine: str,
               strategy: str, input_shapes: dict, wall_s: float,
               precision: str = "fp32",
               int8: Sequence[tuple[Int8Task, ExecConfig]] = (),
               pinned: dict[str, PinnedNode] | None = None) -> Plan:
    """int8: the int8 tasks with their default, which their nodes take unless
    pinned (tune_int8 searches the others in the whole model)."""
    report_of = {name: r for r in reports for name in r.task.nodes}
    int8_of = {name: (t, default) for t, default in int8 for name in t.nodes}
    nodes = []
    for node in taskset.conv_nodes:
        if node.name in int8_of:
            t, default = int8_of[node.name]
            pin = (pinned or {}).get(node.name)
            nodes.append(PlanNode(node=node.name, task=t.key,
                                  config=pin.config if pin else default,
                                  default_config=default, pinned=pin.pin.text if pin else None))
            continue
        r = report_of[node.name]
        nodes.append(PlanNode(node=node.name, task=r.task.key, config=r.best,
                              default_config=r.default, tuned_ms=r.tuned_ms,
                              default_ms=r.default_ms, pinned=r.pinned))
    tuning = Tuning(wall_s=wall_s, tuner_s=sum(r.tuner_s for r in reports),
                    measurements=sum(r.measured for r in reports))
    model = Path(taskset.model_path)
    return Plan(model_path=str(model.resolve()), model_sha256=sha256_file(model),
                input_shapes={k: tuple(v) for k, v in (input_shapes or {}).items()},
                board_name=board.name, board_fingerprint=board.fingerprint,
                engine_version=engine, strategy=strategy, tuning=tuning, nodes=tuple(nodes),
                board=board, precision=precision)


def tune_unit(tuner: TaskTuner, task: Task, pin: PinnedNode | None, label: str,
              runner: Runner | None = None) -> TaskReport:
    """One of units(): a task searched, or measured with its pin."""
    if pin:
        return tuner.tune_pinned(task, pin.config, pin.pin.text, label, runner)
    return tuner.tune(task, label, runner)


def tune_in_order(tuner: TaskTuner, todo: list) -> list[TaskReport]:
    """The units one after the other, through the tuner's one launcher."""
    reports = []
    for i, (task, pin) in enumerate(todo, 1):
        reports.append(tune_unit(tuner, task, pin, f"task {i}/{len(todo)} {task.key}"))
        tuner.reporter.task_done(reports[-1])
    return reports


def tune_model(taskset: TaskSet, plan_path: str, *, board: Board, client: LauncherClient,
               records_path: str, config: TunerConfig, strategy: str,
               input_shapes: dict | None = None, seed: int = 0,
               reporter: TuneReporter | None = None,
               pinned: dict[str, PinnedNode] | None = None,
               tune_tasks=tune_in_order,
               transfer: str = "auto", precision: str = "fp32",
               int8: Sequence[Int8Task] = ()) -> tuple[Plan, list[TaskReport]]:
    """pinned: pin_nodes()'s, whose nodes are measured with their pin only;
    tune_tasks(tuner, units): how the units are tuned (on a farm: side by side),
    their reports in order; transfer: auto or off (warm_start.py); precision:
    the micro-kernels it may choose (tuner/precision.py), which the plan records;
    int8: the int8 tasks (split_int8's, taskset's tasks not holding their
    nodes), written with their default configs or their pins."""
    start = time.perf_counter()
    store = RecordStore(records_path)
    tuner = TaskTuner(board, client, store, config, strategy, seed, reporter, transfer,
                      precision)
    todo = units(taskset.tasks, pinned or {})
    if strategy != "default":  # which measures nothing
        tuner.reporter.planned([tuner.planned(task, pin) for task, pin in todo])
    reports = tune_tasks(tuner, todo)
    plan = build_plan(taskset, reports, board, tuner.engine, strategy, input_shapes or {},
                      time.perf_counter() - start, precision,
                      [(t, tuner.int8_default(t)) for t in int8], pinned)
    save_plan(plan, plan_path)
    return plan, reports
