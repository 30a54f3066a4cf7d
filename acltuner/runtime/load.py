"""acltuner.load: a plan file -> a Program ready to run its model; compile_plan:
a plan in memory and a model read once -> a Program, as often as needed;
lower_plan: the same plan lowered once, then a Program from it as often as
needed."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import onnx

from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.config import ExecConfig
from acltuner.engine.graph import Graph
from acltuner.onnx.graph import OnnxGraph, node_name
from acltuner.onnx.model import load_model_detached, read_model as read_onnx
from acltuner.plan import Plan, PlanError, check_plan, load_plan, plan_board
from acltuner.runtime.ir import DelegatedSegment, Stage
from acltuner.runtime.lower import lower
from acltuner.runtime.program import Program
from acltuner.runtime.target import Target
from acltuner.taskgen.int8 import Int8ConvNode, int8_conv_nodes


@dataclass(frozen=True)
class LoadedModel:
    """A model parsed once, to be compiled as often as needed: shapes static
    and weights detached, as load_model_detached gives them, and its int8
    convolutions (int8_nodes).  Compiling leaves them as they are."""
    model: onnx.ModelProto
    weights: dict[str, np.ndarray]
    int8: list[Int8ConvNode] = field(default_factory=list)


def int8_nodes(path: str | os.PathLike, model: onnx.ModelProto,
               weights: dict[str, np.ndarray]) -> list[Int8ConvNode]:
    """The int8 convolutions of the model at `path`, loaded as `model` and
    `weights`: read from the file as written, since loading folds their
    int8 weights into floats.  Empty, and the file not read again, for a
    model without quantization nodes."""
    if not any(n.op_type == "DequantizeLinear" for n in model.graph.node):
        return []
    return int8_conv_nodes(read_onnx(Path(path)), OnnxGraph(model, weights))[0]


def read_model(plan: Plan) -> LoadedModel:
    """The model `plan` names, at the plan's input shapes."""
    model, weights = load_model_detached(plan.model_path, plan.input_shapes)
    return LoadedModel(model, weights, int8_nodes(plan.model_path, model, weights))


def _configs(plan: Plan) -> dict[str, ExecConfig]:
    return {n.node: n.config for n in plan.nodes}


def compile_plan(plan: Plan, model: LoadedModel, target: Target | None = None,
                 backend=Graph, *, native_only: bool = False,
                 balance: str = "adaptive") -> Program:
    """`plan` (in memory; its file's checks are load()'s) on `model`, for the
    plan's board and `target`'s engine (default: this process's), its native
    graphs built by backend(arena_floats, core_weights, workloads).
    native_only and balance: as in compile_model."""
    return compile_model(model.model, _configs(plan), plan_board(plan),
                         plan=plan, weights=dict(model.weights), engine=target,
                         make_graph=backend, native_only=native_only, balance=balance,
                         int8=model.int8)


@dataclass(frozen=True)
class LoweredPlan:
    """A plan lowered on a model read once, to build Programs from as often
    as needed: a launcher holds one graph at a time, so plans run in turns
    there build their graphs again each turn.  Building leaves the lowering
    whole: it holds the constants and weights it refers to while it is kept."""
    model: onnx.ModelProto
    stages: list[Stage]
    graph: OnnxGraph
    board: Board
    plan: Plan

    def program(self, backend=Graph, balance: str = "adaptive") -> Program:
        """A Program of fresh native graphs, built by backend(arena_floats,
        core_weights, workloads); balance: as in compile_model."""
        return Program(self.model, self.graph, self.stages, self.board, plan=self.plan,
                       make_graph=backend, balance=balance, release=False)


def lower_plan(plan: Plan, model: LoadedModel, target: Target | None = None, *,
               native_only: bool = False) -> LoweredPlan:
    """`plan` (in memory) lowered on `model` for the plan's board and
    `target`'s engine (default: this process's); native_only: as in
    compile_model."""
    stages, g = lower(model.model, _configs(plan), target, model.weights, model.int8)
    if native_only:
        _refuse_delegated(stages)
    return LoweredPlan(model.model, stages, g, plan_board(plan), plan)


