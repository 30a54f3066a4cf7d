"""What `acltuner tune` sets up around tune_model: the board, the launcher that
measures on it, the tuner config, the records file, progress and the summary."""
from __future__ import annotations

import os
from pathlib import Path

import click

from acltuner.board.machine import check_cores
from acltuner.board.model import Board
from acltuner.board.registry import load_board
from acltuner.engine.build import build_for_board, host_isa
from acltuner.engine.launcher import LauncherClient, default_launcher_path
from acltuner.progress import Progress
from acltuner.taskgen.model import parse_input_shapes
from acltuner.taskgen.tasks import generate_tasks
from acltuner.tuner.tune import TaskReport, tune_model
from acltuner.tuner.tuner_config import load_tuner_config

# A measurement of a big layer on a slow board, with its reference run, can take
# tens of seconds; a launcher silent for this long is hung.
LAUNCHER_TIMEOUT_S = 300.0


def default_records_path() -> Path:
    env = os.environ.get("ACLTUNER_RECORDS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "acltuner" / "records.jsonl"


def launcher_command(board: Board) -> list[str]:
    """How to start a launcher that measures on `board` from this machine."""
    if board.isa == host_isa():
        return [*board.launcher_wrapper, default_launcher_path()]
    if board.launcher_wrapper:  # e.g. qemu: the board's own build, run through the wrapper
        return [*board.launcher_wrapper, str(build_for_board(board))]
    raise ValueError(f"board {board.name} is {board.isa} and this machine is {host_isa()}: "
                     f"tune it with --host, or give the board file a launcher_wrapper (e.g. "
                     f"qemu-aarch64) to measure it here")


def open_launcher(board: Board, host: str | None) -> LauncherClient:
    """The launcher that measures `board`: on `host` over ssh (deployed there
    by `acltuner deploy`), else on this machine; checked against the board's cores."""
    if host:
        from acltuner.remote.launcher import RemoteLauncherClient
        return RemoteLauncherClient(board, host, timeout_s=LAUNCHER_TIMEOUT_S)
    client = LauncherClient(launcher_command(board), timeout_s=LAUNCHER_TIMEOUT_S)
    try:
        check_cores(board, client.hello_info["cpus"], "this machine")
    except Exception:
        client.close()
        raise
    return client


def _task_line(r: TaskReport) -> str:
    def ms(v):
        return f"{v:9.3f}" if v is not None else f"{'-':>9s}"
    speed = f"{r.speedup:6.2f}x" if r.speedup else f"{'-':>7s}"
    return (f"{r.task.key:48s} {len(r.task.nodes):5d} {ms(r.default_ms)} {ms(r.tuned_ms)} "
            f"{speed}  {r.best}")


def run_tune(model: str, plan_path: str, *, board_name: str, trials: int | None,
             early_stopping: int | None, strategy: str, records_path: str | None,
             input_shapes: tuple[str, ...], config_path: str | None, seed: int,
             host: str | None = None) -> None:
    overrides = {"search": {k: v for k, v in (("trials", trials),
                                              ("early_stopping", early_stopping)) if v}}
    # Everything the user gave is checked before anything is printed or created.
    config = load_tuner_config(config_path, overrides)
    board = load_board(board_name)
    shapes = parse_input_shapes(input_shapes)
    taskset = generate_tasks(model, shapes)
    records = Path(records_path) if records_path else default_records_path()
    progress = Progress()

    def on_task(report: TaskReport) -> None:
        progress.clear()
        click.echo(_task_line(report))

    # The launcher too: a board the measuring machine cannot run fails before any output.
    with open_launcher(board, host) as client:
        records.parent.mkdir(parents=True, exist_ok=True)
        where = f" on {host}" if host else ""
        caches = config.measure.options(client.largest_cache_bytes).label
        click.echo(f"tuning {model} on board {board.name} ({board.fingerprint}){where}, "
                   f"strategy {strategy}, {config.search.trials} trials per task, caches {caches}, "
                   f"records {records}", err=True)
        click.echo(f"{'task':48s} {'nodes':>5s} {'default':>9s} {'tuned':>9s} {'speedup':>7s}  "
                   f"best config (algorithm/micro-kernel/core weights/workloads)")
        plan, reports = tune_model(taskset, plan_path, board=board, client=client,
                                   records_path=str(records), config=config, strategy=strategy,
                                   input_shapes=shapes, seed=seed, on_progress=progress.update,
                                   on_task=on_task)
        reconnects = getattr(client, "reconnects", 0)
    if reconnects:
        click.echo(f"the connection to {host} dropped {reconnects} time(s): reconnected, and "
                   f"the interrupted measurements were taken again", err=True)
    per_node = [(len(r.task.nodes) * r.default_ms, len(r.task.nodes) * r.tuned_ms)
                for r in reports if r.default_ms and r.tuned_ms]
    if per_node:
        default_total = sum(d for d, _ in per_node)
        tuned_total = sum(t for _, t in per_node)
        click.echo(f"convolutions per inference: default {default_total:.2f} ms, tuned "
                   f"{tuned_total:.2f} ms, speedup {default_total / tuned_total:.2f}x")
    t = plan.tuning
    share = 100.0 * t.tuner_s / t.wall_s if t.wall_s else 0.0
    reused = sum(r.reused for r in reports)
    click.echo(f"wall time {t.wall_s:.1f} s, tuner's own time {t.tuner_s:.1f} s ({share:.1f}% "
               f"of wall), {t.measurements} measurements ({reused} reused from records)")
    click.echo(f"plan written to {plan_path}")
