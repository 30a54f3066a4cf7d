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
from pathlib import Path

import numpy as np

from acltuner.armnn_default import armnn_default
from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.config import ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.plan import Plan, PlanNode, Tuning, save_plan, sha256_file
from acltuner.taskgen.tasks import Task, TaskSet
from acltuner.tuner import TUNE_STRATEGIES
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.records import Record, RecordStore
from acltuner.tuner.report import TuneReporter
from acltuner.tuner.runner import Result, Runner
from acltuner.tuner.search import search
from acltuner.tuner.space import SearchSpace
from acltuner.tuner.tuner_config import TunerConfig


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

    @property
    def speedup(self) -> float | None:
        if self.default_ms and self.tuned_ms:
            return self.default_ms / self.tuned_ms
        return None


class TaskTuner:
    """Tunes tasks on one board through one launcher, logging to one records file."""

    def __init__(self, board: Board, client: LauncherClient, store: RecordStore,
                 config: TunerConfig, strategy: str, seed: int = 0,
                 reporter: TuneReporter | None = None):
        if strategy not in TUNE_STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; one of "
                             f"{', '.join(TUNE_STRATEGIES)}")
        self.board, self.client, self.store = board, client, store
        self.config, self.strategy, self.seed = config, strategy, seed
        self.reporter = reporter or TuneReporter()
        hello = client.hello_info
        self.engine = native.hello_engine_id(hello)
        self.isa = hello["isa"]
        self.algorithms = [(a["name"], a["uses_ukernel"]) for a in hello["algorithms"]]
        self.ukernels = {uk["name"]: uk for uk in hello["ukernels"]}
        self.clusters = [list(c.cpus) for c in board.clusters]
        self.speeds = [c.capacity or c.max_freq_mhz for c in board.clusters]
        self.runner = Runner(client, config.measure.options(client.largest_cache_bytes))

    def default_config(self, task: Task) -> ExecConfig:
        uses = dict(self.algorithms)
        return armnn_default(task.shape, self.clusters, self.speeds, self.board.ncores,
                             list(self.ukernels.values()), self.isa, uses.__getitem__,
                             self.client.check)

    def tune(self, task: Task, label: str, runner: Runner | None = None) -> TaskReport:
        """runner: what measures this task (a farm gives each task its own,
        tuned side by side); by default the tuner's one launcher."""
        runner = runner or self.runner
        default = self.default_config(task)
        records = self.store.measured(self.board.fingerprint, self.engine, task.key,
                                      measure=runner.options)
        already = {r.config: r.result() for r in records.values()}
        if self.strategy == "default":
            return TaskReport(task, default, default, None, None, 0, len(already), 0, 0.0)
        space = SearchSpace(task.shape, self.clusters, self.board.ncores, self.algorithms,
                            list(self.ukernels), self.client.check)
        encoder = FeatureEncoder([a for a, _ in self.algorithms], self.ukernels,
                                 space.cluster_of)
        loaded = False

        def measure(configs: list[ExecConfig]) -> list[Result]:
            nonlocal loaded
            if not loaded:  # only now: a task found complete in the records needs no device
                runner.load(task.shape, seed=self.seed)
                runner.default_ms = _time_of(default, already, [])
                loaded = True
            # The default first: its time scales the hang timeout of the rest.
            ordered = sorted(configs, key=lambda c: c != default)
            by_config = dict(zip(ordered, self._measure_and_record(task, runner, ordered)))
            pairs = [by_config[c] for c in configs]
            # A time taken while throttled or too spread is taken again once
            # the rest of the batch has run; the second time replaces it.
            again = [i for i, (_, m) in enumerate(pairs) if runner.options.needs_again(m)]
            for i, pair in zip(again, self._measure_and_record(task, runner,
                                                               [configs[i] for i in again])):
                pairs[i] = pair
            return [r for r, _ in pairs]

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
        outcome = search(space, measure, self.config, self.strategy, rng, encoder=encoder,
                         seed_configs=[default], already=already, on_round=progress)
        best = outcome.best
        return TaskReport(task, default, best.config if best else default,
                          _time_of(default, already, outcome.measured),
                          best.median_ms if best else None, len(outcome.measured),
                          len(already), space.size, outcome.model_s)


    def _measure_and_record(self, task: Task, runner: Runner, configs: list[ExecConfig]) -> list:
        pairs = runner.measure(configs)
        self.store.append([Record.from_measurement(
            self.board.fingerprint, self.engine, task.key, task.shape, c, m, self.strategy,
            measure=runner.options) for c, (_, m) in zip(configs, pairs)])
        return pairs


def _time_of(config: ExecConfig, already: dict[ExecConfig, Result], measured) -> float | None:
    for r in [already.get(config), *measured]:
        if r is not None and r.config == config and r.ok:
            return r.median_ms
    return None


def build_plan(taskset: TaskSet, reports: list[TaskReport], board: Board, engine: str,
               strategy: str, input_shapes: dict, wall_s: float) -> Plan:
    by_key = {r.task.key: r for r in reports}
    key_of = {name: t.key for t in taskset.tasks for name in t.nodes}
    nodes = []
    for node in taskset.conv_nodes:
        r = by_key[key_of[node.name]]
        nodes.append(PlanNode(node=node.name, task=r.task.key, config=r.best,
                              default_config=r.default, tuned_ms=r.tuned_ms,
                              default_ms=r.default_ms))
    tuning = Tuning(wall_s=wall_s, tuner_s=sum(r.tuner_s for r in reports),
                    measurements=sum(r.measured for r in reports))
    model = Path(taskset.model_path)
    return Plan(model_path=str(model.resolve()), model_sha256=sha256_file(model),
                input_shapes={k: tuple(v) for k, v in (input_shapes or {}).items()},
                board_name=board.name, board_fingerprint=board.fingerprint,
                engine_version=engine, strategy=strategy, tuning=tuning, nodes=tuple(nodes),
                board=board)


def tune_in_order(tuner: TaskTuner, tasks: list[Task]) -> list[TaskReport]:
    """The tasks one after the other, through the tuner's one launcher."""
    reports = []
    for i, task in enumerate(tasks, 1):
        report = tuner.tune(task, f"task {i}/{len(tasks)} {task.key}")
        reports.append(report)
        tuner.reporter.task_done(report)
    return reports


def tune_model(taskset: TaskSet, plan_path: str, *, board: Board, client: LauncherClient,
               records_path: str, config: TunerConfig, strategy: str,
               input_shapes: dict | None = None, seed: int = 0,
               reporter: TuneReporter | None = None,
               tune_tasks=tune_in_order) -> tuple[Plan, list[TaskReport]]:
    """tune_tasks(tuner, tasks): how the tasks are tuned (a farm: side by side),
    their reports in task order."""
    start = time.perf_counter()
    store = RecordStore(records_path)
    tuner = TaskTuner(board, client, store, config, strategy, seed, reporter)
    reports = tune_tasks(tuner, list(taskset.tasks))
    plan = build_plan(taskset, reports, board, tuner.engine, strategy, input_shapes or {},
                      time.perf_counter() - start)
    save_plan(plan, plan_path)
    return plan, reports
