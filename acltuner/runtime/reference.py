"""A float64 reference of a model's outputs, for `run --check` to judge the
engine and onnxruntime by when the two disagree.

The model runs in onnx's reference evaluator (numpy) with every float32
tensor made float64: inputs, initializers, constants and casts to float (a
Resize's scales, which must be float32, are cast back).  It is first
converted to opset 17, where the evaluator's operators follow the current
specification (it runs an opset 9 Dropout or BatchNormalization as in
training), and its LRN, which sums the wrong channels, is replaced.  It
runs in a child process, given up after a time limit.
"""
from __future__ import annotations

import math
import multiprocessing
import time
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter

_OPSET = 17
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
    nodes = []
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
    """The model at opset 17 or later (as it is where onnx cannot convert it)
    with its float32 tensors float64."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), _OPSET)
    if opset < _OPSET:
        try:
            model = version_converter.convert_version(model, _OPSET)
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


def _evaluate(model_path: str, inputs: dict[str, np.ndarray], names: list[str]) -> dict:
    from onnx.reference import ReferenceEvaluator
    model = float64_model(onnx.load(model_path))
    evaluator = ReferenceEvaluator(model, new_ops=[_lrn()])
    wide = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}
    return dict(zip(names, (np.asarray(o, np.float64)
                            for o in evaluator.run(names, wide))))


def _child(conn, model_path, inputs, names) -> None:
    try:
        conn.send(("ok", _evaluate(model_path, inputs, names)))
    except Exception as e:  # noqa: BLE001 - reported to the parent in one line
        text = str(e).strip()
        conn.send(("error", f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"))
    finally:
        conn.close()


def reference(model_path: str, inputs: dict[str, np.ndarray], names: list[str],
              timeout_s: float) -> Reference:
    """The named outputs of the model in float64, computed within timeout_s
    (in a child process, killed after it)."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, model_path, inputs, names),
                            daemon=True)
    start = time.perf_counter()
    child.start()
    send.close()
    try:
        ready = receive.poll(timeout_s)
        status, value = receive.recv() if ready else ("timeout", None)
    except EOFError:  # the child died without an answer
        status, value = "error", f"the evaluator's process ended (exit code {child.exitcode})"
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    seconds = time.perf_counter() - start
    if status == "ok":
        return Reference(value, seconds)
    if status == "timeout":
        return Reference(None, seconds, f"not done within {timeout_s:g} s")
    return Reference(None, seconds, f"onnx's reference evaluator failed: {value}")
