"""The transfer cost model: one XGBoost model over the records of every task
and every board, which ranks a new task's configs before it has any
measurement of its own (AutoTVM's transfer learning, TLP/HELP in the seeds).

Unlike features.py, whose columns are one task's engine and board, these
features mean the same on every task and board: the shape as log sizes (and the
GEMM it becomes: M, N, K); the algorithm by name; the micro-kernel by its tile
and packing style (read from its name, "MRxNR-style-isa", so records of another
engine build still count); the placement per cluster, clusters counted from the
fastest, as thread count, share of the weight and the largest single-core share
of the whole workloads; how the tiles fit the shape (_fit_rows); and each
cluster's core count, clock and capacity from its board.

The target is log(time) minus the median log time of the task's records: a
task's scale (its FLOPs, the board's speed) is what the model cannot know and
does not need, since the search only ranks one task's configs.

Saved as JSON (schema_version 1) holding XGBoost's own JSON model, written
atomically beside the records file; refresh() adds trees for records that came
since, and refits from scratch when the algorithms known or the trees grow.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xgboost as xgb

from acltuner.atomic import write_atomic
from acltuner.validate import read_versioned_json
from acltuner.board.model import Board, speed_order
from acltuner.engine.config import ConvShape, ExecConfig

SCHEMA_VERSION = 1
MAX_CLUSTERS = 3
_STYLES = ("interleaved", "hybrid", "smallk")
_UKERNEL = re.compile(r"^(\d+)x(\d+)-([a-z]+)")
_WINOGRAD = re.compile(r"^winograd_(\d+)x(\d+)_")


@dataclass(frozen=True)
class Sample:
    """One usable measurement: on which board (its clusters), which task, how fast."""
    board: str        # board fingerprint
    task: str         # task key (with the board, engine and protocol: one group)
    shape: ConvShape
    config: ExecConfig
    ms: float


def board_clusters(board: Board) -> list[dict]:
    """What the features read of a board: per cluster, fastest first, its cpus,
    clock and capacity."""
    return [{"cpus": list(c.cpus), "mhz": c.max_freq_mhz, "capacity": c.capacity or 0}
            for c in reversed(speed_order(board.clusters))]


def _log2(x: float) -> float:
    return math.log2(max(x, 1))


def _task_row(shape: ConvShape) -> list[float]:
    oh, ow = shape.out_hw
    cg, og = shape.c // shape.group, shape.oc // shape.group
    k = cg * shape.kh * shape.kw
    return [_log2(shape.h), _log2(shape.w), _log2(shape.c), _log2(shape.oc), shape.kh, shape.kw,
            shape.stride_h, shape.stride_w, shape.dil_h, _log2(shape.group),
            float(cg == 1 and shape.group > 1), _log2(cg), _log2(og), float(shape.transposed),
            _log2(oh * ow), _log2(k), _log2(og), _log2(shape.flops)]


_TASK_NAMES = ["log_h", "log_w", "log_c", "log_oc", "kh", "kw", "stride_h", "stride_w", "dil_h",
               "log_group", "depthwise", "log_c_per_group", "log_oc_per_group", "transposed",
               "log_M", "log_K", "log_N", "log_flops"]


def _ukernel_row(name: str | None) -> list[float]:
    m = _UKERNEL.match(name or "")
    if not m:
        return [0.0, 0.0] + [0.0] * len(_STYLES)
    mr, nr, style = int(m[1]), int(m[2]), m[3]
    return [mr, nr] + [float(style == s) for s in _STYLES]


# Floats per vector of each ISA family's fp32 kernels, the unit in which a
# kernel computes a last panel narrower than NR (the templates'
# TILE_BY_WIDTH); fp16 kernels compute whole panels.
_VECTOR_FLOATS = {"avx512": 16, "avx2": 8, "neon": 4}


def _columns_computed(n: int, nr: int, ukernel: str | None) -> int:
    """The columns a kernel NR columns wide computes for an N of n: whole
    panels, then the last one's vectors (N = 240 on 12x32-interleaved-avx512:
    240; 72 on 4x48-hybrid-avx512: 80)."""
    vec = _VECTOR_FLOATS.get((ukernel or "").rsplit("-", 1)[-1], nr)
    return n // nr * nr + math.ceil(n % nr / vec) * vec


def _fit_rows(shape: ConvShape, configs: Sequence[ExecConfig]) -> np.ndarray:
    """How well each config's tiles fit the shape, read from the names: the
    GEMM's M (output pixels, or Winograd tiles of the output tile in the
    algorithm's name) and the padding the micro-kernel's MR x NR tile and the
    Winograd tile add (1: none).  A 4x4 Winograd tile on a 7x7 output computes
    8x8, an 8-row kernel on a 1-pixel FC 8 rows: what decides such tasks
    and what no shape column says.  A last panel narrower than NR costs only
    the vectors it needs (_columns_computed)."""
    oh, ow = shape.out_hw
    n = shape.oc // shape.group
    rows = []
    for c in configs:
        m = _WINOGRAD.match(c.algorithm)
        th, tw = (int(m[1]), int(m[2])) if m else (1, 1)
        tiles = math.ceil(oh / th) * math.ceil(ow / tw)
        uk = _UKERNEL.match(c.ukernel or "")
        mr, nr = (int(uk[1]), int(uk[2])) if uk else (1, 1)
        blocks = math.ceil(tiles / mr)
        rows.append([_log2(tiles), tiles * th * tw / (oh * ow), blocks * mr / tiles,
                     _columns_computed(n, nr, c.ukernel) / n, _log2(tiles / c.workloads),
                     _log2(blocks / c.workloads)])
    return np.array(rows).reshape(len(configs), len(_FIT_NAMES))


_FIT_NAMES = ["log_gemm_m", "tile_waste", "mr_waste", "nr_vector_waste", "log_m_per_workload",
              "log_mr_blocks_per_workload"]


def _placement_rows(configs: Sequence[ExecConfig], clusters: list[dict]) -> np.ndarray:
    n = len(configs)
    weights = np.array([c.core_weights for c in configs], dtype=np.float64)
    workloads = np.fromiter((c.workloads for c in configs), np.float64, n)
    total = weights.sum(axis=1, keepdims=True)
    bounds = np.floor(workloads[:, None] * np.cumsum(weights, axis=1) / total)
    unit_share = np.diff(bounds, axis=1, prepend=0.0) / workloads[:, None]
    share = weights / total
    cols = []
    for i in range(MAX_CLUSTERS):
        if i < len(clusters):
            cpus = [c for c in clusters[i]["cpus"] if c < weights.shape[1]]
            info = [len(clusters[i]["cpus"]), clusters[i]["mhz"] / 1000,
                    clusters[i]["capacity"] / 1024]
            cols += [(weights[:, cpus] > 0).sum(axis=1), share[:, cpus].sum(axis=1),
                     unit_share[:, cpus].max(axis=1, initial=0.0),
                     unit_share[:, cpus].sum(axis=1)]
            cols += [np.full(n, v) for v in info]
        else:
            cols += [np.zeros(n)] * 7
    return np.column_stack([np.log2(workloads), (weights > 0).sum(axis=1)] + cols)


class TransferFeatures:
    """Rows for (board clusters, shape, configs); algorithms: the one-hot's names."""

    def __init__(self, algorithms: Sequence[str]):
        self.algorithms = tuple(algorithms)
        self._index = {a: i for i, a in enumerate(self.algorithms)}
        self.names = (_TASK_NAMES + [f"alg={a}" for a in self.algorithms]
                      + ["uk_mr", "uk_nr"] + [f"uk_style={s}" for s in _STYLES]
                      + _FIT_NAMES + ["log2_workloads", "threads"]
                      + [f"c{i}_{what}" for i in range(MAX_CLUSTERS)
                         for what in ("threads", "share", "max_core_unit_share", "unit_share",
                                      "cores", "ghz", "capacity")])

    def encode(self, clusters: list[dict], shape: ConvShape,
               configs: Sequence[ExecConfig]) -> np.ndarray:
        n = len(configs)
        alg = np.zeros((n, len(self.algorithms)))
        for row, c in enumerate(configs):
            i = self._index.get(c.algorithm)
            if i is not None:  # an algorithm no record had: no column, the tree still splits
                alg[row, i] = 1.0
        uk = np.array([_ukernel_row(c.ukernel) for c in configs]).reshape(n, 2 + len(_STYLES))
        task = np.broadcast_to(np.array(_task_row(shape)), (n, len(_TASK_NAMES)))
        return np.hstack([task, alg, uk, _fit_rows(shape, configs),
                          _placement_rows(configs, clusters)])


