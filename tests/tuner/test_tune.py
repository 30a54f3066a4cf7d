"""`acltuner tune` end to end on this host (split-host: cpu0 and cpu1 as two
clusters): the plan, resumption after kill -9, the cross-model cache, the
rule-based plan and bad input.  No assertion here is on a measured time."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import onnx
import pytest
import yaml
from click.testing import CliRunner
from onnx import TensorProto, helper

from acltuner.cli import main
from acltuner.engine import native
from acltuner.plan import load_plan
from acltuner.tuner.tuner_config import DEFAULT_PATH, load_tuner_config
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error
from tests.support.records_checks import latest, read_records


def _model_a(path):
    b = GraphBuilder(seed=1, input_shape=(1, 3, 24, 24))
    x = b.conv("input", "c1", 16, 3, pads=1, bn="c1.bn", relu="c1.relu")
    y = b.conv(x, "c2", 16, 3, pads=1, bn="c2.bn", relu="c2.relu")
    y = b.conv(y, "c3", 16, 3, pads=1, bn="c3.bn")
    y = b.add(y, x, "add", relu="add.relu")
    y = b.conv(y, "c4", 32, 1, stride=2)
    onnx.save(b.model(y, "a"), path)
    return path


def _model_b(path):
    """Shares c2's task (16 -> 16, 3x3 on 24x24) with model a."""
    b = GraphBuilder(seed=2, input_shape=(1, 16, 24, 24))
    y = b.conv("input", "d1", 16, 3, pads=1, relu="d1.relu")
    y = b.conv(y, "d2", 8, 3, pads=1)
    onnx.save(b.model(y, "b"), path)
    return path


def _tune(*args):
    return CliRunner().invoke(main, ["tune", *map(str, args)])


@pytest.fixture
def models(tmp_path):
    return _model_a(tmp_path / "a.onnx"), _model_b(tmp_path / "b.onnx")


def test_tune_writes_a_plan_for_every_conv(models, tmp_path):
    a, _ = models
    plan_path, records = tmp_path / "a.plan.json", tmp_path / "r.jsonl"
    # --no-in-context: the plan holds each task's best (test_in_context: the check).
    result = _tune(a, "-o", plan_path, "--board", "split-host", "--trials", "60",
                   "--records", records, "--no-in-context")
    assert result.exit_code == 0, result.output
    assert "tuner's own time" in result.output and "speedup" in result.output
    plan = load_plan(plan_path)
    assert [n.node for n in plan.nodes] == ["c1", "c2", "c3", "c4"]
    assert plan.nodes[1].task == plan.nodes[2].task  # same shape, different epilogue
    recs = latest(read_records(records))
    per_task = Counter(r["task"] for r in recs)
    assert set(per_task.values()) == {60} and len(per_task) == 3
    assert plan.tuning.measurements == 180
    for node in plan.nodes:
        task = [r for r in recs if r["task"] == node.task]
        usable = [r for r in task if r["ok"] and r["correct"]]
        # Times of a ~1 us layer tie at the launcher's resolution: any of the fastest.
        best_ms = min(r["median_ms"] for r in usable)
        assert node.tuned_ms == best_ms
        assert any(r["config"] == node.config.to_dict() and r["median_ms"] == best_ms
                   for r in usable)
        default = [r for r in task if r["config"] == node.default_config.to_dict()]
        assert len(default) == 1 and node.default_ms == default[0]["median_ms"]
        assert node.tuned_ms <= node.default_ms
        assert sum(node.default_config.core_weights) == 1  # ArmNN: min cluster size = 1 here
        # Then each other algorithm once on the default's cores, before any search.
        algorithms = list(dict.fromkeys(r["config"]["algorithm"] for r in task))
        heads = task[:len(algorithms)]
        assert heads[0]["config"] == node.default_config.to_dict()
        assert [h["config"]["algorithm"] for h in heads] == \
            [node.default_config.algorithm] + [a for a in algorithms
                                               if a != node.default_config.algorithm]
        for h in heads:
            assert h["config"]["core_weights"] == list(node.default_config.core_weights)
            assert h["config"]["workloads"] == node.default_config.workloads
    assert {r["strategy"] for r in recs} == {"xgb"}


