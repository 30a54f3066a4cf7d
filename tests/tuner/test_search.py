"""The execution tuner without a device: features, cost model, settings and the
search loop on a synthetic space whose time function has a big.LITTLE-like
structure (stages, per-core speeds, a static split by weight) plus noise."""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import statistics
import time
from dataclasses import dataclass, field

import numpy as np
import pytest

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.tuner.cost_model import CostModel
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.search import search
from acltuner.tuner.tuner_config import DEFAULT_PATH, TunerConfig, load_tuner_config
from tests.support.file_errors import load_error

SHAPE = ConvShape(n=1, h=28, w=30, c=64, oc=96, kh=3, kw=3, stride_h=1, stride_w=2,
                  pad_top=1, pad_left=1, pad_bottom=1, pad_right=0)
CLUSTER_OF = (0, 0, 1, 1, 1, 1)  # two big cores, four little ones
SPEED = np.array([2.0, 2.0, 1.0, 1.0, 1.0, 1.0])
ALGORITHMS = ("im2col", "winograd", "indirect", "direct")
UKERNELS = {"8x12-int": {"mr": 8, "nr": 12, "style": "interleaved"},
            "8x6-int": {"mr": 8, "nr": 6, "style": "interleaved"},
            "6x16-hyb": {"mr": 6, "nr": 16, "style": "hybrid"},
            "4x24-hyb": {"mr": 4, "nr": 24, "style": "hybrid"},
            "6x4-small": {"mr": 6, "nr": 4, "style": "smallk"}}
WORKLOADS = (1, 2, 4, 8, 16)
# (algorithm -> GEMM work, pre-processing work, post-processing work)
WORK = {"im2col": (1.0, 0.15, 0.0), "winograd": (0.45, 0.22, 0.18),
        "indirect": (1.05, 0.03, 0.0), "direct": (1.5, 0.0, 0.0)}
# Kernel efficiency per algorithm: each algorithm has a different favourite.
EFFICIENCY = {"im2col": (1.0, 0.9, 0.8, 0.7, 0.5), "winograd": (0.7, 0.75, 1.0, 0.85, 0.4),
              "indirect": (0.6, 0.7, 0.9, 1.0, 0.5)}
FAILS = {("winograd", "6x4-small")}  # cannot run this shape


@dataclass
class FakeResult:
    config: ExecConfig
    ok: bool
    median_ms: float | None
    stages: dict = field(default_factory=dict)


def placements() -> list[tuple[int, ...]]:
    """Uniform weight w on the first k big cores, weight 1 on the first j little ones."""
    out = []
    for k, w, j in itertools.product(range(3), (1, 2, 3), range(5)):
        if (k or j) and (k or w == 1):
            out.append((w,) * k + (0,) * (2 - k) + (1,) * j + (0,) * (4 - j))
    return out


class FakeSpace:
    shape = SHAPE
    cluster_of = CLUSTER_OF
    nclusters = 2

    def __init__(self):
        self._all = [ExecConfig(a, None if a == "direct" else u, p, wl)
                     for a in ALGORITHMS for u in (UKERNELS if a != "direct" else [None])
                     for p in placements() for wl in WORKLOADS]
        self.size = len(self._all)

    def all(self) -> list[ExecConfig]:
        return list(self._all)

    def sample(self, rng, k, exclude):
        free = [c for c in self._all if c not in exclude]
        return [free[i] for i in rng.choice(len(free), min(k, len(free)), replace=False)]


def _noise(config: ExecConfig) -> float:
    """Deterministic per config, so the exhaustive optimum is well defined."""
    seed = int.from_bytes(hashlib.sha256(str(config).encode()).digest()[:8], "little")
    return 1.0 + 0.01 * np.random.default_rng(seed).standard_normal()


def _parallel_ms(work: float, config: ExecConfig) -> float:
    """The engine pool's static split of the workloads by weight: the slowest
    core decides.  Little cores slow each other down (shared L2)."""
    if work == 0:
        return 0.0
    weights = np.array(config.core_weights, dtype=float)
    units = config.workloads
    bounds = np.floor(units * np.concatenate([[0], np.cumsum(weights)]) / weights.sum())
    per_core = np.diff(bounds)
    little_active = int(np.count_nonzero(weights[2:]))
    speed = SPEED.copy()
    speed[2:] *= 1.0 - 0.06 * max(little_active - 1, 0)
    return (work * 10 * (per_core / units / speed).max() + 0.02 * config.threads
            + 0.01 * config.workloads)


