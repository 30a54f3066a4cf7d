"""MNN: the model converted by MNN's converter library (never its
`mnnconvert` script, which pip-installs a logging package and reports each
conversion over the network), run as an MNN module at "high" precision, which
keeps fp32 where the CPU has fp16 arithmetic."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from acltuner.bench.peers.timing import timed


def convert(model: Path, inputs: dict[str, np.ndarray], workdir: Path) -> Path:
    import _tools  # MNN's converter, the extension module its script wraps

    artifact = workdir / "model.mnn"
    artifact.unlink(missing_ok=True)
    status = _tools.mnnconvert(["mnnconvert", "-f", "ONNX", "--modelFile", str(model),
                                "--MNNModel", str(artifact), "--bizCode", "acltuner"])
    if not artifact.is_file():
        raise ValueError(f"MNN's converter wrote no model (status {status})")
    return artifact


def files(artifact: Path) -> list[Path]:
    return [artifact]


def run(artifact: Path, inputs: dict[str, np.ndarray], output_names: list[str], threads: int,
        repeat: int, warmup: int) -> tuple[list[float], list[np.ndarray]]:
    import MNN

    F = MNN.expr
    runtime = MNN.nn.create_runtime_manager(({"backend": "CPU", "precision": "high",
                                              "numThread": threads},))
    net = MNN.nn.load_module_from_file(str(artifact), list(inputs), output_names,
                                       runtime_manager=runtime)
    feed = [F.const(a, list(a.shape), F.NCHW) for a in inputs.values()]

    def once() -> list[np.ndarray]:
        # read() waits for the results: MNN computes lazily.
        return [(F.convert(o, F.NCHW) if o.data_format == F.NC4HW4 else o).read()
                for o in net.forward(feed)]

    times, outputs = timed(once, repeat, warmup)
    return times, [np.array(o, copy=True) for o in outputs]
