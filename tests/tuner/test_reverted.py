"""Nodes the in-context check sent back to their default config are marked
wherever a plan is shown: the plan file records the tuned config dropped and
why, and `plan show` (text and JSON) gives the config that runs with its time.
No assertion is on which config is faster: the check's own test forces a loss."""
from __future__ import annotations

import dataclasses
import json

from acltuner.engine.launcher import LauncherClient, default_launcher_path
from acltuner.plan import InContext, load_plan, save_plan
from acltuner.tuner.in_context import check_in_context
from tests.support.cli_checks import invoke
from tests.tuner.test_in_context import _default_plan, _with


def test_the_check_records_what_it_sent_back_in_the_plan(tmp_path):
    plan, _ = _default_plan(tmp_path)
    tuned = _with(plan, "conv0", algorithm="reference", ukernel=None)
    with LauncherClient([default_launcher_path()]) as client:
        result = check_in_context(tuned, client, rounds=2, repeat=3)
    assert "conv0" in result.reverted
    kept = {n.node: n for n in result.plan.nodes}
    node = kept["conv0"]
    assert node.config == node.default_config and node.tuned_ms == node.default_ms
    assert node.reverted.config == tuned.nodes[0].config
    assert node.reverted.tuned_ms == tuned.nodes[0].tuned_ms
    assert node.reverted.why == "node"
    assert node.reverted.in_model_ms > 0 and node.reverted.default_in_model_ms > 0
    assert kept["conv1"].reverted is None  # its tuned config was its default
    assert result.plan.in_context == InContext(result.kept, result.ms, result.nodes_ms)
    path = tmp_path / "kept.plan.json"
    save_plan(result.plan, path)
    assert load_plan(path) == result.plan


def _reverted_plan(tmp_path):
    """A plan whose conv0 was tuned to another config, then sent back."""
    plan, path = _default_plan(tmp_path)
    first = plan.nodes[0]
    tuned = dataclasses.replace(first, config=dataclasses.replace(
        first.config, workloads=first.config.workloads + 1), tuned_ms=1.25, default_ms=2.5)
    nodes = (tuned.revert("node", 3.75, 3.5), *plan.nodes[1:])
    save_plan(dataclasses.replace(plan, nodes=nodes, in_context=InContext(
        "mixed", {"tuned": 9.5, "default": 9.0, "mixed": 8.5})), path)
    return path, tuned


def test_plan_show_marks_a_reverted_node_with_the_config_that_runs(tmp_path):
    path, tuned = _reverted_plan(tmp_path)
    result = invoke("plan", "show", path)
    assert result.exit_code == 0, result.output
    assert ("whole model (in-context check, medians): tuned 9.500 ms, default 9.000 ms, "
            "mixed 8.500 ms; kept the mixed plan") in result.output
    line = next(line for line in result.output.splitlines() if line.startswith("conv0 "))
    assert line.split()[1] == str(tuned.default_config)
    assert "   2.500 ms  default    2.500 ms" in line and "1.250 ms  default" not in line
    assert (f"reverted to its default, slower in the model than its default: tuned "
            f"{tuned.config} (1.250 ms alone; in the model 3.750 ms, the default 3.500 ms)") \
        in line
    assert "reverted" not in next(line for line in result.output.splitlines()
                                  if line.startswith("conv1 "))

    shown = json.loads(invoke("plan", "show", path, "--json").stdout)
    node = shown["nodes"][0]
    assert (node["config"], node["tuned_ms"]) == (tuned.default_config.to_dict(), 2.5)
    assert node["reverted"] == {"config": tuned.config.to_dict(), "tuned_ms": 1.25,
                                "why": "node", "in_model_ms": 3.75,
                                "default_in_model_ms": 3.5}
    assert shown["in_context"]["kept"] == "mixed"


def test_a_node_edited_by_hand_is_no_longer_marked_reverted(tmp_path):
    path, _ = _reverted_plan(tmp_path)
    result = invoke("plan", "edit", path, "--set", "conv0=direct_nhwc")
    assert result.exit_code == 0, result.output
    node = load_plan(path).nodes[0]
    assert node.config.algorithm == "direct_nhwc" and node.reverted is None
    assert node.pinned == "plan edit conv0=direct_nhwc"