def test_kill_9_then_resume_loses_and_repeats_nothing(models, tmp_path):
    a, _ = models
    plan_path, records = tmp_path / "a.plan.json", tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "acltuner.cli", "tune", str(a), "-o", str(plan_path),
           "--board", "split-host", "--trials", "40", "--records", str(records)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and len(records.read_bytes().splitlines()) >= 50:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "tune finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = [line for line in records.read_text().splitlines() if line.endswith("}")]
    assert not plan_path.exists()

    result = _tune(a, "-o", plan_path, "--board", "split-host", "--trials", "40",
                   "--records", records)
    assert result.exit_code == 0, result.output
    after = latest(read_records(records))  # fails if a configuration was measured twice
    assert set(Counter(r["task"] for r in after).values()) == {40}
    after_lines = records.read_text().splitlines()
    assert all(line in after_lines for line in before if json.loads(line)), "records lost"
    plan = load_plan(plan_path)
    for node in plan.nodes:
        usable = [r["median_ms"] for r in after
                  if r["task"] == node.task and r["ok"] and r["correct"]]
        # The in-context check may give a node back its default (on a loaded
        # machine it does): the search's best is then the reverted config's.
        searched_ms = node.reverted.tuned_ms if node.reverted else node.tuned_ms
        assert searched_ms == min(usable)


def test_tasks_tuned_by_another_model_are_reused(models, tmp_path):
    a, b = models
    records = tmp_path / "r.jsonl"
    assert _tune(a, "-o", tmp_path / "a.json", "--board", "split-host", "--trials", "12",
                 "--records", records).exit_code == 0
    first = read_records(records)
    result = _tune(b, "-o", tmp_path / "b.json", "--board", "split-host", "--trials", "12",
                   "--records", records)
    assert result.exit_code == 0, result.output
    new = read_records(records)[len(first):]
    plan_b = load_plan(tmp_path / "b.json")
    shared = plan_b.nodes[0].task
    assert shared in {r["task"] for r in first}
    assert shared not in {r["task"] for r in new}, "a cached task was measured again"
    assert {r["task"] for r in new} == {plan_b.nodes[1].task}
    assert plan_b.nodes[0].tuned_ms is not None


def test_records_of_another_measurement_protocol_are_measured_again(models, tmp_path):
    """Warm-cache times are no cache for cold-cache tuning, nor the reverse."""
    _, b = models
    records = tmp_path / "r.jsonl"
    settings = yaml.safe_load(DEFAULT_PATH.read_text())
    settings["measure"]["cache"] = "warm"
    warm_config = tmp_path / "warm.yaml"
    warm_config.write_text(yaml.safe_dump(settings))
    common = ["--board", "split-host", "--trials", "6", "--records", records]

    def tune(*extra):
        before = len(read_records(records)) if records.exists() else 0
        result = _tune(b, "-o", tmp_path / "b.json", *common, *extra)
        assert result.exit_code == 0, result.output
        return read_records(records)[before:]

    warm = tune("--config", warm_config)
    cold = tune()
    assert len(latest(warm)) == len(latest(cold)) == 12
    assert {r["measure"]["evict_bytes"] for r in warm} == {0}
    (evict,) = {r["measure"]["evict_bytes"] for r in cold}
    assert evict > 0
    assert tune("--config", warm_config) == [] and tune() == []  # each reuses its own


def test_default_strategy_measures_nothing(models, tmp_path):
    a, _ = models
    records = tmp_path / "r.jsonl"
    result = _tune(a, "-o", tmp_path / "d.json", "--board", "split-host", "--strategy",
                   "default", "--records", records)
    assert result.exit_code == 0, result.output
    assert not records.exists() or records.read_text() == ""
    plan = load_plan(tmp_path / "d.json")
    assert all(n.config == n.default_config and n.tuned_ms is None for n in plan.nodes)
    assert plan.nodes[0].config.algorithm == "im2col"  # C_in = 3 < 16: General


