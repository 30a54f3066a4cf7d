"""Two processes appending to one records file at once (two `tune` runs
sharing the default records file) lose no line and mix none: each batch is
written whole under an exclusive lock (RecordStore.append).  Two tunes of one
records file do not measure at once: the second waits (tuning_lock)."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import onnx

from acltuner.tuner.records import RecordStore
from acltuner.zoo.builder import GraphBuilder

BATCHES, BATCH = 60, 20

_WRITER = """
import os, sys, time
from pathlib import Path
from acltuner.tuner.records import RecordStore
from tests.tuner.test_records import record
path, writer = sys.argv[1], sys.argv[2]
store = RecordStore(path)
Path(f"{path}.{writer}.ready").touch()
while not all(Path(f"{path}.{w}.ready").exists() for w in "ab"):  # both begin together
    time.sleep(0.001)
for b in range(%d):
    store.append(record(task=f"{writer}-{b}", workloads=i + 1) for i in range(%d))
""" % (BATCHES, BATCH)


def test_two_writers_at_once_lose_no_line(tmp_path):
    path = tmp_path / "records.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name],
                                env=env) for name in ("a", "b")]
    assert [w.wait(timeout=300) for w in writers] == [0, 0]
    records = RecordStore(path).records
    assert len(records) == 2 * BATCHES * BATCH
    assert path.read_bytes().count(b"\n") == len(records)
    for name in ("a", "b"):
        mine = [(r.task, r.config.workloads) for r in records if r.task.startswith(name + "-")]
        # Every record, each writer's in its own order, each batch in one piece.
        assert mine == [(f"{name}-{b}", i + 1) for b in range(BATCHES) for i in range(BATCH)]
    tasks = [r.task for r in records]
    runs = [tasks[i:i + BATCH] for i in range(0, len(tasks), BATCH)]
    assert all(len(set(run)) == 1 for run in runs)
    # The writers really overlapped: their batches interleave in the file.
    order = [run[0][0] for run in runs]
    assert order.count("a") == BATCHES and "".join(order) != "a" * BATCHES + "b" * BATCHES \
        and "".join(order) != "b" * BATCHES + "a" * BATCHES


def test_a_second_tune_of_one_records_file_waits_for_the_first(tmp_path):
    b = GraphBuilder(seed=2, input_shape=(1, 3, 10, 10))
    model = tmp_path / "m.onnx"
    onnx.save(b.model(b.conv("input", "c1", 8, 3, pads=1), "lock"), model)
    records, plan = tmp_path / "r.jsonl", tmp_path / "m.plan.json"
    with open(f"{records}.lock", "a") as held:  # the first tune, still running
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen([sys.executable, "-m", "acltuner.cli", "tune", str(model), "-o",
                                 str(plan), "--strategy", "default", "--board", "split-host",
                                 "--records", str(records)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stderr.readline()
            assert line == f"another tune holds {records}.lock: waiting for it to finish\n"
            # Blocked on the lock: nothing measured, nothing written.
            assert proc.poll() is None and not plan.exists() and not records.exists()
        except BaseException:
            proc.kill()
            raise
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert plan.exists()
