"""`acltuner tune`, which prints the tune's progress, a row per task and a summary."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import click

from acltuner.app.callbacks import SessionReporter
from acltuner.cli.farm import tls_options
from acltuner.cli.group import QUIET, VERBOSE, verbosity
from acltuner.cli.options import host_option
from acltuner.cli.progress import Overall, Progress, farm_bars
from acltuner.cli.records import DEFAULT_RECORDS
from acltuner.tuner import TUNE_STRATEGIES
from acltuner.tuner.pins import kinds_help
from acltuner.engine.config import PRECISIONS

if TYPE_CHECKING:
    from pathlib import Path

    from acltuner.board.model import Board
    from acltuner.plan import Plan
    from acltuner.tuner.in_context import ContextCheck
    from acltuner.tuner.tune import TaskReport
    from acltuner.tuner.tuner_config import TunerConfig


@click.command("tune")
@click.argument("model", metavar="MODEL.onnx")
@click.option("-o", "--output", "plan_path", required=True, metavar="PLAN.json",
              help="Where to write the plan (atomically).")
@click.option("--board", "board_name", default=None, metavar="NAME|FILE",
              help="Board to tune for: a name from 'acltuner board list', a board YAML file, "
                   "or 'host' (detected) [default: the farm file's board, else host].")
@click.option("--trials", type=click.IntRange(1), default=None,
              help="Measurements per task (default: configs/tuner.yaml, 100).")
@click.option("--early-stopping", type=click.IntRange(1), default=None, metavar="N",
              help="Stop a task after N rounds without a better time.")
@click.option("--strategy", type=click.Choice(TUNE_STRATEGIES), default="xgb",
              show_default=True, help="xgb: the paper's cost-model search; random: the same "
                                      "budget at random; default: write ArmNN's rule-based "
                                      "plan without measuring.")
@click.option("--records", "records_path", default=None, metavar="FILE",
              help="Tuning records (JSON lines), shared by every model tuned on this machine "
                   f"[default: {DEFAULT_RECORDS}].")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
              help="Static shape of a model input with dynamic dims (repeatable).")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="Tuner config YAML (default: configs/tuner.yaml).")
@click.option("--seed", default=0, show_default=True, help="Seed of the random choices.")
@host_option(help="Measure on this ssh host, where 'acltuner deploy' put the board's "
                  "launcher; a dropped connection is reconnected and the tune goes on.")
@click.option("--hosts", default=None, metavar="H1,H2,..",
              help="A farm: measure on all these ssh hosts at once, boards of --board's "
                   "class (an embedded Dask cluster on this machine, one worker per board).")
@click.option("--farm", "farm_path", default=None, metavar="FARM.yaml",
              help="A farm from a file: its members, each a host or cores of this machine, "
                   "with its board file (docs/boards.md: Board farms).")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="A farm on a running Dask cluster, whose workers were started with "
                   "'acltuner farm worker' (tls://HOST:PORT with the --tls options).")
@tls_options
@click.option("--pin", "pin_texts", multiple=True, metavar="NODE=ALG[/KERNEL]",
              help="Run the Conv node NODE (its ONNX name) with algorithm ALG (and micro-kernel "
                   "KERNEL, else the ArmNN rule's for ALG) instead of searching it; or "
                   "'kind=KIND:ALG[/KERNEL]' for every node of a kind (see below); a quantized "
                   "model's int8 convolution takes conv_int8[/KERNEL] (KERNEL: `acltuner engine "
                   "list`'s int8 kernels, else conv_int8's own pick). Repeatable.")
@click.option("--pins", "pins_file", default=None, metavar="FILE",
              help="Pins in a YAML file (see below), applied with the --pin ones.")
@click.option("--in-context/--no-in-context", default=True, show_default=True,
              help="After tuning, run the whole model with the tuned and the default plans in "
                   "turns on the board; nodes faster with their default in the model take it, "
                   "and the default plan is written unless another is 3% faster (the whole "
                   "model must run natively; on one board, a farm skips it).")
@click.option("--transfer", type=click.Choice(("auto", "off")), default="auto",
              show_default=True,
              help="auto: when the records hold enough other tasks (configs/tuner.yaml "
                   "transfer.min_tasks), a cost model trained on all of them (saved beside "
                   "the records as NAME.transfer.json) picks each task's first configs and "
                   "guides its search; off: every task starts from random picks.")
@click.option("--precision", type=click.Choice(PRECISIONS), default="fp32", show_default=True,
              help="fp16: also offer the fp16 micro-kernels (Armv8.2-A FP16 arithmetic, for "
                   "im2col and gemm1x1) on a board whose every cluster lists asimdhp; their "
                   "outputs are checked against fp16's error bound, not fp32's, and the plan "
                   "records the precision.")
def tune(model, plan_path, board_name, trials, early_stopping, strategy, records_path,
         input_shapes, config_path, seed, host, hosts, farm_path, scheduler, tls_ca_file,
         tls_cert, tls_key, pin_texts, pins_file, in_context, transfer, precision):
    """Tune every convolution of MODEL.onnx on a board and write a plan.

    Each task (convolutions of one shape) is searched over algorithm x GEMM
    micro-kernel x per-core weights x workloads, measuring candidates on the
    board, guided by an XGBoost cost model: 50 random configurations (or,
    with --transfer, the 10 a model of the other tasks ranks best), then
    rounds of the model's 3 best guesses plus 2 random ones; an (algorithm,
    kernel) branch that clearly loses gets no more random picks.  The ArmNN-rule
    default is always measured first, so every task reports default vs tuned,
    then each other algorithm once on the default's cores (within half the
    trials).

    Convolutions that run in int8, and the graph's products (MatMul and Gemm:
    token MLPs, attention scores and context, classifiers), are tuned where
    they run, in the whole model: each product's micro-kernel among those
    that read A in place, the ArmNN rule's the default, one whole-model run
    per candidate and round; a product node joins the plan as a node of its
    own (algorithm matmul).  A model of products only is tuned so too.

    A task's winner is measured alone; in the whole model it can lose to
    its default.  So after tuning, the whole model runs on the board with the
    tuned and the default plans in turns; a node that is faster in the model
    with its default takes it back, and the faster of the tuned plan and that
    mix is written if it beats the default plan by 3%, else the default plan
    (--no-in-context skips this).  The last line printed is that whole-model
    time of the plan kept and its speedup over the default plan and over
    onnxruntime (timed on the same inputs when the board is this machine);
    the sum of the convolutions' medians, each measured alone, comes before.

    The progress shows the measurements taken and found in the records of
    all the tune will take, the time elapsed and an estimate of the time
    left; -q shows only the results, -v every batch and what each task took.

    Every measurement is saved to the records file as it is taken: after
    Ctrl-C or a crash, run the same command again and it resumes without
    measuring anything twice; tasks tuned before (by any model) are reused.

    A pinned node is not searched: it runs with the algorithm (and kernel)
    its pin names, on the ArmNN rule's cores and workloads, measured once
    beside the default.  A node's own pin overrides its kind's.  Every pin is
    checked against the engine first: an unknown node or algorithm, an
    algorithm that cannot run the node's shape, a kind matching no node, or
    two kinds pinning one node differently is an error.  The kinds: KINDS.

    \b
    A pins file:
      schema_version: 1
      pins:
        - {node: conv1, algorithm: direct_nhwc}
        - {kind: depthwise, algorithm: depthwise_pixel}
        - {kind: pointwise, algorithm: gemm1x1, ukernel: 8x12-interleaved-neon}

    \b
    Examples:
      acltuner tune resnet18.onnx -o resnet18.plan.json
      acltuner tune model.onnx -o plan.json --board split-host --trials 60
      acltuner tune model.onnx -o default.plan.json --strategy default
      acltuner tune model.onnx -o plan.json --board odroid-n2plus --host odroid
      acltuner tune model.onnx -o plan.json --board odroid-n2plus --hosts odroid1,odroid2
      acltuner tune model.onnx -o plan.json --farm farm.yaml
      acltuner tune model.onnx -o plan.json --pin conv1=im2col --pin 'kind=depthwise:depthwise_pixel'
      acltuner tune model.onnx -o plan.json --board rk3588 --host rock5b --precision fp16
    """  # noqa: E501 (an example, one line in --help)
    from acltuner.farm.cluster import farm_security
    from acltuner.tuner.pins import load_pins, parse_pin
    from acltuner.app.tune import run_tune
    farm_ways = [o for o, v in (("--host", host), ("--hosts", hosts), ("--farm", farm_path),
                                ("--scheduler", scheduler)) if v]
    if len(farm_ways) > 1:
        raise click.UsageError(f"{' and '.join(farm_ways)} cannot be given together")
    board_name, members = _farm_members(board_name, hosts, farm_path)
    pins = [parse_pin(text) for text in pin_texts] + (load_pins(pins_file) if pins_file else [])
    security = farm_security(tls_ca_file, tls_cert, tls_key)
    try:
        run_tune(model, plan_path, board_name=board_name, trials=trials,
                 early_stopping=early_stopping, strategy=strategy, records_path=records_path,
                 input_shapes=input_shapes, config_path=config_path, seed=seed, host=host,
                 members=members, scheduler=scheduler, security=security,
                 reporter=_Printer(plan_path, verbosity()), pins=pins,
                 in_context=in_context, transfer=transfer, precision=precision)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: every measurement so far is in the records file; run the "
                   "same command again to resume", err=True)
        raise SystemExit(130) from None


if tune.help is not None:  # None under python -OO, which drops docstrings
    tune.help = tune.help.replace("KINDS", kinds_help())


def _farm_members(board_name: str | None, hosts: str | None, farm_path: str | None):
    """The tune's board and its farm's members (None: no farm)."""
    if farm_path:
        from acltuner.farm.members import load_farm
        return load_farm(farm_path, board_name) if board_name is None else \
            (board_name, load_farm(farm_path, board_name)[1])
    board_name = board_name or "host"
    if not hosts:
        return board_name, None
    from acltuner.board.registry import load_board
    from acltuner.farm.members import members_from_hosts
    return board_name, members_from_hosts(load_board(board_name),
                                          [h for h in hosts.split(",") if h])


def _task_line(r: TaskReport) -> str:
    def ms(v):
        return f"{v:9.3f}" if v is not None else f"{'-':>9s}"
    speed = f"{r.speedup:6.2f}x" if r.speedup else f"{'-':>7s}"
    note = f"  pinned ({r.pinned})" if r.pinned else ""
    note += "  (times in the whole model)" if r.in_model else ""
    return (f"{r.task.key:48s} {len(r.task.nodes):5d} {ms(r.default_ms)} {ms(r.tuned_ms)} "
            f"{speed}  {r.best}{note}")


class _Printer(SessionReporter):
    """The tune on the terminal: what it runs with and the summary on stderr, a
    table of tasks on stdout, the progress redrawn on stderr (the overall
    count, elapsed time and ETA, then the task's), the whole model's times
    last.  level: the verbosity (group.py), read here once: a farm's threads
    report too, outside the command's context."""

    def __init__(self, plan_path: str, level: int):
        self.plan_path = plan_path
        self.level = level
        self.host: str | None = None
        self.records: Path | None = None
        self.line = Progress(every_s=0 if level >= VERBOSE else 5.0, plain=level >= VERBOSE)
        self.overall: Overall | None = None
        self.check: ContextCheck | None = None
        self.rows = 0  # of the table of tasks
        self.farm = False
        self.drawing = threading.Lock()

    def _info(self, text: str) -> None:
        if self.level > QUIET:
            click.echo(text, err=True)

    def started(self, model: str, board: Board, host: str | None, strategy: str,
                config: TunerConfig, caches: str, records: Path) -> None:
        self.host, self.records = host, records
        where = f" on {host}" if host else ""
        self._info(f"tuning {model} on board {board.name} ({board.fingerprint}){where}, "
                   f"strategy {strategy}, {config.search.trials} trials per task, caches "
                   f"{caches}, records {records}")

    def records_busy(self, lock: Path) -> None:
        self._info(f"another tune holds {lock}: waiting for it to finish")

    def doctor(self, problems: list) -> None:
        for finding in problems:
            click.echo(f"warning: {finding.line()}", err=True)

    def planned(self, units: list[tuple[int, int]]) -> None:
        self.overall = Overall(units)
        if self.overall.found:
            self._info(f"resuming: {self.overall.found} measurements found in {self.records}")

    def measured(self, count: int) -> None:
        if self.overall:
            self.overall.measured(count)

    def progress(self, text: str) -> None:
        if self.level > QUIET and not self.farm:  # a farm's bars say more than one task
            overall = f"{self.overall.text()}  " if self.overall and not self.overall.done \
                else ""
            self.line.update(overall + text)

    def farm_progress(self, farm) -> None:
        with self.drawing:  # the farm's task threads report as their batches come back
            self.farm = True
            if self.level > QUIET:
                overall = [self.overall.text()] if self.overall else []  # none while it starts
                self.line.update_lines(farm_bars(farm.stats, farm.members()) + overall)

    def farm_done(self, stats, troubles: list[str]) -> None:
        per_member = ", ".join(f"{name} {n}" for name, n in sorted(stats.measured.items()))
        self._info(f"farm: {sum(stats.measured.values())} measurements at "
                   f"{stats.per_minute():.0f}/min ({per_member}), {stats.resent} failed batch(es) "
                   f"sent again")
        for line in troubles:
            click.echo(line, err=True)

    def task_done(self, report: TaskReport) -> None:
        with self.drawing:
            self.line.clear()
            if not self.rows:
                click.echo(f"{'task':48s} {'nodes':>5s} {'default':>9s} {'tuned':>9s} "
                           f"{'speedup':>7s}  best config (algorithm/micro-kernel/core "
                           f"weights/workloads)")
            self.rows += 1
            click.echo(_task_line(report))
            if self.level >= VERBOSE:
                click.echo(f"  {report.measured} measured, {report.reused} found in the records, "
                           f"a space of {report.space_size} configs, the tuner's own time "
                           f"{report.tuner_s:.1f} s", err=True)
            if self.overall:
                self.overall.unit_done(report.measured + report.reused)
            self.line.force_next()

    def untuned_in_model(self, what: str, reason: str) -> None:
        self._info(f"{what} keep their default config: {reason} (they are tuned in it; tune "
                   f"on one board to tune them)")

    def in_context(self, check: ContextCheck) -> None:
        self.line.clear()
        self.check = check
        if check.reverted:
            names = f": {', '.join(check.reverted)}" if self.level >= VERBOSE else ""
            self._info(f"in context: {len(check.reverted)} node(s) faster in the whole model "
                       f"with their default config{names}")

    def finished(self, plan: Plan, reports: list[TaskReport], reconnects: int) -> None:
        from acltuner.tuner.warm_start import transfer_path
        if reconnects:
            self._info(f"the connection to {self.host} dropped {reconnects} time(s): "
                       f"reconnected, and the interrupted measurements were taken again")
        per_node = [(len(r.task.nodes) * r.default_ms, len(r.task.nodes) * r.tuned_ms)
                    for r in reports if r.default_ms and r.tuned_ms and not r.in_model]
        if per_node:
            default_total = sum(d for d, _ in per_node)
            tuned_total = sum(t for _, t in per_node)
            click.echo(f"convolutions, sum of per-layer medians (each measured alone): default "
                       f"{default_total:.3f} ms, tuned {tuned_total:.3f} ms, "
                       f"{default_total / tuned_total:.2f}x")
        if self.level > QUIET:
            t = plan.tuning
            share = 100.0 * t.tuner_s / t.wall_s if t.wall_s else 0.0
            reused = sum(r.reused for r in reports)
            pinned = sum(len(r.task.nodes) for r in reports if r.pinned)
            click.echo(f"wall time {t.wall_s:.1f} s, tuner's own time {t.tuner_s:.1f} s "
                       f"({share:.1f}% of wall), {t.measurements} measurements ({reused} reused "
                       f"from records)"
                       + (f", {pinned} node(s) pinned, not searched" if pinned else ""))
            transferred = sum(r.transferred for r in reports)
            if transferred:
                assert self.records is not None  # started() came first
                click.echo(f"{transferred} of {len(reports)} tasks warm-started by the transfer "
                           f"model ({transfer_path(self.records)})")
            click.echo(f"plan written to {self.plan_path}")
        if self.check:
            click.echo(whole_model_line(self.check))


def whole_model_line(check: ContextCheck) -> str:
    """The tune's headline: the plan kept, timed whole against the default
    plan and onnxruntime (in the same run, on the same inputs)."""
    from acltuner.plan import times_text
    if check.skipped:
        return f"whole model: not measured ({check.skipped})"
    kept = check.ms[check.kept]
    others = times_text({name: ms for name, ms in check.ms.items()
                         if name not in (check.kept, "default")})
    text = (f"whole model: kept the {check.kept} plan, {kept:.3f} ms"
            + (f" ({others})" if others else "")
            + f"; speedup {check.ms['default'] / kept:.2f}x over the default plan "
              f"({check.ms['default']:.3f} ms)")
    if check.ort_ms is not None and check.ort_threads is not None:
        text += (f", {check.ort_ms / kept:.2f}x over onnxruntime ({check.ort_ms:.3f} ms, "
                 f"{check.ort_threads} thread{'s' if check.ort_threads > 1 else ''})")
    if check.nodes_ms:
        text += f"; chosen on the nodes' medians summed: {times_text(check.nodes_ms)}"
    return text
