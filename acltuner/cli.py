"""The `acltuner` command line."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from acltuner import __version__
from acltuner.engine import native
from acltuner.engine.launcher import LauncherError
from acltuner.progress import Progress
from acltuner.tuner import TUNE_STRATEGIES
from acltuner.tuner.report import TuneReporter

if TYPE_CHECKING:
    from pathlib import Path

    from acltuner.board.model import Board
    from acltuner.plan import Plan
    from acltuner.tuner.tune import TaskReport
    from acltuner.tuner.tuner_config import TunerConfig


class _Group(click.Group):
    """Turns the engine's and the input checks' errors into one line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (native.EngineError, LauncherError, ValueError, OSError) as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="acltuner")
def main() -> None:
    """Tune and run CNN convolutions for ARM big.LITTLE boards.

    acltuner measures every convolution algorithm x GEMM micro-kernel x per-core
    work split of a model's convolutions on the target and keeps the fastest.

    \b
    A session:
      acltuner zoo resnet18 -o resnet18.onnx          a model to try (or bring your own)
      acltuner tasks resnet18.onnx                    its convolutions, merged into tasks
      acltuner tune resnet18.onnx -o r18.plan.json    search every task on this board
      acltuner run r18.plan.json --check              run the whole model with its plan
      acltuner records stats ~/.cache/acltuner/records.jsonl

    \b
    Also:
      acltuner board list | show NAME | detect        the boards acltuner knows
      acltuner engine list                            what this build of the engine can run
      acltuner bench gemm | conv | search | compare   benchmarks (ratios, side by side)
    """


@main.group(cls=_Group)
def engine() -> None:
    """Inspect the native engine built for this machine."""


def _k_range(uk: native.UkernelInfo) -> str:
    return "any" if not uk.kmax else f"{uk.kmin}<K<={uk.kmax}"


@engine.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of lines.")
def engine_list(as_json: bool) -> None:
    """One line per convolution algorithm and GEMM micro-kernel of this build.

    Algorithms marked `gemm` run through any micro-kernel that suits the shape;
    `direct` ones have their own loop nest.  Micro-kernels are named
    MRxNR-style-isa: the tile, the packing (interleaved: A and B packed;
    hybrid: only the weights packed; smallk: hybrid for a small K) and the ISA.
    """
    algos = [(a, native.uses_ukernel(a)) for a in native.algorithms()]
    kernels = native.ukernels()
    if as_json:
        click.echo(json.dumps({
            "version": native.version(), "isa": native.isa(), "cpus": native.cpu_count(),
            "algorithms": [{"name": a, "uses_ukernel": u} for a, u in algos],
            "ukernels": [uk.__dict__ for uk in kernels]}, indent=2))
        return
    for a, u in algos:
        click.echo(f"algorithm {a:28s} {'gemm' if u else 'direct'}")
    for uk in kernels:
        click.echo(f"ukernel   {uk.name:28s} isa={uk.isa} style={uk.style} tile={uk.mr}x{uk.nr} "
                   f"K={_k_range(uk)} N%{uk.n_multiple}==0")


@main.group(cls=_Group)
def bench() -> None:
    """Benchmarks printing ratios measured side by side in one run.

    Timings on a shared machine are noisy: compare ratios, not absolute numbers.
    """


@bench.command("gemm")
@click.option("--cpu", default=0, show_default=True, help="CPU to pin the single thread to.")
@click.option("--size", default=1024, show_default=True, help="Side of the square GEMM.")
@click.option("--kernels", default="", help="Comma-separated micro-kernels (default: all).")
def bench_gemm(cpu: int, size: int, kernels: str) -> None:
    """SGEMM GFLOP/s of every micro-kernel on one core.

    The last line, `gemm_vs_blas: R`, is the best micro-kernel's GFLOP/s at
    SIZE^3 divided by numpy's single-thread GFLOP/s, both measured now.
    """
    from acltuner.bench import gemm
    gemm.run(cpu, size, [k for k in kernels.split(",") if k])


