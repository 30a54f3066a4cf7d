"""acltuner.load: a plan file -> a Program ready to run its model."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx

from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.config import ExecConfig
from acltuner.engine.graph import Graph
from acltuner.plan import Plan, check_plan, load_plan, plan_board
from acltuner.runtime.ir import DelegatedSegment
from acltuner.runtime.lower import lower
from acltuner.runtime.program import Program
from acltuner.runtime.target import Target
from acltuner.taskgen.graph import node_name
from acltuner.taskgen.model import load_model_detached


def compile_model(model: onnx.ModelProto, configs: dict[str, ExecConfig], board: Board,
                  warnings: list[str] | None = None, plan: Plan | None = None,
                  weights: dict[str, np.ndarray] | None = None, *,
                  engine: Target | None = None, make_graph=Graph,
                  native_only: bool = False, balance: str = "adaptive") -> Program:
    """`model` (shapes static and constants folded, as load_model returns it)
    with a config per Conv node name, for `engine` (default: this process's),
    its native stages built by make_graph(arena_floats, core_weights, workloads).
    With load_model_detached's model and weights, the weights dict is emptied:
    each weight is freed once packed.  native_only refuses, before building
    anything, a model with nodes that would run through onnxruntime.  balance:
    as in Program ("adaptive" runs, "strict" measurements)."""
    stages, g = lower(model, configs, engine, weights)
    if weights is not None:
        weights.clear()  # g holds what is still needed, and lets it go while packing
    delegated = [n for s in stages if isinstance(s, DelegatedSegment) for n in s.nodes]
    if native_only and delegated:
        raise ValueError(f"cannot run natively only: {len(delegated)} node(s) are outside the "
                         f"native engine and need onnxruntime: "
                         + ", ".join(f"{node_name(n)} ({n.op_type})" for n in delegated))
    return Program(model, g, stages, board, warnings, plan, make_graph, balance)


def load(plan_path: str | os.PathLike, *, force: bool = False,
         board: str | os.PathLike | None = None, engine: Target | None = None,
         make_graph=Graph, native_only: bool = False, balance: str = "adaptive") -> Program:
    """The plan's model, built with the plan's configs for `board` (default: the
    plan's board) and `engine` (default: this process's).  A plan for another
    model file, board or engine version is refused unless `force`, which keeps
    the differences as Program.warnings.  make_graph, native_only and balance:
    as in compile_model."""
    plan = load_plan(plan_path)
    target = plan_board(plan, board)
    if not Path(plan.model_path).is_file():
        raise ValueError(f"{plan_path}: its model {plan.model_path} is not a file")
    engine_id = engine.engine if engine else native.local_engine_id()
    warnings = check_plan(plan, plan.model_path, target.fingerprint, engine_id, force)
    model, weights = load_model_detached(plan.model_path, plan.input_shapes)
    return compile_model(model, {n.node: n.config for n in plan.nodes}, target, warnings, plan,
                         weights, engine=engine, make_graph=make_graph, native_only=native_only,
                         balance=balance)
