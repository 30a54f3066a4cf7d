"""Weights kept out of a model's protobuf: a detached initializer keeps its
name, type and dims, and claims external data in a stub file, while its array
lives in a weights dict by name.  Shape inference and the checker then copy
the model without its weights, and each weight can be freed once packed."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

# Weights are floating point; integer initializers may be shapes, which
# inference reads, so they stay in the model, and so do small floating-point
# ones, which may be too (Resize's scales).
_WEIGHT_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
_INLINE_FLOATS = 16
STUB = "detached-weights"  # where a detached tensor claims to be stored


def is_weight(t: onnx.TensorProto) -> bool:
    return t.data_type in _WEIGHT_TYPES and int(np.prod(t.dims)) > _INLINE_FLOATS


def mark_detached(t: onnx.TensorProto) -> None:
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=STUB)


def initializer(name: str, value: np.ndarray, weights: dict[str, np.ndarray] | None
                ) -> onnx.TensorProto:
    """The initializer `name` of `value`: detached into `weights` when it is a
    weight and the model's weights are detached (weights not None)."""
    t = numpy_helper.from_array(value, name)
    if weights is not None and is_weight(t):
        weights[name] = value
        mark_detached(t)
    return t
