"""The process a peer engine converts or runs in, one per call, so that its
threads are gone before the next engine's turn:

    python -m acltuner.bench.peers.worker reference MODEL SHAPES_JSON IO.npz
    python -m acltuner.bench.peers.worker convert ENGINE MODEL IO.npz WORKDIR
    python -m acltuner.bench.peers.worker run ENGINE ARTIFACT IO.npz THREADS REPEAT WARMUP OUT.npz

`reference` writes the inputs (seeded as compare.py's onnxruntime probe makes
them) and onnxruntime's outputs for them; `convert` prints {"artifact"};
`run` prints {"median_ms", "p90_ms", "peak_rss_mb"} as that probe does and
writes the engine's outputs.  A failure is one line on stderr and exit status 1.
"""
from __future__ import annotations

import io
import json
import os
import resource
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from acltuner.atomic import write_atomic


def save_arrays(path: Path, names: dict[str, list[str]], arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    # mypy lets **arrays fill savez's allow_pickle, but they are named in0..,
    # out0..; passing allow_pickle instead would save it as an array under
    # the older numpy (no such parameter) a board may have.
    np.savez(buffer, names=np.array(json.dumps(names)),
             **arrays)  # type: ignore[arg-type]
    write_atomic(path, buffer.getvalue())


def load_io(path: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(inputs, onnxruntime's outputs) by name, in the model's order."""
    with np.load(path, allow_pickle=False) as f:
        names = json.loads(str(f["names"]))
        return ({n: f[f"in{i}"] for i, n in enumerate(names["inputs"])},
                {n: f[f"out{i}"] for i, n in enumerate(names["outputs"])})


def load_outputs(path: Path) -> list[np.ndarray]:
    with np.load(path, allow_pickle=False) as f:
        return [f[f"out{i}"] for i in range(len(json.loads(str(f["names"]))["outputs"]))]


def reference(model: str, shapes_json: str, io_path: str) -> None:
    import onnxruntime as ort

    shapes = json.loads(shapes_json)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {}
    for inp in session.get_inputs():
        dims = shapes.get(inp.name, inp.shape)
        if not all(isinstance(d, int) for d in dims):
            raise ValueError(f"input '{inp.name}' has no fixed shape ({dims}): give it in "
                             f"shapes.yaml")
        kind = inp.type[len("tensor("):-1]
        feed[inp.name] = (rng.standard_normal(dims).astype(np.float32) if kind == "float"
                          else np.zeros(dims, dtype=np.dtype(kind)))
    names = [o.name for o in session.get_outputs()]
    outputs = session.run(names, feed)
    save_arrays(Path(io_path), {"inputs": list(feed), "outputs": names},
                {**{f"in{i}": a for i, a in enumerate(feed.values())},
                 **{f"out{i}": a for i, a in enumerate(outputs)}})


def convert(engine: str, model: str, io_path: str, workdir: str) -> dict:
    from acltuner.bench.peers import module
    inputs, _ = load_io(Path(io_path))
    return {"artifact": str(module(engine).convert(Path(model), inputs, Path(workdir)))}


def run(engine: str, artifact: str, io_path: str, threads: str, repeat: str, warmup: str,
        out_path: str) -> dict:
    from acltuner.bench.peers import module
    inputs, reference_outputs = load_io(Path(io_path))
    names = list(reference_outputs)
    times, outputs = module(engine).run(Path(artifact), inputs, names, int(threads),
                                        int(repeat), int(warmup))
    save_arrays(Path(out_path), {"inputs": [], "outputs": names},
                {f"out{i}": np.asarray(a) for i, a in enumerate(outputs)})
    return {"median_ms": 1e3 * statistics.median(times),
            "p90_ms": 1e3 * float(np.percentile(times, 90)),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: list[str]) -> None:
    """Runs one command; its answer is the only line on stdout, its error the
    last line on stderr.  The engines print on file descriptor 1 themselves
    (some from C, buffered, at exit), so it points at stderr meanwhile, and
    the process ends without flushing C's buffers after the last line."""
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    commands: dict[str, Callable[..., dict | None]] = {"reference": reference,
                                                       "convert": convert, "run": run}
    try:
        answer, status = commands[argv[0]](*argv[1:]), 0
    except Exception as e:  # an engine's own error, of any kind, is its cell's one line
        message = (str(e).strip().splitlines() or [""])[0]
        answer, status = None, 1
        sys.stdout.flush()
        # Our own refusals are ValueErrors worded for the reader; the engines' need their kind.
        print(message if isinstance(e, ValueError) and message
              else f"{type(e).__name__}: {message}".rstrip(": "), file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    if answer is not None:
        os.write(answer_fd, (json.dumps(answer) + "\n").encode())
    os._exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
