"""`acltuner bench`: the benchmarks."""
from __future__ import annotations

import click

from acltuner.cli.group import Group
from acltuner.cli.options import host_option


@click.group(cls=Group)
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


@bench.command("gemv")
def bench_gemv() -> None:
    """Batch-1 fully connected layers (M = 1) against the memory's streaming bandwidth.

    AlexNet's fc6 and fc7 (151 and 67 MB of weights, more than any cache)
    on all cores, beside numpy's max over a 512 MB array (streaming reads),
    onnxruntime's MatMul and numpy's BLAS (sgemv).  The last line,
    `gemv_fraction_of_stream: F`, is our GB/s over the streaming read's,
    geometric mean over the two layers.
    """
    from acltuner.bench import gemv
    gemv.run()


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


@bench.command("deconv")
@click.option("--quick", is_flag=True, help="Try one micro-kernel per packing style only.")
def bench_deconv(quick: bool) -> None:
    """ConvTranspose 1x64x40x40 -> 32 (2x2 and 4x4 pad 1, stride 2) natively and in onnxruntime.

    Each native cell is an algorithm with its fastest micro-kernel, all cores
    at equal weight; onnxruntime runs the one-node model on as many threads.
    The last line, `deconv_vs_onnxruntime: R`, is the geometric mean over the
    two layers of onnxruntime's time over the best native algorithm's.
    """
    from acltuner.bench import deconv
    deconv.run(quick)


@bench.command("farm")
@click.option("--model", default="resnet18", show_default=True,
              help="The zoo model tuned (acltuner zoo --list).")
@click.option("--trials", type=click.IntRange(1), default=12, show_default=True,
              help="Measurements per task, the same in both runs.")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="Tuner config YAML (default: configs/tuner.yaml).")
@click.option("--rounds", type=click.IntRange(1), default=1, show_default=True,
              help="One board then two, this many times: the median ratio is reported "
                   "(a busy machine's noise).")
def bench_farm(model: str, trials: int, config_path: str | None, rounds: int) -> None:
    """Tunes a zoo model on a farm of one, then two, one-core boards of this machine.

    The boards are this machine's cpu0 and cpu1, each launcher pinned to its
    own core (ACL_CPUS), at normal priority (these cores are the tuner's
    too), each config timed a fixed number of runs (the noise control would
    take more runs with two boards, which share this machine's memory and
    caches, than with one), the farm embedded (a Dask scheduler and a worker
    per board here); both runs start from empty records.  The last line,
    `farm_speedup: R`, is the measurements per second with two boards over
    those with one, each over the tune's own time (the cluster's start left out),
    the median over --rounds.
    """
    from acltuner.bench import farm
    farm.run(model, trials, config_path, rounds)


@bench.command("search")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(1),
              help="Searches per strategy and task.")
@click.option("--replay", "replay_dir", default=None, metavar="DIR",
              help="Folder of exhaustive tables (*.json) to replay [default: the tables "
                   "shipped in the package].")
@click.option("--record", "record_dir", default=None, metavar="DIR",
              help="Measure the tables on this machine into DIR instead (a few minutes; "
                   "needs the launcher).")
@click.option("--strategies", default="random,xgb,xgb+transfer,xgb+transfer+pruning",
              show_default=True, help="Comma-separated strategies to replay.")
def bench_search(seeds: int, replay_dir: str | None, record_dir: str | None,
                 strategies: str) -> None:
    """How many measurements a search needs to get close to the exhaustive best.

    Each table holds every config of one task's reduced space (this machine's
    first two CPUs as two clusters) with its measured time; tasks of different
    kinds (3x3, strided, 1x1, depthwise, first layer, FC).  The strategies
    replay against the tables (a lookup per config, no launcher): random, xgb
    (the paper's per-task model), xgb+transfer (warm-started by a model trained
    on the other tasks only: leave-one-task-out) and xgb+transfer+pruning.
    Per strategy: measurements to get within 2% and 1% of the exhaustive best
    (mean over seeds and tasks; a run that never gets there counts as the
    whole budget) and the gap at the budget.  The last line,
    `transfer_trials_to_2pct: N`, is xgb+transfer's mean to 2%.
    """
    from pathlib import Path

    from acltuner.paths import search_tables_dir
    if record_dir:
        from acltuner.bench import search_record
        search_record.record(Path(record_dir), list(search_record.TASKS))
        return
    from acltuner.bench import search
    chosen = [s for s in strategies.split(",") if s]
    unknown = [s for s in chosen if s not in search.STRATEGIES]
    if unknown:
        raise click.UsageError(f"--strategies: unknown {', '.join(unknown)}; one of "
                               f"{', '.join(search.STRATEGIES)}")
    search.run(Path(replay_dir) if replay_dir else search_tables_dir(), seeds, chosen)