@bench.command("conv")
@click.option("--quick", is_flag=True, help="Try one micro-kernel per packing style only.")
@click.option("--layers", default="", help="Comma-separated layer names (default: all).")
def bench_conv(quick: bool, layers: str) -> None:
    """Every algorithm on the distinct ResNet-18 and VGG-16 convolution layers.

    Each cell is the median time of the algorithm with its fastest micro-kernel,
    all cores at equal weight.  The last line, `winograd4x4_vs_im2col: R`, is
    the geometric-mean speedup of Winograd F(4x4,3x3) over im2col on the layers
    where both apply.
    """
    from acltuner.bench import conv
    conv.run(quick, [n for n in layers.split(",") if n])


@bench.command("search")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(1),
              help="Searches per strategy and task.")
def bench_search(seeds: int) -> None:
    """How close the cost-model search gets to the exhaustive best.

    Three ResNet-18 tasks on a reduced space (this machine's CPUs as two
    clusters) are measured exhaustively; the xgb and random searches, each
    with the tuner config's budget (100 measurements), then run on those
    measurements for several seeds.  The last line, `search_gap_pct: X`, is
    the worst task's median gap (xgb best / exhaustive best - 1) x 100.
    """
    from acltuner.bench import search
    search.run(seeds)


@bench.command("compare")
@click.option("--models", default="resnet18,resnet50,resnet101,alexnet,vgg16,googlenet,"
              "mobilenetv2,resnetxy", show_default=True, help="Comma-separated zoo models.")
@click.option("--trials", default=100, show_default=True, type=click.IntRange(1),
              help="Measurements per task for the tuned plans.")
@click.option("--repeat", default=20, show_default=True, type=click.IntRange(1),
              help="Timed runs per model and engine.")
@click.option("--board", "board_name", default="host", show_default=True,
              help="Board to tune for (this machine).")
@click.option("--out", "out_dir", default="bench-results", show_default=True,
              help="Folder for the models, plans, compare.csv and compare.md.")
@click.option("--records", "records_path", default=None,
              help="Records file [default: OUT/records.jsonl].")
def bench_compare(models, trials, repeat, board_name, out_dir, records_path) -> None:
    """The paper's Table 2 on this machine: onnxruntime vs our engine.

    For each zoo model: onnxruntime (default optimisations, the better of 1
    and 2 intra-op threads), the ArmNN-rule default plan, and the tuned plan,
    each timed in a fresh process (with its peak memory).  Writes CSV and
    markdown, prints the markdown; the last line, `geomean_vs_onnxruntime: R`,
    is onnxruntime's time over the tuned plan's, geometric mean (above 1: we
    are faster).
    """
    from pathlib import Path

    from acltuner.bench import compare
    out = Path(out_dir)
    compare.run([m for m in models.split(",") if m], trials, repeat, out, board_name,
                Path(records_path) if records_path else out / "records.jsonl")


@main.group(cls=_Group)
def records() -> None:
    """Inspect records files: the tuning logs, one JSON line per measurement."""


@records.command("stats")
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def records_stats(file: str, as_json: bool) -> None:
    """Per board, engine version and task: measurements, failed ones, the best
    config and its median time, the default config's time and the speedup.

    failed: the config could not run; incorrect: it ran with a wrong output.
    The total row adds the best and default times of the tasks that have both
    (each task once, however many nodes share it) and divides them.

    \b
    Example:
      acltuner records stats records.jsonl
      acltuner records stats records.jsonl --json | jq '.totals'
    """
    from pathlib import Path

    from acltuner.tuner import record_stats
    from acltuner.tuner.records import RecordStore
    if not Path(file).is_file():
        # RecordStore starts an empty log where there is none; here that is a typo.
        raise click.ClickException(f"{file}: no such records file")
    tables = record_stats.summarize(RecordStore(file).records)
    click.echo(record_stats.render_json(*tables) if as_json else record_stats.render_text(*tables))


@main.group(cls=_Group)
def board() -> None:
    """Target boards: CPU clusters, core types, clocks, ISA and compiler flags.

    A board is a YAML file (configs/boards/NAME.yaml) or `host`, this machine
    as its kernel describes it.  Wherever a board is asked for, give a shipped
    board's NAME, `host`, or the path of a board file.

    \b
    Examples:
      acltuner board list
      acltuner board show odroid-n2plus
      acltuner board detect -o configs/boards/myboard.yaml    (run on the board)
    """


