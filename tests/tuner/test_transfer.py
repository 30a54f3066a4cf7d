"""The transfer cost model, BestOf pruning, tune's warm start and the replay
benchmark, on the shipped exhaustive tables (acltuner/bench/data/search_tables): no
launcher, no timing."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from acltuner.bench.search import (evaluate, fit_transfer, load_replays, replay_one,
                                   transfer_samples, trials_to)
from acltuner.board.registry import load_board
from acltuner.cli import main
from acltuner.engine.config import ExecConfig
from acltuner.engine.launcher import Measurement
from acltuner.engine.measure_options import MeasureOptions
from acltuner.measure.runner import Result
from acltuner.paths import search_tables_dir
from acltuner.taskgen.tasks import Task
from acltuner.tuner.features import FeatureEncoder
from acltuner.tuner.pruning import pruned_branches
from acltuner.tuner.records import Record, RecordStore
from acltuner.tuner.search import search
from acltuner.tuner.transfer import TransferModel
from acltuner.tuner.tuner_config import PruningSettings, load_tuner_config
from acltuner.tuner.warm_start import WarmStart, transfer_path

CONFIG = load_tuner_config()


@pytest.fixture(scope="module")
def replays():
    return load_replays(search_tables_dir())


def _spearman(a, b) -> float:
    return float(np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1])


def test_shipped_tables_cover_the_kinds_and_whole_spaces(replays):
    shapes = [r.task.shape for r in replays]
    assert len(replays) >= 8
    assert any(s.kh == 3 and s.group == 1 and s.stride_h == 1 for s in shapes)
    assert any(s.kh == 1 and s.h > 1 for s in shapes)
    assert any(s.group == s.c > 1 for s in shapes)
    assert any(s.stride_h == 2 and s.group == 1 for s in shapes)
    assert any(s.c == 3 for s in shapes)
    assert any(s.h == s.w == 1 and s.kh == 1 for s in shapes)
    for r in replays:
        assert set(r.tables.space(r.task).all()) == set(r.task.results)
        assert r.task.optimum_ms > 0


def test_leave_one_out_never_trains_on_the_task(replays):
    held = replays[3]
    samples = transfer_samples(replays, held)
    assert samples and all(s.task != held.key for s in samples)
    assert {s.task for s in samples} == {r.key for r in replays} - {held.key}
    model = fit_transfer(replays, held, CONFIG)
    assert held.key not in model.tasks and len(model.tasks) == len(replays) - 1


def test_transfer_ranks_unseen_tasks(replays):
    """Fitted on the other tasks only, it orders a task's configs much as their times."""
    rhos = []
    for held in replays:
        model = fit_transfer(replays, held, CONFIG)
        ok = [c for c, r in held.task.results.items() if r.ok]
        predicted = model.predict(held.clusters(), held.task.shape, ok)
        rhos.append(_spearman(predicted, [held.task.results[c].median_ms for c in ok]))
    assert np.mean(rhos) > 0.5, rhos


