"""A quantized model's outputs judged in steps.

Two int8 engines may round a sum that lands within a float rounding of a
half-step to neighbouring steps (tests/runtime/test_int8.py says where), so
an output a DequantizeLinear makes is compared in steps of its quantization,
its scale, rather than relative to its largest value: one step is a
rounding.  More is an error unless the quantized model run in float64
(runtime.reference) finds ours no more steps from it than onnxruntime's:
a narrow range after a gate can turn one step of rounding into twenty
(measure.Difference.quantized_passed)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

# The largest difference, in steps, `run --check` accepts on such an output.
STEP_TOLERANCE = 1.0


@dataclass(frozen=True)
class Step:
    """An output's quantization step: a scalar scale, or one per index of `axis`."""
    scale: np.ndarray
    axis: int

    def steps(self, ours: np.ndarray, theirs: np.ndarray) -> float:
        """The largest |ours - theirs| in steps; infinite where one is not finite."""
        diff = np.abs(ours.astype(np.float64) - np.asarray(theirs, np.float64))
        scale = self.scale.astype(np.float64)
        if scale.size > 1:
            shape = [1] * diff.ndim
            shape[self.axis % diff.ndim] = scale.size
            scale = scale.reshape(shape)
        return float(np.max(np.nan_to_num(diff / scale, nan=np.inf), initial=0.0))


def output_steps(model_path: str) -> dict[str, Step]:
    """The model's outputs a DequantizeLinear makes with a constant, positive
    scale, each with its step.  Empty for a float model."""
    model = onnx.load(model_path, load_external_data=False)
    graph = model.graph
    constants = {i.name: i for i in graph.initializer if not _external(i)}
    outputs = {o.name for o in graph.output}
    found = {}
    for node in graph.node:
        if node.op_type != "DequantizeLinear" or node.output[0] not in outputs:
            continue
        init = constants.get(node.input[1])
        if init is None:
            continue
        scale = numpy_helper.to_array(init).reshape(-1)
        if scale.size and np.all(np.isfinite(scale)) and np.all(scale > 0):
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            found[node.output[0]] = Step(scale, axis)
    return found


def _external(tensor: onnx.TensorProto) -> bool:
    return tensor.data_location == onnx.TensorProto.EXTERNAL
