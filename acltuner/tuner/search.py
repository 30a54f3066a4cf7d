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

A prior (the transfer model's scores, transfer.py) warm-starts "xgb": the
first batch is the prior's transfer.initial best-ranked configs instead of
initial_random random ones, and each round the task's own model learns on top
of the prior (its base margin), whose weight decay / (decay + n) fades as the
task's own n measurements grow.  Pruning (BestOf, pruning.py) keeps the random picks
out of (algorithm, kernel) branches that clearly lose.  Each round scores every
unmeasured config of a space up to score_all_below configs; above, a random
sample of candidates_per_round plus the neighbours of the best measured ones.
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
from acltuner.tuner.pruning import pruned_branches
from acltuner.tuner.tuner_config import TunerConfig

# Prior: centred log-time scores of configs (lower: faster), transfer.py's.
Prior = Callable[[list[ExecConfig]], np.ndarray]


@dataclass
class SearchOutcome:
    best: Result | None   # fastest ok result, resumed ones included; None if none is ok
    measured: list[Result]  # results measured by this call, in order (not the resumed ones)
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
        timed = _timed(self.results.values())
        return min(timed, key=lambda t: t[0])[1] if timed else None

    def best_ms(self) -> float | None:
        return min((ms for ms, _ in _timed(self.results.values())), default=None)

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
           on_round: Callable[[SearchOutcome], None] | None = None,
           prior: Prior | None = None, prune: bool = False) -> SearchOutcome:
    """space: a SearchSpace (shape, size, sample, all, neighbours); encoder:
    needed by "xgb"; on_round(outcome so far) runs after every batch, to show
    progress and save records (outcome.measured grows by that batch); prior and
    prune: see the module's doc ("xgb" only)."""
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
    if strategy != "xgb":
        prior, prune = None, False

    run.measure([c for c in seeds if c not in run.results][:run.left], s.batch)
    # On a resume the initial phase only tops up what the records already hold.
    first = config.transfer.initial if prior is not None else s.initial_random
    initial = min(first + len(seeds) - len(run.results), run.left)
    if initial > 0 and prior is not None:
        candidates = _candidates(run, space, s, rng)
        ranked = [candidates[i] for i in np.argsort(prior(candidates), kind="stable")]
        run.measure(_spread(ranked, initial), s.batch)
    elif initial > 0:
        run.measure(space.sample(rng, initial, set(run.results)), s.batch)

    ranker = None
    if strategy == "xgb":
        assert encoder is not None  # checked on entry
        ranker = _Ranker(CostModel(config.xgboost, seed=int(rng.integers(2**31))), encoder,
                         space.shape, prior, config.transfer.decay)
    best_ms = run.best_ms()
    stale = 0
    while run.left and (s.early_stopping is None or stale < s.early_stopping):
        pruned = pruned_branches(run.results.values(), config.pruning) if prune else set()
        batch = _next_batch(run, space, ranker, config, rng, pruned)
        if not batch:
            break  # the space is exhausted
        run.measure(batch, s.batch)
        new_ms = run.best_ms()
        improved = new_ms is not None and (best_ms is None or new_ms < best_ms)
        best_ms, stale = (new_ms, 0) if improved else (best_ms, stale + 1)
    return run.outcome()


def _timed(results: Iterable[Result]) -> list[tuple[float, Result]]:
    """The ok results, each with its median."""
    return [(r.median_ms, r) for r in results if r.ok and r.median_ms is not None]


def _spread(ranked: list[ExecConfig], n: int) -> list[ExecConfig]:
    """The n first of `ranked` but that each algorithm's best-ranked config
    comes first: a transfer model wrong about which algorithm wins on this
    shape (Winograd's 4x4 tiles on a 7x7 output) still lets the task's own
    model see the others from the start."""
    heads: dict[str, ExecConfig] = {}
    for c in ranked:
        heads.setdefault(c.algorithm, c)
    first = set(heads.values())
    return (list(heads.values()) + [c for c in ranked if c not in first])[:n]


class _Ranker:
    """Scores candidates, lower first: the task's own cost model alone, or,
    with a prior, the own model fitted on top of it as xgboost's base margin:
    margin = w * (prior + offset) + (1 - w) * the task's mean log time, with
    w = decay / (decay + n) fading as the task's own n measurements grow (the
    offset puts the prior, relative to its task's median, on this task's scale)."""

    def __init__(self, model: CostModel, encoder: FeatureEncoder, shape, prior: Prior | None,
                 decay: float):
        self.model, self.encoder, self.shape = model, encoder, shape
        self.prior, self.decay = prior, decay
        self._margin: Prior | None = None

    def fit(self, results: Mapping[ExecConfig, Result]) -> bool:
        """False when there is nothing to rank by: no prior and no ok result."""
        configs = list(results)
        X = self.encoder.encode(self.shape, configs)
        prior = self.prior
        if prior is None:
            return self.model.fit(X, list(results.values()))
        ok = {c: r.median_ms for c, r in results.items() if r.ok and r.median_ms}
        self._margin = None
        if ok:
            times = np.log(list(ok.values()))
            offset = float(np.mean(times - prior(list(ok))))
            w = self.decay / (self.decay + len(ok))
            mean = float(np.mean(times))
            self._margin = lambda cs: w * (prior(cs) + offset) + (1 - w) * mean
            self.model.fit(X, list(results.values()), margin=self._margin(configs))
        return True

    def score(self, candidates: list[ExecConfig]) -> np.ndarray:
        if self.prior is not None and self._margin is None:
            return self.prior(candidates)
        X = self.encoder.encode(self.shape, candidates)
        margin = self._margin(candidates) if self._margin is not None else None
        return self.model.predict(X, margin)


def _candidates(run: _Run, space, s, rng: np.random.Generator) -> list[ExecConfig]:
    """What a round scores: every unmeasured config of a space up to
    score_all_below; above, candidates_per_round random ones plus the
    neighbours of the ten best measured configs."""
    if space.size <= s.score_all_below:
        return [c for c in space.all() if c not in run.results]
    ok = [r for _, r in sorted(_timed(run.results.values()), key=lambda t: t[0])[:10]]
    near = [n for r in ok for n in space.neighbours(r.config) if n not in run.results]
    return list(dict.fromkeys(space.sample(rng, s.candidates_per_round, set(run.results))
                              + near))


def _next_batch(run: _Run, space, ranker: _Ranker | None, config: TunerConfig,
                rng: np.random.Generator, pruned: set) -> list[ExecConfig]:
    """The ranker's top_k unmeasured candidates plus random ones outside the
    pruned branches, within the budget; all random without a ranker (or before
    it has anything to rank by)."""
    s = config.search
    size = min(s.batch, run.left)
    fitted = ranker if ranker is not None and ranker.fit(run.results) else None
    if fitted is not None:
        candidates = _candidates(run, space, s, rng)
    elif space.size <= size:
        candidates = [c for c in space.all() if c not in run.results]
    else:
        candidates = space.sample(rng, size, set(run.results))
    picks: list[ExecConfig] = []
    if fitted is not None and candidates:
        predicted = fitted.score(candidates)
        picks = [candidates[i] for i in np.argsort(predicted, kind="stable")[:min(s.top_k, size)]]
    chosen = set(picks)
    rest = [c for c in candidates
            if c not in chosen and (c.algorithm, c.ukernel) not in pruned]
    n_random = min(size - len(picks), len(rest))
    return picks + [rest[i] for i in rng.choice(len(rest), n_random, replace=False)]
