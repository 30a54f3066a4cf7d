"""A board's launcher_wrapper is a command: one from a plan never runs, and one
from a board or farm file runs only with `acltuner --allow-wrapper`.  Each
attack is a hostile wrapper that would create a marker file."""
from __future__ import annotations

import dataclasses
import hashlib
import json

import onnx
import pytest
import yaml

from acltuner.board.model import Board
from acltuner.board.registry import load_board
from acltuner.paths import configs_dir
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, default_plan, invoke


@pytest.fixture
def model(tmp_path):
    b = GraphBuilder(seed=1, input_shape=(1, 3, 12, 12))
    y = b.conv("input", "c1", 8, 3, pads=1, relu="c1.relu")
    path = tmp_path / "m.onnx"
    onnx.save(b.model(y, "wrapper"), path)
    return path


def _hostile(marker) -> list[str]:
    """A wrapper that leaves `marker` behind, then starts the launcher as asked."""
    return ["sh", "-c", f'touch {marker}; exec "$0" "$@"']


def _board_file(tmp_path, marker):
    path = tmp_path / "evil.yaml"
    d = load_board("split-host").to_dict()
    path.write_text(yaml.safe_dump({**d, "name": "evil", "launcher_wrapper": _hostile(marker)}))
    return path


def test_the_wrapper_is_part_of_the_fingerprint_and_none_changes_nothing():
    b = load_board("split-host")
    assert dataclasses.replace(b, launcher_wrapper=["qemu-x86_64"]).fingerprint != b.fingerprint
    # A board without one keeps the fingerprint its records were made with.
    before = {"isa": b.isa, "clusters": [
        {"core_type": c.core_type, "cpus": list(c.cpus), "max_freq_mhz": c.max_freq_mhz}
        for c in b.clusters]}
    text = json.dumps(before, sort_keys=True, separators=(",", ":"))
    assert b.fingerprint == hashlib.sha256(text.encode()).hexdigest()[:16]


def test_a_plans_wrapper_is_shown_and_never_run(model, tmp_path):
    plan_path = default_plan(model, tmp_path)
    marker = tmp_path / "pwned"
    data = json.loads(plan_path.read_text())
    data["board"]["description"]["launcher_wrapper"] = _hostile(marker)
    data["board"]["fingerprint"] = Board.from_dict(data["board"]["description"]).fingerprint
    plan_path.write_text(json.dumps(data))
    before = plan_path.read_bytes()

    show = invoke("plan", "show", plan_path)
    assert show.exit_code == 0, show.output
    assert f"touch {marker}" in show.output and "never run" in show.output
    for opt_in in ([], ["--allow-wrapper"]):
        result = invoke(*opt_in, "plan", "edit", plan_path, "--set", "c1=direct_nhwc")
        assert_one_line_error(result, "launcher_wrapper", f"touch {marker}", "--board")
    # Run on this machine's own board file, the plan is for another board
    # (its fingerprint holds the wrapper): refused before it is edited.
    result = invoke("plan", "edit", plan_path, "--board", "split-host", "--set", "c1=direct_nhwc")
    assert_one_line_error(result, "plan for board split-host", "running on",
                          f"launcher_wrapper `sh -c 'touch {marker}", "which is not run")
    assert not marker.exists()
    assert plan_path.read_bytes() == before
    # With --force it runs on this machine's board file, without the plan's wrapper.
    result = invoke("plan", "edit", plan_path, "--board", "split-host", "--set", "c1=direct_nhwc",
                    "--force")
    assert result.exit_code == 0, result.output
    assert "warning: " in result.output and "which is not run" in result.output
    assert not marker.exists()


def test_a_board_files_wrapper_runs_only_with_the_opt_in(model, tmp_path):
    marker = tmp_path / "pwned"
    board = _board_file(tmp_path, marker)
    plan = tmp_path / "m.plan.json"
    args = ("tune", model, "-o", plan, "--strategy", "default", "--board", board,
            "--records", tmp_path / "r.jsonl")
    result = invoke(*args)
    assert_one_line_error(result, "board evil", f"touch {marker}", "--allow-wrapper")
    assert not marker.exists() and not plan.exists()
    result = invoke("--allow-wrapper", *args)
    assert result.exit_code == 0, result.output
    assert marker.exists()


def test_a_farm_files_wrapper_is_refused_before_any_worker_starts(model, tmp_path):
    marker = tmp_path / "pwned"
    board = _board_file(tmp_path, marker)
    farm = tmp_path / "farm.yaml"
    farm.write_text(yaml.safe_dump({"schema_version": 1, "board": board.name,
                                    "members": [{"name": "a", "cpus": [0]}]}))
    result = invoke("tune", model, "-o", tmp_path / "p.json", "--strategy", "default",
                    "--farm", farm, "--records", tmp_path / "r.jsonl")
    assert_one_line_error(result, "board evil", f"touch {marker}", "--allow-wrapper")
    assert not marker.exists()


def test_the_shipped_boards_name_no_wrapper():
    for path in sorted((configs_dir() / "boards").glob("*.yaml")):
        assert load_board(path).launcher_wrapper == [], path