def _centred_targets(samples: Sequence[Sample]) -> np.ndarray:
    y = np.log(np.array([s.ms for s in samples]))
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        groups.setdefault(s.task, []).append(i)
    for rows in groups.values():
        y[rows] -= np.median(y[rows])
    return y


class TransferModel:
    """params: the tuner config's transfer section (xgboost parameters with
    num_boost_round and refresh_rounds)."""

    def __init__(self, params: Mapping, algorithms: Iterable[str] = ()):
        self.params = dict(params)
        self.features = TransferFeatures(sorted(set(algorithms)))
        self.booster: xgb.Booster | None = None
        self.tasks: list[str] = []   # the task groups it was trained on
        self.samples = 0

    def _train_params(self) -> dict:
        return {k: v for k, v in self.params.items()
                if k not in ("num_boost_round", "refresh_rounds", "max_trees")}

    def _matrix(self, samples: Sequence[Sample], boards: Mapping[str, list[dict]]) -> xgb.DMatrix:
        by_group: dict[tuple, list[int]] = {}
        for i, s in enumerate(samples):
            by_group.setdefault((s.board, s.task), []).append(i)
        X = np.zeros((len(samples), len(self.features.names)))
        for (board, _), rows in by_group.items():
            first = samples[rows[0]]
            X[rows] = self.features.encode(boards.get(board, []), first.shape,
                                           [samples[i].config for i in rows])
        return xgb.DMatrix(X, label=_centred_targets(samples), nthread=self.params["nthread"])

    def fit(self, samples: Sequence[Sample], boards: Mapping[str, list[dict]]) -> None:
        """samples: usable measurements; boards: fingerprint -> board_clusters()
        (a board not in it gets zero cluster columns but its placement ones)."""
        self.features = TransferFeatures(sorted({s.config.algorithm for s in samples}))
        self.booster = xgb.train(self._train_params(), self._matrix(samples, boards),
                                 int(self.params["num_boost_round"]))
        self.tasks = sorted({s.task for s in samples})
        self.samples = len(samples)

    def refresh(self, samples: Sequence[Sample], boards: Mapping[str, list[dict]]) -> bool:
        """Brings the model up to `samples` (a superset of what it saw): more
        trees fitted on everything, or a refit when a new algorithm appeared or
        the trees would pass max_trees.  False when nothing was new."""
        if self.booster is not None and len(samples) == self.samples:
            return False
        known = set(self.features.algorithms)
        if (self.booster is None or not {s.config.algorithm for s in samples} <= known
                or self.booster.num_boosted_rounds() + int(self.params["refresh_rounds"])
                > int(self.params["max_trees"])):
            self.fit(samples, boards)
            return True
        self.booster = xgb.train(self._train_params(), self._matrix(samples, boards),
                                 int(self.params["refresh_rounds"]), xgb_model=self.booster)
        self.tasks = sorted({s.task for s in samples})
        self.samples = len(samples)
        return True

    def predict(self, clusters: list[dict], shape: ConvShape,
                configs: Sequence[ExecConfig]) -> np.ndarray:
        """log(time) of each config relative to its task's median (lower: faster)."""
        if self.booster is None:
            raise RuntimeError("TransferModel.predict before fit")
        if not configs:
            return np.zeros(0)
        return self.booster.inplace_predict(self.features.encode(clusters, shape, configs))

    def save(self, path: str | Path) -> None:
        if self.booster is None:
            raise RuntimeError("TransferModel.save before fit")
        data = {"schema_version": SCHEMA_VERSION, "algorithms": list(self.features.algorithms),
                "feature_names": list(self.features.names), "tasks": self.tasks,
                "samples": self.samples,
                "booster": json.loads(bytes(self.booster.save_raw("json")))}
        write_atomic(path, json.dumps(data, separators=(",", ":")))

    @classmethod
    def load(cls, path: str | Path, params: Mapping) -> "TransferModel":
        """Raises ValueError, one line naming the file, for a file that is not one."""
        path = Path(path)
        data = read_versioned_json(path, SCHEMA_VERSION)
        model = cls(params, data.get("algorithms", ()))
        if data.get("feature_names") != list(model.features.names):
            raise ValueError(f"{path}: feature_names: made by another version of the "
                             f"features; delete the file to refit")
        try:
            booster = xgb.Booster()
            booster.load_model(bytearray(json.dumps(data["booster"]).encode()))
        except (KeyError, xgb.core.XGBoostError) as e:
            raise ValueError(f"{path}: booster: not an XGBoost JSON model "
                             f"({' '.join(str(e).split())[:120]})") from None
        model.booster = booster
        model.tasks = list(data.get("tasks", []))
        model.samples = int(data.get("samples", 0))
        return model
