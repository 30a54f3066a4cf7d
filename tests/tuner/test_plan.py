"""The plan file: round trip, atomic save, one-line validation errors, and
refusing a plan made for another model, board or engine version."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace

import pytest

from acltuner import plan as plan_module
from acltuner.engine.config import ExecConfig
from acltuner.plan import (InContext, Plan, PlanError, PlanNode, Tuning, check_plan, load_plan,
                           save_plan, sha256_file)
from tests.support.json_edit import set_field

BOARD_FP, ENGINE = "odroid-n2p-3f9a", "0.1.0"
DEFAULT = ExecConfig("im2col", "8x12-interleaved-neon", (1, 1, 1, 1, 1, 1), 6)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "resnet18.onnx"
    path.write_bytes(b"not really onnx, but bytes to hash" * 1000)
    return path


def make_plan(model_path, nodes: int = 4) -> Plan:
    return Plan(model_path=str(model_path), model_sha256=sha256_file(model_path),
                input_shapes={"input": (1, 3, 224, 224)}, board_name="odroid-n2p",
                board_fingerprint=BOARD_FP, engine_version=ENGINE, strategy="xgb",
                tuning=Tuning(wall_s=812.5, tuner_s=31.25, measurements=4000),
                nodes=tuple(PlanNode(node=f"/layer{i}/conv/Conv", task=f"task{i % 3}",
                                     config=ExecConfig("winograd_4x4_3x3", None,
                                                       (0, 0, 1, 1, 3, 3), i + 2),
                                     default_config=DEFAULT, tuned_ms=1.0 + i,
                                     default_ms=None if i == 0 else 2.0 + i)
                            for i in range(nodes)))


def make_checked_plan(model_path) -> Plan:
    """make_plan's, as the in-context check leaves it: node 1 sent back to its
    default (slower in the model), node 2 too (the default plan kept)."""
    plan = make_plan(model_path)
    nodes = list(plan.nodes)
    nodes[1] = nodes[1].revert("node", 4.5, 3.25)
    nodes[2] = nodes[2].revert("plan", None, 4.0)
    return replace(plan, nodes=tuple(nodes),
                   in_context=InContext("mixed", {"tuned": 9.5, "default": 9.0, "mixed": 8.5},
                                        {"tuned": 9.25, "default": 8.75, "mixed": 8.0}))


def test_sha256_file(model):
    assert sha256_file(model) == hashlib.sha256(model.read_bytes()).hexdigest()


def test_save_and_load_round_trip(tmp_path, model):
    plan = make_plan(model)
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    assert load_plan(path) == plan
    assert json.loads(path.read_text())["schema_version"] == 7
    assert json.loads(path.read_text())["precision"] == "fp32"
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_a_reverted_node_runs_its_default_and_keeps_the_tuned_config_it_dropped(tmp_path, model):
    tuned = make_plan(model)
    plan = make_checked_plan(model)
    node = plan.nodes[1]
    assert node.config == node.default_config == DEFAULT
    assert node.tuned_ms == node.default_ms == 3.0  # the time of the config that runs
    assert node.reverted.config == tuned.nodes[1].config
    assert node.reverted.tuned_ms == tuned.nodes[1].tuned_ms == 2.0
    assert (node.reverted.why, node.reverted.in_model_ms, node.reverted.default_in_model_ms) \
        == ("node", 4.5, 3.25)
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    assert load_plan(path) == plan
    written = json.loads(path.read_text())
    assert written["in_context"] == {"kept": "mixed",
                                     "ms": {"tuned": 9.5, "default": 9.0, "mixed": 8.5},
                                     "nodes_ms": {"tuned": 9.25, "default": 8.75, "mixed": 8.0}}
    assert written["nodes"][2]["reverted"]["why"] == "plan"
    assert "reverted" not in written["nodes"][0]


def _saved_as_version(tmp_path, data: dict, version: int):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**data, "schema_version": version}))
    return path


def test_a_version_5_plan_loads_and_has_no_nodes_sums(tmp_path, model):
    """Version 6 added the in-context check's nodes_ms."""
    plan = make_checked_plan(model)
    data = plan.to_dict()
    with pytest.raises(PlanError, match="in_context has unknown field"):
        load_plan(_saved_as_version(tmp_path, data, 5))
    del data["in_context"]["nodes_ms"]
    assert load_plan(_saved_as_version(tmp_path, data, 5)) == replace(
        plan, in_context=replace(plan.in_context, nodes_ms=None))