def test_bad_input_is_one_line(tmp_path):
    text = tmp_path / "notes.onnx"
    text.write_text("not a model")
    assert_one_line_error(_tune(text, "-o", tmp_path / "p.json"), "notes.onnx")

    b = GraphBuilder(input_shape=(1, 3, 8, 8))
    no_conv = tmp_path / "noconv.onnx"
    onnx.save(b.model(b.node("Relu", ["input"], "r"), "g"), no_conv)
    assert_one_line_error(_tune(no_conv, "-o", tmp_path / "p.json"), "no 2-D Conv")

    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [onnx.numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")])
    dynamic = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), dynamic)
    assert_one_line_error(_tune(dynamic, "-o", tmp_path / "p.json"), "--input-shape", "x")

    assert_one_line_error(_tune(text, "-o", tmp_path / "p.json", "--board", "odroid-n3"),
                    "odroid-n3")


def test_plan_show_refuses_corrupted_and_mismatched_plans(models, tmp_path):
    a, _ = models
    plan_path = tmp_path / "d.json"
    assert _tune(a, "-o", plan_path, "--board", "split-host", "--strategy", "default",
                 "--records", tmp_path / "r.jsonl").exit_code == 0
    ok = CliRunner().invoke(main, ["plan", "show", str(plan_path)])
    assert ok.exit_code == 0 and "c1" in ok.output and "im2col" in ok.output

    other_board = CliRunner().invoke(main, ["plan", "show", str(plan_path), "--board", "host"])
    assert_one_line_error(other_board, "plan for board split-host", "--force")
    forced = CliRunner().invoke(main, ["plan", "show", str(plan_path), "--board", "host",
                                       "--force"])
    assert forced.exit_code == 0 and "warning: plan for board split-host" in forced.output

    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text(plan_path.read_text()[:-40])
    assert_one_line_error(CliRunner().invoke(main, ["plan", "show", str(corrupt)]), "corrupt.json",
                    "not valid JSON")
    data = json.loads(plan_path.read_text())
    data["nodes"][0]["config"]["workloads"] = 0
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(data))
    assert_one_line_error(CliRunner().invoke(main, ["plan", "show", str(wrong)]),
                    "nodes[0].config.workloads")

    _model_b(a)  # the model changes after tuning
    assert_one_line_error(CliRunner().invoke(main, ["plan", "show", str(plan_path)]),
                    "changed since tuning")


def test_records_of_another_engine_build_are_measured_again(models, tmp_path):
    """Records carry the engine's version and build fingerprint; those of an
    engine built from other sources or flags are kept but not reused, and a
    plan of another build is refused."""
    _, b = models
    records = tmp_path / "r.jsonl"
    args = [b, "-o", tmp_path / "b.json", "--board", "split-host", "--trials", "6",
            "--records", records]
    assert _tune(*args).exit_code == 0
    first = read_records(records)
    engine = native.local_engine_id()
    assert first and {r["engine"] for r in first} == {engine}
    assert load_plan(tmp_path / "b.json").engine_version == engine

    older = engine.split("+")[0] + "+0123456789abcdef"
    records.write_text("".join(json.dumps({**r, "engine": older}) + "\n" for r in first))
    assert _tune(*args).exit_code == 0
    again = read_records(records)[len(first):]
    assert len(latest(again)) == len(latest(first)) and {r["engine"] for r in again} == {engine}

    stats = CliRunner().invoke(main, ["records", "stats", str(records)])
    assert stats.exit_code == 0
    assert f"engine {older}" in stats.output and f"engine {engine}" in stats.output

    plan = json.loads((tmp_path / "b.json").read_text())
    plan["engine_version"] = older
    (tmp_path / "old.json").write_text(json.dumps(plan))
    assert_one_line_error(CliRunner().invoke(main, ["plan", "show", str(tmp_path / "old.json")]),
                          f"plan tuned with engine {older}", "--force")


