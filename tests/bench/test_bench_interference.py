"""`acltuner bench interference`: the tuned plan and onnxruntime, quiet and
beside a busy neighbour process (ratios only: no time is asserted); and
`bench compare --also-strict`."""
from __future__ import annotations

import csv
import json
import os
import re
import time

import onnx
import pytest
import yaml

from acltuner.bench.interference import Neighbour
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, invoke


@pytest.fixture
def tiny_folder(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    b = GraphBuilder(input_shape=(1, 3, 24, 24))
    y = b.conv(b.conv(b.input, "c1", 16, 3, pads=1, relu="r1"), "c2", 16, 3, pads=1)
    onnx.save(b.model(y, "tiny"), models / "tiny.onnx")
    (models / "shapes.yaml").write_text(yaml.safe_dump({"schema": 1, "models": {}}))
    return models


def _cpu_ticks(pid: int) -> int:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_the_neighbour_is_busy_on_its_cpu_only_while_it_lasts():
    cpu = max(os.sched_getaffinity(0))
    with Neighbour(cpu, 1.0) as n:
        pid = n.proc.pid
        assert os.sched_getaffinity(pid) == {cpu}
        before = _cpu_ticks(pid)
        time.sleep(0.3)
        assert _cpu_ticks(pid) > before  # busy, not sleeping
    assert n.proc.poll() is not None


def test_interference_prints_both_conditions_and_the_slowdowns(tiny_folder, tmp_path):
    out = tmp_path / "out"
    result = invoke("bench", "interference", "--model-dir", tiny_folder, "--trials", "1",
                    "--repeat", "2", "--rounds", "1", "--round-ms", "0", "--duty", "0.5",
                    "--out", out)
    assert result.exit_code == 0, result.output
    last = result.stdout.splitlines()[-1]
    m = re.fullmatch(r"interference_slowdown: ours=([\d.]+) onnxruntime=([\d.]+)", last)
    assert m and all(float(v) > 0 for v in m.groups()), last
    # --duty is a share of the period: the header says how long in ms.
    assert re.search(r"^busy neighbour: CPU \d+, busy 5 of every 10 ms;", result.stdout, re.M), \
        result.stdout
    (row,) = json.loads((out / "interference.json").read_text())
    threads = len(os.sched_getaffinity(0))
    for cond in ("quiet", "loaded"):
        for engine in ("ours", f"onnxruntime_{threads}t", "onnxruntime_1t"):
            assert row[f"{cond}_{engine}_p90"] >= row[f"{cond}_{engine}_p50"] > 0
    assert row["ours_slowdown"] == pytest.approx(row["loaded_ours_p50"] / row["quiet_ours_p50"])
    best = {c: min(row[f"{c}_onnxruntime_{threads}t_p50"], row[f"{c}_onnxruntime_1t_p50"])
            for c in ("quiet", "loaded")}
    assert row["onnxruntime_slowdown"] == pytest.approx(best["loaded"] / best["quiet"])
    assert row["delegated_neighbours_ratio"] is None
    assert "run / replayed: nothing delegated" in result.stdout


def test_interference_times_the_native_nodes_beside_a_delegated_segment(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    b = GraphBuilder(input_shape=(1, 3, 24, 24))
    y = b.node("Sin", [b.conv(b.input, "c1", 16, 3, pads=1, relu="r1")], "sin")  # delegated
    onnx.save(b.model(b.conv(y, "c2", 16, 3, pads=1), "delegating"), models / "delegating.onnx")
    (models / "shapes.yaml").write_text(yaml.safe_dump({"schema": 1, "models": {}}))
    out = tmp_path / "out"
    result = invoke("bench", "interference", "--model-dir", models, "--trials", "1",
                    "--repeat", "2", "--rounds", "1", "--round-ms", "0", "--duty", "0.5",
                    "--out", out)
    assert result.exit_code == 0, result.output
    (row,) = json.loads((out / "interference.json").read_text())
    assert row["delegated_neighbours_ratio"] > 0
    assert re.search(r"^native nodes beside delegated segments, quiet, run / replayed: "
                     rf"delegating {row['delegated_neighbours_ratio']:.2f}x$",
                     result.stdout, re.M), result.stdout


def test_interference_tunes_again_over_a_plan_left_by_another_engine_build(tiny_folder,
                                                                           tmp_path):
    out = tmp_path / "out"
    args = ("bench", "interference", "--model-dir", tiny_folder, "--trials", "1", "--repeat",
            "2", "--rounds", "1", "--round-ms", "0", "--duty", "0.5", "--out", out)
    assert invoke(*args).exit_code == 0
    plan_path = out / "tiny.tuned.json"
    plan = json.loads(plan_path.read_text())
    plan["engine_version"] = "0.1.0+" + "0" * 16  # as an older build of the engine wrote it
    plan_path.write_text(json.dumps(plan))
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert json.loads(plan_path.read_text())["engine_version"] != plan["engine_version"]


def test_compare_also_times_the_strict_balance_and_reports_spreads(tiny_folder, tmp_path):
    out = tmp_path / "out"
    result = invoke("bench", "compare", "--model-dir", tiny_folder, "--trials", "1", "--repeat",
                    "2", "--rounds", "2", "--round-ms", "0", "--no-realtime", "--also-strict",
                    "--out", out)
    assert result.exit_code == 0, result.output
    assert re.search(r"^adaptive_vs_strict: [\d.]+$", result.stdout, re.M)
    assert re.search(r"^spread of the 2 round medians wider than onnxruntime's: (tiny|none)$",
                     result.stdout, re.M)
    with (out / "compare.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["tuned_spread"]) >= 0 and float(row["onnxruntime_spread"]) >= 0
    assert float(row["tuned_strict_ms"]) > 0


def test_a_busy_cpu_this_process_cannot_use_is_one_line(tiny_folder, tmp_path):
    cpu = max(os.sched_getaffinity(0)) + 1
    result = invoke("bench", "interference", "--model-dir", tiny_folder, "--busy-cpu", cpu,
                    "--out", tmp_path / "out")
    assert_one_line_error(result, f"--busy-cpu {cpu}: not a CPU this process may use")
