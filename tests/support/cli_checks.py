"""Invocations and assertions shared by the command-line tests."""
from __future__ import annotations

import json

from click.testing import CliRunner

from acltuner.cli import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def default_plan(model_path, tmp_path, *args):
    """The ArmNN-rule plan (no measurement) of the model, for the split-host board."""
    plan = model_path.with_suffix(".plan.json")
    result = invoke("tune", model_path, "-o", plan, "--strategy", "default", "--board",
                    "split-host", "--records", tmp_path / "records.jsonl", *args)
    assert result.exit_code == 0, result.output
    return plan


def run_check(plan, *args) -> dict:
    """`run --check --json` of a plan, once, which must pass; its report."""
    result = invoke("run", plan, "--check", "--repeat", "1", "--warmup", "0", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_one_line_error(result, *needles):
    """A failed command printed exactly one line, no traceback, containing every needle."""
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
