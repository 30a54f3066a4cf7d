"""The Conv and ConvTranspose conformance cases that ship with onnx, through
every algorithm x micro-kernel that supports them: the pytorch-converted
test_Conv2d* / test_ConvTranspose2d* models and the 1-D and 2-D node cases
onnx generates (onnx.backend.test.case.node)."""
from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from acltuner.onnx.conv_attrs import conv_shape
from tests.conftest import engine_names, get_engine
from tests.support.conv_oracle import rel_err
from tests.support.engine_backends import splits_for

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def _pytorch_cases():
    for d in sorted(glob.glob(os.path.join(DATA, "pytorch-converted", "test_Conv2d*")) +
                    glob.glob(os.path.join(DATA, "pytorch-converted", "test_ConvTranspose2d*"))):
        model = onnx.load(os.path.join(d, "model.onnx"))
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        data = os.path.join(d, "test_data_set_0")
        x = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_0.pb")))
        y = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
        node = model.graph.node[0]
        bias = inits[node.input[2]] if len(node.input) > 2 else None
        yield os.path.basename(d), node, x, inits[node.input[1]], bias, y


def _node_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases
        # Every op's cases (3 s): the op filter works on the first call only,
        # later calls return the first one's cases.
        cases = collect_testcases(None)
    for case in cases:
        node = case.model.graph.node[0]
        if node.op_type not in ("Conv", "ConvTranspose"):
            continue
        for inputs, outputs in case.data_sets:
            if inputs[0].ndim == 5:  # test_convtranspose_3d
                continue
            bias = inputs[2] if len(inputs) > 2 else None
            yield case.name, node, inputs[0], inputs[1], bias, outputs[0]


CASES = list(_pytorch_cases()) + list(_node_cases())


def test_cases_found():
    names = {c[0] for c in CASES}
    assert len([n for n in names if n.startswith("test_Conv2d")]) >= 11
    assert {"test_conv_with_autopad_same", "test_conv_with_strides_and_asymmetric_padding"} <= names
    assert {"test_ConvTranspose2d", "test_convtranspose_output_shape",
            "test_convtranspose_autopad_same", "test_convtranspose_group_2_image_3"} <= names


@pytest.mark.parametrize("engine_name", engine_names())
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_conformance(engine_name, case):
    name, node, x, w, b, expected = case
    engine = get_engine(engine_name)
    shape = conv_shape(node, x.shape, w.shape)
    # A 1-D case as the 2-D convolution of height 1 it runs as.
    x = x.reshape(shape.n, shape.c, shape.h, shape.w)
    w = w.reshape(shape.weight_shape)
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1), dtype=np.float32)
    n, oh, ow, oc = shape.output_shape
    ref = expected.reshape(n, oc, oh, ow).transpose(0, 2, 3, 1)
    kernels = engine.ukernels()
    ran = []
    for algorithm, uses in engine.algorithms():
        for uk in kernels if uses else [None]:
            if engine.check(shape, algorithm, uk) is not None:
                continue
            outs = engine.run(shape, algorithm, uk, x_nhwc, w.astype(np.float32),
                              None if b is None else b.astype(np.float32), None, splits_for(2))
            err = rel_err(outs[0], ref)
            assert err <= 1e-4, f"{name}: {algorithm}/{uk} relative error {err:.2e}"
            assert all(np.array_equal(o, outs[0]) for o in outs[1:]), f"{algorithm}/{uk} split"
            ran.append(algorithm)
    assert "reference" in ran and len(set(ran)) >= 2, f"{name}: only {sorted(set(ran))} ran"
