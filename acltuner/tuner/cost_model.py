"""The per-task cost model: XGBoost regressors on log(time).

As Appendix F, one model per stage the engine times (pre-processing, GEMM,
post-processing), the prediction being the sum of the stage predictions: each
stage depends on different features (the transforms on the algorithm, the GEMM
on the kernel and the split), which one tree ensemble over the total would have
to untangle from ~100 samples.  When the results carry no stage times it falls
back to one model of the total.  Targets are logs because times span orders of
magnitude across configs and a ranking model should weigh a 2x error the same
at 0.1 ms as at 100 ms; a stage can be 0 (no Winograd output transform for
im2col), hence log(time + STAGE_EPS_MS).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import xgboost as xgb

from acltuner.engine.config import ExecConfig
from acltuner.measure.runner import STAGES

STAGE_EPS_MS = 1e-3


class Result(Protocol):
    """What the tuner reads of one measurement (the runner's result type):
    properties, so that the runner's frozen dataclass is one."""

    @property
    def config(self) -> ExecConfig: ...

    @property
    def ok(self) -> bool: ...

    @property
    def median_ms(self) -> float | None: ...

    @property
    def stages(self) -> Mapping[str, float | None]: ...  # STAGES' keys when ok; may be empty


class CostModel:
    """params: xgboost.train parameters plus num_boost_round (the tuner config's
    xgboost section); nthread defaults to 1 because the board being measured may
    be this machine, and a busy core would skew the measurements."""

    def __init__(self, params: Mapping, seed: int = 0):
        self.params = {"nthread": 1, **params, "seed": seed}
        self.num_boost_round = int(self.params.pop("num_boost_round"))
        self._boosters: dict[str, xgb.Booster] = {}
        self.fitted = False
        self._margin = False

    def fit(self, X: np.ndarray, results: Sequence[Result],
            margin: np.ndarray | None = None) -> bool:
        """Fits on the rows whose result is ok; False (and unfitted) if none is.
        results[i] is the measurement of row i (ok, median_ms, stages).
        margin: a prior log(time) per row (a transfer model's): one model of
        the total then learns what the prior gets wrong (xgboost's base
        margin), and predict() needs the candidates' margins."""
        if len(X) != len(results):
            raise ValueError(f"{len(X)} feature rows for {len(results)} results")
        keep = [i for i, r in enumerate(results) if r.ok and r.median_ms is not None]
        self._boosters = {}
        self.fitted = bool(keep)
        if not keep:
            return False
        X = np.asarray(X)[keep]
        ok = [results[i] for i in keep]
        self._margin = margin is not None
        if self._margin:
            dtrain = xgb.DMatrix(X, label=np.log([r.median_ms + STAGE_EPS_MS for r in ok]),
                                 base_margin=np.asarray(margin)[keep],
                                 nthread=self.params["nthread"])
            self._boosters["total"] = xgb.train(self.params, dtrain, self.num_boost_round)
            return True
        if all(all((r.stages or {}).get(s) is not None for s in STAGES) for r in ok):
            targets = {s: np.array([r.stages[s] for r in ok], dtype=np.float64) for s in STAGES}
        else:
            targets = {"total": np.array([r.median_ms for r in ok], dtype=np.float64)}
        for name, y in targets.items():
            # A stage no training config has (e.g. post-processing when no
            # Winograd config was measured) predicts 0, without a model.
            if np.any(y > 0):
                dtrain = xgb.DMatrix(X, label=np.log(y + STAGE_EPS_MS),
                                     nthread=self.params["nthread"])
                self._boosters[name] = xgb.train(self.params, dtrain, self.num_boost_round)
        return True

    def predict(self, X: np.ndarray, margin: np.ndarray | None = None) -> np.ndarray:
        """Predicted total milliseconds per row (margin: as fit's, per row)."""
        if not self.fitted:
            raise RuntimeError("CostModel.predict before a successful fit")
        X = np.asarray(X, dtype=np.float64)
        if self._margin != (margin is not None):
            raise ValueError("predict needs a margin exactly when fit had one")
        if self._margin:
            log_ms = self._boosters["total"].inplace_predict(X, base_margin=np.asarray(margin))
            return np.maximum(np.exp(log_ms) - STAGE_EPS_MS, 0.0)
        total = np.zeros(len(X))
        if len(X):
            for booster in self._boosters.values():
                total += np.maximum(np.exp(booster.inplace_predict(X)) - STAGE_EPS_MS, 0.0)
        return total
