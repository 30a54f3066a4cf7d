"""Where the whole model's time goes, by op kind, from the engine's profile.

The profile is what `acltuner run --profile --json` prints: either run here by
the report (the plan must be for this machine) or read from a file saved from
such a run, e.g. one on the board (`run --host H --profile --json`).  Each
entry's `op` is its graph operation (conv, pool, matmul, ...), "delegated" for
a segment onnxruntime runs and "copies" for the host's tensor copies.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from acltuner.report.gather import ReportError


# The two ways to time a model, each compared only with itself.
WHOLE = "whole model (the median latency of whole runs)"
PER_NODE = ("per node (the sum of the node medians in each side's own profile, without the "
            "time between nodes)")


@dataclass(frozen=True)
class ModelTime:
    median_ms: float          # the whole run's median latency
    by_kind: pd.DataFrame     # kind, ms (sum of its entries' medians), share; largest first
    ort_ms: float | None      # onnxruntime's median latency, where asked for
    ort_threads: int | None
    source: str               # where the profile came from, in words
    # The sum of onnxruntime's per-node medians in its own profile, where asked
    # for (None: a saved profile without them)
    ort_node_ms: float | None = None

    @property
    def node_ms(self) -> float:
        """The sum of our per-node medians."""
        return float(self.by_kind["ms"].sum())

    def comparisons(self) -> dict:
        """Whole model against whole model, per node against per node: ours,
        onnxruntime's (None where not measured) and onnxruntime's over ours
        (above 1: ours is faster)."""
        return {name: {"what": what, "ours_ms": ours, "onnxruntime_ms": theirs,
                       "onnxruntime_over_ours": None if theirs is None else theirs / ours}
                for name, what, ours, theirs in (
                    ("whole_model", WHOLE, self.median_ms, self.ort_ms),
                    ("per_node", PER_NODE, self.node_ms, self.ort_node_ms))}


def by_kind(nodes: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame([(n["op"], n["ms"]) for n in nodes], columns=["kind", "ms"])
    frame = frame.groupby("kind", as_index=False)["ms"].sum().sort_values("ms", ascending=False)
    frame["share"] = frame["ms"] / frame["ms"].sum()
    return frame.reset_index(drop=True)


def run_here(plan_path: str, repeat: int, ort: bool) -> ModelTime:
    """Runs the plan `repeat` times after 3 warmup runs, onnxruntime too with
    `ort`, on the same seeded inputs."""
    from acltuner.plan import PlanError
    from acltuner.runtime import load
    from acltuner.runtime.compare_ort import profile_onnxruntime
    from acltuner.runtime.inputs import random_inputs
    from acltuner.runtime.measure import time_runs
    from acltuner.runtime.profile import summarize
    warmup = 3
    try:
        program = load(plan_path)
    except PlanError as e:
        raise ReportError(f"{e}; or give --profile F.json, saved from `acltuner run "
                          f"{plan_path} --profile --json` where the plan runs") from None
    inputs = random_inputs(program)
    latency, _ = time_runs(program, inputs, repeat, warmup)
    nodes = [{"op": r.op, "ms": r.ms} for r in summarize(latency.profiles)]
    if not ort:
        return ModelTime(latency.median_ms, by_kind(nodes), None, None,
                         f"run here, median of {repeat} runs")
    assert program.plan is not None  # load() keeps the plan it read
    theirs = profile_onnxruntime(program.plan.model_path, inputs, repeat, warmup)
    return ModelTime(latency.median_ms, by_kind(nodes), theirs.median_ms, theirs.threads,
                     f"run here, median of {repeat} runs",
                     sum(ms for _, ms in theirs.nodes.values()))


def read_saved(path: str, ort: bool) -> ModelTime:
    """A saved `run --profile --json` output; with `ort`, one of `--compare-ort` too."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise ReportError(f"{path}: not valid JSON: {e}") from None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if (not isinstance(nodes, list) or not isinstance(data.get("median_ms"), (int, float))
            or not all(isinstance(n, dict) and isinstance(n.get("op"), str)
                       and isinstance(n.get("ms"), (int, float)) for n in nodes)):
        raise ReportError(f"{path}: not the output of `acltuner run --profile --json` "
                          f"(needs median_ms and nodes with op and ms)")
    ort_ms = threads = ort_node_ms = None
    if ort:
        compared = data.get("compare_ort")
        if not isinstance(compared, dict):
            raise ReportError(f"{path}: has no onnxruntime time for --ort: save it with "
                              f"`acltuner run PLAN --profile --compare-ort --json`")
        ort_ms, threads = compared.get("ort_median_ms"), compared.get("ort_threads")
        rows = compared.get("nodes")
        if isinstance(rows, list) and all(isinstance(r, dict) and isinstance(
                r.get("ort_ms"), (int, float)) for r in rows):
            ort_node_ms = float(sum(r["ort_ms"] for r in rows))
    return ModelTime(float(data["median_ms"]), by_kind(nodes), ort_ms, threads,
                     f"read from {path}", ort_node_ms)
