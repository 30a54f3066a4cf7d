"""The cost model's accuracy on each task's last round, refitted from the records.

The records keep measurements, not the model's predictions, so the model is
fitted again here as the tuner fitted it before its last round: the same
CostModel (the tuner config's XGBoost parameters, one model per stage) on the
same features, trained on every record of the task before the last round, then
asked for the configs of that round.  Rounds are cut as the search cuts them:
the seed (the default) and initial_random random configs first, then batches of
top_k + random_per_round.  The refit differs from the tuner's own model only
in XGBoost's random seed and in the one-hot columns of algorithms and
micro-kernels the task never measured (all zero, never split on).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from acltuner.tuner.cost_model import CostModel
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.records import Record
from acltuner.tuner.tuner_config import TunerConfig

# Micro-kernels are named MRxNR-style-isa (the engine's naming convention).
_UKERNEL = re.compile(r"(?P<mr>\d+)x(?P<nr>\d+)-(?P<style>[a-z0-9]+)-(?P<isa>\w+)")
SEEDS = 1  # the tuner seeds every search with the default config
METHOD = ("refitted from the records (the records keep no predictions): the tuner's "
          "XGBoost cost model trained on each task's records before its last round, "
          "predicting that round's configs; rho: Spearman's rank correlation")


@dataclass(frozen=True)
class RoundFit:
    task: str
    train: int         # records the model was fitted on
    frame: pd.DataFrame  # the last round's usable configs: config, measured_ms, predicted_ms
    spearman: float | None  # rank correlation of predicted and measured (None: < 3 configs)


def ukernel_attributes(name: str) -> dict:
    m = _UKERNEL.fullmatch(name)
    if m is None:
        raise ValueError(f"micro-kernel {name!r} is not named MRxNR-style-isa")
    return {"mr": int(m["mr"]), "nr": int(m["nr"]), "style": m["style"]}


def last_round(n: int, config: TunerConfig) -> int:
    """Where the last model-guided round starts among n records (n: none)."""
    initial = config.search.initial_random + SEEDS
    if n <= initial:
        return n
    batch = config.search.batch
    return initial + (n - initial - 1) // batch * batch


def spearman(a: pd.Series, b: pd.Series) -> float | None:
    """Spearman's rank correlation: Pearson's over the ranks (ties averaged)."""
    if len(a) < 3:
        return None
    value = a.rank().corr(b.rank())
    return None if np.isnan(value) else float(value)


def fit_last_round(task: str, records: list[Record], cluster_of: list[int],
                   config: TunerConfig) -> RoundFit | None:
    """None when the task has no model-guided round or nothing usable to fit on."""
    start = last_round(len(records), config)
    train, test = records[:start], [r for r in records[start:] if r.usable]
    if not test:
        return None
    algorithms = sorted({r.config.algorithm for r in records})
    ukernels = {u: ukernel_attributes(u) for u in sorted({r.config.ukernel for r in records
                                                         if r.config.ukernel})}
    encoder = FeatureEncoder(algorithms, ukernels, cluster_of)
    shape = records[0].shape
    model = CostModel(config.xgboost)
    if not model.fit(encoder.encode(shape, [r.config for r in train]),
                     [r.result() for r in train]):
        return None
    predicted = model.predict(encoder.encode(shape, [r.config for r in test]))
    frame = pd.DataFrame({"config": [str(r.config) for r in test],
                          "measured_ms": [r.median_ms for r in test],
                          "predicted_ms": predicted})
    return RoundFit(task, len(train), frame,
                    spearman(frame["predicted_ms"], frame["measured_ms"]))


def fit_all(records: dict[str, list[Record]], order: list[str], cluster_of: list[int],
            config: TunerConfig) -> list[RoundFit]:
    fits = (fit_last_round(task, records[task], cluster_of, config)
            for task in order if task in records)
    return [f for f in fits if f is not None]