def _board_summary(b) -> str:
    return " + ".join(f"{len(c.cpus)}x {c.core_type} {c.max_freq_mhz or '?'} MHz"
                      for c in b.clusters)


def _board_json(b) -> str:
    return json.dumps({**b.to_dict(), "ncores": b.ncores, "armnn_threads": b.armnn_threads,
                       "fingerprint": b.fingerprint}, indent=2)


@board.command("list")
def board_list() -> None:
    """One line per known board: name, ISA and clusters (LITTLE to big).

    `host` is detected from this machine each time; the others are the files
    in configs/boards/ (ACLTUNER_CONFIGS=DIR reads DIR/boards/ instead).
    """
    from acltuner.board import list_boards, load_board
    for name in list_boards():
        b = load_board(name)
        click.echo(f"{name:16s} {b.isa:8s} {_board_summary(b)}")


@board.command("show")
@click.argument("board_name", metavar="NAME|FILE")
@click.option("--json", "as_json", is_flag=True,
              help="Print the board file's fields plus ncores, armnn_threads and fingerprint "
                   "as one JSON object.")
def board_show(board_name: str, as_json: bool) -> None:
    """A board's clusters, ISA, flags, fingerprint and ArmNN threads.

    The fingerprint hashes what measurements depend on (ISA, and each
    cluster's core type, cpus and clock), not names: tuning records are kept
    per fingerprint.  ArmNN's default thread count is the smallest cluster's
    core count (ACLTuner paper, Appendix B.1): 2 on both the Odroid N2+ (2+4)
    and the Tinker Edge R (4+2).

    \b
    Examples:
      acltuner board show tinker-edge-r
      acltuner board show host --json
      acltuner board show ./myboard.yaml
    """
    from acltuner.board import load_board
    from acltuner.board.cpulist import format_cpulist
    b = load_board(board_name)
    if as_json:
        click.echo(_board_json(b))
        return
    click.echo(f"board        {b.name}")
    if b.description:
        click.echo(f"description  {b.description}")
    click.echo(f"isa          {b.isa}")
    for c in b.clusters:
        capacity = "" if c.capacity is None else f"  capacity {c.capacity}"
        click.echo(f"cluster      {c.name:8s} {c.core_type:12s} cpus {format_cpulist(c.cpus):6s}"
                   f" {c.max_freq_mhz or '?'} MHz{capacity}")
    click.echo(f"compiler     {' '.join(b.compiler_flags) or '(the build default)'}")
    if b.launcher_wrapper:
        click.echo(f"launcher     {' '.join(b.launcher_wrapper)} <launcher>")
    click.echo(f"fingerprint  {b.fingerprint}")
    click.echo(f"ArmNN default threads: {b.armnn_threads}")


@board.command("detect")
@click.option("--sysfs", "root", default="/", show_default=True, metavar="ROOT",
              type=click.Path(exists=True, file_okay=False),
              help="Read ROOT/proc/cpuinfo and ROOT/sys/devices/system/cpu: a copy "
                   "recorded on a board, or / for this machine.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Also write the board file here; the board is named after the file.")
def board_detect(root: str, as_json: bool, output: str | None) -> None:
    """A board file from what a Linux kernel reports.

    Cores of the same type and clock form a cluster, ordered LITTLE to big by
    the kernel's cpu_capacity, then clock.  Check the result (a VM has no
    clocks, for one) and edit the name and description as you like.

    On a board without acltuner, record what detect reads, copy the folder
    here and point --sysfs at it:

    \b
      for f in /proc/cpuinfo /sys/devices/system/cpu/online \\
          /sys/devices/system/cpu/cpu[0-9]*/{cpu_capacity,cpufreq/cpuinfo_max_freq}; do
        [ -r $f ] && mkdir -p rec${f%/*} && cat $f > rec$f
      done

    \b
    Examples:
      acltuner board detect                      this machine, as YAML
      acltuner board detect --sysfs rec -o configs/boards/myboard.yaml
    """
    from dataclasses import replace
    from pathlib import Path

    from acltuner.board import detect, dump_yaml, save_file
    b = detect(root)
    if output:
        b = replace(b, name=Path(output).stem)
        save_file(b, output)
        click.echo(f"wrote {output} (fingerprint {b.fingerprint})", err=True)
    click.echo(_board_json(b) if as_json else dump_yaml(b), nl=as_json)


