"""`acltuner bench compare --model-dir`: any folder of models, their input
shapes from its shapes.yaml, side by side with onnxruntime (ratios only: no
time is asserted)."""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import sys

import onnx
import pytest
import yaml

from acltuner.bench import compare
from acltuner.plan import load_plan, save_plan
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, default_plan, invoke


def test_a_folder_of_models_with_dynamic_inputs(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    b = GraphBuilder(input_shape=(1, 3, "H", "W"))
    onnx.save(b.model(b.conv(b.input, "c", 8, 3, pads=1, relu="r"), "tiny"), models / "tiny.onnx")
    (models / "shapes.yaml").write_text(yaml.safe_dump(
        {"schema": 1, "models": {"tiny": {"input": [1, 3, 12, 10]}}}))
    out = tmp_path / "out"
    result = invoke("bench", "compare", "--model-dir", models, "--trials", "1", "--repeat", "2",
                    "--rounds", "2", "--round-ms", "0", "--out", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-2].startswith("slowest vs onnxruntime: tiny ")
    assert result.stdout.splitlines()[-1].startswith("geomean_vs_onnxruntime: ")
    with (out / "compare.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["model"] == "tiny"
    assert all(float(row[k]) > 0 for k in ("onnxruntime_ms", "default_ms", "tuned_ms"))
    same = compare.same_configs(out / "tiny.tuned.json", out / "tiny.default.json")
    assert row["tuned_is_default"] == str(same)
    # A tuned plan that is the default plan is never "slower than default".
    summary = result.stdout.splitlines()[-2]
    assert ("tuned plan is the default plan: tiny" in summary) == same
    assert "tuned slower than default: none" in summary or not same
    # Each engine's round medians are kept, in compare.json only.
    (saved,) = json.loads((out / "compare.json").read_text())["rows"]
    for engine in ("onnxruntime", "default", "tuned"):
        rounds = saved[f"{engine}_rounds_ms"]
        assert len(rounds) == 2 and sorted(rounds)[0] <= saved[f"{engine}_ms"] <= max(rounds)
    assert not any(k.endswith("_rounds_ms") for k in row)
    # A model of microseconds keeps its digits in the table.
    assert "| 0.0 |" not in (out / "compare.md").read_text()


def test_a_model_that_cannot_be_loaded_is_one_line_and_the_others_run(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    onnx.save(b.model(b.conv(b.input, "c", 8, 3, pads=1), "tiny"), models / "tiny.onnx")
    (models / "broken.onnx").write_bytes(b"not a model")
    out = tmp_path / "out"
    result = invoke("bench", "compare", "--model-dir", models, "--trials", "1", "--repeat", "2",
                    "--rounds", "1", "--round-ms", "0", "--out", out)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if "broken" in x]
    assert line.startswith("  broken: skipped: ")
    assert "skipped: broken" in result.stdout
    with (out / "compare.csv").open() as f:
        assert [r["model"] for r in csv.DictReader(f)] == ["tiny"]
    assert list(json.loads((out / "compare.json").read_text())["skipped"]) == ["broken"]


def test_a_folder_where_no_model_can_be_compared_is_one_line(tmp_path):
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    result = invoke("bench", "compare", "--model-dir", tmp_path, "--trials", "1",
                    "--out", tmp_path / "out")
    assert result.exit_code != 0
    assert "no model could be compared: broken: " in result.output
    assert "Traceback" not in result.output


def test_plans_are_the_same_only_when_every_node_has_the_same_config(tmp_path):
    model = tmp_path / "two.onnx"
    b = GraphBuilder(input_shape=(1, 8, 12, 12))
    onnx.save(b.model(b.conv(b.conv(b.input, "a", 8, 3, pads=1), "b", 8, 1), "two"), model)
    plan = default_plan(model, tmp_path)
    copy = shutil.copy(plan, tmp_path / "copy.json")
    assert compare.same_configs(plan, copy)
    p = load_plan(copy)
    first = p.nodes[0]
    other = dataclasses.replace(first.config, workloads=first.config.workloads + 1)
    save_plan(dataclasses.replace(p, nodes=(dataclasses.replace(first, config=other),
                                            *p.nodes[1:])), copy)
    assert not compare.same_configs(plan, copy)


def test_a_fast_model_gets_enough_runs_to_fill_a_round():
    assert compare.runs_per_round(50.0, 20, 300.0) == 20
    assert compare.runs_per_round(0.04, 20, 300.0) == 5000
    assert compare.runs_per_round(1.5, 20, 300.0) == 200
    assert compare.runs_per_round(1.5, 20, 0.0) == 20


def test_an_empty_folder_is_one_line(tmp_path):
    result = invoke("bench", "compare", "--model-dir", tmp_path, "--out", tmp_path / "out")
    assert_one_line_error(result, f"{tmp_path}: no .onnx models in it")


def test_timing_processes_run_at_real_time_priority_where_allowed():
    probe = [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"]
    assert int(compare._call(probe)) == os.SCHED_OTHER
    if not compare.realtime_allowed():
        pytest.skip("real-time priority refused here")
    assert int(compare._call(probe, realtime=True)) == os.SCHED_FIFO


def test_tuned_slower_than_default_says_whether_every_round_was():
    """A median of three rounds can fall either way on a noisy host: the
    summary tells a tuned plan slower in every round from one whose rounds
    overlap the default's."""
    def row(model, tuned, default, same=False):
        return {"model": model, "tuned_rounds_ms": tuned, "default_rounds_ms": default,
                "tuned_vs_default": sorted(default)[1] / sorted(tuned)[1], "tuned_is_default": same}
    rows = [row("worse", [2.1, 2.2, 2.3], [1.0, 1.1, 1.2]),
            row("noise", [1.0, 1.5, 2.0], [0.9, 1.2, 1.6]),
            row("faster", [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]),
            row("same", [1.3, 1.3, 1.3], [1.0, 1.0, 1.0], same=True)]
    assert compare.below_default(rows) == "worse (in every round), noise (the rounds overlap)"
    assert compare.below_default(rows[2:]) == "none"