def _model_set_options(default_out: str):
    """The options of the benches that tune and time a set of models."""
    options = [
        click.option("--models", default="resnet18,resnet50,resnet101,alexnet,vgg16,googlenet,"
                     "mobilenetv2,resnetxy", show_default=True, help="Comma-separated zoo models."),
        click.option("--model-dir", default=None, metavar="DIR",
                     help="Every .onnx model in DIR instead of zoo models (e.g. models/, the "
                          "real models scripts/fetch_models.py fetches; input shapes from its "
                          "shapes.yaml)."),
        click.option("--trials", default=100, show_default=True, type=click.IntRange(1),
                     help="Measurements per task for the tuned plans."),
        click.option("--repeat", default=20, show_default=True, type=click.IntRange(1),
                     help="Timed runs per model, engine and round, at least."),
        click.option("--round-ms", default=300.0, show_default=True, type=click.FloatRange(0),
                     help="More timed runs for a fast model, to fill this many milliseconds "
                          "per engine and round (at most 5000 runs)."),
        click.option("--board", "board_name", default="host", show_default=True,
                     help="Board to tune for (this machine)."),
        click.option("--out", "out_dir", default=default_out, show_default=True,
                     help="Folder for the models, plans and results."),
        click.option("--records", "records_path", default=None,
                     help="Records file [default: OUT/records.jsonl]."),
        click.option("--rounds", default=3, show_default=True, type=click.IntRange(1),
                     help="Rounds timing the engines in turns; each one's time is the median "
                          "of its rounds."),
    ]

    def apply(f):
        for option in reversed(options):
            f = option(f)
        return f
    return apply


def _chosen_models(models: str, model_dir: str | None, out):
    from pathlib import Path

    from acltuner.bench import compare
    return (compare.folder_models(Path(model_dir)) if model_dir
            else compare.zoo_models([m for m in models.split(",") if m], out))


@bench.command("compare")
@_model_set_options("bench-results")
@click.option("--realtime/--no-realtime", default=True, show_default=True,
              help="Time all three at the lowest real-time priority (SCHED_FIFO) where the "
                   "system allows it, so that other load on the machine stays out of the "
                   "comparison.")
@click.option("--also-strict", is_flag=True,
              help="Also time the tuned plan with --balance strict, and print "
                   "`adaptive_vs_strict: R` (strict time over adaptive, geometric mean).")
@click.option("--engines", default="ort", show_default=True, metavar="E,E",
              help="Comma-separated engines to time beside ours: ort (onnxruntime, always "
                   "timed), openvino, ncnn, mnn (pip install 'acltuner[peers]'; ncnn also "
                   "needs `pip install --no-deps pnnx`).  An engine not installed is one "
                   "line and left out.")
@host_option(help="Time everything on this board over ssh (--board its board file, the "
                  "launcher deployed): ours in its launcher, onnxruntime and the --engines "
                  "with --board-python there.")
@click.option("--board-python", default=None, metavar="PATH",
              help="With --host: the Python of a virtualenv on the board with onnxruntime "
                   "and the engines installed [default: acltuner-peers/bin/python in the "
                   "home folder; a missing one is one line that says how to make it].")
def bench_compare(models, model_dir, trials, repeat, round_ms, board_name, out_dir,
                  records_path, rounds, realtime, also_strict, engines, host,
                  board_python) -> None:
    """The paper's Table 2 on this machine: onnxruntime vs our engine.

    For each zoo model, or each model in --model-dir (input shapes from the
    folder's shapes.yaml, which scripts/fetch_models.py writes): onnxruntime
    (default optimisations, the better of 1 and 2 intra-op threads), the
    ArmNN-rule default plan, and the tuned plan,
    each timed in a fresh process (with its peak memory), in --rounds turns;
    an engine's time is the median of its rounds (each round's median is in
    OUT/compare.json).  Writes CSV and markdown, prints the markdown; the
    summary says whether a tuned plan slower than its default was so in every
    round or only in overlapping rounds; the last line,
    `geomean_vs_onnxruntime: R`, is onnxruntime's time over the tuned plan's,
    geometric mean (above 1: we are faster).
    A model that cannot be tuned or loaded is one line, and the others are
    still compared.

    With --engines, the engines users pick instead run too, each converted
    from the ONNX model by its own tools (cached in OUT/peers), batch 1, fp32,
    at 1 thread and at all threads, in its own process in the same rounds; its
    better setting is its time (both are in OUT/compare.json).  Each one's
    outputs are checked as `run --check` checks ours (against onnxruntime's,
    and where they differ, a float64 reference): a wrong one is marked WRONG
    and not counted.  The table gains a column per engine, the fastest engine
    and ours against it; `geomean_vs_fastest: R` comes before the last line.

    With --host, every engine runs on the board: ours in its launcher (tuned
    there), onnxruntime and the peers from their aarch64 wheels in a
    virtualenv there (--board-python), converted here and copied over; the
    thread settings are 1 and all the board's CPUs, onnxruntime's too.

    \b
    Examples:
      acltuner bench compare --model-dir models --trials 8
      acltuner bench compare --model-dir models --engines ort,openvino,ncnn,mnn
      acltuner bench compare --model-dir models --engines ort,ncnn,mnn \\
          --board odroid-n2plus --host odroid
    """
    from pathlib import Path

    from acltuner.bench import compare
    from acltuner.bench.peers import ENGINES, ONNXRUNTIME
    chosen = [e for e in engines.split(",") if e]
    unknown = [e for e in chosen if e not in ENGINES]
    if unknown:
        raise ValueError(f"--engines: unknown engine(s) {', '.join(unknown)}; the engines: "
                         f"{', '.join(ENGINES)}")
    if board_python and not host:
        raise ValueError("--board-python is the Python on the board of --host: give --host")
    out = Path(out_dir)
    compare.run(_chosen_models(models, model_dir, out), trials, repeat, out, board_name,
                Path(records_path) if records_path else out / "records.jsonl", rounds, realtime,
                round_ms, also_strict, list(dict.fromkeys(e for e in chosen if e != ONNXRUNTIME)),
                host, board_python)


