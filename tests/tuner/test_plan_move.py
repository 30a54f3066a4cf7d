"""Plans move: a plan keeps its model's path relative to itself, so a folder
holding both can move; `--model` names a model that moved on its own; plans
holding an absolute path (written before) still run.  `plan show` refuses
what `run` refuses, with the same line."""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest

import acltuner

from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, default_plan, invoke

RUN = ("--repeat", "1", "--warmup", "0")


@pytest.fixture
def project(tmp_path):
    """A folder holding a small model and its plan."""
    folder = tmp_path / "project"
    folder.mkdir()
    b = GraphBuilder(seed=3, input_shape=(1, 4, 8, 8))
    y = b.conv(b.input, "c1", 8, 3, pads=1, relu="r1")
    y = b.conv(y, "c2", 8, 1)
    model = folder / "small.onnx"
    onnx.save(b.model(y, "small"), model)
    return default_plan(model, tmp_path)


def test_the_plan_holds_its_model_path_relative_to_itself(project):
    assert json.loads(project.read_text())["model"]["path"] == "small.onnx"


def test_a_plan_moved_with_its_model_runs(project, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    os.rename(project.parent, moved)
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the plan's folder nor the old one
    plan = moved / project.name
    ran = invoke("run", plan, *RUN)
    assert ran.exit_code == 0, ran.output
    shown = invoke("plan", "show", plan)
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines()[0] == f"model {moved / 'small.onnx'}"


def test_a_plan_with_an_absolute_model_path_still_runs(project, tmp_path, monkeypatch):
    data = json.loads(project.read_text())
    data["model"]["path"] = str(project.parent / "small.onnx")
    old = tmp_path / "old.plan.json"
    old.write_text(json.dumps(data))
    monkeypatch.chdir(project.parent.parent)
    assert invoke("run", old, *RUN).exit_code == 0
    assert invoke("plan", "show", old).exit_code == 0


def test_model_names_a_model_moved_on_its_own(project, tmp_path):
    model = tmp_path / "models" / "renamed.onnx"
    model.parent.mkdir()
    os.rename(project.parent / "small.onnx", model)
    for command in (("run", project, *RUN), ("plan", "show", project)):
        assert_one_line_error(invoke(*command), str(project), str(project.parent / "small.onnx"),
                              "--model")
        result = invoke(*command, "--model", model)
        assert result.exit_code == 0, result.output
    assert f"model {model}" in invoke("plan", "show", project, "--model", model).output
    # From Python too, where run gives the outputs by name.
    outputs = acltuner.load(project, model=model).run(np.ones((1, 4, 8, 8), np.float32))
    assert list(outputs) == [o.name for o in onnx.load(model).graph.output]
    assert all(isinstance(y, np.ndarray) for y in outputs.values())
    # The model given must still be the one tuned.
    other = tmp_path / "other.onnx"
    b = GraphBuilder(seed=4, input_shape=(1, 4, 8, 8))
    onnx.save(b.model(b.conv(b.conv(b.input, "c1", 8, 3, pads=1, relu="r1"), "c2", 8, 1),
                      "small"), other)
    assert_one_line_error(invoke("run", project, "--model", other), str(other),
                          "changed since tuning")


def _edited(plan, **config):
    data = json.loads(plan.read_text())
    data["nodes"][0]["config"].update(config)
    plan.write_text(json.dumps(data))


@pytest.mark.parametrize("config, needles", [
    ({"algorithm": "direct_nhcw"}, ("Conv node 'c1'", "unknown algorithm 'direct_nhcw'")),
    ({"core_weights": [1, 1, 1]}, ("node c1", "3 core weights", "split-host", "2 cores")),
])
def test_plan_show_refuses_what_run_refuses(project, config, needles):
    _edited(project, **config)
    ran = invoke("run", project, *RUN)
    assert_one_line_error(ran, str(project), *needles)
    shown = invoke("plan", "show", project)
    assert_one_line_error(shown, *needles)
    assert shown.output == ran.output
