"""LSTM on the engine's lstm operation against onnxruntime: both directions,
partial unit blocks, absent bias and initial states, every output used; the
forms it does not compute are delegated and still right."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from acltuner.board.registry import load_board
from acltuner.onnx.model import load_model
from acltuner.onnx.onnxrt import session
from acltuner.runtime import compile_model

BOARD = load_board("split-host")


def _lstm_model(seq, batch, size, hidden, *, direction="forward", bias=True, states=True,
                extra=None, peephole=False) -> onnx.ModelProto:
    rng = np.random.default_rng(seq * 100 + hidden)
    dirs = 2 if direction == "bidirectional" else 1

    def init(name, shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape,
                                  rng.uniform(-0.5, 0.5, shape).astype(np.float32).ravel())

    inits = [init("W", [dirs, 4 * hidden, size]), init("R", [dirs, 4 * hidden, hidden])]
    names = ["x", "W", "R", "B" if bias else "", "", "h0" if states else "",
             "c0" if states else ""]
    if bias:
        inits.append(init("B", [dirs, 8 * hidden]))
    if peephole:
        inits.append(init("P", [dirs, 3 * hidden]))
        names.append("P")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, size])]
    if states:
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [dirs, batch, hidden])
                   for n in ("h0", "c0")]
    node = helper.make_node("LSTM", names, ["y", "y_h", "y_c"], name="lstm", hidden_size=hidden,
                            direction=direction, **(extra or {}))
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
               for n in ("y", "y_h", "y_c")]
    graph = helper.make_graph([node], "lstm", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _run(model: onnx.ModelProto, tmp_path):
    path = tmp_path / "lstm.onnx"
    onnx.save(model, path)
    program = compile_model(load_model(path), {}, BOARD)
    rng = np.random.default_rng(1)
    inputs = {name: rng.standard_normal(dims).astype(np.float32)
              for name, (dims, _) in program.inputs.items()}
    got = program.run(inputs)
    want = dict(zip(["y", "y_h", "y_c"], session(path).run(["y", "y_h", "y_c"], inputs)))
    return program, got, want


@pytest.mark.parametrize("seq,batch,size,hidden,direction,bias,states", [
    (1, 1, 128, 128, "forward", True, True),   # silero_vad's decoder
    (5, 3, 7, 20, "forward", True, True),      # a partial block of hidden units
    (6, 2, 9, 40, "reverse", True, True),
    (4, 1, 16, 33, "forward", False, False),   # no bias, zero initial states
    (5, 2, 12, 24, "bidirectional", True, True),  # a CRNN's: two lstms and their concats
    (3, 1, 8, 16, "bidirectional", False, False),
])
def test_lstm_matches_onnxruntime(seq, batch, size, hidden, direction, bias, states, tmp_path):
    program, got, want = _run(_lstm_model(seq, batch, size, hidden, direction=direction,
                                          bias=bias, states=states), tmp_path)
    assert program.delegated == []
    for name in want:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=2e-5, err_msg=name)


@pytest.mark.parametrize("form", [
    {"extra": {"clip": 0.5}},
    {"extra": {"activations": ["Sigmoid", "Relu", "Tanh"]}},
    {"peephole": True},
])
def test_lstm_forms_the_engine_does_not_compute_are_delegated(form, tmp_path):
    program, got, want = _run(_lstm_model(3, 2, 5, 8, **form), tmp_path)
    assert [d.op_types for d in program.delegated] == [["LSTM"]]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-6, err_msg=name)