_BOARD_OPTION = click.option(
    "--board", "board_name", required=True, metavar="NAME|FILE",
    help="A board from 'acltuner board list' or a board YAML file.")
_HOST_HELP = ("ssh destination as your ssh config knows it (alias, user@host); ssh runs with "
              "your keys and agent, never prompts, and honours $ACLTUNER_SSH_CONFIG (ssh -F).")


@main.command("build")
@_BOARD_OPTION
@click.option("--build-dir", type=click.Path(file_okay=False), default=None,
              help="Build folder [default: build/board-NAME in a source checkout, else "
                   "~/.cache/acltuner/build/board-NAME].")
def build(board_name: str, build_dir: str | None) -> None:
    """Build the engine and acl-launcher for a board.

    An AArch64 board is cross-compiled (gcc-aarch64-linux-gnu, the board's
    compiler_flags); an x86_64 board is built for this machine.  The folder is
    kept per board, so a build with nothing changed is quick.  The launcher is
    statically linked: it is the one file `acltuner deploy` copies.  The last
    line printed is the launcher's path.

    \b
    Example:
      acltuner build --board odroid-n2plus
    """
    from acltuner.board.registry import load_board
    from acltuner.engine.build import build_for_board
    b = load_board(board_name)
    target = " ".join([b.isa, *b.compiler_flags])
    click.echo(f"building the engine for board {b.name} ({target})", err=True)
    click.echo(str(build_for_board(b, build_dir)))


@main.command("deploy")
@_BOARD_OPTION
@click.option("--host", required=True, metavar="HOST", help=_HOST_HELP)
@click.option("--build-dir", type=click.Path(file_okay=False), default=None,
              help="Build folder (see 'acltuner build').")
def deploy(board_name: str, host: str, build_dir: str | None) -> None:
    """Build the board's launcher, copy it to HOST and check it there.

    The launcher goes to ~/.cache/acltuner/VERSION/ on HOST ($ACLTUNER_REMOTE_DIR
    instead of ~/.cache/acltuner), copied only when it changed, and is started
    through the board's launcher_wrapper: its protocol and engine version must
    equal this acltuner's, its ISA the board's, and HOST must have every core
    the board file uses.

    \b
    Example:
      acltuner deploy --board odroid-n2plus --host odroid
      acltuner tune resnet18.onnx -o r18.plan.json --board odroid-n2plus --host odroid
    """
    from acltuner.board.registry import load_board
    from acltuner.remote.deploy import deploy as deploy_to
    b = load_board(board_name)
    d = deploy_to(b, host, build_dir)
    state = "copied to" if d.copied else "already on"
    click.echo(f"{d.local} {state} {host}:{d.remote}")
    click.echo(f"{host}: acl-launcher {d.hello['version']}, {d.hello['isa']} kernels, "
               f"{d.hello['cpus']} cpus: ready for board {b.name}")


@main.command("tasks")
@click.argument("model", metavar="MODEL.onnx")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
              help="Static shape of a model input with dynamic dims (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def tasks(model: str, input_shapes: tuple[str, ...], as_json: bool) -> None:
    """The tuning tasks of an ONNX model: its convolutions grouped by shape.

    Convolutions with the same input, weight and output dimensions, strides,
    pads, dilations and groups are one task, whatever BatchNormalization,
    residual Add and Relu/Clip each absorbs.  One row per task, most FLOPs
    first: the key, how many convolutions share it, GFLOPs of all of them, the
    share (%) of the model's convolution FLOPs, and the engine's algorithms
    that can run it.  Non-2-D convolutions are listed as skipped on stderr.

    \b
    Example:
      acltuner tasks resnet101.onnx
      acltuner tasks model.onnx --input-shape input=1,3,224,224 --json
    """
    from acltuner.taskgen.model import parse_input_shapes
    from acltuner.taskgen.tasks import generate_tasks
    ts = generate_tasks(model, parse_input_shapes(input_shapes))
    rows = [(t, 100.0 * t.flops / ts.flops) for t in ts.tasks]
    if as_json:
        click.echo(json.dumps({
            "model": model, "convolutions": ts.convolutions, "skipped": ts.skipped,
            "tasks": [{"key": t.key, "nodes": len(t.nodes), "node_names": t.nodes,
                       "flops": t.flops, "share": share, "algorithms": t.algorithms}
                      for t, share in rows]}, indent=2))
        return
    for line in ts.skipped:
        click.echo(f"skipped: {line}", err=True)
    width = max(len(t.key) for t in ts.tasks)
    click.echo(f"{'key':{width}s}  nodes  GFLOPs  share%  algorithms")
    for t, share in rows:
        click.echo(f"{t.key:{width}s}  {len(t.nodes):5d}  {t.flops / 1e9:6.3f}  {share:6.2f}  "
                   f"{','.join(t.algorithms)}")
    click.echo(f"{ts.convolutions} convolutions -> {len(ts.tasks)} tasks")

