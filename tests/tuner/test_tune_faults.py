"""Crash and hang isolation in `tune`: configurations that kill the launcher
(SIGSEGV, abort) or hang it are recorded as failed with the reason, a new
launcher takes over with the task loaded, and the tune goes on.  The faults
come from a launcher built with ACL_FAULT_INJECTION (a test-only CMake
option; launcher/fault.h), told by ACL_LAUNCHER_FAULTS which algorithms fail."""
from __future__ import annotations

import json

import numpy as np
import onnx
import yaml
from onnx import TensorProto, helper, numpy_helper

from acltuner.app.tune import run_tune
from acltuner.measure import launcher_runner, launchers
from acltuner.paths import configs_dir
from tests.support.c_suites import checks_build

FAULTS = {"winograd_2x2_3x3": "SIGSEGV", "indirect": "SIGABRT", "winograd_1x2_1x3": "timed out"}
TASKS = 20


def chain_model(path) -> None:
    """TASKS convolutions of distinct shapes in a chain: 3x3 ones, and a 1x3
    every fifth (the only ones winograd_1x2_1x3, the hanging algorithm, runs)."""
    rng = np.random.default_rng(0)
    nodes, inits, c = [], [], 2
    for i in range(TASKS):
        oc, kh = c + 1, 1 if i % 5 == 4 else 3
        w = numpy_helper.from_array(rng.standard_normal((oc, c, kh, 3)).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [f"t{i}", f"w{i}"], [f"t{i + 1}"], name=f"conv{i}",
                                      kernel_shape=[kh, 3], pads=[kh // 2, 1, kh // 2, 1]))
        c = oc
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info(f"t{TASKS}", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def quick_tuner_config(path) -> None:
    config = yaml.safe_load((configs_dir() / "tuner.yaml").read_text())
    config["measure"].update(cache="warm", warmup=0, min_repeat_ms=0, min_repeats=1,
                             max_repeats=3)
    path.write_text(yaml.safe_dump(config))


def test_a_tune_with_crashing_and_hanging_configs_measures_every_other(tmp_path, monkeypatch):
    (launcher,) = checks_build(["acl-launcher"])
    monkeypatch.setenv("ACLTUNER_LAUNCHER", str(launcher))
    monkeypatch.setenv("ACL_LAUNCHER_FAULTS", ",".join(
        f"{algorithm}={'hang' if reason == 'timed out' else reason[3:].lower()}"
        for algorithm, reason in FAULTS.items()).replace("=abrt", "=abort"))
    # A hang is given up after the floor plus the repeats at 50x the default's
    # time; a short floor keeps the test quick (the configs here take < 1 ms).
    monkeypatch.setattr(launcher_runner, "HANG_FLOOR_S", 2.0)
    # Only for a default config that hung, which has no time to scale from.
    monkeypatch.setattr(launchers, "LAUNCHER_TIMEOUT_S", 30.0)
    model, config = tmp_path / "chain.onnx", tmp_path / "tuner.yaml"
    chain_model(model)
    quick_tuner_config(config)
    records = tmp_path / "records.jsonl"
    plan, reports = run_tune(str(model), str(tmp_path / "plan.json"), board_name="host",
                             trials=12, early_stopping=None, strategy="random",
                             records_path=str(records), input_shapes=(),
                             config_path=str(config), seed=0)
    assert len(reports) == TASKS and len(plan.nodes) == TASKS
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    failed_by = {reason: 0 for reason in FAULTS.values()}
    for r in lines:
        reason = FAULTS.get(r["config"]["algorithm"])
        if reason is None:
            # every other config measured
            assert r["ok"] and r["correct"], (r["task"], r["config"], r["error"])
        else:
            assert not r["ok"] and reason in r["error"], r
            failed_by[reason] += 1
    assert all(failed_by.values()), failed_by
    # Each task spent its whole budget despite its faults and found a best config.
    assert all(rep.measured == 12 and rep.tuned_ms for rep in reports)
    assert len(lines) == 12 * TASKS
