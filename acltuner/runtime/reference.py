"""A float64 reference of a model's outputs, for `run --check` to judge the
engine and onnxruntime by when the two disagree.

The model runs in onnx's reference evaluator (numpy) with every float32
tensor made float64: inputs, initializers, constants and casts to float (a
Resize's scales, which must be float32, are cast back).  It is first
converted to opset 17, where the evaluator's operators follow the current
specification (it runs an opset 9 Dropout or BatchNormalization as in
training), and its LRN, which sums the wrong channels, is replaced, as are
its Conv and ConvTranspose (by faster ones).  It runs in a child Python process, killed
after a time limit.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter

_OPSET = 17
# The evaluator implements QuantizeLinear and DequantizeLinear from opset 19.
_QDQ_OPSET = 19
_FLOAT, _DOUBLE = TensorProto.FLOAT, TensorProto.DOUBLE
# The input of each operator that stays float32 whatever the data's type.
_FLOAT_ONLY = {"Resize": 2, "Upsample": 1}


@dataclass(frozen=True)
class Reference:
    outputs: dict[str, np.ndarray] | None  # float64, by name; None when there is none
    seconds: float
    problem: str | None = None  # why there is none, in one line


def _double(t: TensorProto) -> TensorProto:
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name)


def _to_float64(graph: onnx.GraphProto) -> None:
    for info in [*graph.input, *graph.output, *graph.value_info]:
        if info.type.tensor_type.elem_type == _FLOAT:
            info.type.tensor_type.elem_type = _DOUBLE
    for i, t in enumerate(graph.initializer):
        if t.data_type == _FLOAT:
            graph.initializer[i].CopyFrom(_double(t))
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == _FLOAT:
                a.i = _DOUBLE
            elif a.type == onnx.AttributeProto.TENSOR and a.t.data_type == _FLOAT:
                a.t.CopyFrom(_double(a.t))
            for sub in [a.g] if a.HasField("g") else a.graphs:
                _to_float64(sub)
        if node.op_type == "Constant" and node.attribute[0].name in ("value_float",
                                                                     "value_floats"):
            value = np.asarray(helper.get_attribute_value(node.attribute[0]), np.float64)
            del node.attribute[:]
            node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(value)))
        at = _FLOAT_ONLY.get(node.op_type)
        if at is not None and len(node.input) > at and node.input[at]:
            cast = f"{node.input[at]}:float32:{len(nodes)}"
            nodes.append(helper.make_node("Cast", [node.input[at]], [cast], to=_FLOAT))
            node.input[at] = cast
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)


def float64_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model at opset 17 or later, 19 with quantization nodes (as it is
    where onnx cannot convert it), with its float32 tensors float64: a
    quantized model's float values then carry no float32 rounding, and each
    QuantizeLinear rounds the exact value."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), _OPSET)
    target = _QDQ_OPSET if any(n.op_type in ("QuantizeLinear", "DequantizeLinear")
                               for n in model.graph.node) else _OPSET
    if opset < target:
        try:
            model = version_converter.convert_version(model, target)
        except Exception:  # noqa: BLE001 - the converter's errors share no base class
            pass
    model = onnx.ModelProto.FromString(model.SerializeToString())
    del model.graph.value_info[:]  # float32 hints, and inference is not needed
    _to_float64(model.graph)
    return model


def _lrn():
    from onnx.reference.op_run import OpRun

    class LRN(OpRun):
        """ONNX LRN: each channel over the `size` channels around it."""

        def _run(self, x, alpha=None, beta=None, bias=None, size=None):
            channels = x.shape[1]
            square = x * x
            total = np.zeros_like(x)
            for c in range(channels):
                lo = max(0, c - math.floor((size - 1) / 2))
                hi = min(channels, c + math.ceil((size - 1) / 2) + 1)
                total[:, c] = square[:, lo:hi].sum(axis=1)
            return ((x / (bias + alpha / size * total) ** beta).astype(x.dtype),)
    return LRN


def _conv():
    from onnx.reference.ops.op_conv import Conv as Shipped

    class Conv(Shipped):
        """A 2-D Conv with explicit pads as a sum over its taps, each one batched
        matmul over the groups (the shipped one materialises a dilated kernel:
        a rate-36 3x3 is a 73x73 kernel, too slow and large for a DeepLab).
        Other forms go to the shipped one."""

        def _run(self, X, W, B=None, auto_pad=None, dilations=None, group=None,
                 kernel_shape=None, pads=None, strides=None):
            if X.ndim != 4 or auto_pad not in (None, "NOTSET", "VALID"):
                return super()._run(X, W, B, auto_pad, dilations, group, kernel_shape, pads,
                                    strides)
            n, c, h, w = X.shape
            m, cg, kh, kw = W.shape
            g = group or 1
            dh, dw = dilations or (1, 1)
            sh, sw = strides or (1, 1)
            top, left, bottom, right = (0, 0, 0, 0) if auto_pad == "VALID" or pads is None \
                else pads
            x = np.pad(X, ((0, 0), (0, 0), (top, bottom), (left, right)))
            oh = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
            ow = (w + left + right - (kw - 1) * dw - 1) // sw + 1
            weights = W.reshape(g, m // g, cg, kh, kw)
            y = np.zeros((n, g, m // g, oh * ow), X.dtype)
            for i in range(kh):
                for j in range(kw):
                    tap = x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                            j * dw:j * dw + sw * (ow - 1) + 1:sw]
                    y += weights[:, :, :, i, j] @ tap.reshape(n, g, cg, oh * ow)
            y = y.reshape(n, m, oh, ow)
            return (y if B is None else y + B.reshape(1, m, 1, 1),)
    return Conv


def _conv_transpose():
    from onnx.reference.ops.op_conv_transpose import ConvTranspose as Shipped

    class ConvTranspose(Shipped):
        """A 2-D ConvTranspose with explicit pads as a sum over its taps, each
        one batched matmul over the groups scattered into the strided output
        (the shipped one runs col2im a pixel at a time in Python: 21 of the
        25 s a PP-OCRv5 detector took at 736x736).  Other forms, and an
        output_shape, go to the shipped one."""

        def _run(self, X, W, B=None, auto_pad=None, dilations=None, group=None,
                 kernel_shape=None, output_padding=None, output_shape=None, pads=None,
                 strides=None):
            if X.ndim != 4 or auto_pad not in (None, "NOTSET") or output_shape is not None:
                return super()._run(X, W, B, auto_pad, dilations, group, kernel_shape,
                                    output_padding, output_shape, pads, strides)
            n, c, h, w = X.shape
            g = group or 1
            cg, mg, kh, kw = c // g, W.shape[1], W.shape[2], W.shape[3]
            dh, dw = dilations or (1, 1)
            sh, sw = strides or (1, 1)
            oph, opw = output_padding or (0, 0)
            top, left, bottom, right = pads or (0, 0, 0, 0)
            full_h = sh * (h - 1) + (kh - 1) * dh + 1 + oph
            full_w = sw * (w - 1) + (kw - 1) * dw + 1 + opw
            y = np.zeros((n, g, mg, full_h, full_w), X.dtype)
            x = X.reshape(n, g, cg, h * w)
            weights = W.reshape(g, cg, mg, kh, kw)
            for i in range(kh):
                for j in range(kw):
                    tap = np.swapaxes(weights[:, :, :, i, j], 1, 2) @ x
                    y[:, :, :, i * dh:i * dh + sh * (h - 1) + 1:sh,
                      j * dw:j * dw + sw * (w - 1) + 1:sw] += tap.reshape(n, g, mg, h, w)
            y = y.reshape(n, g * mg, full_h, full_w)[:, :, top:full_h - bottom,
                                                      left:full_w - right]
            return (y if B is None else y + B.reshape(1, -1, 1, 1),)
    return ConvTranspose


def _evaluate(model_path: str, inputs: dict[str, np.ndarray], names: list[str]) -> list:
    from onnx.reference import ReferenceEvaluator
    model = float64_model(onnx.load(model_path))
    evaluator = ReferenceEvaluator(model, new_ops=[_lrn(), _conv(), _conv_transpose()])
    wide = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}
    return [np.asarray(o, np.float64) for o in evaluator.run(names, wide)]


def reference(model_path: str, inputs: dict[str, np.ndarray], names: list[str],
              timeout_s: float) -> Reference:
    """The named outputs of the model in float64, computed within timeout_s
    (in a child process, killed after it; the data goes through files, by
    position, as tensor names need not be file names)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="acltuner-reference-") as tmp:
        folder = Path(tmp)
        (folder / "request.json").write_text(json.dumps(
            {"model": str(model_path), "inputs": list(inputs), "outputs": names}))
        np.savez(folder / "inputs.npz", *inputs.values())
        try:
            done = subprocess.run([sys.executable, "-m", __name__, tmp], capture_output=True,
                                  text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return Reference(None, time.perf_counter() - start,
                             f"not done within {timeout_s:g} s")
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            why = lines[-1] if lines and done.returncode > 0 else (
                f"killed by signal {-done.returncode} (out of memory?)" if done.returncode < 0
                else f"exit code {done.returncode}")
            return Reference(None, seconds, f"onnx's reference evaluator failed: {why}")
        with np.load(folder / "outputs.npz") as saved:
            return Reference({n: saved[f"arr_{i}"] for i, n in enumerate(names)}, seconds)


def main(folder: str) -> int:
    """The child: request.json and inputs.npz in the folder -> outputs.npz, or
    one line on stderr and exit code 1."""
    request = json.loads((Path(folder) / "request.json").read_text())
    try:
        with np.load(Path(folder) / "inputs.npz") as saved:
            inputs = {n: saved[f"arr_{i}"] for i, n in enumerate(request["inputs"])}
        outputs = _evaluate(request["model"], inputs, request["outputs"])
    except Exception as e:  # noqa: BLE001 - reported to the parent in one line
        text = str(e).strip()
        print(f"{type(e).__name__}: {text.splitlines()[0] if text else ''}", file=sys.stderr)
        return 1
    np.savez(Path(folder) / "outputs.npz", *outputs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