def test_a_noisy_measurement_is_measured_again(models, tmp_path):
    """A busy process pinned to cpu0 competes with every config that uses it:
    with a tight spread target and a short time cap their times are too spread
    and are measured once more; nothing else is measured twice.  Without the
    in-context check, whose verdict beside the busy process could put a node
    back to its default (the time that counts is then the default's)."""
    _, b = models
    settings = yaml.safe_load(DEFAULT_PATH.read_text())
    settings["measure"].update(ci_target_pct=0.1, max_repeat_ms=20)
    config = tmp_path / "noisy.yaml"
    config.write_text(yaml.safe_dump(settings))
    records = tmp_path / "r.jsonl"
    busy = subprocess.Popen([sys.executable, "-c",
                             "import os\nos.sched_setaffinity(0, {0})\nwhile True: pass"])
    try:
        result = _tune(b, "-o", tmp_path / "b.json", "--board", "split-host", "--trials", "6",
                       "--records", records, "--config", config, "--no-in-context")
    finally:
        busy.kill()
        busy.wait()
    assert result.exit_code == 0, result.output
    recs = read_records(records)
    by_config: dict[tuple, list[dict]] = {}
    for r in recs:
        by_config.setdefault((r["task"], json.dumps(r["config"])), []).append(r)
    assert len(by_config) == 12 and len(latest(recs)) == 12
    for group in by_config.values():
        first = group[0]
        spread = first["ok"] and first["ci_pct"] is not None and first["ci_pct"] > 0.1
        assert len(group) == (2 if spread or first["throttled"] else 1), group
    assert any(len(group) == 2 for group in by_config.values()), "no time was too spread"
    plan = load_plan(tmp_path / "b.json")
    for node in plan.nodes:  # the time taken again is the one that counts
        usable = [g[-1]["median_ms"] for (task, _), g in by_config.items()
                  if task == node.task and g[-1]["ok"] and g[-1]["correct"]]
        assert node.tuned_ms == min(usable)


def test_transfer_model_beside_the_records_only_with_auto(models, tmp_path):
    a, b = models
    records, off = tmp_path / "r.jsonl", tmp_path / "off.jsonl"
    result = _tune(a, "-o", tmp_path / "a.plan.json", "--board", "split-host", "--trials", "12",
                   "--records", records)
    assert result.exit_code == 0, result.output
    # Model a's tasks had at most two others before them: too few (min_tasks 3).
    assert not (tmp_path / "r.transfer.json").exists()
    off.write_bytes(records.read_bytes())
    result = _tune(b, "-o", tmp_path / "b.plan.json", "--board", "split-host", "--trials", "12",
                   "--records", off, "--transfer", "off")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "off.transfer.json").exists()
    result = _tune(b, "-o", tmp_path / "b.plan.json", "--board", "split-host", "--trials", "12",
                   "--records", records)
    assert result.exit_code == 0, result.output
    assert "1 of 2 tasks warm-started by the transfer model" in result.output
    from acltuner.tuner.transfer import TransferModel
    model = TransferModel.load(tmp_path / "r.transfer.json", load_tuner_config().transfer.xgboost)
    # Fitted before d2 (the only new task) was measured: on model a's three tasks.
    d2 = "|" + _d2_key(records)
    assert len(model.tasks) == 3 and not any(t.endswith(d2) for t in model.tasks)


def _d2_key(records) -> str:
    keys = [r["task"] for r in read_records(records)]
    return keys[-1]


def test_output_paths_are_checked_before_measuring(models, tmp_path):
    """A plan or records path that cannot be written fails in one line naming
    it, before any measurement (not at the end, with a temporary file's name)."""
    a, _ = models
    records = tmp_path / "r.jsonl"
    missing = tmp_path / "missing" / "a.plan.json"
    assert_one_line_error(_tune(a, "-o", missing, "--board", "split-host", "--trials", "4",
                                "--records", records), str(missing), "no folder")
    assert not records.exists() or not read_records(records)
    assert_one_line_error(_tune(a, "-o", tmp_path, "--board", "split-host", "--trials", "4",
                                "--records", records), str(tmp_path), "a folder")

    plan = tmp_path / "a.plan.json"
    a_file = tmp_path / "file"
    a_file.write_text("")
    under_a_file = a_file / "r.jsonl"
    assert_one_line_error(_tune(a, "-o", plan, "--board", "split-host", "--records",
                                under_a_file), str(under_a_file), "cannot make its folder")
    assert_one_line_error(_tune(a, "-o", plan, "--board", "split-host", "--records", tmp_path),
                          str(tmp_path), "a folder")
    assert not plan.exists()
