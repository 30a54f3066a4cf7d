"""The records file: schema round trips and checks, surviving kill -9, the
tuning-cache queries, and `acltuner records stats`."""
from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from acltuner.cli import main
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import Measurement
from acltuner.engine.measure_options import MeasureOptions
from acltuner.tuner.records import V1_MEASURE, Record, RecordsError, RecordStore
from acltuner.tuner.tuner_config import load_tuner_config
from tests.support.json_edit import set_field

SHAPE = ConvShape(n=1, h=14, w=14, c=16, oc=24, kh=3, kw=3, pad_top=1, pad_left=1,
                  pad_bottom=1, pad_right=1, act="relu")
TIME = "2026-11-20T12:00:00.000+00:00"
BOARD, ENGINE = "odroid-n2p-3f9a", "0.1.0"
COLD = MeasureOptions(evict_bytes=2 << 20)
WARM = MeasureOptions()
NOISE_CONTROL = MeasureOptions(evict_bytes=2 << 20, ci_target_pct=2, max_repeat_ms=1000)


PRUNING = load_tuner_config().pruning


def config(workloads: int = 1, algorithm: str = "im2col") -> ExecConfig:
    return ExecConfig(algorithm, "8x12-interleaved-neon", (1, 1, 0, 0, 3, 3), workloads)


def measured_ok(ms: float, correct: bool = True) -> Measurement:
    return Measurement(ok=True, median_ms=ms, min_ms=ms * 0.9, times_ms=[ms * 0.9, ms, ms * 1.1],
                       stages={"pre_ms": ms * 0.2, "gemm_ms": ms * 0.7, "post_ms": ms * 0.1},
                       correct=correct, max_abs_err=1e-6, max_rel_err=1e-7 if correct else 0.5)


def record(task: str = "t0", workloads: int = 1, ms: float | None = 1.0, *, correct: bool = True,
           board: str = BOARD, engine: str = ENGINE, strategy: str = "xgb",
           measure: MeasureOptions = COLD) -> Record:
    """ms=None: a config that failed to run."""
    m = Measurement.failed("im2col needs K <= 4096") if ms is None else measured_ok(ms, correct)
    r = Record.from_measurement(board, engine, task, SHAPE, config(workloads), m, strategy,
                                measure=measure)
    return replace(r, time=TIME)


def numbered_record(i: int) -> Record:
    """The i-th record the kill -9 writer appends: its number is in task and time."""
    return record(task=f"t{i % 7}", workloads=i + 1, ms=0.5 + i * 1e-3)


# -- schema ---------------------------------------------------------------------------


def test_record_round_trips_through_json():
    for r in (record(), record(ms=None), record(correct=False)):
        line = json.dumps(r.to_dict(), allow_nan=False)
        assert Record.from_dict(json.loads(line)) == r


@given(ms=st.floats(0, 1e4), workloads=st.integers(1, 512),
       weights=st.lists(st.integers(0, 8), min_size=1, max_size=8).filter(any),
       ukernel=st.none() | st.text(min_size=1, max_size=30), task=st.text(max_size=40),
       evict=st.integers(0, 1 << 34))
def test_any_record_round_trips(ms, workloads, weights, ukernel, task, evict):
    r = Record(board=BOARD, engine=ENGINE, task=task, shape=SHAPE,
               config=ExecConfig("indirect", ukernel, tuple(weights), workloads),
               measure=MeasureOptions(evict_bytes=evict), ok=True,
               error=None, median_ms=ms, min_ms=ms, times_ms=(ms,),
               stages={"pre_ms": 0.0, "gemm_ms": ms, "post_ms": 0.0}, correct=True,
               max_rel_err=0.0, strategy="random", time=TIME)
    assert Record.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_a_nonfinite_error_is_stored_as_null():
    m = Measurement(ok=True, median_ms=1.0, min_ms=1.0, times_ms=[1.0],
                    stages={"pre_ms": 0, "gemm_ms": 1, "post_ms": 0}, correct=False,
                    max_abs_err=float("inf"), max_rel_err=float("inf"))
    r = Record.from_measurement(BOARD, ENGINE, "t0", SHAPE, config(), m, "xgb", measure=COLD)
    assert r.max_rel_err is None and not r.usable
    json.dumps(r.to_dict(), allow_nan=False)