def compile_model(model: onnx.ModelProto, configs: dict[str, ExecConfig], board: Board,
                  warnings: list[str] | None = None, plan: Plan | None = None,
                  weights: dict[str, np.ndarray] | None = None, *,
                  engine: Target | None = None, make_graph=Graph,
                  native_only: bool = False, balance: str = "adaptive",
                  int8: list[Int8ConvNode] | None = None) -> Program:
    """`model` (shapes static and constants folded, as load_model returns it)
    with a config per Conv node name, for `engine` (default: this process's),
    its native stages built by make_graph(arena_floats, core_weights, workloads).
    With load_model_detached's model and weights, the weights dict is emptied:
    each weight is freed once packed.  native_only refuses, before building
    anything, a model with nodes that would run through onnxruntime.  balance:
    as in Program ("adaptive" runs, "strict" measurements).  int8: the
    model's int8 convolutions (int8_nodes), run as such; without, in float."""
    stages, g = lower(model, configs, engine, weights, int8)
    return _program(model, stages, g, board, warnings, plan, weights, make_graph, native_only,
                    balance)


def _program(model, stages, g, board, warnings, plan, weights, make_graph, native_only,
             balance) -> Program:
    """compile_model's program from the lowered stages."""
    if weights is not None:
        weights.clear()  # g holds what is still needed, and lets it go while packing
    if native_only:
        _refuse_delegated(stages)
    return Program(model, g, stages, board, warnings, plan, make_graph, balance)


def _refuse_delegated(stages: list[Stage]) -> None:
    """A ValueError naming the nodes the stages leave to onnxruntime, if any."""
    delegated = [n for s in stages if isinstance(s, DelegatedSegment) for n in s.nodes]
    if delegated:
        raise ValueError(f"cannot run natively only: {len(delegated)} node(s) are outside the "
                         f"native engine and need onnxruntime: "
                         + ", ".join(f"{node_name(n)} ({n.op_type})" for n in delegated))


@dataclass(frozen=True)
class CheckedPlan:
    """A plan that passed every check `run` makes before building it."""
    plan: Plan  # its model_path the model checked: --model's, else the plan's
    board: Board
    warnings: list[str]  # what differs, with force
    model: onnx.ModelProto
    weights: dict[str, np.ndarray]  # as load_model_detached gives them
    stages: list[Stage]  # as lower() gives them
    graph: OnnxGraph


def check(plan_path: str | os.PathLike, *, model: str | os.PathLike | None = None,
          force: bool = False, board: str | os.PathLike | None = None,
          engine: Target | None = None) -> CheckedPlan:
    """Everything run and plan show check before anything is built, each
    problem one line (PlanError, ValueError): the plan file; its model (`model`
    instead of the plan's, for a model moved on its own) present and unchanged
    since tuning, its board and engine (with force: warnings); each node's core
    weights, one per core of `board` (default: the plan's board); and each
    node's config runnable by `engine` (default: this process's) on its Conv."""
    plan = load_plan(plan_path)
    if model is not None:
        if not Path(model).is_file():
            raise PlanError(f"--model {model}: not a file")
        plan = replace(plan, model_path=str(Path(model).resolve()))
    elif not Path(plan.model_path).is_file():
        raise PlanError(f"{plan_path}: its model {plan.model_path} is not a file: give the "
                        f"model's new path with --model PATH")
    target = plan_board(plan, board)
    engine_id = engine.engine if engine else native.local_engine_id()
    warnings = check_plan(plan, plan.model_path, target.fingerprint, engine_id, force)
    for n in plan.nodes:
        if len(n.config.core_weights) != target.ncores:
            raise PlanError(f"{plan_path}: node {n.node}: {len(n.config.core_weights)} core "
                            f"weights for board {target.name}, of {target.ncores} cores")
    onnx_model, weights = load_model_detached(plan.model_path, plan.input_shapes)
    int8 = int8_nodes(plan.model_path, onnx_model, weights)
    try:  # lowering checks every config against its Conv
        stages, g = lower(onnx_model, _configs(plan), engine, weights, int8)
    except ValueError as e:
        raise PlanError(f"{plan_path}: {e}") from None
    return CheckedPlan(plan, target, warnings, onnx_model, weights, stages, g)


def load(plan_path: str | os.PathLike, *, model: str | os.PathLike | None = None,
         force: bool = False, board: str | os.PathLike | None = None,
         engine: Target | None = None, make_graph=Graph, native_only: bool = False,
         balance: str = "adaptive") -> Program:
    """The plan's model (`model`, if given, instead of the file the plan
    names), built with the plan's configs for `board` (default: the plan's
    board) and `engine` (default: this process's), once check() passed.  A
    plan for another model file, board or engine version is refused unless
    `force`, which keeps the differences as Program.warnings.  make_graph,
    native_only and balance: as in compile_model."""
    c = check(plan_path, model=model, force=force, board=board, engine=engine)
    return _program(c.model, c.stages, c.graph, c.board, c.warnings, c.plan, c.weights,
                    make_graph, native_only, balance)