@main.command("zoo")
@click.argument("name", required=False)
@click.option("-o", "--output", metavar="MODEL.onnx", help="Where to write the model.")
@click.option("--list", "list_models", is_flag=True, help="List the models and exit.")
def zoo(name: str | None, output: str | None, list_models: bool) -> None:
    """Write a zoo model: a CNN with seeded random weights and a static
    1x3x224x224 input, built locally (nothing is downloaded).

    \b
    Examples:
      acltuner zoo --list
      acltuner zoo resnet18 -o resnet18.onnx
    """
    from acltuner.zoo import MODELS, build
    if list_models:
        click.echo("\n".join(MODELS))
        return
    if not name or not output:
        raise click.UsageError("give a model NAME and -o MODEL.onnx (or --list)")
    from acltuner.atomic import write_atomic
    write_atomic(output, build(name).SerializeToString())
    click.echo(f"wrote {output}")


@main.group(cls=_Group)
def plan() -> None:
    """Inspect plan files written by 'acltuner tune'."""


@plan.command("show")
@click.argument("plan_path", metavar="PLAN.json")
@click.option("--board", "board_name", default=None, metavar="NAME|FILE",
              help="The board to check the plan against (default: the plan's own board).")
@click.option("--force", is_flag=True,
              help="Show a plan whose model, board or engine differ, with warnings.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_show(plan_path: str, board_name: str | None, force: bool, as_json: bool) -> None:
    """Validate a plan and print each convolution's configuration.

    The plan is refused, with one line saying what differs, when its model
    file changed since tuning (sha256), when it was tuned for another board,
    or with another engine version; --force shows it anyway, with warnings.

    \b
    Example:
      acltuner plan show resnet18.plan.json
    """
    from acltuner.plan import check_plan, load_plan, plan_board
    p = load_plan(plan_path)
    board = plan_board(p, board_name)
    for warning in check_plan(p, p.model_path, board.fingerprint, native.version(), force):
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(p.to_dict(), indent=2))
        return
    t = p.tuning
    click.echo(f"model {p.model_path}\nboard {p.board_name} ({p.board_fingerprint}), engine "
               f"{p.engine_version}, strategy {p.strategy}, {t.measurements} measurements in "
               f"{t.wall_s:.1f} s")
    width = max(len(n.node) for n in p.nodes)
    for n in p.nodes:
        times = (f"{n.tuned_ms:8.3f} ms  default {n.default_ms:8.3f} ms"
                 if n.tuned_ms and n.default_ms else "not measured")
        click.echo(f"{n.node:{width}s}  {str(n.config):52s}  {times}")


@main.command("tune")
@click.argument("model", metavar="MODEL.onnx")
@click.option("-o", "--output", "plan_path", required=True, metavar="PLAN.json",
              help="Where to write the plan (atomically).")
@click.option("--board", "board_name", default="host", show_default=True, metavar="NAME|FILE",
              help="Board to tune for: a name from 'acltuner board list', a board YAML file, "
                   "or 'host' (detected).")
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
                   "[default: $ACLTUNER_RECORDS or ~/.cache/acltuner/records.jsonl].")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
              help="Static shape of a model input with dynamic dims (repeatable).")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="Tuner config YAML (default: configs/tuner.yaml).")
@click.option("--seed", default=0, show_default=True, help="Seed of the random choices.")
@click.option("--host", default=None, metavar="HOST",
              help="Measure on this ssh host, where 'acltuner deploy' put the board's "
                   "launcher; a dropped connection is reconnected and the tune goes on.")