@pytest.mark.parametrize("change, message", [
    (set_field("config.workloads", 0), "config.workloads must be >= 1, got 0"),
    (set_field("config.core_weights", [0, 0]), "config: core weights need at least one positive"),
    (set_field("board", KeyError), "board is missing"),
    (set_field("ok", "yes"), "ok must be true or false, got 'yes'"),
    (set_field("schema_version", 4), "schema_version 4 is not supported (this acltuner reads 3)"),
    (set_field("measure", KeyError), "measure is missing"),
    (set_field("measure.evict_bytes", -1), "measure.evict_bytes must be >= 0, got -1"),
    (set_field("measure.evict_bytes", 1.5), "measure.evict_bytes must be an integer, got 1.5"),
    (set_field("measure.cache", "cold"), "measure has unknown field(s) cache"),
    (set_field("median_ms", float("nan")), "median_ms must be a finite number, got nan"),
    (set_field("median_ms", None), "median_ms must be a number, got null"),
    (set_field("times_ms", [1.0, -2.0]), "times_ms[1] must be >= 0, got -2"),
    (set_field("stages.gemm_ms", KeyError), "stages.gemm_ms is missing"),
    (set_field("shape.c", 3), "shape: group"),
    (set_field("shape.h", 1.5), "shape.h must be an integer, got 1.5"),
    (set_field("error", "boom"), "error must be null when ok is true"),
    (set_field("time", "yesterday"), "time must be an ISO 8601 time, got 'yesterday'"),
    (set_field("speed", 3), "the top level has unknown field(s) speed"),
])
def test_a_bad_line_is_one_error_naming_file_line_and_field(tmp_path, change, message):
    lines = [record(workloads=i + 1).to_dict() for i in range(3)]
    lines[1]["shape"]["group"] = 2
    change(lines[1])
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    with pytest.raises(RecordsError) as e:
        RecordStore(path)
    assert str(e.value).startswith(f"{path}:2: ") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_a_line_damaged_in_the_middle_is_reported_and_the_rest_kept(tmp_path, caplog):
    path = tmp_path / "records.jsonl"
    lines = [json.dumps(record(workloads=i + 1).to_dict()) for i in range(4)]
    damaged = lines[1][:40] + "\x00\x00" + lines[1][60:]
    path.write_bytes(f"{lines[0]}\n{damaged}\n{lines[2]}\n{lines[3]}\n".encode())
    store = RecordStore(path)
    assert [r.config.workloads for r in store.records] == [1, 3, 4] and store.damaged == [2]
    assert f"{path}:2: skipping a damaged line" in caplog.text
    store.append([record(workloads=5)])  # appending leaves the damaged line alone
    assert [r.config.workloads for r in RecordStore(path).records] == [1, 3, 4, 5]


def test_a_record_that_would_not_load_is_not_appended(tmp_path):
    path = tmp_path / "records.jsonl"
    store = RecordStore(path)
    store.append([record()])
    bad = replace(record(), ok=False)  # failed but gives no error
    with pytest.raises(RecordsError, match="record to append: error must be"):
        store.append([record(workloads=2), bad])
    assert len(RecordStore(path).records) == 1 and len(store.records) == 1


# -- surviving kill -9 ----------------------------------------------------------------


def _lines_all_json(path: Path) -> int:
    """Checks the file is valid JSON lines and returns how many."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    for line in lines:
        json.loads(line)
    return len(lines)


def _cut_last_line(path: Path, keep: int) -> None:
    data = path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[:last_start + keep])


def test_a_cut_off_last_line_is_skipped_then_removed(tmp_path, caplog):
    path = tmp_path / "records.jsonl"
    RecordStore(path).append([numbered_record(i) for i in range(5)])
    _cut_last_line(path, keep=57)
    with caplog.at_level(logging.WARNING):
        store = RecordStore(path)
    assert store.records == [numbered_record(i) for i in range(4)]
    assert f"{path}:5: ignoring the cut-off last line" in caplog.text

    store.append([numbered_record(4)])
    assert _lines_all_json(path) == 5
    assert RecordStore(path).records == [numbered_record(i) for i in range(5)]


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path, caplog):
    path = tmp_path / "records.jsonl"
    RecordStore(path).append([numbered_record(i) for i in range(3)])
    path.write_bytes(path.read_bytes()[:-1])
    with caplog.at_level(logging.WARNING):
        store = RecordStore(path)
    assert len(store.records) == 3 and not caplog.text
    store.append([numbered_record(3)])
    assert _lines_all_json(path) == 4
    assert RecordStore(path).records == [numbered_record(i) for i in range(4)]


def test_a_file_of_only_a_cut_off_line_starts_over(tmp_path):
    path = tmp_path / "records.jsonl"
    RecordStore(path).append([numbered_record(0)])
    _cut_last_line(path, keep=10)
    store = RecordStore(path)
    assert store.records == []
    store.append([numbered_record(0)])
    assert RecordStore(path).records == [numbered_record(0)]


BATCH = 300
_WRITER = """
import resource, sys, time
from acltuner.tuner.records import RecordStore
from tests.tuner.test_records import BATCH, numbered_record
store = RecordStore(sys.argv[1])
if len(sys.argv) > 2:  # the kernel stops the write that would make the file larger
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
batch = 0
while True:
    try:
        store.append(numbered_record(batch * BATCH + i) for i in range(BATCH))
    except OSError:  # EFBIG: this batch was cut mid-write; wait to be killed
        print("cut", flush=True)
        time.sleep(60)
    batch += 1
    print(batch, flush=True)
