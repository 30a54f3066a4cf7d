"""acltuner.load: a plan file -> a Program ready to run its model."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx

from acltuner.board.model import Board
from acltuner.board.registry import load_board
from acltuner.engine import native
from acltuner.engine.config import ExecConfig
from acltuner.runtime.lower import lower
from acltuner.runtime.program import Program
from acltuner.runtime.simplify import simplify
from acltuner.taskgen.model import load_model_detached
from acltuner.tuner.plan import Plan, check_plan, load_plan


def compile_model(model: onnx.ModelProto, configs: dict[str, ExecConfig], board: Board,
                  warnings: list[str] | None = None, plan: Plan | None = None,
                  weights: dict[str, np.ndarray] | None = None) -> Program:
    """`model` (shapes inferred, as load_model returns it; simplified in place)
    with a config per Conv node name.  With load_model_detached's model and
    weights, the weights dict is emptied: each weight is freed once packed."""
    model = simplify(model, weights)
    stages, g = lower(model, configs, weights)
    if weights is not None:
        weights.clear()  # g holds what is still needed, and lets it go while packing
    return Program(model, g, stages, board, warnings, plan)


def load(plan_path: str | os.PathLike, *, force: bool = False,
         board: str | os.PathLike | None = None) -> Program:
    """The plan's model, built with the plan's configs for `board` (default: the
    plan's board).  A plan for another model file, board or engine version is
    refused unless `force`, which keeps the differences as Program.warnings."""
    plan = load_plan(plan_path)
    target = load_board(board if board is not None else plan.board_name)
    if not Path(plan.model_path).is_file():
        raise ValueError(f"{plan_path}: its model {plan.model_path} is not a file")
    warnings = check_plan(plan, plan.model_path, target.fingerprint, native.version(), force)
    model, weights = load_model_detached(plan.model_path, plan.input_shapes)
    return compile_model(model, {n.node: n.config for n in plan.nodes}, target, warnings, plan,
                         weights)