def test_transfer_model_round_trip_and_bad_files(replays, tmp_path):
    held = replays[0]
    model = fit_transfer(replays, held, CONFIG)
    path = tmp_path / "m.transfer.json"
    model.save(path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and "learner" in data["booster"]
    loaded = TransferModel.load(path, CONFIG.transfer.xgboost)
    configs = list(held.task.results)
    assert np.array_equal(loaded.predict(held.clusters(), held.task.shape, configs),
                          model.predict(held.clusters(), held.task.shape, configs))
    assert loaded.tasks == model.tasks and loaded.samples == model.samples
    for text, message in [("{", "not valid JSON"), ('{"schema_version": 9}', "must be 1"),
                          (json.dumps({**data, "booster": {"learner": 1}}), "booster: not")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=message) as err:
            TransferModel.load(path, CONFIG.transfer.xgboost)
        assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_refresh_adds_trees_for_new_records_only(replays):
    held = replays[1]
    boards = {r.board: r.clusters() for r in replays}
    without = transfer_samples(replays, held)
    model = TransferModel(CONFIG.transfer.xgboost)
    model.fit(without, boards)
    rounds = model.booster.num_boosted_rounds()
    configs = list(held.task.results)
    before = model.predict(held.clusters(), held.task.shape, configs)
    assert not model.refresh(without, boards)
    everything = transfer_samples(replays, replays[0]) + transfer_samples(
        [replays[0]], held)  # every task, held's included
    assert model.refresh(everything, boards)
    assert model.booster.num_boosted_rounds() == rounds + CONFIG.transfer.xgboost["refresh_rounds"]
    assert held.key in model.tasks
    assert not np.array_equal(before, model.predict(held.clusters(), held.task.shape, configs))


def _result(algorithm: str, ms: float | None, workloads: int = 1) -> Result:
    return Result(ExecConfig(algorithm, None, (1, 1), workloads), ms is not None, ms)


def test_pruned_branches_rule():
    settings = PruningSettings(after=4, margin_pct=30)
    results = ([_result("fast", 1.0)] + [_result("slow", 2.0, w) for w in range(1, 5)]
               + [_result("few", 5.0, w) for w in range(1, 4)]
               + [_result("close", 1.25, w) for w in range(1, 6)]
               + [_result("broken", None, w) for w in range(1, 5)])
    assert pruned_branches(results, settings) == {("slow", None), ("broken", None)}
    assert pruned_branches(results, PruningSettings(after=None, margin_pct=30)) == set()
    assert pruned_branches([_result("broken", None, w) for w in range(1, 9)], settings) == set()


def _batches_in_pruned_branches(replay, prune: bool) -> tuple[int, set]:
    """Random-only rounds (top_k 0): configs sent from a branch pruned before
    their batch, and the branches pruned at the end."""
    config = load_tuner_config(overrides={"search": {"top_k": 0, "random_per_round": 5,
                                                     "initial_random": 20}})
    batches = []
    table = replay.task.results

    def measure(configs):
        batches.append(list(configs))
        return [table[c] for c in configs]

    meta = replay.tables.meta
    space = replay.tables.space(replay.task)
    search(space, measure, config, "xgb", np.random.default_rng(0), prune=prune,
           encoder=FeatureEncoder([a for a, _ in meta["algorithms"]], meta["ukernels"],
                                  space.cluster_of))
    sent, inside = [], 0
    for batch in batches:
        pruned = pruned_branches([table[c] for c in sent], config.pruning)
        if len(sent) >= 20:  # after the initial random phase
            inside += sum((c.algorithm, c.ukernel) in pruned for c in batch)
        sent += batch
    return inside, pruned_branches([table[c] for c in sent], config.pruning)


def test_pruning_stops_random_picks_of_losing_branches(replays):
    replay = next(r for r in replays if r.task.name.startswith("depthwise.56"))
    inside, pruned = _batches_in_pruned_branches(replay, prune=True)
    assert pruned and inside == 0
    inside, _ = _batches_in_pruned_branches(replay, prune=False)
    assert inside > 0  # without pruning, random picks do land there


def test_replay_transfer_needs_fewer_measurements(replays):
    summary = evaluate(replays, ["random", "xgb+transfer"], 1, CONFIG, echo=lambda *_: None)
    assert summary["xgb+transfer"]["to_2pct"] < summary["random"]["to_2pct"]
    assert summary["xgb+transfer"]["reached_2pct"] == 1.0
    # The transfer model's first batch comes first: the seed makes no difference to it.
    held = replays[0]
    model = fit_transfer(replays, held, CONFIG)
    first = [replay_one(held, "xgb+transfer", s, CONFIG, model)[:CONFIG.transfer.initial]
             for s in (0, 1)]
    assert [r.config for r in first[0]] == [r.config for r in first[1]]


def test_trials_to_counts_until_within_target():
    measured = [_result("a", 3.0), _result("a", None), _result("a", 1.015), _result("a", 1.0)]
    assert trials_to(measured, 1.0, 2) == 3 and trials_to(measured, 1.0, 1) == 4
    assert trials_to(measured[:2], 1.0, 2) is None


def test_bench_search_cli(tmp_path):
    result = CliRunner().invoke(main, ["bench", "search", "--seeds", "1",
                                       "--strategies", "xgb+transfer"])
    assert result.exit_code == 0, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith("transfer_trials_to_2pct: ") and float(last.split()[-1]) > 0
    empty = CliRunner().invoke(main, ["bench", "search", "--replay", str(tmp_path)])
    assert empty.exit_code != 0 and "no *.json tables" in empty.output
    bad = CliRunner().invoke(main, ["bench", "search", "--strategies", "annealing"])
    assert bad.exit_code == 2 and "unknown annealing" in bad.output


# --- tune's warm start --------------------------------------------------------

MEASURE = MeasureOptions()


def _store(tmp_path, replays, names) -> RecordStore:
    """A records file holding the tables of the named tasks, as a tune writes them."""
    board = load_board("split-host")
    store = RecordStore(tmp_path / "records.jsonl")
    for r in replays:
        if r.task.name in names:
            store.append(Record.from_measurement(
                board.fingerprint, "engine-1", r.task.name, r.task.shape, c,
                Measurement(ok=True, median_ms=res.median_ms, min_ms=res.median_ms,
                            times_ms=[res.median_ms], stages=res.stages, correct=True),
                "xgb", measure=MEASURE)
                for c, res in list(r.task.results.items())[:60] if res.ok)
    return store


def _task(replay) -> Task:
    return Task(replay.task.name, replay.task.shape, ["node"], replay.task.shape.flops, [])


def test_warm_start_off_auto_and_min_tasks(replays, tmp_path):
    board = load_board("split-host")
    held = replays[0]
    store = _store(tmp_path, replays, [r.task.name for r in replays[1:4]])
    path = transfer_path(store.path)
    assert path.name == "records.transfer.json"
    assert WarmStart("off", CONFIG.transfer, board, store).prior(_task(held)) is None
    assert not path.exists()
    too_many = replace(CONFIG.transfer, min_tasks=4)
    assert WarmStart("auto", too_many, board, store).prior(_task(held)) is None
    assert not path.exists()
    prior = WarmStart("auto", CONFIG.transfer, board, store).prior(_task(held))
    assert path.exists()
    configs = list(held.task.results)
    saved = TransferModel.load(path, CONFIG.transfer.xgboost)
    assert len(saved.tasks) == 3 and saved.samples == len(store.records)
    # Another tune (a new process) reloads it, nothing new to add: same scores.
    again = WarmStart("auto", CONFIG.transfer, board, store).prior(_task(held))
    assert np.array_equal(prior(configs), again(configs))
    # The task being tuned is not one of the three: it does not count toward min_tasks.
    assert WarmStart("auto", replace(CONFIG.transfer, min_tasks=3), board, store).prior(
        _task(replays[1])) is None


def test_above_score_all_below_the_model_still_finds_the_best(replays):
    """A space larger than score_all_below: each round scores 20 random
    candidates plus the neighbours of the best measured ones, and still gets
    within 2% of every task's optimum within the budget."""
    config = load_tuner_config(overrides={"search": {"score_all_below": 50,
                                                     "candidates_per_round": 20}})
    summary = evaluate(replays, ["xgb+transfer"], 1, config, echo=lambda *_: None)
    assert summary["xgb+transfer"]["reached_2pct"] == 1.0


def test_a_damaged_transfer_model_is_refitted_from_the_records(replays, tmp_path, caplog):
    board = load_board("split-host")
    store = _store(tmp_path, replays, [r.task.name for r in replays[1:4]])
    path = transfer_path(store.path)
    path.write_text('{"schema_version": 1, "algorithms": [')  # cut off mid-write
    prior = WarmStart("auto", CONFIG.transfer, board, store).prior(_task(replays[0]))
    assert prior is not None and "not valid JSON" in caplog.text
    assert TransferModel.load(path, CONFIG.transfer.xgboost).samples == len(store.records)


def test_a_last_panel_counts_the_vectors_its_kernel_computes():
    """The micro-kernels compute a last panel narrower than NR in whole vectors
    of their ISA (TILE_BY_WIDTH), so a 32-column AVX-512 kernel wastes nothing
    on N = 240, and a 48-column one 8 columns on N = 72."""
    from acltuner.engine.config import ConvShape
    from acltuner.tuner.transfer import _FIT_NAMES, _fit_rows
    waste = _FIT_NAMES.index("nr_vector_waste")

    def nr_waste(oc: int, ukernel: str) -> float:
        shape = ConvShape(n=1, h=8, w=8, c=16, oc=oc, kh=1, kw=1)
        return float(_fit_rows(shape, [ExecConfig("gemm1x1", ukernel, (1, 1), 2)])[0, waste])

    assert nr_waste(240, "12x32-interleaved-avx512") == 1.0
    assert nr_waste(72, "4x48-hybrid-avx512") == pytest.approx(80 / 72)
    assert nr_waste(20, "6x16-hybrid-avx2") == pytest.approx(24 / 20)
    assert nr_waste(20, "8x12-interleaved-neon") == 1.0
    assert nr_waste(20, "8x24-interleaved-neonfp16") == pytest.approx(24 / 20)