"""


def _write_until_killed(path: Path, delay_s: float = 0.0, size_limit: int | None = None) -> int:
    """Runs the writer until it has appended 3 batches (or, with size_limit,
    until a batch is cut), waits delay_s and kill -9s it.  Returns the number
    of batches append() returned from."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    args = [str(path)] + ([str(size_limit)] if size_limit else [])
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, *args], stdout=subprocess.PIPE,
                              env=env, text=True)
    committed = 0
    try:
        while (line := writer.stdout.readline().strip()) != "cut":
            committed = int(line)
            if committed >= 3 and not size_limit:
                break
        time.sleep(delay_s)  # into a later batch: encoding it, writing it or syncing it
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    return committed


def _recovers(path: Path, committed: int) -> None:
    """Every batch append() returned from is read back, in order and intact,
    and the next append leaves valid JSON lines."""
    store = RecordStore(path)
    n = len(store.records)
    assert n >= committed * BATCH
    assert store.records == [numbered_record(i) for i in range(n)]
    complete = path.read_bytes().count(b"\n")
    assert n in (complete, complete + 1)  # + 1: a whole last record whose newline was cut

    store.append([numbered_record(n)])
    assert _lines_all_json(path) == n + 1
    assert RecordStore(path).records == [numbered_record(i) for i in range(n + 1)]


@pytest.mark.parametrize("delay_s", [0.0, 0.002, 0.007, 0.02])
def test_kill_9_loses_nothing_complete(tmp_path, delay_s):
    path = tmp_path / "records.jsonl"
    _recovers(path, _write_until_killed(path, delay_s=delay_s))


@pytest.mark.parametrize("size_limit", [400_009, 1_000_003])
def test_kill_9_after_a_batch_cut_mid_write(tmp_path, size_limit):
    # A kill rarely lands inside the write itself, so here the kernel cuts one
    # (at the file size limit) before the writer is killed.
    path = tmp_path / "records.jsonl"
    committed = _write_until_killed(path, size_limit=size_limit)
    assert path.stat().st_size == size_limit and not path.read_bytes().endswith(b"\n")
    _recovers(path, committed)


# -- the tuning cache -----------------------------------------------------------------


def test_two_models_share_the_tasks_they_have_in_common(tmp_path):
    path = tmp_path / "records.jsonl"
    # Model A has tasks k1 and k2; someone also tuned k3 on another board and
    # k1 with another engine version.
    RecordStore(path).append([record("k1", 1, 2.0), record("k1", 2, 1.5), record("k2", 1, 3.0),
                              record("k3", 1, 0.1, board="rk3588-77aa"),
                              record("k1", 3, 0.1, engine="0.0.9")])

    store = RecordStore(path)  # model B, with tasks k2 and k3, starts
    assert store.tasks_done(BOARD, ENGINE, measure=COLD) == {"k1", "k2"}
    assert {"k2", "k3"} - store.tasks_done(BOARD, ENGINE, measure=COLD) == {"k3"}
    assert store.best(BOARD, ENGINE, "k2", measure=COLD).median_ms == 3.0
    assert store.measured(BOARD, ENGINE, "k3", measure=COLD) == {}
    assert list(store.measured(BOARD, ENGINE, "k1", measure=COLD)) == [str(config(1)),
                                                                        str(config(2))]
    # not the 0.0.9 record
    assert store.best(BOARD, ENGINE, "k1", measure=COLD).config == config(2)
    assert len(store.records) == 5  # other boards and versions are kept

    store.append([record("k3", 1, 0.7)])
    assert RecordStore(path).tasks_done(BOARD, ENGINE, measure=COLD) == {"k1", "k2", "k3"}
    assert RecordStore(path).tasks_done("rk3588-77aa", ENGINE, measure=COLD) == {"k3"}


