"""acltuner bench ops: every case is an operation our engine runs natively,
with onnxruntime's outputs, and the bench prints its table and ratio."""
from __future__ import annotations

import csv
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from acltuner.bench import ops
from acltuner.board.registry import load_board
from acltuner.onnx.model import load_model_detached
from acltuner.runtime import load
from acltuner.runtime.load import compile_model
from tests.support.cli_checks import default_plan, invoke


@pytest.mark.parametrize("case", ops.CASES, ids=lambda c: c.name)
def test_case_runs_natively_and_matches_onnxruntime(case, tmp_path):
    path = tmp_path / "op.onnx"
    built = case.build()
    onnx.save(built, path)
    if ops.tunable(built):  # its convolution or product with the ArmNN-rule config
        program = load(default_plan(path, tmp_path), native_only=True)
    else:
        model, weights = load_model_detached(str(path), None)
        program = compile_model(model, {}, load_board("host"), weights=weights,
                                native_only=True)
    rng = np.random.default_rng(0)
    inputs = {name: rng.standard_normal(dims).astype(np.float32)
              for name, (dims, _) in program.inputs.items()}
    ours = program.run(inputs)["y"]
    reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, inputs)[0]
    assert ours.shape == reference.shape
    assert np.abs(ours - reference).max() <= 1e-3 * np.abs(reference).max()


def test_bench_ops_prints_a_row_per_case_and_the_ratio(tmp_path):
    result = invoke("bench", "ops", "--cases", "mobilevit.layernorm,convnext.gelu",
                    "--rounds", "1", "--repeat", "3", "--no-realtime", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert re.fullmatch(r"ops_vs_onnxruntime: \d+\.\d{3}", lines[-1])
    rows = list(csv.DictReader(open(tmp_path / "ops.csv")))
    assert [r["case"] for r in rows] == ["mobilevit.layernorm", "convnext.gelu"]
    assert all(float(r["ours_ms"]) > 0 and float(r["ort_ms"]) > 0 for r in rows)
    assert "layer_norm" in rows[0]["kind"] and "gelu" in rows[1]["kind"]
    # The lead node (a Neg before the operation) is timed apart, on both sides.
    assert all(float(r["lead_ours_ms"]) > 0 and float(r["lead_ort_ms"]) > 0 for r in rows)


def test_every_case_reads_its_inputs_through_a_lead_node():
    for case in ops.CASES:
        graph = case.build().graph
        inputs = {i.name for i in graph.input}
        leads = [n for n in graph.node if n.name.startswith("lead/")]
        assert inputs <= {n.input[0] for n in leads}, case.name
        assert {n.op_type for n in leads} <= {"Neg", "Reshape"}, case.name
        rest = [n for n in graph.node if n not in leads]
        assert not inputs & {i for n in rest for i in n.input}, case.name


def test_bench_ops_refuses_an_unknown_case(tmp_path):
    result = invoke("bench", "ops", "--cases", "mobilevit.nope", "--out", tmp_path)
    assert result.exit_code == 2
    assert "unknown case(s) mobilevit.nope" in result.output
