"""`acltuner bench search`: how close the cost-model search gets to the best
configuration, against random search with the same budget.

Three ResNet-18 tasks on a reduced space (this machine's two CPUs as two
clusters, weights 1-2, three workload counts, the best ISA family's kernels)
are measured exhaustively through the launcher.  The searches then run on
those measurements (a lookup per configuration), several seeds each, so the
gap measures the search and not this shared machine's noise between runs.
"""
from __future__ import annotations

import statistics
from dataclasses import replace

import click
import numpy as np

from acltuner.bench.layers import LAYERS
from acltuner.engine.config import ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.runner import Result, Runner
from acltuner.tuner.search import search
from acltuner.tuner.space import SearchSpace
from acltuner.tuner.tuner_config import load_tuner_config

TASKS = ("resnet18.layer1", "resnet18.layer3.down3x3", "resnet18.layer4")
CLUSTERS = ((0,), (1,))
WORKLOADS = (1, 4, 16)
LEVELS = (1, 2)


def _space(client: LauncherClient, shape) -> SearchSpace:
    hello = client.hello_info
    family = [uk["name"] for uk in hello["ukernels"] if uk["isa"] == hello["isa"]]
    algorithms = [(a["name"], a["uses_ukernel"]) for a in hello["algorithms"]]
    return SearchSpace(shape, CLUSTERS, 2, algorithms, family, client.check,
                       workloads=WORKLOADS, levels=LEVELS)


def _gap_pct(table: dict[ExecConfig, Result], best: Result | None, optimum: float) -> float:
    return 100.0 * (table[best.config].median_ms / optimum - 1.0) if best else float("inf")


def run(seeds: int = 5) -> float:
    config = load_tuner_config()
    budget = config.search.trials
    worst = 0.0
    with LauncherClient(timeout_s=300) as client:
        hello = client.hello_info
        ukernels = {uk["name"]: uk for uk in hello["ukernels"]}
        algorithms = [a["name"] for a in hello["algorithms"]]
        click.echo(f"search quality: budget {budget} measurements, {seeds} seeds, searches "
                   f"replayed on exhaustive measurements")
        click.echo(f"{'task':26s}{'space':>7s}{'best ms':>9s}{'xgb gap% (median/worst)':>26s}"
                   f"{'random gap% (median/worst)':>29s}")
        for name in TASKS:
            shape = replace(dict(LAYERS)[name], act="none")
            space = _space(client, shape)
            runner = Runner(client)
            runner.load(shape)
            table: dict[ExecConfig, Result] = {}
            configs = space.all()
            for i in range(0, len(configs), 50):
                click.echo(f"  measuring {name}: {i}/{len(configs)}", err=True)
                table.update((r.config, r) for r, _ in runner.measure(configs[i:i + 50]))
            ok = [r.median_ms for r in table.values() if r.ok]
            optimum = min(ok)
            encoder = FeatureEncoder(algorithms, ukernels, space.cluster_of)
            gaps = {"xgb": [], "random": []}
            for strategy in gaps:
                for seed in range(seeds):
                    outcome = search(space, lambda cs: [table[c] for c in cs], config, strategy,
                                     np.random.default_rng(seed), encoder=encoder)
                    assert len(outcome.measured) <= budget
                    gaps[strategy].append(_gap_pct(table, outcome.best, optimum))
            cells = "".join(f"{statistics.median(g):>17.2f}/{max(g):<8.2f}"
                            for g in gaps.values())
            click.echo(f"{name:26s}{space.size:7d}{optimum:9.3f}{cells}")
            worst = max(worst, statistics.median(gaps["xgb"]))
    click.echo(f"search_gap_pct: {worst:.2f}")
    return worst
