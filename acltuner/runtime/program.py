"""A compiled model: native graphs and onnxruntime segments, built once, run many times.

Each native stage gets its own graph and arena (a graph runs all its
operations in one call, so a delegated segment in between splits them).
Tensors cross stage boundaries as numpy arrays in ONNX layout, converted
while copied into and out of an arena.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.graph import Graph, GraphBackend, GraphRun, Tensor
from acltuner.onnx.graph import OnnxGraph
from acltuner.plan import Plan
from acltuner.runtime.arena import plan_arena
from acltuner.runtime.delegate import DelegatedRunner
from acltuner.runtime.ir import Deferred, NativeStage, Op, Stage, Value
from acltuner.runtime.layout import inverse
from acltuner.runtime.profile import COPIES_OP, HOST_COPIES, ProfileEntry

FLOAT_BYTES = 4


def default_exec(board: Board) -> tuple[tuple[int, ...], int]:
    """What non-convolution operations run on: every core of the board at weight
    1, cut into 4 workloads per core so that faster cores take more of them."""
    cpus = {cpu for c in board.clusters for cpu in c.cpus}
    return tuple(int(cpu in cpus) for cpu in range(board.ncores)), 4 * len(cpus)


class NativeRunner:
    """One native stage as a graph: constants written and weights packed at
    build.  With release, the stage gives up its constants and weights as
    they are packed (the engine keeps its own copies), so that each is freed
    right after; without, the stage stays whole, to be built again."""

    def __init__(self, stage: NativeStage, core_weights: tuple[int, ...], workloads: int,
                 make_graph=Graph, balance: str = "adaptive", release: bool = True):
        crossing = [name for name, v in [*stage.imports.items(), *stage.exports.items()] if v.u8]
        if crossing:  # lowering keeps uint8 tensors inside their stage (ops/quant.py)
            raise AssertionError(f"uint8 tensor(s) {', '.join(crossing)} cross a native stage's "
                                 f"boundary")
        self.arena_floats = plan_arena(stage)
        self.graph = make_graph(self.arena_floats, core_weights, workloads)
        self.graph.set_balance(balance)
        for b in stage.constants:
            if b.constant is None:
                raise ValueError("a native stage gives its constants to the first graph built "
                                 "from it: lower the model again for another")
            self.graph.arena[b.offset:b.offset + b.floats] = b.constant.reshape(-1)
            if release:
                b.constant = None
        # Largest weights first: with release, each is freed as soon as it is
        # packed, before the next one's packed copy is made.
        order = sorted(range(len(stage.ops)), key=lambda i: -_weight_bytes(stage.ops[i]))
        for i in order:
            _emit(self.graph, stage.ops[i])
            if release:
                stage.ops[i].args = {}
        self.graph.order(sorted(range(len(order)), key=order.__getitem__))
        self.labels = [(op.node, op.what, op.kind) for op in stage.ops]
        self.imports = [(name, _tensor(v), v.perm) for name, v in stage.imports.items()]
        self.exports = [(name, _tensor(v), inverse(v.perm)) for name, v in stage.exports.items()]

    def run(self, env: dict, repeat: int = 1, warmup: int = 0) -> GraphRun:
        """Runs the stage (`warmup` untimed runs, then `repeat` timed ones)
        on the imports in `env`, the exports added to it."""
        result = self.graph.run([(t, env[name], perm) for name, t, perm in self.imports],
                                [(t, back) for _, t, back in self.exports],
                                repeat=repeat, warmup=warmup)
        env.update(zip((name for name, _, _ in self.exports), result.outputs))
        self._node_ms = result.node_ms
        return result

    def profile(self) -> list[ProfileEntry]:
        """The latest run's time per operation."""
        return [ProfileEntry(node, what, ms, kind)
                for (node, what, kind), ms in zip(self.labels, self._node_ms)]


def _weight_bytes(op: Op) -> int:
    return sum(a.nbytes for a in op.args.values() if isinstance(a, (np.ndarray, Deferred)))


def _tensor(v: Value) -> Tensor:
    return Tensor(v.buffer.offset + v.offset, v.dims)


def _emit(graph: GraphBackend, op: Op) -> None:
    args = {k: a.make() if isinstance(a, Deferred) else a for k, a in op.args.items()}
    graph.add(op.kind, [_tensor(v) for v in op.reads], _tensor(op.out), **args)


@dataclass(frozen=True)
class TimedRuns:
    """Program.measure's runs, timed where the graph runs."""
    times_ms: list[float]  # each timed run: inputs in, every node, outputs out
    profile: list[ProfileEntry]  # each node's median over the timed runs
    copy_ms: float  # median time of the copies in and out
    outputs: dict[str, np.ndarray]  # the last run's, by name, as the ONNX model gives them
    peak_rss_mb: float  # of the process running the graph


@dataclass(frozen=True)
class Delegation:
    """A delegated segment: its nodes and their operators."""
    nodes: list[str]
    op_types: list[str]


def expected(dims, dtype) -> str:
    return f"{np.dtype(dtype).name} {list(dims)}"


