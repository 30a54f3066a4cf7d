"""A report folder: the figures, index.html and summary.json of one plan.

The folder is checked first, then everything is read and measured before
anything is written, so bad input leaves no half-made folder behind; each
file is written whole or not at all (report.output).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from acltuner.report import cost_fit, figures, gather, model_time, output, page
from acltuner.report.gather import Tuned
from acltuner.tuner.tuner_config import TunerConfig

# Version 2: model_time compares whole runs and per-node sums apart; the
# in-context check and the nodes it sent back to their default.
SCHEMA_VERSION = 2
COST_MODEL_STRATEGY = "xgb"  # the only strategy whose rounds the model chose


@dataclass(frozen=True)
class Options:
    records_path: str
    compare_path: str | None
    ort: bool
    profile_path: str | None  # a saved `run --profile --json`; None: run the plan here
    repeat: int
    tuner_config: TunerConfig


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _rows(frame: pd.DataFrame) -> list[dict]:
    return [{k: _number(v) for k, v in row.items()} for row in frame.to_dict("records")]


def task_table(tuned: Tuned, order: list[str], fits: list[cost_fit.RoundFit]) -> pd.DataFrame:
    rho = {f.task: f.spearman for f in fits}
    nodes = tuned.nodes.groupby("task", sort=False)
    names = tuned.task_nodes
    rows = []
    for task in order:
        recs = tuned.records.get(task, [])
        usable = [r.median_ms for r in recs if r.usable and r.median_ms is not None]
        rows.append({"task": task, "nodes": names[task],
                     "measurements": len(recs),
                     "reverted_nodes": int(nodes.get_group(task)["reverted"].notna().sum()),
                     "strategies": ", ".join(sorted({r.strategy for r in recs})),
                     "best_ms": min(usable, default=math.nan),
                     "default_ms": nodes.get_group(task)["default_ms"].iloc[0],
                     "spearman": rho.get(task, math.nan)})
    frame = pd.DataFrame(rows).astype({"best_ms": "float64", "default_ms": "float64",
                                       "spearman": "float64"})
    frame.insert(frame.columns.get_loc("default_ms") + 1, "speedup",
                 frame["default_ms"] / frame["best_ms"])
    return frame


TOTALS = ("per node: the sum of the convolutions' times, each measured alone while tuning, "
          "with the config the plan runs (a node sent back to its default: the default's)")


def totals(nodes: pd.DataFrame) -> dict:
    both = nodes.dropna(subset=["tuned_ms", "default_ms"])
    tuned, default = float(both["tuned_ms"].sum()), float(both["default_ms"].sum())
    return {"what": TOTALS, "nodes": len(both), "tuned_ms": tuned, "default_ms": default,
            "speedup": default / tuned if tuned else None,
            "reverted": int(nodes["reverted"].notna().sum())}


def _fits(tuned: Tuned, order: list[str], config: TunerConfig) -> list[cost_fit.RoundFit]:
    guided = {task: recs for task, recs in tuned.records.items()
              if recs and recs[-1].strategy == COST_MODEL_STRATEGY}
    return cost_fit.fit_all(guided, order, tuned.board.cluster_of, config)


def _node_dicts(tuned: Tuned) -> list[dict]:
    speedups = dict(zip(tuned.nodes["node"], tuned.nodes["speedup"]))
    return [{**n.to_dict(), "speedup": _number(speedups[n.node])} for n in tuned.plan.nodes]


def write_report(out: Path, plan_path: str, options: Options) -> dict:
    """Writes the folder `out`; returns what summary.json holds."""
    output.check_folder(out)
    tuned = gather.gather(plan_path, options.records_path)
    other = gather.gather(options.compare_path, None) if options.compare_path else None
    timing = (model_time.read_saved(options.profile_path, options.ort) if options.profile_path
              else model_time.run_here(plan_path, options.repeat, options.ort))
    order = gather.task_order(tuned)
    fits = _fits(tuned, order, options.tuner_config)
    tasks = task_table(tuned, order, fits)
    figures.require_matplotlib()  # missing, it is reported before anything is written

    output.make_folder(out)
    plan = tuned.plan
    drawn, sections = [], []

    def add(figure, title, body="", note=""):
        if figure is not None:
            drawn.append(figure)
        sections.append(page.section(figure, title, body, note))

    if tuned.records:
        curve = figures.tuning_curves(tuned, gather.curves(tuned), order, out)
        add(curve, "", page.table(tasks), f"{options.records_path}: {plan.board_name}, engine "
            f"{plan.engine_version}, caches {tuned.caches}; dashed: the default config's time")
    else:
        add(None, "Tuning curves", note="no task of this plan was measured alone: its int8 "
            "convolutions and products were tuned in the whole model (the layers below)")
    add(figures.layer_speedups(tuned, out), "", page.table(tuned.nodes))
    add(figures.model_time(timing, out), "", page.table(timing.by_kind), _time_note(timing))
    if len(tuned.board.clusters) > 1:
        add(figures.placement_map(tuned, gather.placements(tuned), out), "")
    else:
        add(None, "Placement", note=f"board {plan.board_name} has one cluster: no big.LITTLE "
            "placement to show")
    if fits:
        fit_rows = pd.DataFrame([(f.task, f.train, len(f.frame), f.spearman) for f in fits],
                                columns=["task", "trained on", "last round", "spearman"])
        add(figures.cost_model(fits, tuned.task_nodes, out), "", page.table(fit_rows),
            cost_fit.METHOD)
    else:
        add(None, "Cost model", note="no task's last round was chosen by the cost model "
            f"(strategy {COST_MODEL_STRATEGY}, more trials than the initial random ones)")
    joined = None
    if other is not None:
        joined = gather.join_plans(tuned, other)
        add(figures.compare(tuned, other, joined, out), "", page.table(joined))

    # A figure an earlier report drew in this folder and this one did not
    # (compare, without --compare) would be an image of something else.
    for name in set(figures.NAMES) - {f.name for f in drawn}:
        output.remove(out / f"{name}.png")
    node_totals = totals(tuned.nodes)
    summary = {
        "schema_version": SCHEMA_VERSION, "plan": plan_path,
        "model": {"path": plan.model_path, "sha256": plan.model_sha256},
        "board": {"name": plan.board_name, "fingerprint": plan.board_fingerprint},
        "engine_version": plan.engine_version, "strategy": plan.strategy,
        "records": {"path": options.records_path, "caches": tuned.caches},
        "nodes": _node_dicts(tuned), "totals": node_totals, "tasks": _rows(tasks),
        "in_context": plan.in_context.to_dict() if plan.in_context else None,
        "model_time": {"source": timing.source, **timing.comparisons(),
                       "onnxruntime_threads": timing.ort_threads,
                       "by_kind": _rows(timing.by_kind)},
        "cost_model": {"method": cost_fit.METHOD,
                       "tasks": [{"task": f.task, "trained_on": f.train,
                                  "last_round": _rows(f.frame), "spearman": f.spearman}
                                 for f in fits]},
        "compare": None if other is None else {"plan": options.compare_path,
                                               "nodes": _rows(joined),
                                               "totals": totals(other.nodes)},
        "figures": [f.to_dict() for f in drawn],
    }
    header = page.facts([("plan", plan_path), ("model", plan.model_path),
                         ("board", f"{plan.board_name} ({plan.board_fingerprint})"),
                         ("engine", plan.engine_version), ("strategy", plan.strategy),
                         ("tuning", f"{plan.tuning.measurements} measurements, "
                                    f"{plan.tuning.wall_s:.1f} s"),
                         *([("in-context check", plan.in_context.describe())]
                           if plan.in_context else []),
                         ("convolutions", _total_line(node_totals))])
    output.write(out / "summary.json", json.dumps(summary, indent=2, allow_nan=False) + "\n")
    output.write(out / "index.html",
                 page.page(f"acltuner report: {Path(plan.model_path).name}", header, sections))
    return summary


def _total_line(t: dict) -> str:
    if not t["nodes"]:
        return "no node has both a tuned and a default time"
    reverted = f", {t['reverted']} sent back to their default in the model" \
        if t["reverted"] else ""
    return (f"per node, each measured alone: default {t['default_ms']:.3f} ms, the plan's "
            f"{t['tuned_ms']:.3f} ms, {t['speedup']:.2f}x over {t['nodes']} nodes{reverted}")


def _time_note(timing: model_time.ModelTime) -> str:
    """Each comparison on its own: whole runs with whole runs, nodes with nodes."""
    parts = [timing.source if timing.ort_threads is None
             else f"{timing.source}, onnxruntime with {timing.ort_threads} thread(s)"]
    for c in timing.comparisons().values():
        text = f"{c['what']}: ours {c['ours_ms']:.3f} ms"
        if c["onnxruntime_ms"] is not None:
            text += (f", onnxruntime {c['onnxruntime_ms']:.3f} ms: ours is "
                     f"{c['onnxruntime_over_ours']:.2f}x onnxruntime's speed")
        parts.append(text)
    return ". ".join(parts)
