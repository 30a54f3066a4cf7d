"""`acltuner bench interference`: a plan's latency beside another busy thread.

On a board the application has other threads (a camera, a decoder, a UI, an
OpenMP pool), and one of them can hold a core the plan runs on.  For each
model, side by side in one run: the tuned plan (`acltuner run`, balance as
given) and onnxruntime on all cores and on one thread, each in a process of
its own at normal priority, first quiet, then with a competing process pinned
to one core (the last, unless told) and busy `duty` of every 10 ms.  Engines take turns in
rounds within each condition; an engine's p50 and p90 are the medians of its
rounds'.  An engine's slowdown is its loaded p50 over its quiet p50,
onnxruntime taking its better thread setting in each condition.  A plan with
delegated segments also has its native nodes timed beside them, quiet
(acltuner.bench.delegated).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click

from acltuner.bench.compare import (_acltuner, _call, _geomean, _json_run, _ms, onnxruntime_run,
                                    runs_per_round)

PERIOD_S = 0.010

_BUSY = """
import os, sys, time
cpu, duty, period = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
os.sched_setaffinity(0, {cpu})
print("ready", flush=True)
while True:
    start = time.perf_counter()
    while time.perf_counter() - start < duty * period:
        pass
    if duty < 1.0:
        time.sleep(period - (time.perf_counter() - start) % period)
