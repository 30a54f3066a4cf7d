"""The pinned thread pool: clear errors for impossible placements, no thread
created per call, and the same output whoever runs each share."""
from __future__ import annotations

import os

import numpy as np
import pytest

from acltuner.engine import native
from acltuner.engine.config import ConvShape

SHAPE = ConvShape(n=1, h=8, w=8, c=8, oc=8, kh=3, kw=3, pad_top=1, pad_left=1, pad_bottom=1,
                  pad_right=1)


@pytest.fixture
def conv():
    w = np.ones(SHAPE.weight_shape, np.float32)
    with native.Conv(SHAPE, "im2col", native.ukernels()[0].name, w) as c:
        yield c


def _x():
    return np.ones(SHAPE.input_shape, np.float32)


def test_missing_core_is_a_clear_error(conv):
    weights = tuple([0] * 63 + [1])
    with pytest.raises(native.EngineError, match="CPU 63.*does not exist.*available CPUs"):
        conv.run(_x(), weights, 4)


@pytest.mark.parametrize("weights,workloads,message", [
    ((0, 0), 2, "every core weight is 0"),
    ((1, -1), 2, "negative"),
    ((1, 1), 0, "workloads must be 1 to 65535, got 0"),
    # A share's claimed part is packed into 16 bits (pool.c).
    ((1, 1), 65536, "workloads must be 1 to 65535, got 65536"),
])
def test_invalid_exec_configs(conv, weights, workloads, message):
    with pytest.raises(native.EngineError, match=message):
        conv.run(_x(), weights, workloads)


def test_threads_persist_across_calls(conv):
    weights = (1,) * native.cpu_count()
    conv.run(_x(), weights, 4)
    before = len(os.listdir("/proc/self/task"))
    for _ in range(50):
        conv.run(_x(), weights, 4)
    assert len(os.listdir("/proc/self/task")) == before


def test_workers_are_pinned(conv):
    """The caller runs the first CPU's share itself, pinned only for the job
    (its affinity is restored after); every other CPU gets a worker thread
    whose affinity is exactly that CPU."""
    cpus = native.cpu_count()
    own = os.sched_getaffinity(0)
    conv.run(_x(), (1,) * cpus, 4)
    assert os.sched_getaffinity(0) == own
    pinned = set()
    for tid in os.listdir("/proc/self/task"):
        allowed = os.sched_getaffinity(int(tid))
        if len(allowed) == 1:
            pinned |= allowed
    assert pinned == set(range(1, cpus))