def test_failures_are_recorded_and_never_best(tmp_path):
    path = tmp_path / "records.jsonl"
    RecordStore(path).append([record("k", 1, None), record("k", 2, 0.5, correct=False),
                              record("k", 3, 2.0), record("k", 4, 1.0), record("f", 1, None)])
    store = RecordStore(path)
    measured = store.measured(BOARD, ENGINE, "k", measure=COLD)
    failed = measured[str(config(1))]
    assert not failed.ok and failed.error == "im2col needs K <= 4096" and failed.median_ms is None
    assert measured[str(config(2))].correct is False
    # not the faster wrong one
    assert store.best(BOARD, ENGINE, "k", measure=COLD).config == config(4)
    assert store.best(BOARD, ENGINE, "f", measure=COLD) is None
    assert store.best(BOARD, ENGINE, "nope", measure=COLD) is None
    assert store.tasks_done(BOARD, ENGINE, measure=COLD) == {"k"}


def test_a_config_measured_again_maps_to_its_latest_record(tmp_path):
    store = RecordStore(tmp_path / "records.jsonl")
    store.append([record("k", 1, 2.0, strategy="default")])
    store.append([record("k", 1, None)])
    assert not store.measured(BOARD, ENGINE, "k", measure=COLD)[str(config(1))].ok
    # the fastest ok record ever
    assert store.best(BOARD, ENGINE, "k", measure=COLD).median_ms == 2.0


def test_records_of_another_measurement_protocol_are_not_reused(tmp_path):
    path = tmp_path / "records.jsonl"
    # Warm caches made config 1 look fastest; cold, config 2 is.
    RecordStore(path).append([record("k", 1, 0.5, measure=WARM),
                              record("k", 2, 0.9, measure=WARM),
                              record("k", 2, 1.2), record("k", 3, 2.0),
                              record("w", 1, 0.4, measure=WARM),
                              record("k", 1, 0.1, measure=replace(COLD, evict_bytes=1 << 20))])
    store = RecordStore(path)
    assert list(store.measured(BOARD, ENGINE, "k", measure=COLD)) == [str(config(2)),
                                                                       str(config(3))]
    assert store.best(BOARD, ENGINE, "k", measure=COLD).config == config(2)
    assert store.best(BOARD, ENGINE, "k", measure=WARM).config == config(1)
    assert store.tasks_done(BOARD, ENGINE, measure=COLD) == {"k"}
    assert store.tasks_done(BOARD, ENGINE, measure=WARM) == {"k", "w"}
    assert store.measured(BOARD, ENGINE, "k", measure=replace(WARM, min_repeats=5)) == {}
    assert {r.measure for r in store.records} == {WARM, COLD, replace(COLD, evict_bytes=1 << 20)}


def test_version_1_records_read_as_warm_measurements(tmp_path):
    path = tmp_path / "records.jsonl"
    v1 = record("k", 1, 0.5).to_dict()
    for field in ("measure", "ci_pct", "throttled"):
        del v1[field]
    v1["schema_version"] = 1
    path.write_text(json.dumps(v1) + "\n")
    store = RecordStore(path)
    assert store.records[0].measure == V1_MEASURE and V1_MEASURE.evict_bytes == 0
    assert store.best(BOARD, ENGINE, "k", measure=V1_MEASURE).median_ms == 0.5
    assert store.measured(BOARD, ENGINE, "k", measure=COLD) == {}
    store.append([record("k", 2, 0.7)])  # a v1 file takes v3 lines
    assert [r.measure for r in RecordStore(path).records] == [V1_MEASURE, COLD]
    v1["measure"] = COLD.to_dict()
    path.write_text(json.dumps(v1) + "\n")
    with pytest.raises(RecordsError, match="unknown field.*measure"):
        RecordStore(path)


# -- acltuner records stats -----------------------------------------------------------