"""


class Neighbour:
    """A process pinned to `cpu`, busy `duty` of every 10 ms, for the with-block."""

    def __init__(self, cpu: int, duty: float):
        self.cpu, self.duty = cpu, duty

    def __enter__(self) -> "Neighbour":
        self.proc = subprocess.Popen([sys.executable, "-c", _BUSY, str(self.cpu), str(self.duty),
                                      str(PERIOD_S)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None  # stdout=PIPE
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.kill()
            raise ValueError(f"the busy neighbour could not start on CPU {self.cpu}")
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


def _condition(timers: dict, rounds: int) -> dict[str, dict[str, float]]:
    """Each timer run once per round, in turns: per name the median of its
    rounds' p50 and p90."""
    runs: dict[str, list[dict]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            runs[name].append(timer())
    return {name: {"p50": statistics.median(r["median_ms"] for r in rs),
                   "p90": statistics.median(r["p90_ms"] for r in rs)} for name, rs in runs.items()}


def measure(model: Path, shapes: dict, plan: Path, balance: str, cpus: int, busy_cpu: int,
            duty: float, rounds: int, repeat: int, round_ms: float) -> dict:
    """{condition: {engine: {"p50", "p90"}}} for one model's plan, and under
    "delegated" its native nodes' times beside its delegated segments
    (acltuner.bench.delegated; None when nothing is delegated)."""
    probe = _json_run(_acltuner("run", str(plan), "--json", "--repeat", "3", "--warmup", "1"))
    runs = runs_per_round(probe["median_ms"], repeat, round_ms)
    timers = {
        "ours": lambda: _json_run(_acltuner("run", str(plan), "--json", "--repeat", str(runs),
                                            "--warmup", "3", "--balance", balance)),
        f"onnxruntime_{cpus}t": lambda: onnxruntime_run(model, cpus, runs, 3, shapes),
        "onnxruntime_1t": lambda: onnxruntime_run(model, 1, runs, 3, shapes),
    }
    quiet = _condition(timers, rounds)
    # Quiet, so that nothing but the segments' own threads is beside the native nodes.
    delegated = _json_run([sys.executable, "-m", "acltuner.bench.delegated", str(plan),
                           str(runs * rounds)]) if probe["delegated"] else None
    with Neighbour(busy_cpu, duty):
        time.sleep(0.1)
        loaded = _condition(timers, rounds)
    return {"quiet": quiet, "loaded": loaded, "delegated": delegated}


def _ort_best(condition: dict) -> dict:
    return min((v for k, v in condition.items() if k.startswith("onnxruntime")),
               key=lambda v: v["p50"])


def run(models: list[tuple[str, Path, dict]], trials: int, duty: float, out_dir: Path,
        board: str, records: Path, balance: str = "adaptive", rounds: int = 3,
        repeat: int = 20, round_ms: float = 300.0,
        busy_cpu: int | None = None) -> tuple[float, float]:
    """busy_cpu: the neighbour's CPU (default: the last one this process may use)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cpus = len(os.sched_getaffinity(0))
    if busy_cpu is None:
        busy_cpu = max(os.sched_getaffinity(0))
    elif busy_cpu not in os.sched_getaffinity(0):
        raise ValueError(f"--busy-cpu {busy_cpu}: not a CPU this process may use "
                         f"({', '.join(map(str, sorted(os.sched_getaffinity(0))))})")
    rows = []
    for name, model, shapes in models:
        plan = out_dir / f"{name}.tuned.json"
        # Tuned every time, as bench compare does (the records make a repeat
        # quick): a plan left from another engine build would not run.
        click.echo(f"tuning {name} ({trials} trials per task)...", err=True)
        _call(_acltuner("tune", str(model), "-o", str(plan), "--trials", str(trials),
                        "--board", board, "--records", str(records),
                        *(f"--input-shape={i}={','.join(map(str, d))}"
                          for i, d in shapes.items())))
        m = measure(model, shapes, plan, balance, cpus, busy_cpu, duty, rounds, repeat, round_ms)
        delegated = m.pop("delegated")
        ours_q, ours_l = m["quiet"]["ours"], m["loaded"]["ours"]
        ort_q, ort_l = _ort_best(m["quiet"]), _ort_best(m["loaded"])
        rows.append({"model": name, **{f"{cond}_{engine}_{p}": v[p] for cond, c in m.items()
                                       for engine, v in c.items() for p in ("p50", "p90")},
                     "ours_slowdown": ours_l["p50"] / ours_q["p50"],
                     "onnxruntime_slowdown": ort_l["p50"] / ort_q["p50"],
                     "ours_loaded_p90_over_quiet_p50": ours_l["p90"] / ours_q["p50"],
                     "delegated_neighbours_ratio": delegated and delegated["ratio"]})
        click.echo(f"  {name}: ours {_ms(ours_q['p50'])} -> {_ms(ours_l['p50'])} ms "
                   f"(p90 {_ms(ours_l['p90'])}), onnxruntime {_ms(ort_q['p50'])} -> "
                   f"{_ms(ort_l['p50'])} ms", err=True)
        if delegated:
            click.echo(f"  {name}: native nodes beside its delegated segments "
                       f"{_ms(delegated['native_ms_run'])} ms, "
                       f"{_ms(delegated['native_ms_replayed'])} with the segments replayed",
                       err=True)
    (out_dir / "interference.json").write_text(json.dumps(rows, indent=1) + "\n")
    engines = ["ours", f"onnxruntime_{cpus}t", "onnxruntime_1t"]
    lines = [f"busy neighbour: CPU {busy_cpu}, busy {duty * PERIOD_S * 1e3:g} of every "
             f"{PERIOD_S * 1e3:g} ms; "
             f"ours balance={balance}; p50 / p90 ms",
             "| model | " + " | ".join(f"{e} quiet | {e} loaded" for e in engines)
             + " | ours slowdown | ORT slowdown | ours loaded p90 / quiet p50 |",
             "|---" * (2 + 2 * len(engines) + 2) + "|"]
    for r in rows:
        cells = [f"{_ms(r[f'{c}_{e}_p50'])} / {_ms(r[f'{c}_{e}_p90'])}"
                 for e in engines for c in ("quiet", "loaded")]
        lines.append(f"| {r['model']} | " + " | ".join(cells) +
                     f" | {r['ours_slowdown']:.2f}x | {r['onnxruntime_slowdown']:.2f}x | "
                     f"{r['ours_loaded_p90_over_quiet_p50']:.2f}x |")
    click.echo("\n".join(lines))
    ours = _geomean([r["ours_slowdown"] for r in rows])
    ort = _geomean([r["onnxruntime_slowdown"] for r in rows])
    worst = max(rows, key=lambda r: r["ours_loaded_p90_over_quiet_p50"])
    click.echo(f"worst loaded p90 / quiet p50 (ours): {worst['model']} "
               f"{worst['ours_loaded_p90_over_quiet_p50']:.2f}x")
    beside = [f"{r['model']} {r['delegated_neighbours_ratio']:.2f}x" for r in rows
              if r["delegated_neighbours_ratio"]]
    click.echo("native nodes beside delegated segments, quiet, run / replayed: "
               + (", ".join(beside) or "nothing delegated"))
    click.echo(f"interference_slowdown: ours={ours:.3f} onnxruntime={ort:.3f}")
    return ours, ort
