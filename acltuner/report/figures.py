"""The report's figures, drawn with matplotlib's Agg canvas into PNG files.

matplotlib is an optional dependency (`pip install 'acltuner[report]'`), so it
is imported here only, when a report is written.  Every figure's size in
pixels is fixed by what it shows (tasks, layers, cores) before it is drawn:
the page gives each image its size, and the tests check the files have it.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from acltuner.report import output
from acltuner.report.cost_fit import RoundFit
from acltuner.report.gather import ReportError, Tuned
from acltuner.report.model_time import ModelTime

DPI = 100
CURVE_COLUMNS = 3
# How the figures mark what the in-context check sent back to its default.
REVERTED_HATCH = "//"
REVERTED_LABEL = "sent back to the default in the model"
# Every figure a report may draw, by the name of its file.
NAMES = ("tuning_curves", "layer_speedups", "model_time", "placement", "cost_model", "compare")


@dataclass(frozen=True)
class Figure:
    name: str     # also the file's stem
    title: str
    width: int    # pixels
    height: int

    @property
    def file(self) -> str:
        return f"{self.name}.png"

    def to_dict(self) -> dict:
        return {"file": self.file, "title": self.title, "width": self.width,
                "height": self.height}


def curves_size(ntasks: int) -> tuple[int, int]:
    cols = min(CURVE_COLUMNS, ntasks)
    return 420 * cols, 320 * math.ceil(ntasks / cols)


def layers_size(nlayers: int) -> tuple[int, int]:
    return max(700, 50 * nlayers + 250), 500


def model_time_size() -> tuple[int, int]:
    return 800, 360


def placement_size(nlayers: int, ncores: int) -> tuple[int, int]:
    return 60 * ncores + 300, max(300, 30 * nlayers + 150)


def cost_model_size() -> tuple[int, int]:
    return 700, 600


def compare_size(nlayers: int) -> tuple[int, int]:
    return layers_size(nlayers)[0], 700


def require_matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure
    except ImportError:
        raise ReportError("acltuner report draws with matplotlib: pip install "
                          "'acltuner[report]'") from None
    return MplFigure, FigureCanvasAgg


def _canvas(size: tuple[int, int], **subplots):
    MplFigure, FigureCanvasAgg = require_matplotlib()
    fig = MplFigure(figsize=(size[0] / DPI, size[1] / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(**subplots) if subplots else fig.subplots()


def _save(fig, folder: Path, name: str, title: str, size: tuple[int, int]) -> Figure:
    figure = Figure(name, title, *size)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=DPI)
    output.write(folder / figure.file, png.getvalue())
    return figure


def _colours(labels: list[str]) -> dict[str, tuple]:
    """A distinct colour per label, the same label the same colour everywhere."""
    from matplotlib import colormaps
    cmap = colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {label: cmap(i % cmap.N) for i, label in enumerate(labels)}


def tuning_curves(tuned: Tuned, curves: pd.DataFrame, order: list[str],
                  folder: Path) -> Figure:
    tasks = [t for t in order if t in set(curves["task"])]
    size = curves_size(len(tasks))
    cols = min(CURVE_COLUMNS, len(tasks))
    fig, axes = _canvas(size, nrows=math.ceil(len(tasks) / cols), ncols=cols, squeeze=False)
    strategies = _colours(sorted(set(curves["strategy"])))
    default_ms = tuned.nodes.groupby("task")["default_ms"].first()
    names = tuned.task_nodes
    reverted = set(tuned.nodes["task"][tuned.nodes["reverted"].notna()])
    for ax, task in zip(axes.flat, tasks):
        mine = curves[curves["task"] == task]
        for strategy, rows in mine.groupby("strategy"):
            ax.step(rows["n"], rows["best_ms"], where="post", color=strategies[strategy],
                    label=strategy)
        if not math.isnan(default_ms.get(task, math.nan)):
            ax.axhline(default_ms[task], color="black", linestyle="--", linewidth=1,
                       label="default")
        ax.set_title(names[task] + (f" ({REVERTED_LABEL})" if task in reverted else ""),
                     fontsize=9)
        ax.set_xlabel("measurements", fontsize=8)
        ax.set_ylabel("best so far (ms)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    return _save(fig, folder, "tuning_curves", "Best time so far per task", size)


def layer_speedups(tuned: Tuned, folder: Path) -> Figure:
    nodes = tuned.nodes
    size = layers_size(len(nodes))
    fig, ax = _canvas(size)
    colours = _colours(list(dict.fromkeys(nodes["chosen"])))
    x = np.arange(len(nodes))
    speedup = nodes["speedup"].fillna(0.0)
    reverted = nodes["reverted"].notna()
    bars = ax.bar(x, speedup, color=[colours[c] for c in nodes["chosen"]], edgecolor="black",
                  linewidth=0.5)
    for bar, sent_back in zip(bars, reverted):
        if sent_back:
            bar.set_hatch(REVERTED_HATCH)
    for xi, s, p in zip(x, speedup, nodes["placement"]):
        ax.annotate(p, (xi, s), xytext=(0, 2), textcoords="offset points", ha="center",
                    va="bottom", fontsize=7, rotation=90)
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_xticks(x, nodes["node"], rotation=90, fontsize=8)
    ax.set_ylabel("speedup over the default")
    ax.margins(y=0.2)
    handles = [_patch(colours[c]) for c in colours]
    names = list(colours)
    if reverted.any():
        handles.append(_patch("white", REVERTED_HATCH))
        names.append(REVERTED_LABEL)
    ax.legend(handles, names, fontsize=7, title="algorithm / micro-kernel",
              title_fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, folder, "layer_speedups",
                 "Speedup of each layer over the default, with the config it runs (above "
                 "the bars: per-core weights; hatched: sent back to the default)", size)


def _patch(colour, hatch: str = ""):
    from matplotlib.patches import Patch
    return Patch(facecolor=colour, hatch=hatch, edgecolor="black", linewidth=0.5)


def model_time(time: ModelTime, folder: Path) -> Figure:
    """Bars that compare in pairs, top to bottom: whole runs with whole runs,
    then the sums of each profile's nodes (ours by op kind) with each other."""
    size = model_time_size()
    fig, ax = _canvas(size)
    colours = _colours(list(time.by_kind["kind"]))
    bars: list[tuple[str, list[tuple[str, float, str | tuple]]]] = [
        ("acltuner\nwhole run", [("acltuner (whole run)", time.median_ms, "black")])]
    if time.ort_ms is not None:
        bars.append(("onnxruntime\nwhole run", [("onnxruntime", time.ort_ms, "grey")]))
    whole_runs = len(bars)
    bars.append(("acltuner\nsum of nodes", [(kind, ms, colours[kind]) for kind, ms
                                             in zip(time.by_kind["kind"], time.by_kind["ms"])]))
    if time.ort_node_ms is not None:
        bars.append(("onnxruntime\nsum of nodes", [("onnxruntime", time.ort_node_ms, "grey")]))
    top = len(bars) - 1
    for i, (_, parts) in enumerate(bars):
        left = 0.0
        for label, ms, colour in parts:
            ax.barh(top - i, ms, left=left, color=colour, label=label)
            left += ms
        ax.annotate(f"{left:.3f} ms", (left, top - i), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks([top - i for i in range(len(bars))], [name for name, _ in bars], fontsize=8)
    ax.axhline(top - whole_runs + 0.5, color="black", linewidth=0.5, linestyle=":")
    ax.set_xlabel("ms")
    ax.margins(x=0.15)
    handles, labels = ax.get_legend_handles_labels()
    once = dict(zip(labels, handles))  # onnxruntime's two bars: one entry
    ax.legend(list(once.values()), list(once), fontsize=7, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    return _save(fig, folder, "model_time", "Model time: whole runs, then the sums of the "
                 "per-node times", size)


def placement_map(tuned: Tuned, shares: pd.DataFrame, folder: Path) -> Figure:
    size = placement_size(*shares.shape)
    fig, ax = _canvas(size)
    image = ax.imshow(shares.to_numpy(), aspect="auto", cmap="viridis", vmin=0.0,
                      vmax=1.0)
    weights = [n.config.core_weights for n in tuned.plan.nodes]
    for row, ws in enumerate(weights):
        for col, w in enumerate(ws):
            ax.text(col, row, str(w), ha="center", va="center", fontsize=7,
                    color="white" if shares.iat[row, col] < 0.5 else "black")
    board = tuned.board
    clusters = board.cluster_of
    ax.set_xticks(range(shares.shape[1]),
                  [f"cpu{c}\n{board.clusters[clusters[c]].name}" if clusters[c] >= 0
                   else f"cpu{c}" for c in shares.columns], fontsize=7)
    ax.set_yticks(range(shares.shape[0]), list(shares.index), fontsize=7)
    fig.colorbar(image, ax=ax, label="share of the layer's work")
    return _save(fig, folder, "placement",
                 "Per-core weights of each layer (numbers: the weights; colour: the share)",
                 size)


def cost_model(fits: list[RoundFit], labels: dict[str, str], folder: Path) -> Figure:
    """labels: each task's name in the legend (its nodes)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    size = cost_model_size()
    fig, ax = _canvas(size)
    colours = _colours([f.task for f in fits])
    for fit in fits:
        rho = "n/a" if fit.spearman is None else f"{fit.spearman:.2f}"
        ax.scatter(fit.frame["measured_ms"], fit.frame["predicted_ms"],
                   color=colours[fit.task], s=18, label=f"{labels[fit.task]} (rho {rho})")
    values = pd.concat([pd.concat([f.frame["measured_ms"], f.frame["predicted_ms"]])
                        for f in fits])
    values = values[values > 0]
    lo, hi = values.min() / 1.5, values.max() * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, linestyle="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        # Times span less than a decade on small models: ticks at 1, 2 and 5
        # of each decade, written plainly; matplotlib's minor labels overlap.
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured (ms)")
    ax.set_ylabel("predicted (ms)")
    ax.legend(fontsize=6, loc="upper left")
    return _save(fig, folder, "cost_model",
                 "Cost model: predicted vs measured, last round of each task", size)


def compare(a: Tuned, b: Tuned, joined: pd.DataFrame, folder: Path) -> Figure:
    size = compare_size(len(joined))
    fig, (top, bottom) = _canvas(size, nrows=2, sharex=True)
    names = Path(a.path).name, Path(b.path).name
    labels = names if names[0] != names[1] else (a.path, b.path)
    x = np.arange(len(joined))
    for axis, column, ylabel in ((top, "tuned_ms", "tuned time (ms)"),
                                 (bottom, "speedup", "speedup over its default")):
        for offset, suffix, label in ((-0.2, "_a", labels[0]), (0.2, "_b", labels[1])):
            axis.bar(x + offset, joined[column + suffix], 0.4, label=label)
        axis.set_ylabel(ylabel)
    top.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
    bottom.axhline(1.0, color="black", linewidth=1)
    bottom.set_xticks(x, joined["node"], rotation=90, fontsize=8)
    return _save(fig, folder, "compare", f"{labels[0]} and {labels[1]} side by side", size)


def engines_size(nmodels: int) -> tuple[int, int]:
    cols = min(CURVE_COLUMNS, nmodels)
    return 400 * cols, 240 * math.ceil(nmodels / cols) + 60


def engines(rows: list[dict], folder: Path) -> Figure:
    """`bench compare --engines`, one chart per model (compare.json's rows):
    the tuned plan's time and every engine's, the fastest right one's name in
    the title; an output that is wrong hatched, an engine with no time (its
    conversion or run failed) a bar-less row saying so."""
    size = engines_size(len(rows))
    cols = min(CURVE_COLUMNS, len(rows))
    fig, axes = _canvas(size, nrows=math.ceil(len(rows) / cols), ncols=cols, squeeze=False)
    labels = ["acltuner (tuned)", "ort", *rows[0]["peers"]]
    colours = _colours(labels)
    for ax, row in zip(axes.flat, rows):
        peers = row["peers"]
        times = [row["tuned_ms"], row["onnxruntime_ms"], *(p["median_ms"] for p in peers.values())]
        wrong = [False, False, *(p["wrong"] is not None for p in peers.values())]
        y = np.arange(len(labels))[::-1]
        for yi, label, ms, bad in zip(y, labels, times, wrong):
            if ms is None:
                ax.text(0, yi, "  no time: failed", va="center", fontsize=8)
                continue
            ax.barh(yi, ms, color=colours[label], hatch="xx" if bad else None,
                    edgecolor="black" if bad else None)
            ax.text(ms, yi, f" {ms:.3g}" + (" wrong" if bad else ""), va="center", fontsize=8)
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_xlabel("ms (median of the rounds)", fontsize=8)
        ax.margins(x=0.3)
        ax.set_title(f"{row['model']}: tuned {row['tuned_vs_fastest']:.2f}x "
                     f"vs fastest ({row['fastest']})", fontsize=9)
    for ax in list(axes.flat)[len(rows):]:
        ax.set_visible(False)
    return _save(fig, folder, "engines", "the tuned plan beside the other engines, per model",
                 size)