def _generated_records(seed: int = 7) -> list[Record]:
    rng = random.Random(seed)
    records = []
    for board in (BOARD, "rk3588-77aa"):
        for task in ("conv_a", "conv_b", "conv_c"):
            # A tune measures the task's default config first.
            records.append(record(task, 1, rng.uniform(1, 5), board=board,
                                  measure=NOISE_CONTROL))
            for w in range(2, rng.randint(3, 12)):
                ms = rng.choice([None, rng.uniform(0.5, 6)])
                r = record(task, w, ms, correct=rng.random() > 0.2, board=board,
                           measure=NOISE_CONTROL)
                records.append(replace(r, ci_pct=rng.uniform(0.1, 4)) if r.ok else r)
    # A throttled time, the fastest, taken again slower: the second one counts.
    records += [replace(record("conv_b", 20, 0.01, measure=NOISE_CONTROL), throttled=True),
                record("conv_b", 20, 5.5, measure=NOISE_CONTROL)]
    records.append(record("conv_only_failed", 1, None, measure=NOISE_CONTROL))
    # conv_a's default time taken again (throttled): the second one counts.
    records += [replace(record("conv_a", 1, 0.01, measure=NOISE_CONTROL), throttled=True),
                record("conv_a", 1, 2.5, measure=NOISE_CONTROL)]
    # A task whose default config ran with a wrong output: no default time.
    records += [record("conv_wrong_default", 3, 1.0, correct=False, measure=NOISE_CONTROL),
                record("conv_wrong_default", 4, 2.0, measure=NOISE_CONTROL)]
    # Warm-cache measurements of a task also measured cold: a group of their own.
    records += [record("conv_a", 1, 0.2, measure=WARM),
                record("conv_a", 2, 0.1, measure=WARM)]
    # A branch far slower than conv_c's best after enough tries (pruned), and
    # one as slow but tried too few times to say (kept).
    slow = rng.uniform(30, 40)
    records += [replace(record("conv_c", w, slow + w, measure=NOISE_CONTROL),
                        config=config(w, "indirect")) for w in range(1, 5)]
    records += [replace(record("conv_c", w, slow, measure=NOISE_CONTROL),
                        config=config(w, "winograd_4x4_3x3")) for w in range(1, 4)]
    return records


def _expected(records: list[Record]) -> dict[tuple, dict]:
    """The stats, counted the plain way."""
    out = {}
    for key in sorted({(r.board, r.engine, r.measure.label, r.task) for r in records}):
        mine = [r for r in records if (r.board, r.engine, r.measure.label, r.task) == key]
        # A record taken again: flagged, and its config has a later record.
        again = [r for i, r in enumerate(mine)
                 if (r.throttled or (r.ci_pct or 0) > r.measure.ci_target_pct > 0)
                 and any(s.config == r.config for s in mine[i + 1:])]
        usable = [r for r in mine if r.usable and r not in again]
        spreads = sorted(r.ci_pct for r in mine if r.ci_pct is not None)
        best = min(usable, key=lambda r: r.median_ms) if usable else None
        default = [r for r in mine if r.config == mine[0].config][-1]
        pruned = sorted({f"{r.config.algorithm}/{r.config.ukernel}" for r in mine
                         if best and sum(s.config.algorithm == r.config.algorithm
                                         for s in mine) >= PRUNING.after
                         and min(s.median_ms or float("inf") for s in mine
                                 if s.config.algorithm == r.config.algorithm and s.usable)
                         > best.median_ms * (1 + PRUNING.margin_pct / 100)})
        out[key] = {"measurements": len(mine), "failed": sum(not r.ok for r in mine),
                    "incorrect": sum(r.ok and r.correct is False for r in mine),
                    "best_ms": best and best.median_ms, "best_config": best and str(best.config),
                    "default_ms": default.median_ms if default.usable else None,
                    "spread_pct": float(np.median(spreads)) if spreads else None,
                    "again": len(again), "pruned": len(pruned), "pruned_branches": pruned}
    return out


def _stats(*args: str):
    return CliRunner().invoke(main, ["records", "stats", *args])


