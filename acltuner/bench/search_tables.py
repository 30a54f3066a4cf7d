"""Exhaustive measurement tables for the replay benchmark: every config of a
task's reduced search space and its time, recorded once on a machine and
replayed by `acltuner bench search` with no launcher.

One JSON file per recording (schema_version 1):
  {"schema_version": 1, "engine": ..., "isa": ..., "measure": label,
   "board": {"clusters": [{"core_type", "cpus", "max_freq_mhz"}...]},
   "ncores": N, "clusters": [[cpu...]...], "algorithms": [[name, uses_ukernel]...],
   "ukernels": {name: {"mr", "nr", "style"}}, "workloads": [...], "levels": [...],
   "tasks": [{"name", "shape": {...}, "rows": [[algorithm, ukernel|null,
              [weights], workloads, median_ms|null, pre_ms, gemm_ms, post_ms]...]}]}
A row whose median_ms is null failed (or gave a wrong output).  Times are
rounded to 4 significant digits to keep the files small.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from acltuner.atomic import write_atomic
from acltuner.validate import read_versioned_json
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.measure.runner import STAGES, Result
from acltuner.tuner.space import SearchSpace

SCHEMA_VERSION = 1


@dataclass
class TaskTable:
    name: str
    shape: ConvShape
    results: dict[ExecConfig, Result]

    @property
    def optimum_ms(self) -> float:
        return min(r.median_ms for r in self.results.values()
                   if r.ok and r.median_ms is not None)


@dataclass
class Tables:
    """One recording: the machine it was taken on and its tasks."""
    meta: dict   # engine, isa, measure, board, ncores, clusters, algorithms, ukernels, ...
    tasks: list[TaskTable]

    def space(self, task: TaskTable) -> SearchSpace:
        """The reduced space the task was recorded over; every config of it is in the table."""
        m = self.meta
        pairs = {(c.algorithm, c.ukernel) for c in task.results}
        return SearchSpace(task.shape, m["clusters"], m["ncores"],
                           [tuple(a) for a in m["algorithms"]], list(m["ukernels"]),
                           lambda _s, a, uk: None if (a, uk) in pairs else "not recorded",
                           workloads=m["workloads"], levels=m["levels"])


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")


def _row(r: Result) -> list:
    c = r.config
    stages = [_round((r.stages or {}).get(s)) if r.ok else None for s in STAGES]
    return [c.algorithm, c.ukernel, list(c.core_weights), c.workloads,
            _round(r.median_ms) if r.ok else None, *stages]


def _result(row: list, where: str) -> Result:
    try:
        algorithm, ukernel, weights, workloads, ms, *stages = row
        config = ExecConfig(algorithm, ukernel, tuple(weights), int(workloads))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: not a table row: {e}") from None
    if len(stages) != len(STAGES):
        raise ValueError(f"{where}: expected {len(STAGES)} stage times, got {len(stages)}")
    ok = ms is not None
    return Result(config, ok, float(ms) if ok else None,
                  dict(zip(STAGES, stages)) if ok and None not in stages else {})


def save_tables(path: str | Path, tables: Tables) -> None:
    data = {"schema_version": SCHEMA_VERSION, **tables.meta,
            "tasks": [{"name": t.name, "shape": t.shape.to_dict(),
                       "rows": [_row(r) for r in t.results.values()]} for t in tables.tasks]}
    # One row per line: small diffs, still one JSON document.
    text = json.dumps(data, separators=(",", ":"))
    write_atomic(path, text.replace("],[\"", "],\n[\"") + "\n")


def load_tables(path: str | Path) -> Tables:
    """Raises ValueError, one line naming the file and what is wrong."""
    path = Path(path)
    data = read_versioned_json(path, SCHEMA_VERSION)
    try:
        tasks = [TaskTable(t["name"], ConvShape.from_dict(t["shape"]),
                           {r.config: r for r in (_result(row, f"{path}: tasks[{i}].rows[{j}]")
                                                  for j, row in enumerate(t["rows"]))})
                 for i, t in enumerate(data.pop("tasks"))]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{path}: tasks: missing or malformed field {e}") from None
    del data["schema_version"]
    return Tables(data, tasks)
