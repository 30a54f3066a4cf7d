"""ncnn: the ONNX model converted by pnnx's own converter program (the pnnx
package's executable; its Python wrapper imports PyTorch, which the ONNX route
does not need), weights kept in fp32, run with fp16 and bf16 storage and
arithmetic off.  pnnx names the inputs in0, in1, ... and the outputs out0, ...
in the ONNX graph's order, and drops the batch axis of batch-1 tensors."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np

from acltuner.bench.peers import PNNX_VERSION
from acltuner.bench.peers.timing import timed

_TYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "int32": "i32", "int64": "i64",
          "int8": "i8", "uint8": "u8"}


def _pnnx() -> str:
    spec = importlib.util.find_spec("pnnx")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"no pnnx package: pip install --no-deps pnnx=={PNNX_VERSION}")
    return str(Path(spec.submodule_search_locations[0]) / "pnnx")


def convert(model: Path, inputs: dict[str, np.ndarray], workdir: Path) -> Path:
    # pnnx writes its files beside the model it reads, so it reads a copy in workdir.
    local = workdir / "model.onnx"
    shutil.copyfile(model, local)
    shape_arg = ",".join(f"[{','.join(map(str, a.shape))}]{_TYPES.get(a.dtype.name, 'f32')}"
                         for a in inputs.values())
    param, weights = workdir / "model.ncnn.param", workdir / "model.ncnn.bin"
    for old in (param, weights):  # an older conversion's must not pass for this one's
        old.unlink(missing_ok=True)
    try:
        done = subprocess.run([_pnnx(), local.name, f"inputshape={shape_arg}", "fp16=0"],
                              cwd=workdir, capture_output=True, text=True)
    finally:
        local.unlink()
    if done.returncode != 0 or not param.is_file() or not weights.is_file():
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise ValueError(f"pnnx failed: {last}")
    return param


def files(artifact: Path) -> list[Path]:
    """The artifact's files, the one run() is given first."""
    return [artifact, artifact.with_suffix(".bin")]


def run(artifact: Path, inputs: dict[str, np.ndarray], output_names: list[str], threads: int,
        repeat: int, warmup: int) -> tuple[list[float], list[np.ndarray]]:
    import ncnn

    net = ncnn.Net()
    opt = net.opt
    opt.num_threads = threads
    opt.use_vulkan_compute = False
    opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = False
    opt.use_bf16_storage = False
    if net.load_param(str(artifact)):
        # pnnx keeps an operation it cannot map as a layer ncnn does not have.
        kinds = {line.split()[0] for line in artifact.read_text().splitlines()[2:] if line.strip()}
        unknown = sorted(k for k in kinds if ncnn.layer_to_index(k) < 0)
        raise ValueError(f"ncnn has no layer {', '.join(unknown)}" if unknown
                         else f"ncnn could not load {artifact}")
    if net.load_model(str(artifact.with_suffix(".bin"))):
        raise ValueError(f"ncnn could not load {artifact.with_suffix('.bin')}")
    # The Mats borrow the arrays' memory: both must outlive the runs.
    arrays = [np.ascontiguousarray(a[0] if a.ndim > 1 and a.shape[0] == 1 else a)
              for a in inputs.values()]
    mats = [ncnn.Mat(a) for a in arrays]

    def once() -> list:
        extractor = net.create_extractor()
        for i, mat in enumerate(mats):
            extractor.input(f"in{i}", mat)
        outs = []
        for i in range(len(output_names)):
            status, mat = extractor.extract(f"out{i}")
            if status:
                raise ValueError(f"ncnn could not compute output {output_names[i]}")
            outs.append(mat)
        return outs

    times, outputs = timed(once, repeat, warmup)
    return times, [np.array(m, copy=True) for m in outputs]
