"""What `acltuner tune` prints: the whole model's times last (the plan kept,
the default plan, onnxruntime), the per-layer sums before them, labelled as
such; the overall progress with its count, elapsed time and ETA; the
resumption said at the start; -q and -v.  No assertion here is on a measured
time: only on what is printed and that it agrees with the plan and records."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from acltuner.cli import main
from acltuner.cli.progress import Overall, duration
from acltuner.plan import load_plan
from acltuner.tuner.in_context import choose
from tests.support.records_checks import latest, read_records
from tests.tuner.test_tune import _model_a

WHOLE = re.compile(r"^whole model: kept the (tuned|default|mixed) plan, ([\d.]+) ms(?: \(.*\))?; "
                   r"speedup ([\d.]+)x over the default plan \(([\d.]+) ms\), ([\d.]+)x over "
                   r"onnxruntime \(([\d.]+) ms, [12] threads?\); chosen on the nodes' medians "
                   r"summed: (.*)$")


def _tune(*args):
    return CliRunner().invoke(main, ["tune", *map(str, args)])


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """Model a tuned with 6 trials (a.plan.json), then again with 8 (a
    resumption, again.plan.json), in one folder."""
    folder = tmp_path_factory.mktemp("headline")
    model, records = _model_a(folder / "a.onnx"), folder / "r.jsonl"
    common = ["--board", "split-host", "--records", records]
    first = _tune(model, "-o", folder / "a.plan.json", *common, "--trials", "6")
    assert first.exit_code == 0, first.output
    taken = len(latest(read_records(records)))
    again = _tune(model, "-o", folder / "again.plan.json", *common, "--trials", "8", "-v")
    assert again.exit_code == 0, again.output
    return folder, first, taken, again


def test_the_whole_model_is_the_last_line(tuned):
    folder, first, _, _ = tuned
    lines = first.output.splitlines()
    found = WHOLE.match(lines[-1])
    assert found, lines[-1]
    kept, kept_ms, speedup, default_ms, ort_speedup, ort_ms, sums = found.groups()
    plan = load_plan(folder / "a.plan.json")
    # What the plan records of the same check (its times at full precision),
    # and the choice made on the nodes' sums.
    assert plan.in_context.kept == kept == choose(plan.in_context.nodes_ms)
    assert sums == ", ".join(f"{name} {ms:.3f} ms" for name, ms in plan.in_context.nodes_ms.items())
    assert f"{plan.in_context.ms[kept]:.3f}" == kept_ms
    assert f"{plan.in_context.ms['default']:.3f}" == default_ms
    assert float(speedup) == pytest.approx(plan.in_context.ms["default"]
                                           / plan.in_context.ms[kept], abs=0.006)
    assert float(ort_speedup) == pytest.approx(float(ort_ms) / float(kept_ms), rel=0.02, abs=0.01)
    # The per-layer sum comes before it, said to be one.
    (sums,) = [i for i, line in enumerate(lines) if "sum of per-layer medians" in line]
    assert sums < len(lines) - 1 and lines[sums].startswith("convolutions, ")
    assert not any(line.startswith("convolutions per inference") for line in lines)


def test_the_progress_counts_every_measurement_with_elapsed_time_and_eta(tuned):
    _, first, taken, _ = tuned
    progress = [line for line in first.stderr.splitlines() if line.startswith("measurements ")]
    assert progress, first.stderr
    for line in progress:
        assert re.match(r"measurements \d+/18  elapsed \d+s  eta (\?|\d+s)  task [123]/3 ",
                        line), line
    assert taken == 18


def test_a_resumed_tune_says_so_first(tuned):
    folder, first, taken, again = tuned
    assert "resuming" not in first.output
    stderr = [line for line in again.stderr.splitlines() if not line.startswith("warning: ")]
    assert stderr[0].startswith("tuning ")
    resuming = [line for line in stderr if line.startswith("resuming")]
    assert resuming == [f"resuming: {taken} measurements found in {folder / 'r.jsonl'}"]
    table = again.output.splitlines().index(next(line for line in again.output.splitlines()
                                                   if line.startswith("task ")))
    assert again.output.splitlines().index(resuming[0]) < table


def test_verbose_says_what_each_task_measured_and_found(tuned):
    _, _, _, again = tuned
    details = [line for line in again.stderr.splitlines() if "found in the records" in line]
    assert details == ["  2 measured, 6 found in the records" + d.split("records", 1)[1]
                       for d in details] and len(details) == 3


def test_quiet_prints_results_only(tuned):
    folder, first, _, _ = tuned
    quiet = _tune(folder / "a.onnx", "-o", folder / "q.plan.json", "--board", "split-host",
                  "--records", folder / "r.jsonl", "--trials", "6", "-q")
    assert quiet.exit_code == 0, quiet.output
    assert not [line for line in quiet.stderr.splitlines() if not line.startswith("warning: ")]
    out = quiet.stdout.splitlines()
    assert out[0].startswith("task ") and len(out) == 1 + 3 + 2
    assert "sum of per-layer medians" in out[-2] and WHOLE.match(out[-1])


def test_records_stats_gives_the_tunes_default_times(tuned):
    folder, _, _, _ = tuned
    stats = CliRunner().invoke(main, ["records", "stats", str(folder / "r.jsonl"), "--json"])
    assert stats.exit_code == 0, stats.output
    rows = {row["task"]: row for row in json.loads(stats.output)["tasks"]}
    plan = load_plan(folder / "a.plan.json")
    for node in plan.nodes:
        assert rows[node.task]["default_ms"] == node.default_ms
        assert rows[node.task]["speedup"] == pytest.approx(
            node.default_ms / rows[node.task]["best_ms"])


def test_without_the_check_the_last_line_says_the_whole_model_was_not_measured(tmp_path):
    model = _model_a(tmp_path / "a.onnx")
    result = _tune(model, "-o", tmp_path / "a.plan.json", "--board", "split-host", "--trials", "2",
                   "--records", tmp_path / "r.jsonl", "--no-in-context")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "whole model: not measured (--no-in-context)"


def test_overall_counts_and_estimates():
    now = [100.0]
    overall = Overall([(10, 4), (10, 0), (2, 3)], clock=lambda: now[0])
    assert overall.text() == "measurements 7/23  elapsed 0s  eta ?"
    now[0] += 30
    overall.measured(6)
    assert overall.text() == "measurements 13/23  elapsed 30s  eta 50s"
    overall.unit_done(7)  # it stopped early: 7 of its 10
    assert overall.text() == "measurements 13/20  elapsed 30s  eta 35s"
    assert not overall.done
    overall.unit_done(10)
    overall.unit_done(3)
    assert overall.done


def test_durations():
    assert [duration(s) for s in (0, 42.9, 60, 130, 3599, 3600, 3900 + 59)] == [
        "0s", "42s", "1m00s", "2m10s", "59m59s", "1h00m", "1h05m"]