def run_config(config: ExecConfig) -> FakeResult:
    if (config.algorithm, config.ukernel) in FAILS:
        return FakeResult(config, False, None)
    gemm, pre, post = WORK[config.algorithm]
    if config.ukernel is not None:
        gemm /= EFFICIENCY[config.algorithm][list(UKERNELS).index(config.ukernel)]
    noise = _noise(config)
    stages = {"pre_ms": _parallel_ms(pre, config) * noise,
              "gemm_ms": _parallel_ms(gemm, config) * noise,
              "post_ms": _parallel_ms(post, config) * noise}
    return FakeResult(config, True, sum(stages.values()) + 0.01, stages)


class Recorder:
    """A measure function that keeps every batch it was sent."""

    def __init__(self, results=run_config):
        self.batches: list[list[ExecConfig]] = []
        self._results = results

    def __call__(self, configs):
        self.batches.append(list(configs))
        return [self._results(c) for c in configs]

    @property
    def sent(self) -> list[ExecConfig]:
        return [c for b in self.batches for c in b]


def best_ms(results) -> float:
    return min((r.median_ms for r in results if r.ok), default=float("inf"))


def encoder() -> FeatureEncoder:
    return FeatureEncoder(ALGORITHMS, UKERNELS, CLUSTER_OF)


def tuner(**search) -> TunerConfig:
    return load_tuner_config(overrides={"search": search})


def run_search(strategy="xgb", seed=0, measure=None, **kwargs):
    measure = measure or Recorder()
    cfg = kwargs.pop("config", None) or tuner()
    outcome = search(FakeSpace(), measure, cfg, strategy, np.random.default_rng(seed),
                     encoder=encoder(), **kwargs)
    return outcome, measure


@pytest.fixture(scope="module")
def optimum_ms() -> float:
    outcome, _ = run_search("exhaustive")
    assert len(outcome.measured) == FakeSpace().size
    return outcome.best.median_ms


# --- features ---------------------------------------------------------------

def test_features_shape_and_values():
    enc = encoder()
    configs = [ExecConfig("winograd", "6x16-hyb", (3, 3, 1, 1, 0, 0), 8),
               ExecConfig("direct", None, (0, 0, 1, 1, 1, 1), 1)]
    X = enc.encode(SHAPE, configs)
    assert X.shape == (2, len(enc.feature_names))
    row = dict(zip(enc.feature_names, X[0]))
    assert (row["in_w"], row["in_h"], row["in_c"]) == (30, 28, 64)
    assert (row["wt_n"], row["wt_w"], row["wt_h"]) == (96, 3, 3)
    assert (row["pad_right"], row["stride_w"], row["dil_h"], row["group"]) == (0, 2, 1, 1)
    assert row["alg=winograd"] == 1 and row["alg=im2col"] == 0
    assert row["uk=6x16-hyb"] == 1 and (row["uk_mr"], row["uk_nr"]) == (6, 16)
    assert row["uk_style=hybrid"] == 1 and row["uk_style=interleaved"] == 0
    assert row["log2_workloads"] == 3 and row["threads"] == 4
    assert (row["c0_threads"], row["c0_share"], row["c0_max_core_share"]) == (2, 0.75, 0.375)
    assert (row["c1_threads"], row["c1_share"], row["c1_max_core_share"]) == (2, 0.25, 0.125)
    direct = dict(zip(enc.feature_names, X[1]))
    assert direct["uk_mr"] == 0 and not any(v for k, v in direct.items() if k.startswith("uk"))
    assert (direct["c0_threads"], direct["c0_share"], direct["c1_share"]) == (0, 0, 1)
    # One workload over four equal cores: the pool gives it all to the last one.
    assert (direct["c1_max_core_share"], direct["c1_max_core_unit_share"]) == (0.25, 1)
    assert (row["c0_unit_share"], row["c0_max_core_unit_share"]) == (0.75, 0.375)
    assert (row["transposed"], row["out_pad_h"], row["out_pad_w"]) == (0, 0, 0)
    up = dataclasses.replace(SHAPE, transposed=True, out_pad_h=1)
    row = dict(zip(enc.feature_names, enc.encode(up, configs[:1])[0]))
    assert (row["transposed"], row["out_pad_h"], row["out_pad_w"]) == (1, 1, 0)


def test_features_cpu_outside_clusters():
    enc = FeatureEncoder(ALGORITHMS, UKERNELS, CLUSTER_OF + (-1,))
    X = enc.encode(SHAPE, [ExecConfig("direct", None, (1, 0, 0, 0, 0, 1, 0), 2)])
    row = dict(zip(enc.feature_names, X[0]))
    assert (row["threads"], row["c0_share"], row["c1_share"]) == (2, 0.5, 0.5)
    with pytest.raises(ValueError, match="cluster index"):
        FeatureEncoder(ALGORITHMS, UKERNELS, (-1, -1))


