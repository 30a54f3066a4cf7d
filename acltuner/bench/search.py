"""`acltuner bench search`: how many measurements each search strategy needs
to get close to a task's best configuration, replayed on exhaustive tables
(search_tables.py; `--record` measures them, search_record.py).

Every config of each task's reduced space was measured once; a search then
"measures" by looking its configs up, several seeds each, so what is compared
is the search and not this shared machine's noise between runs.  For the
transfer strategies each task is tuned with a transfer model fitted on the
other tasks' tables only (leave one task out).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from acltuner.bench.search_tables import Tables, TaskTable, load_tables
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.search import search
from acltuner.tuner.transfer import Sample, TransferModel
from acltuner.tuner.tuner_config import TunerConfig, load_tuner_config

# name -> (search strategy, with a transfer prior, with pruning)
STRATEGIES = {"random": ("random", False, False), "xgb": ("xgb", False, False),
              "xgb+transfer": ("xgb", True, False),
              "xgb+transfer+pruning": ("xgb", True, True)}
TARGETS_PCT = (2.0, 1.0)


@dataclass
class Replay:
    """One task of one recording, ready to search."""
    tables: Tables
    task: TaskTable

    @property
    def key(self) -> str:
        return f"{self.tables.meta['engine']}:{self.task.name}"

    @property
    def board(self) -> str:
        return f"{self.tables.meta['host']}:{self.tables.meta['isa']}"

    def clusters(self) -> list[dict]:
        return [{"cpus": c["cpus"], "mhz": c["max_freq_mhz"], "capacity": c.get("capacity", 0)}
                for c in reversed(self.tables.meta["board"]["clusters"])]


def load_replays(folder: Path) -> list[Replay]:
    files = sorted(folder.glob("*.json"))
    if not files:
        raise click.ClickException(f"{folder}: no *.json tables (record some with "
                                   f"`acltuner bench search --record {folder}`)")
    replays = []
    for path in files:
        try:
            tables = load_tables(path)
        except ValueError as e:
            raise click.ClickException(str(e)) from None
        replays += [Replay(tables, t) for t in tables.tasks]
    return replays


def transfer_samples(replays: list[Replay], held_out: Replay) -> list[Sample]:
    """Every usable measurement of every task but held_out (leave one task out)."""
    return [Sample(r.board, r.key, r.task.shape, c, res.median_ms)
            for r in replays if r.key != held_out.key
            for c, res in r.task.results.items() if res.ok and res.median_ms is not None]


def fit_transfer(replays: list[Replay], held_out: Replay, config: TunerConfig) -> TransferModel:
    model = TransferModel(config.transfer.xgboost)
    model.fit(transfer_samples(replays, held_out), {r.board: r.clusters() for r in replays})
    return model


def trials_to(measured: list, optimum: float, pct: float) -> int | None:
    """1-based count of measurements until one within pct of optimum; None if never."""
    limit = optimum * (1 + pct / 100)
    return next((i for i, r in enumerate(measured, 1)
                 if r.ok and r.median_ms is not None and r.median_ms <= limit), None)


def replay_one(replay: Replay, name: str, seed: int, config: TunerConfig,
               model: TransferModel | None) -> list:
    """The results a strategy measures on one task, in order."""
    strategy, with_prior, prune = STRATEGIES[name]
    space = replay.tables.space(replay.task)
    meta = replay.tables.meta
    encoder = FeatureEncoder([a for a, _ in meta["algorithms"]], meta["ukernels"],
                             space.cluster_of)
    prior = None
    if with_prior:
        if model is None:
            raise ValueError(f"strategy {name} needs a transfer model")
        clusters, shape = replay.clusters(), replay.task.shape
        prior = lambda configs: model.predict(clusters, shape, configs)  # noqa: E731
    table = replay.task.results
    outcome = search(space, lambda cs: [table[c] for c in cs], config, strategy,
                     np.random.default_rng(seed), encoder=encoder, prior=prior, prune=prune)
    return outcome.measured


def evaluate(replays: list[Replay], strategies: list[str], seeds: int,
             config: TunerConfig, echo=click.echo) -> dict[str, dict]:
    """Per strategy: mean trials to each target (never reached counts as the
    budget), how many runs reached it, and the mean and worst gap at the budget."""
    budget = config.search.trials
    runs: dict[str, list[tuple]] = {s: [] for s in strategies}
    for replay in replays:
        optimum = replay.task.optimum_ms
        model = (fit_transfer(replays, replay, config)
                 if any(STRATEGIES[s][1] for s in strategies) else None)
        cells = []
        for name in strategies:
            for seed in range(seeds):
                measured = replay_one(replay, name, seed, config, model)
                best = min(r.median_ms for r in measured if r.ok)
                runs[name].append(tuple(trials_to(measured, optimum, p) for p in TARGETS_PCT)
                                  + (100 * (best / optimum - 1),))
            to2 = [r[0] or budget for r in runs[name][-seeds:]]
            cells.append(f"{statistics.mean(to2):>11.1f}")
        echo(f"{replay.task.name:28s}{replay.tables.space(replay.task).size:6d}"
             f"{optimum:9.3f}" + "".join(cells))
    summary = {}
    for name, rs in runs.items():
        row = {}
        for i, pct in enumerate(TARGETS_PCT):
            row[f"to_{pct:g}pct"] = statistics.mean(r[i] or budget for r in rs)
            row[f"reached_{pct:g}pct"] = sum(r[i] is not None for r in rs) / len(rs)
        row["gap_pct_mean"] = statistics.mean(r[-1] for r in rs)
        row["gap_pct_worst"] = max(r[-1] for r in rs)
        summary[name] = row
    return summary


def run(folder: Path, seeds: int, strategies: list[str]) -> dict[str, dict]:
    config = load_tuner_config()
    replays = load_replays(folder)
    budget = config.search.trials
    click.echo(f"search replay: {len(replays)} tasks from {folder}, budget {budget} "
               f"measurements, {seeds} seeds; mean measurements to within 2% per task:")
    click.echo(f"{'task':28s}{'space':>6s}{'best ms':>9s}"
               + "".join(f"{s.replace('xgb+', '+')[:10]:>11s}" for s in strategies))
    summary = evaluate(replays, strategies, seeds, config)
    click.echo(f"\n{'strategy':22s}{'to 2%':>8s}{'reached':>9s}{'to 1%':>8s}{'reached':>9s}"
               f"{f'gap% @{budget} mean/worst':>26s}")
    for name, row in summary.items():
        click.echo(f"{name:22s}{row['to_2pct']:8.1f}{row['reached_2pct']:9.0%}"
                   f"{row['to_1pct']:8.1f}{row['reached_1pct']:9.0%}"
                   f"{row['gap_pct_mean']:17.2f}/{row['gap_pct_worst']:.2f}")
    if "xgb+transfer" in summary:
        click.echo(f"transfer_trials_to_2pct: {summary['xgb+transfer']['to_2pct']:.1f}")
    return summary