@bench.command("ops")
@click.option("--cases", default="", metavar="A,B",
              help="Comma-separated case names (default: all; --list shows them).")
@click.option("--list", "list_cases", is_flag=True, help="List the cases and exit.")
@click.option("--trials", default=30, show_default=True, type=click.IntRange(1),
              help="Measurements per task for a case with a convolution, as the widened "
                   "set's `bench compare` tunes its models.")
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(1),
              help="Rounds per case, each in a fresh process; a time is the median of them.")
@click.option("--repeat", default=100, show_default=True, type=click.IntRange(1),
              help="Timed runs per engine and round.")
@click.option("--board", "board_name", default="host", show_default=True,
              help="Board to tune for (this machine).")
@click.option("--out", "out_dir", default="bench-results/ops", show_default=True,
              help="Folder for the cases' models, plans, records and ops.csv.")
@click.option("--realtime/--no-realtime", default=True, show_default=True,
              help="Time at the lowest real-time priority (SCHED_FIFO) where the system "
                   "allows it.")
def bench_ops(cases, list_cases, trials, rounds, repeat, board_name, out_dir, realtime) -> None:
    """The operations around the convolutions, one node at a time, against
    onnxruntime's time for the same node.

    Each case is one operation at a shape of a real model: the MatMuls,
    batched MatMuls, Softmax, LayerNorm and GELU of MobileViT, EfficientFormer
    and ConvNeXt, the dilated convolutions of DeepLabV3 and LR-ASPP, the
    grouped ones of ResNeXt and RegNet.  Our time is the node's in our
    profile, onnxruntime's its own profile's (the better of 1 and 2 threads);
    layout changes at the model's edges are left out on both sides.  Each
    input reaches the operation through a lead node (a Neg), as in a model:
    the lead nodes, which also take the run's start, are left out of the
    ratio and kept in ops.csv (lead_ours_ms, lead_ort_ms).  The last line,
    `ops_vs_onnxruntime: R`, is onnxruntime's time over ours, geometric mean
    over the cases (above 1: we are faster).

    \b
    Examples:
      acltuner bench ops
      acltuner bench ops --cases mobilevit.softmax,convnext.gelu --rounds 5
    """
    from pathlib import Path

    from acltuner.bench import ops
    if list_cases:
        for case in ops.CASES:
            click.echo(f"{case.name:36s} {case.model}")
        return
    chosen = [c for c in cases.split(",") if c]
    unknown = sorted(set(chosen) - {c.name for c in ops.CASES})
    if unknown:
        raise click.BadParameter(f"unknown case(s) {', '.join(unknown)}; see --list",
                                 param_hint="--cases")
    ops.run([c for c in ops.CASES if not chosen or c.name in chosen], trials, rounds, repeat,
            Path(out_dir), board_name, realtime)


@bench.command("interference")
@_model_set_options("bench-results/interference")
@click.option("--duty", default=1.0, show_default=True, type=click.FloatRange(0.05, 1.0),
              help="The share of every 10 ms the neighbour process is busy.")
@click.option("--balance", type=click.Choice(["adaptive", "strict"]), default="adaptive",
              show_default=True, help="How our plan's runs balance (acltuner run --balance).")
@click.option("--busy-cpu", type=click.IntRange(0), default=None,
              help="The neighbour's CPU [default: the last one].  CPU 0 is where the thread "
                   "that calls run drives every operation from.")
