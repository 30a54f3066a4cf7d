"""Running beside other threads: every onnxruntime session the runtime opens
in-process sleeps when idle (its spinning threads would hold the cores where
the engine's pinned workers wait), and a heavy delegated segment gets more
threads, which the profile names; the balance option reaches the runs."""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from acltuner.runtime import load
from acltuner.runtime.delegate import PARALLEL_FLOPS
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import default_plan, invoke


@pytest.fixture
def sessions(monkeypatch):
    """The options of every onnxruntime session created while the test runs."""
    made = []
    real = ort.InferenceSession

    def recording(source, options=None, *args, **kwargs):
        made.append(options)
        return real(source, options, *args, **kwargs)
    monkeypatch.setattr(ort, "InferenceSession", recording)
    return made


def _delegating_model(tmp_path, width: int):
    """A conv, a MatMul to `width` columns by a Cos of a constant (folded at
    load), a Sin (delegated: 256 x width elements), a conv."""
    b = GraphBuilder(seed=3, input_shape=(1, 8, 16, 16))
    y = b.conv(b.input, "c1", 16, 3, pads=1, relu="r1")
    mat = b.node("Cos", [b.constant("m", np.full((16, width), 0.5, np.float32))], "mcos")
    y = b.node("Sin", [b.node("MatMul", [y, mat], "mm")], "sin")
    y = b.conv(y, "c2", 8, 1)
    path = tmp_path / f"delegating{width}.onnx"
    onnx.save(b.model(y, "delegating"), path)
    return path


def test_every_in_process_session_sleeps_when_idle(tmp_path, sessions):
    path = _delegating_model(tmp_path, 16)
    plan = default_plan(path, tmp_path)
    sessions.clear()
    result = invoke("run", plan, "--repeat", "2", "--warmup", "0", "--check", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["delegated"], "the model should delegate nodes"
    # load's constant folding, the delegated segments, the --check reference
    assert len(sessions) >= 3
    for options in sessions:
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"


def test_a_segment_gets_more_threads_only_when_heavy(tmp_path, sessions):
    """A light segment runs on one thread, a heavy one on all the board's
    cores, and the profile says which."""
    light = load(default_plan(_delegating_model(tmp_path, 16), tmp_path), board="split-host")
    heavy = load(default_plan(_delegating_model(tmp_path, 8192), tmp_path), board="split-host")
    assert 16 * 16 * 8192 >= PARALLEL_FLOPS > 16 * 16 * 16
    x = np.zeros((1, 8, 16, 16), np.float32)
    for program, threads in ((light, "1 thread"), (heavy, "2 threads, not spinning")):
        program.run(x)
        kinds = [e.kind for e in program.last_profile if e.op == "delegated"]
        assert any(k.endswith(f"({threads})") for k in kinds), kinds
    assert {o.intra_op_num_threads for o in sessions} == {1, 2}


def _gru_model(tmp_path, hidden: int):
    """A conv, its 16 rows of 256 as a sequence through a GRU of `hidden`
    units (delegated: 2 x 16 x 3 hidden x (256 + hidden) flops), a conv."""
    rng = np.random.default_rng(4)
    b = GraphBuilder(seed=4, input_shape=(1, 8, 16, 16))
    y = b.conv(b.input, "c1", 16, 3, pads=1, relu="r1")
    seq = b.node("Reshape", [y, b.constant("to_seq", np.array([16, 1, 256]))], "seq")
    w = b.constant("w", rng.standard_normal((1, 3 * hidden, 256), np.float32) / 16)
    r = b.constant("r", rng.standard_normal((1, 3 * hidden, hidden), np.float32) / 16)
    y = b.node("GRU", [seq, w, r], "gru", hidden_size=hidden)
    y = b.node("Reshape", [y, b.constant("to_map", np.array([1, 16, hidden, 1]))], "map")
    y = b.conv(y, "c2", 8, 1)
    path = tmp_path / f"gru{hidden}.onnx"
    onnx.save(b.model(y, "gru"), path)
    return path


def test_a_recurrent_segment_counts_its_gate_products(tmp_path):
    """A GRU's output is small (16 x hidden) but its gate products are not:
    a heavy one gets the board's cores, a light one a single thread, and
    both give onnxruntime's output."""
    assert 2 * 16 * 3 * 128 * (256 + 128) >= PARALLEL_FLOPS > 2 * 16 * 3 * 4 * (256 + 4)
    x = np.random.default_rng(5).standard_normal((1, 8, 16, 16), np.float32)
    for hidden, threads in ((4, "1 thread"), (128, "2 threads, not spinning")):
        path = _gru_model(tmp_path, hidden)
        program = load(default_plan(path, tmp_path), board="split-host")
        out = next(iter(program.run(x).values()))
        kinds = [e.kind for e in program.last_profile if e.op == "delegated"]
        assert kinds and all(k.endswith(f"({threads})") for k in kinds), kinds
        want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
            None, {"input": x})[0]
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_replayed_segments_give_their_last_outputs_without_running(tmp_path, monkeypatch):
    """bench interference times native nodes beside delegated segments and
    with their outputs replayed: a replay calls no onnxruntime session and
    gives the outputs of the last real run."""
    calls = []
    real = ort.InferenceSession.run
    monkeypatch.setattr(ort.InferenceSession, "run",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    program = load(default_plan(_gru_model(tmp_path, 8), tmp_path), board="split-host")
    rng = np.random.default_rng(6)
    first, second = (rng.standard_normal((1, 8, 16, 16), np.float32) for _ in range(2))
    want = next(iter(program.run(first).values()))
    assert len(calls) == 1
    program.replay_delegated(True)
    replayed = next(iter(program.run(second).values()))
    assert len(calls) == 1
    np.testing.assert_array_equal(replayed, want)  # the GRU's output of `first`
    program.replay_delegated(False)
    assert not np.array_equal(next(iter(program.run(second).values())), want)
    assert len(calls) == 2


def test_both_balances_give_the_same_output(tmp_path):
    plan = default_plan(_delegating_model(tmp_path, 64), tmp_path)
    outputs = {}
    for balance in ("strict", "adaptive"):
        out = tmp_path / f"{balance}.npy"
        result = invoke("run", plan, "--repeat", "1", "--warmup", "0", "--balance", balance,
                        "--output", out)
        assert result.exit_code == 0, result.output
        outputs[balance] = np.load(out)
    assert np.array_equal(outputs["strict"], outputs["adaptive"])
    assert invoke("run", plan, "--balance", "fast").exit_code == 2
