"""What a records file says, per board, engine version, caches' state (warm or
cold measurements) and task (`acltuner records stats`): how much was
measured, what failed, the best config found and how it compares with the default config.

"best" follows RecordStore.best: the fastest median among records that ran with
a correct output, but for times taken again (records.trusted).  "spread_pct" is
the median over the task's records of their medians' 95% confidence
half-width, in % (records measured without noise control have none);
"again" counts the times taken again because they were throttled or spread
beyond the target.  "default" is the time of the task's default config (the
ArmNN rule's): a tune measures it first, so it is the config of the task's
first record, and its time that of the config's latest record if that ran
with a correct output.  The totals' times add up, each task once however
many nodes of a model share it, the tasks that have both a best and a
default time; their speedup is the ratio of those sums.  "pruned" counts
the (algorithm, micro-kernel) branches the search's pruning (pruning.py,
with the tuner config's settings) stops feeding random picks on the task's
records; the JSON names them.
"""
from __future__ import annotations

import json
import math

import pandas as pd

from acltuner.tuner.pruning import pruned_branches
from acltuner.tuner.records import Record, trusted
from acltuner.tuner.tuner_config import PruningSettings

GROUP = ["board", "engine", "measure"]
KEYS = GROUP + ["task"]
TASK_COLUMNS = ["measurements", "failed", "incorrect", "best_ms", "best_config", "default_ms",
                "speedup", "spread_pct", "again", "pruned"]
TOTAL_COLUMNS = ["tasks", "tuned", "measurements", "failed", "incorrect", "best_ms",
                 "default_ms", "speedup"]


def _groups(records: list[Record]) -> dict[tuple, list[Record]]:
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        groups.setdefault((r.board, r.engine, r.measure, r.task), []).append(r)
    return groups


def _pruned(records: list[Record], settings: PruningSettings) -> pd.Series:
    """Per task: the sorted "algorithm/kernel" names of its pruned branches."""
    rows = {(b, e, m.label, t): sorted(f"{a}/{uk or '-'}" for a, uk in pruned_branches(
                [r.result() for r in trusted(rs, m)], settings))
            for (b, e, m, t), rs in _groups(records).items()}
    return pd.Series(rows, dtype=object).rename_axis(KEYS)


def _frame(records: list[Record]) -> pd.DataFrame:
    kept = {id(r) for (_, _, measure, _), rs in _groups(records).items()
            for r in trusted(rs, measure)}
    frame = pd.DataFrame(
        [(r.board, r.engine, r.measure.label, r.task, not r.ok, r.ok and r.correct is False,
          r.usable and id(r) in kept, id(r) not in kept, r.median_ms, r.ci_pct, str(r.config))
         for r in records],
        columns=KEYS + ["failed", "incorrect", "usable", "again", "ms", "ci_pct", "config"])
    # Typed even when empty, where a mask of unknown type would select columns.
    return frame.astype({"failed": bool, "incorrect": bool, "usable": bool, "again": bool,
                         "ms": "float64", "ci_pct": "float64"})


def _default_ms(records: list[Record]) -> pd.Series:
    """Per task: its default config's time (the module's doc), NaN if none."""
    rows = {}
    for (b, e, m, t), rs in _groups(records).items():
        latest = [r for r in rs if r.config == rs[0].config][-1]
        rows[(b, e, m.label, t)] = latest.median_ms if latest.usable else math.nan
    return pd.Series(rows, dtype="float64").rename_axis(KEYS)

def summarize(records: list[Record],
              pruning: PruningSettings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per task, per board and engine) tables, sorted by their keys."""
    df = _frame(records)
    tasks = df.groupby(KEYS).agg(measurements=("failed", "size"), failed=("failed", "sum"),
                                 incorrect=("incorrect", "sum"), spread_pct=("ci_pct", "median"),
                                 again=("again", "sum"))
    usable = df[df["usable"]]
    # idxmin keeps the first of equal times, as RecordStore.best does.
    best = usable.loc[usable.groupby(KEYS)["ms"].idxmin()].set_index(KEYS)
    tasks["best_ms"] = best["ms"]
    tasks["best_config"] = best["config"]
    tasks["default_ms"] = _default_ms(records) if records else []
    tasks["speedup"] = tasks["default_ms"] / tasks["best_ms"]
    tasks["pruned_branches"] = _pruned(records, pruning) if records else []
    tasks["pruned"] = tasks["pruned_branches"].map(len)
    tasks = tasks[TASK_COLUMNS + ["pruned_branches"]].reset_index()

    # The total times and their ratio are over the tasks that have both times.
    both = tasks[tasks["speedup"].notna()].groupby(GROUP)[["best_ms", "default_ms"]].sum()
    totals = tasks.groupby(GROUP).agg(tasks=("task", "size"), tuned=("best_ms", "count"),
                                      measurements=("measurements", "sum"),
                                      failed=("failed", "sum"), incorrect=("incorrect", "sum"))
    totals = totals.join(both)
    totals["speedup"] = totals["default_ms"] / totals["best_ms"]
    return tasks, totals.reset_index()


def _cell(value: object, column: str) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if column == "speedup":
        return f"{value:.2f}x"
    if column == "spread_pct":
        return f"{value:.1f}"
    if column.endswith("_ms"):
        return f"{value:.3f}"
    return str(value)


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    """Fixed-width columns: text left-aligned, numbers right-aligned."""
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    numeric = [all(cell in ("", "-") or cell[0].isdigit() for cell in (row[i] for row in rows))
               for i in range(len(header))]
    return ["  ".join(cell.rjust(w) if num else cell.ljust(w)
                      for cell, w, num in zip(row, widths, numeric)).rstrip()
            for row in [header] + rows]


def render_text(tasks: pd.DataFrame, totals: pd.DataFrame) -> str:
    if totals.empty:
        return "no records"
    header = ["task"] + TASK_COLUMNS
    sections = []
    for total in totals.itertuples(index=False):
        mine = tasks[(tasks["board"] == total.board) & (tasks["engine"] == total.engine)
                     & (tasks["measure"] == total.measure)]
        rows = [[_cell(getattr(t, c), c) for c in header] for t in mine.itertuples(index=False)]
        rows.append([f"total ({total.tasks} tasks, {total.tuned} tuned)"]
                    + [_cell(getattr(total, c), c) if c in TOTAL_COLUMNS else ""
                       for c in TASK_COLUMNS])
        sections.append("\n".join([f"board {total.board}  engine {total.engine}  "
                                   f"caches {total.measure}"]
                                  + _table(rows, header)))
    return "\n\n".join(sections)


def _json_rows(df: pd.DataFrame) -> list[dict]:
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in df.to_dict("records")]


def render_json(tasks: pd.DataFrame, totals: pd.DataFrame) -> str:
    return json.dumps({"tasks": _json_rows(tasks), "totals": _json_rows(totals)}, indent=2)