def tune(model, plan_path, board_name, trials, early_stopping, strategy, records_path,
         input_shapes, config_path, seed, host):
    """Tune every convolution of MODEL.onnx on a board and write a plan.

    Each task (convolutions of one shape) is searched over algorithm x GEMM
    micro-kernel x per-core weights x workloads, measuring candidates on the
    board, guided by an XGBoost cost model: 50 random configurations, then
    rounds of the model's 3 best guesses plus 2 random ones.  The ArmNN-rule
    default is always measured too, so every task reports default vs tuned.

    Every measurement is saved to the records file as it is taken: after
    Ctrl-C or a crash, run the same command again and it resumes without
    measuring anything twice; tasks tuned before (by any model) are reused.

    \b
    Examples:
      acltuner tune resnet18.onnx -o resnet18.plan.json
      acltuner tune model.onnx -o plan.json --board split-host --trials 60
      acltuner tune model.onnx -o default.plan.json --strategy default
      acltuner tune model.onnx -o plan.json --board odroid-n2plus --host odroid
    """
    from acltuner.tuner.session import run_tune
    try:
        run_tune(model, plan_path, board_name=board_name, trials=trials,
                 early_stopping=early_stopping, strategy=strategy, records_path=records_path,
                 input_shapes=input_shapes, config_path=config_path, seed=seed, host=host,
                 reporter=_Printer(plan_path))
    except KeyboardInterrupt:
        click.echo("\ninterrupted: every measurement so far is in the records file; run the "
                   "same command again to resume", err=True)
        raise SystemExit(130) from None


def _task_line(r: TaskReport) -> str:
    def ms(v):
        return f"{v:9.3f}" if v is not None else f"{'-':>9s}"
    speed = f"{r.speedup:6.2f}x" if r.speedup else f"{'-':>7s}"
    return (f"{r.task.key:48s} {len(r.task.nodes):5d} {ms(r.default_ms)} {ms(r.tuned_ms)} "
            f"{speed}  {r.best}")


class _Printer(TuneReporter):
    """The tune on the terminal: what it runs with and the summary on stderr, a
    table of tasks on stdout, a task's progress redrawn on stderr."""

    def __init__(self, plan_path: str):
        self.plan_path = plan_path
        self.host: str | None = None
        self.line = Progress()

    def started(self, model: str, board: Board, host: str | None, strategy: str,
                config: TunerConfig, caches: str, records: Path) -> None:
        self.host = host
        where = f" on {host}" if host else ""
        click.echo(f"tuning {model} on board {board.name} ({board.fingerprint}){where}, "
                   f"strategy {strategy}, {config.search.trials} trials per task, caches {caches}, "
                   f"records {records}", err=True)
        click.echo(f"{'task':48s} {'nodes':>5s} {'default':>9s} {'tuned':>9s} {'speedup':>7s}  "
                   f"best config (algorithm/micro-kernel/core weights/workloads)")

    def progress(self, text: str) -> None:
        self.line.update(text)

    def task_done(self, report: TaskReport) -> None:
        self.line.clear()
        click.echo(_task_line(report))

    def finished(self, plan: Plan, reports: list[TaskReport], reconnects: int) -> None:
        if reconnects:
            click.echo(f"the connection to {self.host} dropped {reconnects} time(s): reconnected, "
                       f"and the interrupted measurements were taken again", err=True)
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
        click.echo(f"plan written to {self.plan_path}")


# The largest relative difference from onnxruntime `run --check` accepts.
CHECK_TOLERANCE = 1e-3


@main.command("run")
@click.argument("plan_path", metavar="PLAN.json")
@click.argument("files", nargs=-1, metavar="[F.npy ...]")
@click.option("--input", "named", multiple=True, metavar="NAME=F.npy",
              help="The file for a model input (repeatable); plain F.npy arguments fill the "
                   "other inputs in the model's order.  Default: seeded random inputs.")
@click.option("--output", "output_path", default=None, metavar="F.npy",
              help="Save the output (.npy; a model with several outputs: an .npz by name).")
@click.option("--repeat", default=20, show_default=True, type=click.IntRange(1),
              help="Timed runs.")
@click.option("--warmup", default=3, show_default=True, type=click.IntRange(0),
              help="Untimed runs first.")
