"""Reference convolutions for the tests: onnxruntime or onnx.reference on a
one-node ONNX model (Conv, or ConvTranspose for a transposed shape), with the
engine's epilogue applied in numpy."""
from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator

from acltuner.engine.config import ConvShape
from acltuner.onnx.conv_attrs import conv_model


def _epilogue(shape: ConvShape, y: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
    if residual is not None:
        y = y + residual
    return activate(shape.act, y, *((shape.act_min, shape.act_max) if shape.act == "clip"
                                    else (shape.act_alpha, shape.act_beta))).astype(np.float32)


def activate(act: str, x: np.ndarray, a: float = 0.0, b: float = 0.0) -> np.ndarray:
    """The engine's activations (ACL_ACTIVATIONS) in float64 numpy."""
    x = x.astype(np.float64)
    return {
        "none": lambda: x,
        "relu": lambda: np.maximum(x, 0),
        "clip": lambda: np.minimum(np.maximum(x, a), b),
        "leaky_relu": lambda: np.where(x < 0, a * x, x),
        "sigmoid": lambda: 1 / (1 + np.exp(-x)),
        "hard_sigmoid": lambda: np.clip(a * x + b, 0, 1),
        "hard_swish": lambda: x * np.clip(a * x + b, 0, 1),
        "silu": lambda: x / (1 + np.exp(-x)),
        "mish": lambda: x * np.tanh(np.logaddexp(0, x)),
        "gelu": lambda: 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2)),
        # x (1 + tanh u) / 2 as x sigmoid(2u), which does not cancel
        "gelu_tanh": lambda: x / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    }[act]()


def _run(shape, x_nhwc, weight, bias, residual, evaluate) -> np.ndarray:
    model = conv_model(shape, weight, bias)
    y = evaluate(model, np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2)))
    return _epilogue(shape, y.transpose(0, 2, 3, 1), residual)


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x})[0]


def _onnx_reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ReferenceEvaluator(model).run(None, {"X": x})[0]


def ort_conv(shape, x_nhwc, weight, bias=None, residual=None) -> np.ndarray:
    """NHWC output of the convolution plus epilogue, computed by onnxruntime."""
    return _run(shape, x_nhwc, weight, bias, residual, _ort)


def reference_conv(shape, x_nhwc, weight, bias=None, residual=None) -> np.ndarray:
    """The same through onnx.reference (slow, pure numpy)."""
    return _run(shape, x_nhwc, weight, bias, residual, _onnx_reference)


def rel_err(y: np.ndarray, ref: np.ndarray) -> float:
    """max |y - ref| relative to the output's scale."""
    scale = max(float(np.max(np.abs(ref))), 1e-6)
    return float(np.max(np.abs(y - ref))) / scale


def random_tensors(shape: ConvShape, rng: np.random.Generator, with_bias: bool = True):
    x = rng.uniform(-1, 1, shape.input_shape).astype(np.float32)
    w = rng.uniform(-1, 1, shape.weight_shape).astype(np.float32)
    b = rng.uniform(-1, 1, (shape.oc,)).astype(np.float32) if with_bias else None
    r = rng.uniform(-1, 1, shape.output_shape).astype(np.float32) if shape.has_residual else None
    return x, w, b, r
