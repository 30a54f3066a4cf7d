"""`acltuner bench compare`: the paper's Table 2 on this machine.

For each zoo model (or each model of a folder, with its input shapes from the
folder's shapes.yaml), side by side in one run: onnxruntime (default graph
optimisations, at 1 and at 2 intra-op threads, the better by its median over
the rounds), our engine with the
ArmNN-rule default plan, and our engine with the tuned plan.  Each is timed in
a fresh process of its own, so that its peak memory is its own, in rounds that
take the three in turn (a drift of the machine's speed reaches them alike);
an engine's time is the median of its rounds, and its spread (max - min) /
median of them.  With `realtime`, the timing
processes run at the lowest real-time priority (SCHED_FIFO) where the system
allows it, all three alike: the machine's other load then stays out of every
side of the comparison.  A tuned plan that runs every node as the default
plan does (the in-context check found no gain in the model) is marked
"same plan" and never counted as slower than the default.  The engines users
pick instead (`peers`: OpenVINO, ncnn, MNN) take their turns in the same
rounds, between onnxruntime's and ours, each in a process of its own.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from acltuner.atomic import write_atomic
from acltuner.bench.peers import ONNXRUNTIME
from acltuner.zoo import MODELS

if TYPE_CHECKING:
    from acltuner.bench.peers.board import Board
    from acltuner.bench.peers.cell import Here

# compare.json: the rows of the table, with every peer engine's cell in full.
COMPARE_SCHEMA = 1

_ORT_PROBE = """
import json, resource, statistics, sys, time
import numpy as np, onnxruntime as ort
path, threads, repeat, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
shapes = json.loads(sys.argv[5])
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0)
feed = {}
for inp in sess.get_inputs():
    dims = shapes.get(inp.name, inp.shape)
    kind = inp.type[len("tensor("):-1]
    feed[inp.name] = (rng.standard_normal(dims).astype(np.float32) if kind == "float"
                      else np.zeros(dims, dtype=np.dtype(kind)))
for _ in range(warmup):
    sess.run(None, feed)
times = []
for _ in range(repeat):
    t = time.perf_counter(); sess.run(None, feed); times.append(time.perf_counter() - t)