def test_a_version_4_plan_loads(tmp_path, model):
    """Version 5 added no field (int8 nodes' configs, runtime/ops/quant.py)."""
    plan = make_plan(model)
    assert load_plan(_saved_as_version(tmp_path, plan.to_dict(), 4)) == plan


@pytest.mark.parametrize("version, later", [(1, "pinned"), (2, "reverted"), (3, "precision")])
def test_an_older_plan_loads_without_the_later_fields(tmp_path, model, version, later):
    plan = make_plan(model)
    data = plan.to_dict()
    data["schema_version"] = version
    del data["precision"]  # version 4's: an older plan was tuned in fp32
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    assert load_plan(path) == plan and plan.precision == "fp32"
    if later == "precision":
        data["precision"], where = "fp16", ""
    else:
        data["nodes"][0][later] = make_checked_plan(model).nodes[1].to_dict()["reverted"] \
            if later == "reverted" else "im2col"
        where = r"nodes\[0\] "
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError, match=rf"{where}has unknown field\(s\) {later}"):
        load_plan(path)


def test_an_fp16_plan_records_its_precision(tmp_path, model):
    plan = replace(make_plan(model), precision="fp16")
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    assert json.loads(path.read_text())["precision"] == "fp16"
    assert load_plan(path) == plan


def test_a_crash_before_the_rename_keeps_the_old_plan(tmp_path, model, monkeypatch):
    path = tmp_path / "plan.json"
    save_plan(make_plan(model, nodes=2), path)
    old = path.read_bytes()

    def crash(src, dst):
        raise OSError("killed before the rename")
    monkeypatch.setattr(plan_module.os, "replace", crash)
    with pytest.raises(OSError, match="killed before the rename"):
        save_plan(make_plan(model, nodes=5), path)
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["plan.json", "resnet18.onnx"]  # no temp file left


def test_a_plan_that_would_not_load_is_not_saved(tmp_path, model):
    bad = replace(make_plan(model), model_sha256="abc")
    with pytest.raises(PlanError, match="model.sha256 must be 64 lowercase hex digits"):
        save_plan(bad, tmp_path / "plan.json")
    assert sorted(os.listdir(tmp_path)) == ["resnet18.onnx"]


