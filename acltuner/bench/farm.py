"""`acltuner bench farm`: what a second board buys.  A zoo model is tuned
with the same trial budget on a farm of one, then two, one-core boards made
of this machine's cpu0 and cpu1 (ACL_CPUS), each from empty records; the
last line is the second run's measurements per second over the first's.
The launchers run at normal priority (measure.realtime off): these boards
are the workstation's own cores, and two launchers at real-time priority on
a two-core machine would starve the tuner, the scheduler and the workers
between their batches.  Each config is timed a fixed number of runs
(measure.ci_target_pct 0): with the noise control on, two launchers sharing
the machine's memory and its last-level cache make each other's times
spread, so each config took more runs with two boards than with one, and the
two tunes would not do the same work per measurement (measured here, quiet:
farm_speedup 1.31 with it, 1.82 without).
Before it, the per-batch costs that bound a larger farm (docs/boards.md,
Board farms): a scheduler round trip to a member, and a batch of records appended
(flushed and fsynced) on the workstation."""
from __future__ import annotations

import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
import onnx
import yaml

from acltuner.app.callbacks import SessionReporter
from acltuner.app.tune import run_tune
from acltuner.board.files import save_file
from acltuner.board.model import Board, BoardError
from acltuner.board.registry import load_board
from acltuner.farm import worker
from acltuner.farm.cluster import open_farm
from acltuner.farm.members import Member
from acltuner.tuner.tuner_config import DEFAULT_PATH
from acltuner.zoo import build

if TYPE_CHECKING:
    from acltuner.farm.dispatch import FarmStats


def one_core_board() -> Board:
    """This machine's cpu0 as a board of one core: every member is of this class."""
    host = load_board("host")
    cluster = next(c for c in host.clusters if 0 in c.cpus)
    return Board(name="one-core", isa=host.isa, clusters=(dataclasses.replace(
        cluster, name="core", cpus=(0,)),), description="one core of this machine")


class _FarmStats(SessionReporter):
    """Keeps the farm's statistics at the end of the tune."""
    stats: FarmStats | None = None

    def farm_done(self, stats: FarmStats, troubles: list[str]) -> None:
        self.stats = stats
        for line in troubles:
            click.echo(line, err=True)


def _farm_settings(config_path: str | None, folder: Path) -> Path:
    """The tuner config (tuner.yaml by default) with measure.realtime off and
    a fixed number of runs per config (module docstring)."""
    settings = yaml.safe_load(Path(config_path or DEFAULT_PATH).read_text())
    settings.setdefault("measure", {}).update(realtime=False, ci_target_pct=0)
    path = folder / "tuner.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def _rate(model: Path, board_file: Path, members: list[Member], trials: int,
          config_path: Path, folder: Path) -> float:
    records = folder / f"records-{len(members)}.jsonl"
    records.unlink(missing_ok=True)  # every round from empty records
    reporter = _FarmStats()
    plan, _ = run_tune(str(model), str(folder / f"plan-{len(members)}.json"),
                       board_name=str(board_file), trials=trials, early_stopping=None,
                       strategy="xgb", records_path=str(records), input_shapes=(),
                       config_path=str(config_path), seed=0, members=members,
                       reporter=reporter)
    assert reporter.stats is not None  # a tune on members ends with farm_done
    t = plan.tuning
    busy = ", ".join(f"{name} {100 * s / t.wall_s:.0f}%" for name, s in sorted(
        reporter.stats.busy_s.items()))
    click.echo(f"{len(members)} board(s): {t.measurements} measurements in {t.wall_s:.1f} s, "
               f"{t.measurements / t.wall_s:.2f}/s; boards busy measuring: {busy}")
    return t.measurements / t.wall_s


def run(model_name: str, trials: int, config_path: str | None = None, rounds: int = 1) -> None:
    """rounds: one board then two, that many times; the ratio is their median's."""
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        raise BoardError("bench farm needs cpu0 and cpu1 of this machine, one per board")
    board = one_core_board()
    members = [Member(f"cpu{i}", board, None, (i,)) for i in (0, 1)]
    with tempfile.TemporaryDirectory(prefix="acltuner-bench-farm-") as tmp:
        folder = Path(tmp)
        model = folder / f"{model_name}.onnx"
        onnx.save(build(model_name), model)
        board_file = folder / "one-core.yaml"
        save_file(board, board_file)
        core = board.clusters[0]
        click.echo(f"{model_name}, {trials} trials per task, boards of one core "
                   f"({core.core_type}, {core.max_freq_mhz} MHz)")
        config = _farm_settings(config_path, folder)
        ratios = []
        for _ in range(rounds):
            one = _rate(model, board_file, members[:1], trials, config, folder)
            two = _rate(model, board_file, members, trials, config, folder)
            ratios.append(two / one)
        _overheads(board, members[:1], folder / "records-2.jsonl")
    if rounds > 1:
        click.echo("ratios of the rounds: " + ", ".join(f"{r:.3f}" for r in ratios))
    click.echo(f"farm_speedup: {statistics.median(ratios):.3f}")


def _overheads(board: Board, members: list[Member], records_path: Path, calls: int = 100) -> None:
    """Per batch: a scheduler round trip to a member, and appending a batch of records."""
    from acltuner.tuner.records import RecordStore
    with open_farm(board, members, None) as (farm, _):
        start = time.perf_counter()
        for _ in range(calls):
            farm.call(worker.ping)
        trip_ms = 1e3 * (time.perf_counter() - start) / calls
    batch = RecordStore(records_path).records[:5]
    store = RecordStore(records_path.with_name("appends.jsonl"))
    start = time.perf_counter()
    for _ in range(calls):
        store.append(batch)
    append_ms = 1e3 * (time.perf_counter() - start) / calls
    click.echo(f"per batch: scheduler round trip {trip_ms:.2f} ms, {len(batch)} records "
               f"appended {append_ms:.2f} ms ({1e3 * len(batch) / append_ms:.0f} records/s)")