print(json.dumps({"median_ms": 1e3 * statistics.median(times),
                  "p90_ms": 1e3 * float(np.percentile(times, 90)),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _fifo() -> None:
    """In the child before exec: the lowest SCHED_FIFO priority."""
    lowest = os.sched_get_priority_min(os.SCHED_FIFO)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(lowest))


def realtime_allowed() -> bool:
    try:
        subprocess.run([sys.executable, "-c", "pass"], preexec_fn=_fifo, check=True)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def _call(cmd: list[str], realtime: bool = False) -> str:
    """Runs cmd (at real-time priority if `realtime`); its stdout, or a
    ValueError with the last line it printed on stderr."""
    out = subprocess.run(cmd, capture_output=True, text=True,
                         preexec_fn=_fifo if realtime else None)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"'{' '.join(cmd[2:5])} ...' failed: {last}")
    return out.stdout


def _json_run(cmd: list[str], realtime: bool = False) -> dict:
    return json.loads(_call(cmd, realtime).strip().splitlines()[-1])


def _acltuner(*args: str) -> list[str]:
    from acltuner.board.registry import wrappers_allowed
    return [sys.executable, "-m", "acltuner.cli",
            *(["--allow-wrapper"] if wrappers_allowed() else []), *args]


def onnxruntime_run(model: Path, threads: int, repeat: int, warmup: int,
                    shapes: dict | None = None, realtime: bool = False) -> dict:
    """onnxruntime on `threads` intra-op threads, in a process of its own:
    {"median_ms", "p90_ms", "peak_rss_mb"}."""
    return _json_run([sys.executable, "-c", _ORT_PROBE, str(model), str(threads), str(repeat),
                      str(warmup), json.dumps(shapes or {})], realtime)




def _rounds(timers: dict, rounds: int) -> dict[str, dict]:
    """Each timer (name -> () -> {"median_ms", "peak_rss_mb"}, or None when it
    failed, after which it is left out) run once per round, in turns; per
    name the median of its rounds, their spread
    ((max - min) / median: how stable the engine is from run to run) and its
    largest peak."""
    runs: dict[str, list[dict]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            if None not in runs[name]:
                runs[name].append(timer())
    out = {}
    for name, rs in runs.items():
        if None in rs:  # a peer engine that failed: its cell says why
            continue
        medians = [r["median_ms"] for r in rs]
        median = statistics.median(medians)
        out[name] = {"median_ms": median, "spread": (max(medians) - min(medians)) / median,
                     "rounds_ms": medians, "peak_rss_mb": max(r["peak_rss_mb"] for r in rs)}
    return out


def below_default(rows: list[dict]) -> str:
    """The models whose tuned plan timed slower than their default plan,
    each with whether it did so in every round or only in the median of
    rounds that overlap (this host's noise can do that)."""
    def how(r: dict) -> str:
        every = min(r["tuned_rounds_ms"]) > max(r["default_rounds_ms"])
        return f"{r['model']} ({'in every round' if every else 'the rounds overlap'})"
    slower = [how(r) for r in rows if r["tuned_vs_default"] < 1.0 and not r["tuned_is_default"]]
    return ", ".join(slower) or "none"


def _ms(ms: float) -> str:
    """Three significant digits at most, so a 40 µs model does not read 0.0."""
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.3g}"


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def zoo_models(names: list[str], out_dir: Path) -> list[tuple[str, Path, dict]]:
    """(name, file, input shapes) of zoo models, written into out_dir when missing."""
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        if not (out_dir / f"{name}.onnx").exists():
            _call(_acltuner("zoo", name, "-o", str(out_dir / f"{name}.onnx")))
    return [(name, out_dir / f"{name}.onnx", {}) for name in names]


def folder_models(folder: Path) -> list[tuple[str, Path, dict]]:
    """(name, file, input shapes) of every .onnx in folder; the shapes from its
    shapes.yaml ({"schema": 1, "models": {name: {input: dims}}}), if any."""
    import yaml
    shapes_file = folder / "shapes.yaml"
    shapes = (yaml.safe_load(shapes_file.read_text()) or {}).get("models", {}) \
        if shapes_file.is_file() else {}
    models = [(p.stem, p, shapes.get(p.stem, {})) for p in sorted(folder.glob("*.onnx"))]
    if not models:
        raise ValueError(f"{folder}: no .onnx models in it")
    return models


def same_configs(a: Path, b: Path) -> bool:
    """Whether two plans run every node with the same config: the in-context
    check writes the default plan's configs when tuning won nothing in the
    model, and the two then differ only by the noise of timing one plan twice."""
    from acltuner.plan import load_plan
    return [(n.node, n.config) for n in load_plan(a).nodes] == \
        [(n.node, n.config) for n in load_plan(b).nodes]


# A round of a model of tens of microseconds would otherwise be a millisecond
# of timing, and its ratios noise.
_MAX_RUNS = 5000


def runs_per_round(ms: float, repeat: int, round_ms: float) -> int:
    """Timed runs per round for a model taking about `ms`: at least `repeat`,
    and enough to fill round_ms (at most _MAX_RUNS)."""
    return max(repeat, min(_MAX_RUNS, math.ceil(round_ms / max(ms, 1e-3))))


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What every model of one `run` is compared with."""
    trials: int
    repeat: int
    out_dir: Path
    board: str
    records: Path
    rounds: int
    realtime: bool
    round_ms: float
    also_strict: bool
    peers: Sequence[str]
    host: str | None
    place: Here | Board
    ort_threads: Sequence[int]


def _compare_one(s: _Setup, name: str, model: Path, shapes: dict) -> tuple[dict, dict]:
    """One model's row of the table and its peers' cells (engine -> Cell);
    a ValueError where a step refuses it."""
    from acltuner.bench.peers import cell as peer_cell
    from acltuner.bench.peers.board import Board
    on_board = ["--host", s.host, "--board", s.board] if s.host else []
    default_plan, tuned_plan = s.out_dir / f"{name}.default.json", s.out_dir / f"{name}.tuned.json"
    common = ["--board", s.board, "--records", str(s.records),
              *(["--host", s.host] if s.host else []),
              *(f"--input-shape={i}={','.join(map(str, d))}" for i, d in shapes.items())]
    _call(_acltuner("tune", str(model), "-o", str(default_plan), "--strategy", "default",
                    *common))
    click.echo(f"tuning {name} ({s.trials} trials per task)...", err=True)
    _call(_acltuner("tune", str(model), "-o", str(tuned_plan), "--trials", str(s.trials),
                    *common))
    tuning_s = json.loads(tuned_plan.read_text())["tuning"]["wall_s"]
    probe = _json_run(_acltuner("run", str(default_plan), "--json", "--repeat", "3",
                                "--warmup", "1", *on_board), s.realtime)["median_ms"]
    runs = runs_per_round(probe, s.repeat, s.round_ms)
    timing = ["--json", "--repeat", str(runs), "--warmup", "3", *on_board]

    def ort_timer(threads: int):
        if isinstance(s.place, Board):
            return lambda: s.place.onnxruntime_run(_ORT_PROBE, model, threads, runs, 3, shapes)
        return lambda: onnxruntime_run(model, threads, runs, 3, shapes, s.realtime)
    # onnxruntime's better thread setting by its median over the rounds, so
    # that its spread is one setting's, as ours is one plan's.
    timers = {f"ort_{t}t": ort_timer(t) for t in s.ort_threads}
    # The peers' turns come between onnxruntime's and ours, each in a process
    # of its own that has exited before the next turn starts.
    if s.peers:
        io_path = peer_cell.reference(model, shapes, s.out_dir / "peers" / name / "io.npz")
    cells: dict[str, peer_cell.Cell] = {}
    for engine in s.peers:
        workdir = s.out_dir / "peers" / name / engine
        cell = cells[engine] = peer_cell.prepare(engine, model, io_path, workdir, s.place)
        if cell.problem:
            click.echo(f"  {name}: {cell.engine}: {cell.problem}", err=True)
        timers.update(peer_cell.timers(cell, io_path, workdir, runs, s.place))
    timers["default"] = lambda: _json_run(_acltuner("run", str(default_plan), *timing),
                                          s.realtime)
    timers["tuned"] = lambda: _json_run(_acltuner("run", str(tuned_plan), *timing), s.realtime)
    if s.also_strict:
        timers["strict"] = lambda: _json_run(
            _acltuner("run", str(tuned_plan), *timing, "--balance", "strict"), s.realtime)
    times = _rounds(timers, s.rounds)
    for cell in cells.values():
        cell.times = {t: times[f"{cell.engine}_{t}t"] for t in s.place.threads()
                      if f"{cell.engine}_{t}t" in times}
    ort = min((times[f"ort_{t}t"] for t in s.ort_threads), key=lambda t: t["median_ms"])
    default, tuned = times["default"], times["tuned"]
    row = {
        "model": name, "onnxruntime_ms": ort["median_ms"], "default_ms": default["median_ms"],
        "tuned_ms": tuned["median_ms"],
        "tuned_vs_onnxruntime": ort["median_ms"] / tuned["median_ms"],
        "tuned_vs_default": default["median_ms"] / tuned["median_ms"],
        "tuned_is_default": same_configs(tuned_plan, default_plan), "tuning_s": tuning_s,
        "onnxruntime_spread": ort["spread"], "tuned_spread": tuned["spread"],
        "onnxruntime_rounds_ms": ort["rounds_ms"], "default_rounds_ms": default["rounds_ms"],
        "tuned_rounds_ms": tuned["rounds_ms"],
        "onnxruntime_rss_mb": ort["peak_rss_mb"], "default_rss_mb": default["peak_rss_mb"],
        "tuned_rss_mb": tuned["peak_rss_mb"],
        **({"tuned_strict_ms": times["strict"]["median_ms"],
            "tuned_strict_spread": times["strict"]["spread"]} if s.also_strict else {})}
    click.echo(f"  {name}: onnxruntime {_ms(ort['median_ms'])} ms, default "
               f"{_ms(default['median_ms'])} ms, tuned {_ms(tuned['median_ms'])} ms "
               f"({runs} runs per round)", err=True)
    if s.peers:
        row.update(_fastest(row, cells))
    return row, cells


def run(models: list[tuple[str, Path, dict]], trials: int, repeat: int, out_dir: Path,
        board: str, records: Path, rounds: int = 3, realtime: bool = True,
        round_ms: float = 300.0, also_strict: bool = False, peers: Sequence[str] = (),
        host: str | None = None, board_python: str | None = None) -> float:
    """With `host`, everything is timed on that board (`board` its board
    file): ours in its launcher, onnxruntime and the peers with
    `board_python` there (peers.board)."""
    from acltuner.bench.peers import cell as peer_cell
    from acltuner.bench.peers import missing
    from acltuner.bench.peers.board import DEFAULT_PYTHON, Board
    out_dir.mkdir(parents=True, exist_ok=True)
    if realtime and not realtime_allowed():
        click.echo("real-time priority refused here: timing at normal priority", err=True)
        realtime = False
    absent = {engine: missing(engine) for engine in peers}
    for line in filter(None, absent.values()):
        click.echo(line, err=True)
    peers = [engine for engine in peers if not absent[engine]]
    place = Board(host, board_python or DEFAULT_PYTHON) if host else peer_cell.Here(realtime)
    # Here onnxruntime's settings stay 1 and 2 threads, as this bench always timed it.
    ort_threads = place.threads() if host else (1, 2)
    setup = _Setup(trials, repeat, out_dir, board, records, rounds, realtime, round_ms,
                   also_strict, peers, host, place, ort_threads)
    rows: list[dict] = []
    cells: dict[str, dict[str, peer_cell.Cell]] = {}
    skipped: dict[str, str] = {}
    for name, model, shapes in models:
        try:
            row, cells[name] = _compare_one(setup, name, model, shapes)
            rows.append(row)
        except ValueError as e:
            # A model that one step refuses (a tune that fails, a file onnxruntime
            # cannot load) is one line; the other models are still compared.
            skipped[name] = str(e)
            click.echo(f"  {name}: skipped: {e}", err=True)
    if not rows:
        raise ValueError("no model could be compared: "
                         + "; ".join(f"{n}: {why}" for n, why in skipped.items()))
    with_cells = [{**r, "peers": {e: c.to_json() for e, c in cells[r["model"]].items()}}
                  for r in rows]
    data = {"schema": COMPARE_SCHEMA, "engines": [ONNXRUNTIME, *absent],
            "missing": {e: line for e, line in absent.items() if line},
            "host": host, "threads": list(place.threads()), "ort_threads": list(ort_threads),
            "rows": with_cells, "skipped": skipped}
    write_atomic(out_dir / "compare.json", json.dumps(data, indent=1) + "\n")
    if peers:
        _chart(with_cells, out_dir)
    text = io.StringIO(newline="")
    # The rounds' lists stay in compare.json.
    columns = [k for k, v in rows[0].items() if not isinstance(v, list)]
    writer = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(out_dir / "compare.csv", text.getvalue())
    vs_ort = _geomean([r["tuned_vs_onnxruntime"] for r in rows])
    vs_default = _geomean([r["tuned_vs_default"] for r in rows])
    lines = ["| model | onnxruntime ms | default plan ms | tuned ms | tuned vs ORT | tuned vs "
             "default | tuning s | ORT peak MB | default peak MB | tuned peak MB | ORT spread "
             "| tuned spread |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {_ms(r['onnxruntime_ms'])} | {_ms(r['default_ms'])} | "
              f"{_ms(r['tuned_ms'])} | {r['tuned_vs_onnxruntime']:.2f}x | "
              f"{r['tuned_vs_default']:.2f}x{' (same plan)' if r['tuned_is_default'] else ''} | "
              f"{r['tuning_s']:.0f} | "
              f"{r['onnxruntime_rss_mb']:.0f} | {r['default_rss_mb']:.0f} | "
              f"{r['tuned_rss_mb']:.0f} | {100 * r['onnxruntime_spread']:.1f}% | "
              f"{100 * r['tuned_spread']:.1f}% |" for r in rows]
    lines.append(f"| geomean | | | | {vs_ort:.2f}x | {vs_default:.2f}x | | | | | | |")
    if peers:
        lines = _with_peers(lines, rows, cells, peers)
    table = "\n".join(lines)
    write_atomic(out_dir / "compare.md", table + "\n")
    click.echo(table)
    if skipped:
        click.echo(f"skipped: {', '.join(skipped)} (why: OUT/compare.json)")
    wider = [r["model"] for r in rows if r["tuned_spread"] > r["onnxruntime_spread"]]
    click.echo(f"spread of the {rounds} round medians wider than onnxruntime's: "
               f"{', '.join(wider) or 'none'}")
    slowest = min(rows, key=lambda r: r["tuned_vs_onnxruntime"])
    same = [r["model"] for r in rows if r["tuned_is_default"]]
    click.echo(f"slowest vs onnxruntime: {slowest['model']} "
               f"{slowest['tuned_vs_onnxruntime']:.2f}x; "
               f"tuned slower than default: {below_default(rows)}"
               + (f" (tuned plan is the default plan: {', '.join(same)})" if same else ""))
    if also_strict:
        for r in rows:
            click.echo(f"  {r['model']}: tuned adaptive {_ms(r['tuned_ms'])} ms (spread "
                       f"{100 * r['tuned_spread']:.1f}%), strict {_ms(r['tuned_strict_ms'])} ms "
                       f"(spread {100 * r['tuned_strict_spread']:.1f}%)")
        click.echo(f"adaptive_vs_strict: "
                   f"{_geomean([r['tuned_strict_ms'] / r['tuned_ms'] for r in rows]):.3f}")
    if peers:
        wrong = [f"{c.engine} on {m} ({c.wrong})" for m, cs in cells.items() for c in cs.values()
                 if c.wrong]
        click.echo(f"wrong outputs, not counted: {'; '.join(wrong) or 'none'}")
        click.echo(f"geomean_vs_fastest: "
                   f"{_geomean([r['tuned_vs_fastest'] for r in rows]):.3f}")
    click.echo(f"geomean_vs_onnxruntime: {vs_ort:.3f}")
    return vs_ort


def _chart(rows: list[dict], out_dir: Path) -> None:
    """OUT/engines.png, where matplotlib is installed (the `report` extra)."""
    from acltuner.report import figures
    from acltuner.report.gather import ReportError
    try:
        figures.engines(rows, out_dir)
    except ReportError:
        click.echo("no engines.png: it is drawn with matplotlib: pip install "
                   "'acltuner[report]'", err=True)


def _fastest(row: dict, cells: dict) -> dict:
    """The row's columns of the peers: each one's time (None when it has
    none), and the fastest engine with a right output, onnxruntime included."""
    counted = {ONNXRUNTIME: row["onnxruntime_ms"],
               **{e: c.median_ms for e, c in cells.items() if c.counted}}
    fastest = min(counted, key=counted.__getitem__)
    return {**{f"{e}_ms": c.median_ms for e, c in cells.items()}, "fastest": fastest,
            "fastest_ms": counted[fastest], "tuned_vs_fastest": counted[fastest] / row["tuned_ms"]}


def _peer_cell(cell) -> str:
    if cell.problem:
        return cell.problem.replace("|", "/")
    return f"{_ms(cell.median_ms)} ({cell.best_threads}t)" + (" WRONG" if cell.wrong else "")


def _with_peers(lines: list[str], rows: list[dict], cells: dict, peers: list[str]) -> list[str]:
    """The table with a column per peer engine, the fastest one and ours
    against it; a wrong output is marked WRONG and never the fastest."""
    head, rule, *body, last = lines
    vs_fastest = _geomean([r["tuned_vs_fastest"] for r in rows])
    return [head + "".join(f" {e} ms |" for e in peers) + " fastest | tuned vs fastest |",
            rule + "---|" * (len(peers) + 2),
            *(line + "".join(f" {_peer_cell(cells[r['model']][e])} |" for e in peers)
              + f" {r['fastest']} | {r['tuned_vs_fastest']:.2f}x |"
              for line, r in zip(body, rows)),
            last + " |" * len(peers) + f" | {vs_fastest:.2f}x |"]
