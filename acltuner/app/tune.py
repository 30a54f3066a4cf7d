"""What `acltuner tune` sets up around tune_model: the board, the launcher
(or farm) that measures on it, the tuner config and the records file; a
SessionReporter shows how it goes."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from acltuner.app.callbacks import SessionReporter
from acltuner.app.doctor import doctor_for_tune
from acltuner.atomic import check_writable
from acltuner.board.model import Board
from acltuner.board.registry import load_board
from acltuner.engine import native
from acltuner.engine.build import host_isa
from acltuner.engine.launcher import LauncherClient
from acltuner.measure.launchers import open_launcher
from acltuner.onnx.model import parse_input_shapes
from acltuner.plan import Plan, save_plan
from acltuner.runtime.target import launcher_target
from acltuner.tuner.int8_tasks import split_int8
from acltuner.taskgen.tasks import generate_tasks
from acltuner.tuner.in_context import ContextCheck, check_in_context
from acltuner.tuner.in_model import whole_model_runs
from acltuner.tuner.int8_search import tune_int8
from acltuner.tuner.product_search import PRODUCT_RUNS, tune_products
from acltuner.tuner.pins import EngineRules, Pin
from acltuner.tuner.precision import check_precision
from acltuner.tuner.records import default_records_path, tuning_lock
from acltuner.tuner.tune import TaskReport, pin_nodes, tune_in_order, tune_model
from acltuner.tuner.tuner_config import load_tuner_config

# Why the whole-model steps (int8 tasks, products, the in-context check) are skipped on
# a farm: they run the whole plan in one launcher, which a farm has no call for.
FARM_WHOLE_MODEL = "a farm does not run the whole model"


@contextlib.contextmanager
def _measuring(board: Board, host: str | None, members, scheduler: str | None, realtime: bool,
               reporter: SessionReporter, security):
    """(what the tuner asks as a launcher, how the tasks are tuned, the farm
    or None): one launcher, or a farm when members or a scheduler are given."""
    if members is None and not scheduler:
        with open_launcher(board, host, realtime) as client:
            yield client, tune_in_order, None
        return
    from acltuner.app.farm_tune import farm_tuning
    from acltuner.farm.cluster import open_farm
    with open_farm(board, members, scheduler, realtime, reporter.farm_progress,
                   security) as (farm, launcher):
        yield launcher, farm_tuning(farm), farm


def _priority(client: LauncherClient) -> str:
    if client.scheduling == "fifo":
        return ", real-time priority"
    if client.scheduling:
        return f", normal priority (real-time refused: {client.scheduling_reason})"
    return ""


def _in_context(plan: Plan, client: LauncherClient, wanted: bool, farm, ort: bool,
                reporter: SessionReporter) -> ContextCheck:
    """The tuned plan run whole against the default one (and onnxruntime with
    `ort`); or why not."""
    if not wanted:
        return ContextCheck("tuned", {}, {}, (), plan, "--no-in-context")
    if farm is not None:  # the whole plan runs in one launcher: on a farm, not yet
        return ContextCheck("tuned", {}, {}, (), plan, FARM_WHOLE_MODEL)
    return check_in_context(plan, client, progress=reporter.progress, ort=ort)


def run_tune(model: str, plan_path: str, *, board_name: str, trials: int | None,
             early_stopping: int | None, strategy: str, records_path: str | None,
             input_shapes: tuple[str, ...], config_path: str | None, seed: int,
             host: str | None = None, reporter: SessionReporter | None = None,
             pins: Sequence[Pin] = (), in_context: bool = True, members=None,
             scheduler: str | None = None, security=None,
             transfer: str = "auto", precision: str = "fp32") -> tuple[Plan, list[TaskReport]]:
    """in_context: check the tuned plan whole against the default one after
    tuning (check_in_context) and keep the faster (on one board only).
    members (farm.members.Member) or scheduler (tcp:// or tls://HOST:PORT):
    tune on a farm, embedded or of an existing Dask cluster, instead of one
    launcher; security: the farm's Dask TLS (farm.cluster.farm_security); precision:
    the micro-kernels it may choose, fp32 or fp16 (tuner/precision.py).
    The convolutions that run in int8 are int8 tasks, and the graph's
    products (MatMul, Gemm) product tasks, searched in the whole model after
    the float ones (int8_search.py, product_search.py; on one board only, a
    farm's keep their defaults)."""
    reporter = reporter or SessionReporter()
    overrides = {"search": {k: v for k, v in (("trials", trials),
                                              ("early_stopping", early_stopping)) if v}}
    # Everything the user gave is checked before anything is reported or created.
    config = load_tuner_config(config_path, overrides)
    board = load_board(board_name)
    check_precision(precision, board)
    shapes = parse_input_shapes(input_shapes)
    taskset, int8 = split_int8(generate_tasks(model, shapes), shapes)
    records = Path(records_path) if records_path else default_records_path()
    try:
        records.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{records}: cannot make its folder: {e.strerror or e}") from None
    check_writable(records)
    check_writable(plan_path)
    # One tune of a records file at a time (they would measure the same configs
    # on the same cores); the launcher too: a board the measuring machine cannot
    # run fails before any output.
    with tuning_lock(records, reporter.records_busy), \
            _measuring(board, host, members, scheduler, config.measure.realtime,
                       reporter, security) as (client, tune_tasks, farm):
        pinned = pin_nodes(taskset, list(pins), board, EngineRules.of(client, precision, board),
                           [(n, t.shape) for t in int8 for n in t.nodes])
        if strategy != "default" and farm is None:  # it measures nothing
            reporter.doctor(doctor_for_tune(board, host))
        where = host if farm is None else f"a farm of {len(farm.hellos)} members"
        reporter.started(model, board, where, strategy, config,
                         config.measure.options(client.largest_cache_bytes).label
                         + _priority(client), records)
        plan, reports = tune_model(taskset, plan_path, board=board, client=client,
                                   records_path=str(records), config=config, strategy=strategy,
                                   input_shapes=shapes, seed=seed, reporter=reporter,
                                   pinned=pinned, tune_tasks=tune_tasks, transfer=transfer,
                                   precision=precision, int8=int8)
        if strategy != "default" and int8 and farm is None:
            plan, int8_reports = tune_int8(plan, int8, native.hello_int8_ukernels(
                client.hello_info), whole_model_runs(plan, client), reporter.progress)
            for report in int8_reports:
                reporter.task_done(report)
            reports += int8_reports
            save_plan(plan, plan_path)
        elif strategy != "default" and int8:
            reporter.untuned_in_model(f"{len(int8)} int8 task(s)", FARM_WHOLE_MODEL)
        if strategy != "default" and farm is None:
            plan, product_reports = tune_products(
                plan, launcher_target(client),
                lambda p, m: whole_model_runs(p, client, *PRODUCT_RUNS, model=m),
                taskset.flops + sum(t.flops for t in int8), reporter.progress)
            for report in product_reports:
                reporter.task_done(report)
            reports += product_reports
            if product_reports:  # else the plan is the one saved already
                save_plan(plan, plan_path)
        elif strategy != "default" and taskset.products:
            reporter.untuned_in_model(f"{taskset.products} MatMul and Gemm node(s)",
                                      FARM_WHOLE_MODEL)
        if strategy != "default":
            # onnxruntime runs here: beside a launcher that runs here natively.
            native_here = host is None and board.isa == host_isa()
            check = _in_context(plan, client, in_context, farm, native_here, reporter)
            reporter.in_context(check)
            if check.plan is not plan:  # measured: it records what it found
                plan = check.plan
                save_plan(plan, plan_path)
        reconnects = getattr(client, "reconnects", 0)
        troubles = farm.summary() if farm is not None else []
    reporter.finished(plan, reports, reconnects)
    if farm is not None:
        reporter.farm_done(farm.stats, troubles)
    return plan, reports