def test_features_reject_unknown_names_and_fast():
    enc = encoder()
    with pytest.raises(ValueError, match="algorithm 'fft'"):
        enc.encode(SHAPE, [ExecConfig("fft", None, (1,) * 6, 1)])
    with pytest.raises(ValueError, match="6 CPUs"):
        enc.encode(SHAPE, [ExecConfig("direct", None, (1, 1), 1)])
    configs = FakeSpace().all() * 4  # ~11k
    t0 = time.perf_counter()
    X = enc.encode(SHAPE, configs)
    assert time.perf_counter() - t0 < 0.5
    assert X.shape[0] == len(configs) and np.isfinite(X).all()


# --- cost model -------------------------------------------------------------

def _fit_ranking(results) -> float:
    """Spearman correlation of predicted vs true times on the whole space."""
    enc, space = encoder(), FakeSpace()
    model = CostModel(tuner().xgboost)
    assert model.fit(enc.encode(SHAPE, [r.config for r in results]), results)
    everything = [c for c in space.all() if (c.algorithm, c.ukernel) not in FAILS]
    predicted = model.predict(enc.encode(SHAPE, everything))
    true = np.array([run_config(c).median_ms for c in everything])
    return np.corrcoef(np.argsort(np.argsort(predicted)), np.argsort(np.argsort(true)))[0, 1]


def test_cost_model_per_stage_and_total_fallback():
    rng = np.random.default_rng(1)
    results = [run_config(c) for c in FakeSpace().sample(rng, 150, set())]
    assert _fit_ranking(results) > 0.8
    no_stages = [FakeResult(r.config, r.ok, r.median_ms) for r in results]
    assert _fit_ranking(no_stages) > 0.7


def test_cost_model_failed_only_is_unfitted():
    model = CostModel(tuner().xgboost)
    config = ExecConfig("winograd", "6x4-small", (1,) * 6, 1)
    assert not model.fit(encoder().encode(SHAPE, [config]), [run_config(config)])
    with pytest.raises(RuntimeError):
        model.predict(np.zeros((1, 3)))


# --- settings ---------------------------------------------------------------

def test_default_settings_are_table_6():
    cfg = load_tuner_config()
    assert cfg.xgboost["max_depth"] == 9 and cfg.xgboost["subsample"] == 0.53
    assert (cfg.search.initial_random, cfg.search.top_k, cfg.search.random_per_round,
            cfg.search.trials) == (50, 3, 2, 100)
    assert tuner(trials=7, early_stopping=2).search.trials == 7


@pytest.mark.parametrize("text, message", [
    ("schema_version: 2", "schema_version: must be 4"),
    ("schema_version: 3", "must be 4, got 3; version 3 had no transfer"),
    ("schema_version: [3]", "schema_version: must be 4"),
    ("[1, 2]", "must be a mapping"),
    ("schema_version: 4\nxgboost: {}\nsearch: {}\nmeasure: {}", "xgboost.objective: missing"),
    ("key: [unclosed", "not valid YAML"),
])
def test_settings_file_errors(tmp_path, text, message):
    assert message in load_error(load_tuner_config, tmp_path / "tuner.yaml", text, ValueError)


@pytest.mark.parametrize("override, message", [
    ({"search": {"trials": 0}}, r"\(overridden\): search.trials: must be an integer >= 1"),
    ({"search": {"early_stopping": 1.5}}, "search.early_stopping: must be an integer"),
    ({"search": {"tirals": 3}}, "search.tirals: unknown field"),
    ({"xgboost": {"subsample": 1.5}}, r"xgboost.subsample: must be a number in \(0, 1\]"),
    ({"xgboost": {"max_depth": True}}, "xgboost.max_depth: must be an integer"),
    ({"search": {"top_k": 0, "random_per_round": 0}}, "top_k \\+ random_per_round"),
    ({"measure": {"cache": "tepid"}}, "measure.cache: must be warm or cold, got 'tepid'"),
    ({"measure": {"evict_max_mb": 0}}, r"measure.evict_max_mb: must be a number in \(0, 16384\]"),
    ({"measure": {"evict_factor": -1}}, "measure.evict_factor: must be a number > 0"),
    ({"measure": {"max_repeats": 0}}, "measure.max_repeats: must be an integer >= 1"),
    ({"measure": {"min_repeats": 9, "max_repeats": 4}}, "measure.max_repeats: must be >= min"),
    ({"measure": {"evict": 1}}, "measure.evict: unknown field"),
])
def test_settings_override_errors(override, message):
    with pytest.raises(ValueError, match=message) as err:
        load_tuner_config(overrides=override)
    assert str(DEFAULT_PATH) in str(err.value)


