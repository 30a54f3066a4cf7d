"""One peer engine on one model of `bench compare`: its conversion (cached in
the output folder), a first run whose outputs are checked against
onnxruntime's, and the timers that take their turns in compare.py's rounds,
at 1 thread and at every CPU, here or on a board."""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from acltuner.atomic import write_atomic
from acltuner.bench.peers import PEERS, missing, module
from acltuner.bench.peers.worker import load_io, load_outputs, save_arrays

# The cache stamp of a conversion: a new version of it invalidates old ones.
CONVERT_SCHEMA = 1


def _worker(*args: str) -> list[str]:
    return [sys.executable, "-m", "acltuner.bench.peers.worker", *args]


class Here:
    """Where the workers run: this machine, at real-time priority with
    `realtime` (board.Board is the other place)."""

    def __init__(self, realtime: bool):
        self.realtime = realtime

    def threads(self) -> tuple[int, ...]:
        """1 and all: every CPU this process may use."""
        return tuple(sorted({1, len(os.sched_getaffinity(0))}))

    def run(self, engine: str, files: list[Path], io_path: Path, workdir: Path, threads: int,
            repeat: int, warmup: int) -> dict:
        from acltuner.bench.compare import _json_run
        return _json_run(_worker("run", engine, str(files[0]), str(io_path), str(threads),
                                 str(repeat), str(warmup), str(workdir / "outputs.npz")),
                         self.realtime)


def reference(model: Path, shapes: dict, io_path: Path) -> Path:
    """The inputs every engine gets and onnxruntime's outputs for them."""
    from acltuner.bench.compare import _call
    io_path.parent.mkdir(parents=True, exist_ok=True)
    _float64_path(io_path).unlink(missing_ok=True)  # made for the inputs it replaces
    _call(_worker("reference", str(model), json.dumps(shapes), str(io_path)))
    return io_path


def _float64_path(io_path: Path) -> Path:
    return io_path.with_name("float64.npz")


def _float64(model: Path, io_path: Path) -> tuple[list[np.ndarray] | None, str | None]:
    """The model's outputs in float64 for the reference inputs (computed once
    per model, for the first engine that disagrees with onnxruntime), or why
    there are none."""
    from acltuner.app.run import REFERENCE_TIMEOUT_S
    from acltuner.runtime.reference import reference as float64_reference
    path = _float64_path(io_path)
    if not path.is_file():
        inputs, outputs = load_io(io_path)
        ref = float64_reference(str(model), inputs, list(outputs), REFERENCE_TIMEOUT_S)
        if ref.outputs is None:
            return None, ref.problem
        save_arrays(path, {"inputs": [], "outputs": list(ref.outputs)},
                    {f"out{i}": a for i, a in enumerate(ref.outputs.values())})
    return load_outputs(path), None


@dataclass
class Cell:
    engine: str
    problem: str | None = None  # not installed, conversion or run failed: one line
    wrong: str | None = None  # why its outputs are not onnxruntime's, when they are not
    max_rel_diff: float | None = None
    float64_rel_diff: float | None = None  # only where it disagrees with onnxruntime
    artifact: Path | None = None
    times: dict[int, dict] = field(default_factory=dict)  # threads -> compare._rounds' summary

    @property
    def best_threads(self) -> int | None:
        return min(self.times, key=lambda t: self.times[t]["median_ms"]) if self.times else None

    @property
    def median_ms(self) -> float | None:
        best = self.best_threads
        return None if best is None else self.times[best]["median_ms"]

    @property
    def counted(self) -> bool:
        """Whether the cell has a time for an output that is right."""
        return self.median_ms is not None and self.wrong is None and self.problem is None

    def to_json(self) -> dict:
        return {"engine": self.engine, "problem": self.problem, "wrong": self.wrong,
                "max_rel_diff": self.max_rel_diff, "float64_rel_diff": self.float64_rel_diff,
                "best_threads": self.best_threads,
                "median_ms": self.median_ms,
                "threads": {str(t): summary for t, summary in self.times.items()}}