@click.option("--check", is_flag=True,
              help="Compare the outputs with onnxruntime running the original model; fail "
                   "above 1e-3 relative difference.")
@click.option("--profile", is_flag=True, help="Time per node, slowest first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--board", "board_name", default=None, metavar="NAME|FILE",
              help="The board running the plan (default: the plan's own board).")
@click.option("--force", is_flag=True,
              help="Run a plan whose model, board or engine differ, with warnings.")
@click.option("--host", default=None, metavar="HOST",
              help="Run on this ssh host, inside the launcher 'acltuner deploy' put there, "
                   "and report the board's latency (--check still compares here).")
def run(plan_path, files, named, output_path, repeat, warmup, check, profile, as_json,
        board_name, force, host):
    """Run a plan's whole model natively with its tuned convolutions.

    Every convolution runs with the plan's config; the other operators run on
    all the board's cores; nodes the engine does not cover run through
    onnxruntime (listed as delegated).  Prints the latency (median, p10, p90),
    the peak RSS and, with --check, the largest difference from onnxruntime:
    max |diff| / max |reference|.

    With --host the whole model runs on the board, in its launcher (the model
    must then run entirely natively): the latency, profile and peak RSS are the
    board's; inputs and outputs travel over ssh.

    \b
    Examples:
      acltuner run resnet18.plan.json --check
      acltuner run model.plan.json image.npy --output logits.npy --profile
      acltuner run r18.plan.json --host odroid --check
    """
    import numpy as np

    from acltuner.runtime.measure import check as compare
    from acltuner.runtime.profile import summarize
    from acltuner.runtime.report import render_json, render_text
    args = (plan_path, list(named), list(files), repeat, warmup, force, board_name)
    program, inputs, latency, outputs, rss_mb = (_run_on_host(host, *args) if host
                                                 else _run_here(*args))
    diff = None
    if check:
        diff = compare(program.plan.model_path, inputs, outputs)
    if output_path:
        if len(outputs) == 1:
            np.save(output_path, next(iter(outputs.values())))
        else:
            np.savez(output_path, **outputs)
    nodes = summarize(latency.profiles)
    if as_json:
        click.echo(render_json(latency, rss_mb, program, nodes, diff, profile))
    else:
        click.echo(render_text(latency, repeat, warmup, rss_mb, program, nodes, diff, profile))
    if diff is not None and diff.max_rel > CHECK_TOLERANCE:
        raise click.ClickException(f"check failed: max relative difference {diff.max_rel:.3g} "
                                   f"> {CHECK_TOLERANCE:g}")


def _warn(program) -> None:
    for warning in program.warnings:
        click.echo(f"warning: {warning}", err=True)


def _run_here(plan_path, named, files, repeat, warmup, force, board_name):
    """The plan in this process: (program, inputs, latency, outputs, peak RSS MB)."""
    from acltuner.runtime import load
    from acltuner.runtime.inputs import random_inputs, read_inputs
    from acltuner.runtime.measure import peak_rss_mb, time_runs
    program = load(plan_path, force=force, board=board_name)
    _warn(program)
    inputs = read_inputs(program, named, files) or random_inputs(program)
    latency, outputs = time_runs(program, inputs, repeat, warmup)
    return program, inputs, latency, outputs, peak_rss_mb()


def _run_on_host(host, plan_path, named, files, repeat, warmup, force, board_name):
    """The plan inside the launcher on `host`, timed there; the same tuple, with
    the launcher's peak RSS."""
    from acltuner.remote.launcher import RemoteLauncherClient
    from acltuner.runtime.inputs import random_inputs, read_inputs
    from acltuner.runtime.remote import RemoteProgram
    from acltuner.plan import load_plan, plan_board
    board = plan_board(load_plan(plan_path), board_name)
    with RemoteLauncherClient(board, host, timeout_s=600) as client:
        remote = RemoteProgram(plan_path, client, force=force, board=board_name)
        _warn(remote.program)
        inputs = read_inputs(remote.program, named, files) or random_inputs(remote.program)
        result = remote.run(inputs, repeat, warmup)
    return remote.program, inputs, result.latency, result.outputs, result.peak_rss_mb


if __name__ == "__main__":
    main()