@pytest.mark.parametrize("change, message", [
    (set_field("nodes[3].config.workloads", 0), "nodes[3].config.workloads must be >= 1, got 0"),
    (set_field("nodes[1].config.core_weights[2]", -1),
     "nodes[1].config.core_weights[2] must be >= 0, got -1"),
    (set_field("nodes[0].default_config.algorithm", 7),
     "nodes[0].default_config.algorithm must be a string, got 7"),
    (set_field("nodes[2].tuned_ms", "fast"), "nodes[2].tuned_ms must be a number, got 'fast'"),
    (set_field("nodes[2].node", "/layer1/conv/Conv"),
     "nodes[2].node '/layer1/conv/Conv' appears more than once"),
    (set_field("nodes[1].task", KeyError), "nodes[1].task is missing"),
    (set_field("nodes[1].speed", 1), "nodes[1] has unknown field(s) speed"),
    (set_field("nodes", {}), "nodes must be a list, got an object"),
    (set_field("board.fingerprint", KeyError), "board.fingerprint is missing"),
    (set_field("model", KeyError), "model is missing"),
    (set_field("model.sha256", "ABC"), "model.sha256 must be 64 lowercase hex digits, got 'ABC'"),
    (set_field("input_shapes.input[1]", 0), "input_shapes.input[1] must be >= 1, got 0"),
    (set_field("tuning.measurements", "4000"),
     "tuning.measurements must be an integer, got '4000'"),
    (set_field("tuning.wall_s", True), "tuning.wall_s must be a number, got true or false"),
    (set_field("schema_version", 8), "schema_version 8 is not supported (this acltuner reads 7)"),
    (set_field("precision", "fp8"), "precision must be 'fp32' or 'fp16', got 'fp8'"),
    (set_field("created", "now"), "created must be an ISO 8601 time, got 'now'"),
    (set_field("nodes[1].reverted.why", "slow"),
     "nodes[1].reverted.why must be 'node' or 'plan', got 'slow'"),
    (set_field("nodes[1].reverted.in_model_ms", -1),
     "nodes[1].reverted.in_model_ms must be >= 0, got -1"),
    (set_field("nodes[1].reverted.config.workloads", 0),
     "nodes[1].reverted.config.workloads must be >= 1, got 0"),
    (set_field("nodes[1].config.workloads", 3),
     "nodes[1].config must be its default_config: the node is marked reverted"),
    (set_field("in_context.kept", "best"),
     "in_context.kept must be 'tuned' or 'default' or 'mixed', got 'best'"),
    (set_field("in_context.ms.default", KeyError), "in_context.ms.default is missing"),
    (set_field("in_context.ms.fastest", 1.0), "in_context.ms has unknown field(s) fastest"),
    (set_field("in_context.nodes_ms.mixed", KeyError),
     "in_context.nodes_ms names tuned, default, in_context.ms tuned, default, mixed: they must "
     "name the same plans"),
    (set_field("in_context.nodes_ms.tuned", -2.0),
     "in_context.nodes_ms.tuned must be >= 0, got -2"),
])
def test_a_bad_field_is_one_error_naming_file_and_field(tmp_path, model, change, message):
    data = make_checked_plan(model).to_dict()
    change(data)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError) as e:
        load_plan(path)
    assert str(e.value) == f"{path}: {message}"


@pytest.mark.parametrize("text, message", [
    ('{"schema_version": 1,', "not valid JSON: Expecting property name"),
    ("[1, 2]", "the top level must be an object, got a list"),
    (b"\xff\xfe{}", "not valid JSON"),
])
def test_a_file_that_is_not_a_plan_is_one_error(tmp_path, text, message):
    path = tmp_path / "plan.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(PlanError) as e:
        load_plan(path)
    assert str(e.value).startswith(f"{path}: {message}") and "\n" not in str(e.value)


def test_check_plan_accepts_what_it_was_made_for(model):
    assert check_plan(make_plan(model), model, BOARD_FP, ENGINE) == []


def test_check_plan_refuses_a_changed_model(model):
    plan = make_plan(model)
    model.write_bytes(model.read_bytes() + b"!")
    with pytest.raises(PlanError) as e:
        check_plan(plan, model, BOARD_FP, ENGINE)
    assert str(e.value).startswith(f"model {model} changed since tuning (sha256 ")
    assert str(e.value).endswith("; use --force to run it anyway") and "\n" not in str(e.value)


def test_check_plan_refuses_another_board_and_engine(model):
    plan = make_plan(model)
    with pytest.raises(PlanError, match=rf"^plan for board odroid-n2p \({BOARD_FP}\) but "
                                        r"running on rk3588-77aa; use --force"):
        check_plan(plan, model, "rk3588-77aa", ENGINE)
    with pytest.raises(PlanError, match=r"^plan tuned with engine 0.1.0 but running engine "
                                        r"0.2.0; use --force"):
        check_plan(plan, model, BOARD_FP, "0.2.0")


def test_check_plan_with_force_warns_instead(model):
    plan = make_plan(model)
    model.write_bytes(b"another model")
    warnings = check_plan(plan, model, "rk3588-77aa", "0.2.0", force=True)
    assert len(warnings) == 3
    assert warnings[0].startswith(f"model {model} changed since tuning")
    assert "running on rk3588-77aa" in warnings[1] and "running engine 0.2.0" in warnings[2]
    assert check_plan(plan, model, "rk3588-77aa", ENGINE, force=True)[1:] == [warnings[1]]