def test_measure_settings_give_the_launcher_options():
    cold = load_tuner_config(overrides={"measure": {"cache": "cold", "evict_factor": 2,
                                                    "evict_max_mb": 8}}).measure
    assert cold.options(1 << 20).evict_bytes == 2 << 20  # a board's 1 MB L2
    assert cold.options(480 << 20).evict_bytes == 8 << 20  # a 480 MB L3: capped
    assert cold.options(0).evict_bytes == 8 << 20  # unknown: the most allowed
    warm = load_tuner_config(overrides={"measure": {"cache": "warm"}}).measure
    assert warm.options(1 << 20).evict_bytes == 0
    options = warm.options(0)
    assert (options.warmup, options.min_repeat_ms, options.min_repeats,
            options.max_repeats) == (warm.warmup, warm.min_repeat_ms, warm.min_repeats,
                                     warm.max_repeats)
    assert (options.ci_target_pct, options.max_repeat_ms, options.cooldown_ms) == (
        warm.ci_target_pct, warm.max_repeat_ms, warm.cooldown_ms) == (2, 300, 0)


def test_settings_missing_file(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        load_tuner_config(tmp_path / "nope.yaml")


# --- search -----------------------------------------------------------------

@pytest.mark.parametrize("strategy", ["xgb", "random"])
def test_budget_exact_and_nothing_twice(strategy):
    outcome, measure = run_search(strategy, config=tuner(trials=63))
    assert len(measure.sent) == len(set(measure.sent)) == len(outcome.measured) == 63
    assert [r.config for r in outcome.measured] == measure.sent
    assert outcome.rounds == len(measure.batches)
    assert outcome.best.median_ms == best_ms(outcome.measured)


def test_seed_configs_first_and_already_counted():
    seeds = [ExecConfig("im2col", "8x12-int", (1, 1, 0, 0, 0, 0), 2),
             ExecConfig("direct", None, (1, 1, 1, 1, 1, 1), 4)]
    already = {c: run_config(c) for c in FakeSpace().sample(np.random.default_rng(5), 30, set())}
    already[seeds[1]] = run_config(seeds[1])
    outcome, measure = run_search(seed_configs=seeds, already=already)
    assert measure.sent[0] == seeds[0]  # seeds[1] is already measured
    assert len(measure.sent) == 100 - len(already)
    assert not set(measure.sent) & set(already)
    # The seed alone, the initial phase topping up to initial_random + 2 seeds
    # (50 + 2 - 31 - 1 = 20 random), then model rounds of 3 + 2 and a last one of 3.
    assert list(map(len, measure.batches)) == [1] + [5] * 4 + [5] * 9 + [3]
    assert outcome.best.median_ms == best_ms([*already.values(), *outcome.measured])


def test_resume_with_full_budget_measures_nothing():
    already = {c: run_config(c) for c in FakeSpace().sample(np.random.default_rng(2), 100, set())}
    outcome, measure = run_search(already=already)
    assert measure.sent == [] and outcome.measured == [] and outcome.rounds == 0
    assert outcome.best.median_ms == best_ms(already.values())


def test_failures_are_counted_never_recommended_twice():
    outcome, measure = run_search(seed_configs=[ExecConfig("winograd", "6x4-small",
                                                           (1,) * 6, 1)])
    failed = [r for r in outcome.measured if not r.ok]
    assert failed and len(measure.sent) == 100 == len(set(measure.sent))
    assert outcome.best.ok


def test_all_failures_fall_back_to_random():
    def broken(config):
        return FakeResult(config, False, None)
    outcome, measure = run_search(measure=Recorder(broken), config=tuner(trials=60))
    assert outcome.best is None and len(set(measure.sent)) == 60


def test_early_stopping_stops():
    cfg = tuner(trials=500, initial_random=10, early_stopping=2)
    outcome, measure = run_search(config=cfg)
    assert len(measure.sent) < 500
    # Two initial batches of five, then model rounds: the last two improve nothing.
    bests = [best_ms(run_config(c) for c in measure.sent[:5 * (i + 1)])
             for i in range(len(measure.batches))]
    improving = [i for i in range(2, len(bests)) if bests[i] < bests[i - 1]]
    assert len(bests) - 1 - max(improving, default=1) == 2


def test_on_round_sees_every_batch_and_tuner_time():
    seen = []
    outcome, measure = run_search(on_round=lambda o: seen.append(len(o.measured)))
    assert seen == list(itertools.accumulate(map(len, measure.batches)))
    assert 0 < outcome.model_s < 30


def test_tuner_time_excludes_measuring():
    def slow(config):
        time.sleep(0.01)
        return run_config(config)
    outcome, _ = run_search("random", measure=Recorder(slow), config=tuner(trials=60))
    assert outcome.model_s < 0.3  # of the 0.6 s spent measuring


def test_exhaustive_seeds_first_skips_already():
    seed = ExecConfig("indirect", "4x24-hyb", (3, 3, 1, 1, 1, 1), 16)
    already = {c: run_config(c) for c in FakeSpace().sample(np.random.default_rng(3), 10, set())}
    outcome, measure = run_search("exhaustive", seed_configs=[seed], already=already)
    assert measure.sent[0] == seed and len(set(measure.sent)) == len(measure.sent)
    assert set(measure.sent) == set(FakeSpace().all()) - set(already)


def test_exhausted_space_ends_early():
    class Tiny(FakeSpace):
        def __init__(self):
            super().__init__()
            self._all = self._all[:40]
            self.size = 40
    measure = Recorder()
    outcome = search(Tiny(), measure, tuner(initial_random=10), "xgb", np.random.default_rng(0),
                     encoder=encoder())
    assert sorted(map(str, measure.sent)) == sorted(map(str, Tiny().all()))
    assert len(outcome.measured) == 40


def test_strategy_errors():
    with pytest.raises(ValueError, match="unknown search strategy"):
        run_search("annealing")
    with pytest.raises(ValueError, match="FeatureEncoder"):
        search(FakeSpace(), Recorder(), tuner(), "xgb", np.random.default_rng(0))


def test_xgb_near_optimum_and_beats_random(optimum_ms):
    seeds = range(8)
    xgb_ratio = [run_search("xgb", s)[0].best.median_ms / optimum_ms for s in seeds]
    random_ratio = [run_search("random", s)[0].best.median_ms / optimum_ms for s in seeds]
    assert statistics.median(xgb_ratio) <= 1.02
    assert statistics.mean(xgb_ratio) < statistics.mean(random_ratio)


def test_cost_model_on_a_base_margin_keeps_what_the_prior_knows():
    """Five measurements cannot rank the space alone; on a margin that already
    ranks it (the true log times, a perfect transfer model's), the model keeps
    that ranking instead of flattening it."""
    enc, space = encoder(), FakeSpace()
    everything = [c for c in space.all() if (c.algorithm, c.ukernel) not in FAILS]
    true = np.array([run_config(c).median_ms for c in everything])
    few = space.sample(np.random.default_rng(3), 5, set())
    results = [run_config(c) for c in few]
    model = CostModel(tuner().xgboost)
    assert model.fit(enc.encode(SHAPE, few), results,
                     margin=np.log([r.median_ms for r in results]))
    with pytest.raises(ValueError, match="margin"):
        model.predict(enc.encode(SHAPE, everything))
    predicted = model.predict(enc.encode(SHAPE, everything), margin=np.log(true))
    rho = np.corrcoef(np.argsort(np.argsort(predicted)), np.argsort(np.argsort(true)))[0, 1]
    assert rho > 0.95
    alone = CostModel(tuner().xgboost)
    alone.fit(enc.encode(SHAPE, few), results)
    plain = alone.predict(enc.encode(SHAPE, everything))
    assert np.corrcoef(np.argsort(np.argsort(plain)), np.argsort(np.argsort(true)))[0, 1] < rho


def test_without_prior_the_first_batch_is_random_with_one_the_prior_best():
    outcome, _ = run_search("xgb", seed=4)
    first = [r.config for r in outcome.measured[:50]]
    assert first == FakeSpace().sample(np.random.default_rng(4), 50, set())

    def prior(configs):  # the true times: a perfect transfer model
        return np.log([run_config(c).median_ms if run_config(c).ok else 1e9 for c in configs])

    outcome, measure = run_search("xgb", seed=4, prior=prior)
    initial = tuner().transfer.initial
    first = measure.sent[:initial]
    ranked = sorted(FakeSpace().all(), key=lambda c: prior([c])[0])
    heads = {}
    for c in ranked:
        heads.setdefault(c.algorithm, c)
    assert first[:len(heads)] == list(heads.values())  # each algorithm's best first
    assert first[len(heads):] == [c for c in ranked if c not in heads.values()][
        :initial - len(heads)]
    assert measure.batches[0] == first[:5]  # in batches of top_k + random_per_round