class Program:
    """run(inputs) -> outputs: numpy arrays by name, in and out as in the ONNX
    model (NCHW); last_profile is the latest run's time per operation.

    balance: "adaptive" (cores done early take over the rest of a late core's
    share, and beside a busy core the runs go on one unpinned thread where
    that is faster: the speed holds beside other threads) or "strict" (each core runs
    its planned share only, as the tuner measured it); outputs are identical.
    release: the stages and g's constants give up each weight once packed,
    which frees it; False leaves them whole, to build another Program from."""

    def __init__(self, model: onnx.ModelProto, g: OnnxGraph, stages: list[Stage], board: Board,
                 warnings: list[str] | None = None, plan: Plan | None = None, make_graph=Graph,
                 balance: str = "adaptive", release: bool = True):
        self.warnings = list(warnings or [])  # how the plan differs, when forced
        self.plan = plan  # the plan it was loaded from, if any
        weights, workloads = default_exec(board)
        threads = sum(weights)
        self.inputs = {i.name: (tuple(d.dim_value for d in i.type.tensor_type.shape.dim),
                                onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
                       for i in model.graph.input}
        self.outputs = [o.name for o in model.graph.output]
        self._constants = {t: g.constants[t] for t in self.outputs if t in g.constants}
        delegated = {id(s): DelegatedRunner(model, g, s, threads) for s in stages
                     if not isinstance(s, NativeStage)}
        if release:  # from here on each weight is referenced by the operation packing it only
            g.constants.clear()
        self.balance = balance
        self._stages = [NativeRunner(s, weights, workloads, make_graph, balance, release)
                        if isinstance(s, NativeStage) else delegated[id(s)] for s in stages]
        self.delegated = [Delegation(s.node_names, s.op_types) for s in self._stages
                          if isinstance(s, DelegatedRunner)]
        self.arena_bytes = FLOAT_BYTES * sum(s.arena_floats for s in self._stages
                                             if isinstance(s, NativeRunner))
        if release:  # the weights packed and freed
            native.trim_heap()
        self._copies_ms: float | None = None

    def _feed(self, inputs) -> dict:
        if isinstance(inputs, np.ndarray):
            if len(self.inputs) != 1:
                raise ValueError(f"the model has {len(self.inputs)} inputs "
                                 f"({', '.join(self.inputs)}): pass a dict by name")
            inputs = {next(iter(self.inputs)): inputs}
        unknown = sorted(set(inputs) - set(self.inputs))
        if unknown:
            raise ValueError(f"unknown input(s) {', '.join(unknown)}; the model's inputs: "
                             f"{', '.join(self.inputs)}")
        env = dict(self._constants)
        for name, (dims, dtype) in self.inputs.items():
            if name not in inputs:
                raise ValueError(f"missing input '{name}' ({expected(dims, dtype)})")
            a = np.asarray(inputs[name])
            if a.shape != dims or a.dtype != dtype:
                raise ValueError(f"input '{name}' must be {expected(dims, dtype)}, got "
                                 f"{expected(a.shape, a.dtype)}")
            env[name] = a
        return env

    def run(self, inputs: dict[str, np.ndarray] | np.ndarray) -> dict[str, np.ndarray]:
        """The model's outputs for `inputs` (a dict by input name, or the array of
        a model with one input): a dict by output name, in the model's order,
        each array the caller's to keep (`next(iter(...values()))` for a
        model with one output)."""
        env = self._feed(inputs)
        self._copies_ms = sum(stage.run(env).copy_ms if isinstance(stage, NativeRunner)
                              else stage.run(env) for stage in self._stages)
        return {name: env[name] for name in self.outputs}

    def measure(self, inputs: dict[str, np.ndarray] | np.ndarray, repeat: int = 20,
                warmup: int = 3) -> TimedRuns:
        """`warmup` untimed runs, then `repeat` timed ones, all in one call of
        the graph: a launcher's graph times them itself, without the round
        trips.  For a program without delegated segments (native_only)."""
        if self.delegated:
            raise ValueError("cannot time runs in the graph: the program has delegated segments")
        env = self._feed(inputs)
        stage = next((s for s in self._stages if isinstance(s, NativeRunner)), None)
        if stage is None:
            raise ValueError("the model computes nothing natively: every output is a constant")
        result = stage.run(env, repeat, warmup)
        return TimedRuns(result.times_ms, stage.profile(), result.copy_ms,
                         {name: env[name] for name in self.outputs}, result.peak_rss_mb)

    def replay_delegated(self, on: bool) -> None:
        """For benchmarks (acltuner.bench.delegated): while on, each delegated
        segment gives back the outputs of its last run instead of running, so
        that the native stages can be timed with no onnxruntime thread
        between them."""
        for stage in self._stages:
            if isinstance(stage, DelegatedRunner):
                stage.replay = on

    @property
    def last_profile(self) -> list[ProfileEntry]:
        """The latest run's time per operation, built when asked for: a model
        of a hundred small layers would otherwise pay tens of microseconds a
        run for entries nobody reads."""
        if self._copies_ms is None:
            return []
        return [*(e for stage in self._stages for e in stage.profile()),
                ProfileEntry(HOST_COPIES, "copies into and out of arenas", self._copies_ms,
                             COPIES_OP)]
