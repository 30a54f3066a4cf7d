"""The search for one task's best ExecConfig (paper section 2.2, Appendix F).

"xgb": measure the seed configs and initial_random random ones, fit the cost
model, then each round measure the top_k best-predicted unmeasured candidates
plus random_per_round random ones and re-fit, until `trials` measurements or
`early_stopping` rounds in a row without a new best.  "random": the same budget
and rounds without the model (the baseline the model has to beat).
"exhaustive": the seeds then every config of the space, whatever the budget
(benchmarks).

The budget counts every config sent to measure, failed ones included, and the
results resumed from a records file (`already`): those are never re-measured and
train the model, which is how an interrupted tune carries on where it stopped.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from acltuner.engine.config import ExecConfig
from acltuner.tuner import SEARCH_STRATEGIES
from acltuner.tuner.cost_model import CostModel, Result
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.tuner_config import SearchSettings, TunerConfig


@dataclass
class SearchOutcome:
    best: Result | None   # fastest ok result, resumed ones included; None if none is ok
    measured: list        # results measured by this call, in order (not the resumed ones)
    model_s: float        # the tuner's own time: fitting, predicting, drawing candidates
    rounds: int           # batches sent to measure


class _Run:
    """The state of one search: every result so far and the time accounting."""

    def __init__(self, measure: Callable[[list[ExecConfig]], list[Result]],
                 already: Mapping[ExecConfig, Result], on_round, trials: int):
        self._measure = measure
        self._on_round = on_round
        self.trials = trials
        self.results: dict[ExecConfig, Result] = dict(already)
        self.measured: list[Result] = []
        self.rounds = 0
        self._start = time.perf_counter()
        self._outside_s = 0.0  # measuring and the caller's callback

    @property
    def left(self) -> int:
        return max(self.trials - len(self.results), 0)

    def best(self) -> Result | None:
        ok = [r for r in self.results.values() if r.ok and r.median_ms is not None]
        return min(ok, key=lambda r: r.median_ms, default=None)

    def outcome(self) -> SearchOutcome:
        model_s = time.perf_counter() - self._start - self._outside_s
        return SearchOutcome(self.best(), list(self.measured), model_s, self.rounds)

    def measure(self, configs: Sequence[ExecConfig], batch: int) -> None:
        """Measures configs in batches of `batch`, reporting after each."""
        for i in range(0, len(configs), batch):
            chunk = list(configs[i:i + batch])
            t0 = time.perf_counter()
            results = list(self._measure(chunk))
            self._outside_s += time.perf_counter() - t0
            if len(results) != len(chunk):
                raise RuntimeError(f"measure returned {len(results)} results "
                                   f"for {len(chunk)} configs")
            self.results.update(zip(chunk, results))
            self.measured += results
            self.rounds += 1
            if self._on_round is not None:
                t0 = time.perf_counter()
                self._on_round(self.outcome())
                self._outside_s += time.perf_counter() - t0


def search(space, measure: Callable[[list[ExecConfig]], list[Result]], config: TunerConfig,
           strategy: str, rng: np.random.Generator, *, encoder: FeatureEncoder | None = None,
           seed_configs: Iterable[ExecConfig] = (),
           already: Mapping[ExecConfig, Result] | None = None,
           on_round: Callable[[SearchOutcome], None] | None = None) -> SearchOutcome:
    """space: a SearchSpace (shape, size, sample, all); encoder: needed by "xgb";
    on_round(outcome so far) runs after every batch, to show progress and save
    records (outcome.measured grows by that batch)."""
    if strategy not in SEARCH_STRATEGIES:
        raise ValueError(f"unknown search strategy {strategy!r}; one of "
                         f"{', '.join(SEARCH_STRATEGIES)}")
    if strategy == "xgb" and encoder is None:
        raise ValueError("the xgb strategy needs a FeatureEncoder")
    s = config.search
    run = _Run(measure, already or {}, on_round, s.trials)
    seeds = list(dict.fromkeys(seed_configs))
    if strategy == "exhaustive":
        todo = dict.fromkeys(c for c in [*seeds, *space.all()] if c not in run.results)
        run.measure(list(todo), s.batch)
        return run.outcome()

    run.measure([c for c in seeds if c not in run.results][:run.left], s.batch)
    # On a resume the initial phase only tops up what the records already hold.
    initial = min(s.initial_random + len(seeds) - len(run.results), run.left)
    if initial > 0:
        run.measure(space.sample(rng, initial, set(run.results)), s.batch)

    model = CostModel(config.xgboost, seed=int(rng.integers(2**31))) if strategy == "xgb" else None
    best = run.best()
    stale = 0
    while run.left and (s.early_stopping is None or stale < s.early_stopping):
        batch = _next_batch(run, space, model, encoder, s, rng)
        if not batch:
            break  # the space is exhausted
        run.measure(batch, s.batch)
        new_best = run.best()
        improved = new_best is not None and (best is None or new_best.median_ms < best.median_ms)
        best, stale = (new_best, 0) if improved else (best, stale + 1)
    return run.outcome()


def _candidates(run: _Run, space, n: int, rng: np.random.Generator) -> list[ExecConfig]:
    if space.size <= n:
        return [c for c in space.all() if c not in run.results]
    return space.sample(rng, n, set(run.results))


def _next_batch(run: _Run, space, model: CostModel | None, encoder: FeatureEncoder | None,
                s: SearchSettings, rng: np.random.Generator) -> list[ExecConfig]:
    """The model's top_k unmeasured candidates plus random ones, within the budget;
    all random without a model (or before any config has run successfully)."""
    size = min(s.batch, run.left)
    fitted = False
    if model is not None:
        fitted = model.fit(encoder.encode(space.shape, list(run.results)),
                           list(run.results.values()))
    candidates = _candidates(run, space, s.candidates_per_round if fitted else size, rng)
    picks: list[ExecConfig] = []
    if fitted and candidates:
        predicted = model.predict(encoder.encode(space.shape, candidates))
        picks = [candidates[i] for i in np.argsort(predicted, kind="stable")[:min(s.top_k, size)]]
    chosen = set(picks)
    rest = [c for c in candidates if c not in chosen]
    n_random = min(size - len(picks), len(rest))
    return picks + [rest[i] for i in rng.choice(len(rest), n_random, replace=False)]