def test_records_stats_json_matches_the_records(tmp_path):
    records = _generated_records()
    path = tmp_path / "records.jsonl"
    RecordStore(path).append(records)
    result = _stats(str(path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)

    expected = _expected(records)
    assert [(t["board"], t["engine"], t["measure"], t["task"])
            for t in data["tasks"]] == list(expected)
    for row in data["tasks"]:
        want = expected[(row["board"], row["engine"], row["measure"], row["task"])]
        assert {k: row[k] for k in want if k != "pruned_branches"} == pytest.approx(
            {k: v for k, v in want.items() if k != "pruned_branches"})
        assert row["pruned_branches"] == want["pruned_branches"]
        if want["best_ms"] and want["default_ms"]:
            assert row["speedup"] == pytest.approx(want["default_ms"] / want["best_ms"])
        else:
            assert row["speedup"] is None
    for total in data["totals"]:
        rows = [v for k, v in expected.items()
                if k[:3] == (total["board"], total["engine"], total["measure"])]
        both = [v for v in rows if v["best_ms"] and v["default_ms"]]
        assert total["tasks"] == len(rows)
        assert total["tuned"] == sum(v["best_ms"] is not None for v in rows)
        for k in ("measurements", "failed", "incorrect"):
            assert total[k] == sum(v[k] for v in rows)
        assert total["speedup"] == pytest.approx(sum(v["default_ms"] for v in both)
                                                 / sum(v["best_ms"] for v in both))
    assert sum(t["measurements"] for t in data["totals"]) == len(records)
    assert any(t["pruned_branches"] == ["indirect/8x12-interleaved-neon"]
               for t in data["tasks"])  # not winograd: 3 tries are too few


def test_records_stats_table(tmp_path):
    records = _generated_records()
    path = tmp_path / "records.jsonl"
    RecordStore(path).append(records)
    result = _stats(str(path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"board {BOARD}  engine {ENGINE}  caches {NOISE_CONTROL.label}" in lines
    header = next(ln for ln in lines if ln.startswith("task"))
    assert header.split() == ["task", "measurements", "failed", "incorrect", "best_ms",
                              "best_config", "default_ms", "speedup", "spread_pct", "again",
                              "pruned"]
    for (board, _, measure, task), want in _expected(records).items():
        if board != BOARD or measure != NOISE_CONTROL.label:
            continue
        row = next(ln for ln in lines if ln.split()[0] == task).split()
        assert row[1:4] == [str(want["measurements"]), str(want["failed"]),
                            str(want["incorrect"])]
        assert row[4] == (f"{want['best_ms']:.3f}" if want["best_ms"] else "-")
    only_failed = next(ln for ln in lines if ln.startswith("conv_only_failed")).split()
    assert only_failed[1:] == ["1", "1", "0", "-", "-", "-", "-", "-", "0", "0"]
    assert sum(ln.startswith("total (") for ln in lines) == 3
    assert f"board {BOARD}  engine {ENGINE}  caches warm" in lines


def test_records_stats_help_has_an_example():
    result = _stats("--help")
    assert result.exit_code == 0 and "acltuner records stats records.jsonl" in result.output


def test_records_stats_errors_are_one_line(tmp_path):
    missing = _stats(str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 1
    assert missing.output.splitlines() == [
        f"Error: {tmp_path / 'nope.jsonl'}: no such records file"]

    path = tmp_path / "records.jsonl"
    good = json.dumps(record().to_dict())
    bad = json.dumps({**record().to_dict(), "speed": 3})
    path.write_text(f"{good}\n{bad}\n{good}\n")
    corrupt = _stats(str(path))
    assert corrupt.exit_code == 1
    assert len(corrupt.output.splitlines()) == 1
    assert corrupt.output.startswith(f"Error: {path}:2: ")

    path.write_text("")
    assert _stats(str(path)).output == "no records\n"


def test_records_stats_reads_tunes_records_by_default(tmp_path, monkeypatch):
    path = tmp_path / "tune.jsonl"
    monkeypatch.setenv("ACLTUNER_RECORDS", str(path))
    assert _stats().output.splitlines() == [f"Error: {path}: no such records file"]
    RecordStore(path).append([record("conv_a", 1, 2.0), record("conv_a", 2, 1.0)])
    result = _stats("--json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["tasks"]
    assert (row["default_ms"], row["best_ms"], row["speedup"]) == (2.0, 1.0, 2.0)


def test_records_stats_refuses_a_file_that_is_not_records(tmp_path):
    plan = tmp_path / "model.plan.json"  # indented: some of its lines are JSON (0, "c1")
    plan.write_text(json.dumps({"schema_version": 1, "nodes": [{"node": "c1", "workloads": [
        0, "c1"]}]}, indent=2))
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07\x12\x07pytorch\n\x00\x01" * 40)
    text = tmp_path / "notes.txt"
    text.write_text("tuned resnet18 today\n")
    for path in (plan, model, text):
        result = _stats(str(path))
        assert result.exit_code == 1
        assert result.output.splitlines() == [
            f"Error: {path}: not a records file: no line of it is a record"], result.output


def test_a_cut_off_first_record_is_still_a_records_file(tmp_path):
    """A tune killed in its first append leaves a part of one record."""
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(record().to_dict())[:50])
    assert RecordStore(path).records == []
    assert _stats(str(path)).output == "no records\n"
