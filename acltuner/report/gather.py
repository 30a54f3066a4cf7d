"""The plan and its records as tables: one row per node, one per measurement.

A report explains one plan, so only the records of its tasks on its board and
engine version are read.  A records file may hold the same tasks measured
under several protocols (warm and cold caches); times of different protocols
do not compare, so the protocol with the most records of the plan's tasks is
the one shown, and summary.json names it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from acltuner.plan import Plan, load_plan, plan_board, sha256_file
from acltuner.runtime.product_kernels import PRODUCT_ALGORITHM
from acltuner.taskgen.int8 import INT8_ALGORITHM
from acltuner.tuner.records import Record, RecordStore

# tuned_ms: the time of the config the node runs, chosen (a reverted node:
# its default's); reverted: why the in-context check sent it back, and what it
# dropped (None: not sent back).
NODE_COLUMNS = ["node", "task", "algorithm", "ukernel", "placement", "workloads", "chosen",
                "tuned_ms", "default_ms", "speedup", "default_config", "reverted"]


class ReportError(ValueError):
    """Input a report cannot be made of (one line)."""


@dataclass(frozen=True)
class Tuned:
    """One plan with what the report reads of it."""
    path: str
    plan: Plan
    nodes: pd.DataFrame            # NODE_COLUMNS, in model order
    records: dict[str, list[Record]]  # per task of the plan, in file order
    caches: str | None             # the protocol of those records; None without records

    @property
    def task_nodes(self) -> dict[str, str]:
        """Each task's nodes, as the figures name a task."""
        return {task: ", ".join(nodes)
                for task, nodes in self.nodes.groupby("task", sort=False)["node"]}

    @property
    def board(self):
        return plan_board(self.plan)


def placement(weights: tuple[int, ...]) -> str:
    return ":".join(map(str, weights))


def chosen(config) -> str:
    """What the per-layer figure colours by: the algorithm and its micro-kernel."""
    return f"{config.algorithm}/{config.ukernel}" if config.ukernel else config.algorithm


def read_plan(path: str) -> Plan:
    """The plan, whose model must still be the file it was tuned on."""
    if not Path(path).is_file():
        raise ReportError(f"{path}: no such plan file")
    plan = load_plan(path)
    model = Path(plan.model_path)
    if not model.is_file():
        raise ReportError(f"{path}: its model {model} is not a file")
    if sha256_file(model) != plan.model_sha256:
        raise ReportError(f"{path}: a plan of another model: {model} changed since tuning "
                          f"(sha256 differs from the plan's {plan.model_sha256[:12]}...)")
    return plan


def node_table(plan: Plan) -> pd.DataFrame:
    rows = [(n.node, n.task, n.config.algorithm, n.config.ukernel or "-",
             placement(n.config.core_weights), n.config.workloads, chosen(n.config),
             n.tuned_ms, n.default_ms, str(n.default_config),
             n.reverted.describe() if n.reverted else None) for n in plan.nodes]
    frame = pd.DataFrame(rows, columns=[c for c in NODE_COLUMNS if c != "speedup"])
    frame = frame.astype({"tuned_ms": "float64", "default_ms": "float64"})
    frame.insert(NODE_COLUMNS.index("speedup"), "speedup",
                 frame["default_ms"] / frame["tuned_ms"])
    return frame


def plan_records(plan: Plan, records: list[Record]) -> tuple[dict[str, list[Record]], str | None]:
    """The plan's tasks' records on its board and engine, of one protocol."""
    tasks = {n.task for n in plan.nodes}
    mine = [r for r in records if r.task in tasks and r.board == plan.board_fingerprint
            and r.engine == plan.engine_version]
    if not mine:
        return {}, None
    measure = Counter(r.measure for r in mine).most_common(1)[0][0]
    mine = [r for r in mine if r.measure == measure]
    # A config measured again (the noise control) counts once, where it was
    # first measured, with its later time: as the tuner counts it.
    latest = {(r.task, r.config): r for r in mine}
    by_task: dict[str, list[Record]] = {}
    seen: set = set()
    for r in mine:
        if (r.task, r.config) not in seen:
            seen.add((r.task, r.config))
            by_task.setdefault(r.task, []).append(latest[r.task, r.config])
    return by_task, measure.label


def read_records(path: str) -> list[Record]:
    if not Path(path).is_file():
        # RecordStore starts an empty log where there is none; here that is a typo.
        raise ReportError(f"{path}: no such records file")
    return RecordStore(path).records


def measured_alone(plan: Plan) -> bool:
    """Whether any of the plan's nodes was tuned by measuring its task alone,
    in the launcher, which records it; the int8 convolutions and the graph's
    products are tuned in the whole model and leave no records."""
    return any(n.config.algorithm not in (INT8_ALGORITHM, PRODUCT_ALGORITHM) for n in plan.nodes)


def gather(plan_path: str, records_path: str | None) -> Tuned:
    """The plan and, from records_path, its tasks' records: a file without one
    is another tuning's.  None (a plan to compare): no records."""
    plan = read_plan(plan_path)
    if records_path is None or not measured_alone(plan):
        return Tuned(plan_path, plan, node_table(plan), {}, None)
    by_task, caches = plan_records(plan, read_records(records_path))
    if not by_task:
        raise ReportError(f"{records_path}: no record of {plan_path}'s tasks on board "
                          f"{plan.board_name} ({plan.board_fingerprint}) with engine "
                          f"{plan.engine_version}: the records of another model, board or "
                          f"engine?")
    return Tuned(plan_path, plan, node_table(plan), by_task, caches)


def curves(tuned: Tuned) -> pd.DataFrame:
    """Best-so-far time per task and strategy: task, strategy, n (measurements
    of that strategy so far), ms (NaN when the measurement failed or was
    wrong), best_ms (NaN until one succeeded)."""
    rows = [(task, r.strategy, r.median_ms if r.usable else None)
            for task, recs in tuned.records.items() for r in recs]
    frame = pd.DataFrame(rows, columns=["task", "strategy", "ms"]).astype({"ms": "float64"})
    groups = frame.groupby(["task", "strategy"], sort=False)
    frame["n"] = groups.cumcount() + 1
    frame["best_ms"] = groups["ms"].cummin()
    # cummin leaves NaN at a failed measurement; the best so far still holds there.
    frame["best_ms"] = frame.groupby(["task", "strategy"], sort=False)["best_ms"].ffill()
    return frame


def task_order(tuned: Tuned) -> list[str]:
    """The plan's tasks in the order their first node runs."""
    return list(dict.fromkeys(tuned.nodes["task"]))


def placements(tuned: Tuned) -> pd.DataFrame:
    """Each node's share of the work per core (its weight over the sum): rows
    nodes in model order, columns cpu ids."""
    weights = pd.DataFrame([n.config.core_weights for n in tuned.plan.nodes],
                           index=[n.node for n in tuned.plan.nodes])
    return weights.div(weights.sum(axis=1), axis=0)



def join_plans(a: Tuned, b: Tuned) -> pd.DataFrame:
    """The two plans' nodes matched by name: node, then tuned_ms, speedup,
    chosen, placement and reverted for each (suffixes _a, _b); a's order, then
    b's own nodes."""
    keep = ["node", "tuned_ms", "speedup", "chosen", "placement", "reverted"]
    joined = a.nodes[keep].merge(b.nodes[keep], on="node", how="outer", suffixes=("_a", "_b"),
                                 sort=False)
    names = dict.fromkeys([*a.nodes["node"], *b.nodes["node"]])
    order = {node: i for i, node in enumerate(names)}
    return joined.sort_values("node", key=lambda s: s.map(order)).reset_index(drop=True)
