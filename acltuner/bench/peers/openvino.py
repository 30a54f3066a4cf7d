"""OpenVINO's CPU plugin, which reads ONNX itself: the artifact is the model,
its shapes fixed when it is compiled."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from acltuner.bench.peers.timing import timed


def convert(model: Path, inputs: dict[str, np.ndarray], workdir: Path) -> Path:
    return model


def files(artifact: Path) -> list[Path]:
    return [artifact]


def run(artifact: Path, inputs: dict[str, np.ndarray], output_names: list[str], threads: int,
        repeat: int, warmup: int) -> tuple[list[float], list[np.ndarray]]:
    import openvino as ov

    core = ov.Core()
    model = core.read_model(str(artifact))
    model.reshape({name: list(a.shape) for name, a in inputs.items()})
    # f32 inference precision: on CPUs with bf16 or fp16 units OpenVINO would
    # otherwise pick them, and the comparison is fp32 throughout.
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                 "INFERENCE_NUM_THREADS": threads,
                                                 "NUM_STREAMS": 1,
                                                 "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    times, _ = timed(lambda: request.infer(inputs), repeat, warmup)
    # An output tensor may have several names; the ONNX graph's is one of them.
    outputs = {name: request.get_tensor(o).data.copy()
               for o in compiled.outputs for name in o.get_names()}
    missing = [n for n in output_names if n not in outputs]
    if missing:
        raise ValueError(f"OpenVINO has no output {', '.join(missing)}")
    return times, [outputs[n] for n in output_names]