def _versions(engine: str) -> dict[str, str]:
    return {p: importlib.metadata.version(p) for p in PEERS[engine][0]}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _convert(engine: str, model: Path, io_path: Path, workdir: Path) -> Path:
    """The engine's artifact for the model at these inputs, converted once: a
    stamp beside it names what it was made from and by which versions."""
    from acltuner.bench.compare import _json_run
    inputs, _ = load_io(io_path)
    made_from = {"schema": CONVERT_SCHEMA, "engine": engine, "versions": _versions(engine),
                 "model_sha256": _sha256(model),
                 "inputs": {n: [list(a.shape), a.dtype.name] for n, a in inputs.items()}}
    stamp = workdir / "convert.json"
    try:
        cached = json.loads(stamp.read_text())
        artifact = workdir / cached["artifact"]
        if {k: v for k, v in cached.items() if k != "artifact"} == made_from and artifact.exists():
            return artifact
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no stamp, or not one of ours: convert again
    workdir.mkdir(parents=True, exist_ok=True)
    artifact = Path(_json_run(_worker("convert", engine, str(model.resolve()), str(io_path),
                                      str(workdir)))["artifact"])
    if artifact.resolve().parent == workdir.resolve():
        write_atomic(stamp, json.dumps({**made_from, "artifact": artifact.name}, indent=1) + "\n")
    return artifact


def judge(outputs: list[np.ndarray], references: list[np.ndarray],
          tolerance: float) -> tuple[float | None, str | None]:
    """(max |diff| / max |onnxruntime's| of the worst output, why they are
    wrong or None), as `acltuner run --check` judges ours.  An engine that
    drops a batch axis of 1 (ncnn) has the same values in another shape."""
    from acltuner.runtime.measure import _worst
    if len(outputs) != len(references):
        return None, f"{len(outputs)} outputs, onnxruntime {len(references)}"
    for i, (out, ref) in enumerate(zip(outputs, references)):
        if out.size != ref.size:
            return None, f"output {i} has shape {list(out.shape)}, onnxruntime {list(ref.shape)}"
    outputs = [o.reshape(r.shape) for o, r in zip(outputs, references)]
    # A NaN drops out of a max: checked on its own.
    if any((~np.isfinite(o) & np.isfinite(r)).any() for o, r in zip(outputs, references)):
        return None, "outputs not finite where onnxruntime's are"
    rel = _worst(outputs, references)[1]
    return rel, (f"max rel diff {rel:.3g} > {tolerance:g}" if rel > tolerance else None)


def prepare(engine: str, model: Path, io_path: Path, workdir: Path, place) -> Cell:
    """The engine converted here and run once in `place` (Here or a
    board.Board) on the reference inputs, its outputs judged; a cell with a
    problem is left out of the rounds."""
    from acltuner.app.run import CHECK_TOLERANCE
    cell = Cell(engine, problem=missing(engine))
    if cell.problem:
        return cell
    try:
        cell.artifact = _convert(engine, model, io_path, workdir)
    except ValueError as e:
        cell.problem = f"conversion failed: {_reason(e)}"
        return cell
    try:
        place.run(engine, module(engine).files(cell.artifact), io_path, workdir, 1, 1, 1)
    except (ValueError, OSError) as e:
        cell.problem = f"run failed: {_reason(e)}"
        return cell
    outputs = load_outputs(workdir / "outputs.npz")
    cell.max_rel_diff, cell.wrong = judge(outputs, list(load_io(io_path)[1].values()),
                                          CHECK_TOLERANCE)
    if cell.wrong and cell.max_rel_diff is not None:
        # As `run --check` judges ours: where onnxruntime is the one off, the
        # float64 reference says so.
        exact, problem = _float64(model, io_path)
        if exact is None:
            cell.wrong += f" (no float64 reference: {problem})"
        else:
            cell.float64_rel_diff, wrong = judge(outputs, exact, CHECK_TOLERANCE)
            cell.wrong = wrong and f"{cell.wrong}; against float64 {cell.float64_rel_diff:.3g}"
    return cell


def _reason(e: Exception) -> str:
    """The engine's own line, without compare._call's command in front."""
    return str(e).split("failed: ", 1)[-1]


def timers(cell: Cell, io_path: Path, workdir: Path, runs: int, place) -> dict:
    """compare._rounds' timers of the cell at each of the place's thread
    settings; a run that fails gives None, and the cell its problem."""
    files = module(cell.engine).files(cell.artifact) if cell.artifact else []

    def timer(threads: int):
        def once() -> dict | None:
            try:
                return place.run(cell.engine, files, io_path, workdir, threads, runs, 3)
            except (ValueError, OSError) as e:
                cell.problem = f"run failed: {_reason(e)}"
                return None
        return once
    if cell.problem:
        return {}
    return {f"{cell.engine}_{t}t": timer(t) for t in place.threads()}
