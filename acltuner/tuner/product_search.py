"""Graph products tuned where they run: in the whole model (in_model.py).

A MatMul or Gemm the native graph computes (a token MLP, an attention's
projections, scores and context, a classifier) runs on one micro-kernel,
which ArmNN's rule picks (runtime/product_kernels.py).  The rule's pick is
not the fastest everywhere: MobileViT's attention scores, 16 products of
256x16 by 16x256, took 0.191 ms on 8x32-hybrid and 0.174 ms on 6x32-hybrid
in the model (x86 AVX-512, two cores, 2026-11-28).  Products run between
the other operations of the native graph, on its split, so they are timed
there.  The products of one shape (batches, M, K, N) are one task; its
candidates are the kernels that read A in place and run it, the rule's
first (product_candidates).  A task of less than MIN_SHARE of the model's
FLOPs (a CNN's classifier) keeps the rule's kernel: it could not gain more
than about that share of the model's time, and each candidate costs
whole-model runs.  Each product node joins the plan as a node of its own,
its config of algorithm PRODUCT_ALGORITHM on the graph's split (default_exec,
which a product does not choose), so the in-context check, `plan show` and
the report treat it as any other node.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.plan import Plan, PlanNode, plan_board
from acltuner.runtime.ir import NativeStage
from acltuner.runtime.load import LoadedModel, LoweredPlan, lower_plan, read_model
from acltuner.runtime.product_kernels import PRODUCT_ALGORITHM, product_candidates
from acltuner.runtime.program import default_exec
from acltuner.runtime.target import Target
from acltuner.taskgen.tasks import Task
from acltuner.tuner.in_model import RunPlans, tune_in_model
from acltuner.tuner.tune import TaskReport

Shape = tuple[int, int, int, int]  # batches, M, K, N
MIN_SHARE = 0.01
# Rounds and runs a round of the candidate plans (in_model.whole_model_runs):
# more than the int8 tasks' 3 of 10, since one product's kernels differ by a
# few percent where int8 splits differ by tens.  MobileViT's attention
# scores alone, 6x32 9% faster than the rule's 8x32 in one process: tunes at
# 3 of 10 chose 8x32, 8x32, 6x16; at 5 of 20, 8x32, 6x32, 6x16, 6x32
# (2026-11-28, this host noisy; about 1 s more a tune of a small model).
PRODUCT_RUNS = (5, 20)
_KEY = re.compile(r"matmul-b(\d+)\.m(\d+)\.k(\d+)\.n(\d+)")


@dataclass
class ProductTask:
    key: str
    shape: Shape
    nodes: list[str]

    @property
    def flops(self) -> int:
        """One node's."""
        batches, m, k, n = self.shape
        return 2 * batches * m * k * n


def product_key(shape: Shape) -> str:
    batches, m, k, n = shape
    return f"matmul-b{batches}.m{m}.k{k}.n{n}"


def product_shape(key: str) -> Shape | None:
    """product_key's shape, or None for another task's key."""
    found = _KEY.fullmatch(key)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]),
                                       int(found[4]))


def product_tasks(lowered: LoweredPlan) -> list[ProductTask]:
    """The products of a lowered plan by shape, in graph order.  A node with
    products of two shapes is left out: its config chooses one kernel."""
    shapes: dict[str, set[Shape]] = {}
    for stage in lowered.stages:
        if isinstance(stage, NativeStage):
            for op in stage.ops:
                if op.product is not None:
                    shapes.setdefault(op.node, set()).add(op.product)
    tasks: dict[Shape, ProductTask] = {}
    for node, found in shapes.items():
        if len(found) == 1:
            shape = next(iter(found))
            tasks.setdefault(shape, ProductTask(product_key(shape), shape, [])).nodes.append(node)
    return list(tasks.values())


def tune_products(plan: Plan, target: Target,
                  runs_of: Callable[[Plan, LoadedModel], RunPlans],
                  conv_flops: int, progress: Callable[[str], None] = lambda _: None
                  ) -> tuple[Plan, list[TaskReport]]:
    """`plan` with a node for each of its model's products that weigh
    MIN_SHARE or more, on its task's choice, and a report per task searched
    (its times the nodes' in the model).  target: the engine that runs the
    plan (the launcher's); runs_of(plan, model): run() for choose_in_model
    (in_model.whole_model_runs), model read_model(plan); conv_flops: the model's convolutions'.
    Without such products, the plan as it is."""
    known = {n.node for n in plan.nodes}
    model = read_model(plan)
    tasks = [t for t in product_tasks(lower_plan(plan, model, target))
             if known.isdisjoint(t.nodes)]
    total = conv_flops + sum(t.flops * len(t.nodes) for t in tasks)
    tasks = [t for t in tasks if t.flops * len(t.nodes) >= MIN_SHARE * total]
    if not tasks:
        return plan, []
    weights, workloads = default_exec(plan_board(plan))
    units = [(t, [ExecConfig(PRODUCT_ALGORITHM, k, weights, workloads)
                  for k in product_candidates(*t.shape[1:], target)]) for t in tasks]
    # Every product node joins the plan first, on the rule's kernel, so that
    # the candidate plans carry each product's config.
    plan = dataclasses.replace(plan, nodes=plan.nodes + tuple(
        PlanNode(node=name, task=t.key, config=cands[0], default_config=cands[0])
        for t, cands in units for name in t.nodes))
    return tune_in_model(plan, units, runs_of(plan, model), _as_task, "graph products",
                         progress)


def _as_task(t: ProductTask) -> Task:
    """The product as the 1x1 convolution it is, for the tune's report."""
    batches, m, k, n = t.shape
    return Task(t.key, ConvShape(n=batches, h=m, w=1, c=k, oc=n, kh=1, kw=1), t.nodes,
                t.flops * len(t.nodes), [PRODUCT_ALGORITHM])