def bench_interference(models, model_dir, trials, repeat, round_ms, board_name, out_dir,
                       records_path, rounds, duty, balance, busy_cpu) -> None:
    """The tuned plan and onnxruntime beside a busy neighbour core.

    For each model: the tuned plan, onnxruntime on all cores and on one thread,
    each in its own process at normal priority, in --rounds turns, first
    quiet, then with a process pinned to the last CPU and busy --duty of every
    10 ms (a camera, decoder or OpenMP thread of the application; --busy-cpu
    picks another core).  Prints p50 and p90 per engine and condition.  For
    a model with nodes delegated to onnxruntime, its native nodes are also
    timed quiet, run for run in turns, with the segments run and with their
    outputs replayed: about 1.00x means the segments' threads leave the
    engine's workers alone.  The last line,
    `interference_slowdown: ours=X onnxruntime=Y`, is the geometric mean of
    loaded p50 over quiet p50, onnxruntime taking its better thread setting
    in each condition (lower is better).

    \b
    Examples:
      acltuner bench interference --model-dir models --trials 8
      acltuner bench interference --models resnet18,mobilenetv2 --duty 0.5
    """
    from pathlib import Path

    from acltuner.bench import interference
    out = Path(out_dir)
    interference.run(_chosen_models(models, model_dir, out), trials, duty, out, board_name,
                     Path(records_path) if records_path else out / "records.jsonl", balance,
                     rounds, repeat, round_ms, busy_cpu)


@bench.command("fuzz")
@click.option("--cases", default=2000, show_default=True, type=click.IntRange(1),
              help="Inputs to try, over all doors.")
@click.option("--seed", default=0, show_default=True,
              help="Seed of the generator: a run replays its cases' draws on any build.")
@click.option("--case", "only", default=None, type=click.IntRange(0), metavar="N",
              help="Run case N of the run alone (the number a failure line shows), to replay it.")
@click.option("--timeout", "timeout_s", default=20.0, show_default=True,
              type=click.FloatRange(min=0.1),
              help="Seconds one input may take before it counts as a hang.")
@click.option("--doors", default=",".join(["launcher", "onnx", "plan", "records", "board", "tuner",
                                            "pins"]),
              show_default=True, help="Comma-separated doors to fuzz.")
@click.option("--launcher", "launcher", default=None, metavar="CMD",
              help="The launcher to fuzz, as a command line (default: the installed one; "
                   "e.g. a sanitizer build's).")
def bench_fuzz(cases: int, seed: int, only: int | None, timeout_s: float, doors: str,
               launcher: str | None) -> None:
    """Damaged and hostile inputs through every door that reads outside data.

    \b
    Doors: ONNX models (acltuner tasks' loader: random bytes, truncated and
    bit-flipped models, external data outside the model's folder, huge and
    negative dims, wrong attribute types, cycles, duplicate names, opsets 1
    and 99, every extension); plans, records, board files, tuner.yaml and
    pins files (fields deleted, retyped, huge, NaN/Infinity, deeply nested,
    invalid UTF-8, duplicate keys); and the launcher's JSON-lines protocol (mutated,
    random, truncated and MB-long lines, huge numbers, invalid base64,
    tensors whose size disagrees with their shape, graph requests out of
    order, many objects opened), sent to one long-lived launcher.

    A file must load or be refused with one line (the CLI's errors); anything
    else is a traceback, as is a launcher answer that is not one JSON object
    with ok and, on refusal, a one-line error.  A launcher that dies is a
    crash, an input that takes longer than --timeout a hang (the launcher is
    restarted after both), a refused file that changed its folder a partial
    write.  A failure line names its case: `--seed S --case N` (with the
    run's --doors) runs that case alone, with the same random draws on any
    build (the plan and records doors mutate this build's seed files, whose
    measured times differ; a launcher case meets a fresh launcher, without
    what the cases before it left open).  The last line is
    `fuzz: cases=N tracebacks=T crashes=C hangs=H partial_writes=P`; the
    exit code is 1 if any of them is not 0.
    """
    import shlex

    from acltuner.bench.fuzz import run
    from acltuner.engine.launcher import default_launcher_path
    chosen = [d for d in doors.split(",") if d]
    unknown = sorted(set(chosen) - set(run.WEIGHTS))
    if unknown or not chosen:
        raise click.BadParameter(f"unknown door(s) {', '.join(unknown)}; the doors: "
                                 f"{', '.join(run.WEIGHTS)}", param_hint="--doors")
    if only is not None and only >= cases:
        raise click.BadParameter(f"case {only} is past the run's {cases} cases",
                                 param_hint="--case")
    command = shlex.split(launcher) if launcher else [default_launcher_path()]
    if run.run(cases, seed, timeout_s, command, chosen, only):
        raise SystemExit(1)
